"""Kernels of discrete features: unordered categories and ordered levels.

A discrete kernel gives the factor a training level ``x`` contributes to the
product kernel at a query level ``q``, for a smoothing parameter ``lambda``
(0: only matching levels count; the largest value: every level weighs the
same, for the unordered kernels). It is evaluated on the *level distance*
``t``: 0 for a match; for unordered features 1 for any mismatch; for ordered
features ``|x - q|`` in level units. A query level unseen at fit mismatches
every training level: at distance 1 for unordered features, and one level
beyond the farthest pair of training levels (``c``, the number of levels)
for ordered categories.

The kernels (Racine & Li 2004; Li & Racine, *Nonparametric Econometrics*,
2007), with ``c`` the number of levels seen at fit and ``l`` the smoothing
parameter:

- ``"aitchison_aitken"`` (unordered): ``1 - l`` on a match, ``l / (c - 1)``
  otherwise; ``l`` in ``[0, (c - 1) / c]`` (at the top every level weighs
  the same; values up to 1 are accepted, where a mismatch outweighs a
  match, but not searched).
- ``"li_racine"`` (unordered): 1 on a match, ``l`` otherwise; ``l`` in
  ``[0, 1]``.
- ``"wang_ryzin"`` (ordered): ``1 - l`` on a match, ``(1 - l) / 2 * l**t``
  otherwise; ``l`` in ``[0, 1)``.
- ``"li_racine"`` (ordered): ``l**t``; ``l`` in ``[0, 1]``.
"""

import numpy as np


class DiscreteKernel:
    """A kernel of one discrete feature (see the module's table)."""

    name = None
    ordered = False

    def max_lambda(self, n_levels):
        """The largest smoothing parameter (included by the CV grids)."""
        return 1.0

    def accepted_lambda(self, n_levels):
        """The largest smoothing parameter a bandwidth may hold (the
        searches stop at :meth:`max_lambda`)."""
        return self.max_lambda(n_levels)

    def check_lambda(self, lam, n_levels, feature):
        """Raise ``ValueError`` where ``lam`` is outside the kernel's range."""
        top = self.accepted_lambda(n_levels)
        if not (0.0 <= lam <= top) or (self._open_top and lam == top):
            bracket = ")" if self._open_top else "]"
            raise ValueError(
                f"The smoothing parameter of discrete feature {feature} is "
                f"{lam!r}, outside [0, {top:g}{bracket} for its kernel "
                f"{self.name!r} ({n_levels} levels)."
            )

    _open_top = False

    def log_factor(self, t, lam, n_levels):
        """Log factors at level distances ``t`` (an array)."""
        raise NotImplementedError

    def __repr__(self):
        kind = "ordered" if self.ordered else "unordered"
        return f"<{kind} discrete kernel {self.name!r}>"


def _log(x):
    with np.errstate(divide="ignore"):
        return np.log(x)


class AitchisonAitken(DiscreteKernel):
    """``1 - lambda`` on a match, ``lambda / (c - 1)`` otherwise."""

    name = "aitchison_aitken"

    def max_lambda(self, n_levels):
        return (max(n_levels, 2) - 1) / max(n_levels, 2)

    def accepted_lambda(self, n_levels):
        # Above (c - 1) / c a mismatch outweighs a match; accepted (a level
        # absent from a training fold lowers c), never searched.
        return 1.0

    def log_factor(self, t, lam, n_levels):
        other = lam / (max(n_levels, 2) - 1)
        return np.where(t == 0, _log(1.0 - lam), _log(other))


class LiRacineUnordered(DiscreteKernel):
    """1 on a match, ``lambda`` otherwise."""

    name = "li_racine"

    def log_factor(self, t, lam, n_levels):
        return np.where(t == 0, 0.0, _log(lam))


class WangRyzin(DiscreteKernel):
    """``1 - lambda`` on a match, ``(1 - lambda) / 2 * lambda**t`` otherwise."""

    name = "wang_ryzin"
    ordered = True
    _open_top = True

    def log_factor(self, t, lam, n_levels):
        with np.errstate(invalid="ignore"):
            far = _log(0.5 * (1.0 - lam)) + np.where(t > 0, t * _log(lam), 0.0)
        return np.where(t == 0, _log(1.0 - lam), far)


class LiRacineOrdered(DiscreteKernel):
    """``lambda**t`` (1 on a match)."""

    name = "li_racine"
    ordered = True

    def log_factor(self, t, lam, n_levels):
        with np.errstate(invalid="ignore"):
            return np.where(t == 0, 0.0, t * _log(lam))


#: The kernels of unordered categorical features, by name.
CATEGORICAL_KERNELS = {k.name: k for k in (AitchisonAitken(), LiRacineUnordered())}
#: The kernels of ordered features, by name.
ORDERED_KERNELS = {k.name: k for k in (WangRyzin(), LiRacineOrdered())}


def default_lambda(kernel, n_levels, n_samples):
    """The smoothing parameter of a discrete feature under a rule of thumb
    (``"scott"``, ``"silverman"``) or a scalar bandwidth: ``n**(-2/5)`` of the
    kernel's largest (the rate of the mean squared error's optimum, Li &
    Racine 2007, ch. 3), below its open upper end."""
    top = kernel.max_lambda(n_levels)
    return float(top * min(max(n_samples, 1) ** -0.4, 0.5))
