"""The library's settings: :func:`set_config`, :func:`get_config` and
:func:`config_context`, as scikit-learn's.

One setting so far, ``blas_threads``: the BLAS threads the kernel sums run
on. Their matrix products are small tiles, which gain little from BLAS
threads and lose much on a loaded machine, so that by default they run on
one (as scikit-learn's pairwise-distance reductions do) and take several
cores through ``n_jobs``. The setting is the process's, as BLAS's threads
are: it holds in every thread, the workers of ``n_jobs`` among them.
"""

import contextlib
from numbers import Integral

#: The settings' defaults.
_DEFAULTS = {"blas_threads": 1}

_config = dict(_DEFAULTS)


def get_config():
    """The library's current settings.

    Returns
    -------
    config : dict
        ``{"blas_threads": ...}``; see :func:`set_config`.

    Examples
    --------
    >>> import sknw
    >>> sknw.get_config()["blas_threads"]
    1
    """
    return dict(_config)


def _checked_blas_threads(value):
    if isinstance(value, str) and value == "inherit":
        return value
    if isinstance(value, Integral) and not isinstance(value, bool) and value >= 1:
        return int(value)
    raise ValueError(
        "blas_threads must be an int >= 1 or 'inherit' (BLAS's threads as the "
        f"process sets them), got {value!r}."
    )


def set_config(blas_threads=None):
    """Change the library's settings, for the whole process.

    Parameters
    ----------
    blas_threads : int >= 1, "inherit" or None, default=None
        The most BLAS threads the kernel sums (predictions, standard errors,
        the cross-validated searches) run on: 1 by default, each sum's tile
        products on one thread, several cores through ``n_jobs``; ``k``
        allows up to ``k``; ``"inherit"`` leaves BLAS's threads as the
        process sets them (its environment variables, or
        ``threadpoolctl.threadpool_limits`` around the call). BLAS threads
        outside the sums are never changed. None leaves the setting as it
        is.

    Examples
    --------
    >>> import sknw
    >>> sknw.set_config(blas_threads=2)
    >>> sknw.get_config()["blas_threads"]
    2
    >>> sknw.set_config(blas_threads=1)
    """
    if blas_threads is not None:
        _config["blas_threads"] = _checked_blas_threads(blas_threads)


@contextlib.contextmanager
def config_context(*, blas_threads=None):
    """A context with the library's settings changed, restored on leaving.

    The settings are those of :func:`set_config`, restored also where the
    block raises.

    Parameters
    ----------
    blas_threads : int >= 1, "inherit" or None, default=None
        See :func:`set_config`; None leaves the setting as it is.

    Yields
    ------
    None

    Examples
    --------
    >>> import numpy as np
    >>> import sknw
    >>> X = np.linspace(0.0, 1.0, 50)[:, None]
    >>> reg = sknw.NadarayaWatsonRegressor(bandwidth=0.1).fit(X, X[:, 0])
    >>> with sknw.config_context(blas_threads="inherit"):
    ...     y = reg.predict(X)  # BLAS's threads as the process sets them
    >>> sknw.get_config()["blas_threads"]
    1
    """
    saved = get_config()
    set_config(blas_threads=blas_threads)
    try:
        yield
    finally:
        _config.clear()
        _config.update(saved)
