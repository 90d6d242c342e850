"""Local moments of several Gaussian bandwidths at every training point of
one feature, by the fast Gauss transform, all heads at once.

Part of the computational core (see :mod:`sknw._sums`). A search's
candidates each take a pass of :class:`~sknw._sums._fgt.GaussIndex` over the
same training points: about a hundred array operations per head, which cost
more than the sums themselves where the points are a few thousand. Where the
queries are the training points (leave-one-out of every point), each head's
target boxes are its source boxes, and each point's offset from its box's
centre is its query's. :func:`stacked_moment_sums` then lays the boxes of
several heads side by side (the points once per head) and computes their
moments, their Taylor coefficients, the polynomials' values and the bounds
for all of them at once; only the translation of each head's expansions
(one product of its coefficients with its windows of boxes) is taken head by
head.

Each box is cut into segments of a few points (:data:`SEGMENT_POINTS`, the
last one padded). The powers ``u**k / k!`` of a segment's offsets serve
twice: their product with the segment's values gives its part of the box's
Hermite moments, and their product with the box's Taylor coefficients
(without the ``1 / l!`` the powers hold) gives its points' sums. Both are
batches of products of small matrices over every segment of every head,
which cost about half of one product per box or of Horner's rule.

The expansions, their terms and their bounds are those of the local
expansions of :mod:`sknw._sums._fgt` (each product rounds as that module's
products per box, within :data:`~sknw._sums._fgt.LOCAL_ROUNDING`), but for
the translations: a target box takes those of the source boxes within
:data:`INNER_REACH` standard deviations only (the occupied target boxes
only), and the boxes beyond, up to the reach, enter its bound with their
whole terms. With the inner reach at the reach, each head's sums and bounds
are those of its own pass, to rounding (tested); else its sums are within
the bounds of each other's.
"""

import math
from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix

from .._trace import Tunable, record
from ._base import (
    MomentSums,
    _weighted_values,
    leave_own_term_out,
    line_offsets,
    line_origin,
    own_terms,
    placed_rows,
    shared_value,
    working_elements,
)
from ._fgt import (
    LOCAL_QUERIES,
    LOCAL_RUN,
    _taylor_coefficients,
    _windows,
    box_width,
    grid_boxes,
    line_order,
    translation_tables,
    translation_terms,
)
from ._fgt_terms import N_LOCAL, N_TERMS, RADIUS, REACH, SKIPPED
from ._traits import gaussian_sigma

#: Powers of the offsets a stacked pass takes: those of the moments and of
#: the Taylor polynomials.
N_POWERS = max(N_TERMS, N_LOCAL)
#: ``1 .. N_POWERS - 1``, the divisors of the products ``u**k / k!``.
_ORDERS = np.arange(1.0, N_POWERS)

#: A stacked pass keeps its boxes' moments, sums of Hermite functions,
#: Taylor coefficients and bounds, and its points' offsets, boxes and
#: places, within half of this many tiles (of ``tile_elements``, and of
#: ``working_memory``); heads beyond them take another pass, and a head
#: beyond them alone its own pass of :mod:`sknw._sums._fgt`. The powers of
#: its segments' offsets serve both its products: they are kept from the
#: first to the second where they fit in the other half, else taken again.
STACK_TILES = Tunable(64)
#: A stacked pass takes its segments' powers, values and sums in chunks of
#: this many tiles: each chunk costs about 30 array operations, and larger
#: ones leave the caches (measured at 2000 points: 20 % slower in one chunk).
SEGMENT_TILES = 4
#: Elements per point of a stacked pass's arrays, beyond its values: its box
#: and offset, its padded offset and place, and its box's bounds (and per
#: box, a segment's padding).
POINT_ELEMENTS = Tunable(8)
#: Points per segment of a box, by the boxes' mean number of points (up
#: to each bound): a stacked pass cuts each box into segments of this many
#: points (the last one padded) whose moments and sums are products of
#: small matrices, one batch of products for all of them. Measured on boxes
#: of 5, 20, 60 and 400 points on average: 8, 32, 32 and 32 points took
#: 0.45 to 0.6 of the time of one product per box or of Horner's rule.
SEGMENT_POINTS = ((10.0, 8), (20.0, 16), (math.inf, 32))
#: A stacked pass sums the moments of the segments of up to this many boxes
#: by ``np.add.reduceat``, of more by one sparse product (see
#: :func:`_box_sums`).
FEW_BOXES = 256
#: The translations of a stacked pass take the source boxes within this
#: many standard deviations of a target box; the boxes beyond, up to
#: ``REACH``, enter its bound with their whole terms, about ``e**-40`` of
#: their weight at most (``a**j e**(-a**2 / 2)``, ``a`` about 9 standard
#: deviations): the translations by windows 10 to 13 boxes away, about a
#: third of the products, are not taken.
INNER_REACH = Tunable(8.5)


@dataclass(kw_only=True)
class _HeadGrid:
    """One head's boxes of the sorted points: its standard deviation and box
    width, each point's offset from its box's centre (in standard
    deviations), each box's first point and cell, the span of the boxes in
    cells, the reach of a box's sums (in boxes) and the points of its
    boxes' segments."""

    sigma: float
    width: float
    offsets: np.ndarray
    starts: np.ndarray
    cells: np.ndarray
    span: int
    reach: int
    segment: int


def _head_grid(x, sigma, columns, budget):
    """The :class:`_HeadGrid` of the sorted offsets ``x`` for a Gaussian of
    standard deviation ``sigma``, or None where a stacked pass cannot serve
    it: boxes not formed (:func:`~sknw._sums._fgt.grid_boxes`), too few
    points for a run of local expansions (``LOCAL_RUN``, and
    ``LOCAL_QUERIES`` per cell of their span), or windows beyond ``budget``
    elements."""
    boxes = grid_boxes(x, sigma, slice(None)) if x.size >= LOCAL_RUN else None
    if boxes is None:
        return None
    _, cells, starts, _, offsets = boxes
    width = box_width(sigma)
    span = int(cells[-1] - cells[0]) + 1
    reach = int(math.floor((REACH + RADIUS) * sigma / width))
    windows = N_TERMS * columns * ((2 * reach + 1) * span + span + 2 * reach)
    if x.size < LOCAL_QUERIES * span or windows > budget:
        return None
    mean = x.size / starts.size
    segment = next(size for top, size in SEGMENT_POINTS if mean <= top)
    return _HeadGrid(
        sigma=sigma,
        width=width,
        offsets=offsets,
        starts=starts,
        cells=cells,
        span=span,
        reach=reach,
        segment=segment,
    )


def grid_moments(request, heads, powers, **params):
    """The :class:`~sknw._sums._base.MomentSums` of each of ``heads``
    (Gaussian, one feature) at every training point of ``request``, each
    left out of its own sums (``exclude_self``, ``self_weight``), by
    :func:`stacked_moment_sums`: a list with None for the heads it does not
    serve; None where ``"auto"`` would not take the transform (too few
    points)."""
    if request.auto and not request.large:
        return None
    V, w = request.values()
    origin = shared_value(request, "line_origin", lambda: line_origin(request.X))
    with np.errstate(over="ignore", invalid="ignore"):
        x = line_offsets(request.X, origin, request.scale)
    order = line_order(request)
    sigmas = [gaussian_sigma(head) for head in heads]
    got = stacked_moment_sums(
        x[order], _weighted_values(V, w, order), sigmas, powers, request.tile_elements
    )
    n, own = x.size, np.arange(x.size)
    terms = own_terms(own, V, 1.0, **params)  # the same for every head
    in_order = np.array_equal(order, own)  # the points sorted already
    out = []
    for sigma, sums in zip(sigmas, got, strict=True):
        if sums is None:
            out.append(None)
            continue
        acc, bound = sums
        if not in_order:
            acc, bound = (
                placed_rows(acc, order, n),
                placed_rows(bound, order, n, np.inf),
            )
        leave_own_term_out(acc, bound, own, V, 1.0, terms=terms)
        out.append(MomentSums(acc, bound, None, float(sigma)))
    return out


def stacked_moment_sums(x, Vx, sigmas, powers, tile_elements):
    """Sums of ``K u**j [w v, w]`` (``j`` up to ``powers``, ``u`` in standard
    deviations) at every point of the sorted offsets ``x`` (n,), each
    point's own term included, for each Gaussian of standard deviation in
    ``sigmas``, with the bounds of their errors per unit of the largest
    ``|v|`` (as :meth:`~sknw._sums._fgt.GaussIndex.moment_sums`).

    ``Vx`` holds ``[w v, w]`` in the order of ``x``. Returns ``[(sums (n,
    powers + 1, c), bound (n, powers + 1)) or None]``, one per head: None for
    the heads a stacked pass does not serve (see :func:`_head_grid`).
    """
    n, c = Vx.shape
    # Half for the arrays, half for the powers kept (and the chunks).
    budget = min(STACK_TILES.value * tile_elements, working_elements()) // 2
    point_elements = POINT_ELEMENTS.value
    sizes = (budget, SEGMENT_TILES * tile_elements, tile_elements)
    out = [None] * len(sigmas)
    stack, grids, used = [], [], 0  # the heads of the next pass
    for h, sigma in enumerate(sigmas):
        grid = _head_grid(x, sigma, c, budget)
        if grid is None:
            continue
        boxes = grid.starts.size
        per_box = _box_elements(powers, c) + grid.segment
        need = (point_elements + c) * n + per_box * boxes
        if need > budget:
            continue  # its own pass, in runs of boxes
        if stack and (used + need > budget or grids[0].segment != grid.segment):
            _stack_pass(grids, stack, Vx, powers, sizes, out)
            stack, grids, used = [], [], 0
        stack.append(h)
        grids.append(grid)
        used += need
    if stack:
        _stack_pass(grids, stack, Vx, powers, sizes, out)
    return out


def _box_elements(powers, c):
    """Elements per box of a stacked pass's arrays: its moments
    (``N_TERMS``), sums of Hermite functions (``N_LOCAL + powers``) and
    Taylor coefficients (``(powers + 1) N_LOCAL``, twice: as computed and
    laid out per box) of each of the ``c`` columns, and its bounds."""
    return (N_TERMS + N_LOCAL + powers + 2 * (powers + 1) * N_LOCAL) * c + powers + 1


def _segments(counts, size):
    """Each box (of ``counts`` points, in order) cut into segments of
    ``size`` points: each segment's box, each box's first segment, and each
    point's place in the segments laid end to end (the last segment of a box
    padded), increasing."""
    n_segments = -(-counts // size)
    first = np.cumsum(n_segments) - n_segments
    # Each point's place: its box's first place plus its rank in the box.
    place = np.arange(int(counts.sum()))
    place += np.repeat(first * size - (np.cumsum(counts) - counts), counts)
    return np.repeat(np.arange(counts.size), n_segments), first, place


def _stack_pass(grids, heads, Vx, powers, sizes, out):
    """The sums and bounds of the heads ``heads`` (of boxes ``grids``, of
    one segment size), all at once, into ``out``: the points of each head
    side by side, its boxes after the previous heads', each box cut into
    segments (:func:`_segments`). A segment's moments are the product of its
    values with the powers ``u**k / k!`` of its points' offsets, its sums
    the product of the same powers with its box's Taylor coefficients; both
    over chunks of segments (``sizes``: the elements of the powers kept, of
    a chunk, and of a run of target cells' moments and products). The
    powers are kept in one array from the first product to the second where
    they fit (else taken again, a chunk at a time, in one array), so that a
    pass allocates few large arrays: fresh ones cost a page fault per 512
    elements, about the time of the products on them."""
    n, c = Vx.shape
    size = grids[0].segment
    n_boxes = np.array([grid.starts.size for grid in grids])
    first_box = np.cumsum(n_boxes) - n_boxes
    starts = np.concatenate([g.starts + i * n for i, g in enumerate(grids)])
    counts = np.diff(np.append(starts, len(grids) * n))
    seg_box, first_seg, place = _segments(counts, size)
    u = np.zeros(seg_box.size * size)
    u[place] = np.concatenate([g.offsets for g in grids])
    # Each place's values (every head's points in order), one row a column.
    values = np.zeros((c, u.size))
    values[:, place] = np.tile(Vx.T, len(grids))
    # The powers serve both products: kept from the first where they fit.
    keep = N_POWERS * u.size <= sizes[0]
    record("stack_pass", heads=list(heads), segment=size, kept_powers=keep)
    step = max(1, sizes[1] // (size * (N_POWERS + (powers + 1) * c)))
    chunks = [(s0, min(s0 + step, seg_box.size)) for s0 in range(0, seg_box.size, step)]
    # Each chunk's points: those of the places before its last segment's end.
    ends = np.searchsorted(place, [s1 * size for _, s1 in chunks])
    moments = np.empty((seg_box.size, N_TERMS, c))
    buffer = np.empty((N_POWERS, u.size if keep else step * size))
    for s0, s1 in chunks:
        P = _powers(u[s0 * size : s1 * size], size, buffer, s0 * size if keep else 0)
        chunk = values[:, s0 * size : s1 * size].reshape(c, s1 - s0, size)
        np.matmul(P[:, :N_TERMS], chunk.transpose(1, 2, 0), out=moments[s0:s1])
    moments = _box_sums(moments, first_seg)  # (boxes, k, c)
    box_weight = moments[:, 0, -1]
    G, box_bound = _translated(
        grids, first_box, n_boxes, moments, box_weight, powers, sizes[2]
    )
    # The Taylor coefficients of each box, for powers holding the 1 / l!.
    L = _taylor_coefficients(G, powers, factorials=False)
    L = L.reshape(N_LOCAL, -1, starts.size).transpose(2, 0, 1)
    sums = np.empty((len(grids) * n, powers + 1, c))
    p0 = 0
    for (s0, s1), p1 in zip(chunks, ends, strict=True):
        if keep:
            P = buffer[:, s0 * size : s1 * size].reshape(N_POWERS, -1, size)
            P = P.transpose(1, 0, 2)
        else:
            P = _powers(u[s0 * size : s1 * size], size, buffer, 0)
        products = np.matmul(P[:, :N_LOCAL].transpose(0, 2, 1), L[seg_box[s0:s1]])
        np.take(
            products.reshape(-1, powers + 1, c),
            place[p0:p1] - s0 * size,
            axis=0,
            out=sums[p0:p1],
        )
        p0 = p1
    # Each box's bound: the boxes within its reach and those beyond it.
    skipped = SKIPPED * (REACH - RADIUS) ** np.arange(powers + 1)
    totals = np.add.reduceat(box_weight, first_box)
    box_bound += np.repeat(totals, n_boxes)[:, None] * skipped
    bound = np.repeat(box_bound, counts, axis=0)
    for i, h in enumerate(heads):
        out[h] = (sums[i * n : (i + 1) * n], bound[i * n : (i + 1) * n])


def _box_sums(moments, first):
    """Each box's moments, the sums of its segments' (``moments``,
    ``(segments, ...)``; ``first``: each box's first segment, increasing):
    ``np.add.reduceat`` over the first axis for up to :data:`FEW_BOXES`
    boxes, else one sparse product (measured on 2400 segments of 2336
    boxes: 0.10 ms against 0.32 ms; on 300 of 10 boxes, 0.041 against
    0.009 ms, the sparse matrix's fixed cost)."""
    if first.size <= FEW_BOXES:
        return np.add.reduceat(moments, first, axis=0)
    n = moments.shape[0]
    boxes = csr_matrix(
        (np.ones(n), np.arange(n), np.append(first, n)), shape=(first.size, n)
    )
    return (boxes @ moments.reshape(n, -1)).reshape((first.size,) + moments.shape[1:])


def _powers(u, size, buffer, at):
    """The powers ``u**k / k!`` (``k < N_POWERS``, products of ``u / k``) of
    the offsets ``u`` of whole segments of ``size`` places, as ``(segment,
    power, place)`` views whose matrices BLAS takes as they are."""
    P = buffer[:, at : at + u.size]
    P[0] = 1.0
    np.divide(u, _ORDERS[:, None], out=P[1:])
    for k in range(2, N_POWERS):
        P[k] *= P[k - 1]
    return P.reshape(N_POWERS, -1, size).transpose(1, 0, 2)


def _translated(grids, first_box, n_boxes, moments, box_weight, powers, run_elements):
    """The sums ``G`` (``(N_LOCAL + powers, c, boxes)``) of the Hermite
    functions over each box's windows of each head (its source boxes'
    ``moments``, ``(boxes, N_TERMS, c)``, translated in runs of target cells
    whose moments and products hold ``run_elements``), and each box's bound
    (``(boxes, powers + 1)``).

    Each target box takes the translations of the source boxes within
    :func:`_inner_reach` boxes (:func:`_residue_products`); the boxes
    beyond, up to the head's reach, enter its bound with their whole terms
    (:func:`_ring_bounds`)."""
    c = moments.shape[2]
    xs = [(g.reach - np.arange(2 * g.reach + 1)) * g.width / g.sigma for g in grids]
    inner = [_inner_reach(g) for g in grids]
    x = np.concatenate(xs)
    H, per_box = translation_terms(x, powers)
    # Each window beyond its head's inner reach: the ring's bounds.
    ring = np.concatenate(
        [
            np.abs(np.arange(2 * g.reach + 1) - g.reach) > r
            for g, r in zip(grids, inner, strict=True)
        ]
    )
    per_box[:, ring] = _ring_bounds(x[ring], powers)
    first_x = np.cumsum([x.size for x in xs]) - xs[0].size
    G = np.empty((N_LOCAL + powers, c, moments.shape[0]))
    box_bound = np.empty((moments.shape[0], powers + 1))
    for i, grid in enumerate(grids):
        b0, reach, r = first_box[i], grid.reach, inner[i]
        x0, x1 = first_x[i], first_x[i] + xs[i].size
        # Head i's coefficients of its inner windows (offsets reach - r to
        # reach + r of the grid's 2 reach + 1), a row (i, k) per window and
        # term.
        tables = translation_tables(H[:, x0 + reach - r : x0 + reach + r + 1], powers)
        windows = 2 * r + 1
        per_cell = c * (N_TERMS + tables.shape[0])
        run = max(1, run_elements // (per_cell * windows)) * windows
        for t0 in range(0, grid.span, run):
            t1 = min(t0 + run, grid.span)
            (lo, hi), on_grid, (a, b), at = _run_boxes(grid, n_boxes[i], t0, t1)
            if a == b:
                continue
            lo, hi = b0 + lo, b0 + hi
            span = t1 - t0
            targets = np.arange(span)[at]
            G[:, :, b0 + a : b0 + b] = _residue_products(
                moments[lo:hi], on_grid, span, reach, r, tables, targets
            )
            placed = np.zeros(span + 2 * reach)
            placed[on_grid] = box_weight[lo:hi]
            bounds = _windows(placed, 2 * reach + 1, axis=0) @ per_box[:, x0:x1].T
            box_bound[b0 + a : b0 + b] = bounds[at]
    return G, box_bound


def _residue_products(moments, on_grid, span, reach, inner, tables, targets):
    """The products of ``tables`` with the windows of the ``targets`` among
    the ``span`` target cells of a run (``(rows of tables, c, targets)``):
    window ``i`` (``i < W = 2 inner + 1``) of target ``t`` is the source
    cell ``t + reach - inner + i`` of the run's grid (``moments``,
    ``(boxes, N_TERMS, c)``, at the cells ``on_grid`` from ``reach`` cells
    before the run).

    Laid out cell after cell (per column), the windows of the targets ``t =
    q + W s`` (one residue ``q`` modulo ``W``) are consecutive rows of ``W
    N_TERMS`` elements that do not overlap: each residue's product reads
    them in place, as a matrix BLAS takes, so that no window is copied. The
    empty cells are targets too (their products unused)."""
    c = moments.shape[2]
    windows = 2 * inner + 1
    rows = -(-span // windows)  # per residue
    # From the first window's cell, the residues' rows end W (rows + 1) - 1
    # cells on, beyond the run's grid where the span is not a multiple of W.
    cells = max(span + 2 * reach, reach - inner + windows * (rows + 1) - 1)
    dense = np.zeros((c, cells, N_TERMS))
    dense[:, on_grid, :] = moments.transpose(2, 0, 1)
    flat = dense.reshape(-1)[(reach - inner) * N_TERMS :]
    item = flat.itemsize
    view = np.lib.stride_tricks.as_strided(
        flat,
        (c, windows, rows, windows * N_TERMS),
        (cells * N_TERMS * item, N_TERMS * item, windows * N_TERMS * item, item),
        writeable=False,
    )
    products = np.matmul(view, tables.T)  # target q + W s in [:, q, s]
    return products[:, targets % windows, targets // windows].transpose(2, 0, 1)


def _inner_reach(grid):
    """The windows (in boxes either side) a head's translations take: those
    within :data:`INNER_REACH` standard deviations (and a box's radius) of
    the target box, at most the head's reach."""
    inner = math.floor((INNER_REACH.value + RADIUS) * grid.sigma / grid.width)
    return min(grid.reach, int(inner))


def _ring_bounds(x, powers):
    """The bound per unit of weight of the terms ``K u**j`` (``j`` up to
    ``powers``) of a source box whose centre is ``x`` standard deviations
    from the target box's (``|x| - 2 RADIUS >= sqrt(powers)``): the whole
    terms, at the nearest distance ``a = |x| - 2 RADIUS`` of a query and a
    point of the boxes, ``a**j e^{-a**2 / 2}`` (decreasing beyond
    ``sqrt(j)``)."""
    a = np.abs(x) - 2.0 * RADIUS
    return a ** np.arange(powers + 1)[:, None] * np.exp(-0.5 * a * a)


def _run_boxes(grid, n_boxes, t0, t1):
    """The boxes of a run of target cells ``t0 <= t < t1`` (from the grid's
    first cell): its source boxes (within ``reach`` cells), their places on
    the run's grid (from ``reach`` cells before ``t0``), its target boxes,
    and their places on the run: ``(lo, hi), on_grid, (a, b), at``, the
    places slices where no cell of the span is empty."""
    reach = grid.reach
    if n_boxes == grid.span:  # box t in cell t
        lo, hi = max(0, t0 - reach), min(grid.span, t1 + reach)
        on_grid = slice(lo - (t0 - reach), hi - (t0 - reach))
        return (lo, hi), on_grid, (t0, t1), slice(None)
    cells = grid.cells - grid.cells[0]
    lo, a, b, hi = np.searchsorted(cells, [t0 - reach, t0, t1, t1 + reach])
    on_grid = (cells[lo:hi] - (t0 - reach)).astype(np.intp)
    return (lo, hi), on_grid, (a, b), (cells[a:b] - t0).astype(np.intp)
