"""
=========================================
LOWESS: nearest-neighbour spans, outliers
=========================================

LOWESS (Cleveland, 1979) is a local linear fit with two twists: the window
at each point holds a fixed share of the data (the *span*), so it widens
where the design is sparse, and *robustness iterations* refit with the
points of large residuals down-weighted. In sknw these are the ``span`` and
``robust_iterations`` parameters of every regressor; with the tricube
kernel, :class:`~sknw.LocalLinearRegressor` is LOWESS, and equals
statsmodels' ``lowess``.

The data below have a design whose density falls a hundredfold from left to
right (gamma-distributed inputs) and a few gross outliers.
"""

# %%
# Data
# ----
import matplotlib.pyplot as plt
import numpy as np
from statsmodels.nonparametric.smoothers_lowess import lowess

from sknw import LocalLinearRegressor, LocalLinearRegressorCV

rng = np.random.default_rng(0)
n = 400
x = rng.gamma(2.0, 1.5, n)
truth = np.sin(x) * np.exp(-x / 8)
y = truth + rng.normal(0, 0.15, n)
outliers = rng.choice(n, 15, replace=False)
y[outliers] += rng.choice([-1.0, 1.0], 15) * rng.uniform(1.5, 3.0, 15)
X = x[:, None]
grid = np.linspace(x.min(), np.quantile(x, 0.995), 300)[:, None]

# %%
# LOWESS, and the same fit by statsmodels
# ---------------------------------------
# Three robustness iterations at a span of 0.2 (each window holds 80 points).
# The outliers get weight 0; statsmodels' estimates at the same points agree
# to rounding.
model = LocalLinearRegressor(kernel="tricube", span=0.2, robust_iterations=3)
model.fit(X, y)
reference = lowess(y, x, frac=0.2, it=3, delta=0.0, xvals=grid[:, 0])
gap = np.max(np.abs(model.predict(grid) - reference))
print(f"largest difference from statsmodels: {gap:.1e}")
print(
    f"outliers with weight 0: {np.sum(model.robustness_weights_[outliers] == 0)} of 15"
)

# %%
# Choosing the span, and what robustness buys
# -------------------------------------------
# ``LocalLinearRegressorCV(spans=...)`` scores each span by exact
# leave-one-out. The non-robust fit (``robust_iterations=0``) at the chosen
# span is pulled towards the outliers; the robust one follows the function.
search = LocalLinearRegressorCV(kernels=["tricube"], spans=np.linspace(0.05, 0.6, 12))
search.fit(X, y)
print(f"span chosen by leave-one-out: {search.span_:.2f}")
plain = LocalLinearRegressor(kernel="tricube", span=search.span_).fit(X, y)
robust = LocalLinearRegressor(
    kernel="tricube", span=search.span_, robust_iterations=3
).fit(X, y)
true_grid = np.sin(grid[:, 0]) * np.exp(-grid[:, 0] / 8)
for name, est in (("non-robust", plain), ("robust", robust)):
    error = np.sqrt(np.mean((est.predict(grid) - true_grid) ** 2))
    print(f"{name:10s} RMS error against the true function: {error:.3f}")

fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
weights = robust.robustness_weights_
ax0.scatter(x, y, s=8, c=weights, cmap="viridis", vmin=0, vmax=1)
ax0.plot(grid, true_grid, "k--", lw=1, label="true function")
ax0.plot(grid, plain.predict(grid), label="span, no robustness")
ax0.plot(grid, robust.predict(grid), label="span, 3 robustness iterations")
ax0.set(xlabel="x", ylabel="y", title="points coloured by robustness weight")
ax0.legend(fontsize=8)
ax1.plot(grid, true_grid, "k--", lw=1, label="true function")
ax1.plot(grid, model.predict(grid), lw=3, alpha=0.5, label="sknw, span 0.2, it 3")
ax1.plot(grid, reference, ":", color="C3", label="statsmodels lowess")
ax1.scatter(x, y, s=4, color="0.6")
ax1.set(xlabel="x", title="LOWESS: sknw and statsmodels")
ax1.legend(fontsize=8)
fig.tight_layout()
plt.show()
