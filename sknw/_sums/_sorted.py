"""The sorted backend: polynomial kernels in one dimension, exactly, from
sorted points and block-centred prefix moments."""

from math import comb
from typing import NamedTuple

import numpy as np

from .._trace import record
from ._base import (
    _EPS64,
    TILE_ELEMENTS,
    Backend,
    Head,
    MomentSums,
    _scaled_rows,
    _tile_shape,
    _weighted_values,
    fitted_values,
    holds_values,
    keep_ratios,
    leave_own_term_out,
    line_offsets,
    line_origin,
    own_rows,
    per_query,
    removed_entirely,
    unit_blocks,
    within,
)
from ._dense import kernel_sums
from ._parallel import parallel_kernel_sums
from ._traits import (
    LINE_METRICS,
    is_continuous,
    polynomial,
    polynomial_kernel_names,
    sorted_eligible,
)

#: Most queries per chunk of the sorted 1-D path (fewer where their moments
#: would exceed the tile budget, ``working_memory``).
SORTED_CHUNK = 1 << 15

#: Steps an edge of a window takes at most from its rounded position to its
#: exact one (each past a run of equal coordinates; a few suffice).
MAX_EDGE_STEPS = 8

#: Queries of the sorted path whose rounding bound exceeds this share of their
#: weight sum are summed term by term over their window.
SORTED_TOLERANCE = 1e-11

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


class SortedIndex:
    """Training points of one feature, sorted, with block-centred moments.

    In units of the bandwidth, ``t = x / h`` is cut into blocks ``1 / blocks``
    wide; for block ``b`` with centre ``c_b`` the within-block prefix sums of
    ``w v (t - c_b)**i`` for ``i = 0 .. degree`` give, for any run of points
    of the block, the moments from which the kernel sums follow exactly (a
    polynomial kernel expands in these moments). Centred offsets stay within
    half a block; the expansion still cancels where a window holds only
    points near its edge (where the kernel is small but the expansion's terms
    are not), by at most the bound :meth:`sums` returns. Coordinates are
    measured from the median training value (:func:`line_offsets`). Windows,
    ``|x - q| < h`` (or ``<=``), are decided on the offsets; for the boxcar,
    which weighs a point at the edge fully, on the coordinates of the dense
    path in exact arithmetic (:func:`~sknw._sums._base.within`), when the
    queries' are given.
    """

    def __init__(self, X, V, w, kernel, bandwidth, scale, *, powers=0, blocks=1):
        self.origin = line_origin(X)
        x = line_offsets(X, self.origin, scale)
        # Sorted by the coordinates themselves, which sorts the offsets, the
        # units of the bandwidth and the dense path's coordinates alike.
        xd = _scaled_rows(X, 0, X.shape[0], scale)[:, 0]
        order = np.argsort(np.asarray(X[:, 0], dtype=np.float64), kind="stable")
        # Blocks 1 / ``blocks`` of a bandwidth wide: a side of a window
        # spans at most ``blocks + 1`` of them.
        order, t, starts, block_centre, s = unit_blocks(x * (blocks / bandwidth), order)
        self.t, block_centre = t / blocks, block_centre / blocks
        self.runs = int(blocks) + 1
        self.x = x[order]
        # The dense path's coordinates: windows are decided on them, exactly.
        self.xd = xd[order]
        # The sorted position of each training point (its own term's).
        self.rank = np.empty(order.size, dtype=np.intp)
        self.rank[order] = np.arange(order.size)
        self.bandwidth = float(bandwidth)
        self.reach = float(kernel.support) * self.bandwidth
        self.kernel = kernel
        self.coef = np.asarray(polynomial(kernel), dtype=np.float64)
        self.open = not is_continuous(kernel)  # the boxcar: u < 1
        n, k = V.shape
        Vx = _weighted_values(V, w, order)
        self.Vx = Vx
        # Prefix counts of points of positive weight: exact emptiness.
        self.positive = np.r_[0, np.cumsum(Vx[:, k] > 0)]
        lengths = np.diff(np.r_[starts, n])
        self.block_start = np.repeat(starts, lengths)
        self.block_end = np.repeat(np.r_[starts[1:], n], lengths)
        self.centre = np.repeat(block_centre, lengths)
        # Offsets from the block centres, from the offsets x (not from t = x /
        # h, whose rounding grows with |t|): exact to a few units of roundoff
        # of the offset itself; the queries' likewise (see _side).
        self.centre_x = self.centre * self.bandwidth
        s = (self.x - self.centre_x) / self.bandwidth
        # Each point's block's largest |s|: a run's terms are bounded from it.
        self.block_reach = np.repeat(
            np.maximum.reduceat(np.abs(s), starts) if n else s, lengths
        )
        degree = self.coef.size - 1
        self.degree, self.powers = degree, int(powers)
        top = degree + self.powers
        # moments[j, i] = sum over the block of j, up to j, of Vx * s**i.
        spowers = np.empty((n, top + 1))
        spowers[:, 0] = 1.0
        for i in range(1, top + 1):
            np.multiply(spowers[:, i - 1], s, out=spowers[:, i])
        terms = spowers[:, :, None] * Vx[:, None, :]
        self.moments = segmented_cumsum(terms, starts)
        # The polynomials K(u) u**j (j up to ``powers``), each by the
        # derivatives of its coefficients divided by i!: the expansion
        # coefficients of (z + s)**c in powers of s.
        # As matrices: coefficient i of K(u) u**j at z is sum_p z**p M[p, i],
        # M[p, i] = c_{p+i} binom(p + i, i) (c the polynomial's coefficients);
        # the odd i change sign on the left of the query.
        self.polys = []
        for j in range(self.powers + 1):
            coef = np.r_[np.zeros(j), self.coef]
            size = coef.size
            M = np.zeros((size, size))
            for p in range(size):
                for i in range(size - p):
                    M[p, i] = coef[p + i] * _binom(p + i, i)
            left = M * (-1.0) ** np.arange(size)
            self.polys.append((M, left))
        # Bounds of |d/du K(u) u**j| on the support: the offsets u = t - tq
        # carry the rounding of t = x / h and of the queries' (see _side).
        self.slopes = [
            float(
                np.sum(
                    np.arange(self.coef.size + j)
                    * np.abs(np.r_[np.zeros(j), self.coef])
                )
            )
            for j in range(self.powers + 1)
        ]

    def _run(self, a, b):
        """Moments of the points ``a <= j < b`` (one block): (m, powers, k+1)."""
        last = np.maximum(b - 1, 0)
        total = self.moments[last]
        inside = a > self.block_start[last]
        total[inside] -= self.moments[np.maximum(a - 1, 0)[inside]]
        total[b <= a] = 0.0
        return total

    def _side(self, a, b, tq, left, powers=0, xq=None, ratio=None):
        """Sums of ``K(u) u**j`` (``u = |x - q| / h``, ``j`` up to ``powers``)
        over the sorted points ``a <= j < b`` on one side of ``tq``,
        ``(m, powers + 1, k + 1)``, and the magnitudes of the terms of their
        expansion (per unit weight), ``(m, powers + 1)``. With ``ratio``
        (``r >= 1`` per query), the kernel is ``K(r u)``: its coefficients
        in the powers of ``u`` times ``r`` to their degree."""
        m, c = tq.shape[0], self.Vx.shape[1]
        acc = np.zeros((m, powers + 1, c))
        magnitude = np.zeros((m, powers + 1))
        plan = self._plan(powers, ratio)
        # The side's runs, a block at a time from its first point: at most
        # ``runs`` of them, but for rounding at a window of exactly one
        # bandwidth (blocks come from the rounded offsets, windows from exact
        # tests): a side over more blocks has no bound.
        rows = np.arange(m)
        lo = a.copy()
        for _ in range(self.runs):
            rows = rows[lo[rows] < b[rows]]
            if not rows.size:
                break
            start = lo[rows]
            hi = np.minimum(self.block_end[start], b[rows])
            self._add_run(acc, magnitude, rows, start, hi, left=left, xq=xq, plan=plan)
            lo[rows] = hi
        magnitude[lo < b] = np.inf
        return acc, magnitude

    def _plan(self, powers, ratio):
        """What the runs of :meth:`_side` share: the polynomials ``K(u)
        u**j``, ``j <= powers``, side by side (see :attr:`polys`), ``(M,
        M_left)``, each ``(W, J W)`` for ``J = powers + 1`` and ``W`` the
        moments they take; the magnitudes of their coefficients ``(W, J)``;
        the rounding units and slopes of each ``j``; and per query
        (``ratio``) the factors ``r**(i - j)`` of the coefficients ``(m, J,
        W)``, ``r**-j`` of the bounds and ``r**(1 - j)`` of the slopes."""
        J, W = powers + 1, self.degree + powers + 1
        mats = []
        for which in range(2):
            stack = np.zeros((W, J, W))
            for j, poly in enumerate(self.polys[:J]):
                M = poly[which]
                stack[: M.shape[0], j, : M.shape[1]] = M
            mats.append(stack.reshape(W, J * W))
        magnitudes = np.zeros((W, J))
        for j in range(J):
            magnitudes[j : j + self.coef.size, j] = np.abs(self.coef)
        js = np.arange(J)
        units = 2.0 * (self.degree + js) + 10.0
        slopes = 4.0 * np.asarray(self.slopes[:J])
        scales = None
        if ratio is not None:
            r = np.asarray(ratio, dtype=np.float64)[:, None]
            scales = (
                r[:, :, None] ** (np.arange(W)[None, None, :] - js[None, :, None]),
                r**-js,
                r ** (1.0 - js),
            )
        return mats, magnitudes, units, slopes, ratio, scales

    def _add_run(self, acc, magnitude, rows, lo, hi, *, left, xq, plan):
        """Add the sums of a run ``lo <= j < hi`` of one block (non-empty) to
        the ``rows`` of ``acc`` and ``magnitude`` (see :meth:`_side`).

        The bound: the expansion's terms at a point of offset ``s`` from its
        block's centre sum in magnitude to at most the polynomial with the
        magnitudes of the coefficients of ``K(u) u**j`` at ``|z| + |s|``
        (``z`` the centre's offset from the query; in units of the query's
        bandwidth), so to the weight of the block up to the run's last point
        times that polynomial at ``|z|`` plus the block's largest ``|s|``."""
        (M, M_left), magnitudes, units, slopes, ratio, scales = plan
        m, J = rows.size, units.size
        W = M.shape[0]
        moments = self._run(lo, hi)[:, :W]
        last = hi - 1
        # u = delta - s (left) or s - delta (right)
        delta = (xq[rows] - self.centre_x[last]) / self.bandwidth
        z = delta if left else -delta
        reach = self.block_reach[last]
        if ratio is not None:  # K(r u) u**j: powers of r z, then r**(i - j)
            z = z * ratio[rows]
            reach = reach * ratio[rows]
        zp = np.empty((m, W))
        zp[:, 0] = 1.0
        for p in range(1, W):
            np.multiply(zp[:, p - 1], z, out=zp[:, p])
        coefs = (zp @ (M_left if left else M)).reshape(m, J, W)
        if scales is not None:
            coefs *= scales[0][rows]
        acc[rows] += coefs @ moments
        # The magnitudes' polynomial at |z| + reach, in the powers zp now.
        t = np.abs(z) + reach
        for p in range(1, W):
            np.multiply(zp[:, p - 1], t, out=zp[:, p])
        size = zp @ magnitudes
        # The rounding of the offsets s and delta (a few units of roundoff
        # of each), moving each term by the kernel's slope.
        slope = slopes[None, :] * (np.abs(z) + 1.0)[:, None]
        if scales is not None:
            size *= scales[1][rows]
            slope *= scales[2][rows]
        # The run's moments are differences of prefix sums of the block up
        # to its last point: they round relative to the prefix's weight (its
        # |s| at most the block's largest), and to the number of terms summed (in
        # extended precision; see segmented_cumsum). In float64 unit
        # roundoffs: the two prefix sums, the terms, and the products and sum
        # with the coefficients (and the coefficients' own rounding).
        terms = 2.02 * ACCUMULATION_ROUNDOFF * (last - self.block_start[last] + 1)
        weight = self.moments[last, 0, -1]
        magnitude[rows] += (size * (units + terms[:, None]) + slope) * weight[:, None]

    def _windows(self, tq, xq=None, strict=None, qd=None, reach=None):
        """Index bounds of the points within reach of the queries ``tq``
        (offsets ``xq``, by default ``tq`` times the bandwidth): open
        (``|x - q| < h``) for the boxcar or with ``strict``, else closed.
        With ``qd`` (the queries in the dense path's coordinates), the
        boxcar's are decided on those coordinates in exact arithmetic
        (:func:`within`), as the definition has it; else on the offsets.
        ``reach``: one per query (per-query bandwidths), else the index's."""
        xq = tq * self.bandwidth if xq is None else xq
        strict = self.open if strict is None else strict
        reach = self.reach if reach is None else reach
        lo = np.searchsorted(self.x, xq - reach, side="right" if strict else "left")
        hi = np.searchsorted(self.x, xq + reach, side="left" if strict else "right")
        if qd is not None and self.open:
            # Only the boxcar weighs a point at the edge: for the others an
            # edge point is of weight about 0 either way.
            lo = self._exact_edge(lo, qd, strict, True, reach)
            hi = self._exact_edge(hi, qd, strict, False, reach)
        return lo, hi

    def _exact_edge(self, edge, qd, strict, lower, reach):
        """Move window edges (indices into the sorted points) to where the
        exact test :func:`within` puts them, a run of equal coordinates at a
        time (the rounding of ``xq -+ reach`` moves them by a few points)."""
        xd, n = self.xd, self.xd.size
        edge = edge.copy()
        reach = np.broadcast_to(reach, edge.shape)
        for _ in range(MAX_EDGE_STEPS):
            # The point just outside the edge, and the one just inside.
            out = np.clip(edge - 1 if lower else edge, 0, max(n - 1, 0))
            inn = np.clip(edge if lower else edge - 1, 0, max(n - 1, 0))
            has_out = (edge > 0) if lower else (edge < n)
            has_in = (edge < n) if lower else (edge > 0)
            grow = has_out & within(qd, xd[out], reach, strict)
            toward = (xd[inn] <= qd) if lower else (xd[inn] >= qd)
            shrink = ~grow & has_in & toward & ~within(qd, xd[inn], reach, strict)
            if not (grow.any() or shrink.any()):
                return edge
            side_grow, side_shrink = ("left", "right") if lower else ("right", "left")
            edge[grow] = np.searchsorted(xd, xd[out[grow]], side=side_grow)
            edge[shrink] = np.searchsorted(xd, xd[inn[shrink]], side=side_shrink)
        raise RuntimeError("window edges did not settle")  # pragma: no cover

    def exact_sums(
        self,
        tq,
        budget=TILE_ELEMENTS,
        xq=None,
        own=None,
        keep=None,
        qd=None,
        ratio=None,
    ):
        """Kernel sums ``[S, den]`` at queries ``tq`` (offsets ``xq``), term by
        term over each window's points (the kernel object evaluated at each
        offset). With ``own`` (the training index of each query), each
        query's own term is scaled by its ``keep`` ratio (None: left out).
        ``ratio``: per-query bandwidths, the index's over each query's."""
        xq = tq * self.bandwidth if xq is None else xq
        reach = None if ratio is None else self.reach / ratio
        lo, hi = self._windows(tq, xq, qd=qd, reach=reach)
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
                # From the offsets (exact where close), as the dense path.
                u = np.abs(self.x[idx] - np.repeat(xq[a:b], counts)) / self.bandwidth
                if ratio is not None:
                    u = u * np.repeat(ratio[a:b], counts)
                if self.open:  # inside the window, whatever the rounding of u
                    u = np.minimum(u, np.nextafter(1.0, 0.0))
                terms = self.kernel(u)[:, None] * self.Vx[idx]
                if own is not None:
                    query = np.repeat(rows, counts)
                    mine = idx == self.rank[own[query]]
                    ratio = 0.0 if keep is None else keep[own[query[mine]]]
                    terms[mine] *= np.reshape(ratio, (-1, 1))
                nonzero = counts > 0
                out[rows[nonzero]] = np.add.reduceat(terms, first[nonzero], axis=0)
            a = b
        return out

    def exact_moments(self, tq, powers, budget=TILE_ELEMENTS, xq=None, ratio=None):
        """:meth:`moment_sums` term by term over each window's points (the
        kernel object at each offset ``u = (x - q) / h``, signed): no
        expansion, so no cancellation; the sums accumulate in
        ``np.longdouble`` and the bound is that of such sums (see
        :func:`segmented_cumsum`) and of the terms' own rounding, relative to
        their magnitudes."""
        xq = tq * self.bandwidth if xq is None else xq
        reach = None if ratio is None else self.reach / ratio
        lo, hi = self._windows(tq, xq, reach=reach)
        size = np.maximum(hi - lo, 0)
        c = self.Vx.shape[1]
        acc = np.zeros((tq.size, powers + 1, c))
        bound = np.zeros((tq.size, powers + 1))
        ends = np.cumsum(size)
        width = (powers + 1) * (c + 1)
        a = 0
        while a < tq.size:
            base = ends[a] - size[a]
            b = max(a + 1, int(np.searchsorted(ends, base + budget // width, "right")))
            rows, counts = np.arange(a, b), size[a:b]
            total = int(counts.sum())
            if total:
                first = np.cumsum(counts) - counts
                idx = np.arange(total) - np.repeat(first - lo[a:b], counts)
                u = (self.x[idx] - np.repeat(xq[a:b], counts)) / self.bandwidth
                if ratio is not None:
                    u = u * np.repeat(ratio[a:b], counts)
                K = self.kernel(np.abs(u))
                nonzero = counts > 0
                units = 2.02 * ACCUMULATION_ROUNDOFF * counts[nonzero] + 8.0
                for j in range(powers + 1):
                    kj = K * u**j
                    terms = kj[:, None] * self.Vx[idx]
                    acc[rows[nonzero], j] = np.add.reduceat(
                        terms, first[nonzero], axis=0, dtype=np.longdouble
                    )
                    magnitude = np.add.reduceat(
                        np.abs(kj) * self.Vx[idx, -1], first[nonzero]
                    )
                    bound[rows[nonzero], j] = units * _EPS64 * magnitude
            a = b
        return acc, bound

    def sums(self, tq, xq=None, qd=None):
        """Kernel-weighted sums ``[S, den]``, the number of points of positive
        weight inside each window and error bounds at queries ``tq`` (offsets
        ``xq``; sums by the moment expansion; the bound, on the error of the
        weight sums and, times the largest |value|, of the others, is from the
        magnitudes of the expansion's terms)."""
        acc, inside, bound = self.moment_sums(tq, xq, 0, qd)
        return acc[:, 0], inside, bound[:, 0]

    def moment_sums(self, tq, xq=None, powers=None, qd=None, ratio=None):
        """:meth:`sums` of ``K(u) u**j [v, 1]`` for ``j = 0 .. powers`` (by
        default all the index holds), ``u = (x - q) / h`` signed: sums ``(m,
        powers + 1, k + 1)``, counts ``(m,)`` and bounds ``(m, powers + 1)``.
        ``ratio`` (per-query bandwidths ``h_q``): the index's bandwidth over
        each query's, at least 1 for a bound; ``u = (x - q) / h_q``."""
        powers = self.powers if powers is None else powers
        xq = tq * self.bandwidth if xq is None else xq
        reach = None if ratio is None else self.reach / ratio
        lo, hi = self._windows(tq, xq, qd=qd, reach=reach)
        # The sides of the query, from the offsets (as the windows).
        mid = np.clip(np.searchsorted(self.x, xq, side="right"), lo, hi)
        left, left_size = self._side(lo, mid, tq, True, powers, xq, ratio)
        right, right_size = self._side(mid, hi, tq, False, powers, xq, ratio)
        bound = _EPS64 * (left_size + right_size)
        # Left of the query, u = (x - q) / h is negative: (-1)**j.
        left[:, 1::2] = -left[:, 1::2]
        # A window is empty when no point of positive weight lies strictly
        # inside the support (points at u = 1 weigh 0; the boxcar's windows
        # are open already).
        inner_lo, inner_hi = (
            (lo, hi) if self.open else self._windows(tq, xq, True, qd, reach)
        )
        inner_hi = np.maximum(inner_hi, inner_lo)
        inside = self.positive[inner_hi] - self.positive[inner_lo]
        sums = left + right
        if ratio is not None:  # powers of u in the index's units to h_q's
            convert = ratio[:, None] ** np.arange(powers + 1)
            sums *= convert[:, :, None]
            bound = bound * convert
        return sums, inside, bound


def _binom(n, k):
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
    **params,
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

    With ``exclude_self`` (leave-one-out: the queries are training points,
    see :func:`kernel_sums`), each query's own term, ``K(0)`` times the
    weight it leaves out, is subtracted from its sums, and the bound (with
    the rounding of that subtraction) is checked against the weight that
    remains: a query whose own term dominates its sums is summed term by term
    without it.
    """
    (head,) = heads
    m, k = Q.shape[0], V.shape[1]
    run = _sorted_pass(index, Q, V, head, 0, scale, tile_elements, **params)
    tq, xq, qd, order, ratio = run.tq, run.xq, run.qd, run.order, run.ratio
    acc, inside, bound = run.sums, run.counts, run.bound
    acc, bound = acc[:, 0], bound[:, 0]
    redo = order[
        (inside > 0)[order] & ~(bound[order] <= SORTED_TOLERANCE * acc[order, k])
    ]
    if redo.size:
        own = own_rows(m, params)
        own = None if own is None else own[redo]
        # The queries summed term by term (``own``: their training rows).
        record("sorted_term_by_term", n_queries=redo.size, own=own)
        keep = keep_ratios(
            params.get("self_weight"), params.get("sample_weight"), X.shape[0]
        )
        acc[redo] = index.exact_sums(
            tq[redo],
            tile_elements,
            xq[redo],
            own=own,
            keep=keep,
            qd=qd[redo],
            ratio=None if ratio is None else ratio[redo],
        )
    acc[~(inside > 0)] = 0.0
    den = acc[:, k].copy()
    M = np.where(den != 0, 0.0, -np.inf)
    return [(acc[:, :k], den, M)]


class _SortedPass(NamedTuple):
    """The moments of :func:`_sorted_pass` at each query: ``sums``,
    ``counts`` and ``bound`` as :meth:`SortedIndex.moment_sums` gives them;
    the queries ``tq`` in bandwidths and ``xq`` in the scaled coordinates
    from the index's origin, ``qd`` in the dense path's coordinates;
    ``order`` sorts the queries; ``ratio`` the index's bandwidth over each
    query's for a per-query head, else None."""

    sums: np.ndarray
    counts: np.ndarray
    bound: np.ndarray
    tq: np.ndarray
    xq: np.ndarray
    qd: np.ndarray
    order: np.ndarray
    ratio: np.ndarray


def _sorted_pass(
    index, Q, V, head, powers, scale=None, tile_elements=TILE_ELEMENTS, **params
):
    """The moments up to ``powers`` at every query by the expansion, with
    each query's own term left out for leave-one-out sums (``params``): a
    :class:`_SortedPass`."""
    m, k = Q.shape[0], V.shape[1]
    acc = np.zeros((m, powers + 1, k + 1))
    inside = np.zeros(m, dtype=np.intp)
    bound = np.zeros((m, powers + 1))
    xq_all = line_offsets(Q, index.origin, scale)
    ratio = None
    if per_query(head):
        ratio = index.bandwidth / np.asarray(head.divisor, np.float64).reshape(-1)
        tq_all = xq_all / index.bandwidth
    else:
        tq_all = xq_all / head.divisor
    qd_all = _scaled_rows(Q, 0, m, scale)[:, 0]
    # Sorted queries make the binary searches walk the index in order.
    order = np.argsort(tq_all)
    # Each query's block moments are (degree + powers + 1) x (k + 1) numbers,
    # a few times, and its sums (powers + 1) x (k + 1).
    width = (4 * (index.degree + powers + 1) + powers + 1) * (k + 1)
    chunk = min(SORTED_CHUNK, _tile_shape(m, width, tile_elements, full_rows=True)[0])
    for q0 in range(0, m, chunk):
        rows = order[q0 : q0 + chunk]
        acc[rows], inside[rows], bound[rows] = index.moment_sums(
            tq_all[rows],
            xq_all[rows],
            powers,
            qd_all[rows],
            None if ratio is None else ratio[rows],
        )
    own = own_rows(m, params)
    if own is not None:
        leave_own_term_out(acc, bound, own, V, index.coef[0], **params)
        inside -= removed_entirely(
            own, params.get("sample_weight"), params.get("self_weight")
        )
    return _SortedPass(
        sums=acc,
        counts=inside,
        bound=bound,
        tq=tq_all,
        xq=xq_all,
        qd=qd_all,
        order=order,
        ratio=ratio,
    )


class SortedBackend(Backend):
    """Polynomial kernels in one dimension, exactly, in ``O((n + m) log n)``;
    under ``"auto"`` from :data:`~sknw._sums._dispatcher.AUTO_MIN_SAMPLES`
    training points. The index holds the fitted values and kernel: it serves
    those only."""

    name = "sorted"
    fixed_values = True
    leave_one_out = True
    local_moments = True
    per_query = True
    exact_moments = True

    def why_not(self, kernel, metric, metric_params, n_features):
        if sorted_eligible(kernel, metric, metric_params, n_features):
            return None
        return (
            f"algorithm={self.name!r} needs one feature, a kernel that is a "
            f"polynomial on its support ({', '.join(polynomial_kernel_names())}; "
            f"not {kernel!r}) and a metric that is |x - q| in one dimension "
            f"{LINE_METRICS}, not {metric!r}."
        )

    def fit(self, request):
        if request.auto and not request.large:
            return None
        if per_query(request.head):
            return self._fit_ladder(request)
        V, w = request.values()
        head = request.head
        index = SortedIndex(
            request.X,
            V,
            w,
            head.kernel,
            head.divisor,
            request.scale,
            powers=request.powers,
        )
        index.key = (fitted_values(index, request, V, w), head)
        return index

    def _fit_ladder(self, request):
        """A :class:`SortedLadder` for per-query bandwidths of about the
        request head's (those of the training points); continuous kernels
        only (a jump at the edge would be decided on other coordinates than
        the neighbours' distances)."""
        kernel = request.head.kernel
        if not is_continuous(kernel):
            if request.auto:
                return None
            raise ValueError(
                f"algorithm={self.name!r} serves per-query bandwidths (span) "
                f"for kernels continuous at their edge, not {kernel!r}."
            )
        V, w = request.values()
        ladder = SortedLadder(
            request.X,
            V,
            w,
            kernel,
            request.head.divisor,
            request.scale,
            request.powers,
        )
        ladder.key = (fitted_values(ladder, request, V, w), kernel)
        return ladder

    def serves(self, index, V, heads, sample_weight):
        if len(heads) != 1:
            return False
        (head,) = heads
        if isinstance(index, SortedLadder):
            same = per_query(head) and index.key[1] == head.kernel
        else:
            same = not per_query(head) and index.key[1] == head
        return same and holds_values(index, index.key[0], V, sample_weight)

    def sums(self, index, Q, X, V, heads, *, n_jobs=None, **params):
        self.check_params(params)
        sums = ladder_sums if isinstance(index, SortedLadder) else sorted_kernel_sums
        return parallel_kernel_sums(
            Q,
            X,
            V,
            heads,
            n_jobs=n_jobs,
            sums=sums,
            index=index,
            **params,
        )

    def moment_sums(self, index, Q, X, V, head, powers, exact=False, **params):
        self.check_params(params)
        if exact:  # term by term over each window (no leave-one-out)
            return _exact_moment_sums(index, Q, V, head, powers, **params)
        if isinstance(index, SortedLadder):
            return index.moment_sums(Q, V, head, powers, **params)
        run = _sorted_pass(index, Q, V, head, powers, **params)
        acc, inside, bound = run.sums, run.counts, run.bound
        acc[inside <= 0] = 0.0
        unit = head.divisor if per_query(head) else float(head.divisor)
        return MomentSums(acc, bound, inside, unit)


#: Ratio of the bandwidths of consecutive indexes of a :class:`SortedLadder`:
#: a query's kernel ``K(r u)`` has ``1 <= r < LADDER_FACTOR``.
LADDER_FACTOR = 4.0

#: Blocks per bandwidth ``H`` of the indexes of a :class:`SortedLadder`. The
#: expansion's terms are bounded by the kernel's polynomial with the
#: magnitudes of its coefficients at ``|z| + |r s|``, at most ``1 + r /
#: blocks`` (``z`` a block centre's offset from the query, ``s`` a point's
#: from its centre, in units of ``h = H / r``): 1.5 here, against 2.4 for
#: one block at a factor sqrt(2), which bounds tricube terms 40 times
#: tighter, at up to ``blocks + 1`` runs per side of a window and half the
#: indexes. At n = 1e5 (span 0.3, three robustness iterations), the queries
#: beyond the bound fell from 3303 to 4 and the time 2.5-fold.
LADDER_BLOCKS = 8

#: Most indexes of a :class:`SortedLadder` (bandwidths down to
#: ``LADDER_FACTOR**-15`` of the largest; queries of smaller ones take the
#: smallest, whose bound the windowed and exact sums back).
LADDER_LEVELS = 16

#: Queries whose bandwidth is below the smallest index's by more than this
#: factor (a bandwidth of 0) take the exact sums.
LADDER_MAX_RATIO = 1e6


class SortedLadder:
    """Sorted indexes for per-query bandwidths (nearest-neighbour spans): at
    bandwidths ``H_j = H_0 / f**j`` (``f`` :data:`LADDER_FACTOR`) from the
    largest of ``bandwidths`` (those of the training points) down to their
    smallest; a query of bandwidth ``h`` takes the index of the smallest
    ``H_j >= h`` (within a factor ``f``),
    whose kernel ``K(r u)``, ``r = H_j / h``, expands in the same moments
    (:meth:`SortedIndex.moment_sums`)."""

    def __init__(self, X, V, w, kernel, bandwidths, scale, powers=0):
        h = np.asarray(bandwidths, dtype=np.float64).reshape(-1)
        h = h[np.isfinite(h) & (h > 0)]
        top = float(np.max(h)) if h.size else 1.0
        low = float(np.min(h)) if h.size else 1.0
        steps = np.log(top / low) / np.log(LADDER_FACTOR)
        levels = min(LADDER_LEVELS, int(np.floor(steps)) + 1)
        self.top = top
        self.indexes = [
            SortedIndex(
                X,
                V,
                w,
                kernel,
                top * LADDER_FACTOR**-j,
                scale,
                powers=powers,
                blocks=LADDER_BLOCKS,
            )
            for j in range(levels)
        ]

    def levels(self, h):
        """The index of each bandwidth ``h``: the smallest ``H_j >= h``."""
        with np.errstate(divide="ignore", invalid="ignore"):
            j = np.floor(np.log(self.top / h) / np.log(LADDER_FACTOR))
        j = np.where(np.isfinite(j), j, 0)
        return np.clip(j, 0, len(self.indexes) - 1).astype(np.intp)

    def split(self, head, m, params):
        """``(rows, index, head, params)`` of the queries of each level; the
        index is None for queries whose bandwidth is below the smallest's
        :data:`LADDER_MAX_RATIO`-th part (a bandwidth of 0: at least ``k``
        points at the query), which the exact sums serve."""
        h = np.asarray(head.divisor, dtype=np.float64).reshape(-1)
        level = self.levels(h)
        with np.errstate(divide="ignore", over="ignore"):
            ratio = self.top * LADDER_FACTOR ** -level.astype(float) / h
        level = np.where(ratio <= LADDER_MAX_RATIO, level, -1)
        own = own_rows(m, params)
        for j in np.unique(level):
            rows = np.flatnonzero(level == j)
            p = params
            if own is not None:
                p = {**params, "self_index": own[rows], "self_offset": 0}
            index = self.indexes[j] if j >= 0 else None
            yield rows, index, Head(head.kernel, h[rows]), p

    def moment_sums(self, Q, V, head, powers, **params):
        """:class:`MomentSums` with one unit per query (its bandwidth)."""
        m, k = Q.shape[0], V.shape[1]
        acc = np.zeros((m, powers + 1, k + 1))
        bound = np.zeros((m, powers + 1))
        inside = np.zeros(m, dtype=np.intp)
        for rows, index, sub, p in self.split(head, m, params):
            if index is None:  # not served: the caller's exact path
                bound[rows], inside[rows] = np.inf, 1
                continue
            run = _sorted_pass(index, Q[rows], V, sub, powers, **p)
            acc[rows], inside[rows], bound[rows] = run.sums, run.counts, run.bound
        acc[inside <= 0] = 0.0
        return MomentSums(acc, bound, inside, np.asarray(head.divisor).reshape(-1))


def ladder_sums(Q, X, V, heads, *, index, **params):
    """:func:`sorted_kernel_sums` of a per-query head from a
    :class:`SortedLadder`, each query by the index of its level."""
    (head,) = heads
    m, k = Q.shape[0], V.shape[1]
    S, den, M = np.zeros((m, k)), np.zeros(m), np.zeros(m)
    for rows, sub_index, sub, p in index.split(head, m, params):
        if sub_index is None:  # the exact sums
            ((S[rows], den[rows], M[rows]),) = kernel_sums(Q[rows], X, V, [sub], **p)
            continue
        ((S[rows], den[rows], M[rows]),) = sorted_kernel_sums(
            Q[rows], X, V, [sub], index=sub_index, **p
        )
    return [(S, den, M)]


def _exact_moment_sums(index, Q, V, head, powers, scale=None, **params):
    """:class:`MomentSums` of the queries ``Q`` term by term over their
    windows (:meth:`SortedIndex.exact_moments`; a ladder's queries by the
    index of their level)."""
    if params.get("exclude_self"):
        raise ValueError("exact windowed moments do not leave points out")
    m, k = Q.shape[0], V.shape[1]
    per = per_query(head)
    h = np.asarray(head.divisor, np.float64).reshape(-1) if per else None
    if isinstance(index, SortedLadder):
        parts = [(rows, sub) for rows, sub, _, _ in index.split(head, m, params)]
    else:
        parts = [(np.arange(m), index)]
    acc = np.zeros((m, powers + 1, k + 1))
    bound = np.zeros((m, powers + 1))
    budget = params.get("tile_elements", TILE_ELEMENTS)
    for rows, sub in parts:
        if sub is None:  # not served: the caller's exact path
            bound[rows] = np.inf
            continue
        xq = line_offsets(Q[rows], sub.origin, scale)
        ratio = None if h is None else sub.bandwidth / h[rows]
        acc[rows], bound[rows] = sub.exact_moments(
            xq / sub.bandwidth, powers, budget, xq, ratio
        )
    return MomentSums(acc, bound, None, h if per else float(head.divisor))
