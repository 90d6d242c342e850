"""The one computational core: tiled, log-domain kernel weight sums.

Every estimator in sknw computes its predictions, attention weights and
leave-one-out scores here. For queries ``Q`` (m x d), training points ``X``
(n x d) with sample weights ``w`` and values ``V`` (n x k), a *head* (a kernel
and a bandwidth divisor) defines log kernel values

    L[i, j] = log |K(dist(Q[i], X[j]) / h)|

and the core returns, for every query, the shift ``M[i] = max L[i, j]`` over the
training points of positive weight, and the shifted sums
``S[i] = sum_j s_ij exp(L[i, j] - M[i]) w[j] V[j]`` and
``den[i] = sum_j s_ij exp(L[i, j] - M[i]) w[j]`` (``s_ij`` the kernel's sign, 1
for non-negative kernels). The ratio ``S / den`` is the Nadaraya--Watson
average; since the nearest term is exactly ``w[j] > 0`` it never underflows to
0/0, however small the bandwidth. A query whose weights are all zero (an empty
window of a compact kernel) has ``M = -inf`` and ``den = 0``. Two kinds of
path use another shift: the tree and sorted paths for compact kernels leave
their sums unshifted (``M = 0``: compact kernels are bounded and have no tail
to underflow), and the GEMM path of a single Gaussian head shifts each query
by a bound from probed training points, at most 660 below its largest log
weight (the largest term is then between 1 and ``exp(660)``; terms below
``exp(EXP_FLOOR)`` times the shift are 0, as elsewhere).

The work is split into tiles over query rows *and* training rows so that the
extra memory is a few tiles of ``tile_elements`` doubles, whatever ``m`` and
``n``; the shift is carried across training tiles as in an online softmax.
Several heads share each tile of distances, which makes a grid of kernels and
bandwidths cost one distance computation. Kernels whose logarithm is linear in
the (squared) distance, the Gaussian and the Laplacian, take a fused path: the
shift comes from the smallest distance and the tile is exponentiated in place.

Two other summations return the same quantities for compact kernels:
:func:`tree_kernel_sums` evaluates only the pairs within reach, found with a
KD-tree, and :func:`sorted_kernel_sums` answers 1-D polynomial kernels exactly
from sorted points and prefix sums of their moments (:class:`SortedIndex`).
For the Gaussian in 1-D, :func:`sknw._binned.binned_kernel_sums`
approximates them within a tolerance by linear binning and FFT convolution.
:func:`parallel_kernel_sums` runs any of them over batches of queries.
"""

from dataclasses import dataclass

import numpy as np
from joblib import effective_n_jobs
from scipy.spatial.distance import cdist
from sklearn import get_config
from sklearn.utils.parallel import Parallel, delayed
from threadpoolctl import threadpool_limits

#: Default number of float64 elements in one (query x train) tile: 1 MiB.
TILE_ELEMENTS = 1 << 17
#: For kernels of unbounded support, shifted log weights below this are raised
#: to it before ``exp`` (which is many times slower where its result underflows)
#: and ``exp`` of it is subtracted after, so their terms are exactly 0: below
#: ``e**-700`` times the row's largest term (exactly 1), a term cannot change a
#: float64 sum.
EXP_FLOOR = -700.0
_FLOOR_VALUE = float(np.exp(EXP_FLOOR))
#: Largest error in squared scaled distances allowed on the GEMM path.
GEMM_U2_TOLERANCE = 1e-11
#: float32 inputs: the floor of float32 terms (``exp(-87)`` is a normal float32).
F32_EXP_FLOOR = -87.0
_F32_FLOOR_VALUE = np.float32(np.exp(F32_EXP_FLOOR))
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
#: Unit roundoffs (half the machine epsilon) of float32 and float64.
_EPS32 = float(np.finfo(np.float32).eps) / 2
_EPS64 = float(np.finfo(np.float64).eps) / 2


def default_tile_elements():
    """Tile size: :data:`TILE_ELEMENTS`, within scikit-learn's ``working_memory``.

    ``working_memory`` (MiB) bounds the few tile-sized buffers alive at once.
    """
    budget = int(get_config()["working_memory"] * 2**20 / 8 / 4)
    return max(1, min(TILE_ELEMENTS, budget))


@dataclass(frozen=True)
class Head:
    """A kernel with a scalar bandwidth divisor: ``u = distance / divisor``."""

    kernel: object
    divisor: float = 1.0


#: Training rows per tile: long rows keep numpy's inner loops long.
TILE_TRAIN_ROWS = 8192


def _tile_shape(m, n, tile_elements):
    """(query rows, training rows) of a tile of about ``tile_elements``."""
    bn = int(min(n, TILE_TRAIN_ROWS, max(64, tile_elements))) if n > 0 else 1
    bq = int(max(1, min(m, tile_elements // max(bn, 1))))
    return bq, bn


def _as_float64(A):
    """Distances and weights are computed in float64 (a copy for float32)."""
    return np.asarray(A, dtype=np.float64)


def pairwise_distances(Q, X, metric, metric_params, *, squared=False, out=None):
    """Distances between the rows of ``Q`` and ``X`` with :func:`cdist`.

    With ``squared=True`` (euclidean metric only) returns squared euclidean
    distances, computed without a square root. ``out`` is an optional
    float64 buffer of shape (len(Q), len(X)).
    """
    params = metric_params or {}
    if squared:
        if Q.shape[1] == 1:
            D = np.subtract(Q, X.reshape(1, -1), out=out)
            return np.multiply(D, D, out=D)
        return cdist(Q, X, "sqeuclidean", out=out)
    if callable(metric):
        return cdist(Q, X, metric, **params)
    return cdist(Q, X, metric, out=out, **params)


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


def _scaled_rows(A, lo, hi, scale):
    """Rows ``lo:hi`` of ``A`` in float64, divided by ``scale`` (None: as is)."""
    block = np.asarray(A[lo:hi], dtype=np.float64)
    return block if scale is None else block / scale


def _max_sq_radius(A, centre, scale, chunk=1 << 16):
    """Largest squared distance of the (scaled) rows of ``A`` from ``centre``."""
    best = 0.0
    for lo in range(0, A.shape[0], chunk):
        block = _scaled_rows(A, lo, lo + chunk, scale) - centre
        best = max(best, float(np.max(np.einsum("ij,ij->i", block, block))))
    return best


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
    return a if scale is None else a / np.ravel(scale)[0]


def _scaled_mean(A, scale, chunk=1 << 16):
    total = np.zeros(A.shape[1])
    for lo in range(0, A.shape[0], chunk):
        total += _scaled_rows(A, lo, lo + chunk, scale).sum(axis=0)
    return total / max(A.shape[0], 1)


def _gemm_usable(Q, X, heads, scale, centre):
    """Whether centred-GEMM squared distances are accurate enough here.

    They differ from :func:`cdist` by rounding of order
    ``eps (|q - c|^2 + |x - c|^2)``; allowed when that error, in units of the
    smallest bandwidth, stays below :data:`GEMM_U2_TOLERANCE`, for continuous
    built-in kernels only (rounding cannot flip a boxcar weight).
    """
    if Q.shape[1] < 2 or not all(
        h.kernel._continuous and not _is_user(h.kernel) for h in heads
    ):
        return False
    radius2 = _max_sq_radius(Q, centre, scale) + _max_sq_radius(X, centre, scale)
    h_min = min(float(h.divisor) for h in heads)
    error = 8.0 * np.finfo(np.float64).eps * radius2
    return bool(error <= GEMM_U2_TOLERANCE * h_min * h_min)


def _use_squared(metric, heads):
    return metric == "euclidean" and all(h.kernel._native_sq for h in heads)


def _scaled_arg(D, head, squared):
    """The kernel's argument: ``u**2`` on the squared path, else ``u``."""
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


def _log_weights(D, head, squared):
    """Log kernel values of one tile of distances for one head."""
    kernel = head.kernel
    arg = _scaled_arg(D, head, squared)
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


def _is_user(kernel):
    return not type(kernel).__module__.startswith("sknw.")


def _log_linear_coef(head, squared):
    """``c`` with ``log K = c * D`` on this path, or None (no fused path).

    Only for kernels that declare ``log K(u) = a u**p`` with ``a < 0``, when the
    distances ``D`` are ``u**p`` up to the bandwidth.
    """
    form = getattr(head.kernel, "_log_linear", None)
    if form is None or _is_user(head.kernel):
        return None
    a, p = form
    if (p == 2) != squared:
        return None
    with np.errstate(over="ignore", divide="ignore", under="ignore"):
        c = a / np.float64(head.divisor) ** p
    # Extreme bandwidths (c = -inf or -0) take the general path.
    return float(c) if np.isfinite(c) and c < 0 else None


class _Accumulator:
    """Running shifted sums of one head: ``acc`` (m, k+1) and shift ``M`` (m,)."""

    def __init__(self, m, k):
        self.acc = np.zeros((m, k + 1))
        self.M = np.full(m, -np.inf)


def kernel_sums(
    Q,
    X,
    V,
    heads,
    *,
    metric="euclidean",
    metric_params=None,
    scale=None,
    sample_weight=None,
    exclude_self=False,
    self_weight=None,
    self_offset=0,
    tile_elements=TILE_ELEMENTS,
    _shifted=False,
):
    """Shifted kernel-weighted sums of ``V`` for every query and head.

    Parameters
    ----------
    Q : ndarray of shape (m, d)
        Queries.
    X : ndarray of shape (n, d)
        Training points.
    V : ndarray of shape (n, k)
        Values to average.
    heads : list of Head
    metric, metric_params
        Passed to :func:`scipy.spatial.distance.cdist`.
    scale : ndarray of shape (d,) or None
        Per-feature bandwidth: both ``Q`` and ``X`` are divided by it, one tile
        at a time (no scaled copy of the data is made).
    sample_weight : ndarray of shape (n,) or None
        Non-negative weights of the training points.
    exclude_self : bool
        ``Q`` is ``X`` itself (or its rows from ``self_offset`` on); leave
        each point out of its own sums (the exact leave-one-out estimate).
    self_weight : ndarray of shape (n,) or None
        With ``exclude_self``, the weight each point keeps in its own sums
        (frequency weights: leaving out one unit of a weight-3 point keeps
        weight 2); None (the default) leaves it out entirely.
    self_offset : int
        With ``exclude_self``, query ``i`` is training point ``i +
        self_offset`` (a batch of the training points).
    tile_elements : int
        Number of elements in one (query x train) tile.

    Returns
    -------
    list of (S, den, M)
        For every head: ``S`` of shape (m, k), ``den`` and ``M`` of shape (m,).

    Notes
    -----
    The loop runs over training tiles outside and query tiles inside; each
    side is prepared (scaled, centred, cast to float64) one tile at a time, so
    the extra memory is a few tiles plus the (m, k + 1) accumulators.
    """
    m, n = Q.shape[0], X.shape[0]
    k = V.shape[1]
    w = None if sample_weight is None else np.asarray(sample_weight, np.float64)
    squared = _use_squared(metric, heads)
    keep_ratio = None
    if exclude_self and self_weight is not None:
        with np.errstate(invalid="ignore", divide="ignore"):
            base = np.ones(n) if w is None else w
            keep_ratio = np.where(base > 0, self_weight / base, 0.0)
    coefs = [_log_linear_coef(h, squared) for h in heads]
    centre = _scaled_mean(X, scale) if squared and Q.shape[1] >= 2 else None
    gemm = centre is not None and _gemm_usable(Q, X, heads, scale, centre)
    single = None
    if (
        len(heads) == 1
        and squared
        and coefs[0] is not None
        and (gemm or Q.shape[1] == 1)
    ):
        single = coefs[0]
    if w is not None and not np.any(w > 0):
        # No training point of positive weight: every window is empty.
        return [(np.zeros((m, k)), np.zeros(m), np.full(m, -np.inf)) for _ in heads]
    f32 = Q.dtype == np.float32 and X.dtype == np.float32 and _f32_weights_ok(w, n)
    if single is not None and not exclude_self and not _shifted:
        if not gemm:
            return [_line_sums(Q, X, V, w, single, scale, tile_elements, f32)]
        shift = _probe_shifts(Q, X, w, single, scale, centre)
        near = shift >= PROBE_MIN_LOG
        in32 = np.zeros(m, dtype=bool)
        low, high = F32_COEF_RANGE
        if f32 and low <= -single <= high:
            in32 = (shift >= F32_MIN_SHIFT) & (
                _plane_error_bound(Q, X, single, scale, centre) <= F32_TOLERANCE
            )
        # Rows far from every probe keep the shifted path below.
        groups = [
            (mask, kind)
            for mask, kind in ((in32, "f32"), (near & ~in32, "f64"), (~near, "far"))
            if mask.any()
        ]
        kinds = [kind for _, kind in groups]
        if kinds in ([], ["f32"], ["f64"]):
            return [
                _plane_sums(
                    Q, X, V, w, single, scale, centre, shift, tile_elements,
                    kinds == ["f32"],
                )
            ]  # fmt: skip
        if kinds != ["far"]:
            S = np.empty((m, k))
            den, M = np.empty(m), np.empty(m)
            for mask, kind in groups:
                if kind == "far":
                    part = kernel_sums(
                        Q[mask], X, V, heads, metric=metric, scale=scale,
                        sample_weight=sample_weight, tile_elements=tile_elements,
                        _shifted=True,
                    )[0]  # fmt: skip
                else:
                    part = _plane_sums(
                        Q[mask], X, V, w, single, scale, centre, shift[mask],
                        tile_elements, kind == "f32",
                    )  # fmt: skip
                S[mask], den[mask], M[mask] = part
            return [(S, den, M)]
    out = [_Accumulator(m, k) for _ in heads]
    fused = [h for h, coef in enumerate(coefs) if coef is not None]
    general = [h for h, coef in enumerate(coefs) if coef is None]
    bq, bn = _tile_shape(m, n, tile_elements)
    near = np.full(m, np.inf) if fused else None
    dbuf = np.empty(bq * bn)
    ebuf = np.empty(bq * bn) if len(heads) > 1 else None
    chains = _SquareChains(coefs, fused, bq * bn) if fused else None
    for x0 in range(0, n, bn):
        x1 = min(x0 + bn, n)
        train = _TrainTile(X, V, w, x0, x1, scale, centre, gemm, single)
        for q0 in range(0, m, bq):
            q1 = min(q0 + bq, m)
            rows = slice(q0, q1)
            shape = (q1 - q0, x1 - x0)
            buf = dbuf[: shape[0] * shape[1]].reshape(shape)
            masked = _masks(
                train.zero, x0, x1, exclude_self, q0, q1, keep_ratio, self_offset
            )
            kept = (keep_ratio, exclude_self, q0, q1, x0, x1, self_offset)
            Qt = _scaled_rows(Q, q0, q1, scale)
            if single is not None:
                E = train.single_exp(Qt, buf, masked, out[0], rows)
                _adjust_kept(E, *kept)
                out[0].acc[rows] += E @ train.Vx
                continue
            if gemm:
                D = train.gemm_sq(Qt - centre, buf)
            else:
                D = pairwise_distances(
                    Qt, train.X, metric, metric_params, squared=squared, out=buf
                )
            target = ebuf[: D.size].reshape(shape) if ebuf is not None else D
            # General heads first: the log-linear ones below mask D in place.
            for h in general:
                acc, head = out[h], heads[h]
                L = _log_weights(D, head, squared)
                if _is_user(head.kernel):
                    _check_user_kernel(L, head)
                for ix in masked:
                    L[ix] = -np.inf
                tile_max = L.max(axis=1)
                unbounded = bool(np.isinf(head.kernel.support))
                E = _shifted_exp(L, acc, rows, tile_max, unbounded)
                if not head.kernel.nonnegative:
                    E *= _signs(D, head, squared)
                    for ix in masked:
                        E[ix] = 0.0
                _adjust_kept(E, *kept)
                acc.acc[rows] += E @ train.Vx
            if fused:
                # Shared by every log-linear head: the largest log value of a
                # row is coef times its smallest unmasked distance so far (the
                # head's shift), the smallest is coef times its largest
                # distance. D becomes the excess over that nearest distance.
                dmax = D.max(axis=1)
                for ix in masked:
                    D[ix] = np.inf
                dmin = D.min(axis=1)
                nearest = np.minimum(near[rows], dmin)
                near[rows] = nearest
                base = np.where(np.isfinite(nearest), nearest, 0.0)
                D -= base[:, None]
                excess = dmax - base
                with np.errstate(invalid="ignore"):
                    gap = np.min(dmin - base, initial=np.inf)
                adjust = exclude_self and keep_ratio is not None
                parts = (D, dmin, gap, excess, target, out, rows, adjust)
                for h, E in chains.tile(*parts):
                    _adjust_kept(E, *kept)
                    out[h].acc[rows] += E @ train.Vx
    if single is not None and gemm:
        # The single-head GEMM path drops the per-query constant coef |q - c|^2.
        for q0 in range(0, m, bq):
            Qc = _scaled_rows(Q, q0, q0 + bq, scale) - centre
            out[0].M[q0 : q0 + bq] += single * np.einsum("ij,ij->i", Qc, Qc)
    return [(a.acc[:, :k], a.acc[:, k].copy(), a.M) for a in out]


#: Training rows per tile of :func:`_line_sums`.
LINE_TILE_TRAIN_ROWS = 1024
#: Largest bound on the rounding error of a log weight computed by the
#: per-tile GEMM of :func:`_line_sums` (float64); beyond it, by subtraction.
LINE_GEMM_TOLERANCE = 1e-11


def _line_sums(Q, X, V, w, coef, scale, tile_elements, f32=False):
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
    rest in float64.
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
    bn = int(min(xs.size, LINE_TILE_TRAIN_ROWS, max(64, tile_elements)))
    bn = max(bn, 1)
    bq = int(max(1, min(m, tile_elements // bn)))
    buf = np.empty(bq * bn)
    if f32:
        Vx32, unit = _float32_values(Vx)
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
            _line_error_bound(qt, nt, EXP_FLOOR, _EPS64) <= LINE_GEMM_TOLERANCE
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
        acc[rows] = total * unit if use32 else total
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


def _plane_sums(Q, X, V, w, coef, scale, centre, shift, tile_elements, f32=False):
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
    accumulated in float64.
    """
    m, k = Q.shape[0], V.shape[1]
    keep = np.arange(X.shape[0]) if w is None else np.flatnonzero(w > 0)
    acc = np.zeros((m, k + 1))
    bq, bn = _tile_shape(m, keep.size, tile_elements)
    dtype, floor = np.float64, EXP_FLOOR
    if f32:
        dtype, floor = np.float32, F32_EXP_FLOOR
        bn = min(bn, F32_TILE_TRAIN_ROWS)
        bq = int(max(1, min(m, tile_elements // bn)))
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
        acc *= unit
    return acc[:, :k], acc[:, k].copy(), np.asarray(shift, dtype=np.float64).copy()


def power_of_two_scale(A, axis=None):
    """Powers of two near the largest magnitudes of ``A`` (1 where it is 0).

    Dividing by them is exact and brings values near the ends of the float
    range back to order one, so sums of products neither overflow nor fall
    into the subnormal range.
    """
    big = np.max(np.abs(A), axis=axis)
    _, exponent = np.frexp(np.where(np.isfinite(big) & (big > 0), big, 1.0))
    return np.ldexp(1.0, exponent - 1)  # <= big, so never overflows


def _float32_values(Vx):
    """``Vx`` in float32, each column divided by its :func:`power_of_two_scale`
    ``unit`` (largest magnitude then in ``[1, 2)``): float32 sums of up to
    :data:`F32_TILE_TRAIN_ROWS` terms of at most ``exp(-F32_MIN_SHIFT)`` cannot
    overflow, whatever the scale of the values. Returns ``(Vx32, unit)``."""
    unit = power_of_two_scale(Vx, axis=0) if Vx.shape[0] else np.ones(Vx.shape[1])
    return (Vx / unit).astype(np.float32), unit


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


class _TrainTile:
    """One tile of training rows, prepared once for all query tiles.

    ``X``: scaled float64 rows; ``Vx``: ``[w V, w]`` for the GEMM that sums
    values and weights; ``zero``: indices of zero-weight rows. For the GEMM
    paths, the centred rows as ``-2 (x - c)`` with ``|x - c|^2``; for a single
    log-linear head (``log K = coef d**2``) the bandwidth is folded in.
    """

    def __init__(self, X, V, w, x0, x1, scale, centre, gemm, single):
        self.X = _scaled_rows(X, x0, x1, scale)
        self.Vx = _weighted_values(V, w, slice(x0, x1))
        self.zero = None if w is None else np.flatnonzero(w[x0:x1] == 0) + x0
        self.single = single
        self.centre = centre
        if gemm:
            Xc = self.X - centre
            xn = np.einsum("ij,ij->i", Xc, Xc)
            if single is None:
                self.XT, self.xn = -2.0 * Xc.T, xn
            else:
                # [q - c, 1] . B = coef (|x - c|^2 - 2 (q - c).(x - c)).
                self.B = np.vstack([-2.0 * single * Xc.T, single * xn])
        elif single is not None:
            self.xs = (self.X * np.sqrt(-single)).reshape(1, -1)
        self.gemm = gemm

    def gemm_sq(self, Qc, out):
        """Squared distances of centred queries to this tile, clipped at 0."""
        D = np.matmul(Qc, self.XT, out=out)
        D += np.einsum("ij,ij->i", Qc, Qc)[:, None]
        D += self.xn[None, :]
        return np.maximum(D, 0.0, out=D)

    def single_exp(self, Qt, buf, masked, acc, rows):
        """``exp(L - shift)`` of the single log-linear head, in ``buf``."""
        if not self.gemm:
            # One feature: exp(-shift - (q s - x s)**2), s = sqrt(-coef).
            with np.errstate(over="ignore", invalid="ignore"):
                D = np.subtract(Qt * np.sqrt(-self.single), self.xs, out=buf)
                np.multiply(D, D, out=D)
            for ix in masked:
                D[ix] = np.inf
            tile_max = -D.min(axis=1)
            safe = _rescale(acc, rows, tile_max)
            np.subtract(-safe[:, None], D, out=D)
            return _exp(D, None)
        Qc = Qt - self.centre
        L = np.matmul(np.hstack([Qc, np.ones((Qc.shape[0], 1))]), self.B, out=buf)
        for ix in masked:
            L[ix] = -np.inf
        return _shifted_exp(L, acc, rows, L.max(axis=1), True)


#: Fewest queries per parallel batch.
MIN_BATCH = 256


def parallel_kernel_sums(Q, X, V, heads, *, n_jobs=None, sums=None, **params):
    """:func:`kernel_sums` (or ``sums``) over batches of queries in parallel.

    The queries are split into one contiguous batch per worker; the batches
    run through scikit-learn's :class:`~sklearn.utils.parallel.Parallel`
    (threads preferred: numpy's ufuncs, ``cdist`` and BLAS release the GIL),
    so ``joblib.parallel_config`` decides where they run. BLAS is limited to
    one thread per batch. ``n_jobs=None`` or 1, or too few queries, runs
    :func:`kernel_sums` directly. With ``exclude_self`` (``Q`` is ``X``), each
    batch knows its queries' own rows from its ``self_offset``.
    """
    sums = kernel_sums if sums is None else sums
    m = Q.shape[0]
    n_workers = effective_n_jobs(n_jobs)
    n_batches = min(n_workers, m // MIN_BATCH)
    if n_batches <= 1:
        return sums(Q, X, V, heads, **params)
    bounds = np.linspace(0, m, n_batches + 1).astype(np.intp)
    offset = params.get("self_offset", 0)

    def batch_params(a):
        if not params.get("exclude_self"):
            return params
        return {**params, "self_offset": offset + int(a)}

    parts = Parallel(n_jobs=n_jobs, prefer="threads")(
        delayed(_batch_sums)(sums, Q[a:b], X, V, heads, batch_params(a))
        for a, b in zip(bounds[:-1], bounds[1:], strict=True)
    )
    return [
        tuple(np.concatenate([part[h][i] for part in parts]) for i in range(3))
        for h in range(len(heads))
    ]


def exact_rows(sums, rows, Q, X, V, heads, **params):
    """Overwrite the ``rows`` (a boolean mask) of one head's ``sums = (S, den,
    M)`` with :func:`kernel_sums` of those queries, in float64 (the fallback of
    the approximate and expansion paths, which compute in float64 too)."""
    if not rows.any():
        return
    ((S, den, M),) = kernel_sums(
        np.asarray(Q[rows], dtype=np.float64), X, V, heads, **params
    )
    sums[0][rows], sums[1][rows], sums[2][rows] = S, den, M


def _batch_sums(sums, Q, X, V, heads, params):
    with threadpool_limits(limits=1, user_api="blas"):
        return sums(Q, X, V, heads, **params)


#: Minkowski ``p`` of the metrics a KD-tree can search.
TREE_METRICS = {"euclidean": 2.0, "cityblock": 1.0, "chebyshev": np.inf}
#: ``algorithm="auto"`` takes the tree below this expected share of training
#: points in a window.
TREE_MAX_FRACTION = 0.05


def tree_p(metric, metric_params):
    """Minkowski ``p`` for a KD-tree search with this metric, or None."""
    if metric == "minkowski":
        p = (metric_params or {}).get("p", 2.0)
        if set(metric_params or {}) <= {"p"} and p >= 1:
            return float(p)
        return None
    if metric_params:
        return None
    return TREE_METRICS.get(metric) if isinstance(metric, str) else None


def build_tree(X, scale):
    """KD-tree over the training rows, divided by ``scale``."""
    from scipy.spatial import cKDTree

    return cKDTree(_scaled_rows(X, 0, X.shape[0], scale))


def window_fraction(tree, X, head, p, scale, n_probe=256):
    """Average share of training points in the windows of training points.

    Probes up to ``n_probe`` evenly spaced training rows as queries.
    """
    n = X.shape[0]
    idx = np.unique(np.linspace(0, n - 1, min(n, n_probe)).astype(np.intp))
    probes = _scaled_rows(X, 0, n, scale)[idx]
    radius = head.kernel.support * head.divisor
    counts = tree.query_ball_point(probes, radius, p=p, return_length=True)
    return float(np.mean(counts)) / n


def tree_kernel_sums(
    Q,
    X,
    V,
    heads,
    *,
    tree,
    p,
    scale=None,
    sample_weight=None,
    tile_elements=TILE_ELEMENTS,
    **unused,
):
    """:func:`kernel_sums` for a compact kernel, from the neighbours in a tree.

    Only the pairs within the kernel's support are evaluated: the tree finds
    them (a ball of radius ``support * h``, slightly enlarged so that rounding
    in the tree cannot drop a point the kernel weighs), distances are
    recomputed here and the kernel decides. Compact kernels are bounded by
    ``K(0)`` and have no tail to underflow, so the sums are unshifted
    (``M = 0`` where the window has a positive weight, ``-inf`` where it is
    empty), and equal those of :func:`kernel_sums` up to rounding.
    """
    (head,) = heads
    m, k = Q.shape[0], V.shape[1]
    Xs = tree.data
    w = None if sample_weight is None else np.asarray(sample_weight, np.float64)
    Vx = _weighted_values(V, w, slice(None))
    radius = head.kernel.support * head.divisor * (1.0 + 1e-12)
    acc = np.zeros((m, k + 1))
    # Queries per chunk: about tile_elements pairs, from the first chunk's size.
    chunk = max(1, min(m, 256))
    q0 = 0
    while q0 < m:
        q1 = min(q0 + chunk, m)
        Qt = _scaled_rows(Q, q0, q1, scale)
        lists = tree.query_ball_point(Qt, radius, p=p, return_sorted=False)
        lengths = np.fromiter(map(len, lists), dtype=np.intp, count=len(lists))
        cols = np.fromiter(
            (j for lst in lists for j in lst), dtype=np.intp, count=lengths.sum()
        )
        rows = np.repeat(np.arange(q1 - q0), lengths)
        diff = Qt[rows] - Xs[cols]
        if p == 2.0:
            dist = np.sqrt(np.einsum("ij,ij->i", diff, diff))
        elif p == 1.0:
            dist = np.abs(diff).sum(axis=1)
        elif np.isinf(p):
            dist = np.abs(diff).max(axis=1)
        else:
            dist = (np.abs(diff) ** p).sum(axis=1) ** (1.0 / p)
        weights = np.asarray(head.kernel(dist / head.divisor), dtype=np.float64)
        if _is_user(head.kernel) and not np.all(np.isfinite(weights)):
            raise ValueError(
                f"Kernel {head.kernel!r} returned NaN or infinite values; a "
                "kernel must return finite values."
            )
        for c in range(k + 1):
            acc[q0:q1, c] = np.bincount(
                rows, weights=weights * Vx[cols, c], minlength=q1 - q0
            )
        per_query = max(1.0, lengths.mean()) if lengths.size else 1.0
        chunk = int(max(1, min(4096, tile_elements / per_query)))
        q0 = q1
    den = acc[:, k].copy()
    M = np.where(den != 0, 0.0, -np.inf)
    return [(acc[:, :k], den, M)]


#: Queries per chunk of the sorted 1-D path.
SORTED_CHUNK = 1 << 15
#: Queries of the sorted path whose rounding bound exceeds this share of their
#: weight sum are summed term by term over their window.
SORTED_TOLERANCE = 1e-11


def sorted_eligible(kernel, metric, metric_params, n_features):
    """Whether the exact sorted 1-D path applies.

    One feature, a metric that is ``|x - q|`` in 1-D, and a built-in kernel that
    is a polynomial in ``u`` on its support.
    """
    return (
        n_features == 1
        and getattr(kernel, "_polynomial", None) is not None
        and not _is_user(kernel)
        and tree_p(metric, metric_params) is not None
    )


#: Segments longer than this are summed one at a time by
#: :func:`segmented_cumsum`; shorter ones in batches of equal padded length.
SEGMENT_BATCH_LENGTH = 64
#: Rows of terms accumulated at once by :func:`segmented_cumsum` (its
#: working memory, in extended precision, is a few times this).
SEGMENT_CHUNK_ROWS = 1 << 14
#: Unit roundoff of the accumulation of :func:`segmented_cumsum` (``np.longdouble``:
#: 2**-64 where it is the x87 extended type, else that of float64), in units of
#: float64's.
ACCUMULATION_ROUNDOFF = float(np.finfo(np.longdouble).eps) / 2 / _EPS64


def segmented_cumsum(terms, starts):
    """Cumulative sums of ``terms`` along axis 0, each segment (from one of
    the sorted ``starts`` to the next) summed on its own, in ``np.longdouble``.

    The error of the ``j``-th sum of a segment is at most ``1 + 1.01 j r``
    float64 unit roundoffs times the sum of the magnitudes of its terms
    (``r``: :data:`ACCUMULATION_ROUNDOFF`): rounding that grows slowly with a
    segment's length and is never inherited from another segment.
    """
    n = terms.shape[0]
    out = np.empty_like(terms)
    if n == 0:
        return out
    rest = terms.shape[1:]
    lengths = np.diff(np.r_[starts, n])
    long = lengths > SEGMENT_BATCH_LENGTH
    for a, size in zip(starts[long], lengths[long], strict=True):
        carry = np.zeros(rest, dtype=np.longdouble)
        for b in range(a, a + size, SEGMENT_CHUNK_ROWS):
            e = min(b + SEGMENT_CHUNK_ROWS, a + size)
            part = np.cumsum(terms[b:e], axis=0, dtype=np.longdouble)
            part += carry
            carry = part[-1].copy()
            out[b:e] = part
    short, short_len = starts[~long], lengths[~long]
    padded = 1 << np.ceil(np.log2(np.maximum(short_len, 1))).astype(np.intp)
    for width in np.unique(padded):
        first_all = short[padded == width]
        size_all = short_len[padded == width]
        per_chunk = max(1, SEGMENT_CHUNK_ROWS // int(width))
        for c in range(0, first_all.size, per_chunk):
            first = first_all[c : c + per_chunk]
            size = size_all[c : c + per_chunk]
            offsets = np.arange(width)
            valid = offsets[None, :] < size[:, None]
            rows = first[:, None] + np.where(valid, offsets[None, :], 0)
            batch = terms[rows]
            batch[~valid] = 0.0
            sums = np.cumsum(batch, axis=1, dtype=np.longdouble)
            out[rows[valid]] = sums[valid]
    return out


def unit_blocks(t):
    """The values ``t``, sorted and cut into blocks one unit wide from the
    smallest.

    Returns ``(order, ts, starts, centre, offsets)``: the sorting order, the
    sorted values, the index of each block's first value, each block's centre
    (its lower edge plus 1/2) and each sorted value's offset from its block's
    centre (not finite where the span of ``t`` is not).
    """
    order = np.argsort(t)
    ts = t[order]
    if not ts.size:
        return order, ts, np.zeros(0, dtype=np.intp), ts, ts
    with np.errstate(over="ignore", invalid="ignore"):
        block = np.floor(ts - ts[0])
        starts = np.flatnonzero(np.r_[True, block[1:] != block[:-1]])
        centre = ts[0] + block[starts] + 0.5
        offsets = ts - np.repeat(centre, np.diff(np.r_[starts, ts.size]))
    return order, ts, starts, centre, offsets


class SortedIndex:
    """Training points of one feature, sorted, with block-centred moments.

    In units of the bandwidth, ``t = x / h`` is cut into blocks one unit wide;
    for block ``b`` with centre ``c_b`` the within-block prefix sums of
    ``w v (t - c_b)**i`` for ``i = 0 .. degree`` give, for any run of points of
    the block, the moments from which the kernel sums follow exactly (a
    polynomial kernel expands in these moments). Centred powers stay within
    ``[-1/2, 1/2]``; the expansion still cancels where a window holds only
    points near its edge (where the kernel is small but the expansion's terms
    are not), by at most the bound :meth:`sums` returns. Coordinates are
    measured from the median training value (:func:`line_offsets`).
    """

    def __init__(self, X, V, w, kernel, bandwidth, scale):
        self.origin = line_origin(X)
        t = line_offsets(X, self.origin, scale) / bandwidth
        order, self.t, starts, block_centre, s = unit_blocks(t)
        self.kernel = kernel
        self.coef = np.asarray(kernel._polynomial, dtype=np.float64)
        self.open = not kernel._continuous  # the boxcar: u < 1
        n, k = V.shape
        Vx = _weighted_values(V, w, order)
        self.Vx = Vx
        # Prefix counts of points of positive weight: exact emptiness.
        self.positive = np.r_[0, np.cumsum(Vx[:, k] > 0)]
        lengths = np.diff(np.r_[starts, n])
        self.block_start = np.repeat(starts, lengths)
        self.centre = np.repeat(block_centre, lengths)
        degree = self.coef.size - 1
        # moments[j, i] = sum over the block of j, up to j, of Vx * s**i.
        powers = s[:, None] ** np.arange(degree + 1)
        terms = powers[:, :, None] * Vx[:, None, :]
        self.moments = segmented_cumsum(terms, starts)
        # Prefix sums of w |s|**i (positive terms): the magnitudes the
        # rounding bound of a run is relative to.
        self.abs_moments = segmented_cumsum(
            (np.abs(powers) * Vx[:, -1:])[:, :, None], starts
        )[:, :, 0]
        # Derivatives of the kernel polynomial, divided by i!: the expansion
        # coefficients of (z + s)**c in powers of s.
        self.derivs = [
            np.array([self.coef[c] * _binom(c, i) for c in range(i, degree + 1)][::-1])
            for i in range(degree + 1)
        ]
        # Bounds of the expansion's coefficients: their polynomials with the
        # magnitudes of their terms.
        self.abs_derivs = [np.abs(deriv) for deriv in self.derivs]
        self.degree = degree

    def _run(self, a, b):
        """Moments of the points ``a <= j < b`` (one block): (m, powers, k+1)."""
        last = np.maximum(b - 1, 0)
        total = self.moments[last]
        inside = a > self.block_start[last]
        total[inside] -= self.moments[np.maximum(a - 1, 0)[inside]]
        total[b <= a] = 0.0
        return total

    def _side(self, a, b, tq, left):
        """Kernel sums over sorted points ``a <= j < b`` on one side of ``tq``,
        and the magnitude of the terms of their expansion (per unit weight)."""
        acc = 0.0
        magnitude = 0.0
        split = self.block_start[np.clip(b - 1, 0, None)]
        split = np.where(b > a, np.maximum(split, a), a)
        for lo, hi in ((a, split), (split, b)):
            moments = self._run(lo, hi)
            last = np.clip(hi - 1, 0, None)
            centre = self.centre[last]
            delta = tq - centre  # u = delta - s (left) or s - delta (right)
            z = delta if left else -delta
            coefs = np.empty((tq.shape[0], len(self.derivs)))
            for i, deriv in enumerate(self.derivs):
                coefs[:, i] = np.polyval(deriv, z)
                if left and i % 2:
                    coefs[:, i] = -coefs[:, i]
            acc = acc + np.einsum("mi,mic->mc", coefs, moments)
            # The run's moments are differences of prefix sums of the block up
            # to its last point: they round relative to that prefix's sums of
            # w |s|**i, and to the number of terms summed (in extended
            # precision; see segmented_cumsum). In float64 unit roundoffs: the
            # two prefix sums, the terms, and the products and sum with the
            # coefficients (and the coefficients' own rounding).
            terms = last - self.block_start[last] + 1
            units = 2 * self.degree + 10 + 2.02 * ACCUMULATION_ROUNDOFF * terms
            size = np.column_stack([np.polyval(d, np.abs(z)) for d in self.abs_derivs])
            prefix = np.where((hi > lo)[:, None], self.abs_moments[last], 0.0)
            magnitude = magnitude + np.einsum("mi,mi->m", size, prefix) * units
        return acc, magnitude

    def _windows(self, tq):
        t = self.t
        if self.open:
            lo = np.searchsorted(t, tq - 1.0, side="right")
            hi = np.searchsorted(t, tq + 1.0, side="left")
        else:
            lo = np.searchsorted(t, tq - 1.0, side="left")
            hi = np.searchsorted(t, tq + 1.0, side="right")
        return lo, hi

    def exact_sums(self, tq, budget=TILE_ELEMENTS):
        """Kernel sums ``[S, den]`` at queries ``tq``, term by term over each
        window's points (the kernel object evaluated at each offset)."""
        lo, hi = self._windows(tq)
        size = np.maximum(hi - lo, 0)
        out = np.zeros((tq.size, self.Vx.shape[1]))
        ends = np.cumsum(size)
        a = 0
        while a < tq.size:
            # Queries a..b-1: at most ``budget`` terms (or a single query).
            base = ends[a] - size[a]
            b = max(a + 1, int(np.searchsorted(ends, base + budget, side="right")))
            rows = np.arange(a, b)
            counts = size[a:b]
            total = int(counts.sum())
            if total:
                first = np.cumsum(counts) - counts
                idx = np.arange(total) - np.repeat(first - lo[a:b], counts)
                u = np.abs(self.t[idx] - np.repeat(tq[a:b], counts))
                terms = self.kernel(u)[:, None] * self.Vx[idx]
                nonzero = counts > 0
                out[rows[nonzero]] = np.add.reduceat(terms, first[nonzero], axis=0)
            a = b
        return out

    def sums(self, tq):
        """Kernel-weighted sums ``[S, den]``, counts and error bounds at
        queries ``tq`` (sums by the moment expansion; the bound, on the error
        of the weight sums and, times the largest |value|, of the others, is
        from the magnitudes of the expansion's terms)."""
        t = self.t
        lo, hi = self._windows(tq)
        mid = np.searchsorted(t, tq, side="right")
        left, left_size = self._side(lo, mid, tq, True)
        right, right_size = self._side(mid, hi, tq, False)
        bound = _EPS64 * (left_size + right_size)
        # A window is empty when no point of positive weight lies strictly
        # inside the support (points at u = 1 weigh 0; the boxcar's windows
        # are open already).
        if self.open:
            inner_lo, inner_hi = lo, hi
        else:
            inner_lo = np.searchsorted(t, tq - 1.0, side="right")
            inner_hi = np.searchsorted(t, tq + 1.0, side="left")
        inner_hi = np.maximum(inner_hi, inner_lo)
        nonempty = self.positive[inner_hi] > self.positive[inner_lo]
        return left + right, nonempty, bound


def _binom(n, k):
    from math import comb

    return float(comb(n, k))


def sorted_kernel_sums(
    Q,
    X,
    V,
    heads,
    *,
    index,
    scale=None,
    tile_elements=TILE_ELEMENTS,
    **unused,
):
    """:func:`kernel_sums` for a polynomial kernel in 1-D, from a sorted index.

    ``O((n + m) log n)``: each query's window is found by binary search and its
    sums follow from the block-centred moments of :class:`SortedIndex` (the
    idea of fast sum updating). Sums are unshifted (``M = 0`` where the window
    has a positive weight, ``-inf`` where it is empty) and equal those of
    :func:`kernel_sums` up to rounding: the expansion in moments cancels where a
    window holds only points near its edge, more so for kernels of high degree.
    Queries whose bound on that rounding exceeds :data:`SORTED_TOLERANCE` of
    their weight sum are summed term by term over their window instead.
    """
    (head,) = heads
    m, k = Q.shape[0], V.shape[1]
    acc = np.zeros((m, k + 1))
    nonempty = np.zeros(m, dtype=bool)
    bound = np.zeros(m)
    tq_all = line_offsets(Q, index.origin, scale) / head.divisor
    # Sorted queries make the binary searches walk the index in order.
    order = np.argsort(tq_all)
    for q0 in range(0, m, SORTED_CHUNK):
        rows = order[q0 : q0 + SORTED_CHUNK]
        acc[rows], nonempty[rows], bound[rows] = index.sums(tq_all[rows])
    redo = order[nonempty[order] & ~(bound[order] <= SORTED_TOLERANCE * acc[order, k])]
    if redo.size:
        acc[redo] = index.exact_sums(tq_all[redo], tile_elements)
    acc[~nonempty] = 0.0
    den = acc[:, k].copy()
    M = np.where(den != 0, 0.0, -np.inf)
    return [(acc[:, :k], den, M)]


def _masks(zero, x0, x1, exclude_self, q0, q1, keep_ratio, offset=0):
    """Index pairs of a tile whose terms are left out (weight 0, or self).

    With ``exclude_self``, query ``i`` is training point ``i + offset``.
    """
    masked = []
    if zero is not None and zero.size:
        cols = zero[(zero >= x0) & (zero < x1)] - x0
        if cols.size:
            masked.append((slice(None), cols))
    if exclude_self:
        diag = np.arange(max(q0 + offset, x0), min(q1 + offset, x1))
        if keep_ratio is not None:
            diag = diag[keep_ratio[diag] == 0]
        masked.append((diag - offset - q0, diag - x0))
    return masked


def _adjust_kept(E, keep_ratio, exclude_self, q0, q1, x0, x1, offset=0):
    """Scale each point's own term by the fraction of weight it keeps."""
    if exclude_self and keep_ratio is not None:
        diag = np.arange(max(q0 + offset, x0), min(q1 + offset, x1))
        E[diag - offset - q0, diag - x0] *= keep_ratio[diag]


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


#: Most squarings between a log-linear head evaluated by ``exp`` and a head
#: derived from it: each squaring doubles the relative error of a term, so a
#: derived term is within ``2**12 * 2**-53`` (5e-13) of its ``exp``.
MAX_SQUARINGS = 12
#: Coefficients whose ratio is within this relative distance of a power of two
#: ``2**s`` are taken as exactly ``2**s`` apart (bandwidths ``sqrt(2)`` apart
#: are so only up to rounding): the terms that can matter in a sum, of log
#: weight above ``-40``, then change by less than ``40 * RATIO_TOLERANCE``.
RATIO_TOLERANCE = 2.0**-46


#: Chain values are kept at least ``exp(CHAIN_FLOOR)``: their squares are then
#: normal floats (a subnormal result makes a multiplication many times slower),
#: at least ``exp(2 * CHAIN_FLOOR)``, the floor of the derived heads.
CHAIN_FLOOR = EXP_FLOOR / 2
_CHAIN_VALUE = float(np.exp(CHAIN_FLOOR))
_CHAIN_FLOOR_VALUE = _CHAIN_VALUE * _CHAIN_VALUE


class _SquareChains:
    """The terms ``exp(coef * D)`` of the log-linear heads of one pass.

    A head whose coefficient is ``2**s`` times that of another (a bandwidth
    ``sqrt(2)**s`` times smaller for a Gaussian) takes its terms as the other's
    squared ``s`` times, ``exp(c D)**(2**s) = exp(2**s c D)``: a multiplication
    instead of ``exp``. Heads are taken from the smallest ``|coef|`` (widest
    bandwidth) up; each derives from the nearest such head at most
    :data:`MAX_SQUARINGS` squarings from an ``exp``, else it is evaluated.

    Floors are those of :func:`_exp`, at ``exp(EXP_FLOOR)``: a head's chain
    values (the ones squared) are raised to ``exp(CHAIN_FLOOR)``, so a derived
    head's squares below ``exp(2 * CHAIN_FLOOR)`` are exactly those whose
    arguments are below the floor, and subtracting that value makes their
    terms exactly 0. A head none of whose terms in a tile reach the floor is
    skipped there, with the heads derived from it.
    """

    def __init__(self, coefs, fused, size):
        order = sorted(fused, key=lambda h: -coefs[h])
        depth, self.children, self.plan = {}, dict.fromkeys(order, 0), []
        for i, h in enumerate(order):
            best = None
            for p in order[:i]:
                with np.errstate(over="ignore"):
                    ratio = coefs[h] / coefs[p]
                if not np.isfinite(ratio):
                    continue
                s = round(float(np.log2(ratio)))
                if (
                    1 <= s <= MAX_SQUARINGS - depth[p]
                    and abs(ratio / 2.0**s - 1.0) <= RATIO_TOLERANCE
                    and (best is None or (s, depth[p]) < (best[1], depth[best[0]]))
                ):
                    best = (p, s)
            parent, squarings = best if best is not None else (None, 0)
            depth[h] = 0 if parent is None else depth[parent] + squarings
            if parent is not None:
                self.children[parent] += 1
            self.plan.append((h, coefs[h], parent, squarings))
        self.size = size
        self.pool = []

    def _buffer(self, shape):
        raw = self.pool.pop() if self.pool else np.empty(self.size)
        return raw, raw[: shape[0] * shape[1]].reshape(shape)

    def tile(self, D, dmin, gap, excess, target, out, rows, copy):
        """Yield ``(head, E)`` for every log-linear head: ``E`` its tile of
        terms (valid until the next one is asked for), after moving the head's
        shift in ``out[head]`` to ``coef * dmin``.

        ``D`` holds the excess of each distance over its row's smallest so far
        (masked entries at ``inf``), ``excess`` each row's largest, ``gap``
        the tile's smallest and ``dmin`` this tile's smallest distance per
        row. ``copy``: the caller changes the terms, so never yield a chain's
        own values.
        """
        pending = dict(self.children)
        chain, raw, raised = {}, {}, {}
        for h, coef, parent, squarings in self.plan:
            with np.errstate(over="ignore", invalid="ignore"):
                _rescale(out[h], rows, coef * dmin)
                zero = not coef * gap >= EXP_FLOOR
                lowest = np.min(coef * excess, initial=0.0)
            keep = self.children[h] > 0
            inherit = False
            if parent is not None:
                src = chain[parent]
                pending[parent] -= 1
                last = not pending[parent] and src is not None
                # The parent's last derived head squares its values in place.
                inherit = last and keep
                if last and not inherit:
                    self.pool.append(raw[parent])
                zero = zero or src is None
            if zero:
                # Every term is below the floor: 0, as are the derived heads'.
                if inherit:
                    self.pool.append(raw[parent])
                if keep:
                    chain[h] = None
                continue
            buf = target
            if inherit:
                raw[h], buf = raw[parent], src
            elif keep:
                raw[h], buf = self._buffer(D.shape)
            if parent is None:
                floor = not lowest >= EXP_FLOOR
                with np.errstate(over="ignore", invalid="ignore"):
                    np.multiply(D, coef, out=buf)
                if floor:
                    np.maximum(buf, EXP_FLOOR, out=buf)
                np.exp(buf, out=buf)
                floor_value = _FLOOR_VALUE
            else:
                # Squares of raised chain values sit at the derived floor, so
                # a floored head squares raised values only (masked zeros
                # included), and raises each intermediate square too.
                floor = raised[parent] or not lowest >= EXP_FLOOR
                if floor and not raised[parent]:
                    np.maximum(src, _CHAIN_VALUE, out=src)
                    raised[parent] = True
                np.multiply(src, src, out=buf)
                for _ in range(squarings - 1):
                    if floor:
                        np.maximum(buf, _CHAIN_VALUE, out=buf)
                    np.multiply(buf, buf, out=buf)
                floor_value = _CHAIN_FLOOR_VALUE
            E = buf
            if floor:
                E = np.subtract(buf, floor_value, out=target)
            elif keep and copy:
                E = target
                np.copyto(E, buf)
            if keep:
                raised[h] = not lowest >= CHAIN_FLOOR
                chain[h] = buf
            yield h, E
            if keep and raised[h]:
                np.maximum(buf, _CHAIN_VALUE, out=buf)


def log_weight_rows(
    Q, X, head, *, metric, metric_params, sample_weight, tile_elements, scale=None
):
    """Yield ``(rows, W)``: full rows of shifted weights ``exp(L - M) * w``.

    ``W`` is signed for kernels that are not non-negative; rows with no
    positive weight are all zero.
    """
    m, n = Q.shape[0], X.shape[0]
    X = _scaled_rows(X, 0, n, scale)
    squared = _use_squared(metric, [head])
    w = None if sample_weight is None else _as_float64(sample_weight)
    bq = int(max(1, min(m, tile_elements // max(n, 1))))
    for q0 in range(0, m, bq):
        q1 = min(q0 + bq, m)
        Qt = _scaled_rows(Q, q0, q1, scale)
        D = pairwise_distances(Qt, X, metric, metric_params, squared=squared)
        L = _log_weights(D, head, squared)
        if _is_user(head.kernel):
            _check_user_kernel(L, head)
        if w is not None:
            L[:, w == 0] = -np.inf
        M = L.max(axis=1, keepdims=True)
        M[~np.isfinite(M)] = 0.0
        W = np.exp(L - M)
        if not head.kernel.nonnegative:
            W *= _signs(D, head, squared)
        if w is not None:
            W *= w
        yield slice(q0, q1), W


def nearest_mask(D, sample_weight=None):
    """Weights of the nearest training points (ties included) per row of ``D``.

    Each row holds the sample weights (1 without them) of the training points at
    the row's minimum distance among points of positive weight, and 0 elsewhere.
    """
    D = np.array(D, dtype=np.float64)
    if sample_weight is not None:
        D[:, sample_weight == 0] = np.inf
    ties = D == D.min(axis=1, keepdims=True)
    w = np.ones(D.shape[1]) if sample_weight is None else sample_weight
    return ties * w


def nearest_sums(
    Q,
    X,
    V,
    *,
    metric,
    metric_params,
    scale=None,
    sample_weight=None,
    exclude_self=False,
    self_weight=None,
    tile_elements=TILE_ELEMENTS,
):
    """Sums of ``w * V`` over the nearest training points of each query.

    All training points at the minimum distance (ties) count, each with its
    sample weight; points of weight zero are never nearest. This is the limit of
    the Gaussian estimate as the bandwidth tends to zero. With
    ``exclude_self=True`` (``Q`` is ``X``) each point's own row is left out, or
    keeps weight ``self_weight[i]`` where that is positive (frequency weights).

    Returns
    -------
    S : ndarray of shape (m, k)
    den : ndarray of shape (m,)
        Sum of the weights of the nearest points.
    """
    m, n = Q.shape[0], X.shape[0]
    k = V.shape[1]
    w = np.ones(n) if sample_weight is None else _as_float64(sample_weight)
    acc = np.zeros((m, k + 1))
    best = np.full(m, np.inf)
    bq, bn = _tile_shape(m, n, tile_elements)
    for x0 in range(0, n, bn):
        x1 = min(x0 + bn, n)
        Xt = _scaled_rows(X, x0, x1, scale)
        Vx = _weighted_values(V, w, slice(x0, x1))
        for q0 in range(0, m, bq):
            q1 = min(q0 + bq, m)
            Qt = _scaled_rows(Q, q0, q1, scale)
            D = pairwise_distances(Qt, Xt, metric, metric_params)
            if sample_weight is not None:
                D[:, w[x0:x1] == 0] = np.inf
            if exclude_self:
                diag = np.arange(max(q0, x0), min(q1, x1))
                if self_weight is not None:
                    diag = diag[self_weight[diag] <= 0]
                D[diag - q0, diag - x0] = np.inf
            tmin = D.min(axis=1)
            b = best[q0:q1]
            closer = tmin < b
            acc[q0:q1][closer] = 0.0
            b[closer] = tmin[closer]
            ties = (D == b[:, None]) & np.isfinite(b)[:, None]
            acc[q0:q1] += ties.astype(np.float64) @ Vx
    if exclude_self and self_weight is not None:
        # A point that keeps weight is at distance 0, among its own nearest:
        # remove the unit of weight that was left out.
        keep = self_weight > 0
        removed = (w - self_weight)[keep]
        acc[keep, :k] -= removed[:, None] * V[keep]
        acc[keep, k] -= removed
    return acc[:, :k], acc[:, k].copy()
