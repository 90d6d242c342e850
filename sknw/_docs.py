"""Parameter entries shared by the estimators' docstrings.

A parameter that several estimators describe in the same words is written once
here, in :data:`PARAMETERS`, as its full numpydoc entry: the
``name : type, default=...`` line and its description indented under it, both
flush left. An estimator's class docstring stands for such an entry with a
placeholder line, the entry's key in braces alone on its line (``{span}``) at
the indentation of the entries around it, and the class is decorated with
:func:`fill_docstring`, which replaces each placeholder with its entry indented
to the placeholder's column. Nothing else in the docstring changes (braces
elsewhere, as in ``{"auto", "brute"}``, are not placeholders), so the rendered
docstring reads as if written in full; an unknown key raises a ``KeyError`` at
import.

Entries that differ between estimators, and those that refer to another
estimator's ("As in :class:`NadarayaWatsonRegressor`."), stay in the estimator's
docstring. A parameter with two shared entries has a suffix on the second key:
``categorical_kernel_brief`` is the one-line description of the estimators that
do not repeat the kernels' formulas, ``ordered_kernel_cv`` the description of
the search estimators.
"""

import re

#: The shared entries by key: the parameter's name, with a suffix on a second
#: entry of the same parameter.
PARAMETERS = {
    "metric": """\
metric : str or callable, default="euclidean"
    Any metric of :func:`scipy.spatial.distance.cdist`.
""",
    "metric_params": """\
metric_params : dict, default=None
    Keyword arguments of the metric.
""",
    "n_jobs": """\
n_jobs : int, default=None
    Number of parallel workers for predictions: the queries are split into
    batches run through joblib (threads unless ``joblib.parallel_config``
    says otherwise), each with one BLAS thread. ``None`` means 1 unless
    in a ``joblib.parallel_config`` context; ``-1`` means all processors.
    Results equal the serial ones up to rounding.
""",
    "categorical_features": """\
categorical_features : "from_dtype", None or array-like, default="from_dtype"
    The unordered categorical features: ``"from_dtype"`` takes the
    categorical, string and object columns of a pandas (or polars)
    DataFrame (object columns of numbers stay continuous; an ordered
    categorical is an ordered feature); None: none; else a boolean mask,
    indices or feature names, as in scikit-learn's
    ``HistGradientBoosting*``. Their levels are learned at fit
    (``categories_``); a level unseen at fit mismatches every training
    level. Their kernel enters the product kernel as a factor (see the
    user guide's "Categorical and ordered features").
""",
    "ordered_features": """\
ordered_features : None or array-like, default=None
    Features whose values are ordered levels: integers (their differences
    count the levels between them) or ordered categoricals (their
    categories' order).
""",
    "categorical_kernel": """\
categorical_kernel : {"aitchison_aitken", "li_racine"}, default="aitchison_aitken"
    The kernel of the unordered features: ``1 - l`` on a match and
    ``l / (c - 1)`` otherwise (``c`` levels, ``l`` in ``[0, (c-1)/c]``), or
    1 and ``l`` (``l`` in ``[0, 1]``).
""",
    "categorical_kernel_brief": """\
categorical_kernel : {"aitchison_aitken", "li_racine"}, default="aitchison_aitken"
    The kernel of the unordered features.
""",
    "ordered_kernel": """\
ordered_kernel : {"wang_ryzin", "li_racine"}, default="wang_ryzin"
    The kernel of the ordered features: ``1 - l`` on a match and
    ``(1 - l) / 2 * l**t`` at ``t`` levels apart (``l`` in ``[0, 1)``), or
    ``l**t`` (``l`` in ``[0, 1]``). The smoothing parameter ``l`` of each
    discrete feature is its entry of a per-feature ``bandwidth`` (a scalar
    bandwidth applies to the continuous features; rules of thumb give
    ``l`` a share ``min(n**-0.4, 1/2)`` of its largest value) and is chosen
    with the bandwidth by ``bandwidth="cv"``.
""",
    "ordered_kernel_cv": """\
ordered_kernel : {"wang_ryzin", "li_racine"}, default="wang_ryzin"
    The kernel of the ordered features. With discrete features, the
    smoothing parameter of each is searched with the bandwidth: after the
    grid of continuous bandwidths, each discrete feature's in turn over
    ten shares (0 to 1) of its range at the best candidate, then the grid
    again, twice; ``bandwidths`` holds floats (the continuous features';
    the smoothing parameters searched) or full per-feature arrays (fixed).
""",
    "span": """\
span : float in (0, 1], default=None
    Nearest-neighbour bandwidths (LOWESS's ``frac``): each query's
    bandwidth is its distance to its ``k``-th nearest training point,
    ``k = int(span * n + 1e-10)`` (2 to ``n``; with sample weights ``n`` is
    their sum and ``k`` a weight), in the features divided by the shape of
    ``bandwidth`` (Scott's for ``"cv"`` and ``"plugin"``). A compact kernel
    gives the ``k``-th point weight 0. Continuous features only; summed by
    the dense or sorted backend. None: ``bandwidth`` at every query.
""",
    "robust_iterations": """\
robust_iterations : int, default=0
    Robustness iterations (Cleveland, 1979): after each fit, the sample
    weights are multiplied by the bisquare ``(1 - u**2)**2`` (0 for ``u
    >= 1``) of each point's residual in units of 6 median absolute
    residuals (its largest over the outputs), and the estimator is
    refitted at the first fit's bandwidth or windows. With
    ``kernel="tricube"``, :class:`LocalLinearRegressor` is then LOWESS
    (statsmodels' ``lowess(y, x, frac=span, it=robust_iterations)``).
""",
    "kernels": """\
kernels : str, Kernel or sequence of them, default=("gaussian",)
    Kernels to try: names from :data:`sknw.kernels.KERNELS` or
    :class:`~sknw.kernels.Kernel` instances.
""",
    "spans": """\
spans : array-like of float in (0, 1], default=None
    Score every kernel with these nearest-neighbour spans (``span`` of the
    plain estimator; leave-one-out counts each window without its point)
    instead of bandwidths; the choice is ``span_``. Not with
    ``bandwidths``, ``refine`` or discrete features.
""",
}

_PLACEHOLDER = re.compile(r"^( *)\{(\w+)\}$", re.MULTILINE)


def _entry(match):
    """The entry of a placeholder, indented to its column."""
    indent, key = match.groups()
    lines = PARAMETERS[key].splitlines()
    return "\n".join(indent + line if line else line for line in lines)


def fill_docstring(cls):
    """Replace the placeholders of a class docstring with their entries.

    Parameters
    ----------
    cls : type
        A class whose docstring holds placeholder lines (``{key}`` alone on a
        line, ``key`` in :data:`PARAMETERS`).

    Returns
    -------
    cls : type
        The same class, its ``__doc__`` filled in (left as is when docstrings
        are stripped, with ``python -OO``).
    """
    if cls.__doc__ is not None:
        cls.__doc__ = _PLACEHOLDER.sub(_entry, cls.__doc__)
    return cls
