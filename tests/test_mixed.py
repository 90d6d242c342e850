"""Discrete features in the estimators, against independent formulas, brute
leave-one-out and statsmodels' KernelReg."""

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score

from sknw import (
    LocalLinearRegressor,
    LocalLinearRegressorCV,
    NadarayaWatsonClassifier,
    NadarayaWatsonClassifierCV,
    NadarayaWatsonRegressor,
    NadarayaWatsonRegressorCV,
)
from sknw._selection.candidate import Candidate
from sknw._selection.coordinate import (
    MIXED_LOG_TOLERANCE,
    MIXED_ROUNDS,
    POLISH_FACTOR,
    POLISH_ROUNDS,
    POLISH_TOLERANCE,
    SearchState,
    polish,
    polish_bandwidths,
    polish_lambdas,
)
from sknw._trace import traced

pd = pytest.importorskip("pandas")


# -- independent references (the formulas of the kernels' table) -------------


def _unordered(kernel, q, x, lam, c):
    if kernel == "aitchison_aitken":
        return np.where(q == x, 1 - lam, lam / (c - 1))
    return np.where(q == x, 1.0, lam)


def _ordered(kernel, q, x, lam):
    t = np.abs(q - x)
    if kernel == "wang_ryzin":
        return np.where(t == 0, 1 - lam, 0.5 * (1 - lam) * lam**t)
    return lam**t


def brute_weights(
    Q,
    X,
    h,
    cont,
    unordered,
    ordered,
    kernels=("aitchison_aitken", "wang_ryzin"),
    levels=None,
    w=None,
):
    """(m, n) product-kernel weights: Gaussian on the continuous columns
    divided by their bandwidths, times the discrete factors."""
    Q, X, h = np.asarray(Q, float), np.asarray(X, float), np.asarray(h, float)
    diff = (Q[:, None, cont] - X[None, :, cont]) / h[cont]
    W = np.exp(-0.5 * np.sum(diff**2, axis=2))
    for j in unordered:
        c = levels[j] if levels else np.unique(X[:, j]).size
        W = W * _unordered(kernels[0], Q[:, None, j], X[None, :, j], h[j], c)
    for j in ordered:
        W = W * _ordered(kernels[1], Q[:, None, j], X[None, :, j], h[j])
    return W if w is None else W * w


def make_data(n=200, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 1, n)
    g = rng.integers(0, 3, n)
    o = rng.integers(0, 5, n)
    y = np.sin(6 * x) + g + 0.3 * o + 0.1 * rng.normal(size=n)
    return np.column_stack([x, g, o]).astype(float), y


# -- fixed bandwidths -------------------------------------------------------


@pytest.mark.parametrize("ckernel", ["aitchison_aitken", "li_racine"])
@pytest.mark.parametrize("okernel", ["wang_ryzin", "li_racine"])
def test_predict_equals_product_kernel(ckernel, okernel):
    X, y = make_data()
    h = np.array([0.07, 0.3, 0.4])
    reg = NadarayaWatsonRegressor(
        bandwidth=h,
        categorical_features=[1],
        ordered_features=[2],
        categorical_kernel=ckernel,
        ordered_kernel=okernel,
    ).fit(X, y)
    Q = np.column_stack(
        [np.linspace(0, 1, 7), [0, 1, 2, 0, 1, 2, 0], [0, 4, 2, 3, 1, 0, 4]]
    )
    W = brute_weights(Q, X, h, [0], [1], [2], (ckernel, okernel))
    assert_allclose(reg.predict(Q), W @ y / W.sum(axis=1), rtol=1e-12)
    assert_allclose(reg.bandwidth_, h)
    assert list(reg.feature_types_) == ["continuous", "unordered", "ordered"]


def test_statsmodels_kernelreg():
    sm = pytest.importorskip("statsmodels.nonparametric.kernel_regression")
    X, y = make_data(150, seed=1)
    h = [0.08, 0.25, 0.3]
    reg = NadarayaWatsonRegressor(
        bandwidth=h, categorical_features=[1], ordered_features=[2]
    ).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kr = sm.KernelReg(y, X, var_type="cuo", reg_type="lc", bw=h)
        ref = kr.fit(X[:40])[0]
    assert_allclose(reg.predict(X[:40]), ref, rtol=1e-10)


@pytest.mark.parametrize("var_type", ["u", "o", "cu", "co", "uo", "cuo", "ouc", "ccu"])
def test_statsmodels_kernelreg_every_mix(var_type):
    sm = pytest.importorskip("statsmodels.nonparametric.kernel_regression")
    rng = np.random.default_rng(len(var_type))
    n = 80
    cols, bw = [], []
    for kind in var_type:
        if kind == "c":
            cols.append(rng.uniform(0, 1, n))
            bw.append(0.15)
        elif kind == "u":
            cols.append(rng.integers(0, 4, n).astype(float))
            bw.append(0.3)
        else:
            cols.append(rng.integers(0, 5, n).astype(float))
            bw.append(0.4)
    X = np.column_stack(cols)
    y = np.sin(3 * X.sum(axis=1)) + 0.1 * rng.normal(size=n)
    kinds = np.array(list(var_type))
    reg = NadarayaWatsonRegressor(
        bandwidth=bw,
        categorical_features=np.flatnonzero(kinds == "u").tolist() or None,
        ordered_features=np.flatnonzero(kinds == "o").tolist() or None,
    ).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = sm.KernelReg(y, X, var_type=var_type, reg_type="lc", bw=bw).fit(X[:30])[0]
    assert_allclose(reg.predict(X[:30]), ref, rtol=1e-10)


def test_default_settings_dataframe_equals_numpy_with_indices():
    X, y = make_data(120)
    df = pd.DataFrame(
        {
            "x": X[:, 0],
            "g": pd.Categorical(X[:, 1].astype(int)),
            "o": pd.Categorical(X[:, 2].astype(int), categories=range(5), ordered=True),
        }
    )
    a = NadarayaWatsonRegressor().fit(df, y)
    b = NadarayaWatsonRegressor(categorical_features=[1], ordered_features=[2]).fit(
        X, y
    )
    assert_allclose(a.bandwidth_, b.bandwidth_, rtol=0)
    assert_allclose(a.predict(df), b.predict(X), rtol=1e-12)


def test_from_dtype_pandas_and_names():
    X, y = make_data()
    df = pd.DataFrame(
        {
            "x": X[:, 0],
            "city": np.array(["rome", "oslo", "lima"])[X[:, 1].astype(int)],
            "grade": pd.Categorical(
                X[:, 2].astype(int), categories=range(5), ordered=True
            ),
        }
    )
    h = [0.07, 0.3, 0.4]
    reg = NadarayaWatsonRegressor(bandwidth=h).fit(df, y)
    assert list(reg.feature_types_) == ["continuous", "unordered", "ordered"]
    assert list(reg.categories_[1]) == ["lima", "oslo", "rome"]
    assert list(reg.feature_names_in_) == ["x", "city", "grade"]
    # The same model on codes declared by name.
    codes = df.assign(
        city=df.city.map({"lima": 0, "oslo": 1, "rome": 2}).astype(float), grade=X[:, 2]
    )
    by_name = NadarayaWatsonRegressor(
        bandwidth=h, categorical_features=["city"], ordered_features=["grade"]
    ).fit(codes, y)
    assert_allclose(
        reg.predict(df.iloc[:20]), by_name.predict(codes.iloc[:20]), rtol=1e-12
    )


def test_relabelling_unordered_levels_changes_nothing():
    X, y = make_data()
    relabelled = X.copy()
    relabelled[:, 1] = np.array([7.0, -2.0, 40.0])[X[:, 1].astype(int)]
    h = [0.07, 0.3, 0.4]
    kw = {"bandwidth": h, "categorical_features": [1], "ordered_features": [2]}
    a = NadarayaWatsonRegressor(**kw).fit(X, y).predict(X)
    b = NadarayaWatsonRegressor(**kw).fit(relabelled, y).predict(relabelled)
    assert_allclose(a, b, rtol=1e-12)


def test_unseen_level_mismatches_every_level():
    X, y = make_data()
    h = np.array([0.07, 0.3, 0.4])
    reg = NadarayaWatsonRegressor(
        bandwidth=h, categorical_features=[1], ordered_features=[2]
    ).fit(X, y)
    Q = np.array([[0.5, 9.0, 2.0], [0.2, -1.0, 1.0]])
    W = brute_weights(Q, X, h, [0], [1], [2], levels={1: 3})
    got = reg.predict(Q)
    assert np.all(np.isfinite(got))
    assert_allclose(got, W @ y / W.sum(axis=1), rtol=1e-12)


def test_unseen_ordered_category_is_beyond_every_level():
    X, y = make_data()
    cats = list("abcde")
    df = pd.DataFrame(
        {
            "x": X[:, 0],
            "o": pd.Categorical(
                np.array(cats)[X[:, 2].astype(int)], categories=cats, ordered=True
            ),
        }
    )
    reg = NadarayaWatsonRegressor(bandwidth=[0.1, 0.5]).fit(df, y)
    q = pd.DataFrame(
        {"x": [0.5], "o": pd.Categorical(["z"], categories=["z"], ordered=True)}
    )
    # At level distance 5 (the number of categories) from every level.
    Xd = np.column_stack([X[:, 0], X[:, 2]])
    W = np.exp(-0.5 * ((0.5 - Xd[:, 0]) / 0.1) ** 2) * 0.5 * 0.5 * 0.5**5
    assert_allclose(reg.predict(q), [W @ y / W.sum()], rtol=1e-12)


def test_lambda_zero_uses_matching_cells_only():
    X, y = make_data()
    reg = NadarayaWatsonRegressor(
        bandwidth=[0.1, 0.0, 0.0], categorical_features=[1], ordered_features=[2]
    ).fit(X, y)
    q = X[:1]
    match = (X[:, 1] == q[0, 1]) & (X[:, 2] == q[0, 2])
    W = np.exp(-0.5 * ((q[0, 0] - X[match, 0]) / 0.1) ** 2)
    assert_allclose(reg.predict(q), [W @ y[match] / W.sum()], rtol=1e-12)


def test_batch_independence():
    X, y = make_data()
    reg = NadarayaWatsonRegressor(
        bandwidth=[0.05, 0.2, 0.3], categorical_features=[1], ordered_features=[2]
    ).fit(X, y)
    batch = reg.predict(X[:30])
    alone = np.array([reg.predict(X[i : i + 1])[0] for i in range(30)])
    assert_allclose(batch, alone, rtol=1e-13)


def test_sample_weights_are_frequencies():
    X, y = make_data(120)
    w = np.random.default_rng(3).integers(0, 3, X.shape[0]).astype(float)
    kw = {
        "bandwidth": [0.07, 0.3, 0.4],
        "categorical_features": [1],
        "ordered_features": [2],
    }
    a = NadarayaWatsonRegressor(**kw).fit(X, y, sample_weight=w).predict(X[:20])
    rep = np.repeat(np.arange(X.shape[0]), w.astype(int))
    b = NadarayaWatsonRegressor(**kw).fit(X[rep], y[rep]).predict(X[:20])
    assert_allclose(a, b, rtol=1e-12)


@pytest.mark.parametrize("kernel", ["epanechnikov", "gaussian"])
def test_fast_backends_per_cell(kernel):
    rng = np.random.default_rng(5)
    n = 6000
    X = np.column_stack([rng.uniform(0, 1, n), rng.integers(0, 4, n)]).astype(float)
    y = np.sin(8 * X[:, 0]) + X[:, 1]
    kw = {"kernel": kernel, "bandwidth": [0.02, 0.2], "categorical_features": [1]}
    fast = NadarayaWatsonRegressor(**kw).fit(X, y)
    brute = NadarayaWatsonRegressor(algorithm="brute", **kw).fit(X, y)
    assert fast.algorithm_ != "brute"
    assert set(fast._smoother.index.names) - {"brute"}
    Q = X[:500]
    assert_allclose(fast.predict(Q), brute.predict(Q), rtol=1e-9, atol=1e-9)


def test_standard_errors_use_squared_factors():
    X, y = make_data()
    h = np.array([0.07, 0.3, 0.4])
    reg = NadarayaWatsonRegressor(
        bandwidth=h,
        categorical_features=[1],
        ordered_features=[2],
        noise_variance=0.25,
    ).fit(X, y)
    Q = X[:10]
    W = brute_weights(Q, X, h, [0], [1], [2])
    A = W / W.sum(axis=1, keepdims=True)
    _, std = reg.predict(Q, return_std=True)
    assert_allclose(std, np.sqrt(0.25 * np.sum(A**2, axis=1)), rtol=1e-10)


def test_attention_weights():
    X, y = make_data()
    h = np.array([0.07, 0.3, 0.4])
    reg = NadarayaWatsonRegressor(
        bandwidth=h, categorical_features=[1], ordered_features=[2]
    ).fit(X, y)
    W = brute_weights(X[:5], X, h, [0], [1], [2])
    assert_allclose(
        reg.attention_weights(X[:5]), W / W.sum(axis=1, keepdims=True), rtol=1e-12
    )


def test_empty_window_nearest_among_positive_factors():
    X, y = make_data()
    reg = NadarayaWatsonRegressor(
        kernel="epanechnikov",
        bandwidth=[1e-4, 0.0, 0.3],
        categorical_features=[1],
        ordered_features=[2],
    ).fit(X, y)
    q = np.array([[0.5, 1.0, 2.0]])
    with pytest.warns(UserWarning, match="empty window"):
        got = reg.predict(q)
    ok = X[:, 1] == 1.0  # lambda 0: only the matching level has a factor
    d = np.abs(X[ok, 0] - 0.5)
    near = np.flatnonzero(ok)[d == d.min()]
    F = _ordered("wang_ryzin", 2.0, X[near, 2], 0.3)
    assert_allclose(got, [F @ y[near] / F.sum()], rtol=1e-12)


def test_only_discrete_features():
    rng = np.random.default_rng(2)
    X = rng.integers(0, 4, (100, 2)).astype(float)
    y = X[:, 0] + rng.normal(size=100)
    reg = NadarayaWatsonRegressor(
        bandwidth=[0.2, 0.1], categorical_features=[0, 1]
    ).fit(X, y)
    W = brute_weights(X[:5], X, np.array([0.2, 0.1]), [], [0, 1], [])
    assert_allclose(reg.predict(X[:5]), W @ y / W.sum(axis=1), rtol=1e-12)


# -- selection --------------------------------------------------------------


def brute_loo_mse(X, y, h, cont, unordered, ordered, w=None):
    W = brute_weights(X, X, h, cont, unordered, ordered, w=w)
    np.fill_diagonal(W, 0.0)
    pred = W @ y / W.sum(axis=1)
    return np.average((pred - y) ** 2, weights=w)


def test_cv_score_equals_brute_leave_one_out():
    X, y = make_data(150)
    cv = NadarayaWatsonRegressorCV(
        bandwidths=12, categorical_features=[1], ordered_features=[2]
    ).fit(X, y)
    assert cv.bandwidth_.shape == (3,)
    ref = brute_loo_mse(X, y, cv.bandwidth_, [0], [1], [2])
    assert_allclose(-cv.best_score_, ref, rtol=1e-10)
    results = cv.cv_results_
    for params, score in zip(
        results["params"], results["mean_test_score"], strict=True
    ):
        ref = brute_loo_mse(X, y, params["bandwidth"], [0], [1], [2])
        assert_allclose(-score, ref, rtol=1e-10)


def test_cv_with_weights_equals_brute():
    X, y = make_data(100, seed=4)
    w = np.random.default_rng(0).integers(0, 2, 100).astype(float)
    w[:5] = 1.0
    cv = NadarayaWatsonRegressorCV(
        bandwidths=[0.05, 0.1, 0.2], categorical_features=[1], ordered_features=[2]
    ).fit(X, y, sample_weight=w)
    ref = brute_loo_mse(X, y, cv.bandwidth_, [0], [1], [2], w=w)
    assert_allclose(-cv.best_score_, ref, rtol=1e-10)


def test_search_finds_irrelevant_and_relevant_categories():
    rng = np.random.default_rng(0)
    n = 300
    x = rng.uniform(0, 1, n)
    g = rng.integers(0, 3, n)  # matters
    z = rng.integers(0, 3, n)  # noise
    y = np.sin(6 * x) + 2 * g + 0.1 * rng.normal(size=n)
    X = np.column_stack([x, g, z]).astype(float)
    reg = NadarayaWatsonRegressor(categorical_features=[1, 2]).fit(X, y)
    assert reg.bandwidth_[1] < 0.05  # the relevant feature is hardly smoothed
    assert reg.bandwidth_[2] > 0.5  # the noise is smoothed out (max 2/3)
    assert reg.bandwidth_selection_["method"] == "leave-one-out"


def test_default_equals_cv_estimator():
    X, y = make_data(150)
    kw = {"categorical_features": [1], "ordered_features": [2]}
    reg = NadarayaWatsonRegressor(**kw).fit(X, y)
    cv = NadarayaWatsonRegressorCV(**kw).fit(X, y)
    assert_allclose(reg.bandwidth_, cv.bandwidth_)
    assert_allclose(reg.predict(X), cv.predict(X), rtol=1e-12)


def test_smoothing_search_holds_out_of_sample():
    # An irrelevant category of 10 levels: the searched smoothing must do out
    # of sample about as well as leaving the feature out, and better than
    # splitting the data by level (lambda = 0).
    mse = {"searched": [], "split": [], "without": []}
    for seed in range(3):
        rng = np.random.default_rng(seed)
        n = 400
        x = rng.uniform(0, 1, n)
        z = rng.integers(0, 10, n)
        y = np.sin(6 * x) + 0.3 * rng.normal(size=n)
        X = np.column_stack([x, z]).astype(float)
        tr, te = slice(0, 200), slice(200, None)
        truth = np.sin(6 * x[te])
        searched = NadarayaWatsonRegressor(categorical_features=[1]).fit(X[tr], y[tr])
        split = NadarayaWatsonRegressor(
            bandwidth=[searched.bandwidth_[0], 0.0], categorical_features=[1]
        ).fit(X[tr], y[tr])
        without = NadarayaWatsonRegressor().fit(X[tr, :1], y[tr])
        for key, model, Q in (
            ("searched", searched, X[te]),
            ("split", split, X[te]),
            ("without", without, X[te, :1]),
        ):
            mse[key].append(np.mean((model.predict(Q) - truth) ** 2))
    mean = {k: np.mean(v) for k, v in mse.items()}
    assert mean["searched"] < 1.25 * mean["without"]
    assert mean["searched"] < 0.6 * mean["split"]


def test_kfold_with_discrete_features():
    X, y = make_data(120)
    cv = NadarayaWatsonRegressorCV(
        bandwidths=[0.05, 0.1],
        cv=KFold(4),
        categorical_features=[1],
        ordered_features=[2],
    ).fit(X, y)
    assert np.all(np.isfinite(cv.cv_results_["mean_test_score"]))


def test_classifier():
    rng = np.random.default_rng(0)
    n = 300
    x = rng.uniform(0, 1, n)
    g = rng.integers(0, 3, n)
    labels = np.where((x > 0.5) ^ (g == 1), "yes", "no")
    X = np.column_stack([x, g]).astype(float)
    h = np.array([0.1, 0.2])
    clf = NadarayaWatsonClassifier(bandwidth=h, categorical_features=[1]).fit(X, labels)
    W = brute_weights(X[:20], X, h, [0], [1], [])
    ref = W @ (labels == "yes") / W.sum(axis=1)
    assert_allclose(clf.predict_proba(X[:20])[:, 1], ref, rtol=1e-12)
    cvc = NadarayaWatsonClassifierCV(categorical_features=[1]).fit(X, labels)
    assert cvc.score(X, labels) > 0.9
    assert cvc.bandwidth_[1] < 0.2


def test_pipeline_and_grid_search_over_kernels():
    X, y = make_data(120)
    search = GridSearchCV(
        NadarayaWatsonRegressor(
            bandwidth=0.1, categorical_features=[1], ordered_features=[2]
        ),
        {
            "categorical_kernel": ["aitchison_aitken", "li_racine"],
            "ordered_kernel": ["wang_ryzin", "li_racine"],
        },
        cv=3,
    ).fit(X, y)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))


# -- errors -----------------------------------------------------------------


def test_string_column_error_names_categorical_features():
    X = np.array([[0.1, "clerical"], [0.2, "manager"], [0.3, "clerical"]], dtype=object)
    with pytest.raises(ValueError, match="categorical_features=\\[1\\]"):
        NadarayaWatsonRegressor(categorical_features=None).fit(X, [1.0, 2.0, 3.0])
    reg = NadarayaWatsonRegressor(bandwidth=[0.1, 0.2], categorical_features=[1])
    reg.fit(X, [1.0, 2.0, 3.0])
    assert list(reg.categories_[1]) == ["clerical", "manager"]
    assert np.isfinite(reg.predict(np.array([[0.1, "unseen"]], dtype=object))).all()


@pytest.mark.parametrize(
    "bandwidth, match",
    [
        ([0.1, 1.2, 0.2], "outside \\[0, 1\\]"),
        ([0.1, 0.2, 1.0], "outside \\[0, 1\\)"),
        ([0.1, 0.2], "shape \\(n_features,\\)"),
    ],
)
def test_bad_smoothing_parameters(bandwidth, match):
    X, y = make_data(50)
    with pytest.raises(ValueError, match=match):
        NadarayaWatsonRegressor(
            bandwidth=bandwidth, categorical_features=[1], ordered_features=[2]
        ).fit(X, y)


def test_ordered_feature_must_hold_integers():
    X, y = make_data(50)
    X[0, 2] = 0.5
    with pytest.raises(ValueError, match="not integers"):
        NadarayaWatsonRegressor(ordered_features=[2]).fit(X, y)


def test_missing_level_is_refused():
    df = pd.DataFrame({"x": [0.1, 0.2, 0.3, 0.4], "g": ["a", None, "b", "a"]})
    with pytest.raises(ValueError, match="missing values"):
        NadarayaWatsonRegressor(bandwidth=0.1).fit(df, [1.0, 2.0, 3.0, 4.0])


def test_plugin_refused_with_discrete_features():
    X, y = make_data(50)
    with pytest.raises(ValueError, match="plugin"):
        NadarayaWatsonRegressor(bandwidth="plugin", categorical_features=[1]).fit(X, y)


# -- properties -------------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@st.composite
def mixed_data(draw):
    n = draw(st.integers(8, 40))
    seed = draw(st.integers(0, 2**31 - 1))
    levels = draw(st.integers(2, 5))
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.uniform(0, 1, n), rng.integers(0, levels, n)])
    y = rng.normal(size=n)
    h = draw(st.floats(0.05, 2.0))
    lam = draw(st.floats(0.0, 1.0))
    return X.astype(float), y, h, lam, levels


@settings(max_examples=40, deadline=None)
@given(mixed_data(), st.permutations(range(5)))
def test_property_relabelling(data, perm):
    X, y, h, lam, _ = data
    c = np.unique(X[:, 1]).size
    top = (max(c, 2) - 1) / max(c, 2)
    bw = [h, lam * top]
    relabelled = X.copy()
    relabelled[:, 1] = 10.0 * np.asarray(perm)[X[:, 1].astype(int)] - 3.0
    kw = {"bandwidth": bw, "categorical_features": [1]}
    a = NadarayaWatsonRegressor(**kw).fit(X, y).predict(X)
    b = NadarayaWatsonRegressor(**kw).fit(relabelled, y).predict(relabelled)
    assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(mixed_data(), st.sampled_from(["aitchison_aitken", "li_racine"]))
def test_property_zero_lambda_splits_the_data(data, kernel):
    X, y, h, _, _ = data
    reg = NadarayaWatsonRegressor(
        bandwidth=[h, 0.0], categorical_features=[1], categorical_kernel=kernel
    ).fit(X, y)
    got = reg.predict(X)
    for level in np.unique(X[:, 1]):
        rows = X[:, 1] == level
        alone = NadarayaWatsonRegressor(bandwidth=h).fit(X[rows, :1], y[rows])
        assert_allclose(
            got[rows], alone.predict(X[rows, :1]), rtol=1e-12, atol=1e-12 * np.ptp(y)
        )


@settings(max_examples=40, deadline=None)
@given(mixed_data(), st.sampled_from(["aitchison_aitken", "li_racine"]))
def test_property_largest_lambda_makes_the_feature_irrelevant(data, kernel):
    X, y, h, _, _ = data
    c = np.unique(X[:, 1]).size
    top = (c - 1) / c if kernel == "aitchison_aitken" else 1.0
    reg = NadarayaWatsonRegressor(
        bandwidth=[h, top], categorical_features=[1], categorical_kernel=kernel
    ).fit(X, y)
    without = NadarayaWatsonRegressor(bandwidth=h).fit(X[:, :1], y)
    Q = np.column_stack([np.linspace(0, 1, 5), [0, 1, 2, 7, 1]]).astype(float)
    assert_allclose(
        reg.predict(Q), without.predict(Q[:, :1]), rtol=1e-12, atol=1e-12 * np.ptp(y)
    )


def test_pickle_keeps_levels():
    df = pd.DataFrame({"x": np.linspace(0, 1, 30), "g": list("abc") * 10})
    y = np.arange(30.0)
    reg = NadarayaWatsonRegressor(bandwidth=[0.2, 0.3]).fit(df, y)
    back = pickle.loads(pickle.dumps(reg))
    assert list(back.categories_[1]) == ["a", "b", "c"]
    q = pd.DataFrame({"x": [0.5, 0.1], "g": ["c", "zzz"]})
    assert_allclose(back.predict(q), reg.predict(q), rtol=0)


def test_cv_over_full_per_feature_grid_fixes_lambdas():
    X, y = make_data(100)
    grid = [[0.05, 0.1, 0.2], [0.1, 0.0, 0.5], [0.2, 0.3, 0.3]]
    cv = NadarayaWatsonRegressorCV(
        bandwidths=grid, categorical_features=[1], ordered_features=[2]
    ).fit(X, y)
    scores = [-brute_loo_mse(X, y, np.array(b), [0], [1], [2]) for b in grid]
    assert_allclose(cv.cv_results_["mean_test_score"], scores, rtol=1e-10)
    assert_allclose(cv.bandwidth_, grid[int(np.argmax(scores))])
    with pytest.raises(ValueError, match="all floats"):
        NadarayaWatsonRegressorCV(
            bandwidths=[0.1, [0.1, 0.2, 0.3]], categorical_features=[1]
        ).fit(X, y)


# -- local linear -----------------------------------------------------------


def brute_local_linear(Q, X, y, h, cont, unordered, ordered, loo=False):
    """Per-query weighted least squares in the continuous features, with the
    product kernel's weights (the reference of the local linear fit)."""
    W = brute_weights(Q, X, h, cont, unordered, ordered)
    if loo:
        np.fill_diagonal(W, 0.0)
    out = np.empty(Q.shape[0])
    for i in range(Q.shape[0]):
        A = np.column_stack([np.ones(X.shape[0]), X[:, cont] - Q[i, cont]])
        sw = np.sqrt(W[i])
        coef = np.linalg.lstsq(A * sw[:, None], y * sw, rcond=None)[0]
        out[i] = coef[0]
    return out


@pytest.mark.parametrize("okernel", ["wang_ryzin", "li_racine"])
def test_local_linear_equals_weighted_least_squares(okernel):
    rng = np.random.default_rng(0)
    n = 200
    X = np.column_stack(
        [
            rng.uniform(0, 1, n),
            rng.integers(0, 3, n),
            rng.integers(0, 4, n),
            rng.uniform(0, 1, n),
        ]
    ).astype(float)
    y = (
        np.sin(5 * X[:, 0])
        + X[:, 1]
        + 0.5 * X[:, 2] * X[:, 3]
        + 0.1 * rng.normal(size=n)
    )
    h = np.array([0.2, 0.3, 0.4, 0.3])
    reg = LocalLinearRegressor(
        bandwidth=h,
        categorical_features=[1],
        ordered_features=[2],
        ordered_kernel=okernel,
        max_leverage=None,
    ).fit(X, y)
    Q = X[:25] + np.array([0.01, 0, 0, -0.02])
    W = brute_weights(Q, X, h, [0, 3], [1], [2], ("aitchison_aitken", okernel))
    ref = np.empty(Q.shape[0])
    for i in range(Q.shape[0]):
        A = np.column_stack([np.ones(n), X[:, [0, 3]] - Q[i, [0, 3]]])
        sw = np.sqrt(W[i])
        ref[i] = np.linalg.lstsq(A * sw[:, None], y * sw, rcond=None)[0][0]
    assert_allclose(reg.predict(Q), ref, rtol=1e-9, atol=1e-9 * np.ptp(y))
    # Standard errors come from the same weights.
    _, std = reg.predict(Q, return_std=True)
    assert np.all(np.isfinite(std))


def test_local_linear_cv_and_default_with_discrete_features():
    X, y = make_data(150)
    kw = {"categorical_features": [1], "ordered_features": [2]}
    cv = LocalLinearRegressorCV(bandwidths=8, max_leverage=None, **kw).fit(X, y)
    assert cv.bandwidth_.shape == (3,)
    loo = brute_local_linear(X, X, y, cv.bandwidth_, [0], [1], [2], loo=True)
    assert_allclose(-cv.best_score_, np.mean((loo - y) ** 2), rtol=1e-9)
    default = LocalLinearRegressor(max_leverage=None, **kw).fit(X, y)
    assert default.bandwidth_selection_["method"] == "leave-one-out"
    nw = NadarayaWatsonRegressor(**kw).fit(X, y)
    # Local linear in the continuous feature beats local constant on a trend.
    assert -LocalLinearRegressorCV(max_leverage=None, **kw).fit(X, y).best_score_ < (
        1.2 * -NadarayaWatsonRegressorCV(**kw).fit(X, y).best_score_
    )
    assert np.all(np.isfinite(default.predict(X))) and np.all(
        np.isfinite(nw.predict(X))
    )


def test_local_linear_needs_a_continuous_feature():
    rng = np.random.default_rng(2)
    X = rng.integers(0, 4, (80, 2)).astype(float)
    y = X[:, 0] + rng.normal(size=80)
    kw = {"bandwidth": [0.2, 0.1], "categorical_features": [0, 1]}
    with pytest.raises(ValueError, match="all discrete: .*NadarayaWatsonRegressor"):
        LocalLinearRegressor(**kw).fit(X, y)


def test_local_linear_zero_lambda_and_compact_kernel():
    X, y = make_data(200)
    # Wide enough that the query's window in its group holds a line (at 0.3,
    # its point alone: a singular design).
    h = np.array([0.4, 0.0, 0.0])
    reg = LocalLinearRegressor(
        kernel="epanechnikov",
        bandwidth=h,
        categorical_features=[1],
        ordered_features=[2],
        max_leverage=None,
    ).fit(X, y)
    q = X[3:4]
    same = (X[:, 1] == q[0, 1]) & (X[:, 2] == q[0, 2])
    alone = LocalLinearRegressor(
        kernel="epanechnikov", bandwidth=0.4, max_leverage=None
    ).fit(X[same, :1], y[same])
    assert_allclose(reg.predict(q), alone.predict(q[:, :1]), rtol=1e-10)


# -- edge cases -------------------------------------------------------------


def test_cv_with_only_discrete_features_and_full_grid():
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.integers(0, 3, 100), rng.integers(0, 4, 100)]).astype(
        float
    )
    y = X[:, 0] + 0.5 * rng.normal(size=100)
    grid = [[0.1, 0.2], [0.3, 0.4]]
    cv = NadarayaWatsonRegressorCV(
        bandwidths=grid, categorical_features=[0], ordered_features=[1]
    ).fit(X, y)
    scores = [-brute_loo_mse(X, y, np.array(b), [], [0], [1]) for b in grid]
    assert_allclose(cv.cv_results_["mean_test_score"], scores, rtol=1e-10)


def test_no_positive_factor_uses_the_mean_everywhere():
    X, y = make_data(100)
    reg = NadarayaWatsonRegressor(
        bandwidth=[0.1, 0.0, 0.3],
        categorical_features=[1],
        ordered_features=[2],
        noise_variance=0.3,
    ).fit(X, y)
    q = np.array([[0.5, 9.0, 2.0]])  # a level unseen at fit, lambda 0
    with pytest.warns(UserWarning, match="weighted mean"):
        pred, std = reg.predict(q, return_std=True)
    assert_allclose(pred, [y.mean()], rtol=1e-12)
    assert_allclose(std, [np.sqrt(0.3 / y.size)], rtol=1e-10)
    with pytest.warns(UserWarning, match="weighted mean"):
        A = reg.attention_weights(q)
    assert_allclose(A, np.full((1, y.size), 1 / y.size), rtol=1e-12)


def test_kfold_counts_levels_in_each_training_fold():
    rng = np.random.default_rng(0)
    n = 100
    x = rng.uniform(0, 1, n)
    g = rng.integers(0, 2, n)
    g[:3] = 2  # a level only in the first test fold
    y = np.sin(5 * x) + g + 0.1 * rng.normal(size=n)
    X = np.column_stack([x, g]).astype(float)
    bw = [0.1, 0.3]
    cv = NadarayaWatsonRegressorCV(
        bandwidths=[bw], categorical_features=[1], cv=KFold(5)
    ).fit(X, y)
    reg = NadarayaWatsonRegressor(bandwidth=bw, categorical_features=[1])
    refits = cross_val_score(reg, X, y, cv=KFold(5), scoring="neg_mean_squared_error")
    assert_allclose(cv.best_score_, refits.mean(), rtol=1e-10)
    # A smoothing parameter above (c - 1) / c of a fold is accepted.
    wide = NadarayaWatsonRegressor(bandwidth=[0.1, 0.6], categorical_features=[1])
    assert np.all(np.isfinite(cross_val_score(wide, X, y, cv=KFold(5))))


def test_binned_with_a_level_of_zero_weight():
    rng = np.random.default_rng(1)
    n = 3000
    X = np.column_stack([rng.uniform(0, 1, n), rng.integers(0, 3, n)]).astype(float)
    y = np.sin(6 * X[:, 0]) + X[:, 1]
    w = np.where(X[:, 1] == 2, 0.0, 1.0)
    kw = {"bandwidth": [0.05, 0.2], "categorical_features": [1]}
    binned = NadarayaWatsonRegressor(algorithm="binned", **kw).fit(
        X, y, sample_weight=w
    )
    brute = NadarayaWatsonRegressor(algorithm="brute", **kw).fit(X, y, sample_weight=w)
    assert_allclose(binned.predict(X[:200]), brute.predict(X[:200]), atol=1e-5)


def test_dataframe_column_checks_come_first():
    df = pd.DataFrame({"x": np.linspace(0, 1, 20), "g": list("ab") * 10})
    reg = NadarayaWatsonRegressor(bandwidth=[0.2, 0.3]).fit(df, np.arange(20.0))
    with pytest.raises(ValueError, match="feature names"):
        reg.predict(df[["g", "x"]])
    dup = pd.DataFrame(np.zeros((4, 3)), columns=["a", "a", "b"]).assign(b=list("xyxy"))
    with pytest.raises(ValueError, match="(?i)duplicate|unique"):
        NadarayaWatsonRegressor().fit(dup, np.arange(4.0))


def test_sparse_queries_refused_after_discrete_fit():
    X, y = make_data(60)
    reg = NadarayaWatsonRegressor(
        bandwidth=[0.2, 0.1, 0.3], categorical_features=[1], ordered_features=[2]
    ).fit(X, y)
    with pytest.raises(ValueError, match="dense X"):
        reg.predict(sp.csr_matrix(X[:4]))
    # A refit on sparse data forgets the discrete features.
    df = pd.DataFrame({"x": X[:, 0], "g": pd.Categorical(X[:, 1].astype(int))})
    reg = NadarayaWatsonRegressor(bandwidth=[0.2, 0.1]).fit(df, y)
    reg.fit(sp.csr_matrix(X[:, :2]), y)
    assert list(reg.feature_types_) == ["continuous", "continuous"]


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov"])
def test_local_linear_loo_with_a_level_of_one_point(kernel):
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.uniform(0, 1, 30), rng.integers(0, 3, 30)]).astype(float)
    X[0, 1] = 9.0  # alone in its level: with lambda 0 its window is empty
    y = X[:, 0] + 0.1 * rng.normal(size=30)
    b = np.array([0.3, 0.0])
    cv = LocalLinearRegressorCV(
        kernels=[kernel], bandwidths=[b], categorical_features=[1], max_leverage=None
    ).fit(X, y)
    loo = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(30):
            keep = np.arange(30) != i
            refit = LocalLinearRegressor(
                kernel=kernel,
                bandwidth=b,
                categorical_features=[1],
                max_leverage=None,
            ).fit(X[keep], y[keep])
            loo.append(refit.predict(X[i : i + 1])[0])
    assert_allclose(-cv.best_score_, np.mean((np.array(loo) - y) ** 2), rtol=1e-9)


def test_cosine_with_discrete_features_rescores_its_choice():
    rng = np.random.default_rng(0)
    n = 80
    X = np.column_stack(
        [rng.uniform(0.1, 1, n), rng.uniform(0.1, 1, n), rng.integers(0, 3, n)]
    )
    y = np.arctan2(X[:, 1], X[:, 0]) + X[:, 2] + 0.05 * rng.normal(size=n)
    kw = {"metric": "cosine", "categorical_features": [2]}
    reg = NadarayaWatsonRegressor(**kw).fit(X, y)
    again = NadarayaWatsonRegressorCV(bandwidths=[reg.bandwidth_], **kw).fit(X, y)
    assert_allclose(again.best_score_, reg.bandwidth_selection_["score"], rtol=1e-10)
    assert_allclose(again.predict(X), reg.predict(X), rtol=1e-10)


def test_lists_mixing_numbers_and_labels():
    X = [[0.1, "a"], [0.2, "b"], [0.3, "a"], [0.5, "b"]]
    y = [1.0, 2.0, 3.0, 4.0]
    reg = NadarayaWatsonRegressor(bandwidth=[0.2, 0.3], categorical_features=[1])
    got = reg.fit(X, y).predict([[0.15, "a"], [0.3, "zz"]])
    codes = np.array([[0.1, 0], [0.2, 1], [0.3, 0], [0.5, 1]])
    Q = np.array([[0.15, 0], [0.3, -1]])
    W = brute_weights(Q, codes, np.array([0.2, 0.3]), [0], [1], [], levels={1: 2})
    assert_allclose(got, W @ np.array(y) / W.sum(axis=1), rtol=1e-12)


def test_refine_keeps_the_smoothing_parameters():
    X, y = make_data(100)
    kw = {"bandwidths": 8, "categorical_features": [1], "ordered_features": [2]}
    plain = NadarayaWatsonRegressorCV(**kw).fit(X, y)
    refined = NadarayaWatsonRegressorCV(refine=True, **kw).fit(X, y)
    assert refined.best_score_ >= plain.best_score_
    assert_allclose(refined.bandwidth_[1:], plain.bandwidth_[1:])
    ref = brute_loo_mse(X, y, refined.bandwidth_, [0], [1], [2])
    assert_allclose(-refined.best_score_, ref, rtol=1e-10)


# -- polishing the smoothing parameters -------------------------------------


class _Levels:
    """A stand-in for the discrete features of a search: two of them, of
    range [0, 0.5] and [0, 1]."""

    def max_lambdas(self):
        return np.array([0.5, 1.0])


def test_polish_finds_an_optimum_between_the_grid_values():
    optimum = np.array([0.1234, 0.61])

    def evaluate(cands):
        lams = [np.array(c.lambdas) for c in cands]
        return (np.array([-np.sum((lam - optimum) ** 2) for lam in lams]), None), 0

    # The nearest values of the coordinate search's finer grids: shares 0.2
    # then eight between 0.1 and 0.35; 0.7 then eight between 0.5 and 0.85.
    start = (0.5 * 0.23889, 0.61667)
    score = -np.sum((np.array(start) - optimum) ** 2)
    cand = Candidate(kernel=None, bandwidth=np.array([0.1]), score=score)
    state = SearchState(lambdas=start)
    assert polish_lambdas(evaluate, cand, state, _Levels())
    assert_allclose(state.lambdas, optimum, atol=2 * POLISH_TOLERANCE)
    assert cand.score > -1e-5
    # Already optimal: nothing changes.
    cand = Candidate(kernel=None, bandwidth=np.array([0.1]), score=0.0)
    state = SearchState(lambdas=tuple(optimum))
    assert not polish_lambdas(evaluate, cand, state, _Levels())
    assert_allclose(state.lambdas, optimum, rtol=0)


def test_polish_of_the_bandwidths_finds_an_optimum_within_a_step():
    optimum = np.array([0.3, 1.7])

    def score(bw):
        return -float(np.sum(np.log(np.atleast_1d(bw) / optimum[: np.size(bw)]) ** 2))

    def evaluate(cands):
        return (np.array([score(c.bandwidth) for c in cands]), None), 0

    tol = 3 * MIXED_LOG_TOLERANCE  # smoothing parameters searched too
    # Several continuous features: each bandwidth, and the shape with it.
    start = optimum * np.array([1.25, 0.85])
    cand = Candidate(
        kernel=None,
        bandwidth=start.copy(),
        score=score(start),
        multiplier=1.0,
    )
    state = SearchState(lambdas=(0.1,), step=2**0.25, shape=np.array([1.0, 2.0]))
    assert polish_bandwidths(evaluate, cand, state, _Levels())
    assert_allclose(cand.bandwidth, optimum, rtol=tol)
    assert_allclose(state.shape, [1.0, 2.0] * optimum / start, rtol=tol)
    assert cand.multiplier == 1.0 and cand.score > score(start)
    # One feature, no shape: the size, through the multiplier.
    cand = Candidate(kernel=None, bandwidth=0.4, score=score(0.4), multiplier=2.0)
    state = SearchState(lambdas=(0.1,), step=2**0.25)
    assert polish_bandwidths(evaluate, cand, state, _Levels())
    assert isinstance(cand.bandwidth, float)
    assert_allclose(cand.bandwidth, 0.3, rtol=tol)
    assert_allclose(cand.multiplier, 2.0 * 0.3 / 0.4, rtol=tol)
    # An optimum beyond one step: the search stops at the step.
    cand = Candidate(kernel=None, bandwidth=0.9, score=score(0.9), multiplier=1.0)
    state = SearchState(lambdas=(0.1,), step=2**0.25)
    assert polish_bandwidths(evaluate, cand, state, _Levels())
    assert_allclose(cand.bandwidth, 0.9 / POLISH_FACTOR, rtol=tol)
    # At the optimum, or with a user grid (no step), nothing changes.
    for start, step in ((0.3, 2**0.25), (0.4, None)):
        cand = Candidate(
            kernel=None,
            bandwidth=start,
            score=score(start),
            multiplier=1.0,
        )
        state = SearchState(lambdas=(0.1,), step=step)
        assert not polish_bandwidths(evaluate, cand, state, _Levels())
        assert cand.bandwidth == start


def test_polish_alternates_bandwidths_and_lambdas_until_nothing_moves():
    # A score whose bandwidth and smoothing parameter interact: each
    # coordinate's optimum depends on the other.
    def score(bw, lam):
        u, v = np.log(bw / 0.3), lam[0] - 0.2
        return -(u**2 + v**2 + 1.6 * u * v)

    calls = []

    def evaluate(cands):
        calls.append(len(cands))
        return (np.array([score(c.bandwidth, c.lambdas) for c in cands]), None), 0

    def run(rounds):
        start = (0.36, (0.25, 0.5))
        cand = Candidate(
            kernel=None,
            bandwidth=start[0],
            multiplier=1.0,
            score=score(*start),
        )
        state = SearchState(lambdas=start[1], step=2**0.25)
        with MIXED_ROUNDS.set(rounds):
            changed = polish(evaluate, cand, state, _Levels())
        return changed, cand.score

    changed1, one = run(1)
    changed2, two = run(2)
    assert changed1 and changed2 and two > one
    # At the joint optimum nothing moves: one round, no change.
    calls.clear()
    cand = Candidate(kernel=None, bandwidth=0.3, multiplier=1.0, score=0.0)
    state = SearchState(lambdas=(0.2, 0.5), step=2**0.25)
    with MIXED_ROUNDS.set(1):
        assert not polish(evaluate, cand, state, _Levels())
    n_one_round = len(calls)
    calls.clear()
    with MIXED_ROUNDS.set(2):
        assert not polish(evaluate, cand, state, _Levels())
    assert len(calls) == n_one_round


def test_polish_never_worsens_the_search():
    X, y = make_data(300, seed=3)
    params = {"categorical_features": [1], "ordered_features": [2]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        polished = NadarayaWatsonRegressorCV(**params).fit(X, y)
        with MIXED_ROUNDS.set(0), POLISH_ROUNDS.set(0), traced() as trace:
            plain = NadarayaWatsonRegressorCV(**params).fit(X, y)
    assert trace.values("polish", "rounds") == [0]  # no round of the polish
    assert polished.best_score_ >= plain.best_score_
    # The reported score is the exact leave-one-out score of the choice.
    at = NadarayaWatsonRegressorCV(bandwidths=[polished.bandwidth_], **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_allclose(at.fit(X, y).best_score_, polished.best_score_, rtol=1e-12)
