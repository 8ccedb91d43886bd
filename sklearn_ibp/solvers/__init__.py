"""Inference algorithms, one sub-package per model family and one module per algorithm,
each beside its numba kernels; this module is the registry of the names ``solver=`` takes.

``ibp/``
    collapsed and uncollapsed Gibbs samplers of the linear-Gaussian IBP model.
``ibp_explicit/``
    IBP samplers that keep the features explicit, for any explicit-feature likelihood.
``variational/``
    mean-field variational inference for the linear-Gaussian IBP model.
``dp/``
    samplers of the Dirichlet process mixtures.
``hierarchy/``, ``ddibp/``, ``eba/``
    the samplers of the feature hierarchies, the distance-dependent IBP and the infinite
    elimination-by-aspects model.
``_draw_kernels.py``, ``_feature_proposal_kernels.py``
    kernels several families share: discrete draws and IBP prior terms; proposals of new
    feature rows and the feature prior.

The data-parallel solvers live in :mod:`sklearn_ibp.distributed`; this registry offers them
as ``PARALLEL_SOLVERS`` (imported on first use).
"""

from . import _moved
from .ddibp import DistanceDependentGibbs
from .dp import (
    AuxiliaryDP,
    BaseDPSolver,
    CollapsedDPGibbs,
    GibbsDP,
    MetropolisDP,
    MixtureState,
    NoGapsDP,
    RetrospectiveDP,
    SliceDP,
    SplitMergeDP,
    TruncatedDP,
)
from .hierarchy import HierarchyGibbs, HierarchyState
from .ibp import (
    AcceleratedGibbs,
    BaseIBPSolver,
    CollapsedGibbs,
    FeatureState,
    SemiCollapsedGibbs,
    UncollapsedGibbs,
)
from .ibp_explicit import (
    ApproximateGibbs,
    ExplicitFeatureSolver,
    ExplicitFeatureState,
    MapClimb,
    MetropolisGibbs,
    ParallelTempering,
    ParticleFilter,
    SemiOrderedSliceSampler,
    SliceSampler,
    TruncatedGibbs,
)
from .variational import FiniteVariationalIBP, VariationalIBP

_moved.install()

#: Solver names accepted by ``IBPFactorAnalysis(solver=...)``.
SOLVERS = {
    "accelerated": AcceleratedGibbs,
    "collapsed": CollapsedGibbs,
    "uncollapsed": UncollapsedGibbs,
    "semi_collapsed": SemiCollapsedGibbs,
}

#: The IBP samplers that keep ``A`` explicit and serve any explicit-feature likelihood
#: (linear-Gaussian, exponential-Gaussian, binary; seed 002 sec. 4.2, Algorithms 12-16).
EXPLICIT_SOLVERS = {
    "slice": SliceSampler,
    "semi_ordered_slice": SemiOrderedSliceSampler,
    "truncated_gibbs": TruncatedGibbs,
    "approximate_gibbs": ApproximateGibbs,
    "metropolis": MetropolisGibbs,
    "particle": ParticleFilter,
    "tempering": ParallelTempering,
    "map": MapClimb,
}

#: Mean-field variational inference for the linear-Gaussian model (seed 000 ch. 6).
VARIATIONAL_SOLVERS = {
    "variational": VariationalIBP,
    "finite_variational": FiniteVariationalIBP,
}

#: Solver names accepted by ``DPMixture(solver=...)``.
DP_SOLVERS = {
    "collapsed": CollapsedDPGibbs,
    "split_merge": SplitMergeDP,
    "gibbs": GibbsDP,
    "auxiliary": AuxiliaryDP,
    "no_gaps": NoGapsDP,
    "metropolis": MetropolisDP,
    "slice": SliceDP,
    "truncated": TruncatedDP,
    "retrospective": RetrospectiveDP,
}

#: Solver names accepted by ``DistanceDependentIBP(solver=...)``.
DDIBP_SOLVERS = {
    "gibbs": DistanceDependentGibbs,
}

def __getattr__(name):
    # The parallel solvers import the solvers, so they are imported on first use; the
    # old module paths of the solvers resolve with a FutureWarning (see _moved.py).
    if name == "PARALLEL_SOLVERS":
        from ..distributed import PARALLEL_SOLVERS

        return PARALLEL_SOLVERS
    if name in _moved.MOVED_MODULES:
        return _moved.import_moved(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DDIBP_SOLVERS",
    "DP_SOLVERS",
    "PARALLEL_SOLVERS",
    "EXPLICIT_SOLVERS",
    "SOLVERS",
    "VARIATIONAL_SOLVERS",
    "ApproximateGibbs",
    "ExplicitFeatureSolver",
    "ExplicitFeatureState",
    "MapClimb",
    "MetropolisGibbs",
    "ParallelTempering",
    "ParticleFilter",
    "SemiOrderedSliceSampler",
    "SliceSampler",
    "TruncatedGibbs",
    "AuxiliaryDP",
    "BaseDPSolver",
    "CollapsedDPGibbs",
    "GibbsDP",
    "MetropolisDP",
    "MixtureState",
    "NoGapsDP",
    "RetrospectiveDP",
    "SliceDP",
    "SplitMergeDP",
    "TruncatedDP",
    "AcceleratedGibbs",
    "BaseIBPSolver",
    "CollapsedGibbs",
    "DistanceDependentGibbs",
    "FeatureState",
    "HierarchyGibbs",
    "HierarchyState",
    "SemiCollapsedGibbs",
    "UncollapsedGibbs",
    "FiniteVariationalIBP",
    "VariationalIBP",
]
