"""How a bandwidth divides the data: a scale of the features and a divisor of
the distances, one rule for fitting and for the cross-validation passes.

For a metric homogeneous of degree ``p`` (``d(x / c, q / c) = d(x, q) / c**p``
for ``c > 0``), a bandwidth ``b`` (a float or one per feature) is split into
a scale ``s`` that divides the features and a divisor ``g`` of the distances,
``d(x / b, q / b) = d(x / s, q / s) / g``. Candidates of one shape (per-feature
bandwidths proportional to each other, or every scalar bandwidth) share ``s``
and so their distances: a grid of them costs one pass. ``s`` is the group's
first bandwidth (or 1) times a power of two that brings the largest
coordinate of the training data near one (an exact division: distances and
their ties are unchanged), so that squared distances stay representable at
any scale of the data. A fitted estimator divides by the scaling of its
bandwidth computed here, and a CV estimator by that of the group its chosen
candidate was scored in: the chosen candidate is predicted exactly as it was
scored.
"""

import math
from dataclasses import dataclass

import numpy as np

from .._sums import Head
from .._sums._base import Frame, median_offsets, scale_of
from .._sums._traits import HOMOGENEOUS_DEGREE

_TINY = np.finfo(np.float64).tiny


@dataclass(frozen=True)
class Scaling:
    """The features are divided by ``scale`` (None: unscaled) and the
    distances by ``divisor``."""

    scale: object
    divisor: float

    def head(self, kernel):
        return Head(kernel, self.divisor)


def coordinate_exponent(top, bw):
    """An integer ``e`` with ``max(top / (bw * 2**e))`` in [1/2, 1) (0 when
    ``top`` is None or all zero): dividing by ``ldexp(bw, e)`` brings the
    largest coordinate near one, exactly."""
    if top is None:
        return 0
    with np.errstate(divide="ignore"):
        exponent = np.log2(np.atleast_1d(top)) - np.log2(np.atleast_1d(bw))
    exponent = exponent[np.isfinite(exponent)]
    if not exponent.size:
        return 0
    return int(np.floor(np.max(exponent))) + 1


def _normal(value):
    return bool(value >= _TINY and math.isfinite(value))


def _size(bw, scale, degree):
    """The divisor ``g`` of a per-feature bandwidth ``bw`` over its group's
    ``scale``: ``(bw / scale)**degree``, exactly where ``bw`` is a power of
    two times the scale (the group's first), else their geometric mean."""
    ratio = bw / scale
    size = ratio[0] if np.all(ratio == ratio[0]) else np.exp(np.mean(np.log(ratio)))
    with np.errstate(over="ignore", under="ignore"):
        return float(size) ** degree


def scalings(bandwidths, metric, X=None):
    """The scaling of each bandwidth and the key of its group (candidates of
    one key share the same ``scale`` object, and their distances).

    ``X`` is the training data (None: no power of two from the data).
    Bandwidths whose divisor would leave the normal range are unscaled.
    """
    degree = HOMOGENEOUS_DEGREE.get(metric)
    top = None if X is None else np.max(np.abs(X), axis=0, initial=0.0)
    median = _median(X) if degree is not None else None
    scales, out = {}, []
    # The power of two of scalar bandwidths, common to all of them.
    e = None if top is None else coordinate_exponent(np.max(top, initial=0.0), 1.0)
    for bw in bandwidths:
        if np.ndim(bw) and degree == 1:
            flat = np.ravel(bw)
            if flat.size == 1 or np.all(flat == flat[0]):
                # Equal per-feature bandwidths divide the distances as a
                # scalar does (and so decide edges of windows the same way).
                bw = float(flat[0])
        if np.ndim(bw) == 0 and degree is not None and top is not None:
            key, divisor = _scalar(bw, degree, top, e, scales)
        elif np.ndim(bw) == 0 or degree is None:
            key = None if np.ndim(bw) == 0 else ("array", *map(float, bw))
            scales.setdefault(key, None if key is None else np.asarray(bw))
            divisor = float(bw) if key is None else 1.0
        else:
            key, divisor = _per_feature(bw, degree, top, median, scales)
        out.append((key, Scaling(scales[key], divisor)))
    return out


def _scalar(bw, degree, top, e, scales):
    """Key and divisor of a scalar bandwidth: a power of two common to every
    feature (``2**e``, ``e`` the :func:`coordinate_exponent` of the largest
    coordinate ``top``) brings the coordinates near one (exact: distances and
    their ties unchanged)."""
    try:
        divisor = math.ldexp(float(bw), -e * degree)
    except OverflowError:  # beyond the largest float, as np.ldexp's inf
        divisor = math.inf
    if not _normal(divisor):  # the scaled bandwidth would leave the normal range
        scales.setdefault(None, None)
        return None, float(bw)
    if "scalar" not in scales:
        scales["scalar"] = np.full(top.shape, np.ldexp(1.0, e))
    return "scalar", divisor


def _per_feature(bw, degree, top, median, scales):
    """Key and divisor of a per-feature bandwidth: its shape is the key, the
    scale the group's first bandwidth times a power of two (measured from the
    data's median with several features)."""
    bw = np.asarray(bw, dtype=np.float64)
    key = tuple(f"{v:.12e}" for v in bw / np.exp(np.mean(np.log(bw))))
    if key not in scales:
        if median is None:
            scales[key] = np.ldexp(bw, coordinate_exponent(top, bw))
        else:
            origin, offsets = median
            scales[key] = Frame(origin, np.ldexp(bw, coordinate_exponent(offsets, bw)))
    divisor = _size(bw, scale_of(scales[key]), degree)
    if _normal(divisor):
        return key, divisor
    key = ("array", *map(float, bw))
    scales.setdefault(key, bw if median is None else Frame(median[0], bw))
    return key, 1.0


def _median(X):
    """With several features, ``(origin, top)``: the per-feature median of
    the training data, which per-feature scales are measured from (see
    :class:`~sknw._sums._base.Frame`), and the largest offset from it. None
    otherwise."""
    if X is None or X.shape[1] < 2:
        return None
    offsets, origin = median_offsets(X)
    return origin, np.max(np.abs(offsets), axis=0, initial=0.0)


def scaling_of(bandwidth, metric, X):
    """The scaling a fitted estimator divides by (a group of one)."""
    return scalings([bandwidth], metric, X)[0][1]


def group_candidates(cands, metric, X=None):
    """Group candidates that can share one pass over the distances.

    Returns a list of ``(scale, [(candidate index, Head), ...])``: the features
    are divided by ``scale`` (None: unscaled) and each head's divisor completes
    its candidate's bandwidth (see :func:`scalings`).
    """
    groups = {}
    found = scalings([c.bandwidth for c in cands], metric, X)
    for i, (cand, (key, scaling)) in enumerate(zip(cands, found, strict=True)):
        group = groups.setdefault(key, (scaling.scale, []))
        group[1].append((i, scaling.head(cand.kernel)))
    return list(groups.values())
