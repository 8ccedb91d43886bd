"""MCMC for the distance-dependent IBP (Gershman, Frazier and Blei, seed 004, sec. 5).

The state is the ownership of dishes and the customers' links for every owned dish; ``Z``
follows by reachability. One sweep

1. Gibbs-samples every link ``c_ik`` (eq. 33): two likelihoods per update, reaching the
   owner or not, evaluated with rank-one updates of the collapsed likelihood (eq. 36);
2. proposes, customer by customer, a new number of owned dishes from the prior,
   ``lambda_i' ~ Poisson(alpha / h_i)``, adding dishes with links drawn from the prior or
   removing randomly chosen ones, accepted with the likelihood ratio (eq. 34). The seed
   proposes every customer's count at once; one customer at a time is the same move
   restricted to one block, and is accepted far more often.
"""

from __future__ import annotations

import numpy as np

from ..likelihoods.linear_gaussian import log_marginal_likelihood_from_stats
from ..priors.ddibp import compute_reachability
from ._base import BaseIBPSolver, FeatureState
from ._collapsed_kernels import _full_inverse
from ._ddibp_kernels import sweep_connections

__all__ = ["DistanceDependentGibbs"]


class DistanceDependentGibbs(BaseIBPSolver):
    """Gibbs and Metropolis sampler of the dd-IBP with the linear-Gaussian likelihood.

    The normalised proximity matrix is given to :meth:`initialize` through ``hyper``
    (``hyper["proximity"]``, rows summing to one, and ``hyper["h"]``, the row sums of the
    decay function before normalisation).
    """

    name = "ddibp_gibbs"
    _parameter_constraints: dict = {}

    def initialize(self, X, Z, hyper, rng) -> FeatureState:
        proximity = np.ascontiguousarray(hyper["proximity"], dtype=float)
        N = proximity.shape[0]
        state = FeatureState(
            X=np.ascontiguousarray(X, dtype=float),
            Z=np.zeros((N, 0), dtype=np.int8),
            n_features=0,
            alpha=float(hyper["alpha"]),
            beta=1.0,
            sigma_x=float(hyper["sigma_x"]),
            sigma_a=float(hyper["sigma_a"]),
        )
        cum = np.cumsum(proximity, axis=1)
        state.stats.update(
            proximity=proximity,
            cum_proximity=np.ascontiguousarray(cum),
            h=np.asarray(hyper["h"], dtype=float),
            owners=np.zeros(0, dtype=np.int64),
            connections=np.zeros((N, 0), dtype=np.int64),
        )
        owners = np.asarray(hyper.get("owners", np.zeros(0)), dtype=np.int64)
        connections = hyper.get("connections")
        if owners.size == 0 and Z is None:
            # Start from a draw of the prior: lambda_i ~ Poisson(alpha / h_i), prior links.
            owners = np.repeat(np.arange(N), rng.poisson(state.alpha / state.stats["h"]))
            connections = np.zeros((N, owners.size), dtype=np.int64)
            for k in range(owners.size):
                connections[:, k] = self._prior_links(state, rng)
        if owners.size:
            self._set_dishes(state, owners, np.asarray(connections, dtype=np.int64))
        self._refresh(state)
        return state

    # -- dishes ---------------------------------------------------------------------------
    def _set_dishes(self, state, owners, connections):
        N = state.X.shape[0]
        Z = np.zeros((N, owners.size), dtype=np.int8)
        for k in range(owners.size):
            Z[:, k] = compute_reachability(connections[:, k], owners[k])
        state.Z = Z
        state.n_features = owners.size
        state.stats["owners"] = np.ascontiguousarray(owners)
        state.stats["connections"] = np.ascontiguousarray(connections)

    def _refresh(self, state) -> None:
        K = state.n_features
        Zf = state.Z.astype(float)
        gram = Zf.T @ Zf
        Minv = np.zeros((K, K))
        logdet = _full_inverse(gram, K, state.sigma_x**2 / state.sigma_a**2, Minv)
        state.stats.update(
            Minv=Minv,
            logdet=float(logdet),
            cross=np.ascontiguousarray(Zf.T @ state.X),
            sq_norm=float(np.sum(state.X**2)),
        )

    def _prior_links(self, state, rng):
        """One dish's links drawn from the prior, ``c_m ~ a_m.``."""
        cum = state.stats["cum_proximity"]
        u = rng.random(cum.shape[0]) * cum[:, -1]
        return np.minimum((cum <= u[:, None]).sum(axis=1), cum.shape[0] - 1).astype(np.int64)

    def _log_lik(self, state, Z):
        Zf = Z.astype(float)
        N, D = state.X.shape
        return log_marginal_likelihood_from_stats(
            Zf.T @ Zf, Zf.T @ state.X, state.stats["sq_norm"], N, D, state.sigma_x,
            state.sigma_a,
        )

    # -- the sweep ------------------------------------------------------------------------
    def sweep(self, state: FeatureState, rng) -> None:
        st = state.stats
        if state.n_features:
            st["logdet"] = float(
                sweep_connections(
                    state.X, state.Z, st["connections"], st["owners"], state.n_features,
                    st["proximity"], st["cum_proximity"], st["Minv"], st["logdet"],
                    st["cross"], st["sq_norm"], state.sigma_x, state.sigma_a, rng,
                )
            )
        self._sweep_ownership(state, rng)

    def _sweep_ownership(self, state, rng):
        st = state.stats
        N = state.X.shape[0]
        proposals = rng.poisson(state.alpha / st["h"])
        changed = False
        current = None
        for i in range(N):
            owned = np.flatnonzero(st["owners"] == i)
            if proposals[i] == owned.size:
                continue
            if current is None:
                current = self._log_lik(state, state.Z)
            owners, connections, Z = st["owners"], st["connections"], state.Z
            if proposals[i] > owned.size:
                n_new = proposals[i] - owned.size
                new_links = np.stack([self._prior_links(state, rng) for _ in range(n_new)], 1)
                new_Z = np.stack(
                    [compute_reachability(new_links[:, j], i) for j in range(n_new)], 1
                ).astype(np.int8)
                owners = np.concatenate([owners, np.full(n_new, i, dtype=np.int64)])
                connections = np.concatenate([connections, new_links], axis=1)
                Z = np.concatenate([Z, new_Z], axis=1)
            else:
                drop = rng.choice(owned, size=owned.size - proposals[i], replace=False)
                keep = np.setdiff1d(np.arange(owners.size), drop)
                owners, connections, Z = owners[keep], connections[:, keep], Z[:, keep]
            proposed = self._log_lik(state, Z)
            if np.log(rng.random()) < proposed - current:
                state.Z = np.ascontiguousarray(Z)
                state.n_features = owners.size
                st["owners"] = np.ascontiguousarray(owners)
                st["connections"] = np.ascontiguousarray(connections)
                current = proposed
                changed = True
        if changed:
            self._refresh(state)

    # -- what the estimator's loop asks for -----------------------------------------------
    def alpha_rate(self, state) -> float:
        """``sum_i 1 / h_i``, the rate of alpha's Gamma conditional (eq. 32)."""
        return float(np.sum(1.0 / state.stats["h"]))

    def sufficient_statistics(self, state):
        Zf = state.Z.astype(float)
        return Zf.T @ Zf, Zf.T @ state.X

    def compact(self, state, keep) -> None:  # every owned dish is active: nothing to drop
        return None
