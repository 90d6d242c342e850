"""Local polynomial regression: against per-query weighted least squares
(numpy's lstsq), exact on polynomials of its degree, the degree-1 and
degree-0 cases against the local linear and local-constant estimators, and
its cross-validation against refits."""

import warnings
from fractions import Fraction
from itertools import combinations_with_replacement
from math import comb

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.model_selection import KFold, LeaveOneOut

from sknw import (
    LocalLinearRegressor,
    LocalPolynomialRegressor,
    LocalPolynomialRegressorCV,
    NadarayaWatsonRegressor,
)
from sknw._local.frame import QUERY_CENTRED_TOLERANCE
from sknw._trace import traced
from sknw.exceptions import QueryWarning, SingularDesignWarning
from sknw.kernels import Epanechnikov, Gaussian, get_kernel


def wls(X, y, Q, bandwidth, degree, kernel=None, w=None, factors=None):
    """Intercepts, linear coefficients and the weights of the intercept (the
    rows of the smoother) of the kernel-weighted least-squares polynomial of
    ``degree`` centred at each query, by numpy's lstsq."""
    kernel = Gaussian() if kernel is None else kernel
    y = y.reshape(len(y), -1)
    b = np.broadcast_to(np.asarray(bandwidth, float), (X.shape[1],))
    fits, slopes, rows = [], [], []
    for i, q in enumerate(Q):
        Z = X - q
        k = kernel(np.sqrt(((Z / b) ** 2).sum(axis=1)))
        k = k * (1.0 if w is None else w) * (1.0 if factors is None else factors[i])
        cols = [np.ones(len(X))]
        for p in range(1, degree + 1):
            for term in combinations_with_replacement(range(X.shape[1]), p):
                cols.append(np.prod(Z[:, list(term)], axis=1))
        D = np.column_stack(cols)
        sk = np.sqrt(k)[:, None]
        beta = np.linalg.lstsq(D * sk, y * sk, rcond=None)[0]
        fits.append(beta[0])
        slopes.append(beta[1 : 1 + X.shape[1]].T)
        smoother = np.linalg.pinv(D * sk)[0] * sk[:, 0]
        rows.append(smoother)
    return np.array(fits), np.array(slopes), np.array(rows)


def _data(seed, n, d, k=1):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, d))
    y = np.cos(3 * X).sum(axis=1)[:, None] * np.arange(1, k + 1)
    y = y + 0.1 * rng.normal(size=(n, k))
    Q = rng.uniform(-0.1, 1.1, size=(12, d))
    return X, (y[:, 0] if k == 1 else y), Q, rng.uniform(0.5, 2.0, size=n)


@pytest.mark.parametrize("degree", [2, 3])
@pytest.mark.parametrize("d, k", [(1, 1), (2, 1), (2, 2)])
def test_equals_weighted_least_squares(degree, d, k):
    X, y, Q, w = _data(0, 300, d, k)
    bw = np.linspace(0.3, 0.4, d)
    est = LocalPolynomialRegressor(degree=degree, bandwidth=bw, max_leverage=None)
    est.fit(X, y, sample_weight=w)
    fit, slope, _ = wls(X, y, Q, bw, degree, w=w)
    assert_allclose(
        est.predict(Q), fit.reshape(est.predict(Q).shape), rtol=1e-8, atol=1e-9
    )
    g = est.gradient(Q)
    assert g.shape == ((12, d) if k == 1 else (12, k, d))
    assert_allclose(g.reshape(slope.shape), slope, rtol=1e-8, atol=1e-8)


def test_compact_kernel_and_a_far_centre():
    # Data far from the origin: the moments are taken about each query's cell.
    X, y, Q, _ = _data(1, 400, 1)
    est = LocalPolynomialRegressor(
        degree=3, kernel="epanechnikov", bandwidth=0.25, max_leverage=None
    ).fit(X + 1e5, y)
    Qin = np.linspace(0.05, 0.95, 9)[:, None]
    fit, _, _ = wls(X, y, Qin, 0.25, 3, kernel=Epanechnikov())
    assert_allclose(est.predict(Qin + 1e5), fit[:, 0], rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("degree", [0, 1, 2, 3])
@pytest.mark.parametrize("d", [1, 2])
def test_reproduces_polynomials_of_its_degree(degree, d):
    rng = np.random.default_rng(2)
    X = rng.uniform(size=(120, d))
    coef = rng.normal(size=d)
    y = 0.5 + (X @ coef) ** degree
    Q = np.vstack([X[:5], np.zeros((1, d)), np.ones((1, d))])
    truth = 0.5 + (Q @ coef) ** degree
    est = LocalPolynomialRegressor(degree=degree, bandwidth=0.5, max_leverage=None)
    assert_allclose(est.fit(X, y).predict(Q), truth, rtol=1e-9, atol=1e-9)
    if degree:
        slope = degree * (Q @ coef)[:, None] ** (degree - 1) * coef
        assert_allclose(est.gradient(Q), slope, rtol=1e-7, atol=1e-7)


@pytest.mark.parametrize(
    "kernel, algorithm",
    [
        ("gaussian", "auto"),
        ("gaussian", "brute"),
        ("gaussian", "fgt"),
        ("epanechnikov", "tree"),
        ("epanechnikov", "sorted"),
    ],
)
# Some queries lie beyond the epanechnikov windows of every point: empty
# windows (and no standard error), alike in both estimators.
@pytest.mark.filterwarnings("ignore::sknw.exceptions.EmptyWindowWarning")
@pytest.mark.filterwarnings("ignore::sknw.exceptions.UndefinedStdWarning")
def test_degree_one_is_local_linear(kernel, algorithm):
    X, y, Q, w = _data(3, 2000, 1)
    lp = LocalPolynomialRegressor(
        degree=1, kernel=kernel, bandwidth=0.05, algorithm=algorithm
    )
    ll = LocalLinearRegressor(kernel=kernel, bandwidth=0.05, algorithm=algorithm)
    lp.fit(X, y, sample_weight=w)
    ll.fit(X, y, sample_weight=w)
    assert lp.algorithm_ == ll.algorithm_
    assert_array_equal(lp.predict(Q), ll.predict(Q))
    assert_array_equal(lp.standard_error(Q), ll.standard_error(Q))
    assert_array_equal(lp.gradient(Q), ll.gradient(Q))


def test_degree_zero_is_nadaraya_watson():
    X, y, Q, w = _data(4, 300, 2)
    lp = LocalPolynomialRegressor(degree=0, bandwidth=0.2).fit(X, y, sample_weight=w)
    nw = NadarayaWatsonRegressor(bandwidth=0.2).fit(X, y, sample_weight=w)
    assert_allclose(lp.predict(Q), nw.predict(Q), rtol=1e-12, atol=1e-13)
    assert_allclose(lp.gradient(Q), nw.gradient(Q), rtol=1e-12, atol=1e-13)


def test_standard_errors_are_those_of_the_smoother():
    # With a known noise variance, the standard error of a linear smoother's
    # estimate is sigma times the norm of its row.
    X, y, Q, _ = _data(5, 200, 2)
    est = LocalPolynomialRegressor(
        degree=2, bandwidth=0.4, noise_variance=0.25, max_leverage=None
    ).fit(X, y)
    _, _, rows = wls(X, y, Q, 0.4, 2)
    want = 0.5 * np.sqrt(np.sum(rows**2, axis=1))
    assert_allclose(est.standard_error(Q), want, rtol=1e-7)


def test_discrete_features_enter_through_the_kernel():
    rng = np.random.default_rng(6)
    n = 250
    groups = pd.Categorical(rng.choice(["a", "b"], size=n))
    frame = pd.DataFrame({"x": rng.uniform(size=n), "g": groups})
    y = np.cos(3 * frame["x"]).to_numpy() + (frame["g"] == "b").to_numpy()
    est = LocalPolynomialRegressor(
        degree=2, bandwidth=[0.3, 0.2], max_leverage=None
    ).fit(frame, y)
    codes = frame["g"].cat.codes.to_numpy()
    factors = np.where(codes[None, :] == codes[:8, None], 1 - 0.2, 0.2)
    X = frame[["x"]].to_numpy()
    fit, slope, _ = wls(X, y, X[:8], 0.3, 2, factors=factors)
    assert_allclose(est.predict(frame.iloc[:8]), fit[:, 0], rtol=1e-9)
    assert_allclose(est.gradient(frame.iloc[:8])[:, 0], slope[:, 0, 0], rtol=1e-8)


def test_too_few_points_for_the_degree_lower_it():
    rng = np.random.default_rng(7)
    X = rng.uniform(size=(8, 2))
    y = X.sum(axis=1)
    est = LocalPolynomialRegressor(degree=3, bandwidth=1.0)
    with pytest.warns(SingularDesignWarning, match="degree=3 has 10 coefficients"):
        est.fit(X, y)
    assert est.degree_ == 2  # 6 coefficients for degree 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_allclose(est.predict(X), y, rtol=1e-10)


def test_moment_backends_serve_degrees_from_one():
    X, y, _, _ = _data(8, 600, 1)
    with pytest.raises(ValueError, match="degree=0 takes the exact sums"):
        LocalPolynomialRegressor(degree=0, algorithm="fgt", bandwidth=0.1).fit(X, y)
    est = LocalPolynomialRegressor(degree=0, bandwidth=0.1).fit(X, y)
    assert est.algorithm_ in ("tiles", "tree", "brute")
    assert LocalPolynomialRegressor(degree=2, bandwidth=0.1).fit(X, y).algorithm_ == (
        "fgt"
    )
    est = LocalPolynomialRegressor(degree=3, kernel="tricube", bandwidth=0.1)
    assert est.fit(X, y).algorithm_ == "sorted"
    est = LocalPolynomialRegressor(degree=2, bandwidth=0.1).fit(np.c_[X, X], y)
    assert est.algorithm_ in ("tiles", "tree", "brute")


@pytest.mark.parametrize("degree", [2, 3])
@pytest.mark.parametrize(
    "kernel, algorithm, span",
    [
        ("gaussian", "fgt", None),
        ("tricube", "sorted", None),
        ("epanechnikov", "sorted", None),
        ("triweight", "sorted", 0.1),
        ("tricube", "sorted", 0.05),
    ],
)
# Some queries lie far beyond the data (local constant there, as skipped
# below): empty windows and singular designs.
@pytest.mark.filterwarnings("ignore::sknw.exceptions.EmptyWindowWarning")
@pytest.mark.filterwarnings("ignore::sknw.exceptions.SingularDesignWarning")
def test_fast_paths_equal_weighted_least_squares(degree, kernel, algorithm, span):
    rng = np.random.default_rng(21)
    n = 1500
    X = rng.gamma(2.0, 0.2, size=(n, 1))
    y = np.c_[np.cos(3 * X[:, 0]), X[:, 0] ** 2] + 0.1 * rng.normal(size=(n, 2))
    w = rng.uniform(0.5, 2.0, size=n)
    Q = np.r_[X[:40], rng.uniform(-0.1, 2.5, size=(20, 1))]
    est = LocalPolynomialRegressor(
        degree=degree, kernel=kernel, bandwidth=0.15, span=span, max_leverage=None
    )
    with traced() as trace:
        est.fit(X, y, sample_weight=w)
        assert est.algorithm_ == algorithm
        got = est.predict(Q)
    served = [
        fit["n_served"] / fit["n_queries"]
        for fit in trace.details("query_centred_fit", degree=degree)
    ]
    assert served and served[0] >= 0.8  # the moments about each query served
    bandwidths = np.full(Q.shape[0], 0.15)
    if span is not None:
        bandwidths = est._fits.query_bandwidths(Q)[:, 0]
    for i in range(Q.shape[0]):
        u = np.abs(X[:, 0] - Q[i, 0]) / bandwidths[i]
        if np.sum(get_kernel(kernel)(u) > 0) < 3 * (degree + 1) or Q[i, 0] > 1.8:
            continue  # few points, or far beyond them: local constant
        expected, _, _ = wls(
            X, y, Q[i : i + 1], bandwidths[i], degree, get_kernel(kernel), w
        )
        assert_allclose(got[i], expected[0], rtol=1e-8, atol=1e-9)
    exact = LocalPolynomialRegressor(**{**est.get_params(), "algorithm": "brute"})
    assert_allclose(got, exact.fit(X, y, sample_weight=w).predict(Q), atol=1e-10)


def test_fast_path_reproduces_polynomials_of_its_degree():
    rng = np.random.default_rng(22)
    X = rng.uniform(0.0, 4.0, size=(3000, 1))
    coef = np.array([0.5, -1.0, 0.3, 0.05])
    y = np.polyval(coef[::-1], X[:, 0])
    Q = np.linspace(-0.3, 4.3, 40)[:, None]
    est = LocalPolynomialRegressor(
        degree=3, kernel="tricube", bandwidth=0.5, max_leverage=None
    )
    est.fit(X, y)
    assert est.algorithm_ == "sorted"
    assert_allclose(est.predict(Q), np.polyval(coef[::-1], Q[:, 0]), atol=1e-9)


@pytest.mark.parametrize("cv", [None, 4])
def test_cross_validation_equals_refits(cv):
    X, y, _, w = _data(9, 80, 1)
    if cv is None:  # leave-one-out removes whole rows, as LeaveOneOut
        w = np.ones_like(w)
    bandwidths = [0.15, 0.3, 0.6, 1.2]
    est = LocalPolynomialRegressorCV(
        degree=2, bandwidths=bandwidths, cv=cv, kernels=["gaussian", "biweight"]
    )
    est.fit(X, y, sample_weight=w)
    splitter = LeaveOneOut() if cv is None else KFold(cv)
    scores = []
    for kernel in ("gaussian", "biweight"):
        for h in bandwidths:
            err = []
            for train, test in splitter.split(X):
                ref = LocalPolynomialRegressor(degree=2, kernel=kernel, bandwidth=h)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    ref.fit(X[train], y[train], sample_weight=w[train])
                    pred = ref.predict(X[test])
                err.append(np.average((pred - y[test]) ** 2, weights=w[test]))
            scores.append(-np.mean(err))
    assert_allclose(est.cv_results_["mean_test_score"], scores, rtol=1e-8)


def test_the_default_bandwidth_is_the_cv_choice():
    X, y, _, _ = _data(10, 150, 1)
    est = LocalPolynomialRegressor(degree=2).fit(X, y)
    cv = LocalPolynomialRegressorCV(degree=2).fit(X, y)
    assert_allclose(est.bandwidth_, cv.bandwidth_)
    assert est.bandwidth_selection_["method"] == "leave-one-out"


def test_in_sample_criteria():
    X, y, _, _ = _data(11, 120, 1)
    for scoring in ("aicc", "gcv"):
        est = LocalPolynomialRegressorCV(degree=2, bandwidths=6, scoring=scoring)
        est.fit(X, y)
        assert np.isfinite(est.best_score_)


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov"])
def test_the_ridge_and_the_singular_test_do_not_depend_on_the_frame(kernel):
    # Rescaled features (and bandwidths), and a far training point of weight 0
    # that moves the frame: the same fits, ridged queries included.
    rng = np.random.default_rng(12)
    X = rng.uniform(size=(200, 2))
    y = np.sin(4 * X.sum(axis=1)) + rng.normal(0, 0.1, 200)
    Q = rng.uniform(-0.2, 1.2, (200, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        base = LocalPolynomialRegressor(degree=2, kernel=kernel, bandwidth=[0.15, 0.15])
        base.fit(X, y)
        s = np.array([1.0, 0.01])
        scaled = LocalPolynomialRegressor(
            degree=2, kernel=kernel, bandwidth=0.15 * s
        ).fit(X * s, y)
        far = np.vstack([X, [[-40.0, -40.0]]])
        w = np.r_[np.ones(200), 0.0]
        moved = LocalPolynomialRegressor(
            degree=2, kernel=kernel, bandwidth=[0.15, 0.15]
        )
        moved.fit(far, np.r_[y, 0.0], sample_weight=w)
        want, slope = base.predict(Q), base.gradient(Q)
        assert_allclose(scaled.predict(Q * s), want, rtol=1e-8, atol=1e-8)
        assert_allclose(scaled.gradient(Q * s) * s, slope, rtol=1e-7, atol=1e-7)
        assert_allclose(moved.predict(Q), want, rtol=1e-8, atol=1e-8)


def test_a_wide_design_is_not_singular_at_a_small_bandwidth():
    # Coordinates of thousands of bandwidths: the singular test is in
    # bandwidth units.
    X = np.arange(2000.0)[:, None]
    y = np.sin(X[:, 0] / 40)
    est = LocalPolynomialRegressor(degree=3, bandwidth=5.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SingularDesignWarning)
        est.fit(X, y)
        got = est.predict([[500.5], [1200.25]])
    fit, _, _ = wls(X, y, np.array([[500.5], [1200.25]]), 5.0, 3)
    assert_allclose(got, fit[:, 0], rtol=1e-7, atol=1e-9)


def _split_scores(degree, kernel, h, X, y, splits):
    """The mean squared error of the refit of each split's training points
    on its test points."""
    scores = []
    for train, test in splits:
        ref = LocalPolynomialRegressor(degree=degree, kernel=kernel, bandwidth=h)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", QueryWarning)
            pred = ref.fit(X[train], y[train]).predict(X[test])
        scores.append(-np.mean((pred - y[test]) ** 2))
    return np.array(scores)


@pytest.mark.parametrize(
    ("seed", "degree", "kernel"),
    [
        (6, 4, "epanechnikov"),
        (0, 3, "epanechnikov"),
        (24, 4, "epanechnikov"),
        (18, 4, "epanechnikov"),
    ],
)
@pytest.mark.parametrize("cv", [None, 5])
def test_thin_windows_of_high_degrees_equal_refits(seed, degree, kernel, cv):
    # A compact kernel at a small bandwidth: test windows of fewer points
    # than coefficients (the refit's local constant, never a lower degree),
    # and of exactly as many (an interpolating polynomial, ill-conditioned in
    # the search's one frame).
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, (40, 1)) ** (1 + seed % 3)
    y = np.sin(5 * X[:, 0]) + 0.1 * rng.normal(size=40)
    splitter = LeaveOneOut() if cv is None else KFold(5, shuffle=True, random_state=0)
    splits = list(splitter.split(X))
    est = LocalPolynomialRegressorCV(
        degree=degree, kernels=kernel, bandwidths=[0.08], cv=cv and splits
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", QueryWarning)
        est.fit(X, y)
    want = _split_scores(degree, kernel, 0.08, X, y, splits)
    # Within the rounding of quartics through five points (about 1e-7 in
    # any frame); a lower degree would be 1e-3 to 1 off.
    if cv is None:
        assert_allclose(est.cv_results_["mean_test_score"], [np.mean(want)], rtol=1e-6)
    else:
        got = [est.cv_results_[f"split{i}_test_score"][0] for i in range(5)]
        assert_allclose(got, want, rtol=1e-6)


def test_folds_given_as_lists():
    X, y, _, _ = _data(3, 30, 1)
    folds = [
        (list(range(10, 30)), list(range(10))),
        (list(range(20)), list(range(20, 30))),
    ]
    est = LocalPolynomialRegressorCV(degree=3, bandwidths=[0.3], cv=folds)
    est.fit(X, y)
    arrays = [(np.array(train), np.array(test)) for train, test in folds]
    want = _split_scores(3, "gaussian", 0.3, X, y, arrays)
    got = [est.cv_results_[f"split{i}_test_score"][0] for i in range(2)]
    assert_allclose(got, want, rtol=1e-8)


def test_leave_one_out_with_ridged_points_equals_refits():
    rng = np.random.default_rng(13)
    X = rng.uniform(size=(80, 2))
    y = np.sin(4 * X.sum(axis=1)) + rng.normal(0, 0.1, 80)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cv = LocalPolynomialRegressorCV(
            degree=2, kernels="epanechnikov", bandwidths=[0.15]
        ).fit(X, y)
        pred = np.empty(80)
        for i in range(80):
            keep = np.arange(80) != i
            ref = LocalPolynomialRegressor(
                degree=2, kernel="epanechnikov", bandwidth=0.15
            ).fit(X[keep], y[keep])
            pred[i] = ref.predict(X[i : i + 1])[0]
    assert_allclose(
        cv.cv_results_["mean_test_score"], [-np.mean((y - pred) ** 2)], rtol=1e-8
    )


def test_isolated_points_in_leave_one_out_equal_refits():
    # Far from the frame of the passes, a design found singular for the
    # rounding there is computed again near its point, as its refit is.
    rng = np.random.default_rng(4)
    X = rng.uniform(-1, 1, (60, 1))
    X[:5] *= 1.5
    y = np.cos(3 * X[:, 0]) + 0.2 * rng.normal(size=60)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cv = LocalPolynomialRegressorCV(degree=2, bandwidths=[0.08]).fit(X, y)
        pred = np.empty(60)
        for i in range(60):
            keep = np.arange(60) != i
            ref = LocalPolynomialRegressor(degree=2, bandwidth=0.08)
            pred[i] = ref.fit(X[keep], y[keep]).predict(X[i : i + 1])[0]
    assert_allclose(
        cv.cv_results_["mean_test_score"], [-np.mean((y - pred) ** 2)], rtol=1e-9
    )


def test_the_ridge_does_not_depend_on_the_axes():
    # A rotation of the features: the monomials of each degree are scaled so
    # that rotations act orthogonally on them.
    rng = np.random.default_rng(17)
    X = rng.uniform(size=(150, 2))
    y = np.sin(4 * X[:, 0]) + X[:, 1] ** 2
    Q = rng.uniform(-0.3, 1.3, (60, 2))
    c, s = np.cos(0.6), np.sin(0.6)
    R = np.array([[c, -s], [s, c]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = LocalPolynomialRegressor(degree=2, bandwidth=0.2).fit(X, y)
        turned = LocalPolynomialRegressor(degree=2, bandwidth=0.2).fit(X @ R, y)
        assert_allclose(turned.predict(Q @ R), est.predict(Q), rtol=1e-8, atol=1e-9)
        assert_allclose(
            turned.gradient(Q @ R) @ R.T, est.gradient(Q), rtol=1e-7, atol=1e-7
        )


@pytest.mark.parametrize("degree", [1, 2])
def test_gradients_of_local_constant_fallbacks_are_in_target_units(degree):
    X = np.linspace(-1, 1, 201).reshape(-1, 1)
    y = 1000 * np.sin(2 * X[:, 0])
    kw = {"bandwidth": 0.6, "kernel": "epanechnikov"}
    q = [[1.599], [1.5]]  # windows of 1 and 11 points
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lp = LocalPolynomialRegressor(degree=degree, **kw).fit(X, y)
        nw = NadarayaWatsonRegressor(**kw).fit(X, y)
        assert_allclose(lp.predict(q)[0], nw.predict(q)[0], rtol=1e-12)
        assert_allclose(lp.gradient(q)[0], nw.gradient(q)[0], rtol=1e-10)
        assert abs(lp.gradient(q)[1, 0]) < 3000  # the slope of 1000 sin(2x)


def test_fast_path_queries_beyond_the_bound_take_the_exact_path():

    rng = np.random.default_rng(24)
    X = rng.uniform(0.0, 3.0, size=(1200, 1))
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=1200)
    Q = np.linspace(0.0, 3.0, 30)[:, None]
    est = LocalPolynomialRegressor(degree=2, kernel="tricube", bandwidth=0.3)
    exact = LocalPolynomialRegressor(
        degree=2, kernel="tricube", bandwidth=0.3, algorithm="brute"
    )
    exact.fit(X, y)
    assert est.fit(X, y).algorithm_ == "sorted"
    fast = est.predict(Q)
    assert not np.array_equal(fast, exact.predict(Q))  # the moments served
    with QUERY_CENTRED_TOLERANCE.set(0.0):
        assert_array_equal(est.predict(Q), exact.predict(Q))


@pytest.mark.parametrize("d, degree", [(1, 1), (1, 2), (2, 1)])
@pytest.mark.parametrize("decades", [33, 100, 200])
@pytest.mark.parametrize("cv", [None, 3])
def test_a_far_point_of_vanishing_weight_completes_the_design_as_in_refits(
    d, degree, decades, cv
):
    # Left out, a point of the near cluster leaves one point too few for its
    # polynomial, and the far cluster, 10**-decades as heavy, completes the
    # design exactly. Without a ridge, the refit interpolates; the search,
    # whose one frame rounds the design to a vanishing (even negative)
    # covariance, must not take the local constant.
    rng = np.random.default_rng(decades + 10 * d + degree)
    n_coef = comb(d + degree, d)
    X = np.vstack([rng.uniform(0, 0.1, (n_coef, d)), rng.uniform(1.3, 1.4, (3, d))])
    y = rng.normal(size=X.shape[0])
    h = np.sqrt(1.69 * d / (2 * decades * np.log(10)))
    folds = KFold(cv, shuffle=True, random_state=0) if cv else LeaveOneOut()
    params = {"degree": degree, "max_leverage": None}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", QueryWarning)
        est = LocalPolynomialRegressorCV(
            bandwidths=[h], cv=folds if cv else None, **params
        )
        est.fit(X, y)
        fold_errors = []
        for train, test in folds.split(X):
            refit = LocalPolynomialRegressor(bandwidth=h, **params)
            refit.fit(X[train], y[train])
            fold_errors.append(np.mean((refit.predict(X[test]) - y[test]) ** 2))
    assert_allclose(-est.best_score_, np.mean(fold_errors), rtol=1e-9)


def _exact_intercepts(x, y, queries, h, degree):
    """The local polynomial's intercept at each query in rational arithmetic
    (the weights as float64 gives them), and the condition number of its
    design: the kernel-weighted Gram matrix of the powers of the offsets in
    bandwidths."""
    out, conds = [], []
    for q in queries:
        u = (x - q) / h
        w = np.exp(-0.5 * u * u)
        terms = [[Fraction(float(ui)) ** a for a in range(2 * degree + 1)] for ui in u]
        wf = [Fraction(float(wi)) for wi in w]
        G = [
            [
                sum(wi * t[a + b] for wi, t in zip(wf, terms, strict=True))
                for b in range(degree + 1)
            ]
            for a in range(degree + 1)
        ]
        r = [
            sum(
                wi * t[a] * Fraction(float(yi))
                for wi, t, yi in zip(wf, terms, y, strict=True)
            )
            for a in range(degree + 1)
        ]
        out.append(float(_rational_solve(G, r)[0]))
        conds.append(np.linalg.cond(np.array(G, dtype=np.float64)))
    return np.array(out), np.array(conds)


def _rational_solve(G, r):
    """``G^-1 r`` by Gauss-Jordan elimination in exact arithmetic."""
    n = len(r)
    A = [list(row) + [ri] for row, ri in zip(G, r, strict=True)]
    for c in range(n):
        pivot = next(i for i in range(c, n) if A[i][c] != 0)
        A[c], A[pivot] = A[pivot], A[c]
        for i in range(n):
            if i != c and A[i][c] != 0:
                f = A[i][c] / A[c][c]
                A[i] = [a - f * b for a, b in zip(A[i], A[c], strict=True)]
    return [A[i][n] / A[i][i] for i in range(n)]


@pytest.mark.parametrize("algorithm", ["brute", "fgt"])
@pytest.mark.parametrize("seed", range(16))
def test_estimates_are_within_their_documented_rounding_of_exact_arithmetic(
    seed, algorithm
):
    # The accuracy the Notes state: the fast paths' bound (1e-10 of the
    # targets' range) plus the rounding of the local normal equations, at
    # most a thousand eps times the condition number of the local design,
    # here on designs up to 1e6 (those nearer the singular test are skipped).
    rng = np.random.default_rng(seed)
    n, degree = int(rng.integers(6, 40)), int(rng.integers(1, 4))
    x = np.sort(rng.uniform(0, 1, n) ** rng.choice([1, 3]))
    y = np.sin(6 * x) + rng.normal(0, 0.3, n)
    h = float(np.exp(rng.uniform(np.log(0.01), np.log(0.3))))
    queries = rng.uniform(x[0] - 2 * h, x[-1] + 2 * h, 5)
    want, cond = _exact_intercepts(x, y, queries, h, degree)
    est = LocalPolynomialRegressor(
        degree=degree, bandwidth=h, max_leverage=None, algorithm=algorithm
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", QueryWarning)
        got = est.fit(x[:, None], y).predict(queries[:, None])
    kept = cond <= 1e6
    fast = 1e-10 if algorithm == "fgt" else 0.0
    bound = (fast + 1000 * np.finfo(np.float64).eps * cond) * np.ptp(y)
    assert kept.any()
    assert np.all(np.abs(got - want)[kept] <= bound[kept])
