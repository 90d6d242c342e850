"""Standard errors, confidence intervals and effective sample sizes."""

import warnings

import numpy as np
import pytest
from scipy.stats import norm

from sknw import (
    LocalLinearRegressor,
    NadarayaWatsonRegressor,
    NadarayaWatsonRegressorCV,
    UndefinedStdWarning,
)
from sknw._uncertainty import SquaredKernel
from sknw.kernels import KERNELS, Gaussian, get_kernel

ESTIMATORS = [NadarayaWatsonRegressor, LocalLinearRegressor]


# -- independent reference: the smoother matrix, with weights as repetitions ----


def smoother_rows(est_class, Q, X, kernel, h):
    """Rows l(q) of the smoother matrix by brute force (no sample weights).

    Local constant: normalised kernel weights. Local linear: the first row of
    the weighted least-squares solution operator, e_0^T (Z^T K Z)^+ Z^T K, with
    Z = [1, x - q] (numpy's pinv, from scratch per query).
    """
    kernel = get_kernel(kernel)
    u = np.sqrt(((Q[:, None, :] - X[None, :, :]) ** 2).sum(-1)) / h
    K = kernel(u)
    if est_class is NadarayaWatsonRegressor:
        return K / K.sum(axis=1, keepdims=True)
    rows = []
    for q, k in zip(Q, K, strict=True):
        Z = np.hstack([np.ones((X.shape[0], 1)), X - q])
        A = Z.T @ (k[:, None] * Z)
        rows.append((np.linalg.pinv(A) @ (Z.T * k))[0])
    return np.array(rows)


def reference(est_class, Q, X, y, kernel, h):
    """Estimate, local noise variance and standard error by the textbook
    formulas on the data as given (each row one observation).

    The local noise variance is the kernel-weighted mean of the squared
    residuals of the local fit divided by its expectation per unit noise
    variance, E = sum_j p_j ((I - H) (I - H)^T)_jj for the local smoother
    H in the window, computed here from explicit matrices.
    """
    L = smoother_rows(est_class, Q, X, kernel, h)
    kern = get_kernel(kernel)
    est, var = L @ y, []
    for q in Q:
        k = kern(np.sqrt(((X - q) ** 2).sum(-1)) / h)
        p = k / k.sum()
        if est_class is NadarayaWatsonRegressor:
            Z = np.ones((X.shape[0], 1))
        else:
            Z = np.hstack([np.ones((X.shape[0], 1)), X - q])
        H = Z @ np.linalg.pinv(Z.T @ (p[:, None] * Z)) @ (Z.T * p)
        R = np.eye(X.shape[0]) - H
        rss = p @ (R @ y) ** 2
        expected = p @ np.diag(R @ R.T)
        var.append(rss / expected)
    var = np.array(var)
    return est, var, np.sqrt(var * (L**2).sum(axis=1)), L


def global_reference(est_class, X, y, kernel, h):
    """sum r_i^2 / (n - 2 tr L + tr L^T L), on the training points."""
    L = smoother_rows(est_class, X, X, kernel, h)
    r = y - L @ y
    n = X.shape[0]
    return r @ r / (n - 2 * np.trace(L) + np.trace(L.T @ L))


def data(n=60, d=1, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 3, (n, d))
    y = np.sin(2 * X).sum(axis=1) + rng.normal(0, 0.3, n) * (1 + X[:, 0])
    return X, y


@pytest.mark.parametrize("est_class", ESTIMATORS)
@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov", "tricube", "cauchy"])
@pytest.mark.parametrize("d", [1, 2])
def test_local_std_matches_brute_force(est_class, kernel, d):
    X, y = data(d=d)
    h = 1.2 if d == 2 else 0.7
    Q = np.random.default_rng(1).uniform(0.3, 2.7, (15, d))
    est = est_class(kernel=kernel, bandwidth=h, algorithm="brute").fit(X, y)
    mean, std = est.predict(Q, return_std=True)
    ref_mean, _, ref_std, L = reference(est_class, Q, X, y, kernel, h)
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(std, ref_std, rtol=1e-7)
    np.testing.assert_allclose(
        est.effective_sample_size(Q), 1 / (L**2).sum(axis=1), rtol=1e-9
    )


@pytest.mark.parametrize("est_class", ESTIMATORS)
@pytest.mark.parametrize("kernel", ["gaussian", "biweight"])
def test_global_noise_variance_matches_brute_force(est_class, kernel):
    X, y = data(d=1)
    est = est_class(kernel=kernel, bandwidth=0.6, noise_variance="global").fit(X, y)
    ref = global_reference(est_class, X, y, kernel, 0.6)
    np.testing.assert_allclose(est.noise_variance_, [ref], rtol=1e-9)
    Q = np.linspace(0.2, 2.8, 9)[:, None]
    L = smoother_rows(est_class, Q, X, kernel, 0.6)
    np.testing.assert_allclose(
        est.standard_error(Q), np.sqrt(ref * (L**2).sum(axis=1)), rtol=1e-8
    )


@pytest.mark.parametrize("est_class", ESTIMATORS)
@pytest.mark.parametrize("noise_variance", ["local", "global"])
def test_integer_weights_are_repeated_observations(est_class, noise_variance):
    X, y = data(n=40, d=1)
    w = np.random.default_rng(2).integers(1, 4, X.shape[0])
    Q = np.linspace(0.1, 2.9, 11)[:, None]
    params = {"bandwidth": 0.5, "noise_variance": noise_variance}
    weighted = est_class(**params).fit(X, y, sample_weight=w)
    repeated = est_class(**params).fit(np.repeat(X, w, 0), np.repeat(y, w))
    for a, b in zip(
        weighted.predict(Q, return_std=True),
        repeated.predict(Q, return_std=True),
        strict=True,
    ):
        np.testing.assert_allclose(a, b, rtol=1e-9)
    np.testing.assert_allclose(
        weighted.effective_sample_size(Q), repeated.effective_sample_size(Q), rtol=1e-9
    )


def test_zero_weight_points_are_absent():
    X, y = data(n=50)
    w = np.ones(50)
    w[::5] = 0
    Q = np.linspace(0.2, 2.8, 7)[:, None]
    for est_class in ESTIMATORS:
        a = est_class(bandwidth=0.5).fit(X, y, sample_weight=w)
        b = est_class(bandwidth=0.5).fit(X[w > 0], y[w > 0])
        np.testing.assert_allclose(a.standard_error(Q), b.standard_error(Q), rtol=1e-9)


@pytest.mark.parametrize("est_class", ESTIMATORS)
def test_multi_output_matches_single_outputs(est_class):
    X, y = data(n=50)
    Y = np.column_stack([y, 3 * y**2 - 1])
    Q = np.linspace(0.2, 2.8, 7)[:, None]
    for nv in ["local", "global", 0.25]:
        est = est_class(bandwidth=0.5, noise_variance=nv).fit(X, Y)
        mean, std = est.predict(Q, return_std=True)
        assert mean.shape == std.shape == (7, 2)
        for c in range(2):
            single = est_class(bandwidth=0.5, noise_variance=nv).fit(X, Y[:, c])
            m, s = single.predict(Q, return_std=True)
            assert m.shape == s.shape == (7,)
            np.testing.assert_allclose(mean[:, c], m, rtol=1e-10)
            np.testing.assert_allclose(std[:, c], s, rtol=1e-9)


@pytest.mark.parametrize("est_class", ESTIMATORS)
def test_std_means_agree_with_predict(est_class):
    X, y = data(n=80, d=2)
    Q = np.random.default_rng(3).uniform(0, 3, (20, 2))
    est = est_class(bandwidth=0.6).fit(X, y)
    mean, _ = est.predict(Q, return_std=True)
    np.testing.assert_allclose(mean, est.predict(Q), rtol=1e-12, atol=1e-12)


def test_given_noise_variance_scales_the_standard_error():
    X, y = data()
    Q = np.linspace(0.2, 2.8, 7)[:, None]
    est = NadarayaWatsonRegressor(bandwidth=0.4, noise_variance=4.0).fit(X, y)
    n_eff = est.effective_sample_size(Q)
    np.testing.assert_allclose(est.standard_error(Q), 2.0 / np.sqrt(n_eff), rtol=1e-12)
    assert np.array_equal(est.noise_variance_, [4.0])
    zero = NadarayaWatsonRegressor(bandwidth=0.4, noise_variance=0.0).fit(X, y)
    assert np.all(zero.standard_error(Q) == 0.0)


def test_effective_sample_size_limits():
    X, y = data(n=30)
    Q = np.array([[1.0], [2.0]])
    flat = NadarayaWatsonRegressor(kernel="constant", bandwidth=1.0).fit(X, y)
    np.testing.assert_allclose(flat.effective_sample_size(Q), 30.0, rtol=1e-12)
    w = np.random.default_rng(0).uniform(0.5, 2, 30)
    flat.fit(X, y, sample_weight=w)
    np.testing.assert_allclose(flat.effective_sample_size(Q), w.sum(), rtol=1e-12)
    # A vanishing Gaussian bandwidth leaves one observation: n_eff -> 1.
    tiny = NadarayaWatsonRegressor(bandwidth=1e-6).fit(X, y)
    np.testing.assert_allclose(tiny.effective_sample_size(X[:3]), 1.0)


def test_predict_interval_is_normal_interval():
    X, y = data()
    Q = np.linspace(0.2, 2.8, 7)[:, None]
    for est_class in ESTIMATORS:
        est = est_class(bandwidth=0.5).fit(X, y)
        mean, std = est.predict(Q, return_std=True)
        for level in (0.5, 0.9, 0.99):
            lower, upper = est.predict_interval(Q, confidence=level)
            z = norm.ppf(0.5 + level / 2)
            np.testing.assert_allclose(lower, mean - z * std, rtol=1e-12)
            np.testing.assert_allclose(upper, mean + z * std, rtol=1e-12)


@pytest.mark.parametrize("confidence", [0, 1, -0.5, 1.5, np.nan, "0.9"])
def test_predict_interval_rejects_bad_confidence(confidence):
    X, y = data(n=20)
    est = NadarayaWatsonRegressor().fit(X, y)
    with pytest.raises(ValueError, match="confidence"):
        est.predict_interval(X, confidence=confidence)


@pytest.mark.parametrize("bad", ["loca", -1.0, np.nan, [1.0]])
def test_noise_variance_is_validated(bad):
    X, y = data(n=20)
    with pytest.raises(ValueError, match="noise_variance"):
        NadarayaWatsonRegressor(noise_variance=bad).fit(X, y)


def test_one_point_windows_warn_and_give_nan():
    X = np.array([[0.0], [1.0], [1.2], [5.0]])
    y = np.array([0.0, 1.0, 2.0, 3.0])
    est = NadarayaWatsonRegressor(kernel="boxcar", bandwidth=0.5).fit(X, y)
    Q = np.array([[0.1], [1.1], [3.0]])  # one point, two points, empty
    with pytest.warns(UndefinedStdWarning, match="2 of 3 queries"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", category=UserWarning)
            warnings.simplefilter("always", category=UndefinedStdWarning)
            std = est.standard_error(Q)
    assert np.isnan(std[0]) and np.isnan(std[2])
    # Two observations 1 and 2: local variance 0.5 (ddof 1), mean of two.
    np.testing.assert_allclose(std[1], np.sqrt(0.5 / 2))
    # A given noise variance still has no standard error in the empty window.
    given = NadarayaWatsonRegressor(
        kernel="boxcar", bandwidth=0.5, noise_variance=1.0
    ).fit(X, y)
    with pytest.warns(UndefinedStdWarning, match="1 of 3"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", category=UserWarning)
            warnings.simplefilter("always", category=UndefinedStdWarning)
            std = given.standard_error(Q)
    np.testing.assert_allclose(std[:2], [1.0, np.sqrt(0.5)])


def test_local_linear_needs_more_than_two_points_in_1d():
    X = np.array([[0.0], [1.0], [1.2], [1.3], [5.0]])
    y = np.array([0.0, 1.0, 2.0, 2.2, 3.0])
    est = LocalLinearRegressor(kernel="boxcar", bandwidth=0.5).fit(X, y)
    with pytest.warns(UndefinedStdWarning, match="1 of 2"):
        # [0.8]: two points (a line through them, no residual); [1.15]: three.
        std = est.standard_error([[0.8], [1.15]])
    assert np.isnan(std[0]) and np.isfinite(std[1]) and std[1] > 0


def test_interpolating_fit_has_no_global_variance():
    X, y = data(n=20)
    with pytest.warns(UndefinedStdWarning, match="interpolates"):
        est = NadarayaWatsonRegressor(
            kernel="epanechnikov", bandwidth=1e-9, noise_variance="global"
        ).fit(X, y)
    assert np.all(np.isnan(est.noise_variance_))


@pytest.mark.parametrize("kernel", ["epanechnikov", "triangular"])
def test_algorithms_agree(kernel):
    rng = np.random.default_rng(4)
    X = rng.uniform(0, 100, (2000, 1))
    y = np.sin(X[:, 0] / 5) + rng.normal(0, 0.2, 2000)
    Q = rng.uniform(0, 100, (50, 1))
    results = {}
    for algorithm in ("brute", "tree", "sorted"):
        est = NadarayaWatsonRegressor(kernel=kernel, bandwidth=3.0, algorithm=algorithm)
        results[algorithm] = est.fit(X, y).predict(Q, return_std=True)
    for algorithm in ("tree", "sorted"):
        for a, b in zip(results[algorithm], results["brute"], strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-9)
    ll = {
        a: LocalLinearRegressor(kernel=kernel, bandwidth=3.0, algorithm=a)
        .fit(X, y)
        .standard_error(Q)
        for a in ("brute", "tree")
    }
    np.testing.assert_allclose(ll["tree"], ll["brute"], rtol=1e-9)


def test_parallel_matches_serial():
    X, y = data(n=300, d=2)
    Q = np.random.default_rng(5).uniform(0, 3, (3000, 2))
    serial = NadarayaWatsonRegressor(bandwidth=0.4).fit(X, y)
    parallel = NadarayaWatsonRegressor(bandwidth=0.4, n_jobs=2).fit(X, y)
    np.testing.assert_allclose(
        parallel.standard_error(Q), serial.standard_error(Q), rtol=1e-12
    )


def test_cv_estimator_predicts_std_with_selected_bandwidth():
    X, y = data(n=80)
    Q = np.linspace(0.2, 2.8, 7)[:, None]
    cv = NadarayaWatsonRegressorCV(noise_variance="global").fit(X, y)
    plain = NadarayaWatsonRegressor(
        kernel=cv.kernel_, bandwidth=cv.bandwidth_, noise_variance="global"
    ).fit(X, y)
    np.testing.assert_allclose(cv.noise_variance_, plain.noise_variance_)
    np.testing.assert_allclose(cv.standard_error(Q), plain.standard_error(Q))


def test_extreme_bandwidths_and_scales_stay_finite():
    X, y = data(n=50)
    Q = np.linspace(0.2, 2.8, 7)[:, None]
    # Huge bandwidth: every observation counts equally.
    wide = NadarayaWatsonRegressor(bandwidth=1e300).fit(X, y)
    np.testing.assert_allclose(wide.effective_sample_size(Q), 50.0, rtol=1e-12)
    np.testing.assert_allclose(
        wide.standard_error(Q), np.std(y, ddof=1) / np.sqrt(50), rtol=1e-9
    )
    # Targets and inputs far from order one: scale-equivariant.
    base = LocalLinearRegressor(bandwidth=0.5).fit(X, y).standard_error(Q)
    scaled = LocalLinearRegressor(bandwidth=0.5e150).fit(1e150 * X, 1e6 * y + 1e9)
    np.testing.assert_allclose(scaled.standard_error(1e150 * Q), 1e6 * base, rtol=1e-6)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_squared_kernel_is_the_square(name):
    kernel = get_kernel(name)
    sq = SquaredKernel(kernel)
    u = np.linspace(0, 3, 61)
    np.testing.assert_allclose(sq(u), kernel(u) ** 2, rtol=1e-12, atol=1e-300)
    with np.errstate(divide="ignore"):
        expected = np.log(np.abs(kernel(u)) ** 2)
    inside = np.isfinite(expected)
    np.testing.assert_allclose(sq.log_value(u)[inside], expected[inside], atol=1e-12)
    assert np.all(np.isneginf(sq.log_value(u)[~inside]))
    assert sq.support == kernel.support
    assert SquaredKernel(Gaussian())._log_linear == (-1.0, 2)


@pytest.mark.parametrize("est_class", ESTIMATORS)
def test_coverage_of_nominal_95_bands(est_class):
    """Seeded simulation: the 95 % bands cover a smooth function's value at
    interior points in at least 85 % of repetitions, and the standard errors
    match the spread of the estimates across repetitions."""
    rng = np.random.default_rng(12345)
    n, reps = 200, 150
    Q = np.array([[0.5], [1.0], [1.5]])
    truth = np.sin(Q[:, 0]) + 0.5 * Q[:, 0]
    covered, estimates, stds = [], [], []
    for _ in range(reps):
        X = rng.uniform(0, 2, (n, 1))
        sigma = 0.2 + 0.2 * X[:, 0]  # heteroscedastic
        y = np.sin(X[:, 0]) + 0.5 * X[:, 0] + rng.normal(0, sigma)
        est = est_class(bandwidth=0.12).fit(X, y)
        mean, std = est.predict(Q, return_std=True)
        lower, upper = est.predict_interval(Q, confidence=0.95)
        covered.append((lower <= truth) & (truth <= upper))
        estimates.append(mean)
        stds.append(std)
    coverage = np.mean(covered, axis=0)
    assert np.all(coverage >= 0.85), coverage
    ratio = np.mean(stds, axis=0) / np.std(estimates, axis=0, ddof=1)
    assert np.all((ratio > 0.8) & (ratio < 1.25)), ratio
