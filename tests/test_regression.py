"""NadarayaWatsonRegressor against a brute-force reference, and its invariants."""

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from _expected_warnings import warns_about
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from scipy.spatial.distance import cdist
from sklearn import config_context
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.metrics import r2_score
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.neighbors import KNeighborsRegressor
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.validation import check_is_fitted

from sknw import NadarayaWatsonRegressor
from sknw._base import _tile_elements
from sknw.exceptions import EmptyWindowWarning
from sknw.kernels import KERNELS, Kernel, Triangular

RTOL = 1e-12
KERNEL_NAMES = sorted(KERNELS)
NONNEGATIVE_KERNELS = [name for name in KERNEL_NAMES if KERNELS[name].nonnegative]
SMOOTH_KERNELS = ["gaussian", "laplacian", "cauchy", "epanechnikov", "biweight"]


class PowerKernel(Kernel):
    """``1 - u**p`` on ``u <= 1``: a user kernel with a parameter."""

    support = 1.0

    def __init__(self, p=2.0):
        self.p = p

    def __call__(self, u):
        u = np.asarray(u, dtype=np.float64)
        return np.where(u <= 1, 1 - np.minimum(u, 1.0) ** self.p, 0.0)


def nw_reference(
    Q,
    X,
    y,
    kernel,
    bandwidth,
    metric="euclidean",
    metric_params=None,
    sample_weight=None,
):
    """Predictions and attention weights from the definition.

    A scalar bandwidth divides the distances; an array divides the features
    before the distances are computed.
    """
    kernel = KERNELS[kernel]() if isinstance(kernel, str) else kernel
    Q, X, y = (np.asarray(a, dtype=np.float64) for a in (Q, X, y))
    bw = np.asarray(bandwidth, dtype=np.float64)
    if bw.ndim:
        Q, X, h = Q / bw, X / bw, 1.0
    else:
        h = float(bw)
    D = cdist(Q, X, metric, **(metric_params or {}))
    K = np.asarray(kernel(D / h), dtype=np.float64)
    w = np.ones(X.shape[0]) if sample_weight is None else np.asarray(sample_weight)
    KW = K * w
    den = KW.sum(axis=1)
    assert np.all(den != 0), "the reference needs non-empty windows"
    pred = KW @ y.reshape(y.shape[0], -1) / den[:, None]
    return pred.reshape((Q.shape[0],) + y.shape[1:]), KW / den[:, None]


def metric_params_for(metric, d):
    if metric == "minkowski":
        return {"p": 3}
    if metric == "mahalanobis":
        A = np.random.default_rng(99).normal(size=(d, d))
        return {"VI": A @ A.T + np.eye(d)}
    if metric == "seuclidean":
        return {"V": np.linspace(0.5, 2.0, d)}
    return None


METRICS = [
    "euclidean",
    "cityblock",
    "chebyshev",
    "minkowski",
    "cosine",
    "mahalanobis",
    "seuclidean",
]


def window_bandwidth(Q, X, metric, params, base=None, k=5):
    """A bandwidth whose windows all hold at least ``k`` training points.

    Scalar, or ``base`` times a scalar (per feature) when ``base`` is given.
    """
    if base is None:
        D = cdist(Q, X, metric, **(params or {}))
    else:
        D = cdist(Q / base, X / base, metric, **(params or {}))
    kth = np.sort(D, axis=1)[:, k - 1].max()
    scale = 1.1 * kth if kth > 0 else 1.0
    return scale if base is None else base * scale


def regression_data(seed, n, m, d, outputs=2):
    rng = np.random.default_rng(seed)
    # Positive coordinates keep cosine distances well below 1.
    X = rng.uniform(0.5, 2.0, size=(n, d))
    Q = rng.uniform(0.5, 2.0, size=(m, d))
    y = np.sin(3 * X @ np.arange(1, d + 1)) + 3.0
    if outputs:
        y = np.column_stack([y + 0.5 * k * X[:, 0] for k in range(outputs)])
    w = rng.uniform(0.3, 2.0, size=n)
    return X, y, Q, w


# -- agreement with the brute-force reference --------------------------------------


@pytest.mark.parametrize("per_feature", [False, True], ids=["scalar", "per_feature"])
@pytest.mark.parametrize("d", [1, 3])
@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("kernel", KERNEL_NAMES)
def test_predict_matches_reference(kernel, metric, d, per_feature):
    X, y, Q, w = regression_data(0, 50, 20, d)
    params = metric_params_for(metric, d)
    base = np.array([0.8, 1.25, 1.0])[:d] if per_feature else None
    bw = window_bandwidth(Q, X, metric, params, base)
    reg = NadarayaWatsonRegressor(
        kernel=kernel, bandwidth=bw, metric=metric, metric_params=params
    ).fit(X, y, sample_weight=w)
    pred = reg.predict(Q)
    expected, _ = nw_reference(Q, X, y, kernel, bw, metric, params, w)
    assert pred.shape == (20, 2)
    assert_allclose(pred, expected, rtol=RTOL)


@pytest.mark.parametrize("y_shape", ["1d", "column", "3 outputs"])
@pytest.mark.parametrize("d", [1, 3])
@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov", "silverman"])
def test_output_shapes_without_weights(kernel, d, y_shape):
    X, y, Q, _ = regression_data(1, 40, 15, d, outputs=3)
    y = {"1d": y[:, 0], "column": y[:, :1], "3 outputs": y}[y_shape]
    bw = window_bandwidth(Q, X, "euclidean", None)
    reg = NadarayaWatsonRegressor(kernel=kernel, bandwidth=bw).fit(X, y)
    pred = reg.predict(Q)
    expected, _ = nw_reference(Q, X, y, kernel, bw)
    assert pred.shape == (15,) + y.shape[1:]
    assert_allclose(pred, expected, rtol=RTOL)


def test_bandwidth_as_list_and_user_kernel():
    X, y, Q, w = regression_data(2, 40, 15, 3)
    kernel = PowerKernel(p=3.0)
    base = np.array([1.0, 2.0, 0.5])
    bw = [float(b) for b in window_bandwidth(Q, X, "euclidean", None, base)]
    reg = NadarayaWatsonRegressor(kernel=kernel, bandwidth=bw).fit(X, y, w)
    expected, _ = nw_reference(Q, X, y, kernel, np.array(bw), sample_weight=w)
    assert_allclose(reg.predict(Q), expected, rtol=RTOL)


def test_small_working_memory_gives_small_tiles():
    with config_context(working_memory=0.001):
        small = _tile_elements()
    assert 1 <= small < 100
    assert _tile_elements() > 10_000


# Under a tiny working memory, tiles split the training points as well as the
# queries.
@pytest.mark.parametrize("per_feature", [False, True], ids=["scalar", "per_feature"])
@pytest.mark.parametrize(
    "kernel, metric",
    [
        ("gaussian", "euclidean"),
        ("epanechnikov", "euclidean"),
        ("silverman", "cityblock"),
        ("laplacian", "minkowski"),
        ("triangular", "mahalanobis"),
    ],
)
def test_tiling_does_not_change_predictions(kernel, metric, per_feature):
    X, y, Q, w = regression_data(3, 4400, 37, 3)
    params = metric_params_for(metric, 3)
    base = np.array([0.8, 1.25, 1.0]) if per_feature else None
    bw = window_bandwidth(Q, X, metric, params, base)
    reg = NadarayaWatsonRegressor(
        kernel=kernel, bandwidth=bw, metric=metric, metric_params=params
    ).fit(X, y, sample_weight=w)
    default = reg.predict(Q)
    with config_context(working_memory=0.001):
        tiled = reg.predict(Q)
        tiled_weights = reg.attention_weights(Q[:5])
    expected, expected_weights = nw_reference(Q, X, y, kernel, bw, metric, params, w)
    assert_allclose(tiled, default, rtol=RTOL)
    assert_allclose(default, expected, rtol=RTOL)
    assert_allclose(tiled_weights, expected_weights[:5], rtol=RTOL, atol=1e-15)


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov", "boxcar", "silverman"])
def test_tiling_small_training_set(kernel):
    X, y, Q, w = regression_data(4, 60, 45, 1)
    bw = window_bandwidth(Q, X, "euclidean", None)
    reg = NadarayaWatsonRegressor(kernel=kernel, bandwidth=bw).fit(X, y, w)
    default = reg.predict(Q)
    default_weights = reg.attention_weights(Q)
    with config_context(working_memory=0.001):
        assert_allclose(reg.predict(Q), default, rtol=RTOL)
        assert_allclose(reg.attention_weights(Q), default_weights, rtol=RTOL)


# -- attention weights ----------------------------------------------------------


@pytest.mark.parametrize("per_feature", [False, True], ids=["scalar", "per_feature"])
@pytest.mark.parametrize("kernel", KERNEL_NAMES)
def test_attention_weights(kernel, per_feature):
    X, y, Q, w = regression_data(5, 45, 17, 3)
    base = np.array([1.0, 0.5, 2.0]) if per_feature else None
    bw = window_bandwidth(Q, X, "euclidean", None, base)
    reg = NadarayaWatsonRegressor(kernel=kernel, bandwidth=bw).fit(X, y, w)
    A = reg.attention_weights(Q)
    _, expected = nw_reference(Q, X, y, kernel, bw, sample_weight=w)
    assert A.shape == (17, 45)
    assert_allclose(A.sum(axis=1), 1.0, rtol=RTOL)
    assert_allclose(A, expected, rtol=RTOL, atol=1e-15)
    assert_allclose(A @ reg.y_fit_, reg.predict(Q), rtol=RTOL)


def test_attention_weights_zero_weight_columns():
    X, y, Q, w = regression_data(6, 30, 10, 2)
    w[::4] = 0.0
    reg = NadarayaWatsonRegressor(bandwidth=0.5).fit(X, y, w)
    A = reg.attention_weights(Q)
    assert np.all(A[:, ::4] == 0.0)
    assert_allclose(A @ y, reg.predict(Q), rtol=RTOL)


# -- invariances ------------------------------------------------------------------


def random_problem(seed, d, n=25, m=10):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    Q = rng.normal(size=(m, d)) * 1.2
    y = rng.normal(size=n)
    w = rng.uniform(0.1, 3.0, size=n)
    return X, y, Q, w


def safe_bandwidth(X, Q):
    """Scalar euclidean bandwidth with at least three points in every window."""
    return float(window_bandwidth(Q, X, "euclidean", None, k=3)) * 1.5


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    d=st.integers(1, 4),
    kernel=st.sampled_from(SMOOTH_KERNELS),
    shift=st.floats(-10, 10),
)
def test_translation_and_rotation_invariance(seed, d, kernel, shift):
    X, y, Q, w = random_problem(seed, d)
    h = safe_bandwidth(X, Q)
    rng = np.random.default_rng(seed + 1)
    R, _ = np.linalg.qr(rng.normal(size=(d, d)))
    t = shift * rng.normal(size=d)
    reg = NadarayaWatsonRegressor(kernel=kernel, bandwidth=h)
    pred = reg.fit(X, y, w).predict(Q)
    moved = clone(reg).fit(X @ R.T + t, y, w).predict(Q @ R.T + t)
    assert_allclose(moved, pred, rtol=1e-8, atol=1e-8)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    d=st.integers(1, 3),
    kernel=st.sampled_from(KERNEL_NAMES),
)
def test_permutation_invariance(seed, d, kernel):
    X, y, Q, w = random_problem(seed, d)
    perm = np.random.default_rng(seed).permutation(X.shape[0])
    reg = NadarayaWatsonRegressor(kernel=kernel, bandwidth=safe_bandwidth(X, Q))
    pred = reg.fit(X, y, w).predict(Q)
    A = reg.attention_weights(Q)
    permuted = clone(reg).fit(X[perm], y[perm], w[perm])
    assert_allclose(permuted.predict(Q), pred, rtol=1e-10, atol=1e-12)
    assert_allclose(permuted.attention_weights(Q), A[:, perm], rtol=1e-10, atol=1e-14)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    d=st.integers(1, 3),
    kernel=st.sampled_from(NONNEGATIVE_KERNELS),
    log_h=st.floats(-3, 3),
    y_scale=st.floats(1e-3, 1e6),
)
def test_predictions_within_target_range(seed, d, kernel, log_h, y_scale):
    X, y, Q, w = random_problem(seed, d)
    y = y * y_scale
    reg = NadarayaWatsonRegressor(kernel=kernel, bandwidth=10.0**log_h)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyWindowWarning)
        pred = reg.fit(X, y, w).predict(Q)
    slack = 1e-12 * np.abs(y).max()
    assert np.all(np.isfinite(pred))
    assert np.all(pred >= y.min() - slack)
    assert np.all(pred <= y.max() + slack)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    kernel=st.sampled_from(KERNEL_NAMES),
    a=st.floats(-100, 100),
    b=st.floats(-1e3, 1e3),
)
def test_affine_map_of_targets(seed, kernel, a, b):
    X, y, Q, w = random_problem(seed, 2)
    reg = NadarayaWatsonRegressor(kernel=kernel, bandwidth=safe_bandwidth(X, Q))
    pred = reg.fit(X, y, w).predict(Q)
    mapped = clone(reg).fit(X, a * y + b, w).predict(Q)
    scale = abs(a) * np.abs(y).max() + abs(b)
    assert_allclose(mapped, a * pred + b, rtol=0, atol=1e-10 * scale)


@pytest.mark.parametrize("factor", [1e-300, 1e-150, 1e150, 1e300])
@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov", "silverman"])
def test_scaling_all_sample_weights_changes_nothing(kernel, factor):
    X, y, Q, w = random_problem(18, 2)
    Q = np.vstack([Q, [[40.0, 40.0]]])  # an empty window for compact kernels
    reg = NadarayaWatsonRegressor(kernel=kernel, bandwidth=safe_bandwidth(X, Q[:-1]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyWindowWarning)
        pred = clone(reg).fit(X, y, w).predict(Q)
        scaled = clone(reg).fit(X, y, w * factor)
        assert_allclose(scaled.predict(Q), pred, rtol=1e-10)
        assert_allclose(
            scaled.attention_weights(Q),
            reg.fit(X, y, w).attention_weights(Q),
            rtol=1e-10,
            atol=1e-15,
        )


@pytest.mark.parametrize("bandwidth", [0.4, [0.3, 0.6], "scott", "silverman"])
@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov", "tricube"])
def test_duplicate_point_equals_double_weight(kernel, bandwidth):
    X, y, Q, w = random_problem(7, 2, n=30)
    w = np.round(w) + 1.0
    i = 4
    X_dup = np.vstack([X, X[i : i + 1]])
    y_dup = np.append(y, y[i])
    w_dup = np.append(w, w[i])
    w_double = w.copy()
    w_double[i] *= 2
    reg = NadarayaWatsonRegressor(kernel=kernel, bandwidth=bandwidth)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyWindowWarning)
        doubled = clone(reg).fit(X, y, w_double)
        duplicated = clone(reg).fit(X_dup, y_dup, w_dup)
        assert_allclose(duplicated.bandwidth_, doubled.bandwidth_, rtol=RTOL)
        assert_allclose(duplicated.predict(Q), doubled.predict(Q), rtol=1e-10)


def test_duplicate_point_without_weights_equals_weight_two():
    X, y, Q, _ = random_problem(8, 3, n=30)
    # A signal in the noise: pure noise puts the default grid's best at its
    # largest bandwidth, at the limit of its extension.
    y = np.sin(2 * X[:, 0]) + 0.3 * y
    X_dup, y_dup = np.vstack([X, X[:1]]), np.append(y, y[0])
    w = np.ones(30)
    w[0] = 2.0
    a = NadarayaWatsonRegressor().fit(X_dup, y_dup)
    b = NadarayaWatsonRegressor().fit(X, y, w)
    assert_allclose(a.bandwidth_, b.bandwidth_, rtol=RTOL)
    assert_allclose(a.predict(Q), b.predict(Q), rtol=1e-10)


def separated_data(d, seed=0):
    """Training points at least 1 apart; queries with a clear nearest point."""
    rng = np.random.default_rng(seed)
    grid = np.stack(np.meshgrid(*[np.arange(4.0)] * d), axis=-1).reshape(-1, d)
    X = 2.0 * grid + rng.uniform(-0.3, 0.3, size=grid.shape)
    y = rng.normal(size=X.shape[0])
    Q = np.vstack([X[::3] + rng.uniform(-0.15, 0.15, size=X[::3].shape), X[:4]])
    return X, y, Q


@pytest.mark.parametrize("metric", ["euclidean", "cityblock"])
@pytest.mark.parametrize("d", [1, 3])
@pytest.mark.parametrize("h", [1e-6, 1e-12, 1e-300])
def test_tiny_bandwidth_gaussian_is_nearest_neighbour(h, d, metric):
    X, y, Q = separated_data(d)
    knn = KNeighborsRegressor(n_neighbors=1, metric=metric).fit(X, y)
    reg = NadarayaWatsonRegressor(bandwidth=h, metric=metric).fit(X, y)
    pred = reg.predict(Q)
    assert not np.isnan(pred).any()
    assert_allclose(pred, knn.predict(Q), rtol=RTOL)


@pytest.mark.parametrize("metric", ["euclidean", "cityblock"])
@pytest.mark.parametrize("h", [1e-12, 1e-300])
def test_tiny_bandwidth_gaussian_window_is_never_empty(h, metric):
    # The Gaussian has unbounded support: no policy for empty windows applies.
    X, y, Q = separated_data(2)
    reg = NadarayaWatsonRegressor(bandwidth=h, metric=metric, empty_window="nan")
    reg.fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", EmptyWindowWarning)
        pred = reg.predict(Q)
        A = reg.attention_weights(Q)
    knn = KNeighborsRegressor(n_neighbors=1, metric=metric).fit(X, y)
    assert not np.isnan(pred).any()
    assert_allclose(pred, knn.predict(Q), rtol=RTOL)
    assert_allclose(A.sum(axis=1), 1.0, rtol=RTOL)


@pytest.mark.parametrize("d", [1, 3])
def test_float32_input_gives_the_estimate_of_its_values(d):
    # float32 inputs are accepted as they are; the estimate is that of their
    # (exactly representable) values, returned as float64, within the
    # documented bound of float32 computation (4e-4 of the largest |y|).
    rng = np.random.default_rng(17)
    X = rng.uniform(0, 100, size=(200, d)).astype(np.float32)
    Q = rng.uniform(0, 100, size=(20, d)).astype(np.float32)
    y = rng.normal(size=200)
    h = 0.5 * float(window_bandwidth(Q, X, "euclidean", None, k=3))
    pred = NadarayaWatsonRegressor(bandwidth=h).fit(X, y).predict(Q)
    assert pred.dtype == np.float64
    expected, _ = nw_reference(
        Q.astype(np.float64), X.astype(np.float64), y, "gaussian", h
    )
    assert_allclose(pred, expected, rtol=0, atol=4e-4 * np.max(np.abs(y)))


@pytest.mark.parametrize("d", [1, 3])
@pytest.mark.parametrize("h", [1e-12, 1e-20])
def test_float32_tiny_bandwidth_is_nearest_neighbour(h, d):
    X, y, Q = separated_data(d)
    X32, Q32 = X.astype(np.float32), Q.astype(np.float32)
    knn = KNeighborsRegressor(n_neighbors=1).fit(X32.astype(np.float64), y)
    pred = NadarayaWatsonRegressor(bandwidth=h).fit(X32, y).predict(Q32)
    assert not np.isnan(pred).any()
    assert_allclose(pred, knn.predict(Q32.astype(np.float64)), rtol=RTOL)


def test_huge_bandwidth_gaussian_is_weighted_mean():
    X, y, Q, w = random_problem(9, 3)
    reg = NadarayaWatsonRegressor(bandwidth=1e6).fit(X, y, w)
    assert_allclose(reg.predict(Q), np.average(y, weights=w), rtol=1e-9)


@pytest.mark.parametrize("metric", ["euclidean", "cityblock"])
@pytest.mark.parametrize("kernel", KERNEL_NAMES)
def test_huge_bandwidth_is_weighted_mean(kernel, metric):
    X, y, Q, w = random_problem(10, 3)
    y = y + 5.0
    reg = NadarayaWatsonRegressor(kernel=kernel, bandwidth=1e300, metric=metric)
    pred = reg.fit(X, y, w).predict(Q)
    assert_allclose(pred, np.average(y, weights=w), rtol=RTOL)
    assert_allclose(reg.attention_weights(Q), np.tile(w / w.sum(), (10, 1)), rtol=RTOL)


# -- empty windows ------------------------------------------------------------------


def empty_window_problem():
    X = np.array([[0.0], [1.0], [2.0], [3.0], [5.0], [7.0]])
    y = np.array([0.0, 1.0, 4.0, 9.0, 25.0, 49.0])
    w = np.array([1.0, 2.0, 1.0, 1.0, 3.0, 1.0])
    # 6.0 and 4.0 are equidistant from two training points; 20 and -30 are far.
    Q = np.array([[0.2], [6.0], [1.3], [20.0], [-30.0], [2.9], [4.0]])
    empty = np.array([False, True, False, True, True, False, True])
    return X, y, w, Q, empty


def fit_empty(policy, y=None, kernel="epanechnikov"):
    X, y0, w, Q, empty = empty_window_problem()
    y = y0 if y is None else y
    reg = NadarayaWatsonRegressor(kernel=kernel, bandwidth=0.6, empty_window=policy)
    return reg.fit(X, y, w), X, y, w, Q, empty


def nonempty_reference(X, y, w, Q, empty, kernel="epanechnikov"):
    return nw_reference(Q[~empty], X, y, kernel, 0.6, sample_weight=w)


def warns_empty(n_empty):
    return warns_about(EmptyWindowWarning, n_empty)


@pytest.mark.parametrize("kernel", ["epanechnikov", "boxcar", "tricube", "cosine"])
@pytest.mark.parametrize("multi", [False, True], ids=["1d", "2d"])
def test_empty_window_nearest(kernel, multi):
    X, y, w, Q, empty = empty_window_problem()
    if multi:
        y = np.column_stack([y, -2 * y + 1])
    reg = NadarayaWatsonRegressor(kernel=kernel, bandwidth=0.6).fit(X, y, w)
    with warns_empty(4) as record:
        pred = reg.predict(Q)
    assert len(record) == 1
    nearest = np.array(
        [
            (3 * y[4] + 1 * y[5]) / 4,  # 6.0: tie of 5 and 7
            y[5],  # 20: 7
            y[0],  # -30: 0
            (1 * y[3] + 3 * y[4]) / 4,  # 4.0: tie of 3 and 5
        ]
    )
    assert_allclose(pred[empty], nearest, rtol=RTOL)
    expected, _ = nonempty_reference(X, y, w, Q, empty, kernel)
    assert_allclose(pred[~empty], expected, rtol=RTOL)


def test_empty_window_nearest_without_weights():
    X, y, _, Q, empty = empty_window_problem()
    reg = NadarayaWatsonRegressor(kernel="triangular", bandwidth=0.6).fit(X, y)
    with warns_empty(4):
        pred = reg.predict(Q)
    assert_allclose(pred[empty], [37.0, 49.0, 0.0, 17.0], rtol=RTOL)


def test_zero_weight_points_are_never_nearest():
    X, y, w, Q, empty = empty_window_problem()
    w = w.copy()
    w[5] = 0.0  # the point at 7
    reg = NadarayaWatsonRegressor(kernel="epanechnikov", bandwidth=0.6).fit(X, y, w)
    with warns_empty(4):
        pred = reg.predict(Q)
        A = reg.attention_weights(Q)
    assert_allclose(pred[empty], [y[4], y[4], y[0], (y[3] + 3 * y[4]) / 4], rtol=RTOL)
    assert np.all(A[:, 5] == 0)
    assert_allclose(A[1], [0, 0, 0, 0, 1, 0], rtol=RTOL)


def test_empty_window_mean():
    reg, X, y, w, Q, empty = fit_empty("mean")
    with warns_empty(4):
        pred = reg.predict(Q)
    assert_allclose(pred[empty], np.average(y, weights=w), rtol=RTOL)
    expected, _ = nonempty_reference(X, y, w, Q, empty)
    assert_allclose(pred[~empty], expected, rtol=RTOL)


def test_empty_window_nan():
    reg, X, y, w, Q, empty = fit_empty("nan")
    with warns_empty(4):
        pred = reg.predict(Q)
    assert_array_equal(np.isnan(pred), empty)
    expected, _ = nonempty_reference(X, y, w, Q, empty)
    assert_allclose(pred[~empty], expected, rtol=RTOL)
    nearest = clone(reg).set_params(empty_window="nearest").fit(X, y, w)
    with warns_empty(4):
        assert_allclose(pred[~empty], nearest.predict(Q)[~empty], rtol=RTOL)


def test_empty_window_nan_multi_output():
    X, y, w, Q, empty = empty_window_problem()
    Y = np.column_stack([y, y + 1])
    reg, *_ = fit_empty("nan", y=Y)
    with warns_empty(4):
        pred = reg.predict(Q)
    assert pred.shape == (7, 2)
    assert_array_equal(np.isnan(pred), np.column_stack([empty, empty]))


def test_empty_window_raise():
    reg, X, y, w, Q, empty = fit_empty("raise")
    with pytest.raises(ValueError, match="4 of 7"):
        reg.predict(Q)
    with pytest.raises(ValueError):
        reg.attention_weights(Q)
    # Queries with a non-empty window are fine.
    expected, _ = nonempty_reference(X, y, w, Q, empty)
    with warnings.catch_warnings():
        warnings.simplefilter("error", EmptyWindowWarning)
        assert_allclose(reg.predict(Q[~empty]), expected, rtol=RTOL)


def test_no_warning_without_empty_windows():
    reg, X, y, w, Q, empty = fit_empty("nearest")
    with warnings.catch_warnings():
        warnings.simplefilter("error", EmptyWindowWarning)
        reg.predict(Q[~empty])
        reg.attention_weights(Q[~empty])


@pytest.mark.parametrize("policy", ["nearest", "mean", "nan"])
def test_empty_window_attention_weights(policy):
    reg, X, y, w, Q, empty = fit_empty(policy)
    with warns_empty(4):
        A = reg.attention_weights(Q)
    assert A.shape == (7, 6)
    _, expected = nonempty_reference(X, y, w, Q, empty)
    assert_allclose(A[~empty], expected, rtol=RTOL, atol=1e-15)
    if policy == "nearest":
        rows = np.array(
            [
                [0, 0, 0, 0, 0.75, 0.25],
                [0, 0, 0, 0, 0, 1.0],
                [1.0, 0, 0, 0, 0, 0],
                [0, 0, 0, 0.25, 0.75, 0],
            ]
        )
        assert_allclose(A[empty], rows, rtol=RTOL)
    elif policy == "mean":
        assert_allclose(A[empty], np.tile(w / w.sum(), (4, 1)), rtol=RTOL)
    else:
        assert np.isnan(A[empty]).all()
    if policy != "nan":
        assert_allclose(A.sum(axis=1), 1.0, rtol=RTOL)
        with warns_empty(4):
            assert_allclose(A @ y, reg.predict(Q), rtol=RTOL)


def test_empty_window_nearest_with_per_feature_bandwidth_and_metric():
    X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 10.0]])
    y = np.array([1.0, 2.0, 3.0])
    # Scaled training points: (0, 0), (1, 0), (0, 1). The query (3, 9) scales to
    # (3, 0.9): its window is empty and its nearest point is (1, 0), whereas
    # unscaled it would be (0, 10). The query (0.1, 0.5) scales to (0.1, 0.05).
    reg = NadarayaWatsonRegressor(
        kernel="boxcar", bandwidth=[1.0, 10.0], metric="cityblock"
    ).fit(X, y)
    with warns_empty(1):
        pred = reg.predict([[3.0, 9.0], [0.1, 0.5]])
    assert_allclose(pred, [2.0, 1.5], rtol=RTOL)


def test_empty_window_nearest_across_training_tiles():
    rng = np.random.default_rng(11)
    X = rng.uniform(0.0, 10.0, size=(4500, 1))
    X[4400] = 50.0
    X[10] = 46.0
    y = rng.normal(size=4500)
    reg = NadarayaWatsonRegressor(kernel="epanechnikov", bandwidth=0.5).fit(X, y)
    Q = np.array([[48.0], [49.0], [5.0]])
    with config_context(working_memory=0.001), warns_empty(2):
        pred = reg.predict(Q)
    assert_allclose(pred[:2], [(y[10] + y[4400]) / 2, y[4400]], rtol=RTOL)
    expected, _ = nw_reference(Q[2:], X, y, "epanechnikov", 0.5)
    assert_allclose(pred[2:], expected, rtol=RTOL)


# -- metrics --------------------------------------------------------------------


def weighted_cov(X, w):
    return np.cov(X, rowvar=False, aweights=w, ddof=0).reshape(X.shape[1], -1)


@pytest.mark.parametrize("weighted", [False, True])
def test_mahalanobis_default_uses_training_covariance(weighted):
    rng = np.random.default_rng(12)
    A = np.array([[1.0, 0.0, 0.0], [0.8, 0.5, 0.0], [0.1, -0.4, 2.0]])
    X = rng.normal(size=(60, 3)) @ A.T
    y = np.sin(X[:, 0]) + X[:, 1]
    Q = rng.normal(size=(9, 3)) @ A.T
    w = rng.uniform(0.2, 2.0, size=60) if weighted else None
    reg = NadarayaWatsonRegressor(metric="mahalanobis", bandwidth=1.3)
    reg.fit(X, y, sample_weight=w)
    VI = np.linalg.inv(weighted_cov(X, np.ones(60) if w is None else w))
    assert_allclose(reg.metric_params_["VI"], VI, rtol=1e-10, atol=1e-12)
    together = reg.predict(Q)
    one_by_one = np.concatenate([reg.predict(Q[i : i + 1]) for i in range(9)])
    assert_allclose(one_by_one, together, rtol=RTOL)
    expected, _ = nw_reference(Q, X, y, "gaussian", 1.3, "mahalanobis", {"VI": VI}, w)
    assert_allclose(together, expected, rtol=1e-10)
    assert reg.metric_params is None


def test_mahalanobis_default_with_per_feature_bandwidth():
    # Features are divided by the bandwidth; VI still comes from the training
    # data, so the bandwidth changes the estimate.
    rng = np.random.default_rng(13)
    X = rng.normal(size=(50, 2)) * [1.0, 3.0]
    y = np.cos(X[:, 0]) + X[:, 1]
    Q = rng.normal(size=(8, 2))
    VI = np.linalg.inv(weighted_cov(X, np.ones(50)))
    preds = []
    for bw in ([0.5, 0.8], [2.0, 3.0]):
        reg = NadarayaWatsonRegressor(metric="mahalanobis", bandwidth=bw).fit(X, y)
        expected, _ = nw_reference(Q, X, y, "gaussian", bw, "mahalanobis", {"VI": VI})
        assert_allclose(reg.predict(Q), expected, rtol=1e-10)
        preds.append(reg.predict(Q))
    assert not np.allclose(preds[0], preds[1])


@pytest.mark.parametrize("weighted", [False, True])
def test_seuclidean_default_uses_training_variance(weighted):
    rng = np.random.default_rng(14)
    X = rng.normal(size=(40, 3)) * [0.5, 2.0, 7.0]
    y = X[:, 0] - X[:, 2] / 7
    Q = rng.normal(size=(6, 3)) * [0.5, 2.0, 7.0]
    w = rng.uniform(0.2, 2.0, size=40) if weighted else None
    reg = NadarayaWatsonRegressor(metric="seuclidean", bandwidth=0.9).fit(X, y, w)
    V = np.diag(weighted_cov(X, np.ones(40) if w is None else w))
    assert_allclose(reg.metric_params_["V"], V, rtol=1e-12)
    one_by_one = np.concatenate([reg.predict(Q[i : i + 1]) for i in range(6)])
    assert_allclose(one_by_one, reg.predict(Q), rtol=RTOL)
    expected, _ = nw_reference(Q, X, y, "gaussian", 0.9, "seuclidean", {"V": V}, w)
    assert_allclose(reg.predict(Q), expected, rtol=1e-10)


@pytest.mark.parametrize(
    "metric, params, n_features",
    [
        ("cosine", {"p": 2}, 3),
        ("mahalanobis", {"VI": np.eye(2)}, 3),
        ("mahalanobis", {"VI": np.eye(4)}, 3),
        ("seuclidean", {"V": np.ones(2)}, 3),
        ("minkowski", {"p": 2, "q": 1}, 2),
        ("euclidean", {"VI": np.eye(2)}, 2),
    ],
)
def test_bad_metric_params_raise_in_fit(metric, params, n_features):
    rng = np.random.default_rng(15)
    X = rng.normal(size=(10, n_features))
    reg = NadarayaWatsonRegressor(metric=metric, metric_params=params, bandwidth=1.0)
    with pytest.raises(ValueError):
        reg.fit(X, np.arange(10.0))


def test_unknown_metric_is_rejected_with_valid_names():
    reg = NadarayaWatsonRegressor(metric="manhatten")
    with pytest.raises(InvalidParameterError) as excinfo:
        reg.fit(np.zeros((3, 1)), np.zeros(3))
    message = str(excinfo.value)
    assert "metric" in message
    for name in ("euclidean", "cityblock", "mahalanobis", "minkowski"):
        assert name in message


def test_callable_metric():
    X, y, Q, w = regression_data(16, 30, 7, 2, outputs=0)

    def l1(a, b):
        return float(np.abs(a - b).sum())

    reg = NadarayaWatsonRegressor(bandwidth=0.7, metric=l1).fit(X, y, w)
    expected, _ = nw_reference(Q, X, y, "gaussian", 0.7, "cityblock", None, w)
    assert_allclose(reg.predict(Q), expected, rtol=RTOL)


# -- scikit-learn integration ------------------------------------------------------


def sine_data(seed=0, n=80):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 5, size=(n, 2))
    y = 2 * np.sin(X[:, 0]) + X[:, 1] ** 0.5 + rng.normal(scale=0.2, size=n)
    return X, y


def test_grid_search_in_pipeline():
    X, y = sine_data()
    triangular = Triangular()
    grid = {
        "nw__kernel": ["gaussian", "epanechnikov", triangular],
        "nw__bandwidth": [0.3, 1.0, "silverman"],
    }
    pipe = Pipeline([("scale", StandardScaler()), ("nw", NadarayaWatsonRegressor())])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyWindowWarning)
        search = GridSearchCV(pipe, grid, cv=3).fit(X, y)
    scores = search.cv_results_["mean_test_score"]
    assert scores.shape == (9,)
    assert np.all(np.isfinite(scores))
    assert search.best_score_ == scores.max()
    best = search.best_params_
    assert best["nw__bandwidth"] in grid["nw__bandwidth"]
    manual = clone(pipe).set_params(**best)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyWindowWarning)
        assert_allclose(
            search.predict(X), manual.fit(X, y).predict(X), rtol=RTOL, atol=1e-14
        )
    assert grid["nw__kernel"][2] is triangular
    fitted = search.best_estimator_.named_steps["nw"]
    assert fitted.kernel_ is not triangular


def test_cross_val_score_matches_manual_folds():
    X, y = sine_data(1)
    reg = NadarayaWatsonRegressor(kernel="biweight", bandwidth=1.2)
    cv = KFold(4, shuffle=True, random_state=0)
    scores = cross_val_score(reg, X, y, cv=cv)
    expected = []
    for train, test in cv.split(X):
        pred, _ = nw_reference(X[test], X[train], y[train], "biweight", 1.2)
        expected.append(r2_score(y[test], pred))
    assert_allclose(scores, expected, rtol=1e-10)


def test_pickle_round_trip():
    X, y = sine_data(2)
    reg = NadarayaWatsonRegressor(kernel=PowerKernel(p=1.5), bandwidth=[1.0, 2.0])
    reg.fit(X, y)
    restored = pickle.loads(pickle.dumps(reg))
    Q = X[:10] + 0.1
    assert_array_equal(restored.predict(Q), reg.predict(Q))
    assert_array_equal(restored.attention_weights(Q), reg.attention_weights(Q))
    assert restored.get_params()["kernel"] == reg.kernel


def test_clone_is_unfitted_with_equal_params():
    X, y = sine_data(3)
    reg = NadarayaWatsonRegressor(
        kernel=PowerKernel(p=4.0),
        bandwidth=[0.5, 0.7],
        metric="minkowski",
        metric_params={"p": 3},
        empty_window="mean",
    ).fit(X, y)
    copy = clone(reg)
    with pytest.raises(NotFittedError):
        check_is_fitted(copy)
    with pytest.raises(NotFittedError):
        copy.predict(X)
    a, b = reg.get_params(), copy.get_params()
    assert a.keys() == b.keys()
    assert b["kernel"] == a["kernel"]
    assert b["kernel"] is not a["kernel"]
    assert b["bandwidth"] == a["bandwidth"]
    assert b["metric_params"] == a["metric_params"]
    assert {k: v for k, v in b.items() if k not in ("kernel",)} == {
        k: v for k, v in a.items() if k not in ("kernel",)
    }
    assert_array_equal(copy.fit(X, y).predict(X), reg.predict(X))


def test_dataframe_feature_names():
    X, y = sine_data(4)
    df = pd.DataFrame(X, columns=["height", "age"])
    reg = NadarayaWatsonRegressor(bandwidth=0.8).fit(df, y)
    assert_array_equal(reg.feature_names_in_, ["height", "age"])
    pred = reg.predict(df)
    assert_allclose(pred, NadarayaWatsonRegressor(bandwidth=0.8).fit(X, y).predict(X))
    with pytest.warns(UserWarning, match="feature names"):
        reg.predict(X)
    renamed = df.rename(columns={"age": "weight"})
    with pytest.raises(ValueError, match="feature names"):
        reg.predict(renamed)
    assert not hasattr(NadarayaWatsonRegressor().fit(X, y), "feature_names_in_")


@pytest.mark.parametrize("bandwidth", [0.7, [0.5, 2.0], "scott"])
def test_inputs_are_not_modified(bandwidth):
    X, y = sine_data(5)
    w = np.linspace(0.5, 1.5, X.shape[0])
    Q = X[:15] + 0.25
    copies = [a.copy() for a in (X, y, w, Q)]
    for a in (X, y, w, Q):
        a.flags.writeable = False
    reg = NadarayaWatsonRegressor(bandwidth=bandwidth).fit(X, y, w)
    pred = reg.predict(Q)
    A = reg.attention_weights(Q)
    for a, c in zip((X, y, w, Q), copies, strict=True):
        assert_array_equal(a, c)
    assert_allclose(pred, A @ y, rtol=RTOL)


def test_parameters_are_not_mutated_by_fit():
    X, y = sine_data(6)
    bandwidth = [0.5, 0.9]
    kernel = PowerKernel(p=2.5)
    metric_params = {}
    reg = NadarayaWatsonRegressor(
        kernel=kernel,
        bandwidth=bandwidth,
        metric="mahalanobis",
        metric_params=metric_params,
    ).fit(X, y)
    assert reg.bandwidth is bandwidth
    assert bandwidth == [0.5, 0.9]
    assert reg.kernel is kernel
    assert reg.kernel_ is not kernel
    assert reg.kernel_ == kernel
    assert kernel.p == 2.5
    assert reg.metric_params is metric_params
    assert metric_params == {}
    assert "VI" in reg.metric_params_
    # Changing the parameter object after fit does not change the fitted model.
    pred = reg.predict(X[:5])
    kernel.p = 10.0
    assert_array_equal(reg.predict(X[:5]), pred)


def test_string_bandwidth_is_resolved_in_fit():
    X, y = sine_data(7)
    reg = NadarayaWatsonRegressor(bandwidth="silverman").fit(X, y)
    assert reg.bandwidth == "silverman"
    assert np.all(np.asarray(reg.bandwidth_) > 0)
    expected, _ = nw_reference(X[:5], X, y, "gaussian", reg.bandwidth_)
    assert_allclose(reg.predict(X[:5]), expected, rtol=RTOL)


def test_empty_window_warning_counts_queries():
    # One warning per call, its counts in its attributes and not in its
    # text: the same text whatever the counts, which Python's filters fold.
    reg, X, y, w, Q, empty = fit_empty("mean")
    texts = []
    for rows in ([1, 3, 0], [1, 0]):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            reg.predict(Q[rows])
        found = [c.message for c in caught if c.category is EmptyWindowWarning]
        assert len(found) == 1
        assert (found[0].n_affected, found[0].n_queries) == (
            int(empty[rows].sum()),
            len(rows),
        )
        texts.append(str(found[0]))
    assert texts[0] == texts[1]


def test_repeated_calls_show_a_warning_once_under_the_default_filter():
    # scikit-learn's input validation clears Python's registry of shown
    # warnings at every call; sknw keeps its own under the "default" action.
    reg, X, y, w, Q, empty = fit_empty("mean")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        for rows in ([1, 3, 0], [1, 0], [3, 1, 2, 0]):
            reg.predict(Q[rows])
    assert [c.category for c in caught] == [EmptyWindowWarning]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for rows in ([1, 3, 0], [1, 0]):
            reg.predict(Q[rows])
    assert [c.message.n_affected for c in caught] == [2, 1]


def test_a_grid_search_shows_at_most_one_line_per_kind():
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (200, 1))
    X[:20] += 3
    y = np.sin(6 * X[:, 0]) + 0.1 * rng.normal(size=200)
    grid = {
        "kernel": ["epanechnikov", "tricube", "boxcar", "gaussian"],
        "bandwidth": [0.02, 0.05, 0.1, 0.2, 0.4],
    }
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        GridSearchCV(NadarayaWatsonRegressor(), grid, cv=5).fit(X, y)
    kinds = [c.category for c in caught]
    assert len(kinds) == len(set(kinds)) <= 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        GridSearchCV(NadarayaWatsonRegressor(), grid, cv=5).fit(X, y)
    assert len(caught) > 5  # one per fold and compact kernel with empty windows
