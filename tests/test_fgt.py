"""The fast Gauss transform: within its checked bound of the exact sums."""

import math
import pickle
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from sklearn import config_context

from sknw import (
    LocalLinearRegressor,
    NadarayaWatsonClassifier,
    NadarayaWatsonClassifierCV,
    NadarayaWatsonRegressor,
    NadarayaWatsonRegressorCV,
)
from sknw._sums import Head, _fgt
from sknw._sums._base import placed_rows
from sknw._sums._fgt import (
    MIN_POINTS_PER_BOX,
    RADIUS,
    TOLERANCE,
    GaussIndex,
    box_width,
    fgt_kernel_sums,
    grid_boxes,
)
from sknw._trace import traced
from sknw.exceptions import EmptyWindowWarning
from sknw.kernels import get_kernel


def clustered(n, seed=0, offset=0.0):
    """Two clusters, a sparse bridge and an outlier: dense and sparse regions."""
    rng = np.random.default_rng(seed)
    X = np.concatenate(
        [
            rng.normal(0, 1, n // 2),
            rng.normal(8, 0.3, n // 2 - 21),
            rng.uniform(2, 6, 20),
            [30.0],
        ]
    )[:, None]
    y = np.column_stack([np.sin(X[:, 0]) + 10, 1e6 * np.cos(X[:, 0])])
    return X + offset, y


def fit_pair(X, y, sample_weight=None, **params):
    brute = NadarayaWatsonRegressor(algorithm="brute", **params)
    fgt = NadarayaWatsonRegressor(algorithm="fgt", **params)
    brute.fit(X, y, sample_weight=sample_weight)
    fgt.fit(X, y, sample_weight=sample_weight)
    assert fgt.algorithm_ == "fgt"
    return brute, fgt


def exact_sums(t, c, s):
    """Gaussian sums of the columns ``c`` at ``s``, in extended precision."""
    t, c, s = (np.asarray(a, dtype=np.longdouble) for a in (t, c, s))
    return np.exp(-0.5 * (s[:, None] - t[None, :]) ** 2) @ c


@pytest.mark.parametrize("sigma", [0.02, 0.3, 2.0, 40.0])
def test_sums_within_their_bound(sigma):
    X, _ = clustered(400, seed=1)
    rng = np.random.default_rng(2)
    w = rng.uniform(0.0, 2.0, X.shape[0])
    w[::5] = 0.0
    V = rng.normal(size=(X.shape[0], 1))
    index = GaussIndex(X, V, w, Head(get_kernel("gaussian"), sigma), None)
    assert index.usable
    near = X[::2, 0] + sigma * rng.normal(size=X[::2].shape[0])
    q = np.sort(np.r_[np.linspace(-10, 40, 1500), near]) - index.origin
    got, bound = index.sums(q / sigma, q=q)
    # The reference divides the offsets in extended precision: the index
    # takes each point's distance from the offsets too.
    ld = np.longdouble
    t = np.asarray(X[:, 0] - index.origin, dtype=ld) / ld(sigma)
    s = np.asarray(q, dtype=ld) / ld(sigma)
    expected = exact_sums(t, np.column_stack([w * V[:, 0], w]), s)
    err = np.abs(got - expected.astype(np.float64))
    # The bound is per unit of |value|: the values column is within it times
    # max |V|, the weights column within it.
    assert np.all(err[:, 1] <= bound)
    assert np.all(err[:, 0] <= bound * np.max(np.abs(V)))
    # Where the bound passes the tolerance, the sums are that accurate.
    ok = bound <= TOLERANCE * got[:, 1]
    assert ok.sum() > near.size / 2
    rel = err[ok, 1] / expected[ok, 1].astype(np.float64)
    assert np.max(rel) <= TOLERANCE


def test_hermite_functions_of_many_offsets_within_their_rounding():
    """The translations' Hermite functions, by scipy for a grid's offsets
    and by one recurrence for many: both within 20 units of roundoff of
    Cramér's envelope (the figure the docstring gives) of extended
    precision."""
    x = np.concatenate([(13 - np.arange(27)) * r for r in (1.0, 1 - 2**-20, 0.7)])
    n_h = _fgt.N_TERMS + _fgt.N_LOCAL + 2
    ext = x.astype(np.longdouble)
    H = np.empty((n_h, x.size), np.longdouble)
    H[0], H[1] = 1.0, ext
    for k in range(1, n_h - 1):
        H[k + 1] = ext * H[k] - k * H[k - 1]
    exact = H * np.exp(-0.5 * ext * ext)
    orders = np.array([math.factorial(k) for k in range(n_h)], dtype=np.longdouble)
    envelope = 1.0865 * np.sqrt(orders)[:, None] * np.exp(-0.25 * ext * ext)
    for many in (x.size - 1, x.size + 1):  # the recurrence, then scipy
        with _fgt.MANY_OFFSETS.set(many), traced() as trace:
            got, _ = _fgt.translation_terms(x, 2)
        assert trace.values("translation_terms", "recurrence") == [many < x.size]
        units = np.abs(got - exact) / envelope / np.finfo(float).eps
        assert float(units.max()) <= 20.0


@pytest.mark.parametrize("bandwidth", [0.03, 0.4, [2.5], 50.0])
@pytest.mark.parametrize("offset", [0.0, -1e4])
def test_equals_brute_with_weights_and_outputs(bandwidth, offset):
    X, y = clustered(3000, offset=offset)
    rng = np.random.default_rng(3)
    w = rng.uniform(0.0, 3.0, X.shape[0])
    w[::7] = 0.0
    Q = np.r_[np.linspace(-8, 40, 1500), [200.0, -300.0]][:, None] + offset
    brute, fgt = fit_pair(X, y, w, bandwidth=bandwidth, empty_window="nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyWindowWarning)
        expected, got = brute.predict(Q), fgt.predict(Q)
    assert_array_equal(np.isnan(got), np.isnan(expected))
    # Sums within 1e-12 of the weight sum (times max |v|): estimates within
    # 2e-12 of the largest |target|, plus the dense sums' own rounding.
    scale = np.nanmax(np.abs(expected), axis=0)
    assert np.nanmax(np.abs(got - expected) / scale) <= 3e-12


def test_queries_beyond_the_bound_are_summed_exactly():
    X, y = clustered(2000, seed=4)
    brute, fgt = fit_pair(X, y[:, 0], bandwidth=0.1)
    # From 4.5 to 5 standard deviations beyond the outlier at 30 (where its
    # weight falls below the Hermite terms' bound times the tolerance), the
    # bound fails: these queries take the exact (shifted) sums.
    Q = np.array([[30.4], [30.5], [31.0], [1e3]])
    V, w, _ = fgt._smoother.normalised(fgt._values())
    ((S, den, M),) = fgt_kernel_sums(
        Q,
        fgt.X_fit_,
        V,
        [fgt._smoother.head()],
        index=fgt._smoother.index,
        sample_weight=w,
        scale=fgt._smoother.scale(),
    )
    assert M[0] == 0.0  # 4 standard deviations out: the expansion
    assert np.all(M[1:] < 0.0)  # farther: exact, shifted
    assert_allclose(fgt.predict(Q), brute.predict(Q), rtol=1e-12)


def test_classifier_probabilities():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(3000, 1))
    y = np.digitize(X[:, 0], [-0.5, 0.4, 1.2])
    Q = np.linspace(-5, 5, 801)[:, None]
    fast = NadarayaWatsonClassifier(bandwidth=0.15).fit(X, y)
    brute = NadarayaWatsonClassifier(bandwidth=0.15, algorithm="brute").fit(X, y)
    assert fast.algorithm_ == "fgt"
    assert_allclose(fast.predict_proba(Q), brute.predict_proba(Q), atol=1e-12)
    assert_array_equal(fast.predict(Q), brute.predict(Q))


def test_auto_takes_the_transform_where_boxes_are_full():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(4000, 1))
    y = np.sin(X[:, 0])

    def chosen(X, y, **params):
        return NadarayaWatsonRegressor(**params).fit(X, y).algorithm_

    assert chosen(X, y, bandwidth=0.2) == "fgt"
    assert chosen(X, y, bandwidth=[0.2]) == "fgt"
    assert chosen(X, y, bandwidth=0.2, metric="cityblock") == "fgt"
    # Boxes one standard deviation wide hold few points at tiny bandwidths.
    assert chosen(X, y, bandwidth=1e-4) == "brute"
    # Not Gaussian, not 1-D, too few points, another metric: not eligible.
    assert chosen(X, y, bandwidth=0.2, kernel="cauchy") == "brute"
    assert chosen(X, y, bandwidth=0.2, kernel="epanechnikov") == "sorted"
    assert chosen(np.c_[X, X], y, bandwidth=0.2) == "brute"
    assert chosen(X[:300], y[:300], bandwidth=0.2) == "brute"
    assert chosen(X, y, bandwidth=0.2, metric="cosine") == "brute"
    index = (
        NadarayaWatsonRegressor(bandwidth=1e-4, algorithm="fgt")
        .fit(X, y)
        ._smoother.index
    )
    assert index.points_per_box < MIN_POINTS_PER_BOX


def test_ineligible_settings_are_refused():
    X = np.random.default_rng(7).normal(size=(600, 2))
    y = X[:, 0]
    with pytest.raises(ValueError, match="algorithm='fgt' needs one feature"):
        NadarayaWatsonRegressor(algorithm="fgt").fit(X, y)
    with pytest.raises(ValueError, match="the Gaussian kernel"):
        NadarayaWatsonRegressor(algorithm="fgt", kernel="epanechnikov").fit(X[:, :1], y)
    with pytest.raises(ValueError, match="algorithm='binned' needs one feature"):
        LocalLinearRegressor(algorithm="binned").fit(X, y)
    with pytest.raises(ValueError, match="algorithm='fgt' needs one feature"):
        LocalLinearRegressor(algorithm="fgt").fit(X, y)


@pytest.mark.parametrize(
    "X",
    [
        # Offsets from the box centres are lost to rounding across 4.5e16.
        np.r_[-1.234e16 + np.arange(300.0) * 3, 3.3e16 + np.arange(300.0) * 7][:, None],
        # The scaled span overflows.
        np.r_[np.zeros(599), [1e308]][:, None],
    ],
)
def test_boxes_that_cannot_be_formed_fall_back_to_exact_sums(X):
    y = np.sin(np.arange(X.shape[0]) / 50.0)
    bandwidth = 1.0 if X[0, 0] < 0 else 1e-5
    brute, fgt = fit_pair(X, y, bandwidth=bandwidth)
    assert not fgt._smoother.index.usable
    auto = NadarayaWatsonRegressor(bandwidth=bandwidth).fit(X, y)
    assert auto.algorithm_ == "brute"
    assert_allclose(fgt.predict(X[::7]), brute.predict(X[::7]), rtol=1e-13)


@pytest.mark.parametrize("sigma", [0.1, 1.0, 3.7e-3, 1e300, 1e-300])
def test_grid_boxes_radius_and_exact_centres(sigma):
    x = np.random.default_rng(8).normal(size=5000) * 30 * sigma
    order, cells, starts, centre, offsets = grid_boxes(x, sigma)
    width = box_width(sigma)
    assert sigma * (1 - 2.0**-19) <= width <= sigma
    assert_array_equal(x[order], np.sort(x))
    assert np.max(np.abs(offsets)) <= RADIUS
    assert np.all(np.diff(cells) >= 1) and np.all(cells == np.floor(cells))
    assert starts[0] == 0 and np.all(np.diff(starts) > 0)
    # Centres exact: the offset between two boxes depends on their distance
    # in boxes only.
    assert_array_equal(centre, (cells + 0.5) * width)
    gaps = np.diff(centre)
    assert_array_equal(gaps, np.diff(cells) * width)


def test_grid_boxes_refuse_what_they_cannot_form():
    assert grid_boxes(np.array([0.0, 1e10]), 1.0) is None  # a box beyond 2**31
    assert grid_boxes(np.array([0.0, 1.0]), 5e-324) is None  # width underflows


def test_n_jobs_float32_pickle_and_standard_errors():
    X, y = clustered(4000, seed=9)
    Q = np.linspace(-5, 12, 3000)[:, None]
    serial = NadarayaWatsonRegressor(bandwidth=0.3).fit(X, y)
    threads = NadarayaWatsonRegressor(bandwidth=0.3, n_jobs=2).fit(X, y)
    brute = NadarayaWatsonRegressor(bandwidth=0.3, algorithm="brute").fit(X, y)
    assert serial.algorithm_ == threads.algorithm_ == "fgt"
    expected = brute.predict(Q)
    scale = np.max(np.abs(expected), axis=0)
    assert np.max(np.abs(threads.predict(Q) - expected) / scale) <= 1e-12
    clone = pickle.loads(pickle.dumps(serial))
    assert_array_equal(clone.predict(Q), serial.predict(Q))
    single = NadarayaWatsonRegressor(bandwidth=0.3).fit(X.astype(np.float32), y)
    assert single.algorithm_ == "fgt"
    # The transform sums float32 data in float64: as accurate as float64
    # dense sums of the same (rounded) points.
    brute64 = NadarayaWatsonRegressor(bandwidth=0.3, algorithm="brute")
    brute64.fit(X.astype(np.float32).astype(np.float64), y)
    Q32 = Q.astype(np.float32)
    got32 = single.predict(Q32)
    expected32 = brute64.predict(Q32.astype(np.float64))
    assert np.max(np.abs(got32 - expected32) / scale) <= 1e-12
    # Standard errors need sums of squared weights: exact sums, as brute.
    _, std = serial.predict(Q, return_std=True)
    _, std_brute = brute.predict(Q, return_std=True)
    assert_allclose(std, std_brute, rtol=1e-10)


def test_cv_estimators_accept_the_transform():
    rng = np.random.default_rng(10)
    X = rng.uniform(-3, 3, size=(1500, 1))
    y = np.sin(2 * X[:, 0]) + 0.2 * rng.normal(size=1500)
    Q = np.linspace(-3, 3, 200)[:, None]
    cv = NadarayaWatsonRegressorCV(algorithm="fgt", bandwidths=5).fit(X, y)
    ref = NadarayaWatsonRegressorCV(algorithm="brute", bandwidths=5).fit(X, y)
    assert cv.algorithm_ == "fgt" and cv.best_index_ == ref.best_index_
    assert_allclose(
        cv.cv_results_["mean_test_score"],
        ref.cv_results_["mean_test_score"],
        rtol=1e-11,
    )
    # The polished size: a parabola's vertex through scores that agree to
    # 1e-12, a thousandth apart.
    assert_allclose(cv.bandwidth_, ref.bandwidth_, rtol=1e-7)
    assert_allclose(cv.predict(Q), ref.predict(Q), rtol=1e-7)
    labels = (y > 0).astype(int)
    clf = NadarayaWatsonClassifierCV(algorithm="fgt", bandwidths=5).fit(X, labels)
    assert clf.algorithm_ == "fgt"


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(520, 1500),
    log_bandwidth=st.floats(-2.0, 1.5),
    spread=st.floats(0.1, 100.0),
    seed=st.integers(0, 2**16),
)
def test_property_equals_brute(n, log_bandwidth, spread, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_t(3, size=(n, 1)) * spread
    y = rng.normal(size=n)
    w = rng.exponential(size=n)
    Q = np.r_[rng.standard_t(3, size=(200, 1)) * spread, X[:50]]
    bandwidth = spread * 10.0**log_bandwidth
    brute, fgt = fit_pair(X, y, w, bandwidth=bandwidth)
    expected, got = brute.predict(Q), fgt.predict(Q)
    assert np.max(np.abs(got - expected)) <= 3e-12 * np.max(np.abs(y))


def test_auto_builds_no_moments_it_will_not_use():
    rng = np.random.default_rng(11)
    X = rng.normal(size=(3000, 1))
    y = rng.integers(0, 50, size=3000)
    clf = NadarayaWatsonClassifier(bandwidth=1e-3).fit(X, y)
    assert clf.algorithm_ == "brute" and clf._smoother.index is None
    index = GaussIndex(
        X,
        np.ones((3000, 50)),
        None,
        Head(get_kernel("gaussian"), 1e-3),
        None,
        min_points_per_box=MIN_POINTS_PER_BOX,
    )
    assert index.usable and not index.built
    assert not hasattr(index, "moments")


def test_float32_queries_beyond_the_data_are_summed_in_float64():
    rng = np.random.default_rng(12)
    X = rng.uniform(-1.0, 1.0, size=(2000, 1)).astype(np.float32)
    y = np.sin(X[:, 0].astype(np.float64))
    # 6 to 8 bandwidths beyond data a few bandwidths wide: the transform's
    # bound fails there, and the dense sums would use float32 (by 5e-8).
    h = 0.5
    Q = np.array([X.max() + h * k for k in (6, 7, 8)], dtype=np.float32)[:, None]
    fgt = NadarayaWatsonRegressor(bandwidth=h).fit(X, y)
    ref = NadarayaWatsonRegressor(bandwidth=h, algorithm="brute")
    ref.fit(X.astype(np.float64), y)
    assert fgt.algorithm_ == "fgt"
    assert_allclose(fgt.predict(Q), ref.predict(Q.astype(np.float64)), rtol=1e-12)


def test_cv_refuses_a_candidate_the_algorithm_cannot_serve_before_searching():
    rng = np.random.default_rng(13)
    X = rng.uniform(-3, 3, size=(800, 1))
    y = np.sin(2 * X[:, 0])
    cv = NadarayaWatsonRegressorCV(
        algorithm="fgt", kernels=["gaussian", "epanechnikov"], bandwidths=3
    )
    with pytest.raises(ValueError, match=r"algorithm='fgt' needs .*Epanechnikov"):
        cv.fit(X, y)
    assert not hasattr(cv, "cv_results_")
    sorted_cv = NadarayaWatsonClassifierCV(
        algorithm="sorted", kernels=["epanechnikov", "gaussian"], bandwidths=3
    )
    with pytest.raises(ValueError, match=r"algorithm='sorted' needs .*Gaussian"):
        sorted_cv.fit(X, y > 0)


@pytest.mark.parametrize("sigma", [0.002, 0.01, 0.05, 0.5])
@pytest.mark.parametrize("dense", [True, False])
def test_local_expansions_within_their_bound(sigma, dense):
    # Many sorted queries per unit box: the boxes' Hermite expansions are
    # translated into one Taylor expansion per query box, evaluated by one
    # product per box (dense queries) or by Horner's rule (a few per box).
    # Sums of every power within their bound, against extended precision,
    # and that accurate where the bound passes.
    rng = np.random.default_rng(8)
    x = rng.uniform(0.0, 1.0, 1500)
    w = rng.uniform(0.0, 2.0, x.size)
    V = rng.normal(size=(x.size, 1))
    index = GaussIndex(x[:, None], V, w, Head(get_kernel("gaussian"), sigma), None)
    if dense:  # over a thousand queries per box of the smallest bandwidth
        q = rng.uniform(0.45, 0.55, 12000)
        q = np.sort(np.r_[q, rng.uniform(-0.1, 1.1, 500)])
    else:  # about four per box
        q = np.sort(rng.uniform(-0.1, 1.1, max(40, int(4.8 / index.width))))
    q = q - index.origin
    with traced() as trace:
        got, bound = index.moment_sums(q / index.sigma, powers=2, q=q)
    assert trace.count("local_run")
    assert trace.count("local_evaluation", method="box_products" if dense else "horner")
    ld = np.longdouble
    t = np.asarray(x - index.origin, dtype=ld) / ld(index.sigma)
    columns = np.column_stack([V[:, 0], np.ones(x.size)]).astype(ld)
    for a in range(0, q.size, 2000):
        s = np.asarray(q[a : a + 2000], dtype=ld) / ld(index.sigma)
        u = t[None, :] - s[:, None]
        E = np.exp(-0.5 * u * u) * w
        for j in range(3):
            ref = ((E * u**j) @ columns).astype(float)
            err = np.abs(got[a : a + 2000, j] - ref)
            assert np.all(err[:, 1] <= bound[a : a + 2000, j])
            assert np.all(err[:, 0] <= bound[a : a + 2000, j] * np.max(np.abs(V)))
    ok = bound[:, 0] <= TOLERANCE * got[:, 0, 1]
    assert ok.mean() > 0.8


def test_estimators_on_the_local_expansions_equal_the_dense_sums():
    # Enough queries per box for the local expansions: Nadaraya--Watson and
    # local linear estimates within the transform's tolerance of the dense
    # ones (targets far from zero: the tolerance is relative to their spread).
    rng = np.random.default_rng(9)
    X = rng.uniform(0, 1, (5000, 1))
    y = 100.0 + np.sin(6 * X[:, 0]) + rng.normal(0, 0.1, 5000)
    w = rng.integers(1, 4, 5000).astype(float)
    Q = rng.uniform(-0.05, 1.05, (30000, 1))
    for make in (NadarayaWatsonRegressor, LocalLinearRegressor):
        fast = make(bandwidth=0.1).fit(X, y, sample_weight=w)
        dense = make(bandwidth=0.1, algorithm="brute").fit(X, y, sample_weight=w)
        assert fast.algorithm_ == "fgt"
        with traced() as trace:
            got = fast.predict(Q)
        assert trace.count("local_run")
        assert_allclose(got, dense.predict(Q), rtol=0, atol=1e-10 * np.ptp(y))


def test_sparse_queries_take_the_expansions_per_query():
    # Fewer queries than boxes: each query sums the Hermite expansions of the
    # boxes within its reach; dense queries take the local expansions, in
    # runs of boxes within the working memory. Both within the tolerance.
    rng = np.random.default_rng(14)
    X = rng.uniform(0.0, 1.0, (6000, 1))
    y = np.sin(9 * X[:, 0]) + rng.normal(0, 0.1, 6000)
    fast = NadarayaWatsonRegressor(bandwidth=0.002, algorithm="fgt").fit(X, y)
    dense = NadarayaWatsonRegressor(bandwidth=0.002, algorithm="brute").fit(X, y)
    sparse = rng.uniform(0.0, 1.0, (40, 1))
    with traced() as trace:
        got = fast.predict(sparse)
    assert not trace.count("local_run")
    assert_allclose(got, dense.predict(sparse), rtol=0, atol=1e-12 * np.ptp(y))
    Q = rng.uniform(0.0, 1.0, (20000, 1))
    with traced() as trace:
        got = fast.predict(Q)
    runs = trace.values("local_run", "n_boxes")
    assert len(runs) > 1 and sum(runs) <= 501
    assert_allclose(got, dense.predict(Q), rtol=0, atol=1e-12 * np.ptp(y))
    with config_context(working_memory=0.1), traced() as trace:
        small = NadarayaWatsonRegressor(bandwidth=0.002, algorithm="fgt").fit(X, y)
        assert_allclose(small.predict(Q), got, rtol=0, atol=1e-13 * np.ptp(y))
    assert trace.count("local_run") > 4 * len(runs)


@pytest.mark.parametrize("bandwidth", [0.001, 0.004, 0.05])
def test_leave_one_out_on_the_local_expansions_equals_refits(bandwidth):
    # Every training point a query: the local expansions, the queries in the
    # training points' order, each own term left out against what remains.
    rng = np.random.default_rng(15)
    X = rng.uniform(0.0, 1.0, (3000, 1))
    y = np.cos(7 * X[:, 0]) + rng.normal(0, 0.1, 3000)
    w = rng.integers(1, 3, 3000).astype(float)
    cv = NadarayaWatsonRegressorCV(bandwidths=[bandwidth], algorithm="fgt")
    brute = NadarayaWatsonRegressorCV(bandwidths=[bandwidth], algorithm="brute")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = cv.fit(X, y, sample_weight=w).best_score_
        expected = brute.fit(X, y, sample_weight=w).best_score_
    assert_allclose(got, expected, rtol=1e-10)


@settings(max_examples=50, deadline=None)
@given(m=st.integers(0, 40), drop=st.integers(0, 40), seed=st.integers(0, 2**16))
def test_placed_rows_equals_a_scatter(m, drop, seed):
    # The gather by the inverse order (all rows) and the scatter (some rows)
    # both give what assigning the rows one by one gives.
    rng = np.random.default_rng(seed)
    rows = rng.permutation(m)[: max(0, m - drop) if drop % 2 else m]
    source = rng.normal(size=(rows.size, 3, 2))
    expected = np.full((m, 3, 2), -7.0)
    for i, r in enumerate(rows):
        expected[r] = source[i]
    assert_array_equal(placed_rows(source, rows, m, -7.0), expected)
