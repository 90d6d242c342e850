"""Feature types and the encoding of discrete features."""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from sknw import NadarayaWatsonRegressor
from sknw._features.types import FeatureEncoder, feature_types

pd = pytest.importorskip("pandas")


def test_from_dtype():
    df = pd.DataFrame(
        {
            "x": [0.1, 0.2, 0.3],
            "city": ["a", "b", "a"],
            "cat": pd.Categorical(["u", "v", "u"]),
            "grade": pd.Categorical([1, 2, 3], ordered=True),
            "numbers": np.array([1.0, 2.0, 3.0], dtype=object),
            "flag": pd.array([True, False, True], dtype="boolean"),
        }
    )
    types = feature_types(df, "from_dtype", None)
    assert list(types) == [
        "continuous",
        "unordered",
        "unordered",
        "ordered",
        "continuous",
        "continuous",
    ]


def test_masks_indices_and_names():
    X = np.zeros((3, 3))
    assert list(feature_types(X, [True, False, True], None)) == [
        "unordered",
        "continuous",
        "unordered",
    ]
    assert list(feature_types(X, [-1], [0])) == ["ordered", "continuous", "unordered"]
    assert list(feature_types(X, None, None)) == ["continuous"] * 3
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    assert list(feature_types(df, ["b"], ["c"])) == [
        "continuous",
        "unordered",
        "ordered",
    ]
    with pytest.raises(ValueError, match="outside"):
        feature_types(X, [3], None)
    with pytest.raises(ValueError, match="mask of 2 values"):
        feature_types(X, [True, False], None)
    with pytest.raises(ValueError, match="no feature names"):
        feature_types(X, ["a"], None)
    with pytest.raises(ValueError, match="not a feature"):
        feature_types(df, ["z"], None)


def test_encoding_learns_levels_and_codes_unseen_as_minus_one():
    X = np.array([[0.5, "b", 3], [0.1, "a", 1], [0.2, "b", 2]], dtype=object)
    types = feature_types(X, [1], [2])
    enc = FeatureEncoder(types).fit(X)
    assert list(enc.categories[1]) == ["a", "b"]
    assert_array_equal(enc.categories[2], [1.0, 2.0, 3.0])
    Q = np.array([[0.3, "z", 7], [0.4, "a", 1]], dtype=object)
    assert_array_equal(enc.transform(Q), [[0.3, -1.0, 7.0], [0.4, 0.0, 1.0]])


def test_ordered_categorical_positions():
    col = pd.Categorical(
        ["lo", "hi", "mid"], categories=["lo", "mid", "hi"], ordered=True
    )
    df = pd.DataFrame({"x": [0.0, 1.0, 2.0], "g": col})
    enc = FeatureEncoder(feature_types(df, "from_dtype", None)).fit(df)
    assert_array_equal(enc.transform(df)["g"], [0.0, 2.0, 1.0])
    q = pd.DataFrame({"x": [0.0], "g": pd.Categorical(["new"])})
    assert_array_equal(enc.transform(q)["g"], [-1.0])


def test_refusals():
    X = np.array([[0.5, 1.5], [0.1, 2.0]])
    with pytest.raises(ValueError, match="not integers"):
        FeatureEncoder(feature_types(X, None, [1])).fit(X)
    with pytest.raises(ValueError, match="NaN"):
        FeatureEncoder(feature_types(X, [1], None)).fit(np.array([[0.1, np.nan]]))
    with pytest.raises(ValueError, match="infinity"):
        FeatureEncoder(feature_types(X, [1], None)).fit(np.array([[0.1, np.inf]]))
    unordered = pd.DataFrame({"g": pd.Categorical(["a", "b"])})
    with pytest.raises(ValueError, match="unordered"):
        FeatureEncoder(feature_types(unordered, None, [0])).fit(unordered)


def test_errors_name_a_discrete_column_by_its_name():
    pd = pytest.importorskip("pandas")
    X = pd.DataFrame(
        {"size": [1.0, 2, 3, 4], "colour": pd.Categorical(["a", "b", None, "a"])}
    )
    with pytest.raises(ValueError, match=r"discrete feature 'colour' \(column 1\)"):
        NadarayaWatsonRegressor(bandwidth=1.0).fit(X, [1.0, 2, 3, 4])
    fitted = NadarayaWatsonRegressor(bandwidth=1.0).fit(X.fillna("a"), [1.0, 2, 3, 4])
    with pytest.raises(ValueError, match=r"discrete feature 'colour' \(column 1\)"):
        fitted.predict(X)


def test_a_polars_enum_is_an_ordered_feature():
    # An Enum's categories are ordered, as a pandas ordered categorical's.
    pl = pytest.importorskip("polars")
    pd = pytest.importorskip("pandas")
    grades = ["lo", "hi", "mid", "lo", "mid", "hi"]
    X = pl.DataFrame(
        {
            "x": [0.1, 0.5, 0.9, 0.3, 0.7, 0.2],
            "grade": pl.Series(grades, dtype=pl.Enum(["lo", "mid", "hi"])),
        }
    )
    y = [1.0, 3, 2, 1, 2, 3]
    frame = pd.DataFrame(
        {
            "x": X["x"].to_list(),
            "grade": pd.Categorical(
                grades, categories=["lo", "mid", "hi"], ordered=True
            ),
        }
    )
    reference = NadarayaWatsonRegressor(bandwidth=[0.5, 0.3]).fit(frame, y)
    for params in ({}, {"ordered_features": ["grade"]}):
        est = NadarayaWatsonRegressor(bandwidth=[0.5, 0.3], **params).fit(X, y)
        assert [k.ordered for k in est._discrete.kernels] == [True]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # polars' feature names
            assert_allclose(est.predict(X), reference.predict(frame), rtol=1e-12)
