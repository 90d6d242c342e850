"""Parameters, fitting and weighted averaging shared by all sknw estimators."""

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from scipy.spatial.distance import cdist
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from ._bandwidth import BANDWIDTH_RULES, rule_bandwidth
from ._binned import binned_eligible, binned_grid, binned_kernel_sums, gaussian_sigma
from ._fgt import MIN_POINTS_PER_BOX, GaussIndex, fgt_kernel_sums
from ._uncertainty import SquaredKernel, SquaredWeights
from ._weights import (
    TREE_MAX_FRACTION,
    Head,
    SortedIndex,
    _scaled_rows,
    build_tree,
    default_tile_elements,
    log_weight_rows,
    nearest_mask,
    nearest_sums,
    pairwise_distances,
    parallel_kernel_sums,
    power_of_two_scale,
    sorted_eligible,
    sorted_kernel_sums,
    tree_kernel_sums,
    tree_p,
    window_fraction,
)
from .exceptions import EmptyWindowWarning, warn
from .kernels import KERNELS, Kernel, get_kernel

#: Tile size used by the estimators (see :func:`default_tile_elements`).
_tile_elements = default_tile_elements

#: Metric names accepted by :func:`scipy.spatial.distance.cdist`.
CDIST_METRICS = (
    "braycurtis",
    "canberra",
    "chebyshev",
    "cityblock",
    "correlation",
    "cosine",
    "dice",
    "euclidean",
    "hamming",
    "jaccard",
    "jensenshannon",
    "mahalanobis",
    "minkowski",
    "rogerstanimoto",
    "russellrao",
    "seuclidean",
    "sokalsneath",
    "sqeuclidean",
    "yule",
)

EMPTY_WINDOW_POLICIES = ("nearest", "mean", "nan", "raise")


def check_not_text(X, name="X"):
    """Reject arrays of strings of digits: sknw does not parse numbers from text.

    Other strings are left to scikit-learn's validation, which names the value
    it cannot convert.
    """
    kind = getattr(getattr(X, "dtype", None), "kind", None)
    if kind is None and not sp.issparse(X) and not hasattr(X, "__array__"):
        try:
            kind = np.asarray(X).dtype.kind
        except (TypeError, ValueError):
            return
    if kind in ("U", "S"):
        try:
            np.asarray(X, dtype=np.float64)
        except (TypeError, ValueError):
            return  # not numbers: validation reports the string it cannot read
        raise ValueError(
            f"{name} holds strings; sknw needs numeric input (encode categories "
            "or convert numbers, e.g. with astype(float), first)."
        )


def check_dense_target(y):
    """Reject a sparse target with a message that says so."""
    if sp.issparse(y):
        raise TypeError(
            "A sparse y is not supported; convert it with .toarray() first."
        )


def validate_regression_data(estimator, X, y):
    """Validated regression inputs: ``X`` as float64 or float32 (C order), ``y``
    as float64, with one or several outputs."""
    check_not_text(X)
    check_dense_target(y)
    X, y = validate_data(
        estimator,
        X,
        y,
        dtype=[np.float64, np.float32],
        order="C",
        multi_output=True,
        y_numeric=True,
    )
    return X, np.asarray(y, dtype=np.float64)


def check_bandwidth(bandwidth, n_features):
    """A positive finite float, or an array of them of shape (n_features,)."""
    arr = np.asarray(bandwidth, dtype=np.float64)
    if arr.ndim == 0:
        value = float(arr)
        if not (np.isfinite(value) and value > 0):
            raise ValueError(
                f"bandwidth must be positive and finite, got {bandwidth!r}."
            )
        return value
    if arr.ndim != 1 or arr.shape[0] != n_features:
        raise ValueError(
            "A bandwidth must be a float or an array of shape (n_features,) = "
            f"({n_features},), got shape {arr.shape}."
        )
    if not np.all(np.isfinite(arr) & (arr > 0)):
        raise ValueError(
            f"Every per-feature bandwidth must be positive and finite, got {arr}."
        )
    return arr


def check_sample_weight(sample_weight, n_samples):
    """Validate sample weights: finite, non-negative, not all zero."""
    if sample_weight is None:
        return None
    if np.isscalar(sample_weight):
        sample_weight = np.full(n_samples, sample_weight, dtype=np.float64)
    if sp.issparse(sample_weight):
        raise TypeError(
            "sample_weight must be dense: a sparse matrix is not supported; "
            "convert it with .toarray().ravel()."
        )
    w = np.asarray(sample_weight)
    if w.dtype.kind == "c":
        raise ValueError("sample_weight must be real, got complex values.")
    try:
        w = w.astype(np.float64, copy=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"sample_weight must be numeric: {exc}") from None
    if w.ndim != 1 or w.shape[0] != n_samples:
        raise ValueError(f"sample_weight.shape == {w.shape}, expected ({n_samples},).")
    if not np.all(np.isfinite(w)):
        raise ValueError("sample_weight must be finite (no NaN or infinity).")
    if np.any(w < 0):
        raise ValueError("Negative values in sample_weight are not allowed.")
    if not np.any(w > 0):
        raise ValueError(
            "All sample weights are zero: sample_weight must have at least one "
            "positive value."
        )
    return w


def _check_metric_values(params):
    """Reject metric parameters that scipy's cdist would silently misuse."""

    def fail(name, requirement):
        raise ValueError(
            f"metric_params[{name!r}] must be {requirement}, got {params[name]!r}."
        )

    if "p" in params and isinstance(params["p"], Real):
        p = params["p"]
        if not p > 0:  # NaN fails too; np.inf is allowed
            fail("p", "a positive number (np.inf for chebyshev)")
    if "w" in params:
        w = np.asarray(params["w"], dtype=np.float64)
        if not np.all(np.isfinite(w)):
            fail("w", "finite and non-negative")
    if "V" in params:
        V = np.asarray(params["V"], dtype=np.float64)
        if not (np.all(np.isfinite(V)) and np.all(V > 0)):
            fail("V", "finite and positive (variances)")
    if "VI" in params:
        VI = np.asarray(params["VI"], dtype=np.float64)
        if not np.all(np.isfinite(VI)):
            fail("VI", "finite")
        sym = (VI + VI.T) / 2
        eig = np.linalg.eigvalsh(sym)
        if eig.min() < -1e-10 * max(abs(eig).max(), 1.0):
            fail("VI", "positive semi-definite (an inverse covariance)")


#: Metrics with d(x / h, q / h) = d(x, q) / h for h > 0.
DEGREE_ONE = frozenset(
    {"euclidean", "cityblock", "chebyshev", "minkowski", "seuclidean",
     "mahalanobis"}
)  # fmt: skip


def nearest_scale(scale, metric, X, Q):
    """What divides the features for a search of nearest points.

    Nearest points do not change under a common factor, for metrics
    homogeneous of degree one: a scale equal for every feature is dropped
    (dividing by it would round distances and break exact ties), and a power
    of two brings the coordinates of the training points and the queries to
    order one (squared distances representable).
    """
    if metric not in DEGREE_ONE:
        return scale
    d = X.shape[1]
    base = np.ones(d) if scale is None or np.all(scale == scale[0]) else scale
    with np.errstate(over="ignore"):
        largest = max(
            np.max(np.abs(X / base), initial=0.0),
            np.max(np.abs(Q / base), initial=0.0),
        )
    if np.isfinite(largest) and largest > 0:
        return base * power_of_two_scale(largest)
    return base


class NadarayaWatsonBase(BaseEstimator):
    """Shared machinery of the Nadaraya--Watson estimators (not public)."""

    _parameter_constraints = {
        "kernel": [StrOptions(set(KERNELS)), Kernel],
        "bandwidth": [
            Interval(Real, 0, np.inf, closed="neither"),
            StrOptions(set(BANDWIDTH_RULES)),
            "array-like",
        ],
        "metric": [StrOptions(set(CDIST_METRICS)), callable],
        "metric_params": [dict, None],
        "empty_window": [StrOptions(set(EMPTY_WINDOW_POLICIES))],
        "algorithm": [StrOptions({"auto", "brute", "tree", "sorted", "fgt", "binned"})],
        "n_jobs": [Integral, None],
    }

    def __init__(
        self,
        *,
        kernel="gaussian",
        bandwidth="scott",
        metric="euclidean",
        metric_params=None,
        empty_window="nearest",
        algorithm="auto",
        n_jobs=None,
    ):
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.metric = metric
        self.metric_params = metric_params
        self.empty_window = empty_window
        self.algorithm = algorithm
        self.n_jobs = n_jobs

    # -- fitting ---------------------------------------------------------------

    def _resolve_kernel(self):
        return self._check_kernel(get_kernel(self.kernel))

    def _check_kernel(self, kernel):
        """Hook for estimators that accept only some kernels."""
        return kernel

    def _resolve_bandwidth(self, X, sample_weight):
        bw = self.bandwidth
        if isinstance(bw, str):
            w = sample_weight
            Xp = X if w is None else X[w > 0]
            wp = None if w is None else w[w > 0]
            return rule_bandwidth(
                Xp, bw, self.kernel_, wp, self.metric, self.metric_params_
            )
        return check_bandwidth(bw, X.shape[1])

    def _resolve_metric_params(self, X, sample_weight):
        """Metric parameters with data-dependent defaults fixed at fit time.

        The defaults of ``"mahalanobis"`` (``VI``) and ``"seuclidean"`` (``V``)
        come from the weighted (ddof=0) covariance of the unscaled training data.
        """
        params = dict(self.metric_params or {})
        metric = self.metric
        if metric in ("mahalanobis", "seuclidean"):
            w = np.ones(X.shape[0]) if sample_weight is None else sample_weight
            centred = X - (w @ X) / w.sum()
            if metric == "mahalanobis" and "VI" not in params:
                cov = (centred * w[:, None]).T @ centred / w.sum()
                params["VI"] = np.linalg.pinv(cov, hermitian=True)
            if metric == "seuclidean" and "V" not in params:
                var = w @ centred**2 / w.sum()
                params["V"] = np.where(var > 0, var, 1.0)
        d = X.shape[1]
        for name, shape in (("VI", (d, d)), ("V", (d,))):
            if name in params and np.shape(params[name]) != shape:
                raise ValueError(
                    f"metric_params[{name!r}] must have shape {shape} for "
                    f"{d} features, got shape {np.shape(params[name])}."
                )
        _check_metric_values(params)
        try:
            cdist(X[:1], X[:1], metric, **params)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"metric_params {self.metric_params!r} do not fit metric "
                f"{metric!r}: {exc}"
            ) from None
        return params

    def _fit_common(self, X, sample_weight):
        """Resolve kernel, bandwidth and metric; store the training inputs."""
        self.kernel_ = self._resolve_kernel()
        sample_weight = check_sample_weight(sample_weight, X.shape[0])
        self.metric_params_ = self._resolve_metric_params(X, sample_weight)
        self.bandwidth_ = self._resolve_bandwidth(X, sample_weight)
        self.X_fit_ = X
        self.sample_weight_ = sample_weight
        return sample_weight

    #: ``algorithm="auto"`` considers the tree from this many training points.
    _TREE_MIN_SAMPLES = 512
    #: Whether the sorted 1-D path (sums of the values only) can serve.
    _supports_sorted = True
    #: Whether float32 inputs may have their sums computed in float32 (within
    #: the core's bound on the weights); else always float64.
    _float32_sums = True

    def _resolve_algorithm(self):
        """Set ``algorithm_`` (and its index) from the fitted state.

        Called at the end of ``fit``, once the values to average are known.
        """
        self._coordinates_scaled = self._decide_coordinate_scaling()
        self._feature_power = self._decide_feature_power()
        p = tree_p(self.metric, self.metric_params_)
        compact = bool(np.isfinite(self.kernel_.support))
        self._tree = self._index = None
        self.algorithm_ = "brute"
        if self.algorithm == "brute":
            return
        self._check_algorithm(self.kernel_)
        if self.algorithm == "binned":
            self._check_binned()
            self.algorithm_ = "binned"
            return
        sorted_ok = self._supports_sorted and sorted_eligible(
            self.kernel_, self.metric, self.metric_params_, self.n_features_in_
        )
        large = self.X_fit_.shape[0] >= self._TREE_MIN_SAMPLES
        if self._use_fgt(large):
            return
        if self.algorithm == "sorted" or (
            self.algorithm == "auto" and sorted_ok and large
        ):
            head = self._head()
            V, w, _ = self._normalised(self._values())
            self._index = SortedIndex(
                self.X_fit_,
                V,
                w,
                self.kernel_,
                head.divisor,
                self._scale(),
            )
            self.algorithm_ = "sorted"
            return
        if not compact or p is None:
            return
        if self.algorithm == "auto" and not large:
            return
        tree = build_tree(self.X_fit_, self._scale())
        if self.algorithm == "auto":
            fraction = window_fraction(
                tree, self.X_fit_, self._head(), p, self._scale()
            )
            if fraction >= TREE_MAX_FRACTION:
                return
        self._tree, self.algorithm_ = tree, "tree"

    def _check_algorithm(self, kernel):
        """Raise if an explicit ``algorithm`` cannot serve ``kernel`` (with the
        fitted metric and number of features).

        The CV estimators check every candidate kernel before their search.
        """
        name = self.algorithm
        if (name in ("sorted", "fgt") and not self._supports_sorted) or (
            name == "binned" and not hasattr(self, "binned_tol")
        ):
            raise ValueError(
                f"algorithm={name!r} is not available for "
                f"{type(self).__name__}; use 'auto', 'brute' or 'tree'."
            )
        metric, params, d = self.metric, self.metric_params_, self.n_features_in_
        if name == "sorted" and not sorted_eligible(kernel, metric, params, d):
            raise ValueError(
                "algorithm='sorted' needs one feature, a kernel that is a "
                "polynomial on its support (boxcar, triangular, epanechnikov, "
                f"biweight, triweight, tricube; not {kernel!r}) and a metric "
                "that is |x - q| in one dimension ('euclidean', 'cityblock', "
                f"'chebyshev', 'minkowski'), not {metric!r}."
            )
        if name in ("fgt", "binned") and not binned_eligible(kernel, metric, params, d):
            raise ValueError(
                f"algorithm={name!r} needs one feature, the Gaussian kernel (not "
                f"{kernel!r}) and a metric that is |x - q| in one dimension "
                "('euclidean', 'cityblock', 'chebyshev', 'minkowski'), not "
                f"{metric!r}."
            )
        compact = bool(np.isfinite(kernel.support))
        if name == "tree" and (not compact or tree_p(metric, params) is None):
            raise ValueError(
                "algorithm='tree' needs a kernel of finite support (not "
                f"{kernel!r}) and a metric a KD-tree can search "
                "('euclidean', 'cityblock', 'chebyshev' or 'minkowski' with p >= 1), "
                f"not {metric!r} with {self.metric_params!r}."
            )

    def _use_fgt(self, large):
        """Build the fast Gauss transform's index when ``algorithm`` asks for
        it, or ``"auto"`` finds it pays (see :mod:`sknw._fgt`)."""
        if self.algorithm not in ("fgt", "auto"):
            return False
        eligible = self._supports_sorted and binned_eligible(
            self.kernel_, self.metric, self.metric_params_, self.n_features_in_
        )
        if not eligible or (self.algorithm == "auto" and not large):
            return False
        V, w, _ = self._normalised(self._values())
        index = GaussIndex(
            self.X_fit_,
            V,
            w,
            self._head(),
            self._scale(),
            _tile_elements(),
            # "auto" computes the moments only where they pay.
            min_points_per_box=MIN_POINTS_PER_BOX if self.algorithm == "auto" else 0,
        )
        if self.algorithm == "auto" and not index.built:
            return False
        self._index, self.algorithm_ = index, "fgt"
        return True

    def _check_binned(self):
        """Whether the grid of ``algorithm="binned"`` fits (that the algorithm
        applies is checked by :meth:`_check_algorithm`)."""
        x = _scaled_rows(self.X_fit_, 0, self.X_fit_.shape[0], self._scale())[:, 0]
        w = self.sample_weight_
        if w is not None:
            x = x[w > 0]
        binned_grid(
            float(x.min()),
            float(x.max()),
            gaussian_sigma(self._head()),
            self.binned_tol,
        )

    # -- the weighted average ----------------------------------------------------

    _DEGREE_ONE = DEGREE_ONE

    def _scale(self):
        """What divides the features (None: nothing), see :meth:`_head`.

        A per-feature bandwidth divides the features. For metrics homogeneous
        of degree one, so does a power of two within a factor 2 below a scalar
        bandwidth (the head's divisor is the rest), when the scaled training
        data stay far from overflow (decided at fit): coordinates of order one
        keep squared distances representable for data near the ends of the
        float range.
        """
        bw = self.bandwidth_
        if np.ndim(bw):
            return np.asarray(bw, dtype=np.float64) * self._power()
        if self._scalar_scales_features():
            return np.full(self.n_features_in_, self._power_of_two())
        return None

    def _power_of_two(self):
        """A power of two within a factor 2 below a scalar bandwidth (dividing
        by it is exact, so ties between distances stay ties)."""
        _, exponent = np.frexp(float(self.bandwidth_))
        return float(np.ldexp(1.0, exponent - 1))  # in (h / 2, h]

    def _power(self):
        return getattr(self, "_feature_power", 1.0)

    def _decide_feature_power(self):
        """For a per-feature bandwidth ``b`` and a metric homogeneous of degree
        one, a power of two ``p`` (decided at fit): the features are divided by
        ``b * p`` and the distances by ``1 / p``, the same weights, with
        coordinates of order one where ``x / b`` would be huge (a bandwidth
        near 1e-300), so that squared distances stay representable. ``p`` is 1
        unless ``x / b`` exceeds 1e150."""
        bw = self.bandwidth_
        if not np.ndim(bw) or self.metric not in self._DEGREE_ONE:
            return 1.0
        X = self.X_fit_
        top = np.maximum(np.abs(X.max(axis=0)), np.abs(X.min(axis=0)))
        with np.errstate(divide="ignore"):
            exponent = np.log2(top.astype(np.float64)) - np.log2(bw)
        exponent = exponent[np.isfinite(exponent)]
        if not exponent.size or np.max(exponent) <= np.log2(1e150):
            return 1.0
        power = float(np.exp2(np.ceil(np.max(exponent))))
        return power if np.isfinite(power) and 1.0 / power > 0 else 1.0

    def _scalar_scales_features(self):
        return getattr(self, "_coordinates_scaled", False)

    def _decide_coordinate_scaling(self):
        """Whether a scalar bandwidth divides the coordinates (at fit time)."""
        if np.ndim(self.bandwidth_):
            return False
        bw = float(self.bandwidth_)
        if self.metric not in self._DEGREE_ONE or not bw >= np.finfo(float).tiny:
            return False
        X = self.X_fit_  # no temporary the size of X: the extremes suffice
        largest = max(abs(float(X.max(initial=0.0))), abs(float(X.min(initial=0.0))))
        with np.errstate(over="ignore"):
            ratio = largest / bw
        return bool(ratio <= 1e150)

    def _head(self):
        bw = self.bandwidth_
        if np.ndim(bw):
            return Head(self.kernel_, 1.0 / self._power())
        if self._scalar_scales_features():
            return Head(self.kernel_, float(bw) / self._power_of_two())
        return Head(self.kernel_, float(bw))

    def _validate_queries(self, X):
        check_is_fitted(self)
        check_not_text(X)
        return validate_data(self, X, reset=False, dtype=[np.float64, np.float32])

    def _weighted_average(self, X, V, squared=False, validated=False):
        """Kernel-weighted averages of the rows of ``V`` at the queries ``X``.

        Queries with an empty window are handled by the ``empty_window`` policy.
        With ``squared=True``, also returns the sums of the squared weights
        (:class:`~sknw._uncertainty.SquaredWeights`), from the same pass with a
        second head, the squared kernel. ``validated``: ``X`` is already an
        array of validated queries.
        """
        Q = X if validated else self._validate_queries(X)
        k = V.shape[1]
        if squared:
            # The kernel-weighted mean of 1 / w (0 for weight 0): the second
            # moment of the noise under precision weights.
            w0 = self.sample_weight_
            if w0 is None:
                recip = np.ones(V.shape[0])
            else:
                with np.errstate(divide="ignore", over="ignore"):
                    recip = np.where(w0 > 0, 1.0 / np.where(w0 > 0, w0, 1.0), 0.0)
            V = np.hstack([V, recip[:, None]])
        V, w, column_scale = self._normalised(V)
        head = self._head()
        heads = [head]
        if squared:
            heads.append(Head(SquaredKernel(head.kernel), head.divisor))
        results = self._kernel_sums(Q, V, w, heads)
        S, den, M = results[0]
        empty = ~(den != 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            avg = S / den[:, None]
        if empty.any():
            avg[empty] = self._empty_values(Q[empty], V, empty, w)
        avg *= column_scale
        if not squared:
            return avg
        sq = self._squared_weights(results, column_scale, empty, Q, V, w)
        return avg[:, :k], sq._replace(
            average=sq.average[:, :k], inverse_weight=avg[:, k]
        )

    def _squared_weights(self, results, column_scale, empty, Q, V, w):
        """Sums of the squared weights of one observation, from the two heads.

        With sample weights divided by ``c`` (a power of two), the weight of
        one unit of weight of point ``j`` is ``a_j = K_j / (c * den)`` (shifts
        aside), and ``sum_j w_j a_j**2 V_j = S2 / (c * den**2)``. Rows of a
        kernel of unbounded support whose weights all underflowed (an extreme
        bandwidth) take those of their limit, the nearest training points.
        """
        (_, den, M), (S2, den2, M2) = results
        c = 1.0
        if self.sample_weight_ is not None:
            c = float(power_of_two_scale(self.sample_weight_))
        # The squared kernel's log values are exactly twice the kernel's, so
        # its shift is exactly 2 M; the factor is 1 unless the paths differ.
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            diff = M2 - 2.0 * M
            factor = np.exp(np.where(np.isfinite(diff), diff, 0.0)) / c
            inv = 1.0 / den
            ratio = inv * inv * factor
            log_k0 = float(np.asarray(self.kernel_.log_value(np.zeros(1)))[0])
            self_weight = np.exp(log_k0 - M) * inv / c
            average = S2 * ratio[:, None] * column_scale
            total = den2 * ratio
        undefined = empty.copy()
        if empty.any() and not np.isfinite(self.kernel_.support):
            # The nearest points, of total weight c * den_t, each get 1 / den_t.
            S_t, den_t = nearest_sums(
                Q[empty],
                self.X_fit_,
                V,
                metric=self.metric,
                metric_params=self.metric_params_,
                scale=nearest_scale(self._scale(), self.metric, self.X_fit_, Q[empty]),
                sample_weight=w,
                tile_elements=_tile_elements(),
            )
            inv_t = 1.0 / (c * den_t)
            average[empty] = S_t * (inv_t * inv_t * c)[:, None] * column_scale
            total[empty] = inv_t
            self_weight[empty] = inv_t
            undefined[empty] = False
        for a in (average, total, self_weight):
            a[undefined] = np.nan
        return SquaredWeights(average, total, self_weight, undefined, None)

    def _kernel_sums(self, Q, V, w, heads):
        """The core's sums for every head, by the fitted ``algorithm_``.

        The sorted index holds the sums of the fitted values for the fitted
        kernel only; other values or heads take the brute-force path, and so do
        several heads for the binned path (whose tolerance bounds ratios of one
        head's sums).
        """
        if not self._float32_sums:
            # float32 queries would let the core sum in float32 (see the core's
            # F32_TOLERANCE); float64 queries keep it in float64.
            Q = np.asarray(Q, dtype=np.float64)
        params = {
            "metric": self.metric,
            "metric_params": self.metric_params_,
            "scale": self._scale(),
            "sample_weight": w,
            "tile_elements": _tile_elements(),
        }
        if self.algorithm_ == "tree":
            p = tree_p(self.metric, self.metric_params_)
            return [
                parallel_kernel_sums(
                    Q, self.X_fit_, V, [head], n_jobs=self.n_jobs,
                    sums=tree_kernel_sums, tree=self._tree, p=p, **params,
                )[0]
                for head in heads
            ]  # fmt: skip
        if self.algorithm_ == "sorted" and len(heads) == 1:
            return parallel_kernel_sums(
                Q, self.X_fit_, V, heads, n_jobs=self.n_jobs,
                sums=sorted_kernel_sums, index=self._index, **params,
            )  # fmt: skip
        if (
            self.algorithm_ == "fgt"
            and len(heads) == 1
            and V.shape[1] == self._index.n_values
        ):
            return parallel_kernel_sums(
                Q, self.X_fit_, V, heads, n_jobs=self.n_jobs,
                sums=fgt_kernel_sums, index=self._index, **params,
            )  # fmt: skip
        if self.algorithm_ == "binned" and len(heads) == 1:
            return binned_kernel_sums(
                Q, self.X_fit_, V, heads, tol=self.binned_tol, **params
            )
        return parallel_kernel_sums(
            Q, self.X_fit_, V, heads, n_jobs=self.n_jobs, **params
        )

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

    def _empty_message(self, empty):
        n_empty, m = int(empty.sum()), empty.shape[0]
        return (
            f"{n_empty} of {m} queries have no training point with a non-zero "
            f"kernel weight (empty window of {self.kernel_!r} at bandwidth "
            f"{self.bandwidth_!r})"
        )

    def _empty_values(self, Qe, V, empty, w=None):
        """Estimates (or, with ``V=None``, weight rows) for empty-window queries.

        A kernel with unbounded support has an all-zero row only when the scaled
        distances overflow at an extreme bandwidth; those queries get the limit
        of a vanishing bandwidth, their nearest training points, silently.
        """
        policy = self.empty_window
        if not np.isfinite(self.kernel_.support):
            policy = "nearest"
        elif policy == "raise":
            raise ValueError(
                f"{self._empty_message(empty)}. Use a larger bandwidth, a kernel "
                "with unbounded support, or empty_window='nearest', 'mean' or 'nan'."
            )
        else:
            warn(
                f"{self._empty_message(empty)}; they use empty_window={policy!r}.",
                EmptyWindowWarning,
            )
        if policy == "nan":
            return np.nan
        if w is None and self.sample_weight_ is not None:
            w = self.sample_weight_ / power_of_two_scale(self.sample_weight_)
        if policy == "mean":
            w = np.ones(self.X_fit_.shape[0]) if w is None else w
            return w / w.sum() if V is None else (w @ V) / w.sum()
        params = {"metric": self.metric, "metric_params": self.metric_params_}
        scale = self._scale()
        scale = nearest_scale(scale, self.metric, self.X_fit_, Qe)
        if V is None:
            Qs, Xs = Qe, self.X_fit_
            if scale is not None:
                Qs, Xs = Qs / scale, Xs / scale
            mask = nearest_mask(pairwise_distances(Qs, Xs, **params), w)
            return mask / mask.sum(axis=1, keepdims=True)
        S, den = nearest_sums(
            Qe,
            self.X_fit_,
            V,
            scale=scale,
            sample_weight=w,
            tile_elements=_tile_elements(),
            **params,
        )
        return S / den[:, None]

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
            self._head(),
            metric=self.metric,
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
        tags.input_tags.sparse = False
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
        tree = vars(self).get("_tree")
        if tree is not None:
            size += tree.data.nbytes + tree.indices.nbytes
        return size
