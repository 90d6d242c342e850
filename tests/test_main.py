"""The ``python -m sknw`` demo."""

import sys

import numpy as np
import pytest
from numpy.testing import assert_allclose

from sknw.__main__ import KERNELS, WIDTHS, main, run
from sknw.datasets import make_d2l_sine


def _table(out):
    """Rows of the printed table as ``{model: (bandwidth, mse)}``."""
    rows = {}
    for line in out.splitlines():
        parts = line.rsplit(maxsplit=2)
        if len(parts) != 3:
            continue
        try:
            rows[parts[0].strip()] = (float(parts[1]), float(parts[2]))
        except ValueError:
            continue
    return rows


def test_main_prints_table_and_writes_png(tmp_path, capsys):
    output = tmp_path / "fig.png"
    main(["--output", str(output)])
    out = capsys.readouterr().out
    rows = _table(out)
    assert KERNELS == ("gaussian", "boxcar", "constant", "triangular")
    assert WIDTHS == (0.1, 0.2, 0.5, 1.0)
    for kernel in KERNELS:
        assert rows[kernel][0] == 1.0
    for h in WIDTHS:
        assert rows[f"gaussian h={h}"][0] == h
    assert "gaussian (default)" in rows
    assert all(np.isfinite(mse) and mse >= 0 for _, mse in rows.values())
    assert f"Figure written to {output}" in out
    data = output.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    assert len(data) > 1000


@pytest.fixture
def no_figure(monkeypatch):
    """Make the figure unavailable: the table alone is fast to compute."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)


def test_run_rows(tmp_path, capsys, no_figure):
    rows = run(str(tmp_path / "fig.png"), random_state=0)
    capsys.readouterr()
    names = [name for name, _, _ in rows]
    assert names == [
        *KERNELS,
        *(f"gaussian h={h}" for h in WIDTHS),
        "gaussian (scott)",
        "gaussian (default)",
    ]
    table = {name: (bw, mse) for name, bw, mse in rows}
    # Well below the noise variance of 1.
    assert table["gaussian (default)"][1] < 0.5
    # The constant kernel predicts the mean of the targets everywhere.
    _, y, _, y_val = make_d2l_sine(random_state=0)
    assert_allclose(table["constant"][1], np.mean((y.mean() - y_val) ** 2))
    # A tiny bandwidth overfits: worse than the data-driven default.
    assert table["gaussian h=0.1"][1] > table["gaussian (default)"][1]


def test_seed_changes_data(tmp_path, capsys, no_figure):
    rows0 = run(str(tmp_path / "a.png"), random_state=0)
    rows1 = run(str(tmp_path / "b.png"), random_state=1)
    capsys.readouterr()
    assert rows0 != rows1
    assert [r[0] for r in rows0] == [r[0] for r in rows1]


@pytest.mark.parametrize("how", ["sys_modules", "import_error"])
def test_without_matplotlib(tmp_path, capsys, monkeypatch, how):
    if how == "sys_modules":
        monkeypatch.setitem(sys.modules, "matplotlib", None)
    else:
        real_import = __import__

        def failing_import(name, *args, **kwargs):
            if name == "matplotlib" or name.startswith("matplotlib."):
                raise ImportError(f"No module named {name!r}")
            return real_import(name, *args, **kwargs)

        monkeypatch.setattr("builtins.__import__", failing_import)
    output = tmp_path / "fig.png"
    main(["--output", str(output)])
    out = capsys.readouterr().out
    rows = _table(out)
    for kernel in KERNELS:
        assert kernel in rows
    for h in WIDTHS:
        assert f"gaussian h={h}" in rows
    assert "Install matplotlib" in out
    assert "Figure written" not in out
    assert not output.exists()
