"""Scorers of the out-of-sample predictions of the CV estimators: any
scikit-learn scorer (or callable) applied to the predictions through a
stand-in estimator, checked once before the search; and the table of the
scores, ``cv_results_``."""

import copy
import inspect
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.metrics import get_scorer


class _Predictions(BaseEstimator):
    """Stand-in estimator whose predictions are its input, for scorers."""

    def __init__(self, classes=None):
        self.classes = classes

    def fit(self, X, y=None):  # pragma: no cover - never called
        return self

    def predict(self, X):
        if self.classes is None:
            return X
        return self.classes[np.argmax(X, axis=1)]

    def predict_proba(self, X):
        return X


class _RegressionPredictions(RegressorMixin, _Predictions):
    pass


class _ClassificationPredictions(ClassifierMixin, _Predictions):
    @property
    def classes_(self):
        return self.classes


def _neg_log_loss(proba, y_index, sample_weight):
    """Negative mean log-loss of probabilities given true class indices."""
    eps = np.finfo(np.float64).eps
    p = np.clip(proba[np.arange(len(y_index)), y_index], eps, 1.0)
    return float(np.average(np.log(p), weights=sample_weight))


def _neg_mean_squared_error(pred, y_true, sample_weight):
    """scikit-learn's ``neg_mean_squared_error`` (outputs averaged), without
    its validation: the scores of a search's candidates, many per fit."""
    y = np.asarray(y_true, dtype=np.float64).reshape(pred.shape[0], -1)
    errors = np.average((pred - y) ** 2, axis=0, weights=sample_weight)
    return -float(np.mean(errors))


def make_scorer(scoring, kind, classes=None):
    """Turn ``scoring`` into ``f(pred, y_true, sample_weight) -> float``.

    For ``kind="regression"``, ``pred`` has shape (n, k) and ``y_true`` is the
    target. For ``kind="classification"``, ``pred`` holds probabilities and
    ``y_true`` the class indices into ``classes``. ``None`` means negative mean
    squared error (regression) or negative log-loss over all classes
    (classification); a string names any scikit-learn scorer and a callable is
    a scorer ``scorer(estimator, X, y)``: either is called on a stand-in
    estimator whose predictions (and probabilities) are ``X``, whose
    ``classes_`` are all the classes. A scikit-learn scorer of probabilities
    or decision values whose metric takes ``labels`` (log-loss, Brier score,
    top-k accuracy, ROC AUC, ...) is given ``labels=classes``, so that a test
    fold that lacks a class is scored against every column of the
    probabilities.
    """
    if kind == "classification" and scoring is None:
        return _neg_log_loss
    if kind == "regression" and scoring is None:
        return _neg_mean_squared_error
    if kind == "regression":
        stand_in = _RegressionPredictions()
        scoring = "neg_mean_squared_error" if scoring is None else scoring
    else:
        stand_in = _ClassificationPredictions(classes)
    scorer = get_scorer(scoring) if isinstance(scoring, str) else scoring
    if kind == "classification":
        scorer = _with_labels(scorer, classes)

    def score(pred, y_true, sample_weight):
        if kind == "regression":
            if pred.shape[1] == 1 and np.ndim(y_true) == 1:
                pred = pred[:, 0]
        else:
            y_true = classes[y_true]
        kwargs = {} if sample_weight is None else {"sample_weight": sample_weight}
        return float(scorer(stand_in, pred, y_true, **kwargs))

    return score


def _with_labels(scorer, classes):
    """``scorer`` with ``labels=classes`` where its metric takes them.

    Only scikit-learn scorers (made by :func:`sklearn.metrics.make_scorer`) of
    probabilities or decision values, whose metric has a ``labels`` parameter
    they do not set: a scorer of predicted labels (F1, precision, ...) keeps
    its own classes, as :class:`~sklearn.model_selection.GridSearchCV` scores
    it.
    """
    func = getattr(scorer, "_score_func", None)
    kwargs = getattr(scorer, "_kwargs", None)
    response = getattr(scorer, "_response_method", "predict")
    if func is None or not isinstance(kwargs, dict) or "labels" in kwargs:
        return scorer
    try:
        takes_labels = "labels" in inspect.signature(func).parameters
    except (TypeError, ValueError):
        takes_labels = False
    if response == "predict" or not takes_labels:
        return scorer
    labelled = copy.copy(scorer)
    labelled._kwargs = {**kwargs, "labels": classes}
    return labelled


#: Modules of scikit-learn's metrics by the task they score.
_METRIC_TASKS = {
    "sklearn.metrics._classification": "classification",
    "sklearn.metrics._ranking": "classification",
    "sklearn.metrics._scorer": "classification",
    "sklearn.metrics.cluster._supervised": "classification",
    "sklearn.metrics._regression": "regression",
}

#: Scorers an error message suggests for each task.
_SUGGESTED = {
    "regression": "'r2', 'neg_mean_squared_error' or 'neg_mean_absolute_error'",
    "classification": "'accuracy', 'neg_log_loss' or 'roc_auc_ovr'",
}


def _scoring_name(scoring):
    """``scoring`` as a message names it: its repr, or a function's name."""
    if scoring is None or isinstance(scoring, str):
        return repr(scoring)
    name = getattr(scoring, "__name__", None)
    return name if isinstance(name, str) else repr(scoring)


def check_scoring(score, scoring, kind, y, w, folds, *, classes=None, owner="sknw"):
    """Raise a ValueError naming ``scoring`` where it cannot score the search.

    Before any candidate is computed: a scikit-learn scorer of the other task
    (of labels, probabilities or clusters for a regressor, of continuous
    predictions for a classifier) is refused; then ``score`` (from
    :func:`make_scorer`) is called once on each test fold (once for
    leave-one-out) with constant predictions, the mean target or uniform
    probabilities, and its failures are reported with the scorer's name: one
    that takes no ``sample_weight`` when fit was given weights, any other
    error, and a classification score that is undefined (NaN) on a test fold
    that lacks some classes. ``owner`` names the estimator.
    """
    name = _scoring_name(scoring)
    scorer = get_scorer(scoring) if isinstance(scoring, str) else scoring
    module = getattr(getattr(scorer, "_score_func", None), "__module__", None)
    task = _METRIC_TASKS.get(module)
    if getattr(scorer, "_response_method", "predict") != "predict":
        task = "classification"
    if task is not None and task != kind:
        role = "a regressor" if kind == "regression" else "a classifier"
        raise ValueError(
            f"scoring={name} is a {task} scorer, but {owner} is {role}: use a "
            f"{kind} scorer, such as {_SUGGESTED[kind]}."
        )
    n = y.shape[0]
    if kind == "regression":
        Y = np.asarray(y, dtype=np.float64).reshape(n, -1)
        with np.errstate(over="ignore", invalid="ignore"):
            centre = Y.mean(axis=0)
        centre = np.where(np.isfinite(centre), centre, np.median(Y, axis=0))
        pred = np.tile(centre, (n, 1))
    else:
        pred = np.full((n, len(classes)), 1.0 / len(classes))
    tests = [slice(None)] if folds is None else [test for _, test in folds]
    for f, test in enumerate(tests):
        where = "" if folds is None else f" on test fold {f} of cv"
        wf = None if w is None else w[test]
        value = _trial_score(score, pred[test], y[test], wf, name, where, owner)
        if kind == "regression" or not np.isnan(value):
            continue
        missing = np.setdiff1d(classes, classes[y[test]])
        if missing.size:
            raise ValueError(
                f"scoring={name} is undefined (NaN){where}, whose test samples "
                f"lack the classes {missing.tolist()}: use folds that hold every "
                "class (an int cv gives stratified folds) or another scorer."
            )


def _trial_score(score, pred, y_true, sample_weight, name, where, owner):
    """``score(pred, y_true, sample_weight)``, its failure a ValueError naming
    the scorer (see :func:`check_scoring`); warnings are silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return score(pred, y_true, sample_weight)
        except Exception as exc:
            error = exc
        if sample_weight is not None:
            try:
                score(pred, y_true, None)
            except Exception:
                pass
            else:
                raise ValueError(
                    f"scoring={name} does not take sample_weight, which fit was "
                    "given: fit without sample_weight, or use a scorer that takes "
                    "it (a callable with a sample_weight keyword) "
                    f"({type(error).__name__}: {error})."
                ) from error
    raise ValueError(
        f"scoring={name} cannot score the out-of-sample predictions of "
        f"{owner}{where}: {type(error).__name__}: {error}"
    ) from error


def ranks(mean_scores):
    """Ranks as in GridSearchCV: 1 is best, ties share the lower rank, NaN last."""
    filled = np.where(np.isnan(mean_scores), -np.inf, mean_scores)
    order = np.argsort(-filled, kind="stable")
    rank = np.empty(len(filled), dtype=np.int32)
    sorted_scores = filled[order]
    current = 1
    for pos, idx in enumerate(order):
        if pos > 0 and sorted_scores[pos] != sorted_scores[pos - 1]:
            current = pos + 1
        rank[idx] = current
    return rank


def cv_results(kernels, n_bw, cands, mean, splits, n_empty):
    """``cv_results_``: GridSearchCV's keys, with the bandwidth multipliers
    and the empty windows of each candidate."""
    params = [
        {"kernel": kernels[i // n_bw], "bandwidth": cand.bandwidth}
        for i, cand in enumerate(cands)
    ]
    results = {
        "param_kernel": object_array([p["kernel"] for p in params]),
        "param_bandwidth": object_array([p["bandwidth"] for p in params]),
        "bandwidth_multiplier": np.array([c.multiplier for c in cands]),
        "params": params,
        "mean_test_score": mean,
        "rank_test_score": ranks(mean),
        "n_empty_windows": n_empty,
    }
    if splits is not None:
        # A candidate whose every split scored NaN (refused) has NaN.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            results["std_test_score"] = np.nanstd(splits, axis=1)
        for f in range(splits.shape[1]):
            results[f"split{f}_test_score"] = splits[:, f]
    return results


def object_array(values):
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out
