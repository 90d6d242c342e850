"""The GEMM paths of a single Gaussian head: probes, one feature, float32."""

import numpy as np
import pytest
from _core_reference import (
    N_LARGE,
    _training_tiles_of_4096,  # noqa: F401  (autouse)
    assert_sums_close,
    brute_sums,
    make_data,
)
from numpy.testing import assert_allclose
from scipy.spatial.distance import cdist

from sknw import NadarayaWatsonRegressor
from sknw._sums import Head, _gaussian, kernel_sums
from sknw._sums._gaussian import LINE_GEMM_TOLERANCE
from sknw.kernels import Boxcar, Gaussian


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
        np.array([[-30.0, 0.0]]),
        Xs,
        np.array([[0.0], [1.0]]),
        [Head(Gaussian(), 1.0)],
        sample_weight=np.array([1e-200, 1e-200]),
    )
    assert den[0] > 0
    assert_allclose(S[0, 0] / den[0], np.exp(-0.5 * (31**2 - 30**2)), rtol=1e-9)


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
def test_one_feature_gemm_and_subtraction_agree(tolerance):
    # LINE_GEMM_TOLERANCE 0: every tile by subtraction; inf: every tile by GEMM.
    Q, X, V, w = make_data(8, 300, N_LARGE, 1)
    head = Head(Gaussian(), 0.05)
    with LINE_GEMM_TOLERANCE.set(tolerance):
        result = kernel_sums(Q, X, V, [head], sample_weight=w)[0]
    assert_sums_close(result, brute_sums(Q, X, V, head, w=w))


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


@pytest.mark.parametrize("offset", [1e6, 1e9, -1e12])
@pytest.mark.parametrize("d, h", [(1, 0.05), (1, 0.4), (3, 0.5)])
def test_float32_error_is_relative_to_the_spread_of_the_values(
    exp_dtypes, d, h, offset
):
    """Values far from zero: the float32 sums take them centred on their
    mid-range, so estimates are within 2e-4 of the range of each column (of
    the float64 ones of the centred values), not of their magnitude."""
    Q, X, V, w = _float32_problem(d)
    head = [Head(Gaussian(), h)]
    S, den, _ = kernel_sums(Q, X, V + offset, head, sample_weight=w)[0]
    assert np.dtype(np.float32) in exp_dtypes
    S64, den64, _ = kernel_sums(
        Q.astype(float), X.astype(float), V, head, sample_weight=w
    )[0]
    estimate = S / den[:, None] - offset
    estimate64 = S64 / den64[:, None]
    spread = np.ptp(V, axis=0)
    assert np.all(np.max(np.abs(estimate - estimate64), axis=0) <= 2e-4 * spread)
    # Typically far closer than the bound (float64 rounding of the offset aside).
    assert np.all(
        np.max(np.abs(estimate - estimate64), axis=0)
        <= 1e-5 * spread + 4 * np.finfo(float).eps * abs(offset)
    )
