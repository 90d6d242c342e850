"""
====================
The built-in kernels
====================

Every built-in kernel of :mod:`sknw.kernels`: its shape, its shape once
normalised to unit mass at its canonical scale, and the fit it gives at its own
Scott-rule bandwidth.
"""

# %%
# Shapes
# ------
# A kernel is a function :math:`K(u)` of the scaled distance
# :math:`u = d(x, q) / h \ge 0`; the estimators normalise the weights over the
# training points, so constant factors of :math:`K` do not matter and the
# kernels are written without them. Here each is drawn as a function of
# :math:`\pm u`. :data:`~sknw.kernels.KERNELS` maps names (and aliases) to the
# classes.
import matplotlib.pyplot as plt
import numpy as np

from sknw import NadarayaWatsonRegressor
from sknw.datasets import make_d2l_sine
from sknw.kernels import KERNELS

kernels = {}
for name, cls in KERNELS.items():
    if cls not in kernels.values():
        kernels[name] = cls
print(f"{len(KERNELS)} names, {len(kernels)} kernels:", ", ".join(kernels))

# One colour and line style per kernel, the same in every figure.
styles = {
    name: {"color": f"C{i % 10}", "ls": "-" if i < 10 else "--"}
    for i, name in enumerate(kernels)
}
compact = [name for name, cls in kernels.items() if cls.support == 1.0]
unbounded = [name for name, cls in kernels.items() if cls.support == np.inf]

fig, axes = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
for ax, names, limit in [(axes[0], compact, 1.5), (axes[1], unbounded, 6.0)]:
    t = np.linspace(-limit, limit, 1201)
    for name in names:
        ax.plot(t, kernels[name]()(np.abs(t)), label=name, **styles[name])
    ax.axhline(0, color="k", lw=0.5)
    ax.set_xlabel("u")
    ax.legend(fontsize=8, ncol=2)
axes[0].set_title("Compact support: K(u) = 0 for u > 1")
axes[0].set_ylabel("K(u)")
axes[1].set_title("Unbounded support")

# %%
# The compact kernels reach zero at :math:`u = 1` (the boxcar jumps there). Among
# the unbounded ones, the Cauchy kernel has heavy tails, the constant kernel
# gives every training point the same weight whatever the distance, and the
# Silverman kernel dips below zero: it is a fourth-order kernel, whose estimates
# are not guaranteed to stay within the range of the targets (and which
# :class:`~sknw.NadarayaWatsonClassifier` refuses).
#
# Canonical scale
# ---------------
# The same bandwidth means different amounts of smoothing for different
# kernels: the boxcar's standard deviation is :math:`h / \sqrt{3}`, the
# Gaussian's :math:`h`. Rescaled to unit mass and stretched by their canonical
# scale :math:`\delta_K = (R(K) / \sigma_K^4)^{1/5}`
# (:attr:`~sknw.kernels.Kernel.canonical_scale`, from the variance
# :math:`\sigma_K^2` and the roughness :math:`R(K)` of the unit-mass kernel),
# the kernels spread over about the same range. Bandwidths in the ratio of the
# canonical scales balance bias and variance alike (Marron and Nolan, 1988):
# that is the sense in which they smooth alike.
# Kernels without a finite variance (constant, Cauchy) or with a zero one
# (Silverman) have no canonical scale.
fig, ax = plt.subplots(figsize=(7, 4), layout="constrained")
t = np.linspace(-3.5, 3.5, 1401)
for name, cls in kernels.items():
    kernel = cls()
    delta = kernel.canonical_scale
    if not np.isfinite(delta):
        continue
    # Unit mass: integrate K on a fine grid of its support.
    grid = np.linspace(0, min(kernel.support, 60.0), 200001)
    mass = 2 * np.trapezoid(kernel(grid), grid)
    density = kernel(np.abs(t) / delta) / (delta * mass)
    ax.plot(t, density, label=name, **styles[name])
ax.set_xlabel("u")
ax.set_ylabel(r"$K(u / \delta_K) \,/\, (\delta_K \int K)$")
ax.set_title("Unit-mass kernels at their canonical scale")
ax.legend(fontsize=8, ncol=2)

# %%
# Fits at matched bandwidths
# --------------------------
# ``bandwidth="scott"`` applies Scott's rule to each feature and multiplies it
# by the ratio of the kernel's canonical scale to the Gaussian's, so every
# kernel smooths about as much. The fits on 100 samples of the Dive into Deep
# Learning data:
X, y, X_val, y_val = make_d2l_sine(n_train=100, random_state=0)
fig, axes = plt.subplots(
    3, 5, figsize=(13, 7.5), sharex=True, sharey=True, layout="constrained"
)
rows = []
for ax, name in zip(axes.flat, kernels, strict=False):
    model = NadarayaWatsonRegressor(kernel=name, bandwidth="scott").fit(X, y)
    pred = model.predict(X_val)
    mse = np.mean((pred - y_val) ** 2)
    rows.append((name, float(model.bandwidth_[0]), mse))
    ax.plot(X[:, 0], y, "o", ms=2, color="0.6")
    ax.plot(X_val[:, 0], y_val, "k--", lw=1)
    ax.plot(X_val[:, 0], pred, lw=2)
    ax.set_title(f"{name}, h = {model.bandwidth_[0]:.2f}", fontsize=9)
axes.flat[-1].set_axis_off()
fig.suptitle("Each kernel at its Scott-rule bandwidth (dashed: true function)")

print(f"{'kernel':<14}{'bandwidth':>10}{'validation MSE':>16}")
for name, bandwidth, mse in rows:
    print(f"{name:<14}{bandwidth:>10.3f}{mse:>16.3f}")

# %%
# The kernels with a canonical scale give nearly the same curve, at bandwidths
# that differ widely (the logistic kernel's is the smallest, the triweight's the
# largest). The constant, Cauchy and Silverman
# kernels keep the Gaussian's bandwidth: the constant kernel gives the mean of
# the targets, the heavy-tailed Cauchy kernel a flatter curve.
plt.show()
