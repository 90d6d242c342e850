"""Robustness iterations (Cleveland, 1979): refits that down-weight the
training points of large residuals, as LOWESS does.

After each fit, the residuals at the training points give each point the
weight ``B(|r_i| / (6 s))`` with the bisquare ``B(u) = (1 - u**2)**2`` for
``u < 1`` and 0 beyond, ``s`` the median absolute residual; the estimator is
refitted with its sample weights times these. Where ``s`` is 0 (more than
half of the points fitted exactly), the points fitted exactly weigh 1 and
the others 0, as in statsmodels' ``lowess``. Residuals within
:data:`RESIDUAL_FLOOR` of the spread of the targets count as 0 (exact fits),
so that rounding never decides a point's weight.
"""

import numpy as np

from .._bandwidth.rules import _weighted_quantile

#: Residuals up to this share of the targets' range (per output) are exact.
RESIDUAL_FLOOR = 1e-10


def bisquare(u):
    """``(1 - u**2)**2`` for ``|u| < 1``, else 0."""
    u = np.minimum(np.abs(u), 1.0)
    return (1.0 - u * u) ** 2


def robustness_weights(residuals, y, sample_weight=None):
    """Bisquare weights of the residuals ``(n,)`` or ``(n, n_outputs)`` of
    the targets ``y``.

    Each output's residuals are in units of 6 times their median absolute
    value (weighted by the frequencies ``sample_weight``, over the points of
    positive weight); a point weighs by its largest residual in those units.
    """
    R = np.abs(np.reshape(residuals, (residuals.shape[0], -1)))
    w = sample_weight
    rows = slice(None) if w is None else w > 0
    Y = np.reshape(y, R.shape)[rows]
    spread = np.max(Y, axis=0, initial=-np.inf) - np.min(Y, axis=0, initial=np.inf)
    R = np.where(R <= RESIDUAL_FLOOR * spread, 0.0, R)
    if w is None:
        median = np.median(R, axis=0)
    else:
        median = np.array(
            [_weighted_quantile(R[rows, j], w[rows], 0.5) for j in range(R.shape[1])]
        )
    with np.errstate(divide="ignore", invalid="ignore"):
        u = np.where(median > 0, R / (6.0 * median), np.where(R > 0, 1.0, 0.0))
    return bisquare(np.max(u, axis=1))
