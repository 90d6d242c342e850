"""Gradients: the local-constant derivative against central differences of
the estimate, the local linear slopes against weighted least squares and
statsmodels' marginal effects, and the policies around them."""

import warnings

import numpy as np
import pandas as pd
import pytest
from _expected_warnings import warns_about
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from sknw import (
    LocalLinearRegressor,
    LocalLinearRegressorCV,
    LocalPolynomialRegressor,
    NadarayaWatsonRegressor,
    NadarayaWatsonRegressorCV,
)
from sknw._base import BATCH_ROWS
from sknw._local.gradient import SlopeKernel, quadratic_form
from sknw.exceptions import EmptyWindowWarning, SingularDesignWarning
from sknw.kernels import KERNELS, Gaussian, Kernel

SMOOTH = [
    "gaussian",
    "biweight",
    "triweight",
    "tricube",
    "cauchy",
    "logistic",
    "sigmoid",
    "silverman",
    "laplacian",
    "epanechnikov",
    "cosine",
]


def central_differences(est, Q, h=1e-5):
    """(m, [k,] d) central differences of ``est.predict`` with step ``h``
    (relative to each feature's spread of the queries)."""
    d = Q.shape[1]
    out = []
    for f in range(d):
        e = np.zeros(d)
        e[f] = h
        out.append((est.predict(Q + e) - est.predict(Q - e)) / (2 * h))
    return np.stack(out, axis=-1)


def _data(seed, n, d, k=1):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, d))
    y = np.sin(3 * X).sum(axis=1)[:, None] * np.arange(1, k + 1) + 0.1 * rng.normal(
        size=(n, k)
    )
    Q = rng.uniform(0.05, 0.95, size=(6, d))
    return X, y[:, 0] if k == 1 else y, Q, rng.uniform(0.5, 2.0, size=n)


@pytest.mark.parametrize("kernel", SMOOTH)
@pytest.mark.parametrize(
    "d, metric, bandwidth, params",
    [
        (1, "euclidean", 0.3, None),
        (3, "euclidean", 0.5, None),
        (3, "euclidean", [0.4, 0.5, 0.6], None),
        (3, "sqeuclidean", 0.25, None),
        (3, "seuclidean", 1.5, None),
        (3, "mahalanobis", 1.5, None),
        (3, "minkowski", 0.5, {"p": 2, "w": [1.0, 2.0, 0.5]}),
    ],
)
def test_local_constant_gradient_is_the_derivative_of_the_estimate(
    kernel, d, metric, bandwidth, params
):
    X, y, Q, w = _data(0, 300, d)
    est = NadarayaWatsonRegressor(
        kernel=kernel, bandwidth=bandwidth, metric=metric, metric_params=params
    ).fit(X, y, sample_weight=w)
    g = est.gradient(Q)
    assert g.shape == (6, d)
    num = central_differences(est, Q)
    assert_allclose(g, num, rtol=0, atol=1e-6 * np.abs(num).max())


def test_several_outputs_and_a_per_feature_bandwidth():
    X, y, Q, _ = _data(1, 200, 2, k=3)
    est = NadarayaWatsonRegressor(bandwidth=[0.2, 0.4]).fit(X, y)
    g = est.gradient(Q)
    assert g.shape == (6, 3, 2)
    assert_allclose(g, central_differences(est, Q), atol=1e-7 * np.abs(g).max())
    single = NadarayaWatsonRegressor(bandwidth=[0.2, 0.4]).fit(X, y[:, 1])
    assert_allclose(single.gradient(Q), g[:, 1, :], rtol=1e-12, atol=1e-14)


def test_gradient_far_from_the_origin_and_at_small_bandwidths():
    # Data at 1e6 spread over 1: the sums are taken about each query's cell.
    X, y, Q, _ = _data(2, 300, 2)
    est = NadarayaWatsonRegressor(bandwidth=0.05).fit(X + 1e6, y)
    ref = NadarayaWatsonRegressor(bandwidth=0.05).fit(X, y)
    assert_allclose(est.gradient(Q + 1e6), ref.gradient(Q), rtol=1e-6, atol=1e-6)


class Quartic(Kernel):
    support = 1.0

    def __call__(self, u):
        u = np.asarray(u, dtype=float)
        return np.where(u <= 1, (1 - u * u) ** 2, 0.0)

    def derivative(self, u):
        u = np.asarray(u, dtype=float)
        return np.where(u <= 1, -4 * u * (1 - u * u), 0.0)


def test_a_user_kernel_with_a_derivative():
    X, y, Q, _ = _data(3, 200, 2)
    user = NadarayaWatsonRegressor(kernel=Quartic(), bandwidth=0.4).fit(X, y)
    built_in = NadarayaWatsonRegressor(kernel="biweight", bandwidth=0.4).fit(X, y)
    assert_allclose(user.gradient(Q), built_in.gradient(Q), rtol=1e-12, atol=1e-13)


def test_a_user_kernel_without_a_derivative_is_refused():
    class Bump(Kernel):
        def __call__(self, u):
            return np.exp(-(np.asarray(u, float) ** 4))

    X, y, Q, _ = _data(4, 50, 1)
    est = NadarayaWatsonRegressor(kernel=Bump(), bandwidth=0.3).fit(X, y)
    with pytest.raises(NotImplementedError, match="derivative"):
        est.gradient(Q)


@pytest.mark.parametrize("metric", ["cityblock", "chebyshev"])
def test_metrics_that_are_not_quadratic_forms_are_refused(metric):
    X, y, Q, _ = _data(5, 50, 2)
    est = NadarayaWatsonRegressor(bandwidth=0.3, metric=metric).fit(X, y)
    with pytest.raises(ValueError, match="quadratic form"):
        est.gradient(Q)
    est = NadarayaWatsonRegressor(
        bandwidth=0.3, metric="minkowski", metric_params={"p": 3}
    ).fit(X, y)
    with pytest.raises(ValueError, match="p=2"):
        est.gradient(Q)


def test_step_kernels_give_zero():
    X, y, Q, _ = _data(6, 100, 2)
    for kernel in ("boxcar", "constant"):
        est = NadarayaWatsonRegressor(kernel=kernel, bandwidth=0.5).fit(X, y)
        assert np.array_equal(est.gradient(Q), np.zeros((6, 2)))


def test_a_query_on_a_training_point_with_a_kink_there():
    # The triangular kernel: the point's own term contributes 0, the mean of
    # its one-sided derivatives.
    X = np.array([[0.0], [0.3], [1.0]])
    y = np.array([0.0, 1.0, 5.0])
    est = NadarayaWatsonRegressor(kernel="triangular", bandwidth=1.5).fit(X, y)
    g = est.gradient([[0.3]])[0, 0]
    h = 1e-7
    left = (est.predict([[0.3]]) - est.predict([[0.3 - h]]))[0] / h
    right = (est.predict([[0.3 + h]]) - est.predict([[0.3]]))[0] / h
    assert np.isfinite(g)
    assert_allclose(g, (left + right) / 2, rtol=1e-6)


@pytest.mark.parametrize(
    "policy, expected", [("nearest", 0.0), ("mean", 0.0), ("nan", np.nan)]
)
def test_empty_windows_follow_the_policy(policy, expected):
    X, y, _, _ = _data(7, 60, 1)
    est = NadarayaWatsonRegressor(
        kernel="epanechnikov", bandwidth=0.1, empty_window=policy
    ).fit(X, y)
    Q = np.array([[0.5], [3.0]])
    with warns_about(EmptyWindowWarning, 1, 2):
        g = est.gradient(Q)
    assert_allclose(g[1], [expected])
    assert np.isfinite(g[0, 0]) and g[0, 0] != 0


def test_empty_windows_raise_with_the_raise_policy():
    X, y, _, _ = _data(7, 60, 1)
    est = NadarayaWatsonRegressor(
        kernel="epanechnikov", bandwidth=0.1, empty_window="raise"
    ).fit(X, y)
    with pytest.raises(ValueError, match="empty window"):
        est.gradient([[3.0]])


def _wls_slopes(X, y, Q, bandwidth, w=None, factors=None):
    """Slopes of the kernel-weighted least-squares hyperplane at each query,
    by numpy's lstsq: (m, k, d)."""
    y = y.reshape(len(y), -1)
    b = np.broadcast_to(np.asarray(bandwidth, float), (X.shape[1],))
    out = []
    for i, q in enumerate(Q):
        u = np.sqrt((((X - q) / b) ** 2).sum(axis=1))
        k = Gaussian()(u) * (1.0 if w is None else w)
        if factors is not None:
            k = k * factors[i]
        D = np.hstack([np.ones((len(X), 1)), X - q]) * np.sqrt(k)[:, None]
        beta = np.linalg.lstsq(D, y * np.sqrt(k)[:, None], rcond=None)[0]
        out.append(beta[1:].T)
    return np.array(out)


@pytest.mark.parametrize("d, k", [(1, 1), (2, 1), (3, 2)])
def test_local_linear_slopes_are_those_of_weighted_least_squares(d, k):
    X, y, Q, w = _data(8, 250, d, k)
    bw = np.linspace(0.3, 0.5, d)
    est = LocalLinearRegressor(bandwidth=bw).fit(X, y, sample_weight=w)
    g = est.gradient(Q)
    ref = _wls_slopes(X, y, Q, bw, w=w)
    assert g.shape == ((6, d) if k == 1 else (6, k, d))
    assert_allclose(g.reshape(ref.shape), ref, rtol=1e-9, atol=1e-10)


def test_local_linear_slopes_reproduce_a_hyperplane_everywhere():
    rng = np.random.default_rng(9)
    X = rng.uniform(size=(80, 2))
    y = 3.0 * X[:, 0] - 2.0 * X[:, 1] + 1.0
    Q = np.array([[0.0, 0.0], [1.0, 1.0], [0.5, 0.5], [3.0, -2.0]])
    est = LocalLinearRegressor(
        kernel="epanechnikov", bandwidth=0.4, max_leverage=None
    ).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyWindowWarning)
        g = est.gradient(Q[:3])
    assert_allclose(g, np.tile([3.0, -2.0], (3, 1)), rtol=1e-10)
    far = LocalLinearRegressor(bandwidth=0.4, max_leverage=None).fit(X, y)
    assert_allclose(far.gradient(Q), np.tile([3.0, -2.0], (4, 1)), rtol=1e-9)


def test_local_linear_ridged_slopes_are_those_of_the_ridged_estimate():
    # Far beyond the data, the ridge shrinks the slope; the estimate is the
    # intercept of that slope's hyperplane, so that the two agree.
    rng = np.random.default_rng(10)
    X = rng.uniform(size=(60, 1))
    y = np.sin(4 * X[:, 0])
    est = LocalLinearRegressor(bandwidth=0.1, max_leverage=4.0).fit(X, y)
    with pytest.warns(Warning):
        g = est.gradient([[1.6]])
    plain = LocalLinearRegressor(bandwidth=0.1, max_leverage=None).fit(X, y)
    assert abs(g[0, 0]) < abs(plain.gradient([[1.6]])[0, 0])


def test_singular_local_designs_take_the_local_constant_gradient():
    X = np.array([[0.0], [0.0], [1.0], [2.0]])
    y = np.array([1.0, 2.0, 4.0, 0.0])
    ll = LocalLinearRegressor(kernel="epanechnikov", bandwidth=0.6).fit(X, y)
    nw = NadarayaWatsonRegressor(kernel="epanechnikov", bandwidth=0.6).fit(X, y)
    Q = np.array([[0.1], [1.5]])
    with pytest.warns(SingularDesignWarning):
        g = ll.gradient(Q)
    assert_allclose(g[0], nw.gradient(Q[:1])[0], rtol=1e-12)
    assert_allclose(g[1], [-4.0], rtol=1e-10)  # the line through (1, 4), (2, 0)


@pytest.mark.parametrize("d", [1, 2])
def test_local_linear_slopes_equal_statsmodels_marginal_effects(d):
    sm = pytest.importorskip("statsmodels.api")
    X, y, Q, _ = _data(11, 150, d)
    bw = np.linspace(0.2, 0.3, d)
    est = LocalLinearRegressor(bandwidth=bw).fit(X, y)
    with warnings.catch_warnings():  # statsmodels' own deprecations
        warnings.simplefilter("ignore")
        kr = sm.nonparametric.KernelReg(y, X, var_type="c" * d, reg_type="ll", bw=bw)
        mean, mfx = kr.fit(Q)
    assert_allclose(est.predict(Q), mean, rtol=1e-10)
    assert_allclose(est.gradient(Q), mfx.reshape(6, d), rtol=1e-8, atol=1e-10)


def test_discrete_features_give_nan_columns():
    rng = np.random.default_rng(12)
    n = 200
    frame = pd.DataFrame(
        {
            "x": rng.uniform(size=n),
            "g": pd.Categorical(rng.choice(["a", "b", "c"], size=n)),
            "z": rng.uniform(size=n),
        }
    )
    y = np.sin(3 * frame["x"]) + (frame["g"] == "b") + frame["z"] ** 2
    Q = frame.iloc[:5].copy()
    bw = [0.3, 0.2, 0.4]
    nw = NadarayaWatsonRegressor(bandwidth=bw).fit(frame, y)
    g = nw.gradient(Q)
    assert g.shape == (5, 3)
    assert np.isnan(g[:, 1]).all() and np.isfinite(g[:, [0, 2]]).all()
    for j, col in ((0, "x"), (2, "z")):
        up, down = Q.copy(), Q.copy()
        up[col] += 1e-6
        down[col] -= 1e-6
        num = (nw.predict(up) - nw.predict(down)) / 2e-6
        assert_allclose(g[:, j], num, rtol=1e-5, atol=1e-7)
    # Local linear: the slopes of the least squares with the product kernel.
    ll = LocalLinearRegressor(bandwidth=bw).fit(frame, y)
    codes = frame["g"].cat.codes.to_numpy()
    factors = np.where(codes[None, :] == codes[:5, None], 1 - 0.2, 0.2 / 2)
    Xc = frame[["x", "z"]].to_numpy()
    ref = _wls_slopes(Xc, y.to_numpy(), Xc[:5], [0.3, 0.4], factors=factors)
    assert_allclose(ll.gradient(Q)[:, [0, 2]], ref[:, 0, :], rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("make", [NadarayaWatsonRegressorCV, LocalLinearRegressorCV])
def test_cv_estimators_give_the_gradient_of_their_choice(make):
    X, y, Q, _ = _data(13, 120, 2)
    cv = make(bandwidths=6).fit(X, y)
    plain = (
        LocalLinearRegressor
        if make is LocalLinearRegressorCV
        else NadarayaWatsonRegressor
    )(kernel=cv.kernel_, bandwidth=cv.bandwidth_).fit(X, y)
    assert_allclose(cv.gradient(Q), plain.gradient(Q), rtol=1e-9, atol=1e-12)


def test_gradients_are_memory_bounded_by_batches():
    X, y, _, _ = _data(14, 100, 1)
    est = NadarayaWatsonRegressor(bandwidth=0.2).fit(X, y)
    Q = np.linspace(0, 1, 50).reshape(-1, 1)
    whole = est.gradient(Q)
    with BATCH_ROWS.set(7):
        assert_allclose(est.gradient(Q), whole, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_slope_kernels_match_the_derivatives(name):
    kernel = KERNELS[name]()
    u = np.array([0.0, 1e-3, 0.2, 0.7, 0.99, 1.0, 1.5, 20.0])
    for power in (1, 2):
        slope = SlopeKernel(kernel, power)
        with np.errstate(divide="ignore", invalid="ignore"):
            want = -kernel.derivative(u) * (2.0 if power == 1 else 1.0 / u)
        if power == 2:
            want[0] = 0.0
        assert_allclose(slope(u), want, rtol=1e-12, atol=1e-300)
        with np.errstate(divide="ignore"):
            log = np.log(np.abs(want))
            assert_allclose(slope.log_value(u), log, rtol=1e-9, atol=1e-15)


def test_quadratic_forms():
    P, a = quadratic_form("euclidean", {}, np.array([2.0, 4.0]), 0.5, 2)
    assert a == 2
    assert_allclose(P, np.diag([1 / (4 * 0.25), 1 / (16 * 0.25)]))
    P, a = quadratic_form("sqeuclidean", {}, None, 0.5, 2)
    assert a == 1
    assert_allclose(P, np.eye(2) / 0.5)


def test_local_linear_empty_windows_warn_once():
    X, y, _, _ = _data(7, 60, 1)
    est = LocalLinearRegressor(
        kernel="epanechnikov", bandwidth=0.1, empty_window="nan"
    ).fit(X, y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        g = est.gradient([[0.5], [3.0]])
    assert np.isnan(g[1, 0]) and np.isfinite(g[0, 0])
    assert sum(issubclass(c.category, EmptyWindowWarning) for c in caught) == 1


def test_signed_kernels_beyond_the_data():
    # The Silverman kernel's sums are negative beyond the data.
    rng = np.random.default_rng(15)
    X = rng.uniform(size=(200, 1))
    y = np.sin(3 * X[:, 0])
    est = NadarayaWatsonRegressor(kernel="silverman", bandwidth=0.1).fit(X, y)
    Q = np.array([[1.5], [1.2], [0.5]])
    num = central_differences(est, Q, h=1e-6)
    assert_allclose(est.gradient(Q), num, rtol=1e-5)


@pytest.mark.parametrize("kernel", ["laplacian", "logistic", "cauchy"])
def test_sqeuclidean_tails_do_not_underflow(kernel):
    rng = np.random.default_rng(16)
    X = rng.uniform(size=(100, 1))
    y = np.sin(3 * X[:, 0])
    est = NadarayaWatsonRegressor(kernel=kernel, bandwidth=0.01, metric="sqeuclidean")
    est.fit(X, y)
    Q = np.array([[6.0], [3.0]])
    num = central_differences(est, Q, h=1e-6)
    assert np.all(num != 0)
    assert_allclose(est.gradient(Q), num, rtol=1e-5)


def test_discrete_features_only_give_nan():
    frame = pd.DataFrame({"g": pd.Categorical(list("abcabcab"))})
    y = np.arange(8.0)
    est = NadarayaWatsonRegressor(bandwidth=[0.3]).fit(frame, y)
    assert np.isnan(est.gradient(frame)).all()
    assert est.gradient(frame).shape == (8, 1)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    make=st.sampled_from(["nw", "ll", "lp"]),
    kernel=st.sampled_from(["gaussian", "biweight", "cauchy"]),
    d=st.integers(1, 2),
    a=st.floats(-5, 5).filter(lambda a: abs(a) > 0.1),
    c=st.floats(-1e3, 1e3),
    shift=st.floats(-1e3, 1e3),
)
def test_gradients_follow_affine_changes_of_the_data(
    seed, make, kernel, d, a, c, shift
):
    # The derivative of the estimate of a y + c at x + shift is a times that of
    # y at x, and the estimators' rounding does not depend on the origin.
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(60, d))
    y = np.sin(3 * X).sum(axis=1) + 0.1 * rng.normal(size=60)
    Q = rng.uniform(0.1, 0.9, size=(5, d))
    build = {
        "nw": lambda: NadarayaWatsonRegressor(kernel=kernel, bandwidth=0.4),
        "ll": lambda: LocalLinearRegressor(kernel=kernel, bandwidth=0.4),
        "lp": lambda: LocalPolynomialRegressor(kernel=kernel, bandwidth=0.5),
    }[make]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = build().fit(X, y).gradient(Q)
        moved = build().fit(X + shift, a * y + c).gradient(Q + shift)
    scale = np.abs(g).max() + 1.0
    assert_allclose(moved, a * g, rtol=1e-6, atol=1e-6 * abs(a) * scale)
