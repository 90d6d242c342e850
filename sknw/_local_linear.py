"""Local linear kernel regression."""

import warnings
from numbers import Real

import numpy as np
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from ._regression import NadarayaWatsonRegressor
from ._weights import Head, kernel_sums
from .exceptions import SingularDesignWarning
from .kernels import Boxcar


class LocalLinearRegressor(NadarayaWatsonRegressor):
    r"""Local linear kernel regression.

    At each query, the intercept of a kernel-weighted least-squares hyperplane
    centred at the query. Unlike the local-constant (Nadaraya--Watson)
    estimate, it has no first-order bias at the boundary of the data or where
    the design is uneven, and it reproduces linear functions exactly.

    Parameters
    ----------
    kernel : str or Kernel, default="gaussian"
        As in :class:`NadarayaWatsonRegressor`.
    bandwidth : {"scott", "silverman"}, float or array-like, default="scott"
        As in :class:`NadarayaWatsonRegressor`.
    metric : str or callable, default="euclidean"
        As in :class:`NadarayaWatsonRegressor`. The local hyperplane is fitted
        in the coordinates of the features (divided by a per-feature
        bandwidth); the metric only shapes the weights.
    metric_params : dict, default=None
        Keyword arguments of the metric.
    empty_window : {"nearest", "mean", "nan", "raise"}, default="nearest"
        As in :class:`NadarayaWatsonRegressor`, for queries whose window holds
        no training point.
    min_eigenvalue : float, default=1e-8
        A local design is singular when the smallest eigenvalue of the
        kernel-weighted covariance of the (scaled) features in the window,
        relative to its largest, is at most this (or when the window holds
        fewer than ``n_features + 1`` points of positive weight): too few or
        collinear neighbours. Such queries get the local-constant estimate
        instead, and a :class:`~sknw.exceptions.SingularDesignWarning` says how
        many.
    algorithm : {"auto", "brute", "tree", "sorted"}, default="auto"
        As in :class:`NadarayaWatsonRegressor` (``"sorted"`` is not available:
        it sums the targets only, not the moments a local line needs, and
        ``"auto"`` never picks it here).
    n_jobs : int, default=None
        As in :class:`NadarayaWatsonRegressor`.

    Attributes
    ----------
    kernel_ : Kernel
        The resolved kernel object.
    bandwidth_ : float or ndarray of shape (n_features,)
        The resolved bandwidth.
    algorithm_ : {"brute", "tree"}
        The summation used by predictions.
    metric_params_ : dict
        Metric parameters used, including data-dependent defaults.
    X_fit_ : ndarray of shape (n_samples, n_features)
        Training inputs.
    y_fit_ : ndarray of shape (n_samples,) or (n_samples, n_outputs)
        Training targets.
    sample_weight_ : ndarray of shape (n_samples,) or None
        Training sample weights.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit; only defined when ``X`` has feature
        names that are all strings.

    See Also
    --------
    NadarayaWatsonRegressor : The local-constant estimate.

    Notes
    -----
    With weights :math:`k_j = w_j K(d(q, x_j)/h)` and :math:`z_j = x_j - q`
    (features divided by a per-feature bandwidth), the estimate is
    :math:`\hat m(q) = \hat\beta_0` of

    .. math::

        (\hat\beta_0, \hat\beta) = \arg\min \sum_j k_j
            (y_j - \beta_0 - \beta^\top z_j)^2,

    computed from the kernel-weighted moments of the training points
    (:math:`\sum k_j`, :math:`\sum k_j z_j`, :math:`\sum k_j z_j z_j^\top` and
    their products with :math:`y_j`) through the same tiled core as the
    local-constant estimate: centred on the training mean and divided by the
    bandwidth, then moved to each query, and solved as a Schur complement in
    the local covariance.

    References
    ----------
    .. [1] J. Fan and I. Gijbels, "Local Polynomial Modelling and Its
       Applications", Chapman & Hall, 1996.

    Examples
    --------
    >>> import numpy as np
    >>> from sknw import LocalLinearRegressor, NadarayaWatsonRegressor
    >>> X = np.linspace(0, 1, 21).reshape(-1, 1)
    >>> y = 3 * X[:, 0] + 1
    >>> ll = LocalLinearRegressor(bandwidth=0.2).fit(X, y)
    >>> ll.predict([[0.0], [1.0]]).round(10)  # exact on a line, even at the edges
    array([1., 4.])
    >>> NadarayaWatsonRegressor(bandwidth=0.2).fit(X, y).predict([[0.0]]).round(3)
    array([1.433])
    """

    _parameter_constraints = {
        **NadarayaWatsonRegressor._parameter_constraints,
        "min_eigenvalue": [Interval(Real, 0, 1, closed="both")],
    }

    def __init__(
        self,
        *,
        kernel="gaussian",
        bandwidth="scott",
        metric="euclidean",
        metric_params=None,
        empty_window="nearest",
        min_eigenvalue=1e-8,
        algorithm="auto",
        n_jobs=None,
    ):
        super().__init__(
            kernel=kernel,
            bandwidth=bandwidth,
            metric=metric,
            metric_params=metric_params,
            empty_window=empty_window,
            algorithm=algorithm,
            n_jobs=n_jobs,
        )
        self.min_eigenvalue = min_eigenvalue

    # The sorted path sums the targets only, not the moments a local line needs.
    _supports_sorted = False

    def _coordinates(self, A, centre):
        """Features centred on the training mean, divided by the bandwidth."""
        bw = self.bandwidth_
        scale = np.asarray(bw, dtype=np.float64) if np.ndim(bw) else float(bw)
        return (np.asarray(A, dtype=np.float64) - centre) / scale

    def predict(self, X):
        """Local linear estimate at each query.

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
        Q = self._validate_queries(X)
        y = self.y_fit_.reshape(self.y_fit_.shape[0], -1)
        n, d = self.X_fit_.shape
        k = y.shape[1]
        centre = self.X_fit_.mean(axis=0)
        Z = self._coordinates(self.X_fit_, centre)
        # Moments per training point: y, z, z y, z z^T (upper triangle).
        iu = np.triu_indices(d)
        V = np.hstack(
            [
                y,
                Z,
                (Z[:, :, None] * y[:, None, :]).reshape(n, d * k),
                Z[:, iu[0]] * Z[:, iu[1]],
            ]
        )
        # Kernel-weighted means of the moments; empty windows follow the
        # empty_window policy (their estimate is then that of the moments'
        # fallback, whose covariance is checked below).
        A = self._weighted_average(Q, V)
        mean_y = A[:, :k]
        mean_z = A[:, k : k + d]
        mean_zy = A[:, k + d : k + d + d * k].reshape(-1, d, k)
        mean_zz = np.empty((A.shape[0], d, d))
        upper = A[:, k + d + d * k :]
        mean_zz[:, iu[0], iu[1]] = upper
        mean_zz[:, iu[1], iu[0]] = upper
        cov = mean_zz - mean_z[:, :, None] * mean_z[:, None, :]
        cross = mean_zy - mean_z[:, :, None] * mean_y[:, None, :]
        estimate = mean_y.copy()
        finite = np.all(np.isfinite(cov), axis=(1, 2))
        ok = finite & ~self._singular(cov, Q)
        if ok.any():
            slope = np.linalg.solve(cov[ok], cross[ok])  # (m, d, k)
            # The intercept at the query: mean_y - slope . (mean_z - z_q).
            dz = mean_z[ok] - self._coordinates(Q[ok], centre)
            estimate[ok] = mean_y[ok] - np.einsum("md,mdk->mk", dz, slope)
        n_singular = int((finite & ~ok).sum())
        if n_singular:
            warnings.warn(
                f"{n_singular} of {Q.shape[0]} queries have a singular local "
                "design (too few or collinear training points in their window); "
                "they get the local-constant estimate.",
                SingularDesignWarning,
                stacklevel=2,
            )
        return estimate.ravel() if self.y_fit_.ndim == 1 else estimate

    def _singular(self, cov, Q):
        """Queries whose local design cannot determine a hyperplane."""
        d = cov.shape[1]
        eig = np.linalg.eigvalsh(np.where(np.isfinite(cov), cov, 0.0))
        top = eig[:, -1]
        small = ~(top > 0) | ~(eig[:, 0] > self.min_eigenvalue * top)
        return small | (self._window_counts(Q) < d + 1)

    def _window_counts(self, Q):
        """Training points of positive weight with a non-zero kernel weight.

        For a compact kernel, one boxcar pass over the support (``u < 1``,
        where the compact kernels are positive); every point otherwise.
        """
        w = self.sample_weight_
        positive = np.ones(self.X_fit_.shape[0]) if w is None else 1.0 * (w > 0)
        head = self._head()
        if not np.isfinite(head.kernel.support):
            return np.full(Q.shape[0], positive.sum())
        window = Head(Boxcar(), head.divisor * head.kernel.support)
        ((S, _, M),) = kernel_sums(
            Q,
            self.X_fit_,
            positive[:, None],
            [window],
            metric=self.metric,
            metric_params=self.metric_params_,
            scale=self._scale(),
        )
        # The boxcar's log weight is 0 inside: the shifted sum is the count.
        return np.where(np.isfinite(M), S[:, 0], 0.0)
