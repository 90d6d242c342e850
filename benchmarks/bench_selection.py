"""Bandwidth selection: sknw's one-pass leave-one-out vs peers, as ratios.

Run ``python benchmarks/bench_selection.py`` (``--quick`` for smaller sizes).
Compares, on the same data, ``NadarayaWatsonRegressorCV`` over a 30-bandwidth
grid (and with ``refine=True``: per-feature refinement of the leave-one-out
score) with statsmodels' ``KernelReg(reg_type="lc", bw="cv_ls")`` (Nelder--Mead
on the same leave-one-out least-squares criterion) and with
``GridSearchCV(cv=5)`` over the same grid. statsmodels runs only at sizes where
it finishes in reasonable time; above them its time is extrapolated from its
last measured size by its O(n^2) cost per step (same number of steps), and
marked ``~``.
Every time ratio comes from one run. Single thread.
"""

import argparse

import numpy as np
from _timing import timed
from sklearn.model_selection import GridSearchCV
from threadpoolctl import threadpool_limits

from sknw import NadarayaWatsonRegressor, NadarayaWatsonRegressorCV


def make_data(n, d, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2.0, 2.0, size=(n, d))
    y = np.sin(2.0 * X[:, 0]) + (X[:, 1] if d > 1 else 0.0) ** 2
    return X, y + 0.3 * rng.normal(size=n)


def loo_mse(X, y, bandwidth):
    """Leave-one-out MSE of a fixed per-feature bandwidth (via sknw, exact)."""
    cv = NadarayaWatsonRegressorCV(bandwidths=[np.asarray(bandwidth, float)])
    return -cv.fit(X, y).best_score_


def statsmodels_cv_ls(X, y):
    import warnings

    from statsmodels.nonparametric.kernel_regression import KernelReg

    warnings.simplefilter("ignore")

    model = KernelReg(y, X, var_type="c" * X.shape[1], reg_type="lc", bw="cv_ls")
    return model.bw


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    args = parser.parse_args()
    sizes = [300, 600] if args.quick else [500, 1000, 2000, 5000]
    sm_limit = {1: 600, 3: 600} if args.quick else {1: 2000, 3: 1000}
    rows = []
    with threadpool_limits(1):
        for d in (1, 3):
            sm_time = sm_n = None
            for n in sizes:
                X, y = make_data(n, d, seed=n + d)
                t_loo, cv = timed(
                    lambda X=X, y=y: NadarayaWatsonRegressorCV().fit(X, y)
                )
                grid = list(cv.cv_results_["param_bandwidth"])
                t_grid, _ = timed(
                    lambda X=X, y=y, grid=grid: GridSearchCV(
                        NadarayaWatsonRegressor(),
                        {"bandwidth": grid},
                        cv=5,
                        scoring="neg_mean_squared_error",
                    ).fit(X, y)
                )
                t_ref, ref = timed(
                    lambda X=X, y=y: NadarayaWatsonRegressorCV(refine=True).fit(X, y)
                )
                ours = -ref.best_score_
                if n <= sm_limit[d]:
                    t_sm, bw = timed(lambda X=X, y=y: statsmodels_cv_ls(X, y))
                    sm_time, sm_n = t_sm, n
                    sm_score = loo_mse(X, y, np.abs(bw))
                    sm_note = f"{t_sm / t_ref:8.1f}"
                    quality = f"{ours / sm_score:9.6f}"
                else:
                    t_sm = sm_time * (n / sm_n) ** 2
                    sm_note = f"~{t_sm / t_ref:7.0f}"
                    quality = "        -"
                rows.append((d, n, t_loo, t_ref, sm_note, t_grid / t_loo, quality))
        X, y = make_data(5000, 4, seed=99)
        t20, _ = timed(lambda: NadarayaWatsonRegressorCV(bandwidths=20).fit(X, y))
        t20_2, _ = timed(
            lambda: NadarayaWatsonRegressorCV(bandwidths=20, n_jobs=2).fit(X, y)
        )
        t_pred, _ = timed(
            lambda: NadarayaWatsonRegressor(bandwidth=1.0).fit(X, y).predict(X)
        )
    print(
        f"{'d':>2}{'n':>6}{'grid s':>9}{'refined s':>11}"
        f"{'statsmodels/refined':>21}{'GridSearchCV5/grid':>20}"
        f"{'LOO MSE refined/sm':>20}"
    )
    for d, n, t, t_ref, sm, grid, q in rows:
        print(f"{d:>2}{n:>6}{t:>9.3f}{t_ref:>11.3f}{sm:>21}{grid:>20.1f}{q:>20}")
    print(
        f"20-bandwidth LOO grid, n=5000, d=4: {t20:.2f} s = "
        f"{t20 / t_pred:.1f} x one dense predict of the training set; "
        f"n_jobs=2: {t20 / t20_2:.2f} x faster"
    )


if __name__ == "__main__":
    main()
