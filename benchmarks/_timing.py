"""Timing and table helpers shared by the benchmark scripts (run them from any
folder)."""

import time


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
