"""Robustness iterations: the bisquare weights against statsmodels' and a
direct formula, the refits they drive, frequency weights and outliers."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

from sknw import LocalLinearRegressor, LocalPolynomialRegressor, NadarayaWatsonRegressor
from sknw._local.robust import bisquare, robustness_weights


def test_bisquare():
    u = np.array([-2.0, -1.0, -0.5, 0.0, 0.5, 0.999, 1.0, 3.0])
    expected = np.where(np.abs(u) < 1, (1 - u**2) ** 2, 0.0)
    assert_allclose(bisquare(u), expected, atol=1e-300)


def test_weights_equal_statsmodels():
    sm = pytest.importorskip("statsmodels.nonparametric._smoothers_lowess")
    rng = np.random.default_rng(0)
    y = rng.normal(size=101)
    fit = y + rng.standard_t(1.5, size=101)
    expected = sm.calculate_residual_weights(y, fit)
    assert_allclose(robustness_weights(fit - y, y), expected, rtol=1e-14)
    # A median of zero: the exact fits weigh 1, the others 0.
    fit = y.copy()
    fit[:30] += 1.0
    expected = sm.calculate_residual_weights(y, fit)
    assert_allclose(robustness_weights(fit - y, y), expected)
    assert_allclose(expected, np.r_[np.zeros(30), np.ones(71)])


def test_weights_with_frequencies_and_outputs():
    rng = np.random.default_rng(1)
    r = rng.normal(size=(40, 2)) * [1.0, 10.0]
    y = rng.normal(size=(40, 2))
    w = rng.integers(0, 4, size=40).astype(float)
    rep = np.repeat(np.arange(40), w.astype(int))
    got = robustness_weights(r, y, w)
    R = np.abs(r[rep])
    u = np.max(R / (6 * np.median(R, axis=0)), axis=1)
    expected = np.where(u < 1, (1 - u**2) ** 2, 0.0)
    assert_allclose(got[rep], expected, rtol=1e-13)
    # Residuals at the rounding of the targets are exact fits.
    tiny = np.full(40, 1e-13)
    assert_allclose(robustness_weights(tiny, y[:, 0]), np.ones(40))


@pytest.mark.parametrize("it", [1, 2, 4])
def test_final_weights_are_those_of_the_last_refit(it):
    sm = pytest.importorskip("statsmodels.nonparametric._smoothers_lowess")
    rng = np.random.default_rng(2)
    x = np.sort(rng.uniform(0, 5, 120))
    y = np.cos(x) + 0.2 * rng.standard_t(2, 120)
    est = LocalLinearRegressor(kernel="tricube", span=0.4, robust_iterations=it)
    est.fit(x[:, None], y)
    # statsmodels' weights after it - 1 robust fits are those of the it-th.
    _, expected = sm.lowess(y, x, x, np.ones_like(x), 0.4, it - 1, 0.0, False)
    assert_allclose(est.robustness_weights_, expected, rtol=1e-9, atol=1e-12)
    assert_allclose(est.sample_weight_, est.robustness_weights_)


@pytest.mark.parametrize(
    "make",
    [
        lambda: NadarayaWatsonRegressor(kernel="biweight", bandwidth=0.6),
        lambda: LocalLinearRegressor(kernel="tricube", span=0.3),
        lambda: LocalPolynomialRegressor(degree=2, bandwidth=1.0),
    ],
    ids=["nw", "ll-span", "lp2"],
)
def test_outliers_lose_their_weight(make):
    rng = np.random.default_rng(3)
    x = np.sort(rng.uniform(0, 6, 200))
    truth = np.sin(x)
    y = truth + 0.1 * rng.normal(size=200)
    bad = rng.choice(200, 12, replace=False)
    y[bad] += rng.choice([-1, 1], 12) * 5.0
    plain = make().fit(x[:, None], y)
    robust = make().set_params(robust_iterations=3).fit(x[:, None], y)
    assert np.all(robust.robustness_weights_[bad] == 0.0)
    Q = np.linspace(0.5, 5.5, 50)[:, None]
    err_plain = np.mean((plain.predict(Q) - np.sin(Q[:, 0])) ** 2)
    err_robust = np.mean((robust.predict(Q) - np.sin(Q[:, 0])) ** 2)
    good = np.setdiff1d(np.arange(200), bad)
    clean = make().fit(x[good, None], y[good])
    err_clean = np.mean((clean.predict(Q) - np.sin(Q[:, 0])) ** 2)
    assert err_robust < 0.5 * err_plain
    assert err_robust < 1.5 * err_clean
    # Refitting without iterations forgets them.
    robust.set_params(robust_iterations=0).fit(x[:, None], y)
    assert not hasattr(robust, "robustness_weights_")
    assert robust.sample_weight_ is None


@pytest.mark.parametrize(
    "make",
    [
        lambda: NadarayaWatsonRegressor(bandwidth=0.5, robust_iterations=2),
        lambda: LocalLinearRegressor(span=0.3, kernel="tricube", robust_iterations=2),
    ],
    ids=["nw", "lowess"],
)
def test_integer_weights_repeat_rows(make):
    rng = np.random.default_rng(4)
    x = rng.uniform(0, 4, 50)
    y = np.sin(x) + 0.3 * rng.standard_t(2, 50)
    w = rng.integers(0, 4, 50).astype(float)
    rep = np.repeat(np.arange(50), w.astype(int))
    a = make().fit(x[:, None], y, sample_weight=w)
    b = make().fit(x[rep, None], y[rep])
    Q = np.linspace(0, 4, 30)[:, None]
    assert_allclose(a.predict(Q), b.predict(Q), rtol=1e-10, atol=1e-12)
    assert_allclose(
        a.robustness_weights_[rep], b.robustness_weights_, rtol=1e-10, atol=1e-14
    )


def test_several_outputs_share_the_weights():
    rng = np.random.default_rng(5)
    x = rng.uniform(0, 4, 80)
    Y = np.c_[np.sin(x), 100 * np.cos(x)] + rng.normal(size=(80, 2)) * [0.1, 10.0]
    Y[5, 0] += 10.0
    est = NadarayaWatsonRegressor(bandwidth=0.4, robust_iterations=1)
    est.fit(x[:, None], Y)
    first = NadarayaWatsonRegressor(bandwidth=0.4).fit(x[:, None], Y)
    r = Y - first.predict(x[:, None])
    assert_allclose(est.robustness_weights_, robustness_weights(r, Y))
    assert est.robustness_weights_[5] == 0.0
    assert est.predict(x[:3, None]).shape == (3, 2)
