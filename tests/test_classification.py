"""NadarayaWatsonClassifier against brute-force kernel-weighted class frequencies."""

import pickle
import warnings

import numpy as np
import pytest
from _expected_warnings import warns_about
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from scipy.spatial.distance import cdist
from sklearn.base import clone
from sklearn.metrics import accuracy_score
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils._param_validation import InvalidParameterError

from sknw import NadarayaWatsonClassifier, NadarayaWatsonRegressor
from sknw.exceptions import EmptyWindowWarning
from sknw.kernels import KERNELS, Kernel, Silverman, Triangular

RTOL = 1e-12
NONNEGATIVE_KERNELS = sorted(name for name, cls in KERNELS.items() if cls.nonnegative)


class SignedKernel(Kernel):
    """A user kernel that takes negative values."""

    nonnegative = False

    def __call__(self, u):
        u = np.asarray(u, dtype=np.float64)
        return np.cos(u) * np.exp(-u)


def proba_reference(Q, X, labels, classes, kernel, bandwidth, sample_weight=None):
    """Kernel-weighted class frequencies, columns in the order of ``classes``."""
    kernel = KERNELS[kernel]() if isinstance(kernel, str) else kernel
    bw = np.asarray(bandwidth, dtype=np.float64)
    if bw.ndim:
        D = cdist(Q / bw, X / bw)
    else:
        D = cdist(Q, X) / bw
    KW = kernel(D) * (1.0 if sample_weight is None else sample_weight)
    den = KW.sum(axis=1)
    assert np.all(den > 0), "the reference needs non-empty windows"
    onehot = np.asarray(labels)[:, None] == np.asarray(classes)[None, :]
    return KW @ onehot / den[:, None]


def classification_data(seed, n=60, m=25, d=2, labels=("c", "a", "b")):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    idx = (X[:, 0] > -0.3).astype(int) + (X[:, 0] + X[:, -1] > 0.8)
    idx[:3] = [0, 1, 2]  # every class present
    y = np.asarray(labels)[idx]
    Q = rng.normal(size=(m, d))
    w = rng.uniform(0.2, 2.0, size=n)
    return X, y, Q, w


def window_bandwidth(Q, X, k=4):
    return 1.1 * float(np.sort(cdist(Q, X), axis=1)[:, k - 1].max())


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("kernel", NONNEGATIVE_KERNELS)
def test_predict_proba_matches_reference(kernel, weighted):
    X, y, Q, w = classification_data(0)
    w = w if weighted else None
    h = window_bandwidth(Q, X)
    clf = NadarayaWatsonClassifier(kernel=kernel, bandwidth=h).fit(X, y, w)
    assert_array_equal(clf.classes_, ["a", "b", "c"])
    proba = clf.predict_proba(Q)
    expected = proba_reference(Q, X, y, clf.classes_, kernel, h, w)
    assert proba.shape == (25, 3)
    assert_allclose(proba, expected, rtol=RTOL, atol=1e-15)
    assert_array_equal(clf.predict(Q), clf.classes_[np.argmax(proba, axis=1)])


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov", "tricube"])
def test_predict_proba_per_feature_bandwidth(kernel):
    X, y, Q, w = classification_data(1, d=3)
    bw = np.array([0.5, 2.0, 1.0]) * 1.1
    bw = bw * 1.1 * np.sort(cdist(Q / bw, X / bw), axis=1)[:, 3].max()
    clf = NadarayaWatsonClassifier(kernel=kernel, bandwidth=bw).fit(X, y, w)
    expected = proba_reference(Q, X, y, clf.classes_, kernel, bw, w)
    assert_allclose(clf.predict_proba(Q), expected, rtol=RTOL, atol=1e-15)


@pytest.mark.parametrize(
    "labels",
    [
        ("spam", "eggs", "ham"),
        (3, -1, 10),
        (True, False),
    ],
    ids=["str", "int", "bool"],
)
def test_label_types(labels):
    rng = np.random.default_rng(2)
    X = 0.3 * rng.normal(size=(40, 2))
    k = len(labels)
    idx = np.arange(40) % k
    X[:, 0] += 3.0 * idx  # classes separated along feature 0
    y = np.array(labels)[idx]
    clf = NadarayaWatsonClassifier(bandwidth=0.5).fit(X, y)
    assert clf.classes_.dtype == y.dtype
    assert_array_equal(clf.classes_, np.sort(np.array(labels)))
    centres = np.column_stack([3.0 * np.arange(k), np.zeros(k)])
    pred = clf.predict(centres)
    assert pred.dtype == y.dtype
    assert_array_equal(pred, np.array(labels))
    proba = clf.predict_proba(centres)
    assert_array_equal(clf.classes_[proba.argmax(axis=1)], pred)
    assert_array_equal(clf.predict(X), y)


def test_list_of_string_labels():
    X = [[0.0], [0.1], [5.0], [5.1]]
    y = ["yes", "yes", "no", "no"]
    clf = NadarayaWatsonClassifier(bandwidth=1.0).fit(X, y)
    assert list(clf.classes_) == ["no", "yes"]
    assert list(clf.predict([[0.05], [4.9]])) == ["yes", "no"]


@pytest.mark.parametrize("kernel", ["gaussian", "boxcar"])
def test_single_class(kernel):
    X = np.array([[0.0], [1.0], [2.0]])
    clf = NadarayaWatsonClassifier(kernel=kernel, bandwidth=0.7).fit(X, ["only"] * 3)
    Q = np.array([[0.5], [1.5], [100.0], [-3.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyWindowWarning)
        proba = clf.predict_proba(Q)
        pred = clf.predict(Q)
    assert_array_equal(clf.classes_, ["only"])
    assert_array_equal(proba, np.ones((4, 1)))
    assert_array_equal(pred, ["only"] * 4)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    kernel=st.sampled_from(NONNEGATIVE_KERNELS),
    log_h=st.floats(-2, 2),
    n_classes=st.integers(1, 4),
    weighted=st.booleans(),
)
def test_proba_rows_are_distributions(seed, kernel, log_h, n_classes, weighted):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(30, 2))
    y = rng.integers(0, n_classes, size=30)
    w = rng.uniform(0.0, 2.0, size=30) if weighted else None
    if w is not None:
        w[0] = 1.0
    Q = rng.normal(size=(12, 2)) * 2
    clf = NadarayaWatsonClassifier(kernel=kernel, bandwidth=10.0**log_h)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyWindowWarning)
        clf.fit(X, y, w)
        proba = clf.predict_proba(Q)
        pred = clf.predict(Q)
    assert proba.shape == (12, clf.classes_.shape[0])
    assert np.all((proba >= 0) & (proba <= 1))
    assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    assert_array_equal(pred, clf.classes_[proba.argmax(axis=1)])


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov", "cauchy", "boxcar"])
def test_agrees_with_regressor_on_one_hot_targets(kernel):
    X, y, Q, w = classification_data(3)
    h = window_bandwidth(Q, X)
    clf = NadarayaWatsonClassifier(kernel=kernel, bandwidth=h).fit(X, y, w)
    onehot = (y[:, None] == clf.classes_[None, :]).astype(float)
    reg = NadarayaWatsonRegressor(kernel=kernel, bandwidth=h).fit(X, onehot, w)
    scores = reg.predict(Q)
    assert_allclose(clf.predict_proba(Q), scores, rtol=RTOL, atol=1e-15)
    assert_array_equal(clf.predict(Q), clf.classes_[scores.argmax(axis=1)])


# -- kernels the classifier refuses --------------------------------------------------


def test_silverman_name_is_rejected():
    clf = NadarayaWatsonClassifier(kernel="silverman")
    with pytest.raises(InvalidParameterError, match="kernel"):
        clf.fit([[0.0], [1.0]], [0, 1])


@pytest.mark.parametrize("kernel", [Silverman(), SignedKernel()])
def test_signed_kernel_instance_is_rejected_in_fit(kernel):
    clf = NadarayaWatsonClassifier(kernel=kernel, bandwidth=1.0)
    with pytest.raises(ValueError, match="non-negative"):
        clf.fit([[0.0], [1.0]], [0, 1])


def test_regressor_accepts_silverman():
    reg = NadarayaWatsonRegressor(kernel="silverman", bandwidth=1.0)
    reg.fit([[0.0], [1.0]], [0.0, 1.0])
    assert reg.kernel_ == Silverman()


# -- empty windows ------------------------------------------------------------------


def empty_problem():
    X = np.array([[0.0], [1.0], [2.0], [3.0], [5.0], [7.0]])
    y = np.array(["x", "y", "x", "z", "y", "z"])
    w = np.array([1.0, 2.0, 1.0, 1.0, 3.0, 1.0])
    Q = np.array([[0.2], [6.0], [1.3], [20.0], [4.0]])
    empty = np.array([False, True, False, True, True])
    return X, y, w, Q, empty


def fit_empty(policy):
    X, y, w, Q, empty = empty_problem()
    clf = NadarayaWatsonClassifier(
        kernel="epanechnikov", bandwidth=0.6, empty_window=policy
    )
    return clf.fit(X, y, w), X, y, w, Q, empty


def test_empty_window_nearest():
    clf, X, y, w, Q, empty = fit_empty("nearest")
    with warns_about(EmptyWindowWarning, 3, 5):
        proba = clf.predict_proba(Q)
    # 6.0: "y" (w 3) and "z" (w 1); 20: "z"; 4.0: "z" (w 1) and "y" (w 3).
    assert_allclose(
        proba[empty], [[0, 0.75, 0.25], [0, 0, 1], [0, 0.75, 0.25]], rtol=RTOL
    )
    expected = proba_reference(Q[~empty], X, y, clf.classes_, "epanechnikov", 0.6, w)
    assert_allclose(proba[~empty], expected, rtol=RTOL)
    with pytest.warns(EmptyWindowWarning):
        assert_array_equal(clf.predict(Q), ["x", "y", "y", "z", "y"])


def test_empty_window_nearest_skips_zero_weight_points():
    clf, X, y, w, Q, empty = fit_empty("nearest")
    w = w.copy()
    w[5] = 0.0
    clf.fit(X, y, w)
    with pytest.warns(EmptyWindowWarning):
        proba = clf.predict_proba(Q[[1, 3]])
    assert_allclose(proba, [[0, 1, 0], [0, 1, 0]], rtol=RTOL)


def test_empty_window_mean():
    clf, X, y, w, Q, empty = fit_empty("mean")
    with warns_about(EmptyWindowWarning, 3, 5):
        proba = clf.predict_proba(Q)
    priors = np.array([w[y == c].sum() for c in clf.classes_]) / w.sum()
    assert_allclose(proba[empty], np.tile(priors, (3, 1)), rtol=RTOL)
    expected = proba_reference(Q[~empty], X, y, clf.classes_, "epanechnikov", 0.6, w)
    assert_allclose(proba[~empty], expected, rtol=RTOL)


def test_empty_window_nan():
    clf, X, y, w, Q, empty = fit_empty("nan")
    with warns_about(EmptyWindowWarning, 3, 5):
        proba = clf.predict_proba(Q)
    assert_array_equal(np.isnan(proba).any(axis=1), empty)
    assert np.isnan(proba[empty]).all()
    expected = proba_reference(Q[~empty], X, y, clf.classes_, "epanechnikov", 0.6, w)
    assert_allclose(proba[~empty], expected, rtol=RTOL)
    with pytest.warns(EmptyWindowWarning), pytest.raises(ValueError, match="NaN"):
        clf.predict(Q)
    with warnings.catch_warnings():
        warnings.simplefilter("error", EmptyWindowWarning)
        assert_array_equal(clf.predict(Q[~empty]), ["x", "y"])


def test_empty_window_raise():
    clf, X, y, w, Q, empty = fit_empty("raise")
    with pytest.raises(ValueError, match="3 of 5"):
        clf.predict_proba(Q)
    with pytest.raises(ValueError):
        clf.predict(Q)
    assert clf.predict_proba(Q[~empty]).shape == (2, 3)


# -- scikit-learn integration -----------------------------------------------------


def blobs(seed=0, n=90):
    rng = np.random.default_rng(seed)
    centres = np.array([[0.0, 0.0], [3.0, 0.5], [1.0, 3.0]])
    idx = np.arange(n) % 3
    X = centres[idx] * [1.0, 20.0] + rng.normal(size=(n, 2)) * [1.0, 20.0]
    y = np.array(["red", "green", "blue"])[idx]
    return X, y


def test_grid_search_in_pipeline():
    X, y = blobs()
    grid = {
        "nw__kernel": ["gaussian", "epanechnikov", Triangular()],
        "nw__bandwidth": [0.2, 0.8, 3.0, "scott"],
    }
    pipe = Pipeline([("scale", StandardScaler()), ("nw", NadarayaWatsonClassifier())])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyWindowWarning)
        search = GridSearchCV(pipe, grid, cv=3).fit(X, y)
        scores = search.cv_results_["mean_test_score"]
        assert scores.shape == (12,)
        assert np.all(np.isfinite(scores))
        assert search.best_score_ == scores.max()
        assert search.best_score_ > 0.6
        manual = clone(pipe).set_params(**search.best_params_).fit(X, y)
        assert_array_equal(search.predict(X), manual.predict(X))
    assert set(search.predict(X)) <= {"red", "green", "blue"}


def test_cross_val_score_matches_manual_folds():
    X, y = blobs(1)
    X = X / [1.0, 20.0]
    clf = NadarayaWatsonClassifier(bandwidth=0.7)
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    scores = cross_val_score(clf, X, y, cv=cv)
    expected = []
    for train, test in cv.split(X, y):
        classes = np.unique(y[train])
        proba = proba_reference(X[test], X[train], y[train], classes, "gaussian", 0.7)
        expected.append(accuracy_score(y[test], classes[proba.argmax(axis=1)]))
    assert_allclose(scores, expected)


def test_pickle_round_trip():
    X, y = blobs(2)
    clf = NadarayaWatsonClassifier(kernel="biweight", bandwidth=[2.0, 30.0]).fit(X, y)
    restored = pickle.loads(pickle.dumps(clf))
    Q = X[:20] + 0.3
    assert_array_equal(restored.predict_proba(Q), clf.predict_proba(Q))
    assert_array_equal(restored.predict(Q), clf.predict(Q))
    assert_array_equal(restored.classes_, clf.classes_)


def test_fit_does_not_mutate_parameters():
    X, y = blobs(3)
    bandwidth = [1.0, 20.0]
    kernel = Triangular()
    clf = NadarayaWatsonClassifier(kernel=kernel, bandwidth=bandwidth).fit(X, y)
    assert clf.bandwidth is bandwidth and bandwidth == [1.0, 20.0]
    assert clf.kernel is kernel and clf.kernel_ is not kernel
    assert clf.kernel_ == kernel


def test_float32_probabilities_sum_to_one():
    # float32 inputs may be summed in float32: rows are renormalised.
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(3000, 2)).astype(np.float32)
    y = (X[:, 0] + 0.3 * rng.normal(size=3000) > 0).astype(int) + (X[:, 1] > 0.5)
    proba = NadarayaWatsonClassifier(bandwidth=0.2).fit(X, y).predict_proba(X[:500])
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-14)
    double = NadarayaWatsonClassifier(bandwidth=0.2).fit(X.astype(float), y)
    np.testing.assert_allclose(
        proba, double.predict_proba(X[:500].astype(float)), rtol=0, atol=4e-4
    )
