"""The smoothest local optimum of the leave-one-out curve within one standard
error of the best (Hall & Marron): the rule's parts, and the CV estimators'
choice against a leave-one-out computed here from its definition."""

import warnings

import numpy as np
import pytest
from sklearn.metrics import log_loss

from sknw import (
    LocalLinearRegressor,
    LocalLinearRegressorCV,
    NadarayaWatsonClassifierCV,
    NadarayaWatsonRegressorCV,
)
from sknw._selection.smoothest import (
    interior_optima,
    per_point_losses,
    smoothest_near_best,
    within_one_error,
)


def test_interior_optima_are_above_the_best_and_inside_its_kernels_run():
    # Two kernels' runs of multipliers; the best is at index 1.
    mults = np.array([1, 2, 3, 4, 5, 6, 1, 2, 3, 4], dtype=float)
    mean = np.array([-5, -1, -3, -2, -4, -1.5, -9, -1.2, -8, -7.0])
    # 3 is a local maximum above the best; 5 is the run's edge (not
    # interior); 7 is a local maximum of the other kernel's run.
    assert interior_optima(mean, mults, 1) == [3]
    # From the largest multiplier down; NaN counts as the worst.
    mean2 = np.array([-5, -1, -3, -2, -4, -1.8, -2.5, -9, -9, -9.0])
    mults2 = np.arange(1.0, 11.0)
    assert interior_optima(mean2, mults2, 1) == [5, 3]
    mean2[4] = np.nan
    assert interior_optima(mean2, mults2, 1) == [5, 3]
    # A plateau to the left does not make a local maximum.
    assert interior_optima(np.array([-1, -2, -2, -3.0]), np.arange(1.0, 5.0), 0) == []


def test_within_one_error_is_the_paired_standard_error():
    rng = np.random.default_rng(0)
    best = rng.exponential(size=200)
    for shift in (-0.05, 0.0, 0.02, 0.05, 0.2):
        other = best + shift + 0.3 * rng.normal(size=200)
        d = other - best
        expected = d.mean() <= d.std() / np.sqrt(d.size)
        assert within_one_error(other, best, None, 200) == expected
    # A weight of 2 stands for two copies of the point.
    other = best + 0.02 + 0.3 * rng.normal(size=200)
    w = np.ones(200)
    w[:50] = 2.0
    copies = np.concatenate([np.arange(200), np.arange(50)])
    assert within_one_error(other, best, w, w.sum()) == within_one_error(
        other[copies], best[copies], None, copies.size
    )
    d = other - best
    mean = np.average(d, weights=w)
    se = np.sqrt(np.average((d - mean) ** 2, weights=w) / w.sum())
    assert within_one_error(other, best, w, w.sum()) == (mean <= se)
    # Non-finite losses never qualify.
    other[3] = np.inf
    assert not within_one_error(other, best, None, 200)


def test_smoothest_near_best_asks_for_the_losses_it_needs():
    mults = np.arange(1.0, 8.0)
    mean = np.array([-3, -1, -2, -1.1, -2, -1.2, -3.0])
    asked = []

    def losses(rows):
        asked.append(list(rows))
        base = np.linspace(0.0, 1.0, 50)
        # Candidate 5 is far worse point by point, 3 as good as the best.
        return np.array([base + {1: 0.0, 3: 0.0, 5: 1.0}[r] for r in rows])

    assert smoothest_near_best(mean, mults, 1, losses, None, 50) == 3
    assert asked == [[1, 5, 3]]
    # No local optimum above the best: the best, and no losses are computed.
    asked.clear()
    assert smoothest_near_best(-np.abs(mults - 6), mults, 5, losses, None, 50) == 5
    assert asked == []
    # A user grid (no multipliers): the best.
    assert smoothest_near_best(mean, np.full(7, np.nan), 1, losses, None, 50) == 1


def _two_optima_data():
    """``2 sin(5x) + 5x`` with noise 0.5: a sample whose leave-one-out curve
    of local linear has a spurious optimum at a small bandwidth."""
    rng = np.random.default_rng(20006)
    x = rng.uniform(0.0, 1.0, 200)
    return x[:, None], 2 * np.sin(5 * x) + 5 * x + 0.5 * rng.normal(size=200)


def _local_linear_loo(x, y, h):
    """Leave-one-out local linear estimates with the Gaussian kernel, from the
    weighted least-squares normal equations."""
    dx = x[None, :] - x[:, None]
    K = np.exp(-0.5 * (dx / h) ** 2)
    np.fill_diagonal(K, 0.0)
    s0, s1, s2 = K.sum(1), (K * dx).sum(1), (K * dx**2).sum(1)
    t0, t1 = K @ y, (K * dx) @ y
    return (s2 * t0 - s1 * t1) / (s0 * s2 - s1**2)


def test_local_linear_cv_takes_the_smoothest_near_best_optimum():
    X, y = _two_optima_data()
    cv = LocalLinearRegressorCV().fit(X, y)
    res = cv.cv_results_
    mean = res["mean_test_score"]
    hs = np.array([float(np.ravel(b)[0]) for b in res["param_bandwidth"]])
    assert type(cv.kernel_).__name__ == "Gaussian"
    # The rule, written out from the definition (at the two smallest
    # bandwidths the estimator ridges its near-singular local designs).
    losses = np.array([(_local_linear_loo(X[:, 0], y, h) - y) ** 2 for h in hs])
    plain = hs >= np.sort(hs)[2]
    np.testing.assert_allclose(-losses.mean(axis=1)[plain], mean[plain], rtol=1e-9)
    best = int(np.nanargmax(mean))
    order = np.argsort(hs)
    expected = best
    for j in range(len(order) - 2, 0, -1):
        i = order[j]
        left, right = order[j - 1], order[j + 1]
        if hs[i] <= hs[best] or not (mean[i] > mean[left] and mean[i] >= mean[right]):
            continue
        d = losses[i] - losses[best]
        if d.mean() <= d.std() / np.sqrt(d.size):
            expected = i
            break
    assert expected != best  # the data has a second optimum within one SE
    assert plain[best] and plain[expected]
    assert cv.best_index_ == expected
    # Its size polished between its grid neighbours, scored by the formula.
    h = float(np.ravel(cv.bandwidth_)[0])
    j = int(np.flatnonzero(order == expected)[0])
    assert hs[order[j - 1]] < h < hs[order[j + 1]]
    assert cv.best_score_ >= mean[expected]
    polished = -np.mean((_local_linear_loo(X[:, 0], y, h) - y) ** 2)
    assert cv.best_score_ == pytest.approx(polished, rel=1e-9)
    # The default estimator makes the same choice (one code path).
    default = LocalLinearRegressor().fit(X, y)
    assert default.bandwidth_ == pytest.approx(cv.bandwidth_, rel=1e-12)
    # The smoother choice is closer to the function out of sample.
    Q = np.linspace(0.0, 1.0, 400)[:, None]
    truth = 2 * np.sin(5 * Q[:, 0]) + 5 * Q[:, 0]
    rough = LocalLinearRegressor(bandwidth=hs[best]).fit(X, y)
    assert np.mean((default.predict(Q) - truth) ** 2) < np.mean(
        (rough.predict(Q) - truth) ** 2
    )


def test_user_grids_k_fold_and_other_scorers_take_the_best():
    X, y = _two_optima_data()
    ref = LocalLinearRegressorCV().fit(X, y)
    grid = list(ref.cv_results_["param_bandwidth"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for cv in (
            LocalLinearRegressorCV(bandwidths=grid),
            LocalLinearRegressorCV(scoring="neg_mean_absolute_error"),
            LocalLinearRegressorCV(cv=5),
        ):
            cv.fit(X, y)
            assert cv.best_index_ == int(
                np.nanargmax(cv.cv_results_["mean_test_score"])
            )


def test_per_point_losses_average_to_the_scores():
    """The mean of the per-point losses is the default score, for
    regression (outputs averaged) and for classification (log-loss)."""
    rng = np.random.default_rng(3)
    preds = rng.normal(size=(3, 40, 2))
    y = rng.normal(size=(40, 2))
    losses = per_point_losses(preds, y, "regression")
    expected = [np.mean((p - y) ** 2) for p in preds]
    np.testing.assert_allclose(losses.mean(axis=1), expected, rtol=1e-12)

    proba = rng.dirichlet(np.ones(3), size=(2, 40))
    labels = rng.integers(0, 3, size=40)
    losses = per_point_losses(proba, labels, "classification")
    for row, p in zip(losses, proba, strict=True):
        assert row.mean() == pytest.approx(log_loss(labels, p, labels=[0, 1, 2]))


@pytest.mark.parametrize(
    "search", [NadarayaWatsonRegressorCV, NadarayaWatsonClassifierCV]
)
def test_weight_two_chooses_as_two_copies(search):
    X, y = _two_optima_data()
    if search is NadarayaWatsonClassifierCV:
        y = (y > np.median(y)).astype(int)
    w = np.ones(X.shape[0])
    w[::3] = 2.0
    copies = np.concatenate([np.arange(X.shape[0]), np.arange(0, X.shape[0], 3)])
    weighted = search().fit(X, y, sample_weight=w)
    doubled = search().fit(X[copies], y[copies])
    np.testing.assert_allclose(weighted.bandwidth_, doubled.bandwidth_, rtol=1e-9)
