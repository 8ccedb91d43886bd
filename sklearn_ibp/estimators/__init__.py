"""The public estimators: parameters, validation and fitted attributes, no sampling math."""

from .factor_analysis import IBPFactorAnalysis

__all__ = ["IBPFactorAnalysis"]
