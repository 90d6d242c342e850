"""Local linear regression with the kernel and bandwidth chosen by
cross-validation: exact leave-one-out through the moments of the local fits."""

from sklearn.base import _fit_context

from ._cv_estimator import CVSelectionMixin
from ._local_fit import LocalPolynomialFit


class LocalPolynomialCVFit(CVSelectionMixin, LocalPolynomialFit):
    """The cross-validation of the local polynomial fits (see
    :class:`LocalLinearRegressorCV`): exact leave-one-out through the moments
    of the monomials, and the moments about each left-out point on the
    one-feature backends (degree 1)."""

    # Those of the plain fits: binned within binned_tol, for the moments
    # about each left-out point (degree 1) and the predictions.
    _algorithms = LocalPolynomialFit._algorithms

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
            spans=spans,
        )
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
        return self._fit_regression(X, y, sample_weight, groups)
