"""Nearest-neighbour bandwidths (spans): the bandwidth at each query is its
distance to its ``k``-th nearest training point.

With ``span`` in (0, 1], a window holds ``k = int(span * n + 1e-10)`` training
points (at least 2 and at most ``n``; statsmodels' ``lowess(frac=span)``
counts them so), and the weights are ``K(d / h_q)`` with ``h_q`` the query's
``k``-th smallest distance, in the coordinates the features are divided into
(the per-feature bandwidth's shape). Sample weights are frequencies: ``n`` is
their sum and a window holds the nearest points whose weights sum to ``k``.
Leaving a training point out (leave-one-out) takes its whole row from its
own window and from ``n``, as a refit without it would (the searches merge
copies of a row first, see :mod:`sknw._selection.weights`).

The bandwidths come from one pass over the distances (full rows of a tile of
queries, then a partial sort), or in one feature under a metric that is
``|x - q|`` there from the sorted training points, in ``O(m log^2 n)``.
"""

import numpy as np

from .._sums import Head, pairwise_distances
from .._sums._base import _scaled_rows, _tile_shape, scale_of
from .._sums._traits import HOMOGENEOUS_DEGREE
from .._trace import Tunable, record
from .._validation import check_bandwidth
from .rules import BANDWIDTH_RULES, rule_bandwidth

#: Metrics whose distance in one feature is exactly ``|x - q|`` as float64
#: computes it (the sorted path's radii are then the dense path's distances).
LINE_EXACT_METRICS = frozenset({"euclidean", "cityblock", "chebyshev"})

#: A window holds weight ``k`` once its cumulative weight reaches ``k`` less
#: this share of the total (the rounding of sums of non-integer weights).
WEIGHT_TOLERANCE = 1e-9

#: Training points whose bandwidths give ``bandwidth_`` (their median).
SPAN_SUBSAMPLE = 1000

_TINY = np.finfo(np.float64).tiny


_EPS = float(np.finfo(np.float64).eps)

#: Queries of :func:`_line_distances` share a target weight (one binary
#: search each) where they ask at most this many distinct ones (a negative
#: number: none share one).
SHARED_TARGETS = Tunable(8)


def neighbour_count(span, total):
    """The weight ``k`` a window holds: ``int(span * total + 1e-10)``, at least
    2 and at most ``total`` (elementwise for an array of totals)."""
    total = np.asarray(total, dtype=np.float64)
    k = np.floor(span * total + 1e-10)
    return np.minimum(np.maximum(k, 2.0), total)


def neighbour_distances(
    Q,
    X,
    span,
    *,
    metric,
    metric_params,
    scale,
    sample_weight=None,
    own=None,
    kept=None,
    tile_elements,
    with_index=False,
):
    """Each query's distance to its ``k``-th nearest training point (and
    with ``with_index``, that point's index: ``(distances, indices)``).

    ``Q`` and ``X`` are divided by ``scale`` (as the sums divide them).
    ``sample_weight`` (frequencies, None: ones) counts the points; with
    ``own`` the queries are these training points, each keeping ``kept`` of
    its weight in its own window (None: none of it), and ``k`` is counted
    from the total less what it leaves out. A distance of 0 (``k`` points at
    the query) is returned as the smallest normal float, so that only the
    points at the query weigh.
    """
    n, m = X.shape[0], Q.shape[0]
    w = None if sample_weight is None else np.asarray(sample_weight, np.float64)
    total = float(n) if w is None else float(np.sum(w))
    if own is None:
        need = np.full(m, float(neighbour_count(span, total)))
        removed = None
    else:
        own = np.asarray(own, dtype=np.intp)
        full = np.ones(own.size) if w is None else w[own]
        removed = full - (0.0 if kept is None else np.asarray(kept)[own])
        need = neighbour_count(span, total - removed)
    tol = WEIGHT_TOLERANCE * total
    if _line_path(X, metric, metric_params):
        h, index = _line_distances(Q, X, w, need, removed, scale, tol)
    else:
        h, index = _dense_distances(
            Q,
            X,
            w,
            need,
            own=own,
            kept=kept,
            metric=metric,
            metric_params=metric_params,
            scale=scale,
            tol=tol,
            tile_elements=tile_elements,
        )
    h = np.maximum(h, _TINY)
    return (h, index) if with_index else h


def _line_path(X, metric, metric_params):
    return (
        X.shape[1] == 1
        and isinstance(metric, str)
        and metric in LINE_EXACT_METRICS
        and not metric_params
    )


def _dense_distances(
    Q, X, w, need, *, own, kept, metric, metric_params, scale, tol, tile_elements
):
    """:func:`neighbour_distances` from full rows of distances, a tile of
    queries at a time (rows sorted only where the weights are not ones):
    ``(distances, indices)``."""
    n, m = X.shape[0], Q.shape[0]
    Xs = _scaled_rows(X, 0, n, scale)
    bq, _ = _tile_shape(m, n, max(1, tile_elements // 4), full_rows=True)
    out = np.empty(m)
    index = np.empty(m, dtype=np.intp)
    for q0 in range(0, m, bq):
        q1 = min(q0 + bq, m)
        Qt = _scaled_rows(Q, q0, q1, scale)
        D = pairwise_distances(Qt, Xs, metric, metric_params, first_row=q0)
        rows = np.arange(q1 - q0)
        if w is None and kept is None:
            if own is not None:  # each query's own point leaves its window
                D[rows, own[q0:q1]] = np.inf
            kth = need[q0:q1].astype(np.intp) - 1
            for k in np.unique(kth):
                sel = np.flatnonzero(kth == k)
                at = np.argpartition(D[sel], k, axis=1)[:, k]
                out[q0 + sel], index[q0 + sel] = D[sel, at], at
            continue
        weights = np.broadcast_to(np.ones(n) if w is None else w, D.shape).copy()
        if own is not None:
            weights[rows, own[q0:q1]] = 0.0 if kept is None else kept[own[q0:q1]]
        order = np.argsort(D, axis=1)
        cum = np.cumsum(np.take_along_axis(weights, order, axis=1), axis=1)
        reach = np.sum(cum < (need[q0:q1] - tol)[:, None], axis=1)
        reach = np.minimum(reach, n - 1)
        index[q0:q1] = order[rows, reach]
        out[q0:q1] = D[rows, index[q0:q1]]
    return out, index


def _line_distances(Q, X, w, need, removed, scale, tol):
    """:func:`neighbour_distances` in one feature, from the sorted points of
    positive weight: the window of the smallest radius holding weight
    ``need`` is a run ``l .. r(l) - 1`` of them, found by bisection on
    ``l`` (the run's midpoint grows with ``l``). A query's own point sits at
    radius 0, in every window: it counts fully, and the weight it leaves out
    is asked for on top. Returns ``(distances, indices)``."""
    xs = _scaled_rows(X, 0, X.shape[0], scale)[:, 0]
    points = np.arange(xs.size) if w is None else np.flatnonzero(w > 0)
    order = points[np.argsort(xs[points], kind="stable")]
    xs = xs[order]
    cum = np.r_[0.0, np.cumsum(np.ones(xs.size) if w is None else w[order])]
    q = _scaled_rows(Q, 0, Q.shape[0], scale)[:, 0]
    target = need - tol if removed is None else need + removed - tol
    values = np.unique(target)
    shared = values.size <= SHARED_TARGETS.value
    record("line_distances", n_queries=q.size, n_targets=values.size, shared=shared)
    if not shared:
        best, at = _run_radii(q, xs, cum, target)
        return best, order[at]
    best, at = np.empty(q.size), np.empty(q.size, dtype=np.intp)
    for value in values:
        sel = target == value
        best[sel], at[sel] = _run_radii(q[sel], xs, cum, float(value))
    return best, order[at]


def _run_radii(q, xs, cum, target):
    """The smallest radius about each query ``q`` of a run of the sorted
    points ``xs`` (cumulative weights ``cum``) holding weight ``target`` (one
    per query, or one for all). The run from start ``l`` ends at ``e(l)``;
    the best start is the first whose run reaches as far right of the query
    as left (that test only turns true as ``l`` grows), or the one before it,
    found by bisection. For a shared target, ``e(l)`` is fixed per start and
    the runs' midpoints grow with ``l``: a binary search of them for the
    query narrows the bisection to the starts where rounding decides.
    Returns the radii and the positions in ``xs`` of the points at them
    (the farther end of each best run)."""
    n = xs.size
    # The last start whose run reaches the target before the end.
    last = np.clip(np.searchsorted(cum, cum[-1] - target, side="right") - 1, 0, n - 1)

    def run_end(start):  # the last point of the run from ``start``
        end = np.searchsorted(cum, cum[start] + target, side="left")
        return np.clip(end, 1, n) - 1

    lo, hi = np.zeros(q.size, dtype=np.intp), np.broadcast_to(last + 1, q.shape)
    with np.errstate(invalid="ignore", over="ignore"):
        if np.ndim(target) == 0:
            ends = run_end(np.arange(int(last) + 1))
            run_end = ends.__getitem__
            mids = xs[: ends.size] + xs[ends]
            # Where the sums are this far from 2 q, the exact test agrees
            # with them (the rounding of the sums and of both radii).
            margin = 4.0 * _EPS * (np.max(np.abs(xs)) + np.abs(q))
            lo = np.maximum(np.searchsorted(mids, 2 * q - margin, "left") - 1, 0)
            hi = np.minimum(np.searchsorted(mids, 2 * q + margin, "right") + 1, hi)
        while np.any(lo < hi):
            mid = (lo + hi) // 2
            mid_c = np.minimum(mid, last)
            right = xs[run_end(mid_c)] - q >= q - xs[mid_c]
            active = lo < hi
            hi = np.where(active & right, mid, hi)
            lo = np.where(active & ~right, mid + 1, lo)
        best, at = np.full(q.size, np.inf), np.zeros(q.size, dtype=np.intp)
        for start in (np.minimum(lo, last), np.maximum(np.minimum(lo, last) - 1, 0)):
            end = run_end(start)
            left, right = q - xs[start], xs[end] - q
            radius = np.maximum(left, right)
            better = radius < best
            best = np.where(better, radius, best)
            at = np.where(better, np.where(left >= right, start, end), at)
    return best, at


def span_shape(bandwidth, X, sample_weight, kernel, metric, metric_params):
    """The per-feature shape a span divides the features by: a given
    bandwidth, or its rule's on the points of positive weight (Scott's for
    ``"cv"`` and ``"plugin"``)."""
    if not isinstance(bandwidth, str):
        return check_bandwidth(bandwidth, X.shape[1])
    rule = bandwidth if bandwidth in BANDWIDTH_RULES else "scott"
    w = sample_weight
    Xp = X if w is None else X[w > 0]
    wp = None if w is None else w[w > 0]
    return rule_bandwidth(Xp, rule, kernel, wp, metric, metric_params)


def feature_bandwidths(scale, h, d):
    """Each query's bandwidth per feature, (m, d): the features' ``scale``
    (None: 1) times its divisor ``h`` (the fixed bandwidth that weighs its
    window alike, for metrics of degree 1)."""
    s = scale_of(scale)
    s = np.ones(d) if s is None else np.broadcast_to(s, (d,))
    return s[None, :] * np.asarray(h).reshape(-1)[:, None]


def span_bandwidth(shape, span, X, sample_weight, *, metric, metric_params, scaling):
    """``bandwidth_`` of a span: the per-feature ``shape`` (or a float) times
    the size that makes the median bandwidth of (up to
    :data:`SPAN_SUBSAMPLE`) training points of positive weight one, the
    scaling ``scaling`` of ``shape`` dividing the features and distances.
    Where that median is 0 (most windows hold only copies of their point,
    such as a single training point), the median of the positive
    bandwidths, or 1 where there is none: a size of 0 would divide the
    features into overflow."""
    w = sample_weight
    rows = np.arange(X.shape[0]) if w is None else np.flatnonzero(w > 0)
    if rows.size > SPAN_SUBSAMPLE:
        rows = rows[np.linspace(0, rows.size - 1, SPAN_SUBSAMPLE).astype(np.intp)]
    h = neighbour_distances(
        X[rows],
        X,
        span,
        metric=metric,
        metric_params=metric_params,
        scale=scaling.scale,
        sample_weight=w,
        tile_elements=1 << 17,
    )
    positive = h[h > _TINY]  # neighbour_distances gives 0 as _TINY
    size = 1.0
    if positive.size:
        median = np.median(h) if np.median(h) > _TINY else np.median(positive)
        size = float(median) / scaling.divisor
    degree = HOMOGENEOUS_DEGREE.get(metric) if isinstance(metric, str) else None
    if degree is not None:
        size = size ** (1.0 / degree)
    with np.errstate(over="ignore", under="ignore"):
        return shape * size


def split_heads(members, cands, Xq, Xt, wt, *, own, unit, scale, rows, shape, **p):
    """The candidates' heads in one split of the cross-validation: with a
    span, each query's nearest-neighbour bandwidth among the split's training
    points ``Xt`` (the weights ``wt`` counted in units of ``unit``;
    leave-one-out, ``own``: each point's row left out of its own window),
    also recorded per feature for the local fits in
    ``cand.query_bandwidths`` (of shape ``shape``, at the queries'
    ``rows``); the others as they are. ``p``: the metric, its parameters and
    the tile size."""
    heads = []
    for i, head in members:
        span = cands[i].span
        if span is not None:
            with np.errstate(over="ignore"):
                counted = None if wt is None else wt / unit
            h = neighbour_distances(
                Xq, Xt, span, scale=scale, sample_weight=counted, own=own, **p
            )
            head = Head(head.kernel, h)
            if cands[i].query_bandwidths is None:
                cands[i].query_bandwidths = np.ones(shape)
            cands[i].query_bandwidths[rows] = feature_bandwidths(scale, h, shape[1])
        heads.append(head)
    return heads


def candidate_spans(spans, *, bandwidths, refine, discrete):
    """The ``spans`` of a search as a checked list (None without), refused
    where they cannot be searched (with ``bandwidths``, ``refine`` or the
    ``discrete`` features)."""
    if spans is None:
        return None
    given = spans
    spans = [float(s) for s in np.atleast_1d(np.asarray(spans, dtype=float))]
    if not spans or not all(0 < s <= 1 for s in spans):
        raise ValueError(f"spans must be floats in (0, 1], got {given!r}.")
    if bandwidths is not None or refine:
        raise ValueError(
            "spans chooses nearest-neighbour bandwidths: give it without "
            "bandwidths and refine (the features keep the shape of Scott's "
            "rule)."
        )
    if discrete is not None:
        raise ValueError(
            "spans takes continuous features only: nearest neighbours are not "
            "defined across the levels of discrete features."
        )
    return spans
