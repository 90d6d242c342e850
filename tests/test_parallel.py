"""Parallel prediction: n_jobs and joblib backends give the serial answers."""

import numpy as np
import pytest
from joblib import parallel_config
from numpy.testing import assert_allclose

from sknw import (
    LocalLinearRegressor,
    NadarayaWatsonClassifier,
    NadarayaWatsonRegressor,
    NadarayaWatsonRegressorCV,
)
from sknw._sums import _parallel
from sknw._trace import traced


def _data(n=600, m=1500, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=n)
    return X, y, rng.normal(size=(m, d))


@pytest.fixture
def trace():
    """The events of the test (see sknw._trace): its parallel batches."""
    with traced() as trace:
        yield trace


@pytest.mark.parametrize("n_jobs", [2, 3, -1])
@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov", "silverman"])
def test_n_jobs_equals_serial(n_jobs, kernel, trace):
    X, y, Q = _data()
    # Wide enough that no query's epanechnikov window is empty.
    serial = NadarayaWatsonRegressor(kernel=kernel, bandwidth=0.8).fit(X, y)
    parallel = NadarayaWatsonRegressor(kernel=kernel, bandwidth=0.8, n_jobs=n_jobs)
    expected = serial.predict(Q)
    got = parallel.fit(X, y).predict(Q)
    assert_allclose(got, expected, rtol=1e-13)
    n_workers = _parallel.effective_n_jobs(n_jobs)
    expected_batches = min(n_workers, Q.shape[0] // _parallel.MIN_BATCH.value)
    batches = trace.values("batch", "n_queries")
    if expected_batches > 1:
        assert len(batches) == expected_batches
        assert sum(batches) == Q.shape[0]


def test_classifier_and_cv_estimator_parallel():
    X, y, Q = _data(seed=1)
    labels = np.where(y > 0, "up", "down")
    clf = NadarayaWatsonClassifier(bandwidth=0.5)
    expected = clf.fit(X, labels).predict_proba(Q)
    got = clf.set_params(n_jobs=2).fit(X, labels).predict_proba(Q)
    assert_allclose(got, expected, rtol=1e-13)
    cv = NadarayaWatsonRegressorCV(bandwidths=5).fit(X, y)
    cv2 = NadarayaWatsonRegressorCV(bandwidths=5, n_jobs=2).fit(X, y)
    # To rounding of the targets' spread: the batches' sums may round apart,
    # and the polished bandwidth with them.
    spread = np.ptp(y)
    assert_allclose(cv2.predict(Q), cv.predict(Q), rtol=1e-13, atol=1e-12 * spread)


@pytest.mark.parametrize("backend", ["threading", "loky"])
def test_joblib_backends(backend):
    X, y, Q = _data(seed=2)
    est = NadarayaWatsonRegressor(bandwidth=[0.5, 0.8]).fit(X, y)
    expected = est.predict(Q)
    with parallel_config(backend=backend, n_jobs=2):
        got = est.predict(Q)
    assert_allclose(got, expected, rtol=1e-13)


def test_few_queries_run_serially(trace):
    X, y, Q = _data(m=_parallel.MIN_BATCH.value + 10)
    est = NadarayaWatsonRegressor(n_jobs=4).fit(X, y)
    trace.events.clear()  # the leave-one-out passes of bandwidth="cv"
    est.predict(Q)
    assert trace.count("sums") >= 1
    assert trace.count("batch") == 0


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov"])
def test_local_linear_fast_paths_run_in_batches(kernel, trace):
    # The moments about each query (one feature) are summed over batches of
    # queries too, with the serial estimates.
    rng = np.random.default_rng(4)
    X = rng.uniform(0, 1, (1500, 1))
    y = np.sin(6 * X[:, 0]) + rng.normal(0, 0.1, 1500)
    Q = rng.uniform(0, 1, (1200, 1))
    serial = LocalLinearRegressor(kernel=kernel, bandwidth=0.05).fit(X, y)
    parallel = LocalLinearRegressor(kernel=kernel, bandwidth=0.05, n_jobs=2)
    parallel.fit(X, y)
    assert parallel.algorithm_ in ("fgt", "sorted")
    assert_allclose(parallel.predict(Q), serial.predict(Q), rtol=1e-13)
    assert trace.count("batch") >= 2
