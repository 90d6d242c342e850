"""Repeated searches and the C allocator: page faults per fit.

Run ``python benchmarks/bench_allocator.py`` (``--quick`` for fewer rounds).
Each round starts one process with the allocator's defaults and one with
glibc's ``MALLOC_MMAP_THRESHOLD_`` and ``MALLOC_TRIM_THRESHOLD_`` set (arrays
up to 64 MiB from its heap, and up to 256 MiB of freed memory kept there
instead of returned to the system), in turn; each process fits
``LocalLinearRegressorCV`` and predicts 401 points a number of times and
reports its mean and best time per fit and the minor page faults per fit
(pages the system hands the process afresh, each zeroed on its first
write). The ratio is that of the mean times, over all rounds. Setting one
of the two alone fixes the other at its default (128 KiB), so that every
larger array takes fresh pages: slower at 20000 points, measured. Linux
with glibc only (elsewhere the variables do nothing: the rows then show
it). One BLAS thread.
"""

import argparse
import os
import subprocess
import sys

import numpy as np
from _timing import print_table

#: What the second process sets.
KEPT = {
    "MALLOC_MMAP_THRESHOLD_": str(64 << 20),
    "MALLOC_TRIM_THRESHOLD_": str(256 << 20),
}

CHILD = """
import resource, sys, time
import numpy as np
from threadpoolctl import threadpool_limits
sys.path.insert(0, {here!r})
from bench_fast_selection import make_data, make_normal_data
from sknw import LocalLinearRegressorCV

make = make_normal_data if {kind!r} == "normal" else make_data
X, y = make({n}, seed=6)
grid = np.linspace(0.0, 1.0, 401)[:, None]
with threadpool_limits(1):
    for _ in range(3):
        LocalLinearRegressorCV().fit(X, y).predict(grid)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    times = []
    for _ in range({fits}):
        start = time.perf_counter()
        LocalLinearRegressorCV().fit(X, y).predict(grid)
        times.append(time.perf_counter() - start)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
print(sum(times) / len(times), min(times), faults / len(times))
"""


def run_child(kind, n, fits, extra_env):
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", **extra_env}
    code = CHILD.format(
        here=os.path.dirname(os.path.abspath(__file__)), kind=kind, n=n, fits=fits
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=600,
    )
    return tuple(map(float, out.stdout.split()))


def rows(quick):
    rounds, fits = (2, 10) if quick else (5, 20)
    table = []
    for kind, n in (("uniform", 2000), ("normal", 2000), ("uniform", 20000)):
        runs = {"default": [], "kept": []}
        for _ in range(rounds):  # in turn: the same drift for both
            runs["default"].append(run_child(kind, n, fits, {}))
            runs["kept"].append(run_child(kind, n, fits, KEPT))
        mean = {k: np.mean([r[0] for r in v]) for k, v in runs.items()}
        best = {k: min(r[1] for r in v) for k, v in runs.items()}
        faults = {k: np.mean([r[2] for r in v]) for k, v in runs.items()}
        table.append(
            (
                f"LocalLinearCV+predict, {kind}, n={n}, thresholds set",
                "allocator defaults",
                mean["kept"] / mean["default"],
                f"mean {mean['kept'] * 1e3:.1f} / {mean['default'] * 1e3:.1f} ms, "
                f"best {best['kept'] * 1e3:.1f} / {best['default'] * 1e3:.1f} ms, "
                f"faults per fit {faults['kept']:.0f} / {faults['default']:.0f}",
            )
        )
    return table


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    args = parser.parse_args()
    print_table(rows(args.quick))


if __name__ == "__main__":
    main()
