"""Every configuration of the golden corpus (see ``tests/_golden.py``) gives
the answers recorded: the same choices (kernel, bandwidth, span) and the same
numbers to rounding."""

import numpy as np
import pytest
from _golden import CONFIGS, CORPUS, answers
from numpy.testing import assert_allclose, assert_array_equal

#: Relative to each array's largest magnitude: the rounding of other BLAS
#: kernels or summation orders, far below any change of behaviour.
RTOL = 1e-10


@pytest.fixture(scope="module")
def corpus():
    with np.load(CORPUS) as recorded:
        return dict(recorded)


def test_the_corpus_holds_every_configuration(corpus):
    keys = {name.split("::")[0] for name in corpus}
    assert keys == {config.key for config in CONFIGS}
    assert len(CONFIGS) >= 300


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.key)
def test_answers_equal_the_recorded_ones(corpus, config):
    got = answers(config)
    recorded = {
        name.split("::")[1]: value
        for name, value in corpus.items()
        if name.split("::")[0] == config.key
    }
    assert set(got) == set(recorded)
    for name, value in got.items():
        want = recorded[name]
        if want.dtype.kind == "U":
            assert_array_equal(value, want, err_msg=name)
            continue
        assert value.shape == want.shape, name
        assert_array_equal(np.isnan(value), np.isnan(want), err_msg=name)
        scale = np.nanmax(np.abs(want), initial=0.0)
        assert_allclose(value, want, rtol=RTOL, atol=RTOL * scale, err_msg=name)
