"""The weights of a refit without one left-out observation, the reference of
the leave-one-out tests (see :mod:`sknw._selection.weights`)."""

import numpy as np


def weights_without(X, V, w, i):
    """Weights of the training rows for the refit that leaves row ``i`` out:
    the row and its copies (rows equal in inputs and targets) get weight 0;
    where every row of positive weight is a copy of one, row ``i`` alone."""
    n = X.shape[0]
    wi = np.ones(n) if w is None else np.array(w, dtype=np.float64)
    V = np.reshape(V, (n, -1))
    X = np.reshape(X, (n, -1))
    same = np.all(X == X[i], axis=1) & np.all(V == V[i], axis=1)
    if np.all(same[wi > 0]):
        same = np.arange(n) == i
    wi[same] = 0.0
    return wi
