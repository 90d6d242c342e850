"""The one computational core: tiled, log-domain kernel weight sums.

Every estimator in sknw computes its predictions, attention weights and
leave-one-out scores here. For queries ``Q`` (m x d), training points ``X``
(n x d) with log sample weights ``log_w`` and values ``V`` (n x k), a *head*
(a kernel and a bandwidth divisor) defines log weights

    L[i, j] = log |K(dist(Q[i], X[j]) / h)| + log_w[j]

and the core returns, for every query, the shift ``M[i] = max_j L[i, j]`` and the
shifted sums ``S[i] = sum_j s_ij exp(L[i, j] - M[i]) V[j]`` and
``den[i] = sum_j s_ij exp(L[i, j] - M[i])`` (``s_ij`` the kernel's sign, 1 for
non-negative kernels). The ratio ``S / den`` is the Nadaraya--Watson average;
since the largest term is exactly 1 it never underflows to 0/0, however small
the bandwidth. A query whose weights are all zero (an empty window of a compact
kernel) has ``M = -inf`` and ``den = 0``.

The work is split into tiles over query rows *and* training rows so that the
extra memory is a few tiles of ``tile_elements`` doubles, whatever ``m`` and
``n``; the shift is carried across training tiles as in an online softmax.
Several heads share each tile of distances, which makes a grid of kernels and
bandwidths cost one distance computation.
"""

from dataclasses import dataclass

import numpy as np
from scipy.spatial.distance import cdist
from sklearn import get_config

#: Default number of float64 elements in one (query x train) tile: 2 MiB.
TILE_ELEMENTS = 1 << 18


def default_tile_elements():
    """Tile size: :data:`TILE_ELEMENTS`, within scikit-learn's ``working_memory``.

    ``working_memory`` (MiB) bounds the few tile-sized buffers alive at once.
    """
    budget = int(get_config()["working_memory"] * 2**20 / 8 / 4)
    return max(1, min(TILE_ELEMENTS, budget))


@dataclass(frozen=True)
class Head:
    """A kernel with a scalar bandwidth divisor: ``u = distance / divisor``."""

    kernel: object
    divisor: float = 1.0


def _tile_shape(m, n, tile_elements):
    bn = int(min(n, 4096)) if n > 0 else 1
    bq = int(max(1, min(m, tile_elements // max(bn, 1))))
    return bq, bn


def _as_float64(A):
    """Distances and weights are computed in float64 (a copy for float32)."""
    return np.asarray(A, dtype=np.float64)


def pairwise_distances(Q, X, metric, metric_params, *, squared=False):
    """Distances between the rows of ``Q`` and ``X`` with :func:`cdist`.

    With ``squared=True`` (euclidean metric only) returns squared euclidean
    distances, computed without a square root.
    """
    params = metric_params or {}
    if squared:
        if Q.shape[1] == 1:
            D = np.subtract(Q, X.reshape(1, -1))
            np.multiply(D, D, out=D)
            return D
        return cdist(Q, X, "sqeuclidean")
    return cdist(Q, X, metric, **params)


def _use_squared(metric, heads):
    return metric == "euclidean" and all(h.kernel._native_sq for h in heads)


def _log_weights(D, head, squared, log_w):
    """Log kernel weights of one tile of distances for one head."""
    kernel = head.kernel
    inv = 1.0 / head.divisor
    with np.errstate(over="ignore"):
        if squared:
            inv2 = inv * inv
            # (1/h)**2 overflows for h < 1e-154: scale twice so 0 stays 0.
            u2 = D * inv2 if np.isfinite(inv2) else (D * inv) * inv
            L = kernel.log_value_sq(u2)
        else:
            L = kernel.log_value(D * inv)
    L = np.asarray(L, dtype=np.float64)
    if L.shape != D.shape:
        raise ValueError(
            f"Kernel {kernel!r} returned an array of shape {L.shape} for input "
            f"of shape {D.shape}; a kernel must be evaluated elementwise."
        )
    if log_w is not None:
        L += log_w
    return L


def _signs(D, head, squared):
    u = np.sqrt(D) if squared else D
    return head.kernel.sign(u * (1.0 / head.divisor))


def _check_user_kernel(L, head):
    """Validate the log values of a kernel that is not a built-in one.

    The default :meth:`Kernel.log_value` maps negative values of a kernel that
    declares itself non-negative to NaN, so one check covers NaN, negative and
    infinite kernel values.
    """
    if np.isnan(L).any() or np.isposinf(L).any():
        raise ValueError(
            f"Kernel {head.kernel!r} returned NaN, infinite or negative values. "
            "A kernel must return finite values, non-negative unless its class "
            "sets nonnegative = False."
        )


def kernel_sums(
    Q,
    X,
    V,
    heads,
    *,
    metric="euclidean",
    metric_params=None,
    log_w=None,
    exclude_self=False,
    self_log_w=None,
    tile_elements=TILE_ELEMENTS,
):
    """Shifted kernel-weighted sums of ``V`` for every query and head.

    Parameters
    ----------
    Q : ndarray of shape (m, d)
        Queries, already divided by any per-feature bandwidth.
    X : ndarray of shape (n, d)
        Training points, scaled like ``Q``.
    V : ndarray of shape (n, k)
        Values to average.
    heads : list of Head
    metric, metric_params
        Passed to :func:`scipy.spatial.distance.cdist`.
    log_w : ndarray of shape (n,) or None
        Logarithm of the sample weights (``-inf`` for weight 0).
    exclude_self : bool
        ``Q`` is ``X`` itself; leave each point out of its own sums (the exact
        leave-one-out estimate).
    self_log_w : ndarray of shape (n,) or None
        With ``exclude_self``, the log weight each point keeps in its own sums
        (frequency weights: leaving out one unit of a weight-3 point keeps
        weight 2); None (the default) leaves it out entirely.
    tile_elements : int
        Number of elements in one (query x train) tile.

    Returns
    -------
    list of (S, den, M)
        For every head: ``S`` of shape (m, k), ``den`` and ``M`` of shape (m,).
    """
    Q, X = _as_float64(Q), _as_float64(X)
    m, n = Q.shape[0], X.shape[0]
    k = V.shape[1]
    squared = _use_squared(metric, heads)
    user = [not type(h.kernel).__module__.startswith("sknw.") for h in heads]
    # One GEMM gives the sums of the values and of the weights.
    Vx = np.empty((n, k + 1), dtype=np.float64)
    Vx[:, :k] = V
    Vx[:, k] = 1.0
    out = [
        (np.zeros((m, k + 1)), np.full(m, -np.inf)) for _ in heads
    ]  # accumulators and shifts
    bq, bn = _tile_shape(m, n, tile_elements)
    for q0 in range(0, m, bq):
        q1 = min(q0 + bq, m)
        Qc = Q[q0:q1]
        for x0 in range(0, n, bn):
            x1 = min(x0 + bn, n)
            D = pairwise_distances(Qc, X[x0:x1], metric, metric_params, squared=squared)
            lw = None if log_w is None else log_w[x0:x1]
            if exclude_self:
                lo, hi = max(q0, x0), min(q1, x1)
                diag = np.arange(lo, hi)
            for h, head in enumerate(heads):
                L = _log_weights(D, head, squared, lw)
                if user[h]:
                    _check_user_kernel(L, head)
                if exclude_self and diag.size:
                    r, c = diag - q0, diag - x0
                    if self_log_w is None:
                        L[r, c] = -np.inf
                    else:
                        keep = self_log_w[diag]
                        own = 0.0 if lw is None else lw[c]
                        with np.errstate(invalid="ignore"):
                            kept_term = L[r, c] - own + keep
                        L[r, c] = np.where(np.isneginf(keep), -np.inf, kept_term)
                acc, M = out[h]
                _accumulate(acc[q0:q1], M[q0:q1], L, Vx[x0:x1], D, head, squared)
    return [(acc[:, :k], acc[:, k].copy(), M) for acc, M in out]


def _accumulate(acc, M, L, Vc, D, head, squared):
    """Online-softmax update of one tile into ``acc`` and ``M`` (in place)."""
    tile_max = L.max(axis=1)
    new_M = np.maximum(M, tile_max)
    finite = np.isfinite(new_M)
    safe_M = np.where(finite, new_M, 0.0)
    with np.errstate(invalid="ignore"):
        rescale = np.where(finite, np.exp(M - safe_M), 0.0)
    L -= safe_M[:, None]
    E = np.exp(L, out=L)
    if not head.kernel.nonnegative:
        E *= _signs(D, head, squared)
    acc *= rescale[:, None]
    acc += E @ Vc
    M[:] = new_M


def log_weight_rows(Q, X, head, *, metric, metric_params, log_w, tile_elements):
    """Yield ``(rows, L)``: full rows of log weights, ``tile_elements`` at a time."""
    Q, X = _as_float64(Q), _as_float64(X)
    m, n = Q.shape[0], X.shape[0]
    squared = _use_squared(metric, [head])
    user = not type(head.kernel).__module__.startswith("sknw.")
    bq = int(max(1, min(m, tile_elements // max(n, 1))))
    for q0 in range(0, m, bq):
        q1 = min(q0 + bq, m)
        D = pairwise_distances(Q[q0:q1], X, metric, metric_params, squared=squared)
        L = _log_weights(D, head, squared, log_w)
        if user:
            _check_user_kernel(L, head)
        if not head.kernel.nonnegative:
            yield slice(q0, q1), L, _signs(D, head, squared)
        else:
            yield slice(q0, q1), L, None


def nearest_mask(D, sample_weight=None):
    """Weights of the nearest training points (ties included) per row of ``D``.

    Each row holds the sample weights (1 without them) of the training points at
    the row's minimum distance among points of positive weight, and 0 elsewhere.
    """
    D = np.array(D, dtype=np.float64)
    if sample_weight is not None:
        D[:, sample_weight == 0] = np.inf
    ties = D == D.min(axis=1, keepdims=True)
    w = np.ones(D.shape[1]) if sample_weight is None else sample_weight
    return ties * w


def nearest_sums(
    Q,
    X,
    V,
    *,
    metric,
    metric_params,
    log_w=None,
    exclude_self=False,
    self_w=None,
    tile_elements=TILE_ELEMENTS,
):
    """Sums of ``w * V`` over the nearest training points of each query.

    All training points at the minimum distance (ties) count, each with its
    sample weight; points of weight zero are never nearest. This is the limit of
    the Gaussian estimate as the bandwidth tends to zero. With
    ``exclude_self=True`` (``Q`` is ``X``) each point's own row is left out, or
    keeps weight ``self_w[i]`` where that is positive (frequency weights).

    Returns
    -------
    S : ndarray of shape (m, k)
    den : ndarray of shape (m,)
        Sum of the weights of the nearest points.
    """
    Q, X = _as_float64(Q), _as_float64(X)
    m, n = Q.shape[0], X.shape[0]
    k = V.shape[1]
    w = np.ones(n) if log_w is None else np.exp(log_w)
    Vx = np.empty((n, k + 1))
    Vx[:, :k] = V * w[:, None]
    Vx[:, k] = w
    acc = np.zeros((m, k + 1))
    best = np.full(m, np.inf)
    bq, bn = _tile_shape(m, n, tile_elements)
    for q0 in range(0, m, bq):
        q1 = min(q0 + bq, m)
        for x0 in range(0, n, bn):
            x1 = min(x0 + bn, n)
            D = pairwise_distances(Q[q0:q1], X[x0:x1], metric, metric_params)
            if log_w is not None:
                D[:, w[x0:x1] == 0] = np.inf
            if exclude_self:
                diag = np.arange(max(q0, x0), min(q1, x1))
                if self_w is not None:
                    diag = diag[self_w[diag] <= 0]
                D[diag - q0, diag - x0] = np.inf
            tmin = D.min(axis=1)
            b = best[q0:q1]
            closer = tmin < b
            acc[q0:q1][closer] = 0.0
            b[closer] = tmin[closer]
            ties = (D == b[:, None]) & np.isfinite(b)[:, None]
            acc[q0:q1] += ties.astype(np.float64) @ Vx[x0:x1]
    if exclude_self and self_w is not None:
        # A point that keeps weight is at distance 0, among its own nearest:
        # remove the unit of weight that was left out.
        keep = self_w > 0
        removed = (w - self_w)[keep]
        acc[keep, :k] -= removed[:, None] * V[keep]
        acc[keep, k] -= removed
    return acc[:, :k], acc[:, k].copy()
