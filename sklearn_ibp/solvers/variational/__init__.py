"""Mean-field variational inference for the linear-Gaussian IBP model, infinite and finite
(Doshi-Velez 2009, ch. 6 and appendix B)."""

from . import variational
from .variational import *  # noqa: F403

__all__ = [*variational.__all__]
