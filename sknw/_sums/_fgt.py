"""Gaussian sums in one dimension by the fast Gauss transform, to 1e-12.

Part of the computational core (see :mod:`sknw._sums`): returns the same
``(S, den, M)`` triples as :func:`~sknw._sums.kernel_sums`, for a Gaussian
head and one feature: each query's weight sum within a relative
:data:`TOLERANCE` of the exact one, and its other sums within
:data:`TOLERANCE` times the weight sum and the largest ``|value|``, checked per
query.

In units of the kernel's standard deviation (from the median training value,
see :func:`~sknw._sums.line_offsets`), the sorted training points are cut
into the boxes of a grid about one unit wide (:func:`grid_boxes`: the
standard deviation rounded down to :data:`WIDTH_BITS` bits, so that the box
centres are exact), of centre ``c`` and radius :data:`RADIUS`
(:math:`\rho`). For a
point at ``t = c + u`` and a query at ``s = c + d``, the Hermite expansion of
Greengard and Strain (1991) separates ``u`` from ``d``:

.. math::

    e^{-(d - u)^2 / 2} = \\sum_{k \\ge 0} \\frac{u^k}{k!} \\,
    \\mathrm{He}_k(d)\\, e^{-d^2 / 2},

with :math:`\\mathrm{He}_k` the probabilists' Hermite polynomials. Truncated
after :data:`N_TERMS` (:math:`P`) terms, a box contributes its moments
:math:`A_k = \\sum_j c_j u_j^k / k!` (computed once, at fit time) times
:math:`P` Hermite functions of ``d``: ``O(n P)`` at fit time, and ``O(P)`` per
query and box within :data:`REACH` standard deviations at predict time,
instead of ``O(n)`` per query.

**Error bound.** Per unit of weight in a box at offset ``d``:

- the truncated terms: by Cramér's inequality,
  :math:`|\\mathrm{He}_k(d)| e^{-d^2/2} \\le 1.0865 \\sqrt{k!}\\, e^{-d^2/4}`,
  so they sum to at most :data:`TRUNCATION` :math:`\\cdot e^{-d^2/4}`;
- the rounding of the moments' products with the Hermite functions (computed
  by their three-term recurrence, measured within 65 units of roundoff of
  their envelope): :data:`ROUNDING` times the sum of the terms' magnitudes,
  :math:`\\sum_k \\rho^k |\\mathrm{He}_k(d)| e^{-d^2/2} / k! \\le
  e^{\\rho |d| + \\rho^2 / 2 - d^2 / 2}`;
- boxes beyond the reach (:math:`R`, :data:`REACH`): at most
  :math:`e^{-(R - \\rho)^2 / 2}` per unit of weight, all of them.

**Local expansions.** Sorted queries in runs of boxes of the same grid that
hold :data:`LOCAL_QUERIES` per box or more take each source box's expansion
translated into a Taylor expansion about their box's centre, ``d = x +
delta``:
:math:`\\mathrm{He}_m(x + \\delta) e^{-(x + \\delta)^2/2} = \\sum_l
(-\\delta)^l / l! \\, \\mathrm{He}_{m + l}(x) e^{-x^2/2}`, of
:data:`N_LOCAL` terms: ``O(P)`` per query instead of ``O(P)`` per query and
box. Boxes the same number of boxes apart share the translation's
coefficients, so that the Taylor coefficients of a run of target boxes are
one matrix product with the source boxes' moments laid out on the grid.
Cramér's inequality bounds the Taylor terms beyond :data:`N_LOCAL` and
the magnitudes of all of them, whose rounding :data:`LOCAL_ROUNDING` bounds;
the Hermite terms beyond :data:`N_TERMS` are bounded at the box's nearest
query.

Summed over the boxes with their weights, this bounds the error of each
query's sums (of the weights, and of the values in units of the largest
:math:`|v|`). Queries where it exceeds :data:`TOLERANCE` times their weight
sum (queries beyond the data, where the Hermite terms cancel) are summed
exactly by :func:`~sknw._sums.kernel_sums`. The moments' own summation
rounds like the dense sums do.
"""

import math

import numpy as np
from scipy.special import eval_hermitenorm

from .._trace import Tunable, record
from ._base import (
    _EPS64,
    TILE_ELEMENTS,
    _weighted_values,
    leave_own_term_out,
    line_offsets,
    line_origin,
    own_rows,
    placed_rows,
    shared_value,
    working_elements,
)
from ._dense import exact_rows
from ._fgt_terms import (
    _TAYLOR_SIGNS,
    LOCAL_ROUNDING,
    N_LOCAL,
    N_TERMS,
    RADIUS,
    REACH,
    ROUNDING,
    SKIPPED,
    TRUNCATION,
    _local_bounds,
    _power_bounds,
    _power_terms,
)
from ._traits import LINE_METRICS, gaussian_eligible, gaussian_sigma

#: Significant bits of the boxes' width (:func:`box_width`): box centres
#: ``(i + 1/2) w`` are exact for ``|i| < 2**31``, and boxes are narrower than
#: a standard deviation by at most ``2**-19`` of it.
WIDTH_BITS = 20
#: Relative error allowed for each query's sums; beyond it, exact sums.
TOLERANCE = 1e-12


#: The orders ``1 .. N_TERMS - 1`` of the Hermite moments, as divisors.
_ORDERS = np.arange(1.0, N_TERMS)
#: ``algorithm="auto"`` takes the transform from this many training points per
#: box (on average); with fewer, a box's ``N_TERMS`` terms cost more than its
#: points do in the dense sums.
MIN_POINTS_PER_BOX = 8


def box_width(sigma):
    """The width of the boxes, in offsets: ``sigma`` rounded down to
    :data:`WIDTH_BITS` significant bits (0 where that underflows)."""
    mantissa, exponent = math.frexp(sigma)
    return math.ldexp(math.floor(mantissa * 2.0**WIDTH_BITS), exponent - WIDTH_BITS)


def grid_boxes(x, sigma, order=None):
    """The offsets ``x``, sorted and cut into the boxes of a grid of width
    :func:`box_width`: box ``i`` holds ``i w <= x < (i + 1) w``, of centre
    ``(i + 1/2) w``, exact in floating point for ``|i| < 2**31``, so that the
    offset between two boxes depends on their distance in boxes only.

    Returns ``(order, cells, starts, centre_x, offsets)``: the sorting order,
    each non-empty box's ``i``, the index of its first sorted point, its
    centre and each sorted point's offset from its box's centre in units of
    ``sigma`` (``(x - c) / sigma``: the subtraction of nearby floats is exact
    to a unit of roundoff of the box width). None where the boxes cannot be
    formed: a box beyond ``2**31``, an offset not finite or beyond
    :data:`RADIUS`. ``order``: an order that sorts ``x`` (by default
    computed; ``slice(None)`` where ``x`` is sorted).
    """
    width = box_width(sigma)
    order = np.argsort(x, kind="stable") if order is None else order
    xs = x[order]
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        cell = np.floor(xs / width) if width > 0.0 else xs + np.inf
    # Sorted: the cells are too, and the largest in magnitude is at an end.
    if xs.size and not max(abs(cell[0]), abs(cell[-1])) < 2.0**31:
        return None
    starts = np.zeros(min(xs.size, 1), dtype=np.intp)
    if xs.size > 1:
        starts = np.append(starts, np.flatnonzero(cell[1:] != cell[:-1]) + 1)
    cells = cell[starts]
    centre_x = (cells + 0.5) * width
    # Each point's box centre, (cell + 1/2) w, as centre_x holds it.
    offsets = (xs - (cell + 0.5) * width) / sigma
    if not np.max(np.abs(offsets), initial=0.0) <= RADIUS:
        return None
    return order, cells, starts, centre_x, offsets


def _box_moments(offsets, starts, Vx, unit_weights, tile_elements=TILE_ELEMENTS):
    """The Hermite moments ``sum u**k / k! [w v, w]`` of each box (``starts``:
    the index of its first point, in the sorted order of ``offsets`` and
    ``Vx``), ``(N_TERMS, boxes, columns)``. With ``unit_weights`` the last
    column of ``Vx`` is ones, and its products are the powers themselves."""
    n, c = Vx.shape
    moments = np.zeros((N_TERMS, starts.size, c))
    columns = np.ascontiguousarray(Vx.T)  # one value at a time: contiguous
    chunk = max(1, tile_elements // (2 * N_TERMS))
    powers = np.empty((N_TERMS, min(chunk, n)))
    terms = np.empty_like(powers)
    for a in range(0, n, chunk):
        b = min(a + chunk, n)
        p, t = powers[:, : b - a], terms[:, : b - a]
        p[0] = 1.0  # u**k / k!, as products of u / k
        np.divide(offsets[a:b], _ORDERS[:, None], out=p[1:])
        for k in range(2, N_TERMS):
            p[k] *= p[k - 1]
        # The boxes of points a .. b - 1, from the first (which may begin
        # before a), and where each begins in the chunk.
        first_box = int(np.searchsorted(starts, a, side="right")) - 1
        end_box = int(np.searchsorted(starts, b, side="left"))
        begins = np.maximum(starts[first_box:end_box] - a, 0)
        for j in range(c):
            unit = unit_weights and j == c - 1
            products = p if unit else np.multiply(p, columns[j, a:b], out=t)
            moments[:, first_box:end_box, j] += np.add.reduceat(
                products, begins, axis=1
            )
    return moments


class GaussIndex:
    """Hermite moments of boxes of sorted training points (one feature).

    Parameters
    ----------
    X : ndarray of shape (n, 1)
        Training points.
    V : ndarray of shape (n, k)
        Values to average.
    w : ndarray of shape (n,) or None
        Sample weights.
    head : Head
        A Gaussian head (``exp(a (d / divisor)**2)``).
    scale : ndarray of shape (1,) or None
        Per-feature bandwidth dividing the coordinates.
    tile_elements : int
        Elements of the moments' working buffer.
    min_points_per_box : float
        The moments are computed only if the boxes hold this many training
        points on average (``built``).
    order : ndarray of shape (n,) or None
        An order that sorts the training points (by default computed).
    origin : float or None
        The offset the coordinates are measured from (by default
        :func:`~sknw._sums.line_origin`).

    Attributes
    ----------
    usable : bool
        Whether the boxes could be formed.
    points_per_box : float
        Training points per (non-empty) box.
    built : bool
        Whether the moments were computed; if not, every query is summed
        exactly.
    order : ndarray of shape (n,)
        The order that sorts the training points (where ``built``).
    """

    def __init__(
        self,
        X,
        V,
        w,
        head,
        scale,
        tile_elements=TILE_ELEMENTS,
        min_points_per_box=0,
        order=None,
        origin=None,
    ):
        self.sigma = gaussian_sigma(head)
        self.n_values = V.shape[1]
        self.origin = line_origin(X) if origin is None else origin
        with np.errstate(over="ignore", invalid="ignore"):
            x = line_offsets(X, self.origin, scale)
        finite = np.all(np.isfinite(x))
        boxes = grid_boxes(x, self.sigma, order) if finite else None
        self.usable = boxes is not None
        self.points_per_box = 0.0 if boxes is None else x.size / max(1, boxes[2].size)
        self.built = self.usable and self.points_per_box >= min_points_per_box
        if not self.built:
            return
        order, self.cells, starts, self.centre_x, offsets = boxes
        self.order = order
        self.width = box_width(self.sigma)
        # The box centres in standard deviations, to find the boxes within
        # reach; a query's distance to a box is taken from the offsets.
        self.centre = self.centre_x / self.sigma
        # The translations of the local expansions, per power (_translations).
        self._tables = {}
        Vx = _weighted_values(V, w, order)
        self.moments = _box_moments(offsets, starts, Vx, w is None, tile_elements)
        # Per-box bounds use the weights: the moments of order 0 of the last
        # column.
        self.box_weight = self.moments[0, :, -1]
        self.total_weight = float(self.box_weight.sum())

    def sums(self, s, tile_elements=TILE_ELEMENTS, q=None):
        """Sums ``[S, den]`` at sorted queries ``s`` (in standard deviations;
        ``q``: their offsets, by default ``s`` times the standard deviation),
        and the bound of their error."""
        out, bound = self.moment_sums(s, tile_elements, 0, q)
        return out[:, 0], bound[:, 0]

    def moment_sums(self, s, tile_elements=TILE_ELEMENTS, powers=0, q=None, local=True):
        """Sums of ``K u**j [v, 1]`` for ``j = 0 .. powers`` at sorted queries
        ``s`` (offsets ``q``), ``u = t - s`` the offset of a point from the
        query (in standard deviations): ``(m, powers + 1, k + 1)``, and the
        bounds of their errors, per unit of the largest ``|v|`` (``(m, powers
        + 1)``)."""
        q = s * self.sigma if q is None else q
        m, c = s.size, self.moments.shape[2]
        out = np.zeros((m, powers + 1, c))
        skipped = SKIPPED * (REACH - RADIUS) ** np.arange(powers + 1)
        bound = np.empty((m, powers + 1))
        bound[:] = skipped * self.total_weight
        # Runs of boxes holding enough sorted queries take the boxes' local
        # expansions; the other queries the expansions per query.
        rest = (
            self._local_runs(s, q, out, bound, powers, tile_elements) if local else None
        )
        if rest is not None:
            if rest.size:
                sub_out, sub_bound = self.moment_sums(
                    s[rest], tile_elements, powers, q[rest], local=False
                )
                out[rest], bound[rest] = sub_out, sub_bound
            return out, bound
        lo = np.searchsorted(self.centre, s - REACH, side="left")
        hi = np.searchsorted(self.centre, s + REACH, side="right")
        budget = max(1, 2 * tile_elements // (N_TERMS + powers))
        a = 0
        while a < m:
            step = max(1, budget // max(c, int(hi[a] - lo[a])))
            e = min(m, a + step)
            while e - a > 1 and (e - a) * max(c, hi[e - 1] - lo[a]) > budget:
                e = a + (e - a) // 2
            b0, b1 = int(lo[a]), int(hi[e - 1])
            if b1 > b0:
                self._block(s[a:e], q[a:e], b0, b1, out[a:e], bound[a:e], powers)
            a = e
        return out, bound

    def _local_runs(self, s, q, out, bound, powers, tile_elements=TILE_ELEMENTS):
        """The sums of the sorted queries in runs of boxes of the grid that
        hold at least :data:`LOCAL_QUERIES` queries per box and
        :data:`LOCAL_RUN` in all, by the boxes' local (Taylor) expansions
        (:meth:`_local_boxes`), a run's buffers within
        :data:`LOCAL_RUN_TILES` tiles; returns the indices of the other
        queries (None: no run holds enough)."""
        if not s.size:
            return None
        with np.errstate(invalid="ignore", over="ignore"):
            cell = np.floor(q / self.width)
            delta = (q - (cell + 0.5) * self.width) / self.sigma
        # Queries in a box of the grid, to a unit of roundoff of its edges.
        inside = np.flatnonzero((np.abs(delta) <= RADIUS) & (np.abs(cell) < 2.0**31))
        if not inside.size:
            return None
        reach = self._reach()
        c = out.shape[2]
        # Per box: its windows' moments, the sums G, the Taylor coefficients
        # L of _local_boxes and a term of their combination.
        per_box = c * (N_TERMS * (2 * reach + 1) + (powers + 3) * N_LOCAL + powers + 1)
        budget = min(LOCAL_RUN_TILES * tile_elements, working_elements())
        span = max(1, max(tile_elements, budget) // per_box)
        served = np.zeros(s.size, dtype=bool)
        cells = cell[inside]
        a = 0
        while a < inside.size:
            base = cells[a]
            e = int(np.searchsorted(cells, base + span, side="left"))
            if e - a >= max(LOCAL_RUN, LOCAL_QUERIES * (cells[e - 1] - base + 1)):
                rows = inside[a:e]
                local = (cells[a:e] - base).astype(np.intp)
                width = int(local[-1]) + 1
                record("local_run", n_boxes=width, n_queries=rows.size)
                self._local_boxes(
                    base,
                    width,
                    local,
                    delta[rows],
                    rows,
                    out=out,
                    bound=bound,
                    powers=powers,
                    tile_elements=tile_elements,
                )
                served[rows] = True
            a = e
        return np.flatnonzero(~served) if served.any() else None

    def _reach(self):
        """The farthest source box, in boxes, of a target box's sums: centres
        within ``REACH + RADIUS`` standard deviations."""
        return int(math.floor((REACH + RADIUS) * self.sigma / self.width))

    def _local_boxes(
        self, base, width, box, delta, rows, *, out, bound, powers, tile_elements
    ):
        """Sums at the queries ``rows`` in the ``width`` boxes of the grid
        from box ``base`` (query ``i`` in box ``base + box[i]``, at ``delta[i]``
        standard deviations from its centre): each source box's Hermite
        expansion translated into a Taylor expansion about each target box's
        centre (module docstring), of :data:`N_LOCAL` terms, and its bound.

        Boxes ``o`` apart share the translation's coefficients (of the offset
        ``o w / sigma``), so that the expansions of all the target boxes are
        one product of the coefficients with the source boxes' moments, laid
        out on the grid."""
        reach = self._reach()
        lo = int(np.searchsorted(self.cells, base - reach, side="left"))
        hi = int(np.searchsorted(self.cells, base + width + reach, side="left"))
        # The source boxes on the grid, from box base - reach: window i of a
        # target box is the source box o = reach - i boxes before it.
        on_grid = (self.cells[lo:hi] - (base - reach)).astype(np.intp)
        if powers not in self._tables:
            self._tables[powers] = self._translations(reach, powers)
        tables, per_box = self._tables[powers]
        # G[m, c, t]: the sums of the Hermite functions of order k + m over
        # the windows, shared by the powers (_power_terms); L[l, j, c, t]: the
        # Taylor coefficients of each target box.
        G, box_bound = window_sums(
            tables,
            per_box,
            self.moments[:, lo:hi, :],
            self.box_weight[lo:hi],
            on_grid,
            width,
            reach,
        )
        L = _taylor_coefficients(G, powers)
        evaluate(
            L,
            box_bound,
            box,
            delta,
            rows,
            out=out,
            bound=bound,
            tile_elements=tile_elements,
        )

    def _translations(self, reach, powers):
        """The translations of the source boxes' Hermite expansions into
        Taylor expansions about target boxes ``reach - i`` boxes after them
        (:func:`translation_terms`, at the offsets of the boxes' centres)."""
        x = (reach - np.arange(2 * reach + 1)) * self.width / self.sigma
        H, per_box = translation_terms(x, powers)
        return translation_tables(H, powers), per_box

    def _block(self, s, q, b0, b1, out, bound, powers=0):
        # From the offsets: exact to a few units of roundoff of d itself.
        d = (q[:, None] - self.centre_x[None, b0:b1]) / self.sigma
        dist = np.abs(d)
        g = np.empty((N_TERMS + powers,) + d.shape)
        # Pairs beyond the reach stay out (their terms are in SKIPPED).
        quarter = np.exp(-0.25 * d * d)
        quarter[dist > REACH] = 0.0
        np.multiply(quarter, quarter, out=g[0])
        np.multiply(d, g[0], out=g[1])
        tmp = np.empty_like(d)
        for k in range(1, N_TERMS + powers - 1):
            np.multiply(g[k - 1], k, out=tmp)
            np.multiply(d, g[k], out=g[k + 1])
            g[k + 1] -= tmp
        moments = self.moments[:, b0:b1, :]
        # The sums of A_k He_{k + r}(d) e^{-d^2/2} over the boxes, per order r.
        shifted = [np.matmul(g[:N_TERMS], moments).sum(axis=0)]
        out[:, 0] += shifted[0]
        # Error bound: truncated terms plus rounding, per unit of box weight.
        envelope = np.exp(RADIUS * dist + 0.5 * RADIUS**2 - 0.5 * d * d)
        envelope[dist > REACH] = 0.0
        # The rounding of the offsets d and u (each within two units of
        # roundoff of itself, see _offsets_from_centres), moving each term by
        # its slope (at most reach * envelope for the order 0).
        reach = dist + RADIUS
        moved = 4 * _EPS64 * (reach + 1.0) * envelope
        per_weight = TRUNCATION * quarter + ROUNDING * envelope + moved * reach
        bound[:, 0] += per_weight @ self.box_weight[b0:b1]
        for j in range(1, powers + 1):
            # (u - d)**j e^{-(u - d)**2 / 2}: Hermite functions of higher
            # orders (module docstring), of the same moments.
            shifted.append(np.matmul(g[j : j + N_TERMS], moments).sum(axis=0))
            for r, coef in _power_terms(j):
                out[:, j] += coef * shifted[r]
            trunc, rounding = _power_bounds(j)
            slope = reach ** (j + 1) + j * reach ** (j - 1)
            per_weight = (trunc + ROUNDING * rounding) * quarter + moved * slope
            bound[:, j] += per_weight @ self.box_weight[b0:b1]


def _windows(a, size, axis):
    """The windows of ``size`` along ``axis`` of ``a``, as the last axis of
    a read-only view (numpy's ``sliding_window_view`` without its checks,
    which cost several times the view itself for a search's small arrays)."""
    shape = list(a.shape)
    shape[axis] -= size - 1
    strides = a.strides + (a.strides[axis],)
    return np.lib.stride_tricks.as_strided(
        a, tuple(shape) + (size,), strides, writeable=False
    )


#: :func:`translation_terms` takes the Hermite polynomials of up to this many
#: offsets by scipy's ``eval_hermitenorm`` and of more by one recurrence over
#: all of them: measured, 0.04 ms against 0.12 ms at 27 offsets (the windows
#: of one grid), 1 ms against 0.2 ms at 810 (those of 30 grids).
MANY_OFFSETS = Tunable(100)


def translation_terms(x, powers):
    """The Hermite functions of the translations of the source boxes'
    expansions into Taylor expansions about target boxes at the offsets
    ``x`` of their centres (in standard deviations), ``(N_TERMS + N_LOCAL +
    powers, x.size)``, and the bound of each window per unit of its weight,
    ``(powers + 1, x.size)``: offsets of several grids may be taken at once
    (see :func:`translation_tables`)."""
    n_h = N_TERMS + N_LOCAL + powers
    # The Hermite polynomials by their three-term recurrence, times the
    # Gaussian: within about 20 units of roundoff of Cramér's envelope for
    # |x| up to the reach and orders up to n_h (measured against extended
    # precision: 9 units). scipy's takes each order's recurrence on its own,
    # which costs less for the offsets of one grid; one recurrence over
    # every offset costs less for many (the grids of a stacked pass).
    recurrence = x.size > MANY_OFFSETS.value
    record("translation_terms", n_offsets=x.size, recurrence=recurrence)
    if recurrence:
        H = np.empty((n_h, x.size))
        H[0], H[1] = 1.0, x
        for k in range(1, n_h - 1):
            np.multiply(x, H[k], out=H[k + 1])
            H[k + 1] -= k * H[k - 1]
    else:
        H = eval_hermitenorm(np.arange(n_h)[:, None], x[None, :])
    H *= np.exp(-0.5 * x * x)
    quarter = np.exp(-0.25 * x * x)
    near = np.exp(-0.25 * np.maximum(np.abs(x) - RADIUS, 0.0) ** 2)
    units = LOCAL_ROUNDING * _EPS64 * (np.abs(x) + 2.0)
    per_box = np.empty((powers + 1, x.size))
    for j in range(powers + 1):
        trunc = TRUNCATION if j == 0 else _power_bounds(j)[0]
        taylor, size = _local_bounds(j)
        # Hermite terms beyond N_TERMS (at the nearest query), Taylor
        # terms beyond N_LOCAL, and the rounding of both expansions, of
        # the offsets x and delta, and of the Hermite recurrence.
        per_box[j] = trunc * near + (taylor + units * size) * quarter
    return H, per_box


def window_sums(tables, per_box, moments, weight, on_grid, span, reach):
    """The sums ``G`` of the Hermite functions over the windows of the
    ``span`` target boxes from box ``reach`` of a grid (``(rows, c,
    span)``), one product of the translations' coefficients
    (:func:`translation_tables`) with the source boxes' ``moments``
    (``(N_TERMS, boxes, c)``) laid out on the grid (``on_grid``: each box's
    cell from the grid's first, an index or slice), and each target box's
    bound from their ``weight`` (``per_box`` of :func:`translation_terms`):
    ``(span, powers + 1)``. Window ``i`` of target box ``t`` is the source
    box ``t + i``."""
    c = moments.shape[2]
    dense = np.zeros((N_TERMS, span + 2 * reach, c))
    dense[:, on_grid, :] = moments
    placed = np.zeros(span + 2 * reach)
    placed[on_grid] = weight
    # windows[i, k, c, t] = dense[k, t + i, c]
    windows = _windows(dense, span, axis=1).transpose(1, 0, 2, 3)
    G = (tables @ windows.reshape(-1, c * span)).reshape(tables.shape[0], c, span)
    return G, _windows(placed, 2 * reach + 1, axis=0) @ per_box.T


def translation_tables(H, powers):
    """The coefficients of the translations of one grid's windows (``H`` of
    :func:`translation_terms` at its offsets ``(reach - i) w / sigma``,
    window ``i`` the source box ``reach - i`` boxes before the target), before
    the powers' combinations and signs (:func:`_taylor_coefficients`):
    ``N_LOCAL + powers`` by ``(2 reach + 1) N_TERMS``, the Hermite functions
    of order ``k + m`` in rows ``m`` (the ``N_TERMS`` columns of each offset
    side by side: the offsets of several grids give each grid's columns)."""
    # tables[m, i, k] = H[k + m, i]: a view of H, then one copy.
    rows, (by_order, by_offset) = N_LOCAL + powers, H.strides
    view = np.lib.stride_tricks.as_strided(
        H,
        (rows, H.shape[1], N_TERMS),
        (by_order, by_offset, by_order),
        writeable=False,
    )
    return view.reshape(rows, -1)


def _taylor_coefficients(G, powers, factorials=True):
    """The Taylor coefficients ``L[l, j]`` (``(N_LOCAL, powers + 1, c,
    boxes)``) of the powers ``j`` from the sums ``G[m]`` of the Hermite
    functions of order ``k + m`` over the windows: ``(-1)**l / l!`` times
    the combination of ``G[l + r]`` of each power's terms
    (:func:`_power_terms`), or ``(-1)**l`` times it without ``factorials``
    (for powers of the offsets that hold the ``1 / l!``). Their rounding
    adds a unit of roundoff of the terms' magnitudes to that of the sums,
    which :data:`LOCAL_ROUNDING` covers."""
    L = np.empty((N_LOCAL, powers + 1) + G.shape[1:])
    for j in range(powers + 1):
        (r, coef), *rest = _power_terms(j)
        np.multiply(G[r : r + N_LOCAL], coef, out=L[:, j])
        for r, coef in rest:
            L[:, j] += coef * G[r : r + N_LOCAL]
    signs = _TAYLOR_SIGNS if factorials else np.sign(_TAYLOR_SIGNS)
    L *= signs.reshape((N_LOCAL,) + (1,) * (L.ndim - 1))
    return L


def evaluate(L, box_bound, box, delta, rows, *, out, bound, tile_elements):
    """Add to ``out`` and ``bound`` (at ``rows``) each query's Taylor
    polynomial ``L`` (``(N_LOCAL, powers + 1, c, boxes)``) of its box
    (``box``, sorted) at its offset ``delta``, and its box's bound
    (``box_bound``, ``(boxes, powers + 1)``), over batches of queries within
    the working memory: by one product per box where the boxes hold
    :data:`PRODUCT_QUERIES` queries on average (each query then holds its
    powers and sums), else by Horner's rule (each query its box's
    polynomials)."""
    width = L.shape[-1]
    powers, c = L.shape[1] - 1, L.shape[2]
    by_box = None
    if box.size >= PRODUCT_QUERIES * width:  # (box, l, (j, c))
        by_box = L.reshape(N_LOCAL, -1, width).transpose(2, 0, 1).copy()
        step = max(1, tile_elements // (N_LOCAL + (powers + 1) * c))
    else:
        step = max(1, tile_elements // ((powers + 1) * N_LOCAL * c))
    record(
        "local_evaluation",
        method="horner" if by_box is None else "box_products",
        n_queries=box.size,
        n_boxes=width,
    )
    for a in range(0, box.size, step):
        e = min(a + step, box.size)
        first, last = int(box[a]), int(box[e - 1]) + 1
        counts = np.bincount(box[a:e] - first, minlength=last - first)
        into = rows[a:e]
        if into[-1] - into[0] == e - a - 1:
            into = slice(int(into[0]), int(into[-1]) + 1)
        d = delta[a:e]
        if by_box is not None:
            out[into] += _box_products(by_box[first:last], counts, d, L.shape)
        else:
            out[into] += _horner(L[..., first:last], counts, d).transpose(2, 0, 1)
        bound[into] += box_bound[box[a:e]]


def _horner(L, counts, d):
    """The Taylor polynomials ``L`` (``(N_LOCAL, j, c, boxes)``) of each
    query's box (``counts`` queries per box, in order) at its offsets ``d``,
    by Horner's rule: ``(j, c, queries)``."""
    G = np.repeat(L, counts, axis=3)
    acc = G[N_LOCAL - 1]
    for ell in range(N_LOCAL - 2, -1, -1):
        acc *= d
        acc += G[ell]
    return acc


def _box_products(by_box, counts, d, L_shape):
    """As :func:`_horner`, from the polynomials laid out one matrix per box
    (``(boxes, N_LOCAL, j c)``), as products of the powers of each box's
    queries' offsets with its matrix (one product per box: for boxes of
    :data:`PRODUCT_QUERIES` queries or more on average); ``L_shape`` is the
    shape of the polynomials as :func:`_horner` takes them. Returns
    ``(queries, j, c)``."""
    powers = np.empty((N_LOCAL, d.size))
    powers[0] = 1.0
    for ell in range(1, N_LOCAL):
        np.multiply(powers[ell - 1], d, out=powers[ell])
    powers = powers.T
    acc = np.empty((d.size, by_box.shape[2]))
    ends = np.cumsum(counts)
    for b in np.flatnonzero(counts):
        start, end = ends[b] - counts[b], ends[b]
        np.matmul(powers[start:end], by_box[b], out=acc[start:end])
    return acc.reshape(d.size, L_shape[1], L_shape[2])


#: Sorted queries per box (on average over a run of boxes) from which the
#: boxes' local expansions are used: a box's expansion costs about as much as
#: one query's sums by the Hermite expansions of the boxes within its reach.
LOCAL_QUERIES = 1
#: The fewest queries of a run of boxes that takes the local expansions: a
#: run's fixed cost is about that of this many queries' sums by the
#: per-query expansions.
LOCAL_RUN = 32
#: A run of boxes takes up to this many tiles (of ``tile_elements``, within
#: ``working_memory``, :func:`~sknw._sums._base.working_elements`): its fixed cost,
#: about 40 array operations, is then paid about once per 400 boxes of a
#: local linear fit rather than once per 100 (measured on the 9 smallest
#: bandwidths of the default search, at 2000 and 20000 points: about 8 %
#: faster, best of 25 runs taken in turn with one tile).
LOCAL_RUN_TILES = 4
#: Queries per box (on average over a run of boxes) from which each box's Taylor
#: polynomials are evaluated as one matrix product with the powers of its
#: queries' offsets, rather than by Horner's rule over the queries: the
#: product's per-box cost is then paid back.
PRODUCT_QUERIES = 16


def fgt_kernel_sums(
    Q,
    X,
    V,
    heads,
    *,
    index,
    scale=None,
    sample_weight=None,
    metric="euclidean",
    metric_params=None,
    tile_elements=TILE_ELEMENTS,
    **params,
):
    """:func:`~sknw._sums.kernel_sums` for a Gaussian in 1-D, from a
    :class:`GaussIndex` of the same training points and values.

    Each query's sums are within :data:`TOLERANCE` (relative) of the exact ones;
    queries where the bound of the module docstring cannot promise it are
    summed exactly. Sums from the expansion are unshifted (``M = 0``).

    With ``exclude_self`` (leave-one-out, see
    :func:`~sknw._sums.kernel_sums`), each query's own term (``K(0) = 1``
    times the weight it leaves out) is subtracted, and the bound, with the
    rounding of the subtraction, is checked against the weight that remains:
    a query whose own term dominates its sums is summed exactly, without it.
    """
    m, k = Q.shape[0], V.shape[1]
    S = np.zeros((m, k))
    den = np.zeros(m)
    M = np.zeros(m)
    exact = np.ones(m, dtype=bool)
    own = own_rows(m, params)
    if index.built and m:
        with np.errstate(over="ignore", invalid="ignore"):
            q = line_offsets(Q, index.origin, scale)
            s = q / index.sigma
        order = query_order(index, s, own)
        acc, bound = index.sums(s[order], tile_elements, q[order])
        if own is not None:  # K(0) = 1; the views take the subtraction
            leave_own_term_out(
                acc[:, None, :],
                bound[:, None],
                own[order],
                V,
                1.0,
                sample_weight=sample_weight,
                self_weight=params.get("self_weight"),
            )
        # Every sorted query in place; those beyond the tolerance stay exact
        # (exact_rows overwrites their sums).
        placed = placed_rows(acc, order, m)
        S, den = placed[:, :k], placed[:, k]
        exact[order[bound <= TOLERANCE * acc[:, k]]] = False
    exact_rows(
        (S, den, M),
        exact,
        Q,
        X,
        V,
        heads,
        metric=metric,
        metric_params=metric_params,
        scale=scale,
        sample_weight=sample_weight,
        tile_elements=tile_elements,
        **params,
    )
    return [(S, den, M)]


def query_order(index, s, own):
    """The order that sorts the finite queries ``s``: the training points'
    own (``index.order``) where the queries are every training point in
    turn (leave-one-out, ``own``), else by sorting them."""
    if own is not None and own.size == index.order.size:
        if np.array_equal(own, np.arange(own.size)):
            return index.order
    finite = np.isfinite(s)
    return np.flatnonzero(finite)[np.argsort(s[finite])]


def gaussian_why_not(name, kernel, metric, metric_params, n_features):
    """Why the one-feature Gaussian backend ``name`` cannot serve (or None)."""
    if gaussian_eligible(kernel, metric, metric_params, n_features):
        return None
    return (
        f"algorithm={name!r} needs one feature, the Gaussian kernel (not "
        f"{kernel!r}) and a metric that is |x - q| in one dimension "
        f"{LINE_METRICS}, not {metric!r}."
    )


def line_order(request):
    """The order that sorts the one feature of the training points, shared by
    the heads of a grid: scaling and centring keep it."""
    return shared_value(
        request,
        "line_order",
        lambda: np.argsort(np.asarray(request.X[:, 0], np.float64), kind="stable"),
    )
