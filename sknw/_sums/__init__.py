"""The one computational core: kernel weight sums, by one of several backends.

Every estimator in sknw computes its predictions, attention weights and
leave-one-out scores here. For queries ``Q`` (m x d), training points ``X``
(n x d) with sample weights ``w`` and values ``V`` (n x k), a *head* (a kernel
and a bandwidth divisor, :class:`Head`) defines log kernel values

    L[i, j] = log |K(dist(Q[i], X[j]) / h)|

and every backend returns, for every head, the same triple ``(S, den, M)``:
a shift ``M[i]`` and the shifted sums
``S[i] = sum_j s_ij exp(L[i, j] - M[i]) w[j] V[j]`` and
``den[i] = sum_j s_ij exp(L[i, j] - M[i]) w[j]`` (``s_ij`` the kernel's sign,
1 for non-negative kernels). The ratio ``S / den`` is the Nadaraya--Watson
average. A head's divisor may be one per query (nearest-neighbour spans):
the dense backend serves those, and the sorted one in one feature (a ladder
of indexes, :class:`~sknw._sums._sorted.SortedLadder`). The dense backend
shifts by ``M[i] = max_j L[i, j]`` over the points
of positive weight, so the nearest term is exactly ``w[j] > 0`` and the ratio
never underflows to 0/0, however small the bandwidth. A query whose weights
are all zero (an empty window of a compact kernel) has ``M = -inf`` and
``den = 0``. Backends of bounded kernels (tree, sorted) and of the expansions
(fgt, binned) leave their sums unshifted (``M = 0``); the GEMM path of a
single Gaussian head shifts each query by a bound from probed training
points, at most 660 below its largest log weight, and the tiles backend by
its log weight to its nearest training point.

The layers, after scikit-learn's pairwise-distance reductions::

    estimators (sknw._base: fit resolves the algorithm once; the fitted
        |       smoother, sknw._smoother, sums at predict)
        |
    _dispatcher   choose(algorithm, accepted, FitRequest) -> (name, index)
        |         backend_sums(name, index, Q, X, V, heads, ...)
        |         local_moments / grid_local_moments: the local fits' moments
        |         BACKENDS: fgt, sorted, tree, tiles, binned, brute (the
        |         "auto" order)
        |
    backends      _fgt  _sorted  _tree  _tiles  _binned  _dense
        |         each: why_not / fit / serves / sums
        |         (_fgt_grid: the leave-one-out moments of many heads at once)
        |
    _dense.kernel_sums     the tiled loop (and the exact fallback of the others)
        |-- _gaussian      GEMM paths of a single Gaussian head (line, plane)
        |-- _chains        squaring chains of log-linear heads
        |-- _nearest       the limit of a vanishing bandwidth
        |-- _parallel      batches of queries over joblib workers
        |
    _cells, _pairs         product kernels with discrete features: cell by
                           cell, or from the pair tables a search keeps
        |
    _base, _traits         tiles, heads, accumulators, shifted exp, floors,
                           self-exclusion; what a kernel's flags allow

The work is split into tiles over query rows *and* training rows so that the
extra memory is a few tiles of ``tile_elements`` doubles (within
scikit-learn's ``working_memory``, :func:`default_tile_elements`), whatever
``m`` and ``n``; the shift is carried across training tiles as in an online
softmax. Several heads share each tile of distances, which makes a grid of
kernels and bandwidths cost one distance computation.

Adding a backend: a module with a :class:`~sknw._sums._base.Backend` subclass
and a line in :data:`~sknw._sums._dispatcher.BACKENDS` (whose order is the
``"auto"`` precedence); the estimators' ``algorithm`` values derive from it.
"""

from ._base import (
    EXP_FLOOR,
    TILE_ELEMENTS,
    Backend,
    Head,
    MomentSums,
    default_tile_elements,
    line_offsets,
    line_origin,
    pairwise_distances,
    power_of_two_scale,
)
from ._binned import GridSizeError
from ._dense import exact_rows, kernel_sums, log_weight_rows
from ._dispatcher import (
    ALGORITHMS,
    AUTO_MIN_SAMPLES,
    BACKENDS,
    DENSE,
    FitRequest,
    algorithms,
    backend_sums,
    check,
    choose,
    grid_local_moments,
    grid_sums,
    local_moments,
    why_not,
)
from ._nearest import empty_window_estimates, nearest_mask, nearest_scale, nearest_sums
from ._pairs import PairCache
from ._parallel import parallel_kernel_sums
from ._support import line_moments, line_support

__all__ = [
    "ALGORITHMS",
    "AUTO_MIN_SAMPLES",
    "BACKENDS",
    "DENSE",
    "EXP_FLOOR",
    "TILE_ELEMENTS",
    "Backend",
    "FitRequest",
    "GridSizeError",
    "Head",
    "MomentSums",
    "PairCache",
    "algorithms",
    "backend_sums",
    "check",
    "choose",
    "default_tile_elements",
    "empty_window_estimates",
    "exact_rows",
    "grid_local_moments",
    "grid_sums",
    "local_moments",
    "kernel_sums",
    "line_offsets",
    "line_origin",
    "line_moments",
    "line_support",
    "log_weight_rows",
    "nearest_mask",
    "nearest_scale",
    "nearest_sums",
    "pairwise_distances",
    "parallel_kernel_sums",
    "power_of_two_scale",
    "why_not",
]
