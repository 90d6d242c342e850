"""Local linear kernel regression: :class:`LocalLinearRegressor` and its
search, :class:`LocalLinearRegressorCV`."""

from sklearn.base import _fit_context

from ._docs import fill_docstring
from ._local.fits import LocalPolynomialFit
from ._selection.passes import cv_parameter_constraints
from .kernels import KERNELS


@fill_docstring
class LocalLinearRegressor(LocalPolynomialFit):
    r"""Local linear kernel regression.

    At each query, the intercept of a kernel-weighted least-squares hyperplane
    centred at the query. Unlike the local-constant (Nadaraya--Watson)
    estimate, it has no first-order bias at the boundary of the data or where
    the design is uneven, and it reproduces linear functions exactly.

    Parameters
    ----------
    kernel : str or Kernel, default="gaussian"
        As in :class:`NadarayaWatsonRegressor`.
    bandwidth : {"cv", "plugin", "scott", "silverman"}, float or array-like
        As in :class:`NadarayaWatsonRegressor` (default ``"cv"``); ``"cv"``
        is the choice of :class:`LocalLinearRegressorCV` (leave-one-out of the
        local linear fit).
    metric : str or callable, default="euclidean"
        As in :class:`NadarayaWatsonRegressor`. The local hyperplane is fitted
        in the coordinates of the features (divided by a per-feature
        bandwidth); the metric only shapes the weights.
    {metric_params}
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
    max_leverage : float or None, default=100.0
        The ridge of near-singular or extrapolating local designs (Seifert and
        Gasser, 1996; R's np ridges too): where a query's leverage ``1 + l``
        (``l`` its squared Mahalanobis distance from its window's weighted
        mean, in the window's own covariance) exceeds this, a ridge
        ``rho I`` is added to the local covariance (in bandwidth units), with
        ``rho`` such that the leverage is ``max_leverage``. The slope is
        shrunk towards the local-constant fit, and the estimate stays within
        ``sqrt(max_leverage - 1)`` kernel-weighted standard deviations of the
        targets of its window from their mean. Designs within it are solved
        as they are (no change). A :class:`~sknw.exceptions.RidgedDesignWarning`
        counts the ridged queries. ``None``: never ridge (the plain local
        linear fit, which extrapolates a slope fitted to however few points).
    noise_variance : {"local", "global"} or float, default="local"
        The noise variance behind the standard errors, as in
        :class:`NadarayaWatsonRegressor`; ``"local"`` is the weighted residual
        mean square of each query's local linear fit, corrected for its
        degrees of freedom.
    {algorithm}
        Default ``"auto"``. As in :class:`NadarayaWatsonRegressor`. With one
        feature, ``"fgt"`` (the Gaussian) and ``"sorted"`` (the polynomial
        kernels) sum the moments about each query in ``O((n + m) log n)``;
        ``"auto"`` takes them from 512 training points. Each estimate they give
        is within ``1e-10`` times the range of the targets of the one exact
        moments give, by a bound checked per query (see Notes); the other
        queries, and standard errors, take the exact path. ``"binned"`` (the
        Gaussian, one feature; never chosen by ``"auto"``) sums the moments by
        linear binning and FFT, each estimate within ``binned_tol`` times the
        range of the targets of the exact one by the same check (the others,
        and standard errors, by the exact sums). With ``"tiles"`` (several
        features, the Gaussian), the moments of the exact path are sums within
        1e-12 of the sums of their terms' magnitudes, as in
        :class:`NadarayaWatsonRegressor`.
    binned_tol : float, default=1e-6
        With ``algorithm="binned"``: the largest error of an estimate
        relative to the range of the targets (with ``robust_iterations``,
        of each fit against the exact one with the same robustness
        weights); the grid step follows from it (see the user guide).
    n_jobs : int, default=None
        As in :class:`NadarayaWatsonRegressor`.
    categorical_features : "from_dtype", None or array-like, default="from_dtype"
        As in :class:`NadarayaWatsonRegressor`: the unordered categorical
        features. The local polynomial is fitted in the continuous features;
        the discrete ones enter through the kernel only (a product kernel, as
        in R's ``np``).
    ordered_features : None or array-like, default=None
        As in :class:`NadarayaWatsonRegressor`: the ordered features.
    {categorical_kernel_brief}
    ordered_kernel : {"wang_ryzin", "li_racine"}, default="wang_ryzin"
        The kernel of the ordered features. With discrete features the fits
        take the exact path (the one-feature fast paths sum one continuous
        kernel only).

    {span}
    {robust_iterations}

    Attributes
    ----------
    {kernel_}
    {bandwidth_}
    bandwidth_selection_ : dict
        How ``bandwidth_`` was chosen, as in :class:`NadarayaWatsonRegressor`.
    {algorithm_local}
    {metric_}
    {metric_params_}
    {X_fit_}
    {y_fit_}
    {sample_weight_brief}
    {span_}
    {robustness_weights_}
    {noise_variance_}
    {n_features_in_}
    {feature_names_in_}
    {feature_types_}
    {categories_brief}

    See Also
    --------
    NadarayaWatsonRegressor : The local-constant estimate.
    LocalPolynomialRegressor : Local polynomials of any degree.

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
    local-constant estimate, and solved as a Schur complement in the local
    covariance. The covariance is a difference of moments, so they are taken
    about a point near each window (the centre of the query's cell of a few
    bandwidths, or, for a window whose mean is far from it, such as an
    extrapolating query's, about that mean, in the window's principal axes
    where it is thin across the features), of the targets minus a level
    near the query: the solution loses digits to the conditioning of the
    local design only, not to the spread of the other training points (a far
    outlier), and a query's estimate does not depend on the other queries of
    its batch (but for the rounding below). Each distinct centre costs one
    pass over the training points.

    With one feature and ``algorithm_`` ``"fgt"`` or ``"sorted"``, the
    moments :math:`\sum k_j u_j^i` (:math:`i \le 2`) and :math:`\sum k_j
    u_j^i y_j` (:math:`i \le 1`) about the query itself (:math:`u_j = z_j`
    in units of the bandwidth) come from the backend's index instead, with a
    bound on their errors; from them, a first-order bound on the error of
    the estimate (the cancellation in the local variance included, large
    where the window is one-sided) is checked against ``1e-10`` times the
    range of the targets, and queries beyond it take the exact path above.

    Every path solves the local normal equations in floating point: an
    estimate is within about ``1000 * eps * kappa`` times the range of the
    targets of the exact local fit (tested against rational arithmetic),
    ``kappa`` the condition number of the local design (the kernel-weighted
    Gram matrix of the monomials of the offsets from the query, in
    bandwidths), plus the fast paths' ``1e-10``. Windows spread over a few
    bandwidths have ``kappa`` below about 1e3; a window of few points, some
    far lighter than the others, or a query beyond the data can approach the
    singular test (``min_eigenvalue``), where estimates (and their
    differences between batches of queries, from the rounding of matrix
    products of other shapes) are good to about 1e-8 of the range.

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

    def _plain_class(self):
        """The plain estimator of this estimator's fits."""
        return LocalLinearRegressor


@fill_docstring
class LocalLinearRegressorCV(LocalPolynomialFit):
    r"""Local linear regression with kernel and bandwidth chosen by CV.

    By default, exact leave-one-out cross-validation over a log-spaced grid of
    bandwidths around the rule of thumb, in one pass over the pairwise
    distances: the kernel-weighted moments of every training point's window
    are summed without the point itself, and each point's local least-squares
    problem is solved from them. Then it predicts like
    :class:`LocalLinearRegressor` with the best kernel and bandwidth.

    Parameters
    ----------
    {kernels}
    bandwidths : int, array-like or None, default=None
        As in :class:`NadarayaWatsonRegressorCV`: ``None`` or an int ``n``
        (default 30) for ``n`` multipliers, log-spaced by ``2**(1/j)`` or
        ``2**j`` over about 0.05 to 5, of each kernel's Scott-rule
        bandwidth of a robust spread; otherwise a sequence of bandwidths.
    cv : int, cross-validation generator, iterable or None, default=None
        ``None``: exact, efficient leave-one-out. Otherwise K-fold as in
        :func:`sklearn.model_selection.check_cv`, through the same machinery.
    scoring : str, callable or None, default=None
        As in :class:`NadarayaWatsonRegressorCV`; ``None`` is the negative
        mean squared error. ``"aicc"`` and ``"gcv"`` take the self weight of
        each point's local fit (its own weight's share times ``1 +`` its
        squared Mahalanobis distance from its window's mean: the diagonal of
        the smoother matrix); every candidate then takes the exact passes,
        not the one-feature fast paths.
    refine : bool, default=False
        As in :class:`NadarayaWatsonRegressorCV`: a bounded continuous search
        of the log-bandwidth after the grid.
    metric : str or callable, default="euclidean"
        As in :class:`LocalLinearRegressor`.
    {metric_params}
    empty_window : {"nearest", "mean", "nan", "raise"}, default="nearest"
        As in :class:`NadarayaWatsonRegressorCV`, for windows that are empty
        once a point is left out: ``"nearest"`` and ``"mean"`` score the
        fallback estimate; ``"nan"`` and ``"raise"`` score NaN, which ranks a
        candidate last.
    min_eigenvalue : float, default=1e-8
        As in :class:`LocalLinearRegressor`. Left-out points whose local
        design is singular are scored with the local-constant estimate, as
        they would be predicted (without a warning during the search).
    max_leverage : float or None, default=100.0
        As in :class:`LocalLinearRegressor`, for the cross-validation passes
        (each left-out point's fit ridged as its refit would be) and the
        predictions.
    noise_variance : {"local", "global"} or float, default="local"
        As in :class:`LocalLinearRegressor`, with the selected kernel and
        bandwidth.
    {algorithm}
        Default ``"auto"``. As in :class:`LocalLinearRegressor`, for
        predictions and the cross-validation passes. ``"binned"``: the
        moments about each left-out point are binned, and each out-of-sample
        estimate they give is within ``binned_tol`` times the range of the
        targets of the exact one (approximate scores); the points beyond
        that bound, and the in-sample criteria, take exact sums. A bandwidth
        too small for the grid scores NaN.
    binned_tol : float, default=1e-6
        As in :class:`LocalLinearRegressor`.
    n_jobs : int, default=None
        As in :class:`NadarayaWatsonRegressorCV`: parallel workers for the
        cross-validation passes and for predictions.
    categorical_features : "from_dtype", None or array-like, default="from_dtype"
        As in :class:`LocalLinearRegressor`.
    ordered_features : None or array-like, default=None
        As in :class:`LocalLinearRegressor`.
    categorical_kernel : {"aitchison_aitken", "li_racine"}, default="aitchison_aitken"
        As in :class:`LocalLinearRegressor`.
    ordered_kernel : {"wang_ryzin", "li_racine"}, default="wang_ryzin"
        As in :class:`LocalLinearRegressor`; the smoothing parameters are
        searched as by :class:`NadarayaWatsonRegressorCV`.

    {spans}

    Attributes
    ----------
    {kernel_cv}
    bandwidth_ : float or ndarray of shape (n_features,)
        The selected bandwidth (its size polished between grid neighbours,
        as in :class:`NadarayaWatsonRegressorCV`).
    {span_cv}
    {best_score_local}
    best_index_ : int
        Index of the selected grid candidate in ``cv_results_``, as in
        :class:`NadarayaWatsonRegressorCV`.
    cv_results_ : dict of ndarrays
        As in :class:`NadarayaWatsonRegressorCV`.
    {algorithm_local}
    {metric_}
    {metric_params_}
    {X_fit_}
    {y_fit_}
    {sample_weight_brief}
    noise_variance_ : ndarray of shape (n_outputs,) or None
        As in :class:`LocalLinearRegressor`.
    {n_features_in_}
    {feature_names_in_}
    {feature_types_}
    {categories_brief}

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
    term (its whole row, see :class:`NadarayaWatsonRegressorCV`) left out of
    every sum. Each candidate costs one kernel evaluation per pair, and one
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
    (Epanechnikov(), array([0.222]))
    >>> len(reg.cv_results_["mean_test_score"])
    60
    """

    _parameter_constraints = cv_parameter_constraints(
        LocalLinearRegressor._parameter_constraints,
        set(KERNELS),
        LocalPolynomialFit._algorithms,
    )

    def _plain_class(self):
        """The plain estimator of this estimator's fits."""
        return LocalLinearRegressor

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
        max_leverage=100.0,
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
        self.min_eigenvalue = min_eigenvalue
        self.max_leverage = max_leverage
        self.noise_variance = noise_variance
        self.binned_tol = binned_tol
        self.categorical_features = categorical_features
        self.ordered_features = ordered_features
        self.categorical_kernel = categorical_kernel
        self.ordered_kernel = ordered_kernel

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
            Non-negative weights, used in the weighted sums and in the scores
            (for leave-one-out, see :class:`NadarayaWatsonRegressorCV`, Notes).

        groups : array-like of shape (n_samples,), default=None
            Group labels of the samples, for a splitter that uses them
            (``cv=GroupKFold(...)``, ``LeaveOneGroupOut()``, ...); refused
            with ``cv=None``.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        return self._fit_cv(X, y, sample_weight, groups)
