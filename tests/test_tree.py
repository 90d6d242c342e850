"""Tree sums against dense sums, and the metrics the tree supports."""

import numpy as np
import pytest
from _core_reference import (
    _training_tiles_of_4096,  # noqa: F401  (autouse)
    brute_sums,
    make_data,
)
from numpy.testing import assert_allclose, assert_array_equal

from sknw import NadarayaWatsonRegressor
from sknw._sums import TILE_ELEMENTS, Head, _traits, _tree
from sknw.kernels import KERNELS, Boxcar, Epanechnikov, Triangular


@pytest.mark.parametrize(
    "kernel", [Epanechnikov(), Boxcar(), Triangular(), KERNELS["tricube"]()]
)
@pytest.mark.parametrize(
    "metric, params, p",
    [
        ("euclidean", None, 2.0),
        ("cityblock", None, 1.0),
        ("chebyshev", None, np.inf),
        ("minkowski", {"p": 3}, 3.0),
    ],
)
@pytest.mark.parametrize("tile_elements", [50, TILE_ELEMENTS])
def test_tree_sums_equal_dense_sums(kernel, metric, params, p, tile_elements):
    Q, X, V, w = make_data(13, 300, 900, 3)
    w[::4] = 0.0
    Q[:5] += 30.0  # empty windows
    scale = np.array([0.5, 1.0, 2.0])
    head = Head(kernel, 0.4)
    assert _traits.tree_p(metric, params) == p
    tree = _tree.build_tree(X, scale)
    ((S, den, M),) = _tree.tree_kernel_sums(
        Q,
        X,
        V,
        [head],
        tree=tree,
        p=p,
        scale=scale,
        sample_weight=w,
        tile_elements=tile_elements,
    )
    ref = brute_sums(Q / scale, X / scale, V, head, metric, params, w)
    # Tree sums are unshifted (M = 0): compare the ratios and the empty rows.
    empty = ref[1] == 0
    assert empty[:5].all() and not empty[5:].all()
    assert_array_equal(den == 0, empty)
    assert_array_equal(np.isneginf(M), empty)
    assert_allclose(
        S[~empty] / den[~empty, None], ref[0][~empty] / ref[1][~empty, None], rtol=1e-12
    )


def test_tree_metric_support():
    assert _traits.tree_p("minkowski", None) == 2.0
    assert _traits.tree_p("minkowski", {"p": 0.5}) is None
    assert _traits.tree_p("cosine", None) is None
    assert _traits.tree_p("euclidean", {"w": [1.0]}) is None
    assert _traits.tree_p(lambda a, b: 0.0, None) is None


def test_only_discrete_features_never_take_the_tree():
    # Every feature discrete, a compact kernel and a level shared by more
    # points than the tree's threshold: "auto" sums each cell without a
    # KD-tree (which has no continuous column to search), as brute does.
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": pd.Categorical(rng.choice(list("ab"), 1200))})
    y = rng.normal(size=1200)
    for bandwidth in ("cv", "scott"):
        auto = NadarayaWatsonRegressor(kernel="epanechnikov", bandwidth=bandwidth)
        brute = NadarayaWatsonRegressor(
            kernel="epanechnikov", bandwidth=bandwidth, algorithm="brute"
        )
        assert_allclose(auto.fit(X, y).predict(X), brute.fit(X, y).predict(X))
    tree = NadarayaWatsonRegressor(kernel="epanechnikov", algorithm="tree")
    with pytest.raises(ValueError, match="needs a continuous feature"):
        tree.fit(X, y)
