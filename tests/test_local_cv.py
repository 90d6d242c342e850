"""Out-of-sample local linear estimates by the exact path: from the
training points within the windows of the points it computes, the same
estimates as from all of them."""

from functools import partial

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.model_selection import KFold

from sknw import LocalLinearRegressor
from sknw._bandwidth.scaling import group_candidates
from sknw._local import passes as _local_cv
from sknw._local.passes import FIT_ROWS, WINDOWED_FITS, LocalPasses
from sknw._selection.candidate import Candidate
from sknw._selection.passes import Smoothing, normalised_weights
from sknw._trace import traced
from sknw.kernels import get_kernel


def _tailed(seed=0, n=1500):
    rng = np.random.default_rng(seed)
    X = rng.standard_t(3, (n, 1))
    y = np.sin(X[:, 0]) + rng.normal(0.0, 0.2, n)
    w = rng.integers(0, 4, n).astype(float)
    return X, y, w


def _passes(empty_window="nearest"):
    """The passes of a local linear search with the Euclidean metric, whose
    exact path is the plain estimator's (as LocalLinearRegressorCV's)."""
    smoothing = Smoothing(
        metric="euclidean",
        metric_params=None,
        empty_window=empty_window,
        tolerance=1e-6,
    )
    plain = partial(LocalLinearRegressor, algorithm="brute")
    return LocalPasses(
        smoothing=smoothing,
        degree=1,
        min_eigenvalue=1e-8,
        max_leverage=100.0,
        plain=plain,
    )


def _estimates(passes, cand, X, Y, w, unit, train, rows, windowed):
    with WINDOWED_FITS.set(windowed):
        return _local_cv.exact_estimates(passes, cand, X, Y, w, unit, train, rows)


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov", "boxcar"])
@pytest.mark.parametrize("kfold", [False, True])
@pytest.mark.parametrize("policy", ["nan", "mean", "nearest"])
@pytest.mark.parametrize("weighted", [False, True])
def test_estimates_from_the_windows_equal_those_from_every_point(
    kernel, kfold, policy, weighted
):
    X, y, w = _tailed(seed=4)
    w = w if weighted else None
    passes, kernel_ = _passes(policy), get_kernel(kernel)
    wn, unit = normalised_weights(w)
    # The tails and a few points inside, at small and large bandwidths.
    order = np.argsort(X[:, 0])
    rows = np.r_[order[:8], order[-8:], order[700:704]]
    train = None
    if kfold:
        train, test = next(KFold(4, shuffle=True, random_state=0).split(X))
        rows = test[np.argsort(X[test, 0])][np.r_[0:6, 150:154, -6:0]]
    fits = []
    for h in (0.01, 0.05, 0.3):
        cand = Candidate(kernel=kernel_, bandwidth=np.array([h]))
        keep = np.arange(X.shape[0]) if train is None else train
        own = rows if train is None else None
        kept, _ = _local_cv._windowed(
            passes, cand, X, wn, keep, rows, own=own, policy=policy
        )
        fits.append(kept.size < keep.size)
        got, empty = _estimates(
            passes, cand, X, y[:, None], wn, unit, train, rows, True
        )
        want, empty_all = _estimates(
            passes, cand, X, y[:, None], wn, unit, train, rows, False
        )
        assert empty == empty_all
        assert_allclose(got, want, rtol=0, atol=1e-12 * np.ptp(y), equal_nan=True)
    # The windows hold fewer points at the small bandwidths (unless an empty
    # window's estimate needs the other points).
    if kernel == "gaussian" or policy == "nan":
        assert fits[0]


@pytest.mark.parametrize("kernel", ["gaussian", "tricube"])
@pytest.mark.parametrize("kfold", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_points_the_fast_path_leaves_are_served_from_their_windows(
    kernel, kfold, weighted
):
    # Tailed inputs at small bandwidths: the fast path leaves the tails'
    # one-sided windows; their moments term by term about their windows'
    # means serve nearly all of them, with the exact path's estimates.
    X, y, w = _tailed(seed=5)
    w = w if weighted else None
    passes, kernel_ = _passes(), get_kernel(kernel)
    wn, unit = normalised_weights(w)
    folds = list(KFold(3, shuffle=True, random_state=1).split(X)) if kfold else None
    # (The sorted path leaves only the empty windows of compact kernels but
    # at large bandwidths, where one-sided windows hold many points.)
    hs = (0.002, 0.01, 0.05) if kernel == "gaussian" else (2.0, 3.0, 5.0)
    cands = [Candidate(kernel=kernel_, bandwidth=np.array([h])) for h in hs]
    with traced() as trace:
        got = _local_cv.query_centred_cv(passes, X, y[:, None], wn, unit, cands, folds)
    scaled = {
        i: (scale, head)
        for scale, members in group_candidates(cands, "euclidean", X)
        for i, head in members
    }

    def filled(points, positive, reach):
        """How many of ``points`` have a window that holds another point
        of ``positive`` (within ``reach``)."""
        d = np.abs(X[positive, 0][None, :] - X[points, 0][:, None])
        inside = (d < reach) & (positive[None, :] != points[:, None])
        return int(np.sum(inside.sum(axis=1) >= 2))

    counted = []
    for fits in trace.details("line_fits"):
        # The points left, and still left, whose window holds another point
        # of positive weight (the others' estimates are the empty window's).
        train = np.arange(X.shape[0]) if fits["train"] is None else fits["train"]
        positive = train if wn is None else train[wn[train] > 0]
        for i, points in fits["points"].items():
            scale, head = scaled[i]
            reach = float(head.divisor) * float(np.ravel(scale)[0])
            reach *= float(head.kernel.support)  # inf for the Gaussian
            left = fits["left"][i]
            counted.append(
                (filled(points, positive, reach), filled(left, positive, reach))
            )
    before, after = np.sum(counted, axis=0)
    assert before >= 5 and after <= before // 5
    splits = [(None, np.arange(X.shape[0]))] if folds is None else folds
    for i, cand in enumerate(cands):
        pred, missing = got[i]
        for train, test in splits:
            want, _ = _local_cv.exact_estimates(
                passes, cand, X, y[:, None], wn, unit, train, test
            )
            for tr, rows, _ in missing:  # left to the exact path
                if (tr is None) == (train is None) and (
                    tr is None or np.array_equal(tr, train)
                ):
                    want[np.isin(test, rows)] = np.nan
            assert_allclose(
                pred[test], want, rtol=0, atol=1e-9 * np.ptp(y), equal_nan=True
            )


def test_the_points_left_are_taken_in_chunks_of_fit_rows():
    # Chunks of 3 points (candidates cut across chunks): the same estimates
    # and the same points left to the exact path as all at once.
    X, y, w = _tailed(seed=6)
    passes, kernel_ = _passes(), get_kernel("gaussian")
    cands = [
        Candidate(kernel=kernel_, bandwidth=np.array([h])) for h in (0.002, 0.004, 0.01)
    ]
    whole = _local_cv.query_centred_cv(passes, X, y[:, None], None, 1.0, cands, None)
    with FIT_ROWS.set(3):
        chunked = _local_cv.query_centred_cv(
            passes, X, y[:, None], None, 1.0, cands, None
        )
    for i in range(3):
        assert_allclose(chunked[i][0], whole[i][0], rtol=1e-15, equal_nan=True)
        left = [
            np.sort(np.concatenate([r for _, r, _ in got[i][1]] or [[]]))
            for got in (whole, chunked)
        ]
        np.testing.assert_array_equal(*left)


def test_chunks_cut_the_items_at_their_ends():
    items = [
        (0, np.arange(5), np.zeros(5), 3),
        (1, np.arange(7), np.ones(7), np.arange(7)),
        (2, np.arange(0), np.zeros(0), 1),
        (3, np.arange(2), np.zeros(2), 1),
    ]
    chunks = list(_local_cv._chunks(items, 4))
    sizes = [sum(p.size for _, p, _, _ in c) for c in chunks]
    assert sizes == [4, 4, 4, 2]
    got = {}
    for chunk in chunks:
        assert len({i for i, *_ in chunk}) == len(chunk)  # once per chunk
        for i, points, _, n in chunk:
            got.setdefault(i, []).append(points)
            if i == 1:
                np.testing.assert_array_equal(n, points)
    for i, points, _, _ in items:
        if points.size:
            np.testing.assert_array_equal(np.concatenate(got[i]), points)
