"""Numba kernels of the IBP particle filter and its conditional (particle Gibbs) form
(Doshi-Velez 2009, sec. 3.5, after Wood & Griffiths, 2007).

The rows are visited in an order ``order`` (time ``t`` adds row ``order[t]``). Each
particle is the prefix of a path of the sequential Indian buffet: the rows added so far
and the values of the features those rows created. A particle lives in a slot ``p`` of
per-slot arrays that are rewritten on resampling:

``n_live[p]``
    Features the particle has created so far (its slots ``0 .. n_live[p] - 1``, in order
    of creation, so the indices of a feature agree along a line of descent).
``counts[p, k]``, ``values[p, k, :]``
    ``m_k``, the number of added rows holding feature ``k``, and its value ``a_k``.
``rows[t, p, :]``
    The row the particle in slot ``p`` at time ``t`` gave row ``order[t]`` (in its own
    feature indices; zero beyond ``n_live``), kept for every time.
``parents[t, p]``
    The slot at time ``t - 1`` whose particle slot ``p`` extended at time ``t``.

The finished path is read back through ``parents``. The likelihood is described by its
codes and arrays (``obs_kind``, ``noise``, ``prior_kind``, ``prior``; see
:mod:`sklearn_ibp.likelihoods._observation_kernels`), so one compiled kernel serves every
explicit-feature model. Every draw comes from the chain's
:class:`numpy.random.Generator` ``rng``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ...likelihoods._observation_kernels import (
    OBSERVE_GAUSSIAN,
    PRIOR_BERNOULLI,
    _entry_log_likelihood,
    draw_prior_feature,
    row_log_likelihood,
    row_log_likelihood_shifted,
)
from .._draw_kernels import random_order
from .._feature_proposal_kernels import (
    PROPOSE_DATA,
    binary_entry_proposal,
    continuous_entry_proposal,
    log_prior_feature,
)

#: Resampling schemes.
RESAMPLE_MULTINOMIAL = 0
RESAMPLE_SYSTEMATIC = 1


@njit(cache=True)
def normalized_weights(log_w, out):
    """``out = exp(log_w) / sum exp(log_w)``; returns ``log sum exp(log_w)``.

    When every log weight is ``-inf`` the weights are taken as equal and ``-inf`` is
    returned (the unconditional filter then carries on from a population that explains
    nothing; the conditional one never gets there, its reference having positive weight).
    """
    P = log_w.shape[0]
    top = -np.inf
    for p in range(P):
        if log_w[p] > top:
            top = log_w[p]
    if top == -np.inf:
        for p in range(P):
            out[p] = 1.0 / P
        return -np.inf
    total = 0.0
    for p in range(P):
        out[p] = math.exp(log_w[p] - top)
        total += out[p]
    for p in range(P):
        out[p] /= total
    return top + math.log(total)


@njit(cache=True)
def effective_sample_size(weights):
    """``1 / sum W_p^2`` of normalised weights."""
    total = 0.0
    for p in range(weights.shape[0]):
        total += weights[p] * weights[p]
    return 1.0 / total


@njit(cache=True)
def _search(cumulative, u):
    """The first index ``j`` with ``u < cumulative[j]`` (the last one if none)."""
    lo, hi = 0, cumulative.shape[0] - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if u < cumulative[mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(cache=True)
def _systematic_positions(cumulative, u, out):
    """Systematic resampling: position ``i`` takes the ancestor whose cumulative-weight
    interval holds ``(i + u) / P``."""
    P = out.shape[0]
    j = 0
    for i in range(P):
        point = (i + u) / P
        while j < P - 1 and cumulative[j] <= point:
            j += 1
        out[i] = j


@njit(cache=True)
def resample_ancestors(weights, scheme, conditional, ancestors, positions, perm, cumulative,
                       rng):
    """Draw the ancestor slot of every slot from normalised ``weights``.

    Both schemes give every slot the marginal ``P(ancestor = j) = W_j``: multinomial by
    independent draws, systematic by one stratified sweep whose ``P`` positions are then
    dealt to the slots in a uniformly random order.

    With ``conditional`` slot 0 holds the reference particle and keeps ancestor 0; the
    other slots are drawn from the scheme's law given that. Multinomial: independent
    draws, as without the reference. Systematic (Chopin & Singh, 2015): with the position
    ``r`` dealt to slot 0 uniform and the offset ``u`` uniform, the event "position ``r``
    takes ancestor 0" is ``r + u < P W_0``, so ``V = r + u`` is drawn uniformly on
    ``[0, P W_0)``, ``r = floor(V)``, ``u = V - r``, and the other ``P - 1`` positions go
    to slots ``1 .. P - 1`` in a uniformly random order.

    ``positions``, ``perm`` (int64) and ``cumulative`` (float64), each of length ``P``,
    are work buffers.
    """
    P = weights.shape[0]
    acc = 0.0
    for p in range(P):
        acc += weights[p]
        cumulative[p] = acc
    cumulative[P - 1] = max(cumulative[P - 1], 1.0)
    start = 1 if conditional else 0
    if conditional:
        ancestors[0] = 0
    if scheme == RESAMPLE_MULTINOMIAL:
        for p in range(start, P):
            ancestors[p] = _search(cumulative, rng.random())
        return
    if not conditional:
        _systematic_positions(cumulative, rng.random(), positions)
        random_order(P, perm, rng)
        for i in range(P):
            ancestors[perm[i]] = positions[i]
        return
    v = rng.random() * P * weights[0]
    r = min(int(v), P - 1)
    _systematic_positions(cumulative, v - r, positions)
    positions[r] = 0  # exact in real arithmetic; guards rounding at the boundary
    random_order(P - 1, perm, rng)
    i = 0
    for position in range(P):
        if position == r:
            continue
        ancestors[1 + perm[i]] = positions[position]
        i += 1


@njit(cache=True)
def order_reference(Z, K, order, rng):
    """The path of the sequential buffet that the current ``Z`` is, in row order ``order``.

    A feature is created by the first row (in ``order``) that holds it; features created
    by the same row are put in a uniformly random order (each of the ``K_t!`` orders is
    an equally probable path to the same class, so the path is drawn from its
    conditional given ``[Z]``). Returns ``(columns, first)``: the columns of ``Z`` in
    order of creation and the time each is created. Every live column must be non-empty.
    """
    N = order.shape[0]
    time_of_row = np.empty(N, dtype=np.int64)
    for t in range(N):
        time_of_row[order[t]] = t
    first = np.full(K, N, dtype=np.int64)
    for i in range(N):
        t = time_of_row[i]
        for k in range(K):
            if Z[i, k] != 0 and t < first[k]:
                first[k] = t
    shuffled = np.empty(K, dtype=np.int64)
    random_order(K, shuffled, rng)
    # Counting sort by creation time, stable over the shuffled order.
    starts = np.zeros(N + 2, dtype=np.int64)
    for k in range(K):
        starts[first[k] + 1] += 1
    for t in range(N + 1):
        starts[t + 1] += starts[t]
    columns = np.empty(K, dtype=np.int64)
    created = np.empty(K, dtype=np.int64)
    for j in range(K):
        k = shuffled[j]
        slot = starts[first[k]]
        starts[first[k]] += 1
        columns[slot] = k
        created[slot] = first[k]
    return columns, created


@njit(cache=True)
def new_feature_proposal(draw, x, observed, base, obs_kind, noise, prior_kind, prior, out,
                         rng):
    """Draw (``draw=True``) or score (``draw=False``) a new feature's value ``out`` under
    its conditional posterior given the one row that creates it, ``q``; return
    ``log G_0(out) - log q(out)``, its share of the particle's weight.

    ``base`` is the row's prediction without this feature. Per dimension: a Gaussian
    (Gaussian prior, Gaussian noise), a Gaussian truncated to ``[0, inf)`` (exponential
    prior, Doshi-Velez 2009, appendix A.2) or a Bernoulli whose odds are the prior odds times the
    entry's likelihood ratio (binary features, any binary observation model). A
    continuous prior under a non-Gaussian observation falls back to the prior (ratio 1).
    Missing entries leave a dimension at its prior.
    """
    if prior_kind != PRIOR_BERNOULLI and obs_kind != OBSERVE_GAUSSIAN:
        if draw:
            draw_prior_feature(prior_kind, prior, out, rng)
        return 0.0
    log_q = 0.0
    for d in range(out.shape[0]):
        if prior_kind == PRIOR_BERNOULLI:
            log_odds = math.log(prior[0]) - math.log1p(-prior[0])
            if observed[d]:
                log_odds += (_entry_log_likelihood(obs_kind, x[d], base[d] + 1.0, noise, d)
                             - _entry_log_likelihood(obs_kind, x[d], base[d], noise, d))
            log_q += binary_entry_proposal(draw, log_odds, out, d, rng)
            continue
        precision = 0.0
        shift = 0.0
        if observed[d]:
            precision = 1.0 / noise[0, d]
            shift = (x[d] - base[d]) / noise[0, d]
        log_q += continuous_entry_proposal(draw, prior_kind, prior, precision, shift, out, d,
                                           rng)
    return log_prior_feature(prior_kind, prior, out) - log_q


@njit(cache=True)
def _log_sigmoid(u):
    """``log(1 / (1 + exp(-u)))`` without overflow."""
    if u >= 0.0:
        return -math.log1p(math.exp(-u))
    return u - math.log1p(math.exp(u))


@njit(cache=True)
def existing_features_step(draw, x, observed, row, counts, values, K, n, obs_kind, noise,
                           proposal, pred, rng):
    """Row ``z_n`` over the ``K`` features a particle already has: drawn (``draw=True``)
    or, for the reference, read from ``row`` and scored; ``counts`` and ``pred`` (zero on
    entry) follow. Returns ``(log prior(z) - log q(z), log p(x_n | pred))``.

    The prior (the buffet, Doshi-Velez 2009, sec. 2) holds feature ``k`` with probability
    ``m_k / n``. ``PROPOSE_PRIOR`` proposes from it (Doshi-Velez's filter; the ratio is 0).
    ``PROPOSE_DATA`` visits the features in slot order and proposes each ``z_nk`` from
    the prior odds times the likelihood ratio of adding ``a_k`` to the features chosen
    before it, so that a particle's row fits its data far more often than a blind draw.
    """
    log_ratio = 0.0
    log_lik = row_log_likelihood(obs_kind, x, observed, pred, noise)
    for k in range(K):
        m = counts[k]
        log_prior_odds = math.log(m) - math.log(n - m)
        log_odds = log_prior_odds
        with_k = 0.0
        if proposal == PROPOSE_DATA:
            with_k = row_log_likelihood_shifted(obs_kind, x, observed, pred, values[k], 1.0,
                                                noise)
            log_odds += with_k - log_lik
        if draw:
            row[k] = 1 if rng.random() < math.exp(_log_sigmoid(log_odds)) else 0
        if row[k] != 0:
            log_ratio += _log_sigmoid(log_prior_odds) - _log_sigmoid(log_odds)
            counts[k] += 1
            for d in range(pred.shape[0]):
                pred[d] += values[k, d]
            if proposal == PROPOSE_DATA:
                log_lik = with_k
        else:
            log_ratio += _log_sigmoid(-log_prior_odds) - _log_sigmoid(-log_odds)
    if proposal != PROPOSE_DATA:
        log_lik = row_log_likelihood(obs_kind, x, observed, pred, noise)
    return log_ratio, log_lik


@njit(cache=True)
def new_features_step(draw, x, observed, values, K_old, K, obs_kind, noise, prior_kind,
                      prior, proposal, pred, rng):
    """Values of the features ``K_old .. K - 1`` the row creates, in order: drawn
    (``draw=True``) or, for the reference, scored; ``pred`` follows. ``PROPOSE_PRIOR``
    draws them from ``G_0`` (ratio 0); ``PROPOSE_DATA`` from
    :func:`new_feature_proposal` given the row and the features before each. Returns
    ``(sum log G_0(a) / q(a), log p(x_n | pred))``."""
    log_ratio = 0.0
    for k in range(K_old, K):
        if proposal == PROPOSE_DATA:
            log_ratio += new_feature_proposal(draw, x, observed, pred, obs_kind, noise,
                                              prior_kind, prior, values[k], rng)
        elif draw:
            draw_prior_feature(prior_kind, prior, values[k], rng)
        for d in range(pred.shape[0]):
            pred[d] += values[k, d]
    return log_ratio, row_log_likelihood(obs_kind, x, observed, pred, noise)


@njit(cache=True)
def _grow_particles(counts, values, spare_counts, spare_values, rows, capacity):
    """Copies of the per-slot arrays with room for ``capacity`` features."""
    P, old, D = values.shape
    N = rows.shape[0]
    new_counts = np.zeros((P, capacity), dtype=np.int64)
    new_values = np.zeros((P, capacity, D))
    new_spare_counts = np.zeros((P, capacity), dtype=np.int64)
    new_spare_values = np.zeros((P, capacity, D))
    new_rows = np.zeros((N, P, capacity), dtype=np.int8)
    for p in range(P):
        for k in range(old):
            new_counts[p, k] = counts[p, k]
            new_spare_counts[p, k] = spare_counts[p, k]
            for d in range(D):
                new_values[p, k, d] = values[p, k, d]
                new_spare_values[p, k, d] = spare_values[p, k, d]
    for t in range(N):
        for p in range(P):
            for k in range(old):
                new_rows[t, p, k] = rows[t, p, k]
    return new_counts, new_values, new_spare_counts, new_spare_values, new_rows


@njit(cache=True)
def run_particles(X, observed, order, obs_kind, noise, prior_kind, prior, alpha, n_particles,
                  scheme, ess_threshold, proposal, conditional, ref_Z, ref_A, ref_created,
                  rng):
    """One run of the particle filter over the rows in ``order`` (Doshi-Velez 2009, sec. 3.5).

    At time ``t`` (row ``n = order[t]``, the ``t + 1``-th customer) every free particle
    extends its path by the Indian buffet (Doshi-Velez 2009, sec. 2): ``z_nk`` for each feature it
    has (prior ``Bernoulli(m_k / (t + 1))``; :func:`existing_features_step`), then
    ``Poisson(alpha / (t + 1))`` new features, whose values come from
    :func:`new_features_step`. Its weight is multiplied by the row's likelihood
    ``p(x_n | z_n, A)`` times the prior-to-proposal ratio of what it drew (1 with
    ``proposal == PROPOSE_PRIOR``, the filter of Doshi-Velez 2009: ``z_n`` from the buffet, values
    from ``G_0``). Before a row, when the effective sample size of the weights is below
    ``ess_threshold * P`` (always, at ``ess_threshold >= 1``), the particles are
    resampled (:func:`resample_ancestors`) and the weights reset.

    With ``conditional`` slot 0 is the reference particle: it follows the path given by
    ``ref_Z`` (N, K) with columns in order of creation, ``ref_A`` (K, D) and
    ``ref_created`` (the time each of its features is created, non-decreasing), and it is
    its own ancestor at every resampling; its row is scored by the same proposal the
    free particles draw from. At the end one particle is drawn by its final weight.

    Returns
    -------
    Z : ndarray of shape (N, K_out), int8
        The drawn path's rows, columns in order of creation.
    A : ndarray of shape (K_out, D)
        Its feature values.
    log_evidence : float
        ``log`` of the filter's unbiased estimate of ``p(X | alpha, params)`` (for the
        unconditional run; the conditional run's value is not an estimate of it).
    n_resampled : int
        How many times the particles were resampled.
    renewed : int
        The number of last rows (in ``order``) where the drawn path left the reference
        path (0: the reference was kept; N without a reference).
    """
    N, D = X.shape
    P = n_particles
    K_ref = ref_Z.shape[1]
    capacity = max(2 * K_ref + 8, 16)
    counts = np.zeros((P, capacity), dtype=np.int64)
    values = np.zeros((P, capacity, D))
    spare_counts = np.zeros((P, capacity), dtype=np.int64)
    spare_values = np.zeros((P, capacity, D))
    rows = np.zeros((N, P, capacity), dtype=np.int8)
    parents = np.zeros((N, P), dtype=np.int64)
    n_live = np.zeros(P, dtype=np.int64)
    spare_live = np.zeros(P, dtype=np.int64)
    log_w = np.zeros(P)
    weights = np.empty(P)
    ancestors = np.empty(P, dtype=np.int64)
    positions = np.empty(P, dtype=np.int64)
    perm = np.empty(P, dtype=np.int64)
    cumulative = np.empty(P)
    pred = np.empty(D)
    log_evidence = 0.0
    n_resampled = 0
    ref_next = 0  # the reference's next feature to create
    for t in range(N):
        n = order[t]
        if t > 0:
            log_total = normalized_weights(log_w, weights)
            if ess_threshold >= 1.0 or effective_sample_size(weights) < ess_threshold * P:
                log_evidence += log_total - math.log(P)
                resample_ancestors(weights, scheme, conditional, ancestors, positions, perm,
                                   cumulative, rng)
                for p in range(P):
                    a = ancestors[p]
                    parents[t, p] = a
                    spare_live[p] = n_live[a]
                    for k in range(n_live[a]):
                        spare_counts[p, k] = counts[a, k]
                        for d in range(D):
                            spare_values[p, k, d] = values[a, k, d]
                    log_w[p] = 0.0
                counts, spare_counts = spare_counts, counts
                values, spare_values = spare_values, values
                n_live, spare_live = spare_live, n_live
                n_resampled += 1
            else:
                for p in range(P):
                    parents[t, p] = p
        for p in range(P):
            row = rows[t, p]
            K_old = n_live[p]
            free = not (conditional and p == 0)
            if not free:
                for k in range(K_old):
                    row[k] = ref_Z[n, k]
            for d in range(D):
                pred[d] = 0.0
            log_ratio, log_lik = existing_features_step(
                free, X[n], observed[n], row, counts[p], values[p], K_old, t + 1, obs_kind,
                noise, proposal, pred, rng)
            if free:
                K = K_old + rng.poisson(alpha / (t + 1))
                if K > capacity:
                    capacity = max(2 * capacity, K + 8)
                    counts, values, spare_counts, spare_values, rows = _grow_particles(
                        counts, values, spare_counts, spare_values, rows, capacity)
                    row = rows[t, p]
            else:
                while ref_next < K_ref and ref_created[ref_next] == t:
                    ref_next += 1
                K = ref_next
                for k in range(K_old, K):
                    for d in range(D):
                        values[0, k, d] = ref_A[k, d]
            for k in range(K_old, K):
                counts[p, k] = 1
                row[k] = 1
            n_live[p] = K
            if K > K_old:
                log_new, log_lik = new_features_step(
                    free, X[n], observed[n], values[p], K_old, K, obs_kind, noise,
                    prior_kind, prior, proposal, pred, rng)
                log_ratio += log_new
            log_w[p] += log_ratio + log_lik
    log_total = normalized_weights(log_w, weights)
    log_evidence += log_total - math.log(P)
    acc = 0.0
    u = rng.random()
    chosen = P - 1
    for p in range(P):
        acc += weights[p]
        if u < acc:
            chosen = p
            break
    K_out = n_live[chosen]
    Z_out = np.zeros((N, K_out), dtype=np.int8)
    A_out = np.empty((K_out, D))
    for k in range(K_out):
        for d in range(D):
            A_out[k, d] = values[chosen, k, d]
    slot = chosen
    renewed = 0
    for t in range(N - 1, -1, -1):
        if slot != 0 or not conditional:
            renewed += 1
        for k in range(K_out):
            Z_out[order[t], k] = rows[t, slot, k]
        slot = parents[t, slot]
    return Z_out, A_out, log_evidence, n_resampled, renewed


@njit(cache=True)
def particle_sweep(X, observed, Z, A, K, obs_kind, noise, prior_kind, prior, alpha,
                   n_particles, scheme, ess_threshold, proposal, conditional, rng):
    """A fresh uniformly random row order, the reference path of ``Z[:, :K]`` and
    ``A[:K]`` in that order (:func:`order_reference`), then :func:`run_particles`.

    With ``conditional`` False the reference is ignored: the plain particle filter.
    Returns what :func:`run_particles` returns.
    """
    N = X.shape[0]
    order = np.empty(N, dtype=np.int64)
    random_order(N, order, rng)
    if conditional:
        columns, created = order_reference(Z, K, order, rng)
    else:
        columns = np.empty(0, dtype=np.int64)
        created = np.empty(0, dtype=np.int64)
    K_ref = columns.shape[0]
    ref_Z = np.empty((N, K_ref), dtype=np.int8)
    ref_A = np.empty((K_ref, X.shape[1]))
    for j in range(K_ref):
        k = columns[j]
        for i in range(N):
            ref_Z[i, j] = Z[i, k]
        for d in range(X.shape[1]):
            ref_A[j, d] = A[k, d]
    return run_particles(X, observed, order, obs_kind, noise, prior_kind, prior, alpha,
                         n_particles, scheme, ess_threshold, proposal, conditional, ref_Z,
                         ref_A, created, rng)
