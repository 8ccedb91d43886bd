"""Numba kernel of the factor-analyser components of a DP mixture (Görür 2007, sec. 3.4).

A component is ``x ~ N(mu, Lambda Lambda^T + Psi)`` (eq. 3.68, the factors of eq. 3.76
integrated out) with ``Lambda`` of shape (D, q), ``q < D``, and ``Psi`` diagonal. Its log
density is evaluated without forming or factoring the D x D covariance, through the factor
posterior (the Woodbury identity and the matrix determinant lemma):

* ``M = I_q + Lambda^T Psi^{-1} Lambda`` (q x q), ``log |Sigma| = sum_d log psi_d + log |M|``;
* ``(x - mu)^T Sigma^{-1} (x - mu) = min_z ||Psi^{-1/2} (r - Lambda z)||^2 + ||z||^2`` with
  ``r = x - mu``, attained at ``z* = M^{-1} Lambda^T Psi^{-1} r`` (the posterior mean of the
  factors). Written as this sum of squares the quadratic form is never the difference of two
  large numbers, and an error in ``z*`` enters only to second order.

Per cluster the set-up is O(D q^2 + q^3), per row O(D q). The plain reference is
:func:`scipy.stats.multivariate_normal` with the covariance formed explicitly; the tests
compare the two.
"""

import math

import numpy as np
from numba import njit

from ._normal_wishart_kernels import solve_lower_in_place, solve_lower_transpose_in_place

LOG_2PI = math.log(2.0 * math.pi)


@njit(cache=True)
def _cholesky_in_place(A, n):
    """Lower Cholesky factor of the leading n x n block of ``A``, written over it; the
    strictly upper part is left as it was. Returns False if ``A`` is not positive
    definite."""
    for j in range(n):
        s = A[j, j]
        for k in range(j):
            s -= A[j, k] * A[j, k]
        if not s > 0.0:
            return False
        d = math.sqrt(s)
        A[j, j] = d
        for i in range(j + 1, n):
            s = A[i, j]
            for k in range(j):
                s -= A[i, k] * A[j, k]
            A[i, j] = s / d
    return True


@njit(cache=True)
def factor_log_density(X, means, loadings, uniquenesses, out):
    """``out[i, k] = log N(x_i | mu_k, Lambda_k Lambda_k^T + diag(psi_k))`` (eq. 3.68).

    Parameters
    ----------
    X : ndarray of shape (N, D)
    means : ndarray of shape (K, D)
    loadings : ndarray of shape (K, D, q)
    uniquenesses : ndarray of shape (K, D)
        The diagonals of ``Psi_k``, all positive.
    out : ndarray of shape (N, K)
        Written over; ``-inf`` for a component whose ``M`` is not positive definite
        (only with non-finite parameters).
    """
    N, D = X.shape
    K = means.shape[0]
    q = loadings.shape[2]
    M = np.empty((q, q))
    inv_psi = np.empty(D)
    r = np.empty(D)
    t = np.empty(q)
    for k in range(K):
        log_det = 0.0
        for d in range(D):
            inv_psi[d] = 1.0 / uniquenesses[k, d]
            log_det += math.log(uniquenesses[k, d])
        for a in range(q):
            for b in range(a + 1):
                s = 0.0
                for d in range(D):
                    s += loadings[k, d, a] * loadings[k, d, b] * inv_psi[d]
                M[a, b] = s
            M[a, a] += 1.0
        if not _cholesky_in_place(M, q):
            for i in range(N):
                out[i, k] = -np.inf
            continue
        for a in range(q):
            log_det += 2.0 * math.log(M[a, a])
        constant = -0.5 * (D * LOG_2PI + log_det)
        for i in range(N):
            for d in range(D):
                r[d] = X[i, d] - means[k, d]
            # t = Lambda^T Psi^{-1} r, then z* = M^{-1} t by two triangular solves
            for a in range(q):
                s = 0.0
                for d in range(D):
                    s += loadings[k, d, a] * inv_psi[d] * r[d]
                t[a] = s
            solve_lower_in_place(M, t, q)
            solve_lower_transpose_in_place(M, t, q)
            quad = 0.0
            for a in range(q):
                quad += t[a] * t[a]
            for d in range(D):
                e = r[d]
                for a in range(q):
                    e -= loadings[k, d, a] * t[a]
                quad += e * e * inv_psi[d]
            out[i, k] = constant - 0.5 * quad


@njit(cache=True)
def _log_column_pair(s_j, s_k, power, ard_rate):
    """``log`` of the column prior, ARD precision integrated out, of a pair of columns
    with signal-to-noise ratios ``s_j`` and ``s_k``."""
    return -power * (math.log(ard_rate + 0.5 * s_j) + math.log(ard_rate + 0.5 * s_k))


@njit(cache=True)
def rotate_loading_columns(loadings, psi, ard_shape, ard_rate, rng):
    """Rotate every pair of loading columns by an angle drawn by slice sampling, in place.

    ``Lambda -> Lambda G`` with ``G`` a rotation in the plane of columns ``j, k`` leaves
    ``Lambda Lambda^T`` and hence the likelihood with the factors integrated out (eq. 3.68)
    unchanged, and preserves Lebesgue measure; the only term that changes is the loadings'
    prior with the ARD precisions integrated out, a multivariate t per column,
    ``p(lambda_j) ~ (b + lambda_j^T Psi^{-1} lambda_j / 2)^{-(a + D / 2)}``. Drawing the
    angle from that density along the orbit (a generalised Gibbs move) leaves the
    posterior of ``Lambda`` given ``mu, Psi`` (factors and ARD precisions integrated out)
    invariant. It moves a factor that has spread over several parallel columns back into
    one, which single-site Gibbs updates do only slowly.

    The angle is slice sampled on the circle: a window of width ``2 pi`` placed at random
    around the current angle 0, then shrinkage (Neal 2003); the density is evaluated from
    the q x q matrix ``Lambda^T Psi^{-1} Lambda`` in O(1). Draws per pair: one uniform for
    the slice level, one for the window, one per shrinkage step.

    Parameters
    ----------
    loadings : ndarray of shape (D, q)
        Overwritten with the rotated loadings.
    psi : ndarray of shape (D,)
    ard_shape, ard_rate : float
        ``a`` and ``b`` of the ARD precisions' gamma prior.
    rng : numpy.random.Generator
    """
    D, q = loadings.shape
    if q < 2:
        return
    power = ard_shape + 0.5 * D
    G = np.empty((q, q))
    _scaled_gram_lower(loadings, psi, G)
    for a in range(q):
        for b in range(a):
            G[b, a] = G[a, b]
    two_pi = 2.0 * math.pi
    for j in range(q - 1):
        for k in range(j + 1, q):
            s_j, s_k, c = G[j, j], G[k, k], G[j, k]
            level = _log_column_pair(s_j, s_k, power, ard_rate) + math.log(rng.random())
            left = -two_pi * rng.random()
            right = left + two_pi
            while True:
                theta = left + (right - left) * rng.random()
                co, si = math.cos(theta), math.sin(theta)
                new_j = co * co * s_j + si * si * s_k + 2.0 * si * co * c
                new_k = si * si * s_j + co * co * s_k - 2.0 * si * co * c
                if _log_column_pair(new_j, new_k, power, ard_rate) > level:
                    break
                if theta < 0.0:
                    left = theta
                else:
                    right = theta
                if right - left < 1e-12:
                    theta, co, si = 0.0, 1.0, 0.0
                    break
            if theta == 0.0:
                continue
            for d in range(D):
                l_j, l_k = loadings[d, j], loadings[d, k]
                loadings[d, j] = co * l_j + si * l_k
                loadings[d, k] = -si * l_j + co * l_k
            for o in range(q):
                if o != j and o != k:
                    g_j, g_k = G[j, o], G[k, o]
                    G[j, o] = co * g_j + si * g_k
                    G[k, o] = -si * g_j + co * g_k
                    G[o, j] = G[j, o]
                    G[o, k] = G[k, o]
            G[j, j] = new_j
            G[k, k] = new_k
            G[j, k] = (co * co - si * si) * c + si * co * (s_k - s_j)
            G[k, j] = G[j, k]


@njit(cache=True)
def _factor_precision_cholesky(loadings, psi, M):
    """``M <-`` the lower Cholesky factor of ``I + Lambda^T Psi^{-1} Lambda`` (q, q), the
    factors' posterior precision given one row (``loadings`` (D, q), ``psi`` (D,))."""
    q = loadings.shape[1]
    _scaled_gram_lower(loadings, psi, M)
    for a in range(q):
        M[a, a] += 1.0
    _cholesky_in_place(M, q)


@njit(cache=True)
def _scaled_gram_lower(loadings, psi, G):
    """The lower triangle (diagonal included) of ``G <- Lambda^T Psi^{-1} Lambda`` (q, q)
    for ``loadings`` (D, q) and ``psi`` (D,); the upper triangle is left as it is."""
    D, q = loadings.shape
    for a in range(q):
        for b in range(a + 1):
            s = 0.0
            for d in range(D):
                s += loadings[d, a] * loadings[d, b] / psi[d]
            G[a, b] = s


@njit(cache=True)
def scan_factor_analyser(X, mean, loadings, psi, ard, beta, w, R, R_xi, ard_shape, ard_rate,
                         psi_low, psi_high, ard_low, ard_high, rng):
    """One Gibbs scan of one cluster's factor-analyser parameters given its rows, in place.

    The steps and their conditionals are those of
    :meth:`~sklearn_ibp.likelihoods.factor_analyzer.FactorAnalyzerBase.sample_posterior`
    (sec. 3.4, eqs. 3.68-3.76): the factors ``z_i``; each loading row ``Lambda_d`` with its
    uniqueness ``psi_d`` (jointly: ``psi_d`` with the row integrated out, then the row);
    rotations of the loading columns (:func:`rotate_loading_columns`); the ARD precisions;
    the mean with the factors integrated out. Random numbers are drawn from ``rng`` in this
    order: ``n q`` normals (row by row of ``z``), then for each dimension ``d`` one gamma and
    ``q`` normals, then the rotations' uniforms, ``q`` gammas, ``D`` normals.

    Parameters
    ----------
    X : ndarray of shape (n, D)
        The cluster's rows (``n`` may be 0: the scan then draws from the prior).
    mean, loadings, psi, ard : ndarray of shapes (D,), (D, q), (D,), (q,)
        The current state, overwritten with the new one.
    beta, w : float, ndarray of shape (D,)
        ``1 / psi_d ~ G(beta, beta w_d)`` (shape, rate).
    R, R_xi : ndarray of shapes (D, D), (D,)
        The mean's prior precision and ``R xi``.
    ard_shape, ard_rate : float
        The ARD precisions' gamma prior.
    psi_low, psi_high : ndarray of shape (D,)
        Numerical bounds on the uniquenesses; ``ard_low``, ``ard_high`` on the precisions.
    rng : numpy.random.Generator
    """
    n, D = X.shape
    q = loadings.shape[1]
    M = np.empty((q, q))
    t = np.empty(q)
    z = np.empty((n, q))
    # 1. factors: z_i = M^{-1} Lambda^T Psi^{-1} r_i + L^{-T} eps = L^{-T} (L^{-1} t_i + eps)
    _factor_precision_cholesky(loadings, psi, M)
    for i in range(n):
        for a in range(q):
            s = 0.0
            for d in range(D):
                s += loadings[d, a] * (X[i, d] - mean[d]) / psi[d]
            t[a] = s
        solve_lower_in_place(M, t, q)
        for a in range(q):
            t[a] += rng.standard_normal()
        solve_lower_transpose_in_place(M, t, q)
        for a in range(q):
            z[i, a] = t[a]
    # 2. (psi_d, Lambda_d) jointly, dimension by dimension (Normal-Gamma given z):
    #    A = Upsilon + Z^T Z, h_d = Z^T y_d (y_d = x_d - mu_d), m_d = A^{-1} h_d,
    #    1 / psi_d ~ G(beta + n/2, beta w_d + (||y_d - Z m_d||^2 + m_d^T Upsilon m_d) / 2),
    #    Lambda_d | psi_d ~ N(m_d, psi_d A^{-1})
    A = np.zeros((q, q))
    zc = np.zeros((q, D))
    for i in range(n):
        for a in range(q):
            for b in range(a + 1):
                A[a, b] += z[i, a] * z[i, b]
            for d in range(D):
                zc[a, d] += z[i, a] * (X[i, d] - mean[d])
    for a in range(q):
        A[a, a] += ard[a]
    _cholesky_in_place(A, q)
    m = np.empty(q)
    for d in range(D):
        for a in range(q):
            m[a] = zc[a, d]
        solve_lower_in_place(A, m, q)
        solve_lower_transpose_in_place(A, m, q)
        rss = 0.0
        for i in range(n):
            e = X[i, d] - mean[d]
            for a in range(q):
                e -= z[i, a] * m[a]
            rss += e * e
        for a in range(q):
            rss += ard[a] * m[a] * m[a]
        tau = rng.gamma(beta + 0.5 * n, 1.0 / (beta * w[d] + 0.5 * rss))
        value = 1.0 / tau if tau > 0.0 else psi_high[d]
        psi[d] = min(max(value, psi_low[d]), psi_high[d])
        sd = math.sqrt(psi[d])
        for a in range(q):
            t[a] = sd * rng.standard_normal()
        solve_lower_transpose_in_place(A, t, q)
        for a in range(q):
            loadings[d, a] = m[a] + t[a]
    # 2b. rotations of column pairs (the factors and the ARD precisions integrated out)
    rotate_loading_columns(loadings, psi, ard_shape, ard_rate, rng)
    # 3. ARD precisions: nu_j ~ G(a + D / 2, b + sum_d Lambda_dj^2 / (2 psi_d))
    for a in range(q):
        s = 0.0
        for d in range(D):
            s += loadings[d, a] * loadings[d, a] / psi[d]
        value = rng.gamma(ard_shape + 0.5 * D, 1.0 / (ard_rate + 0.5 * s))
        ard[a] = min(max(value, ard_low), ard_high)
    # 4. mean | Sigma = Lambda Lambda^T + Psi (factors integrated out):
    #    P = n Sigma^{-1} + R, mu = P^{-1} (Sigma^{-1} sum_i x_i + R xi) + L_P^{-T} eps, with
    #    Sigma^{-1} = Psi^{-1} - B B^T, B = Psi^{-1} Lambda L_M^{-T} (Woodbury; stays accurate
    #    when the loadings dwarf the noise, where a factor of Sigma itself would not)
    _factor_precision_cholesky(loadings, psi, M)
    B = np.empty((D, q))
    for d in range(D):
        for a in range(q):
            t[a] = loadings[d, a] / psi[d]
        solve_lower_in_place(M, t, q)
        for a in range(q):
            B[d, a] = t[a]
    total = np.zeros(D)
    for i in range(n):
        for d in range(D):
            total[d] += X[i, d]
    Sinv = np.empty((D, D))
    for d in range(D):
        for e in range(d + 1):
            s = 0.0
            for a in range(q):
                s -= B[d, a] * B[e, a]
            Sinv[d, e] = s
            Sinv[e, d] = s
        Sinv[d, d] += 1.0 / psi[d]
    P = np.empty((D, D))
    lin = np.empty(D)
    for d in range(D):
        s = R_xi[d]
        for e in range(D):
            s += Sinv[d, e] * total[e]
            P[d, e] = n * Sinv[d, e] + R[d, e]
        lin[d] = s
    _cholesky_in_place(P, D)
    solve_lower_in_place(P, lin, D)
    for d in range(D):
        lin[d] += rng.standard_normal()
    solve_lower_transpose_in_place(P, lin, D)
    for d in range(D):
        mean[d] = lin[d]
