"""Pointwise standard errors of the kernel regression estimates.

Both regressors are linear smoothers: the estimate at a query ``q`` is
``sum_j l_j(q) y_j`` with weights that depend on the inputs only. Sample weights
are read as precisions, as in weighted least squares: the noise of point ``j``
has variance ``sigma**2 / w_j`` (a point of weight 2 is as precise as the mean
of two observations), so standard errors do not change when all weights are
multiplied by a constant. The variance of the estimate is
``sigma**2 * sum_j l_j(q)**2 / w_j``. Every quantity below comes from the
kernel-weighted sums of the core with two heads, the kernel ``K`` and its
square ``K**2`` (:class:`SquaredKernel`), in one pass:

- ``spread``: ``sum_j l_j(q)**2 / w_j``, so the standard error is
  ``sigma * sqrt(spread)`` and ``1 / spread`` is the effective number of
  observations of weight one (``(sum_j w_j K_j)**2 / sum_j w_j K_j**2`` for the
  local-constant estimate);
- ``rss``: the kernel-weighted mean squared residual of the local fit in the
  window, ``sum_j p_j r_j**2`` with ``p_j = w_j K_j / sum_l w_l K_l``, whose
  expectation under locally constant noise is
  ``sigma**2 * (inverse_weight - dof)``, with ``inverse_weight = sum_j p_j / w_j``
  and ``dof = tr(G^-1 G_2)`` (``G`` and ``G_2`` the local design's moments with
  the weights ``p_j`` and ``p_j**2 / w_j``), so that
  ``rss / (inverse_weight - dof)`` estimates the local noise variance;
- ``leverage``: ``l_ii / w_i`` at a training point, for the global noise
  variance ``sum_i w_i r_i**2 / sum_i (1 - 2 l_ii + w_i spread_i)``.
"""

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .._sums._traits import is_user
from ..kernels import Kernel


class SquaredKernel(Kernel):
    """The square of a kernel, ``K(u)**2``: its sums are those of the squared
    weights. Log values are exactly twice the kernel's, so the per-query shifts
    of the two heads are in a ratio of exactly 2."""

    nonnegative = True

    def __init__(self, kernel=None):
        self.kernel = kernel

    @property
    def support(self):
        return self.kernel.support

    @property
    def _native_sq(self):
        return self.kernel._native_sq

    @property
    def _continuous(self):
        # The same window as the kernel's (the boxcar's open one).
        return self.kernel._continuous

    @property
    def _log_linear(self):
        form = getattr(self.kernel, "_log_linear", None)
        if form is None or is_user(self.kernel):
            return None
        return (2.0 * form[0], form[1])

    def __call__(self, u):
        values = np.asarray(self.kernel(u), dtype=np.float64)
        return values * values

    def log_value(self, u):
        return 2.0 * np.asarray(self.kernel.log_value(u), dtype=np.float64)

    def log_value_sq(self, u2):
        return 2.0 * np.asarray(self.kernel.log_value_sq(u2), dtype=np.float64)

    def sign(self, u):
        return np.ones_like(np.asarray(u, dtype=np.float64))


class SquaredWeights(NamedTuple):
    """Sums of the squared weights at each query.

    ``average`` (m, k): ``sum_j w_j a_j**2 V_j``, with ``a_j`` the normalised
    weight of one unit of weight of point ``j``; ``total`` (m,):
    ``sum_j w_j a_j**2``; ``self_weight`` (m,): ``K(0)`` normalised likewise
    (a unit of weight's weight in its own estimate when the query is a
    training point); ``undefined`` (m,): queries with an empty window;
    ``inverse_weight`` (m,): the kernel-weighted mean of ``1 / w_j``.
    """

    average: np.ndarray
    total: np.ndarray
    self_weight: np.ndarray
    undefined: np.ndarray
    inverse_weight: np.ndarray


@dataclass
class LocalFit:
    """The local fit at each query and what its standard error needs.

    ``estimate`` (m, k) is in the units of the targets; ``rss`` and ``second``
    (m, k), the weighted mean squared residual and the weighted mean squared
    centred target, are in units of ``y_scale**2`` (``y_scale`` (k,) a power of
    two per output, against overflow and underflow). ``spread``, ``dof``,
    ``inverse_weight`` and ``leverage`` have shape (m,); ``undefined`` marks
    queries whose standard error is not defined (empty windows).
    """

    estimate: np.ndarray
    rss: np.ndarray
    second: np.ndarray
    spread: np.ndarray
    dof: np.ndarray
    inverse_weight: np.ndarray
    leverage: np.ndarray
    undefined: np.ndarray
    y_scale: np.ndarray


#: The local noise variance is not estimated where ``inverse_weight - dof`` is
#: at most this times ``inverse_weight``: the window holds (in effect) no more
#: observations than the local fit has parameters, so its residuals vanish.
MIN_RESIDUAL_DOF = 1e-9
#: Nor where the weighted mean squared residual is within this many units of
#: roundoff of the weighted mean squared target (cancellation in the one-pass
#: formula leaves no significant digit) or negative (a signed kernel).
RSS_ROUNDING = 64.0


def local_noise_variance(fit):
    """``rss / (inverse_weight - dof)`` per query and output, in units of
    ``y_scale**2``; NaN where undefined.

    Returns the variances and the (m, k) mask where they are undefined.
    """
    free = fit.inverse_weight - fit.dof
    undefined = (fit.undefined | ~(free > MIN_RESIDUAL_DOF * fit.inverse_weight))[
        :, None
    ]
    eps = np.finfo(np.float64).eps
    unresolved = ~(fit.rss > RSS_ROUNDING * eps * fit.second) & (fit.second != 0)
    undefined = undefined | unresolved | ~np.isfinite(fit.rss)
    with np.errstate(invalid="ignore", divide="ignore"):
        var = np.maximum(fit.rss, 0.0) / free[:, None]
    var[undefined] = np.nan
    return var, undefined


def global_noise_variance(fit, y, sample_weight):
    """One noise variance per output (of an observation of weight one) from the
    fit at the training points, in units of ``fit.y_scale**2``.

    ``sum_i w_i r_i**2 / sum_i (1 - 2 l_ii + w_i spread_i)``: the weighted
    residual sum of squares over its expectation per unit variance, the
    degrees-of-freedom correction of a linear smoother under precision
    weights. Points of weight zero and points whose fit is undefined (empty
    windows) are left out. NaN when the smoother interpolates every point.
    """
    w = np.ones(y.shape[0]) if sample_weight is None else sample_weight
    keep = ~fit.undefined & (w > 0)
    w = w[keep]
    resid = (y[keep] - fit.estimate[keep]) / fit.y_scale
    lever = w * fit.leverage[keep]
    free = 1.0 - 2.0 * lever + w * fit.spread[keep]
    denominator = float(np.sum(free))
    numerator = w @ resid**2
    if not denominator > MIN_RESIDUAL_DOF * max(float(keep.sum()), 1.0):
        return np.full(y.shape[1], np.nan)
    return numerator / denominator
