"""Rules of thumb for the bandwidth and the estimators' resolved ``bandwidth_``."""

import math
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.utils._param_validation import InvalidParameterError

from sknw import NadarayaWatsonRegressor
from sknw._bandwidth.rules import kernel_factor, rule_bandwidth
from sknw.kernels import KERNELS, Constant, Epanechnikov, Gaussian

#: Roughness of the unit-variance Gaussian density.
GAUSSIAN_ROUGHNESS = 1.0 / (2.0 * math.sqrt(math.pi))
#: Epanechnikov ``3/4 (1 - u**2)``: variance 1/5, roughness 3/5.
EPANECHNIKOV_FACTOR = (0.6 / 0.2**2) ** 0.2 / GAUSSIAN_ROUGHNESS**0.2


def _heavy_tailed(n, d, seed=0):
    """Student-t data, for which the IQR term of Silverman's rule is the minimum."""
    rng = np.random.default_rng(seed)
    return rng.standard_t(2, size=(n, d)) * np.arange(1, d + 1)


def _scott(X):
    n, d = X.shape
    return np.std(X, axis=0, ddof=0) * n ** (-1.0 / (d + 4))


def _silverman(X):
    n, d = X.shape
    q75, q25 = np.percentile(X, [75, 25], axis=0)
    spread = np.minimum(np.std(X, axis=0, ddof=0), (q75 - q25) / 1.349)
    return 0.9 * spread * n ** (-1.0 / (d + 4))


# -- kernel factor -------------------------------------------------------------


def test_kernel_factor_gaussian_is_one():
    assert kernel_factor(Gaussian()) == 1.0


def test_kernel_factor_epanechnikov():
    assert_allclose(EPANECHNIKOV_FACTOR, 2.2138, atol=5e-5)
    assert_allclose(kernel_factor(Epanechnikov()), EPANECHNIKOV_FACTOR, rtol=1e-12)


@pytest.mark.parametrize("name", ["constant", "cauchy", "silverman"])
def test_kernel_factor_is_one_without_finite_variance(name):
    assert kernel_factor(KERNELS[name]()) == 1.0


@pytest.mark.parametrize(
    "name, variance, roughness",
    [
        ("boxcar", 1 / 3, 1 / 2),
        ("triangular", 1 / 6, 2 / 3),
        ("biweight", 1 / 7, 5 / 7),
        ("laplacian", 2.0, 1 / 4),
        ("logistic", math.pi**2 / 3, 1 / 6),
    ],
)
def test_kernel_factor_is_ratio_of_canonical_scales(name, variance, roughness):
    expected = (roughness / variance**2) ** 0.2 / GAUSSIAN_ROUGHNESS**0.2
    assert_allclose(kernel_factor(KERNELS[name]()), expected, rtol=1e-12)


# -- rules against their formulas -------------------------------------------------


@pytest.mark.parametrize("kernel", [Gaussian(), Epanechnikov(), Constant()], ids=repr)
@pytest.mark.parametrize("d", [1, 3])
def test_scott(d, kernel):
    X = _heavy_tailed(200, d)
    expected = _scott(X) * kernel_factor(kernel)
    h = rule_bandwidth(X, "scott", kernel)
    assert h.shape == (d,)
    assert_allclose(h, expected, rtol=1e-12)


@pytest.mark.parametrize("kernel", [Gaussian(), Epanechnikov(), Constant()], ids=repr)
@pytest.mark.parametrize("d", [1, 3])
@pytest.mark.parametrize("n", [37, 200])
def test_silverman(n, d, kernel):
    X = _heavy_tailed(n, d)
    q75, q25 = np.percentile(X, [75, 25], axis=0)
    # The data are such that the robust spread is the one used.
    assert np.all((q75 - q25) / 1.349 < np.std(X, axis=0))
    expected = _silverman(X) * kernel_factor(kernel)
    h = rule_bandwidth(X, "silverman", kernel)
    assert h.shape == (d,)
    assert_allclose(h, expected, rtol=1e-12)


def test_silverman_uses_std_when_smaller():
    # A bimodal feature: standard deviation 1, interquartile range 2.
    X = np.repeat([[-1.0], [1.0]], 50, axis=0)
    expected = 0.9 * 1.0 * 100 ** (-1.0 / 5.0)
    assert_allclose(rule_bandwidth(X, "silverman", Gaussian()), [expected])


def test_epanechnikov_bandwidth_is_wider_than_gaussian():
    X = _heavy_tailed(100, 2)
    for rule in ("scott", "silverman"):
        ratio = rule_bandwidth(X, rule, Epanechnikov()) / rule_bandwidth(
            X, rule, Gaussian()
        )
        assert_allclose(ratio, EPANECHNIKOV_FACTOR, rtol=1e-12)


# -- sample weights ----------------------------------------------------------------


@pytest.mark.parametrize("rule", ["scott", "silverman"])
def test_integer_weights_equal_repeated_rows_exactly(rule):
    # Quarter-integer data and a total weight of 64: every mean, deviation and
    # sum is exact in floating point, so the two must agree bit for bit.
    rng = np.random.default_rng(1)
    X = rng.integers(-40, 40, size=(32, 2)) / 4.0
    w = rng.permutation(np.tile([1, 3], 16))
    assert w.sum() == 64
    weighted = rule_bandwidth(X, rule, Gaussian(), w.astype(np.float64))
    repeated = rule_bandwidth(np.repeat(X, w, axis=0), rule, Gaussian())
    assert_array_equal(weighted, repeated)
    # The sample size of the rule is the total weight, not the number of rows.
    assert not np.allclose(weighted, rule_bandwidth(X, rule, Gaussian()))


@pytest.mark.parametrize("rule", ["scott", "silverman"])
def test_integer_weights_equal_repeated_rows(rule):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(30, 2))
    w = rng.integers(1, 5, size=30)
    weighted = rule_bandwidth(X, rule, Gaussian(), w.astype(np.float64))
    repeated = rule_bandwidth(np.repeat(X, w, axis=0), rule, Gaussian())
    # Equal up to the order of floating-point summation.
    assert_allclose(weighted, repeated, rtol=1e-14)


@pytest.mark.parametrize("rule", ["scott", "silverman"])
def test_estimator_integer_weights_equal_repeated_rows(rule):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(25, 3))
    y = rng.normal(size=25)
    w = rng.integers(1, 4, size=25)
    weighted = NadarayaWatsonRegressor(bandwidth=rule).fit(X, y, sample_weight=w)
    repeated = NadarayaWatsonRegressor(bandwidth=rule).fit(
        np.repeat(X, w, axis=0), np.repeat(y, w)
    )
    assert_allclose(weighted.bandwidth_, repeated.bandwidth_, rtol=1e-14)
    assert_allclose(weighted.predict(X), repeated.predict(X), rtol=1e-10)


@pytest.mark.parametrize("rule", ["scott", "silverman"])
@pytest.mark.parametrize("weights", ["binary", "integer"])
def test_zero_weight_rows_are_ignored(rule, weights):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 2))
    # Outliers that carry no weight must not widen the bandwidth.
    X[:5] *= 100.0
    y = rng.normal(size=40)
    w = np.ones(40) if weights == "binary" else rng.integers(1, 4, 40).astype(float)
    w[:5] = 0.0
    w[20:23] = 0.0
    keep = w > 0
    reg = NadarayaWatsonRegressor(bandwidth=rule)
    fitted = reg.fit(X, y, sample_weight=w).bandwidth_
    reference = NadarayaWatsonRegressor(bandwidth=rule).fit(
        X[keep], y[keep], sample_weight=w[keep]
    )
    assert_array_equal(fitted, reference.bandwidth_)
    if weights == "binary":
        plain = NadarayaWatsonRegressor(bandwidth=rule).fit(X[keep], y[keep])
        assert_array_equal(fitted, plain.bandwidth_)


# -- degenerate and extreme features ------------------------------------------------


CONSTANTS = [0.0, 3.0, -1e-3, 0.1]


def _with_constant_feature(value, n=50):
    rng = np.random.default_rng(4)
    return np.column_stack([np.full(n, value), rng.normal(size=n)])


@pytest.mark.parametrize("rule", ["scott", "silverman"])
@pytest.mark.parametrize("value", CONSTANTS)
def test_constant_feature_gives_positive_bandwidth(rule, value):
    X = _with_constant_feature(value)
    h = rule_bandwidth(X, rule, Gaussian())
    assert h.shape == (2,)
    assert np.all(np.isfinite(h)) and np.all(h > 0)
    reg = NadarayaWatsonRegressor(bandwidth=rule).fit(X, X[:, 1])
    assert np.all(np.isfinite(reg.bandwidth_)) and np.all(reg.bandwidth_ > 0)
    assert np.all(np.isfinite(reg.predict(X)))


@pytest.mark.parametrize("rule", ["scott", "silverman"])
@pytest.mark.parametrize("value", CONSTANTS)
def test_constant_feature_uses_fallback_scale(rule, value):
    X = _with_constant_feature(value)
    h = rule_bandwidth(X, rule, Gaussian())
    # The documented fallback scale: the largest magnitude, or 1 for zeros.
    scale = abs(value) if value != 0 else 1.0
    constant = 1.0 if rule == "scott" else 0.9
    assert_allclose(h[0], constant * scale * 50 ** (-1.0 / 6.0), rtol=1e-12)


@pytest.mark.parametrize("value", CONSTANTS)
def test_constant_feature_does_not_dominate_distances(value):
    # A query a hair away from the training value of a constant feature gets
    # (almost) the same estimate as a query at that value.
    X = _with_constant_feature(value, n=40)
    y = np.sin(3 * X[:, 1])
    reg = NadarayaWatsonRegressor().fit(X, y)
    Q = X[:5].copy()
    Q_shifted = Q + [[1e-9, 0.0]]
    assert_allclose(reg.predict(Q_shifted), reg.predict(Q), rtol=1e-6)


@pytest.mark.parametrize("rule", ["scott", "silverman"])
@pytest.mark.parametrize("scale", [1e-150, 1e150])
def test_extreme_scales_give_positive_finite_bandwidths(rule, scale):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(60, 2))
    h = rule_bandwidth(X * scale, rule, Gaussian())
    assert np.all(np.isfinite(h)) and np.all(h > 0)
    # The rules are scale equivariant.
    assert_allclose(h, scale * rule_bandwidth(X, rule, Gaussian()), rtol=1e-10)
    reg = NadarayaWatsonRegressor(bandwidth=rule).fit(X * scale, X[:, 0])
    assert np.all(np.isfinite(reg.bandwidth_)) and np.all(reg.bandwidth_ > 0)
    assert np.all(np.isfinite(reg.predict(X * scale)))


# -- the estimator's bandwidth_ ------------------------------------------------------


@pytest.mark.parametrize("bandwidth", [0.5, 2, np.float64(0.25), np.array(1.5)])
def test_scalar_bandwidth_is_a_float(bandwidth):
    X = np.arange(12.0).reshape(6, 2)
    reg = NadarayaWatsonRegressor(bandwidth=bandwidth).fit(X, np.arange(6.0))
    assert type(reg.bandwidth_) is float
    assert reg.bandwidth_ == float(bandwidth)


@pytest.mark.parametrize("bandwidth", ["scott", "silverman", [0.5, 2.0], (1, 3)])
def test_rule_and_array_bandwidths_are_per_feature(bandwidth):
    rng = np.random.default_rng(6)
    X = rng.normal(size=(30, 2))
    reg = NadarayaWatsonRegressor(bandwidth=bandwidth).fit(X, X[:, 0])
    assert isinstance(reg.bandwidth_, np.ndarray)
    assert reg.bandwidth_.shape == (2,)
    assert reg.bandwidth_.dtype == np.float64
    if bandwidth == "scott":
        assert_allclose(reg.bandwidth_, _scott(X), rtol=1e-12)
    elif bandwidth == "silverman":
        assert np.all(reg.bandwidth_ > 0)
    else:
        assert_array_equal(reg.bandwidth_, np.asarray(bandwidth, dtype=float))


def test_rule_bandwidth_follows_kernel():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(30, 1))
    gauss = NadarayaWatsonRegressor(bandwidth="scott").fit(X, X[:, 0])
    epa = NadarayaWatsonRegressor(kernel="epanechnikov", bandwidth="scott")
    epa = epa.fit(X, X[:, 0])
    assert_allclose(epa.bandwidth_, gauss.bandwidth_ * EPANECHNIKOV_FACTOR)


@pytest.mark.parametrize("bandwidth", [0, 0.0, -1, -1.0, np.nan, np.inf, "scot"])
def test_invalid_scalar_bandwidth(bandwidth):
    X = np.arange(10.0).reshape(5, 2)
    reg = NadarayaWatsonRegressor(bandwidth=bandwidth)
    with pytest.raises(ValueError, match="bandwidth") as info:
        reg.fit(X, np.arange(5.0))
    assert isinstance(info.value, InvalidParameterError)


@pytest.mark.parametrize(
    "bandwidth, match",
    [
        ([1.0], r"shape \(n_features,\)"),
        ([1.0, 1.0, 1.0], r"shape \(n_features,\)"),
        ([[1.0, 1.0]], r"shape \(n_features,\)"),
        (np.ones((2, 2)), r"shape \(n_features,\)"),
        ([1.0, 0.0], "positive and finite"),
        ([1.0, -2.0], "positive and finite"),
        ([np.nan, 1.0], "positive and finite"),
        ([1.0, np.inf], "positive and finite"),
    ],
)
def test_invalid_array_bandwidth(bandwidth, match):
    X = np.arange(10.0).reshape(5, 2)
    with pytest.raises(ValueError, match=match):
        NadarayaWatsonRegressor(bandwidth=bandwidth).fit(X, np.arange(5.0))


@pytest.mark.parametrize("rule", ["scott", "silverman"])
@pytest.mark.parametrize("scale", [1e-300, 1e-310, 5e-324])
def test_rules_with_tiny_frequency_weights_follow_their_formula(rule, scale):
    # n is the sum of the weights, down to subnormal ones: the bandwidth is
    # that of unit weights times (sum w / n)**(-1/(d+4)), never a bandwidth
    # clipped at the float range.
    rng = np.random.default_rng(0)
    X, y = rng.uniform(0, 1, (100, 2)), rng.normal(size=100)
    unit = NadarayaWatsonRegressor(bandwidth=rule).fit(X, y).bandwidth_
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = NadarayaWatsonRegressor(bandwidth=rule).fit(
            X, y, sample_weight=np.full(100, scale)
        )
    total = np.sum(np.full(100, scale))
    expected = unit * np.exp(-(np.log(total) - np.log(100.0)) / 6)
    np.testing.assert_allclose(got.bandwidth_, expected, rtol=1e-10)
