"""The Gibbs sampler of the correlated feature hierarchies: DP-IBP, IBP-IBP and noisy-or
IBP-IBP (Doshi-Velez 2009, ch. 7)."""

from .hierarchy_gibbs import HierarchyGibbs, HierarchyState

__all__ = ["HierarchyGibbs", "HierarchyState"]
