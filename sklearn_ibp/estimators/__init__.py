"""The public estimators: parameters, validation and fitted attributes, no sampling math."""

from .distance_dependent import DistanceDependentIBP
from .dp_mixture import DPMixture
from .factor_analysis import IBPFactorAnalysis
from .imputer import IBPImputer
from .infinite_eba import InfiniteEBA
from .noisy_or_hierarchy import NoisyOrHierarchy

__all__ = [
    "DPMixture",
    "DistanceDependentIBP",
    "IBPFactorAnalysis",
    "IBPImputer",
    "InfiniteEBA",
    "NoisyOrHierarchy",
]
