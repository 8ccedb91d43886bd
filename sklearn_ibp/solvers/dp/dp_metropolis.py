"""Metropolis-Hastings updates with partial Gibbs sweeps for non-conjugate DP mixtures.

Görür (2007) sec. 3.2.2, Algorithm 6 (Neal 2000's Algorithm 7): the state is the indicators
and the active components' parameters. Each sweep makes ``n_metropolis`` passes of
Metropolis-Hastings updates whose proposals come from the conditional prior, arranged so
that every proposal changes whether the row is a singleton:

* a row that shares its component proposes a new one with parameters from ``G_0``,
  accepted with probability ``min(1, alpha / (N - 1) F(x_i | phi*) / F(x_i | phi_{c_i}))``;
* a singleton proposes an existing component ``k`` with probability ``n_{-i,k} / (N - 1)``,
  accepted with probability ``min(1, (N - 1) / alpha F(x_i | phi_k) / F(x_i | phi_{c_i}))``.

Eqs. 3.35-3.36 of the converted thesis print the two factors ``alpha / (N - 1)`` and
``(N - 1) / alpha`` the other way round; detailed balance between "joins ``k``" (prior
weight ``n_{-i,k}``) and "alone with ``phi*``" (prior weight ``alpha G_0(phi*)``) fixes them
as above (Neal 2000, sec. 7), and the exact-posterior test fails with the printed ones.

Then one partial Gibbs pass moves each non-singleton row among the existing components
(``P(c_i = k) ~ n_{-i,k} F(x_i | phi_k)``), and every component's parameters are drawn from
their posterior (eq. 3.31).
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
from sklearn.utils._param_validation import Interval

from ._dp_gaussian_kernels import N_SLOTS, POS
from ._dp_metropolis_kernels import metropolis_pass_gaussian, partial_gibbs_gaussian
from ._dp_neal import GenericSlots, NealDPSolver, PriorPool, draw_index_py

__all__ = ["MetropolisDP"]


class MetropolisDP(NealDPSolver):
    """Neal's Algorithm 7 (Görür 2007 Algorithm 6, eqs. 3.35-3.36 with the factors fixed).

    Parameters
    ----------
    n_metropolis : int, default=1
        Metropolis-Hastings passes over the indicators per sweep (Neal's ``R``), before
        the partial Gibbs pass.

    Works with any base with ``sample_prior``, ``log_likelihood`` and ``sample_posterior``;
    Gaussian components run in numba kernels, any other base in a Python loop. ``alpha``
    is read from the state, never updated here.
    """

    name = "metropolis"

    _parameter_constraints: dict = {
        "n_metropolis": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, n_metropolis=1):
        self.n_metropolis = n_metropolis

    @staticmethod
    def _log_ratio_new(alpha, n_rows):
        """``log(alpha / (N - 1))``: the prior-and-proposal factor of a move to a new
        component (its negative for a singleton's move to an existing one)."""
        return float(np.log(alpha / (n_rows - 1.0))) if n_rows > 1 else 0.0

    def _sweep_gaussian(self, state, base, rng):
        X = state.X
        N, D = X.shape
        slots = self._gaussian_slots(state, 1)
        labels = state.labels.copy()
        pool = PriorPool(D)
        aux_chol = np.zeros((D, D))
        log_ratio_new = self._log_ratio_new(float(state.alpha), N)
        for _ in range(int(self.n_metropolis)):
            order = rng.permutation(N).astype(np.int64)
            slots.ctr[POS] = 0
            pool.refill(base, N, rng, slots.ctr)
            slots.run(lambda a, _, order=order: metropolis_pass_gaussian(
                X, labels, order, a["counts"], a["means"], a["precisions"], a["chols"],
                a["half_logdets"], a["free"], pool.means, pool.precisions, log_ratio_new,
                slots.ctr, aux_chol, rng,
            ), refill=lambda: pool.refill(base, N - slots.ctr[POS], rng, slots.ctr))
        order = rng.permutation(N).astype(np.int64)
        a = slots.arrays
        n_slots = int(slots.ctr[N_SLOTS])
        partial_gibbs_gaussian(X, labels, order, a["counts"], a["means"], a["chols"],
                               a["half_logdets"], n_slots, np.empty(n_slots), rng)
        K, params = slots.finish(labels)
        self._update_parameters(state, base, rng, labels, K, params)

    def _sweep_generic(self, state, base, rng):
        X = state.X
        N = X.shape[0]
        slots = GenericSlots(state.labels, state.n_clusters, state.params)
        labels = state.labels.copy()
        log_ratio_new = self._log_ratio_new(float(state.alpha), N)
        # The kernels' algorithm in Python, drawing from rng in the same order.
        for _ in range(int(self.n_metropolis)):
            order = rng.permutation(N)
            pool = base.sample_prior(N, rng)
            q = 0
            for i in order:
                x = X[i]
                k = labels[i]
                if slots.counts[k] > 1:
                    proposal = {name: v[q : q + 1] for name, v in pool.items()}
                    q += 1
                    log_accept = (log_ratio_new + base.log_likelihood(x[None], proposal)[0, 0]
                                  - base.log_likelihood(x[None], slots.view([k]))[0, 0])
                    if np.log(rng.random()) < log_accept:
                        c = slots.take()
                        slots.set(c, proposal)
                        slots.counts[k] -= 1
                        slots.counts[c] = 1
                        labels[i] = c
                elif N > 1:
                    other = int(rng.random() * (N - 1))
                    other += other >= i
                    c = labels[other]
                    log_lik = base.log_likelihood(x[None], slots.view([c, k]))[0]
                    if np.log(rng.random()) < -log_ratio_new + log_lik[0] - log_lik[1]:
                        slots.counts[k] = 0
                        slots.release(k)
                        slots.counts[c] += 1
                        labels[i] = c
        for i in rng.permutation(N):
            k = labels[i]
            if slots.counts[k] < 2:
                continue
            slots.counts[k] -= 1
            n = slots.n_slots
            with np.errstate(divide="ignore"):
                log_weights = np.log(slots.counts[:n]) + slots.log_likelihood(base, X[i])
            c = draw_index_py(log_weights, rng)
            labels[i] = c
            slots.counts[c] += 1
        K, params = slots.finish(labels)
        self._update_parameters(state, base, rng, labels, K, params)
