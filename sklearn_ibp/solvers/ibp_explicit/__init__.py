"""IBP samplers that keep the features ``A`` explicit and serve any explicit-feature
likelihood (linear-Gaussian, exponential-Gaussian, binary, real-weighted): slice,
semi-ordered slice, truncated Gibbs, approximate Gibbs, Metropolis-Hastings, particle
filter, parallel tempering and MAP hill climbing (Görür 2007, sec. 4.2-4.3; Doshi-Velez
2009, ch. 3)."""

from ..._deprecation import class_aliases
from ._explicit_base import ExplicitFeatureSolver, ExplicitFeatureState
from .approximate_gibbs import ApproximateGibbsIBP
from .map_climb import MapClimbIBP
from .metropolis import MetropolisIBP
from .particle import ParticleIBP
from .semi_ordered_slice import SemiOrderedSliceIBP
from .slice import SliceIBP
from .tempering import TemperingIBP
from .truncated_gibbs import TruncatedGibbsIBP

__all__ = [
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
]

#: Old class names (before issue 21), importable with a FutureWarning naming the new one.
__getattr__ = class_aliases(__name__)
