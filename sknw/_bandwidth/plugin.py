"""The direct plug-in bandwidth of local linear regression in one feature,
``bandwidth="plugin"``: Ruppert, Sheather and Wand (1995), as
``KernSmooth::dpill`` computes it.

The bandwidth minimising the asymptotic mean integrated squared error of a
Gaussian local linear fit on ``[a, b]`` is
``h = (sigma2 (b - a) / (2 sqrt(pi) theta22 n)) ** (1 / 5)``, with the noise
variance ``sigma2`` and ``theta22`` the mean of the squared second derivative
of the regression function over the design. Both are estimated in stages,
after trimming 1 % of the points at each end of the sorted design:

1. The design is cut into ``N`` blocks of equal size (``N`` up to
   ``min(n / 20, 5)``, chosen by Mallows' Cp), a quartic fitted to each by
   least squares: the residual variance and the mean of ``m'' m''''`` give a
   pilot bandwidth ``g`` for the second derivative.
2. ``theta22`` is the mean square of the second derivative estimated by a
   local cubic fit of bandwidth ``g`` (binned, trimmed by 5 % of the grid at
   each end).
3. ``sigma2`` is the residual sum of squares of a local linear fit of a
   second pilot bandwidth, divided by its degrees of freedom ``n - 2 tr(S) +
   tr(S'S)``.

Stages 2 and 3 use linear binning on 401 grid points and the Gaussian kernel
truncated at 4 standard deviations, as ``dpill`` does; the result is a
Gaussian standard deviation, converted to other kernels by their canonical
scales (as the rules of thumb are).
"""

import math

import numpy as np

#: Share of the sorted points trimmed at each end.
TRIM = 0.01
#: Share of the grid trimmed at each end in the estimate of ``theta22``.
GRID_TRIM = 0.05
#: Grid points of the binned stages.
GRID_SIZE = 401
#: The most blocks, and the fewest points per block on average.
MAX_BLOCKS, BLOCK_DIVISOR = 5, 20
#: Degree of the blocked polynomial fits.
BLOCK_DEGREE = 4
#: The binned Gaussian kernels are truncated at this many standard deviations.
TAU = 4.0
#: Fewest training points the plug-in takes.
MIN_POINTS = 10


def plugin_bandwidth(x, y):
    """The direct plug-in bandwidth (a Gaussian standard deviation) of the
    local linear fit of ``y`` on the one feature ``x`` (see the module
    docstring). Raises ValueError for fewer than :data:`MIN_POINTS` points or
    data that determine no positive finite bandwidth (noise-free or
    polynomial of degree at most one)."""
    order = np.argsort(x, kind="stable")
    x, y = np.asarray(x, float)[order], np.asarray(y, float)[order]
    if x.size < MIN_POINTS:
        raise ValueError(
            f"bandwidth='plugin' needs at least {MIN_POINTS} training points; "
            f"got {x.size}. Use bandwidth='cv' or a number."
        )
    cut = math.floor(TRIM * x.size)
    x, y = x[cut : x.size - cut], y[cut : y.size - cut]
    n = x.size
    a, b = float(x[0]), float(x[-1])
    counts, sums, delta = _linear_bins(x, y, a, b)
    n_max = max(min(n // BLOCK_DIVISOR, MAX_BLOCKS), 1)
    sigma2_q, th24 = _blocked_fits(x, y, _cp_blocks(x, y, n_max))
    g = _positive(sigma2_q * (b - a) / (abs(th24) * n))
    g = (
        (3 * g / (8 * math.sqrt(math.pi))) ** (1 / 7)
        if th24 < 0
        else (15 * g / (16 * math.sqrt(math.pi))) ** (1 / 7)
    )
    second = _local_poly(counts, sums, delta, g, degree=3)[:, 2] * 2.0
    lo = math.floor(GRID_TRIM * GRID_SIZE)
    keep = slice(lo, GRID_SIZE - lo)
    th22 = _positive(float(np.sum(second[keep] ** 2 * counts[keep])) / n)
    c3k = 0.5 + 2 * math.sqrt(2) - 4 / 3 * math.sqrt(3)
    c3k = (4 * c3k / math.sqrt(2 * math.pi)) ** (1 / 9)
    lam = c3k * (sigma2_q**2 * (b - a) / (th22 * n) ** 2) ** (1 / 9)
    fit, diag, sq_diag = _local_linear_diagonals(counts, sums, delta, lam)
    rss = float(np.sum(y**2) - 2 * np.sum(fit * sums) + np.sum(fit**2 * counts))
    dof = n - 2 * float(np.sum(diag * counts)) + float(np.sum(sq_diag * counts))
    sigma2 = _positive(rss / dof)
    return _positive((sigma2 * (b - a) / (2 * math.sqrt(math.pi) * th22 * n)) ** 0.2)


def _positive(value):
    """``value`` where it is a positive finite number; else the ValueError
    of data that determine no plug-in bandwidth."""
    with np.errstate(all="ignore"):
        ok = bool(np.isfinite(value) and value > 0)
    if not ok:
        raise ValueError(
            "bandwidth='plugin' found no positive finite bandwidth: the "
            "targets look noise-free or linear in the feature (an estimated "
            "noise variance or curvature of 0). Use bandwidth='cv'."
        )
    return float(value)


def _linear_bins(x, y, a, b):
    """Linear binning of the sorted ``x`` (and of ``y``) on
    :data:`GRID_SIZE` points from ``a`` to ``b`` (the points at ``b`` in the
    last bin)."""
    delta = (b - a) / (GRID_SIZE - 1)
    pos = np.minimum((x - a) / delta, GRID_SIZE - 1)
    left = np.minimum(np.floor(pos).astype(np.intp), GRID_SIZE - 2)
    inside = left >= 0
    left, rem = left[inside], pos[inside] - left[inside]
    counts = np.bincount(left, 1 - rem, GRID_SIZE) + np.bincount(
        left + 1, rem, GRID_SIZE
    )
    yi = y[inside]
    sums = np.bincount(left, (1 - rem) * yi, GRID_SIZE) + np.bincount(
        left + 1, rem * yi, GRID_SIZE
    )
    return counts, sums, delta


def _blocks(n, n_blocks):
    """Index ranges of ``n_blocks`` blocks of ``n // n_blocks`` sorted points
    (the last takes the rest)."""
    size = n // n_blocks
    return [
        (j * size, n if j == n_blocks - 1 else (j + 1) * size) for j in range(n_blocks)
    ]


def _quartic(x, y):
    """Least-squares quartic of one block: its coefficients in the block's
    centred and scaled coordinate, that coordinate and the residual sum of
    squares."""
    centre, scale = x.mean(), max(float(np.ptp(x)), np.finfo(float).tiny)
    t = (x - centre) / scale
    A = np.vander(t, BLOCK_DEGREE + 1, increasing=True)
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    resid = y - A @ coef
    return coef, t, scale, float(resid @ resid)


def _cp_blocks(x, y, n_max):
    """The number of blocks minimising Mallows' Cp among ``1..n_max``."""
    rss = np.array(
        [
            sum(_quartic(x[i:j], y[i:j])[3] for i, j in _blocks(x.size, N))
            for N in range(1, n_max + 1)
        ]
    )
    q = BLOCK_DEGREE + 1
    with np.errstate(divide="ignore", invalid="ignore"):
        cp = (x.size - q * n_max) * rss / rss[-1] + 2 * q * np.arange(1, n_max + 1)
    cp = np.where(np.isfinite(cp), cp, np.inf)
    return int(np.argmin(cp)) + 1


def _blocked_fits(x, y, n_blocks):
    """``(sigma2, theta24)`` from quartics fitted to ``n_blocks`` blocks:
    the residual variance and the mean of ``m''(x) m''''(x)``."""
    rss, th24 = 0.0, 0.0
    for i, j in _blocks(x.size, n_blocks):
        c, t, s, r = _quartic(x[i:j], y[i:j])
        second = (2 * c[2] + 6 * c[3] * t + 12 * c[4] * t**2) / s**2
        fourth = 24 * c[4] / s**4
        rss += r
        th24 += float(np.sum(second * fourth))
    q = BLOCK_DEGREE + 1
    return rss / (x.size - q * n_blocks), th24 / x.size


def _moments(values, delta, h, powers, squared=False):
    """``sum_l K(l delta / h) (l delta)**p values[k + l]`` at every grid
    point ``k``, for each power ``p`` (the Gaussian truncated at
    :data:`TAU` standard deviations; its square with ``squared``), shape
    (GRID_SIZE, len(powers))."""
    L = math.floor(TAU * h / delta)
    offsets = np.arange(-L, L + 1) * delta
    kernel = np.exp(-0.5 * (offsets / h) ** 2)
    if squared:
        kernel = kernel * kernel
    padded = np.concatenate([np.zeros(L), values, np.zeros(L)])
    out = np.empty((values.size, len(powers)))
    for c, p in enumerate(powers):
        # out[k] = sum_l kernel[l] offsets[l]**p padded[k + L + l]
        out[:, c] = np.correlate(padded, kernel * offsets**p, mode="valid")
    return out


def _local_poly(counts, sums, delta, h, degree):
    """Binned local polynomial coefficients (in powers of ``x - g_k``) at
    every grid point of data (0 elsewhere), shape (GRID_SIZE, degree + 1)."""
    S = _moments(counts, delta, h, range(2 * degree + 1))
    T = _moments(sums, delta, h, range(degree + 1))
    p = degree + 1
    idx = np.add.outer(np.arange(p), np.arange(p))
    out = np.zeros((counts.size, p))
    rows = counts > 0
    out[rows] = _solve(S[rows][:, idx], T[rows])
    return out


def _local_linear_diagonals(counts, sums, delta, h):
    """The binned local linear fit at every grid point of data, its
    smoother's self weight ``e1' S^-1 e1 K(0)`` and the sum of its squared
    weights ``e1' S^-1 U S^-1 e1`` (U the moments of ``K**2``)."""
    S = _moments(counts, delta, h, range(3))
    T = _moments(sums, delta, h, range(2))
    U = _moments(counts, delta, h, range(3), squared=True)
    idx = np.add.outer(np.arange(2), np.arange(2))
    fit, diag, sq = (np.zeros(counts.size) for _ in range(3))
    rows = counts > 0
    Sr, Ur = S[rows][:, idx], U[rows][:, idx]
    fit[rows] = _solve(Sr, T[rows])[:, 0]
    e1 = np.zeros((int(rows.sum()), 2))
    e1[:, 0] = 1.0
    v = _solve(Sr, e1)  # S^-1 e1 (S symmetric)
    diag[rows] = v[:, 0]
    sq[rows] = np.einsum("ni,nij,nj->n", v, Ur, v)
    return fit, diag, sq


def _solve(A, B):
    """Solve each small system ``A[i] x = B[i]`` (least squares where one is
    singular)."""
    try:
        return np.linalg.solve(A, B[..., None])[..., 0]
    except np.linalg.LinAlgError:
        pairs = zip(A, B, strict=True)
        return np.stack([np.linalg.lstsq(a, b, rcond=None)[0] for a, b in pairs])
