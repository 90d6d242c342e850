"""The tree backend: compact kernels summed over the neighbours a KD-tree finds."""

import numpy as np
from scipy.spatial import cKDTree

from ._base import (
    TILE_ELEMENTS,
    Backend,
    _scaled_rows,
    _weighted_values,
    keep_ratios,
    own_rows,
    window_edge,
)
from ._parallel import parallel_kernel_sums
from ._traits import is_compact, is_user, tree_p

#: ``algorithm="auto"`` takes the tree below this expected share of training
#: points in a window.
TREE_MAX_FRACTION = 0.05


def build_tree(X, scale):
    """KD-tree over the training rows, divided by ``scale``."""
    return cKDTree(_scaled_rows(X, 0, X.shape[0], scale))


def window_fraction(tree, X, head, p, scale, n_probe=256):
    """Average share of training points in the windows of training points.

    Probes up to ``n_probe`` evenly spaced training rows as queries.
    """
    n = X.shape[0]
    idx = np.unique(np.linspace(0, n - 1, min(n, n_probe)).astype(np.intp))
    probes = _scaled_rows(X, 0, n, scale)[idx]
    radius = head.kernel.support * head.divisor
    counts = tree.query_ball_point(probes, radius, p=p, return_length=True)
    return float(np.mean(counts)) / n


def tree_kernel_sums(
    Q,
    X,
    V,
    heads,
    *,
    tree,
    p,
    scale=None,
    sample_weight=None,
    tile_elements=TILE_ELEMENTS,
    **params,
):
    """:func:`kernel_sums` for a compact kernel, from the neighbours in a tree.

    Only the pairs within the kernel's support are evaluated: the tree finds
    them (a ball of radius ``support * h``, slightly enlarged so that rounding
    in the tree cannot drop a point the kernel weighs), distances are
    recomputed here and the kernel decides. Compact kernels are bounded by
    ``K(0)`` and have no tail to underflow, so the sums are unshifted
    (``M = 0`` where the window has a positive weight, ``-inf`` where it is
    empty), and equal those of :func:`kernel_sums` up to rounding. With
    ``exclude_self`` (leave-one-out, see :func:`kernel_sums`), each query's
    own pair is weighed by the share of its weight it keeps (none by
    default).
    """
    (head,) = heads
    m, k = Q.shape[0], V.shape[1]
    Xs = tree.data
    w = None if sample_weight is None else np.asarray(sample_weight, np.float64)
    Vx = _weighted_values(V, w, slice(None))
    radius = head.kernel.support * head.divisor * (1.0 + 1e-12)
    acc = np.zeros((m, k + 1))
    own = own_rows(m, params)
    keep = keep_ratios(params.get("self_weight"), w, X.shape[0])
    # Queries per chunk: about tile_elements pairs, from the first chunk's size.
    chunk = max(1, min(m, 256))
    q0 = 0
    while q0 < m:
        q1 = min(q0 + chunk, m)
        Qt = _scaled_rows(Q, q0, q1, scale)
        lists = tree.query_ball_point(Qt, radius, p=p, return_sorted=False)
        lengths = np.fromiter(map(len, lists), dtype=np.intp, count=len(lists))
        cols = np.fromiter(
            (j for lst in lists for j in lst), dtype=np.intp, count=lengths.sum()
        )
        rows = np.repeat(np.arange(q1 - q0), lengths)
        diff = Qt[rows] - Xs[cols]
        if p == 2.0:
            sq = np.einsum("ij,ij->i", diff, diff)
            dist = np.sqrt(sq)
        elif p == 1.0:
            dist = np.abs(diff).sum(axis=1)
        elif np.isinf(p):
            dist = np.abs(diff).max(axis=1)
        else:
            dist = (np.abs(diff) ** p).sum(axis=1) ** (1.0 / p)
        u = dist / head.divisor
        edge = window_edge(head, p == 2.0)
        if edge is not None:  # the window test of the dense paths
            inside = (sq if p == 2.0 else dist) < edge
            below = np.nextafter(float(head.kernel.support), 0.0)
            u = np.where(inside, np.minimum(u, below), np.inf)
        weights = np.asarray(head.kernel(u), dtype=np.float64)
        if is_user(head.kernel) and not np.all(np.isfinite(weights)):
            raise ValueError(
                f"Kernel {head.kernel!r} returned NaN or infinite values; a "
                "kernel must return finite values."
            )
        if own is not None:
            mine = cols == own[q0 + rows]
            weights[mine] *= 0.0 if keep is None else keep[cols[mine]]
        for c in range(k + 1):
            acc[q0:q1, c] = np.bincount(
                rows, weights=weights * Vx[cols, c], minlength=q1 - q0
            )
        per_query = max(1.0, lengths.mean()) if lengths.size else 1.0
        chunk = int(max(1, min(4096, tile_elements / per_query)))
        q0 = q1
    den = acc[:, k].copy()
    M = np.where(den != 0, 0.0, -np.inf)
    return [(acc[:, :k], den, M)]


class TreeBackend(Backend):
    """Compact kernels over the neighbours a KD-tree finds; under ``"auto"``
    from :data:`~sknw._sums._dispatcher.AUTO_MIN_SAMPLES` training points,
    where windows hold less than :data:`TREE_MAX_FRACTION` of them."""

    name = "tree"
    leave_one_out = True

    def why_not(self, kernel, metric, metric_params, n_features):
        if n_features < 1:
            return (
                f"algorithm={self.name!r} needs a continuous feature to search "
                "(every feature is discrete)."
            )
        if is_compact(kernel) and tree_p(metric, metric_params) is not None:
            return None
        given = f"{metric!r}" + (f" with {metric_params!r}" if metric_params else "")
        return (
            f"algorithm={self.name!r} needs a kernel of finite support (not "
            f"{kernel!r}) and a metric a KD-tree can search "
            "('euclidean', 'cityblock', 'chebyshev' or 'minkowski' with p >= 1), "
            f"not {given}."
        )

    def fit(self, request):
        if request.auto and not request.large:
            return None
        tree = build_tree(request.X, request.scale)
        if request.auto:
            p = tree_p(request.metric, request.metric_params)
            fraction = window_fraction(tree, request.X, request.head, p, request.scale)
            if fraction >= TREE_MAX_FRACTION:
                return None
        return tree

    def sums(self, index, Q, X, V, heads, *, n_jobs=None, **params):
        self.check_params(params)
        p = tree_p(params["metric"], params["metric_params"])
        return [
            parallel_kernel_sums(
                Q,
                X,
                V,
                [head],
                n_jobs=n_jobs,
                sums=tree_kernel_sums,
                tree=index,
                p=p,
                **params,
            )[0]
            for head in heads
        ]
