"""Warnings and errors raised by sknw estimators."""

import sys
import warnings

import numpy as np

__all__ = [
    "EmptyWindowWarning",
    "GridEdgeWarning",
    "QueryWarning",
    "RidgedDesignWarning",
    "SingularDesignWarning",
    "UndefinedDistanceError",
    "UndefinedStdWarning",
]


#: The opening of the empty-window warnings' message (the counts are in the
#: warning's attributes).
EMPTY_WINDOWS = (
    "Some queries have no training point with a non-zero kernel weight (an "
    "empty window of the kernel at the fitted bandwidth)"
)

#: The warnings shown under the ``"default"`` action, by text, category and
#: place (see :func:`warn`).
_SHOWN = set()


def warn(message, category, *, n_affected=None, n_queries=None):
    """Warn with the location of the first caller outside sknw (not public);
    a :class:`QueryWarning` carries the counts ``n_affected`` and
    ``n_queries``.

    Under the ``"default"`` action, a warning already shown from the same
    place with the same text is not shown again. Python's own registry of
    them is cleared whenever a ``catch_warnings`` block ends, as
    scikit-learn's input validation does at every call: without this, a
    grid search or a plot that predicts many times would show one line per
    call."""
    level, frame = 2, sys._getframe(1)
    while frame is not None and _internal(frame.f_globals.get("__name__", "")):
        frame, level = frame.f_back, level + 1
    if frame is not None:
        place = (frame.f_code.co_filename, frame.f_lineno)
        module = frame.f_globals.get("__name__", "")
        key = (str(message), category, *place)
        if _action(str(message), category, module, place[1]) == "default":
            if key in _SHOWN:
                return
            _SHOWN.add(key)
    instance = category(message)
    if n_affected is not None:
        instance.n_affected = int(n_affected)
    if n_queries is not None:
        instance.n_queries = int(n_queries)
    warnings.warn(instance, stacklevel=level)


def _action(text, category, module, lineno):
    """The action of Python's warning filters for this warning."""
    for action, pattern, kind, where, line in warnings.filters:
        if (
            (pattern is None or pattern.match(text))
            and issubclass(category, kind)
            and (where is None or where.match(module))
            and (line == 0 or line == lineno)
        ):
            return action
    return warnings.defaultaction


def _internal(module):
    """Whether a frame of ``module`` is sknw's, or scikit-learn's wrapper of
    every ``fit`` (its parameter validation)."""
    return module.startswith("sknw.") or module == "sklearn.base"


class GridEdgeWarning(UserWarning):
    """The best bandwidth of a grid is at its edge.

    Raised by the ``*CV`` estimators when the best candidate of a given
    ``bandwidths`` grid (of at least three distinct sizes) has its kernel's
    smallest or largest bandwidth: the optimum may lie beyond the grid. The
    default grid extends itself instead, and warns only where its best
    candidate is still at an edge after the largest extension (a factor
    of 1024 beyond each end).

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from sknw import NadarayaWatsonRegressorCV
    >>> from sknw.exceptions import GridEdgeWarning
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0, 1, (100, 1))
    >>> y = np.sin(6 * X[:, 0]) + 0.1 * rng.normal(size=100)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     cv = NadarayaWatsonRegressorCV(bandwidths=[0.2, 0.4, 0.8]).fit(X, y)
    >>> [w.category.__name__ for w in caught]
    ['GridEdgeWarning']
    >>> cv.bandwidth_
    0.2
    """


class QueryWarning(UserWarning):
    """Base of the warnings about some of the queries of one call.

    One warning per call and kind: its message reads the same whatever the
    counts, so that Python's warning filters show it once per place (a grid
    search or a plot that predicts many times prints it once); the counts
    are its attributes.

    Attributes
    ----------
    n_affected : int or None
        The queries the warning is about.
    n_queries : int or None
        The queries of the call.

    Examples
    --------
    >>> import warnings
    >>> from sknw import NadarayaWatsonRegressor
    >>> from sknw.exceptions import QueryWarning
    >>> reg = NadarayaWatsonRegressor(kernel="boxcar", bandwidth=0.5)
    >>> reg = reg.fit([[0.0], [1.0]], [0.0, 1.0])
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = reg.predict([[5.0], [6.0], [0.1]])
    >>> found = caught[0].message
    >>> isinstance(found, QueryWarning), found.n_affected, found.n_queries
    (True, 2, 3)
    """

    n_affected = None
    n_queries = None


class RidgedDesignWarning(QueryWarning):
    """Some local linear fits were ridged towards the local-constant fit.

    Raised by :class:`~sknw.LocalLinearRegressor` when queries' local designs
    have a leverage above ``max_leverage`` (few points in their window, or a
    query beyond them); ``n_affected`` says how many.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from sknw import LocalLinearRegressor
    >>> from sknw.exceptions import RidgedDesignWarning
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0, 1, (50, 1))
    >>> y = X[:, 0] + rng.normal(size=50)
    >>> reg = LocalLinearRegressor(bandwidth=0.05).fit(X, y)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = reg.predict([[3.0]])
    >>> [w.category.__name__ for w in caught]
    ['RidgedDesignWarning']
    """


class EmptyWindowWarning(QueryWarning):
    """Some queries had no training point with a non-zero kernel weight.

    Raised by the estimators when a kernel with compact support leaves a query's
    window empty; the message says which ``empty_window`` policy gave their
    estimates, ``n_affected`` how many queries.

    Examples
    --------
    >>> import warnings
    >>> from sknw import NadarayaWatsonRegressor
    >>> from sknw.exceptions import EmptyWindowWarning
    >>> reg = NadarayaWatsonRegressor(kernel="boxcar", bandwidth=0.5)
    >>> reg = reg.fit([[0.0], [1.0]], [0.0, 1.0])
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     reg.predict([[5.0]])
    array([1.])
    >>> caught[0].category is EmptyWindowWarning
    True
    """


class SingularDesignWarning(QueryWarning):
    """Some queries had a singular local design in local linear regression.

    Too few, or collinear, training points in a query's window determine no
    local hyperplane; :class:`~sknw.LocalLinearRegressor` then gives those
    queries the local-constant estimate and warns (``n_affected``: their
    number).

    Examples
    --------
    >>> import warnings
    >>> from sknw import LocalLinearRegressor
    >>> from sknw.exceptions import SingularDesignWarning
    >>> reg = LocalLinearRegressor(kernel="boxcar", bandwidth=0.6)
    >>> reg = reg.fit([[0.0], [1.0], [2.0]], [0.0, 1.0, 4.0])
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     reg.predict([[0.1]])
    array([0.])
    >>> caught[0].category is SingularDesignWarning
    True
    """


class UndefinedStdWarning(QueryWarning):
    """Some queries have no standard error: it is NaN.

    Raised by ``predict(X, return_std=True)``, ``standard_error`` and
    ``predict_interval`` of the regressors where no noise variance can be
    estimated: an empty window, or, with ``noise_variance="local"``, a window
    that holds in effect no more observations than the local fit has
    parameters. ``n_affected`` says how many queries.

    Examples
    --------
    >>> import warnings
    >>> from sknw import NadarayaWatsonRegressor
    >>> from sknw.exceptions import UndefinedStdWarning
    >>> reg = NadarayaWatsonRegressor(kernel="boxcar", bandwidth=0.5)
    >>> reg = reg.fit([[0.0], [1.0], [1.2]], [0.0, 1.0, 2.0])
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     reg.predict([[0.1], [1.1]], return_std=True)
    (array([0. , 1.5]), array([nan, 0.5]))
    >>> caught[0].category is UndefinedStdWarning
    True
    """


class UndefinedDistanceError(ValueError):
    """The metric is undefined (a NaN distance) on some rows.

    Raised at ``fit`` for training rows whose distance to themselves is NaN,
    and at prediction for queries with a NaN distance to a training row: for
    example ``"cosine"`` of a zero vector, ``"correlation"`` of a constant row
    or a callable metric that returns NaN. A NaN never becomes an estimate.

    Parameters
    ----------
    metric : str or callable
        The metric.
    rows : array-like of int
        Indices of the rows (of the queries, or of the training data).
    training : bool, default=False
        Whether the rows are training rows.

    Attributes
    ----------
    rows : ndarray of int
        Indices of the rows.

    Examples
    --------
    >>> from sknw import NadarayaWatsonRegressor
    >>> from sknw.exceptions import UndefinedDistanceError
    >>> reg = NadarayaWatsonRegressor(metric="cosine", bandwidth=0.5)
    >>> reg = reg.fit([[1.0, 0.0], [0.0, 1.0]], [0.0, 1.0])
    >>> try:
    ...     reg.predict([[1.0, 1.0], [0.0, 0.0]])
    ... except UndefinedDistanceError as exc:
    ...     print(exc.rows)
    [1]
    """

    def __init__(self, metric, rows, training=False):
        super().__init__(metric, rows, training)
        self.metric, self.rows, self.training = metric, np.asarray(rows), training

    def shifted(self, offset):
        """The same error for the rows ``offset`` further on.

        Parameters
        ----------
        offset : int
            Added to every row index.

        Returns
        -------
        UndefinedDistanceError
            The error with shifted rows.
        """
        return type(self)(self.metric, self.rows + offset, self.training)

    def __str__(self):
        name = getattr(self.metric, "__name__", None) or repr(self.metric)
        where = "rows of the training data" if self.training else "query rows"
        shown = ", ".join(map(str, self.rows[:10])) + (
            ", ..." if self.rows.size > 10 else ""
        )
        return (
            f"The metric {name} gives NaN distances for {self.rows.size} "
            f"{where} (indices {shown}): it is undefined there (e.g. 'cosine' "
            "of a zero vector, 'correlation' of a constant row, 'braycurtis' "
            "of two zero vectors). Remove or change those rows, or use another "
            "metric."
        )
