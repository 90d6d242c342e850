"""Product kernels of continuous and discrete features, summed cell by cell.

With discrete features (unordered categories, ordered levels) the kernel of
a query ``q`` and a training point ``x`` is the continuous kernel of their
continuous columns times one factor per discrete column,
``K(d(q_c, x_c) / h) * prod_j k_j(q_j, x_j; lambda_j)`` (see
:mod:`sknw._features.discrete`). The discrete factors depend only on the query's
levels and the training point's *cell* (its combination of levels), so the
sums split over cells::

    S(q) = sum_cells F(q, cell) * S_cell(q)

where ``S_cell`` is the continuous kernel's sum over the cell's training
points: an ordinary request to any backend (each cell has its own index,
built at fit), and ``F`` a scalar per query and cell. The per-cell triples
``(S, den, M)`` are combined in the log domain (``log F + M``), so the
shifts keep the sums exact however small the factors. A query's own point
lies in one cell, whose request leaves it out (leave-one-out). Heads that
share a continuous head and differ in their smoothing parameters (a grid of
``lambda``) share each cell's continuous sums.

``X`` and ``Q`` hold every column (the discrete ones as level codes, see
:class:`DiscreteFactors`); the ``scale`` of a request divides the continuous
columns only.
"""

from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from .._trace import Tunable, record
from ._base import (
    NaNDistanceError,
    _as_float64,
    _check_user_kernel,
    _log_weights,
    _scaled_rows,
    _signs,
    _tile_shape,
    _weighted_values,
    all_point_sums,
    keep_ratios,
    own_rows,
    pairwise_distances,
)
from ._traits import is_user, use_squared


@dataclass(frozen=True)
class DiscreteFactors:
    """The discrete columns of a product kernel and their smoothing.

    ``columns`` and ``continuous`` index the columns of ``X`` and ``Q``;
    ``kernels`` (:class:`sknw._features.discrete.DiscreteKernel`), ``levels`` (the
    number of levels seen at fit), ``lambdas`` and ``coded`` (whether the
    column holds level codes, ``-1`` for a level unseen at fit, rather than
    ordered integer values) are per discrete column. ``power`` raises every
    factor (2 for the sums of the squared weights; 0 gives 1 where the factor
    is positive and 0 where it is 0, for counting the points in a window).
    """

    columns: tuple
    continuous: tuple
    kernels: tuple
    levels: tuple
    lambdas: tuple
    coded: tuple
    power: int = 1

    def level_distances(self, j, q, x):
        """Level distances of discrete column ``j`` between the query codes
        ``q`` and a training level ``x`` (see :mod:`sknw._features.discrete`)."""
        if not self.kernels[j].ordered:
            return (q != x).astype(np.float64)
        t = np.abs(q - x)
        if self.coded[j]:
            t = np.where(q < 0, float(self.levels[j]), t)
        return t

    def log_factors(self, Q, cell):
        """Log of the product of the factors of the queries ``Q`` (every
        column) with a cell's levels ``cell``."""
        return FactorTable(self, Q, np.asarray(cell)[None, :]).column(0)

    def table(self, Q, levels):
        """The :class:`FactorTable` of the queries ``Q`` and the cells of
        ``levels`` (C, p)."""
        return FactorTable(self, Q, levels)

    def counted(self, X, sample_weight=None):
        """These factors with ``c`` of each unordered feature counted among
        the training points ``X`` of positive weight (the levels a fit to
        them sees: the same factors as without the points of weight 0)."""
        rows = slice(None) if sample_weight is None else np.asarray(sample_weight) > 0
        levels = list(self.levels)
        for j, col in enumerate(self.columns):
            if not self.kernels[j].ordered:
                levels[j] = max(np.unique(np.asarray(X[rows, col])).size, 1)
        levels = tuple(levels)
        return self if levels == self.levels else replace(self, levels=levels)

    def self_factor(self):
        """The factor of a point with itself (every level matched)."""
        zero = np.zeros(1)
        logs = [
            float(k.log_factor(zero, lam, c)[0])
            for k, lam, c in zip(self.kernels, self.lambdas, self.levels, strict=True)
        ]
        return float(np.exp(self.power * sum(logs)))


class FactorTable:
    """The log factors of some queries with every cell, from one small table
    per discrete feature: the queries' log factors with each of the levels
    the cells hold (m, L_j), gathered per cell."""

    def __init__(self, factors, Q, levels):
        self.power, self.parts = factors.power, []
        for j, col in enumerate(factors.columns):
            unique, inverse = np.unique(levels[:, j], return_inverse=True)
            t = factors.level_distances(j, Q[:, col][:, None], unique[None, :])
            kernel = factors.kernels[j]
            T = kernel.log_factor(t, factors.lambdas[j], factors.levels[j])
            self.parts.append((T, np.ravel(inverse)))
        self.m = Q.shape[0]

    def _finish(self, out):
        if self.power == 0:  # where the factor is positive: 1, else 0
            return np.where(np.isfinite(out), 0.0, -np.inf)
        return self.power * out

    def column(self, c):
        """The log factors (m,) of the queries with cell ``c``."""
        out = np.zeros(self.m)
        for T, inverse in self.parts:
            out = out + T[:, inverse[c]]
        return self._finish(out)

    def matrix(self, cells):
        """The log factors (m, len(cells)) with the cells of indices
        ``cells``."""
        out = np.zeros((self.m, len(cells)))
        for T, inverse in self.parts:
            out = out + T[:, inverse[cells]]
        return self._finish(out)


@dataclass(frozen=True)
class DiscreteHead:
    """A head of a product kernel: the continuous ``head`` (a
    :class:`~sknw._sums._base.Head`) and the discrete ``factors``. Its
    ``kernel`` and ``divisor`` are the continuous head's."""

    head: object
    factors: DiscreteFactors

    @property
    def kernel(self):
        return self.head.kernel

    @property
    def divisor(self):
        return self.head.divisor

    def with_head(self, head, power=None):
        """The same factors with another continuous head (and ``power``)."""
        factors = self.factors
        if power is not None:
            factors = replace(factors, power=power)
        return DiscreteHead(head, factors)


def recounted(heads, X, sample_weight=None):
    """The discrete heads with their levels counted on the training points
    ``X`` (see :meth:`DiscreteFactors.counted`)."""
    done = {}
    out = []
    for h in heads:
        if h.factors not in done:
            done[h.factors] = h.factors.counted(X, sample_weight)
        out.append(DiscreteHead(h.head, done[h.factors]))
    return out


def discrete_of(heads):
    """The :class:`DiscreteFactors` of the first discrete head (None: no
    head is discrete). The heads of one request are all discrete or none."""
    found = [isinstance(h, DiscreteHead) for h in heads]
    if any(found) and not all(found):
        raise ValueError("the heads of one request are all discrete or none")
    return heads[0].factors if heads and found[0] else None


class CellPartition:
    """The training points grouped by cell (combination of discrete levels).

    ``levels`` (C, p): each cell's levels; ``cell_of`` (n,): each point's
    cell; ``rows``: the training indices of each cell, in order.
    """

    def __init__(self, X, factors, keep=False):
        codes = np.asarray(X[:, list(factors.columns)], dtype=np.float64)
        self.ordered = None
        if codes.shape[0] == 0:
            self.levels = np.zeros((0, codes.shape[1]))
            self.cell_of = np.zeros(0, dtype=np.intp)
            self.rows, self.order = [], np.zeros(0, dtype=np.intp)
            return
        self.levels, inverse = np.unique(codes, axis=0, return_inverse=True)
        self.cell_of = np.ravel(inverse).astype(np.intp)
        self.order = np.argsort(self.cell_of, kind="stable")
        bounds = np.searchsorted(
            self.cell_of[self.order], np.arange(len(self.levels) + 1)
        )
        self.bounds = bounds
        self.rows = [
            self.order[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)
        ]
        if keep:  # fitted: the continuous rows in cell order, read as views
            cont = list(factors.continuous)
            self.ordered = np.ascontiguousarray(np.asarray(X)[self.order][:, cont])

    def continuous(self, X, c, factors):
        """The continuous columns of cell ``c``'s training rows (a view of
        the kept rows of a fitted partition, else a copy)."""
        if self.ordered is not None:
            return self.ordered[self.bounds[c] : self.bounds[c + 1]]
        return np.asarray(X[np.ix_(self.rows[c], list(factors.continuous))])

    def all_continuous(self, X, factors):
        """The continuous columns of every training row, in cell order."""
        if self.ordered is not None:
            return self.ordered
        return np.asarray(X[self.order][:, list(factors.continuous)])


class _Fold:
    """The running shifted sums ``(S, den, M)`` of one head over cells."""

    def __init__(self, m, k):
        self.S, self.den = np.zeros((m, k)), np.zeros(m)
        self.M = np.full(m, -np.inf)

    def add(self, rows, S, den, M, log_factor):
        """Add a cell's sums of the queries ``rows``, times ``exp(log_factor)``."""
        with np.errstate(invalid="ignore", over="ignore"):
            Mc = M + log_factor
            Mc = np.where(den != 0, Mc, -np.inf)
            old = self.M[rows]
            new = np.maximum(old, Mc)
            safe = np.where(np.isfinite(new), new, 0.0)
            a = np.where(np.isfinite(old), np.exp(old - safe), 0.0)
            b = np.where(np.isfinite(Mc), np.exp(Mc - safe), 0.0)
        self.S[rows] = self.S[rows] * a[:, None] + S * b[:, None]
        self.den[rows] = self.den[rows] * a + den * b
        self.M[rows] = np.where(np.isfinite(new), new, -np.inf)

    def result(self):
        return self.S, self.den, self.M


def _cell_params(params, rows_c, own, in_c, position):
    """The request of one cell: its weights, and for the queries whose own
    point is in it (``in_c``) their positions in the cell (leave-one-out)."""
    p = dict(params)
    for key in ("exclude_self", "self_index", "self_offset", "self_weight"):
        p.pop(key, None)
    w = params.get("sample_weight")
    if w is not None:
        p["sample_weight"] = np.asarray(w)[rows_c]
    if own is None or in_c is None:
        return p
    kept = params.get("self_weight")
    loo = {
        **p,
        "exclude_self": True,
        "self_index": position[own[in_c]],
        "self_weight": None if kept is None else np.asarray(kept)[rows_c],
    }
    return loo


#: Cells are summed one request each where there are at most this many, or
#: where they hold on average at least :data:`CELL_ROWS` points; otherwise
#: (many small cells, whose requests would cost more than their sums) every
#: pair is summed directly with its factor (:func:`direct_sums`).
FEW_CELLS = Tunable(16)
CELL_ROWS = Tunable(64)


#: A request per cell costs about as much as summing this many pairs
#: directly: queries that make fewer pairs than this per cell with the
#: training points (a few points to recompute, say) are summed directly.
DIRECT_PAIRS = Tunable(10_000)


def many_cells(partition, m=None):
    """Whether the cells are too many and too small for a request each, or
    (with ``m`` queries) the queries too few."""
    C = len(partition.rows)
    n = partition.cell_of.size
    few_queries = m is not None and m * n <= DIRECT_PAIRS.value * C
    return few_queries or (C > FEW_CELLS.value and n < CELL_ROWS.value * C)


def direct_sums(
    Q,
    X,
    V,
    heads,
    partition,
    *,
    metric,
    metric_params,
    scale=None,
    sample_weight=None,
    tile_elements=1 << 17,
    **loo,
):
    """The sums of the discrete ``heads`` over every pair (exact; see
    :func:`cell_sums`), for many small cells. ``loo``: the leave-one-out
    keys of the core.

    The training points are put in cell order, so that each tile's columns
    fall in runs of one cell: for each continuous head a tile's terms are
    shifted by the largest of their run and summed per run (one ``exp`` per
    pair, shared by every head of that continuous head), and each discrete
    head combines the runs with its factors in the log domain.
    """
    factors = discrete_of(heads)
    m, n, k = Q.shape[0], X.shape[0], V.shape[1]
    order = partition.order
    position = np.empty(n, dtype=np.intp)
    position[order] = np.arange(n)
    cells = partition.cell_of[order]
    cont = list(factors.continuous)
    Qc, Xc = np.asarray(Q[:, cont]), partition.all_continuous(X, factors)
    w = None if sample_weight is None else _as_float64(sample_weight)
    own = own_rows(m, loo)
    ratio = None
    if own is not None:
        kept = loo.get("self_weight")
        ratio = np.zeros(m) if kept is None else keep_ratios(kept, w, n)[own]
        own = position[own]
    unique, slot = _continuous_heads(heads)
    squared = use_squared(metric, unique, metric_params)
    folds = [_Fold(m, k) for _ in heads]
    bq, bn = _tile_shape(m, n, tile_elements)
    for x0 in range(0, n, bn):
        x1 = min(x0 + bn, n)
        Xs = _scaled_rows(Xc, x0, x1, scale)
        Vx = _weighted_values(V, w, order[x0:x1])  # one tile's values
        run = cells[x0:x1]
        starts = np.flatnonzero(np.r_[True, run[1:] != run[:-1]])
        run_of = np.repeat(np.arange(starts.size), np.diff(np.r_[starts, x1 - x0]))
        for q0 in range(0, m, bq):
            q1 = min(q0 + bq, m)
            D = pairwise_distances(
                _scaled_rows(Qc, q0, q1, scale),
                Xs,
                metric,
                metric_params,
                squared=squared,
                first_row=q0,
            )
            extra = None if w is None and own is None else np.zeros(D.shape)
            if w is not None:
                extra[:, w[order[x0:x1]] == 0] = -np.inf
            if own is not None:
                mine = own[q0:q1]
                r = np.flatnonzero((mine >= x0) & (mine < x1))
                with np.errstate(divide="ignore"):
                    extra[r, mine[r] - x0] += np.log(ratio[q0:q1][r])
            runs = [
                _run_weights(
                    D,
                    head,
                    squared,
                    extra=extra,
                    starts=starts,
                    run_of=run_of,
                    Vx=Vx,
                    tile_elements=tile_elements,
                )
                for head in unique
            ]
            tables = {}
            for h, head in enumerate(heads):
                key = (head.factors.lambdas, head.factors.power)
                if key not in tables:
                    table = head.factors.table(Q[q0:q1], partition.levels)
                    tables[key] = table.matrix(run[starts])
                S, den, M = _combine_runs(runs[slot[h]], tables[key], run_of, Vx)
                folds[h].add(np.arange(q0, q1), S[:, :k], den, M, 0.0)
    return [f.result() for f in folds]


def _continuous_heads(heads):
    """The distinct continuous heads of discrete ``heads``, and the index of
    each one's."""
    unique = []
    for h in heads:
        if not any(h.head == u for u in unique):
            unique.append(h.head)
    slot = [next(i for i, u in enumerate(unique) if h.head == u) for h in heads]
    return unique, slot


#: A run of a tile may share its row's shift where its largest log weight is
#: at most this far below the row's: its largest term stays a normal float.
RUN_SPAN = 600.0


class _RunWeights(NamedTuple):
    """A tile's terms under one continuous head: ``E`` (q, n) each shifted by
    its run's ``M`` (q, runs; ``-inf`` for a run of no weight), each run's
    weight sum ``den`` (q, runs) and, where the runs are long, each run's
    sums of the terms times the values ``P`` (q, runs, k + 1; None for
    short runs: the values are then taken once per discrete head, see
    :func:`_combine_runs`)."""

    M: np.ndarray
    E: np.ndarray
    den: np.ndarray
    P: np.ndarray = None


#: Runs at least this long on average (training points per run of a tile)
#: sum the terms times the values per run once for all the discrete heads
#: (:class:`_RunWeights` ``P``); shorter ones (categories of few points, such
#: as a continuous column declared categorical) take one product of each
#: head's scaled terms with the values instead, which the per-run sums
#: would only copy. Measured (one BLAS thread): scikit-learn's
#: ``check_regressor_data_not_an_array`` on a local quadratic fit with a
#: continuous column declared categorical (runs of one point, 1595 value
#: columns per frame) in 0.22 of the time; the default search on a
#: continuous, a categorical and an ordered feature at n = 3000 (24 runs)
#: unchanged (ratio 1.00).
LONG_RUN = 4


def _run_weights(D, head, squared, *, extra, starts, run_of, Vx, tile_elements):
    """The :class:`_RunWeights` of the distances ``D`` of a tile whose
    columns fall in runs of one cell (starting at ``starts``; ``run_of``
    each column's run), of the training points' values ``Vx`` (their last
    column the weights; their products with the terms taken about
    ``tile_elements`` at a time)."""
    L = _log_weights(D, head, squared)
    if is_user(head.kernel):
        _check_user_kernel(L, head)
    if extra is not None:
        L += extra
    M = np.maximum.reduceat(L, starts, axis=1)
    top = M.max(axis=1, initial=-np.inf)
    # A row whose every run's largest term is far above the floor of exp
    # under the row's shift takes that one shift; the others, each run's own
    # (decided per row: a query's sums do not depend on its tile).
    row = np.all((M >= top[:, None] - RUN_SPAN) | ~np.isfinite(M), axis=1)
    safe_top = np.where(np.isfinite(top), top, 0.0)
    shift = np.where(row[:, None], safe_top[:, None], np.where(np.isfinite(M), M, 0.0))
    if row.all():  # no gather
        L -= safe_top[:, None]
    else:
        L -= shift[:, run_of]
    M = np.where(np.isfinite(M), shift, -np.inf)
    E = np.exp(L, out=L)
    if not head.kernel.nonnegative:
        E *= _signs(D, head, squared)
    if starts.size * LONG_RUN > Vx.shape[0]:
        return _RunWeights(M, E, np.add.reduceat(E * Vx[:, -1], starts, axis=1))
    k = Vx.shape[1]
    P = np.empty((D.shape[0], starts.size, k))
    step = max(1, tile_elements // max(1, E.size))
    for j0 in range(0, k, step):
        terms = E[:, :, None] * Vx[None, :, j0 : j0 + step]
        P[:, :, j0 : j0 + step] = np.add.reduceat(terms, starts, axis=1)
    return _RunWeights(M, E, P[:, :, -1], P)


def _combine_runs(runs, log_factors, run_of, Vx):
    """``(S, den, M)`` of the terms of :class:`_RunWeights` ``runs`` times the
    values ``Vx`` (their last column the weights) and their runs' factors,
    shifted by the largest ``M + log_factors`` of a run with a non-zero
    weight sum."""
    with np.errstate(invalid="ignore"):
        total = np.where(runs.den != 0, runs.M + log_factors, -np.inf)
    M = total.max(axis=1) if total.shape[1] else np.full(total.shape[0], -np.inf)
    safe = np.where(np.isfinite(M), M, 0.0)
    coef = np.where(np.isfinite(total), np.exp(total - safe[:, None]), 0.0)
    if runs.P is not None:
        S = np.einsum("qc,qcj->qj", coef, runs.P)
    else:
        S = (coef[:, run_of] * runs.E) @ Vx
    return S, S[:, -1], M


def cell_sums(compute, Q, X, V, heads, partition=None, **params):
    """The sums of the discrete ``heads`` (:class:`DiscreteHead`) of the
    queries ``Q``, cell by cell (see the module's docstring).

    ``compute(c, Qc, Xc, Vc, heads, params)`` returns the continuous heads'
    ``(S, den, M)`` of the queries ``Qc`` (continuous columns) over cell
    ``c``'s points ``Xc`` and values ``Vc``, for the request ``params`` (its
    weights and leave-one-out keys those of the cell). ``partition``: the
    fitted :class:`CellPartition` of ``X``, whose heads hold the levels
    counted at fit (None: made here, and the levels counted on ``X``).
    """
    if partition is None:
        # A request without a fitted partition (a CV pass) counts its levels;
        # a fitted estimator's heads carry those counted at fit.
        heads = recounted(heads, X, params.get("sample_weight"))
        partition = CellPartition(X, discrete_of(heads))
    factors = discrete_of(heads)
    if many_cells(partition, Q.shape[0]):
        record("direct_sums", n_queries=Q.shape[0], n_cells=len(partition.rows))
        return direct_sums(Q, X, V, heads, partition, **params)
    m, k = Q.shape[0], V.shape[1]
    Qc = np.asarray(Q[:, list(factors.continuous)])
    unique, slot = _continuous_heads(heads)
    folds = [_Fold(m, k) for _ in heads]
    own = own_rows(m, params)
    w = params.get("sample_weight")
    position = np.empty(X.shape[0], dtype=np.intp)
    everyone = np.arange(m)
    keys = {(h.factors.lambdas, h.factors.power): h.factors for h in heads}
    for c, rows_c in enumerate(partition.rows):
        if w is not None and not np.any(np.asarray(w)[rows_c] > 0):
            continue
        position[rows_c] = np.arange(rows_c.size)
        Xc = partition.continuous(X, c, factors)
        Vc = V[rows_c]
        # Few cells: each one's log factors (m,) per smoothing, as needed.
        cell = partition.levels[c]
        logs = {key: f.log_factors(Q, cell) for key, f in keys.items()}
        groups = [(everyone, None)]
        if own is not None:
            mine = partition.cell_of[own] == c
            groups = [(np.flatnonzero(mine), mine), (np.flatnonzero(~mine), None)]
        for rows_q, in_c in groups:
            if not rows_q.size:
                continue
            p = _cell_params(params, rows_c, own, in_c, position)
            try:
                got = compute(c, Qc[rows_q], Xc, Vc, unique, p)
            except NaNDistanceError as exc:
                raise NaNDistanceError(exc.metric, rows_q[exc.rows]) from None
            for h, head in enumerate(heads):
                S, den, M = got[slot[h]]
                key = (head.factors.lambdas, head.factors.power)
                folds[h].add(rows_q, S, den, M, logs[key][rows_q])
    return [f.result() for f in folds]


@dataclass(frozen=True)
class CellIndex:
    """The fitted indexes of a product kernel: the backend ``names`` and
    ``indexes`` of each cell of ``partition``."""

    partition: CellPartition
    names: tuple
    indexes: tuple


def cell_request(request, partition, c):
    """The :class:`~sknw._sums._dispatcher.FitRequest` of cell ``c``."""
    factors = request.head.factors
    rows_c = partition.rows[c]
    w = request.sample_weight
    values = request.values

    def cell_values():
        V, wv = values()
        return V[rows_c], None if wv is None else wv[rows_c]

    return replace(
        request,
        X=partition.continuous(request.X, c, factors),
        sample_weight=None if w is None else np.asarray(w)[rows_c],
        values=cell_values,
        head=request.head.head,
        shared=None if request.shared is None else {},
    )


def _nearest_tiles(
    Q,
    X,
    factors,
    *,
    metric,
    metric_params,
    scale=None,
    sample_weight=None,
    exclude_self=False,
    self_weight=None,
    self_index=None,
    tile_elements=1 << 17,
):
    """Yield ``(rows_c, q0, q1, D, W)`` over the cells of ``X`` and tiles of
    queries: continuous distances ``D`` (``inf`` where a pair cannot be
    nearest: weight 0, factor 0, or a query's own point that keeps no
    weight) and the pair weights ``W``, sample weight times factor (the own
    point's with the weight it keeps)."""
    m, n = Q.shape[0], X.shape[0]
    factors = factors.counted(X, sample_weight)
    partition = CellPartition(X, factors)
    w = np.ones(n) if sample_weight is None else _as_float64(sample_weight)
    own = own_rows(m, {"exclude_self": exclude_self, "self_index": self_index})
    Qc = np.asarray(Q[:, list(factors.continuous)], dtype=np.float64)
    table = factors.table(Q, partition.levels)
    for c, rows_c in enumerate(partition.rows):
        F = np.exp(table.column(c))
        Xs = _scaled_rows(partition.continuous(X, c, factors), 0, rows_c.size, scale)
        bq, _ = _tile_shape(m, rows_c.size, tile_elements, full_rows=True)
        for q0 in range(0, m, bq):
            q1 = min(q0 + bq, m)
            Qs = _scaled_rows(Qc, q0, q1, scale)
            D = pairwise_distances(Qs, Xs, metric, metric_params, first_row=q0)
            W = np.broadcast_to(w[rows_c], D.shape).copy()
            if own is not None:
                r, col = _own_pairs(own[q0:q1], rows_c)
                W[r, col] = 0.0 if self_weight is None else self_weight[rows_c[col]]
            W *= F[q0:q1, None]
            D[~(W > 0)] = np.inf
            yield rows_c, q0, q1, D, W


def cell_nearest_sums(Q, X, V, factors, **params):
    """``(S, den, none)``: sums of ``w F V`` over the nearest training points
    of each query among those of positive factor ``F`` (ties included), and
    the sums of ``w F``: the limit of a vanishing continuous bandwidth of
    the product kernel (see :func:`~sknw._sums._nearest.nearest_sums`, whose
    keywords ``params`` are; the own row of a query is left out, or keeps
    weight ``self_weight``). The queries ``none`` with no point of positive
    factor (smoothing parameters of 0 and no training point of their levels)
    get the sums over every point, whose ratio is the weighted mean."""
    m, k = Q.shape[0], V.shape[1]
    acc, best = np.zeros((m, k + 1)), np.full(m, np.inf)
    for rows_c, q0, q1, D, W in _nearest_tiles(Q, X, factors, **params):
        tmin, b = D.min(axis=1), best[q0:q1]
        closer = tmin < b
        acc[q0:q1][closer] = 0.0
        b[closer] = tmin[closer]
        ties = (D == b[:, None]) & np.isfinite(b)[:, None]
        Vx = np.hstack([V[rows_c], np.ones((rows_c.size, 1))])
        acc[q0:q1] += (ties * W) @ Vx
    none = ~(acc[:, k] > 0)
    if none.any():
        # Own rows by self_index only (this fallback takes no self_offset).
        loo = {k: params.get(k) for k in ("exclude_self", "self_index")}
        own = own_rows(m, loo)
        w = params.get("sample_weight")
        acc[none, :k], acc[none, k] = all_point_sums(
            int(none.sum()),
            V,
            None if w is None else _as_float64(w),
            None if own is None else own[none],
            params.get("self_weight"),
        )
    return acc[:, :k], acc[:, k].copy(), none


def cell_nearest_weights(Q, X, factors, **params):
    """``(weights, none)``: the weights ``w F`` of the nearest training
    points of each query (see :func:`cell_nearest_sums`) as rows over every
    training point; the queries ``none`` with no point of positive factor
    get the weights ``w`` of every point (those of the weighted mean)."""
    m = Q.shape[0]
    best = np.full(m, np.inf)
    for _, q0, q1, D, _ in _nearest_tiles(Q, X, factors, **params):
        best[q0:q1] = np.minimum(best[q0:q1], D.min(axis=1))
    out = np.zeros((m, X.shape[0]))
    for rows_c, q0, q1, D, W in _nearest_tiles(Q, X, factors, **params):
        ties = (D == best[q0:q1, None]) & np.isfinite(best[q0:q1])[:, None]
        out[q0:q1, rows_c] = ties * W
    none = ~(out.sum(axis=1) > 0)
    w = params.get("sample_weight")
    out[none] = np.ones(X.shape[0]) if w is None else w
    return out, none


def _own_pairs(own, rows_c):
    """(query rows, cell columns) of the queries whose own point is in the
    cell whose training rows are ``rows_c`` (sorted)."""
    if not rows_c.size:
        return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp)
    col = np.minimum(np.searchsorted(rows_c, own), rows_c.size - 1)
    hit = rows_c[col] == own
    return np.flatnonzero(hit), col[hit]


def cell_log_weights(D, head, squared, Q, partition):
    """Log weights of a tile of continuous distances ``D`` (queries ``Q``
    against every training point of ``partition``) for a discrete head: the
    continuous kernel's plus each point's cell's log factor."""
    L = _log_weights(D, head.head, squared)
    table = head.factors.table(Q, partition.levels)
    return L + table.matrix(partition.cell_of)
