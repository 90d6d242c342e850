"""The library's settings: set, read, restored, checked, and the BLAS threads
the core's sums run on."""

import numpy as np
import pytest
from _core_reference import RecordingKernel
from threadpoolctl import threadpool_info, threadpool_limits

import sknw
from sknw import NadarayaWatsonRegressor, config_context, get_config, set_config


@pytest.fixture(autouse=True)
def _defaults():
    saved = get_config()
    yield
    set_config(**saved)


def test_defaults_and_set_config():
    assert get_config() == {"blas_threads": 1}
    set_config(blas_threads=3)
    assert get_config()["blas_threads"] == 3
    set_config()  # None: unchanged
    assert get_config()["blas_threads"] == 3
    set_config(blas_threads="inherit")
    assert get_config()["blas_threads"] == "inherit"
    # A copy: changing it changes nothing.
    get_config()["blas_threads"] = 7
    assert get_config()["blas_threads"] == "inherit"
    assert sknw.set_config is set_config


def test_config_context_restores_also_on_error():
    with config_context(blas_threads=2):
        assert get_config()["blas_threads"] == 2
        with config_context():
            assert get_config()["blas_threads"] == 2
    assert get_config()["blas_threads"] == 1
    with pytest.raises(RuntimeError), config_context(blas_threads="inherit"):
        raise RuntimeError
    assert get_config()["blas_threads"] == 1


@pytest.mark.parametrize(
    "value", [0, -1, 1.5, True, "all", "1", np.float64(2.0), np.array([1, 2])]
)
def test_bad_blas_threads_are_refused(value):
    with pytest.raises(ValueError, match="blas_threads must be an int >= 1"):
        set_config(blas_threads=value)
    with pytest.raises(ValueError, match="blas_threads must be an int >= 1"):
        with config_context(blas_threads=value):
            pass  # pragma: no cover
    assert get_config()["blas_threads"] == 1


def test_numpy_integers_are_taken():
    set_config(blas_threads=np.int64(2))
    assert get_config()["blas_threads"] == 2
    assert type(get_config()["blas_threads"]) is int


def _blas_threads_allowed(limit):
    """The threads BLAS reports under ``threadpool_limits(limit)``."""
    with threadpool_limits(limits=limit, user_api="blas"):
        return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}


@pytest.mark.parametrize("n_jobs", [None, 2])
@pytest.mark.parametrize(
    ("setting", "outside", "inside"),
    [(None, 2, 1), (2, 1, 2), ("inherit", 2, 2), ("inherit", 1, 1)],
)
def test_the_sums_run_on_the_set_blas_threads(setting, outside, inside, n_jobs):
    if _blas_threads_allowed(2) != {2}:
        pytest.skip("no BLAS that runs on two threads here")
    rng = np.random.default_rng(0)
    X, Q = rng.normal(size=(300, 3)), rng.normal(size=(600, 3))
    RecordingKernel.seen = []
    reg = NadarayaWatsonRegressor(
        kernel=RecordingKernel(), bandwidth=0.5, n_jobs=n_jobs
    )
    with threadpool_limits(limits=outside, user_api="blas"):
        with config_context(blas_threads=setting):
            reg.fit(X, X[:, 0]).predict(Q)
    assert RecordingKernel.seen and set(RecordingKernel.seen) == {inside}
