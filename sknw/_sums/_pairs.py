"""Pair tables: the terms of every pair of a search's split, kept across its
candidates (product kernels of continuous and discrete features).

A cross-validated search over product kernels (see :mod:`sknw._sums._cells`)
scores hundreds of candidates on the same queries and training points; they
differ only in the continuous bandwidths (a scaling per feature and a size)
and in the smoothing parameters of the discrete features. With the euclidean
metric, the log weight of a query ``q`` and a training point ``x`` is (on the
squared path; with the square root of the sum otherwise)::

    log K(sum_k D_k / s_k**2 / h**2) + log F(levels of q, cell of x)

where ``D_k = (q_k - x_k)**2`` is the squared difference on continuous
feature ``k`` (``s_k`` its scaling, ``h`` the size), and ``F`` the product of
the discrete factors, a function of the query's combination of levels and
the training point's cell only. :class:`PairTables` keeps ``D_k`` for every
pair and the index of its (query combination, cell); a candidate
then costs a few passes over the pairs: no distance is computed and no
factor per pair, the log factors being one small table per candidate
(combinations x cells), gathered. Each row is whole (every training point)
in each tile, so its shift is its largest log weight, as in the dense
backend, and its sums are exact.

Memory: ``8 m n (n_continuous + 1)`` bytes per split (``m`` queries, ``n``
training points), built only while the tables of a search's splits fit in
half of scikit-learn's ``working_memory`` (:func:`pair_budget`); the sums
take five tiles of ``tile_elements`` beyond them (the distances, the
log weights of a continuous head, the log factors of two smoothings and the
terms).
"""

import numpy as np
from sklearn import get_config

from .._trace import record
from ._base import (
    _check_user_kernel,
    _log_weights,
    _signs,
    _weighted_values,
    keep_ratios,
    own_rows,
)
from ._cells import CellPartition, _continuous_heads, discrete_of, recounted
from ._traits import is_user, log_linear_coef, use_squared


def pair_budget():
    """Bytes the pair tables of one search may take: half of scikit-learn's
    ``working_memory`` (the tiles of the sums stay within the other half,
    see :func:`~sknw._sums.default_tile_elements`)."""
    return int(get_config()["working_memory"] * 2**20 / 2)


def table_bytes(m, n, n_continuous):
    """The bytes of the tables of ``m`` queries and ``n`` training points."""
    return 8 * m * n * (n_continuous + 1)


class PairTables:
    """The terms of every pair of queries ``Q`` and training points ``X``
    (every column; the discrete ones as level codes) of the product kernel
    whose discrete features are ``factors`` (their levels counted on ``X``
    with ``sample_weight``): the squared differences of the continuous
    features and the index of each pair's (query combination of levels,
    training cell)."""

    def __init__(self, Q, X, factors, sample_weight=None):
        self.Q, self.X = np.array(Q, dtype=np.float64), np.array(X, dtype=np.float64)
        self.weight = None if sample_weight is None else np.array(sample_weight)
        cont, cols = list(factors.continuous), list(factors.columns)
        self.squares = []
        for k in cont:
            D = np.subtract.outer(self.Q[:, k], self.X[:, k])
            self.squares.append(np.multiply(D, D, out=D))
        self.partition = CellPartition(self.X, factors)
        _, first, inverse = np.unique(
            self.Q[:, cols], axis=0, return_index=True, return_inverse=True
        )
        self.combos = self.Q[first]  # one query row per combination
        combo_of = np.ravel(inverse).astype(np.intp)
        self.pair_cell = np.add.outer(
            combo_of * len(self.partition.levels), self.partition.cell_of
        )
        self.factors = _structure(factors)

    def matches(self, Q, X, factors, sample_weight):
        """Whether these tables are those of this request."""
        same_weight = (
            self.weight is None
            if sample_weight is None
            else self.weight is not None and np.array_equal(self.weight, sample_weight)
        )
        return (
            same_weight
            and _structure(factors) == self.factors
            and np.array_equal(self.Q, Q)
            and np.array_equal(self.X, X)
        )

    def sums(
        self,
        V,
        heads,
        squared,
        *,
        scale=None,
        sample_weight=None,
        self_weight=None,
        tile_elements,
        **loo,
    ):
        """``(S, den, M)`` of every discrete head (as the other paths of the
        core, :mod:`sknw._sums`) over every pair, of the squared distances
        (``squared``) or the distances; ``loo``: the leave-one-out keys of the
        core. None where the scaling cannot be applied to the squared
        differences (its inverse square overflows)."""
        m, n = self.Q.shape[0], self.X.shape[0]
        record("pair_tables", n_queries=m, n_heads=len(heads))
        inverse = _inverse_squares(scale, len(self.squares))
        if inverse is None:
            return None
        heads = recounted(heads, self.X, sample_weight)
        w = None if sample_weight is None else np.asarray(sample_weight, np.float64)
        own = own_rows(m, loo)
        ratio = None
        if own is not None:
            ratio = (
                np.zeros(m)
                if self_weight is None
                else keep_ratios(self_weight, w, n)[own]
            )
        out = [(np.empty((m, V.shape[1])), np.empty(m), np.empty(m)) for _ in heads]
        rows = max(1, min(m, tile_elements // max(n, 1)))
        factors = self._log_factors(heads, tile_elements)
        pass_ = _Pass(
            heads,
            factors,
            _weighted_values(V, w, slice(None)),
            w=w,
            own=own,
            ratio=ratio,
            squared=squared,
            inverse=inverse,
            shape=(rows, n),
        )
        for q0 in range(0, m, rows):
            q1 = min(q0 + rows, m)
            squares = [Dk[q0:q1] for Dk in self.squares]
            pass_.tile(q0, q1, squares, out)
        return out

    def _log_factors(self, heads, tile_elements):
        """``log_factors(key, q0, q1, out)``: the log factors of the heads of
        smoothing ``key`` of the pairs of queries ``q0:q1``, into ``out``.
        Gathered from one table (query combinations x cells) per smoothing,
        made here where they all hold at most ``tile_elements``; else from
        one per tile (its queries x cells), within a tile."""
        levels = self.partition.levels
        cells = np.arange(levels.shape[0])
        by_key = {_key(h): h.factors for h in heads}
        if len(self.combos) * cells.size * len(by_key) <= tile_elements:
            tables = {
                key: np.ravel(f.table(self.combos, levels).matrix(cells))
                for key, f in by_key.items()
            }

            def from_tables(key, q0, q1, out):
                index = self.pair_cell[q0:q1]
                return np.take(tables[key], index, out=out, mode="clip")

            return from_tables

        def per_tile(key, q0, q1, out):
            table = by_key[key].table(self.Q[q0:q1], levels).matrix(cells)
            index = self.partition.cell_of
            return np.take(table, index, axis=1, out=out, mode="clip")

        return per_tile


def _key(head):
    """What the log factors of a discrete head depend on."""
    return (head.factors.lambdas, head.factors.power)


class _Pass:
    """The sums of the discrete ``heads`` tile by tile: each continuous
    head's log weights once per tile, the log factors of a smoothing
    (``log_factors``, see :meth:`PairTables._log_factors`) once for the
    heads that share them (at most :data:`GATHERED` kept), then each head's
    shifted sums of ``Vx``; ``inverse``: the inverse squares of the
    continuous features' scalings."""

    def __init__(
        self, heads, log_factors, Vx, *, w, own, ratio, squared, inverse, shape
    ):
        self.heads, self.log_factors, self.Vx = heads, log_factors, Vx
        self.w, self.own, self.ratio, self.squared = w, own, ratio, squared
        self.inverse = inverse
        self.unique, self.slot = _continuous_heads(heads)
        # One feature and Gaussian heads: each head's log weights straight
        # from the squared differences (no distances needed), where their
        # coefficients stay finite (None: from the distances).
        self.coefs = None
        log_linear = squared and all(
            u.kernel.nonnegative and log_linear_coef(u, True) is not None
            for u in self.unique
        )
        if len(inverse) == 1 and log_linear:
            with np.errstate(over="ignore"):
                coefs = [log_linear_coef(u, True) * inverse[0] for u in self.unique]
            if np.all(np.isfinite(coefs)):
                self.coefs = coefs
        # The tiles' buffers (``shape``: the largest tile), made once.
        self.D, self.L, self.logs = (np.empty(shape) for _ in range(3))
        self.spare = [np.empty(shape) for _ in range(GATHERED)]

    def tile(self, q0, q1, squares, out):
        """The sums of the queries ``q0:q1`` into ``out``, from their squared
        differences on each continuous feature (``squares``)."""
        rows = q1 - q0
        D, L = self.D[:rows], self.L[:rows]
        if self.coefs is None:
            _scaled_squares(squares, self.inverse, D, L)
            if not self.squared:
                np.sqrt(D, out=D)
        gathered, spare = {}, [G[:rows] for G in self.spare]
        for u, head_u in enumerate(self.unique):
            if self.coefs is not None:
                logs = np.multiply(squares[0], self.coefs[u], out=self.logs[:rows])
            else:
                logs = _continuous_logs(D, head_u, self.squared, self.logs[:rows])
            for h, head in enumerate(self.heads):
                if self.slot[h] != u:
                    continue
                key = _key(head)
                if key not in gathered:
                    if len(gathered) >= GATHERED:
                        spare.extend(gathered.values())
                        gathered.clear()
                    gathered[key] = self.log_factors(key, q0, q1, spare.pop())
                np.add(logs, gathered[key], out=L)
                _leave_out(L, q0, self.w, self.own, self.ratio)
                _shifted_sums(
                    L, D, head_u, self.squared, self.Vx, [a[q0:q1] for a in out[h]]
                )


#: The log factors of at most this many smoothings are kept per tile (each
#: a tile of memory) for the heads that share them.
GATHERED = 2


def _scaled_squares(squares, inverse, out, scratch):
    """The squared distances on the continuous features divided by their
    scalings (``inverse``: ``1 / s_k**2``) of the squared differences
    ``squares``, into ``out`` (``scratch``: a buffer of its shape)."""
    if not squares:
        out[:] = 0.0
        return
    with np.errstate(over="ignore"):  # inf: beyond every window
        np.multiply(squares[0], inverse[0], out=out)
        for Dk, inv in zip(squares[1:], inverse[1:], strict=True):
            out += np.multiply(Dk, inv, out=scratch)


def _structure(factors):
    """What the tables depend on among the factors (not the smoothing)."""
    return (factors.columns, factors.continuous, factors.kernels, factors.coded)


def _inverse_squares(scale, n_continuous):
    """``1 / s_k**2`` of the scaling of each continuous feature (None where
    one is not finite)."""
    if scale is None:
        return np.ones(n_continuous)
    s = np.asarray(getattr(scale, "scale", scale), dtype=np.float64)
    with np.errstate(over="ignore", divide="ignore"):
        inverse = np.broadcast_to(1.0 / (s * s), (n_continuous,))
    return inverse if np.all(np.isfinite(inverse)) else None


def _continuous_logs(D, head, squared, out):
    """The continuous head's log weights of the scaled (squared) distances
    (in ``out`` where the kernel's are log-linear)."""
    c = log_linear_coef(head, squared)
    if c is not None:
        with np.errstate(over="ignore"):  # -inf: the limit
            return np.multiply(D, c, out=out)
    L = _log_weights(D, head, squared)
    if is_user(head.kernel):
        _check_user_kernel(L, head)
    return L


def _leave_out(L, q0, w, own, ratio):
    """Set the log weights of the queries ``q0:`` (``L``'s rows) to ``-inf``
    at the training points of weight 0, and add the log of the share of its
    weight each query keeps of its own point (leave-one-out)."""
    if w is not None:
        L[:, w == 0] = -np.inf
    if own is not None:
        r = np.arange(L.shape[0])
        with np.errstate(divide="ignore"):
            L[r, own[q0 : q0 + r.size]] += np.log(ratio[q0 : q0 + r.size])


#: A row whose largest log weight is within this of 0 is summed unshifted
#: (``M = 0``): its largest term is a normal float far from overflow, and so
#: is any term that can change its sums. (Decided per row: a query's sums
#: do not depend on its tile.)
UNSHIFTED = 600.0


def _shifted_sums(L, D, head, squared, Vx, out):
    """Each row's sums of ``Vx`` under the weights ``exp(L)`` shifted by the
    row's largest log weight (none where :data:`UNSHIFTED` allows), into
    ``out = (S, den, M)``."""
    S, den, M = out
    with np.errstate(invalid="ignore"):
        top = L.max(axis=1, initial=-np.inf)
    finite = np.isfinite(top)
    shift = np.where(finite & (np.abs(top) > UNSHIFTED), top, 0.0)
    if np.any(shift != 0.0):  # rows of shift 0 are left as they are
        L -= shift[:, None]
    E = np.exp(L, out=L)
    if not head.kernel.nonnegative:
        E *= _signs(D, head, squared)
    P = E @ Vx
    den[:] = P[:, -1]
    S[:] = P[:, :-1]
    empty = ~finite | (den == 0)
    M[:] = np.where(empty, -np.inf, shift)
    S[empty] = 0.0
    den[empty] = 0.0


class PairCache:
    """The pair tables of one search, one per split (``key``), built on first
    use while they fit :func:`pair_budget`; the requests they cannot serve
    (another metric, per-query bandwidths, tables beyond the budget, other
    points or weights under the same key) are left to the other paths
    (:meth:`sums` returns None)."""

    def __init__(self, budget=None):
        self.budget = pair_budget() if budget is None else budget
        self.tables, self.used = {}, 0

    def sums(
        self,
        key,
        Q,
        X,
        V,
        heads,
        *,
        metric,
        metric_params=None,
        sample_weight=None,
        **params,
    ):
        factors = discrete_of(heads)
        continuous = [] if factors is None else [h.head for h in heads]
        if (
            factors is None
            or metric != "euclidean"
            or metric_params
            or any(np.ndim(h.divisor) for h in continuous)
        ):
            return None
        tables = self.tables.get(key)
        if tables is None:
            need = table_bytes(Q.shape[0], X.shape[0], len(factors.continuous))
            if self.used + need > self.budget:
                return None
            tables = PairTables(Q, X, factors, sample_weight)
            self.tables[key], self.used = tables, self.used + need
        elif not tables.matches(Q, X, factors, sample_weight):
            return None
        squared = use_squared(metric, continuous, metric_params)
        return tables.sums(V, heads, squared, sample_weight=sample_weight, **params)
