"""Timing and table helpers shared by the benchmark scripts (run them from any
folder)."""

import time

import numpy as np


def timed(fn):
    """``(seconds, result)`` of one call of ``fn``."""
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def best_time(fn, repeat=3):
    """Best wall time of ``repeat`` calls (the least disturbed run)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def print_table(table, heading="measurement"):
    """Print rows ``(name, relative to, ratio, notes)`` as aligned columns."""
    width = max(len(heading), *(len(row[0]) for row in table)) + 2
    ref_width = max(22, max(len(row[1]) for row in table) + 2)
    print(f"{heading:<{width}}{'relative to':<{ref_width}}{'ratio':>8}  notes")
    for name, ref, ratio, note in table:
        print(f"{name:<{width}}{ref:<{ref_width}}{ratio:>8.2f}  {note}")


def exp_time(n_elements, repeat=3):
    """Bare ``np.exp`` over ``n_elements`` values in cache-sized chunks."""
    chunk = np.linspace(-20.0, 0.0, 1 << 17)
    out = np.empty_like(chunk)
    reps = max(1, n_elements // chunk.size)

    def run():
        for _ in range(reps):
            np.exp(chunk, out=out)

    return best_time(run, repeat) * n_elements / (reps * chunk.size)
