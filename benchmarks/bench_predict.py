"""Dense predict: sknw vs primitives and peers, as ratios measured in one run.

Run ``python benchmarks/bench_predict.py`` (``--quick`` for smaller sizes). Every
figure is a ratio of two timings (or memory peaks) taken in the same run, so the
table is meaningful on a shared, noisy machine. Single thread unless stated.
"""

import argparse
import functools
import time
import tracemalloc

import numpy as np
from _timing import best_time, exp_time, print_table
from threadpoolctl import threadpool_limits

from sknw import NadarayaWatsonRegressor


def peak_memory(fn):
    """Peak of the memory allocated during ``fn`` (numpy reports to tracemalloc)."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak - base


def exp_thread_speedup(reps=2000):
    """Speedup of two threads over one for bare ``np.exp`` on cached chunks."""
    from concurrent.futures import ThreadPoolExecutor

    chunk = np.linspace(-20.0, 0.0, 1 << 17)

    def work(_=None):
        out = np.empty_like(chunk)
        for _ in range(reps):
            np.exp(chunk, out=out)

    serial = best_time(lambda: (work(), work()), 2)
    with ThreadPoolExecutor(2) as pool:
        threads = best_time(lambda: list(pool.map(work, range(2))), 2)
    return serial / threads


def make_data(n, m, d, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.sin(X @ np.linspace(1.0, 0.2, d)) + 0.1 * rng.normal(size=n)
    Q = rng.normal(size=(m, d))
    return X, y, Q


def d2l_predict(X, y, Q, h):
    """The full-matrix code of the d2l chapter (Gaussian), in numpy."""
    dists = np.sqrt(((Q[:, None, :] - X[None, :, :]) ** 2).sum(-1)) / h
    k = np.exp(-(dists**2) / 2)
    attention = k / k.sum(axis=1, keepdims=True)
    return attention @ y


def statsmodels_predict(X, y, Q, h):
    from statsmodels.nonparametric.kernel_regression import KernelReg

    d = X.shape[1]
    model = KernelReg(y, X, var_type="c" * d, reg_type="lc", bw=np.full(d, h))
    return model.fit(Q)[0]


def radius_predict(X, y, Q, h):
    from sklearn.neighbors import RadiusNeighborsRegressor

    def epanechnikov(dist):
        return [np.maximum(1.0 - (np.asarray(di) / h) ** 2, 0.0) for di in dist]

    model = RadiusNeighborsRegressor(radius=h, weights=epanechnikov)
    return model.fit(X, y).predict(Q)


def rows(quick):
    table = []
    size = 5000 if quick else 20000
    for d in (1, 8):
        X, y, Q = make_data(size, size, d)
        h = 0.5
        # The dense engine (with one feature, "auto" would take the fast
        # Gauss transform; see the rows below).
        model = NadarayaWatsonRegressor(bandwidth=h, algorithm="brute").fit(X, y)
        t_sknw = best_time(lambda model=model, Q=Q: model.predict(Q), 2)
        t_exp = exp_time(size * size)
        mem = peak_memory(lambda model=model, Q=Q: model.predict(Q))
        table.append(
            (
                f"gaussian predict n=m={size}, d={d}",
                "np.exp over n*m",
                t_sknw / t_exp,
                f"{t_sknw / size**2 * 1e9:.2f} ns/pair; peak +{mem / 2**20:.1f} MiB",
            )
        )

    # float32 inputs against the same (float32-rounded) values in float64, on
    # data in a box a few bandwidths wide (where the float32 rounding bound
    # holds; elsewhere float64 is used).
    for d, h in ((1, 0.05), (3, 0.5), (8, 1.0)):
        rng = np.random.default_rng(7)
        X32 = rng.uniform(-1.0, 1.0, size=(size, d)).astype(np.float32)
        Q32 = rng.uniform(-1.0, 1.0, size=(size, d)).astype(np.float32)
        y = np.sin(3.0 * X32[:, 0]) + 0.1 * rng.normal(size=size)
        single = NadarayaWatsonRegressor(bandwidth=h, algorithm="brute")
        double = NadarayaWatsonRegressor(bandwidth=h, algorithm="brute")
        single.fit(X32, y)
        double.fit(X32.astype(np.float64), y)
        Q64 = Q32.astype(np.float64)
        t32 = best_time(lambda m=single, Q=Q32: m.predict(Q), 2)
        t64 = best_time(lambda m=double, Q=Q64: m.predict(Q), 2)
        t_exp = exp_time(size * size)
        err = np.max(np.abs(single.predict(Q32) - double.predict(Q64)))
        table.append(
            (
                f"float32 gaussian predict n=m={size}, d={d}",
                "float64",
                t64 / t32,
                f"{t32 / t_exp:.2f} x np.exp (float64) over n*m; "
                f"max |diff| / max |y| {err / np.max(np.abs(y)):.1e}",
            )
        )

    for d in (1, 8):
        n = 1000 if quick else 3000
        X, y, Q = make_data(n, n, d, seed=1)
        h = 0.5
        model = NadarayaWatsonRegressor(bandwidth=np.full(d, h)).fit(X, y)
        dense = NadarayaWatsonRegressor(bandwidth=np.full(d, h), algorithm="brute")
        dense.fit(X, y)
        ours = model.predict(Q)
        t_ours = best_time(lambda model=model, Q=Q: model.predict(Q))
        t_dense = best_time(lambda model=dense, Q=Q: model.predict(Q))
        t_sm = best_time(functools.partial(statsmodels_predict, X, y, Q, h), 1)
        err = np.max(np.abs(statsmodels_predict(X, y, Q, h) - ours))
        table.append(
            (
                f"statsmodels KernelReg lc, n=m={n}, d={d}",
                f"sknw ({model.algorithm_})",
                t_sm / t_ours,
                f"max |diff| {err:.1e}",
            )
        )
        if model.algorithm_ != "brute":
            table.append(
                (
                    f"statsmodels KernelReg lc, n=m={n}, d={d}",
                    "sknw (brute)",
                    t_sm / t_dense,
                    "",
                )
            )

    n = 2000 if quick else 10000
    X, y, Q = make_data(n, n, 1, seed=2)
    model = NadarayaWatsonRegressor(bandwidth=0.5).fit(X, y)
    dense = NadarayaWatsonRegressor(bandwidth=0.5, algorithm="brute").fit(X, y)
    t_ours = best_time(lambda: model.predict(Q))
    t_dense = best_time(lambda: dense.predict(Q))
    t_d2l = best_time(lambda: d2l_predict(X, y, Q, 0.5), 1)
    m_ours = peak_memory(lambda: model.predict(Q))
    m_d2l = peak_memory(lambda: d2l_predict(X, y, Q, 0.5))
    err = np.max(np.abs(d2l_predict(X, y, Q, 0.5) - model.predict(Q)))
    table.append(
        (
            f"d2l full-matrix code, n=m={n}, d=1",
            f"sknw ({model.algorithm_})",
            t_d2l / t_ours,
            "",
        )
    )
    table.append(
        (f"d2l full-matrix code, n=m={n}, d=1", "sknw (brute)", t_d2l / t_dense, "")
    )
    table.append(
        (
            f"d2l full-matrix code, n=m={n}, d=1",
            "sknw peak memory",
            m_d2l / m_ours,
            f"{m_d2l / 2**20:.0f} MiB vs {m_ours / 2**20:.1f} MiB; "
            f"max |diff| {err:.1e}",
        )
    )

    for d in (1, 3):
        n = 3000 if quick else 10000
        X, y, Q = make_data(n, n, d, seed=3)
        h = 0.3
        model = NadarayaWatsonRegressor(
            kernel="epanechnikov", bandwidth=h, empty_window="nan"
        ).fit(X, y)
        t_ours = best_time(lambda model=model, Q=Q: model.predict(Q))
        t_rn = best_time(functools.partial(radius_predict, X, y, Q, h), 1)
        table.append(
            (
                f"RadiusNeighborsRegressor epanechnikov, n=m={n}, d={d}",
                "sknw",
                t_rn / t_ours,
                "",
            )
        )

    size = 5000 if quick else 20000
    X, y, Q = make_data(size, size, 3, seed=5)
    serial = NadarayaWatsonRegressor(bandwidth=0.5).fit(X, y)
    threads = NadarayaWatsonRegressor(bandwidth=0.5, n_jobs=2).fit(X, y)
    # BLAS stays at one thread: the two workers are the only parallelism.
    t1 = best_time(lambda: serial.predict(Q), 2)
    t2 = best_time(lambda: threads.predict(Q), 2)
    table.append((f"n_jobs=2 predict, n=m={size}, d=3", "n_jobs=1", t1 / t2, ""))
    table.append(
        (
            "np.exp on 2 threads (the machine's ceiling)",
            "1 thread",
            exp_thread_speedup(),
            "same work, same run",
        )
    )

    n1 = 100_000 if quick else 1_000_000
    rng = np.random.default_rng(6)
    X1 = rng.uniform(0.0, 10.0, size=(n1, 1))
    y1 = np.sin(X1[:, 0]) + 0.3 * rng.normal(size=n1)
    Q1 = rng.uniform(0.0, 10.0, size=(n1, 1))
    fast = NadarayaWatsonRegressor(kernel="epanechnikov", bandwidth=0.05)
    start = time.perf_counter()
    fast_pred = fast.fit(X1, y1).predict(Q1)
    t_fast = time.perf_counter() - start
    dense = NadarayaWatsonRegressor(
        kernel="epanechnikov", bandwidth=0.05, algorithm="brute"
    ).fit(X1, y1)
    sample = slice(0, 2000)
    t_dense = best_time(lambda: dense.predict(Q1[sample]), 1) * n1 / 2000
    err = np.max(np.abs(dense.predict(Q1[sample]) - fast_pred[sample]))
    table.append(
        (
            f"1-D epanechnikov fit+predict n=m={n1} ({fast.algorithm_})",
            "dense (extrapolated)",
            t_dense / t_fast,
            f"{t_fast:.2f} s; max |diff| on 2000 queries {err:.1e}",
        )
    )

    exact = NadarayaWatsonRegressor(bandwidth=0.05, algorithm="brute").fit(X1, y1)
    t_exact = best_time(lambda: exact.predict(Q1[sample]), 1) * n1 / 2000
    fgt = NadarayaWatsonRegressor(bandwidth=0.05)
    start = time.perf_counter()
    fgt_pred = fgt.fit(X1, y1).predict(Q1)
    t_fgt = time.perf_counter() - start
    err = np.max(np.abs(exact.predict(Q1[sample]) - fgt_pred[sample])) / np.ptp(y1)
    table.append(
        (
            f"1-D gaussian fit+predict n=m={n1} ({fgt.algorithm_})",
            "dense (extrapolated)",
            t_exact / t_fgt,
            f"{t_fgt:.2f} s; max |diff| / range of y on 2000 queries {err:.1e}",
        )
    )

    gauss = NadarayaWatsonRegressor(bandwidth=0.05, algorithm="binned", binned_tol=1e-5)
    start = time.perf_counter()
    binned_pred = gauss.fit(X1, y1).predict(Q1)
    t_binned = time.perf_counter() - start
    err = np.max(np.abs(exact.predict(Q1[sample]) - binned_pred[sample])) / np.ptp(y1)
    t_exp = exp_time(n1 * 2000) * n1 / 2000
    table.append(
        (
            f"1-D gaussian fit+predict n=m={n1} (binned, tol 1e-5)",
            "dense (extrapolated)",
            t_exact / t_binned,
            f"{t_binned:.2f} s = {t_binned / t_exp:.1e} x np.exp over n*m; max "
            f"|diff| / range of y on 2000 queries {err:.1e}",
        )
    )

    n_big = 200_000 if quick else 1_000_000
    X, y, Q = make_data(n_big, 2000, 3, seed=4)
    model = NadarayaWatsonRegressor(bandwidth=0.3).fit(X, y)
    mem = peak_memory(lambda: model.predict(Q))
    table.append(
        (
            f"extra peak memory, n_train={n_big}, d=3, 2000 queries",
            "64 MiB",
            mem / 2**26,
            f"{mem / 2**20:.1f} MiB",
        )
    )
    table.extend(memory_per_query_rows(quick))
    return table


def _keep(out, method, Q, kwargs):
    out.append(method(Q, **kwargs))


def memory_per_query_rows(quick):
    """Peak extra memory of predictions per query, beyond their output, with
    5 training points (the sums cost nothing: what is left is per query)."""
    from sknw import LocalLinearRegressor, NadarayaWatsonClassifier

    m = 200_000 if quick else 1_000_000
    X, y, Q = make_data(5, m, 3, seed=5)
    cases = [
        ("predict", NadarayaWatsonRegressor(bandwidth=1.0), "predict", {}),
        (
            "return_std",
            NadarayaWatsonRegressor(bandwidth=1.0),
            "predict",
            {"return_std": True},
        ),
        ("predict_proba", NadarayaWatsonClassifier(bandwidth=1.0), "predict_proba", {}),
        ("local linear", LocalLinearRegressor(bandwidth=2.0), "predict", {}),
    ]
    rows = []
    for name, model, method, kwargs in cases:
        target = (y > 0).astype(int) if "proba" in method else y
        model.fit(X, target)
        out = []
        call = functools.partial(_keep, out, getattr(model, method), Q, kwargs)
        mem = peak_memory(call)
        result = out[0] if isinstance(out[0], tuple) else (out[0],)
        extra = mem - sum(a.nbytes for a in result)
        rows.append(
            (
                f"extra memory per query, {name}, m={m}",
                "8 bytes (a float)",
                extra / m / 8,
                f"{extra / m:.1f} bytes per query beyond the output "
                f"({extra / 2**20:.1f} MiB)",
            )
        )
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    args = parser.parse_args()
    with threadpool_limits(1):
        table = rows(args.quick)
    print_table(table)


if __name__ == "__main__":
    main()
