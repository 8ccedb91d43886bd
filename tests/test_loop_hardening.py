"""Issue 23's hardening of the sampling loop: all-or-nothing fits (a failed or doubly
interrupted fit leaves the estimator unfitted, or as it was for a warm start), warm starts
that continue the traces without a NaN gap, and the warning on non-finite results."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

import sklearn_ibp.base as base
from sklearn_ibp import IBPFactorAnalysis
from sklearn_ibp.base import SamplingInterruptedWarning, _join_traces, _non_finite_attributes
from sklearn_ibp.exceptions import NonFiniteResultWarning
from sklearn_ibp.solvers import AcceleratedIBP


def _model(**params):
    return IBPFactorAnalysis(**{"n_iter": 6, "random_state": 0, **params})


def _raise_on_sweep(monkeypatch, k, exc=KeyboardInterrupt):
    """``AcceleratedIBP.sweep`` raises ``exc`` on its ``k``-th call."""
    original = AcceleratedIBP.sweep
    calls = {"n": 0}

    def sweep(self, state, rng):
        calls["n"] += 1
        if calls["n"] == k:
            raise exc
        original(self, state, rng)

    monkeypatch.setattr(AcceleratedIBP, "sweep", sweep)
    return calls


def _second_interrupt_in_the_handler(monkeypatch):
    """A second Ctrl-C arriving while the loop handles the first: the handler's warning
    raises KeyboardInterrupt (as a real signal 1 ms later would)."""

    def warn(message, category):
        if category is SamplingInterruptedWarning:
            raise KeyboardInterrupt
        warnings.warn(message, category, stacklevel=2)

    monkeypatch.setattr(base, "warn_at_caller", warn)


def _assert_unfitted(model, X):
    with pytest.raises(NotFittedError):
        model.transform(X)
    assert not hasattr(model, "n_features_in_")
    assert not [k for k in vars(model) if k.endswith("_") and not k.startswith("__")]


@pytest.mark.parametrize("exc", [RuntimeError("boom"), KeyboardInterrupt])
def test_a_failed_fit_leaves_the_estimator_unfitted(small_data, monkeypatch, exc):
    _raise_on_sweep(monkeypatch, k=3, exc=exc)
    if exc is KeyboardInterrupt:
        _second_interrupt_in_the_handler(monkeypatch)
    model = _model()
    with pytest.raises(type(exc) if isinstance(exc, BaseException) else exc):
        model.fit(small_data)
    _assert_unfitted(model, small_data)


def test_a_failed_fit_after_validation_sets_nothing(small_data):
    # n_features_in_ used to be set before the fit failed; burn_in >= n_iter fails late.
    model = _model(burn_in=6)
    with pytest.raises(ValueError, match="burn_in"):
        model.fit(small_data)
    _assert_unfitted(model, small_data)


def test_a_failed_warm_start_keeps_the_previous_fit(small_data, monkeypatch):
    model = _model(warm_start=True).fit(small_data)
    before = {k: v for k, v in vars(model).items() if k.endswith("_")}
    chains_Z = model._chains[0]["state"].Z.copy()
    out = model.transform(small_data)
    _raise_on_sweep(monkeypatch, k=2)
    _second_interrupt_in_the_handler(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        model.fit(small_data)
    assert {k: v for k, v in vars(model).items() if k.endswith("_")}.keys() == before.keys()
    assert np.array_equal(model.traces_["log_joint"], before["traces_"]["log_joint"])
    assert np.array_equal(model._chains[0]["state"].Z, chains_Z)
    assert np.array_equal(model.transform(small_data), out)


def test_warm_start_after_an_interrupt_has_no_nan_gap(small_data, monkeypatch):
    reference = _model(n_iter=9, burn_in=0).fit(small_data).traces_["log_joint"]
    calls = _raise_on_sweep(monkeypatch, k=4)
    model = _model(n_iter=6, burn_in=0, warm_start=True)
    with pytest.warns(SamplingInterruptedWarning):
        model.fit(small_data)
    assert model.n_iter_ == 3
    calls["n"] = -100  # no more interrupts
    model.set_params(n_iter=6).fit(small_data)
    log_joint = model.traces_["log_joint"]
    assert log_joint.shape == (1, 9)
    assert not np.isnan(log_joint).any()
    assert model.n_iter_ == 9
    # The interrupted call drew no random numbers: the joined chain is the plain one.
    assert np.array_equal(log_joint, reference)


def test_join_traces_chain_by_chain():
    nan = np.nan
    old = {"log_joint": np.array([[1.0, 2.0, 3.0], [4.0, nan, nan]]),
           "K": np.array([[1.0, 1.0, 2.0], [3.0, nan, nan]])}
    new = {"log_joint": np.array([[5.0, 6.0], [7.0, 8.0]]),
           "K": np.array([[2.0, 2.0], [3.0, 4.0]])}
    joined = _join_traces(old, new)
    expected = np.array([[1.0, 2.0, 3.0, 5.0, 6.0], [4.0, 7.0, 8.0, nan, nan]])
    np.testing.assert_array_equal(joined["log_joint"], expected)
    np.testing.assert_array_equal(joined["K"][1], [3.0, 3.0, 4.0, nan, nan])


def test_non_finite_results_warn_naming_the_attribute(small_data, monkeypatch):
    # A log joint gone to -inf (an overflow in a kernel, say) is garbage, said aloud.
    monkeypatch.setattr(IBPFactorAnalysis, "_log_joint", lambda self, solver, state: -np.inf)
    with pytest.warns(NonFiniteResultWarning, match=r"traces_\['log_joint'\]"):
        _model().fit(small_data)


def test_non_finite_attributes_lists_floats_and_arrays():
    class Fitted:
        pass

    est = Fitted()
    est.sigma_x_ = float("inf")
    est.components_ = np.array([[1.0, np.nan]])
    est.labels_ = np.array([1, 2])
    est.fine_ = 1.0
    est.traces_ = {"log_joint": np.array([[1.0, np.nan]])}
    est.interrupted_ = True  # the NaN padding of an interrupted fit is not garbage
    assert _non_finite_attributes(est) == ["sigma_x_", "components_"]
    est.interrupted_ = False
    assert _non_finite_attributes(est)[-1] == "traces_['log_joint']"


def test_a_plain_fit_does_not_warn(small_data):
    with warnings.catch_warnings():
        warnings.simplefilter("error", NonFiniteResultWarning)
        _model().fit(small_data)
