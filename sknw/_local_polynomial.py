"""Local polynomial regression of any degree, and its cross-validated
selection: the local linear code with the monomials of the features."""

from functools import partial
from numbers import Integral

from sklearn.utils._param_validation import Interval

from ._docs import fill_docstring
from ._local.fits import LocalPolynomialFit
from ._local_linear import LocalLinearRegressorCV
from ._selection.passes import cv_parameter_constraints
from .kernels import KERNELS


@fill_docstring
class LocalPolynomialRegressor(LocalPolynomialFit):
    r"""Local polynomial kernel regression of any degree.

    At each query, the intercept of a kernel-weighted least-squares
    polynomial of degree ``degree`` in the features, centred at the query:
    degree 0 is the local-constant (Nadaraya--Watson) estimate, degree 1
    local linear (:class:`LocalLinearRegressor`), degree 2 local quadratic,
    which follows the curvature of peaks and valleys that lower degrees
    flatten, and whose local slopes (:meth:`gradient`) estimate
    derivatives with less bias. A fit of degree ``p`` reproduces
    polynomials of degree ``p`` exactly.

    Parameters
    ----------
    degree : int, default=2
        The degree of the local polynomial, at least 0. With ``d``
        continuous features it has ``C(d + p, p)`` coefficients (the
        intercept and every monomial of degree 1 to ``p``), each query's
        window needs at least as many points of positive weight, and its
        moments cost about that number squared per training point.
    kernel : str or Kernel, default="gaussian"
        As in :class:`NadarayaWatsonRegressor`.
    bandwidth : {"cv", "plugin", "scott", "silverman"}, float or array-like
        As in :class:`NadarayaWatsonRegressor` (default ``"cv"``); ``"cv"``
        is the choice of :class:`LocalPolynomialRegressorCV` (leave-one-out
        of the local polynomial fit of this degree).
    metric : str or callable, default="euclidean"
        As in :class:`LocalLinearRegressor`: the polynomial is in the
        coordinates of the features; the metric only shapes the weights.
    {metric_params}
    empty_window : {"nearest", "mean", "nan", "raise"}, default="nearest"
        As in :class:`NadarayaWatsonRegressor`.
    min_eigenvalue : float, default=1e-8
        As in :class:`LocalLinearRegressor`, for the covariance of the
        monomials in bandwidth units: singular designs (or windows with
        fewer points than coefficients) get the local-constant estimate,
        with a :class:`~sknw.exceptions.SingularDesignWarning`.
    max_leverage : float or None, default=100.0
        As in :class:`LocalLinearRegressor`: the ridge of designs where the
        query's leverage (1 plus the squared Mahalanobis distance of its
        monomials from their window's mean) exceeds this.
    noise_variance : {"local", "global"} or float, default="local"
        As in :class:`LocalLinearRegressor`; ``"local"`` corrects the residual
        mean square of each local fit for its degrees of freedom.
    {algorithm}
        Default ``"auto"``. As in :class:`LocalLinearRegressor`: in one feature,
        ``"sorted"`` and ``"fgt"`` sum the moments of degree up to ``2 *
        degree`` about each query, and the estimates whose error bound is within
        1e-10 of the targets' spread come from them (the others, and the
        standard errors, by the exact path); ``"binned"`` sums them by linear
        binning, its estimates within ``binned_tol`` of the targets' spread.
        ``degree=0`` sums exactly: ``"auto"`` picks among ``"tiles"``,
        ``"tree"`` and ``"brute"``, and ``"fgt"``, ``"sorted"`` or ``"binned"``
        raise.
    binned_tol : float, default=1e-6
        As in :class:`LocalLinearRegressor`.
    n_jobs : int, default=None
        As in :class:`NadarayaWatsonRegressor`.
    categorical_features : "from_dtype", None or array-like, default="from_dtype"
        As in :class:`LocalLinearRegressor`: the polynomial is in the
        continuous features; the discrete ones enter through the kernel.
    ordered_features : None or array-like, default=None
        As in :class:`NadarayaWatsonRegressor`.
    {categorical_kernel_brief}
    ordered_kernel : {"wang_ryzin", "li_racine"}, default="wang_ryzin"
        The kernel of the ordered features.

    {span}
    {robust_iterations}

    Attributes
    ----------
    degree_ : int
        The degree of the fits: ``degree``, or the largest lower one whose
        coefficients the training points of positive weight can determine
        (with a :class:`~sknw.exceptions.SingularDesignWarning`).
    {kernel_}
    {bandwidth_}
    bandwidth_selection_ : dict
        How ``bandwidth_`` was chosen, as in :class:`NadarayaWatsonRegressor`.
    {algorithm_local}
    {metric_brief}
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
    LocalLinearRegressor : Degree 1, with the one-feature fast paths.
    LocalPolynomialRegressorCV : The kernel and bandwidth chosen by
        cross-validation.

    Notes
    -----
    The fit is that of :class:`LocalLinearRegressor` (see its Notes) with
    the features' offsets replaced by their monomials of degree 1 to ``p``
    (:math:`z_1, z_2, z_1^2, z_1 z_2, z_2^2, \ldots`): the kernel-weighted
    moments of the monomials and of their products with the targets, taken
    about a centre near each query, and the Schur complement in their local
    covariance. The local polynomial's value at the query is the estimate,
    its derivative there the :meth:`gradient`.

    References
    ----------
    .. [1] J. Fan and I. Gijbels, "Local Polynomial Modelling and Its
       Applications", Chapman & Hall, 1996.

    Examples
    --------
    >>> import numpy as np
    >>> from sknw import LocalPolynomialRegressor
    >>> X = np.linspace(-1, 1, 41).reshape(-1, 1)
    >>> y = 1 - 2 * X[:, 0] ** 2  # a peak at 0
    >>> quad = LocalPolynomialRegressor(degree=2, bandwidth=0.3).fit(X, y)
    >>> quad.predict([[0.0], [1.0]]).round(10)  # exact on a parabola
    array([ 1., -1.])
    >>> lin = LocalPolynomialRegressor(degree=1, bandwidth=0.3).fit(X, y)
    >>> lin.predict([[0.0]]).round(3)  # the peak flattened
    array([0.821])
    """

    _parameter_constraints = {
        **LocalPolynomialFit._parameter_constraints,
        "degree": [Interval(Integral, 0, None, closed="left")],
    }

    def __init__(
        self,
        *,
        degree=2,
        kernel="gaussian",
        bandwidth="cv",
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
        span=None,
        robust_iterations=0,
    ):
        super().__init__(
            kernel=kernel,
            bandwidth=bandwidth,
            metric=metric,
            metric_params=metric_params,
            empty_window=empty_window,
            min_eigenvalue=min_eigenvalue,
            max_leverage=max_leverage,
            noise_variance=noise_variance,
            algorithm=algorithm,
            binned_tol=binned_tol,
            n_jobs=n_jobs,
            categorical_features=categorical_features,
            ordered_features=ordered_features,
            categorical_kernel=categorical_kernel,
            ordered_kernel=ordered_kernel,
            span=span,
            robust_iterations=robust_iterations,
        )
        self.degree = degree

    # Fits of many monomials hold many numbers per query: batches down to
    # a few hundred queries keep them within the working memory.
    _MIN_BATCH_ROWS = 1 << 8
    _takes_degree = True

    def _plain_class(self):
        """The plain estimator of this estimator's fits, of the fitted
        degree."""
        return partial(LocalPolynomialRegressor, degree=self._degree())


@fill_docstring
class LocalPolynomialRegressorCV(LocalPolynomialFit):
    r"""Local polynomial regression with kernel and bandwidth chosen by CV.

    Exact leave-one-out (or K-fold) cross-validation of the local
    polynomial fit of degree ``degree``, as :class:`LocalLinearRegressorCV`
    does for degree 1: every training point's local fit is solved from the
    moments of its window summed without it. Then it predicts like
    :class:`LocalPolynomialRegressor` with the best kernel and bandwidth.

    Parameters
    ----------
    degree : int, default=2
        As in :class:`LocalPolynomialRegressor`.
    kernels : str, Kernel or sequence of them, default=("gaussian",)
        Kernels to try.
    bandwidths : int, array-like or None, default=None
        As in :class:`LocalLinearRegressorCV`.
    cv : int, cross-validation generator, iterable or None, default=None
        ``None``: exact, efficient leave-one-out. Otherwise K-fold as in
        :func:`sklearn.model_selection.check_cv`.
    scoring : str, callable or None, default=None
        As in :class:`LocalLinearRegressorCV` (``"aicc"`` and ``"gcv"``
        included).
    refine : bool, default=False
        As in :class:`NadarayaWatsonRegressorCV`.
    metric : str or callable, default="euclidean"
        As in :class:`LocalPolynomialRegressor`.
    {metric_params}
    empty_window : {"nearest", "mean", "nan", "raise"}, default="nearest"
        As in :class:`LocalLinearRegressorCV`.
    min_eigenvalue : float, default=1e-8
        As in :class:`LocalPolynomialRegressor`.
    max_leverage : float or None, default=100.0
        As in :class:`LocalPolynomialRegressor`.
    noise_variance : {"local", "global"} or float, default="local"
        As in :class:`LocalPolynomialRegressor`.
    {algorithm}
        Default ``"auto"``. As in :class:`LocalPolynomialRegressor`, for
        predictions, and as in :class:`LocalLinearRegressorCV` for the
        cross-validation passes of degree 1 (``"binned"``: within
        ``binned_tol``); those of higher degrees are exact.
    binned_tol : float, default=1e-6
        As in :class:`LocalPolynomialRegressor`.
    n_jobs : int, default=None
        As in :class:`NadarayaWatsonRegressorCV`.
    categorical_features : "from_dtype", None or array-like, default="from_dtype"
        As in :class:`LocalLinearRegressor`.
    ordered_features : None or array-like, default=None
        As in :class:`LocalLinearRegressor`.
    categorical_kernel : {"aitchison_aitken", "li_racine"}, default="aitchison_aitken"
        As in :class:`LocalLinearRegressor`.
    ordered_kernel : {"wang_ryzin", "li_racine"}, default="wang_ryzin"
        As in :class:`LocalLinearRegressorCV`.

    {spans}

    Attributes
    ----------
    degree_ : int
        As in :class:`LocalPolynomialRegressor`.
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
    {metric_brief}
    {metric_params_}
    {X_fit_}
    {y_fit_}
    {sample_weight_brief}
    noise_variance_ : ndarray of shape (n_outputs,) or None
        As in :class:`LocalPolynomialRegressor`.
    {n_features_in_}
    {feature_names_in_}
    {feature_types_}
    {categories_brief}

    See Also
    --------
    LocalPolynomialRegressor : The estimator with a fixed kernel and bandwidth.
    LocalLinearRegressorCV : Degree 1, with the one-feature fast paths.

    Notes
    -----
    The passes sum the moments of the monomials in one frame for all the
    data; a left-out point whose local design loses digits in that frame
    (its rounding beyond a frame at its window's mean, about the ``p``-th
    power of its squared distance from the frame's centre in bandwidths,
    more than ``1e-8`` of the design's smallest eigenvalue: a point far from
    the centre, or there a window of a few points close together for a high
    degree) is computed again by the exact path of predictions, in frames
    near it, as a refit would be.

    Examples
    --------
    >>> import numpy as np
    >>> from sknw import LocalPolynomialRegressorCV
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, (200, 1))
    >>> y = np.cos(3 * X[:, 0]) + rng.normal(0, 0.1, 200)
    >>> reg = LocalPolynomialRegressorCV(degree=2, bandwidths=10).fit(X, y)
    >>> reg.bandwidth_.round(3)
    array([0.148])
    """

    _parameter_constraints = {
        **cv_parameter_constraints(
            LocalPolynomialFit._parameter_constraints,
            set(KERNELS),
            LocalPolynomialFit._algorithms,
        ),
        "degree": [Interval(Integral, 0, None, closed="left")],
    }

    _MIN_BATCH_ROWS = 1 << 8
    _takes_degree = True

    def _plain_class(self):
        """The plain estimator of this estimator's fits, of the fitted
        degree."""
        return partial(LocalPolynomialRegressor, degree=self._degree())

    def __init__(
        self,
        *,
        degree=2,
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
        self.min_eigenvalue = min_eigenvalue
        self.max_leverage = max_leverage
        self.noise_variance = noise_variance
        self.algorithm = algorithm
        self.binned_tol = binned_tol
        self.n_jobs = n_jobs
        self.categorical_features = categorical_features
        self.ordered_features = ordered_features
        self.categorical_kernel = categorical_kernel
        self.ordered_kernel = ordered_kernel
        self.spans = spans
        self.degree = degree

    # The same fit as the local linear search's: its search and fit
    # (RegressionBase._fit_cv) take the degree from the estimator.
    fit = LocalLinearRegressorCV.fit
