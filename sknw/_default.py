"""The data-driven default bandwidth, ``bandwidth="cv"``: exact leave-one-out
selection over the default grid of the ``*CV`` estimators (the same code
path), on a deterministic subsample of large training sets."""

import numpy as np

from ._bandwidth import kernel_factor, rule_bandwidth
from ._plugin import plugin_bandwidth
from ._sums._traits import gaussian_eligible, line_metric, sorted_eligible
from ._weights import distinct_rows

#: Fewest training points of positive weight for a leave-one-out selection;
#: below, the Scott rule.
MIN_POINTS = 4

#: Most training points (of positive weight) the selection scores: with one
#: feature and a kernel the sorted or fgt backends serve (leave-one-out in
#: about ``O(n log n)`` per candidate) ...
LINE_SUBSAMPLE = 50_000

#: ... and otherwise (each candidate costs ``O(n**2)``).
SUBSAMPLE = 4_000


def subsample_size(kernel, metric, metric_params, n_features, algorithm="auto"):
    """Most points the selection scores for this kernel, metric, number of
    features and ``algorithm`` (see :data:`LINE_SUBSAMPLE` and
    :data:`SUBSAMPLE`)."""
    fast = (
        algorithm in ("auto", "sorted")
        and sorted_eligible(kernel, metric, metric_params, n_features)
    ) or (
        algorithm in ("auto", "fgt")
        and gaussian_eligible(kernel, metric, metric_params, n_features)
    )
    return LINE_SUBSAMPLE if fast else SUBSAMPLE


def subsample_rows(positive, size):
    """A deterministic subsample of ``size`` of the rows ``positive`` (sorted;
    all of them where there are at most ``size``)."""
    if positive.size <= size:
        return positive
    pick = np.random.RandomState(0).choice(positive.size, size, replace=False)
    return positive[np.sort(pick)]


def default_bandwidth(est, X, y, w):
    """``(bandwidth, selection)`` of ``bandwidth="cv"`` for the estimator
    ``est`` (kernel and metric parameters resolved) on validated training
    data: ``y`` the targets (the encoded labels of a classifier), ``w`` the
    sample weights or None. ``selection`` is the fitted
    ``bandwidth_selection_`` (see the estimators' docstrings)."""
    # Each distinct observation once, weighing its rows' total (see
    # sknw._weights): integer weights choose as repeated rows, and the choice
    # does not change with the weights' scale.
    X, y, w = distinct_rows(X, y, w)
    n = X.shape[0]
    discrete = est._discrete
    d = X.shape[1] if discrete is None else len(discrete.continuous)
    positive = np.arange(n) if w is None else np.flatnonzero(w > 0)
    if positive.size < MIN_POINTS:
        Xp = est._continuous(X)[positive]
        wp = None if w is None else w[positive]
        bandwidth = 1.0
        if Xp.shape[1]:
            bandwidth = rule_bandwidth(
                Xp, "scott", est.kernel_, wp, est.metric, est.metric_params_
            )
        if discrete is not None:
            with np.errstate(over="ignore"):
                n = positive.size if w is None else float(w[positive].sum())
            bandwidth = discrete.join(bandwidth, discrete.default_lambdas(n))
        return bandwidth, {"method": "scott", "n_samples": int(positive.size)}
    size = subsample_size(est.kernel_, est.metric, est.metric_params_, d, est.algorithm)
    rows = subsample_rows(positive, size)
    search = est._bandwidth_search()
    search.metric_, search.metric_params_ = est.metric_, est.metric_params_
    search.n_features_in_ = X.shape[1]
    search._discrete = discrete
    if hasattr(est, "classes_"):
        search.classes_ = est.classes_
    search._select_on(X[rows], y[rows], None if w is None else w[rows])
    # The rate of a bandwidth that minimises the mean squared error.
    factor = (rows.size / positive.size) ** (1.0 / (d + 4))
    if discrete is None:
        bandwidth = search.bandwidth_ * factor
    else:  # the smoothing parameters' rate is the square of the bandwidths'
        cont, lambdas = discrete.split(search.bandwidth_)
        bandwidth = discrete.join(cont * factor, lambdas * factor**2)
    results = search.cv_results_
    selection = {
        "method": "leave-one-out",
        "scoring": search._default_scoring_name,
        "score": search.best_score_,
        "multiplier": float(search._searched[1]),
        "n_candidates": len(results["mean_test_score"]),
        "n_samples": int(rows.size),
        "rescaled": float(factor),
    }
    return bandwidth, selection


def plugin_for(est, X, y, w):
    """``bandwidth="plugin"`` for a regressor on validated training data:
    the direct plug-in of :mod:`sknw._plugin`, for the Gaussian and, through
    the ratio of the canonical scales, any other kernel. One feature, a
    metric that is ``|x - q|`` there, one target and no sample weights."""
    d = X.shape[1]
    problems = []
    if d != 1:
        problems.append(f"one feature (not {d})")
    if not line_metric(est.metric, est.metric_params_):
        problems.append(
            f"a metric that is |x - q| in one dimension (not {est.metric!r})"
        )
    if np.ndim(y) > 1 and np.shape(y)[1] > 1:
        problems.append("one target")
    if w is not None:
        problems.append("no sample_weight")
    if problems:
        raise ValueError(
            "bandwidth='plugin' (the direct plug-in of local linear regression) "
            f"needs {', '.join(problems)}; use bandwidth='cv'."
        )
    h = plugin_bandwidth(np.asarray(X[:, 0], float), np.ravel(y).astype(float))
    return np.array([h * kernel_factor(est.kernel_)])
