"""Checks of the estimators' inputs and parameters, shared by every estimator."""

import datetime
import sys
from numbers import Real

import numpy as np
import scipy.sparse as sp
from scipy.spatial.distance import cdist
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import validate_data

from ._sums._base import check_self_distances, median_offsets

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


#: How many offending columns an error message lists by name.
_LISTED_COLUMNS = 10


def check_not_text(X, name="X", categorical=False):
    """Refuse features that are text, dates or durations, naming their columns.

    sknw's features are numbers: a ``ValueError`` names every column (by its
    name in a DataFrame, else by its index) that holds

    - text, numbers written as text included: numpy string arrays (dtype
      ``U`` or ``S``), ``str`` or ``bytes`` objects in an object array or
      list, pandas ``string`` and object columns of strings, and categorical
      columns whose categories are strings;
    - dates, times or durations: ``datetime64`` and ``timedelta64`` (pandas
      columns with a time zone included), :mod:`datetime` objects and pandas
      periods.

    Numbers of any type, booleans and missing values (``None``, ``NaN``) are
    left to scikit-learn's validation, and so are inputs that are not 2-D.
    What a column may hold is decided by :func:`_value_kind` alone.
    ``categorical``: the estimator takes categorical features, and the
    message says how to declare them.
    """
    found = {"text": [], "temporal": []}
    names = False
    for label, values, named in _columns(X):
        kind, example = _value_kind(values)
        if kind is not None:
            found[kind].append((label, example))
            names = named
    messages = []
    if found["text"]:
        example = _short(found["text"][0][1])
        where = _describe(found["text"], names)
        if categorical:
            advice = (
                "If they are categories, declare them: "
                f"categorical_features=[{_labels(found['text'], names)}] (or "
                "give them a pandas categorical or string dtype, which "
                "categorical_features='from_dtype' detects); convert numbers "
                "stored as text (e.g. with astype(float)) first."
            )
        else:
            advice = (
                "Encode categories as numbers (e.g. with "
                "sklearn.preprocessing.OneHotEncoder(sparse_output=False): this "
                "estimator takes dense input) and convert numbers stored as "
                "text (e.g. with astype(float)) first."
            )
        messages.append(
            f"{name} has strings in {where} (e.g. {example}): its continuous "
            f"features must be numbers. {advice}"
        )
    if found["temporal"]:
        messages.append(
            f"{name} has dates, times or durations in "
            f"{_describe(found['temporal'], names)}: sknw needs numeric features. "
            "Convert them to numbers first (e.g. seconds or days since a "
            "reference date, or durations in seconds)."
        )
    if messages:
        raise ValueError(" ".join(messages))


def _columns(X):
    """``(label, values, named)`` for the columns of a 2-D ``X`` that may not be
    numeric: ``label`` is the column's name (``named=True``, DataFrames) or
    index. Numeric arrays, sparse matrices and inputs that are not 2-D give
    none."""
    if sp.issparse(X):
        return
    dtypes = getattr(X, "dtypes", None)
    if dtypes is not None and hasattr(X, "iloc") and hasattr(X, "columns"):
        for j, dtype in enumerate(dtypes):  # a pandas DataFrame
            if getattr(dtype, "kind", "O") in "biufc":
                continue
            categories = getattr(dtype, "categories", None)
            values = X.iloc[:, j] if categories is None else categories
            yield X.columns[j], np.asarray(values), True
        return
    dtype = getattr(X, "dtype", None)
    if getattr(dtype, "kind", "O") in "biufc":
        return
    try:
        A = as_rows(X)
        if A.dtype.kind in "biufc":
            return
    except (TypeError, ValueError):
        return  # ragged or unconvertible: left to scikit-learn
    if A.ndim != 2:
        return
    columns = getattr(X, "columns", None)
    named = columns is not None and len(columns) == A.shape[1]
    labels = list(columns) if named else range(A.shape[1])
    for j, label in enumerate(labels):
        yield label, A[:, j], named


def as_rows(X):
    """``X`` as a numpy array, keeping the objects of a list that mixes
    numbers and strings (which numpy would make all strings), so that its
    numbers stay numbers and its columns can be told apart."""
    A = np.asarray(X)
    if A.dtype.kind not in "biufcO" and not isinstance(X, np.ndarray):
        A = np.asarray(X, dtype=object)
    return A


def _temporal_types():
    """Python types of dates, times and durations (pandas' once it is loaded)."""
    types = (
        datetime.date,
        datetime.time,
        datetime.timedelta,
        np.datetime64,
        np.timedelta64,
    )
    pd = sys.modules.get("pandas")
    period = getattr(pd, "Period", None)
    return types if period is None else (*types, period)


def _value_kind(values):
    """``("text" | "temporal" | None, example)`` for one column's values:
    what sknw refuses in a feature, and a value that shows it."""
    if values.size == 0:
        return None, None
    kind = values.dtype.kind
    if kind in "US":
        return "text", values.flat[0]
    if kind in "Mm":
        return "temporal", values.flat[0]
    if kind != "O":
        return None, None
    types = set(map(type, values.flat))
    for group, classes in (("text", (str, bytes)), ("temporal", _temporal_types())):
        if any(issubclass(t, classes) for t in types):
            return group, next(v for v in values.flat if isinstance(v, classes))
    return None, None


def _short(value, limit=40):
    """``repr`` of a value for a message, of Python's type, shortened."""
    if isinstance(value, np.generic):
        value = value.item()
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _labels(columns, named):
    """The columns as a list literal for ``categorical_features``."""
    return ", ".join(repr(str(label)) if named else str(label) for label, _ in columns)


def _describe(columns, named):
    """``"column 'city'"``, ``"columns 0, 3"``, ... (at most a few listed)."""
    labels = [repr(label) if named else str(label) for label, _ in columns]
    shown = ", ".join(labels[:_LISTED_COLUMNS])
    if len(labels) > _LISTED_COLUMNS:
        shown += f" and {len(labels) - _LISTED_COLUMNS} more"
    return ("column " if len(labels) == 1 else "columns ") + shown


def check_dense_target(y):
    """Reject a sparse target with a message that says so."""
    if sp.issparse(y):
        raise TypeError(
            "A sparse y is not supported; convert it with .toarray() first."
        )


def validate_regression_data(estimator, X, y):
    """Validated regression inputs: ``X`` as float64 or float32 (C order), ``y``
    as float64, with one or several outputs (discrete features encoded
    before, see :meth:`sknw._base.NadarayaWatsonBase._encode_features`)."""
    check_not_text(X, categorical=hasattr(estimator, "categorical_features"))
    check_dense_target(y)
    X, y = validate_data(
        estimator,
        X,
        y,
        dtype=[np.float64, np.float32],
        order="C",
        multi_output=True,
        y_numeric=True,
        accept_sparse=SPARSE_FORMATS,
    )
    return dense_training(X), np.asarray(y, dtype=np.float64)


#: Sparse formats the estimators take (densified: the training points at fit,
#: the queries one batch at a time).
SPARSE_FORMATS = ("csr", "csc", "coo")


def dense_training(X):
    """Training inputs as a dense C-ordered array (a sparse matrix densified:
    the fitted estimator holds them, as it holds dense inputs)."""
    if sp.issparse(X):
        return np.ascontiguousarray(X.toarray())
    return X


class NotBoolInterval(Interval):
    """An interval of numbers that booleans do not satisfy.

    Python's ``True`` is an int (and a real) equal to 1, so scikit-learn's
    :class:`~sklearn.utils._param_validation.Interval` accepts it; for sknw's
    parameters a boolean is a mistake, not a number.
    """

    def is_satisfied_by(self, val):
        return not isinstance(val, (bool, np.bool_)) and super().is_satisfied_by(val)

    def __str__(self):
        return f"{super().__str__()} (not a bool)"


def _holds_bools(value):
    """Whether ``value`` is a boolean or an array-like holding one."""
    if isinstance(value, (bool, np.bool_)):
        return True
    if isinstance(value, np.ndarray) and value.dtype.kind != "O":
        return value.dtype.kind == "b"
    try:
        values = np.asarray(value, dtype=object).ravel()
    except (TypeError, ValueError):
        return False
    return any(isinstance(v, (bool, np.bool_)) for v in values)


def check_bandwidth(bandwidth, n_features):
    """A positive finite float, or an array of them of shape (n_features,).

    Booleans (``True`` is 1 in Python) are refused, alone or in an array.
    """
    if _holds_bools(bandwidth):
        raise ValueError(
            "A bandwidth must be a positive float or an array of them, not a "
            f"bool or an array of bools; got {bandwidth!r}."
        )
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
        # From the median first: data far from zero keep their digits.
        Xm, _ = median_offsets(X)
        centred = Xm - (w @ Xm) / w.sum()
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
