"""Discrete features in the estimators: their parameters, encoding, and the
smoothing parameters held in the per-feature bandwidth.

With discrete features (see :mod:`sknw._features.types`) the fitted ``bandwidth_``
is an array of one entry per feature: the bandwidths of the continuous
features and the smoothing parameters ``lambda`` of the discrete ones (see
:mod:`sknw._features.discrete`). A scalar bandwidth (given, or from a rule of thumb)
applies to the continuous features, and the discrete ones get the rule's
``lambda`` (:func:`~sknw._features.discrete.default_lambda`). Everything continuous
(metric parameters, rules, scaling, backends) sees the continuous columns
only.
"""

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import StrOptions

from .._sums._cells import DiscreteFactors, DiscreteHead
from .._validation import _temporal_types, as_rows
from .discrete import CATEGORICAL_KERNELS, ORDERED_KERNELS, default_lambda
from .types import ORDERED, n_levels

#: The parameters of the estimators that take discrete features.
DISCRETE_CONSTRAINTS = {
    "categorical_features": [StrOptions({"from_dtype"}), "array-like", None],
    "ordered_features": ["array-like", None],
    "categorical_kernel": [StrOptions(set(CATEGORICAL_KERNELS))],
    "ordered_kernel": [StrOptions(set(ORDERED_KERNELS))],
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
        those points; as the core counts them per request,
        :meth:`~sknw._sums._cells.DiscreteFactors.counted`)."""
        lambdas = np.zeros(len(self.columns))
        self.levels = self.factors(lambdas).counted(np.asarray(X), sample_weight).levels

    def as_params(self, categorical_kernel, ordered_kernel):
        """The estimator parameters that declare these features on the
        encoded data (their codes as levels)."""
        ordered = [
            j for j, k in zip(self.columns, self.kernels, strict=True) if k.ordered
        ]
        unordered = [j for j in self.columns if j not in ordered]
        return {
            "categorical_features": unordered or None,
            "ordered_features": ordered or None,
            "categorical_kernel": categorical_kernel,
            "ordered_kernel": ordered_kernel,
        }

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


def refuse_sparse_declarations(categorical_features, ordered_features):
    """Discrete features cannot be read from a sparse matrix: refuse their
    declaration rather than ignore it."""
    declared = ordered_features is not None or not (
        categorical_features is None
        or (
            isinstance(categorical_features, str)
            and categorical_features == "from_dtype"
        )
    )
    if declared:
        raise ValueError(
            "categorical_features or ordered_features were given with a sparse "
            "X: give the discrete features in a dense array or DataFrame (their "
            "kernels need the levels, not a one-hot encoding)."
        )


def table_of(X):
    """A 2-D ``X`` as a DataFrame or numpy array whose discrete columns can be
    read (numbers as float64, checked finite where discrete), or None for
    inputs the estimator's validation refuses."""
    if sp.issparse(X):
        return None
    if hasattr(X, "iloc") or hasattr(X, "get_column"):
        if not getattr(X.columns, "is_unique", True):
            duplicated = sorted({str(c) for c in X.columns[X.columns.duplicated()]})
            raise ValueError(
                f"X has duplicate column names {duplicated}: feature names must "
                "be unique."
            )
        return X if 0 not in X.shape else None
    try:
        A = as_rows(X)
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
