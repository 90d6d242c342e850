"""The core's product kernels, cell by cell, against brute-force sums."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

from sknw._features.discrete import CATEGORICAL_KERNELS, ORDERED_KERNELS
from sknw._sums import FitRequest, Head, backend_sums, choose, grid_sums
from sknw._sums._cells import (
    CELL_ROWS,
    DIRECT_PAIRS,
    FEW_CELLS,
    CellIndex,
    CellPartition,
    DiscreteFactors,
    DiscreteHead,
    cell_nearest_sums,
    discrete_of,
    many_cells,
)
from sknw._trace import traced
from sknw.kernels import get_kernel


@pytest.fixture(params=["cells", "direct"])
def path(request):
    """Each cell a request of its own, or every pair directly."""
    if request.param == "cells":
        with FEW_CELLS.set(10**9), DIRECT_PAIRS.set(0):
            yield request.param
    else:
        with FEW_CELLS.set(0), CELL_ROWS.set(10**9):
            yield request.param


def _data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack(
        [
            rng.uniform(0, 1, n),
            rng.integers(0, 3, n),
            rng.integers(0, 4, n),
            rng.uniform(0, 1, n),
        ]
    ).astype(float)
    V = np.column_stack([np.sin(5 * X[:, 0]) + X[:, 1], X[:, 2]])
    return X, V


def _factors(lambdas=(0.3, 0.4), power=1):
    return DiscreteFactors(
        columns=(1, 2),
        continuous=(0, 3),
        kernels=(
            CATEGORICAL_KERNELS["aitchison_aitken"],
            ORDERED_KERNELS["wang_ryzin"],
        ),
        levels=(3, 4),
        lambdas=lambdas,
        coded=(True, False),
        power=power,
    )


def _brute(Q, X, V, kernel, h, lambdas, w=None, loo=False, power=1):
    """Shift-free reference sums of the product kernel."""
    d = np.sqrt(((Q[:, None, [0, 3]] - X[None, :, [0, 3]]) ** 2).sum(-1)) / h
    K = np.asarray(kernel(d.ravel())).reshape(d.shape)
    lu, lo = lambdas
    F = np.where(Q[:, None, 1] == X[None, :, 1], 1 - lu, lu / 2)
    t = np.abs(Q[:, None, 2] - X[None, :, 2])
    F = F * np.where(t == 0, 1 - lo, 0.5 * (1 - lo) * lo**t)
    W = K * F**power
    if w is not None:
        W = W * w
    if loo:
        np.fill_diagonal(W, 0.0)
    return W @ V, W.sum(axis=1)


@pytest.mark.parametrize(
    "kernel_name", ["gaussian", "epanechnikov", "cosine", "silverman"]
)
def test_backend_sums_equal_brute(kernel_name, path):
    X, V = _data()
    kernel = get_kernel(kernel_name)
    head = DiscreteHead(Head(kernel, 0.2), _factors())
    Q = X[:50] + np.array([0.01, 0, 0, -0.02])
    params = {"metric": "euclidean", "metric_params": None}
    ((S, den, M),) = backend_sums("brute", None, Q, X, V, [head], **params)
    S_ref, den_ref = _brute(Q, X, V, kernel, 0.2, (0.3, 0.4))
    scale = np.exp(M)
    assert_allclose(S * scale[:, None], S_ref, rtol=1e-12, atol=1e-300)
    assert_allclose(den * scale, den_ref, rtol=1e-12, atol=1e-300)


def leave_one_out_case():
    """Leave-one-out sums of some points that keep part of their weight,
    with weights of 0 among the others: ``(X, V, head, params, own, S_ref,
    den_ref)``, the brute-force sums of the queries ``X[own]``."""
    X, V = _data(200)
    w = np.random.default_rng(1).uniform(0, 2, X.shape[0])
    w[::7] = 0.0
    kept = np.maximum(w - 1.0, 0.0)
    kernel = get_kernel("gaussian")
    head = DiscreteHead(Head(kernel, 0.1), _factors((0.1, 0.2)))
    own = np.arange(0, 200, 3)
    params = {
        "metric": "euclidean",
        "metric_params": None,
        "sample_weight": w,
        "exclude_self": True,
        "self_index": own,
        "self_weight": kept,
    }
    S_ref, den_ref = _brute(X, X, V, kernel, 0.1, (0.1, 0.2), w=w, loo=True)
    # The share of its own term each point keeps (every level matched).
    own_term = float(kernel(np.zeros(1))[0]) * (1 - 0.1) * (1 - 0.2) * kept
    S_ref = S_ref + own_term[:, None] * V
    den_ref = den_ref + own_term
    return X, V, head, params, own, S_ref[own], den_ref[own]


def test_leave_one_out_and_weights(path):
    X, V, head, params, own, S_ref, den_ref = leave_one_out_case()
    ((S, den, M),) = backend_sums("brute", None, X[own], X, V, [head], **params)
    scale = np.exp(M)
    assert_allclose(den * scale, den_ref, rtol=1e-12)
    assert_allclose(S / den[:, None], S_ref / den_ref[:, None], rtol=1e-12)


def test_heads_share_cells_and_squared_power(path):
    X, V = _data(150)
    kernel = get_kernel("gaussian")
    heads = [
        DiscreteHead(Head(kernel, 0.2), _factors((lu, 0.3))) for lu in (0.0, 0.2, 2 / 3)
    ] + [DiscreteHead(Head(kernel, 0.1), _factors((0.2, 0.3), power=2))]
    params = {"metric": "euclidean", "metric_params": None}
    got = grid_sums("auto", ("auto", "brute"), X[:40], X, V, heads, **params)
    for head, (S, den, _) in zip(heads, got, strict=True):
        f = head.factors
        S_ref, den_ref = _brute(
            X[:40], X, V, kernel, head.divisor, f.lambdas, power=f.power
        )
        assert_allclose(S / den[:, None], S_ref / den_ref[:, None], rtol=1e-12)


def test_zero_lambda_splits_cells(path):
    X, V = _data(120)
    kernel = get_kernel("epanechnikov")
    head = DiscreteHead(Head(kernel, 0.5), _factors((0.0, 0.0)))
    params = {"metric": "euclidean", "metric_params": None}
    ((S, den, M),) = backend_sums("brute", None, X[:10], X, V, [head], **params)
    for i in range(10):
        same = (X[:, 1] == X[i, 1]) & (X[:, 2] == X[i, 2])
        d = np.linalg.norm(X[same][:, [0, 3]] - X[i, [0, 3]], axis=1) / 0.5
        K = kernel(d)
        assert_allclose(S[i] / den[i], K @ V[same] / K.sum(), rtol=1e-12)


def test_fitted_cell_indexes_serve_and_match():
    rng = np.random.default_rng(0)
    n = 5000
    X = np.column_stack([rng.uniform(0, 1, n), rng.integers(0, 3, n)]).astype(float)
    V = np.sin(7 * X[:, :1]) + X[:, 1:]
    factors = DiscreteFactors(
        (1,), (0,), (CATEGORICAL_KERNELS["li_racine"],), (3,), (0.2,), (True,)
    )
    head = DiscreteHead(Head(get_kernel("epanechnikov"), 0.03), factors)
    request = FitRequest(
        X=X,
        sample_weight=None,
        values=lambda: (V, None),
        head=head,
        scale=None,
        metric="euclidean",
        metric_params=None,
    )
    name, index = choose("auto", ("auto", "sorted", "brute"), request)
    assert isinstance(index, CellIndex)
    assert name == "sorted" and set(index.names) == {"sorted"}
    params = {"metric": "euclidean", "metric_params": None}
    fast = backend_sums(name, index, X[:300], X, V, [head], **params)[0]
    exact = backend_sums("brute", None, X[:300], X, V, [head], **params)[0]
    assert_allclose(
        fast[0] * np.exp(fast[2])[:, None],
        exact[0] * np.exp(exact[2])[:, None],
        rtol=1e-10,
    )


def test_partition():
    X, _ = _data(100)
    part = CellPartition(X, _factors())
    assert sum(r.size for r in part.rows) == 100
    for c, rows in enumerate(part.rows):
        assert np.all(X[rows][:, [1, 2]] == part.levels[c])
        assert np.all(part.cell_of[rows] == c)


def test_nearest_among_positive_factors():
    X, V = _data(80)
    f = _factors((0.0, 0.5))
    Q = X[:5] + np.array([0.003, 0, 0, 0])
    S, den, none = cell_nearest_sums(Q, X, V, f, metric="euclidean", metric_params=None)
    assert not none.any()
    for i in range(5):
        ok = X[:, 1] == Q[i, 1]
        d = np.linalg.norm(X[:, [0, 3]] - Q[i, [0, 3]], axis=1)
        d[~ok] = np.inf
        near = d == d.min()
        t = np.abs(X[near, 2] - Q[i, 2])
        F = np.where(t == 0, 0.5, 0.25 * 0.5**t)
        assert_allclose(S[i] / den[i], F @ V[near] / F.sum(), rtol=1e-12)


def test_discrete_heads_are_all_or_none():
    head = Head(get_kernel("gaussian"), 1.0)
    assert discrete_of([head]) is None
    with pytest.raises(ValueError, match="all discrete or none"):
        discrete_of([head, DiscreteHead(head, _factors())])


def test_pair_by_pair_shift_is_decided_per_query():
    X, V = _data(120)
    head = DiscreteHead(Head(get_kernel("gaussian"), 0.002), _factors((0.3, 0.4)))
    params = {"metric": "euclidean", "metric_params": None}
    # Far queries need each run's own shift; near ones do not.
    Q = np.vstack([X[:5], X[5:8] + np.array([3.0, 0, 0, 3.0])])
    with FEW_CELLS.set(0), CELL_ROWS.set(10**9):
        ((S, den, M),) = backend_sums("brute", None, Q, X, V, [head], **params)
        for i in range(Q.shape[0]):
            ((s, d, m),) = backend_sums(
                "brute", None, Q[i : i + 1], X, V, [head], **params
            )
            np.testing.assert_array_equal(S[i] / den[i], s[0] / d[0])


def test_few_queries_are_summed_pair_by_pair():
    """A few queries (points to recompute, say) take one direct pass rather
    than a request per cell, with the same sums."""
    X, V = _data(300)
    head = DiscreteHead(Head(get_kernel("gaussian"), 0.2), _factors())
    params = {"metric": "euclidean", "metric_params": None}
    assert not many_cells(CellPartition(X, _factors()))
    with traced() as trace:
        few = backend_sums("brute", None, X[:5], X, V, [head], **params)[0]
    # The queries of each direct pass.
    assert trace.values("direct_sums", "n_queries") == [5]
    with DIRECT_PAIRS.set(0), traced() as trace:
        cells = backend_sums("brute", None, X[:5], X, V, [head], **params)[0]
    assert trace.values("direct_sums", "n_queries") == []  # cell by cell
    assert_allclose(few[1] * np.exp(few[2] - cells[2]), cells[1], rtol=1e-12)
    assert_allclose(few[0] / few[1][:, None], cells[0] / cells[1][:, None], rtol=1e-12)
