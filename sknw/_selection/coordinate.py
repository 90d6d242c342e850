"""The coordinate search over the per-feature bandwidths and the discrete
features' smoothing parameters that a search runs after its grid, and the
polish that follows (see :mod:`sknw._features.types.mixed` for what the smoothing
parameters are)."""

from dataclasses import dataclass

import numpy as np

from .._trace import Tunable, record
from .._validation import check_bandwidth
from .candidate import Candidate
from .refine import parabolic_steps

#: Rounds of the coordinate search after the grid (each followed by the
#: grid again, at the new shape and smoothing parameters; the search stops
#: early where a round changes nothing).
SEARCH_ROUNDS = 3

#: The smoothing parameters a search tries, as shares of each kernel's
#: largest (0: only matching levels count; 1: the feature is smoothed out,
#: for the unordered kernels).
LAMBDA_SHARES = (0.0, 0.01, 0.03, 0.1, 0.2, 0.35, 0.5, 0.7, 0.85, 1.0)

#: The factors a search tries on each continuous feature's bandwidth (with
#: several continuous features): a coarse grid, so that the shape it finds
#: is one of few and does not overfit the leave-one-out score.
SHAPE_FACTORS = (0.5, 2**-0.5, 2**0.5, 2.0)

#: The tolerance of :func:`polish_lambdas`, relative to each smoothing
#: parameter's range (0.001 %).
POLISH_TOLERANCE = 1e-5

#: :func:`polish_bandwidths` searches each bandwidth within this factor of
#: its value (one step of the coordinate search's finer factors) ...
POLISH_FACTOR = 2**0.5

#: ... to this tolerance of its logarithm (0.01 %; with smoothing parameters
#: searched, :data:`MIXED_LOG_TOLERANCE`).
POLISH_LOG_TOLERANCE = 1e-4

#: The tolerance of each bandwidth's logarithm where smoothing parameters
#: are searched too (0.001 %): they interact with the bandwidths, and the
#: polish reaches their joint optimum in more, finer rounds.
MIXED_LOG_TOLERANCE = 1e-5

#: Rounds of :func:`polish` (0: no polish) ...
POLISH_ROUNDS = Tunable(3)

#: ... and where smoothing parameters are searched.
MIXED_ROUNDS = Tunable(5)


@dataclass
class SearchState:
    """What a search carries from one pass over the grid to the next.

    ``lambdas``: the discrete features' smoothing parameters (None: no
    discrete feature); ``polish``: ``(rounds, log tolerance)`` of the polish
    on a subsample (None: the full polish); ``shape``: per-feature factors
    of the default grid's shape (None: none searched); ``shape_factors``:
    the coordinate search's steps of the shape; ``step``: the default grid's
    ratio (None: a user grid); ``around``, ``steps`` and ``centre``: a pass
    over a window of ``steps`` grid steps about the multiplier ``around``,
    whose candidate ``centre`` is scored already (None: the whole grid);
    ``edge``: the grid-edge warning of the last pass (None: none), given
    once at the search's end."""

    lambdas: tuple = None
    polish: tuple = None
    shape: np.ndarray = None
    shape_factors: tuple = SHAPE_FACTORS
    step: float = None
    around: float = None
    steps: int = None
    centre: dict = None
    edge: str = None


def coordinate_search(evaluate, cand, state, discrete):
    """One round of coordinate search from the candidate ``cand`` (its
    kernel, ``bandwidth`` and ``score``, updated in place):

    - the size: the bandwidth times one or two steps of the default grid
      (``state.step``, None for a user grid), up or down;
    - where ``state.shape`` (per-feature factors of the grid's shape) is
      not None, each continuous feature's bandwidth in turn times the best
      of :data:`SHAPE_FACTORS`;
    - each discrete feature's smoothing parameter (``state.lambdas``) the
      best of :data:`LAMBDA_SHARES` of its range, then of eight shares
      between that one's neighbours.

    Each step keeps the current value unless a trial scores strictly better
    (the others fixed). ``evaluate(cands)`` scores candidates as the CV
    search does. Updates ``state`` and returns whether anything changed.
    """
    search = _Search(evaluate, cand, state, discrete)
    if state.step is not None:
        powers = (-2, -1, 1, 2)
        i = search.try_bandwidths([search.bandwidth * state.step**e for e in powers])
        if i is not None:
            cand.multiplier = cand.multiplier * state.step ** powers[i]
    if state.shape is not None:
        for j in range(search.bandwidth.size):
            trials = []
            factors = state.shape_factors
            for f in factors:
                trial = search.bandwidth.copy()
                trial[j] *= f
                trials.append(trial)
            i = search.try_bandwidths(trials)
            if i is not None:
                state.shape[j] *= factors[i]
    if discrete is not None and state.lambdas is not None:
        tops = discrete.max_lambdas()
        for j in range(len(state.lambdas)):
            shares = np.asarray(LAMBDA_SHARES)
            for _ in range(2):  # the shares, then a finer grid about the best
                search.try_lambdas(j, tops[j] * shares)
                shares = _finer(shares, search.lambdas[j] / tops[j])
        state.lambdas = search.lambdas
    cand.bandwidth, cand.score = search.bandwidth, search.score
    return search.changed


def polish_lambdas(evaluate, cand, state, discrete):
    """Each discrete feature's smoothing parameter in turn (the others and the
    bandwidths fixed) by :func:`bracket_search` within one step of the finer
    grid of :func:`coordinate_search` on either side of its value, to
    :data:`POLISH_TOLERANCE` of its range; keeps the current value unless a
    trial scores strictly better. Updates ``cand`` and ``state`` as
    :func:`coordinate_search` does and returns whether anything changed."""
    if discrete is None or state.lambdas is None:
        return False
    search = _Search(evaluate, cand, state, discrete)
    tops = discrete.max_lambdas()
    shares = np.asarray(LAMBDA_SHARES)
    for j, top in enumerate(tops):
        if not top > 0.0:  # one level: nothing to smooth
            continue
        current = float(search.lambdas[j])
        i = int(np.argmin(np.abs(shares - current / top)))
        lo, hi = shares[max(i - 1, 0)], shares[min(i + 1, shares.size - 1)]
        step = (hi - lo) / 9 * top

        def scores(values, j=j):
            trials = []
            for value in values:
                trial = search.lambdas.copy()
                trial[j] = value
                trials.append(search._cand(search.bandwidth, trial))
            return evaluate(trials)[0][0]

        bounds = (max(0.0, current - step), min(float(top), current + step))
        if not bounds[1] > bounds[0]:
            continue
        value, score = bracket_search(
            scores, current, search.score, bounds, POLISH_TOLERANCE * top
        )
        if score > search.score:
            search.lambdas[j], search.score, search.changed = value, score, True
    state.lambdas = search.lambdas
    cand.score = search.score
    return search.changed


def polish(evaluate, cand, state, discrete):
    """Up to :data:`POLISH_ROUNDS` (:data:`MIXED_ROUNDS` with smoothing
    parameters searched; ``state.polish``, ``(rounds, log tolerance)``,
    where given) rounds of :func:`polish_bandwidths` then
    :func:`polish_lambdas` (parameters that interact converge in turns),
    while the round's last polish moves something (the smoothing parameters
    where they are searched: bandwidths just polished for unchanged ones
    need no second round); returns whether anything changed."""
    changed = False
    lambdas = discrete is not None and state.lambdas is not None
    rounds = MIXED_ROUNDS.value if lambdas else POLISH_ROUNDS.value
    if state.polish is not None:
        rounds = state.polish[0]
    record("polish", rounds=rounds, subsample=state.polish, mixed=lambdas)
    for _ in range(rounds):
        moved_bandwidths = polish_bandwidths(evaluate, cand, state, discrete)
        moved_lambdas = polish_lambdas(evaluate, cand, state, discrete)
        changed |= moved_bandwidths or moved_lambdas
        if not (moved_lambdas if lambdas else moved_bandwidths):
            break
    return changed


def polish_bandwidths(evaluate, cand, state, discrete):
    """With the default grid, where the shape or discrete features' smoothing
    parameters are searched, each continuous feature's bandwidth in turn
    (the size where the shape is not searched; the others and the smoothing
    parameters fixed) by :func:`bracket_search` over its logarithm, within
    one finer step of the coordinate search on either side (the factors of
    :data:`POLISH_FACTOR`), to :data:`POLISH_LOG_TOLERANCE`
    (:data:`MIXED_LOG_TOLERANCE` with smoothing parameters searched); keeps the
    current value unless a trial scores strictly better. Updates ``cand``
    and ``state`` as :func:`coordinate_search` does and returns whether
    anything changed."""
    shape = state.shape is not None
    if not shape and (discrete is None or state.lambdas is None):
        return False  # nothing searched beyond the size of the grid
    if state.step is None:
        return False  # a user grid of bandwidths is scored as given
    search = _Search(evaluate, cand, state, discrete)
    start = np.atleast_1d(search.bandwidth).astype(np.float64)
    current = start.copy()
    span = float(np.log(POLISH_FACTOR))
    mixed = discrete is not None and state.lambdas is not None
    tolerance = MIXED_LOG_TOLERANCE if mixed else POLISH_LOG_TOLERANCE
    if state.polish is not None:
        tolerance = state.polish[1]
    for j in range(current.size):

        def scores(log_factors, j=j):
            trials = []
            for log_factor in log_factors:
                trial = current.copy()
                trial[j] *= np.exp(log_factor)
                bw = trial.reshape(np.shape(search.bandwidth))
                trials.append(search._cand(bw, search.lambdas))
            return evaluate(trials)[0][0]

        log_factor, score = bracket_search(
            scores, 0.0, search.score, (-span, span), tolerance
        )
        if score > search.score:
            current[j] *= np.exp(log_factor)
            search.score, search.changed = score, True
    if search.changed:
        factors = current / start
        if state.shape is not None:
            state.shape = state.shape * factors
        elif np.isfinite(cand.multiplier):
            cand.multiplier = cand.multiplier * float(factors[0])
        scalar = np.ndim(search.bandwidth) == 0
        cand.bandwidth = float(current[0]) if scalar else current
    cand.score = search.score
    return search.changed


#: Parabolic steps of :func:`bracket_search` after its first batch.
POLISH_STEPS = 3


def bracket_search(scores, x0, score0, bounds, tolerance):
    """The best of one coordinate within ``bounds`` from ``x0`` (scored
    ``score0``): the bracket's ends and the midpoints between them and
    ``x0``, scored in one batch (``scores(xs)``, NaN the worst), then at
    most :data:`POLISH_STEPS` steps of successive parabolic interpolation
    (:func:`~sknw._selection.refine.parabolic_steps`) to ``tolerance``. Returns the
    best ``(x, score)`` seen, ``(x0, score0)`` unless strictly better."""
    lo, hi = bounds
    xs = sorted({lo, (lo + x0) / 2, (x0 + hi) / 2, hi} - {x0})
    points = [(x0, score0), *zip(xs, scores(xs), strict=True)]

    def score_of(x):
        return scores([x])[0]

    return parabolic_steps(score_of, points, x0, POLISH_STEPS, tolerance)


class _Search:
    """The current point of :func:`coordinate_search` and its trials."""

    def __init__(self, evaluate, cand, state, discrete):
        self.evaluate, self.kernel = evaluate, cand.kernel
        self.bandwidth = np.asarray(cand.bandwidth, dtype=np.float64)
        self.score = -np.inf if cand.score is None else cand.score
        self.lambdas = None
        if discrete is not None and state.lambdas is not None:
            self.lambdas = np.array(state.lambdas, dtype=np.float64)
        self.changed = False

    def _cand(self, bandwidth, lambdas):
        lambdas = None if lambdas is None else tuple(lambdas)
        return Candidate(kernel=self.kernel, bandwidth=bandwidth, lambdas=lambdas)

    def _best(self, trials):
        """The index of the best trial if strictly above the current score."""
        (mean, _), _ = self.evaluate(trials)
        if np.all(np.isnan(mean)) or not np.nanmax(mean) > self.score:
            return None
        i = int(np.nanargmax(mean))
        self.score, self.changed = float(mean[i]), True
        return i

    def try_bandwidths(self, bandwidths):
        i = self._best([self._cand(b, self.lambdas) for b in bandwidths])
        if i is not None:
            self.bandwidth = bandwidths[i]
        return i

    def try_lambdas(self, j, values):
        trials = []
        for v in values:
            trial = self.lambdas.copy()
            trial[j] = v
            trials.append(trial)
        i = self._best([self._cand(self.bandwidth, t) for t in trials])
        if i is not None:
            self.lambdas = trials[i]
        return i


def _finer(shares, best):
    """Eight shares strictly between the neighbours of ``best`` in
    ``shares`` (the second, finer grid of a smoothing parameter)."""
    i = int(np.argmin(np.abs(shares - best)))
    lo, hi = shares[max(i - 1, 0)], shares[min(i + 1, shares.size - 1)]
    return np.linspace(lo, hi, 10)[1:-1]


def mixed_grid(bandwidths, discrete, n_features, n_samples):
    """A user grid with discrete features, and the starting smoothing
    parameters of the search (None: the grid fixes them).

    Entries are floats (bandwidths of the continuous features; the smoothing
    parameters are then searched from their rule's, for ``n_samples``
    points) or arrays of shape (n_features,) holding them (each entry a dict
    of its continuous ``bandwidth`` and ``lambdas``). Mixing the two is
    refused."""
    arrays = [np.ndim(b) > 0 for b in bandwidths]
    if not bandwidths:
        raise ValueError("bandwidths is empty: give at least one bandwidth.")
    if any(arrays) and not all(arrays):
        raise ValueError(
            "With discrete features, bandwidths are all floats (of the "
            "continuous features; the smoothing parameters are searched) or "
            "all arrays of shape (n_features,) holding them."
        )
    n_cont = len(discrete.continuous)
    if not any(arrays):
        grid = [check_bandwidth(b, n_cont) for b in bandwidths]
        return grid, discrete.default_lambdas(n_samples)
    grid = []
    for b in bandwidths:
        full = np.asarray(b, dtype=np.float64)
        if full.shape != (n_features,):
            raise ValueError(
                f"A bandwidth of the grid has shape {full.shape}; with discrete "
                f"features an array holds one value per feature ({n_features})."
            )
        cont, lambdas = discrete.split(full)
        discrete.check_lambdas(lambdas)
        cont = check_bandwidth(cont, n_cont)
        if cont.size and np.all(cont == cont[0]):
            # Equal entries: one bandwidth of the continuous features, as the
            # fitted estimators read ``bandwidth_`` (a float divides the
            # distances, whatever the metric).
            cont = float(cont[0])
        grid.append({"bandwidth": cont, "lambdas": tuple(lambdas)})
    return grid, None
