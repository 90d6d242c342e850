"""Nadaraya--Watson kernel regression and classification for scikit-learn."""

from . import datasets, kernels
from ._classification import NadarayaWatsonClassifier, NadarayaWatsonClassifierCV
from ._config import config_context, get_config, set_config
from ._dask import dask_predict
from ._local_linear import LocalLinearRegressor, LocalLinearRegressorCV
from ._local_polynomial import LocalPolynomialRegressor, LocalPolynomialRegressorCV
from ._regression import NadarayaWatsonRegressor, NadarayaWatsonRegressorCV
from .exceptions import (
    EmptyWindowWarning,
    GridEdgeWarning,
    RidgedDesignWarning,
    SingularDesignWarning,
    UndefinedDistanceError,
    UndefinedStdWarning,
)

__version__ = "0.1.0.dev0"

__all__ = [
    "EmptyWindowWarning",
    "GridEdgeWarning",
    "LocalLinearRegressor",
    "LocalLinearRegressorCV",
    "LocalPolynomialRegressor",
    "LocalPolynomialRegressorCV",
    "NadarayaWatsonClassifier",
    "NadarayaWatsonClassifierCV",
    "NadarayaWatsonRegressor",
    "NadarayaWatsonRegressorCV",
    "RidgedDesignWarning",
    "SingularDesignWarning",
    "UndefinedDistanceError",
    "UndefinedStdWarning",
    "__version__",
    "config_context",
    "dask_predict",
    "datasets",
    "get_config",
    "kernels",
    "set_config",
]
