"""Bad inputs: each one raises an error a user can act on, or has a tested behaviour.

Every estimator is exercised: the regressor, the classifier and their
cross-validated versions, at fit and at predict time.
"""

import datetime
import warnings
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp
from _expected_warnings import warns_about
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.compose import make_column_transformer
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import KFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder
from sklearn.utils._param_validation import InvalidParameterError

from sknw import (
    LocalLinearRegressor,
    LocalLinearRegressorCV,
    NadarayaWatsonClassifier,
    NadarayaWatsonClassifierCV,
    NadarayaWatsonRegressor,
    NadarayaWatsonRegressorCV,
)
from sknw._base import BATCH_ROWS
from sknw._trace import traced
from sknw.exceptions import EmptyWindowWarning
from sknw.kernels import KERNELS, Gaussian, Kernel

KINDS = ["regressor", "classifier", "regressor_cv", "classifier_cv"]
CLASSES = {
    "regressor": NadarayaWatsonRegressor,
    "classifier": NadarayaWatsonClassifier,
    "regressor_cv": NadarayaWatsonRegressorCV,
    "classifier_cv": NadarayaWatsonClassifierCV,
}
CV_KINDS = ["regressor_cv", "classifier_cv"]
PLAIN_KINDS = ["regressor", "classifier"]


def make(kind, **params):
    """An estimator of ``kind``; the CV versions try a small grid by default."""
    if kind in CV_KINDS:
        params.setdefault("bandwidths", 4)
    return CLASSES[kind](**params)


def data(kind, n=12, d=2, seed=0):
    """Training inputs, targets suited to ``kind`` (three classes) and queries."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if kind.startswith("classifier"):
        # Classes that follow the first feature: with labels unrelated to X,
        # the default grid's best would be its largest (a GridEdgeWarning).
        rank = np.argsort(np.argsort(X[:, 0]))
        y = np.array(["a", "b", "c"])[rank * 3 // n]
    else:
        y = np.sin(X[:, 0]) + X[:, -1]
    Q = rng.normal(size=(5, d))
    return X, y, Q


def fitted(kind, **params):
    X, y, Q = data(kind)
    return make(kind, **params).fit(X, y), X, y, Q


def output(est, Q):
    """What the estimator computes at ``Q``: probabilities for classifiers."""
    if hasattr(est, "predict_proba"):
        return est.predict_proba(Q)
    return est.predict(Q)


def query_methods(kind):
    methods = ["predict", "attention_weights"]
    if kind.startswith("classifier"):
        methods.append("predict_proba")
    return methods


# -- NaN and infinity in X, y and sample_weight ----------------------------------

NON_FINITE = {
    "nan": (np.nan, "Input X contains NaN"),
    "+inf": (np.inf, "Input X contains infinity"),
    "-inf": (-np.inf, "Input X contains infinity"),
}


@pytest.mark.parametrize("value", list(NON_FINITE))
@pytest.mark.parametrize("kind", KINDS)
def test_non_finite_X_in_fit(kind, value):
    X, y, _ = data(kind)
    bad, match = NON_FINITE[value]
    X[3, 1] = bad
    with pytest.raises(ValueError, match=match):
        make(kind).fit(X, y)


@pytest.mark.parametrize("value", list(NON_FINITE))
@pytest.mark.parametrize("kind", KINDS)
def test_non_finite_X_at_predict(kind, value):
    est, _, _, Q = fitted(kind)
    bad, match = NON_FINITE[value]
    Q[2, 0] = bad
    for method in query_methods(kind):
        with pytest.raises(ValueError, match=match):
            getattr(est, method)(Q)


@pytest.mark.parametrize(
    "value, match",
    [(np.nan, "Input y contains NaN"), (np.inf, "Input y contains infinity")],
)
@pytest.mark.parametrize("kind", ["regressor", "regressor_cv"])
def test_non_finite_y_regression(kind, value, match):
    X, y, _ = data(kind)
    for sign in (1.0, -1.0):
        y_bad = y.copy()
        y_bad[4] = sign * value
        with pytest.raises(ValueError, match=match):
            make(kind).fit(X, y_bad)
    # Also in one column of a multi-output target.
    Y = np.column_stack([y, y])
    Y[4, 1] = value
    with pytest.raises(ValueError, match=match):
        make(kind).fit(X, Y)


@pytest.mark.parametrize("kind", ["classifier", "classifier_cv"])
def test_nan_labels(kind):
    X, _, _ = data(kind)
    numeric = (np.arange(12) % 3).astype(float)
    numeric[5] = np.nan
    with pytest.raises(ValueError, match="Input y contains NaN"):
        make(kind).fit(X, numeric)
    text = np.array(["a", "b", "c"] * 4, dtype=object)
    text[5] = np.nan
    with pytest.raises(ValueError, match="Input contains NaN"):
        make(kind).fit(X, text)


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("kind", KINDS)
def test_non_finite_sample_weight(kind, value):
    X, y, _ = data(kind)
    w = np.ones(len(y))
    w[2] = value
    with pytest.raises(ValueError, match=r"sample_weight must be finite"):
        make(kind).fit(X, y, sample_weight=w)


# -- sample_weight ----------------------------------------------------------------


@pytest.mark.parametrize(
    "weights, match",
    [
        ("negative", "Negative values in sample_weight are not allowed"),
        ("zeros", "All sample weights are zero"),
        ("scalar zero", "All sample weights are zero"),
        ("scalar negative", "Negative values in sample_weight"),
        ("short", r"sample_weight.shape == \(11,\), expected \(12,\)"),
        ("long", r"sample_weight.shape == \(13,\), expected \(12,\)"),
        ("column", r"sample_weight.shape == \(12, 1\), expected \(12,\)"),
        ("strings", "sample_weight must be numeric"),
    ],
)
@pytest.mark.parametrize("kind", KINDS)
def test_invalid_sample_weight(kind, weights, match):
    X, y, _ = data(kind)
    w = {
        "negative": np.r_[np.ones(11), -0.5],
        "zeros": np.zeros(12),
        "scalar zero": 0.0,
        "scalar negative": -1.0,
        "short": np.ones(11),
        "long": np.ones(13),
        "column": np.ones((12, 1)),
        "strings": np.array(["heavy"] * 12),
    }[weights]
    with pytest.raises(ValueError, match=match):
        make(kind).fit(X, y, sample_weight=w)


@pytest.mark.parametrize("kind", KINDS)
def test_complex_sample_weight_is_rejected(kind):
    # The imaginary part must not be dropped silently.
    X, y, _ = data(kind)
    w = np.ones(12) + 0.5j
    with pytest.raises(ValueError, match="(?i)complex"):
        make(kind).fit(X, y, sample_weight=w)


@pytest.mark.parametrize("kind", KINDS)
def test_sparse_sample_weight_is_rejected_with_a_clear_message(kind):
    X, y, _ = data(kind)
    w = sp.csr_matrix(np.ones((1, 12)))
    with pytest.raises((TypeError, ValueError), match="(?i)sparse"):
        make(kind).fit(X, y, sample_weight=w)


@pytest.mark.parametrize("kind", KINDS)
def test_scalar_sample_weight_is_a_constant_frequency(kind):
    # A scalar is the same frequency weight for every row (so it counts in the
    # rules of thumb and in leave-one-out), like an array full of it.
    X, y, Q = data(kind)
    est = make(kind).fit(X, y, sample_weight=2.5)
    assert_array_equal(est.sample_weight_, np.full(12, 2.5))
    reference = make(kind).fit(X, y, sample_weight=np.full(12, 2.5))
    assert_array_equal(est.bandwidth_, reference.bandwidth_)
    assert_array_equal(output(est, Q), output(reference, Q))
    if kind in PLAIN_KINDS:
        # With a fixed bandwidth, a constant weight changes nothing.
        fixed = make(kind, bandwidth=0.8).fit(X, y, sample_weight=2.5)
        unweighted = make(kind, bandwidth=0.8).fit(X, y)
        assert_allclose(output(fixed, Q), output(unweighted, Q), rtol=1e-12)


@pytest.mark.parametrize("kind", CV_KINDS)
def test_leave_one_out_needs_two_positive_weights(kind):
    X, y, _ = data(kind)
    w = np.zeros(12)
    w[4] = 3.0
    with pytest.raises(ValueError, match="at least 2 samples with positive weight"):
        make(kind).fit(X, y, sample_weight=w)


@pytest.mark.parametrize("kind", CV_KINDS)
def test_kfold_with_a_test_fold_of_zero_weights(kind):
    # Rows 8 to 11 form the last test fold and all weigh 0: there is nothing to
    # score in that fold, which the error must say.
    X, y, _ = data(kind)
    w = np.ones(12)
    w[8:] = 0.0
    est = make(kind, cv=KFold(3))
    with pytest.raises(ValueError, match=r"(?is)(?=.*fold)(?=.*weight)"):
        est.fit(X, y, sample_weight=w)


# -- shapes: empty, single sample, mismatched lengths, wrong n_features -------------


@pytest.mark.parametrize(
    "shape, match",
    [((0, 2), r"0 sample\(s\)"), ((12, 0), r"0 feature\(s\)")],
    ids=["0 samples", "0 features"],
)
@pytest.mark.parametrize("kind", KINDS)
def test_empty_X_in_fit(kind, shape, match):
    _, y, _ = data(kind)
    X = np.empty(shape)
    with pytest.raises(ValueError, match=match):
        make(kind).fit(X, y[: shape[0]])


@pytest.mark.parametrize("kind", KINDS)
def test_zero_queries_raise_like_scikit_learn(kind):
    # As for scikit-learn's own estimators, an empty query array is an error.
    est, *_ = fitted(kind)
    for method in query_methods(kind):
        with pytest.raises(ValueError, match=r"0 sample\(s\)"):
            getattr(est, method)(np.empty((0, 2)))


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"bandwidth": "silverman"},
        {"bandwidth": 1e-3},
        {"bandwidth": [0.5, 2.0]},
        {"kernel": "epanechnikov", "bandwidth": 0.1},
        {"metric": "mahalanobis"},
        {"metric": "cosine"},
    ],
    ids=repr,
)
def test_single_training_sample_regression(params):
    X = np.array([[1.5, -2.0]])
    Q = np.array([[1.5, -2.0], [1.6, -2.0], [40.0, 30.0], [-3.0, 0.2]])
    reg = NadarayaWatsonRegressor(**params)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pred = reg.fit(X, [7.25]).predict(Q)
        multi = NadarayaWatsonRegressor(**params).fit(X, [[7.25, -1.0]]).predict(Q)
        A = reg.attention_weights(Q)
    # Only the documented warning for far queries of a compact kernel.
    assert {c.category for c in caught} <= {EmptyWindowWarning}
    assert_array_equal(pred, np.full(4, 7.25))
    assert_array_equal(multi, np.tile([7.25, -1.0], (4, 1)))
    assert_array_equal(A, np.ones((4, 1)))


def test_single_training_sample_classification():
    X = np.array([[0.0, 1.0]])
    Q = np.array([[0.0, 1.0], [5.0, 5.0]])
    clf = NadarayaWatsonClassifier().fit(X, ["only"])
    assert_array_equal(clf.classes_, ["only"])
    assert_array_equal(clf.predict_proba(Q), np.ones((2, 1)))
    assert_array_equal(clf.predict(Q), ["only", "only"])


@pytest.mark.parametrize("kind", CV_KINDS)
def test_single_training_sample_cv(kind):
    X, y, _ = data(kind)
    with pytest.raises(ValueError, match="at least 2 samples"):
        make(kind).fit(X[:1], y[:1])
    with pytest.raises(ValueError, match="n_splits=2"):
        make(kind, cv=2).fit(X[:1], y[:1])


@pytest.mark.parametrize("kind", KINDS)
def test_mismatched_lengths_of_X_and_y(kind):
    X, y, _ = data(kind)
    with pytest.raises(
        ValueError, match=r"inconsistent numbers of samples: \[12, 11\]"
    ):
        make(kind).fit(X, y[:11])
    with pytest.raises(
        ValueError, match=r"inconsistent numbers of samples: \[11, 12\]"
    ):
        make(kind).fit(X[:11], y)


@pytest.mark.parametrize("n_features", [1, 3])
@pytest.mark.parametrize("kind", KINDS)
def test_wrong_number_of_features_at_predict(kind, n_features):
    est, X, y, _ = fitted(kind)
    Q = np.zeros((3, n_features))
    match = f"X has {n_features} features, but {type(est).__name__} is expecting 2"
    for method in query_methods(kind):
        with pytest.raises(ValueError, match=match):
            getattr(est, method)(Q)
    with pytest.raises(ValueError, match=match):
        est.score(Q, y[:3])


@pytest.mark.parametrize("kind", KINDS)
def test_one_dimensional_X(kind):
    X, y, _ = data(kind)
    with pytest.raises(ValueError, match="Expected 2D array, got 1D array"):
        make(kind).fit(X[:, 0], y)
    est = make(kind).fit(X[:, :1], y)
    with pytest.raises(ValueError, match=r"(?s)Reshape your data.*reshape\(-1, 1\)"):
        est.predict(X[:4, 0])
    with pytest.raises(ValueError, match="got scalar array"):
        est.predict(0.5)


# -- dtypes: complex, object, strings, sparse ---------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_complex_X(kind):
    X, y, Q = data(kind)
    with pytest.raises(ValueError, match="Complex data not supported"):
        make(kind).fit(X + 0.5j, y)
    est = make(kind).fit(X, y)
    for method in query_methods(kind):
        with pytest.raises(ValueError, match="Complex data not supported"):
            getattr(est, method)(Q.astype(complex))


@pytest.mark.parametrize("kind", ["regressor", "regressor_cv"])
def test_complex_y_regression(kind):
    X, y, _ = data(kind)
    with pytest.raises(ValueError, match="Complex data not supported"):
        make(kind).fit(X, y + 1j)


@pytest.mark.parametrize("kind", KINDS)
def test_numeric_object_X_is_converted(kind):
    X, y, Q = data(kind)
    est = make(kind).fit(X.astype(object), y)
    reference = make(kind).fit(X, y)
    assert_array_equal(est.X_fit_, X)
    assert est.X_fit_.dtype == np.float64
    assert_allclose(output(est, Q.astype(object)), output(reference, Q), rtol=1e-12)


def test_exact_number_objects_are_converted():
    X = np.array([[Decimal("0.5")], [Fraction(3, 2)], [2], [np.float32(4.0)]])
    y = [1.0, 2.0, 3.0, 4.0]
    reg = NadarayaWatsonRegressor(bandwidth=0.7).fit(X, y)
    expected = NadarayaWatsonRegressor(bandwidth=0.7).fit(
        [[0.5], [1.5], [2.0], [4.0]], y
    )
    Q = np.array([[Fraction(1, 3)], [Decimal("2.25")]], dtype=object)
    assert_allclose(reg.predict(Q), expected.predict([[1 / 3], [2.25]]), rtol=1e-12)


@pytest.mark.parametrize("kind", KINDS)
def test_object_X_with_strings(kind):
    # Refused by sknw's text policy, which names the column and a value.
    X, y, Q = data(kind)
    X = X.astype(object)
    X[3, 0] = "tall"
    with pytest.raises(ValueError, match=r"strings in column 0 \(e.g. 'tall'\)"):
        make(kind).fit(X, y)
    est = make(kind).fit(X[4:].astype(float), y[4:])
    Q = Q.astype(object)
    Q[0, 1] = "wide"
    with pytest.raises(ValueError, match=r"strings in column 1 \(e.g. 'wide'\)"):
        est.predict(Q)


@pytest.mark.parametrize("kind", KINDS)
def test_object_X_with_none_is_missing(kind):
    X, y, _ = data(kind)
    X = X.astype(object)
    X[1, 1] = None
    with pytest.raises(ValueError, match="Input X contains NaN"):
        make(kind).fit(X, y)


@pytest.mark.parametrize("kind", KINDS)
def test_string_X(kind):
    X, y, _ = data(kind)
    words = np.array([["red", "small"]] * 12)
    with pytest.raises(ValueError, match=r"strings in columns 0, 1 \(e.g. 'red'\)"):
        make(kind).fit(words, y)


@pytest.mark.parametrize("kind", KINDS)
def test_string_X_of_numbers_is_not_parsed(kind):
    # scikit-learn's own estimators refuse arrays of strings, even of digits,
    # rather than parse text as numbers.
    X, y, _ = data(kind)
    text = X.round(3).astype(str)
    assert text.dtype.kind == "U"
    with pytest.raises(ValueError, match="(?i)string"):
        make(kind).fit(text, y)


# -- text, dates and durations: refused, naming the columns ---------------------------


def _object_column(X, j, values):
    out = X.astype(object)
    out[:, j] = values
    return out


def _text_arrays(X):
    """Arrays and lists with text, and the columns a message must name."""
    digits = [f"{v:.3f}" for v in X[:, 1]]
    with_bytes = X.astype(object)
    with_bytes[2, 0] = b"3.5"
    mixed = [[float(a), b] for a, b in zip(X[:, 0], digits, strict=True)]
    return {
        "numpy U": (X.round(3).astype(str), "columns 0, 1"),
        "numpy S": (X.round(3).astype("S8"), "columns 0, 1"),
        "object of digit strings": (_object_column(X, 1, digits), "column 1"),
        "bytes in an object array": (with_bytes, "column 0"),
        "list of numbers and strings": (mixed, "column 1"),
    }


def _temporal_arrays(X):
    dates = [datetime.date(2024, 1, 1 + i % 28) for i in range(X.shape[0])]
    return {
        "datetime64": (X.astype("datetime64[s]"), "columns 0, 1"),
        "timedelta64": (X.astype("timedelta64[ms]"), "columns 0, 1"),
        "object of dates": (_object_column(X, 1, dates), "column 1"),
    }


def _text_columns(n):
    """Pandas columns of text (numbers written as text included)."""
    pd = pytest.importorskip("pandas")
    digits = [str(i) for i in range(n)]
    return {
        "string dtype": pd.array(digits, dtype="string"),
        "object of str": np.array(digits, dtype=object),
        "category of str": pd.Categorical((["red", "blue"] * n)[:n]),
        "default str": digits,
    }


def _temporal_columns(n):
    pd = pytest.importorskip("pandas")
    return {
        "datetime": pd.date_range("2024-01-01", periods=n),
        "datetime with a time zone": pd.date_range("2024", periods=n, tz="UTC"),
        "timedelta": pd.to_timedelta(np.arange(n), unit="s"),
        "period": pd.period_range("2024-01", periods=n, freq="M"),
    }


def _frame(X, when):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"x": X[:, 0], "when": X[:, 1]})
    if when is not None:
        frame["when"] = when
    return frame


@pytest.mark.parametrize("case", list(_text_arrays(np.zeros((12, 2)))))
@pytest.mark.parametrize("kind", KINDS)
def test_text_arrays_are_refused_naming_the_columns(kind, case):
    X, y, Q = data(kind)
    bad, columns = _text_arrays(X)[case]
    with pytest.raises(ValueError, match=rf"X has strings in {columns} \(e.g. "):
        make(kind).fit(bad, y)
    est = make(kind).fit(X, y)
    bad_queries, _ = _text_arrays(Q)[case]
    for method in query_methods(kind):
        with pytest.raises(ValueError, match=rf"X has strings in {columns} "):
            getattr(est, method)(bad_queries)


@pytest.mark.parametrize("case", list(_temporal_arrays(np.zeros((12, 2)))))
@pytest.mark.parametrize("kind", KINDS)
def test_temporal_arrays_are_refused_naming_the_columns(kind, case):
    X, y, Q = data(kind)
    bad, columns = _temporal_arrays(X)[case]
    match = rf"X has dates, times or durations in {columns}: .*numbers"
    with pytest.raises(ValueError, match=match):
        make(kind).fit(bad, y)
    est = make(kind).fit(X, y)
    for method in query_methods(kind):
        with pytest.raises(ValueError, match=match):
            getattr(est, method)(_temporal_arrays(Q)[case][0])


TEXT_COLUMNS = ["string dtype", "object of str", "category of str", "default str"]
TEMPORAL_COLUMNS = ["datetime", "datetime with a time zone", "timedelta", "period"]


@pytest.mark.parametrize("case", TEXT_COLUMNS + TEMPORAL_COLUMNS)
@pytest.mark.parametrize("kind", KINDS)
def test_dataframe_text_and_temporal_columns_are_named(kind, case):
    X, y, Q = data(kind)
    what = "strings" if case in TEXT_COLUMNS else "dates, times or durations"
    match = f"X has {what} in column 'when'"

    def column(n):
        return {**_text_columns(n), **_temporal_columns(n)}[case]

    # Text columns are categorical features under the default
    # categorical_features="from_dtype"; without it they are refused.
    text = case in TEXT_COLUMNS
    params = {"categorical_features": None} if text else {}
    with pytest.raises(ValueError, match=match) as info:
        make(kind, **params).fit(_frame(X, column(12)), y)
    assert "'x'" not in str(info.value)  # the numeric column is not named
    if text:
        assert "categorical_features=['when']" in str(info.value)
        est = make(kind).fit(_frame(X, column(12)), y)
        assert list(est.feature_types_) == ["continuous", "unordered"]
    est = make(kind).fit(_frame(X, None), y)
    for method in query_methods(kind):
        with pytest.raises(ValueError, match=match):
            getattr(est, method)(_frame(Q, column(5)))


def test_text_and_dates_together_and_many_columns():
    pd = pytest.importorskip("pandas")
    X, y, _ = data("regressor")
    frame = _frame(X, pd.date_range("2024", periods=12))
    frame["city"] = ["Lyon", "Oslo"] * 6
    with pytest.raises(ValueError) as info:
        NadarayaWatsonRegressor(categorical_features=None).fit(frame, y)
    message = str(info.value)
    assert "strings in column 'city' (e.g. 'Lyon')" in message
    assert "dates, times or durations in column 'when'" in message
    wide = np.tile(X[:, :1], (1, 15)).astype(str)
    with pytest.raises(ValueError, match=r"columns 0, 1, .*, 9 and 5 more"):
        NadarayaWatsonRegressor().fit(wide, y)


def test_numeric_pandas_columns_are_not_refused():
    pd = pytest.importorskip("pandas")
    X, y, Q = data("regressor")
    frame = pd.DataFrame(
        {
            "int": pd.array(np.arange(12) % 4, dtype="Int64"),
            "flag": pd.array(np.arange(12) % 2 == 0, dtype="boolean"),
            "x": X[:, 0].astype(object),  # numbers in an object column
        }
    )
    numbers = np.column_stack([np.arange(12) % 4, np.arange(12) % 2 == 0, X[:, 0]])
    got = NadarayaWatsonRegressor(bandwidth=0.8).fit(frame, y).predict(frame)
    expected = NadarayaWatsonRegressor(bandwidth=0.8).fit(numbers, y).predict(numbers)
    assert_allclose(got, expected, rtol=1e-12)


SPARSE_FORMATS = [sp.csr_matrix, sp.csc_matrix, sp.coo_matrix, sp.csr_array]


@pytest.mark.parametrize("fmt", SPARSE_FORMATS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("kind", KINDS)
def test_sparse_X_is_densified(kind, fmt):
    # Sparse inputs give what their dense arrays give (the training points
    # densified at fit, the queries one batch at a time).
    X, y, Q = data(kind)
    X[X < 0] = 0.0
    Q[Q < 0] = 0.0
    sparse = make(kind).fit(fmt(X), y)
    dense = make(kind).fit(X, y)
    assert_allclose(sparse.bandwidth_, dense.bandwidth_, rtol=0)
    for method in query_methods(kind):
        expected = getattr(dense, method)(Q)
        for est in (sparse, dense):
            got = getattr(est, method)(fmt(Q))
            if expected.dtype.kind in "UO":  # class labels
                np.testing.assert_array_equal(got, expected)
            else:
                assert_allclose(got, expected, rtol=1e-12)


def test_sparse_queries_are_densified_one_batch_at_a_time():
    X, y, Q = data("regressor", n=40)
    est = NadarayaWatsonRegressor(bandwidth=0.7).fit(X, y)
    with BATCH_ROWS.set(2), traced() as trace:
        got = est.predict(sp.csr_matrix(Q))
    # The queries of each batch reach the sums dense.
    assert not any(trace.values("prediction_batch", "sparse"))
    assert max(trace.values("prediction_batch", "n_queries")) <= 2
    assert max(trace.values("sums", "n_queries")) <= 2
    assert_allclose(got, est.predict(Q), rtol=1e-12)


def test_default_column_transformer_with_one_hot_works():
    pd = pytest.importorskip("pandas")

    rng = np.random.default_rng(0)
    levels = [f"level {i}" for i in range(20)]  # sparse enough to stay sparse
    frame = pd.DataFrame({"x": rng.uniform(size=60), "g": rng.choice(levels, 60)})
    y = frame.x + (frame.g == "level 1")
    pipe = make_pipeline(
        make_column_transformer((OneHotEncoder(), ["g"]), remainder="passthrough"),
        NadarayaWatsonRegressor(bandwidth=0.3),
    ).fit(frame, y)
    assert sp.issparse(pipe[0].transform(frame))
    assert np.all(np.isfinite(pipe.predict(frame)))


def test_discrete_declarations_with_sparse_X_are_refused():
    X, y, _ = data("regressor")
    with pytest.raises(ValueError, match="sparse X"):
        NadarayaWatsonRegressor(categorical_features=[0]).fit(sp.csr_matrix(X), y)


@pytest.mark.parametrize("kind", ["regressor", "regressor_cv"])
def test_sparse_y_is_rejected_with_a_clear_message(kind):
    X, y, _ = data(kind)
    with pytest.raises((TypeError, ValueError), match="(?i)sparse"):
        make(kind).fit(X, sp.csr_matrix(y.reshape(-1, 1)))


# -- bandwidth ------------------------------------------------------------------------


@pytest.mark.parametrize("bandwidth", [-1.0, 0.0, 0, np.nan, np.inf, -np.inf, None])
@pytest.mark.parametrize("kind", PLAIN_KINDS)
def test_invalid_scalar_bandwidth(kind, bandwidth):
    X, y, _ = data(kind)
    with pytest.raises(InvalidParameterError, match="'bandwidth' parameter") as info:
        make(kind, bandwidth=bandwidth).fit(X, y)
    assert "'scott'" in str(info.value) and "'silverman'" in str(info.value)


@pytest.mark.parametrize(
    "bandwidth, match",
    [
        ([1.0], r"shape \(n_features,\) = \(2,\), got shape \(1,\)"),
        ([1.0, 2.0, 3.0], r"got shape \(3,\)"),
        ([], r"got shape \(0,\)"),
        ([[1.0, 2.0]], r"got shape \(1, 2\)"),
        (np.ones((2, 2)), r"got shape \(2, 2\)"),
        ([1.0, -1.0], "positive and finite"),
        ([0.0, 1.0], "positive and finite"),
        ([np.nan, 1.0], "positive and finite"),
        ([1.0, np.inf], "positive and finite"),
    ],
)
def test_invalid_array_bandwidth_classifier(bandwidth, match):
    X, y, _ = data("classifier")
    with pytest.raises(ValueError, match=match):
        NadarayaWatsonClassifier(bandwidth=bandwidth).fit(X, y)


@pytest.mark.parametrize(
    "bandwidths, match",
    [
        ([0.5, 0.0], "positive and finite"),
        ([np.nan], "positive and finite"),
        ([np.inf, 1.0], "positive and finite"),
        ([-np.inf], "positive and finite"),
        ([[1.0, np.nan]], "positive and finite"),
        ([[1.0, 0.0]], "positive and finite"),
        ([[1.0]], r"float or an array of shape \(n_features,\) = \(2,\), got shape"),
        ([np.ones((2, 2))], r"got shape \(2, 2\)"),
        ([], "bandwidths is empty"),
    ],
)
@pytest.mark.parametrize("kind", CV_KINDS)
def test_invalid_bandwidth_grid(kind, bandwidths, match):
    X, y, _ = data(kind)
    with pytest.raises(ValueError, match=match):
        make(kind, bandwidths=bandwidths).fit(X, y)


@pytest.mark.parametrize("bandwidths", [0, -3, "scott", 2.5])
@pytest.mark.parametrize("kind", CV_KINDS)
def test_invalid_number_of_bandwidths(kind, bandwidths):
    X, y, _ = data(kind)
    with pytest.raises(InvalidParameterError, match="'bandwidths' parameter"):
        make(kind, bandwidths=bandwidths).fit(X, y)


# -- booleans are not numbers: n_jobs, bandwidth(s), return_std -----------------------


@pytest.mark.parametrize("n_jobs", [0, True, False, np.True_, 1.5, "2"], ids=repr)
@pytest.mark.parametrize("kind", KINDS)
def test_invalid_n_jobs_is_refused_at_fit(kind, n_jobs):
    X, y, _ = data(kind)
    with pytest.raises(InvalidParameterError, match="'n_jobs' parameter") as info:
        make(kind, n_jobs=n_jobs).fit(X, y)
    assert "not a bool" in str(info.value)


@pytest.mark.parametrize("n_jobs", [None, 1, 2, -1, -2, np.int64(2)], ids=repr)
@pytest.mark.parametrize("kind", KINDS)
def test_valid_n_jobs_fit_and_predict(kind, n_jobs):
    # joblib's convention: None, a positive count, or negative from the end.
    est, _, _, Q = fitted(kind, n_jobs=n_jobs)
    reference, *_ = fitted(kind)
    assert_allclose(output(est, Q), output(reference, Q), rtol=1e-12)


@pytest.mark.parametrize(
    "bandwidth",
    [True, False, np.True_, np.array(True)],
    ids=["True", "False", "np.True_", "0-d array"],
)
@pytest.mark.parametrize("kind", PLAIN_KINDS)
def test_boolean_bandwidth(kind, bandwidth):
    X, y, _ = data(kind)
    with pytest.raises(ValueError, match=r"(?s)'?bandwidth.*not a bool"):
        make(kind, bandwidth=bandwidth).fit(X, y)


@pytest.mark.parametrize(
    "bandwidth",
    [[True, 1.0], np.array([True, False]), np.array([1.0, np.True_], dtype=object)],
    ids=["list", "bool array", "object array"],
)
@pytest.mark.parametrize("kind", PLAIN_KINDS)
def test_array_of_booleans_as_bandwidth(kind, bandwidth):
    X, y, _ = data(kind)
    with pytest.raises(ValueError, match="bandwidth must be .*not a bool"):
        make(kind, bandwidth=bandwidth).fit(X, y)


@pytest.mark.parametrize(
    "bandwidths",
    [[True, 0.5], [0.5, np.False_], [np.array([True, False])], [[1.0, True]]],
    ids=["True", "np.False_", "bool array", "list with True"],
)
@pytest.mark.parametrize("kind", CV_KINDS)
def test_booleans_in_the_bandwidth_grid(kind, bandwidths):
    X, y, _ = data(kind)
    with pytest.raises(ValueError, match="bandwidth must be .*not a bool"):
        make(kind, bandwidths=bandwidths).fit(X, y)
    with pytest.raises(InvalidParameterError, match="'bandwidths' parameter"):
        make(kind, bandwidths=True).fit(X, y)


REGRESSORS = [
    NadarayaWatsonRegressor,
    NadarayaWatsonRegressorCV,
    LocalLinearRegressor,
    LocalLinearRegressorCV,
]


@pytest.mark.parametrize("value", ["no", "", 1, 0, 1.0, None, [True]], ids=repr)
@pytest.mark.parametrize("cls", REGRESSORS, ids=lambda c: c.__name__)
def test_return_std_must_be_a_bool(cls, value):
    X, y, Q = data("regressor")
    est = cls().fit(X, y)
    with pytest.raises(ValueError, match=f"return_std must be a bool.*{value!r}"):
        est.predict(Q, return_std=value)


@pytest.mark.filterwarnings("ignore::sknw.exceptions.SingularDesignWarning")
@pytest.mark.parametrize("cls", REGRESSORS, ids=lambda c: c.__name__)
def test_return_std_takes_python_and_numpy_bools(cls):
    X, y, Q = data("regressor")
    est = cls(noise_variance="global").fit(X, y)
    pred, std = est.predict(Q, return_std=True)
    for value in (np.True_, np.bool_(1)):
        got, got_std = est.predict(Q, return_std=value)
        assert_array_equal(got, pred)
        assert_array_equal(got_std, std)
    for value in (False, np.False_):
        assert_array_equal(est.predict(Q, return_std=value), est.predict(Q))


# -- kernel, metric and policy names -------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_unknown_kernel_name_lists_valid_names(kind):
    X, y, _ = data(kind)
    name = "kernels" if kind in CV_KINDS else "kernel"
    with pytest.raises(InvalidParameterError, match=f"'{name}' parameter") as info:
        make(kind, **{name: "gausian"}).fit(X, y)
    message = str(info.value)
    assert "'gausian'" in message
    valid = [k for k, cls in KERNELS.items() if cls.nonnegative]
    if kind.startswith("regressor"):
        valid = list(KERNELS)
    for kernel in valid:
        assert f"'{kernel}'" in message
    if kind.startswith("classifier"):
        # Only the kernels the classifier accepts are offered.
        assert "'silverman'" not in message


@pytest.mark.parametrize("kind", CV_KINDS)
def test_unknown_kernel_name_in_a_list_lists_valid_names(kind):
    X, y, _ = data(kind)
    with pytest.raises(ValueError, match="Unknown kernel 'gausian'") as info:
        make(kind, kernels=["gaussian", "gausian"]).fit(X, y)
    for kernel in KERNELS:
        assert kernel in str(info.value)


@pytest.mark.parametrize("kind", KINDS)
def test_kernel_class_instead_of_instance(kind):
    X, y, _ = data(kind)
    if kind in CV_KINDS:
        with pytest.raises(TypeError, match="Kernel instance, got type"):
            make(kind, kernels=[Gaussian]).fit(X, y)
    else:
        with pytest.raises(InvalidParameterError, match="'kernel' parameter"):
            make(kind, kernel=Gaussian).fit(X, y)


@pytest.mark.parametrize("kind", KINDS)
def test_unknown_metric_name_lists_valid_names(kind):
    X, y, _ = data(kind)
    with pytest.raises(InvalidParameterError, match="'metric' parameter") as info:
        make(kind, metric="euclidian").fit(X, y)
    for metric in ("euclidean", "cityblock", "minkowski", "mahalanobis", "cosine"):
        assert f"'{metric}'" in str(info.value)


@pytest.mark.parametrize("kind", KINDS)
def test_unknown_empty_window_policy_lists_valid_names(kind):
    X, y, _ = data(kind)
    with pytest.raises(InvalidParameterError, match="'empty_window' parameter") as e:
        make(kind, empty_window="skip").fit(X, y)
    for policy in ("nearest", "mean", "nan", "raise"):
        assert f"'{policy}'" in str(e.value)


# -- user kernels that break the contract -------------------------------------------


class NegativeKernel(Kernel):
    """Claims to be non-negative but is negative beyond ``u = pi / 2``."""

    def __call__(self, u):
        return np.cos(np.asarray(u, dtype=np.float64))


class NaNKernel(Kernel):
    def __call__(self, u):
        u = np.asarray(u, dtype=np.float64)
        return np.where(u > 0.3, np.nan, 1.0)


class OneValueKernel(Kernel):
    """Returns one number whatever the input: not elementwise."""

    def __call__(self, u):
        return float(np.exp(-np.mean(u)))


class TransposingKernel(Kernel):
    def __call__(self, u):
        return np.exp(-np.asarray(u, dtype=np.float64)).T[..., None]


class Unfinished(Kernel):
    """Forgets to implement ``__call__``."""


BAD_VALUE_KERNELS = [NegativeKernel, NaNKernel]
BAD_SHAPE_KERNELS = [OneValueKernel, TransposingKernel]


def kernel_params(kind, kernel):
    if kind in CV_KINDS:
        return {"kernels": [kernel], "bandwidths": [1.5]}
    return {"kernel": kernel, "bandwidth": 1.5}


@pytest.mark.parametrize("cls", BAD_VALUE_KERNELS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("kind", KINDS)
def test_user_kernel_with_negative_or_nan_values(kind, cls):
    X, y, Q = data(kind)
    est = make(kind, **kernel_params(kind, cls()))
    with pytest.raises(ValueError, match="returned NaN, infinite or negative values"):
        output(est.fit(X, y), Q * 4)


@pytest.mark.parametrize("cls", BAD_SHAPE_KERNELS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("kind", KINDS)
def test_user_kernel_with_wrong_shape(kind, cls):
    X, y, Q = data(kind)
    est = make(kind, **kernel_params(kind, cls()))
    with pytest.raises(ValueError, match="a kernel must be evaluated elementwise"):
        output(est.fit(X, y), Q)


@pytest.mark.parametrize("kind", KINDS)
def test_user_kernel_without_call(kind):
    X, y, Q = data(kind)
    est = make(kind, **kernel_params(kind, Unfinished()))
    with pytest.raises(NotImplementedError, match="Unfinished must implement __call__"):
        output(est.fit(X, y), Q)


# -- metric_params -------------------------------------------------------------------


@pytest.mark.parametrize(
    "metric, params, match",
    [
        ("euclidean", {"p": 3}, "do not fit metric 'euclidean'"),
        ("cosine", {"V": np.ones(2)}, "do not fit metric 'cosine'"),
        ("minkowski", {"q": 1}, "do not fit metric 'minkowski'"),
        ("minkowski", {"p": "three"}, "do not fit metric 'minkowski'"),
        ("minkowski", {"w": np.ones(3)}, "do not fit metric 'minkowski'"),
        ("minkowski", {"w": np.array([1.0, -1.0])}, "non-negative"),
        ("mahalanobis", {"VI": np.eye(3)}, r"metric_params\['VI'\] must have shape"),
        ("mahalanobis", {"VI": "identity"}, r"metric_params\['VI'\] must have shape"),
        ("seuclidean", {"V": np.ones(4)}, r"metric_params\['V'\] must have shape"),
    ],
)
@pytest.mark.parametrize("kind", KINDS)
def test_metric_params_that_do_not_fit_the_metric(kind, metric, params, match):
    X, y, _ = data(kind)
    est = make(kind, metric=metric, metric_params=params)
    with pytest.raises(ValueError, match=match):
        est.fit(X, y)


@pytest.mark.parametrize("kind", KINDS)
def test_metric_params_must_be_a_dict(kind):
    X, y, _ = data(kind)
    with pytest.raises(InvalidParameterError, match="'metric_params' parameter"):
        make(kind, metric="minkowski", metric_params=[("p", 3)]).fit(X, y)


# Values a metric does not define: each gives NaN or meaningless distances, so
# fit must refuse them rather than let predict return NaN.
INVALID_METRIC_VALUES = [
    ("minkowski", {"p": 0}, "p"),
    ("minkowski", {"p": -1.0}, "p"),
    ("minkowski", {"p": np.nan}, "p"),
    ("minkowski", {"p": 2, "w": np.array([np.nan, 1.0])}, "w"),
    ("mahalanobis", {"VI": np.full((2, 2), np.nan)}, "VI"),
    ("mahalanobis", {"VI": -np.eye(2)}, "VI"),
    ("seuclidean", {"V": np.zeros(2)}, "V"),
    ("seuclidean", {"V": np.array([-1.0, 1.0])}, "V"),
]


@pytest.mark.parametrize(
    "metric, params, name",
    INVALID_METRIC_VALUES,
    ids=[
        "p=0",
        "p=-1",
        "p=nan",
        "w with nan",
        "VI with nan",
        "VI negative definite",
        "V zero",
        "V negative",
    ],
)
@pytest.mark.parametrize("kind", PLAIN_KINDS)
def test_metric_params_with_invalid_values(kind, metric, params, name):
    X, y, _ = data(kind)
    est = make(kind, metric=metric, metric_params=params, bandwidth=1.0)
    with pytest.raises(ValueError, match=rf"(?s)metric_params.*'{name}'"):
        est.fit(X, y)


# -- one class, not fitted ------------------------------------------------------------


@pytest.mark.parametrize("cv", [None, 3])
@pytest.mark.parametrize("labels", [["solo"] * 9, [4] * 9, [True] * 9], ids=repr)
def test_classifier_cv_with_one_class_predicts_it(labels, cv):
    X, _, Q = data("classifier", n=9)
    w = np.linspace(0.5, 2.0, 9)
    clf = NadarayaWatsonClassifierCV(bandwidths=3, cv=cv).fit(X, labels, w)
    assert_array_equal(clf.classes_, labels[:1])
    assert clf.best_score_ == pytest.approx(0.0, abs=1e-12)
    assert_array_equal(clf.predict_proba(Q), np.ones((5, 1)))
    assert_array_equal(clf.predict(Q), labels[:5])


@pytest.mark.parametrize("policy", ["nearest", "mean"])
def test_classifier_with_one_class_and_an_empty_window(policy):
    X, _, _ = data("classifier", n=6)
    clf = NadarayaWatsonClassifier(
        kernel="triweight", bandwidth=0.2, empty_window=policy
    )
    clf.fit(X, [7] * 6)
    with warns_about(EmptyWindowWarning, 1, 1):
        assert_array_equal(clf.predict([[50.0, 50.0]]), [7])


@pytest.mark.parametrize("kind", KINDS)
def test_predict_before_fit(kind):
    est = make(kind)
    X, y, _ = data(kind)
    message = f"This {type(est).__name__} instance is not fitted yet"
    for method in query_methods(kind):
        with pytest.raises(NotFittedError, match=message):
            getattr(est, method)(X)
    with pytest.raises(NotFittedError, match=message):
        est.score(X, y)


# -- target dtypes ---------------------------------------------------------------------

Y_DTYPES = [np.float16, np.float32, np.int8, np.int64, np.uint8, bool]


@pytest.mark.parametrize("dtype", Y_DTYPES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("kind", ["regressor", "regressor_cv"])
def test_regression_target_dtypes(kind, dtype):
    X, _, Q = data(kind)
    # Levels that follow X (no best at the grid's edge), exact in every dtype.
    rank = np.argsort(np.argsort(X[:, 0]))
    y = (rank * 4 // 12 * 1.5 + 0.25).astype(dtype)
    est = make(kind).fit(X, y)
    reference = make(kind).fit(X, y.astype(np.float64))
    pred = est.predict(Q)
    assert est.y_fit_.dtype == np.float64
    assert pred.dtype == np.float64
    assert_array_equal(pred, reference.predict(Q))
    assert_array_equal(est.bandwidth_, reference.bandwidth_)


@pytest.mark.parametrize("dtype", Y_DTYPES, ids=lambda t: np.dtype(t).name)
def test_classification_label_dtypes(dtype):
    X, _, Q = data("classifier")
    y = (np.arange(12) % 2).astype(dtype)
    clf = NadarayaWatsonClassifier().fit(X, y)
    assert clf.classes_.dtype == np.dtype(dtype)
    assert clf.predict(Q).dtype == np.dtype(dtype)
    as_text = NadarayaWatsonClassifier().fit(X, np.array(["n", "y"])[y.astype(int)])
    assert_array_equal(clf.predict_proba(Q), as_text.predict_proba(Q))


@pytest.mark.parametrize("kind", ["classifier", "classifier_cv"])
def test_continuous_or_two_dimensional_labels(kind):
    X, _, _ = data(kind)
    with pytest.raises(ValueError, match="Unknown label type: continuous"):
        make(kind).fit(X, np.linspace(0.1, 0.9, 12))
    with pytest.raises(ValueError, match=r"y should be a 1d array"):
        make(kind).fit(X, np.zeros((12, 2), dtype=int))
