"""Inference algorithms, one module each: the IBP latent feature models and the DP
mixtures."""

from ._base import BaseIBPSolver, FeatureState
from ._dp_base import BaseDPSolver, MixtureState
from ._explicit_base import ExplicitFeatureSolver, ExplicitFeatureState
from .accelerated import AcceleratedGibbs
from .approximate_gibbs import ApproximateGibbs
from .collapsed import CollapsedGibbs
from .ddibp_gibbs import DistanceDependentGibbs
from .dp_auxiliary import AuxiliaryDP
from .dp_collapsed import CollapsedDPGibbs
from .dp_gibbs import GibbsDP
from .dp_metropolis import MetropolisDP
from .dp_no_gaps import NoGapsDP
from .dp_retrospective import RetrospectiveDP
from .dp_slice import SliceDP
from .dp_split_merge import SplitMergeDP
from .dp_truncated import TruncatedDP
from .hierarchy_gibbs import HierarchyGibbs, HierarchyState
from .map_climb import MapClimb
from .metropolis import MetropolisGibbs
from .particle import ParticleFilter
from .semi_collapsed import SemiCollapsedGibbs
from .semi_ordered_slice import SemiOrderedSliceSampler
from .slice import SliceSampler
from .tempering import ParallelTempering
from .truncated_gibbs import TruncatedGibbs
from .uncollapsed import UncollapsedGibbs
from .variational import FiniteVariationalIBP, VariationalIBP

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

__all__ = [
    "DDIBP_SOLVERS",
    "DP_SOLVERS",
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
