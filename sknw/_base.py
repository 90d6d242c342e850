"""Parameters, fitting and weighted averaging shared by all sknw estimators."""

import warnings
from dataclasses import dataclass, fields, replace
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from scipy.spatial import cKDTree
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from ._bandwidth import BANDWIDTH_RULES, rule_bandwidth
from ._default import default_bandwidth, plugin_for
from ._mixed import encode_features
from ._scaling import scaling_of
from ._search import SearchChoices, SearchProblem, search
from ._selection import Smoothing, check_groups
from ._span import (
    neighbour_count,
    neighbour_distances,
    span_bandwidth,
    span_shape,
)
from ._sums import (
    ALGORITHMS,
    BACKENDS,
    DENSE,
    FitRequest,
    Head,
    algorithms,
    backend_sums,
    check,
    choose,
    default_tile_elements,
    empty_window_estimates,
    log_weight_rows,
    nearest_mask,
    nearest_scale,
    nearest_sums,
    pairwise_distances,
    power_of_two_scale,
    why_not,
)
from ._sums._base import _scaled_rows
from ._sums._cells import DiscreteHead, cell_nearest_sums, cell_nearest_weights
from ._sums._traits import is_compact, is_continuous
from ._trace import Tunable, record
from ._uncertainty import SquaredKernel, SquaredWeights
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
from ._weights import distinct_rows
from .exceptions import EMPTY_WINDOWS, EmptyWindowWarning, QueryWarning, warn
from .kernels import KERNELS, Kernel, get_kernel

#: Tile size used by the estimators (see :func:`default_tile_elements`).
_tile_elements = default_tile_elements


#: Queries per batch of a prediction, where set (None: from the working
#: memory, see :meth:`NadarayaWatsonBase._batch_rows`): small batches on
#: small data.
BATCH_ROWS = Tunable(None)


@dataclass(frozen=True)
class FitSettings:
    """The parameters that predictions read, as they were at fit: a
    parameter changed after fit takes effect at the next fit only.

    ``max_leverage`` and ``min_eigenvalue`` are the local fits' (their
    defaults elsewhere)."""

    empty_window: str
    max_leverage: float | None = 100.0
    min_eigenvalue: float = 1e-8

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

    def _resolve_kernel(self):
        return self._check_kernel(get_kernel(self.kernel))

    def _check_kernel(self, kernel):
        """Hook for estimators that accept only some kernels."""
        return kernel

    #: The fitted discrete features (:class:`sknw._mixed.Discrete`), None
    #: without.
    _discrete = None

    def _check_discrete(self):
        """Hook: raise where the estimator cannot take these discrete
        features."""

    def _continuous(self, X):
        """The continuous columns of the (encoded) ``X``."""
        return X if self._discrete is None else self._discrete.continuous_of(X)

    def _continuous_bandwidth(self):
        """The bandwidth of the continuous features: ``bandwidth_`` without
        discrete features, else its continuous entries (a float where they
        are equal)."""
        if self._discrete is None:
            return self.bandwidth_
        bw = self._discrete.split(self.bandwidth_)[0]
        if not bw.size:  # no continuous feature: its kernel is constant
            return 1.0
        return float(bw[0]) if np.all(bw == bw[0]) else bw

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
        """``bandwidth_`` of a span (see :mod:`sknw._span`): the shape of the
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

    def _span_heads(self, Q, heads, own=None):
        """``heads`` with each query's nearest-neighbour bandwidth (a span,
        ``span_``; as they are without): each divisor becomes the query's
        bandwidth times its ratio to the fitted head's. ``own``: the queries
        are these training points, each left out of its own window (its
        whole row)."""
        if self.span_ is None:
            return heads
        h = self._span_neighbours(Q, own)
        base = float(self._scaling.divisor)
        return [Head(hd.kernel, h * (float(hd.divisor) / base)) for hd in heads]

    def _span_neighbours(self, Q, own=None, with_index=False):
        """Each query's distance to its ``k``-th nearest training point
        (:func:`~sknw._span.neighbour_distances`; with ``with_index``, and
        that point's index), ``own`` as in :meth:`_span_heads`."""
        w = self._neighbour_weight
        return neighbour_distances(
            Q,
            self.X_fit_,
            self.span_,
            metric=self.metric_,
            metric_params=self.metric_params_,
            scale=self._scale(),
            sample_weight=w,
            own=own,
            tile_elements=_tile_elements(),
            with_index=with_index,
        )

    def _resolve_mixed_bandwidth(self, X, sample_weight):
        """``bandwidth_`` with discrete features, from a rule or a given
        bandwidth: the continuous entries as without them (from the
        continuous columns), the smoothing parameters given or their rule's
        (see :mod:`sknw._mixed`)."""
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
        """The :class:`~sknw._search.SearchProblem` of the ``choices`` (a
        :class:`~sknw._search.SearchChoices`) on validated training data
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
            tolerance=getattr(self, "binned_tol", None),
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
        (see :func:`~sknw._default.default_bandwidth`): the search of this
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
        (:class:`~sknw._search.SearchChoices` of its parameters), store the
        choice (``cv_results_``, ``best_index_``, ``best_score_``,
        ``kernel_``, ``bandwidth_``, ``span_``) and fit with it.
        Leave-one-out scores each distinct observation once
        (:func:`~sknw._weights.distinct_rows`), K-fold every row, its splits
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
        :meth:`sknw._mixed.Discrete.count_levels`)."""
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
        self.span_ = getattr(self, "span", None)
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

    def _resolve_algorithm(self, scaling=None):
        """Set the scaling of the data, ``algorithm_`` and its index from the
        fitted state (see :func:`sknw._sums.choose`).

        Called at the end of ``fit``, once the values to average are known.
        ``scaling``: the one the bandwidth was scored with (CV estimators);
        else that of :func:`sknw._scaling.scaling_of`.
        """
        if scaling is None:
            Xc = self._continuous(self.X_fit_)
            scaling = scaling_of(self._continuous_bandwidth(), self.metric_, Xc)
        self._scaling = scaling
        head = self._head()
        if self.span_ is not None:
            head = self._span_fit_head()
            if head is None:  # per-query bandwidths: the dense backend
                self.algorithm_, self._index = DENSE, None
                return
        request = FitRequest(
            X=self.X_fit_,
            sample_weight=self.sample_weight_,
            values=self._index_values,
            powers=self._local_powers,
            head=head,
            scale=self._scale(),
            metric=self.metric_,
            metric_params=self.metric_params_,
            tolerance=getattr(self, "binned_tol", None),
            tile_elements=_tile_elements(),
        )
        self.algorithm_, self._index = choose(
            self.algorithm, self._fit_algorithms(), request
        )

    def _span_fit_head(self):
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
        (head,) = self._span_heads(self.X_fit_, [self._head()])
        return head

    def _fit_algorithms(self):
        """The backends ``algorithm`` may resolve to at fit."""
        return self._algorithms

    #: The highest power of the local moments the fitted index sums (local
    #: polynomial fits; 0: the sums of Nadaraya--Watson).
    _local_powers = 0

    def _index_values(self):
        """The values and weights ``(V, w)`` an index that holds them is built
        from (normalised, :meth:`_normalised`), and the estimator sums."""
        V, w, _ = self._normalised(self._values())
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

    def _scale(self):
        """What divides the features (None: nothing); the head's divisor
        completes the bandwidth (see :mod:`sknw._scaling`)."""
        return self._scaling.scale

    def _head(self):
        """The head of the sums: the continuous kernel and bandwidth, with
        the discrete features' factors where there are any."""
        head = self._scaling.head(self.kernel_)
        if self._discrete is None:
            return head
        return self._discrete.head(head, self._discrete.split(self.bandwidth_)[1])

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
        X = encode_features(self, X, reset=False)
        check_not_text(X, categorical=hasattr(self, "categorical_features"))
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

    def _weighted_average(self, X, V, squared=False, validated=False, own=None):
        """Kernel-weighted averages of the rows of ``V`` at the queries ``X``.

        Queries with an empty window are handled by the ``empty_window`` policy.
        With ``squared=True``, also returns the sums of the squared weights
        (:class:`~sknw._uncertainty.SquaredWeights`), from the same pass with a
        second head, the squared kernel. ``validated``: ``X`` is already an
        array of validated queries. ``own``: the queries are the training
        points of these indices, each left out of its own average (its whole
        row; leave-one-out, without ``squared``).
        """
        Q = X if validated else self._validate_queries(X)
        k = V.shape[1]
        if squared:
            # The kernel-weighted mean of 1 / w (0 for weight 0): the second
            # moment of the noise under precision weights, in units of the
            # weights divided by their power of two (see _squared_weights).
            w0 = self.sample_weight_
            if w0 is None:
                recip = np.ones(V.shape[0])
            else:
                wn = w0 / self._weight_unit()
                with np.errstate(divide="ignore"):
                    recip = np.where(wn > 0, 1.0 / np.where(wn > 0, wn, 1.0), 0.0)
            V = np.hstack([V, recip[:, None]])
        V, w, column_scale = self._normalised(V)
        head = self._head()
        heads = [head]
        if squared:
            square = Head(SquaredKernel(head.kernel), head.divisor)
            if isinstance(head, DiscreteHead):
                square = head.with_head(square, power=2)
            heads.append(square)
        results = self._kernel_sums(Q, V, w, heads, own=own)
        S, den, M = results[0]
        empty = ~(den != 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            avg = S / den[:, None]
        if empty.any():
            mine = None if own is None else own[empty]
            avg[empty] = self._empty_values(Q[empty], V, empty, w, own=mine)
        avg *= column_scale
        if not squared:
            return avg
        sq = self._squared_weights(results, column_scale, empty, Q, V, w)
        return avg[:, :k], sq._replace(
            average=sq.average[:, :k], inverse_weight=avg[:, k]
        )

    def _weight_unit(self):
        """The power of two the sample weights are divided by (1 without):
        the standard errors' sums are per unit of the weights so divided, in
        which their reciprocals neither overflow nor underflow; the noise
        variance per unit of weight is ``c`` times theirs."""
        w = self.sample_weight_
        return 1.0 if w is None else float(power_of_two_scale(w))

    def _squared_weights(self, results, column_scale, empty, Q, V, w):
        """Sums of the squared weights of one observation, from the two heads.

        With sample weights ``w`` divided by ``c`` (:meth:`_weight_unit`),
        the weight of one unit of those weights of point ``j`` is ``a_j = K_j
        / den`` (shifts aside), and ``sum_j w_j a_j**2 V_j = S2 / den**2``.
        Rows of a kernel of unbounded support whose weights all underflowed
        (an extreme bandwidth) take those of their limit, the nearest
        training points.
        """
        (_, den, M), (S2, den2, M2) = results
        # The squared kernel's log values are exactly twice the kernel's, so
        # its shift is exactly 2 M; the factor is 1 unless the paths differ.
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            diff = M2 - 2.0 * M
            factor = np.exp(np.where(np.isfinite(diff), diff, 0.0))
            inv = 1.0 / den
            ratio = inv * inv * factor
            log_k0 = float(np.asarray(self.kernel_.log_value(np.zeros(1)))[0])
            if self._discrete is not None:
                log_k0 += np.log(self._head().factors.self_factor())
            self_weight = np.exp(log_k0 - M) * inv
            average = S2 * ratio[:, None] * column_scale
            total = den2 * ratio
        undefined = empty.copy()
        if empty.any() and not is_compact(self.kernel_):
            # The nearest points, of total weight den_t, each get 1 / den_t.
            S_t, den_t = self._nearest_sums(Q[empty], V, w)
            inv_t = 1.0 / den_t
            average[empty] = S_t * (inv_t * inv_t)[:, None] * column_scale
            total[empty] = inv_t
            self_weight[empty] = inv_t
            undefined[empty] = False
        for a in (average, total, self_weight):
            a[undefined] = np.nan
        return SquaredWeights(average, total, self_weight, undefined, None)

    def _nearest_sums(self, Qe, V, w):
        """Sums of ``w V`` over the nearest training points of the queries
        ``Qe`` (see :func:`sknw._sums.nearest_sums`; with discrete features,
        among the points of positive factor, weighted by it)."""
        X, scale = self.X_fit_, self._scale()
        params = {
            "metric": self.metric_,
            "metric_params": self.metric_params_,
            "sample_weight": w,
            "tile_elements": _tile_elements(),
        }
        if self._discrete is None:
            near = nearest_scale(scale, self.metric_, X, Qe)
            return nearest_sums(Qe, X, V, scale=near, **params)
        Xc, Qc = self._continuous(X), self._continuous(Qe)
        near = nearest_scale(scale, self.metric_, Xc, Qc)
        factors = self._head().factors
        S, den, _ = cell_nearest_sums(Qe, X, V, factors, scale=near, **params)
        return S, den

    def _sums_backend(self):
        """The backend and index of :meth:`_kernel_sums`: the fitted ones."""
        return self.algorithm_, self._index

    def _kernel_sums(self, Q, V, w, heads, own=None):
        """The core's sums for every head, by the fitted ``algorithm_`` (the
        dense backend where its index does not serve these values and heads,
        see :func:`sknw._sums.backend_sums`). ``own``: leave-one-out sums of
        the training points of these indices (see :meth:`_leave_out`)."""
        if not self._float32_sums:
            # float32 queries would let the core sum in float32 (see the core's
            # F32_TOLERANCE); float64 queries keep it in float64.
            Q = np.asarray(Q, dtype=np.float64)
        name, index = self._sums_backend()
        return backend_sums(
            name,
            index,
            Q,
            self.X_fit_,
            V,
            self._span_heads(Q, heads, own),
            n_jobs=self.n_jobs,
            metric=self.metric_,
            metric_params=self.metric_params_,
            scale=self._scale(),
            sample_weight=w,
            tile_elements=_tile_elements(),
            **self._leave_out(own),
        )

    def _leave_out(self, own):
        """The core's leave-one-out parameters for queries that are the
        training points ``own`` (none for None): each point's whole row
        leaves its own sums, whatever its weight (see :mod:`sknw._weights`)."""
        if own is None:
            return {}
        return {"exclude_self": True, "self_index": own}

    def _normalised(self, V):
        """Values and weights divided by powers of two (exactly).

        Returns ``(V / column_scale, w / weight_scale, column_scale)``: the
        weighted averages of the normalised values times ``column_scale`` are
        those of ``V``, free of overflow and subnormal products.
        """
        column_scale = power_of_two_scale(V, axis=0)
        w = self.sample_weight_
        if w is not None:
            w = w / power_of_two_scale(w)
        return V / column_scale, w, column_scale

    def _empty_error(self, empty):
        """The error of ``empty_window="raise"`` for the mask ``empty``."""
        return ValueError(
            f"{self._empty_message(empty)}. Use a larger bandwidth, a kernel "
            "with unbounded support, or empty_window='nearest', 'mean' or 'nan'."
        )

    def _empty_message(self, empty):
        n_empty, m = int(empty.sum()), empty.shape[0]
        return (
            f"{n_empty} of {m} queries have no training point with a non-zero "
            f"kernel weight (empty window of {self.kernel_!r} at bandwidth "
            f"{self.bandwidth_!r})"
        )

    def _empty_values(self, Qe, V, empty, w=None, own=None):
        """Estimates (or, with ``V=None``, weight rows) for empty-window queries.

        A kernel with unbounded support has an all-zero row only when the scaled
        distances overflow at an extreme bandwidth; those queries get the limit
        of a vanishing bandwidth, their nearest training points, silently.
        """
        policy = self._settings.empty_window
        if not is_compact(self.kernel_):
            policy = "nearest"
        elif policy == "raise":
            raise self._empty_error(empty)
        else:
            warn(
                f"{EMPTY_WINDOWS}; they use empty_window={policy!r}.",
                EmptyWindowWarning,
                n_affected=int(empty.sum()),
                n_queries=empty.shape[0],
            )
        if policy == "nan":
            return np.nan
        if w is None and self.sample_weight_ is not None:
            w = self.sample_weight_ / power_of_two_scale(self.sample_weight_)
        params = {"metric": self.metric_, "metric_params": self.metric_params_}
        factors = None if self._discrete is None else self._head().factors
        if V is not None:
            return empty_window_estimates(
                policy,
                Qe,
                self.X_fit_,
                V,
                w,
                scale=self._scale(),
                tile_elements=_tile_elements(),
                factors=factors,
                on_mean=self._warn_no_factor,
                **self._leave_out(own),
                **params,
            )
        if policy == "mean":
            w = np.ones(self.X_fit_.shape[0]) if w is None else w
            return w / w.sum()
        if factors is not None:
            Xc, Qc = self._continuous(self.X_fit_), self._continuous(Qe)
            scale = nearest_scale(self._scale(), self.metric_, Xc, Qc)
            mask, none = cell_nearest_weights(
                Qe, self.X_fit_, factors, scale=scale, sample_weight=w, **params
            )
            if none.any():  # no point of positive factor: the mean's weights
                self._warn_no_factor(int(none.sum()))
            return mask / mask.sum(axis=1, keepdims=True)
        scale = nearest_scale(self._scale(), self.metric_, self.X_fit_, Qe)
        Qs = _scaled_rows(Qe, 0, Qe.shape[0], scale)
        Xs = _scaled_rows(self.X_fit_, 0, self.X_fit_.shape[0], scale)
        mask = nearest_mask(pairwise_distances(Qs, Xs, **params), w)
        return mask / mask.sum(axis=1, keepdims=True)

    def _warn_no_factor(self, count):
        """Warn of queries whose every discrete factor is 0 (see
        :func:`sknw._sums.empty_window_estimates`)."""
        warn(
            "Some queries have no training point with a non-zero weight: "
            "their levels match none seen at fit where the smoothing parameter "
            "is 0; they use the weighted mean of the targets. Use positive "
            "smoothing parameters to borrow from other levels.",
            EmptyWindowWarning,
            n_affected=count,
        )

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
        out = np.empty((Q.shape[0], self.X_fit_.shape[0]))
        for rows, W in log_weight_rows(
            Q,
            self.X_fit_,
            self._span_heads(Q, [self._head()])[0],
            metric=self.metric_,
            metric_params=self.metric_params_,
            scale=self._scale(),
            sample_weight=self.sample_weight_,
            tile_elements=_tile_elements(),
        ):
            out[rows] = W
        den = out.sum(axis=1)
        empty = ~(den != 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            out /= den[:, None]
        if empty.any():
            out[empty] = self._empty_values(Q[empty], None, empty)
        return out

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # Sparse inputs are densified, but discrete features are read from
        # dense arrays or DataFrames only.
        categorical = getattr(self, "categorical_features", None)
        tags.input_tags.sparse = getattr(self, "ordered_features", None) is None and (
            categorical is None
            or (isinstance(categorical, str) and categorical == "from_dtype")
        )
        return tags

    def __sizeof__(self):
        """Bytes of the estimator with the arrays it holds, about what it pickles.

        Counts the arrays among the attributes (``X_fit_``, ``y_fit_``,
        ``sample_weight_``, ...), in dict attributes and in helper objects, and
        the KD-tree's data and index arrays, so that :func:`sys.getsizeof` and
        ``dask.sizeof`` see a fitted model as large as it is: joblib's dask
        backend then scatters it once instead of shipping it with every task.
        """

        def nbytes(values):
            return sum(v.nbytes for v in values if isinstance(v, np.ndarray))

        size = object.__sizeof__(self)
        for value in vars(self).values():
            if isinstance(value, np.ndarray):
                size += value.nbytes
            elif isinstance(value, dict):
                size += nbytes(value.values())
            elif hasattr(value, "__dict__"):
                size += nbytes(vars(value).values())
        index = vars(self).get("_index")
        if isinstance(index, cKDTree):  # its arrays are not attributes
            size += index.data.nbytes + index.indices.nbytes
        for part in getattr(index, "indexes", ()):  # a ladder of indexes
            size += nbytes(vars(part).values())
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
