"""Numba kernels of the Metropolis-Hastings IBP sampler (Görür 2007, sec. 4.2.3, Algorithm 13).

The state is held in plain arrays with spare capacity (``cap`` feature slots):

``Z`` (N, cap) int8, ``A`` (cap, D) float64
    Feature assignments and the explicit features; slots ``0 .. K - 1`` are in use.
``counts`` (cap,) int64
    ``m_k``, the rows that have each feature. A slot whose count drops to zero is dead
    (its row's unique features were replaced); the driver compacts dead slots.
``pred`` (N, D) float64
    ``Z A``, each row's prediction, read by
    :func:`sklearn_ibp.likelihoods._observation_kernels.row_log_likelihood`.

The likelihood is described by its codes and arrays (``obs_kind``, ``noise``,
``prior_kind``, ``prior``), so one compiled kernel serves every explicit-feature model.
Every draw comes from the chain's :class:`numpy.random.Generator` ``rng``.

The shared-feature pass (:func:`gibbs_shared_features`) and the small helpers are reused
by the approximate Gibbs sampler (:mod:`._approximate_gibbs_kernels`).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ...likelihoods._observation_kernels import (
    OBSERVE_NOISY_OR,
    _entry_log_likelihood,
    draw_prior_feature,
    row_log_likelihood,
    row_log_likelihood_shifted,
)
from .._draw_kernels import FALSE, ONE, TRUE, draw_binary, random_order, truncated_poisson
from .._feature_proposal_kernels import (
    PROPOSE_DATA,
    feature_proposal,
    log_prior_feature,
)
from .._feature_slot_kernels import compact_features


@njit(cache=True)
def gibbs_shared_features(n, X, observed, Z, A, pred, counts, K, obs_kind, noise, log_lik,
                          order, rng, n_total=0, log_one=None, sampled=None):
    """Gibbs updates of ``z_nk`` for the features other rows have (eq. 4.36).

    ``p(z_nk = 1 | ...) ∝ m_{-n,k} / N F(x_n | z_nk = 1, ...)``: the prior odds are
    ``m_{-n,k} / (N - m_{-n,k})``. Features are visited in a fresh random order (``order``
    is a work buffer); ``pred[n]`` and ``counts`` follow each change. ``log_lik`` is the
    row's current log-likelihood; the updated value is returned.

    The shards of the data-parallel sampler (Doshi-Velez 2009, sec. 5.1,
    :mod:`sklearn_ibp.distributed._noisy_or_kernels`) pass three more arguments:
    ``n_total`` (> 0) is the ``N`` of the prior odds, all shards' rows (``counts`` then
    holds the other shards' counts plus the shard's own); ``log_one`` (a
    :func:`~sklearn_ibp.likelihoods._leaky_noisy_or_kernels.log_prob_one_table`) has the
    flipped row's likelihood computed from the entries feature ``k`` reaches only
    (:func:`flip_log_likelihood_delta`; the same draws up to rounding); ``sampled``
    (int8 per slot) visits only the features with ``sampled[k] != 0`` (feature
    sub-sampling). Left out, the serial sampler's draws are unchanged, bit for bit.
    """
    N = X.shape[0] if n_total <= 0 else n_total
    random_order(K, order, rng)
    for t in range(K):
        k = order[t]
        zk = Z[n, k]
        others = counts[k] - zk
        if others <= 0:
            continue
        if sampled is not None and sampled[k] == 0:
            continue
        sign = 1.0 - 2.0 * zk  # +1 adds feature k to the row, -1 removes it
        if log_one is None:
            flip_lik = row_log_likelihood_shifted(obs_kind, X[n], observed[n], pred[n],
                                                  A[k], sign, noise)
        else:
            flip_lik = log_lik + flip_log_likelihood_delta(n, k, sign, X, observed, A, pred,
                                                           obs_kind, noise, log_one)
        log_odds = math.log(others) - math.log(N - others)
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
def flip_log_likelihood_delta(n, k, sign, X, observed, A, pred, obs_kind, noise, log_one):
    """How row ``n``'s log-likelihood moves when feature ``k`` is added (``sign = +1``)
    or removed (``-1``), from the entries ``a_kd != 0`` only: ``O(nnz(a_k))`` terms
    instead of ``O(D)`` with sparse binary features. For the noisy-or, ``log_one[c, d] =
    log(1 - eps lambda^c)`` (up to the largest count a row can reach) replaces the
    logarithms by look-ups at the integer counts ``c = pred[n, d]``."""
    delta = 0.0
    for d in range(X.shape[1]):
        a = A[k, d]
        if a != 0.0 and observed[n, d]:
            if obs_kind == OBSERVE_NOISY_OR and X[n, d] > 0.5:
                c = int(pred[n, d] + 0.5)
                delta += log_one[c + (1 if sign > 0.0 else -1), d] - log_one[c, d]
            elif obs_kind == OBSERVE_NOISY_OR:
                delta += sign * noise[1, d]  # log P(x = 0) moves by log lambda
            else:
                delta += (_entry_log_likelihood(obs_kind, X[n, d], pred[n, d] + sign * a,
                                                noise, d)
                          - _entry_log_likelihood(obs_kind, X[n, d], pred[n, d], noise, d))
    return delta


@njit(cache=True)
def row_unique_features(Z, n, counts, K, own):
    """The features of the first ``K`` that row ``n`` alone has (``z_nk = 1``,
    ``m_k = 1``), in order, into ``own[:n_own]``. Returns ``n_own``."""
    n_own = 0
    for k in range(K):
        if Z[n, k] == 1 and counts[k] == 1:
            own[n_own] = k
            n_own += 1
    return n_own


@njit(cache=True)
def unique_move_buffers(cap, D):
    """The work arrays of :func:`unique_features_move` for a state with ``cap`` slots on
    ``D`` dimensions: ``(own, order, rows, children, base)``, ``rows`` and ``children``
    those of a single row (no hierarchy)."""
    return (np.empty(cap, dtype=np.int64), np.empty(cap, dtype=np.int64),
            np.zeros(1, dtype=np.int64), np.ones(1, dtype=np.int64), np.empty((1, D)))


@njit(cache=True)
def unique_features_move(n, X, observed, Z, A, pred, counts, K, obs_kind, noise,
                         prior_kind, prior, rate, proposal_rate, k_max, proposal, log_lik,
                         own, order, rows, children, base, rng, allow_new=True):
    """Metropolis-Hastings move on row ``n``'s unique features (Algorithm 13, eq. 4.40).

    The unique features (``z_nk = 1``, ``m_{-n,k} = 0``) are proposed to be replaced by
    ``K_new ~ Poisson(proposal_rate)`` new ones (the prior's ``rate = alpha / N`` in
    Görür 2007; any other rate adds ``(K_new - K_own) log(rate / proposal_rate)`` to the log
    ratio, the Poisson prior over the proposal) whose values are drawn into the free slots
    ``K .. K + K_new - 1`` of ``A``. With ``proposal == PROPOSE_PRIOR`` the values come
    from the prior ``G_0``, and the acceptance ratio is the likelihood ratio (Meeds et
    al. 2007). With ``PROPOSE_DATA`` each new value comes in turn from
    :func:`~sklearn_ibp.solvers._feature_proposal_kernels.feature_proposal` (its conditional
    posterior given row ``n`` and the features before it), and the ratio also holds
    ``G_0(a) / q(a)`` of the new values over that of the replaced ones, which are scored
    the same way in a uniformly random order (an auxiliary order, uniform given the
    symmetric target, so the single ordered density gives an exact ratio).

    The Poisson is truncated at ``k_max``: its normalising constant cancels between
    the two directions, and a row with more than ``k_max`` unique features keeps them
    (the reverse proposal is impossible), so the move is exact at any ``k_max``.

    ``own``, ``order`` (int64, length >= cap), ``rows``, ``children`` (int64, length 1)
    and ``base`` (1, D) are work buffers. Returns ``(K, log_lik)`` after the move; dead
    slots keep ``counts == 0``.

    With ``allow_new=False`` no new feature is proposed (``K_new = 0``, no Poisson draw):
    the move may only drop the row's unique features, with the ratio above at
    ``K_new = 0``. The data-parallel shards without the token use it (Doshi-Velez 2009, sec. 5.1:
    only the token holder creates features).
    """
    D = X.shape[1]
    n_own = row_unique_features(Z, n, counts, K, own)
    if n_own > k_max:
        return K, log_lik
    n_new = truncated_poisson(proposal_rate, k_max, rng) if allow_new else 0
    if n_own == 0 and n_new == 0:
        return K, log_lik
    log_accept = (n_new - n_own) * (math.log(rate) - math.log(proposal_rate))
    # The row's prediction without its unique features.
    for d in range(D):
        base[0, d] = pred[n, d]
    for j in range(n_own):
        for d in range(D):
            base[0, d] -= A[own[j], d]
    log_accept -= log_lik
    rows[0] = n
    children[0] = 1
    if proposal == PROPOSE_DATA:
        # Reverse: the current unique features scored in a random order.
        random_order(n_own, order, rng)
        for t in range(n_own):
            k = own[order[t]]
            log_q = feature_proposal(FALSE, prior_kind, prior, obs_kind, noise, X,
                                     observed, rows, ONE, children, base, A[k], rng)
            log_accept -= log_prior_feature(prior_kind, prior, A[k]) - log_q
            for d in range(D):
                base[0, d] += A[k, d]
        # Back to the prediction without them.
        for j in range(n_own):
            for d in range(D):
                base[0, d] -= A[own[j], d]
    for j in range(n_new):
        f = K + j
        if proposal == PROPOSE_DATA:
            log_q = feature_proposal(TRUE, prior_kind, prior, obs_kind, noise, X,
                                     observed, rows, ONE, children, base, A[f], rng)
            log_accept += log_prior_feature(prior_kind, prior, A[f]) - log_q
        else:
            draw_prior_feature(prior_kind, prior, A[f], rng)
        for d in range(D):
            base[0, d] += A[f, d]
    new_lik = row_log_likelihood(obs_kind, X[n], observed[n], base[0], noise)
    log_accept += new_lik
    if not (log_accept >= 0.0 or rng.random() < math.exp(log_accept)):
        return K, log_lik
    for j in range(n_own):
        k = own[j]
        Z[n, k] = 0
        counts[k] = 0
    for j in range(n_new):
        f = K + j
        for i in range(X.shape[0]):
            Z[i, f] = 0
        Z[n, f] = 1
        counts[f] = 1
    for d in range(D):
        pred[n, d] = base[0, d]
    return K + n_new, new_lik


@njit(cache=True, nogil=True)
def metropolis_rows(start, row_order, X, observed, Z, A, pred, counts, K, obs_kind, noise,
                    prior_kind, prior, rate, proposal_rate, k_max, proposal, rng,
                    allow_new=True, n_total=0, log_one=None, sampled=None, compact=True):
    """Rows ``row_order[start:]`` of one sweep of Algorithm 13, in place.

    With ``start == 0`` a fresh uniformly random row order is first drawn into
    ``row_order``. For each row: Gibbs for the shared features
    (:func:`gibbs_shared_features`), then the Metropolis-Hastings move on its unique
    features (:func:`unique_features_move`). Returns ``(K, next)``: the number of used
    slots and the position in ``row_order`` to resume from (``len(row_order)`` when done,
    the dead slots then compacted away; earlier when the next row could need more than the
    free slots, so the driver compacts and grows the arrays).

    A shard of the data-parallel sampler (Doshi-Velez 2009, sec. 5.1,
    :mod:`sklearn_ibp.distributed._noisy_or_shard`) sweeps its rows with the shard
    arguments: ``allow_new`` (False unless it holds the token: the unique-feature move
    may then only drop features, and no free slot is needed), ``n_total``, ``log_one``
    and ``sampled`` as in :func:`gibbs_shared_features`, and ``compact=False`` (dead
    slots are kept, so that feature ``k`` keeps its index within a round). Left out, the
    serial sampler's draws are unchanged, bit for bit. The GIL is released, so the
    shards of the thread backend run at once.
    """
    N, D = X.shape
    cap = Z.shape[1]
    own, order, rows, children, base = unique_move_buffers(cap, D)
    if start == 0:
        random_order(N, row_order, rng)
    for step in range(start, row_order.shape[0]):
        if allow_new and K + k_max > cap:
            return K, step
        n = row_order[step]
        log_lik = row_log_likelihood(obs_kind, X[n], observed[n], pred[n], noise)
        log_lik = gibbs_shared_features(n, X, observed, Z, A, pred, counts, K, obs_kind,
                                        noise, log_lik, order, rng, n_total, log_one,
                                        sampled)
        K, log_lik = unique_features_move(
            n, X, observed, Z, A, pred, counts, K, obs_kind, noise, prior_kind, prior,
            rate, proposal_rate, k_max, proposal, log_lik, own, order, rows, children, base,
            rng, allow_new,
        )
    if compact:
        K = compact_features(Z, A, counts, K)
    return K, row_order.shape[0]


@njit(cache=True)
def refresh_prediction(Z, A, K, pred):
    """``pred = Z[:, :K] A[:K]`` (int8 times float64, without a conversion copy)."""
    for i in range(Z.shape[0]):
        for d in range(pred.shape[1]):
            pred[i, d] = 0.0
        for k in range(K):
            if Z[i, k] != 0:
                for d in range(pred.shape[1]):
                    pred[i, d] += A[k, d]
