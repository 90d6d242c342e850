"""Bandwidth rules of thumb, per feature, from the spread of the data."""

import numpy as np

from .kernels import Gaussian

__all__ = ["BANDWIDTH_RULES", "rule_bandwidth"]


def _weighted_spread(X, w):
    """Per-feature weighted standard deviation (ddof=0) and interquartile range.

    Weights act as frequencies: integer weights give the spread of the data
    with rows repeated.
    """
    total = w.sum()
    mean = (w @ X) / total
    var = (w @ (X - mean) ** 2) / total
    std = np.sqrt(np.maximum(var, 0.0))
    q = np.quantile(X, [0.25, 0.75], axis=0, weights=w, method="inverted_cdf")
    iqr = q[1] - q[0]
    return std, iqr


def _scott(std, iqr, n, d):
    return std * n ** (-1.0 / (d + 4))


def _silverman(std, iqr, n, d):
    robust = np.where(iqr > 0, np.minimum(std, iqr / 1.349), std)
    return 0.9 * robust * n ** (-1.0 / (d + 4))


#: Bandwidth rules by name: functions of (std, iqr, n, d) giving a per-feature
#: bandwidth for the Gaussian kernel.
BANDWIDTH_RULES = {"scott": _scott, "silverman": _silverman}


def kernel_factor(kernel):
    """Factor that turns a Gaussian bandwidth into an equivalent one for ``kernel``.

    The ratio of canonical scales (Marron and Nolan, 1988); 1 for kernels
    without a finite, non-zero variance (constant, Cauchy, Silverman).
    """
    ratio = kernel.canonical_scale / Gaussian().canonical_scale
    return float(ratio) if np.isfinite(ratio) and ratio > 0 else 1.0


def rule_bandwidth(X, rule, kernel, sample_weight=None):
    """Per-feature bandwidth from a rule of thumb.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    rule : {"scott", "silverman"}
        ``"scott"``: ``h_j = s_j n**(-1/(d+4))`` (Scott, 1992), with ``s_j`` the
        standard deviation of feature ``j``. ``"silverman"``:
        ``h_j = 0.9 min(s_j, IQR_j/1.349) n**(-1/(d+4))`` (Silverman, 1986).
        Both are then multiplied by the ratio of canonical scales of ``kernel``
        and the Gaussian, so that every kernel smooths about as much.
    kernel : Kernel
    sample_weight : ndarray of shape (n_samples,) or None
        Frequency weights: ``n`` is their sum and the spreads are weighted.

    Returns
    -------
    ndarray of shape (n_features,)
        Positive bandwidths. A feature without spread gets scale 1 (or its
        absolute value's largest magnitude when that is positive) before the
        rule, so its bandwidth is never zero.
    """
    n_samples, d = X.shape
    w = np.ones(n_samples) if sample_weight is None else sample_weight
    std, iqr = _weighted_spread(X, w)
    magnitude = np.max(np.abs(X), axis=0)
    fallback = np.where(magnitude > 0, magnitude, 1.0)
    flat = ~(std > 0)
    std = np.where(flat, fallback, std)
    iqr = np.where(flat, 0.0, iqr)
    h = BANDWIDTH_RULES[rule](std, iqr, w.sum(), d) * kernel_factor(kernel)
    # A spread at the very edge of the float range may still round to 0 or inf.
    tiny = np.finfo(np.float64).tiny
    return np.clip(h, tiny, np.finfo(np.float64).max)
