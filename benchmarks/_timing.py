"""Timing helper shared by the benchmark scripts (run them from any folder)."""

import time


def best_time(fn, repeat=3):
    """Best wall time of ``repeat`` calls (the least disturbed run)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)
