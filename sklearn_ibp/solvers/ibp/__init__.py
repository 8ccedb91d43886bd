"""Collapsed and uncollapsed Gibbs samplers of the linear-Gaussian IBP model (Doshi-Velez
2009, ch. 3-4): the accelerated, collapsed, uncollapsed and semi-collapsed samplers, their
shared base (``FeatureState``) and the split-merge move they can add."""

from ..._deprecation import class_aliases
from ._base import BaseIBPSolver, DuckTypedSolver, FeatureState
from .accelerated import AcceleratedIBP
from .collapsed import CollapsedIBP
from .semi_collapsed import SemiCollapsedIBP
from .uncollapsed import UncollapsedIBP

__all__ = [
    "DuckTypedSolver",
    "AcceleratedIBP",
    "BaseIBPSolver",
    "CollapsedIBP",
    "FeatureState",
    "SemiCollapsedIBP",
    "UncollapsedIBP",
]


#: Old class names (before issue 21), importable with a FutureWarning naming the new one.
__getattr__ = class_aliases(__name__)
