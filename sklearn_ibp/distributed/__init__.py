"""Data-parallel inference past one machine (Doshi-Velez 2009, ch. 5): the rows are split into
shards that sample in parallel, on threads of this process or on the workers of a Dask
cluster, and exchange sufficient statistics by message passing."""

from .._deprecation import class_aliases
from ._engines import WorkersLostError
from .parallel_accelerated import ParallelAcceleratedIBP
from .parallel_noisy_or import ParallelNoisyOrIBP

#: Solver names accepted by ``IBPFactorAnalysis(solver=...)``.
PARALLEL_SOLVERS = {
    "parallel_accelerated": ParallelAcceleratedIBP,
    "parallel_noisy_or": ParallelNoisyOrIBP,
}

__all__ = ["PARALLEL_SOLVERS", "ParallelAcceleratedIBP", "ParallelNoisyOrIBP", "WorkersLostError"]

#: Old class names (before issue 21), importable with a FutureWarning naming the new one.
__getattr__ = class_aliases(__name__)
