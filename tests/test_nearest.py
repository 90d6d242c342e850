"""Nearest-point sums and masks, the limit of a vanishing bandwidth."""

import numpy as np
import pytest
from _core_reference import (
    N_LARGE,
    RTOL,
    _training_tiles_of_4096,  # noqa: F401  (autouse)
    make_data,
)
from numpy.testing import assert_allclose, assert_array_equal
from scipy.spatial.distance import cdist

from sknw._sums import TILE_ELEMENTS, empty_window_estimates, nearest_mask, nearest_sums


def brute_nearest(Q, X, V, w=None, metric="euclidean", metric_params=None):
    D = cdist(Q, X, metric, **(metric_params or {}))
    w = np.ones(X.shape[0]) if w is None else w
    D[:, w == 0] = np.inf
    mask = (D == D.min(axis=1, keepdims=True)) * w
    return mask @ V, mask.sum(axis=1), mask


def tie_data():
    """Training points on a grid, queries exactly halfway between some of them."""
    X = np.array([[0.0], [1.0], [2.0], [3.0], [3.0], [5.0]])
    V = np.array([[1.0, -1.0], [2.0, 0.5], [4.0, 8.0], [8.0, 1.0], [16.0, 2.0]])
    V = np.vstack([V, [[32.0, 4.0]]])
    w = np.array([1.0, 2.0, 0.5, 3.0, 1.0, 4.0])
    Q = np.array([[0.5], [2.5], [4.0], [-7.0], [1.25], [3.0]])
    return Q, X, V, w


@pytest.mark.parametrize("tile_elements", [1, 2, 7, TILE_ELEMENTS])
def test_nearest_sums_with_ties(tile_elements):
    Q, X, V, w = tie_data()
    S, den = nearest_sums(
        Q,
        X,
        V,
        metric="euclidean",
        metric_params=None,
        sample_weight=w,
        tile_elements=tile_elements,
    )
    # 0.5: points 0 and 1; 2.5: points 2, 3 and 4; 4.0: points 3, 4 and 5;
    # -7: point 0; 1.25: point 1; 3.0: points 3 and 4 (duplicates).
    expected_den = [1 + 2, 0.5 + 3 + 1, 3 + 1 + 4, 1, 2, 3 + 1]
    assert_allclose(den, expected_den, rtol=RTOL)
    expected_S = [
        1 * V[0] + 2 * V[1],
        0.5 * V[2] + 3 * V[3] + 1 * V[4],
        3 * V[3] + 1 * V[4] + 4 * V[5],
        V[0],
        2 * V[1],
        3 * V[3] + 1 * V[4],
    ]
    assert_allclose(S, expected_S, rtol=RTOL)
    S_ref, den_ref, _ = brute_nearest(Q, X, V, w)
    assert_allclose(S, S_ref, rtol=RTOL)
    assert_allclose(den, den_ref, rtol=RTOL)


def test_nearest_sums_without_weights():
    Q, X, V, _ = tie_data()
    S, den = nearest_sums(Q, X, V, metric="euclidean", metric_params=None)
    assert_array_equal(den, [2, 3, 3, 1, 1, 2])
    S_ref, _, _ = brute_nearest(Q, X, V)
    assert_allclose(S, S_ref, rtol=RTOL)


def test_nearest_sums_skip_zero_weights():
    Q, X, V, w = tie_data()
    w[1] = 0.0  # the only nearest point of query 1.25, one of two of query 0.5
    w[5] = 0.0
    S, den = nearest_sums(
        Q, X, V, metric="euclidean", metric_params=None, sample_weight=w
    )
    S_ref, den_ref, _ = brute_nearest(Q, X, V, w)
    assert_allclose(S, S_ref, rtol=RTOL)
    assert_allclose(den, den_ref, rtol=RTOL)
    # 1.25 falls back to point 2 (distance 0.75 < 1.25 to point 0).
    assert_allclose(S[4], 0.5 * V[2], rtol=RTOL)
    assert den[4] == 0.5
    assert_allclose(S[0], V[0], rtol=RTOL)


@pytest.mark.parametrize("tile_elements", [1, 5, TILE_ELEMENTS])
def test_nearest_sums_ties_across_training_tiles(tile_elements):
    rng = np.random.default_rng(10)
    X = rng.uniform(10.0, 20.0, size=(N_LARGE, 2))
    X[17] = [1.0, 0.0]
    X[4200] = [-1.0, 0.0]
    X[4300] = [0.0, 1.0]
    X[4301] = [0.0, 3.0]  # farther, after the ties
    V = rng.normal(size=(N_LARGE, 3))
    w = rng.uniform(0.5, 2.0, size=N_LARGE)
    Q = np.array([[0.0, 0.0], [0.0, 2.9], [1.0, 0.1]])
    S, den = nearest_sums(
        Q,
        X,
        V,
        metric="euclidean",
        metric_params=None,
        sample_weight=w,
        tile_elements=tile_elements,
    )
    assert_allclose(den[0], w[17] + w[4200] + w[4300], rtol=RTOL)
    assert_allclose(
        S[0], w[17] * V[17] + w[4200] * V[4200] + w[4300] * V[4300], rtol=RTOL
    )
    assert_allclose(S[1] / den[1], V[4301], rtol=RTOL)
    assert_allclose(S[2] / den[2], V[17], rtol=RTOL)


def test_nearest_sums_other_metric():
    Q, X, V, w = make_data(11, 20, 50, 3)
    S, den = nearest_sums(
        Q, X, V, metric="chebyshev", metric_params=None, sample_weight=w
    )
    S_ref, den_ref, _ = brute_nearest(Q, X, V, w, metric="chebyshev")
    assert_allclose(S, S_ref, rtol=RTOL)
    assert_allclose(den, den_ref, rtol=RTOL)


def test_nearest_mask_with_ties_and_weights():
    Q, X, _, w = tie_data()
    D = cdist(Q, X)
    mask = nearest_mask(D, w)
    _, _, expected = brute_nearest(Q, X, np.eye(X.shape[0]), w)
    assert_array_equal(mask, expected)
    assert_array_equal(mask[1], [0, 0, 0.5, 3, 1, 0])
    assert_array_equal(nearest_mask(D)[1], [0, 0, 1, 1, 1, 0])


def test_nearest_mask_skips_zero_weights_and_keeps_distances():
    Q, X, _, w = tie_data()
    w[[3, 4]] = 0.0
    D = cdist(Q, X)
    D_before = D.copy()
    mask = nearest_mask(D, w)
    assert_array_equal(D, D_before)
    # Query 3.0 sits on two zero-weight points: its nearest are 2 and 5.
    assert_array_equal(mask[5], [0, 0, 0.5, 0, 0, 0])
    assert np.all(mask[:, w == 0] == 0)
    assert np.all(mask.sum(axis=1) > 0)


@pytest.mark.parametrize("policy", ["nearest", "mean"])
@pytest.mark.parametrize("kept", [False, True])
def test_empty_window_estimates_of_some_training_points_leave_them_out(policy, kept):
    # Queries that are training points in any order (self_index) equal the
    # same rows of the estimates of all of them (self-exclusion by position).
    rng = np.random.default_rng(7)
    X = np.round(rng.uniform(0, 3, (60, 2)), 1)  # ties
    V = rng.normal(size=(60, 2))
    w = rng.integers(1, 4, 60).astype(float)
    self_weight = w - 1.0 if kept else None
    params = {"scale": None, "metric": "euclidean", "metric_params": None}
    every = empty_window_estimates(
        policy, X, X, V, w, exclude_self=True, self_weight=self_weight, **params
    )
    rows = rng.permutation(60)[:25]
    some = empty_window_estimates(
        policy,
        X[rows],
        X,
        V,
        w,
        exclude_self=True,
        self_weight=self_weight,
        self_index=rows,
        **params,
    )
    assert_allclose(some, every[rows], rtol=1e-13, equal_nan=True)
    # And the definition: the nearest other points (or all others), with the
    # unit of weight left out.
    D = cdist(X, X)
    W = np.broadcast_to(w, D.shape).copy()
    np.fill_diagonal(W, w - 1.0 if kept else 0.0)
    D[W == 0] = np.inf
    for i in rows[:5]:
        near = D[i] == D[i].min() if policy == "nearest" else W[i] > 0
        ref = np.average(V[near], axis=0, weights=W[i][near])
        assert_allclose(some[list(rows).index(i)], ref, rtol=1e-12)
