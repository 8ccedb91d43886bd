"""Chains in parallel (``n_jobs``): the same fit, bit for bit, as the chains one by one."""

import warnings

import joblib
import numpy as np
import pytest
from sklearn.utils._param_validation import InvalidParameterError

import sklearn_ibp.base as base
from sklearn_ibp import DistanceDependentIBP, DPMixture, IBPFactorAnalysis, NoisyOrHierarchy
from sklearn_ibp.base import SamplingInterruptedWarning
from sklearn_ibp.datasets import make_block_images, make_correlated_block_images
from sklearn_ibp.solvers import AcceleratedIBP


def _assert_identical(a, b, where="fit"):
    """Exact equality of nested dicts, lists, arrays and scalars (NaN equals NaN)."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b), where
        for key in a:
            _assert_identical(a[key], b[key], f"{where}[{key!r}]")
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _assert_identical(x, y, f"{where}[{i}]")
    elif isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape, where
        assert np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"), where
    elif isinstance(a, float) and np.isnan(a):
        assert isinstance(b, float) and np.isnan(b), where
    else:
        assert type(a) is type(b) and a == b, where


def _fitted_attributes(model):
    return {k: v for k, v in vars(model).items() if k.endswith("_") and not k.startswith("_")}


def _assert_same_fit(a, b):
    _assert_identical(a.traces_, b.traces_, "traces_")
    _assert_identical(a.samples_, b.samples_, "samples_")
    _assert_identical(_fitted_attributes(a), _fitted_attributes(b), "attributes")
    # Every chain's generator is where it would be, so warm starts continue alike.
    for ca, cb in zip(a._chains, b._chains, strict=True):
        assert ca["rng"].bit_generator.state == cb["rng"].bit_generator.state


@pytest.fixture(scope="module")
def blocks_with_gaps():
    X, _, _ = make_block_images(n_samples=40, random_state=1)
    X[np.random.default_rng(0).random(X.shape) < 0.05] = np.nan
    return X


@pytest.fixture(scope="module")
def blobs():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((60, 2))
    X[:30] += 4.0
    return X


CASES = {
    # Missing entries, more chains than workers, thinning.
    "ibp_fa": (IBPFactorAnalysis, dict(n_iter=6, thin=2, n_chains=3), "blocks"),
    "ibp_fa_solver_object": (
        IBPFactorAnalysis, dict(solver=AcceleratedIBP(window=2), n_iter=5, n_chains=2),
        "blocks",
    ),
    "ddibp": (DistanceDependentIBP, dict(n_iter=5, n_chains=2), "blocks"),
    "dp_conjugate": (DPMixture, dict(base="conjugate", n_iter=8, n_chains=2), "blobs"),
    "dp_conditionally_conjugate": (
        DPMixture, dict(base="conditionally_conjugate", n_iter=6, n_chains=2), "blobs",
    ),
    "noisy_or": (NoisyOrHierarchy, dict(n_iter=5, init_iter=2, n_chains=2), "correlated"),
}


def _data(kind, blocks_with_gaps, blobs):
    if kind == "blocks":
        return blocks_with_gaps
    if kind == "blobs":
        return blobs
    return make_correlated_block_images(40, random_state=0)[0]


@pytest.mark.parametrize("case", list(CASES))
def test_parallel_chains_are_bit_identical(case, blocks_with_gaps, blobs):
    Estimator, params, kind = CASES[case]
    X = _data(kind, blocks_with_gaps, blobs)
    sequential = Estimator(**params, random_state=0).fit(X)
    parallel = Estimator(**params, n_jobs=2, random_state=0).fit(X)
    _assert_same_fit(sequential, parallel)
    assert sequential.n_jobs is None and parallel.n_jobs == 2  # parameters untouched
    rows = X[:5]
    if hasattr(sequential, "predict_proba"):
        np.testing.assert_array_equal(sequential.predict_proba(rows), parallel.predict_proba(rows))
    else:
        np.testing.assert_array_equal(sequential.transform(rows), parallel.transform(rows))


def test_parallel_warm_start_continues_like_sequential(blocks_with_gaps):
    params = dict(n_iter=4, n_chains=2, warm_start=True, random_state=3)
    sequential = IBPFactorAnalysis(**params).fit(blocks_with_gaps)
    parallel = IBPFactorAnalysis(**params, n_jobs=2).fit(blocks_with_gaps)
    sequential.set_params(n_iter=3).fit(blocks_with_gaps)
    parallel.set_params(n_iter=3).fit(blocks_with_gaps)
    assert parallel.traces_["log_joint"].shape == (2, 7)
    _assert_same_fit(sequential, parallel)


def test_n_jobs_chooses_the_parallel_path(small_data, monkeypatch):
    # Identical results could also come from ignoring n_jobs: check that it is used.
    calls = []

    class Recording(joblib.Parallel):
        def __init__(self, *args, **kwargs):
            calls.append(kwargs)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(base, "Parallel", Recording)
    IBPFactorAnalysis(n_iter=3, n_chains=2, random_state=0).fit(small_data)
    IBPFactorAnalysis(n_iter=3, n_chains=1, n_jobs=2, random_state=0).fit(small_data)
    assert calls == []  # sequential: n_jobs=None, or a single chain
    with joblib.parallel_config(backend="threading"):
        IBPFactorAnalysis(n_iter=3, n_chains=2, n_jobs=2, random_state=0).fit(small_data)
    assert len(calls) == 1 and calls[0]["n_jobs"] == 2
    assert calls[0]["prefer"] == "processes"  # the default backend for GIL-holding kernels


def test_interrupt_in_the_parallel_path_keeps_every_chains_finished_rounds(small_data,
                                                                           monkeypatch):
    # A thread backend, so that the patched sweep runs in the workers: the second chain
    # is interrupted at its fifth sweep. With n_iter=10 the chains come back after every
    # sweep (ten rounds), so both keep their first four sweeps, exactly as drawn by the
    # uninterrupted fit.
    original = AcceleratedIBP.sweep

    def sweep(self, state, rng):
        state_calls = getattr(state, "_test_calls", 0) + 1
        state._test_calls = state_calls
        if getattr(state, "_test_interrupt", False) and state_calls == 5:
            raise KeyboardInterrupt
        return original(self, state, rng)

    monkeypatch.setattr(AcceleratedIBP, "sweep", sweep)
    reference = IBPFactorAnalysis(n_iter=10, burn_in=2, n_chains=2, random_state=0)
    reference.fit(small_data)
    model = IBPFactorAnalysis(n_iter=10, burn_in=2, n_chains=2, n_jobs=2, random_state=0)
    init = IBPFactorAnalysis._initialize_chain

    def initialize(self, solver, X, hyper, init_Z, rng):
        state = init(self, solver, X, hyper, init_Z, rng)
        # The second chain's state is the one marked for interruption.
        state._test_interrupt = getattr(self, "_test_seen", 0) == 1
        self._test_seen = getattr(self, "_test_seen", 0) + 1
        return state

    monkeypatch.setattr(IBPFactorAnalysis, "_initialize_chain", initialize)
    with joblib.parallel_config(backend="threading"), warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        model.fit(small_data)
    messages = [str(x.message) for x in w if issubclass(x.category, SamplingInterruptedWarning)]
    assert messages and "after 8 of 20 iterations" in messages[0]
    assert model.interrupted_ is True
    for c in range(2):
        np.testing.assert_array_equal(model.traces_["log_joint"][c, :4],
                                      reference.traces_["log_joint"][c, :4])
        assert np.isnan(model.traces_["log_joint"][c, 4:]).all()
    # Sweeps 2 and 3 of each chain, in chain order, as in the uninterrupted fit.
    assert [s["chain"] for s in model.samples_] == [0, 0, 1, 1]
    kept = [s for s in reference.samples_ if s["chain"] == 0][:2] + \
        [s for s in reference.samples_ if s["chain"] == 1][:2]
    _assert_identical(model.samples_, kept, "samples_")
    out = model.transform(small_data)
    assert out.shape == (small_data.shape[0], model.n_components_)
    assert np.all(np.isfinite(out))


@pytest.mark.parametrize("n_jobs", ["2", 1.5])
def test_n_jobs_is_validated(small_data, n_jobs):
    with pytest.raises(InvalidParameterError, match="n_jobs"):
        IBPFactorAnalysis(n_iter=2, n_jobs=n_jobs).fit(small_data)
    with pytest.raises(InvalidParameterError, match="n_jobs"):
        DPMixture(n_iter=2, n_jobs=n_jobs).fit(small_data)


def test_parallel_progress_bar_counts_finished_chains(small_data, capsys):
    with joblib.parallel_config(backend="threading"):
        IBPFactorAnalysis(n_iter=3, n_chains=2, n_jobs=2, verbose=1, random_state=0).fit(
            small_data
        )
    err = capsys.readouterr().err
    assert "IBPFactorAnalysis" in err and "6/6" in err and "sweeps_done=3" in err
