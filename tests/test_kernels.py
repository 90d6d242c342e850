"""Properties of every kernel in the registry, user kernels and ``get_kernel``."""

import functools
import math
import pickle

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import integrate
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

import sknw.kernels
from sknw import NadarayaWatsonRegressor
from sknw.datasets import make_d2l_sine
from sknw.kernels import (
    KERNELS,
    Biweight,
    Boxcar,
    Gaussian,
    Kernel,
    Laplacian,
    Silverman,
    Triangular,
    Triweight,
    get_kernel,
)

NAMES = sorted(KERNELS)
CLASSES = sorted(set(KERNELS.values()), key=lambda cls: cls.__name__)
COMPACT = [cls for cls in CLASSES if np.isfinite(cls.support)]
UNBOUNDED = [cls for cls in CLASSES if not np.isfinite(cls.support)]
#: Kernels whose second moment diverges.
INFINITE_VARIANCE = {"Constant", "Cauchy"}
FINITE_VARIANCE = [cls for cls in CLASSES if cls.__name__ not in INFINITE_VARIANCE]
#: Kernels whose unit-mass normalisation exists (all but the constant).
INTEGRABLE = [cls for cls in CLASSES if cls.__name__ != "Constant"]
#: Where the Silverman kernel changes sign: u = 3 pi / (2 sqrt 2).
SILVERMAN_ZERO = 3.0 * math.pi / (2.0 * math.sqrt(2.0))

by_class = functools.partial(pytest.mark.parametrize, ids=lambda cls: cls.__name__)


def _evaluate(kernel, u):
    return np.asarray(kernel(np.asarray(u, dtype=np.float64)), dtype=np.float64)


def _scalar(kernel, u):
    return float(_evaluate(kernel, [abs(u)])[0])


@functools.cache
def _line_integral(cls, k, power):
    """``integral of u**k K(|u|)**power`` over the real line, by quadrature.

    The line is split at 0 and +-1 (kinks and jumps of the compact kernels) and
    each piece integrated with tight tolerances.
    """
    kernel = cls()
    if np.isfinite(cls.support):
        pieces = [(-cls.support, 0.0), (0.0, cls.support)]
    else:
        pieces = [(-np.inf, -1.0), (-1.0, 0.0), (0.0, 1.0), (1.0, np.inf)]

    def f(u):
        return u**k * _scalar(kernel, u) ** power

    total = 0.0
    for a, b in pieces:
        value, _ = integrate.quad(f, a, b, epsabs=0.0, epsrel=1e-12, limit=500)
        total += value
    return total


def _mass(cls):
    return _line_integral(cls, 0, 1)


def _reference_variance(cls):
    return _line_integral(cls, 2, 1) / _mass(cls)


def _reference_roughness(cls):
    return _line_integral(cls, 0, 2) / _mass(cls) ** 2


# -- registry ----------------------------------------------------------------


def test_registry_holds_kernel_classes():
    assert len(CLASSES) == 14
    for name, cls in KERNELS.items():
        assert issubclass(cls, Kernel), name
        assert name == name.lower()
        assert cls.support in (1.0, np.inf)


@pytest.mark.parametrize(
    "alias, cls",
    [
        ("tophat", Boxcar),
        ("uniform", Boxcar),
        ("boxcar", Boxcar),
        ("quartic", Biweight),
        ("biweight", Biweight),
        ("exponential", Laplacian),
        ("laplacian", Laplacian),
    ],
)
def test_get_kernel_aliases(alias, cls):
    kernel = get_kernel(alias)
    assert type(kernel) is cls


@pytest.mark.parametrize("name", NAMES)
def test_get_kernel_by_name_gives_new_instance(name):
    first, second = get_kernel(name), get_kernel(name)
    assert type(first) is KERNELS[name]
    assert first == second
    assert first is not second


def test_get_kernel_unknown_name_lists_valid_names():
    with pytest.raises(ValueError, match="Unknown kernel 'gausian'") as info:
        get_kernel("gausian")
    message = str(info.value)
    for name in NAMES:
        assert name in message


@pytest.mark.parametrize("bad", [None, 3, 1.5, Gaussian, [Gaussian()], np.exp])
def test_get_kernel_rejects_non_kernels(bad):
    with pytest.raises(TypeError, match="kernel must be a string or"):
        get_kernel(bad)


@by_class("cls", CLASSES)
def test_get_kernel_copies_instances(cls):
    kernel = cls()
    resolved = get_kernel(kernel)
    assert resolved is not kernel
    assert type(resolved) is cls
    assert resolved == kernel


# -- values ------------------------------------------------------------------


@by_class("cls", [cls for cls in CLASSES if cls.nonnegative])
def test_nonnegative(cls):
    u = np.concatenate([np.linspace(0.0, 10.0, 2001), [50.0, 1e3, 1e6, 1e30]])
    values = _evaluate(cls(), u)
    assert values.shape == u.shape
    assert np.all(values >= 0)
    assert not np.any(np.isnan(values))


def test_only_silverman_may_be_negative():
    assert [cls for cls in CLASSES if not cls.nonnegative] == [Silverman]


def test_silverman_changes_sign_at_three_quarter_pi():
    kernel = Silverman()
    before = np.linspace(0.0, SILVERMAN_ZERO, 500, endpoint=False)
    after = np.linspace(SILVERMAN_ZERO, 7 * math.pi / (2 * math.sqrt(2)), 500)[1:-1]
    assert np.all(_evaluate(kernel, before) > 0)
    assert np.all(_evaluate(kernel, after) < 0)
    # Closed form: -(1/2) e^{-s} at s + pi/4 = 3 pi / 2, i.e. s = 5 pi / 4.
    u_min = 5 * math.pi / 4 * math.sqrt(2)
    assert_allclose(kernel([u_min]), [-0.5 * math.exp(-5 * math.pi / 4)], rtol=1e-12)


def test_silverman_sign_matches_values():
    kernel = Silverman()
    u = np.linspace(0.0, 30.0, 3001)
    values = _evaluate(kernel, u)
    assert np.any(values < 0) and np.any(values > 0)
    assert_array_equal(kernel.sign(u), np.sign(values))


@by_class("cls", COMPACT)
def test_compact_kernels_vanish_beyond_support(cls):
    kernel = cls()
    assert cls.support == 1.0
    assert_array_equal(_evaluate(kernel, [1.0001, 2.0, 1e6]), 0.0)
    assert np.all(_evaluate(kernel, np.linspace(0.0, 0.999, 1000)) > 0)


@by_class("cls", UNBOUNDED)
def test_unbounded_kernels_are_nonzero_far_out(cls):
    values = _evaluate(cls(), [1.0001, 2.0, 5.0])
    assert np.all(values != 0)


def test_boxcar_is_open_at_one():
    assert_array_equal(Boxcar()([0.0, 0.999, 1.0, 1.0 + 1e-12]), [1.0, 1.0, 0.0, 0.0])


@pytest.mark.parametrize(
    "cls, u, expected",
    [
        (Gaussian, [0.0, 1.0, 2.0], np.exp([0.0, -0.5, -2.0])),
        (Triangular, [0.0, 0.25, 1.0], [1.0, 0.75, 0.0]),
        (sknw.kernels.Epanechnikov, [0.0, 0.5, 1.0], [1.0, 0.75, 0.0]),
        (Biweight, [0.5], [0.75**2]),
        (Triweight, [0.5], [0.75**3]),
        (sknw.kernels.Tricube, [0.5], [(1 - 0.125) ** 3]),
        (sknw.kernels.Cosine, [0.0, 2.0 / 3.0], [1.0, 0.5]),
        (Laplacian, [0.0, 3.0], np.exp([0.0, -3.0])),
        (sknw.kernels.Logistic, [0.0, 1.0], [0.25, 1 / (math.e + 2 + 1 / math.e)]),
        (sknw.kernels.Sigmoid, [1.0], [2 / math.pi / (math.e + 1 / math.e)]),
        (sknw.kernels.Cauchy, [0.0, 2.0], [1.0, 0.2]),
        (Silverman, [0.0], [0.5 * math.sin(math.pi / 4)]),
        (sknw.kernels.Constant, [0.0, 1e9], [1.0, 1.0]),
    ],
    ids=lambda v: getattr(v, "__name__", None),
)
def test_values_match_closed_forms(cls, u, expected):
    assert_allclose(cls()(np.array(u)), expected, rtol=1e-12, atol=1e-15)


@by_class("cls", CLASSES)
def test_maximal_at_zero(cls):
    kernel = cls()
    k0 = _scalar(kernel, 0.0)
    values = _evaluate(kernel, np.linspace(0.0, 20.0, 4001))
    assert k0 > 0
    assert np.all(k0 >= np.abs(values))


@by_class("cls", [cls for cls in CLASSES if cls is not Silverman])
def test_monotone_non_increasing_on_support(cls):
    upper = cls.support if np.isfinite(cls.support) else 30.0
    values = _evaluate(cls(), np.linspace(0.0, upper, 3001))
    assert np.all(np.diff(values) <= 0)


@by_class("cls", CLASSES)
def test_accepts_scalars_lists_and_2d_arrays(cls):
    kernel = cls()
    grid = np.linspace(0.0, 2.0, 12).reshape(3, 4)
    values = _evaluate(kernel, grid)
    assert values.shape == (3, 4)
    assert_array_equal(_evaluate(kernel, grid.ravel().tolist()), values.ravel())
    assert kernel.log_value(grid).shape == (3, 4)


# -- log domain --------------------------------------------------------------


@by_class("cls", CLASSES)
def test_log_value_is_log_of_value(cls):
    kernel = cls()
    u = np.concatenate([np.linspace(0.0, 3.0, 301), [0.999, 1.0, 1.0001, 2.0]])
    if np.isfinite(cls.support):
        u = np.concatenate([u, [1e6, 1e30]])
    values = np.abs(_evaluate(kernel, u))
    logs = np.asarray(kernel.log_value(u), dtype=np.float64)
    positive = values > 0
    assert positive.any()
    assert_allclose(logs[positive], np.log(values[positive]), rtol=1e-9, atol=1e-12)
    assert np.all(logs[~positive] == -np.inf)
    if np.isfinite(cls.support):
        assert (~positive).any()


def _reference_log(cls, u):
    """Closed-form logarithms of the unbounded kernels, valid for huge ``u``."""
    u = np.asarray(u, dtype=np.float64)
    s = u / math.sqrt(2.0)
    forms = {
        "Gaussian": lambda: -0.5 * u**2,
        "Laplacian": lambda: -u,
        "Constant": lambda: np.zeros_like(u),
        # 1 / (e^u + 2 + e^-u)
        "Logistic": lambda: -np.logaddexp(np.logaddexp(u, -u), math.log(2.0)),
        # (2 / pi) / (e^u + e^-u)
        "Sigmoid": lambda: math.log(2.0 / math.pi) - np.logaddexp(u, -u),
        "Cauchy": lambda: -np.log1p(u**2),
        "Silverman": lambda: (
            math.log(0.5) - s + np.log(np.abs(np.sin(s + math.pi / 4)))
        ),
    }
    return forms[cls.__name__]()


@by_class("cls", UNBOUNDED)
def test_log_value_finite_far_out(cls):
    u = np.array([50.0, 1e3, 1e100])
    logs = np.asarray(cls().log_value(u), dtype=np.float64)
    assert np.all(np.isfinite(logs))
    assert_allclose(logs, _reference_log(cls, u), rtol=1e-12)


def test_gaussian_and_laplacian_log_values_exact():
    u = np.array([0.0, 1.0, 50.0, 1e3, 1e100])
    assert_allclose(
        Gaussian().log_value(u), [0.0, -0.5, -1250.0, -5e5, -5e199], rtol=1e-15
    )
    assert_array_equal(Laplacian().log_value(u), -u)
    assert_allclose(Gaussian().log_value_sq(u**2), [0, -0.5, -1250, -5e5, -5e199])


@by_class("cls", CLASSES)
def test_log_value_sq_matches_log_value(cls):
    kernel = cls()
    u = np.concatenate(
        [np.linspace(0.0, 3.0, 301), [0.999, 1.0, 1.0001, 2.0, 50.0, 1e3, 1e100]]
    )
    expected = np.asarray(kernel.log_value(u), dtype=np.float64)
    actual = np.asarray(kernel.log_value_sq(u**2), dtype=np.float64)
    finite = np.isfinite(expected)
    assert_array_equal(np.isfinite(actual), finite)
    assert_array_equal(actual[~finite], expected[~finite])
    assert_allclose(actual[finite], expected[finite], rtol=1e-12, atol=1e-14)


# -- constants of the unit-mass kernel ------------------------------------------


@by_class("cls", FINITE_VARIANCE)
def test_variance_matches_quadrature(cls):
    if cls is Silverman:
        # A fourth-order kernel: its second moment vanishes.
        assert cls().variance == 0.0
        assert abs(_reference_variance(cls)) < 1e-9
    else:
        assert_allclose(cls().variance, _reference_variance(cls), rtol=1e-7)


@by_class("cls", INTEGRABLE)
def test_roughness_matches_quadrature(cls):
    assert_allclose(cls().roughness, _reference_roughness(cls), rtol=1e-7)


@pytest.mark.parametrize("name", ["constant", "cauchy"])
def test_infinite_variance(name):
    assert KERNELS[name]().variance == np.inf


def test_constant_has_zero_roughness():
    assert KERNELS["constant"]().roughness == 0.0


@by_class("cls", FINITE_VARIANCE)
def test_numerical_defaults_agree_with_closed_forms(cls):
    kernel = cls()
    variance = Kernel.variance.fget(kernel)
    roughness = Kernel.roughness.fget(kernel)
    if cls is Silverman:
        assert abs(variance) < 1e-9
    else:
        assert_allclose(variance, kernel.variance, rtol=1e-7)
    assert_allclose(roughness, kernel.roughness, rtol=1e-7)


@by_class("cls", CLASSES)
def test_canonical_scale(cls):
    kernel = cls()
    if cls.__name__ in INFINITE_VARIANCE or cls is Silverman:
        assert np.isnan(kernel.canonical_scale)
        return
    variance, roughness = _reference_variance(cls), _reference_roughness(cls)
    expected = (roughness / variance**2) ** 0.2
    assert isinstance(kernel.canonical_scale, float)
    assert_allclose(kernel.canonical_scale, expected, rtol=1e-7)


def test_gaussian_canonical_scale():
    assert_allclose(Gaussian().canonical_scale, (2 * math.sqrt(math.pi)) ** -0.2)


# -- parameter protocol -------------------------------------------------------


@by_class("cls", CLASSES)
def test_builtins_have_no_parameters(cls):
    kernel = cls()
    assert kernel.get_params() == {}
    assert kernel.get_params(deep=False) == {}
    assert kernel.set_params() is kernel
    with pytest.raises(ValueError, match="Invalid parameter 'width'"):
        kernel.set_params(width=2.0)


@by_class("cls", CLASSES)
def test_clone(cls):
    kernel = cls()
    cloned = clone(kernel)
    assert cloned is not kernel
    assert type(cloned) is cls
    assert cloned == kernel


@by_class("cls", CLASSES)
def test_pickle_round_trip(cls):
    kernel = cls()
    restored = pickle.loads(pickle.dumps(kernel))
    assert type(restored) is cls
    assert restored == kernel
    u = np.linspace(0.0, 3.0, 31)
    assert_array_equal(_evaluate(restored, u), _evaluate(kernel, u))


@by_class("cls", CLASSES)
def test_repr(cls):
    kernel = cls()
    assert repr(kernel) == f"{cls.__name__}()"
    assert eval(repr(kernel), vars(sknw.kernels)) == kernel


@by_class("cls", CLASSES)
def test_equality_and_hash(cls):
    a, b = cls(), cls()
    assert a == b
    assert not a != b
    assert hash(a) == hash(b)
    assert len({a, b}) == 1
    others = [other() for other in CLASSES if other is not cls]
    assert all(a != other for other in others)
    assert len({a, *others}) == len(CLASSES)
    assert a != cls.__name__.lower()


def test_subclass_instance_is_not_equal_to_parent():
    assert issubclass(Triweight, Biweight)
    assert Triweight() != Biweight()
    assert Biweight() != Triweight()


# -- user kernels --------------------------------------------------------------


class Power(Kernel):
    """``1 - u**p`` on ``u <= 1``."""

    support = 1.0

    def __init__(self, p=2.0):
        self.p = p

    def __call__(self, u):
        u = np.asarray(u, dtype=float)
        return np.where(u <= 1, 1 - u**self.p, 0.0)


def test_user_kernel_params():
    kernel = Power(p=3.0)
    assert kernel.get_params() == {"p": 3.0}
    assert repr(kernel) == "Power(p=3.0)"
    assert kernel.set_params(p=4.0) is kernel
    assert kernel.p == 4.0
    assert_allclose(kernel([0.5]), [1 - 0.5**4])
    with pytest.raises(ValueError, match=r"Invalid parameter 'q'.*\['p'\]"):
        kernel.set_params(q=1.0)


def test_user_kernel_equality_depends_on_params():
    assert Power(p=3.0) == Power(p=3.0)
    assert hash(Power(p=3.0)) == hash(Power(p=3.0))
    assert Power(p=3.0) != Power(p=2.0)
    assert Power(p=2.0) != Kernel()


def test_user_kernel_clone_and_pickle():
    kernel = Power(p=3.0)
    for copy in (clone(kernel), pickle.loads(pickle.dumps(kernel))):
        assert copy is not kernel
        assert type(copy) is Power
        assert copy.p == 3.0
        assert copy == kernel
    cloned = clone(kernel)
    cloned.set_params(p=5.0)
    assert kernel.p == 3.0


def test_user_kernel_numerical_constants():
    # For p = 3: mass 3/2, second moment 1/3, integral of the square 9/7.
    kernel = Power(p=3.0)
    assert_allclose(kernel.variance, 2.0 / 9.0, rtol=1e-9)
    assert_allclose(kernel.roughness, 4.0 / 7.0, rtol=1e-9)
    assert_allclose(kernel.canonical_scale, ((4 / 7) / (2 / 9) ** 2) ** 0.2)
    assert get_kernel(kernel) == kernel


@pytest.mark.filterwarnings("ignore::sknw.EmptyWindowWarning")
def test_grid_search_over_kernels():
    X, y, _, _ = make_d2l_sine(random_state=0)
    kernels = ["gaussian", "epanechnikov", Triangular(), Power(p=3.0)]
    bandwidths = [0.3, 1.0]
    search = GridSearchCV(
        NadarayaWatsonRegressor(),
        {"kernel": kernels, "bandwidth": bandwidths},
        cv=3,
    ).fit(X, y)
    assert len(search.cv_results_["params"]) == 8
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    assert search.best_params_["kernel"] in kernels
    assert search.best_params_["bandwidth"] in bandwidths
    best = search.best_estimator_
    assert best.kernel_ is not best.kernel
    assert best.kernel_ == get_kernel(best.kernel)
    assert search.best_score_ == np.max(search.cv_results_["mean_test_score"])
    # The parameter values of the grid are not modified.
    assert kernels[3].p == 3.0


def test_fitted_kernel_is_a_copy():
    X, y, _, _ = make_d2l_sine(random_state=0)
    kernel = Power(p=3.0)
    reg = NadarayaWatsonRegressor(kernel=kernel, bandwidth=1.0).fit(X, y)
    assert reg.kernel is kernel
    assert reg.kernel_ is not kernel
    assert reg.kernel_ == kernel
    # A triangular-like kernel: estimates are averages of the targets.
    pred = reg.predict(X)
    assert np.all((pred >= y.min()) & (pred <= y.max()))


class NegativeKernel(Kernel):
    """Declares itself non-negative but is negative beyond ``u = pi / 2``."""

    def __call__(self, u):
        return np.cos(np.asarray(u, dtype=float))


class NegativeCompactKernel(Kernel):
    """``1 - u`` without the cut-off at the support."""

    support = 1.0

    def __call__(self, u):
        return 1.0 - np.asarray(u, dtype=float)


class NaNKernel(Kernel):
    def __call__(self, u):
        u = np.asarray(u, dtype=float)
        return np.where(u < 0.5, np.nan, np.exp(-u))


class InfiniteKernel(Kernel):
    def __call__(self, u):
        u = np.asarray(u, dtype=float)
        return np.where(u == 0, np.inf, np.exp(-u))


class FlatteningKernel(Kernel):
    """Returns a 1-D array whatever the input shape."""

    def __call__(self, u):
        return np.exp(-np.asarray(u, dtype=float)).ravel()


class ExtraAxisKernel(Kernel):
    """Returns an array with a trailing axis of length 1."""

    def __call__(self, u):
        return np.exp(-np.asarray(u, dtype=float))[..., np.newaxis]


class ReducingKernel(Kernel):
    """Sums over the last axis instead of evaluating elementwise."""

    def __call__(self, u):
        return np.exp(-np.asarray(u, dtype=float)).sum(axis=-1)


BAD_VALUES = [NegativeKernel, NegativeCompactKernel, NaNKernel, InfiniteKernel]
BAD_SHAPES = [FlatteningKernel, ExtraAxisKernel, ReducingKernel]


@pytest.mark.filterwarnings("ignore::scipy.integrate.IntegrationWarning")
@pytest.mark.parametrize("bandwidth", ["scott", 1.0])
@by_class("cls", BAD_VALUES)
def test_user_kernel_with_bad_values_is_reported(cls, bandwidth):
    X, y, _, _ = make_d2l_sine(random_state=0)
    reg = NadarayaWatsonRegressor(kernel=cls(), bandwidth=bandwidth)
    with pytest.raises(ValueError, match="NaN, infinite or negative values"):
        reg.fit(X, y).predict(X)


@pytest.mark.filterwarnings("ignore::scipy.integrate.IntegrationWarning")
@pytest.mark.parametrize("bandwidth", ["scott", 1.0])
@by_class("cls", BAD_SHAPES)
def test_user_kernel_with_bad_shape_is_reported(cls, bandwidth):
    X, y, _, _ = make_d2l_sine(random_state=0)
    reg = NadarayaWatsonRegressor(kernel=cls(), bandwidth=bandwidth)
    with pytest.raises(ValueError, match="evaluated elementwise"):
        reg.fit(X, y).predict(X)


@by_class("cls", BAD_VALUES)
def test_user_kernel_with_bad_values_in_attention_weights(cls):
    X, y, _, _ = make_d2l_sine(random_state=0)
    reg = NadarayaWatsonRegressor(kernel=cls(), bandwidth=1.0).fit(X, y)
    with pytest.raises(ValueError, match="NaN, infinite or negative values"):
        reg.attention_weights(X)


class SignedKernel(Kernel):
    """A user kernel that declares negative values: accepted."""

    nonnegative = False

    def __call__(self, u):
        u = np.asarray(u, dtype=float)
        return (1.0 - u * u) * np.exp(-0.5 * u * u)


def test_user_kernel_declared_signed_is_accepted():
    X, y, _, _ = make_d2l_sine(random_state=0)
    reg = NadarayaWatsonRegressor(kernel=SignedKernel(), bandwidth=1.0).fit(X, y)
    pred = reg.predict(X[:5])
    u = np.abs(X[:5] - X[:, 0]) / 1.0
    weights = (1.0 - u**2) * np.exp(-0.5 * u**2)
    assert np.any(weights < 0)
    assert_allclose(pred, weights @ y / weights.sum(axis=1), rtol=1e-10)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_derivatives_are_those_of_the_kernels(name):
    # Central differences away from the kinks (0 and the edge of the support).
    kernel = KERNELS[name]()
    u = np.array([0.05, 0.2, 0.5, 0.8, 0.97, 1.2, 3.0, 7.0])
    h = 1e-6
    numeric = (kernel(u + h) - kernel(u - h)) / (2 * h)
    np.testing.assert_allclose(kernel.derivative(u), numeric, rtol=1e-6, atol=1e-9)
    assert kernel.derivative(np.zeros((2, 3))).shape == (2, 3)


def test_a_user_kernel_without_derivative_says_what_to_add():
    class Bump(Kernel):
        def __call__(self, u):
            return np.exp(-(np.asarray(u) ** 4))

    with pytest.raises(NotImplementedError, match=r"implement derivative\(u\)"):
        Bump().derivative(np.ones(2))


def test_a_user_subclass_of_a_polynomial_kernel_defines_its_derivative():
    class Flatter(sknw.kernels.Epanechnikov):
        def __call__(self, u):
            return np.where(np.asarray(u) <= 1, 1 - np.asarray(u) ** 4, 0.0)

    with pytest.raises(NotImplementedError, match="derivative"):
        Flatter().derivative(np.ones(2))
