"""Tests of the cross-validated selection of kernel and bandwidth."""

import re
import warnings
from contextlib import nullcontext

import numpy as np
import pytest
import sklearn
from scipy.spatial.distance import cdist
from sklearn.metrics import (
    accuracy_score,
    brier_score_loss,
    d2_log_loss_score,
    get_scorer_names,
    log_loss,
    make_scorer,
    max_error,
    mean_absolute_error,
    mean_squared_error,
    r2_score,
    roc_auc_score,
    top_k_accuracy_score,
)
from sklearn.model_selection import (
    GridSearchCV,
    GroupKFold,
    KFold,
    LeaveOneOut,
    cross_validate,
)
from sklearn.utils._param_validation import InvalidParameterError

import sknw._selection.search as search_module
from sknw import (
    LocalLinearRegressorCV,
    NadarayaWatsonClassifier,
    NadarayaWatsonClassifierCV,
    NadarayaWatsonRegressor,
    NadarayaWatsonRegressorCV,
)
from sknw._bandwidth.rules import grid_reference
from sknw._bandwidth.scaling import group_candidates
from sknw._selection import scoring as _scoring
from sknw._selection.coordinate import POLISH_FACTOR, POLISH_ROUNDS
from sknw._selection.grid import DEFAULT_GRID_RANGE, candidate_grid, grid_multipliers
from sknw._selection.search import SUBSAMPLE_POLISH
from sknw._selection.weights import distinct_rows
from sknw._sums._parallel import MIN_BATCH
from sknw._trace import traced
from sknw.datasets import make_d2l_sine
from sknw.exceptions import EmptyWindowWarning, GridEdgeWarning
from sknw.kernels import KERNELS, Epanechnikov, Gaussian, Triangular

KERNEL_NAMES = sorted({cls.__name__.lower(): name for name, cls in KERNELS.items()})
CLASSIFIER_KERNEL_NAMES = [k for k in KERNEL_NAMES if KERNELS[k].nonnegative]


def _data(n=30, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=n)
    w = rng.integers(0, 4, size=n).astype(float)
    w[:3] = [0.5, 1.5, 0.0]
    return X, y, w


def _brute_loo(make, X, V, w, bw):
    """Leave-one-out by refitting without each point's row (the rows are
    distinct)."""
    n = X.shape[0]
    preds = []
    for i in range(n):
        wi = np.ones(n) if w is None else w.copy()
        wi[i] = 0.0
        keep = wi > 0
        est = make(bw).fit(X[keep], V[keep], sample_weight=wi[keep])
        preds.append(est._predict_values(X[i : i + 1]))
    return np.vstack(preds)


class _Reg:
    def __init__(self, kernel):
        self.kernel = kernel

    def __call__(self, bw):
        est = NadarayaWatsonRegressor(kernel=self.kernel, bandwidth=bw)
        est._predict_values = lambda Q: est.predict(Q).reshape(1, -1)
        return est


class _Clf:
    def __init__(self, kernel, n_classes):
        self.kernel, self.n_classes = kernel, n_classes

    def __call__(self, bw):
        est = NadarayaWatsonClassifier(kernel=self.kernel, bandwidth=bw)

        def proba(Q):
            # A refit may have lost a class: put its columns back.
            out = np.zeros((1, self.n_classes))
            out[0, est.classes_] = est.predict_proba(Q)[0]
            return out

        est._predict_values = proba
        return est


BANDWIDTHS = [0.4, [0.7, 1.3], 1.5]


# One grid for every kernel, to compare with refits: its best is at an edge
# for some kernels.
@pytest.mark.filterwarnings("ignore::sknw.exceptions.GridEdgeWarning")
@pytest.mark.parametrize("kernel", KERNEL_NAMES)
@pytest.mark.parametrize("weighted", [False, True])
def test_loo_regression_equals_refitting(kernel, weighted):
    X, y, w = _data()
    w = w if weighted else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyWindowWarning)
        cv = NadarayaWatsonRegressorCV(kernels=kernel, bandwidths=BANDWIDTHS)
        cv.fit(X, y, sample_weight=w)
        for i, bw in enumerate(BANDWIDTHS):
            pred = _brute_loo(_Reg(kernel), X, y, w, np.asarray(bw))[:, 0]
            expected = -np.average((pred - y) ** 2, weights=w)
            got = cv.cv_results_["mean_test_score"][i]
            np.testing.assert_allclose(got, expected, rtol=1e-10)


# One grid for every kernel, to compare with refits: its best is at an edge
# for some kernels.
@pytest.mark.filterwarnings("ignore::sknw.exceptions.GridEdgeWarning")
@pytest.mark.parametrize("kernel", CLASSIFIER_KERNEL_NAMES)
def test_loo_classification_equals_refitting(kernel):
    X, y, w = _data(seed=1)
    labels = np.digitize(y, [-0.5, 0.5])  # three classes
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyWindowWarning)
        cv = NadarayaWatsonClassifierCV(kernels=kernel, bandwidths=BANDWIDTHS)
        cv.fit(X, labels, sample_weight=w)
        for i, bw in enumerate(BANDWIDTHS):
            proba = _brute_loo(_Clf(kernel, 3), X, labels, w, np.asarray(bw))
            p_true = np.clip(
                proba[np.arange(len(labels)), labels], np.finfo(float).eps, 1
            )
            expected = np.average(np.log(p_true), weights=w)
            got = cv.cv_results_["mean_test_score"][i]
            np.testing.assert_allclose(got, expected, rtol=1e-10)


def test_choice_equals_gridsearch_leave_one_out():
    X, y, _, _ = make_d2l_sine(random_state=3)
    grid = list(np.geomspace(0.05, 3.0, 25))
    search = GridSearchCV(
        NadarayaWatsonRegressor(),
        {"bandwidth": grid},
        cv=LeaveOneOut(),
        scoring="neg_mean_squared_error",
    ).fit(X, y)
    cv = NadarayaWatsonRegressorCV(bandwidths=grid).fit(X, y)
    assert cv.bandwidth_ == search.best_params_["bandwidth"]
    np.testing.assert_allclose(
        cv.cv_results_["mean_test_score"],
        search.cv_results_["mean_test_score"],
        rtol=1e-10,
    )
    np.testing.assert_array_equal(
        cv.cv_results_["rank_test_score"], search.cv_results_["rank_test_score"]
    )


def test_kfold_equals_gridsearch():
    X, y, _ = _data(n=40)
    folds = KFold(4, shuffle=True, random_state=0)
    grid = {"kernel": ["gaussian", "epanechnikov"], "bandwidth": [0.5, 1.0, 2.0]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyWindowWarning)
        search = GridSearchCV(NadarayaWatsonRegressor(), grid, cv=folds).fit(X, y)
        cv = NadarayaWatsonRegressorCV(
            kernels=grid["kernel"], bandwidths=grid["bandwidth"], cv=folds, scoring="r2"
        ).fit(X, y)
    # GridSearchCV varies the kernel fastest; align its candidates with ours.
    theirs = [(p["kernel"], p["bandwidth"]) for p in search.cv_results_["params"]]
    order = [
        theirs.index((p["kernel"], p["bandwidth"])) for p in cv.cv_results_["params"]
    ]
    for key in ["mean_test_score", "std_test_score", "split0_test_score"]:
        np.testing.assert_allclose(cv.cv_results_[key], search.cv_results_[key][order])
    assert cv.cv_results_["params"][cv.best_index_] == search.best_params_


def test_kfold_classifier_accuracy_equals_gridsearch():
    X, y, _ = _data(n=45, seed=4)
    labels = np.where(y > 0, "up", "down")
    grid = {"bandwidth": [0.1, 0.2, 0.6, 2.0]}
    search = GridSearchCV(NadarayaWatsonClassifier(), grid, cv=3).fit(X, labels)
    cv = NadarayaWatsonClassifierCV(
        bandwidths=grid["bandwidth"], cv=3, scoring="accuracy"
    ).fit(X, labels)
    np.testing.assert_allclose(
        cv.cv_results_["mean_test_score"], search.cv_results_["mean_test_score"]
    )


def test_loo_scorers_match_metrics_on_loo_predictions():
    X, y, w = _data(n=25, seed=5)
    cv = NadarayaWatsonRegressorCV(bandwidths=[0.8], scoring="r2").fit(
        X, y, sample_weight=w
    )
    pred = _brute_loo(_Reg("gaussian"), X, y, w, np.asarray(0.8))[:, 0]
    expected = r2_score(y, pred, sample_weight=w)
    np.testing.assert_allclose(cv.best_score_, expected, rtol=1e-10)

    labels = (y > 0).astype(int)
    clf = NadarayaWatsonClassifierCV(bandwidths=[0.8], scoring="accuracy")
    clf.fit(X, labels)
    proba = _brute_loo(_Clf("gaussian", 2), X, labels, None, np.asarray(0.8))
    expected = accuracy_score(labels, proba.argmax(axis=1))
    assert clf.best_score_ == pytest.approx(expected)


def test_d2l_selection_is_close_to_best_in_hindsight():
    """LOO on 40 noisy points: near the best grid bandwidth, better than Scott.

    Over many draws of the d2l data, the validation error of the selected
    bandwidth is compared with the best bandwidth of the same grid in
    hindsight; single draws are noisy, so the median is what is asserted.
    """
    ratios, scott_ratios = [], []
    for seed in range(20):
        X, y, X_val, y_val = make_d2l_sine(random_state=seed)
        cv = NadarayaWatsonRegressorCV().fit(X, y)
        mse = [
            np.mean(
                (NadarayaWatsonRegressor(bandwidth=bw).fit(X, y).predict(X_val) - y_val)
                ** 2
            )
            for bw in cv.cv_results_["param_bandwidth"]
        ]
        selected = np.mean((cv.predict(X_val) - y_val) ** 2)
        scott = np.mean(
            (
                NadarayaWatsonRegressor(bandwidth="scott").fit(X, y).predict(X_val)
                - y_val
            )
            ** 2
        )
        ratios.append(selected / min(mse))
        scott_ratios.append(scott / min(mse))
    assert np.median(ratios) <= 1.2
    assert np.median(ratios) < np.median(scott_ratios)


def test_cv_results_structure():
    X, y, _, _ = make_d2l_sine(random_state=0)
    cv = NadarayaWatsonRegressorCV(
        kernels=["gaussian", Triangular()], bandwidths=7
    ).fit(X, y)
    res = cv.cv_results_
    assert len(res["params"]) == 14
    assert res["param_kernel"][0] == "gaussian"
    assert res["param_kernel"][7] == Triangular()
    assert cv.kernel_ == KERNELS[res["param_kernel"][cv.best_index_]]() or isinstance(
        res["param_kernel"][cv.best_index_], Triangular
    )
    # Seven multipliers span the default range most nearly an octave apart.
    np.testing.assert_allclose(
        res["bandwidth_multiplier"][:7], 0.5 * 2.0 ** np.arange(-3, 4)
    )
    assert res["rank_test_score"][cv.best_index_] == 1
    # The size is polished between the grid neighbours of the best candidate.
    i = cv.best_index_
    assert 0 < i % 7 < 6
    assert cv.best_score_ > np.max(res["mean_test_score"])
    lo, hi = res["param_bandwidth"][i - 1], res["param_bandwidth"][i + 1]
    assert lo < cv.bandwidth_ < hi
    # Multipliers of each kernel's own reference bandwidth (Scott's rule of
    # a robust spread).
    ref = grid_reference(X, Triangular())
    np.testing.assert_allclose(res["param_bandwidth"][7], 0.0625 * ref)
    # Refit: predicts like the plain estimator with the chosen parameters.
    plain = NadarayaWatsonRegressor(kernel=cv.kernel_, bandwidth=cv.bandwidth_)
    np.testing.assert_allclose(cv.predict(X), plain.fit(X, y).predict(X), rtol=1e-12)


def test_empty_windows_counted_and_policies():
    X = np.array([[0.0], [1.0], [2.0], [10.0]])
    y = np.array([0.0, 1.0, 2.0, 10.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", EmptyWindowWarning)  # none during search
        cv = NadarayaWatsonRegressorCV(kernels="boxcar", bandwidths=[0.5, 1.5, 20.0])
        # Nearest-point estimates of four points: the smallest scores best.
        with pytest.warns(GridEdgeWarning, match="is the smallest of"):
            cv.fit(X, y)
    # h=0.5: every LOO window is empty; h=1.5: only the point at 10.
    np.testing.assert_array_equal(cv.cv_results_["n_empty_windows"], [4, 1, 0])
    # Nearest policy: LOO estimates are the nearest other points' targets.
    expected = -np.mean((np.array([1.0, 1.0, 1.0, 2.0]) - y) ** 2)
    assert cv.cv_results_["mean_test_score"][0] == pytest.approx(expected)
    nan_cv = NadarayaWatsonRegressorCV(
        kernels="boxcar", bandwidths=[0.5, 1.5, 20.0], empty_window="nan"
    )
    with pytest.warns(GridEdgeWarning, match="is the largest of"):
        nan_cv.fit(X, y)
    assert np.isnan(nan_cv.cv_results_["mean_test_score"][:2]).all()
    assert nan_cv.cv_results_["rank_test_score"][2] == 1
    assert nan_cv.bandwidth_ == 20.0
    with pytest.raises(ValueError, match="Every candidate scored NaN"):
        NadarayaWatsonRegressorCV(
            kernels="boxcar", bandwidths=[0.5], empty_window="raise"
        ).fit(X, y)


def test_invalid_parameters():
    X, y, _ = _data()
    with pytest.raises(ValueError, match="Unknown kernel"):
        NadarayaWatsonRegressorCV(kernels=["gaussian", "nope"]).fit(X, y)
    with pytest.raises(ValueError, match="positive"):
        NadarayaWatsonRegressorCV(bandwidths=[0.5, -1.0]).fit(X, y)
    with pytest.raises(ValueError, match="shape"):
        NadarayaWatsonRegressorCV(bandwidths=[[0.5, 1.0, 2.0]]).fit(X, y)
    with pytest.raises(ValueError, match="empty"):
        NadarayaWatsonRegressorCV(bandwidths=[]).fit(X, y)
    with pytest.raises(InvalidParameterError):
        NadarayaWatsonClassifierCV(kernels="silverman").fit(X, y > 0)
    with pytest.raises(InvalidParameterError):
        NadarayaWatsonRegressorCV(scoring="not_a_scorer").fit(X, y)
    with pytest.raises(ValueError, match="1 sample"):
        NadarayaWatsonRegressorCV().fit(X[:1], y[:1])


def test_grid_shares_distances_across_scales():
    """Per-feature grids that are multiples of one shape form one group."""
    X, y, _ = _data(n=20, d=3)
    X[:, 2] *= 100
    cands = candidate_grid(X, None, [Gaussian(), Epanechnikov()], 6, "euclidean", {})
    groups = group_candidates(cands, "euclidean")
    assert len(groups) == 1
    scale, members = groups[0]
    for i, head in members:
        np.testing.assert_allclose(scale * head.divisor, cands[i].bandwidth)
    # sqeuclidean is homogeneous of degree 2: the divisor is squared.
    groups = group_candidates(cands, "sqeuclidean")
    scale, members = groups[0]
    for i, head in members:
        np.testing.assert_allclose(scale * np.sqrt(head.divisor), cands[i].bandwidth)
    # Other metrics get scalar candidates from the rules: no scaling.
    cosine = candidate_grid(X, None, [Gaussian()], 4, "cosine", {})
    assert all(np.ndim(c.bandwidth) == 0 for c in cosine)
    assert group_candidates(cosine, "cosine")[0][0] is None


@pytest.mark.filterwarnings("ignore::FutureWarning")  # raised inside statsmodels
def test_refine_reaches_the_per_feature_optimum_of_statsmodels():
    """Per-feature refinement: at least as good as statsmodels' cv_ls optimum."""
    kernel_regression = pytest.importorskip(
        "statsmodels.nonparametric.kernel_regression"
    )

    rng = np.random.default_rng(7)
    X = rng.uniform(-2.0, 2.0, size=(80, 2))
    y = np.sin(2.0 * X[:, 0]) + 0.3 * rng.normal(size=80)  # feature 1 is noise
    grid = NadarayaWatsonRegressorCV().fit(X, y)
    refined = NadarayaWatsonRegressorCV(refine=True).fit(X, y)
    assert refined.best_score_ >= grid.best_score_
    assert np.all(refined.bandwidth_ > 0)
    # The noise feature gets a larger bandwidth than the relevant one.
    assert refined.bandwidth_[1] > 5 * refined.bandwidth_[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        sm = kernel_regression.KernelReg(y, X, var_type="cc", reg_type="lc", bw="cv_ls")
    sm_score = NadarayaWatsonRegressorCV(bandwidths=[np.abs(sm.bw)]).fit(X, y)
    assert refined.best_score_ >= sm_score.best_score_ - 1e-9 * abs(
        sm_score.best_score_
    )
    # best_score_ is the exact LOO score of the refined bandwidth.
    check = NadarayaWatsonRegressorCV(bandwidths=[refined.bandwidth_]).fit(X, y)
    assert check.best_score_ == pytest.approx(refined.best_score_, rel=1e-12)


def test_refine_scalar_bandwidth_and_classifier():
    X, y, _ = _data(n=60, seed=8)
    bandwidths = [0.1, 0.2, 0.5, 1.0]
    reg = NadarayaWatsonRegressorCV(bandwidths=bandwidths, refine=True).fit(X, y)
    grid = NadarayaWatsonRegressorCV(bandwidths=bandwidths).fit(X, y)
    assert np.ndim(reg.bandwidth_) == 0 and reg.bandwidth_ > 0
    assert reg.best_score_ >= grid.best_score_
    check = NadarayaWatsonRegressorCV(bandwidths=[reg.bandwidth_]).fit(X, y)
    assert check.best_score_ == pytest.approx(reg.best_score_, rel=1e-12)
    labels = np.where(y > 0, "a", "b")
    clf = NadarayaWatsonClassifierCV(refine=True, cv=3).fit(X, labels)
    clf_grid = NadarayaWatsonClassifierCV(cv=3).fit(X, labels)
    assert clf.best_score_ >= clf_grid.best_score_
    assert clf.predict(X).shape == labels.shape


@pytest.mark.parametrize("d", [1, 2])
def test_training_fold_of_zero_weights(d):
    """A fold whose training points all have weight zero: its test points
    follow the empty-window policy (no crash)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(10, d))
    y = rng.normal(size=10)
    w = np.zeros(10)
    w[[0, 1]] = 1.0
    folds = [(np.arange(2, 10), np.arange(0, 5)), (np.arange(0, 8), np.arange(0, 10))]
    cv = NadarayaWatsonRegressorCV(bandwidths=[0.5], cv=folds)
    cv.fit(X, y, sample_weight=w)
    assert np.isfinite(cv.best_score_)
    # The second fold scores like a plain fit on rows 0 and 1 (the only
    # training points of positive weight).
    plain = NadarayaWatsonRegressor(bandwidth=0.5).fit(X[:2], y[:2])
    expected = -np.average((plain.predict(X) - y) ** 2, weights=w)
    np.testing.assert_allclose(
        cv.cv_results_["split1_test_score"][0], expected, rtol=1e-12
    )


@pytest.mark.parametrize("n", [1, 2, 3, 5, 7, 10, 20, 30, 61])
def test_default_grid_is_powers_of_a_root_of_two(n):
    m = grid_multipliers(n)
    assert m.shape == (n,)
    lo, hi = DEFAULT_GRID_RANGE
    assert np.exp(np.mean(np.log(m))) == pytest.approx(np.sqrt(lo * hi))
    if n > 1:
        steps = np.log2(m[1:] / m[:-1])
        np.testing.assert_allclose(steps, steps[0], rtol=1e-12)
        # 2**(1/j) or 2**j apart, spanning the default range most nearly.
        j = steps[0] if steps[0] >= 1 else 1 / steps[0]
        assert j == pytest.approx(round(j))
        octaves = np.log2(hi / lo)
        options = [1 / k for k in range(1, 4 * n)] + list(range(1, 12))
        spans = np.array([(n - 1) * o for o in options])
        best = np.min(np.abs(np.log(spans / octaves)))
        assert abs(np.log((n - 1) * steps[0] / octaves)) <= best + 0.5
        assert 0.5 * octaves <= (n - 1) * steps[0] <= 2.0 * octaves
    if n == 30:
        np.testing.assert_allclose(m[4:] / m[:-4], 2.0, rtol=1e-14)
        assert m[0] == pytest.approx(0.0405, abs=1e-4)
        assert m[-1] == pytest.approx(6.169, abs=1e-3)


def test_default_grid_scores_equal_refitting():
    # The default grid's candidates share squared Gaussian weights.
    X, y, w = _data(d=1)
    cv = NadarayaWatsonRegressorCV(cv=None).fit(X, y, sample_weight=w)
    bws = cv.cv_results_["param_bandwidth"]
    for i in (0, 5, 17, 29):
        pred = _brute_loo(_Reg("gaussian"), X, y.reshape(-1, 1), w, bws[i])
        keep = w > 0
        mse = np.average((pred[:, 0] - y)[keep] ** 2, weights=w[keep])
        assert -cv.cv_results_["mean_test_score"][i] == pytest.approx(mse, rel=1e-10)


def test_bandwidths_a_huge_power_of_two_apart():
    # Coefficients 2**1023.8 apart: no chain (and no overflow) between them.
    X, y, _ = _data(d=1)
    h1 = 1e77
    cv = NadarayaWatsonRegressorCV(bandwidths=[h1, h1 / 2**511.9]).fit(X, y)
    assert np.all(np.isfinite(cv.cv_results_["mean_test_score"]))


@pytest.mark.parametrize("cv", [None, 3])
@pytest.mark.parametrize(
    "make",
    [NadarayaWatsonRegressorCV, NadarayaWatsonClassifierCV, LocalLinearRegressorCV],
)
def test_n_jobs_runs_the_search_in_parallel_with_the_same_scores(make, cv):
    X, y, w = _data(n=60)
    if make is NadarayaWatsonClassifierCV:
        y = (y > 0).astype(int)
    with MIN_BATCH.set(8):
        serial = make(bandwidths=6, cv=cv).fit(X, y, sample_weight=w)
        with traced() as trace:
            parallel = make(bandwidths=6, cv=cv, n_jobs=2).fit(X, y, sample_weight=w)
    # Every pass of at least two batches' queries runs in batches, one per
    # worker (passes of fewer queries run whole).
    big = [n for n in trace.values("sums", "n_queries") if n >= 2 * 8]
    batches = trace.values("batch", "n_queries")
    assert big and len(batches) >= 2 * len(big)
    assert max(batches) <= (max(big) + 1) // 2
    # Batches may take other (equally exact) distance paths: rounding, which
    # the small local linear systems of sparse windows amplify.
    rtol = 1e-6 if make is LocalLinearRegressorCV else 1e-11
    np.testing.assert_allclose(
        parallel.cv_results_["mean_test_score"],
        serial.cv_results_["mean_test_score"],
        rtol=rtol,
    )
    assert parallel.best_index_ == serial.best_index_


# -- scorers: folds that lack a class, sample weights, the task ----------------------


def _folds_lacking_a_class(labels):
    """Two explicit splits: the first test fold lacks the last class, the
    second holds every class, and so does every training fold."""
    idx = np.arange(len(labels))
    test0 = idx[labels != np.unique(labels)[-1]][: len(idx) // 3]
    test1 = np.setdiff1d(idx, test0)[::2]
    return [(np.setdiff1d(idx, test), test) for test in (test0, test1)]


def _labels(n_classes, n):
    """Three classes named by strings; two by 0 and 1 (scikit-learn's scorers
    of binary probabilities want a positive label for strings)."""
    names = np.array(["ash", "elm", "oak"]) if n_classes == 3 else np.array([0, 1])
    return names[np.arange(n) % n_classes]


def _fold_probabilities(X, labels, w, folds, bw):
    """Each test fold's probabilities from a plain fit on its training fold."""
    out = []
    for train, test in folds:
        wt = None if w is None else w[train]
        clf = NadarayaWatsonClassifier(bandwidth=bw).fit(X[train], labels[train], wt)
        out.append((test, clf.predict_proba(X[test])))
    return out


# The metrics, told every class, that the scorers of these names compute.
LABELLED_METRICS = {
    "neg_log_loss": lambda y, p, c, w: -log_loss(y, p, labels=c, sample_weight=w),
    "neg_brier_score": lambda y, p, c, w: (
        -brier_score_loss(y, p, labels=c, sample_weight=w)
    ),
    "d2_log_loss_score": lambda y, p, c, w: d2_log_loss_score(
        y, p, labels=c, sample_weight=w
    ),
    "top_k_accuracy": lambda y, p, c, w: top_k_accuracy_score(
        y, p, k=2, labels=c, sample_weight=w
    ),
    "roc_auc_ovo": lambda y, p, c, w: roc_auc_score(
        y, p, multi_class="ovo", labels=c, sample_weight=w
    ),
}


# Top-2 of two classes is moot; roc_auc_score takes no weights for one-vs-one.
LACKING_A_CLASS = [
    (scoring, n_classes, weighted)
    for scoring in LABELLED_METRICS
    for n_classes in (2, 3)
    for weighted in (False, True)
    if (n_classes == 3 or scoring in ("neg_log_loss", "neg_brier_score"))
    and not (weighted and scoring == "roc_auc_ovo")
]


@pytest.mark.parametrize("scoring, n_classes, weighted", LACKING_A_CLASS)
def test_folds_lacking_a_class_are_scored_against_every_class(
    scoring, n_classes, weighted
):
    X, _, w = _data(n=36, seed=9)
    w = w + 0.5 if weighted else None
    labels = _labels(n_classes, 36)
    folds = _folds_lacking_a_class(labels)
    cv = NadarayaWatsonClassifierCV(bandwidths=[0.6, 1.5], cv=folds, scoring=scoring)
    cv.fit(X, labels, sample_weight=w)
    metric = LABELLED_METRICS[scoring]
    for i, bw in enumerate([0.6, 1.5]):
        for f, (test, proba) in enumerate(_fold_probabilities(X, labels, w, folds, bw)):
            wf = None if w is None else w[test]
            if n_classes == 2 and scoring != "neg_log_loss":
                proba = proba[:, 1]  # the scorers of binary labels take P(1)
            expected = metric(labels[test], proba, cv.classes_, wf)
            got = cv.cv_results_[f"split{f}_test_score"][i]
            assert got == pytest.approx(expected, rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("scoring, n_classes", [("roc_auc_ovr", 3), ("roc_auc", 2)])
def test_score_undefined_on_a_fold_lacking_a_class_is_refused_up_front(
    scoring, n_classes
):
    X, _, _ = _data(n=36, seed=9)
    labels = _labels(n_classes, 36)
    folds = _folds_lacking_a_class(labels)
    last = re.escape(repr([np.unique(labels)[-1].item()]))
    match = rf"scoring='{scoring}' is undefined \(NaN\) on test fold 0 .*{last}"
    with traced() as trace, pytest.raises(ValueError, match=match):
        NadarayaWatsonClassifierCV(cv=folds, scoring=scoring).fit(X, labels)
    assert trace.count("search_start") == 0  # refused before the search


def _unweighted_scorer(estimator, X, y):
    return -np.mean(np.abs(estimator.predict(X) - y))


def _unweighted_accuracy(estimator, X, y):
    return np.mean(estimator.predict(X) == y)


@pytest.mark.parametrize("cv", [None, 3])
@pytest.mark.parametrize(
    "make, scoring, name",
    [
        (NadarayaWatsonRegressorCV, "neg_max_error", "'neg_max_error'"),
        (LocalLinearRegressorCV, "neg_max_error", "'neg_max_error'"),
        (NadarayaWatsonRegressorCV, make_scorer(max_error), r"make_scorer\(max_error"),
        (NadarayaWatsonRegressorCV, _unweighted_scorer, "_unweighted_scorer"),
        (NadarayaWatsonClassifierCV, _unweighted_accuracy, "_unweighted_accuracy"),
    ],
    ids=["neg_max_error", "local linear", "make_scorer", "callable", "classifier"],
)
def test_scorer_that_takes_no_sample_weight_is_refused_up_front(
    make, scoring, name, cv
):
    X, y, w = _data(n=30, seed=6)
    if make is NadarayaWatsonClassifierCV:
        y = np.where(y > 0, "up", "down")
    unweighted = make(bandwidths=[0.5, 1.0], cv=cv, scoring=scoring).fit(X, y)
    assert np.all(np.isfinite(unweighted.cv_results_["mean_test_score"]))
    match = rf"scoring={name}.* does not take sample_weight, which fit was given"
    with traced() as trace, pytest.raises(ValueError, match=match):
        make(bandwidths=[0.5, 1.0], cv=cv, scoring=scoring).fit(X, y, sample_weight=w)
    assert trace.count("search_start") == 0  # refused before the search


CLASSIFICATION_SCORERS = [
    "accuracy",
    "f1_macro",
    "balanced_accuracy",
    "neg_log_loss",
    "roc_auc_ovr",
    "top_k_accuracy",
    "adjusted_rand_score",
    make_scorer(accuracy_score),
]
REGRESSION_SCORERS = ["r2", "neg_mean_squared_error", make_scorer(mean_absolute_error)]


@pytest.mark.parametrize(
    "make, scoring",
    [
        (make, s)
        for make in (NadarayaWatsonRegressorCV, LocalLinearRegressorCV)
        for s in CLASSIFICATION_SCORERS
    ]
    + [(NadarayaWatsonClassifierCV, s) for s in REGRESSION_SCORERS],
    ids=repr,
)
def test_scorer_of_the_other_task_is_refused_up_front(make, scoring):
    X, y, _ = _data(n=30, seed=7)
    if make is NadarayaWatsonClassifierCV:
        y = (y > 0).astype(int)  # integer labels: a regression metric would run
    task = "regression" if make is NadarayaWatsonClassifierCV else "classification"
    name = re.escape(repr(scoring))  # a name, or the repr of a scorer object
    match = rf"scoring={name} is a {task} scorer, but {make.__name__} is"
    with traced() as trace, pytest.raises(ValueError, match=match):
        make(bandwidths=[0.5, 1.0], scoring=scoring).fit(X, y)
    assert trace.count("search_start") == 0  # refused before the search


@pytest.mark.filterwarnings("ignore")  # what some metrics warn on these data
@pytest.mark.parametrize(
    "make, cv, weighted",
    [
        (NadarayaWatsonRegressorCV, None, True),
        (LocalLinearRegressorCV, 3, False),
        (NadarayaWatsonClassifierCV, "lacking a class", True),
        (NadarayaWatsonClassifierCV, None, False),
    ],
    ids=["regressor", "local linear", "classifier", "binary"],
)
def test_every_scikit_learn_scorer_scores_or_is_refused_by_name(make, cv, weighted):
    """Whatever the scorer, the search runs or fails with its name."""
    X, y, w = _data(n=30, seed=8)
    y = y + 3.0  # positive targets, which some regression metrics need
    if make is NadarayaWatsonClassifierCV:
        y = np.array(["a", "b", "c"])[np.arange(30) % 3]
        if cv is None:
            y = y == "a"
        else:
            cv = _folds_lacking_a_class(y)
    w = w + 0.5 if weighted else None
    for name in get_scorer_names():
        est = make(bandwidths=[0.5, 1.0], cv=cv, scoring=name)
        try:
            est.fit(X, y, sample_weight=w)
        except ValueError as exc:
            assert str(exc).startswith(f"scoring={name!r} "), (name, str(exc))


# -- weights near the ends of the float range --------------------------------------


CV_ESTIMATORS = [
    NadarayaWatsonRegressorCV,
    LocalLinearRegressorCV,
    NadarayaWatsonClassifierCV,
]


def _scores(make, X, y, w, cv):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no overflow on the way
        est = make(bandwidths=[0.4, 1.2, [0.6, 1.5]], cv=cv)
        return est.fit(X, y, sample_weight=w).cv_results_["mean_test_score"]


# The weights' scale is the subject: the grid's best is at an edge for some.
@pytest.mark.filterwarnings("ignore::sknw.exceptions.GridEdgeWarning")
@pytest.mark.parametrize("make", CV_ESTIMATORS, ids=lambda c: c.__name__)
def test_subnormal_weights_score_as_their_multiples_by_a_power_of_two(make):
    """All weights subnormal: each is below one unit (leave-one-out removes the
    point), and the scores are exactly those of the weights times 2**1000."""
    X, y, w = _data(n=30, seed=10)
    if make is NadarayaWatsonClassifierCV:
        y = np.digitize(y, [-0.5, 0.5])
    tiny = (w + 0.5) * 1e-310
    assert np.all(tiny < np.finfo(np.float64).tiny)
    for cv in (None, 3):
        got = _scores(make, X, y, tiny, cv)
        assert np.all(np.isfinite(got))
        np.testing.assert_array_equal(got, _scores(make, X, y, tiny * 2.0**1000, cv))
    # Below one unit, every weight removes its point: leave-one-out scores at
    # any such scale are the same.
    small = np.ldexp(tiny, 1025)  # the same weights, normal and below 1
    assert np.all(small < 1)
    np.testing.assert_array_equal(
        _scores(make, X, y, tiny, None), _scores(make, X, y, small, None)
    )


# The weights' scale is the subject: the grid's best is at an edge for some.
@pytest.mark.filterwarnings("ignore::sknw.exceptions.GridEdgeWarning")
@pytest.mark.parametrize("make", CV_ESTIMATORS, ids=lambda c: c.__name__)
def test_kfold_scores_do_not_depend_on_the_scale_of_the_weights(make):
    # K-fold removes no unit of weight: any power of two leaves the scores as
    # they are, from near overflow to the smallest normal weights.
    X, y, w = _data(n=30, seed=11)
    if make is NadarayaWatsonClassifierCV:
        y = (y > 0).astype(int)
    reference = _scores(make, X, y, w, 3)
    for exponent in (-1018, -500, 500, 1020):
        scaled = np.ldexp(w, exponent)
        np.testing.assert_array_equal(_scores(make, X, y, scaled, 3), reference)


# Leave-one-out and K-fold on the fast backends: the grid's candidates are
# each scored by the backend "auto" picks for them (from AUTO_MIN_SAMPLES
# training points), against the definitions.

#: One-feature kernels with a fast backend, and that backend.
FAST_KERNELS = {
    "gaussian": "fgt",
    "epanechnikov": "sorted",
    "boxcar": "sorted",
    "triangular": "sorted",
    "quartic": "sorted",
    "triweight": "sorted",
    "tricube": "sorted",
    "cosine": "tree",
}


def _fast_data(n=800, seed=3):
    """Points on [0, 1] with a far cluster, targets offset far from zero
    (their spread is 2), integer frequency weights."""
    rng = np.random.default_rng(seed)
    x = np.r_[rng.uniform(0.0, 1.0, n - 20), rng.uniform(3.0, 3.05, 20)]
    X = x[:, None]
    y = 1e4 + np.sin(6 * x) + rng.normal(0.0, 0.3, n)
    w = rng.integers(1, 4, n).astype(float)
    return X, y, w


def _nw_reference(kernel, h, Xq, Xt, yt, wt, own=None):
    """Nadaraya--Watson estimates from the definition; ``own`` (the training
    index of each query) leaves its row out; empty windows
    take the weighted average of the nearest points that keep a weight."""
    D = cdist(Xq, Xt)
    W = np.broadcast_to(wt, D.shape).copy()
    if own is not None:
        W[np.arange(len(own)), own] = 0.0
    # In the log domain, shifted by each row's largest log weight (the ratio
    # does not change), so that far queries do not underflow.
    with np.errstate(divide="ignore"):
        L = np.where(W > 0, np.asarray(kernel.log_value(D / h)), -np.inf)
    top = L.max(axis=1, keepdims=True)
    K = np.exp(L - np.where(np.isfinite(top), top, 0.0)) * W
    den = K.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        est = K @ yt / den
    for i in np.flatnonzero(den == 0):
        dist = np.where(W[i] > 0, D[i], np.inf)
        near = dist == dist.min()
        est[i] = np.average(yt[near], weights=W[i][near])
    return est


# From tiny windows to wide ones (the tree serves all but the widest, so the
# grid ends there): the widest scores best.
@pytest.mark.filterwarnings("ignore::sknw.exceptions.GridEdgeWarning")
@pytest.mark.parametrize("cv", [None, 3])
@pytest.mark.parametrize("kernel_name", sorted(FAST_KERNELS))
def test_cv_scores_on_the_fast_backends_equal_the_definitions(kernel_name, cv):
    X, y, w = _fast_data()
    # From windows so small that each point's own term dominates its sums
    # (or is all of them) to wide ones.
    bandwidths = [0.0004, 0.0015, 0.01, 0.08]
    with traced() as trace:
        est = NadarayaWatsonRegressorCV(
            kernels=[kernel_name], bandwidths=bandwidths, cv=cv
        ).fit(X, y, sample_weight=w)
    n_splits = 1 if cv is None else cv
    # Every candidate by the fast backend (the tree: those of small windows).
    fast = len(bandwidths) - (FAST_KERNELS[kernel_name] == "tree")
    assert trace.count("sums", backend=FAST_KERNELS[kernel_name]) == n_splits * fast
    kernel = est.kernel_
    splits = [(None, None)] if cv is None else KFold(cv).split(X)
    scores = np.zeros((len(bandwidths), n_splits))
    for f, (train, test) in enumerate(splits):
        for b, h in enumerate(bandwidths):
            if train is None:
                own = np.arange(X.shape[0])
                pred = _nw_reference(kernel, h, X, X, y, w, own)
                test = slice(None)
            else:
                pred = _nw_reference(kernel, h, X[test], X[train], y[train], w[train])
            err = (y[test] - pred) ** 2
            scores[b, f] = -np.average(err, weights=w[test])
    np.testing.assert_allclose(
        est.cv_results_["mean_test_score"], scores.mean(axis=1), rtol=1e-10
    )


# From tiny windows to wide ones, to compare the backends: the best is at
# an edge of the grid.
@pytest.mark.filterwarnings("ignore::sknw.exceptions.GridEdgeWarning")
@pytest.mark.parametrize("cv", [None, 3])
@pytest.mark.parametrize("kernel_name", sorted(FAST_KERNELS))
def test_classifier_cv_on_the_fast_backends_equals_the_dense_one(kernel_name, cv):
    X, y, w = _fast_data(seed=4)
    labels = (np.sin(9 * X[:, 0]) + 0.3 * (y - 1e4) > 0).astype(int)
    grid = [0.0004, 0.002, 0.01, 0.08]
    scores = []
    for algorithm in ("auto", "brute"):
        # The Brier score: the fast paths bound each probability's error,
        # which does not bound the log-loss of a probability near 0 (a
        # point whose leave-one-out window holds only the other class).
        search = NadarayaWatsonClassifierCV(
            kernels=[kernel_name],
            bandwidths=grid,
            cv=cv,
            algorithm=algorithm,
            scoring="neg_brier_score",
        )
        with traced() as trace:
            scores.append(search.fit(X, labels, sample_weight=w).cv_results_)
        if algorithm == "auto":
            # Every candidate by the fast backend (the tree: small windows).
            fast = len(grid) - (FAST_KERNELS[kernel_name] == "tree")
            used = trace.count("sums", backend=FAST_KERNELS[kernel_name])
            assert used == (1 if cv is None else cv) * fast
    np.testing.assert_allclose(
        scores[0]["mean_test_score"], scores[1]["mean_test_score"], rtol=1e-10
    )


@pytest.mark.parametrize("cv", [None, 3])
def test_local_linear_cv_on_the_tree_equals_the_dense_one(cv):
    X, y, w = _fast_data(seed=5)
    X = np.column_stack([X[:, 0], np.random.default_rng(5).uniform(0, 1, len(y))])
    grid = [0.05, 0.1, 0.3]
    fits = [
        LocalLinearRegressorCV(
            kernels=["epanechnikov"], bandwidths=grid, cv=cv, algorithm=algorithm
        ).fit(X, y, sample_weight=w)
        for algorithm in ("tree", "brute")
    ]
    np.testing.assert_allclose(
        fits[0].cv_results_["mean_test_score"],
        fits[1].cv_results_["mean_test_score"],
        rtol=1e-9,
    )


@pytest.mark.parametrize(
    "search", [NadarayaWatsonRegressorCV, LocalLinearRegressorCV, "classifier"]
)
def test_groups_reach_the_splitter(search):
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(120, 1))
    y = np.sin(6 * X[:, 0]) + 0.1 * rng.normal(size=120)
    if search == "classifier":
        search, y = NadarayaWatsonClassifierCV, y > 0
    groups = np.repeat(np.arange(12), 10)
    got = search(cv=GroupKFold(4), bandwidths=6).fit(X, y, groups=groups)
    splits = list(GroupKFold(4).split(X, y, groups))
    ref = search(cv=splits, bandwidths=6).fit(X, y)
    np.testing.assert_array_equal(
        got.cv_results_["mean_test_score"], ref.cv_results_["mean_test_score"]
    )
    # Every test fold holds whole groups.
    for _, test in splits:
        assert np.all(np.isin(groups, groups[test]) == np.isin(np.arange(120), test))
    with pytest.raises(ValueError, match="cv=None is exact leave-one-out"):
        search().fit(X, y, groups=groups)
    with pytest.raises(ValueError, match="119 labels for 120 samples"):
        search(cv=GroupKFold(4)).fit(X, y, groups=groups[1:])


def test_groups_through_metadata_routing():
    rng = np.random.default_rng(1)
    X = rng.uniform(size=(90, 1))
    y = np.sin(6 * X[:, 0]) + 0.1 * rng.normal(size=90)
    groups = np.repeat(np.arange(9), 10)
    with sklearn.config_context(enable_metadata_routing=True):
        search = NadarayaWatsonRegressorCV(cv=GroupKFold(3), bandwidths=5)
        search.set_fit_request(groups=True)
        got = cross_validate(
            search,
            X,
            y,
            cv=GroupKFold(3),
            params={"groups": groups},
            return_estimator=True,
        )
    outer = list(GroupKFold(3).split(X, y, groups))
    for (train, _), fitted in zip(outer, got["estimator"], strict=True):
        ref = NadarayaWatsonRegressorCV(cv=GroupKFold(3), bandwidths=5)
        ref.fit(X[train], y[train], groups=groups[train])
        np.testing.assert_array_equal(fitted.bandwidth_, ref.bandwidth_)


def test_default_regression_score_is_sklearns_mean_squared_error():
    rng = np.random.default_rng(0)
    pred, y = rng.normal(size=(20, 3)), rng.normal(size=(20, 3))
    w = rng.uniform(0, 2, 20)
    score = _scoring.make_scorer(None, "regression")
    assert np.isclose(score(pred, y, w), -mean_squared_error(y, pred, sample_weight=w))
    assert np.isclose(
        score(pred[:, :1], y[:, 0], None), -mean_squared_error(y[:, 0], pred[:, 0])
    )


def _anisotropic(n, seed=0):
    """Two relevant features on different scales and an irrelevant one."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(n, 3))
    y = np.sin(3.0 * X[:, 0]) + 0.3 * X[:, 1] ** 2 + 0.2 * rng.normal(size=n)
    return X, y


@pytest.mark.parametrize(
    "search",
    [NadarayaWatsonRegressorCV, LocalLinearRegressorCV, NadarayaWatsonClassifierCV],
    ids=lambda c: c.__name__,
)
def test_large_training_sets_search_the_shape_on_a_subsample(search):
    """Beyond SEARCH_SUBSAMPLE points, the search on the deterministic
    subsample gives the shape and the size; the grid SUBSAMPLE_WINDOW_STEPS
    about that size is scored on every point (equal to the same grid given
    explicitly), and SUBSAMPLE_ROUNDS of the search follow there."""
    X, y = _anisotropic(360)
    if search is NadarayaWatsonClassifierCV:
        y = (y > np.median(y)).astype(int)
    w = np.ones(X.shape[0])
    w[::7] = 0.0  # the subsample is drawn from the points of positive weight
    w[1::7] = 2.0
    with search_module.SEARCH_SUBSAMPLE.set(120):
        with traced() as trace:
            one_round = search().fit(X, y, sample_weight=w)
        # The polish of each search: the subsample's is lighter, and there is
        # none on every point.
        assert trace.values("polish", "subsample") == [SUBSAMPLE_POLISH]
        one_round_shape = trace.values("searched", "shape")[-1]
        with search_module.SUBSAMPLE_ROUNDS.set(0):
            with traced() as trace:
                est = search().fit(X, y, sample_weight=w)
            # Leave-one-out searches the distinct rows (sorted, see
            # sknw._selection.weights); the search on 120 of them ends first.
            sub, full = trace.details("searched")
            n = distinct_rows(X, y, w)[0].shape[0]
            assert sub["n_samples"] == 120 and full["n_samples"] == n
            assert trace.values("search_start", "n_samples") == [n, 120]
            # Without a round on every point, the subsample's shape stays.
            assert np.array_equal(full["shape"], sub["shape"])
            assert not np.all(sub["shape"] == 1.0)  # the search moved the shape
            mults = est.cv_results_["bandwidth_multiplier"]
            step = mults[1] / mults[0]
            steps = search_module.SUBSAMPLE_WINDOW_STEPS
            around = sub["multiplier"] * step ** np.arange(-steps, steps + 1)
            assert mults.size >= 2 * steps + 1
            # The window about the subsample's size (extended where its best
            # is at an edge).
            close = np.isclose(around[:, None], mults[None], rtol=1e-12)
            assert np.all(np.any(close, axis=1))
            # Every point scored: the exact leave-one-out of the same grid.
            grid = list(est.cv_results_["param_bandwidth"])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ref = search(bandwidths=grid).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(
        est.cv_results_["mean_test_score"],
        ref.cv_results_["mean_test_score"],
        rtol=1e-10,
    )
    np.testing.assert_allclose(est.bandwidth_, ref.bandwidth_, rtol=1e-12)
    # One round on every point moves each feature by at most one factor.
    moved = one_round_shape / full["shape"]
    assert np.all(np.isin(np.round(np.log2(moved), 12), [-0.5, 0.0, 0.5]))
    assert one_round.cv_results_["bandwidth_multiplier"].size >= 2 * steps + 1


@pytest.mark.parametrize("cv", [None, 3])
def test_kfold_and_small_sets_search_every_point(cv):
    """K-fold and sets within SEARCH_SUBSAMPLE take the search on every
    point: the same choice whatever the subsample size."""
    X, y = _anisotropic(150, seed=1)
    fits = []
    for size in (10**9, 100 if cv is not None else 150):
        with search_module.SEARCH_SUBSAMPLE.set(size):
            fits.append(NadarayaWatsonRegressorCV(cv=cv).fit(X, y))
    assert np.array_equal(fits[0].bandwidth_, fits[1].bandwidth_)
    np.testing.assert_array_equal(
        fits[0].cv_results_["mean_test_score"], fits[1].cv_results_["mean_test_score"]
    )


def test_subsample_shape_holds_out_of_sample():
    """The shape searched on a subsample predicts new data about as well as
    the shape searched on every point, and far better than the rule's."""
    Q = np.random.default_rng(3).uniform(-1.0, 1.0, size=(2000, 3))
    truth = np.sin(3.0 * Q[:, 0]) + 0.3 * Q[:, 1] ** 2
    errors = {300: [], 10**9: [], "rule": []}
    for seed in (2, 3, 4):
        X, y = _anisotropic(1200, seed=seed)
        for size in (300, 10**9):
            with search_module.SEARCH_SUBSAMPLE.set(size):
                est = NadarayaWatsonRegressorCV().fit(X, y)
            errors[size].append(np.mean((est.predict(Q) - truth) ** 2))
        rule = NadarayaWatsonRegressor(bandwidth="scott").fit(X, y)
        errors["rule"].append(np.mean((rule.predict(Q) - truth) ** 2))
    mean = {key: np.mean(value) for key, value in errors.items()}
    assert mean[300] <= 1.1 * mean[10**9]
    assert mean[300] < 0.8 * mean["rule"]


def test_continuous_polish_holds_out_of_sample():
    """The polish of the continuous bandwidths after the shape search does
    not overfit the leave-one-out score: out of sample it predicts at least
    about as well as the coordinate search's shape (mean over draws), and it
    never scores worse in sample."""
    Q = np.random.default_rng(3).uniform(-1.0, 1.0, size=(2000, 3))
    truth = np.sin(3.0 * Q[:, 0]) + 0.3 * Q[:, 1] ** 2
    errors = {"polished": [], "coarse": []}
    for seed in (2, 3, 4):
        X, y = _anisotropic(400, seed=seed)
        for label in ("polished", "coarse"):
            coarse = label == "coarse"
            off = POLISH_ROUNDS.set(0) if coarse else nullcontext()
            with off, traced() as trace:
                est = LocalLinearRegressorCV().fit(X, y)
            # The coarse search: no round of the polish.
            rounds = [0] if coarse else [POLISH_ROUNDS.default]
            assert trace.values("polish", "rounds") == rounds
            errors[label].append(np.mean((est.predict(Q) - truth) ** 2))
            best = np.nanmax(est.cv_results_["mean_test_score"])
            if label == "polished":
                polished_best = best
        assert polished_best >= best
    assert np.mean(errors["polished"]) <= 1.02 * np.mean(errors["coarse"])


def test_continuous_polish_moves_the_shape_off_the_coarse_factors():
    """With two or three continuous features the polish moves each feature's
    bandwidth within a factor sqrt(2) of the coordinate search's, and the
    score reported is the exact leave-one-out score of the choice."""
    X, y = _anisotropic(300, seed=5)
    with traced() as trace:
        est = NadarayaWatsonRegressorCV().fit(X, y)
    (shape,) = trace.values("searched", "shape")
    # The coordinate search's factors are powers of sqrt(2); the polish
    # leaves at least one feature between them.
    steps = np.log(shape) / np.log(POLISH_FACTOR)
    assert not np.allclose(steps, np.round(steps), atol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        at = NadarayaWatsonRegressorCV(bandwidths=[est.bandwidth_]).fit(X, y)
    np.testing.assert_allclose(at.best_score_, est.best_score_, rtol=1e-12)


def _brute_loo_mse(x, y, h):
    """Leave-one-out MSE of Gaussian Nadaraya--Watson, by its formula."""
    K = np.exp(-0.5 * ((x[:, None] - x[None, :]) / h) ** 2)
    np.fill_diagonal(K, 0.0)
    return float(np.mean((K @ y / K.sum(axis=1) - y) ** 2))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_default_grid_size_polished_to_the_loo_optimum(seed):
    """With a default grid the chosen size is polished between its grid
    neighbours: its leave-one-out score (by the formula) is best_score_,
    better than the grid's best and a local optimum (2 % either side)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.0, 1.0, 150)
    y = np.sin(2 * np.pi * x**3) ** 3 + rng.normal(0.0, 0.1, x.size)
    cv = NadarayaWatsonRegressorCV().fit(x[:, None], y)
    h = float(np.ravel(cv.bandwidth_)[0])
    grid_best = np.max(cv.cv_results_["mean_test_score"])
    assert -_brute_loo_mse(x, y, h) == pytest.approx(cv.best_score_, rel=1e-10)
    assert cv.best_score_ > grid_best
    for factor in (0.98, 1.02):
        assert _brute_loo_mse(x, y, h * factor) > -cv.best_score_
    # The default estimator reports the polished multiplier of the rule.
    default = NadarayaWatsonRegressor().fit(x[:, None], y)
    assert default.bandwidth_ == pytest.approx(cv.bandwidth_, rel=1e-12)
    rule = grid_reference(x[:, None], Gaussian())
    selection = default.bandwidth_selection_
    assert selection["multiplier"] * rule == pytest.approx(h, rel=1e-12)
    assert selection["score"] == cv.best_score_


def test_user_grid_and_refine_are_not_polished():
    x, y, _ = _data(n=60, seed=3)
    grid = [0.1, 0.2, 0.4, 0.8]
    cv = NadarayaWatsonRegressorCV(bandwidths=grid).fit(x, y)
    assert cv.bandwidth_ in grid
    assert cv.best_score_ == np.max(cv.cv_results_["mean_test_score"])
