"""Numpydoc validation of the docstrings of every public name of sknw.

Validated: every public class and function of ``sknw``, ``sknw.kernels``,
``sknw.datasets`` and ``sknw.exceptions``, and every public method and property
(and ``__call__``) that sknw defines on them. Not validated: methods inherited
from scikit-learn (``get_params``, ``set_params``, ``score``,
``get_metadata_routing``, the generated ``set_*_request``), data such as
``KERNELS`` (documented by a ``#:`` comment), and overrides without a docstring
of their own, which inherit the documented docstring of the sknw method they
override (autodoc shows that one) and are validated there.

Skipped when numpydoc is not installed (it comes with the ``docs`` extra).
"""

import importlib
import inspect
import re

import pytest

import sknw

validate = pytest.importorskip("numpydoc.validate").validate
docscrape = pytest.importorskip("numpydoc.docscrape")

MODULES = ["sknw", "sknw.kernels", "sknw.datasets", "sknw.exceptions"]

#: Checks skipped everywhere: a ``Returns`` entry ``self : NadarayaWatsonRegressor``
#: names the returned estimator, as scikit-learn's own docstrings do.
IGNORE_ALWAYS = {"RT02"}
#: Checks skipped for methods and properties: the class docstring carries the
#: extended summary, the See Also section and the examples.
IGNORE_MEMBERS = {"ES01", "SA01", "EX01"}
#: Checks skipped for the small public objects, every one but the estimators and
#: ``Kernel``: a kernel class, a data function, ``get_kernel`` and the warning
#: class are described by their summary, and the API page lists their relatives
#: beside them.
IGNORE_SMALL = {"ES01", "SA01"}
#: Objects documented in full: all checks but ``IGNORE_ALWAYS``.
FULL = {
    "sknw.NadarayaWatsonRegressor",
    "sknw.NadarayaWatsonClassifier",
    "sknw.NadarayaWatsonRegressorCV",
    "sknw.NadarayaWatsonClassifierCV",
    "sknw.kernels.Kernel",
}

#: Docstrings that fail validation today, with the checks they fail. Each is an
#: xfail(strict=True): once a docstring is fixed its test passes, fails as an
#: unexpected pass, and the entry must be removed here.
KNOWN_FAILURES = {}


def _public_objects():
    """``(name, object)`` of every public class and function, each once."""
    seen, found = set(), []
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        for attr in module.__all__:
            obj = getattr(module, attr)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue  # modules, __version__, KERNELS
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            found.append((f"{module_name}.{attr}", obj))
    return found


def _documented_elsewhere(cls, name):
    """Whether an undocumented override inherits an sknw docstring."""
    for base in cls.__mro__[1:]:
        raw = vars(base).get(name)
        if raw is not None and base.__module__.startswith("sknw"):
            return bool(getattr(raw, "__doc__", None))
    return False


def _members(cls):
    """Public methods and properties that sknw defines on ``cls`` or its bases."""
    for name in sorted(dir(cls)):
        if name.startswith("_") and name != "__call__":
            continue
        owner = next(base for base in cls.__mro__ if name in vars(base))
        if not owner.__module__.startswith("sknw"):
            continue  # inherited from scikit-learn or object
        raw = vars(owner)[name]
        if not (inspect.isfunction(raw) or isinstance(raw, property)):
            continue  # class attributes, generated set_*_request methods
        if not raw.__doc__ and _documented_elsewhere(owner, name):
            continue
        yield name, raw


def _objects_to_validate():
    public = _public_objects()
    # A shared method is validated once, under the first public class that
    # defines it itself, else under the first one that has it.
    defined_in = {}
    for name, obj in public:
        if inspect.isclass(obj):
            for member, raw in _members(obj):
                own = member in vars(obj)
                if id(raw) not in defined_in or (own and not defined_in[id(raw)][1]):
                    defined_in[id(raw)] = (f"{name}.{member}", own)
    names = []
    for name, obj in public:
        names.append((name, "object"))
        if inspect.isclass(obj):
            for member, raw in _members(obj):
                if defined_in[id(raw)][0] == f"{name}.{member}":
                    names.append((f"{name}.{member}", "member"))
    return names


def _params():
    for name, kind in _objects_to_validate():
        marks = []
        if name in KNOWN_FAILURES:
            reason = f"fails {KNOWN_FAILURES[name]}; fix the docstring"
            marks.append(pytest.mark.xfail(reason=reason, strict=True))
        yield pytest.param(name, kind, id=name, marks=marks)


@pytest.mark.parametrize("name, kind", list(_params()))
def test_docstring(name, kind):
    ignored = set(IGNORE_ALWAYS)
    if kind == "member":
        ignored |= IGNORE_MEMBERS
    elif name not in FULL:
        ignored |= IGNORE_SMALL
    result = validate(name)
    errors = [
        f"{code}: {message}"
        for code, message in result["errors"]
        if code not in ignored
    ]
    assert not errors, f"{name}:\n" + "\n".join(errors)


def test_every_public_name_is_validated():
    validated = {name for name, _ in _objects_to_validate()}
    expected = {
        "sknw.NadarayaWatsonRegressor",
        "sknw.NadarayaWatsonClassifierCV",
        "sknw.EmptyWindowWarning",
        "sknw.kernels.Kernel",
        "sknw.kernels.Silverman",
        "sknw.kernels.get_kernel",
        "sknw.datasets.make_d2l_sine",
        "sknw.datasets.d2l_target",
        "sknw.NadarayaWatsonRegressorCV.fit",
        "sknw.LocalLinearRegressor.predict",
        "sknw.NadarayaWatsonClassifier.predict_proba",
        "sknw.kernels.Kernel.variance",
    }
    assert expected <= validated
    assert not any(name.endswith(".get_metadata_routing") for name in validated)
    assert set(KNOWN_FAILURES) <= validated


# -- reST that numpydoc accepts but Sphinx renders wrongly --------------------------

#: Classes whose parameter types carry the markup slips checked below; the
#: documentation build repairs them (docs/conf.py) until they are fixed here.
KNOWN_TYPE_SLIPS = {}


def _type_slips(obj):
    """Types that end in a backslash or hold a bare ``name_`` (a reST link)."""
    doc = (docscrape.ClassDoc if inspect.isclass(obj) else docscrape.FunctionDoc)(
        obj, config={"show_class_members": False}
    )
    slips = []
    for section in ("Parameters", "Attributes", "Returns"):
        for param in doc[section]:
            text = param.type
            if text.rstrip().endswith("\\"):
                slips.append(f"{param.name}: type continued with a backslash")
            unquoted = text.replace("``", "`").split("`")[::2]
            if any(
                word.endswith("_") and not word.startswith("_")
                for part in unquoted
                for word in part.replace("(", " ").replace(",", " ").split()
            ):
                slips.append(f"{param.name}: {text!r} holds a bare name_ (a link)")
    return slips


def _slip_params():
    for name, obj in _public_objects():
        marks = []
        if name in KNOWN_TYPE_SLIPS:
            reason = f"{KNOWN_TYPE_SLIPS[name]}; fix the docstring"
            marks.append(pytest.mark.xfail(reason=reason, strict=True))
        yield pytest.param(obj, id=name, marks=marks)


@pytest.mark.parametrize("obj", list(_slip_params()))
def test_parameter_types_are_plain_text(obj):
    """A backslash continuation only joins lines in a docstring that is not raw;
    ``(n_features_in_,)`` must be quoted as ``(`n_features_in_`,)``."""
    assert not _type_slips(obj)


@pytest.mark.parametrize(
    "name",
    [
        "NadarayaWatsonRegressor",
        "NadarayaWatsonClassifier",
        "NadarayaWatsonRegressorCV",
        "NadarayaWatsonClassifierCV",
        "LocalLinearRegressor",
        "LocalLinearRegressorCV",
        "LocalPolynomialRegressor",
        "LocalPolynomialRegressorCV",
    ],
)
def test_algorithm_lists_match_the_registry(name):
    """The documented ``algorithm`` and ``algorithm_`` values are those the
    estimator accepts (derived from the core's registry of backends)."""
    cls = getattr(sknw, name)
    doc = inspect.getdoc(cls)
    listed = re.search(r"^algorithm : \{([^}]*)\}", doc, re.M).group(1)
    fitted = re.search(r"^algorithm_ : \{([^}]*)\}", doc, re.M).group(1)
    accepted = set(cls._algorithms)
    assert set(re.findall(r'"(\w+)"', listed)) == accepted
    assert set(re.findall(r'"(\w+)"', fitted)) == accepted - {"auto"}
    (constraint,) = cls._parameter_constraints["algorithm"]
    assert constraint.options == accepted
