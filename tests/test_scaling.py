"""One scaling of the data for fitting and for the cross-validation passes."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from sknw import (
    NadarayaWatsonClassifierCV,
    NadarayaWatsonRegressor,
    NadarayaWatsonRegressorCV,
)
from sknw._bandwidth.scaling import group_candidates, scaling_of, scalings
from sknw._selection.candidate import Candidate
from sknw._sums import Head, kernel_sums
from sknw._sums._base import Frame, scale_of
from sknw.kernels import Gaussian


def _data(n=60, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * np.array([1.0, 30.0, 0.01])[:d]
    y = np.sin(X[:, 0]) + X[:, 1] / 30 + 0.1 * rng.normal(size=n)
    return X, y


@pytest.mark.parametrize("metric", ["euclidean", "cityblock", "sqeuclidean"])
@pytest.mark.parametrize("per_feature", [False, True])
def test_scaling_divides_the_data_by_the_bandwidth(metric, per_feature):
    X, _ = _data()
    degree = 2 if metric == "sqeuclidean" else 1
    bandwidths = [np.array([0.3, 9.0, 0.004]) * c for c in (0.7, 1.0, 2.5)]
    if not per_feature:
        bandwidths = [0.2, 1.7, 40.0]
    for bw, (_, s) in zip(bandwidths, scalings(bandwidths, metric, X), strict=True):
        scale = scale_of(s.scale)
        if per_feature:  # d(x / b, q / b) = d(x / s, q / s) / g
            assert_allclose(scale * s.divisor ** (1 / degree), bw, rtol=1e-14)
            # Measured from the per-feature median of the data.
            assert isinstance(s.scale, Frame)
            assert_array_equal(s.scale.origin, np.median(X, axis=0))
        else:  # d(x, q) / h = d(x / s, q / s) / g
            assert_allclose(scale**degree * s.divisor, bw, rtol=1e-14)
        # The scale is the group's first bandwidth (or 1) times a power of two.
        first = bandwidths[0] if per_feature else 1.0
        ratio = np.log2(scale / first)
        assert_array_equal(ratio, np.round(ratio))
    # Candidates of one shape share their scale (one pass over the distances).
    groups = group_candidates(
        [Candidate(kernel=Gaussian(), bandwidth=b) for b in bandwidths], metric, X
    )
    assert len(groups) == 1


def test_scaling_of_is_a_group_of_one():
    X, _ = _data()
    for bw in (0.5, np.array([0.3, 9.0, 0.004])):
        ((_, alone),) = scalings([bw], "euclidean", X)
        got = scaling_of(bw, "euclidean", X)
        assert_array_equal(scale_of(got.scale), scale_of(alone.scale))
        assert got.divisor == alone.divisor


def test_unscaled_metrics_and_extreme_bandwidths():
    X, _ = _data()
    s = scaling_of(0.5, "cosine", X)
    assert s.scale is None and s.divisor == 0.5
    bw = np.array([0.3, 9.0, 0.004])
    s = scaling_of(bw, "cosine", X)
    assert_array_equal(s.scale, bw) and s.divisor == 1.0
    # A divisor that would be subnormal: unscaled, the bandwidth divides.
    s = scaling_of(5e-324, "euclidean", X * 1e300)
    assert s.scale is None and s.divisor == 5e-324


@pytest.mark.parametrize(
    "make", [NadarayaWatsonRegressorCV, NadarayaWatsonClassifierCV]
)
def test_cv_estimator_predicts_with_the_scaling_it_scored(make):
    """The chosen candidate, not the first of its group, is fitted with the
    group's scale and divisor, and predicts exactly as those sums give."""
    X, y = _data()
    shape = np.array([1.0, 30.0, 0.01])
    grid = [shape * c for c in (0.23, 0.61, 1.3, 2.9)]
    target = y if make is NadarayaWatsonRegressorCV else (y > 0).astype(int)
    cv = make(bandwidths=grid).fit(X, target)
    assert cv.best_index_ > 0  # the group's scale came from another candidate
    cands = [Candidate(kernel=cv.kernel_, bandwidth=b) for b in grid]
    ((scale, members),) = group_candidates(cands, "euclidean", X)
    assert cv._smoother.scale() == scale
    assert cv._smoother.head().divisor == members[cv.best_index_][1].divisor
    if make is NadarayaWatsonRegressorCV:
        Q = X[:7] + 0.05
        ((S, den, _),) = kernel_sums(
            Q,
            X,
            y[:, None],
            [Head(cv.kernel_, cv._smoother.head().divisor)],
            scale=scale,
        )
        assert_array_equal(cv.predict(Q), (S / den[:, None])[:, 0])


@pytest.mark.parametrize("offset", [1e8, 1e10, -3e12])
@pytest.mark.parametrize(
    "metric", ["euclidean", "cityblock", "chebyshev", "seuclidean"]
)
@pytest.mark.parametrize(
    ("kernel", "algorithm"),
    [("gaussian", "brute"), ("epanechnikov", "brute"), ("epanechnikov", "tree")],
)
def test_per_feature_bandwidths_far_from_the_origin_keep_their_digits(
    offset, metric, kernel, algorithm
):
    """Data at 1e8 + U(0, 0.05): the same estimates as the translated data
    (coordinates are measured from the median before the per-feature scale
    divides them), for given and rule bandwidths."""
    rng = np.random.default_rng(9)
    Xc = rng.uniform(0.0, 0.05, size=(700, 3))
    Qc = rng.uniform(0.0, 0.05, size=(40, 3))
    y = np.sin(60 * Xc[:, 0]) + 30 * Xc[:, 1]
    X, Q = Xc + offset, Qc + offset
    # The same points, translated back exactly (Sterbenz: X is near offset).
    Xc, Qc = X - offset, Q - offset
    params = {"kernel": kernel, "metric": metric, "algorithm": algorithm}
    if algorithm == "tree" and metric == "seuclidean":
        params["algorithm"] = "brute"
    # Windows of a few points, none empty: wider for cityblock (the smallest
    # ball), in the features' standard deviations for seuclidean.
    given = np.array([0.006, 0.01, 0.02])
    if metric == "cityblock":
        given = 1.5 * given
    elif metric == "seuclidean":
        given = given / Xc.std(axis=0)
    for bandwidth in (list(given), "scott"):
        far = NadarayaWatsonRegressor(bandwidth=bandwidth, **params).fit(X, y)
        near = NadarayaWatsonRegressor(bandwidth=bandwidth, **params).fit(Xc, y)
        assert_allclose(far.bandwidth_, near.bandwidth_, rtol=1e-12)
        err = np.max(np.abs(far.predict(Q) - near.predict(Qc)))
        assert err <= 1e-9 * np.ptp(y)
