"""Numba kernels of the Metropolis-Hastings sampler with partial Gibbs updates (Görür 2007
Algorithm 6, eqs. 3.35-3.36; Neal 2000's Algorithm 7) for Gaussian components."""

import math

from numba import njit

from ...likelihoods._conditionally_conjugate_kernels import cholesky_lower
from ._dp_gaussian_kernels import (
    DONE,
    POOL_POS,
    POS,
    active_log_weights,
    copy_component,
    draw_index,
    gaussian_log_density,
    release_slot,
    row_status,
    take_slot,
)


@njit(cache=True)
def metropolis_pass_gaussian(X, labels, order, counts, means, precisions, chols,
                             half_logdets, free, pool_means, pool_precisions, log_ratio_new,
                             ctr, aux_chol, rng):
    """One Metropolis-Hastings update of each indicator in ``order[ctr[POS]:]``.

    The proposals come from the conditional prior, so the acceptance ratio is a ratio of
    likelihoods times the ratio of proposal probabilities (Neal 2000, sec. 7):

    * a row whose component other rows share proposes a new component with parameters
      drawn from ``G_0`` (the pool) and accepts with probability
      ``min(1, alpha / (N - 1) F(x_i | phi*) / F(x_i | phi_{c_i}))``;
    * a singleton proposes an existing component ``k`` with probability
      ``n_{-i,k} / (N - 1)`` (the component of another row drawn uniformly) and accepts
      with probability ``min(1, (N - 1) / alpha F(x_i | phi_k) / F(x_i | phi_{c_i}))``.

    (Eqs. 3.35 and 3.36 as converted carry these two factors the other way round; the ones
    here are Neal's, the only ones that satisfy detailed balance.) ``log_ratio_new`` is
    ``log(alpha / (N - 1))``; ``aux_chol`` (D, D) is scratch. Returns a status of
    :mod:`._dp_gaussian_kernels`.
    """
    N = order.shape[0]
    cap = counts.shape[0]
    n_pool = pool_means.shape[0]
    p = ctr[POS]
    while p < N:
        status = row_status(ctr, cap, 1, n_pool)
        if status != DONE:
            return status
        i = order[p]
        x = X[i]
        k = labels[i]
        if counts[k] > 1:
            q = ctr[POOL_POS]
            ctr[POOL_POS] = q + 1
            hld = cholesky_lower(pool_precisions[q], aux_chol)
            log_accept = (log_ratio_new + gaussian_log_density(x, pool_means[q], aux_chol, hld)
                          - gaussian_log_density(x, means[k], chols[k], half_logdets[k]))
            if math.log(rng.random()) < log_accept:
                slot = take_slot(free, ctr)
                copy_component(means, precisions, chols, half_logdets, slot, pool_means[q],
                               pool_precisions[q], aux_chol, hld)
                counts[k] -= 1
                counts[slot] = 1
                labels[i] = slot
        elif N > 1:
            other = int(rng.random() * (N - 1))
            if other >= i:
                other += 1
            c = labels[other]
            log_accept = (-log_ratio_new
                          + gaussian_log_density(x, means[c], chols[c], half_logdets[c])
                          - gaussian_log_density(x, means[k], chols[k], half_logdets[k]))
            if math.log(rng.random()) < log_accept:
                counts[k] = 0
                release_slot(free, ctr, k)
                counts[c] += 1
                labels[i] = c
        p += 1
        ctr[POS] = p
    return DONE


@njit(cache=True)
def partial_gibbs_gaussian(X, labels, order, counts, means, chols, half_logdets, n_slots,
                           log_weights, rng):
    """Gibbs updates of the indicators of non-singleton rows among the existing components
    only, ``P(c_i = k) ~ n_{-i,k} F(x_i | phi_k)`` (the last step of Algorithm 6 before the
    parameters); singletons are skipped."""
    for p in range(order.shape[0]):
        i = order[p]
        k = labels[i]
        if counts[k] < 2:
            continue
        counts[k] -= 1
        active_log_weights(X[i], counts, means, chols, half_logdets, n_slots, log_weights)
        c = draw_index(log_weights, n_slots, rng)
        labels[i] = c
        counts[c] += 1
