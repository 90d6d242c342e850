"""The terms of the fast Gauss transform's expansions and the bounds of
their errors (see :mod:`sknw._sums._fgt`, whose module docstring derives
them): the boxes' radius and reach, the numbers of Hermite and Taylor terms,
and the bounds of the truncated terms and of the rounding, per unit of a
box's weight."""

import functools
import math

import numpy as np

from ._base import _EPS64

#: Half the width of a box, in standard deviations of the Gaussian (slightly
#: above 1/2, for the rounding of the points' offsets from their box centre).
RADIUS = 0.5 + 2.0**-30
#: Cramér's constant: :math:`|He_k(x)| e^{-x^2/4} \le K \sqrt{k!}`.
CRAMER = 1.0865
#: Boxes whose centre is farther than this from a query (in standard
#: deviations) are left out of its sums: their terms are below
#: ``exp(-(REACH - RADIUS)**2 / 2)`` (5e-32) of their weight.
REACH = 12.5


def _truncation(p, rho=RADIUS):
    """Bound of the terms from ``p`` on, per unit weight, times ``e^{d^2/4}``."""
    return (
        CRAMER
        * rho**p
        / math.sqrt(math.factorial(p))
        / (1.0 - rho / math.sqrt(p + 1.0))
    )


#: The expansions keep the fewest terms whose truncated ones are at most this,
#: per unit of a box's weight (times ``e^{-d^2/4}``): a hundredth of the
#: error checked per query (:data:`~sknw._sums._fgt.TOLERANCE`, of its weight
#: sum), so that the queries whose sums are a small share of their boxes'
#: weight (one-sided windows, a point left out of its own sums) still pass.
#: ``1e-16`` (21 and 23 terms) cost a search in one feature 8 to 14 % more,
#: at the same choices and scores.
TERMS_TRUNCATION = 1e-14


def _fewest_terms(truncation, target=TERMS_TRUNCATION):
    """The fewest terms (from 2) whose ``truncation(n)`` is at most ``target``."""
    n = 2
    while truncation(n) > target:
        n += 1
    return n


#: Terms of the Hermite expansion (19: truncated terms below 1e-14).
N_TERMS = _fewest_terms(_truncation)
#: Bound of the truncated terms, per unit of weight, times ``e^{d^2/4}``.
TRUNCATION = _truncation(N_TERMS)
#: Rounding of the expansion, relative to the sum of its terms' magnitudes:
#: ``8 N_TERMS`` machine epsilons (3.4e-14), over 60 times the largest error
#: measured for ``|d| <= REACH`` and ``|u| <= 1/2`` (5 units of roundoff; the
#: Hermite functions alone, by their recurrence, within 65 units of roundoff
#: of their envelope).
ROUNDING = 8.0 * N_TERMS * 2.0 * _EPS64
#: Weight of the boxes beyond the reach, per unit of weight.
SKIPPED = math.exp(-0.5 * (REACH - RADIUS) ** 2)


def _power_terms(j):
    """``(r, c)`` with ``(-y)**j e^{-y**2/2} = sum c He_r(y) e^{-y**2/2}``
    in the orders ``r`` of the derivative: ``y**j = sum_m j! / (m! (j - 2m)!
    2**m) He_{j - 2m}(y)``, each ``He_r e^{-y^2/2}`` of ``y = d - u`` times
    ``(-1)**r`` a derivative in ``d``, so that the sum over a box's moments
    ``A_k`` of ``He_{k + r}(d) e^{-d^2/2}`` gives the power's sum."""
    return [
        (
            j - 2 * i,
            (-1.0) ** j
            * math.factorial(j)
            / (math.factorial(i) * math.factorial(j - 2 * i) * 2.0**i),
        )
        for i in range(j // 2 + 1)
    ]


@functools.cache
def _power_bounds(j, rho=RADIUS):
    """Bounds, per unit weight and times ``e^{d^2/4}``, of the truncated
    terms and of the magnitudes of the terms (the rounding's scale) of the
    power ``j``: by Cramér's inequality, each ``|He_r(d)| e^{-d^2/2}`` is at
    most ``CRAMER sqrt(r!) e^{-d^2/4}``."""

    def size(k):
        return sum(
            abs(c) * math.sqrt(math.factorial(k + r)) for r, c in _power_terms(j)
        )

    def term(k):
        return CRAMER * rho**k / math.factorial(k) * size(k)

    truncated = sum(term(k) for k in range(N_TERMS, N_TERMS + 60))
    total = sum(term(k) for k in range(N_TERMS + 60))
    return truncated, total


def _cramer_sum(j, ells, rho=RADIUS):
    """``CRAMER`` times the sum over ``k < N_TERMS`` and ``l`` in ``ells`` of
    ``rho**(k + l) / (k! l!)`` times the Cramér bounds ``sqrt((k + r + l)!)``
    of the Hermite functions of the power ``j`` (per unit weight, times
    ``e^{x^2/4}``): the size of the terms ``(k, l)`` of a box's translated
    expansion."""
    terms = _power_terms(j)
    total = 0.0
    for k in range(N_TERMS):
        for ell in ells:
            size = sum(
                abs(c) * math.sqrt(math.factorial(k + r + ell)) for r, c in terms
            )
            total += rho ** (k + ell) / (math.factorial(k) * math.factorial(ell)) * size
    return CRAMER * total


def _taylor_truncation(n, rho=RADIUS, j=0):
    """Bound, per unit weight and times ``e^{x^2/4}``, of the Taylor terms
    from ``n`` on of a box's translated expansion (power ``j``)."""
    return _cramer_sum(j, range(n, n + 80), rho)


#: Terms of the local (Taylor) expansion of a box's sums about a query box.
N_LOCAL = _fewest_terms(_taylor_truncation)
#: Rounding of the local expansion, in units of roundoff of its terms'
#: magnitudes (by Cramér's inequality) times ``|x| + 2``: over 60 times the
#: largest error measured (1.5 units, over boxes of 500 to 20000 points,
#: bandwidths 0.003 to 2 of data spans 1 to 1000, powers 0 to 2, by Horner's
#: rule). The products per box (:func:`_box_products`, and those of the
#: stacked passes of :mod:`sknw._sums._fgt_grid`, whose powers hold the
#: ``1 / l!``) err by at most ``2 N_LOCAL`` units of the same magnitudes: the
#: powers of the offset, each within ``N_LOCAL`` units, and their sum of
#: ``N_LOCAL`` products.
LOCAL_ROUNDING = 100.0
#: ``(-1)**l / l!``: the Taylor coefficients of ``He_m(x + delta)
#: e^{-(x + delta)**2 / 2}`` in powers of ``delta``, times ``He_{m+l}``.
_TAYLOR_SIGNS = np.array(
    [(-1.0) ** ell / math.factorial(ell) for ell in range(N_LOCAL)],
    dtype=np.float64,
)


@functools.cache
def _local_bounds(j, rho=RADIUS):
    """Bounds, per unit weight and times ``e^{x^2/4}``, of the Taylor terms
    beyond :data:`N_LOCAL` and of the magnitudes of all the terms (the
    rounding's scale) of a translated expansion of power ``j`` (Cramér)."""
    return _taylor_truncation(N_LOCAL, rho, j), _cramer_sum(j, range(N_LOCAL), rho)
