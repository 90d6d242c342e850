"""Tiles, heads, accumulators and the shifted ``exp``: the pieces every
backend of the core is made of."""

import hashlib
from dataclasses import dataclass

import numpy as np
from scipy.spatial.distance import cdist
from sklearn import get_config

from .._trace import Tunable, record
from ..exceptions import UndefinedDistanceError as NaNDistanceError
from ._traits import jumps_at_edge, nan_free

#: Default number of float64 elements in one (query x train) tile: 1 MiB.
TILE_ELEMENTS = 1 << 17

#: For kernels of unbounded support, shifted log weights below this are raised
#: to it before ``exp`` (which is many times slower where its result underflows)
#: and ``exp`` of it is subtracted after, so their terms are exactly 0: below
#: ``e**-700`` times the row's largest term (exactly 1), a term cannot change a
#: float64 sum.
EXP_FLOOR = -700.0

_FLOOR_VALUE = float(np.exp(EXP_FLOOR))

#: float32 inputs: the floor of float32 terms (``exp(-87)`` is a normal float32).
F32_EXP_FLOOR = -87.0

_F32_FLOOR_VALUE = np.float32(np.exp(F32_EXP_FLOOR))

#: Unit roundoffs (half the machine epsilon) of float32 and float64.
_EPS32 = float(np.finfo(np.float32).eps) / 2

_EPS64 = float(np.finfo(np.float64).eps) / 2


def default_tile_elements():
    """Tile size: :data:`TILE_ELEMENTS`, within scikit-learn's ``working_memory``.

    ``working_memory`` (MiB) bounds the few tile-sized buffers alive at once.
    """
    return max(1, min(TILE_ELEMENTS, working_elements()))


def working_elements():
    """The largest tile within scikit-learn's ``working_memory``: float64
    elements of a quarter of it (the few tile-sized buffers alive at once)."""
    return int(get_config()["working_memory"] * 2**20 / 8 / 4)


@dataclass(frozen=True)
class Head:
    """A kernel with a bandwidth divisor: ``u = distance / divisor``.

    The divisor is a float, or an array with one positive entry per query
    (nearest-neighbour bandwidths): a per-query head, which the dense
    backend serves (see :func:`per_query`).
    """

    kernel: object
    divisor: float = 1.0


def per_query(head):
    """Whether ``head`` divides each query's distances by its own divisor."""
    return np.ndim(head.divisor) > 0


def head_rows(head, rows):
    """The head of the queries ``rows`` (a slice or an index array): a
    per-query divisor restricted to them, as a column (it divides the rows
    of a tile of distances); other heads as they are."""
    if not per_query(head):
        return head
    divisor = np.asarray(head.divisor, dtype=np.float64).reshape(-1)[rows]
    return Head(head.kernel, divisor.reshape(-1, 1))


def heads_rows(heads, rows):
    """:func:`head_rows` of each head."""
    return [head_rows(h, rows) for h in heads]


#: Training rows per tile: long rows keep numpy's inner loops long.
TILE_TRAIN_ROWS = Tunable(8192)


def _tile_shape(m, n, tile_elements, train_rows=None, full_rows=False):
    """(query rows, training rows) of a tile of about ``tile_elements``."""
    cap = TILE_TRAIN_ROWS.value if train_rows is None else train_rows
    if full_rows:  # every training row in each tile: query rows only
        bn = max(n, 1)
    else:
        bn = int(min(n, cap, max(64, tile_elements))) if n > 0 else 1
    bq = int(max(1, min(m, tile_elements // max(bn, 1))))
    return bq, bn


def _as_float64(A):
    """Distances and weights are computed in float64 (a copy for float32)."""
    return np.asarray(A, dtype=np.float64)


def pairwise_distances(
    Q, X, metric, metric_params, *, squared=False, out=None, first_row=0
):
    """Distances between the rows of ``Q`` and ``X`` with :func:`cdist`.

    With ``squared=True`` (euclidean metric only) returns squared euclidean
    distances, computed without a square root. ``out`` is an optional
    float64 buffer of shape (len(Q), len(X)). Raises
    :class:`NaNDistanceError` where the metric gives NaN distances, naming
    the rows of ``Q`` counted from ``first_row``.
    """
    params = metric_params or {}
    if squared:
        if Q.shape[1] == 1:
            D = np.subtract(Q, X.reshape(1, -1), out=out)
            return np.multiply(D, D, out=D)
        return cdist(Q, X, "sqeuclidean", out=out)
    if callable(metric):
        D = cdist(Q, X, metric, **params)
    else:
        D = cdist(Q, X, metric, out=out, **params)
    if not nan_free(metric) and np.isnan(D).any():
        rows = np.flatnonzero(np.isnan(D).any(axis=1)) + first_row
        raise NaNDistanceError(metric, rows)
    return D


def nan_rows(Q, X, metric, metric_params, scale=None, tile_elements=TILE_ELEMENTS):
    """:class:`NaNDistanceError` naming every query row of ``Q`` with a NaN
    distance to a training row of ``X`` (the complete list, once a pass has
    met the first)."""
    bq, bn = _tile_shape(Q.shape[0], X.shape[0], tile_elements)
    bad = np.zeros(Q.shape[0], dtype=bool)
    for x0 in range(0, X.shape[0], bn):
        Xt = _scaled_rows(X, x0, x0 + bn, scale)
        for q0 in range(0, Q.shape[0], bq):
            Qt = _scaled_rows(Q, q0, q0 + bq, scale)
            try:
                pairwise_distances(Qt, Xt, metric, metric_params, first_row=q0)
            except NaNDistanceError as exc:
                bad[exc.rows] = True
    return NaNDistanceError(metric, np.flatnonzero(bad))


def check_self_distances(X, metric, metric_params, chunk=64):
    """Raise :class:`NaNDistanceError` for the rows of the training data ``X``
    whose distance to themselves is NaN (undefined under the metric)."""
    if nan_free(metric):
        return
    params = metric_params or {}
    bad = []
    for lo in range(0, X.shape[0], chunk):
        block = np.asarray(X[lo : lo + chunk], dtype=np.float64)
        if callable(metric):
            diag = np.array([metric(x, x, **params) for x in block], dtype=float)
        else:
            diag = np.diagonal(cdist(block, block, metric, **params))
        bad.append(np.flatnonzero(np.isnan(diag)) + lo)
    rows = np.concatenate(bad) if bad else np.zeros(0, dtype=np.intp)
    if rows.size:
        raise NaNDistanceError(metric, rows, training=True)


def _weighted_values(V, w, rows):
    """``[w V, w]`` for the training ``rows`` (a slice or indices), the values
    and weights one product sums; ``w`` None means weights of one."""
    Vr = V[rows]
    out = np.empty((Vr.shape[0], Vr.shape[1] + 1))
    if w is None:
        out[:, :-1] = Vr
        out[:, -1] = 1.0
    else:
        wr = w[rows]
        out[:, :-1] = Vr * wr[:, None]
        out[:, -1] = wr
    return out


class Frame:
    """Coordinates measured from ``origin`` before dividing by ``scale``:
    ``(A - origin) / scale``, per feature.

    A scale that divides the features (a per-feature bandwidth) rounds each
    coordinate relative to its magnitude: data at 1e8 spread over 0.05 would
    lose their digits to the rounding of 1e8 / h. Subtracting an origin inside
    the data first (exactly, for data near it) keeps them. Only for metrics
    that do not change under a common translation (the coordinate metrics).
    """

    def __init__(self, origin, scale):
        self.origin = np.asarray(origin, dtype=np.float64)
        self.scale = np.asarray(scale, dtype=np.float64)

    def __eq__(self, other):
        return (
            isinstance(other, Frame)
            and np.array_equal(self.origin, other.origin)
            and np.array_equal(self.scale, other.scale)
        )

    __hash__ = None

    def __repr__(self):
        return f"Frame(origin={self.origin!r}, scale={self.scale!r})"


def median_offsets(X):
    """``(X - origin, origin)``: the data measured from their per-feature
    median, so that data far from zero keep their digits in what is computed
    from them (0 in the features whose offsets would overflow: data spanning
    more than the float range)."""
    X = np.asarray(X, dtype=np.float64)
    origin = np.median(X, axis=0)
    with np.errstate(over="ignore", invalid="ignore"):
        offsets = X - origin
    origin = np.where(np.all(np.isfinite(offsets), axis=0), origin, 0.0)
    return X - origin, origin


def scale_of(scale):
    """The per-feature divisor of a scale (an array, a :class:`Frame` or
    None)."""
    return scale.scale if isinstance(scale, Frame) else scale


def line_scale(scale):
    """The divisor of the one feature of a scale (1.0 for None)."""
    return 1.0 if scale is None else float(np.ravel(scale_of(scale))[0])


def _scaled_rows(A, lo, hi, scale):
    """Rows ``lo:hi`` of ``A`` in float64, divided by ``scale`` (None: as is;
    a :class:`Frame`: measured from its origin first)."""
    block = np.asarray(A[lo:hi], dtype=np.float64)
    if scale is None:
        return block
    if isinstance(scale, Frame):
        return (block - scale.origin) / scale.scale
    return block / scale


def _max_sq_radius(A, centre, scale, chunk=1 << 16):
    """Largest squared distance of the (scaled) rows of ``A`` from ``centre``."""
    best = 0.0
    for lo in range(0, A.shape[0], chunk):
        block = _scaled_rows(A, lo, lo + chunk, scale) - centre
        best = max(best, float(np.max(np.einsum("ij,ij->i", block, block))))
    return best


def within(q, x, reach, strict):
    """Whether ``|q - x| < reach`` (``strict``) or ``<= reach``, decided in
    exact arithmetic for float64 ``q`` and ``x``: the rounded difference and
    its error (Knuth's TwoSum) settle the one case the rounding hides, a
    difference that rounds to ``reach`` itself. Not finite: outside."""
    with np.errstate(over="ignore", invalid="ignore"):
        s = q - x
        back = s - q
        error = (q - (s - back)) + (-x - back)
        size = np.abs(s)
        # |q - x| = |s| + sign(s) error, exactly.
        towards = np.sign(s) * error
        on_edge = (size == reach) & ((towards < 0) if strict else (towards <= 0))
        return ((size < reach) | on_edge) & np.isfinite(s)


def line_origin(X):
    """The median of the one feature of ``X``, to measure it from (see
    :func:`line_offsets`)."""
    return float(np.median(np.asarray(X[:, 0], dtype=np.float64)))


def line_offsets(A, origin, scale):
    """The one feature of ``A`` minus ``origin``, divided by ``scale`` (None:
    by 1), in float64.

    Subtracting before scaling keeps the differences of nearby coordinates
    exact: data at 1e6 spread over a few bandwidths lose nothing to the
    rounding of 1e6 / h. (Data spread over many bandwidths still lose
    ``|x - origin| / h`` units of roundoff, as any float64 offsets do.)
    """
    a = np.asarray(A[:, 0], dtype=np.float64) - origin
    return a if scale is None else a / line_scale(scale)


def _scaled_mean(A, scale, chunk=1 << 16):
    total = np.zeros(A.shape[1])
    for lo in range(0, A.shape[0], chunk):
        total += _scaled_rows(A, lo, lo + chunk, scale).sum(axis=0)
    return total / max(A.shape[0], 1)


def power_of_two_scale(A, axis=None):
    """Powers of two near the largest magnitudes of ``A`` (1 where it is 0).

    Dividing by them is exact and brings values near the ends of the float
    range back to order one, so sums of products neither overflow nor fall
    into the subnormal range.
    """
    big = np.max(np.abs(A), axis=axis)
    _, exponent = np.frexp(np.where(np.isfinite(big) & (big > 0), big, 1.0))
    return np.ldexp(1.0, exponent - 1)  # <= big, so never overflows


def _scaled_arg(D, head, squared):
    """The kernel's argument: ``u**2`` on the squared path, else ``u``."""
    if per_query(head):  # a column of divisors, one per row of the tile
        h = np.asarray(head.divisor, dtype=np.float64).reshape(-1, 1)
        with np.errstate(over="ignore"):
            return (D / h) / h if squared else D / h
    h = float(head.divisor)
    inv = 1.0 / h if h >= _TINY else np.inf
    with np.errstate(over="ignore"):
        if not np.isfinite(inv):
            # A subnormal bandwidth: 1/h overflows, so divide (0 stays 0).
            return (D / h) / h if squared else D / h
        if squared:
            inv2 = inv * inv
            # (1/h)**2 overflows for h < 1e-154: scale twice so 0 stays 0.
            return D * inv2 if np.isfinite(inv2) else (D * inv) * inv
        return D * inv


_TINY = np.finfo(np.float64).tiny


def window_edge(head, squared):
    """For a kernel that jumps at the edge of its support (the boxcar), the
    distance (squared on the squared path) below which a point is in the
    window: the open window ``u < support`` decided on the distances
    themselves, ``d < support * h``, exact for representable data (the ratio
    ``d / h`` may round to 1 from either side). None for other kernels."""
    if not jumps_at_edge(head.kernel):
        return None
    divisor = head.divisor
    if per_query(head):
        divisor = np.asarray(divisor, dtype=np.float64).reshape(-1, 1)
    else:
        divisor = float(divisor)
    with np.errstate(over="ignore"):
        edge = float(head.kernel.support) * divisor
        return edge * edge if squared else edge


def in_window(D, head, squared, arg):
    """The kernel's argument ``arg`` (``u``, or ``u**2`` on the squared path)
    with the window of :func:`window_edge` applied: inside, at most just
    below the edge; outside, ``inf``."""
    edge = window_edge(head, squared)
    if edge is None:
        return arg
    support = float(head.kernel.support)
    below = np.nextafter(support * support if squared else support, 0.0)
    return np.where(D < edge, np.minimum(arg, below), np.inf)


def _log_weights(D, head, squared):
    """Log kernel values of one tile of distances for one head."""
    kernel = head.kernel
    arg = in_window(D, head, squared, _scaled_arg(D, head, squared))
    with np.errstate(over="ignore"):
        L = kernel.log_value_sq(arg) if squared else kernel.log_value(arg)
    L = np.asarray(L, dtype=np.float64)
    if L.shape != D.shape:
        raise ValueError(
            f"Kernel {kernel!r} returned an array of shape {L.shape} for input "
            f"of shape {D.shape}; a kernel must be evaluated elementwise."
        )
    return L


def _signs(D, head, squared):
    arg = _scaled_arg(D, head, squared)
    return head.kernel.sign(np.sqrt(arg) if squared else arg)


def _check_user_kernel(L, head):
    """Validate the log values of a kernel that is not a built-in one.

    The default :meth:`Kernel.log_value` maps negative values of a kernel that
    declares itself non-negative to NaN, so one check covers NaN, negative and
    infinite kernel values.
    """
    if np.isnan(L).any() or np.isposinf(L).any():
        raise ValueError(
            f"Kernel {head.kernel!r} returned NaN, infinite or negative values. "
            "A kernel must return finite values, non-negative unless its class "
            "sets nonnegative = False."
        )


class _Accumulator:
    """Running shifted sums of one head: ``acc`` (m, k+1) and shift ``M`` (m,)."""

    def __init__(self, m, k):
        self.acc = np.zeros((m, k + 1))
        self.M = np.full(m, -np.inf)


class SelfExclusion:
    """Leave-one-out sums: query ``i`` is training point ``index[i]`` (or, with
    no ``index``, ``i + offset``).

    Each point's own term is left out of its sums or, with frequency weights,
    scaled by ``keep_ratio`` (the share of its weight it keeps: leaving out one
    unit of a weight-3 point keeps 2/3; 0 leaves it out entirely).
    """

    def __init__(self, keep_ratio=None, offset=0, index=None):
        self.keep_ratio = keep_ratio
        self.offset = offset
        self.index = None if index is None else np.asarray(index, dtype=np.intp)

    @classmethod
    def make(cls, exclude_self, self_weight, w, n, offset=0, index=None):
        """The exclusion of :func:`~sknw._sums.kernel_sums`'s arguments, or
        None without ``exclude_self``."""
        if not exclude_self:
            return None
        return cls(keep_ratios(self_weight, w, n), offset, index)

    def _pairs(self, q0, q1, x0, x1):
        """(query rows, training indices) of the own terms in the tile."""
        if self.index is None:
            diag = np.arange(max(q0 + self.offset, x0), min(q1 + self.offset, x1))
            return diag - self.offset, diag
        own = self.index[q0:q1]
        rows = np.flatnonzero((own >= x0) & (own < x1))
        return rows + q0, own[rows]

    def masked(self, q0, q1, x0, x1):
        """(rows, columns) in the tile of the terms left out entirely."""
        rows, diag = self._pairs(q0, q1, x0, x1)
        if self.keep_ratio is not None:
            out = self.keep_ratio[diag] == 0
            rows, diag = rows[out], diag[out]
        return rows - q0, diag - x0

    def adjust(self, E, q0, q1, x0, x1):
        """Scale each point's own term by the fraction of weight it keeps."""
        if self.keep_ratio is not None:
            rows, diag = self._pairs(q0, q1, x0, x1)
            E[rows - q0, diag - x0] *= self.keep_ratio[diag]


def keep_ratios(self_weight, w, n):
    """The share of its weight each point keeps in its own sums (None: it
    keeps none)."""
    if self_weight is None:
        return None
    with np.errstate(invalid="ignore", divide="ignore"):
        base = np.ones(n) if w is None else w
        return np.where(base > 0, self_weight / base, 0.0)


def own_rows(m, params):
    """The training index of each of ``m`` queries that are training points
    (leave-one-out sums), from the leave-one-out keywords of ``params`` (those
    of :func:`~sknw._sums.kernel_sums`: ``exclude_self``, and ``self_index`` or
    ``self_offset``), or None without ``exclude_self``."""
    if not params.get("exclude_self", False):
        return None
    self_index = params.get("self_index")
    if self_index is not None:
        return np.asarray(self_index, dtype=np.intp)
    return params.get("self_offset", 0) + np.arange(m)


def all_point_sums(m, V, w, own=None, self_weight=None):
    """``(S, den)`` of ``m`` queries over every training point: the sums of
    ``w V`` and ``w`` (their weighted mean), each query's own point
    (``own``, leave-one-out) left out or keeping ``self_weight``."""
    w = np.ones(V.shape[0]) if w is None else w
    total_S, total = w @ V, w.sum()
    if own is None:
        return np.broadcast_to(total_S, (m, V.shape[1])), np.full(m, total)
    removed = w if self_weight is None else w - self_weight
    return total_S - removed[own, None] * V[own], total - removed[own]


def removed_entirely(own, sample_weight=None, self_weight=None):
    """Whether each query's own point weighs and leaves its window: leaving
    out takes all of its weight (it keeps no ``self_weight``)."""
    weighs = (
        np.ones(own.size, dtype=bool)
        if sample_weight is None
        else (sample_weight[own] > 0)
    )
    return weighs if self_weight is None else weighs & ~(self_weight[own] > 0)


def removed_weight(own, sample_weight=None, self_weight=None):
    """The weight leaving out takes from each query's own term: all of its
    weight, or its weight less ``self_weight`` (frequency weights)."""
    w = np.ones(own.size) if sample_weight is None else sample_weight[own]
    if self_weight is None:
        return np.asarray(w, dtype=np.float64)
    return w - self_weight[own]


def tile_masks(zero, x0, x1, q0, q1, exclusion=None):
    """Index pairs of a tile whose terms are left out (weight 0, or self)."""
    masked = []
    if zero is not None and zero.size:
        cols = zero[(zero >= x0) & (zero < x1)] - x0
        if cols.size:
            masked.append((slice(None), cols))
    if exclusion is not None:
        masked.append(exclusion.masked(q0, q1, x0, x1))
    return masked


def _rescale(acc, rows, tile_max):
    """Move the shift of ``rows`` to include ``tile_max``; return the new shift.

    Rows whose shift is still ``-inf`` (no non-zero term yet) get a shift of 0.
    """
    M = acc.M[rows]
    new_M = np.maximum(M, tile_max)
    finite = np.isfinite(new_M)
    safe = np.where(finite, new_M, 0.0)
    with np.errstate(invalid="ignore"):
        rescale = np.where(finite, np.exp(M - safe), 0.0)
    acc.acc[rows] *= rescale[:, None]
    acc.M[rows] = new_M
    return safe


def _shifted_exp(L, acc, rows, tile_max, floor=False):
    """``exp(L - shift)`` in place, after moving the shift (see :func:`_exp`).

    ``floor`` False: plain ``exp`` (compact kernels keep exact zeros from
    ``-inf``); True: floored where some argument is below the floor.
    """
    safe = _rescale(acc, rows, tile_max)
    L -= safe[:, None]
    return _exp(L, None if floor else False)


def _exp(T, floor):
    """``exp`` in place; with ``floor``, fast where results underflow.

    ``floor`` is True (floor), False (plain ``exp``) or None (floor when some
    argument is below :data:`EXP_FLOOR`).

    ``exp`` is many times slower where its result underflows (or is
    subnormal). For kernels of unbounded support, arguments are raised to
    :data:`EXP_FLOOR` before ``exp`` and ``exp(EXP_FLOOR)`` is subtracted
    after: terms below the floor (and masked ones, at ``-inf``) are exactly 0,
    the others change by less than ``1e-304``, below their resolution in a sum
    whose largest term is 1. float32 tiles use :data:`F32_EXP_FLOOR`.
    """
    # The tile's dtype decides its floor (float32 tiles: the float32 path).
    record("exp", dtype=T.dtype)
    low, value = EXP_FLOOR, _FLOOR_VALUE
    if T.dtype == np.float32:
        low, value = F32_EXP_FLOOR, _F32_FLOOR_VALUE
    if floor is None:
        floor = bool(T.size) and T.min() < low
    if not floor:
        return np.exp(T, out=T)
    np.maximum(T, low, out=T)
    np.exp(T, out=T)
    T -= value
    return T


def placed_rows(source, rows, m, fill=0.0):
    """An ``(m, ...)`` array whose rows ``rows`` are ``source``'s (``rows``
    distinct) and the others ``fill``. Where ``rows`` is a permutation of all
    ``m`` rows, a gather by its inverse, several times faster than scattering
    rows of several columns; where it is the identity, ``source`` itself."""
    if rows.size == m:
        if np.array_equal(rows, np.arange(m)):
            return source
        inverse = np.empty(m, dtype=np.intp)
        inverse[rows] = np.arange(m)
        return np.take(source, inverse, axis=0)
    out = np.full((m,) + source.shape[1:], fill, dtype=source.dtype)
    out[rows] = source
    return out


def unit_blocks(t, order=None):
    """The values ``t``, sorted (by ``order`` when given: it must sort them)
    and cut into blocks one unit wide from the smallest.

    Returns ``(order, ts, starts, centre, offsets)``: the sorting order, the
    sorted values, the index of each block's first value, each block's centre
    (its lower edge plus 1/2) and each sorted value's offset from its block's
    centre (not finite where the span of ``t`` is not).
    """
    order = np.argsort(t) if order is None else order
    ts = t[order]
    if not ts.size:
        return order, ts, np.zeros(0, dtype=np.intp), ts, ts
    with np.errstate(over="ignore", invalid="ignore"):
        block = np.floor(ts - ts[0])
        starts = np.flatnonzero(np.r_[True, block[1:] != block[:-1]])
        centre = ts[0] + block[starts] + 0.5
        offsets = ts - np.repeat(centre, np.diff(np.r_[starts, ts.size]))
    return order, ts, starts, centre, offsets


def values_key(V, w):
    """A digest of the values and weights an index was built from, so that a
    backend whose index holds them serves only the same values."""
    record("values_digest")  # the arrays hashed (not known by identity)
    digest = hashlib.blake2b(digest_size=16)
    for A in (V, w):
        if A is None:
            digest.update(b"none")
            continue
        A = np.ascontiguousarray(A, dtype=np.float64)
        digest.update(repr(A.shape).encode())
        digest.update(memoryview(A).cast("B"))
    return digest.digest()


def shared_value(request, name, compute):
    """``compute()``, once per grid or search where the request's heads
    share what depends on the training points and values alone
    (``request.shared``)."""
    if request.shared is None:
        return compute()
    if name not in request.shared:
        request.shared[name] = compute()
    return request.shared[name]


def fitted_values(index, request, V, w):
    """The digest of the values ``V`` and weights ``w`` that ``index`` is
    built from (:func:`values_key`), computed once per grid or search
    (``request.shared``). Within a grid or search, whose arrays do not
    change while its indexes live, the index also keeps the arrays
    themselves, so that :func:`holds_values` knows them without a digest;
    an estimator's fitted index (``request.shared`` None) keeps no reference
    to them."""
    if request.shared is not None:
        index.source = (V, w)
    return shared_value(request, "values_key", lambda: values_key(V, w))


def holds_values(index, key, V, w):
    """Whether ``V`` and ``w`` are the values and weights of digest ``key``
    that ``index`` holds: the very arrays it was built from within a search
    (:func:`fitted_values`), or arrays of the same digest."""
    source = getattr(index, "source", None)
    if source is not None and source[0] is V and source[1] is w:
        return True
    return key == values_key(V, w)


@dataclass
class MomentSums:
    """Kernel-weighted moments about each query (the local polynomial fits'
    sums), from a backend that sums them (:attr:`Backend.local_moments`).

    ``sums[i, j]`` is ``sum_l w_l K(|x_l - q_i| / h) u_il**j [v_l, 1]`` with
    ``u_il = (x_l - q_i) / unit`` signed, for ``j`` up to the powers asked;
    unshifted. ``bound[i, j]`` bounds the error of its weight column (and,
    times the largest ``|v|``, of the others). ``counts`` is the number of
    training points of positive weight in each window (None for kernels of
    unbounded support: all of them). ``unit`` is in the scaled coordinates
    (the per-feature bandwidth divided out).
    """

    sums: np.ndarray
    bound: np.ndarray
    counts: object
    unit: float


def own_terms(own, V, k0, **params):
    """Each query's own term (queries ``own``, the training points they
    are): ``k0`` (the kernel at 0) times the weight leaving out removes, and
    that times its values, ``(removed (m,), values (m, k))``."""
    removed = k0 * removed_weight(
        own, params.get("sample_weight"), params.get("self_weight")
    )
    return removed, removed[:, None] * V[own]


def leave_own_term_out(sums, bound, own, V, k0, terms=None, **params):
    """Subtract from the moments of order 0 (``sums`` (m, powers + 1, k + 1)
    and their ``bound`` (m, powers + 1)) each query's own term, ``k0`` (the
    kernel at 0) times the weight leaving out removes: only the order-0
    moments hold it (its offset is 0). The bound takes the rounding of the
    subtraction. ``terms``: the own terms of :func:`own_terms`, where
    several heads share them (None: found)."""
    removed, values = own_terms(own, V, k0, **params) if terms is None else terms
    bound[:, 0] += 2 * _EPS64 * np.abs(sums[:, 0, -1])
    sums[:, 0, :-1] -= values
    sums[:, 0, -1] -= removed


class Backend:
    """A way of computing the core's sums (see :mod:`sknw._sums._dispatcher`).

    Attributes
    ----------
    name : str
        The value of the estimators' ``algorithm`` parameter that asks for it.
    auto : bool
        Whether ``algorithm="auto"`` may pick it.
    fixed_values : bool
        Whether its index holds the fitted values (it serves those only).
    tolerance : bool
        Whether it approximates within the estimator's tolerance.
    leave_one_out : bool
        Whether its sums can leave each query's own term out
        (``exclude_self``); those of the others are taken by the dense
        backend (see :func:`~sknw._sums._dispatcher.backend_sums`).
    local_moments : bool
        Whether it sums the moments about each query of the local polynomial
        fits (:meth:`moment_sums`), from an index built with the powers of a
        :class:`~sknw._sums._dispatcher.FitRequest`.
    per_query : bool
        Whether it serves heads with a divisor per query (nearest-neighbour
        spans), from an index fitted to a request whose head holds those of
        the training points.
    exact_moments : bool
        Whether :meth:`moment_sums` also sums the moments term by term over
        each query's window (``exact=True``), for the queries whose
        expansion's bound does not serve.
    grid_moments : bool
        Whether it sums the local moments of several heads at every training
        point, each left out, in one pass (:meth:`grid_moment_sums`).
    """

    name = None
    auto = True
    fixed_values = False
    tolerance = False
    leave_one_out = False
    local_moments = False
    per_query = False
    exact_moments = False
    grid_moments = False

    def why_not(self, kernel, metric, metric_params, n_features):
        """Why it cannot serve this kernel and metric (None: it can)."""
        return None

    def fit(self, request):
        """Its index of the training data of a
        :class:`~sknw._sums._dispatcher.FitRequest`; None where it needs none
        or, under ``"auto"``, where one would not pay."""
        return None

    def serves(self, index, V, heads, sample_weight):
        """Whether ``index`` serves the sums of ``V`` for ``heads``."""
        return True

    def sums(self, index, Q, X, V, heads, *, n_jobs=None, **params):
        """``[(S, den, M), ...]``, one per head."""
        raise NotImplementedError

    def moment_sums(self, index, Q, X, V, head, powers, **params):
        """:class:`MomentSums` up to ``powers`` at the queries ``Q``."""
        raise NotImplementedError

    def grid_moment_sums(self, request, heads, powers, **params):
        """:class:`MomentSums` up to ``powers`` of each of ``heads`` at every
        training point of ``request``, each left out of its own sums (a list,
        None for the heads it does not serve), or None where it would not
        be chosen for the request."""
        return None

    def check_params(self, params):
        """Refuse what the backend cannot honour (never ignore it)."""
        if params.get("exclude_self") and not self.leave_one_out:
            raise ValueError(
                f"The {self.name!r} backend cannot leave points out of their "
                "own sums; use the dense backend."
            )
