"""IBP samplers that keep the features ``A`` explicit and serve any explicit-feature
likelihood (linear-Gaussian, exponential-Gaussian, binary, real-weighted): slice,
semi-ordered slice, truncated Gibbs, approximate Gibbs, Metropolis-Hastings, particle
filter, parallel tempering and MAP hill climbing (Görür 2007, sec. 4.2-4.3; Doshi-Velez
2009, ch. 3)."""

from ._explicit_base import ExplicitFeatureSolver, ExplicitFeatureState
from .approximate_gibbs import ApproximateGibbs
from .map_climb import MapClimb
from .metropolis import MetropolisGibbs
from .particle import ParticleFilter
from .semi_ordered_slice import SemiOrderedSliceSampler
from .slice import SliceSampler
from .tempering import ParallelTempering
from .truncated_gibbs import TruncatedGibbs

__all__ = [
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
]
