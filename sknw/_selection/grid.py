"""The candidates of the cross-validated searches: the default grid of
multipliers of each kernel's rule-of-thumb bandwidth, its extension where the
best candidate is at an edge, its window about a searched size, and the
warning for a user grid's edge."""

from dataclasses import dataclass
from numbers import Integral

import numpy as np

from .._bandwidth.rules import grid_reference
from .._bandwidth.scaling import group_candidates
from .._sums import BACKENDS, FitRequest, GridSizeError
from .candidate import Candidate

#: Multipliers of the rule-of-thumb bandwidth in the default grid.
DEFAULT_GRID_RANGE = (0.05, 5.0)

#: Candidates added per kernel each time the default grid is extended at an
#: edge (an octave of the default 30-candidate grid's spacing).
EXTENSION_STEPS = 4

#: The default grid is extended at most this factor beyond each end of
#: :data:`DEFAULT_GRID_RANGE`: above, the estimate is the (weighted) global
#: mean of Nadaraya--Watson or the global linear fit of local linear to
#: within about ``1e-6`` of the targets' spread for a Gaussian; below, each
#: window holds the nearest training points only.
EXTENSION_LIMIT = 2.0**10


def grid_multipliers(n):
    """``n`` multipliers of the rule bandwidth for the default grid.

    Log-spaced about the centre of :data:`DEFAULT_GRID_RANGE`, a factor
    ``2**(1/j)`` or ``2**j`` apart (``j`` a positive integer), whichever
    spacing of these makes ``n`` multipliers span that range most nearly in
    octaves (30 multipliers: ``2**(1/4)`` apart, from 0.041 to 6.2). The
    Gaussian and Laplacian coefficients of some pairs of bandwidths are then
    powers of two apart, and the shared pass derives those candidates' terms
    by squaring (see :class:`sknw._sums._chains._SquareChains`).
    """
    lo, hi = DEFAULT_GRID_RANGE
    octaves = np.log2(hi / lo)
    centre = np.log2(lo * hi) / 2
    if n <= 1:
        return np.exp2(np.full(n, centre))
    per_step = octaves / (n - 1)
    step = float(round(per_step)) if per_step >= 1 else 1.0 / round(1 / per_step)
    return np.exp2(centre + (np.arange(n) - (n - 1) / 2) * step)


def candidate_grid(X, w, kernels, bandwidths, metric, metric_params):
    """List the (kernel, bandwidth) candidates, kernels outer, bandwidths inner.

    ``bandwidths`` is an int (the number of multipliers of the rule-of-thumb
    bandwidth of each kernel, log-spaced over :data:`DEFAULT_GRID_RANGE`) or a
    sequence of bandwidths (floats or per-feature arrays).

    Returns a list of :class:`~sknw._selection.candidate.Candidate` with
    ``kernel`` (resolved object), ``bandwidth`` (float or array) and
    ``multiplier`` (of the rule bandwidth, or NaN), and, for the default grid,
    ``rule`` (the rule bandwidth, which :func:`extend_at_edges` multiplies).
    """
    if isinstance(bandwidths, Integral):
        multipliers = grid_multipliers(int(bandwidths))
        cands = []
        for kernel in kernels:
            ref = grid_reference(X, kernel, w, metric, metric_params)
            for c in multipliers:
                cands.append(
                    Candidate(kernel=kernel, bandwidth=c * ref, multiplier=c, rule=ref)
                )
        return cands
    return [
        Candidate(kernel=kernel, bandwidth=bw)
        for kernel in kernels
        for bw in bandwidths
    ]


def _best(mean):
    """The best candidate (first on ties), None where every score is NaN."""
    return None if np.all(np.isnan(mean)) else int(np.nanargmax(mean))


def extend_at_edges(cands, n_kernels, scored, evaluate):
    """Extend the default grid while its best candidate is at an edge.

    ``cands`` are the default grid's candidates (kernels outer, multipliers
    inner, from :func:`candidate_grid`), ``scored`` their ``(mean, splits,
    n_empty)`` and ``evaluate(new)`` those of new candidates. Where the best
    candidate has a kernel's smallest (largest) multiplier, every kernel gets
    :data:`EXTENSION_STEPS` more at the grid's spacing below (above) it,
    until the best is inside or :data:`EXTENSION_LIMIT` is reached (then a
    :class:`~sknw.exceptions.GridEdgeWarning` says so, once per search); an edge
    that scores no better than its neighbour (a plateau, such as every
    bandwidth small enough to give each point its nearest neighbour's
    estimate) is not extended. Returns ``(cands, mean, splits, n_empty,
    edge)``, extended, with ``edge`` the warning's text where the best is at
    the limit (else None), for the search to give once.
    """
    mean, splits, n_empty = scored
    lo_limit = DEFAULT_GRID_RANGE[0] / EXTENSION_LIMIT * (1 - 1e-9)
    hi_limit = DEFAULT_GRID_RANGE[1] * EXTENSION_LIMIT * (1 + 1e-9)
    while True:
        n_bw = len(cands) // n_kernels
        best = _best(mean)
        if n_bw < 2 or best is None or 0 < best % n_bw < n_bw - 1:
            break
        # A plateau (the edge no better than its neighbour) is not extended.
        inner = best + 1 if best % n_bw == 0 else best - 1
        if not mean[best] > mean[inner]:
            break
        mults = np.array([c.multiplier for c in cands[:n_bw]])
        ratio = mults[1] / mults[0]
        if best % n_bw == 0:
            new = mults[0] / ratio ** np.arange(EXTENSION_STEPS, 0, -1)
            new = new[new >= lo_limit]
        else:
            new = mults[-1] * ratio ** np.arange(1, EXTENSION_STEPS + 1)
            new = new[new <= hi_limit]
        if not new.size:
            return cands, mean, splits, n_empty, _limit_text(below=best % n_bw == 0)
        added = [
            Candidate(
                kernel=cands[k * n_bw].kernel,
                bandwidth=c * rule,
                multiplier=float(c),
                rule=rule,
            )
            for k in range(n_kernels)
            for rule in [cands[k * n_bw].rule]
            for c in new
        ]
        m2, s2, e2 = evaluate(added)
        below = best % n_bw == 0
        cands, mean, splits, n_empty = (
            _merged(old, extra, n_kernels, below) if old is not None else None
            for old, extra in ((cands, added), (mean, m2), (splits, s2), (n_empty, e2))
        )
    return cands, mean, splits, n_empty, None


def _limit_text(below):
    """The warning that the best candidate of the default grid is at the
    limit of its extension (:data:`EXTENSION_LIMIT`)."""
    side, edge = ("below", "smallest") if below else ("above", "largest")
    return (
        f"The best bandwidth of the default grid is its {edge}, at the limit of "
        f"its extension ({EXTENSION_LIMIT:g} times the ends of "
        f"{DEFAULT_GRID_RANGE} times the rule of thumb); the optimum may lie "
        f"{side} it. Give the bandwidths to search (bandwidths=[...]) or a "
        "bandwidth."
    )


def _merged(old, extra, n_kernels, below):
    """Each kernel's block of ``old`` with its block of ``extra`` before
    (``below``) or after it."""
    n_old, n_new = len(old) // n_kernels, len(extra) // n_kernels
    blocks = []
    for k in range(n_kernels):
        a, b = old[k * n_old : (k + 1) * n_old], extra[k * n_new : (k + 1) * n_new]
        blocks += [b, a] if below else [a, b]
    if isinstance(old, list):
        return [c for block in blocks for c in block]
    return np.concatenate(blocks)


def edge_text(cands, mean, n_bw, owner):
    """The warning where the best candidate of a user grid has its kernel's
    smallest or largest bandwidth (of at least three distinct sizes): the
    optimum may lie beyond it. None elsewhere."""
    best = _best(mean)
    if best is None:
        return None
    start = best - best % n_bw
    sizes = np.array(
        [
            float(np.exp(np.mean(np.log(np.asarray(c.bandwidth, dtype=float)))))
            for c in cands[start : start + n_bw]
        ]
    )
    if np.unique(sizes).size < 3:
        return None
    size = sizes[best - start]
    if size not in (sizes.min(), sizes.max()):
        return None
    edge = "smallest" if size == sizes.min() else "largest"
    side = "below" if edge == "smallest" else "above"
    return (
        f"{owner}: the best bandwidth, {cands[best].bandwidth!r}, is the "
        f"{edge} of the bandwidths grid; the optimum may lie {side} it. Extend "
        "the grid, or use the default grid (bandwidths=None or an int), which "
        "extends itself at its edges."
    )


#: After a coordinate search, the grid is scored again this many steps on
#: either side of the searched size (extended where its best is at an edge).
WINDOW_STEPS = 5


def grid_window(cands, around, steps=WINDOW_STEPS, centre=None):
    """Candidates of the default grid's kernels and spacing at the
    multipliers within ``steps`` steps of ``around`` (which may lie in an
    extension beyond the grid).

    ``centre``: a candidate already scored at the multiplier ``around`` (the
    best of a coordinate search, whose shape the grid's rule bandwidths
    carry): the window's candidate of its kernel there takes its bandwidth
    bit for bit, so that a :class:`ScoreMemo` gives its score again."""
    step = grid_step(cands)
    if step is None or not np.isfinite(around):
        return cands
    mults = around * step ** np.arange(-steps, steps + 1)
    kernels = {id(c.kernel): c for c in cands}.values()  # one per kernel
    window = [
        Candidate(
            kernel=c.kernel, bandwidth=m * c.rule, multiplier=float(m), rule=c.rule
        )
        for c in kernels
        for m in mults
    ]
    if centre is not None:
        for cand in window:
            if cand.kernel is centre.kernel and cand.multiplier == around:
                cand.bandwidth = np.copy(centre.bandwidth)
    return window


def refused_candidates(passes, X, w, cands):
    """Mask of the candidates whose fit to ``X`` (weights ``w``) the
    explicit approximate backend of the search's ``passes`` would refuse (a
    binned grid too large, :class:`~sknw._sums.GridSizeError`): a search
    scores them NaN (:class:`ScoreMemo`), so that it never selects, nor
    refines towards, a bandwidth its final fit could not take."""
    smoothing = passes.smoothing
    refused = np.zeros(len(cands), dtype=bool)
    backend = BACKENDS.get(smoothing.algorithm)
    if backend is None or not backend.tolerance or smoothing.discrete is not None:
        return refused
    Xc = smoothing.continuous(X)
    for scale, members in group_candidates(cands, smoothing.metric, Xc):
        for i, head in members:
            request = FitRequest(
                X=Xc,
                sample_weight=w,
                values=None,
                head=head,
                scale=scale,
                metric=smoothing.metric,
                metric_params=smoothing.metric_params,
                tolerance=smoothing.tolerance,
                powers=passes.local_powers,
            )
            try:
                backend.fit(request)
            except GridSizeError:
                refused[i] = True
    return refused


@dataclass
class PassCache:
    """What the passes of one search share, made with the search and dropped
    with it (nothing of it stays on the estimator): ``targets``, those of the
    local fits (None for Nadaraya--Watson); ``pairs``, the discrete
    features' pair tables of its splits (a :class:`~sknw._sums.PairCache`,
    None without discrete features); ``prepared``, the local passes' data
    prepared once (see :func:`~sknw._local.passes.query_centred_cv`)."""

    targets: object = None
    pairs: object = None
    prepared: object = None


class ScoreMemo:
    """The scores of the candidates a search has scored, by kernel,
    bandwidth (bit for bit), smoothing parameters and span: a candidate met
    again (the centre of a window about a coordinate search's best, the same
    trial of two rounds) is not scored twice. Holds the kernels of its keys,
    so that their identities stay theirs. ``defaults``: ``{key: function}``,
    the values candidates without those keys take (the function's, at the
    call) before they are looked up. ``refused``: a function giving the mask
    of candidates not to score (:func:`refused_candidates`), whose score is
    NaN (a row of ``n_splits`` NaN per split, None without splits) and
    empty windows 0."""

    def __init__(self, score, defaults=None, refused=None, n_splits=None):
        self._score = score
        self._defaults = defaults or {}
        self._refused = refused
        self._n_splits = n_splits
        self._known = {}

    @staticmethod
    def _key(cand):
        bandwidth = np.asarray(cand.bandwidth, dtype=np.float64)
        lambdas = cand.lambdas
        return (
            id(cand.kernel),
            bandwidth.shape,
            bandwidth.tobytes(),
            None if lambdas is None else tuple(map(float, lambdas)),
            cand.span,
        )

    def __call__(self, cands):
        """``((mean, splits), n_empty)`` of ``cands`` as ``score`` gives them
        (``splits`` None or one row per candidate), each new candidate scored
        once, in one call."""
        for key, value in self._defaults.items():
            for cand in cands:
                if getattr(cand, key) is None:
                    setattr(cand, key, value())
        keys = [self._key(c) for c in cands]
        new = {}
        for i, key in enumerate(keys):
            if key not in self._known:
                new.setdefault(key, i)
        if new:
            self._score_new(cands, new)
        rows = [self._known[key] for key in keys]
        splits = None if rows[0][1] is None else np.array([r[1] for r in rows])
        mean = np.array([r[0] for r in rows], dtype=np.float64)
        return (mean, splits), np.array([r[2] for r in rows])

    def _score_new(self, cands, new):
        """Score the new candidates ``new`` (``{key: index}``) in one call,
        but the refused ones."""
        todo = [cands[i] for i in new.values()]
        refused = np.zeros(len(todo), dtype=bool)
        if self._refused is not None:
            refused = self._refused(todo)
        kept = [c for c, r in zip(todo, refused, strict=True) if not r]
        mean = splits = n_empty = None
        if kept:
            (mean, splits), n_empty = self._score(kept)
        nan_row = None if self._n_splits is None else np.full(self._n_splits, np.nan)
        j = 0
        for (key, i), r in zip(new.items(), refused, strict=True):
            if r:
                self._known[key] = (np.nan, nan_row, 0, cands[i].kernel)
                continue
            row = None if splits is None else splits[j]
            self._known[key] = (mean[j], row, n_empty[j], cands[i].kernel)
            j += 1


def grid_step(cands):
    """The ratio of neighbouring multipliers of a default grid."""
    mults = np.unique([c.multiplier for c in cands])
    return float(mults[1] / mults[0]) if mults.size > 1 else None
