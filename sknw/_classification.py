"""Nadaraya--Watson kernel classification."""

from numbers import Real

import numpy as np
from sklearn.base import ClassifierMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from ._base import NadarayaWatsonBase
from ._docs import fill_docstring
from ._features.mixed import DISCRETE_CONSTRAINTS
from ._selection.passes import NW_CV_ALGORITHMS, KernelPasses, cv_parameter_constraints
from ._validation import (
    SPARSE_FORMATS,
    check_dense_target,
    check_not_text,
    check_sample_weight,
    dense_training,
)
from .kernels import KERNELS, Kernel

#: Kernel names the classifier accepts: those of non-negative kernels.
CLASSIFIER_KERNELS = {name for name, cls in KERNELS.items() if cls.nonnegative}


class ClassificationBase(ClassifierMixin, NadarayaWatsonBase):
    """What the classifiers share (not public): the kernels they accept, the
    fit and the class probabilities."""

    _parameter_constraints = {
        **NadarayaWatsonBase._parameter_constraints,
        **DISCRETE_CONSTRAINTS,
        "kernel": [StrOptions(CLASSIFIER_KERNELS), Kernel],
        "binned_tol": [Interval(Real, 0, 1, closed="neither")],
    }

    def _check_kernel(self, kernel):
        if not kernel.nonnegative:
            raise ValueError(
                f"NadarayaWatsonClassifier needs a non-negative kernel; {kernel!r} "
                "takes negative values, which would give negative probabilities."
            )
        return kernel

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Store the training data and resolve kernel, bandwidth and metric.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs.
        y : array-like of shape (n_samples,)
            Class labels (strings, integers, booleans, …).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights of the training points (frequency weights).

        Returns
        -------
        self : object
            The fitted estimator.
        """
        X, y = self._validate_labels(X, y)
        self._fit_common(X, sample_weight)
        self._resolve_algorithm()
        return self

    def _search_targets(self, y):
        """``(kind, values, classes)`` of a search on the encoded labels
        ``y``: the one-hot rows are averaged."""
        return "classification", self._onehot(y), self.classes_

    def _search_passes(self, smoothing):
        """The passes of a search of this estimator's candidates: weighted
        averages of the one-hot labels."""
        return KernelPasses(smoothing=smoothing, accepted=NW_CV_ALGORITHMS)

    def _validate_labels(self, X, y):
        """Validate ``X`` and ``y``; set ``classes_`` and the encoded ``y_fit_``."""
        X = self._encode_features(X, reset=True)
        check_not_text(X, categorical=True)
        check_dense_target(y)
        X, y = validate_data(
            self,
            X,
            y,
            dtype=[np.float64, np.float32],
            order="C",
            accept_sparse=SPARSE_FORMATS,
        )
        X = dense_training(X)
        y = column_or_1d(y, warn=True)
        check_classification_targets(y)
        self.classes_, self.y_fit_ = np.unique(y, return_inverse=True)
        return X, y

    def _values(self):
        """The values averaged by the weights: the one-hot encoded labels."""
        return self._onehot(self.y_fit_)

    def _onehot(self, labels):
        """The one-hot rows of the encoded ``labels``."""
        onehot = np.zeros((labels.shape[0], self.classes_.shape[0]))
        onehot[np.arange(labels.shape[0]), labels] = 1.0
        return onehot

    def predict_proba(self, X):
        """Kernel-weighted class frequencies at each query.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
            Queries.

        Returns
        -------
        ndarray of shape (n_queries, n_classes)
            Probabilities, columns in the order of ``classes_``; rows sum to 1.
        """
        check_is_fitted(self)
        return self._batched(X, self._proba_rows)

    def _proba_rows(self, Q):
        """``predict_proba`` of validated queries."""
        proba = self._smoother.weighted_average(Q, self._values())
        # Rounding (or float32 sums, for float32 inputs) can leave a
        # probability a few ulps outside [0, 1] and a row's sum off 1.
        proba = np.clip(proba, 0.0, 1.0)
        with np.errstate(invalid="ignore"):
            total = proba.sum(axis=1, keepdims=True)
            return np.where(total > 0, proba / np.where(total > 0, total, 1.0), proba)

    def predict(self, X):
        """Most probable class at each query.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
            Queries.

        Returns
        -------
        ndarray of shape (n_queries,)
            Predicted labels, of the type of ``classes_``. Ties go to the class
            that comes first in ``classes_``.
        """
        check_is_fitted(self)
        return self._batched(X, self._label_rows)

    def _label_rows(self, Q):
        """``predict`` of validated queries."""
        proba = self._proba_rows(Q)
        if np.isnan(proba).any():
            raise ValueError(
                "Some queries have NaN probabilities (empty_window='nan'); "
                "predict has no class for them. Use another empty_window policy."
            )
        return self.classes_[np.argmax(proba, axis=1)]


@fill_docstring
class NadarayaWatsonClassifier(ClassificationBase):
    r"""Nadaraya--Watson kernel classifier: kernel-weighted class frequencies.

    The class probabilities at a query are the kernel-weighted frequencies of
    the classes among the training points, i.e. the Nadaraya--Watson regression
    of the one-hot encoded labels.

    Parameters
    ----------
    kernel : str or Kernel, default="gaussian"
        A kernel name from :data:`sknw.kernels.KERNELS` or a
        :class:`sknw.kernels.Kernel` instance. The kernel must be non-negative
        (so the Silverman kernel is not accepted): probabilities are weighted
        frequencies.
    bandwidth : {"cv", "scott", "silverman"}, float or array-like, default="cv"
        As in :class:`NadarayaWatsonRegressor`; ``"cv"`` scores the log-loss
        (the choice of :class:`NadarayaWatsonClassifierCV`).
    {metric}
    metric_params : dict, default=None
        Keyword arguments of the metric; see :class:`NadarayaWatsonRegressor`.
    empty_window : {"nearest", "mean", "nan", "raise"}, default="nearest"
        What a query gets when no training point has a non-zero weight: the
        class frequencies of its nearest training points, the (weighted) class
        frequencies of the whole training set, NaN probabilities (``predict``
        then raises), or a ``ValueError``. Every policy but ``"raise"`` emits an
        :class:`~sknw.exceptions.EmptyWindowWarning`.

    {algorithm}
        How the weights are summed, as in :class:`NadarayaWatsonRegressor`
        (the values averaged are the class indicators). The choice is stored in
        ``algorithm_``.
    binned_tol : float, default=1e-6
        With ``algorithm="binned"``: the largest error of a class probability.
        The grid step follows from it; queries whose error bound exceeds it (in
        sparse regions or outside the data) are computed exactly.
    {n_jobs}
    {categorical_features}
    {ordered_features}
    {categorical_kernel}
    {ordered_kernel}

    {span}

    Attributes
    ----------
    {algorithm_}
    classes_ : ndarray of shape (n_classes,)
        Class labels, in the order of the columns of :meth:`predict_proba`.
    {kernel_}
    {bandwidth_}
    bandwidth_selection_ : dict
        How ``bandwidth_`` was chosen, as in :class:`NadarayaWatsonRegressor`.
    {metric_}
    {metric_params_}
    {X_fit_}
    {y_fit_labels}
    {sample_weight_}
    {span_}
    {n_features_in_}
    {feature_names_in_}
    {feature_types_}
    {categories_}

    See Also
    --------
    NadarayaWatsonRegressor : Kernel-weighted average of targets.
    sklearn.neighbors.KNeighborsClassifier : Votes of a fixed number of
        neighbours.

    Notes
    -----
    The probability of class :math:`c` at query :math:`q` is

    .. math::

        \hat p_c(q) = \frac{\sum_j w_j K(d(q, x_j) / h)\, [y_j = c]}
                           {\sum_j w_j K(d(q, x_j) / h)}.

    A training set with a single class gives a classifier that always predicts
    it.

    Examples
    --------
    >>> import numpy as np
    >>> from sknw import NadarayaWatsonClassifier
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]])
    >>> y = np.array(["a", "a", "b", "b"])
    >>> clf = NadarayaWatsonClassifier(bandwidth=0.5).fit(X, y)
    >>> clf.classes_
    array(['a', 'b'], dtype='<U1')
    >>> clf.predict_proba([[0.5], [1.5], [2.9]]).round(3)
    array([[0.991, 0.009],
           [0.5  , 0.5  ],
           [0.001, 0.999]])
    >>> clf.predict([[0.5], [2.9]])
    array(['a', 'b'], dtype='<U1')
    """

    def __init__(
        self,
        *,
        kernel="gaussian",
        bandwidth="cv",
        metric="euclidean",
        metric_params=None,
        empty_window="nearest",
        algorithm="auto",
        binned_tol=1e-6,
        n_jobs=None,
        categorical_features="from_dtype",
        ordered_features=None,
        categorical_kernel="aitchison_aitken",
        ordered_kernel="wang_ryzin",
        span=None,
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
        self.categorical_features = categorical_features
        self.ordered_features = ordered_features
        self.categorical_kernel = categorical_kernel
        self.ordered_kernel = ordered_kernel
        self.binned_tol = binned_tol


@fill_docstring
class NadarayaWatsonClassifierCV(ClassificationBase):
    r"""Nadaraya--Watson classifier with kernel and bandwidth chosen by CV.

    By default, exact leave-one-out cross-validation of the log-loss over a
    log-spaced grid of bandwidths around the rule of thumb, computed in one
    pass over the pairwise distances; then it predicts like
    :class:`NadarayaWatsonClassifier` with the best kernel and bandwidth.

    Parameters
    ----------
    kernels : str, Kernel or sequence of them, default=("gaussian",)
        Non-negative kernels to try, by name or as
        :class:`~sknw.kernels.Kernel` instances.
    bandwidths : int, array-like or None, default=None
        As in :class:`NadarayaWatsonRegressorCV`.
    cv : int, cross-validation generator, iterable or None, default=None
        ``None``: exact, efficient leave-one-out; otherwise (stratified) K-fold
        as in :func:`sklearn.model_selection.check_cv`.
    scoring : str, callable or None, default=None
        ``None``: negative log-loss over all classes (probabilities clipped at
        machine epsilon). A string names any scikit-learn scorer computable
        from probabilities or labels (``"accuracy"``, ``"neg_brier_score"``,
        …); a callable ``scorer(estimator, X, y)`` gets an estimator whose
        ``predict_proba`` returns ``X``, the out-of-sample probabilities.
    refine : bool, default=False
        As in :class:`NadarayaWatsonRegressorCV`: a bounded continuous search
        of the log-bandwidth after the grid.
    {metric}
    {metric_params}
    empty_window : {"nearest", "mean", "nan", "raise"}, default="nearest"
        As in :class:`NadarayaWatsonRegressorCV`.

    {algorithm}
        Default ``"auto"``. As in :class:`NadarayaWatsonRegressorCV`.
    binned_tol : float, default=1e-6
        As in :class:`NadarayaWatsonRegressorCV`: each out-of-sample
        probability of the search within it of the exact one. A point's
        log-loss then changes by up to about ``binned_tol / p`` for its
        class's probability ``p``: much more than ``binned_tol`` where ``p``
        is near 0.
    n_jobs : int, default=None
        As in :class:`NadarayaWatsonRegressorCV`: parallel workers for the
        cross-validation passes and for predictions.
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
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    {kernel_cv}
    bandwidth_ : float or ndarray of shape (n_features,)
        The selected bandwidth: with a default grid and no shape or smoothing
        parameter searched, the chosen candidate's size polished by
        successive parabolic interpolation of the score over its logarithm
        between the candidate's grid neighbours (at most two steps, kept
        where the score strictly improves; not with ``refine=True``, which
        searches the same bracket to 1e-4).
    {span_cv}
    {best_score_}
    best_index_ : int
        Index of the selected grid candidate in ``cv_results_`` (the polish
        or the refinement starts there; see "Several local optima" in the
        user guide).
    cv_results_ : dict of ndarrays
        As in :class:`NadarayaWatsonRegressorCV`.
    {metric_}
    {metric_params_}
    {X_fit_}
    {y_fit_labels}
    {sample_weight_brief}
    {n_features_in_}
    {feature_names_in_}
    {feature_types_}
    {categories_}

    See Also
    --------
    NadarayaWatsonClassifier : The classifier with a fixed kernel and bandwidth.
    NadarayaWatsonRegressorCV : The same selection for regression.

    Notes
    -----
    The leave-one-out probabilities drop each observation's own term (all of
    its copies) from the weighted class counts; see
    :class:`NadarayaWatsonRegressorCV` for the meaning of sample weights
    there.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sknw import NadarayaWatsonClassifierCV
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = NadarayaWatsonClassifierCV(bandwidths=10).fit(X, y)
    >>> clf.kernel_, clf.bandwidth_.shape
    (Gaussian(), (4,))
    >>> clf.best_score_ > -0.2
    True
    """

    # Leave-one-out and K-fold on every backend, binned within binned_tol.
    _algorithms = NW_CV_ALGORITHMS
    _parameter_constraints = cv_parameter_constraints(
        ClassificationBase._parameter_constraints,
        CLASSIFIER_KERNELS,
        _algorithms,
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

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None, groups=None):
        """Select kernel and bandwidth by cross-validation, then fit.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs.
        y : array-like of shape (n_samples,)
            Class labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights (for leave-one-out, see
            :class:`NadarayaWatsonRegressorCV`, Notes).

        groups : array-like of shape (n_samples,), default=None
            Group labels of the samples, for a splitter that uses them
            (``cv=GroupKFold(...)``, ``LeaveOneGroupOut()``, ...); refused
            with ``cv=None``.

        Returns
        -------
        self : NadarayaWatsonClassifierCV
            The fitted estimator.
        """
        X, y = self._validate_labels(X, y)
        w = check_sample_weight(sample_weight, X.shape[0])
        self._fit_searched(X, self.y_fit_, w, groups)
        return self
