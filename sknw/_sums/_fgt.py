"""Gaussian sums in one dimension by the fast Gauss transform, to 1e-12.

Part of the computational core (see :mod:`sknw._sums`): returns the same
``(S, den, M)`` triples as :func:`~sknw._sums.kernel_sums`, for a Gaussian
head and one feature: each query's weight sum within a relative
:data:`TOLERANCE` of the exact one, and its other sums within
:data:`TOLERANCE` times the weight sum and the largest ``|value|``, checked per
query.

In units of the kernel's standard deviation (from the median training value,
see :func:`~sknw._sums.line_offsets`), the sorted training points are cut
into boxes one unit wide, of centre ``c`` and radius :data:`RADIUS`
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

**Local expansions.** Sorted queries that share a unit box of the same grid
(:data:`LOCAL_QUERIES` or more) take each box's expansion translated into a
Taylor expansion about their box's centre, ``d = x + delta``:
:math:`\\mathrm{He}_m(x + \\delta) e^{-(x + \\delta)^2/2} = \\sum_l
(-\\delta)^l / l! \\, \\mathrm{He}_{m + l}(x) e^{-x^2/2}`, of
:data:`N_LOCAL` terms: ``O(P)`` per query instead of ``O(P)`` per query and
box. Cramér's inequality bounds the Taylor terms beyond :data:`N_LOCAL` and
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

import functools
import math

import numpy as np

from ._base import (
    _EPS64,
    TILE_ELEMENTS,
    Backend,
    MomentSums,
    _weighted_values,
    leave_own_term_out,
    line_offsets,
    line_origin,
    own_rows,
    unit_blocks,
    values_key,
)
from ._dense import exact_rows
from ._parallel import parallel_kernel_sums
from ._traits import LINE_METRICS, gaussian_eligible, gaussian_sigma

#: Half the width of a box, in standard deviations of the Gaussian (slightly
#: above 1/2, for the rounding of the points' offsets from their box centre).
RADIUS = 0.5 + 2.0**-30
#: Cramér's constant: :math:`|He_k(x)| e^{-x^2/4} \le K \sqrt{k!}`.
CRAMER = 1.0865
#: Boxes whose centre is farther than this from a query (in standard
#: deviations) are left out of its sums: their terms are below
#: ``exp(-(REACH - RADIUS)**2 / 2)`` (5e-32) of their weight.
REACH = 12.5
#: Relative error allowed for each query's sums; beyond it, exact sums.
TOLERANCE = 1e-12


def _truncation(p, rho=RADIUS):
    """Bound of the terms from ``p`` on, per unit weight, times ``e^{d^2/4}``."""
    return (
        CRAMER
        * rho**p
        / math.sqrt(math.factorial(p))
        / (1.0 - rho / math.sqrt(p + 1.0))
    )


def _fewest_terms(truncation, target=1e-16):
    """The fewest terms (from 2) whose ``truncation(n)`` is at most ``target``."""
    n = 2
    while truncation(n) > target:
        n += 1
    return n


#: Terms of the Hermite expansion (21: truncated terms below 1e-16).
N_TERMS = _fewest_terms(_truncation)
#: Bound of the truncated terms, per unit of weight, times ``e^{d^2/4}``.
TRUNCATION = _truncation(N_TERMS)
#: Rounding of the expansion, relative to the sum of its terms' magnitudes:
#: ``8 N_TERMS`` machine epsilons (3.7e-14), over 60 times the largest error
#: measured for ``|d| <= REACH`` and ``|u| <= 1/2`` (5 units of roundoff; the
#: Hermite functions alone, by their recurrence, within 65 units of roundoff
#: of their envelope).
ROUNDING = 8.0 * N_TERMS * 2.0 * _EPS64
#: Weight of the boxes beyond the reach, per unit of weight.
SKIPPED = math.exp(-0.5 * (REACH - RADIUS) ** 2)
#: ``algorithm="auto"`` takes the transform from this many training points per
#: box (on average); with fewer, a box's ``N_TERMS`` terms cost more than its
#: points do in the dense sums.
MIN_POINTS_PER_BOX = 8


def _offsets_from_centres(x, boxes, sigma):
    """``boxes`` with each point's offset from its box centre taken from the
    offsets ``x`` (not from ``t = x / sigma``, whose rounding grows with
    ``|t|``): ``(x - c sigma) / sigma``, with ``c sigma`` a float, is exact
    to a few units of roundoff of the offset itself. None where an offset
    would exceed :data:`RADIUS`."""
    order, ts, starts, centre, _ = boxes
    lengths = np.diff(np.r_[starts, ts.size])
    offsets = (x[order] - np.repeat(centre * sigma, lengths)) / sigma
    if not np.max(np.abs(offsets), initial=0.0) <= RADIUS:
        return None
    return order, ts, starts, centre, offsets


def gaussian_boxes(t):
    """:func:`~sknw._sums.unit_blocks` of ``t``, or None when the boxes
    cannot be formed in floating point (an offset would exceed
    :data:`RADIUS`, or not be finite)."""
    boxes = unit_blocks(t)
    if not np.max(np.abs(boxes[4]), initial=0.0) <= RADIUS:
        return None
    return boxes


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

    Attributes
    ----------
    usable : bool
        Whether the boxes could be formed.
    points_per_box : float
        Training points per (non-empty) box.
    built : bool
        Whether the moments were computed; if not, every query is summed
        exactly.
    """

    def __init__(
        self, X, V, w, head, scale, tile_elements=TILE_ELEMENTS, min_points_per_box=0
    ):
        self.sigma = gaussian_sigma(head)
        self.n_values = V.shape[1]
        self.origin = line_origin(X)
        with np.errstate(over="ignore", invalid="ignore"):
            x = line_offsets(X, self.origin, scale)
            t = x / self.sigma
        boxes = gaussian_boxes(t) if np.all(np.isfinite(t)) else None
        if boxes is not None:
            boxes = _offsets_from_centres(x, boxes, self.sigma)
        self.usable = boxes is not None
        self.points_per_box = 0.0 if boxes is None else t.size / boxes[2].size
        self.built = self.usable and self.points_per_box >= min_points_per_box
        if not self.built:
            return
        order, ts, starts, self.centre, offsets = boxes
        # The grid of the boxes: unit boxes from the smallest point.
        self.t0 = float(ts[0]) if ts.size else 0.0
        # The box centres as offsets: a query's distance to a box is taken
        # from its own offset (see _offsets_from_centres).
        self.centre_x = self.centre * self.sigma
        Vx = _weighted_values(V, w, order)
        c = Vx.shape[1]
        self.moments = np.zeros((N_TERMS, starts.size, c))
        box_of = np.repeat(np.arange(starts.size), np.diff(np.r_[starts, t.size]))
        chunk = max(1, tile_elements // (N_TERMS * c))
        for a in range(0, t.size, chunk):
            b = min(a + chunk, t.size)
            u = offsets[a:b]
            powers = np.empty((N_TERMS, b - a))  # u**k / k!
            powers[0] = 1.0
            for k in range(1, N_TERMS):
                np.multiply(powers[k - 1], u, out=powers[k])
                powers[k] /= k
            terms = powers[:, :, None] * Vx[None, a:b, :]
            labels = box_of[a:b]
            first = np.flatnonzero(np.r_[True, labels[1:] != labels[:-1]])
            self.moments[:, labels[first], :] += np.add.reduceat(terms, first, axis=1)
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
        bound = np.tile(skipped * self.total_weight, (m, 1))
        # Runs of at least LOCAL_QUERIES sorted queries in one unit box take
        # the local expansion of the box; the others the expansion per query.
        rest = self._local_runs(s, q, out, bound, powers) if local else None
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

    def _local_runs(self, s, q, out, bound, powers):
        """The sums of the runs of sorted queries that share a unit box (of
        the grid of the training points' boxes), by the box's local (Taylor)
        expansion (:meth:`_local_box`); returns the indices of the other
        queries (None: no run is long enough)."""
        with np.errstate(invalid="ignore", over="ignore"):
            cell = np.floor(s - self.t0)
        if not s.size:
            return None
        starts = np.flatnonzero(np.r_[True, cell[1:] != cell[:-1]])
        lengths = np.diff(np.r_[starts, s.size])
        long = (lengths >= LOCAL_QUERIES) & np.isfinite(cell[starts])
        if not long.any():
            return None
        served = np.zeros(s.size, dtype=bool)
        for a, size in zip(starts[long], lengths[long], strict=True):
            rows = slice(a, a + size)
            centre = self.t0 + cell[a] + 0.5
            self._local_box(centre, q[rows], out[rows], bound[rows], powers)
            served[rows] = True
        return np.flatnonzero(~served)

    def _local_box(self, centre, q, out, bound, powers):
        """Sums at the queries (offsets ``q``) of the unit box of centre
        ``centre``: each source box's Hermite expansion translated into a
        Taylor expansion about the centre (module docstring), of
        :data:`N_LOCAL` terms, and its bound."""
        b0 = int(np.searchsorted(self.centre, centre - REACH - RADIUS, side="left"))
        b1 = int(np.searchsorted(self.centre, centre + REACH + RADIUS, side="right"))
        if b1 <= b0:
            return
        centre_x = centre * self.sigma
        x = (centre_x - self.centre_x[b0:b1]) / self.sigma  # d = x + delta
        n_h = N_TERMS + N_LOCAL + powers
        H = np.empty((n_h, x.size))
        H[0] = np.exp(-0.5 * x * x)
        H[1] = x * H[0]
        for k in range(1, n_h - 1):
            H[k + 1] = x * H[k] - k * H[k - 1]
        A = self.moments[:, b0:b1, :]
        delta = (q - centre_x) / self.sigma
        powers_of_delta = np.empty((delta.size, N_LOCAL))
        powers_of_delta[:, 0] = 1.0
        for ell in range(1, N_LOCAL):
            np.multiply(powers_of_delta[:, ell - 1], delta, out=powers_of_delta[:, ell])
        quarter = np.exp(-0.25 * x * x) * self.box_weight[b0:b1]
        near = np.exp(-0.25 * np.maximum(np.abs(x) - RADIUS, 0.0) ** 2)
        near = near * self.box_weight[b0:b1]
        for j in range(powers + 1):
            Hj = np.zeros((N_TERMS + N_LOCAL - 1, x.size))
            for r, coef in _power_terms(j):
                Hj += coef * H[r : r + N_TERMS + N_LOCAL - 1]
            # window[l, b, k] = Hj[k + l, b]
            window = np.lib.stride_tricks.sliding_window_view(Hj, N_TERMS, axis=0)
            L = np.einsum("lbk,kbc->lc", window[:N_LOCAL], A) * _TAYLOR_SIGNS[:, None]
            out[:, j] += powers_of_delta @ L
            trunc = TRUNCATION if j == 0 else _power_bounds(j)[0]
            taylor, size = _local_bounds(j)
            # Hermite terms beyond N_TERMS (at the nearest query), Taylor
            # terms beyond N_LOCAL, and the rounding of both expansions, of
            # the offsets x and delta, and of the Hermite recurrence.
            units = LOCAL_ROUNDING * _EPS64 * (np.abs(x) + 2.0)
            per_box = trunc * near + (taylor + units * size) * quarter
            bound[:, j] += float(np.sum(per_box))

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


def _power_terms(j):
    """``(r, c)`` with ``(-y)**j e^{-y**2/2} = sum c He_r(y) e^{-y**2/2}``
    in the orders ``r`` of the derivative: ``y**j = sum_m j! / (m! (j - 2m)!
    2**m) He_{j - 2m}(y)``, each ``He_r e^{-y^2/2}`` of ``y = d - u`` times
    ``(-1)**r`` a derivative in ``d``, so that the sum over a box's moments
    ``A_k`` of ``He_{k + r}(d) e^{-d^2/2}`` gives the power's sum."""
    return [
        (
            j - 2 * i,
            (-1.0) ** j
            * math.factorial(j)
            / (math.factorial(i) * math.factorial(j - 2 * i) * 2.0**i),
        )
        for i in range(j // 2 + 1)
    ]


@functools.cache
def _power_bounds(j, rho=RADIUS):
    """Bounds, per unit weight and times ``e^{d^2/4}``, of the truncated
    terms and of the magnitudes of the terms (the rounding's scale) of the
    power ``j``: by Cramér's inequality, each ``|He_r(d)| e^{-d^2/2}`` is at
    most ``CRAMER sqrt(r!) e^{-d^2/4}``."""

    def size(k):
        return sum(
            abs(c) * math.sqrt(math.factorial(k + r)) for r, c in _power_terms(j)
        )

    def term(k):
        return CRAMER * rho**k / math.factorial(k) * size(k)

    truncated = sum(term(k) for k in range(N_TERMS, N_TERMS + 60))
    total = sum(term(k) for k in range(N_TERMS + 60))
    return truncated, total


def _cramer_sum(j, ells, rho=RADIUS):
    """``CRAMER`` times the sum over ``k < N_TERMS`` and ``l`` in ``ells`` of
    ``rho**(k + l) / (k! l!)`` times the Cramér bounds ``sqrt((k + r + l)!)``
    of the Hermite functions of the power ``j`` (per unit weight, times
    ``e^{x^2/4}``): the size of the terms ``(k, l)`` of a box's translated
    expansion."""
    terms = _power_terms(j)
    total = 0.0
    for k in range(N_TERMS):
        for ell in ells:
            size = sum(
                abs(c) * math.sqrt(math.factorial(k + r + ell)) for r, c in terms
            )
            total += rho ** (k + ell) / (math.factorial(k) * math.factorial(ell)) * size
    return CRAMER * total


def _taylor_truncation(n, rho=RADIUS, j=0):
    """Bound, per unit weight and times ``e^{x^2/4}``, of the Taylor terms
    from ``n`` on of a box's translated expansion (power ``j``)."""
    return _cramer_sum(j, range(n, n + 80), rho)


#: Terms of the local (Taylor) expansion of a box's sums about a query box.
N_LOCAL = _fewest_terms(_taylor_truncation)
#: Rounding of the local expansion, in units of roundoff of its terms'
#: magnitudes (by Cramér's inequality) times ``|x| + 2``: over 60 times the
#: largest error measured (1.5 units, over boxes of 500 to 20000 points,
#: bandwidths 0.003 to 2 of data spans 1 to 1000, powers 0 to 2).
LOCAL_ROUNDING = 100.0
#: Sorted queries in one unit box from which its local expansion is used.
LOCAL_QUERIES = 512
#: ``(-1)**l / l!``: the Taylor coefficients of ``He_m(x + delta)
#: e^{-(x + delta)**2 / 2}`` in powers of ``delta``, times ``He_{m+l}``.
_TAYLOR_SIGNS = np.array(
    [(-1.0) ** ell / math.factorial(ell) for ell in range(N_LOCAL)],
    dtype=np.float64,
)


@functools.cache
def _local_bounds(j, rho=RADIUS):
    """Bounds, per unit weight and times ``e^{x^2/4}``, of the Taylor terms
    beyond :data:`N_LOCAL` and of the magnitudes of all the terms (the
    rounding's scale) of a translated expansion of power ``j`` (Cramér)."""
    return _taylor_truncation(N_LOCAL, rho, j), _cramer_sum(j, range(N_LOCAL), rho)


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
    own = own_rows(m, **params)
    if index.built and m:
        with np.errstate(over="ignore", invalid="ignore"):
            q = line_offsets(Q, index.origin, scale)
            s = q / index.sigma
        finite = np.isfinite(s)
        order = np.flatnonzero(finite)[np.argsort(s[finite])]
        acc, bound = index.sums(s[order], tile_elements, q[order])
        if own is not None:  # K(0) = 1; the views take the subtraction
            leave_own_term_out(
                acc[:, None, :], bound[:, None], own[order], V, 1.0,
                sample_weight=sample_weight, self_weight=params.get("self_weight"),
            )  # fmt: skip
        ok = bound <= TOLERANCE * acc[:, k]
        rows = order[ok]
        S[rows], den[rows] = acc[ok, :k], acc[ok, k]
        exact[rows] = False
    exact_rows(
        (S, den, M), exact, Q, X, V, heads,
        metric=metric, metric_params=metric_params, scale=scale,
        sample_weight=sample_weight, tile_elements=tile_elements, **params,
    )  # fmt: skip
    return [(S, den, M)]


def gaussian_why_not(name, kernel, metric, metric_params, n_features):
    """Why the one-feature Gaussian backend ``name`` cannot serve (or None)."""
    if gaussian_eligible(kernel, metric, metric_params, n_features):
        return None
    return (
        f"algorithm={name!r} needs one feature, the Gaussian kernel (not "
        f"{kernel!r}) and a metric that is |x - q| in one dimension "
        f"{LINE_METRICS}, not {metric!r}."
    )


class FGTBackend(Backend):
    """The Gaussian in one dimension by the fast Gauss transform, to
    :data:`TOLERANCE`; under ``"auto"`` from
    :data:`~sknw._sums._dispatcher.AUTO_MIN_SAMPLES` training points where the
    boxes hold :data:`MIN_POINTS_PER_BOX` points on average. The index holds
    the fitted values: it serves those only."""

    name = "fgt"
    fixed_values = True
    leave_one_out = True
    local_moments = True

    def why_not(self, kernel, metric, metric_params, n_features):
        return gaussian_why_not(self.name, kernel, metric, metric_params, n_features)

    def fit(self, request):
        if request.auto and not request.large:
            return None
        V, w = request.values()
        index = GaussIndex(
            request.X,
            V,
            w,
            request.head,
            request.scale,
            request.tile_elements,
            # "auto" computes the moments only where they pay: against the
            # pruned line path of a single head, from a few points per box;
            # against a pass over every pair (a grid), always.
            min_points_per_box=(
                MIN_POINTS_PER_BOX if request.auto and not request.grid else 0
            ),
        )
        if request.auto and not index.built:
            return None
        index.key = (values_key(V, w), request.head)
        return index

    def serves(self, index, V, heads, sample_weight):
        return (
            len(heads) == 1
            and V.shape[1] == index.n_values
            and index.key == (values_key(V, sample_weight), heads[0])
        )

    def sums(self, index, Q, X, V, heads, *, n_jobs=None, **params):
        self.check_params(params)
        return parallel_kernel_sums(
            Q, X, V, heads, n_jobs=n_jobs, sums=fgt_kernel_sums, index=index,
            **params,
        )  # fmt: skip

    def moment_sums(self, index, Q, X, V, head, powers, **params):
        """Moments by the expansion (module docstring), in standard
        deviations; queries it cannot reach have an infinite bound."""
        self.check_params(params)
        m, k = Q.shape[0], V.shape[1]
        acc = np.zeros((m, powers + 1, k + 1))
        bound = np.full((m, powers + 1), np.inf)
        if index.built and m:
            with np.errstate(over="ignore", invalid="ignore"):
                q = line_offsets(Q, index.origin, params.get("scale"))
                s = q / index.sigma
            finite = np.isfinite(s)
            order = np.flatnonzero(finite)[np.argsort(s[finite])]
            tile = params.get("tile_elements", TILE_ELEMENTS)
            acc[order], bound[order] = index.moment_sums(
                s[order], tile, powers, q[order]
            )
        own = own_rows(m, **params)
        if own is not None:
            leave_own_term_out(acc, bound, own, V, 1.0, **params)
        return MomentSums(acc, bound, None, float(index.sigma))
