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
"""

import math

import numpy as np

from ._base import per_query, working_elements
from ._cells import discrete_of
from ._traits import is_compact, line_metric, log_linear_form

#: What the terms left out by :func:`line_support` weigh at most, in all,
#: relative to each query's largest term, as a log: ``exp(-750)`` is below
#: the smallest float64 (``exp(-745.2)``).
MARGIN = 750.0

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
    if X.shape[1] != 1 or discrete_of([head]) is not None or per_query(head):
        return None, None
    if not line_metric(metric, metric_params):
        return None, None
    kernel = head.kernel
    form = None if is_compact(kernel) else log_linear_form(kernel)
    if not is_compact(kernel) and (form is None or form[0] >= 0):
        return None, None
    s = 1.0 if scale is None else float(np.ravel(np.asarray(scale, float))[0])
    q = np.asarray(Q, dtype=np.float64)[:, 0] / s
    x = np.asarray(X, dtype=np.float64)[:, 0] / s
    if not np.all(np.isfinite(q)):
        return None, None
    w = None if sample_weight is None else np.asarray(sample_weight, np.float64)
    positive = np.ones(x.size, dtype=bool) if w is None else w > 0
    h = float(head.divisor)
    near = _nearest(q, x, positive, exclude_self, self_index, self_weight, w)
    u0 = near / h
    if is_compact(kernel):
        reach = np.full(q.size, float(kernel.support) * SUPPORT_SLACK)
        empty = ~(u0 < reach)
    else:
        a, p = form
        margin = MARGIN + math.log(max(x.size, 1))
        if w is not None and positive.any():
            wp = w[positive]
            margin += math.log(float(wp.max())) - math.log(float(wp.min()))
        with np.errstate(over="ignore", invalid="ignore"):
            reach = (u0**p + margin / -a) ** (1.0 / p)
        empty = np.zeros(q.size, dtype=bool)
    with np.errstate(over="ignore", invalid="ignore"):
        radius = reach * h
    if not np.all(np.isfinite(radius)):  # no point of positive weight
        return np.arange(x.size), empty
    return _within(q, x, radius), empty


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
