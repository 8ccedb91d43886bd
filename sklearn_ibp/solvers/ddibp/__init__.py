"""The Gibbs sampler of the distance-dependent IBP: owners and links (Gershman, Frazier and
Blei, sec. 5)."""

from .ddibp_gibbs import DistanceDependentGibbs

__all__ = ["DistanceDependentGibbs"]
