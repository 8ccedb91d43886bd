"""``sklearn_ibp.exceptions`` defines the package's exceptions and warnings; the modules
that exported them before still do (the same classes)."""

import sklearn_ibp.base
import sklearn_ibp.distributed
import sklearn_ibp.distributed._engines
from sklearn_ibp import exceptions


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
    assert set(exceptions.__all__) == {"NoFeaturesWarning", "SamplingInterruptedWarning",
                                       "SamplingStoppedError", "WorkersLostError"}
