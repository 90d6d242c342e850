"""The tiled, log-domain core against brute-force kernel sums."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.spatial.distance import cdist

from sknw._sums import (
    TILE_ELEMENTS,
    Head,
    _base,
    _chains,
    _gaussian,
    _parallel,
    _sorted,
    _traits,
    _tree,
    kernel_sums,
    nearest_mask,
    nearest_sums,
    pairwise_distances,
)
from sknw._sums._chains import ExcessTile
from sknw.kernels import (
    KERNELS,
    Boxcar,
    Epanechnikov,
    Gaussian,
    Laplacian,
    Silverman,
    Triangular,
    get_kernel,
)

RTOL = 1e-12


@pytest.fixture(autouse=True)
def _training_tiles_of_4096(monkeypatch):
    """Training tiles of 4096 rows, the boundary the tests below straddle."""
    monkeypatch.setattr(_base, "TILE_TRAIN_ROWS", 4096)


TILES = [1, 7, 64, TILE_ELEMENTS]
# More training rows than one training tile holds (4096), so that the shift is
# carried across training tiles.
N_LARGE = 4096 + 300


def brute_sums(Q, X, V, head, metric="euclidean", metric_params=None, w=None):
    """``S``, ``den`` and ``M`` of the core from their definitions.

    ``M`` is the largest log kernel value over the points of positive weight.
    """
    D = cdist(Q, X, metric, **(metric_params or {}))
    K = np.asarray(head.kernel(D / head.divisor), dtype=np.float64)
    w = np.ones(X.shape[0]) if w is None else w
    KW = K * w
    with np.errstate(divide="ignore"):
        L = np.log(np.abs(K))
    L[:, w == 0] = -np.inf
    M = L.max(axis=1)
    scale = np.where(np.isfinite(M), np.exp(-np.where(np.isfinite(M), M, 0.0)), 0.0)
    S = (KW * scale[:, None]) @ V
    den = (KW * scale[:, None]).sum(axis=1)
    return S, den, M


def make_data(seed, m, n, d, k=2):
    rng = np.random.default_rng(seed)
    Q = rng.normal(size=(m, d))
    X = rng.normal(size=(n, d))
    V = rng.normal(size=(n, k)) + 3.0
    w = rng.uniform(0.2, 2.0, size=n)
    return Q, X, V, w


HEADS = [
    Head(Gaussian(), 0.7),
    Head(Epanechnikov(), 1.5),
    Head(Laplacian(), 0.4),
    Head(Silverman(), 0.6),
    Head(Triangular(), 2.0),
    Head(Boxcar(), 1.8),
]


def assert_sums_close(result, reference):
    """Equal sums: the same shift, or (the probe-shifted GEMM path) a shift at
    most 660 below the reference's, compared at the reference's shift."""
    S, den, M = result
    S_ref, den_ref, M_ref = reference
    other = (M != M_ref) & np.isfinite(M_ref) & (M <= M_ref)
    assert np.all(M[other] >= M_ref[other] - 660.0)
    assert_allclose(M[~other], M_ref[~other], rtol=RTOL, atol=1e-13)
    factor = np.exp(np.where(other, M - np.where(other, M_ref, 0.0), 0.0))
    assert_allclose(den * factor, den_ref, rtol=RTOL)
    assert_allclose(S * factor[:, None], S_ref, rtol=RTOL, atol=1e-13)


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


def test_several_gaussian_heads_share_the_squared_path():
    Q, X, V, w = make_data(3, 11, 29, 3)
    heads = [Head(Gaussian(), h) for h in (0.2, 0.5, 3.0)]
    for head, result in zip(heads, kernel_sums(Q, X, V, heads), strict=True):
        assert_sums_close(result, brute_sums(Q, X, V, head))


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
        X,
        X,
        V,
        [head],
        sample_weight=w,
        exclude_self=True,
        tile_elements=tile_elements,
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
        X,
        X,
        V,
        [head],
        sample_weight=w,
        exclude_self=True,
        tile_elements=tile_elements,
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
        # by a bound from probes: see test_probe_shifted_gemm_path below).
        ((_, _, M),) = kernel_sums(Q, X, V, [head], sample_weight=w, strategy="tiled")
        K = np.abs(head.kernel(cdist(Q, X) / head.divisor))
        with np.errstate(divide="ignore"):
            expected = np.max(np.log(K), axis=1)
        assert_allclose(M, expected, rtol=RTOL, atol=1e-13)


@pytest.mark.parametrize("h", [0.05, 0.3, 1.0, 1e3])
def test_probe_shifted_gemm_path(h):
    check_probe_shifted_gemm_path(h)


def check_probe_shifted_gemm_path(h):
    """The single Gaussian head in several dimensions shifts queries near some
    probed training point by the probe bound, and the others by their largest
    log weight: the same sums, at one shift, as the reference either way."""
    rng = np.random.default_rng(31)
    X = np.vstack([rng.normal(size=(300, 3)), rng.normal(8, 0.01, size=(20, 3))])
    V = rng.normal(size=(320, 2))
    w = rng.uniform(0.5, 2, 320)
    w[::13] = 0.0
    Q = np.vstack([rng.normal(size=(40, 3)), [[8, 8, 8], [30, 0, 0], [0, 50, 0]]])
    head = Head(Gaussian(), h)
    fast = kernel_sums(Q, X, V, [head], sample_weight=w, tile_elements=500)[0]
    # The reference in the log domain (far queries underflow K itself).
    L = -0.5 * (cdist(Q, X) / h) ** 2
    L[:, w == 0] = -np.inf
    M_ref = L.max(axis=1)
    E = np.exp(L - M_ref[:, None]) * w
    S, den, M = fast
    # Shift-free comparison; log weights of the far queries are large, so
    # their rounding is relative to them.
    factor = np.exp(M - M_ref)
    assert_allclose(den * factor, E.sum(axis=1), rtol=1e-10)
    assert_allclose(S * factor[:, None], E @ V, rtol=1e-10, atol=1e-13)
    centre = X.mean(axis=0)
    if _gaussian._gemm_usable(Q, X, [head], None, centre):
        shift = _gaussian._probe_shifts(Q, X, w, -0.5 / h**2, None, centre)
        near = shift >= _gaussian.PROBE_MIN_LOG
        assert_allclose(fast[2][near], shift[near], rtol=1e-15)
        assert np.all(shift <= M_ref + 1e-9 * np.abs(M_ref))
        assert_allclose(fast[2][~near], M_ref[~near], rtol=1e-12)
        return near
    assert_allclose(fast[2], M_ref, rtol=1e-12)
    return None


def test_probe_shifted_gemm_path_serves_near_rows_and_shifts_far_ones():
    near = check_probe_shifted_gemm_path(1.0)
    assert near is not None and near[:40].all() and not near[-1]


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


# -- nearest points -------------------------------------------------------------


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


# -- distances ------------------------------------------------------------------


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
    ],
    ids=["single-gaussian", "grid"],
)
def test_fast_paths_equal_cdist_path(d, heads):
    """GEMM distances and the folded single-head path agree with cdist."""
    Q, X, V, w = make_data(11, 40, 300, d)
    w[::7] = 0.0
    scale = np.linspace(0.5, 2.0, d)
    fast = kernel_sums(Q, X, V, heads, scale=scale, sample_weight=w)
    loo_fast = kernel_sums(X, X, V, heads, sample_weight=w, exclude_self=True)
    assert _gaussian._gemm_usable(Q, X, heads, None, X.mean(axis=0)) == (d >= 2)
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


def test_gemm_path_refused_where_rounding_could_matter():
    rng = np.random.default_rng(12)
    X = rng.normal(size=(50, 3))
    centre = X.mean(axis=0)
    usable = _gaussian._gemm_usable
    assert usable(X, X, [Head(Gaussian(), 1.0)], None, centre)
    # Far-away data relative to the bandwidth: error bound exceeded.
    assert not usable(X + 1e4, X, [Head(Gaussian(), 1.0)], None, centre)
    assert not usable(X, X, [Head(Gaussian(), 1e-4)], None, centre)
    # A discontinuous kernel, and user kernels, always use cdist.
    assert not usable(X, X, [Head(Boxcar(), 1.0)], None, centre)

    class Mine(Gaussian):
        pass

    assert not usable(X, X, [Head(Mine(), 1.0)], None, centre)
    assert not usable(X[:, :1], X[:, :1], [Head(Gaussian(), 1.0)], None, centre[:1])


def test_tiles_respect_the_element_budget():
    for m, n, budget in [(10, 100_000, 1), (1000, 50, 1 << 17), (7, 9000, 1 << 17)]:
        bq, bn = _base._tile_shape(m, n, budget)
        assert 1 <= bq <= m and 1 <= bn <= n
        assert bq * bn <= max(budget, 64)


@pytest.mark.parametrize(
    "kernel", [Epanechnikov(), Boxcar(), Triangular(), KERNELS["tricube"]()]
)
@pytest.mark.parametrize(
    "metric, params, p",
    [
        ("euclidean", None, 2.0),
        ("cityblock", None, 1.0),
        ("chebyshev", None, np.inf),
        ("minkowski", {"p": 3}, 3.0),
    ],
)
@pytest.mark.parametrize("tile_elements", [50, TILE_ELEMENTS])
def test_tree_sums_equal_dense_sums(kernel, metric, params, p, tile_elements):
    Q, X, V, w = make_data(13, 300, 900, 3)
    w[::4] = 0.0
    Q[:5] += 30.0  # empty windows
    scale = np.array([0.5, 1.0, 2.0])
    head = Head(kernel, 0.4)
    assert _traits.tree_p(metric, params) == p
    tree = _tree.build_tree(X, scale)
    ((S, den, M),) = _tree.tree_kernel_sums(
        Q,
        X,
        V,
        [head],
        tree=tree,
        p=p,
        scale=scale,
        sample_weight=w,
        tile_elements=tile_elements,
    )
    ref = brute_sums(Q / scale, X / scale, V, head, metric, params, w)
    # Tree sums are unshifted (M = 0): compare the ratios and the empty rows.
    empty = ref[1] == 0
    assert empty[:5].all() and not empty[5:].all()
    assert_array_equal(den == 0, empty)
    assert_array_equal(np.isneginf(M), empty)
    assert_allclose(
        S[~empty] / den[~empty, None], ref[0][~empty] / ref[1][~empty, None], rtol=1e-12
    )


def test_tree_metric_support():
    assert _traits.tree_p("minkowski", None) == 2.0
    assert _traits.tree_p("minkowski", {"p": 0.5}) is None
    assert _traits.tree_p("cosine", None) is None
    assert _traits.tree_p("euclidean", {"w": [1.0]}) is None
    assert _traits.tree_p(lambda a, b: 0.0, None) is None


@pytest.mark.parametrize("tile_elements", [64, 1000, 1 << 17])
@pytest.mark.parametrize("h", [0.002, 0.05, 0.7, 50.0])
def test_one_feature_gaussian_skips_only_negligible_terms(h, tile_elements):
    """The 1-D single-head path (sorted, each query tile against the training
    points within reach) equals the general path: terms it skips are below
    exp(EXP_FLOOR) times each query's largest."""
    rng = np.random.default_rng(21)
    X = np.concatenate([rng.uniform(-3, 3, 400), rng.normal(10, 0.01, 50)])[:, None]
    V = np.column_stack([np.sin(X[:, 0]), X[:, 0] ** 2])
    w = rng.uniform(0.5, 2.0, X.shape[0])
    w[::11] = 0.0
    Q = np.concatenate([rng.uniform(-5, 12, 300), [1e6, -1e6, 10.0]])[:, None]
    heads = [Head(Gaussian(), h)]
    params = {"sample_weight": w, "tile_elements": tile_elements}
    fast = kernel_sums(Q, X, V, heads, **params)[0]
    slow = kernel_sums(Q, X, V, heads, **params, strategy="cdist")[0]
    # Shifts agree up to the rounding of the scaled distances (relative to
    # their size: the log weights of queries far from the data in bandwidth
    # units are large), and so do the shifted sums and the averages.
    assert_allclose(fast[2], slow[2], rtol=1e-12, atol=1e-12)
    near = np.abs(Q[:, 0]) < 100
    assert_allclose(fast[1][near], slow[1][near], rtol=1e-9)
    assert_allclose(fast[0][near], slow[0][near], rtol=1e-9, atol=1e-300)
    # Far queries (1e6 away): both paths lose digits to the cancellation of
    # squared distances near 1e12, differently; the estimate stays close.
    avg_fast, avg_slow = fast[0] / fast[1][:, None], slow[0] / slow[1][:, None]
    assert_allclose(avg_fast[near], avg_slow[near], rtol=1e-9)
    assert_allclose(avg_fast[~near], avg_slow[~near], rtol=1e-3)
    assert np.all(fast[1] > 0)


def test_one_feature_gaussian_overflowing_query_is_empty():
    """A query whose squared distances overflow has no representable weight:
    zero sums and no shift (the estimators then take the nearest points),
    never NaN."""
    X = np.array([[0.0], [1.0], [2.0]])
    V = np.ones((3, 1))
    Q = np.array([[1e300], [1.5]])
    ((S, den, M),) = kernel_sums(Q, X, V, [Head(Gaussian(), 0.5)])
    assert den[0] == 0.0 and S[0, 0] == 0.0 and M[0] == -np.inf
    assert den[1] > 0 and np.isfinite(M[1])


def test_probe_shift_respects_sample_weights():
    """A light nearest point and a heavy one 47 log units further: the GEMM
    path's shift keeps both terms (the same answer as in one dimension, and
    as the exact value)."""
    from sknw import NadarayaWatsonRegressor

    d_a, d_b = np.sqrt(1310.0), np.sqrt(1404.0)  # log K = -655 and -702
    X = np.array([[0.0, 0.0], [d_a + d_b, 0.0]])
    y = np.array([0.0, 1.0])
    w = np.array([1e-20, 1.0])
    two = NadarayaWatsonRegressor(bandwidth=1.0).fit(X, y, sample_weight=w)
    one = NadarayaWatsonRegressor(bandwidth=1.0).fit(X[:, :1], y, sample_weight=w)
    exact = 1.0 / (1.0 + 1e-20 * np.exp(-655.0 + 702.0))
    assert_allclose(two.predict([[d_a, 0.0]]), [exact], rtol=1e-9)
    assert_allclose(one.predict([[d_a]]), [exact], rtol=1e-9)
    # Tiny weights alone: the sums stay positive (no 0/0).
    Xs = np.array([[0.0, 0.0], [1.0, 0.0]])
    ((S, den, M),) = kernel_sums(
        np.array([[-30.0, 0.0]]), Xs, np.array([[0.0], [1.0]]),
        [Head(Gaussian(), 1.0)], sample_weight=np.array([1e-200, 1e-200]),
    )  # fmt: skip
    assert den[0] > 0
    assert_allclose(S[0, 0] / den[0], np.exp(-0.5 * (31**2 - 30**2)), rtol=1e-9)


@pytest.mark.parametrize("d", [1, 2])
def test_all_weights_zero_gives_empty_windows(d):
    Q, X, V, _ = make_data(3, 5, 8, d)
    w = np.zeros(8)
    for heads in ([Head(Gaussian(), 0.5)], HEADS[:3]):
        for S, den, M in kernel_sums(Q, X, V, heads, sample_weight=w):
            assert np.all(den == 0) and np.all(S == 0) and np.all(M == -np.inf)


def _chain_problem(d):
    """Points spread over many bandwidths (floors), with a far cluster whose
    huge values would show any term left above 0 below the floor."""
    rng = np.random.default_rng(11)
    X = np.vstack([rng.normal(size=(70, d)), rng.normal(size=(10, d)) + 40.0])
    V = rng.normal(size=(80, 2)) + 3.0
    V[70:] *= 1e300
    V[5] *= 1e300  # in its own (left out) term, any remainder would show
    w = rng.integers(0, 4, size=80).astype(float)
    w[:2] = [0.5, 0.0]
    return X, V, w


@pytest.mark.parametrize("d", [1, 3])
@pytest.mark.parametrize("kernel", [Gaussian(), Laplacian()])
@pytest.mark.parametrize("kept", [False, True])
@pytest.mark.parametrize("tile_elements", [64, TILE_ELEMENTS])
@pytest.mark.parametrize("step", [0.25, 1.0, 2.0])
def test_squared_heads_equal_exp_heads(d, kernel, kept, tile_elements, step):
    # Bandwidths 2**step apart: coefficients powers of two apart (one to four
    # squarings between heads, several chains, chains longer than
    # MAX_SQUARINGS), plus one head related to none; tiny bandwidths put most
    # terms below the floor. Each head alone uses exp on the same path: the
    # other head of its reference pass has no log-linear form.
    X, V, w = _chain_problem(d)
    count = int(10 / step)
    bandwidths = [*(3.0 * 2.0 ** (-step * np.arange(count))), 0.37]
    heads = [Head(kernel, h) for h in bandwidths]
    params = {
        "sample_weight": w,
        "exclude_self": True,
        "self_weight": w - np.minimum(w, 1.0) if kept else None,
        "tile_elements": tile_elements,
    }
    together = kernel_sums(X, X, V, heads, **params)
    for head, (S, den, M) in zip(heads, together, strict=True):
        pair = [head, Head(Epanechnikov(), 1.0)]
        S_ref, den_ref, M_ref = kernel_sums(X, X, V, pair, **params)[0]
        assert_array_equal(M, M_ref)
        assert_allclose(den, den_ref, rtol=1e-11, atol=1e-300)
        assert_allclose(S, S_ref, rtol=1e-11, atol=1e-300)


def test_square_chain_plan():
    coefs = list(-(2.0 ** (np.arange(30) / 2)))  # Gaussian, bandwidths 2**(1/4) apart
    coefs[5] *= 1 + 2.0**-40  # off a power of two by more than rounding
    chains = _chains._SquareChains(coefs, list(range(30)), 16)
    plan = {h: (parent, s) for h, _, parent, s in chains.plan}
    assert [h for h, *_ in chains.plan] == list(range(30))  # widest first
    depth = {}
    for h, (parent, s) in plan.items():
        depth[h] = 0 if parent is None else depth[parent] + s
        assert depth[h] <= _chains.MAX_SQUARINGS
        if parent is not None:
            assert coefs[h] / coefs[parent] == pytest.approx(2.0**s, rel=1e-13)
    assert plan[5] == (None, 0)
    assert plan[7] == (None, 0) or plan[7][0] != 5
    assert plan[2] == (0, 1) and plan[3] == (1, 1)
    roots = [h for h, (parent, _) in plan.items() if parent is None]
    assert len(roots) < 8
    # Ratios that are no powers of two: every head is its own exp.
    coefs = list(-(np.geomspace(1.0, 100.0, 30) ** 2))
    chains = _chains._SquareChains(coefs, list(range(30)), 16)
    assert all(parent is None for _, _, parent, _ in chains.plan)


def _float32_problem(d, n=3000, m=700, seed=5):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(n, d)).astype(np.float32)
    Q = rng.uniform(-1.1, 1.1, size=(m, d)).astype(np.float32)
    V = np.column_stack([np.sin(3 * X[:, 0]), rng.normal(size=n) - 5.0])
    w = rng.uniform(0.1, 3.0, size=n)
    return Q, X, V, w


@pytest.mark.parametrize("d, h", [(1, 0.05), (1, 0.4), (3, 0.5), (8, 1.0)])
def test_float32_inputs_within_the_documented_bound(exp_dtypes, d, h):
    Q, X, V, w = _float32_problem(d)
    head = [Head(Gaussian(), h)]
    seen = exp_dtypes
    S, den, M = kernel_sums(Q, X, V, head, sample_weight=w)[0]
    assert np.dtype(np.float32) in seen
    # The same (float32-rounded) data in float64.
    S64, den64, M64 = kernel_sums(
        Q.astype(float), X.astype(float), V, head, sample_weight=w
    )[0]
    factor = np.exp(M - M64)
    # Each weight within ~1e-4 and each float32 partial sum within 6.1e-5.
    assert_allclose(den * factor, den64, rtol=1.7e-4)
    scale = den64[:, None] * np.max(np.abs(V), axis=0)
    assert np.all(np.abs(S * factor[:, None] - S64) <= 1.7e-4 * scale)
    estimate, estimate64 = S / den[:, None], S64 / den64[:, None]
    assert np.max(np.abs(estimate - estimate64), axis=0) == pytest.approx(
        0.0, abs=4e-4 * np.max(np.abs(V))
    )
    # Typically far closer than the bound.
    assert np.max(np.abs(estimate - estimate64)) < 1e-5 * np.max(np.abs(V))


@pytest.mark.parametrize("d", [1, 3])
def test_float32_falls_back_to_float64_beyond_the_bound(exp_dtypes, d):
    # Data spread over 1e6 bandwidths: the float32 rounding bound fails.
    Q, X, V, w = _float32_problem(d)
    head = [Head(Gaussian(), 1e-6)]
    seen = exp_dtypes
    S, den, M = kernel_sums(Q, X, V, head, sample_weight=w)[0]
    assert np.dtype(np.float32) not in seen
    reference = kernel_sums(Q.astype(float), X.astype(float), V, head, sample_weight=w)
    assert_sums_close((S, den, M), reference[0])


def test_float32_rows_far_from_the_data_take_float64(exp_dtypes):
    # Rows shifted below F32_MIN_SHIFT go through float64, the others float32.
    Q, X, V, w = _float32_problem(3)
    Q[:50, 0] += np.float32(12.0)
    head = [Head(Gaussian(), 1.0)]
    seen = exp_dtypes
    S, den, M = kernel_sums(Q, X, V, head, sample_weight=w)[0]
    assert seen == {np.dtype(np.float32), np.dtype(np.float64)}
    S64, den64, M64 = kernel_sums(
        Q.astype(float), X.astype(float), V, head, sample_weight=w
    )[0]
    factor = np.exp(M - M64)
    assert_allclose(den[:50] * factor[:50], den64[:50], rtol=1e-12)
    assert_allclose(den * factor, den64, rtol=1.7e-4)


@pytest.mark.parametrize("tolerance", [0.0, np.inf])
def test_one_feature_gemm_and_subtraction_agree(monkeypatch, tolerance):
    # LINE_GEMM_TOLERANCE 0: every tile by subtraction; inf: every tile by GEMM.
    Q, X, V, w = make_data(8, 300, N_LARGE, 1)
    head = Head(Gaussian(), 0.05)
    monkeypatch.setattr(_gaussian, "LINE_GEMM_TOLERANCE", tolerance)
    result = kernel_sums(Q, X, V, [head], sample_weight=w)[0]
    assert_sums_close(result, brute_sums(Q, X, V, head, w=w))


def test_square_chain_floors_masked_terms_across_several_squarings():
    # A root none of whose terms is raised, and a head four squarings on whose
    # terms fall below the floor: its masked (inf) and floored terms are 0.
    coefs = [-10.0, -160.0]
    chains = _chains._SquareChains(coefs, [0, 1], 8)
    D = np.array([[0.0, np.inf, 30.0, 1.0]])
    dmin, excess = np.zeros(1), np.array([30.0])
    out = [_base._Accumulator(1, 1) for _ in coefs]
    target = np.empty_like(D)
    terms = {
        h: E.copy()
        for h, E in chains.tile(
            ExcessTile(D, dmin, 0.0, excess, target, slice(0, 1), False), out
        )
    }
    assert_array_equal(terms[0], np.exp([[0.0, -np.inf, -300.0, -10.0]]))
    assert_allclose(terms[1], np.exp([[0.0, -np.inf, -np.inf, -160.0]]), rtol=1e-13)
    assert terms[1][0, 1] == 0.0 and terms[1][0, 2] == 0.0
    # One squaring, floored only by rounding (coefficients 2 (1 + 2**-47)
    # apart): the masked term stays 0.
    coefs = [-10.0, -20.0 * (1 + 2.0**-47)]
    chains = _chains._SquareChains(coefs, [0, 1], 8)
    D = np.array([[0.0, np.inf, 35.0, 1.0]])
    excess = np.array([35.0])
    out = [_base._Accumulator(1, 1) for _ in coefs]
    terms = {
        h: E.copy()
        for h, E in chains.tile(
            ExcessTile(D, dmin, 0.0, excess, target, slice(0, 1), False), out
        )
    }
    assert [parent for _, _, parent, _ in chains.plan] == [None, 0]
    assert terms[1][0, 1] == 0.0
    assert_allclose(terms[1][0, [0, 3]], np.exp([0.0, -20.0]), rtol=1e-13)


def test_float32_values_of_any_scale(exp_dtypes):
    # Values are scaled by a power of two before float32: no overflow at 1e36
    # (terms up to exp(40) on the GEMM path), no underflow at 1e-45.
    Q, X, V, w = _float32_problem(2)
    Q[:20, 0] += np.float32(9.0)  # probe shifts near F32_MIN_SHIFT
    head = [Head(Gaussian(), 0.7)]
    seen = exp_dtypes
    for scale in (1e36, 1e-45):
        S, den, M = kernel_sums(Q, X, V * scale, head, sample_weight=w)[0]
        S64, den64, M64 = kernel_sums(
            Q.astype(float), X.astype(float), V * scale, head, sample_weight=w
        )[0]
        assert np.all(np.isfinite(S)) and np.all(np.isfinite(den))
        est, est64 = S / den[:, None], S64 / den64[:, None]
        assert np.max(np.abs(est - est64)) <= 4e-4 * np.max(np.abs(V * scale))
    assert np.dtype(np.float32) in seen


def test_float32_coefficient_out_of_float32_range_takes_float64(exp_dtypes):
    # A bandwidth of 1e25 in unscaled coordinates: coef ~ 1e-50 is 0 in float32.
    rng = np.random.default_rng(3)
    X = (rng.normal(size=(100, 2)) * 1e25).astype(np.float32)
    V = np.ones((100, 1))
    head = [Head(Gaussian(), 1e25)]
    seen = exp_dtypes
    S, den, M = kernel_sums(X[:3], X, V, head)[0]
    assert np.dtype(np.float32) not in seen
    reference = kernel_sums(X[:3].astype(float), X.astype(float), V, head)[0]
    assert_sums_close((S, den, M), reference)


def test_float32_weights_of_wide_range_take_float64(exp_dtypes):
    # The float32 floor is relative to the largest kernel value, not the
    # largest weighted term: weights 1e37 apart must not lose the heavy point.
    X = np.array([[0.0], [10.0]], dtype=np.float32)
    V = np.array([[0.0], [1.0]])
    w = np.array([1.0, 1e-37])
    h = 10.0 / np.sqrt(2 * 87.5)
    seen = exp_dtypes
    S, den, M = kernel_sums(X[1:], X, V, [Head(Gaussian(), h)], sample_weight=w)[0]
    assert np.dtype(np.float32) not in seen
    d2 = np.array([100.0, 0.0]) / (2 * h * h)
    expected = (w * np.exp(-d2)) @ V[:, 0] / (w * np.exp(-d2)).sum()
    assert S[0, 0] / den[0] == pytest.approx(expected, rel=1e-12)


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


def test_parallel_leave_one_out_equals_serial(monkeypatch):
    monkeypatch.setattr(_parallel, "MIN_BATCH", 8)
    _, X, V, w = make_data(13, 1, 90, 3)
    heads = [Head(Gaussian(), 0.5), Head(Gaussian(), 0.25), Head(Triangular(), 2.0)]
    params = {"sample_weight": w, "exclude_self": True, "self_weight": w / 3}
    serial = kernel_sums(X, X, V, heads, **params)
    threads = _parallel.parallel_kernel_sums(X, X, V, heads, n_jobs=3, **params)
    for (S, den, M), (S_ref, den_ref, M_ref) in zip(threads, serial, strict=True):
        assert_allclose(M, M_ref, rtol=1e-13)
        assert_allclose(den, den_ref, rtol=1e-12)
        assert_allclose(S, S_ref, rtol=1e-12, atol=1e-14)


# -- the sorted 1-D index ------------------------------------------------------


def test_segmented_cumsum_sums_each_segment_on_its_own():
    rng = np.random.default_rng(0)
    lengths = np.r_[1, 3, 200, 64, 65, 2, 40000, 7, 1, 33]
    n = lengths.sum()
    terms = rng.normal(size=(n, 3, 2)) * 10.0 ** rng.integers(-5, 9, (n, 1, 1))
    starts = np.r_[0, np.cumsum(lengths)[:-1]]
    got = _sorted.segmented_cumsum(terms, starts)
    for a, size in zip(starts, lengths, strict=True):
        segment = terms[a : a + size]
        exact = np.cumsum(segment.astype(np.longdouble), axis=0)
        magnitude = np.cumsum(np.abs(segment), axis=0)
        # Extended-precision sums, rounded once to float64 (and, past
        # SEGMENT_CHUNK_ROWS, carried from chunk to chunk).
        assert np.all(np.abs(got[a : a + size] - exact) <= 2.3e-16 * magnitude)


def test_sorted_sums_where_the_expansion_cancels_are_summed_term_by_term():
    # A heavy block of points, and queries whose window holds only the points
    # of the block nearest its edge: the tricube is tiny there, the moments
    # of the block are not.
    rng = np.random.default_rng(1)
    x = np.r_[rng.uniform(0.0, 0.9, 5000), rng.uniform(0.995, 1.0, 20)]
    V = np.sin(7 * x)[:, None]
    kernel = get_kernel("tricube")
    index = _sorted.SortedIndex(x[:, None], V, None, kernel, 1.0, None)
    q = np.linspace(1.98, 1.994, 50) - index.origin
    acc, nonempty, bound = index.sums(q)
    exact = index.exact_sums(q)
    t = np.asarray(index.t, dtype=np.longdouble)
    u = np.abs(t[None, :] - np.asarray(q, dtype=np.longdouble)[:, None])
    K = np.where(u < 1, (1 - np.minimum(u, 1) ** 3) ** 3, 0)
    reference = (K @ np.asarray(index.Vx, dtype=np.longdouble)).astype(float)

    def rel(S):
        return np.abs(S[:, 0] - reference[:, 0]) / reference[:, 1]

    assert np.all(nonempty)
    # The expansion's error exceeds the tolerance, its bound says so, and the
    # term-by-term sums are exact.
    assert np.max(rel(acc)) > _sorted.SORTED_TOLERANCE
    assert np.all(bound > _sorted.SORTED_TOLERANCE * acc[:, 1])
    assert np.max(rel(exact)) <= 1e-13
    ((S, den, _),) = _sorted.sorted_kernel_sums(
        q[:, None] + index.origin,
        x[:, None],
        V,
        [Head(kernel, 1.0)],
        index=index,
    )
    assert_allclose(S[:, 0] / den, reference[:, 0] / reference[:, 1], rtol=1e-12)


def test_sorted_bound_holds_where_the_expansion_serves():
    rng = np.random.default_rng(2)
    x = np.r_[rng.normal(size=20000), rng.uniform(5, 6, 30)]
    w = rng.exponential(size=x.size)
    V = rng.normal(size=(x.size, 1))
    for name in ("boxcar", "epanechnikov", "triweight", "tricube"):
        kernel = get_kernel(name)
        index = _sorted.SortedIndex(x[:, None], V, w, kernel, 0.3, None)
        q = np.sort(rng.uniform(index.t[0] - 1, index.t[-1] + 1, 300))
        acc, nonempty, bound = index.sums(q)
        lo, hi = index._windows(q)
        t = np.asarray(index.t, dtype=np.longdouble)
        u = np.abs(t[None, :] - np.asarray(q, dtype=np.longdouble)[:, None])
        inside = (np.arange(x.size)[None, :] >= lo[:, None]) & (
            np.arange(x.size)[None, :] < hi[:, None]
        )
        K = np.where(inside, kernel(u.astype(float)), 0.0).astype(np.longdouble)
        reference = (K @ np.asarray(index.Vx, dtype=np.longdouble)).astype(float)
        err = np.abs(acc - reference)[nonempty]
        assert np.all(err[:, 1] <= bound[nonempty])
        assert np.all(err[:, 0] <= bound[nonempty] * np.max(np.abs(V)))


def test_sorted_bound_holds_for_long_blocks_of_nearly_equal_terms():
    # Rounding errors of a long running sum of nearly equal terms all go the
    # same way: they grow with the number of terms, not its square root.
    rng = np.random.default_rng(3)
    n = 1 << 18
    x = rng.uniform(0.0, 0.999, n)
    c = 1.0 + 0.49 * 2.0**-33
    V = np.full((n, 1), c)
    index = _sorted.SortedIndex(
        x[:, None], V, None, get_kernel("epanechnikov"), 1.0, None
    )
    q = np.array([0.2, 0.5, 0.9]) - index.origin
    acc, _, bound = index.sums(q)
    t = np.asarray(index.t, dtype=np.longdouble)
    u = t[None, :] - np.asarray(q, dtype=np.longdouble)[:, None]
    reference = np.where(np.abs(u) < 1, 1 - u * u, 0) @ np.asarray(
        index.Vx, dtype=np.longdouble
    )
    err = np.abs(acc - reference.astype(float))
    assert np.all(err[:, 1] <= bound)
    assert np.all(err[:, 0] <= bound * c)
    assert np.all(bound <= _sorted.SORTED_TOLERANCE * acc[:, 1])
    assert np.max(np.abs(acc[:, 0] / acc[:, 1] - c)) <= 1e-14
