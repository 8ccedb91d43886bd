"""The worked example of ``doc/writing_a_solver.rst`` (``examples/single_site_solver.py``):
a solver written in one module and registered in one line fits by name."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from sklearn_ibp import IBPFactorAnalysis
from sklearn_ibp.datasets import make_block_images
from sklearn_ibp.solvers import _protocol, get_solver

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "single_site_solver.py"


@pytest.fixture
def example(monkeypatch):
    """The example module, imported with its registration undone after the test."""
    monkeypatch.setitem(_protocol._REGISTRY, "ibp", dict(_protocol._REGISTRY["ibp"]))
    spec = importlib.util.spec_from_file_location("single_site_solver", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_example_registers_its_solver(example):
    assert get_solver("ibp", "single_site") is example.SingleSiteGibbs


def test_the_example_fits_by_name_and_is_reproducible(example):
    X = make_block_images(n_samples=12, random_state=0)[0][:, :12]
    params = dict(solver="single_site", n_iter=6, random_state=0)
    first = IBPFactorAnalysis(**params).fit(X)
    again = IBPFactorAnalysis(**params).fit(X)
    assert first.components_.shape == (first.n_components_, X.shape[1])
    assert np.array_equal(first.traces_["log_joint"], again.traces_["log_joint"])
    assert np.all(np.isfinite(first.traces_["log_joint"]))
    # An object works as the name does, and missing values are imputed by the inherited
    # update_state.
    by_object = IBPFactorAnalysis(**{**params, "solver": example.SingleSiteGibbs()}).fit(X)
    assert np.array_equal(first.traces_["log_joint"], by_object.traces_["log_joint"])
    X_missing = X.copy()
    X_missing[0, 0] = np.nan
    assert np.isfinite(IBPFactorAnalysis(**params).fit(X_missing).transform(X_missing)).all()
