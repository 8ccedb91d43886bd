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

from .._deprecation import class_aliases
from . import _moved
from .ddibp import GibbsDDIBP
from .dp import (
    AuxiliaryDP,
    BaseDPSolver,
    CollapsedDP,
    GibbsDP,
    MetropolisDP,
    MixtureState,
    NoGapsDP,
    RetrospectiveDP,
    SliceDP,
    SplitMergeDP,
    TruncatedDP,
)
from .hierarchy import GibbsHierarchy, HierarchyState
from .ibp import (
    AcceleratedIBP,
    BaseIBPSolver,
    CollapsedIBP,
    FeatureState,
    SemiCollapsedIBP,
    UncollapsedIBP,
)
from .ibp_explicit import (
    ApproximateGibbsIBP,
    ExplicitFeatureSolver,
    ExplicitFeatureState,
    MapClimbIBP,
    MetropolisIBP,
    ParticleIBP,
    SemiOrderedSliceIBP,
    SliceIBP,
    TemperingIBP,
    TruncatedGibbsIBP,
)
from .variational import FiniteVariationalIBP, VariationalIBP

_moved.install()

#: Solver names accepted by ``IBPFactorAnalysis(solver=...)``.
SOLVERS = {
    "accelerated": AcceleratedIBP,
    "collapsed": CollapsedIBP,
    "uncollapsed": UncollapsedIBP,
    "semi_collapsed": SemiCollapsedIBP,
}

#: The IBP samplers that keep ``A`` explicit and serve any explicit-feature likelihood
#: (linear-Gaussian, exponential-Gaussian, binary; seed 002 sec. 4.2, Algorithms 12-16).
EXPLICIT_SOLVERS = {
    "slice": SliceIBP,
    "semi_ordered_slice": SemiOrderedSliceIBP,
    "truncated_gibbs": TruncatedGibbsIBP,
    "approximate_gibbs": ApproximateGibbsIBP,
    "metropolis": MetropolisIBP,
    "particle": ParticleIBP,
    "tempering": TemperingIBP,
    "map_climb": MapClimbIBP,
    "map": MapClimbIBP,  # deprecated name of "map_climb" (RENAMED_SOLVERS)
}

#: Mean-field variational inference for the linear-Gaussian model (seed 000 ch. 6).
VARIATIONAL_SOLVERS = {
    "variational": VariationalIBP,
    "finite_variational": FiniteVariationalIBP,
}

#: Solver names accepted by ``DPMixture(solver=...)``.
DP_SOLVERS = {
    "collapsed": CollapsedDP,
    "split_merge": SplitMergeDP,
    "gibbs": GibbsDP,
    "auxiliary": AuxiliaryDP,
    "no_gaps": NoGapsDP,
    "metropolis": MetropolisDP,
    "slice": SliceDP,
    "truncated": TruncatedDP,
    "retrospective": RetrospectiveDP,
}

#: Old ``solver=`` names of ``IBPFactorAnalysis``, kept in the registries above (so an old
#: name still finds its solver) and accepted with a FutureWarning until they are removed.
RENAMED_SOLVERS = {"map": "map_climb"}

#: Old class names (before issue 21) of the solvers, importable from here with a
#: FutureWarning naming the new one until they are removed.
RENAMED_CLASSES = {
    "AcceleratedGibbs": "AcceleratedIBP",
    "CollapsedGibbs": "CollapsedIBP",
    "UncollapsedGibbs": "UncollapsedIBP",
    "SemiCollapsedGibbs": "SemiCollapsedIBP",
    "SliceSampler": "SliceIBP",
    "SemiOrderedSliceSampler": "SemiOrderedSliceIBP",
    "TruncatedGibbs": "TruncatedGibbsIBP",
    "ApproximateGibbs": "ApproximateGibbsIBP",
    "MetropolisGibbs": "MetropolisIBP",
    "ParticleFilter": "ParticleIBP",
    "ParallelTempering": "TemperingIBP",
    "MapClimb": "MapClimbIBP",
    "CollapsedDPGibbs": "CollapsedDP",
    "DistanceDependentGibbs": "GibbsDDIBP",
    "HierarchyGibbs": "GibbsHierarchy",
}
_renamed_class = class_aliases(__name__, RENAMED_CLASSES)

#: Solver names accepted by ``DistanceDependentIBP(solver=...)``.
DDIBP_SOLVERS = {
    "gibbs": GibbsDDIBP,
}

def __getattr__(name):
    # The parallel solvers import the solvers, so they are imported on first use; the
    # old module paths of the solvers resolve with a FutureWarning (see _moved.py).
    if name == "PARALLEL_SOLVERS":
        from ..distributed import PARALLEL_SOLVERS

        return PARALLEL_SOLVERS
    if name in _moved.MOVED_MODULES:
        return _moved.import_moved(name)
    if name in RENAMED_CLASSES:
        return _renamed_class(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DDIBP_SOLVERS",
    "DP_SOLVERS",
    "PARALLEL_SOLVERS",
    "RENAMED_SOLVERS",
    "EXPLICIT_SOLVERS",
    "SOLVERS",
    "VARIATIONAL_SOLVERS",
    "ApproximateGibbsIBP",
    "ExplicitFeatureSolver",
    "ExplicitFeatureState",
    "MapClimbIBP",
    "MetropolisIBP",
    "TemperingIBP",
    "ParticleIBP",
    "SemiOrderedSliceIBP",
    "SliceIBP",
    "TruncatedGibbsIBP",
    "AuxiliaryDP",
    "BaseDPSolver",
    "CollapsedDP",
    "GibbsDP",
    "MetropolisDP",
    "MixtureState",
    "NoGapsDP",
    "RetrospectiveDP",
    "SliceDP",
    "SplitMergeDP",
    "TruncatedDP",
    "AcceleratedIBP",
    "BaseIBPSolver",
    "CollapsedIBP",
    "GibbsDDIBP",
    "FeatureState",
    "GibbsHierarchy",
    "HierarchyState",
    "SemiCollapsedIBP",
    "UncollapsedIBP",
    "FiniteVariationalIBP",
    "VariationalIBP",
]
