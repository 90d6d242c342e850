"""
===================================
Marginal effects: Engel's food data
===================================

Engel's data (1857; 235 Belgian working-class households, shipped with
statsmodels as ``statsmodels.datasets.engel``) relate household income to
food expenditure. Engel's law says that the share of income spent on food
falls as income rises: the *marginal propensity* to spend on food, the
derivative of food expenditure in income, is below the average propensity
and may itself fall with income.

``gradient`` gives that derivative at any income: the slope of the local
fit for :class:`~sknw.LocalLinearRegressor`, the derivative of the local
quadratic for :class:`~sknw.LocalPolynomialRegressor`, and the analytic
derivative of the local-constant estimate for
:class:`~sknw.NadarayaWatsonRegressor`. The local linear slopes are the
marginal effects statsmodels' ``KernelReg(reg_type="ll")`` reports; they are
compared below.
"""

# %%
# The data and three fits
# -----------------------
# Incomes are skewed (a few households earn five times the median), so the
# fits are on the log of income; every estimator chooses its bandwidth by
# leave-one-out cross-validation (the default ``bandwidth="cv"``).
import warnings

import matplotlib.pyplot as plt
import numpy as np
from statsmodels.datasets import engel
from statsmodels.nonparametric.kernel_regression import KernelReg

from sknw import LocalLinearRegressor, LocalPolynomialRegressor, NadarayaWatsonRegressor

data = engel.load_pandas().data
X = np.log(data[["income"]].to_numpy())
y = data["foodexp"].to_numpy()

models = {
    "local constant": NadarayaWatsonRegressor(),
    "local linear": LocalLinearRegressor(),
    "local quadratic": LocalPolynomialRegressor(degree=2),
}
for name, model in models.items():
    model.fit(X, y)
    print(f"{name:16s} bandwidth {model.bandwidth_[0]:.3f} (log income)")

# %%
# Marginal propensities
# ---------------------
# The derivative in log income, divided by income, is the derivative in
# income (the chain rule): the marginal propensity to spend on food.
grid = np.linspace(X.min(), X.max(), 200).reshape(-1, 1)
income = np.exp(grid[:, 0])
propensity = {
    name: model.gradient(grid)[:, 0] / income for name, model in models.items()
}
ols_slope = np.polyfit(data["income"], y, 1)[0]

fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
left.scatter(data["income"], y, s=8, color="0.6", label="households")
for name, model in models.items():
    left.plot(income, model.predict(grid), label=name)
left.set(xscale="log", xlabel="income", ylabel="food expenditure")
left.legend()
for name, values in propensity.items():
    right.plot(income, values, label=name)
right.axhline(ols_slope, color="0.3", linestyle=":", label="linear least squares")
right.set(xscale="log", xlabel="income", ylabel="marginal propensity to spend on food")
right.legend()
fig.tight_layout()

# %%
# The local linear and local quadratic propensities fall with income, from
# 0.6 to 0.9 among the poorer households to 0.2 to 0.3 among the richest:
# Engel's law at the margin, which the single slope of the straight line
# hides. Cross-validation gives the local quadratic a wide
# bandwidth (close to one quadratic in log income), hence its smooth curve.
# The local-constant derivative wiggles: its chosen bandwidth is small, and
# the derivative of a local average follows every bump of it; at the top,
# where the window holds the last points only, it flattens to 0, the
# boundary bias of the local-constant estimate.
inner = (income > np.quantile(data["income"], 0.1)) & (
    income < np.quantile(data["income"], 0.9)
)
for name, values in propensity.items():
    lo, hi = values[inner].min(), values[inner].max()
    print(f"{name:16s} propensity between the deciles: {lo:.2f} to {hi:.2f}")

# %%
# The same marginal effects as statsmodels
# ----------------------------------------
# statsmodels' local linear ``KernelReg`` at the same bandwidth gives the
# same slopes (its fit returns the marginal effects with the estimate).
ll = models["local linear"]
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # statsmodels' own deprecation notices
    kr = KernelReg(y, X, var_type="c", reg_type="ll", bw=ll.bandwidth_)
    mean, effects = kr.fit(grid)
gap = np.max(np.abs(effects[:, 0] - ll.gradient(grid)[:, 0]))
print(f"largest difference from statsmodels' marginal effects: {gap:.1e}")
