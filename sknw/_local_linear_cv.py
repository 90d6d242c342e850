"""Local linear regression with the kernel and bandwidth chosen by
cross-validation: exact leave-one-out through the moments of the local fits."""

from functools import partial

import numpy as np
from sklearn.base import _fit_context

from ._local_cv import FRAME_ROUNDING, exact_estimates, query_centred_cv
from ._local_fit import LocalPolynomialFit
from ._local_frame import (
    coordinate_frame,
    local_solution,
    moment_columns,
    monomial_terms,
    monomials,
)
from ._selection import CVSelectionMixin
from ._sums import algorithms

_EPS = np.finfo(np.float64).eps

#: The backends that sum the moments of the local fits exactly (any values):
#: the cross-validation passes, and the fits of degree other than 1.
EXACT_ALGORITHMS = algorithms(fixed_values=False, tolerance=False)


def _full_fit(solve, averages, V, shares):
    """The full fits at the training points from their leave-one-out
    averages of the moment columns ``V`` and their removed shares ``r``
    (see :mod:`sknw._criteria`): each point's own row back with weight
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


class LocalPolynomialCVFit(CVSelectionMixin, LocalPolynomialFit):
    """The cross-validation of the local polynomial fits (see
    :class:`LocalLinearRegressorCV`): exact leave-one-out through the moments
    of the monomials, and the moments about each left-out point on the
    one-feature backends (degree 1)."""

    # Those of the plain fits: binned within binned_tol, for the moments
    # about each left-out point (degree 1) and the predictions.
    _algorithms = LocalPolynomialFit._algorithms

    # The local fit at a training point is a weighted least-squares fit of
    # its window: the in-sample criteria follow from leave-one-out.
    _self_weights = True

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
        min_eigenvalue=1e-8,
        max_leverage=100.0,
        noise_variance="local",
        algorithm="auto",
        binned_tol=1e-6,
        n_jobs=None,
        categorical_features="from_dtype",
        ordered_features=None,
        categorical_kernel="aitchison_aitken",
        ordered_kernel="wang_ryzin",
        spans=None,
    ):
        super().__init__(
            kernels=kernels,
            bandwidths=bandwidths,
            cv=cv,
            scoring=scoring,
            refine=refine,
            metric=metric,
            metric_params=metric_params,
            empty_window=empty_window,
            algorithm=algorithm,
            n_jobs=n_jobs,
            spans=spans,
        )
        self.min_eigenvalue = min_eigenvalue
        self.max_leverage = max_leverage
        self.noise_variance = noise_variance
        self.binned_tol = binned_tol
        self.categorical_features = categorical_features
        self.ordered_features = ordered_features
        self.categorical_kernel = categorical_kernel
        self.ordered_kernel = ordered_kernel

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None, groups=None):
        """Select kernel and bandwidth by cross-validation, then fit.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights, used in the weighted sums and in the scores
            (for leave-one-out, see :class:`NadarayaWatsonRegressorCV`, Notes).

        groups : array-like of shape (n_samples,), default=None
            Group labels of the samples, for a splitter that uses them
            (``cv=GroupKFold(...)``, ``LeaveOneGroupOut()``, ...); refused
            with ``cv=None``.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        return self._fit_regression(X, y, sample_weight, groups)

    @property
    def _pass_algorithms(self):
        # The passes sum moments in one frame for all the data (the columns
        # of moment_columns): exact backends only. The moments about each
        # query come from the one-feature backends (_cv_estimates).
        return EXACT_ALGORITHMS

    def _cv_estimates(self, X, V, w, unit, cands, folds, finish, cache, shares=None):
        """The estimates of the candidates the one-feature backends serve
        from the moments about each left-out point
        (:func:`~sknw._local_cv.query_centred_cv`); the others' by the exact
        passes, whose left-out points of ill-conditioned frames, and the
        points beyond the fast paths' bound, take the exact path of
        predictions (see :func:`~sknw._local_cv.exact_estimates`). With
        ``shares`` (the in-sample criteria), every candidate takes the exact
        passes, ``shares`` receives each point's self weight and the
        estimates are the full fits' (see :func:`_full_fit`)."""
        local = {}
        spans = any(c.get("span") is not None for c in cands)
        if shares is None and self._degree() == 1 and not spans:
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

            p, e = super()._cv_estimates(
                X, V, w, unit, [cands[i] for i in rest], folds, fits, cache, shares
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

    def _plain(self, cand, empty_window):
        """The local polynomial estimator of candidate ``cand`` (on the
        encoded data: discrete features by their columns)."""
        discrete = {}
        if self._discrete is not None:
            discrete = self._discrete.as_params(
                self.categorical_kernel, self.ordered_kernel
            )
        return self._plain_estimator(
            kernel=cand["kernel"],
            bandwidth=self._full_bandwidth(cand),
            metric=self.metric,
            metric_params=self.metric_params,
            empty_window=empty_window,
            min_eigenvalue=self.min_eigenvalue,
            max_leverage=self.max_leverage,
            algorithm="brute",
            span=cand.get("span"),
            n_jobs=self.n_jobs,
            **discrete,
        )

    def _cv_values(self, X, Y, w):
        """Moments of the local fit (in the frame of :func:`coordinate_frame`),
        and the local linear estimates from their left-out averages."""
        Xc = self._continuous(X)
        centre, unit = coordinate_frame(Xc)
        Z = (np.asarray(Xc, dtype=np.float64) - centre) / unit
        mean = np.average(Y, axis=0, weights=w)
        p = self._degree()
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
                t = unit / np.asarray(cand["bandwidth"], dtype=np.float64)
                t = np.broadcast_to(t, (d,))
                basis = None
                if p > 1:  # solved about each point (see local_solution)
                    # A span: each point's own bandwidth (see _query_bandwidths).
                    own_bw = cand.get("query_bandwidths")
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
