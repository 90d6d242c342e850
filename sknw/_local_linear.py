"""Local linear kernel regression."""

from dataclasses import dataclass
from numbers import Real

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions

from ._base import NadarayaWatsonBase
from ._regression import NadarayaWatsonRegressor
from ._selection import CVSelectionMixin, cv_parameter_constraints
from ._sums import Head, algorithms, power_of_two_scale
from ._uncertainty import LocalFit
from .exceptions import SingularDesignWarning, warn
from .kernels import KERNELS, Boxcar


def outer(a, b):
    """Batched outer products of the rows of ``a`` (m, d) and ``b`` (m, d)."""
    return a[:, :, None] * b[:, None, :]


def symmetric(upper, d):
    """Symmetric (m, d, d) matrices from their upper triangles."""
    iu = np.triu_indices(d)
    out = np.empty((upper.shape[0], d, d))
    out[:, iu[0], iu[1]] = upper
    out[:, iu[1], iu[0]] = upper
    return out


def coordinate_frame(X):
    """Centre and unit of the local fit's coordinates, per feature: the
    mid-range and a power of two near the largest distance from it, so that
    coordinates lie within [-2, 2] (exact division: the local fit does not
    depend on a linear change of coordinates, and these keep the moments of
    order one at any scale of the data or the bandwidth)."""
    X = np.asarray(X, dtype=np.float64)
    lo, hi = X.min(axis=0), X.max(axis=0)
    centre = lo / 2 + hi / 2
    half = np.maximum(hi - centre, centre - lo)
    return centre, power_of_two_scale(half[None, :], axis=0)


def moment_columns(Z, yc, squares=False):
    """Per-point moments ``y, z, z y, z z^T`` (upper triangle) and, with
    ``squares``, ``y**2``, as the columns of one array; and the column bounds
    of each block."""
    n, d = Z.shape
    k = yc.shape[1]
    iu = np.triu_indices(d)
    blocks = [
        yc,
        Z,
        (Z[:, :, None] * yc[:, None, :]).reshape(n, d * k),
        Z[:, iu[0]] * Z[:, iu[1]],
    ]
    if squares:
        blocks.append(yc * yc)
    return np.hstack(blocks), np.cumsum([0] + [b.shape[1] for b in blocks])


#: Rounding in the local covariance (differences of kernel-weighted moments)
#: is below this many units of roundoff of the mean squared coordinate.
COVARIANCE_ROUNDING = 1e3


@dataclass
class LocalSolution:
    """The local linear fit at each query from the kernel-weighted moments."""

    mean_y: np.ndarray
    mean_z: np.ndarray
    cov: np.ndarray
    cross: np.ndarray
    a: np.ndarray
    ok: np.ndarray
    finite: np.ndarray
    estimate: np.ndarray


def local_solution(A, cols, d, k, Zq, min_eigenvalue, few=None, to_bandwidth=None):
    """Solve the local least-squares problems from averaged moments.

    ``A`` holds the kernel-weighted averages of :func:`moment_columns` at the
    queries, whose coordinates are ``Zq`` (those of the moments).
    ``to_bandwidth`` (d,) takes these coordinates to bandwidth units (None:
    they are), where a design is singular when the smallest eigenvalue of the
    local covariance is at most ``min_eigenvalue`` times the largest, or
    within rounding of zero, or (``few``) the window holds fewer than d + 1
    points. Singular designs keep the local-constant estimate. Estimates are
    of the centred targets.
    """
    mean_y = A[:, cols[0] : cols[1]]
    mean_z = A[:, cols[1] : cols[2]]
    mean_zy = A[:, cols[2] : cols[3]].reshape(-1, d, k)
    second = symmetric(A[:, cols[3] : cols[4]], d)
    cov = second - outer(mean_z, mean_z)
    cross = mean_zy - mean_z[:, :, None] * mean_y[:, None, :]
    finite = np.all(np.isfinite(cov), axis=(1, 2))
    t = np.ones(d) if to_bandwidth is None else to_bandwidth
    scaled = np.where(finite[:, None, None], cov, 0.0) * outer(t[None], t[None])
    eig = np.linalg.eigvalsh(scaled)
    top = eig[:, -1]
    with np.errstate(invalid="ignore"):
        rounding = (
            COVARIANCE_ROUNDING
            * np.finfo(np.float64).eps
            * np.einsum("mii,i->m", np.where(finite[:, None, None], second, 0.0), t * t)
        )
    singular = ~(top > 0) | ~(eig[:, 0] > np.maximum(min_eigenvalue * top, rounding))
    if few is not None:
        singular |= few
    ok = finite & ~singular
    estimate = mean_y.copy()
    # a = C^{-1} (z_bar - z_q): the estimate is mean_y - a . cross.
    a = np.zeros((A.shape[0], d))
    if ok.any():
        dz = mean_z[ok] - Zq[ok]
        a[ok] = np.linalg.solve(cov[ok], dz[:, :, None])[:, :, 0]
        estimate[ok] = mean_y[ok] - np.einsum("md,mdk->mk", a[ok], cross[ok])
    return LocalSolution(mean_y, mean_z, cov, cross, a, ok, finite, estimate)


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
    noise_variance : {"local", "global"} or float, default="local"
        The noise variance behind the standard errors, as in
        :class:`NadarayaWatsonRegressor`; ``"local"`` is the weighted residual
        mean square of each query's local linear fit, corrected for its
        degrees of freedom.
    algorithm : {"auto", "brute", "tree"}, default="auto"
        As in :class:`NadarayaWatsonRegressor`. The one-feature backends
        (``"sorted"``, ``"fgt"``, ``"binned"``) are not available: their
        indexes hold the targets only, not the moments a local line needs.
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
    metric_ : str or callable
        The metric used: ``metric`` at fit. Predictions read it (and
        ``metric_params_``), so changing ``metric`` takes effect at the next
        fit.
    metric_params_ : dict
        Metric parameters used, including data-dependent defaults.
    X_fit_ : ndarray of shape (n_samples, n_features)
        Training inputs.
    y_fit_ : ndarray of shape (n_samples,) or (n_samples, n_outputs)
        Training targets.
    sample_weight_ : ndarray of shape (n_samples,) or None
        Training sample weights.
    noise_variance_ : ndarray of shape (n_outputs,) or None
        The noise variance per output for ``noise_variance="global"`` or a
        float; ``None`` for ``"local"``.
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

    # The local fit sums moments of its own (the sorted and fgt indexes hold
    # the targets only) and has no tolerance parameter.
    _algorithms = algorithms(fixed_values=False, tolerance=False)
    _parameter_constraints = {
        **{
            k: v
            for k, v in NadarayaWatsonRegressor._parameter_constraints.items()
            if k != "binned_tol"
        },
        "algorithm": [StrOptions(set(_algorithms))],
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
        noise_variance="local",
        algorithm="auto",
        n_jobs=None,
    ):
        NadarayaWatsonBase.__init__(
            self,
            kernel=kernel,
            bandwidth=bandwidth,
            metric=metric,
            metric_params=metric_params,
            empty_window=empty_window,
            algorithm=algorithm,
            n_jobs=n_jobs,
        )
        self.noise_variance = noise_variance
        self.min_eigenvalue = min_eigenvalue

    # The local least-squares solves amplify the rounding of the moments: they
    # are summed in float64 whatever the input dtype.
    _float32_sums = False

    def predict(self, X, return_std=False):
        """Local linear estimate at each query.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
            Queries.
        return_std : bool, default=False
            Also return the pointwise standard error of each estimate (see
            :meth:`standard_error`).

        Returns
        -------
        y_pred : ndarray of shape (n_queries,) or (n_queries, n_outputs)
            Estimates, as float64.
        y_std : ndarray of shape (n_queries,) or (n_queries, n_outputs)
            Standard errors of the estimates; only with ``return_std=True``.
        """
        return super().predict(X, return_std=return_std)

    def _estimate(self, X):
        return self._local_fit(X, with_std=False).estimate

    def _local_fit(self, X, validated=False, with_std=True):
        """The local linear fit, and with ``with_std`` its weight sums.

        Moments are taken of the features in the frame of
        :func:`coordinate_frame` and of the targets centred on their mean,
        then moved to each query's local mean (see ``_uncertainty``).
        """
        Q = X if validated else self._validate_queries(X)
        ys, y_mean, y_scale = self._centred_targets()
        d, k = self.n_features_in_, ys.shape[1]
        centre, unit = coordinate_frame(self.X_fit_)
        Z = (np.asarray(self.X_fit_, dtype=np.float64) - centre) / unit
        V, cols = moment_columns(Z, ys, with_std)
        # Kernel-weighted means of the moments; empty windows follow the
        # empty_window policy (their estimate is then that of the moments'
        # fallback, whose covariance is checked below).
        if with_std:
            A, sq = self._weighted_average(Q, V, squared=True, validated=True)
        else:
            A = self._weighted_average(Q, V, validated=True)
        counts = self._window_counts(Q)
        sol = local_solution(
            A,
            cols,
            d,
            k,
            (np.asarray(Q, dtype=np.float64) - centre) / unit,
            self.min_eigenvalue,
            few=counts < d + 1,
            to_bandwidth=self._to_bandwidth(unit),
        )
        mean_y, mean_z, cov, cross = sol.mean_y, sol.mean_z, sol.cov, sol.cross
        a, ok, finite = sol.a, sol.ok, sol.finite
        # Empty windows are counted by the empty-window warning.
        n_singular = int((finite & ~ok & (counts > 0)).sum())
        if n_singular:
            warn(
                f"{n_singular} of {Q.shape[0]} queries have a singular local "
                "design (too few or collinear training points in their window); "
                "they get the local-constant estimate.",
                SingularDesignWarning,
            )
        estimate = sol.estimate * y_scale + y_mean
        if not with_std:
            return LocalFit(estimate, *([None] * 8))
        # Residual mean square of the weighted least-squares fit in the window.
        second = A[:, cols[4] : cols[5]]
        rss = second - mean_y * mean_y
        if ok.any():
            slope = np.linalg.solve(cov[ok], cross[ok])  # (m, d, k)
            rss[ok] -= np.einsum("mdk,mdk->mk", cross[ok], slope)
        # Squared-weight moments about the local mean: s0, s1 and S2.
        s0 = sq.total
        m1 = sq.average[:, cols[1] : cols[2]]
        m2 = symmetric(sq.average[:, cols[3] : cols[4]], d)
        s1 = m1 - s0[:, None] * mean_z
        S2 = (
            m2
            - outer(mean_z, m1)
            - outer(m1, mean_z)
            + s0[:, None, None] * outer(mean_z, mean_z)
        )
        spread = s0.copy()
        dof = s0.copy()
        leverage = sq.self_weight.copy()
        if ok.any():
            ao, So, Co = a[ok], S2[ok], cov[ok]
            spread[ok] += -2.0 * np.einsum("md,md->m", ao, s1[ok]) + np.einsum(
                "md,mde,me->m", ao, So, ao
            )
            dof[ok] += np.trace(np.linalg.solve(Co, So), axis1=1, axis2=2)
            leverage[ok] *= 1.0 + np.einsum("md,mde,me->m", ao, Co, ao)
        return LocalFit(
            estimate,
            rss,
            second,
            spread,
            dof,
            sq.inverse_weight,
            leverage,
            sq.undefined,
            y_scale,
        )

    def _to_bandwidth(self, unit):
        """Coordinates of the frame to bandwidth units, up to a common factor
        (only ratios matter to the singularity test)."""
        t = unit / np.asarray(self.bandwidth_, dtype=np.float64)
        t = np.broadcast_to(t, unit.shape)
        return t / np.max(t)

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
        ((S, _, M),) = self._kernel_sums(Q, positive[:, None], None, [window])
        # The boxcar's log weight is 0 inside: the shifted sum is the count.
        return np.where(np.isfinite(M), S[:, 0], 0.0)


class LocalLinearRegressorCV(CVSelectionMixin, LocalLinearRegressor):
    r"""Local linear regression with kernel and bandwidth chosen by CV.

    By default, exact leave-one-out cross-validation over a log-spaced grid of
    bandwidths around the rule of thumb, in one pass over the pairwise
    distances: the kernel-weighted moments of every training point's window
    are summed without the point itself, and each point's local least-squares
    problem is solved from them. Then it predicts like
    :class:`LocalLinearRegressor` with the best kernel and bandwidth.

    Parameters
    ----------
    kernels : str, Kernel or sequence of them, default=("gaussian",)
        Kernels to try: names from :data:`sknw.kernels.KERNELS` or
        :class:`~sknw.kernels.Kernel` instances.
    bandwidths : int, array-like or None, default=None
        As in :class:`NadarayaWatsonRegressorCV`: ``None`` or an int ``n``
        (default 30) for ``n`` multipliers, log-spaced by ``2**(1/j)`` or
        ``2**j`` over about 0.05 to 5, of each kernel's Scott-rule
        bandwidth; otherwise a sequence of bandwidths.
    cv : int, cross-validation generator, iterable or None, default=None
        ``None``: exact, efficient leave-one-out. Otherwise K-fold as in
        :func:`sklearn.model_selection.check_cv`, through the same machinery.
    scoring : str, callable or None, default=None
        As in :class:`NadarayaWatsonRegressorCV`; ``None`` is the negative
        mean squared error.
    refine : bool, default=False
        As in :class:`NadarayaWatsonRegressorCV`: a bounded continuous search
        of the log-bandwidth after the grid.
    metric : str or callable, default="euclidean"
        As in :class:`LocalLinearRegressor`.
    metric_params : dict, default=None
        Keyword arguments of the metric.
    empty_window : {"nearest", "mean", "nan", "raise"}, default="nearest"
        As in :class:`NadarayaWatsonRegressorCV`, for windows that are empty
        once a point is left out: ``"nearest"`` and ``"mean"`` score the
        fallback estimate; ``"nan"`` and ``"raise"`` score NaN, which ranks a
        candidate last.
    min_eigenvalue : float, default=1e-8
        As in :class:`LocalLinearRegressor`. Left-out points whose local
        design is singular are scored with the local-constant estimate, as
        they would be predicted (without a warning during the search).
    noise_variance : {"local", "global"} or float, default="local"
        As in :class:`LocalLinearRegressor`, with the selected kernel and
        bandwidth.
    algorithm : {"auto", "brute", "tree"}, default="auto"
        As in :class:`LocalLinearRegressor`, for predictions.
    n_jobs : int, default=None
        As in :class:`NadarayaWatsonRegressorCV`: parallel workers for the
        cross-validation passes and for predictions.

    Attributes
    ----------
    kernel_ : Kernel
        The selected kernel.
    bandwidth_ : float or ndarray of shape (n_features,)
        The selected bandwidth.
    best_score_ : float
        Cross-validated score of the selected kernel and bandwidth.
    best_index_ : int
        Index of the best grid candidate in ``cv_results_``.
    cv_results_ : dict of ndarrays
        As in :class:`NadarayaWatsonRegressorCV`.
    algorithm_ : {"brute", "tree"}
        The summation used by predictions.
    metric_ : str or callable
        The metric used: ``metric`` at fit. Predictions read it (and
        ``metric_params_``), so changing ``metric`` takes effect at the next
        fit.
    metric_params_ : dict
        Metric parameters used, including data-dependent defaults.
    X_fit_ : ndarray of shape (n_samples, n_features)
        Training inputs.
    y_fit_ : ndarray of shape (n_samples,) or (n_samples, n_outputs)
        Training targets.
    sample_weight_ : ndarray of shape (n_samples,) or None
        Training sample weights.
    noise_variance_ : ndarray of shape (n_outputs,) or None
        As in :class:`LocalLinearRegressor`.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit; only defined when ``X`` has feature
        names that are all strings.

    See Also
    --------
    LocalLinearRegressor : The estimator with a fixed kernel and bandwidth.
    NadarayaWatsonRegressorCV : The same selection for the local-constant
        estimate.

    Notes
    -----
    The leave-one-out estimate at :math:`x_i` is the intercept of the
    kernel-weighted least-squares fit at :math:`x_i` to the other points: the
    moments of :class:`LocalLinearRegressor` (Notes) with point :math:`i`'s
    term left out of every sum (one unit of its weight, for frequency
    weights). Each candidate costs one kernel evaluation per pair, and one
    small linear system per point.

    Examples
    --------
    >>> import numpy as np
    >>> from sknw import LocalLinearRegressorCV
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0, 3, (200, 1))
    >>> y = 2 * X[:, 0] + np.sin(3 * X[:, 0]) + rng.normal(0, 0.3, 200)
    >>> reg = LocalLinearRegressorCV(kernels=["gaussian", "epanechnikov"])
    >>> reg = reg.fit(X, y)
    >>> reg.kernel_, reg.bandwidth_.round(3)
    (Epanechnikov(), array([0.225]))
    >>> len(reg.cv_results_["mean_test_score"])
    60
    """

    _parameter_constraints = cv_parameter_constraints(
        LocalLinearRegressor._parameter_constraints,
        set(KERNELS),
        LocalLinearRegressor._algorithms,
    )

    def __init__(
        self,
        *,
        kernels=("gaussian",),
        bandwidths=None,
        cv=None,
        scoring=None,
        refine=False,
        metric="euclidean",
        metric_params=None,
        empty_window="nearest",
        min_eigenvalue=1e-8,
        noise_variance="local",
        algorithm="auto",
        n_jobs=None,
    ):
        super().__init__(
            kernels=kernels,
            bandwidths=bandwidths,
            cv=cv,
            scoring=scoring,
            refine=refine,
            metric=metric,
            metric_params=metric_params,
            empty_window=empty_window,
            algorithm=algorithm,
            n_jobs=n_jobs,
        )
        self.min_eigenvalue = min_eigenvalue
        self.noise_variance = noise_variance

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Select kernel and bandwidth by cross-validation, then fit.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative frequency weights, used in the weighted sums and in the
            scores.

        Returns
        -------
        self : LocalLinearRegressorCV
            The fitted estimator.
        """
        return self._fit_regression(X, y, sample_weight)

    def _cv_values(self, X, Y, w):
        """Moments of the local fit (in the frame of :func:`coordinate_frame`),
        and the local linear estimates from their left-out averages."""
        centre, unit = coordinate_frame(X)
        Z = (np.asarray(X, dtype=np.float64) - centre) / unit
        mean = np.average(Y, axis=0, weights=w)
        V, cols = moment_columns(Z, Y - mean)
        d, k = Z.shape[1], Y.shape[1]

        def finish(averages, cands, empty):
            out = np.empty((len(cands), Z.shape[0], k))
            for i, cand in enumerate(cands):
                t = unit / np.asarray(cand["bandwidth"], dtype=np.float64)
                t = np.broadcast_to(t, (d,))
                sol = local_solution(
                    averages[i],
                    cols,
                    d,
                    k,
                    Z,
                    self.min_eigenvalue,
                    few=empty[i],
                    to_bandwidth=t / np.max(t),
                )
                out[i] = sol.estimate + mean
            return out

        return V, finish
