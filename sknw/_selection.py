"""Cross-validated choice of kernel and bandwidth, exact leave-one-out in one pass.

The leave-one-out estimate of Nadaraya--Watson regression has a closed form: a
point's own term is dropped from the numerator and the denominator. The core
(:func:`sknw._sums.kernel_sums` with ``exclude_self=True``) masks that term
before the per-query shift, so the estimate stays exact however small the
bandwidth. Candidates are grouped by the scaling of the features they need; each
group costs one pass over the pairwise distances, shared by all its kernels and
bandwidths.
"""

from functools import partial
from numbers import Integral

import numpy as np
from sklearn.base import clone, is_classifier
from sklearn.metrics import get_scorer_names
from sklearn.model_selection import check_cv
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import column_or_1d

from ._bandwidth import COORDINATE_METRICS
from ._base import FitSettings
from ._criteria import IN_SAMPLE, check_in_sample, in_sample_scores
from ._default import subsample_rows
from ._grid import (  # noqa: F401 - the grid's names, here too
    DEFAULT_GRID_RANGE,
    WINDOW_STEPS,
    PassCache,
    ScoreMemo,
    candidate_grid,
    edge_text,
    extend_at_edges,
    grid_multipliers,
    grid_step,
    grid_window,
    refused_candidates,
)
from ._mixed import (
    SEARCH_ROUNDS,
    SearchState,
    coordinate_search,
    encode_features,
    mixed_grid,
    polish,
)
from ._refine import polish_size, refine_bandwidth
from ._scaling import group_candidates, scalings
from ._scoring import check_scoring, cv_results, make_scorer, object_array
from ._smoothest import per_point_losses, smoothest_near_best
from ._span import candidate_spans, span_candidates, split_heads
from ._sums import (
    BACKENDS,
    PairCache,
    algorithms,
    default_tile_elements,
    empty_window_estimates,
    grid_sums,
    power_of_two_scale,
)
from ._sums._parallel import core_blas_threads
from ._trace import Tunable, record
from ._validation import (
    NotBoolInterval,
    check_bandwidth,
    check_sample_weight,
    validate_regression_data,
)
from ._weights import distinct_rows, effective_sample_size
from .exceptions import GridEdgeWarning, warn
from .kernels import Kernel, get_kernel

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
    a point out removes its whole row (see :mod:`sknw._weights`). Returns ``preds`` of
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
    (see :mod:`sknw._criteria`). ``pairs``: the
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


def _check_bandwidth_grid(bandwidths, n_features):
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


class CVSelectionMixin:
    """Selects kernel and bandwidth by cross-validation, then fits (not public).

    Used by the ``*CV`` estimators: ``kernels``, ``bandwidths``, ``cv``,
    ``scoring`` and ``refine`` parameters; the resolved choice is stored as
    ``kernel_`` and ``bandwidth_``, then the estimator predicts like the plain
    one.
    """

    def __init__(
        self,
        *,
        kernels=("gaussian",),
        bandwidths=None,
        cv=None,
        scoring=None,
        refine=False,
        metric="euclidean",
        metric_params=None,
        empty_window="nearest",
        algorithm="auto",
        n_jobs=None,
        spans=None,
    ):
        self.kernels = kernels
        self.spans = spans
        self.bandwidths = bandwidths
        self.cv = cv
        self.scoring = scoring
        self.refine = refine
        self.metric = metric
        self.metric_params = metric_params
        self.empty_window = empty_window
        self.algorithm = algorithm
        self.n_jobs = n_jobs

    def _fit_regression(self, X, y, sample_weight, groups=None):
        """Validate, select kernel and bandwidth, then fit (the regressors)."""
        X = encode_features(self, X, reset=True)
        X, y = validate_regression_data(self, X, y)
        w = check_sample_weight(sample_weight, X.shape[0])
        groups = check_groups(groups, X.shape[0], self.cv)
        self._fit_span(w)
        self.metric_params_ = self._resolve_metric_params(X, w)
        Xs, ys, ws = self._search_rows(X, y, w)
        Ys = ys.reshape(ys.shape[0], -1)
        V, finish = self._cv_values(Xs, Ys, normalised_weights(ws)[0])
        self._select(
            Xs, V, ys, ws, "regression", finish=finish, groups=groups, targets=Ys
        )
        self.X_fit_, self.y_fit_, self.sample_weight_ = X, y, w
        self._resolve_algorithm(self._selected_scaling)
        self._fit_noise_variance()
        return self

    def _search_rows(self, X, y, w):
        """The rows the search scores: each distinct observation once for
        leave-one-out (:func:`~sknw._weights.distinct_rows`), all of them
        for K-fold, whose splits are of the rows."""
        return (X, y, w) if self.cv is not None else distinct_rows(X, y, w)

    def _select_on(self, X, y, w):
        """Select kernel and bandwidth on validated training data (targets,
        or a classifier's encoded labels), without fitting: the plain
        estimators' ``bandwidth="cv"``."""
        self._settings = FitSettings.of(self)
        if is_classifier(self):
            self.y_fit_ = y
            self._select(X, self._onehot(y), y, w, "classification", self.classes_)
            return self
        Y = y.reshape(y.shape[0], -1)
        V, finish = self._cv_values(X, Y, normalised_weights(w)[0])
        self._select(X, V, y, w, "regression", finish=finish, targets=Y)
        return self

    @property
    def _default_scoring_name(self):
        """The name of the default scoring of the search."""
        if is_classifier(self):
            return "neg_log_loss"
        return "neg_mean_squared_error"

    def _cv_values(self, X, Y, w):
        """The values whose weighted averages the selection needs, and the
        function ``finish(averages, cands, empty)`` from their averages (and
        the mask of empty windows) to out-of-sample estimates (None: the
        averages are the estimates, as for Nadaraya--Watson)."""
        return Y, None

    def _select(
        self,
        X,
        V,
        y_score,
        w,
        kind,
        classes=None,
        finish=None,
        groups=None,
        targets=None,
    ):
        """Score every candidate out of sample, store ``cv_results_`` and the
        best ``kernel_`` and ``bandwidth_`` (refined with ``refine``); the
        splitter takes the ``groups`` of fit. With discrete features the
        smoothing parameters are searched too (see :mod:`sknw._mixed`). The
        passes share a :class:`~sknw._grid.PassCache` (the local fits'
        ``targets``, the pair tables of the search's splits), dropped at its
        end; on the core's BLAS threads, as its sums (one by default, see
        :func:`sknw.set_config`; entered once, not once per pass)."""
        pairs = None if self._discrete is None else PairCache()
        cache = PassCache(targets=targets, pairs=pairs)
        with core_blas_threads():
            self._search(
                X,
                V,
                y_score,
                w,
                kind,
                classes=classes,
                finish=finish,
                groups=groups,
                cache=cache,
            )

    def _search(self, X, V, y_score, w, kind, *, classes, finish, groups, cache):
        kernels, resolved = self._candidate_kernels()
        discrete = self._discrete
        grid, lambdas = self._bandwidth_grid(X, w)
        folds = self._folds(X, y_score, w, kind, groups)
        w_n, unit = normalised_weights(w)
        owner = type(self).__name__
        criterion = check_in_sample(
            self.scoring, kind, self.cv, owner, self._self_weights
        )
        if criterion is None:
            scorer = make_scorer(self.scoring, kind, classes)
            check_scoring(
                scorer,
                self.scoring,
                kind,
                y_score,
                w_n,
                folds,
                classes=classes,
                owner=owner,
            )
        record(
            "search_start",
            kind=kind,
            n_samples=X.shape[0],
            n_folds=None if folds is None else len(folds),
            criterion=criterion,
        )
        # A search on a subsample polishes less (SUBSAMPLE_POLISH).
        state = SearchState(lambdas=lambdas, polish=getattr(self, "_polish", None))

        def scored(cands):
            """Out-of-sample scores and empty-window counts of candidates."""
            if criterion is not None:
                shares = np.full((len(cands), X.shape[0]), np.nan)
                fitted, n_empty = self._cv_estimates(
                    X, V, w_n, unit, cands, folds, finish, cache, shares=shares
                )
                record("estimates", candidates=cands, estimates=fitted, full=True)
                mean = in_sample_scores(fitted, shares, y_score, w_n, criterion)
                return (mean, None), n_empty
            preds, n_empty = self._cv_estimates(
                X, V, w_n, unit, cands, folds, finish, cache
            )
            record("estimates", candidates=cands, estimates=preds, full=False)
            return score_candidates(preds, y_score, w_n, folds, scorer), n_empty

        evaluate = self._score_memo(scored, X, w_n, folds, criterion, state)
        spans = candidate_spans(self)
        if spans is not None:
            cands = span_candidates(self, X, w, resolved, spans)
            (mean, splits), n_empty = evaluate(cands)
            self._store_choice(kernels, (cands, mean, splits, n_empty, len(spans)), X)
            return
        state.shape = self._shape_search(X, grid)
        searched = self._subsample_search(X, y_score, w, state, folds)
        rounds = SEARCH_ROUNDS
        if searched is not None:
            # From the subsample's shape and size, finer steps of the shape
            # on every point, then the grid about the size.
            state.shape, state.around = searched
            state.steps, state.shape_factors = 0, SUBSAMPLE_FACTORS
            rounds = SUBSAMPLE_ROUNDS.value
        found = self._grid_pass(evaluate, X, w, kernels, resolved, grid, state)
        if lambdas is not None or state.shape is not None:
            i = select(found[1])
            best = {**found[0][i], "score": float(found[1][i])}
            default = isinstance(grid, Integral)
            state.step = grid_step(found[0]) if default else None
            changed = searched is not None
            for _ in range(rounds):
                if not coordinate_search(evaluate, best, state, discrete):
                    break
                changed = True
            if searched is None:  # on every point (not after a subsample)
                changed |= polish(evaluate, best, state, discrete)
            if changed:  # the grid again, at the new shape and parameters
                state.around = best["multiplier"] if default else None
                state.centre = best  # scored: its score is known
                state.steps = (
                    WINDOW_STEPS if searched is None else SUBSAMPLE_WINDOW_STEPS
                )
                found = self._grid_pass(evaluate, X, w, kernels, resolved, grid, state)
        if state.edge is not None:  # of the last pass over the grid, once
            warn(state.edge, GridEdgeWarning)
        best = select(found[1])
        if criterion is None and self.scoring is None and folds is None:
            best = self._smoothest_choice(
                found,
                best,
                X=X,
                V=V,
                y_score=y_score,
                w_n=w_n,
                unit=unit,
                kind=kind,
                finish=finish,
                cache=cache,
            )
        self._store_choice(kernels, found, X, best)
        self._searched = (state.shape, found[0][self.best_index_]["multiplier"])
        if self.refine:
            self._refine(evaluate, found[0], self._continuous(X))
        elif isinstance(grid, Integral) and lambdas is None and state.shape is None:
            self._polish_size(evaluate, found, X)

    def _score_memo(self, scored, X, w, folds, criterion, state):
        """The :class:`ScoreMemo` of a search's ``scored``: each candidate
        scored once; those without smoothing parameters take the current
        ones (``state``); those the final fit could not bin score NaN
        (:func:`refused_candidates`, with the normalised weights ``w``)."""
        current = {"lambdas": lambda: tuple(state.lambdas)}
        return ScoreMemo(
            scored,
            None if self._discrete is None else current,
            refused=lambda cands: refused_candidates(self, X, w, cands),
            n_splits=None if folds is None or criterion is not None else len(folds),
        )

    def _polish_size(self, evaluate, found, X):
        """The size of the chosen bandwidth of a default grid (one scalar
        multiplier of the rule: no shape, no discrete features), polished by
        :func:`~sknw._refine.polish_size` between its grid neighbours; sets
        ``bandwidth_`` and ``best_score_`` where it scores strictly better
        (``best_index_`` stays the grid candidate it starts from)."""
        cands, mean, _, _, n_bw = found
        i = self.best_index_
        if not 0 < i % n_bw < n_bw - 1 or not np.all(np.isfinite(mean[i - 1 : i + 2])):
            return  # at a limit of the grid, or beside a candidate scoring NaN
        current = cands[i]

        def candidate(log):
            m = float(np.exp(log))
            return {**current, "multiplier": m, "bandwidth": current["rule"] * m}

        def score_of(log):
            return evaluate([candidate(log)])[0][0][0]

        logs = np.log([c["multiplier"] for c in cands[i - 1 : i + 2]])
        log, score = polish_size(score_of, logs, mean[i - 1 : i + 2])
        if score > self.best_score_:
            polished = candidate(log)
            self._store_off_grid(polished, score, self._continuous(X))
            self._searched = (None, polished["multiplier"])

    def _smoothest_choice(
        self, found, best, *, X, V, y_score, w_n, unit, kind, finish, cache
    ):
        """The leave-one-out choice among the local optima of the grid
        ``found`` (see :func:`~sknw._smoothest.smoothest_near_best`), the
        per-point losses computed for the candidates it asks for."""

        def point_losses(rows):
            cands = [found[0][i] for i in rows]
            preds, _ = self._cv_estimates(X, V, w_n, unit, cands, None, finish, cache)
            record("point_losses", candidates=cands, estimates=preds)
            return per_point_losses(preds, y_score, kind)

        mults = np.array([c["multiplier"] for c in found[0]])
        count = effective_sample_size(X.shape[0] if w_n is None else w_n)
        return smoothest_near_best(found[1], mults, best, point_losses, w_n, count)

    def _bandwidth_grid(self, X, w):
        """The grid (a number of multipliers, or the given bandwidths of the
        continuous features) and the starting smoothing parameters of the
        discrete features (None: given with each bandwidth, not searched)."""
        # The weights' effective sample size (see sknw._weights).
        n = effective_sample_size(X.shape[0] if w is None else w)
        if self.bandwidths is None or isinstance(self.bandwidths, Integral):
            grid = 30 if self.bandwidths is None else int(self.bandwidths)
        elif self._discrete is not None:
            return mixed_grid(self.bandwidths, self._discrete, X.shape[1], n)
        else:
            grid = _check_bandwidth_grid(self.bandwidths, X.shape[1])
        if self._discrete is None:
            return grid, None
        return grid, self._discrete.default_lambdas(n)

    def _subsample_search(self, X, y_score, w, state, folds):
        """The shape (per-feature factors) and the multiplier of the rule
        bandwidth that the search finds on a deterministic subsample of
        :data:`SEARCH_SUBSAMPLE` training points (of positive weight), or
        None where the search takes every point: no shape to search,
        discrete features, K-fold, or at most that many points.

        The shape and the multiplier are rates-free: the bandwidths that
        minimise the mean squared error shrink as ``n**(-1/(d + 4))`` in
        every feature, as the rule bandwidth does."""
        if state.shape is None or self._discrete is not None or folds is not None:
            return None
        positive = np.arange(X.shape[0]) if w is None else np.flatnonzero(w > 0)
        size = SEARCH_SUBSAMPLE.value
        if positive.size <= size:
            return None
        rows = subsample_rows(positive, size)
        sub = clone(self).set_params(refine=False)
        sub.metric_, sub.metric_params_ = self.metric_, self.metric_params_
        sub.n_features_in_, sub._discrete = self.n_features_in_, None
        sub._polish = SUBSAMPLE_POLISH
        if hasattr(self, "classes_"):
            sub.classes_ = self.classes_
        try:
            sub._select_on(X[rows], y_score[rows], None if w is None else w[rows])
        except ValueError:  # e.g. every candidate NaN there: every point
            return None
        return sub._searched

    def _shape_search(self, X, grid):
        """The per-feature factors of the default grid's shape that the
        coordinate search refines (ones), or None where it does not: a user
        grid, fewer than two or more than :data:`MAX_SHAPE_FEATURES`
        continuous features, or a metric whose rule gives one bandwidth."""
        n_cont = self._continuous(X).shape[1]
        if not isinstance(grid, Integral) or not 2 <= n_cont <= MAX_SHAPE_FEATURES:
            return None
        if self.metric not in COORDINATE_METRICS:
            return None
        return np.ones(n_cont)

    def _grid_pass(self, evaluate, X, w, kernels, resolved, grid, state=None):
        """``(cands, mean, splits, n_empty, n_bw)`` of the grid, the default
        one extended at its edges (its rule bandwidths times the per-feature
        ``state.shape``)."""
        Xc = self._continuous(X)
        state = SearchState() if state is None else state
        if not Xc.shape[1]:  # discrete features only: one continuous candidate
            grid = [
                {**g, "bandwidth": 1.0} if isinstance(g, dict) else 1.0
                for g in ([1.0] if isinstance(grid, Integral) else grid)
            ]
        if isinstance(grid, Integral):
            cands = candidate_grid(
                Xc, w, resolved, grid, self.metric, self.metric_params_
            )
            shape = state.shape
            if shape is not None:
                for cand in cands:
                    cand["bandwidth"] = cand["bandwidth"] * shape
                    cand["rule"] = cand["rule"] * shape
            if state.around is not None:
                cands = grid_window(cands, state.around, state.steps, state.centre)
        else:
            cands = [
                {"kernel": kernel, "multiplier": np.nan, **entry}
                for kernel in resolved
                for entry in (
                    g if isinstance(g, dict) else {"bandwidth": g} for g in grid
                )
            ]
        n_bw = len(cands) // len(kernels)
        (mean, splits), n_empty = evaluate(cands)
        if isinstance(grid, Integral):

            def scored(new):
                (m, s), e = evaluate(new)
                return m, s, e

            scores = (mean, splits, n_empty)
            cands, mean, splits, n_empty, state.edge = extend_at_edges(
                cands, len(kernels), scores, scored
            )
            n_bw = len(cands) // len(kernels)
        else:
            state.edge = edge_text(cands, mean, n_bw, type(self).__name__)
        return cands, mean, splits, n_empty, n_bw

    def _store_choice(self, kernels, found, X, best=None):
        """``cv_results_``, ``best_index_``, ``best_score_``, ``kernel_`` and
        ``bandwidth_`` of the scored grid ``found`` (its best candidate, or
        ``best``)."""
        cands, mean, splits, n_empty, n_bw = found
        best = select(mean) if best is None else best
        self.cv_results_ = cv_results(kernels, n_bw, cands, mean, splits, n_empty)
        self.best_index_ = best
        self.best_score_ = float(mean[best])
        self.kernel_ = cands[best]["kernel"]
        self.bandwidth_ = self._full_bandwidth(cands[best])
        self.span_ = cands[best].get("span")
        if self.span_ is not None:
            self.cv_results_["param_span"] = np.array([c["span"] for c in cands])
            for params, c in zip(self.cv_results_["params"], cands, strict=True):
                params["span"] = c["span"]
        if self._discrete is not None:
            full = [self._full_bandwidth(c) for c in cands]
            self.cv_results_["param_bandwidth"] = object_array(full)
            for params, bw in zip(self.cv_results_["params"], full, strict=True):
                params["bandwidth"] = bw
        # The fitted estimator divides the data as its candidate was scored.
        bandwidths = [c["bandwidth"] for c in cands]
        Xc = self._continuous(X)
        self._selected_scaling = scalings(bandwidths, self.metric, Xc)[best][1]

    def _full_bandwidth(self, cand):
        """A candidate's bandwidth as ``bandwidth_`` holds it (with the
        smoothing parameters of the discrete features)."""
        if self._discrete is None:
            return cand["bandwidth"]
        return self._discrete.join(cand["bandwidth"], cand["lambdas"])

    def _refine(self, evaluate, cands, Xc):
        """Refine the chosen continuous bandwidth (``refine=True``)."""
        best = self.best_index_
        current = cands[best]
        extra = {"lambdas": current["lambdas"]} if "lambdas" in current else {}

        def score_of(bandwidth):
            cand = {"kernel": self.kernel_, "bandwidth": bandwidth, **extra}
            return evaluate([cand])[0][0][0]

        same_kernel = [
            c["bandwidth"] for c in cands if c["kernel"] is current["kernel"]
        ]
        bandwidth, score = refine_bandwidth(
            score_of, current["bandwidth"], self.best_score_, same_kernel
        )
        if bandwidth is not current["bandwidth"]:
            self._store_off_grid({**current, "bandwidth": bandwidth}, score, Xc)

    def _store_off_grid(self, cand, score, Xc):
        """``bandwidth_`` and ``best_score_`` of a candidate scored beyond the
        grid (a polish or the refinement), with the feature scaling it was
        scored with (as a group of one)."""
        self._selected_scaling = scalings([cand["bandwidth"]], self.metric, Xc)[0][1]
        self.bandwidth_ = self._full_bandwidth(cand)
        self.best_score_ = float(score)

    #: Whether the leave-one-out estimates drop each point's own weight and
    #: renormalise, so that the self weights give the in-sample criteria
    #: (:mod:`sknw._criteria`).
    _self_weights = False

    def _cv_estimates(self, X, V, w, unit, cands, folds, finish, cache, shares=None):
        """Out-of-sample estimates of every candidate, ``(n_candidates, n,
        k)``, and their numbers of empty windows (see :func:`cv_predictions`,
        whose averages ``finish`` turns into estimates; ``cache`` the
        search's :class:`~sknw._grid.PassCache`). With ``shares``
        (leave-one-out, for the in-sample criteria), the fitted values of the
        fits to every point instead, and ``shares`` receives each point's
        self weight (see :mod:`sknw._criteria`). An ``algorithm`` the passes
        may not take (a backend of the estimator's other sums) leaves them
        to ``"auto"``."""
        accepted = self._pass_algorithms
        algorithm = self.algorithm if self.algorithm in accepted else "auto"
        groups = group_candidates(cands, self.metric, self._continuous(X))
        if self._discrete is not None:  # product kernels: the heads' factors
            groups = [
                (
                    scale,
                    [
                        (i, self._discrete.head(h, cands[i]["lambdas"]))
                        for i, h in members
                    ],
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
            metric=self.metric,
            metric_params=self.metric_params_,
            empty_window=self.empty_window,
            tile_elements=default_tile_elements(),
            n_jobs=self.n_jobs,
            unit=unit,
            algorithm=algorithm,
            accepted=accepted,
            shares=shares,
            pairs=cache.pairs,
            tolerance=getattr(self, "binned_tol", None),
        )
        if finish is not None:
            preds = finish(preds, cands, empties)
        elif shares is not None:  # the fits to every point (V: the targets)
            share = shares[:, :, None]
            preds = (1.0 - share) * preds + share * V[None]
        return preds, n_empty

    @property
    def _pass_algorithms(self):
        """The backends the cross-validation passes may take."""
        return self._algorithms

    def _candidate_kernels(self):
        """The ``kernels`` as given (a list) and resolved, each checked
        against an explicit ``algorithm`` before the search."""
        kernels = self.kernels
        if isinstance(kernels, (str, Kernel)):
            kernels = [kernels]
        kernels = list(kernels)
        if not kernels:
            raise ValueError("kernels is empty: give at least one kernel.")
        resolved = [self._check_kernel(get_kernel(k)) for k in kernels]
        if self.algorithm != "auto":
            for kernel in resolved:
                self._check_algorithm(kernel)
        return kernels, resolved

    def _folds(self, X, y_score, w, kind, groups=None):
        """None for leave-one-out, else the (train, test) splits of ``cv``
        (given the ``groups`` of fit)."""
        if self.cv is None:
            n_positive = int(np.sum(w > 0)) if w is not None else X.shape[0]
            if n_positive < 2:
                raise ValueError(
                    "Leave-one-out cross-validation needs at least 2 samples "
                    f"with positive weight; got {n_positive} sample."
                )
            return None
        splitter = check_cv(self.cv, y_score, classifier=kind == "classification")
        folds = [
            (np.asarray(train, dtype=np.intp), np.asarray(test, dtype=np.intp))
            for train, test in splitter.split(X, y_score, groups)
        ]
        if w is not None:
            for f, (_, test) in enumerate(folds):
                if not np.any(w[test] > 0):
                    raise ValueError(
                        f"Fold {f} of cv holds only samples of weight 0, so "
                        "it cannot be scored; use other folds or weights."
                    )
        return folds


#: The default grid's shape (the ratios of the per-feature bandwidths) is
#: searched with at most this many continuous features. Measured out of
#: sample: with 2 and 3 features the search lowers the error against the true
#: function (by 13-58 % on an anisotropic function, about 5x with an
#: irrelevant feature) and never raised it; with the 10 features of the
#: diabetes data it overfits the leave-one-out score (5-fold R^2 0.444 ->
#: 0.422).
MAX_SHAPE_FEATURES = 3

#: With more training points (of positive weight) than this, exact
#: leave-one-out searches the shape (and the size) on a deterministic
#: subsample of this many, then scores the grid about the size it found on
#: every point (:meth:`CVSelectionMixin._subsample_search`). Over five
#: functions of two or three features at 8000 points, subsamples of 2000
#: gave an error against the true function 2 % lower than the search on
#: every point on average (4000: 1 %), in 0.28 times its time (4000: 0.55).
SEARCH_SUBSAMPLE = Tunable(2000)

#: Rounds of the coordinate search on every point after the search on a
#: subsample.
SUBSAMPLE_ROUNDS = Tunable(1)

#: ... with these factors of each feature's bandwidth.
SUBSAMPLE_FACTORS = (2**-0.5, 2**0.5)

#: ... then the grid is scored this many steps on either side of the size
#: (extended where its best is at an edge).
SUBSAMPLE_WINDOW_STEPS = 2

#: The polish of the search on a subsample: rounds and tolerance of each
#: bandwidth's logarithm (1 %; on every point, 3 rounds to 0.01 %). Its
#: result seeds the search on every point, and the optimum of a subsample is
#: an estimate of that one far coarser than 0.01 %. Over four functions of
#: two and three features (8000 points, 4 replicates; 20000 points, 2), the
#: error against the true function changed by -4 % to +6 % per function
#: and by -1 % to +1 % in all, in 0.7 to 0.9 times the time.
SUBSAMPLE_POLISH = (1, 1e-2)
