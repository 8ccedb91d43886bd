"""The solver protocol (``sklearn_ibp/solvers/_protocol.py``): every solver implements it,
one registry keyed by model and name finds them, and an estimator refuses a solver object of
another model with a ``ValueError`` naming ``solver``."""

import numpy as np
import pytest

import sklearn_ibp.solvers as solvers
from sklearn_ibp import DPMixture, IBPFactorAnalysis, InfiniteEBA, NoisyOrHierarchy
from sklearn_ibp.datasets import make_paris_rome
from sklearn_ibp.solvers import (
    MODELS,
    RENAMED_SOLVERS,
    AcceleratedIBP,
    CollapsedDP,
    SliceEBA,
    Solver,
    _protocol,
    get_solver,
    register_solver,
    registered_solvers,
    solver_names,
)


@pytest.mark.parametrize("model", sorted(MODELS))
def test_every_registered_solver_implements_the_protocol(model):
    classes = registered_solvers(model)
    assert classes, model
    for name, cls in classes.items():
        assert issubclass(cls, Solver), (model, name)
        assert cls.model == model, (model, name)
        assert get_solver(model, name) is cls
        # Every class is registered under its own name, and under a deprecated old name
        # of RENAMED_SOLVERS.
        assert cls.name == RENAMED_SOLVERS.get(name, name), (model, name)
        solver = cls()
        for method in ("initialize", "sweep", "update_state", "log_joint", "snapshot",
                       "checkpoint", "close"):
            assert callable(getattr(solver, method)), (model, name, method)
    assert solver_names(model) == sorted(classes)


def test_flags_say_what_each_family_is():
    ibp = registered_solvers("ibp")
    assert {n for n, c in ibp.items() if c.explicit} == set(solvers.EXPLICIT_SOLVERS) | {
        "parallel_noisy_or"}
    assert {n for n, c in ibp.items() if c.variational} == set(solvers.VARIATIONAL_SOLVERS)
    assert {n for n, c in ibp.items() if c.can_bound_features} == {"accelerated"}
    assert AcceleratedIBP().bounds_features  # the former name, kept one release
    assert CollapsedDP.context == "base"
    assert solvers.GibbsHierarchy.context == "likelihood"


def test_old_dicts_are_views_of_the_registry():
    for old, model in [(solvers.SOLVERS, "ibp"), (solvers.EXPLICIT_SOLVERS, "ibp"),
                       (solvers.VARIATIONAL_SOLVERS, "ibp"), (solvers.DP_SOLVERS, "dp"),
                       (solvers.DDIBP_SOLVERS, "ddibp"), (solvers.EBA_SOLVERS, "eba")]:
        for name, cls in old.items():
            assert get_solver(model, name) is cls


def test_unknown_names_and_models_are_refused():
    with pytest.raises(ValueError, match=r"solver must be one of .*'accelerated'.*got 'nope'"):
        get_solver("ibp", "nope")
    with pytest.raises(ValueError, match="model must be one of"):
        solver_names("nope")


def test_register_solver_refuses_a_taken_name_and_a_non_solver():
    class Another(Solver):
        model = "eba"
        name = "slice"

    with pytest.raises(ValueError, match="already registered"):
        register_solver(Another)
    with pytest.raises(TypeError, match="subclass of Solver"):
        register_solver(object)
    register_solver(SliceEBA)  # the same class again: nothing happens
    assert get_solver("eba", "slice") is SliceEBA


def test_register_solver_as_a_decorator(monkeypatch):
    monkeypatch.setitem(_protocol._REGISTRY, "eba", dict(_protocol._REGISTRY["eba"]))

    @register_solver
    class Tiny(SliceEBA):
        name = "tiny_for_test"

    assert get_solver("eba", "tiny_for_test") is Tiny


def _blocks(n=8, d=4, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d))


@pytest.mark.parametrize("make, fit_args, model", [
    (lambda: DPMixture(solver=AcceleratedIBP(), n_iter=2), lambda: (_blocks(),), "dp"),
    (lambda: IBPFactorAnalysis(solver=SliceEBA(), n_iter=2), lambda: (_blocks(),),
     "ibp"),
    (lambda: IBPFactorAnalysis(solver=CollapsedDP(), n_iter=2), lambda: (_blocks(),),
     "ibp"),
    (lambda: InfiniteEBA(solver=AcceleratedIBP(), n_iter=2),
     lambda: make_paris_rome(6, random_state=0)[:2], "eba"),
    (lambda: NoisyOrHierarchy(solver=AcceleratedIBP(), n_iter=2),
     lambda: ((_blocks() > 0).astype(float),), "hierarchy"),
])
def test_a_solver_of_another_model_is_refused(make, fit_args, model):
    with pytest.raises(ValueError, match="solver"):
        make().fit(*fit_args())


@pytest.mark.parametrize("make, fit_args, model", [
    (lambda: DPMixture(solver=AcceleratedIBP(), n_iter=2), lambda: (_blocks(),), "dp"),
    (lambda: IBPFactorAnalysis(solver=SliceEBA(), n_iter=2), lambda: (_blocks(),),
     "ibp"),
    (lambda: InfiniteEBA(solver=AcceleratedIBP(), n_iter=2),
     lambda: make_paris_rome(6, random_state=0)[:2], "eba"),
])
def test_the_message_names_the_expected_model(make, fit_args, model):
    # The estimator's parameter validation: "The 'solver' parameter of ... must be a str
    # among {...} or a solver of the '<model>' model (...)".
    with pytest.raises(ValueError, match=rf"'solver' parameter .* a solver of the '{model}' model"):
        make().fit(*fit_args())
