"""Numba kernels of the approximate Gibbs IBP sampler (Görür 2007, sec. 4.2.2, Algorithm 12).

The state arrays are those of :mod:`._metropolis_kernels` (``Z``, ``A``, ``counts``,
``pred`` with spare capacity); the shared-feature pass is the same
(:func:`~._metropolis_kernels.gibbs_shared_features`). Only the unique features of a row
are handled differently: ``K_hat`` auxiliary features, the row's current unique ones and
fresh draws from the prior, of which a subset is drawn from its conditional (eq. 4.39).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ...likelihoods._observation_kernels import (
    draw_prior_feature,
    row_log_likelihood,
    row_log_likelihood_shifted,
)
from .._draw_kernels import draw_binary, draw_from_log_weights, random_order
from ._metropolis_kernels import compact_features, gibbs_shared_features, row_unique_features

#: Up to this many auxiliary features the subset is drawn exactly from the 2^K_hat
#: weights of eq. 4.39; beyond it by Gibbs scans over the auxiliary indicators.
MAX_ENUMERATED = 10
#: Gibbs scans over the auxiliary indicators when they are not enumerated.
AUXILIARY_SCANS = 3


@njit(cache=True)
def _enumerate_subsets(x, observed, base, aux, n_aux, log_on, log_off, obs_kind, noise,
                       current, weights, chosen):
    """Draw-ready log weights of every subset of ``aux[:n_aux]`` (eq. 4.39).

    Subsets are visited in Gray-code order, so each differs from the previous one by a
    single feature and the prediction ``current`` moves by one row of ``aux``;
    ``weights[g]`` holds the weight of the subset whose bit mask is ``g``.
    """
    D = x.shape[0]
    for d in range(D):
        current[d] = base[d]
    for j in range(n_aux):
        chosen[j] = 0
    ones = 0
    weights[0] = n_aux * log_off + row_log_likelihood(obs_kind, x, observed, current, noise)
    gray = 0
    for i in range(1, 1 << n_aux):
        bit = 0
        while ((i >> bit) & 1) == 0:
            bit += 1
        gray ^= 1 << bit
        sign = 1.0 if chosen[bit] == 0 else -1.0
        chosen[bit] = 1 - chosen[bit]
        ones += 1 if sign > 0.0 else -1
        for d in range(D):
            current[d] += sign * aux[bit, d]
        weights[gray] = (
            ones * log_on + (n_aux - ones) * log_off
            + row_log_likelihood(obs_kind, x, observed, current, noise)
        )


@njit(cache=True)
def auxiliary_features_step(n, X, observed, Z, A, pred, counts, K, obs_kind, noise,
                            prior_kind, prior, n_auxiliary, log_on, log_off, log_lik, own,
                            order, aux, chosen, weights, base, current, rng):
    """Row ``n``'s unique features by Algorithm 12 (eq. 4.39), in place.

    The row's unique features (``z_nk = 1``, ``m_{-n,k} = 0``) take the first of
    ``K_hat = max(n_auxiliary, n_unique)`` auxiliary slots and the rest are drawn from the
    prior ``G_0``. Each auxiliary feature is on with prior probability
    ``exp(log_on) = (alpha/n_auxiliary) / (N + alpha/n_auxiliary)``, independently; the
    subset is drawn from its conditional given the row, exactly from the ``2^K_hat``
    weights when ``K_hat <= MAX_ENUMERATED``, else by ``AUXILIARY_SCANS`` Gibbs scans
    from the current subset (both leave the same conditional invariant). The chosen
    auxiliary features replace the row's unique ones in new slots from ``K``.

    ``aux`` (>= K_hat, D), ``chosen`` (>= K_hat) int64, ``weights`` (2^MAX_ENUMERATED),
    ``own``/``order`` (cap) int64 and ``base``/``current`` (D,) are work buffers.
    Returns ``(K, log_lik)``; replaced slots are left dead (``counts == 0``).
    """
    D = X.shape[1]
    n_own = row_unique_features(Z, n, counts, K, own)
    n_aux = max(n_auxiliary, n_own)
    for d in range(D):
        base[d] = pred[n, d]
    for j in range(n_own):
        k = own[j]
        for d in range(D):
            aux[j, d] = A[k, d]
            base[d] -= A[k, d]
    for j in range(n_own, n_aux):
        draw_prior_feature(prior_kind, prior, aux[j], rng)
    x = X[n]
    obs = observed[n]
    if n_aux <= MAX_ENUMERATED:
        _enumerate_subsets(x, obs, base, aux, n_aux, log_on, log_off, obs_kind, noise,
                           current, weights, chosen)
        mask = draw_from_log_weights(weights[: 1 << n_aux], rng)
        for j in range(n_aux):
            chosen[j] = (mask >> j) & 1
        for d in range(D):
            current[d] = base[d]
        for j in range(n_aux):
            if chosen[j] == 1:
                for d in range(D):
                    current[d] += aux[j, d]
        new_lik = row_log_likelihood(obs_kind, x, obs, current, noise)
    else:
        for d in range(D):
            current[d] = pred[n, d]
        for j in range(n_aux):
            chosen[j] = 1 if j < n_own else 0
        new_lik = log_lik
        for _ in range(AUXILIARY_SCANS):
            random_order(n_aux, order, rng)
            for t in range(n_aux):
                j = order[t]
                sign = 1.0 - 2.0 * chosen[j]
                flip_lik = row_log_likelihood_shifted(obs_kind, x, obs, current, aux[j],
                                                      sign, noise)
                log_odds = log_on - log_off
                if chosen[j] == 1:
                    log_odds += new_lik - flip_lik
                else:
                    log_odds += flip_lik - new_lik
                new = draw_binary(log_odds, rng)
                if new != chosen[j]:
                    chosen[j] = new
                    new_lik = flip_lik
                    for d in range(D):
                        current[d] += sign * aux[j, d]
    # The chosen auxiliary features replace the unique ones.
    for j in range(n_own):
        k = own[j]
        Z[n, k] = 0
        counts[k] = 0
    for j in range(n_aux):
        if chosen[j] == 1:
            for i in range(X.shape[0]):
                Z[i, K] = 0
            Z[n, K] = 1
            counts[K] = 1
            for d in range(D):
                A[K, d] = aux[j, d]
            K += 1
    for d in range(D):
        pred[n, d] = current[d]
    return K, new_lik


@njit(cache=True)
def approximate_gibbs_rows(start, row_order, X, observed, Z, A, pred, counts, K, obs_kind,
                           noise, prior_kind, prior, alpha, n_auxiliary, rng):
    """Rows ``row_order[start:]`` of one sweep of Algorithm 12, in place.

    For each row: Gibbs for the shared features, then :func:`auxiliary_features_step`.
    Draws the row order when ``start == 0`` and returns ``(K, next)`` as
    :func:`~._metropolis_kernels.metropolis_rows` does (stops early when the next row
    could need more than the free slots; compacts when done).
    """
    N, D = X.shape
    cap = Z.shape[1]
    width = max(n_auxiliary, cap)
    own = np.empty(cap, dtype=np.int64)
    order = np.empty(width, dtype=np.int64)
    aux = np.empty((width, D))
    chosen = np.zeros(width, dtype=np.int64)
    weights = np.empty(1 << MAX_ENUMERATED)
    base = np.empty(D)
    current = np.empty(D)
    # Prior of one auxiliary feature of a row: the finite model's (alpha/K)/(N + alpha/K).
    rate = alpha / n_auxiliary
    log_on = math.log(rate) - math.log(N + rate)
    log_off = math.log(N) - math.log(N + rate)
    if start == 0:
        random_order(N, row_order, rng)
    for step in range(start, row_order.shape[0]):
        n = row_order[step]
        n_own = row_unique_features(Z, n, counts, K, own)
        if K + max(n_auxiliary, n_own) > cap:
            return K, step
        log_lik = row_log_likelihood(obs_kind, X[n], observed[n], pred[n], noise)
        log_lik = gibbs_shared_features(n, X, observed, Z, A, pred, counts, K, obs_kind,
                                        noise, log_lik, order, rng)
        K, log_lik = auxiliary_features_step(
            n, X, observed, Z, A, pred, counts, K, obs_kind, noise, prior_kind, prior,
            n_auxiliary, log_on, log_off, log_lik, own, order, aux, chosen, weights, base,
            current, rng,
        )
    return compact_features(Z, A, counts, K), row_order.shape[0]
