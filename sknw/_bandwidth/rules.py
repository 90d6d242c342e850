"""Bandwidth rules of thumb, per feature, from the spread of the data."""

import numpy as np
from scipy.spatial.distance import cdist

from .._selection.weights import effective_sample_size
from .._sums._base import median_offsets
from ..kernels import Gaussian

__all__ = [
    "BANDWIDTH_RULES",
    "COORDINATE_METRICS",
    "grid_reference",
    "rule_bandwidth",
]

#: Metrics of coordinate differences: rules give one bandwidth per feature.
COORDINATE_METRICS = frozenset(
    {"euclidean", "sqeuclidean", "cityblock", "chebyshev", "minkowski"}
)
#: Metrics that standardise the features themselves (with their default
#: parameters): rules give a scalar bandwidth in the metric's units.
STANDARDISING_METRICS = frozenset({"mahalanobis", "seuclidean"})
#: Largest number of rows whose pairwise distances set the scale of other metrics.
_SCALE_SUBSAMPLE = 500


def _weighted_quantile(x, w, q, unit=1.0):
    """Quantile ``q`` of ``x`` with frequency weights ``w``, linear interpolation
    (``q`` a number, or an array of them: one sort for all).

    For unit weights this is :func:`numpy.quantile`'s default (``"linear"``);
    integer weights give the quantile of the data with rows repeated. ``unit``
    is the weight of one row (weights may have been divided by a scale).
    """
    order = np.argsort(x, kind="stable")
    cum = np.cumsum(w[order])
    xs = x[order]
    q = np.asarray(q, dtype=np.float64)
    with np.errstate(over="ignore"):
        cum_units = cum / unit
    if not np.isfinite(cum_units[-1]):
        # More units than floats can count: the interpolation between two
        # consecutive units is immaterial; take the inverted CDF at q.
        idx = np.searchsorted(cum, q * cum[-1], side="left")
        return xs[np.minimum(idx, len(xs) - 1)]
    cum = cum_units
    t = np.maximum(q * (cum[-1] - 1.0), 0.0)
    k = np.floor(t)
    last = len(xs) - 1
    lo = xs[np.minimum(np.searchsorted(cum, k, side="right"), last)]
    hi = xs[np.minimum(np.searchsorted(cum, k + 1.0, side="right"), last)]
    return lo + (t - k) * (hi - lo)


def _weighted_spread(X, w, unit=1.0):
    """Per-feature weighted standard deviation (ddof=0) and interquartile range.

    Weights act as frequencies: integer weights give the spread of the data
    with rows repeated. Features are measured from their median (so that data
    far from zero keep their digits) and scaled by a power of two near their
    largest magnitude, so spreads near the ends of the float range neither
    overflow nor underflow.
    """
    X, _ = median_offsets(X)
    # Powers of two: the scaling is exact.
    _, exponent = np.frexp(np.max(np.abs(X), axis=0))
    magnitude = np.ldexp(1.0, exponent - 1)
    Xn = X / magnitude
    total = w.sum()
    mean = (w @ Xn) / total
    var = (w @ (Xn - mean) ** 2) / total
    std = np.sqrt(np.maximum(var, 0.0)) * magnitude
    iqr = np.array(
        [np.diff(_weighted_quantile(col, w, [0.25, 0.75], unit))[0] for col in X.T]
    )
    return std, iqr


def _scott(std, iqr, n_factor, d):
    return std * n_factor


def _robust_spread(std, iqr):
    """The smaller of the standard deviation and ``IQR / 1.349`` (equal for
    normal data), the standard deviation where the IQR is 0."""
    return np.where(iqr > 0, np.minimum(std, iqr / 1.349), std)


def _silverman(std, iqr, n_factor, d):
    return 0.9 * _robust_spread(std, iqr) * n_factor


def _robust_scott(std, iqr, n_factor, d):
    return _robust_spread(std, iqr) * n_factor


#: Bandwidth rules by name: functions of (std, iqr, n**(-1/(d+4)), d) giving a
#: per-feature bandwidth for the Gaussian kernel.
BANDWIDTH_RULES = {"scott": _scott, "silverman": _silverman}
#: The rules' constant for a scalar bandwidth on a unit scale.
_SCALAR_FACTOR = {"scott": 1.0, "silverman": 0.9, "robust": 1.0}
#: Every rule, the grids' reference (:func:`grid_reference`) among them.
_RULES = {**BANDWIDTH_RULES, "robust": _robust_scott}


def grid_reference(
    X, kernel, sample_weight=None, metric="euclidean", metric_params=None
):
    """The bandwidth the default grids of the searches multiply: Scott's rule
    with a robust spread, ``min(s_j, IQR_j / 1.349) n**(-1/(d+4))`` (``s_j``
    where the IQR is 0), ``n`` the effective sample size of the weights (see
    :mod:`sknw._selection.weights`), times the kernel's canonical-scale ratio; for
    other metrics as :func:`rule_bandwidth`'s ``"scott"``.

    A few points far from the others inflate the standard deviation but not
    the IQR, so the grid stays about the bulk of the data; and the grid does
    not move when every weight is multiplied by one constant.
    """
    w = sample_weight
    if w is None:
        count = X.shape[0]
    else:  # weights summing to the count: quantiles free of their scale
        count = effective_sample_size(w)
        w = np.asarray(w, dtype=np.float64) / np.max(w)
        w = w * (count / np.sum(w))
    return rule_bandwidth(X, "robust", kernel, w, metric, metric_params, count=count)


def _median_distance(X, w, metric, metric_params, unit=1.0):
    """Weighted median distance between distinct training rows (a subsample).

    Pairs are weighted by ``w_i w_j``, so integer weights act as repeated rows
    (a row repeated ``k`` times adds ``k (k - 1) / 2`` pairs at distance 0).
    """
    n = X.shape[0]
    if n > _SCALE_SUBSAMPLE:
        idx = np.linspace(0, n - 1, _SCALE_SUBSAMPLE).astype(np.intp)
        X, w = X[idx], w[idx]
    D = cdist(X, X, metric, **(metric_params or {}))
    iu = np.triu_indices(X.shape[0], k=1)
    dist = np.concatenate([D[iu], np.zeros(X.shape[0])])
    self_pairs = np.maximum(w * (w - unit) / 2, 0)  # k (k - 1) / 2, in units
    pair_w = np.concatenate([w[iu[0]] * w[iu[1]], self_pairs])
    if not np.any(pair_w > 0) or not np.any(dist > 0):
        return 1.0
    median = np.quantile(dist, 0.5, weights=pair_w, method="inverted_cdf")
    if not median > 0:
        median = np.average(dist, weights=pair_w)
    return float(median) if np.isfinite(median) and median > 0 else 1.0


def kernel_factor(kernel):
    """Factor that turns a Gaussian bandwidth into an equivalent one for ``kernel``.

    The ratio of canonical scales (Marron and Nolan, 1988); 1 for kernels
    without a finite, non-zero variance (constant, Cauchy, Silverman).
    """
    ratio = kernel.canonical_scale / Gaussian().canonical_scale
    return float(ratio) if np.isfinite(ratio) and ratio > 0 else 1.0


def rule_bandwidth(
    X,
    rule,
    kernel,
    sample_weight=None,
    metric="euclidean",
    metric_params=None,
    *,
    count=None,
):
    """Bandwidth from a rule of thumb, per feature for coordinate metrics.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    rule : {"scott", "silverman"}
        For coordinate metrics (euclidean, sqeuclidean, cityblock, chebyshev,
        minkowski) one bandwidth per feature: ``"scott"``:
        ``h_j = s_j n**(-1/(d+4))`` (Scott, 1992), with ``s_j`` the standard
        deviation of feature ``j``; ``"silverman"``:
        ``h_j = 0.9 min(s_j, IQR_j/1.349) n**(-1/(d+4))`` (Silverman, 1986).
        For metrics that standardise the features (mahalanobis, seuclidean) a
        scalar ``c n**(-1/(d+4))`` with ``c`` = 1 (scott) or 0.9 (silverman);
        for every other metric the same times the weighted median distance
        between training points. All are then multiplied by the ratio of the
        canonical scales of ``kernel`` and the Gaussian, so that every kernel
        smooths about as much.
    kernel : Kernel
    sample_weight : ndarray of shape (n_samples,) or None
        Frequency weights: ``n`` is their sum and the spreads are weighted.
    metric, metric_params
        The estimator's metric and its resolved parameters.
    count : float, optional
        The ``n`` of the rule, in place of the sum of the weights.

    Returns
    -------
    ndarray of shape (n_features,) or float
        Positive bandwidths. A feature without spread gets scale 1 (or its
        largest absolute value when that is positive) before the rule, so its
        bandwidth is never zero.
    """
    n_samples, d = X.shape
    w = np.ones(n_samples) if sample_weight is None else sample_weight
    # Spreads do not depend on the scale of the weights; n = sum(w) does, and
    # is kept as a logarithm so that huge weights do not overflow it.
    _, exponent = np.frexp(np.max(w))
    exponent = exponent - 1
    # One unit of weight after the scaling: inf where the largest weight is
    # below 2**-1023 (every weight is less than a unit); the weights
    # themselves are scaled by ldexp, which is exact even from subnormals.
    with np.errstate(over="ignore"):
        unit = np.ldexp(1.0, -exponent)
    w = np.ldexp(w, -exponent)
    if count is None:
        n_factor = np.exp(-(np.log(w.sum()) + exponent * np.log(2.0)) / (d + 4))
    else:
        n_factor = float(count) ** (-1.0 / (d + 4))
    factor = kernel_factor(kernel)
    tiny, huge = np.finfo(np.float64).tiny, np.finfo(np.float64).max
    if metric not in COORDINATE_METRICS:
        scale = 1.0
        if metric not in STANDARDISING_METRICS:
            scale = _median_distance(X, w, metric, metric_params, unit)
        h = _SCALAR_FACTOR[rule] * scale * n_factor * factor
        return float(np.clip(h, tiny, huge))
    std, iqr = _weighted_spread(X, w, unit)
    magnitude = np.max(np.abs(X), axis=0)
    fallback = np.where(magnitude > 0, magnitude, 1.0)
    flat = (np.ptp(X, axis=0) == 0) | ~(std > 0)
    std = np.where(flat, fallback, std)
    iqr = np.where(flat, 0.0, iqr)
    h = _RULES[rule](std, iqr, n_factor, d) * factor
    # A spread at the very edge of the float range may still round to 0 or inf.
    return np.clip(h, tiny, huge)
