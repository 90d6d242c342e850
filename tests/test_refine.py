"""The refinement of a grid's best bandwidth (``refine=True``) and the
polish of its size; their effect on the CV estimators is tested with them in
``test_selection.py``."""

import numpy as np
import pytest

from sknw._selection.refine import (
    REFINE_RANGE,
    SIZE_POLISH_STEPS,
    SIZE_POLISH_TOLERANCE,
    polish_size,
    refine_bandwidth,
)


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


def _scored(f):
    calls = []

    def score_of(t):
        calls.append(t)
        return f(t)

    return score_of, calls


def test_polish_size_finds_a_parabolas_vertex_in_one_step():
    score_of, calls = _scored(lambda t: -((t - 0.13) ** 2))
    logs = np.array([-0.2, 0.0, 0.2])
    log, score = polish_size(score_of, logs, [score_of(t) for t in logs])
    assert log == pytest.approx(0.13, abs=1e-12) and score == pytest.approx(0.0)
    # The second step would land on the vertex again: not scored.
    assert len(calls) == 3 + 1


def test_polish_size_converges_on_a_skewed_score():
    # The shape of a squared-error curve in the log of the bandwidth, of
    # optimum 0.06.
    def f(t):
        return -(np.exp(4 * (t - 0.06)) + 4 * np.exp(0.06 - t))

    score_of, calls = _scored(f)
    logs = np.array([-0.17, 0.0, 0.17])
    log, score = polish_size(score_of, logs, [f(t) for t in logs])
    assert len(calls) <= SIZE_POLISH_STEPS
    assert score > f(0.0) and score == f(log)
    # Within 0.5 % of the optimum, whose score it matches to 1e-5.
    assert abs(log - 0.06) < 0.005 and score > -5.0 * (1 + 1e-4)


def test_polish_size_keeps_the_start_unless_strictly_better():
    # Flat: no parabola, nothing scored.
    score_of, calls = _scored(lambda t: 1.0)
    assert polish_size(score_of, [-1.0, 0.0, 1.0], [1.0, 1.0, 1.0]) == (0.0, 1.0)
    assert calls == []
    # The vertex scores worse (a noisy score) or NaN: the start is kept.
    for value in (-5.0, np.nan):
        score_of, calls = _scored(lambda t, v=value: v)
        got = polish_size(score_of, [-1.0, 0.0, 1.0], [-1.0, 0.0, -3.0])
        assert got == (0.0, 0.0) and len(calls) >= 1
        assert all(-1.0 < t < 1.0 for t in calls)


def test_polish_size_stops_near_a_point_already_scored():
    # Symmetric neighbours: the vertex is the start itself.
    score_of, calls = _scored(lambda t: -(t**2))
    got = polish_size(score_of, [-0.5, 0.0, 0.5], [-0.25, 0.0, -0.25])
    assert got == (0.0, 0.0) and calls == []
    # A vertex within the tolerance of the start is not scored either.
    shift = SIZE_POLISH_TOLERANCE / 4
    score_of, calls = _scored(lambda t: -((t - shift) ** 2))
    logs = [-0.5, 0.0, 0.5]
    got = polish_size(score_of, logs, [-((t - shift) ** 2) for t in logs])
    assert got == (0.0, -(shift**2)) and calls == []
