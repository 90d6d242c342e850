"""Moments summed by blocks of close points (the Gaussian's series about each
block's centre, :mod:`sknw._sums._support`): the definitions' sums within
their bound, on clustered inputs, and the same fits as term by term."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

from sknw import LocalLinearRegressor
from sknw._sums import Head, line_moments
from sknw._sums._support import BLOCK_WIDTH, block_width
from sknw.kernels import Epanechnikov, Gaussian, Kernel, Laplacian

H = 0.01


def _clusters(seed, n=700, weighted=False, outputs=1, widths=(-9.0, -3.0)):
    """``(X, V, w)``: 6 clusters within 8 bandwidths ``H`` (a window holds
    several), each of a width between ``10**widths`` bandwidths, and a few
    loose points; the weights (with zeros) or None."""
    rng = np.random.default_rng(seed)
    centres = np.sort(rng.uniform(0.0, 8 * H, 6))
    width = H * 10.0 ** rng.uniform(*widths, 6)
    label = rng.integers(0, 6, n)
    x = centres[label] + width[label] * rng.uniform(-0.5, 0.5, n)
    loose = rng.choice(n, n // 25, replace=False)
    x[loose] = rng.uniform(-2 * H, 10 * H, loose.size)
    V = np.column_stack([np.sin(40 * x), rng.normal(size=(n, outputs - 1))])
    w = rng.integers(0, 4, n).astype(float) if weighted else None
    return x[:, None], V, w


def _queries(X, w, rng, m, loo):
    """``(Q, own, kept, params)``: ``m`` training points each left out of
    its own sums (``loo``; one unit of its weight), or queries half inside
    the clusters and half anywhere among them."""
    if loo:
        own = rng.choice(X.shape[0], m, replace=False)
        kept = None if w is None else w - np.minimum(w, 1.0)
        params = {"exclude_self": True, "self_index": own, "self_weight": kept}
        return X[own], own, kept, params
    inside = X[rng.choice(X.shape[0], m // 2), 0] * (
        1 + 1e-12 * rng.normal(size=m // 2)
    )
    between = rng.uniform(-H, 9 * H, m - m // 2)
    return np.r_[inside, between][:, None], None, None, {}


def _definitions(Q, C, X, V, h, powers, w=None, own=None, kept=None):
    """The moments of :func:`line_moments` and the sums of their terms'
    absolute values (weight column), from the definitions in extended
    precision over every point: ``sum_l w_l exp(-(x_l - q)**2 / (2 h**2) -
    M) z**j [v_l, 1]``, ``z = (x_l - c) / h``, ``M`` the largest exponent
    of a point of positive weight (not the query's own point where it
    keeps none of its weight)."""
    ld = np.longdouble
    q, x = Q[:, 0].astype(ld), X[:, 0].astype(ld)
    L = -(((x[None, :] - q[:, None]) / ld(h)) ** 2) / 2
    weight = np.ones(x.size) if w is None else w
    W = np.broadcast_to(weight, L.shape).astype(ld).copy()
    if own is not None:
        W[np.arange(own.size), own] = 0.0 if kept is None else kept[own]
    L = np.where(W > 0, L, -np.inf)
    E = np.exp(L - L.max(axis=1)[:, None]) * W
    z = (x[None, :] - C.astype(ld)[:, None]) / ld(h)
    Vx = np.column_stack([V, np.ones(x.size)]).astype(ld)
    sums = np.stack([(E * z**j) @ Vx for j in range(powers + 1)], axis=1)
    absolute = np.stack([np.sum(np.abs(E * z**j), axis=1) for j in range(powers + 1)])
    return sums, absolute.T.astype(float)


def _within_bound(moments, want, V):
    """The weight column within the bound, the others within it times the
    largest ``|v|``."""
    err = np.abs(moments.sums - want).astype(float)
    assert np.all(np.isfinite(moments.bound))
    assert np.all(err[..., -1] <= moments.bound)
    assert np.all(err[..., :-1] <= (moments.bound * np.abs(V).max())[..., None])


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    loo=st.booleans(),
    weighted=st.booleans(),
    powers=st.sampled_from([2, 4]),
    outputs=st.sampled_from([1, 3]),
)
def test_blocks_equal_the_definitions_within_their_bound(
    seed, loo, weighted, powers, outputs
):
    X, V, w = _clusters(seed, weighted=weighted, outputs=outputs)
    rng = np.random.default_rng(seed + 1)
    Q, own, kept, params = _queries(X, w, rng, 30, loo)
    C = Q[:, 0] + rng.normal(0.0, H, Q.shape[0]) * rng.integers(0, 2, Q.shape[0])
    head = Head(Gaussian(), H)
    got, offsets = line_moments(Q, C, X, V, head, powers, sample_weight=w, **params)
    terms, _ = line_moments(
        Q, C, X, V, head, powers, sample_weight=w, blocks=0, **params
    )
    want, absolute = _definitions(Q, C, X, V, H, powers, w, own, kept)
    _within_bound(got, want, V)
    assert_allclose(offsets, (Q[:, 0] - C) / H, rtol=1e-14, atol=1e-14)
    # Most queries summed blocks (their sums differ from the terms' in
    # their last digits), within a bound that is not vacuous: a few
    # hundred units of roundoff of the terms' absolute sums (measured: at
    # most 7e-14 of them).
    used = np.any(got.sums != terms.sums, axis=(1, 2))
    assert used.mean() > 0.5
    assert np.all(got.bound[used] <= 1e-12 * absolute[used])


@pytest.mark.parametrize("widths", [(-3.0, -2.5), (-1.5, -1.3)])
def test_wide_blocks_take_high_orders_within_their_bound(widths):
    # Clusters up to 5 % of a bandwidth in blocks of up to 20 %: G up to
    # 1/2 and series of order up to 14, the remainder in the bound.
    X, V, w = _clusters(3, weighted=True, outputs=2, widths=widths)
    rng = np.random.default_rng(4)
    Q, own, kept, params = _queries(X, w, rng, 40, True)
    C = Q[:, 0] + rng.normal(0.0, H, 40)
    head = Head(Gaussian(), H)
    got, _ = line_moments(Q, C, X, V, head, 2, sample_weight=w, blocks=0.2, **params)
    terms, _ = line_moments(Q, C, X, V, head, 2, sample_weight=w, blocks=0, **params)
    want, absolute = _definitions(Q, C, X, V, H, 2, w, own, kept)
    _within_bound(got, want, V)
    used = np.any(got.sums != terms.sums, axis=(1, 2))
    assert used.mean() > 0.5
    assert np.all(got.bound[used] <= 1e-12 * absolute[used])


@pytest.mark.parametrize("kept", [0.0, 1.0])
def test_the_point_left_out_leaves_its_block(kept):
    # One point of a tight cluster holds the only nonzero value: left out
    # with none of its weight (or one of its 3 units), its sums hold none of
    # it (or a third of it) but for the roundoff of its own term.
    n = 60
    X = (0.5 + 1e-7 * np.linspace(-1.0, 1.0, n))[:, None]
    V = np.zeros((n, 1))
    V[17] = 1e9
    w = np.full(n, 3.0)
    own = np.array([17, 40])
    params = {"exclude_self": True, "self_index": own, "sample_weight": w}
    params["self_weight"] = np.full(n, kept)
    head = Head(Gaussian(), H)
    got, _ = line_moments(X[own], X[own, 0], X, V, head, 2, **params)
    terms, _ = line_moments(X[own], X[own, 0], X, V, head, 2, blocks=0, **params)
    assert np.any(got.sums != terms.sums)  # by blocks
    kept_weights = np.full(n, kept)
    want, _ = _definitions(X[own], X[own, 0], X, V, H, 2, w, own, kept_weights)
    assert_allclose(got.sums[0, 0, 0], want[0, 0, 0], rtol=1e-15, atol=1e-15 * 1e9)
    assert_allclose(got.sums, want.astype(float), rtol=1e-14, atol=1e-15 * 1e9)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**16), loo=st.booleans())
def test_permuting_the_training_points_changes_nothing_beyond_the_bound(seed, loo):
    # Ties (points of equal coordinates) change places in the sorted order.
    X, V, w = _clusters(seed, n=500, weighted=True)
    X[::7] = X[1::7][: X[::7].shape[0]]
    rng = np.random.default_rng(seed + 2)
    Q, own, kept, params = _queries(X, w, rng, 20, loo)
    C = Q[:, 0]
    head = Head(Gaussian(), H)
    a, _ = line_moments(Q, C, X, V, head, 2, sample_weight=w, **params)
    perm = rng.permutation(X.shape[0])
    inverse = np.argsort(perm)
    moved = {}
    if loo:
        moved = {"exclude_self": True, "self_index": inverse[own]}
        moved["self_weight"] = kept[perm]
    b, _ = line_moments(Q, C, X[perm], V[perm], head, 2, sample_weight=w[perm], **moved)
    err = np.abs(a.sums - b.sums)
    both = a.bound + b.bound
    assert np.all(err[..., -1] <= both)
    assert np.all(err[..., :-1] <= (both * np.abs(V).max())[..., None])


def test_each_query_s_blocks_do_not_depend_on_the_others():
    X, V, w = _clusters(5, weighted=True, outputs=2)
    rng = np.random.default_rng(6)
    Q, own, kept, params = _queries(X, w, rng, 12, True)
    h = np.array([H, H, 2 * H, H, 0.5 * H, 2 * H] * 2)
    head = Head(Gaussian(), h)
    batch, _ = line_moments(Q, Q[:, 0], X, V, head, 2, sample_weight=w, **params)
    params = dict(params)
    for i in range(12):
        params["self_index"] = own[i : i + 1]
        one, _ = line_moments(
            Q[i : i + 1],
            Q[i, :1],
            X,
            V,
            Head(Gaussian(), h[i]),
            2,
            sample_weight=w,
            **params,
        )
        assert_allclose(one.sums[0], batch.sums[i], rtol=1e-15, atol=0)
        assert_allclose(one.bound[0], batch.bound[i], rtol=1e-15, atol=0)


class _Bump(Kernel):
    support = np.inf

    def __call__(self, u):
        return np.exp(-0.5 * u * u)


@pytest.mark.parametrize("kernel", [Laplacian(), Epanechnikov(), _Bump()])
def test_other_kernels_keep_the_terms(kernel):
    X, V, w = _clusters(7, weighted=True)
    Q = X[:10]
    head = Head(kernel, H)
    a, _ = line_moments(Q, Q[:, 0], X, V, head, 2, sample_weight=w)
    b, _ = line_moments(Q, Q[:, 0], X, V, head, 2, sample_weight=w, blocks=0)
    if a is None:  # a user kernel of unbounded support: not decided here
        assert b is None
        return
    assert_array_equal(a.sums, b.sums)
    assert_array_equal(a.bound, b.bound)


def _clustered_fit_data(seed, n=600):
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0.0, 1.0, 5)
    X = (centres[rng.integers(0, 5, n)] + 1e-6 * rng.normal(size=n))[:, None]
    y = np.sin(6 * X[:, 0]) + 0.1 * rng.normal(size=n)
    w = rng.integers(1, 4, n).astype(float)
    return X, y, w


@pytest.mark.filterwarnings("ignore::sknw.exceptions.RidgedDesignWarning")
@pytest.mark.parametrize("weighted", [False, True])
def test_the_default_fit_on_clusters_is_the_terms_fit(weighted):
    # Leave-one-out on 5 tight clusters: the search sums whole clusters in
    # its windows; by blocks it chooses the same bandwidth and predicts the
    # same as term by term.
    X, y, w = _clustered_fit_data(8)
    w = w if weighted else None
    Q = np.linspace(-0.1, 1.1, 301)[:, None]
    fits = {}
    for width in (0.0, BLOCK_WIDTH):
        with block_width(width):
            est = LocalLinearRegressor().fit(X, y, sample_weight=w)
        score = est.bandwidth_selection_["score"]
        fits[width] = (est.bandwidth_, score, est.predict(np.r_[Q, X]))
    (h0, s0, p0), (h1, s1, p1) = fits[0.0], fits[BLOCK_WIDTH]
    assert_allclose(h1, h0, rtol=1e-12)
    assert_allclose(s1, s0, rtol=1e-10)
    assert_allclose(p1, p0, rtol=0, atol=1e-10 * np.ptp(y))


def test_the_setting_of_the_blocks_holds_within_its_context():
    X, V, w = _clusters(9)
    Q, head = X[:20], Head(Gaussian(), H)

    def moments(**blocks):
        return line_moments(Q, Q[:, 0], X, V, head, 2, **blocks)[0].sums

    with block_width(0.0):
        inside = moments()
    assert_array_equal(inside, moments(blocks=0.0))
    assert_array_equal(moments(), moments(blocks=BLOCK_WIDTH))  # restored
    assert np.any(inside != moments())
