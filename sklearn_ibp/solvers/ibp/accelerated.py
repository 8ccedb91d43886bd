"""Accelerated collapsed Gibbs sampling for the IBP (Doshi-Velez 2009, ch. 4; Algorithm 1).

The sampler draws exactly from the collapsed conditionals of Griffiths and Ghahramani
(eqs. 3.6-3.7), but never touches rows outside the current window: the posterior of the
features given all other rows, ``p(A | Z_-W, X_-W)``, carries everything they say
(eq. 4.1). A sweep costs ``O(N (K^2 + K D))`` with the default window of one row, against
``O(N K^3 D)`` for the literal collapsed sampler (:mod:`.collapsed`).
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
from sklearn.utils._param_validation import Interval

from ..._deprecation import class_aliases
from ._accelerated_kernels import refresh_from_statistics, sweep_accelerated
from ._base import BaseIBPSolver, FeatureState, with_capacity
from .ibp_split_merge import apply_split_merge

__all__ = ["AcceleratedIBP"]


class AcceleratedIBP(BaseIBPSolver):
    """Accelerated collapsed Gibbs sampler (Algorithm 1 of Doshi-Velez 2009, ch. 4).

    Parameters
    ----------
    window : int, default=1
        Number of rows ``W`` taken out of the feature posterior at a time. One row gives
        the best running time (sec. 4.3); every window size samples the same conditionals.
    refresh_every : int, default=100
        Recompute the feature posterior from the exact statistics ``Z^T Z`` and ``Z^T X``
        after this many windows, against the drift of repeated rank-one updates. 0 never
        refreshes (only for testing the drift).
    k_max : int, default=4
        Largest number of new features one row may take in one step (truncation of the
        Poisson in eq. 3.7).
    split_merge : int, default=3
        Split-merge Metropolis-Hastings proposals made after each sweep (Doshi-Velez 2009, sec. 3.3;
        :mod:`.ibp_split_merge`). Three per sweep undo the duplicated and merged shapes
        that single-entry updates leave after the default 100 sweeps (measured in
        :doc:`/user_guide`); 0 turns them off.
    complement : bool, default=True
        After each sweep, propose to replace each feature's column of ``Z`` by its
        complement (a Metropolis-Hastings move, see
        :meth:`~sklearn_ibp.solvers.BaseIBPSolver.complement_features`). Without it a
        chain that first learns a feature shared by every row can keep the other shapes
        by their negatives (measured in :doc:`/user_guide`).

    Notes
    -----
    The feature posterior is kept as its covariance and mean beside the integer Gram matrix
    ``Z^T Z`` and ``Z^T X``; window removals and insertions are Sherman-Morrison updates
    (Doshi-Velez 2009, sec. 4.2, derived in information form, where removing or adding a
    window's rows is a plain sum).
    """

    name = "accelerated"

    _parameter_constraints: dict = {
        "window": [Interval(Integral, 1, None, closed="left")],
        "refresh_every": [Interval(Integral, 0, None, closed="left")],
        "k_max": [Interval(Integral, 1, None, closed="left")],
        "split_merge": [Interval(Integral, 0, None, closed="left")],
        "complement": ["boolean"],
    }

    def __init__(self, window=1, refresh_every=100, k_max=4, split_merge=3,
                 complement=True):
        self.window = window
        self.refresh_every = refresh_every
        self.k_max = k_max
        self.split_merge = split_merge
        self.complement = complement

    #: The estimator may bound the number of features (``max_features``) of this solver.
    can_bound_features = True

    @property
    def starts_empty(self) -> bool:
        """Whether the estimator starts a chain with no feature: with split-merge or
        complement moves, which undo what a random start's mixed features would cost."""
        return bool(self.split_merge or self.complement)

    def initialize(self, X, Z, hyper, rng) -> FeatureState:
        state = self._new_state(X, Z, hyper, self._spare())
        state.stats["windows_done"] = 0
        # The IBP prior truncated to at most this many features (None: no bound).
        state.stats["max_features"] = hyper.get("max_features")
        self._refresh(state)
        return state

    def _spare(self) -> int:
        return max(16, 2 * self.window * self.k_max)

    @staticmethod
    def _bound(state) -> int:
        bound = state.stats.get("max_features")
        return np.iinfo(np.int64).max if bound is None else int(bound)

    def _refresh(self, state) -> None:
        cap = state.Z.shape[1]
        counts, gram, cross = self._exact_statistics(state)
        cov = np.zeros((cap, cap))
        mean = np.zeros((cap, state.X.shape[1]))
        refresh_from_statistics(
            gram, cross, cov, mean, state.n_features, state.sigma_x**2, state.sigma_a**2
        )
        state.stats.update(counts=counts, gram=gram, cross=cross, cov=cov, mean=mean)

    def _grow(self, state) -> None:
        """Double the spare columns of ``Z`` and of every per-feature statistic."""
        K = state.n_features
        cap = max(2 * state.Z.shape[1], K + self._spare())
        st = state.stats
        state.Z = with_capacity(state.Z, K, cap)
        for key in ("gram", "cov"):
            new = np.zeros((cap, cap))
            new[:K, :K] = st[key][:K, :K]
            st[key] = new
        for key in ("cross", "mean"):
            new = np.zeros((cap, st[key].shape[1]))
            new[:K] = st[key][:K]
            st[key] = new
        counts = np.zeros(cap, dtype=np.int64)
        counts[:K] = st["counts"][:K]
        st["counts"] = counts

    def sweep(self, state: FeatureState, rng) -> None:
        st = state.stats
        order = rng.permutation(state.X.shape[0]).astype(np.int64)
        position = 0
        N = order.shape[0]
        while position < N:
            if state.n_features + self.window * self.k_max > state.Z.shape[1]:
                self._grow(state)
            K, done, advanced = sweep_accelerated(
                state.X, state.Z, st["counts"], st["gram"], st["cross"], st["cov"],
                st["mean"], state.n_features, order[position:], int(self.window),
                state.alpha, state.beta, state.sigma_x**2, state.sigma_a**2,
                int(self.k_max), int(self.refresh_every), st["windows_done"], rng,
                N, np.ones(state.Z.shape[1], dtype=np.int8), int(self._bound(state)),
            )
            state.n_features = int(K)
            st["windows_done"] = int(done)
            position += int(advanced)
        self.compact(state, st["counts"][: state.n_features] > 0)
        if self.split_merge and self._split_merge(state, rng):
            self._refresh(state)
        if self.complement and self.complement_features(state, rng):
            self._refresh(state)

    def _split_merge(self, state, rng) -> bool:
        """``split_merge`` proposals; under ``max_features`` one at a time, a split that
        takes the features past the bound rejected (the truncated prior is zero there,
        elsewhere its ratio is the untruncated one). Returns whether any was kept."""
        bound = state.stats.get("max_features")
        if bound is None:
            return apply_split_merge(state, self.split_merge, rng, self._spare()) > 0
        kept = False
        for _ in range(self.split_merge):
            Z, K = state.Z.copy(), state.n_features
            if apply_split_merge(state, 1, rng, self._spare()):
                if state.n_features > bound:
                    state.Z, state.n_features = Z, K
                else:
                    kept = True
        return kept

    def _compact_stats(self, state, idx) -> None:
        st = state.stats
        K_new = idx.size
        for key in ("gram", "cov"):
            st[key][:K_new, :K_new] = st[key][np.ix_(idx, idx)]
            st[key][K_new:, :] = 0.0
            st[key][:, K_new:] = 0.0
        for key in ("cross", "mean"):
            st[key][:K_new] = st[key][idx]
            st[key][K_new:] = 0.0
        st["counts"][:K_new] = st["counts"][idx]
        st["counts"][K_new:] = 0

    def sufficient_statistics(self, state):
        K = state.n_features
        return state.stats["gram"][:K, :K].copy(), state.stats["cross"][:K].copy()

    def feature_posterior(self, state):
        """The maintained ``(mean, cov)`` of ``p(A | Z, X)`` over the live features."""
        K = state.n_features
        return state.stats["mean"][:K].copy(), state.stats["cov"][:K, :K].copy()

#: Old class names (before issue 21), importable with a FutureWarning naming the new one.
__getattr__ = class_aliases(__name__)
