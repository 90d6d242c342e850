"""Squaring chains of log-linear heads against their exp heads."""

import numpy as np
import pytest
from _core_reference import (
    _training_tiles_of_4096,  # noqa: F401  (autouse)
    assert_sums_close,
    brute_sums,
    make_data,
)
from numpy.testing import assert_allclose, assert_array_equal

from sknw._sums import TILE_ELEMENTS, Head, _base, _chains, kernel_sums
from sknw._sums._chains import ExcessTile
from sknw.kernels import Epanechnikov, Gaussian, Laplacian


def test_several_gaussian_heads_share_the_squared_path():
    Q, X, V, w = make_data(3, 11, 29, 3)
    heads = [Head(Gaussian(), h) for h in (0.2, 0.5, 3.0)]
    for head, result in zip(heads, kernel_sums(Q, X, V, heads), strict=True):
        assert_sums_close(result, brute_sums(Q, X, V, head))


def _chain_problem(d):
    """Points spread over many bandwidths (floors), with a far cluster whose
    huge values would show any term left above 0 below the floor."""
    rng = np.random.default_rng(11)
    X = np.vstack([rng.normal(size=(70, d)), rng.normal(size=(10, d)) + 40.0])
    V = rng.normal(size=(80, 2)) + 3.0
    V[70:] *= 1e300
    V[5] *= 1e300  # in its own (left out) term, any remainder would show
    w = rng.integers(0, 4, size=80).astype(float)
    w[:2] = [0.5, 0.0]
    return X, V, w


@pytest.mark.parametrize("d", [1, 3])
@pytest.mark.parametrize("kernel", [Gaussian(), Laplacian()])
@pytest.mark.parametrize("kept", [False, True])
@pytest.mark.parametrize("tile_elements", [64, TILE_ELEMENTS])
@pytest.mark.parametrize("step", [0.25, 1.0, 2.0])
def test_squared_heads_equal_exp_heads(d, kernel, kept, tile_elements, step):
    # Bandwidths 2**step apart: coefficients powers of two apart (one to four
    # squarings between heads, several chains, chains longer than
    # MAX_SQUARINGS), plus one head related to none; tiny bandwidths put most
    # terms below the floor. Each head alone uses exp on the same path: the
    # other head of its reference pass has no log-linear form.
    X, V, w = _chain_problem(d)
    count = int(10 / step)
    bandwidths = [*(3.0 * 2.0 ** (-step * np.arange(count))), 0.37]
    heads = [Head(kernel, h) for h in bandwidths]
    params = {
        "sample_weight": w,
        "exclude_self": True,
        "self_weight": w - np.minimum(w, 1.0) if kept else None,
        "tile_elements": tile_elements,
    }
    together = kernel_sums(X, X, V, heads, **params)
    for head, (S, den, M) in zip(heads, together, strict=True):
        pair = [head, Head(Epanechnikov(), 1.0)]
        S_ref, den_ref, M_ref = kernel_sums(X, X, V, pair, **params)[0]
        assert_array_equal(M, M_ref)
        assert_allclose(den, den_ref, rtol=1e-11, atol=1e-300)
        assert_allclose(S, S_ref, rtol=1e-11, atol=1e-300)


def test_square_chain_plan():
    coefs = list(-(2.0 ** (np.arange(30) / 2)))  # Gaussian, bandwidths 2**(1/4) apart
    coefs[5] *= 1 + 2.0**-40  # off a power of two by more than rounding
    chains = _chains._SquareChains(coefs, list(range(30)), 16)
    plan = {h: (parent, s) for h, _, parent, s in chains.plan}
    assert [h for h, *_ in chains.plan] == list(range(30))  # widest first
    depth = {}
    for h, (parent, s) in plan.items():
        depth[h] = 0 if parent is None else depth[parent] + s
        assert depth[h] <= _chains.MAX_SQUARINGS
        if parent is not None:
            assert coefs[h] / coefs[parent] == pytest.approx(2.0**s, rel=1e-13)
    assert plan[5] == (None, 0)
    assert plan[7] == (None, 0) or plan[7][0] != 5
    assert plan[2] == (0, 1) and plan[3] == (1, 1)
    roots = [h for h, (parent, _) in plan.items() if parent is None]
    assert len(roots) < 8
    # Ratios that are no powers of two: every head is its own exp.
    coefs = list(-(np.geomspace(1.0, 100.0, 30) ** 2))
    chains = _chains._SquareChains(coefs, list(range(30)), 16)
    assert all(parent is None for _, _, parent, _ in chains.plan)


def test_square_chain_floors_masked_terms_across_several_squarings():
    # A root none of whose terms is raised, and a head four squarings on whose
    # terms fall below the floor: its masked (inf) and floored terms are 0.
    coefs = [-10.0, -160.0]
    chains = _chains._SquareChains(coefs, [0, 1], 8)
    D = np.array([[0.0, np.inf, 30.0, 1.0]])
    dmin, excess = np.zeros(1), np.array([30.0])
    out = [_base._Accumulator(1, 1) for _ in coefs]
    target = np.empty_like(D)
    terms = {
        h: E.copy()
        for h, E in chains.tile(
            ExcessTile(D, dmin, 0.0, excess, target, slice(0, 1), False), out
        )
    }
    assert_array_equal(terms[0], np.exp([[0.0, -np.inf, -300.0, -10.0]]))
    assert_allclose(terms[1], np.exp([[0.0, -np.inf, -np.inf, -160.0]]), rtol=1e-13)
    assert terms[1][0, 1] == 0.0 and terms[1][0, 2] == 0.0
    # One squaring, floored only by rounding (coefficients 2 (1 + 2**-47)
    # apart): the masked term stays 0.
    coefs = [-10.0, -20.0 * (1 + 2.0**-47)]
    chains = _chains._SquareChains(coefs, [0, 1], 8)
    D = np.array([[0.0, np.inf, 35.0, 1.0]])
    excess = np.array([35.0])
    out = [_base._Accumulator(1, 1) for _ in coefs]
    terms = {
        h: E.copy()
        for h, E in chains.tile(
            ExcessTile(D, dmin, 0.0, excess, target, slice(0, 1), False), out
        )
    }
    assert [parent for _, _, parent, _ in chains.plan] == [None, 0]
    assert terms[1][0, 1] == 0.0
    assert_allclose(terms[1][0, [0, 3]], np.exp([0.0, -20.0]), rtol=1e-13)
