"""Warnings raised by sknw estimators."""

import sys
import warnings

__all__ = ["EmptyWindowWarning", "SingularDesignWarning", "UndefinedStdWarning"]


def warn(message, category):
    """Warn with the location of the first caller outside sknw (not public)."""
    level, frame = 2, sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").startswith("sknw."):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


class EmptyWindowWarning(UserWarning):
    """Some queries had no training point with a non-zero kernel weight.

    Raised by the estimators when a kernel with compact support leaves a query's
    window empty; the message says how many queries were affected and which
    ``empty_window`` policy gave their estimates.

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


class SingularDesignWarning(UserWarning):
    """Some queries had a singular local design in local linear regression.

    Too few, or collinear, training points in a query's window determine no
    local hyperplane; :class:`~sknw.LocalLinearRegressor` then gives those
    queries the local-constant estimate and warns with their number.

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


class UndefinedStdWarning(UserWarning):
    """Some queries have no standard error: it is NaN.

    Raised by ``predict(X, return_std=True)``, ``standard_error`` and
    ``predict_interval`` of the regressors where no noise variance can be
    estimated: an empty window, or, with ``noise_variance="local"``, a window
    that holds in effect no more observations than the local fit has
    parameters. The message says how many queries.

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
