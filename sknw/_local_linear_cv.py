"""Local linear regression with the kernel and bandwidth chosen by
cross-validation: exact leave-one-out through the moments of the local fits."""

from functools import partial

import numpy as np
from sklearn.base import _fit_context

from ._docs import fill_docstring
from ._local_cv import FRAME_ROUNDING, exact_estimates, query_centred_cv
from ._local_frame import (
    coordinate_frame,
    local_solution,
    moment_columns,
    monomial_terms,
    monomials,
)
from ._local_linear import LocalLinearRegressor, LocalPolynomialFit
from ._selection import CVSelectionMixin, cv_parameter_constraints
from ._sums import algorithms
from .kernels import KERNELS

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


@fill_docstring
class LocalLinearRegressorCV(LocalPolynomialCVFit, LocalLinearRegressor):
    r"""Local linear regression with kernel and bandwidth chosen by CV.

    By default, exact leave-one-out cross-validation over a log-spaced grid of
    bandwidths around the rule of thumb, in one pass over the pairwise
    distances: the kernel-weighted moments of every training point's window
    are summed without the point itself, and each point's local least-squares
    problem is solved from them. Then it predicts like
    :class:`LocalLinearRegressor` with the best kernel and bandwidth.

    Parameters
    ----------
    {kernels}
    bandwidths : int, array-like or None, default=None
        As in :class:`NadarayaWatsonRegressorCV`: ``None`` or an int ``n``
        (default 30) for ``n`` multipliers, log-spaced by ``2**(1/j)`` or
        ``2**j`` over about 0.05 to 5, of each kernel's Scott-rule
        bandwidth of a robust spread; otherwise a sequence of bandwidths.
    cv : int, cross-validation generator, iterable or None, default=None
        ``None``: exact, efficient leave-one-out. Otherwise K-fold as in
        :func:`sklearn.model_selection.check_cv`, through the same machinery.
    scoring : str, callable or None, default=None
        As in :class:`NadarayaWatsonRegressorCV`; ``None`` is the negative
        mean squared error. ``"aicc"`` and ``"gcv"`` take the self weight of
        each point's local fit (its own weight's share times ``1 +`` its
        squared Mahalanobis distance from its window's mean: the diagonal of
        the smoother matrix); every candidate then takes the exact passes,
        not the one-feature fast paths.
    refine : bool, default=False
        As in :class:`NadarayaWatsonRegressorCV`: a bounded continuous search
        of the log-bandwidth after the grid.
    metric : str or callable, default="euclidean"
        As in :class:`LocalLinearRegressor`.
    {metric_params}
    empty_window : {"nearest", "mean", "nan", "raise"}, default="nearest"
        As in :class:`NadarayaWatsonRegressorCV`, for windows that are empty
        once a point is left out: ``"nearest"`` and ``"mean"`` score the
        fallback estimate; ``"nan"`` and ``"raise"`` score NaN, which ranks a
        candidate last.
    min_eigenvalue : float, default=1e-8
        As in :class:`LocalLinearRegressor`. Left-out points whose local
        design is singular are scored with the local-constant estimate, as
        they would be predicted (without a warning during the search).
    max_leverage : float or None, default=100.0
        As in :class:`LocalLinearRegressor`, for the cross-validation passes
        (each left-out point's fit ridged as its refit would be) and the
        predictions.
    noise_variance : {"local", "global"} or float, default="local"
        As in :class:`LocalLinearRegressor`, with the selected kernel and
        bandwidth.
    algorithm : {"auto", "fgt", "sorted", "binned", "tree", "tiles", "brute"}
        Default ``"auto"``. As in :class:`LocalLinearRegressor`, for
        predictions and the cross-validation passes. ``"binned"``: the
        moments about each left-out point are binned, and each out-of-sample
        estimate they give is within ``binned_tol`` times the range of the
        targets of the exact one (approximate scores); the points beyond
        that bound, and the in-sample criteria, take exact sums. A bandwidth
        too small for the grid scores NaN.
    binned_tol : float, default=1e-6
        As in :class:`LocalLinearRegressor`.
    n_jobs : int, default=None
        As in :class:`NadarayaWatsonRegressorCV`: parallel workers for the
        cross-validation passes and for predictions.
    categorical_features : "from_dtype", None or array-like, default="from_dtype"
        As in :class:`LocalLinearRegressor`.
    ordered_features : None or array-like, default=None
        As in :class:`LocalLinearRegressor`.
    categorical_kernel : {"aitchison_aitken", "li_racine"}, default="aitchison_aitken"
        As in :class:`LocalLinearRegressor`.
    ordered_kernel : {"wang_ryzin", "li_racine"}, default="wang_ryzin"
        As in :class:`LocalLinearRegressor`; the smoothing parameters are
        searched as by :class:`NadarayaWatsonRegressorCV`.

    {spans}

    Attributes
    ----------
    kernel_ : Kernel
        The selected kernel.
    bandwidth_ : float or ndarray of shape (n_features,)
        The selected bandwidth (its size polished between grid neighbours,
        as in :class:`NadarayaWatsonRegressorCV`).
    span_ : float or None
        The selected span (with ``spans``), else None.
    best_score_ : float
        Cross-validated score of the selected kernel and bandwidth (after the
        polish).
    best_index_ : int
        Index of the selected grid candidate in ``cv_results_``, as in
        :class:`NadarayaWatsonRegressorCV`.
    cv_results_ : dict of ndarrays
        As in :class:`NadarayaWatsonRegressorCV`.
    algorithm_ : {"fgt", "sorted", "binned", "tree", "tiles", "brute"}
        The summation used by predictions.
    metric_ : str or callable
        The metric used: ``metric`` at fit. Predictions read it (and
        ``metric_params_``), so changing ``metric`` takes effect at the next
        fit.
    metric_params_ : dict
        Metric parameters used, including data-dependent defaults.
    X_fit_ : ndarray of shape (n_samples, n_features)
        Training inputs.
    y_fit_ : ndarray of shape (n_samples,) or (n_samples, n_outputs)
        Training targets.
    sample_weight_ : ndarray of shape (n_samples,) or None
        Training sample weights.
    noise_variance_ : ndarray of shape (n_outputs,) or None
        As in :class:`LocalLinearRegressor`.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit; only defined when ``X`` has feature
        names that are all strings.
    feature_types_ : ndarray of shape (`n_features_in_`,)
        ``"continuous"``, ``"unordered"`` or ``"ordered"`` for each feature.
    categories_ : list of (ndarray or None)
        The levels of each discrete feature learned at fit, None for the
        continuous ones.

    See Also
    --------
    LocalLinearRegressor : The estimator with a fixed kernel and bandwidth.
    NadarayaWatsonRegressorCV : The same selection for the local-constant
        estimate.

    Notes
    -----
    The leave-one-out estimate at :math:`x_i` is the intercept of the
    kernel-weighted least-squares fit at :math:`x_i` to the other points: the
    moments of :class:`LocalLinearRegressor` (Notes) with point :math:`i`'s
    term (its whole row, see :class:`NadarayaWatsonRegressorCV`) left out of
    every sum. Each candidate costs one kernel evaluation per pair, and one
    small linear system per point.

    Examples
    --------
    >>> import numpy as np
    >>> from sknw import LocalLinearRegressorCV
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0, 3, (200, 1))
    >>> y = 2 * X[:, 0] + np.sin(3 * X[:, 0]) + rng.normal(0, 0.3, 200)
    >>> reg = LocalLinearRegressorCV(kernels=["gaussian", "epanechnikov"])
    >>> reg = reg.fit(X, y)
    >>> reg.kernel_, reg.bandwidth_.round(3)
    (Epanechnikov(), array([0.222]))
    >>> len(reg.cv_results_["mean_test_score"])
    60
    """

    _parameter_constraints = cv_parameter_constraints(
        LocalLinearRegressor._parameter_constraints,
        set(KERNELS),
        LocalPolynomialFit._algorithms,
    )

    def _plain_estimator(self, **params):
        return LocalLinearRegressor(**params)
