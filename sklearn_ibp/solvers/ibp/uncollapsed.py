"""Uncollapsed Gibbs sampling for the IBP (Doshi-Velez 2009 sec. 3.1).

The features ``A`` are explicit: given ``A`` each ``z_nk`` depends only on its own row
(eq. 3.2), and ``A`` is drawn from its Gaussian posterior (eq. A.3) once a sweep. New
features come from the Metropolis proposal of Meeds et al. (2007): the row's singleton
features are replaced by ``Poisson(alpha/N)`` new ones with values from the prior, accepted
with the likelihood ratio.
"""

from __future__ import annotations

import numpy as np

from ..._deprecation import class_aliases
from ._base import with_capacity
from ._explicit_features_kernels import draw_gaussian_features, sweep_explicit_features
from ._row_gibbs import RowGibbsIBPSolver

__all__ = ["UncollapsedIBP"]


class UncollapsedIBP(RowGibbsIBPSolver):
    """Uncollapsed Gibbs sampler with Metropolis proposals for new features (sec. 3.1).

    Parameters
    ----------
    k_max : int, default=4
        Largest number of new features proposed for one row (truncation of the Poisson).
    split_merge : int, default=0
        Split-merge Metropolis-Hastings proposals made after each sweep, on ``Z`` with ``A``
        integrated out; ``A`` is redrawn from ``p(A | Z, X)`` after an accepted one (Doshi-Velez
        2009, sec. 3.3; :mod:`.ibp_split_merge`).
    """

    name = "uncollapsed"
    _integrate_new = False

    def _start(self, state, rng) -> None:
        self._draw_features(state, rng)

    def _draw_features(self, state, rng) -> None:
        """``A ~ p(A | Z, X)`` into spare-capacity storage, the residual ``X - Z A`` and
        the feature counts (one numba call: this runs every sweep)."""
        st = state.stats
        cap, (N, D) = state.Z.shape[1], state.X.shape
        if st.get("A") is None or st["A"].shape[0] != cap:
            st["A"] = np.zeros((cap, D))
            st["counts"] = np.zeros(cap, dtype=np.int64)
        if st.get("resid") is None or st["resid"].shape != (N, D):
            st["resid"] = np.zeros((N, D))
        draw_gaussian_features(
            state.X, state.Z, state.n_features, state.sigma_x**2, state.sigma_a**2, st["A"],
            st["resid"], st["counts"], rng,
        )

    def _refresh(self, state) -> None:
        K = state.n_features
        A = state.stats["A"][:K]
        state.stats["resid"] = np.ascontiguousarray(state.X - state.active_Z @ A)

    def _grow(self, state) -> None:
        st = state.stats
        cap = 2 * state.Z.shape[1]
        state.Z = with_capacity(state.Z, state.n_features, cap)
        for key in ("A", "counts"):
            old = st[key]
            st[key] = np.zeros((cap,) + old.shape[1:], dtype=old.dtype)
            st[key][: old.shape[0]] = old

    def _rows(self, state, order, rng) -> int:
        st = state.stats
        K, done = sweep_explicit_features(
            state.X, state.Z, st["counts"], st["A"], st["resid"], state.n_features,
            order, state.alpha, state.beta, state.sigma_x**2,
            state.sigma_a**2, int(self.k_max), self._integrate_new, rng,
        )
        state.n_features = int(K)
        return int(done)

    def _after_rows(self, state, rng) -> None:
        # A given the new Z, every sweep
        self._draw_features(state, rng)

    def _compact_stats(self, state, idx) -> None:
        st = state.stats
        st["A"][: idx.size] = st["A"][idx]
        st["A"][idx.size :] = 0.0
        st["counts"][: idx.size] = st["counts"][idx]
        st["counts"][idx.size :] = 0

    def sample_features(self, state, rng) -> np.ndarray:
        """The current ``A``: it is already a draw from ``p(A | Z, X)``."""
        return state.stats["A"][: state.n_features].copy()

    def set_hyperparameters(self, state, alpha, sigma_x, sigma_a) -> None:
        state.alpha, state.sigma_x, state.sigma_a = float(alpha), float(sigma_x), float(sigma_a)

#: Old class names (before issue 21), importable with a FutureWarning naming the new one.
__getattr__ = class_aliases(__name__)
