"""Nadaraya--Watson kernel regression."""

from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
from scipy.stats import norm
from sklearn.base import RegressorMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ._bandwidth.rules import BANDWIDTH_RULES
from ._base import NadarayaWatsonBase
from ._docs import fill_docstring
from ._features.mixed import DISCRETE_CONSTRAINTS
from ._local.frame import LocalFrame
from ._local.gradient import local_constant_gradient
from ._local.robust import robustness_weights
from ._local.uncertainty import LocalFit, global_noise_variance, local_noise_variance
from ._selection.passes import NW_CV_ALGORITHMS, KernelPasses, cv_parameter_constraints
from ._smoother import FittedSmoother
from ._sums import power_of_two_scale
from ._validation import NotBoolInterval, check_sample_weight, validate_regression_data
from .exceptions import UndefinedStdWarning, warn
from .kernels import KERNELS


def centred_targets(values, sample_weight):
    """The targets ``values`` (columns) divided by a power of two per output
    (so that squares neither overflow nor underflow) minus their weighted
    mean; the mean (in the units of the targets) and the power of two."""
    scale = power_of_two_scale(values, axis=0)
    w = sample_weight
    if w is not None:
        w = w / power_of_two_scale(w)
    yn = values / scale
    mean = np.average(yn, axis=0, weights=w)
    # Differences of values within a factor 2 of 1 neither overflow nor,
    # squared, underflow (they are multiples of 2**-52 or 0).
    return yn - mean, mean * scale, scale


@dataclass(frozen=True, kw_only=True)
class LocalConstantFits:
    """The local-constant (Nadaraya--Watson) fits over a fitted smoother:
    ``smoother`` (:class:`~sknw._smoother.FittedSmoother`), ``values`` the
    targets as columns, ``frame`` the cells its gradient takes its sums
    about (:class:`~sknw._local.frame.LocalFrame`)."""

    smoother: FittedSmoother
    values: np.ndarray
    frame: LocalFrame

    def estimate(self, Q):
        """The estimates at the validated queries ``Q``."""
        return self.smoother.weighted_average(Q, self.values)

    def local_fit(self, Q):
        """The local-constant fit at the validated queries ``Q`` and its
        weight sums (see :mod:`sknw._local.uncertainty`)."""
        ys, mean, y_scale = centred_targets(self.values, self.smoother.sample_weight)
        k = ys.shape[1]
        avg, sq = self.smoother.weighted_average(
            Q, np.hstack([ys, ys * ys]), squared=True
        )
        fitted, second = avg[:, :k], avg[:, k:]
        return LocalFit(
            estimate=fitted * y_scale + mean,
            rss=second - fitted * fitted,
            second=second,
            spread=sq.total,
            dof=sq.total,
            inverse_weight=sq.inverse_weight,
            leverage=sq.self_weight,
            undefined=sq.undefined,
            y_scale=y_scale,
        )

    def gradient_rows(self, Q):
        """(m, k, d) gradient of the estimate in the continuous features at
        the validated queries ``Q``."""
        return local_constant_gradient(self.smoother, self.values, self.frame, Q)


class RegressionBase(RegressorMixin, NadarayaWatsonBase):
    """What the regressors share (not public): the fit, the estimates,
    their standard errors and intervals, the gradient, and the fit of the
    ``*CV`` regressors from their search."""

    _parameter_constraints = {
        **NadarayaWatsonBase._parameter_constraints,
        **DISCRETE_CONSTRAINTS,
        "bandwidth": [
            NotBoolInterval(Real, 0, np.inf, closed="neither"),
            StrOptions({*BANDWIDTH_RULES, "cv", "plugin"}),
            "array-like",
        ],
        "noise_variance": [
            StrOptions({"local", "global"}),
            Interval(Real, 0, None, closed="left"),
        ],
        "binned_tol": [Interval(Real, 0, 1, closed="neither")],
        "robust_iterations": [Interval(Integral, 0, None, closed="left")],
    }

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
            Non-negative weights of the training points: frequencies for the
            estimates and the rules of thumb (a weight of 2 is a repeated
            row), precisions for the standard errors (see
            :meth:`standard_error`). The choice of ``bandwidth="cv"`` is the
            same for integer weights as for the rows they repeat, and does
            not change when every weight is multiplied by one constant (see
            :class:`NadarayaWatsonRegressorCV`, Notes).

        Returns
        -------
        self : object
            The fitted estimator.
        """
        X = self._encode_features(X, reset=True)
        X, self.y_fit_ = validate_regression_data(self, X, y)
        self._fit_common(X, sample_weight)
        self._resolve_algorithm()
        self._robust_refit()
        self._fit_noise_variance()
        return self

    def _resolve_algorithm(self, scaling=None):
        super()._resolve_algorithm(scaling)
        # The cells the local fits and the gradient take their sums about
        # (in the continuous features).
        frame = LocalFrame.fit(
            self._continuous(self.X_fit_), self._continuous_bandwidth(), self.kernel_
        )
        self._fits = self._local_fits(frame)

    def _robust_refit(self):
        """Refit ``robust_iterations`` times with the robustness weights of
        the residuals at the training points (``robustness_weights_``,
        multiplied into ``sample_weight_``; see :mod:`sknw._local.robust`);
        the bandwidth (or span's windows, which the sample weights alone
        count) stays that of the first fit."""
        self.__dict__.pop("robustness_weights_", None)
        iterations = self._settings.robust_iterations
        if not iterations:
            return
        w0 = self.sample_weight_
        y = self._values()
        rows = np.arange(y.shape[0]) if w0 is None else np.flatnonzero(w0 > 0)
        for _ in range(iterations):
            fitted = self._fits.estimate(self.X_fit_[rows])
            fitted = np.reshape(fitted, (rows.size, -1))
            r = np.zeros(y.shape)
            r[rows] = y[rows] - fitted
            weights = robustness_weights(r, y, w0)
            self.sample_weight_ = weights if w0 is None else w0 * weights
            self._resolve_algorithm()
        self.robustness_weights_ = weights

    def _local_fits(self, frame):
        """The fits of the predictions: the local-constant ones
        (:class:`LocalConstantFits`)."""
        return LocalConstantFits(
            smoother=self._smoother, values=self._values(), frame=frame
        )

    def _values(self):
        """The values averaged by the weights: the targets, as columns."""
        return self.y_fit_.reshape(self.y_fit_.shape[0], -1)

    def predict(self, X, return_std=False):
        """The estimate at each query.

        Nadaraya--Watson's is the kernel-weighted average of the training
        targets; a local polynomial regressor's, the intercept of its local
        fit.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
            Queries.
        return_std : bool, default=False
            Also return the pointwise standard error of each estimate (see
            ``noise_variance`` and the Notes of :meth:`standard_error`).

        Returns
        -------
        y_pred : ndarray of shape (n_queries,) or (n_queries, n_outputs)
            Estimates, as float64.
        y_std : ndarray of shape (n_queries,) or (n_queries, n_outputs)
            Standard errors of the estimates; only with ``return_std=True``.
        """
        check_is_fitted(self)
        if not isinstance(return_std, (bool, np.bool_)):
            raise ValueError(
                f"return_std must be a bool (True or False), got {return_std!r}."
            )
        return self._batched(X, lambda Q: self._predict_rows(Q, return_std))

    def _predict_rows(self, Q, return_std):
        """``predict`` of validated queries."""
        if return_std:
            fit = self._fits.local_fit(Q)
            return self._shaped(fit.estimate), self._shaped(self._std(fit))
        return self._shaped(self._fits.estimate(Q))

    def _shaped(self, A):
        return A.ravel() if self.y_fit_.ndim == 1 else A

    def standard_error(self, X):
        r"""Pointwise standard error of the estimate at each query.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
            Queries.

        Returns
        -------
        ndarray of shape (n_queries,) or (n_queries, n_outputs)
            Standard errors. NaN, with an
            :class:`~sknw.exceptions.UndefinedStdWarning`, where no variance
            can be estimated (see Notes).

        Notes
        -----
        The estimate is a linear smoother, :math:`\hat m(q) = \sum_j \ell_j(q)
        y_j`. Sample weights are read as precisions, as in weighted least
        squares: point :math:`j` has noise of variance :math:`\sigma^2 / w_j`
        (standard errors do not change when all weights are multiplied by a
        constant). The variance of the estimate is
        :math:`\sigma^2(q) \sum_j \ell_j(q)^2 / w_j`, and the standard error
        is its square root. The noise variance :math:`\sigma^2(q)` (of an
        observation of weight one) is, by ``noise_variance``:

        - ``"local"``: the kernel-weighted mean squared residual of the local
          fit in the query's window, :math:`\sum_j p_j r_j^2` with
          :math:`p_j \propto w_j K_j`, divided by its expectation per unit
          noise variance, :math:`\sum_j p_j / w_j - \operatorname{tr}(G^{-1}
          G_2)` (:math:`G` and :math:`G_2` the local design's moments with the
          weights :math:`p_j` and :math:`p_j^2 / w_j`; :math:`1 - \sum_j
          \ell_j^2` for the local-constant fit without sample weights). It
          follows heteroscedastic noise. It is undefined (NaN) where the window
          holds, in effect, no more points than the local fit has parameters,
          where the residuals are below the rounding of the targets (or
          negative, for a kernel with negative values), and at queries with an
          empty window.
        - ``"global"``: one variance per output from the residuals at the
          training points, :math:`\sum_i w_i r_i^2 / \sum_i (1 - 2
          \ell_{ii} + w_i \sum_j \ell_{ij}^2 / w_j)` (the linear smoother's
          degrees-of-freedom correction), computed in ``fit``.
        - a float: that variance.

        The standard error measures the variance of the estimate, not its
        bias: where the function curves within the window (and at the
        boundary for the local-constant estimate), intervals built on it are
        centred off the true value. Smaller bandwidths trade bias for
        variance.
        """
        check_is_fitted(self)
        return self._batched(
            X, lambda Q: self._shaped(self._std(self._fits.local_fit(Q)))
        )

    def predict_interval(self, X, confidence=0.95):
        """Pointwise normal confidence intervals for the regression function.

        The estimate plus and minus the normal quantile times its standard
        error (see :meth:`standard_error` for what it covers: the variance of
        the estimate, not its smoothing bias).

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
            Queries.
        confidence : float, default=0.95
            Confidence level, in (0, 1).

        Returns
        -------
        lower, upper : ndarray of shape (n_queries,) or (n_queries, n_outputs)
            Bounds of the intervals.
        """
        check_is_fitted(self)
        if not (isinstance(confidence, Real) and 0 < confidence < 1):
            raise ValueError(f"confidence must be in (0, 1), got {confidence!r}.")
        z = norm.ppf(0.5 + confidence / 2)

        def bounds(Q):
            fit = self._fits.local_fit(Q)
            half = z * self._std(fit)
            return self._shaped(fit.estimate - half), self._shaped(fit.estimate + half)

        return self._batched(X, bounds)

    def effective_sample_size(self, X):
        r"""Effective number of observations behind the estimate at each query.

        :math:`1 / \sum_j \ell_j(q)^2 / w_j`: the number of observations of
        weight one whose plain mean would have the estimate's variance (see
        :meth:`standard_error`). For the local-constant estimate it is
        :math:`(\sum_j w_j K_j)^2 / \sum_j w_j K_j^2`: the weight of the
        point for a single point in the window, the total sample weight for a
        flat kernel covering all the data.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
            Queries.

        Returns
        -------
        ndarray of shape (n_queries,)
            Effective numbers of observations (NaN for an empty window).
        """
        check_is_fitted(self)

        def sizes(Q):
            fit = self._fits.local_fit(Q)
            with np.errstate(divide="ignore", under="ignore"):
                return self._smoother.weight_unit() / fit.spread

        return self._batched(X, sizes)

    def _search_targets(self, y):
        """``(kind, values, classes)`` of a search on the targets ``y``."""
        return "regression", y.reshape(y.shape[0], -1), None

    def _search_passes(self, smoothing):
        """The passes of a search of this estimator's candidates: weighted
        averages of the targets, whose self weights give the in-sample
        criteria (leave-one-out drops each point's own weight)."""
        return KernelPasses(
            smoothing=smoothing, accepted=NW_CV_ALGORITHMS, self_weights=True
        )

    def _fit_noise_variance(self):
        """Resolve ``noise_variance_`` (the global one needs a pass over X).

        ``_noise_sd`` holds its square root in units of the target scale of
        :func:`centred_targets`, per unit of the weights divided by the
        smoother's :meth:`~sknw._smoother.FittedSmoother.weight_unit` (None
        for ``"local"``): a square root, which neither overflows nor
        underflows where the weights are near the ends of the float range.
        """
        nv = self.noise_variance
        if nv == "local":
            self.noise_variance_ = self._noise_sd = None
            return
        c = self._smoother.weight_unit()
        if nv == "global":
            w = self.sample_weight_
            rows = slice(None) if w is None else w > 0
            fit = self._fits.local_fit(self.X_fit_[rows])
            y, y_scale = self._values()[rows], fit.y_scale
            wn = None if w is None else w[rows] / c
            scaled = global_noise_variance(fit, y, wn)
            if not np.all(np.isfinite(scaled)):
                warn(
                    "The global noise variance is undefined: the fit "
                    "interpolates the training targets (the bandwidth is too "
                    "small for any residual). Standard errors will be NaN.",
                    UndefinedStdWarning,
                )
            self._noise_sd = np.sqrt(scaled)
            with np.errstate(over="ignore", under="ignore"):
                self.noise_variance_ = scaled * y_scale**2 * c
            return
        # Per unit of weight: per unit of the divided weights, divided by c.
        _, _, y_scale = centred_targets(self._values(), self.sample_weight_)
        self._noise_sd = np.sqrt(float(nv)) / y_scale / np.sqrt(c)
        self.noise_variance_ = np.full(y_scale.shape, float(nv))

    def _std(self, fit):
        """Standard errors (m, k) of a :class:`LocalFit`, warning on NaN."""
        sd = self._noise_sd
        if sd is None:
            var, undefined = local_noise_variance(fit)
            sd = np.sqrt(var)
        else:
            sd = np.broadcast_to(sd, fit.estimate.shape)
            undefined = fit.undefined[:, None] | ~np.isfinite(sd)
        with np.errstate(invalid="ignore", over="ignore"):
            std = sd * np.sqrt(fit.spread)[:, None] * fit.y_scale
        std[undefined] = np.nan
        n_undefined = int(undefined.any(axis=1).sum())
        if n_undefined:
            warn(
                "Some queries have no standard "
                "error (NaN): their window is empty, or holds in effect no more "
                "observations than the local fit has parameters, or the "
                "residuals of the local fit are below the rounding of the "
                "targets, so no noise variance can be estimated there. A larger "
                "bandwidth gives them observations; outside empty windows, "
                "noise_variance='global' or a float gives them a variance.",
                UndefinedStdWarning,
                n_affected=n_undefined,
                n_queries=undefined.shape[0],
            )
        return std

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags

    def gradient(self, X):
        r"""Derivative of the estimate with respect to each feature.

        For :class:`NadarayaWatsonRegressor`, the analytic derivative of the
        local-constant estimate (a ratio of kernel sums) in each continuous
        feature of the query; for the local polynomial estimators, the slope
        coefficients of the local fit at the query (the estimate of the
        derivative of the regression function that statsmodels'
        ``KernelReg(reg_type="ll")`` and R's ``npreg(gradients=TRUE)``
        report as marginal effects).

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
            Queries.

        Returns
        -------
        ndarray of shape (n_queries, n_features) or (n_queries, n_outputs, n_features)
            ``gradient[i, j]`` (``gradient[i, o, j]`` with several outputs) is
            the derivative at query ``i`` with respect to feature ``j``; NaN
            for discrete features (not differentiable).

        Notes
        -----
        The metric must be a quadratic form of the differences of the
        features: euclidean, seuclidean, mahalanobis, sqeuclidean or
        minkowski with ``p=2`` (else a ValueError), and the kernel must define
        :meth:`~sknw.kernels.Kernel.derivative` (every built-in does). With
        weights :math:`k_j = w_j K(u_j)` and, for the euclidean metric,
        :math:`u_j = \lVert (x_j - q) / h \rVert`, the derivative of the
        local-constant estimate :math:`\hat m(q)` is

        .. math::

            \frac{\partial \hat m}{\partial q_f} = \frac{1}{h_f^2}
            \frac{\sum_j w_j H(u_j) (x_{jf} - q_f) (y_j - \hat m(q))}
                 {\sum_j w_j K(u_j)},
            \qquad H(u) = -K'(u) / u,

        one more head of the pass of the estimate (for the Gaussian,
        :math:`H = K`). The boxcar and constant kernels give 0 (their
        estimates are step functions, or constant). At a query on a training
        point, the triangular and Laplacian kernels, which have a kink there,
        give the mean of the one-sided derivatives for that point's term (it
        contributes 0); at the edge of the support of a compact kernel that
        does not vanish smoothly there (Epanechnikov, triangular, cosine), a
        point exactly at the edge contributes the outer one-sided derivative,
        0. With a ``span``, the bandwidth :math:`h(q)` (the distance to the
        ``k``-th nearest training point) moves with the query, which adds
        :math:`(\nabla h / h) \sum_j w_j G(u_j) (y_j - \hat m(q)) / \sum_j
        w_j K(u_j)`, :math:`G(u) = -u K'(u)`, a third head of the pass; where
        the ``k``-th neighbour changes, :math:`h` has a kink and the gradient
        is one-sided. Queries with an empty window follow ``empty_window``:
        the gradient of their estimate, 0 (``"nearest"``, ``"mean"``), NaN
        (``"nan"``) or an error (``"raise"``).

        Examples
        --------
        >>> import numpy as np
        >>> from sknw import LocalLinearRegressor, NadarayaWatsonRegressor
        >>> X = np.linspace(0, 1, 41).reshape(-1, 1)
        >>> y = X[:, 0] ** 2
        >>> ll = LocalLinearRegressor(bandwidth=0.1).fit(X, y)
        >>> ll.gradient([[0.5], [1.0]]).round(3)  # the derivative of x**2: 1, 2
        array([[1.   ],
               [1.795]])
        >>> nw = NadarayaWatsonRegressor(bandwidth=0.1).fit(X, y)
        >>> nw.gradient([[0.5], [1.0]]).round(3)  # flattened at the boundary
        array([[1.   ],
               [0.697]])
        """
        grad = self._batched(X, self._full_gradient)
        return grad[:, 0, :] if self.y_fit_.ndim == 1 else grad

    def _full_gradient(self, Q):
        """(m, k, n_features) gradient of validated queries, NaN for the
        discrete features."""
        grad = self._fits.gradient_rows(Q)
        if self._discrete is None:
            return grad
        out = np.full(grad.shape[:2] + (self.n_features_in_,), np.nan)
        out[:, :, list(self._discrete.continuous)] = grad
        return out

    def _fit_cv(self, X, y, sample_weight, groups):
        """The fit of a ``*CV`` regressor: validate, select kernel and
        bandwidth (see :meth:`_fit_searched`), then fit."""
        X = self._encode_features(X, reset=True)
        X, y = validate_regression_data(self, X, y)
        w = check_sample_weight(sample_weight, X.shape[0])
        self.y_fit_ = y
        self._fit_searched(X, y, w, groups)
        self._fit_noise_variance()
        return self


@fill_docstring
class NadarayaWatsonRegressor(RegressionBase):
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
    bandwidth : {"cv", "plugin", "scott", "silverman"}, float or array-like
        Default ``"cv"``: chosen at fit by exact leave-one-out cross-validation (the
        mean squared error) over the default grid of
        :class:`NadarayaWatsonRegressorCV`, 30 multipliers of the Scott-rule
        bandwidth of a robust spread (``min(sd, IQR / 1.349)`` per feature) of
        the kernel (so with its shape across features), the same
        choice as that estimator's; training sets of more than 4,000 points
        (50,000 with one feature and a kernel the sorted or fgt backends serve)
        score a deterministic subsample of that size, the choice rescaled by
        ``(n_sub / n) ** (1 / (n_features + 4))``, and those of fewer than 4
        points take Scott's rule. ``"plugin"`` (one feature, one target, no
        sample weights, at least 10 points): the direct plug-in bandwidth of
        local linear regression of Ruppert, Sheather and Wand (1995), as
        ``KernSmooth::dpill`` computes it (equal to it to about 1e-10 where
        ``dpill`` gives a number; its binned fits skip empty bins), in
        milliseconds; for other kernels than the Gaussian, through the
        ratio of canonical scales. It targets the mean integrated squared
        error of a smooth function with constant noise, and oversmooths
        functions whose roughness varies across the design. A float divides
        the distances:
        :math:`u = d(x, q) / h`. An array-like of shape (n_features,) gives one
        bandwidth per feature: features are divided by it before distances are
        computed (:math:`u = d(x / h, q / h)`; for the euclidean metric, an
        anisotropic kernel). A rule name computes a bandwidth from the spread
        of the data: one per feature for the coordinate metrics (euclidean,
        sqeuclidean, cityblock, chebyshev, minkowski), a float for the others
        (see Notes).
    {metric}
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
    noise_variance : {"local", "global"} or float, default="local"
        The noise variance behind the standard errors of ``predict(X,
        return_std=True)``, :meth:`standard_error` and :meth:`predict_interval`:
        estimated in each query's window (``"local"``, for heteroscedastic
        noise), once from the residuals at the training points (``"global"``,
        an extra pass over the training data in ``fit``), or given. It does not
        change the estimates.

    {algorithm}
        How the weights are summed (default ``"auto"``). ``"brute"``: every
        query against every training point, in tiles. ``"tree"``: for a kernel
        of finite support and a metric a KD-tree can search (euclidean,
        cityblock, chebyshev, minkowski), only the training points within each
        query's window, found with :class:`scipy.spatial.cKDTree`.
        ``"tiles"``: with at least two features, the Gaussian kernel and the
        euclidean metric, the training points in tiles of 64 in a KD-tree
        order, skipping for each query the tiles whose terms are all below
        about ``1e-12 / n`` of its largest (from the tiles' bounding boxes);
        each query's weight sum is within 1e-12 (relative) of the exact one,
        and its other sums within 1e-12 of the larger of the sum of their
        terms' magnitudes and the weight sum times the spread of the values,
        by a bound checked per query (the others are summed exactly).
        ``"sorted"``: with one feature and
        a kernel that is a polynomial on its support (boxcar, triangular,
        epanechnikov, biweight, triweight, tricube), exact sums from sorted
        training points and prefix sums of their moments, in
        :math:`O((n + m) \log n)`. ``"fgt"``: with one feature and the
        Gaussian kernel, the fast Gauss transform: Hermite expansions of the
        kernel about the centres of boxes one standard deviation wide (their
        moments computed at fit time), so that a query costs a few hundred
        operations per box within 12.5 standard deviations instead of one
        exponential per training point; each query's weight sum is within
        1e-12 (relative) of the exact one, and its other sums within 1e-12 of
        the weight sum times the largest absolute value, by a bound checked
        per query (queries where it fails, beyond the data, are summed
        exactly). ``"auto"``: from 512 training points, the sorted path or the
        fast Gauss transform where they apply (the latter when the boxes hold
        on average at least 8 training points), else the tree when the kernel
        and metric allow it and windows hold on average less than 5 % of the
        training points (probed at fit time on training points), else, from
        2048 training points, the tiles where a query meets at most 30 % of
        them (12 % with more than three features; probed likewise), else
        brute. All give the same estimates up to rounding: ``"sorted"``,
        ``"fgt"`` and ``"tiles"`` check a bound on their error per query
        (1e-11, 1e-12 and 1e-12 of the weight sum) and sum the queries that
        fail it term by term. ``"binned"``
        (never chosen by ``"auto"``): with one feature and the Gaussian
        kernel, an approximation within ``binned_tol`` by linear binning and
        FFT convolution, in :math:`O(n + m + G \log G)` for a grid of
        :math:`G` nodes. The choice is stored in ``algorithm_``.
    binned_tol : float, default=1e-6
        With ``algorithm="binned"``: the largest error of an estimate relative
        to the range of the targets (of each class's indicator for the
        classifier). The grid step follows from it; queries whose error bound
        exceeds it (in sparse regions or outside the data) are computed
        exactly.
    {n_jobs}
    {categorical_features}
    {ordered_features}
    {categorical_kernel}
    {ordered_kernel}

    {span}
    {robust_iterations}

    Attributes
    ----------
    kernel_ : Kernel
        The resolved kernel object (a copy: the ``kernel`` parameter is never
        modified).
    {algorithm_}
    bandwidth_ : float or ndarray of shape (n_features,)
        The resolved bandwidth: a float for a scalar ``bandwidth``, otherwise one
        bandwidth per feature.
    bandwidth_selection_ : dict
        How ``bandwidth_`` was chosen: ``"method"`` (``"leave-one-out"``,
        ``"scott"``, ``"silverman"`` or ``"given"``) and ``"n_samples"`` (the
        training points of positive weight it used); for leave-one-out also
        ``"scoring"``, ``"score"`` (the best mean score), ``"multiplier"`` (of
        the rule bandwidth), ``"n_candidates"`` and ``"rescaled"`` (the factor
        of a subsample, 1.0 without).
    {metric_}
    {metric_params_}
    X_fit_ : ndarray of shape (n_samples, n_features)
        Training inputs (the keys).
    y_fit_ : ndarray of shape (n_samples,) or (n_samples, n_outputs)
        Training targets (the values), as float64.
    {sample_weight_}
    {span_}
    {robustness_weights_}
    noise_variance_ : ndarray of shape (n_outputs,) or None
        The noise variance per output for ``noise_variance="global"`` or a
        float; ``None`` for ``"local"`` (estimated per query).
    {n_features_in_}
    {feature_names_in_}
    {feature_types_}
    {categories_}

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

    For coordinate metrics the rules of thumb compute, per feature :math:`j`
    with standard deviation :math:`s_j`, interquartile range :math:`IQR_j`,
    :math:`d` features and :math:`n = \sum_j w_j`: ``"scott"``
    :math:`s_j n^{-1/(d+4)}`, ``"silverman"``
    :math:`0.9 \min(s_j, IQR_j / 1.349) n^{-1/(d+4)}`. For ``"mahalanobis"``
    and ``"seuclidean"``, which standardise the features, they give the float
    :math:`c\, n^{-1/(d+4)}` (:math:`c` = 1 or 0.9), and for every other metric
    the same times the weighted median distance between training points. Each
    is multiplied by the ratio of the kernel's canonical scale to the
    Gaussian's, so that all kernels smooth about as much.

    References
    ----------
    .. [1] E. A. Nadaraya, "On estimating regression", Theory of Probability and
       its Applications, 9(1), 1964.
    .. [2] G\. S. Watson, "Smooth regression analysis", Sankhya A, 26(4), 1964.
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
        bandwidth="cv",
        metric="euclidean",
        metric_params=None,
        empty_window="nearest",
        noise_variance="local",
        algorithm="auto",
        binned_tol=1e-6,
        n_jobs=None,
        categorical_features="from_dtype",
        ordered_features=None,
        categorical_kernel="aitchison_aitken",
        ordered_kernel="wang_ryzin",
        span=None,
        robust_iterations=0,
    ):
        super().__init__(
            kernel=kernel,
            bandwidth=bandwidth,
            metric=metric,
            metric_params=metric_params,
            empty_window=empty_window,
            algorithm=algorithm,
            n_jobs=n_jobs,
            span=span,
        )
        self.robust_iterations = robust_iterations
        self.categorical_features = categorical_features
        self.ordered_features = ordered_features
        self.categorical_kernel = categorical_kernel
        self.ordered_kernel = ordered_kernel
        self.binned_tol = binned_tol
        self.noise_variance = noise_variance


@fill_docstring
class NadarayaWatsonRegressorCV(RegressionBase):
    r"""Nadaraya--Watson regression with kernel and bandwidth chosen by CV.

    By default, exact leave-one-out cross-validation over a log-spaced grid of
    bandwidths around the rule of thumb, computed in one pass over the pairwise
    distances: the leave-one-out estimate drops each point's own term from the
    weighted sums, so no refitting is needed. Then it predicts like
    :class:`NadarayaWatsonRegressor` with the best kernel and bandwidth.

    Parameters
    ----------
    {kernels}
    bandwidths : int, array-like or None, default=None
        ``None`` or an int ``n`` (default 30): ``n`` multipliers of each
        kernel's Scott-rule bandwidth of a robust spread (per feature for
        coordinate metrics, see :class:`NadarayaWatsonRegressor`), log-spaced
        by ``2**(1/j)`` or ``2**j`` over about 0.05 to 5 (30 multipliers:
        ``2**(1/4)`` apart, 0.041 to 6.2), extended 4 multipliers at a time at
        the spacing of the grid where the best is at an edge, until it is
        inside (or up to a factor ``2**10`` beyond either end, which warns;
        see ``cv_results_``), the chosen
        size then polished (see ``bandwidth_``). Otherwise a sequence of
        bandwidths, each a positive float or an array of shape
        (n_features,), tried with every kernel; a
        :class:`~sknw.exceptions.GridEdgeWarning` says when its best is its
        smallest or largest (of at least three sizes).
    cv : int, cross-validation generator, iterable or None, default=None
        ``None``: exact, efficient leave-one-out. Otherwise K-fold as in
        :func:`sklearn.model_selection.check_cv`, through the same machinery
        (one pass over the distances per fold).
    scoring : str, callable or None, default=None
        ``None``: negative mean squared error. A string names any scikit-learn
        scorer computable from predictions (``"r2"``,
        ``"neg_mean_absolute_error"``, …); a callable ``scorer(estimator, X,
        y)`` is called with an estimator whose ``predict`` returns ``X``, the
        out-of-sample predictions. Sample weights are passed to the scorer.
        ``"aicc"`` and ``"gcv"`` (with ``cv=None``): minus the in-sample
        criteria of the fit to every training point, the corrected AIC of
        Hurvich, Simonoff and Tsai (1998), ``log(RSS / n) + 1 + 2 (tr(H) + 1)
        / (n - tr(H) - 2)``, and generalised cross-validation, ``n RSS / (n -
        tr(H))**2``, with ``H`` the smoother matrix; the fitted values and
        ``tr(H)`` follow from the leave-one-out estimates and each point's
        self weight, from the same pass. With sample weights, ``n`` is their
        effective sample size ``(sum w)**2 / sum(w**2)`` (see Notes);
        several outputs average their criteria, an output fitted exactly by
        every candidate (a constant) counting alike for each.
    refine : bool, default=False
        After the grid, maximise the score over the log-bandwidth with the
        selected kernel: Brent's bounded search between the grid neighbours
        of the best for one coordinate; per feature, a bounded Nelder-Mead
        search within a factor 10^6 of the grid's best (features can get
        other ratios than the rule's). The grid's choice stays unless the
        score strictly improves; each step costs one cross-validation pass.
    {metric}
    {metric_params}
    empty_window : {"nearest", "mean", "nan", "raise"}, default="nearest"
        Policy for empty windows, in the cross-validation and at predict time.
        During cross-validation, ``"nearest"`` and ``"mean"`` estimate the
        held-out points as in :class:`NadarayaWatsonRegressor` (without the
        held-out point itself), while under ``"nan"`` and ``"raise"`` a
        candidate with any empty window scores NaN and ranks last. Empty
        windows are counted in ``cv_results_["n_empty_windows"]``; no warning
        is emitted during the search.

    noise_variance : {"local", "global"} or float, default="local"
        As in :class:`NadarayaWatsonRegressor`, with the selected kernel and
        bandwidth.
    {algorithm}
        Default ``"auto"``. As in :class:`NadarayaWatsonRegressor`, for the
        search's passes and the selected kernel and bandwidth (an explicit
        choice must serve every kernel in ``kernels``, checked before the
        search); ``"binned"``: each out-of-sample estimate within
        ``binned_tol`` of the exact one (approximate scores), and a bandwidth
        too small for its grid scored NaN.
    binned_tol : float, default=1e-6
        As in :class:`NadarayaWatsonRegressor`.
    n_jobs : int, default=None
        Number of parallel workers for the cross-validation passes and for
        predictions: the left-out points (or each fold's test points) and the
        queries are split into batches run through joblib (threads unless
        ``joblib.parallel_config`` says otherwise), each with one BLAS thread.
        ``None`` means 1 unless in a ``joblib.parallel_config`` context;
        ``-1`` means all processors. Results equal the serial ones up to
        rounding.
    categorical_features : "from_dtype", None or array-like, default="from_dtype"
        As in :class:`NadarayaWatsonRegressor`: the unordered categorical
        features.
    ordered_features : None or array-like, default=None
        As in :class:`NadarayaWatsonRegressor`: the ordered features.
    {categorical_kernel_brief}
    {ordered_kernel_cv}

    {spans}

    Attributes
    ----------
    {algorithm_}
    {kernel_cv}
    bandwidth_ : float or ndarray of shape (n_features,)
        The selected bandwidth: with a default grid and no shape or smoothing
        parameter searched, the chosen size polished between its grid
        neighbours by at most two parabolic steps over its logarithm, kept
        where the score strictly improves (not with ``refine=True``).
    {span_cv}
    {best_score_}
    best_index_ : int
        Index of the selected grid candidate in ``cv_results_`` (a polish
        starts there; see "Several local optima" in the user guide).
    cv_results_ : dict of ndarrays
        One entry per candidate (kernels outer, bandwidths inner):
        ``param_kernel``, ``param_bandwidth``, ``bandwidth_multiplier`` (of the
        rule bandwidth, NaN for a user grid), ``params``, ``mean_test_score``,
        ``rank_test_score``, ``n_empty_windows``; with K-fold also
        ``std_test_score`` and ``split{k}_test_score``. Ready for
        ``pandas.DataFrame``.
    {metric_}
    {metric_params_}
    {X_fit_}
    {y_fit_}
    {sample_weight_brief}
    noise_variance_ : ndarray of shape (n_outputs,) or None
        As in :class:`NadarayaWatsonRegressor`.
    {n_features_in_}
    {feature_names_in_}
    {feature_types_}
    {categories_}

    See Also
    --------
    NadarayaWatsonRegressor : The estimator with a fixed kernel and bandwidth.
    NadarayaWatsonClassifierCV : The same selection for classification.
    sklearn.linear_model.RidgeCV : Efficient leave-one-out over a grid, the
        model for this API.

    Notes
    -----
    With the point's own weight removed, the leave-one-out estimate is

    .. math::

        \hat m_{-i}(x_i) = \frac{\sum_{j \ne i} w_j K(d(x_i, x_j)/h)\, y_j}
                                {\sum_{j \ne i} w_j K(d(x_i, x_j)/h)}.

    Leave-one-out (``cv=None``) sees each distinct observation once: rows
    equal in inputs and targets are merged into one weighing their total
    weight (their number without weights), rows of weight 0 are dropped, and
    leaving an observation out removes all of it, so that its copies never
    predict it. The scores are weighted by the observations' weights; the
    default grid and the in-sample criteria count them by the weights'
    effective sample size ``(sum w)**2 / sum(w**2)``. Integer weights
    therefore choose as the rows they repeat, and multiplying every weight
    by one constant changes no score. The default grid multiplies Scott's
    rule of a robust spread (the smaller of the standard deviation and ``IQR
    / 1.349`` per feature), so that a few points far from the others do not
    move it away from the bulk of the data.

    The own term is masked before the per-query shift, so the estimate is
    exact for any bandwidth. Every candidate sharing a feature scaling reuses the
    same tiles of distances; memory stays within a few tiles plus the
    out-of-sample predictions of every candidate.

    Examples
    --------
    >>> from sknw import NadarayaWatsonRegressorCV
    >>> from sknw.datasets import make_d2l_sine
    >>> X, y, X_val, y_val = make_d2l_sine(random_state=0)
    >>> reg = NadarayaWatsonRegressorCV(kernels=["gaussian", "epanechnikov"])
    >>> reg = reg.fit(X, y)
    >>> reg.kernel_, reg.bandwidth_.round(3)
    (Gaussian(), array([0.16]))
    >>> len(reg.cv_results_["mean_test_score"])
    60
    >>> round(float(((reg.predict(X_val) - y_val) ** 2).mean()), 2)
    0.29
    """

    _algorithms = NW_CV_ALGORITHMS  # binned within binned_tol
    _parameter_constraints = cv_parameter_constraints(
        RegressionBase._parameter_constraints, set(KERNELS), _algorithms
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
        noise_variance="local",
        algorithm="auto",
        binned_tol=1e-6,
        n_jobs=None,
        categorical_features="from_dtype",
        ordered_features=None,
        categorical_kernel="aitchison_aitken",
        ordered_kernel="wang_ryzin",
        spans=None,
    ):
        self.kernels = kernels
        self.bandwidths = bandwidths
        self.cv = cv
        self.scoring = scoring
        self.refine = refine
        self.metric = metric
        self.metric_params = metric_params
        self.empty_window = empty_window
        self.algorithm = algorithm
        self.n_jobs = n_jobs
        self.spans = spans
        self.binned_tol = binned_tol
        self.categorical_features = categorical_features
        self.ordered_features = ordered_features
        self.categorical_kernel = categorical_kernel
        self.ordered_kernel = ordered_kernel
        self.noise_variance = noise_variance

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None, groups=None):
        """Select kernel and bandwidth by cross-validation, then fit.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights, used in the weighted sums and in the
            scores (see Notes for leave-one-out).

        groups : array-like of shape (n_samples,), default=None
            Group labels of the samples, for a splitter that uses them
            (``cv=GroupKFold(...)``, ``LeaveOneGroupOut()``, ...); refused
            with ``cv=None``.

        Returns
        -------
        self : NadarayaWatsonRegressorCV
            The fitted estimator.
        """
        return self._fit_cv(X, y, sample_weight, groups)
