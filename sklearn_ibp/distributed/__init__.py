"""Data-parallel inference past one machine (seed 000 ch. 5): the rows are split into
shards that sample in parallel, on threads of this process or on the workers of a Dask
cluster, and exchange sufficient statistics by message passing."""

from ._engines import WorkersLostError
from .parallel_accelerated import ParallelAccelerated
from .parallel_noisy_or import ParallelNoisyOr

#: Solver names accepted by ``IBPFactorAnalysis(solver=...)``.
PARALLEL_SOLVERS = {
    "parallel_accelerated": ParallelAccelerated,
    "parallel_noisy_or": ParallelNoisyOr,
}

__all__ = ["PARALLEL_SOLVERS", "ParallelAccelerated", "ParallelNoisyOr", "WorkersLostError"]
