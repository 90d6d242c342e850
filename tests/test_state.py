"""Estimator state: pickling, cloning, concurrent prediction, refitting, and
leaving the caller's arrays untouched."""

import pickle
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from sknw import (
    LocalLinearRegressor,
    LocalLinearRegressorCV,
    LocalPolynomialRegressor,
    LocalPolynomialRegressorCV,
    NadarayaWatsonClassifier,
    NadarayaWatsonClassifierCV,
    NadarayaWatsonRegressor,
    NadarayaWatsonRegressorCV,
)
from sknw.kernels import Kernel, Triangular

# Some configurations leave windows empty on purpose; that policy is tested in
# test_regression.py and test_classification.py.
pytestmark = pytest.mark.filterwarnings("ignore::sknw.exceptions.EmptyWindowWarning")


class PowerKernel(Kernel):
    """``1 - u**p`` on ``u <= 1``: a user kernel with a parameter."""

    support = 1.0

    def __init__(self, p=2.0):
        self.p = p

    def __call__(self, u):
        u = np.asarray(u, dtype=np.float64)
        return np.where(u <= 1, 1 - np.minimum(u, 1.0) ** self.p, 0.0)


#: Estimators in configurations that give them non-trivial fitted state.
CONFIGS = {
    "regressor": lambda: NadarayaWatsonRegressor(
        kernel=PowerKernel(p=3.0), bandwidth="silverman", empty_window="mean"
    ),
    "regressor mahalanobis": lambda: NadarayaWatsonRegressor(
        kernel="laplacian", metric="mahalanobis"
    ),
    "classifier": lambda: NadarayaWatsonClassifier(
        kernel=Triangular(), bandwidth=[0.8, 1.2], empty_window="nearest"
    ),
    "regressor_cv": lambda: NadarayaWatsonRegressorCV(
        kernels=["gaussian", PowerKernel(p=1.5)], bandwidths=4
    ),
    "regressor_cv kfold": lambda: NadarayaWatsonRegressorCV(
        kernels="epanechnikov", bandwidths=[0.5, [0.7, 1.4]], cv=3
    ),
    "classifier_cv": lambda: NadarayaWatsonClassifierCV(
        kernels=["gaussian", "tricube"], bandwidths=5, metric="cityblock"
    ),
}
CLASSIFIERS = (NadarayaWatsonClassifier, NadarayaWatsonClassifierCV)
#: Every public estimator.
ESTIMATORS = [
    NadarayaWatsonRegressor,
    NadarayaWatsonRegressorCV,
    NadarayaWatsonClassifier,
    NadarayaWatsonClassifierCV,
    LocalLinearRegressor,
    LocalLinearRegressorCV,
    LocalPolynomialRegressor,
    LocalPolynomialRegressorCV,
]


def is_classifier(est):
    return isinstance(est, CLASSIFIERS)


def problem(est, n=40, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if is_classifier(est):
        y = np.array(["north", "south", "west"])[np.arange(n) % 3]
    else:
        y = np.column_stack([np.sin(2 * X[:, 0]), X[:, -1] ** 2])
    w = rng.integers(1, 4, size=n).astype(float)
    Q = rng.normal(size=(25, d)) * 1.5
    return X, y, w, Q


def outputs(est, Q):
    """Everything a fitted estimator computes at ``Q``."""
    out = {"predict": est.predict(Q), "attention_weights": est.attention_weights(Q)}
    if is_classifier(est):
        out["predict_proba"] = est.predict_proba(Q)
    return out


def assert_same_outputs(a, b):
    assert a.keys() == b.keys()
    for key in a:
        assert_array_equal(a[key], b[key], err_msg=key)


def fitted_attributes(est):
    return {k: v for k, v in vars(est).items() if k.endswith("_") and k[0] != "_"}


def assert_same_value(a, b, where="value"):
    """Deep equality of fitted attributes (arrays, dicts, lists, kernels)."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), where
        for key in a:
            assert_same_value(a[key], b[key], f"{where}[{key!r}]")
    elif isinstance(a, list | tuple):
        assert type(a) is type(b) and len(a) == len(b), where
        for i, (u, v) in enumerate(zip(a, b, strict=True)):
            assert_same_value(u, v, f"{where}[{i}]")
    elif isinstance(a, np.ndarray) and a.dtype == object:
        assert isinstance(b, np.ndarray) and a.shape == b.shape, where
        for i, (u, v) in enumerate(zip(a.ravel(), b.ravel(), strict=True)):
            assert_same_value(u, v, f"{where}[{i}]")
    elif isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        assert np.shape(a) == np.shape(b), where
        assert np.asarray(a).dtype == np.asarray(b).dtype, where
        assert_array_equal(a, b, err_msg=where)
    elif isinstance(a, float) and np.isnan(a):
        assert isinstance(b, float) and np.isnan(b), where
    else:
        assert type(a) is type(b), where
        assert a == b, where


def assert_same_fitted_state(a, b):
    state_a, state_b = fitted_attributes(a), fitted_attributes(b)
    assert state_a.keys() == state_b.keys()
    for key in state_a:
        assert_same_value(state_a[key], state_b[key], key)


# -- pickling ------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CONFIGS))
def test_pickle_round_trip(name):
    est = CONFIGS[name]()
    X, y, w, Q = problem(est)
    est.fit(X, y, w)
    expected = outputs(est, Q)
    restored = pickle.loads(pickle.dumps(est, protocol=pickle.HIGHEST_PROTOCOL))
    assert type(restored) is type(est)
    assert_same_fitted_state(restored, est)
    assert_same_outputs(outputs(restored, Q), expected)
    assert restored.score(Q, est.predict(Q)) == est.score(Q, est.predict(Q))
    # The restored estimator can be refitted like the original.
    X2, y2, _, _ = problem(est, n=20, seed=1)
    assert_same_outputs(
        outputs(restored.fit(X2, y2), Q), outputs(clone(est).fit(X2, y2), Q)
    )


@pytest.mark.parametrize("name", list(CONFIGS))
def test_pickled_unfitted_estimator_stays_unfitted(name):
    est = CONFIGS[name]()
    restored = pickle.loads(pickle.dumps(est))
    with pytest.raises(NotFittedError):
        check_is_fitted(restored)
    assert restored.get_params().keys() == est.get_params().keys()


# -- clone -------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CONFIGS))
def test_clone_gives_an_unfitted_copy(name):
    est = CONFIGS[name]()
    X, y, w, Q = problem(est)
    est.fit(X, y, w)
    copy = clone(est)
    assert fitted_attributes(copy) == {}
    with pytest.raises(NotFittedError):
        copy.predict(Q)
    with pytest.raises(NotFittedError):
        copy.attention_weights(Q)
    params, copied = est.get_params(deep=False), copy.get_params(deep=False)
    assert params.keys() == copied.keys()
    for key, value in params.items():
        assert_same_value(copied[key], value, key)
        if isinstance(value, Kernel | list | dict):
            # Mutable parameters are copied, not shared.
            assert copied[key] is not value, key
    assert_same_outputs(outputs(copy.fit(X, y, w), Q), outputs(est, Q))
    assert_same_fitted_state(copy, est)


def test_clone_of_cv_estimator_does_not_share_kernel_objects():
    kernel = PowerKernel(p=2.5)
    est = NadarayaWatsonRegressorCV(kernels=[kernel], bandwidths=[0.5, 1.0])
    X, y, _, _ = problem(est)
    copy = clone(est).fit(X, y)
    assert copy.kernels[0] is not kernel and copy.kernels[0] == kernel
    assert copy.kernel_ is not kernel and copy.kernel_ == kernel
    copy.kernels[0].p = 9.0
    assert kernel.p == 2.5


# -- concurrent prediction -----------------------------------------------------------


@pytest.mark.parametrize("name", ["regressor", "classifier", "regressor_cv"])
def test_predict_from_four_threads(name):
    est = CONFIGS[name]()
    # More training rows than one tile of the computational core (the
    # cross-validated estimator predicts through the same code).
    X, y, w, _ = problem(est, n=500 if name.endswith("cv") else 4200)
    est.fit(X, y, w)
    rng = np.random.default_rng(1)
    chunks = [rng.normal(size=(100, 2)) * (1 + k % 3) for k in range(8)]
    serial = [outputs(est, Q) for Q in chunks]
    state = {k: np.copy(v) for k, v in fitted_attributes(est).items()}
    with ThreadPoolExecutor(max_workers=4) as pool:
        concurrent = list(pool.map(lambda Q: outputs(est, Q), chunks))
    for got, want in zip(concurrent, serial, strict=True):
        assert_same_outputs(got, want)
    for key, value in fitted_attributes(est).items():
        assert_same_value(np.copy(value), state[key], key)


# -- refitting -----------------------------------------------------------------------


def refit_problems(est):
    """Two problems that differ in n_samples, n_features, classes and names."""
    X1, y1, w1, Q1 = problem(est, n=30, d=2, seed=2)
    X2, y2, _, Q2 = problem(est, n=17, d=3, seed=3)
    if is_classifier(est):
        # Integer labels, two classes, that follow X (labels unrelated to it
        # put the default grid's best at its largest bandwidth).
        y2 = (X2[:, 0] > np.median(X2[:, 0])).astype(int) + 10
    else:
        y2 = y2[:, 0]  # one output instead of two
    X1 = pd.DataFrame(X1, columns=["height", "weight"])
    return (X1, y1, w1, Q1), (X2, y2, None, Q2)


#: Per-feature bandwidths fit one number of features only: the estimators that
#: have them get rules or scalars here.
REFIT_CONFIGS = {
    **CONFIGS,
    "classifier": lambda: NadarayaWatsonClassifier(
        kernel=Triangular(), bandwidth="scott"
    ),
    "regressor_cv kfold": lambda: NadarayaWatsonRegressorCV(
        kernels="epanechnikov", bandwidths=[0.5, 1.5], cv=3
    ),
}


@pytest.mark.parametrize("name", list(REFIT_CONFIGS))
def test_refit_leaves_no_stale_state(name):
    make = REFIT_CONFIGS[name]
    est = make()
    first, second = refit_problems(est)
    X1, y1, w1, Q1 = first
    X2, y2, w2, Q2 = second
    est.fit(X1, y1, w1)
    assert hasattr(est, "feature_names_in_")
    est.fit(X2, y2, w2)
    fresh = make().fit(X2, y2, w2)
    assert not hasattr(est, "feature_names_in_")
    assert est.n_features_in_ == 3
    assert_same_fitted_state(est, fresh)
    assert_same_outputs(outputs(est, Q2), outputs(fresh, Q2))
    if is_classifier(est):
        assert_array_equal(est.classes_, [10, 11])
    # And back again, with feature names.
    est.fit(X1, y1, w1)
    again = make().fit(X1, y1, w1)
    assert_same_fitted_state(est, again)
    Q1 = pd.DataFrame(Q1, columns=["height", "weight"])
    assert_same_outputs(outputs(est, Q1), outputs(again, Q1))


def test_refit_without_sample_weight_forgets_them():
    est = NadarayaWatsonRegressor(bandwidth=0.6)
    X, y, w, Q = problem(est)
    est.fit(X, y, w).fit(X, y)
    assert est.sample_weight_ is None
    fresh = NadarayaWatsonRegressor(bandwidth=0.6).fit(X, y)
    assert_array_equal(est.predict(Q), fresh.predict(Q))


# -- the caller's arrays -------------------------------------------------------------


def read_only(*arrays):
    copies = [np.array(a, copy=True) for a in arrays]
    for a in arrays:
        a.flags.writeable = False
    return copies


@pytest.mark.parametrize("name", list(CONFIGS))
def test_fit_does_not_modify_its_inputs(name):
    est = CONFIGS[name]()
    X, y, w, Q = problem(est)
    w[::5] = 0.0  # rows left out of the rules and of the sums
    copies = read_only(X, y, w)
    est.fit(X, y, w)
    outputs(est, Q)
    for a, c in zip((X, y, w), copies, strict=True):
        assert_array_equal(a, c)
        assert not a.flags.writeable


@pytest.mark.parametrize("layout", ["C", "F", "strided", "float32"])
@pytest.mark.parametrize("name", list(CONFIGS))
def test_predict_does_not_modify_its_input(name, layout):
    est = CONFIGS[name]()
    X, y, w, Q = problem(est)
    est.fit(X, y, w)
    expected = outputs(est, Q)
    if layout == "F":
        Q = np.asfortranarray(Q)
    elif layout == "strided":
        wide = np.zeros((Q.shape[0] * 2, Q.shape[1] * 3))
        wide[::2, ::3] = Q
        Q = wide[::2, ::3]
    elif layout == "float32":
        Q = Q.astype(np.float32)
        expected = outputs(est, Q.astype(np.float64))
    (copy,) = read_only(Q)
    got = outputs(est, Q)
    if is_classifier(est):
        est.score(Q, est.predict(Q))
    assert_array_equal(Q, copy)
    assert_same_outputs(got, expected)


@pytest.mark.parametrize(
    "make_input",
    [
        np.asfortranarray,
        lambda X: X[:, ::-1],
        lambda X: pd.DataFrame(X, columns=["a", "b", "c"]),
    ],
    ids=["fortran", "strided", "dataframe"],
)
def test_fitted_training_inputs_are_contiguous(make_input):
    """Fitted state is plain C-contiguous arrays, whatever the input layout."""
    rng = np.random.default_rng(11)
    X = rng.normal(size=(40, 3))
    y = X[:, 0] > 0
    for est in (NadarayaWatsonRegressor(), NadarayaWatsonClassifier()):
        fitted = est.fit(make_input(X), y)
        assert fitted.X_fit_.flags["C_CONTIGUOUS"]


@pytest.mark.parametrize("after", [{"metric": "mahalanobis"}, {"metric": "cosine"}])
def test_predict_reads_the_metric_resolved_at_fit(after):
    """A metric changed after fit takes effect at the next fit: predictions
    keep the fitted metric (and its parameters), whatever the batch."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(60, 3))
    y = X[:, 0] ** 2 + 0.1 * rng.normal(size=60)
    Q = rng.normal(size=(12, 3))
    reg = NadarayaWatsonRegressor(bandwidth=0.8).fit(X, y)
    before = reg.predict(Q)
    reg.set_params(**after)
    assert reg.metric_ == "euclidean"
    assert_allclose(reg.predict(Q), before, rtol=1e-14)
    assert_allclose(np.concatenate([reg.predict(Q[:5]), reg.predict(Q[5:])]), before)
    refit = reg.fit(X, y)
    assert refit.metric_ == after["metric"]
    expected = NadarayaWatsonRegressor(bandwidth=0.8, **after).fit(X, y).predict(Q)
    assert_allclose(refit.predict(Q), expected, rtol=1e-14)


#: A valid value other than the default for every parameter of the estimators.
OTHER_VALUES = {
    "algorithm": "brute",
    "bandwidth": 0.37,
    "bandwidths": [0.2, 0.9],
    "binned_tol": 0.3,
    "categorical_features": [1],
    "categorical_kernel": "liracine",
    "cv": 3,
    "degree": 3,
    "empty_window": "raise",
    "kernel": "cauchy",
    "kernels": ["cosine"],
    "max_leverage": 1.01,
    "metric": "chebyshev",
    "metric_params": {"p": 3},
    "min_eigenvalue": 0.9,
    "n_jobs": 1,
    "noise_variance": 0.5,
    "ordered_features": [0],
    "ordered_kernel": "liracine",
    "refine": False,
    "robust_iterations": 2,
    "scoring": "r2",
    "span": 0.9,
    "spans": [0.4],
}


def _outputs(est, Q):
    """Everything the fitted estimator gives at the queries ``Q``."""
    if is_classifier(est):
        return [est.predict_proba(Q), est.attention_weights(Q)]
    mean, std = est.predict(Q, return_std=True)
    out = [mean, std, est.predict_interval(Q)[0], est.effective_sample_size(Q)]
    out.append(est.attention_weights(Q))
    if hasattr(est, "gradient"):
        out.append(est.gradient(Q))
    return out


@pytest.mark.parametrize("make", ESTIMATORS, ids=lambda c: c.__name__)
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_parameter_changed_after_fit_changes_no_output(make):
    # Queries beyond the data (ridged local designs, compact windows that may
    # be empty) and inside it; a compact kernel and a small bandwidth.
    rng = np.random.default_rng(5)
    X = rng.uniform(0, 1, (60, 2))
    y = np.sin(4 * X[:, 0]) + X[:, 1] ** 2 + 0.1 * rng.normal(size=60)
    if issubclass(make, CLASSIFIERS):
        y = (y > np.median(y)).astype(int)
    Q = np.vstack([rng.uniform(0, 1, (20, 2)), [[1.6, 0.5], [0.5, -0.7]]])
    params = {"empty_window": "nearest"}
    if "kernel" in make().get_params():
        params.update(kernel="tricube", bandwidth=0.4)
    else:
        params.update(kernels=["tricube"], bandwidths=[0.3, 0.4, 0.5])
    est = make(**params).fit(X, y)
    before = _outputs(est, Q)
    for name in make().get_params():
        est.set_params(**{name: OTHER_VALUES[name]})
        for got, ref in zip(_outputs(est, Q), before, strict=True):
            assert_allclose(got, ref, rtol=1e-12, atol=0, err_msg=name)
        est.set_params(**{name: make(**params).get_params()[name]})
