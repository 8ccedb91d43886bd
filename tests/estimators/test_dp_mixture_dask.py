"""DPMixture's predict, predict_proba, transform and score_samples on a ``dask.array``
(issue 24): the in-memory call mapped over chunks of rows, returned lazily."""

import warnings

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

from sklearn_ibp import DPMixture
from sklearn_ibp.solvers.dp.dp_subcluster import SubclusterDP

da = pytest.importorskip("dask.array")

SOLVERS = [{}, {"base": "conjugate", "solver": "subcluster"},
           {"base": "conjugate"}]


def _blobs(n, seed):
    rng = np.random.default_rng(seed)
    centres = np.array([[0.0, 0.0], [6.0, 0.0], [0.0, 6.0]])
    return centres[rng.integers(0, 3, n)] + rng.normal(size=(n, 2))


@pytest.fixture(scope="module", params=range(len(SOLVERS)), ids=["default", "subcluster",
                                                                   "split_merge"])
def fitted(request):
    X = _blobs(150, 0)
    model = DPMixture(n_iter=15, burn_in=5, random_state=0, **SOLVERS[request.param])
    return model.fit(X)


@pytest.mark.parametrize("method", ["predict", "predict_proba", "transform",
                                    "score_samples"])
@pytest.mark.parametrize("chunks", [(40, 2), (100, 1), (250, 2)])
def test_dask_input_gives_the_in_memory_values_chunk_by_chunk(fitted, method, chunks):
    X = _blobs(250, 1)
    X_dask = da.from_array(X, chunks=chunks)
    before = X.copy()
    lazy = getattr(fitted, method)(X_dask)
    assert isinstance(lazy, da.Array)
    assert lazy.chunks[0] == X_dask.chunks[0]
    got = lazy.compute(scheduler="synchronous")
    expected = np.concatenate([getattr(fitted, method)(X[a:a + chunks[0]])
                               for a in range(0, X.shape[0], chunks[0])])
    assert got.dtype == expected.dtype
    assert got.shape == lazy.shape
    np.testing.assert_array_equal(got, expected)
    # and the whole array at once agrees (to rounding: a chunk is a smaller matrix)
    np.testing.assert_allclose(got, getattr(fitted, method)(X), rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(X, before)


def test_dask_input_is_checked(fitted):
    with pytest.raises(ValueError, match="3 features, but DPMixture is expecting 2"):
        fitted.predict(da.zeros((10, 3), chunks=5))
    with pytest.raises(ValueError, match="2-D"):
        fitted.predict(da.zeros(10, chunks=5))
    with pytest.raises(TypeError, match="numbers"):
        fitted.predict(da.from_array(np.array([["a", "b"]] * 4), chunks=2))
    bad = np.zeros((10, 2))
    bad[7, 1] = np.nan
    lazy = fitted.score_samples(da.from_array(bad, chunks=5))  # lazy: no error yet
    with pytest.raises(ValueError, match="NaN"):
        lazy.compute(scheduler="synchronous")


def test_dask_input_before_fit_is_refused():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        DPMixture().predict(da.zeros((10, 2), chunks=5))


def test_feature_names_warn_as_for_a_numpy_array():
    pd = pytest.importorskip("pandas")
    X = _blobs(80, 2)
    model = DPMixture(n_iter=5, random_state=0).fit(pd.DataFrame(X, columns=["a", "b"]))
    with pytest.warns(UserWarning, match="feature names"):
        model.predict(X)
    with pytest.warns(UserWarning, match="feature names"):
        lazy = model.predict(da.from_array(X, chunks=30))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the chunks do not warn again on the workers
        got = lazy.compute(scheduler="synchronous")
    with pytest.warns(UserWarning, match="feature names"):
        expected = np.concatenate([model.predict(X[a:a + 30]) for a in range(0, 80, 30)])
    np.testing.assert_array_equal(got, expected)


def test_score_of_a_dask_array_is_the_mean_of_its_rows_densities(fitted):
    X = _blobs(120, 3)
    got = fitted.score(da.from_array(X, chunks=50))
    np.testing.assert_allclose(got, fitted.score(X), rtol=1e-12)


# -- fit on a dask.array (issue 24) --------------------------------------------------------
def test_fit_on_a_dask_array_needs_a_client():
    pytest.importorskip("distributed")
    model = DPMixture(solver="subcluster", base="conjugate", point_estimate="best_sample")
    with pytest.raises(ValueError, match="distributed client"):
        model.fit(da.from_array(_blobs(50, 0), chunks=25))
    assert not hasattr(model, "labels_")


class SubclusterSmallBlocks(SubclusterDP):
    """The sub-cluster solver with blocks of 32 rows (several blocks in a small fit)."""

    block_size = 32


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                           processes=False, dashboard_address=None)
        client = distributed.Client(cluster)
    yield client
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        client.close()
        cluster.close()


def _fit_kwargs():
    return dict(solver=SubclusterSmallBlocks(n_proposals=3), base="conjugate",
                point_estimate="best_sample", n_iter=6, burn_in=2, random_state=0)


@pytest.fixture(scope="module")
def pair(client):
    """An in-memory fit and the fit of the same rows as a dask.array (one chunk: the same
    moments, so the same chain)."""
    X = _blobs(300, 4)
    before = X.copy()
    in_memory = DPMixture(**_fit_kwargs()).fit(X)
    on_dask = DPMixture(**_fit_kwargs()).fit(da.from_array(X, chunks=(300, 2)))
    np.testing.assert_array_equal(X, before)
    return X, in_memory, on_dask


def test_dask_fit_is_the_in_memory_fit_bit_for_bit(pair):
    X, in_memory, on_dask = pair
    assert isinstance(on_dask.labels_, da.Array)
    np.testing.assert_array_equal(on_dask.labels_.compute(), in_memory.labels_)
    for name, trace in in_memory.traces_.items():
        np.testing.assert_array_equal(on_dask.traces_[name], trace)
    assert in_memory.traces_["n_clusters"][0, -1] >= 3  # the chain split the one cluster
    state = in_memory._chains[0]["state"].stats
    last = on_dask.samples_[-1]["statistics"]
    for name in ("counts", "sums", "scatters"):
        np.testing.assert_array_equal(last[name], state[name])
    assert on_dask.n_components_ == in_memory.n_components_
    np.testing.assert_array_equal(on_dask.weights_, in_memory.weights_)
    assert on_dask.n_features_in_ == 2


def test_dask_fit_predicts_from_statistics(pair):
    """predict and score_samples of the dask fit (from the clusters' statistics) agree with
    the in-memory fit's (from its rows) to rounding, on NumPy and dask input."""
    X, in_memory, on_dask = pair
    X_new = _blobs(120, 5)
    np.testing.assert_array_equal(on_dask.predict(X_new), in_memory.predict(X_new))
    np.testing.assert_allclose(on_dask.score_samples(X_new), in_memory.score_samples(X_new),
                               rtol=1e-12)
    lazy = on_dask.predict(da.from_array(X_new, chunks=50))
    assert isinstance(lazy, da.Array)
    np.testing.assert_array_equal(lazy.compute(), in_memory.predict(X_new))
    np.testing.assert_allclose(on_dask.score(da.from_array(X_new, chunks=50)),
                               in_memory.score(X_new), rtol=1e-12)
    # the statistics route of an in-memory fit is its rows route, to rounding
    base = in_memory._sample_base(in_memory._point)
    np.testing.assert_allclose(
        in_memory._cluster_log_densities(X_new, in_memory._point, base,
                                         from_statistics=True),
        in_memory._cluster_log_densities(X_new, in_memory._point, base), rtol=1e-12)


def test_dask_fit_refuses_what_needs_the_rows(pair):
    _, _, on_dask = pair
    with pytest.raises(ValueError, match="coassignment_ needs the training rows"):
        _ = on_dask.coassignment_
    with pytest.raises(ValueError, match="leave_one_out_log_density needs"):
        on_dask.leave_one_out_log_density()


@pytest.mark.parametrize("params, match", [
    ({"solver": "split_merge"}, "only solver='subcluster'"),
    ({"solver": "auto"}, "only solver='subcluster'"),
    ({"point_estimate": "vi"}, "point_estimate='vi'"),
    ({"point_estimate": "binder"}, "point_estimate='binder'"),
    ({"init": "kmeans"}, "init='kmeans'"),
    ({"warm_start": True}, "warm_start"),
    ({"n_chains": 2, "n_jobs": 2}, "n_jobs=2"),
    ({"base": "conditionally_conjugate"}, "cannot serve"),
])
def test_dask_fit_refuses_other_options(client, params, match):
    kwargs = {**_fit_kwargs(), **params}
    with pytest.raises(ValueError, match=match):
        DPMixture(**kwargs).fit(da.from_array(_blobs(60, 0), chunks=30))


def test_dask_fit_checks_the_data_on_the_workers(client):
    bad = _blobs(60, 0)
    bad[41, 1] = np.inf
    with pytest.raises(ValueError, match="NaN or infinity"):
        DPMixture(**_fit_kwargs()).fit(da.from_array(bad, chunks=30))
    with pytest.raises(ValueError, match="largest absolute value"):
        DPMixture(**_fit_kwargs()).fit(da.from_array(_blobs(60, 0) * 1e120, chunks=30))
    with pytest.raises(ValueError, match="2-D"):
        DPMixture(**_fit_kwargs()).fit(da.zeros(10, chunks=5))
    with pytest.raises(TypeError, match="numbers"):
        DPMixture(**_fit_kwargs()).fit(da.from_array(np.array([["a", "b"]] * 4), chunks=2))


def test_dask_fit_of_several_chunks_and_chains(client):
    """Several chunks (moments combined across them) and two chains, one after the other;
    each kept sample's labels are on the workers and its counts are theirs."""
    X = _blobs(200, 6)
    model = DPMixture(**{**_fit_kwargs(), "n_chains": 2, "n_iter": 4}).fit(
        da.from_array(X, chunks=100))
    assert len(model.samples_) == 4
    for sample in model.samples_:
        labels = sample["labels"].compute()
        np.testing.assert_array_equal(np.bincount(labels), sample["statistics"]["counts"])
    assert model.predict(X).shape == (200,)
    assert np.isfinite(model.score(X))


def test_dask_fit_starts_from_subsample_chains(client, monkeypatch):
    """With more rows than the start brings into this process, the subsample chains run on
    a draw of the rows and their clusters start every row on the workers: the chain starts
    with the four blobs (not one cluster) and keeps them."""
    from sklearn_ibp.solvers.dp import nested_start

    monkeypatch.setattr(nested_start, "STORE_ROWS", 500)
    monkeypatch.setattr(nested_start, "FIRST_SIZE", 200)
    rng = np.random.default_rng(7)
    centres = np.array([[0.0, 0.0], [8.0, 0.0], [0.0, 8.0], [8.0, 8.0]])
    y = rng.integers(0, 4, 2400)
    X = centres[y] + rng.standard_normal((2400, 2))
    model = DPMixture(**{**_fit_kwargs(), "n_iter": 3, "burn_in": 0}).fit(
        da.from_array(X, chunks=(640, 2)))
    assert model.traces_["n_clusters"][0, 0] >= 4
    assert adjusted_rand_score(y, model.labels_.compute()) > 0.95
    single = DPMixture(**{**_fit_kwargs(), "n_iter": 3, "burn_in": 0,
                          "init": "single"}).fit(da.from_array(X, chunks=(640, 2)))
    assert single.traces_["n_clusters"][0, 0] < model.traces_["n_clusters"][0, 0]
