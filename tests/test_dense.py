"""The tiled loop ``kernel_sums`` and pairwise distances against brute force."""

import numpy as np
import pytest
from _core_reference import (
    N_LARGE,
    RTOL,
    TILES,
    _training_tiles_of_4096,  # noqa: F401  (autouse)
    assert_sums_close,
    brute_sums,
    make_data,
)
from numpy.testing import assert_allclose, assert_array_equal
from scipy.spatial.distance import cdist

from sknw._sums import (
    TILE_ELEMENTS,
    Head,
    _base,
    _gaussian,
    kernel_sums,
    pairwise_distances,
)
from sknw.kernels import (
    Boxcar,
    Epanechnikov,
    Gaussian,
    Laplacian,
    Silverman,
    Triangular,
    get_kernel,
)

HEADS = [
    Head(Gaussian(), 0.7),
    Head(Epanechnikov(), 1.5),
    Head(Laplacian(), 0.4),
    Head(Silverman(), 0.6),
    Head(Triangular(), 2.0),
    Head(Boxcar(), 1.8),
]


@pytest.mark.parametrize("d", [1, 3])
@pytest.mark.parametrize("head", HEADS, ids=lambda h: type(h.kernel).__name__)
def test_kernel_sums_match_brute_force(head, d):
    Q, X, V, w = make_data(0, 23, 41, d)
    result = kernel_sums(Q, X, V, [head], sample_weight=w)
    assert len(result) == 1
    assert_sums_close(result[0], brute_sums(Q, X, V, head, w=w))


@pytest.mark.parametrize(
    "metric, params",
    [
        ("cityblock", None),
        ("chebyshev", None),
        ("minkowski", {"p": 3}),
        ("seuclidean", {"V": np.array([0.5, 2.0, 1.0])}),
    ],
)
def test_kernel_sums_other_metrics(metric, params):
    Q, X, V, w = make_data(1, 17, 30, 3)
    head = Head(Gaussian(), 1.1)
    ((S, den, M),) = kernel_sums(
        Q, X, V, [head], metric=metric, metric_params=params, sample_weight=w
    )
    assert_sums_close((S, den, M), brute_sums(Q, X, V, head, metric, params, w))


@pytest.mark.parametrize("d", [1, 3])
def test_several_heads_equal_separate_calls(d):
    Q, X, V, w = make_data(2, 19, 37, d)
    together = kernel_sums(Q, X, V, HEADS, sample_weight=w)
    assert len(together) == len(HEADS)
    for head, (S, den, M) in zip(HEADS, together, strict=True):
        single = kernel_sums(Q, X, V, [head], sample_weight=w)[0]
        assert_sums_close(single, (S, den, M))
        assert_sums_close((S, den, M), brute_sums(Q, X, V, head, w=w))


@pytest.mark.parametrize("tile_elements", TILES)
@pytest.mark.parametrize("d", [1, 3])
def test_kernel_sums_independent_of_tiles(tile_elements, d):
    Q, X, V, w = make_data(4, 13, N_LARGE, d)
    heads = [Head(Gaussian(), 0.3), Head(Epanechnikov(), 0.5), Head(Silverman(), 0.4)]
    default = kernel_sums(Q, X, V, heads, sample_weight=w)
    tiled = kernel_sums(Q, X, V, heads, sample_weight=w, tile_elements=tile_elements)
    for head, a, b in zip(heads, default, tiled, strict=True):
        assert_sums_close(b, a)
        assert_sums_close(b, brute_sums(Q, X, V, head, w=w))


def test_shift_is_max_log_kernel_across_training_tiles():
    # The largest log weight of query 0 is in the second training tile.
    Q, X, V, w = make_data(5, 3, N_LARGE, 2)
    X[:4096] += 50.0
    head = Head(Gaussian(), 1.0)
    ((S, den, M),) = kernel_sums(
        Q, X, V, [head], sample_weight=w, tile_elements=8, strategy="tiled"
    )
    D = cdist(Q, X)
    assert_allclose(M, np.max(-0.5 * D**2, axis=1), rtol=RTOL)
    assert_sums_close((S, den, M), brute_sums(Q, X, V, head, w=w))


def brute_exclude_self(X, V, head, w, rows):
    """Sums for each row ``i`` with row ``i`` removed from the training set."""
    out_S, out_den, out_M = [], [], []
    for i in rows:
        keep = np.arange(X.shape[0]) != i
        S, den, M = brute_sums(X[i : i + 1], X[keep], V[keep], head, w=w[keep])
        out_S.append(S[0])
        out_den.append(den[0])
        out_M.append(M[0])
    return np.array(out_S), np.array(out_den), np.array(out_M)


@pytest.mark.parametrize("tile_elements", TILES)
@pytest.mark.parametrize("head", HEADS[:4], ids=lambda h: type(h.kernel).__name__)
def test_exclude_self_is_leave_one_out(head, tile_elements):
    _, X, V, w = make_data(6, 1, 45, 2)
    ((S, den, M),) = kernel_sums(
        X, X, V, [head], sample_weight=w, exclude_self=True, tile_elements=tile_elements
    )
    rows = np.arange(X.shape[0])
    assert_sums_close((S, den, M), brute_exclude_self(X, V, head, w, rows))


@pytest.mark.parametrize("tile_elements", [1, 3 * 4096, 5 * 4096])
def test_exclude_self_at_tile_boundaries(tile_elements):
    # Query tiles of 1, 3 or 5 rows; training tiles of 4096 rows: rows around
    # 4096 have their own point at the edge of (or across) a tile.
    _, X, V, w = make_data(7, 1, N_LARGE, 1)
    head = Head(Gaussian(), 0.05)
    ((S, den, M),) = kernel_sums(
        X, X, V, [head], sample_weight=w, exclude_self=True, tile_elements=tile_elements
    )
    rows = np.r_[0, 1, 2, 4093:4100, N_LARGE - 2, N_LARGE - 1]
    assert_sums_close(
        (S[rows], den[rows], M[rows]), brute_exclude_self(X, V, head, w, rows)
    )


def test_exclude_self_removes_exact_duplicate_only_once():
    X = np.array([[0.0], [0.0], [3.0]])
    V = np.array([[1.0], [5.0], [7.0]])
    head = Head(Boxcar(), 1.0)
    ((S, den, M),) = kernel_sums(X, X, V, [head], exclude_self=True)
    # Row 0 sees row 1 only, row 1 sees row 0 only, row 2 sees nothing.
    assert_array_equal(den, [1.0, 1.0, 0.0])
    assert_array_equal(S[:, 0], [5.0, 1.0, 0.0])
    assert_array_equal(M, [0.0, 0.0, -np.inf])


@pytest.mark.parametrize("tile_elements", [1, 7, TILE_ELEMENTS])
def test_zero_weights_are_left_out(tile_elements):
    Q, X, V, w = make_data(8, 15, 40, 3)
    w[::3] = 0.0
    head = Head(Laplacian(), 0.8)
    ((S, den, M),) = kernel_sums(
        Q, X, V, [head], sample_weight=w, tile_elements=tile_elements
    )
    keep = w > 0
    ((S_k, den_k, M_k),) = kernel_sums(
        Q, X[keep], V[keep], [head], sample_weight=w[keep]
    )
    assert_allclose(M, M_k, rtol=RTOL)
    assert_allclose(den, den_k, rtol=RTOL)
    assert_allclose(S, S_k, rtol=RTOL)
    assert_sums_close((S, den, M), brute_sums(Q, X, V, head, w=w))


def test_shift_equals_max_log_kernel():
    Q, X, V, w = make_data(9, 10, 30, 3)
    for head in HEADS:
        # The shifted paths (the GEMM path of a single Gaussian head may shift
        # by a bound from probes: see test_probe_shifted_gemm_path in
        # test_gaussian.py).
        ((_, _, M),) = kernel_sums(Q, X, V, [head], sample_weight=w, strategy="tiled")
        K = np.abs(head.kernel(cdist(Q, X) / head.divisor))
        with np.errstate(divide="ignore"):
            expected = np.max(np.log(K), axis=1)
        assert_allclose(M, expected, rtol=RTOL, atol=1e-13)


def test_largest_shifted_term_is_one_at_tiny_bandwidth():
    # Unshifted weights underflow to 0; the shifted ones keep the nearest point.
    Q = np.array([[0.1], [2.7]])
    X = np.array([[0.0], [1.0], [3.0]])
    V = np.array([[1.0], [2.0], [3.0]])
    ((S, den, M),) = kernel_sums(Q, X, V, [Head(Gaussian(), 1e-3)])
    assert_allclose(den, [1.0, 1.0], rtol=RTOL)
    assert_allclose(S[:, 0] / den, [1.0, 3.0], rtol=RTOL)
    assert_allclose(M, [-0.5 * (0.1 / 1e-3) ** 2, -0.5 * (0.3 / 1e-3) ** 2], rtol=1e-9)


@pytest.mark.parametrize("tile_elements", [1, TILE_ELEMENTS])
@pytest.mark.parametrize("kernel", [Epanechnikov(), Boxcar(), Triangular()])
def test_empty_query_has_no_shift_and_zero_sums(kernel, tile_elements):
    Q = np.array([[0.5], [100.0], [1.2]])
    X = np.array([[0.0], [1.0], [2.0]])
    V = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    ((S, den, M),) = kernel_sums(
        Q, X, V, [Head(kernel, 1.0)], tile_elements=tile_elements
    )
    assert M[1] == -np.inf
    assert den[1] == 0.0
    assert_array_equal(S[1], [0.0, 0.0])
    assert np.all(np.isfinite(M[[0, 2]]))
    assert np.all(den[[0, 2]] > 0)
    assert not np.isnan(S).any()


def test_query_with_only_zero_weight_points_in_window_is_empty():
    Q = np.array([[0.0], [5.0]])
    X = np.array([[0.1], [5.1], [5.2]])
    V = np.ones((3, 1))
    w = np.array([0.0, 1.0, 1.0])
    ((S, den, M),) = kernel_sums(Q, X, V, [Head(Boxcar(), 1.0)], sample_weight=w)
    assert M[0] == -np.inf and den[0] == 0.0 and S[0, 0] == 0.0
    assert den[1] == 2.0


@pytest.mark.parametrize("d", [1, 3])
def test_squared_euclidean_fast_path(d):
    Q, X, _, _ = make_data(12, 31, 57, d)
    X[3] = Q[4]  # a zero distance
    D2 = pairwise_distances(Q, X, "euclidean", None, squared=True)
    assert D2.shape == (31, 57)
    assert_allclose(D2, cdist(Q, X, "euclidean") ** 2, rtol=RTOL, atol=1e-15)
    assert_allclose(D2, cdist(Q, X, "sqeuclidean"), rtol=RTOL)
    assert D2[4, 3] == 0.0
    assert np.all(D2 >= 0)


@pytest.mark.parametrize("metric", ["euclidean", "cityblock", "cosine"])
def test_pairwise_distances_are_cdist(metric):
    Q, X, _, _ = make_data(13, 7, 9, 3)
    assert_array_equal(pairwise_distances(Q, X, metric, None), cdist(Q, X, metric))


@pytest.mark.parametrize("d", [1, 2, 5])
@pytest.mark.parametrize(
    "heads",
    [
        [Head(Gaussian(), 0.7)],
        [Head(Gaussian(), 0.4), Head(Epanechnikov(), 2.5), Head(Laplacian(), 1.0)],
        [Head(Gaussian(), 0.4), Head(Laplacian(), 1.0)],
    ],
    ids=["single-gaussian", "grid", "grid-unbounded"],
)
def test_fast_paths_equal_cdist_path(d, heads):
    """GEMM distances and the folded single-head path agree with cdist."""
    Q, X, V, w = make_data(11, 40, 300, d)
    w[::7] = 0.0
    scale = np.linspace(0.5, 2.0, d)
    fast = kernel_sums(Q, X, V, heads, scale=scale, sample_weight=w)
    loo_fast = kernel_sums(X, X, V, heads, sample_weight=w, exclude_self=True)
    # Not with a compact head: its window is decided on cdist's distances.
    compact = any(np.isfinite(h.kernel.support) for h in heads)
    usable = _gaussian._gemm_usable(Q, X, heads, None, X.mean(axis=0))
    assert usable == (d >= 2 and not compact)
    slow = kernel_sums(Q, X, V, heads, scale=scale, sample_weight=w, strategy="cdist")
    loo_slow = kernel_sums(
        X, X, V, heads, sample_weight=w, exclude_self=True, strategy="cdist"
    )
    for a, b in zip(fast + loo_fast, slow + loo_slow, strict=True):
        factor = np.exp(a[2] - b[2])
        assert np.all(a[2] <= b[2] + 1e-11 * np.abs(b[2]) + 1e-12)
        assert_allclose(a[0] * factor[:, None], b[0], rtol=1e-11)
        assert_allclose(a[1] * factor, b[1], rtol=1e-11)
    for head, result in zip(heads, fast, strict=True):
        ref = brute_sums(Q / scale, X / scale, V, head, w=w)
        factor = np.exp(result[2] - ref[2])
        assert_allclose(result[0] * factor[:, None], ref[0], rtol=1e-11)
        assert_allclose(result[1] * factor, ref[1], rtol=1e-11)


def test_tiles_respect_the_element_budget():
    for m, n, budget in [(10, 100_000, 1), (1000, 50, 1 << 17), (7, 9000, 1 << 17)]:
        bq, bn = _base._tile_shape(m, n, budget)
        assert 1 <= bq <= m and 1 <= bn <= n
        assert bq * bn <= max(budget, 64)


@pytest.mark.parametrize("d", [1, 2])
def test_all_weights_zero_gives_empty_windows(d):
    Q, X, V, _ = make_data(3, 5, 8, d)
    w = np.zeros(8)
    for heads in ([Head(Gaussian(), 0.5)], HEADS[:3]):
        for S, den, M in kernel_sums(Q, X, V, heads, sample_weight=w):
            assert np.all(den == 0) and np.all(S == 0) and np.all(M == -np.inf)


@pytest.mark.parametrize("tile_elements", [7, TILE_ELEMENTS])
def test_exclude_self_of_a_batch_of_the_training_points(tile_elements):
    # Queries X[a:b] with self_offset=a leave out the same terms as the rows
    # a:b of the whole leave-one-out pass.
    _, X, V, w = make_data(12, 1, 60, 2)
    w[[3, 40]] = 0.0
    kept = w - np.minimum(w, 0.5)
    heads = [Head(Gaussian(), 0.6), Head(Gaussian(), 0.3), Head(Epanechnikov(), 1.5)]
    params = {
        "sample_weight": w,
        "exclude_self": True,
        "self_weight": kept,
        "tile_elements": tile_elements,
    }
    whole = kernel_sums(X, X, V, heads, **params)
    for a, b in [(0, 20), (17, 45), (45, 60)]:
        part = kernel_sums(X[a:b], X, V, heads, self_offset=a, **params)
        for (S, den, M), (S_all, den_all, M_all) in zip(part, whole, strict=True):
            assert_allclose(M, M_all[a:b], rtol=1e-13)
            assert_allclose(den, den_all[a:b], rtol=1e-12)
            assert_allclose(S, S_all[a:b], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov", "boxcar", "laplacian"])
@pytest.mark.parametrize("d", [1, 3])
def test_weighted_euclidean_is_not_taken_for_the_plain_one(kernel, d):
    """``metric_params={"w": ...}`` weights the euclidean metric: the squared
    and GEMM paths of the plain metric must not serve it."""
    Q, X, V, w = make_data(5, 30, 200, d)
    params = {"w": np.linspace(0.5, 4.0, d)}
    head = Head(get_kernel(kernel), 2.5)
    ((S, den, M),) = kernel_sums(
        Q, X, V, [head], metric="euclidean", metric_params=params, sample_weight=w
    )
    ref = brute_sums(Q, X, V, head, "euclidean", params, w=w)
    empty = ~np.isfinite(ref[2])
    assert_array_equal(den[empty], 0.0)
    factor = np.exp(M[~empty] - ref[2][~empty])
    assert_allclose(S[~empty] * factor[:, None], ref[0][~empty], rtol=1e-11)
    assert_allclose(den[~empty] * factor, ref[1][~empty], rtol=1e-11)
