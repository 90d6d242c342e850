"""Cross-validated choice of kernel and bandwidth, exact leave-one-out in one pass.

The leave-one-out estimate of Nadaraya--Watson regression has a closed form: a
point's own term is dropped from the numerator and the denominator. The core
(:func:`sknw._sums.kernel_sums` with ``exclude_self=True``) masks that term
before the per-query shift, so the estimate stays exact however small the
bandwidth. Candidates are grouped by the scaling of the features they need; each
group costs one pass over the pairwise distances, shared by all its kernels and
bandwidths.
"""

from dataclasses import dataclass
from functools import partial
from numbers import Integral

import numpy as np
from sklearn.metrics import get_scorer_names
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import column_or_1d

from .._bandwidth.scaling import group_candidates
from .._bandwidth.span import split_heads
from .._sums import (
    BACKENDS,
    algorithms,
    default_tile_elements,
    empty_window_estimates,
    grid_sums,
    power_of_two_scale,
)
from .._validation import NotBoolInterval, check_bandwidth
from ..kernels import Kernel
from .criteria import IN_SAMPLE

#: The ``algorithm`` values of the CV estimators of Nadaraya--Watson (their
#: passes need exact sums: no tolerance).
CV_ALGORITHMS = algorithms(tolerance=False)
#: The algorithms of the Nadaraya--Watson searches: those and binned, whose
#: leave-one-out and K-fold estimates are within ``binned_tol``.
NW_CV_ALGORITHMS = algorithms()


def cv_predictions(
    X,
    V,
    w,
    cands,
    groups,
    *,
    folds,
    metric,
    metric_params,
    empty_window,
    tile_elements,
    n_jobs=None,
    unit=1.0,
    algorithm="auto",
    accepted=CV_ALGORITHMS,
    shares=None,
    pairs=None,
    tolerance=None,
):
    """Out-of-sample weighted averages of ``V`` for every candidate.

    ``folds`` is None for exact leave-one-out, else a list of (train, test)
    index arrays. ``w`` are the weights normalised by
    :func:`normalised_weights`, so that their products with the values can
    neither overflow nor fall into the subnormal range, in which one unit of
    weight is ``unit`` (the spans count the weights in these units); leaving
    a point out removes its whole row (see :mod:`sknw._selection.weights`).
    Returns ``preds`` of
    shape (n_candidates, n_samples, k) (each sample predicted from the fold
    that holds it out), the number of empty windows per candidate and their
    mask, of shape (n_candidates, n_samples). Empty windows follow
    ``empty_window``; under ``"nan"`` and ``"raise"`` their predictions are
    NaN. Each candidate's sums of each split are computed by the backend
    :func:`~sknw._sums.grid_sums` picks for it (``algorithm``, among the
    ``accepted`` names; an index per training fold), of the values centred
    on their mid-range where it exceeds their range, so that the
    approximations' bounds are relative to the spread of the values, not
    their magnitude. With leave-one-out, ``shares`` (an array of shape
    (n_candidates, n_samples), or None) receives each point's removed share
    (see :mod:`sknw._selection.criteria`). ``pairs``: the
    :class:`~sknw._sums.PairCache` of a search whose candidates share these
    points and folds (product kernels; None: none kept). ``tolerance``: that
    of the approximate backends (``binned_tol``; None: the estimator has
    none).
    """
    n, k = V.shape
    mid = np.zeros(k)
    lo, hi = np.full(k, -np.inf), np.full(k, np.inf)
    if n:
        # Only columns offset by more than their range: centring others (such
        # as the moments of the local fits, whose windows average values near
        # zero) would cost digits.
        lo, hi = V.min(axis=0), V.max(axis=0)
        mid = hi / 2 + lo / 2
        mid = np.where(np.abs(mid) > hi - lo, mid, 0.0)
    Vc = V - mid
    preds = np.full((len(cands), n, k), np.nan)
    n_empty = np.zeros(len(cands), dtype=np.intp)
    empties = np.zeros((len(cands), n), dtype=bool)
    splits = [(None, None)] if folds is None else folds
    for scale, members in groups:
        for split, (train, test) in enumerate(splits):
            if train is None:
                own = np.arange(n)
                Xq, Xt, Vt, wt = X[own], X, V, w
                loo = {"exclude_self": True, "self_index": own}
                test = own
            else:
                Xq, Xt, Vt = X[test], X[train], V[train]
                wt = None if w is None else w[train]
                own, loo = None, {}
            heads = split_heads(
                members,
                cands,
                Xq,
                Xt,
                wt,
                own=own,
                unit=unit,
                scale=scale,
                rows=test,
                shape=X.shape,
                metric=metric,
                metric_params=metric_params,
                tile_elements=tile_elements,
            )
            results = grid_sums(
                algorithm,
                accepted,
                Xq,
                Xt,
                Vc if train is None else Vc[train],
                heads,
                n_jobs=n_jobs,
                metric=metric,
                metric_params=metric_params,
                scale=scale,
                sample_weight=wt,
                tile_elements=tile_elements,
                pairs=None if pairs is None else partial(pairs.sums, split),
                tolerance=tolerance,
                **loo,
            )
            fallbacks = _Fallbacks(
                Xq,
                Xt,
                Vt,
                wt,
                scale=scale,
                metric=metric,
                metric_params=metric_params,
                tile_elements=tile_elements,
                exclude_self=train is None,
                self_index=own,
            )
            for (i, _), head, (S, den, M) in zip(members, heads, results, strict=True):
                factors = getattr(head, "factors", None)
                if shares is not None and train is None:
                    shares[i] = _removed_shares(head, den, M, w)
                empty = ~(den != 0)
                with np.errstate(invalid="ignore", divide="ignore"):
                    out = S / den[:, None] + mid
                if head.kernel.nonnegative:
                    # A weighted average lies within the values' range: clip
                    # the rounding of the fast paths' own-term subtraction
                    # (no probability below 0).
                    np.clip(out, lo, hi, out=out)
                if empty.any():
                    compact = _fill_empty(out, empty, head, empty_window, fallbacks)
                    if compact:
                        n_empty[i] += int(empty.sum())
                    if compact or factors is not None:
                        # Empty windows, or no point of positive factor (the
                        # mean): local constant, for the local fits too.
                        empties[i][test] = empty
                preds[i][test] = out
    return preds, n_empty, empties


def _fill_empty(out, empty, head, empty_window, fallbacks):
    """Set the estimates of the queries ``empty`` in ``out`` by the
    ``empty_window`` policy, and say whether the kernel is compact (its empty
    windows count as such). Unbounded support: only overflow, or discrete
    factors of 0, empty a window; those take the limit of a vanishing
    bandwidth, the nearest points (see :class:`_Fallbacks`)."""
    compact = bool(np.isfinite(head.kernel.support))
    policy = empty_window if compact else "nearest"
    if policy in ("nearest", "mean"):
        out[empty] = fallbacks(policy, empty, getattr(head, "factors", None))
    else:
        out[empty] = np.nan
    return compact


def _removed_shares(head, den, M, w):
    """Each training point's share, in its full weight sum, of its own term
    (which leaving it out removes), from its leave-one-out sums ``(den,
    M)``."""
    k0 = float(np.asarray(head.kernel(np.zeros(1)), dtype=np.float64)[0])
    factors = getattr(head, "factors", None)
    if factors is not None:  # a product kernel: the point's own factor
        k0 *= factors.self_factor()
    removed = np.ones(den.shape[0]) if w is None else w
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        own = k0 * removed
        # den exp(M) underflows to 0 where the own term dominates (share 1).
        share = own / (den * np.exp(M) + own)
    # A signed kernel's sum may be negative; only an empty one has no share.
    return np.where(den != 0, share, 1.0)


class _Fallbacks:
    """The empty-window estimates of one split's queries ``Xq`` (see
    :func:`~sknw._sums.empty_window_estimates`, whose keywords ``params``
    are), each query's computed once, for the first candidate that leaves
    its window empty."""

    def __init__(self, Xq, Xt, Vt, wt, **params):
        self.data, self.params = (Xq, Xt, Vt, wt), params
        self.own = params.pop("self_index")
        self.cache = {}

    def __call__(self, policy, empty, factors=None):
        """The estimates of the queries ``empty`` (a mask) under ``policy``
        (of the product kernel of discrete ``factors``, where given)."""
        Xq, Xt, Vt, wt = self.data
        key = (policy, None if policy == "mean" else factors)
        if key not in self.cache:
            shape = (empty.size, Vt.shape[1])
            self.cache[key] = (np.zeros(empty.size, dtype=bool), np.empty(shape))
        have, values = self.cache[key]
        new = empty & ~have
        if new.any():
            values[new] = empty_window_estimates(
                policy,
                Xq[new],
                Xt,
                Vt,
                wt,
                self_index=None if self.own is None else self.own[new],
                factors=factors,
                **self.params,
            )
            have |= new
        return values[empty]


def normalised_weights(w):
    """Frequency weights divided by a power of two (exactly), and the weight of
    one unit after the division: ``(w / c, 1 / c)`` (``(None, 1.0)`` for None).

    The largest weight becomes at least 1 and less than 2, whatever its
    magnitude: sums of products with the weights neither overflow nor lose
    digits to the subnormal range, and weighted means (every scikit-learn
    score) are unchanged. The unit is inf where it exceeds the float range (the
    largest weight below ``2**-1023``, so every weight below one unit).
    """
    if w is None:
        return None, 1.0
    scale = power_of_two_scale(w)
    with np.errstate(over="ignore"):
        unit = float(1.0 / scale)
    return w / scale, unit


def score_candidates(preds, y, w, folds, scorer, classes=None):
    """Score every candidate's out-of-sample predictions.

    Returns ``(mean, splits)``: the score (mean over folds for K-fold) and the
    per-fold scores (None for leave-one-out). A candidate with any NaN
    prediction scores NaN.
    """
    splits = [(None, slice(None))] if folds is None else folds
    scores = np.full((preds.shape[0], len(splits)), np.nan)
    for i, pred in enumerate(preds):
        for f, (_, test) in enumerate(splits):
            p = pred[test]
            if np.isnan(p).any():
                continue
            wf = None if w is None else w[test]
            scores[i, f] = scorer(p, y[test], wf)
    mean = scores.mean(axis=1)
    return mean, (None if folds is None else scores)


def select(mean_scores):
    """Index of the best candidate: highest score, first on ties; NaN last."""
    if np.all(np.isnan(mean_scores)):
        raise ValueError(
            "Every candidate scored NaN: no kernel and bandwidth could be "
            "evaluated (empty windows under empty_window='nan' or 'raise', a "
            "scorer that returned NaN, or algorithm='binned' with grids too "
            "large for every bandwidth). Widen the bandwidth grid, use "
            "empty_window='nearest', or a larger binned_tol."
        )
    return int(np.nanargmax(mean_scores))


def check_bandwidth_grid(bandwidths, n_features):
    """Validate a user bandwidth grid: positive floats or per-feature arrays."""
    grid = [check_bandwidth(bw, n_features) for bw in bandwidths]
    if not grid:
        raise ValueError("bandwidths is empty: give at least one bandwidth.")
    return grid


def check_groups(groups, n, cv):
    """The ``groups`` of a CV estimator's fit as an array of ``n`` labels (or
    None); refused with exact leave-one-out (``cv=None``), which has no use
    for them."""
    if groups is None:
        return None
    if cv is None:
        raise ValueError(
            "groups were given, but cv=None is exact leave-one-out, which "
            "splits no groups: give a splitter that uses them, such as "
            "cv=GroupKFold(5) or cv=LeaveOneGroupOut()."
        )
    groups = column_or_1d(groups)
    if groups.shape[0] != n:
        raise ValueError(
            f"groups has {groups.shape[0]} labels for {n} samples: give one "
            "group label per sample."
        )
    return groups


def cv_parameter_constraints(base_constraints, kernel_names, algorithm_names):
    """Constraints of a ``*CV`` estimator from those of its plain estimator
    (``binned_tol`` where its algorithms include an approximate one)."""
    dropped = ("kernel", "bandwidth", "span", "robust_iterations")
    if not any(BACKENDS[name].tolerance for name in algorithm_names if name != "auto"):
        dropped += ("binned_tol",)
    return {
        **{k: v for k, v in base_constraints.items() if k not in dropped},
        "algorithm": [StrOptions(set(algorithm_names))],
        "kernels": ["array-like", StrOptions(kernel_names), Kernel],
        "bandwidths": [
            None,
            NotBoolInterval(Integral, 1, None, closed="left"),
            "array-like",
        ],
        "cv": ["cv_object"],
        "scoring": [
            StrOptions(set(get_scorer_names()) | set(IN_SAMPLE)),
            callable,
            None,
        ],
        "refine": ["boolean"],
        "spans": [None, "array-like"],
    }


@dataclass(frozen=True, kw_only=True)
class Smoothing:
    """How a search smooths its candidates: what the estimator resolved
    before the search (the fitted ``metric_params``, the counted discrete
    features) and the parameters its passes take (``tolerance`` is
    ``binned_tol``, None without)."""

    metric: object
    metric_params: dict | None
    discrete: object = None
    algorithm: str = "auto"
    empty_window: str = "nearest"
    n_jobs: int | None = None
    tolerance: float | None = None

    def continuous(self, X):
        """The continuous columns of the (encoded) ``X``."""
        return X if self.discrete is None else self.discrete.continuous_of(X)

    def full_bandwidth(self, cand):
        """A candidate's bandwidth as ``bandwidth_`` holds it (with the
        smoothing parameters of the discrete features)."""
        if self.discrete is None:
            return cand.bandwidth
        return self.discrete.join(cand.bandwidth, cand.lambdas)


@dataclass(frozen=True, kw_only=True)
class KernelPasses:
    """The passes of a Nadaraya--Watson search: the out-of-sample weighted
    averages of the values (:func:`cv_predictions`), by the backends
    ``accepted``. ``self_weights``: leave-one-out drops each point's own
    weight and renormalises, so that the self weights give the in-sample
    criteria (:mod:`sknw._selection.criteria`)."""

    smoothing: Smoothing
    accepted: tuple
    self_weights: bool = False
    #: The highest power of the local moments a final fit's index sums.
    local_powers = 0

    def values(self, X, Y, w):
        """The values whose weighted averages the search needs (the targets
        themselves), and ``finish`` (None: the averages are the
        estimates)."""
        return Y, None

    def estimates(self, X, V, w, cands, *, unit, folds, finish, cache, shares=None):
        """Out-of-sample estimates of every candidate, ``(n_candidates, n,
        k)``, and their numbers of empty windows (see :func:`cv_predictions`,
        whose averages ``finish`` turns into estimates; ``cache`` the
        search's :class:`~sknw._selection.grid.PassCache`). With ``shares``
        (leave-one-out, for the in-sample criteria), the fitted values of the
        fits to every point instead, and ``shares`` receives each point's
        self weight (see :mod:`sknw._selection.criteria`). An ``algorithm`` the passes
        may not take (a backend of the estimator's other sums) leaves them
        to ``"auto"``."""
        smoothing = self.smoothing
        algorithm = smoothing.algorithm
        algorithm = algorithm if algorithm in self.accepted else "auto"
        groups = group_candidates(cands, smoothing.metric, smoothing.continuous(X))
        discrete = smoothing.discrete
        if discrete is not None:  # product kernels: the heads' factors
            groups = [
                (
                    scale,
                    [(i, discrete.head(h, cands[i].lambdas)) for i, h in members],
                )
                for scale, members in groups
            ]
        preds, n_empty, empties = cv_predictions(
            X,
            V,
            w,
            cands,
            groups,
            folds=folds,
            metric=smoothing.metric,
            metric_params=smoothing.metric_params,
            empty_window=smoothing.empty_window,
            tile_elements=default_tile_elements(),
            n_jobs=smoothing.n_jobs,
            unit=unit,
            algorithm=algorithm,
            accepted=self.accepted,
            shares=shares,
            pairs=cache.pairs,
            tolerance=smoothing.tolerance,
        )
        if finish is not None:
            preds = finish(preds, cands, empties)
        elif shares is not None:  # the fits to every point (V: the targets)
            share = shares[:, :, None]
            preds = (1.0 - share) * preds + share * V[None]
        return preds, n_empty
