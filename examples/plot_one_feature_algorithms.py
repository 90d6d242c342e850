"""
=====================================
Many points in one dimension, quickly
=====================================

With one feature, sknw avoids the cost of one kernel evaluation per pair of
query and training point:

* ``algorithm="fgt"`` (chosen by ``"auto"`` for the Gaussian): the fast Gauss
  transform, Hermite moments of boxes one standard deviation wide, within
  :math:`10^{-12}` of the exact sums;
* ``algorithm="sorted"`` (chosen by ``"auto"`` for kernels that are
  polynomials on their support, such as the Epanechnikov): exact sums from
  sorted points and prefix sums of their moments;
* ``algorithm="binned"`` (on request): the Gaussian by linear binning and an
  FFT convolution, within a set tolerance.

This example fits a noisy curve with a jump on 100 000 points, checks each
fast path against the dense sums (``algorithm="brute"``), and times them as
the training set grows.
"""

# %%
# Estimates on 100 000 points
# ---------------------------
import time

import matplotlib.pyplot as plt
import numpy as np

from sknw import NadarayaWatsonRegressor

rng = np.random.default_rng(0)


def curve(x):
    return np.sin(x) + (x > 6)


n = 100_000
X = rng.uniform(0, 10, size=(n, 1))
y = curve(X[:, 0]) + rng.normal(scale=0.5, size=n)
grid = np.linspace(0, 10, 1000).reshape(-1, 1)

models = {
    "gaussian, auto": NadarayaWatsonRegressor(bandwidth=0.05),
    "epanechnikov, auto": NadarayaWatsonRegressor(
        kernel="epanechnikov", bandwidth=0.12
    ),
    "gaussian, binned": NadarayaWatsonRegressor(bandwidth=0.05, algorithm="binned"),
}
gaussian = NadarayaWatsonRegressor(bandwidth=0.05, algorithm="brute").fit(X, y)
epanechnikov = NadarayaWatsonRegressor(
    kernel="epanechnikov", bandwidth=0.12, algorithm="brute"
).fit(X, y)
dense = {"gaussian": gaussian.predict(grid), "epanechnikov": epanechnikov.predict(grid)}
estimates = {}
for name, model in models.items():
    estimates[name] = model.fit(X, y).predict(grid)
    gap = np.max(np.abs(estimates[name] - dense[name.split(",")[0]]))
    print(f"{name:20} algorithm_={model.algorithm_!r:9} max |diff| to dense {gap:.1e}")

fig, ax = plt.subplots(figsize=(7, 3.5))
ax.plot(X[::100, 0], y[::100], ".", color="0.7", ms=2, label="data (1 in 100)")
ax.plot(grid[:, 0], curve(grid[:, 0]), color="k", lw=1, label="truth")
for name, est in estimates.items():
    ax.plot(grid[:, 0], est, lw=1.2, label=name)
ax.set_xlabel("x")
ax.legend(loc="lower left", fontsize=8, ncol=2)
ax.set_title("n = 100 000")
fig.tight_layout()

# %%
# Time as the training set grows
# ------------------------------
# 1000 queries against ``n`` training points, the bandwidth fixed. The dense
# sums grow with ``n``. The fast Gauss transform and the sorted sums pay
# ``O(n)`` once at fit time, and a prediction then costs about the same for any
# ``n``; the binned sums bin the training points and convolve them at each
# prediction, at a cost set mostly by the grid. (Times measured when this page
# was built, on one machine: their ratios are what matters.)
sizes = [1000, 3000, 10_000, 30_000, 100_000]
queries = rng.uniform(0, 10, size=(1000, 1))
settings = {
    "gaussian, brute": {"bandwidth": 0.05, "algorithm": "brute"},
    "gaussian, fgt": {"bandwidth": 0.05, "algorithm": "fgt"},
    "gaussian, binned": {"bandwidth": 0.05, "algorithm": "binned"},
    "epanechnikov, sorted": {
        "kernel": "epanechnikov",
        "bandwidth": 0.12,
        "algorithm": "sorted",
    },
}
times = {name: [] for name in settings}
for size in sizes:
    for name, params in settings.items():
        model = NadarayaWatsonRegressor(**params).fit(X[:size], y[:size])
        start = time.perf_counter()
        model.predict(queries)
        times[name].append(time.perf_counter() - start)

fig, ax = plt.subplots(figsize=(6, 3.5))
for name, t in times.items():
    ax.loglog(sizes, t, "o-", label=name)
ax.set_xlabel("training points n")
ax.set_ylabel("predict time for 1000 queries (s)")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()
