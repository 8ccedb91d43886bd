"""Numba kernels of the leaky noisy-or likelihood (Doshi-Velez 2009, appendix A.3, eq. A.4).

Row ``n`` reaches dimension ``d`` through ``c_nd = (z_n A)_d`` active features; each of
them fails to switch ``x_nd`` on with probability ``lambda`` and the leak fails with
probability ``eps``, so ``P(x_nd = 0) = eps lambda^c_nd``. Keeping the counts ``c`` makes
the Gibbs update of one binary ``a_kd`` cost O(rows having feature k).
"""

import math

import numpy as np
from numba import njit

from ._binary_feature_kernels import apply_feature_change, draw_feature_row

__all__ = ["log_prob_one_table", "sweep_noisy_or_features"]


@njit(cache=True)
def log_prob_one_table(noise, max_count):
    """``log P(x_nd = 1 | c_nd = c) = log(1 - eps_d lambda_d^c)`` for ``c = 0..max_count``.

    Parameters
    ----------
    noise : ndarray of shape (2, n_dims), float64
        ``log eps`` in row 0 and ``log lambda`` in row 1 (the layout of
        :data:`~sklearn_ibp.likelihoods._observation_kernels.OBSERVE_NOISY_OR`).
    max_count : int
        Largest count tabulated.

    Returns
    -------
    ndarray of shape (max_count + 1, n_dims), float64
    """
    n_dims = noise.shape[1]
    table = np.empty((max_count + 1, n_dims))
    for c in range(max_count + 1):
        for d in range(n_dims):
            log_p_zero = noise[0, d]
            if c > 0:
                log_p_zero += c * noise[1, d]
            table[c, d] = math.log(-math.expm1(log_p_zero))
    return table


@njit(cache=True)
def sweep_noisy_or_features(A, counts, X, observed, feature_ptr, feature_rows, noise, p_a, rng):
    """One Gibbs sweep over every binary ``a_kd``, in place (Doshi-Velez 2009, appendix A.3).

    With ``c = c_nd - a_kd`` the count of the row's other features reaching ``d``, switching
    ``a_kd`` on adds, for each observed row with ``z_nk = 1``, ``log lambda`` to the log odds
    of ``a_kd = 1`` when ``x_nd = 0`` and ``log(1 - eps lambda^(c + 1)) - log(1 - eps
    lambda^c)`` when ``x_nd = 1``; the log odds start at the prior's ``log(p_a / (1 - p_a))``.
    The values of one feature ``k`` are independent given the other features, so a
    feature's row is drawn at once from one pass over its rows, then the counts of its
    rows are updated.

    Parameters
    ----------
    A : ndarray of shape (n_features, n_dims), float64
        Binary features, updated in place.
    counts : ndarray of shape (n_samples, n_dims), int64
        ``Z A``; kept current in place.
    X : ndarray of shape (n_samples, n_dims), float64
        Binary data (anything where not observed).
    observed : ndarray of shape (n_samples, n_dims), uint8
        1 where ``x_nd`` is observed.
    feature_ptr, feature_rows : ndarray of int64
        The rows having feature ``k`` are ``feature_rows[feature_ptr[k]:feature_ptr[k + 1]]``.
    noise : ndarray of shape (2, n_dims), float64
        ``log eps`` in row 0 and ``log lambda`` in row 1 (``eps`` in (0, 1], ``lambda``
        in (0, 1)).
    p_a : float
        Prior probability that ``a_kd = 1``, in (0, 1).
    rng : numpy.random.Generator
        The chain's generator (one ``random()`` per ``a_kd``, features in order, dimensions
        in order).
    """
    n_features, n_dims = A.shape
    log_one = log_prob_one_table(noise, n_features)
    prior_log_odds = math.log(p_a) - math.log1p(-p_a)
    log_odds = np.empty(n_dims)
    change = np.empty(n_dims, dtype=np.int64)
    for k in range(n_features):
        log_odds[:] = prior_log_odds
        for i in range(feature_ptr[k], feature_ptr[k + 1]):
            n = feature_rows[i]
            for d in range(n_dims):
                if not observed[n, d]:
                    continue
                if X[n, d] > 0.5:
                    others = counts[n, d] - (1 if A[k, d] > 0.5 else 0)
                    log_odds[d] += log_one[others + 1, d] - log_one[others, d]
                else:
                    log_odds[d] += noise[1, d]
        draw_feature_row(A, k, log_odds, change, rng)
        apply_feature_change(counts, feature_ptr, feature_rows, k, change)
