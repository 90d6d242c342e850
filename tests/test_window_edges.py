"""Windows of compact kernels decided the same way on every path: exactly,
on integer data, where points lie at exactly one bandwidth."""

import warnings
from fractions import Fraction

import numpy as np
import pytest
from _leave_out import weights_without
from hypothesis import example, given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

from sknw import (
    LocalLinearRegressor,
    LocalLinearRegressorCV,
    NadarayaWatsonRegressor,
    NadarayaWatsonRegressorCV,
)
from sknw.kernels import get_kernel

KERNELS = ["boxcar", "epanechnikov", "triangular", "biweight"]


def exact_weights(Q, X, kernel, h, metric):
    """Kernel weights from exact integer distances: the boxcar's open window
    ``d < h`` compared on integers (squared for the euclidean metric)."""
    diff = np.abs(Q[:, None, :] - X[None, :, :])
    if metric == "euclidean":
        d2 = (diff**2).sum(axis=2)
        inside = d2 < h * h
        d = np.sqrt(d2)
    else:
        d = diff.sum(axis=2) if metric == "cityblock" else diff.max(axis=2)
        inside = d < h
    if kernel == "boxcar":
        return inside.astype(float)
    return np.where(inside, get_kernel(kernel)(np.minimum(d / h, 1.0)), 0.0)


def average(W, y):
    with np.errstate(invalid="ignore", divide="ignore"):
        return (W @ y) / W.sum(axis=1)


@st.composite
def integer_problems(draw):
    d = draw(st.integers(1, 2))
    n = draw(st.integers(2, 30))
    values = st.integers(-6, 6)
    X = np.array(
        draw(
            st.lists(st.lists(values, min_size=d, max_size=d), min_size=n, max_size=n)
        ),
        dtype=float,
    )
    Q = np.array(
        draw(
            st.lists(st.lists(values, min_size=d, max_size=d), min_size=1, max_size=12)
        ),
        dtype=float,
    )
    y = np.array(
        draw(st.lists(st.integers(-5, 5), min_size=n, max_size=n)), dtype=float
    )
    h = float(draw(st.integers(1, 7)))
    kernel = draw(st.sampled_from(KERNELS))
    metric = draw(st.sampled_from(["euclidean", "cityblock", "chebyshev"]))
    return X, y, Q, h, kernel, metric


def _quietly(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


# Points at exactly one bandwidth (the reproducers of a rounded ratio d / h).
EDGE_CASES = [
    (np.array([[0.0], [7.0]]), np.array([0.0, 1.0]), np.array([[0.0]]), 7.0),
    (
        np.array([[0.0], [7.0], [1.0]]),
        np.array([0.0, 10.0, 0.0]),
        np.array([[0.0]]),
        7.0,
    ),
    (np.array([[4.0], [0.0]]), np.array([0.0, 1.0]), np.array([[1.0], [3.0]]), 3.0),
    (
        np.array([[0.0, 0.0], [3.0, 0.0], [0.0, 5.0]]),
        np.array([1.0, 2.0, 4.0]),
        np.array([[0.0, 0.0], [3.0, 5.0]]),
        5.0,
    ),
]


def _with_edge_cases(test):
    for X, y, Q, h in EDGE_CASES:
        for kernel in ("boxcar", "epanechnikov"):
            for metric in ("euclidean", "cityblock"):
                test = example((X, y, Q, h, kernel, metric))(test)
    return settings(max_examples=60)(test)


@_with_edge_cases
@given(integer_problems())
def test_every_path_agrees_with_exact_windows(problem):
    X, y, Q, h, kernel, metric = problem
    W = exact_weights(Q, X, kernel, h, metric)
    expected = average(W, y)
    d = X.shape[1]
    algorithms = ["brute", "tree"] + (["sorted"] if d == 1 else [])
    for algorithm in algorithms:
        for bandwidth in (h, [h] * d):
            reg = NadarayaWatsonRegressor(
                kernel=kernel,
                bandwidth=bandwidth,
                metric=metric,
                algorithm=algorithm,
                empty_window="nan",
            ).fit(X, y)
            pred = _quietly(reg.predict, Q)
            assert_array_equal(np.isnan(pred), np.isnan(expected))
            ok = ~np.isnan(expected)
            assert_allclose(pred[ok], expected[ok], rtol=1e-12, atol=1e-12)
            A = _quietly(reg.attention_weights, Q)
            with np.errstate(invalid="ignore", divide="ignore"):
                A_ref = W / W.sum(axis=1, keepdims=True)
            assert_allclose(A[ok], A_ref[ok], rtol=1e-12, atol=1e-15)


@_with_edge_cases
@given(integer_problems())
def test_leave_one_out_scores_use_the_same_windows(problem):
    X, y, _, h, kernel, metric = problem
    W = exact_weights(X, X, kernel, h, metric)
    # Each point left out with its copies (see sknw._selection.weights).
    left = np.array([weights_without(X, y, None, i) for i in range(y.size)])
    W = W * left
    loo = average(W, y)
    cv = NadarayaWatsonRegressorCV(
        kernels=[kernel], bandwidths=[h], metric=metric, empty_window="mean"
    )
    _quietly(cv.fit, X, y)
    # Empty leave-one-out windows take the mean of the other points.
    others = left @ y / left.sum(axis=1)
    loo = np.where(np.isnan(loo), others, loo)
    assert_allclose(cv.best_score_, -np.mean((loo - y) ** 2), rtol=1e-10, atol=1e-12)


# -- windows of non-integer grids, decided in exact arithmetic -----------------


def exact_window_counts(Q, X, h):
    """Points with ``|q - x| < h`` in exact rational arithmetic."""
    hq = Fraction(h)
    return np.array(
        [sum(abs(Fraction(q) - Fraction(x)) < hq for x in X[:, 0]) for q in Q[:, 0]]
    )


@pytest.mark.parametrize("h", [0.2, 0.3, 0.7])
def test_sorted_boxcar_windows_on_a_decimal_grid_are_exact(h):
    # Points 0.1 apart (rounded) and bandwidths a multiple of that step: many
    # points lie within an ulp of a window's edge; the sorted path decides
    # them exactly, as the definition (rounded offsets from the median kept
    # some out), for predictions, leave-one-out and local linear fits.
    n = 600
    X = (np.arange(n) * 0.1).reshape(-1, 1)
    y = np.sin(X[:, 0]) + 0.3 * np.random.default_rng(0).normal(size=n)
    Q = X[::7] + np.array([[0.0]])
    counts = exact_window_counts(Q, X, h)
    for make in (NadarayaWatsonRegressor, LocalLinearRegressor):
        fast = make(kernel="boxcar", bandwidth=h, algorithm="sorted").fit(X, y)
        brute = make(kernel="boxcar", bandwidth=h, algorithm="brute").fit(X, y)
        assert_allclose(fast.predict(Q), brute.predict(Q), rtol=1e-12)
    nw = NadarayaWatsonRegressor(kernel="boxcar", bandwidth=h, algorithm="sorted")
    ones = nw.fit(X, np.ones(n))._smoother.kernel_sums(
        Q, np.ones((n, 1)), None, [nw._smoother.head()]
    )
    assert_array_equal(ones[0][1] * np.exp(ones[0][2]), counts)
    for make in (NadarayaWatsonRegressorCV, LocalLinearRegressorCV):
        scores = [
            make(kernels=["boxcar"], bandwidths=[h], algorithm=a)
            .fit(X, y)
            .cv_results_["mean_test_score"]
            for a in ("auto", "brute")
        ]
        assert_allclose(scores[0], scores[1], rtol=1e-12)


@pytest.mark.parametrize("algorithm", ["brute", "auto", "tree"])
def test_a_compact_window_edge_is_decided_on_exact_distances(algorithm):
    # Points exactly one bandwidth from a query: outside its epanechnikov
    # window on every path. Squared distances by a centred product (the
    # mean here is 0.4) round 1 to just below it, which gave the otherwise
    # empty window of (0, -1) two points of weight about 1e-16, and them the
    # whole estimate.
    X = np.array([[0.0, 0.0], [0.0, 1.0], [0.0, -1.0], [0.0, 2.0], [0.0, 0.0]])
    y = np.array([0.0, 0.0, 0.0, 0.0, 1.0])
    cv = NadarayaWatsonRegressorCV(
        kernels=["epanechnikov"],
        bandwidths=[1.0],
        empty_window="mean",
        algorithm=algorithm,
    )
    _quietly(cv.fit, X, y)
    refits = []
    for i in range(5):
        keep = np.arange(5) != i
        fit = NadarayaWatsonRegressor(
            kernel="epanechnikov", bandwidth=1.0, empty_window="mean"
        )
        _quietly(fit.fit, X[keep], y[keep])
        refits.append(_quietly(fit.predict, X[i : i + 1])[0])
    assert_array_equal(cv.cv_results_["n_empty_windows"], [3])
    assert_allclose(cv.best_score_, -np.mean((np.array(refits) - y) ** 2), rtol=1e-12)
