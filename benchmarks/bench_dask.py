"""Scale-out predict: a two-worker Dask cluster vs one process, as ratios.

Run ``python benchmarks/bench_dask.py`` (``--quick`` for fewer queries); it
needs the ``dask`` extra. A Gaussian regressor on 2000 training points in two
features predicts a million queries (``--quick``: 200,000):

- with :func:`sknw.dask_predict` on a ``distributed.LocalCluster`` of two worker
  processes with one thread each; the queries are generated on the workers and
  persisted before timing, and the time includes gathering the predictions
  into the client;
- with ``predict`` on NumPy queries under ``parallel_config(backend="dask")``
  (``n_jobs=None``: one batch per worker thread, the queries sent from the
  client);
- in this process, ``predict`` on NumPy queries with one BLAS thread: the
  reference.

Each ratio is the reference time over the cluster time (above 1: the cluster
is faster), both measured in the same run. The client and the scheduler share
the machine with the workers.
"""

import argparse

import numpy as np
from _timing import best_time
from threadpoolctl import threadpool_limits

from sknw import NadarayaWatsonRegressor, dask_predict


def rows(quick):
    import dask.array as da
    from distributed import Client, LocalCluster, wait
    from joblib import parallel_config

    n, d, m = 2000, 2, 200_000 if quick else 1_000_000
    chunk = m // 20
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=n)
    model = NadarayaWatsonRegressor(kernel="gaussian", bandwidth=0.3).fit(X, y)
    setting = f"m={m // 1000}k, n={n}, d={d}"

    cluster = LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    with cluster, Client(cluster) as client:
        queries = da.random.default_rng(1).normal(size=(m, d), chunks=(chunk, d))
        queries = queries.persist()
        wait(queries)
        Q = queries.compute()

        with threadpool_limits(1):
            expected = model.predict(Q)
            t_single = best_time(lambda: model.predict(Q), 2)

        got = dask_predict(model, queries).compute()
        t_dask = best_time(lambda: dask_predict(model, queries).compute(), 2)
        err_dask = np.max(np.abs(got - expected))

        with parallel_config(backend="dask"):
            got = model.predict(Q)
            t_joblib = best_time(lambda: model.predict(Q), 2)
        err_joblib = np.max(np.abs(got - expected))
        n_threads = sum(client.nthreads().values())

    reference = "1 process, 1 thread"
    return [
        (
            f"dask_predict, {n_threads} workers, {setting}",
            reference,
            t_single / t_dask,
            f"{t_dask:.2f} s vs {t_single:.2f} s; max |diff| {err_dask:.1e}",
        ),
        (
            f"predict, dask backend, {n_threads} workers, {setting}",
            reference,
            t_single / t_joblib,
            f"{t_joblib:.2f} s vs {t_single:.2f} s; max |diff| {err_joblib:.1e}",
        ),
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer queries")
    args = parser.parse_args()
    table = rows(args.quick)
    print(f"{'measurement':<56}{'relative to':<22}{'ratio':>8}  notes")
    for name, ref, ratio, note in table:
        print(f"{name:<56}{ref:<22}{ratio:>8.2f}  {note}")


if __name__ == "__main__":
    main()
