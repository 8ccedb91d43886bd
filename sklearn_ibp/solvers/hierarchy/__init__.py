"""The Gibbs sampler of the correlated feature hierarchies: DP-IBP, IBP-IBP and noisy-or
IBP-IBP (Doshi-Velez 2009, ch. 7)."""

from ..._deprecation import class_aliases
from .hierarchy_gibbs import GibbsHierarchy, HierarchyState

__all__ = ["GibbsHierarchy", "HierarchyState"]

#: Old class names (before issue 21), importable with a FutureWarning naming the new one.
__getattr__ = class_aliases(__name__)
