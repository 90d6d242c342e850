"""Out-of-sample local linear estimates from the moments about each query.

With one feature, the 1-D backends that sum local moments (fgt, sorted, and
binned within ``binned_tol``) give every left-out point's moments about
itself in one pass per candidate and training fold (the point's own term
holds only in the moments of order 0, its offset being 0);
:func:`~sknw._local.frame.query_centred_fit` solves them and bounds their
error (within :data:`~sknw._local.frame.QUERY_CENTRED_TOLERANCE` of the
targets' range, ``binned_tol`` for the binned moments). The searches score
NaN a candidate whose binned grid the final fit would refuse
(:func:`~sknw._selection.grid.refused_candidates`; a split's grid spans no more than
all the data's). For leave-one-out, the candidates of one scale and kernel
go to the core together (:func:`~sknw._sums.grid_local_moments`): the
transform takes many of them in one stacked pass. Points beyond the bound
(one-sided windows, in the tails) take their moments term by term over their
windows, about their windows' means (:func:`_line_fits`); the few left then
take the exact path of predictions over the training points of their windows
(:func:`exact_estimates`), from the cross-validation's exact passes
(:meth:`LocalPasses.estimates`).
"""

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from math import comb
from typing import NamedTuple

import numpy as np
from joblib import effective_n_jobs

from .._bandwidth.scaling import group_candidates, scaling_of
from .._selection.passes import KernelPasses, Smoothing
from .._sums import (
    BACKENDS,
    FitRequest,
    Head,
    MomentSums,
    algorithms,
    choose,
    default_tile_elements,
    grid_local_moments,
    line_moments,
    line_support,
    local_moments,
    power_of_two_scale,
)
from .._sums._base import line_scale, removed_entirely
from .._trace import Tunable, record, tracing
from .frame import (
    coordinate_frame,
    local_solution,
    moment_columns,
    monomial_terms,
    monomials,
    query_centred_fit,
)

_EPS = np.finfo(np.float64).eps

#: Left-out points of the exact passes (one frame for all the data) whose
#: local design rounds, in that frame, by more than this fraction of its
#: smallest eigenvalue beyond what a frame at its window's mean would give
#: (``eps`` times the ``p``-th power of the second moments about the frame's
#: centre, in bandwidths, less that of the window's own, for degree ``p``)
#: are computed again by the exact path of predictions, in frames near
#: them: a far training point stretches the one frame, and a thin window
#: far from its centre (points close together for the bandwidth, a high
#: degree) leaves its design little above the rounding. Eight digits of the
#: design's smallest direction.
FRAME_ROUNDING = 1e-8

#: The local fits of a search's candidates are solved together, as many
#: candidates at once as make this many rows (one at a time from this many
#: points on): each fit's fixed cost, about 100 array operations, is then
#: paid once for several candidates where the points are few. Measured on
#: the 60000 rows of a search at 2000 points: 2.95 ms in chunks of 16384
#: rows, 3.37 ms of 8192, 4.36 ms of 4096, 3.09 ms of 65536 (arrays beyond
#: the caches).
FIT_ROWS = Tunable(1 << 14)

#: The most candidates one local fit solves together (:func:`_joint_fits`;
#: None: every candidate it is given). Each row's fit depends on its own
#: moments only: fewer at once give the same estimates, bit for bit.
JOINT_CANDIDATES = Tunable(None)

#: The moments of a search's candidates are summed for as many candidates at
#: once as make this many rows (one at a time from this many points on):
#: where the core sums a grid's moments in one pass, its fixed cost is then
#: shared by the candidates.
MOMENT_ROWS = 1 << 16

#: Whether the passes of one search over the same data share what
#: :func:`_prepared` prepares (kept in the search's cache); each pass prepares
#: its own otherwise, to the same scores.
KEEP_PREPARED = Tunable(True)

#: Whether :func:`exact_estimates` fits the training points of the points'
#: windows only (:func:`_windowed`); all of them otherwise, to the same
#: estimates to rounding.
WINDOWED_FITS = Tunable(True)


def moment_targets(Y, w):
    """Targets divided by a power of two per output and centred on their
    mid-range over the points of positive weight: ``(V, mid, y_scale,
    spread)``, ``spread`` the range of the divided targets."""
    y_scale = power_of_two_scale(Y, axis=0)
    yn = Y / y_scale
    positive = yn if w is None else yn[w > 0]
    lo, hi = positive.min(axis=0), positive.max(axis=0)
    mid = lo / 2 + hi / 2
    return yn - mid, mid, y_scale, hi - lo


def query_centred_cv(passes, X, Y, w, unit, cands, folds, cache=None):
    """Out-of-sample local linear estimates of the candidates that a backend
    summing local moments serves on every split.

    ``passes`` are the search's :class:`LocalPasses` (its smoothing,
    ``min_eigenvalue`` and the backends of local moments); ``w`` the
    normalised weights, ``unit`` one unit of them (see
    :func:`~sknw._selection.passes.normalised_weights`). Returns ``{i: (estimates
    (n, k), missing)}`` for the candidates ``i`` served, with
    ``missing`` a list of ``(train, rows, means)`` whose estimates the exact
    path must give (``train`` None for leave-one-out, see
    :func:`exact_estimates`), ``means`` their windows' means as the moments
    give them (NaN where they hold no weight): where its frames start. The
    candidates are taken in batches of :data:`FIT_ROWS` rows, whose local
    fits are solved together. ``cache``: the search's
    :class:`~sknw._selection.grid.PassCache`, whose passes share their prepared data
    (None: none kept). Each chunk of the points the fast path left
    is recorded (``line_fits``: the split's ``train``, and per candidate the
    ``points`` taken and those still ``left``, as rows of the data).
    """
    if X.shape[1] != 1 or passes.smoothing.discrete is not None:
        return {}
    accepted = tuple(
        n for n in passes.moment_algorithms if n != "auto" and BACKENDS[n].local_moments
    )
    if passes.smoothing.algorithm not in ("auto", *accepted):
        return {}
    prep = _prepared(passes, X, Y, w, unit, folds, cache)
    X, V, w, spread = prep.X, prep.V, prep.w, prep.spread
    mid, y_scale, splits, shared = prep.mid, prep.y_scale, prep.splits, prep.shared
    params = {
        "metric": passes.smoothing.metric,
        "metric_params": passes.smoothing.metric_params,
        "tile_elements": default_tile_elements(),
        # Resolved once (joblib's context) rather than by every pass.
        "n_jobs": effective_n_jobs(passes.smoothing.n_jobs),
        # That of the approximate backends (binned_tol), for their indexes.
        "tolerance": passes.smoothing.tolerance,
    }
    scaled = {  # each candidate's scale and head, the scalings found once
        i: (scale, head)
        for scale, members in group_candidates(cands, passes.smoothing.metric, X)
        for i, head in members
    }
    preds_all, pending = _fast_passes(
        passes,
        accepted,
        X,
        V,
        w,
        shape=Y.shape,
        cands=cands,
        scaled=scaled,
        splits=list(zip(splits, shared, strict=True)),
        params=params,
        level=(mid, y_scale),
        spread=spread,
    )
    # The points the fast path left, of every candidate of a split at once
    # (in chunks of FIT_ROWS points).
    out = {i: [] for i in preds_all}
    for s, ((train, test), share) in enumerate(zip(splits, shared, strict=True)):
        items = [item for item in pending[s] if item[0] in preds_all]
        for chunk in _chunks(items, FIT_ROWS.value):
            left = _line_fits(
                passes,
                X,
                V,
                w,
                scaled,
                (train, test, share),
                chunk,
                spread=spread,
                preds=preds_all,
                level=(mid, y_scale),
            )
            if tracing():
                record(
                    "line_fits",
                    train=train,
                    points={i: _in_order(prep, p) for i, p, *_ in chunk},
                    left={i: _in_order(prep, p) for i, (p, _) in left.items()},
                )
            for i, (points, centres) in left.items():
                if points.size:
                    out[i].append((train, points, centres))
    for i, pred in preds_all.items():
        missing = out[i]
        if prep.orders is not None:  # back to the points' order
            order, inverse = prep.orders
            pred = pred[inverse]
            missing = [(tr, order[rows], c) for tr, rows, c in missing]
        out[i] = (pred, missing)
    return out


def _in_order(prep, rows):
    """The rows of the points of a search's passes (:func:`_prepared`,
    sorted for leave-one-out) as rows of the data."""
    return rows if prep.orders is None else prep.orders[0][rows]


def _fast_passes(
    passes, accepted, X, V, w, *, shape, cands, scaled, splits, params, level, spread
):
    """The fast paths' passes of :func:`query_centred_cv`: ``(preds,
    pending)``, the estimates of the candidates served on every split
    (``shape`` each, NaN where the fast path left a point), and per split
    the points it left (:func:`_left`). The candidates are taken in batches
    of :data:`MOMENT_ROWS` rows, their fits solved together in batches of
    :data:`FIT_ROWS`."""
    n = max(1, X.shape[0])
    per_batch, per_fit = max(1, MOMENT_ROWS // n), max(1, FIT_ROWS.value // n)
    preds_all, pending = {}, [[] for _ in splits]
    for b0 in range(0, len(cands), per_batch):
        batch = range(b0, min(b0 + per_batch, len(cands)))
        preds = {i: np.full(shape, np.nan) for i in batch}
        for s, ((train, test), share) in enumerate(splits):
            got = _batch_moments(
                passes,
                accepted,
                X,
                V,
                w,
                batch=list(preds),
                scaled=scaled,
                split=(train, test, share),
                params=params,
            )
            # A candidate the choice does not serve on a split: none of it.
            preds = {i: p for i, p in preds.items() if got[i] is not None}
            served_now = list(preds)
            for f0 in range(0, len(served_now), per_fit):
                part = served_now[f0 : f0 + per_fit]
                fits = _joint_fits(
                    [got[i] for i in part],
                    passes,
                    spread,
                    tolerance=_fit_tolerance(passes),
                )
                for i, (estimate, served) in zip(part, fits, strict=True):
                    every, pred = served.all(), preds[i]
                    if train is None:  # every point, in order (NaN elsewhere)
                        np.add(estimate, level[0], out=pred, where=served[:, None])
                        pred *= level[1]
                    else:
                        rows = got[i][1][served]
                        pred[rows] = (estimate[served] + level[0]) * level[1]
                    if not every:
                        pending[s].append(_left(i, got[i], ~served, X, scaled[i]))
        preds_all.update(preds)
    return preds_all, pending


def _fit_tolerance(passes):
    """The tolerance of the fits from the fast passes' moments: ``binned_tol``
    where the estimator's explicit algorithm approximates within it (its
    moments are then all binned: ``"auto"`` never takes it), else None
    (:data:`~sknw._local.frame.QUERY_CENTRED_TOLERANCE`)."""
    backend = BACKENDS.get(passes.smoothing.algorithm)
    return (
        passes.smoothing.tolerance
        if backend is not None and backend.tolerance
        else None
    )


class _Prepared(NamedTuple):
    """What every pass of a search over the same data shares (see
    :func:`_prepared`)."""

    X: np.ndarray
    V: np.ndarray
    w: np.ndarray
    mid: np.ndarray
    y_scale: np.ndarray
    spread: np.ndarray
    orders: tuple
    splits: list
    shared: list


class _KeptPasses(NamedTuple):
    """The :class:`_Prepared` of the arrays ``key`` (by identity) and the
    weights' ``unit``."""

    key: tuple
    unit: float
    prepared: _Prepared


def _prepared(passes, X, Y, w, unit, folds, cache=None):
    """What every pass of a search over the same data shares: the targets
    of :func:`moment_targets`, for leave-one-out sorted once (each
    candidate's backend then finds its queries and training points in order,
    and its results need no permutation) with that order and its inverse
    (``orders``, None for K-fold), the splits, and per split the dict of
    what its indexes share across candidates: a :class:`_Prepared`.

    Kept in the search's ``cache`` (:class:`~sknw._selection.grid.PassCache`, None:
    not kept) for the passes that follow on the same arrays, where
    :data:`KEEP_PREPARED`. Each call is recorded (``prepared_data``: the
    search's ``cache``, and whether it ``reused`` the kept data)."""
    key = (X, Y, w, folds)
    keep = cache is not None and KEEP_PREPARED.value
    kept = cache.prepared if keep else None
    if kept is not None and kept.unit == unit:
        if all(a is b for a, b in zip(kept.key, key, strict=True)):
            record("prepared_data", cache=cache, reused=True)
            return kept.prepared
    record("prepared_data", cache=cache, reused=False)
    V, mid, y_scale, spread = moment_targets(Y, w)
    splits = [(None, None)] if folds is None else folds
    orders = None
    if folds is None:
        order = np.argsort(X[:, 0], kind="stable")
        X, V = X[order], V[order]
        w = None if w is None else w[order]
        inverse = np.empty_like(order)
        inverse[order] = np.arange(order.size)
        orders = (order, inverse)
    prepared = _Prepared(
        X=X,
        V=V,
        w=w,
        mid=mid,
        y_scale=y_scale,
        spread=spread,
        orders=orders,
        splits=splits,
        shared=[{} for _ in splits],
    )
    if keep:
        cache.prepared = _KeptPasses(key=key, unit=unit, prepared=prepared)
    return prepared


def _batch_moments(passes, accepted, X, V, w, *, batch, scaled, split, params):
    """``{i: (moments, rows, n_positive) or None}`` of the candidates
    ``batch`` on one split (as :func:`_split_moments`): for leave-one-out,
    the heads of one scale and kernel together where the core sums a grid's
    moments in one pass (:func:`~sknw._sums.grid_local_moments`), the others
    each by its own pass. Recorded (``batch_moments``: ``n_candidates``, how
    many of them the grid's passes served, ``from_grid``, and
    ``leave_one_out``)."""
    got = {}
    from_grid = 0
    if split[0] is None:
        groups = {}
        for i in batch:
            scale, head = scaled[i]
            groups.setdefault((id(scale), head.kernel), []).append(i)
        for members in groups.values():
            scale, head = scaled[members[0]]
            request, Xq, rows, query = _request(X, V, w, head, scale, split, params)
            heads = [scaled[i][1] for i in members]
            sums = grid_local_moments(
                passes.smoothing.algorithm,
                accepted,
                request,
                heads,
                2,
                scale=scale,
                **query,
            )
            for i, moments in zip(members, sums, strict=True):
                if moments is not None:
                    got[i] = (moments, rows, _positive(request, rows, query))
                    from_grid += 1
    record(
        "batch_moments",
        n_candidates=len(batch),
        from_grid=from_grid,
        leave_one_out=split[0] is None,
    )
    for i in batch:
        if i not in got:
            scale, head = scaled[i]
            got[i] = _split_moments(
                passes,
                accepted,
                X,
                V,
                w,
                head=head,
                scale=scale,
                split=split,
                params=params,
            )
    return got


def _request(X, V, w, head, scale, split, params):
    """``(request, Xq, rows, query)`` of one candidate on a split (``(train,
    test, shared)``, ``train`` None for leave-one-out of every point,
    ``shared`` the dict of what the split's indexes share across
    candidates): the :class:`~sknw._sums.FitRequest` of its training
    points (with ``params``' tolerance), its queries, their rows in the data
    and the core's parameters of their sums (the other ``params``, the
    weights and leave-one-out)."""
    train, test, shared = split
    params = dict(params)
    tolerance = params.pop("tolerance", None)
    if train is None:
        Xq, Xt, Vt, wt = X, X, V, w
        rows = np.arange(X.shape[0])
        loo = {"exclude_self": True}
    else:
        Xq, Xt, Vt = X[test], X[train], V[train]
        wt = None if w is None else w[train]
        rows, loo = np.asarray(test), {}
    request = FitRequest(
        X=Xt,
        sample_weight=wt,
        values=lambda: (Vt, wt),
        head=head,
        scale=scale,
        metric=params["metric"],
        metric_params=params["metric_params"],
        tolerance=tolerance,
        tile_elements=params["tile_elements"],
        grid=True,
        powers=2,
        shared=shared,
    )
    return request, Xq, rows, {"sample_weight": wt, **params, **loo}


def _positive(request, rows, query):
    """The number of training points of positive weight of each query's fit
    (one number, or one per query for leave-one-out)."""
    wt = request.sample_weight
    n_positive = request.X.shape[0] if wt is None else int(np.sum(wt > 0))
    if query.get("exclude_self"):
        n_positive = n_positive - removed_entirely(rows, wt)
    return n_positive


def _split_moments(passes, accepted, X, V, w, *, head, scale, split, params):
    """``(moments, rows, n_positive)`` of one split (``split``: ``(train,
    test, shared)``, ``train`` None for leave-one-out of every point,
    ``shared`` the dict of what the split's indexes share across candidates)
    by a backend summing local moments (of the ``accepted`` names), with the
    number of training points of positive weight of each query's fit; None
    where the choice gives none or where no training point weighs."""
    request, Xq, rows, query = _request(X, V, w, head, scale, split, params)
    n_positive = _positive(request, rows, query)
    if not np.any(np.asarray(n_positive) > 0):  # empty windows: the exact passes
        return None
    name, index = choose(passes.smoothing.algorithm, accepted, request)
    if not BACKENDS[name].local_moments:
        return None
    Vt = request.values()[0]
    moments = local_moments(
        name, index, Xq, request.X, Vt, head, 2, scale=scale, **query
    )
    if moments is None:
        return None
    return moments, rows, n_positive


def _joint_fits(got, passes, spread, offsets=None, tolerance=None):
    """``[(estimates, served), ...]`` of the moments ``got`` (of
    :func:`_split_moments`) of several candidates, by one
    :func:`~sknw._local.frame.query_centred_fit` over all their rows (each
    row's fit depends on its own moments only). A window's count of points,
    where the backend gives one, is its number of training points of
    positive weight. ``offsets``: one array per candidate, its queries'
    offsets from the moments' centres (None: about the queries);
    ``tolerance`` that of the fits (None: exact moments, see
    :func:`_fit_tolerance`). At most :data:`JOINT_CANDIDATES` candidates
    at once; each fit is recorded (``joint_fit``: ``n_candidates``,
    ``n_rows``, ``n_served`` and ``tolerance``)."""
    if not got:
        return []
    most = JOINT_CANDIDATES.value
    if most is not None and len(got) > most:
        return [
            fit
            for a in range(0, len(got), most)
            for fit in _joint_fits(
                got[a : a + most],
                passes,
                spread,
                None if offsets is None else offsets[a : a + most],
                tolerance,
            )
        ]
    sizes = [moments.sums.shape[0] for moments, _, _ in got]
    positive = np.concatenate(
        [
            np.broadcast_to(n if moments.counts is None else moments.counts, (size,))
            for (moments, _, n), size in zip(got, sizes, strict=True)
        ]
    )
    joint = MomentSums(
        np.concatenate([moments.sums for moments, _, _ in got]),
        np.concatenate([moments.bound for moments, _, _ in got]),
        None,
        1.0,
    )
    fit = query_centred_fit(
        joint,
        spread / 2,
        spread,
        passes.min_eigenvalue,
        positive,
        max_leverage=passes.max_leverage,
        offsets=None if offsets is None else np.concatenate(offsets),
        tolerance=tolerance,
    )
    record(
        "joint_fit",
        n_candidates=len(got),
        n_rows=fit.served.size,
        n_served=int(np.count_nonzero(fit.served)),
        tolerance=tolerance,
    )
    cuts = np.cumsum(sizes)[:-1]
    return list(
        zip(np.split(fit.estimate, cuts), np.split(fit.served, cuts), strict=True)
    )


def _chunks(items, size):
    """The items of :func:`_left` in chunks of at most ``size`` points (an
    item cut where it crosses a chunk's end)."""
    chunk, room = [], size
    for i, points, means, n in items:
        a = 0
        while a < points.size:
            b = min(points.size, a + room)
            chunk.append((i, points[a:b], means[a:b], n[a:b] if np.ndim(n) else n))
            room -= b - a
            a = b
            if not room:
                yield chunk
                chunk, room = [], size
    if chunk:
        yield chunk


def _left(i, got, left, X, scaled):
    """``(i, points, means, n_positive)`` of the points of candidate ``i``
    the fast path left (the mask ``left`` of the rows of ``got``, of
    :func:`_split_moments`): their windows' means as its moments give them
    (NaN where they give none) and their numbers of training points of
    positive weight."""
    moments, rows, n_positive = got
    points = rows[left]
    means = _window_means(moments, left, X[points], scaled[0])
    return i, points, means, n_positive[left] if np.ndim(n_positive) else n_positive


def _line_fits(passes, X, V, w, scaled, split, items, *, spread, preds, level):
    """Serve the points of a split the fast path left (``items`` of
    :func:`_left`) from their moments term by term over their windows
    (:func:`~sknw._sums.line_moments`), about their windows' means as the
    fast path gives them (the points themselves where it gives none), and,
    for the points not served so, again about the means found where these
    are more than a window's spread away; solved and bounded by
    :func:`_joint_fits` with the offsets from the centres (one solve for all
    the candidates of a pass), so that one-sided windows lose no digits to
    cancellation. Their estimates go into ``preds[i]`` (``level``: the
    targets' mid-range and scale). Returns ``{i: (points, centres)}``: the
    points still left to the exact path and where their frames start
    (their windows' means, as found).

    The items' points are laid end to end (``owner``: each one's item), so
    that each step is a few array operations for all of them."""
    sizes = [points.size for _, points, _, _ in items]
    owner = np.repeat(np.arange(len(items)), sizes)
    points = np.concatenate([points for _, points, _, _ in items])
    means = np.concatenate([means for _, _, means, _ in items])
    n_positive = np.concatenate(
        [
            np.broadcast_to(n, (size,))
            for (*_, n), size in zip(items, sizes, strict=True)
        ]
    )
    centres = np.where(np.isfinite(means), means, X[points, 0])
    served = np.zeros(points.size, dtype=bool)
    estimate = np.full((points.size, V.shape[1]), np.nan)
    train_params = _line_params(passes, X, V, w, split)
    groups = _line_groups(scaled, items)
    todo = np.arange(points.size)
    for _ in range(2):
        lines = _line_passes(
            X,
            train_params,
            scaled,
            items,
            groups,
            owner=owner,
            points=points,
            centres=centres,
            todo=todo,
        )
        if not lines:
            break
        fits = _joint_fits(
            [(line, None, n_positive[rows]) for rows, line, *_ in lines],
            passes,
            spread,
            [offsets for *_, offsets in lines],
        )
        todo = []
        for (rows, line, scale, _), (fit_estimate, fit_served) in zip(
            lines, fits, strict=True
        ):
            estimate[rows[fit_served]] = fit_estimate[fit_served]
            served[rows] |= fit_served
            # Not served, and the window's mean over a spread from the
            # centre: again, about that mean.
            S = line.sums
            with np.errstate(divide="ignore", invalid="ignore"):
                m1 = S[:, 1, -1] / S[:, 0, -1]
                far = ~fit_served & np.isfinite(m1)
                far &= ~(m1 * m1 <= S[:, 2, -1] / S[:, 0, -1] - m1 * m1)
            centres[rows[far]] = _window_means(
                line, far, centres[rows[far], None], scale
            )
            todo.append(rows[far])
        todo = np.sort(np.concatenate(todo))
    out = {}
    cuts = np.cumsum(sizes)[:-1]
    for (i, *_), mine, done, got, at in zip(
        items,
        np.split(points, cuts),
        np.split(served, cuts),
        np.split(estimate, cuts),
        np.split(centres, cuts),
        strict=True,
    ):
        preds[i][mine[done]] = (got[done] + level[0]) * level[1]
        out[i] = (mine[~done], at[~done])
    return out


def _line_params(passes, X, V, w, split):
    """The training points, values and parameters of
    :func:`~sknw._sums.line_moments` on a split (``(train, test, shared)``,
    ``train`` None for leave-one-out, whose points are sorted; the order of
    a training fold is kept in ``shared``)."""
    train, _, share = split
    if train is None:
        Xt, Vt, wt, order = X, V, w, np.arange(X.shape[0])
        loo = {"exclude_self": True}
    else:
        Xt, Vt, wt = X[train], V[train], None if w is None else w[train]
        if "line_order" not in share:
            share["line_order"] = np.argsort(Xt[:, 0], kind="stable")
        order, loo = share["line_order"], {}
    params = {
        "metric": passes.smoothing.metric,
        "metric_params": passes.smoothing.metric_params,
        "sample_weight": wt,
        "order": order,
        **loo,
    }
    return Xt, Vt, params


def _line_groups(scaled, items):
    """The items of :func:`_line_fits` by scale and kernel: ``(members,
    key, divisor)``, each group's items, each item's group and each item's
    candidate's divisor."""
    groups = {}
    for k, (i, *_) in enumerate(items):
        scale, head = scaled[i]
        groups.setdefault((id(scale), head.kernel), []).append(k)
    members = list(groups.values())
    key = np.empty(len(items), dtype=np.intp)
    for g, ks in enumerate(members):
        key[ks] = g
    divisor = np.array([float(scaled[i][1].divisor) for i, *_ in items])
    return members, key, divisor


def _line_passes(
    X, train_params, scaled, items, groups, *, owner, points, centres, todo
):
    """``[(rows, moments, scale, offsets)]``: the moments of
    :func:`~sknw._sums.line_moments` of the points ``points[todo]`` (of the
    items ``owner[todo]`` of :func:`_line_fits`) about their ``centres``,
    from one call per scale and kernel (``groups`` of :func:`_line_groups`,
    each row with its candidate's divisor); none for the rows a call does
    not decide."""
    Xt, Vt, params = train_params
    members, key, divisor = groups
    out = []
    for g, ks in enumerate(members):
        rows = todo[key[owner[todo]] == g]
        if not rows.size:
            continue
        scale, head = scaled[items[ks[0]][0]]
        at = points[rows]
        sub = {**params, "self_index": at} if params.get("exclude_self") else params
        line, offsets = line_moments(
            X[at],
            centres[rows],
            Xt,
            Vt,
            Head(head.kernel, divisor[owner[rows]]),
            2,
            scale=scale,
            **sub,
        )
        if line is not None:  # else the exact path's
            out.append((rows, line, scale, offsets))
    return out


def _window_means(moments, left, Q, scale):
    """The means of the windows of some queries (one feature), from their
    moments about the points ``Q`` (the queries themselves, or the centres
    of :func:`~sknw._sums.line_moments`; rows ``left`` of the
    :class:`~sknw._sums.MomentSums`, offsets in units of ``moments.unit`` of
    the feature divided by ``scale``): NaN where a window holds no
    weight."""
    S = moments.sums[left]
    s = line_scale(scale)
    unit = np.asarray(moments.unit, dtype=np.float64)
    unit = unit[left] if unit.ndim else unit
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        mean = Q[:, 0] + S[:, 1, -1] / S[:, 0, -1] * unit * s
    return np.where(np.isfinite(mean), mean, np.nan)


def exact_estimates(passes, cand, X, Y, w, unit, train, rows, centres=None, known=None):
    """Out-of-sample estimates of candidate ``cand`` at ``X[rows]`` by the
    exact path of predictions (moments in frames near each point), and the
    number of empty windows among them: leave-one-out (``train`` None) on
    the fit to all the data ``(X, Y)``, each point left out of its own fit
    (its whole row), or the fit to ``X[train]``, as a refit would
    give them. ``w`` are the normalised weights, ``unit`` one unit of them;
    empty windows under ``empty_window`` ``"nan"`` and ``"raise"`` give NaN.
    ``centres``: where each point's first frame is (see
    :meth:`~sknw._local.fits.LocalPolynomialFits.exact_local_fit`). ``known``: the
    caller's estimates at ``X[rows]``, kept where a window holds points but
    fewer than the polynomial's coefficients (the local constant, whatever
    the frame); a compact kernel's windows at small bandwidths.

    With one feature, the fit holds only the training points whose terms
    can weigh in these points' sums (:func:`~sknw._sums.line_support`):
    the same estimates to rounding, in time of the windows rather than of
    all the training points (where :data:`WINDOWED_FITS`).

    Each call is recorded (``exact_estimates``: the candidate's ``kernel``
    and ``bandwidth``, ``train`` and ``rows``).
    """
    record(
        "exact_estimates",
        kernel=cand.kernel,
        bandwidth=cand.bandwidth,
        train=train,
        rows=rows,
    )
    policy = passes.smoothing.empty_window
    policy = policy if policy in ("nearest", "mean") else "nan"
    plain = passes.plain_fit(cand, policy)
    if w is not None:
        with np.errstate(over="ignore", invalid="ignore"):
            w = w / unit if np.isfinite(unit) else w
    keep = np.arange(X.shape[0]) if train is None else np.asarray(train)
    own = rows if train is None else None
    keep, own = _windowed(passes, cand, X, w, keep, rows, own=own, policy=policy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain.fit(X[keep], Y[keep], sample_weight=None if w is None else w[keep])
        Q = X[rows]
        counts = plain._fits.window_counts(Q, own)
        solve = np.ones(rows.size, dtype=bool)
        if known is not None and passes.smoothing.discrete is None:
            p = passes.degree
            solve = (counts == 0) | (counts >= comb(X.shape[1] + p, p))
        if solve.all():
            estimate = plain._fits.exact_local_fit(Q, False, own=own, centres=centres)
            estimate = estimate.estimate
        else:
            estimate = np.array(known, dtype=np.float64)
            if solve.any():
                at = None if centres is None else np.asarray(centres)[solve]
                own = None if own is None else own[solve]
                fit = plain._fits.exact_local_fit(Q[solve], False, own=own, centres=at)
                estimate[solve] = fit.estimate
    return estimate, int(np.sum(counts == 0))


def _windowed(passes, cand, X, w, keep, rows, *, own, policy):
    """The training points ``keep`` (indices into ``X``) restricted to those
    whose terms can weigh in the sums of the points ``X[rows]``
    (:func:`~sknw._sums.line_support`), and ``own`` (leave-one-out: the
    points' indices into ``keep``, None for K-fold) as indices into them.
    Unchanged where the estimates could depend on the other points: a
    bandwidth per point (a span), discrete features, an empty window
    whose ``empty_window`` estimate holds points outside the windows, or
    fewer points of positive weight than the local polynomial has
    coefficients (the fit would lower its degree, see
    :meth:`~sknw.LocalPolynomialRegressor._supported_degree`), or where not
    :data:`WINDOWED_FITS`."""
    if not WINDOWED_FITS.value:
        return keep, own
    if cand.span is not None or passes.smoothing.discrete is not None:
        return keep, own
    Xk = X[keep]
    scaling = scaling_of(cand.bandwidth, passes.smoothing.metric, Xk)
    wk = None if w is None else w[keep]
    loo = {}
    if own is not None:
        loo = {"exclude_self": True, "self_index": own}
    support, empty = line_support(
        X[rows],
        Xk,
        scaling.head(cand.kernel),
        metric=passes.smoothing.metric,
        metric_params=passes.smoothing.metric_params,
        scale=scaling.scale,
        sample_weight=wk,
        **loo,
    )
    if support is None or support.size in (0, keep.size):
        return keep, own
    positive = support.size if wk is None else np.count_nonzero(wk[support] > 0)
    if positive < comb(X.shape[1] + passes.degree, passes.degree):
        return keep, own
    if policy != "nan" and empty.any():
        return keep, own
    own = None if own is None else np.searchsorted(support, own)
    return keep[support], own


#: The backends that sum the moments of the local fits exactly (any values):
#: the cross-validation passes, and the fits of degree other than 1.
EXACT_ALGORITHMS = algorithms(fixed_values=False, tolerance=False)

#: The backends of the local fits' moments about each query (binned within
#: ``binned_tol``).
LOCAL_ALGORITHMS = algorithms(fixed_values=False, local_moments=True)


def _full_fit(solve, averages, V, shares):
    """The full fits at the training points from their leave-one-out
    averages of the moment columns ``V`` and their removed shares ``r``
    (see :mod:`sknw._selection.criteria`): each point's own row back with weight
    ``r``, solved by ``solve`` (the search's :func:`local_solution`). Its
    weight in its own fitted value (the smoother matrix's diagonal) is
    ``H_ii = r (1 + l)``, ``l`` the solution's squared Mahalanobis distance
    of the point from its window's mean (0 where the design is singular:
    Nadaraya--Watson's ``r``); where leaving the point out makes its window
    singular, the full fit passes through it, ``H_ii = 1``."""
    r = shares[:, None]
    with np.errstate(invalid="ignore"):
        full = np.where(r >= 1.0, V, (1.0 - r) * averages + r * V)
    return solve(full, few=None)


@dataclass(frozen=True, kw_only=True)
class LocalPasses:
    """The passes of a local polynomial search (see
    :class:`~sknw.LocalLinearRegressorCV`): exact leave-one-out through the
    moments of the monomials, and the moments about each left-out point on
    the one-feature backends (degree 1).

    ``smoothing``: the search's :class:`~sknw._selection.passes.Smoothing`;
    ``degree``, ``min_eigenvalue`` and ``max_leverage``: the local fits';
    ``plain``: the plain estimator of the fits, given the candidate's
    ``kernel``, ``bandwidth``, ``empty_window`` and ``span`` (the exact path
    of predictions, see :func:`exact_estimates`)."""

    smoothing: Smoothing
    degree: int
    min_eigenvalue: float
    max_leverage: float | None
    plain: Callable
    #: The passes sum moments in one frame for all the data (the columns
    #: of moment_columns): exact backends only. The moments about each
    #: query come from the one-feature backends (see :meth:`estimates`).
    accepted = EXACT_ALGORITHMS
    #: The backends of the moments about each left-out point.
    moment_algorithms = LOCAL_ALGORITHMS
    #: The local fit at a training point is a weighted least-squares fit of
    #: its window: the in-sample criteria follow from leave-one-out.
    self_weights = True

    @property
    def local_powers(self):
        """The powers of the moments about each query: up to ``2 p``."""
        return 2 * self.degree

    def plain_fit(self, cand, empty_window):
        """The unfitted local polynomial estimator of candidate ``cand``
        (on the encoded data: discrete features by their columns)."""
        return self.plain(
            kernel=cand.kernel,
            bandwidth=self.smoothing.full_bandwidth(cand),
            empty_window=empty_window,
            span=cand.span,
        )

    def estimates(self, X, V, w, cands, *, unit, folds, finish, cache, shares=None):
        """The estimates of the candidates the one-feature backends serve
        from the moments about each left-out point
        (:func:`~sknw._local.passes.query_centred_cv`); the others' by the exact
        passes, whose left-out points of ill-conditioned frames, and the
        points beyond the fast paths' bound, take the exact path of
        predictions (see :func:`~sknw._local.passes.exact_estimates`). With
        ``shares`` (the in-sample criteria), every candidate takes the exact
        passes, ``shares`` receives each point's self weight and the
        estimates are the full fits' (see :func:`_full_fit`)."""
        local = {}
        spans = any(c.span is not None for c in cands)
        if shares is None and self.degree == 1 and not spans:
            local = query_centred_cv(
                self, X, cache.targets, w, unit, cands, folds, cache=cache
            )
        rest = [i for i in range(len(cands)) if i not in local]
        preds = np.full((len(cands), X.shape[0], cache.targets.shape[1]), np.nan)
        n_empty = np.zeros(len(cands), dtype=np.intp)
        if rest:
            fits = finish
            if shares is not None:
                # The removed shares, known once the passes are done, give
                # the full fits.
                def fits(averages, cands, empty):
                    return finish(averages, cands, empty, shares=shares)

            exact = KernelPasses(smoothing=self.smoothing, accepted=self.accepted)
            p, e = exact.estimates(
                X,
                V,
                w,
                [cands[i] for i in rest],
                unit=unit,
                folds=folds,
                finish=fits,
                cache=cache,
                shares=shares,
            )
            preds[rest], n_empty[rest] = p, e
            if shares is not None:
                shares[:] = finish.self_weights
            # Points whose frame lost digits: again, exactly (for leave-one-out
            # and for each training fold).
            splits = [(None, None)] if folds is None else folds
            everything = np.arange(X.shape[0])
            for j, i in enumerate(rest):
                lost = finish.rounding[j] > FRAME_ROUNDING
                for train, test in splits:
                    redo = np.flatnonzero(lost) if train is None else test[lost[test]]
                    if shares is not None:  # the full fits
                        train = everything
                    if redo.size:
                        preds[i][redo] = exact_estimates(
                            self,
                            cands[i],
                            X,
                            cache.targets,
                            w,
                            unit,
                            train,
                            redo,
                            known=preds[i][redo],
                        )[0]
        for i, (pred, missing) in local.items():
            preds[i] = pred
            for train, left, means in missing:
                preds[i][left], empty = exact_estimates(
                    self,
                    cands[i],
                    X,
                    cache.targets,
                    w,
                    unit,
                    train,
                    left,
                    centres=means,
                )
                n_empty[i] += empty
        return preds, n_empty

    def values(self, X, Y, w):
        """Moments of the local fit (in the frame of :func:`coordinate_frame`),
        and the local linear estimates from their left-out averages."""
        Xc = self.smoothing.continuous(X)
        centre, unit = coordinate_frame(Xc)
        Z = (np.asarray(Xc, dtype=np.float64) - centre) / unit
        mean = np.average(Y, axis=0, weights=w)
        p = self.degree
        V, cols = moment_columns(Z, Y - mean, degree=p)
        d, k = Z.shape[1], Y.shape[1]
        terms = monomial_terms(d, p)
        Zp = monomials(Z, p)

        def finish(averages, cands, empty, shares=None):
            """The out-of-sample estimates from their ``averages``; with the
            removed ``shares``, the full fits' (for the in-sample criteria)."""
            out = np.empty((len(cands), Z.shape[0], k))
            # The rounding of each left-out point's local design in this one
            # frame, relative to its smallest eigenvalue (see FRAME_ROUNDING).
            finish.rounding = np.zeros((len(cands), Z.shape[0]))
            # With the removed ``shares``: each point's weight in its own
            # fitted value (the smoother matrix's diagonal, see _full_fit).
            finish.self_weights = None if shares is None else np.empty_like(shares)
            for i, cand in enumerate(cands):
                t = unit / np.asarray(cand.bandwidth, dtype=np.float64)
                t = np.broadcast_to(t, (d,))
                basis = None
                if p > 1:  # solved about each point (see local_solution)
                    # A span: each point's own bandwidth (see
                    # LocalPolynomialFits.query_bandwidths).
                    own_bw = cand.query_bandwidths
                    tq = t[None, :] if own_bw is None else unit / own_bw
                    tq = np.broadcast_to(tq, (Z.shape[0], d))
                    basis = tq[:, :, None] * np.eye(d)[None]
                    to_bandwidth = np.stack(
                        [np.prod(tq[:, list(a)], axis=1) for a in terms], axis=1
                    )
                else:
                    to_bandwidth = [np.prod((t / np.max(t))[list(a)]) for a in terms]
                solve = partial(
                    local_solution,
                    cols=cols,
                    d=len(terms),
                    k=k,
                    Zq=Zp,
                    min_eigenvalue=self.min_eigenvalue,
                    to_bandwidth=np.array(to_bandwidth),
                    max_leverage=self.max_leverage,
                    linear=d,
                    basis=basis,
                    degree=p,
                )
                sol = solve(averages[i], few=empty[i])
                out[i] = sol.estimate + mean
                if shares is not None:
                    full = _full_fit(solve, averages[i], V, shares[i])
                    out[i] = full.estimate + mean
                    finish.self_weights[i] = shares[i] * (1.0 + full.distance)
                # The monomials of degree p lose about the p-th power of the
                # second moments about the frame's centre (sol.second, in
                # bandwidths, over max(t) for degree 1, as sol.least), relative
                # to the design's smallest eigenvalue; counted beyond what a
                # frame at the window's mean would lose (its centred second
                # moments, 'local'): far from the search's frame, not where
                # the design itself is ill-conditioned (see FRAME_ROUNDING).
                scale = np.asarray(to_bandwidth, dtype=np.float64)[..., :d]
                offset = np.sum((sol.mean_z[:, :d] * scale) ** 2, axis=1)
                local = np.maximum(sol.second - offset, 0.0)
                power = max(p, 1)
                with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
                    excess = sol.second**power - local**power
                    rounding = _EPS * excess / sol.least
                rounding[~sol.ok] = 0.0
                # A design found singular for the rounding in this frame may
                # not be in a frame near its point: again, exactly.
                rounding[sol.rounded & ~empty[i]] = np.inf
                finish.rounding[i] = np.where(np.isnan(rounding), np.inf, rounding)
            return out

        return V, finish
