"""
===============================================
Pipelines and grid search over kernel and width
===============================================

The estimators are ordinary scikit-learn estimators: they go in a
:class:`~sklearn.pipeline.Pipeline` and
:class:`~sklearn.model_selection.GridSearchCV` searches over the kernel and the
bandwidth like over any other hyper-parameter. On the diabetes data (442
patients, 10 features), this example runs such a search, shows its results as
a :class:`pandas.DataFrame`, and compares it with
:class:`~sknw.NadarayaWatsonRegressorCV`, which scores the same grid in one pass
per fold.
"""

# %%
# Grid search in a pipeline
# -------------------------
# The features have different units, so they are standardised first; a scalar
# bandwidth is then in units of standard deviations. Compact kernels at the
# smallest bandwidths leave the windows of some test points empty: those get
# the target of their nearest training point (``empty_window="nearest"``) with
# an :class:`~sknw.exceptions.EmptyWindowWarning`, silenced here.
import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.datasets import load_diabetes
from sklearn.model_selection import GridSearchCV, KFold, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sknw import NadarayaWatsonRegressor, NadarayaWatsonRegressorCV
from sknw.exceptions import EmptyWindowWarning

X, y = load_diabetes(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=0.25, random_state=0
)

kernels = ["gaussian", "epanechnikov", "triangular", "laplacian"]
bandwidths = np.geomspace(0.25, 8.0, 11)
folds = KFold(n_splits=5, shuffle=True, random_state=0)

pipeline = make_pipeline(StandardScaler(), NadarayaWatsonRegressor())
param_grid = {
    "nadarayawatsonregressor__kernel": kernels,
    "nadarayawatsonregressor__bandwidth": bandwidths,
}
search = GridSearchCV(pipeline, param_grid, cv=folds)  # scored by R^2
start = time.perf_counter()
with warnings.catch_warnings():
    warnings.simplefilter("ignore", EmptyWindowWarning)
    search.fit(X_train, y_train)
t_grid = time.perf_counter() - start
print(f"{len(search.cv_results_['params'])} candidates x 5 folds in {t_grid:.2f} s")
best = search.best_params_
print("best kernel:", best["nadarayawatsonregressor__kernel"])
print(f"best bandwidth: {best['nadarayawatsonregressor__bandwidth']:.3f}")
print(f"cross-validated R^2: {search.best_score_:.3f}")
print(f"test R^2: {search.score(X_test, y_test):.3f}")

# %%
# The mean cross-validated :math:`R^2` of every candidate:
results = pd.DataFrame(search.cv_results_).rename(
    columns={
        "param_nadarayawatsonregressor__kernel": "kernel",
        "param_nadarayawatsonregressor__bandwidth": "bandwidth",
    }
)
results["bandwidth"] = results["bandwidth"].astype(float).round(2)
table = results.pivot_table(
    index="kernel", columns="bandwidth", values="mean_test_score"
)
table.round(3)

# %%
fig, ax = plt.subplots(figsize=(7, 4), layout="constrained")
for kernel, group in results.groupby("kernel"):
    ax.errorbar(
        group["bandwidth"],
        group["mean_test_score"],
        yerr=group["std_test_score"],
        marker="o",
        ms=4,
        capsize=2,
        label=kernel,
    )
ax.set_xscale("log")
ax.set_xticks(bandwidths, labels=[f"{b:.2g}" for b in bandwidths])
ax.minorticks_off()
ax.set_xlabel("bandwidth (standardised units)")
ax.set_ylabel("5-fold $R^2$ (mean and std over folds)")
ax.set_ylim(bottom=-0.2)
ax.legend()

# %%
# Each kernel has its own best bandwidth: the Laplacian kernel, with its heavier
# tails, wants a smaller one; the compact kernels need a larger one, since at
# small bandwidths many windows hold few points or none.
#
# The same grid with NadarayaWatsonRegressorCV
# --------------------------------------------
# :class:`~sknw.NadarayaWatsonRegressorCV` takes the kernels and bandwidths as
# lists and a ``cv`` splitter; for each fold it computes the distances once and
# evaluates every candidate on them. On the same standardised data and folds
# its scores equal those of :class:`~sklearn.model_selection.GridSearchCV`. (In
# the pipeline above the scaler is refitted on each training fold, so its
# scores differ slightly; here both searches see data standardised once.)
scaled = StandardScaler().fit_transform(X_train)
start = time.perf_counter()
fast = NadarayaWatsonRegressorCV(
    kernels=kernels, bandwidths=list(bandwidths), cv=folds, scoring="r2"
).fit(scaled, y_train)
t_fast = time.perf_counter() - start
start = time.perf_counter()
with warnings.catch_warnings():
    warnings.simplefilter("ignore", EmptyWindowWarning)
    slow = GridSearchCV(
        NadarayaWatsonRegressor(),
        {"kernel": kernels, "bandwidth": bandwidths},
        cv=folds,
    ).fit(scaled, y_train)
t_slow = time.perf_counter() - start


def scores(cv_results):
    """Mean test scores indexed by (kernel, bandwidth)."""
    index = pd.MultiIndex.from_arrays(
        [
            [str(k) for k in cv_results["param_kernel"]],
            np.round(np.array(cv_results["param_bandwidth"], dtype=float), 6),
        ],
        names=["kernel", "bandwidth"],
    )
    return pd.Series(cv_results["mean_test_score"], index=index).sort_index()


difference = (scores(fast.cv_results_) - scores(slow.cv_results_)).abs().max()
print(f"largest difference of the scores: {difference:.1e}")
print(f"NadarayaWatsonRegressorCV: {t_fast:.2f} s, GridSearchCV: {t_slow:.2f} s")

# %%
# ``cv_results_["n_empty_windows"]`` counts the held-out points whose window was
# empty, for each candidate (summed over the folds):
empty = pd.DataFrame(
    {
        "kernel": [str(k) for k in fast.cv_results_["param_kernel"]],
        "bandwidth": np.array(fast.cv_results_["param_bandwidth"], dtype=float),
        "empty windows": fast.cv_results_["n_empty_windows"],
    }
)
empty["bandwidth"] = empty["bandwidth"].round(2)
empty.pivot_table(
    index="kernel", columns="bandwidth", values="empty windows", aggfunc="sum"
)

# %%
# Leave-one-out, with per-feature bandwidths
# ------------------------------------------
# Without a ``cv`` the search is exact leave-one-out, and without a bandwidth
# grid it tries 30 multiples of each kernel's Scott-rule bandwidth, one per
# feature. In a pipeline it is refitted with the best candidate:
model = make_pipeline(StandardScaler(), NadarayaWatsonRegressorCV(kernels=kernels))
model.fit(X_train, y_train)
selected = model[-1]
print("selected kernel:", selected.kernel_)
print("bandwidth per feature:", selected.bandwidth_.round(3))
print(f"test R^2: {model.score(X_test, y_test):.3f}")

plt.show()
