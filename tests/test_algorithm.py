"""The ``algorithm`` parameter: brute and tree give the same estimates."""

import pickle
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from sknw import (
    NadarayaWatsonClassifier,
    NadarayaWatsonRegressor,
    NadarayaWatsonRegressorCV,
)
from sknw.exceptions import EmptyWindowWarning


def _data(n=2000, m=400, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.column_stack([np.sin(X[:, 0]), X[:, 1] ** 2]) + 0.1 * rng.normal(size=(n, 2))
    return X, y, rng.normal(size=(m, d)) * 1.5


@pytest.mark.parametrize("policy", ["nearest", "mean", "nan"])
@pytest.mark.parametrize("kernel", ["epanechnikov", "boxcar", "cosine"])
def test_tree_equals_brute_with_empty_windows(kernel, policy):
    X, y, Q = _data()
    w = np.random.default_rng(1).uniform(0.0, 2.0, size=X.shape[0])
    kwargs = {"kernel": kernel, "bandwidth": [0.3, 0.4, 0.5], "empty_window": policy}
    brute = NadarayaWatsonRegressor(algorithm="brute", **kwargs).fit(X, y, w)
    tree = NadarayaWatsonRegressor(algorithm="tree", **kwargs).fit(X, y, w)
    assert brute.algorithm_ == "brute" and tree.algorithm_ == "tree"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", EmptyWindowWarning)
        expected = brute.predict(Q)
        got = tree.predict(Q)
    assert len(caught) == 2  # Q has far queries: both paths warn alike
    assert str(caught[0].message) == str(caught[1].message)
    assert_allclose(got, expected, rtol=1e-10, equal_nan=True)


def test_auto_picks_the_tree_for_small_windows_only():
    X, y, _ = _data()
    small = NadarayaWatsonRegressor(kernel="epanechnikov", bandwidth=0.2).fit(X, y)
    wide = NadarayaWatsonRegressor(kernel="epanechnikov", bandwidth=3.0).fit(X, y)
    gauss = NadarayaWatsonRegressor(bandwidth=0.2).fit(X, y)
    cosine = NadarayaWatsonRegressor(
        kernel="epanechnikov", bandwidth=0.01, metric="cosine"
    ).fit(X, y)
    few = NadarayaWatsonRegressor(kernel="epanechnikov", bandwidth=0.2).fit(
        X[:100], y[:100]
    )
    assert small.algorithm_ == "tree"
    assert wide.algorithm_ == "brute"
    assert gauss.algorithm_ == "brute"
    assert cosine.algorithm_ == "brute"
    assert few.algorithm_ == "brute"


def test_tree_errors_for_unsupported_kernel_or_metric():
    X, y, _ = _data(n=50)
    with pytest.raises(ValueError, match="finite support"):
        NadarayaWatsonRegressor(algorithm="tree").fit(X, y)
    with pytest.raises(ValueError, match="KD-tree"):
        NadarayaWatsonRegressor(kernel="boxcar", metric="cosine", algorithm="tree").fit(
            X, y
        )


def test_tree_classifier_cv_and_pickle():
    X, y, Q = _data(seed=2)
    labels = np.where(y[:, 0] > 0, "pos", "neg")
    kwargs = {"kernel": "triangular", "bandwidth": 0.5}
    brute = NadarayaWatsonClassifier(algorithm="brute", **kwargs).fit(X, labels)
    tree = NadarayaWatsonClassifier(algorithm="tree", **kwargs).fit(X, labels)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyWindowWarning)
        assert_allclose(tree.predict_proba(Q), brute.predict_proba(Q), atol=1e-12)
        restored = pickle.loads(pickle.dumps(tree))
        assert_array_equal(restored.predict_proba(Q), tree.predict_proba(Q))
        cv = NadarayaWatsonRegressorCV(
            kernels="epanechnikov", bandwidths=[0.2, 0.3], algorithm="tree"
        ).fit(X, y)
        assert cv.algorithm_ == "tree"
        plain = NadarayaWatsonRegressor(
            kernel="epanechnikov", bandwidth=cv.bandwidth_, algorithm="brute"
        ).fit(X, y)
        assert_allclose(cv.predict(Q), plain.predict(Q), rtol=1e-10)
        par = NadarayaWatsonRegressor(algorithm="tree", n_jobs=2, **kwargs).fit(X, y)
        ser = NadarayaWatsonRegressor(algorithm="tree", **kwargs).fit(X, y)
        Q2 = np.vstack([Q] * 3)
        assert_allclose(par.predict(Q2), ser.predict(Q2), rtol=1e-13)


POLYNOMIAL_KERNELS = [
    "boxcar",
    "triangular",
    "epanechnikov",
    "biweight",
    "triweight",
    "tricube",
]


@pytest.mark.parametrize("kernel", POLYNOMIAL_KERNELS)
@pytest.mark.parametrize("bandwidth", [0.05, 0.7, [2.5]])
def test_sorted_equals_brute_in_one_dimension(kernel, bandwidth):
    rng = np.random.default_rng(3)
    X = np.r_[rng.normal(size=(700, 1)) * 3 + 1e3, np.arange(40.0)[:, None] + 1e3]
    y = np.column_stack([np.sin(X[:, 0]), np.cos(X[:, 0]) + 5.0])
    w = rng.uniform(0.0, 2.0, size=X.shape[0])
    w[::9] = 0.0
    # Queries inside, far outside, and half and 3.3 bandwidths from grid
    # points. (At exactly one bandwidth from a point, u = 1 up to rounding, and
    # paths that compute u differently may count such an edge point in or out;
    # with h = 2.5, three bandwidths from one grid point is one from another.)
    h = float(np.ravel(bandwidth)[0])
    grid = np.arange(40.0)[:, None] + 1e3
    Q = np.r_[
        rng.normal(size=(300, 1)) * 4 + 1e3,
        [[1e3 + 200.0]],
        grid + 0.5 * h,
        grid + 3.3 * h,
    ]
    kwargs = {"kernel": kernel, "bandwidth": bandwidth, "empty_window": "nan"}
    brute = NadarayaWatsonRegressor(algorithm="brute", **kwargs).fit(X, y, w)
    fast = NadarayaWatsonRegressor(algorithm="auto", **kwargs).fit(X, y, w)
    assert fast.algorithm_ == "sorted"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyWindowWarning)
        expected, got = brute.predict(Q), fast.predict(Q)
    assert_array_equal(np.isnan(got), np.isnan(expected))
    # Where the moment expansion would cancel (windows holding only points
    # near their edge, worst for high-degree kernels), the sorted path sums
    # the window's terms instead.
    assert_allclose(got, expected, rtol=1e-10, atol=1e-12, equal_nan=True)


def test_sorted_classifier_and_errors():
    rng = np.random.default_rng(4)
    X = rng.uniform(0, 10, size=(800, 1))
    labels = np.where(np.sin(X[:, 0]) > 0, "a", "b")
    kwargs = {"kernel": "tricube", "bandwidth": 0.3}
    fast = NadarayaWatsonClassifier(algorithm="sorted", **kwargs).fit(X, labels)
    brute = NadarayaWatsonClassifier(algorithm="brute", **kwargs).fit(X, labels)
    Q = rng.uniform(0, 10, size=(200, 1))
    assert_allclose(fast.predict_proba(Q), brute.predict_proba(Q), atol=1e-12)
    restored = pickle.loads(pickle.dumps(fast))
    assert_array_equal(restored.predict_proba(Q), fast.predict_proba(Q))
    with pytest.raises(ValueError, match="polynomial"):
        NadarayaWatsonRegressor(kernel="cosine", algorithm="sorted").fit(X, X[:, 0])
    with pytest.raises(ValueError, match="one feature"):
        NadarayaWatsonRegressor(kernel="boxcar", algorithm="sorted").fit(
            np.hstack([X, X]), X[:, 0]
        )
    # 1-D, polynomial kernel, few points: brute; many points: sorted.
    few = NadarayaWatsonRegressor(kernel="boxcar", bandwidth=1.0).fit(X[:50], X[:50, 0])
    assert few.algorithm_ == "brute"
    many = NadarayaWatsonRegressor(kernel="boxcar", bandwidth=1.0).fit(X, X[:, 0])
    assert many.algorithm_ == "sorted"
    par = NadarayaWatsonRegressor(kernel="boxcar", bandwidth=1.0, n_jobs=2)
    Q2 = rng.uniform(0, 10, size=(1000, 1))
    assert_allclose(par.fit(X, X[:, 0]).predict(Q2), many.predict(Q2), rtol=1e-13)
