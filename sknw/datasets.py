"""Synthetic data of the Dive into Deep Learning chapter on attention pooling."""

import numpy as np
from sklearn.utils import check_random_state

__all__ = ["d2l_target", "make_d2l_sine"]


def d2l_target(x):
    """The chapter's regression function, ``2 sin(x) + x``.

    Parameters
    ----------
    x : array-like
        Inputs.

    Returns
    -------
    ndarray
        ``2 * sin(x) + x``, of the shape of ``x``.

    Examples
    --------
    >>> from sknw.datasets import d2l_target
    >>> d2l_target([0.0, 1.0])
    array([0.        , 2.68294197])
    """
    x = np.asarray(x, dtype=np.float64)
    return 2.0 * np.sin(x) + x


def make_d2l_sine(n_train=40, *, noise=1.0, random_state=None):
    """Noisy samples of ``2 sin(x) + x`` and a noise-free validation grid.

    As in the Dive into Deep Learning chapter "Attention Pooling by
    Similarity": ``x ~ U(0, 5)`` (sorted), ``y = 2 sin(x) + x + eps`` with
    ``eps ~ N(0, noise**2)``, and validation inputs ``0, 0.1, ..., 4.9`` with
    their noise-free targets.

    Parameters
    ----------
    n_train : int, default=40
        Number of training samples.
    noise : float, default=1.0
        Standard deviation of the Gaussian noise on the training targets.
    random_state : int, RandomState instance or None, default=None
        Seed of the draws.

    Returns
    -------
    X_train : ndarray of shape (n_train, 1)
        Training inputs, sorted.
    y_train : ndarray of shape (n_train,)
        Noisy targets.
    X_val : ndarray of shape (50, 1)
        Validation inputs 0, 0.1, ..., 4.9.
    y_val : ndarray of shape (50,)
        Noise-free targets at ``X_val``.

    Examples
    --------
    >>> from sknw.datasets import make_d2l_sine
    >>> X_train, y_train, X_val, y_val = make_d2l_sine(random_state=0)
    >>> X_train.shape, y_train.shape, X_val.shape, y_val.shape
    ((40, 1), (40,), (50, 1), (50,))
    """
    rng = check_random_state(random_state)
    x = np.sort(rng.uniform(0.0, 5.0, size=n_train))
    y = d2l_target(x) + rng.normal(0.0, noise, size=n_train)
    x_val = np.arange(50) * 0.1
    return x.reshape(-1, 1), y, x_val.reshape(-1, 1), d2l_target(x_val)
