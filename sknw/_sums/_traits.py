"""What a kernel and a metric allow.

The only reader of the kernels' private capability flags (see
:class:`sknw.kernels.Kernel`): ``_native_sq`` (the kernel takes squared
distances), ``_log_linear`` (``log K(u) = a u**p``), ``_continuous`` (no jump
at the edge of the support) and ``_polynomial`` (the coefficients of ``K`` as
a polynomial in ``u`` on its support). Kernels defined outside sknw never get
a fast path from a flag they may have inherited: their values are computed by
calling them. The backends' eligibility predicates are built from these.
"""

import math

import numpy as np

from ..kernels import KERNELS

#: Minkowski ``p`` of the metrics a KD-tree can search.
TREE_METRICS = {"euclidean": 2.0, "cityblock": 1.0, "chebyshev": np.inf}
#: The metrics :func:`line_metric` accepts, as error messages name them.
LINE_METRICS = "('euclidean', 'cityblock', 'chebyshev', 'minkowski')"

#: Metrics homogeneous of degree ``p``: ``d(x / c, q / c) = d(x, q) / c**p``
#: for ``c > 0``.
HOMOGENEOUS_DEGREE = {
    "euclidean": 1,
    "cityblock": 1,
    "chebyshev": 1,
    "minkowski": 1,
    "seuclidean": 1,
    "mahalanobis": 1,
    "sqeuclidean": 2,
}
#: Metrics with d(x / h, q / h) = d(x, q) / h for h > 0.
DEGREE_ONE = frozenset(m for m, p in HOMOGENEOUS_DEGREE.items() if p == 1)


#: Metrics that give no NaN distance between finite points (scipy's
#: ``cdist``): the others are checked for NaN.
NAN_FREE_METRICS = frozenset(
    {"euclidean", "sqeuclidean", "cityblock", "chebyshev", "minkowski", "seuclidean"}
)


def nan_free(metric):
    """Whether the metric gives no NaN distance between finite points."""
    return isinstance(metric, str) and metric in NAN_FREE_METRICS


def is_user(kernel):
    """Whether ``kernel`` is defined outside sknw (its flags are not trusted)."""
    return not type(kernel).__module__.startswith("sknw.")


def native_squared(kernel):
    """Whether the kernel is evaluated from squared distances (built-in
    kernels that define ``log_value_sq``; a user kernel is evaluated by its
    own ``log_value``, even where it inherits a built-in's)."""
    return bool(kernel._native_sq) and not is_user(kernel)


def use_squared(metric, heads, metric_params=None):
    """Whether a pass computes squared euclidean distances for every head
    (the plain euclidean metric: not a weighted one, ``metric_params["w"]``)."""
    return (
        metric == "euclidean"
        and not metric_params
        and all(native_squared(h.kernel) for h in heads)
        # Per-query divisors are distances themselves (nearest-neighbour
        # bandwidths): the window of a query is decided on the same distances.
        and not any(np.ndim(h.divisor) for h in heads)
    )


def log_linear_form(kernel):
    """``(a, p)`` with ``log K(u) = a u**p`` for a built-in kernel, or None."""
    form = getattr(kernel, "_log_linear", None)
    if form is None or is_user(kernel):
        return None
    return form


def log_linear_coef(head, squared):
    """``c`` with ``log K = c * D`` on this path, or None (no fused path).

    Only for kernels that declare ``log K(u) = a u**p`` with ``a < 0``, when the
    distances ``D`` are ``u**p`` up to the bandwidth.
    """
    form = log_linear_form(head.kernel)
    if form is None or np.ndim(head.divisor):  # per-query divisors: general
        return None
    a, p = form
    if (p == 2) != squared:
        return None
    with np.errstate(over="ignore", divide="ignore", under="ignore"):
        c = a / np.float64(head.divisor) ** p
    # Extreme bandwidths (c = -inf or -0) take the general path.
    return float(c) if np.isfinite(c) and c < 0 else None


def is_continuous(kernel):
    """Whether the kernel is continuous at the edge of its support (the
    boxcar is not: its window is open, ``u < 1``); not assumed of a user
    kernel."""
    return bool(kernel._continuous) and not is_user(kernel)


def jumps_at_edge(kernel):
    """Whether a built-in kernel of finite support jumps at its edge (the
    boxcar): its window is open, and decided on the distances themselves."""
    return (
        not is_user(kernel)
        and bool(np.isfinite(kernel.support))
        and not bool(kernel._continuous)
    )


def is_compact(kernel):
    """Whether the kernel's support is finite."""
    return bool(np.isfinite(kernel.support))


def polynomial(kernel):
    """Coefficients (constant first) of a built-in kernel that is a
    polynomial in ``u`` on its support, or None."""
    coef = getattr(kernel, "_polynomial", None)
    if coef is None or is_user(kernel):
        return None
    return tuple(coef)


def is_gaussian(kernel):
    """Whether the kernel is built in and of the form ``exp(a u**2)``."""
    form = log_linear_form(kernel)
    return form is not None and form[1] == 2


def gaussian_sigma(head):
    """Standard deviation of a head ``exp(a (d / divisor)**2)``, in units of d."""
    a, _ = log_linear_form(head.kernel)
    return float(head.divisor) / math.sqrt(-2.0 * a)


def tree_p(metric, metric_params):
    """Minkowski ``p`` for a KD-tree search with this metric, or None."""
    if metric == "minkowski":
        p = (metric_params or {}).get("p", 2.0)
        if set(metric_params or {}) <= {"p"} and p >= 1:
            return float(p)
        return None
    if metric_params:
        return None
    return TREE_METRICS.get(metric) if isinstance(metric, str) else None


def line_metric(metric, metric_params):
    """Whether the metric is ``|x - q|`` in one dimension."""
    return tree_p(metric, metric_params) is not None


def sorted_eligible(kernel, metric, metric_params, n_features):
    """Whether the exact sorted 1-D path applies.

    One feature, a metric that is ``|x - q|`` in 1-D, and a built-in kernel that
    is a polynomial in ``u`` on its support.
    """
    return (
        n_features == 1
        and polynomial(kernel) is not None
        and line_metric(metric, metric_params)
    )


def gaussian_eligible(kernel, metric, metric_params, n_features):
    """One feature, a metric that is ``|x - q|`` in 1-D and a built-in kernel
    of the form ``exp(a u**2)`` (the Gaussian): the fgt and binned paths."""
    return (
        n_features == 1 and is_gaussian(kernel) and line_metric(metric, metric_params)
    )


def polynomial_kernel_names():
    """Names of the built-in kernels that are polynomials on their support."""
    first = {}
    for name, cls in KERNELS.items():  # one name per kernel, not its aliases
        first.setdefault(cls, name)
    return [name for cls, name in first.items() if polynomial(cls()) is not None]
