"""The pair tables of a search: sums of product kernels against brute-force
sums and the cell-by-cell path, and the cache's limits."""

import warnings
from functools import partial

import numpy as np
import pytest
from _core_reference import RecordingKernel
from numpy.testing import assert_allclose
from sklearn import config_context
from sklearn.model_selection import KFold
from test_cells import _brute, _data, _factors, leave_one_out_case
from threadpoolctl import threadpool_limits

from sknw import (
    LocalLinearRegressorCV,
    NadarayaWatsonClassifierCV,
    NadarayaWatsonRegressorCV,
)
from sknw._sums import Head, PairCache, grid_sums
from sknw._sums._cells import DiscreteFactors, DiscreteHead
from sknw._sums._pairs import GATHERED, UNSHIFTED, PairTables, table_bytes
from sknw._trace import traced
from sknw.kernels import get_kernel

PARAMS = {"metric": "euclidean", "metric_params": None, "tile_elements": 1 << 17}


def _ratios(got, S_ref, den_ref):
    S, den, M = got
    scale = np.exp(M)
    assert_allclose(den * scale, den_ref, rtol=1e-12, atol=1e-300)
    assert_allclose(S / den[:, None], S_ref / den_ref[:, None], rtol=1e-12)


@pytest.mark.parametrize(
    "kernel_name", ["gaussian", "epanechnikov", "cosine", "silverman"]
)
def test_sums_equal_brute(kernel_name):
    X, V = _data()
    kernel = get_kernel(kernel_name)
    head = DiscreteHead(Head(kernel, 0.2), _factors())
    Q = X[:50] + np.array([0.01, 0, 0, -0.02])
    (got,) = PairCache().sums(0, Q, X, V, [head], **PARAMS)
    _ratios(got, *_brute(Q, X, V, kernel, 0.2, (0.3, 0.4)))


def test_many_combinations_take_their_factors_per_tile():
    """Every point its own cell and combination (an ordered feature of many
    values): the tables of all the smoothings would exceed a tile, so each
    tile takes its own."""
    X, V = _data(160)
    X[:, 2] = np.arange(160) % 80
    kernel = get_kernel("gaussian")
    heads = [DiscreteHead(Head(kernel, 0.3), _factors((lu, 0.9))) for lu in (0.1, 0.5)]
    params = {**PARAMS, "tile_elements": 3 * 160}
    tables = PairTables(X, X, _factors())
    assert len(tables.combos) * len(tables.partition.levels) * 2 > 3 * 160
    got = PairCache().sums(0, X, X, V, heads, **params)
    for head, sums in zip(heads, got, strict=True):
        _ratios(sums, *_brute(X, X, V, kernel, 0.3, head.factors.lambdas))


def test_scaling_divides_each_continuous_feature():
    X, V = _data(150)
    kernel = get_kernel("gaussian")
    head = DiscreteHead(Head(kernel, 1.0), _factors())
    scale = np.array([0.2, 0.5])
    (got,) = PairCache().sums(0, X, X, V, [head], scale=scale, **PARAMS)
    Xs = X.copy()
    Xs[:, [0, 3]] /= scale
    _ratios(got, *_brute(Xs, Xs, V, kernel, 1.0, (0.3, 0.4)))


def test_leave_one_out_with_weights():
    X, V, head, params, own, S_ref, den_ref = leave_one_out_case()
    params = {**params, "tile_elements": PARAMS["tile_elements"]}
    (got,) = PairCache().sums(0, X[own], X, V, [head], **params)
    _ratios(got, S_ref, den_ref)


def test_many_heads_equal_the_cells_path():
    """Heads sharing continuous heads and smoothings, more smoothings than a
    tile keeps, squared and counting factors, zero smoothing, several query
    tiles: the same sums as cell by cell."""
    X, V = _data(180)
    w = np.random.default_rng(2).uniform(0.5, 2, X.shape[0])
    gauss, epa = get_kernel("gaussian"), get_kernel("epanechnikov")
    heads = [
        DiscreteHead(Head(k, h), _factors((lu, 0.3), power=p))
        for k in (gauss, epa)
        for h in (0.05, 0.3)
        for lu, p in [(0.0, 1), (0.1, 1), (0.2, 1), (0.3, 2), (0.4, 0), (2 / 3, 1)]
    ]
    assert len({(h.factors.lambdas, h.factors.power) for h in heads}) > GATHERED
    loo = {"exclude_self": True, "self_index": np.arange(X.shape[0])}
    params = {**PARAMS, "sample_weight": w, "tile_elements": 7 * X.shape[0], **loo}
    got = PairCache().sums(0, X, X, V, heads, **params)
    ref = grid_sums("auto", ("auto", "brute"), X, X, V, heads, **params)
    seen = 0
    for (S, den, M), (S_r, den_r, M_r) in zip(got, ref, strict=True):
        empty = den == 0
        np.testing.assert_array_equal(empty, den_r == 0)
        assert np.all(M[empty] == -np.inf)
        seen += empty.sum()
        ok = ~empty
        assert_allclose(den[ok] * np.exp(M[ok] - M_r[ok]), den_r[ok], rtol=1e-12)
        # Averages: to the values' spread.
        spread = float(np.ptp(V))
        assert_allclose(
            S[ok] / den[ok, None],
            S_r[ok] / den_r[ok, None],
            rtol=1e-12,
            atol=1e-12 * spread,
        )
    assert seen > 0  # empty windows (Epanechnikov, zero smoothing) among them


@pytest.mark.parametrize("continuous", [(0,), (0, 3)])
@pytest.mark.parametrize("h", [0.2, 1e-3])
def test_one_or_two_features_shifted_or_not(continuous, h):
    """One continuous feature (the log weights straight from the squared
    differences) or two; bandwidths at which each row's largest log weight
    is near 0 (summed unshifted) or far below it (shifted): the cells'
    sums, leave-one-out."""
    X, V = _data(150)
    X[:, 0] = np.round(X[:, 0], 1)  # ties, and gaps of many bandwidths
    base = _factors((0.0, 0.3))
    if continuous == (0,):
        X = X[:, :3]
        base = DiscreteFactors(
            base.columns,
            continuous,
            base.kernels,
            base.levels,
            base.lambdas,
            base.coded,
        )
    heads = [DiscreteHead(Head(get_kernel("gaussian"), h), base)]
    loo = {"exclude_self": True, "self_index": np.arange(X.shape[0])}
    S, den, M = PairCache().sums(0, X, X, V, heads, **PARAMS, **loo)[0]
    # Brute force in the log domain, each row shifted by its largest.
    D = sum((X[:, None, k] - X[None, :, k]) ** 2 for k in continuous)
    lu, lo = base.lambdas
    with np.errstate(divide="ignore"):  # lu = 0: log 0
        same = X[:, None, 1] == X[None, :, 1]
        logF = np.where(same, np.log(1 - lu), np.log(lu / 2))
        t = np.abs(X[:, None, 2] - X[None, :, 2])
        logF += np.where(t == 0, np.log(1 - lo), np.log(0.5 * (1 - lo) * lo**t))
        L = -D / (2 * h * h) + logF
    np.fill_diagonal(L, -np.inf)
    top = L.max(axis=1)
    E = np.exp(L - top[:, None])
    ok = np.isfinite(top)
    assert np.all(den[~ok] == 0) and ok.any()
    # The log weights (and the shifts) round to a unit of their magnitude.
    rtol = 1e-12 + 4 * np.finfo(float).eps * np.abs(top[ok])
    got = den[ok] * np.exp(M[ok] - top[ok])
    assert np.all(np.abs(got - E.sum(axis=1)[ok]) <= rtol * E.sum(axis=1)[ok])
    assert_allclose(
        S[ok] / den[ok, None],
        (E @ V)[ok] / E.sum(axis=1)[ok, None],
        rtol=1e-12,
        atol=1e-12 * float(np.ptp(V)),
    )
    # Unshifted (M = 0) at the larger bandwidth; at the smaller, the rows
    # far from every other point shifted, the others not.
    if h == 0.2:
        assert np.all(M[ok] == 0.0)
    else:
        assert np.any(M[ok] < -UNSHIFTED) and np.any(M[ok] == 0.0)
        assert np.all((M[ok] == 0.0) | (M[ok] < -UNSHIFTED))


@pytest.mark.parametrize("continuous", [(0,), (0, 3)])
def test_extreme_bandwidth_and_scaling(continuous):
    """Log weights that overflow to -inf (a tiny bandwidth and scaling):
    the nearest points' average, as cell by cell, without warnings."""
    X, V = _data(60)
    X[:, [0, 3]] = np.round(X[:, [0, 3]], 1)  # ties: some terms at distance 0
    base = _factors()
    factors = DiscreteFactors(
        base.columns, continuous, base.kernels, base.levels, base.lambdas, base.coded
    )
    head = DiscreteHead(Head(get_kernel("gaussian"), 1e-150), factors)
    params = {
        **PARAMS,
        "scale": np.full(len(continuous), 1e-10),
        "exclude_self": True,
        "self_index": np.arange(60),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        S, den, M = PairCache().sums(0, X, X, V, [head], **params)[0]
    ref = grid_sums("auto", ("auto", "brute"), X, X, V, [head], **params)[0]
    np.testing.assert_array_equal(den > 0, ref[1] > 0)
    ok = den > 0
    assert ok.any() and np.all(np.isfinite(S[ok]))
    assert_allclose(
        S[ok] / den[ok, None],
        ref[0][ok] / ref[1][ok, None],
        rtol=1e-12,
        atol=1e-12 * float(np.ptp(V)),
    )


def test_rows_do_not_depend_on_their_tile():
    X, V = _data(90)
    head = DiscreteHead(Head(get_kernel("gaussian"), 0.1), _factors())
    one = PairCache().sums(0, X, X, V, [head], **PARAMS)[0]
    for rows in (1, 4, 37):
        params = {**PARAMS, "tile_elements": rows * X.shape[0]}
        tiled = PairCache().sums(0, X, X, V, [head], **params)[0]
        for a, b in zip(one, tiled, strict=True):
            assert_allclose(a, b, rtol=1e-13)  # the products' rounding
    # Each row shifted or not on its own: rows far from every other point
    # (shifted) and near ones (not) give the same shifts in any tiling.
    X[:3, 0] += [50.0, 100.0, 150.0]  # each far from every other point
    head = DiscreteHead(Head(get_kernel("gaussian"), 0.05), _factors())
    loo = {"exclude_self": True, "self_index": np.arange(X.shape[0])}
    one = PairCache().sums(0, X, X, V, [head], **PARAMS, **loo)[0]
    assert np.any(one[2] < -UNSHIFTED) and np.any(one[2] == 0.0)
    for rows in (1, 4):
        params = {**PARAMS, "tile_elements": rows * X.shape[0], **loo}
        tiled = PairCache().sums(0, X, X, V, [head], **params)[0]
        np.testing.assert_array_equal(tiled[2], one[2])
        for a, b in zip(one[:2], tiled[:2], strict=True):
            assert_allclose(a, b, rtol=1e-13)


def test_grid_sums_takes_the_tables():
    X, V = _data(100)
    head = DiscreteHead(Head(get_kernel("gaussian"), 0.2), _factors())
    cache = PairCache()
    got = grid_sums(
        "auto",
        ("auto", "brute"),
        X,
        X,
        V,
        [head],
        pairs=partial(cache.sums, "split"),
        **PARAMS,
    )
    assert list(cache.tables) == ["split"]
    tables = cache.tables["split"]
    assert tables.squares[0].shape == (100, 100)
    grid_sums(
        "auto",
        ("auto", "brute"),
        X,
        X,
        V,
        [head],
        pairs=partial(cache.sums, "split"),
        **PARAMS,
    )
    assert cache.tables["split"] is tables  # built once
    ref = grid_sums("auto", ("auto", "brute"), X, X, V, [head], **PARAMS)
    S, den, M = ref[0]
    _ratios(got[0], S * np.exp(M)[:, None], den * np.exp(M))


def test_requests_the_tables_cannot_serve():
    X, V = _data(60)
    head = DiscreteHead(Head(get_kernel("gaussian"), 0.2), _factors())
    plain = Head(get_kernel("gaussian"), 0.2)
    assert PairCache().sums(0, X, X, V, [plain], **PARAMS) is None
    cityblock = {**PARAMS, "metric": "cityblock"}
    assert PairCache().sums(0, X, X, V, [head], **cityblock) is None
    per_query = DiscreteHead(Head(get_kernel("gaussian"), np.full(60, 0.2)), _factors())
    assert PairCache().sums(0, X, X, V, [per_query], **PARAMS) is None
    # Beyond the budget: nothing built.
    need = table_bytes(60, 60, 2)
    small = PairCache(budget=need - 1)
    assert small.sums(0, X, X, V, [head], **PARAMS) is None and not small.tables
    # Other points, or weights, under a key already built: not served.
    cache = PairCache(budget=need)
    assert cache.sums(0, X, X, V, [head], **PARAMS) is not None
    assert cache.sums(0, X[:30], X, V, [head], **PARAMS) is None
    moved = X.copy()
    moved[0, 0] += 1e-9
    assert cache.sums(0, X, moved, V, [head], **PARAMS) is None
    w = np.ones(60)
    assert cache.sums(0, X, X, V, [head], sample_weight=w, **PARAMS) is None
    # An overflowing inverse square of the scaling: left to the other paths.
    tiny = np.array([1e-200, 1.0])
    assert cache.sums(0, X, X, V, [head], scale=tiny, **PARAMS) is None


def test_tables_keep_copies():
    X, _ = _data(40)
    tables = PairTables(X, X, _factors())
    X[0, 0] += 1.0
    assert not tables.matches(X, X, _factors(), None)


def _mixed(n=300, seed=0):
    X, _ = _data(n, seed)
    X[:3, 1] = 7.0  # a rare level: absent from some training folds
    y = np.sin(6 * X[:, 0]) + 0.3 * X[:, 1] + 0.5 * X[:, 3]
    return X, y + 0.2 * np.random.default_rng(seed).normal(size=n)


@pytest.fixture
def served():
    """The calls the pair tables serve: the events ``pair_tables`` of the
    test (see sknw._trace)."""
    with traced() as trace:
        yield trace


@pytest.mark.parametrize(
    "make",
    [
        lambda: NadarayaWatsonRegressorCV(
            categorical_features=[1], ordered_features=[2]
        ),
        lambda: NadarayaWatsonRegressorCV(
            categorical_features=[1],
            ordered_features=[2],
            cv=KFold(4, shuffle=True, random_state=0),
        ),
        lambda: LocalLinearRegressorCV(
            categorical_features=[1, 2], categorical_kernel="li_racine"
        ),
    ],
)
def test_search_equals_the_search_without_tables(make, served):
    """The tables change no choice: a working memory too small for them
    gives the same search (up to rounding)."""
    X, y = _mixed()
    w = np.random.default_rng(3).uniform(0.5, 2.0, X.shape[0])
    fast = make().fit(X, y, sample_weight=w)
    n_served = served.count("pair_tables")
    assert n_served > 0
    with config_context(working_memory=0.5):  # not even one fold's tables
        assert table_bytes(75, 225, 2) > 0.5 * 2**20 / 2
        slow = make().fit(X, y, sample_weight=w)
    assert served.count("pair_tables") == n_served  # none built
    # The sums agree to rounding; the polish's parabolic steps move the
    # choice by as much as the square root of that (where the score is flat),
    # well within its tolerance, and the last grid (at the polished shape)
    # with it.
    assert_allclose(fast.bandwidth_, slow.bandwidth_, rtol=1e-6)
    assert_allclose(fast.best_score_, slow.best_score_, rtol=1e-10)
    assert_allclose(
        fast.cv_results_["mean_test_score"],
        slow.cv_results_["mean_test_score"],
        rtol=1e-7,
    )
    assert not hasattr(fast, "_pairs")


def test_classifier_search_equals_the_search_without_tables(served):
    X, y = _mixed(240, seed=1)
    labels = (y > np.median(y)).astype(int)
    fast = NadarayaWatsonClassifierCV(categorical_features=[1, 2]).fit(X, labels)
    n_served = served.count("pair_tables")
    assert n_served > 0
    with config_context(working_memory=1):
        slow = NadarayaWatsonClassifierCV(categorical_features=[1, 2]).fit(X, labels)
    assert served.count("pair_tables") == n_served
    assert_allclose(fast.bandwidth_, slow.bandwidth_, rtol=1e-6)
    assert_allclose(fast.best_score_, slow.best_score_, rtol=1e-10)


def test_the_pair_sums_run_blas_on_one_thread(served):
    X, y = _mixed(120)
    RecordingKernel.seen = []
    search = NadarayaWatsonRegressorCV(
        kernels=[RecordingKernel()],
        bandwidths=[0.2, 0.4],
        categorical_features=[1],
        ordered_features=[2],
    )
    with threadpool_limits(limits=2, user_api="blas"):
        search.fit(X, y)
    assert served.count("pair_tables") and RecordingKernel.seen
    assert set(RecordingKernel.seen) == {1}
