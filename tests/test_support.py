"""The training points that can weigh in a query's sums, in one feature: sums
over them equal the sums over all the points, and every point whose term
is not negligible is among them."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

from sknw._sums import Head, kernel_sums, line_support
from sknw._sums._cells import DiscreteFactors, DiscreteHead
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
@given(
    kernel=st.sampled_from(KERNELS),
    seed=st.integers(0, 2**16),
    h=st.sampled_from([0.003, 0.02, 0.1]),
    loo=st.booleans(),
    weighted=st.booleans(),
)
def test_sums_over_the_support_equal_the_sums_over_all_points(
    kernel, seed, h, loo, weighted
):
    X, V, w = _data(seed, zeros=weighted)
    rng = np.random.default_rng(seed + 1)
    head = Head(kernel, h)
    if loo:
        own = rng.choice(X.shape[0], 25, replace=False)
        Q = X[own]
        kept = None if w is None else w - np.minimum(w, 1.0)
        params = {"exclude_self": True, "self_index": own, "self_weight": kept}
    else:
        own = kept = None
        Q = rng.normal(0.0, 2.0, (25, 1)) ** 3
        params = {}
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
        Q, X[rows], V[rows], [head],
        sample_weight=None if w is None else w[rows], **sub,
    )[0]  # fmt: skip
    filled = full[1] > 0
    assert_array_equal(part[1] > 0, filled)
    with np.errstate(invalid="ignore", divide="ignore"):
        assert_allclose(
            part[0][filled] / part[1][filled, None],
            full[0][filled] / full[1][filled, None],
            rtol=1e-12, atol=1e-13,
        )  # fmt: skip


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
        X[:1], X, head, exclude_self=True, self_index=own, self_weight=kept,
        sample_weight=np.array([2.0, 1.0, 1.0]),
    )  # fmt: skip
    assert not empty[0]


def test_scale_and_the_metric_of_the_line():
    X, V, w = _data(3, n=500)
    Q = X[:5]
    head = Head(Gaussian(), 0.5)
    rows, _ = line_support(Q, X, Head(Gaussian(), 0.01))
    scaled, _ = line_support(Q, X, head, scale=np.array([0.02]))
    assert_array_equal(rows, scaled)
    for metric, params in [("cityblock", None), ("minkowski", {"p": 3})]:
        got, _ = line_support(Q, X, Head(Gaussian(), 0.01), metric=metric,
                              metric_params=params)  # fmt: skip
        assert_array_equal(got, rows)


class _Bump(Kernel):
    support = np.inf

    def __call__(self, u):
        return np.exp(-(u**4))


@pytest.mark.parametrize(
    "case",
    ["two features", "cauchy", "user kernel", "cosine", "weighted minkowski",
     "per query", "discrete", "not finite"],
)  # fmt: skip
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
    rows, empty = line_support(X[:2], X, Head(Gaussian(), 0.01),
                               sample_weight=np.zeros(20))  # fmt: skip
    assert_array_equal(rows, np.arange(20))
    assert not empty.any()
