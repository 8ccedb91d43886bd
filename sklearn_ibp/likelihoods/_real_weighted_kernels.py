"""Numba kernels of the real-weighted latent feature model (Görür 2007, sec. 4.4, eq. 4.62).

``x_n ~ N(w_n A, diag(v))`` with ``w_nk = z_nk y_nk``, ``y_nk ~ N(0, 1)`` and
``a_kd ~ N(0, s_a^2)``. The kernels read the noise variances ``v_d`` from the same
(2, n_dims) ``noise`` array as the other Gaussian likelihoods (row 0 the variances, see
:mod:`._observation_kernels`); every sum runs over the observed entries only.

Three closed forms carry the sampler:

* one weight integrated out: with ``r = x_n - (prediction of the other features)``,
  ``r ~ N(y a_k, V)`` and ``y ~ N(0, 1)`` give ``r ~ N(0, V + a_k a_k^T)``, so
  ``log N(r; 0, V + a a^T) - log N(r; 0, V) = -log(1 + q) / 2 + b^2 / (2 (1 + q))``
  with ``q = a^T V^-1 a`` and ``b = a^T V^-1 r`` (matrix determinant lemma and
  Sherman-Morrison); ``y | z = 1`` is then ``N(b / (1 + q), 1 / (1 + q))``;
* a new feature's values integrated out given its weight ``y``: ``r_d ~ N(0, v_d + y^2
  s_a^2)`` independently over ``d``, and ``a_d | y, r_d`` is Gaussian;
* a row's weights given ``z_n`` and ``A``: a Bayesian linear regression with precision
  ``I + A_S V^-1 A_S^T`` over the row's features ``S``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ._conditionally_conjugate_kernels import cholesky_lower

__all__ = [
    "draw_new_feature_values",
    "draw_row_weights",
    "integrated_weight_terms",
    "new_feature_log_ratio",
]


@njit(cache=True)
def integrated_weight_terms(x, observed, pred, a, w_current, noise):
    """``(q, b)`` of feature ``a`` for one row: ``q = sum_d a_d^2 / v_d`` and
    ``b = sum_d a_d r_d / v_d`` over the observed entries, with the residual
    ``r = x - pred + w_current a`` (``pred`` includes ``w_current a``).

    ``-log(1 + q) / 2 + b^2 / (2 (1 + q))`` is ``log p(x | z_nk = 1) - log p(x | z_nk = 0)``
    with the weight ``y_nk`` integrated out (module docstring)."""
    q = 0.0
    b = 0.0
    for d in range(x.shape[0]):
        if observed[d]:
            inv_v = 1.0 / noise[0, d]
            r = x[d] - pred[d] + w_current * a[d]
            q += a[d] * a[d] * inv_v
            b += a[d] * r * inv_v
    return q, b


@njit(cache=True)
def new_feature_log_ratio(x, observed, pred, w_current, a, w, prior_var, noise):
    """``log p(r | y = w) - log p(r | feature off)`` for a feature of this row alone with
    its values ``a_k ~ N(0, prior_var)`` integrated out: ``sum_d [log N(r_d; 0, v_d + w^2
    prior_var) - log N(r_d; 0, v_d)]`` over the observed entries, with
    ``r = x - pred + w_current a`` (``w_current = 0`` when the feature is off)."""
    s = w * w * prior_var
    total = 0.0
    for d in range(x.shape[0]):
        if observed[d]:
            v = noise[0, d]
            r = x[d] - pred[d] + w_current * a[d]
            total += -0.5 * math.log1p(s / v) + 0.5 * r * r * s / (v * (v + s))
    return total


@njit(cache=True)
def draw_new_feature_values(x, observed, pred, w, prior_sd, noise, out, rng):
    """``a_d | y = w, r_d`` into ``out`` for a feature that row ``n`` alone has (``pred``
    excludes it): ``N(m, c)`` with ``c = 1 / (1 / s_a^2 + w^2 / v_d)``, ``m = c w r_d / v_d``
    at observed entries, the prior ``N(0, s_a^2)`` at missing ones."""
    prior_prec = 1.0 / (prior_sd * prior_sd)
    for d in range(x.shape[0]):
        if observed[d]:
            v = noise[0, d]
            c = 1.0 / (prior_prec + w * w / v)
            out[d] = c * w * (x[d] - pred[d]) / v + math.sqrt(c) * rng.standard_normal()
        else:
            out[d] = prior_sd * rng.standard_normal()


@njit(cache=True)
def draw_row_weights(X, observed, Z, A, W, n_features, noise, rng):
    """Every row's weights from their Gaussian conditional given ``z_n`` and ``A``.

    For row ``n`` with features ``S = {k : z_nk = 1}``: precision ``P = I + A_S V_n^-1
    A_S^T`` and mean ``P^-1 A_S V_n^-1 x_n`` (``V_n`` the noise variances of the observed
    entries); ``W[n, S]`` is drawn as ``P^-1 h + L^-T e`` with ``P = L L^T``. Entries
    with ``z_nk = 0`` are set to 0. Returns the number of rows drawn."""
    N, D = X.shape
    K = n_features
    idx = np.empty(K, dtype=np.int64)
    P = np.empty((K, K))
    L = np.empty((K, K))
    h = np.empty(K)
    for n in range(N):
        m = 0
        for k in range(K):
            if Z[n, k]:
                idx[m] = k
                m += 1
            else:
                W[n, k] = 0.0
        if m == 0:
            continue
        for i in range(m):
            ki = idx[i]
            hi = 0.0
            for j in range(i + 1):
                kj = idx[j]
                s = 0.0
                for d in range(D):
                    if observed[n, d]:
                        s += A[ki, d] * A[kj, d] / noise[0, d]
                P[i, j] = s
                P[j, i] = s
            P[i, i] += 1.0
            for d in range(D):
                if observed[n, d]:
                    hi += A[ki, d] * X[n, d] / noise[0, d]
            h[i] = hi
        Pm = P[:m, :m]
        Lm = L[:m, :m]
        cholesky_lower(Pm, Lm)
        # mean: solve L u = h, then L^T mu = u; spread: L^T s = e; y = mu + s.
        for i in range(m):
            t = h[i]
            for j in range(i):
                t -= Lm[i, j] * h[j]
            h[i] = t / Lm[i, i]
        for i in range(m):
            h[i] += rng.standard_normal()
        for i in range(m - 1, -1, -1):
            t = h[i]
            for j in range(i + 1, m):
                t -= Lm[j, i] * h[j]
            h[i] = t / Lm[i, i]
        for i in range(m):
            W[n, idx[i]] = h[i]
    return N
