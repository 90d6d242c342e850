"""Property tests: invariances and identities that hold for any data.

The regressor's permutation, translation/rotation, affine-target and
convex-combination properties under a scalar bandwidth are in
``test_regression.py``; this file covers the classifier, the cross-validated
estimators, per-feature bandwidths, sample weights with zeros, multi-output
targets and leave-one-out. The number of examples comes from the Hypothesis
profile (see ``conftest.py``).
"""

import warnings

import numpy as np
import pytest
from _leave_out import weights_without
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from numpy.testing import assert_allclose, assert_array_equal

from sknw import (
    NadarayaWatsonClassifier,
    NadarayaWatsonClassifierCV,
    NadarayaWatsonRegressor,
    NadarayaWatsonRegressorCV,
)
from sknw.exceptions import EmptyWindowWarning
from sknw.kernels import KERNELS

NONNEGATIVE = sorted(name for name, cls in KERNELS.items() if cls.nonnegative)
#: Continuous kernels: rounding of distances cannot switch a weight on or off.
CONTINUOUS = ["gaussian", "laplacian", "cauchy", "epanechnikov", "triangular"]
LABELS = np.array(["ant", "bee", "cat"])

#: Coordinates on a coarse grid (many ties and duplicates) or anywhere.
coordinates = st.one_of(
    st.integers(-20, 20).map(lambda v: v / 4.0),
    st.floats(-5.0, 5.0, allow_subnormal=False),
)
#: Targets and weights of moderate magnitude (or zero): extreme magnitudes,
#: whose products leave the normal float range, are in test_extremes.py.
targets = st.one_of(
    st.integers(-400, 400).map(lambda v: v / 4.0),
    st.floats(1e-6, 100.0),
    st.floats(-100.0, -1e-6),
)
weight_values = st.one_of(st.just(0.0), st.floats(1e-3, 5.0))


@st.composite
def problems(draw, max_n=12, max_d=3, n_outputs=1, weights=True):
    """``X`` (n, d), targets ``y``, class indices, queries ``Q`` and weights."""
    n = draw(st.integers(2, max_n))
    d = draw(st.integers(1, max_d))
    m = draw(st.integers(1, 6))
    X = draw(hnp.arrays(np.float64, (n, d), elements=coordinates))
    Q = draw(hnp.arrays(np.float64, (m, d), elements=coordinates))
    shape = (n,) if n_outputs == 1 else (n, n_outputs)
    y = draw(hnp.arrays(np.float64, shape, elements=targets))
    classes = draw(hnp.arrays(np.intp, n, elements=st.integers(0, 2)))
    w = None
    if weights and draw(st.booleans()):
        w = draw(hnp.arrays(np.float64, n, elements=weight_values))
        w[draw(st.integers(0, n - 1))] = draw(st.floats(0.5, 5.0))
    return X, y, classes, Q, w


@st.composite
def bandwidths(draw, d, per_feature=True):
    """A scalar bandwidth or, when allowed, one per feature."""
    positive = st.floats(0.05, 20.0)
    if per_feature and draw(st.booleans()):
        return draw(hnp.arrays(np.float64, d, elements=positive))
    return draw(positive)


def _silently(fn, *args, **kwargs):
    """Call ``fn`` with every warning silenced (a user grid at its edge)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def quietly(fn, *args, **kwargs):
    """Call ``fn`` with empty-window warnings silenced (the policy is tested)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyWindowWarning)
        return fn(*args, **kwargs)


def random_rotation(seed, d):
    rng = np.random.default_rng(seed)
    R, _ = np.linalg.qr(rng.normal(size=(d, d)))
    return R


# -- permutation of the training rows ---------------------------------------------


@given(
    problem=problems(),
    kernel=st.sampled_from(NONNEGATIVE),
    data=st.data(),
)
def test_classifier_permutation_invariance(problem, kernel, data):
    X, _, classes, Q, w = problem
    labels = LABELS[classes]
    h = data.draw(bandwidths(X.shape[1]))
    perm = data.draw(st.permutations(range(len(X))))
    perm = np.array(perm)
    clf = NadarayaWatsonClassifier(kernel=kernel, bandwidth=h)
    proba = quietly(lambda: clf.fit(X, labels, w).predict_proba(Q))
    A = quietly(clf.attention_weights, Q)
    assert np.all(np.isfinite(proba)) and np.all(np.isfinite(A))
    wp = None if w is None else w[perm]
    permuted = NadarayaWatsonClassifier(kernel=kernel, bandwidth=h)
    permuted_proba = quietly(lambda: permuted.fit(X[perm], labels[perm], wp))
    assert_allclose(quietly(permuted_proba.predict_proba, Q), proba, atol=1e-12)
    assert_allclose(quietly(permuted.attention_weights, Q), A[:, perm], atol=1e-12)


@given(problem=problems(), kernel=st.sampled_from(CONTINUOUS), data=st.data())
def test_cv_permutation_invariance(problem, kernel, data):
    X, y, classes, Q, w = problem
    perm = np.array(data.draw(st.permutations(range(len(X)))))
    assume(w is None or np.count_nonzero(w) >= 2)
    wp = None if w is None else w[perm]
    grid = [data.draw(bandwidths(X.shape[1])) for _ in range(2)]
    reg = NadarayaWatsonRegressorCV(kernels=kernel, bandwidths=grid)
    moved = NadarayaWatsonRegressorCV(kernels=kernel, bandwidths=grid)
    reg.fit(X, y, w)
    moved.fit(X[perm], y[perm], wp)
    scale = np.abs(y).max() ** 2 + 1.0
    assert_allclose(
        moved.cv_results_["mean_test_score"],
        reg.cv_results_["mean_test_score"],
        rtol=1e-9,
        atol=1e-9 * scale,
    )
    labels = LABELS[classes]
    clf = NadarayaWatsonClassifierCV(kernels=kernel, bandwidths=grid)
    moved_clf = NadarayaWatsonClassifierCV(kernels=kernel, bandwidths=grid)
    clf.fit(X, labels, w)
    moved_clf.fit(X[perm], labels[perm], wp)
    assert_allclose(
        moved_clf.cv_results_["mean_test_score"],
        clf.cv_results_["mean_test_score"],
        rtol=1e-9,
        atol=1e-9,
    )


# -- translation and rotation --------------------------------------------------------


@given(
    problem=problems(),
    kernel=st.sampled_from(CONTINUOUS),
    h=st.floats(0.5, 10.0),
    seed=st.integers(0, 2**32 - 1),
    shift=st.floats(-10.0, 10.0),
)
def test_classifier_translation_and_rotation_invariance(
    problem, kernel, h, seed, shift
):
    X, _, classes, Q, w = problem
    d = X.shape[1]
    R = random_rotation(seed, d)
    t = shift * np.random.default_rng(seed).normal(size=d)
    labels = LABELS[classes]
    clf = NadarayaWatsonClassifier(kernel=kernel, bandwidth=h, empty_window="mean")
    proba = quietly(lambda: clf.fit(X, labels, w).predict_proba(Q))
    moved = NadarayaWatsonClassifier(kernel=kernel, bandwidth=h, empty_window="mean")
    moved_proba = quietly(
        lambda: moved.fit(X @ R.T + t, labels, w).predict_proba(Q @ R.T + t)
    )
    assert np.all(np.isfinite(proba))
    assert_allclose(moved_proba, proba, rtol=1e-8, atol=1e-8)


# Random problems and grids: the best candidate is often at a grid's edge.
@pytest.mark.filterwarnings("ignore::sknw.exceptions.GridEdgeWarning")
@given(
    problem=problems(),
    kernel=st.sampled_from(["gaussian", "laplacian", "cauchy"]),
    seed=st.integers(0, 2**32 - 1),
    shift=st.floats(-10.0, 10.0),
    grid=st.lists(st.floats(0.5, 10.0), min_size=1, max_size=3),
)
def test_cv_translation_and_rotation_invariance(problem, kernel, seed, shift, grid):
    X, y, _, _, w = problem
    assume(w is None or np.count_nonzero(w) >= 2)
    d = X.shape[1]
    R = random_rotation(seed, d)
    t = shift * np.random.default_rng(seed).normal(size=d)
    reg = NadarayaWatsonRegressorCV(kernels=kernel, bandwidths=grid).fit(X, y, w)
    moved = NadarayaWatsonRegressorCV(kernels=kernel, bandwidths=grid)
    moved.fit(X @ R.T + t, y, w)
    scale = np.abs(y).max() ** 2 + 1.0
    assert_allclose(
        moved.cv_results_["mean_test_score"],
        reg.cv_results_["mean_test_score"],
        rtol=1e-7,
        atol=1e-7 * scale,
    )


# -- affine maps of the targets --------------------------------------------------------


@given(
    problem=problems(n_outputs=2),
    kernel=st.sampled_from(CONTINUOUS),
    a=st.one_of(st.floats(-50.0, -0.01), st.floats(0.01, 50.0)),
    b=st.floats(-1e3, 1e3),
    data=st.data(),
)
def test_affine_map_of_multi_output_targets(problem, kernel, a, b, data):
    X, Y, _, Q, w = problem
    h = data.draw(bandwidths(X.shape[1]))
    reg = NadarayaWatsonRegressor(kernel=kernel, bandwidth=h)
    pred = quietly(lambda: reg.fit(X, Y, w).predict(Q))
    mapped = NadarayaWatsonRegressor(kernel=kernel, bandwidth=h)
    mapped_pred = quietly(lambda: mapped.fit(X, a * Y + b, w).predict(Q))
    assert np.all(np.isfinite(pred))
    scale = abs(a) * np.abs(Y).max() + abs(b)
    assert_allclose(mapped_pred, a * pred + b, rtol=0, atol=1e-10 * scale)


# Random problems: the default grid's best is often at its extension's limit.
@pytest.mark.filterwarnings("ignore::sknw.exceptions.GridEdgeWarning")
@given(
    problem=problems(),
    kernel=st.sampled_from(CONTINUOUS),
    a=st.one_of(st.floats(-50.0, -0.01), st.floats(0.01, 50.0)),
    b=st.floats(-1e3, 1e3),
)
def test_affine_map_of_targets_in_cv(problem, kernel, a, b):
    # Negative mean squared errors scale by a**2: the same ranking, the same
    # choice (ties aside) and mapped predictions.
    X, y, _, Q, w = problem
    assume(w is None or np.count_nonzero(w) >= 2)
    reg = NadarayaWatsonRegressorCV(kernels=kernel, bandwidths=4).fit(X, y, w)
    mapped = NadarayaWatsonRegressorCV(kernels=kernel, bandwidths=4)
    mapped.fit(X, a * y + b, w)
    scores = reg.cv_results_["mean_test_score"]
    scale = (np.abs(y).max() + 1.0) ** 2
    assert_allclose(
        mapped.cv_results_["mean_test_score"],
        a**2 * scores,
        rtol=1e-8,
        atol=1e-10 * a**2 * scale,
    )
    i, j = reg.best_index_, mapped.best_index_
    assert abs(scores[i] - scores[j]) <= 1e-8 * abs(scores[i]) + 1e-10 * scale
    if i == j:
        tol = 1e-10 * (abs(a) * np.abs(y).max() + abs(b))
        pred, mapped_pred = quietly(reg.predict, Q), quietly(mapped.predict, Q)
        assert_allclose(mapped_pred, a * pred + b, rtol=0, atol=tol)


# -- duplicating a point is doubling its weight ----------------------------------------


@st.composite
def duplicated(draw):
    """A problem with integer weights >= 1 and the index of a row to repeat."""
    X, y, classes, Q, _ = draw(problems(weights=False))
    w = draw(hnp.arrays(np.float64, len(X), elements=st.integers(1, 4)))
    i = draw(st.integers(0, len(X) - 1))
    rows = np.append(np.arange(len(X)), i)
    doubled = w.copy()
    doubled[i] *= 2
    return X, y, classes, Q, w, rows, doubled


@given(
    case=duplicated(),
    kernel=st.sampled_from(NONNEGATIVE),
    bandwidth=st.one_of(st.floats(0.05, 20.0), st.sampled_from(["scott", "silverman"])),
)
def test_classifier_duplicate_equals_double_weight(case, kernel, bandwidth):
    X, _, classes, Q, w, rows, doubled = case
    labels = LABELS[classes]
    a = NadarayaWatsonClassifier(kernel=kernel, bandwidth=bandwidth)
    b = NadarayaWatsonClassifier(kernel=kernel, bandwidth=bandwidth)
    quietly(a.fit, X[rows], labels[rows], w[rows])
    quietly(b.fit, X, labels, doubled)
    assert_allclose(a.bandwidth_, b.bandwidth_, rtol=1e-12)
    proba = quietly(a.predict_proba, Q)
    assert np.all(np.isfinite(proba))
    assert_allclose(proba, quietly(b.predict_proba, Q), atol=1e-10)


# Random problems: the default grid's best is often at its extension's limit.
@pytest.mark.filterwarnings("ignore::sknw.exceptions.GridEdgeWarning")
@given(case=duplicated(), kernel=st.sampled_from(CONTINUOUS))
def test_cv_duplicate_equals_double_weight(case, kernel):
    # A duplicated row and a doubled weight reach the same distinct rows
    # (sknw._selection.weights): leaving the row out removes both copies.
    # The same candidates for both: with several features the default grid
    # is followed by a search whose path (strict improvements) may differ by
    # the rounding of nearly equal scores, so the second fit takes the
    # first one's final grid as its own.
    X, y, classes, Q, w, rows, doubled = case
    a = NadarayaWatsonRegressorCV(kernels=kernel, bandwidths=3).fit(
        X[rows], y[rows], w[rows]
    )
    grid = list(a.cv_results_["param_bandwidth"])
    a = _silently(
        NadarayaWatsonRegressorCV(kernels=kernel, bandwidths=grid).fit,
        X[rows],
        y[rows],
        w[rows],
    )
    b = _silently(
        NadarayaWatsonRegressorCV(kernels=kernel, bandwidths=grid).fit, X, y, doubled
    )
    scale = (np.abs(y).max() + 1.0) ** 2
    assert_allclose(
        a.cv_results_["mean_test_score"],
        b.cv_results_["mean_test_score"],
        rtol=1e-9,
        atol=1e-10 * scale,
    )
    labels = LABELS[classes]
    c = NadarayaWatsonClassifierCV(kernels=kernel, bandwidths=3)
    grid = list(c.fit(X[rows], labels[rows], w[rows]).cv_results_["param_bandwidth"])
    c = _silently(
        NadarayaWatsonClassifierCV(kernels=kernel, bandwidths=grid).fit,
        X[rows],
        labels[rows],
        w[rows],
    )
    e = _silently(
        NadarayaWatsonClassifierCV(kernels=kernel, bandwidths=grid).fit,
        X,
        labels,
        doubled,
    )
    assert_allclose(
        c.cv_results_["mean_test_score"],
        e.cv_results_["mean_test_score"],
        rtol=1e-9,
        atol=1e-9,
    )


# -- convex combinations and probabilities --------------------------------------------


@given(
    problem=problems(n_outputs=3),
    kernel=st.sampled_from(NONNEGATIVE),
    policy=st.sampled_from(["nearest", "mean"]),
    data=st.data(),
)
def test_estimates_are_convex_combinations(problem, kernel, policy, data):
    X, Y, _, Q, w = problem
    h = data.draw(bandwidths(X.shape[1]))
    reg = NadarayaWatsonRegressor(kernel=kernel, bandwidth=h, empty_window=policy)
    pred = quietly(lambda: reg.fit(X, Y, w).predict(Q))
    A = quietly(reg.attention_weights, Q)
    assert np.all(A >= 0)
    assert_allclose(A.sum(axis=1), 1.0, rtol=1e-12)
    if w is not None:
        assert np.all(A[:, w == 0] == 0)
    assert_allclose(pred, A @ Y, rtol=1e-10, atol=1e-10 * np.abs(Y).max())
    used = Y if w is None else Y[w > 0]
    slack = 1e-12 * (np.abs(Y).max() + 1.0)
    assert np.all(pred >= used.min(axis=0) - slack)
    assert np.all(pred <= used.max(axis=0) + slack)


@given(
    problem=problems(),
    kernel=st.sampled_from(NONNEGATIVE),
    cv=st.sampled_from([None, 2]),
    data=st.data(),
)
def test_cv_classifier_probabilities(problem, kernel, cv, data):
    X, _, classes, Q, w = problem
    assume(w is None or np.count_nonzero(w) >= 2)
    assume(cv is None or len(X) >= 4)
    if cv is not None and w is not None:
        # No test fold of zero weights only (test_input_validation.py).
        w = w + 0.5
    labels = LABELS[classes]
    grid = [data.draw(bandwidths(X.shape[1])) for _ in range(2)]
    clf = NadarayaWatsonClassifierCV(kernels=kernel, bandwidths=grid, cv=cv)
    with warnings.catch_warnings():
        # K-fold splits of tiny data may warn about rare classes.
        warnings.simplefilter("ignore", UserWarning)
        clf.fit(X, labels, w)
        proba = clf.predict_proba(Q)
        predicted = clf.predict(Q)
    assert proba.shape == (len(Q), len(clf.classes_))
    assert np.all((proba >= 0) & (proba <= 1))
    assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    assert_array_equal(predicted, clf.classes_[proba.argmax(axis=1)])


@given(
    problem=problems(),
    kernel=st.sampled_from(NONNEGATIVE),
    policy=st.sampled_from(["nearest", "mean"]),
    data=st.data(),
)
def test_classifier_is_argmax_of_regressor_on_one_hot(problem, kernel, policy, data):
    X, _, classes, Q, w = problem
    labels = LABELS[classes]
    h = data.draw(bandwidths(X.shape[1]))
    params = {"kernel": kernel, "bandwidth": h, "empty_window": policy}
    clf = quietly(NadarayaWatsonClassifier(**params).fit, X, labels, w)
    onehot = (labels[:, None] == clf.classes_[None, :]).astype(float)
    reg = quietly(NadarayaWatsonRegressor(**params).fit, X, onehot, w)
    scores = quietly(reg.predict, Q)
    proba = quietly(clf.predict_proba, Q)
    assert np.all(np.isfinite(proba))
    assert_allclose(proba, scores, atol=1e-12)
    top2 = np.sort(scores, axis=1)[:, -2:] if scores.shape[1] > 1 else None
    clear = np.ones(len(Q), bool) if top2 is None else top2[:, 1] - top2[:, 0] > 1e-9
    predicted = quietly(clf.predict, Q)
    assert_array_equal(predicted[clear], clf.classes_[scores.argmax(axis=1)][clear])


# -- leave-one-out equals refitting ----------------------------------------------------


@st.composite
def loo_problems(draw):
    """Small problems with integer frequency weights (or none)."""
    X, y, classes, _, _ = draw(problems(max_n=9, weights=False))
    w = None
    if draw(st.booleans()):
        w = draw(hnp.arrays(np.float64, len(X), elements=st.integers(0, 3)))
        assume(np.count_nonzero(w) >= 2)
    return X, y, classes, w


def refit_without_row(make, X, V, w, i):
    """Refit without row ``i`` and its copies; the fitted estimator."""
    wi = weights_without(X, V, w, i)
    keep = wi > 0
    return quietly(make().fit, X[keep], V[keep], wi[keep])


@given(problem=loo_problems(), kernel=st.sampled_from(NONNEGATIVE), data=st.data())
def test_loo_regression_score_equals_refitting(problem, kernel, data):
    X, y, _, w = problem
    h = data.draw(bandwidths(X.shape[1]))
    cv = NadarayaWatsonRegressorCV(kernels=kernel, bandwidths=[h]).fit(X, y, w)

    def make():
        return NadarayaWatsonRegressor(kernel=kernel, bandwidth=h)

    pred = np.array(
        [
            quietly(refit_without_row(make, X, y, w, i).predict, X[i : i + 1])[0]
            for i in range(len(X))
        ]
    )
    expected = -np.average((pred - y) ** 2, weights=w)
    assert_allclose(
        cv.best_score_, expected, rtol=1e-9, atol=1e-12 * (np.abs(y).max() + 1) ** 2
    )


@given(problem=loo_problems(), kernel=st.sampled_from(NONNEGATIVE), data=st.data())
def test_loo_classification_score_equals_refitting(problem, kernel, data):
    X, _, classes, w = problem
    labels = LABELS[classes]
    h = data.draw(bandwidths(X.shape[1]))
    cv = NadarayaWatsonClassifierCV(kernels=kernel, bandwidths=[h]).fit(X, labels, w)

    def make():
        return NadarayaWatsonClassifier(kernel=kernel, bandwidth=h)

    p_true = []
    for i in range(len(X)):
        est = refit_without_row(make, X, labels, w, i)
        proba = quietly(est.predict_proba, X[i : i + 1])[0]
        # A class absent from the refit has probability 0.
        p_true.append(proba[est.classes_ == labels[i]].sum())
    p_true = np.clip(p_true, np.finfo(np.float64).eps, 1.0)
    expected = np.average(np.log(p_true), weights=w)
    assert_allclose(cv.best_score_, expected, rtol=1e-9, atol=1e-12)
