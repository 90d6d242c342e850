"""
========================================
Per-feature bandwidths and other metrics
========================================

A single bandwidth treats every direction alike. When the features have
different scales, or are correlated, the kernel's window should follow the
shape of the data. Four ways to set the window in two dimensions:

* the euclidean distance with one scalar bandwidth;
* the euclidean distance with one bandwidth per feature (the default rules of
  thumb give this), that is, the features divided by their bandwidths;
* the Mahalanobis distance, whose default inverse covariance ``VI`` is fitted
  on the training data, with a scalar bandwidth;
* the Minkowski distance with :math:`p = 1` (the cityblock distance) and one
  bandwidth per feature.

Each model chooses its bandwidth by leave-one-out cross-validation with
:class:`~sknw.NadarayaWatsonRegressorCV`.
"""

# %%
# Anisotropic, correlated features
# --------------------------------
# Two latent standard normal variables :math:`t_1, t_2` give the features
# :math:`x_1 = 4 t_1` and :math:`x_2 = 0.4 t_1 + 0.3 t_2`: very different
# scales and a correlation of 0.8. The target
# :math:`\sin(2 t_2) + 0.3 t_1` varies fastest across the direction in which
# the data are correlated.
import matplotlib.pyplot as plt
import numpy as np
from scipy.spatial.distance import cdist

from sknw import NadarayaWatsonRegressorCV

rng = np.random.default_rng(0)


def latent(X):
    """The latent variables of the features."""
    t1 = X[:, 0] / 4
    return t1, (X[:, 1] - 0.4 * t1) / 0.3


def target(X):
    """The noise-free target."""
    t1, t2 = latent(X)
    return np.sin(2 * t2) + 0.3 * t1


def sample(n):
    """Features and noise-free targets of ``n`` points."""
    t = rng.normal(size=(n, 2))
    X = np.column_stack([4 * t[:, 0], 0.4 * t[:, 0] + 0.3 * t[:, 1]])
    return X, target(X)


X, y_true = sample(400)
y = y_true + rng.normal(scale=0.3, size=len(y_true))
X_test, y_test = sample(2000)
print("standard deviations:", X.std(axis=0).round(2))
print("correlation:", np.corrcoef(X.T)[0, 1].round(2))

# %%
# Four models
# -----------
# The scalar bandwidth gets a grid of its own (a list of floats); the other
# models search the default grid: 30 multiples of their Scott-rule bandwidth,
# which is per feature for coordinate metrics (euclidean, minkowski, ...) and
# a scalar for the Mahalanobis distance, which standardises the features
# itself.
models = {
    "euclidean, scalar bandwidth": NadarayaWatsonRegressorCV(
        bandwidths=list(np.geomspace(0.01, 5.0, 40))
    ),
    "euclidean, per-feature bandwidth": NadarayaWatsonRegressorCV(),
    "mahalanobis": NadarayaWatsonRegressorCV(metric="mahalanobis"),
    "minkowski p=1, per-feature bandwidth": NadarayaWatsonRegressorCV(
        metric="minkowski", metric_params={"p": 1}
    ),
}
print(f"{'model':<38}{'bandwidth':>18}{'test MSE':>10}")
errors = {}
for name, model in models.items():
    model.fit(X, y)
    errors[name] = np.mean((model.predict(X_test) - y_test) ** 2)
    bandwidth = np.array2string(np.round(model.bandwidth_, 3))
    print(f"{name:<38}{bandwidth:>18}{errors[name]:>10.3f}")

# %%
# The per-feature bandwidths are in the ratio of the features' spreads. The
# Mahalanobis metric's ``VI`` is the inverse of the (ddof=0) covariance matrix of
# the training data:
VI = models["mahalanobis"].metric_params_["VI"]
print(np.allclose(VI, np.linalg.inv(np.cov(X.T, bias=True))))

# %%
# Windows and estimates
# ---------------------
# Each panel shows a model's estimate over the plane and, at three queries, the
# contours :math:`u = 1` and :math:`u = 2` of its scaled distance (where the
# Gaussian weight falls to :math:`e^{-1/2}` and :math:`e^{-2}` of its peak). A
# scalar bandwidth is divided into the distance, :math:`u = d(x, q) / h`; a
# per-feature one divides the features first, :math:`u = d(x / h, q / h)`.
x1, x2 = np.meshgrid(np.linspace(-10, 10, 201), np.linspace(-1.6, 1.6, 161))
grid = np.column_stack([x1.ravel(), x2.ravel()])
queries = np.array([[-4.0, -0.4], [0.0, 0.0], [4.0, 0.4]])


def scaled_distance(model, points, query):
    """``u`` between the points and one query, as the model computes it."""
    h = model.bandwidth_
    if np.ndim(h):
        points, query, h = points / h, query / h, 1.0
    d = cdist(points, query[None, :], model.metric, **model.metric_params_)
    return d[:, 0] / h


fig, axes = plt.subplots(
    2, 3, figsize=(13, 6.5), sharex=True, sharey=True, layout="constrained"
)
panels = [("true function", None)] + list(models.items())
for ax, (name, model) in zip(axes.flat, panels, strict=False):
    values = target(grid) if model is None else model.predict(grid)
    image = ax.pcolormesh(
        x1, x2, values.reshape(x1.shape), cmap="viridis", vmin=-1.8, vmax=1.8
    )
    if model is None:
        ax.scatter(*X.T, s=3, c="w", alpha=0.5)
        ax.set_title(name)
        continue
    for query in queries:
        u = scaled_distance(model, grid, query).reshape(x1.shape)
        ax.contour(x1, x2, u, levels=[1, 2], colors="w", linewidths=[1.5, 0.8])
    ax.plot(*queries.T, "w+", ms=8)
    ax.set_title(f"{name}\ntest MSE {errors[name]:.3f}", fontsize=10)
axes.flat[-1].set_axis_off()
axes[0, 0].set(xlim=(-10, 10), ylim=(-1.6, 1.6))
for ax in axes[:, 0]:
    ax.set_ylabel("$x_2$")
for ax in axes[-1]:
    ax.set_xlabel("$x_1$")
fig.colorbar(image, ax=axes, shrink=0.8, label="y")

# %%
# With a single scalar bandwidth the window must be narrow enough for
# :math:`x_2`, whose spread is eight times smaller, so along :math:`x_1` it holds
# very few points and the estimate is noisy. Per-feature bandwidths stretch the
# window along :math:`x_1` (an ellipse with the euclidean distance, a diamond
# with the cityblock distance); the Mahalanobis distance also tilts it along the
# correlation, so that it extends along the level lines of the target, and
# gives the smallest error.
plt.show()
