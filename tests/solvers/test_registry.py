"""The solver registry (``sklearn_ibp/solvers/__init__.py``) and the solver modules' old
paths, kept for one release after the solvers were grouped by model."""

import importlib
import sys

import pytest

import sklearn_ibp.distributed
import sklearn_ibp.solvers as solvers
from sklearn_ibp.solvers._moved import MOVED_MODULES

#: What ``sklearn_ibp.solvers`` exported before the regrouping: every name still resolves.
EXPORTED_BEFORE = [
    "DP_SOLVERS", "EXPLICIT_SOLVERS", "SOLVERS", "VARIATIONAL_SOLVERS", "ApproximateGibbs",
    "ExplicitFeatureSolver", "ExplicitFeatureState", "MapClimb", "MetropolisGibbs",
    "ParallelTempering", "ParticleFilter", "SemiOrderedSliceSampler", "SliceSampler",
    "TruncatedGibbs", "AuxiliaryDP", "BaseDPSolver", "CollapsedDPGibbs", "GibbsDP",
    "MetropolisDP", "MixtureState", "NoGapsDP", "RetrospectiveDP", "SliceDP", "SplitMergeDP",
    "TruncatedDP", "AcceleratedGibbs", "BaseIBPSolver", "CollapsedGibbs",
    "DistanceDependentGibbs", "FeatureState", "HierarchyGibbs", "HierarchyState",
    "SemiCollapsedGibbs", "UncollapsedGibbs", "FiniteVariationalIBP", "VariationalIBP",
]


def test_every_name_exported_before_is_exported():
    # A class renamed by issue 21 (names) is exported under its new name; the old one
    # resolves with a FutureWarning (tests/test_deprecation.py).
    missing = [name for name in EXPORTED_BEFORE
               if solvers.RENAMED_CLASSES.get(name, name) not in solvers.__all__]
    assert not missing
    for name in solvers.__all__:
        assert getattr(solvers, name) is not None


def test_registries_keep_their_names():
    assert set(solvers.SOLVERS) == {"accelerated", "collapsed", "uncollapsed",
                                    "semi_collapsed"}
    assert set(solvers.EXPLICIT_SOLVERS) == {
        "slice", "semi_ordered_slice", "truncated_gibbs", "approximate_gibbs", "metropolis",
        "particle", "tempering", "map_climb", "map",
    }
    assert set(solvers.VARIATIONAL_SOLVERS) == {"variational", "finite_variational"}
    assert set(solvers.DP_SOLVERS) == {"collapsed", "split_merge", "gibbs", "auxiliary",
                                       "no_gaps", "metropolis", "slice", "truncated",
                                       "retrospective", "subcluster"}
    # The parallel solvers come from the registry too (imported on first use).
    assert solvers.PARALLEL_SOLVERS is sklearn_ibp.distributed.PARALLEL_SOLVERS


@pytest.mark.parametrize("old", sorted(MOVED_MODULES))
def test_old_module_path_warns_and_gives_the_new_module(old, monkeypatch):
    old_name = f"sklearn_ibp.solvers.{old}"
    new_name = f"sklearn_ibp.solvers.{MOVED_MODULES[old]}"
    monkeypatch.delitem(sys.modules, old_name, raising=False)
    monkeypatch.delitem(vars(solvers), old, raising=False)
    with pytest.warns(FutureWarning, match=new_name.replace(".", r"\.")):
        module = importlib.import_module(old_name)
    assert module is importlib.import_module(new_name)
    assert getattr(solvers, old) is module


def test_old_paths_work_in_import_statements(monkeypatch):
    for old in ("accelerated", "slice", "dp_slice", "eba_slice"):
        monkeypatch.delitem(sys.modules, f"sklearn_ibp.solvers.{old}", raising=False)
        monkeypatch.delitem(vars(solvers), old, raising=False)
    with pytest.warns(FutureWarning, match=r"sklearn_ibp\.solvers\.ibp_explicit\.slice"):
        from sklearn_ibp.solvers.slice import SliceIBP
    assert SliceIBP is solvers.SliceIBP
    with pytest.warns(FutureWarning, match=r"sklearn_ibp\.solvers\.ibp\.accelerated"):
        import sklearn_ibp.solvers.accelerated as accelerated
    assert accelerated.AcceleratedIBP is solvers.AcceleratedIBP
    with pytest.warns(FutureWarning, match=r"sklearn_ibp\.solvers\.dp\.dp_slice"):
        dp_slice = solvers.dp_slice  # attribute access, no import statement
    assert dp_slice.SliceDP is solvers.SliceDP
    with pytest.warns(FutureWarning, match=r"sklearn_ibp\.solvers\.eba\.eba_slice"):
        from sklearn_ibp.solvers.eba_slice import SliceEBA
    from sklearn_ibp.solvers.eba import SliceEBA as new
    assert SliceEBA is new


def test_unknown_names_still_fail():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("sklearn_ibp.solvers.no_such_solver")
    with pytest.raises(AttributeError, match="no_such_solver"):
        solvers.no_such_solver  # noqa: B018
