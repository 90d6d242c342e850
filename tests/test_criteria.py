"""In-sample criteria, ``scoring="aicc"`` and ``"gcv"``, against explicit
smoother matrices."""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.spatial.distance import cdist

from sknw import (
    LocalLinearRegressorCV,
    LocalPolynomialRegressor,
    LocalPolynomialRegressorCV,
    NadarayaWatsonClassifierCV,
    NadarayaWatsonRegressorCV,
)
from sknw.exceptions import QueryWarning
from sknw.kernels import get_kernel


def smoother(X, h, kernel, w=None):
    """The Nadaraya--Watson smoother matrix ``H`` at the training points."""
    K = np.asarray(get_kernel(kernel)(cdist(X, X) / h), dtype=np.float64)
    Kw = K * (1.0 if w is None else w)
    return Kw / Kw.sum(axis=1, keepdims=True)


def local_linear_smoother(X, h, kernel, w=None):
    """The local linear smoother matrix at the training points: row ``i`` is
    ``e1' (D' W D)^-1 D' W`` with ``D = [1, x_j - x_i]`` and the kernel
    weights ``W`` of ``x_i``."""
    n, d = X.shape
    K = np.asarray(get_kernel(kernel)(cdist(X, X) / h), dtype=np.float64)
    K = K * (1.0 if w is None else w)
    H = np.empty((n, n))
    for i in range(n):
        D = np.hstack([np.ones((n, 1)), X - X[i]])
        DW = D.T * K[i]
        H[i] = np.linalg.solve(DW @ D, DW)[0]
    return H


def criterion(H, Y, name, w=None):
    """AICc or GCV of the smoother ``H`` (weights ``w``), averaged over the
    outputs, from the definitions: ``n`` is the weights' effective sample
    size ``(sum w)**2 / sum(w**2)`` and the residuals are weighted by ``w``
    scaled to sum to ``n``."""
    w = np.ones(Y.shape[0]) if w is None else w
    n = w.sum() ** 2 / (w @ w)
    fitted = H @ Y
    rss = (n / w.sum()) * w @ (Y - fitted) ** 2
    tr = np.trace(H)
    if name == "aicc":
        value = np.log(rss / n) + 1 + 2 * (tr + 1) / (n - tr - 2)
    else:
        value = n * rss / (n - tr) ** 2
    return float(np.mean(value))


def data(n=60, d=1, k=1, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, (n, d))
    Y = np.column_stack(
        [np.sin(6 * X[:, 0] + j) + 0.2 * rng.normal(size=n) for j in range(k)]
    )
    return X, Y


# One grid for every kernel and dimension, to compare the scores with the
# definitions: its best is at its smallest bandwidth for some of them.
@pytest.mark.filterwarnings("ignore::sknw.exceptions.GridEdgeWarning")
@pytest.mark.parametrize("name", ["aicc", "gcv"])
@pytest.mark.parametrize(
    ("kernel", "d", "k"),
    [("gaussian", 1, 1), ("epanechnikov", 2, 1), ("gaussian", 2, 2)],
)
def test_scores_are_minus_the_criteria_of_the_smoother_matrices(name, kernel, d, k):
    X, Y = data(d=d, k=k, seed=d + k)
    bandwidths = [0.08, 0.15, 0.3, 0.6]
    y = Y[:, 0] if k == 1 else Y
    cv = NadarayaWatsonRegressorCV(kernels=kernel, bandwidths=bandwidths, scoring=name)
    cv.fit(X, y)
    expected = [-criterion(smoother(X, h, kernel), Y, name) for h in bandwidths]
    assert_allclose(cv.cv_results_["mean_test_score"], expected, rtol=1e-10)
    assert cv.best_index_ == int(np.argmax(expected))


@pytest.mark.parametrize("name", ["aicc", "gcv"])
def test_frequency_weights_count_as_repeated_rows(name):
    X, Y = data(n=40, seed=3)
    w = np.random.default_rng(4).integers(1, 4, 40).astype(float)
    bandwidths = [0.02, 0.05, 0.1, 0.2, 0.4]
    weighted = NadarayaWatsonRegressorCV(bandwidths=bandwidths, scoring=name)
    weighted.fit(X, Y[:, 0], sample_weight=w)
    rows = np.repeat(np.arange(40), w.astype(int))
    repeated = NadarayaWatsonRegressorCV(bandwidths=bandwidths, scoring=name)
    repeated.fit(X[rows], Y[rows, 0])
    assert_allclose(
        weighted.cv_results_["mean_test_score"],
        repeated.cv_results_["mean_test_score"],
        rtol=1e-10,
    )
    # And equal the definitions with weights, whatever their scale.
    scaled = NadarayaWatsonRegressorCV(bandwidths=bandwidths, scoring=name)
    scaled.fit(X, Y[:, 0], sample_weight=0.37 * w)
    assert_allclose(
        weighted.cv_results_["mean_test_score"],
        scaled.cv_results_["mean_test_score"],
        rtol=1e-10,
    )
    expected = [
        -criterion(smoother(X, h, "gaussian", w), Y, name, w) for h in bandwidths
    ]
    assert_allclose(weighted.cv_results_["mean_test_score"], expected, rtol=1e-10)


def test_a_smoother_too_rough_for_its_points_scores_minus_infinity():
    # Interpolating bandwidths leave no degrees of freedom: tr(H) = n.
    X, Y = data(n=12, seed=5)
    cv = NadarayaWatsonRegressorCV(bandwidths=[1e-6, 0.3], scoring="aicc")
    cv.fit(X, Y[:, 0])
    assert cv.cv_results_["mean_test_score"][0] == -np.inf
    assert cv.best_index_ == 1


def test_the_default_grid_and_refinement_take_the_criteria():
    X, Y = data(n=150, seed=6)
    cv = NadarayaWatsonRegressorCV(scoring="gcv", refine=True).fit(X, Y[:, 0])
    h = float(np.ravel(cv.bandwidth_)[0])
    assert_allclose(
        cv.best_score_, -criterion(smoother(X, h, "gaussian"), Y, "gcv"), rtol=1e-9
    )


def test_where_the_criteria_do_not_apply():
    X, Y = data(n=50, seed=7)
    with pytest.raises(ValueError, match="takes cv=None"):
        NadarayaWatsonRegressorCV(scoring="aicc", cv=5).fit(X, Y[:, 0])
    with pytest.raises(ValueError, match="NadarayaWatsonClassifierCV does not take"):
        NadarayaWatsonClassifierCV(scoring="aicc").fit(X, Y[:, 0] > 0)


def test_zero_weights_leave_their_points_out():
    X, Y = data(n=60, seed=8)
    w = np.ones(60)
    w[[0, 7, 30]] = 0.0
    keep = w > 0
    for name in ("aicc", "gcv"):
        grid = [0.025, 0.05, 0.1, 0.2, 0.4]
        got = NadarayaWatsonRegressorCV(bandwidths=grid, scoring=name)
        got.fit(X, Y[:, 0], sample_weight=w)
        ref = NadarayaWatsonRegressorCV(bandwidths=grid, scoring=name)
        ref.fit(X[keep], Y[keep, 0])
        assert_allclose(
            got.cv_results_["mean_test_score"],
            ref.cv_results_["mean_test_score"],
            rtol=1e-10,
        )


def test_a_signed_kernel_with_negative_weight_sums():
    # The Silverman kernel's negative lobes: some leave-one-out sums are
    # negative, and the self weights exceed 1.
    rng = np.random.default_rng(9)
    X = np.concatenate([rng.uniform(0, 0.01, 100), rng.uniform(0, 1, 100)])[:, None]
    Y = np.sin(6 * X) + 0.1 * rng.normal(size=(200, 1))
    h = 0.002
    for name in ("aicc", "gcv"):
        cv = NadarayaWatsonRegressorCV(
            kernels="silverman", bandwidths=[h, 10 * h, 100 * h], scoring=name
        )
        cv.fit(X, Y[:, 0])
        expected = [
            -criterion(smoother(X, b, "silverman"), Y, name)
            for b in (h, 10 * h, 100 * h)
        ]
        assert_allclose(cv.cv_results_["mean_test_score"], expected, rtol=1e-8)


# One grid for every kernel and dimension, to compare the scores with the
# definitions: its best is at its smallest bandwidth for some of them.
@pytest.mark.filterwarnings("ignore::sknw.exceptions.GridEdgeWarning")
@pytest.mark.parametrize("name", ["aicc", "gcv"])
@pytest.mark.parametrize(
    ("kernel", "d"), [("gaussian", 1), ("epanechnikov", 1), ("gaussian", 2)]
)
def test_local_linear_scores_are_minus_the_criteria_of_its_smoother(name, kernel, d):
    X, Y = data(n=80, d=d, seed=10 + d)
    bandwidths = [0.12, 0.25, 0.5]
    cv = LocalLinearRegressorCV(kernels=kernel, bandwidths=bandwidths, scoring=name)
    cv.fit(X, Y[:, 0])
    expected = [
        -criterion(local_linear_smoother(X, h, kernel), Y, name) for h in bandwidths
    ]
    assert_allclose(cv.cv_results_["mean_test_score"], expected, rtol=1e-8)


def fitted_smoother(estimator, X):
    """The smoother matrix of ``estimator``'s final fit at the training
    points: column ``j`` is its prediction from the targets ``e_j``."""
    n = X.shape[0]
    return np.column_stack(
        [estimator.fit(X, np.eye(n)[j]).predict(X) for j in range(n)]
    )


# Clusters far apart: the grid's largest bandwidth, the one that bridges
# them, scores best (its small bandwidths are the subject).
@pytest.mark.filterwarnings("ignore::sknw.exceptions.GridEdgeWarning")
@pytest.mark.parametrize("name", ["aicc", "gcv"])
@pytest.mark.parametrize(("degree", "d"), [(1, 1), (2, 1), (1, 2)])
def test_windows_that_leaving_a_point_out_makes_singular(name, degree, d):
    # Clusters of a few points far apart: at small bandwidths a point's
    # window without it is too thin for a line (or a parabola), yet the
    # full fit passes through it (H_ii = 1); some windows are ridged.
    rng = np.random.default_rng(20 + degree + d)
    centres = rng.uniform(0, 10, (8, d))
    X = np.vstack([c + rng.uniform(0, 0.3, (4, d)) for c in centres])
    y = np.sin(X.sum(axis=1)) + 0.1 * rng.normal(size=X.shape[0])
    bandwidths = [0.15, 0.4, 1.5]
    cv = LocalPolynomialRegressorCV(
        degree=degree, kernels="epanechnikov", bandwidths=bandwidths, scoring=name
    )
    cv.fit(X, y)
    expected = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", QueryWarning)
        for h in bandwidths:
            est = LocalPolynomialRegressor(
                degree=degree, kernel="epanechnikov", bandwidth=h
            )
            expected.append(-criterion(fitted_smoother(est, X), y[:, None], name))
    # A parabola through four points 0.3 wide loses digits in the search's
    # one frame for the whole data: about 1e-8 of the trace.
    rtol = 1e-8 if degree == 1 else 1e-6
    assert_allclose(cv.cv_results_["mean_test_score"], expected, rtol=rtol)


def test_local_linear_criteria_with_frequency_weights():
    X, Y = data(n=50, seed=12)
    w = np.random.default_rng(5).integers(1, 4, 50).astype(float)
    rows = np.repeat(np.arange(50), w.astype(int))
    bandwidths = [0.02, 0.04, 0.08, 0.15, 0.3, 0.6]
    for name in ("aicc", "gcv"):
        got = LocalLinearRegressorCV(bandwidths=bandwidths, scoring=name)
        got.fit(X, Y[:, 0], sample_weight=w)
        ref = LocalLinearRegressorCV(bandwidths=bandwidths, scoring=name)
        ref.fit(X[rows], Y[rows, 0])
        assert_allclose(
            got.cv_results_["mean_test_score"],
            ref.cv_results_["mean_test_score"],
            rtol=1e-8,
        )
        expected = [
            -criterion(local_linear_smoother(X, h, "gaussian", w), Y, name, w)
            for h in bandwidths
        ]
        assert_allclose(got.cv_results_["mean_test_score"], expected, rtol=1e-8)


@pytest.mark.parametrize("constant", [0.0, 3.7])
def test_an_output_every_candidate_fits_exactly_does_not_choose(constant):
    # Its residuals are rounding (or exactly 0): its AICc is the same for
    # every candidate but the penalty, never log(0) = -inf.
    X, Y = data(n=60, seed=8)
    bandwidths = [0.005, 0.02, 0.05, 0.1, 0.3]
    both = np.column_stack([Y[:, 0], np.full(60, constant)])
    cv = NadarayaWatsonRegressorCV(bandwidths=bandwidths, scoring="aicc").fit(X, both)
    scores = cv.cv_results_["mean_test_score"]
    assert np.all(np.isfinite(scores))
    expected = []
    for h in bandwidths:
        H = smoother(X, h, "gaussian")
        tr, n = np.trace(H), 60
        penalty = 1 + 2 * (tr + 1) / (n - tr - 2)
        expected.append(-(criterion(H, Y, "aicc") + penalty) / 2)
    expected = np.array(expected)
    assert_allclose(scores - scores[0], expected - expected[0], rtol=1e-8)
    assert cv.best_index_ == int(np.argmax(expected))
