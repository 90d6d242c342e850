"""Warnings raised by sknw estimators."""

__all__ = ["EmptyWindowWarning", "SingularDesignWarning"]


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
