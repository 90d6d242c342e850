"""What sample weights mean when a bandwidth is selected.

The estimates weigh each training row by its sample weight as a frequency:
integer weights give the estimates of the rows repeated. The selection by
leave-one-out or by an in-sample criterion (``bandwidth="cv"`` and the
``*CV`` estimators with ``cv=None``) sees each distinct observation once:
rows equal in inputs and targets are merged into one whose weight is their
total, and rows of weight 0 are dropped (:func:`distinct_rows`). Leaving a
point out then removes its whole row, and the points are counted by the
weights' effective sample size (:func:`effective_sample_size`), in the
default grid's reference bandwidth and in the criteria. So:

* integer weights choose as the repeated rows they stand for (both reach
  the same distinct rows), and the copies of a point never predict it while
  it is left out (with them, leave-one-out prefers the smallest bandwidths);
* multiplying every weight by one constant changes no score and no choice:
  importance and survey weights choose as their relative sizes say.
"""

from typing import NamedTuple

import numpy as np

from .._sums._base import power_of_two_scale

__all__ = [
    "DistinctRows",
    "distinct_rows",
    "effective_sample_size",
    "subsample_rows",
]


def effective_sample_size(w):
    """Kish's effective sample size ``(sum w)**2 / sum(w**2)`` of the weights
    ``w``, or ``w`` itself for an int (the number of rows of unit weight):
    the number of rows for equal weights, unchanged when every weight is
    multiplied by one constant."""
    if isinstance(w, int | np.integer):
        return float(w)
    w = np.asarray(w, dtype=np.float64)
    if not np.any(w > 0):
        return 0.0
    w = w / np.max(w)  # the ratios, free of overflow and underflow
    return float(np.sum(w) ** 2 / np.sum(w * w))


class DistinctRows(NamedTuple):
    """Training rows for a selection, each distinct observation once."""

    X: np.ndarray
    y: np.ndarray
    sample_weight: np.ndarray | None


def distinct_rows(X, y, sample_weight):
    """The distinct rows of positive weight of ``(X, y)`` (equal in inputs
    and targets), each weighing the total weight of its copies (their number
    without weights), sorted: the same arrays from integer weights as from
    the rows they repeat, in whatever order. Without weights and copies,
    the arrays themselves; the rows of positive weight where they are all
    copies of one (no distinct row is left to predict it: leaving out one
    copy is all leave-one-out can do there)."""
    w = sample_weight
    if w is not None and not np.all(w > 0):
        keep = np.flatnonzero(w > 0)
        X, y, w = X[keep], y[keep], w[keep]
    n = X.shape[0]
    rows = np.hstack([X.reshape(n, -1), np.reshape(y, (n, -1))])
    order = np.lexsort(rows.T[::-1])
    ordered = rows[order]
    starts = np.r_[True, np.any(ordered[1:] != ordered[:-1], axis=1)]
    if (w is None and starts.all()) or np.count_nonzero(starts) < 2:
        return DistinctRows(X, y, w)
    weights = np.ones(n) if w is None else w / power_of_two_scale(w)
    total = np.bincount(np.cumsum(starts) - 1, weights=weights[order])
    if w is not None:  # back to the weights' scale, where it does not overflow
        with np.errstate(over="ignore"):
            scaled = total * power_of_two_scale(w)
        total = scaled if np.all(np.isfinite(scaled)) else total
    pick = order[starts]
    return DistinctRows(X[pick], y[pick], total)


def subsample_rows(positive, size):
    """A deterministic subsample of ``size`` of the rows ``positive`` (sorted;
    all of them where there are at most ``size``)."""
    if positive.size <= size:
        return positive
    pick = np.random.RandomState(0).choice(positive.size, size, replace=False)
    return positive[np.sort(pick)]
