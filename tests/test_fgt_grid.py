"""The stacked passes of the fast Gauss transform: the leave-one-out local
moments of several Gaussian heads at once equal each head's own pass and
hold within their bound of the brute-force sums."""

import tracemalloc

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn import config_context

from sknw import LocalLinearRegressorCV
from sknw._sums import BACKENDS, FitRequest, Head, _fgt_grid, grid_local_moments
from sknw._sums._base import _weighted_values
from sknw._sums._fgt import GaussIndex
from sknw._sums._fgt_backend import STACKED_PASSES
from sknw._sums._fgt_grid import stacked_moment_sums
from sknw._sums._fgt_terms import REACH
from sknw._trace import traced
from sknw.kernels import Epanechnikov, Gaussian


def _data(n, seed, outlier=None):
    """Sorted offsets in clusters of several densities (boxes of one to
    hundreds of points), values and weights."""
    rng = np.random.default_rng(seed)
    parts = [rng.normal(0.2, 0.01, n // 2), rng.uniform(0.3, 1.0, n - n // 2)]
    x = np.sort(np.concatenate(parts))
    if outlier is not None:
        x[-1] = outlier
    v = np.sin(8 * x) + 0.1 * rng.normal(size=n)
    w = rng.uniform(0.2, 3.0, n)
    return x, v, w


#: Standard deviations from boxes of about one point to two boxes, unsorted.
SIGMAS = [0.3, 0.0007, 0.05, 0.002, 0.12, 0.01, 0.004, 0.02]


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("inner", ["default", "whole reach"])
@pytest.mark.parametrize("tile", [1 << 17, 1 << 16])
def test_stacked_sums_equal_each_heads_own_pass(weighted, inner, tile):
    """With translations over the whole reach, each head's sums and bounds
    are those of its own pass; over the inner reach (the boxes beyond in
    the bound), the sums are within the bounds of each other's and the
    bounds at least the own pass's. The smaller tiles cut the translations
    of the smallest head (1199 cells at sigma 7e-4) into runs of 783 cells
    over the whole reach, 798 over the inner one, whose targets' residues
    modulo the windows leave rows unfilled."""
    x, v, w = _data(3000, 0)
    w = w if weighted else None
    Vx = _weighted_values(v[:, None], w, slice(None))
    reach = REACH if inner == "whole reach" else _fgt_grid.INNER_REACH.default
    with _fgt_grid.INNER_REACH.set(reach):
        got = stacked_moment_sums(x, Vx, SIGMAS, 2, tile)
    for sigma, sums in zip(SIGMAS, got, strict=True):
        index = GaussIndex(
            x[:, None], v[:, None], w, Head(Gaussian(), sigma), None, origin=0.0
        )
        acc, bound = index.moment_sums(x / index.sigma, powers=2, q=x)
        scale = acc[:, :1, -1:] * np.array([np.abs(v).max(), 1.0])
        if inner == "whole reach":
            assert np.all(np.abs(sums[0] - acc) <= 1e-13 * scale)
            assert_allclose(sums[1], bound, rtol=1e-13)
        else:
            both = (sums[1] + bound)[:, :, None] * np.array([np.abs(v).max(), 1.0])
            assert np.all(np.abs(sums[0] - acc) <= both + 1e-13 * scale)
            assert np.all(sums[1] >= bound * (1 - 1e-13))


@pytest.mark.parametrize("powers", [2, 4])
def test_boxes_beyond_the_inner_reach_are_bounded(powers):
    """A point of tiny weight whose only neighbours lie beyond the
    translations' inner reach (10 to 12 standard deviations away): its sums
    leave them out and its bound holds their whole terms (every point's
    sums within their bound of the brute-force ones)."""
    sigma = 0.001
    rng = np.random.default_rng(3)
    cluster = rng.uniform(0.0, 0.02, 300)
    ring_x = cluster.max() + 10.3 * sigma
    x = np.sort(np.append(cluster, [ring_x, ring_x + 30 * sigma]))
    r = np.searchsorted(x, ring_x)
    w = np.ones_like(x)
    w[r] = 1e-12  # its own term's rounding far below the ring's terms
    v = np.cos(40 * x)
    Vx = _weighted_values(v[:, None], w, slice(None))
    ((acc, bound),) = stacked_moment_sums(x, Vx, [sigma], powers, 1 << 17)
    exact, sizes = _brute_moments(x, v, w, w, sigma, powers)  # own terms in
    error = np.abs(acc - exact)
    vmax = np.abs(v).max()
    assert np.all(error[:, :, 1] <= bound + 8e-16 * sizes[:, :, 1])
    assert np.all(error[:, :, 0] <= bound * vmax + 8e-16 * sizes[:, :, 0])
    # The ring's terms: left out of its sums, within its bound.
    u = (x - x[r]) / sigma
    terms = np.exp(-0.5 * u * u) * w * (u != 0)
    ring = np.stack(
        [
            (terms * u**j) @ np.column_stack([v, np.ones_like(v)])
            for j in range(powers + 1)
        ]
    )
    own = np.zeros((powers + 1, 2))
    own[0] = [v[r] * w[r], w[r]]
    assert 1e-24 < ring[0, 1] < 1e-20
    assert np.all(np.abs(acc[r] - own) < 1e-3 * np.abs(ring).max())
    assert np.all(np.abs(ring) <= bound[r][:, None] * np.array([vmax, 1.0]))


def _brute_moments(x, v, w, kept, sigma, powers=2):
    """Each point's sums of ``K u**j [w v, w]`` (``j`` up to ``powers``)
    over the others (its own point keeping ``kept``), ``u`` in standard
    deviations, and the sums of their terms' magnitudes."""
    u = (x[None, :] - x[:, None]) / sigma
    K = np.exp(-0.5 * u * u) * w[None, :]
    K[np.diag_indices_from(K)] = kept
    cols = np.stack([v, np.ones_like(v)], axis=1)
    sums = np.stack([(K * u**j) @ cols for j in range(powers + 1)], axis=1)
    sizes = np.stack(
        [(K * np.abs(u) ** j) @ np.abs(cols) for j in range(powers + 1)], axis=1
    )
    return sums, sizes


@pytest.mark.parametrize("kept_share", [None, 0.5])
@pytest.mark.parametrize("shuffled", [False, True])
def test_grid_moments_hold_within_their_bound(kept_share, shuffled):
    """Through the dispatcher, leave-one-out of every point (with frequency
    weights keeping part of each point's own weight), the points sorted or
    not: every query's sums within their bound of the brute-force ones, in
    standard deviations."""
    x, v, w = _data(700, 1)
    if shuffled:
        perm = np.random.default_rng(2).permutation(x.size)
        x, v, w = x[perm], v[perm], w[perm]
    kept = None if kept_share is None else kept_share * w
    X, V = x[:, None], v[:, None]
    request = FitRequest(
        X=X,
        sample_weight=w,
        values=lambda: (V, w),
        head=None,
        scale=None,
        metric="euclidean",
        metric_params=None,
    )
    heads = [Head(Gaussian(), s) for s in (0.002, 0.01, 0.05, 0.3)]
    got = grid_local_moments(
        "auto",
        ("fgt", "brute"),
        request,
        heads,
        2,
        exclude_self=True,
        self_weight=kept,
        sample_weight=w,
        metric="euclidean",
        metric_params=None,
    )
    vmax = np.abs(v).max()
    for moments in got:
        sigma = moments.unit  # the standard deviation
        own = np.zeros_like(w) if kept is None else kept
        exact, sizes = _brute_moments(x, v, w, own, sigma)
        error = np.abs(moments.sums - exact)
        rounding = 8e-16 * sizes
        assert np.all(error[:, :, 1] <= moments.bound + rounding[:, :, 1])
        assert np.all(error[:, :, 0] <= moments.bound * vmax + rounding[:, :, 0])
        # The bound serves: far below the weight sums.
        assert np.median(moments.bound[:, 0] / exact[:, 0, 1]) < 1e-12


def test_heads_a_stacked_pass_cannot_serve():
    """A head whose boxes span far more cells than points (a far outlier,
    a small bandwidth) takes its own pass (None); the others are served."""
    x, v, w = _data(700, 2, outlier=50.0)
    Vx = _weighted_values(v[:, None], w, slice(None))
    got = stacked_moment_sums(x, Vx, [0.01, 2.0], 2, 1 << 17)
    assert got[0] is None and got[1] is not None
    # Non-finite offsets: no head.
    x_nan = x.copy()
    x_nan[-1] = np.inf
    assert stacked_moment_sums(x_nan, Vx, [2.0], 2, 1 << 17) == [None]


def test_stacks_within_the_budget():
    """Heads beyond a stack's budget take another stack, with the same
    sums; none where the working memory holds no head."""
    x, v, w = _data(3000, 3)
    Vx = _weighted_values(v[:, None], w, slice(None))
    sigmas = [0.3, 0.05, 0.12, 0.01, 0.02, 0.03, 0.08]  # segments of 32
    whole = stacked_moment_sums(x, Vx, sigmas, 2, 1 << 17)
    # Points of 600 elements: two heads per stack (of 4.2e6 elements).
    with _fgt_grid.POINT_ELEMENTS.set(600):
        with traced() as trace:
            split = stacked_moment_sums(x, Vx, sigmas, 2, 1 << 17)
        passes = trace.values("stack_pass", "heads")
        assert [len(heads) for heads in passes] == [2, 2, 2, 1]
        for a, b in zip(whole, split, strict=True):
            assert_allclose(b[0], a[0], rtol=1e-12, atol=1e-13 * np.abs(a[0]).max())
            assert_allclose(b[1], a[1], rtol=1e-14)
        with config_context(working_memory=2**-12):
            none = [None] * len(sigmas)
            assert stacked_moment_sums(x, Vx, sigmas, 2, 1 << 17) == none
    # Powers beyond the budget (its arrays within it): taken again, the same.
    with _fgt_grid.POINT_ELEMENTS.set(8), _fgt_grid.STACK_TILES.set(1):
        with traced() as trace:
            again = stacked_moment_sums(x, Vx, sigmas[:1], 2, 100_000)[0]
    assert trace.values("stack_pass", "kept_powers") == [False]
    assert_allclose(
        again[0], whole[0][0], rtol=1e-12, atol=1e-13 * np.abs(again[0]).max()
    )
    # A head beyond the budget alone: its own pass.
    with _fgt_grid.POINT_ELEMENTS.set(2000):
        assert stacked_moment_sums(x, Vx, sigmas, 2, 1 << 17) == [None] * len(sigmas)


def test_extra_memory_within_the_budget():
    x, v, w = _data(20_000, 4)
    Vx = _weighted_values(v[:, None], w, slice(None))
    sigmas = [0.002, 0.01, 0.1]
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        got = stacked_moment_sums(x, Vx, sigmas, 2, 1 << 16)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert all(sums is not None for sums in got)
    outputs = sum(s.nbytes + b.nbytes for s, b in got)
    budget = 8 * _fgt_grid.STACK_TILES.value * (1 << 16)
    assert peak - outputs <= budget + 4 * 2**20


def test_grid_local_moments_serves_only_its_requests():
    """The dispatcher's grid pass: leave-one-out of every point in one
    batch, Gaussian heads, the transform chosen (explicitly, or by
    "auto" from its number of points); None per head otherwise."""
    x, v, w = _data(700, 5)
    X, V = x[:, None], v[:, None]

    def request(n=700):
        return FitRequest(
            X=X[:n],
            sample_weight=None,
            values=lambda: (V[:n], None),
            head=None,
            scale=None,
            metric="euclidean",
            metric_params=None,
        )

    loo = {"exclude_self": True, "metric": "euclidean", "metric_params": None}
    gauss = [Head(Gaussian(), 0.05), Head(Gaussian(), 0.2)]
    accepted = tuple(BACKENDS)

    def served(algorithm, heads=gauss, n=700, **params):
        got = grid_local_moments(
            algorithm, accepted, request(n), heads, 2, **{**loo, **params}
        )
        return [moments is not None for moments in got]

    assert served("auto") == [True, True]
    assert served("fgt", n=300) == [True, True]
    assert served("auto", n=300) == [False, False]  # auto: too few points
    assert served("sorted") == [False, False]
    assert served("auto", heads=[Head(Epanechnikov(), 0.1)]) == [False]
    assert served("auto", exclude_self=False) == [False, False]
    assert served("auto", n_jobs=2) == [False, False]  # batches of queries


def test_search_scores_equal_those_of_each_heads_own_pass():
    rng = np.random.default_rng(6)
    X = rng.uniform(0, 1, (1500, 1))
    y = np.sin(6 * X[:, 0]) + 0.3 * rng.normal(size=1500)
    w = rng.uniform(0.5, 2.0, 1500)
    with traced() as trace:
        stacked = LocalLinearRegressorCV().fit(X, y, sample_weight=w)
    assert trace.count("grid_moments", backend="fgt", served=True)
    with STACKED_PASSES.set(False), traced() as trace:
        own = LocalLinearRegressorCV().fit(X, y, sample_weight=w)
    assert not trace.count("grid_moments", served=True)
    assert trace.count("local_moments", backend="fgt")
    assert_allclose(
        stacked.cv_results_["mean_test_score"],
        own.cv_results_["mean_test_score"],
        rtol=1e-10,
    )
    assert_allclose(stacked.bandwidth_, own.bandwidth_, rtol=1e-9)


@pytest.mark.parametrize("n_boxes", [10, 600])
def test_box_sums_add_each_boxs_segments(n_boxes):
    """Each box's moments are the sums of its segments' (by reduceat up to
    FEW_BOXES boxes, by a sparse product beyond), boxes of one segment and
    of several."""
    assert 10 <= _fgt_grid.FEW_BOXES < 600
    rng = np.random.default_rng(4)
    counts = rng.integers(1, 5, n_boxes)
    first = np.cumsum(counts) - counts
    moments = rng.normal(size=(counts.sum(), 19, 2))
    want = np.stack(
        [moments[a : a + k].sum(axis=0) for a, k in zip(first, counts, strict=True)]
    )
    got = _fgt_grid._box_sums(moments, first)
    assert got.shape == want.shape
    assert_allclose(got, want, rtol=1e-14, atol=1e-14)
