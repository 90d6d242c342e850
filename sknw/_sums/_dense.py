"""The dense backend: every pair of a query tile and a training tile."""

from dataclasses import dataclass

import numpy as np

from .._trace import record
from ._base import (
    TILE_ELEMENTS,
    Backend,
    NaNDistanceError,
    SelfExclusion,
    _Accumulator,
    _as_float64,
    _check_user_kernel,
    _exp,
    _log_weights,
    _rescale,
    _scaled_mean,
    _scaled_rows,
    _shifted_exp,
    _signs,
    _tile_shape,
    _weighted_values,
    head_rows,
    heads_rows,
    nan_rows,
    own_rows,
    pairwise_distances,
    tile_masks,
)
from ._cells import CellPartition, cell_log_weights, recounted
from ._chains import ExcessTile, _SquareChains
from ._gaussian import _f32_weights_ok, _gemm_usable, single_head_sums
from ._parallel import parallel_kernel_sums
from ._traits import is_user, log_linear_coef, use_squared


@dataclass(frozen=True)
class _Plan:
    """How one call sums: squared distances, the log-linear coefficient of
    each head (None: evaluated by the kernel), the centre of a GEMM of
    squared distances, a single log-linear head (its coefficient) and float32."""

    squared: bool
    coefs: list
    centre: object
    gemm: bool
    single: object
    f32: bool

    @classmethod
    def make(cls, Q, X, heads, *, metric, metric_params, scale, w, strategy="auto"):
        squared = use_squared(metric, heads, metric_params)
        fast = strategy != "cdist"
        coefs = [log_linear_coef(h, squared) if fast else None for h in heads]
        centre = _scaled_mean(X, scale) if squared and Q.shape[1] >= 2 else None
        gemm = fast and centre is not None and _gemm_usable(Q, X, heads, scale, centre)
        single = None
        if len(heads) == 1 and squared and coefs[0] is not None:
            single = coefs[0] if gemm or Q.shape[1] == 1 else None
        f32 = (
            Q.dtype == np.float32
            and X.dtype == np.float32
            and _f32_weights_ok(w, X.shape[0])
        )
        return cls(squared, coefs, centre, gemm, single, f32)


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
    self_index=None,
    tile_elements=TILE_ELEMENTS,
    strategy="auto",
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
    self_index : ndarray of shape (m,) or None
        With ``exclude_self``, the training index of each query (any subset of
        the training points, in any order); overrides ``self_offset``.
    tile_elements : int
        Number of elements in one (query x train) tile.
    strategy : {"auto", "tiled", "cdist"}
        ``"tiled"`` takes the tiled loop for a single Gaussian head too (not
        the line and plane paths of :mod:`sknw._sums._gaussian`); ``"cdist"``
        evaluates every head by its kernel on :func:`cdist` distances (no GEMM,
        no fused log-linear path). Both are references the fast paths are
        tested against.

    Returns
    -------
    list of (S, den, M)
        For every head: ``S`` of shape (m, k), ``den`` and ``M`` of shape (m,).

    Notes
    -----
    A single Gaussian head (without self-exclusion) takes the GEMM paths of
    :mod:`sknw._sums._gaussian`; everything else the tiled loop, over training
    tiles outside and query tiles inside. Each side is prepared (scaled,
    centred, cast to float64) one tile at a time, so the extra memory is a few
    tiles plus the (m, k + 1) accumulators.
    """
    m, k = Q.shape[0], V.shape[1]
    w = None if sample_weight is None else np.asarray(sample_weight, np.float64)
    plan = _Plan.make(
        Q,
        X,
        heads,
        metric=metric,
        metric_params=metric_params,
        scale=scale,
        w=w,
        strategy=strategy,
    )
    if w is not None and not np.any(w > 0):
        # No training point of positive weight: every window is empty.
        return [(np.zeros((m, k)), np.zeros(m), np.full(m, -np.inf)) for _ in heads]
    args = (V, heads, plan, w, metric, metric_params, scale)
    if plan.single is not None and not exclude_self and strategy == "auto":

        def far(rows):
            # Rows no probe bounds: the tiled loop, shifted by their maxima.
            return _tiled_sums(Q[rows], X, *args, None, tile_elements)[0]

        return [
            single_head_sums(
                Q,
                X,
                V,
                w,
                plan.single,
                scale=scale,
                centre=plan.centre,
                gemm=plan.gemm,
                f32=plan.f32,
                tile_elements=tile_elements,
                far=far,
            )
        ]
    exclusion = SelfExclusion.make(
        exclude_self, self_weight, w, X.shape[0], self_offset, self_index
    )
    return _tiled_sums(Q, X, *args, exclusion, tile_elements)


class _QueryTile:
    """Query rows ``q0:q1`` against one training tile: the terms left out
    (``masked``) and the products that add a tile of terms to the sums."""

    def __init__(self, q0, q1, train, exclusion):
        self.q0, self.q1, self.rows = q0, q1, slice(q0, q1)
        self.shape = (q1 - q0, train.x1 - train.x0)
        self.train, self.exclusion = train, exclusion
        self.masked = tile_masks(train.zero, train.x0, train.x1, q0, q1, exclusion)

    def add(self, acc, E):
        """Add the terms ``E`` (with each point's own share kept) to ``acc``."""
        if self.exclusion is not None:
            self.exclusion.adjust(E, self.q0, self.q1, self.train.x0, self.train.x1)
        acc.acc[self.rows] += E @ self.train.Vx


def _tiled_sums(
    Q, X, V, heads, plan, w, metric, metric_params, scale, exclusion, tile_elements
):
    """The sums of :func:`kernel_sums` tile by tile (training tiles outside,
    query tiles inside), the shift carried across training tiles."""
    m, n, k = Q.shape[0], X.shape[0], V.shape[1]
    out = [_Accumulator(m, k) for _ in heads]
    fused = [h for h, coef in enumerate(plan.coefs) if coef is not None]
    general = [h for h, coef in enumerate(plan.coefs) if coef is None]
    bq, bn = _tile_shape(m, n, tile_elements)
    near = np.full(m, np.inf) if fused else None
    dbuf = np.empty(bq * bn)
    ebuf = np.empty(bq * bn) if len(heads) > 1 else None
    chains = _SquareChains(plan.coefs, fused, bq * bn) if fused else None
    copy = exclusion is not None and exclusion.keep_ratio is not None
    for x0 in range(0, n, bn):
        train = _TrainTile(X, V, w, x0, min(x0 + bn, n), scale, plan)
        for q0 in range(0, m, bq):
            tile = _QueryTile(q0, min(q0 + bq, m), train, exclusion)
            buf = dbuf[: tile.shape[0] * tile.shape[1]].reshape(tile.shape)
            Qt = _scaled_rows(Q, q0, tile.q1, scale)
            if plan.single is not None:
                tile.add(
                    out[0], train.single_exp(Qt, buf, tile.masked, out[0], tile.rows)
                )
                continue
            if plan.gemm:
                D = train.gemm_sq(Qt - plan.centre, buf)
            else:
                D = pairwise_distances(
                    Qt,
                    train.X,
                    metric,
                    metric_params,
                    squared=plan.squared,
                    out=buf,
                    first_row=q0,
                )
            target = ebuf[: D.size].reshape(tile.shape) if ebuf is not None else D
            # General heads first: the log-linear ones below mask D in place.
            for h in general:
                head = head_rows(heads[h], tile.rows)
                tile.add(out[h], _general_terms(D, head, out[h], tile, plan.squared))
            if fused:
                excess = _excess_tile(D, near, target, tile, copy)
                for h, E in chains.tile(excess, out):
                    tile.add(out[h], E)
    if plan.single is not None and plan.gemm:
        # The single-head GEMM path drops the per-query constant coef |q - c|^2.
        for q0 in range(0, m, bq):
            Qc = _scaled_rows(Q, q0, q0 + bq, scale) - plan.centre
            out[0].M[q0 : q0 + bq] += plan.single * np.einsum("ij,ij->i", Qc, Qc)
    return [(a.acc[:, :k], a.acc[:, k].copy(), a.M) for a in out]


def _general_terms(D, head, acc, tile, squared):
    """Shifted terms of a head evaluated by its kernel, after moving the
    head's shift to include the tile's largest log weights."""
    L = _log_weights(D, head, squared)
    if is_user(head.kernel):
        _check_user_kernel(L, head)
    for ix in tile.masked:
        L[ix] = -np.inf
    tile_max = L.max(axis=1)
    unbounded = bool(np.isinf(head.kernel.support))
    E = _shifted_exp(L, acc, tile.rows, tile_max, unbounded)
    if not head.kernel.nonnegative:
        E *= _signs(D, head, squared)
        for ix in tile.masked:
            E[ix] = 0.0
    return E


def _excess_tile(D, near, target, tile, copy):
    """The tile of the log-linear heads, shared by all of them.

    The largest log value of a row is coef times its smallest unmasked
    distance so far (the head's shift), the smallest is coef times its largest
    distance. D becomes the excess over that nearest distance (masked entries
    at ``inf``).
    """
    rows = tile.rows
    dmax = D.max(axis=1)
    for ix in tile.masked:
        D[ix] = np.inf
    dmin = D.min(axis=1)
    nearest = np.minimum(near[rows], dmin)
    near[rows] = nearest
    base = np.where(np.isfinite(nearest), nearest, 0.0)
    D -= base[:, None]
    with np.errstate(invalid="ignore"):
        gap = np.min(dmin - base, initial=np.inf)
    return ExcessTile(D, dmin, gap, dmax - base, target, rows, copy)


class _TrainTile:
    """One tile of training rows, prepared once for all query tiles.

    ``X``: scaled float64 rows; ``Vx``: ``[w V, w]`` for the GEMM that sums
    values and weights; ``zero``: indices of zero-weight rows. For the GEMM
    paths, the centred rows as ``-2 (x - c)`` with ``|x - c|^2``; for a single
    log-linear head (``log K = coef d**2``) the bandwidth is folded in.
    """

    def __init__(self, X, V, w, x0, x1, scale, plan):
        centre, gemm, single = plan.centre, plan.gemm, plan.single
        self.x0, self.x1 = x0, x1
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


def exact_rows(sums, rows, Q, X, V, heads, **params):
    """Overwrite the ``rows`` (a boolean mask) of one head's ``sums = (S, den,
    M)`` with :func:`kernel_sums` of those queries, in float64 (the fallback of
    the approximate and expansion paths, which compute in float64 too)."""
    n_rows = int(np.count_nonzero(rows))
    record("exact_rows", n_queries=n_rows)  # 0: the fast path served every query
    if not n_rows:
        return
    own = own_rows(rows.size, params)
    if own is not None:  # leave-one-out: the queries' own training rows
        params = {**params, "self_index": own[rows], "self_offset": 0}
    try:
        ((S, den, M),) = kernel_sums(
            np.asarray(Q[rows], dtype=np.float64),
            X,
            V,
            heads_rows(heads, rows),
            **params,
        )
    except NaNDistanceError as exc:  # rows of the subset, as rows of Q
        raise NaNDistanceError(exc.metric, np.flatnonzero(rows)[exc.rows]) from None
    sums[0][rows], sums[1][rows], sums[2][rows] = S, den, M


def log_weight_rows(
    Q, X, head, *, metric, metric_params, sample_weight, tile_elements, scale=None
):
    """Yield ``(rows, W)``: full rows of shifted weights ``exp(L - M) * w``.

    ``W`` is signed for kernels that are not non-negative; rows with no
    positive weight are all zero.
    """
    m, n = Q.shape[0], X.shape[0]
    factors = getattr(head, "factors", None)
    if factors is not None:  # a product kernel: the continuous columns' distances
        head = recounted([head], X, sample_weight)[0]
        partition, Qfull = CellPartition(X, factors), Q
        Q, X = Q[:, list(factors.continuous)], X[:, list(factors.continuous)]
    X0, X = X, _scaled_rows(X, 0, n, scale)
    squared = use_squared(metric, [head], metric_params)
    w = None if sample_weight is None else _as_float64(sample_weight)
    bq, _ = _tile_shape(m, n, tile_elements, full_rows=True)
    for q0 in range(0, m, bq):
        q1 = min(q0 + bq, m)
        Qt = _scaled_rows(Q, q0, q1, scale)
        try:
            D = pairwise_distances(Qt, X, metric, metric_params, squared=squared)
        except NaNDistanceError:  # name every such query, not this tile's
            raise nan_rows(Q, X0, metric, metric_params, scale) from None
        tile_head = head_rows(head, slice(q0, q1))
        if factors is None:
            L = _log_weights(D, tile_head, squared)
        else:
            L = cell_log_weights(D, head, squared, Qfull[q0:q1], partition)
        if is_user(head.kernel):
            _check_user_kernel(L, head)
        if w is not None:
            L[:, w == 0] = -np.inf
        M = L.max(axis=1, keepdims=True)
        M[~np.isfinite(M)] = 0.0
        W = np.exp(L - M)
        if not head.kernel.nonnegative:
            W *= _signs(D, tile_head, squared)
        if w is not None:
            W *= w
        yield slice(q0, q1), W


class DenseBackend(Backend):
    """Every pair of queries and training points, tile by tile: any kernel,
    any metric, any values (the fallback of every other backend)."""

    name = "brute"
    leave_one_out = True

    def sums(self, index, Q, X, V, heads, *, n_jobs=None, **params):
        return parallel_kernel_sums(
            Q, X, V, heads, sums=kernel_sums, n_jobs=n_jobs, **params
        )
