"""The sorted 1-D index: segmented sums, its sums and their error bound."""

import numpy as np
import pytest
from _core_reference import (
    _training_tiles_of_4096,  # noqa: F401  (autouse)
)
from numpy.testing import assert_allclose

from sknw._sums import Head, _sorted
from sknw._trace import traced
from sknw.kernels import get_kernel


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
    acc, counts, bound = index.sums(q)
    exact = index.exact_sums(q)
    t = np.asarray(index.t, dtype=np.longdouble)
    u = np.abs(t[None, :] - np.asarray(q, dtype=np.longdouble)[:, None])
    K = np.where(u < 1, (1 - np.minimum(u, 1) ** 3) ** 3, 0)
    reference = (K @ np.asarray(index.Vx, dtype=np.longdouble)).astype(float)

    def rel(S):
        return np.abs(S[:, 0] - reference[:, 0]) / reference[:, 1]

    assert np.all(counts > 0)
    # The expansion's error exceeds the tolerance, its bound says so, and the
    # term-by-term sums are exact.
    assert np.max(rel(acc)) > _sorted.SORTED_TOLERANCE
    assert np.all(bound > _sorted.SORTED_TOLERANCE * acc[:, 1])
    assert np.max(rel(exact)) <= 1e-13
    ((S, den, _),) = _sorted.sorted_kernel_sums(
        q[:, None] + index.origin, x[:, None], V, [Head(kernel, 1.0)], index=index
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
        acc, counts, bound = index.sums(q)
        nonempty = counts > 0
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


@pytest.mark.parametrize("blocks", [1, 3, 8])
def test_sorted_moments_with_narrow_blocks_and_ratios_hold_their_bound(blocks):
    # Per-query bandwidths h = H / r (a ladder's index of bandwidth H): the
    # moments of K(r u) u**j over sides of up to ``blocks + 1`` blocks, against
    # the definition in extended precision, within the bound they return.
    rng = np.random.default_rng(4)
    x = np.r_[rng.gamma(2.0, 1.0, 6000), rng.uniform(9.0, 9.2, 40)]
    w = rng.exponential(size=x.size)
    V = rng.normal(size=(x.size, 2))
    kernel = get_kernel("tricube")
    H = 1.2
    index = _sorted.SortedIndex(
        x[:, None], V, w, kernel, H, None, powers=2, blocks=blocks
    )
    q = np.sort(rng.uniform(-1.0, 11.0, 400))
    ratio = rng.uniform(1.0, 4.0, q.size)
    xq = q - index.origin
    acc, counts, bound = index.moment_sums(xq / H, xq, 2, None, ratio)
    xs = np.asarray(index.x, dtype=np.longdouble)
    h = np.asarray(H / ratio, dtype=np.longdouble)
    u = (xs[None, :] - np.asarray(xq, dtype=np.longdouble)[:, None]) / h[:, None]
    au = np.minimum(np.abs(u), 1)
    K = np.where(np.abs(u) < 1, (1 - au**3) ** 3, 0)
    Vx = np.asarray(index.Vx, dtype=np.longdouble)
    assert np.isfinite(bound).all()
    for j in range(3):
        reference = ((K * u**j) @ Vx).astype(float)
        err = np.abs(acc[:, j] - reference)
        assert np.all(err[:, -1] <= bound[:, j])
        assert np.all(err[:, :2] <= bound[:, j, None] * np.max(np.abs(V), axis=0))
    assert np.all((counts > 0) == (acc[:, 0, -1] > 0))


def test_narrow_blocks_tighten_the_bound_of_large_ratios():
    rng = np.random.default_rng(5)
    x = rng.uniform(0.0, 10.0, 20000)
    V = np.sin(x)[:, None]
    kernel = get_kernel("tricube")
    q = rng.uniform(1.0, 9.0, 300)
    ratio = np.full(q.size, 3.9)
    bounds = []
    for blocks in (1, 8):
        index = _sorted.SortedIndex(
            x[:, None], V, None, kernel, 2.0, None, powers=2, blocks=blocks
        )
        xq = q - index.origin
        acc, _, bound = index.moment_sums(xq / 2.0, xq, 2, None, ratio)
        bounds.append(np.median(bound[:, 0] / acc[:, 0, -1]))
    assert bounds[0] > 20 * bounds[1]


@pytest.mark.parametrize(
    "name",
    ["boxcar", "epanechnikov", "triangular", "biweight", "triweight", "tricube"],
)
def test_leave_one_out_where_the_own_term_dominates_is_summed_term_by_term(name):
    # Points of weight 1e9 among points of weight 1: leaving one out of its
    # own sums cancels all but about 1e-9 of them, beyond the expansion's
    # rounding, so that its sums are taken term by term without it.
    rng = np.random.default_rng(7)
    x = np.sort(rng.uniform(0.0, 1.0, 300))
    V = np.column_stack([np.cos(5 * x), x - 0.5])
    w = np.ones(x.size)
    heavy = np.arange(10, 300, 29)
    w[heavy] = 1e9
    kernel = get_kernel(name)
    h = 0.05
    index = _sorted.SortedIndex(x[:, None], V, w, kernel, h, None)
    with traced() as trace:
        ((S, den, _),) = _sorted.sorted_kernel_sums(
            x[:, None],
            x[:, None],
            V,
            [Head(kernel, h)],
            index=index,
            sample_weight=w,
            exclude_self=True,
            self_offset=0,
        )
    # The training rows of the queries summed term by term.
    redone = [i for own in trace.values("sorted_term_by_term", "own") for i in own]
    assert set(heavy) <= set(redone)
    # The definition, each point left out of its own sums.
    u = np.abs(x[None, :] - x[:, None]) / h
    K = np.asarray(kernel(u), dtype=float) * w
    np.fill_diagonal(K, 0.0)
    assert_allclose(den, K.sum(axis=1), rtol=1e-12)
    assert_allclose(S, K @ V, rtol=0, atol=1e-12 * K.sum(axis=1).max())
    assert_allclose(S[heavy], (K @ V)[heavy], rtol=1e-11, atol=1e-13)
