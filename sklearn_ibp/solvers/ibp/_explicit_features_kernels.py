"""Numba kernels of the Gibbs samplers that keep the features ``A`` explicit.

Shared by the uncollapsed sampler (new features by the Metropolis proposal of Meeds et al.,
Doshi-Velez 2009 sec. 3.1) and the semi-collapsed sampler (new features with their values
integrated out, sec. 4.4). Given ``A``, rows are independent: ``z_nk`` depends on ``x_n``
only through the residual ``x_n - z_n A`` (eq. 3.2), which the kernel keeps per row.
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

_LOG_2PI = math.log(2.0 * math.pi)


@njit(cache=True)
def sweep_explicit_features(
    X, Z, counts, A, resid, n_features, order, alpha, beta, sigma_x2, sigma_a2, k_max,
    integrate_new, rng,
):
    """One sweep over the rows in ``order`` of ``Z`` given ``A``, in place.

    For each row: Gibbs for ``z_nk`` of features other rows share (eq. 3.2), then one move
    on the row's singleton features. ``integrate_new=False``: a Metropolis proposal that
    replaces them by ``Poisson(alpha beta / (beta + N - 1))`` new features with values drawn
    from the prior, accepted with the likelihood ratio (sec. 3.1). ``integrate_new=True``:
    the number of new features is Gibbs-sampled with their values integrated out,
    ``x_n - z_n A ~ N(0, (s_x^2 + k s_a^2) I)``, and their values drawn from their posterior.

    ``Z`` and ``A`` need ``k_max`` spare rows/columns. Returns ``(n_features, rows_done)``.
    """
    N = X.shape[0]
    D = X.shape[1]
    K = n_features
    cap = Z.shape[1]
    log_poisson = log_poisson_table(alpha * beta / (beta + N - 1.0), k_max)
    sigma_a = math.sqrt(sigma_a2)
    sigma_x = math.sqrt(sigma_x2)
    r0 = np.empty(D)
    log_new = np.empty(k_max + 1)
    eps = np.empty((k_max, D))
    for step in range(order.shape[0]):
        n = order[step]
        r = resid[n]
        for k in range(K):
            zk = Z[n, k]
            others = counts[k] - zk
            if others == 0:
                continue
            # log p(x | z_k = 1) - log p(x | z_k = 0) from the residual with z_k = 0.
            dot = 0.0
            sq = 0.0
            for d in range(D):
                base = r[d] + zk * A[k, d]
                dot += base * A[k, d]
                sq += A[k, d] * A[k, d]
            log_odds = (2.0 * dot - sq) / (2.0 * sigma_x2)
            new_value = draw_binary(log_odds + log_prior_odds(others, N, beta), rng)
            if new_value != zk:
                sign = new_value - zk
                for d in range(D):
                    r[d] -= sign * A[k, d]
                Z[n, k] = new_value
                counts[k] += sign
        # Residual with the row's singletons removed.
        for d in range(D):
            r0[d] = r[d]
        n_single = 0
        for k in range(K):
            if Z[n, k] != 0 and counts[k] == 1:
                n_single += 1
                for d in range(D):
                    r0[d] += A[k, d]
        if n_single > k_max:
            # The truncated proposal could not have drawn these singletons (and a Gibbs
            # step over 0..k_max would not be one over their full conditional): the move
            # leaves them, which keeps it exact.
            accept = False
            n_new = 0
        elif integrate_new:
            sq0 = 0.0
            for d in range(D):
                sq0 += r0[d] * r0[d]
            for j in range(k_max + 1):
                v = sigma_x2 + j * sigma_a2
                log_new[j] = (
                    log_poisson[j] - 0.5 * D * (_LOG_2PI + math.log(v)) - 0.5 * sq0 / v
                )
            n_new = draw_from_log_weights(log_new, rng)
            # Values of the new features given x_n: prior draws corrected towards the
            # residual (their posterior is Gaussian with the sum constrained by r0).
            if n_new > 0:
                shrink = sigma_a2 / (sigma_x2 + n_new * sigma_a2)
                for d in range(D):
                    s = sigma_x * rng.standard_normal()
                    for j in range(n_new):
                        eps[j, d] = sigma_a * rng.standard_normal()
                        s += eps[j, d]
                    for j in range(n_new):
                        eps[j, d] += shrink * (r0[d] - s)
            accept = True
        else:
            for j in range(k_max + 1):
                log_new[j] = log_poisson[j]
            n_new = draw_from_log_weights(log_new, rng)  # Poisson truncated at k_max
            for j in range(n_new):
                for d in range(D):
                    eps[j, d] = sigma_a * rng.standard_normal()
            sq_old = 0.0
            sq_new = 0.0
            for d in range(D):
                s = r0[d]
                for j in range(n_new):
                    s -= eps[j, d]
                sq_new += s * s
                sq_old += r[d] * r[d]
            log_accept = -(sq_new - sq_old) / (2.0 * sigma_x2)
            accept = log_accept >= 0.0 or rng.random() < math.exp(log_accept)
            if n_single == 0 and n_new == 0:
                accept = False
        if accept:
            for k in range(K):
                if Z[n, k] != 0 and counts[k] == 1:
                    Z[n, k] = 0
                    counts[k] = 0
            for d in range(D):
                r[d] = r0[d]
            for j in range(n_new):
                f = K + j
                for a in range(N):
                    Z[a, f] = 0
                Z[n, f] = 1
                counts[f] = 1
                for d in range(D):
                    A[f, d] = eps[j, d]
                    r[d] -= eps[j, d]
            K += n_new
        if K + k_max > cap and step + 1 < order.shape[0]:
            return K, step + 1
    return K, order.shape[0]


@njit(cache=True)
def draw_gaussian_features(X, Z, n_features, sigma_x2, sigma_a2, A, resid, counts, rng):
    """Draw ``A ~ p(A | Z, X)`` (eq. A.3) into ``A[:K]``, then ``resid = X - Z A`` and the
    feature counts, in place (the spare rows of ``A`` and entries of ``counts`` are zeroed).

    In information form ``P = Z^T Z / s_x^2 + I / s_a^2`` and ``H = Z^T X / s_x^2``; with
    ``P = L L^T``, ``A = L^{-T} (L^{-1} H + e)``, ``e`` standard normal, has mean
    ``P^{-1} H`` and column covariance ``P^{-1}``: one forward and one backward
    substitution per column.
    """
    N, D = X.shape
    K = n_features
    for k in range(A.shape[0]):
        counts[k] = 0
        for d in range(D):
            A[k, d] = 0.0
    if K > 0:
        P = np.zeros((K, K))
        H = np.zeros((K, D))
        for n in range(N):
            for j in range(K):
                if Z[n, j] != 0:
                    for d in range(D):
                        H[j, d] += X[n, d]
                    for i in range(K):
                        if Z[n, i] != 0:
                            P[j, i] += 1.0
        for k in range(K):
            counts[k] = int(P[k, k])
        for j in range(K):
            for i in range(K):
                P[j, i] /= sigma_x2
            P[j, j] += 1.0 / sigma_a2
            for d in range(D):
                H[j, d] /= sigma_x2
        L = np.linalg.cholesky(P)
        y = np.empty(K)
        for d in range(D):
            for j in range(K):  # L y = h_d
                total = H[j, d]
                for i in range(j):
                    total -= L[j, i] * y[i]
                y[j] = total / L[j, j]
            for j in range(K):
                y[j] += rng.standard_normal()
            for j in range(K - 1, -1, -1):  # L^T a = y + e
                total = y[j]
                for i in range(j + 1, K):
                    total -= L[i, j] * A[i, d]
                A[j, d] = total / L[j, j]
    for n in range(N):
        for d in range(D):
            resid[n, d] = X[n, d]
        for k in range(K):
            if Z[n, k] != 0:
                for d in range(D):
                    resid[n, d] -= A[k, d]
