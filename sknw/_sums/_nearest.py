"""Sums over the nearest training points: the limit of a vanishing bandwidth."""

import numpy as np

from ._base import (
    TILE_ELEMENTS,
    Frame,
    _as_float64,
    _scaled_rows,
    _tile_shape,
    _weighted_values,
    all_point_sums,
    own_rows,
    pairwise_distances,
    power_of_two_scale,
    scale_of,
)
from ._cells import cell_nearest_sums
from ._traits import DEGREE_ONE


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
    scale=None,
    sample_weight=None,
    exclude_self=False,
    self_weight=None,
    self_index=None,
    tile_elements=TILE_ELEMENTS,
):
    """Sums of ``w * V`` over the nearest training points of each query.

    All training points at the minimum distance (ties) count, each with its
    sample weight; points of weight zero are never nearest. This is the limit of
    the Gaussian estimate as the bandwidth tends to zero. With
    ``exclude_self=True`` (``Q`` is ``X``, or its rows ``self_index``) each
    point's own row is left out, or keeps weight ``self_weight[i]`` where that
    is positive (frequency weights).

    Returns
    -------
    S : ndarray of shape (m, k)
    den : ndarray of shape (m,)
        Sum of the weights of the nearest points.
    """
    m, n = Q.shape[0], X.shape[0]
    k = V.shape[1]
    w = np.ones(n) if sample_weight is None else _as_float64(sample_weight)
    acc = np.zeros((m, k + 1))
    best = np.full(m, np.inf)
    own = own_rows(m, {"exclude_self": exclude_self, "self_index": self_index})
    bq, bn = _tile_shape(m, n, tile_elements)
    for x0 in range(0, n, bn):
        x1 = min(x0 + bn, n)
        Xt = _scaled_rows(X, x0, x1, scale)
        Vx = _weighted_values(V, w, slice(x0, x1))
        for q0 in range(0, m, bq):
            q1 = min(q0 + bq, m)
            Qt = _scaled_rows(Q, q0, q1, scale)
            D = pairwise_distances(Qt, Xt, metric, metric_params, first_row=q0)
            if sample_weight is not None:
                D[:, w[x0:x1] == 0] = np.inf
            if own is not None:
                mine = own[q0:q1]
                rows = np.flatnonzero((mine >= x0) & (mine < x1))
                if self_weight is not None:
                    rows = rows[self_weight[mine[rows]] <= 0]
                D[rows, mine[rows] - x0] = np.inf
            tmin = D.min(axis=1)
            b = best[q0:q1]
            closer = tmin < b
            acc[q0:q1][closer] = 0.0
            b[closer] = tmin[closer]
            ties = (D == b[:, None]) & np.isfinite(b)[:, None]
            acc[q0:q1] += ties.astype(np.float64) @ Vx
    if own is not None and self_weight is not None:
        # A point that keeps weight is at distance 0, among its own nearest:
        # remove the unit of weight that was left out.
        keep = self_weight[own] > 0
        mine = own[keep]
        removed = w[mine] - self_weight[mine]
        acc[keep, :k] -= removed[:, None] * V[mine]
        acc[keep, k] -= removed
    return acc[:, :k], acc[:, k].copy()


def nearest_scale(scale, metric, X, Q):
    """What divides the features for a search of nearest points.

    Nearest points do not change under a common factor, for metrics
    homogeneous of degree one: a scale equal for every feature is dropped
    (dividing by it would round distances and break exact ties), and a power
    of two brings the coordinates of the training points and the queries to
    order one (squared distances representable).
    """
    if metric not in DEGREE_ONE:
        return scale
    d = X.shape[1]
    origin = scale.origin if isinstance(scale, Frame) else None
    scale = scale_of(scale)
    equal = scale is None or not scale.size or np.all(scale == scale[0])
    base = np.ones(d) if equal else scale
    frame = base if origin is None else Frame(origin, base)
    with np.errstate(over="ignore"):
        largest = max(
            np.max(np.abs(_scaled_rows(X, 0, X.shape[0], frame)), initial=0.0),
            np.max(np.abs(_scaled_rows(Q, 0, Q.shape[0], frame)), initial=0.0),
        )
    if np.isfinite(largest) and largest > 0:
        base = base * power_of_two_scale(largest)
    return base if origin is None else Frame(origin, base)


def empty_window_estimates(
    policy,
    Q,
    X,
    V,
    w,
    *,
    scale,
    metric,
    metric_params,
    tile_elements=TILE_ELEMENTS,
    exclude_self=False,
    self_weight=None,
    self_index=None,
    factors=None,
    on_mean=None,
):
    """Estimates at queries whose window is empty, under ``policy``.

    ``"nearest"``: the weighted average of ``V`` over the nearest training
    points (ties included; the limit of a vanishing bandwidth); ``"mean"``:
    over all of them. With ``exclude_self`` (``Q`` is ``X``, or its rows
    ``self_index``), each point's own weight is left out, or ``self_weight``
    kept (frequency weights). NaN
    where no weight is left. The one fallback of the predictions and of the
    cross-validation passes. With discrete ``factors`` (a product kernel,
    :class:`~sknw._sums._cells.DiscreteFactors`), the nearest points are
    those of the smallest continuous distance among the points of positive
    factor, weighted by it; queries with no such point (smoothing parameters
    of 0 and no training point of their levels) get the ``"mean"`` estimate,
    and ``on_mean(count)`` is called with their number.
    """
    if policy == "nearest" and factors is not None:
        cont = list(factors.continuous)
        S, den, none = cell_nearest_sums(
            Q,
            X,
            V,
            factors,
            metric=metric,
            metric_params=metric_params,
            scale=nearest_scale(scale, metric, X[:, cont], Q[:, cont]),
            sample_weight=w,
            exclude_self=exclude_self,
            self_weight=self_weight,
            self_index=self_index,
            tile_elements=tile_elements,
        )
        if on_mean is not None and none.any():
            on_mean(int(none.sum()))
    elif policy == "nearest":
        S, den = nearest_sums(
            Q,
            X,
            V,
            metric=metric,
            metric_params=metric_params,
            scale=nearest_scale(scale, metric, X, Q),
            sample_weight=w,
            exclude_self=exclude_self,
            self_weight=self_weight,
            self_index=self_index,
            tile_elements=tile_elements,
        )
    else:
        own = own_rows(
            Q.shape[0], {"exclude_self": exclude_self, "self_index": self_index}
        )
        S, den = all_point_sums(Q.shape[0], V, w, own, self_weight)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = S / den[:, None]
    out[~(den > 0)] = np.nan
    return out
