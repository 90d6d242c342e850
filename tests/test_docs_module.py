"""The shared parameter and attribute entries of the estimators' docstrings."""

import re

import pytest

import sknw
from sknw._docs import ATTRIBUTES, PARAMETERS, fill_docstring

ESTIMATORS = [
    getattr(sknw, name) for name in sknw.__all__ if hasattr(getattr(sknw, name), "fit")
]


def test_fill_indents_entries_and_leaves_other_braces():
    @fill_docstring
    class Example:
        """Summary.

        Parameters
        ----------
        {metric}
        other : {"a", "b"}, default="a"
            Not a placeholder: {metric} within a line.

        Attributes
        ----------
        {n_features_in_}
        """

    lines = PARAMETERS["metric"].splitlines()
    assert "\n".join("        " + line for line in lines) in Example.__doc__
    assert 'other : {"a", "b"}, default="a"' in Example.__doc__
    assert "Not a placeholder: {metric} within a line." in Example.__doc__
    lines = ATTRIBUTES["n_features_in_"].splitlines()
    assert "\n".join("        " + line for line in lines) in Example.__doc__


def test_unknown_key_raises():
    class Example:
        """Summary.

        {no_such_parameter}
        """

    with pytest.raises(KeyError, match="no_such_parameter"):
        fill_docstring(Example)


def test_keys_are_distinct():
    assert not set(PARAMETERS) & set(ATTRIBUTES)


@pytest.mark.parametrize("key", list(PARAMETERS) + list(ATTRIBUTES))
def test_each_entry_is_shared(key):
    text = PARAMETERS[key] if key in PARAMETERS else ATTRIBUTES[key]
    entry = "\n".join("    " + line for line in text.splitlines())
    users = [est.__name__ for est in ESTIMATORS if entry + "\n" in est.__doc__]
    assert len(users) >= 2, users


@pytest.mark.parametrize("est", ESTIMATORS, ids=lambda est: est.__name__)
def test_no_placeholder_left(est):
    assert not re.search(r"^ *\{\w+\}$", est.__doc__, re.MULTILINE)
