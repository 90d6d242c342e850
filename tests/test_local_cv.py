"""Out-of-sample local linear estimates by the exact path: from the
training points within the windows of the points it computes, the same
estimates as from all of them."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.model_selection import KFold

from sknw import LocalLinearRegressorCV, _local_cv
from sknw._selection import normalised_weights


def _tailed(seed=0, n=1500):
    rng = np.random.default_rng(seed)
    X = rng.standard_t(3, (n, 1))
    y = np.sin(X[:, 0]) + rng.normal(0.0, 0.2, n)
    w = rng.integers(0, 4, n).astype(float)
    return X, y, w


def _estimates(est, cand, X, w, unit, train, rows, windowed):
    if windowed:
        return _local_cv.exact_estimates(est, cand, X, w, unit, train, rows)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(
            _local_cv, "_windowed", lambda e, c, X, w, keep, r, own, p: (keep, own)
        )
        return _local_cv.exact_estimates(est, cand, X, w, unit, train, rows)


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov", "boxcar"])
@pytest.mark.parametrize("kfold", [False, True])
@pytest.mark.parametrize("policy", ["nan", "mean", "nearest"])
@pytest.mark.parametrize("weighted", [False, True])
def test_estimates_from_the_windows_equal_those_from_every_point(
    kernel, kfold, policy, weighted
):
    X, y, w = _tailed(seed=4)
    w = w if weighted else None
    est = LocalLinearRegressorCV(kernels=[kernel], bandwidths=[100.0],
                                 empty_window=policy)  # fmt: skip
    est.fit(X, y, sample_weight=w)  # the fitted state exact_estimates reads
    est._cv_targets = y[:, None]
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
        cand = {"kernel": est.kernel_, "bandwidth": np.array([h])}
        keep = np.arange(X.shape[0]) if train is None else train
        own = rows if train is None else None
        kept, _ = _local_cv._windowed(est, cand, X, wn, keep, rows, own, policy)
        fits.append(kept.size < keep.size)
        got, empty = _estimates(est, cand, X, wn, unit, train, rows, True)
        want, empty_all = _estimates(est, cand, X, wn, unit, train, rows, False)
        assert empty == empty_all
        assert_allclose(got, want, rtol=0, atol=1e-12 * np.ptp(y), equal_nan=True)
    # The windows hold fewer points at the small bandwidths (unless an empty
    # window's estimate needs the other points).
    if kernel == "gaussian" or policy == "nan":
        assert fits[0]
