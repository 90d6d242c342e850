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
"""

import math

import numpy as np
from scipy import fft as sp_fft

from ._base import Backend, _scaled_rows, own_rows, removed_weight
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
#: Largest grid (nodes): a few arrays of this many doubles are alive at once.
MAX_NODES = 1 << 23


def binned_grid(x_min, x_max, sigma, tol):
    """``(lo, delta, n_nodes)`` of the grid for data in ``[x_min, x_max]``.

    Raises ValueError when the grid would exceed :data:`MAX_NODES`.
    """
    delta = sigma * math.sqrt(tol / (GRID_MARGIN * BIN_ERROR))
    lo = x_min - U_MAX * sigma
    span = (x_max + U_MAX * sigma) - lo
    n_nodes = int(math.ceil(span / delta)) + 2 if delta > 0 else math.inf
    if not (np.isfinite(span) and n_nodes <= MAX_NODES):
        raise ValueError(
            "algorithm='binned' would need a grid of more than "
            f"{MAX_NODES} nodes: the data span {x_max - x_min:.3g} is too wide "
            f"for the bandwidth at binned_tol={tol:g}. Use a larger binned_tol, "
            "or algorithm='brute'."
        )
    return lo, delta, n_nodes


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


def _convolve(binned, sigmas, delta):
    """Columns of ``binned`` convolved with the Gaussian of each ``sigma``
    (a list of (sigma, column indices)) on the grid, by one FFT per column."""
    n_nodes = binned.shape[0]
    halves = [int(math.ceil(U_MAX * sigma / delta)) for sigma, _ in sigmas]
    size = sp_fft.next_fast_len(n_nodes + 2 * max(halves), real=True)
    spectra = sp_fft.rfft(binned, n=size, axis=0)
    out = []
    for (sigma, cols), half in zip(sigmas, halves, strict=True):
        lags = np.arange(-half, half + 1) * (delta / sigma)
        taps = sp_fft.rfft(np.exp(-0.5 * lags * lags), n=size)
        full = sp_fft.irfft(spectra[:, cols] * taps[:, None], n=size, axis=0)
        out.append(full[half : half + n_nodes])
    return out


def _interpolate(grid_values, pos):
    i = np.floor(pos).astype(np.intp)
    t = (pos - i)[:, None]
    return (1.0 - t) * grid_values[i] + t * grid_values[i + 1]


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
    """
    (head,) = heads
    m, k = Q.shape[0], V.shape[1]
    x = _scaled_rows(X, 0, X.shape[0], scale)[:, 0]
    q = _scaled_rows(Q, 0, m, scale)[:, 0]
    w = np.ones(x.shape[0]) if sample_weight is None else sample_weight
    sigma = gaussian_sigma(head)
    # Points of weight zero are not part of the sums (nor of the grid).
    positive = w > 0
    x, Vp, w = x[positive], V[positive], w[positive]
    lo, delta, n_nodes = binned_grid(float(x.min()), float(x.max()), sigma, tol)
    # Values centred on their mid-range: the bound is relative to the range.
    mid = 0.5 * (Vp.max(axis=0) + Vp.min(axis=0))
    columns = np.column_stack([(Vp - mid) * w[:, None], w])
    binned = _linear_bins((x - lo) / delta, columns, n_nodes)
    sums, wide = _convolve(
        binned, [(sigma, slice(None)), (math.sqrt(2.0) * sigma, [k])], delta
    )
    wide = wide[:, 0]
    pos = (q - lo) / delta
    inside = (pos >= 0) & (pos < n_nodes - 1)
    S = np.zeros((m, k))
    den = np.zeros(m)
    bound = np.full(m, np.inf)
    own = own_rows(m, **params)
    if inside.any():
        at = _interpolate(np.column_stack([sums, wide]), pos[inside])
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
    exact_rows(
        (S, den, M), ~(bound <= tol), Q, X, V, heads,
        metric=metric, metric_params=metric_params, scale=scale,
        sample_weight=sample_weight, **params,
        **({} if tile_elements is None else {"tile_elements": tile_elements}),
    )  # fmt: skip
    return [(S, den, M)]


class BinnedBackend(Backend):
    """The Gaussian in one dimension by linear binning and FFT, within the
    estimator's tolerance (``binned_tol``); never chosen by ``"auto"``."""

    name = "binned"
    auto = False
    tolerance = True
    leave_one_out = True

    def why_not(self, kernel, metric, metric_params, n_features):
        return gaussian_why_not(self.name, kernel, metric, metric_params, n_features)

    def fit(self, request):
        """The tolerance, once the grid is known to fit (else ValueError)."""
        X, w = request.X, request.sample_weight
        x = _scaled_rows(X, 0, X.shape[0], request.scale)[:, 0]
        if w is not None:
            x = x[w > 0]
        sigma = gaussian_sigma(request.head)
        binned_grid(float(x.min()), float(x.max()), sigma, request.tolerance)
        return request.tolerance

    def serves(self, index, V, heads, sample_weight):
        # The tolerance bounds ratios of one head's sums.
        return len(heads) == 1

    def sums(self, index, Q, X, V, heads, *, n_jobs=None, **params):
        self.check_params(params)
        return binned_kernel_sums(Q, X, V, heads, tol=index, **params)
