"""Numba kernels of the leaky noisy-or likelihood (Doshi-Velez 2009, appendix A.3, eq. A.4).

Row ``n`` reaches dimension ``d`` through ``c_nd = (z_n A)_d`` active features; each of
them fails to switch ``x_nd`` on with probability ``lambda`` and the leak fails with
probability ``eps``, so ``P(x_nd = 0) = eps lambda^c_nd``. Keeping the counts ``c`` makes
the Gibbs update of one binary ``a_kd`` cost O(rows having feature k).
"""

import math

import numpy as np
from numba import njit

from ._binary_feature_kernels import sweep_bernoulli_features

__all__ = ["log_prob_one_table", "noisy_or_gain_tables", "sweep_noisy_or_features"]


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
def noisy_or_gain_tables(noise, n_features):
    """Log-odds gains of ``a_kd = 1`` from an observed entry reached by ``c`` other features.

    Switching ``a_kd`` on adds ``log(1 - eps lambda^(c + 1)) - log(1 - eps lambda^c)`` to
    the log odds where ``x_nd = 1`` and ``log lambda`` where ``x_nd = 0`` (eq. A.4).

    Parameters
    ----------
    noise : ndarray of shape (2, n_dims), float64
        ``log eps`` in row 0 and ``log lambda`` in row 1.
    n_features : int
        Number of features ``K``.

    Returns
    -------
    gain_one, gain_zero : ndarray
        The tables of
        :func:`~sklearn_ibp.likelihoods._binary_feature_kernels.sweep_bernoulli_features`.
    """
    n_dims = noise.shape[1]
    log_one = log_prob_one_table(noise, n_features)
    gain_one = np.empty((n_features, n_dims))
    gain_zero = np.empty((n_features, n_dims))
    for c in range(n_features):
        for d in range(n_dims):
            gain_one[c, d] = log_one[c + 1, d] - log_one[c, d]
            gain_zero[c, d] = noise[1, d]
    return gain_one, gain_zero


@njit(cache=True)
def sweep_noisy_or_features(A, counts, X, observed, feature_ptr, feature_rows, noise, p_a, rng):
    """One Gibbs sweep over every binary ``a_kd``, in place (Doshi-Velez 2009, appendix A.3): the
    gains of :func:`noisy_or_gain_tables` in
    :func:`~sklearn_ibp.likelihoods._binary_feature_kernels.sweep_bernoulli_features`.

    Parameters
    ----------
    A, counts, X, observed, feature_ptr, feature_rows, p_a, rng
        As in :func:`~sklearn_ibp.likelihoods._binary_feature_kernels.sweep_bernoulli_features`.
    noise : ndarray of shape (2, n_dims), float64
        ``log eps`` in row 0 and ``log lambda`` in row 1 (``eps`` in (0, 1], ``lambda``
        in (0, 1)).
    """
    gain_one, gain_zero = noisy_or_gain_tables(noise, A.shape[0])
    sweep_bernoulli_features(A, counts, X, observed, feature_ptr, feature_rows, gain_one,
                             gain_zero, p_a, rng)
