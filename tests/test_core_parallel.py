"""Parallel leave-one-out sums of the core against the serial ones."""

from _core_reference import (
    _training_tiles_of_4096,  # noqa: F401  (autouse)
    make_data,
)
from numpy.testing import assert_allclose

from sknw._sums import Head, _parallel, kernel_sums
from sknw.kernels import Gaussian, Triangular


def test_parallel_leave_one_out_equals_serial(monkeypatch):
    monkeypatch.setattr(_parallel, "MIN_BATCH", 8)
    _, X, V, w = make_data(13, 1, 90, 3)
    heads = [Head(Gaussian(), 0.5), Head(Gaussian(), 0.25), Head(Triangular(), 2.0)]
    params = {"sample_weight": w, "exclude_self": True, "self_weight": w / 3}
    serial = kernel_sums(X, X, V, heads, **params)
    threads = _parallel.parallel_kernel_sums(X, X, V, heads, n_jobs=3, **params)
    for (S, den, M), (S_ref, den_ref, M_ref) in zip(threads, serial, strict=True):
        assert_allclose(M, M_ref, rtol=1e-13)
        assert_allclose(den, den_ref, rtol=1e-12)
        assert_allclose(S, S_ref, rtol=1e-12, atol=1e-14)
