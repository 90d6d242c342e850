"""Predictions on a loaded machine: sknw's default against its idle time.

Run ``python benchmarks/bench_load.py`` (``--quick`` for smaller sizes). A
second process keeps one core busy (``np.exp`` in a loop) while predictions
run with default settings (``n_jobs=None``, the default BLAS threads of the
process): the kernel sums run BLAS on one thread, so a busy core costs them
little. For comparison, the same predictions with the library's BLAS threads
left on inside the sums. Ratios of timings in one run; these rows are about
threads, so BLAS threads are not limited here.
"""

import argparse
import multiprocessing as mp
import time

import numpy as np
from _timing import best_time, print_table

from sknw import NadarayaWatsonRegressor, config_context


def _busy(stop):
    x = np.linspace(0.0, 1.0, 1 << 16)
    while not stop.is_set():
        np.exp(x)


def rows(quick):
    n, m = (8000, 2000) if quick else (20000, 5000)
    rng = np.random.default_rng(0)
    X, Q = rng.normal(size=(n, 3)), rng.normal(size=(m, 3))
    y = np.sin(X[:, 0])
    model = NadarayaWatsonRegressor(bandwidth=0.3).fit(X, y)

    def threaded():
        with config_context(blas_threads="inherit"):
            model.predict(Q)

    timings = {}
    for state in ("idle", "loaded"):
        stop = mp.Event()
        worker = mp.Process(target=_busy, args=(stop,)) if state == "loaded" else None
        if worker is not None:
            worker.start()
            time.sleep(0.5)
        try:
            timings[state] = (
                best_time(lambda: model.predict(Q), 3),
                best_time(threaded, 3),
            )
        finally:
            stop.set()
            if worker is not None:
                worker.join()
    names = [
        (f"sknw predict, n={n}, m={m}, d=3 (default settings)", 0),
        ("the same with the library's BLAS threads in the sums", 1),
    ]
    return [
        (name, "the same, idle", timings["loaded"][i] / timings["idle"][i], "")
        for name, i in names
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    args = parser.parse_args()
    table = rows(args.quick)
    print_table(table, "measurement (one core busy)")


if __name__ == "__main__":
    main()
