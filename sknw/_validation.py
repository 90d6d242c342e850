"""Checks of the estimators' inputs and parameters, shared by every estimator."""

from numbers import Real

import numpy as np
import scipy.sparse as sp
from scipy.spatial.distance import cdist
from sklearn.utils.validation import validate_data

from ._sums._base import check_self_distances

#: Metric names accepted by :func:`scipy.spatial.distance.cdist`.
CDIST_METRICS = (
    "braycurtis",
    "canberra",
    "chebyshev",
    "cityblock",
    "correlation",
    "cosine",
    "dice",
    "euclidean",
    "hamming",
    "jaccard",
    "jensenshannon",
    "mahalanobis",
    "minkowski",
    "rogerstanimoto",
    "russellrao",
    "seuclidean",
    "sokalsneath",
    "sqeuclidean",
    "yule",
)

EMPTY_WINDOW_POLICIES = ("nearest", "mean", "nan", "raise")


def check_not_text(X, name="X"):
    """Reject arrays of strings of digits: sknw does not parse numbers from text.

    Other strings are left to scikit-learn's validation, which names the value
    it cannot convert.
    """
    kind = getattr(getattr(X, "dtype", None), "kind", None)
    if kind is None and not sp.issparse(X) and not hasattr(X, "__array__"):
        try:
            kind = np.asarray(X).dtype.kind
        except (TypeError, ValueError):
            return
    if kind in ("U", "S"):
        try:
            np.asarray(X, dtype=np.float64)
        except (TypeError, ValueError):
            return  # not numbers: validation reports the string it cannot read
        raise ValueError(
            f"{name} holds strings; sknw needs numeric input (encode categories "
            "or convert numbers, e.g. with astype(float), first)."
        )


def check_dense_target(y):
    """Reject a sparse target with a message that says so."""
    if sp.issparse(y):
        raise TypeError(
            "A sparse y is not supported; convert it with .toarray() first."
        )


def validate_regression_data(estimator, X, y):
    """Validated regression inputs: ``X`` as float64 or float32 (C order), ``y``
    as float64, with one or several outputs."""
    check_not_text(X)
    check_dense_target(y)
    X, y = validate_data(
        estimator,
        X,
        y,
        dtype=[np.float64, np.float32],
        order="C",
        multi_output=True,
        y_numeric=True,
    )
    return X, np.asarray(y, dtype=np.float64)


def check_bandwidth(bandwidth, n_features):
    """A positive finite float, or an array of them of shape (n_features,)."""
    arr = np.asarray(bandwidth, dtype=np.float64)
    if arr.ndim == 0:
        value = float(arr)
        if not (np.isfinite(value) and value > 0):
            raise ValueError(
                f"bandwidth must be positive and finite, got {bandwidth!r}."
            )
        return value
    if arr.ndim != 1 or arr.shape[0] != n_features:
        raise ValueError(
            "A bandwidth must be a float or an array of shape (n_features,) = "
            f"({n_features},), got shape {arr.shape}."
        )
    if not np.all(np.isfinite(arr) & (arr > 0)):
        raise ValueError(
            f"Every per-feature bandwidth must be positive and finite, got {arr}."
        )
    return arr


def check_sample_weight(sample_weight, n_samples):
    """Validate sample weights: finite, non-negative, not all zero."""
    if sample_weight is None:
        return None
    if np.isscalar(sample_weight):
        sample_weight = np.full(n_samples, sample_weight, dtype=np.float64)
    if sp.issparse(sample_weight):
        raise TypeError(
            "sample_weight must be dense: a sparse matrix is not supported; "
            "convert it with .toarray().ravel()."
        )
    w = np.asarray(sample_weight)
    if w.dtype.kind == "c":
        raise ValueError("sample_weight must be real, got complex values.")
    try:
        w = w.astype(np.float64, copy=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"sample_weight must be numeric: {exc}") from None
    if w.ndim != 1 or w.shape[0] != n_samples:
        raise ValueError(f"sample_weight.shape == {w.shape}, expected ({n_samples},).")
    if not np.all(np.isfinite(w)):
        raise ValueError("sample_weight must be finite (no NaN or infinity).")
    if np.any(w < 0):
        raise ValueError("Negative values in sample_weight are not allowed.")
    if not np.any(w > 0):
        raise ValueError(
            "All sample weights are zero: sample_weight must have at least one "
            "positive value."
        )
    return w


def check_metric_values(params):
    """Reject metric parameters that scipy's cdist would silently misuse."""

    def fail(name, requirement):
        raise ValueError(
            f"metric_params[{name!r}] must be {requirement}, got {params[name]!r}."
        )

    if "p" in params and isinstance(params["p"], Real):
        p = params["p"]
        if not p > 0:  # NaN fails too; np.inf is allowed
            fail("p", "a positive number (np.inf for chebyshev)")
    if "w" in params:
        w = np.asarray(params["w"], dtype=np.float64)
        if not np.all(np.isfinite(w)):
            fail("w", "finite and non-negative")
    if "V" in params:
        V = np.asarray(params["V"], dtype=np.float64)
        if not (np.all(np.isfinite(V)) and np.all(V > 0)):
            fail("V", "finite and positive (variances)")
    if "VI" in params:
        VI = np.asarray(params["VI"], dtype=np.float64)
        if not np.all(np.isfinite(VI)):
            fail("VI", "finite")
        sym = (VI + VI.T) / 2
        eig = np.linalg.eigvalsh(sym)
        if eig.min() < -1e-10 * max(abs(eig).max(), 1.0):
            fail("VI", "positive semi-definite (an inverse covariance)")


def resolve_metric_params(metric, metric_params, X, sample_weight):
    """Metric parameters with data-dependent defaults fixed at fit time.

    The defaults of ``"mahalanobis"`` (``VI``) and ``"seuclidean"`` (``V``)
    come from the weighted (ddof=0) covariance of the unscaled training data.
    Training rows the metric is undefined on (a NaN distance to themselves)
    raise a ValueError naming them.
    """
    params = dict(metric_params or {})
    if metric in ("mahalanobis", "seuclidean"):
        w = np.ones(X.shape[0]) if sample_weight is None else sample_weight
        centred = X - (w @ X) / w.sum()
        if metric == "mahalanobis" and "VI" not in params:
            cov = (centred * w[:, None]).T @ centred / w.sum()
            params["VI"] = np.linalg.pinv(cov, hermitian=True)
        if metric == "seuclidean" and "V" not in params:
            var = w @ centred**2 / w.sum()
            params["V"] = np.where(var > 0, var, 1.0)
    d = X.shape[1]
    for name, shape in (("VI", (d, d)), ("V", (d,))):
        if name in params and np.shape(params[name]) != shape:
            raise ValueError(
                f"metric_params[{name!r}] must have shape {shape} for "
                f"{d} features, got shape {np.shape(params[name])}."
            )
    check_metric_values(params)
    try:
        cdist(X[:1], X[:1], metric, **params)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"metric_params {metric_params!r} do not fit metric {metric!r}: {exc}"
        ) from None
    check_self_distances(X, metric, params)
    return params
