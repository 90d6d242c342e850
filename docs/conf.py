"""Sphinx configuration of the sknw documentation.

Build with ``python -m sphinx -W --keep-going -b html docs docs/_build/html``.

The build is offline: intersphinx reads small inventories that this file writes
from the lists in ``EXTERNAL`` (the objects of NumPy, SciPy, scikit-learn,
matplotlib, pandas, joblib, Dask and Python that the documentation and the
examples refer to, each with its address on the project's site). Every
reference in the documentation must resolve (``nitpicky``), so a reference to
an object missing from these lists fails the build.
"""

import doctest
import math
import re
import zlib
from pathlib import Path

import numpy as np
from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective
from sphinx_gallery.sorting import ExplicitOrder

import sknw
from sknw import NadarayaWatsonRegressor
from sknw.kernels import KERNELS

HERE = Path(__file__).parent.resolve()

# -- project -----------------------------------------------------------------

project = "sknw"
author = "The sknw developers"
copyright = "The sknw developers"
release = sknw.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.doctest",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

templates_path = ["_templates"]
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
nitpicky = True
default_role = "literal"
pygments_style = "sphinx"

# -- HTML --------------------------------------------------------------------

html_theme = "pydata_sphinx_theme"
html_title = f"sknw {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version", "theme-version"],
}
html_sidebars = {"**": ["sidebar-nav-bs"]}
html_show_sourcelink = False

# -- autodoc, autosummary, numpydoc -------------------------------------------

autosummary_generate = True
autodoc_typehints = "none"
autodoc_member_order = "groupwise"

numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = True
# Only the words below become links; other words of a type stay plain text
# ("of", "shape", "default", ...).
numpydoc_xref_ignore = "all"
numpydoc_xref_aliases = {
    "array-like": ":term:`array-like <sklearn:array-like>`",
    # "cross-validation generator" is split into words: its "generator" is
    # scikit-learn's CV splitter, not a Python generator.
    "generator": ":term:`generator <sklearn:CV splitter>`",
    "Kernel": "sknw.kernels.Kernel",
    "NadarayaWatsonRegressor": "sknw.NadarayaWatsonRegressor",
    "NadarayaWatsonClassifier": "sknw.NadarayaWatsonClassifier",
    "NadarayaWatsonRegressorCV": "sknw.NadarayaWatsonRegressorCV",
    "NadarayaWatsonClassifierCV": "sknw.NadarayaWatsonClassifierCV",
}

doctest_default_flags = (
    doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE | doctest.IGNORE_EXCEPTION_DETAIL
)

# -- sphinx-gallery ------------------------------------------------------------

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "within_subsection_order": ExplicitOrder(
        [
            "plot_d2l_attention_pooling.py",
            "plot_kernels.py",
            "plot_bandwidth_selection.py",
            "plot_local_linear_bands.py",
            "plot_classification.py",
            "plot_grid_search.py",
            "plot_metrics.py",
            "*",
        ]
    ),
    "doc_module": ("sknw",),
    "backreferences_dir": "generated/backreferences",
    "abort_on_example_error": True,
    "remove_config_comments": True,
    "download_all_examples": False,
    "show_memory": False,
    "show_signature": False,
    "matplotlib_animations": False,
    # Show the HTML of a cell's last expression (pandas tables), not the repr
    # of whatever a plotting call returns.
    "capture_repr": ("_repr_html_",),
}

# -- offline intersphinx --------------------------------------------------------


def _generated(base, kind, names):
    """Entries of objects documented on a page of their own, ``base + name``."""
    return [(name, kind, f"{base}{name}.html#{name}") for name in names]


SKLEARN_API = "modules/generated/"
NUMPY_API = "reference/generated/"
EXTERNAL = {
    "python": (
        "https://docs.python.org/3/",
        "Python",
        [
            ("None", "py:data", "library/constants.html#None"),
            ("True", "py:data", "library/constants.html#True"),
            ("False", "py:data", "library/constants.html#False"),
            ("bool", "py:class", "library/functions.html#bool"),
            ("int", "py:class", "library/functions.html#int"),
            ("float", "py:class", "library/functions.html#float"),
            ("str", "py:class", "library/stdtypes.html#str"),
            ("list", "py:class", "library/stdtypes.html#list"),
            ("tuple", "py:class", "library/stdtypes.html#tuple"),
            ("dict", "py:class", "library/stdtypes.html#dict"),
            ("object", "py:class", "library/functions.html#object"),
            ("callable", "py:function", "library/functions.html#callable"),
            ("UserWarning", "py:exception", "library/exceptions.html#UserWarning"),
            ("ValueError", "py:exception", "library/exceptions.html#ValueError"),
            ("TypeError", "py:exception", "library/exceptions.html#TypeError"),
            ("warnings", "py:module", "library/warnings.html#module-warnings"),
            (
                "warnings.catch_warnings",
                "py:class",
                "library/warnings.html#warnings.catch_warnings",
            ),
            (
                "warnings.simplefilter",
                "py:function",
                "library/warnings.html#warnings.simplefilter",
            ),
            (
                "warnings.filterwarnings",
                "py:function",
                "library/warnings.html#warnings.filterwarnings",
            ),
            ("time.perf_counter", "py:function", "library/time.html#time.perf_counter"),
            ("sys.getsizeof", "py:function", "library/sys.html#sys.getsizeof"),
            (
                "bltin-boolean-values",
                "std:label",
                "library/stdtypes.html#bltin-boolean-values",
            ),
            ("iterable", "std:term", "glossary.html#term-iterable"),
            ("sequence", "std:term", "glossary.html#term-sequence"),
        ],
    ),
    "numpy": (
        "https://numpy.org/doc/stable/",
        "NumPy",
        [
            ("numpy", "py:module", "reference/index.html#module-numpy"),
            ("numpy.ndarray", "py:class", f"{NUMPY_API}numpy.ndarray.html"),
            ("numpy.inf", "py:data", "reference/constants.html#numpy.inf"),
            ("numpy.nan", "py:data", "reference/constants.html#numpy.nan"),
            (
                "numpy.random.RandomState",
                "py:class",
                "reference/random/legacy.html#numpy.random.RandomState",
            ),
            (
                "numpy.random.default_rng",
                "py:function",
                "reference/random/generator.html#numpy.random.default_rng",
            ),
            ("array_like", "std:term", "glossary.html#term-array_like"),
            ("arrays.scalars", "std:label", "reference/arrays.scalars.html"),
        ]
        + _generated(
            NUMPY_API,
            "py:function",
            [
                "numpy.arange",
                "numpy.argmin",
                "numpy.array",
                "numpy.asarray",
                "numpy.column_stack",
                "numpy.cos",
                "numpy.exp",
                "numpy.full_like",
                "numpy.geomspace",
                "numpy.linspace",
                "numpy.log",
                "numpy.logspace",
                "numpy.mean",
                "numpy.meshgrid",
                "numpy.quantile",
                "numpy.ravel",
                "numpy.sin",
                "numpy.sqrt",
                "numpy.zeros_like",
            ],
        ),
    ),
    "scipy": (
        "https://docs.scipy.org/doc/scipy/",
        "SciPy",
        [
            (
                "scipy.spatial.distance",
                "py:module",
                "reference/spatial.distance.html#module-scipy.spatial.distance",
            ),
        ]
        + _generated(
            "reference/generated/",
            "py:function",
            ["scipy.integrate.quad", "scipy.spatial.distance.cdist"],
        )
        + _generated(
            "reference/generated/",
            "py:class",
            ["scipy.spatial.cKDTree"],
        ),
    ),
    "sklearn": (
        "https://scikit-learn.org/stable/",
        "scikit-learn",
        [
            ("array-like", "std:term", "glossary.html#term-array-like"),
            ("CV splitter", "std:term", "glossary.html#term-CV-splitter"),
            ("meta-estimator", "std:term", "glossary.html#term-meta-estimator"),
            ("metadata_routing", "std:label", "metadata_routing.html"),
            ("r2_score", "std:label", "modules/model_evaluation.html#r2-score"),
            (
                "accuracy_score",
                "std:label",
                "modules/model_evaluation.html#accuracy-score",
            ),
            ("grid_search", "std:label", "modules/grid_search.html"),
            ("cross_validation", "std:label", "modules/cross_validation.html"),
        ]
        + _generated(
            SKLEARN_API,
            "py:class",
            [
                "sklearn.model_selection.GridSearchCV",
                "sklearn.model_selection.KFold",
                "sklearn.model_selection.LeaveOneOut",
                "sklearn.pipeline.Pipeline",
                "sklearn.preprocessing.StandardScaler",
                "sklearn.neighbors.KNeighborsClassifier",
                "sklearn.neighbors.KNeighborsRegressor",
                "sklearn.neighbors.RadiusNeighborsRegressor",
                "sklearn.neighbors.KernelDensity",
                "sklearn.linear_model.RidgeCV",
                "sklearn.multioutput.MultiOutputRegressor",
                "sklearn.utils.metadata_routing.MetadataRequest",
            ],
        )
        + _generated(
            SKLEARN_API,
            "py:function",
            [
                "sklearn.base.clone",
                "sklearn.config_context",
                "sklearn.set_config",
                "sklearn.get_config",
                "sklearn.pipeline.make_pipeline",
                "sklearn.model_selection.check_cv",
                "sklearn.model_selection.cross_val_score",
                "sklearn.model_selection.train_test_split",
                "sklearn.datasets.load_diabetes",
                "sklearn.datasets.load_iris",
                "sklearn.datasets.make_moons",
                "sklearn.metrics.accuracy_score",
                "sklearn.metrics.log_loss",
                "sklearn.metrics.mean_squared_error",
                "sklearn.metrics.r2_score",
            ],
        ),
    ),
    "matplotlib": (
        "https://matplotlib.org/stable/",
        "Matplotlib",
        _generated(
            "api/_as_gen/",
            "py:function",
            [
                "matplotlib.pyplot.show",
                "matplotlib.pyplot.subplots",
            ],
        ),
    ),
    "pandas": (
        "https://pandas.pydata.org/docs/",
        "pandas",
        _generated("reference/api/", "py:class", ["pandas.DataFrame"])
        + _generated(
            "reference/api/",
            "py:method",
            [
                "pandas.DataFrame.pivot_table",
                "pandas.DataFrame.sort_values",
            ],
        ),
    ),
    "joblib": (
        "https://joblib.readthedocs.io/en/stable/",
        "joblib",
        _generated("generated/", "py:class", ["joblib.parallel_config"]),
    ),
    "dask": (
        "https://docs.dask.org/en/stable/",
        "Dask",
        _generated(
            "generated/",
            "py:class",
            ["dask.array.Array", "dask.dataframe.DataFrame", "dask.dataframe.Series"],
        )
        + _generated("generated/", "py:method", ["dask.array.Array.map_blocks"]),
    ),
    "distributed": (
        "https://distributed.dask.org/en/stable/",
        "Dask.distributed",
        [
            ("distributed.Client", "py:class", "api.html#distributed.Client"),
            (
                "distributed.Client.scatter",
                "py:method",
                "api.html#distributed.Client.scatter",
            ),
            (
                "distributed.get_client",
                "py:function",
                "api.html#distributed.get_client",
            ),
        ],
    ),
}


def write_inventory(path, project, entries):
    """Write a Sphinx inventory (version 2: a text header, zlib-compressed body).

    Each entry is ``(name, "domain:role", uri)`` with ``uri`` relative to the
    project's documentation root.
    """
    header = (
        "# Sphinx inventory version 2\n"
        f"# Project: {project}\n"
        "# Version: stable\n"
        "# The remainder of this file is compressed using zlib.\n"
    )
    lines = []
    for name, kind, uri in sorted(entries):
        if " " in uri or not re.fullmatch(r"[a-z]+:[a-z]+", kind):
            raise ValueError(f"bad inventory entry {(name, kind, uri)!r}")
        priority = "-1" if kind == "std:label" else "1"
        display = name if kind.startswith("std:") else "-"
        lines.append(f"{name} {kind} {priority} {uri} {display}\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(header.encode() + zlib.compress("".join(lines).encode()))


INVENTORY_DIR = HERE / "generated" / "inventories"
intersphinx_mapping = {}
for _key, (_url, _project, _entries) in EXTERNAL.items():
    _path = INVENTORY_DIR / f"{_key}.inv"
    write_inventory(_path, _project, _entries)
    intersphinx_mapping[_key] = (_url, str(_path))

# -- the kernel table, computed from the code -------------------------------------


def _format_number(value):
    if math.isnan(value):
        return "—"
    if math.isinf(value):
        return r":math:`\infty`"
    if value == int(value) and abs(value) < 10:
        return f"{int(value)}"
    return f"{value:.4f}"


def _kernel_formula(cls):
    """The formula of a kernel's docstring summary (after "kernel, ")."""
    summary = cls.__doc__.strip().splitlines()[0]
    return summary.split("kernel, ", 1)[1].rstrip(".")


def _rule_factors():
    """Ratio of each kernel's Scott-rule bandwidth to the Gaussian's, as fitted."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 1))
    y = X[:, 0]
    rule = {"bandwidth": "scott"}
    reference = NadarayaWatsonRegressor(**rule).fit(X, y).bandwidth_[0]
    return {
        cls: NadarayaWatsonRegressor(kernel=name, **rule).fit(X, y).bandwidth_[0]
        / reference
        for name, cls in KERNELS.items()
    }


def kernel_table_rst(which):
    """A list-table of the built-in kernels: formulas or constants."""
    names = {}
    for name, cls in KERNELS.items():
        names.setdefault(cls, []).append(f'``"{name}"``')
    if which == "formulas":
        header = ["Kernel", "Names", ":math:`K(u)`"]
        widths = "20 25 55"
    else:
        header = [
            "Kernel",
            "Support",
            r"Variance :math:`\sigma_K^2`",
            "Roughness :math:`R(K)`",
            r"Canonical scale :math:`\delta_K`",
            "Rule factor",
        ]
        widths = "20 12 17 17 17 17"
        factors = _rule_factors()
    rows = [".. list-table::", "   :header-rows: 1", f"   :widths: {widths}", ""]
    rows += [("   * - " if i == 0 else "     - ") + h for i, h in enumerate(header)]
    for cls, aliases in names.items():
        kernel = cls()
        if which == "formulas":
            cells = [", ".join(aliases), _kernel_formula(cls)]
        else:
            cells = [
                _format_number(kernel.support),
                _format_number(float(kernel.variance)),
                _format_number(float(kernel.roughness)),
                _format_number(float(kernel.canonical_scale)),
                _format_number(float(factors[cls])),
            ]
        rows.append(f"   * - :class:`~sknw.kernels.{cls.__name__}`")
        rows += [f"     - {cell}" for cell in cells]
    return rows


class KernelTable(SphinxDirective):
    """``.. kernel-table:: formulas`` or ``constants``: built from the code."""

    required_arguments = 1

    def run(self):
        which = self.arguments[0]
        if which not in ("formulas", "constants"):
            raise self.error(f"kernel-table: unknown table {which!r}")
        container = nodes.container()
        lines = StringList(kernel_table_rst(which), source="kernel-table")
        self.state.nested_parse(lines, self.content_offset, container)
        return container.children


def setup(app):
    app.add_directive("kernel-table", KernelTable)
