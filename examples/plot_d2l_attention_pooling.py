"""
===============================
Attention pooling by similarity
===============================

The Dive into Deep Learning chapter "Attention Pooling by Similarity" presents
Nadaraya--Watson regression as the simplest attention mechanism: a *query*
(where we predict) is compared with every *key* (a training input); a kernel
of their distance gives each key a weight, the weights are normalised to sum to
one, and the estimate is the weighted average of the *values* (the training
targets).

This example reproduces the chapter with :class:`~sknw.NadarayaWatsonRegressor`
and the chapter's data, :func:`~sknw.datasets.make_d2l_sine`: 40 noisy samples
of :math:`2 \\sin(x) + x` on :math:`[0, 5)`, and 50 noise-free validation points.
"""

# %%
# The data
# --------
import matplotlib.pyplot as plt
import numpy as np

from sknw import NadarayaWatsonRegressor
from sknw.datasets import d2l_target, make_d2l_sine
from sknw.kernels import get_kernel

X_train, y_train, X_val, y_val = make_d2l_sine(random_state=0)
print(X_train.shape, y_train.shape, X_val.shape, y_val.shape)

# %%
# Four kernels at bandwidth 1
# ---------------------------
# The chapter compares four kernels of the distance :math:`d = |x - q|`:
# Gaussian :math:`\exp(-d^2/2)`, boxcar (1 when :math:`d < 1`), constant, and
# :math:`\max(0, 1 - d)`, which the chapter calls "Epanechikov" and which is the
# triangular kernel (the Epanechnikov kernel is :math:`1 - d^2`). With
# ``bandwidth=1.0`` the scaled distance ``u = d / h`` is the distance itself,
# as in the chapter.
kernels = ["gaussian", "boxcar", "constant", "triangular"]
models = {k: NadarayaWatsonRegressor(kernel=k, bandwidth=1.0) for k in kernels}
for model in models.values():
    model.fit(X_train, y_train)


def plot_estimates(models, title):
    """Estimates of each model against the true function and the data."""
    fig, axes = plt.subplots(
        1, len(models), figsize=(12, 3), sharey=True, layout="constrained"
    )
    for ax, (name, model) in zip(axes, models.items(), strict=True):
        ax.plot(X_val[:, 0], y_val, "k--", lw=1, label="true function")
        ax.plot(X_val[:, 0], model.predict(X_val), lw=2, label="estimate")
        ax.plot(X_train[:, 0], y_train, "o", ms=3, alpha=0.6, label="training data")
        ax.set_title(name)
        ax.set_xlabel("x")
    axes[0].set_ylabel("y")
    axes[0].legend(loc="upper left", fontsize=8)
    fig.suptitle(title)


plot_estimates(models, "Nadaraya-Watson estimates, bandwidth 1")

# %%
# The constant kernel weighs every key equally: its estimate is the mean of the
# targets, a horizontal line. The other three follow the function; the boxcar
# estimate is a step function, since keys enter and leave its window abruptly.
#
# The attention weights
# ---------------------
# :meth:`~sknw.NadarayaWatsonRegressor.attention_weights` returns the matrix of
# normalised weights, one row per query and one column per key (the training
# points, here sorted by their input). Each row sums to one and the estimate at
# a query is its row times the vector of training targets.


def plot_attention(models, title):
    """Heat maps of the attention weights, queries by keys."""
    fig, axes = plt.subplots(
        1, len(models), figsize=(12, 3.2), sharey=True, layout="constrained"
    )
    for ax, (name, model) in zip(axes, models.items(), strict=True):
        weights = model.attention_weights(X_val)
        image = ax.imshow(weights, cmap="Reds", aspect="auto", vmin=0)
        ax.set_title(name)
        ax.set_xlabel("training point (key)")
        fig.colorbar(image, ax=ax, shrink=0.8)
    axes[0].set_ylabel("validation point (query)")
    fig.suptitle(title)


plot_attention(models, "Attention weights, bandwidth 1")

weights = models["gaussian"].attention_weights(X_val)
print("rows sum to one:", np.allclose(weights.sum(axis=1), 1.0))
print(
    "estimate = weights @ targets:",
    np.allclose(weights @ y_train, models["gaussian"].predict(X_val)),
)

# %%
# The weights of the Gaussian, boxcar and triangular kernels concentrate along
# the diagonal: a query attends to the keys near it. The constant kernel's
# weights are uniform, 1/40 everywhere.
#
# The bandwidth matters more than the kernel
# ------------------------------------------
# Now the Gaussian kernel at widths 0.1, 0.2, 0.5 and 1.
widths = [0.1, 0.2, 0.5, 1.0]
gaussians = {
    f"gaussian, h={h}": NadarayaWatsonRegressor(bandwidth=h).fit(X_train, y_train)
    for h in widths
}
plot_estimates(gaussians, "Gaussian kernel at four bandwidths")
plot_attention(gaussians, "Attention weights of the Gaussian kernel")

# %%
# A narrow kernel attends to one or two keys and follows the noise; a wide one
# averages many and flattens the curve.
#
# Validation error
# ----------------
# The mean squared error at the validation points, against the noise-free
# targets. The last rows are Scott's rule and the default model, whose
# bandwidth comes from leave-one-out cross-validation at fit.
scott = NadarayaWatsonRegressor(bandwidth="scott").fit(X_train, y_train)
default = NadarayaWatsonRegressor().fit(X_train, y_train)
rows = [(name, 1.0, model) for name, model in models.items()]
rows += [
    ("gaussian", h, model) for h, model in zip(widths, gaussians.values(), strict=True)
]
rows += [("gaussian (Scott's rule)", float(scott.bandwidth_[0]), scott)]
rows += [("gaussian (default)", float(default.bandwidth_[0]), default)]
print(f"{'kernel':<24}{'bandwidth':>10}{'validation MSE':>16}")
for name, bandwidth, model in rows:
    mse = np.mean((model.predict(X_val) - y_val) ** 2)
    print(f"{name:<24}{bandwidth:>10.3f}{mse:>16.3f}")

# %%
# Kernel or bandwidth?
# --------------------
# At the same ``bandwidth=1`` the kernels differ in width as well as in shape:
# the Gaussian's standard deviation is :math:`h`, the triangular kernel's only
# :math:`h / \sqrt{6} \approx 0.41 h`. Bandwidths of two kernels smooth alike
# when they are in the ratio of the kernels'
# :attr:`~sknw.kernels.Kernel.canonical_scale`. Below, each kernel gets the
# bandwidth that matches a Gaussian of width 0.5, and the errors are averaged
# over 100 draws of the training data. With matched widths the smooth kernels
# (Gaussian, triangular, Epanechnikov) give nearly the same error and the boxcar,
# whose estimates are step functions, a somewhat larger one; the Gaussian's
# error more than doubles between its best width and the worst.
gaussian_scale = get_kernel("gaussian").canonical_scale
candidates = [
    (k, 0.5 * get_kernel(k).canonical_scale / gaussian_scale)
    for k in ["gaussian", "boxcar", "triangular", "epanechnikov"]
]
candidates += [("gaussian", h) for h in widths]
errors = np.zeros((100, len(candidates)))
for seed in range(100):
    X, y, _, _ = make_d2l_sine(random_state=1000 + seed)
    for j, (kernel, bandwidth) in enumerate(candidates):
        model = NadarayaWatsonRegressor(kernel=kernel, bandwidth=bandwidth)
        errors[seed, j] = np.mean((model.fit(X, y).predict(X_val) - y_val) ** 2)
print(f"{'kernel':<14}{'bandwidth':>10}{'mean MSE':>10}{'std. error':>12}")
for (kernel, bandwidth), column in zip(candidates, errors.T, strict=True):
    se = column.std(ddof=1) / np.sqrt(len(column))
    print(f"{kernel:<14}{bandwidth:>10.3f}{column.mean():>10.3f}{se:>12.3f}")

# %%
# The true function, for reference, is :func:`~sknw.datasets.d2l_target`:
print(np.allclose(d2l_target(X_val[:, 0]), y_val))

plt.show()
