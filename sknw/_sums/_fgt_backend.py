"""The one-feature Gaussian backend of the fast Gauss transform: the
transform of :mod:`sknw._sums._fgt` for the sums and moments at the queries,
and the stacked passes of :mod:`sknw._sums._fgt_grid` for a grid's
leave-one-out moments."""

import numpy as np

from .._trace import Tunable
from ._base import (
    Backend,
    MomentSums,
    fitted_values,
    holds_values,
    leave_own_term_out,
    line_offsets,
    line_origin,
    own_rows,
    placed_rows,
    shared_value,
)
from ._fgt import (
    MIN_POINTS_PER_BOX,
    TILE_ELEMENTS,
    GaussIndex,
    fgt_kernel_sums,
    gaussian_why_not,
    line_order,
    query_order,
)
from ._fgt_grid import grid_moments
from ._parallel import parallel_kernel_sums

#: Whether the backend sums a grid's leave-one-out moments by the stacked
#: passes of :mod:`sknw._sums._fgt_grid` (:meth:`FGTBackend.grid_moment_sums`);
#: where not, it declines them and each head takes its own pass of the
#: transform.
STACKED_PASSES = Tunable(True)


class FGTBackend(Backend):
    """The Gaussian in one dimension by the fast Gauss transform, to
    :data:`TOLERANCE`; under ``"auto"`` from
    :data:`~sknw._sums._dispatcher.AUTO_MIN_SAMPLES` training points where the
    boxes hold :data:`MIN_POINTS_PER_BOX` points on average. The index holds
    the fitted values: it serves those only."""

    name = "fgt"
    fixed_values = True
    leave_one_out = True
    local_moments = True
    grid_moments = True

    def why_not(self, kernel, metric, metric_params, n_features):
        return gaussian_why_not(self.name, kernel, metric, metric_params, n_features)

    def fit(self, request):
        if request.auto and not request.large:
            return None
        V, w = request.values()
        index = GaussIndex(
            request.X,
            V,
            w,
            request.head,
            request.scale,
            request.tile_elements,
            order=line_order(request),
            origin=shared_value(request, "line_origin", lambda: line_origin(request.X)),
            # "auto" computes the moments only where they pay: against the
            # pruned line path of a single head, from a few points per box;
            # against a pass over every pair (a grid), always.
            min_points_per_box=(
                MIN_POINTS_PER_BOX if request.auto and not request.grid else 0
            ),
        )
        if request.auto and not index.built:
            return None
        index.key = (fitted_values(index, request, V, w), request.head)
        return index

    def serves(self, index, V, heads, sample_weight):
        return (
            len(heads) == 1
            and V.shape[1] == index.n_values
            and index.key[1] == heads[0]
            and holds_values(index, index.key[0], V, sample_weight)
        )

    def sums(self, index, Q, X, V, heads, *, n_jobs=None, **params):
        self.check_params(params)
        return parallel_kernel_sums(
            Q,
            X,
            V,
            heads,
            n_jobs=n_jobs,
            sums=fgt_kernel_sums,
            index=index,
            **params,
        )

    def moment_sums(self, index, Q, X, V, head, powers, **params):
        """Moments by the expansion (module docstring), in standard
        deviations; queries it cannot reach have an infinite bound."""
        self.check_params(params)
        m, k = Q.shape[0], V.shape[1]
        own = own_rows(m, params)
        if index.built and m:
            with np.errstate(over="ignore", invalid="ignore"):
                q = line_offsets(Q, index.origin, params.get("scale"))
                s = q / index.sigma
            order = query_order(index, s, own)
            tile = params.get("tile_elements", TILE_ELEMENTS)
            sorted_acc, sorted_bound = index.moment_sums(
                s[order], tile, powers, q[order]
            )
            acc = placed_rows(sorted_acc, order, m)
            bound = placed_rows(sorted_bound, order, m, np.inf)
        else:
            acc = np.zeros((m, powers + 1, k + 1))
            bound = np.full((m, powers + 1), np.inf)
        if own is not None:
            leave_own_term_out(acc, bound, own, V, 1.0, **params)
        return MomentSums(acc, bound, None, float(index.sigma))

    def grid_moment_sums(self, request, heads, powers, **params):
        """The moments of each of ``heads`` at every training point, each
        left out of its own sums, by the stacked passes of
        :mod:`sknw._sums._fgt_grid` (:func:`~sknw._sums._fgt_grid.grid_moments`);
        None (each head its own pass) where :data:`STACKED_PASSES` is off."""
        self.check_params(params)
        if not STACKED_PASSES.value:
            return None
        return grid_moments(request, heads, powers, **params)
