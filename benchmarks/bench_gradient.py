"""Gradients and local polynomials: their cost relative to a prediction of
the same estimator (or of local linear), as ratios in one run.

Run ``python benchmarks/bench_gradient.py`` (``--quick`` for smaller
sizes). One BLAS thread. Rows:

- ``gradient`` of each estimator over ``predict`` of the same fitted
  estimator at the same queries (the local-constant gradient is one more
  head of the pass; in one feature, predictions take the fast backends and
  gradients the exact path, so the ratio grows with n there);
- ``LocalPolynomialRegressor(degree=p).predict`` over
  ``LocalLinearRegressor.predict`` at the same bandwidth, both exact
  (``algorithm="brute"``);
- statsmodels' ``KernelReg(reg_type="ll").fit`` (estimates and marginal
  effects) over sknw's ``predict`` plus ``gradient``, where installed.
"""

import argparse
import warnings
from functools import partial

import numpy as np
from _timing import best_time, print_table
from threadpoolctl import threadpool_limits

from sknw import LocalLinearRegressor, LocalPolynomialRegressor, NadarayaWatsonRegressor


def data(n, d, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, d))
    y = np.sin(2 * np.pi * X).sum(axis=1) + 0.1 * rng.normal(size=n)
    return X, y, rng.uniform(size=(n, d))


def gradient_rows(sizes, table):
    for n, d in sizes:
        X, y, Q = data(n, d)
        for name, est in (
            ("NW", NadarayaWatsonRegressor(bandwidth=0.1)),
            (
                "NW epanechnikov",
                NadarayaWatsonRegressor(kernel="epanechnikov", bandwidth=0.1),
            ),
            ("LL", LocalLinearRegressor(bandwidth=0.1)),
            ("LP degree 2", LocalPolynomialRegressor(degree=2, bandwidth=0.1)),
        ):
            est.fit(X, y)
            predict = best_time(partial(est.predict, Q))
            gradient = best_time(partial(est.gradient, Q))
            table.append(
                (
                    f"{name} gradient n=m={n} d={d}",
                    f"its predict ({est.algorithm_})",
                    gradient / predict,
                    f"{gradient:.3f} s",
                )
            )


def degree_rows(sizes, table):
    for n, d in sizes:
        X, y, Q = data(n, d)
        ll = LocalLinearRegressor(bandwidth=0.15, algorithm="brute").fit(X, y)
        base = best_time(partial(ll.predict, Q))
        for p in (0, 2, 3):
            lp = LocalPolynomialRegressor(degree=p, bandwidth=0.15, algorithm="brute")
            lp.fit(X, y)
            took = best_time(partial(lp.predict, Q))
            table.append(
                (
                    f"LP degree {p} predict n=m={n} d={d}",
                    "LL predict (brute)",
                    took / base,
                    f"{took:.3f} s",
                )
            )


def statsmodels_rows(sizes, table):
    try:
        from statsmodels.nonparametric.kernel_regression import KernelReg
    except ImportError:
        return
    for n, d in sizes:
        X, y, Q = data(n, d)
        bw = np.full(d, 0.1)
        est = LocalLinearRegressor(bandwidth=bw).fit(X, y)
        ours = best_time(partial(est.predict, Q)) + best_time(partial(est.gradient, Q))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            kr = KernelReg(y, X, var_type="c" * d, reg_type="ll", bw=bw)
            theirs = best_time(partial(kr.fit, Q), repeat=1)
        table.append(
            (
                f"statsmodels ll fit n=m={n} d={d}",
                "sknw predict+gradient",
                theirs / ours,
                f"{theirs:.2f} s",
            )
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    quick = parser.parse_args().quick
    table = []
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gradient_rows(
            [(2000, 1), (2000, 2)] if quick else [(20000, 1), (5000, 2), (5000, 3)],
            table,
        )
        degree_rows([(1000, 1), (1000, 2)] if quick else [(5000, 1), (3000, 2)], table)
        statsmodels_rows(
            [(300, 1), (300, 2)] if quick else [(1000, 1), (1000, 2)], table
        )
    print_table(table)


if __name__ == "__main__":
    main()
