"""Pointwise standard errors of the kernel regression estimates.

Both regressors are linear smoothers: the estimate at a query ``q`` is
``sum_j l_j(q) y_j`` with weights that depend on the inputs only. With sample
weights read as frequencies (a point of weight ``w_j`` stands for ``w_j``
observations of the same input, each with noise of variance ``sigma**2``), the
variance of the estimate is ``sigma**2 * sum_units l_u(q)**2``. Every quantity
below comes from the kernel-weighted sums of the core with two heads, the
kernel ``K`` and its square ``K**2`` (:class:`SquaredKernel`), in one pass:

- ``spread``: ``sum_units l_u(q)**2``, so the standard error is
  ``sigma * sqrt(spread)`` and ``1 / spread`` is the effective number of
  observations (``(sum_j w_j K_j)**2 / sum_j w_j K_j**2`` for the local-constant
  estimate);
- ``rss``: the kernel-weighted mean squared residual of the local fit in the
  window, whose expectation under locally constant noise is
  ``sigma**2 * (1 - dof)``, so ``rss / (1 - dof)`` estimates the local noise
  variance;
- ``leverage``: the weight of one observation of a training point in its own
  estimate, for the global noise variance
  ``sum_i w_i r_i**2 / sum_i w_i (1 - 2 leverage_i + spread_i)``.
"""

from dataclasses import dataclass

import numpy as np

from ._weights import _is_user
from .kernels import Kernel


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
    def _log_linear(self):
        form = getattr(self.kernel, "_log_linear", None)
        if form is None or _is_user(self.kernel):
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


@dataclass
class SquaredWeights:
    """Sums of the squared per-observation weights at each query.

    ``average`` (m, k): ``sum_j w_j a_j**2 V_j``, with ``a_j`` the normalised
    weight of one observation of point ``j``; ``total`` (m,): ``sum_j w_j
    a_j**2``; ``self_weight`` (m,): ``K(0)`` normalised likewise (one
    observation's weight in its own estimate when the query is a training
    point); ``undefined`` (m,): queries with an empty window.
    """

    average: np.ndarray
    total: np.ndarray
    self_weight: np.ndarray
    undefined: np.ndarray


@dataclass
class LocalFit:
    """The local fit at each query and what its standard error needs.

    ``estimate`` and ``rss`` have shape (m, k); ``spread``, ``dof`` and
    ``leverage`` shape (m,); ``undefined`` marks queries whose standard error
    is not defined (empty windows).
    """

    estimate: np.ndarray
    rss: np.ndarray
    spread: np.ndarray
    dof: np.ndarray
    leverage: np.ndarray
    undefined: np.ndarray


#: The local noise variance is not estimated where ``1 - dof`` is below this:
#: the window holds (in effect) no more observations than the local fit has
#: parameters, so its residuals are zero.
MIN_RESIDUAL_DOF = 1e-9


def local_noise_variance(fit):
    """``rss / (1 - dof)`` per query and output; NaN where undefined.

    Returns the variances and the mask of queries where they are undefined.
    """
    free = 1.0 - fit.dof
    undefined = fit.undefined | ~(free > MIN_RESIDUAL_DOF)
    with np.errstate(invalid="ignore", divide="ignore"):
        var = np.maximum(fit.rss, 0.0) / free[:, None]
    var[undefined] = np.nan
    return var, undefined


def global_noise_variance(fit, y, sample_weight):
    """One noise variance per output from the fit at the training points.

    ``sum_i w_i r_i**2 / sum_i w_i (1 - 2 l_ii + sum_j l_ij**2)``: the residual
    sum of squares over its expectation per unit variance, the
    degrees-of-freedom correction of a linear smoother. Points whose fit is
    undefined (empty windows) are left out. NaN when the smoother interpolates
    every observation.
    """
    w = np.ones(y.shape[0]) if sample_weight is None else sample_weight
    keep = ~fit.undefined & (w > 0)
    w = w[keep]
    resid = y[keep] - fit.estimate[keep]
    free = 1.0 - 2.0 * fit.leverage[keep] + fit.spread[keep]
    denominator = float(w @ np.maximum(free, 0.0))
    numerator = w @ resid**2
    if not denominator > MIN_RESIDUAL_DOF * max(float(w.sum()), 1.0):
        return np.full(y.shape[1], np.nan)
    return numerator / denominator
