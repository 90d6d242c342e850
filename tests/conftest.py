"""Hypothesis settings profiles for the property tests.

``default`` keeps the suite fast and reproducible (the same examples on every
run); ``thorough`` explores many more, differently on each run. Select a profile
with ``python -m pytest --hypothesis-profile=thorough`` (an option of
Hypothesis' pytest plugin, applied after this file is loaded) or with the
``HYPOTHESIS_PROFILE`` environment variable; the command-line option wins.
"""

import os
from collections.abc import Set

import pytest
from hypothesis import HealthCheck, settings

from sknw._trace import traced

settings.register_profile(
    "default",
    max_examples=25,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "thorough",
    max_examples=500,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


class ExpDtypes(Set):
    """The set of dtypes of the tiles whose ``exp`` the core took in
    ``trace``: its events ``exp`` (see sknw._trace), read as they come."""

    def __init__(self, trace):
        self.trace = trace

    def _dtypes(self):
        return set(self.trace.values("exp", "dtype"))

    def __contains__(self, dtype):
        return dtype in self._dtypes()

    def __iter__(self):
        return iter(self._dtypes())

    def __len__(self):
        return len(self._dtypes())


@pytest.fixture
def exp_dtypes():
    """The set of dtypes of the tiles whose ``exp`` the core takes while the
    test runs (float32 where the float32 path serves)."""
    with traced() as trace:
        yield ExpDtypes(trace)
