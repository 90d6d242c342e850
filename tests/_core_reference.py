"""Brute-force references, data and settings shared by the tests of the core."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.spatial.distance import cdist
from threadpoolctl import threadpool_info

from sknw._sums import TILE_ELEMENTS
from sknw._sums._base import TILE_TRAIN_ROWS
from sknw.kernels import Kernel

RTOL = 1e-12


@pytest.fixture(autouse=True)
def _training_tiles_of_4096():
    """Training tiles of 4096 rows, the boundary the core's tests straddle."""
    with TILE_TRAIN_ROWS.set(4096):
        yield


TILES = [1, 7, 64, TILE_ELEMENTS]
# More training rows than one training tile holds (4096), so that the shift is
# carried across training tiles.
N_LARGE = 4096 + 300


def brute_sums(Q, X, V, head, metric="euclidean", metric_params=None, w=None):
    """``S``, ``den`` and ``M`` of the core from their definitions.

    ``M`` is the largest log kernel value over the points of positive weight.
    """
    D = cdist(Q, X, metric, **(metric_params or {}))
    K = np.asarray(head.kernel(D / head.divisor), dtype=np.float64)
    w = np.ones(X.shape[0]) if w is None else w
    KW = K * w
    with np.errstate(divide="ignore"):
        L = np.log(np.abs(K))
    L[:, w == 0] = -np.inf
    M = L.max(axis=1)
    scale = np.where(np.isfinite(M), np.exp(-np.where(np.isfinite(M), M, 0.0)), 0.0)
    S = (KW * scale[:, None]) @ V
    den = (KW * scale[:, None]).sum(axis=1)
    return S, den, M


def make_data(seed, m, n, d, k=2):
    rng = np.random.default_rng(seed)
    Q = rng.normal(size=(m, d))
    X = rng.normal(size=(n, d))
    V = rng.normal(size=(n, k)) + 3.0
    w = rng.uniform(0.2, 2.0, size=n)
    return Q, X, V, w


def assert_sums_close(result, reference):
    """Equal sums: the same shift, or (the probe-shifted GEMM path) a shift at
    most 660 below the reference's, compared at the reference's shift."""
    S, den, M = result
    S_ref, den_ref, M_ref = reference
    other = (M != M_ref) & np.isfinite(M_ref) & (M <= M_ref)
    assert np.all(M[other] >= M_ref[other] - 660.0)
    assert_allclose(M[~other], M_ref[~other], rtol=RTOL, atol=1e-13)
    factor = np.exp(np.where(other, M - np.where(other, M_ref, 0.0), 0.0))
    assert_allclose(den * factor, den_ref, rtol=RTOL)
    assert_allclose(S * factor[:, None], S_ref, rtol=RTOL, atol=1e-13)


class RecordingKernel(Kernel):
    """A Gaussian that records the BLAS threads in force while it is
    evaluated (inside the core's sums)."""

    seen = []

    def __call__(self, u):
        info = threadpool_info()
        self.seen.extend(i["num_threads"] for i in info if i["user_api"] == "blas")
        return np.exp(-0.5 * np.asarray(u, dtype=float) ** 2)
