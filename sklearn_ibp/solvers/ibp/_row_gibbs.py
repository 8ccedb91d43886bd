"""What the row-by-row Gibbs samplers of the linear-Gaussian IBP share (Doshi-Velez 2009
ch. 3: the collapsed sampler of sec. 3.2, the uncollapsed one of sec. 3.1 and the
semi-collapsed one of sec. 4.4): their two parameters, the start of a chain and the
sweep's driver around their kernels."""

from __future__ import annotations

from numbers import Integral

import numpy as np
from sklearn.utils._param_validation import Interval

from ._base import BaseIBPSolver, FeatureState
from .ibp_split_merge import apply_split_merge

__all__ = ["RowGibbsIBPSolver"]


class RowGibbsIBPSolver(BaseIBPSolver):
    """Base of the samplers that visit one row at a time, drawing up to ``k_max`` new
    features for it, with ``split_merge`` split-merge proposals after each sweep.

    Subclasses implement :meth:`_start` (the statistics of a chain, made afresh),
    :meth:`_grow` and :meth:`_rows` (the kernel), and may add :meth:`_after_rows`.
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

    def sweep(self, state: FeatureState, rng) -> None:
        """One sweep: the rows in a random order, by :meth:`_rows` (which stops before a
        row that could need more feature slots than are free; :meth:`_grow` then adds
        them), the empty features dropped, :meth:`_after_rows`, then ``split_merge``
        proposals (the statistics made afresh by :meth:`_start` after an accepted one)."""
        order = rng.permutation(state.X.shape[0]).astype(np.int64)
        position = 0
        while position < order.shape[0]:
            if state.n_features + self.k_max > state.Z.shape[1]:
                self._grow(state)
            position += self._rows(state, order[position:], rng)
        self.compact(state, state.stats["counts"][: state.n_features] > 0)
        self._after_rows(state, rng)
        if self.split_merge and apply_split_merge(state, self.split_merge, rng, self.k_max):
            self._start(state, rng)

    def _grow(self, state: FeatureState) -> None:  # pragma: no cover - abstract
        """Double the feature slots of ``state.Z`` and of the solver's statistics."""
        raise NotImplementedError

    def _rows(self, state: FeatureState, order, rng) -> int:  # pragma: no cover - abstract
        """Update the rows ``order`` in turn (the kernel); return how many were done."""
        raise NotImplementedError

    def _after_rows(self, state: FeatureState, rng) -> None:
        """What follows the rows and the compaction (nothing by default)."""
