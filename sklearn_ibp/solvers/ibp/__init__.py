"""Collapsed and uncollapsed Gibbs samplers of the linear-Gaussian IBP model (Doshi-Velez
2009, ch. 3-4): the accelerated, collapsed, uncollapsed and semi-collapsed samplers, their
shared base (``FeatureState``) and the split-merge move they can add."""

from ._base import BaseIBPSolver, DuckTypedSolver, FeatureState
from .accelerated import AcceleratedGibbs
from .collapsed import CollapsedGibbs
from .semi_collapsed import SemiCollapsedGibbs
from .uncollapsed import UncollapsedGibbs

__all__ = [
    "DuckTypedSolver",
    "AcceleratedGibbs",
    "BaseIBPSolver",
    "CollapsedGibbs",
    "FeatureState",
    "SemiCollapsedGibbs",
    "UncollapsedGibbs",
]
