"""Numba kernel of the no-gaps sampler (Görür 2007 Algorithm 4, eq. 3.33; MacEachern and
Müller 1998; Neal 2000's Algorithm 4) for Gaussian components."""

import math

from numba import njit

from ...likelihoods._conditionally_conjugate_kernels import cholesky_lower
from ._dp_gaussian_kernels import (
    DONE,
    N_ACTIVE,
    N_EMPTY,
    N_SLOTS,
    POOL_POS,
    POS,
    active_log_weights,
    copy_component,
    draw_index,
    gaussian_log_density,
    leave_next_row,
    take_slot,
)


@njit(cache=True)
def sweep_no_gaps_gaussian(X, labels, order, counts, means, precisions, chols, half_logdets,
                           free, empties, pool_means, pool_precisions, alpha, ctr,
                           log_weights, rng):
    """Update the indicators of ``order[ctr[POS]:]`` by eq. 3.33.

    The augmented state has ``N`` components, the ``K`` active ones labelled ``1 .. K`` and
    empty ones after them. Labels only matter through which component is ``K_- + 1``, the
    one a row may open, so slots are unordered and the empty components are a stack
    ``empties[:ctr[N_EMPTY]]`` (slots with no rows whose parameters are kept): its top is
    component ``K + 1``. Below the stack, empty components are untouched draws from
    ``G_0``, taken from the pool when first needed.

    For row ``i`` with ``K_-`` components among the other rows:

    * a singleton is left alone with probability ``K_- / (K_- + 1)`` (the chance that its
      label is not the last one); otherwise its own component is ``K_- + 1``;
    * otherwise component ``K_- + 1`` is the top of the stack;
    * ``c_i`` is drawn with weights ``n_{-i,k} F(x_i | phi_k)`` and
      ``alpha / (K_- + 1) F(x_i | phi_{K_- + 1})``. A singleton that moves leaves its
      component on top of the stack (it is now ``K + 1``); a row that opens ``K_- + 1``
      pops it.

    ``ctr[N_ACTIVE]`` holds ``K``. Returns a status of :mod:`._dp_gaussian_kernels`.
    """
    n_pool = pool_means.shape[0]
    while ctr[POS] < order.shape[0]:
        status, i, k_old, singleton = leave_next_row(order, labels, counts, ctr, 1, n_pool)
        if status != DONE:
            return status
        x = X[i]
        if singleton:
            k_minus = ctr[N_ACTIVE] - 1
            if rng.random() < k_minus / (k_minus + 1.0):
                counts[k_old] = 1
                ctr[POS] += 1
                continue
            candidate = k_old
            ctr[N_ACTIVE] -= 1
        else:
            k_minus = ctr[N_ACTIVE]
            if ctr[N_EMPTY] == 0:
                slot = take_slot(free, ctr)
                q = ctr[POOL_POS]
                ctr[POOL_POS] = q + 1
                hld = cholesky_lower(pool_precisions[q], chols[slot])
                copy_component(means, precisions, chols, half_logdets, slot, pool_means[q],
                               pool_precisions[q], chols[slot], hld)
                empties[0] = slot
                ctr[N_EMPTY] = 1
            candidate = empties[ctr[N_EMPTY] - 1]
        n_slots = ctr[N_SLOTS]
        active_log_weights(x, counts, means, chols, half_logdets, n_slots, log_weights)
        log_weights[n_slots] = math.log(alpha / (k_minus + 1.0)) + gaussian_log_density(
            x, means[candidate], chols[candidate], half_logdets[candidate])
        c = draw_index(log_weights, n_slots + 1, rng)
        if c == n_slots:
            if not singleton:
                ctr[N_EMPTY] -= 1
            labels[i] = candidate
            counts[candidate] = 1
            ctr[N_ACTIVE] += 1
        else:
            labels[i] = c
            counts[c] += 1
            if singleton:
                empties[ctr[N_EMPTY]] = k_old
                ctr[N_EMPTY] += 1
        ctr[POS] += 1
    return DONE

