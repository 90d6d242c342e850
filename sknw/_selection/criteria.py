"""In-sample selection criteria of linear smoothers, ``scoring="aicc"`` and
``scoring="gcv"``, from the fitted values at the training points and each
point's self weight ``H_ii`` (the diagonal of the smoother matrix), both from
the one leave-one-out pass.

For Nadaraya--Watson, whose leave-one-out estimate drops a point's own weight
and renormalises, ``H_ii`` is the share ``r_i`` of the point's own term in its
full weight sum (leaving a point out removes its whole row) and the fitted
value is ``(1 - r_i) yloo_i + r_i y_i``. The local fits solve their full fits
from the same sums (see :func:`sknw._local.passes._full_fit`). With ``n``
the effective sample size of the weights (``(sum w)**2 / sum(w**2)``, the
number of points for equal weights; see :mod:`sknw._selection.weights`), the residual
sum of squares ``RSS = n sum_i w_i (y_i - yhat_i)**2 / sum_i w_i``,
``sigma2 = RSS / n`` and ``tr = sum_i H_ii``:

* AICc (Hurvich, Simonoff and Tsai, 1998):
  ``log(sigma2) + 1 + 2 (tr + 1) / (n - tr - 2)``;
* GCV (Craven and Wahba, 1979): ``n RSS / (n - tr)**2``.

The score is minus the criterion (higher is better, as for scikit-learn's
scorers), averaged over the outputs; ``-inf`` where ``n - tr - 2`` (AICc) or
``n - tr`` (GCV) is not positive. Multiplying every weight by one constant
changes no score. A residual sum of squares below the
rounding of its output's values (:data:`RSS_FLOOR` units of roundoff of the
largest ``|y|``, per point) counts as that floor: an output that every
candidate fits exactly (all zeros, a constant) scores alike for every
candidate instead of ``log(0)``, and its rounding noise does not choose the
bandwidth.
"""

import numpy as np

from .weights import effective_sample_size

#: The in-sample criteria ``scoring`` may name.
IN_SAMPLE = ("aicc", "gcv")

#: Units of roundoff of an output's largest magnitude, per point, below
#: which its residual sum of squares is rounding (see the module docstring).
RSS_FLOOR = 64.0


def check_in_sample(scoring, kind, cv, owner, supported):
    """The criterion ``scoring`` names (None for any other scoring), refused
    with a ValueError where it does not apply: a classifier, an estimator
    that does not compute self weights (``supported`` False) or K-fold."""
    if not isinstance(scoring, str) or scoring not in IN_SAMPLE:
        return None
    if kind != "regression" or not supported:
        raise ValueError(
            f"scoring={scoring!r} is an in-sample criterion of regression "
            f"smoothers: {owner} does not take it. Use a scikit-learn scorer "
            "(for a classifier, 'neg_log_loss' or 'accuracy')."
        )
    if cv is not None:
        raise ValueError(
            f"scoring={scoring!r} is an in-sample criterion of the fit to every "
            f"training point: it takes cv=None (not cv={cv!r})."
        )
    return scoring


def in_sample_scores(fitted, self_weights, y, w, criterion):
    """Minus ``criterion`` of each candidate from its fitted values
    ``fitted`` (n_candidates, n, k) and self weights ``self_weights``
    (n_candidates, n; see the module docstring); ``w`` the normalised
    weights (None for unit weights). A candidate with any NaN fitted value
    scores NaN."""
    n_pts = y.shape[0]
    Y = np.asarray(y, dtype=np.float64).reshape(n_pts, -1)
    n = effective_sample_size(n_pts if w is None else w)
    counts = np.ones(n_pts) if w is None else w * (n / np.sum(w))
    copies = np.ones(n_pts) if w is None else 1.0 * (w > 0)
    eps, tiny = np.finfo(np.float64).eps, np.finfo(np.float64).tiny
    top = np.max(np.abs(Y), axis=0) if n_pts else np.zeros(Y.shape[1])
    floor = n * (RSS_FLOOR * eps * top) ** 2 + tiny
    scores = np.full(fitted.shape[0], np.nan)
    for i, (fit, h) in enumerate(zip(fitted, self_weights, strict=True)):
        if np.isnan(fit).any() or np.isnan(h).any():
            continue
        rss = np.maximum(counts @ (Y - fit) ** 2, floor)
        tr = float(np.sum(h * copies))
        with np.errstate(divide="ignore", invalid="ignore"):
            if criterion == "aicc":
                room = n - tr - 2.0
                value = np.log(rss / n) + 1.0 + 2.0 * (tr + 1.0) / room
            else:
                room = n - tr
                value = n * rss / room**2
        scores[i] = -np.inf if room <= 0 else -float(np.mean(value))
    return scores
