"""The binned Gaussian path: within its tolerance of the exact sums."""

import warnings

import numpy as np
import pytest

from sknw import (
    LocalLinearRegressor,
    NadarayaWatsonClassifier,
    NadarayaWatsonClassifierCV,
    NadarayaWatsonRegressor,
    NadarayaWatsonRegressorCV,
)
from sknw._sums._binned import binned_grid
from sknw._sums._traits import gaussian_eligible as binned_eligible
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


def test_other_estimators_refuse_binned():
    X, y = clustered(200)
    with pytest.raises(ValueError, match="algorithm"):
        LocalLinearRegressor(algorithm="binned").fit(X, y)
    for cv in (NadarayaWatsonRegressorCV, NadarayaWatsonClassifierCV):
        with pytest.raises(ValueError, match="algorithm"):
            cv(algorithm="binned").fit(X, (y > 10).astype(int))


@pytest.mark.parametrize("tol", [0, 1, -1e-3, 2.0])
def test_binned_tol_is_validated(tol):
    X, y = clustered(200)
    with pytest.raises(ValueError, match="binned_tol"):
        NadarayaWatsonRegressor(algorithm="binned", binned_tol=tol).fit(X, y)


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
