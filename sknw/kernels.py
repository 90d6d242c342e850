"""Kernel functions of the scaled distance ``u = distance / bandwidth``.

A kernel here is a function ``K(u)`` of the non-negative scaled distance between a
query and a training point. Nadaraya--Watson estimators normalise the kernel
weights over the training points, so the kernels below are written without their
normalising constants: only their shape matters for the estimate. The constants
that bandwidth rules need (:attr:`Kernel.variance`, :attr:`Kernel.roughness`) are
those of the kernel normalised to integrate to one on the real line.

Every kernel is a small object that stores its parameters only and can be given
to an estimator by name (see :func:`get_kernel`), as an instance, or as an
instance of a user subclass of :class:`Kernel`.
"""

import copy
import inspect
import math

import numpy as np
from scipy import integrate

__all__ = [
    "Kernel",
    "Gaussian",
    "Boxcar",
    "Constant",
    "Epanechnikov",
    "Triangular",
    "Biweight",
    "Triweight",
    "Tricube",
    "Cosine",
    "Laplacian",
    "Logistic",
    "Sigmoid",
    "Cauchy",
    "Silverman",
    "KERNELS",
    "get_kernel",
]


class Kernel:
    """Base class of all kernels.

    A subclass implements :meth:`__call__` (the kernel as a function of the scaled
    distance ``u >= 0``) and sets the class attribute :attr:`support` (``1.0`` for a
    kernel that vanishes for ``u > 1``, ``np.inf`` otherwise). It may override
    :meth:`log_value` for a stable log-domain evaluation, and ``variance`` and
    ``roughness`` with closed forms; by default they are integrated numerically.

    Parameters of a subclass are the arguments of its ``__init__``, stored under
    the same names, as for scikit-learn estimators: kernels support
    ``get_params``/``set_params``, so :func:`sklearn.base.clone` and
    :class:`~sklearn.model_selection.GridSearchCV` treat them like any other
    hyper-parameter value. Two kernels are equal when they are of the same class
    with equal parameters.

    Attributes
    ----------
    support : float
        Radius of the kernel's support in units of the bandwidth: ``K(u) = 0`` for
        ``u > support``.
    nonnegative : bool
        Whether ``K(u) >= 0`` for all ``u``. Only non-negative kernels guarantee
        that estimates are convex combinations of the training targets.

    See Also
    --------
    get_kernel : Resolve a kernel name or object.

    Examples
    --------
    A user kernel needs only ``__call__`` and ``support``:

    >>> import numpy as np
    >>> from sknw.kernels import Kernel
    >>> class Power(Kernel):
    ...     support = 1.0
    ...
    ...     def __init__(self, p=2.0):
    ...         self.p = p
    ...
    ...     def __call__(self, u):
    ...         u = np.asarray(u, dtype=float)
    ...         return np.where(u <= 1, 1 - u**self.p, 0.0)
    >>> k = Power(p=3.0)
    >>> k
    Power(p=3.0)
    >>> k(np.array([0.0, 0.5, 2.0]))
    array([1.   , 0.875, 0.   ])
    >>> k.get_params()
    {'p': 3.0}
    >>> round(k.variance, 6)  # (1/6) / (3/4)
    0.222222
    """

    support = np.inf
    nonnegative = True

    def __call__(self, u):
        """Evaluate the kernel at scaled distances ``u >= 0``.

        Parameters
        ----------
        u : array-like
            Non-negative scaled distances.

        Returns
        -------
        ndarray
            ``K(u)``, of the shape of ``u``.
        """
        raise NotImplementedError(
            f"{type(self).__name__} must implement __call__(u), the kernel as a "
            "function of the scaled distance u >= 0."
        )

    def log_value(self, u):
        """Logarithm of ``K(u)`` (of ``|K(u)|`` if not non-negative).

        ``-inf`` where the kernel is zero; NaN where a kernel that declares itself
        non-negative returns a negative value, which the estimators report.

        The estimators evaluate kernels in the log domain so that weights which
        would underflow are shifted per query before exponentiation. The default
        takes the logarithm of :meth:`__call__`; built-in kernels with unbounded
        support override it with a closed form that does not underflow.

        Parameters
        ----------
        u : ndarray
            Non-negative scaled distances.

        Returns
        -------
        ndarray
            Same shape as ``u``.
        """
        values = np.asarray(self(u), dtype=np.float64)
        if not self.nonnegative:
            values = np.abs(values)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(values)

    def log_value_sq(self, u2):
        """Logarithm of ``|K(sqrt(u2))|`` from the squared scaled distance.

        Kernels that are functions of ``u**2`` (the Gaussian, Epanechnikov, …)
        override this to avoid a square root on the euclidean fast path.

        Parameters
        ----------
        u2 : ndarray
            Squared non-negative scaled distances.

        Returns
        -------
        ndarray
            Same shape as ``u2``.
        """
        return self.log_value(np.sqrt(u2))

    #: Whether :meth:`log_value_sq` is a native evaluation (no square root).
    _native_sq = False
    #: ``(a, p)`` when ``log K(u) = a * u**p`` exactly (a fused fast path).
    _log_linear = None
    #: Whether K is continuous: rounding of distances cannot flip a weight.
    _continuous = True
    #: ``(a_0, a_1, ...)`` when ``K(u) = sum_c a_c u**c`` on the support
    #: ``u <= 1`` (``u < 1`` for the boxcar): the exact sorted 1-D path.
    _polynomial = None

    def derivative(self, u):
        """The derivative ``K'(u)`` at scaled distances ``u >= 0``.

        For the estimators' ``gradient`` (one-sided values at a kink).

        Parameters
        ----------
        u : ndarray
            Non-negative scaled distances.

        Returns
        -------
        ndarray
            ``K'(u)``, of the shape of ``u``.
        """
        builtin = type(self).__module__ == __name__
        if builtin and self._polynomial is not None:  # sum_c c a_c u**(c - 1)
            u = _asfloat(u)
            slope = np.polyder(np.asarray(self._polynomial, float)[::-1])
            return _where_inside(u, np.polyval(slope, np.minimum(u, 1.0)))
        raise NotImplementedError(
            f"{type(self).__name__} defines no derivative(u), which gradients "
            "need: implement derivative(u), the derivative of the kernel in "
            "the scaled distance u."
        )

    def _log_slope(self, u):
        """``log(-K'(u) / u)`` in closed form for ``u > 0`` (kernels of
        unbounded support, whose derivative underflows where this does not),
        or None."""
        return None

    def sign(self, u):
        """Sign of ``K(u)``; only used for kernels that are not non-negative.

        Parameters
        ----------
        u : ndarray
            Non-negative scaled distances.

        Returns
        -------
        ndarray
            -1, 0 or 1, of the shape of ``u``.
        """
        return np.sign(self(u))

    # -- constants used by bandwidth rules -------------------------------------

    def _moment(self, k, power=1):
        """``2 * integral_0^support u**k K(u)**power du`` by quadrature."""
        upper = self.support

        def f(u):
            return u**k * _evaluate_one(self, u) ** power

        total = 0.0
        # Split at 1 so that kernels with a kink or jump there integrate well.
        for a, b in ((0.0, min(1.0, upper)), (1.0, upper)):
            if b > a:
                val, _ = integrate.quad(f, a, b, limit=200)
                total += val
        return 2.0 * total

    @property
    def variance(self):
        """Variance of the kernel normalised to a unit-mass density on the line.

        ``inf`` where the second moment diverges (constant, Cauchy).
        """
        mass = self._moment(0)
        if not np.isfinite(mass) or mass <= 0:
            return np.inf
        return self._moment(2) / mass

    @property
    def roughness(self):
        """``R(K) = integral K(u)**2 du`` of the unit-mass kernel on the line."""
        mass = self._moment(0)
        if not np.isfinite(mass) or mass <= 0:
            return 0.0
        return self._moment(0, power=2) / mass**2

    @property
    def canonical_scale(self):
        """Canonical bandwidth factor ``(R(K) / variance**2) ** (1/5)``.

        Bandwidths of different kernels give the same asymptotic smoothing when
        they are in the ratio of their canonical scales (Marron and Nolan, 1988).
        ``nan`` for kernels without a finite, non-zero variance.
        """
        var = self.variance
        if not np.isfinite(var) or var <= 0:
            return np.nan
        return float((self.roughness / var**2) ** 0.2)

    # -- hyper-parameter protocol ---------------------------------------------

    @classmethod
    def _get_param_names(cls):
        init = cls.__init__
        if init is object.__init__:
            return []
        sig = inspect.signature(init)
        names = []
        for p in sig.parameters.values():
            if p.name == "self":
                continue
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise RuntimeError(
                    f"Kernel {cls.__name__} must declare its parameters "
                    "explicitly in __init__ (no *args or **kwargs)."
                )
            names.append(p.name)
        return sorted(names)

    def get_params(self, deep=True):
        """Get the parameters of this kernel.

        Parameters
        ----------
        deep : bool, default=True
            Ignored; present for scikit-learn compatibility.

        Returns
        -------
        dict
            Parameter names mapped to their values.
        """
        return {name: getattr(self, name) for name in self._get_param_names()}

    def set_params(self, **params):
        """Set parameters of this kernel.

        Parameters
        ----------
        **params : dict
            Parameter names and their new values.

        Returns
        -------
        self : Kernel
            This kernel.
        """
        valid = self._get_param_names()
        for key, value in params.items():
            if key not in valid:
                raise ValueError(
                    f"Invalid parameter {key!r} for kernel {type(self).__name__}. "
                    f"Valid parameters are: {valid!r}."
                )
            setattr(self, key, value)
        return self

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    def __eq__(self, other):
        if type(self) is not type(other):
            return NotImplemented
        a, b = self.get_params(), other.get_params()
        return a.keys() == b.keys() and all(
            np.array_equal(a[k], b[k]) if hasattr(a[k], "__len__") else a[k] == b[k]
            for k in a
        )

    def __hash__(self):
        return hash((type(self).__name__, tuple(map(repr, self.get_params().items()))))


def _evaluate_one(kernel, u):
    """``K(u)`` at one point, checking that the kernel works elementwise."""
    value = np.asarray(kernel(np.array([u], dtype=np.float64)))
    if value.shape != (1,):
        raise ValueError(
            f"Kernel {kernel!r} returned an array of shape {value.shape} for input "
            "of shape (1,); a kernel must be evaluated elementwise."
        )
    return float(value[0])


def _where_inside(u, inside_values, closed=True):
    """Zero outside the unit support, ``inside_values`` within it."""
    mask = u <= 1 if closed else u < 1
    return np.where(mask, inside_values, 0.0)


def _log_where_inside(u, log_inside, closed=True):
    mask = u <= 1 if closed else u < 1
    return np.where(mask, log_inside, -np.inf)


def _asfloat(u):
    return np.asarray(u, dtype=np.result_type(np.asarray(u).dtype, np.float32))


class Gaussian(Kernel):
    r"""Gaussian kernel, :math:`K(u) = \exp(-u^2 / 2)`.

    Unbounded support; variance 1; roughness :math:`1 / (2\sqrt{\pi})`.

    Examples
    --------
    >>> from sknw.kernels import Gaussian
    >>> Gaussian()([0.0, 1.0])
    array([1.        , 0.60653066])
    """

    variance = 1.0
    roughness = 1.0 / (2.0 * math.sqrt(math.pi))
    _native_sq = True
    _log_linear = (-0.5, 2)

    def __call__(self, u):
        u = _asfloat(u)
        return np.exp(-0.5 * u * u)

    def log_value(self, u):
        u = _asfloat(u)
        return -0.5 * u * u

    def log_value_sq(self, u2):
        return -0.5 * _asfloat(u2)

    def derivative(self, u):
        u = _asfloat(u)
        return -u * np.exp(-0.5 * u * u)

    def _log_slope(self, u):
        return self.log_value(u)


class Boxcar(Kernel):
    r"""Boxcar (uniform, tophat) kernel, :math:`K(u) = 1` for :math:`u < 1`, else 0.

    Support 1 (open at 1, as scikit-learn's tophat); variance 1/3; roughness 1/2.
    Registered as ``"boxcar"``, ``"tophat"`` and ``"uniform"``. The
    estimators decide the window on the distances themselves, ``d < h``
    (``d**2 < h**2`` for the euclidean metric), on every path: a point at
    exactly one bandwidth is outside, whatever the rounding of ``d / h``.

    Examples
    --------
    >>> from sknw.kernels import Boxcar
    >>> Boxcar()([0.0, 0.99, 1.0])
    array([1., 1., 0.])
    """

    support = 1.0
    variance = 1.0 / 3.0
    roughness = 0.5
    _native_sq = True
    _continuous = False

    _polynomial = (1.0,)

    def __call__(self, u):
        return _where_inside(_asfloat(u), 1.0, closed=False)

    def log_value(self, u):
        return _log_where_inside(_asfloat(u), 0.0, closed=False)

    def log_value_sq(self, u2):
        return _log_where_inside(_asfloat(u2), 0.0, closed=False)


class Constant(Kernel):
    r"""Constant kernel, :math:`K(u) = 1` everywhere.

    Every training point gets the same weight: the estimate is the (weighted) mean
    of the targets whatever the bandwidth. A baseline. It has no finite variance,
    so bandwidth rules leave their Gaussian-reference value unchanged for it.

    Examples
    --------
    >>> from sknw.kernels import Constant
    >>> Constant()([0.0, 1e9])
    array([1., 1.])
    """

    variance = np.inf
    roughness = 0.0
    _native_sq = True

    def __call__(self, u):
        return np.ones_like(_asfloat(u))

    def log_value(self, u):
        return np.zeros_like(_asfloat(u))

    def log_value_sq(self, u2):
        return np.zeros_like(_asfloat(u2))

    def derivative(self, u):
        return np.zeros_like(_asfloat(u))


class Epanechnikov(Kernel):
    r"""Epanechnikov kernel, :math:`K(u) = 1 - u^2` for :math:`u \le 1`, else 0.

    Support 1; variance 1/5; roughness 3/5. The normalised form is
    :math:`\tfrac34 (1 - u^2)`. Not to be confused with the triangular kernel,
    which the Dive into Deep Learning chapter calls "Epanechikov".

    Examples
    --------
    >>> from sknw.kernels import Epanechnikov
    >>> Epanechnikov()([0.0, 0.5, 1.5])
    array([1.  , 0.75, 0.  ])
    """

    support = 1.0
    variance = 0.2
    roughness = 0.6
    _native_sq = True

    _polynomial = (1.0, 0.0, -1.0)

    def __call__(self, u):
        u = _asfloat(u)
        c = np.minimum(u, 1.0)
        return _where_inside(u, 1.0 - c * c)

    def log_value(self, u):
        u = _asfloat(u)
        return self.log_value_sq(u * u)

    def log_value_sq(self, u2):
        u2 = _asfloat(u2)
        with np.errstate(divide="ignore", invalid="ignore"):
            return _log_where_inside(u2, np.log1p(-np.minimum(u2, 1.0)))


class Triangular(Kernel):
    r"""Triangular kernel, :math:`K(u) = 1 - u` for :math:`u \le 1`, else 0.

    Support 1; variance 1/6; roughness 2/3. This is the kernel the Dive into
    Deep Learning chapter on attention pooling calls "Epanechikov".

    Examples
    --------
    >>> from sknw.kernels import Triangular
    >>> Triangular()([0.0, 0.25, 2.0])
    array([1.  , 0.75, 0.  ])
    """

    support = 1.0
    variance = 1.0 / 6.0
    roughness = 2.0 / 3.0

    _polynomial = (1.0, -1.0)

    def __call__(self, u):
        u = _asfloat(u)
        return _where_inside(u, 1.0 - np.minimum(u, 1.0))

    def log_value(self, u):
        u = _asfloat(u)
        with np.errstate(divide="ignore", invalid="ignore"):
            return _log_where_inside(u, np.log1p(-np.minimum(u, 1.0)))


class Biweight(Kernel):
    r"""Biweight (quartic) kernel, :math:`K(u) = (1 - u^2)^2` for :math:`u \le 1`.

    Support 1; variance 1/7; roughness 5/7. Registered as ``"biweight"`` and
    ``"quartic"``.

    Examples
    --------
    >>> from sknw.kernels import Biweight
    >>> Biweight()([0.0, 0.5, 1.0])
    array([1.    , 0.5625, 0.    ])
    """

    support = 1.0
    variance = 1.0 / 7.0
    roughness = 5.0 / 7.0
    _native_sq = True
    _power = 2

    _polynomial = (1.0, 0.0, -2.0, 0.0, 1.0)

    def __call__(self, u):
        u = _asfloat(u)
        c = np.minimum(u, 1.0)
        return _where_inside(u, (1.0 - c * c) ** self._power)

    def log_value(self, u):
        u = _asfloat(u)
        return self.log_value_sq(u * u)

    def log_value_sq(self, u2):
        u2 = _asfloat(u2)
        with np.errstate(divide="ignore", invalid="ignore"):
            inside = self._power * np.log1p(-np.minimum(u2, 1.0))
        return _log_where_inside(u2, inside)


class Triweight(Biweight):
    r"""Triweight kernel, :math:`K(u) = (1 - u^2)^3` for :math:`u \le 1`, else 0.

    Support 1; variance 1/9; roughness 350/429.

    Examples
    --------
    >>> from sknw.kernels import Triweight
    >>> Triweight()([0.0, 0.5, 1.0])
    array([1.      , 0.421875, 0.      ])
    """

    variance = 1.0 / 9.0
    roughness = 350.0 / 429.0
    _power = 3
    _polynomial = (1.0, 0.0, -3.0, 0.0, 3.0, 0.0, -1.0)


class Tricube(Kernel):
    r"""Tricube kernel, :math:`K(u) = (1 - u^3)^3` for :math:`u \le 1`, else 0.

    Support 1; variance 35/243; roughness 175/247. Zero outside the support
    (unlike some implementations that give it full weight there).

    Examples
    --------
    >>> from sknw.kernels import Tricube
    >>> Tricube()([0.0, 0.5, 1.5])
    array([1.        , 0.66992188, 0.        ])
    """

    support = 1.0
    variance = 35.0 / 243.0
    roughness = 175.0 / 247.0

    _polynomial = (1.0, 0.0, 0.0, -3.0, 0.0, 0.0, 3.0, 0.0, 0.0, -1.0)

    def __call__(self, u):
        u = _asfloat(u)
        return _where_inside(u, (1.0 - np.minimum(u, 1.0) ** 3) ** 3)

    def log_value(self, u):
        u = _asfloat(u)
        with np.errstate(divide="ignore", invalid="ignore"):
            inside = 3.0 * np.log1p(-(np.minimum(u, 1.0) ** 3))
        return _log_where_inside(u, inside)


class Cosine(Kernel):
    r"""Cosine kernel, :math:`K(u) = \cos(\pi u / 2)` for :math:`u \le 1`, else 0.

    Support 1; variance :math:`1 - 8/\pi^2`; roughness :math:`\pi^2 / 16`.

    Examples
    --------
    >>> from sknw.kernels import Cosine
    >>> Cosine()([0.0, 1.0 / 3.0, 2.0])
    array([1.       , 0.8660254, 0.       ])
    """

    support = 1.0
    variance = 1.0 - 8.0 / math.pi**2
    roughness = math.pi**2 / 16.0

    def __call__(self, u):
        u = _asfloat(u)
        return _where_inside(u, np.cos(0.5 * np.pi * np.minimum(u, 1.0)))

    def log_value(self, u):
        u = _asfloat(u)
        with np.errstate(divide="ignore"):
            inside = np.log(np.cos(0.5 * np.pi * np.minimum(u, 1.0)))
        return _log_where_inside(u, inside)

    def derivative(self, u):
        u = _asfloat(u)
        inner = -0.5 * np.pi * np.sin(0.5 * np.pi * np.minimum(u, 1.0))
        return _where_inside(u, inner)


class Laplacian(Kernel):
    r"""Laplacian (exponential) kernel, :math:`K(u) = \exp(-u)`.

    Unbounded support; variance 2; roughness 1/4. Registered as ``"laplacian"``
    and ``"exponential"``.

    Examples
    --------
    >>> from sknw.kernels import Laplacian
    >>> Laplacian()([0.0, 1.0])
    array([1.        , 0.36787944])
    """

    variance = 2.0
    roughness = 0.25
    _log_linear = (-1.0, 1)

    def __call__(self, u):
        return np.exp(-_asfloat(u))

    def log_value(self, u):
        return -_asfloat(u)

    def derivative(self, u):
        return -np.exp(-_asfloat(u))

    def _log_slope(self, u):
        with np.errstate(divide="ignore"):
            return -_asfloat(u) - np.log(u)


class Logistic(Kernel):
    r"""Logistic kernel, :math:`K(u) = 1 / (e^u + 2 + e^{-u})`.

    Unbounded support; already a unit-mass density; variance :math:`\pi^2/3`;
    roughness 1/6.

    Examples
    --------
    >>> from sknw.kernels import Logistic
    >>> Logistic()([0.0, 1.0])
    array([0.25      , 0.19661193])
    """

    variance = math.pi**2 / 3.0
    roughness = 1.0 / 6.0

    def __call__(self, u):
        return np.exp(self.log_value(u))

    def log_value(self, u):
        u = _asfloat(u)
        # 1/(e^u + 2 + e^-u) = e^-u / (1 + e^-u)^2, stable for large u.
        return -u - 2.0 * np.log1p(np.exp(-u))

    def derivative(self, u):
        return -self(u) * np.tanh(0.5 * _asfloat(u))

    def _log_slope(self, u):  # -K'(u) / u = K(u) tanh(u / 2) / u
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.log_value(u) + np.log(np.tanh(0.5 * u) / u)


class Sigmoid(Kernel):
    r"""Sigmoid kernel, :math:`K(u) = \frac{2}{\pi} \frac{1}{e^u + e^{-u}}`.

    Unbounded support; already a unit-mass density; variance :math:`\pi^2/4`;
    roughness :math:`2/\pi^2`.

    Examples
    --------
    >>> from sknw.kernels import Sigmoid
    >>> Sigmoid()([0.0])
    array([0.31830989])
    """

    variance = math.pi**2 / 4.0
    roughness = 2.0 / math.pi**2

    def __call__(self, u):
        return np.exp(self.log_value(u))

    def log_value(self, u):
        u = _asfloat(u)
        return math.log(2.0 / math.pi) - u - np.log1p(np.exp(-2.0 * u))

    def derivative(self, u):
        return -self(u) * np.tanh(_asfloat(u))

    def _log_slope(self, u):  # -K'(u) / u = K(u) tanh(u) / u
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.log_value(u) + np.log(np.tanh(u) / u)


class Cauchy(Kernel):
    r"""Cauchy kernel, :math:`K(u) = 1 / (1 + u^2)`.

    Unbounded support with heavy tails; no finite variance, so bandwidth rules
    leave their Gaussian-reference value unchanged for it; roughness
    :math:`1/(2\pi)`.

    Examples
    --------
    >>> from sknw.kernels import Cauchy
    >>> Cauchy()([0.0, 1.0])
    array([1. , 0.5])
    """

    variance = np.inf
    roughness = 0.5 / math.pi

    def __call__(self, u):
        return np.exp(self.log_value(u))

    def log_value(self, u):
        u = _asfloat(u)
        # -log(1 + u**2) without overflow of u**2 for large u.
        big = u > 1.0
        safe = np.where(big, u, 1.0)
        with np.errstate(divide="ignore"):
            tail = -2.0 * np.log(safe) - np.log1p(1.0 / (safe * safe))
        return np.where(big, tail, -np.log1p(np.minimum(u, 1.0) ** 2))

    def derivative(self, u):
        u = _asfloat(u)
        return -2.0 * u * np.exp(2.0 * self.log_value(u))

    def _log_slope(self, u):  # -K'(u) / u = 2 K(u)**2
        return math.log(2.0) + 2.0 * self.log_value(u)


class Silverman(Kernel):
    r"""Silverman kernel, :math:`K(u) = \tfrac12 e^{-u/\sqrt2}\sin(u/\sqrt2+\pi/4)`.

    Unbounded support; a fourth-order kernel: it takes negative values (for
    :math:`u > 3\pi/(2\sqrt2)`), its second moment is zero, so estimates are not
    guaranteed to lie within the range of the targets, and bandwidth rules
    leave their Gaussian-reference value unchanged for it. Roughness
    :math:`3\sqrt2/16`.

    Examples
    --------
    >>> from sknw.kernels import Silverman
    >>> Silverman()([0.0])
    array([0.35355339])
    """

    nonnegative = False
    variance = 0.0
    roughness = 3.0 * math.sqrt(2.0) / 16.0

    def __call__(self, u):
        u = _asfloat(u)
        s = u / math.sqrt(2.0)
        with np.errstate(invalid="ignore"):
            value = 0.5 * np.exp(-s) * np.sin(s + 0.25 * np.pi)
        # The kernel vanishes at infinity (0 * sin(inf) would be NaN).
        return np.where(np.isinf(s), 0.0, value)

    def log_value(self, u):
        u = _asfloat(u)
        s = u / math.sqrt(2.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = math.log(0.5) - s + np.log(np.abs(np.sin(s + 0.25 * np.pi)))
        return np.where(np.isinf(s), -np.inf, out)

    def sign(self, u):
        s = _asfloat(u) / math.sqrt(2.0)
        with np.errstate(invalid="ignore"):
            sign = np.sign(np.sin(s + 0.25 * np.pi))
        # The kernel vanishes at infinity: a zero weight there, not NaN.
        return np.where(np.isinf(s), 0.0, sign)

    def derivative(self, u):
        # d/du of e^-s sin(s + pi/4) / 2 with s = u / sqrt(2): -e^-s sin(s) / 2.
        s = _asfloat(u) / math.sqrt(2.0)
        with np.errstate(invalid="ignore"):
            value = -0.5 * np.exp(-s) * np.sin(s)
        return np.where(np.isinf(s), 0.0, value)


#: Registry of built-in kernels by name (aliases included).
KERNELS = {
    "gaussian": Gaussian,
    "boxcar": Boxcar,
    "tophat": Boxcar,
    "uniform": Boxcar,
    "constant": Constant,
    "epanechnikov": Epanechnikov,
    "triangular": Triangular,
    "biweight": Biweight,
    "quartic": Biweight,
    "triweight": Triweight,
    "tricube": Tricube,
    "cosine": Cosine,
    "laplacian": Laplacian,
    "exponential": Laplacian,
    "logistic": Logistic,
    "sigmoid": Sigmoid,
    "cauchy": Cauchy,
    "silverman": Silverman,
}


def get_kernel(kernel):
    """Resolve a kernel name or object into a kernel object.

    Parameters
    ----------
    kernel : str or Kernel
        A name from :data:`KERNELS` or a :class:`Kernel` instance.

    Returns
    -------
    Kernel
        A new instance for a name; a copy with the same parameters for an
        instance (the argument is never modified or shared).

    Raises
    ------
    ValueError
        For an unknown name; the message lists the valid names.
    TypeError
        For anything that is neither a string nor a :class:`Kernel`.

    Examples
    --------
    >>> from sknw.kernels import get_kernel, Triangular
    >>> get_kernel("tophat")
    Boxcar()
    >>> get_kernel(Triangular())
    Triangular()
    """
    if isinstance(kernel, str):
        try:
            return KERNELS[kernel]()
        except KeyError:
            raise ValueError(
                f"Unknown kernel {kernel!r}. Valid names are: "
                f"{', '.join(sorted(KERNELS))}; or pass a sknw.kernels.Kernel."
            ) from None
    if isinstance(kernel, Kernel):
        return copy.deepcopy(kernel)
    raise TypeError(
        f"kernel must be a string or a sknw.kernels.Kernel instance, got "
        f"{type(kernel).__name__}."
    )
