"""Numba kernels of the binary detection likelihood (Doshi-Velez 2009, appendix A.3, sec. 7.3).

Dimension ``d`` of row ``n`` is reached when ``c_nd = (z_n A)_d > 0``, the count of the
row's active features that include ``d``; then ``P(x_nd = 1) = 1 - m_d`` (``m_d`` a miss
rate), otherwise ``P(x_nd = 1) = f_d`` (a false-detection rate). Keeping the counts makes
the Gibbs update of one binary ``a_kd`` cost O(rows having feature k).
"""

import math

import numpy as np
from numba import njit

from ._binary_feature_kernels import sweep_bernoulli_features

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

    Parameters
    ----------
    A, counts, X, observed, feature_ptr, feature_rows, p_a, rng
        As in :func:`~sklearn_ibp.likelihoods._binary_feature_kernels.sweep_bernoulli_features`.
    noise : ndarray of shape (2, n_dims)
        False-detection rates in row 0, miss rates in row 1 (each in (0, 1)).
    """
    gain_one, gain_zero = detection_gain_tables(noise)
    sweep_bernoulli_features(A, counts, X, observed, feature_ptr, feature_rows, gain_one,
                             gain_zero, p_a, rng)
