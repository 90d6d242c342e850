"""The training points that can weigh in a query's sums, in one feature: sums
over them equal the sums over all the points, and every point whose term
is not negligible is among them."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

from sknw._sums import Head, kernel_sums, line_moments, line_support
from sknw._sums._cells import DiscreteFactors, DiscreteHead
from sknw._sums._support import TRUNCATION
from sknw.kernels import (
    Boxcar,
    Cauchy,
    Epanechnikov,
    Gaussian,
    Kernel,
    Laplacian,
    Tricube,
)

KERNELS = [Gaussian(), Laplacian(), Epanechnikov(), Boxcar(), Tricube()]


def _data(seed, n=3000, zeros=True):
    rng = np.random.default_rng(seed)
    X = rng.normal(0.0, 1.0, (n, 1)) ** 3  # long tails, dense middle
    V = np.column_stack([np.sin(X[:, 0]), rng.normal(size=n)])
    w = rng.integers(0, 4, n).astype(float) if zeros else None
    return X, V, w


#: Kernels, seeds, bandwidths, leave-one-out or not, weights (with zeros)
#: or none.
_PROBLEMS = given(
    kernel=st.sampled_from(KERNELS),
    seed=st.integers(0, 2**16),
    h=st.sampled_from([0.003, 0.02, 0.1]),
    loo=st.booleans(),
    weighted=st.booleans(),
)


def _queries(X, w, rng, m, loo):
    """``(Q, own, kept, params)``: ``m`` queries with long tails, or ``m``
    training points each left out of its own sums (``loo``, one unit of
    its weight), and the core's parameters for them."""
    if not loo:
        return rng.normal(0.0, 2.0, (m, 1)) ** 3, None, None, {}
    own = rng.choice(X.shape[0], m, replace=False)
    kept = None if w is None else w - np.minimum(w, 1.0)
    params = {"exclude_self": True, "self_index": own, "self_weight": kept}
    return X[own], own, kept, params


def _log_terms(Q, X, head, w, own=None, kept=None):
    """Each pair's log kernel value from the definitions (``-inf`` for the
    points of weight 0 and for a point left out of its own sums)."""
    u = np.abs(Q[:, 0][:, None] - X[:, 0][None, :]) / head.divisor
    L = np.array(head.kernel.log_value(u), dtype=float)
    if w is not None:
        L[:, w == 0] = -np.inf
    if own is not None:
        gone = np.ones(own.size, bool) if kept is None else kept[own] == 0
        L[np.flatnonzero(gone), own[gone]] = -np.inf
    return L


@settings(max_examples=30, deadline=None)
@_PROBLEMS
def test_sums_over_the_support_equal_the_sums_over_all_points(
    kernel, seed, h, loo, weighted
):
    X, V, w = _data(seed, zeros=weighted)
    head = Head(kernel, h)
    Q, own, kept, params = _queries(X, w, np.random.default_rng(seed + 1), 25, loo)
    rows, empty = line_support(Q, X, head, sample_weight=w, **params)
    assert rows is not None and np.all(np.diff(rows) > 0)
    L = _log_terms(Q, X, head, w, own, kept)
    top = L.max(axis=1)
    # Every term within 700 of its query's largest is in the support.
    needed = np.any(np.isfinite(L) & (L >= top[:, None] - 700.0), axis=0)
    assert not np.setdiff1d(np.flatnonzero(needed), rows).size
    if np.isfinite(kernel.support):
        assert_array_equal(empty, ~np.isfinite(top))
    else:
        assert not empty.any()
    full = kernel_sums(Q, X, V, [head], sample_weight=w, **params)[0]
    sub = {}
    if loo:
        sub = {**params, "self_index": np.searchsorted(rows, own)}
        sub["self_weight"] = None if kept is None else kept[rows]
    part = kernel_sums(
        Q,
        X[rows],
        V[rows],
        [head],
        sample_weight=None if w is None else w[rows],
        **sub,
    )[0]
    filled = full[1] > 0
    assert_array_equal(part[1] > 0, filled)
    with np.errstate(invalid="ignore", divide="ignore"):
        assert_allclose(
            part[0][filled] / part[1][filled, None],
            full[0][filled] / full[1][filled, None],
            rtol=1e-12,
            atol=1e-13,
        )


def test_the_windows_of_the_formulas():
    # Uniform inputs, small bandwidths: each query keeps the points within
    # h sqrt(u0**2 + 2 (750 + log n)) (the Gaussian) or h (the Epanechnikov's
    # support), u0 its nearest point in bandwidths.
    n, h = 20000, 0.0005
    X = np.random.default_rng(2).uniform(0.0, 1.0, (n, 1))
    Q = np.array([[0.1], [0.5], [0.9], [1.2]])
    D = np.abs(Q - X[:, 0])
    u0 = D.min(axis=1) / h
    for kernel, reach in [
        (Gaussian(), h * np.sqrt(u0**2 + 2.0 * (750.0 + np.log(n)))),
        (Epanechnikov(), np.full(4, h)),
    ]:
        rows, empty = line_support(Q, X, Head(kernel, h))
        expected = np.flatnonzero(np.any(D <= reach[:, None] * (1 + 1e-9), axis=0))
        assert_array_equal(rows, expected)
        assert rows.size < n / 4
        assert_array_equal(empty, [False] * 3 + [np.isfinite(kernel.support)])


def test_the_reach_grows_with_the_weights_spread_and_the_count():
    # margin = MARGIN + log n + log(w_max / w_min): a heavier far point is
    # kept as long as it could weigh exp(-MARGIN) of the nearest.
    X = np.linspace(0.0, 100.0, 1001)[:, None]
    Q = np.array([[0.0]])
    head = Head(Gaussian(), 1.0)
    plain, _ = line_support(Q, X, head)
    w = np.ones(X.shape[0])
    w[-1] = 1e200
    heavy, _ = line_support(Q, X, head, sample_weight=w)
    assert plain.size < heavy.size
    reach = np.sqrt(2.0 * (750.0 + np.log(1001.0)))
    assert plain.max() == np.searchsorted(X[:, 0], reach, side="right") - 1


def test_a_point_left_out_with_none_of_its_weight_does_not_set_the_reach():
    X = np.array([[0.0], [10.0], [100.0]])
    head = Head(Epanechnikov(), 1.0)
    own = np.array([0])
    rows, empty = line_support(X[:1], X, head, exclude_self=True, self_index=own)
    assert empty[0]  # the nearest other point is 10 bandwidths away
    assert_array_equal(rows, [0])
    kept = np.array([1.0, 0.0, 0.0])
    rows, empty = line_support(
        X[:1],
        X,
        head,
        exclude_self=True,
        self_index=own,
        self_weight=kept,
        sample_weight=np.array([2.0, 1.0, 1.0]),
    )
    assert not empty[0]


def test_scale_and_the_metric_of_the_line():
    X, V, w = _data(3, n=500)
    Q = X[:5]
    head = Head(Gaussian(), 0.5)
    rows, _ = line_support(Q, X, Head(Gaussian(), 0.01))
    scaled, _ = line_support(Q, X, head, scale=np.array([0.02]))
    assert_array_equal(rows, scaled)
    for metric, params in [("cityblock", None), ("minkowski", {"p": 3})]:
        got, _ = line_support(
            Q, X, Head(Gaussian(), 0.01), metric=metric, metric_params=params
        )
        assert_array_equal(got, rows)


class _Bump(Kernel):
    support = np.inf

    def __call__(self, u):
        return np.exp(-(u**4))


@pytest.mark.parametrize(
    "case",
    [
        "two features",
        "cauchy",
        "user kernel",
        "cosine",
        "weighted minkowski",
        "per query",
        "discrete",
        "not finite",
    ],
)
def test_undecided_requests_give_none(case):
    X = np.linspace(0.0, 1.0, 50)[:, None]
    Q, head, kw = X[:3], Head(Gaussian(), 0.1), {}
    if case == "two features":
        X, Q = np.hstack([X, X]), np.hstack([Q, Q])
    elif case == "cauchy":
        head = Head(Cauchy(), 0.1)
    elif case == "user kernel":
        head = Head(_Bump(), 0.1)
    elif case == "cosine":
        kw = {"metric": "cosine"}
    elif case == "weighted minkowski":
        kw = {"metric": "minkowski", "metric_params": {"p": 2, "w": [2.0]}}
    elif case == "per query":
        head = Head(Gaussian(), np.full(3, 0.1))
    elif case == "discrete":
        factors = DiscreteFactors((1,), (0,), (None,), (2,), (0.5,), (True,))
        head = DiscreteHead(Head(Gaussian(), 0.1), factors)
    else:
        Q = np.array([[0.5], [np.nan], [0.2]])
    assert line_support(Q, X, head, **kw) == (None, None)


def test_no_point_of_positive_weight_keeps_every_point():
    X = np.linspace(0.0, 1.0, 20)[:, None]
    rows, empty = line_support(
        X[:2], X, Head(Gaussian(), 0.01), sample_weight=np.zeros(20)
    )
    assert_array_equal(rows, np.arange(20))
    assert not empty.any()


def _reference_moments(Q, C, X, V, head, powers, w=None, own=None, kept=None):
    """The moments of :func:`line_moments` from the definitions, over every
    point, in extended precision: shifted by each query's largest log
    weight over the points of positive weight (without itself where it
    keeps none of its weight)."""
    h = head.divisor
    L = _log_terms(Q, X, head, w, own, kept)
    weight = np.ones(X.shape[0]) if w is None else w
    W = np.broadcast_to(weight, L.shape).astype(np.longdouble).copy()
    if own is not None:
        W[np.arange(own.size), own] = 0.0 if kept is None else kept[own]
    M = L.max(axis=1)
    M = np.where(np.isfinite(M), M, 0.0)
    E = np.exp((L - M[:, None]).astype(np.longdouble)) * W
    z = (X[:, 0][None, :] - C[:, None]).astype(np.longdouble) / h
    Vx = np.column_stack([V, np.ones(X.shape[0])]).astype(np.longdouble)
    return np.stack([(E * z**j) @ Vx for j in range(powers + 1)], axis=1)


@settings(max_examples=30, deadline=None)
@_PROBLEMS
def test_line_moments_equal_the_definitions_within_their_bound(
    kernel, seed, h, loo, weighted
):
    X, V, w = _data(seed, n=1500, zeros=weighted)
    rng = np.random.default_rng(seed + 2)
    head = Head(kernel, h)
    Q, own, kept, params = _queries(X, w, rng, 20, loo)
    C = Q[:, 0] + rng.normal(0.0, 3 * h, 20)
    moments, offsets = line_moments(Q, C, X, V, head, 2, sample_weight=w, **params)
    want = _reference_moments(Q, C, X, V, head, 2, w, own, kept)
    assert_allclose(offsets, (Q[:, 0] - C) / h, rtol=1e-14, atol=1e-14)
    got = moments.sums
    vmax = np.max(np.abs(V))
    err = np.abs(got - want).astype(float)
    # The weight column within its bound, the others within it times the
    # largest |v| (the bound is finite: no point at a compact edge here).
    finite = np.isfinite(moments.bound)
    assert np.all(err[..., -1][finite] <= moments.bound[finite])
    assert np.all(err[..., :-1][finite] <= (moments.bound * vmax)[finite][:, None])
    assert finite.mean() > 0.9
    if np.isfinite(kernel.support):
        L = _log_terms(Q, X, head, w, own, kept)
        assert_array_equal(moments.counts, np.sum(np.isfinite(L), axis=1))
    else:
        assert moments.counts is None


def test_line_moments_about_their_centres_give_a_window_s_variance():
    # A one-sided window far from its query: about its mean, the variance
    # keeps its digits (about the query it would cancel).
    X = np.array([[10.0], [10.001], [10.002], [0.0]])
    V = np.zeros((4, 1))
    head = Head(Gaussian(), 0.01)
    Q = np.array([[9.8]])
    moments, offsets = line_moments(Q, np.array([10.001]), X, V, head, 2)
    S = moments.sums[0, :, -1]
    mean, second = S[1] / S[0], S[2] / S[0]
    # Weights exp(-u**2 / 2) at u = 20, 20.1, 20.2 relative to the first.
    u = np.array([20.0, 20.1, 20.2])
    p = np.exp(-(u**2 - 400.0) / 2)
    z = np.array([-0.1, 0.0, 0.1])
    assert_allclose(mean, p @ z / p.sum(), rtol=1e-12)
    assert_allclose(
        second - mean**2, p @ (z - p @ z / p.sum()) ** 2 / p.sum(), rtol=1e-10
    )
    assert_allclose(offsets, [-20.1], rtol=1e-14)


def test_line_moments_leave_long_windows_and_compact_edges_unbounded():
    X = np.linspace(0.0, 1.0, 1001)[:, None]
    V = X.copy()
    Q = np.array([[0.5003], [0.9003]])  # no point at a window's edge
    moments, _ = line_moments(
        Q, Q[:, 0], X, V, Head(Epanechnikov(), 0.01), 2, budget=40 * 10
    )
    assert np.all(np.isfinite(moments.bound))  # windows of 20 points
    moments, _ = line_moments(
        Q, Q[:, 0], X, V, Head(Epanechnikov(), 0.1), 2, budget=40 * 10
    )
    assert np.all(np.isinf(moments.bound))  # 200 points each: beyond
    # A point of positive weight at the support's edge (0.5 + 0.01 = 0.51).
    moments, _ = line_moments(
        np.array([[0.5]]), np.array([0.5]), X, V, Head(Boxcar(), 0.01), 2
    )
    assert np.all(np.isinf(moments.bound))
    moments, _ = line_moments(
        np.array([[0.5005]]), np.array([0.5]), X, V, Head(Boxcar(), 0.01), 2
    )
    assert np.all(np.isfinite(moments.bound))
    assert_array_equal(moments.counts, [20])


def test_line_moments_follow_the_sorted_order_given():
    X, V, w = _data(7, n=800)
    Q = X[:10]
    head = Head(Gaussian(), 0.02)
    order = np.argsort(X[:, 0], kind="stable")
    a, _ = line_moments(Q, Q[:, 0], X, V, head, 2, sample_weight=w)
    b, _ = line_moments(Q, Q[:, 0], X, V, head, 2, sample_weight=w, order=order)
    assert_array_equal(a.sums, b.sums)
    # Each query's moments do not depend on the others'.
    one = np.vstack(
        [
            line_moments(Q[i : i + 1], Q[i, :1], X, V, head, 2, sample_weight=w)[0].sums
            for i in range(10)
        ]
    )
    assert_allclose(one, a.sums, rtol=1e-15, atol=0)


def test_line_moments_undecided_requests_give_none():
    X = np.linspace(0.0, 1.0, 50)[:, None]
    V = X.copy()
    assert line_moments(X[:2], X[:2, 0], X, V, Head(Cauchy(), 0.1), 2) == (None, None)
    C = np.array([0.5, np.inf])
    assert line_moments(X[:2], C, X, V, Head(Gaussian(), 0.1), 2) == (None, None)


def test_an_isolated_point_left_out_reaches_its_nearest_other_point():
    # Left out of its own sums, a point 50 bandwidths from the others takes
    # its reach from them (its own distance, 0, would stop it at 39).
    X = np.array([[0.0], [50.0], [50.1], [-70.0]])
    V = X.copy()
    head = Head(Gaussian(), 1.0)
    own = np.array([0])
    rows, _ = line_support(X[:1], X, head, exclude_self=True, self_index=own)
    assert_array_equal(rows, [0, 1, 2])
    moments, _ = line_moments(
        X[:1], X[:1, 0], X, V, head, 2, exclude_self=True, self_index=own
    )
    want = _reference_moments(X[:1], X[:1, 0], X, V, head, 2, own=own)
    assert_allclose(moments.sums, want.astype(float), rtol=1e-13)
    assert_allclose(moments.sums[0, 0, -1], 1.0 + np.exp(-(50.1**2 - 50.0**2) / 2))


@pytest.mark.parametrize("kernel", [Gaussian(), Laplacian()])
def test_the_terms_beyond_the_truncation_are_within_the_bound(kernel):
    # A margin of 2 leaves out terms that weigh: the bound holds them.
    X, V, w = _data(11, n=1500)
    Q = np.array([[-4.0], [0.0], [0.3], [7.0]])
    C = Q[:, 0] + np.array([0.05, -0.02, 0.0, -1.0])
    head = Head(kernel, 0.05)
    with TRUNCATION.set(2.0):
        moments, _ = line_moments(Q, C, X, V, head, 2, sample_weight=w)
    want = _reference_moments(Q, C, X, V, head, 2, w)
    err = np.abs(moments.sums - want).astype(float)
    rounding = 1e-12 * np.abs(want).astype(float).max(axis=2)
    assert np.any(err[..., -1] > rounding)  # terms were left out
    assert np.all(err[..., -1] <= moments.bound)
    assert np.all(err[..., :-1] <= (moments.bound * np.abs(V).max())[..., None])


@pytest.mark.parametrize("kernel", [Gaussian(), Tricube(), Boxcar()])
def test_a_divisor_per_query_gives_each_query_s_own_moments(kernel):
    X, V, w = _data(12, n=1200)
    Q = X[[3, 50, 700, 900]]
    C = Q[:, 0] + 0.01
    own = np.array([3, 50, 700, 900])
    h = np.array([0.01, 0.05, 0.2, 0.05])
    kept = w - np.minimum(w, 1.0)
    kw = {"sample_weight": w, "exclude_self": True, "self_weight": kept}
    rows, offsets = line_moments(Q, C, X, V, Head(kernel, h), 2, self_index=own, **kw)
    for i in range(4):
        one, off = line_moments(
            Q[i : i + 1],
            C[i : i + 1],
            X,
            V,
            Head(kernel, h[i]),
            2,
            self_index=own[i : i + 1],
            **kw,
        )
        assert_allclose(rows.sums[i], one.sums[0], rtol=1e-14, atol=0)
        assert_allclose(rows.bound[i], one.bound[0], rtol=1e-14)
        assert_allclose(offsets[i], off[0], rtol=1e-15)
    assert_array_equal(rows.unit, h)
