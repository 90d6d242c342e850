"""Out-of-sample local linear estimates from the moments about each query.

With one feature, the 1-D backends that sum local moments (fgt, sorted, and
binned within ``binned_tol``) give every left-out point's moments about
itself in one pass per candidate and training fold (the point's own term
holds only in the moments of order 0, its offset being 0);
:func:`~sknw._local_frame.query_centred_fit` solves them and bounds their
error (within :data:`~sknw._local_frame.QUERY_CENTRED_TOLERANCE` of the
targets' range, ``binned_tol`` for the binned moments). The searches score
NaN a candidate whose binned grid the final fit would refuse
(:func:`~sknw._grid.refused_candidates`; a split's grid spans no more than
all the data's). For leave-one-out, the candidates of one scale and kernel
go to the core together (:func:`~sknw._sums.grid_local_moments`): the
transform takes many of them in one stacked pass. Points beyond the bound
(one-sided windows, in the tails) take their moments term by term over their
windows, about their windows' means (:func:`_line_fits`); the few left then
take the exact path of predictions over the training points of their windows
(:func:`exact_estimates`), from the cross-validation's exact passes
(:meth:`CVSelectionMixin._cv_estimates`).
"""

import warnings
from math import comb
from typing import NamedTuple

import numpy as np
from joblib import effective_n_jobs

from ._local_frame import query_centred_fit
from ._scaling import group_candidates, scaling_of
from ._sums import (
    BACKENDS,
    FitRequest,
    Head,
    MomentSums,
    choose,
    default_tile_elements,
    grid_local_moments,
    line_moments,
    line_support,
    local_moments,
    power_of_two_scale,
)
from ._sums._base import line_scale, removed_entirely
from ._trace import Tunable, record, tracing

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


def query_centred_cv(est, X, Y, w, unit, cands, folds, cache=None):
    """Out-of-sample local linear estimates of the candidates that a backend
    summing local moments serves on every split.

    ``est`` is the CV estimator (its ``algorithm``, metric, ``min_eigenvalue``
    and accepted algorithms); ``w`` the normalised weights, ``unit`` one unit
    of them (see :func:`~sknw._selection.normalised_weights`). Returns ``{i:
    (estimates (n, k), missing)}`` for the candidates ``i`` served, with
    ``missing`` a list of ``(train, rows, means)`` whose estimates the exact
    path must give (``train`` None for leave-one-out, see
    :func:`exact_estimates`), ``means`` their windows' means as the moments
    give them (NaN where they hold no weight): where its frames start. The
    candidates are taken in batches of :data:`FIT_ROWS` rows, whose local
    fits are solved together. ``cache``: the search's
    :class:`~sknw._grid.PassCache`, whose passes share their prepared data
    (None: none kept). Each chunk of the points the fast path left
    is recorded (``line_fits``: the split's ``train``, and per candidate the
    ``points`` taken and those still ``left``, as rows of the data).
    """
    if X.shape[1] != 1 or est._discrete is not None:
        return {}
    accepted = tuple(
        n for n in est._algorithms if n != "auto" and BACKENDS[n].local_moments
    )
    if est.algorithm not in ("auto", *accepted):
        return {}
    prep = _prepared(est, X, Y, w, unit, folds, cache)
    X, V, w, spread = prep.X, prep.V, prep.w, prep.spread
    mid, y_scale, splits, shared = prep.mid, prep.y_scale, prep.splits, prep.shared
    params = {
        "metric": est.metric,
        "metric_params": est.metric_params_,
        "tile_elements": default_tile_elements(),
        # Resolved once (joblib's context) rather than by every pass.
        "n_jobs": effective_n_jobs(est.n_jobs),
        # That of the approximate backends (binned_tol), for their indexes.
        "tolerance": getattr(est, "binned_tol", None),
    }
    scaled = {  # each candidate's scale and head, the scalings found once
        i: (scale, head)
        for scale, members in group_candidates(cands, est.metric, X)
        for i, head in members
    }
    preds_all, pending = _fast_passes(
        est,
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
                est,
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
    est, accepted, X, V, w, *, shape, cands, scaled, splits, params, level, spread
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
                est,
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
                    [got[i] for i in part], est, spread, tolerance=_fit_tolerance(est)
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


def _fit_tolerance(est):
    """The tolerance of the fits from the fast passes' moments: ``binned_tol``
    where the estimator's explicit algorithm approximates within it (its
    moments are then all binned: ``"auto"`` never takes it), else None
    (:data:`~sknw._local_frame.QUERY_CENTRED_TOLERANCE`)."""
    backend = BACKENDS.get(est.algorithm)
    return est.binned_tol if backend is not None and backend.tolerance else None


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


def _prepared(est, X, Y, w, unit, folds, cache=None):
    """What every pass of a search over the same data shares: the targets
    of :func:`moment_targets`, for leave-one-out sorted once (each
    candidate's backend then finds its queries and training points in order,
    and its results need no permutation) with that order and its inverse
    (``orders``, None for K-fold), the splits, and per split the dict of
    what its indexes share across candidates: a :class:`_Prepared`.

    Kept in the search's ``cache`` (:class:`~sknw._grid.PassCache`, None:
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


def _batch_moments(est, accepted, X, V, w, *, batch, scaled, split, params):
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
                est.algorithm, accepted, request, heads, 2, scale=scale, **query
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
                est,
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


def _split_moments(est, accepted, X, V, w, *, head, scale, split, params):
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
    name, index = choose(est.algorithm, accepted, request)
    if not BACKENDS[name].local_moments:
        return None
    Vt = request.values()[0]
    moments = local_moments(
        name, index, Xq, request.X, Vt, head, 2, scale=scale, **query
    )
    if moments is None:
        return None
    return moments, rows, n_positive


def _joint_fits(got, est, spread, offsets=None, tolerance=None):
    """``[(estimates, served), ...]`` of the moments ``got`` (of
    :func:`_split_moments`) of several candidates, by one
    :func:`~sknw._local_frame.query_centred_fit` over all their rows (each
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
                est,
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
        est.min_eigenvalue,
        positive,
        max_leverage=est.max_leverage,
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


def _line_fits(est, X, V, w, scaled, split, items, *, spread, preds, level):
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
    train_params = _line_params(est, X, V, w, split)
    groups = _line_groups(scaled, items)
    todo = np.arange(points.size)
    for _ in range(2):
        passes = _line_passes(
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
        if not passes:
            break
        fits = _joint_fits(
            [(line, None, n_positive[rows]) for rows, line, *_ in passes],
            est,
            spread,
            [offsets for *_, offsets in passes],
        )
        todo = []
        for (rows, line, scale, _), (fit_estimate, fit_served) in zip(
            passes, fits, strict=True
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


def _line_params(est, X, V, w, split):
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
        "metric": est.metric,
        "metric_params": est.metric_params_,
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


def exact_estimates(est, cand, X, Y, w, unit, train, rows, centres=None, known=None):
    """Out-of-sample estimates of candidate ``cand`` at ``X[rows]`` by the
    exact path of predictions (moments in frames near each point), and the
    number of empty windows among them: leave-one-out (``train`` None) on
    the fit to all the data ``(X, Y)``, each point left out of its own fit
    (its whole row), or the fit to ``X[train]``, as a refit would
    give them. ``w`` are the normalised weights, ``unit`` one unit of them;
    empty windows under ``empty_window`` ``"nan"`` and ``"raise"`` give NaN.
    ``centres``: where each point's first frame is (see
    :meth:`~sknw.LocalLinearRegressor._exact_local_fit`). ``known``: the
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
        kernel=cand["kernel"],
        bandwidth=cand["bandwidth"],
        train=train,
        rows=rows,
    )
    policy = est.empty_window if est.empty_window in ("nearest", "mean") else "nan"
    plain = est._plain(cand, policy)
    if w is not None:
        with np.errstate(over="ignore", invalid="ignore"):
            w = w / unit if np.isfinite(unit) else w
    keep = np.arange(X.shape[0]) if train is None else np.asarray(train)
    own = rows if train is None else None
    keep, own = _windowed(est, cand, X, w, keep, rows, own=own, policy=policy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain.fit(X[keep], Y[keep], sample_weight=None if w is None else w[keep])
        Q = X[rows]
        counts = plain._window_counts(Q, own)
        solve = np.ones(rows.size, dtype=bool)
        if known is not None and est._discrete is None:
            p = est._degree()
            solve = (counts == 0) | (counts >= comb(X.shape[1] + p, p))
        if solve.all():
            estimate = plain._exact_local_fit(Q, False, own=own, centres=centres)
            estimate = estimate.estimate
        else:
            estimate = np.array(known, dtype=np.float64)
            if solve.any():
                at = None if centres is None else np.asarray(centres)[solve]
                own = None if own is None else own[solve]
                fit = plain._exact_local_fit(Q[solve], False, own=own, centres=at)
                estimate[solve] = fit.estimate
    return estimate, int(np.sum(counts == 0))


def _windowed(est, cand, X, w, keep, rows, *, own, policy):
    """The training points ``keep`` (indices into ``X``) restricted to those
    whose terms can weigh in the sums of the points ``X[rows]``
    (:func:`~sknw._sums.line_support`), and ``own`` (leave-one-out: the
    points' indices into ``keep``, None for K-fold) as indices into them.
    Unchanged where the estimates could depend on the other points: a
    bandwidth per point (a span), discrete features, an empty window
    whose ``empty_window`` estimate holds points outside the windows, or
    fewer points of positive weight than the local polynomial has
    coefficients (the fit would lower its degree, see
    :func:`~sknw._local_polynomial.supported_degree`), or where not
    :data:`WINDOWED_FITS`."""
    if not WINDOWED_FITS.value:
        return keep, own
    if cand.get("span") is not None or est._discrete is not None:
        return keep, own
    Xk = X[keep]
    scaling = scaling_of(cand["bandwidth"], est.metric, Xk)
    wk = None if w is None else w[keep]
    loo = {}
    if own is not None:
        loo = {"exclude_self": True, "self_index": own}
    support, empty = line_support(
        X[rows],
        Xk,
        scaling.head(cand["kernel"]),
        metric=est.metric,
        metric_params=est.metric_params_,
        scale=scaling.scale,
        sample_weight=wk,
        **loo,
    )
    if support is None or support.size in (0, keep.size):
        return keep, own
    positive = support.size if wk is None else np.count_nonzero(wk[support] > 0)
    if positive < comb(X.shape[1] + est._degree(), est._degree()):
        return keep, own
    if policy != "nan" and empty.any():
        return keep, own
    own = None if own is None else np.searchsorted(support, own)
    return keep[support], own
