"""The candidates a search scores: a kernel and a bandwidth, and what the
search knows of them."""

from dataclasses import dataclass

import numpy as np


@dataclass(kw_only=True, eq=False)
class Candidate:
    """A kernel and bandwidth a search scores.

    ``bandwidth``: that of the continuous features (a float or one per
    feature); ``multiplier``: its factor of the rule bandwidth ``rule`` on
    a default grid (NaN elsewhere); ``lambdas``: the discrete features'
    smoothing parameters (None: none, or the search's current ones, filled
    in before it is scored); ``span``: a span's fraction of the points
    (None: a bandwidth); ``query_bandwidths``: with a span, each point's
    own bandwidth per feature, filled in by the passes (the local fits
    read it); ``score``: its score, once the coordinate search knows it.

    Candidates are compared by identity; the searches change their fields
    as they move."""

    kernel: object
    bandwidth: object
    multiplier: float = np.nan
    rule: object = None
    lambdas: tuple | None = None
    span: float | None = None
    query_bandwidths: np.ndarray | None = None
    score: float | None = None
