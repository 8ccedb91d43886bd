"""What the row-by-row Gibbs samplers of the linear-Gaussian IBP share (Doshi-Velez 2009
ch. 3: the collapsed sampler of sec. 3.2, the uncollapsed one of sec. 3.1 and the
semi-collapsed one of sec. 4.4): their two parameters and the start of a chain."""

from __future__ import annotations

from numbers import Integral

from sklearn.utils._param_validation import Interval

from ._base import BaseIBPSolver, FeatureState

__all__ = ["RowGibbsIBPSolver"]


class RowGibbsIBPSolver(BaseIBPSolver):
    """Base of the samplers that visit one row at a time, drawing up to ``k_max`` new
    features for it, with ``split_merge`` split-merge proposals after each sweep.

    Subclasses implement :meth:`_start` (the statistics of a new chain) and ``sweep``.
    """

    _parameter_constraints: dict = {
        "k_max": [Interval(Integral, 1, None, closed="left")],
        "split_merge": [Interval(Integral, 0, None, closed="left")],
    }

    def __init__(self, k_max=4, split_merge=0):
        self.k_max = k_max
        self.split_merge = split_merge

    def initialize(self, X, Z, hyper, rng) -> FeatureState:
        state = self._new_state(X, Z, hyper, 4 * self.k_max + 8)
        self._start(state, rng)
        return state

    def _start(self, state: FeatureState, rng) -> None:  # pragma: no cover - abstract
        """The solver's statistics of the new chain ``state``."""
        raise NotImplementedError
