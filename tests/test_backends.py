"""Every backend of the core against brute-force sums from the definitions.

For queries ``Q``, training points ``X`` with weights ``w`` and values ``V``,
a head ``(K, h)`` has the sums ``sum_j K(d_ij / h) w_j V_j`` and
``sum_j K(d_ij / h) w_j``; every backend returns them as ``(S, den, M)``, shifted
by ``exp(M)``. The references below are computed from that definition alone
(``cdist`` and the kernel's ``__call__``), and each backend is held to its own
documented tolerance: the dense, tree and sorted backends are exact up to
rounding, the fast Gauss transform is within its relative tolerance, and the
binned one has each ratio ``S / den`` within ``tol`` times the range of the
values.
"""

from dataclasses import replace
from math import gamma, pi

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from sknw import NadarayaWatsonRegressor
from sknw._sums import (
    ALGORITHMS,
    AUTO_MIN_SAMPLES,
    BACKENDS,
    DENSE,
    Backend,
    FitRequest,
    Head,
    _fgt,
    _tiles,
    _tree,
    algorithms,
    backend_sums,
    check,
    choose,
    local_moments,
)
from sknw._trace import traced
from sknw.kernels import KERNELS, get_kernel


def _first_names():
    first = {}
    for name, cls in KERNELS.items():
        first.setdefault(cls, name)
    return tuple(first.values())


#: One name per kernel class of the registry (its first, not the aliases).
KERNEL_NAMES = _first_names()
#: Numbers of features: one, and several where a backend allows them.
N_FEATURES = (1, 3)
#: The binned backend's tolerance (on the ratios, relative to the value range).
BINNED_TOL = 1e-6
#: What a backend needs in its FitRequest beyond the data.
FIT_PARAMS = {"binned": {"tolerance": BINNED_TOL}}
#: Rounding allowed for the backends that are exact up to rounding, relative
#: to the sums of the magnitudes of the terms.
EXACT_RTOL = 1e-10
#: Rounding of the references themselves, relative to their magnitudes.
REFERENCE_RTOL = 1e-13
#: Bandwidth of the test data, per number of features (a few dozen points in
#: a compact window in the bulk of the data).
BANDWIDTH = {1: 0.6, 3: 1.5}
#: The four ways of weighting and valuing the training points.
CASES = ("unweighted", "weighted", "zero_weights", "two_columns")
#: Tile sizes: the default and one that splits the sums into many tiles.
TILES = (None, 1024)


def eligible(name, kernel, d):
    return BACKENDS[name].why_not(get_kernel(kernel), "euclidean", None, d) is None


#: Every (backend, kernel, number of features) the backend declares it serves.
ELIGIBLE = [
    (name, kernel, d)
    for name in BACKENDS
    for kernel in KERNEL_NAMES
    for d in N_FEATURES
    if eligible(name, kernel, d)
]
#: Every pair it declares it cannot serve.
INELIGIBLE = [
    (name, kernel, d)
    for name in BACKENDS
    for kernel in KERNEL_NAMES
    for d in N_FEATURES
    if not eligible(name, kernel, d)
]
#: One backend per kernel on one feature (a kernel each backend serves).
ONE_FEATURE = [
    (name, next(k for k in KERNEL_NAMES if eligible(name, k, 1)))
    for name in BACKENDS
    if any(eligible(name, k, 1) for k in KERNEL_NAMES)
]


def make_data(d, case, seed=0, n=300, m=90):
    """Training points on [0, 6]^d, queries on [-1.5, 7.5]^d (beyond the data,
    so that compact kernels have empty windows), values and weights."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 6.0, size=(n, d))
    Q = rng.uniform(-1.5, 7.5, size=(m, d))
    V = np.column_stack([np.sin(X.sum(axis=1)), 3.0 + X[:, 0] ** 2])
    V = V if case == "two_columns" else V[:, :1]
    w = None
    if case == "weighted":
        w = rng.uniform(0.2, 3.0, size=n)
    elif case == "zero_weights":
        w = rng.uniform(0.2, 3.0, size=n)
        w[rng.random(n) < 0.3] = 0.0
        # A region of zero weight only: windows there hold no weight at all.
        w[X[:, 0] > 5.0] = 0.0
    return X, Q, V, w


def brute_force(kernel, h, Q, X, V, w, scale=None, exclude_self=False):
    """``(S, den, |S|, |den|)``: the sums of the definition, and the sums of the
    magnitudes of their terms (the scale of their rounding)."""
    if scale is not None:
        Q, X = Q / scale, X / scale
    K = np.asarray(kernel(cdist(Q, X) / h), dtype=np.float64)
    if exclude_self:
        np.fill_diagonal(K, 0.0)
    Kw = K * (np.ones(X.shape[0]) if w is None else w)
    return Kw @ V, Kw.sum(axis=1), np.abs(Kw) @ np.abs(V), np.abs(Kw).sum(axis=1)


def fit_request(name, X, V, w, head, scale=None, tile_elements=None):
    extra = {} if tile_elements is None else {"tile_elements": tile_elements}
    return FitRequest(
        X=X,
        sample_weight=w,
        values=lambda: (V, w),
        head=head,
        scale=scale,
        metric="euclidean",
        metric_params=None,
        **FIT_PARAMS.get(name, {}),
        **extra,
    )


def sum_params(w, scale=None, tile_elements=None):
    params = {
        "metric": "euclidean",
        "metric_params": None,
        "scale": scale,
        "sample_weight": w,
    }
    if tile_elements is not None:
        params["tile_elements"] = tile_elements
    return params


def positive_range(V, w):
    """Range of each value column over the points of positive weight."""
    Vp = V if w is None else V[w > 0]
    return Vp.max(axis=0) - Vp.min(axis=0)


def assert_within(error, bound, what):
    """Every ``error`` at most its ``bound`` (NaN never is)."""
    error, bound = np.broadcast_arrays(error, bound)
    bad = ~(error <= bound)
    if bad.any():
        worst = np.unravel_index(
            np.argmax(np.where(bad, error - bound, -np.inf)), error.shape
        )
        raise AssertionError(
            f"{what}: {int(bad.sum())} of {error.size} entries beyond the bound; "
            f"at {worst}: error {error[worst]!r}, bound {bound[worst]!r}"
        )


def assert_exact(got, ref, V, w, kernel):
    S, den, M = got
    refS, refden, absS, absden = ref
    shift = np.exp(M)
    # Empty windows (compact kernels, zero weights) are exactly empty.
    empty = absden == 0
    assert np.all(den[empty] == 0) and np.all(S[empty] == 0)
    assert_within(np.abs(den * shift - refden), EXACT_RTOL * absden, "den")
    assert_within(np.abs(S * shift[:, None] - refS), EXACT_RTOL * absS, "S")
    if kernel.nonnegative:
        full = ~empty
        vmax = np.max(np.abs(V if w is None else V[w > 0]), axis=0)
        ratio = S[full] / den[full][:, None]
        expected = refS[full] / refden[full][:, None]
        assert_within(np.abs(ratio - expected), EXACT_RTOL * vmax, "S / den")


def assert_fgt(got, ref, V, w):
    """Each weight sum within the transform's tolerance, relative; the other
    sums within it times the weight sum and the largest |value|."""
    S, den, M = got
    refS, refden, _, _ = ref
    tol = _fgt.TOLERANCE + REFERENCE_RTOL
    shift = np.exp(M)
    assert_within(np.abs(den * shift - refden), tol * refden, "den")
    vmax = np.max(np.abs(V if w is None else V[w > 0]), axis=0)
    bound = tol * refden[:, None] * vmax[None, :]
    assert_within(np.abs(S * shift[:, None] - refS), bound, "S")


def assert_tiles(got, ref, V, w):
    """Each weight sum within the tolerance, relative; the other sums within
    it times the larger of the sum of the magnitudes of their terms and the
    weight sum times the spread of the values."""
    S, den, M = got
    refS, refden, absS, _ = ref
    tol = _tiles.TOLERANCE + REFERENCE_RTOL
    shift = np.exp(M)
    assert_within(np.abs(den * shift - refden), tol * refden, "den")
    slack = np.maximum(absS, refden[:, None] * positive_range(V, w)[None, :])
    assert_within(np.abs(S * shift[:, None] - refS), tol * slack, "S")


def assert_binned(got, ref, V, w):
    """Each ratio within the tolerance times the range of its column."""
    S, den, _ = got
    refS, refden, _, _ = ref
    assert np.all(den > 0)
    bound = (BINNED_TOL + REFERENCE_RTOL) * positive_range(V, w)
    error = np.abs(S / den[:, None] - refS / refden[:, None])
    assert_within(error, bound, "S / den")


def assert_matches(name, got, ref, V, w, kernel):
    """``got`` (one head's triple) against the brute-force ``ref`` within the
    documented tolerance of backend ``name``."""
    S, den, M = got
    m, k = ref[0].shape
    assert S.shape == (m, k) and den.shape == (m,) and M.shape == (m,)
    if name == "fgt":
        assert_fgt(got, ref, V, w)
    elif name == "tiles":
        assert_tiles(got, ref, V, w)
    elif BACKENDS[name].tolerance:
        assert_binned(got, ref, V, w)
    else:
        assert_exact(got, ref, V, w, kernel)


@pytest.mark.parametrize("d", N_FEATURES)
def test_data_have_empty_windows_and_full_ones(d):
    # The references below cover both: compact windows beyond the data or in
    # its zero-weight region are empty, the others not.
    kernel = get_kernel("epanechnikov")
    for case in CASES:
        X, Q, V, w = make_data(d, case, seed=d)
        absden = brute_force(kernel, BANDWIDTH[d], Q, X, V, w)[3]
        assert np.any(absden == 0) and np.mean(absden > 0) > 0.5
    X, Q, V, w = make_data(d, "zero_weights", seed=d)
    K = kernel(cdist(Q, X) / BANDWIDTH[d])
    # Some window holds points, of zero weight only.
    assert np.any((K.sum(axis=1) > 0) & ((K * w).sum(axis=1) == 0))


@pytest.mark.parametrize("tile_elements", TILES)
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize(("name", "kernel_name", "d"), ELIGIBLE)
def test_backend_equals_brute_force(name, kernel_name, d, case, tile_elements):
    X, Q, V, w = make_data(d, case, seed=d)
    kernel = get_kernel(kernel_name)
    head = Head(kernel, BANDWIDTH[d])
    backend = BACKENDS[name]
    index = backend.fit(fit_request(name, X, V, w, head, tile_elements=tile_elements))
    assert backend.serves(index, V, [head], w)
    (got,) = backend.sums(
        index, Q, X, V, [head], **sum_params(w, tile_elements=tile_elements)
    )
    ref = brute_force(kernel, head.divisor, Q, X, V, w)
    assert_matches(name, got, ref, V, w, kernel)


@pytest.mark.parametrize(("name", "kernel_name", "d"), ELIGIBLE)
def test_backend_with_feature_scale(name, kernel_name, d):
    # The features are divided by ``scale`` before the distances.
    X, Q, V, w = make_data(d, "weighted", seed=10 + d)
    scale = np.linspace(0.5, 2.0, d)
    X, Q = X * scale, Q * scale
    kernel = get_kernel(kernel_name)
    head = Head(kernel, BANDWIDTH[d])
    backend = BACKENDS[name]
    # An explicit algorithm: choose checks it and fits its index.
    chosen, index = choose(name, ALGORITHMS, fit_request(name, X, V, w, head, scale))
    assert chosen == name
    (got,) = backend.sums(index, Q, X, V, [head], **sum_params(w, scale=scale))
    ref = brute_force(kernel, head.divisor, Q, X, V, w, scale=scale)
    assert_matches(name, got, ref, V, w, kernel)


#: Metrics other than the euclidean one that a KD-tree (and, in one
#: dimension, a sorted line) can search.
OTHER_METRICS = [
    ("cityblock", None),
    ("chebyshev", None),
    ("minkowski", {"p": 3.0}),
]


@pytest.mark.parametrize(
    ("name", "kernel_name", "d", "metric", "metric_params"),
    [
        (name, kernel, d, metric, params)
        for name in BACKENDS
        for kernel in KERNEL_NAMES
        for d in N_FEATURES
        for metric, params in OTHER_METRICS
        if BACKENDS[name].why_not(get_kernel(kernel), metric, params, d) is None
    ],
)
def test_backend_with_other_metrics(name, kernel_name, d, metric, metric_params):
    X, Q, V, w = make_data(d, "zero_weights", seed=90 + d)
    kernel = get_kernel(kernel_name)
    h = BANDWIDTH[d]
    request = FitRequest(
        X,
        w,
        lambda: (V, w),
        Head(kernel, h),
        None,
        metric,
        metric_params,
        **FIT_PARAMS.get(name, {}),
    )
    backend = BACKENDS[name]
    index = backend.fit(request)
    params = {**sum_params(w), "metric": metric, "metric_params": metric_params}
    (got,) = backend.sums(index, Q, X, V, [Head(kernel, h)], **params)
    K = np.asarray(kernel(cdist(Q, X, metric, **(metric_params or {})) / h))
    Kw = K * w
    ref = Kw @ V, Kw.sum(axis=1), np.abs(Kw) @ np.abs(V), np.abs(Kw).sum(axis=1)
    assert_matches(name, got, ref, V, w, kernel)


@pytest.mark.parametrize("case", ["unweighted", "zero_weights"])
@pytest.mark.parametrize(("name", "kernel_name", "d"), ELIGIBLE)
def test_several_heads_through_backend_sums(name, kernel_name, d, case):
    # Two bandwidths at once: each head's sums are those of its own definition
    # (by the dense backend where the index serves one head only).
    X, Q, V, w = make_data(d, case, seed=20 + d)
    kernel = get_kernel(kernel_name)
    heads = [Head(kernel, BANDWIDTH[d]), Head(kernel, 1.7 * BANDWIDTH[d])]
    index = BACKENDS[name].fit(fit_request(name, X, V, w, heads[0]))
    got = backend_sums(name, index, Q, X, V, heads, **sum_params(w))
    assert len(got) == len(heads)
    dense = not BACKENDS[name].serves(index, V, heads, w)
    for head, sums in zip(heads, got, strict=True):
        ref = brute_force(kernel, head.divisor, Q, X, V, w)
        assert_matches(DENSE if dense else name, sums, ref, V, w, kernel)


def brute_force_loo(kernel, h, X, V, w, kept=None):
    """:func:`brute_force` leaving each point out of its own sums, or keeping
    ``kept`` of its weight there (frequency weights)."""
    S, den, absS, absden = brute_force(kernel, h, X, X, V, w, exclude_self=True)
    if kept is None:
        return S, den, absS, absden
    own = np.asarray(kernel(np.zeros(X.shape[0])), dtype=np.float64) * kept
    return (
        S + own[:, None] * V,
        den + own,
        absS + np.abs(own)[:, None] * np.abs(V),
        absden + np.abs(own),
    )


#: Bandwidths of the leave-one-out tests, in units of BANDWIDTH: the bulk of
#: the data, and windows so small that each point's own term dominates.
LOO_FACTORS = (1.0, 0.05)


@pytest.mark.parametrize("factor", LOO_FACTORS)
@pytest.mark.parametrize("case", ["unweighted", "zero_weights", "two_columns"])
@pytest.mark.parametrize(("name", "kernel_name", "d"), ELIGIBLE)
def test_leave_one_out_through_backend_sums(name, kernel_name, d, case, factor):
    # Every backend leaves each point out of its own sums, within its own
    # tolerance relative to what remains (however small).
    X, _, V, w = make_data(d, case, seed=30 + d, n=200)
    kernel = get_kernel(kernel_name)
    head = Head(kernel, factor * BANDWIDTH[d])
    index = BACKENDS[name].fit(fit_request(name, X, V, w, head))
    assert BACKENDS[name].serves(index, V, [head], w)
    (got,) = backend_sums(
        name, index, X, X, V, [head], exclude_self=True, **sum_params(w)
    )
    ref = brute_force_loo(kernel, head.divisor, X, V, w)
    assert_matches(name, got, ref, V, w, kernel)


@pytest.mark.parametrize("factor", LOO_FACTORS)
@pytest.mark.parametrize(("name", "kernel_name", "d"), ELIGIBLE)
def test_leave_one_out_keeping_part_of_each_weight(name, kernel_name, d, factor):
    # Frequency weights: leaving one unit of a point out keeps w_i - 1 of it
    # (none of a weight of at most one).
    X, _, V, w = make_data(d, "weighted", seed=40, n=150)
    w = np.round(w)
    kept = np.maximum(w - 1.0, 0.0)
    kernel = get_kernel(kernel_name)
    head = Head(kernel, factor * BANDWIDTH[d])
    index = BACKENDS[name].fit(fit_request(name, X, V, w, head))
    (got,) = backend_sums(
        name,
        index,
        X,
        X,
        V,
        [head],
        exclude_self=True,
        self_weight=kept,
        **sum_params(w),
    )
    ref = brute_force_loo(kernel, head.divisor, X, V, w, kept)
    assert_matches(name, got, ref, V, w, kernel)


@pytest.mark.parametrize(("name", "kernel_name", "d"), ELIGIBLE)
def test_leave_one_out_of_a_subset_in_any_order(name, kernel_name, d):
    # Queries that are some training points, shuffled (self_index), and
    # batches of them (self_offset): each is left out of its own sums.
    X, _, V, w = make_data(d, "weighted", seed=45, n=200)
    kernel = get_kernel(kernel_name)
    head = Head(kernel, 0.3 * BANDWIDTH[d])
    index = BACKENDS[name].fit(fit_request(name, X, V, w, head))
    rows = np.random.default_rng(0).permutation(200)[:70]
    ref = brute_force_loo(kernel, head.divisor, X, V, w)
    ref = tuple(r[rows] for r in ref)
    (got,) = backend_sums(
        name,
        index,
        X[rows],
        X,
        V,
        [head],
        exclude_self=True,
        self_index=rows,
        **sum_params(w),
    )
    assert_matches(name, got, ref, V, w, kernel)
    (got,) = backend_sums(
        name,
        index,
        X[50:120],
        X,
        V,
        [head],
        exclude_self=True,
        self_offset=50,
        **sum_params(w),
    )
    ref = tuple(r[50:120] for r in brute_force_loo(kernel, head.divisor, X, V, w))
    assert_matches(name, got, ref, V, w, kernel)


def test_every_backend_leaves_points_out():
    assert all(b.leave_one_out for b in BACKENDS.values())


def test_backend_without_leave_one_out_refuses_it():
    class NoLeaveOneOut(Backend):
        name = "none"

    with pytest.raises(ValueError, match="'none' backend cannot leave points"):
        NoLeaveOneOut().check_params({"exclude_self": True})
    NoLeaveOneOut().check_params({"exclude_self": False})


@pytest.mark.parametrize(("name", "kernel_name", "d"), INELIGIBLE)
def test_ineligible_pairs_are_refused_with_their_reason(name, kernel_name, d):
    kernel = get_kernel(kernel_name)
    reason = BACKENDS[name].why_not(kernel, "euclidean", None, d)
    assert isinstance(reason, str) and reason
    with pytest.raises(ValueError) as caught:
        check(name, kernel, "euclidean", None, d)
    assert str(caught.value) == reason
    X, _, V, _ = make_data(d, "unweighted", seed=60, n=40)
    estimator = NadarayaWatsonRegressor(
        kernel=kernel_name, bandwidth=BANDWIDTH[d], algorithm=name
    )
    with pytest.raises(ValueError) as caught:
        estimator.fit(X, V[:, 0])
    # The estimator resolves metric_params=None to {} before the check.
    assert str(caught.value) == BACKENDS[name].why_not(kernel, "euclidean", {}, d)


def test_auto_and_dense_serve_everything():
    for kernel_name in KERNEL_NAMES:
        for d in N_FEATURES:
            check("auto", get_kernel(kernel_name), "euclidean", None, d)
            assert eligible(DENSE, kernel_name, d)


# -- indexes that hold the fitted values ---------------------------------------


@pytest.mark.parametrize(
    ("name", "kernel_name"),
    [(n, k) for n, k in ONE_FEATURE if BACKENDS[n].fixed_values],
)
def test_fixed_values_index_serves_its_values_only(name, kernel_name):
    X, Q, V, w = make_data(1, "weighted", seed=70)
    kernel = get_kernel(kernel_name)
    head = Head(kernel, BANDWIDTH[1])
    backend = BACKENDS[name]
    index = backend.fit(fit_request(name, X, V, w, head))
    assert backend.serves(index, V, [head], w)
    assert backend.serves(index, V.copy(), [Head(kernel, BANDWIDTH[1])], w.copy())
    other_V = V + 1.0
    other_w = w * np.linspace(0.5, 1.5, w.size)
    wider = Head(kernel, 2.0 * BANDWIDTH[1])
    cases = [
        (other_V, [head], w),  # other values
        (np.column_stack([V, V]), [head], w),  # other number of columns
        (V, [head], other_w),  # other weights
        (V, [head], None),  # no weights
        (V, [wider], w),  # another head
        (V, [head, wider], w),  # several heads
    ]
    dense = BACKENDS[DENSE]
    for V2, heads, w2 in cases:
        assert not backend.serves(index, V2, heads, w2)
        got = backend_sums(name, index, Q, X, V2, heads, **sum_params(w2))
        expected = dense.sums(None, Q, X, V2, heads, **sum_params(w2))
        for (S, den, M), (S0, den0, M0), h in zip(got, expected, heads, strict=True):
            np.testing.assert_array_equal(S, S0)
            np.testing.assert_array_equal(den, den0)
            np.testing.assert_array_equal(M, M0)
            ref = brute_force(kernel, h.divisor, Q, X, V2, w2)
            assert_matches(DENSE, (S, den, M), ref, V2, w2, kernel)


@pytest.mark.parametrize(
    ("name", "kernel_name"),
    [(n, k) for n, k in ONE_FEATURE if not BACKENDS[n].fixed_values],
)
def test_index_without_fixed_values_serves_other_values(name, kernel_name):
    X, Q, V, w = make_data(1, "weighted", seed=80)
    kernel = get_kernel(kernel_name)
    head = Head(kernel, BANDWIDTH[1])
    backend = BACKENDS[name]
    index = backend.fit(fit_request(name, X, V, w, head))
    other_V = np.column_stack([V[:, 0] ** 2, -V[:, 0]])
    assert backend.serves(index, other_V, [head], w)
    (got,) = backend.sums(index, Q, X, other_V, [head], **sum_params(w))
    ref = brute_force(kernel, head.divisor, Q, X, other_V, w)
    assert_matches(name, got, ref, other_V, w, kernel)


# -- "auto" ----------------------------------------------------------------------


def auto_request(X, kernel_name, h, w=None, scale=None):
    V = np.sin(X[:, :1])
    return FitRequest(
        X=X,
        sample_weight=w,
        values=lambda: (V, w),
        head=Head(get_kernel(kernel_name), h),
        scale=scale,
        metric="euclidean",
        metric_params=None,
        tolerance=BINNED_TOL,
    )


def line(n, spacing=1.0):
    """``n`` evenly spaced points, one feature (jittered off a lattice)."""
    rng = np.random.default_rng(n)
    x = spacing * (np.arange(n) + rng.uniform(-0.1, 0.1, size=n))
    return x[:, None]


def cube(n, d=3, seed=0):
    return np.random.default_rng(seed).uniform(0.0, 1.0, size=(n, d))


def tree_radius(fraction, d=3):
    """Radius of a ball of volume ``fraction`` (of the unit cube)."""
    return (fraction * gamma(d / 2 + 1) / pi ** (d / 2)) ** (1 / d)


#: (description, X, kernel, bandwidth, the backend "auto" should pick).
MANY = 4 * AUTO_MIN_SAMPLES
AUTO_CASES = [
    # Boxes one standard deviation wide hold 4 * MIN_POINTS_PER_BOX points.
    (
        "gaussian-dense-boxes",
        line(MANY),
        "gaussian",
        4 * _fgt.MIN_POINTS_PER_BOX,
        "fgt",
    ),
    # Boxes half a spacing wide hold one point each.
    ("gaussian-sparse-boxes", line(MANY), "gaussian", 0.5, DENSE),
    (
        "gaussian-few-points",
        line(AUTO_MIN_SAMPLES - 1),
        "gaussian",
        4 * _fgt.MIN_POINTS_PER_BOX,
        DENSE,
    ),
    ("epanechnikov-line", line(AUTO_MIN_SAMPLES), "epanechnikov", 3.0, "sorted"),
    ("epanechnikov-line-few", line(AUTO_MIN_SAMPLES - 1), "epanechnikov", 3.0, DENSE),
    (
        "epanechnikov-small-window",
        cube(AUTO_MIN_SAMPLES),
        "epanechnikov",
        tree_radius(_tree.TREE_MAX_FRACTION / 4),
        "tree",
    ),
    ("epanechnikov-wide-window", cube(AUTO_MIN_SAMPLES), "epanechnikov", 1.0, DENSE),
    (
        "epanechnikov-small-window-few",
        cube(AUTO_MIN_SAMPLES - 1),
        "epanechnikov",
        tree_radius(_tree.TREE_MAX_FRACTION / 4),
        DENSE,
    ),
    ("cosine-line-small-window", line(MANY), "cosine", 10.0, "tree"),
    ("cosine-line-wide-window", line(MANY), "cosine", MANY / 4, DENSE),
    ("laplacian-line", line(MANY), "laplacian", 10.0, DENSE),
    ("laplacian-cube", cube(MANY), "laplacian", 0.05, DENSE),
]


@pytest.mark.parametrize(
    ("X", "kernel_name", "h", "expected"),
    [case[1:] for case in AUTO_CASES],
    ids=[case[0] for case in AUTO_CASES],
)
def test_auto_choice(X, kernel_name, h, expected):
    name, index = choose("auto", ALGORITHMS, auto_request(X, kernel_name, h))
    assert name == expected
    assert BACKENDS[name].auto
    if name == DENSE:
        assert index is None
    else:
        assert index is not None


@pytest.mark.parametrize(
    ("X", "kernel_name", "h", "expected"),
    [case[1:] for case in AUTO_CASES],
    ids=[case[0] for case in AUTO_CASES],
)
def test_auto_picks_only_accepted_backends(X, kernel_name, h, expected):
    # Removing the chosen backend from those accepted moves the choice to
    # another accepted one, down to the dense backend.
    request = auto_request(X, kernel_name, h)
    accepted = list(ALGORITHMS)
    name, _ = choose("auto", accepted, request)
    seen = set()
    while name != DENSE:
        seen.add(name)
        accepted.remove(name)
        name, _ = choose("auto", accepted, request)
        assert name in accepted and name not in seen
    assert "binned" not in seen


def test_auto_never_picks_binned():
    # A 1-D Gaussian the binned backend serves, with and without the other
    # backends accepted.
    kernel = get_kernel("gaussian")
    assert BACKENDS["binned"].why_not(kernel, "euclidean", None, 1) is None
    for h in (0.5, 4 * _fgt.MIN_POINTS_PER_BOX):
        request = auto_request(line(MANY), "gaussian", h)
        for accepted in (ALGORITHMS, ("auto", "binned", DENSE)):
            assert choose("auto", accepted, request)[0] != "binned"
    assert choose("binned", ALGORITHMS, request)[0] == "binned"


def test_auto_with_accepted_subsets_of_the_estimators():
    # Estimators that sum other values than the fitted ones accept no backend
    # whose index holds them: "auto" then takes the next one.
    request = auto_request(line(AUTO_MIN_SAMPLES), "epanechnikov", 3.0)
    accepted = algorithms(fixed_values=False)
    assert not any(BACKENDS[n].fixed_values for n in accepted if n != "auto")
    name, _ = choose("auto", accepted, request)
    assert name in accepted and not BACKENDS[name].fixed_values


@pytest.mark.parametrize(
    "kernel_name",
    [
        k
        for k in KERNEL_NAMES
        if not np.isfinite(get_kernel(k).support) and not eligible("fgt", k, 1)
    ],
)
@pytest.mark.parametrize("d", N_FEATURES)
def test_auto_takes_dense_for_unbounded_kernels_other_than_gaussian(kernel_name, d):
    X = line(MANY) if d == 1 else cube(MANY, d)
    assert choose("auto", ALGORITHMS, auto_request(X, kernel_name, 0.1))[0] == DENSE


@pytest.mark.parametrize(
    ("X", "kernel_name", "h", "expected"),
    [case[1:] for case in AUTO_CASES],
    ids=[case[0] for case in AUTO_CASES],
)
def test_estimator_algorithm_agrees_with_choose(X, kernel_name, h, expected):
    y = np.sin(X.sum(axis=1))
    est = NadarayaWatsonRegressor(kernel=kernel_name, bandwidth=h).fit(X, y)
    assert (
        est.algorithm_ == choose("auto", ALGORITHMS, auto_request(X, kernel_name, h))[0]
    )
    assert est.algorithm_ == expected


@pytest.mark.parametrize("d", N_FEATURES)
def test_default_estimator_algorithm_agrees_with_choose(d):
    # The default bandwidth rule gives one bandwidth per feature: they divide
    # the features.
    X = line(MANY) / MANY if d == 1 else cube(MANY, d)
    y = np.cos(3.0 * X.sum(axis=1))
    est = NadarayaWatsonRegressor().fit(X, y)
    scale = np.broadcast_to(np.asarray(est.bandwidth_, dtype=np.float64), (d,))
    request = auto_request(X, "gaussian", 1.0, scale=scale)
    assert est.algorithm_ == choose("auto", ALGORITHMS, request)[0]


# -- local moments (the local polynomial fits' sums about each query) ----------

#: Every (backend, kernel) pair on one feature whose backend sums local moments.
MOMENT_PAIRS = [
    (name, kernel)
    for name, kernel, d in ELIGIBLE
    if d == 1 and BACKENDS[name].local_moments
]


def brute_force_moments(kernel, h, unit, Q, X, V, w, powers, own=None, kept=None):
    """Sums of ``K(|x - q| / h) u**j w [v, 1]`` (``u = (x - q) / unit``) from
    the definition, in extended precision; ``own`` leaves each query's own
    term out (keeping ``kept`` of its weight). As the one-feature backends,
    coordinates are float64 offsets from the median training value."""
    origin = np.median(X[:, 0])
    x = np.asarray(X[:, 0] - origin, dtype=np.longdouble)
    q = np.asarray(Q[:, 0] - origin, dtype=np.longdouble)
    diff = x[None, :] - q[:, None]
    K = np.asarray(kernel(np.abs(diff.astype(float)) / h), dtype=np.longdouble)
    W = np.broadcast_to(np.ones(X.shape[0]) if w is None else w, K.shape).copy()
    if own is not None:
        W[np.arange(len(own)), own] = 0.0 if kept is None else kept[own]
    Kw = K * W
    cols = np.column_stack([V, np.ones(X.shape[0])]).astype(np.longdouble)
    u = diff / np.longdouble(unit)
    return np.stack([(Kw * u**j) @ cols for j in range(powers + 1)], axis=1)


def test_some_backends_sum_local_moments():
    assert {name for name, _ in MOMENT_PAIRS} == {"fgt", "sorted", "binned"}
    assert not BACKENDS[DENSE].local_moments


@pytest.mark.parametrize("loo", [False, True])
@pytest.mark.parametrize("factor", LOO_FACTORS)
@pytest.mark.parametrize(("name", "kernel_name"), MOMENT_PAIRS)
def test_local_moments_within_their_bound(name, kernel_name, factor, loo):
    X, Q, V, w = make_data(1, "two_columns", seed=70, n=400)
    w = np.random.default_rng(1).integers(1, 4, X.shape[0]).astype(float)
    kernel = get_kernel(kernel_name)
    head = Head(kernel, factor * BANDWIDTH[1])
    request = replace(fit_request(name, X, V, w, head), powers=2)
    index = BACKENDS[name].fit(request)
    kept = w - 1.0
    queries, params = (
        (X, {"exclude_self": True, "self_weight": kept}) if loo else (Q, {})
    )
    got = local_moments(name, index, queries, X, V, head, 2, **sum_params(w), **params)
    assert got.sums.shape == (queries.shape[0], 3, 3)
    assert got.bound.shape == (queries.shape[0], 3)
    own = np.arange(X.shape[0]) if loo else None
    ref = brute_force_moments(
        kernel, head.divisor, got.unit, queries, X, V, w, 2, own, kept
    )
    error = np.abs(got.sums - ref.astype(float))
    vmax = np.max(np.abs(V), axis=0)
    served = np.isfinite(got.bound)
    assert served.mean() > 0.5
    assert_within(error[..., 2][served], got.bound[served], "weight moments")
    for c in range(2):
        assert_within(
            error[..., c][served], got.bound[served] * vmax[c], f"value moments {c}"
        )
    if got.counts is not None:  # exact: points of positive weight in the window
        inside = np.abs(X[:, 0][None, :] - queries[:, 0][:, None]) < head.divisor
        W = np.broadcast_to(w, inside.shape).copy()
        if loo:
            W[np.arange(X.shape[0]), own] = kept
        np.testing.assert_array_equal(got.counts, np.sum(inside & (W > 0), axis=1))


def test_local_moments_need_an_index_of_the_same_values():
    X, Q, V, w = make_data(1, "weighted", seed=71, n=300)
    head = Head(get_kernel("gaussian"), 0.5)
    index = BACKENDS["fgt"].fit(replace(fit_request("fgt", X, V, w, head), powers=2))
    assert local_moments("fgt", index, Q, X, V + 1.0, head, 2, **sum_params(w)) is None
    assert local_moments(DENSE, None, Q, X, V, head, 2, **sum_params(w)) is None


@pytest.mark.parametrize(
    ("name", "kernel_name"),
    [(n, k) for n, k in ONE_FEATURE if BACKENDS[n].fixed_values],
)
def test_a_search_index_knows_its_own_arrays_without_a_digest(name, kernel_name):
    # Within a search (request.shared), an index serves the very arrays it
    # was built from without hashing them again, and still serves equal
    # copies and refuses other values by their digest; an estimator's index
    # keeps no reference to its values.
    X, _, V, w = make_data(1, "weighted", seed=71)
    head = Head(get_kernel(kernel_name), BANDWIDTH[1])
    backend = BACKENDS[name]
    request = fit_request(name, X, V, w, head)
    assert not hasattr(backend.fit(request), "source")
    shared = {}
    index = backend.fit(replace(request, shared=shared))
    assert "values_key" in shared
    with traced() as trace:
        assert backend.serves(index, V, [head], w)
    assert not trace.count("values_digest")
    with traced() as trace:
        assert backend.serves(index, V.copy(), [head], w.copy())
        assert not backend.serves(index, V + 1.0, [head], w)
        assert not backend.serves(index, V, [head], w * 2.0)
    assert trace.count("values_digest") == 3
