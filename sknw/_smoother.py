"""The fitted smoother: what ``fit`` resolved (the training data, the kernel
and bandwidth, the scaling of the features, the discrete features, a span,
the backend and its index) and the weighted averages over it.

Every estimator holds one (``_smoother``), built at the end of its fit;
predictions read it. Its sums are the core's (:mod:`sknw._sums`).
"""

from dataclasses import dataclass

import numpy as np

from ._bandwidth.span import neighbour_distances
from ._local.uncertainty import SquaredKernel, SquaredWeights
from ._sums import (
    BACKENDS,
    DENSE,
    Head,
    backend_sums,
    default_tile_elements,
    empty_window_estimates,
    log_weight_rows,
    nearest_mask,
    nearest_scale,
    nearest_sums,
    pairwise_distances,
    power_of_two_scale,
)
from ._sums._base import _scaled_rows
from ._sums._cells import DiscreteHead, cell_nearest_sums, cell_nearest_weights
from ._sums._traits import is_compact
from .exceptions import EMPTY_WINDOWS, EmptyWindowWarning, warn
from .kernels import Kernel

#: Tile size of the smoothers' sums (see :func:`default_tile_elements`).
_tile_elements = default_tile_elements


def continuous_bandwidth(bandwidth, discrete):
    """The bandwidth of the continuous features: ``bandwidth`` without
    ``discrete`` features, else its continuous entries (a float where they
    are equal; 1.0 without a continuous feature, whose kernel is
    constant)."""
    if discrete is None:
        return bandwidth
    bw = discrete.split(bandwidth)[0]
    if not bw.size:  # no continuous feature: its kernel is constant
        return 1.0
    return float(bw[0]) if np.all(bw == bw[0]) else bw


@dataclass(frozen=True, kw_only=True)
class FittedSmoother:
    """What ``fit`` resolved, and the kernel-weighted averages over it.

    ``X`` and ``sample_weight``: the (encoded) training inputs and their
    weights (None: none); ``kernel`` and ``bandwidth`` as ``kernel_`` and
    ``bandwidth_``; ``metric`` and ``metric_params`` the fitted ones;
    ``discrete``: the fitted discrete features (:class:`sknw._features.mixed.Discrete`,
    None without); ``scaling``: how the bandwidth divides the features
    (:mod:`sknw._bandwidth.scaling`); ``span`` (None: one bandwidth) and
    ``neighbour_weight``, the weights that count the neighbours;
    ``empty_window``, the policy of empty windows; ``algorithm`` and
    ``index``, the fitted backend; ``float32_sums``: whether float32 queries
    may be summed in float32; ``exact_sums``: whether the sums other than
    the index's own (the local fits' moments) take the dense backend where
    the fitted one approximates."""

    X: np.ndarray
    sample_weight: np.ndarray | None
    kernel: Kernel
    bandwidth: object
    metric: object
    metric_params: dict | None
    discrete: object = None
    scaling: object
    span: float | None = None
    neighbour_weight: np.ndarray | None = None
    empty_window: str = "nearest"
    n_jobs: int | None = None
    algorithm: str = DENSE
    index: object = None
    float32_sums: bool = True
    exact_sums: bool = False

    def continuous(self, X):
        """The continuous columns of the (encoded) ``X``."""
        return X if self.discrete is None else self.discrete.continuous_of(X)

    def continuous_bandwidth(self):
        """The bandwidth of the continuous features (see
        :func:`continuous_bandwidth`)."""
        return continuous_bandwidth(self.bandwidth, self.discrete)

    def span_heads(self, Q, heads, own=None):
        """``heads`` with each query's nearest-neighbour bandwidth (a span,
        ``span_``; as they are without): each divisor becomes the query's
        bandwidth times its ratio to the fitted head's. ``own``: the queries
        are these training points, each left out of its own window (its
        whole row)."""
        if self.span is None:
            return heads
        h = self.span_neighbours(Q, own)
        base = float(self.scaling.divisor)
        return [Head(hd.kernel, h * (float(hd.divisor) / base)) for hd in heads]

    def span_neighbours(self, Q, own=None, with_index=False):
        """Each query's distance to its ``k``-th nearest training point
        (:func:`~sknw._bandwidth.span.neighbour_distances`; with ``with_index``, and
        that point's index), ``own`` as in :meth:`span_heads`."""
        w = self.neighbour_weight
        return neighbour_distances(
            Q,
            self.X,
            self.span,
            metric=self.metric,
            metric_params=self.metric_params,
            scale=self.scale(),
            sample_weight=w,
            own=own,
            tile_elements=_tile_elements(),
            with_index=with_index,
        )

    def scale(self):
        """What divides the features (None: nothing); the head's divisor
        completes the bandwidth (see :mod:`sknw._bandwidth.scaling`)."""
        return self.scaling.scale

    def head(self):
        """The head of the sums: the continuous kernel and bandwidth, with
        the discrete features' factors where there are any."""
        head = self.scaling.head(self.kernel)
        if self.discrete is None:
            return head
        return self.discrete.head(head, self.discrete.split(self.bandwidth)[1])

    def weighted_average(self, Q, V, squared=False, own=None):
        """Kernel-weighted averages of the rows of ``V`` at the validated
        queries ``Q``.

        Queries with an empty window are handled by the ``empty_window`` policy.
        With ``squared=True``, also returns the sums of the squared weights
        (:class:`~sknw._local.uncertainty.SquaredWeights`), from the same pass with a
        second head, the squared kernel. ``own``: the queries are the training
        points of these indices, each left out of its own average (its whole
        row; leave-one-out, without ``squared``).
        """
        k = V.shape[1]
        if squared:
            # The kernel-weighted mean of 1 / w (0 for weight 0): the second
            # moment of the noise under precision weights, in units of the
            # weights divided by their power of two (see _squared_weights).
            w0 = self.sample_weight
            if w0 is None:
                recip = np.ones(V.shape[0])
            else:
                wn = w0 / self.weight_unit()
                with np.errstate(divide="ignore"):
                    recip = np.where(wn > 0, 1.0 / np.where(wn > 0, wn, 1.0), 0.0)
            V = np.hstack([V, recip[:, None]])
        V, w, column_scale = self.normalised(V)
        head = self.head()
        heads = [head]
        if squared:
            square = Head(SquaredKernel(head.kernel), head.divisor)
            if isinstance(head, DiscreteHead):
                square = head.with_head(square, power=2)
            heads.append(square)
        results = self.kernel_sums(Q, V, w, heads, own=own)
        S, den, M = results[0]
        empty = ~(den != 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            avg = S / den[:, None]
        if empty.any():
            mine = None if own is None else own[empty]
            avg[empty] = self.empty_values(Q[empty], V, empty, w, own=mine)
        avg *= column_scale
        if not squared:
            return avg
        sq = self._squared_weights(results, column_scale, empty, Q, V, w)
        return avg[:, :k], sq._replace(
            average=sq.average[:, :k], inverse_weight=avg[:, k]
        )

    def weight_unit(self):
        """The power of two the sample weights are divided by (1 without):
        the standard errors' sums are per unit of the weights so divided, in
        which their reciprocals neither overflow nor underflow; the noise
        variance per unit of weight is ``c`` times theirs."""
        w = self.sample_weight
        return 1.0 if w is None else float(power_of_two_scale(w))

    def _squared_weights(self, results, column_scale, empty, Q, V, w):
        """Sums of the squared weights of one observation, from the two heads.

        With sample weights ``w`` divided by ``c`` (:meth:`weight_unit`),
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
            log_k0 = float(np.asarray(self.kernel.log_value(np.zeros(1)))[0])
            if self.discrete is not None:
                log_k0 += np.log(self.head().factors.self_factor())
            self_weight = np.exp(log_k0 - M) * inv
            average = S2 * ratio[:, None] * column_scale
            total = den2 * ratio
        undefined = empty.copy()
        if empty.any() and not is_compact(self.kernel):
            # The nearest points, of total weight den_t, each get 1 / den_t.
            S_t, den_t = self.nearest_sums(Q[empty], V, w)
            inv_t = 1.0 / den_t
            average[empty] = S_t * (inv_t * inv_t)[:, None] * column_scale
            total[empty] = inv_t
            self_weight[empty] = inv_t
            undefined[empty] = False
        for a in (average, total, self_weight):
            a[undefined] = np.nan
        return SquaredWeights(average, total, self_weight, undefined, None)

    def nearest_sums(self, Qe, V, w):
        """Sums of ``w V`` over the nearest training points of the queries
        ``Qe`` (see :func:`sknw._sums.nearest_sums`; with discrete features,
        among the points of positive factor, weighted by it)."""
        X, scale = self.X, self.scale()
        params = {
            "metric": self.metric,
            "metric_params": self.metric_params,
            "sample_weight": w,
            "tile_elements": _tile_elements(),
        }
        if self.discrete is None:
            near = nearest_scale(scale, self.metric, X, Qe)
            return nearest_sums(Qe, X, V, scale=near, **params)
        Xc, Qc = self.continuous(X), self.continuous(Qe)
        near = nearest_scale(scale, self.metric, Xc, Qc)
        factors = self.head().factors
        S, den, _ = cell_nearest_sums(Qe, X, V, factors, scale=near, **params)
        return S, den

    def sums_backend(self):
        """The backend and index of :meth:`kernel_sums`: the fitted ones
        (the dense backend for an approximate one, with ``exact_sums``)."""
        if self.exact_sums and BACKENDS[self.algorithm].tolerance:
            return DENSE, None
        return self.algorithm, self.index

    def kernel_sums(self, Q, V, w, heads, own=None):
        """The core's sums for every head, by the fitted ``algorithm_`` (the
        dense backend where its index does not serve these values and heads,
        see :func:`sknw._sums.backend_sums`). ``own``: leave-one-out sums of
        the training points of these indices (see :meth:`leave_out`)."""
        if not self.float32_sums:
            # float32 queries would let the core sum in float32 (see the core's
            # F32_TOLERANCE); float64 queries keep it in float64.
            Q = np.asarray(Q, dtype=np.float64)
        name, index = self.sums_backend()
        return backend_sums(
            name,
            index,
            Q,
            self.X,
            V,
            self.span_heads(Q, heads, own),
            n_jobs=self.n_jobs,
            metric=self.metric,
            metric_params=self.metric_params,
            scale=self.scale(),
            sample_weight=w,
            tile_elements=_tile_elements(),
            **self.leave_out(own),
        )

    def leave_out(self, own):
        """The core's leave-one-out parameters for queries that are the
        training points ``own`` (none for None): each point's whole row
        leaves its own sums, whatever its weight (see
        :mod:`sknw._selection.weights`)."""
        if own is None:
            return {}
        return {"exclude_self": True, "self_index": own}

    def normalised(self, V):
        """Values and weights divided by powers of two (exactly).

        Returns ``(V / column_scale, w / weight_scale, column_scale)``: the
        weighted averages of the normalised values times ``column_scale`` are
        those of ``V``, free of overflow and subnormal products.
        """
        column_scale = power_of_two_scale(V, axis=0)
        w = self.sample_weight
        if w is not None:
            w = w / power_of_two_scale(w)
        return V / column_scale, w, column_scale

    def empty_error(self, empty):
        """The error of ``empty_window="raise"`` for the mask ``empty``."""
        return ValueError(
            f"{self._empty_message(empty)}. Use a larger bandwidth, a kernel "
            "with unbounded support, or empty_window='nearest', 'mean' or 'nan'."
        )

    def _empty_message(self, empty):
        n_empty, m = int(empty.sum()), empty.shape[0]
        return (
            f"{n_empty} of {m} queries have no training point with a non-zero "
            f"kernel weight (empty window of {self.kernel!r} at bandwidth "
            f"{self.bandwidth!r})"
        )

    def empty_values(self, Qe, V, empty, w=None, own=None):
        """Estimates (or, with ``V=None``, weight rows) for empty-window queries.

        A kernel with unbounded support has an all-zero row only when the scaled
        distances overflow at an extreme bandwidth; those queries get the limit
        of a vanishing bandwidth, their nearest training points, silently.
        """
        policy = self.empty_window
        if not is_compact(self.kernel):
            policy = "nearest"
        elif policy == "raise":
            raise self.empty_error(empty)
        else:
            warn(
                f"{EMPTY_WINDOWS}; they use empty_window={policy!r}.",
                EmptyWindowWarning,
                n_affected=int(empty.sum()),
                n_queries=empty.shape[0],
            )
        if policy == "nan":
            return np.nan
        if w is None and self.sample_weight is not None:
            w = self.sample_weight / power_of_two_scale(self.sample_weight)
        params = {"metric": self.metric, "metric_params": self.metric_params}
        factors = None if self.discrete is None else self.head().factors
        if V is not None:
            return empty_window_estimates(
                policy,
                Qe,
                self.X,
                V,
                w,
                scale=self.scale(),
                tile_elements=_tile_elements(),
                factors=factors,
                on_mean=self.warn_no_factor,
                **self.leave_out(own),
                **params,
            )
        if policy == "mean":
            w = np.ones(self.X.shape[0]) if w is None else w
            return w / w.sum()
        if factors is not None:
            Xc, Qc = self.continuous(self.X), self.continuous(Qe)
            scale = nearest_scale(self.scale(), self.metric, Xc, Qc)
            mask, none = cell_nearest_weights(
                Qe, self.X, factors, scale=scale, sample_weight=w, **params
            )
            if none.any():  # no point of positive factor: the mean's weights
                self.warn_no_factor(int(none.sum()))
            return mask / mask.sum(axis=1, keepdims=True)
        scale = nearest_scale(self.scale(), self.metric, self.X, Qe)
        Qs = _scaled_rows(Qe, 0, Qe.shape[0], scale)
        Xs = _scaled_rows(self.X, 0, self.X.shape[0], scale)
        mask = nearest_mask(pairwise_distances(Qs, Xs, **params), w)
        return mask / mask.sum(axis=1, keepdims=True)

    def warn_no_factor(self, count):
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

    def attention_weights(self, Q):
        """Normalised kernel weights of the training points at the validated
        queries ``Q`` (see :meth:`sknw.NadarayaWatsonRegressor.attention_weights`)."""
        out = np.empty((Q.shape[0], self.X.shape[0]))
        for rows, W in log_weight_rows(
            Q,
            self.X,
            self.span_heads(Q, [self.head()])[0],
            metric=self.metric,
            metric_params=self.metric_params,
            scale=self.scale(),
            sample_weight=self.sample_weight,
            tile_elements=_tile_elements(),
        ):
            out[rows] = W
        den = out.sum(axis=1)
        empty = ~(den != 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            out /= den[:, None]
        if empty.any():
            out[empty] = self.empty_values(Q[empty], None, empty)
        return out
