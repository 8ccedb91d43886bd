"""The no-gaps sampler for non-conjugate DP mixtures (Algorithm 4).

Görür (2007) sec. 3.2.2, Algorithm 4 (MacEachern and Müller 1998; Neal 2000's Algorithm 4):
the state is augmented to ``N`` components whose labels ``1 .. K`` are the active ones with
no gaps; the empty components carry parameters too (draws from ``G_0`` until they are
looked at), so every weight is a likelihood evaluation and no integral over ``G_0`` is
needed. A row may join an active component or component ``K_- + 1`` with the weights of
eq. 3.33, ``n_{-i,k} F(x_i | phi_k)`` and ``alpha / (K_- + 1) F(x_i | phi_{K_- + 1})``; a
singleton row is left alone with probability ``K_- / (K_- + 1)`` (the chance that its label
is not the last). Parameters are redrawn after the indicators (eq. 3.31), the empty ones
from ``G_0``. It is exact but mixes slowly: one candidate new component serves every row
until one takes it (sec. 3.2.2).
"""

from __future__ import annotations

import numpy as np

from ._dp_gaussian_kernels import N_EMPTY
from ._dp_neal import GenericSlots, NealDPSolver, PriorPool, draw_index_py
from ._dp_no_gaps_kernels import sweep_no_gaps_gaussian

__all__ = ["NoGapsDP"]

_POOL = 32  # prior draws per refill: about one per new component per sweep is used


class NoGapsDP(NealDPSolver):
    """The no-gaps algorithm (Görür 2007 Algorithm 4, eq. 3.33).

    Works with any base with ``sample_prior``, ``log_likelihood`` and ``sample_posterior``;
    Gaussian components run in a numba kernel, any other base in a Python loop. ``alpha``
    is read from the state, never updated here.
    """

    name = "no_gaps"

    _parameter_constraints: dict = {}

    def __init__(self):
        pass

    def _sweep_gaussian(self, state, base, rng):
        X = state.X
        N, D = X.shape
        slots = self._gaussian_slots(state, 1)
        empties = slots.add("empties", (), np.int64)
        del empties  # kept in slots.arrays so that it grows with them
        order = rng.permutation(N).astype(np.int64)
        labels = state.labels.copy()
        pool = PriorPool(D)
        pool.refill(base, _POOL, rng, slots.ctr)
        slots.ctr[N_EMPTY] = 0
        slots.run(lambda a, log_weights: sweep_no_gaps_gaussian(
            X, labels, order, a["counts"], a["means"], a["precisions"], a["chols"],
            a["half_logdets"], a["free"], a["empties"], pool.means, pool.precisions,
            float(state.alpha), slots.ctr, log_weights, rng,
        ), n_extra=1, refill=lambda: pool.refill(base, _POOL, rng, slots.ctr))
        K, params = slots.finish(labels)
        self._update_parameters(state, base, rng, labels, K, params)

    def _sweep_generic(self, state, base, rng):
        # The kernel's algorithm in Python, drawing from rng in the same order.
        X = state.X
        slots = GenericSlots(state.labels, state.n_clusters, state.params)
        labels = state.labels.copy()
        alpha = float(state.alpha)
        n_active = state.n_clusters
        empties = []  # slots of empty components kept in the state; the top is K + 1
        order = rng.permutation(X.shape[0])
        pool = base.sample_prior(_POOL, rng)
        q = 0
        for i in order:
            if q >= _POOL:
                pool = base.sample_prior(_POOL, rng)
                q = 0
            k_old = labels[i]
            slots.counts[k_old] -= 1
            singleton = slots.counts[k_old] == 0
            if singleton:
                k_minus = n_active - 1
                if rng.random() < k_minus / (k_minus + 1.0):
                    slots.counts[k_old] = 1
                    continue
                candidate = k_old
                n_active -= 1
            else:
                k_minus = n_active
                if not empties:
                    slot = slots.take()
                    slots.set(slot, pool, q)
                    q += 1
                    empties.append(slot)
                candidate = empties[-1]
            n = slots.n_slots
            log_lik = slots.log_likelihood(base, X[i])
            with np.errstate(divide="ignore"):
                log_weights = np.log(slots.counts[:n]) + log_lik
            log_weights = np.append(log_weights,
                                    np.log(alpha / (k_minus + 1.0)) + log_lik[candidate])
            c = draw_index_py(log_weights, rng)
            if c == n:
                if not singleton:
                    empties.pop()
                c = candidate
                n_active += 1
            elif singleton:
                empties.append(k_old)
            labels[i] = c
            slots.counts[c] += 1
        K, params = slots.finish(labels)
        self._update_parameters(state, base, rng, labels, K, params)
