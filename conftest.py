"""Doctests of the package that need an optional dependency skip without it."""

from importlib.util import find_spec

import pytest

#: Name prefix of the doctests (of ``sknw/_dask.py``) that need Dask.
NEEDS_DASK = "sknw._dask."


def pytest_collection_modifyitems(config, items):
    if find_spec("dask") is not None:
        return
    skip = pytest.mark.skip(reason="needs dask (pip install 'sknw[dask]')")
    for item in items:
        if item.name.startswith(NEEDS_DASK):
            item.add_marker(skip)
