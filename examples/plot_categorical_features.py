"""
================================
Categorical and ordered features
================================

The extramarital-affairs survey of Fair (1978), shipped with statsmodels
(6,366 women, ``statsmodels.datasets.fair``), mixes continuous columns (age,
years married) with ordered ratings (of the marriage, 1 to 5, and of
religiousness, 1 to 4) and an unordered category (occupation, 6 levels).
The task: the probability that a woman reports any affair.

:class:`~sknw.NadarayaWatsonClassifier` takes the discrete columns as they
are, with a kernel of their own each: a pandas categorical is an unordered
feature, an ordered one an ordered feature (``categorical_features=
"from_dtype"``, the default), and the default ``bandwidth="cv"`` chooses the
continuous bandwidths and the smoothing parameters together. It is compared
with two common workarounds, one-hot encoding and the codes used as numbers,
and with statsmodels' ``KernelReg``, which computes the same estimate.
"""

# %%
# The data
# --------
# A random subsample of 1,500 rows keeps the example quick. Occupation is an
# unordered categorical; the two ratings are ordered categoricals.
import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.compose import make_column_transformer
from sklearn.model_selection import KFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from statsmodels.datasets import fair

from sknw import NadarayaWatsonClassifier

data = fair.load_pandas().data.sample(1500, random_state=0)
X = pd.DataFrame(
    {
        "age": data.age,
        "yrs_married": data.yrs_married,
        "rate_marriage": pd.Categorical(data.rate_marriage.astype(int), ordered=True),
        "religious": pd.Categorical(data.religious.astype(int), ordered=True),
        "occupation": pd.Categorical(data.occupation.astype(int)),
    }
)
y = (data.affairs > 0).to_numpy()
print(X.dtypes)
print(f"share with an affair: {y.mean():.3f}")

# %%
# Three ways to give the estimator these columns
# ----------------------------------------------
# The discrete kernels (the default), one-hot encoding of the occupation
# (dense: the estimators take dense input) with standardised numbers, and
# every column as a standardised number. Each is scored by 5-fold
# cross-validation of its log-loss; every fit chooses its own bandwidths.
numbers = X.astype(float)
one_hot = make_pipeline(
    make_column_transformer(
        (OneHotEncoder(sparse_output=False), ["occupation"]),
        remainder=StandardScaler(),
    ),
    NadarayaWatsonClassifier(categorical_features=None),
)
models = {
    "discrete kernels": (NadarayaWatsonClassifier(), X),
    "one-hot occupation": (one_hot, numbers),
    "codes as numbers": (
        make_pipeline(
            StandardScaler(), NadarayaWatsonClassifier(categorical_features=None)
        ),
        numbers,
    ),
}
folds = KFold(5, shuffle=True, random_state=0)
scores = {}
for name, (model, inputs) in models.items():
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loss = -cross_val_score(model, inputs, y, cv=folds, scoring="neg_log_loss")
    scores[name] = loss
    print(
        f"{name:<20} log-loss {loss.mean():.4f} (sd {loss.std():.4f}), "
        f"{time.perf_counter() - start:.1f} s"
    )

# %%
# The three scores are within about a standard deviation of each other (on
# other subsamples their order changes): the discrete kernels need no
# encoding, and they say how much each discrete feature matters. Each gets a
# smoothing parameter of its own, chosen with the bandwidths:
# :math:`\lambda = 0` would split the data by level, the largest value
# ignores the feature. Here the occupation's is near its largest (5/6): the
# occupation barely changes the probability, while the rating of the marriage
# is smoothed least. One-hot encoding instead spreads the occupation over six
# coordinates that share the bandwidth of the scaled numbers.
clf = NadarayaWatsonClassifier().fit(X, y)
table = pd.DataFrame(
    {
        "type": clf.feature_types_,
        "bandwidth or lambda": clf.bandwidth_,
    },
    index=X.columns,
)
print(table)

# %%
# Predicted probabilities
# -----------------------
# The probability of an affair falls with the rating of the marriage, at the
# median age and years of marriage, for the three most common occupations
# and the median religiousness.
grid = pd.DataFrame(
    {
        "age": np.full(5, X.age.median()),
        "yrs_married": np.full(5, X.yrs_married.median()),
        "rate_marriage": pd.Categorical(
            range(1, 6), categories=X.rate_marriage.cat.categories, ordered=True
        ),
        "religious": pd.Categorical(
            np.full(5, 2), categories=X.religious.cat.categories, ordered=True
        ),
    }
)
fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(10, 4))
for occupation in X.occupation.value_counts().index[:3]:
    queries = grid.assign(
        occupation=pd.Categorical(
            np.full(5, occupation), categories=X.occupation.cat.categories
        )
    )
    ax0.plot(
        range(1, 6),
        clf.predict_proba(queries)[:, 1],
        "o-",
        label=f"occupation {occupation}",
    )
ax0.set_xlabel("rating of the marriage")
ax0.set_ylabel("P(affair)")
ax0.set_xticks(range(1, 6))
ax0.legend()
names = list(scores)
ax1.bar(
    names,
    [scores[n].mean() for n in names],
    yerr=[scores[n].std() for n in names],
    capsize=4,
)
ax1.set_ylim(min(s.mean() for s in scores.values()) - 0.03, None)
ax1.set_ylabel("5-fold log-loss (lower is better)")
ax1.tick_params(axis="x", labelrotation=15)
fig.tight_layout()

# %%
# The same estimate as statsmodels
# --------------------------------
# The probability is the kernel-weighted mean of the 0/1 target: at the same
# bandwidths, statsmodels' ``KernelReg`` with ``var_type`` "c" (continuous),
# "o" (ordered) and "u" (unordered) and ``reg_type="lc"`` gives the same
# numbers (its search for the bandwidths, ``bw="cv_ls"``, takes minutes here).
from statsmodels.nonparametric.kernel_regression import KernelReg  # noqa: E402

codes = np.column_stack(
    [
        X.age,
        X.yrs_married,
        X.rate_marriage.cat.codes,
        X.religious.cat.codes,
        X.occupation.cat.codes,
    ]
).astype(float)
reference = KernelReg(
    y.astype(float), codes, var_type="ccoou", reg_type="lc", bw=clf.bandwidth_
)
rows = slice(0, 200)
ours = clf.predict_proba(X.iloc[rows])[:, 1]
theirs = reference.fit(codes[rows])[0]
print(f"largest difference from statsmodels: {np.max(np.abs(ours - theirs)):.1e}")
