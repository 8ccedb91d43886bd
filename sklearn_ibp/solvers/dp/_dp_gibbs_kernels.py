"""Numba kernel of the Gibbs sampler with component parameters (Algorithm 2, Görür 2007
sec. 3.2.1; Neal 2000's Algorithm 2) for Gaussian components."""

from numba import njit

from ._dp_gaussian_kernels import (
    DONE,
    N_SLOTS,
    NEED_POSTERIOR,
    POOL_POS,
    POS,
    ROW,
    SLOT,
    active_log_weights,
    draw_index,
    leave_next_row,
    release_slot,
    take_slot,
)


@njit(cache=True)
def sweep_gibbs_gaussian(X, labels, order, counts, means, chols, half_logdets, free,
                         log_prior_predictive, log_alpha, ctr, log_weights, rng):
    """Update the indicators of ``order[ctr[POS]:]`` by eq. 3.30.

    A row that leaves a singleton drops its component (its slot is freed); the row then
    joins component ``k`` with weight ``n_{-i,k} N(x_i | mu_k, S_k^{-1})`` or a new one
    with weight ``alpha int F(x_i | theta) dG_0(theta)`` (``log_prior_predictive[i]``, the
    base's exact prior predictive). A new component's parameters come from the base's
    posterior given ``x_i``: the kernel returns ``NEED_POSTERIOR`` with the slot in
    ``ctr[SLOT]`` and the row in ``ctr[ROW]``, and resumes at the next row.

    Returns a status of :mod:`._dp_gaussian_kernels`.
    """
    while ctr[POS] < order.shape[0]:
        # no prior draws: the pool check always passes
        status, i, k_old, singleton = leave_next_row(order, labels, counts, ctr, 0,
                                                     ctr[POOL_POS])
        if status != DONE:
            return status
        x = X[i]
        if singleton:
            release_slot(free, ctr, k_old)
        n_slots = ctr[N_SLOTS]
        active_log_weights(x, counts, means, chols, half_logdets, n_slots, log_weights)
        log_weights[n_slots] = log_alpha + log_prior_predictive[i]
        c = draw_index(log_weights, n_slots + 1, rng)
        ctr[POS] += 1
        if c < n_slots:
            labels[i] = c
            counts[c] += 1
        else:
            slot = take_slot(free, ctr)
            labels[i] = slot
            counts[slot] = 1
            ctr[SLOT] = slot
            ctr[ROW] = i
            return NEED_POSTERIOR
    return DONE
