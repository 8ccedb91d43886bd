"""Numba kernel of the mean-field ``nu`` update for the IBP linear-Gaussian model
(Doshi-Velez 2009, appendix B.2), used by :mod:`.variational` (the features' update is a
linear solve there, :func:`.variational.update_feature_posterior`).

The residual ``resid = o * (x - sum_k nu_k phi_k)`` (``o`` the observed mask) is kept
current feature by feature, so a pass over the features costs ``O(N K D)`` without
temporaries. Every array is float64 and C-contiguous: one compiled signature.
"""

from __future__ import annotations

import math

from numba import njit


@njit(cache=True)
def _expit(x):
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


@njit(cache=True)
def _shift_feature(resid, observed, nu, mean, k, sign):
    """``resid += sign * o * nu_{:,k} phi_k``."""
    N, D = resid.shape
    for n in range(N):
        w = sign * nu[n, k]
        if w != 0.0:
            for d in range(D):
                resid[n, d] += w * mean[k, d] * observed[n, d]


@njit(cache=True)
def update_assignments(resid, observed, nu, mean, var, sx2, prior_logit):
    """``nu_{:,k}`` for every feature in turn, all rows at once (appendix B.2):
    ``logit nu_nk = prior_logit_k + (sum_d r_nd phi_kd - o_nd (Phi_kd + phi_kd^2) / 2)
    / sx2``."""
    N, D = resid.shape
    K = nu.shape[1]
    for k in range(K):
        _shift_feature(resid, observed, nu, mean, k, 1.0)
        for n in range(N):
            gain = 0.0
            for d in range(D):
                gain += resid[n, d] * mean[k, d] \
                    - 0.5 * observed[n, d] * (var[k, d] + mean[k, d] * mean[k, d])
            nu[n, k] = _expit(prior_logit[k] + gain / sx2)
        _shift_feature(resid, observed, nu, mean, k, -1.0)
