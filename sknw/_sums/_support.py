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

Term by term, a query's cost is its window's, which is most of the
training set where the points gather in a few tight clusters (whose local
variance the fast paths cannot bound): O(n) a query. For the Gaussian,
:func:`line_moments` sums such clusters as blocks instead, for each group
of queries that share a divisor ``h``: runs of consecutive points between
gaps wider than half of :data:`BLOCK_WIDTH` bandwidths, at most that wide,
each expanded about its centre ``b``. With ``t = (x - b) / h``, ``s = (b -
q) / h`` and ``d = (b - c) / h``, a term is ``exp(a s**2) exp(g(t)) (t +
d)**j`` with ``g(t) = 2 a s t + a t**2``; ``exp(g)`` summed to the order
``R`` is a polynomial in ``t``, so that a block's terms are a few
coefficients per query times the block's power sums ``sum w t**n [v, 1]``,
found once (in units of the block's half-width, every power at most 1).
Over the block ``|g| <= G = |2 a s| tau + |a| tau**2`` (``tau`` its largest
``|t|``), and the series' remainder is at most ``G**(R + 1) / (R + 1)!
exp(G)`` of the terms' absolute sum: ``R`` is the least that makes it a
unit of roundoff (at most :data:`BLOCK_GROWTH` for ``G``), and the bound
holds it and the contraction's rounding. A query takes a block of ``n``
points that lies inside its window where ``n`` is at least
:data:`BLOCK_POINTS` times ``R + 1`` (the other terms one by one), shifted
by its largest log weight, at its nearest point (``exp(a s**2 - M)`` is
then at most about 1). Its own point (leave-one-out) inside a block leaves
the block's sums by subtraction, as in the other backends
(:func:`~sknw._sums._base.leave_own_term_out`), where the block's other
points outweigh it. Each query's blocks and terms are its own, whatever the
other queries (a block is a whole run).
"""

import contextlib
import math

import numpy as np

from .._trace import Tunable
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
from ._traits import is_compact, is_user, line_metric, log_linear_form, use_squared

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
#: :func:`~sknw._local.frame.query_centred_fit`): ``exp(-40)`` left the
#: thinnest windows to the exact path.
TRUNCATION = Tunable(100.0)

#: The reach of a compact kernel is its support times this: a little more,
#: so that the window holds every point the sums decide is inside it.
SUPPORT_SLACK = 1.0 + 1e-9

#: The widest block of :func:`line_moments`, in bandwidths (its runs are cut
#: at the gaps wider than half of it): at 1e-2 the series' order ``R``
#: stays at most 9 within :data:`TRUNCATION`'s reach (``|s| <= 16``,
#: ``G <= 0.08``), and 6 for clusters a tenth as wide.
BLOCK_WIDTH = 1e-2

#: A query's pair with a block of ``n`` points replaces ``n`` terms by one
#: contraction of order ``R``, used where ``n`` is at least this times ``R +
#: 1``: about twice what it costs (``python benchmarks/bench_clusters.py
#: --pairs``: 4 to 7 terms at orders up to 4, about 12 at orders 6 and 7,
#: with one output and powers up to 2).
BLOCK_POINTS = 4

#: The largest ``G`` of a pair (beyond it the block's terms are summed one
#: by one): with ``G`` at most 1/2, ``R`` is at most 14.
BLOCK_GROWTH = 0.5

_settings = {"block_width": BLOCK_WIDTH}


@contextlib.contextmanager
def block_width(width):
    """A context in which :func:`line_moments` forms blocks of at most
    ``width`` bandwidths (0: none, every term summed one by one), restored
    on leaving; for the process, as :func:`~sknw.set_config`.

    The estimators reach :func:`line_moments` through the searches: this
    lets tests and benchmarks compare the two ways of summing end to end.

    Parameters
    ----------
    width : float >= 0
        The blocks' largest width in bandwidths (:data:`BLOCK_WIDTH` by
        default).

    Yields
    ------
    None
    """
    saved = _settings["block_width"]
    _settings["block_width"] = float(width)
    try:
        yield
    finally:
        _settings["block_width"] = saved


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
    radius, empty = _radius(
        near, float(head.divisor), head.kernel.support, form, margin
    )
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
    blocks=None,
):
    """Kernel-weighted moments of the queries about given centres, term by
    term over each query's window (or by blocks of close points, see the
    module's notes), in one feature.

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
    blocks : float or None
        The widest block in bandwidths (see the module's notes): 0 sums
        every term one by one; None takes :func:`block_width`'s setting
        (:data:`BLOCK_WIDTH`). Only for the Gaussian, each group of
        queries that share a divisor.

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
        coordinates) and of their sums, and from the blocks' series; it is
        infinite for the queries
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
    margin = _margin(TRUNCATION.value, x.size, w, positive)
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
    elements = working_elements() if budget is None else budget
    cap = elements // (2 * k + 8)
    out.bound[size > cap] = np.inf
    size[size > cap] = 0
    line = _Line(q=q, c=c, h=h, xs=xs, ids=ids, w=w, own=own, kept=kept, near=near)
    plan = _Plan(lo, size)
    width = _settings["block_width"] if blocks is None else float(blocks)
    if width > 0 and form is not None and form[1] == 2:
        model = _Model(head.kernel, form[0], metric, metric_params, V, powers)
        _block_moments(out, plan, line, model, (lo, width), elements)
    _term_moments(out, plan, line, cap, (head, V, powers, metric, metric_params))
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


class _Line:
    """One call of :func:`line_moments`: the queries ``q``, their centres
    ``c`` and divisors ``h`` (one per query), the sorted points of positive
    weight ``xs`` (training indices ``ids``, weights ``ws``), and for
    leave-one-out each query's own training index ``own``, the weight it
    keeps, its position among ``xs`` (-1: of weight 0) and the weight
    leaving it out removes; ``near``: each query's distance to its nearest
    point of positive weight."""

    def __init__(self, *, q, c, h, xs, ids, w, own, kept, near):
        self.q, self.c, self.h, self.xs, self.ids = q, c, h, xs, ids
        self.ws = np.ones(ids.size) if w is None else w[ids]
        self.own, self.kept, self.near = own, kept, near
        if own is not None:
            rank = np.full(max(ids.max(initial=-1), own.max(initial=-1)) + 1, -1)
            rank[ids] = np.arange(ids.size)
            self.own_pos = rank[own]
            self.removed = (1.0 if w is None else w[own]) - kept


class _Model:
    """The terms' kernel (``log K(u) = a u**2``), metric, values and
    powers, for the blocks."""

    def __init__(self, kernel, a, metric, metric_params, V, powers):
        self.kernel, self.a, self.V, self.powers = kernel, a, V, powers
        self.squared = use_squared(metric, [Head(kernel)], metric_params)

    def log_weights(self, d, h):
        """The log weights at the signed distances ``d`` (divisors ``h``),
        computed as :func:`_segment_moments` does."""
        D = d * d if self.squared else np.abs(d)
        return _log_weights(D[:, None], Head(self.kernel, h), self.squared)[:, 0]


class _Plan:
    """The terms :func:`line_moments` sums one by one: ranges of the sorted
    points of positive weight (query row, start, length, by row), each
    row's number of terms, a lower bound on its shift (its largest log
    weight; -inf: its terms') and the pieces its sums add besides its terms
    (its blocks' and own term's)."""

    def __init__(self, lo, size):
        m = lo.size
        self.parts = [(np.arange(m), lo, size)]
        self.gone = np.zeros(m, dtype=bool)
        self.terms = size.copy()
        self.floor = np.full(m, -np.inf)
        self.extra = np.zeros(m)

    def replace(self, rows, ranges, floor, extra):
        """The ranges ``(row, start, length)`` for the queries ``rows``."""
        self.gone[rows] = True
        self.parts.append(ranges)
        self.terms[rows] = np.bincount(ranges[0], ranges[2], self.terms.size)[rows]
        self.floor[rows], self.extra[rows] = floor, extra

    def ranges(self):
        """``(row, start, length)`` of every row, by row."""
        row, start, length = self.parts[0]
        keep = ~self.gone[row]
        parts = [(row[keep], start[keep], length[keep]), *self.parts[1:]]
        row, start, length = (np.concatenate(p) for p in zip(*parts, strict=True))
        order = np.argsort(row, kind="stable")
        return row[order], start[order], length[order]


def _spans(starts, lengths):
    """The positions ``starts[i] + arange(lengths[i])``, end to end."""
    ends = np.cumsum(lengths)
    return np.arange(ends[-1] if ends.size else 0) - np.repeat(
        ends - lengths - starts, lengths
    )


def _chunks(sizes, cap):
    """``(a, b)``: consecutive items of ``sizes`` of at most ``cap`` in all
    (or one item)."""
    ends = np.cumsum(sizes)
    a = 0
    while a < sizes.size:
        start = ends[a] - sizes[a]
        b = max(a + 1, int(np.searchsorted(ends, start + cap, side="right")))
        yield a, b
        a = b


def _term_moments(out, plan, line, cap, terms):
    """The sums of :func:`line_moments` term by term, the plan's ranges in
    segments of at most ``cap`` terms (``terms``: the head, values, powers
    and metric of :func:`_segment_moments`)."""
    row, start, length = plan.ranges()
    for a, b in _chunks(plan.terms, cap):
        i, j = np.searchsorted(row, [a, b])
        at = _spans(start[i:j], length[i:j])
        segment = _Segment(np.arange(a, b), plan, at, line)
        if segment.total:
            _segment_moments(out, segment, *terms)


class _Segment:
    """The terms of the queries ``rows`` (``at``: their positions in the
    sorted points of positive weight, by row), flattened: each term's
    training index, coordinate, query row (its query, centre and divisor),
    weight (its own term's kept weight for leave-one-out), the segments'
    starts, and the rows' shifts' lower bounds and pieces of the plan."""

    def __init__(self, rows, plan, at, line):
        size = plan.terms[rows]
        self.total = int(size.sum())
        self.rows, self.sizes = rows[size > 0], size[size > 0]
        self.first = (np.cumsum(size) - size)[size > 0]
        self.floor, self.extra = plan.floor[self.rows], plan.extra[self.rows]
        self.pts, self.x = line.ids[at], line.xs[at]
        self.row = np.repeat(rows, size)
        self.q, self.c, self.h = (v[self.row] for v in (line.q, line.c, line.h))
        self.w = line.ws[at]
        if line.own is not None:
            mine = self.pts == line.own[self.row]
            self.w[mine] = line.kept[self.row[mine]]


def _segment_moments(out, seg, head, V, powers, metric, metric_params):
    """The moments (and bounds, and counts) of one segment's queries added
    to ``out`` (see :func:`line_moments`)."""
    # Squared distances as for one divisor, each term's own divisor.
    squared = use_squared(metric, [Head(head.kernel)], metric_params)
    diff = seg.q - seg.x
    D = diff * diff if squared else np.abs(diff)
    L = _log_weights(D[:, None], Head(head.kernel, seg.h), squared)[:, 0]
    if is_user(head.kernel):
        _check_user_kernel(L, head)
    live = (seg.w > 0) & (L > -np.inf)
    L = np.where(live, L, -np.inf)
    M = np.maximum(np.maximum.reduceat(L, seg.first), seg.floor)
    M = np.where(np.isfinite(M), M, 0.0)
    Mt = np.repeat(M, seg.sizes)
    E = np.exp(L - Mt) * seg.w
    z = (seg.x - seg.c) / seg.h
    rows, first = seg.rows, seg.first
    # The terms' own rounding (offsets, log weights, exp), in units of
    # roundoff, and the sums' (one unit per term of a segment, and per
    # other piece: blocks, own term). A log weight errs by a few units of
    # itself (the distance's rounding); the largest term's cancels with the
    # shift (exp(0) = 1 exactly).
    below = live & (L < Mt)
    units = 8.0 + 4.0 * np.where(below, np.abs(L) + np.abs(Mt), 0.0)
    units += np.repeat(seg.sizes + seg.extra, seg.sizes)
    Vt = V[seg.pts]
    t = E
    for j in range(powers + 1):
        if j:
            t = t * z
        out.sums[rows, j, :-1] += np.add.reduceat(t[:, None] * Vt, first)
        out.sums[rows, j, -1] += np.add.reduceat(t, first)
        bound = 2 * _EPS64 * np.add.reduceat(np.abs(t) * (units + 2 * j), first)
        out.bound[rows, j] += bound
    if out.counts is not None:
        out.counts[rows] = np.add.reduceat(live.astype(np.float64), first)
        edge = float(head.kernel.support) * seg.h
        edge = edge * edge if squared else edge
        near_edge = (seg.w > 0) & (np.abs(D - edge) <= EDGE_SHARE * edge)
        at_edge = np.add.reduceat(near_edge.astype(np.float64), first) > 0
        out.bound[rows[at_edge]] = np.inf


def _block_moments(out, plan, line, model, windows, elements):
    """Add to ``out`` the sums of the blocks :func:`line_moments` takes as
    such (see the module's notes), one group of queries of one divisor at
    a time, and plan the rest of their terms (``windows``: the windows'
    starts and the blocks' width)."""
    starts, width = windows
    rows = np.flatnonzero(plan.terms > 0)
    divisors, group = np.unique(line.h[rows], return_inverse=True)
    for g, h in enumerate(divisors):
        mine = rows[group == g]
        lo, stop = starts[mine], starts[mine] + plan.terms[mine]
        blocks = _Blocks(line, int(lo.min()), int(stop.max()), float(h), width)
        if not blocks.count.size:
            continue
        M = model.log_weights(line.near[mine], line.h[mine])
        pairs = _Pairs(line, blocks, mine, (lo, stop), M, model.a)
        if not pairs.row.size:
            continue
        blocks.sum_powers(
            line, model, 2 * int(pairs.order.max()) + model.powers, elements
        )
        _pair_moments(out, pairs, blocks, model, elements)
        _leave_own_out(out, pairs, blocks, line, model)
        plan.replace(mine, _gaps(pairs, blocks, mine, lo, stop), M, pairs.pieces)


class _Blocks:
    """The blocks of one divisor ``h`` among the sorted points
    ``xs[first:last]``: the runs of at least :data:`BLOCK_POINTS` points
    between gaps wider than half of ``width`` bandwidths, at most ``width``
    wide (``start``, ``stop``: positions); their centres ``b``, half-widths
    ``tau`` (their largest ``|t|``, ``t = (x - b) / h``), counts and
    weights; :meth:`sum_powers` adds their power sums."""

    def __init__(self, line, first, last, h, width):
        # A point more on each side: the runs cut by the span's ends hold a
        # point outside every window and are no block, so that each block
        # is a whole run (its gaps decide it), whatever the other queries.
        lo, hi = max(first - 1, 0), min(last + 1, line.xs.size)
        xs = line.xs[lo:hi]
        with np.errstate(over="ignore", invalid="ignore"):
            cut = np.flatnonzero(np.diff(xs) > 0.5 * (width * h)) + 1
        start, stop = np.r_[0, cut], np.r_[cut, xs.size]
        with np.errstate(over="ignore", invalid="ignore"):
            keep = xs[stop - 1] - xs[start] <= width * h
        start, stop = start + lo, stop + lo
        keep &= (stop - start >= BLOCK_POINTS) & (start >= first) & (stop <= last)
        self.start, self.stop = start[keep], stop[keep]
        self.count = self.stop - self.start
        self.h = h
        if not self.count.size:
            return
        left = line.xs[self.start]
        self.b = left + 0.5 * (line.xs[self.stop - 1] - left)
        self.at = _spans(self.start, self.count)
        self.of = np.repeat(np.arange(self.count.size), self.count)
        self.heads = np.cumsum(self.count) - self.count
        self.t = (line.xs[self.at] - self.b[self.of]) / h
        self.tau = np.maximum.reduceat(np.abs(self.t), self.heads)
        self.weight = np.add.reduceat(line.ws[self.at], self.heads)

    def sum_powers(self, line, model, degree, elements):
        """The power sums ``sum w (t / unit)**n [v, 1]`` for ``n`` up to
        ``degree`` (``sums``, ``unit`` the half-width, 1 where it is 0:
        every power at most 1) and those of ``w |t / unit|**n`` (``abs``),
        in chunks of blocks within ``elements``; the power first, so that
        contracting them adds whole rows."""
        k = model.V.shape[1]
        self.unit = np.where(self.tau > 0, self.tau, 1.0)
        self.sums = np.empty((degree + 1, self.count.size, k + 1))
        self.abs = np.empty((degree + 1, self.count.size))
        for a, b in _chunks(self.count, elements // ((degree + 1) * (k + 2))):
            at = slice(self.heads[a], self.heads[b - 1] + self.count[b - 1])
            powers = np.empty((at.stop - at.start, degree + 1))
            powers[:, 0] = line.ws[self.at[at]]
            powers[:, 1:] = (self.t[at] / self.unit[self.of[at]])[:, None]
            np.cumprod(powers, axis=1, out=powers)
            values = np.ones((powers.shape[0], k + 1))
            values[:, :-1] = model.V[line.ids[self.at[at]]]
            heads = self.heads[a:b] - at.start
            terms = powers[:, :, None] * values[:, None, :]
            self.sums[:, a:b] = np.add.reduceat(terms, heads).transpose(1, 0, 2)
            self.abs[:, a:b] = np.add.reduceat(np.abs(powers), heads).T


class _Pairs:
    """The pairs of queries (``rows``, windows ``[lo, stop)``) and blocks
    that pay (see the module's notes): each pair's query ``row``, block
    ``blk``, ``s = (b - q) / h``, ``G``, order ``R`` and log factor ``lead
    = a s**2 - M`` (``M`` the query's shift, ``exp(lead)`` at most ``e``),
    ``shift`` ``|M|``, ``d = (b - c) / h``; and each query's number of
    pairs ``n`` and of other pieces in its sums (``pieces``: its blocks',
    own term's and the sums of the parts)."""

    def __init__(self, line, blocks, rows, windows, M, a):
        lo, stop = windows
        kf = np.searchsorted(blocks.start, lo, side="left")
        n = np.maximum(np.searchsorted(blocks.stop, stop, side="right") - kf, 0)
        mine, blk = np.repeat(np.arange(rows.size), n), _spans(kf, n)
        s = (blocks.b[blk] - line.q[rows[mine]]) / blocks.h
        tau = blocks.tau[blk]
        G = 2.0 * abs(a) * np.abs(s) * tau + abs(a) * tau * tau
        order = _orders(G)
        lead = a * s * s - M[mine]
        use = (G <= BLOCK_GROWTH) & (lead <= 1.0)
        use &= blocks.count[blk] >= BLOCK_POINTS * (order + 1)
        if line.own is not None:  # subtracted where the others outweigh it
            p = line.own_pos[rows[mine]]
            inside = (blocks.start[blk] <= p) & (p < blocks.stop[blk])
            use &= ~inside | (2.0 * line.removed[rows[mine]] <= blocks.weight[blk])
        self.mine, self.row, self.blk = mine[use], rows[mine[use]], blk[use]
        self.s, self.G, self.order, self.lead = s[use], G[use], order[use], lead[use]
        self.shift = np.abs(M[mine[use]])
        self.d = (blocks.b[self.blk] - line.c[self.row]) / blocks.h
        self.n = np.bincount(self.mine, minlength=rows.size)
        self.pieces = self.n + 3.0


def _order_at(G):
    """The least order ``R`` of the exponential series with ``G**(R + 1) /
    (R + 1)!`` at most a unit of roundoff."""
    order, term = 0, G
    while term > _EPS64:
        order += 1
        term *= G / (order + 1)
    return order


#: The highest order of a block's series (at ``G`` = :data:`BLOCK_GROWTH`).
_ORDER_MAX = _order_at(BLOCK_GROWTH)


def _orders(G):
    """:func:`_order_at` of each ``G`` (above :data:`_ORDER_MAX` beyond
    :data:`BLOCK_GROWTH`; the terms fall with the order for ``G < 2``)."""
    order = np.zeros(G.size, dtype=np.intp)
    term = G.copy()
    for r in range(_ORDER_MAX + 1):
        order += term > _EPS64
        term *= G / (r + 2)
    return order


def _pair_moments(out, pairs, blocks, model, elements):
    """Add each pair's block sums and their bound to its query's sums in
    ``out``, the pairs of one order at a time, in chunks within
    ``elements``."""
    powers, k = model.powers, model.V.shape[1]
    sums = np.empty((pairs.row.size, powers + 1, k + 1))
    bound = np.empty((pairs.row.size, powers + 1))
    for order in np.unique(pairs.order):
        todo = np.flatnonzero(pairs.order == order)
        size = (2 * order + powers + 1) * (k + 4)
        for part in np.array_split(todo, -(-todo.size * size // elements)):
            sums[part], bound[part] = _contract(pairs, part, blocks, model, order)
    heads = np.flatnonzero(np.r_[True, pairs.row[1:] != pairs.row[:-1]])
    rows = pairs.row[heads]
    out.sums[rows] += np.add.reduceat(sums, heads)
    out.bound[rows] += np.add.reduceat(bound, heads)


def _contract(pairs, part, blocks, model, order):
    """The sums of the pairs ``part`` (of one ``order``) and their bounds:
    each block's power sums contracted with the coefficients of its
    series times the offsets' powers ``(unit t' + d)**j``, times the
    factor ``exp(a s**2 - M)``."""
    a, powers = model.a, model.powers
    blk, s, G = pairs.blk[part], pairs.s[part], pairs.G[part]
    unit, tau = blocks.unit[blk], blocks.tau[blk]
    d = pairs.d[part]
    width = 2 * order + powers + 1
    series = _series(2.0 * a * s * unit, a * unit * unit, order, width)
    ones = np.zeros_like(series)  # the offsets' absolute powers
    ones[0] = 1.0
    P = np.take(blocks.sums[:width], blk, axis=1)
    A = np.take(blocks.abs[:width], blk, axis=1)
    factor = np.exp(pairs.lead[part])
    rest = G ** (order + 1) / math.factorial(order + 1)
    # Rounding in units of roundoff: the exponent's (as a log weight's, of
    # a s**2, the shift and g), the power sums' and the coefficients'.
    units = 8.0 + 4.0 * (abs(a) * (np.abs(s) + tau) ** 2 + 2 * abs(a) * s * s)
    units += 4.0 * (pairs.shift[part] + G + 2 * order) + blocks.count[blk]
    units += pairs.pieces[pairs.mine[part]]
    sums = np.empty((part.size, powers + 1, P.shape[2]))
    bound = np.empty((part.size, powers + 1))
    for j in range(powers + 1):
        if j:
            series = _times(series, unit, d)
            ones = _times(ones, unit, np.abs(d))
        # Sums of rows, each pair's own: the same whatever the other pairs.
        sums[:, j] = factor[:, None] * (series[:, :, None] * P).sum(axis=0)
        absolute = factor * np.exp(G) * (ones * A).sum(axis=0)
        bound[:, j] = absolute * (2 * _EPS64 * (units + 8 * j) + rest)
    return sums, bound


def _series(alpha, beta, order, width):
    """The coefficients (``width`` rows of them) of ``sum_{r <= order}
    g**r / r!`` in powers of ``t``, ``g = alpha t + beta t**2``, by
    Horner's rule: ``1 + g (1 + g / 2 (...)) / 1``."""
    e = np.zeros((width, alpha.size))
    e[0] = 1.0
    for r in range(order, 0, -1):
        top = 2 * (order - r) + 1  # the coefficients so far
        grown = np.zeros_like(e)
        grown[1 : top + 1] = alpha * e[:top]
        grown[2 : top + 2] += beta * e[:top]
        e = grown / r
        e[0] += 1.0
    return e


def _times(e, unit, d):
    """The coefficients ``e`` (by rows) times ``unit t + d``."""
    out = d * e
    out[1:] += unit * e[:-1]
    return out


def _leave_own_out(out, pairs, blocks, line, model):
    """Subtract from ``out`` the own term of each query whose own point is
    in one of its blocks (the weight leaving out removes), computed as
    :func:`_segment_moments` computes its terms, with its rounding in the
    bound."""
    if line.own is None:
        return
    p = line.own_pos[pairs.row]
    inside = (blocks.start[pairs.blk] <= p) & (p < blocks.stop[pairs.blk])
    rows = pairs.row[inside]
    x = line.xs[line.own_pos[rows]]
    L = model.log_weights(line.q[rows] - x, line.h[rows])
    M = model.log_weights(line.near[rows], line.h[rows])
    t = np.exp(L - M) * line.removed[rows]
    z = (x - line.c[rows]) / line.h[rows]
    units = 10.0 + 4.0 * (np.abs(L) + np.abs(M))
    values = model.V[line.own[rows]]
    for j in range(model.powers + 1):
        if j:
            t = t * z
        out.sums[rows, j, :-1] -= t[:, None] * values
        out.sums[rows, j, -1] -= t
        out.bound[rows, j] += 2 * _EPS64 * np.abs(t) * (units + 2 * j)


def _gaps(pairs, blocks, rows, lo, stop):
    """``(row, start, length)``: the ranges of the windows ``[lo, stop)``
    of ``rows`` outside their pairs' blocks, by row."""
    n = pairs.n  # each row's blocks, in order
    first = np.cumsum(n + 1) - (n + 1)
    start = np.empty(first[-1] + n[-1] + 1, dtype=np.intp)
    end = np.empty_like(start)
    start[first], end[first + n] = lo, stop
    at = first[pairs.mine] + np.arange(pairs.mine.size) - (np.cumsum(n) - n)[pairs.mine]
    end[at], start[at + 1] = blocks.start[pairs.blk], blocks.stop[pairs.blk]
    return np.repeat(rows, n + 1), start, end - start
