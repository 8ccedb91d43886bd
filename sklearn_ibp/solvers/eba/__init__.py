"""The slice sampler of the infinite elimination-by-aspects choice model (Görür 2007,
sec. 4.5.2)."""

from ..._deprecation import class_aliases
from .eba_slice import EBAState, SliceEBA

__all__ = ["SliceEBA", "EBAState"]

#: Old class names (before issue 21), importable with a FutureWarning naming the new one.
__getattr__ = class_aliases(__name__)
