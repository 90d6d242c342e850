"""Nadaraya--Watson kernel regression and classification for scikit-learn."""

from . import datasets, kernels
from ._classification import NadarayaWatsonClassifier
from ._regression import NadarayaWatsonRegressor
from .exceptions import EmptyWindowWarning

__version__ = "0.1.0.dev0"

__all__ = [
    "EmptyWindowWarning",
    "NadarayaWatsonClassifier",
    "NadarayaWatsonRegressor",
    "__version__",
    "datasets",
    "kernels",
]
