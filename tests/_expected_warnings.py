"""Assertions on sknw's counted warnings (:class:`sknw.exceptions.QueryWarning`)."""

from contextlib import contextmanager

import pytest


@contextmanager
def warns_about(category, n_affected, n_queries=None):
    """Expect warnings of ``category`` (one per call in the block) about
    ``n_affected`` queries each (of ``n_queries``, where given), the counts
    in their attributes, not their text."""
    with pytest.warns(category) as record:
        yield record
    counted = [
        w.message
        for w in record
        if isinstance(w.message, category) and w.message.n_affected is not None
    ]
    assert counted
    assert all(m.n_affected == n_affected for m in counted)
    if n_queries is not None:
        assert all(m.n_queries == n_queries for m in counted)
    assert all(str(m).startswith("Some queries") for m in counted)
