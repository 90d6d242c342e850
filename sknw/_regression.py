"""Nadaraya--Watson kernel regression."""

import numpy as np
from sklearn.base import RegressorMixin, _fit_context
from sklearn.utils.validation import check_is_fitted, validate_data

from ._base import NadarayaWatsonBase


class NadarayaWatsonRegressor(RegressorMixin, NadarayaWatsonBase):
    r"""Nadaraya--Watson kernel regression (local-constant regression).

    The estimate at a query :math:`q` is the kernel-weighted average of the
    training targets: attention pooling with the query attending to the training
    inputs (keys) and averaging their targets (values).

    Parameters
    ----------
    kernel : str or Kernel, default="gaussian"
        A kernel name from :data:`sknw.kernels.KERNELS` (``"gaussian"``,
        ``"epanechnikov"``, ``"boxcar"``, ``"triangular"``, …) or a
        :class:`sknw.kernels.Kernel` instance, including user subclasses.
    bandwidth : float, array-like of shape (n_features,) or {"scott", \
            "silverman"}, default="scott"
        A float divides the distances: :math:`u = d(x, q) / h`. An array gives
        one bandwidth per feature: features are divided by it before distances
        are computed (:math:`u = d(x / h, q / h)`; for the euclidean metric, a
        product-like anisotropic kernel). A rule name computes a per-feature
        bandwidth from the spread of each feature (see Notes).
    metric : str or callable, default="euclidean"
        Any metric of :func:`scipy.spatial.distance.cdist`.
    metric_params : dict, default=None
        Keyword arguments of the metric, e.g. ``{"p": 1.5}`` for ``"minkowski"``
        or ``{"VI": ...}`` for ``"mahalanobis"``. For ``"mahalanobis"`` and
        ``"seuclidean"`` the defaults (``VI``, ``V``) are computed once at fit
        time from the weighted training data (ddof=0), never per query batch.
    empty_window : {"nearest", "mean", "nan", "raise"}, default="nearest"
        What a query gets when no training point has a non-zero weight (only
        possible with a compact kernel): the (weighted) average of the targets
        of its nearest training points (the limit of a vanishing Gaussian
        bandwidth), the weighted mean of all targets, NaN, or a ``ValueError``.
        Every policy but ``"raise"`` emits an
        :class:`~sknw.exceptions.EmptyWindowWarning` naming how many queries
        were affected.

    Attributes
    ----------
    kernel_ : Kernel
        The resolved kernel object (a copy: the ``kernel`` parameter is never
        modified).
    bandwidth_ : float or ndarray of shape (n_features,)
        The resolved bandwidth: a float for a scalar ``bandwidth``, otherwise one
        bandwidth per feature.
    metric_params_ : dict
        Metric parameters used, including data-dependent defaults.
    X_fit_ : ndarray of shape (n_samples, n_features)
        Training inputs (the keys).
    y_fit_ : ndarray of shape (n_samples,) or (n_samples, n_outputs)
        Training targets (the values), as float64.
    sample_weight_ : ndarray of shape (n_samples,) or None
        Training sample weights, ``None`` when not given.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of features seen during fit; only defined when ``X`` has feature
        names that are all strings.

    See Also
    --------
    NadarayaWatsonClassifier : Kernel-weighted class frequencies.
    sklearn.neighbors.KNeighborsRegressor : Averages a fixed number of
        neighbours.
    sklearn.neighbors.RadiusNeighborsRegressor : Averages neighbours within a
        radius (the boxcar kernel).

    Notes
    -----
    With training points :math:`x_j`, targets :math:`y_j` and sample weights
    :math:`w_j`, the estimate at :math:`q` is

    .. math::

        \hat m(q) = \frac{\sum_j w_j K(d(q, x_j) / h)\, y_j}
                         {\sum_j w_j K(d(q, x_j) / h)}.

    Weights are computed in the log domain with a per-query shift, so a
    Gaussian with a tiny bandwidth tends to the nearest neighbour's target
    instead of 0/0. Memory stays within a few tiles of queries by training
    points (bounded by scikit-learn's ``working_memory``).

    The rules of thumb compute, per feature :math:`j` with standard deviation
    :math:`s_j`, interquartile range :math:`IQR_j`, :math:`d` features and
    :math:`n = \sum_j w_j`: ``"scott"`` :math:`s_j n^{-1/(d+4)}`,
    ``"silverman"`` :math:`0.9 \min(s_j, IQR_j / 1.349) n^{-1/(d+4)}`, each
    multiplied by the ratio of the kernel's canonical scale to the Gaussian's.

    References
    ----------
    .. [1] E. A. Nadaraya, "On estimating regression", Theory of Probability and
       its Applications, 9(1), 1964.
    .. [2] G. S. Watson, "Smooth regression analysis", Sankhya A, 26(4), 1964.
    .. [3] A. Zhang, Z. C. Lipton, M. Li, A. J. Smola, "Dive into Deep
       Learning", section "Attention Pooling by Similarity".

    Examples
    --------
    >>> import numpy as np
    >>> from sknw import NadarayaWatsonRegressor
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]])
    >>> y = np.array([0.0, 1.0, 4.0, 9.0])
    >>> reg = NadarayaWatsonRegressor(bandwidth=0.5).fit(X, y)
    >>> reg.predict([[1.5]])
    array([2.535...])
    >>> reg.attention_weights([[1.5]]).round(3)
    array([[0.009, 0.491, 0.491, 0.009]])
    """

    def __init__(
        self,
        *,
        kernel="gaussian",
        bandwidth="scott",
        metric="euclidean",
        metric_params=None,
        empty_window="nearest",
    ):
        super().__init__(
            kernel=kernel,
            bandwidth=bandwidth,
            metric=metric,
            metric_params=metric_params,
            empty_window=empty_window,
        )

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Store the training data and resolve kernel, bandwidth and metric.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights of the training points (frequency weights).

        Returns
        -------
        self : NadarayaWatsonRegressor
            The fitted estimator.
        """
        X, y = validate_data(
            self,
            X,
            y,
            dtype=[np.float64, np.float32],
            multi_output=True,
            y_numeric=True,
        )
        self._fit_common(X, sample_weight)
        self.y_fit_ = np.asarray(y, dtype=np.float64)
        return self

    def predict(self, X):
        """Kernel-weighted average of the training targets at each query.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
            Queries.

        Returns
        -------
        ndarray of shape (n_queries,) or (n_queries, n_outputs)
            Estimates, as float64.
        """
        check_is_fitted(self)
        y = self.y_fit_
        avg = self._weighted_average(X, y.reshape(y.shape[0], -1))
        return avg.ravel() if y.ndim == 1 else avg

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags
