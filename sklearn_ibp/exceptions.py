"""The package's exceptions and warnings, in one module every layer may import."""

__all__ = [
    "NoFeaturesWarning",
    "SamplingInterruptedWarning",
    "SamplingStoppedError",
    "WorkersLostError",
]


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
