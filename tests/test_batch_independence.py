"""A query's answer does not depend on the other queries of its batch: split,
permuted and duplicated batches give every query the same answer, for every
estimator, algorithm and method."""

import warnings
from functools import partial

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from sknw import (
    LocalLinearRegressor,
    LocalPolynomialRegressor,
    NadarayaWatsonClassifier,
    NadarayaWatsonRegressor,
    NadarayaWatsonRegressorCV,
)

# (estimator, kernel, algorithm, number of features)
SETUPS = [
    (NadarayaWatsonRegressor, "gaussian", "brute", 1),
    (NadarayaWatsonRegressor, "gaussian", "brute", 3),
    (NadarayaWatsonRegressor, "laplacian", "brute", 2),
    (NadarayaWatsonRegressor, "epanechnikov", "tree", 2),
    (NadarayaWatsonRegressor, "epanechnikov", "sorted", 1),
    (NadarayaWatsonRegressor, "boxcar", "sorted", 1),
    (NadarayaWatsonRegressor, "gaussian", "fgt", 1),
    (NadarayaWatsonRegressor, "gaussian", "binned", 1),
    (NadarayaWatsonRegressor, "gaussian", "tiles", 3),
    (NadarayaWatsonClassifier, "gaussian", "brute", 2),
    (NadarayaWatsonClassifier, "epanechnikov", "sorted", 1),
    (NadarayaWatsonClassifier, "gaussian", "fgt", 1),
    (LocalLinearRegressor, "gaussian", "brute", 2),
    (LocalLinearRegressor, "epanechnikov", "tree", 1),
    (LocalLinearRegressor, "epanechnikov", "sorted", 1),
    (LocalLinearRegressor, "gaussian", "fgt", 1),
    (LocalLinearRegressor, "gaussian", "tiles", 2),
    (NadarayaWatsonRegressorCV, "gaussian", "auto", 1),
    (partial(LocalPolynomialRegressor, degree=2), "tricube", "sorted", 1),
    (partial(LocalPolynomialRegressor, degree=3), "gaussian", "fgt", 1),
    (partial(LocalPolynomialRegressor, degree=2, span=0.2), "tricube", "sorted", 1),
    (partial(NadarayaWatsonRegressor, span=0.3), "tricube", "sorted", 1),
    (partial(NadarayaWatsonRegressor, span=0.3), "gaussian", "brute", 2),
]


def _methods(est):
    if isinstance(est, NadarayaWatsonClassifier):
        return ["predict_proba", "attention_weights"]
    return [
        "predict",
        "standard_error",
        "effective_sample_size",
        "attention_weights",
        "gradient",
    ]


@st.composite
def batches(draw):
    setup = draw(st.sampled_from(SETUPS))
    seed = draw(st.integers(0, 2**16))
    m = draw(st.integers(1, 40))
    per_feature = draw(st.booleans())
    # A permutation with repeats, cut into pieces.
    picks = draw(st.lists(st.integers(0, m - 1), min_size=1, max_size=60))
    cuts = sorted(draw(st.lists(st.integers(1, len(picks)), max_size=4)))
    float32 = draw(st.booleans())
    return setup, seed, m, per_feature, picks, cuts, float32


@settings(max_examples=40)
@given(batches())
def test_answers_do_not_depend_on_the_batch(problem):
    (make, kernel, algorithm, d), seed, m, per_feature, picks, cuts, f32 = problem
    rng = np.random.default_rng(seed)
    n = 700 if algorithm in ("sorted", "fgt", "tree", "tiles") else 150
    X = rng.uniform(-2, 2, size=(n, d))
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=n)
    Q = rng.uniform(-2.5, 2.5, size=(m, d))
    if f32:
        X, Q = X.astype(np.float32), Q.astype(np.float32)
    bandwidth = list(np.linspace(0.3, 0.5, d)) if per_feature else 0.4
    if make is NadarayaWatsonRegressorCV:
        est = make(kernels=[kernel], bandwidths=5)
    else:
        est = make(kernel=kernel, bandwidth=bandwidth, algorithm=algorithm)
    target = (y > 0).astype(int) if make is NadarayaWatsonClassifier else y
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, target)
        for method in _methods(est):
            whole = np.asarray(getattr(est, method)(Q), dtype=float)
            batch = Q[picks]
            parts = np.split(batch, cuts)
            pieces = [getattr(est, method)(p) for p in parts if p.shape[0]]
            got = np.concatenate([np.asarray(p, dtype=float) for p in pieces])
            want = whole[picks]
            scale = np.nanmax(np.abs(want), initial=1.0)
            # float32 sums are decided per tile of queries (within their
            # documented bound); float64 ones agree to rounding.
            atol = 2e-4 * max(np.ptp(y), 1.0) if f32 else 1e-12 * scale
            assert_allclose(got, want, rtol=1e-10, atol=atol, equal_nan=True)
