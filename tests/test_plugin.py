"""The direct plug-in bandwidth (``bandwidth="plugin"``) against R's
``KernSmooth::dpill`` (skipped without R), its invariances and its errors."""

import shutil
import subprocess

import numpy as np
import pytest
from numpy.testing import assert_allclose

from sknw import LocalLinearRegressor, NadarayaWatsonRegressor
from sknw._bandwidth.plugin import plugin_bandwidth
from sknw._bandwidth.rules import kernel_factor
from sknw.kernels import get_kernel


def curve(name, n, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.0, 1.0, n)
    if name == "sine":
        f, s = np.sin(2 * np.pi * x**3) ** 3, 0.1
    elif name == "doppler":
        f, s = np.sqrt(x * (1 - x)) * np.sin(2.1 * np.pi / (x + 0.05)), 0.1
    else:
        f, s = 2 * np.sin(6 * x) + x, 0.5
    return x, f + s * rng.normal(size=n)


def r_dpill(x, y, tmp_path):
    data = tmp_path / "data.csv"
    np.savetxt(
        data,
        np.column_stack([x, y]),
        delimiter=",",
        header="x,y",
        comments="",
        fmt="%.17g",
    )
    code = (
        "suppressMessages(library(KernSmooth)); "
        f'd <- read.csv("{data}"); cat(format(dpill(d$x, d$y), digits = 17))'
    )
    out = subprocess.run(
        ["Rscript", "-e", code], capture_output=True, text=True, timeout=120
    )
    if out.returncode != 0:
        pytest.skip(f"R's KernSmooth is not usable: {out.stderr.strip()[:200]}")
    return float(out.stdout.split()[-1])


@pytest.mark.skipif(shutil.which("Rscript") is None, reason="R is not installed")
@pytest.mark.parametrize(
    ("name", "n"), [("sine", 200), ("sine", 2000), ("doppler", 1000), ("trend", 500)]
)
def test_equals_r_dpill(name, n, tmp_path):
    x, y = curve(name, n, seed=n)
    assert_allclose(plugin_bandwidth(x, y), r_dpill(x, y, tmp_path), rtol=1e-8)


def test_scales_with_the_feature_and_ignores_the_targets_scale_and_order():
    x, y = curve("sine", 800, seed=1)
    h = plugin_bandwidth(x, y)
    assert_allclose(plugin_bandwidth(3.0 * x + 5.0, y), 3.0 * h, rtol=1e-9)
    assert_allclose(plugin_bandwidth(x, 7.0 * y - 2.0), h, rtol=1e-9)
    order = np.random.default_rng(0).permutation(x.size)
    assert plugin_bandwidth(x[order], y[order]) == h


@pytest.mark.parametrize("name", ["sine", "trend"])
def test_local_linear_at_the_plugin_is_near_the_best_bandwidth(name):
    # (Not the doppler, whose wiggles near 0 need a smaller bandwidth than
    # one plug-in for the whole design: dpill oversmooths it, as here.)
    x, y = curve(name, 2000, seed=2)
    X = x[:, None]
    grid = np.linspace(0.05, 0.95, 901)[:, None]
    # The true function on the grid (the curves without noise).
    xs = grid[:, 0]
    f = {
        "sine": np.sin(2 * np.pi * xs**3) ** 3,
        "doppler": np.sqrt(xs * (1 - xs)) * np.sin(2.1 * np.pi / (xs + 0.05)),
        "trend": 2 * np.sin(6 * xs) + xs,
    }[name]
    plugin = LocalLinearRegressor(bandwidth="plugin").fit(X, y)
    mse = np.mean((plugin.predict(grid) - f) ** 2)
    best = min(
        np.mean((LocalLinearRegressor(bandwidth=h).fit(X, y).predict(grid) - f) ** 2)
        for h in np.geomspace(0.002, 0.2, 60)
    )
    assert mse <= 1.5 * best


def test_other_kernels_by_their_canonical_scale():
    x, y = curve("trend", 300, seed=3)
    h = plugin_bandwidth(x, y)
    for kernel in ("gaussian", "epanechnikov", "tricube"):
        est = NadarayaWatsonRegressor(kernel=kernel, bandwidth="plugin")
        est.fit(x[:, None], y)
        assert_allclose(est.bandwidth_, [h * kernel_factor(get_kernel(kernel))])
        assert est.bandwidth_selection_ == {"method": "plugin", "n_samples": 300}


def test_where_the_plugin_does_not_apply():
    x, y = curve("sine", 100, seed=4)
    X = x[:, None]
    with pytest.raises(ValueError, match="one feature"):
        LocalLinearRegressor(bandwidth="plugin").fit(np.c_[X, X], y)
    with pytest.raises(ValueError, match="no sample_weight"):
        LocalLinearRegressor(bandwidth="plugin").fit(X, y, sample_weight=np.ones(100))
    with pytest.raises(ValueError, match="one target"):
        LocalLinearRegressor(bandwidth="plugin").fit(X, np.c_[y, y])
    with pytest.raises(ValueError, match="metric that is"):
        LocalLinearRegressor(bandwidth="plugin", metric="cosine").fit(X, y)
    with pytest.raises(ValueError, match="at least 10 training points"):
        LocalLinearRegressor(bandwidth="plugin").fit(X[:9], y[:9])
    with pytest.raises(ValueError, match="noise-free or linear"):
        LocalLinearRegressor(bandwidth="plugin").fit(X, 2 * x + 1)
