"""Approximate Gaussian sums in one dimension: linear binning and convolution.

Part of the computational core (see :mod:`sknw._sums`): returns the same
``(S, den, M)`` triples as :func:`~sknw._sums.kernel_sums`, for a Gaussian
head and one feature, to within a tolerance checked per query.

The training points are linearly binned onto a regular grid of step ``delta``
(each point's weight split between its two nearest nodes), the binned weights
and weighted values are convolved with the Gaussian sampled on the grid (by
FFT, the kernel truncated where it falls below
:data:`TRUNCATION`), and each query's sums are interpolated linearly between
its two nodes. This is the classical binned kernel estimate (Silverman 1982;
Wand 1994), in ``O(n + G log G + m)`` for ``G`` grid nodes.

**Error bound.** For the Gaussian :math:`K(x) = e^{-x^2 / (2 \\sigma^2)}`,
:math:`|K''(x)| \\le 1.15\\, \\sigma^{-2} e^{-x^2 / (4 \\sigma^2)}`. Binning a
point moves its term by at most :math:`\\delta^2 / 8` times :math:`|K''|`
near it, and so does the linear interpolation of the query's sums; since the
estimate is a convex combination of the values, the error of the ratio
:math:`S / D` for a column of values of range :math:`R` is at most

.. math::

    R \\left( 0.3 \\, (\\delta / \\sigma)^2 \\frac{D_{\\sqrt 2 \\sigma}(q)}{D(q)}
    + (\\epsilon_{\\rm trunc} + \\epsilon_{\\rm fft}) \\frac{W}{D(q)} \\right)

(:math:`D_{\\sqrt 2 \\sigma}` the weight sum at the wider bandwidth, itself
binned; :math:`W` the total weight; the last terms are the truncated tails
and the rounding of the convolution, relative to the total weight). Queries
where this bound exceeds the tolerance (sparse regions, queries outside the
grid) are summed exactly by :func:`~sknw._sums.kernel_sums`.

**Local moments** (:func:`binned_moment_sums`, for the local polynomial
fits): the sums of :math:`g_j(u) = u^j e^{-u^2 / 2}` times ``[w v, w]``,
``u = (x - q) / sigma``, for ``j`` up to the powers asked, each by the same
binning, a correlation with :math:`g_j` sampled on the grid and linear
interpolation. With :math:`|g_j''(u)| \\le A_j e^{-u^2 / 4}`
(:func:`second_derivative_envelope`), each sum errs by at most
:math:`A_j (\\delta / \\sigma)^2 / 4` (binning and interpolation) times
:math:`D_{\\sqrt 2 \\sigma}(q)` (times the largest ``|v|`` for
the value columns; itself binned, so taken with its own error, at most
:math:`A_0 (\\delta / \\sigma)^2 / 8` of the total weight), plus the
truncated tails of :math:`g_j` beyond :data:`U_MAX` and the rounding of the
convolution, relative to the total weight. A point within
:data:`U_MAX` (and two grid steps) of the query errs by the binning and
interpolation of the untruncated :math:`g_j` plus its taps dropped beyond
:data:`U_MAX`; a point beyond meets only lags beyond it, where
:math:`|g_j|` decreases (:math:`\\sqrt j <` :data:`U_MAX`), so that its
error is at most :math:`|g_j(u_{\\max})|` times its weight, the tails'
term. The envelope is taken within two grid steps of each point (its
binning's nodes and the query's interpolation's), a factor
:math:`e^{(u_{\\max} + 2 \\delta / \\sigma) \\delta / \\sigma}`, and the
convolution's rounding at twice the sums' (the taps of a grid of half the
step: measured, 1.3e-14 of the total weight at 4.5 million nodes, against
2e-12 allowed). The local fit serves a query where the error of its
estimate that these bounds allow is within the tolerance (else the exact
path fits it).
"""

import functools
import math

import numpy as np
from scipy import fft as sp_fft

from .._trace import record
from ._base import (
    Backend,
    MomentSums,
    _scaled_rows,
    own_rows,
    removed_weight,
    working_elements,
)
from ._dense import exact_rows
from ._fgt import gaussian_why_not
from ._traits import gaussian_sigma

#: The Gaussian is truncated where it falls below this (relative to K(0)).
TRUNCATION = 1e-13
#: Truncation radius in units of the Gaussian's standard deviation.
U_MAX = math.sqrt(-2.0 * math.log(TRUNCATION))
#: Rounding of the FFT convolution, relative to the total weight.
FFT_ROUNDING = 1e-12
#: Binning and interpolation error: ``BIN_ERROR * (delta / sigma)**2`` times
#: the ratio of the wider weight sum to the weight sum (see module docstring).
BIN_ERROR = 0.3
#: The grid step makes the binning error a quarter of the tolerance where the
#: ratio of the weight sums is 2 (about sqrt(2) in the bulk of the data).
GRID_MARGIN = 8.0
#: Largest grid (nodes).
MAX_NODES = 1 << 23
#: Grid-sized float64 arrays alive per column of values convolved at once
#: (its bins, its spectrum, its convolution, and room for the transform's
#: own), besides the spectrum of the taps: the columns are taken in groups
#: whose arrays fit in scikit-learn's ``working_memory``
#: (:func:`_grid_budget`). A grid whose one column would not fit is refused
#: at fit (:class:`GridSizeError`); at predict, under a smaller
#: ``working_memory`` than at fit, its queries take the exact sums.
GRID_ARRAYS = 4


class GridSizeError(ValueError):
    """A grid too large for a bandwidth and tolerance (:func:`binned_grid`):
    an estimator's fit raises it; a search scores NaN a candidate its final
    fit would refuse (:func:`~sknw._selection.grid.refused_candidates`)."""


def binned_grid(x_min, x_max, sigma, tol, fine=1.0, memory=True):
    """``(lo, delta, n_nodes)`` of the grid for data in ``[x_min, x_max]``
    (``fine``: squared steps that many times smaller, for the local
    moments).

    Raises :class:`GridSizeError` (a ValueError) when the grid would exceed
    :data:`MAX_NODES`, or (``memory``) its transforms for one column
    scikit-learn's ``working_memory`` (:func:`grid_fits`).
    """
    delta = sigma * math.sqrt(tol / (GRID_MARGIN * BIN_ERROR * fine))
    lo = x_min - U_MAX * sigma
    span = (x_max + U_MAX * sigma) - lo
    n_nodes = int(math.ceil(span / delta)) + 2 if delta > 0 else math.inf
    if np.isfinite(span) and n_nodes <= MAX_NODES:
        if memory and not grid_fits(n_nodes, sigma, delta):
            size = _fft_size(n_nodes, _half_width(math.sqrt(2.0) * sigma, delta))
            raise GridSizeError(
                f"algorithm='binned' would need a grid of {n_nodes} nodes, whose "
                f"transforms take {(GRID_ARRAYS + 1) * size * 8 / 2**20:.0f} MiB, "
                "more than scikit-learn's working_memory: use a larger binned_tol "
                "or working_memory, or algorithm='brute'."
            )
    else:
        widths = (x_max - x_min) / sigma if sigma > 0 else math.inf
        raise GridSizeError(
            "algorithm='binned' would need a grid of more than "
            f"{MAX_NODES} nodes: the data span {widths:.3g} "
            f"bandwidths, too many at binned_tol={tol:g}. Use a larger binned_tol, "
            "or algorithm='brute'."
        )
    return lo, delta, n_nodes


def _half_width(sigma, delta):
    """The taps on each side of a kernel of standard deviation ``sigma``
    (truncated at :data:`U_MAX` of them) on a grid of step ``delta``."""
    return int(math.ceil(U_MAX * sigma / delta))


def _fft_size(n_nodes, half):
    """The length of the transforms of a grid of ``n_nodes`` convolved with
    ``2 half + 1`` taps."""
    return sp_fft.next_fast_len(n_nodes + 2 * half, real=True)


def grid_fits(n_nodes, sigma, delta):
    """Whether the transforms of one column of a grid of ``n_nodes`` (of
    step ``delta``, convolved up to a Gaussian of standard deviation
    ``sqrt(2) sigma``) fit in :func:`_grid_budget`."""
    size = _fft_size(n_nodes, _half_width(math.sqrt(2.0) * sigma, delta))
    return (GRID_ARRAYS + 1) * size <= _grid_budget()


def _grid_budget():
    """The float64 values the grid's arrays may hold: scikit-learn's
    ``working_memory`` (four times the tiles' :func:`working_elements`)."""
    return 4 * working_elements()


def _column_groups(n_columns, size):
    """Slices of the columns convolved together (:data:`GRID_ARRAYS` arrays
    of ``size`` each, besides one for the taps, within :func:`_grid_budget`;
    at least one column)."""
    per = max(1, (_grid_budget() // size - 1) // GRID_ARRAYS)
    return [slice(a, min(a + per, n_columns)) for a in range(0, n_columns, per)]


def _linear_bins(pos, columns, n_nodes):
    """Split each row of ``columns`` between nodes floor(pos) and floor(pos)+1."""
    i = np.floor(pos).astype(np.intp)
    t = pos - i
    out = np.empty((n_nodes, columns.shape[1]))
    for c in range(columns.shape[1]):
        col = columns[:, c]
        out[:, c] = np.bincount(i, weights=(1.0 - t) * col, minlength=n_nodes)
        out[:, c] += np.bincount(i + 1, weights=t * col, minlength=n_nodes)
    return out


def _correlated(pos, columns, n_nodes, taps, pos_q):
    """The ``columns`` of the points at grid positions ``pos``, binned on
    ``n_nodes`` nodes, correlated with each of ``taps`` (a list of arrays of
    ``2 half + 1`` taps, ``half`` the same for all) and interpolated at the
    grid positions ``pos_q``: ``(len(pos_q), len(taps), n_columns)``. The
    columns are taken in groups (:func:`_column_groups`), one FFT each."""
    half = (len(taps[0]) - 1) // 2
    size = _fft_size(n_nodes, half)
    out = np.empty((pos_q.size, len(taps), columns.shape[1]))
    for group in _column_groups(columns.shape[1], size):
        binned = _linear_bins(pos, columns[:, group], n_nodes)
        spectra = sp_fft.rfft(binned, n=size, axis=0)
        del binned
        for j, t in enumerate(taps):  # one tap's transforms at a time
            full = sp_fft.irfft(
                spectra * sp_fft.rfft(t, n=size)[:, None], n=size, axis=0
            )
            out[:, j, group] = _interpolate(full[half : half + n_nodes], pos_q)
            del full
    return out


def _gaussian_taps(sigma, delta):
    """The Gaussian of standard deviation ``sigma`` on the grid's lags, to
    :data:`U_MAX`."""
    half = _half_width(sigma, delta)
    lags = np.arange(-half, half + 1) * (delta / sigma)
    return np.exp(-0.5 * lags * lags)


def _line_points(Q, X, V, head, scale, sample_weight):
    """``(q, x, V, w, sigma)``: the queries' and the training points' scaled
    coordinates, the training points' values and weights, those of weight
    zero left out (they are not part of the sums, nor of the grid), and the
    Gaussian's standard deviation."""
    x = _scaled_rows(X, 0, X.shape[0], scale)[:, 0]
    q = _scaled_rows(Q, 0, Q.shape[0], scale)[:, 0]
    w = np.ones(x.shape[0]) if sample_weight is None else sample_weight
    positive = w > 0
    return q, x[positive], V[positive], w[positive], gaussian_sigma(head)


def _interpolate(grid_values, pos):
    i = np.floor(pos).astype(np.intp)
    t = (pos - i)[:, None]
    return (1.0 - t) * grid_values[i] + t * grid_values[i + 1]


#: The local moments' grid is finer than the sums' by this factor (in
#: ``(delta / sigma)**2``, twice finer in steps): the local solve amplifies
#: the moments' errors in sparse windows, so that a finer grid serves more
#: of their queries (on clustered data with a sparse bridge, 0.78 of the
#: local linear fits against 0.69 on the sums' grid; 0.83 at 16, for twice
#: the nodes again).
LOCAL_GRID_FACTOR = 4.0


@functools.cache
def second_derivative_envelope(j):
    """``A_j`` with ``|g_j''(u)| <= A_j exp(-u**2 / 4)`` for ``g_j(u) = u**j
    exp(-u**2 / 2)``: the largest ``|u**(j+2) - (2 j + 1) u**j + j (j - 1)
    u**(j-2)| exp(-u**2 / 4)``, on a fine grid of ``u`` (the maximum of a
    smooth function of ``u`` whose derivative is bounded there), with a
    1 % margin for the grid. ``A_0`` is about 1.16 (the module docstring's
    1.15 with that margin)."""
    u = np.linspace(0.0, 40.0, 400001)
    poly = u ** (j + 2) - (2 * j + 1) * u**j
    if j >= 2:
        poly = poly + j * (j - 1) * u ** (j - 2)
    return 1.01 * float(np.max(np.abs(poly) * np.exp(-0.25 * u * u)))


def _moment_taps(j, half, delta, sigma):
    """``g_j`` at the lags ``half - i`` (``i`` from 0 to ``2 half``) of the
    grid, in standard deviations: the taps whose convolution with the
    binned columns gives their correlation with ``g_j`` (``u = x - q``)."""
    lags = (half - np.arange(2 * half + 1)) * (delta / sigma)
    return lags**j * np.exp(-0.5 * lags * lags)


def binned_moment_sums(
    Q, X, V, head, powers, *, tol, scale=None, sample_weight=None, **params
):
    """:class:`~sknw._sums._base.MomentSums` of a Gaussian in 1-D about each
    query, binned (module docstring): ``sums[i, j] = sum w g_j(u) [v, 1]``
    with ``u = (x - q_i) / sigma`` (``unit = sigma``, scaled coordinates),
    ``bound[i, j]`` the bound of the error of its weight column (and, times
    the largest ``|v|``, of the others); infinite outside the grid. With
    ``exclude_self``, each query's own term is subtracted (``g_0(0) = 1``
    times the weight it leaves out; the others vanish at ``u = 0``); the
    bound still covers the binning of every point. The grid is
    :data:`LOCAL_GRID_FACTOR` finer (in squared steps) than the sums' at the
    same ``tol``; its powers are convolved one at a time. Each call (a
    binning of every training point) is recorded (``binned_moments``:
    ``n_queries``)."""
    m, k = Q.shape[0], V.shape[1]
    record("binned_moments", n_queries=m)
    q, x, Vp, w, sigma = _line_points(Q, X, V, head, scale, sample_weight)
    sums = np.zeros((m, powers + 1, k + 1))
    bound = np.full((m, powers + 1), np.inf)
    grid = _grid_of(x, sigma, tol, LOCAL_GRID_FACTOR)
    if grid is None:  # no grid: every query unserved
        return MomentSums(sums, bound, None, sigma)
    lo, delta, n_nodes = grid
    pos_x = (x - lo) / delta
    pos = (q - lo) / delta
    inside = np.flatnonzero((pos >= 0) & (pos < n_nodes - 1))
    if not inside.size:
        return MomentSums(sums, bound, None, sigma)
    half = _half_width(sigma, delta)
    taps = [_moment_taps(j, half, delta, sigma) for j in range(powers + 1)]
    columns = np.column_stack([Vp * w[:, None], w])
    sums[inside] = _correlated(pos_x, columns, n_nodes, taps, pos[inside])
    wide = _correlated(
        pos_x,
        w[:, None],
        n_nodes,
        [_gaussian_taps(math.sqrt(2.0) * sigma, delta)],
        pos[inside],
    )[:, 0, 0]
    own = own_rows(m, params)
    if own is not None:
        mine = own[inside]
        removed = removed_weight(mine, sample_weight, params.get("self_weight"))
        sums[inside, 0, :k] -= removed[:, None] * V[mine]
        sums[inside, 0, k] -= removed
    total = float(w.sum())
    step = delta / sigma
    # The envelope within two grid steps of a point (the nodes of its
    # binning, and of the query's interpolation).
    shift = math.exp((U_MAX + 2.0 * step) * step)
    # The wider weight sum, binned too: with its own error (binning, its
    # truncated tails and rounding).
    wide_in = np.abs(wide)
    wide_in += 0.125 * second_derivative_envelope(0) * step**2 * shift * total
    wide_in += (TRUNCATION + FFT_ROUNDING) * total
    # The convolution's rounding grows with the taps' norm: the finer grid's.
    fft = FFT_ROUNDING * math.sqrt(LOCAL_GRID_FACTOR)
    for j in range(powers + 1):
        tail = TRUNCATION * U_MAX**j + fft * max(1.0, _g_max(j))
        binning = 0.25 * second_derivative_envelope(j) * step**2 * shift
        bound[inside, j] = binning * wide_in + tail * total
    return MomentSums(sums, bound, None, sigma)


def _grid_of(x, sigma, tol, fine=1.0):
    """The grid of :func:`binned_grid` for the points ``x`` (of positive
    weight), or None where there are none or its transforms for one column
    do not fit in the current ``working_memory`` (at predict, smaller than
    at fit, which checked them): their queries then take the exact sums."""
    if not x.size:
        return None
    lo, delta, n_nodes = binned_grid(
        float(x.min()), float(x.max()), sigma, tol, fine, memory=False
    )
    return (lo, delta, n_nodes) if grid_fits(n_nodes, sigma, delta) else None


def _g_max(j):
    """The largest ``|g_j(u)|``: ``(j / e)**(j / 2)`` (1 for ``j = 0``)."""
    return 1.0 if j == 0 else (j / math.e) ** (j / 2.0)


def binned_kernel_sums(
    Q,
    X,
    V,
    heads,
    *,
    tol,
    scale=None,
    sample_weight=None,
    metric="euclidean",
    metric_params=None,
    tile_elements=None,
    **params,
):
    """:func:`~sknw._sums.kernel_sums` for a Gaussian in 1-D, binned.

    Each query's ratio ``S / den`` is within ``tol`` times the range of each
    column of ``V`` of the exact one; queries where the bound of the module
    docstring cannot promise it are summed exactly. Binned rows are unshifted
    (``M = 0``). With ``exclude_self`` (leave-one-out, see
    :func:`~sknw._sums.kernel_sums`), each query's own term (``K(0) = 1``
    times the weight it leaves out) is subtracted and the bound is taken
    relative to the weight that remains.

    Each call (a binning of every training point) is recorded
    (``binned_sums``: ``n_queries``, and ``n_exact`` of them summed
    exactly).
    """
    (head,) = heads
    m, k = Q.shape[0], V.shape[1]
    q, x, Vp, w, sigma = _line_points(Q, X, V, head, scale, sample_weight)
    grid = _grid_of(x, sigma, tol)
    inside = np.zeros(m, dtype=bool)  # no grid: every query exact
    if grid is not None:
        lo, delta, n_nodes = grid
        # Values centred on their mid-range: the bound is relative to the range.
        mid = 0.5 * (Vp.max(axis=0) + Vp.min(axis=0))
        columns = np.column_stack([(Vp - mid) * w[:, None], w])
        pos_x = (x - lo) / delta
        pos = (q - lo) / delta
        inside = (pos >= 0) & (pos < n_nodes - 1)
    S = np.zeros((m, k))
    den = np.zeros(m)
    bound = np.full(m, np.inf)
    own = own_rows(m, params)
    if inside.any():
        at = np.empty((int(inside.sum()), k + 2))
        at[:, : k + 1] = _correlated(
            pos_x, columns, n_nodes, [_gaussian_taps(sigma, delta)], pos[inside]
        )[:, 0]
        at[:, k + 1] = _correlated(
            pos_x,
            w[:, None],
            n_nodes,
            [_gaussian_taps(math.sqrt(2.0) * sigma, delta)],
            pos[inside],
        )[:, 0, 0]
        if own is not None:
            mine = own[inside]
            removed = removed_weight(mine, sample_weight, params.get("self_weight"))
            at[:, :k] -= removed[:, None] * (V[mine] - mid)
            at[:, k] -= removed
        den_in, wide_in = at[:, k], at[:, k + 1]
        total = float(w.sum())
        with np.errstate(divide="ignore", invalid="ignore"):
            b = (
                BIN_ERROR * (delta / sigma) ** 2 * np.abs(wide_in)
                + (TRUNCATION + FFT_ROUNDING) * total
            ) / den_in
        bound[inside] = np.where(den_in > 0, b, np.inf)
        S[inside] = at[:, :k] + den_in[:, None] * mid
        den[inside] = den_in
    M = np.zeros(m)
    exact = ~(bound <= tol)
    record("binned_sums", n_queries=m, n_exact=int(np.count_nonzero(exact)))
    exact_rows(
        (S, den, M),
        exact,
        Q,
        X,
        V,
        heads,
        metric=metric,
        metric_params=metric_params,
        scale=scale,
        sample_weight=sample_weight,
        **params,
        **({} if tile_elements is None else {"tile_elements": tile_elements}),
    )
    return [(S, den, M)]


class BinnedBackend(Backend):
    """The Gaussian in one dimension by linear binning and FFT, within the
    estimator's tolerance (``binned_tol``); never chosen by ``"auto"``."""

    name = "binned"
    auto = False
    tolerance = True
    leave_one_out = True
    local_moments = True

    def why_not(self, kernel, metric, metric_params, n_features):
        return gaussian_why_not(self.name, kernel, metric, metric_params, n_features)

    def fit(self, request):
        """The tolerance, once the grid is known to fit (else ValueError)."""
        X, w = request.X, request.sample_weight
        x = _scaled_rows(X, 0, X.shape[0], request.scale)[:, 0]
        if w is not None:
            x = x[w > 0]
        sigma = gaussian_sigma(request.head)
        fine = LOCAL_GRID_FACTOR if request.powers else 1.0  # local moments
        if x.size:  # else no sums to bin: every query exact
            binned_grid(float(x.min()), float(x.max()), sigma, request.tolerance, fine)
        return request.tolerance

    def serves(self, index, V, heads, sample_weight):
        # The tolerance bounds ratios of one head's sums.
        return len(heads) == 1

    def sums(self, index, Q, X, V, heads, *, n_jobs=None, **params):
        self.check_params(params)
        return binned_kernel_sums(Q, X, V, heads, tol=index, **params)

    def moment_sums(self, index, Q, X, V, head, powers, **params):
        """The local moments, binned (:func:`binned_moment_sums`)."""
        self.check_params(params)
        return binned_moment_sums(Q, X, V, head, powers, tol=index, **params)
