"""Demo: the Dive into Deep Learning chapter on attention pooling, with sknw.

Run ``python -m sknw [--output PATH]``: prints the validation error of the four
chapter kernels, of Gaussian bandwidths 0.1, 0.2, 0.5 and 1, of Scott's rule
and of the default bandwidth (leave-one-out cross-validation), and writes a
figure of the estimates and attention weights when matplotlib is installed.
"""

import argparse
import warnings

import numpy as np

from . import NadarayaWatsonRegressor
from .datasets import d2l_target, make_d2l_sine
from .exceptions import EmptyWindowWarning

KERNELS = ("gaussian", "boxcar", "constant", "triangular")
WIDTHS = (0.1, 0.2, 0.5, 1.0)


def run(output="sknw_demo.png", random_state=0):
    """Fit the chapter's models; print the table; write the figure.

    Returns the table rows as ``(model, bandwidth, mse)`` tuples.
    """
    X, y, X_val, y_val = make_d2l_sine(random_state=random_state)
    models = [(k, NadarayaWatsonRegressor(kernel=k, bandwidth=1.0)) for k in KERNELS]
    models += [
        (f"gaussian h={h}", NadarayaWatsonRegressor(bandwidth=h)) for h in WIDTHS
    ]
    models.append(("gaussian (scott)", NadarayaWatsonRegressor(bandwidth="scott")))
    models.append(("gaussian (default)", NadarayaWatsonRegressor()))
    rows, fits = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyWindowWarning)
        for name, model in models:
            model.fit(X, y)
            pred = model.predict(X_val)
            bw = float(np.ravel(model.bandwidth_)[0])
            rows.append((name, bw, float(np.mean((pred - y_val) ** 2))))
            fits.append((name, pred, model.attention_weights(X_val)))
    print("Nadaraya-Watson on the d2l data (40 points, noise variance 1)")
    print(f"{'model':<22}{'bandwidth':>10}{'validation MSE':>16}")
    for name, bw, mse in rows:
        print(f"{name:<22}{bw:>10.3f}{mse:>16.4f}")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("Install matplotlib (pip install 'sknw[plot]') to get the figure.")
        return rows
    n = len(fits) - 1
    fig, axes = plt.subplots(2, n, figsize=(2.6 * n, 5.6), constrained_layout=True)
    for col, (name, pred, weights) in enumerate(fits[:n]):
        ax = axes[0, col]
        ax.plot(X_val[:, 0], d2l_target(X_val[:, 0]), "k--", lw=1, label="truth")
        ax.plot(X_val[:, 0], pred, "C0", label="estimate")
        ax.plot(X[:, 0], y, "o", ms=3, color="C1", alpha=0.6, label="data")
        ax.set_title(name, fontsize=9)
        axes[1, col].imshow(weights, cmap="Reds", aspect="auto")
        axes[1, col].set_xlabel("training point (key)")
    axes[0, 0].legend(fontsize=7)
    axes[1, 0].set_ylabel("validation point (query)")
    fig.savefig(output, dpi=110)
    plt.close(fig)
    print(f"Figure written to {output}")
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m sknw", description=__doc__)
    parser.add_argument("--output", default="sknw_demo.png", help="figure path")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    args = parser.parse_args(argv)
    run(args.output, args.seed)


if __name__ == "__main__":
    main()
