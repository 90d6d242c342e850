"""scikit-learn's estimator checks over every public estimator."""

import re

import pytest
from sklearn.utils.estimator_checks import (
    check_param_validation,
    parametrize_with_checks,
)

import sknw
from sknw import (
    LocalLinearRegressor,
    LocalLinearRegressorCV,
    LocalPolynomialRegressor,
    LocalPolynomialRegressorCV,
    NadarayaWatsonClassifier,
    NadarayaWatsonClassifierCV,
    NadarayaWatsonRegressor,
    NadarayaWatsonRegressorCV,
)
from sknw._sums import BACKENDS
from sknw.kernels import Triangular

# scikit-learn's checks fit and predict on their own small random data, with
# the configurations below: the default grids' best at their extension's
# limit, compact windows left empty, local designs singular or ridged, and
# standard errors undefined there are expected, and not what they check.
pytestmark = [
    pytest.mark.filterwarnings("ignore::sknw.exceptions.GridEdgeWarning"),
    pytest.mark.filterwarnings("ignore::sknw.exceptions.EmptyWindowWarning"),
    pytest.mark.filterwarnings("ignore::sknw.exceptions.SingularDesignWarning"),
    pytest.mark.filterwarnings("ignore::sknw.exceptions.RidgedDesignWarning"),
    pytest.mark.filterwarnings("ignore::sknw.exceptions.UndefinedStdWarning"),
]

CONFIGS = [
    {},
    # Compact kernel whose windows are empty for many of the checks' queries.
    {"kernel": "epanechnikov", "bandwidth": 0.05},
    {"kernel": Triangular(), "bandwidth": 3.0, "empty_window": "mean"},
    {"bandwidth": "silverman", "metric": "cityblock"},
    # Rules give per-feature bandwidths (a fixed array cannot fit every check).
    {"metric": "minkowski", "metric_params": {"p": 3}},
    {"metric": "mahalanobis", "kernel": "laplacian"},
]

CV_CONFIGS = [
    {},
    {"kernels": ["gaussian", "epanechnikov"], "bandwidths": 5, "cv": 3},
    {"kernels": "triangular", "bandwidths": [0.1, 1.0], "empty_window": "mean"},
]

ESTIMATORS = (
    [
        cls(**params)
        for cls in (
            NadarayaWatsonRegressor,
            NadarayaWatsonClassifier,
            LocalLinearRegressor,
        )
        for params in CONFIGS
    ]
    + [
        cls(**params)
        for cls in (
            NadarayaWatsonRegressorCV,
            NadarayaWatsonClassifierCV,
            LocalLinearRegressorCV,
        )
        for params in CV_CONFIGS
    ]
    + [
        # The first feature as an unordered category (each value a level),
        # its smoothing chosen with the bandwidth; the checks' data are codes.
        cls(categorical_features=[0], **params)
        for cls, params in (
            (NadarayaWatsonRegressor, {}),
            (
                NadarayaWatsonRegressor,
                {"bandwidth": "scott", "categorical_kernel": "li_racine"},
            ),
            (NadarayaWatsonClassifier, {}),
            (NadarayaWatsonRegressorCV, {"bandwidths": 5}),
            (NadarayaWatsonClassifierCV, {"bandwidths": 5}),
            (LocalLinearRegressor, {"bandwidth": 1.0}),
            (LocalLinearRegressorCV, {"bandwidths": 5}),
        )
    ]
    + [
        NadarayaWatsonRegressor(noise_variance="global"),
        LocalLinearRegressor(noise_variance=0.5, kernel="biweight", bandwidth=2.0),
    ]
    + [
        # Degree 2 (the default) by a rule and at a fixed bandwidth, the
        # other degrees at a fixed bandwidth: the selection is the code of
        # LocalLinearRegressor's (checked above), and its default search of
        # a local quadratic in the checks' ten features takes minutes.
        LocalPolynomialRegressor(bandwidth="scott"),
        LocalPolynomialRegressor(kernel="epanechnikov", bandwidth=2.0),
        LocalPolynomialRegressor(degree=0, bandwidth=1.0),
        LocalPolynomialRegressor(degree=3, kernel="epanechnikov", bandwidth=2.0),
    ]
    + [
        LocalPolynomialRegressorCV(degree=2, **params)
        for params in ({"bandwidths": 4}, {"bandwidths": 5, "cv": 3})
    ]
    + [LocalPolynomialRegressor(categorical_features=[0], bandwidth=1.0)]
    + [
        # Nearest-neighbour spans and robustness iterations (LOWESS).
        NadarayaWatsonRegressor(kernel="tricube", span=0.3),
        NadarayaWatsonRegressor(bandwidth="scott", robust_iterations=1),
        NadarayaWatsonClassifier(span=0.5),
        LocalLinearRegressor(kernel="tricube", span=0.5, robust_iterations=2),
        LocalPolynomialRegressor(span=0.8, robust_iterations=1),
        NadarayaWatsonRegressorCV(kernels=["tricube"], spans=[0.02, 0.05, 0.2]),
        NadarayaWatsonClassifierCV(spans=[0.3, 1.0]),
        LocalLinearRegressorCV(kernels=["tricube"], spans=[0.5, 1.0], cv=3),
        LocalPolynomialRegressorCV(spans=[0.6, 1.0]),
    ]
)


@parametrize_with_checks(ESTIMATORS)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


@pytest.mark.parametrize(
    "estimator",
    [
        NadarayaWatsonRegressor(),
        NadarayaWatsonClassifier(),
        NadarayaWatsonRegressorCV(),
        NadarayaWatsonClassifierCV(),
        LocalLinearRegressor(),
        LocalLinearRegressorCV(),
        LocalPolynomialRegressor(),
        LocalPolynomialRegressorCV(),
    ],
    ids=type,
)
def test_param_validation(estimator):
    check_param_validation(type(estimator).__name__, estimator)


@pytest.mark.parametrize(
    "name", [n for n in sknw.__all__ if hasattr(getattr(sknw, n), "fit")]
)
def test_algorithm_types_list_the_accepted_backends(name):
    """Each estimator's ``algorithm`` entry lists the values its validation
    accepts, and ``algorithm_`` the backends of the registry."""
    cls = getattr(sknw, name)
    doc = cls.__doc__
    line = re.search(r"^    algorithm : \{(.*)\}$", doc, re.MULTILINE).group(1)
    documented = [part.strip().strip('"') for part in line.split(",")]
    (accepted,) = cls._parameter_constraints["algorithm"]
    assert set(documented) == set(accepted.options)
    assert len(documented) == len(set(documented))
    fitted = re.search(r"^    algorithm_ : \{(.*)\}$", doc, re.MULTILINE).group(1)
    assert {part.strip().strip('"') for part in fitted.split(",")} == set(BACKENDS)
