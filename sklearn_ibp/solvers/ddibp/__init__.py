"""The Gibbs sampler of the distance-dependent IBP: owners and links (Gershman, Frazier and
Blei, sec. 5)."""

from ..._deprecation import class_aliases
from .ddibp_gibbs import GibbsDDIBP

__all__ = ["GibbsDDIBP"]

#: Old class names (before issue 21), importable with a FutureWarning naming the new one.
__getattr__ = class_aliases(__name__)
