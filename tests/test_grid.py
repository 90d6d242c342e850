"""The candidate grids of the searches: the default grid extends itself where
its best candidate is at an edge; a user grid's edge is warned about."""

import warnings
from dataclasses import replace

import numpy as np
import pytest
from numpy.testing import assert_allclose

from sknw import (
    LocalLinearRegressor,
    LocalLinearRegressorCV,
    NadarayaWatsonClassifier,
    NadarayaWatsonClassifierCV,
    NadarayaWatsonRegressor,
    NadarayaWatsonRegressorCV,
)
from sknw._selection.candidate import Candidate
from sknw._selection.grid import (
    DEFAULT_GRID_RANGE,
    EXTENSION_LIMIT,
    EXTENSION_STEPS,
    ScoreMemo,
)
from sknw._trace import traced
from sknw.exceptions import GridEdgeWarning
from sknw.kernels import get_kernel


def line(n=200, seed=0, noise=0.1):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 1.0, size=(n, 1))
    return X, 2.0 * X[:, 0] + noise * rng.normal(size=n)


def assert_geometric(multipliers):
    ratios = multipliers[1:] / multipliers[:-1]
    assert_allclose(ratios, 2.0**0.25, rtol=1e-12)


def test_a_straight_line_extends_local_linear_to_its_limit():
    # The best local linear fit of a line is the global linear fit: the grid
    # grows above its default edge up to the documented limit.
    X, y = line()
    with pytest.warns(GridEdgeWarning, match="at the limit of its extension"):
        cv = LocalLinearRegressorCV().fit(X, y)
    mult = cv.cv_results_["bandwidth_multiplier"]
    assert len(mult) > 30 and (len(mult) - 30) % EXTENSION_STEPS in (0, 2)
    assert_geometric(mult)
    assert mult.max() <= DEFAULT_GRID_RANGE[1] * EXTENSION_LIMIT
    assert mult.max() * 2.0**0.25 > DEFAULT_GRID_RANGE[1] * EXTENSION_LIMIT
    assert cv.best_index_ == len(mult) - 1
    # Its estimates are the least-squares line's to within the targets' spread.
    slope, intercept = np.polyfit(X[:, 0], y, 1)
    Q = np.linspace(0, 1, 11).reshape(-1, 1)
    assert_allclose(cv.predict(Q), slope * Q[:, 0] + intercept, atol=1e-4)


def test_an_interior_optimum_stops_the_extension():
    # A wiggly noiseless target: the optimum is below the default grid's
    # smallest multiplier, and the grid grows downwards until it is inside.
    rng = np.random.default_rng(1)
    X = rng.uniform(0.0, 1.0, size=(3000, 1))
    y = np.sin(80 * X[:, 0])
    cv = NadarayaWatsonRegressorCV().fit(X, y)
    mult = cv.cv_results_["bandwidth_multiplier"]
    assert len(mult) > 30 and mult.min() < 0.041
    assert_geometric(mult)
    assert 0 < cv.best_index_ < len(mult) - 1
    # The added candidates score as the same bandwidths given as a grid.
    grid = list(cv.cv_results_["param_bandwidth"][:EXTENSION_STEPS])
    ref = NadarayaWatsonRegressorCV(bandwidths=grid)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GridEdgeWarning)
        ref.fit(X, y)
    assert_allclose(
        ref.cv_results_["mean_test_score"],
        cv.cv_results_["mean_test_score"][:EXTENSION_STEPS],
        rtol=1e-10,
    )


def test_every_kernel_is_extended_alike():
    X, y = line(seed=2)
    labels = y > 1.0
    cv = NadarayaWatsonClassifierCV(kernels=["gaussian", "epanechnikov"]).fit(X, labels)
    mult = cv.cv_results_["bandwidth_multiplier"]
    half = len(mult) // 2
    assert len(mult) == 2 * half
    assert_allclose(mult[:half], mult[half:])
    assert_geometric(mult[:half])


def test_the_default_of_the_plain_estimators_extends_too():
    X, y = line()
    # A line: the extension reaches its limit (as above), and says so.
    with pytest.warns(GridEdgeWarning, match="at the limit of its extension"):
        est = LocalLinearRegressor().fit(X, y)
    assert est.bandwidth_selection_["n_candidates"] > 30
    with pytest.warns(GridEdgeWarning, match="at the limit of its extension"):
        ref = LocalLinearRegressorCV().fit(X, y)
    np.testing.assert_array_equal(est.bandwidth_, ref.bandwidth_)


@pytest.mark.parametrize(
    ("grid", "edge"),
    [([0.2, 0.4, 0.8], "smallest"), ([0.001, 0.002, 0.004], "largest")],
)
def test_a_user_grid_warns_at_its_edge(grid, edge):
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (100, 1))
    y = np.sin(6 * X[:, 0]) + 0.1 * rng.normal(size=100)
    with pytest.warns(GridEdgeWarning, match=f"is the {edge} of the bandwidths"):
        cv = NadarayaWatsonRegressorCV(bandwidths=grid).fit(X, y)
    assert len(cv.cv_results_["mean_test_score"]) == 3


def test_no_warning_inside_a_user_grid_or_for_two_sizes():
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (100, 1))
    y = np.sin(6 * X[:, 0]) + 0.1 * rng.normal(size=100)
    with warnings.catch_warnings():
        warnings.simplefilter("error", GridEdgeWarning)
        cv = NadarayaWatsonRegressorCV(bandwidths=[0.01, 0.05, 0.3]).fit(X, y)
        assert cv.best_index_ == 1
        NadarayaWatsonRegressorCV(bandwidths=[0.3, 0.6]).fit(X, y)
        NadarayaWatsonRegressorCV(bandwidths=[0.3]).fit(X, y)


def test_a_plateau_at_an_edge_is_not_extended():
    # Two well-separated classes: every small bandwidth gives each point its
    # nearest neighbour's class, a log-loss of 0; the grid stays as it is.
    rng = np.random.default_rng(5)
    X = np.concatenate([rng.normal(0, 0.1, 50), rng.normal(10, 0.1, 50)])[:, None]
    labels = np.repeat([0, 1], 50)
    cv = NadarayaWatsonClassifierCV().fit(X, labels)
    assert len(cv.cv_results_["mean_test_score"]) == 30


def _memo_scores(calls):
    """A stand-in scorer: each candidate's score from its bandwidth, its
    splits and empty windows from its position; records every call."""

    def score(cands):
        calls.append([float(np.sum(c.bandwidth)) for c in cands])
        mean = np.array([-float(np.sum(c.bandwidth)) for c in cands])
        splits = np.column_stack([mean, 2.0 * mean])
        return (mean, splits), np.arange(len(cands)) + 10 * len(calls)

    return score


def test_the_memo_scores_each_candidate_once_and_keeps_the_order():
    calls = []
    memo = ScoreMemo(_memo_scores(calls))
    gauss, epan = get_kernel("gaussian"), get_kernel("epanechnikov")
    a = Candidate(kernel=gauss, bandwidth=np.array([0.1, 0.2]))
    b = Candidate(kernel=gauss, bandwidth=np.array([0.3, 0.2]))
    (mean, splits), empty = memo([a, b, replace(a)])  # a twice: scored once
    assert calls == [[0.1 + 0.2, 0.3 + 0.2]]
    assert_allclose(mean, [-0.3, -0.5, -0.3])
    assert_allclose(splits[:, 1], 2.0 * mean)
    assert empty.tolist() == [10, 11, 10]
    # Met again: the same kernel and bandwidth bit for bit only.
    c = Candidate(kernel=epan, bandwidth=np.array([0.1, 0.2]))  # another kernel
    d = Candidate(kernel=gauss, bandwidth=np.array([0.1, np.nextafter(0.2, 1.0)]))
    e = Candidate(kernel=gauss, bandwidth=np.array([0.1, 0.2]), lambdas=(0.5,))
    (mean, splits), empty = memo([b, c, d, e, a])
    assert len(calls) == 2 and len(calls[1]) == 3  # c, d and e are new
    assert_allclose(mean, [-0.5, -0.3, -0.3, -0.3, -0.3])
    assert empty.tolist() == [11, 20, 21, 22, 10]


def test_the_memo_keeps_no_splits_where_the_scorer_gives_none():
    def score(cands):
        return (np.full(len(cands), -1.0), None), np.zeros(len(cands), int)

    memo = ScoreMemo(score)
    cand = Candidate(kernel=get_kernel("gaussian"), bandwidth=0.5)
    memo([cand])
    (mean, splits), empty = memo([cand, replace(cand, bandwidth=0.25)])
    assert splits is None and mean.tolist() == [-1.0, -1.0]


def test_a_shape_search_scores_no_candidate_twice():
    """The coordinate search's best is the centre of the window after it: its
    score is taken again, not computed again, and equals a fresh one."""
    rng = np.random.default_rng(3)
    X = rng.uniform(-2.0, 2.0, size=(400, 2))
    y = np.sin(2.0 * X[:, 0]) + 0.3 * rng.normal(size=400)
    with traced() as trace:
        search = NadarayaWatsonRegressorCV().fit(X, y)
    # The candidates of each pass of out-of-sample estimates, in order.
    calls = [
        [np.asarray(c.bandwidth, float).tobytes() for c in e.details["candidates"]]
        for e in trace.events
        if e.name in ("estimates", "point_losses")
    ]
    seen = [key for call in calls for key in call]
    assert len(seen) == len(set(seen))
    # The final grid (the window) was scored in its own call, but for the
    # candidate met before it: the coordinate search's best.
    grid = [np.asarray(p["bandwidth"], float) for p in search.cv_results_["params"]]
    first_call = {key: i for i, call in enumerate(calls) for key in call}
    at = [first_call[bw.tobytes()] for bw in grid]
    window_call = max(at)
    earlier = [i for i, c in enumerate(at) if c < window_call]
    assert len(earlier) == 1
    (centre,) = earlier
    fresh = NadarayaWatsonRegressorCV(bandwidths=[grid[centre]]).fit(X, y)
    assert_allclose(
        search.cv_results_["mean_test_score"][centre], fresh.best_score_, rtol=1e-12
    )


def test_the_memo_gives_candidates_its_defaults_before_looking_them_up():
    calls = []
    current = {"lambdas": (0.5,)}
    memo = ScoreMemo(_memo_scores(calls), {"lambdas": lambda: current["lambdas"]})
    cand = Candidate(kernel=get_kernel("gaussian"), bandwidth=np.array([0.1]))
    memo([cand])
    assert cand.lambdas == (0.5,)
    # Given explicitly, the same candidate: scored once.
    memo([replace(cand, lambdas=(0.5,))])
    current["lambdas"] = (0.25,)  # the search moved them: a new candidate
    memo([Candidate(kernel=cand.kernel, bandwidth=np.array([0.1]))])
    assert len(calls) == 2


@pytest.mark.parametrize("n_splits", [None, 2])
def test_the_memo_scores_refused_candidates_nan_without_computing_them(n_splits):
    calls = []
    scorer = _memo_scores(calls)

    def score(cands):
        (mean, splits), empty = scorer(cands)
        return (mean, None if n_splits is None else splits), empty

    def refused(cands):
        return np.array([float(c.bandwidth) < 0.1 for c in cands])

    memo = ScoreMemo(score, refused=refused, n_splits=n_splits)
    gauss = get_kernel("gaussian")
    cands = [Candidate(kernel=gauss, bandwidth=h) for h in (0.01, 0.5, 0.05, 1.0)]
    (mean, splits), empty = memo(cands)
    assert calls == [[0.5, 1.0]]  # the refused ones never reach the scorer
    assert_allclose(mean, [np.nan, -0.5, np.nan, -1.0])
    assert empty.tolist() == [0, 10, 0, 11]
    if n_splits is None:
        assert splits is None
    else:
        assert splits.shape == (4, 2) and np.isnan(splits[[0, 2]]).all()
        assert_allclose(splits[[1, 3], 1], [-1.0, -2.0])
    # Every candidate refused: no call, NaN rows of the splits' width.
    (mean, splits), _ = memo([Candidate(kernel=gauss, bandwidth=0.02)])
    assert len(calls) == 1 and np.isnan(mean).all()
    assert (splits is None) if n_splits is None else splits.shape == (1, 2)


@pytest.mark.parametrize(
    "est",
    [
        NadarayaWatsonClassifier(),
        NadarayaWatsonRegressor(),
        NadarayaWatsonRegressorCV(bandwidths=[0.01, 0.02, 0.05]),
    ],
    ids=lambda est: type(est).__name__,
)
def test_a_search_gives_its_grid_edge_warning_once(est):
    # Labels without signal in two features: the largest bandwidth wins, in
    # the first pass over the grid and again in the pass after the per-feature
    # search. One warning per fit, even where no filter folds repeats.
    rng = np.random.default_rng(0)
    X, y = rng.uniform(size=(300, 2)), rng.integers(0, 2, 300)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y)
    edges = [w for w in caught if issubclass(w.category, GridEdgeWarning)]
    assert len(edges) == 1
    assert "largest" in str(edges[0].message)
