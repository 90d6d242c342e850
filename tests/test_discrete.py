"""The kernels of discrete features against their formulas."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

from sknw._features.discrete import CATEGORICAL_KERNELS, ORDERED_KERNELS, default_lambda

T = np.array([0.0, 1.0, 2.0, 3.0])


@pytest.mark.parametrize("lam", [0.0, 0.2, 0.5])
def test_aitchison_aitken(lam):
    k = CATEGORICAL_KERNELS["aitchison_aitken"]
    got = np.exp(k.log_factor(np.array([0.0, 1.0]), lam, 4))
    assert_allclose(got, [1 - lam, lam / 3], rtol=1e-15)
    assert k.max_lambda(4) == 0.75 and k.accepted_lambda(4) == 1.0


@pytest.mark.parametrize("lam", [0.0, 0.3, 1.0])
def test_li_racine_unordered(lam):
    k = CATEGORICAL_KERNELS["li_racine"]
    got = np.exp(k.log_factor(np.array([0.0, 1.0]), lam, 3))
    assert_allclose(got, [1.0, lam], rtol=1e-15)


@pytest.mark.parametrize("lam", [0.0, 0.3, 0.9])
def test_wang_ryzin(lam):
    k = ORDERED_KERNELS["wang_ryzin"]
    expected = np.where(T == 0, 1 - lam, 0.5 * (1 - lam) * lam**T)
    assert_allclose(np.exp(k.log_factor(T, lam, 5)), expected, rtol=1e-14)
    with pytest.raises(ValueError, match=r"outside \[0, 1\)"):
        k.check_lambda(1.0, 5, 2)


@pytest.mark.parametrize("lam", [0.0, 0.3, 1.0])
def test_li_racine_ordered(lam):
    k = ORDERED_KERNELS["li_racine"]
    assert_allclose(np.exp(k.log_factor(T, lam, 5)), lam**T, rtol=1e-14)


def test_largest_lambda_weighs_every_level_the_same():
    k = CATEGORICAL_KERNELS["aitchison_aitken"]
    for c in (2, 3, 7):
        f = np.exp(k.log_factor(np.array([0.0, 1.0]), k.max_lambda(c), c))
        assert_allclose(f[0], f[1], rtol=1e-15)


def test_default_lambda_rate_and_cap():
    k = CATEGORICAL_KERNELS["li_racine"]
    assert default_lambda(k, 3, 1) == 0.5
    assert_allclose(default_lambda(k, 3, 1000), 1000**-0.4)
    assert default_lambda(k, 3, np.inf) == 0.0
