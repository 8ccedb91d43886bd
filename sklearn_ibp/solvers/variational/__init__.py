"""Mean-field variational inference for the linear-Gaussian IBP model, infinite and finite
(Doshi-Velez 2009, ch. 6 and appendix B)."""

from .variational import (
    FiniteVariationalIBP,
    VariationalIBP,
    VariationalState,
    multinomial_bound,
    taylor_bound,
    taylor_bound_gradient,
)

__all__ = [
    "FiniteVariationalIBP",
    "VariationalIBP",
    "VariationalState",
    "multinomial_bound",
    "taylor_bound",
    "taylor_bound_gradient",
]
