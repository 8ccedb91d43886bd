"""Gibbs sampling with auxiliary components for non-conjugate DP mixtures.

Görür (2007) sec. 3.2.2, Algorithm 5 (Neal 2000's Algorithm 8): the state is the indicators
and the active components' parameters. For each row, ``m`` auxiliary components stand for
the infinitely many empty ones: a singleton's own component is one of them, the others are
fresh draws from ``G_0``. The row joins an existing component ``k`` with weight
``n_{-i,k} F(x_i | phi_k)`` or auxiliary ``j`` with weight ``(alpha / m) F(x_i | phi_j)``
(eq. 3.34); unused auxiliaries are discarded. After the indicators every component's
parameters are drawn from their posterior (eq. 3.31). The algorithm is exact for every
``m >= 1``; the thesis uses ``m = 1``.

For the conditionally conjugate Gaussian base, sec. 3.3.2 gives three schemes for the same
posterior (``scheme``):

* ``"both"`` (SampleBoth): auxiliaries draw mean and precision from ``G_0``;
* ``"mu"`` (SampleMu): only the means are represented during the indicator updates; the
  precision is integrated out given the mean and the cluster's other rows (eq. 3.66), and
  the auxiliaries draw only a mean. The parameter step draws ``S | mu`` then ``mu | S``;
* ``"s"`` (SampleS): only the precisions are represented; the mean is integrated out
  (eq. 3.67), the auxiliaries draw only a precision, and the parameter step draws
  ``mu | S`` then ``S | mu``.

Each of those is a valid Markov chain on the indicators and the represented parameter: the
indicator update is Algorithm 8 applied to the model with the other parameter integrated
out, and the parameter step is data augmentation (draw the missing parameter from its
conditional, then the represented one given it).
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
from scipy.special import gammaln
from sklearn.utils._param_validation import Interval, StrOptions

from ...likelihoods._conditionally_conjugate_kernels import predictive_given_precision
from ._dp_auxiliary_kernels import sweep_auxiliary_both, sweep_auxiliary_mu, sweep_auxiliary_s
from ._dp_gaussian_kernels import POOL_POS, POS
from ._dp_neal import GenericSlots, NealDPSolver, PriorPool, draw_index_py, is_gaussian

__all__ = ["AuxiliaryDP"]

_SCHEME_METHODS = ("log_predictive_given_mean", "log_predictive_given_precision",
                   "sample_means_given_precisions", "sample_precisions_given_means",
                   "sample_prior_means", "sample_prior_precisions", "cluster_statistics")


class AuxiliaryDP(NealDPSolver):
    """Neal's Algorithm 8 (Görür 2007 Algorithm 5, eq. 3.34) with SampleBoth, SampleMu and
    SampleS (sec. 3.3.2).

    Parameters
    ----------
    n_auxiliary : int, default=1
        Number ``m`` of auxiliary components per row update (the thesis's ``zeta``; it
        uses 1).
    scheme : {"both", "mu", "s"}, default="both"
        Which component parameters represent the auxiliaries (see the module docstring).
        ``"mu"`` and ``"s"`` need the conditionally conjugate base; ``"both"`` works with
        every base (Gaussian components run in a numba kernel, others in Python).
    """

    name = "auxiliary"

    _parameter_constraints: dict = {
        "n_auxiliary": [Interval(Integral, 1, None, closed="left")],
        "scheme": [StrOptions({"both", "mu", "s"})],
    }

    def __init__(self, n_auxiliary=1, scheme="both"):
        self.n_auxiliary = n_auxiliary
        self.scheme = scheme

    def _check_scheme(self, base):
        if self.scheme != "both":
            missing = [m for m in _SCHEME_METHODS if not hasattr(base, m)]
            if missing:
                raise ValueError(
                    f"scheme={self.scheme!r} needs the conditionally conjugate base (a base "
                    f"with {', '.join(missing)}); {getattr(base, 'name', type(base).__name__)!r}"
                    " has not. Use scheme='both'."
                )

    def initialize(self, X, labels, alpha, base, rng):
        """A chain state from the partition ``labels`` (see :class:`NealDPSolver`)."""
        self._validate_params()
        self._check_scheme(base)
        return super().initialize(X, labels, alpha, base, rng)

    def sweep(self, state, base, rng) -> None:
        """One pass of eq. 3.34 over the rows in random order, then the parameters."""
        if self.scheme == "both":
            super().sweep(state, base, rng)
            return
        self._check_scheme(base)
        if not is_gaussian(state.params):
            raise ValueError(f"scheme={self.scheme!r} needs Gaussian components.")
        if self.scheme == "mu":
            self._sweep_mu(state, base, rng)
        else:
            self._sweep_s(state, base, rng)

    # -- SampleBoth --------------------------------------------------------------------
    def _sweep_gaussian(self, state, base, rng):
        X = state.X
        N, D = X.shape
        m = int(self.n_auxiliary)
        slots = self._gaussian_slots(state, m)
        order = rng.permutation(N).astype(np.int64)
        labels = state.labels.copy()
        pool = PriorPool(D)
        pool.refill(base, N * m, rng, slots.ctr)
        aux_chols = np.zeros((m, D, D))
        aux_half_logdets = np.zeros(m)
        aux_index = np.zeros(m, dtype=np.int64)
        log_alpha = float(np.log(state.alpha))
        slots.run(lambda a, log_weights: sweep_auxiliary_both(
            X, labels, order, a["counts"], a["means"], a["precisions"], a["chols"],
            a["half_logdets"], a["free"], pool.means, pool.precisions, log_alpha, m,
            slots.ctr, log_weights, aux_chols, aux_half_logdets, aux_index, rng,
        ), n_extra=m, refill=lambda: pool.refill(base, (N - slots.ctr[POS]) * m, rng, slots.ctr))
        K, params = slots.finish(labels)
        self._update_parameters(state, base, rng, labels, K, params)

    def _sweep_generic(self, state, base, rng):
        # The kernel's algorithm in Python, drawing from rng in the same order.
        X = state.X
        N = X.shape[0]
        m = int(self.n_auxiliary)
        slots = GenericSlots(state.labels, state.n_clusters, state.params)
        labels = state.labels.copy()
        log_aux = float(np.log(state.alpha / m))
        order = rng.permutation(N)
        pool = base.sample_prior(N * m, rng)
        q = 0
        for i in order:
            x = X[i]
            k_old = labels[i]
            slots.counts[k_old] -= 1
            singleton = slots.counts[k_old] == 0
            n = slots.n_slots
            log_lik = slots.log_likelihood(base, x)
            with np.errstate(divide="ignore"):
                log_weights = np.log(slots.counts[:n]) + log_lik
            n_fresh = m - 1 if singleton else m
            fresh = {k: v[q : q + n_fresh] for k, v in pool.items()}
            q += n_fresh
            aux = [log_lik[k_old]] if singleton else []
            if n_fresh:
                aux.extend(base.log_likelihood(x[None, :], fresh)[0])
            c = draw_index_py(np.append(log_weights, log_aux + np.asarray(aux)), rng)
            if c < n:
                if singleton:
                    slots.release(k_old)
            elif singleton and c == n:
                c = k_old
            else:
                j = c - n - (1 if singleton else 0)
                c = k_old if singleton else slots.take()
                slots.set(c, fresh, j)
            labels[i] = c
            slots.counts[c] += 1
        K, params = slots.finish(labels)
        self._update_parameters(state, base, rng, labels, K, params)

    # -- SampleMu ----------------------------------------------------------------------
    def _sweep_mu(self, state, base, rng):
        X = state.X
        N, D = X.shape
        m = int(self.n_auxiliary)
        K = state.n_clusters
        slots = self._gaussian_slots(state, m)
        beta = float(base.beta)
        base_w = beta * np.asarray(base.W, dtype=float)
        base_w_chol = np.linalg.cholesky(base_w)
        w_chols = slots.add("w_chols", (D, D))
        log_constants = slots.add("log_constants", ())
        counts, _, scatter = base.cluster_statistics(X, state.labels, K,
                                                     slots.means[:K])
        L = np.linalg.cholesky(base_w + scatter)
        w_chols[:K] = L
        log_det = 2.0 * np.log(np.diagonal(L, axis1=1, axis2=2)).sum(axis=1)
        nu = beta + counts
        log_constants[:K] = (gammaln(0.5 * (nu + 1)) - gammaln(0.5 * (nu + 1 - D))
                             - 0.5 * D * np.log(np.pi) - 0.5 * log_det)
        order = rng.permutation(N).astype(np.int64)
        labels = state.labels.copy()
        pool, refill = _prior_pool("means", base.sample_prior_means, slots, N, m, rng)
        aux_index = np.zeros(m, dtype=np.int64)
        gamma_table = np.full(N + 2, np.nan)
        work = np.zeros((2, D))
        backup = np.zeros((D, D))
        log_alpha = float(np.log(state.alpha))

        slots.run(lambda a, log_weights: sweep_auxiliary_mu(
            X, labels, order, a["counts"], a["means"], a["w_chols"], a["log_constants"],
            a["free"], pool["means"], base_w_chol, beta, log_alpha, m, slots.ctr,
            log_weights, aux_index, gamma_table, work, backup, rng,
        ), n_extra=m, refill=refill)
        K, params = slots.finish(labels)
        # data augmentation: S | mu, then mu | S (the precisions are not represented)
        state.labels = labels
        state.n_clusters = int(K)
        precisions = base.sample_precisions_given_means(X, labels, K, params["means"], rng)
        means = base.sample_means_given_precisions(X, labels, K, precisions, rng)
        state.params = {"means": means, "precisions": precisions}

    # -- SampleS -----------------------------------------------------------------------
    def _sweep_s(self, state, base, rng):
        X = state.X
        N, D = X.shape
        m = int(self.n_auxiliary)
        K = state.n_clusters
        slots = self._gaussian_slots(state, m)
        R = np.ascontiguousarray(base.R, dtype=np.float64)
        xi = np.ascontiguousarray(base.xi, dtype=np.float64)
        R_inv = np.ascontiguousarray(np.linalg.inv(R))
        R_xi = np.ascontiguousarray(R @ xi)
        precision_invs = slots.add("precision_invs", (D, D))
        precision_invs[:K] = np.linalg.inv(slots.precisions[:K])
        sums = slots.add("sums", (D,))
        pred_means = slots.add("pred_means", (D,))
        pred_chols = slots.add("pred_chols", (D, D))
        pred_half_logdets = slots.add("pred_half_logdets", ())
        counts, cluster_sums, _ = base.cluster_statistics(X, state.labels, K)
        sums[:K] = cluster_sums
        work = np.zeros((4, D, D))
        precisions = slots.precisions
        for k in range(K):
            pred_half_logdets[k] = predictive_given_precision(
                precisions[k], precision_invs[k], counts[k], sums[k], R, R_xi, pred_means[k],
                pred_chols[k], work)
        order = rng.permutation(N).astype(np.int64)
        labels = state.labels.copy()
        pool, refill = _prior_pool("precisions", base.sample_prior_precisions, slots, N, m,
                                   rng)
        aux_invs = np.zeros((m, D, D))
        aux_chols = np.zeros((m, D, D))
        aux_half_logdets = np.zeros(m)
        aux_index = np.zeros(m, dtype=np.int64)
        y = np.zeros(D)
        backup_mean = np.zeros(D)
        backup_chol = np.zeros((D, D))
        log_alpha = float(np.log(state.alpha))

        slots.run(lambda a, log_weights: sweep_auxiliary_s(
            X, labels, order, a["counts"], a["precisions"], a["precision_invs"], a["sums"],
            a["pred_means"], a["pred_chols"], a["pred_half_logdets"], a["free"],
            pool["precisions"], xi, R, R_inv, R_xi, log_alpha, m, slots.ctr, log_weights,
            aux_invs, aux_chols, aux_half_logdets, aux_index, work, y, backup_mean,
            backup_chol, rng,
        ), n_extra=m, refill=refill)
        K, params = slots.finish(labels)
        # data augmentation: mu | S, then S | mu (sample_posterior_all's order)
        self._update_parameters(state, base, rng, labels, K, params)


def _prior_pool(key, draw, slots, N, m, rng):
    """The pool of base draws the auxiliary components of a SampleMu/SampleS sweep are
    taken from: ``{key: draw(N m, rng)}``, and the ``refill`` that ``slots.run`` calls
    when it runs out (``m`` fresh draws for each row still to visit)."""
    pool = {key: np.ascontiguousarray(draw(N * m, rng))}

    def refill():
        pool[key] = np.ascontiguousarray(draw((N - slots.ctr[POS]) * m, rng))
        slots.ctr[POOL_POS] = 0

    return pool, refill
