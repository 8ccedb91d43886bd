"""Numba kernels of collapsed Gibbs sampling for the conjugate DP mixture of Gaussians.

Algorithm 3 of Görür (2007), sec. 3.2.1: each indicator is drawn from eq. 3.32,
``p(c_i = k | c_-i, X) ~ n_-i,k p(x_i | X_-i,k)`` for an occupied cluster and
``~ alpha p(x_i)`` for a new one, with the Student-t predictive of eq. 3.65 computed from
each cluster's Cholesky factor of ``W*`` (:mod:`sklearn_ibp.likelihoods._normal_wishart_kernels`).
A row's own cluster is scored without the row by the determinant lemma, so the statistics
are touched (one downdate and one update, ``O(D^2)``) only when a row actually moves.

Clusters live in slots; a slot emptied during a sweep is reused by the next new cluster
(the lowest free one). Every candidate is visited in increasing slot order and each draw uses
one uniform, so the pure-Python path of :class:`~sklearn_ibp.solvers.CollapsedDP`
makes the same choices from the same seed.
"""

import math

import numpy as np
from numba import njit

from ...likelihoods._normal_wishart_kernels import (
    LEAF,
    RATIO_FLOOR,
    add_row,
    empty_slot,
    log_predictive_prior,
    log_predictive_slot,
    log_predictive_without,
    mahalanobis2,
    predictive_constant,
    rebuild_slot,
    removal_ratio,
    remove_row,
)
from .._draw_kernels import draw_from_log_weights


@njit(**LEAF)
def first_free_slot(counts, n_slots):
    """The lowest slot below ``n_slots`` with no rows, or ``n_slots``."""
    t = 0
    while t < n_slots and counts[t] != 0:
        t += 1
    return t


@njit(cache=True)
def sweep_collapsed_nw(
    X, labels, order, start, slots, prior, n_slots, log_alpha, rng, log_weights, candidates, work
):
    """Gibbs-update ``c_i`` for the rows ``order[start:]`` (eq. 3.32), in place.

    Parameters are the data ``X`` (N, D), slot ``labels`` (N,), the visiting ``order``, the
    slot statistics and prior tuples (see the kernels of the Normal-Wishart base), the
    number of slots in use ``n_slots`` (slots at or above it are free), ``log(alpha)``, the
    generator, and scratch arrays of lengths ``capacity + 1``, ``capacity + 1`` and ``2 D``.

    Returns ``(rows_done, n_slots)``: the sweep stops before a row, with
    ``rows_done < len(order)``, when every slot is in use (the caller grows the statistics
    and calls again from ``rows_done``; no random number has been drawn for that row).
    """
    counts = slots[0]
    exponent, shrink, log_weight = slots[7], slots[8], slots[9]
    capacity = counts.shape[0]
    D = X.shape[1]
    log_const0 = predictive_constant(0, prior[4], prior, D)
    for pos in range(start, order.shape[0]):
        if n_slots >= capacity:
            return pos, n_slots
        i = order[pos]
        x = X[i]
        own = labels[i]
        n_own = counts[own]
        detached = False
        n_cand = 0
        for s in range(n_slots):
            n = counts[s]
            if n == 0:
                continue
            if s == own:
                if n == 1:
                    continue  # a singleton's own table is the new-table option
                ratio = removal_ratio(x, s, slots, prior, work)
                if ratio < RATIO_FLOOR:
                    # x dominates its cluster: take it out exactly, from the other rows
                    rebuild_slot(X, labels, s, i, slots, prior)
                    detached = True
                    lw = log_predictive_slot(x, s, slots, prior, work)
                else:
                    lw = log_predictive_without(x, s, ratio, slots, prior)
                log_weights[n_cand] = math.log(n - 1.0) + lw
            else:
                r = mahalanobis2(x, s, slots, work)
                log_weights[n_cand] = log_weight[s] + exponent[s] * math.log1p(shrink[s] * r)
            candidates[n_cand] = s
            n_cand += 1
        log_weights[n_cand] = log_alpha + log_predictive_prior(x, prior, log_const0, work)
        candidates[n_cand] = -1
        n_cand += 1
        target = candidates[draw_from_log_weights(log_weights[:n_cand], rng)]
        if target == -1:
            if n_own == 1:
                continue  # stays alone at its own table
            target = first_free_slot(counts, n_slots)
            if target == n_slots:
                n_slots += 1
            empty_slot(target, slots, prior)
        if target == own:
            if detached:
                add_row(x, own, slots, prior, work)
            continue
        if not detached:
            if n_own == 1:
                counts[own] = 0
            elif not remove_row(x, own, slots, prior, work):
                rebuild_slot(X, labels, own, i, slots, prior)
        add_row(x, target, slots, prior, work)
        labels[i] = target
    return order.shape[0], n_slots


@njit(cache=True)
def log_predictive_table(X_new, slots, prior, n_slots, out, work):
    """``out[m, s] = log p(x_m | rows of slot s)`` for ``s < n_slots`` (``-inf`` for a free
    slot) and ``out[m, n_slots] = log p(x_m)`` under ``G_0`` (eq. 3.65)."""
    counts = slots[0]
    D = X_new.shape[1]
    log_const0 = predictive_constant(0, prior[4], prior, D)
    for m in range(X_new.shape[0]):
        x = X_new[m]
        for s in range(n_slots):
            if counts[s] == 0:
                out[m, s] = -np.inf
            else:
                out[m, s] = log_predictive_slot(x, s, slots, prior, work)
        out[m, n_slots] = log_predictive_prior(x, prior, log_const0, work)
