"""The terms of the fast Gauss transform's expansions and their bounds."""

import math

import numpy as np
import pytest
from scipy.special import eval_hermitenorm

from sknw._sums._fgt_terms import (
    N_LOCAL,
    N_TERMS,
    REACH,
    SKIPPED,
    TERMS_TRUNCATION,
    TRUNCATION,
    _local_bounds,
    _power_terms,
    _taylor_truncation,
    _truncation,
)


def test_documented_constants():
    # Truncated terms below 1e-14 of a box's weight, boxes beyond the reach
    # below 1e-30 of theirs (the figures the docstrings give); the fewest
    # terms that reach it.
    assert TERMS_TRUNCATION == 1e-14
    assert (N_TERMS, N_LOCAL) == (19, 20)
    assert TRUNCATION <= 1e-14 < _truncation(N_TERMS - 1)
    assert _local_bounds(0)[0] <= 1e-14 < _taylor_truncation(N_LOCAL - 1)
    assert SKIPPED <= 1e-30
    assert REACH == 12.5


@pytest.mark.parametrize("j", [0, 1, 2, 3, 4])
def test_power_terms_expand_the_powers(j):
    """``(-y)**j e^{-y**2/2}`` as the sum of the Hermite functions of
    :func:`_power_terms`."""
    y = np.linspace(-6, 6, 101)
    got = sum(c * eval_hermitenorm(r, y) for r, c in _power_terms(j))
    assert np.allclose(got, (-y) ** j, rtol=1e-12, atol=1e-12)


def test_truncation_bounds_the_truncated_terms():
    """Cramér's bound of the Hermite terms from ``N_TERMS`` on, at the
    box's radius, holds for the computed terms (times ``e^{d**2/4}``)."""
    d = np.linspace(-12, 12, 241)
    u = 0.5
    terms = sum(
        u**k / math.factorial(k) * np.abs(eval_hermitenorm(k, d))
        for k in range(N_TERMS, N_TERMS + 40)
    )
    assert np.all(terms * np.exp(-0.5 * d * d) <= TRUNCATION * np.exp(-0.25 * d * d))
