"""Feature types: which columns are continuous, unordered categories or
ordered levels, and their encoding as level codes.

``categorical_features`` follows scikit-learn's ``HistGradientBoosting*``
convention: ``"from_dtype"`` (pandas or polars categorical, string and
object columns are categorical; ordered pandas categoricals are ordered
features), None (no categorical feature), a boolean mask, integer indices or
feature names. ``ordered_features`` (None, a mask, indices or names) marks
features whose values are ordered levels: integers, or the categories of an
ordered categorical in their order.

At fit the levels of each discrete feature are learned (``categories_``)
and the features are encoded as numbers: an unordered feature as the index
of its level among the sorted levels seen at fit (-1 at prediction for a
level unseen at fit, which mismatches every level); an ordered categorical
as the position of its category in the categories of its dtype (-1 for one
outside them); an ordered integer feature as its value.
"""

import numpy as np

#: ``feature_types_`` values.
CONTINUOUS, UNORDERED, ORDERED = "continuous", "unordered", "ordered"


def _frame_columns(X):
    """``(names, dtypes)`` of a pandas or polars DataFrame, else None."""
    if hasattr(X, "iloc") and hasattr(X, "dtypes") and hasattr(X, "columns"):
        return [str(c) for c in X.columns], list(X.dtypes)
    schema = getattr(X, "schema", None)
    if schema is not None and hasattr(X, "get_column"):  # polars
        return list(schema.keys()), list(schema.values())
    return None


def _column(X, j):
    """Column ``j`` of ``X`` as a 1-D numpy array of objects or numbers."""
    if hasattr(X, "iloc"):
        return X.iloc[:, j]
    if hasattr(X, "get_column"):
        return X.get_column(X.columns[j]).to_numpy()
    return np.asarray(X)[:, j]


def _dtype_kind(dtype):
    """``(discrete, ordered)`` of a column dtype under ``"from_dtype"``."""
    name = str(dtype).lower()
    if name.startswith("enum"):  # polars' Enum: ordered categories
        return True, True
    if name == "category" or getattr(dtype, "categories", None) is not None:
        return True, bool(getattr(dtype, "ordered", False))
    if name in ("object", "string", "str", "utf8", "categorical") or name.startswith(
        ("string", "str")
    ):
        return True, False
    return False, False


def _mask(spec, n_features, names, param):
    """A boolean mask of the features named by ``spec`` (mask, indices or
    names), or None for None."""
    if spec is None:
        return None
    values = np.asarray(spec)
    if values.ndim != 1:
        raise ValueError(f"{param} must be 1-D: a mask, indices or names.")
    mask = np.zeros(n_features, dtype=bool)
    if values.size == 0:
        return mask
    if values.dtype.kind == "b":
        if values.size != n_features:
            raise ValueError(
                f"{param} is a mask of {values.size} values, but X has "
                f"{n_features} features."
            )
        return values.copy()
    if values.dtype.kind in "iu":
        if values.min() < -n_features or values.max() >= n_features:
            raise ValueError(
                f"{param} holds indices outside [0, {n_features}): {spec!r}."
            )
        mask[values] = True
        return mask
    if values.dtype.kind in "UO":
        if names is None:
            raise ValueError(
                f"{param} names features ({spec!r}), but X has no feature "
                "names: give a DataFrame, or indices or a mask."
            )
        for v in values:
            if str(v) not in names:
                raise ValueError(f"{param} names {v!r}, which is not a feature.")
            mask[names.index(str(v))] = True
        return mask
    raise ValueError(f"{param} must be a mask, integer indices or names: {spec!r}.")


def feature_types(X, categorical_features, ordered_features):
    """The type of each feature of ``X`` (``feature_types_``)."""
    frame = _frame_columns(X)
    names = None if frame is None else frame[0]
    n_features = len(names) if frame is not None else np.shape(X)[1]
    types = np.full(n_features, CONTINUOUS, dtype=object)
    ordered_dtype = np.zeros(n_features, dtype=bool)
    if isinstance(categorical_features, str) and categorical_features == "from_dtype":
        if frame is not None:
            for j, dtype in enumerate(frame[1]):
                discrete, ordered = _dtype_kind(dtype)
                if str(dtype) == "object" and _all_numbers(_column(X, j)):
                    discrete = False  # an object column of numbers
                if discrete:
                    types[j] = ORDERED if ordered else UNORDERED
                    ordered_dtype[j] = ordered
    else:
        mask = _mask(categorical_features, n_features, names, "categorical_features")
        if mask is not None:
            types[mask] = UNORDERED
            if frame is not None:
                for j in np.flatnonzero(mask):
                    ordered_dtype[j] = _dtype_kind(frame[1][j]) == (True, True)
                    if ordered_dtype[j]:
                        types[j] = ORDERED
    ordered = _mask(ordered_features, n_features, names, "ordered_features")
    if ordered is not None:
        types[ordered] = ORDERED
    return types


def _all_numbers(values):
    """Whether every value is a number (not text, not a date)."""
    return all(
        isinstance(v, (int, float, np.number)) and not isinstance(v, bool)
        for v in np.asarray(values, dtype=object)
    )


class FeatureEncoder:
    """The fitted encoding of the discrete features (see the module)."""

    def __init__(self, types):
        self.types = types
        self.categories = [None] * len(types)
        self.coded = [False] * len(types)
        self.names = None

    def label(self, j):
        """Feature ``j`` as errors name it: by its column name where the
        training data had names, with its index."""
        if self.names is None:
            return f"{j}"
        return f"{self.names[j]!r} (column {j})"

    @property
    def discrete(self):
        return np.flatnonzero(self.types != CONTINUOUS)

    @property
    def continuous(self):
        return np.flatnonzero(self.types == CONTINUOUS)

    def fit(self, X):
        columns = getattr(X, "columns", None)
        self.names = None if columns is None else [str(c) for c in columns]
        frame = _frame_columns(X)
        for j in self.discrete:
            label = self.label(j)
            col = _column(X, j)
            # The column's own dtype (a polars column is read as numpy's).
            dtype = frame[1][j] if frame is not None else getattr(col, "dtype", None)
            categories = getattr(dtype, "categories", None)
            if self.types[j] == ORDERED and categories is not None:
                if _dtype_kind(dtype) != (True, True):
                    raise ValueError(
                        f"Feature {label} is declared ordered, but its categories "
                        "are unordered: give an ordered categorical (e.g. "
                        "pandas.Categorical(..., ordered=True) or a polars "
                        "Enum) or integers."
                    )
                self.categories[j] = np.asarray(list(categories), dtype=object)
                self.coded[j] = True
                _check_missing(np.asarray(col, dtype=object), label)
                continue
            values = np.asarray(col, dtype=object)
            _check_missing(values, label)
            _check_finite(values, label)
            if self.types[j] == ORDERED:
                self.categories[j] = _integer_levels(values, label)
                continue
            self.categories[j] = _sorted_levels(values)
            self.coded[j] = True
        return self

    def transform(self, X):
        """``X`` with its discrete features encoded (a float64 array, or a
        DataFrame of the same column names for a pandas DataFrame)."""
        n = np.shape(X)[0] if not hasattr(X, "height") else X.height
        out = {}
        for j in range(len(self.types)):
            col = _column(X, j)
            if self.types[j] == CONTINUOUS:
                out[j] = col
                continue
            label = self.label(j)
            numeric = _numeric(col) if not hasattr(col, "cat") else None
            if numeric is not None:  # numbers: checked without objects
                if not np.all(np.isfinite(numeric)):
                    raise ValueError(
                        f"Input X contains NaN or infinity in discrete feature {label}."
                    )
                values = numeric
            else:
                values = np.asarray(col, dtype=object)
                _check_missing(values, label)
                _check_finite(values, label)
            if self.coded[j]:
                out[j] = _codes(values, self.categories[j])
            else:
                out[j] = _integer_values(values, label)
        if hasattr(X, "iloc"):
            import pandas as pd

            frame = pd.DataFrame({X.columns[j]: out[j] for j in out}, index=X.index)
            return frame
        cols = [np.asarray(out[j]) for j in range(len(self.types))]
        try:
            return (
                np.column_stack([c.astype(np.float64) for c in cols])
                if cols
                else (np.zeros((n, 0)))
            )
        except (TypeError, ValueError):
            return np.column_stack(cols)


def _is_missing(v):
    """None, NaN, pandas' NA or NaT."""
    if v is None:
        return True
    try:
        return bool(v != v)
    except (TypeError, ValueError):  # pandas.NA has no truth value
        return True


def _check_missing(values, label):
    missing = [i for i, v in enumerate(values) if _is_missing(v)]
    if missing:
        raise ValueError(
            f"Input X contains NaN (missing values) in discrete feature {label}, "
            f"rows {missing[:5]}: impute them or encode them as a level of "
            "their own."
        )


def _check_finite(values, label):
    """Refuse infinite numbers as levels."""
    bad = [
        i
        for i, v in enumerate(values)
        if isinstance(v, (float, np.floating)) and np.isinf(v)
    ]
    if bad:
        raise ValueError(
            f"Input X contains infinity in discrete feature {label}, rows "
            f"{bad[:5]}: a level is a finite number or a label."
        )


def _sorted_levels(values):
    """The distinct levels, sorted (by type name then value where mixed)."""
    unique = list({_key(v): v for v in values}.values())
    try:
        unique.sort()
    except TypeError:
        unique.sort(key=lambda v: (type(v).__name__, str(v)))
    return np.asarray(unique + [None], dtype=object)[:-1]


def _key(v):
    """A hashable key under which equal numbers of other types coincide."""
    if isinstance(v, np.generic):
        v = v.item()
    return v


def _codes(values, levels):
    """The index of each value among ``levels`` (-1: not among them)."""
    numeric = _numeric(values)
    if numeric is not None and levels.size and _numeric(levels) is not None:
        # Numbers: a sorted search, without an object per value.
        keys = _numeric(levels)
        order = np.argsort(keys, kind="stable")
        pos = np.searchsorted(keys[order], numeric)
        pos = np.minimum(pos, keys.size - 1)
        hit = keys[order][pos] == numeric
        return np.where(hit, order[pos], -1).astype(np.float64)
    lookup = {_key(v): i for i, v in enumerate(levels)}
    return np.array([lookup.get(_key(v), -1) for v in values], dtype=np.float64)


def _numeric(values):
    """``values`` as float64 where they are all real numbers, else None."""
    values = np.asarray(values)
    if values.dtype.kind in "biuf":
        return values.astype(np.float64)
    if values.dtype.kind == "O" and all(
        isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
        for v in values
    ):
        return values.astype(np.float64)
    return None


def _integer_values(values, label):
    try:
        x = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            f"Ordered feature {label} holds values that are not numbers: give "
            "integer levels or an ordered categorical."
        ) from None
    if not np.all(np.isfinite(x)):
        raise ValueError(
            f"Input X contains NaN or infinity in ordered feature {label}."
        )
    if np.any(x != np.round(x)):
        raise ValueError(
            f"Ordered feature {label} holds values that are not integers: an "
            "ordered feature's levels are integers (or the categories of an "
            "ordered categorical)."
        )
    return x


def _integer_levels(values, label):
    return np.unique(_integer_values(values, label))


def n_levels(encoder, j):
    """The number of levels of discrete feature ``j`` seen at fit."""
    return max(len(encoder.categories[j]), 1)
