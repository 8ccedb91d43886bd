"""Numba kernels shared by the stick-breaking DP mixture samplers (slice, truncated,
retrospective; Görür 2007, sec. 3.2.3).

The per-row work of these samplers is the same few things: the log density of a row under
a Gaussian component, a categorical draw from unnormalised log weights
(:func:`._dp_gaussian_kernels.draw_index` with ``NEGLIGIBLE_LOG_WEIGHT``) and renumbering
the labels (:func:`._dp_gaussian_kernels.relabel_slots`). Gaussian components come as
``means`` (K, D) and the upper Cholesky factors ``U_k = L_k^T`` of their precisions
``P_k = L_k L_k^T``, with
``log N(x | mu_k, P_k^{-1}) = log_norm_k - ||U_k (x - mu_k)||^2 / 2`` and
``log_norm_k = sum_d log L_k[d, d] - D/2 log(2 pi)``.

Every draw takes one uniform from the chain's generator. The helpers called per row and
component are inlined into the kernels (``inline="always"``): numba does not inline calls
across dispatchers, and a call per density costs four times the density in 2-D.
"""

import math

import numpy as np
from numba import njit

from ._dp_gaussian_kernels import precision_quad

#: The last stick position a label-switching scan swaps (see switch_adjacent_labels).
MAX_SCAN = 100_000


@njit(cache=True, inline="always")
def gaussian_log_density(X, i, means, upper, log_norm, k):
    """``log N(X[i] | means[k], P_k^{-1})`` with ``upper[k]`` the upper Cholesky factor
    ``L_k^T`` of ``P_k``."""
    return log_norm[k] - 0.5 * precision_quad(X[i], means[k], upper[k].T)


@njit(cache=True)
def gaussian_log_likelihood(X, means, upper, log_norm):
    """The (N, K) matrix of ``log N(x_i | mu_k, P_k^{-1})``."""
    N = X.shape[0]
    K = means.shape[0]
    out = np.empty((N, K))
    for i in range(N):
        for k in range(K):
            out[i, k] = gaussian_log_density(X, i, means, upper, log_norm, k)
    return out


@njit(cache=True)
def count_labels(labels, n_labels):
    """Rows per label, shape (n_labels,)."""
    counts = np.zeros(n_labels, dtype=np.int64)
    for i in range(labels.shape[0]):
        counts[labels[i]] += 1
    return counts


@njit(cache=True)
def _log_stick_factor(n, after, alpha):
    """``log B(1 + n, alpha + after)`` up to a constant: a position's factor of
    ``p(c) = prod_j E[v_j^{n_j} (1 - v_j)^{m_j}]`` with the sticks integrated out."""
    return math.lgamma(1.0 + n) + math.lgamma(alpha + after) - math.lgamma(1.0 + alpha + n + after)


@njit(cache=True)
def switch_adjacent_labels(counts, alpha, truncation, rng):
    """One forward scan of Metropolis-Hastings swaps of adjacent stick positions.

    The labels of the stick-breaking representation are not exchangeable (Görür 2007,
    sec. 3.2.3, on label switching): ``p(c) = prod_j B(1 + n_j, alpha + m_j) / B(1, alpha)``
    with ``m_j = sum_{l>j} n_l`` once the sticks are integrated out. Swapping the clusters
    (with their parameters) at positions ``j`` and ``j + 1`` leaves the likelihood as it
    is, so it is accepted with ``min(1, p(c') / p(c))``; for the untruncated DP that is
    ``(alpha + m + n_{j+1}) / (alpha + m + n_j)``, ``m = sum_{l>j+1} n_l``. The scan runs
    ``j = 0, 1, ...`` for as long as position ``j`` could hold a cluster (later swaps,
    of two empty positions, change nothing), or up to ``truncation - 2`` for the DP
    truncated at ``truncation`` components (``truncation = 0``: untruncated), whose last
    component, with ``v_M = 1``, has no factor.

    Parameters
    ----------
    counts : (J,) int64 rows per position (not modified).

    Returns
    -------
    occupant : (J',) int64
        For each new position, the old position whose cluster now sits there (``-1``:
        empty); ``J' >= J``.
    """
    J = counts.shape[0]
    size = J + 8
    n = np.zeros(size, dtype=np.int64)
    occupant = np.full(size, -1, dtype=np.int64)
    total = 0
    last = -1
    for j in range(J):
        n[j] = counts[j]
        total += counts[j]
        if counts[j] > 0:
            occupant[j] = j
            last = j
    before = 0  # rows at positions < j
    j = 0
    # A bounded scan: with alpha = 1e300 every swap towards an empty position is accepted
    # (the ratio rounds to 1) and a cluster would walk out forever. Stopping at a fixed
    # position is still a valid kernel: the moves past it are swaps the scan leaves out.
    while ((j <= last) if truncation == 0 else (j < truncation - 1)) and j < MAX_SCAN:
        if j + 2 > size:  # room for a cluster moving out past the end
            bigger = np.zeros(2 * size, dtype=np.int64)
            bigger_occ = np.full(2 * size, -1, dtype=np.int64)
            bigger[:size] = n
            bigger_occ[:size] = occupant
            n, occupant, size = bigger, bigger_occ, 2 * size
        a, b = n[j], n[j + 1]
        if a != b:
            m = total - before - a - b
            if truncation != 0 and j + 1 == truncation - 1:
                log_ratio = (_log_stick_factor(b, a, alpha) - _log_stick_factor(a, b, alpha))
            else:
                log_ratio = math.log(alpha + m + b) - math.log(alpha + m + a)
            if log_ratio >= 0.0 or rng.random() < math.exp(log_ratio):
                n[j], n[j + 1] = b, a
                occupant[j], occupant[j + 1] = occupant[j + 1], occupant[j]
                if j + 1 > last and b == 0:
                    last = j + 1
                elif j + 1 == last and a == 0:
                    last = j
        before += n[j]
        j += 1
    return occupant
