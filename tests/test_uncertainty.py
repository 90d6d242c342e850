"""Standard errors, confidence intervals and effective sample sizes."""

import warnings

import numpy as np
import pytest
from _expected_warnings import warns_about
from numpy.testing import assert_allclose
from scipy.stats import norm

from sknw import (
    LocalLinearRegressor,
    NadarayaWatsonRegressor,
    NadarayaWatsonRegressorCV,
    UndefinedStdWarning,
)
from sknw._local.uncertainty import SquaredKernel, local_noise_variance
from sknw.kernels import KERNELS, Gaussian, get_kernel

ESTIMATORS = [NadarayaWatsonRegressor, LocalLinearRegressor]


# -- independent reference: explicit smoother matrices, weights as precisions ---


def smoother_rows(est_class, Q, X, kernel, h, w=None):
    """Rows l(q) of the smoother matrix by brute force.

    Local constant: normalised weights w_j K_j. Local linear: the first row of
    the weighted least-squares solution operator, e_0^T (Z^T P Z)^+ Z^T P, with
    Z = [1, x - q] and P = diag(w_j K_j) (numpy's pinv, per query).
    """
    w = np.ones(X.shape[0]) if w is None else w
    kernel = get_kernel(kernel)
    u = np.sqrt(((Q[:, None, :] - X[None, :, :]) ** 2).sum(-1)) / h
    K = kernel(u) * w
    if est_class is NadarayaWatsonRegressor:
        return K / K.sum(axis=1, keepdims=True)
    rows = []
    for q, k in zip(Q, K, strict=True):
        Z = np.hstack([np.ones((X.shape[0], 1)), X - q])
        A = Z.T @ (k[:, None] * Z)
        rows.append((np.linalg.pinv(A) @ (Z.T * k))[0])
    return np.array(rows)


def reference(est_class, Q, X, y, kernel, h, w=None):
    """Estimate, local noise variance and standard error by the textbook
    formulas, with noise of variance sigma^2 / w_j at point j.

    The local noise variance is the weighted mean of the squared residuals of
    the local weighted least-squares fit, sum_j p_j r_j^2, divided by its
    expectation per unit sigma^2, tr(R^T P R Omega) with R = I - H the local
    residual operator, P = diag(p) and Omega = diag(1 / w), from explicit
    matrices. The variance of the estimate is sigma^2 sum_j l_j^2 / w_j.
    """
    w = np.ones(X.shape[0]) if w is None else w
    L = smoother_rows(est_class, Q, X, kernel, h, w)
    kern = get_kernel(kernel)
    keep = w > 0
    est, var = L @ y, []
    for q in Q:
        k = kern(np.sqrt(((X - q) ** 2).sum(-1)) / h) * w
        p = (k / k.sum())[keep]
        if est_class is NadarayaWatsonRegressor:
            Z = np.ones((keep.sum(), 1))
        else:
            Z = np.hstack([np.ones((keep.sum(), 1)), X[keep] - q])
        H = Z @ np.linalg.pinv(Z.T @ (p[:, None] * Z)) @ (Z.T * p)
        R = np.eye(keep.sum()) - H
        rss = p @ (R @ y[keep]) ** 2
        expected = np.trace(R.T @ np.diag(p) @ R @ np.diag(1 / w[keep]))
        var.append(rss / expected)
    var = np.array(var)
    spread = (L[:, keep] ** 2 / w[keep]).sum(axis=1)
    return est, var, np.sqrt(var * spread), spread


def global_reference(est_class, X, y, kernel, h, w=None):
    """sum_i w_i r_i^2 / (n - 2 tr L + sum_i w_i sum_j L_ij^2 / w_j) over the
    points of positive weight."""
    w = np.ones(X.shape[0]) if w is None else w
    keep = w > 0
    L = smoother_rows(est_class, X[keep], X, kernel, h, w)[:, keep]
    wk = w[keep]
    r = y[keep] - L @ y[keep]
    spread = (L**2 / wk).sum(axis=1)
    return (wk * r) @ r / (keep.sum() - 2 * np.trace(L) + wk @ spread)


def data(n=60, d=1, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 3, (n, d))
    y = np.sin(2 * X).sum(axis=1) + rng.normal(0, 0.3, n) * (1 + X[:, 0])
    return X, y


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("est_class", ESTIMATORS)
@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov", "tricube", "cauchy"])
@pytest.mark.parametrize("d", [1, 2])
def test_local_std_matches_brute_force(est_class, kernel, d, weighted):
    X, y = data(d=d)
    w = np.random.default_rng(7).uniform(0.2, 3.0, X.shape[0]) if weighted else None
    if weighted:
        w[::9] = 0.0
    h = 1.2 if d == 2 else 0.7
    Q = np.random.default_rng(1).uniform(0.3, 2.7, (15, d))
    est = est_class(kernel=kernel, bandwidth=h, algorithm="brute")
    est.fit(X, y, sample_weight=w)
    mean, std = est.predict(Q, return_std=True)
    ref_mean, _, ref_std, spread = reference(est_class, Q, X, y, kernel, h, w)
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(std, ref_std, rtol=1e-7)
    np.testing.assert_allclose(est.effective_sample_size(Q), 1 / spread, rtol=1e-9)


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("est_class", ESTIMATORS)
@pytest.mark.parametrize("kernel", ["gaussian", "biweight"])
def test_global_noise_variance_matches_brute_force(est_class, kernel, weighted):
    X, y = data(d=1)
    w = np.random.default_rng(8).uniform(0.2, 3.0, X.shape[0]) if weighted else None
    if weighted:
        w[::7] = 0.0
    est = est_class(kernel=kernel, bandwidth=0.6, noise_variance="global")
    est.fit(X, y, sample_weight=w)
    ref = global_reference(est_class, X, y, kernel, 0.6, w)
    np.testing.assert_allclose(est.noise_variance_, [ref], rtol=1e-9)
    Q = np.linspace(0.2, 2.8, 9)[:, None]
    _, _, _, spread = reference(est_class, Q, X, y, kernel, 0.6, w)
    np.testing.assert_allclose(est.standard_error(Q), np.sqrt(ref * spread), rtol=1e-8)


@pytest.mark.parametrize("est_class", ESTIMATORS)
@pytest.mark.parametrize("noise_variance", ["local", "global"])
def test_standard_errors_do_not_depend_on_the_scale_of_the_weights(
    est_class, noise_variance
):
    X, y = data(n=40, d=1)
    w = np.random.default_rng(2).uniform(0.5, 3.0, X.shape[0])
    Q = np.linspace(0.1, 2.9, 11)[:, None]
    params = {"bandwidth": 0.5, "noise_variance": noise_variance}
    unit = est_class(**params).fit(X, y, sample_weight=w)
    for factor in (1e-3, 7.3, 2.0**40):
        scaled = est_class(**params).fit(X, y, sample_weight=factor * w)
        np.testing.assert_allclose(
            scaled.standard_error(Q), unit.standard_error(Q), rtol=1e-9
        )
        # Effective observations are counted in units of weight one.
        np.testing.assert_allclose(
            scaled.effective_sample_size(Q),
            factor * unit.effective_sample_size(Q),
            rtol=1e-9,
        )


@pytest.mark.parametrize("est_class", ESTIMATORS)
def test_integer_weights_have_the_precision_of_repeated_rows(est_class):
    """A point of weight w is as precise as the mean of w observations: with a
    given noise variance, standard errors equal those of repeated rows."""
    X, y = data(n=40, d=1)
    w = np.random.default_rng(2).integers(1, 4, X.shape[0])
    Q = np.linspace(0.1, 2.9, 11)[:, None]
    params = {"bandwidth": 0.5, "noise_variance": 0.3}
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
    with warns_about(UndefinedStdWarning, 2, 3):
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
    with warns_about(UndefinedStdWarning, 1, 3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", category=UserWarning)
            warnings.simplefilter("always", category=UndefinedStdWarning)
            std = given.standard_error(Q)
    np.testing.assert_allclose(std[:2], [1.0, np.sqrt(0.5)])


def test_local_linear_needs_more_than_two_points_in_1d():
    X = np.array([[0.0], [1.0], [1.2], [1.3], [5.0]])
    y = np.array([0.0, 1.0, 2.0, 2.2, 3.0])
    est = LocalLinearRegressor(kernel="boxcar", bandwidth=0.5).fit(X, y)
    with warns_about(UndefinedStdWarning, 1, 2):
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


def test_precision_weights_simulation():
    """Noise of variance sigma^2 / w_j: the local and global noise variances
    estimate sigma^2, and the standard errors match the spread of the
    estimates across repetitions."""
    rng = np.random.default_rng(99)
    n, reps, sigma = 150, 300, 0.3
    X = rng.uniform(0, 2, (n, 1))
    w = rng.choice([0.5, 1.0, 4.0], n)
    Q = np.array([[0.6], [1.0], [1.4]])
    for est_class in ESTIMATORS:
        local, pooled, estimates, stds = [], [], [], []
        for _ in range(reps):
            # A mean each fit reproduces: the local fit's residuals are noise.
            slope = 0.5 if est_class is LocalLinearRegressor else 0.0
            y = slope * X[:, 0] + rng.normal(0, sigma / np.sqrt(w))
            est = est_class(bandwidth=0.3, noise_variance="global")
            est.fit(X, y, sample_weight=w)
            pooled.append(est.noise_variance_[0])
            fit = est._fits.local_fit(Q)
            var, _ = local_noise_variance(fit)
            # Per unit of the weights divided by their power of two.
            local.append(var[:, 0] * fit.y_scale[0] ** 2 * est._smoother.weight_unit())
            estimates.append(est.predict(Q))
            stds.append(est.standard_error(Q))
        assert 0.9 < np.mean(pooled) / sigma**2 < 1.1
        assert np.all(np.abs(np.mean(local, axis=0) / sigma**2 - 1) < 0.1)
        ratio = np.mean(stds, axis=0) / np.std(estimates, axis=0, ddof=1)
        assert np.all((ratio > 0.85) & (ratio < 1.15)), ratio


def test_one_observation_of_large_weight_has_no_local_variance():
    """A window holding one point, of any weight: no residual, no variance."""
    X = np.array([[0.0], [5.0], [5.5]])
    y = np.array([1.0, 2.0, 3.0])
    est = NadarayaWatsonRegressor(kernel="boxcar", bandwidth=1.0)
    est.fit(X, y, sample_weight=[3.0, 1.0, 1.0])
    with warns_about(UndefinedStdWarning, 1, 2):
        std = est.standard_error([[0.0], [5.2]])
    assert np.isnan(std[0]) and std[1] > 0
    line = LocalLinearRegressor(kernel="epanechnikov", bandwidth=2.0)
    line.fit([[0.0], [1.0], [5.0]], [1.0, 2.0, 0.0], sample_weight=[2, 3, 1])
    with pytest.warns(UndefinedStdWarning):
        assert np.isnan(line.standard_error([[0.5]])[0])


def test_negative_or_unresolved_residuals_give_nan_with_a_warning():
    # A signed kernel: the weighted residual mean square can be negative.
    X = np.arange(6.0)[:, None]
    signed = NadarayaWatsonRegressor(kernel="silverman", bandwidth=1.0)
    signed.fit(X, [0, 0, 0, 0, 0, 10.0])
    with pytest.warns(UndefinedStdWarning):
        assert np.isnan(signed.standard_error([[0.0]])[0])
    # Steps of 1e5 and noise of 1e-3: the one-pass residual is rounding.
    rng = np.random.default_rng(0)
    Xs = rng.uniform(0, 40, (400, 1))
    ys = 1e5 * (Xs[:, 0] > 20) + rng.normal(0, 1e-3, 400)
    steps = NadarayaWatsonRegressor(kernel="epanechnikov", bandwidth=10.0)
    steps.fit(Xs, ys)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedStdWarning)
        std = steps.standard_error([[20.0]])
    exact = reference(
        NadarayaWatsonRegressor, np.array([[20.0]]), Xs, ys, "epanechnikov", 10.0
    )[2]
    assert np.isnan(std[0]) or abs(std[0] / exact[0] - 1) < 1e-3


@pytest.mark.parametrize("scale", [1e-170, 1e-100, 1e100, 1e160])
@pytest.mark.parametrize("noise_variance", ["local", "global"])
def test_targets_at_extreme_scales(scale, noise_variance):
    X, y = data(n=50)
    Q = np.linspace(0.2, 2.8, 7)[:, None]
    for est_class in ESTIMATORS:
        params = {"bandwidth": 0.5, "noise_variance": noise_variance}
        unit = est_class(**params).fit(X, y).standard_error(Q)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            scaled = est_class(**params).fit(X, scale * y).standard_error(Q)
        np.testing.assert_allclose(scaled, scale * unit, rtol=1e-9)


def test_no_feature_name_warning():
    pd = pytest.importorskip("pandas")
    X, y = data(n=40)
    frame = pd.DataFrame(X, columns=["x"])
    for est_class in ESTIMATORS:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            est = est_class(bandwidth=0.5, noise_variance="global").fit(frame, y)
            est.predict(frame, return_std=True)
            est.standard_error(frame)
            est.predict_interval(frame)
            est.effective_sample_size(frame)
            est.predict(frame)


def test_global_variance_skips_points_of_weight_zero():
    X = np.array([[0.0], [0.5], [1.0], [10.0]])
    y = np.array([0.0, 1.0, 2.0, 3.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = NadarayaWatsonRegressor(
            kernel="epanechnikov",
            bandwidth=2.0,
            empty_window="raise",
            noise_variance="global",
        ).fit(X, y, sample_weight=[1, 1, 1, 0])
    ref = global_reference(
        NadarayaWatsonRegressor, X, y, "epanechnikov", 2.0, np.array([1, 1, 1, 0.0])
    )
    np.testing.assert_allclose(est.noise_variance_, [ref], rtol=1e-12)


def test_gaussian_at_a_vanishing_bandwidth_is_the_nearest_point():
    X, y = data(n=30)
    Q = np.vstack([X[:3], [[1.234567]]])
    est = NadarayaWatsonRegressor(bandwidth=1e-200, noise_variance=0.25).fit(X, y)
    np.testing.assert_allclose(est.effective_sample_size(Q), 1.0)
    np.testing.assert_allclose(est.standard_error(Q), 0.5)


@pytest.mark.parametrize("est_class", ESTIMATORS)
@pytest.mark.parametrize("scale", [1e-310, 2.0**-1070, 1e300])
def test_standard_errors_do_not_change_with_the_scale_of_the_weights(est_class, scale):
    # Precision weights: the variance of observation j is sigma^2 / w_j, so
    # the standard errors and the effective sample sizes in units of the
    # weights follow their relative sizes, down to subnormal weights.
    rng = np.random.default_rng(5)
    X = rng.uniform(0, 1, (40, 1))
    y = np.sin(3 * X[:, 0]) + 0.1 * rng.normal(size=40)
    w = rng.choice([0.5, 1.0, 3.0], 40)
    Q = np.array([[0.2], [0.5], [0.9]])
    for nv in ("local", "global", 0.01):
        ref = est_class(bandwidth=0.2, noise_variance=nv).fit(X, y, sample_weight=w)
        est = est_class(bandwidth=0.2, noise_variance=nv)
        est.fit(X, y, sample_weight=scale * w)
        expected = ref.standard_error(Q)
        if nv == 0.01:  # the noise variance of an observation of weight 1
            expected = expected / np.sqrt(scale)
            if not np.all(np.isfinite(expected)):
                continue
        assert_allclose(est.standard_error(Q), expected, rtol=1e-9)
    size = est_class(bandwidth=0.2).fit(X, y, sample_weight=scale * w)
    ratio = size.effective_sample_size(Q) / ref.effective_sample_size(Q)
    assert_allclose(ratio, scale, rtol=1e-9)
