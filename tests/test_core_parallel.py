"""Parallel sums of the core: leave-one-out against the serial sums, and BLAS
on one thread."""

import numpy as np
import pytest
from _core_reference import (
    RecordingKernel,
    _training_tiles_of_4096,  # noqa: F401  (autouse)
    make_data,
)
from numpy.testing import assert_allclose
from threadpoolctl import threadpool_info, threadpool_limits

from sknw import NadarayaWatsonRegressor
from sknw._sums import Head, _parallel, kernel_sums
from sknw._trace import traced
from sknw.kernels import Gaussian, Triangular


def test_parallel_leave_one_out_equals_serial():
    _, X, V, w = make_data(13, 1, 90, 3)
    heads = [Head(Gaussian(), 0.5), Head(Gaussian(), 0.25), Head(Triangular(), 2.0)]
    params = {"sample_weight": w, "exclude_self": True, "self_weight": w / 3}
    serial = kernel_sums(X, X, V, heads, **params)
    with _parallel.MIN_BATCH.set(8), traced() as trace:
        threads = _parallel.parallel_kernel_sums(
            X, X, V, heads, sums=kernel_sums, n_jobs=3, **params
        )
    assert sorted(trace.values("batch", "first")) == [0, 30, 60]
    for (S, den, M), (S_ref, den_ref, M_ref) in zip(threads, serial, strict=True):
        assert_allclose(M, M_ref, rtol=1e-13)
        assert_allclose(den, den_ref, rtol=1e-12)
        assert_allclose(S, S_ref, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("n_jobs", [None, 2])
def test_the_sums_run_blas_on_one_thread(n_jobs):
    rng = np.random.default_rng(0)
    X, Q = rng.normal(size=(300, 3)), rng.normal(size=(600, 3))
    y = X[:, 0]
    RecordingKernel.seen = []
    reg = NadarayaWatsonRegressor(
        kernel=RecordingKernel(), bandwidth=0.5, n_jobs=n_jobs
    )
    with threadpool_limits(limits=2, user_api="blas"):
        reg.fit(X, y).predict(Q)
        outside = [
            i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"
        ]
    assert RecordingKernel.seen and set(RecordingKernel.seen) == {1}
    # The threads in force outside the sums are left as they were.
    assert set(outside) <= {2} or not outside


def test_nested_core_blas_threads_contexts_enter_the_limit_once():
    def blas_threads():
        return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}

    with threadpool_limits(limits=2, user_api="blas"), traced() as trace:
        before = blas_threads()
        with _parallel.core_blas_threads():
            with pytest.raises(RuntimeError):
                with _parallel.core_blas_threads():
                    assert blas_threads() <= {1}
                    raise RuntimeError
            with _parallel.core_blas_threads():  # still nested after the error
                assert blas_threads() <= {1}
        assert blas_threads() == before
        with _parallel.core_blas_threads():  # a new outermost context
            assert blas_threads() <= {1}
    # The BLAS limit of each outermost context, entered once.
    assert trace.values("blas_limit", "limit") == [1] * 2
