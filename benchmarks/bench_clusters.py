"""The default local linear fit on clustered inputs, term by term and by blocks.

Run ``python benchmarks/bench_clusters.py`` (``--quick`` for n = 1000 and
2000 only, ``--repeat R`` for the best of more runs, ``--pairs`` for the cost
of a block's pair instead). One BLAS thread.

The inputs gather in 5 clusters of width about 1e-6 (uniform centres on
[0, 1]); the spread inputs are uniform on [0, 1]; the targets are ``sin(6
x)`` plus noise of 0.1. The leave-one-out search of
``LocalLinearRegressor().fit`` leaves the clusters' points to
:func:`~sknw._sums.line_moments`, whose windows then hold whole clusters:
summed term by term (``block_width(0)``) their cost grows as n**2; by
blocks (the default, :data:`~sknw._sums._support.BLOCK_WIDTH`) as n. Rows:

- clustered / spread: the default fit's time on the clustered inputs
  relative to the spread ones, term by term and by blocks (goal: the
  clusters cost at most a few spread fits);
- blocks / term by term: the clustered fit's time by blocks relative to term
  by term, with the bandwidths each chose (they must agree);
- pair cost (``--pairs``): what one query's pair with a block costs in terms
  (the measurement of :data:`~sknw._sums._support.BLOCK_POINTS`), from
  :func:`~sknw._sums.line_moments` on 20 clusters of 256 points of a given
  width within 15 bandwidths, at 3000 queries whose windows hold them all.
"""

import os

os.environ["OMP_NUM_THREADS"] = "1"
os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ["MKL_NUM_THREADS"] = "1"

import argparse

import numpy as np
from _timing import best_time, print_table
from threadpoolctl import threadpool_limits

from sknw import LocalLinearRegressor
from sknw._sums import Head, line_moments
from sknw._sums._support import BLOCK_WIDTH, _order_at, block_width
from sknw.kernels import Gaussian


def clustered(n, seed=0):
    """``(X, y)``: 5 clusters of width about 1e-6."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0.0, 1.0, 5)
    X = (centres[rng.integers(0, 5, n)] + 1e-6 * rng.normal(size=n))[:, None]
    return X, np.sin(6 * X[:, 0]) + 0.1 * rng.normal(size=n)


def spread(n, seed=0):
    """``(X, y)``: uniform inputs."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 1.0, (n, 1))
    return X, np.sin(6 * X[:, 0]) + 0.1 * rng.normal(size=n)


def fit_time(X, y, width, repeat):
    """The best time of the default fit with blocks of ``width`` (0: term by
    term), and its bandwidth."""
    with block_width(width):
        seconds = best_time(lambda: LocalLinearRegressor().fit(X, y), repeat)
        return seconds, float(LocalLinearRegressor().fit(X, y).bandwidth_[0])


def rows_for(n, repeat):
    """The table's rows at ``n`` points."""
    rows, times, chosen = [], {}, {}
    for label, width in (("term by term", 0.0), ("blocks", BLOCK_WIDTH)):
        for kind, draw in (("clustered", clustered), ("spread", spread)):
            times[kind, label], chosen[kind, label] = fit_time(*draw(n), width, repeat)
        ratio = times["clustered", label] / times["spread", label]
        rows.append(
            (
                f"clustered / spread, n={n}, {label}",
                "spread fit",
                ratio,
                f"{times['clustered', label]:.3f} s vs {times['spread', label]:.3f} s",
            )
        )
    ratio = times["clustered", "blocks"] / times["clustered", "term by term"]
    rows.append(
        (
            f"blocks / term by term, clustered, n={n}",
            "term by term",
            ratio,
            f"bandwidth {chosen['clustered', 'blocks']:.6g} vs "
            f"{chosen['clustered', 'term by term']:.6g}",
        )
    )
    return rows


def pair_rows(repeat, clusters=20, size=256, m=3000):
    """What a pair costs in terms, for clusters of a few widths."""
    rng = np.random.default_rng(0)
    h = 0.01
    centres = np.arange(clusters) * 0.71 * h + 0.013 * h
    rows = []
    for width in (1e-8, 1e-6, 1e-4, 1e-3, 4e-3):
        offsets = width * h * rng.uniform(-0.5, 0.5, size * clusters)
        X = (np.repeat(centres, size) + offsets)[:, None]
        V = rng.normal(size=(X.shape[0], 1))
        Q = rng.uniform(0.0, centres[-1], (m, 1))

        def moments(blocks, X=X, V=V, Q=Q):
            return line_moments(Q, Q[:, 0], X, V, Head(Gaussian(), h), 2, blocks=blocks)

        per_pair = best_time(lambda: moments(BLOCK_WIDTH), repeat) / (m * clusters)
        per_term = best_time(lambda: moments(0.0), repeat) / (m * X.shape[0])
        order = _order_at(0.5 * (15 * width + width * width / 4))
        rows.append(
            (
                f"pair cost, clusters of {width:g} bandwidths",
                "one term",
                per_pair / per_term,
                f"{per_pair * 1e9:.0f} ns vs {per_term * 1e9:.0f} ns; order <= {order}",
            )
        )
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="n = 1000, 2000")
    parser.add_argument("--repeat", type=int, default=3, help="best of this many")
    parser.add_argument("--pairs", action="store_true", help="the cost of a pair")
    args = parser.parse_args()
    sizes = (1000, 2000) if args.quick else (1000, 2000, 4000)
    table = []
    with threadpool_limits(1):
        if args.pairs:
            table += pair_rows(args.repeat)
        else:
            for n in sizes:
                table += rows_for(n, args.repeat)
    print_table(table)


if __name__ == "__main__":
    main()
