"""Nearest-neighbour bandwidths (``span``): against a brute-force definition,
against fixed-bandwidth fits at each query's bandwidth, against statsmodels'
``lowess``, and the counting of weighted and left-out neighbours."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from scipy.spatial.distance import cdist
from sklearn.model_selection import GridSearchCV, KFold, LeaveOneOut
from sklearn.utils._param_validation import InvalidParameterError

from sknw import (
    LocalLinearRegressor,
    LocalLinearRegressorCV,
    LocalPolynomialRegressor,
    LocalPolynomialRegressorCV,
    NadarayaWatsonClassifier,
    NadarayaWatsonClassifierCV,
    NadarayaWatsonRegressor,
    NadarayaWatsonRegressorCV,
)
from sknw._bandwidth.span import SHARED_TARGETS, neighbour_count, neighbour_distances
from sknw._local.frame import QUERY_CENTRED_TOLERANCE
from sknw._sums import Head, kernel_sums
from sknw._sums._sorted import SortedIndex, SortedLadder, ladder_sums
from sknw._trace import traced
from sknw.exceptions import SingularDesignWarning
from sknw.kernels import get_kernel


def reference_bandwidths(Qs, Xs, span, metric="euclidean", w=None, own=None):
    """The k-th neighbour distances by sorting every row (an independent
    definition: frequency weights, ``own`` left out with all its weight)."""
    n = Xs.shape[0]
    w = np.ones(n) if w is None else np.asarray(w, dtype=float)
    D = cdist(Qs, Xs, metric)
    out = np.empty(Qs.shape[0])
    for i in range(Qs.shape[0]):
        wi = w.copy()
        if own is not None:
            wi[own[i]] = 0.0
        total = wi.sum()
        k = min(max(np.floor(span * total + 1e-10), 2.0), total)
        order = np.argsort(D[i])
        cum = np.cumsum(wi[order])
        out[i] = D[i, order[np.argmax(cum >= k - 1e-9)]]
    return out


def reference_weights(Q, X, span, kernel, b=1.0, metric="euclidean", w=None):
    """Kernel weights ``w K(d / h_q)`` in the coordinates ``x / b``."""
    Qs, Xs = Q / b, X / b
    h = reference_bandwidths(Qs, Xs, span, metric, w)
    D = cdist(Qs, Xs, metric)
    K = get_kernel(kernel)(D / h[:, None])
    return K * (1.0 if w is None else w)


def _data(seed, n, d):
    rng = np.random.default_rng(seed)
    X = rng.gamma(2.0, 1.0, size=(n, d))
    y = np.sin(X).sum(axis=1) + 0.2 * rng.normal(size=n)
    Q = rng.uniform(0.0, 6.0, size=(15, d))
    return X, y, Q, rng.integers(1, 4, size=n).astype(float)


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov", "tricube", "boxcar"])
@pytest.mark.parametrize(
    "d, metric, b",
    [
        (1, "euclidean", 1.0),
        (1, "minkowski", 1.0),
        (2, "euclidean", [1.0, 3.0]),
        (2, "cityblock", [2.0, 1.0]),
        (3, "chebyshev", 1.0),
    ],
)
@pytest.mark.parametrize("span", [0.05, 0.3, 1.0])
@pytest.mark.parametrize("weighted", [False, True])
def test_regressor_equals_brute_force(kernel, d, metric, b, span, weighted):
    X, y, Q, w = _data(0, 60, d)
    w = w if weighted else None
    est = NadarayaWatsonRegressor(kernel=kernel, span=span, metric=metric, bandwidth=b)
    est.fit(X, y, sample_weight=w)
    W = reference_weights(Q, X, span, kernel, np.asarray(b), metric, w)
    expected = W @ y / W.sum(axis=1)
    ok = W.sum(axis=1) > 0  # empty windows take the nearest points
    assert ok.sum() >= 10
    assert_allclose(est.predict(Q)[ok], expected[ok], rtol=1e-12, atol=1e-12)
    A = est.attention_weights(Q)
    assert_allclose(A[ok], (W / W.sum(axis=1, keepdims=True))[ok], atol=1e-14)


@pytest.mark.parametrize("d", [1, 2])
def test_line_and_dense_bandwidths_agree(d):
    rng = np.random.default_rng(3)
    X = np.round(rng.normal(size=(80, d)), 1)  # ties
    Q = np.vstack([X[:10], rng.normal(size=(20, d))])
    w = rng.integers(0, 3, size=80).astype(float)
    for weights in (None, w):
        for span in (0.01, 0.2, 0.7, 1.0):
            got = neighbour_distances(
                Q,
                X,
                span,
                metric="euclidean",
                metric_params=None,
                scale=None,
                sample_weight=weights,
                tile_elements=1 << 10,
            )
            ref = reference_bandwidths(Q, X, span, w=weights)
            assert_allclose(got, np.maximum(ref, np.finfo(float).tiny), rtol=1e-15)


@pytest.mark.parametrize("d", [1, 2])
@pytest.mark.parametrize("weighted", [False, True])
def test_left_out_bandwidths_are_those_of_a_refit(d, weighted):
    rng = np.random.default_rng(4)
    X = np.round(rng.normal(size=(50, d)), 1)
    w = rng.integers(1, 4, size=50).astype(float) if weighted else None
    own = np.arange(50)
    kept = None if w is None else w - np.minimum(w, 1.0)
    for span in (0.05, 0.3, 1.0):
        got = neighbour_distances(
            X,
            X,
            span,
            metric="euclidean",
            metric_params=None,
            scale=None,
            sample_weight=w,
            own=own,
            kept=kept,
            tile_elements=1 << 12,
        )
        for i in range(50):
            # The refit without one unit of point i's weight.
            if w is None:
                Xr, wr = np.delete(X, i, axis=0), None
            else:
                Xr, wr = X, w.copy()
                wr[i] -= 1.0
            ref = reference_bandwidths(X[i : i + 1], Xr, span, w=wr)[0]
            assert got[i] == max(ref, np.finfo(float).tiny)


def test_neighbour_count_follows_lowess():
    assert neighbour_count(0.3, 100) == 30
    assert neighbour_count(0.3, 10) == 3
    assert neighbour_count(1 / 3, 3) == 2  # at least 2
    assert neighbour_count(0.29, 10) == 2
    assert neighbour_count(1.0, 1.5) == 1.5  # at most the total
    assert neighbour_count(0.7, 10) == 7  # 0.7 * 10 rounds below 7


@pytest.mark.parametrize(
    "est",
    [
        NadarayaWatsonRegressor(kernel="epanechnikov"),
        LocalLinearRegressor(kernel="tricube"),
        LocalPolynomialRegressor(kernel="gaussian", degree=2),
    ],
    ids=["nw", "ll", "lp2"],
)
def test_each_query_is_a_fixed_bandwidth_fit(est):
    """With a span, the estimate and standard error at a query are those of
    the fixed-bandwidth fit at its bandwidth."""
    X, y, Q, _ = _data(1, 80, 1)
    est = est.set_params(span=0.25)
    pred, std = est.fit(X, y).predict(Q, return_std=True)
    h = reference_bandwidths(Q, X, 0.25)
    for i in range(Q.shape[0]):
        fixed = type(est)(**{**est.get_params(), "span": None, "bandwidth": h[i]})
        p, s = (
            fixed.set_params(algorithm="brute")
            .fit(X, y)
            .predict(Q[i : i + 1], return_std=True)
        )
        assert_allclose(pred[i], p[0], rtol=1e-10, atol=1e-12)
        assert_allclose(std[i], s[0], rtol=1e-8, atol=1e-12)


def test_classifier_equals_brute_force():
    X, y, Q, w = _data(2, 70, 2)
    labels = np.where(y > np.median(y), "hi", "lo")
    clf = NadarayaWatsonClassifier(kernel="tricube", span=0.2).fit(X, labels, w)
    W = reference_weights(Q, X, 0.2, "tricube", clf.bandwidth_, w=w)
    onehot = (labels[:, None] == clf.classes_[None, :]).astype(float)
    expected = W @ onehot / W.sum(axis=1, keepdims=True)
    ok = W.sum(axis=1) > 0
    assert_allclose(clf.predict_proba(Q)[ok], expected[ok], atol=1e-13)


@pytest.mark.parametrize(
    "make",
    [
        lambda s: NadarayaWatsonRegressor(kernel="tricube", span=s),
        lambda s: LocalLinearRegressor(kernel="tricube", span=s),
    ],
    ids=["nw", "ll"],
)
def test_integer_weights_repeat_rows(make):
    X, y, Q, w = _data(5, 40, 1)
    rep = np.repeat(np.arange(40), w.astype(int))
    for span in (0.1, 0.5):
        a = make(span).fit(X, y, sample_weight=w).predict(Q)
        b = make(span).fit(X[rep], y[rep]).predict(Q)
        assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("frac", [0.1, 0.3, 2 / 3, 1.0])
@pytest.mark.parametrize("it", [0, 1, 3])
def test_lowess_equals_statsmodels(frac, it):
    lowess = pytest.importorskip("statsmodels.nonparametric.smoothers_lowess").lowess
    rng = np.random.default_rng(6)
    x = rng.uniform(0, 10, 300)
    y = np.sin(x) + 0.3 * rng.standard_t(2, 300)
    y[::23] += 6.0  # outliers
    est = LocalLinearRegressor(kernel="tricube", span=frac, robust_iterations=it)
    est.fit(x[:, None], y)
    expected = lowess(y, x, frac=frac, it=it, delta=0.0, return_sorted=False)
    assert_allclose(est.predict(x[:, None]), expected, rtol=1e-9, atol=1e-9)
    xv = np.linspace(-0.5, 10.5, 40)
    expected = lowess(y, x, frac=frac, it=it, delta=0.0, xvals=xv)
    ok = np.isfinite(expected)
    assert ok.sum() >= 35
    assert_allclose(est.predict(xv[:, None])[ok], expected[ok], rtol=1e-9, atol=1e-9)


@settings(max_examples=25, deadline=None)
@given(
    st.integers(0, 10**6),
    st.sampled_from([0.05, 0.2, 0.6]),
    st.integers(1, 60),
)
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_answers_do_not_depend_on_the_batch(seed, span, m):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(40, 2))
    y = rng.normal(size=40)
    Q = rng.normal(scale=2.0, size=(m, 2))
    est = LocalLinearRegressor(kernel="epanechnikov", span=span).fit(X, y)
    batch = est.predict(Q)
    single = np.array([est.predict(Q[i : i + 1])[0] for i in range(m)])
    assert_allclose(batch, single, rtol=1e-12, atol=1e-12)


def test_bandwidth_reports_the_median_span_bandwidth():
    X, y, _, _ = _data(7, 200, 1)
    est = NadarayaWatsonRegressor(span=0.3).fit(X, y)
    h = reference_bandwidths(X, X, 0.3)
    assert_allclose(est.bandwidth_, np.median(h), rtol=1e-12)
    assert est.bandwidth_selection_["method"] == "span"
    assert est.bandwidth_selection_["n_neighbors"] == 60
    assert est.algorithm_ == "brute"


def test_span_refuses_what_it_cannot_serve():
    X, y, _, _ = _data(8, 30, 1)
    with pytest.raises(InvalidParameterError):
        NadarayaWatsonRegressor(span=0.0).fit(X, y)
    with pytest.raises(InvalidParameterError):
        NadarayaWatsonRegressor(span=1.5).fit(X, y)
    with pytest.raises(ValueError, match="cannot serve a bandwidth per query"):
        NadarayaWatsonRegressor(span=0.5, algorithm="tree", kernel="tricube").fit(X, y)
    est = NadarayaWatsonRegressor(span=0.5, algorithm="sorted", kernel="tricube")
    assert est.fit(X, y).algorithm_ == "sorted"  # explicit: any number of points
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"x": X[:, 0], "c": pd.Categorical(["a", "b"] * 15)})
    with pytest.raises(ValueError, match="continuous features only"):
        NadarayaWatsonRegressor(span=0.5).fit(frame, y)


@pytest.mark.parametrize("d", [1, 3])
@pytest.mark.parametrize("kernel", ["gaussian", "tricube", "epanechnikov"])
@pytest.mark.parametrize("metric", ["euclidean", "sqeuclidean"])
def test_local_constant_gradient_with_span_is_the_derivative(d, kernel, metric):
    # The derivative of the brute-force estimate (its weights from the k-th
    # neighbour distances by sorting), by central differences: the moving
    # bandwidth's term included.
    rng = np.random.default_rng(20)
    n = 300
    X = rng.gamma(2.0, 1.0, size=(n, d))
    y = np.c_[np.sin(X).sum(axis=1), np.cos(X[:, 0])] + 0.1 * rng.normal(size=(n, 2))
    w = rng.integers(1, 4, size=n).astype(float)
    Q = rng.uniform(0.5, 4.0, size=(12, d))
    shape = np.linspace(1.0, 2.0, d)
    est = NadarayaWatsonRegressor(kernel=kernel, span=0.2, metric=metric)
    est.set_params(bandwidth=shape).fit(X, y, sample_weight=w)
    grad = est.gradient(Q)
    assert grad.shape == (12, 2, d)

    def estimate(P):
        W = reference_weights(P, X, 0.2, kernel, shape, metric, w)
        return W @ y / W.sum(axis=1)[:, None]

    step = 1e-6
    for f in range(d):
        E = np.zeros(d)
        E[f] = step
        fd = (estimate(Q + E) - estimate(Q - E)) / (2 * step)
        assert_allclose(grad[:, :, f], fd, rtol=1e-6, atol=1e-6)
    if metric == "euclidean":
        # The fixed-bandwidth fit at the first query's bandwidth has its
        # estimate there but not its derivative (the moving bandwidth's term).
        h = reference_bandwidths(Q[:1] / shape, X / shape, 0.2, metric, w)
        fixed = NadarayaWatsonRegressor(kernel=kernel, bandwidth=shape * h[0])
        fixed.fit(X, y, sample_weight=w)
        assert_allclose(fixed.predict(Q[:1]), est.predict(Q[:1]), rtol=1e-10)
        assert np.max(np.abs(fixed.gradient(Q[:1]) - grad[:1])) > 1e-3


def test_local_linear_slopes_with_span_are_weighted_least_squares():
    X, y, Q, _ = _data(9, 100, 2)
    est = LocalLinearRegressor(kernel="tricube", span=0.3).fit(X, y)
    W = reference_weights(Q, X, 0.3, "tricube", est.bandwidth_)
    grad = est.gradient(Q)
    for i in range(Q.shape[0]):
        A = np.hstack([np.ones((100, 1)), X - Q[i]]) * np.sqrt(W[i])[:, None]
        coef = np.linalg.lstsq(A, y * np.sqrt(W[i]), rcond=None)[0]
        assert_allclose(grad[i], coef[1:], rtol=1e-8, atol=1e-10)


def test_coincident_points_fill_a_window():
    # More than k points at the query: the bandwidth is 0 and only they weigh.
    X = np.r_[np.zeros(5), np.arange(1.0, 11.0)][:, None]
    y = np.r_[np.full(5, 2.0), np.arange(1.0, 11.0)]
    est = NadarayaWatsonRegressor(kernel="gaussian", span=0.2).fit(X, y)
    assert_allclose(est.predict([[0.0]]), [2.0])
    assert np.isfinite(est.predict([[0.5]])).all()


def _cv_data(n=60, seed=10):
    rng = np.random.default_rng(seed)
    X = rng.gamma(2.0, 1.0, size=(n, 1))
    y = np.sin(X[:, 0]) + 0.2 * rng.normal(size=n)
    return X, y


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize(
    "plain, search, spans",
    [
        (NadarayaWatsonRegressor(), NadarayaWatsonRegressorCV(), [0.05, 0.2, 0.5, 1]),
        (LocalLinearRegressor(), LocalLinearRegressorCV(), [0.1, 0.2, 0.4, 0.8]),
        (
            LocalPolynomialRegressor(degree=2),
            LocalPolynomialRegressorCV(degree=2),
            [0.4, 0.7, 1.0],
        ),
    ],
    ids=["nw", "ll", "lp2"],
)
@pytest.mark.parametrize("cv", [None, 5])
def test_span_search_equals_refits(plain, search, spans, cv):
    X, y = _cv_data()
    kernels = ["tricube", "gaussian"]
    est = search.set_params(kernels=kernels, spans=spans, cv=cv).fit(X, y)
    splitter = LeaveOneOut() if cv is None else KFold(cv)
    grid = GridSearchCV(
        plain,
        {"kernel": kernels, "span": spans},
        cv=splitter,
        scoring="neg_mean_squared_error",
    ).fit(X, y)
    assert_allclose(
        est.cv_results_["mean_test_score"],
        grid.cv_results_["mean_test_score"],
        rtol=1e-9,
        atol=1e-12,
    )
    assert est.span_ == grid.best_params_["span"]
    assert_allclose(est.cv_results_["param_span"], spans * 2)
    refit = type(plain)(**{**plain.get_params(), **grid.best_params_}).fit(X, y)
    assert_allclose(est.predict(X), refit.predict(X), rtol=1e-9, atol=1e-12)


def test_classifier_span_search_equals_refits():
    X, y = _cv_data(70, 11)
    labels = (y > 0).astype(int)
    spans = [0.1, 0.3, 0.9]
    est = NadarayaWatsonClassifierCV(kernels=["tricube"], spans=spans).fit(X, labels)
    expected = []
    for span in spans:
        losses = []
        for i in range(70):
            rest = np.delete(np.arange(70), i)
            clf = NadarayaWatsonClassifier(kernel="tricube", span=span)
            p = clf.fit(X[rest], labels[rest]).predict_proba(X[i : i + 1])[0]
            losses.append(-np.log(np.clip(p[labels[i]], 1e-15, 1.0)))
        expected.append(-np.mean(losses))
    assert_allclose(est.cv_results_["mean_test_score"], expected, rtol=1e-9)
    assert est.span_ == spans[int(np.argmax(expected))]


@pytest.mark.parametrize("search", [NadarayaWatsonRegressorCV, LocalLinearRegressorCV])
def test_span_search_counts_frequency_weights(search):
    X, y = _cv_data(40, 12)
    w = np.random.default_rng(0).integers(1, 4, size=40).astype(float)
    rep = np.repeat(np.arange(40), w.astype(int))
    spans = [0.1, 0.3, 0.6]
    a = search(kernels=["epanechnikov"], spans=spans).fit(X, y, sample_weight=w)
    b = search(kernels=["epanechnikov"], spans=spans).fit(X[rep], y[rep])
    assert_allclose(
        a.cv_results_["mean_test_score"],
        b.cv_results_["mean_test_score"],
        rtol=1e-10,
    )


def test_span_search_refuses_what_it_cannot_search():
    X, y = _cv_data(30, 13)
    with pytest.raises(ValueError, match="without bandwidths"):
        NadarayaWatsonRegressorCV(spans=[0.5], bandwidths=5).fit(X, y)
    with pytest.raises(ValueError, match="in \\(0, 1\\]"):
        NadarayaWatsonRegressorCV(spans=[0.5, 2.0]).fit(X, y)
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"x": X[:, 0], "c": pd.Categorical(["a", "b"] * 15)})
    with pytest.raises(ValueError, match="continuous features only"):
        NadarayaWatsonRegressorCV(spans=[0.5]).fit(frame, y)


# The extrapolating queries' local linear designs are ridged.
@pytest.mark.filterwarnings("ignore::sknw.exceptions.RidgedDesignWarning")
@pytest.mark.parametrize("kernel", ["tricube", "epanechnikov", "triweight", "biweight"])
@pytest.mark.parametrize("weighted", [False, True])
def test_sorted_ladder_equals_dense(kernel, weighted):
    rng = np.random.default_rng(14)
    n = 1500
    X = rng.gamma(1.5, 1.0, size=(n, 1))  # bandwidths over several octaves
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=n)
    w = rng.integers(1, 4, size=n).astype(float) if weighted else None
    Q = np.r_[X[:200, 0], np.linspace(-3, 15, 60)][:, None]  # and extrapolating
    for make in (NadarayaWatsonRegressor, LocalLinearRegressor):
        fast = make(kernel=kernel, span=0.1).fit(X, y, sample_weight=w)
        dense = make(kernel=kernel, span=0.1, algorithm="brute")
        dense.fit(X, y, sample_weight=w)
        assert fast.algorithm_ == "sorted"
        assert len(fast._smoother.index.indexes) >= 3
        assert_allclose(fast.predict(Q), dense.predict(Q), rtol=1e-9, atol=1e-9)
    single = np.array([fast.predict(Q[i : i + 1])[0] for i in range(0, 260, 13)])
    assert_allclose(single, fast.predict(Q)[::13], rtol=1e-12, atol=1e-12)


def test_sorted_ladder_leaves_points_out():
    rng = np.random.default_rng(15)
    X = rng.gamma(2.0, 1.0, size=(800, 1))
    V = rng.normal(size=(800, 2))
    w = rng.integers(1, 3, size=800).astype(float)
    kept = w - 1.0
    own = np.arange(800)
    h = neighbour_distances(
        X,
        X,
        0.05,
        metric="euclidean",
        metric_params=None,
        scale=None,
        sample_weight=w,
        own=own,
        kept=kept,
        tile_elements=1 << 16,
    )
    head = Head(get_kernel("tricube"), h)
    ladder = SortedLadder(X, V, w, head.kernel, h, None)
    ladder.key = None
    params = {
        "metric": "euclidean",
        "sample_weight": w,
        "exclude_self": True,
        "self_index": own,
        "self_weight": kept,
    }
    ((S, den, _),) = ladder_sums(X, X, V, [head], index=ladder, **params)
    ((S0, den0, M0),) = kernel_sums(X, X, V, [head], **params)
    scale = np.exp(M0)
    assert_allclose(den, den0 * scale, rtol=1e-9)
    assert_allclose(S / den[:, None], S0 / den0[:, None], rtol=1e-8, atol=1e-10)


def test_span_backend_choice():
    rng = np.random.default_rng(16)
    X = rng.uniform(size=(600, 1))
    y = X[:, 0]
    assert NadarayaWatsonRegressor(kernel="tricube", span=0.2).fit(X, y).algorithm_ == (
        "sorted"
    )
    for kernel in ("boxcar", "gaussian"):
        est = NadarayaWatsonRegressor(kernel=kernel, span=0.2).fit(X, y)
        assert est.algorithm_ == "brute"
    assert (
        NadarayaWatsonRegressor(kernel="tricube", span=0.2)
        .fit(X[:100], y[:100])
        .algorithm_
        == "brute"
    )
    with pytest.raises(ValueError, match="cannot serve span"):
        NadarayaWatsonRegressor(kernel="boxcar", span=0.2, algorithm="sorted").fit(X, y)
    with pytest.raises(ValueError, match="cannot serve"):
        NadarayaWatsonRegressor(kernel="gaussian", span=0.2, algorithm="fgt").fit(X, y)
    est = LocalPolynomialRegressor(degree=2, kernel="tricube", span=0.2).fit(X, y)
    assert est.algorithm_ == "sorted"


@pytest.mark.parametrize("per_query_ratio", [False, True])
def test_exact_windowed_moments_equal_the_definition(per_query_ratio):
    rng = np.random.default_rng(17)
    X = rng.gamma(2.0, 1.0, size=(700, 1))
    V = rng.normal(size=(700, 2))
    w = rng.uniform(0.5, 2.0, size=700)
    kernel = get_kernel("tricube")
    index = SortedIndex(X, V, w, kernel, 0.8, None, powers=2)
    q = np.linspace(-1.0, 9.0, 50)
    ratio = rng.uniform(1.0, 2.0, 50) if per_query_ratio else None
    xq = q - index.origin
    acc, bound = index.exact_moments(xq / 0.8, 2, 1 << 12, xq, ratio)
    h = 0.8 / (np.ones(50) if ratio is None else ratio)
    u = (X[:, 0][None, :] - q[:, None]) / h[:, None]
    K = kernel(np.abs(u)) * w
    Vx = np.c_[V, np.ones(700)]
    for j in range(3):
        expected = (K * u**j) @ Vx
        assert_allclose(acc[:, j], expected, rtol=1e-12, atol=1e-12)
        assert np.all(bound[:, j] <= 1e-12 * np.abs(K * u**j).sum(axis=1) + 1e-300)
    # The expansion agrees within its own bound.
    fast, _, fbound = index.moment_sums(xq / 0.8, xq, 2, None, ratio)
    assert np.all(np.abs(fast[:, :, -1] - acc[:, :, -1]) <= fbound + bound + 1e-15)


def test_queries_beyond_the_expansion_bound_take_windowed_sums():
    rng = np.random.default_rng(18)
    X = rng.gamma(2.0, 1.0, size=(3000, 1))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=3000)
    Q = np.linspace(0.2, 8.0, 200)[:, None]
    fast = LocalLinearRegressor(kernel="tricube", span=0.2).fit(X, y)
    with QUERY_CENTRED_TOLERANCE.set(1e-13), traced() as trace:
        got = fast.predict(Q)
    windowed = trace.values("local_moments", "n_queries", exact=True)
    assert windowed and windowed[0] > 20  # many queries took the windowed sums
    dense = LocalLinearRegressor(kernel="tricube", span=0.2, algorithm="brute")
    assert_allclose(got, dense.fit(X, y).predict(Q), rtol=1e-10, atol=1e-12)


def test_sorted_ladder_with_parallel_batches():
    x = np.random.default_rng(19).uniform(0, 10, 1000)
    y = np.sin(x)
    Q = np.linspace(0, 10, 600)[:, None]
    for it in (0, 1):
        one = LocalLinearRegressor(kernel="tricube", span=0.3, robust_iterations=it)
        two = LocalLinearRegressor(
            kernel="tricube", span=0.3, robust_iterations=it, n_jobs=2
        )
        a, b = one.fit(x[:, None], y).predict(Q), two.fit(x[:, None], y).predict(Q)
        assert two.algorithm_ == "sorted"
        assert_allclose(a, b, rtol=1e-12, atol=1e-13)


@pytest.mark.filterwarnings("error::RuntimeWarning")
@pytest.mark.filterwarnings("ignore::sknw.exceptions.SingularDesignWarning")
def test_sorted_ladder_with_k_points_at_the_query():
    # A bandwidth of 0 (30 points at 0.25, k = 18): the exact sums serve it.
    rng = np.random.default_rng(20)
    x = np.r_[np.full(30, 0.25), rng.uniform(0, 1, 570)]
    y = np.r_[np.ones(30), np.zeros(570)]
    for make in (NadarayaWatsonRegressor, LocalLinearRegressor):
        est = make(kernel="tricube", span=0.03, empty_window="raise")
        assert est.fit(x[:, None], y).algorithm_ == "sorted"
        assert_allclose(est.predict([[0.25]]), [1.0])
    clf = NadarayaWatsonClassifier(kernel="tricube", span=0.03, empty_window="raise")
    assert_allclose(clf.fit(x[:, None], y > 0).predict_proba([[0.25]]), [[0.0, 1.0]])


@pytest.mark.parametrize("weights", [None, "integer", "float"])
def test_shared_target_search_equals_the_bisection(weights):
    rng = np.random.default_rng(19)
    n = 1500
    X = np.round(rng.gamma(2.0, 1.5, size=(n, 1)), 1)  # many ties
    w = {
        None: None,
        "integer": rng.integers(1, 4, size=n).astype(float),
        "float": rng.uniform(0.1, 2.0, size=n),
    }[weights]
    Q = np.r_[X[:100], np.round(rng.uniform(-2.0, 20.0, (200, 1)), 2)]
    own = np.arange(100)
    kw = {
        "metric": "euclidean",
        "metric_params": None,
        "scale": None,
        "sample_weight": w,
        "tile_elements": 1 << 20,
    }
    for span in (0.002, 0.05, 0.3, 1.0):
        fast = neighbour_distances(Q, X, span, **kw)
        fast_own = neighbour_distances(X[:100], X, span, own=own, **kw)
        with SHARED_TARGETS.set(-1), traced() as trace:  # bisection only
            slow = neighbour_distances(Q, X, span, **kw)
            slow_own = neighbour_distances(X[:100], X, span, own=own, **kw)
        assert trace.values("line_distances", "shared") == [False, False]
        assert_allclose(fast, slow, rtol=0, atol=0)
        assert_allclose(fast_own, slow_own, rtol=0, atol=0)
        tiny = np.finfo(np.float64).tiny  # a distance of 0 comes out as tiny
        expected = np.maximum(reference_bandwidths(Q, X, span, w=w), tiny)
        assert_allclose(fast, expected, rtol=1e-15)
        expected = reference_bandwidths(X[:100], X, span, w=w, own=own)
        assert_allclose(fast_own, np.maximum(expected, tiny), rtol=1e-15)


@pytest.mark.parametrize("d", [1, 2])
@pytest.mark.parametrize("weighted", [False, True])
def test_neighbour_index_is_at_the_span_distance(d, weighted):
    rng = np.random.default_rng(23)
    X = rng.gamma(2.0, 1.0, size=(400, d))
    w = rng.integers(1, 4, size=400).astype(float) if weighted else None
    Q = rng.uniform(0.0, 6.0, size=(50, d))
    h, index = neighbour_distances(
        Q,
        X,
        0.1,
        metric="euclidean",
        metric_params=None,
        scale=None,
        sample_weight=w,
        tile_elements=1 << 16,
        with_index=True,
    )
    assert_allclose(h, reference_bandwidths(Q, X, 0.1, w=w), rtol=1e-15)
    at = np.sqrt(np.sum((Q - X[index]) ** 2, axis=1))
    assert_allclose(at, h, rtol=1e-14)


@pytest.mark.parametrize("d", [1, 2, 3])
def test_a_span_over_copies_of_one_point_predicts_its_value(d):
    # Every window holds only copies of the point (k-th distance 0): the
    # estimate is that point's value everywhere, never NaN.
    rng = np.random.default_rng(0)
    Q = np.vstack([np.full(d, 0.3), rng.uniform(-5, 5, (4, d))])
    for n in (1, 3):
        X = np.full((n, d), 0.3)
        for make in (NadarayaWatsonRegressor, LocalLinearRegressor):
            fit = make(span=0.5).fit(X, np.full(n, 2.0))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SingularDesignWarning)
                assert_allclose(fit.predict(Q), 2.0)
            assert np.all(np.isfinite(fit.bandwidth_) & (fit.bandwidth_ > 1e-300))
        clf = NadarayaWatsonClassifier(span=0.5).fit(X, ["a"] * n)
        assert_allclose(clf.predict_proba(Q), 1.0)
