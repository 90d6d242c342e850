"""The choice among several local optima of a leave-one-out curve: the
smoothest whose score is within one standard error of the best.

A leave-one-out curve over the bandwidth often has more than one local
optimum (Hall & Marron 1991): a spurious one at a small bandwidth that
interpolates a few clustered points, and the one that tracks the function.
Their scores can differ by less than their sampling error, and taking the
global optimum then undersmooths. Hall and Marron recommend the largest
local minimiser of the cross-validation function; taking it only where its
score is within one standard error of the best keeps the best wherever the
data tell them apart. The standard error is that of the mean of the paired
per-point losses (the leave-one-out losses of the two bandwidths at each
training point), so it is small where the two fits agree on most points.
"""

import numpy as np

#: Standard errors of the paired per-point loss difference within which the
#: largest local optimum is preferred to the best.
STANDARD_ERRORS = 1.0


def interior_optima(mean, mults, best):
    """Indices of the candidates of the same kernel as ``best`` (equal
    ``mults`` runs, in increasing order) at a larger multiplier than the
    best's that are interior local maxima of the score ``mean`` (strictly
    above the smaller neighbour, at least the larger one; NaN scores as
    ``-inf``), from the largest multiplier down."""
    score = np.where(np.isnan(mean), -np.inf, mean)
    found = []
    for i in _run(mults, best):
        if mults[i] <= mults[best] or i - 1 < 0 or i + 1 >= mean.size:
            continue
        if mults[i - 1] >= mults[i] or mults[i + 1] <= mults[i]:
            continue  # the end of the kernel's run: an edge of its grid
        if score[i] > score[i - 1] and score[i] >= score[i + 1]:
            found.append(i)
    return found[::-1]


def _run(mults, best):
    """Indices of the increasing run of multipliers that holds ``best`` (one
    kernel's candidates of the grid)."""
    lo = best
    while lo > 0 and mults[lo - 1] < mults[lo]:
        lo -= 1
    hi = best
    while hi + 1 < mults.size and mults[hi + 1] > mults[hi]:
        hi += 1
    return range(lo, hi + 1)


def within_one_error(losses, best_losses, w, count):
    """Whether the mean paired difference of the per-point ``losses`` from
    ``best_losses`` is within :data:`STANDARD_ERRORS` standard errors of
    zero (or below it). ``w`` are frequency weights (None for ones) and
    ``count`` the number of observations they stand for: the standard error
    is the weighted standard deviation over ``sqrt(count)``, the same for a
    point of weight 2 as for two copies of it."""
    diff = losses - best_losses
    if not np.all(np.isfinite(diff)) or not count > 1:
        return False
    w = np.ones(diff.size) if w is None else np.asarray(w, dtype=np.float64)
    w = w / np.sum(w)
    mean = float(w @ diff)
    se = float(np.sqrt(w @ (diff - mean) ** 2 / count))
    return mean <= STANDARD_ERRORS * se


def smoothest_near_best(mean, mults, best, point_losses, w, count):
    """The candidate to choose: the largest interior local optimum above
    ``best`` whose per-point losses (``point_losses(indices)``, one row per
    index) are within one standard error of the best's (weights ``w`` standing
    for ``count`` observations, see :func:`within_one_error`), else
    ``best``."""
    if not np.all(np.isfinite(mults)):
        return best
    above = interior_optima(mean, mults, best)
    if not above:
        return best
    losses = point_losses([best, *above])
    for row, i in enumerate(above, start=1):
        if within_one_error(losses[row], losses[0], w, count):
            return i
    return best


def per_point_losses(preds, y, kind):
    """Leave-one-out loss of each candidate at each training point: the
    squared error averaged over the outputs (regression), minus the log of
    the probability of the true class (classification, ``y`` the class
    indices, probabilities clipped as the log-loss scorer clips them)."""
    if kind == "classification":
        eps = np.finfo(np.float64).eps
        p = preds[:, np.arange(y.size), y]
        return -np.log(np.clip(p, eps, 1.0))
    y = np.asarray(y, dtype=np.float64).reshape(preds.shape[1], -1)
    return np.mean((preds - y[None]) ** 2, axis=2)
