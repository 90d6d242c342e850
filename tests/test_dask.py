"""Scale-out: compact picklable models, joblib backends and dask_predict.

One two-process ``distributed.LocalCluster`` serves the module. Its client is
not the default: the ``client`` fixture makes it current (``get_client()``
finds it, as joblib's dask backend and :func:`sknw.dask_predict` do) and dask's
scheduler for the duration of a test, so the other tests run without one.
The workers unpickle ``CountingRegressor`` by reference to this module, which
they import by name.
"""

import pickle
import re
import site
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from joblib import Parallel, delayed, parallel_config
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sknw import NadarayaWatsonClassifier, NadarayaWatsonRegressor, dask_predict

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
cloudpickle = pytest.importorskip("cloudpickle")
sizeof = pytest.importorskip("dask.sizeof").sizeof

#: Unpickles of a ``CountingRegressor`` in this process (counted on workers).
UNPICKLES = 0


class CountingRegressor(NadarayaWatsonRegressor):
    """A regressor that counts how often the process unpickles one."""

    def __setstate__(self, state):
        global UNPICKLES
        UNPICKLES += 1
        super().__setstate__(state)


class SmallSizeofRegressor(CountingRegressor):
    """A counting regressor that reports the size of an empty object."""

    def __sizeof__(self):
        return object.__sizeof__(self)


def unpickles(reset=False):
    """The process's count of unpickled ``CountingRegressor``; optionally reset."""
    global UNPICKLES
    count = UNPICKLES
    if reset:
        UNPICKLES = 0
    return count


def predict_rows(model, Q):
    return model.predict(Q)


def _data(n=600, m=1500, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=n)
    return X, y, rng.normal(size=(m, d))


@pytest.fixture(scope="module")
def cluster_client():
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    with cluster, distributed.Client(cluster, set_as_default=False) as client:
        # Workers inherit this process's path; make sure they can import this
        # module by its name (``test_dask`` or ``tests.test_dask``, depending on
        # pytest's import mode), which unpickling ``CountingRegressor`` needs.
        root = Path(__file__).resolve().parents[__name__.count(".")]
        client.run(site.addsitedir, str(root))
        assert all(count == 0 for count in client.run(unpickles).values())
        yield client


@pytest.fixture
def client(cluster_client):
    with cluster_client.as_current(), dask.config.set(scheduler=cluster_client):
        cluster_client.run(unpickles, reset=True)
        yield cluster_client


@pytest.fixture
def no_large_graphs():
    """Graphs over 1 MB sent to the scheduler raise instead of warning."""
    threshold = {"distributed.admin.large-graph-warning-threshold": "1MB"}
    with dask.config.set(threshold), warnings.catch_warnings():
        warnings.filterwarnings("error", message="Sending large graph")
        yield


# -- the fitted state ------------------------------------------------------------


def _fitted(kind):
    """A fitted estimator and its float32 training data."""
    X, y, _ = _data(n=2000, d=3, seed=3)
    X = X.astype(np.float32)
    if kind == "classifier":
        y = (y > 0).astype(np.int64)
        return NadarayaWatsonClassifier(bandwidth=0.5).fit(X, y), X, y
    if kind == "tree":
        est = NadarayaWatsonRegressor(
            kernel="epanechnikov", bandwidth=0.3, algorithm="tree"
        )
        est = est.fit(X, y, sample_weight=np.full(X.shape[0], 2.0))
        assert est._smoother.index is not None
        return est, X, y
    return NadarayaWatsonRegressor(bandwidth=[0.3, 0.4, 0.5]).fit(X, y), X, y


@pytest.mark.parametrize("kind", ["regressor", "tree", "classifier"])
@pytest.mark.parametrize("module", [pickle, cloudpickle], ids=["pickle", "cloudpickle"])
def test_pickle_round_trip_predicts_the_same(kind, module):
    est, _, _ = _fitted(kind)
    assert est.X_fit_.dtype == np.float32
    Q = est.X_fit_[::7]  # near training points: no empty windows
    method = "predict_proba" if kind == "classifier" else "predict"
    loaded = module.loads(module.dumps(est))
    assert type(loaded) is type(est)
    assert_array_equal(getattr(loaded, method)(Q), getattr(est, method)(Q))
    for name in ("X_fit_", "y_fit_", "sample_weight_"):
        value = getattr(loaded, name)
        if value is not None:
            assert type(value) is np.ndarray
            assert value.flags.c_contiguous
            assert value.dtype == getattr(est, name).dtype
    assert loaded.X_fit_.dtype == np.float32


@pytest.mark.parametrize("kind", ["regressor", "tree", "classifier"])
def test_sizeof_reports_the_fitted_arrays(kind):
    est, X, y = _fitted(kind)
    size = sizeof(est)
    assert size >= X.nbytes + y.nbytes
    if kind == "tree":  # and a float64 copy of X with an index in the tree
        assert size >= X.nbytes + y.nbytes + 2 * X.nbytes + 8 * X.shape[0]
    # About what a pickle ships; an unfitted estimator is small.
    assert 0.5 < len(pickle.dumps(est)) / size < 2.0
    assert sizeof(type(est)()) < 1000


def test_import_does_not_import_dask():
    code = "import sys, sknw; print(sorted({'dask', 'distributed'} & set(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


# -- joblib backends -----------------------------------------------------------------


@pytest.mark.parametrize("backend", ["threading", "loky"])
def test_n_jobs_under_joblib_backends_equals_serial(backend):
    X, y, Q = _data(seed=2)
    expected = NadarayaWatsonRegressor(bandwidth=0.4).fit(X, y).predict(Q)
    est = NadarayaWatsonRegressor(bandwidth=0.4, n_jobs=2).fit(X, y)
    with parallel_config(backend=backend):
        got = est.predict(Q)
    assert_allclose(got, expected, rtol=1e-13)


def test_dask_backend_splits_predictions_over_the_workers(client):
    X, y, Q = _data(n=2000, m=20000, seed=5)
    est = NadarayaWatsonRegressor(bandwidth=0.3).fit(X, y)
    expected = est.predict(Q)
    with distributed.get_task_stream(client) as stream:
        with parallel_config(backend="dask"):
            got = est.predict(Q)  # n_jobs=None: one batch per worker thread
    assert_allclose(got, expected, rtol=1e-13)
    batches = [t for t in stream.data if "batch_call" in str(t["key"])]
    assert len(batches) == 2
    assert {t["worker"] for t in batches} == set(client.scheduler_info()["workers"])


def test_dask_backend_scatters_a_fitted_model_once(client):
    X, y, Q = _data(n=1000, m=400, seed=6)
    model = CountingRegressor(bandwidth=0.3).fit(X, y)
    blocks = np.array_split(Q, 20)
    with parallel_config(backend="dask"):
        parts = Parallel()(delayed(predict_rows)(model, block) for block in blocks)
    assert_allclose(np.concatenate(parts), model.predict(Q), rtol=1e-13)
    counts = client.run(unpickles, reset=True)
    assert 1 <= sum(counts.values())
    assert max(counts.values()) <= 1
    # Without a size, the model is small to joblib and travels with every task.
    small = SmallSizeofRegressor(bandwidth=0.3).fit(X, y)
    with parallel_config(backend="dask"):
        Parallel()(delayed(predict_rows)(small, block) for block in blocks)
    assert sum(client.run(unpickles).values()) > len(counts)


def test_grid_search_under_dask_backend_equals_serial(client):
    X, y, _ = _data(n=300, seed=7)
    grid = {"kernel": ["gaussian", "laplacian"], "bandwidth": [0.2, 0.5, 1.0]}
    folds = KFold(3, shuffle=True, random_state=0)

    def search(n_jobs):
        est = NadarayaWatsonRegressor()
        return GridSearchCV(est, grid, cv=folds, n_jobs=n_jobs).fit(X, y)

    serial = search(None)
    with parallel_config(backend="dask"):
        distributed_search = search(-1)
    for key in ["mean_test_score", "split0_test_score", "split2_test_score"]:
        assert_allclose(
            distributed_search.cv_results_[key], serial.cv_results_[key], rtol=1e-13
        )
    assert_array_equal(
        distributed_search.cv_results_["rank_test_score"],
        serial.cv_results_["rank_test_score"],
    )
    assert distributed_search.best_params_ == serial.best_params_


# -- dask_predict ------------------------------------------------------------------


def _queries(m, chunk, d=2, seed=8):
    """Queries generated on the workers: the graph carries no data."""
    return da.random.default_rng(seed).normal(size=(m, d), chunks=(chunk, d))


def _big_model():
    """A regressor whose training data take 3 MB."""
    X, y, _ = _data(n=125_000, m=0, seed=9)
    return NadarayaWatsonRegressor(bandwidth=0.3).fit(X, y)


def test_dask_predict_array_ships_a_large_model_once(client, no_large_graphs):
    model = _big_model()
    assert sizeof(model) >= 3_000_000
    Q = _queries(1000, 50)
    y = dask_predict(model, Q)
    assert isinstance(y, da.Array)
    assert y.chunks == (Q.chunks[0],)
    assert_allclose(y.compute(), model.predict(Q.compute()), rtol=1e-13)
    # Negative control: the naive graph carries the model and is refused.
    naive = Q.map_blocks(model.predict, drop_axis=1, dtype=np.float64)
    with pytest.raises(UserWarning, match="Sending large graph"):
        naive.compute()


def test_dask_predict_proba_and_multi_output(client, no_large_graphs):
    X, y, _ = _data(n=500, seed=10)
    labels = np.array(["low", "mid", "high"])[np.digitize(y, [-0.5, 0.5])]
    clf = NadarayaWatsonClassifier(bandwidth=0.5).fit(X, labels)
    Q = _queries(600, 200)
    proba = dask_predict(clf, Q, method="predict_proba")
    assert proba.chunks == (Q.chunks[0], (3,))
    assert_allclose(proba.compute(), clf.predict_proba(Q.compute()), rtol=1e-13)
    predicted = dask_predict(clf, Q)
    assert predicted.dtype == clf.classes_.dtype
    assert_array_equal(predicted.compute(), clf.predict(Q.compute()))
    reg = NadarayaWatsonRegressor(bandwidth=0.5).fit(X, np.c_[y, -y])
    multi = dask_predict(reg, Q)
    assert multi.chunks == (Q.chunks[0], (2,))
    assert_allclose(multi.compute(), reg.predict(Q.compute()), rtol=1e-13)


def test_dask_predict_unpickles_the_model_once_per_worker(client):
    X, y, _ = _data(n=5000, seed=11)
    model = CountingRegressor(bandwidth=0.3).fit(X, y)
    Q = _queries(2000, 100)
    assert Q.numblocks[0] == 20
    # Count this computation's unpickles only (not those of earlier tests).
    client.run(unpickles, reset=True)
    got = dask_predict(model, Q).compute()
    assert_allclose(got, model.predict(Q.compute()), rtol=1e-13)
    counts = client.run(unpickles, reset=True)
    assert 1 <= sum(counts.values())
    assert max(counts.values()) <= 1
    # Negative control: the bound method travels with every task.
    Q.map_blocks(model.predict, drop_axis=1, dtype=np.float64).compute()
    assert sum(client.run(unpickles).values()) > len(counts)


def test_dask_predict_dataframe_keeps_the_index(client):
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    X, y, Q = _data(n=400, m=500, seed=12)
    columns = ["a", "b"]
    reg = NadarayaWatsonRegressor(bandwidth=0.5).fit(
        pd.DataFrame(X, columns=columns), y
    )
    labels = np.where(y > 0, "up", "down")
    clf = NadarayaWatsonClassifier(bandwidth=0.5)
    clf.fit(pd.DataFrame(X, columns=columns), labels)
    index = pd.Index(1000 + 3 * np.arange(Q.shape[0]), name="id")
    frame = pd.DataFrame(Q, columns=columns, index=index)
    queries = dd.from_pandas(frame, npartitions=4)

    series = dask_predict(reg, queries)
    assert isinstance(series, dd.Series)
    result = series.compute()
    assert_array_equal(result.index, index)
    assert_allclose(result.to_numpy(), reg.predict(frame), rtol=1e-13)

    proba = dask_predict(clf, queries, method="predict_proba")
    assert isinstance(proba, dd.DataFrame)
    result = proba.compute()
    assert list(result.columns) == list(clf.classes_)
    assert_array_equal(result.index, index)
    assert_allclose(result.to_numpy(), clf.predict_proba(frame), rtol=1e-13)

    result = dask_predict(clf, queries).compute()
    assert_array_equal(result.index, index)
    assert_array_equal(result.to_numpy(dtype=object), clf.predict(frame))


def _unwrap(node):
    """The object a graph stores under a key (a data node holds it in ``value``)."""
    return getattr(node, "value", node)


def test_dask_predict_without_client_puts_the_model_in_the_graph_once():
    with pytest.raises(ValueError):
        distributed.get_client()
    X, y, Q = _data(n=800, m=2000, seed=13)
    est = NadarayaWatsonRegressor(bandwidth=0.4).fit(X, y)
    queries = da.from_array(Q, chunks=(250, 2))
    out = dask_predict(est, queries)
    graph = out.__dask_graph__()
    model_keys = [key for key, node in dict(graph).items() if _unwrap(node) is est]
    assert len(model_keys) == 1
    dependencies = graph.get_all_dependencies()
    assert all(model_keys[0] in dependencies[key] for key in out.__dask_keys__())
    assert_allclose(out.compute(), est.predict(Q), rtol=1e-13)


def test_dask_predict_inputs_and_errors():
    X, y, Q = _data(n=300, m=600, seed=14)
    est = NadarayaWatsonRegressor(bandwidth=0.4).fit(X, y)
    # NumPy input: the method itself.
    assert_array_equal(dask_predict(est, Q), est.predict(Q))
    # Column chunks are merged; a pipeline ending in an sknw estimator works.
    pipe = make_pipeline(StandardScaler(), NadarayaWatsonRegressor()).fit(X, y)
    out = dask_predict(pipe, da.from_array(Q, chunks=(200, 1)))
    assert out.chunks == ((200, 200, 200),)
    assert_allclose(out.compute(), pipe.predict(Q), rtol=1e-13)

    queries = da.from_array(Q, chunks=(200, 2))
    with pytest.raises(NotFittedError):
        dask_predict(NadarayaWatsonRegressor(), queries)
    with pytest.raises(ValueError, match="method must be one of"):
        dask_predict(est, queries, method="transform")
    with pytest.raises(ValueError, match="has no method 'predict_proba'"):
        dask_predict(est, queries, method="predict_proba")
    with pytest.raises(ValueError, match="X has 3 features"):
        dask_predict(est, da.zeros((10, 3)))
    with pytest.raises(ValueError, match="2-D"):
        dask_predict(est, queries[:, 0])
    with pytest.raises(TypeError, match="Dask Array or DataFrame"):
        dask_predict(est, dask.delayed(Q))


def test_dask_predict_repeated_on_the_same_model(client):
    """Each call scatters the model anew: no call finds it released."""
    X, y, _ = _data(n=2000, seed=15)
    model = NadarayaWatsonRegressor(bandwidth=0.3).fit(X, y)
    Q = _queries(20_000, 2000).persist()
    expected = model.predict(Q.compute())
    for _ in range(4):
        assert_allclose(dask_predict(model, Q).compute(), expected, rtol=1e-13)


def test_dask_predict_of_zero_queries_raises_as_predict_does():
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    X, y, Q = _data(n=200, m=40, seed=16)
    reg = NadarayaWatsonRegressor(bandwidth=0.4).fit(X, y)
    clf = NadarayaWatsonClassifier(bandwidth=0.4).fit(X, y > 0)
    pipe = make_pipeline(StandardScaler(), NadarayaWatsonRegressor()).fit(X, y)
    cases = [
        (reg, "predict"),
        (clf, "predict"),
        (clf, "predict_proba"),
        (pipe, "predict"),
    ]
    for est, method in cases:
        with pytest.raises(ValueError) as expected:
            getattr(est, method)(np.empty((0, 2)))
        message = str(expected.value)
        # A Dask array of known shape: at once, before any graph is built.
        with pytest.raises(ValueError) as info:
            dask_predict(est, da.from_array(np.empty((0, 2)), chunks=(5, 2)), method)
        assert str(info.value) == message
        # One block of unknown size, and a DataFrame of one partition: when
        # the result is computed.
        unknown = da.from_array(Q, chunks=(40, 2))
        unknown = unknown[unknown[:, 0] > 100]
        with pytest.raises(ValueError, match=re.escape(message)):
            dask_predict(est, unknown, method).compute()
    frame = dd.from_pandas(pd.DataFrame(np.empty((0, 2)), columns=["a", "b"]), 1)
    named = NadarayaWatsonRegressor(bandwidth=0.4)
    named.fit(pd.DataFrame(X, columns=["a", "b"]), y)
    with pytest.raises(ValueError, match=r"0 sample\(s\)"):
        dask_predict(named, frame).compute()
    # Empty blocks among others are fine: the collection has queries.
    keep = np.ones(40, dtype=bool)
    keep[10:20] = False  # the second block of four is empty
    some = da.from_array(Q, chunks=(10, 2))[da.from_array(keep, chunks=10)]
    out = dask_predict(reg, some).compute()
    assert_allclose(out, reg.predict(Q[keep]), rtol=1e-13)
