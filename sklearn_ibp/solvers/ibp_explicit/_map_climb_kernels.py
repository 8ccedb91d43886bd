"""Numba kernels of the deterministic climb to a posterior mode (Doshi-Velez 2009, sec. 4.5).

The state is held as in :mod:`._metropolis_kernels`: ``Z`` (N, cap) int8 and ``A``
(cap, D) float64 with spare slots, ``counts`` (cap,) int64 (``m_k``; 0 marks a dead slot,
compacted by :func:`~._metropolis_kernels.compact_features`) and ``pred`` (N, D), the
prediction ``Z A`` read by the likelihood's row kernel. The likelihood is seen through its
codes and arrays (``obs_kind``, ``noise``, ``prior_kind``, ``prior``; see
:mod:`sklearn_ibp.likelihoods._observation_kernels`).

The objective is the log joint ``log p(X | Z, A) + log p(A) + log P([Z] | alpha)`` with the
IBP probability of the left-ordered class (Doshi-Velez 2009, eq. 2.1),

    log P([Z]) = K log alpha - sum_h log K_h! - alpha H_N + sum_k log B(m_k, N - m_k + 1).

A flip of ``z_nk`` changes the column term of ``k``, the multiplicity term (column ``k``
leaves its group of identical columns and joins another), and, when the column empties,
``K log alpha`` and ``log p(a_k)``. Identical columns are found through a hash of each
column (the wrapping sum of fixed 64-bit weights of its rows), confirmed entry by entry.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ...likelihoods._observation_kernels import (
    OBSERVE_NOISY_OR,
    PRIOR_BERNOULLI,
    PRIOR_EXPONENTIAL,
    PRIOR_GAUSSIAN,
    row_log_likelihood,
    row_log_likelihood_shifted,
)
from .._feature_proposal_kernels import log_prior_feature
from ._metropolis_kernels import compact_features

__all__ = ["climb_features", "climb_rows", "column_weights"]

#: A move is taken only when it raises the log joint by more than this (no cycling on
#: rounding).
TOL = 1e-10


@njit(cache=True)
def column_weights(n_rows):
    """Fixed pseudo-random 64-bit weights of the rows (splitmix64 of the row index); a
    column's hash is the wrapping sum of the weights of its rows."""
    w = np.empty(n_rows, dtype=np.uint64)
    x = np.uint64(0)
    for i in range(n_rows):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        y = x
        y = (y ^ (y >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        y = (y ^ (y >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        w[i] = y ^ (y >> np.uint64(31))
    return w


@njit(cache=True)
def _column_hashes(Z, K, weights, out):
    for k in range(K):
        h = np.uint64(0)
        for i in range(Z.shape[0]):
            if Z[i, k] != 0:
                h = h + weights[i]
        out[k] = h


@njit(cache=True)
def _n_equal(Z, counts, hashes, K, k, m, h, flip_row):
    """Live columns other than ``k`` equal to column ``k`` with row ``flip_row`` toggled
    (``flip_row < 0``: none); ``m`` and ``h`` are that column's count and hash."""
    total = 0
    for j in range(K):
        if j == k or counts[j] != m or hashes[j] != h:
            continue
        same = True
        for i in range(Z.shape[0]):
            zi = Z[i, k]
            if i == flip_row:
                zi = 1 - zi
            if Z[i, j] != zi:
                same = False
                break
        if same:
            total += 1
    return total


@njit(cache=True)
def _noisy_or_entry(x, count, noise, d):
    """``log P(x_nd | count)`` of the leaky noisy-or (Doshi-Velez 2009, eq. A.4)."""
    log_p_zero = noise[0, d]
    if count > 0.0:
        log_p_zero += count * noise[1, d]
    return math.log(-math.expm1(log_p_zero)) if x > 0.5 else log_p_zero


@njit(cache=True)
def _row_gain(obs_kind, x, observed, pred, a, noise, table):
    """``log p(x_n | pred_n + a) - log p(x_n | pred_n)``, summed over the observed
    dimensions where ``a`` is not zero only. For the noisy-or (binary ``a``, integer
    counts) ``table[d, x, c]`` holds the entry's log likelihood at count ``c``."""
    total = 0.0
    for d in range(x.shape[0]):
        if a[d] == 0.0 or not observed[d]:
            continue
        if obs_kind == OBSERVE_NOISY_OR:
            c = int(pred[d] + 0.5)
            xi = 1 if x[d] > 0.5 else 0
            total += table[d, xi, c + 1] - table[d, xi, c]
        else:
            r = x[d] - pred[d]
            total += 0.5 * a[d] * (2.0 * r - a[d]) / noise[0, d]
    return total


@njit(cache=True)
def _best_singleton(n, X, observed, pred, obs_kind, noise, prior_kind, prior, out):
    """The values of a new feature that only row ``n`` has, at their mode given the row
    (the other features fixed in ``pred[n]``), into ``out``. Each dimension is separate:
    the Gaussian posterior mean, the non-negative mode ``max(0, r - s^2 rate)``, or the
    better binary value."""
    for d in range(X.shape[1]):
        if prior_kind == PRIOR_BERNOULLI:
            gain = math.log(prior[0]) - math.log1p(-prior[0])
            if observed[n, d] and obs_kind == OBSERVE_NOISY_OR:
                gain += (_noisy_or_entry(X[n, d], pred[n, d] + 1.0, noise, d)
                         - _noisy_or_entry(X[n, d], pred[n, d], noise, d))
            out[d] = 1.0 if gain > 0.0 else 0.0
        elif not observed[n, d]:
            out[d] = 0.0
        elif prior_kind == PRIOR_GAUSSIAN:
            prior_var = prior[0] * prior[0]
            out[d] = (X[n, d] - pred[n, d]) * prior_var / (prior_var + noise[0, d])
        else:
            out[d] = max(0.0, X[n, d] - pred[n, d] - noise[0, d] * prior[0])


@njit(cache=True)
def _best_shared(members, m, X, observed, pred, obs_kind, noise, prior_kind, prior, out):
    """The values of a new feature that exactly the rows ``members[:m]`` have, at their
    mode given those rows (the other features fixed in ``pred``), into ``out``; each
    dimension separately, as in :func:`_best_singleton`."""
    for d in range(X.shape[1]):
        total = 0.0
        n_obs = 0
        for t in range(m):
            i = members[t]
            if observed[i, d]:
                n_obs += 1
                if prior_kind == PRIOR_BERNOULLI:
                    if obs_kind == OBSERVE_NOISY_OR:
                        total += (_noisy_or_entry(X[i, d], pred[i, d] + 1.0, noise, d)
                                  - _noisy_or_entry(X[i, d], pred[i, d], noise, d))
                else:
                    total += X[i, d] - pred[i, d]
        if prior_kind == PRIOR_BERNOULLI:
            gain = total + math.log(prior[0]) - math.log1p(-prior[0])
            out[d] = 1.0 if gain > 0.0 else 0.0
        elif n_obs == 0:
            out[d] = 0.0
        elif prior_kind == PRIOR_GAUSSIAN:
            prior_var = prior[0] * prior[0]
            out[d] = total * prior_var / (n_obs * prior_var + noise[0, d])
        else:
            out[d] = max(0.0, (total - noise[0, d] * prior[0]) / n_obs)


@njit(cache=True)
def climb_rows(start, row_order, X, observed, Z, A, pred, counts, K, obs_kind, noise,
               prior_kind, prior, log_alpha, log_beta, weights, hashes, shared, rounds):
    """Rows ``row_order[start:]`` of one sweep of the climb, in place.

    For each row ``n``: every live ``z_nk`` in turn is flipped when the flip raises the
    log joint (a column left empty dies with its feature); then a new feature of row
    ``n`` alone, at its best values (:func:`_best_singleton`), is added when that raises
    the log joint. ``log_beta[m] = log B(m, N - m + 1)``; ``weights`` from
    :func:`column_weights`; ``hashes`` (uint64, length cap) is a work buffer.

    Returns ``(K, next)``: used slots and where to resume (``N`` when done, the dead slots
    then compacted away; earlier when a row could need a slot beyond the capacity).
    """
    N, D = X.shape
    cap = Z.shape[1]
    _column_hashes(Z, K, weights, hashes)
    rows = np.empty(N, dtype=np.int64)
    members = np.empty(N, dtype=np.int64)
    trial = np.empty(D)
    if shared and obs_kind == OBSERVE_NOISY_OR:
        table = np.empty((D, 2, cap + 2))
        for d in range(D):
            for c in range(cap + 2):
                table[d, 0, c] = _noisy_or_entry(0.0, float(c), noise, d)
                table[d, 1, c] = _noisy_or_entry(1.0, float(c), noise, d)
    else:
        table = np.zeros((1, 2, 1))
    for step in range(start, N):
        if K + 1 > cap:
            return K, step
        n = row_order[step]
        ll = row_log_likelihood(obs_kind, X[n], observed[n], pred[n], noise)
        for k in range(K):
            m_old = counts[k]
            if m_old == 0:
                continue
            zk = Z[n, k]
            sign = 1 - 2 * zk
            m_new = m_old + sign
            flip_ll = row_log_likelihood_shifted(obs_kind, X[n], observed[n], pred[n],
                                                 A[k], float(sign), noise)
            delta = flip_ll - ll - log_beta[m_old]
            delta += math.log(1.0 + _n_equal(Z, counts, hashes, K, k, m_old, hashes[k], -1))
            if zk == 0:
                h_new = hashes[k] + weights[n]
            else:
                h_new = hashes[k] - weights[n]
            if m_new > 0:
                delta += log_beta[m_new]
                delta -= math.log(1.0 + _n_equal(Z, counts, hashes, K, k, m_new, h_new, n))
            else:
                delta -= log_alpha + log_prior_feature(prior_kind, prior, A[k])
            if delta > TOL:
                Z[n, k] = 1 - zk
                for d in range(X.shape[1]):
                    pred[n, d] += sign * A[k, d]
                counts[k] = m_new
                hashes[k] = h_new
                ll = flip_ll
        # A new feature for row n, in slot K: alone, or (shared) with the rows it helps.
        _best_singleton(n, X, observed, pred, obs_kind, noise, prior_kind, prior, A[K])
        new_ll = row_log_likelihood_shifted(obs_kind, X[n], observed[n], pred[n], A[K],
                                            1.0, noise)
        n_same = 0
        for j in range(K):
            if counts[j] == 1 and Z[n, j] == 1:
                n_same += 1
        best = (new_ll - ll + log_prior_feature(prior_kind, prior, A[K]) + log_alpha
                + log_beta[1] - math.log(1.0 + n_same))
        n_best = 1
        rows[0] = n
        if shared:
            for d in range(D):
                trial[d] = A[K, d]
            for _ in range(rounds):
                # Recruit the rows whose likelihood the candidate raises; refit it to them.
                m = 1
                members[0] = n
                gain = 0.0
                for i in range(N):
                    if i == n:
                        continue
                    if _row_gain(obs_kind, X[i], observed[i], pred[i], trial, noise, table) > 0.0:
                        members[m] = i
                        m += 1
                if m == 1:
                    break
                _best_shared(members, m, X, observed, pred, obs_kind, noise, prior_kind,
                             prior, trial)
                h = np.uint64(0)
                for t in range(m):
                    i = members[t]
                    h = h + weights[i]
                    gain += _row_gain(obs_kind, X[i], observed[i], pred[i], trial, noise, table)
                    Z[i, K] = 1
                n_same = _n_equal(Z, counts, hashes, K, K, m, h, -1)
                for t in range(m):
                    Z[members[t], K] = 0
                delta = (gain + log_prior_feature(prior_kind, prior, trial) + log_alpha
                         + log_beta[m] - math.log(1.0 + n_same))
                if delta > best:
                    best = delta
                    n_best = m
                    for t in range(m):
                        rows[t] = members[t]
                    for d in range(D):
                        A[K, d] = trial[d]
        if best > TOL:
            for i in range(N):
                Z[i, K] = 0
            h = np.uint64(0)
            for t in range(n_best):
                i = rows[t]
                Z[i, K] = 1
                h = h + weights[i]
                for d in range(D):
                    pred[i, d] += A[K, d]
            counts[K] = n_best
            hashes[K] = h
            K += 1
        else:
            for d in range(D):
                A[K, d] = 0.0
    return compact_features(Z, A, counts, K), N


@njit(cache=True)
def climb_features(X, observed, Z, A, pred, K, obs_kind, noise, prior_kind, prior):
    """``A`` by exact coordinate ascent given ``Z`` (features in order, each dimension),
    for the non-negative (exponential prior, Doshi-Velez 2009, appendix A.2) and binary (leaky
    noisy-or, appendix A.3) features; ``pred`` follows each change.

    Non-negative: the conditional of ``a_kd`` is a Gaussian truncated to ``[0, inf)`` whose
    mode is ``max(0, (sum_n z_nk r_nd - s^2 rate) / m_kd)`` (``r`` the observed residual
    without feature ``k``, ``m_kd`` the observed rows that have ``k``). Binary: the better
    of 0 and 1 (ties keep the current value). Never lowers the log joint.
    """
    N, D = X.shape
    for k in range(K):
        for d in range(D):
            old = A[k, d]
            if prior_kind == PRIOR_EXPONENTIAL:
                total = 0.0
                m = 0
                for n in range(N):
                    if Z[n, k] != 0 and observed[n, d]:
                        total += X[n, d] - pred[n, d] + old
                        m += 1
                new = max(0.0, (total - noise[0, d] * prior[0]) / m) if m > 0 else 0.0
            else:
                on = math.log(prior[0])
                off = math.log1p(-prior[0])
                for n in range(N):
                    if Z[n, k] != 0 and observed[n, d]:
                        base = pred[n, d] - old
                        on += _noisy_or_entry(X[n, d], base + 1.0, noise, d)
                        off += _noisy_or_entry(X[n, d], base, noise, d)
                if on > off + TOL:
                    new = 1.0
                elif off > on + TOL:
                    new = 0.0
                else:
                    new = old
            if new != old:
                A[k, d] = new
                for n in range(N):
                    if Z[n, k] != 0:
                        pred[n, d] += new - old
