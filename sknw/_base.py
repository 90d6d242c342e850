"""Parameters, fitting and weighted averaging shared by all sknw estimators."""

import warnings
from dataclasses import dataclass, fields, replace
from functools import partial
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from scipy.spatial import cKDTree
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import (
    _check_feature_names,
    check_is_fitted,
    validate_data,
)

from ._bandwidth.rules import BANDWIDTH_RULES, rule_bandwidth
from ._bandwidth.scaling import scaling_of
from ._bandwidth.span import neighbour_count, span_bandwidth, span_shape
from ._features.mixed import (
    Discrete,
    refuse_sparse_declarations,
    table_of,
)
from ._features.types import FeatureEncoder, feature_types
from ._selection.default import default_bandwidth, plugin_for
from ._selection.passes import Smoothing, check_groups
from ._selection.search import SearchChoices, SearchProblem, search
from ._selection.weights import distinct_rows
from ._smoother import FittedSmoother, continuous_bandwidth
from ._sums import (
    ALGORITHMS,
    BACKENDS,
    DENSE,
    FitRequest,
    algorithms,
    check,
    choose,
    default_tile_elements,
    why_not,
)
from ._sums._traits import is_continuous
from ._trace import Tunable, record
from ._validation import (
    CDIST_METRICS,
    EMPTY_WINDOW_POLICIES,
    SPARSE_FORMATS,
    NotBoolInterval,
    as_rows,
    check_bandwidth,
    check_not_text,
    check_sample_weight,
    resolve_metric_params,
)
from .exceptions import QueryWarning, warn
from .kernels import KERNELS, Kernel, get_kernel

#: Tile size used by the estimators (see :func:`default_tile_elements`).
_tile_elements = default_tile_elements


#: Queries per batch of a prediction, where set (None: from the working
#: memory, see :meth:`NadarayaWatsonBase._batch_rows`): small batches on
#: small data.
BATCH_ROWS = Tunable(None)


@dataclass(frozen=True)
class FitSettings:
    """The parameters that the fit and predictions read, as they were at
    fit: a parameter changed after fit takes effect at the next fit only.

    ``max_leverage`` and ``min_eigenvalue`` are the local fits', ``span``
    and ``robust_iterations`` the plain estimators' (their defaults
    elsewhere)."""

    empty_window: str
    max_leverage: float | None = 100.0
    min_eigenvalue: float = 1e-8
    span: float | None = None
    robust_iterations: int = 0

    @classmethod
    def of(cls, est):
        """The settings of estimator ``est``'s parameters."""
        params = est.get_params(deep=False)
        return cls(**{f.name: params[f.name] for f in fields(cls) if f.name in params})


class NadarayaWatsonBase(BaseEstimator):
    """Shared machinery of the Nadaraya--Watson estimators (not public)."""

    _parameter_constraints = {
        "kernel": [StrOptions(set(KERNELS)), Kernel],
        "bandwidth": [
            NotBoolInterval(Real, 0, np.inf, closed="neither"),
            StrOptions({*BANDWIDTH_RULES, "cv"}),
            "array-like",
        ],
        "metric": [StrOptions(set(CDIST_METRICS)), callable],
        "metric_params": [dict, None],
        "empty_window": [StrOptions(set(EMPTY_WINDOW_POLICIES))],
        "algorithm": [StrOptions(set(ALGORITHMS))],
        "span": [NotBoolInterval(Real, 0, 1, closed="right"), None],
        # joblib's convention: -1 is every processor, -2 all but one, ...
        "n_jobs": [
            NotBoolInterval(Integral, 1, None, closed="left"),
            NotBoolInterval(Integral, None, -1, closed="right"),
            None,
        ],
    }

    def __init__(
        self,
        *,
        kernel="gaussian",
        bandwidth="cv",
        metric="euclidean",
        metric_params=None,
        empty_window="nearest",
        algorithm="auto",
        n_jobs=None,
        span=None,
    ):
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.metric = metric
        self.metric_params = metric_params
        self.empty_window = empty_window
        self.algorithm = algorithm
        self.n_jobs = n_jobs
        self.span = span

    # -- fitting ---------------------------------------------------------------

    def _encode_features(self, X, reset):
        """``X`` with its discrete features encoded for this estimator
        (``X`` itself without discrete features); at fit (``reset``) learn them
        and set ``feature_types_`` and ``categories_``. Inputs that are not
        2-D, or sparse, are left to the estimator's validation."""
        if reset:
            self._discrete = None
            if sp.issparse(X):
                refuse_sparse_declarations(
                    self.categorical_features, self.ordered_features
                )
                d = X.shape[1] if X.ndim == 2 else 0
                self.feature_types_ = np.asarray(["continuous"] * d, dtype=object)
                self.categories_ = [None] * d
            table = table_of(X)
            if table is None:
                return X
            types = feature_types(
                table, self.categorical_features, self.ordered_features
            )
            self.feature_types_ = np.asarray([str(t) for t in types], dtype=object)
            self.categories_ = [None] * len(types)
            if not np.any(types != "continuous"):
                return X
            encoder = FeatureEncoder(types).fit(table)
            self._discrete = Discrete(
                encoder, self.categorical_kernel, self.ordered_kernel
            )
            self.categories_ = list(encoder.categories)
        discrete = self._discrete
        if discrete is None:
            return X
        if sp.issparse(X):
            raise ValueError(
                f"{type(self).__name__} was fitted with discrete features, which are "
                "read from dense arrays or DataFrames: give dense X."
            )
        if not reset and hasattr(X, "columns"):  # names checked before reading
            _check_feature_names(self, X, reset=False)
        table = table_of(X)
        if table is None or np.shape(table)[1] != discrete.n_features:
            return X  # the estimator's validation names the problem
        return discrete.encoder.transform(table)

    def _resolve_kernel(self):
        return self._check_kernel(get_kernel(self.kernel))

    def _check_kernel(self, kernel):
        """Hook for estimators that accept only some kernels."""
        return kernel

    #: The fitted discrete features (:class:`sknw._features.mixed.Discrete`), None
    #: without.
    _discrete = None

    def _check_discrete(self):
        """Hook: raise where the estimator cannot take these discrete
        features."""

    def _continuous(self, X):
        """The continuous columns of the (encoded) ``X``."""
        return X if self._discrete is None else self._discrete.continuous_of(X)

    def _continuous_bandwidth(self):
        """The bandwidth of the continuous features of ``bandwidth_`` (see
        :func:`~sknw._smoother.continuous_bandwidth`)."""
        return continuous_bandwidth(self.bandwidth_, self._discrete)

    def _resolve_bandwidth(self, X, sample_weight):
        """``bandwidth_``, and how it was chosen (``bandwidth_selection_``)."""
        bw = self.bandwidth
        if self.span_ is not None:
            return self._span_bandwidth(X, sample_weight)
        if self._discrete is not None and not (isinstance(bw, str) and bw == "cv"):
            return self._resolve_mixed_bandwidth(X, sample_weight)
        if isinstance(bw, str) and bw == "cv":
            bandwidth, self.bandwidth_selection_ = self._default_search(
                X, sample_weight
            )
            return bandwidth
        if isinstance(bw, str) and bw == "plugin":
            bandwidth = plugin_for(self, X, self.y_fit_, sample_weight)
            self.bandwidth_selection_ = {"method": "plugin", "n_samples": X.shape[0]}
            return bandwidth
        self.bandwidth_selection_ = {
            "method": bw if isinstance(bw, str) else "given",
            "n_samples": X.shape[0]
            if sample_weight is None
            else int(np.sum(sample_weight > 0)),
        }
        if isinstance(bw, str):
            w = sample_weight
            Xp = X if w is None else X[w > 0]
            wp = None if w is None else w[w > 0]
            return rule_bandwidth(
                Xp, bw, self.kernel_, wp, self.metric, self.metric_params_
            )
        return check_bandwidth(bw, X.shape[1])

    def _span_bandwidth(self, X, sample_weight):
        """``bandwidth_`` of a span (see :mod:`sknw._bandwidth.span`): the shape of the
        given per-feature bandwidth or of its rule (Scott's for ``"cv"`` and
        ``"plugin"``), sized so that the median bandwidth of the training
        points is one."""
        w = sample_weight
        shape = span_shape(
            self.bandwidth, X, w, self.kernel_, self.metric, self.metric_params_
        )
        total = X.shape[0] if w is None else float(np.sum(w))
        self.bandwidth_selection_ = {
            "method": "span",
            "span": self.span_,
            "n_neighbors": float(neighbour_count(self.span_, total)),
            "n_samples": X.shape[0] if w is None else int(np.sum(w > 0)),
        }
        return span_bandwidth(
            shape,
            self.span_,
            X,
            w,
            metric=self.metric,
            metric_params=self.metric_params_,
            scaling=scaling_of(shape, self.metric, X),
        )

    def _resolve_mixed_bandwidth(self, X, sample_weight):
        """``bandwidth_`` with discrete features, from a rule or a given
        bandwidth: the continuous entries as without them (from the
        continuous columns), the smoothing parameters given or their rule's
        (see :mod:`sknw._features.mixed`)."""
        discrete, bw = self._discrete, self.bandwidth
        w = sample_weight
        n = X.shape[0] if w is None else int(np.sum(w > 0))
        self.bandwidth_selection_ = {
            "method": bw if isinstance(bw, str) else "given",
            "n_samples": n,
        }
        # Frequency weights: the rule's n is their sum, as for the bandwidths.
        with np.errstate(over="ignore"):
            total = n if w is None else float(w.sum())
        lambdas = discrete.default_lambdas(total)
        Xc = self._continuous(X)
        if isinstance(bw, str) and bw == "plugin":
            raise ValueError(
                "bandwidth='plugin' takes one continuous feature and no "
                "discrete ones; use bandwidth='cv'."
            )
        if isinstance(bw, str):
            cont = 1.0
            if Xc.shape[1]:
                Xp = Xc if w is None else Xc[w > 0]
                wp = None if w is None else w[w > 0]
                cont = rule_bandwidth(
                    Xp, bw, self.kernel_, wp, self.metric, self.metric_params_
                )
            return discrete.join(cont, lambdas)
        if np.ndim(bw) == 0:
            return discrete.join(check_bandwidth(bw, Xc.shape[1]), lambdas)
        full = np.asarray(bw, dtype=np.float64)
        if full.shape != (X.shape[1],):
            raise ValueError(
                "A bandwidth must be a float (of the continuous features) or an "
                f"array of shape (n_features,) = ({X.shape[1]},) holding the "
                "smoothing parameters of the discrete features, got shape "
                f"{full.shape}."
            )
        cont, lambdas = discrete.split(full)
        check_bandwidth(cont, Xc.shape[1])
        discrete.check_lambdas(lambdas)
        return full.copy()

    def _search_problem(self, X, y, w, *, choices, algorithm=None):
        """The :class:`~sknw._selection.search.SearchProblem` of the ``choices`` (a
        :class:`~sknw._selection.search.SearchChoices`) on validated training data
        (``y``: the targets, or a classifier's encoded labels; ``w`` the
        sample weights or None), its passes by ``algorithm`` (None: the
        estimator's)."""
        kind, values, classes = self._search_targets(y)
        smoothing = Smoothing(
            metric=self.metric,
            metric_params=self.metric_params_,
            discrete=self._discrete,
            algorithm=self.algorithm if algorithm is None else algorithm,
            empty_window=self.empty_window,
            n_jobs=self.n_jobs,
            tolerance=self.binned_tol,
        )
        return SearchProblem(
            X=X,
            values=values,
            y_score=y,
            w=w,
            kind=kind,
            classes=classes,
            choices=choices,
            passes=self._search_passes(smoothing),
            check_kernel=self._check_kernel,
            owner=type(self).__name__,
        )

    def _default_search(self, X, sample_weight):
        """``bandwidth_`` and ``bandwidth_selection_`` of ``bandwidth="cv"``
        (see :func:`~sknw._selection.default.default_bandwidth`): the search of this
        estimator's kernel over the default grid, each distinct observation
        once, by the estimator's ``algorithm`` where it is exact (else
        ``"auto"``)."""
        exact = set(self._algorithms) & set(algorithms(tolerance=False))
        algorithm = self.algorithm if self.algorithm in exact else "auto"
        X, y, w = distinct_rows(X, self.y_fit_, sample_weight)
        choices = SearchChoices(kernels=[self.kernel_])
        problem = self._search_problem(X, y, w, choices=choices, algorithm=algorithm)
        return default_bandwidth(problem, self.algorithm)

    def _fit_searched(self, X, y, w, groups):
        """The fit of a ``*CV`` estimator on validated training data (``y``:
        the targets, or a classifier's encoded labels): search its choices
        (:class:`~sknw._selection.search.SearchChoices` of its parameters), store the
        choice (``cv_results_``, ``best_index_``, ``best_score_``,
        ``kernel_``, ``bandwidth_``, ``span_``) and fit with it.
        Leave-one-out scores each distinct observation once
        (:func:`~sknw._selection.weights.distinct_rows`), K-fold every row, its splits
        being of the rows; the splitter takes the ``groups``."""
        choices = SearchChoices.of(self.get_params(deep=False))
        groups = check_groups(groups, X.shape[0], choices.cv)
        self._fit_span(w)
        self.metric_params_ = self._resolve_metric_params(X, w)
        Xs, ys, ws = (X, y, w) if choices.cv is not None else distinct_rows(X, y, w)
        problem = self._search_problem(Xs, ys, ws, choices=choices)
        result = search(replace(problem, groups=groups))
        self.cv_results_ = result.cv_results
        self.best_index_ = result.best_index
        self.best_score_ = result.best_score
        self.kernel_ = result.kernel
        self.bandwidth_ = result.bandwidth
        self.span_ = result.span
        self.X_fit_, self.sample_weight_ = X, w
        self._resolve_algorithm(result.scaling)

    def _resolve_metric_params(self, X, sample_weight):
        """Metric parameters fixed at fit (``metric_params_``); the metric
        itself is stored as ``metric_``, which predictions read. With
        discrete features, from the continuous columns of ``X`` (and the
        discrete ones' levels are counted, see
        :meth:`sknw._features.mixed.Discrete.count_levels`)."""
        self.metric_ = self.metric
        if self._discrete is not None:
            self._check_discrete()
            self._discrete.count_levels(X, sample_weight)
        Xc = self._continuous(X)
        return resolve_metric_params(self.metric, self.metric_params, Xc, sample_weight)

    def _fit_common(self, X, sample_weight):
        """Resolve kernel, bandwidth and metric; store the training inputs."""
        self.kernel_ = self._resolve_kernel()
        sample_weight = check_sample_weight(sample_weight, X.shape[0])
        self._fit_span(sample_weight)
        self.metric_params_ = self._resolve_metric_params(X, sample_weight)
        self.bandwidth_ = self._resolve_bandwidth(X, sample_weight)
        self.X_fit_ = X
        self.sample_weight_ = sample_weight
        return sample_weight

    def _fit_span(self, sample_weight):
        """``span_`` (the parameter; a CV estimator sets its choice later),
        and the weights that count the neighbours (the sample weights, not
        the robustness weights); refused with discrete features. The first
        step of every fit: it also fixes the settings predictions read
        (:class:`FitSettings`)."""
        self._settings = FitSettings.of(self)
        self.span_ = self._settings.span
        self._neighbour_weight = sample_weight
        if self.span_ is not None and self._discrete is not None:
            raise ValueError(
                "span takes continuous features only: nearest neighbours are "
                "not defined across the levels of discrete features; use a "
                "bandwidth with them."
            )

    #: The fitted span (None: the bandwidth is the same at every query).
    span_ = None

    #: The values of ``algorithm`` the estimator accepts (see
    #: :func:`sknw._sums.algorithms`).
    _algorithms = ALGORITHMS
    #: Whether float32 inputs may have their sums computed in float32 (within
    #: the core's bound on the weights); else always float64.
    _float32_sums = True
    #: Whether the sums other than the index's own take the dense backend
    #: where the fitted one approximates (the local fits).
    _exact_sums = False

    def _resolve_algorithm(self, scaling=None):
        """Build the fitted smoother (``_smoother``: the scaling of the data,
        ``algorithm_`` and its index; see :func:`sknw._sums.choose`) from the
        fitted state.

        Called at the end of ``fit``, once the values to average are known.
        ``scaling``: the one the bandwidth was scored with (CV estimators);
        else that of :func:`sknw._bandwidth.scaling.scaling_of`.
        """
        if scaling is None:
            Xc = self._continuous(self.X_fit_)
            scaling = scaling_of(self._continuous_bandwidth(), self.metric_, Xc)
        smoother = FittedSmoother(
            X=self.X_fit_,
            sample_weight=self.sample_weight_,
            kernel=self.kernel_,
            bandwidth=self.bandwidth_,
            metric=self.metric_,
            metric_params=self.metric_params_,
            discrete=self._discrete,
            scaling=scaling,
            span=self.span_,
            neighbour_weight=self._neighbour_weight,
            empty_window=self._settings.empty_window,
            n_jobs=self.n_jobs,
            float32_sums=self._float32_sums,
            exact_sums=self._exact_sums,
        )
        self._smoother = smoother  # the dense backend until one is chosen
        head = smoother.head()
        if self.span_ is not None:
            head = self._span_fit_head(smoother)
            if head is None:  # per-query bandwidths: the dense backend
                self.algorithm_ = DENSE
                return
        request = FitRequest(
            X=self.X_fit_,
            sample_weight=self.sample_weight_,
            values=partial(self._index_values, smoother),
            powers=self._local_powers,
            head=head,
            scale=smoother.scale(),
            metric=self.metric_,
            metric_params=self.metric_params_,
            tolerance=self.binned_tol,
            tile_elements=_tile_elements(),
        )
        self.algorithm_, index = choose(self.algorithm, self._fit_algorithms(), request)
        self._smoother = replace(smoother, algorithm=self.algorithm_, index=index)

    def _span_fit_head(self, smoother):
        """With a span, the head of an index of per-query bandwidths (those
        of the training points; see :class:`~sknw._sums._sorted.SortedLadder`),
        where a backend other than the dense one may serve them (one feature,
        a kernel polynomial and continuous on its support, a line metric);
        else None, after refusing an ``algorithm`` that cannot serve them."""
        kernel = self.kernel_
        fast = (
            self.X_fit_.shape[1] == 1
            and why_not("sorted", kernel, self.metric_, self.metric_params_, 1) is None
            and is_continuous(kernel)
            and "sorted" in self._fit_algorithms()
        )
        if not fast:
            if self.algorithm not in ("auto", DENSE):
                raise ValueError(
                    f"algorithm={self.algorithm!r} cannot serve span="
                    f"{self.span_!r} (a bandwidth per query) here; use "
                    f"algorithm='auto' or {DENSE!r}."
                )
            return None
        (head,) = smoother.span_heads(self.X_fit_, [smoother.head()])
        return head

    def _fit_algorithms(self):
        """The backends ``algorithm`` may resolve to at fit."""
        return self._algorithms

    #: The highest power of the local moments the fitted index sums (local
    #: polynomial fits; 0: the sums of Nadaraya--Watson).
    _local_powers = 0

    def _index_values(self, smoother):
        """The values and weights ``(V, w)`` an index that holds them is built
        from (normalised by the ``smoother``), and the estimator sums."""
        V, w, _ = smoother.normalised(self._values())
        return V, w

    def _check_algorithm(self, kernel):
        """Raise if an explicit ``algorithm`` cannot serve ``kernel`` (with the
        fitted metric and number of features).

        The CV estimators check every candidate kernel before their search.
        """
        check(
            self.algorithm,
            kernel,
            self.metric_,
            self.metric_params_,
            self.n_features_in_
            if self._discrete is None
            else len(self._discrete.continuous),
        )

    # -- the weighted average ----------------------------------------------------

    #: Fewest queries per batch of a prediction (few batches, little overhead,
    #: and each batch split over the ``n_jobs`` workers).
    _MIN_BATCH_ROWS = 1 << 15

    def _query_width(self):
        """About how many float64 numbers a prediction holds per query while
        it computes (its temporaries, beyond the output)."""
        classes = getattr(self, "classes_", None)
        y = getattr(self, "y_fit_", None)
        k = len(classes) if classes is not None else (1 if y.ndim == 1 else y.shape[1])
        return 8 * (k + self.n_features_in_ + 4)

    def _batch_rows(self):
        """Queries per batch: the temporaries of a batch within the tile budget
        (``working_memory``), at least :attr:`_MIN_BATCH_ROWS`, and at least
        the training points for backends whose every call costs a pass over
        them (their indexes' values, the binned grid); :data:`BATCH_ROWS`
        where it is set."""
        if BATCH_ROWS.value is not None:
            return BATCH_ROWS.value
        rows = max(self._MIN_BATCH_ROWS, _tile_elements() // self._query_width())
        backend = BACKENDS[self.algorithm_]
        if backend.fixed_values or backend.tolerance:
            rows = max(rows, self.X_fit_.shape[0])
        return rows

    def _batched(self, X, compute):
        """``compute(Q)`` of the validated queries, over batches of
        :meth:`_batch_rows` queries: the extra memory of a prediction is its
        output plus one batch's temporaries, whatever the number of queries.
        ``compute`` returns an array or a tuple of arrays, a row per query;
        the warnings of the batches are merged into one per kind, with their
        counts summed. Each batch is recorded (``prediction_batch``: its first
        query, its number of queries, whether they reach ``compute`` sparse)."""
        if self._discrete is not None:
            # Discrete features are encoded (and validated) one batch at a
            # time: the encoded copy of the queries is a batch's.
            Q, validate = _raw_rows(X), self._validate_queries
        else:
            Q = self._validate_queries(X, keep_sparse=True)
            validate = _dense
        m, rows = Q.shape[0], self._batch_rows()
        if m <= rows:
            Q = validate(Q)
            record("prediction_batch", first=0, n_queries=m, sparse=sp.issparse(Q))
            return compute(Q)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = None
            for a in range(0, m, rows):
                batch = Q.iloc[a : a + rows] if hasattr(Q, "iloc") else Q[a : a + rows]
                batch = validate(batch)
                n, sparse = batch.shape[0], sp.issparse(batch)
                record("prediction_batch", first=a, n_queries=n, sparse=sparse)
                part = compute(batch)
                single = not isinstance(part, tuple)
                part = (part,) if single else part
                if out is None:  # the outputs, filled batch by batch
                    out = [np.empty((m,) + p.shape[1:], dtype=p.dtype) for p in part]
                for o, p in zip(out, part, strict=True):
                    o[a : a + rows] = p
        _merge_warnings(caught, m)
        return out[0] if single else tuple(out)

    def _validate_queries(self, X, keep_sparse=False):
        """Validated queries, dense (a sparse matrix densified; kept sparse,
        in CSR, with ``keep_sparse``, for :meth:`_batched` to densify one
        batch at a time)."""
        check_is_fitted(self)
        X = self._encode_features(X, reset=False)
        check_not_text(X, categorical=True)
        Q = validate_data(
            self,
            X,
            reset=False,
            dtype=[np.float64, np.float32],
            accept_sparse=SPARSE_FORMATS,
        )
        if sp.issparse(Q):
            return Q.tocsr() if keep_sparse else Q.toarray()
        return Q

    def attention_weights(self, X):
        """Normalised kernel weights of the training points for each query.

        Row ``i`` holds the weights with which the estimate at query ``X[i]``
        averages the training targets (the attention pooling view: the queries
        attend to the training inputs as keys). Rows sum to one; queries with an
        empty window follow the ``empty_window`` policy (``"nan"`` gives a row
        of NaN).

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
            Queries.

        Returns
        -------
        ndarray of shape (n_queries, n_train)
            Columns in the order of the training rows, ``X_fit_``.
        """
        Q = self._validate_queries(X)
        return self._smoother.attention_weights(Q)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # Sparse inputs are densified, but discrete features are read from
        # dense arrays or DataFrames only.
        categorical = self.categorical_features
        tags.input_tags.sparse = self.ordered_features is None and (
            categorical is None
            or (isinstance(categorical, str) and categorical == "from_dtype")
        )
        return tags

    def __sizeof__(self):
        """Bytes of the estimator with the arrays it holds, about what it pickles.

        Counts the arrays among the attributes (``X_fit_``, ``y_fit_``,
        ``sample_weight_``, ...), in dict attributes and in helper objects
        (the fitted smoother), each array once, and the KD-tree's data and
        index arrays, so that :func:`sys.getsizeof` and ``dask.sizeof`` see a
        fitted model as large as it is: joblib's dask backend then scatters
        it once instead of shipping it with every task.
        """
        arrays = {}

        def add(values):
            for v in values:
                if isinstance(v, np.ndarray):
                    arrays[id(v)] = v.nbytes

        add(vars(self).values())
        for value in vars(self).values():
            if isinstance(value, dict):
                add(value.values())
            elif hasattr(value, "__dict__"):
                add(vars(value).values())
        smoother = vars(self).get("_smoother")
        index = None if smoother is None else smoother.index
        size = object.__sizeof__(self) + sum(arrays.values())
        if isinstance(index, cKDTree):  # its arrays are not attributes
            size += index.data.nbytes + index.indices.nbytes
        for part in getattr(index, "indexes", ()):  # a ladder of indexes
            size += sum(
                v.nbytes for v in vars(part).values() if isinstance(v, np.ndarray)
            )
        return size


def _dense(Q):
    """A batch of validated queries, densified where sparse."""
    return Q.toarray() if sp.issparse(Q) else Q


def _raw_rows(X):
    """Queries as given, sliceable by rows: a DataFrame or sparse matrix as
    is, anything else as an array (objects kept where they are not all
    numbers); the validation of each batch names the problems."""
    if hasattr(X, "iloc") or sp.issparse(X) or hasattr(X, "shape"):
        return X
    try:
        return as_rows(X)
    except (TypeError, ValueError):
        return np.asarray(X, dtype=object)


def _merge_warnings(caught, m):
    """Warn once per kind and message of the counted warnings
    (:class:`~sknw.exceptions.QueryWarning`), with the counts of every batch
    summed over the ``m`` queries of the call (the others as they came)."""
    merged = {}
    for caught_warning in caught:
        message, category = caught_warning.message, caught_warning.category
        if isinstance(message, QueryWarning) and message.n_affected is not None:
            key = (category, str(message))
            merged[key] = merged.get(key, 0) + message.n_affected
        else:
            warnings.warn(message, category, stacklevel=3)
    for (category, text), count in merged.items():
        warn(text, category, n_affected=count, n_queries=m)
