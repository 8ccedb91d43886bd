"""``sklearn_ibp.exceptions`` defines the package's exceptions and warnings; the modules
that exported them before still do (the same classes)."""

import warnings

import numpy as np
import pytest
from sklearn.pipeline import make_pipeline

import sklearn_ibp.base
import sklearn_ibp.distributed
import sklearn_ibp.distributed._engines
from sklearn_ibp import IBPFactorAnalysis, exceptions
from sklearn_ibp.solvers import AcceleratedIBP


def test_old_locations_export_the_same_classes():
    for name in ("NoFeaturesWarning", "SamplingInterruptedWarning", "SamplingStoppedError"):
        assert getattr(sklearn_ibp.base, name) is getattr(exceptions, name)
    assert sklearn_ibp.distributed.WorkersLostError is exceptions.WorkersLostError
    assert sklearn_ibp.distributed._engines.WorkersLostError is exceptions.WorkersLostError


def test_the_classes_keep_their_bases():
    # The loop catches SamplingStoppedError, so a lost Dask cluster stops a fit like Ctrl-C.
    assert issubclass(exceptions.WorkersLostError, exceptions.SamplingStoppedError)
    assert issubclass(exceptions.SamplingStoppedError, RuntimeError)
    assert issubclass(exceptions.NoFeaturesWarning, UserWarning)
    assert issubclass(exceptions.SamplingInterruptedWarning, UserWarning)
    assert issubclass(exceptions.NonFiniteResultWarning, UserWarning)
    assert issubclass(exceptions.AllocationTooLargeError, ValueError)
    assert issubclass(exceptions.AllocationTooLargeError, MemoryError)
    assert set(exceptions.__all__) == {"AllocationTooLargeError", "NoFeaturesWarning",
                                       "NonFiniteResultWarning", "SamplingInterruptedWarning",
                                       "SamplingStoppedError", "WorkersLostError"}


# -- warnings point at the user's line ---------------------------------------------------
class _StopsAfterTwoSweeps(AcceleratedIBP):
    """A solver that stops the loop on its third sweep (like a lost Dask cluster)."""

    def sweep(self, state, rng):
        state.stats["n_sweeps"] = state.stats.get("n_sweeps", 0) + 1
        if state.stats["n_sweeps"] > 2:
            raise exceptions.SamplingStoppedError("stopped by the test")
        super().sweep(state, rng)


def _warnings_of(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return caught


@pytest.mark.parametrize("category, call", [
    # Through scikit-learn's fit wrapper and a Pipeline.
    (exceptions.NoFeaturesWarning,
     lambda: make_pipeline(IBPFactorAnalysis(sigma_x=10.0, alpha=1e-3, n_iter=4,
                                             sample_hyperparameters=False, random_state=0)
                           ).fit(np.zeros((12, 3)))),
    (exceptions.SamplingInterruptedWarning,
     lambda: IBPFactorAnalysis(solver=_StopsAfterTwoSweeps(), n_iter=6,
                               random_state=0).fit(np.eye(6))),
    # A deprecated option value.
    (FutureWarning,
     lambda: IBPFactorAnalysis(solver="map", n_iter=2, random_state=0).fit(np.eye(6))),
])
def test_a_warning_points_at_the_users_call(category, call):
    caught = [w for w in _warnings_of(call) if issubclass(w.category, category)]
    assert caught, f"no {category.__name__}"
    for w in caught:
        assert w.filename == __file__, (w.filename, str(w.message))


def test_a_deprecated_class_name_warns_at_the_import():
    def run():
        from sklearn_ibp.solvers import AcceleratedGibbs  # noqa: F401

    caught = [w for w in _warnings_of(run) if issubclass(w.category, FutureWarning)]
    assert caught and all(w.filename == __file__ for w in caught)
