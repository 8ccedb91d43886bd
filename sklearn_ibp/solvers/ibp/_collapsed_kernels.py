"""Numba kernels of the collapsed Gibbs sampler of Griffiths and Ghahramani (2005).

Every conditional is computed, as eq. 3.6 and 3.7 read, from the full collapsed likelihood
``p(X | Z)`` of eq. A.2. The inverse ``M^{-1} = (Z^T Z + s_x^2/s_a^2 I)^{-1}`` and
``log |M|`` move by rank-one updates when a row changes; the exponent
``tr(X^T X) - tr((Z^T X)^T M^{-1} Z^T X)`` is evaluated afresh for each candidate, which is
what makes this sampler ``O(K^2 D)`` per entry of ``Z``.
"""

import math

import numpy as np
from numba import njit

from .._draw_kernels import (
    draw_binary,
    draw_from_log_weights,
    log_poisson_table,
    log_prior_odds,
)


@njit(cache=True)
def _log_lik(Minv, logdet, cross, sq_norm, n_rows, n_features, sigma_x, sigma_a):
    """Eq. A.2 without its ``-ND/2 log 2 pi`` constant."""
    K = n_features
    D = cross.shape[1]
    quad = 0.0
    for d in range(D):
        for i in range(K):
            s = 0.0
            for j in range(K):
                s += Minv[i, j] * cross[j, d]
            quad += cross[i, d] * s
    return (
        -(n_rows - K) * D * math.log(sigma_x)
        - K * D * math.log(sigma_a)
        - 0.5 * D * logdet
        - 0.5 * (sq_norm - quad) / (sigma_x * sigma_x)
    )


@njit(cache=True)
def _rank_one(Minv, z, n_features, sign, u, out, ratio):
    """``out = (M + sign z z^T)^{-1}`` from ``Minv``; returns ``log`` of the determinant factor."""
    K = n_features
    zu = 0.0
    for i in range(K):
        s = 0.0
        for j in range(K):
            if z[j] != 0:
                s += Minv[i, j]
        u[i] = s
    n_on = 0
    for i in range(K):
        if z[i] != 0:
            zu += u[i]
            n_on += 1
    c = 1.0 + sign * zu
    if sign < 0.0:
        # Removing a row: c = 1 / (1 + z M_-r^{-1} z) >= ratio / (ratio + |z|) as
        # M_-r >= ratio I; the subtraction cancels to zero or less when ratio is tiny.
        c = max(c, ratio / (ratio + n_on))
    for i in range(K):
        for j in range(K):
            out[i, j] = Minv[i, j] - sign * u[i] * u[j] / c
    return math.log(c)


@njit(cache=True)
def _move_cross(cross, z, x, n_features, sign):
    for k in range(n_features):
        if z[k] != 0:
            for d in range(x.shape[0]):
                cross[k, d] += sign * x[d]


@njit(cache=True)
def _full_inverse(gram, n_features, ratio, Minv):
    """Set ``Minv = (gram + ratio I)^{-1}`` and return ``log |gram + ratio I|``."""
    K = n_features
    if K == 0:
        return 0.0
    M = np.empty((K, K))
    for i in range(K):
        for j in range(K):
            M[i, j] = gram[i, j]
        M[i, i] += ratio
    L = np.linalg.cholesky(M)
    logdet = 0.0
    for i in range(K):
        logdet += 2.0 * math.log(L[i, i])
    inv = np.linalg.inv(M)
    for i in range(K):
        for j in range(K):
            Minv[i, j] = 0.5 * (inv[i, j] + inv[j, i])
    return logdet


@njit(cache=True)
def sweep_collapsed(
    X,
    Z,
    counts,
    gram,
    cross,
    Minv,
    logdet,
    sq_norm,
    n_features,
    order,
    alpha,
    beta,
    sigma_x,
    sigma_a,
    k_max,
    rng,
):
    """One sweep of collapsed Gibbs (eqs. 3.6-3.7) over the rows in ``order``, in place.

    ``Z`` needs ``k_max`` spare columns. Returns ``(n_features, logdet, rows_done)``; the
    sweep stops early, with ``rows_done < len(order)``, when the spare columns run out.
    """
    N = X.shape[0]
    D = X.shape[1]
    K = n_features
    cap = Z.shape[1]
    ratio = sigma_x * sigma_x / (sigma_a * sigma_a)
    log_poisson = log_poisson_table(alpha * beta / (beta + N - 1.0), k_max)
    u = np.empty(cap)
    Mtmp = np.empty((cap, cap))
    Mext = np.empty((cap, cap))
    gext = np.empty((cap, cap))
    ctmp = np.empty((cap, D))
    log_new = np.empty(k_max + 1)
    z = np.empty(cap, dtype=np.int8)
    for step in range(order.shape[0]):
        n = order[step]
        x = X[n]
        for k in range(K):
            z[k] = Z[n, k]
        # Take row n out: M_-n = M - z z^T.
        if K > 0:
            logdet += _rank_one(Minv, z, K, -1.0, u, Mtmp, ratio)
            for i in range(K):
                for j in range(K):
                    Minv[i, j] = Mtmp[i, j]
            _move_cross(cross, z, x, K, -1.0)
            for i in range(K):
                if z[i] != 0:
                    for j in range(K):
                        if z[j] != 0:
                            gram[i, j] -= 1.0
        for k in range(K):
            others = counts[k] - z[k]
            if others == 0:
                continue  # a singleton: replaced with the new features below
            log_p = np.empty(2)
            for value in range(2):
                z[k] = value
                ld = logdet + _rank_one(Minv, z, K, 1.0, u, Mtmp, ratio)
                for i in range(K):
                    for d in range(D):
                        ctmp[i, d] = cross[i, d]
                _move_cross(ctmp, z, x, K, 1.0)
                log_p[value] = _log_lik(Mtmp, ld, ctmp, sq_norm, N, K, sigma_x, sigma_a)
            new_value = draw_binary(log_p[1] - log_p[0] + log_prior_odds(others, N, beta), rng)
            counts[k] += new_value - Z[n, k]
            z[k] = new_value
            Z[n, k] = new_value
        # The row's singletons and its new features are one block (eq. 3.7): drop them,
        # then draw how many new features the row has.
        for k in range(K):
            if z[k] != 0 and counts[k] == 1:
                z[k] = 0
                counts[k] = 0
            Z[n, k] = z[k]
        # New features for row n (eq. 3.7), each likelihood from eq. A.2 in full.
        for j in range(k_max + 1):
            Kj = K + j
            for a in range(Kj):
                za = z[a] if a < K else 1
                for b in range(Kj):
                    zb = z[b] if b < K else 1
                    g = gram[a, b] if (a < K and b < K) else 0.0
                    gext[a, b] = g + za * zb
            ld = _full_inverse(gext, Kj, ratio, Mext)
            for a in range(Kj):
                for d in range(D):
                    za = z[a] if a < K else 1
                    ctmp[a, d] = (cross[a, d] if a < K else 0.0) + za * x[d]
            log_new[j] = log_poisson[j] + _log_lik(
                Mext, ld, ctmp, sq_norm, N, Kj, sigma_x, sigma_a
            )
        n_new = draw_from_log_weights(log_new, rng)
        for f in range(K, K + n_new):
            for a in range(N):
                Z[a, f] = 0
            Z[n, f] = 1
            z[f] = 1
            counts[f] = 1
            for j in range(cap):
                gram[f, j] = 0.0
                gram[j, f] = 0.0
            for d in range(D):
                cross[f, d] = 0.0
        # Put row n back.
        if n_new > 0:
            K += n_new
            for i in range(K):
                if z[i] != 0:
                    for j in range(K):
                        if z[j] != 0:
                            gram[i, j] += 1.0
            _move_cross(cross, z, x, K, 1.0)
            logdet = _full_inverse(gram, K, ratio, Minv)
        elif K > 0:
            logdet += _rank_one(Minv, z, K, 1.0, u, Mtmp, ratio)
            for i in range(K):
                for j in range(K):
                    Minv[i, j] = Mtmp[i, j]
            _move_cross(cross, z, x, K, 1.0)
            for i in range(K):
                if z[i] != 0:
                    for j in range(K):
                        if z[j] != 0:
                            gram[i, j] += 1.0
        if K + k_max > cap and step + 1 < order.shape[0]:
            return K, logdet, step + 1
    return K, logdet, order.shape[0]
