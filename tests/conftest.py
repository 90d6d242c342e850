"""Hypothesis settings profiles for the property tests.

``default`` keeps the suite fast and reproducible (the same examples on every
run); ``thorough`` explores many more, differently on each run. Select a profile
with ``python -m pytest --hypothesis-profile=thorough`` (an option of
Hypothesis' pytest plugin, applied after this file is loaded) or with the
``HYPOTHESIS_PROFILE`` environment variable; the command-line option wins.
"""

import os

import pytest
from hypothesis import HealthCheck, settings

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


@pytest.fixture
def exp_dtypes(monkeypatch):
    """The set of dtypes of the tiles whose ``exp`` the core takes, recorded
    while the test runs (float32 where the float32 path serves)."""
    import sys

    from sknw._sums import _base

    seen = set()
    original = _base._exp

    def spy(T, floor):
        seen.add(T.dtype)
        return original(T, floor)

    # Every module of the core that imported it.
    for name, module in list(sys.modules.items()):
        if name.startswith("sknw._sums") and getattr(module, "_exp", None) is original:
            monkeypatch.setattr(module, "_exp", spy)
    return seen
