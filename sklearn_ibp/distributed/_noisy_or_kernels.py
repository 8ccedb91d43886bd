"""Numba kernels of one shard of the data-parallel noisy-or sampler (seed 000 sec. 5.1).

Shard variants of the serial kernels of :class:`~sklearn_ibp.solvers.MetropolisGibbs`
(:mod:`sklearn_ibp.solvers._metropolis_kernels`) and of the leaky noisy-or's ``A`` sweep
(:mod:`sklearn_ibp.likelihoods._leaky_noisy_or_kernels`):

* the IBP prior of ``z_nk`` counts over ``n_total`` rows (all shards), not the shard's;
  ``counts`` holds the others' counts at the last synchronisation plus the shard's own;
* a shard without the token may only drop unique features (:func:`drop_unique_features`,
  Algorithm 13's move with no new feature proposed);
* ``a_kd`` has its own prior log odds (the cavity ``eta^{-p}_kd``), and the sweep returns
  the conditional probabilities it drew from (Rao-Blackwellised tilted marginals).

The serial kernels are untouched; the tests check that these reduce to them.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..likelihoods._leaky_noisy_or_kernels import log_prob_one_table
from ..likelihoods._observation_kernels import (
    OBSERVE_NOISY_OR,
    _entry_log_likelihood,
    row_log_likelihood,
)
from ..solvers._hierarchy_kernels import feature_proposal, log_prior_feature
from ..solvers._metropolis_kernels import PROPOSE_DATA, unique_features_move
from ..solvers._shared_kernels import draw_binary, random_order

__all__ = ["drop_unique_features", "refresh_counts", "shard_rows", "sweep_features_cavity",
           "table_counts"]


@njit(cache=True)
def shard_gibbs_shared_features(n, X, observed, Z, A, pred, counts, K, obs_kind, noise,
                                log_lik, order, rng, n_total, log_one):
    """:func:`~sklearn_ibp.solvers._metropolis_kernels.gibbs_shared_features` with the
    prior odds ``m_{-n,k} / (n_total - m_{-n,k})`` over all shards' rows (the same draws
    when ``n_total == X.shape[0]``, up to rounding), the likelihood of the flipped row
    from the entries feature ``k`` reaches only (``O(nnz(a_k))`` instead of ``O(D)``).
    For the noisy-or, ``log_one[c, d] = log(1 - eps lambda^c)`` (for ``c`` up to the
    largest count a row can reach) replaces the logarithms by look-ups."""
    D = X.shape[1]
    random_order(K, order, rng)
    for t in range(K):
        k = order[t]
        zk = Z[n, k]
        others = counts[k] - zk
        if others <= 0:
            continue
        sign = 1.0 - 2.0 * zk
        # Only the entries the feature reaches change: with sparse binary features (the
        # noisy-or's a_kd = 0 mostly) that is a few of the D terms.
        delta = 0.0
        for d in range(D):
            a = A[k, d]
            if a != 0.0 and observed[n, d]:
                if obs_kind == OBSERVE_NOISY_OR and X[n, d] > 0.5:
                    # log(1 - eps lambda^c) looked up at the integer counts c.
                    c = int(pred[n, d] + 0.5)
                    delta += log_one[c + (1 if sign > 0.0 else -1), d] - log_one[c, d]
                elif obs_kind == OBSERVE_NOISY_OR:
                    delta += sign * noise[1, d]  # log P(x = 0) moves by log lambda
                else:
                    delta += (_entry_log_likelihood(obs_kind, X[n, d], pred[n, d] + sign * a,
                                                    noise, d)
                              - _entry_log_likelihood(obs_kind, X[n, d], pred[n, d], noise,
                                                      d))
        flip_lik = log_lik + delta
        log_odds = math.log(others) - math.log(n_total - others)
        if zk == 1:
            log_odds += log_lik - flip_lik
        else:
            log_odds += flip_lik - log_lik
        new = draw_binary(log_odds, rng)
        if new != zk:
            for d in range(X.shape[1]):
                pred[n, d] += sign * A[k, d]
            Z[n, k] = new
            counts[k] += new - zk
            log_lik = flip_lik
    return log_lik


@njit(cache=True)
def drop_unique_features(n, X, observed, Z, A, pred, counts, K, obs_kind, noise,
                         prior_kind, prior, rate, proposal_rate, k_max, proposal, log_lik,
                         own, order, rows, children, base, rng):
    """Algorithm 13's move on row ``n``'s unique features with no new one proposed: the
    shard without the token may drop features but not create them (sec. 5.1).

    The ratio is that of :func:`~sklearn_ibp.solvers._metropolis_kernels.
    unique_features_move` when its Poisson draws ``K_new = 0``: ``(rate /
    proposal_rate)^(-K_own)`` times the likelihood ratio (and, with ``PROPOSE_DATA``,
    ``q(a) / G_0(a)`` of the dropped values). Returns the row's log-likelihood.
    """
    D = X.shape[1]
    n_own = 0
    for k in range(K):
        if Z[n, k] == 1 and counts[k] == 1:
            own[n_own] = k
            n_own += 1
    if n_own == 0 or n_own > k_max:
        return log_lik
    log_accept = -n_own * (math.log(rate) - math.log(proposal_rate))
    for d in range(D):
        base[0, d] = pred[n, d]
    for j in range(n_own):
        for d in range(D):
            base[0, d] -= A[own[j], d]
    log_accept -= log_lik
    rows[0] = n
    children[0] = 1
    if proposal == PROPOSE_DATA:
        random_order(n_own, order, rng)
        for t in range(n_own):
            k = own[order[t]]
            log_q = feature_proposal(False, prior_kind, prior, obs_kind, noise, X,
                                     observed, rows, 1, children, base, A[k], rng)
            log_accept -= log_prior_feature(prior_kind, prior, A[k]) - log_q
            for d in range(D):
                base[0, d] += A[k, d]
        for j in range(n_own):
            for d in range(D):
                base[0, d] -= A[own[j], d]
    new_lik = row_log_likelihood(obs_kind, X[n], observed[n], base[0], noise)
    log_accept += new_lik
    if not (log_accept >= 0.0 or rng.random() < math.exp(log_accept)):
        return log_lik
    for j in range(n_own):
        k = own[j]
        Z[n, k] = 0
        counts[k] = 0
    for d in range(D):
        pred[n, d] = base[0, d]
    return new_lik


@njit(cache=True, nogil=True)
def shard_rows(start, row_order, X, observed, Z, A, pred, counts, K, obs_kind, noise,
               prior_kind, prior, rate, proposal_rate, k_max, proposal, allow_new, n_total,
               rng):
    """Rows ``row_order[start:]`` of one sweep of Algorithm 13 on a shard, in place.

    As :func:`~sklearn_ibp.solvers._metropolis_kernels.metropolis_rows`, but the prior
    counts are ``counts`` (others' plus own) over ``n_total`` rows, new features are
    proposed only when ``allow_new`` (the token holder; the others run
    :func:`drop_unique_features`), and dead slots are not compacted (feature ``k`` must
    keep its index within a round). Returns ``(K, next)``; ``next < len(row_order)`` when
    the next row could need more slots than are free.
    """
    N, D = X.shape
    cap = Z.shape[1]
    own = np.empty(cap, dtype=np.int64)
    order = np.empty(cap, dtype=np.int64)
    rows = np.zeros(1, dtype=np.int64)
    children = np.ones(1, dtype=np.int64)
    base = np.empty((1, D))
    if obs_kind == OBSERVE_NOISY_OR:
        log_one = log_prob_one_table(noise, cap + 1)
    else:
        log_one = np.zeros((1, D))
    if start == 0:
        random_order(N, row_order, rng)
    for step in range(start, row_order.shape[0]):
        if allow_new and K + k_max > cap:
            return K, step
        n = row_order[step]
        log_lik = row_log_likelihood(obs_kind, X[n], observed[n], pred[n], noise)
        log_lik = shard_gibbs_shared_features(n, X, observed, Z, A, pred, counts, K,
                                              obs_kind, noise, log_lik, order, rng,
                                              n_total, log_one)
        if allow_new:
            K, log_lik = unique_features_move(
                n, X, observed, Z, A, pred, counts, K, obs_kind, noise, prior_kind, prior,
                rate, proposal_rate, k_max, proposal, log_lik, own, order, rows, children,
                base, rng,
            )
        else:
            log_lik = drop_unique_features(
                n, X, observed, Z, A, pred, counts, K, obs_kind, noise, prior_kind, prior,
                rate, proposal_rate, k_max, proposal, log_lik, own, order, rows, children,
                base, rng,
            )
    return K, row_order.shape[0]


@njit(cache=True, nogil=True)
def sweep_features_cavity(A, counts, X, observed, feature_ptr, feature_rows, noise,
                          prior_log_odds, cond_log_odds, touched, rng):
    """One Gibbs sweep over every binary ``a_kd`` with prior log odds
    ``prior_log_odds[k, d]``, in place; ``cond_log_odds[k, d]`` gets the log odds of the
    conditional probability that ``a_kd = 1`` it was drawn from (the probability itself
    is its sigmoid; log odds keep the precision where it is within 1e-16 of 0 or 1), and
    ``touched[k, d]`` is set to 1 when some observed row with ``z_nk = 1`` entered it
    (otherwise the conditional is the prior).

    As :func:`~sklearn_ibp.likelihoods._leaky_noisy_or_kernels.sweep_noisy_or_features`
    (same draws when every prior log odds is ``logit(p_a)``); ``counts`` is ``Z A``.
    """
    n_features, n_dims = A.shape
    log_one = log_prob_one_table(noise, n_features)
    log_odds = np.empty(n_dims)
    change = np.empty(n_dims, dtype=np.int64)
    for k in range(n_features):
        for d in range(n_dims):
            log_odds[d] = prior_log_odds[k, d]
        for i in range(feature_ptr[k], feature_ptr[k + 1]):
            n = feature_rows[i]
            for d in range(n_dims):
                if not observed[n, d]:
                    continue
                touched[k, d] = 1
                if X[n, d] > 0.5:
                    others = counts[n, d] - (1 if A[k, d] > 0.5 else 0)
                    log_odds[d] += log_one[others + 1, d] - log_one[others, d]
                else:
                    log_odds[d] += noise[1, d]
        for d in range(n_dims):
            old = 1 if A[k, d] > 0.5 else 0
            if log_odds[d] >= 0.0:
                p_one = 1.0 / (1.0 + math.exp(-log_odds[d]))
            else:
                odds = math.exp(log_odds[d])
                p_one = odds / (1.0 + odds)
            cond_log_odds[k, d] = log_odds[d]
            new = 1 if rng.random() < p_one else 0
            A[k, d] = new
            change[d] = new - old
        for i in range(feature_ptr[k], feature_ptr[k + 1]):
            n = feature_rows[i]
            for d in range(n_dims):
                counts[n, d] += change[d]


@njit(cache=True, nogil=True)
def refresh_counts(Z, A, K, pred, counts):
    """``pred = Z[:, :K] A[:K]`` (float64) and ``counts``, the same as int64, without the
    GIL (the serial :func:`~sklearn_ibp.solvers._metropolis_kernels.refresh_prediction`
    holds it, and the shards of the thread backend would queue on it)."""
    for i in range(Z.shape[0]):
        for d in range(pred.shape[1]):
            pred[i, d] = 0.0
        for k in range(K):
            if Z[i, k] != 0:
                for d in range(pred.shape[1]):
                    pred[i, d] += A[k, d]
        for d in range(pred.shape[1]):
            counts[i, d] = int(pred[i, d] + 0.5)


@njit(cache=True, nogil=True)
def table_counts(X, observed, counts, length):
    """``(n0, n1)``: observed zeros and ones of ``X`` by their count (``length`` bins,
    larger than every count), without the GIL."""
    n_zero = np.zeros(length, dtype=np.int64)
    n_one = np.zeros(length, dtype=np.int64)
    for i in range(X.shape[0]):
        for d in range(X.shape[1]):
            if observed[i, d]:
                if X[i, d] > 0.5:
                    n_one[counts[i, d]] += 1
                else:
                    n_zero[counts[i, d]] += 1
    return n_zero, n_one
