"""The package's exceptions and warnings, in one module every layer may import."""

import os
import sys
import warnings

import joblib
import sklearn

__all__ = [
    "AllocationTooLargeError",
    "NoFeaturesWarning",
    "NonFiniteResultWarning",
    "SamplingInterruptedWarning",
    "SamplingStoppedError",
    "WorkersLostError",
]

#: Source folders whose frames a warning skips to reach the user's line: this package's,
#: scikit-learn's (the ``fit`` wrapper, meta-estimators such as ``Pipeline`` and
#: ``GridSearchCV``) and joblib's (which runs the fits of a search).
_INTERNAL_DIRS = tuple(
    os.path.dirname(os.path.abspath(path)) + os.sep
    for path in (__file__, sklearn.__file__, joblib.__file__)
)


def _is_importlib(filename) -> bool:
    # The frames ``warnings.warn`` itself leaves out of ``stacklevel`` (an import such
    # as ``from package import old_name`` runs through them).
    return "importlib" in filename and "_bootstrap" in filename


def warn_at_caller(message, category) -> None:
    """Issue a warning attributed to the first frame outside this package and
    scikit-learn: the user's line that called ``fit`` (or ``transform`` ...), whatever
    wrappers lie between (Python 3.12's ``skip_file_prefixes``, for every version)."""
    frame = sys._getframe(0)
    level = 1
    while frame is not None:
        filename = frame.f_code.co_filename
        if _is_importlib(filename):
            frame = frame.f_back
            continue
        if not filename.startswith(_INTERNAL_DIRS):
            break
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)


class SamplingInterruptedWarning(UserWarning):
    """Warns that a fit was interrupted and kept only the samples drawn so far."""


class NoFeaturesWarning(UserWarning):
    """Warns that a latent feature fit ended with no feature at all.

    ``transform`` then returns an array with no column, which the next step of a
    ``Pipeline`` cannot use.
    """


class SamplingStoppedError(RuntimeError):
    """Raised by a solver that cannot go on (for example, every Dask worker was lost).

    The loop treats it like an interrupt: the fit keeps the samples drawn so far and
    warns with the reason.
    """


class WorkersLostError(SamplingStoppedError):
    """No Dask worker is left to run a shard (or a shard was lost too many times)."""


class AllocationTooLargeError(ValueError, MemoryError):
    """Raised before an allocation larger than the package's memory limit.

    The message names the array, its size, the limit and the argument to change. It is a
    ``ValueError`` (the input or a parameter asks for too much) and a ``MemoryError``
    (code that catches running out of memory still catches it). See
    ``sklearn_ibp._memory`` for the limit and the ``SKLEARN_IBP_MAX_MEMORY`` variable.
    """


class NonFiniteResultWarning(UserWarning):
    """Warns that a fit ended with a non-finite (NaN or infinite) fitted attribute or
    log-joint trace: the result is not usable as it is, and the message names what is
    non-finite."""
