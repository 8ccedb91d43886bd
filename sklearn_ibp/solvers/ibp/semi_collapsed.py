"""Semi-collapsed Gibbs sampling for the IBP (Doshi-Velez 2009 sec. 4.4).

The instantiated features ``A`` are explicit, as in the uncollapsed sampler, but the new
features of a row are Gibbs-sampled with their values integrated out (eq. 3.3 with the
linear-Gaussian integral in closed form), then given values from their posterior.
"""

from __future__ import annotations

from ..._deprecation import class_aliases
from .uncollapsed import UncollapsedIBP

__all__ = ["SemiCollapsedIBP"]


class SemiCollapsedIBP(UncollapsedIBP):
    """Gibbs sampler with explicit features and integrated-out new features (sec. 4.4).

    Parameters
    ----------
    k_max : int, default=4
        Largest number of new features one row may take in one step.
    split_merge : int, default=0
        Split-merge Metropolis-Hastings proposals made after each sweep (see
        :class:`~sklearn_ibp.solvers.UncollapsedIBP`).
    """

    name = "semi_collapsed"
    _integrate_new = True

#: Old class names (before issue 21), importable with a FutureWarning naming the new one.
__getattr__ = class_aliases(__name__)
