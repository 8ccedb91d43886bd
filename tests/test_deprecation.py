"""The names of issue 21 (doc/choosing_solver.rst, "Names") and their deprecated aliases
(``sklearn_ibp/_deprecation.py``): every old class name and option string still works for
one release, says which new name replaces it, and gives the same fit bit for bit."""

import importlib
import re
import warnings

import numpy as np
import pytest

import sklearn_ibp.distributed as distributed
import sklearn_ibp.solvers as solvers
from sklearn_ibp import IBPFactorAnalysis, InfiniteEBA, NoisyOrHierarchy
from sklearn_ibp.estimators.infinite_eba import EBA_SOLVERS

#: Every module an old class name was importable from, and the names it held.
OLD_CLASS_NAMES = {
    "sklearn_ibp.solvers": [n for n in solvers.RENAMED_CLASSES],
    "sklearn_ibp.solvers.ibp": ["AcceleratedGibbs", "CollapsedGibbs", "UncollapsedGibbs",
                                "SemiCollapsedGibbs"],
    "sklearn_ibp.solvers.ibp.accelerated": ["AcceleratedGibbs"],
    "sklearn_ibp.solvers.ibp.collapsed": ["CollapsedGibbs"],
    "sklearn_ibp.solvers.ibp.uncollapsed": ["UncollapsedGibbs"],
    "sklearn_ibp.solvers.ibp.semi_collapsed": ["SemiCollapsedGibbs"],
    "sklearn_ibp.solvers.ibp_explicit": ["SliceSampler", "SemiOrderedSliceSampler",
                                         "TruncatedGibbs", "ApproximateGibbs",
                                         "MetropolisGibbs", "ParticleFilter",
                                         "ParallelTempering", "MapClimb"],
    "sklearn_ibp.solvers.ibp_explicit.slice": ["SliceSampler"],
    "sklearn_ibp.solvers.ibp_explicit.semi_ordered_slice": ["SemiOrderedSliceSampler"],
    "sklearn_ibp.solvers.ibp_explicit.truncated_gibbs": ["TruncatedGibbs"],
    "sklearn_ibp.solvers.ibp_explicit.approximate_gibbs": ["ApproximateGibbs"],
    "sklearn_ibp.solvers.ibp_explicit.metropolis": ["MetropolisGibbs"],
    "sklearn_ibp.solvers.ibp_explicit.particle": ["ParticleFilter"],
    "sklearn_ibp.solvers.ibp_explicit.tempering": ["ParallelTempering"],
    "sklearn_ibp.solvers.ibp_explicit.map_climb": ["MapClimb"],
    "sklearn_ibp.solvers.dp": ["CollapsedDPGibbs"],
    "sklearn_ibp.solvers.dp.dp_collapsed": ["CollapsedDPGibbs"],
    "sklearn_ibp.solvers.ddibp": ["DistanceDependentGibbs"],
    "sklearn_ibp.solvers.ddibp.ddibp_gibbs": ["DistanceDependentGibbs"],
    "sklearn_ibp.solvers.hierarchy": ["HierarchyGibbs"],
    "sklearn_ibp.solvers.hierarchy.hierarchy_gibbs": ["HierarchyGibbs"],
    "sklearn_ibp.solvers.eba": ["EBASliceSampler"],
    "sklearn_ibp.solvers.eba.eba_slice": ["EBASliceSampler"],
    "sklearn_ibp.distributed": ["ParallelAccelerated", "ParallelNoisyOr"],
    "sklearn_ibp.distributed.parallel_accelerated": ["ParallelAccelerated"],
    "sklearn_ibp.distributed.parallel_noisy_or": ["ParallelNoisyOr"],
}
#: The new name of each old class name.
NEW_NAME = {**solvers.RENAMED_CLASSES, "EBASliceSampler": "SliceEBA",
            "ParallelAccelerated": "ParallelAcceleratedIBP",
            "ParallelNoisyOr": "ParallelNoisyOrIBP"}

#: Each model's ``solver=`` registry and the suffix its class names carry.
MODELS = {
    "IBP": {**solvers.SOLVERS, **solvers.EXPLICIT_SOLVERS, **solvers.VARIATIONAL_SOLVERS,
            **distributed.PARALLEL_SOLVERS},
    "DP": solvers.DP_SOLVERS,
    "DDIBP": solvers.DDIBP_SOLVERS,
    "EBA": EBA_SOLVERS,
    "Hierarchy": {"gibbs": solvers.GibbsHierarchy},
}


@pytest.mark.parametrize("module_name, old", [(m, o) for m, names in OLD_CLASS_NAMES.items()
                                              for o in names])
def test_old_class_name_resolves_to_the_new_class_with_a_warning(module_name, old):
    module = importlib.import_module(module_name)
    new = NEW_NAME[old]
    with pytest.warns(FutureWarning, match=rf"{old} is deprecated .*use {new}\b"):
        cls = getattr(module, old)
    assert cls is getattr(module, new)
    assert cls.__name__ == new


def test_an_unknown_name_still_raises_attribute_error():
    with pytest.raises(AttributeError, match="NoSuchSolver"):
        solvers.ibp.NoSuchSolver  # noqa: B018


def _camel(key):
    return "".join(part.capitalize() for part in key.split("_"))


@pytest.mark.parametrize("model", sorted(MODELS))
def test_solver_names_follow_the_scheme(model):
    # .name is the key a user passes, unique within the model, and the class is named
    # <Method><Model> with Method the key in CamelCase; a deprecated key maps to a class
    # whose .name is the new key.
    registry = MODELS[model]
    current = {key: cls for key, cls in registry.items() if key not in solvers.RENAMED_SOLVERS}
    for key, cls in current.items():
        assert cls.name == key, (model, key, cls.name)
        assert cls.__name__ == _camel(key) + model, (model, key, cls.__name__)
    assert len({cls.name for cls in current.values()}) == len(current)
    for old, new in solvers.RENAMED_SOLVERS.items():
        if old in registry:
            assert registry[old] is registry[new]


def _binary(seed=0, n=24, d=6):
    return (np.random.default_rng(seed).random((n, d)) < 0.4).astype(float)


def _fit(estimator, X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return estimator.fit(X)


def test_old_solver_name_warns_and_fits_the_same():
    X = _binary()
    params = dict(likelihood="noisy_or", n_iter=3, random_state=1)
    new = _fit(IBPFactorAnalysis(solver="map_climb", **params), X)
    with pytest.warns(FutureWarning, match=r"solver='map' is deprecated .*solver='map_climb'"):
        old = _fit(IBPFactorAnalysis(solver="map", **params), X)
    np.testing.assert_array_equal(old.components_, new.components_)
    np.testing.assert_array_equal(old.transform(X), new.transform(X))


def test_old_likelihood_name_of_the_factor_model_warns_and_fits_the_same():
    X = _binary()
    params = dict(solver="slice", n_iter=3, random_state=2)
    new = _fit(IBPFactorAnalysis(likelihood="noisy_or", **params), X)
    with pytest.warns(FutureWarning, match=r"likelihood='bernoulli' is deprecated "
                                           r".*likelihood='noisy_or'"):
        old = _fit(IBPFactorAnalysis(likelihood="bernoulli", **params), X)
    np.testing.assert_array_equal(old.components_, new.components_)
    np.testing.assert_array_equal(old.transform(X), new.transform(X))
    np.testing.assert_array_equal(old.score_samples(X), new.score_samples(X))


def test_old_likelihood_name_of_the_hierarchy_warns_and_fits_the_same():
    X = _binary()
    params = dict(n_iter=2, init_iter=0, random_state=3)
    new = _fit(NoisyOrHierarchy(likelihood="detection", **params), X)
    with pytest.warns(FutureWarning, match=r"likelihood='bernoulli' is deprecated "
                                           r".*likelihood='detection'"):
        old = _fit(NoisyOrHierarchy(likelihood="bernoulli", **params), X)
    assert old.likelihood_ == new.likelihood_ == "detection"
    np.testing.assert_array_equal(old.transform(X), new.transform(X))
    auto = _fit(NoisyOrHierarchy(**params), X)
    assert auto.likelihood_ == "detection"


def test_errors_show_the_name_the_user_typed():
    X = _binary()
    for typed in ("bernoulli", "noisy_or"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            with pytest.raises(ValueError, match=re.escape(f"likelihood={typed!r}")):
                IBPFactorAnalysis(likelihood=typed, solver="accelerated", n_iter=1).fit(X)
            with pytest.raises(ValueError, match=re.escape(f"likelihood={typed!r}")):
                IBPFactorAnalysis(likelihood=typed, solver="slice", sigma_x=1.0,
                                  n_iter=1).fit(X)
    # the solvers listed are the current names only, never a deprecated one
    with pytest.raises(ValueError, match="solvers that can") as info:
        IBPFactorAnalysis(likelihood="noisy_or", solver="accelerated", n_iter=1).fit(X)
    assert "'map_climb'" in str(info.value) and "'map'" not in str(info.value)


def test_infinite_eba_keeps_its_solver_name():
    assert InfiniteEBA().get_params()["solver"] in EBA_SOLVERS
