"""The registry of backends: which can serve a request, which ``"auto"`` picks.

Each backend says why it cannot serve a kernel and metric
(:meth:`Backend.why_not`, the source of every eligibility message), builds its
index at fit (:meth:`Backend.fit`), says whether an index serves the values
and heads it is handed (:meth:`Backend.serves`) and computes the sums
(:meth:`Backend.sums`), the same ``(S, den, M)`` per head as every other
backend. The estimators choose once, at fit (:func:`choose`, stored as
``algorithm_`` with the index), and predict through :func:`backend_sums`,
which falls back to the dense backend where the fitted index does not serve.
The order of :data:`BACKENDS` is the ``"auto"`` precedence.
"""

from dataclasses import dataclass, replace

import numpy as np

from .._trace import record
from ._base import (
    TILE_ELEMENTS,
    MomentSums,
    NaNDistanceError,
    nan_rows,
    own_rows,
    per_query,
)
from ._binned import BinnedBackend
from ._cells import (
    CellIndex,
    CellPartition,
    cell_request,
    cell_sums,
    discrete_of,
    many_cells,
)
from ._dense import DenseBackend
from ._fgt_backend import FGTBackend
from ._parallel import batch_bounds, core_blas_threads, parallel_batches
from ._sorted import SortedBackend
from ._tiles import TilesBackend
from ._tree import TreeBackend

#: The backends, in the order ``"auto"`` tries them; the dense backend last,
#: which serves every request.
BACKENDS = {
    backend.name: backend
    for backend in (
        FGTBackend(),
        SortedBackend(),
        TreeBackend(),
        TilesBackend(),
        BinnedBackend(),
        DenseBackend(),
    )
}
#: The backend that serves every request (and every fallback).
DENSE = DenseBackend.name
#: Every value of the estimators' ``algorithm`` parameter.
ALGORITHMS = ("auto", *BACKENDS)
#: ``"auto"`` considers a backend other than the dense one from this many
#: training points.
AUTO_MIN_SAMPLES = 512


def algorithms(*, fixed_values=True, tolerance=True, local_moments=False):
    """The ``algorithm`` values of an estimator: ``"auto"`` and the backends,
    without those whose index holds the fitted values (``fixed_values=False``:
    the estimator sums other values too), unless they sum local moments
    (``local_moments=True``: a local polynomial fit, which takes those from
    them and its other sums from the dense backend), or that approximate
    within a tolerance (``tolerance=False``: the estimator has no tolerance
    parameter)."""
    return ("auto",) + tuple(
        name
        for name, b in BACKENDS.items()
        if (fixed_values or not b.fixed_values or (local_moments and b.local_moments))
        and (tolerance or not b.tolerance)
    )


@dataclass(frozen=True)
class FitRequest:
    """What a backend may index at fit.

    ``values`` is a function returning the (normalised) values and weights
    ``(V, w)`` the estimator averages, called only by a backend whose index
    holds them; ``tolerance`` the estimator's tolerance of approximate
    backends (None: it has none); ``auto``: chosen by ``"auto"``, so an index
    that would not pay is not built (:meth:`Backend.fit` returns None);
    ``grid``: one head of a grid summed by :func:`grid_sums`, whose dense
    alternative is a pass over every pair (no pruned path of a single head);
    ``powers``: the highest power of the local moments the index must sum
    (:func:`local_moments`; 0 for the sums of Nadaraya--Watson); ``shared``:
    a dict in which the heads of one grid share indexes that depend on the
    training points alone (None: no sharing); ``every_point``: the sums are
    leave-one-out of every training point, in one batch (the tiles then
    compute each pair of tiles once).
    """

    X: np.ndarray
    sample_weight: object
    values: object
    head: object
    scale: object
    metric: object
    metric_params: object
    tolerance: object = None
    tile_elements: int = TILE_ELEMENTS
    auto: bool = False
    grid: bool = False
    powers: int = 0
    shared: object = None
    every_point: bool = False

    @property
    def large(self):
        return self.X.shape[0] >= AUTO_MIN_SAMPLES


def why_not(name, kernel, metric, metric_params, n_features):
    """Why backend ``name`` cannot serve ``kernel`` with this metric and
    number of features (None: it can)."""
    return BACKENDS[name].why_not(kernel, metric, metric_params, n_features)


def check(name, kernel, metric, metric_params, n_features):
    """Raise ``ValueError`` if the explicit algorithm ``name`` cannot serve
    ``kernel`` (``"auto"`` always can)."""
    if name == "auto":
        return
    reason = why_not(name, kernel, metric, metric_params, n_features)
    if reason is not None:
        raise ValueError(reason)


def choose(algorithm, accepted, request):
    """``(name, index)`` of the backend that serves the fitted estimator.

    ``algorithm`` is the estimator's parameter, ``accepted`` the names it
    allows. An explicit backend is checked and fitted; ``"auto"`` takes the
    first backend of :data:`BACKENDS` that it may pick, that can serve, and
    whose index pays (dense otherwise).
    """
    if discrete_of([request.head]) is not None:
        return _choose_cells(algorithm, accepted, request)
    kernel, d = request.head.kernel, request.X.shape[1]
    metric, params = request.metric, request.metric_params
    spans = per_query(request.head)
    if algorithm != "auto":
        check(algorithm, kernel, metric, params, d)
        if spans and not BACKENDS[algorithm].per_query and algorithm != DENSE:
            raise ValueError(
                f"algorithm={algorithm!r} cannot serve a bandwidth per query "
                "(span); use algorithm='auto', 'sorted' or "
                f"{DENSE!r}."
            )
        return algorithm, BACKENDS[algorithm].fit(request)
    auto = replace(request, auto=True)
    for name, backend in BACKENDS.items():
        if name not in accepted or not backend.auto:
            continue
        if spans and not backend.per_query and name != DENSE:
            continue
        if backend.why_not(kernel, metric, params, d) is not None:
            continue
        index = backend.fit(auto)
        if index is not None or name == DENSE:
            return name, index
    return DENSE, None  # pragma: no cover - the dense backend always serves


def _choose_cells(algorithm, accepted, request):
    """:func:`choose` for a product kernel with discrete features: a backend
    and index per cell (:class:`~sknw._sums._cells.CellIndex`), named by
    the backend of the most training points."""
    partition = CellPartition(request.X, request.head.factors, keep=True)
    if many_cells(partition):  # summed pair by pair: no index
        n_cells = len(partition.rows)
        return DENSE, CellIndex(partition, (DENSE,) * n_cells, (None,) * n_cells)
    names, indexes = [], []
    w = request.sample_weight
    for c, rows in enumerate(partition.rows):
        if w is not None and not np.any(np.asarray(w)[rows] > 0):
            names.append(DENSE)  # weighs nothing: never summed
            indexes.append(None)
            continue
        name, index = choose(algorithm, accepted, cell_request(request, partition, c))
        names.append(name)
        indexes.append(index)
    sizes = {}
    for name, rows in zip(names, partition.rows, strict=True):
        sizes[name] = sizes.get(name, 0) + rows.size
    main = max(sizes, key=sizes.get) if sizes else DENSE
    return main, CellIndex(partition, tuple(names), tuple(indexes))


def backend_sums(name, index, Q, X, V, heads, *, n_jobs=None, **params):
    """The sums of every head by backend ``name`` with its fitted ``index``,
    or by the dense backend where that index does not serve ``V`` and
    ``heads``, or the backend cannot leave points out (``exclude_self``).
    Discrete heads are summed cell by cell, each cell by its own backend
    (``index`` a :class:`~sknw._sums._cells.CellIndex`; dense without)."""
    if discrete_of(heads) is not None:
        cells = index if isinstance(index, CellIndex) else None

        def cell(c, Qc, Xc, Vc, hs, p):
            name_c, index_c = (
                (DENSE, None) if cells is None else (cells.names[c], cells.indexes[c])
            )
            return backend_sums(name_c, index_c, Qc, Xc, Vc, hs, n_jobs=n_jobs, **p)

        partition = None if cells is None else cells.partition
        return cell_sums(cell, Q, X, V, heads, partition, **params)
    backend = BACKENDS[name]
    loo = params.get("exclude_self", False)
    if (
        (loo and not backend.leave_one_out)
        or (any(per_query(h) for h in heads) and not backend.per_query)
        or not backend.serves(index, V, heads, params.get("sample_weight"))
    ):
        backend = BACKENDS[DENSE]
    record(
        "sums",
        backend=backend.name,
        requested=name,
        n_queries=Q.shape[0],
        n_heads=len(heads),
        leave_one_out=loo,
    )
    try:
        with core_blas_threads():
            return backend.sums(index, Q, X, V, heads, n_jobs=n_jobs, **params)
    except NaNDistanceError:
        raise nan_rows(
            Q, X, params["metric"], params.get("metric_params"), params.get("scale")
        ) from None


def grid_sums(
    algorithm,
    accepted,
    Q,
    X,
    V,
    heads,
    *,
    n_jobs=None,
    pairs=None,
    tolerance=None,
    **params,
):
    """The sums of several heads (a grid of kernels and bandwidths), each by
    the backend :func:`choose` picks for it, with an index built for these
    training points and values; the heads left to the dense backend share
    one pass over the distances. ``params`` are those of
    :func:`backend_sums` (with ``exclude_self`` for leave-one-out).
    Discrete heads: from the pair tables a search keeps (``pairs(Q, X, V,
    heads, **params)``, see :mod:`sknw._sums._pairs`) where they serve, else
    cell by cell, each cell's continuous heads by this function.
    ``tolerance``: that of the approximate backends (None: none of them)."""
    if discrete_of(heads) is not None:
        if pairs is not None:
            with core_blas_threads():  # as the backends (backend_sums)
                got = pairs(Q, X, V, heads, **params)
            if got is not None:
                return got

        def cell(c, Qc, Xc, Vc, hs, p):
            return grid_sums(
                algorithm,
                accepted,
                Qc,
                Xc,
                Vc,
                hs,
                n_jobs=n_jobs,
                tolerance=tolerance,
                **p,
            )

        return cell_sums(cell, Q, X, V, heads, **params)
    out = [None] * len(heads)
    request = FitRequest(
        X=X,
        sample_weight=params.get("sample_weight"),
        values=lambda: (V, params.get("sample_weight")),
        head=None,
        scale=params.get("scale"),
        metric=params["metric"],
        metric_params=params.get("metric_params"),
        tile_elements=params.get("tile_elements", TILE_ELEMENTS),
        tolerance=tolerance,
        # A lone head's dense alternative is the single head's path.
        grid=len(heads) > 1,
        shared={},
        every_point=every_point(Q.shape[0], X.shape[0], n_jobs, **params),
    )
    dense = []
    for h, head in enumerate(heads):
        if per_query(head):  # the dense backend serves per-query divisors
            dense.append(h)
            continue
        name, index = choose(algorithm, accepted, replace(request, head=head))
        if name == DENSE:
            dense.append(h)
        else:
            out[h] = backend_sums(
                name, index, Q, X, V, [head], n_jobs=n_jobs, **params
            )[0]
    if dense:
        shared = [heads[h] for h in dense]
        got = backend_sums(DENSE, None, Q, X, V, shared, n_jobs=n_jobs, **params)
        for h, sums in zip(dense, got, strict=True):
            out[h] = sums
    return out


def every_point(m, n, n_jobs=None, **params):
    """Whether ``m`` queries are leave-one-out of every one of the ``n``
    training points (``exclude_self``), each once, in one batch."""
    own = own_rows(m, params)
    if own is None or m != n or batch_bounds(m, n_jobs) is not None:
        return False
    every = np.arange(n)
    # In order (the common case) without sorting: a sort costs 4 ms at 1e5.
    return bool(np.array_equal(own, every) or np.array_equal(np.sort(own), every))


def grid_local_moments(
    algorithm, accepted, request, heads, powers, *, n_jobs=None, **params
):
    """:class:`~sknw._sums._base.MomentSums` of the local fits of each of
    ``heads`` (a grid over ``request``'s training points, values and scale)
    at every training point, each left out of its own sums
    (``exclude_self``, in one batch), by the backend :func:`choose` would
    take first for the grid's kernel where that backend sums a grid's moments
    in one pass (:attr:`~sknw._sums._base.Backend.grid_moments`). A list with
    None for the heads it does not serve: each of those takes its own pass
    (:func:`choose` and :func:`local_moments`)."""
    none = [None] * len(heads)
    n, d = request.X.shape
    kernels = {head.kernel for head in heads}
    if (
        len(kernels) != 1
        or not every_point(n, n, n_jobs, **params)
        or discrete_of(heads) is not None
        or any(per_query(head) for head in heads)
    ):
        return none
    (kernel,) = kernels
    metric, metric_params = request.metric, request.metric_params
    names = (
        [algorithm]
        if algorithm != "auto"
        else [name for name, b in BACKENDS.items() if name in accepted and b.auto]
    )
    for name in names:
        backend = BACKENDS[name]
        if backend.why_not(kernel, metric, metric_params, d) is not None:
            continue
        if not backend.grid_moments:
            return none  # the first that can serve sums each head alone
        with core_blas_threads():
            got = backend.grid_moment_sums(
                replace(request, auto=algorithm == "auto"), heads, powers, **params
            )
        record("grid_moments", backend=name, n_heads=len(heads), served=got is not None)
        return none if got is None else got
    return none


def local_moments(
    name, index, Q, X, V, head, powers, *, n_jobs=None, exact=False, **params
):
    """:class:`~sknw._sums._base.MomentSums` of the local fits about each
    query, by backend ``name`` with its fitted ``index`` (over batches of
    queries for ``n_jobs``); None where that backend does not sum them or its
    index does not serve ``V`` and ``head`` (the estimator then takes its
    exact path). ``exact``: term by term over each query's window, where the
    backend can (:attr:`Backend.exact_moments`; None elsewhere)."""
    backend = BACKENDS[name]
    if exact and not backend.exact_moments:
        return None
    if discrete_of([head]) is not None:
        return None  # product kernels: the exact path
    if per_query(head) and not backend.per_query:
        return None
    if not backend.local_moments or not backend.serves(
        index, V, [head], params.get("sample_weight")
    ):
        return None

    def batch(Qb, p):
        p = dict(p)
        (h,) = p.pop("heads")  # cut to the batch's queries (per-query heads)
        if exact:
            return backend.moment_sums(index, Qb, X, V, h, powers, True, **p)
        return backend.moment_sums(index, Qb, X, V, h, powers, **p)

    record("local_moments", backend=name, n_queries=Q.shape[0], exact=exact)
    # An approximate backend (binned) bins every training point at each
    # call: one call for all the queries, whatever n_jobs.
    bounds = None if backend.tolerance else batch_bounds(Q.shape[0], n_jobs)
    if bounds is None:
        with core_blas_threads():
            return batch(Q, {**params, "heads": [head]})
    parts = parallel_batches(batch, Q, bounds, {**params, "heads": [head]}, n_jobs)
    counts = None if parts[0].counts is None else [p.counts for p in parts]
    unit = parts[0].unit
    if np.ndim(unit):  # one per query
        unit = np.concatenate([np.ravel(p.unit) for p in parts])
    return MomentSums(
        np.concatenate([p.sums for p in parts]),
        np.concatenate([p.bound for p in parts]),
        None if counts is None else np.concatenate(counts),
        unit,
    )
