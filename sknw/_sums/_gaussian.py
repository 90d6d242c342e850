"""GEMM paths of a single Gaussian head: the line (one feature) and the plane
(several features), their probes, rounding bounds and float32 constants."""

import numpy as np
from scipy.spatial.distance import cdist

from .._trace import Tunable
from ._base import (
    _EPS32,
    _EPS64,
    EXP_FLOOR,
    F32_EXP_FLOOR,
    _exp,
    _max_sq_radius,
    _scaled_rows,
    _tile_shape,
    _weighted_values,
    line_offsets,
    line_origin,
    power_of_two_scale,
)
from ._traits import is_compact, is_continuous

#: Largest error in squared scaled distances allowed on the GEMM path.
GEMM_U2_TOLERANCE = 1e-11

#: float32 inputs: the largest bound on the rounding error of a log weight
#: computed in float32; beyond it, float64. Each weight is then within about
#: ``F32_TOLERANCE`` (relative) of its float64 value.
F32_TOLERANCE = 1e-4

#: float32 inputs: training rows summed in float32 before the float64
#: accumulation, so a sum of positive terms is within ``1024 * 2**-24``
#: (6.1e-5, relative) of exact.
F32_TILE_TRAIN_ROWS = 1024

#: float32 inputs, GEMM path: rows whose shift is below this take float64 (the
#: largest float32 term is at most ``exp(-F32_MIN_SHIFT)``, far from overflow).
F32_MIN_SHIFT = -40.0

#: float32 inputs: the largest ``n * max(w) / min(w)`` (over the training
#: points of positive weight) for which float32 is used. Terms below the float32
#: floor, ``exp(F32_EXP_FLOOR)`` times the largest kernel value, then carry at
#: most ``1e-5`` of a sum, whatever the weights.
F32_WEIGHT_RANGE = 1e-5 * float(np.exp(-F32_EXP_FLOOR))

#: float32 inputs, GEMM path: the range of ``|coef|`` whose float32 operands
#: stay normal and finite (with the error bound within tolerance).
F32_COEF_RANGE = (1e-30, 1e30)


def _gemm_usable(Q, X, heads, scale, centre):
    """Whether centred-GEMM squared distances are accurate enough here.

    They differ from :func:`cdist` by rounding of order
    ``eps (|q - c|^2 + |x - c|^2)``; allowed when that error, in units of the
    smallest bandwidth, stays below :data:`GEMM_U2_TOLERANCE`, for continuous
    built-in kernels of unbounded support only: rounding near the edge of a
    compact window would give a point outside it a weight (of the order of
    the rounding), which is the whole estimate of an otherwise empty window,
    or take one inside it out; windows are decided on :func:`cdist`'s
    distances, as every path decides them.
    """
    smooth = all(is_continuous(h.kernel) and not is_compact(h.kernel) for h in heads)
    if Q.shape[1] < 2 or not smooth:
        return False
    if any(np.ndim(h.divisor) for h in heads):  # per-query divisors: cdist
        return False
    radius2 = _max_sq_radius(Q, centre, scale) + _max_sq_radius(X, centre, scale)
    h_min = min(float(h.divisor) for h in heads)
    error = 8.0 * np.finfo(np.float64).eps * radius2
    return bool(error <= GEMM_U2_TOLERANCE * h_min * h_min)


#: Training rows per tile of :func:`_line_sums`.
LINE_TILE_TRAIN_ROWS = 1024

#: Largest bound on the rounding error of a log weight computed by the
#: per-tile GEMM of :func:`_line_sums` (float64); beyond it, by subtraction.
LINE_GEMM_TOLERANCE = Tunable(1e-11)


def _line_sums(Q, X, V, w, coef, *, scale, tile_elements, f32=False):
    """:func:`kernel_sums` of one log-linear head ``coef * d**2`` in 1-D.

    Coordinates are multiplied by ``s = sqrt(-coef)``, so that the log weight
    is ``-(q - x)**2``. The training points of positive weight are sorted once
    and each query's shift, its nearest point, found by binary search; queries
    are taken in sorted tiles, and each tile meets only the training points
    within ``sqrt(near**2 - EXP_FLOOR)`` of it: the others' terms are below
    ``exp(EXP_FLOOR)`` times the query's largest, where the dense path sets them
    to exactly 0 too.

    A tile's shifted log weights ``near**2 - (q - x)**2`` come from one GEMM of
    rank 3, ``[near**2 - q'**2, 2 q', 1]`` against ``[1, x', -x'**2]``, with
    ``q'`` and ``x'`` centred on the middle of the tile's queries, where
    :func:`_line_error_bound` keeps the rounding error within
    :data:`LINE_GEMM_TOLERANCE`; else by subtraction and squaring.

    With ``f32`` (float32 inputs), a query tile whose bound is within
    :data:`F32_TOLERANCE` in float32 is computed in float32, with the float32
    floor and reach (:data:`F32_EXP_FLOOR`), summing
    :data:`F32_TILE_TRAIN_ROWS` training rows at a time in float32 and the
    rest in float64, of values centred on their mid-range (:func:`_centred`).
    """
    m, k = Q.shape[0], V.shape[1]
    s = np.sqrt(-coef)
    origin = line_origin(X)
    with np.errstate(over="ignore", invalid="ignore"):  # inf weighs nothing
        x = line_offsets(X, origin, scale) * s
        q = line_offsets(Q, origin, scale) * s
    keep = np.ones(x.shape[0], dtype=bool) if w is None else w > 0
    order = np.flatnonzero(keep)[np.argsort(x[keep], kind="stable")]
    xs = x[order]
    Vx = _weighted_values(V, w, order)
    # The nearest training point of each query gives its shift.
    pos = np.searchsorted(xs, q)
    with np.errstate(invalid="ignore", over="ignore"):
        left = np.abs(q - xs[np.maximum(pos - 1, 0)])
        right = np.abs(q - xs[np.minimum(pos, xs.size - 1)])
        near2 = np.minimum(left, right) ** 2
    acc = np.zeros((m, k + 1))
    # Queries whose distances overflow have no representable weight: they
    # stay empty (zero sums), for the estimators' nearest-point limit.
    finite = np.isfinite(near2)
    qorder = np.flatnonzero(finite)[np.argsort(q[finite], kind="stable")]
    bq, bn = _tile_shape(m, xs.size, tile_elements, LINE_TILE_TRAIN_ROWS)
    buf = np.empty(bq * bn)
    if f32:
        Vc, mid = _centred(V, w, order)
        Vx32, unit = _float32_values(_weighted_values(Vc, w, order))
        buf32 = np.empty(bq * bn, np.float32)
    for q0 in range(0, qorder.size, bq):
        rows = qorder[q0 : q0 + bq]
        qt = q[rows]
        nt = near2[rows]
        use32 = f32 and _line_error_bound(qt, nt, F32_EXP_FLOOR, _EPS32) <= (
            F32_TOLERANCE
        )
        floor = F32_EXP_FLOOR if use32 else EXP_FLOOR
        gemm = use32 or (
            _line_error_bound(qt, nt, EXP_FLOOR, _EPS64) <= LINE_GEMM_TOLERANCE.value
        )
        reach = np.sqrt(np.max(nt) - floor)
        with np.errstate(over="ignore", invalid="ignore"):
            j0 = int(np.searchsorted(xs, qt[0] - reach, side="left"))
            j1 = int(np.searchsorted(xs, qt[-1] + reach, side="right"))
        total = np.zeros((rows.size, k + 1))
        dtype, Vx_, buf_ = (np.float32, Vx32, buf32) if use32 else (np.float64, Vx, buf)
        if gemm:
            centre = (qt[0] + qt[-1]) / 2
            qc = qt - centre
            lhs = np.empty((rows.size, 3), dtype)
            lhs[:, 0] = nt - qc * qc
            lhs[:, 1] = 2.0 * qc
            lhs[:, 2] = 1.0
            rhs = np.empty((3, bn), dtype)
            rhs[0] = 1.0
        with np.errstate(over="ignore", invalid="ignore"):
            # The smallest log weight of each row is at an end of the span (of
            # a tile): only where it is below the floor do tiles need one.
            floored = j1 > j0 and _below(nt, qt, xs[j0], xs[j1 - 1], floor)
            for a in range(j0, j1, bn):
                b = min(a + bn, j1)
                T = buf_[: rows.size * (b - a)].reshape(rows.size, b - a)
                if gemm:
                    xc = xs[a:b] - centre
                    rhs[1, : b - a] = xc
                    rhs[2, : b - a] = -xc * xc
                    np.matmul(lhs, rhs[:, : b - a], out=T)
                else:
                    np.subtract(qt[:, None], xs[None, a:b], out=T)
                    np.multiply(T, T, out=T)
                    np.subtract(nt[:, None], T, out=T)
                _exp(T, floored and _below(nt, qt, xs[a], xs[b - 1], floor))
                total += T @ Vx_[a:b]
        acc[rows] = _uncentred(total * unit, mid) if use32 else total
    M = np.where(finite, -near2, -np.inf)
    return acc[:, :k], acc[:, k].copy(), M


def _below(near2, qt, first, last, floor):
    """Whether some log weight of the sorted queries ``qt`` against training
    points from ``first`` to ``last`` is below ``floor``."""
    lowest = near2 - np.maximum((qt - first) ** 2, (qt - last) ** 2)
    return bool(np.any(~(lowest >= floor)))


def _line_error_bound(qt, near2, floor, eps):
    """Bound on the rounding error of the log weights ``near**2 - (q - x)**2``
    of a sorted query tile ``qt`` computed by :func:`_line_sums`'s GEMM, with
    unit roundoff ``eps`` (half the machine epsilon; coordinates scaled as
    there).

    Only terms within ``r = sqrt(near**2 - floor)`` of a query are computed;
    centred on the middle of the tile (half-width ``W``), coordinates are at
    most ``2 W + r`` apart. The GEMM's three products and its inputs, each
    rounded, sum to at most ``near**2 + (2 W + r)**2`` in absolute value: the
    error is at most ``5 eps`` times that.
    """
    if not qt.size:
        return 0.0
    top = float(np.max(near2))
    with np.errstate(over="ignore", invalid="ignore"):
        span = float(qt[-1] - qt[0]) + np.sqrt(top - floor)
        bound = 5.0 * eps * (top + span * span)
    return bound if np.isfinite(bound) else np.inf


#: Training rows probed for an upper bound of each query's nearest distance.
N_PROBES = 64

#: The probe-shifted GEMM path serves queries whose probe shift is above this:
#: their largest term, at most ``exp(-PROBE_MIN_LOG)``, cannot overflow a sum.
PROBE_MIN_LOG = -660.0


def _probe_shifts(Q, X, w, coef, scale, centre):
    """A shift for each query from probed training points of positive weight:
    ``coef`` times the smallest squared distance to a probe, a lower bound of
    the query's largest log weight ``coef |q - x|^2``."""
    keep = np.arange(X.shape[0]) if w is None else np.flatnonzero(w > 0)
    probes = keep[np.linspace(0, keep.size - 1, min(N_PROBES, keep.size)).astype(int)]
    P = _scaled_rows(X[probes], 0, probes.size, scale) - centre
    bound = np.empty(Q.shape[0])
    chunk = 1 << 12
    for q0 in range(0, Q.shape[0], chunk):
        Qc = _scaled_rows(Q, q0, q0 + chunk, scale) - centre
        d2 = cdist(Qc, P, "sqeuclidean")
        bound[q0 : q0 + chunk] = d2.min(axis=1)
    with np.errstate(over="ignore", invalid="ignore"):
        return coef * bound


def _plane_error_bound(Q, X, coef, scale, centre):
    """Bound, per query, on the rounding error of the log weights of
    :func:`_plane_sums` computed in float32, for a shift of at least
    :data:`F32_MIN_SHIFT`.

    The log weight is a dot product of ``d + 2`` terms, whose absolute values
    sum to at most ``|coef| (|q - c| + R)**2 + |shift|`` (``R`` the largest
    distance of the training rows from ``c``); rounding its factors to
    float32 and summing them errs by at most ``(d + 4) u`` times that, and
    ``exp`` by ``u`` (``u = 2**-24``, the unit roundoff).
    """
    radius = np.sqrt(_max_sq_radius(X, centre, scale))
    bound = np.empty(Q.shape[0])
    chunk = 1 << 16
    for lo in range(0, Q.shape[0], chunk):
        Qc = _scaled_rows(Q, lo, lo + chunk, scale) - centre
        with np.errstate(over="ignore", invalid="ignore"):
            r = np.sqrt(np.einsum("ij,ij->i", Qc, Qc)) + radius
            total = -coef * r * r - F32_MIN_SHIFT
            bound[lo : lo + chunk] = (Q.shape[1] + 5) * _EPS32 * total
    return np.where(np.isfinite(bound), bound, np.inf)


def _plane_sums(Q, X, V, w, coef, *, scale, centre, shift, tile_elements, f32=False):
    """:func:`kernel_sums` of one log-linear head ``coef * d**2`` by GEMM,
    shifted by ``shift`` (from :func:`_probe_shifts`, at least
    :data:`PROBE_MIN_LOG` and at most each query's largest log weight).

    The shifted log weights ``coef |q - x|^2 - shift`` come out of one GEMM of
    the centred coordinates (``[q - c, 1, |q - c|^2 - shift / coef]`` against
    ``coef [-2 (x - c), |x - c|^2, 1]``): no pass for the rows' maxima. The
    largest term is between 1 and ``exp(-PROBE_MIN_LOG)``; terms below
    ``exp(EXP_FLOOR)`` are 0, as on the other paths. Whether a tile needs the
    floor follows from a bound on its distances (its centre and radius).

    With ``f32`` (float32 inputs whose error bound, :func:`_plane_error_bound`,
    is within :data:`F32_TOLERANCE`, and shifts at least
    :data:`F32_MIN_SHIFT`), the GEMM, ``exp`` (floor :data:`F32_EXP_FLOOR`)
    and the sums of :data:`F32_TILE_TRAIN_ROWS` training rows are float32,
    accumulated in float64, of values centred on their mid-range
    (:func:`_centred`).
    """
    m, k = Q.shape[0], V.shape[1]
    keep = np.arange(X.shape[0]) if w is None else np.flatnonzero(w > 0)
    acc = np.zeros((m, k + 1))
    dtype, floor, rows = np.float64, EXP_FLOOR, None
    if f32:
        dtype, floor = np.float32, F32_EXP_FLOOR
        rows = F32_TILE_TRAIN_ROWS
    bq, bn = _tile_shape(m, keep.size, tile_elements, rows)
    buf = np.empty(bq * bn, dtype)
    # The queries' side of the GEMM, once: [q - c, 1, |q - c|^2 - shift / coef].
    left = np.empty((m, Q.shape[1] + 2))
    left[:, :-2] = _scaled_rows(Q, 0, m, scale) - centre
    left[:, -2] = 1.0
    qn = np.einsum("ij,ij->i", left[:, :-2], left[:, :-2])
    left[:, -1] = qn - shift / coef
    left_ = left.astype(dtype, copy=False)
    unit = None
    if f32:
        V, mid = _centred(V, w, keep)
        _, unit = _float32_values(_weighted_values(V, w, keep))
    for a in range(0, keep.size, bn):
        idx = keep[a : a + bn]
        Xc = _scaled_rows(X[idx], 0, idx.size, scale) - centre
        xn = np.einsum("ij,ij->i", Xc, Xc)
        B = np.vstack([-2.0 * coef * Xc.T, coef * xn, np.full(idx.size, coef)])
        Vx = _weighted_values(V, w, idx)
        # The tile's largest distance to each query (from its centre and
        # radius) bounds the query's lowest log weight: the floor is needed
        # only where that bound falls below it.
        t_centre = Xc.mean(axis=0)
        t_radius = np.sqrt(np.max(np.einsum("ij,ij->i", Xc - t_centre, Xc - t_centre)))
        to_centre = qn - 2.0 * (left[:, :-2] @ t_centre) + t_centre @ t_centre
        far = np.sqrt(np.maximum(to_centre, 0.0)) + t_radius
        with np.errstate(over="ignore"):
            floored = coef * far * far - shift < floor
        B = B.astype(dtype, copy=False)
        if f32:
            Vx = (Vx / unit).astype(np.float32)
        for q0 in range(0, m, bq):
            rows = slice(q0, min(q0 + bq, m))
            L = np.matmul(
                left_[rows],
                B,
                out=buf[: (rows.stop - q0) * idx.size].reshape(-1, idx.size),
            )
            acc[rows] += _exp(L, bool(floored[rows].any())) @ Vx
    if f32:
        acc = _uncentred(acc * unit, mid)
    return acc[:, :k], acc[:, k].copy(), np.asarray(shift, dtype=np.float64).copy()


def _float32_values(Vx):
    """``Vx`` in float32, each column divided by its :func:`power_of_two_scale`
    ``unit`` (largest magnitude then in ``[1, 2)``): float32 sums of up to
    :data:`F32_TILE_TRAIN_ROWS` terms of at most ``exp(-F32_MIN_SHIFT)`` cannot
    overflow, whatever the scale of the values. Returns ``(Vx32, unit)``."""
    unit = power_of_two_scale(Vx, axis=0) if Vx.shape[0] else np.ones(Vx.shape[1])
    return (Vx / unit).astype(np.float32), unit


def _centred(V, w, rows):
    """``(V - mid, mid)``: the values centred on their mid-range over the
    training ``rows`` of positive weight, per column, so that float32 sums
    err relative to the spread of the values, not to their magnitude."""
    positive = rows if w is None else rows[w[rows] > 0]
    if not positive.size:
        return V, np.zeros(V.shape[1])
    Vp = V[positive]
    mid = Vp.max(axis=0) / 2 + Vp.min(axis=0) / 2
    return V - mid, mid


def _uncentred(acc, mid):
    """Sums ``[S, den]`` of centred values back to those of the values."""
    k = mid.size
    acc[:, :k] += acc[:, k:] * mid
    return acc


def _f32_weights_ok(w, n):
    """Whether the weights' range allows float32 (see :data:`F32_WEIGHT_RANGE`)."""
    if w is None:
        return n <= F32_WEIGHT_RANGE
    positive = w[w > 0]
    if not positive.size:
        return False
    with np.errstate(over="ignore", divide="ignore"):
        ratio = positive.size * (np.max(positive) / np.min(positive))
    return bool(ratio <= F32_WEIGHT_RANGE)


def single_head_sums(Q, X, V, w, coef, *, scale, centre, gemm, f32, tile_elements, far):
    """The sums ``(S, den, M)`` of one log-linear head ``coef * d**2``.

    One feature (``gemm`` False): :func:`_line_sums`. Several: the probe-shifted
    GEMM of :func:`_plane_sums`, in float32 for the rows within its bound
    (``f32``: float32 inputs), float64 for the others a probe bounds, and
    ``far(rows)`` (the dense tiled loop) for the rows no probe bounds.
    """
    if not gemm:
        return _line_sums(
            Q, X, V, w, coef, scale=scale, tile_elements=tile_elements, f32=f32
        )
    m, k = Q.shape[0], V.shape[1]
    shift = _probe_shifts(Q, X, w, coef, scale, centre)
    near = shift >= PROBE_MIN_LOG
    in32 = np.zeros(m, dtype=bool)
    low, high = F32_COEF_RANGE
    if f32 and low <= -coef <= high:
        in32 = (shift >= F32_MIN_SHIFT) & (
            _plane_error_bound(Q, X, coef, scale, centre) <= F32_TOLERANCE
        )
    groups = [
        (mask, kind)
        for mask, kind in ((in32, "f32"), (near & ~in32, "f64"), (~near, "far"))
        if mask.any()
    ]
    kinds = [kind for _, kind in groups]
    if kinds in ([], ["f32"], ["f64"]):
        return _plane_sums(
            Q,
            X,
            V,
            w,
            coef,
            scale=scale,
            centre=centre,
            shift=shift,
            tile_elements=tile_elements,
            f32=kinds == ["f32"],
        )
    if kinds == ["far"]:
        return far(slice(None))
    S = np.empty((m, k))
    den, M = np.empty(m), np.empty(m)
    for mask, kind in groups:
        if kind == "far":
            part = far(mask)
        else:
            part = _plane_sums(
                Q[mask],
                X,
                V,
                w,
                coef,
                scale=scale,
                centre=centre,
                shift=shift[mask],
                tile_elements=tile_elements,
                f32=kind == "f32",
            )
        S[mask], den[mask], M[mask] = part
    return S, den, M
