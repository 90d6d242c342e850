"""Frames and solutions of the local linear fit: the coordinates its moments
are taken in and the small least-squares problems solved from them."""

import math
from dataclasses import dataclass
from itertools import accumulate, combinations_with_replacement
from typing import NamedTuple

import numpy as np

from .._sums import power_of_two_scale
from .._trace import Tunable
from .uncertainty import SquaredWeights

_EPS = np.finfo(np.float64).eps


def outer(a, b):
    """Batched outer products of the rows of ``a`` (m, d) and ``b`` (m, d)."""
    return a[:, :, None] * b[:, None, :]


def symmetric(upper, d):
    """Symmetric (m, d, d) matrices from their upper triangles."""
    iu = np.triu_indices(d)
    out = np.empty((upper.shape[0], d, d))
    out[:, iu[0], iu[1]] = upper
    out[:, iu[1], iu[0]] = upper
    return out


def coordinate_frame(X):
    """Centre and unit of the local fit's coordinates, per feature: the
    mid-range and a power of two near the largest distance from it, so that
    coordinates lie within [-2, 2] (exact division: the local fit does not
    depend on a linear change of coordinates, and these keep the moments of
    order one at any scale of the data or the bandwidth)."""
    X = np.asarray(X, dtype=np.float64)
    lo, hi = X.min(axis=0, initial=np.inf), X.max(axis=0, initial=-np.inf)
    centre = lo / 2 + hi / 2
    half = np.maximum(hi - centre, centre - lo)
    return centre, power_of_two_scale(half[None, :], axis=0)


def monomial_terms(d, degree):
    """The monomials of degrees 1 to ``degree`` in ``d`` coordinates, each as
    the tuple of the coordinates it multiplies, in graded order (the ``d``
    linear ones first)."""
    return [
        term
        for p in range(1, degree + 1)
        for term in combinations_with_replacement(range(d), p)
    ]


def monomials(Z, degree):
    """The monomials of :func:`monomial_terms` at the rows of ``Z`` (n, D);
    ``Z`` itself for degree 1."""
    if degree == 1:
        return Z
    terms = monomial_terms(Z.shape[1], degree)
    out = np.empty((Z.shape[0], len(terms)))
    for j, term in enumerate(terms):
        out[:, j] = np.prod(Z[:, list(term)], axis=1)
    return out


def query_basis(Zq, B, degree):
    """The monomials of ``u = (z - zq) B`` (the offsets from each query in
    bandwidth units) in those of ``z``: ``T`` (m, D, D) with ``phi(u) =
    T (phi(z) - phi(zq))`` for the monomials ``phi`` of
    :func:`monomial_terms`, from the products of the linear forms ``u_f =
    sum_e (z_e - zq_e) B_ef`` (``B`` (d, d) or one per query (m, d, d)).
    Each monomial of ``u`` is scaled by the square root of its multinomial
    coefficient, so that rotations of ``u`` act orthogonally on each degree
    (a ridge ``rho I`` and the eigenvalues of the covariance do not depend
    on the axes of the features); the linear ones are unscaled."""
    m, d = Zq.shape
    B = np.broadcast_to(B, (m, d, d))
    terms = monomial_terms(d, degree)
    index = {term: j for j, term in enumerate(terms)}
    shift = np.einsum("me,mef->mf", Zq, B)
    T = np.zeros((m, len(terms), len(terms)))
    # The polynomial in z of each monomial of u: {monomial of z: coefficients}.
    polys = {(): {(): np.ones(m)}}
    for term in terms:
        f, poly = term[-1], {}
        for key, coef in polys[term[:-1]].items():
            for e in range(d):
                grown = tuple(sorted(key + (e,)))
                poly[grown] = poly.get(grown, 0.0) + coef * B[:, e, f]
            poly[key] = poly.get(key, 0.0) - coef * shift[:, f]
        polys[term] = poly
        scale = math.sqrt(
            math.factorial(len(term))
            / math.prod(math.factorial(term.count(f)) for f in set(term))
        )
        for key, coef in poly.items():
            if key:  # the constant is -T phi(zq)
                T[:, index[term], index[key]] = scale * coef
    return T


def row_groups(keys):
    """The distinct rows of ``keys`` and, for each, the indices of the rows
    equal to it (in order): queries that share a frame share its pass."""
    unique, inverse = np.unique(keys, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    order = np.argsort(inverse, kind="stable")
    return unique, np.split(order, np.cumsum(np.bincount(inverse))[:-1])


#: Frames of few queries share a pass over the training points, their
#: moment columns side by side (each query keeps its own frame's): a pass's
#: fixed cost, about 0.5 ms, is worth a product of this many elements (the
#: queries' columns of every frame of the batch times the training points).
FRAME_BATCH_WORK = Tunable(1 << 22)


def frame_batches(sizes, n_columns, n_train, limit=None):
    """Batches (lists of indices, in order) of frames of ``sizes`` queries
    whose moments (``n_columns`` per frame) one pass over ``n_train``
    training points sums side by side: while the batch's queries times its
    columns times ``n_train`` stay within :data:`FRAME_BATCH_WORK` and its
    columns times ``n_train`` within ``limit`` elements (a frame alone
    otherwise)."""
    batches, batch, queries = [], [], 0
    for f, size in enumerate(sizes):
        grown = (queries + size) * n_columns * (len(batch) + 1)
        fits = grown * n_train <= FRAME_BATCH_WORK.value
        if limit is not None:
            fits = fits and n_columns * (len(batch) + 1) * n_train <= limit
        if batch and not fits:
            batches.append(batch)
            batch, queries = [], 0
        batch.append(f)
        queries += size
    if batch:
        batches.append(batch)
    return batches


def moment_columns(Z, yc, squares=False, degree=1):
    """Per-point moments ``y, z, z y, z z^T`` (upper triangle) and, with
    ``squares``, ``y**2``, as the columns of one array; and the column bounds
    of each block. For ``degree`` above 1, ``z`` stands for the monomials of
    the coordinates (:func:`monomials`)."""
    Z = monomials(Z, degree)
    n, d = Z.shape
    k = yc.shape[1]
    iu = np.triu_indices(d)
    blocks = [
        yc,
        Z,
        (Z[:, :, None] * yc[:, None, :]).reshape(n, d * k),
        Z[:, iu[0]] * Z[:, iu[1]],
    ]
    if squares:
        blocks.append(yc * yc)
    return np.hstack(blocks), column_bounds(d, k, squares)


def column_bounds(d, k, squares=False):
    """The column bounds of the blocks of :func:`moment_columns` for ``d``
    coordinates (monomials) and ``k`` outputs."""
    widths = [k, d, d * k, d * (d + 1) // 2] + ([k] if squares else [])
    return tuple(accumulate(widths, initial=0))


#: Rounding in the local covariance (differences of kernel-weighted moments)
#: is below this many units of roundoff of the mean squared coordinate.
COVARIANCE_ROUNDING = 1e3

#: Side of the cells of queries whose moments are taken about one centre, in
#: bandwidths (per feature), for kernels of finite and of unbounded support
#: (whose windows spread further): each cell costs a pass over the training
#: points, and a window whose mean is far from its cell's centre another
#: (see :data:`RECENTRE`).
CELL_BANDWIDTHS = (4.0, 8.0)

#: A query's moments are taken again, about its window's mean, when the
#: squared distance of that mean from their centre is more than this many
#: times the smallest eigenvalue of the local covariance (both in bandwidth
#: units): the cancellation in the covariance then costs at most about
#: ``log2`` of this many bits more than centring at the mean itself.
RECENTRE = 256.0

#: A query's moments are taken again in the principal axes of its window
#: (from its last pass) when the rounding of the local solution, about
#: ``eps`` times the condition number of the local correlation matrix (the
#: covariance scaled to a unit diagonal) times ``sqrt(1 + l**2)``, ``l`` the
#: query's Mahalanobis distance from the window's mean, exceeds this: thin
#: windows across the axes, such as those of queries far beyond a corner of
#: the data. In the principal axes, the correlations vanish.
ROTATE = 1e-11

#: Most times a query's moments are taken again about a nearer centre or in
#: other axes.
MAX_RECENTRINGS = 3


@dataclass(kw_only=True)
class LocalSolution:
    """The local linear fit at each query from the kernel-weighted moments;
    ``smallest`` is the smallest eigenvalue of the covariance of the
    coordinates (the linear monomials) in bandwidth units (up to a common
    factor, see :func:`local_solution`), ``second`` the trace of their
    second moments about the centre in the same units and ``distance`` the
    squared Mahalanobis distance of the query's monomials from the window's
    mean (0 where singular): its leverage less 1. ``linear_cov`` is the
    covariance of the coordinates in their frame; with ``basis`` (``T`` of
    :func:`query_basis`), ``cov``, ``cross``, ``a`` and ``ridge`` are of the
    monomials of the offsets from the query in bandwidth units. ``rounded``
    marks the designs found singular for the rounding of their moments (in
    their frame), not for ``min_eigenvalue``; ``least`` is the smallest
    eigenvalue of the whole design (all the monomials) as solved, its ridge
    included, in the units of that test."""

    mean_y: np.ndarray
    mean_z: np.ndarray
    cov: np.ndarray
    cross: np.ndarray
    a: np.ndarray
    ok: np.ndarray
    finite: np.ndarray
    estimate: np.ndarray
    smallest: np.ndarray
    second: np.ndarray
    distance: np.ndarray
    ridge: np.ndarray = None
    ridged: np.ndarray = None
    linear_cov: np.ndarray = None
    basis: np.ndarray = None
    rounded: np.ndarray = None
    least: np.ndarray = None


def _solve(C, b):
    """``C^{-1} b`` for a stack of systems (``(m, d, d)`` and ``(m, d)``); by
    division for one coordinate."""
    if C.shape[1] == 1:
        return b / C[:, :, 0]
    return np.linalg.solve(C, b[:, :, None])[:, :, 0]


def local_solution(
    A,
    cols,
    d,
    k,
    Zq,
    min_eigenvalue,
    few=None,
    to_bandwidth=None,
    max_leverage=None,
    linear=None,
    basis=None,
    degree=1,
):
    """Solve the local least-squares problems from averaged moments.

    ``A`` holds the kernel-weighted averages of :func:`moment_columns` at the
    queries, whose coordinates are ``Zq`` (those of the moments): ``d`` of
    them, or, for a local polynomial, ``d`` monomials of which the first
    ``linear`` are the coordinates, and ``Zq`` and ``to_bandwidth`` those of
    the monomials.
    ``to_bandwidth`` (d,), or (m, d) one per query, takes these coordinates
    to bandwidth units (None:
    they are), where a design is singular when the smallest eigenvalue of the
    local covariance is at most ``min_eigenvalue`` times the largest, or
    within rounding of zero, or (``few``) the window holds fewer than d + 1
    points. Singular designs keep the local-constant estimate. With
    ``max_leverage``, the others whose leverage ``1 + l`` (``l`` the squared
    Mahalanobis distance of the query from the window's mean) exceeds it are
    ridged (:func:`ridge_to_leverage`). Estimates are of the centred
    targets.

    With ``basis`` (``B`` of :func:`query_basis`, for the monomials of
    ``degree`` above 1), the design is solved in the monomials of the
    offsets from the query in bandwidth units, where the singular test and
    the ridge do not depend on the frame (its centre, rotation and unit);
    ``to_bandwidth`` then scales the frame's monomials to bandwidth units
    for the rounding of their moments.
    """
    if d == 1 and basis is None and (linear is None or linear >= 1):
        return _line_solution(
            A, cols, Zq, min_eigenvalue, few, to_bandwidth, max_leverage
        )
    return _solution(
        A,
        cols,
        d,
        k,
        Zq,
        min_eigenvalue,
        few=few,
        to_bandwidth=to_bandwidth,
        max_leverage=max_leverage,
        linear=linear,
        basis=basis,
        degree=degree,
    )


def _singular(smallest, top, min_eigenvalue, rounding, settled):
    """Which designs are singular, of smallest and largest eigenvalues
    ``smallest`` and ``top`` (in bandwidth units): the smallest at most
    ``min_eigenvalue`` times the largest, or within ``rounding`` of zero;
    and which for the ``rounding`` of their moments alone (``rounded``),
    which a frame nearer the query decides: every one whose smallest
    eigenvalue could pass the threshold with exact moments, or, where
    ``settled`` (a ridge, several features), those above the threshold.

    Without a ridge, a window of a near point and a far one 1e-33 as heavy
    has a line that does not depend on their weights, though its covariance
    rounds to nothing (even below zero) in a frame far from it. With one, a
    covariance within rounding of zero is ridged to about the local
    constant; in several features, recomputing every such design (most
    windows of the smallest bandwidths of a search) would double the
    search for changes of about 1e-8 of its scores."""
    threshold = min_eigenvalue * top
    singular = ~(top > 0) | ~(smallest > np.maximum(threshold, rounding))
    undecided = smallest > threshold
    if not settled:
        undecided = smallest + rounding > min_eigenvalue * (top - rounding)
    return singular, singular & undecided


def _solution(
    A,
    cols,
    d,
    k,
    Zq,
    min_eigenvalue,
    *,
    few,
    to_bandwidth,
    max_leverage,
    linear,
    basis,
    degree,
):
    """:func:`local_solution` in any number of coordinates."""
    mean_y = A[:, cols[0] : cols[1]]
    mean_z = A[:, cols[1] : cols[2]]
    mean_zy = A[:, cols[2] : cols[3]].reshape(A.shape[0], d, k)
    second = symmetric(A[:, cols[3] : cols[4]], d)
    cov = second - outer(mean_z, mean_z)
    cross = mean_zy - mean_z[:, :, None] * mean_y[:, None, :]
    finite = np.all(np.isfinite(cov), axis=(1, 2))
    # One scale per monomial, or one per query and monomial (spans).
    t = np.ones(d) if to_bandwidth is None else np.asarray(to_bandwidth, float)
    tm = np.broadcast_to(t, (A.shape[0], d))
    scaled = np.where(finite[:, None, None], cov, 0.0) * outer(tm, tm)
    with np.errstate(invalid="ignore"):
        squares = np.einsum(
            "mii,mi->mi", np.where(finite[:, None, None], second, 0.0), tm * tm
        )
    trace = squares.sum(axis=1)
    rounding = COVARIANCE_ROUNDING * _EPS * trace
    linear = d if linear is None else min(linear, d)
    linear_cov, dz = cov[:, :linear, :linear], mean_z - Zq
    if linear < d:
        smallest = np.linalg.eigvalsh(scaled[:, :linear, :linear])[:, 0]
        second_linear = squares[:, :linear].sum(axis=1)
    T = None
    if basis is not None and d:
        T = query_basis(Zq[:, :linear], basis, degree)
        with np.errstate(invalid="ignore", over="ignore"):
            cov = T @ cov @ np.swapaxes(T, 1, 2)
            cross = np.einsum("mab,mbk->mak", T, cross)
            dz = np.einsum("mab,mb->ma", T, dz)
        tm = np.ones((A.shape[0], d))  # the query's monomials: bandwidth units
        scaled = np.where(finite[:, None, None], cov, 0.0)
    if d == 0:  # degree 0: the local-constant fit
        eig = np.ones((A.shape[0], 1))
    elif d == 1:  # one coordinate: the design's one entry
        eig = scaled[:, :, 0].copy()
    else:
        eig = np.linalg.eigvalsh(scaled)
    top = eig[:, -1]
    settled = max_leverage is not None and linear > 1
    singular, rounded = _singular(eig[:, 0], top, min_eigenvalue, rounding, settled)
    if linear == d:
        smallest, second_linear = eig[:, 0], trace
    if few is not None:
        singular |= few
    ok = finite & ~singular
    estimate = mean_y.copy()
    # a = C^{-1} (z_bar - z_q): the estimate is mean_y - a . cross.
    a = np.zeros((A.shape[0], d))
    distance = np.zeros(A.shape[0])
    ridge = np.zeros((A.shape[0], d))
    ridged = np.zeros(A.shape[0], dtype=bool)
    least = eig[:, 0].copy()
    if ok.any():
        # Every design solvable (the common case): views, not copies.
        ok_rows = slice(None) if ok.all() else ok
        a[ok_rows] = _solve(cov[ok_rows], dz[ok_rows])
        distance[ok_rows] = np.einsum("md,md->m", a[ok_rows], dz[ok_rows])
        limit = np.inf if max_leverage is None else max_leverage - 1.0
        over = np.flatnonzero(ok & (distance > limit))
        if over.size:
            # In bandwidth units (T C T, T dz) the ridge is isotropic.
            t_over = tm[over]
            lift = ridge_to_leverage(
                scaled[over], dz[over] * t_over, max_leverage - 1.0
            )
            ridge[over] = lift[:, None] / (t_over * t_over)
            least[over] += lift
            cov = cov.copy()
            cov[over] += ridge[over][:, :, None] * np.eye(d)[None]
            a[over] = _solve(cov[over], dz[over])
            distance[over] = np.einsum("md,md->m", a[over], dz[over])
            ridged[over] = True
        estimate[ok_rows] = mean_y[ok_rows] - np.einsum(
            "md,mdk->mk", a[ok_rows], cross[ok_rows]
        )
    if T is None and linear == d:
        linear_cov = cov
    return LocalSolution(
        mean_y=mean_y,
        mean_z=mean_z,
        cov=cov,
        cross=cross,
        a=a,
        ok=ok,
        finite=finite,
        estimate=estimate,
        smallest=smallest,
        second=second_linear,
        distance=distance,
        ridge=ridge,
        ridged=ridged,
        linear_cov=linear_cov,
        basis=T,
        rounded=rounded,
        least=least,
    )


def _line_solution(A, cols, Zq, min_eigenvalue, few, to_bandwidth, max_leverage):
    """:func:`local_solution` for one coordinate (and no basis): the same
    arithmetic on flat arrays, its results in the same shapes."""
    m = A.shape[0]
    mean_y, mz, second = A[:, cols[0] : cols[1]], A[:, cols[1]], A[:, cols[3]]
    cov = second - mz * mz
    cross = A[:, cols[2] : cols[3]] - mz[:, None] * mean_y
    finite = np.isfinite(cov)
    scaled = np.where(finite, cov, 0.0)
    with np.errstate(invalid="ignore"):
        trace = np.where(finite, second, 0.0)
    t1 = t2 = None  # in bandwidth units already: no scaling
    if to_bandwidth is not None:
        t = np.asarray(to_bandwidth, float)
        t1 = np.broadcast_to(t, (m, 1))[:, 0]
        t2 = t1 * t1
        scaled *= t2
        with np.errstate(invalid="ignore"):
            trace *= t2
    rounding = COVARIANCE_ROUNDING * _EPS * trace
    dz = mz - Zq[:, 0]
    singular, rounded = _singular(scaled, scaled, min_eigenvalue, rounding, False)
    if few is not None:
        singular |= few
    ok = finite & ~singular
    ridge, ridged = np.zeros(m), np.zeros(m, dtype=bool)
    # Every row at once (faster than masks); rows not ok keep a = 0 and the
    # local-constant estimate.
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        a = np.where(ok, dz / cov, 0.0)
        distance = np.where(ok, a * dz, 0.0)
    limit = np.inf if max_leverage is None else max_leverage - 1.0
    over = np.flatnonzero(ok & (distance > limit))
    least = scaled
    if over.size:
        t_over = 1.0 if t1 is None else t1[over]
        lift = ridge_to_leverage(
            scaled[over][:, None, None],
            (dz[over] * t_over)[:, None],
            max_leverage - 1.0,
        )
        ridge[over] = lift if t2 is None else lift / t2[over]
        least = scaled.copy()
        least[over] += lift
        cov = cov.copy()
        cov[over] += ridge[over]
        a[over] = dz[over] / cov[over]
        distance[over] = a[over] * dz[over]
        ridged[over] = True
    with np.errstate(invalid="ignore", over="ignore"):
        estimate = np.where(ok[:, None], mean_y - a[:, None] * cross, mean_y)
    cov3 = cov[:, None, None]
    return LocalSolution(
        mean_y=mean_y,
        mean_z=mz[:, None],
        cov=cov3,
        cross=cross[:, None, :],
        a=a[:, None],
        ok=ok,
        finite=finite,
        estimate=estimate,
        smallest=scaled,
        second=trace,
        distance=distance,
        ridge=ridge[:, None],
        ridged=ridged,
        linear_cov=cov3,
        basis=None,
        rounded=rounded,
        least=least,
    )


def ridge_to_leverage(C, dz, target, iterations=100):
    """The ridge ``rho >= 0`` of each design ``C`` (m, d, d) at which the
    squared Mahalanobis distance ``f(rho) = dz' (C + rho I)^-1 dz`` of its
    query is ``target`` (where it exceeds it at ``rho = 0``); for one
    coordinate, in closed form (:func:`_line_ridge`).

    In the eigenvectors of ``C``, ``f(rho) = sum_k c_k / (lam_k + rho)``:
    ``1 / f`` is concave and increasing, so that Newton's steps on ``1 / f =
    1 / target`` from below the root (where the largest term alone reaches
    ``target``) rise to it monotonically, quadratically near it. The ridge
    is then raised by units of roundoff where ``f``, as computed, still
    exceeds ``target``: the leverage is at most ``target + 1``."""
    if C.shape[1] == 1:
        return _line_ridge(C[:, 0, 0], dz[:, 0], target)
    lam, vec = np.linalg.eigh(C)
    lam = np.maximum(lam, 0.0)
    c2 = np.einsum("mdk,md->mk", vec, dz) ** 2
    target = np.broadcast_to(np.asarray(target, dtype=np.float64), (C.shape[0],))
    rho = np.maximum(np.max(c2 / target[:, None] - lam, axis=1), 0.0)
    rows = np.arange(C.shape[0])
    for _ in range(iterations):
        f, slope = _distance(c2[rows], lam[rows], rho[rows])
        t = target[rows]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            step = f * (f - t) / (t * slope)
        moving = step > 2 * _EPS * rho[rows]
        rho[rows[moving]] += step[moving]
        rows = rows[moving]
        if not rows.size:
            break
    for _ in range(8):
        above = _distance(c2, lam, rho)[0] > target
        if not above.any():
            break
        rho[above] *= 1.0 + 4 * _EPS
    return rho


def _distance(c2, lam, rho):
    """``f(rho) = sum_k c2_k / (lam_k + rho)`` and ``-f'(rho)`` per row (a
    term of ``c2_k = 0`` is 0)."""
    denom = lam + rho[:, None]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        terms = np.where(c2 > 0, c2 / denom, 0.0)
        return terms.sum(axis=1), np.where(c2 > 0, terms / denom, 0.0).sum(axis=1)


def _line_ridge(c, z, target):
    """:func:`ridge_to_leverage` for one coordinate: the root ``rho = z**2 /
    target - c`` of ``z**2 / (c + rho) = target`` (``c`` the variance, at
    least 0), raised by units of roundoff where the distance, as computed,
    still exceeds ``target`` (as in several coordinates)."""
    c = np.maximum(c, 0.0)
    z2 = z * z
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        rho = np.maximum(z2 / target - c, 0.0)
        for _ in range(4):
            above = z2 / (c + rho) > target
            if not above.any():
                break
            rho = np.where(above, rho + 2 * _EPS * (c + rho), rho)
    return rho


@dataclass(frozen=True)
class LocalFrame:
    """Where the local fits take their moments, fixed at fit.

    ``lo`` and ``hi`` bound the training inputs per feature; ``unit`` is a
    power of two of at least half their range and ``to_bandwidth`` takes
    ``(x - c) / unit`` to bandwidth units up to a common factor (at most 1):
    the coordinates of a point ``x`` in the frame of a centre ``c`` in that
    box and a rotation ``R`` are ``((x - c) / unit * to_bandwidth) @ R``,
    within [-2, 2] for every training point (the unit only guards against
    overflow: the local fit does not depend on it, nor on the rotation).
    Queries are grouped by cells of side ``cell`` (:data:`CELL_BANDWIDTHS`
    bandwidths per feature, from ``lo``); a cell's moments are taken about its
    centre (moved into the box) in the axes of the features, so that a query's
    moments are about a point near it, whatever the spread of the other
    training points.
    """

    lo: np.ndarray
    hi: np.ndarray
    unit: np.ndarray
    cell: np.ndarray
    to_bandwidth: np.ndarray

    @classmethod
    def fit(cls, X, bandwidth, kernel):
        """The frame of training inputs ``X``, a fitted ``bandwidth`` and
        ``kernel``."""
        X = np.asarray(X, dtype=np.float64)
        # No continuous feature (only discrete ones): a local constant fit.
        lo, hi = X.min(axis=0, initial=np.inf), X.max(axis=0, initial=-np.inf)
        half = hi / 2 - lo / 2
        unit = np.ldexp(power_of_two_scale(half[None, :], axis=0), 1)
        bw = np.broadcast_to(np.asarray(bandwidth, dtype=np.float64), lo.shape)
        side = CELL_BANDWIDTHS[0 if np.isfinite(kernel.support) else 1]
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            t = unit / bw
            t = t / np.max(t, initial=0.0)
            cell = side * bw
        return cls(lo, hi, unit, cell, t)

    def coordinates(self, X, C, R):
        """Coordinates of the rows of ``X`` in the frames of centres ``C`` and
        rotations ``R``: one frame for all rows (``C`` (d,), ``R`` (d, d)) or
        one per row (``C`` (m, d), ``R`` (m, d, d))."""
        Z = (X - C) / self.unit * self.to_bandwidth
        return Z @ R if R.ndim == 2 else np.einsum("md,mde->me", Z, R)

    def query_frame(self, bandwidth, R, degree):
        """For the monomials of ``degree`` above 1 in the frames of rotations
        ``R`` (m, d, d): ``B`` of :func:`query_basis` (the frame's
        coordinates to the offsets from the query in bandwidth units, ``u =
        (z - zq) B``) and the scale of each monomial to bandwidth units."""
        d, m = self.lo.size, R.shape[0]
        # One bandwidth, or one per query (spans): (m, d).
        bw = np.broadcast_to(np.asarray(bandwidth, dtype=np.float64), (m, d))
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            g = self.unit / (self.to_bandwidth * bw)
        B = np.swapaxes(R, 1, 2) * g[:, None, :]
        # Every coordinate's unit is the same number of bandwidths, g.
        terms = monomial_terms(d, degree)
        scale = np.stack([g[:, 0] ** len(term) for term in terms], axis=1)
        return B, scale

    def place(self, C, fallback):
        """Centres ``C`` moved into the box, ``fallback`` where not finite;
        without negative zeros (equal centres compare equal bitwise)."""
        C = np.where(np.isfinite(C), C, fallback)
        return np.clip(C, self.lo, self.hi) + 0.0

    def cell_centres(self, Q):
        """The centre of each query's cell."""
        cell = self.cell
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            C = self.lo + (np.floor((Q - self.lo) / cell) + 0.5) * cell
        return self.place(C, Q)

    def recentred(self, sol, C, R, few):
        """New frames for the queries whose window's mean is far from their
        centre ``C`` for the spread of their window (see :data:`RECENTRE`), or
        whose window is thin across the axes ``R`` (see :data:`ROTATE`).

        The new centre is that mean, rounded to a grid whose spacing is a
        power of two in bandwidth units, as coarse as keeps it within a
        quarter of the allowed distance (so that nearby queries share their
        pass); the spread is the smallest eigenvalue of the local covariance,
        or the rounding that hid it. The new axes are the principal axes of
        the window. Returns the centres, rotations and the mask of queries
        whose frame changed.
        """
        d, t = C.shape[1], self.to_bandwidth
        with np.errstate(invalid="ignore", over="ignore"):
            offset = np.sum(sol.mean_z[:, :d] ** 2, axis=1)
            allowed = RECENTRE * np.maximum(sol.smallest, _EPS * sol.second)
            far = sol.finite & ~few & (offset > RECENTRE * np.maximum(sol.smallest, 0))
        far &= allowed > 0
        # A spacing s keeps the rounded mean within d s**2 / 4 of the mean.
        _, exponent = np.frexp(np.sqrt(np.where(far, allowed / d, 1.0)))
        step = np.ldexp(1.0, exponent - 1)[:, None]
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            mean = C + self.unit * np.einsum("mde,me->md", R, sol.mean_z[:, :d]) / t
            spacing = self.unit * (step / t)
            new = self.lo + np.round((mean - self.lo) / spacing) * spacing
        new = np.where(far[:, None], self.place(new, self.place(mean, C)), C)
        turn = sol.ok & ~few & (d > 1)
        if turn.any():
            cov = sol.linear_cov[turn]
            scale = 1.0 / np.sqrt(np.einsum("mii->mi", cov))
            corr = np.linalg.eigvalsh(cov * outer(scale, scale))
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                rounding = _EPS * corr[:, -1] / corr[:, 0]
                turn[turn] = rounding * np.sqrt(1.0 + sol.distance[turn]) > ROTATE
        R = R.copy()
        if turn.any():
            R[turn] = R[turn] @ np.linalg.eigh(sol.linear_cov[turn])[1]
        changed = turn | np.any(new != C, axis=1)
        return new, R, changed


@dataclass
class Moments:
    """Kernel-weighted moments of :func:`moment_columns` at each query (``A``),
    in its frame (centre ``C`` and rotation ``R``, see :class:`LocalFrame`),
    of the targets minus a level near the query (``level``), and with ``sq``
    the sums of the squared weights
    (:class:`~sknw._local.uncertainty.SquaredWeights`)."""

    A: np.ndarray
    C: np.ndarray
    R: np.ndarray
    level: np.ndarray
    sq: object

    @classmethod
    def allocate(cls, C, n_columns, k, with_std):
        m, d = C.shape
        R = np.broadcast_to(np.eye(d), (m, d, d)).copy()
        sq = None
        if with_std:
            nan = np.full(m, np.nan)
            sq = SquaredWeights(
                np.full((m, n_columns), np.nan),
                nan,
                nan.copy(),
                np.zeros(m, dtype=bool),
                nan.copy(),
            )
        return cls(np.full((m, n_columns), np.nan), C, R, np.zeros((m, k)), sq)

    def put(self, rows, A, sq=None, *, level):
        """Set the moments of the queries ``rows``."""
        self.A[rows] = A
        self.level[rows] = level
        if sq is not None:
            for mine, theirs in zip(self.sq, sq, strict=True):
                mine[rows] = theirs


#: The local linear estimates from moments about each query (the 1-D fast
#: backends) are used where their error bound is within this share of the
#: range of the targets; the other queries take the exact path.
QUERY_CENTRED_TOLERANCE = Tunable(1e-10)


@dataclass
class QueryCentredFit:
    """Local linear estimates from :class:`~sknw._sums.MomentSums` about each
    query (of values centred on their mid-range): ``estimate`` (m, k), the
    queries it ``served`` (its bound within tolerance) and, among them, those
    whose design is ``singular`` (local-constant estimate) and those whose
    design is ``ridged`` to ``max_leverage`` (None: none); ``empty`` marks
    the windows without a point of positive weight (set by the caller)."""

    estimate: np.ndarray
    served: np.ndarray
    singular: np.ndarray
    error: np.ndarray
    empty: object = None
    ridged: object = None


def query_centred_fit(
    moments,
    vmax,
    value_range,
    min_eigenvalue,
    n_positive=None,
    max_leverage=None,
    offsets=None,
    tolerance=None,
):
    """The local linear fit at each query from its moments about itself
    (or about a centre near its window's mean, ``offsets``).

    The averages of :func:`moment_columns` in the frame of the query (``z = u``,
    ``Zq = 0``) come from the moments of orders 0 to 2; the design is
    singular where the window holds fewer than 2 points of positive weight
    (``moments.counts``, or ``n_positive``, one number or one per query, for
    kernels of unbounded support)
    or as :func:`local_solution` decides. Each estimate's error, from the
    bounds of the moments (relative to their weight sum ``S0``, ``e_j``) to
    first order with the products of perturbations kept, is at most::

        d_a0 + (d_m1 |c| + |m1| d_c + d_m1 d_c) / var'
             + |m1 c| d_var / (var var')

    for ``beta = a0 - m1 c / var``, ``c = a1 - m1 a0``, ``var = m2 - m1**2``
    and ``var' = var - d_var``, with ``d_m1 <= (e1 + |m1| e0) / (1 - e0)``,
    ``d_m2 <= (e2 + m2 e0) / (1 - e0)``, ``d_a_j <= (e_j vmax + |a_j| e0) /
    (1 - e0)`` (``vmax`` the largest ``|v|`` of each output), ``d_var <=
    d_m2 + 2 |m1| d_m1 + d_m1**2`` and ``d_c <= d_a1 + |m1| d_a0 + |a0| d_m1
    + d_m1 d_a0``; plus the solve's own rounding. A query is served where that is within
    ``tolerance`` (None: :data:`QUERY_CENTRED_TOLERANCE`; the binned
    moments' tolerance) times ``value_range`` (per output), its
    window holds a positive weight, and its design is not singular but for
    too few points (a decision exact from the counts; near-singular designs
    take the exact path, which decides in its own frame). Designs that
    ``max_leverage`` ridges are served where the ridge is certain, with the
    bound of :func:`_ridged_error`.

    ``offsets`` (m,): the moments are about centres rather than the queries,
    each query at this offset from its centre (in units of
    ``moments.unit``): ``beta = a0 - (m1 - zq) c / var``, and the bound
    above holds with ``m1 - zq`` for ``m1`` where it is the query's offset
    from the window's mean (``|m1|`` before ``d_c``, in ``slope`` and in the
    ridge), its error ``d_m1`` plus the rounding of ``zq``. About a centre
    near the mean, the variance does not cancel; a design singular for
    rounding there is served with the local-constant estimate where every
    estimate the exact path could give is within the bound of
    :func:`_thin_error` of it (with ``max_leverage``).
    """
    S, bound = moments.sums, moments.bound
    m, k = S.shape[0], S.shape[2] - 1
    S0 = S[:, 0, k]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # Each column contiguous (the arithmetic below is per column),
        # divided straight from the sums' strided columns.
        A = np.empty((2 * k + 2, m))
        np.divide(S[:, 0, :k].T, S0, out=A[:k])
        np.divide(S[:, 1, k], S0, out=A[k])
        np.divide(S[:, 1, :k].T, S0, out=A[k + 1 : 2 * k + 1])
        np.divide(S[:, 2, k], S0, out=A[-1])
        A = A.T
        e = np.divide(bound.T, S0, out=np.empty(bound.shape[::-1])).T
    positive = S0 > 0
    np.copyto(A.T, 0.0, where=~positive)  # the rows of no weight
    counts = moments.counts
    few = np.zeros(m, dtype=bool)
    if counts is not None:
        few = counts < 2
    elif n_positive is not None:  # a number, or one per query
        few[:] = np.asarray(n_positive) < 2
    cols = column_bounds(1, k)
    zq = np.zeros(m) if offsets is None else np.asarray(offsets, dtype=np.float64)
    sol = local_solution(
        A,
        cols,
        1,
        k,
        zq[:, None],
        min_eigenvalue,
        few=few,
        max_leverage=max_leverage,
    )
    vmax = np.asarray(vmax, dtype=np.float64)
    b = _centred_bounds(A, e, k, vmax, None if offsets is None else zq)
    # Too few points: the local-constant estimate a0, whose error is d_a0.
    error = np.where(few[:, None], b.da0, b.error)
    error[~sol.ok & ~few] = np.inf
    if offsets is not None and max_leverage is not None:
        thin = ~sol.ok & ~few & positive
        if thin.any():
            error[thin] = _thin_error(
                off=b.off[thin],
                doff=b.doff[thin],
                var=b.var[thin],
                dvar=b.dvar[thin],
                da0=b.da0[thin],
                a0=b.a0[thin],
                vmax=vmax,
                target=max_leverage - 1.0,
            )
    error[sol.ok & ~sol.ridged & ~(b.low > 0)] = np.inf
    if sol.ridged.any():
        r = sol.ridged
        error[r] = _ridged_error(
            a0=b.a0[r],
            m1=b.off[r],
            c=b.c[r],
            a=sol.a[r],
            var=b.var[r],
            da0=b.da0[r],
            dm1=b.doff[r],
            dc=b.dc[r],
            dvar=b.dvar[r],
            vmax=vmax,
            target=max_leverage - 1.0,
        )
    limit = QUERY_CENTRED_TOLERANCE.value if tolerance is None else tolerance
    served = (
        positive & sol.finite & np.all(error <= limit * np.asarray(value_range), axis=1)
    )
    return QueryCentredFit(
        sol.estimate, served, few & served, error, ridged=sol.ridged & served
    )


class _CentredBounds(NamedTuple):
    """The terms of :func:`query_centred_fit`'s error bound (its docstring's
    names; ``off`` and ``doff`` the query's offset from the window's mean
    and its error) and the bound ``error`` of a solvable design."""

    a0: np.ndarray
    c: np.ndarray
    da0: np.ndarray
    dc: np.ndarray
    var: np.ndarray
    dvar: np.ndarray
    low: np.ndarray
    off: np.ndarray
    doff: np.ndarray
    error: np.ndarray


def _centred_bounds(A, e, k, vmax, zq=None):
    """The :class:`_CentredBounds` of the averages ``A`` of
    :func:`query_centred_fit` and their relative errors ``e``, of ``k``
    outputs (``vmax`` the largest ``|v|`` of each), about the queries
    themselves or (``zq``) about centres at these offsets from them."""
    a0, m1, a1, m2 = A[:, :k], A[:, k], A[:, k + 1 : 2 * k + 1], A[:, -1]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        e0, e1, e2 = e[:, 0], e[:, 1], e[:, 2]
        # Beyond a relative error of 1/2 in the weight sum, no bound.
        g = np.where(e0 < 0.5, 1.0 / (1.0 - e0), np.inf)
        abs_m1, abs_a0 = np.abs(m1), np.abs(a0)
        dm1 = (e1 + abs_m1 * e0) * g
        dm2 = (e2 + np.abs(m2) * e0) * g
        da0 = (e0[:, None] * vmax + abs_a0 * e0[:, None]) * g[:, None]
        da1 = (e1[:, None] * vmax + np.abs(a1) * e0[:, None]) * g[:, None]
        var = m2 - m1 * m1
        dvar = dm2 + 2 * abs_m1 * dm1 + dm1 * dm1
        c = a1 - m1[:, None] * a0
        abs_c = np.abs(c)
        dc = da1 + (abs_m1 * da0.T).T + abs_a0 * dm1[:, None]
        dc += dm1[:, None] * da0
        low = var - dvar
        # The query's offset from the window's mean, and its error.
        off, doff = abs_m1, dm1  # about the query itself
        if zq is not None:
            off, doff = np.abs(m1 - zq), dm1 + 2 * _EPS * np.abs(zq)
        slope = off[:, None] * abs_c / var[:, None]
        error = (
            da0
            + (doff[:, None] * abs_c + off[:, None] * dc + doff[:, None] * dc)
            / low[:, None]
        )
        error += slope * (dvar / low)[:, None]
        # The solve's own rounding: a few units of the terms it sums.
        error += 16 * _EPS * (abs_a0 + slope + vmax)
    return _CentredBounds(
        a0=a0,
        c=c,
        da0=da0,
        dc=dc,
        var=var,
        dvar=dvar,
        low=low,
        off=off,
        doff=doff,
        error=error,
    )


def _thin_error(*, off, doff, var, dvar, da0, a0, vmax, target):
    """The error bound of the local-constant estimate ``a0`` of a design
    :func:`local_solution` finds singular for rounding, about a centre near
    its window's mean (where the variance does not cancel): its variance
    is at most ``v = max(var, 0) + d_var``, so that where ``(|dz| -
    d_dz)**2 > target v`` (``dz`` the query's offset from the window's
    mean), the exact path's estimate is ``a0`` (a singular design) or the
    ridged one, whose slope term ``target c / dz`` is at most ``target
    sqrt(v) vmax / (|dz| - d_dz)`` (``|c| <= sqrt(v) vmax``), twice that
    for a ridge decided at the edge; infinite elsewhere."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        v = np.maximum(var, 0.0) + dvar
        far = off - doff
        sure = (far > 0) & (far * far > target * v)
        error = da0 + (2 * target * np.sqrt(v) / far)[:, None] * vmax
        error += 16 * _EPS * (np.abs(a0) + vmax)
    return np.where(sure[:, None], error, np.inf)


def _ridged_error(*, a0, m1, c, a, var, da0, dm1, dc, dvar, vmax, target):
    """The error bound of :func:`query_centred_fit`'s estimates whose design
    is ridged to the leverage ``target + 1``: their slope is ``a = target /
    m1`` whatever the variance (``var + rho = m1**2 / target``), so that
    ``beta = a0 - target c / m1`` errs by at most::

        d_a0 + target (d_c |m1| + |c| d_m1) / (|m1| (|m1| - d_m1))

    plus the rounding (a few units of the terms). Served only where the
    ridge is certain: the smallest distance the bounds allow, ``(|m1| -
    d_m1)**2 / (var + d_var)``, still above ``target`` (else infinite, the
    exact path decides)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        far = np.abs(m1) - dm1
        sure = (far > 0) & (far * far > target * (var + dvar))
        error = (
            da0
            + target
            * (dc * np.abs(m1)[:, None] + np.abs(c) * dm1[:, None])
            / (np.abs(m1) * far)[:, None]
        )
        error += 16 * _EPS * (np.abs(a0) + np.abs(a * c) + vmax)
    return np.where(sure[:, None], error, np.inf)
