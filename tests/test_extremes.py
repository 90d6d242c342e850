"""Numerical extremes: huge and tiny scales, bandwidths, targets and weights.

References are brute-force formulas of the limits (nearest neighbour, inverse
squared distance, weighted mean) and a high-precision evaluation of the Gaussian
estimate with :mod:`decimal` (and :mod:`mpmath` when it is installed).
"""

import warnings
from contextlib import contextmanager
from decimal import Decimal, localcontext

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.spatial.distance import cdist

from sknw import (
    NadarayaWatsonClassifier,
    NadarayaWatsonRegressor,
    NadarayaWatsonRegressorCV,
)
from sknw.exceptions import EmptyWindowWarning, GridEdgeWarning

UNBOUNDED = ["gaussian", "laplacian", "cauchy"]
#: Bandwidths from 1e-300 to 1e300, every 50 decades, and a few in between;
#: (1 / h)**2 overflows just below 1e-154.
H_GRID = [10.0**e for e in range(-300, 301, 50)] + [
    1e-155,
    1e-154,
    1e-20,
    1e-5,
    1e5,
    1e20,
]
EPS = np.finfo(np.float64).eps
TINY = [1e-300, 1e-200, 1e-100, 1e-20]
HUGE = [1e20, 1e100, 1e200, 1e300]

# Known limitations, recorded as strict expected failures until fixed.
CAUCHY_SUBNORMAL = (
    "known: at subnormal bandwidths u = d / h overflows and the Cauchy kernel "
    "falls back to the nearest point instead of 1/d^2 weighting"
)


def problem(d, n=15, m=8, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = rng.normal(size=n) + 2.0
    Q = rng.normal(size=(m, d)) * 1.3
    w = rng.uniform(0.5, 3.0, size=n)
    return X, y, Q, w


def nearest_reference(Q, X, y, w=None, metric="euclidean"):
    """Weighted average of the targets of the nearest training points (ties)."""
    D = cdist(Q, X, metric)
    ties = D == D.min(axis=1, keepdims=True)
    w = np.ones(len(X)) if w is None else w
    return (ties * w) @ y / (ties * w).sum(axis=1)


def within(pred, lo, hi):
    """``lo <= pred <= hi`` up to a few rounding errors of a weighted mean."""
    slack = 4 * EPS * np.maximum(np.abs(lo), np.abs(hi))
    return bool(np.all((pred >= lo - slack) & (pred <= hi + slack)))


def assert_distinct_nearest(Q, X, metric="euclidean"):
    """The data leave no doubt about each query's nearest training point."""
    D = np.sort(cdist(Q, X, metric), axis=1)
    assert np.all(D[:, 1] - D[:, 0] > 1e-3 * D[:, 1])


@contextmanager
def raises_no_warning(*allowed):
    """Any warning inside is an error (but those of the ``allowed``
    categories)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for category in allowed:
            warnings.simplefilter("ignore", category)
        yield


@contextmanager
def only_empty_window_warnings():
    """Records EmptyWindowWarning; any other warning is an error."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("error")
        warnings.simplefilter("always", EmptyWindowWarning)
        yield caught


# -- features at extreme scales ------------------------------------------------------


@pytest.mark.parametrize("scale", [1e-300, 1e-150, 1e150, 1e300])
@pytest.mark.parametrize("rule", ["scott", "silverman"])
@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov"])
def test_rule_bandwidths_scale_with_the_features(kernel, rule, scale):
    X, y, Q, w = problem(3, n=40)
    labels = (y > 2.0).astype(int)
    with only_empty_window_warnings():
        reg = NadarayaWatsonRegressor(kernel=kernel, bandwidth=rule)
        unit = reg.fit(X, y, w)
        unit_bw, unit_pred = unit.bandwidth_, unit.predict(Q)
        scaled = NadarayaWatsonRegressor(kernel=kernel, bandwidth=rule)
        scaled.fit(X * scale, y, w)
        clf = NadarayaWatsonClassifier(kernel=kernel, bandwidth=rule)
        unit_proba = clf.fit(X, labels, w).predict_proba(Q)
        scaled_proba = clf.fit(X * scale, labels, w).predict_proba(Q * scale)
        pred = scaled.predict(Q * scale)
    assert np.all(np.isfinite(scaled.bandwidth_)) and np.all(scaled.bandwidth_ > 0)
    assert_allclose(scaled.bandwidth_, unit_bw * scale, rtol=1e-12)
    assert_allclose(pred, unit_pred, rtol=1e-10, atol=1e-12)
    assert_allclose(scaled_proba, unit_proba, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(
    "scale",
    [
        1e-300,
        1e-150,
        1e150,
        1e300,
    ],
)
def test_cv_selection_scales_with_the_features(scale):
    X, y, Q, w = problem(2, n=30)
    unit = NadarayaWatsonRegressorCV(bandwidths=8).fit(X, y, w)
    scaled = NadarayaWatsonRegressorCV(bandwidths=8).fit(X * scale, y, w)
    assert scaled.best_index_ == unit.best_index_
    assert_allclose(
        scaled.cv_results_["mean_test_score"],
        unit.cv_results_["mean_test_score"],
        rtol=1e-10,
    )
    # The polished size to its optimiser's rounding.
    assert_allclose(scaled.bandwidth_, unit.bandwidth_ * scale, rtol=1e-10)
    assert_allclose(scaled.predict(Q * scale), unit.predict(Q), rtol=1e-10)


@pytest.mark.parametrize("scale", [1e-300, 1e-200, 1e-150, 1e150, 1e200, 1e300])
@pytest.mark.parametrize("d", [1, 3])
@pytest.mark.parametrize("kernel", ["gaussian", "laplacian", "epanechnikov"])
def test_scalar_bandwidth_scales_with_the_features(kernel, d, scale):
    # u = d(x, q) / h is unchanged when the data and h are scaled together, so
    # the estimate must not change, whatever the squares of the distances do.
    X, y, Q, w = problem(d)
    h = 2.5
    expected = NadarayaWatsonRegressor(kernel=kernel, bandwidth=h).fit(X, y, w)
    reg = NadarayaWatsonRegressor(kernel=kernel, bandwidth=h * scale)
    with raises_no_warning():
        pred = reg.fit(X * scale, y, w).predict(Q * scale)
        A = reg.attention_weights(Q * scale)
    assert_allclose(pred, expected.predict(Q), rtol=1e-10)
    assert_allclose(A, expected.attention_weights(Q), rtol=1e-10, atol=1e-15)


# -- duplicated and identical training points ------------------------------------------


@pytest.mark.parametrize("bandwidth", [0.6, "scott", 1e-300])
@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov", "cauchy"])
def test_every_row_repeated_equals_integer_weights(kernel, bandwidth):
    X, y, Q, _ = problem(2, n=12)
    counts = np.arange(12) % 4 + 1
    rows = np.repeat(np.arange(12), counts)
    with only_empty_window_warnings():
        repeated = NadarayaWatsonRegressor(kernel=kernel, bandwidth=bandwidth)
        repeated.fit(X[rows], y[rows])
        weighted = NadarayaWatsonRegressor(kernel=kernel, bandwidth=bandwidth)
        weighted.fit(X, y, counts.astype(float))
        assert_allclose(repeated.bandwidth_, weighted.bandwidth_, rtol=1e-12)
        assert_allclose(repeated.predict(Q), weighted.predict(Q), rtol=1e-10)


@pytest.mark.parametrize("h", [1e-300, 1e-20])
@pytest.mark.parametrize("kernel", ["gaussian", "laplacian", "epanechnikov"])
def test_ties_at_a_tiny_bandwidth_average_the_tied_targets(kernel, h):
    # Duplicated inputs with different targets and weights: at a vanishing
    # bandwidth the estimate is the weighted mean of the tied targets.
    X = np.array([[0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [3.0, 1.0], [3.0, 1.0]])
    y = np.array([1.0, 2.0, 6.0, -4.0, 10.0])
    w = np.array([1.0, 2.0, 1.0, 3.0, 1.0])
    Q = np.array([[0.0, 0.0], [0.1, -0.2], [3.0, 1.0], [2.0, 2.0]])
    # (1 + 2 * 2 + 6) / 4 near the origin, (-4 * 3 + 10) / 4 near (3, 1).
    expected = [2.75, 2.75, -0.5, -0.5]
    reg = NadarayaWatsonRegressor(kernel=kernel, bandwidth=h)
    clf = NadarayaWatsonClassifier(kernel=kernel, bandwidth=h)
    labels = np.array(["p", "q", "q", "r", "p"])
    with only_empty_window_warnings() as record:
        pred = reg.fit(X, y, w).predict(Q)
        proba = clf.fit(X, labels, w).predict_proba(Q)
    assert_allclose(pred, expected, rtol=1e-13)
    assert_allclose(
        proba,
        [[0.25, 0.75, 0], [0.25, 0.75, 0], [0.25, 0, 0.75], [0.25, 0, 0.75]],
        rtol=1e-13,
    )
    if kernel == "epanechnikov":
        # The three queries off the training points have empty windows.
        assert len(record) == 2
    else:
        assert not record


def test_leave_one_out_with_duplicates_at_a_tiny_bandwidth():
    # Each duplicated point's leave-one-out estimate is its twin's target; a
    # point without a twin gets its nearest other point's target.
    X = np.array([[0.0], [0.0], [1.0], [1.0], [1.0], [5.0]])
    y = np.array([1.0, 3.0, 0.0, 6.0, 9.0, 2.0])
    loo = np.array([3.0, 1.0, 7.5, 4.5, 3.0, (0.0 + 6.0 + 9.0) / 3])
    with raises_no_warning():
        cv = NadarayaWatsonRegressorCV(bandwidths=[1e-300, 1.0]).fit(X, y)
    assert_allclose(
        cv.cv_results_["mean_test_score"][0], -np.mean((loo - y) ** 2), rtol=1e-13
    )


@pytest.mark.parametrize("per_feature", [False, True], ids=["scalar", "per_feature"])
@pytest.mark.parametrize("h", [0.1, 0.125, 0.3])
@pytest.mark.parametrize("kernel", ["biweight", "epanechnikov", "boxcar"])
def test_leave_one_out_with_tied_nearest_points(kernel, h, per_feature):
    # The windows of the points at 2, 3.5 and 5 are empty: their estimates are
    # those of their nearest other points, and 3.5 is exactly 1.5 from both 2
    # and 5, a tie however the bandwidth is written. The five copies of (0, 0)
    # are one observation (sknw._selection.weights): left out, its window is empty too,
    # and its nearest other point, at 2, has its value.
    X = np.array([[0.0], [0.0], [0.0], [0.0], [2.0], [3.5], [5.0], [0.0]])
    y = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.25, 0.0])
    loo = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.125, 0.0, 0.0])
    bandwidth = [h] if per_feature else h
    cv = NadarayaWatsonRegressorCV(kernels=kernel, bandwidths=[bandwidth]).fit(X, y)
    assert_array_equal(cv.cv_results_["n_empty_windows"], [4])
    assert_allclose(cv.best_score_, -np.mean((loo - y) ** 2), rtol=1e-15)


IDENTICAL_CASES = [
    ("gaussian", "scott"),
    ("gaussian", "silverman"),
    ("gaussian", 1e-300),
    ("laplacian", 1.0),
    ("cauchy", 1e300),
    ("epanechnikov", "scott"),
    ("boxcar", 1e-300),
    ("triangular", 0.5),
]


@pytest.mark.parametrize("kernel, bandwidth", IDENTICAL_CASES)
def test_identical_inputs_give_the_weighted_mean(kernel, bandwidth):
    X = np.full((9, 2), [1.5, -7.0])
    rng = np.random.default_rng(3)
    y = rng.normal(size=9)
    w = rng.uniform(0.5, 2.0, size=9)
    labels = np.array([0, 1, 2] * 3)
    Q = np.array([[1.5, -7.0], [1.5 + 1e-9, -7.0], [20.0, 30.0], [-1e6, 1e6]])
    reg = NadarayaWatsonRegressor(kernel=kernel, bandwidth=bandwidth)
    clf = NadarayaWatsonClassifier(kernel=kernel, bandwidth=bandwidth)
    with only_empty_window_warnings():
        reg.fit(X, y, w)
        pred = reg.predict(Q)
        A = reg.attention_weights(Q)
        proba = clf.fit(X, labels, w).predict_proba(Q)
    assert np.all(np.isfinite(reg.bandwidth_)) and np.all(reg.bandwidth_ > 0)
    assert_allclose(pred, np.average(y, weights=w), rtol=1e-13)
    assert_allclose(A, np.tile(w / w.sum(), (4, 1)), rtol=1e-13)
    frequencies = [w[labels == c].sum() / w.sum() for c in range(3)]
    assert_allclose(proba, np.tile(frequencies, (4, 1)), rtol=1e-13)


def test_identical_inputs_in_leave_one_out():
    X = np.zeros((7, 3))
    y = np.arange(7.0) ** 2
    w = np.arange(1.0, 8.0)
    # Every point is at distance 0: each estimate is the weighted mean of the
    # others (its whole row left out).
    loo = (w @ y - w * y) / (w.sum() - w)
    expected = -np.average((loo - y) ** 2, weights=w)
    with raises_no_warning():
        cv = NadarayaWatsonRegressorCV(bandwidths=5).fit(X, y, w)
    scores = cv.cv_results_["mean_test_score"]
    assert_allclose(scores, expected, rtol=1e-12)
    assert np.all(cv.cv_results_["rank_test_score"] == 1)
    assert_allclose(cv.predict([[0.0, 0.0, 0.0], [4.0, 4.0, 4.0]]), w @ y / w.sum())


# -- bandwidths from 1e-300 to 1e300 ---------------------------------------------------


@pytest.mark.parametrize("metric", ["euclidean", "cityblock"])
@pytest.mark.parametrize("d", [1, 3])
@pytest.mark.parametrize("kernel", UNBOUNDED)
def test_unbounded_kernels_never_give_nan_nor_warn(kernel, d, metric):
    X, y, Q, w = problem(d)
    for h in H_GRID:
        reg = NadarayaWatsonRegressor(kernel=kernel, bandwidth=h, metric=metric)
        clf = NadarayaWatsonClassifier(kernel=kernel, bandwidth=h, metric=metric)
        with raises_no_warning():
            pred = reg.fit(X, y, w).predict(Q)
            A = reg.attention_weights(Q)
            proba = clf.fit(X, y > 2.0, w).predict_proba(Q)
        assert np.all(np.isfinite(pred)), h
        assert within(pred, y.min(), y.max()), h
        assert_allclose(A.sum(axis=1), 1.0, rtol=1e-12, err_msg=str(h))
        assert_allclose(A @ y, pred, rtol=1e-12, err_msg=str(h))
        assert np.all(np.isfinite(proba)), h
        assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12, err_msg=str(h))


@pytest.mark.parametrize("metric", ["euclidean", "cityblock"])
@pytest.mark.parametrize("d", [1, 3])
def test_compact_kernel_over_the_bandwidth_grid(d, metric):
    # Windows empty at tiny bandwidths: only the documented warning, and the
    # estimates of the nearest points; never NaN.
    X, y, Q, w = problem(d)
    for h in H_GRID:
        reg = NadarayaWatsonRegressor(kernel="epanechnikov", bandwidth=h, metric=metric)
        with only_empty_window_warnings():
            pred = reg.fit(X, y, w).predict(Q)
        assert np.all(np.isfinite(pred)), h
        assert within(pred, y.min(), y.max()), h


@pytest.mark.parametrize("h", TINY)
@pytest.mark.parametrize("metric", ["euclidean", "cityblock"])
@pytest.mark.parametrize("d", [1, 3])
@pytest.mark.parametrize("kernel", ["gaussian", "laplacian", "epanechnikov"])
def test_tiny_bandwidth_is_the_nearest_neighbour(kernel, d, metric, h):
    X, y, Q, w = problem(d)
    assert_distinct_nearest(Q, X, metric)
    labels = np.array(["u", "v", "w"])[np.arange(15) % 3]
    reg = NadarayaWatsonRegressor(kernel=kernel, bandwidth=h, metric=metric)
    clf = NadarayaWatsonClassifier(kernel=kernel, bandwidth=h, metric=metric)
    with only_empty_window_warnings() as record:
        pred = reg.fit(X, y, w).predict(Q)
        proba = clf.fit(X, labels, w).predict_proba(Q)
    assert_allclose(pred, nearest_reference(Q, X, y, w, metric), rtol=1e-14)
    nearest = cdist(Q, X, metric).argmin(axis=1)
    assert_allclose(proba, labels[nearest][:, None] == clf.classes_, rtol=1e-14)
    assert bool(record) == (kernel == "epanechnikov")


@pytest.mark.parametrize("h", TINY)
@pytest.mark.parametrize("metric", ["euclidean", "cityblock"])
@pytest.mark.parametrize("d", [1, 3])
def test_cauchy_tiny_bandwidth_is_inverse_squared_distance(d, metric, h):
    # 1 / (1 + (d / h)**2) = h**2 / (h**2 + d**2), proportional to 1 / d**2 as
    # h -> 0: heavy tails keep every point in play.
    X, y, Q, w = problem(d)
    D = cdist(Q, X, metric)
    weights = w / D**2
    expected = weights @ y / weights.sum(axis=1)
    reg = NadarayaWatsonRegressor(kernel="cauchy", bandwidth=h, metric=metric)
    with raises_no_warning():
        pred = reg.fit(X, y, w).predict(Q)
        A = reg.attention_weights(Q)
    assert_allclose(pred, expected, rtol=1e-10)
    assert_allclose(A, weights / weights.sum(axis=1, keepdims=True), rtol=1e-10)
    # Far from the nearest-neighbour estimate.
    assert np.max(np.abs(pred - nearest_reference(Q, X, y, w, metric))) > 0.1


@pytest.mark.parametrize("h", HUGE)
@pytest.mark.parametrize("kernel", ["gaussian", "cauchy", "epanechnikov"])
def test_huge_bandwidth_is_the_weighted_mean(kernel, h):
    X, y, Q, w = problem(3)
    labels = np.arange(15) % 2
    with raises_no_warning():
        pred = NadarayaWatsonRegressor(kernel=kernel, bandwidth=h).fit(X, y, w)
        proba = NadarayaWatsonClassifier(kernel=kernel, bandwidth=h).fit(X, labels, w)
        assert_allclose(pred.predict(Q), np.average(y, weights=w), rtol=1e-13)
        freq = [w[labels == 0].sum() / w.sum(), w[labels == 1].sum() / w.sum()]
        assert_allclose(proba.predict_proba(Q), np.tile(freq, (8, 1)), rtol=1e-13)


@pytest.mark.parametrize("kernel", ["gaussian", "laplacian", "epanechnikov"])
def test_leave_one_out_at_extreme_bandwidths(kernel):
    X, y, _, w = problem(2)
    X[5] = X[9]  # a duplicate input, whose twin is its nearest other point
    grid = [1e-300, 1e-100, 1e100, 1e300]
    # Leaving a point out removes its row: at tiny bandwidths its estimate
    # is its nearest other points' (the limit, or the empty window's
    # "nearest"), at huge ones the weighted mean of the others.
    D = cdist(X, X)
    np.fill_diagonal(D, np.inf)
    nearest = w * (D == D.min(axis=1, keepdims=True))
    tiny = nearest @ y / nearest.sum(axis=1)
    mean = (w @ y - w * y) / (w.sum() - w)
    # The best bandwidth is the grid's smallest: that warning only.
    with raises_no_warning(GridEdgeWarning):
        cv = NadarayaWatsonRegressorCV(kernels=kernel, bandwidths=grid)
        cv.fit(X, y, w)
    scores = cv.cv_results_["mean_test_score"]
    expected_tiny = -np.average((tiny - y) ** 2, weights=w)
    expected_huge = -np.average((mean - y) ** 2, weights=w)
    assert_allclose(scores, [expected_tiny] * 2 + [expected_huge] * 2, rtol=1e-12)
    assert_array_equal(cv.cv_results_["n_empty_windows"][2:], 0)


@pytest.mark.parametrize("kernel", ["gaussian", "laplacian", "epanechnikov"])
def test_leave_one_out_at_extreme_bandwidths_without_weights(kernel):
    X, y, _, _ = problem(2)
    D = cdist(X, X)
    np.fill_diagonal(D, np.inf)
    nearest_other = y[D.argmin(axis=1)]
    mean_of_others = (y.sum() - y) / (len(y) - 1)
    with only_empty_window_warnings() as record:
        cv = NadarayaWatsonRegressorCV(kernels=kernel, bandwidths=[1e-300, 1e300])
        cv.fit(X, y)
    assert not record  # no warning during the search
    assert_allclose(
        cv.cv_results_["mean_test_score"],
        [-np.mean((nearest_other - y) ** 2), -np.mean((mean_of_others - y) ** 2)],
        rtol=1e-12,
    )


@pytest.mark.parametrize("h", [1e-300, 1e-200, 1e-100, 1e100, 1e200, 1e300])
@pytest.mark.parametrize("kernel", ["gaussian", "laplacian", "cauchy"])
def test_per_feature_bandwidth_at_extremes_equals_the_scalar_one(kernel, h):
    # For the euclidean metric, dividing every feature by h is dividing the
    # distances by h.
    X, y, Q, w = problem(3)
    scalar = NadarayaWatsonRegressor(kernel=kernel, bandwidth=h).fit(X, y, w)
    per_feature = NadarayaWatsonRegressor(kernel=kernel, bandwidth=[h, h, h])
    with raises_no_warning():
        pred = per_feature.fit(X, y, w).predict(Q)
    assert_allclose(pred, scalar.predict(Q), rtol=1e-10)
    with raises_no_warning():
        cv = NadarayaWatsonRegressorCV(kernels=kernel, bandwidths=[[h, h, h]])
        cv.fit(X, y, w)
    loo = NadarayaWatsonRegressorCV(kernels=kernel, bandwidths=[h]).fit(X, y, w)
    assert_allclose(cv.best_score_, loo.best_score_, rtol=1e-10)


@pytest.mark.parametrize("rule", ["scott", "silverman"])
@pytest.mark.parametrize("kernel", ["gaussian", "laplacian", "epanechnikov"])
def test_feature_with_a_tiny_spread_and_queries_off_it(kernel, rule):
    # Feature 0 takes the values 0, 1e-300 and 2e-300, so the rule gives it a
    # bandwidth near 1e-300; a query at 1 or -2 in that feature is then
    # extremely far in bandwidth units, and its estimate must come from the
    # training points nearest in feature 0 (the largest or the smallest value).
    rng = np.random.default_rng(9)
    level = np.arange(24) % 3
    X = np.column_stack([level * 1e-300, rng.normal(size=24)])
    y = rng.normal(size=24)
    labels = (y > 0).astype(int)
    Q = np.array([[1.0, 0.0], [-2.0, 0.5], [1e-300, 0.2]])
    reg = NadarayaWatsonRegressor(kernel=kernel, bandwidth=rule)
    clf = NadarayaWatsonClassifier(kernel=kernel, bandwidth=rule)
    with only_empty_window_warnings():
        pred = reg.fit(X, y).predict(Q)
        proba = clf.fit(X, labels).predict_proba(Q)
    assert reg.bandwidth_[0] < 1e-299
    assert np.all(np.isfinite(pred)) and np.all(np.isfinite(proba))
    top, bottom = y[level == 2], y[level == 0]
    assert within(pred[0], top.min(), top.max())
    assert within(pred[1], bottom.min(), bottom.max())
    assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)


# -- the ends of the float range -------------------------------------------------------


@pytest.mark.parametrize("h", [1e-308, 1e-310, 5e-324], ids=str)
@pytest.mark.parametrize("kernel", ["gaussian", "laplacian", "logistic", "silverman"])
def test_subnormal_bandwidths(kernel, h):
    # Any positive float is a valid bandwidth. The estimate at a training
    # point is its own target; elsewhere, that of the nearest point.
    X, y, Q, _ = problem(2)
    queries = np.vstack([Q, X[:4]])
    expected = np.concatenate([nearest_reference(Q, X, y), y[:4]])
    reg = NadarayaWatsonRegressor(kernel=kernel, bandwidth=h)
    with raises_no_warning():
        pred = reg.fit(X, y).predict(queries)
    assert_allclose(pred, expected, rtol=1e-13)


@pytest.mark.parametrize("h", [1e-310, 5e-324], ids=str)
def test_subnormal_bandwidths_in_leave_one_out(h):
    X, y, _, _ = problem(2)
    D = cdist(X, X)
    np.fill_diagonal(D, np.inf)
    expected = -np.mean((y[D.argmin(axis=1)] - y) ** 2)
    with raises_no_warning():
        cv = NadarayaWatsonRegressorCV(bandwidths=[h]).fit(X, y)
    assert_allclose(cv.best_score_, expected, rtol=1e-13)


@pytest.mark.parametrize("h", [1e-310, 5e-324], ids=str)
@pytest.mark.xfail(strict=True, reason=CAUCHY_SUBNORMAL)
def test_cauchy_at_subnormal_bandwidths_is_inverse_squared_distance(h):
    X, y, Q, w = problem(2)
    weights = w / cdist(Q, X) ** 2
    expected = weights @ y / weights.sum(axis=1)
    with raises_no_warning():
        reg = NadarayaWatsonRegressor(kernel="cauchy", bandwidth=h).fit(X, y, w)
        assert_allclose(reg.predict(Q), expected, rtol=1e-10)


@pytest.mark.parametrize("kernel", ["gaussian", "cauchy", "silverman", "biweight"])
def test_largest_bandwidth(kernel):
    X, y, Q, w = problem(2)
    h = np.finfo(np.float64).max
    with raises_no_warning():
        reg = NadarayaWatsonRegressor(kernel=kernel, bandwidth=h).fit(X, y, w)
        assert_allclose(reg.predict(Q), np.average(y, weights=w), rtol=1e-13)


# -- float32 ---------------------------------------------------------------------------


@pytest.mark.parametrize("scale", [1e-30, 1.0, 1e30])
@pytest.mark.parametrize("kind", ["regressor", "classifier", "regressor_cv"])
def test_float32_inputs_match_float64(kind, scale):
    X, y, Q, w = problem(3, n=40)
    X32 = (X * scale).astype(np.float32)
    Q32 = (Q * scale).astype(np.float32)
    X64, Q64 = X32.astype(np.float64), Q32.astype(np.float64)
    target = y if kind != "classifier" else np.digitize(y, [1.5, 2.5])
    make = {
        "regressor": lambda: NadarayaWatsonRegressor(bandwidth="silverman"),
        "classifier": lambda: NadarayaWatsonClassifier(kernel="epanechnikov"),
        "regressor_cv": lambda: NadarayaWatsonRegressorCV(bandwidths=6),
    }[kind]
    with only_empty_window_warnings():
        single = make().fit(X32, target, w)
        double = make().fit(X64, target, w)
        methods = ["predict", "attention_weights"]
        if kind == "classifier":
            methods.append("predict_proba")
        for method in methods:
            got = getattr(single, method)(Q32)
            assert got.dtype == np.float64 or method == "predict"
            assert np.all(np.isfinite(got.astype(float)))
            want = getattr(double, method)(Q64)
            if method == "predict" and kind == "classifier":
                assert_array_equal(got, want)
            elif method == "predict":
                # Gaussian sums of float32 inputs may be computed in float32:
                # the documented bound, 4e-4 of the largest |y|.
                assert_allclose(got, want, rtol=0, atol=4e-4 * np.max(np.abs(y)))
            else:
                assert_allclose(got, want, rtol=1e-6, atol=1e-12)
    assert_allclose(single.bandwidth_, double.bandwidth_, rtol=1e-6)


# -- targets and weights at extreme scales ---------------------------------------------


@pytest.mark.parametrize("y_scale", [1e6, 1e300, -1e300])
@pytest.mark.parametrize("h", [1e-300, 0.3, 2.0, 1e300])
@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov", "constant", "cauchy"])
def test_targets_at_extreme_scales_stay_in_range(kernel, h, y_scale):
    X, y, Q, w = problem(2)
    Y = np.column_stack([y, -y, y - 2.0]) * y_scale
    reg = NadarayaWatsonRegressor(kernel=kernel, bandwidth=h)
    with only_empty_window_warnings():
        pred = reg.fit(X, Y, w).predict(Q)
        unit = NadarayaWatsonRegressor(kernel=kernel, bandwidth=h)
        unit_pred = unit.fit(X, Y / y_scale, w).predict(Q)
    assert np.all(np.isfinite(pred))
    assert within(pred, Y.min(axis=0), Y.max(axis=0))
    assert_allclose(pred / y_scale, unit_pred, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("kernel", ["gaussian", "constant", "epanechnikov"])
def test_targets_near_the_largest_float(kernel):
    # Each target and their weighted mean are representable; their sum is not.
    X, y, Q, w = problem(2, n=30)
    big = np.finfo(np.float64).max
    Y = np.where(np.arange(30) % 3 == 0, -0.9, 0.95) * big
    reg = NadarayaWatsonRegressor(kernel=kernel, bandwidth=1.5)
    with only_empty_window_warnings():
        pred = reg.fit(X, Y, w).predict(Q)
        A = reg.attention_weights(Q)
    assert np.all(np.isfinite(pred))
    assert within(pred, Y.min(), Y.max())
    assert_allclose(pred, A @ (Y / big) * big, rtol=1e-12)


@pytest.mark.parametrize("scale", [1e-300, 1e300, 1e307, np.finfo(np.float64).max])
@pytest.mark.parametrize("kind", ["regressor", "classifier", "regressor_cv"])
def test_sample_weights_at_extreme_scales(kind, scale):
    # Weights near the top of the float range, whose sum overflows, are still
    # finite, non-negative weights: nothing may become NaN.
    X, y, Q, w = problem(2, n=30)
    big = w / w.max() * scale
    target = y if kind != "classifier" else (y > 2.0).astype(int)
    fixed = {
        "regressor": lambda: NadarayaWatsonRegressor(bandwidth=0.7),
        "classifier": lambda: NadarayaWatsonClassifier(bandwidth=0.7),
        "regressor_cv": lambda: NadarayaWatsonRegressorCV(bandwidths=[0.7]),
    }[kind]
    with raises_no_warning():
        est = fixed().fit(X, target, big)
        reference = fixed().fit(X, target, w / w.max())
        methods = ["predict", "predict_proba"] if kind == "classifier" else ["predict"]
        for method in methods:
            got = getattr(est, method)(Q)
            assert_allclose(got, getattr(reference, method)(Q), rtol=1e-12)
    # A rule of thumb counts the weights as frequencies, n = sum(w): scaling
    # them by s scales n, and Scott's bandwidth by s**(-1 / (d + 4)).
    unit = NadarayaWatsonRegressor(bandwidth="scott").fit(X, y, w / w.max())
    with raises_no_warning():
        ruled = NadarayaWatsonRegressor(bandwidth="scott").fit(X, y, big)
        pred = ruled.predict(Q)
    assert_allclose(ruled.bandwidth_, unit.bandwidth_ * scale ** (-1 / 6), rtol=1e-10)
    assert np.all(np.isfinite(pred))


@pytest.mark.parametrize(
    "w_scale, y_scale", [(1e-300, 1e-10), (1e-290, 1e-20), (1e-300, 1e-20)], ids=str
)
def test_tiny_weights_with_small_targets(w_scale, y_scale):
    # The weights' scale cancels in the average, whatever w_j * y_j does.
    X, y, Q, w = problem(2, n=30)
    reg = NadarayaWatsonRegressor(bandwidth=0.7)
    pred = reg.fit(X, y * y_scale, w * w_scale).predict(Q)
    unit = NadarayaWatsonRegressor(bandwidth=0.7).fit(X, y, w).predict(Q)
    assert_allclose(pred / y_scale, unit, rtol=1e-12)


# -- a high-precision reference --------------------------------------------------------


def gaussian_nw_decimal(Q, X, y, w, h):
    """The Gaussian estimate from the exact binary inputs, with 80 digits."""
    with localcontext() as ctx:
        ctx.prec = 80
        h = Decimal(float(h))
        Xd = [[Decimal(float(v)) for v in row] for row in X]
        yd = [Decimal(float(v)) for v in y]
        wd = [Decimal(float(v)) for v in w]
        out = []
        for q in Q:
            qd = [Decimal(float(v)) for v in q]
            d2 = [sum((a - b) ** 2 for a, b in zip(qd, x, strict=True)) for x in Xd]
            shift = min(d2)
            k = [(-(v - shift) / (2 * h * h)).exp() for v in d2]
            num = sum(ki * wi * yi for ki, wi, yi in zip(k, wd, yd, strict=True))
            den = sum(ki * wi for ki, wi in zip(k, wd, strict=True))
            out.append(float(num / den))
    return np.array(out)


def gaussian_nw_mpmath(Q, X, y, w, h):
    """The same estimate with mpmath at 60 significant digits."""
    mpmath = pytest.importorskip("mpmath")
    with mpmath.workdps(60):
        h = mpmath.mpf(float(h))
        out = []
        for q in Q:
            d2 = [
                mpmath.fsum(
                    (mpmath.mpf(float(a)) - mpmath.mpf(float(b))) ** 2
                    for a, b in zip(q, x, strict=True)
                )
                for x in X
            ]
            k = [mpmath.exp(-v / (2 * h * h)) for v in d2]
            kw = [ki * mpmath.mpf(float(wi)) for ki, wi in zip(k, w, strict=True)]
            num = mpmath.fsum(a * float(b) for a, b in zip(kw, y, strict=True))
            den = mpmath.fsum(kw)
            out.append(float(num / den))
    return np.array(out)


REFERENCES = {"decimal": gaussian_nw_decimal, "mpmath": gaussian_nw_mpmath}


@pytest.mark.parametrize("reference", list(REFERENCES))
@pytest.mark.parametrize("d", [1, 3])
def test_gaussian_against_high_precision(d, reference):
    X, y, Q, w = problem(d, n=8, m=6, seed=5)
    for h in [1e-300, 1e-150, 1e-3, 0.05, 0.2, 1.0, 30.0, 1e150, 1e300]:
        expected = REFERENCES[reference](Q, X, y, w, h)
        with raises_no_warning():
            reg = NadarayaWatsonRegressor(bandwidth=h).fit(X, y, w)
            assert_allclose(reg.predict(Q), expected, rtol=1e-11, err_msg=str(h))


@pytest.mark.parametrize("scale", [1e-300, 1e-200, 1e-160, 1e160, 1e200, 1e300])
def test_cv_scalar_bandwidth_grid_scales_with_the_features(scale):
    X, y, _, w = problem(2, n=30)
    grid = np.array([0.1, 0.5, 2.0])
    unit = NadarayaWatsonRegressorCV(bandwidths=list(grid)).fit(X, y, w)
    scaled = NadarayaWatsonRegressorCV(bandwidths=list(grid * scale))
    with raises_no_warning(GridEdgeWarning):
        scaled.fit(X * scale, y, w)
    assert_allclose(
        scaled.cv_results_["mean_test_score"],
        unit.cv_results_["mean_test_score"],
        rtol=1e-10,
    )
