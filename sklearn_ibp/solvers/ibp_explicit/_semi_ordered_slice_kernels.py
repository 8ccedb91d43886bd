"""Numba kernels of the semi-ordered stick-breaking slice sampler for the IBP (Görür 2007,
sec. 4.2.6, Algorithm 16).

The stick draws and the row update are those of Algorithm 15 (:mod:`._slice_kernels`);
this module holds the two changes of representation around them: to the stick-breaking
representation (active sticks drawn afresh from their posterior, eq. 4.56, one slice for
the sweep, empty sticks from eq. 4.57) and back (empty features dropped), and the
per-row birth and death of the unique features that follows the slice updates
(:func:`unique_feature_rows`, Algorithm 13's move, reused from :mod:`._metropolis_kernels`).

The ``*_weighted`` kernels are the same sweep for the real-weighted model of Görür 2007,
sec. 4.4 (eq. 4.62): the weights ``W = Z ⊙ Y`` travel with ``Z`` through the sort and the
removal of features, the prediction is ``W A``, and the row update integrates the weight
out of each ``z_nk`` (:mod:`sklearn_ibp.likelihoods._real_weighted_kernels`). The binary
kernels above are untouched by them.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ...likelihoods._observation_kernels import (
    PRIOR_GAUSSIAN,
    draw_prior_feature,
    row_log_likelihood,
)
from ...likelihoods._real_weighted_kernels import (
    draw_new_feature_values,
    integrated_weight_terms,
    new_feature_log_ratio,
)
from .._draw_kernels import add_lowest_stick_log_ratio, draw_binary, random_order, stick_log_odds
from .._feature_slot_kernels import (
    compact_columns,
    compact_features,
    compact_values,
    decreasing_order,
    sort_by_sticks,
)
from ._metropolis_kernels import unique_features_move, unique_move_buffers
from ._slice_kernels import draw_level, extend_sticks, update_row_features


@njit(cache=True)
def draw_active_sticks(counts, sticks, n_active, n_rows, rng):
    """``mu_k ~ Beta(m_k, 1 + N - m_k)`` for the ``n_active`` active features (eq. 4.56),
    then the slice ``s ~ Uniform(0, min(1, min_k mu_k))`` (eq. 4.58), which is returned."""
    for k in range(n_active):
        m = float(counts[k])
        sticks[k] = rng.beta(m, 1.0 + n_rows - m)
    return draw_level(sticks, counts, n_active, rng)


@njit(cache=True)
def to_stick_breaking(Z, A, pred, counts, sticks, n_active, alpha, prior_kind, prior, rng):
    """The change to the stick-breaking representation (Algorithm 16, first step).

    Fills ``counts`` and ``pred = Z A`` for the ``n_active`` active features (columns
    ``0 .. n_active - 1``), draws their sticks and the slice (:func:`draw_active_sticks`),
    then appends empty features (:func:`extend_sticks`) until a stick falls below the slice.

    Returns ``(n_features, level, done)``; when ``done`` is False, ``Z`` ran out of capacity
    and :func:`extend_sticks` is to be called again (with ``chain_start = n_active``).
    """
    return _start_stick_breaking(Z, np.empty((0, 0)), A, pred, counts, sticks, n_active,
                                 False, alpha, prior_kind, prior, rng)


@njit(cache=True)
def _start_stick_breaking(Z, W, A, pred, counts, sticks, n_active, weighted, alpha,
                          prior_kind, prior, rng):
    """The body of :func:`to_stick_breaking` (``weighted`` False, ``W`` unused, the
    weights taken as 1: ``1.0 * a`` is ``a`` exactly) and of
    :func:`to_stick_breaking_weighted` (``pred = W A``)."""
    N = Z.shape[0]
    D = A.shape[1]
    K = n_active
    for n in range(N):
        for d in range(D):
            pred[n, d] = 0.0
    for k in range(K):
        m = 0
        for n in range(N):
            if Z[n, k]:
                m += 1
                w = W[n, k] if weighted else 1.0
                for d in range(D):
                    pred[n, d] += w * A[k, d]
        counts[k] = m
    level = draw_active_sticks(counts, sticks, K, N, rng)
    total, done = extend_sticks(Z, A, counts, sticks, K, K, level, alpha, prior_kind, prior,
                                rng)
    return total, level, done


@njit(cache=True)
def update_rows_and_drop_empty(X, observed, Z, A, pred, counts, sticks, n_features, level,
                               kind, noise, prior_kind, prior, rng):
    """The features sorted by decreasing stick (:func:`sort_by_sticks`), every row's
    ``z_nk`` for the represented features above the slice ``level`` (eq. 4.52), then the
    change back to the IBP representation: the empty features are removed (the active ones
    moved to the front in order). Returns the number of active features."""
    N = X.shape[0]
    sort_by_sticks(Z, A, counts, sticks, n_features)
    proposal = np.empty(X.shape[1])
    for n in range(N):
        update_row_features(kind, X[n], observed[n], Z[n], A, pred[n], counts, sticks,
                            n_features, level, prior_kind, prior, noise, proposal, rng)
    compact_values(sticks, counts, n_features)
    return compact_features(Z, A, counts, n_features)


@njit(cache=True)
def unique_feature_rows(start, row_order, X, observed, Z, A, pred, counts, K, obs_kind,
                        noise, prior_kind, prior, rate, k_max, proposal, rng):
    """Births and deaths of the rows' unique features in the IBP representation: for
    rows ``row_order[start:]`` (a fresh random order when ``start == 0``), the
    Metropolis-Hastings move of Algorithm 13 that replaces the row's unique features by
    ``K_new ~ Poisson(rate)`` new ones (:func:`._metropolis_kernels.unique_features_move`,
    ``rate = alpha / N``). ``pred`` must be ``Z A`` and ``counts`` the feature counts.

    Returns ``(K, next)`` as :func:`._metropolis_kernels.metropolis_rows`: the used slots
    and the position to resume from (``len(row_order)`` when done, dead slots then
    compacted away; earlier when the next row could need more than the free slots).
    """
    D = X.shape[1]
    cap = Z.shape[1]
    own, order, rows, children, base = unique_move_buffers(cap, D)
    if start == 0:
        random_order(row_order.shape[0], row_order, rng)
    for step in range(start, row_order.shape[0]):
        if K + k_max > cap:
            return K, step
        n = row_order[step]
        log_lik = row_log_likelihood(obs_kind, X[n], observed[n], pred[n], noise)
        K, log_lik = unique_features_move(
            n, X, observed, Z, A, pred, counts, K, obs_kind, noise, prior_kind, prior,
            rate, rate, k_max, proposal, log_lik, own, order, rows, children, base, rng,
        )
    return compact_features(Z, A, counts, K), row_order.shape[0]


# -- the real-weighted model (Görür 2007, sec. 4.4, eq. 4.62) -----------------------------
#
# The same sweep with the weights W = Z ⊙ Y (N, cap) float64 carried beside Z: W[n, k] is
# 0 wherever Z[n, k] is 0, so the prediction is W A. Only Gaussian observations and a
# Gaussian feature prior (prior[0] = sigma_a).


@njit(cache=True)
def to_stick_breaking_weighted(Z, W, A, pred, counts, sticks, n_active, alpha, prior_kind,
                               prior, rng):
    """:func:`to_stick_breaking` with the prediction ``pred = W A``."""
    return _start_stick_breaking(Z, W, A, pred, counts, sticks, n_active, True, alpha,
                                 prior_kind, prior, rng)


@njit(cache=True)
def update_weighted_row_features(x, observed, z, w, A, pred, counts, sticks, n_features,
                                 level, prior, noise, rng):
    """:func:`update_row_features` for the real-weighted model, one row.

    For a feature other rows have, ``z_nk`` is drawn with its weight ``y_nk`` integrated
    out (``p(x_n | z_nk = 1) / p(x_n | z_nk = 0) = (1 + q)^-1/2 exp(b^2 / (2 (1 + q)))``,
    :func:`integrated_weight_terms`) times the stick odds of eq. 4.52, and then ``y_nk``
    from ``N(b / (1 + q), 1 / (1 + q))`` when the feature is on: an exact Gibbs update of
    the pair. A feature no other row has is switched by Metropolis-Hastings jointly with
    its values ``a_k`` and the weight: switching on proposes ``y ~ N(0, 1)`` (its prior)
    and ``a_k`` from ``p(a_k | y, r)``, so the ratio needs only ``p(r | y)`` with ``a_k``
    integrated out (:func:`new_feature_log_ratio`) and not ``a_k``, which is drawn once
    the move is accepted; switching off proposes ``a_k`` from its prior and uses the
    inverse ratio at the current weight. The stick factors are those of the binary path
    (``mu*`` of eq. 4.47 when the feature is a singleton).
    """
    K = n_features
    prior_var = prior[0] * prior[0]
    for k in range(K):
        mk = sticks[k]
        if not mk > level:
            continue
        zk = z[k]
        others = counts[k] - zk
        log_prior_odds = stick_log_odds(mk)
        wk = w[k]
        if others > 0:
            q, b = integrated_weight_terms(x, observed, pred, A[k], wk, noise)
            log_odds = -0.5 * math.log1p(q) + 0.5 * b * b / (1.0 + q) + log_prior_odds
            new = draw_binary(log_odds, rng)
            w_new = 0.0
            if new:
                w_new = (b + math.sqrt(1.0 + q) * rng.standard_normal()) / (1.0 + q)
            delta = w_new - wk
            for d in range(pred.shape[0]):
                pred[d] += delta * A[k, d]
            w[k] = w_new
            counts[k] += new - zk
            z[k] = new
            continue
        log_prior_odds = add_lowest_stick_log_ratio(log_prior_odds, k, counts, sticks, K)
        if zk:
            log_ratio = new_feature_log_ratio(x, observed, pred, wk, A[k], wk, prior_var,
                                              noise)
            log_accept = -(log_ratio + log_prior_odds)
            if log_accept >= 0.0 or rng.random() < math.exp(log_accept):
                for d in range(pred.shape[0]):
                    pred[d] -= wk * A[k, d]
                draw_prior_feature(PRIOR_GAUSSIAN, prior, A[k], rng)
                w[k] = 0.0
                z[k] = 0
                counts[k] -= 1
        else:
            y = rng.standard_normal()
            log_ratio = new_feature_log_ratio(x, observed, pred, 0.0, A[k], y, prior_var,
                                              noise)
            log_accept = log_ratio + log_prior_odds
            if log_accept >= 0.0 or rng.random() < math.exp(log_accept):
                draw_new_feature_values(x, observed, pred, y, prior[0], noise, A[k], rng)
                for d in range(pred.shape[0]):
                    pred[d] += y * A[k, d]
                w[k] = y
                z[k] = 1
                counts[k] += 1


@njit(cache=True)
def update_weighted_rows_and_drop_empty(X, observed, Z, W, A, pred, counts, sticks,
                                        n_features, level, noise, prior, rng):
    """:func:`update_rows_and_drop_empty` for the real-weighted model: the columns of
    ``W`` follow those of ``Z`` through the sort and the removal of empty features, and
    the rows are updated by :func:`update_weighted_row_features`. Returns the number of
    active features."""
    N = X.shape[0]
    K_all = n_features
    order = decreasing_order(sticks, K_all)
    W_old = W[:, :K_all].copy()
    for j in range(K_all):
        for n in range(N):
            W[n, j] = W_old[n, order[j]]
    sort_by_sticks(Z, A, counts, sticks, K_all)
    for n in range(N):
        update_weighted_row_features(X[n], observed[n], Z[n], W[n], A, pred[n], counts,
                                     sticks, K_all, level, prior, noise, rng)
    compact_values(sticks, counts, K_all)
    compact_columns(W, counts, K_all)
    return compact_features(Z, A, counts, K_all)
