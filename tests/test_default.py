"""The data-driven default bandwidth, ``bandwidth="cv"``: the choice of the
``*CV`` estimators on the same data, a documented rule for tiny training
sets, a deterministic rescaled subsample for large ones."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.datasets import load_diabetes
from sklearn.model_selection import KFold

from sknw import (
    LocalLinearRegressor,
    LocalLinearRegressorCV,
    NadarayaWatsonClassifier,
    NadarayaWatsonClassifierCV,
    NadarayaWatsonRegressor,
    NadarayaWatsonRegressorCV,
)
from sknw._selection.default import LINE_SUBSAMPLE, SUBSAMPLE, subsample_size
from sknw._selection.weights import subsample_rows
from sknw.exceptions import GridEdgeWarning
from sknw.kernels import Gaussian


def sine(n, d=1, seed=0, noise=0.1):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 1.0, size=(n, d))
    y = np.sin(2 * np.pi * X[:, 0] ** 3) ** 3 + noise * rng.normal(size=n)
    return X, y


PAIRS = [
    (NadarayaWatsonRegressor, NadarayaWatsonRegressorCV),
    (LocalLinearRegressor, LocalLinearRegressorCV),
    (NadarayaWatsonClassifier, NadarayaWatsonClassifierCV),
]


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov"])
@pytest.mark.parametrize("d", [1, 2])
@pytest.mark.parametrize(("plain", "search"), PAIRS)
def test_default_is_the_choice_of_the_cv_estimator(plain, search, d, kernel):
    X, y = sine(150, d=d, seed=d)
    if plain is NadarayaWatsonClassifier:
        y = np.where(y > 0, "up", "down")
    # Weights of at most one: a left-out point keeps none of its own weight.
    w = np.random.default_rng(1).uniform(0.2, 1.0, y.shape[0])
    est = plain(kernel=kernel).fit(X, y, sample_weight=w)
    ref = search(kernels=[kernel]).fit(X, y, sample_weight=w)
    assert_array_equal(est.bandwidth_, ref.bandwidth_)
    selection = est.bandwidth_selection_
    assert selection["method"] == "leave-one-out"
    assert selection["score"] == ref.best_score_
    # The default grid (30), or after a search of its shape (2 features)
    # the window about the searched size.
    assert selection["n_candidates"] == len(ref.cv_results_["mean_test_score"])
    assert selection["n_candidates"] == (30 if d == 1 else 11)
    assert selection["n_samples"] == 150
    assert selection["rescaled"] == 1.0
    # The multiplier of the rule: the grid's, or (one feature) its polish.
    best = ref.best_index_
    ratio = np.ravel(ref.bandwidth_ / ref.cv_results_["param_bandwidth"][best])
    assert_allclose(ratio, ratio[0], rtol=1e-12)
    if d == 2:
        assert ratio[0] == 1.0
    multiplier = ref.cv_results_["bandwidth_multiplier"][best] * ratio[0]
    assert selection["multiplier"] == pytest.approx(multiplier, rel=1e-12)
    expected = (
        "neg_log_loss"
        if plain is NadarayaWatsonClassifier
        else ("neg_mean_squared_error")
    )
    assert selection["scoring"] == expected
    # It predicts as the search does.
    assert_allclose(
        est.predict(X[:20])
        if plain is not NadarayaWatsonClassifier
        else est.predict_proba(X[:20]),
        ref.predict(X[:20])
        if plain is not NadarayaWatsonClassifier
        else ref.predict_proba(X[:20]),
        rtol=1e-12,
        atol=1e-13,  # the scale of the features may round apart
    )


@pytest.mark.parametrize("n", [1, 2, 3])
def test_tiny_training_sets_take_scotts_rule(n):
    X, y = sine(n)
    est = NadarayaWatsonRegressor().fit(X, y)
    scott = NadarayaWatsonRegressor(bandwidth="scott").fit(X, y)
    assert_array_equal(est.bandwidth_, scott.bandwidth_)
    assert est.bandwidth_selection_ == {"method": "scott", "n_samples": n}
    # Points of weight zero do not count.
    X5, y5 = sine(5)
    w = np.array([1.0, 1.0, 0.0, 0.0, 1.0])
    est = NadarayaWatsonRegressor().fit(X5, y5, sample_weight=w)
    assert est.bandwidth_selection_["method"] == "scott"


def test_given_bandwidths_and_rules_say_so():
    X, y = sine(40)
    assert NadarayaWatsonRegressor(bandwidth=0.1).fit(X, y).bandwidth_selection_ == {
        "method": "given",
        "n_samples": 40,
    }
    silverman = NadarayaWatsonRegressor(bandwidth="silverman").fit(X, y)
    assert silverman.bandwidth_selection_["method"] == "silverman"


def test_large_training_sets_score_a_rescaled_deterministic_subsample():
    n = SUBSAMPLE + 700
    X, y = sine(n, d=2, seed=3)
    est = NadarayaWatsonRegressor().fit(X, y)
    selection = est.bandwidth_selection_
    assert selection["n_samples"] == SUBSAMPLE
    factor = (SUBSAMPLE / n) ** (1 / 6)
    assert_allclose(selection["rescaled"], factor)
    rows = subsample_rows(np.arange(n), SUBSAMPLE)
    assert rows.size == SUBSAMPLE and np.all(np.diff(rows) > 0)
    ref = NadarayaWatsonRegressorCV().fit(X[rows], y[rows])
    assert_allclose(est.bandwidth_, ref.bandwidth_ * factor, rtol=1e-15)
    # The same subsample at every fit.
    again = NadarayaWatsonRegressor().fit(X, y)
    assert_array_equal(again.bandwidth_, est.bandwidth_)


def test_one_feature_fast_paths_score_every_point():
    X, y = sine(SUBSAMPLE + 500, seed=4)
    est = NadarayaWatsonRegressor().fit(X, y)
    assert est.bandwidth_selection_["n_samples"] == SUBSAMPLE + 500
    # A kernel no fast backend serves: the subsample.
    est = NadarayaWatsonRegressor(kernel="cauchy").fit(X, y)
    assert est.bandwidth_selection_["n_samples"] == SUBSAMPLE


def test_default_beats_the_rule_of_thumb_out_of_sample():
    # The rule oversmooths a function that varies faster than the data's
    # spread; the default is near the best fixed bandwidth in hindsight.
    X, y = sine(500, seed=5)
    Xt = np.linspace(0, 1, 2001).reshape(-1, 1)
    truth = np.sin(2 * np.pi * Xt[:, 0] ** 3) ** 3
    for make in (NadarayaWatsonRegressor, LocalLinearRegressor):
        default = np.mean((make().fit(X, y).predict(Xt) - truth) ** 2)
        scott = make(bandwidth="scott").fit(X, y).predict(Xt)
        best = min(
            np.mean((make(bandwidth=h).fit(X, y).predict(Xt) - truth) ** 2)
            for h in np.geomspace(0.005, 0.2, 40)
        )
        assert default <= 1.5 * best
        assert default < 0.25 * np.mean((scott - truth) ** 2)


def test_several_outputs_share_one_default():
    X, y = sine(120, seed=6)
    Y = np.column_stack([y, 2 * y + 1])
    est = NadarayaWatsonRegressor().fit(X, Y)
    ref = NadarayaWatsonRegressorCV().fit(X, Y)
    assert_array_equal(est.bandwidth_, ref.bandwidth_)
    assert est.predict(X[:3]).shape == (3, 2)


def test_an_explicit_dense_algorithm_scores_the_smaller_subsample():
    # One feature, but the dense sums: each candidate costs O(n**2).
    assert subsample_size(Gaussian(), "euclidean", None, 1) == LINE_SUBSAMPLE
    assert subsample_size(Gaussian(), "euclidean", None, 1, "fgt") == LINE_SUBSAMPLE
    assert subsample_size(Gaussian(), "euclidean", None, 1, "brute") == SUBSAMPLE


def _with_far_point(far, d, seed=0):
    """1000 points in [0, 1]**d and one at ``far`` in the first feature."""
    X, y = sine(1000, d=d, seed=seed, noise=0.3)
    X = np.vstack([X, np.r_[far, np.full(d - 1, 0.5)]])
    return X, np.r_[y, 0.0]


def _loo_mse(make, X, y, h):
    """Leave-one-out MSE of a fixed bandwidth ``h``, by explicit refits on
    the bulk's points (the far point's own error is the same for every
    small bandwidth: its nearest neighbour's estimate)."""
    errors = []
    for i in range(0, X.shape[0] - 1, 25):
        keep = np.arange(X.shape[0]) != i
        fit = make(bandwidth=h, empty_window="nearest").fit(X[keep], y[keep])
        errors.append((fit.predict(X[i : i + 1])[0] - y[i]) ** 2)
    return float(np.mean(errors))


@pytest.mark.parametrize("far", [1e4, 1e6])
@pytest.mark.parametrize("d", [1, 2])
@pytest.mark.parametrize(
    "make", [NadarayaWatsonRegressor, LocalLinearRegressor, NadarayaWatsonClassifier]
)
def test_one_far_point_leaves_the_default_about_the_bulk(make, d, far):
    # The grid is built about a robust spread (the IQR), which one far point
    # does not inflate: the choice smooths the bulk of the data, within a
    # factor of the choice without the far point.
    X, y = _with_far_point(far, d)
    if make is NadarayaWatsonClassifier:
        y = (y > 0).astype(int)
    with_far = make().fit(X, y).bandwidth_
    without = make().fit(X[:-1], y[:-1]).bandwidth_
    assert np.all(with_far < 3 * without) and np.all(with_far > without / 3)


def test_one_far_point_default_scores_as_a_fixed_bulk_bandwidth():
    X, y = _with_far_point(1e5, 1)
    chosen = NadarayaWatsonRegressor().fit(X, y).bandwidth_[0]
    mse = _loo_mse(NadarayaWatsonRegressor, X, y, chosen)
    assert mse <= 1.1 * _loo_mse(NadarayaWatsonRegressor, X, y, 0.02)


def test_an_optimum_beyond_the_grid_limit_warns():
    # A straight line: local linear's leave-one-out error falls with the
    # bandwidth up to the global line, beyond the extension's limit.
    rng = np.random.default_rng(1)
    X = rng.uniform(0, 1, (200, 1))
    y = 2 * X[:, 0] + 0.1 * rng.normal(size=200)
    with pytest.warns(GridEdgeWarning, match="limit of its extension"):
        LocalLinearRegressorCV(kernels=["gaussian"]).fit(X, y)


WEIGHTED = [
    NadarayaWatsonRegressor,
    LocalLinearRegressor,
    NadarayaWatsonClassifier,
    NadarayaWatsonRegressorCV,
    LocalLinearRegressorCV,
]


@pytest.mark.parametrize("scale", [1e-3, 10.0, 2.0**60])
@pytest.mark.parametrize("make", WEIGHTED)
def test_the_default_does_not_change_with_the_scale_of_the_weights(make, scale):
    X, y = sine(150, d=2, seed=7)
    if make is NadarayaWatsonClassifier:
        y = (y > 0).astype(int)
    w = np.random.default_rng(3).integers(1, 4, 150).astype(float)
    ref = make().fit(X, y, sample_weight=w)
    scaled = make().fit(X, y, sample_weight=scale * w)
    # Equal to rounding: a scale other than a power of two rounds the sums
    # differently, which moves the per-feature refinement's stopping point
    # within its tolerance.
    assert_allclose(scaled.bandwidth_, ref.bandwidth_, rtol=1e-3)
    power_of_two = make().fit(X, y, sample_weight=2.0**-20 * w)
    assert_array_equal(power_of_two.bandwidth_, ref.bandwidth_)


@pytest.mark.parametrize("make", WEIGHTED)
def test_integer_weights_choose_as_the_rows_they_repeat(make):
    X, y = sine(80, d=2, seed=10)
    if make is NadarayaWatsonClassifier:
        y = (y > 0).astype(int)
    w = np.random.default_rng(6).integers(0, 4, 80)
    order = np.random.default_rng(7).permutation(80)  # in another order
    weighted = make().fit(X[order], y[order], sample_weight=w[order])
    repeated = make().fit(np.repeat(X, w, axis=0), np.repeat(y, w))
    assert_allclose(weighted.bandwidth_, repeated.bandwidth_, rtol=1e-9)


def test_importance_weights_do_not_collapse_the_default():
    # Weights 1 to 3 (and ten times them): the out-of-fold error stays that
    # of the unweighted default, where leaving out one unit of a weight made
    # each point predict itself and the bandwidth collapse.
    X, y = load_diabetes(return_X_y=True)
    w = np.random.default_rng(0).integers(1, 4, y.size).astype(float)
    folds = list(KFold(5, shuffle=True, random_state=0).split(X))
    r2 = {}
    for key, weights in (("none", None), ("w", w), ("10w", 10 * w)):
        pred = np.empty_like(y)
        for train, test in folds:
            sw = None if weights is None else weights[train]
            fit = NadarayaWatsonRegressor().fit(X[train], y[train], sample_weight=sw)
            pred[test] = fit.predict(X[test])
        r2[key] = 1 - np.mean((pred - y) ** 2) / np.var(y)
    assert r2["w"] > r2["none"] - 0.02 and r2["none"] > 0.4
    assert r2["10w"] == pytest.approx(r2["w"], abs=1e-6)


def test_leave_one_out_leaves_out_the_row_and_its_copies():
    # A duplicated row is left out with its copy: the leave-one-out score is
    # that of refits on the other distinct rows.
    X, y = sine(40, seed=9)
    X, y = np.vstack([X, X[:5]]), np.r_[y, y[:5]]
    h = 0.05
    cv = NadarayaWatsonRegressorCV(bandwidths=[h], kernels=["gaussian"]).fit(X, y)
    errors = []
    for i in range(X.shape[0]):
        keep = ~np.all(X == X[i], axis=1)
        fit = NadarayaWatsonRegressor(bandwidth=h).fit(X[keep], y[keep])
        errors.append((fit.predict(X[i : i + 1])[0] - y[i]) ** 2)
    assert_allclose(cv.best_score_, -np.mean(errors), rtol=1e-10)
