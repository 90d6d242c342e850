"""The data-driven default bandwidth, as ratios measured in one run.

Run ``python benchmarks/bench_default.py`` (``--quick`` for fewer replicates
and smaller sizes; ``--only NAME`` for the quality rows of some functions,
``--replicates R`` for more of them, ``--sizes N ...`` for other sizes,
``--group G`` for some groups of rows). One BLAS thread. Rows:

- quality: on test functions of the smoothing literature, the mean squared
  error against the true function of ``NadarayaWatsonRegressor()`` and
  ``LocalLinearRegressor()`` (``bandwidth="cv"``), of Scott's rule, of the
  plug-in (local linear, one feature) and of statsmodels
  ``KernelReg(bw="cv_ls")`` (at n = 200: its search takes minutes at 2000),
  each relative to the best fixed bandwidth in
  hindsight (the oracle: the best multiple of Scott's rule, with its shape
  across features, over a fine grid), mean over replicates (goals: the
  default within 1.5, aim 1.2, and at most statsmodels' on average);
- cost: the default fit relative to one fixed-bandwidth prediction of the
  training set at n = 2e5 with one feature (goal: at most 20) and n = 2e4
  with five (goal: at most 3);
- classification: the default's accuracy (5-fold) against
  ``NadarayaWatsonClassifierCV`` on data sets shipped with scikit-learn
  (goal: within 0.01) and against the best grid bandwidth on a noisy 2-D toy
  set (goal: within 0.02).
"""

import argparse
import warnings

import numpy as np
from _timing import print_table, timed
from sklearn.datasets import load_breast_cancer, load_iris, load_wine, make_moons
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from sknw import (
    LocalLinearRegressor,
    NadarayaWatsonClassifier,
    NadarayaWatsonClassifierCV,
    NadarayaWatsonRegressor,
)

FUNCTIONS = {
    "sin(2 pi x^3)^3": (lambda X: np.sin(2 * np.pi * X[:, 0] ** 3) ** 3, 1, 0.1),
    "doppler": (
        lambda X: (
            np.sqrt(X[:, 0] * (1 - X[:, 0])) * np.sin(2.1 * np.pi / (X[:, 0] + 0.05))
        ),
        1,
        0.1,
    ),
    "2 sin(5x) + 5x": (lambda X: 2 * np.sin(5 * X[:, 0]) + 5 * X[:, 0], 1, 0.5),
    "2-D sin(2 pi x1) x2": (
        lambda X: np.sin(2 * np.pi * X[:, 0]) * X[:, 1] + X[:, 1],
        2,
        0.2,
    ),
}


def draw(f, d, noise, n, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 1.0, size=(n, d))
    return X, f(X) + noise * rng.normal(size=n)


def statsmodels_cv_ls(X, y, Q, kind):
    from statsmodels.nonparametric.kernel_regression import KernelReg

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reg = KernelReg(y, X, var_type="c" * X.shape[1], reg_type=kind, bw="cv_ls")
        return reg.fit(Q)[0]


def quality_rows(sizes, replicates, statsmodels_max, only=None):
    rows = []
    # Per estimator and size: the default's and statsmodels' mean ratios of
    # each function, for the averages over the functions.
    paired = {}
    for name, (f, d, noise) in FUNCTIONS.items():
        if only is not None and only not in name:
            continue
        Q = draw(f, d, 0.0, 2000, seed=999)[0]
        truth = f(Q)
        for n in sizes:
            for label, make, kind in (
                ("NW", NadarayaWatsonRegressor, "lc"),
                ("LL", LocalLinearRegressor, "ll"),
            ):
                ratios = {"default": [], "scott": [], "plugin": [], "statsmodels": []}
                for r in range(replicates):
                    X, y = draw(f, d, noise, n, seed=100 * n + r)

                    def mse(pred, truth=truth):
                        return float(np.mean((pred - truth) ** 2))

                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        default = make().fit(X, y)
                        # The oracle: the best multiple of Scott's rule (its
                        # shape across features) in hindsight.
                        ref = make(bandwidth="scott").fit(X, y).bandwidth_
                        oracle = min(
                            mse(make(bandwidth=c * ref).fit(X, y).predict(Q))
                            for c in np.geomspace(0.01, 10, 80)
                        )
                        ratios["default"].append(mse(default.predict(Q)) / oracle)
                        scott = make(bandwidth="scott").fit(X, y).predict(Q)
                        ratios["scott"].append(mse(scott) / oracle)
                        if d == 1 and label == "LL":
                            plug = make(bandwidth="plugin").fit(X, y).predict(Q)
                            ratios["plugin"].append(mse(plug) / oracle)
                    if n <= statsmodels_max:
                        sm = statsmodels_cv_ls(X, y, Q, kind)
                        ratios["statsmodels"].append(mse(sm) / oracle)
                notes = ", ".join(
                    f"{k} {np.mean(v):.3f}"
                    for k, v in ratios.items()
                    if v and k != "default"
                )
                if ratios["statsmodels"]:
                    pair = paired.setdefault((label, n), ([], []))
                    pair[0].append(np.mean(ratios["default"]))
                    pair[1].append(np.mean(ratios["statsmodels"]))
                rows.append(
                    (
                        f"{label} default, {name}, n={n}",
                        "oracle MSE",
                        float(np.mean(ratios["default"])),
                        f"{np.mean(ratios['default']):.3f}, s.e. "
                        f"{_standard_error(ratios['default']):.3f} over "
                        f"{replicates}; {notes} (goal <= 1.5, aim 1.2)",
                    )
                )
    for (label, n), (ours, theirs) in paired.items():
        rows.append(
            (
                f"{label} default, mean over {len(ours)} functions, n={n}",
                "oracle MSE",
                float(np.mean(ours)),
                f"{np.mean(ours):.4f}; statsmodels {np.mean(theirs):.4f} "
                "(goal: at most statsmodels')",
            )
        )
    return rows


def _standard_error(values):
    values = np.asarray(values, dtype=float)
    if values.size < 2:
        return float("nan")
    return float(np.std(values, ddof=1) / np.sqrt(values.size))


def cost_rows(n_line, n_five):
    rows = []
    for n, d in ((n_line, 1), (n_five, 5)):
        rng = np.random.default_rng(n)
        X = rng.uniform(0.0, 1.0, size=(n, d))
        y = np.sin(6 * X[:, 0]) + (X[:, 1] if d > 1 else 0) + 0.3 * rng.normal(size=n)
        t_fit, est = timed(lambda X=X, y=y: NadarayaWatsonRegressor().fit(X, y))
        fixed = NadarayaWatsonRegressor(bandwidth=est.bandwidth_).fit(X, y)
        t_pred, _ = timed(lambda X=X, e=fixed: e.predict(X))
        goal = 20 if d == 1 else 3
        sel = est.bandwidth_selection_
        rows.append(
            (
                f"default fit, n={n}, {d} feature(s)",
                "one fixed predict",
                t_fit / t_pred,
                f"{t_fit:.2f} s, {sel['n_samples']} points scored (goal <= {goal})",
            )
        )
    return rows


def classification_rows():
    rows = []
    for name, load in (
        ("iris", load_iris),
        ("wine", load_wine),
        ("breast_cancer", load_breast_cancer),
    ):
        X, y = load(return_X_y=True)
        default = make_pipeline(StandardScaler(), NadarayaWatsonClassifier())
        search = make_pipeline(StandardScaler(), NadarayaWatsonClassifierCV())
        a = cross_val_score(default, X, y, cv=5).mean()
        b = cross_val_score(search, X, y, cv=5).mean()
        note = f"accuracy {a:.3f} vs {b:.3f} (goal |diff| <= 0.01)"
        rows.append(
            (f"classifier default, {name}", "NadarayaWatsonClassifierCV", a - b, note)
        )
    X, y = make_moons(600, noise=0.35, random_state=0)
    a = cross_val_score(NadarayaWatsonClassifier(), X, y, cv=5).mean()
    best = max(
        cross_val_score(NadarayaWatsonClassifier(bandwidth=h), X, y, cv=5).mean()
        for h in np.geomspace(0.02, 2.0, 40)
    )
    rows.append(
        (
            "classifier default, noisy moons",
            "best grid bandwidth",
            a - best,
            f"accuracy {a:.3f} vs {best:.3f} (goal >= -0.02)",
        )
    )
    return rows


GROUPS = ("quality", "cost", "classification")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument(
        "--only", help="the quality rows of the functions whose name holds this"
    )
    parser.add_argument(
        "--replicates", type=int, default=None, help="replicates of the quality rows"
    )
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=None, help="sizes of the quality rows"
    )
    parser.add_argument(
        "--group",
        choices=GROUPS,
        action="append",
        help="run only these groups of rows (repeatable; default: all, or the "
        "quality rows with --only)",
    )
    args = parser.parse_args()
    quick = args.quick
    groups = set(args.group or (("quality",) if args.only is not None else GROUPS))
    table = []
    with threadpool_limits(1):
        sizes = args.sizes or ([200] if quick else [200, 2000])
        replicates = args.replicates or (2 if quick else 5)
        if "quality" in groups:
            table += quality_rows(sizes, replicates, 200, args.only)
        if "cost" in groups:
            table += cost_rows(20_000 if quick else 200_000, 5_000 if quick else 20_000)
        if "classification" in groups:
            table += classification_rows()
    print_table(table)


if __name__ == "__main__":
    main()
