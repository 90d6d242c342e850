"""The tiles backend: the Gaussian in several features over tiles of a
KD-tree order, skipping tiles beyond reach of each query tile, against the dense
sums and brute-force definitions (the generic checks of every backend are in
``test_backends.py``)."""

import warnings

import numpy as np
import pytest
import sklearn
from scipy.spatial.distance import cdist
from test_memory import extra_memory

from sknw import (
    LocalLinearRegressor,
    LocalLinearRegressorCV,
    NadarayaWatsonClassifier,
    NadarayaWatsonRegressor,
    NadarayaWatsonRegressorCV,
)
from sknw._local.uncertainty import SquaredKernel
from sknw._sums import ALGORITHMS, FitRequest, Head, grid_sums, kernel_sums
from sknw._sums._dispatcher import every_point
from sknw._sums._parallel import MIN_BATCH
from sknw._sums._tiles import (
    AUTO_GRID_SHARE,
    AUTO_MAX_SHARE,
    AUTO_MIN_POINTS,
    AUTO_PAIR_GRID_SHARE,
    AUTO_PAIR_MIN_POINTS,
    EXP_FLOOR,
    TILE_ROWS,
    TOLERANCE,
    UNSHIFTED_MARGIN,
    TileIndex,
    TilesBackend,
    _lowest_shift,
    kd_order,
    tiles_kernel_sums,
)
from sknw._trace import traced
from sknw.kernels import Epanechnikov, Gaussian


def make_data(n=3000, d=2, m=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 1.0, size=(n, d))
    V = np.column_stack([np.sin(6 * X[:, 0]), X[:, 1] - 0.5, 2.0 + X[:, 0]])
    Q = rng.uniform(-0.1, 1.1, size=(m, d))
    return X, V, Q


def reference(Q, X, V, w, h, exclude=None):
    """``(S, den, sum of |terms| per column)`` from the definition."""
    K = np.exp(-0.5 * cdist(Q, X, "sqeuclidean") / h**2)
    if exclude is not None:
        K[np.arange(Q.shape[0]), exclude] = 0.0
    Kw = K * (1.0 if w is None else w)
    return Kw @ V, Kw.sum(axis=1), Kw @ np.abs(V)


def assert_within_tolerance(got, ref, V):
    """The documented bound: weight sums within TOLERANCE relative, other
    sums within TOLERANCE of the larger of the sum of their terms'
    magnitudes and the weight sum times the spread of the values."""
    S, den, M = got
    refS, refden, absS = ref
    shift = np.exp(M)
    tol = TOLERANCE + 1e-13
    assert np.all(np.abs(den * shift - refden) <= tol * refden)
    spread = V.max(axis=0) - V.min(axis=0)
    slack = np.maximum(absS, refden[:, None] * spread)
    assert np.all(np.abs(S * shift[:, None] - refS) <= tol * slack)


def test_kd_order_is_a_permutation_into_compact_cells():
    X = np.random.default_rng(1).uniform(size=(5000, 3))
    order = kd_order(X)
    assert np.array_equal(np.sort(order), np.arange(5000))
    # Runs of TILE_ROWS points are cells of a KD-tree: their boxes are small
    # (a run of random points would span nearly the whole cube).
    runs = X[order[: 5000 // TILE_ROWS * TILE_ROWS]].reshape(-1, TILE_ROWS, 3)
    volume = np.prod(runs.max(axis=1) - runs.min(axis=1), axis=1)
    assert np.sum(volume) < 1.5


@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("weighted", [False, True])
def test_sums_with_skipped_tiles_within_the_bound(d, weighted):
    X, V, Q = make_data(d=d, seed=d)
    w = None
    if weighted:
        w = np.random.default_rng(5).uniform(0.1, 3.0, X.shape[0])
        w[::7] = 0.0
    h = 0.02
    index = TileIndex(X, w, None)
    # Most tiles are beyond reach at this bandwidth.
    assert index.share(-0.5 / h**2) < 0.5
    got = tiles_kernel_sums(
        Q, X, V, [Head(Gaussian(), h)], index=index, sample_weight=w
    )[0]
    assert_within_tolerance(got, reference(Q, X, V, w, h), V)


def test_leave_one_out_with_skipped_tiles_and_kept_weights():
    X, V, _ = make_data(n=2500, seed=3)
    w = np.round(np.random.default_rng(2).uniform(0.5, 3.5, X.shape[0]))
    kept = np.maximum(w - 1.0, 0.0)
    rows = np.random.default_rng(4).permutation(X.shape[0])[:300]
    h = 0.01
    index = TileIndex(X, w, None)
    ((S, den, M),) = tiles_kernel_sums(
        X[rows],
        X,
        V,
        [Head(Gaussian(), h)],
        index=index,
        sample_weight=w,
        exclude_self=True,
        self_index=rows,
        self_weight=kept,
    )
    refS, refden, absS = reference(X[rows], X, V, w, h, exclude=rows)
    # Each point keeps ``kept`` of its weight in its own sums (K(0) = 1).
    refS += kept[rows, None] * V[rows]
    refden += kept[rows]
    absS += kept[rows, None] * np.abs(V[rows])
    assert_within_tolerance((S, den, M), (refS, refden, absS), V)


@pytest.mark.parametrize("loo", [False, True])
def test_a_gaussian_and_its_square_each_within_the_bound(loo):
    # The two heads of the standard errors: K and K**2 (a Gaussian of
    # bandwidth h / sqrt 2), each over the tiles, with weights and, for
    # leave-one-out of every point, each point's own term left out.
    X, V, Q = make_data(n=2500, d=3, seed=13)
    w = np.random.default_rng(6).uniform(0.2, 3.0, X.shape[0])
    h = 0.03
    heads = [Head(Gaussian(), h), Head(SquaredKernel(Gaussian()), h)]
    params = {"sample_weight": w}
    exclude = None
    if loo:
        Q, exclude = X, np.arange(X.shape[0])
        params.update(exclude_self=True, self_index=exclude)
    index = TileIndex(X, w, None)
    assert index.share(-1.0 / h**2) < 0.5  # most tiles skipped for K**2
    got = tiles_kernel_sums(Q, X, V, heads, index=index, **params)
    for sums, width in zip(got, (h, h / np.sqrt(2.0)), strict=True):
        assert_within_tolerance(sums, reference(Q, X, V, w, width, exclude), V)
    # The square's shifts are twice the kernel's (its log terms are).
    assert np.array_equal(got[1][2], 2.0 * got[0][2])


def test_results_equal_the_dense_sums_and_do_not_depend_on_the_batch():
    X, V, Q = make_data(seed=7)
    head = Head(Gaussian(), 0.03)
    index = TileIndex(X, None, None)
    S, den, M = tiles_kernel_sums(Q, X, V, [head], index=index)[0]
    S0, den0, M0 = kernel_sums(Q, X, V, [head], strategy="tiled")[0]
    atol = 3 * TOLERANCE * np.ptp(V, axis=0).max()
    np.testing.assert_allclose(S / den[:, None], S0 / den0[:, None], rtol=0, atol=atol)
    # Each query alone, and the queries reversed.
    for i in (0, 17, 399):
        Si, deni, Mi = tiles_kernel_sums(Q[i : i + 1], X, V, [head], index=index)[0]
        np.testing.assert_allclose(Si[0] * np.exp(Mi[0] - M[i]), S[i], rtol=1e-13)
    Sr, denr, Mr = tiles_kernel_sums(Q[::-1], X, V, [head], index=index)[0]
    np.testing.assert_allclose(
        Sr[::-1] / denr[::-1, None], S / den[:, None], rtol=1e-13
    )


def test_queries_far_from_the_data_and_not_finite_take_the_exact_sums():
    X, V, _ = make_data(n=2100, seed=8)
    head = Head(Gaussian(), 0.02)
    Q = np.array([[50.0, 50.0], [0.5, 0.5], [-3.0, 0.5], [np.inf, 0.5]])
    index = TileIndex(X, None, None)
    got = tiles_kernel_sums(Q, X, V, [head], index=index)[0]
    ref = kernel_sums(Q, X, V, [head])[0]
    for a, b in zip(got, ref, strict=True):
        np.testing.assert_array_equal(np.isfinite(a), np.isfinite(b))
    finite = np.isfinite(ref[1]) & (ref[1] > 0)
    np.testing.assert_allclose(
        got[0][finite] / got[1][finite, None],
        ref[0][finite] / ref[1][finite, None],
        rtol=1e-11,
    )


def test_auto_takes_the_tiles_where_they_pay():
    X, V, _ = make_data(n=AUTO_MIN_POINTS + 500, seed=9)
    y = V[:, 0]
    assert NadarayaWatsonRegressor(bandwidth=0.01).fit(X, y).algorithm_ == "tiles"
    # Wide windows meet every tile: the dense sums.
    assert NadarayaWatsonRegressor(bandwidth=0.5).fit(X, y).algorithm_ == "brute"
    few = X[: AUTO_MIN_POINTS - 1]
    assert (
        NadarayaWatsonRegressor(bandwidth=0.01).fit(few, y[: few.shape[0]]).algorithm_
        == "brute"
    )
    # Not the Gaussian, or one feature: not eligible.
    backend = TilesBackend()
    assert backend.why_not(Gaussian(), "euclidean", None, 2) is None
    assert "two features" in backend.why_not(Gaussian(), "euclidean", None, 1)
    assert backend.why_not(Gaussian(), "cityblock", None, 2) is not None
    with pytest.raises(ValueError, match="tiles"):
        NadarayaWatsonRegressor(kernel="epanechnikov", algorithm="tiles").fit(X, y)


def test_index_serves_the_points_of_positive_weight_it_was_built_with():
    X, V, _ = make_data(n=500, seed=10)
    w = np.ones(X.shape[0])
    head = Head(Gaussian(), 0.1)
    request = FitRequest(X, w, lambda: (V, w), head, None, "euclidean", None)
    backend = TilesBackend()
    index = backend.fit(request)
    assert backend.serves(index, V, [head], w)
    # The tiles' weights come with each call: any weights of the same points.
    assert backend.serves(index, V[:, :1], [head], 2.5 * w)
    other = w.copy()
    other[3] = 0.0
    assert not backend.serves(index, V, [head], other)
    assert not backend.serves(index, V, [head], None)
    # Heads of the Gaussian's form (the standard errors' kernel and its
    # square), each over the tiles; not another kernel.
    square = Head(SquaredKernel(Gaussian()), 0.1)
    assert backend.serves(index, V, [head, square], w)
    assert not backend.serves(index, V, [head, Head(Epanechnikov(), 0.1)], w)


def test_estimator_weights_of_any_scale_take_the_tiles():
    # The estimators pass their weights divided by a power of two.
    X, V, Q = make_data(n=2500, seed=14)
    w = np.random.default_rng(3).uniform(1.0, 5.0, X.shape[0])
    est = NadarayaWatsonRegressor(bandwidth=0.02, algorithm="tiles")
    with traced() as trace:
        est.fit(X, V[:, 0], sample_weight=w).predict(Q)
    assert trace.count("tiles_sums")


def test_a_kept_own_term_far_from_the_other_points_stays_finite():
    # Leave-one-out with frequency weights: a point far from all others keeps
    # part of its weight, the largest term of its sums.
    rng = np.random.default_rng(6)
    X = np.vstack([rng.uniform(size=(100, 2)), [[2.0, 2.0]]])
    V = np.column_stack([X[:, 0] + 1.0, X[:, 1] - 0.5])
    w = np.full(101, 3.0)
    own = np.array([100, 5])
    h = 0.01
    S, den, M = tiles_kernel_sums(
        X[own],
        X,
        V,
        [Head(Gaussian(), h)],
        index=TileIndex(X, w, None),
        sample_weight=w,
        exclude_self=True,
        self_index=own,
        self_weight=w - 1.0,
    )[0]
    refS, refden, absS = reference(X[own], X, V, w, h, exclude=own)
    refS += 2.0 * V[own]
    refden += 2.0
    absS += 2.0 * np.abs(V[own])
    assert_within_tolerance((S, den, M), (refS, refden, absS), V)


@pytest.mark.parametrize("smallest", [1e-200, 1e-320])
def test_weights_beyond_the_floor_take_the_exact_sums(smallest):
    # Weights spread over more than exp(660): terms the bound relies on would
    # fall below the floor of exp; the index serves no query, and builds.
    X, V, Q = make_data(n=300, seed=15)
    w = np.ones(X.shape[0])
    w[0], w[1] = smallest, 1e200
    index = TileIndex(X, w, None)
    assert not index.usable
    head = Head(Gaussian(), 0.05)
    got = tiles_kernel_sums(Q, X, V, [head], index=index, sample_weight=w)[0]
    ref = kernel_sums(Q, X, V, [head], sample_weight=w)[0]
    for a, b in zip(got, ref, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    ("make", "method"),
    [
        (NadarayaWatsonRegressor, "predict"),
        (NadarayaWatsonRegressor, "standard_error"),
        (NadarayaWatsonClassifier, "predict_proba"),
        (LocalLinearRegressor, "predict"),
    ],
)
def test_estimators_on_the_tiles_equal_the_dense_ones(make, method):
    X, V, Q = make_data(n=2500, d=3, seed=11)
    y = V[:, 0] + 0.1 * np.random.default_rng(0).normal(size=X.shape[0])
    if make is NadarayaWatsonClassifier:
        y = (y > 0).astype(int) + (X[:, 1] > 0.7)
    w = np.random.default_rng(1).uniform(0.5, 2.0, X.shape[0])
    tiles = make(bandwidth=0.04, algorithm="tiles").fit(X, y, sample_weight=w)
    dense = make(bandwidth=0.04, algorithm="brute").fit(X, y, sample_weight=w)
    assert tiles.algorithm_ == "tiles"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got, ref = getattr(tiles, method)(Q), getattr(dense, method)(Q)
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-9 * np.ptp(ref))


@pytest.mark.parametrize("make", [NadarayaWatsonRegressor, LocalLinearRegressor])
@pytest.mark.parametrize("noise_variance", ["local", "global"])
def test_standard_errors_take_the_tiles(make, noise_variance):
    # Both heads of the standard errors (the kernel and its square) over the
    # tiles, equal to the dense ones within the tiles' bound.
    X, V, Q = make_data(n=2500, d=3, seed=11)
    y = V[:, 0] + 0.1 * np.random.default_rng(0).normal(size=X.shape[0])
    w = np.random.default_rng(1).uniform(0.5, 2.0, X.shape[0])
    params = {"bandwidth": 0.04, "noise_variance": noise_variance}
    tiles = make(algorithm="tiles", **params).fit(X, y, sample_weight=w)
    dense = make(algorithm="brute", **params).fit(X, y, sample_weight=w)
    with warnings.catch_warnings(), traced() as trace:
        warnings.simplefilter("ignore")
        got, ref = tiles.standard_error(Q), dense.standard_error(Q)
    heads = trace.values("tiles_sums", "n_heads")
    assert heads and set(heads) == {2}
    assert np.array_equal(np.isnan(got), np.isnan(ref))
    ok = ~np.isnan(ref)
    np.testing.assert_allclose(got[ok], ref[ok], rtol=1e-10)


@pytest.mark.parametrize("cv", [None, 3])
def test_local_linear_selection_on_the_tiles_equals_the_dense_one(cv):
    # Leave-one-out and K-fold of local linear fits, with weights: each
    # candidate's moments over the tiles (traced), the scores those of the
    # dense sums.
    X, V, _ = make_data(n=2500, d=3, seed=12)
    y = V[:, 0] + 0.1 * np.random.default_rng(0).normal(size=X.shape[0])
    w = np.random.default_rng(2).uniform(0.5, 2.0, X.shape[0])
    bandwidths = [0.03, 0.05, 0.08]
    scores = []
    with traced() as trace:
        for algorithm in ("tiles", "brute"):
            search = LocalLinearRegressorCV(
                bandwidths=bandwidths, algorithm=algorithm, cv=cv
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the best at the grid's edge
                scores.append(search.fit(X, y, sample_weight=w).cv_results_)
    calls = trace.values("tiles_sums", "leave_one_out")
    assert calls == [cv is None] * (len(bandwidths) * (1 if cv is None else cv))
    np.testing.assert_allclose(
        scores[0]["mean_test_score"], scores[1]["mean_test_score"], rtol=1e-10
    )


@pytest.mark.parametrize("weighted", [False, True])
def test_leave_one_out_selection_on_the_tiles_equals_the_dense_one(weighted):
    X, V, _ = make_data(n=2500, d=3, seed=12)
    y = V[:, 0] + 0.1 * np.random.default_rng(0).normal(size=X.shape[0])
    w = None
    if weighted:  # frequency weights, some of them zero
        w = np.round(np.random.default_rng(3).uniform(0.0, 3.0, X.shape[0]))
    bandwidths = [0.01, 0.02, 0.04, 0.08]
    tiles = NadarayaWatsonRegressorCV(bandwidths=bandwidths, algorithm="tiles")
    dense = NadarayaWatsonRegressorCV(bandwidths=bandwidths, algorithm="brute")
    tiles.fit(X, y, sample_weight=w)
    dense.fit(X, y, sample_weight=w)
    np.testing.assert_allclose(
        tiles.cv_results_["mean_test_score"],
        dense.cv_results_["mean_test_score"],
        rtol=1e-10,
    )
    assert tiles.bandwidth_ == dense.bandwidth_


def test_extra_memory_does_not_grow_with_the_queries():
    X, V, _ = make_data(n=3000, seed=13)
    est = NadarayaWatsonRegressor(bandwidth=0.02, algorithm="tiles").fit(X, V[:, 0])
    rng = np.random.default_rng(0)
    small, large = rng.uniform(size=(20_000, 2)), rng.uniform(size=(80_000, 2))
    extra_small = extra_memory(lambda: est.predict(small))
    extra_large = extra_memory(lambda: est.predict(large))
    assert extra_large <= extra_small + 4 * 2**20


def test_a_lone_head_of_a_grid_takes_the_single_heads_threshold():
    """grid_sums sends a head whose share lies between the grid's threshold
    and the single head's to the tiles when it is alone (its dense
    alternative is the single head's path), to the dense pass with others."""
    X, V, Q = make_data(n=AUTO_MIN_POINTS + 500, d=2, seed=13)
    index = TileIndex(X, None, None)
    # A bandwidth whose share lies between the two thresholds.
    between = [
        h
        for h in np.geomspace(0.005, 0.05, 41)
        if AUTO_GRID_SHARE[0] < index.share(-0.5 / h**2) < AUTO_MAX_SHARE[0]
    ]
    assert between
    h = float(between[len(between) // 2])
    params = {"metric": "euclidean", "metric_params": None}
    head = Head(Gaussian(), h)
    with traced() as trace:
        alone = grid_sums("auto", ALGORITHMS, Q, X, V, [head], **params)
    # The heads each call of the tiles backend summed.
    assert trace.values("sums", "n_heads", backend="tiles") == [1]
    with traced() as trace:
        pair = grid_sums(
            "auto", ALGORITHMS, Q, X, V, [head, Head(Gaussian(), 2 * h)], **params
        )
    assert trace.values("sums", "n_heads", backend="tiles") == []  # the dense pass
    ref = reference(Q, X, V, None, h)
    assert_within_tolerance(alone[0], ref, V)
    assert_within_tolerance(pair[0], ref, V)


def test_queries_inside_the_data_are_served_whatever_the_signs_of_the_values():
    # Columns that change sign and one that does not, at queries where the
    # sums of the first cancel (points mirrored about x0 = 1/2, queries on
    # that line): the bound of each query holds against its weight sum times
    # the spread of the values, so that none takes the exact sums.
    half = np.random.default_rng(6).uniform(0.0, 1.0, size=(1500, 2))
    X = np.vstack([half, np.column_stack([1.0 - half[:, 0], half[:, 1]])])
    V = np.column_stack([X[:, 0] - 0.5, 0.5 - X[:, 0], 2.0 + X[:, 0]])
    Q = np.column_stack([np.full(200, 0.5), np.linspace(0.1, 0.9, 200)])
    h = 0.02
    index = TileIndex(X, None, None)
    with traced() as trace:
        got = tiles_kernel_sums(Q, X, V, [Head(Gaussian(), h)], index=index)[0]
    # The queries each head left to the exact sums.
    assert trace.values("exact_rows", "n_queries") == [0]
    ref = reference(Q, X, V, None, h)
    assert np.all(np.abs(ref[0][:, :2]) < 1e-6 * ref[1][:, None])  # cancelled
    assert_within_tolerance(got, ref, V)


@pytest.mark.parametrize("weighted", [False, True])
def test_values_beyond_the_working_memory_are_gathered_per_block(weighted):
    """The products' weighted values are kept in leaf order where they fit
    in the working memory, else gathered block by block by the query tiles
    (leave-one-out of every point then takes them too, not the pairs)."""
    X, V, Q = make_data(d=3, seed=11)
    w = None
    if weighted:
        w = np.random.default_rng(1).uniform(0.5, 2.0, X.shape[0])
        w[::5] = 0.0
    index = TileIndex(X, w, None)
    head = Head(Gaussian(), 0.05)
    assert index.value_stats(V, w)[3] is not None
    # Not every point: the query tiles.
    rows = np.arange(0, X.shape[0], 2)
    loo = {"exclude_self": True, "self_index": rows}
    kept = tiles_kernel_sums(
        X[rows], X, V, [head], index=index, sample_weight=w, **loo
    )[0]
    # A quarter of 0.05 MiB: fewer elements than the 4 columns of the points.
    with sklearn.config_context(working_memory=0.05):
        assert index.value_stats(V, w)[3] is None
        gathered = tiles_kernel_sums(
            X[rows], X, V, [head], index=index, sample_weight=w, **loo
        )[0]
        with traced() as trace:
            every = tiles_kernel_sums(
                X, X, V, [head], index=index, sample_weight=w, exclude_self=True
            )[0]
        assert not pairs_of(trace)
    for a, b in zip(kept, gathered, strict=True):
        np.testing.assert_array_equal(a, b)
    ref = reference(X[rows], X, V, w, 0.05, exclude=rows)
    assert_within_tolerance(kept, ref, V)
    # Every point, beyond the working memory: the query tiles, within the
    # bound too.
    every_ref = reference(X, X, V, w, 0.05, exclude=np.arange(X.shape[0]))
    assert_within_tolerance(every, every_ref, V)


def pairs_of(trace):
    """The pairs of tiles computed in ``trace`` by leave-one-out of every
    point (each pair once)."""
    return sum(trace.values("tile_pairs", "n_pairs"))


def query_pairs_of(trace):
    """The pairs of a query tile and a training tile computed in ``trace``
    by the query tiles."""
    return sum(trace.values("query_tiles", "n_pairs"))


@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("weights", ["none", "zeros", "kept"])
def test_leave_one_out_of_every_point_by_pairs_of_tiles(d, weights):
    """Leave-one-out of every point sums each pair of tiles once, without
    shifts: within the bound of the definition, each point's shift its
    largest log term; points of weight 0 take the query tiles."""
    X, V, _ = make_data(n=2500, d=d, seed=20 + d)
    rng = np.random.default_rng(d)
    w = kept = None
    if weights != "none":
        w = np.round(rng.uniform(0.5, 3.5, X.shape[0]))
    if weights == "zeros":
        w[::9] = 0.0
    if weights == "kept":
        kept = np.maximum(w - 1.0, 0.0)
    h = 0.015
    index = TileIndex(X, w, None)
    assert index.share(-0.5 / h**2) < 0.5  # most pairs beyond reach
    with traced() as trace:
        S, den, M = tiles_kernel_sums(
            X,
            X,
            V,
            [Head(Gaussian(), h)],
            index=index,
            sample_weight=w,
            exclude_self=True,
            self_weight=kept,
        )[0]
    assert pairs_of(trace)
    assert bool(query_pairs_of(trace)) == (weights == "zeros")
    own = np.arange(X.shape[0])
    refS, refden, absS = reference(X, X, V, w, h, exclude=own)
    if kept is not None:
        refS += kept[:, None] * V
        refden += kept
        absS += kept[:, None] * np.abs(V)
    assert_within_tolerance((S, den, M), (refS, refden, absS), V)
    # The shift: each point's largest log term (over its other points).
    K = -0.5 * cdist(X, X, "sqeuclidean") / h**2
    K[own, own] = -np.inf if kept is None else np.where(kept > 0, 0.0, -np.inf)
    if w is not None:
        K[:, w == 0] = -np.inf
    np.testing.assert_allclose(M, K.max(axis=1), rtol=1e-12, atol=1e-12)


def test_pairs_in_any_order_of_the_points_and_small_chunks():
    """The queries in any order (``self_index`` a permutation) and chunks of
    a single pair of tiles give the same sums, to rounding."""
    X, V, _ = make_data(n=1500, seed=31)
    head = Head(Gaussian(), 0.02)
    index = TileIndex(X, None, None)
    ref = tiles_kernel_sums(X, X, V, [head], index=index, exclude_self=True)[0]
    perm = np.random.default_rng(0).permutation(X.shape[0])
    got = tiles_kernel_sums(
        X[perm],
        X,
        V,
        [head],
        index=index,
        exclude_self=True,
        self_index=perm,
        tile_elements=TILE_ROWS**2,
    )[0]
    for a, b in zip(got, ref, strict=True):
        np.testing.assert_allclose(a, b[perm], rtol=1e-13, atol=1e-13)


def test_an_isolated_point_takes_the_query_tiles():
    """A point whose largest term is below _lowest_shift (far from every
    other) would lose its sums to the floor of ``exp`` without a shift: it
    takes the query tiles, its shift its own largest term."""
    rng = np.random.default_rng(8)
    X = np.vstack([rng.uniform(size=(3000, 2)), [[1.6, 1.6]]])
    V = np.column_stack([X[:, 0] + 1.0, X[:, 1] - 0.5])
    h = 0.02
    index = TileIndex(X, None, None)
    near = cdist(X[-1:], X[:-1], "sqeuclidean").min()
    assert -0.5 * near / h**2 < _lowest_shift(np.ones(X.shape[0]), None, None)
    with traced() as trace:
        S, den, M = tiles_kernel_sums(
            X, X, V, [Head(Gaussian(), h)], index=index, exclude_self=True
        )[0]
    # One pass of the query tiles, for that point alone.
    assert trace.values("query_tiles", "n_queries") == [1]
    np.testing.assert_allclose(M[-1], -0.5 * near / h**2, rtol=1e-12)
    ref = reference(X[-1:], X, V, None, h, exclude=[X.shape[0] - 1])
    # The reference underflows: its sums relative to the largest term.
    K = -0.5 * cdist(X[-1:], X[:-1], "sqeuclidean")[0] / h**2
    E = np.exp(K - K.max())
    np.testing.assert_allclose(den[-1], E.sum(), rtol=1e-12)
    np.testing.assert_allclose(S[-1], E @ V[:-1], rtol=1e-12)
    assert ref[1][0] == 0.0  # unshifted, it would be lost


def test_every_point_is_leave_one_out_of_each_point_once_in_one_batch():
    n = 2 * MIN_BATCH.value
    perm = np.random.default_rng(0).permutation(n)
    assert every_point(n, n, exclude_self=True)
    assert every_point(n, n, exclude_self=True, self_index=perm)
    assert every_point(n, n, n_jobs=1, exclude_self=True)
    assert not every_point(n, n)  # not leave-one-out
    assert not every_point(n - 1, n, exclude_self=True)  # not every point
    twice = np.append(perm[:-1], perm[0])
    assert not every_point(n, n, exclude_self=True, self_index=twice)
    # Batches of queries (n_jobs): each a part of the points.
    assert not every_point(n, n, n_jobs=2, exclude_self=True)


def test_auto_takes_the_pairs_of_tiles_for_leave_one_out_of_every_point():
    """From AUTO_PAIR_MIN_POINTS, leave-one-out of every point takes the
    tiles for a lone head at any share, for a head of a grid up to
    AUTO_PAIR_GRID_SHARE; other sums keep the thresholds of the query
    tiles."""
    X, V, _ = make_data(n=AUTO_PAIR_MIN_POINTS, d=2, seed=17)
    assert AUTO_PAIR_MIN_POINTS < AUTO_MIN_POINTS
    backend = TilesBackend()

    def request(h, grid, every):
        return FitRequest(
            X=X,
            sample_weight=None,
            values=None,
            head=Head(Gaussian(), h),
            scale=None,
            metric="euclidean",
            metric_params=None,
            auto=True,
            grid=grid,
            every_point=every,
            shared={},
        )

    wide, narrow = 0.5, 0.01
    index = TileIndex(X, None, None)
    assert index.share(-0.5 / wide**2) > AUTO_PAIR_GRID_SHARE
    assert index.share(-0.5 / narrow**2) < AUTO_PAIR_GRID_SHARE
    assert backend.fit(request(wide, False, True)) is not None
    assert backend.fit(request(narrow, True, True)) is not None
    assert backend.fit(request(wide, True, True)) is None
    # Other sums: too few points for the query tiles.
    assert backend.fit(request(narrow, False, False)) is None
    # More than three features: the thresholds of the query tiles.
    X = np.random.default_rng(3).uniform(size=(AUTO_PAIR_MIN_POINTS, 4))
    assert backend.fit(request(wide, False, True)) is None


def test_selection_takes_the_pairs_of_tiles_and_scores_as_the_dense_passes():
    """A leave-one-out search from AUTO_PAIR_MIN_POINTS points sums its
    passes by pairs of tiles (under "auto"), scoring its candidates as the
    dense passes do."""
    X, V, _ = make_data(n=AUTO_PAIR_MIN_POINTS + 100, d=2, seed=19)
    y = V[:, 0] + 0.1 * np.random.default_rng(2).normal(size=X.shape[0])
    with traced() as trace:
        auto = NadarayaWatsonRegressorCV(bandwidths=[0.02, 0.04, 0.3]).fit(X, y)
    assert pairs_of(trace)
    dense = NadarayaWatsonRegressorCV(bandwidths=[0.02, 0.04, 0.3], algorithm="brute")
    dense.fit(X, y)
    np.testing.assert_allclose(
        auto.cv_results_["mean_test_score"],
        dense.cv_results_["mean_test_score"],
        rtol=1e-10,
    )
    assert auto.bandwidth_ == dense.bandwidth_


@pytest.mark.parametrize("scale", [1e-200, 1e200])
def test_pairs_of_tiles_with_weights_of_any_scale(scale):
    """Weights far from one: the pairs of tiles (no shift) keep the sums of
    the points whose largest term is far enough above the floor of ``exp``
    and the range of floats, within the bound; tiny weights raise that
    limit (_lowest_shift) so that no sum underflows."""
    X, V, _ = make_data(n=2000, seed=41)
    # A point about 0.4 from the others: its largest term near exp(-400).
    X = np.vstack([X, [[1.42, 0.5]]])
    V = np.vstack([V, V[:1]])
    n = X.shape[0]
    w = scale * np.random.default_rng(4).uniform(0.5, 2.0, n)
    h = 0.015
    with traced() as trace:
        got = tiles_kernel_sums(
            X,
            X,
            V,
            [Head(Gaussian(), h)],
            index=TileIndex(X, w, None),
            sample_weight=w,
            exclude_self=True,
        )[0]
    assert pairs_of(trace)
    # Its sums would underflow without a shift under tiny weights only.
    assert bool(trace.count("query_tiles")) == (scale < 1)
    ref = reference(X, X, V, w, h, exclude=np.arange(n))
    assert_within_tolerance(got, ref, V)
    lowest = _lowest_shift(w, None, None)
    assert lowest >= EXP_FLOOR + UNSHIFTED_MARGIN + np.log(w.sum() / w.min())
    # A kept share smaller than every weight lowers the smallest term; values
    # far from zero for their spread raise the floor's share of them.
    keep = np.zeros(n)
    keep[7] = 1e-30
    assert _lowest_shift(w, keep, np.arange(n)) > lowest
    assert _lowest_shift(w, None, None, ratio=1e20) > lowest + 40


@pytest.mark.parametrize("scale", [1e-60, 1e-200, 1e200])
def test_pairs_of_tiles_with_values_of_any_scale(scale):
    """Values far from one: a point whose unshifted sums would underflow
    (its largest term small, its values tiny) takes the query tiles; every
    sum stays within the bound of the definition."""
    rng = np.random.default_rng(9)
    X = rng.uniform(size=(1200, 2))
    V = scale * np.column_stack([np.sin(6 * X[:, 0]), X[:, 1] - 0.5, 2.0 + X[:, 0]])
    h = 0.002  # isolated points: largest terms down to about exp(-300)
    index = TileIndex(X, None, None)
    with traced() as trace:
        got = tiles_kernel_sums(
            X, X, V, [Head(Gaussian(), h)], index=index, exclude_self=True
        )[0]
    assert bool(trace.count("query_tiles")) == (scale < 1e-100)
    # The definition relative to each point's largest term (unshifted, the
    # reference itself would underflow): within the bound.
    n = X.shape[0]
    L = -0.5 * cdist(X, X, "sqeuclidean") / h**2
    L[np.arange(n), np.arange(n)] = -np.inf
    top = L.max(axis=1)
    K = np.exp(L - top[:, None])
    S, den, M = got
    shift = np.exp(M - top)
    U = V / scale
    ref = K @ U, K.sum(axis=1), K @ np.abs(U)
    assert_within_tolerance((S * shift[:, None] / scale, den * shift, 0.0 * M), ref, U)


def test_pairs_of_tiles_extra_memory_is_about_the_outputs():
    """Leave-one-out of every point by pairs of tiles keeps the points' sums
    (the size of the outputs) and the values in leaf order (within the
    working memory), accepting them block by block: no copies of the
    points' sums and bounds."""
    rng = np.random.default_rng(21)
    n, k = 50_000, 8
    X = rng.uniform(size=(n, 2))
    V = rng.normal(size=(n, k))
    index = TileIndex(X, None, None)
    head = Head(Gaussian(), 0.002)
    index.own_nearest()  # the index's own state, found once

    def run():
        return tiles_kernel_sums(X, X, V, [head], index=index, exclude_self=True)[0]

    with traced() as trace:
        extra = extra_memory(run)
    assert pairs_of(trace)
    outputs = n * (k + 2) * 8
    assert extra <= 3 * outputs + 8 * 2**20
