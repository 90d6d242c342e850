"""The synthetic data of the d2l chapter on attention pooling."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from sknw.datasets import d2l_target, make_d2l_sine


def test_shapes_and_dtypes():
    X, y, X_val, y_val = make_d2l_sine(random_state=0)
    assert X.shape == (40, 1) and y.shape == (40,)
    assert X_val.shape == (50, 1) and y_val.shape == (50,)
    for a in (X, y, X_val, y_val):
        assert a.dtype == np.float64


@pytest.mark.parametrize("n_train", [1, 7, 500])
def test_n_train(n_train):
    X, y, X_val, y_val = make_d2l_sine(n_train, random_state=1)
    assert X.shape == (n_train, 1) and y.shape == (n_train,)
    assert X_val.shape == (50, 1) and y_val.shape == (50,)


def test_inputs_sorted_in_range():
    X, _, _, _ = make_d2l_sine(n_train=2000, random_state=0)
    x = X[:, 0]
    assert np.all(np.diff(x) >= 0)
    assert x.min() >= 0.0 and x.max() < 5.0
    # Uniform on [0, 5): both ends of the interval are reached.
    assert x.min() < 0.05 and x.max() > 4.95
    assert abs(x.mean() - 2.5) < 0.1


def test_validation_grid():
    _, _, X_val, y_val = make_d2l_sine(random_state=0)
    grid = np.array([i / 10 for i in range(50)])
    assert_allclose(X_val[:, 0], grid, rtol=0, atol=1e-12)
    assert X_val[0, 0] == 0.0
    assert_allclose(X_val[-1, 0], 4.9)
    assert_allclose(y_val, 2 * np.sin(grid) + grid, rtol=1e-12, atol=1e-14)


def test_d2l_target():
    x = np.array([0.0, np.pi / 2, np.pi, 4.0])
    expected = [0.0, 2.0 + np.pi / 2, np.pi, 2 * np.sin(4.0) + 4.0]
    assert_allclose(d2l_target(x), expected, atol=1e-14)
    assert_allclose(d2l_target([[1.0]]), [[2 * np.sin(1.0) + 1.0]])


@pytest.mark.parametrize("noise", [0.5, 1.0, 2.0])
def test_noise_level(noise):
    X, y, _, _ = make_d2l_sine(n_train=20000, noise=noise, random_state=0)
    x = X[:, 0]
    residual = y - (2 * np.sin(x) + x)
    # The standard error of a sample std of 20000 normals is about 0.5 %.
    assert_allclose(residual.std(), noise, rtol=0.03)
    assert abs(residual.mean()) < 4 * noise / np.sqrt(20000)


def test_noise_free():
    X, y, _, _ = make_d2l_sine(noise=0.0, random_state=0)
    assert_allclose(y, 2 * np.sin(X[:, 0]) + X[:, 0], rtol=1e-12, atol=1e-14)


def test_reproducible():
    first = make_d2l_sine(random_state=42)
    second = make_d2l_sine(random_state=42)
    for a, b in zip(first, second, strict=True):
        assert_array_equal(a, b)
    third = make_d2l_sine(random_state=np.random.RandomState(42))
    for a, b in zip(first, third, strict=True):
        assert_array_equal(a, b)


def test_different_seeds_differ():
    X0, y0, _, _ = make_d2l_sine(random_state=0)
    X1, y1, _, _ = make_d2l_sine(random_state=1)
    assert not np.array_equal(X0, X1)
    assert not np.array_equal(y0, y1)
