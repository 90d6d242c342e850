"""The data-driven default bandwidth, ``bandwidth="cv"``: exact leave-one-out
selection over the default grid of the ``*CV`` estimators (the same code
path), on a deterministic subsample of large training sets."""

import numpy as np

from .._bandwidth.plugin import plugin_bandwidth
from .._bandwidth.rules import kernel_factor, rule_bandwidth
from .._sums._traits import gaussian_eligible, line_metric, sorted_eligible
from .search import default_scoring_name, search
from .weights import subsample_rows

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


def default_bandwidth(problem, algorithm):
    """``(bandwidth, selection)`` of ``bandwidth="cv"``: the search of
    ``problem`` (one kernel, the default choices, on validated training
    data, each distinct observation once: see :mod:`sknw._selection.weights`) on a
    subsample of at most :func:`subsample_size` points for the estimator's
    ``algorithm``, its bandwidth rescaled to every point. ``selection`` is
    the fitted ``bandwidth_selection_`` (see the estimators' docstrings)."""
    X, w, smoothing = problem.X, problem.w, problem.smoothing
    (kernel,) = problem.choices.kernels
    discrete = smoothing.discrete
    metric, metric_params = smoothing.metric, smoothing.metric_params
    d = X.shape[1] if discrete is None else len(discrete.continuous)
    positive = np.arange(X.shape[0]) if w is None else np.flatnonzero(w > 0)
    if positive.size < MIN_POINTS:
        Xp = smoothing.continuous(X)[positive]
        wp = None if w is None else w[positive]
        bandwidth = 1.0
        if Xp.shape[1]:
            bandwidth = rule_bandwidth(Xp, "scott", kernel, wp, metric, metric_params)
        if discrete is not None:
            with np.errstate(over="ignore"):
                n = positive.size if w is None else float(w[positive].sum())
            bandwidth = discrete.join(bandwidth, discrete.default_lambdas(n))
        return bandwidth, {"method": "scott", "n_samples": int(positive.size)}
    size = subsample_size(kernel, metric, metric_params, d, algorithm)
    rows = subsample_rows(positive, size)
    result = search(problem.subset(rows))
    # The rate of a bandwidth that minimises the mean squared error.
    factor = (rows.size / positive.size) ** (1.0 / (d + 4))
    if discrete is None:
        bandwidth = result.bandwidth * factor
    else:  # the smoothing parameters' rate is the square of the bandwidths'
        cont, lambdas = discrete.split(result.bandwidth)
        bandwidth = discrete.join(cont * factor, lambdas * factor**2)
    selection = {
        "method": "leave-one-out",
        "scoring": default_scoring_name(problem.kind),
        "score": result.best_score,
        "multiplier": float(result.multiplier),
        "n_candidates": len(result.cv_results["mean_test_score"]),
        "n_samples": int(rows.size),
        "rescaled": float(factor),
    }
    return bandwidth, selection


def plugin_for(est, X, y, w):
    """``bandwidth="plugin"`` for a regressor on validated training data:
    the direct plug-in of :mod:`sknw._bandwidth.plugin`, for the Gaussian and, through
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
