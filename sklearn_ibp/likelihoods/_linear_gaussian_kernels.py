"""Numba kernels of the linear-Gaussian likelihood: rank-one moves of the feature posterior.

The posterior of the features A given (Z, X) has precision ``P = Z^T Z / s_x^2 + I / s_a^2``
(shared by every column of A) and mean ``M = P^{-1} Z^T X / s_x^2`` (eq. A.3). Adding or
removing one row changes ``P`` by ``+- z z^T / s_x^2``; the covariance ``S = P^{-1}`` and the
mean follow by the Sherman-Morrison formula in O(K^2 + KD).
"""

import numpy as np
from numba import njit

from .._numba import FAST_MATH


@njit(cache=True, fastmath=FAST_MATH)
def _project_row(cov, mean, z_row, x_row, n_features, u, zm):
    """Fill ``u = S z`` and ``zm = z^T M - x`` and return ``z^T S z``."""
    n_dims = mean.shape[1]
    for j in range(n_features):
        u[j] = 0.0
    for d in range(n_dims):
        zm[d] = -x_row[d]
    for k in range(n_features):
        if z_row[k] != 0:
            for j in range(n_features):
                u[j] += cov[j, k]
            for d in range(n_dims):
                zm[d] += mean[k, d]
    zu = 0.0
    for k in range(n_features):
        if z_row[k] != 0:
            zu += u[k]
    return zu


@njit(cache=True, fastmath=FAST_MATH)
def _rank_one_move(cov, mean, n_features, u, zm, denom):
    """``S <- S - u u^T / denom`` and ``M <- M - u zm^T / denom``."""
    n_dims = mean.shape[1]
    for j in range(n_features):
        uj = u[j] / denom
        if uj == 0.0:
            continue
        for i in range(n_features):
            cov[j, i] -= uj * u[i]
        for d in range(n_dims):
            mean[j, d] -= uj * zm[d]


@njit(cache=True, fastmath=FAST_MATH)
def remove_row_from_posterior(cov, mean, z_row, x_row, sigma_x2, sigma_a2, n_features):
    """Take one row out of the feature posterior, in place.

    ``P_-n = P - z z^T / s_x^2``: ``S_-n = S + u u^T / c`` and
    ``M_-n = M + u (z^T M - x)^T / c`` with ``u = S z`` and ``c = s_x^2 - z^T S z``.
    Only the first ``n_features`` rows and columns of ``cov`` and ``mean`` are used.
    ``c = s_x^4 / (s_x^2 + z^T S_-n z)`` is at least ``s_x^4 / (s_x^2 + |z| s_a^2)``
    (``S_-n <= s_a^2 I``); where the subtraction cancels (``s_a >> s_x``) ``c`` is held
    at that bound instead of reaching zero.
    """
    u = np.empty(n_features)
    zm = np.empty(mean.shape[1])
    zu = _project_row(cov, mean, z_row, x_row, n_features, u, zm)
    if zu == 0.0:
        return
    n_on = 0
    for k in range(n_features):
        if z_row[k] != 0:
            n_on += 1
    # minus sign on both: S += u u^T / c, M -= u (x - zM)/c = M + u (zM - x)/c
    c = max(sigma_x2 - zu, sigma_x2 * sigma_x2 / (sigma_x2 + n_on * sigma_a2))
    _rank_one_move(cov, mean, n_features, u, zm, -c)


@njit(cache=True, fastmath=FAST_MATH)
def add_row_to_posterior(cov, mean, z_row, x_row, sigma_x2, n_features):
    """Put one row into the feature posterior, in place.

    ``P_+n = P + z z^T / s_x^2``: ``S_+n = S - u u^T / c`` and
    ``M_+n = M + u (x - z^T M)^T / c`` with ``u = S z`` and ``c = s_x^2 + z^T S z``.
    """
    u = np.empty(n_features)
    zm = np.empty(mean.shape[1])
    zu = _project_row(cov, mean, z_row, x_row, n_features, u, zm)
    if zu == 0.0:
        return
    c = sigma_x2 + zu
    _rank_one_move(cov, mean, n_features, u, zm, c)
