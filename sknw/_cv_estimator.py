"""What the ``*CV`` estimators share: their parameters, and a fit that
searches kernel and bandwidth (:func:`sknw._search.search`) and stores the
result."""

from dataclasses import replace

from ._mixed import encode_features
from ._search import search
from ._selection import check_groups
from ._validation import check_sample_weight, validate_regression_data
from ._weights import distinct_rows


class CVSelectionMixin:
    """Selects kernel and bandwidth by cross-validation, then fits (not public).

    Used by the ``*CV`` estimators: ``kernels``, ``bandwidths``, ``cv``,
    ``scoring``, ``refine`` and ``spans`` parameters; the resolved choice is
    stored as ``kernel_`` and ``bandwidth_``, then the estimator predicts
    like the plain one.
    """

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
        n_jobs=None,
        spans=None,
    ):
        self.kernels = kernels
        self.spans = spans
        self.bandwidths = bandwidths
        self.cv = cv
        self.scoring = scoring
        self.refine = refine
        self.metric = metric
        self.metric_params = metric_params
        self.empty_window = empty_window
        self.algorithm = algorithm
        self.n_jobs = n_jobs

    def _fit_regression(self, X, y, sample_weight, groups=None):
        """Validate, select kernel and bandwidth, then fit (the regressors)."""
        X = encode_features(self, X, reset=True)
        X, y = validate_regression_data(self, X, y)
        w = check_sample_weight(sample_weight, X.shape[0])
        self.y_fit_ = y
        self._fit_searched(X, y, w, groups)
        self._fit_noise_variance()
        return self

    def _fit_searched(self, X, y, w, groups):
        """Search on validated training data (``y``: the targets, or a
        classifier's encoded labels), store the choice (``cv_results_``,
        ``best_index_``, ``best_score_``, ``kernel_``, ``bandwidth_``,
        ``span_``) and fit with it. Leave-one-out scores each distinct
        observation once (:func:`~sknw._weights.distinct_rows`), K-fold
        every row, its splits being of the rows."""
        groups = check_groups(groups, X.shape[0], self.cv)
        self._fit_span(w)
        self.metric_params_ = self._resolve_metric_params(X, w)
        Xs, ys, ws = (X, y, w) if self.cv is not None else distinct_rows(X, y, w)
        problem = replace(
            self._search_problem(Xs, ys, ws, kernels=self.kernels),
            groups=groups,
            bandwidths=self.bandwidths,
            spans=self.spans,
            cv=self.cv,
            scoring=self.scoring,
            refine=self.refine,
        )
        result = search(problem)
        self.cv_results_ = result.cv_results
        self.best_index_ = result.best_index
        self.best_score_ = result.best_score
        self.kernel_ = result.kernel
        self.bandwidth_ = result.bandwidth
        self.span_ = result.span
        self.X_fit_, self.sample_weight_ = X, w
        self._resolve_algorithm(result.scaling)
