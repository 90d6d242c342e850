"""Metrics undefined on some rows: a ValueError that names them, never a NaN
estimate, a dropped point or an answer that depends on the other queries."""

import numpy as np
import pytest

from sknw import (
    LocalLinearRegressor,
    NadarayaWatsonClassifier,
    NadarayaWatsonClassifierCV,
    NadarayaWatsonRegressor,
    NadarayaWatsonRegressorCV,
)


def _braycurtis_like(a, b):
    """A callable metric, undefined (NaN) for two zero vectors."""
    total = np.abs(a + b).sum()
    return np.abs(a - b).sum() / total if total else np.nan


# (metric, a row it is undefined on)
UNDEFINED = [
    ("cosine", [0.0, 0.0, 0.0]),
    ("correlation", [2.0, 2.0, 2.0]),
    ("braycurtis", [0.0, 0.0, 0.0]),
    (_braycurtis_like, [0.0, 0.0, 0.0]),
]
IDS = ["cosine", "correlation", "braycurtis", "callable"]


def _undefined_far_out(a, b):
    """A callable metric, undefined (NaN) for points with a coordinate beyond
    100, whatever the other point."""
    if max(np.abs(a).max(), np.abs(b).max()) > 100:
        return np.nan
    return np.abs(a - b).sum()


# (metric, a query row it is undefined on, whatever the training rows)
UNDEFINED_QUERIES = [
    ("cosine", [0.0, 0.0, 0.0]),
    ("correlation", [2.0, 2.0, 2.0]),
    (_undefined_far_out, [1e3, 0.0, 0.0]),
]
KERNELS = ["gaussian", "laplacian", "epanechnikov", "boxcar"]


def _data(n=40, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.5, 2.0, size=(n, 3)) * rng.choice([-1, 1], size=(n, 3))
    y = X[:, 0] - X[:, 1] + 0.1 * rng.normal(size=n)
    return X, y, rng.uniform(0.5, 2.0, size=(6, 3))


def _estimators(metric, kernel):
    common = {"metric": metric, "kernel": kernel}
    yield NadarayaWatsonRegressor(bandwidth=0.8, **common), "regression"
    # Per feature (equal, so that a constant row stays constant when scaled).
    yield NadarayaWatsonRegressor(bandwidth=[0.8, 0.8, 0.8], **common), "regression"
    yield NadarayaWatsonClassifier(bandwidth=0.8, **common), "classification"
    if kernel != "boxcar":
        yield LocalLinearRegressor(bandwidth=1.5, **common), "regression"


def _target(y, kind):
    return y if kind == "regression" else (y > 0).astype(int)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize(("metric", "bad"), UNDEFINED, ids=IDS)
def test_undefined_training_rows_are_refused_at_fit(metric, bad, kernel):
    X, y, _ = _data()
    X[[3, 17]] = bad
    for est, kind in _estimators(metric, kernel):
        with pytest.raises(
            ValueError, match=r"2 rows of the training data \(indices 3, 17\)"
        ):
            est.fit(X, _target(y, kind))


@pytest.mark.parametrize(
    "make", [NadarayaWatsonRegressorCV, NadarayaWatsonClassifierCV]
)
@pytest.mark.parametrize("cv", [None, 3])
@pytest.mark.parametrize(("metric", "bad"), UNDEFINED, ids=IDS)
def test_cv_estimators_refuse_undefined_training_rows(metric, bad, cv, make):
    X, y, _ = _data()
    X[5] = bad
    target = y if make is NadarayaWatsonRegressorCV else (y > 0).astype(int)
    with pytest.raises(ValueError, match=r"training data \(indices 5\)"):
        make(metric=metric, cv=cv, bandwidths=4).fit(X, target)


# Under the callable (cityblock) metric, some queries' compact windows are
# empty at these bandwidths, and local linear designs singular.
@pytest.mark.filterwarnings("ignore::sknw.exceptions.EmptyWindowWarning")
@pytest.mark.filterwarnings("ignore::sknw.exceptions.SingularDesignWarning")
@pytest.mark.parametrize("n_jobs", [None, 2])
@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize(
    ("metric", "bad"), UNDEFINED_QUERIES, ids=["cosine", "correlation", "callable"]
)
def test_undefined_queries_raise_and_name_their_rows(metric, bad, kernel, n_jobs):
    X, y, Q = _data()
    # Enough queries for two parallel batches (a callable metric is slow:
    # one batch).
    Q_big = np.tile(Q, (87, 1) if isinstance(metric, str) else (1, 1))
    last = Q_big.shape[0] - 1
    Q_big[[2, last]] = bad
    for est, kind in _estimators(metric, kernel):
        est.set_params(n_jobs=n_jobs).fit(X, _target(y, kind))
        methods = ["predict", "attention_weights"]
        if kind == "classification":
            methods.append("predict_proba")
        else:
            methods.append("standard_error")
        for method in methods:
            with pytest.raises(
                ValueError, match=rf"2 query rows \(indices 2, {last}\)"
            ):
                getattr(est, method)(Q_big)
        # The other queries' answers do not depend on their batch.
        good = np.delete(Q_big, [2, last], axis=0)[:6]
        answer = est.predict if kind == "regression" else est.predict_proba
        together = answer(good)
        apart = np.concatenate([answer(good[:1]), answer(good[1:3]), answer(good[3:])])
        assert np.all(np.isfinite(together))
        np.testing.assert_allclose(apart, together, rtol=1e-12)
