"""LOWESS and nearest-neighbour spans: sknw against statsmodels' ``lowess``,
and span selection against bandwidth selection, as ratios in one run.

Run ``python benchmarks/bench_lowess.py`` (``--quick`` for smaller sizes).
One BLAS thread. Rows:

- statsmodels' ``lowess(y, x, frac, it, delta=0)`` time over sknw's
  ``LocalLinearRegressor(kernel="tricube", span=frac,
  robust_iterations=it)`` fit plus prediction at the training points (the
  same estimates; the largest difference is in the notes), on a gamma
  design;
- ``predict`` with a span over ``predict`` at a fixed bandwidth, both in
  one feature with the tricube kernel (the sorted backend for both);
- local polynomials of degrees 2 and 3 (tricube, at a fixed bandwidth and
  with a span): ``predict`` on the fast path (moments about each query)
  over ``predict`` of Nadaraya--Watson on the same data, and the exact path
  (``algorithm="brute"``) over the fast path;
- the test error (against the true function) of the leave-one-out choice
  of a span over that of a bandwidth (``LocalLinearRegressorCV`` with
  ``spans`` and with its default grid), on a design whose density falls a
  hundredfold: a ratio below 1 favours the span.
"""

import argparse
import warnings
from functools import partial

import numpy as np
from _timing import print_table, timed
from threadpoolctl import threadpool_limits

from sknw import (
    LocalLinearRegressor,
    LocalLinearRegressorCV,
    LocalPolynomialRegressor,
    NadarayaWatsonRegressor,
)


def gamma_data(n, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.gamma(2.0, 1.5, n)
    f = np.sin(x) * np.exp(-x / 8)
    return x, f + 0.2 * rng.standard_t(3, n), f


def _fit_predict(est, X, y):
    return est.fit(X, y).predict(X)


def lowess_rows(sizes, table, frac=0.3, it=3):
    from statsmodels.nonparametric.smoothers_lowess import lowess

    for n in sizes:
        x, y, _ = gamma_data(n)
        t_sm, ref = timed(
            partial(lowess, y, x, frac=frac, it=it, delta=0.0, return_sorted=False)
        )
        est = LocalLinearRegressor(kernel="tricube", span=frac, robust_iterations=it)
        t_ours, got = timed(partial(_fit_predict, est, x[:, None], y))
        gap = float(np.max(np.abs(got - ref)))
        table.append(
            (
                f"statsmodels lowess, n={n}, frac={frac}, it={it}",
                "sknw fit + predict",
                t_sm / t_ours,
                f"max |diff| {gap:.1e}, {est.algorithm_}",
            ),
        )


def span_predict_rows(sizes, table):
    for n in sizes:
        x, y, _ = gamma_data(n, 1)
        X, Q = x[:, None], np.sort(x)[:, None]
        span = LocalLinearRegressor(kernel="tricube", span=0.1).fit(X, y)
        fixed = LocalLinearRegressor(kernel="tricube", bandwidth=span.bandwidth_)
        fixed.fit(X, y)
        t_span, _ = timed(partial(span.predict, Q))
        t_fixed, _ = timed(partial(fixed.predict, Q))
        table.append(
            (
                f"LL predict with span 0.1, n=m={n}",
                "at a fixed bandwidth",
                t_span / t_fixed,
                f"{span.algorithm_} / {fixed.algorithm_}",
            ),
        )


def local_polynomial_rows(sizes, exact_sizes, table):
    for degree in (2, 3):
        for kw in ({"bandwidth": 0.2}, {"span": 0.05}):
            what = f"span {kw['span']}" if "span" in kw else f"h {kw['bandwidth']}"
            for n in sizes:
                x, y, _ = gamma_data(n, 2)
                X = x[:, None]
                lp = LocalPolynomialRegressor(degree=degree, kernel="tricube", **kw)
                nw = NadarayaWatsonRegressor(kernel="tricube", **kw)
                lp.fit(X, y), nw.fit(X, y)
                t_lp, _ = timed(partial(lp.predict, X))
                t_nw, _ = timed(partial(nw.predict, X))
                table.append(
                    (
                        f"LP degree {degree} predict, {what}, n=m={n}",
                        "NW predict",
                        t_lp / t_nw,
                        f"{lp.algorithm_} / {nw.algorithm_}",
                    ),
                )
            for n in exact_sizes:
                x, y, _ = gamma_data(n, 3)
                X = x[:, None]
                lp = LocalPolynomialRegressor(degree=degree, kernel="tricube", **kw)
                exact = LocalPolynomialRegressor(
                    degree=degree, kernel="tricube", algorithm="brute", **kw
                )
                lp.fit(X, y), exact.fit(X, y)
                t_lp, got = timed(partial(lp.predict, X))
                t_exact, ref = timed(partial(exact.predict, X))
                gap = float(np.max(np.abs(got - ref)))
                table.append(
                    (
                        f"LP degree {degree} exact predict, {what}, n=m={n}",
                        "the fast path",
                        t_exact / t_lp,
                        f"max |diff| {gap:.1e}, {lp.algorithm_}",
                    ),
                )


def selection_rows(sizes, table, replicates=4):
    spans = np.geomspace(0.02, 0.8, 16)
    for n in sizes:
        ratios = []
        for r in range(replicates):
            x, y, _ = gamma_data(n, 10 + r)
            grid = np.linspace(np.quantile(x, 0.01), np.quantile(x, 0.99), 400)
            truth = np.sin(grid) * np.exp(-grid / 8)
            errors = []
            for est in (
                LocalLinearRegressorCV(kernels=["tricube"], spans=spans),
                LocalLinearRegressorCV(kernels=["tricube"]),
            ):
                est.fit(x[:, None], y)
                errors.append(np.mean((est.predict(grid[:, None]) - truth) ** 2))
            ratios.append(errors[0] / errors[1])
        table.append(
            (
                f"test MSE of the LOO span, n={n}",
                "of the LOO bandwidth",
                float(np.mean(ratios)),
                f"mean of {replicates}, range {min(ratios):.2f}-{max(ratios):.2f}",
            ),
        )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    quick = parser.parse_args().quick
    table = []
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lowess_rows([2000, 20000] if quick else [2000, 20000, 100000], table)
        span_predict_rows([20000] if quick else [20000, 200000], table)
        local_polynomial_rows(
            [20000] if quick else [20000, 200000], [2000] if quick else [10000], table
        )
        selection_rows([300] if quick else [300, 2000], table)
    print_table(table)


if __name__ == "__main__":
    main()
