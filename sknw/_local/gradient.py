"""Derivatives of the estimates with respect to the query: the kernel of the
derivative sums, the quadratic form of the metric and the local-constant
gradient, one more head of the core's pass.

With ``u = d(x_j, q)`` the scaled distance of a metric that is a quadratic
form, ``u**a = (x_j - q)' P (x_j - q)`` (``a = 2``: euclidean, seuclidean,
mahalanobis, minkowski with ``p=2``; ``a = 1``: sqeuclidean), the weight
``k_j = w_j K(u_j)`` has ``dk_j / dq = w_j H(u_j) P (x_j - q)`` with
``H(u) = -K'(u) / u`` (``a = 2``) or ``-2 K'(u)`` (``a = 1``), and the
derivative of the local-constant estimate ``m = sum k_j y_j / sum k_j`` is::

    dm / dq = P sum_j w_j H(u_j) (x_j - q) (y_j - m) / sum_j w_j K(u_j).

The sums of ``H`` are a second head of the pass that sums ``K`` (the same
head for the Gaussian with ``a = 2``, whose ``H`` is ``K``), over values
taken about a centre near each query.
"""

import numpy as np

from .._sums import Head, power_of_two_scale
from .._sums._base import scale_of
from .._sums._traits import is_compact, is_user
from ..exceptions import EMPTY_WINDOWS, EmptyWindowWarning, warn
from ..kernels import Gaussian, Kernel
from .frame import row_groups

#: Metrics whose scaled distance is a quadratic form, and the power ``a`` of
#: the distance that is (see the module docstring).
QUADRATIC_METRICS = {
    "euclidean": 2,
    "seuclidean": 2,
    "mahalanobis": 2,
    "minkowski": 2,
    "sqeuclidean": 1,
}


class SlopeKernel(Kernel):
    """The kernel ``H`` of the derivative sums of ``kernel``: ``-K'(u) / u``
    for ``power=2``, ``-2 K'(u)`` for ``power=1`` (see the module docstring).

    ``H(0)`` is taken as 0 for ``power=2``: its term multiplies ``x_j - q =
    0``, and the kernels with a kink at 0 have no finite value there.
    """

    def __init__(self, kernel=None, power=2):
        self.kernel = kernel
        self.power = power

    @property
    def support(self):
        return self.kernel.support

    @property
    def nonnegative(self):
        # Built-in kernels decrease on their support (the Silverman kernel
        # aside); a user kernel's derivative may take either sign.
        return bool(self.kernel.nonnegative) and not is_user(self.kernel)

    @property
    def _continuous(self):
        # A compact kernel's derivative may jump at the edge of its support.
        return not is_compact(self.kernel)

    def _values(self, u):
        u = np.asarray(u, dtype=np.float64)
        inside = u <= self.support
        v = np.asarray(self.kernel.derivative(np.where(inside, u, 0.0)), dtype=float)
        if is_user(self.kernel) and not np.all(np.isfinite(v)):
            raise ValueError(
                f"Kernel {self.kernel!r} returned NaN or infinite derivatives; "
                "derivative(u) must be finite for u >= 0."
            )
        with np.errstate(divide="ignore", invalid="ignore"):
            v = -v / u if self.power == 2 else -2.0 * v
        keep = inside & ((u > 0) | (self.power == 1))
        return np.where(keep, v, 0.0)

    def __call__(self, u):
        return self._values(u)

    def log_value(self, u):
        u = np.asarray(u, dtype=np.float64)
        closed = None if is_user(self.kernel) else self.kernel._log_slope(u)
        # At u = 0, log u + log(-K'(u)/u) is -inf + inf: replaced below.
        with np.errstate(divide="ignore", invalid="ignore"):
            if closed is None:
                return np.log(np.abs(self._values(u)))
            if self.power == 1:  # log(-2 K'(u)) = log 2 + log u + log(-K'(u)/u)
                closed = np.log(2.0) + np.log(u) + closed
            at_zero = np.log(np.abs(self._values(np.zeros(1))))[0]
        return np.where(u > 0, closed, at_zero)

    def sign(self, u):
        return np.sign(self._values(u))


class SpanSlopeKernel(Kernel):
    """``G(u) = -u K'(u)`` of ``kernel``: the sums of the term that a span's
    moving bandwidth adds to the derivative of the estimate. With ``u_j =
    d(x_j, q) / h(q)``, ``du_j / dq`` gains ``-u_j grad h / h``, so the
    derivative of ``m`` gains ``(grad h / h) sum_j w_j G(u_j) (y_j - m) /
    sum_j w_j K(u_j)``. ``G = u**2 H`` for :class:`SlopeKernel`'s ``H``
    (``power=2``), in the log domain as well."""

    def __init__(self, kernel=None):
        self.kernel = kernel

    @property
    def support(self):
        return self.kernel.support

    @property
    def nonnegative(self):
        return SlopeKernel(self.kernel).nonnegative

    @property
    def _continuous(self):
        return not is_compact(self.kernel)

    def __call__(self, u):
        u = np.asarray(u, dtype=np.float64)
        return u * u * SlopeKernel(self.kernel)(u)

    def log_value(self, u):
        u = np.asarray(u, dtype=np.float64)
        slope = SlopeKernel(self.kernel).log_value(u)
        with np.errstate(divide="ignore", invalid="ignore"):
            inside = (u > 0) & (slope > -np.inf)  # (u = inf outside a window)
            return np.where(inside, 2.0 * np.log(u) + slope, -np.inf)

    def sign(self, u):
        return SlopeKernel(self.kernel).sign(u)


def quadratic_form(metric, metric_params, scale, divisor, d):
    """``(P, a)`` of the fitted metric (see the module docstring), with the
    features divided by ``scale`` and the distances by ``divisor``."""
    params = metric_params or {}
    a = QUADRATIC_METRICS.get(metric) if isinstance(metric, str) else None
    if a is None or metric == "minkowski" and params.get("p", 2) != 2:
        raise ValueError(
            f"gradient needs a metric that is a quadratic form of the "
            f"differences of the features ({', '.join(QUADRATIC_METRICS)}, "
            f"minkowski with p=2), got metric={metric!r}."
        )
    if metric == "seuclidean":
        M = np.diag(1.0 / np.asarray(params["V"], dtype=np.float64))
    elif metric == "mahalanobis":
        M = np.asarray(params["VI"], dtype=np.float64)
    else:
        M = np.diag(np.broadcast_to(np.asarray(params.get("w", 1.0), float), (d,)))
    s = scale_of(scale)
    s = np.ones(d) if s is None else np.broadcast_to(np.asarray(s, float), (d,))
    return M / np.outer(s, s) / float(divisor) ** a, a


def slope_head(head, a):
    """The head of the derivative sums of ``head`` (itself for the
    Gaussian with ``a = 2``), with the discrete factors of ``head``."""
    if a == 2 and type(head.kernel) is Gaussian:
        return head
    slope = Head(SlopeKernel(head.kernel, a), head.divisor)
    if hasattr(head, "with_head"):  # the discrete features' factors
        slope = head.with_head(slope, power=1)
    return slope


def local_constant_gradient(smoother, values, frame, Q):
    """The derivative of the local-constant estimate of the targets
    ``values`` (columns) by the fitted ``smoother`` at the validated queries
    ``Q`` with respect to the continuous features: (m, k, d).

    Queries are grouped by the cell of :class:`~sknw._local.frame.LocalFrame`
    they fall in; each cell's values (targets minus a level near it, the
    features' offsets from its centre and their products) cost one pass over
    the training points, so that the covariance of the derivative sums, a
    difference of sums, loses few digits to the spread of the data. With a
    span, the bandwidth moves with the query: a third head,
    :class:`SpanSlopeKernel`, gives the term of its derivative (see
    :func:`span_term`).
    """
    Qc = np.asarray(smoother.continuous(Q), dtype=np.float64)
    Xc = np.asarray(smoother.continuous(smoother.X), dtype=np.float64)
    y = values
    y_scale = power_of_two_scale(y, axis=0)
    y = y / y_scale
    m, d, k = Qc.shape[0], Qc.shape[1], y.shape[1]
    if not d:  # discrete features only
        return np.zeros((m, k, 0))
    head = smoother.head()
    scale, metric = smoother.scale(), smoother.metric
    span = smoother.span is not None
    divisor = 1.0 if span else head.divisor  # a span's: one per query, below
    P, a = quadratic_form(metric, smoother.metric_params, scale, divisor, d)
    slope = slope_head(head, a)
    heads = [head] if slope is head else [head, slope]
    n_main = len(heads)
    if span:
        heads.append(Head(SpanSlopeKernel(head.kernel), head.divisor))
        moving, divisors = span_term(smoother, Qc, P, a)
    centres, groups = row_groups(frame.cell_centres(Qc))
    T = np.zeros((m, d, k))
    A = np.zeros((m, k))
    empty = np.zeros(m, dtype=bool)
    for centre, rows in zip(centres, groups, strict=True):
        Z = Xc - centre
        near = frame.coordinates(Xc, centre, np.eye(d))
        yc = y - y[np.argmin(np.einsum("ij,ij->i", near, near))]
        V = np.hstack([yc, Z, (Z[:, :, None] * yc[:, None, :]).reshape(-1, d * k)])
        Vn, w, column_scale = smoother.normalised(V)
        sums = smoother.kernel_sums(Q[rows], Vn, w, heads)
        (S, den, M), (SH, denH, MH) = sums[0], sums[n_main - 1]
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            mean = S[:, :k] / den[:, None] * column_scale[:k]
            avg = SH / denH[:, None] * column_scale
            ratio = denH / den * np.exp(np.where(np.isfinite(MH), MH - M, 0.0))
        a_y, a_z = avg[:, :k], avg[:, k : k + d]
        a_zy = avg[:, k + d :].reshape(-1, d, k)
        offset = a_z - (Qc[rows] - centre)
        t = a_zy - a_z[:, :, None] * a_y[:, None, :]
        t += offset[:, :, None] * (a_y - mean)[:, None, :]
        t *= ratio[:, None, None]
        t[~(denH != 0)] = 0.0  # signed kernels: sums of either sign
        T[rows] = t
        empty[rows] = ~(den != 0)
        if span:  # sum w G (y - m) / sum w K, G the span head's kernel
            SG, denG, MG = sums[-1]
            with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
                shift = np.exp(np.where(np.isfinite(MG), MG - M, 0.0))
                g = (SG[:, :k] * column_scale[:k] - mean * denG[:, None]) / den[:, None]
                A[rows] = np.where((den != 0)[:, None], g * shift[:, None], 0.0)
    grad = np.einsum("ef,mfk->mke", P, T)
    if span:
        grad = grad / divisors[:, None, None] ** a + A[:, :, None] * moving[:, None, :]
    grad *= np.reshape(y_scale, (1, -1, 1))
    if empty.any():
        grad[empty] = empty_gradient(smoother, empty)
    return grad


def span_term(smoother, Qc, P, a):
    """For the derivative of a span's estimate: each query's ``grad h / h``
    (m, d), ``h`` its distance to its ``k``-th nearest training point (a
    quadratic form ``P`` of the offset, to the power ``1 / a``, away from
    ties, where ``h`` has a kink), and its divisor (m,), the fitted head's
    divisor times ``h`` over the median span bandwidth."""
    h, index = smoother.span_neighbours(Qc, with_index=True)
    offset = Qc - np.asarray(smoother.X, dtype=np.float64)[index]
    # h**a = offset' P offset: grad h = (2 / a) P offset / h**(a - 1).
    moving = (2.0 / a) * (offset @ P) / h[:, None] ** a
    divisors = h * (float(smoother.head().divisor) / float(smoother.scaling.divisor))
    return moving, divisors


def empty_gradient(smoother, empty, warned=False):
    """The gradient at queries whose window holds no training point: that of
    their ``empty_window`` estimate, which does not vary with the query
    (0), or NaN for ``"nan"``; ``"raise"`` raises. Kernels of unbounded
    support have such windows only where every weight underflows (the limit
    of the nearest training points): 0, silently. ``warned``: the caller
    has applied the policy (raised or warned)."""
    if not is_compact(smoother.kernel):
        return 0.0
    policy = smoother.empty_window
    if warned:
        return np.nan if policy == "nan" else 0.0
    if policy == "raise":
        raise smoother.empty_error(empty)
    value = np.nan if policy == "nan" else 0.0
    warn(
        f"{EMPTY_WINDOWS}; their gradient is {value} (empty_window={policy!r}).",
        EmptyWindowWarning,
        n_affected=int(np.sum(empty)),
        n_queries=np.size(empty),
    )
    return value
