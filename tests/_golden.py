"""A golden corpus of the estimators' answers, which pins their behaviour
while the code above the core changes shape.

:data:`CONFIGS` names a few hundred small fits (every estimator; one to three
features, a categorical column, sample weights; the default search, a given
bandwidth, Scott's rule and spans; several kernels and backends) and
:func:`answers` computes what each gives: predictions, probabilities,
standard errors, gradients, effective sample sizes, the chosen kernel and
bandwidth, and the search's scores. ``tests/golden_corpus.npz`` holds them as
recorded; ``tests/test_golden.py`` compares. Where a change of numbers is
meant, record the corpus again::

    python tests/_golden.py

and say so in the commit.
"""

import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import sknw

#: Where the recorded answers are.
CORPUS = Path(__file__).with_name("golden_corpus.npz")


@dataclass(frozen=True)
class Config:
    """One fit of the corpus: an estimator by name and its parameters, and
    the data: ``d`` continuous features (plus an integer categorical column
    where ``categorical``), ``n`` points, weights or none, ``seed``."""

    estimator: str
    params: dict = field(default_factory=dict)
    d: int = 1
    n: int = 80
    weighted: bool = False
    categorical: bool = False
    seed: int = 0

    @property
    def key(self):
        """A name unique within the corpus."""
        params = ",".join(f"{k}={v!r}" for k, v in sorted(self.params.items()))
        return (
            f"{self.estimator}({params})|d={self.d}|n={self.n}|w={self.weighted}"
            f"|cat={self.categorical}|seed={self.seed}"
        )


def data(config):
    """Training inputs, targets (class labels for the classifiers), weights
    and queries of ``config``."""
    rng = np.random.default_rng(config.seed)
    X = rng.uniform(0, 1, (config.n, config.d))
    signal = np.sin(5 * X[:, 0]) + (X[:, 1:] ** 2).sum(axis=1)
    Q = rng.uniform(-0.1, 1.1, (25, config.d))
    if config.categorical:
        levels = rng.integers(0, 3, config.n)
        signal = signal + 0.5 * levels
        X = np.column_stack([X, levels])
        Q = np.column_stack([Q, rng.integers(0, 3, Q.shape[0])])
    y = signal + 0.2 * rng.normal(size=config.n)
    if "Classifier" in config.estimator:
        y = np.digitize(y, np.quantile(y, [0.35, 0.7]))
    w = rng.uniform(0.5, 3.0, config.n) if config.weighted else None
    return X, y, w, Q


def _configs():
    """Every configuration of the corpus, in a fixed order."""
    regressors = [
        ("NadarayaWatsonRegressor", {}),
        ("LocalLinearRegressor", {}),
        ("LocalPolynomialRegressor", {"degree": 2}),
    ]
    out = []
    for name, base in regressors + [("NadarayaWatsonClassifier", {})]:
        for d in (1, 2, 3):
            for kernel in ("gaussian", "epanechnikov", "tricube"):
                for bandwidth in ("cv", "scott", 0.25):
                    params = {**base, "kernel": kernel, "bandwidth": bandwidth}
                    for weighted in (False, True):
                        out.append(Config(name, params, d=d, weighted=weighted, seed=d))
        for span in (0.2, 0.6):
            out.append(Config(name, {**base, "span": span}, d=1, seed=4))
            out.append(Config(name, {**base, "span": span}, d=2, seed=5))
        categorical = {**base, "categorical_features": [1]}
        out.append(Config(name, categorical, d=1, categorical=True, seed=6))
        out.append(Config(name, categorical, d=1, categorical=True, weighted=True))
    for name, base in regressors[1:]:
        for algorithm, kernel in [
            ("sorted", "epanechnikov"),
            ("fgt", "gaussian"),
            ("binned", "gaussian"),
            ("brute", "gaussian"),
        ]:
            params = {**base, "bandwidth": 0.08, "algorithm": algorithm}
            out.append(Config(name, {**params, "kernel": kernel}, n=300, seed=7))
    out.append(Config("NadarayaWatsonRegressor", {"noise_variance": "global"}, d=2))
    out.append(Config("LocalLinearRegressor", {"noise_variance": "global"}, d=2))
    out.append(Config("LocalLinearRegressor", {"max_leverage": None}, seed=8))
    out.append(Config("LocalPolynomialRegressor", {"degree": 3}, n=150, seed=9))
    searches = [
        ("NadarayaWatsonRegressorCV", {}),
        ("LocalLinearRegressorCV", {}),
        ("LocalPolynomialRegressorCV", {"degree": 2}),
        ("NadarayaWatsonClassifierCV", {}),
    ]
    for name, base in searches:
        for d in (1, 2):
            for extra in (
                {},
                {"kernels": ("gaussian", "epanechnikov")},
                {"cv": 4},
                {"refine": True},
                {"bandwidths": 6},
            ):
                for weighted in (False, True):
                    out.append(
                        Config(name, {**base, **extra}, d=d, weighted=weighted, seed=10)
                    )
        if "Classifier" not in name:
            for scoring in ("aicc", "gcv"):
                out.append(Config(name, {**base, "scoring": scoring}, d=1, seed=11))
        out.append(Config(name, {**base, "spans": (0.1, 0.3, 0.6)}, d=1, seed=12))
    return out


#: The corpus's configurations.
CONFIGS = _configs()


def answers(config):
    """What the fit of ``config`` gives, by name (arrays of float64, the
    kernel's name a string): each public method's output on the queries and
    the fitted choices."""
    X, y, w, Q = data(config)
    est = getattr(sknw, config.estimator)(**config.params)
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sknw.exceptions.QueryWarning)
        warnings.simplefilter("ignore", sknw.GridEdgeWarning)
        est.fit(X, y, sample_weight=w)
        if "Classifier" in config.estimator:
            out["predict_proba"] = est.predict_proba(Q)
        else:
            mean, std = est.predict(Q, return_std=True)
            out["predict"], out["std"] = mean, std
            out["effective_sample_size"] = est.effective_sample_size(Q)
            out["gradient"] = est.gradient(Q)
        out["attention_weights"] = est.attention_weights(Q[:2])
    out["bandwidth"] = np.atleast_1d(np.asarray(est.bandwidth_, dtype=np.float64))
    span = getattr(est, "span_", None)
    out["span"] = np.array([np.nan if span is None else span])
    out["kernel"] = np.array([type(est.kernel_).__name__])
    if hasattr(est, "cv_results_"):
        out["mean_test_score"] = np.asarray(
            est.cv_results_["mean_test_score"], dtype=np.float64
        )
        out["best_score"] = np.array([est.best_score_])
    noise = getattr(est, "noise_variance_", None)
    if noise is not None:
        out["noise_variance"] = np.atleast_1d(np.asarray(noise, dtype=np.float64))
    return {
        k: v if v.dtype.kind == "U" else np.asarray(v, dtype=np.float64)
        for k, v in out.items()
    }


def record():
    """Compute every configuration's answers and write the corpus."""
    arrays = {}
    for config in CONFIGS:
        for name, value in answers(config).items():
            arrays[f"{config.key}::{name}"] = value
    np.savez_compressed(CORPUS, **arrays)
    return len(CONFIGS), len(arrays)


if __name__ == "__main__":
    n_configs, n_arrays = record()
    print(f"{n_configs} configurations, {n_arrays} arrays -> {CORPUS}", file=sys.stderr)
