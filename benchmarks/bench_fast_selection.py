"""Fast exact selection and fast local linear, as ratios measured in one run.

Run ``python benchmarks/bench_fast_selection.py`` (``--quick`` for smaller
sizes, ``--only GROUP`` for some rows). One BLAS thread. Rows:

- ``NadarayaWatsonRegressorCV`` in 1-D over its default 30 bandwidths (exact
  leave-one-out on the fast backends), relative to one fixed-bandwidth
  predict of the training set at the selected bandwidth (goal: at most 60);
- ``LocalLinearRegressor`` predict in 1-D (moments about each query from the
  fgt and sorted indexes), relative to ``NadarayaWatsonRegressor`` on the same
  data and bandwidth (goal: at most 4);
- ``LocalLinearRegressor`` predict by the binned moments, relative to the
  binned Nadaraya--Watson sums and to the fast Gauss transform's local
  linear fit;
- ``LocalLinearRegressorCV`` in 1-D, relative to one Nadaraya--Watson predict
  of the training set (goal: at most 100);
- ``NadarayaWatsonRegressorCV`` and ``LocalLinearRegressorCV`` in 1-D with
  ``algorithm="binned"`` at ``binned_tol`` 1e-3 and 1e-6, relative to the
  same search on the exact fast paths (``"auto"``), with the largest
  difference of their scores (group ``binned-cv``);
- ``GridSearchCV(cv=5)`` over the same 30 bandwidths, relative to the exact
  leave-one-out, best of three runs of each (goal: at least 5);
- ``NadarayaWatsonRegressorCV`` in 3-D over its default 30 bandwidths,
  relative to a bare ``np.exp`` over ``n**2`` elements (goal: at most 10),
  the same search with the dense passes only (``algorithm="brute"``), and
  with tiles skipped only where ``exp`` rounds every term to 0 (the
  alternative to the tiles' bound: every term skipped is exactly 0);
- ``NadarayaWatsonRegressor`` predict and ``standard_error`` in 3-D by the
  tiles backend (tiles of training points beyond each query's reach
  skipped; for the standard errors, each of their two heads, the kernel and
  its square), relative to the dense sums, at 0.25 to 1 times the
  per-feature bandwidths the search selects;
- ``NadarayaWatsonRegressorCV`` in 2-D and 3-D at 2000 and 5000 points
  (leave-one-out of every point by pairs of tiles from 1500 points),
  relative to the same search with the dense passes only, and
  ``LocalLinearRegressorCV`` in 3-D relative to ``NadarayaWatsonRegressorCV``
  on the same data (group ``small``);
- with ``Rscript`` and KernSmooth installed: ``dpill`` plus ``locpoly`` (R's
  plug-in bandwidth and binned local linear fit) against
  ``LocalLinearRegressorCV`` plus predict, best of seven runs of each (R's
  timed within one R process, each run the mean of repetitions lasting at
  least 0.2 s; ours after a warm-up), the two taken in turn three times and
  the best of each kept (the machine's speed drifts between runs), in time
  (goal: within 20x) and in leave-one-out MSE of the chosen bandwidths
  (goal: equal or better); on uniform inputs, and at 2000 and 20000 points
  on normal ones (tails of one-sided windows, where the fast paths leave
  points to the sums term by term over their windows, and a few to the
  exact path).
"""

import argparse
import contextlib
import os
import shutil
import subprocess
import tempfile
import warnings

import numpy as np
from _timing import best_time, exp_time, print_table, timed
from sklearn.model_selection import GridSearchCV
from threadpoolctl import threadpool_limits

from sknw import (
    LocalLinearRegressor,
    LocalLinearRegressorCV,
    NadarayaWatsonRegressor,
    NadarayaWatsonRegressorCV,
)
from sknw._sums import EXP_FLOOR
from sknw._sums._tiles import TileIndex


def make_data(n, seed=0):
    """The ``sin(2 pi x^3)^3`` test function on [0, 1], noise 0.1."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 1.0, (n, 1))
    y = np.sin(2 * np.pi * X[:, 0] ** 3) ** 3 + rng.normal(0.0, 0.1, n)
    return X, y


def make_normal_data(n, seed=0):
    """The test function of :func:`make_data` at normal inputs (mean 1/2,
    standard deviation 0.15): windows thin out in the tails."""
    rng = np.random.default_rng(seed)
    X = rng.normal(0.5, 0.15, (n, 1))
    y = np.sin(2 * np.pi * X[:, 0] ** 3) ** 3 + rng.normal(0.0, 0.1, n)
    return X, y


def cv_rows(search_class, label, n, seed, goal):
    """``search_class`` over its default 30 candidates in 1-D, relative to one
    fixed-bandwidth Nadaraya--Watson predict of the training set at the
    selected bandwidth, for the Gaussian and the Epanechnikov kernel."""
    rows = []
    X, y = make_data(n, seed=seed)
    for kernel in ("gaussian", "epanechnikov"):
        search = search_class(kernels=[kernel])
        t_cv, cv = timed(lambda s=search: s.fit(X, y))
        nw = NadarayaWatsonRegressor(kernel=kernel, bandwidth=cv.bandwidth_).fit(X, y)
        t_pred, _ = timed(lambda nw=nw: nw.predict(X))
        rows.append(
            (
                f"{label} 1-D {kernel}, n={n}",
                "one NW predict",
                t_cv / t_pred,
                f"{t_cv:.2f} s, predict by {nw.algorithm_} (goal <= {goal})",
            )
        )
    return rows


def local_linear_rows(n):
    rows = []
    X, y = make_data(n, seed=2)
    Q = make_data(n, seed=3)[0]
    for kernel, h in (("gaussian", 0.01), ("epanechnikov", 0.02)):
        ll = LocalLinearRegressor(kernel=kernel, bandwidth=h).fit(X, y)
        nw = NadarayaWatsonRegressor(kernel=kernel, bandwidth=h).fit(X, y)
        t_ll, _ = timed(lambda ll=ll: ll.predict(Q))
        t_nw, _ = timed(lambda nw=nw: nw.predict(Q))
        rows.append(
            (
                f"LocalLinear predict 1-D {kernel}, n=m={n}",
                "NW predict",
                t_ll / t_nw,
                f"{t_ll:.2f} s by {ll.algorithm_} (goal <= 4)",
            )
        )
    # The binned moments (binned_tol 1e-6), against the binned sums of
    # Nadaraya--Watson and the local linear fit by the fast Gauss transform.
    h = 0.01
    params = {"bandwidth": h, "algorithm": "binned"}
    ll = LocalLinearRegressor(**params).fit(X, y)
    nw = NadarayaWatsonRegressor(**params).fit(X, y)
    exact = LocalLinearRegressor(bandwidth=h).fit(X, y)
    t_ll, got = timed(lambda: ll.predict(Q))
    t_nw, _ = timed(lambda: nw.predict(Q))
    t_exact, ref = timed(lambda: exact.predict(Q))
    gap = np.max(np.abs(got - ref)) / np.ptp(y)
    others = (("NW predict, binned", t_nw), ("LocalLinear predict, fgt", t_exact))
    for name, t in others:
        rows.append(
            (
                f"LocalLinear predict 1-D gaussian binned, n=m={n}",
                name,
                t_ll / t,
                f"{t_ll:.2f} s; max |diff| from fgt {gap:.1e} of the range",
            )
        )
    return rows


def binned_cv_rows(n):
    """The searches on the binned backend against the exact fast paths."""
    rows = []
    X, y = make_data(n, seed=4)
    for search_class in (NadarayaWatsonRegressorCV, LocalLinearRegressorCV):
        auto = search_class()
        t_auto, auto = timed(lambda s=auto: s.fit(X, y))
        ref = auto.cv_results_["mean_test_score"]
        for tol in (1e-3, 1e-6):
            binned = search_class(algorithm="binned", binned_tol=tol)
            t_binned, binned = timed(lambda s=binned: s.fit(X, y))
            gap = np.max(np.abs(binned.cv_results_["mean_test_score"] - ref))
            rows.append(
                (
                    f"{search_class.__name__} 1-D binned_tol={tol:g}, n={n}",
                    "same search, auto",
                    t_binned / t_auto,
                    f"{t_binned:.2f} s; max score diff {gap:.1e}",
                )
            )
    return rows


def make_cube(n, seed=0):
    """Three features on [-2, 2]^3, ``sin(2 x0) + x1**2``, noise 0.3."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2.0, 2.0, size=(n, 3))
    return X, np.sin(2.0 * X[:, 0]) + X[:, 1] ** 2 + 0.3 * rng.normal(size=n)


@contextlib.contextmanager
def _tiles_reach(reach):
    """The tiles' indexes with this reach (in logarithms below each query's
    largest term) instead of the one their bound sets."""
    init = TileIndex.__init__

    def patched(self, *args, **kwargs):
        init(self, *args, **kwargs)
        if self.n_points:
            self.reach, self.usable = float(reach), True

    TileIndex.__init__ = patched
    try:
        yield
    finally:
        TileIndex.__init__ = init


def several_feature_rows(n, m):
    """Selection in 3-D against ``np.exp`` over n**2 elements; tiles
    predictions against dense ones."""
    rows = []
    X, y = make_cube(n, seed=7)
    t_exp = exp_time(n * n)
    fits = {}
    for algorithm in ("auto", "brute"):
        search = NadarayaWatsonRegressorCV(algorithm=algorithm)
        fits[algorithm] = search.fit(X, y)  # and a warm-up
        t_cv = best_time(lambda s=search: s.fit(X, y), repeat=2)
        rows.append(
            (
                f"NW-CV 3-D, n={n}, algorithm={algorithm!r}",
                "np.exp over n**2",
                t_cv / t_exp,
                f"{t_cv:.2f} s" + (" (goal <= 10)" if algorithm == "auto" else ""),
            )
        )
    # The alternative of skipping only the terms exp rounds to 0 (a reach of
    # -EXP_FLOOR = 700 below each query's largest term, about 37 bandwidths):
    # every term skipped is exactly 0.
    with _tiles_reach(-EXP_FLOOR):
        search = NadarayaWatsonRegressorCV()
        t_cv = best_time(lambda s=search: s.fit(X, y), repeat=2)
    rows.append(
        (
            f"NW-CV 3-D, n={n}, tiles skipping only exp's zeros",
            "np.exp over n**2",
            t_cv / t_exp,
            f"{t_cv:.2f} s",
        )
    )
    chosen = np.asarray(fits["auto"].bandwidth_, dtype=np.float64)  # per feature
    X, y = make_cube(m, seed=8)
    Q = make_cube(m, seed=9)[0]
    for factor in (0.25, 0.5, 1.0):
        h = factor * chosen
        tiles = NadarayaWatsonRegressor(bandwidth=h, algorithm="tiles").fit(X, y)
        dense = NadarayaWatsonRegressor(bandwidth=h, algorithm="brute").fit(X, y)
        t_tiles, got = timed(lambda e=tiles: e.predict(Q))
        t_dense, ref = timed(lambda e=dense: e.predict(Q))
        rows.append(
            (
                f"tiles predict 3-D, n=m={m}, h={factor}x chosen",
                "dense predict",
                t_tiles / t_dense,
                f"{t_tiles:.2f} s; max |diff| {np.max(np.abs(got - ref)):.1e}",
            )
        )
        # Standard errors: the kernel and its square, each over the tiles.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # queries of undefined error
            t_tiles, got = timed(lambda e=tiles: e.standard_error(Q))
            t_dense, ref = timed(lambda e=dense: e.standard_error(Q))
        rel = np.nanmax(np.abs(got - ref) / np.abs(ref))
        rows.append(
            (
                f"tiles standard_error 3-D, n=m={m}, h={factor}x chosen",
                "dense standard_error",
                t_tiles / t_dense,
                f"{t_tiles:.2f} s; max relative diff {rel:.1e}",
            )
        )
    return rows


def grid_search_rows(sizes):
    """Best of three runs of each (the first run of a process pays one-time
    costs, such as imports, that neither side repeats)."""
    rows = []
    for n in sizes:
        X, y = make_data(n, seed=5)
        cv = NadarayaWatsonRegressorCV().fit(X, y)
        t_loo = best_time(lambda X=X, y=y: NadarayaWatsonRegressorCV().fit(X, y))
        grid = list(cv.cv_results_["param_bandwidth"])
        search = GridSearchCV(
            NadarayaWatsonRegressor(),
            {"bandwidth": grid},
            cv=5,
            scoring="neg_mean_squared_error",
        )
        t_grid = best_time(lambda X=X, y=y, s=search: s.fit(X, y))
        rows.append(
            (
                f"GridSearchCV(cv=5) 1-D, n={n}",
                "exact leave-one-out",
                t_grid / t_loo,
                f"{t_loo:.2f} s vs {t_grid:.2f} s (goal >= 5)",
            )
        )
    return rows


R_SCRIPT = """
suppressMessages(library(KernSmooth))
d <- read.csv(commandArgs(TRUE)[1])
one <- function() {
  h <- dpill(d$x, d$y)
  fit <- locpoly(d$x, d$y, bandwidth = h, degree = 1)
  h
}
h <- one()
# Repetitions that take at least 0.2 s (the clock counts milliseconds), then
# the best of seven such blocks, per run.
reps <- 1
repeat {
  if (system.time(for (j in 1:reps) one())[["elapsed"]] >= 0.2) break
  reps <- reps * 2
}
elapsed <- Inf
for (i in 1:7) {
  t <- system.time(for (j in 1:reps) one())[["elapsed"]] / reps
  elapsed <- min(elapsed, t)
}
cat(h, elapsed, "\\n")
"""


#: Turns of R's runs and ours in the R rows (the best of each kept).
R_ROUNDS = 3


def small_rows(sizes):
    """Searches in two and three features at a few thousand points: the
    default search against the dense passes only, and local linear against
    Nadaraya--Watson, best of two runs of each."""
    rows = []
    for n in sizes:
        for d in (2, 3):
            X, y = make_cube(n, seed=5)
            X = X[:, :d]
            times = {}
            for algorithm in ("auto", "brute"):
                search = NadarayaWatsonRegressorCV(algorithm=algorithm)
                times[algorithm] = best_time(
                    lambda s=search, X=X, y=y: s.fit(X, y), repeat=2
                )
            rows.append(
                (
                    f"NW-CV {d}-D, n={n}",
                    "algorithm='brute'",
                    times["auto"] / times["brute"],
                    f"{times['auto']:.2f} s vs {times['brute']:.2f} s",
                )
            )
        X, y = make_cube(n, seed=5)
        t_ll = best_time(lambda X=X, y=y: LocalLinearRegressorCV().fit(X, y), repeat=2)
        t_nw = best_time(
            lambda X=X, y=y: NadarayaWatsonRegressorCV().fit(X, y), repeat=2
        )
        rows.append(
            (
                f"LocalLinearCV 3-D, n={n}",
                "NW-CV on the same data",
                t_ll / t_nw,
                f"{t_ll:.2f} s vs {t_nw:.2f} s",
            )
        )
    return rows


def r_rows(sizes, normal_sizes=()):
    """dpill + locpoly against LocalLinearRegressorCV + predict (when R and
    KernSmooth are installed), the best of seven runs of each, taken in turn
    :data:`R_ROUNDS` times: on uniform inputs at ``sizes``, on normal ones
    at ``normal_sizes``."""
    rscript = shutil.which("Rscript")
    if rscript is None:
        return [("R KernSmooth", "-", float("nan"), "Rscript not installed: skipped")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "dpill.R")
        with open(script, "w") as f:
            f.write(R_SCRIPT)
        kinds = [(n, "uniform", make_data) for n in sizes]
        kinds += [(n, "normal", make_normal_data) for n in normal_sizes]
        for n, kind, make in kinds:
            X, y = make(n, seed=6)
            data = os.path.join(tmp, "data.csv")
            np.savetxt(
                data,
                np.column_stack([X[:, 0], y]),
                delimiter=",",
                header="x,y",
                comments="",
            )
            grid = np.linspace(0.0, 1.0, 401)[:, None]

            def fit_predict(X=X, y=y, grid=grid):
                est = LocalLinearRegressorCV().fit(X, y)
                est.predict(grid)
                return est

            cv = fit_predict()  # and a warm-up, as R's best of seven
            t_r = t_ours = float("inf")
            for _ in range(R_ROUNDS):  # in turn: the same drift for both
                try:
                    out = subprocess.run(
                        [rscript, script, data],
                        capture_output=True,
                        text=True,
                        check=True,
                        timeout=600,
                    )
                except (subprocess.SubprocessError, OSError) as exc:
                    rows.append(("R KernSmooth", "-", float("nan"), f"failed: {exc}"))
                    return rows
                h_r, t = map(float, out.stdout.split())
                t_r = min(t_r, t)
                t_ours = min(t_ours, best_time(fit_predict, repeat=7))
            # Leave-one-out MSE of R's bandwidth, scored by the same criterion.
            theirs = LocalLinearRegressorCV(bandwidths=[h_r]).fit(X, y).best_score_
            ours = LocalLinearRegressorCV(bandwidths=[cv.bandwidth_]).fit(X, y)
            ratio = -ours.best_score_ / -theirs
            rows.append(
                (
                    f"LocalLinearCV+predict vs dpill+locpoly, {kind}, n={n}",
                    "dpill + locpoly",
                    t_ours / max(t_r, 1e-3),
                    f"{t_ours * 1e3:.1f} ms / {t_r * 1e3:.1f} ms; LOO MSE ours/R "
                    f"{ratio:.4f} (goals: time <= 20, MSE <= 1)",
                )
            )
    return rows


ROW_GROUPS = (
    "nw-cv",
    "ll-predict",
    "ll-cv",
    "binned-cv",
    "grid-search",
    "3d",
    "small",
    "r",
)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument(
        "--only",
        choices=ROW_GROUPS,
        action="append",
        help="run only these groups of rows (repeatable; default: all)",
    )
    args = parser.parse_args()
    quick = args.quick
    only = set(args.only or ROW_GROUPS)
    table = []
    with threadpool_limits(1):
        if "nw-cv" in only:
            table += cv_rows(
                NadarayaWatsonRegressorCV, "NW-CV", 20_000 if quick else 100_000, 1, 60
            )
        if "ll-predict" in only:
            table += local_linear_rows(20_000 if quick else 200_000)
        if "ll-cv" in only:
            table += cv_rows(
                LocalLinearRegressorCV,
                "LocalLinearCV",
                10_000 if quick else 50_000,
                4,
                100,
            )
        if "binned-cv" in only:
            table += binned_cv_rows(50_000 if quick else 200_000)
        if "grid-search" in only:
            table += grid_search_rows([2000] if quick else [2000, 5000, 20_000])
        if "3d" in only:
            table += several_feature_rows(
                5000 if quick else 20_000, 10_000 if quick else 50_000
            )
        if "small" in only:
            table += small_rows([2000] if quick else [2000, 5000])
        if "r" in only:
            table += r_rows(
                [2000] if quick else [2000, 20_000, 100_000],
                [2000] if quick else [2000, 20_000],
            )
    print_table(table)


if __name__ == "__main__":
    main()
