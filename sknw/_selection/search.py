"""The search of kernel and bandwidth: one function, :func:`search`, over a
:class:`SearchProblem`, returning a :class:`SearchResult`.

The ``*CV`` estimators and the plain estimators' ``bandwidth="cv"`` (see
:mod:`sknw._selection.default`) build a problem and call the same function;
nothing of the search stays on the estimator but the result it stores. The
problem's ``passes`` compute the out-of-sample estimates of candidates
(:class:`~sknw._selection.passes.KernelPasses` for Nadaraya--Watson,
:class:`~sknw._local.passes.LocalPasses` for the local fits); the search
scores them over the grid, extends it at its edges, searches the shape and
the discrete features' smoothing parameters, polishes and refines.
"""

from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from numbers import Integral

import numpy as np
from sklearn.model_selection import check_cv

from .._bandwidth.rules import COORDINATE_METRICS
from .._bandwidth.scaling import scaling_of, scalings
from .._bandwidth.span import candidate_spans, span_bandwidth, span_shape
from .._sums import PairCache, check
from .._sums._parallel import core_blas_threads
from .._trace import Tunable, record
from ..exceptions import GridEdgeWarning, warn
from ..kernels import Kernel, get_kernel
from .candidate import Candidate
from .coordinate import (
    SEARCH_ROUNDS,
    SearchState,
    coordinate_search,
    mixed_grid,
    polish,
)
from .criteria import check_in_sample, in_sample_scores
from .grid import (
    WINDOW_STEPS,
    PassCache,
    ScoreMemo,
    candidate_grid,
    edge_text,
    extend_at_edges,
    grid_step,
    grid_window,
    refused_candidates,
)
from .passes import check_bandwidth_grid, normalised_weights, score_candidates, select
from .refine import polish_size, refine_bandwidth
from .scoring import check_scoring, cv_results, make_scorer, object_array
from .smoothest import per_point_losses, smoothest_near_best
from .weights import effective_sample_size, subsample_rows

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
#: every point (:func:`_subsample_search`). Over five functions of two or
#: three features at 8000 points, subsamples of 2000 gave an error against
#: the true function 2 % lower than the search on every point on average
#: (4000: 1 %), in 0.28 times its time (4000: 0.55).
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


def _as_given(kernel):
    """A kernel as given: the estimators that take every kernel."""
    return kernel


@dataclass(frozen=True, kw_only=True)
class SearchChoices:
    """What a search chooses among, as the ``*CV`` estimators take it:
    ``kernels``, ``bandwidths`` (None: the default grid), ``spans``, ``cv``
    (None: leave-one-out), ``scoring`` and ``refine``. The defaults are
    those of ``bandwidth="cv"``, with the estimator's kernel."""

    kernels: object = ("gaussian",)
    bandwidths: object = None
    spans: object = None
    cv: object = None
    scoring: object = None
    refine: bool = False

    @classmethod
    def of(cls, params):
        """The choices of an estimator's parameters ``params``."""
        return cls(**{f.name: params[f.name] for f in fields(cls)})


@dataclass(frozen=True, kw_only=True)
class SearchProblem:
    """What a search selects over.

    The data: ``X`` the encoded, validated training inputs; ``values`` the
    targets as rows (a classifier's one-hot labels); ``y_score`` what the
    scores compare with (a classifier's encoded labels); ``w`` the sample
    weights (None: none); ``kind`` ``"regression"`` or
    ``"classification"``, ``classes`` a classifier's; ``groups`` those of
    the splitter.

    The ``choices`` (:class:`SearchChoices`).

    How candidates are scored: ``passes``, whose ``smoothing``
    (:class:`~sknw._selection.passes.Smoothing`) the search reads too;
    ``check_kernel``, the estimator's check of a kernel it can take;
    ``owner``, the estimator's name in messages; ``polish``, ``(rounds, log
    tolerance)`` of a lighter polish (None: the full one)."""

    X: np.ndarray
    values: np.ndarray
    y_score: np.ndarray
    w: np.ndarray | None
    kind: str
    classes: np.ndarray | None = None
    groups: np.ndarray | None = None
    choices: SearchChoices
    passes: object
    check_kernel: Callable = _as_given
    owner: str
    polish: tuple | None = None

    @property
    def smoothing(self):
        """The :class:`~sknw._selection.passes.Smoothing` of the passes."""
        return self.passes.smoothing

    def subset(self, rows, polish=None):
        """The problem on the training points ``rows`` (without ``groups``),
        with ``polish``."""
        return replace(
            self,
            X=self.X[rows],
            values=self.values[rows],
            y_score=self.y_score[rows],
            w=None if self.w is None else self.w[rows],
            groups=None,
            polish=polish,
        )


@dataclass(kw_only=True)
class SearchResult:
    """What a search chose: ``cv_results`` (scikit-learn's keys, see
    :func:`~sknw._selection.scoring.cv_results`), the best candidate's index and
    score, its ``kernel``, ``bandwidth`` (as ``bandwidth_`` holds it) and
    ``span`` (None: a bandwidth), the ``scaling`` of the features it was
    scored with (which the fitted estimator divides the data by), and the
    default grid's ``shape`` (per-feature factors, None: none searched) and
    ``multiplier`` of the rule bandwidth that it found."""

    cv_results: dict
    best_index: int
    best_score: float
    kernel: Kernel
    bandwidth: object
    span: float | None
    scaling: object
    shape: np.ndarray | None = None
    multiplier: float = np.nan


def default_scoring_name(kind):
    """The name of a search's default scoring."""
    return "neg_log_loss" if kind == "classification" else "neg_mean_squared_error"


def search(problem):
    """Score every candidate of ``problem`` out of sample and return the
    best as a :class:`SearchResult` (refined with ``refine``); the splitter
    takes the problem's ``groups``. With discrete features the smoothing
    parameters are searched too (see :mod:`sknw._features.mixed`). The passes share a
    :class:`~sknw._selection.grid.PassCache` (the local fits' targets, the pair tables
    of the search's splits), dropped at its end; on the core's BLAS
    threads, as its sums (one by default, see :func:`sknw.set_config`;
    entered once, not once per pass). Each search is recorded at its end
    (``searched``: the ``n_samples`` scored, the ``shape`` and
    ``multiplier`` found)."""
    pairs = None if problem.smoothing.discrete is None else PairCache()
    cache = PassCache(targets=problem.values, pairs=pairs)
    with core_blas_threads():
        result = _search(problem, cache)
    record(
        "searched",
        n_samples=problem.X.shape[0],
        shape=result.shape,
        multiplier=result.multiplier,
    )
    return result


def _search(problem, cache):
    X, w = problem.X, problem.w
    discrete = problem.smoothing.discrete
    kernels, resolved = _candidate_kernels(problem)
    grid, lambdas = _bandwidth_grid(problem)
    folds = _folds(problem)
    # A search on a subsample polishes less (SUBSAMPLE_POLISH).
    state = SearchState(lambdas=lambdas, polish=problem.polish)
    scoring = _Scoring(problem, cache, folds, state)
    evaluate = scoring.evaluate
    spans = candidate_spans(
        problem.choices.spans,
        bandwidths=problem.choices.bandwidths,
        refine=problem.choices.refine,
        discrete=discrete,
    )
    if spans is not None:
        cands = span_candidates(problem.smoothing, X, w, resolved, spans)
        (mean, splits), n_empty = evaluate(cands)
        found = (cands, mean, splits, n_empty, len(spans))
        return _chosen(problem, kernels, found)
    state.shape = _shape_search(problem, grid)
    searched = _subsample_search(problem, state, folds)
    rounds = SEARCH_ROUNDS
    if searched is not None:
        # From the subsample's shape and size, finer steps of the shape
        # on every point, then the grid about the size.
        state.shape, state.around = searched.shape, searched.multiplier
        state.steps, state.shape_factors = 0, SUBSAMPLE_FACTORS
        rounds = SUBSAMPLE_ROUNDS.value
    found = _grid_pass(problem, evaluate, kernels, resolved, grid, state)
    if lambdas is not None or state.shape is not None:
        i = select(found[1])
        best = replace(found[0][i], score=float(found[1][i]))
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
            state.around = best.multiplier if default else None
            state.centre = best  # scored: its score is known
            state.steps = WINDOW_STEPS if searched is None else SUBSAMPLE_WINDOW_STEPS
            found = _grid_pass(problem, evaluate, kernels, resolved, grid, state)
    if state.edge is not None:  # of the last pass over the grid, once
        warn(state.edge, GridEdgeWarning)
    best = select(found[1])
    if scoring.criterion is None and problem.choices.scoring is None and folds is None:
        best = scoring.smoothest(found, best)
    result = _chosen(problem, kernels, found, best)
    result.shape = state.shape
    result.multiplier = found[0][result.best_index].multiplier
    if problem.choices.refine:
        _refine(problem, evaluate, found[0], result)
    elif isinstance(grid, Integral) and lambdas is None and state.shape is None:
        _polish_size(problem, evaluate, found, result)
    return result


class _Scoring:
    """How one search scores its candidates: ``evaluate`` (a
    :class:`~sknw._selection.grid.ScoreMemo`) gives their out-of-sample scores, by
    the problem's scoring or in-sample ``criterion`` (None: a scorer), from
    the estimates of its passes on the ``folds`` (None: leave-one-out)."""

    def __init__(self, problem, cache, folds, state):
        X, y_score, kind = problem.X, problem.y_score, problem.kind
        passes = problem.passes
        self.problem, self.cache, self.folds = problem, cache, folds
        self.w, self.unit = normalised_weights(problem.w)
        self.V, self.finish = passes.values(X, problem.values, self.w)
        choices = problem.choices
        self.criterion = check_in_sample(
            choices.scoring, kind, choices.cv, problem.owner, passes.self_weights
        )
        self.scorer = None
        if self.criterion is None:
            self.scorer = make_scorer(problem.choices.scoring, kind, problem.classes)
            check_scoring(
                self.scorer,
                problem.choices.scoring,
                kind,
                y_score,
                self.w,
                folds,
                classes=problem.classes,
                owner=problem.owner,
            )
        record(
            "search_start",
            kind=kind,
            n_samples=X.shape[0],
            n_folds=None if folds is None else len(folds),
            criterion=self.criterion,
        )
        discrete = problem.smoothing.discrete
        n_splits = len(folds) if folds is not None and self.criterion is None else None
        self.evaluate = ScoreMemo(
            self.scored,
            None if discrete is None else {"lambdas": lambda: tuple(state.lambdas)},
            refused=lambda cands: refused_candidates(passes, X, self.w, cands),
            n_splits=n_splits,
        )

    def estimates(self, cands, folds, shares=None):
        """The passes' out-of-sample estimates of ``cands`` and their numbers
        of empty windows (see
        :meth:`~sknw._selection.passes.KernelPasses.estimates`)."""
        return self.problem.passes.estimates(
            self.problem.X,
            self.V,
            self.w,
            cands,
            unit=self.unit,
            folds=folds,
            finish=self.finish,
            cache=self.cache,
            shares=shares,
        )

    def scored(self, cands):
        """Out-of-sample scores and empty-window counts of candidates."""
        y_score, folds = self.problem.y_score, self.folds
        if self.criterion is not None:
            shares = np.full((len(cands), y_score.shape[0]), np.nan)
            fitted, n_empty = self.estimates(cands, folds, shares=shares)
            record("estimates", candidates=cands, estimates=fitted, full=True)
            mean = in_sample_scores(fitted, shares, y_score, self.w, self.criterion)
            return (mean, None), n_empty
        preds, n_empty = self.estimates(cands, folds)
        record("estimates", candidates=cands, estimates=preds, full=False)
        return score_candidates(preds, y_score, self.w, folds, self.scorer), n_empty

    def smoothest(self, found, best):
        """The leave-one-out choice among the local optima of the grid
        ``found`` (see :func:`~sknw._selection.smoothest.smoothest_near_best`), the
        per-point losses computed for the candidates it asks for."""

        def point_losses(rows):
            cands = [found[0][i] for i in rows]
            preds, _ = self.estimates(cands, None)
            record("point_losses", candidates=cands, estimates=preds)
            return per_point_losses(preds, self.problem.y_score, self.problem.kind)

        w, n = self.w, self.problem.X.shape[0]
        mults = np.array([c.multiplier for c in found[0]])
        count = effective_sample_size(n if w is None else w)
        return smoothest_near_best(found[1], mults, best, point_losses, w, count)


def _candidate_kernels(problem):
    """The ``kernels`` as given (a list) and resolved, each checked against
    an explicit ``algorithm`` before the search."""
    kernels = problem.choices.kernels
    if isinstance(kernels, (str, Kernel)):
        kernels = [kernels]
    kernels = list(kernels)
    if not kernels:
        raise ValueError("kernels is empty: give at least one kernel.")
    resolved = [problem.check_kernel(get_kernel(k)) for k in kernels]
    smoothing = problem.smoothing
    if smoothing.algorithm != "auto":
        d = smoothing.continuous(problem.X).shape[1]
        for kernel in resolved:
            check(
                smoothing.algorithm,
                kernel,
                smoothing.metric,
                smoothing.metric_params,
                d,
            )
    return kernels, resolved


def _bandwidth_grid(problem):
    """The grid (a number of multipliers, or the given bandwidths of the
    continuous features) and the starting smoothing parameters of the
    discrete features (None: given with each bandwidth, not searched)."""
    X, w, bandwidths = problem.X, problem.w, problem.choices.bandwidths
    discrete = problem.smoothing.discrete
    # The weights' effective sample size (see sknw._selection.weights).
    n = effective_sample_size(X.shape[0] if w is None else w)
    if bandwidths is None or isinstance(bandwidths, Integral):
        grid = 30 if bandwidths is None else int(bandwidths)
    elif discrete is not None:
        return mixed_grid(bandwidths, discrete, X.shape[1], n)
    else:
        grid = check_bandwidth_grid(bandwidths, X.shape[1])
    if discrete is None:
        return grid, None
    return grid, discrete.default_lambdas(n)


def _folds(problem):
    """None for leave-one-out, else the (train, test) splits of ``cv``
    (given the ``groups``)."""
    X, y_score, w = problem.X, problem.y_score, problem.w
    if problem.choices.cv is None:
        n_positive = int(np.sum(w > 0)) if w is not None else X.shape[0]
        if n_positive < 2:
            raise ValueError(
                "Leave-one-out cross-validation needs at least 2 samples "
                f"with positive weight; got {n_positive} sample."
            )
        return None
    classifier = problem.kind == "classification"
    splitter = check_cv(problem.choices.cv, y_score, classifier=classifier)
    folds = [
        (np.asarray(train, dtype=np.intp), np.asarray(test, dtype=np.intp))
        for train, test in splitter.split(X, y_score, problem.groups)
    ]
    if w is not None:
        for f, (_, test) in enumerate(folds):
            if not np.any(w[test] > 0):
                raise ValueError(
                    f"Fold {f} of cv holds only samples of weight 0, so "
                    "it cannot be scored; use other folds or weights."
                )
    return folds


def _shape_search(problem, grid):
    """The per-feature factors of the default grid's shape that the
    coordinate search refines (ones), or None where it does not: a user
    grid, fewer than two or more than :data:`MAX_SHAPE_FEATURES` continuous
    features, or a metric whose rule gives one bandwidth."""
    n_cont = problem.smoothing.continuous(problem.X).shape[1]
    if not isinstance(grid, Integral) or not 2 <= n_cont <= MAX_SHAPE_FEATURES:
        return None
    if problem.smoothing.metric not in COORDINATE_METRICS:
        return None
    return np.ones(n_cont)


def _subsample_search(problem, state, folds):
    """The :class:`SearchResult` of the search on a deterministic subsample
    of :data:`SEARCH_SUBSAMPLE` training points (of positive weight), whose
    shape (per-feature factors) and multiplier of the rule bandwidth seed
    the search on every point; None where the search takes every point: no
    shape to search, discrete features, K-fold, or at most that many
    points.

    The shape and the multiplier are rates-free: the bandwidths that
    minimise the mean squared error shrink as ``n**(-1/(d + 4))`` in
    every feature, as the rule bandwidth does."""
    discrete = problem.smoothing.discrete
    if state.shape is None or discrete is not None or folds is not None:
        return None
    X, w = problem.X, problem.w
    positive = np.arange(X.shape[0]) if w is None else np.flatnonzero(w > 0)
    size = SEARCH_SUBSAMPLE.value
    if positive.size <= size:
        return None
    rows = subsample_rows(positive, size)
    sub = problem.subset(rows, polish=SUBSAMPLE_POLISH)
    sub = replace(sub, choices=replace(problem.choices, refine=False))
    try:
        return search(sub)
    except ValueError:  # e.g. every candidate NaN there: every point
        return None


def _grid_pass(problem, evaluate, kernels, resolved, grid, state):
    """``(cands, mean, splits, n_empty, n_bw)`` of the grid, the default
    one extended at its edges (its rule bandwidths times the per-feature
    ``state.shape``)."""
    smoothing, w = problem.smoothing, problem.w
    Xc = smoothing.continuous(problem.X)
    if not Xc.shape[1]:  # discrete features only: one continuous candidate
        grid = [
            {**g, "bandwidth": 1.0} if isinstance(g, dict) else 1.0
            for g in ([1.0] if isinstance(grid, Integral) else grid)
        ]
    if isinstance(grid, Integral):
        cands = candidate_grid(
            Xc, w, resolved, grid, smoothing.metric, smoothing.metric_params
        )
        shape = state.shape
        if shape is not None:
            for cand in cands:
                cand.bandwidth = cand.bandwidth * shape
                cand.rule = cand.rule * shape
        if state.around is not None:
            cands = grid_window(cands, state.around, state.steps, state.centre)
    else:
        cands = [
            Candidate(kernel=kernel, **entry)
            for kernel in resolved
            for entry in (g if isinstance(g, dict) else {"bandwidth": g} for g in grid)
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
        state.edge = edge_text(cands, mean, n_bw, problem.owner)
    return cands, mean, splits, n_empty, n_bw


def _chosen(problem, kernels, found, best=None):
    """The :class:`SearchResult` of the scored grid ``found`` (its best
    candidate, or ``best``)."""
    smoothing = problem.smoothing
    cands, mean, splits, n_empty, n_bw = found
    best = select(mean) if best is None else best
    results = cv_results(kernels, n_bw, cands, mean, splits, n_empty)
    span = cands[best].span
    if span is not None:
        results["param_span"] = np.array([c.span for c in cands])
        for params, c in zip(results["params"], cands, strict=True):
            params["span"] = c.span
    if smoothing.discrete is not None:
        full = [smoothing.full_bandwidth(c) for c in cands]
        results["param_bandwidth"] = object_array(full)
        for params, bw in zip(results["params"], full, strict=True):
            params["bandwidth"] = bw
    # The fitted estimator divides the data as its candidate was scored.
    bandwidths = [c.bandwidth for c in cands]
    Xc = smoothing.continuous(problem.X)
    return SearchResult(
        cv_results=results,
        best_index=best,
        best_score=float(mean[best]),
        kernel=cands[best].kernel,
        bandwidth=smoothing.full_bandwidth(cands[best]),
        span=span,
        scaling=scalings(bandwidths, smoothing.metric, Xc)[best][1],
    )


def _off_grid(problem, result, cand, score):
    """Set ``result``'s bandwidth and score to those of a candidate scored
    beyond the grid (a polish or the refinement), with the feature scaling
    it was scored with (as a group of one)."""
    smoothing = problem.smoothing
    Xc = smoothing.continuous(problem.X)
    result.scaling = scalings([cand.bandwidth], smoothing.metric, Xc)[0][1]
    result.bandwidth = smoothing.full_bandwidth(cand)
    result.best_score = float(score)


def _polish_size(problem, evaluate, found, result):
    """The size of the chosen bandwidth of a default grid (one scalar
    multiplier of the rule: no shape, no discrete features), polished by
    :func:`~sknw._selection.refine.polish_size` between its grid neighbours; taken
    where it scores strictly better (``best_index`` stays the grid
    candidate it starts from)."""
    cands, mean, _, _, n_bw = found
    i = result.best_index
    if not 0 < i % n_bw < n_bw - 1 or not np.all(np.isfinite(mean[i - 1 : i + 2])):
        return  # at a limit of the grid, or beside a candidate scoring NaN
    current = cands[i]

    def candidate(log):
        m = float(np.exp(log))
        return replace(current, multiplier=m, bandwidth=current.rule * m)

    def score_of(log):
        return evaluate([candidate(log)])[0][0][0]

    logs = np.log([c.multiplier for c in cands[i - 1 : i + 2]])
    log, score = polish_size(score_of, logs, mean[i - 1 : i + 2])
    if score > result.best_score:
        polished = candidate(log)
        _off_grid(problem, result, polished, score)
        result.shape, result.multiplier = None, polished.multiplier


def _refine(problem, evaluate, cands, result):
    """Refine the chosen continuous bandwidth (``refine=True``)."""
    current = cands[result.best_index]

    def score_of(bandwidth):
        cand = Candidate(
            kernel=result.kernel, bandwidth=bandwidth, lambdas=current.lambdas
        )
        return evaluate([cand])[0][0][0]

    same_kernel = [c.bandwidth for c in cands if c.kernel is current.kernel]
    bandwidth, score = refine_bandwidth(
        score_of, current.bandwidth, result.best_score, same_kernel
    )
    if bandwidth is not current.bandwidth:
        _off_grid(problem, result, replace(current, bandwidth=bandwidth), score)


def span_candidates(smoothing, X, w, kernels, spans):
    """The candidates of every kernel and span, each with the bandwidth
    ``bandwidth_`` reports for it (:func:`span_bandwidth`, of Scott's
    shape), with the search's ``smoothing`` (its metric)."""
    metric, params = smoothing.metric, smoothing.metric_params
    shape = span_shape("scott", X, w, kernels[0], metric, params)
    scaling = scaling_of(shape, metric, X)
    sizes = [
        span_bandwidth(
            shape,
            s,
            X,
            w,
            metric=metric,
            metric_params=params,
            scaling=scaling,
        )
        for s in spans
    ]
    return [
        Candidate(kernel=kernel, span=s, bandwidth=bw)
        for kernel in kernels
        for s, bw in zip(spans, sizes, strict=True)
    ]
