"""Numba kernels of the conditionally conjugate Gaussian base (Görür 2007, sec. 3.3.1-3.3.2).

The samplers of sec. 3.3.2 evaluate, for every row and every cluster, one of two one-row
predictive densities in which one component parameter is integrated out given the other:

* SampleMu, eq. 3.66: the precision integrated out given the mean, a multivariate t
  evaluated from the Cholesky factor of ``W* = beta W + sum_l (x_l - mu)(x_l - mu)^T`` by the
  matrix determinant lemma;
* SampleS, eq. 3.67: the mean integrated out given the precision, the Gaussian
  ``N(x | m, S^{-1} + (n S + R)^{-1})`` with ``m = (n S + R)^{-1} (S sum_l x_l + R xi)``.

The plain-NumPy references are the methods ``log_predictive_given_mean`` and
``log_predictive_given_precision`` of
:class:`~sklearn_ibp.likelihoods.conditionally_conjugate.ConditionallyConjugateBase`, which
evaluate the equations as printed; the tests compare the two.
"""

import math

import numpy as np
from numba import njit

from ._normal_wishart_kernels import solve_lower_in_place, solve_lower_transpose_in_place

LOG_PI = math.log(math.pi)
LOG_2PI = math.log(2.0 * math.pi)


@njit(cache=True)
def t_log_constant(beta, count, n_features, log_det_w):
    """The row-independent part of eq. 3.66 for a cluster of ``count`` rows.

    ``lgamma((nu + 1)/2) - lgamma((nu + 1 - D)/2) - D/2 log pi - log|W*| / 2`` with
    ``nu = beta + count``.
    """
    nu = beta + count
    return (
        math.lgamma(0.5 * (nu + 1.0))
        - math.lgamma(0.5 * (nu + 1.0 - n_features))
        - 0.5 * n_features * LOG_PI
        - 0.5 * log_det_w
    )


@njit(cache=True, inline="always")
def whitened_norm2(x, mean, L, y):
    """``|L^{-1} (x - mean)|^2`` for a lower-triangular ``L``; ``y`` (D,) receives
    ``L^{-1} (x - mean)``."""
    quad = 0.0
    for d in range(x.shape[0]):
        s = x[d] - mean[d]
        for e in range(d):
            s -= L[d, e] * y[e]
        y[d] = s / L[d, d]
        quad += y[d] * y[d]
    return quad


@njit(cache=True)
def log_predictive_given_mean(x, mean, w_chol, log_constant, nu, y):
    """Eq. 3.66: ``log p(x | rows of the cluster, mu)`` with the precision integrated out.

    Parameters
    ----------
    x, mean : ndarray of shape (n_features,)
    w_chol : ndarray of shape (n_features, n_features)
        Lower Cholesky factor of ``W* = beta W + sum_l (x_l - mu)(x_l - mu)^T``.
    log_constant : float
        :func:`t_log_constant` of the cluster.
    nu : float
        ``beta + n`` (``n`` rows in the cluster, the row ``x`` not counted).
    y : ndarray of shape (n_features,)
        Scratch.

    Notes
    -----
    ``|W* + v v^T| = |W*| (1 + v^T W*^{-1} v)`` turns eq. 3.66 into
    ``log_constant - (nu + 1)/2 log(1 + |L^{-1} v|^2)`` with ``v = x - mu``.
    """
    quad = whitened_norm2(x, mean, w_chol, y)
    return log_constant - 0.5 * (nu + 1.0) * math.log1p(quad)


@njit(cache=True)
def cholesky_lower(A, L):
    """Lower Cholesky factor of the SPD matrix ``A`` into ``L``; returns ``sum log diag L``
    (half the log determinant), or NaN if ``A`` is not positive definite."""
    D = A.shape[0]
    half_logdet = 0.0
    for j in range(D):
        s = A[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        if not s > 0.0:
            return np.nan
        djj = math.sqrt(s)
        L[j, j] = djj
        half_logdet += math.log(djj)
        for i in range(j + 1, D):
            t = A[i, j]
            for k in range(j):
                t -= L[i, k] * L[j, k]
            L[i, j] = t / djj
        for i in range(j):
            L[i, j] = 0.0
    return half_logdet


@njit(cache=True)
def _lower_inverse(L, out):
    """``out = L^{-1}`` for a lower-triangular ``L``."""
    D = L.shape[0]
    for j in range(D):
        for i in range(D):
            out[i, j] = 0.0
        out[j, j] = 1.0 / L[j, j]
        for i in range(j + 1, D):
            s = 0.0
            for k in range(j, i):
                s -= L[i, k] * out[k, j]
            out[i, j] = s / L[i, i]


@njit(cache=True)
def _lower_inverse_gram(L, out, tmp):
    """``out = (L L^T)^{-1}`` from the lower factor ``L`` (``tmp`` is scratch, D x D)."""
    D = L.shape[0]
    _lower_inverse(L, tmp)
    for i in range(D):
        for j in range(i + 1):
            s = 0.0
            for k in range(i, D):
                s += tmp[k, i] * tmp[k, j]
            out[i, j] = s
            out[j, i] = s


@njit(cache=True)
def spd_inverse(A, out, L, tmp):
    """``out = A^{-1}`` for an SPD ``A`` by its Cholesky factor (``L``, ``tmp`` scratch);
    returns ``sum log diag L`` or NaN if ``A`` is not positive definite."""
    half_logdet = cholesky_lower(A, L)
    if not np.isnan(half_logdet):
        _lower_inverse_gram(L, out, tmp)
    return half_logdet


@njit(cache=True)
def predictive_given_precision(precision, precision_inv, count, total, R, R_xi, mean_out,
                               cov_chol_out, work):
    """Eq. 3.67 as a Gaussian: the mean and covariance factor of ``p(x | rows, S)``.

    With ``P = n S + R`` the posterior precision of the cluster mean given ``S``, the
    predictive of a new row is ``N(m, S^{-1} + P^{-1})`` with
    ``m = P^{-1} (S total + R xi)`` (``total`` the sum of the cluster's rows, ``n = count``).

    Parameters
    ----------
    precision, precision_inv : ndarray of shape (D, D)
        ``S`` and ``S^{-1}``.
    count : int
    total : ndarray of shape (D,)
    R, R_xi : ndarray of shape (D, D) and (D,)
        The mean's prior precision and ``R xi``.
    mean_out : ndarray of shape (D,)
    cov_chol_out : ndarray of shape (D, D)
        Lower Cholesky factor of ``S^{-1} + P^{-1}``.
    work : ndarray of shape (4, D, D)
        Scratch.

    Returns
    -------
    half_logdet_cov : float
        ``sum log diag(cov_chol_out)``; NaN if a matrix was not positive definite.
    """
    D = R.shape[0]
    P, LP, cov, tmp = work[0], work[1], work[2], work[3]
    for d in range(D):
        s = R_xi[d]
        for e in range(D):
            P[d, e] = count * precision[d, e] + R[d, e]
            s += precision[d, e] * total[e]
        mean_out[d] = s
    if np.isnan(cholesky_lower(P, LP)):
        return np.nan
    # mean = P^{-1} b by two triangular solves
    solve_lower_in_place(LP, mean_out, D)
    solve_lower_transpose_in_place(LP, mean_out, D)
    _lower_inverse_gram(LP, cov, tmp)  # cov = P^{-1}
    for d in range(D):
        for e in range(D):
            cov[d, e] += precision_inv[d, e]
    return cholesky_lower(cov, cov_chol_out)


@njit(cache=True)
def gaussian_log_density_cov(x, mean, cov_chol, half_logdet_cov, y):
    """``log N(x | mean, C)`` from the lower Cholesky factor of the covariance ``C``
    (``y`` is scratch of length D)."""
    D = x.shape[0]
    quad = whitened_norm2(x, mean, cov_chol, y)
    return -half_logdet_cov - 0.5 * quad - 0.5 * D * LOG_2PI


@njit(cache=True)
def log_mean_density_cov(X, mean, cov_chols, half_logdets, out):
    """``out[n] = log (1/J) sum_j N(x_n | mean, C_j)`` from the lower Cholesky factors of
    the covariances ``C_j`` (the prior predictive's fixed-draw average)."""
    J = cov_chols.shape[0]
    D = X.shape[1]
    values = np.empty(J)
    y = np.empty(D)
    log_j = math.log(J)
    for n in range(X.shape[0]):
        best = -np.inf
        for j in range(J):
            v = gaussian_log_density_cov(X[n], mean, cov_chols[j], half_logdets[j], y)
            values[j] = v
            if v > best:
                best = v
        total = 0.0
        for j in range(J):
            total += math.exp(values[j] - best)
        out[n] = best + math.log(total) - log_j


@njit(cache=True)
def bartlett_stream(dof, rng, gammas, normals):
    """The random numbers of ``len(dof)`` Bartlett factors, one draw after another:
    ``gammas[k, d] ~ Gamma((dof[k] - d) / 2)`` for ``d < D``, then ``normals[k]`` (the
    ``D (D - 1) / 2`` standard normals below the diagonal, row by row)."""
    D = gammas.shape[1]
    M = normals.shape[1]
    for k in range(dof.shape[0]):
        for d in range(D):
            gammas[k, d] = rng.standard_gamma((dof[k] - d) / 2.0)
        for j in range(M):
            normals[k, j] = rng.standard_normal()
