"""The local solutions of :mod:`sknw._local.frame`; the fits built on them
are tested in ``test_local_linear.py`` and ``test_local_polynomial.py``."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sknw._local.frame import (
    FRAME_BATCH_WORK,
    _line_solution,
    _solution,
    frame_batches,
    local_solution,
    moment_columns,
    query_centred_fit,
    ridge_to_leverage,
)
from sknw._sums import Head, line_moments
from sknw.kernels import Gaussian


def _moments(seed, m, k):
    """Averaged moments of one coordinate: well and badly conditioned
    designs, singular ones, and rows that are not finite."""
    rng = np.random.default_rng(seed)
    cols = moment_columns(np.zeros((1, 1)), np.zeros((1, k)))[1]
    A = rng.normal(size=(m, cols[-1]))
    spread = rng.choice([0.0, 1e-20, 1e-9, 1e-3, 1.0, 10.0], size=m)
    A[:, cols[3]] = A[:, cols[1]] ** 2 + spread * rng.uniform(0.5, 2.0, m)
    A[rng.integers(0, m, 3), cols[1]] = np.inf
    A[rng.integers(0, m, 3)] = np.nan
    return A, cols, rng


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    k=st.integers(1, 3),
    centred=st.booleans(),
    per_query=st.sampled_from([None, "one", "each"]),
    few=st.booleans(),
    max_leverage=st.sampled_from([None, 100.0, 1.5]),
    min_eigenvalue=st.sampled_from([0.0, 1e-8, 0.5]),
)
def test_one_coordinate_solves_as_any_number(
    seed, k, centred, per_query, few, max_leverage, min_eigenvalue
):
    m = 300
    A, cols, rng = _moments(seed, m, k)
    Zq = np.zeros((m, 1)) if centred else rng.normal(size=(m, 1))
    t = {
        None: None,
        "one": rng.uniform(0.1, 3.0, 1),
        "each": rng.uniform(0.1, 3.0, (m, 1)),
    }[per_query]
    mask = rng.random(m) < 0.1 if few else None
    args = (A, cols, Zq, min_eigenvalue, mask, t, max_leverage)
    with np.errstate(all="ignore"):
        fast = _line_solution(*args)
        ref = _solution(
            A,
            cols,
            1,
            k,
            Zq,
            min_eigenvalue,
            few=mask,
            to_bandwidth=t,
            max_leverage=max_leverage,
            linear=None,
            basis=None,
            degree=1,
        )
        routed = local_solution(
            A,
            cols,
            1,
            k,
            Zq,
            min_eigenvalue,
            few=mask,
            to_bandwidth=t,
            max_leverage=max_leverage,
        )
    for name in ref.__dataclass_fields__:
        want, got = getattr(ref, name), getattr(fast, name)
        if want is None:
            assert got is None, name
            continue
        assert got.shape == want.shape, name
        # The same arithmetic: equal to the last bit (the ridge's closed form
        # included).
        np.testing.assert_array_equal(got, want, err_msg=name)
        np.testing.assert_array_equal(getattr(routed, name), want, err_msg=name)


def test_the_cases_of_the_comparison_occur():
    """The property above meets singular, ridged and solved designs."""
    A, cols, rng = _moments(3, 2000, 1)
    with np.errstate(all="ignore"):
        sol = _line_solution(A, cols, rng.normal(size=(2000, 1)), 1e-8, None, None, 1.5)
    assert sol.ok.any() and (~sol.ok & sol.finite).any() and (~sol.finite).any()
    assert sol.ridged.any() and sol.rounded.any()


@pytest.mark.parametrize("d", [2, 3])
def test_several_coordinates_take_the_general_path(d):
    rng = np.random.default_rng(d)
    cols = moment_columns(np.zeros((1, d)), np.zeros((1, 1)))[1]
    X = rng.normal(size=(40, d))
    y = rng.normal(size=40)
    w = np.exp(-0.5 * np.sum((X - X[0]) ** 2, axis=1))
    # The moments of a weighted least-squares fit at X[0], from the columns'
    # layout: mean y, mean z, mean z y, the upper triangle of mean z z'.
    iu = np.triu_indices(d)
    Z = X
    parts = [
        y[:, None],
        Z,
        Z * y[:, None],
        (Z[:, :, None] * Z[:, None, :])[:, iu[0], iu[1]],
    ]
    A = (np.column_stack(parts) * w[:, None]).sum(axis=0)[None] / w.sum()
    assert A.shape[1] == cols[-1]
    sol = local_solution(A, cols, d, 1, X[:1], 0.0)
    design = np.column_stack([np.ones(40), X - X[0]]) * np.sqrt(w)[:, None]
    coef = np.linalg.lstsq(design, y * np.sqrt(w), rcond=None)[0]
    np.testing.assert_allclose(sol.estimate[0, 0], coef[0], rtol=1e-10)


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 40), min_size=0, max_size=30),
    n_columns=st.integers(1, 20),
    n_train=st.integers(1, 5000),
    limit=st.one_of(st.none(), st.integers(1, 200000)),
)
def test_frame_batches_cover_the_frames_in_order_within_the_work(
    sizes, n_columns, n_train, limit
):
    batches = frame_batches(sizes, n_columns, n_train, limit)
    assert [f for b in batches for f in b] == list(range(len(sizes)))
    for batch in batches:
        assert batch
        if len(batch) == 1:
            continue  # a frame alone, whatever its work
        queries = sum(sizes[f] for f in batch)
        assert queries * n_columns * len(batch) * n_train <= FRAME_BATCH_WORK.value
        if limit is not None:
            assert n_columns * len(batch) * n_train <= limit


def test_the_ridge_of_one_coordinate_is_the_root_of_the_iteration():
    """One coordinate's ridge in closed form: the root that the iteration of
    two coordinates finds (the second one's offset zero), at which the
    distance, as computed, is the target to rounding and never above it."""
    rng = np.random.default_rng(5)
    m = 2000
    c = rng.choice([0.0, 1e-200, 1e-12, 1e-3, 1.0, 50.0], m) * rng.uniform(0.5, 2, m)
    target = rng.choice([0.5, 3.0, 99.0], m)
    # Distances above the target at rho = 0, some barely.
    z = np.sqrt(target * c * rng.choice([1 + 1e-15, 1 + 1e-9, 2.0, 1e6], m))
    z[c == 0.0] = rng.uniform(0.1, 3.0, int(np.sum(c == 0.0)))
    z *= rng.choice([-1.0, 1.0], m)
    rho = ridge_to_leverage(c[:, None, None], z[:, None], target)
    assert np.all(rho >= 0.0)
    distance = z * z / (c + rho)
    assert np.all(distance <= target)
    assert np.all(distance >= target * (1 - 8 * np.finfo(float).eps))
    C2 = np.zeros((m, 2, 2))
    C2[:, 0, 0], C2[:, 1, 1] = c, 3.0 * c
    dz2 = np.stack([z, np.zeros(m)], axis=1)
    iterated = ridge_to_leverage(C2, dz2, target)
    # The ridged variances agree to rounding (the root itself is a difference
    # of nearly equal numbers where the distance barely exceeds the target).
    np.testing.assert_allclose(c + rho, c + iterated, rtol=1e-13)


def _window_moments(seed, n=1500, h=0.004, m=40):
    """Moments of tailed inputs, at points of the data (leave-one-out),
    about the points themselves and about centres near their windows'
    means, with the offsets."""
    rng = np.random.default_rng(seed)
    X = rng.standard_t(2, (n, 1))
    V = np.sin(X) + rng.normal(0.0, 0.1, (n, 1))
    V = V - (V.max() + V.min()) / 2
    order = np.argsort(X[:, 0])
    own = np.r_[order[: m // 2], order[-m // 2 :]]  # the tails: one-sided
    params = {"exclude_self": True, "self_index": own}
    head = Head(Gaussian(), h)
    about_q, _ = line_moments(X[own], X[own, 0], X, V, head, 2, **params)
    S = about_q.sums
    mean = X[own, 0] + S[:, 1, -1] / S[:, 0, -1] * h
    about_c, offsets = line_moments(X[own], mean, X, V, head, 2, **params)
    return X, V, own, h, about_q, about_c, offsets


def _wls(X, V, own, h, max_leverage):
    """The local linear estimates at the left-out points by weighted least
    squares in extended precision about each window's mean, ridged to
    ``max_leverage`` (the reference; None where the design is singular)."""
    out = []
    x = X[:, 0].astype(np.longdouble)
    for i in own:
        u = (x - x[i]) / h
        with np.errstate(over="ignore"):
            k = np.exp(-(u * u - np.min(np.delete(u * u, i))) / 2)
        k[i] = 0.0
        mean = k @ x / k.sum()
        z = (x - mean) / h
        var = k @ z**2 / k.sum()
        ybar = k @ V[:, 0] / k.sum()
        cov = k @ (z * (V[:, 0] - ybar)) / k.sum()
        dz = (x[i] - mean) / h
        if var <= 0:
            out.append(None)
            continue
        lev = dz * dz / var
        if max_leverage is not None and lev > max_leverage - 1:
            var = dz * dz / (max_leverage - 1)
        out.append(float(ybar + dz * cov / var))
    return out


def test_fits_about_the_windows_means_keep_the_digits_of_one_sided_windows():
    X, V, own, h, about_q, about_c, offsets = _window_moments(0)
    spread = np.ptp(V)
    kw = {"n_positive": X.shape[0] - 1, "max_leverage": 10.0}
    at_q = query_centred_fit(about_q, spread / 2, spread, 0.0, **kw)
    at_c = query_centred_fit(about_c, spread / 2, spread, 0.0, **kw, offsets=offsets)
    # About the points, the variance of a one-sided window cancels: fewer
    # served than about the windows' means, which serves every one.
    assert at_q.served.sum() < at_c.served.sum() == own.size
    want = _wls(X, V, own, h, 10.0)
    for i, value in enumerate(want):
        if value is not None:
            assert abs(at_c.estimate[i, 0] - value) <= at_c.error[i, 0] + 1e-15
    assert np.all(at_c.error <= 1e-10 * spread)


def test_zero_offsets_give_the_query_centred_fit():
    X, V, own, h, about_q, _, _ = _window_moments(1)
    spread = np.ptp(V)
    kw = {"n_positive": X.shape[0] - 1, "max_leverage": None}
    plain = query_centred_fit(about_q, spread / 2, spread, 0.0, **kw)
    zero = query_centred_fit(
        about_q, spread / 2, spread, 0.0, **kw, offsets=np.zeros(own.size)
    )
    np.testing.assert_array_equal(zero.estimate, plain.estimate)
    np.testing.assert_array_equal(zero.error, plain.error)
    np.testing.assert_array_equal(zero.served, plain.served)


def test_thin_designs_are_served_where_every_answer_is_near_the_local_constant():
    # Two points dominate the window (the others 40 bandwidths further). At
    # one coordinate, the design is singular: with a ridge, every answer the
    # exact path could give (singular: the local constant; ridged: within
    # target sqrt(var) vmax / |dz| of it) is within the bound. 1e-9 apart,
    # the variance about their mean is resolved: the ridged estimate, as
    # weighted least squares gives it.
    head = Head(Gaussian(), 1.0)
    for gap, singular in [(0.0, True), (1e-9, False)]:
        x = np.array([0.0, 40.0, 80.0, 80.0 + gap, 300.0])
        X, V = x[:, None], np.array([[1.0], [-1.0], [0.5], [0.25], [2.0]])
        spread = np.ptp(V)
        moments, offsets = line_moments(
            np.array([[120.0]]), np.array([80.0]), X, V, head, 2
        )
        fits = [
            query_centred_fit(
                moments, spread / 2, spread, 0.0, 5, max_leverage=lev, offsets=offsets
            )
            for lev in (10.0, None)
        ]
        # Without a ridge, the slope of a thin window is not bounded.
        assert fits[0].served[0] and not fits[1].served[0]
        want = (
            0.375
            if singular
            else _wls(
                np.vstack([X, [[120.0]]]), np.vstack([V, [[0.0]]]), [5], 1.0, 10.0
            )[0]
        )
        assert abs(fits[0].estimate[0, 0] - want) <= fits[0].error[0, 0]
        assert fits[0].error[0, 0] <= 1e-10 * spread
