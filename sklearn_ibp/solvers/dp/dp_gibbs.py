"""Gibbs sampling of a DP mixture's indicators and component parameters (Algorithm 2).

Görür (2007) sec. 3.2.1, Algorithm 2 (West et al. 1994; Bush and MacEachern 1996; Neal
2000's Algorithm 2): the state is the indicators and the active components' parameters.
Each indicator is drawn from eq. 3.30,

* ``P(c_i = k) ~ n_{-i,k} F(x_i | phi_k)`` for the components other rows use,
* ``P(c_i = new) ~ alpha int F(x_i | phi) dG_0(phi)`` (eq. 3.29),

where a singleton's component is dropped before its row is updated and a new component's
parameters are drawn from ``G_0^i``, the posterior given ``x_i`` alone (eq. 3.28); then every
component's parameters are drawn from their posterior given their rows (eq. 3.31). The
integral must be exact, so the sampler serves conjugate bases only.
"""

from __future__ import annotations

import numpy as np

from ._dp_gaussian_kernels import ROW, SLOT
from ._dp_gibbs_kernels import sweep_gibbs_gaussian
from ._dp_neal import GenericSlots, NealDPSolver, draw_index_py

__all__ = ["GibbsDP"]


def _same_hyperparameters(a, b) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


class GibbsDP(NealDPSolver):
    """Algorithm 2 of Görür (2007) sec. 3.2.1: indicators and component parameters.

    Works with any base with an exact ``log_prior_predictive`` (eq. 3.29),
    ``sample_posterior`` and ``log_likelihood``; Gaussian components (parameters
    ``"means"`` and ``"precisions"``) run in a numba kernel, any other base in a Python
    loop. ``alpha`` is read from the state, never updated here.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ibp.likelihoods.conditionally_conjugate import (
    ...     ConditionallyConjugateBase)
    >>> X = np.random.default_rng(0).standard_normal((20, 2))
    >>> rng = np.random.default_rng(0)
    >>> base = ConditionallyConjugateBase(); base.initialize(X, rng)
    >>> solver = GibbsDP()
    >>> state = solver.initialize(X, np.zeros(20, dtype=int), 1.0, base, rng)
    >>> solver.sweep(state, base, rng)
    >>> int(state.labels.max()) + 1 == state.n_clusters
    True
    """

    name = "gibbs"
    bases = ("conjugate",)

    _parameter_constraints: dict = {}

    def __init__(self):
        pass

    @staticmethod
    def _log_prior_predictive(state, base):
        """``log int F(x_i | phi) dG_0(phi)`` of every row, recomputed only when the base's
        hyperparameters differ from those it was computed with."""
        hyper = base.hyperparameters()
        cached = state.stats.get("prior_predictive")
        if cached is not None and _same_hyperparameters(cached[0], hyper):
            return cached[1]
        values = np.ascontiguousarray(base.log_prior_predictive(state.X), dtype=np.float64)
        state.stats["prior_predictive"] = (hyper, values)
        return values

    def _sweep_gaussian(self, state, base, rng):
        X = state.X
        slots = self._gaussian_slots(state)
        log_prior_predictive = self._log_prior_predictive(state, base)
        order = rng.permutation(X.shape[0]).astype(np.int64)
        labels = state.labels.copy()
        log_alpha = float(np.log(state.alpha))

        def posterior():
            i = int(slots.ctr[ROW])
            draw = base.sample_posterior(X[i : i + 1], rng)
            slots.set_component(int(slots.ctr[SLOT]), draw["means"][0], draw["precisions"][0])

        slots.run(lambda a, log_weights: sweep_gibbs_gaussian(
            X, labels, order, a["counts"], a["means"], a["chols"], a["half_logdets"],
            a["free"], log_prior_predictive, log_alpha, slots.ctr, log_weights, rng,
        ), n_extra=1, posterior=posterior)
        K, params = slots.finish(labels)
        self._update_parameters(state, base, rng, labels, K, params)

    def _sweep_generic(self, state, base, rng):
        X = state.X
        slots = GenericSlots(state.labels, state.n_clusters, state.params)
        log_prior_predictive = self._log_prior_predictive(state, base)
        labels = state.labels.copy()
        log_alpha = float(np.log(state.alpha))
        for i in rng.permutation(X.shape[0]):
            k_old = labels[i]
            slots.counts[k_old] -= 1
            if slots.counts[k_old] == 0:
                slots.release(k_old)
            n = slots.n_slots
            with np.errstate(divide="ignore"):
                log_weights = np.log(slots.counts[:n]) + slots.log_likelihood(base, X[i])
            log_weights = np.append(log_weights, log_alpha + log_prior_predictive[i])
            c = draw_index_py(log_weights, rng)
            if c < n:
                labels[i] = c
            else:
                c = slots.take()
                slots.set(c, base.sample_posterior(X[i : i + 1], rng))
                labels[i] = c
            slots.counts[c] += 1
        K, params = slots.finish(labels)
        self._update_parameters(state, base, rng, labels, K, params)
