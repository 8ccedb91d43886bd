"""Numba kernels of the auxiliary-component sampler (Görür 2007 Algorithm 5, eq. 3.34;
Neal 2000's Algorithm 8) for Gaussian components, in the three schemes of sec. 3.3.2.

Every kernel updates the indicators of ``order[ctr[POS]:]``. For a row ``i`` the ``m``
auxiliary components stand for the new components: if ``x_i`` is a singleton its own
component is the first of them and the other ``m - 1`` are fresh draws from ``G_0`` (taken
from the pool), otherwise all ``m`` are fresh. The row joins component ``k`` with weight
``n_{-i,k} f_k(x_i)`` or auxiliary ``j`` with weight ``(alpha / m) f_j(x_i)``; components left
empty are dropped (their slots freed). ``f`` is

* SampleBoth: ``N(x | mu_k, S_k^{-1})``, both parameters represented;
* SampleMu: eq. 3.66, the precision integrated out given the mean and the cluster's other
  rows (only the means are represented; per cluster the Cholesky factor of
  ``W*_k = beta W + sum_l (x_l - mu_k)(x_l - mu_k)^T`` moves by rank-one updates);
* SampleS: eq. 3.67, the mean integrated out given the precision and the other rows (only
  the precisions are represented; per cluster the predictive's mean and covariance factor
  are recomputed when its rows change).

A kernel returns ``NEED_CAPACITY`` or ``NEED_PRIOR`` before a row it cannot finish, and
``DONE`` at the end of the order.
"""

import math

import numpy as np
from numba import njit

from ...likelihoods._conditionally_conjugate_kernels import (
    cholesky_lower,
    gaussian_log_density_cov,
    log_predictive_given_mean,
    predictive_given_precision,
    spd_inverse,
    t_log_constant,
)
from ._dp_gaussian_kernels import (
    DONE,
    N_SLOTS,
    POOL_POS,
    POS,
    active_log_weights,
    cholesky_rank_one,
    copy_component,
    destination_slot,
    draw_index,
    gaussian_log_density,
    leave_next_row,
    release_slot,
)


@njit(cache=True)
def sweep_auxiliary_both(X, labels, order, counts, means, precisions, chols, half_logdets,
                         free, pool_means, pool_precisions, log_alpha, n_aux, ctr,
                         log_weights, aux_chols, aux_half_logdets, aux_index, rng):
    """SampleBoth (eq. 3.34 with ``F = N(mu, S^{-1})``); see the module docstring.

    ``aux_chols`` (m, D, D), ``aux_half_logdets`` (m,) and ``aux_index`` (m,) are scratch.
    """
    n_pool = pool_means.shape[0]
    log_aux = log_alpha - math.log(n_aux)
    while ctr[POS] < order.shape[0]:
        status, i, k_old, singleton = leave_next_row(order, labels, counts, ctr, n_aux,
                                                     n_pool)
        if status != DONE:
            return status
        x = X[i]
        n_slots = ctr[N_SLOTS]
        active_log_weights(x, counts, means, chols, half_logdets, n_slots, log_weights)
        q = ctr[POOL_POS]
        for j in range(n_aux):
            if singleton and j == 0:
                log_weights[n_slots] = log_aux + gaussian_log_density(
                    x, means[k_old], chols[k_old], half_logdets[k_old])
                continue
            aux_index[j] = q
            aux_half_logdets[j] = cholesky_lower(pool_precisions[q], aux_chols[j])
            log_weights[n_slots + j] = log_aux + gaussian_log_density(
                x, pool_means[q], aux_chols[j], aux_half_logdets[j])
            q += 1
        ctr[POOL_POS] = q
        c = draw_index(log_weights, n_slots + n_aux, rng)
        if c < n_slots:
            labels[i] = c
            counts[c] += 1
            if singleton:
                release_slot(free, ctr, k_old)
        elif singleton and c == n_slots:
            counts[k_old] = 1
        else:
            j = c - n_slots
            slot = destination_slot(c, n_slots, singleton, k_old, free, ctr)
            q = aux_index[j]
            copy_component(means, precisions, chols, half_logdets, slot, pool_means[q],
                           pool_precisions[q], aux_chols[j], aux_half_logdets[j])
            labels[i] = slot
            counts[slot] = 1
        ctr[POS] += 1
    return DONE


@njit(cache=True)
def _copy_matrix(src, dst):
    for d in range(src.shape[0]):
        for e in range(src.shape[1]):
            dst[d, e] = src[d, e]


@njit(cache=True)
def _copy_vector(src, dst):
    for d in range(src.shape[0]):
        dst[d] = src[d]


@njit(cache=True)
def _t_constant(gamma_table, beta, count, D, log_det_w):
    """:func:`t_log_constant` with its two log-gammas cached per count (NaN = not yet)."""
    if np.isnan(gamma_table[count]):
        gamma_table[count] = t_log_constant(beta, count, D, 0.0)
    return gamma_table[count] - 0.5 * log_det_w


@njit(cache=True)
def sweep_auxiliary_mu(X, labels, order, counts, means, w_chols, log_constants, free,
                       pool_means, base_w_chol, beta, log_alpha, n_aux, ctr, log_weights,
                       aux_index, gamma_table, work, backup, rng):
    """SampleMu (eq. 3.34 with eq. 3.66's likelihood); see the module docstring.

    ``w_chols[k]`` is the Cholesky factor of ``W*_k`` over the cluster's rows and
    ``log_constants[k]`` its :func:`t_log_constant`; ``base_w_chol`` is that of
    ``beta W`` (an empty cluster). ``gamma_table`` (N + 2,) caches the log-gamma terms per
    count (NaN-filled by the caller). ``aux_index`` (m,), ``work`` (2, D) and ``backup``
    (D, D) are scratch. A row that returns to its own cluster gets the cluster's factor
    back from ``backup`` rather than by an update.
    """
    D = X.shape[1]
    n_pool = pool_means.shape[0]
    log_aux = log_alpha - math.log(n_aux)
    base_half_logdet = 0.0
    for d in range(D):
        base_half_logdet += math.log(base_w_chol[d, d])
    base_constant = _t_constant(gamma_table, beta, 0, D, 2.0 * base_half_logdet)
    v = work[0]
    scratch = work[1]
    while ctr[POS] < order.shape[0]:
        status, i, k_old, singleton = leave_next_row(order, labels, counts, ctr, n_aux,
                                                     n_pool)
        if status != DONE:
            return status
        x = X[i]
        _copy_matrix(w_chols[k_old], backup)
        backup_constant = log_constants[k_old]
        if singleton:
            _copy_matrix(base_w_chol, w_chols[k_old])
            log_constants[k_old] = base_constant
        else:
            for d in range(D):
                v[d] = x[d] - means[k_old, d]
            hld = cholesky_rank_one(w_chols[k_old], v, scratch, -1.0)
            log_constants[k_old] = _t_constant(gamma_table, beta, counts[k_old], D, 2.0 * hld)
        n_slots = ctr[N_SLOTS]
        for k in range(n_slots):
            if counts[k] > 0:
                log_weights[k] = math.log(counts[k]) + log_predictive_given_mean(
                    x, means[k], w_chols[k], log_constants[k], beta + counts[k], scratch)
            else:
                log_weights[k] = -np.inf
        q = ctr[POOL_POS]
        for j in range(n_aux):
            if singleton and j == 0:
                log_weights[n_slots] = log_aux + log_predictive_given_mean(
                    x, means[k_old], base_w_chol, base_constant, beta, scratch)
                continue
            aux_index[j] = q
            log_weights[n_slots + j] = log_aux + log_predictive_given_mean(
                x, pool_means[q], base_w_chol, base_constant, beta, scratch)
            q += 1
        ctr[POOL_POS] = q
        c = draw_index(log_weights, n_slots + n_aux, rng)
        if c == k_old or (singleton and c == n_slots):
            # back where it was: same rows, same mean
            _copy_matrix(backup, w_chols[k_old])
            log_constants[k_old] = backup_constant
            counts[k_old] += 1
            ctr[POS] += 1
            continue
        slot = destination_slot(c, n_slots, singleton, k_old, free, ctr)
        if c >= n_slots:
            q = aux_index[c - n_slots]
            for d in range(D):
                means[slot, d] = pool_means[q, d]
            _copy_matrix(base_w_chol, w_chols[slot])
        for d in range(D):
            v[d] = x[d] - means[slot, d]
        hld = cholesky_rank_one(w_chols[slot], v, scratch, 1.0)
        counts[slot] += 1
        log_constants[slot] = _t_constant(gamma_table, beta, counts[slot], D, 2.0 * hld)
        labels[i] = slot
        ctr[POS] += 1
    return DONE


@njit(cache=True)
def sweep_auxiliary_s(X, labels, order, counts, precisions, precision_invs, sums, pred_means,
                      pred_chols, pred_half_logdets, free, pool_precisions, xi, R, R_inv,
                      R_xi, log_alpha, n_aux, ctr, log_weights, aux_invs, aux_chols,
                      aux_half_logdets, aux_index, work, y, backup_mean, backup_chol, rng):
    """SampleS (eq. 3.34 with eq. 3.67's likelihood); see the module docstring.

    ``pred_means[k]``, ``pred_chols[k]`` and ``pred_half_logdets[k]`` are the mean,
    covariance factor and half log determinant of cluster ``k``'s predictive
    (:func:`predictive_given_precision` of its precision ``S_k``, ``precision_invs[k] =
    S_k^{-1}``, count and row sum ``sums[k]``). An auxiliary's predictive is
    ``N(xi, S^{-1} + R^{-1})``. ``aux_invs``, ``aux_chols`` (m, D, D), ``aux_half_logdets``,
    ``aux_index`` (m,), ``work`` (4, D, D), ``y``, ``backup_mean`` (D,) and ``backup_chol``
    (D, D) are scratch.
    """
    D = X.shape[1]
    n_pool = pool_precisions.shape[0]
    log_aux = log_alpha - math.log(n_aux)
    while ctr[POS] < order.shape[0]:
        status, i, k_old, singleton = leave_next_row(order, labels, counts, ctr, n_aux,
                                                     n_pool)
        if status != DONE:
            return status
        x = X[i]
        _copy_vector(pred_means[k_old], backup_mean)
        _copy_matrix(pred_chols[k_old], backup_chol)
        backup_half_logdet = pred_half_logdets[k_old]
        for d in range(D):
            sums[k_old, d] = sums[k_old, d] - x[d] if not singleton else 0.0
        pred_half_logdets[k_old] = predictive_given_precision(
            precisions[k_old], precision_invs[k_old], counts[k_old], sums[k_old], R, R_xi,
            pred_means[k_old], pred_chols[k_old], work)
        n_slots = ctr[N_SLOTS]
        for k in range(n_slots):
            if counts[k] > 0:
                log_weights[k] = math.log(counts[k]) + gaussian_log_density_cov(
                    x, pred_means[k], pred_chols[k], pred_half_logdets[k], y)
            else:
                log_weights[k] = -np.inf
        q = ctr[POOL_POS]
        cov = work[0]
        for j in range(n_aux):
            if singleton and j == 0:
                log_weights[n_slots] = log_aux + gaussian_log_density_cov(
                    x, pred_means[k_old], pred_chols[k_old], pred_half_logdets[k_old], y)
                continue
            aux_index[j] = q
            spd_inverse(pool_precisions[q], aux_invs[j], work[1], work[2])
            for d in range(D):
                for e in range(D):
                    cov[d, e] = aux_invs[j, d, e] + R_inv[d, e]
            aux_half_logdets[j] = cholesky_lower(cov, aux_chols[j])
            log_weights[n_slots + j] = log_aux + gaussian_log_density_cov(
                x, xi, aux_chols[j], aux_half_logdets[j], y)
            q += 1
        ctr[POOL_POS] = q
        c = draw_index(log_weights, n_slots + n_aux, rng)
        if c == k_old or (singleton and c == n_slots):
            # back where it was: same rows, same precision
            for d in range(D):
                sums[k_old, d] += x[d]
            _copy_vector(backup_mean, pred_means[k_old])
            _copy_matrix(backup_chol, pred_chols[k_old])
            pred_half_logdets[k_old] = backup_half_logdet
            counts[k_old] += 1
            ctr[POS] += 1
            continue
        slot = destination_slot(c, n_slots, singleton, k_old, free, ctr)
        if c >= n_slots:
            j = c - n_slots
            _copy_matrix(pool_precisions[aux_index[j]], precisions[slot])
            _copy_matrix(aux_invs[j], precision_invs[slot])
            for d in range(D):
                sums[slot, d] = 0.0
        for d in range(D):
            sums[slot, d] += x[d]
        counts[slot] += 1
        pred_half_logdets[slot] = predictive_given_precision(
            precisions[slot], precision_invs[slot], counts[slot], sums[slot], R, R_xi,
            pred_means[slot], pred_chols[slot], work)
        labels[i] = slot
        ctr[POS] += 1
    return DONE
