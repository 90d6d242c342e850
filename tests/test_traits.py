"""The kernels' capability flags agree with their values, and only built-in
kernels get the fast paths the flags allow.

The flags (``_polynomial``, ``_log_linear``, ``_native_sq``, ``_continuous``)
choose exact fast paths of the core; a flag that disagrees with the kernel's
own evaluation would make those paths sum another kernel. Each flag is checked
here against ``__call__`` and ``log_value`` on grids of scaled distances.
"""

import math

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from sknw import NadarayaWatsonRegressor
from sknw._sums import BACKENDS, Head, kernel_sums
from sknw._sums import _traits as traits
from sknw.kernels import KERNELS, Boxcar, Epanechnikov, Gaussian, Kernel, Laplacian


def _first_names():
    classes = {}
    for name, cls in KERNELS.items():
        if cls not in classes.values():
            classes[name] = cls
    return classes


#: Each distinct kernel class of the registry, by its first name.
CLASSES = _first_names()
KERNEL_NAMES = tuple(CLASSES)

#: Step of the grids that probe continuity.
STEP = 1e-5
#: No built-in kernel has a slope above this (in units of K(0) per unit of u;
#: the steepest, the tricube, reaches about 2.0).
MAX_SLOPE = 3.0


def just_below(x, steps=1):
    for _ in range(steps):
        x = np.nextafter(x, -np.inf)
    return x


def just_above(x, steps=1):
    for _ in range(steps):
        x = np.nextafter(x, np.inf)
    return x


def grid(upper=3.0, step=STEP):
    """Scaled distances from 0 to ``upper``, with the neighbours of 1."""
    u = np.arange(0.0, upper, step)
    edge = [just_below(1.0, 2), just_below(1.0), 1.0, just_above(1.0)]
    return np.unique(np.r_[u, edge, upper])


def values(kernel, u):
    return np.asarray(kernel(u), dtype=np.float64)


def kernels_with(flag):
    return [name for name, cls in CLASSES.items() if getattr(cls, flag) is not None]


def kernels_where(predicate):
    return [name for name, cls in CLASSES.items() if predicate(cls)]


def test_registry_classes_are_distinct_and_complete():
    assert len(set(CLASSES.values())) == len(CLASSES)
    assert set(CLASSES.values()) == set(KERNELS.values())
    for name, cls in CLASSES.items():
        assert KERNELS[name] is cls


# -- _polynomial -----------------------------------------------------------------


@pytest.mark.parametrize("name", kernels_with("_polynomial"))
def test_polynomial_flag_is_the_kernel_on_its_support(name):
    kernel = CLASSES[name]()
    coef = np.asarray(kernel._polynomial, dtype=np.float64)
    assert kernel.support == 1.0
    u = grid()
    K = values(kernel, u)
    # The boxcar's window is open: u < 1; the others' are closed.
    inside = u < 1.0 if not kernel._continuous else u <= 1.0
    expected = np.polyval(coef[::-1], np.abs(u[inside]))
    np.testing.assert_allclose(K[inside], expected, rtol=1e-12, atol=1e-13)
    assert np.all(K[~inside] == 0.0)


@pytest.mark.parametrize("name", kernels_with("_polynomial"))
def test_polynomial_value_at_the_edge_and_the_open_window(name):
    kernel = CLASSES[name]()
    coef = np.asarray(kernel._polynomial, dtype=np.float64)
    at_edge = float(np.polyval(coef[::-1], 1.0))
    K_below, K_at = values(kernel, np.array([just_below(1.0), 1.0]))
    np.testing.assert_allclose(K_below, at_edge, atol=1e-13)
    if kernel._continuous:
        # The polynomial vanishes at the edge, so the window's closure is moot.
        assert at_edge == pytest.approx(0.0, abs=1e-15)
        assert K_at == pytest.approx(0.0, abs=1e-15)
    else:
        # A jump at u = 1: full weight just inside, none at 1.
        assert at_edge != 0.0
        assert K_at == 0.0


@pytest.mark.parametrize(
    "name",
    kernels_where(lambda c: c._polynomial is None and np.isfinite(c.support)),
)
def test_compact_kernel_without_polynomial_flag_is_no_polynomial(name):
    # Its values on the support are not those of a polynomial of the degrees
    # the flagged kernels have (the flag is not missing): a least-squares fit
    # of that degree would reproduce one to rounding.
    kernel = CLASSES[name]()
    degree = max(len(CLASSES[n]._polynomial) for n in kernels_with("_polynomial")) - 1
    u = np.cos(np.linspace(0.0, np.pi, 400)) * 0.5 + 0.5  # Chebyshev-like nodes
    fit = np.polynomial.Polynomial.fit(u, values(kernel, u), degree)
    assert np.max(np.abs(fit(u) - values(kernel, u))) > 1e-12


# -- _log_linear -----------------------------------------------------------------


@pytest.mark.parametrize("name", kernels_with("_log_linear"))
def test_log_linear_flag_is_the_log_of_the_kernel(name):
    kernel = CLASSES[name]()
    a, p = kernel._log_linear
    u = np.r_[grid(5.0, 1e-3), 10.0, 37.5, 1e3, 1e10]
    np.testing.assert_allclose(kernel.log_value(u), a * np.abs(u) ** p, rtol=1e-14)
    small = u[u <= 5.0]
    np.testing.assert_allclose(
        values(kernel, small), np.exp(a * small**p), rtol=1e-13, atol=0
    )


@pytest.mark.parametrize("name", kernels_where(lambda c: c._log_linear is None))
@pytest.mark.parametrize("p", [1, 2])
def test_kernel_without_log_linear_flag_is_not_decaying_log_linear(name, p):
    # log K(u) is not a u**p with one a < 0 (the flag is not missing).
    kernel = CLASSES[name]()
    u = np.array([0.0, 0.25, 0.5, 0.75])
    with np.errstate(divide="ignore"):
        L = np.asarray(kernel.log_value(u), dtype=np.float64)
    a = L[1] / u[1] ** p
    form = np.isfinite(L).all() and a < 0
    assert not (form and np.allclose(L, a * u**p, rtol=1e-12, atol=0))


# -- _native_sq ------------------------------------------------------------------


@pytest.mark.parametrize("name", KERNEL_NAMES)
def test_log_value_sq_is_log_value_of_the_root(name):
    kernel = CLASSES[name]()
    u = np.r_[grid(4.0, 1e-3), 30.0]
    expected = np.asarray(kernel.log_value(u), dtype=np.float64)
    got = np.asarray(kernel.log_value_sq(u * u), dtype=np.float64)
    assert np.array_equal(np.isneginf(got), np.isneginf(expected))
    finite = np.isfinite(expected)
    np.testing.assert_allclose(got[finite], expected[finite], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", KERNEL_NAMES)
def test_native_sq_flag_means_an_own_squared_evaluation(name):
    # The flag is set exactly where the class evaluates from u**2 itself.
    cls = CLASSES[name]
    assert bool(cls._native_sq) == (cls.log_value_sq is not Kernel.log_value_sq)


# -- _continuous -----------------------------------------------------------------


@pytest.mark.parametrize("name", KERNEL_NAMES)
def test_continuous_flag_agrees_with_the_largest_step(name):
    kernel = CLASSES[name]()
    u = np.r_[np.arange(0.0, 3.0, STEP), 3.0]
    u = np.unique(np.r_[u, just_below(1.0), 1.0, just_above(1.0)])
    K = values(kernel, u)
    jumps = np.abs(np.diff(K))
    slope_bound = MAX_SLOPE * np.diff(u) + 1e-14
    continuous = bool(np.all(jumps <= slope_bound))
    assert bool(kernel._continuous) == continuous


@pytest.mark.parametrize("name", kernels_where(lambda c: c._continuous))
def test_continuous_kernel_tends_to_its_value_at_the_support(name):
    kernel = CLASSES[name]()
    if np.isfinite(kernel.support):
        s = kernel.support
        deltas = np.array([1e-4, 1e-6, 1e-9, 1e-12])
        inside = values(kernel, s - deltas)
        at = float(values(kernel, np.array([s]))[0])
        assert at == pytest.approx(0.0, abs=1e-15)
        assert np.all(np.abs(inside - at) <= MAX_SLOPE * deltas + 1e-15)
        assert np.all(values(kernel, s + deltas) == 0.0)
    else:
        # Unbounded support: K(u) settles to its limit.
        u = np.array([1e4, 1e6, 1e8])
        K = values(kernel, u)
        assert np.all(np.isfinite(K))
        assert np.abs(K[-1] - K[-2]) <= 1e-6 * abs(float(values(kernel, 0.0)))


def test_some_kernel_is_discontinuous():
    assert any(not cls._continuous for cls in CLASSES.values())


# -- values, signs and log values ---------------------------------------------------


@pytest.mark.parametrize("name", KERNEL_NAMES)
def test_log_value_is_the_log_of_the_magnitude(name):
    kernel = CLASSES[name]()
    u = grid(30.0, 1e-3)
    K = values(kernel, u)
    L = np.asarray(kernel.log_value(u), dtype=np.float64)
    zero = K == 0
    assert np.all(np.isneginf(L[zero]))
    np.testing.assert_allclose(
        L[~zero], np.log(np.abs(K[~zero])), rtol=1e-10, atol=1e-10
    )


@pytest.mark.parametrize("name", KERNEL_NAMES)
def test_sign_agrees_with_the_values(name):
    kernel = CLASSES[name]()
    u = grid(30.0, 1e-3)
    K = values(kernel, u)
    sign = np.asarray(kernel.sign(u), dtype=np.float64)
    nonzero = K != 0
    np.testing.assert_array_equal(sign[nonzero], np.sign(K[nonzero]))
    if kernel.nonnegative:
        assert np.all(K >= 0)
        assert np.all(sign[K > 0] == 1)
    else:
        assert np.any(K < 0)


@pytest.mark.parametrize("name", kernels_where(lambda c: np.isfinite(c.support)))
def test_compact_support_is_where_the_kernel_vanishes(name):
    kernel = CLASSES[name]()
    s = kernel.support
    beyond = s + np.r_[np.logspace(-12, 3, 30)]
    assert np.all(values(kernel, beyond) == 0.0)
    assert np.all(values(kernel, np.linspace(0.0, just_below(s, 2), 500)) > 0)


@pytest.mark.parametrize(
    "name",
    list(KERNEL_NAMES),
)
def test_value_at_infinity_agrees_with_log_value_and_sign(name):
    kernel = CLASSES[name]()
    u = np.array([np.inf])
    with np.errstate(invalid="ignore"):
        K = values(kernel, u)
        expected = np.exp(kernel.log_value(u)) * kernel.sign(u)
    np.testing.assert_array_equal(K, expected)


# -- user kernels: no fast path from an inherited flag ---------------------------


class MyGaussian(Gaussian):
    pass


class MyEpanechnikov(Epanechnikov):
    pass


class MyBoxcar(Boxcar):
    pass


class MyLaplacian(Laplacian):
    pass


USER = [MyGaussian, MyEpanechnikov, MyBoxcar, MyLaplacian]


@pytest.mark.parametrize("cls", USER, ids=lambda c: c.__name__)
def test_user_subclass_gets_no_fast_path(cls):
    kernel, base = cls(), cls.__mro__[1]()
    assert traits.is_user(kernel) and not traits.is_user(base)
    # The flags are inherited, but not trusted.
    for flag in ("_log_linear", "_polynomial", "_native_sq", "_continuous"):
        assert getattr(kernel, flag) == getattr(base, flag)
    assert traits.log_linear_form(kernel) is None
    assert traits.polynomial(kernel) is None
    assert traits.is_gaussian(kernel) is False
    for squared in (False, True):
        assert traits.log_linear_coef(Head(kernel, 0.5), squared) is None
    for metric in ("euclidean", "cityblock"):
        assert traits.sorted_eligible(kernel, metric, None, 1) is False
        assert traits.gaussian_eligible(kernel, metric, None, 1) is False
    # Support is a declared attribute, not a flag.
    assert traits.is_compact(kernel) == traits.is_compact(base)
    assert cls.__name__ not in traits.polynomial_kernel_names()


@pytest.mark.parametrize(
    "trait",
    [traits.native_squared, traits.is_continuous],
    ids=lambda f: f.__name__,
)
@pytest.mark.parametrize("cls", [MyGaussian, MyEpanechnikov], ids=lambda c: c.__name__)
def test_user_subclass_flag_traits_are_false(trait, cls):
    assert trait(cls()) is False


class Exponential(Gaussian):
    """exp(-u), by a user subclass of the Gaussian overriding its evaluation
    (but not log_value_sq)."""

    def __call__(self, u):
        return np.exp(-np.asarray(u, dtype=np.float64))

    def log_value(self, u):
        return -np.asarray(u, dtype=np.float64)


def test_user_subclass_is_evaluated_by_its_own_values():
    rng = np.random.default_rng(0)
    X = rng.uniform(0.0, 4.0, size=(60, 2))
    Q = rng.uniform(0.0, 4.0, size=(7, 2))
    V = np.sin(X[:, :1])
    kernel, h = Exponential(), 0.5
    ((S, den, M),) = kernel_sums(Q, X, V, [Head(kernel, h)])
    K = kernel(cdist(Q, X) / h)
    np.testing.assert_allclose(S[:, 0] / den, (K @ V)[:, 0] / K.sum(axis=1))
    est = NadarayaWatsonRegressor(kernel=kernel, bandwidth=h).fit(X, V[:, 0])
    np.testing.assert_allclose(est.predict(Q), (K @ V)[:, 0] / K.sum(axis=1))


@pytest.mark.parametrize("cls", [MyGaussian, MyEpanechnikov], ids=lambda c: c.__name__)
def test_backends_refuse_user_kernels_the_flags_would_allow(cls):
    # The backends that serve the built-in kernel from its polynomial or
    # Gaussian form refuse the subclass; the others serve both alike.
    kernel, base = cls(), cls.__mro__[1]()
    forms = [
        name
        for name, backend in BACKENDS.items()
        if backend.why_not(base, "euclidean", None, 1) is None
        and backend.why_not(kernel, "euclidean", None, 1) is not None
    ]
    assert forms
    assert set(forms) <= {"sorted", "fgt", "binned"}


# -- names and metrics -------------------------------------------------------------


def test_polynomial_kernel_names_lists_the_polynomial_kernels_once():
    names = traits.polynomial_kernel_names()
    assert len(names) == len(set(names))
    classes = [KERNELS[n] for n in names]
    assert len(classes) == len(set(classes))
    expected = {cls for cls in KERNELS.values() if cls._polynomial is not None}
    assert set(classes) == expected
    # One name per class: the registry's first for it.
    for n in names:
        assert n in CLASSES
    # The sorted backend's refusal lists them.
    reason = BACKENDS["sorted"].why_not(Laplacian(), "euclidean", None, 1)
    assert ", ".join(names) in reason


@pytest.mark.parametrize(
    ("metric", "params"),
    [
        ("euclidean", None),
        ("cityblock", None),
        ("chebyshev", None),
        ("minkowski", {"p": 3.0}),
        ("minkowski", None),
        ("minkowski", {"p": 1.5}),
    ],
)
def test_tree_p_is_the_minkowski_p_of_the_metric(metric, params):
    rng = np.random.default_rng(1)
    A, B = rng.normal(size=(20, 3)), rng.normal(size=(15, 3))
    p = traits.tree_p(metric, params)
    assert p is not None and p >= 1
    expected = cdist(A, B, metric, **(params or {}))
    got = cdist(A, B, "chebyshev") if math.isinf(p) else cdist(A, B, "minkowski", p=p)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    # In one dimension each of them is |x - q|.
    assert traits.line_metric(metric, params)
    a, b = A[:, :1], B[:, :1]
    np.testing.assert_allclose(
        cdist(a, b, metric, **(params or {})), np.abs(a - b.T), rtol=1e-12
    )


@pytest.mark.parametrize(
    ("metric", "params"),
    [
        ("cosine", None),
        ("seuclidean", {"V": np.array([4.0])}),
        ("minkowski", {"p": 0.5}),
        ("euclidean", {"w": np.array([4.0])}),
    ],
)
def test_line_metric_refuses_what_is_not_the_distance_on_the_line(metric, params):
    assert traits.tree_p(metric, params) is None
    assert not traits.line_metric(metric, params)
