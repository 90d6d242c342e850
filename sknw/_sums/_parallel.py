"""Any backend's sums over batches of queries, in parallel."""

import contextlib
import functools
import threading

import numpy as np
from joblib import effective_n_jobs
from sklearn.utils.parallel import Parallel, delayed
from threadpoolctl import ThreadpoolController

from .._config import get_config
from .._trace import Tunable, record
from ._base import NaNDistanceError, heads_rows

#: Fewest queries per parallel batch.
MIN_BATCH = Tunable(256)


def parallel_kernel_sums(Q, X, V, heads, *, sums, n_jobs=None, **params):
    """A backend's ``sums`` (``sums(Q, X, V, heads, **params)``, e.g.
    :func:`~sknw._sums._dense.kernel_sums`) over batches of queries in
    parallel.

    The queries are split into one contiguous batch per worker; the batches
    run through scikit-learn's :class:`~sklearn.utils.parallel.Parallel`
    (threads preferred: numpy's ufuncs, ``cdist`` and BLAS release the GIL),
    so ``joblib.parallel_config`` decides where they run. BLAS runs on the
    core's threads, serially too (:func:`core_blas_threads`). ``n_jobs=None`` or 1, or
    too few queries, runs ``sums`` directly. With
    ``exclude_self`` (``Q`` is ``X``), each batch knows its queries' own rows
    from its ``self_offset`` (or its part of ``self_index``).
    """
    bounds = batch_bounds(Q.shape[0], n_jobs)
    if bounds is None:
        with core_blas_threads():
            return sums(Q, X, V, heads, **params)
    # The heads go with the batch's parameters: per-query divisors are cut
    # with the queries (see batch_params).
    parts = parallel_batches(
        lambda Qb, p: sums(Qb, X, V, **p),
        Q,
        bounds,
        {**params, "heads": heads},
        n_jobs,
    )
    return [
        tuple(np.concatenate([part[h][i] for part in parts]) for i in range(3))
        for h in range(len(heads))
    ]


def batch_bounds(m, n_jobs):
    """Bounds of one contiguous batch of ``m`` queries per worker, or None
    where one batch (``n_jobs`` None or 1, or too few queries) does."""
    n_batches = min(effective_n_jobs(n_jobs), m // MIN_BATCH.value)
    if n_batches <= 1:
        return None
    return np.linspace(0, m, n_batches + 1).astype(np.intp)


def batch_params(params, a, b):
    """``params`` of the queries ``a:b``: with ``exclude_self``, their own
    rows (their part of ``self_index``, or ``self_offset`` moved on); the
    ``heads`` among them with their per-query divisors cut to those
    queries."""
    if "heads" in params:
        params = {**params, "heads": heads_rows(params["heads"], slice(a, b))}
    if not params.get("exclude_self"):
        return params
    index = params.get("self_index")
    if index is not None:
        return {**params, "self_index": index[a:b]}
    return {**params, "self_offset": params.get("self_offset", 0) + int(a)}


def parallel_batches(fn, Q, bounds, params, n_jobs):
    """``[fn(Q[a:b], params of a:b), ...]`` over the batches, in parallel
    (threads preferred, each on the core's BLAS threads)."""
    return Parallel(n_jobs=n_jobs, prefer="threads")(
        delayed(_batch_call)(fn, Q[a:b], batch_params(params, a, b), int(a))
        for a, b in zip(bounds[:-1], bounds[1:], strict=True)
    )


@functools.cache
def _controller():
    return ThreadpoolController()


#: How deep each thread is in :func:`core_blas_threads` contexts.
_DEPTH = threading.local()


@contextlib.contextmanager
def core_blas_threads():
    """A context in which BLAS runs on the core's threads: at most
    ``blas_threads`` of :func:`~sknw.set_config` (one by default), or as the
    process sets them where that is ``"inherit"``.

    The core's matrix products are small tile products, which gain little
    from BLAS threads and lose much when the machine is loaded (threads that
    wait for each other on busy cores): as scikit-learn's pairwise-distance
    reductions do, the core computes on one BLAS thread by default and
    takes several cores through ``n_jobs``. (The controller is made once:
    making one scans the loaded libraries.) Within such a context of the
    same thread, another one changes nothing and costs nothing (entering the
    controller's limit takes tens of microseconds).
    """
    depth = getattr(_DEPTH, "n", 0)
    if depth:
        _DEPTH.n = depth + 1
        try:
            yield
        finally:
            _DEPTH.n = depth
        return
    limit = get_config()["blas_threads"]
    if limit == "inherit":
        context = contextlib.nullcontext()
    else:
        # The outermost context of the thread enters the controller's limit.
        record("blas_limit", limit=limit)
        context = _controller().limit(limits=limit, user_api="blas")
    with context:
        _DEPTH.n = 1
        try:
            yield
        finally:
            _DEPTH.n = 0


def _batch_call(fn, Q, params, first=0):
    """One batch (queries from ``first`` on), on the core's BLAS threads."""
    record("batch", first=first, n_queries=Q.shape[0])
    try:
        with core_blas_threads():
            return fn(Q, params)
    except NaNDistanceError as exc:
        raise exc.shifted(first) from None
