"""
=====================================
Classification: kernel-weighted votes
=====================================

:class:`~sknw.NadarayaWatsonClassifier` estimates the probability of each class
at a query as the kernel-weighted frequency of that class among the training
points: the Nadaraya--Watson regression of the one-hot encoded labels. This
example compares it with :class:`~sklearn.neighbors.KNeighborsClassifier` on
two interleaving half-moons.
"""

# %%
# Data and models
# ---------------
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_moons
from sklearn.metrics import accuracy_score, log_loss
from sklearn.model_selection import train_test_split
from sklearn.neighbors import KNeighborsClassifier

from sknw import NadarayaWatsonClassifier, NadarayaWatsonClassifierCV

X, y = make_moons(n_samples=400, noise=0.3, random_state=0)
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=0.5, random_state=0, stratify=y
)

models = {
    "Nadaraya-Watson, Scott's rule": NadarayaWatsonClassifier(bandwidth="scott"),
    "Nadaraya-Watson, leave-one-out": NadarayaWatsonClassifierCV(
        kernels=["gaussian", "epanechnikov"]
    ),
    "15 nearest neighbours": KNeighborsClassifier(n_neighbors=15),
}
for model in models.values():
    model.fit(X_train, y_train)

cv = models["Nadaraya-Watson, leave-one-out"]
print("Scott's rule bandwidth:", models["Nadaraya-Watson, Scott's rule"].bandwidth_)
print("selected by leave-one-out log-loss:", cv.kernel_, cv.bandwidth_)

# %%
# Test-set accuracy and log-loss. The default score of the search is the
# leave-one-out log-loss, so it picks the bandwidth whose probabilities are
# best calibrated, not only the one with the fewest errors.
print(f"{'model':<32}{'accuracy':>10}{'log-loss':>10}")
for name, model in models.items():
    proba = model.predict_proba(X_test)
    accuracy = accuracy_score(y_test, model.predict(X_test))
    print(f"{name:<32}{accuracy:>10.3f}{log_loss(y_test, proba):>10.3f}")

# %%
# Decision regions
# ----------------
# The probability of class 1 over the plane; the black line is the decision
# boundary (probability 1/2), the points are the test set.
xx, yy = np.meshgrid(np.linspace(-2.0, 3.0, 251), np.linspace(-1.5, 2.0, 176))
grid = np.column_stack([xx.ravel(), yy.ravel()])
fig, axes = plt.subplots(1, 3, figsize=(13, 4), sharey=True, layout="constrained")
for ax, (name, model) in zip(axes, models.items(), strict=True):
    proba = model.predict_proba(grid)[:, 1].reshape(xx.shape)
    image = ax.contourf(xx, yy, proba, levels=np.linspace(0, 1, 11), cmap="RdBu_r")
    ax.contour(xx, yy, proba, levels=[0.5], colors="k", linewidths=1.5)
    ax.scatter(*X_test.T, c=y_test, cmap="RdBu_r", s=12, edgecolor="k", lw=0.4)
    ax.set_title(name)
    ax.set_xlabel("$x_1$")
axes[0].set_ylabel("$x_2$")
fig.colorbar(image, ax=axes, label="P(class 1)", shrink=0.9)

# %%
# The Nadaraya--Watson probabilities vary smoothly; those of the nearest
# neighbours are multiples of 1/15 that jump where the set of neighbours
# changes. Far from the data the Gaussian weights are dominated by the nearest
# training points, so the probabilities there tend to the class of the nearest
# points rather than to 1/2.
#
# Along a line
# ------------
# The probability of class 1 along :math:`x_2 = 0.25`:
line = np.column_stack([np.linspace(-2.0, 3.0, 501), np.full(501, 0.25)])
fig, ax = plt.subplots(figsize=(7, 3.3), layout="constrained")
for name, model in models.items():
    ax.plot(line[:, 0], model.predict_proba(line)[:, 1], label=name)
ax.axhline(0.5, color="k", lw=0.5)
ax.set_xlabel("$x_1$ (at $x_2 = 0.25$)")
ax.set_ylabel("P(class 1)")
ax.legend(fontsize=8)
plt.show()
