"""Local linear regression against least squares, statsmodels and its fallback."""

import warnings
from contextlib import nullcontext
from functools import partial

import numpy as np
import pytest
from _expected_warnings import warns_about
from _leave_out import weights_without
from numpy.testing import assert_allclose, assert_array_equal
from scipy.spatial.distance import cdist
from sklearn.model_selection import GridSearchCV, KFold, LeaveOneOut
from sklearn.preprocessing import OneHotEncoder

from sknw import (
    LocalLinearRegressor,
    LocalLinearRegressorCV,
    NadarayaWatsonRegressor,
    NadarayaWatsonRegressorCV,
)
from sknw._local.fits import collinear_with_intercept
from sknw._local.frame import FRAME_BATCH_WORK, local_solution, moment_columns
from sknw._local.passes import JOINT_CANDIDATES, KEEP_PREPARED
from sknw._sums import FitRequest, Head, choose
from sknw._trace import traced
from sknw.exceptions import (
    EmptyWindowWarning,
    GridEdgeWarning,
    QueryWarning,
    RidgedDesignWarning,
    SingularDesignWarning,
)
from sknw.kernels import KERNELS, get_kernel

KERNEL_NAMES = sorted({cls.__name__.lower(): name for name, cls in KERNELS.items()})
NONNEGATIVE = [k for k in KERNEL_NAMES if KERNELS[k].nonnegative and k != "constant"]


def lstsq_reference(Q, X, y, kernel, scale, w):
    """Kernel-weighted least-squares hyperplane at each query, its intercept."""
    K = KERNELS[kernel]()(cdist(Q / scale, X / scale)) * w
    out = []
    for i in range(Q.shape[0]):
        A = np.hstack([np.ones((X.shape[0], 1)), X - Q[i]])
        root = np.sqrt(K[i])[:, None]
        out.append(np.linalg.lstsq(A * root, y * root, rcond=None)[0][0])
    return np.array(out)


@pytest.mark.parametrize("per_feature", [False, True], ids=["scalar", "per_feature"])
@pytest.mark.parametrize("d", [1, 3])
@pytest.mark.parametrize("kernel", NONNEGATIVE)
def test_equals_weighted_least_squares(kernel, d, per_feature):
    rng = np.random.default_rng(d)
    X = rng.uniform(-1.0, 1.0, size=(200, d))
    y = np.column_stack([np.sin(2 * X[:, 0]) + X.sum(axis=1) ** 2, X[:, 0] ** 3])
    w = rng.uniform(0.2, 2.0, size=200)
    Q = rng.uniform(-0.8, 0.8, size=(30, d))  # well inside: full windows
    h = 1.2 if np.isfinite(KERNELS[kernel].support) else 0.5
    scale = np.linspace(0.8, 1.25, d) * h if per_feature else np.full(d, h)
    bandwidth = scale if per_feature else h
    est = LocalLinearRegressor(kernel=kernel, bandwidth=bandwidth).fit(X, y, w)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SingularDesignWarning)
        got = est.predict(Q)
    assert_allclose(got, lstsq_reference(Q, X, y, kernel, scale, w), rtol=1e-9)


@pytest.mark.parametrize("kernel", ["gaussian", "laplacian", "epanechnikov", "boxcar"])
@pytest.mark.parametrize("h", [1.2, 2.0])
def test_reproduces_linear_functions_where_local_constant_does_not(kernel, h):
    rng = np.random.default_rng(5)
    X = rng.uniform(-2.0, 2.0, size=(120, 2))
    coef = np.array([2.0, -3.0])
    y = 1.0 + X @ coef
    # Queries up to the edges of the data, where windows are one-sided.
    Q = rng.uniform(-2.0, 2.0, size=(40, 2))
    ll = LocalLinearRegressor(kernel=kernel, bandwidth=h).fit(X, y)
    nw = NadarayaWatsonRegressor(kernel=kernel, bandwidth=h).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SingularDesignWarning)
        got = ll.predict(Q)
    truth = 1.0 + Q @ coef
    assert_allclose(got, truth, atol=1e-10 * np.abs(truth).max())
    assert np.max(np.abs(nw.predict(Q) - truth)) > 0.05  # boundary bias


@pytest.mark.filterwarnings("ignore::FutureWarning")  # raised inside statsmodels
@pytest.mark.parametrize("d", [1, 2])
def test_agrees_with_statsmodels_local_linear(d):
    kernel_regression = pytest.importorskip(
        "statsmodels.nonparametric.kernel_regression"
    )
    rng = np.random.default_rng(9)
    X = rng.normal(size=(80, d))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=80)
    Q = rng.normal(size=(25, d))
    bw = np.linspace(0.5, 0.8, d)
    sm = kernel_regression.KernelReg(y, X, var_type="c" * d, reg_type="ll", bw=bw).fit(
        Q
    )[0]
    ours = LocalLinearRegressor(bandwidth=bw).fit(X, y).predict(Q)
    assert_allclose(ours, sm, rtol=1e-8)


def test_singular_designs_fall_back_to_local_constant_with_a_warning():
    X = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0], [3.0, 3.0], [10.0, 0.0]])
    y = np.array([0.0, 1.0, 4.0, 9.0, 5.0])
    kw = {"kernel": "epanechnikov", "bandwidth": 1.6}
    ll = LocalLinearRegressor(**kw).fit(X, y)
    nw = NadarayaWatsonRegressor(**kw).fit(X, y)
    # Collinear neighbours (on the diagonal), a single neighbour, and an empty
    # window (the empty-window policy, here the nearest point, and its own
    # warning only).
    Q = np.array([[1.5, 1.5], [10.0, 0.5], [6.0, -5.0]])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = ll.predict(Q)
    counts = [(w.category, w.message.n_affected, w.message.n_queries) for w in caught]
    assert counts == [(EmptyWindowWarning, 1, 3), (SingularDesignWarning, 2, 3)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_allclose(got, nw.predict(Q), rtol=1e-12)
    assert np.all(np.isfinite(got))


# The queries reach beyond the data: empty windows and ridged designs there.
@pytest.mark.filterwarnings("ignore::sknw.exceptions.EmptyWindowWarning")
@pytest.mark.filterwarnings("ignore::sknw.exceptions.RidgedDesignWarning")
def test_multi_output_shapes_on_the_sorted_path():
    rng = np.random.default_rng(3)
    X = rng.uniform(size=(600, 1))
    Y = np.column_stack([X[:, 0], 2 * X[:, 0] + 1])
    est = LocalLinearRegressor(kernel="epanechnikov", bandwidth=0.2).fit(X, Y)
    assert est.algorithm_ == "sorted"  # "auto" from 512 points on one feature
    assert_allclose(est.predict(X[:5]), Y[:5], atol=1e-10)
    assert LocalLinearRegressor().fit(X, Y[:, :1]).predict(X[:3]).shape == (3, 1)
    brute = LocalLinearRegressor(
        kernel="epanechnikov", bandwidth=0.2, algorithm="brute"
    ).fit(X, Y)
    Q = np.linspace(-0.3, 1.3, 50)[:, None]
    assert_allclose(est.predict(Q), brute.predict(Q), rtol=0, atol=1e-10 * 2)


# -- accuracy whatever the spread of the training inputs -------------------------


def shifted_lstsq(Q, X, y, kernel, scale):
    """The weighted least-squares fit at each query from its definition, with
    the weights ``K(d / h)`` divided by the largest of each query (the fit does
    not change, and far queries keep weights that do not underflow): its
    intercept, and the weighted standard deviation of the targets in the
    window (the scale of the errors allowed)."""
    kern = KERNELS[kernel]()
    with np.errstate(divide="ignore"):
        L = kern.log_value(cdist(Q / scale, X / scale))
    K = np.exp(L - L.max(axis=1, keepdims=True))
    fits, spreads = [], []
    for i in range(Q.shape[0]):
        A = np.hstack([np.ones((X.shape[0], 1)), X - Q[i]])
        root = np.sqrt(K[i])
        fits.append(np.linalg.lstsq(A * root[:, None], y * root, rcond=None)[0][0])
        mean = np.average(y, weights=K[i])
        spreads.append(np.sqrt(np.average((y - mean) ** 2, weights=K[i])))
    return np.array(fits), np.array(spreads)


def with_far_points(X, far):
    """``X`` and a training point at ``(v, ..., v)`` for each ``v`` in ``far``."""
    far = np.asarray(far, dtype=np.float64)
    return np.vstack([X, np.repeat(far[:, None], X.shape[1], axis=1)])


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov"])
@pytest.mark.parametrize("far", [[1e4], [1e6], [1e8], [1e6, -1e5, 3e6]])
@pytest.mark.parametrize("d", [1, 2])
def test_lines_are_exact_with_far_outliers(d, far, kernel):
    """A far training point used to set the frame of the moments: the local
    covariance of the bulk, a difference of moments, lost every digit (the
    fit at 0 was 1.1533 instead of 1, with a false singular warning)."""
    grid = np.linspace(0.0, 1.0, 101 if d == 1 else 21)
    X = np.stack(np.meshgrid(*[grid] * d), axis=-1).reshape(-1, d)
    X = with_far_points(X, far)
    coef = np.array([2.0, -3.0])[:d]
    y = X @ coef + 1.0
    inner = np.repeat(grid[[1, 7], None], d, axis=1)
    Q = np.vstack([np.zeros(d), np.ones(d), np.full(d, 0.5), inner])
    if d == 2:
        Q = np.vstack([Q, [[0.0, 1.0], [1.0, 0.0]]])
    est = LocalLinearRegressor(kernel=kernel, bandwidth=0.25).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SingularDesignWarning)
        got = est.predict(Q)
    truth = Q @ coef + 1.0
    assert_allclose(got, truth, rtol=0, atol=1e-10)


@pytest.mark.parametrize("far", [None, 1e6])
@pytest.mark.parametrize("d", [1, 2])
def test_equals_least_squares_at_extrapolating_queries(d, far):
    """Queries up to 17 bandwidths outside the data, beyond its edges and
    corners, whose windows are one-sided and thin: their moments are taken
    again about the window's mean, in its principal axes.

    Tolerance: the moments give the normal equations of the local design in
    those axes, whose rounding is about eps times the condition number of the
    local correlation matrix (near 1 there) times the query's leverage, well
    below 1e-9 of the spread of the targets in the window; plus the rounding
    of the estimate itself (a few eps of it, for windows where a few points
    carry the weight, whose targets barely spread). Moments in one frame of
    the whole data were off by 4e-9 to 7e4 times that spread here.
    """
    rng = np.random.default_rng(1)
    X = rng.uniform(0.0, 1.0, (300, d))
    if far is not None:
        X = with_far_points(X, [far])
    y = np.sin(4 * X[:, 0]) + (X[:, -1] ** 2 if d > 1 else 0.0)
    h = np.array([0.059, 0.062])[:d]
    out = np.array([1.05, 1.2, 1.5, 2.0])
    if d == 1:
        Q = np.r_[out, -out + 1, 0.0, 0.5, 1.0][:, None]
    else:
        corners = [[1.52, 1.45], [1.87, 1.36], [1.2, 1.9]]
        Q = np.vstack(
            [np.column_stack([out, np.full(4, 0.5)]), np.repeat(out[:3, None], 2, 1)]
        )
        Q = np.vstack([Q, corners, 1 - Q, [[0.0, 0.0], [0.5, 0.5], [1.0, 0.0]]])
    # The plain local linear fit (no ridge): extrapolation at full slope.
    est = LocalLinearRegressor(bandwidth=h if d > 1 else h[0], max_leverage=None)
    est.fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SingularDesignWarning)
        got = est.predict(Q)
    expected, spread = shifted_lstsq(Q, X, y, "gaussian", h)
    eps = np.finfo(np.float64).eps
    assert np.all(np.abs(got - expected) <= 1e-9 * spread + 8 * eps * np.abs(expected))


def test_far_points_outside_every_window_change_nothing():
    """A training point whose kernel weight is exactly zero at every query (a
    compact kernel's window, or a Gaussian weight that underflows) leaves the
    local fits, their standard errors included, as they are without it."""
    rng = np.random.default_rng(2)
    X = rng.uniform(0.0, 1.0, (200, 2))
    y = np.cos(3 * X[:, 0]) * X[:, 1] + rng.normal(0.0, 0.1, 200)
    Q = rng.uniform(0.0, 1.0, (40, 2))
    for kernel in ["gaussian", "biweight"]:
        kw = {"kernel": kernel, "bandwidth": [0.2, 0.25]}
        near = LocalLinearRegressor(**kw).fit(X, y)
        far = LocalLinearRegressor(**kw).fit(
            np.vstack([X, [[1e7, -1e7]]]), np.r_[y, 1e8]
        )
        expected = near.predict(Q, return_std=True)
        got = far.predict(Q, return_std=True)
        for a, b in zip(expected, got, strict=True):
            assert_allclose(b, a, rtol=1e-9)


def test_windows_of_a_far_point_alone_are_singular():
    """Where the window really holds too few points (a query at the far
    point), the warning and the local-constant estimate remain; the bulk's
    queries are not counted."""
    X = np.r_[np.linspace(0.0, 1.0, 101), 1e6][:, None]
    y = 2 * X[:, 0] + 1
    Q = np.array([[0.0], [1e6], [1.0]])
    kw = {"kernel": "epanechnikov", "bandwidth": 0.1}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = LocalLinearRegressor(**kw).fit(X, y).predict(Q)
    assert [(w.message.n_affected, w.message.n_queries) for w in caught] == [(1, 3)]
    assert caught[0].category is SingularDesignWarning
    assert_allclose(got, [1.0, 2e6 + 1, 3.0], rtol=1e-12)


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov"])
def test_answers_do_not_depend_on_the_batch(kernel):
    """Per-feature bandwidths, queries inside and around the data: the same
    estimates at once, one at a time, permuted and duplicated, to rounding in
    well-conditioned local solves (moments in one frame of the whole data
    differed by up to 4e-12 here, 3e-9 with the Epanechnikov kernel).
    Standard errors to 1e-10 relative: the residual mean square is a
    difference of moments, whose rounding the ratio of the targets' variance
    to the residuals' amplifies."""
    rng = np.random.default_rng(4)
    X = rng.uniform(0.0, 1.0, (300, 2))
    y = np.sin(5 * X[:, 0]) + X[:, 1] ** 2 + rng.normal(0.0, 0.1, 300)
    h = [0.059, 0.062] if kernel == "gaussian" else [0.15, 0.16]
    est = LocalLinearRegressor(kernel=kernel, bandwidth=h).fit(X, y)
    Q = rng.uniform(-0.2, 1.2, (120, 2))
    order = rng.permutation(120)

    def batches(method):
        together = method(Q)
        yield together, np.concatenate([method(q[None]) for q in Q])
        yield together, method(Q[order])[np.argsort(order)]
        twice = method(np.vstack([Q, Q[::-1]]))
        yield together, twice[:120]
        yield together, twice[120:][::-1]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for together, other in batches(est.predict):
            assert_allclose(other, together, rtol=1e-13, atol=1e-13)
        for together, other in batches(est.standard_error):
            assert_allclose(other, together, rtol=1e-10)


# -- LocalLinearRegressorCV ------------------------------------------------------


def brute_loo(X, y, w, kernel, bandwidth):
    """Leave-one-out predictions by refitting without each row and its
    copies."""
    preds = []
    for i in range(X.shape[0]):
        wi = weights_without(X, y, w, i)
        est = LocalLinearRegressor(kernel=kernel, bandwidth=bandwidth)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SingularDesignWarning)
            warnings.simplefilter("ignore", EmptyWindowWarning)
            warnings.simplefilter("ignore", RidgedDesignWarning)
            est.fit(X[wi > 0], y[wi > 0], sample_weight=wi[wi > 0])
            preds.append(est.predict(X[i : i + 1])[0])
    return np.array(preds)


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov", "tricube", "cauchy"])
@pytest.mark.parametrize("d", [1, 2])
def test_cv_loo_scores_equal_brute_force(kernel, d):
    rng = np.random.default_rng(d)
    X = rng.uniform(0, 3, (40, d))
    y = np.sin(2 * X).sum(axis=1) + X[:, 0] + rng.normal(0, 0.2, 40)
    w = rng.integers(1, 4, 40).astype(float)
    bandwidths = [0.6, 1.5] if d == 1 else [np.array([0.9, 1.4]), 2.0]
    cv = LocalLinearRegressorCV(kernels=kernel, bandwidths=bandwidths)
    cv.fit(X, y, sample_weight=w)
    for i, bw in enumerate(bandwidths):
        pred = brute_loo(X, y, w, kernel, bw)
        expected = -np.average((y - pred) ** 2, weights=w)
        assert_allclose(cv.cv_results_["mean_test_score"][i], expected, rtol=1e-10)


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov"])
def test_cv_loo_scores_with_a_far_point_equal_least_squares(kernel):
    """The leave-one-out moments share one frame for all the data: a far
    point (here of weight zero, so that it is not scored) stretches it, and
    the bulk's local covariances lose their digits there; those points are
    computed again in frames near them. The reference: each left-out point's
    weighted least-squares fit to the others."""
    rng = np.random.default_rng(6)
    X = np.r_[np.linspace(0.0, 1.0, 61), 1e6][:, None]
    y = 2 * X[:, 0] + 1 + rng.normal(0.0, 0.1, 62)
    w = np.r_[np.ones(61), 0.0]
    bandwidths = [0.1, 0.3]
    cv = LocalLinearRegressorCV(kernels=kernel, bandwidths=bandwidths)
    cv.fit(X, y, sample_weight=w)
    for i, bw in enumerate(bandwidths):
        pred = []
        for j in range(61):
            keep = np.arange(61) != j  # the far point weighs nothing
            fit, _ = shifted_lstsq(X[j : j + 1], X[:61][keep], y[:61][keep], kernel, bw)
            pred.append(fit[0])
        expected = -np.mean((y[:61] - np.array(pred)) ** 2)
        assert_allclose(cv.cv_results_["mean_test_score"][i], expected, rtol=1e-10)


def test_cv_scores_singular_left_out_designs_like_predict():
    """Small compact windows: many left-out points have fewer than two
    neighbours and are scored with the local-constant fallback."""
    rng = np.random.default_rng(7)
    X = np.sort(rng.uniform(0, 10, (30, 1)), axis=0)
    y = np.cos(X[:, 0]) + rng.normal(0, 0.1, 30)
    bandwidths = [0.3, 0.6, 1.2, 1.8]
    cv = LocalLinearRegressorCV(kernels="epanechnikov", bandwidths=bandwidths)
    cv.fit(X, y)
    for i, bw in enumerate(bandwidths):
        pred = brute_loo(X, y, np.ones(30), "epanechnikov", bw)
        expected = -np.mean((y - pred) ** 2)
        assert_allclose(cv.cv_results_["mean_test_score"][i], expected, rtol=1e-10)


# The smallest bandwidths ridge some left-out points' designs, in both searches.
@pytest.mark.filterwarnings("ignore::sknw.exceptions.RidgedDesignWarning")
def test_cv_choice_equals_grid_search():
    rng = np.random.default_rng(3)
    X = rng.uniform(0, 3, (60, 1))
    y = 2 * X[:, 0] + np.sin(3 * X[:, 0]) + rng.normal(0, 0.3, 60)
    grid = list(np.geomspace(0.05, 2.0, 12))
    for splitter in (LeaveOneOut(), KFold(5, shuffle=True, random_state=0)):
        cv = LocalLinearRegressorCV(bandwidths=grid, cv=splitter).fit(X, y)
        search = GridSearchCV(
            LocalLinearRegressor(),
            {"bandwidth": grid},
            cv=splitter,
            scoring="neg_mean_squared_error",
        ).fit(X, y)
        assert cv.bandwidth_ == search.best_params_["bandwidth"]
        scores = cv.cv_results_["mean_test_score"]
        assert_allclose(scores, search.cv_results_["mean_test_score"], rtol=1e-9)
        assert_allclose(cv.predict(X), search.best_estimator_.predict(X), rtol=1e-12)


def test_cv_prefers_local_linear_where_the_slope_matters():
    """On a line, local linear is exact at any bandwidth: the CV score is the
    noise level at every bandwidth, far better than local constant's at large
    bandwidths."""
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (100, 1))
    y = 5 * X[:, 0] + rng.normal(0, 0.1, 100)
    grid = [0.05, 0.2, 1.0]
    # Each at its own edge: local linear at the largest, local constant at
    # the smallest bandwidth.
    with pytest.warns(GridEdgeWarning, match="is the largest of"):
        ll = LocalLinearRegressorCV(bandwidths=grid).fit(X, y)
    with pytest.warns(GridEdgeWarning, match="is the smallest of"):
        nw = NadarayaWatsonRegressorCV(bandwidths=grid).fit(X, y)
    assert ll.best_score_ > nw.best_score_
    assert ll.cv_results_["mean_test_score"][-1] > -0.015
    assert nw.cv_results_["mean_test_score"][-1] < -0.5


def test_cv_refine_and_multi_output():
    rng = np.random.default_rng(5)
    X = rng.uniform(0, 3, (80, 2))
    Y = np.column_stack([np.sin(X[:, 0]), X[:, 1] ** 2]) + rng.normal(0, 0.1, (80, 2))
    cv = LocalLinearRegressorCV(bandwidths=8, refine=True).fit(X, Y)
    assert np.all(np.asarray(cv.bandwidth_) > 0)
    grid_best = cv.cv_results_["mean_test_score"].max()
    assert cv.best_score_ >= grid_best
    assert cv.predict(X).shape == (80, 2)
    # The refined bandwidth's score is that of a fixed-bandwidth CV run.
    again = LocalLinearRegressorCV(bandwidths=[cv.bandwidth_]).fit(X, Y)
    assert_allclose(again.best_score_, cv.best_score_, rtol=1e-10)


def test_cv_rejects_sorted():
    X = np.linspace(0, 1, 20)[:, None]
    with pytest.raises(ValueError, match="algorithm"):
        LocalLinearRegressorCV(algorithm="sorted").fit(X, X[:, 0])


@pytest.mark.parametrize("policy", ["mean", "nearest"])
def test_cv_empty_left_out_windows_score_like_predict(policy):
    """A left-out point whose window is empty gets the empty-window value of
    the local-constant estimate, as predict gives it, not a line through the
    fallback's points."""
    cases = [
        (np.array([[0.0], [1], [2], [3], [4], [10]]), 1.5),
        (np.array([[0.0, 0], [1, 0], [0, 1], [-1, 0], [5, 5]]), 0.5),
    ]
    for X, bw in cases:
        y = 2 * X[:, 0] + (X[:, 1] if X.shape[1] > 1 else 0) + 1
        cv = LocalLinearRegressorCV(
            kernels="epanechnikov", bandwidths=[bw], empty_window=policy
        ).fit(X, y)
        preds = []
        for i in range(X.shape[0]):
            keep = np.arange(X.shape[0]) != i
            est = LocalLinearRegressor(
                kernel="epanechnikov", bandwidth=bw, empty_window=policy
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                preds.append(est.fit(X[keep], y[keep]).predict(X[i : i + 1])[0])
        expected = -np.mean((y - np.array(preds)) ** 2)
        assert_allclose(cv.cv_results_["mean_test_score"][0], expected, rtol=1e-10)


@pytest.mark.parametrize("h", [1e-300, 1e300])
def test_extreme_bandwidths(h):
    """A vanishing bandwidth: the nearest point; an infinite one: the
    ordinary least-squares line. No overflow on the way."""
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (30, 1))
    y = 3 * X[:, 0] + rng.normal(0, 0.1, 30)
    Q = np.array([[0.25], [0.5]])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pred = LocalLinearRegressor(bandwidth=h).fit(X, y).predict(Q)
    # One point carries all the weight at a vanishing bandwidth: a singular
    # local design, said so; nothing else (no overflow).
    expected = [SingularDesignWarning] if h < 1 else []
    assert [w.category for w in caught] == expected
    if h > 1:
        coef = np.polyfit(X[:, 0], y, 1)
        assert_allclose(pred, np.polyval(coef, Q[:, 0]), rtol=1e-9)
    else:
        nearest = np.abs(X[:, 0][None, :] - Q).argmin(axis=1)
        assert_allclose(pred, y[nearest])


def test_float32_inputs_summed_in_float64(exp_dtypes):
    # The local solves amplify rounding: float32 inputs keep float64 sums.
    seen = exp_dtypes
    rng = np.random.default_rng(4)
    X = rng.uniform(-1, 1, size=(2000, 2)).astype(np.float32)
    y = np.sin(3 * X[:, 0]) + 2 * X[:, 1]
    Q = X[:200]
    single = LocalLinearRegressor(bandwidth=0.3).fit(X, y).predict(Q)
    assert np.dtype(np.float32) not in seen
    double = LocalLinearRegressor(bandwidth=0.3).fit(X.astype(float), y)
    np.testing.assert_allclose(single, double.predict(Q.astype(float)), rtol=1e-12)


# -- the one-feature fast paths (moments about each query) ---------------------

#: The fast path of each one-feature kernel tested.
FAST_PATHS = {
    "gaussian": "fgt",
    "epanechnikov": "sorted",
    "tricube": "sorted",
    "triangular": "sorted",
    "boxcar": "sorted",
    "biweight": "sorted",
    "triweight": "sorted",
}


def weighted_lstsq(Q, X, y, w, kernel, h, own=None, kept=None):
    """The local linear fit at each query from its definition: weights
    ``w K(|x - q| / h)`` (shifted in the log domain), each query's own point
    keeping ``kept`` of its weight when ``own`` names it; fewer than two
    points of positive weight give the weighted mean, none the weighted mean
    of the nearest points (``empty_window="nearest"``)."""
    kern = KERNELS[kernel]()
    D = cdist(Q, X)
    W = np.broadcast_to(w, D.shape).copy()
    if own is not None:
        W[np.arange(len(own)), own] = kept[own]
    with np.errstate(divide="ignore"):
        L = np.where(W > 0, kern.log_value(D / h), -np.inf)
    top = L.max(axis=1, keepdims=True)
    K = np.exp(L - np.where(np.isfinite(top), top, 0.0)) * W  # empty rows: 0
    out = np.empty(Q.shape[0])
    for i in range(Q.shape[0]):
        inside = K[i] > 0
        if not inside.any():
            dist = np.where(W[i] > 0, D[i], np.inf)
            near = dist == dist.min()
            out[i] = np.average(y[near], weights=W[i][near])
            continue
        if inside.sum() < 2:
            out[i] = np.average(y[inside], weights=K[i][inside])
            continue
        A = np.column_stack([np.ones(inside.sum()), X[inside, 0] - Q[i, 0]])
        root = np.sqrt(K[i][inside])
        out[i] = np.linalg.lstsq(A * root[:, None], y[inside] * root, rcond=None)[0][0]
    return out


def _fast_data(n=800, seed=11):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 1.0, (n, 1))
    y = 50.0 + np.sin(7 * X[:, 0]) + rng.normal(0.0, 0.2, n)
    w = rng.integers(1, 4, n).astype(float)
    return X, y, w


@pytest.mark.parametrize("kernel", sorted(FAST_PATHS))
def test_fast_paths_equal_weighted_least_squares(kernel):
    X, y, w = _fast_data()
    h = 0.05
    # The plain least-squares fits (no ridge: beyond the data, the narrow
    # triweight's one-sided windows exceed the default max_leverage).
    est = LocalLinearRegressor(kernel=kernel, bandwidth=h, max_leverage=None)
    est.fit(X, y, sample_weight=w)
    assert est.algorithm_ == FAST_PATHS[kernel]  # "auto" from 512 points
    # Inside, at the edges, and a little beyond (one-sided windows).
    Q = np.r_[np.linspace(-0.03, 1.03, 120), X[::37, 0]][:, None]
    fast = est._fits.query_centred(Q)
    assert fast.served.mean() > 0.9
    ref = weighted_lstsq(Q, X, y, w, kernel, h)
    assert_allclose(est.predict(Q), ref, rtol=0, atol=1e-8 * np.ptp(y))


def ridged_lstsq(Q, X, y, w, kernel, h, max_leverage):
    """The ridged local linear fit at each query (one feature) from its
    definition: the weighted mean and variance of the window, and the slope
    ``cov_xy / (var + rho)`` with ``rho`` the ridge at which the query's
    squared distance from the mean, ``(q - mean)**2 / (var + rho)``, is
    ``max_leverage - 1`` (none where it is below)."""
    K = np.exp(KERNELS[kernel]().log_value(cdist(Q, X) / h)) * w
    W = K.sum(axis=1)
    mx, my = K @ X[:, 0] / W, K @ y / W
    dx = X[:, 0][None, :] - mx[:, None]
    var = np.sum(K * dx * dx, axis=1) / W
    cov = np.sum(K * dx * (y[None, :] - my[:, None]), axis=1) / W
    dz2 = (Q[:, 0] - mx) ** 2
    target = max_leverage - 1.0
    spread = np.where(dz2 / var > target, dz2 / target, var)
    return my + cov / spread * (Q[:, 0] - mx)


@pytest.mark.parametrize("kernel", sorted(FAST_PATHS))
@pytest.mark.parametrize("max_leverage", [4.0, 10.0])
def test_fast_paths_serve_ridged_designs(kernel, max_leverage):
    # Just beyond the data, the window is one-sided and the leverage of the
    # query above max_leverage: its slope is ridged. Where the bound allows,
    # the fast paths serve it (the slope max_leverage - 1 over the window's
    # mean offset), as the definition and algorithm="brute" give it, and
    # count it in the same warning.
    X, y, w = _fast_data(seed=15)
    h = 0.02 if kernel == "gaussian" else 0.05
    est = LocalLinearRegressor(
        kernel=kernel, bandwidth=h, max_leverage=max_leverage
    ).fit(X, y, sample_weight=w)
    brute = LocalLinearRegressor(
        kernel=kernel, bandwidth=h, max_leverage=max_leverage, algorithm="brute"
    ).fit(X, y, sample_weight=w)
    # Within the support of compact kernels (no empty window).
    side = np.linspace(0.0, (2.5 if kernel == "gaussian" else 0.95) * h, 40)
    Q = np.r_[X.max() + side, X.min() - side, 0.5][:, None]
    fast = est._fits.query_centred(Q)
    assert fast.ridged.sum() >= 40 and np.all(fast.served[fast.ridged])
    ref = ridged_lstsq(Q, X, y, w, kernel, h, max_leverage)
    with pytest.warns(RidgedDesignWarning):
        got = est.predict(Q)
    assert_allclose(got, ref, rtol=0, atol=1e-9 * np.ptp(y))
    messages = []
    for model in (est, brute):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model.predict(Q)
        messages.append(sorted(str(c.message) for c in caught))
    assert messages[0] == messages[1]
    assert any("ridged" in text for text in messages[0])


def test_exact_path_from_given_centres_gives_the_same_fits():
    # The first frames at given centres (a window's mean, NaN for the cell's
    # centre): the same fits, to rounding, as from the cells' centres.
    X, y, w = _fast_data(seed=16)
    est = LocalLinearRegressor(bandwidth=0.01, algorithm="brute").fit(X, y, w)
    Q = np.r_[np.linspace(-0.05, 1.05, 50), X[:20, 0]][:, None]
    centres = Q[:, 0] + np.random.default_rng(1).normal(0.0, 0.02, Q.shape[0])
    centres[::7] = np.nan
    with warnings.catch_warnings(), traced() as trace:
        warnings.simplefilter("ignore")
        plain = est._fits.exact_local_fit(Q, False).estimate
        moved = est._fits.exact_local_fit(Q, False, centres=centres).estimate
    starts = trace.values("first_frames", "centres")
    assert_allclose(moved, plain, rtol=0, atol=1e-11 * np.ptp(y))
    given = np.isfinite(centres)
    lo, hi = X.min(), X.max()
    assert_array_equal(starts[1][given, 0], np.clip(centres[given], lo, hi))
    assert_array_equal(starts[1][~given], starts[0][~given])
    assert not np.array_equal(starts[0], starts[1])


def test_cv_on_tailed_inputs_equals_the_exact_passes():
    # Normal inputs: the fast path leaves the tails' one-sided windows to the
    # exact path (from their windows' means) and serves their ridged designs;
    # the scores equal those of the exact passes (algorithm="brute").
    rng = np.random.default_rng(3)
    X = rng.normal(size=(600, 1))
    y = np.sin(2 * X[:, 0]) + rng.normal(0, 0.2, 600)
    fast = LocalLinearRegressorCV().fit(X, y)
    exact = LocalLinearRegressorCV(algorithm="brute").fit(X, y)
    assert_allclose(
        fast.cv_results_["mean_test_score"],
        exact.cv_results_["mean_test_score"],
        rtol=1e-9,
    )
    assert_allclose(fast.bandwidth_, exact.bandwidth_, rtol=1e-8)


def test_fast_paths_leave_extrapolating_queries_to_the_exact_path():
    # Far beyond the data, the Gaussian's window is one-sided: the local
    # variance about the query cancels in the transform's moments, the bound
    # fails, and the exact path (moments about the window's mean) answers, as
    # with algorithm="brute" (the designs ridged).
    X, y, w = _fast_data(seed=12)
    est = LocalLinearRegressor(bandwidth=0.02).fit(X, y, sample_weight=w)
    brute = LocalLinearRegressor(bandwidth=0.02, algorithm="brute")
    brute.fit(X, y, sample_weight=w)
    Q = np.array([1.2, 1.4, -0.25, 0.5])[:, None]
    fast = est._fits.query_centred(Q)
    assert not fast.served[:3].any() and fast.served[3]
    with warns_about(RidgedDesignWarning, 3, 4):
        got, ref = est.predict(Q), brute.predict(Q)
    assert_allclose(got, ref, rtol=1e-12)


def test_sorted_moments_serve_one_sided_windows_and_leave_empty_ones():
    # The sorted sums of a compact kernel's moments are exact to rounding:
    # their bound serves the thin one-sided windows beyond the data (ridged
    # where thinnest), which equal the exact path's; the windows
    # beyond every point's support are empty, left to the exact path's policy.
    X, y, w = _fast_data(seed=12)
    params = {"kernel": "epanechnikov", "bandwidth": 0.5}
    est = LocalLinearRegressor(**params).fit(X, y, sample_weight=w)
    brute = LocalLinearRegressor(**params, algorithm="brute")
    brute.fit(X, y, sample_weight=w)
    assert est.algorithm_ == "sorted"
    one_sided = np.array([1.3, 1.45, -0.3, -0.45])[:, None]
    fast = est._fits.query_centred(one_sided)
    assert fast.served.all() and not fast.empty.any()
    with warns_about(RidgedDesignWarning, 2, 4):  # the thinnest two, ridged
        got, ref = est.predict(one_sided), brute.predict(one_sided)
    assert_allclose(got, ref, rtol=1e-12)
    empty = np.array([1.499, 1.4995, -0.4995, 0.5])[:, None]
    fast = est._fits.query_centred(empty)
    assert not fast.served[:3].any() and fast.served[3]
    with warns_about(EmptyWindowWarning, 3, 4):
        got, ref = est.predict(empty), brute.predict(empty)
    assert_allclose(got, ref, rtol=1e-12)


def test_auto_picks_the_fast_paths_for_local_linear():
    X, y, w = _fast_data()
    for kernel, expected in FAST_PATHS.items():
        est = LocalLinearRegressor(kernel=kernel, bandwidth=0.05).fit(X, y)
        request = FitRequest(
            X=X,
            sample_weight=None,
            values=partial(est._index_values, est._smoother),
            head=Head(est.kernel_, 0.05),
            scale=None,
            metric="euclidean",
            metric_params={},
            powers=2,
        )
        name, _ = choose("auto", LocalLinearRegressor._algorithms, request)
        assert est.algorithm_ == name == expected
    # Fewer than 512 points, or two features: not the one-feature paths.
    assert LocalLinearRegressor(bandwidth=0.05).fit(X[:300], y[:300]).algorithm_ == (
        "brute"
    )
    X2 = np.column_stack([X[:, 0], X[::-1, 0]])
    assert LocalLinearRegressor(bandwidth=0.05).fit(X2, y).algorithm_ == "brute"


@pytest.mark.parametrize("cv", [None, 4])
@pytest.mark.parametrize("kernel", sorted(FAST_PATHS))
def test_cv_on_the_fast_paths_equals_least_squares_refits(kernel, cv):
    X, y, w = _fast_data(n=700, seed=13)
    # Down to windows of a few points, where each point's own term is much
    # of its full sums (and, for compact kernels, windows left empty).
    grid = [0.006, 0.02, 0.1, 0.2]
    with traced() as trace:
        est = LocalLinearRegressorCV(
            kernels=[kernel], bandwidths=grid, cv=cv, max_leverage=None
        )
        est.fit(X, y, sample_weight=w)
    # The fast path's passes of moments: each its own, or (leave-one-out)
    # the heads a grid's pass serves at once, each a pass.
    own = trace.count("local_moments", backend=FAST_PATHS[kernel])
    from_grid = sum(trace.values("batch_moments", "from_grid"))
    assert own + from_grid == len(grid) * (1 if cv is None else cv)
    kept = np.zeros_like(w)  # leaving a point out removes its row
    scores = []
    for h in grid:
        if cv is None:
            own = np.arange(X.shape[0])
            pred = weighted_lstsq(X, X, y, w, kernel, h, own, kept)
            scores.append(-np.average((y - pred) ** 2, weights=w))
            continue
        folds = []
        for train, test in KFold(cv).split(X):
            pred = weighted_lstsq(X[test], X[train], y[train], w[train], kernel, h)
            folds.append(-np.average((y[test] - pred) ** 2, weights=w[test]))
        scores.append(np.mean(folds))
    assert_allclose(est.cv_results_["mean_test_score"], scores, rtol=1e-10)


@pytest.mark.parametrize("policy", ["nearest", "raise"])
def test_fast_paths_count_empty_windows_among_all_queries(policy):
    # The exact path answers some queries only; its warnings and errors still
    # count among all of them, as with algorithm="brute".
    X, y, _ = _fast_data(seed=14)
    Q = np.linspace(-0.2, 1.2, 300)[:, None]
    messages = []
    for algorithm in ("sorted", "brute"):
        est = LocalLinearRegressor(
            kernel="boxcar", bandwidth=0.05, empty_window=policy, algorithm=algorithm
        ).fit(X, y)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if policy == "raise":
                with pytest.raises(ValueError) as error:
                    est.predict(Q)
                messages.append([str(error.value)])
            else:
                est.predict(Q)
                messages.append(
                    sorted((str(c.message), c.message.n_affected) for c in caught)
                )
                assert all(c.message.n_queries == 300 for c in caught)
    assert messages[0] == messages[1]


@pytest.mark.parametrize("weight", [1.0, 5.0])
def test_cv_fast_path_with_two_points_of_positive_weight(weight):
    # Leave-one-out sees the two points of positive weight only (see
    # sknw._selection.weights): each left out leaves the other one, whose value is its
    # estimate, whatever their weight.
    rng = np.random.default_rng(15)
    X = rng.uniform(0, 1, (600, 1))
    y = 2 * X[:, 0] + 1
    w = np.zeros(600)
    w[[10, 20]] = weight
    fits = [
        LocalLinearRegressorCV(kernels=["gaussian"], bandwidths=[0.3], algorithm=a).fit(
            X, y, sample_weight=w
        )
        for a in ("auto", "brute")
    ]
    expected = (y[10] - y[20]) ** 2
    for fit in fits:
        assert_allclose(-fit.best_score_, expected, rtol=1e-10, atol=1e-20)


def test_cv_passes_take_exact_backends_whatever_the_algorithm():
    # An explicit one-feature algorithm serves the moments about each point;
    # the passes over the moments of one frame stay on exact backends.
    X, y, w = _fast_data(seed=16)
    for name in ("fgt", "sorted"):
        kernel = "gaussian" if name == "fgt" else "epanechnikov"
        with traced() as trace:
            LocalLinearRegressorCV(
                kernels=[kernel], bandwidths=[0.001, 0.05], algorithm=name
            ).fit(X, y, sample_weight=w)
        assert trace.count("sums", backend=name) == 0


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov"])
def test_exact_path_leaves_each_point_out_as_a_refit(kernel):
    # The frames near each point (the exact path of predictions) with each
    # point left out of its own fit: its whole row, as a refit without it.
    rng = np.random.default_rng(17)
    X = rng.uniform(0, 1, (200, 2))
    y = np.sin(3 * X[:, 0]) + X[:, 1] + rng.normal(0, 0.1, 200)
    w = rng.integers(1, 4, 200).astype(float)
    est = LocalLinearRegressor(kernel=kernel, bandwidth=0.25, algorithm="brute")
    est.fit(X, y, sample_weight=w)
    rows = np.arange(0, 200, 9)
    got = est._fits.exact_local_fit(X[rows], False, own=rows).estimate[:, 0]
    counts = est._fits.window_counts(X[rows], rows)
    for r, i in enumerate(rows):
        left = w.copy()
        left[i] = 0.0
        keep = left > 0
        refit = LocalLinearRegressor(kernel=kernel, bandwidth=0.25, algorithm="brute")
        refit.fit(X[keep], y[keep], sample_weight=left[keep])
        assert_allclose(got[r], refit.predict(X[i : i + 1])[0], rtol=1e-12)
        assert counts[r] == refit._fits.window_counts(X[i : i + 1])[0]


def _window_mean_and_sd(X, y, h, Q, kernel="gaussian"):
    """The kernel-weighted mean and standard deviation of the targets in each
    query's window (from the definitions)."""
    L = get_kernel(kernel).log_value(cdist(Q, X) / h)
    K = np.exp(L - L.max(axis=1, keepdims=True))  # shifted: no underflow
    W = K / K.sum(axis=1, keepdims=True)
    mean = W @ y
    return mean, np.sqrt(np.maximum(W @ y**2 - mean**2, 0.0))


def test_the_ridge_leaves_well_posed_designs_alone():
    rng = np.random.default_rng(20)
    X = rng.uniform(0, 1, (400, 2))
    y = np.sin(4 * X[:, 0]) + X[:, 1] + 0.1 * rng.normal(size=400)
    Q = rng.uniform(0.05, 0.95, (100, 2))
    ridged = LocalLinearRegressor(bandwidth=0.15).fit(X, y).predict(Q)
    plain = LocalLinearRegressor(bandwidth=0.15, max_leverage=None).fit(X, y)
    assert_array_equal(ridged, plain.predict(Q))


@pytest.mark.parametrize("max_leverage", [4.0, 100.0])
def test_the_ridge_bounds_extrapolation_by_the_window_spread(max_leverage):
    # Queries far beyond a noisy sample: the plain fit follows a slope from a
    # sliver of points; the ridged one stays within sqrt(L - 1) window
    # standard deviations of the window's mean.
    rng = np.random.default_rng(21)
    X = rng.uniform(0, 1, (60, 2))
    y = X[:, 0] + rng.normal(size=60)
    Q = np.array([[3.0, 0.5], [-2.0, 2.0], [0.5, 6.0], [4.0, 4.0]])
    h = 0.1
    est = LocalLinearRegressor(bandwidth=h, max_leverage=max_leverage).fit(X, y)
    mean, sd = _window_mean_and_sd(X, y, h, Q)
    # One far query's window holds, to rounding, a single point: singular.
    with pytest.warns(SingularDesignWarning), pytest.warns(RidgedDesignWarning):
        pred = est.predict(Q)
    assert np.all(np.abs(pred - mean) <= np.sqrt(max_leverage - 1) * sd * (1 + 1e-9))
    unridged = LocalLinearRegressor(bandwidth=h, max_leverage=None).fit(X, y)
    with pytest.warns(SingularDesignWarning):
        plain = unridged.predict(Q)
    assert np.max(np.abs(plain - mean)) > np.max(np.abs(pred - mean))


def test_ridged_designs_have_the_target_leverage():
    rng = np.random.default_rng(22)
    Z = rng.normal(size=(30, 2)) * [1.0, 0.01]  # a thin window
    yk = rng.normal(size=(30, 1))
    V, cols = moment_columns(Z, yk)
    A = V.mean(axis=0, keepdims=True).repeat(3, axis=0)
    Zq = np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    sol = local_solution(A, cols, 2, 1, Zq, 1e-8, max_leverage=10.0)
    plain = local_solution(A, cols, 2, 1, Zq, 1e-8)
    assert list(sol.ridged) == [False, True, False]
    np.testing.assert_allclose(sol.distance[1], 9.0, rtol=1e-9)
    assert plain.distance[1] > 9.0
    np.testing.assert_array_equal(sol.estimate[[0, 2]], plain.estimate[[0, 2]])


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov"])
def test_cv_with_the_ridge_equals_ridged_refits(kernel):
    # Leave-one-out of the ridged fit: each point from the others, by
    # refits of the plain estimator with the same max_leverage.
    rng = np.random.default_rng(23)
    X = rng.uniform(0, 1, (40, 2))
    y = np.sin(3 * X[:, 0]) + rng.normal(scale=0.3, size=40)
    h = 0.2 if kernel == "gaussian" else 0.45
    cv = LocalLinearRegressorCV(kernels=[kernel], bandwidths=[h], max_leverage=4.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cv.fit(X, y)
        loo = np.array(
            [
                LocalLinearRegressor(kernel=kernel, bandwidth=h, max_leverage=4.0)
                .fit(np.delete(X, i, 0), np.delete(y, i))
                .predict(X[i : i + 1])[0]
                for i in range(40)
            ]
        )
    np.testing.assert_allclose(-cv.best_score_, np.mean((loo - y) ** 2), rtol=1e-9)


def test_leave_one_out_at_small_bandwidths_in_two_features_equals_refits():
    # Windows of a few points: a design found singular for the rounding in the
    # frame of the passes is computed again near its point, as its refit is.
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(120, 2))
    y = np.sin(3 * X).sum(axis=1) + 0.1 * rng.normal(size=120)
    bandwidths = [[0.006, 0.009], [0.02, 0.03]]
    cv = LocalLinearRegressorCV(bandwidths=bandwidths).fit(X, y)
    for h, score in zip(bandwidths, cv.cv_results_["mean_test_score"], strict=True):
        pred = np.empty(120)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for i in range(120):
                keep = np.arange(120) != i
                ref = LocalLinearRegressor(bandwidth=h).fit(X[keep], y[keep])
                pred[i] = ref.predict(X[i : i + 1])[0]
        np.testing.assert_allclose(score, -np.mean((y - pred) ** 2), rtol=1e-8)


def test_cv_passes_share_their_prepared_data_within_a_fit():
    # The grid and the polish are passes over the same data: the targets are
    # prepared and the points sorted once per fit, kept in the search's cache
    # (never on the estimator), and the search equals one that prepares them
    # every pass.
    X, y, _ = _fast_data(n=700, seed=3)
    with traced() as trace:
        shared = LocalLinearRegressorCV().fit(X, y)
    passes = trace.count("prepared_data")
    assert passes >= 2 and trace.count("prepared_data", reused=False) == 1
    (cache,) = {id(c): c for c in trace.values("prepared_data", "cache")}.values()
    assert cache.prepared is not None
    assert not any(value is cache for value in vars(shared).values())
    # The search of a plain estimator's bandwidth="cv" too.
    with traced() as trace:
        plain = LocalLinearRegressor(bandwidth="cv").fit(X, y)
    caches = {id(c): c for c in trace.values("prepared_data", "cache")}
    assert len(caches) == 1
    (cache,) = caches.values()
    assert not any(value is cache for value in vars(plain).values())
    with KEEP_PREPARED.set(False), traced() as trace:
        alone = LocalLinearRegressorCV().fit(X, y)
    assert trace.count("prepared_data", reused=True) == 0
    assert_array_equal(shared.bandwidth_, alone.bandwidth_)
    assert_array_equal(
        shared.cv_results_["mean_test_score"], alone.cv_results_["mean_test_score"]
    )
    assert shared.best_score_ == alone.best_score_


@pytest.mark.parametrize("cv", [None, 4])
def test_cv_fits_of_several_candidates_solved_together_equal_one_at_a_time(cv):
    # The local fits of a batch of candidates (one query_centred_fit over all
    # their rows) equal each candidate's own fit, bit for bit, with
    # weights, a kernel on each 1-D fast path (fgt, sorted: windows with
    # counts) and bandwidths small enough for windows of fewer than 2 points.
    X, y, w = _fast_data(n=800, seed=5)
    w[::7] = 0.0

    def search():
        """The fitted search, the rows of each of its local fits and the
        points it left to the exact path."""
        with traced() as trace:
            est = LocalLinearRegressorCV(
                kernels=["gaussian", "epanechnikov"],
                bandwidths=list(np.geomspace(0.0005, 0.3, 12)),
                cv=cv,
            ).fit(X, y, sample_weight=w)
        exact = [
            (d["kernel"], float(d["bandwidth"]), tuple(d["rows"]))
            for d in trace.details("exact_estimates")
        ]
        return est, trace.values("joint_fit", "n_rows"), sorted(exact, key=repr)

    together, fits, left_together = search()
    assert max(fits) > X.shape[0]  # several candidates in one fit
    with JOINT_CANDIDATES.set(1):  # each candidate's own fit
        alone, fits, left_alone = search()
    assert max(fits) <= X.shape[0]
    # The same points left to the exact path (windows of fewer than 2
    # points among them: the sorted path counts them).
    assert left_together and left_together == left_alone
    for key in ("mean_test_score", "n_empty_windows"):
        if key in together.cv_results_:
            assert_array_equal(together.cv_results_[key], alone.cv_results_[key])
    assert together.best_score_ == alone.best_score_
    assert np.isfinite(together.cv_results_["mean_test_score"]).any()


@pytest.mark.parametrize("own", [False, True])
def test_frames_sharing_passes_give_each_query_its_own_frame(own):
    """Frames of few queries share a pass (their moment columns side by
    side): the estimates of one pass per frame, to rounding, in fewer
    passes; leave-one-out (``own``) too."""
    rng = np.random.default_rng(12)
    X = rng.uniform(-2, 2, size=(600, 3))
    y = np.sin(2 * X[:, 0]) + X[:, 1] ** 2 + 0.1 * rng.normal(size=600)
    Q = X[:150] if own else rng.uniform(-2, 2, size=(150, 3))
    est = LocalLinearRegressor(bandwidth=0.08, algorithm="brute").fit(X, y)
    kw = {"own": np.arange(150)} if own else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with traced() as trace:
            batched = est._fits.exact_local_fit(Q, False, **kw).estimate
        n_batched = trace.count("frame_pass")
        with FRAME_BATCH_WORK.set(0), traced() as trace:
            alone = est._fits.exact_local_fit(Q, False, **kw).estimate
    assert set(trace.values("frame_pass", "n_frames")) == {1}
    # One pass per frame: many frames.
    assert n_batched < trace.count("frame_pass") / 4
    assert_allclose(batched, alone, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("algorithm", ["brute", "auto"])
@pytest.mark.parametrize("h", [0.03, 0.05])
def test_leave_one_out_of_isolated_points_equals_refits(h, algorithm):
    # Isolated points, each left out at a small bandwidth: the window of the
    # point at 3.0 holds 3.16 and, far lighter (e**-350 or e**-123), 3.8.
    # With the default ridge (max_leverage), the exact passes (one frame for
    # all the data) and the fast paths give each point its refit's estimate.
    rng = np.random.default_rng(21)
    x = np.concatenate([rng.uniform(0.0, 1.0, 600), [3.0, 3.16, 3.8, 4.0]])
    X = x[:, None]
    y = np.sin(3 * x) + rng.normal(0, 0.1, x.size)
    with traced() as trace:
        LocalLinearRegressorCV(bandwidths=[h], algorithm=algorithm).fit(X, y)
    seen = [estimates[0, :, 0] for estimates in trace.values("estimates", "estimates")]
    rows = [*range(0, 600, 75), 600, 601, 602, 603]
    for i in rows:
        keep = np.arange(x.size) != i
        refit = LocalLinearRegressor(bandwidth=h, algorithm="brute")
        refit.fit(X[keep], y[keep])
        # The isolated points' refits are ridged; the bulk's are not.
        with pytest.warns(RidgedDesignWarning) if i >= 600 else nullcontext():
            estimate = refit.predict(X[i : i + 1])[0]
        assert_allclose(seen[0][i], estimate, rtol=1e-10)


def test_one_hot_columns_are_named_in_the_singular_design_warning():
    # Dummy columns that sum to 1 are collinear with the intercept: every
    # local design is singular, and the warning says why and what to do.
    rng = np.random.default_rng(0)
    levels = rng.choice(["a", "b", "c"], 200)[:, None]
    x = rng.uniform(size=(200, 1))
    dummies = OneHotEncoder(sparse_output=False).fit_transform(levels)
    y = x[:, 0] + (levels[:, 0] == "a")
    for X, collinear in (
        (np.hstack([dummies, x]), True),
        (np.hstack([dummies[:, 1:], x]), False),
    ):
        est = LocalLinearRegressor(bandwidth=0.5).fit(X, y)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est.predict(X[:5])
        texts = [str(w.message) for w in caught if w.category is SingularDesignWarning]
        assert bool(texts) == collinear
        assert all("collinear with the intercept" in t for t in texts)
    assert collinear_with_intercept(np.hstack([x, np.full((200, 1), 3.0)]))
    assert not collinear_with_intercept(rng.normal(size=(50, 3)))


@pytest.mark.parametrize("bandwidth", [[0.0036, 0.028], [0.001, 0.001]])
def test_unridged_search_at_tiny_bandwidths_in_two_features_equals_refits(bandwidth):
    # At these bandwidths a left-out point's window is one near point and
    # others e**-100 to e**-400 as heavy: their covariance rounds to nothing
    # in the search's one frame, yet without a ridge the refit's plane goes
    # through them exactly (its weights do not matter where it interpolates).
    rng = np.random.default_rng(7)
    X = rng.uniform(0.0, 1.0, size=(150, 2))
    y = np.sin(2 * np.pi * X[:, 0] ** 3) ** 3 + 0.1 * rng.normal(size=150)
    w = np.random.default_rng(3).integers(1, 4, 150).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", QueryWarning)
        cv = LocalLinearRegressorCV(bandwidths=[bandwidth], max_leverage=None)
        cv.fit(X, y, sample_weight=w)
        errors = np.empty(150)
        for i in range(150):
            keep = np.arange(150) != i
            refit = LocalLinearRegressor(bandwidth=bandwidth, max_leverage=None)
            refit.fit(X[keep], y[keep], sample_weight=w[keep])
            errors[i] = (refit.predict(X[i : i + 1])[0] - y[i]) ** 2
    assert_allclose(-cv.best_score_, np.average(errors, weights=w), rtol=1e-9)
