"""Predictions over Dask collections, with the fitted model in the graph once.

Dask is optional: nothing here imports it until :func:`dask_predict` is given
a Dask collection (a Dask collection means Dask is already imported).
"""

import sys

import numpy as np
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted

#: Methods :func:`dask_predict` maps over the blocks of a collection.
METHODS = ("predict", "predict_proba")


def dask_predict(estimator, X, method="predict"):
    """Predict lazily over the row blocks of a Dask array or DataFrame.

    The fitted model enters the task graph once and every block task refers
    to it: with a ``distributed`` client active (one that
    :func:`distributed.get_client` finds) the model is scattered to every
    worker, once per call, with :meth:`client.scatter(estimator,
    broadcast=True) <distributed.Client.scatter>`, and the graph holds the
    future; otherwise it is one ``dask.delayed(estimator, pure=True)`` node.
    So each worker receives and unpickles the model once, and the graph
    stays small whatever the size of the training data. Calling
    ``estimator.predict`` on a Dask array instead would pull every block into
    the client's memory, and :meth:`X.map_blocks(estimator.predict)
    <dask.array.Array.map_blocks>` would ship the model with the graph and
    unpickle it for every task.

    Parameters
    ----------
    estimator : estimator instance
        A fitted sknw estimator, or a fitted
        :class:`~sklearn.pipeline.Pipeline` ending in one.
    X : dask.array.Array, dask.dataframe.DataFrame or array-like
        Queries, of shape (n_queries, n_features). A Dask array is rechunked
        to one block of columns if needed; its row chunks are kept. Anything
        else is passed to the method directly. Zero queries raise the method's
        own ``ValueError``, as ``estimator.predict`` does (see Raises).
    method : {"predict", "predict_proba"}, default="predict"
        The method of ``estimator`` to apply to each block.

    Returns
    -------
    dask.array.Array, dask.dataframe.Series, dask.dataframe.DataFrame or ndarray
        Lazy predictions, one block per row block of ``X``. For a Dask array, a
        Dask array with chunks ``(X.chunks[0],)`` for 1-D predictions, or
        ``(X.chunks[0], (n_columns,))`` for ``predict_proba`` (a column per
        class) and multi-output regression. For a Dask DataFrame, a Series
        (1-D predictions) or a DataFrame (columns ``classes_`` for
        ``predict_proba``, ``0 .. n_outputs - 1`` for multi-output regression)
        with the index of ``X``. For any other input, the method's result.

    Raises
    ------
    ValueError
        If ``method`` is not one of the above, the estimator lacks it, or the
        number of columns of a Dask collection differs from the number of
        features seen in fit. For zero queries, the error of the method
        itself on zero rows: at once for a Dask array whose chunk sizes are
        known, and at compute time for a DataFrame of one partition or an
        array of unknown chunk sizes in one block. With several blocks, empty
        ones give empty predictions, even if all are empty: the total is not
        known before they are computed.
    sklearn.exceptions.NotFittedError
        If the estimator is not fitted.
    TypeError
        For a Dask collection other than an array or a DataFrame, or a
        regressor that is not an sknw one.

    See Also
    --------
    NadarayaWatsonRegressor : Kernel regression; its ``n_jobs`` splits one
        prediction over local threads or a joblib backend.
    NadarayaWatsonClassifier : Kernel classification.

    Notes
    -----
    Nothing is computed until the result is: call ``.compute()`` or
    ``.persist()``, or write it out with Dask. The model's size as reported
    by ``dask.sizeof`` (and :func:`sys.getsizeof`) is that of its fitted
    arrays.

    Examples
    --------
    >>> import dask.array as da
    >>> import numpy as np
    >>> from sknw import NadarayaWatsonRegressor, dask_predict
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2))
    >>> reg = NadarayaWatsonRegressor().fit(X, X.sum(axis=1))
    >>> queries = da.from_array(rng.normal(size=(1000, 2)), chunks=(250, 2))
    >>> y = dask_predict(reg, queries)
    >>> y.chunks
    ((250, 250, 250, 250),)
    >>> bool(np.allclose(y.compute(), reg.predict(queries.compute())))
    True
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}.")
    check_is_fitted(estimator)
    if not hasattr(estimator, method):
        raise ValueError(
            f"{type(estimator).__name__} has no method {method!r}; "
            "'predict_proba' needs a classifier."
        )
    kind = _collection_kind(X)
    if kind is None:
        return getattr(estimator, method)(X)
    columns, dtype = _output_spec(estimator, method)
    n_features = getattr(estimator, "n_features_in_", None)
    if kind == "array" and X.ndim != 2:
        raise ValueError(f"X must be a 2-D Dask array, got {X.ndim} dimensions.")
    n_columns = X.shape[1] if kind == "array" else len(X.columns)
    if kind == "array" and X.shape[0] == 0:  # NaN for unknown chunk sizes
        # As predict does on zero queries (the method raises).
        getattr(estimator, method)(np.empty((0, n_columns), dtype=X.dtype))
    if n_features is not None and n_columns != n_features:
        raise ValueError(
            f"X has {n_columns} features, but {type(estimator).__name__} is "
            f"expecting {n_features} features as input."
        )
    model = _model_node(estimator)
    if kind == "array":
        return _map_array(X, model, method, columns, dtype)
    return _map_frame(X, model, method, columns, dtype)


def _collection_kind(X):
    """``"array"``, ``"frame"`` or None (not a Dask collection)."""
    if "dask" not in sys.modules:
        return None
    import dask

    if not dask.is_dask_collection(X):
        return None
    import dask.array as da

    if isinstance(X, da.Array):
        return "array"
    dd = sys.modules.get("dask.dataframe")
    if dd is not None and isinstance(X, dd.DataFrame):
        return "frame"
    raise TypeError(
        "dask_predict takes a Dask Array or DataFrame (or an array-like), "
        f"got {type(X).__module__}.{type(X).__name__}."
    )


def _output_spec(estimator, method):
    """Output columns (None for 1-D output) and dtype of ``method``."""
    final = estimator[-1] if isinstance(estimator, Pipeline) else estimator
    classes = getattr(final, "classes_", None)
    if method == "predict_proba":
        return np.asarray(classes), np.dtype(np.float64)
    if classes is not None:
        return None, np.asarray(classes).dtype
    y = getattr(final, "y_fit_", None)
    if y is None:
        raise TypeError(
            "dask_predict needs a fitted sknw estimator or a Pipeline ending in "
            f"one, got {type(final).__name__}."
        )
    if y.ndim == 1:
        return None, np.dtype(np.float64)
    return np.arange(y.shape[1]), np.dtype(np.float64)


def _model_node(estimator):
    """The estimator as one node of a graph: a scattered future or a delayed."""
    if "distributed" in sys.modules:
        from distributed import get_client

        try:
            client = get_client()
        except ValueError:  # no client
            client = None
        if client is not None:
            # A fresh key per call: with a content hash, a call right after
            # another could reuse the key while the cluster releases it.
            return client.scatter(estimator, broadcast=True, hash=False)
    import dask

    return dask.delayed(estimator, pure=True)


def _empty(columns, dtype):
    shape = (0,) if columns is None else (0, len(columns))
    return np.empty(shape, dtype=dtype)


def _map_array(X, model, method, columns, dtype):
    if len(X.chunks[1]) > 1:
        X = X.rechunk({1: -1})
    if columns is None:
        layout = {"drop_axis": 1, "chunks": (X.chunks[0],)}
    else:
        layout = {"chunks": (X.chunks[0], (len(columns),))}
    return X.map_blocks(
        _predict_block,
        model,
        method,
        columns,
        dtype,
        X.numblocks[0] == 1,
        dtype=dtype,
        meta=_empty(columns, dtype),
        token=method,
        **layout,
    )


def _predict_block(block, estimator, method, columns, dtype, only=False):
    """Predictions of one block; an empty block gives an empty result unless
    it is the collection's only one (zero queries: the method raises)."""
    if block.shape[0] == 0 and not only:
        return _empty(columns, dtype)
    return getattr(estimator, method)(block)


def _map_frame(X, model, method, columns, dtype):
    meta = _as_pandas(_empty(columns, dtype), X._meta.index, columns)
    return X.map_partitions(
        _predict_partition,
        model,
        method,
        columns,
        dtype,
        X.npartitions == 1,
        meta=meta,
        token=method,
    )


def _predict_partition(part, estimator, method, columns, dtype, only=False):
    """As :func:`_predict_block`, for a partition of a DataFrame."""
    if len(part) == 0 and not only:
        values = _empty(columns, dtype)
    else:
        values = getattr(estimator, method)(part)
    return _as_pandas(values, part.index, columns)


def _as_pandas(values, index, columns):
    import pandas as pd

    if columns is None:
        return pd.Series(values, index=index)
    return pd.DataFrame(values, index=index, columns=columns)
