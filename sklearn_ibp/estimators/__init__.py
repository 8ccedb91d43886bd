"""The public estimators: parameters, validation and fitted attributes, no sampling math."""

from .distance_dependent import DistanceDependentIBP
from .factor_analysis import IBPFactorAnalysis

__all__ = ["DistanceDependentIBP", "IBPFactorAnalysis"]
