"""The refinement of a grid's best bandwidth (``refine=True``); its effect
on the CV estimators is tested with them in ``test_selection.py``."""

import numpy as np

from sknw._refine import REFINE_RANGE, refine_bandwidth


def test_refine_keeps_the_grid_choice_when_nothing_is_better():
    calls = []

    def evaluate(bw):
        calls.append(bw)
        return -1.0  # flat: nothing strictly better

    bw, score = refine_bandwidth(evaluate, np.array([0.3, 2.0]), -1.0)
    np.testing.assert_array_equal(bw, [0.3, 2.0])
    assert score == -1.0 and len(calls) > 2
    assert all(np.all(np.asarray(c) > 0) for c in calls)


def test_one_coordinate_stays_between_the_grids_neighbours():
    """One coordinate: Brent's search between the grid bandwidths nearest the
    start, which reaches the optimum of a smooth score inside them."""
    calls = []

    def evaluate(bw):
        calls.append(bw)
        return -((np.log(bw) - np.log(0.7)) ** 2)

    bw, score = refine_bandwidth(evaluate, 0.5, evaluate(0.5), grid=[0.25, 0.5, 1.0])
    assert 0.25 <= min(calls) and max(calls) <= 1.0
    np.testing.assert_allclose(bw, 0.7, rtol=1e-3)
    assert score > -((np.log(0.5) - np.log(0.7)) ** 2)


def test_without_grid_neighbours_the_range_bounds_the_search():
    calls = []

    def evaluate(bw):
        calls.append(bw)
        return float(bw)  # always better larger

    bw, _ = refine_bandwidth(evaluate, 1.0, 1.0)
    assert max(calls) <= REFINE_RANGE * (1 + 1e-9)
    assert bw > 1.0
