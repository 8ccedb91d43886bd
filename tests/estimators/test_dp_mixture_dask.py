"""DPMixture's predict, predict_proba, transform and score_samples on a ``dask.array``
(issue 24): the in-memory call mapped over chunks of rows, returned lazily."""

import warnings

import numpy as np
import pytest

from sklearn_ibp import DPMixture

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
