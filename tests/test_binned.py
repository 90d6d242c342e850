"""The binned Gaussian path: within its tolerance of the exact sums."""

import warnings

import numpy as np
import pytest
import sklearn

from sknw import (
    LocalLinearRegressor,
    LocalLinearRegressorCV,
    LocalPolynomialRegressor,
    LocalPolynomialRegressorCV,
    NadarayaWatsonClassifier,
    NadarayaWatsonClassifierCV,
    NadarayaWatsonRegressor,
    NadarayaWatsonRegressorCV,
)
from sknw._selection.weights import distinct_rows
from sknw._sums import Head
from sknw._sums._binned import binned_grid, binned_moment_sums
from sknw._sums._traits import gaussian_eligible as binned_eligible
from sknw._trace import traced
from sknw.kernels import KERNELS, Gaussian, get_kernel


def exact_and_binned(X, y, Q, tol, sample_weight=None, **params):
    exact = NadarayaWatsonRegressor(algorithm="brute", **params)
    binned = NadarayaWatsonRegressor(algorithm="binned", binned_tol=tol, **params)
    exact.fit(X, y, sample_weight=sample_weight)
    binned.fit(X, y, sample_weight=sample_weight)
    assert binned.algorithm_ == "binned"
    return exact.predict(Q), binned.predict(Q)


def clustered(n, seed=0):
    """Two clusters and a sparse bridge: dense and sparse regions, gaps."""
    rng = np.random.default_rng(seed)
    X = np.concatenate(
        [
            rng.normal(0, 1, n // 2),
            rng.normal(8, 0.3, n // 2 - 20),
            rng.uniform(2, 6, 20),
        ]
    )[:, None]
    y = np.sin(X[:, 0]) + rng.normal(0, 0.3, X.shape[0]) + 10
    return X, y


@pytest.mark.parametrize("tol", [1e-2, 1e-4, 1e-6, 1e-8])
@pytest.mark.parametrize("bandwidth", [0.05, 0.4, 3.0])
def test_error_within_tolerance_of_the_range(tol, bandwidth):
    X, y = clustered(3000)
    Q = np.linspace(-6, 14, 1500)[:, None]
    exact, binned = exact_and_binned(X, y, Q, tol, bandwidth=bandwidth)
    assert np.max(np.abs(binned - exact)) <= tol * np.ptp(y)
    assert np.all(np.isfinite(binned))


def test_sample_weights_and_multi_output():
    X, y = clustered(2000, seed=1)
    rng = np.random.default_rng(2)
    w = rng.uniform(0, 3, X.shape[0])
    w[::7] = 0.0
    Y = np.column_stack([y, 1e6 * np.cos(X[:, 0]), np.zeros(X.shape[0])])
    Q = rng.uniform(-4, 12, (700, 1))
    exact, binned = exact_and_binned(X, Y, Q, 1e-6, sample_weight=w, bandwidth=0.2)
    err = np.abs(binned - exact)
    assert np.all(err <= 1e-6 * np.ptp(Y, axis=0) + 1e-300)
    assert np.all(binned[:, 2] == 0.0)


@pytest.mark.parametrize(
    "metric, metric_params",
    [("cityblock", None), ("chebyshev", None), ("minkowski", {"p": 3})],
)
def test_one_dimensional_metrics_and_per_feature_bandwidth(metric, metric_params):
    X, y = clustered(1500, seed=3)
    Q = np.linspace(-5, 12, 400)[:, None]
    params = {"metric": metric, "metric_params": metric_params}
    for bandwidth in (0.3, np.array([0.3])):
        exact, binned = exact_and_binned(X, y, Q, 1e-7, bandwidth=bandwidth, **params)
        assert np.max(np.abs(binned - exact)) <= 1e-7 * np.ptp(y)


def test_queries_far_away_are_exact():
    """Far outside the data the weights underflow: the exact path (and its
    nearest-point limit) answers, never NaN."""
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    y = np.array([1.0, 2.0, 3.0, 4.0])
    Q = np.array([[-1e6], [1.5], [40.0], [1e300]])
    exact, binned = exact_and_binned(X, y, Q, 1e-6, bandwidth=0.5)
    assert np.max(np.abs(binned - exact)) <= 1e-6 * np.ptp(y)
    # The nearest points; at 1e300 every distance rounds to 1e300: a tie.
    np.testing.assert_array_equal(binned[[0, 2, 3]], [1.0, 4.0, 2.5])


def test_classifier_probabilities_within_tolerance():
    X, y = clustered(2000, seed=4)
    labels = np.where(np.sin(2 * X[:, 0]) > 0, "up", "down")
    Q = np.linspace(-4, 10, 500)[:, None]
    exact = NadarayaWatsonClassifier(bandwidth=0.2, algorithm="brute").fit(X, labels)
    binned = NadarayaWatsonClassifier(
        bandwidth=0.2, algorithm="binned", binned_tol=1e-5
    ).fit(X, labels)
    p_exact, p_binned = exact.predict_proba(Q), binned.predict_proba(Q)
    assert np.max(np.abs(p_binned - p_exact)) <= 1e-5
    np.testing.assert_allclose(p_binned.sum(axis=1), 1.0, rtol=1e-12)


def test_float32_input():
    X, y = clustered(1000, seed=5)
    Q = np.linspace(-3, 10, 300)[:, None]
    exact, binned = exact_and_binned(
        X.astype(np.float32), y, Q.astype(np.float32), 1e-6, bandwidth=0.3
    )
    assert np.max(np.abs(binned - exact)) <= 1e-6 * np.ptp(y)


def test_standard_errors_use_the_exact_sums():
    X, y = clustered(800, seed=6)
    Q = np.linspace(-2, 9, 50)[:, None]
    exact = NadarayaWatsonRegressor(bandwidth=0.5, algorithm="brute").fit(X, y)
    binned = NadarayaWatsonRegressor(bandwidth=0.5, algorithm="binned").fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for a, b in zip(
            binned.predict(Q, return_std=True),
            exact.predict(Q, return_std=True),
            strict=True,
        ):
            np.testing.assert_allclose(a, b, rtol=1e-10)


def test_auto_never_bins():
    X, y = clustered(5000, seed=7)
    assert NadarayaWatsonRegressor().fit(X, y).algorithm_ != "binned"


@pytest.mark.parametrize(
    "params, match",
    [
        ({"kernel": "epanechnikov"}, "Gaussian"),
        ({"metric": "sqeuclidean"}, "metric"),
        ({"metric": "minkowski", "metric_params": {"p": 0.5}}, "metric"),
    ],
)
def test_ineligible_settings_are_refused(params, match):
    X, y = clustered(200)
    with pytest.raises(ValueError, match=match):
        NadarayaWatsonRegressor(algorithm="binned", **params).fit(X, y)
    with pytest.raises(ValueError, match="one feature"):
        NadarayaWatsonRegressor(algorithm="binned").fit(np.hstack([X, X]), y)


def test_grid_too_large_is_refused_at_fit():
    X = np.array([[0.0], [1e9]])
    with pytest.raises(ValueError, match="grid of more than"):
        NadarayaWatsonRegressor(algorithm="binned", bandwidth=1e-3).fit(X, [0.0, 1.0])


def assert_scores_within(binned, exact, tol, y):
    """Each score of the search ``binned`` within ``2 d sqrt(MSE) + d**2`` of
    the exact search's (``d = tol * range``: each out-of-sample estimate
    within ``d`` of the exact one; weighted means, by Cauchy-Schwarz).
    Returns the largest difference."""
    got = binned.cv_results_["mean_test_score"]
    ref = exact.cv_results_["mean_test_score"]
    d = tol * np.ptp(y)
    assert np.all(np.abs(got - ref) <= 2 * d * np.sqrt(-ref) + d * d)
    assert binned.algorithm_ == "binned"
    return np.max(np.abs(got - ref))


def loo_local_linear(x, y, w, h, rows):
    """Leave-one-out local linear estimates at ``x[rows]`` by weighted least
    squares on the other points (each point's row left out), and the
    variance of each window in bandwidths squared (its design's
    conditioning)."""
    out, var = [], []
    for i in rows:
        k = w * np.exp(-0.5 * ((x - x[i]) / h) ** 2)
        k[i] = 0.0
        A = np.column_stack([np.ones_like(x), x - x[i]]) * np.sqrt(k)[:, None]
        out.append(np.linalg.lstsq(A, y * np.sqrt(k), rcond=None)[0][0])
        u = (x - x[i]) / h
        mean = k @ u / k.sum()
        var.append(k @ (u - mean) ** 2 / k.sum())
    return np.array(out), np.array(var)


@pytest.mark.parametrize("cv", [None, 4])
def test_local_linear_search_on_binned_within_its_tolerance(cv):
    # Each out-of-sample estimate within tol times the targets' range of the
    # exact one (assert_scores_within), the fits served at binned_tol.
    X, y = clustered(1500, seed=3)
    w = np.random.default_rng(4).uniform(0.5, 2.0, X.shape[0])
    grid = [0.05, 0.1, 0.2, 0.4, 0.8]
    tol = 1e-5
    with traced() as trace:
        binned = LocalLinearRegressorCV(
            bandwidths=grid, cv=cv, algorithm="binned", binned_tol=tol
        ).fit(X, y, sample_weight=w)
    assert trace.count("binned_moments") >= len(grid) * (1 if cv is None else cv)
    # Most rows of the binned moments served at the tolerance (the share of
    # each of the fits from the fast passes' moments).
    served = [
        fit["n_served"] / fit["n_rows"]
        for fit in trace.details("joint_fit", tolerance=tol)
    ]
    assert served and np.mean(served) > 0.6
    exact = LocalLinearRegressorCV(bandwidths=grid, cv=cv, algorithm="brute")
    exact.fit(X, y, sample_weight=w)
    assert assert_scores_within(binned, exact, tol, y) > 0  # binned indeed


@pytest.mark.parametrize("h", [0.15, 0.03])
def test_local_linear_binned_loo_estimates_within_tolerance(h):
    # Point by point, against weighted least squares on the other points
    # (each point's row left out), in the clusters and in the sparse bridge,
    # where at h = 0.03 each point's own term, subtracted from its sums,
    # outweighs the others' by about e**20. Windows of a variance far above
    # min_eigenvalue only: nearer singular, whether the design is singular
    # (and its estimate local constant) depends on rounding, in any frame.
    X, y = clustered(1200, seed=5)
    w = np.random.default_rng(6).choice([0.5, 1.0, 2.0, 3.0], X.shape[0])
    tol = 1e-4
    est = LocalLinearRegressorCV(
        bandwidths=[h], algorithm="binned", binned_tol=tol, max_leverage=None
    )
    with traced() as trace:
        est.fit(X, y, sample_weight=w)
    assert trace.count("binned_moments")  # binned passes
    seen = trace.values("estimates", "estimates")
    pred = seen[0][0, :, 0]
    # The search's rows: the distinct ones, sorted (see sknw._selection.weights).
    X, y, w = distinct_rows(X, y, w)
    x = X[:, 0]
    rng = np.random.default_rng(7)
    rows = np.concatenate(
        [
            rng.choice(x.size, 100, replace=False),
            np.flatnonzero((x > 2) & (x < 6)),  # the bridge
            np.argsort(x)[[0, 1, -2, -1]],  # the tails
        ]
    )
    ref, var = loo_local_linear(x, y, w, h, rows)
    solid = var > 1e-4
    assert np.sum(solid & (x[rows] > 2) & (x[rows] < 6)) >= 15  # the bridge
    assert np.max(np.abs(pred[rows] - ref)[solid]) <= tol * np.ptp(y)


def test_local_polynomial_search_on_binned():
    # Degree 1: binned moments; degree 2: exact passes; both predict binned.
    X, y = clustered(800, seed=8)
    grid = [0.1, 0.3]
    for degree, exact_passes in ((1, False), (2, True)):
        params = {"degree": degree, "bandwidths": grid}
        binned = LocalPolynomialRegressorCV(
            algorithm="binned", binned_tol=1e-6, **params
        ).fit(X, y)
        exact = LocalPolynomialRegressorCV(algorithm="brute", **params).fit(X, y)
        assert_scores_within(binned, exact, 1e-6, y)
        if exact_passes:
            np.testing.assert_allclose(
                binned.cv_results_["mean_test_score"],
                exact.cv_results_["mean_test_score"],
                rtol=1e-10,
            )


@pytest.mark.parametrize("cv", [None, 3])
@pytest.mark.parametrize("search", [NadarayaWatsonRegressorCV, LocalLinearRegressorCV])
def test_searches_score_candidates_too_narrow_for_the_grid_nan(search, cv):
    # A bandwidth whose grid the final fit would refuse scores NaN (ranked
    # last, and not computed): the search never selects it.
    X, y = clustered(400, seed=9)
    tiny = 1e-5
    grid = [tiny, 0.2, 0.4, 0.8]
    binned = search(bandwidths=grid, cv=cv, algorithm="binned").fit(X, y)
    exact = search(bandwidths=grid, cv=cv, algorithm="brute").fit(X, y)
    got = binned.cv_results_["mean_test_score"]
    ref = exact.cv_results_["mean_test_score"]
    assert np.isnan(got[0]) and np.all(np.isfinite(got[1:]))
    assert np.all(np.abs(got[1:] - ref[1:]) <= 1e-6 * np.abs(ref[1:]))
    if cv is not None:
        assert np.isnan(binned.cv_results_["split0_test_score"][0])
    assert np.ravel(binned.bandwidth_)[0] != tiny
    with pytest.raises(ValueError, match="binned_tol"):
        search(bandwidths=[tiny], cv=cv, algorithm="binned").fit(X, y)


# The optimum lies below the grid by design (the refinement leaves it there).
@pytest.mark.filterwarnings("ignore::sknw.exceptions.GridEdgeWarning")
@pytest.mark.parametrize("search", [NadarayaWatsonRegressorCV, LocalLinearRegressorCV])
def test_refined_binned_search_stays_where_the_grid_fits(search):
    # The refinement leaves the grid of candidates towards small bandwidths
    # (a fast-varying target), below those whose grid fits in a small
    # working_memory: it stops where the grid no longer fits, rather than
    # selecting a bandwidth the final fit would refuse.
    rng = np.random.default_rng(0)
    x = np.sort(rng.uniform(0.0, 1.0, 3000))
    y = np.sin(80 * x) + rng.normal(0.0, 0.01, x.size)
    kwargs = {"bandwidths": [0.03, 0.06, 0.2], "refine": True}
    with sklearn.config_context(working_memory=8):
        est = search(algorithm="binned", **kwargs).fit(x[:, None], y)
    exact = search(algorithm="brute", **kwargs).fit(x[:, None], y)
    assert est.algorithm_ == "binned"
    # The exact search refines below what the binned grid can take.
    assert np.ravel(exact.bandwidth_)[0] < np.ravel(est.bandwidth_)[0]
    assert np.all(np.isfinite(est.predict(x[:10, None])))


# Queries in the data's gaps and beyond it, at a small bandwidth: local linear
# designs there are singular or ridged.
@pytest.mark.filterwarnings("ignore::sknw.exceptions.SingularDesignWarning")
@pytest.mark.filterwarnings("ignore::sknw.exceptions.RidgedDesignWarning")
def test_binned_predict_under_a_smaller_working_memory_takes_exact_sums():
    # Fitted with room for its grid; predicting where working_memory holds
    # less than one column's transforms: every query summed exactly.
    X, y = clustered(1000, seed=10)
    Q = np.linspace(-2.0, 9.0, 50)[:, None]
    for make in (NadarayaWatsonRegressor, LocalLinearRegressor):
        est = make(bandwidth=0.01, algorithm="binned").fit(X, y)
        exact = make(bandwidth=0.01, algorithm="brute").fit(X, y)
        with sklearn.config_context(working_memory=1):
            got = est.predict(Q)
        np.testing.assert_allclose(got, exact.predict(Q), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("search", [NadarayaWatsonRegressorCV, LocalLinearRegressorCV])
def test_binned_search_with_a_training_fold_of_no_weight(search):
    # A fold whose training points all weigh 0 fails the search as on the
    # exact backends, not in the grid's arithmetic.
    X, y = clustered(300, seed=11)
    w = np.ones(X.shape[0])
    w[100:200] = 0.0
    a, b, c = np.arange(100), np.arange(100, 200), np.arange(200, 300)
    folds = [(b, c), (np.concatenate([b, c]), a)]
    kwargs = {"bandwidths": [0.2, 0.4], "cv": folds, "empty_window": "nan"}
    messages = []
    for algorithm in ("brute", "binned"):
        with pytest.raises(ValueError) as error:
            search(algorithm=algorithm, **kwargs).fit(X, y, sample_weight=w)
        messages.append(str(error.value))
    assert messages[1] == messages[0]


def test_binned_moments_bin_once_whatever_n_jobs():
    # Every call bins every training point: one call for all the queries
    # (batches for n_jobs would each bin them again).
    X, y = clustered(2000, seed=12)
    est = LocalLinearRegressor(bandwidth=0.1, algorithm="binned", n_jobs=4)
    with traced() as trace:
        est.fit(X, y).predict(X)
    assert trace.count("binned_moments") == 1
    with traced() as trace:
        LocalLinearRegressorCV(bandwidths=[0.1], algorithm="binned", n_jobs=4).fit(X, y)
    assert trace.count("binned_moments") == 1


@pytest.mark.parametrize("cv", [None, 4])
def test_regression_search_on_binned_within_its_tolerance(cv):
    # Each out-of-sample estimate within tol times the targets' range of the
    # exact one: each score within 2 d sqrt(MSE) + d**2 of the exact score
    # (d = tol * range; weighted means, by Cauchy-Schwarz).
    X, y = clustered(1500, seed=3)
    w = np.random.default_rng(4).uniform(0.5, 2.0, X.shape[0])
    grid = [0.05, 0.1, 0.2, 0.4]
    tol = 1e-5
    with traced() as trace:
        binned = NadarayaWatsonRegressorCV(
            bandwidths=grid, cv=cv, algorithm="binned", binned_tol=tol
        ).fit(X, y, sample_weight=w)
    assert trace.count("binned_sums") >= len(grid) * (1 if cv is None else cv)
    exact = NadarayaWatsonRegressorCV(bandwidths=grid, cv=cv, algorithm="brute")
    exact.fit(X, y, sample_weight=w)
    assert_scores_within(binned, exact, tol, y)


def test_classifier_search_on_binned_within_its_tolerance():
    # Each out-of-sample probability within tol of the exact one: each
    # point's log-loss within tol / (p - tol) of the exact, p its class's
    # probability (from the definition).
    X, y = clustered(1200, seed=6)
    labels = (y > 10).astype(int)
    grid = [0.2, 0.4, 0.8]
    tol = 1e-6
    with traced() as trace:
        binned = NadarayaWatsonClassifierCV(
            bandwidths=grid, algorithm="binned", binned_tol=tol
        ).fit(X, labels)
    assert trace.count("binned_sums") >= len(grid)
    exact = NadarayaWatsonClassifierCV(bandwidths=grid, algorithm="brute")
    exact.fit(X, labels)
    got = binned.cv_results_["mean_test_score"]
    ref = exact.cv_results_["mean_test_score"]
    x = X[:, 0]
    checked = 0
    for h, g, r in zip(grid, got, ref, strict=True):
        K = np.exp(-0.5 * ((x[:, None] - x[None, :]) / h) ** 2)
        np.fill_diagonal(K, 0.0)
        p = (K @ (labels[:, None] == [0, 1])) / K.sum(axis=1, keepdims=True)
        p_true = p[np.arange(x.size), labels]
        if np.all(p_true > 2 * tol):  # else a probability near 0: clipped
            assert abs(g - r) <= np.mean(tol / (p_true - tol))
            checked += 1
    assert checked


@pytest.mark.parametrize(
    "make", [NadarayaWatsonRegressor, LocalLinearRegressor, LocalPolynomialRegressor]
)
@pytest.mark.parametrize("tol", [0, 1, -1e-3, 2.0])
def test_binned_tol_is_validated(tol, make):
    X, y = clustered(200)
    with pytest.raises(ValueError, match="binned_tol"):
        make(algorithm="binned", binned_tol=tol).fit(X, y)


def brute_moments(Q, x, V, w, sigma, powers, exclude=False):
    """``sum w g_j(u) [v, 1]``, ``u = (x - q) / sigma``, from the definition
    (each query's own term left out with ``exclude``)."""
    u = (x[None, :] - Q[:, None]) / sigma
    K = np.exp(-0.5 * u * u) * (1.0 if w is None else w)
    if exclude:
        np.fill_diagonal(K, 0.0)
    Vx = np.column_stack([V, np.ones(x.size)])
    return np.stack([(K * u**j) @ Vx for j in range(powers + 1)], axis=1)


@pytest.mark.parametrize("tol", [1e-6, 1e-3])
@pytest.mark.parametrize("case", ["uniform", "clustered", "weighted", "loo"])
def test_local_moments_within_their_bound(case, tol):
    rng = np.random.default_rng(4)
    if case == "clustered":
        x = clustered(1000)[0][:, 0]
    else:
        x = rng.uniform(0.0, 10.0, 1000)
    V = np.column_stack([np.sin(x), 3.0 + np.cos(2 * x)])
    w = rng.uniform(0.2, 3.0, x.size) if case in ("weighted", "loo") else None
    loo = case == "loo"
    Q = x if loo else np.linspace(x.min() - 1.0, x.max() + 1.0, 300)
    params = {"exclude_self": True, "self_offset": 0} if loo else {}
    head = Head(Gaussian(), 0.3)
    got = binned_moment_sums(
        Q[:, None], x[:, None], V, head, 4, tol=tol, sample_weight=w, **params
    )
    assert got.unit == 0.3
    ref = brute_moments(Q, x, V, w, got.unit, 4, exclude=loo)
    scale = np.r_[np.abs(V).max(axis=0), 1.0]  # per unit of the largest |v|
    inside = np.isfinite(got.bound[:, 0])
    assert inside.mean() > 0.9
    error = np.abs(got.sums - ref)[inside]
    assert np.all(error <= got.bound[inside][:, :, None] * scale)
    # The bound is of the order of the tolerance's share of the sums.
    rel = got.bound[inside, 0] / ref[inside, 0, -1]
    assert np.median(rel) < tol


@pytest.mark.parametrize("tol", [1e-6, 1e-3])
@pytest.mark.parametrize("degree", [1, 2])
def test_local_polynomial_fits_within_binned_tol(degree, tol):
    X, y = clustered(3000, seed=2)
    w = np.random.default_rng(3).uniform(0.5, 2.0, X.shape[0])
    Q = np.linspace(X.min() - 1.0, X.max() + 1.0, 400)[:, None]
    params = {"degree": degree, "bandwidth": 0.2}
    binned = LocalPolynomialRegressor(algorithm="binned", binned_tol=tol, **params)
    exact = LocalPolynomialRegressor(algorithm="brute", **params)
    binned.fit(X, y, sample_weight=w)
    exact.fit(X, y, sample_weight=w)
    assert binned.algorithm_ == "binned"
    # Most queries served by the binned moments (those beyond the data and
    # in the sparse bridge, exactly: about as many as the fgt serves).
    assert binned._fits.query_centred(Q).served.mean() > 0.6
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ridged designs beyond the data
        gap = binned.predict(Q) - exact.predict(Q)
    assert np.max(np.abs(gap)) <= tol * np.ptp(y)
    # "auto" never takes it.
    assert LocalLinearRegressor(bandwidth=0.2).fit(X, y).algorithm_ != "binned"


def test_eligibility():
    assert binned_eligible(Gaussian(), "euclidean", None, 1)
    assert not binned_eligible(Gaussian(), "euclidean", None, 2)
    for name in sorted(KERNELS):
        if name not in ("gaussian",):
            assert not binned_eligible(get_kernel(name), "euclidean", None, 1)

    class UserGaussian(Gaussian):
        pass

    assert not binned_eligible(UserGaussian(), "euclidean", None, 1)


def test_grid_step_shrinks_with_the_tolerance():
    _, d1, n1 = binned_grid(0.0, 10.0, 0.1, 1e-4)
    _, d2, n2 = binned_grid(0.0, 10.0, 0.1, 1e-6)
    np.testing.assert_allclose(d1 / d2, 10.0)
    assert n2 > 9 * n1


@pytest.mark.parametrize("outlier", [100.0, -100.0])
def test_zero_weight_points_outside_the_grid(outlier):
    rng = np.random.default_rng(9)
    X = np.r_[rng.uniform(0, 1, 200), outlier][:, None]
    y = np.r_[np.sin(6 * X[:-1, 0]), 50.0]
    w = np.r_[np.ones(200), 0.0]
    Q = np.linspace(0, 1, 50)[:, None]
    exact, binned = exact_and_binned(X, y, Q, 1e-6, sample_weight=w, bandwidth=0.05)
    assert np.max(np.abs(binned - exact)) <= 1e-6 * np.ptp(y[:-1])


def test_local_fits_check_their_finer_grid_at_fit():
    # The local moments' grid has half the step: a span the sums' grid holds
    # can be too wide for it, which fit says (not predict).
    X = np.array([[0.0], [2.5], [5.0]])
    y = np.array([0.0, 1.0, 0.0])
    NadarayaWatsonRegressor(algorithm="binned", bandwidth=1e-3).fit(X, y)
    with pytest.raises(ValueError, match="binned_tol=1e-06"):
        LocalLinearRegressor(algorithm="binned", bandwidth=1e-3).fit(X, y)


def test_binned_local_fits_do_not_depend_on_the_batch():
    # Each query's estimate (served by the binned moments, or exactly) is
    # the same alone, in any subset and in any order (to the exact path's
    # rounding, whose dense tiles follow the batch).
    X, y = clustered(1500, seed=5)
    Q = np.linspace(X.min() - 1.0, X.max() + 1.0, 120)[:, None]
    est = LocalLinearRegressor(algorithm="binned", bandwidth=0.2).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = est.predict(Q)
        served = est._fits.query_centred(Q).served
        assert served.any() and not served.all()  # both paths in the batch
        for i in (0, 37, 60, 119):
            assert_close(est.predict(Q[i : i + 1]), full[i : i + 1])
        assert_close(est.predict(Q[::-1]), full[::-1])
        assert_close(est.predict(Q[::3]), full[::3])


def assert_close(got, ref):
    np.testing.assert_allclose(got, ref, rtol=1e-14, atol=0)


def test_binned_local_fits_predict_with_the_fitted_tolerance():
    # Predictions read the tolerance fitted with the index, not binned_tol
    # changed after fit.
    X, y = clustered(1500, seed=7)
    Q = np.linspace(X.min() - 1.0, X.max() + 1.0, 200)[:, None]
    est = LocalLinearRegressor(algorithm="binned", bandwidth=0.2, binned_tol=1e-6)
    est.fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        before = est.predict(Q)
        est.set_params(binned_tol=0.5)
        np.testing.assert_array_equal(est.predict(Q), before)


def test_the_search_of_bandwidth_cv_stays_exact():
    # A plain estimator on binned searches its bandwidth exactly: no binned
    # pass at fit; its predictions are binned.
    X, y = clustered(600, seed=8)
    with traced() as trace:
        est = NadarayaWatsonRegressor(algorithm="binned").fit(X, y)
    assert est.algorithm_ == "binned" and trace.count("binned_sums") == 0
    with traced() as trace:
        est.predict(X[:10])
    assert trace.count("binned_sums")
