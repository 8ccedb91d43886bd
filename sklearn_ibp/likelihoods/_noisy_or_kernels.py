"""Numba kernels of the binary detection likelihood (Doshi-Velez 2009, appendix A.3, sec. 7.3).

Dimension ``d`` of row ``n`` is reached when ``c_nd = (z_n A)_d > 0``, the count of the
row's active features that include ``d``; then ``P(x_nd = 1) = 1 - m_d`` (``m_d`` a miss
rate), otherwise ``P(x_nd = 1) = f_d`` (a false-detection rate). Keeping the counts makes
the Gibbs update of one binary ``a_kd`` cost O(rows having feature k).
"""

import math

import numpy as np
from numba import njit

from ._binary_feature_kernels import apply_feature_change, draw_feature_row

__all__ = ["sweep_binary_features"]


@njit(cache=True)
def sweep_binary_features(A, counts, X, observed, feature_ptr, feature_rows, noise, p_a, rng):
    """One Gibbs sweep over every binary ``a_kd``, in place.

    Switching ``a_kd`` changes the likelihood only in the observed rows with ``z_nk = 1``
    that no other active feature reaches (``c_nd - a_kd = 0``): there ``x_nd = 1`` adds
    ``log(1 - m_d) - log f_d`` and ``x_nd = 0`` adds ``log m_d - log(1 - f_d)`` to the log
    odds of ``a_kd = 1``, which start at the prior's ``log(p_a / (1 - p_a))``. The values of
    one feature ``k`` are independent given the others, so a feature's row is drawn at once
    from one pass over its rows.

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
    noise : ndarray of shape (2, n_dims)
        False-detection rates in row 0, miss rates in row 1 (each in (0, 1)).
    p_a : float
        Prior probability that ``a_kd = 1``.
    rng : numpy.random.Generator
        The chain's generator.
    """
    n_features, n_dims = A.shape
    gain_one = np.empty(n_dims)
    gain_zero = np.empty(n_dims)
    for d in range(n_dims):
        false_rate = noise[0, d]
        miss_rate = noise[1, d]
        gain_one[d] = math.log1p(-miss_rate) - math.log(false_rate)
        gain_zero[d] = math.log(miss_rate) - math.log1p(-false_rate)
    prior_log_odds = math.log(p_a) - math.log1p(-p_a)
    log_odds = np.empty(n_dims)
    change = np.empty(n_dims, dtype=np.int64)
    for k in range(n_features):
        log_odds[:] = prior_log_odds
        for i in range(feature_ptr[k], feature_ptr[k + 1]):
            n = feature_rows[i]
            for d in range(n_dims):
                own = 1 if A[k, d] > 0.5 else 0
                if observed[n, d] and counts[n, d] == own:
                    log_odds[d] += gain_one[d] if X[n, d] > 0.5 else gain_zero[d]
        draw_feature_row(A, k, log_odds, change, rng)
        apply_feature_change(counts, feature_ptr, feature_rows, k, change)
