"""Discrete features in the estimators: their parameters, encoding, and the
smoothing parameters held in the per-feature bandwidth.

With discrete features (see :mod:`sknw._features`) the fitted ``bandwidth_``
is an array of one entry per feature: the bandwidths of the continuous
features and the smoothing parameters ``lambda`` of the discrete ones (see
:mod:`sknw._discrete`). A scalar bandwidth (given, or from a rule of thumb)
applies to the continuous features, and the discrete ones get the rule's
``lambda`` (:func:`~sknw._discrete.default_lambda`). Everything continuous
(metric parameters, rules, scaling, backends) sees the continuous columns
only.
"""

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import StrOptions

from ._discrete import CATEGORICAL_KERNELS, ORDERED_KERNELS, default_lambda
from ._features import ORDERED, FeatureEncoder, feature_types, n_levels
from ._sums._cells import DiscreteFactors, DiscreteHead
from ._validation import _temporal_types, check_bandwidth

#: The parameters of the estimators that take discrete features.
DISCRETE_CONSTRAINTS = {
    "categorical_features": [StrOptions({"from_dtype"}), "array-like", None],
    "ordered_features": ["array-like", None],
    "categorical_kernel": [StrOptions(set(CATEGORICAL_KERNELS))],
    "ordered_kernel": [StrOptions(set(ORDERED_KERNELS))],
}

#: Their defaults.
DISCRETE_DEFAULTS = {
    "categorical_features": "from_dtype",
    "ordered_features": None,
    "categorical_kernel": "aitchison_aitken",
    "ordered_kernel": "wang_ryzin",
}


class Discrete:
    """The fitted discrete features of an estimator: their encoder, kernels
    and the columns of each kind."""

    def __init__(self, encoder, categorical_kernel, ordered_kernel):
        self.encoder = encoder
        self.columns = tuple(int(j) for j in encoder.discrete)
        self.continuous = tuple(int(j) for j in encoder.continuous)
        self.kernels = tuple(
            ORDERED_KERNELS[ordered_kernel]
            if encoder.types[j] == ORDERED
            else CATEGORICAL_KERNELS[categorical_kernel]
            for j in self.columns
        )
        self.levels = tuple(n_levels(encoder, j) for j in self.columns)
        self.coded = tuple(bool(encoder.coded[j]) for j in self.columns)

    def count_levels(self, X, sample_weight):
        """Count each unordered feature's levels among the training points of
        positive weight of the encoded ``X`` (a level held only by points of
        weight 0 weighs nothing: as if unseen, the same estimates as without
        those points)."""
        X = np.asarray(X)
        rows = slice(None) if sample_weight is None else sample_weight > 0
        levels = list(self.levels)
        for i, j in enumerate(self.columns):
            if not self.kernels[i].ordered:
                levels[i] = max(np.unique(X[rows, j]).size, 1)
        self.levels = tuple(levels)

    @property
    def n_features(self):
        return len(self.columns) + len(self.continuous)

    def factors(self, lambdas, power=1):
        return DiscreteFactors(
            self.columns,
            self.continuous,
            self.kernels,
            self.levels,
            tuple(float(v) for v in lambdas),
            self.coded,
            power,
        )

    def head(self, head, lambdas):
        return DiscreteHead(head, self.factors(lambdas))

    def continuous_of(self, X):
        """The continuous columns of the encoded ``X``."""
        return np.ascontiguousarray(X[:, list(self.continuous)])

    def default_lambdas(self, n_samples):
        return np.array(
            [
                default_lambda(k, c, n_samples)
                for k, c in zip(self.kernels, self.levels, strict=True)
            ]
        )

    def max_lambdas(self):
        return np.array(
            [
                k.max_lambda(c) * (0.99 if k._open_top else 1.0)
                for k, c in zip(self.kernels, self.levels, strict=True)
            ]
        )

    def split(self, bandwidth):
        """``(continuous bandwidths, lambdas)`` of a full per-feature array."""
        bw = np.asarray(bandwidth, dtype=np.float64)
        return bw[list(self.continuous)], bw[list(self.columns)]

    def join(self, continuous, lambdas):
        """The full per-feature bandwidth of a continuous bandwidth (a float
        or one per continuous feature) and the lambdas."""
        out = np.empty(self.n_features)
        out[list(self.continuous)] = continuous
        out[list(self.columns)] = lambdas
        return out

    def check_lambdas(self, lambdas):
        for j, (k, c, lam) in enumerate(
            zip(self.kernels, self.levels, lambdas, strict=True)
        ):
            k.check_lambda(float(lam), c, self.columns[j])


def encode_features(est, X, reset):
    """``X`` with its discrete features encoded for the estimator ``est``
    (``X`` itself without discrete features); at fit (``reset``) learn them
    and set ``feature_types_`` and ``categories_``. Inputs that are not
    2-D, or sparse, are left to the estimator's validation."""
    if not hasattr(est, "categorical_features"):
        return X
    if reset:
        est._discrete = None
        table = _table(X)
        if table is None:
            return X
        types = feature_types(table, est.categorical_features, est.ordered_features)
        est.feature_types_ = types.astype(str)
        est.categories_ = [None] * len(types)
        if not np.any(types != "continuous"):
            return X
        encoder = FeatureEncoder(types).fit(table)
        est._discrete = Discrete(encoder, est.categorical_kernel, est.ordered_kernel)
        est.categories_ = list(encoder.categories)
    discrete = getattr(est, "_discrete", None)
    if discrete is None:
        return X
    table = _table(X)
    if table is None or np.shape(table)[1] != discrete.n_features:
        return X  # the estimator's validation names the problem
    return discrete.encoder.transform(table)


def _table(X):
    """A 2-D ``X`` as a DataFrame or numpy array whose discrete columns can be
    read (numbers as float64, checked finite where discrete), or None for
    inputs the estimator's validation refuses."""
    if sp.issparse(X):
        return None
    if hasattr(X, "iloc") or hasattr(X, "get_column"):
        return X if 0 not in X.shape else None
    try:
        A = np.asarray(X)
    except (TypeError, ValueError):
        return None
    if A.ndim != 2 or 0 in A.shape:
        return None
    if A.dtype.kind == "O" and not any(isinstance(v, (str, bytes)) for v in A.flat):
        try:
            A = A.astype(np.float64)
        except (TypeError, ValueError):
            if any(isinstance(v, _temporal_types()) for v in A.flat):
                return None  # dates: the validation names their columns
            raise  # names what is not a number
    return A


#: Rounds of the search of the smoothing parameters: each searches every
#: discrete feature's in turn at the best continuous candidate, then scores
#: the continuous grid again with them.
LAMBDA_ROUNDS = 2

#: The smoothing parameters a search tries, as shares of each kernel's
#: largest (0: only matching levels count; 1: the feature is smoothed out,
#: for the unordered kernels).
LAMBDA_SHARES = (0.0, 0.01, 0.03, 0.1, 0.2, 0.35, 0.5, 0.7, 0.85, 1.0)


def search_lambdas(evaluate, cand, lambdas, discrete):
    """The smoothing parameters after one round of coordinate search from
    ``lambdas`` at the candidate ``cand`` (its kernel and continuous
    bandwidth): each discrete feature in turn takes the best of
    :data:`LAMBDA_SHARES` of its range, the others fixed (the first on
    ties). ``evaluate(cands)`` scores candidates as the CV search does."""
    current = np.array(lambdas, dtype=np.float64)
    tops = discrete.max_lambdas()
    for j in range(current.size):
        values = tops[j] * np.asarray(LAMBDA_SHARES)
        trials = []
        for v in values:
            trial = current.copy()
            trial[j] = v
            trials.append({**cand, "lambdas": tuple(trial)})
        (mean, _), _ = evaluate(trials)
        if not np.all(np.isnan(mean)):
            current[j] = values[int(np.nanargmax(mean))]
    return current


def mixed_grid(bandwidths, discrete, n_features, n_samples):
    """A user grid with discrete features, and the starting smoothing
    parameters of the search (None: the grid fixes them).

    Entries are floats (bandwidths of the continuous features; the smoothing
    parameters are then searched from their rule's, for ``n_samples``
    points) or arrays of shape (n_features,) holding them (each entry a dict
    of its continuous ``bandwidth`` and ``lambdas``). Mixing the two is
    refused."""
    arrays = [np.ndim(b) > 0 for b in bandwidths]
    if not bandwidths:
        raise ValueError("bandwidths is empty: give at least one bandwidth.")
    if any(arrays) and not all(arrays):
        raise ValueError(
            "With discrete features, bandwidths are all floats (of the "
            "continuous features; the smoothing parameters are searched) or "
            "all arrays of shape (n_features,) holding them."
        )
    n_cont = len(discrete.continuous)
    if not any(arrays):
        grid = [check_bandwidth(b, n_cont) for b in bandwidths]
        return grid, discrete.default_lambdas(n_samples)
    grid = []
    for b in bandwidths:
        full = np.asarray(b, dtype=np.float64)
        if full.shape != (n_features,):
            raise ValueError(
                f"A bandwidth of the grid has shape {full.shape}; with discrete "
                f"features an array holds one value per feature ({n_features})."
            )
        cont, lambdas = discrete.split(full)
        discrete.check_lambdas(lambdas)
        grid.append({"bandwidth": check_bandwidth(cont, n_cont),
                     "lambdas": tuple(lambdas)})  # fmt: skip
    return grid, None
