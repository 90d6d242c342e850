"""Extra memory of predictions: their output plus a bounded working set,
whatever the number of queries (measured with tracemalloc, not timed)."""

import tracemalloc
import warnings

import numpy as np
import pytest
import sklearn

from sknw import LocalLinearRegressor, NadarayaWatsonClassifier, NadarayaWatsonRegressor


def extra_memory(fn):
    """Peak memory allocated while ``fn`` runs, beyond what it returns."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn()
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    arrays = out if isinstance(out, tuple) else (out,)
    return peak - sum(a.nbytes for a in arrays)


CASES = [
    (NadarayaWatsonRegressor, "predict", {}),
    (NadarayaWatsonRegressor, "predict", {"return_std": True}),
    (NadarayaWatsonRegressor, "standard_error", {}),
    (NadarayaWatsonRegressor, "predict_interval", {}),
    (NadarayaWatsonRegressor, "effective_sample_size", {}),
    (NadarayaWatsonClassifier, "predict_proba", {}),
    (NadarayaWatsonClassifier, "predict", {}),
    (LocalLinearRegressor, "predict", {}),
    (LocalLinearRegressor, "predict", {"return_std": True}),
]


@pytest.mark.parametrize(("make", "method", "kwargs"), CASES)
def test_extra_memory_does_not_grow_with_the_queries(make, method, kwargs):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6, 3))
    y = X[:, 0] + 0.1 * rng.normal(size=6)
    target = (y > 0).astype(int) if make is NadarayaWatsonClassifier else y
    est = make(bandwidth=2.0).fit(X, target)
    small, large = rng.normal(size=(40_000, 3)), rng.normal(size=(160_000, 3))
    extra_small = extra_memory(lambda: getattr(est, method)(small, **kwargs))
    extra_large = extra_memory(lambda: getattr(est, method)(large, **kwargs))
    # Four times the queries: the same working set (one batch), not four
    # times the per-query temporaries (over 100 bytes per query before).
    assert extra_large <= extra_small + 2 * 2**20
    assert extra_large <= 64 * 2**20


@pytest.mark.parametrize("levels", [3, 40], ids=["cells", "pair_by_pair"])
def test_discrete_features_memory_does_not_grow_with_the_queries(levels):
    rng = np.random.default_rng(0)
    n = 200
    X = np.column_stack([rng.normal(size=(n, 2)), rng.integers(0, levels, n)])
    y = X[:, 0] + X[:, 2] % 2
    est = NadarayaWatsonRegressor(
        bandwidth=[1.0, 1.0, 0.3], categorical_features=[2]
    ).fit(X, y)

    def queries(m):
        return np.column_stack([rng.normal(size=(m, 2)), rng.integers(0, levels, m)])

    small, large = queries(40_000), queries(160_000)
    extra_small = extra_memory(lambda: est.predict(small))
    extra_large = extra_memory(lambda: est.predict(large))
    assert extra_large <= extra_small + 2 * 2**20
    assert extra_large <= 64 * 2**20


@pytest.mark.parametrize("local", [False, True])
def test_binned_grid_within_working_memory(local):
    # Many columns (20 classes' indicators, or local moments of 20 outputs)
    # on a grid of about 10**5 nodes: convolved in groups of columns within
    # working_memory, whatever their number (about 70 MB at once before).
    rng = np.random.default_rng(1)
    n, k = 2000, 20
    X = rng.uniform(0.0, 1.0, (n, 1))
    Q = rng.uniform(0.0, 1.0, (500, 1))
    if local:
        Y = rng.normal(size=(n, k))
        est = LocalLinearRegressor(bandwidth=0.05, algorithm="binned").fit(X, Y)
        method = est.predict
    else:
        labels = rng.integers(0, k, n)
        est = NadarayaWatsonClassifier(bandwidth=0.02, algorithm="binned")
        method = est.fit(X, labels).predict_proba
    with sklearn.config_context(working_memory=16):
        extra = extra_memory(lambda: method(Q))
        grouped = method(Q)
    # The same estimates as with every column at once.
    np.testing.assert_allclose(grouped, method(Q), rtol=0, atol=1e-12)
    inputs = 16 * n * (k + 1) + 8 * Q.shape[0] * (k + 1) * 5  # columns, sums
    assert extra <= 16 * 2**20 + inputs + 2**20
    # A grid whose one column would not fit is refused.
    with sklearn.config_context(working_memory=0.01):
        with pytest.raises(ValueError, match="working_memory"):
            type(est)(bandwidth=0.02, algorithm="binned").fit(X, Y if local else labels)
