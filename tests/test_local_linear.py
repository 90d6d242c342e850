"""Local linear regression against least squares, statsmodels and its fallback."""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.spatial.distance import cdist

from sknw import LocalLinearRegressor, NadarayaWatsonRegressor
from sknw.exceptions import EmptyWindowWarning, SingularDesignWarning
from sknw.kernels import KERNELS

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
    pytest.importorskip("statsmodels")
    from statsmodels.nonparametric.kernel_regression import KernelReg

    rng = np.random.default_rng(9)
    X = rng.normal(size=(80, d))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=80)
    Q = rng.normal(size=(25, d))
    bw = np.linspace(0.5, 0.8, d)
    sm = KernelReg(y, X, var_type="c" * d, reg_type="ll", bw=bw).fit(Q)[0]
    ours = LocalLinearRegressor(bandwidth=bw).fit(X, y).predict(Q)
    assert_allclose(ours, sm, rtol=1e-8)


def test_singular_designs_fall_back_to_local_constant_with_a_warning():
    X = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0], [3.0, 3.0], [10.0, 0.0]])
    y = np.array([0.0, 1.0, 4.0, 9.0, 5.0])
    kw = {"kernel": "epanechnikov", "bandwidth": 1.6}
    ll = LocalLinearRegressor(**kw).fit(X, y)
    nw = NadarayaWatsonRegressor(**kw).fit(X, y)
    # Collinear neighbours (on the diagonal), a single neighbour, and an empty
    # window (the empty-window policy, here the nearest point).
    Q = np.array([[1.5, 1.5], [10.0, 0.5], [6.0, -5.0]])
    with pytest.warns(SingularDesignWarning, match="3 of 3 queries"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", EmptyWindowWarning)
            got = ll.predict(Q)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_allclose(got, nw.predict(Q), rtol=1e-12)
    assert np.all(np.isfinite(got))


def test_multi_output_shapes_and_sorted_is_refused():
    rng = np.random.default_rng(3)
    X = rng.uniform(size=(600, 1))
    Y = np.column_stack([X[:, 0], 2 * X[:, 0] + 1])
    est = LocalLinearRegressor(kernel="epanechnikov", bandwidth=0.2).fit(X, Y)
    assert est.algorithm_ == "brute"  # "auto" never picks the sorted path here
    assert_allclose(est.predict(X[:5]), Y[:5], atol=1e-10)
    assert LocalLinearRegressor().fit(X, Y[:, :1]).predict(X[:3]).shape == (3, 1)
    with pytest.raises(ValueError, match="sorted"):
        LocalLinearRegressor(kernel="epanechnikov", algorithm="sorted").fit(X, Y)
