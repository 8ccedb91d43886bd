"""Collapsed Gibbs sampling for the IBP (Griffiths and Ghahramani 2005; Doshi-Velez 2009 sec. 3.2).

The features ``A`` are integrated out and each ``z_nk`` is drawn from
``p(z_nk | Z_-nk, X) ~ m_-n,k / N * p(X | Z)`` (eq. 3.6), new features for each row from
``Poisson(k_new; alpha/N) p(X | Z_new)`` up to ``k_max`` (eq. 3.7), with ``p(X | Z)`` the
collapsed likelihood of eq. A.2 kept up to date by rank-one updates of
``(Z^T Z + s_x^2/s_a^2 I)^{-1}``. It mixes well but each sweep costs ``O(N K^3 D)``; the
accelerated sampler (:class:`~sklearn_ibp.solvers.AcceleratedIBP`) draws from the same
conditionals in ``O(N (K^2 + K D))``.
"""

from __future__ import annotations

import numpy as np

from ..._deprecation import class_aliases
from ._base import with_capacity
from ._collapsed_kernels import _full_inverse, sweep_collapsed
from ._row_gibbs import RowGibbsIBPSolver

__all__ = ["CollapsedIBP"]


class CollapsedIBP(RowGibbsIBPSolver):
    """Collapsed Gibbs sampler of Griffiths and Ghahramani (eqs. 3.6-3.7, A.2).

    Parameters
    ----------
    k_max : int, default=4
        Largest number of new features one row may take in one step (truncation of the
        Poisson in eq. 3.7).
    split_merge : int, default=0
        Split-merge Metropolis-Hastings proposals made after each sweep (Doshi-Velez 2009, sec. 3.3;
        :mod:`.ibp_split_merge`).
    """

    name = "collapsed"

    def _start(self, state, rng) -> None:
        self._refresh(state)

    def _refresh(self, state) -> None:
        cap = state.Z.shape[1]
        K = state.n_features
        counts, gram, cross = self._exact_statistics(state)
        Minv = np.zeros((cap, cap))
        ratio = state.sigma_x**2 / state.sigma_a**2
        logdet = _full_inverse(gram, K, ratio, Minv)
        state.stats.update(
            counts=counts, gram=gram, cross=cross, Minv=Minv, logdet=logdet,
            sq_norm=float(np.sum(state.X**2)),
        )

    def _grow(self, state) -> None:
        state.Z = with_capacity(state.Z, state.n_features, 2 * state.Z.shape[1])
        self._refresh(state)

    def _rows(self, state, order, rng) -> int:
        st = state.stats
        K, logdet, done = sweep_collapsed(
            state.X, state.Z, st["counts"], st["gram"], st["cross"], st["Minv"],
            st["logdet"], st["sq_norm"], state.n_features, order,
            state.alpha, state.beta, state.sigma_x, state.sigma_a, int(self.k_max), rng,
        )
        state.n_features = int(K)
        st["logdet"] = float(logdet)
        return int(done)

    def _compact_stats(self, state, idx) -> None:
        # Dropping empty features changes M^{-1} only by removing decoupled blocks, but
        # recomputing it once per sweep also clears rank-one drift.
        state.n_features = idx.size
        self._refresh(state)

    def sufficient_statistics(self, state):
        K = state.n_features
        return state.stats["gram"][:K, :K].copy(), state.stats["cross"][:K].copy()

#: Old class names (before issue 21), importable with a FutureWarning naming the new one.
__getattr__ = class_aliases(__name__)
