"""Parameter and attribute entries shared by the estimators' docstrings.

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

The type line of ``algorithm`` (``{algorithm}``, followed by the estimator's
own description) and that of ``algorithm_`` list the backends of the registry
(:data:`sknw._sums.ALGORITHMS`, in its order), so that the docs name every
backend there is.

Entries that differ between estimators, and those that refer to another
estimator's ("As in :class:`NadarayaWatsonRegressor`."), stay in the estimator's
docstring. A parameter with two shared entries has a suffix on the second key:
``categorical_kernel_brief`` is the one-line description of the estimators that
do not repeat the kernels' formulas, ``ordered_kernel_cv`` the description of
the search estimators.

A fitted attribute that several estimators describe in the same words is
written once in :data:`ATTRIBUTES`, the same way and filled in by the same
placeholders; its key is the attribute's name with its trailing underscore
(``{n_features_in_}``), and a second entry appends a suffix to it:
``kernel_cv`` and ``span_cv`` for the search estimators, ``metric_brief``,
``sample_weight_brief`` and ``categories_brief`` for the shorter descriptions,
``algorithm_local`` and ``best_score_local`` for the local linear and
polynomial estimators, ``y_fit_labels`` for the classifiers.
"""

import re

from ._sums import ALGORITHMS


def _options(names):
    """A type of string options, ``{"a", "b"}``."""
    return "{" + ", ".join(f'"{name}"' for name in names) + "}"


#: The backends, in the registry's order (that of ``"auto"``'s precedence).
_BACKENDS = [name for name in ALGORITHMS if name != "auto"]

#: The shared entries by key: the parameter's name, with a suffix on a second
#: entry of the same parameter.
PARAMETERS = {
    # The type line of ``algorithm``, from the registry; its description
    # stays in each estimator's docstring.
    "algorithm": f"algorithm : {_options(ALGORITHMS)}",
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

#: The shared Attributes entries by key: the attribute's name (its trailing
#: underscore included), with a suffix on a second entry of the same attribute.
ATTRIBUTES = {
    "kernel_": """\
kernel_ : Kernel
    The resolved kernel object.
""",
    "kernel_cv": """\
kernel_ : Kernel
    The selected kernel.
""",
    "algorithm_": f"""\
algorithm_ : {_options(_BACKENDS)}
    The summation used by predictions (see ``algorithm``).
""",
    "algorithm_local": f"""\
algorithm_ : {_options(_BACKENDS)}
    The summation used by predictions.
""",
    "bandwidth_": """\
bandwidth_ : float or ndarray of shape (n_features,)
    The resolved bandwidth.
""",
    "span_": """\
span_ : float or None
    The span of the nearest-neighbour bandwidths (``span``), or None.
""",
    "span_cv": """\
span_ : float or None
    The selected span (with ``spans``), else None.
""",
    "best_score_": """\
best_score_ : float
    Cross-validated score of the selected kernel and bandwidth (after the
    polish, or the refinement when ``refine=True``).
""",
    "best_score_local": """\
best_score_ : float
    Cross-validated score of the selected kernel and bandwidth (after the
    polish).
""",
    "metric_": """\
metric_ : str or callable
    The metric used: ``metric`` at fit. Predictions read it (and
    ``metric_params_``), so changing ``metric`` takes effect at the next
    fit.
""",
    "metric_brief": """\
metric_ : str or callable
    The metric used: ``metric`` at fit.
""",
    "metric_params_": """\
metric_params_ : dict
    Metric parameters used, including data-dependent defaults.
""",
    "X_fit_": """\
X_fit_ : ndarray of shape (n_samples, n_features)
    Training inputs.
""",
    "y_fit_": """\
y_fit_ : ndarray of shape (n_samples,) or (n_samples, n_outputs)
    Training targets.
""",
    "y_fit_labels": """\
y_fit_ : ndarray of shape (n_samples,)
    Training labels encoded as indices into ``classes_``.
""",
    "sample_weight_": """\
sample_weight_ : ndarray of shape (n_samples,) or None
    Training sample weights, ``None`` when not given.
""",
    "sample_weight_brief": """\
sample_weight_ : ndarray of shape (n_samples,) or None
    Training sample weights.
""",
    "robustness_weights_": """\
robustness_weights_ : ndarray of shape (n_samples,)
    The last refit's robustness weights (``robust_iterations > 0`` only),
    included in ``sample_weight_``.
""",
    "noise_variance_": """\
noise_variance_ : ndarray of shape (n_outputs,) or None
    The noise variance per output for ``noise_variance="global"`` or a
    float; ``None`` for ``"local"``.
""",
    "n_features_in_": """\
n_features_in_ : int
    Number of features seen during fit.
""",
    "feature_names_in_": """\
feature_names_in_ : ndarray of shape (`n_features_in_`,)
    Names of features seen during fit; only defined when ``X`` has feature
    names that are all strings.
""",
    "feature_types_": """\
feature_types_ : ndarray of shape (`n_features_in_`,)
    ``"continuous"``, ``"unordered"`` or ``"ordered"`` for each feature.
""",
    "categories_": """\
categories_ : list of (ndarray or None)
    The levels of each discrete feature learned at fit (sorted, or the
    categories of an ordered categorical; the integer values seen for an
    ordered integer feature), None for the continuous ones.
""",
    "categories_brief": """\
categories_ : list of (ndarray or None)
    The levels of each discrete feature learned at fit, None for the
    continuous ones.
""",
}

_PLACEHOLDER = re.compile(r"^( *)\{(\w+)\}$", re.MULTILINE)


def _entry(match):
    """The entry of a placeholder, indented to its column."""
    indent, key = match.groups()
    entry = PARAMETERS[key] if key in PARAMETERS else ATTRIBUTES[key]
    lines = entry.splitlines()
    return "\n".join(indent + line if line else line for line in lines)


def fill_docstring(cls):
    """Replace the placeholders of a class docstring with their entries.

    Parameters
    ----------
    cls : type
        A class whose docstring holds placeholder lines (``{key}`` alone on a
        line, ``key`` in :data:`PARAMETERS` or :data:`ATTRIBUTES`).

    Returns
    -------
    cls : type
        The same class, its ``__doc__`` filled in (left as is when docstrings
        are stripped, with ``python -OO``).
    """
    if cls.__doc__ is not None:
        cls.__doc__ = _PLACEHOLDER.sub(_entry, cls.__doc__)
    return cls
