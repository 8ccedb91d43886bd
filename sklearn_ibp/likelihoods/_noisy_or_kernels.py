"""Numba kernels of the binary detection likelihood (Doshi-Velez 2009, appendix A.3, sec. 7.3).

Dimension ``d`` of row ``n`` is reached when ``c_nd = (z_n A)_d > 0``, the count of the
row's active features that include ``d``; then ``P(x_nd = 1) = 1 - m_d`` (``m_d`` a miss
rate), otherwise ``P(x_nd = 1) = f_d`` (a false-detection rate). Keeping the counts makes
the Gibbs update of one binary ``a_kd`` cost O(rows having feature k).
"""

import math

import numpy as np
from numba import njit

__all__ = ["detection_gain_tables", "sweep_binary_features"]


@njit(cache=True)
def detection_gain_tables(noise):
    """Log-odds gains of ``a_kd = 1`` from an observed entry that no other feature reaches.

    Switching ``a_kd`` changes the likelihood only where no other active feature reaches
    ``d`` (``c = 0``): there ``x_nd = 1`` adds ``log(1 - m_d) - log f_d`` and ``x_nd = 0``
    adds ``log m_d - log(1 - f_d)``; entries reached by others (``c > 0``) add nothing,
    so the tables have the one row ``c = 0``.

    Parameters
    ----------
    noise : ndarray of shape (2, n_dims)
        False-detection rates in row 0, miss rates in row 1 (each in (0, 1)).

    Returns
    -------
    gain_one, gain_zero : ndarray of shape (1, n_dims)
        The tables of
        :func:`~sklearn_ibp.likelihoods._binary_feature_kernels.sweep_bernoulli_features`.
    """
    n_dims = noise.shape[1]
    gain_one = np.empty((1, n_dims))
    gain_zero = np.empty((1, n_dims))
    for d in range(n_dims):
        false_rate = noise[0, d]
        miss_rate = noise[1, d]
        gain_one[0, d] = math.log1p(-miss_rate) - math.log(false_rate)
        gain_zero[0, d] = math.log(miss_rate) - math.log1p(-false_rate)
    return gain_one, gain_zero


@njit(cache=True)
def sweep_binary_features(A, counts, X, observed, feature_ptr, feature_rows, noise, p_a, rng):
    """One Gibbs sweep over every binary ``a_kd``, in place: the gains of
    :func:`detection_gain_tables` in
    :func:`~sklearn_ibp.likelihoods._binary_feature_kernels.sweep_bernoulli_features`.

    The same arithmetic, draws and order as that sweep with those tables (a test holds
    them equal bit for bit), written out in one kernel without calls: a fit of the
    detection model compiles about a second less (each called kernel is compiled on its
    own and again inside its caller).

    Parameters
    ----------
    A, counts, X, observed, feature_ptr, feature_rows, p_a, rng
        As in :func:`~sklearn_ibp.likelihoods._binary_feature_kernels.sweep_bernoulli_features`.
    noise : ndarray of shape (2, n_dims)
        False-detection rates in row 0, miss rates in row 1 (each in (0, 1)).
    """
    n_features, n_dims = A.shape
    gains = np.empty((2, n_dims))  # of an observed one, of an observed zero
    for d in range(n_dims):
        gains[0, d] = math.log1p(-noise[1, d]) - math.log(noise[0, d])
        gains[1, d] = math.log(noise[1, d]) - math.log1p(-noise[0, d])
    prior_log_odds = math.log(p_a) - math.log1p(-p_a)
    log_odds = np.empty(n_dims)
    for k in range(n_features):
        for d in range(n_dims):
            log_odds[d] = prior_log_odds
        for i in range(feature_ptr[k], feature_ptr[k + 1]):
            n = feature_rows[i]
            for d in range(n_dims):
                own = 1 if A[k, d] > 0.5 else 0
                if observed[n, d] and counts[n, d] == own:
                    log_odds[d] += gains[0, d] if X[n, d] > 0.5 else gains[1, d]
        for d in range(n_dims):
            old = 1 if A[k, d] > 0.5 else 0
            if log_odds[d] >= 0.0:
                p_one = 1.0 / (1.0 + math.exp(-log_odds[d]))
            else:
                odds = math.exp(log_odds[d])
                p_one = odds / (1.0 + odds)
            new = 1 if rng.random() < p_one else 0
            A[k, d] = new
            if new != old:
                for i in range(feature_ptr[k], feature_ptr[k + 1]):
                    counts[feature_rows[i], d] += new - old
