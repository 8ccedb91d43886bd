"""Numba kernels of the slice sampler for the infinite elimination-by-aspects model
(Görür 2007, sec. 4.5.2).

Arrays (``cap`` aspect slots, only the first ``n_features`` live):

``wins`` (N, N) float64
    ``wins[i, j]``: how many times alternative ``i`` was chosen over ``j``.
``Z`` (N, cap) int8, ``W`` (cap, 1) float64
    Aspects and their weights (``W`` is two-dimensional so that the stick-breaking
    kernels of :mod:`._slice_kernels` and :mod:`._semi_ordered_slice_kernels`, written
    for feature values ``A`` (cap, D), draw and sort the weights as ``D = 1`` values).
``unique`` (N,) float64
    Weight of each alternative's unique aspect.
``adv`` (N, N) float64
    ``adv[i, j] = u_i + sum_k w_k z_ik (1 - z_jk)``, the numerator of eq. 4.63. A flip of
    ``z_ik`` changes only row and column ``i`` of it, so the likelihood change is a sum
    over the ``N - 1`` pairs of alternative ``i`` (:func:`flip_log_ratio`).

The plain-NumPy reference of every quantity is :mod:`sklearn_ibp.likelihoods.choice`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .._draw_kernels import add_lowest_stick_log_ratio, draw_binary, stick_log_odds


@njit(cache=True)
def pair_log_prob(a_ij, a_ji, lapse):
    """``log p~_ij`` and ``log p~_ji`` from the two advantages (eq. 4.63, ``0/0 = 1/2``,
    the lapse of sec. 4.5.1)."""
    total = a_ij + a_ji
    if total > 0.0:
        p = a_ij / total
    else:
        p = 0.5
    q = 1.0 - p
    p = (1.0 - lapse) * p + 0.5 * lapse
    q = (1.0 - lapse) * q + 0.5 * lapse
    lp = math.log(p) if p > 0.0 else -np.inf
    lq = math.log(q) if q > 0.0 else -np.inf
    return lp, lq


@njit(cache=True)
def pair_term(x_ij, x_ji, a_ij, a_ji, lapse):
    """``x_ij log p~_ij + x_ji log p~_ji``; a pair never compared contributes 0 (also when
    a probability is 0)."""
    if x_ij == 0.0 and x_ji == 0.0:
        return 0.0
    lp, lq = pair_log_prob(a_ij, a_ji, lapse)
    value = 0.0
    if x_ij != 0.0:
        value += x_ij * lp
    if x_ji != 0.0:
        value += x_ji * lq
    return value


@njit(cache=True)
def fill_advantages(Z, W, unique, n_features, adv):
    """``adv[i, j] = u_i + sum_{k < n_features} w_k z_ik (1 - z_jk)``, diagonal 0."""
    N = Z.shape[0]
    for i in range(N):
        for j in range(N):
            if i == j:
                adv[i, j] = 0.0
                continue
            s = unique[i]
            for k in range(n_features):
                if Z[i, k] and not Z[j, k]:
                    s += W[k, 0]
            adv[i, j] = s


@njit(cache=True)
def total_log_likelihood(wins, adv, lapse):
    """``sum_{i < j} x_ij log p~_ij + x_ji log p~_ji`` (eq. 4.65 without the binomial
    coefficients)."""
    N = wins.shape[0]
    total = 0.0
    for i in range(N):
        for j in range(i + 1, N):
            total += pair_term(wins[i, j], wins[j, i], adv[i, j], adv[j, i], lapse)
    return total


@njit(cache=True)
def flip_log_ratio(i, k, wins, Z, w, adv, lapse):
    """``log p(X | z_ik flipped) - log p(X | Z)``: only the pairs of alternative ``i``
    change. Switching ``z_ik`` on adds ``w`` to ``adv[i, j]`` for every ``j`` without the
    aspect and takes it from ``adv[j, i]`` for every ``j`` with it (off: the reverse)."""
    N = wins.shape[0]
    sign = 1.0 if Z[i, k] == 0 else -1.0
    delta = 0.0
    for j in range(N):
        if j == i:
            continue
        x_ij = wins[i, j]
        x_ji = wins[j, i]
        if x_ij == 0.0 and x_ji == 0.0:
            continue
        a_ij = adv[i, j]
        a_ji = adv[j, i]
        old = pair_term(x_ij, x_ji, a_ij, a_ji, lapse)
        if Z[j, k]:
            a_ji -= sign * w
        else:
            a_ij += sign * w
        delta += pair_term(x_ij, x_ji, a_ij, a_ji, lapse) - old
    return delta


@njit(cache=True)
def apply_flip(i, k, Z, w, adv):
    """Flip ``z_ik`` and update row and column ``i`` of ``adv`` to match."""
    N = Z.shape[0]
    sign = 1.0 if Z[i, k] == 0 else -1.0
    for j in range(N):
        if j == i:
            continue
        if Z[j, k]:
            adv[j, i] -= sign * w
        else:
            adv[i, j] += sign * w
    Z[i, k] = 1 - Z[i, k]


@njit(cache=True)
def update_alternative_aspects(i, wins, Z, W, adv, counts, sticks, n_features, level,
                               lapse, rng):
    """Gibbs updates of ``z_ik`` for every represented aspect with ``mu_k > level``
    (eqs. 4.52 and 4.68), in column order, with the weights held fixed.

    ``p(z_ik = 1) : p(z_ik = 0) = mu_k / mu*_1 p(X | z_ik = 1) : (1 - mu_k) / mu*_0
    p(X | z_ik = 0)``, ``mu* = min(1, min of the active sticks)`` (eq. 4.47); the two
    ``mu*`` differ only when no other alternative has aspect ``k``. Every represented
    aspect carries its weight (drawn from its ``Gamma(1, 1)`` prior when it was
    represented empty), so this is an exact Gibbs update in the joint of ``Z`` and ``w``.
    """
    K = n_features
    for k in range(K):
        mk = sticks[k]
        if not mk > level:
            continue
        zk = Z[i, k]
        others = counts[k] - zk
        log_prior_odds = stick_log_odds(mk)
        if others == 0:
            log_prior_odds = add_lowest_stick_log_ratio(log_prior_odds, k, counts, sticks, K)
        ratio = flip_log_ratio(i, k, wins, Z, W[k, 0], adv, lapse)
        # log odds of z_ik = 1 against 0
        log_odds = (ratio if zk == 0 else -ratio) + log_prior_odds
        new = draw_binary(log_odds, rng)
        if new != zk:
            apply_flip(i, k, Z, W[k, 0], adv)
            counts[k] += new - zk


@njit(cache=True)
def update_aspects(wins, Z, W, unique, adv, counts, sticks, n_features, level, lapse, rng):
    """``adv`` recomputed, then every alternative's ``z_ik`` above the slice ``level``
    (:func:`update_alternative_aspects`), the represented aspects already in decreasing
    stick order (the stick-breaking representation; the solver sorts them, and drops the
    empty ones afterwards, in NumPy)."""
    N = Z.shape[0]
    fill_advantages(Z, W, unique, n_features, adv)
    for i in range(N):
        update_alternative_aspects(i, wins, Z, W, adv, counts, sticks, n_features, level,
                                   lapse, rng)


@njit(cache=True)
def log_gamma_density(x, shape, rate):
    """``log Gamma(x; shape, rate)``."""
    return (shape * math.log(rate) - math.lgamma(shape) + (shape - 1.0) * math.log(x)
            - rate * x)


@njit(cache=True)
def advantage_change(i, j, delta, wins, adv, lapse):
    """Change of the log-likelihood term of the pair ``(i, j)`` when ``i``'s advantage
    over ``j`` grows by ``delta`` (0 for a pair never compared)."""
    x_ij = wins[i, j]
    x_ji = wins[j, i]
    if x_ij == 0.0 and x_ji == 0.0:
        return 0.0
    a_ij = adv[i, j]
    a_ji = adv[j, i]
    return (pair_term(x_ij, x_ji, a_ij + delta, a_ji, lapse)
            - pair_term(x_ij, x_ji, a_ij, a_ji, lapse))


@njit(cache=True)
def weight_log_ratio(k, delta, wins, Z, adv, lapse):
    """``log p(X | w_k + delta) - log p(X | w_k)``: the pairs where exactly one
    alternative has aspect ``k`` (``adv[i, j] += delta`` for ``i`` with it, ``j``
    without)."""
    N = Z.shape[0]
    change = 0.0
    for i in range(N):
        if not Z[i, k]:
            continue
        for j in range(N):
            if Z[j, k]:
                continue
            change += advantage_change(i, j, delta, wins, adv, lapse)
    return change


@njit(cache=True)
def unique_log_ratio(i, delta, wins, adv, lapse):
    """``log p(X | u_i + delta) - log p(X | u_i)``: the pairs of alternative ``i``."""
    N = wins.shape[0]
    change = 0.0
    for j in range(N):
        if j == i:
            continue
        change += advantage_change(i, j, delta, wins, adv, lapse)
    return change


@njit(cache=True)
def shift_aspect_advantages(k, delta, Z, adv):
    """``adv[i, j] += delta`` for every ``i`` with aspect ``k`` and ``j`` without: the
    advantages after ``w_k`` grew by ``delta``."""
    N = Z.shape[0]
    for i in range(N):
        if not Z[i, k]:
            continue
        for j in range(N):
            if not Z[j, k]:
                adv[i, j] += delta


@njit(cache=True)
def shift_unique_advantages(i, delta, adv):
    """``adv[i, j] += delta`` for every ``j != i``: after ``u_i`` grew by ``delta``."""
    for j in range(adv.shape[0]):
        if j != i:
            adv[i, j] += delta


#: The smallest weight the chain represents (the smallest normal float64). A weight
#: prior ``Gamma(a, 1)`` with a small shape puts real mass below it (a ``Gamma(0.001, 1)``
#: draw underflows to exactly 0 about half the time), but a weight of 0 is outside the
#: support and a subnormal one has lost its precision: the chain lives on
#: ``[WEIGHT_FLOOR, inf)``, proposals below it are rejected and new weights are raised to
#: it (as the starting ones are). Below it a weight is negligible against every other
#: term of an advantage, so the likelihood cannot tell the difference.
WEIGHT_FLOOR = float(np.finfo(np.float64).tiny)


@njit(cache=True)
def propose_weight(current, eta, rng):
    """``w' ~ Gamma(eta, rate eta / w)`` (eq. 4.70: mean ``w``, sd ``w / sqrt(eta)``) and
    ``log Q(w | w') - log Q(w' | w)``.

    A proposal below :data:`WEIGHT_FLOOR` (an underflow) is outside the chain's support:
    it comes back as the current weight with ``log_q = -inf``, so that the caller's
    acceptance probability is 0 and the move is rejected (a Metropolis-Hastings move that
    cannot move stays put; retrying until it moves would never end once the current
    weight is so small that every draw underflows).
    """
    proposal = rng.gamma(eta, current / eta)
    if not proposal >= WEIGHT_FLOOR:
        return current, -np.inf
    log_q = (log_gamma_density(current, eta, eta / proposal)
             - log_gamma_density(proposal, eta, eta / current))
    if log_q != log_q:
        # NaN: a rate eta / w overflowed (weights within a factor eta of the floor). The
        # reverse move of such a pair overflows the same way, so rejecting both keeps
        # the chain reversible.
        return current, -np.inf
    return proposal, log_q


@njit(cache=True)
def _add_prior_shape(log_accept, proposal, current, shape):
    """``log_accept`` plus the ``Gamma(shape, 1)`` prior's ``(shape - 1)`` log ratio of the
    proposed to the current weight (the rest of the prior ratio, ``-delta``, is in the
    caller's sum; nothing to add under the ``shape = 1`` of eq. 4.67)."""
    if shape != 1.0:
        log_accept += (shape - 1.0) * (math.log(proposal) - math.log(current))
    return log_accept


@njit(cache=True)
def _move_aspect_weight(k, proposal, delta, log_accept, Z, W, adv, rng):
    """The Metropolis-Hastings decision for aspect ``k``'s weight ``W[k, 0] + delta =
    proposal``: on acceptance the weight and ``adv`` follow. Returns 1 if accepted."""
    if log_accept >= 0.0 or rng.random() < math.exp(log_accept):
        W[k, 0] = proposal
        shift_aspect_advantages(k, delta, Z, adv)
        return 1
    return 0


@njit(cache=True)
def _move_unique_weight(i, proposal, delta, log_accept, unique, adv, rng):
    """:func:`_move_aspect_weight` for the unique weight of alternative ``i``."""
    if log_accept >= 0.0 or rng.random() < math.exp(log_accept):
        unique[i] = proposal
        shift_unique_advantages(i, delta, adv)
        return 1
    return 0


@njit(cache=True)
def update_weights(wins, Z, W, unique, adv, n_features, lapse, eta, with_unique, rng,
                   shape=1.0):
    """One Metropolis-Hastings update of every active aspect weight and then (when
    ``with_unique``) of every unique weight (eqs. 4.69-4.70), each targeting its
    ``Gamma(shape, 1)`` prior (eq. 4.67: ``shape = 1``) times the likelihood; ``adv``
    follows the accepted moves. Returns the number accepted."""
    N = Z.shape[0]
    accepted = 0
    for k in range(n_features):
        w = W[k, 0]
        proposal, log_q = propose_weight(w, eta, rng)
        delta = proposal - w
        log_accept = weight_log_ratio(k, delta, wins, Z, adv, lapse) - delta + log_q
        log_accept = _add_prior_shape(log_accept, proposal, w, shape)
        accepted += _move_aspect_weight(k, proposal, delta, log_accept, Z, W, adv, rng)
    for i in range(N if with_unique else 0):
        u = unique[i]
        proposal, log_q = propose_weight(u, eta, rng)
        delta = proposal - u
        log_accept = unique_log_ratio(i, delta, wins, adv, lapse) - delta + log_q
        log_accept = _add_prior_shape(log_accept, proposal, u, shape)
        accepted += _move_unique_weight(i, proposal, delta, log_accept, unique, adv, rng)
    return accepted


@njit(cache=True)
def update_weights_from_prior(wins, Z, W, unique, adv, n_features, lapse, with_unique,
                              shape, rng):
    """One independence Metropolis-Hastings update of every active aspect weight and then
    (when ``with_unique``) of every unique weight, proposing from the ``Gamma(shape, 1)``
    prior itself: the prior and the proposal cancel, so a proposal is accepted with the
    likelihood ratio. Under a prior with ``shape < 1`` the weights span many orders of
    magnitude (a tenth of ``Gamma(0.1, 1)`` draws lie below ``1e-10``), which the
    multiplicative proposal of eq. 4.70 crosses only slowly; this move jumps across.
    ``adv`` follows the accepted moves. Returns the number accepted."""
    N = Z.shape[0]
    accepted = 0
    for k in range(n_features):
        w = W[k, 0]
        proposal = rng.gamma(shape, 1.0)
        if not proposal >= WEIGHT_FLOOR:  # outside the chain's support: rejected
            continue
        delta = proposal - w
        log_accept = weight_log_ratio(k, delta, wins, Z, adv, lapse)
        accepted += _move_aspect_weight(k, proposal, delta, log_accept, Z, W, adv, rng)
    for i in range(N if with_unique else 0):
        u = unique[i]
        proposal = rng.gamma(shape, 1.0)
        if not proposal >= WEIGHT_FLOOR:  # outside the chain's support: rejected
            continue
        delta = proposal - u
        log_accept = unique_log_ratio(i, delta, wins, adv, lapse)
        accepted += _move_unique_weight(i, proposal, delta, log_accept, unique, adv, rng)
    return accepted


@njit(cache=True)
def ibp_log_prob_packed(Z, n_features, alpha, harmonic):
    """``log P([Z])`` of the one-parameter IBP (eq. 2.1) for the first ``n_features``
    (all active) columns of ``Z`` with at most 62 rows, ``harmonic = H_N``: the columns
    packed into integers and sorted, so the multiplicities ``K_h`` are runs.
    :func:`sklearn_ibp.priors.ibp.ibp_log_prob` is the reference."""
    N = Z.shape[0]
    K = n_features
    keys = np.empty(K, dtype=np.int64)
    log_p = K * math.log(alpha) - alpha * harmonic
    lgamma_n1 = math.lgamma(N + 1.0)
    for k in range(K):
        key = 0
        m = 0
        for n in range(N):
            key = 2 * key + Z[n, k]
            m += Z[n, k]
        keys[k] = key
        # log B(m, N - m + 1) = lgamma(m) + lgamma(N - m + 1) - lgamma(N + 1)
        log_p += math.lgamma(m) + math.lgamma(N - m + 1.0) - lgamma_n1
    # Insertion sort: K is small, and it spares compiling NumPy's integer sort for this
    # one call (the runs, and so the result, do not depend on how the keys are sorted).
    for k in range(1, K):
        key = keys[k]
        j = k - 1
        while j >= 0 and keys[j] > key:
            keys[j + 1] = keys[j]
            j -= 1
        keys[j + 1] = key
    run = 1
    for k in range(1, K + 1):
        if k < K and keys[k] == keys[k - 1]:
            run += 1
        else:
            log_p -= math.lgamma(run + 1.0)
            run = 1
    return log_p
