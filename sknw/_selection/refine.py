"""The refinement of a grid's best bandwidth by a continuous search of the
out-of-sample score (the CV estimators' ``refine=True``)."""

import numpy as np
from scipy.optimize import minimize, minimize_scalar

#: Refinement searches within this factor of the grid's best bandwidth.
REFINE_RANGE = 1e6


def refine_bandwidth(evaluate, start, start_score, grid=()):
    """Maximise ``evaluate(bandwidth)`` over log-bandwidths, from ``start``.

    One coordinate (a scalar bandwidth, or one feature): Brent's bounded
    search (scipy) between the grid bandwidths (``grid``) nearest ``start``
    on either side, which bracket the grid's best, or a factor
    :data:`REFINE_RANGE` where there is none. Several features: a bounded
    Nelder--Mead search over the logarithms of the per-feature bandwidths,
    within a factor :data:`REFINE_RANGE` of ``start``, after which each
    feature's bandwidth is tried at the upper bound, where a feature that does
    not matter is effectively ignored. A NaN score counts as the worst. The
    result is positive by construction, and is ``start`` itself unless a
    strictly better score was found.

    Returns
    -------
    bandwidth : float or ndarray
    score : float
    """
    x0 = np.log(np.atleast_1d(np.asarray(start, dtype=np.float64)))
    worst = np.finfo(np.float64).max

    def objective(theta):
        bw = np.exp(np.atleast_1d(theta))
        score = evaluate(bw if np.ndim(start) else float(bw[0]))
        return worst if np.isnan(score) else -score

    span = np.log(REFINE_RANGE)
    if x0.size == 1:
        logs = np.array([np.log(np.atleast_1d(b)[0]) for b in grid])
        below, above = logs[logs < x0[0]], logs[logs > x0[0]]
        lo = below.max() if below.size else x0[0] - span
        hi = above.min() if above.size else x0[0] + span
        # The worst score's parabola steps overflow to inf, which the method
        # takes as no step (a golden-section step instead).
        with np.errstate(over="ignore", invalid="ignore"):
            result = minimize_scalar(
                objective, bounds=(lo, hi), method="bounded", options={"xatol": 1e-4}
            )
        theta, value = np.atleast_1d(result.x).copy(), float(result.fun)
    else:
        result = minimize(
            objective,
            x0,
            method="Nelder-Mead",
            bounds=[(x - span, x + span) for x in x0],
            # Converged when the simplex spans 1 % in bandwidth and its scores
            # agree to 1e-10: the score is flat near its optimum.
            options={
                "xatol": 1e-2,
                "fatol": 1e-10 * abs(start_score) if np.isfinite(start_score) else 0.0,
                "maxfev": 200 * x0.size,
            },
        )
        theta, value = result.x.copy(), float(result.fun)
        # A feature that does not matter wants an unbounded bandwidth, where
        # the score is flat: try each at the upper bound.
        for i in range(theta.size):
            trial = theta.copy()
            trial[i] = x0[i] + span
            trial_value = objective(trial)
            if trial_value < value:
                theta, value = trial, trial_value
    score = -value
    if not score > start_score:
        return start, start_score
    bw = np.exp(theta)
    return (bw if np.ndim(start) else float(bw[0])), score


#: Parabolic steps of :func:`polish_size`.
SIZE_POLISH_STEPS = 2

#: :func:`polish_size` stops where a step would move the logarithm of the
#: size by less than this (0.1 %).
SIZE_POLISH_TOLERANCE = 1e-3


def polish_size(score_of, logs, scores, steps=SIZE_POLISH_STEPS):
    """Successive parabolic interpolation of a score over the logarithm of
    the bandwidth's size, from a grid's local maximum and its neighbours.

    ``logs`` are three increasing log-sizes whose middle one scores at least
    as well as the others (``scores``); ``score_of(log)`` scores another
    (NaN counts as the worst). See :func:`parabolic_steps`, to
    :data:`SIZE_POLISH_TOLERANCE`.

    Returns
    -------
    log : float
        The best log-size seen (the middle one unless another scored
        strictly better).
    score : float
    """
    points = list(zip(logs, scores, strict=True))
    return parabolic_steps(score_of, points, logs[1], steps, SIZE_POLISH_TOLERANCE)


def parabolic_steps(score_of, points, start, steps, tolerance):
    """Successive parabolic interpolation from scored ``points`` (``(x,
    score)``, NaN scores the worst), from the best of them (the one at
    ``start`` on ties, else the leftmost). Each step scores
    (``score_of(x)``) the vertex of the parabola through the best point seen
    and its neighbours on either side (the three nearest points where it is
    an end), at most ``steps`` times, and stops where that parabola has no
    maximum (a flat or convex score), or its vertex is within ``tolerance``
    of a point already scored or beyond the three points. Returns the best
    ``(x, score)`` seen."""
    points = sorted((float(x), -np.inf if np.isnan(f) else float(f)) for x, f in points)
    best = max(points, key=lambda p: (p[1], p[0] == float(start)))
    for _ in range(steps):
        if len(points) < 3:
            break
        # The best and its neighbours (the three nearest where it is an end).
        i = min(max(points.index(best), 1), len(points) - 2)
        (a, fa), (b, fb), (c, fc) = points[i - 1 : i + 2]
        den = (b - a) * (fb - fc) - (b - c) * (fb - fa)
        # A parabola open downwards (its vertex a maximum), or no step.
        curvature = (fc - fb) / (c - b) - (fb - fa) / (b - a)
        if not (np.isfinite(den) and den != 0.0 and curvature < 0.0):
            break
        t = b - 0.5 * ((b - a) ** 2 * (fb - fc) - (b - c) ** 2 * (fb - fa)) / den
        near = min(abs(t - a), abs(t - b), abs(t - c)) < tolerance
        if not a < t < c or near:
            break
        score = score_of(t)
        trial = (t, -np.inf if np.isnan(score) else float(score))
        points = sorted([*points, trial])
        if trial[1] > best[1]:
            best = trial
    return best
