"""Product kernels of continuous and discrete features, summed cell by cell.

With discrete features (unordered categories, ordered levels) the kernel of
a query ``q`` and a training point ``x`` is the continuous kernel of their
continuous columns times one factor per discrete column,
``K(d(q_c, x_c) / h) * prod_j k_j(q_j, x_j; lambda_j)`` (see
:mod:`sknw._discrete`). The discrete factors depend only on the query's
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

import numpy as np

from ._base import (
    NaNDistanceError,
    _as_float64,
    _check_user_kernel,
    _log_weights,
    _scaled_rows,
    _signs,
    _tile_shape,
    _weighted_values,
    keep_ratios,
    own_rows,
    pairwise_distances,
)
from ._traits import is_user, use_squared


@dataclass(frozen=True)
class DiscreteFactors:
    """The discrete columns of a product kernel and their smoothing.

    ``columns`` and ``continuous`` index the columns of ``X`` and ``Q``;
    ``kernels`` (:class:`sknw._discrete.DiscreteKernel`), ``levels`` (the
    number of levels seen at fit), ``lambdas`` and ``coded`` (whether the
    column holds level codes, ``-1`` for a level unseen at fit, rather than
    ordered integer values) are per discrete column. ``power`` raises every
    factor (2 for the sums of the squared weights).
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
        ``q`` and a training level ``x`` (see :mod:`sknw._discrete`)."""
        if not self.kernels[j].ordered:
            return (q != x).astype(np.float64)
        t = np.abs(q - x)
        if self.coded[j]:
            t = np.where(q < 0, float(self.levels[j]), t)
        return t

    def log_factors(self, Q, cell):
        """Log of the product of the factors of the queries ``Q`` (every
        column) with a cell's levels ``cell``."""
        out = np.zeros(Q.shape[0])
        for j, col in enumerate(self.columns):
            t = self.level_distances(j, Q[:, col], cell[j])
            out += self.kernels[j].log_factor(t, self.lambdas[j], self.levels[j])
        return self.power * out

    def self_factor(self):
        """The factor of a point with itself (every level matched)."""
        zero = np.zeros(1)
        logs = [
            float(k.log_factor(zero, lam, c)[0])
            for k, lam, c in zip(self.kernels, self.lambdas, self.levels, strict=True)
        ]
        return float(np.exp(self.power * sum(logs)))


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

    def __init__(self, X, factors):
        codes = np.asarray(X[:, list(factors.columns)], dtype=np.float64)
        if codes.shape[0] == 0:
            self.levels = np.zeros((0, codes.shape[1]))
            self.cell_of = np.zeros(0, dtype=np.intp)
            self.rows = []
            return
        self.levels, inverse = np.unique(codes, axis=0, return_inverse=True)
        self.cell_of = np.ravel(inverse).astype(np.intp)
        order = np.argsort(self.cell_of, kind="stable")
        bounds = np.searchsorted(self.cell_of[order], np.arange(len(self.levels) + 1))
        self.rows = [order[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]

    def continuous(self, X, c, factors):
        """The continuous columns of cell ``c``'s training rows."""
        return np.asarray(X[np.ix_(self.rows[c], list(factors.continuous))])


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
FEW_CELLS = 16
CELL_ROWS = 64


def many_cells(partition):
    """Whether the cells are too many and too small for a request each."""
    C = len(partition.rows)
    return C > FEW_CELLS and partition.cell_of.size < CELL_ROWS * C


def direct_sums(Q, X, V, heads, partition, *, metric, metric_params, scale=None,
                sample_weight=None, tile_elements=1 << 17, **loo):  # fmt: skip
    """The sums of the discrete ``heads`` pair by pair: the continuous log
    weights plus each pair's log factor, shifted per query (exact; see
    :func:`cell_sums`). ``loo``: the leave-one-out keys of the core."""
    factors = discrete_of(heads)
    m, n, k = Q.shape[0], X.shape[0], V.shape[1]
    cont = list(factors.continuous)
    Qc, Xc = np.asarray(Q[:, cont]), np.asarray(X[:, cont])
    w = None if sample_weight is None else _as_float64(sample_weight)
    Vx = _weighted_values(V, w, slice(None))
    own = own_rows(m, **loo)
    kept = loo.get("self_weight")
    squared = use_squared(metric, [h.head for h in heads], metric_params)
    folds = [_Fold(m, k) for _ in heads]
    bq, bn = _tile_shape(m, n, tile_elements)
    for x0 in range(0, n, bn):
        x1 = min(x0 + bn, n)
        Xs = _scaled_rows(Xc, x0, x1, scale)
        cells = partition.cell_of[x0:x1]
        for q0 in range(0, m, bq):
            q1 = min(q0 + bq, m)
            D = pairwise_distances(
                _scaled_rows(Qc, q0, q1, scale), Xs, metric, metric_params,
                squared=squared, first_row=q0,
            )  # fmt: skip
            extra = np.zeros(D.shape)
            if w is not None:
                extra[:, w[x0:x1] == 0] = -np.inf
            if own is not None:
                mine = own[q0:q1]
                r = np.flatnonzero((mine >= x0) & (mine < x1))
                ratio = 0.0 if kept is None else keep_ratios(kept, w, n)[mine[r]]
                with np.errstate(divide="ignore"):
                    extra[r, mine[r] - x0] += np.log(ratio)
            logs = {}
            for h, head in enumerate(heads):
                key = (head.factors.lambdas, head.factors.power)
                if key not in logs:
                    F = np.column_stack(
                        [head.factors.log_factors(Q[q0:q1], c)
                         for c in partition.levels]
                    )  # fmt: skip
                    logs[key] = F[:, cells]
                L = _log_weights(D, head.head, squared)
                if is_user(head.kernel):
                    _check_user_kernel(L, head.head)
                L += logs[key] + extra
                Mb = L.max(axis=1)
                safe = np.where(np.isfinite(Mb), Mb, 0.0)
                E = np.exp(L - safe[:, None])
                if not head.kernel.nonnegative:
                    E *= _signs(D, head.head, squared)
                P = E @ Vx[x0:x1]
                folds[h].add(np.arange(q0, q1), P[:, :k], P[:, k], Mb, 0.0)
    return [f.result() for f in folds]


def cell_sums(compute, Q, X, V, heads, partition=None, **params):
    """The sums of the discrete ``heads`` (:class:`DiscreteHead`) of the
    queries ``Q``, cell by cell (see the module's docstring).

    ``compute(c, Qc, Xc, Vc, heads, params)`` returns the continuous heads'
    ``(S, den, M)`` of the queries ``Qc`` (continuous columns) over cell
    ``c``'s points ``Xc`` and values ``Vc``, for the request ``params`` (its
    weights and leave-one-out keys those of the cell). ``partition``: the
    fitted :class:`CellPartition` of ``X`` (None: made here).
    """
    factors = discrete_of(heads)
    if partition is None:
        partition = CellPartition(X, factors)
    if many_cells(partition):
        return direct_sums(Q, X, V, heads, partition, **params)
    m, k = Q.shape[0], V.shape[1]
    Qc = np.asarray(Q[:, list(factors.continuous)])
    unique = []
    for h in heads:
        if not any(h.head == u for u in unique):
            unique.append(h.head)
    slot = [next(i for i, u in enumerate(unique) if h.head == u) for h in heads]
    folds = [_Fold(m, k) for _ in heads]
    own = own_rows(m, **params)
    w = params.get("sample_weight")
    position = np.empty(X.shape[0], dtype=np.intp)
    everyone = np.arange(m)
    for c, rows_c in enumerate(partition.rows):
        if w is not None and not np.any(np.asarray(w)[rows_c] > 0):
            continue
        position[rows_c] = np.arange(rows_c.size)
        Xc = partition.continuous(X, c, factors)
        Vc = V[rows_c]
        logs = {}
        for head in heads:
            key = (head.factors.lambdas, head.factors.power)
            if key not in logs:
                logs[key] = head.factors.log_factors(Q, partition.levels[c])
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


def _nearest_tiles(Q, X, factors, *, metric, metric_params, scale=None,
                   sample_weight=None, exclude_self=False, self_weight=None,
                   self_index=None, tile_elements=1 << 17):  # fmt: skip
    """Yield ``(rows_c, q0, q1, D, W)`` over the cells of ``X`` and tiles of
    queries: continuous distances ``D`` (``inf`` where a pair cannot be
    nearest: weight 0, factor 0, or a query's own point that keeps no
    weight) and the pair weights ``W``, sample weight times factor (the own
    point's with the weight it keeps)."""
    m, n = Q.shape[0], X.shape[0]
    partition = CellPartition(X, factors)
    w = np.ones(n) if sample_weight is None else _as_float64(sample_weight)
    own = own_rows(m, exclude_self, 0, self_index)
    Qc = np.asarray(Q[:, list(factors.continuous)], dtype=np.float64)
    for c, rows_c in enumerate(partition.rows):
        F = np.exp(factors.log_factors(Q, partition.levels[c]))
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
    """Sums of ``w F V`` over the nearest training points of each query
    among those of positive factor ``F`` (ties included), and the sums of
    ``w F``: the limit of a vanishing continuous bandwidth of the product
    kernel (see :func:`~sknw._sums._nearest.nearest_sums`, whose keywords
    ``params`` are; the own row of a query is left out, or keeps weight
    ``self_weight``)."""
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
    return acc[:, :k], acc[:, k].copy()


def cell_nearest_weights(Q, X, factors, **params):
    """The weights ``w F`` of the nearest training points of each query (see
    :func:`cell_nearest_sums`) as rows over every training point."""
    m = Q.shape[0]
    best = np.full(m, np.inf)
    for _, q0, q1, D, _ in _nearest_tiles(Q, X, factors, **params):
        best[q0:q1] = np.minimum(best[q0:q1], D.min(axis=1))
    out = np.zeros((m, X.shape[0]))
    for rows_c, q0, q1, D, W in _nearest_tiles(Q, X, factors, **params):
        ties = (D == best[q0:q1, None]) & np.isfinite(best[q0:q1])[:, None]
        out[q0:q1, rows_c] = ties * W
    return out


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
    factors = head.factors
    logs = np.column_stack(
        [factors.log_factors(Q, cell) for cell in partition.levels]
    ) if len(partition.levels) else np.zeros((Q.shape[0], 0))  # fmt: skip
    return L + logs[:, partition.cell_of]
