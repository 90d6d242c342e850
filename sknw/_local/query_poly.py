"""Local polynomials of degree ``p >= 2`` in one feature from the moments
about each query (the 1-D fast backends), with a bound on their error.

The moments ``S_j = sum_l w_l K(u_l) u_l**j [v_l, 1]``, ``u = (x - q) / h``,
for ``j <= 2 p`` give the normal equations of the local fit in the powers of
``u``: ``G b = r`` with ``G_ab = m_(a+b)`` and ``r_a = a_a`` (the moments
of the weights and of the values, divided by ``S_0``). The estimate is
solved by :func:`~sknw._local.frame.local_solution`, in the same monomials
of the offsets from the query in bandwidth units as the exact path, so that
its singular test and ridge are the same; its error, from the bounds of the
moments, is bounded by the perturbation of that system (see
:func:`query_centred_poly_fit`).
"""

import numpy as np

from .frame import (
    COVARIANCE_ROUNDING,
    QUERY_CENTRED_TOLERANCE,
    QueryCentredFit,
    local_solution,
)

_EPS = float(np.finfo(np.float64).eps)

#: Designs whose smallest eigenvalue is within this factor of the singular
#: test's threshold take the exact path, which decides in its own frame.
SINGULAR_MARGIN = 4.0


def query_centred_poly_fit(
    moments,
    degree,
    vmax,
    value_range,
    min_eigenvalue,
    n_positive=None,
    max_leverage=None,
    tolerance=None,
):
    """:func:`~sknw._local.frame.query_centred_fit` for a local polynomial
    of ``degree`` ``p >= 2`` in one feature.

    With ``e_j`` the bounds of the moments relative to ``S_0`` and ``g = 1 /
    (1 - e_0)``, the normalised moments are off by at most ``dm_j = (e_j +
    |m_j| e_0) g`` and ``da_j = (e_j vmax + |a_j| e_0) g``: ``G`` by at most
    ``dG = (dm_(a+b))`` elementwise and ``r`` by ``dr = (da_a)``. The
    intercept of the solution is then within the bound of
    :func:`_solution_error` of the exact one, plus the solve's own rounding,
    a few units of ``|G^-1| (|G| |b| + |r|)``. A query is served where that
    is within ``tolerance`` (None: :data:`~sknw._local.frame.QUERY_CENTRED_TOLERANCE`;
    the binned moments' tolerance) times ``value_range``, its window
    holds a positive weight and its design is neither singular, but for too
    few points (the local-constant estimate, whose error is ``da_0``), nor
    near the singular test's threshold, nor ridged: those take the exact
    path.
    """
    S, bound = moments.sums, moments.bound
    m, k, p = S.shape[0], S.shape[2] - 1, int(degree)
    S0 = S[:, 0, k]
    positive = S0 > 0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        mom = S[:, : 2 * p + 1, k] / S0[:, None]
        avg = S[:, : p + 1, :k] / S0[:, None, None]
        e = bound[:, : 2 * p + 1] / S0[:, None]
    mom[~positive], avg[~positive], e[~positive] = 0.0, 0.0, np.inf
    upper = np.triu_indices(p)
    A = np.column_stack(
        [
            avg[:, 0],
            mom[:, 1 : p + 1],
            avg[:, 1:].reshape(m, p * k),
            mom[:, upper[0] + upper[1] + 2],
        ]
    )
    cols = np.cumsum([0, k, p, p * k, upper[0].size])
    few = np.zeros(m, dtype=bool)
    if moments.counts is not None:
        few = moments.counts < p + 1
    elif n_positive is not None:
        few[:] = np.asarray(n_positive) < p + 1
    sol = local_solution(
        A,
        cols,
        p,
        k,
        np.zeros((m, p)),
        min_eigenvalue,
        few=few,
        max_leverage=max_leverage,
        linear=1,
        basis=np.ones((1, 1)),
        degree=p,
    )
    error = _solution_error(mom, avg, e, vmax, sol, min_eigenvalue)
    error = np.where(
        few[:, None], _value_error(avg[:, 0], e[:, 0], e[:, 0], vmax), error
    )
    error[~sol.ok & ~few] = np.inf
    error[sol.ridged] = np.inf
    limit = QUERY_CENTRED_TOLERANCE.value if tolerance is None else tolerance
    served = (
        positive & sol.finite & np.all(error <= limit * np.asarray(value_range), axis=1)
    )
    return QueryCentredFit(sol.estimate, served, few & served, error)


def _value_error(a, e_j, e0, vmax):
    """Bounds of the averages ``a`` (m, k) of the values: ``da_j``."""
    with np.errstate(invalid="ignore", over="ignore"):
        g = np.where(e0 < 0.5, 1.0 / (1.0 - e0), np.inf)
        return (e_j[:, None] * np.asarray(vmax, float) + np.abs(a) * e0[:, None]) * (
            g[:, None]
        )


def _solution_error(mom, avg, e, vmax, sol, min_eigenvalue):
    """The bound of :func:`query_centred_poly_fit` on each estimate (m, k),
    infinite where it does not hold (a perturbation that may make ``G``
    singular) or the design is near the singular test's threshold.

    With ``F = |G^-1| (|dr| + |dG| |b|)`` (elementwise; the first-order
    error of every coefficient) and ``t = || |G^-1| |dG| ||`` (infinity
    norm) below 1, the intercept of the perturbed system is within ``F_0 +
    t / (1 - t) max F`` of the exact one, as ``(G + dG)^-1 = sum_i (-G^-1
    dG)^i G^-1``."""
    m, p1, k = avg.shape
    p = p1 - 1
    idx = np.add.outer(np.arange(p1), np.arange(p1))
    G = mom[:, idx]
    e0 = e[:, 0]
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        g = np.where(e0 < 0.5, 1.0 / (1.0 - e0), np.inf)
        dG = ((e + np.abs(mom) * e0[:, None]) * g[:, None])[:, idx]
        dr = np.stack(
            [_value_error(avg[:, j], e[:, j], e0, vmax) for j in range(p1)], axis=1
        )
        ok = (
            sol.ok
            & np.all(np.isfinite(G), axis=(1, 2))
            & np.all(np.isfinite(dG), axis=(1, 2))
        )
        error = np.full((m, k), np.inf)
        eig = np.full((m, p), np.nan)
        if ok.any():
            Ginv = np.linalg.inv(G[ok])
            absinv = np.abs(Ginv)
            beta = Ginv @ avg[ok]
            F = absinv @ (dr[ok] + dG[ok] @ np.abs(beta))
            t = np.max(np.sum(absinv @ dG[ok], axis=2), axis=1)
            grow = np.where(t < 0.5, t / (1.0 - t), np.inf)
            first = F[:, 0] + grow[:, None] * np.max(F, axis=1)
            # The solve's own rounding, a few units of its terms.
            scale = absinv @ (np.abs(G[ok]) @ np.abs(beta) + np.abs(avg[ok]))
            error[ok] = first + 16 * (p + 1) ** 2 * _EPS * scale[:, 0]
            eig[ok] = np.linalg.eigvalsh(sol.cov[ok])
        # The test of local_solution: min_eigenvalue times the largest, or
        # the rounding of the second moments (of u**j, j <= p).
        second = np.sum(mom[:, 2 : 2 * p + 1 : 2], axis=1)
        limit = np.maximum(
            min_eigenvalue * eig[:, -1], COVARIANCE_ROUNDING * _EPS * second
        )
        near = ~(eig[:, 0] > SINGULAR_MARGIN * limit)
    error[~np.isfinite(error)] = np.inf
    error[ok & near] = np.inf
    return error
