"""Agreement with independent implementations of the same estimates.

* statsmodels' local-constant kernel regression (product Gaussian kernel);
* the formulas of the Dive into Deep Learning chapter "Attention Pooling by
  Similarity", written out in numpy below;
* scikit-learn's nearest-neighbour and radius-neighbour estimators, the limits
  and special cases of Nadaraya--Watson estimation;
* scikit-learn's kernel density estimate: the Nadaraya--Watson estimate is the
  ratio of two weighted kernel density estimates.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.spatial.distance import cdist
from sklearn.neighbors import (
    KernelDensity,
    KNeighborsClassifier,
    KNeighborsRegressor,
    RadiusNeighborsClassifier,
    RadiusNeighborsRegressor,
)
from statsmodels.nonparametric.kernel_regression import KernelReg

from sknw import NadarayaWatsonClassifier, NadarayaWatsonRegressor
from sknw.datasets import make_d2l_sine

# -- statsmodels -------------------------------------------------------------------


@pytest.mark.parametrize(
    "d, bandwidth",
    [(1, [0.25]), (1, [1.3]), (3, [0.4, 0.9, 2.0]), (3, [1.5, 0.2, 0.7])],
)
def test_statsmodels_local_constant_regression(d, bandwidth):
    # statsmodels multiplies one Gaussian per feature, each with its own
    # bandwidth: sknw's Gaussian with a per-feature bandwidth and the euclidean
    # metric, exp(-|x / h - q / h|**2 / 2).
    rng = np.random.default_rng(d)
    X = rng.uniform(0.0, 5.0, size=(60, d))
    y = np.sin(X).sum(axis=1) + X[:, 0] + rng.normal(scale=0.3, size=60)
    Q = np.vstack([rng.uniform(0.0, 5.0, size=(25, d)), X[:5]])
    h = np.array(bandwidth)
    kr = KernelReg(endog=y, exog=X, var_type="c" * d, reg_type="lc", bw=h, rng=0)
    assert_array_equal(kr.bw, h)
    expected = kr.fit(Q)[0]
    reg = NadarayaWatsonRegressor(bandwidth=h).fit(X, y)
    assert_allclose(reg.predict(Q), expected, rtol=1e-10)
    if d == 1:
        scalar = NadarayaWatsonRegressor(bandwidth=float(h[0])).fit(X, y)
        assert_allclose(scalar.predict(Q), expected, rtol=1e-10)


# -- the d2l chapter's formulas ----------------------------------------------------


def gaussian(x):
    return np.exp(-(x**2) / 2)


def boxcar(x):
    return np.abs(x) < 1.0


def constant(x):
    return 1.0 + 0 * x


def epanechikov(x):
    # The chapter's name; it is the triangular kernel.
    return np.maximum(1 - np.abs(x), np.zeros_like(x))


def nadaraya_watson(x_train, y_train, x_val, kernel):
    dists = x_val[:, None] - x_train[None, :]
    k = kernel(dists).astype(np.float64)
    attention_w = k / k.sum(axis=1, keepdims=True)
    y_hat = attention_w @ y_train
    return y_hat, attention_w


D2L_KERNELS = [
    (gaussian, "gaussian"),
    (boxcar, "boxcar"),
    (constant, "constant"),
    (epanechikov, "triangular"),
]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(
    "d2l_kernel, name", D2L_KERNELS, ids=[n for _, n in D2L_KERNELS]
)
def test_d2l_kernels_at_unit_bandwidth(d2l_kernel, name, seed):
    X, y, X_val, _ = make_d2l_sine(random_state=seed)
    x_train, x_val = X[:, 0], X_val[:, 0]
    dists = np.abs(x_val[:, None] - x_train[None, :])
    # Every window is non-empty and no distance sits on the boxcar's edge.
    assert np.all(dists.min(axis=1) < 1.0)
    assert np.min(np.abs(dists - 1.0)) > 1e-9
    y_hat, attention_w = nadaraya_watson(x_train, y, x_val, d2l_kernel)
    reg = NadarayaWatsonRegressor(kernel=name, bandwidth=1.0).fit(X, y)
    assert_allclose(reg.predict(X_val), y_hat, rtol=1e-12)
    assert_allclose(reg.attention_weights(X_val), attention_w, rtol=1e-12, atol=1e-16)


@pytest.mark.parametrize("width", [0.1, 0.2, 0.5, 1.0, 2.5])
def test_d2l_gaussian_with_width(width):
    X, y, X_val, _ = make_d2l_sine(random_state=3)

    def gaussian_with_width(x):
        return gaussian(x / width)

    y_hat, attention_w = nadaraya_watson(X[:, 0], y, X_val[:, 0], gaussian_with_width)
    reg = NadarayaWatsonRegressor(bandwidth=width).fit(X, y)
    assert_allclose(reg.predict(X_val), y_hat, rtol=1e-12)
    assert_allclose(reg.attention_weights(X_val), attention_w, rtol=1e-12, atol=1e-300)


# -- scikit-learn's neighbours --------------------------------------------------------


def random_data(d, n=40, m=30, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.sin(2 * X[:, 0]) + X[:, -1] ** 2
    labels = np.array(["x", "y", "z"])[np.digitize(y, [0.3, 1.2])]
    Q = rng.normal(size=(m, d)) * 1.2
    return X, y, labels, Q


NEIGHBOUR_METRICS = [
    ("euclidean", None, {}),
    ("cityblock", None, {}),
    ("chebyshev", None, {}),
    ("minkowski", {"p": 3}, {"p": 3}),
]


def sorted_distances(Q, X, metric, params):
    return np.sort(cdist(Q, X, metric, **(params or {})), axis=1)


@pytest.mark.parametrize("metric, params, sk_params", NEIGHBOUR_METRICS)
@pytest.mark.parametrize("kernel", ["gaussian", "laplacian", "logistic"])
@pytest.mark.parametrize("d", [1, 3])
def test_one_nearest_neighbour_is_a_tiny_bandwidth(
    d, kernel, metric, params, sk_params
):
    X, y, labels, Q = random_data(d)
    D = sorted_distances(Q, X, metric, params)
    assert np.all(D[:, 1] - D[:, 0] > 1e-6)  # distinct nearest points
    h = 1e-9 * float(D[:, 0].min() + 1e-3)
    knn = KNeighborsRegressor(n_neighbors=1, metric=metric, **sk_params).fit(X, y)
    reg = NadarayaWatsonRegressor(
        kernel=kernel, bandwidth=h, metric=metric, metric_params=params
    ).fit(X, y)
    assert_allclose(reg.predict(Q), knn.predict(Q), rtol=1e-13)
    knc = KNeighborsClassifier(n_neighbors=1, metric=metric, **sk_params)
    clf = NadarayaWatsonClassifier(
        kernel=kernel, bandwidth=h, metric=metric, metric_params=params
    )
    assert_allclose(
        clf.fit(X, labels).predict_proba(Q),
        knc.fit(X, labels).predict_proba(Q),
        rtol=1e-13,
    )


def between_kth_and_next(D, k):
    """Radii strictly between the k-th and (k+1)-th smallest distances."""
    gap = D[:, k] - D[:, k - 1]
    assert np.all(gap > 1e-6 * D[:, k])
    return 0.5 * (D[:, k - 1] + D[:, k])


@pytest.mark.parametrize("metric, params, sk_params", NEIGHBOUR_METRICS[:3])
@pytest.mark.parametrize("k", [3, 7])
def test_k_nearest_neighbours_are_a_boxcar_of_per_query_radius(
    k, metric, params, sk_params
):
    # A boxcar whose radius lies between the k-th and (k+1)-th distances of a
    # query holds exactly its k nearest neighbours: their plain average.
    X, y, labels, Q = random_data(2, m=12, seed=k)
    radii = between_kth_and_next(sorted_distances(Q, X, metric, params), k)
    knn = KNeighborsRegressor(n_neighbors=k, metric=metric, **sk_params).fit(X, y)
    knc = KNeighborsClassifier(n_neighbors=k, metric=metric, **sk_params)
    knc.fit(X, labels)
    for q, r in zip(Q, radii, strict=True):
        params_q = {"kernel": "boxcar", "bandwidth": r, "metric": metric}
        reg = NadarayaWatsonRegressor(**params_q).fit(X, y)
        clf = NadarayaWatsonClassifier(**params_q).fit(X, labels)
        assert_allclose(reg.predict([q]), knn.predict([q]), rtol=1e-12)
        assert_allclose(clf.predict_proba([q]), knc.predict_proba([q]), rtol=1e-12)


def radius_problem(d, h, metric, seed):
    """Data and queries with non-empty windows and no distance equal to ``h``.

    scikit-learn's radius neighbours include points at distance exactly ``h``
    (``<=``); sknw's boxcar excludes them (``u < 1``). The two agree only when
    no distance sits on the radius, which is checked here.
    """
    X, y, labels, Q = random_data(d, n=60, m=60, seed=seed)
    D = cdist(Q, X, metric)
    assert np.min(np.abs(D - h)) > 1e-9 * h
    keep = D.min(axis=1) < h
    assert keep.sum() >= 5
    return X, y, labels, Q[keep]


@pytest.mark.parametrize("metric", ["euclidean", "cityblock", "chebyshev"])
@pytest.mark.parametrize("h", [0.5, 1.0, 2.5])
@pytest.mark.parametrize("d", [1, 3])
def test_radius_neighbours_regressor_is_the_boxcar(d, h, metric):
    X, y, _, Q = radius_problem(d, h, metric, seed=4)
    rnr = RadiusNeighborsRegressor(radius=h, weights="uniform", metric=metric)
    expected = rnr.fit(X, y).predict(Q)
    reg = NadarayaWatsonRegressor(kernel="boxcar", bandwidth=h, metric=metric)
    assert_allclose(reg.fit(X, y).predict(Q), expected, rtol=1e-12)


@pytest.mark.parametrize("metric", ["euclidean", "cityblock", "chebyshev"])
@pytest.mark.parametrize("h", [0.5, 1.0, 2.5])
@pytest.mark.parametrize("d", [1, 3])
def test_radius_neighbours_classifier_is_the_boxcar(d, h, metric):
    X, _, labels, Q = radius_problem(d, h, metric, seed=5)
    rnc = RadiusNeighborsClassifier(radius=h, weights="uniform", metric=metric)
    expected = rnc.fit(X, labels).predict_proba(Q)
    clf = NadarayaWatsonClassifier(kernel="boxcar", bandwidth=h, metric=metric)
    clf.fit(X, labels)
    assert_array_equal(clf.classes_, rnc.classes_)
    assert_allclose(clf.predict_proba(Q), expected, rtol=1e-12, atol=1e-15)
    assert_array_equal(clf.predict(Q), rnc.predict(Q))


# -- scikit-learn's kernel density estimate --------------------------------------------

KDE_KERNELS = [
    ("gaussian", "gaussian"),
    ("tophat", "boxcar"),
    ("epanechnikov", "epanechnikov"),
    ("exponential", "laplacian"),
    ("linear", "triangular"),
    ("cosine", "cosine"),
]


@pytest.mark.parametrize("h", [0.4, 1.5])
@pytest.mark.parametrize(
    "sk_kernel, kernel", KDE_KERNELS, ids=[k for k, _ in KDE_KERNELS]
)
def test_ratio_of_weighted_kernel_density_estimates(sk_kernel, kernel, h):
    # sum_j w_j y_j K_j / sum_j w_j K_j is the ratio of the densities estimated
    # with weights w y and w, times sum(w y) / sum(w) (positive targets).
    X, y, _, Q = random_data(2, n=50, seed=6)
    y = y + 3.0
    w = np.random.default_rng(7).uniform(0.2, 2.0, size=50)
    D = cdist(Q, X)
    Q = Q[D.min(axis=1) < 0.9 * h]  # non-empty windows for compact kernels
    num = KernelDensity(kernel=sk_kernel, bandwidth=h).fit(X, sample_weight=w * y)
    den = KernelDensity(kernel=sk_kernel, bandwidth=h).fit(X, sample_weight=w)
    log_ratio = num.score_samples(Q) - den.score_samples(Q)
    expected = np.exp(log_ratio) * (w @ y) / w.sum()
    reg = NadarayaWatsonRegressor(kernel=kernel, bandwidth=h).fit(X, y, w)
    assert_allclose(reg.predict(Q), expected, rtol=1e-12)
