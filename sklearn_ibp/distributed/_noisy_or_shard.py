"""What one processor of the data-parallel noisy-or sampler does (Doshi-Velez 2009, sec. 5.1).

The binary model is not conjugate, so the feature posterior is kept as a product of
Bernoullis ``Q(A)`` in natural parameters: ``eta = logit(p_a) + sum_p lambda^p`` (K x D
log odds), where ``lambda^p`` is shard ``p``'s message, the contribution of its
likelihood (an EP-style projection; Doshi-Velez's (2009) "projection of P onto an exponential
family"). In a round, shard ``p``

1. forms its cavity ``eta^{-p} = logit(p_a) + (Lambda - lambda^p)`` (``Lambda`` the sum of
   the messages; written this way a lone shard's cavity is ``logit(p_a)`` exactly) and
   draws ``A`` from ``Q^{-p}``; one Gibbs pass of ``A`` given its rows (prior
   ``eta^{-p}``) follows, not counted below, so that ``Z`` is next updated given features
   that fit the shard's rows (a lone shard then is the serial sampler with one extra
   ``A`` pass);
2. runs ``n_sweeps`` uncollapsed sweeps: every row's ``z_nk`` by Gibbs with the IBP prior
   counts of the other shards at the last synchronisation plus its own over ``n_total``
   rows, the unique-feature Metropolis move (Algorithm 13; only the token holder may
   propose new features, the others may only drop), then every ``a_kd`` from its
   conditional with prior log odds ``eta^{-p}_kd`` (``logit(p_a)`` for a feature created
   this round); the conditional probabilities are averaged over the sweeps into the tilted
   marginal ``q_kd`` (Doshi-Velez 2009 counts how often ``a_kd = 1``; averaging the probabilities
   the draws came from is the Rao-Blackwellised, lower-variance version of that count);
3. sends ``lambda^p = logit(q) - eta^{-p}`` (``q`` averaged in log space, so that
   ``logit(q)`` keeps its precision near 0 and 1: with one sweep the message is the
   shard's log-likelihood ratio exactly, whatever the cavity; clipping ``q`` instead
   made messages run away against a confident cavity), clipped to ``+-LAMBDA_CLIP``, and
   exactly 0 where no observed row of the shard with the feature entered the conditional
   (a shard that knows nothing of an entry leaves it alone); its counts ``m_k^p``, its
   rows of ``Z`` and the table ``(n0[c], n1[c])`` of observed zeros and ones reached by
   ``c = z_n a_d`` features under its final ``A`` (what ``epsilon`` and ``lambda``
   depend on).

In the first round the messages are still empty: every shard starts from the chain's
starting ``A`` instead of a cavity draw (and skips the warm-up pass), otherwise each
shard would give feature ``k`` its own meaning from its own prior draw, and the messages
would never agree (measured: held-out log-likelihood -19.5 per row instead of -11.2 on
the test's block data).

Everything here is a module-level function of plain records so that Dask can ship it; a
task never mutates its arguments (the root's copy stays the last synchronised state).
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, replace

import numpy as np

from ..likelihoods._leaky_noisy_or_kernels import log_prob_one_table
from ..likelihoods._observation_kernels import OBSERVE_NOISY_OR, PRIOR_BERNOULLI
from ..likelihoods.linear_gaussian import _rows_by_feature
from ..solvers.ibp_explicit._metropolis_kernels import metropolis_rows
from ._noisy_or_kernels import refresh_counts, sweep_features_cavity, table_counts

__all__ = ["NoisyOrMessage", "NoisyOrShardData", "NoisyOrShardState", "cavity_log_odds",
           "run_noisy_or_round"]

#: Messages ``lambda^p`` are clipped to ``[-LAMBDA_CLIP, LAMBDA_CLIP]``.
LAMBDA_CLIP = 30.0


@dataclass
class NoisyOrShardData:
    """The rows of one shard: binary data (anything where not observed) and the mask."""

    X: np.ndarray
    observed: np.ndarray


@dataclass
class NoisyOrShardState:
    """What the root keeps of a shard between rounds (its last message).

    ``Z`` has exactly ``n_features`` columns (the global features); ``counts`` its column
    sums ``m_k^p``; ``lam`` (K x D) its likelihood message ``lambda^p``; ``n_zero`` and
    ``n_one`` its count table; ``A`` its final draw (kept for inspection only).
    """

    Z: np.ndarray
    counts: np.ndarray
    lam: np.ndarray
    n_zero: np.ndarray
    n_one: np.ndarray
    rng: np.random.Generator
    A: np.ndarray | None = None
    compute_seconds: float = 0.0
    n_created: int = 0


@dataclass
class NoisyOrMessage:
    """What the root broadcasts: ``Lambda = sum_p lambda^p`` (K x D), the total counts,
    the parameters and the round's instructions."""

    Lambda: np.ndarray
    counts: np.ndarray
    n_total: int
    alpha: float
    epsilon: float
    lam: float
    p_a: float
    n_sweeps: int
    k_max: int
    proposal: int
    proposal_rate: float | None
    A_start: np.ndarray | None = None
    feature_subsample: float | None = None


def cavity_log_odds(message, shard):
    """``eta^{-p} = logit(p_a) + (Lambda - lambda^p)``: the prior log odds of shard
    ``p``'s features. With one shard ``Lambda`` is ``lambda^p`` itself, so the cavity is
    ``logit(p_a)`` exactly."""
    return float(_logit(message.p_a)) + (message.Lambda - shard.lam)


def _logit(p):
    return np.log(p) - np.log1p(-p)


def _noise(epsilon, lam, D):
    noise = np.empty((2, D))
    noise[0] = np.log(epsilon)
    noise[1] = np.log(lam)
    return noise


def _sweep_A(Z, A, K, X, observed, noise, prior_log_odds, cond, touched, rng):
    """One cavity-prior Gibbs pass over ``A[:K]`` given ``Z[:, :K]``, in place."""
    if K == 0:
        return
    ptr, rows = _rows_by_feature(Z[:, :K])
    pred = np.empty(X.shape)
    counts = np.empty(X.shape, dtype=np.int64)
    refresh_counts(Z, A, K, pred, counts)
    sweep_features_cavity(A[:K], counts, X, observed, ptr, rows, noise,
                          np.ascontiguousarray(prior_log_odds[:K]), cond[:K], touched[:K],
                          rng)


def run_noisy_or_round(data: NoisyOrShardData, shard: NoisyOrShardState,
                       message: NoisyOrMessage, token: bool) -> NoisyOrShardState:
    """One round on one shard (see the module docstring); returns its new state.

    Parameters
    ----------
    data : NoisyOrShardData
    shard : NoisyOrShardState
        Its last synchronised state (not modified).
    message : NoisyOrMessage
    token : bool
        Whether this shard may create features this round (appended after the global ones).
    """
    start = time.perf_counter()
    X, observed = data.X, data.observed
    rng = copy.deepcopy(shard.rng)
    N_p, D = X.shape
    K0 = shard.Z.shape[1]
    logit_p_a = float(_logit(message.p_a))
    cavity = cavity_log_odds(message, shard)
    k_max = int(message.k_max)
    spare = 2 * k_max + 8 if token else 0
    cap = K0 + spare
    Z = np.zeros((N_p, max(cap, 1)), dtype=np.int8)
    Z[:, :K0] = shard.Z
    A = np.zeros((Z.shape[1], D))
    if message.A_start is not None:
        # First round: every shard starts from the chain's A (the messages are still
        # empty, and shards starting from independent prior draws would each give
        # feature k a different meaning).
        A[:K0] = message.A_start
    elif K0:
        p = 1.0 / (1.0 + np.exp(-cavity))
        A[:K0] = (rng.random((K0, D)) < p).astype(np.float64)
    counts = np.zeros(Z.shape[1], dtype=np.int64)
    counts[:K0] = message.counts - shard.counts + Z[:, :K0].sum(axis=0)
    noise = _noise(message.epsilon, message.lam, D)
    prior = np.array([float(message.p_a)])
    prior_log_odds = np.full((Z.shape[1], D), logit_p_a)
    prior_log_odds[:K0] = cavity
    cond = np.zeros((Z.shape[1], D))
    touched = np.zeros((Z.shape[1], D), dtype=np.uint8)
    if message.A_start is None:
        # Warm-up pass of A given the shard's rows (its probabilities are not kept).
        _sweep_A(Z, A, K0, X, observed, noise, prior_log_odds, cond, touched, rng)
        touched[:] = 0
    # log sum_s q_s and log sum_s (1 - q_s) over the sweeps, q_s the conditional
    # probabilities, kept in logs so that q and 1 - q keep their precision near 0 and 1.
    log_q_sum = np.full((Z.shape[1], D), -np.inf)
    log_r_sum = np.full((Z.shape[1], D), -np.inf)
    seen = np.zeros(Z.shape[1], dtype=np.int64)
    K = K0
    rate = message.alpha / message.n_total
    proposal_rate = rate if message.proposal_rate is None else float(message.proposal_rate)
    row_order = np.empty(N_p, dtype=np.int64)
    pred = np.zeros((N_p, D))
    n_created = 0
    counts_work = np.empty((N_p, D), dtype=np.int64)
    for _ in range(int(message.n_sweeps)):
        refresh_counts(Z, A, K, pred, counts_work)
        position = 0
        K_before = K
        # Which features' z_nk this sweep updates: all, or (Doshi-Velez 2009, sec. 5.1, feature
        # sub-sampling) a random subset chosen afresh each sweep; new slots always.
        sampled = np.ones(Z.shape[1], dtype=np.int8)
        if message.feature_subsample is not None and K > 0:
            n_keep = max(1, int(np.ceil(message.feature_subsample * K)))
            sampled[:K] = 0
            sampled[rng.choice(K, size=n_keep, replace=False)] = 1
        while True:
            # The serial kernel with the shard's arguments: prior counts over all rows,
            # births only with the token, log(1 - eps lambda^c) looked up (counts up to
            # the slots), the sub-sampled features, no compaction.
            K, position = metropolis_rows(
                position, row_order, X, observed, Z, A, pred, counts, K, OBSERVE_NOISY_OR,
                noise, PRIOR_BERNOULLI, prior, rate, proposal_rate, k_max,
                int(message.proposal), rng, bool(token), int(message.n_total),
                log_prob_one_table(noise, Z.shape[1] + 1), sampled, False)
            K = int(K)
            if position >= N_p:
                break
            # Grow the slots of the token holder (doubling).
            new_cap = max(2 * Z.shape[1], K + spare)
            Z, A, counts, prior_log_odds, cond, touched, log_q_sum, log_r_sum, seen = _grow(
                new_cap, Z, A, counts, prior_log_odds, cond, touched, log_q_sum, log_r_sum,
                seen, logit_p_a)
            sampled = np.concatenate([sampled, np.ones(new_cap - sampled.size, np.int8)])
        n_created += K - K_before
        # Features created this round that died again are dropped (older ones keep their
        # index: the root compacts the global numbering).
        if K > K0:
            keep = np.concatenate([np.arange(K0), K0 + np.flatnonzero(counts[K0:K] > 0)])
            if keep.size < K:
                for array in (Z.T, A, counts, prior_log_odds, log_q_sum, log_r_sum, seen,
                              touched):
                    array[: keep.size] = array[keep]
                    array[keep.size: K] = 0
                prior_log_odds[keep.size: K] = logit_p_a
                log_q_sum[keep.size: K] = -np.inf
                log_r_sum[keep.size: K] = -np.inf
                K = int(keep.size)
        _sweep_A(Z, A, K, X, observed, noise, prior_log_odds, cond, touched, rng)
        # log q_s = log sigmoid(x), log (1 - q_s) = log sigmoid(-x)
        np.logaddexp(log_q_sum[:K], -np.logaddexp(0.0, -cond[:K]), out=log_q_sum[:K])
        np.logaddexp(log_r_sum[:K], -np.logaddexp(0.0, cond[:K]), out=log_r_sum[:K])
        seen[:K] += 1
    # logit(q) with q the average of the conditional probabilities (the count of
    # a_kd = 1 in Doshi-Velez 2009, Rao-Blackwellised); a feature seen in no sweep keeps its cavity.
    logit_q = np.where(seen[:K, None] > 0, log_q_sum[:K] - log_r_sum[:K], prior_log_odds[:K])
    lam = np.clip(logit_q - prior_log_odds[:K], -LAMBDA_CLIP, LAMBDA_CLIP)
    lam = np.where(touched[:K] > 0, lam, 0.0)
    c = np.empty(X.shape, dtype=np.int64)
    refresh_counts(Z, A, K, pred, c)
    n_zero, n_one = table_counts(X, observed, c, K + 1)
    Z_out = Z[:, :K].copy()
    return replace(
        shard,
        Z=Z_out,
        counts=Z_out.sum(axis=0).astype(np.int64),
        lam=lam,
        n_zero=n_zero,
        n_one=n_one,
        rng=rng,
        A=A[:K].copy(),
        compute_seconds=time.perf_counter() - start,
        n_created=int(n_created),
    )


def _grow(cap, Z, A, counts, prior_log_odds, cond, touched, log_q_sum, log_r_sum, seen,
          logit_p_a):
    K_old = Z.shape[1]
    Z_new = np.zeros((Z.shape[0], cap), dtype=np.int8)
    Z_new[:, :K_old] = Z
    out = [Z_new]
    for array, fill in ((A, 0.0), (counts, 0), (prior_log_odds, logit_p_a), (cond, 0.0),
                        (touched, 0), (log_q_sum, -np.inf), (log_r_sum, -np.inf),
                        (seen, 0)):
        new = np.full((cap,) + array.shape[1:], fill, dtype=array.dtype)
        new[:K_old] = array
        out.append(new)
    return tuple(out)
