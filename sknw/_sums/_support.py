"""The training points that can weigh in a query's sums, in one feature.

A few queries of a large training set (the points a fast path leaves to
the exact path) hold non-negligible terms from a small window of the
training points only. With one feature and a metric that is ``|x - q|``
there, a query's log weights ``log K(u)`` fall with the distance for the
kernels whose form is known: a compact kernel is 0 beyond its support, and
``log K(u) = a u**p`` (``a < 0``: the Gaussian, the Laplacian) falls below
its largest term, ``a u0**p`` at its nearest training point of positive
weight (``u0``), by more than ``margin`` beyond ``u = (u0**p + margin /
|a|)**(1/p)``. :func:`line_support` gives the training points within
these reaches of some query, with ``margin = MARGIN + log n + log(w_max /
w_min)``: the terms left out weigh at most ``exp(-MARGIN)`` of each query's
largest term in all (each of them also underflows to 0 in a sum shifted by
the query's largest log weight, as the dense backend's), so that sums over
these points equal the sums over all of them to rounding, in every backend.

:func:`line_moments` sums the moments of a few queries term by term over
such windows (from the training points sorted once), about a centre per
query (its window's mean, where the local variance does not cancel), with
a bound on their error; it truncates the Gaussian and the Laplacian at
:data:`TRUNCATION` instead, the terms beyond in its bound.
"""

import math

import numpy as np

from ._base import (
    _EPS64,
    Head,
    MomentSums,
    _check_user_kernel,
    _log_weights,
    line_scale,
    per_query,
    working_elements,
)
from ._cells import discrete_of
from ._traits import (
    is_compact,
    is_user,
    line_metric,
    log_linear_form,
    use_squared,
)

#: What the terms left out by :func:`line_support` weigh at most, in all,
#: relative to each query's largest term, as a log: ``exp(-750)`` is below
#: the smallest float64 (``exp(-745.2)``).
MARGIN = 750.0

#: Rows of :func:`line_moments` with a point of positive weight within
#: this share of the edge of a compact kernel's support (where rounding
#: could decide whether it is inside) get no bound: the exact path decides.
EDGE_SHARE = 1e-12

#: :func:`line_moments` leaves out the terms below ``exp(-TRUNCATION)``
#: of a query's largest in all (a margin as :data:`MARGIN`'s, plus the log
#: of the offsets' powers at the reach), within its bound: a reach of about
#: 15 bandwidths of the Gaussian beyond the nearest point rather than 40.
#: The bound on a window's variance then stays near ``exp(-100)``, whose
#: root bounds the slope of a design singular for rounding (see
#: :func:`~sknw._local_frame.query_centred_fit`): ``exp(-40)`` left the
#: thinnest windows to the exact path.
TRUNCATION = 100.0

#: The reach of a compact kernel is its support times this: a little more,
#: so that the window holds every point the sums decide is inside it.
SUPPORT_SLACK = 1.0 + 1e-9


def line_support(
    Q,
    X,
    head,
    *,
    metric="euclidean",
    metric_params=None,
    scale=None,
    sample_weight=None,
    exclude_self=False,
    self_index=None,
    self_weight=None,
    **unused,
):
    """The training points whose terms can weigh in the sums of some query.

    Parameters
    ----------
    Q : ndarray of shape (m, 1)
        Queries.
    X : ndarray of shape (n, 1)
        Training points.
    head : Head
        The kernel and its divisor (one for all queries).
    metric, metric_params, scale, sample_weight
        As for :func:`~sknw._sums.kernel_sums`.
    exclude_self, self_index, self_weight
        Leave-one-out: query ``i`` is training point ``self_index[i]``,
        which keeps ``self_weight`` of its weight (None: none).

    Returns
    -------
    rows : ndarray of int, or None
        The training points (ascending, of any weight) within the reach of
        some query: the sums over them equal those over all the training
        points to rounding (see the module's notes). None where this is not
        decided here: several features, a discrete or per-query head, a
        metric other than ``|x - q|``, a kernel of unbounded support whose
        form is not known, or queries that are not finite.
    empty : ndarray of bool, shape (m,)
        Queries of a compact kernel that may have no training point of
        positive weight inside its support (an empty window, whose estimate
        may depend on points outside ``rows``).
    """
    form = _line_form(X, head, metric, metric_params)
    data = None if form is False else _line_data(Q, X, scale, sample_weight)
    if data is None:
        return None, None
    _, q, x, w, positive = data
    near = _nearest(q, x, positive, exclude_self, self_index, self_weight, w)
    margin = _margin(MARGIN, x.size, w, positive)
    radius, empty = _radius(near, float(head.divisor), head.kernel.support, form,
                            margin)  # fmt: skip
    if not np.all(np.isfinite(radius)):  # no point of positive weight
        return np.arange(x.size), empty
    return _within(q, x, radius), empty


def _line_data(Q, X, scale, sample_weight):
    """``(s, q, x, w, positive)``: the feature's scale, the queries' and the
    training points' scaled coordinates, the weights (None: all 1) and
    which are positive; None where a query is not finite."""
    s = line_scale(scale)
    q = np.asarray(Q, dtype=np.float64)[:, 0] / s
    if not np.all(np.isfinite(q)):
        return None
    x = np.asarray(X, dtype=np.float64)[:, 0] / s
    w = None if sample_weight is None else np.asarray(sample_weight, np.float64)
    positive = np.ones(x.size, dtype=bool) if w is None else w > 0
    return s, q, x, w, positive


def _line_form(X, head, metric, metric_params, per_row=False):
    """``(a, p)`` of a kernel ``log K(u) = a u**p`` (``a < 0``), None for a
    compact kernel, False where the windows are not decided here (see
    :func:`line_support`; ``per_row``: a divisor per query is allowed)."""
    if X.shape[1] != 1 or discrete_of([head]) is not None:
        return False
    if per_query(head) and not per_row:
        return False
    if not line_metric(metric, metric_params):
        return False
    if not head.kernel.nonnegative:
        return False
    if is_compact(head.kernel):
        return None
    form = log_linear_form(head.kernel)
    return False if form is None or form[0] >= 0 else form


def _margin(base, n, w, positive):
    """``base + log n + log(w_max / w_min)`` over the points of positive
    weight: the terms beyond it weigh at most ``exp(-base)`` of the
    nearest, in all."""
    margin = base + math.log(max(n, 1))
    if w is not None and positive.any():
        wp = w[positive]
        margin += math.log(float(wp.max())) - math.log(float(wp.min()))
    return margin


def _radius(near, h, support, form, margin):
    """Each query's reach in the scaled coordinates, from its distance to
    its nearest point of positive weight (``near``) and its divisor ``h``:
    the ``support`` of a compact kernel (``form`` None), else where ``log
    K`` falls ``margin`` below its value there; and whether a compact
    kernel's window may be empty."""
    u0 = near / h
    if form is None:  # a compact kernel
        reach = np.full(near.size, float(support) * SUPPORT_SLACK)
        empty = ~(u0 < reach)
    else:
        a, p = form
        with np.errstate(over="ignore", invalid="ignore"):
            reach = (u0**p + margin / -a) ** (1.0 / p)
        empty = np.zeros(near.size, dtype=bool)
    with np.errstate(over="ignore", invalid="ignore"):
        return reach * h, empty


def _nearest(q, x, positive, exclude_self, self_index, self_weight, w):
    """Each query's distance to its nearest training point of positive
    weight (``inf``: none), without itself where it is left out of its own
    sums with none of its weight; in blocks of queries within the working
    memory."""
    n = x.size
    near = np.full(q.size, np.inf)
    if not positive.any():
        return near
    own = None
    if exclude_self:
        own = np.asarray(self_index, dtype=np.intp)
        keeps = np.zeros(n, dtype=bool)
        if self_weight is not None and w is not None:
            keeps = np.asarray(self_weight, dtype=np.float64) > 0
    xp = x[positive]
    index = np.flatnonzero(positive)
    block = max(1, working_elements() // max(xp.size, 1))
    for a in range(0, q.size, block):
        b = min(a + block, q.size)
        D = np.abs(xp[None, :] - q[a:b, None])
        if own is not None:
            mine = own[a:b]
            drop = ~keeps[mine] & positive[mine]
            cols = np.searchsorted(index, mine[drop])
            D[np.flatnonzero(drop), cols] = np.inf
        near[a:b] = D.min(axis=1)
    return near


def _within(q, x, radius):
    """The points ``x`` within ``radius`` of some query ``q`` (ascending
    indices), from the queries' intervals merged."""
    lo, hi = q - radius, q + radius
    order = np.argsort(lo, kind="stable")
    lo, hi = lo[order], np.maximum.accumulate(hi[order])
    # x is inside some interval if the last interval starting at or before
    # x reaches it (the running maximum of the ends).
    at = np.searchsorted(lo, x, side="right") - 1
    inside = (at >= 0) & (x <= hi[np.maximum(at, 0)])
    return np.flatnonzero(inside)


def line_moments(
    Q,
    C,
    X,
    V,
    head,
    powers,
    *,
    order=None,
    metric="euclidean",
    metric_params=None,
    scale=None,
    sample_weight=None,
    exclude_self=False,
    self_index=None,
    self_weight=None,
    budget=None,
    **unused,
):
    """Kernel-weighted moments of the queries about given centres, term by
    term over each query's window, in one feature.

    Parameters
    ----------
    Q : ndarray of shape (m, 1)
        Queries.
    C : ndarray of shape (m,)
        Each query's centre (in the units of ``Q``): the moments' origin.
    X : ndarray of shape (n, 1)
        Training points.
    V : ndarray of shape (n, k)
        Values.
    head : Head
        The kernel and its divisor: one for all queries, or one per query
        (an array of shape (m,): each query's window, offsets and terms
        from its own).
    powers : int
        The highest power of the offsets.
    order : ndarray of shape (n,) or None
        The training points in ascending order of their coordinate (sorted
        here where None).
    metric, metric_params, scale, sample_weight, exclude_self, self_index, \
self_weight
        As for :func:`line_support`.
    budget : int or None
        Elements of the terms taken at once (the working memory where
        None); a window beyond it gets no bound.

    Returns
    -------
    moments : MomentSums or None
        ``sums[i, j] = exp(-M_i) sum_l w_l K(|x_l - q_i| / h) z_il**j [v_l,
        1]`` with ``z_il = (x_l - c_i) / h`` in the scaled coordinates
        (``unit = h``) over the points of :func:`line_support`, shifted by
        each query's largest log weight ``M_i``. ``bound[i, j]`` bounds,
        with the same shift, the error of its weight column (and, times the
        largest ``|v|``, of the others) from the rounding of the terms
        (their offsets, log weights and ``exp``, relative to the scaled
        coordinates) and of their sums; it is infinite for the queries
        left to the exact path (a window beyond the budget, or a point of
        positive weight at the edge of a compact kernel's support).
        ``counts``: the points of positive weight inside a compact kernel's
        support (None for the others). None where :func:`line_support`
        does not decide.
    offsets : ndarray of shape (m,)
        Each query's offset from its centre, ``(q_i - c_i) / h``, computed
        as the terms' (the moments' origin is ``c_i`` as rounded in the
        scaled coordinates).
    """
    form = _line_form(X, head, metric, metric_params, per_row=True)
    data = None if form is False else _line_data(Q, X, scale, sample_weight)
    if data is None:
        return None, None
    s, q, x, w, positive = data
    c = np.asarray(C, dtype=np.float64) / s
    if not np.all(np.isfinite(c)):
        return None, None
    h = np.broadcast_to(np.asarray(head.divisor, dtype=np.float64), q.shape)
    order = np.argsort(x, kind="stable") if order is None else order
    ids = order[positive[order]]  # the points of positive weight, sorted
    xs = x[ids]
    own, kept = _own_weights(q.size, exclude_self, self_index, self_weight, w)
    near = _sorted_nearest(q, xs, ids, own, kept)
    margin = _margin(TRUNCATION, x.size, w, positive)
    support = head.kernel.support
    radius, _ = _radius(near, h, support, form, margin)
    offsets = (q - c) / h
    if form is not None:  # and the offsets' powers the terms beyond carry
        with np.errstate(over="ignore", invalid="ignore"):
            margin = margin + powers * np.log1p(radius / h + np.abs(offsets))
        radius, _ = _radius(near, h, support, form, margin)
    with np.errstate(invalid="ignore"):
        lo = np.searchsorted(xs, q - radius, side="left")
        hi = np.searchsorted(xs, q + radius, side="right")
    size = np.maximum(hi - lo, 0)
    m, k = q.size, V.shape[1]
    out = MomentSums(
        np.zeros((m, powers + 1, k + 1)),
        np.zeros((m, powers + 1)),
        np.zeros(m) if form is None else None,
        head.divisor,
    )
    cap = (working_elements() if budget is None else budget) // (2 * k + 8)
    out.bound[size > cap] = np.inf
    size[size > cap] = 0
    ends = np.cumsum(size)
    a = 0
    while a < m:
        start = ends[a] - size[a]
        b = max(a + 1, int(np.searchsorted(ends, start + cap, side="right")))
        rows = np.arange(a, b)
        segment = _Segment(lo[a:b], size[a:b], rows, ids, xs, q, c, h, w, own, kept)
        if segment.total:
            _segment_moments(out, segment, head, V, powers, metric, metric_params)
        a = b
    if form is not None:  # the terms beyond the reach
        _add_truncation(out, radius / h, offsets, margin, w, x.size)
    return out, offsets


def _add_truncation(out, reach, offsets, margin, w, n):
    """Add to the bounds of :func:`line_moments` the terms beyond each
    query's ``reach`` (in bandwidths): each weighs at most ``exp(-margin)``
    times its weight relative to the largest term, times its offset
    ``|z| <= u + |zq|`` to the power ``j``, which decreases beyond the reach
    (``exp(a u**p) (u + |zq|)**j`` does for ``u**p`` over ``j / (p |a|)``):
    at most ``exp(-margin) W (reach + |zq|)**j``, ``W`` the total weight."""
    total = float(n) if w is None else float(np.sum(w[w > 0]))
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        scale = np.exp(-margin) * total
        for j in range(out.bound.shape[1]):
            out.bound[:, j] += scale * (reach + np.abs(offsets)) ** j


def _own_weights(m, exclude_self, self_index, self_weight, w):
    """For leave-one-out, each query's training index and the weight its
    own term keeps (0: none); ``(None, None)`` otherwise."""
    if not exclude_self:
        return None, None
    own = np.asarray(self_index, dtype=np.intp)
    if self_weight is None or w is None:
        return own, np.zeros(m)
    return own, np.asarray(self_weight, dtype=np.float64)[own]


def _sorted_nearest(q, xs, ids, own, kept):
    """Each query's distance to its nearest point of positive weight among
    the sorted ``xs`` (indices ``ids``), not itself where it keeps none of
    its weight (``inf``: none)."""
    if not xs.size:
        return np.full(q.size, np.inf)
    # The point itself lies at or after its insertion point (among equal
    # coordinates): without it, the nearest is among the three around it.
    j = np.searchsorted(xs, q)[:, None] + np.arange(-1, 3)
    ok = (j >= 0) & (j < xs.size)
    j = np.clip(j, 0, xs.size - 1)
    if own is not None:
        ok &= ~((ids[j] == own[:, None]) & ~(kept > 0)[:, None])
    d = np.where(ok, np.abs(xs[j] - q[:, None]), np.inf)
    return d.min(axis=1)


class _Segment:
    """The terms of the queries ``rows`` over their windows (``lo``, ``size``
    in the sorted points of positive weight), flattened: each term's
    training index, coordinate, query row (its query, centre and divisor),
    weight (its own term's kept weight for leave-one-out) and the segments'
    starts."""

    def __init__(self, lo, size, rows, ids, xs, q, c, h, w, own, kept):
        self.total = int(size.sum())
        self.rows, self.sizes = rows[size > 0], size[size > 0]
        self.first = (np.cumsum(size) - size)[size > 0]
        at = np.arange(self.total) - np.repeat(np.cumsum(size) - size - lo, size)
        self.pts, self.x = ids[at], xs[at]
        self.row = np.repeat(rows, size)
        self.q, self.c, self.h = q[self.row], c[self.row], h[self.row]
        self.w = np.ones(self.total) if w is None else w[self.pts]
        if own is not None:
            mine = self.pts == own[self.row]
            self.w[mine] = kept[self.row[mine]]


def _segment_moments(out, seg, head, V, powers, metric, metric_params):
    """The moments (and bounds, and counts) of one segment's queries into
    ``out`` (see :func:`line_moments`)."""
    # Squared distances as for one divisor, each term's own divisor.
    squared = use_squared(metric, [Head(head.kernel)], metric_params)
    diff = seg.q - seg.x
    D = diff * diff if squared else np.abs(diff)
    L = _log_weights(D[:, None], Head(head.kernel, seg.h), squared)[:, 0]
    if is_user(head.kernel):
        _check_user_kernel(L, head)
    live = (seg.w > 0) & (L > -np.inf)
    L = np.where(live, L, -np.inf)
    M = np.maximum.reduceat(L, seg.first)
    M = np.where(np.isfinite(M), M, 0.0)
    Mt = np.repeat(M, seg.sizes)
    E = np.exp(L - Mt) * seg.w
    z = (seg.x - seg.c) / seg.h
    rows, first = seg.rows, seg.first
    # The terms' own rounding (offsets, log weights, exp), in units of
    # roundoff, and the sums' (one unit per term of a segment). A log weight
    # errs by a few units of itself (the distance's rounding); the largest
    # term's cancels with the shift (exp(0) = 1 exactly).
    below = live & (L < Mt)
    units = 8.0 + 4.0 * np.where(below, np.abs(L) + np.abs(Mt), 0.0)
    units += np.repeat(seg.sizes, seg.sizes)
    Vt = V[seg.pts]
    t = E
    for j in range(powers + 1):
        if j:
            t = t * z
        out.sums[rows, j, :-1] = np.add.reduceat(t[:, None] * Vt, first)
        out.sums[rows, j, -1] = np.add.reduceat(t, first)
        bound = 2 * _EPS64 * np.add.reduceat(np.abs(t) * (units + 2 * j), first)
        out.bound[rows, j] = np.where(np.isinf(out.bound[rows, j]), np.inf, bound)
    if out.counts is not None:
        out.counts[rows] = np.add.reduceat(live.astype(np.float64), first)
        edge = float(head.kernel.support) * seg.h
        edge = edge * edge if squared else edge
        near_edge = (seg.w > 0) & (np.abs(D - edge) <= EDGE_SHARE * edge)
        at_edge = np.add.reduceat(near_edge.astype(np.float64), first) > 0
        out.bound[rows[at_edge]] = np.inf
