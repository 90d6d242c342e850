"""The local polynomial fits that the local linear and polynomial estimators
share (:class:`LocalPolynomialFit`): moments in frames near each query, their
solution, the fast paths of one feature, standard errors and gradients."""

import warnings
from dataclasses import dataclass
from functools import partial
from math import comb
from numbers import Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from .._bandwidth.span import feature_bandwidths
from .._base import NadarayaWatsonBase, _merge_warnings, _tile_elements
from .._regression import RegressionBase
from .._smoother import FittedSmoother
from .._sums import BACKENDS, Head, local_moments, power_of_two_scale
from .._sums._base import head_rows, nan_rows, working_elements
from .._trace import record, tracing
from ..exceptions import (
    RidgedDesignWarning,
    SingularDesignWarning,
    UndefinedDistanceError,
    warn,
)
from ..kernels import Boxcar
from .frame import (
    MAX_RECENTRINGS,
    LocalFrame,
    Moments,
    frame_batches,
    local_solution,
    moment_columns,
    monomial_terms,
    monomials,
    outer,
    query_centred_fit,
    row_groups,
    symmetric,
)
from .gradient import empty_gradient, local_constant_gradient
from .passes import EXACT_ALGORITHMS, LOCAL_ALGORITHMS, LocalPasses, moment_targets
from .query_poly import query_centred_poly_fit
from .uncertainty import LocalFit, SquaredWeights

_EPS = np.finfo(np.float64).eps


#: The warnings of the local designs (counts in their attributes).
_RIDGED = (
    "Some queries have a local design of leverage above max_leverage (few "
    "points in their window, or a query beyond them): their slopes are ridged "
    "towards the local-constant fit."
)
_SINGULAR = (
    "Some queries have a singular local design (too few or collinear training "
    "points in their window); they get the local-constant estimate."
)
#: What the singular-design warning adds where the features themselves are
#: collinear with the intercept (:func:`collinear_with_intercept`).
_COLLINEAR = (
    " The training features are collinear with the intercept (such as one-hot "
    "columns that sum to 1, or a constant column), so every local design is "
    "singular: drop one column of each one-hot group "
    "(OneHotEncoder(drop='first')), or declare such columns in "
    "categorical_features."
)

#: Training rows (evenly spaced) that :func:`collinear_with_intercept` checks.
COLLINEAR_ROWS = 2000


def collinear_with_intercept(X, w=None):
    """Whether the continuous training features ``X`` (rows of positive
    weight ``w``) and an intercept are linearly dependent, to within 1e-10
    of their scale (checked on up to :data:`COLLINEAR_ROWS` rows): one-hot
    columns that sum to 1, a constant or a repeated column. Every local
    linear design inherits such a dependency."""
    rows = X if w is None else X[w > 0]
    if rows.shape[0] > COLLINEAR_ROWS:
        rows = rows[np.linspace(0, rows.shape[0] - 1, COLLINEAR_ROWS).astype(np.intp)]
    if not rows.shape[1] or rows.shape[0] <= rows.shape[1] + 1:
        return False
    Z = rows - rows.mean(axis=0)
    top = np.max(np.abs(Z), axis=0)
    Z = Z / np.where(top > 0, top, 1.0)
    s = np.linalg.svd(Z, compute_uv=False)
    return bool(s[-1] <= 1e-10 * max(s[0], np.finfo(np.float64).tiny))


class LocalPolynomialFit(RegressionBase):
    """The local polynomial fits of :class:`LocalLinearRegressor` and
    :class:`~sknw.LocalPolynomialRegressor` (of degree :meth:`_degree`): the
    moments of the monomials of the continuous features about a centre near
    each query, summed by the core, and the least-squares solve from them."""

    # The local fit sums moments of its own (the sorted, fgt and binned
    # indexes hold the targets only); binned within ``binned_tol``.
    _algorithms = LOCAL_ALGORITHMS

    # The local fits' other sums (the exact path, standard errors) are
    # exact: an approximate backend (binned) serves the moments about each
    # query only, whose fits are checked against its tolerance.
    _exact_sums = True

    def _search_passes(self, smoothing):
        """The passes of a search of this estimator's candidates
        (:class:`~sknw._local.passes.LocalPasses`): local fits of the fitted
        degree, ``min_eigenvalue`` and ``max_leverage``, whose exact path is
        this estimator's plain one (on the encoded data: discrete features
        by their columns)."""
        settings, discrete = self._settings, {}
        if self._discrete is not None:
            discrete = self._discrete.as_params(
                self.categorical_kernel, self.ordered_kernel
            )
        plain = partial(
            self._plain_class(),
            metric=self.metric,
            metric_params=self.metric_params,
            min_eigenvalue=settings.min_eigenvalue,
            max_leverage=settings.max_leverage,
            algorithm="brute",
            n_jobs=self.n_jobs,
            **discrete,
        )
        return LocalPasses(
            smoothing=smoothing,
            degree=self._degree(),
            min_eigenvalue=settings.min_eigenvalue,
            max_leverage=settings.max_leverage,
            plain=plain,
        )

    @property
    def _local_powers(self):
        # The moments about each query of a local fit of degree p: up to 2 p.
        return 2 * self._degree()

    _parameter_constraints = {
        **RegressionBase._parameter_constraints,
        "algorithm": [StrOptions(set(_algorithms))],
        "min_eigenvalue": [Interval(Real, 0, 1, closed="both")],
        "max_leverage": [Interval(Real, 1, None, closed="neither"), None],
    }

    def __init__(
        self,
        *,
        kernel="gaussian",
        bandwidth="cv",
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
        span=None,
        robust_iterations=0,
    ):
        NadarayaWatsonBase.__init__(
            self,
            kernel=kernel,
            bandwidth=bandwidth,
            metric=metric,
            metric_params=metric_params,
            empty_window=empty_window,
            algorithm=algorithm,
            n_jobs=n_jobs,
            span=span,
        )
        self.robust_iterations = robust_iterations
        self.noise_variance = noise_variance
        self.binned_tol = binned_tol
        self.min_eigenvalue = min_eigenvalue
        self.max_leverage = max_leverage
        self.categorical_features = categorical_features
        self.ordered_features = ordered_features
        self.categorical_kernel = categorical_kernel
        self.ordered_kernel = ordered_kernel

    # The local least-squares solves amplify the rounding of the moments: they
    # are summed in float64 whatever the input dtype.
    _float32_sums = False
    # The local fits hold about a hundred numbers per query while they solve:
    # smaller batches.
    _MIN_BATCH_ROWS = 1 << 13

    def _query_width(self):
        # The moments of the monomials and the local solve's matrices.
        d = (
            self.n_features_in_
            if self._discrete is None
            else len(self._discrete.continuous)
        )
        terms = len(monomial_terms(d, self._degree()))
        k = 1 if self.y_fit_.ndim == 1 else self.y_fit_.shape[1]
        return super()._query_width() + 4 * (terms * (terms + k) + k) + 3 * terms**2

    #: Whether the estimator takes ``degree`` (the local polynomial
    #: regressors, whose fitted degree is ``degree_``); else it fits lines.
    _takes_degree = False

    def _degree(self):
        """The degree of the local fits: 1, or ``degree_`` where the
        estimator takes ``degree`` (the parameter before fit)."""
        if not self._takes_degree:
            return 1
        return getattr(self, "degree_", self.degree)

    def _resolve_metric_params(self, X, sample_weight):
        # The first step of every fit: the degree the training points support.
        if self._takes_degree:
            self.degree_ = self._supported_degree(X, sample_weight)
        return super()._resolve_metric_params(X, sample_weight)

    def _supported_degree(self, X, sample_weight):
        """The largest degree up to ``degree`` whose coefficients (the
        intercept and the monomials of the continuous features) the training
        points of positive weight can determine; a warning where it is
        lower."""
        discrete = self._discrete
        d = X.shape[1] if discrete is None else len(discrete.continuous)
        n = X.shape[0] if sample_weight is None else int(np.sum(sample_weight > 0))
        asked = degree = self.degree
        while degree > 0 and comb(d + degree, degree) > n:
            degree -= 1
        if degree < asked:
            warn(
                f"degree={asked} has {comb(d + asked, asked)} "
                f"coefficients with {d} continuous features, more than the {n} "
                f"training points: the local fits are of degree {degree} "
                "(degree_).",
                SingularDesignWarning,
            )
        return degree

    def _fit_algorithms(self):
        """The backends ``algorithm`` may resolve to for the fitted degree."""
        degree = self._degree()
        if degree >= 1:
            return self._algorithms
        if self.algorithm not in EXACT_ALGORITHMS:
            raise ValueError(
                f"algorithm={self.algorithm!r} sums the moments of local fits of "
                f"degree 1 and above; degree={degree} takes the exact sums: use one of "
                f"{', '.join(EXACT_ALGORITHMS)}."
            )
        return EXACT_ALGORITHMS

    def _check_discrete(self):
        if not self._discrete.continuous:
            n = self._discrete.n_features
            raise ValueError(
                f"{type(self).__name__} fits a local polynomial in the "
                f"continuous features, but got {n} feature(s), all discrete: "
                "with discrete features only, the fit is local constant; use "
                "NadarayaWatsonRegressor."
            )

    def _moment_targets(self):
        """The targets of the moments about each query (see
        :func:`~sknw._local.passes.moment_targets`), the normalised weights, and
        ``(mid, y_scale, spread)``."""
        w = self.sample_weight_
        V, mid, y_scale, spread = moment_targets(self._values(), w)
        wn = None if w is None else w / power_of_two_scale(w)
        return V, wn, (mid, y_scale, spread)

    def _index_values(self, smoother):
        """The targets the moments about each query sum, and the normalised
        weights (see :meth:`_moment_targets`)."""
        V, w, _ = self._moment_targets()
        return V, w

    def _local_fits(self, frame):
        """The local polynomial fits of the predictions
        (:class:`LocalPolynomialFits`), with the targets of the moments
        about each query where the fitted backend sums them."""
        settings, w = self._settings, self.sample_weight_
        targets = None
        if BACKENDS[self.algorithm_].local_moments:
            targets = self._moment_targets()
        Xc = np.asarray(self._continuous(self.X_fit_), dtype=np.float64)
        return LocalPolynomialFits(
            smoother=self._smoother,
            values=self._values(),
            frame=frame,
            degree=self._degree(),
            targets=targets,
            min_eigenvalue=settings.min_eigenvalue,
            max_leverage=settings.max_leverage,
            collinear=collinear_with_intercept(Xc, w),
        )


@dataclass(frozen=True, kw_only=True)
class LocalPolynomialFits:
    """The local polynomial fits over a fitted smoother: the moments of the
    monomials of the continuous features about a centre near each query,
    summed by the core, and the least-squares solve from them.

    ``smoother``: the :class:`~sknw._smoother.FittedSmoother`; ``values``:
    the targets as columns; ``frame``: the cells the fits take their sums
    about (:class:`~sknw._local.frame.LocalFrame`); ``degree``,
    ``min_eigenvalue`` and ``max_leverage``: the fits'; ``targets``: those
    of the moments about each query where the fitted backend sums them
    (None: the exact path); ``collinear``: whether fit found the continuous
    features collinear with the intercept
    (:func:`collinear_with_intercept`)."""

    smoother: FittedSmoother
    values: np.ndarray
    frame: LocalFrame
    degree: int
    targets: tuple | None = None
    min_eigenvalue: float = 1e-8
    max_leverage: float | None = 100.0
    collinear: bool = False

    def estimate(self, Q):
        """The estimates at the validated queries ``Q``."""
        return self.local_fit(Q, with_std=False).estimate

    @property
    def singular(self):
        """The message of the singular-design warning, with the hint of
        collinear features where fit found them."""
        return _SINGULAR + (_COLLINEAR if self.collinear else "")

    def local_fit(self, Q, with_std=True):
        """The local fit at the validated queries ``Q``, and with
        ``with_std`` its weight sums.

        Estimates alone come from the moments about each query where the
        fitted backend sums them (:meth:`query_centred`) and their bound
        serves; every other query takes the exact path
        (:meth:`exact_local_fit`).
        """
        fast = None if with_std else self.query_centred(Q)
        if fast is None:
            return self.exact_local_fit(Q, with_std)
        if self.smoother.empty_window == "raise" and fast.empty.any():
            # Counted among all the queries (the exact path sees the rest).
            raise self.smoother.empty_error(fast.empty)
        rest = np.flatnonzero(~fast.served)
        estimate = fast.estimate
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if rest.size:
                estimate[rest] = self.exact_local_fit(Q[rest], False).estimate
            m = Q.shape[0]
            n_few = int(fast.singular.sum())
            if n_few:
                warn(
                    self.singular, SingularDesignWarning, n_affected=n_few, n_queries=m
                )
            n_ridged = 0 if fast.ridged is None else int(fast.ridged.sum())
            if n_ridged:
                warn(_RIDGED, RidgedDesignWarning, n_affected=n_ridged, n_queries=m)
        _merge_warnings(caught, Q.shape[0])
        return LocalFit(estimate, *([None] * 8))

    def query_centred(self, Q):
        """:class:`~sknw._local.frame.QueryCentredFit` from the moments about
        each query by the fitted backend (one feature: sorted, fgt), or None
        where it does not sum them. Each fit is recorded
        (``query_centred_fit``: ``degree``, ``n_queries``, ``n_served``, and
        ``exact`` for the moments term by term of the queries beyond the
        bound)."""
        if self.targets is None:
            return None
        V, w, (mid, y_scale, spread) = self.targets
        (head,) = self.smoother.span_heads(Q, [self.smoother.head()])
        params = {
            "metric": self.smoother.metric,
            "metric_params": self.smoother.metric_params,
            "scale": self.smoother.scale(),
            "sample_weight": w,
            "tile_elements": _tile_elements(),
            "n_jobs": self.smoother.n_jobs,
        }
        p = self.degree
        moments = local_moments(
            self.smoother.algorithm,
            self.smoother.index,
            Q,
            self.smoother.X,
            V,
            head,
            2 * p,
            **params,
        )
        if moments is None:
            return None
        n_positive = V.shape[0] if w is None else int(np.sum(w > 0))

        # Binned moments: estimates within the tolerance fitted with the index
        # (binned_tol at fit; the index of an approximate backend is it).
        approximate = BACKENDS[self.smoother.algorithm].tolerance
        tol = {"tolerance": self.smoother.index if approximate else None}

        def fit_of(moments):
            if p == 1:
                return query_centred_fit(
                    moments,
                    spread / 2,
                    spread,
                    self.min_eigenvalue,
                    n_positive,
                    max_leverage=self.max_leverage,
                    **tol,
                )
            return query_centred_poly_fit(
                moments,
                p,
                spread / 2,
                spread,
                self.min_eigenvalue,
                n_positive,
                max_leverage=self.max_leverage,
                **tol,
            )

        fit = fit_of(moments)
        record(
            "query_centred_fit",
            degree=p,
            n_queries=Q.shape[0],
            n_served=int(np.count_nonzero(fit.served)),
            exact=False,
        )
        counts = moments.counts
        # Queries beyond the expansion's bound (but for it served): their
        # moments term by term over their windows, where the backend sums them.
        redo = ~fit.served & np.all(np.isfinite(fit.error), axis=1)
        if counts is not None:
            redo &= counts > 0
        if redo.any():
            rows = np.flatnonzero(redo)
            exact = local_moments(
                self.smoother.algorithm,
                self.smoother.index,
                Q[rows],
                self.smoother.X,
                V,
                head_rows(head, rows),
                2 * p,
                exact=True,
                **params,
            )
            if exact is not None:
                exact.counts = None if counts is None else counts[rows]
                again = fit_of(exact)
                record(
                    "query_centred_fit",
                    degree=p,
                    n_queries=rows.size,
                    n_served=int(np.count_nonzero(again.served)),
                    exact=True,
                )
                for name in ("estimate", "served", "singular", "error", "ridged"):
                    if getattr(fit, name) is not None:
                        getattr(fit, name)[rows] = getattr(again, name)
        fit.estimate = (fit.estimate + mid) * y_scale
        fit.empty = np.zeros(Q.shape[0], dtype=bool) if counts is None else counts == 0
        return fit

    def exact_local_fit(self, Q, with_std, own=None, centres=None):
        """The local fit by the exact path: moments about a centre near each
        query's window (see :meth:`_local_moments`), of the targets divided
        by a power of two per output, minus a level near the query. ``own``:
        the queries are these training points, each left out of its own fit
        (leave-one-out, without ``with_std``). ``centres``: where each
        query's first frame is (one feature; NaN: its cell's centre)."""
        y = self.values
        y_scale = power_of_two_scale(y, axis=0)
        counts = self.window_counts(Q, own)
        mom, sol, cols = self._local_moments(
            Q, y / y_scale, counts, with_std, own, centres
        )
        self._warn_designs(sol, counts)
        estimate = (sol.estimate + mom.level) * y_scale
        if not with_std:
            return LocalFit(estimate, *([None] * 8))
        return LocalFit(estimate, *self._std_terms(mom, sol, cols), y_scale)

    def _warn_designs(self, sol, counts):
        """Warn of the singular and the ridged local designs among the
        queries of the solution ``sol`` (empty windows are counted by the
        empty-window warning)."""
        m = counts.shape[0]
        n_singular = int((sol.finite & ~sol.ok & (counts > 0)).sum())
        if n_singular:
            message = self.singular
            warn(message, SingularDesignWarning, n_affected=n_singular, n_queries=m)
        n_ridged = int(sol.ridged.sum())
        if n_ridged:
            warn(_RIDGED, RidgedDesignWarning, n_affected=n_ridged, n_queries=m)

    def gradient_rows(self, Q):
        """The slopes of the local fits at the validated queries ``Q``, in
        the continuous features (m, k, d), by the exact path. Singular
        designs, whose estimate is the local-constant one, take its
        gradient; empty windows that of their ``empty_window`` estimate."""
        if not self.degree:  # the local-constant fit
            return local_constant_gradient(self.smoother, self.values, self.frame, Q)
        y = self.values
        y_scale = power_of_two_scale(y, axis=0)
        counts = self.window_counts(Q)
        mom, sol, _ = self._local_moments(Q, y / y_scale, counts, False)
        self._warn_designs(sol, counts)
        m, k, frame = Q.shape[0], y.shape[1], self.frame
        d = frame.lo.size
        grad = np.zeros((m, k, d))
        ok = sol.ok
        if ok.any() and sol.basis is not None:
            # The linear coefficients of the polynomial in the offsets from
            # the query in bandwidth units.
            coef = np.linalg.solve(sol.cov[ok], sol.cross[ok])[:, :d, :]
            bw = self.query_bandwidths(Q)[ok]
            grad[ok] = np.swapaxes(coef, 1, 2) / bw[:, None, :]
        elif ok.any():  # degree 1: the slopes in the query's frame
            slope = np.linalg.solve(sol.cov[ok], sol.cross[ok])  # (m, d, k)
            # z = ((x - c) / unit * to_bandwidth) @ R: dz / dx = diag(t / unit) R.
            t = frame.to_bandwidth / frame.unit
            grad[ok] = np.einsum("mfe,mek->mkf", mom.R[ok], slope) * t
        grad *= np.reshape(y_scale, (1, -1, 1))
        # The fallbacks are in the units of the targets already.
        constant = ~ok & (counts > 0)
        if constant.any():
            # With a span, the local-constant derivative is not available.
            grad[constant] = (
                np.nan
                if self.smoother.span is not None
                else local_constant_gradient(
                    self.smoother, self.values, self.frame, Q[constant]
                )
            )
        empty = counts == 0
        if empty.any():
            # The moments of these queries applied the empty-window policy.
            grad[empty] = empty_gradient(self.smoother, empty, warned=True)
        return grad

    def query_bandwidths(self, Q, own=None):
        """Each query's bandwidth in the continuous features, (m, d): the
        fitted one or, with a span, its nearest-neighbour bandwidth (the
        features' scale times the query's divisor: the fixed bandwidth that
        weighs its window alike), the unit of its monomials of degree 2 and
        above, so that their ridge and singular test are those of a fit at
        that bandwidth. ``own``: leave-one-out (see
        :meth:`~sknw._smoother.FittedSmoother.span_heads`)."""
        d = self.frame.lo.size
        if self.smoother.span is None:
            return np.broadcast_to(
                self.smoother.continuous_bandwidth(), (Q.shape[0], d)
            )
        unit = Head(self.smoother.kernel, self.smoother.scaling.divisor)
        (head,) = self.smoother.span_heads(Q, [unit], own)
        return feature_bandwidths(self.smoother.scale(), head.divisor, d)

    def _local_moments(self, Q, yn, counts, with_std, own=None, centres=None):
        """Moments at every query and their local solution.

        A first pass takes each query's moments about the centre of its cell
        (:meth:`LocalFrame.cell_centres`), or about ``centres`` where given
        (its window's mean, as a fast path found it); queries whose window
        mean is far from that centre for the spread of their window (an
        extrapolating query, a one-sided window) take them again about that
        mean (rounded), and those whose window is thin across the features
        in its principal axes (:meth:`LocalFrame.recentred`), so that the
        local covariance, a difference of moments, loses few digits to
        cancellation. Every frame depends on the query alone (and the fitted
        state, and its given centre): a query's answer does not depend on
        the other queries of its batch. Empty windows take the
        ``empty_window`` policy, as the smoother's weighted averages do. The first
        frames' centres are recorded (``first_frames``: ``centres``).
        """
        Q64 = np.asarray(self.smoother.continuous(Q), dtype=np.float64)
        frame, d, k, p = self.frame, Q64.shape[1], yn.shape[1], self.degree
        # A local polynomial of degree p has a coefficient per monomial (and
        # the intercept).
        n_terms = len(monomial_terms(d, p))
        few = counts < n_terms + 1
        cols = moment_columns(np.zeros((1, d)), np.zeros((1, k)), with_std, p)[1]
        start = frame.cell_centres(Q64)
        if centres is not None:  # placed in the box; NaN: the cell's centre
            start = frame.place(np.reshape(centres, start.shape), start)
        if tracing():
            record("first_frames", centres=start.copy())
        mom = Moments.allocate(start, cols[-1], k, with_std)
        empty = counts == 0
        if empty.any():
            A, level, *sq = self._empty_moments(Q, empty, yn, with_std, own)
            mom.put(empty, A, *sq, level=level)

        bandwidths = self.query_bandwidths(Q, own) if p > 1 else None

        def solve(rows):
            z = frame.coordinates(Q64[rows], mom.C[rows], mom.R[rows])
            basis = scale = None
            if p > 1:  # solved about the query (see local_solution)
                bandwidth = bandwidths[rows]
                basis, scale = frame.query_frame(bandwidth, mom.R[rows], p)
            return local_solution(
                mom.A[rows],
                cols,
                n_terms,
                k,
                monomials(z, p),
                self.min_eigenvalue,
                few=few[rows],
                max_leverage=self.max_leverage,
                linear=d,
                basis=basis,
                degree=p,
                to_bandwidth=scale,
            )

        rows = np.flatnonzero(~empty)
        for attempt in range(MAX_RECENTRINGS + 1):
            self._moments(Q, rows, yn, with_std, mom, own)
            if attempt == MAX_RECENTRINGS or not n_terms:
                break
            C, R, again = frame.recentred(
                solve(rows), mom.C[rows], mom.R[rows], few[rows]
            )
            mom.C[rows], mom.R[rows] = C, R
            rows = rows[again]
            if not rows.size:
                break
        return mom, solve(slice(None)), cols

    def _moments(self, Q, rows, yn, with_std, mom, own=None):
        """Set the moments of the queries ``rows`` in their frames (``mom.C``
        and ``mom.R``), one pass over the training points per distinct frame
        or per batch of frames of few queries (:func:`frame_batches`), each
        pass recorded (``frame_pass``: ``n_frames``, ``n_queries``).
        Queries with an undefined distance are named among all of ``Q``."""
        if not rows.size:
            return
        d = mom.C.shape[1]
        frames = np.hstack([mom.C[rows], mom.R[rows].reshape(-1, d * d) + 0.0])
        frames, groups = row_groups(frames)
        groups = [rows[g] for g in groups]
        # Without squared weights, frames of few queries share a pass (their
        # columns side by side, taken from their points stacked, and their
        # normalised copy: four such arrays within the working memory); each
        # frame's own pass otherwise.
        c, n = mom.A.shape[1], self.smoother.X.shape[0]
        batches = [[f] for f in range(len(groups))]
        if not with_std:
            sizes = [g.size for g in groups]
            batches = frame_batches(sizes, c, n, working_elements() // 4)
        try:
            for batch in batches:
                V, levels = self._moment_values(
                    frames[batch, :d],
                    frames[batch, d:].reshape(-1, d, d),
                    yn,
                    with_std,
                )
                group = np.concatenate([groups[f] for f in batch])
                record("frame_pass", n_frames=len(batch), n_queries=group.size)
                got = self.smoother.weighted_average(
                    Q[group],
                    V,
                    squared=with_std,
                    own=None if own is None else own[group],
                )
                if with_std:
                    mom.put(group, *got, level=levels[0])
                    continue
                a = 0
                for j, f in enumerate(batch):
                    size = groups[f].size
                    block = got[a : a + size, j * c : (j + 1) * c]
                    mom.put(groups[f], block, level=levels[j])
                    a += size
        except UndefinedDistanceError:
            Qc, Xc = (
                self.smoother.continuous(Q),
                self.smoother.continuous(self.smoother.X),
            )
            raise nan_rows(
                Qc,
                Xc,
                self.smoother.metric,
                self.smoother.metric_params,
                self.smoother.scale(),
            ) from None

    def _moment_values(self, centres, rotations, yn, with_std):
        """Per-point moments (:func:`moment_columns`) of the coordinates in
        the frames of ``centres`` (f, d) and ``rotations`` (f, d, d) and of
        the targets ``yn`` minus each frame's level: the target of the
        training point nearest to its centre (in bandwidth units). The
        frames' columns side by side, ``(n, f c)``, from one call over their
        points stacked (several frames of few queries cost little more than
        one), and the levels ``(f, k)``."""
        X = np.asarray(self.smoother.continuous(self.smoother.X), dtype=np.float64)
        Z = np.stack(
            [
                self.frame.coordinates(X, centre, rotation)
                for centre, rotation in zip(centres, rotations, strict=True)
            ]
        )
        levels = yn[np.argmin(np.einsum("fij,fij->fi", Z, Z), axis=1)]
        f, n, d = Z.shape
        V = moment_columns(
            Z.reshape(f * n, d),
            (yn[None] - levels[:, None]).reshape(f * n, -1),
            with_std,
            self.degree,
        )[0]
        return V.reshape(f, n, -1).transpose(1, 0, 2).reshape(n, -1), levels

    def _empty_moments(self, Q, empty, yn, with_std, own=None):
        """Moments of the queries ``Q[empty]``, whose window is empty, by the
        ``empty_window`` policy (its warning counts them among all queries),
        as the smoother's weighted averages give them."""
        d = self.frame.lo.size
        V, (level,) = self._moment_values(
            self.frame.lo[None], np.eye(d)[None], yn, with_std
        )
        if with_std:
            w0 = self.smoother.sample_weight
            recip = np.ones(V.shape[0])
            if w0 is not None:
                with np.errstate(divide="ignore", over="ignore"):
                    recip = np.where(w0 > 0, 1.0 / np.where(w0 > 0, w0, 1.0), 0.0)
            V = np.hstack([V, recip[:, None]])
        Vn, w, column_scale = self.smoother.normalised(V)
        A = np.empty((int(empty.sum()), V.shape[1]))
        mine = None if own is None else own[empty]
        A[:] = self.smoother.empty_values(Q[empty], Vn, empty, w, own=mine)
        A *= column_scale
        if not with_std:
            return A, level
        # Compact kernels only (others have no empty window): undefined.
        m, nan = A.shape[0], np.full(A.shape[0], np.nan)
        undefined = np.ones(m, dtype=bool)
        sq = SquaredWeights(A[:, :-1] * np.nan, nan, nan, undefined, A[:, -1])
        return A[:, :-1], level, sq

    def _std_terms(self, mom, sol, cols):
        """What the standard errors need besides the estimate (see
        :class:`~sknw._local.uncertainty.LocalFit`), from the same local solution:
        ``rss, second, spread, dof, inverse_weight, leverage, undefined``."""
        A, sq, d = mom.A, mom.sq, sol.mean_z.shape[1]
        mean_y, mean_z, cov, cross = sol.mean_y, sol.mean_z, sol.cov, sol.cross
        a, ok = sol.a, sol.ok
        # Residual mean square of the weighted least-squares fit in the window.
        second = A[:, cols[4] : cols[5]]
        rss = second - mean_y * mean_y
        if ok.any():
            slope = np.linalg.solve(cov[ok], cross[ok])  # (m, d, k)
            rss[ok] -= np.einsum("mdk,mdk->mk", cross[ok], slope)
            # A ridged slope b fits worse than least squares by b' D b.
            rss[ok] -= np.einsum("md,mdk->mk", sol.ridge[ok], slope * slope)
        # Squared-weight moments about the local mean: s0, s1 and S2.
        s0 = sq.total
        m1 = sq.average[:, cols[1] : cols[2]]
        m2 = symmetric(sq.average[:, cols[3] : cols[4]], d)
        s1 = m1 - s0[:, None] * mean_z
        S2 = (
            m2
            - outer(mean_z, m1)
            - outer(m1, mean_z)
            + s0[:, None, None] * outer(mean_z, mean_z)
        )
        if sol.basis is not None:  # in the basis of the solution
            T = sol.basis
            with np.errstate(invalid="ignore", over="ignore"):
                s1 = np.einsum("mab,mb->ma", T, s1)
                S2 = T @ S2 @ np.swapaxes(T, 1, 2)
        spread = s0.copy()
        dof = s0.copy()
        leverage = sq.self_weight.copy()
        if ok.any():
            ao, So, Co = a[ok], S2[ok], cov[ok]
            spread[ok] += -2.0 * np.einsum("md,md->m", ao, s1[ok]) + np.einsum(
                "md,mde,me->m", ao, So, ao
            )
            dof[ok] += np.trace(np.linalg.solve(Co, So), axis1=1, axis2=2)
            leverage[ok] *= 1.0 + np.einsum("md,mde,me->m", ao, Co, ao)
        return rss, second, spread, dof, sq.inverse_weight, leverage, sq.undefined

    def window_counts(self, Q, own=None):
        """Training points of positive weight with a non-zero kernel weight.

        For a compact kernel, one boxcar pass over the support (``u < 1``,
        where the compact kernels are positive); every point otherwise.
        ``own``: leave-one-out counts of these training points, each
        without itself.
        """
        w = self.smoother.sample_weight
        positive = np.ones(self.smoother.X.shape[0]) if w is None else 1.0 * (w > 0)
        stays = None if own is None else np.zeros(own.size)
        head = self.smoother.head()
        unbounded = not np.isfinite(head.kernel.support)
        if unbounded and self.smoother.discrete is None:
            total = np.full(Q.shape[0], positive.sum())
            return total if own is None else total - positive[own] + stays
        if unbounded:  # every point of a positive discrete factor
            window = Head(Boxcar(), np.finfo(np.float64).max)
        else:
            window = Head(Boxcar(), head.divisor * head.kernel.support)
        if self.smoother.discrete is not None:  # where the factors are positive
            window = head.with_head(window, power=0)
        ((S, _, M),) = self.smoother.kernel_sums(
            Q, positive[:, None], None, [window], own
        )
        # The boxcar's log weight is 0 inside: the shifted sum is the count.
        counts = np.where(np.isfinite(M), S[:, 0], 0.0)
        return counts if own is None else counts + stays
