"""The tiles backend: the Gaussian in several features, over tiles of
training points in the leaf order of a KD-tree, skipping the tiles too far
from a query to matter.

The training points of positive weight are put in the leaf order of a
KD-tree over their scaled coordinates and cut into tiles of
:data:`TILE_ROWS` points; each tile keeps its bounding box, its weight and,
per call, the sum of ``w |v|`` of each column of the values. A query's shift
``s = c near**2`` (``c < 0`` the head's log-linear coefficient, so
``log K = c d**2``) comes from its nearest training point, found by the tree
(for leave-one-out, its nearest other point, or itself where it keeps part
of its weight): its largest log weight.

Queries are taken in tiles of :data:`QUERY_ROWS`, in the order of their
nearest training point, so that a query tile is small. The smallest
distance ``g`` from a query tile's box to a training tile's box bounds every
term of the tile by ``exp(c g**2 - s)`` relative to a query's largest. A
tile is skipped for the query tile where ``c g**2 - s`` is below ``-reach``
for its smallest shift ``s``, with ``reach = log(W / (TOLERANCE w_min)) +
log 4`` (``W`` the training points' total weight, ``w_min`` their smallest
positive weight), so that the skipped terms weigh at most a quarter of
:data:`TOLERANCE` of each query's weight sum (weights spread over so many
orders of magnitude that ``reach`` exceeds :data:`MAX_REACH`, beyond the
floor of ``exp``, take the exact sums). Every term of the other tiles is
computed exactly, for every query of the tile (squared distances by a GEMM
of centred coordinates, within :data:`GEMM_ROUNDING`, else by
:func:`~scipy.spatial.distance.cdist`): a query's sums hold at least the
terms within its own reach, whichever queries share its tile, and differ
from one batch to another only in terms below its bound.

Leave-one-out of every point of the index (the queries are its points,
each once: a search's pass) takes each pair of tiles once instead, both
ways (:func:`_pair_sums`): a pair is computed where either tile's box is
within reach of the other's for its smallest shift, its terms
``exp(coef d**2)`` without shifts added to the sums of both tiles' points
(half the terms of the query tiles, which compute each pair for either
side). The sums are then shifted by each point's largest log term, as the
query tiles give them. A point whose largest term is too small for the
floor of ``exp`` without a shift (:func:`_lowest_shift`), or whose
unshifted sums are too small for floats (:data:`PAIR_SMALLEST`), takes the
query tiles, as do points of weight 0 (not in the index).

The skipped terms are bounded per query, from the tiles' boxes and their
sums of ``w`` and ``w |v|`` (of the weights and values of the call: the
index depends on which points have a positive weight only): each query is
served where its weight sum is within
:data:`TOLERANCE` (relative) of the exact one and each other sum within
:data:`TOLERANCE` times the larger of its sum of ``w K |v|`` and its weight
sum times the spread of the column's values (so that weighted averages are
within ``2 TOLERANCE`` of the spread of the values). The sum of ``w K |v|``
is ``|S|`` where a column keeps one sign, and at most the weight sum times
the spread where it changes sign, so that no sum of ``|v|`` is needed. The
other queries, and those whose coordinates are not finite, are summed
exactly by the dense backend.
"""

import math

import numpy as np
from scipy.spatial import cKDTree
from scipy.spatial.distance import cdist

from .._trace import record
from ._base import (
    _EPS64,
    EXP_FLOOR,
    TILE_ELEMENTS,
    Backend,
    Frame,
    _exp,
    _scaled_rows,
    _weighted_values,
    keep_ratios,
    own_rows,
    working_elements,
)
from ._dense import exact_rows
from ._fgt import TOLERANCE
from ._parallel import parallel_kernel_sums
from ._traits import is_gaussian, log_linear_coef, use_squared

#: Training points per tile.
TILE_ROWS = 64

#: Queries per query tile.
QUERY_ROWS = 32

#: Largest rounding error (relative, of each term) of the GEMM of
#: :func:`_log_terms`; beyond it, :func:`cdist`.
GEMM_ROUNDING = TOLERANCE / 2

#: Largest bound of the skipped terms (relative, see the module docstring).
SKIPPED = TOLERANCE / 2

#: Largest ``reach`` (see the module docstring): terms that far below a
#: query's largest are beyond the floor of ``exp`` (``EXP_FLOOR``); weights
#: spread over more than about ``exp(660)`` take the exact sums.
MAX_REACH = 690.0

#: Leave-one-out over every point of the index sums each pair of tiles once,
#: without shifts (:func:`_pair_sums`), for the points whose largest term
#: clears the floor of ``exp`` by this margin (in logarithms, see
#: :func:`_lowest_shift`).
UNSHIFTED_MARGIN = 60.0

#: ... and whose weight sum, unshifted, times the smallest scale of the
#: values (the spread of a column, at most 1) is at least ``n`` times this,
#: the smallest normal float: the products that underflow (each off by at
#: most ``2**-1075``) then change its sums by at most ``2**-52`` of their
#: slack. The other points take the query tiles.
PAIR_SMALLEST = 2.0**-1022

#: Queries prepared at once (scaled, their nearest point found).
QUERY_CHUNK = 1 << 13

#: ``algorithm="auto"`` takes the tiles from this many training points ...
AUTO_MIN_POINTS = 2048

#: ... where a query tile meets at most this share of them (estimated from
#: probes), with up to three features and with more (each term costs more) ...
AUTO_MAX_SHARE = (0.3, 0.12)

#: ... and, for one head of a grid (whose dense alternative shares one pass
#: over every pair with the other heads), at most this share.
AUTO_GRID_SHARE = (0.25, 0.05)

#: Leave-one-out of every point, with up to three features, computes each
#: pair of tiles once (:func:`_pair_sums`): ``"auto"`` takes the tiles for it
#: from this many training points, for a lone head at any share, for one head
#: of a grid where a query tile meets at most :data:`AUTO_PAIR_GRID_SHARE` of
#: them. Measured in two and three features, one head (its index built for
#: it): 0.7 to 0.9 of the dense pass's time at 1500 to 2000 points and every
#: share, 0.3 to 0.7 at 5000 points; about equal at 1000.
AUTO_PAIR_MIN_POINTS = 1500

#: ... (one head of a grid of 5 to 30 heads: the tiles took 0.3 to 0.7 of the
#: dense pass's time per head where its share was 0.2 to 0.5, 1.0 to 2.0
#: where it was 0.7 to 1).
AUTO_PAIR_GRID_SHARE = 0.5

#: Query tiles probed to estimate the share.
N_PROBE_TILES = 32


class TileIndex:
    """The training points of positive weight in tiles of a KD-tree order.

    Attributes: ``tree`` (over the scaled points), ``rows`` (the training
    index of each point in leaf order), ``position`` (the leaf position of
    each point of the tree), ``X`` (scaled coordinates in leaf order),
    ``starts``/``sizes`` of the tiles and their boxes ``lo``/``hi``,
    ``reach`` (see the module docstring; ``usable`` is False where it is
    beyond :data:`MAX_REACH`), ``finite`` (whether every scaled coordinate
    is) and ``positive`` (which training points have a positive weight,
    None for unit weights).
    """

    def __init__(self, X, w, scale, tile_elements=TILE_ELEMENTS):
        n = X.shape[0]
        positive = np.arange(n) if w is None else np.flatnonzero(w > 0)
        self.positive = None if w is None else np.asarray(w) > 0
        self.n_points = positive.size
        self.tile_elements = tile_elements
        self._exceeding = []
        self._own_nearest = None
        if not positive.size:
            return
        Xs = _scaled_rows(X, 0, n, scale)[positive]
        self.tree = cKDTree(Xs, copy_data=False)
        order = kd_order(Xs)
        self.rows = positive[order]
        self.position = np.empty_like(order)
        self.position[order] = np.arange(order.size)
        self._leaf = np.full(n, -1, dtype=np.intp)
        self._leaf[self.rows] = np.arange(order.size)
        self.X = np.ascontiguousarray(Xs[order])
        self.finite = bool(np.all(np.isfinite(self.X)))
        self.starts = np.arange(0, order.size, TILE_ROWS)
        self.sizes = np.diff(np.append(self.starts, order.size))
        self.lo = np.minimum.reduceat(self.X, self.starts, axis=0)
        self.hi = np.maximum.reduceat(self.X, self.starts, axis=0)
        wl = np.ones(order.size) if w is None else np.asarray(w, float)[self.rows]
        # In logarithms: the smallest weight may be subnormal.
        self.reach = (
            math.log(float(wl.sum()))
            - math.log(float(wl.min()))
            - math.log(TOLERANCE)
            + math.log(4.0)
        )
        self.usable = bool(self.reach <= MAX_REACH)

    def own_nearest(self):
        """Each point's squared distance to its nearest other point, in leaf
        order (``inf`` where there is none): found once per index, for the
        leave-one-out passes of every head it serves."""
        if self._own_nearest is None:
            self._own_nearest = self.nearest(self.X, self.rows)[0]
        return self._own_nearest

    def nearest(self, Qs, own=None):
        """``(near2, pos)``: each query's squared distance to its nearest
        training point (other than its own, ``own``) and that point's leaf
        position (``inf`` and -1 where there is none)."""
        if own is None:
            d, j = self.tree.query(Qs, k=1)
        else:
            d, j = self.tree.query(Qs, k=2)
            valid = j[:, 0] < self.n_points
            first_own = np.zeros(own.size, dtype=bool)
            first_own[valid] = self.rows[self.position[j[valid, 0]]] == own[valid]
            d = np.where(first_own, d[:, 1], d[:, 0])
            j = np.where(first_own, j[:, 1], j[:, 0])
        found = j < self.n_points
        pos = np.full(j.shape, -1, dtype=np.intp)
        pos[found] = self.position[j[found]]
        return np.where(found, d * d, np.inf), pos

    def leaf_of(self, rows):
        """Leaf position of each training index (-1: a point of weight 0)."""
        return self._leaf[rows]

    def value_stats(self, V, w):
        """Per call: the tiles' sums of ``w |v|`` (n_tiles, k), the spread
        of each column over the points, the tiles' weights (for the weights
        of this call), the products' ``[w V, w]`` in leaf order (None
        where they exceed the working memory: each block then gathers its
        own) and the largest ``|v|`` of each column."""
        k = V.shape[1]
        A = np.zeros((self.starts.size, k))
        wl = np.ones(self.rows.size) if w is None else np.asarray(w, float)[self.rows]
        W = np.add.reduceat(wl, self.starts)
        lo, hi = np.full(k, np.inf), np.full(k, -np.inf)
        Vx = None
        if self.rows.size * (k + 1) <= working_elements():
            Vx = np.empty((self.rows.size, k + 1))
            Vx[:, k] = wl
        step = max(1, self.tile_elements // max(k, 1) // TILE_ROWS) * TILE_ROWS
        for a in range(0, self.rows.size, step):
            rows = self.rows[a : a + step]
            Vb = np.asarray(V[rows], dtype=np.float64)
            wb = 1.0 if w is None else wl[a : a + step, None]
            A[a // TILE_ROWS : (a + rows.size - 1) // TILE_ROWS + 1] = np.add.reduceat(
                np.abs(Vb) * wb, self.starts[: -(-rows.size // TILE_ROWS)], axis=0
            )
            lo, hi = np.minimum(lo, Vb.min(axis=0)), np.maximum(hi, Vb.max(axis=0))
            if Vx is not None:
                Vx[a : a + rows.size, :k] = Vb * wb
        return A, hi - lo, W, Vx, np.maximum(np.abs(lo), np.abs(hi))

    def exceeds(self, coef, limit):
        """Whether a query tile meets more than ``limit`` of the points at
        the coefficient ``coef`` (:meth:`share`; a wider bandwidth, smaller
        ``|coef|``, meets at least as many as one known to exceed it)."""
        if any(-coef <= -c and limit <= lim for c, lim in self._exceeding):
            return True
        if self.share(coef) > limit:
            self._exceeding.append((coef, limit))
            return True
        return False

    def share(self, coef):
        """Estimated share of the training points a query tile meets, from
        :data:`N_PROBE_TILES` tiles of training points as queries."""
        n = self.n_points
        firsts = np.unique(
            np.linspace(0, max(n - QUERY_ROWS, 0), N_PROBE_TILES).astype(np.intp)
        )
        met = 0
        for a in firsts:
            Qt = self.X[a : a + QUERY_ROWS]
            near2, _ = self.nearest(Qt, self.rows[a : a + QUERY_ROWS])
            finite = np.isfinite(near2)
            if not finite.any():
                continue
            near = _candidates(self, Qt[finite], coef * near2[finite], coef)
            met += int(self.sizes[near].sum())
        return met / (max(firsts.size, 1) * max(n, 1))


def kd_order(X):
    """An order of the rows of ``X`` whose runs of :data:`TILE_ROWS` (the
    last may be shorter) are the cells of a KD-tree: each cell is split on
    its widest feature, at a multiple of :data:`TILE_ROWS` rows near its
    median."""
    order = np.arange(X.shape[0])
    cells = [(0, order.size)]
    while cells:
        split = []
        for a, b in cells:
            if b - a <= TILE_ROWS:
                continue
            rows = order[a:b]
            P = X[rows]
            axis = int(np.argmax(P.max(axis=0) - P.min(axis=0)))
            half = TILE_ROWS * -(-(b - a) // (2 * TILE_ROWS))
            part = np.argpartition(P[:, axis], half - 1)
            order[a:b] = rows[part]
            split += [(a, a + half), (a + half, b)]
        cells = split
    return order


def _candidates(index, Qt, s, coef):
    """Tiles within reach of some query of the tile ``Qt`` (from its box)."""
    lo, hi = Qt.min(axis=0)[None], Qt.max(axis=0)[None]
    gaps = _block_gaps(lo, hi, index.lo, index.hi)[0]
    return np.flatnonzero(coef * gaps >= float(np.min(s)) - index.reach)


class _Sums:
    """The sums of sorted queries (``acc``: ``[S, den]``) and the bounds of
    their skipped terms (``bound_den``, ``bound_S``)."""

    def __init__(self, m, k):
        self.acc = np.zeros((m, k + 1))
        self.bound_den = np.zeros(m)
        self.bound_S = np.zeros((m, k))

    @classmethod
    def of(cls, acc, bound_den, bound_S):
        """The sums and bounds given."""
        out = cls.__new__(cls)
        out.acc, out.bound_den, out.bound_S = acc, bound_den, bound_S
        return out

    def view(self, rows):
        """The same sums of the queries ``rows`` (a slice: views)."""
        return _Sums.of(self.acc[rows], self.bound_den[rows], self.bound_S[rows])


def _sorted_sums(index, stats, Qo, so, coef, *, V, w, own, keep, tile_elements):
    """:class:`_Sums` of queries ``Qo`` sorted in the tiles' order, with
    shifts ``so`` (and training indices ``own`` for leave-one-out), a query
    tile of :data:`QUERY_ROWS` at a time; the bounds of the tiles beyond
    reach and whether ``exp`` needs its floor (see :func:`_exp`), for a block
    of query tiles at once."""
    A, _, W, Vx, _ = stats
    m, k = Qo.shape[0], V.shape[1]
    out = _Sums(m, k)
    starts = np.arange(0, m, QUERY_ROWS)
    qlo = np.minimum.reduceat(Qo, starts, axis=0)
    qhi = np.maximum.reduceat(Qo, starts, axis=0)
    smin = np.minimum.reduceat(so, starts)
    smax = np.maximum.reduceat(so, starts)
    tile_of = np.arange(m) // QUERY_ROWS
    own_pos = None if own is None else index.leaf_of(own)
    block = max(1, tile_elements // max(index.starts.size * Qo.shape[1], 1))
    n_pairs = 0
    for b0 in range(0, starts.size, block):
        blk = slice(b0, min(b0 + block, starts.size))
        gaps = coef * _block_gaps(qlo[blk], qhi[blk], index.lo, index.hi)
        near = gaps >= (smin[blk] - index.reach)[:, None]
        rows = slice(starts[b0], min(starts[blk.stop - 1] + QUERY_ROWS, m))
        out.bound_den[rows], out.bound_S[rows] = _far_bounds(
            gaps, near, W, A, tile_of[rows] - b0, so[rows]
        )
        floor = _needs_floor(index, qlo[blk], qhi[blk], near, coef, smax[blk])
        for t in range(blk.start, blk.stop):
            rows = slice(starts[t], min(starts[t] + QUERY_ROWS, m))
            mine = None if own is None else (own_pos[rows], own[rows])
            box = (qlo[t], qhi[t], bool(floor[t - b0]))
            tiles = np.flatnonzero(near[t - b0])
            n_pairs += tiles.size
            _tile_sums(
                index,
                Qo[rows],
                so[rows],
                coef,
                values=(V, w, Vx),
                own=mine,
                keep=keep,
                near=tiles,
                out=out.view(rows),
                tile_elements=tile_elements,
                box=box,
            )
    # The pairs of a query tile and a tile within its reach, computed.
    record("query_tiles", n_queries=m, n_pairs=n_pairs)
    return out


def _pair_sums(index, stats, coef, own, *, keep, tile_elements, sums, exact):
    """Leave-one-out where the queries are the index's points, each once
    (``own``: their training indices; points of weight 0, not in the index,
    may be among them): each pair of tiles within reach of either one's box
    is computed once (:func:`_pair_blocks`), without shifts. Stores the sums
    the bound accepts (shifted by each point's largest log term, as
    :func:`_chunk_sums` gives them), block by block of tiles as they are
    complete, and returns the queries left to the query tiles: those not in
    the index, those whose shift is below :func:`_lowest_shift` and those
    whose unshifted sums are too small for floats (:data:`PAIR_SMALLEST`).
    None where the queries are not the index's points, a coordinate is not
    finite, or the values in leaf order exceed the working memory
    (``stats``)."""
    spread, Vx, top = stats[1], stats[3], stats[4]
    leaf = index.leaf_of(own)
    inside = leaf >= 0
    query_of = np.full(index.n_points, -1, dtype=np.intp)
    query_of[leaf[inside]] = np.flatnonzero(inside)
    if Vx is None or not index.finite or np.any(query_of < 0):
        return None
    if np.count_nonzero(inside) != index.n_points:  # a point twice
        return None
    s = coef * index.own_nearest()
    if keep is not None:  # a point that keeps part of its weight: its own
        s[keep[index.rows] > 0] = 0.0
    # Each column's scale in the bound's slack: its spread, or its largest
    # |v| where it is constant (a column of zeros sums exact zeros).
    scales = np.where(spread > 0, spread, top)
    used = scales > 0
    ratio = float(np.max(top[used] / scales[used], initial=1.0))
    valid = s >= _lowest_shift(Vx[:, -1], keep, index.rows, ratio)
    s = np.where(valid, s, np.inf)  # the others need nothing of the pairs
    smallest = (
        index.n_points * PAIR_SMALLEST / min(1.0, np.min(scales[used], initial=1.0))
    )
    rest = [np.flatnonzero(~inside)]
    acc = np.zeros(Vx.shape)
    for rows, bound_den, bound_S in _pair_blocks(
        index, stats, coef, s, keep, tile_elements, acc
    ):
        ok = valid[rows] & (acc[rows, -1] >= smallest)
        mine = np.flatnonzero(ok) + rows.start
        got = _Sums.of(
            acc[mine] * np.exp(-s[mine])[:, None], bound_den[ok], bound_S[ok]
        )
        _accept(got, s[mine], spread, query_of[mine], sums, exact)
        rest.append(query_of[rows][~ok])
    return np.sort(np.concatenate(rest))


def _lowest_shift(wl, keep, rows, ratio=1.0):
    """The smallest shift ``s`` (largest log term) of a point whose sums the
    pairs of tiles compute without shifts, for the weights ``wl`` (of the
    index's points), the shares ``keep`` its points keep of their own and
    the largest ``ratio`` of a column's largest ``|v|`` to its scale (its
    spread).

    A point's weight sum is at least ``w e**s``, ``w`` the smallest weight
    (or kept weight) of a term, and the slack of its other sums (module
    docstring) at least that times the column's scale. ``exp`` floored
    changes each term ``w_j e**L`` by at most ``w_j e**EXP_FLOOR``: the
    weight sum by ``W e**EXP_FLOOR`` (``W`` the total weight), the other
    sums by that times their largest ``|v|``. With ``s >= EXP_FLOOR +``
    :data:`UNSHIFTED_MARGIN` ``+ log(W / w) + log(max(1, ratio))`` that is
    at most ``e**-UNSHIFTED_MARGIN`` of the weight sum and of the slack. In
    logarithms: the smallest weight may be subnormal, the total overflow
    (no point then takes the pairs)."""
    smallest = float(wl.min())
    if keep is not None:
        kept = keep[rows] * wl
        kept = kept[kept > 0]
        smallest = min(smallest, float(kept.min(initial=smallest)))
    with np.errstate(over="ignore"):
        total = float(wl.sum())
    spread = math.log(total) - math.log(smallest)
    return EXP_FLOOR + UNSHIFTED_MARGIN + spread + math.log(max(1.0, ratio))


def _pair_blocks(index, stats, coef, s, keep, tile_elements, acc):
    """Sum every pair of tiles within reach of either one's box into
    ``acc``, the points' ``[S, den]`` in leaf order (their terms ``exp(coef
    d**2)``, not shifted, each point's own term left out or kept in its
    share), per block of tiles; after each block, yield the leaf rows it
    completes (a slice: their pairs with the tiles before them were summed
    by the earlier blocks) and their bounds of the other tiles' terms
    (shifted by ``s``; ``s`` is ``inf`` for the points that need no tile,
    whose bounds are then 0)."""
    A, _, W, Vx, _ = stats
    nt = index.starts.size
    smin = np.minimum.reduceat(s, index.starts)
    tile_of = np.repeat(np.arange(nt), index.sizes)
    block = max(1, tile_elements // max(nt * index.X.shape[1], 1))
    per_chunk = max(1, tile_elements // (TILE_ROWS * TILE_ROWS))
    n_pairs = 0
    for b0 in range(0, nt, block):
        blk = slice(b0, min(b0 + block, nt))
        gaps = coef * _block_gaps(index.lo[blk], index.hi[blk], index.lo, index.hi)
        # Symmetric (the gaps are, bit for bit): a pair is computed once.
        pair = gaps >= np.minimum(smin[blk, None], smin[None, :]) - index.reach
        pair[np.arange(pair.shape[0]), np.arange(blk.start, blk.stop)] = True
        rows = slice(
            index.starts[b0], index.starts[blk.stop - 1] + index.sizes[blk.stop - 1]
        )
        bounds = _far_bounds(gaps, pair, W, A, tile_of[rows] - b0, s[rows])
        # Unshifted terms: the floor where a term itself may fall below it.
        floor = _needs_floor(index, index.lo[blk], index.hi[blk], pair, coef, 0.0)
        for a in range(blk.start, blk.stop):
            tiles = np.flatnonzero(pair[a - b0, a:]) + a
            n_pairs += tiles.size
            for c0 in range(0, tiles.size, per_chunk):
                _add_pairs(
                    index,
                    acc,
                    a,
                    tiles[c0 : c0 + per_chunk],
                    coef=coef,
                    Vx=Vx,
                    keep=keep,
                    floor=bool(floor[a - b0]),
                )
        yield rows, *bounds
    # The pairs of tiles computed (each once, a tile with itself included).
    record("tile_pairs", n_tiles=nt, n_pairs=n_pairs)


def _add_pairs(index, acc, a, tiles, *, coef, Vx, keep, floor):
    """Add the terms between tile ``a`` and the ``tiles`` (from ``a`` on) to
    the sums ``acc`` of both sides (tile ``a``'s own terms once, each point's
    own term left out or kept in its share)."""
    ra = slice(index.starts[a], index.starts[a] + index.sizes[a])
    pos = _tile_positions(index, tiles)
    Xa = index.X[ra]
    E = _exp(
        _log_terms(
            Xa, index.X[pos], np.zeros(Xa.shape[0]), coef, (index.lo[a], index.hi[a])
        ),
        floor,
    )
    mine = tiles[0] == a  # its own tile first: the diagonal holds own terms
    if mine:
        diag = np.arange(Xa.shape[0])
        E[diag, diag] *= 0.0 if keep is None else keep[index.rows[ra]]
    acc[ra] += E @ Vx[pos]
    if mine:  # the tile's terms with itself once
        E, pos = E[:, Xa.shape[0] :], pos[Xa.shape[0] :]
    if pos.size:
        acc[pos] += E.T @ Vx[ra]


def _tile_positions(index, tiles):
    """The leaf positions of the points of ``tiles`` (in order)."""
    # Every tile holds TILE_ROWS points but the last, which may hold fewer.
    pos = (index.starts[tiles][:, None] + np.arange(TILE_ROWS)).ravel()
    if tiles[-1] == index.starts.size - 1:
        pos = pos[: pos.size - TILE_ROWS + int(index.sizes[-1])]
    return pos


def _block_gaps(qlo, qhi, tlo, thi, far=False):
    """Squared smallest distances between query boxes ``[qlo, qhi]`` and
    tile boxes, (n_boxes, n_tiles); a query point is the box ``[q, q]``.
    With ``far``, the squared largest distances.

    Feature by feature on (n_boxes, n_tiles) arrays (the same arithmetic
    for boxes and points, so that a box's gap is at most its points'): two
    to five times faster than over (n_boxes, n_tiles, d) arrays, from the
    query tiles' blocks to the passes' blocks of query tiles."""
    out = np.zeros((qlo.shape[0], tlo.shape[0]))
    for k in range(qlo.shape[1]):
        if far:
            g = np.maximum(
                np.abs(thi[:, k] - qlo[:, k, None]), np.abs(qhi[:, k, None] - tlo[:, k])
            )
        else:
            g = np.maximum(tlo[:, k] - qhi[:, k, None], qlo[:, k, None] - thi[:, k])
            np.maximum(g, 0.0, out=g)
        g *= g
        out += g
    return out


def _far_bounds(logs, near, W, A, t, s):
    """The bounds of the weight sums and of the other sums (``(rows,)``,
    ``(rows, k)``) of queries of shifts ``s`` in the boxes ``t`` of the log
    bounds ``logs`` (boxes by tiles), from the tiles beyond reach (``near``:
    the others), relative to each query's largest term."""
    top, F, FA = _far_sums(logs, near, W, A)
    with np.errstate(over="ignore", invalid="ignore"):
        scale = np.exp(top[t] - s)
        # No tile beyond reach (F = 0) bounds nothing, at any scale.
        return (
            np.where(F[t] > 0, F[t] * scale, 0.0),
            np.where(FA[t] > 0, FA[t] * scale[:, None], 0.0),
        )


def _needs_floor(index, qlo, qhi, near, coef, smax):
    """Whether ``exp`` needs its floor for the terms of each box ``[qlo,
    qhi]`` with the tiles ``near`` it, for its largest shift ``smax`` (0 for
    unshifted terms): where the farthest point of such a tile may fall below
    :data:`EXP_FLOOR`."""
    far = _block_gaps(qlo, qhi, index.lo, index.hi, far=True)
    return coef * np.where(near, far, 0.0).max(axis=1) - smax < EXP_FLOOR


def _far_sums(logs, near, W, A):
    """Per query box: ``top``, the largest log bound of the tiles beyond
    reach (``near``: the others), and the sums of their weights ``F`` and of
    their ``w |v|`` (``FA``) times ``exp(log bound - top)``."""
    far = np.where(near, -np.inf, logs)
    top = far.max(axis=1)
    top = np.where(np.isfinite(top), top, 0.0)
    base = np.exp(far - top[:, None])
    return top, base @ W, base @ A


def _tile_sums(index, Qt, s, coef, *, values, own, keep, near, out, tile_elements, box):
    """Add the terms of one query tile (of bounding box ``box``, ``(lo, hi,
    floor)``, ``floor`` whether ``exp`` needs its floor) from the tiles
    ``near`` it to ``out``: every term of those tiles, for every query of the
    tile (the others, beyond reach of the tile's box, are bounded by
    :func:`_sorted_sums`). ``values``: ``(V, w, Vx)``, ``Vx`` the products'
    ``[w V, w]`` in leaf order or None; ``own``: the queries' leaf positions
    and training indices (leave-one-out) or None."""
    per_chunk = max(1, tile_elements // (Qt.shape[0] * TILE_ROWS))
    for c0 in range(0, near.size, per_chunk):
        _add_terms(
            index,
            out,
            Qt,
            s,
            coef,
            values=values,
            tiles=near[c0 : c0 + per_chunk],
            own=own,
            keep=keep,
            box=box,
        )


def _add_terms(index, out, Qt, s, coef, *, values, tiles, own, keep, box):
    """Add the terms of the training ``tiles`` to the queries ``Qt`` (see
    :func:`_tile_sums`), each query's own term left out (or kept in the share
    of its weight it keeps)."""
    pos = _tile_positions(index, tiles)
    L = _log_terms(Qt, index.X[pos], s, coef, box[:2])
    if own is not None:
        # In the log, before exp: an isolated point's own term, far above
        # its shift (its nearest other point's), would overflow.
        own_pos, own_rows = own
        at = np.minimum(np.searchsorted(pos, own_pos), pos.size - 1)
        hit = np.flatnonzero((pos[at] == own_pos) & (own_pos >= 0))
        if hit.size:
            with np.errstate(divide="ignore"):
                kept = -np.inf if keep is None else np.log(keep[own_rows[hit]])
            L[hit, at[hit]] += kept
    E = _exp(L, box[2])
    V, w, Vx = values
    out.acc += E @ (_weighted_values(V, w, index.rows[pos]) if Vx is None else Vx[pos])


def _log_terms(Qt, Xt, s, coef, box=None):
    """The shifted log terms ``coef |q - x|**2 - s``: one GEMM of the
    coordinates centred on the queries' middle (of their bounding box
    ``box``, ``(lo, hi)``, by default computed) where its rounding error is
    within :data:`GEMM_ROUNDING`, else from :func:`cdist`.

    The GEMM sums ``d + 2`` products whose absolute values add up to at most
    ``|coef| (|q - c| + |x - c|)**2 + |s|``; with its rounded operands it errs
    by at most ``(d + 4) u`` times that (``u`` the unit roundoff), a relative
    error of each term.
    """
    lo, hi = (Qt.min(axis=0), Qt.max(axis=0)) if box is None else box
    c = (hi + lo) / 2
    d = Qt.shape[1]
    # The training rows centred, feature by feature (contiguous rows of the
    # GEMM's right operand), and the queries as its left operand.
    right = np.empty((d + 2, Xt.shape[0]))
    Xc = np.subtract(Xt.T, c[:, None], out=right[:d])
    xn = np.einsum("ij,ij->j", Xc, Xc)
    left = np.empty((Qt.shape[0], d + 2))
    Qc = np.subtract(Qt, c, out=left[:, :d])
    qn = np.einsum("ij,ij->i", Qc, Qc)
    top = math.sqrt(qn.max()) + math.sqrt(xn.max())
    s_top = max(-float(s.min()), float(s.max()))
    error = (d + 4) * _EPS64 * (-coef * top * top + s_top)
    if not error <= GEMM_ROUNDING:
        L = cdist(Qt, Xt, "sqeuclidean")
        L *= coef
        L -= s[:, None]
        return L
    left[:, d] = qn - s / coef
    left[:, d + 1] = 1.0
    right[:d] *= -2.0 * coef
    right[d] = coef
    np.multiply(xn, coef, out=right[d + 1])
    return left @ right


def tiles_kernel_sums(
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
    """:func:`~sknw._sums.kernel_sums` of Gaussian heads in several
    features (each ``exp(a u**2)``: a Gaussian, or its square for the
    standard errors), one head after the other, from a :class:`TileIndex` of
    the same training points and weights, within :data:`TOLERANCE` (see the
    module docstring; the other queries are summed exactly).

    With ``exclude_self`` (leave-one-out, see :func:`~sknw._sums.kernel_sums`)
    each query's own term is left out of its terms (or kept in the share of
    its weight it keeps), its shift is that of its nearest other point, and
    the bound is checked against the sums that remain.
    """
    m = Q.shape[0]
    own = own_rows(m, params)
    record("tiles_sums", n_queries=m, n_heads=len(heads), leave_one_out=own is not None)
    w = None if sample_weight is None else np.asarray(sample_weight, np.float64)
    keep = None
    if own is not None:
        keep = keep_ratios(params.get("self_weight"), w, X.shape[0])
    usable = index.n_points and index.usable and m
    stats = index.value_stats(V, w) if usable else None
    out = []
    for head in heads:
        sums, exact = _head_sums(
            index,
            stats,
            Q,
            V,
            head,
            w=w,
            own=own,
            keep=keep,
            scale=scale,
            tile_elements=tile_elements,
        )
        exact_rows(
            sums,
            exact,
            Q,
            X,
            V,
            [head],
            metric=metric,
            metric_params=metric_params,
            scale=scale,
            sample_weight=sample_weight,
            tile_elements=tile_elements,
            **params,
        )
        out.append(sums)
    return out


def _head_sums(index, stats, Q, V, head, *, w, own, keep, scale, tile_elements):
    """``((S, den, M), exact)`` of one head of :func:`tiles_kernel_sums`:
    its sums where the tiles serve them, and the queries left to the exact
    sums (all of them where ``stats`` is None: no usable index)."""
    coef = log_linear_coef(head, True)
    m, k = Q.shape[0], V.shape[1]
    S, den, M = np.zeros((m, k)), np.zeros(m), np.zeros(m)
    exact = np.ones(m, dtype=bool)
    if coef is None or stats is None:
        return (S, den, M), exact
    rest = None
    if own is not None:  # every point at once: each pair of tiles once
        rest = _pair_sums(
            index,
            stats,
            coef,
            own,
            keep=keep,
            tile_elements=tile_elements,
            sums=(S, den, M),
            exact=exact,
        )
    if rest is None:
        _query_sums(
            index,
            stats,
            Q,
            coef,
            V=V,
            w=w,
            own=own,
            keep=keep,
            scale=scale,
            tile_elements=tile_elements,
            sums=(S, den, M),
            exact=exact,
        )
    elif rest.size:  # the queries the pairs leave, as any others
        sub = (np.zeros((rest.size, k)), np.zeros(rest.size), np.zeros(rest.size))
        left = np.ones(rest.size, dtype=bool)
        _query_sums(
            index,
            stats,
            Q[rest],
            coef,
            V=V,
            w=w,
            own=own[rest],
            keep=keep,
            scale=scale,
            tile_elements=tile_elements,
            sums=sub,
            exact=left,
        )
        done = rest[~left]
        S[done], den[done], M[done] = (a[~left] for a in sub)
        exact[done] = False
    return (S, den, M), exact


def _query_sums(
    index, stats, Q, coef, *, V, w, own, keep, scale, tile_elements, sums, exact
):
    """The sums of the queries ``Q`` (training indices ``own`` for
    leave-one-out) by query tiles, :data:`QUERY_CHUNK` queries at a time."""
    for q0 in range(0, Q.shape[0], QUERY_CHUNK):
        q1 = min(q0 + QUERY_CHUNK, Q.shape[0])
        _chunk_sums(
            index,
            stats,
            Q,
            q0,
            q1,
            coef=coef,
            V=V,
            w=w,
            own=own,
            keep=keep,
            scale=scale,
            tile_elements=tile_elements,
            sums=sums,
            exact=exact,
        )


def _chunk_sums(
    index, stats, Q, q0, q1, *, coef, V, w, own, keep, scale, tile_elements, sums, exact
):
    """The sums of the queries ``q0:q1`` that the bound accepts."""
    spread = stats[1]
    Qs = _scaled_rows(Q, q0, q1, scale)
    finite = np.flatnonzero(np.isfinite(Qs).all(axis=1))
    if not finite.size:
        return
    own_c = None if own is None else own[q0:q1][finite]
    near2, pos = index.nearest(Qs[finite], own_c)
    if keep is not None:
        # A point that keeps part of its weight is its own nearest point.
        mine = keep[own_c] > 0
        near2[mine], pos[mine] = 0.0, index.leaf_of(own_c[mine])
    ok = np.flatnonzero(np.isfinite(near2))
    ok = ok[np.argsort(pos[ok], kind="stable")]
    order, so = finite[ok], coef * near2[ok]
    if not order.size:
        return
    mine = None if own is None else own_c[ok]
    got = _sorted_sums(
        index,
        stats,
        Qs[order],
        so,
        coef,
        V=V,
        w=w,
        own=mine,
        keep=keep,
        tile_elements=tile_elements,
    )
    _accept(got, so, spread, q0 + order, sums, exact)


def _accept(got, s, spread, rows, sums, exact):
    """Store the :class:`_Sums` ``got`` (shifts ``s``) of the queries
    ``rows`` whose bound is within :data:`SKIPPED` (module docstring) in
    ``sums``, and mark them done in ``exact``."""
    S, den, M = sums
    d = got.acc[:, -1]
    # |S| is the sum of w K |v| where a column keeps one sign; where it
    # changes sign, that sum is below d times its spread, which holds it.
    slack = np.maximum(np.abs(got.acc[:, :-1]), d[:, None] * spread[None, :])
    accept = (
        (d > 0)
        & (got.bound_den <= SKIPPED * d)
        & np.all(got.bound_S <= SKIPPED * slack, axis=1)
    )
    done = rows[accept]
    S[done], den[done], M[done] = got.acc[accept, :-1], d[accept], s[accept]
    exact[done] = False


def tiles_why_not(kernel, metric, metric_params, n_features):
    """Why the tiles backend cannot serve (or None)."""
    if (
        n_features >= 2
        and is_gaussian(kernel)
        and use_squared(metric, [_Probe(kernel)], metric_params)
    ):
        return None
    return (
        "algorithm='tiles' needs at least two features, the Gaussian kernel "
        f"(not {kernel!r}) and the plain euclidean metric (not {metric!r})."
    )


class _Probe:
    """A head-like holder of a kernel (and a scalar divisor), for the traits
    that take heads."""

    divisor = 1.0

    def __init__(self, kernel):
        self.kernel = kernel


def _shared_index(request):
    """The :class:`TileIndex` of the request's training points, weights and
    scale, built once per grid (``request.shared``)."""
    scale = request.scale
    shared = request.shared if request.shared is not None else {}
    for key, index in shared.get("tiles", []):
        if key == scale if isinstance(scale, Frame) else np.array_equal(key, scale):
            return index
    index = TileIndex(request.X, request.sample_weight, scale, request.tile_elements)
    shared.setdefault("tiles", []).append((scale, index))
    return index


class TilesBackend(Backend):
    """The Gaussian in several features over tiles of a KD-tree order, to
    :data:`TOLERANCE`; under ``"auto"`` from :data:`AUTO_MIN_POINTS`
    training points where a query tile meets at most :data:`AUTO_MAX_SHARE`
    of them (:data:`AUTO_GRID_SHARE` for one head of a grid), and for
    leave-one-out of every point as :data:`AUTO_PAIR_MIN_POINTS` says. The
    index holds the training points, not the values: it serves any values
    with the weights it was built with."""

    name = "tiles"
    leave_one_out = True

    def why_not(self, kernel, metric, metric_params, n_features):
        return tiles_why_not(kernel, metric, metric_params, n_features)

    def fit(self, request):
        n, d = request.X.shape
        pairs = request.every_point and d <= 3
        if request.auto and n < (AUTO_PAIR_MIN_POINTS if pairs else AUTO_MIN_POINTS):
            return None
        coef = log_linear_coef(request.head, True)
        index = _shared_index(request)
        if request.auto:
            if coef is None or not index.n_points or not index.usable:
                return None
            # The pairs need the values in leaf order (at least two columns).
            pairs = pairs and index.finite and 2 * n <= working_elements()
            if not pairs and n < AUTO_MIN_POINTS:
                return None
            if pairs:
                limit = AUTO_PAIR_GRID_SHARE if request.grid else None
            else:
                limits = AUTO_GRID_SHARE if request.grid else AUTO_MAX_SHARE
                limit = limits[d > 3]
            if limit is not None and index.exceeds(coef, limit):
                return None
        return index

    def serves(self, index, V, heads, sample_weight):
        # Heads of the Gaussian's form (a Gaussian and its square, for the
        # standard errors), each over the same tiles. The index depends on
        # which points have a positive weight only (the tiles' weights come
        # with each call).
        if not all(is_gaussian(head.kernel) for head in heads):
            return False
        if index.positive is None or sample_weight is None:
            return index.positive is None and sample_weight is None
        return np.array_equal(index.positive, np.asarray(sample_weight) > 0)

    def sums(self, index, Q, X, V, heads, *, n_jobs=None, **params):
        self.check_params(params)
        return parallel_kernel_sums(
            Q,
            X,
            V,
            heads,
            n_jobs=n_jobs,
            sums=tiles_kernel_sums,
            index=index,
            **params,
        )
