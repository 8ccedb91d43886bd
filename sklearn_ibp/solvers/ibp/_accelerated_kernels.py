"""Numba kernels of the accelerated collapsed Gibbs sampler (Doshi-Velez 2009, ch. 4).

One call of :func:`sweep_accelerated` is one iteration of Algorithm 1: rows are visited in
windows of ``W``; a window's rows are taken out of the feature posterior (information form,
``P_-W = P - Z_W^T Z_W / s_x^2``, ``h_-W = h - Z_W^T X_W / s_x^2``); every ``z_nk`` of the
window is Gibbs-sampled from eq. 4.2,

    p(z_nk | Z_-nk, X) ~ prior(z_nk) N(X_W; Z_W M_-W, (Z_W S_-W Z_W^T + s_x^2 I) (x) I_D),

new features from eq. 3.7 (a new feature only row ``n`` has adds ``s_a^2`` to that row's
predictive variance); then the window goes back into the posterior.

The covariance ``S`` and mean ``M`` are carried alongside the exact sufficient statistics
``gram = Z^T Z`` (integers) and ``cross = Z^T X``; ``S`` and ``M`` are recomputed from them
every ``refresh_every`` windows so that rank-one drift cannot build up.
"""

import math

import numpy as np
from numba import njit
from scipy.linalg.lapack import dgetrf as _getrf
from scipy.linalg.lapack import dgetri as _getri
from scipy.linalg.lapack import dgetri_lwork as _getri_lwork

from ..._numba import FAST_MATH
from ...likelihoods._linear_gaussian_kernels import (
    add_row_to_posterior,
    remove_row_from_posterior,
)
from .._draw_kernels import (
    draw_binary,
    draw_from_log_weights,
    log_poisson_table,
    log_poisson_values,
    log_prior_odds,
)

_LOG_2PI = math.log(2.0 * math.pi)


@njit(cache=True, fastmath=FAST_MATH)
def window_log_density(C, E, w):
    """``log N(E; 0, C (x) I_D)`` for a window covariance ``C`` (w x w) and residual ``E``.

    Columns of ``E`` (one per dimension) are independent with covariance ``C``.
    """
    n_dims = E.shape[1]
    if w == 1:
        c = C[0, 0]
        quad = 0.0
        for d in range(n_dims):
            quad += E[0, d] * E[0, d]
        return -0.5 * (n_dims * (_LOG_2PI + math.log(c)) + quad / c)
    L = np.zeros((w, w))
    logdet = 0.0
    for i in range(w):
        for j in range(i + 1):
            s = C[i, j]
            for t in range(j):
                s -= L[i, t] * L[j, t]
            if i == j:
                L[i, i] = math.sqrt(s)
                logdet += 2.0 * math.log(L[i, i])
            else:
                L[i, j] = s / L[j, j]
    quad = 0.0
    y = np.empty(w)
    for d in range(n_dims):
        for i in range(w):
            s = E[i, d]
            for t in range(i):
                s -= L[i, t] * y[t]
            y[i] = s / L[i, i]
            quad += y[i] * y[i]
    return -0.5 * (n_dims * (w * _LOG_2PI + logdet) + quad)


@njit(cache=True, fastmath=FAST_MATH)
def refresh_posterior(gram, cross, cov, mean, n_features, sigma_x2, sigma_a2):
    """Recompute ``S = (gram / s_x^2 + I / s_a^2)^{-1}`` and ``M = S cross / s_x^2``."""
    K = n_features
    if K == 0:
        return
    P = np.empty((K, K))
    for i in range(K):
        for j in range(K):
            P[i, j] = gram[i, j] / sigma_x2
        P[i, i] += 1.0 / sigma_a2
    S = np.linalg.inv(P)
    for i in range(K):
        for j in range(K):
            cov[i, j] = 0.5 * (S[i, j] + S[j, i])
    for i in range(K):
        for d in range(mean.shape[1]):
            s = 0.0
            for j in range(K):
                s += cov[i, j] * cross[j, d]
            mean[i, d] = s / sigma_x2


@njit(cache=True, fastmath=FAST_MATH, inline="always")
def _update_stats(gram, cross, z_row, x_row, n_features, sign):
    for k in range(n_features):
        if z_row[k] != 0:
            for j in range(n_features):
                if z_row[j] != 0:
                    gram[k, j] += sign
            for d in range(x_row.shape[0]):
                cross[k, d] += sign * x_row[d]


@njit(cache=True, fastmath=FAST_MATH)
def _flip_window(C, E, T, cov, mean, i, k, delta, w, Cp, Ep):
    """Window covariance and residual after ``z_{W_i, k} += delta`` (into ``Cp``, ``Ep``)."""
    for a in range(w):
        for b in range(w):
            Cp[a, b] = C[a, b]
    for j in range(w):
        if j != i:
            Cp[i, j] = C[i, j] + delta * T[k, j]
            Cp[j, i] = Cp[i, j]
    Cp[i, i] = C[i, i] + 2.0 * delta * T[k, i] + cov[k, k]
    for a in range(w):
        for d in range(E.shape[1]):
            Ep[a, d] = E[a, d]
    for d in range(E.shape[1]):
        Ep[i, d] = E[i, d] - delta * mean[k, d]


@njit(cache=True, fastmath=FAST_MATH)
def _open_features(Z, counts, gram, cross, cov, mean, r, first, n_new, sigma_a2):
    """Start ``n_new`` features at column ``first`` that only row ``r`` has.

    Given the other rows their values have the prior ``N(0, s_a^2)``, uncorrelated with the
    existing features, and no statistics.
    """
    cap = Z.shape[1]
    for f in range(first, first + n_new):
        for j in range(cap):
            cov[f, j] = 0.0
            cov[j, f] = 0.0
            gram[f, j] = 0.0
            gram[j, f] = 0.0
        cov[f, f] = sigma_a2
        for d in range(mean.shape[1]):
            mean[f, d] = 0.0
            cross[f, d] = 0.0
        for a in range(Z.shape[0]):
            Z[a, f] = 0
        Z[r, f] = 1
        counts[f] = 1


@njit(cache=True, fastmath=FAST_MATH)
def _flip_step(step, K, Z, r, counts, sampled):
    """Step ``step`` of row ``r``'s ``2 K``: ``(k, z_rk, m_-r,k, turn)`` with
    ``k = step % K`` and ``turn`` whether this step updates ``z_rk``: steps ``0 .. K - 1``
    the features other rows share (``m_-r,k > 0``), steps ``K .. 2K - 1`` the row's
    singletons (``m_-r,k == 0``, ``z_rk == 1``), each only when ``sampled[k] != 0``."""
    k = step % K
    zk = Z[r, k]
    others = counts[k] - zk
    turn = (others == 0) == (step >= K) and not (others == 0 and zk == 0) and sampled[k] != 0
    return k, zk, others, turn


@njit(cache=True, fastmath=FAST_MATH)
def _accept_flip(others, n_rows, beta, zk, current, proposed, rng):
    """Whether ``z_rk`` flips from ``zk``: a singleton (``others == 0``) is always dropped,
    its mass going to the new-feature draw (eq. 3.7); a shared feature is Gibbs-sampled
    from its prior odds (eq. 3.6) and the log densities ``current`` (as it is) and
    ``proposed`` (flipped)."""
    if others == 0:
        return True
    log_odds = log_prior_odds(others, n_rows, beta)
    log_odds += proposed - current if zk == 0 else current - proposed
    return draw_binary(log_odds, rng) != zk


@njit(cache=True, fastmath=FAST_MATH)
def _room_for_new(counts, K, max_features):
    """How many new features a row may open under the bound ``max_features`` on the live
    features: the Poisson draw of eq. 3.7 restricted to ``K_live + j <= max_features``,
    which is the conditional of the IBP prior truncated to at most ``max_features``."""
    live = 0
    for k in range(K):
        if counts[k] > 0:
            live += 1
    return max(max_features - live, 0)


@njit(cache=True, fastmath=FAST_MATH)
def _sample_window(X, Z, counts, gram, cross, cov, mean, K, rows, n_total, beta, sigma_x2,
                   sigma_a2, k_max, log_poisson, T, C, E, Cp, Ep, log_new, sampled,
                   max_features, rng):
    """Gibbs-sample the rows of a window jointly given ``p(A | Z_-W, X_-W)`` (eq. 4.2).

    ``T = S_-W Z_W^T``, ``E = X_W - Z_W M_-W`` and ``C = Z_W T + s_x^2 I`` are kept up to
    date under each flip. Returns the new number of features.
    """
    N = n_total
    D = X.shape[1]
    w = rows.shape[0]
    for i in range(w):
        r = rows[i]
        for j in range(K):
            s = 0.0
            for k in range(K):
                if Z[r, k] != 0:
                    s += cov[j, k]
            T[j, i] = s
        for d in range(D):
            s = X[r, d]
            for k in range(K):
                if Z[r, k] != 0:
                    s -= mean[k, d]
            E[i, d] = s
    for i in range(w):
        for j in range(w):
            s = 0.0
            for k in range(K):
                if Z[rows[i], k] != 0:
                    s += T[k, j]
            C[i, j] = s
        C[i, i] += sigma_x2
    current = window_log_density(C, E, w)
    for i in range(w):
        r = rows[i]
        # Shared features first, then the row's singletons dropped (see _sweep_rows).
        for step in range(2 * K):
            k, zk, others, turn = _flip_step(step, K, Z, r, counts, sampled)
            if not turn:
                continue
            delta = 1.0 - 2.0 * zk
            _flip_window(C, E, T, cov, mean, i, k, delta, w, Cp, Ep)
            proposed = window_log_density(Cp, Ep, w)
            if _accept_flip(others, N, beta, zk, current, proposed, rng):
                for a in range(w):
                    for b in range(w):
                        C[a, b] = Cp[a, b]
                for d in range(D):
                    E[i, d] = Ep[i, d]
                for j in range(K):
                    T[j, i] += delta * cov[j, k]
                Z[r, k] = 1 - zk
                counts[k] += int(delta)
                current = proposed
        c_ii = C[i, i]
        room = _room_for_new(counts, K, max_features)
        for j in range(k_max + 1):
            if j > room:
                log_new[j] = -np.inf
                continue
            C[i, i] = c_ii + j * sigma_a2
            log_new[j] = (
                log_poisson[j] + window_log_density(C, E, w)
            )
        n_new = draw_from_log_weights(log_new, rng)
        C[i, i] = c_ii + n_new * sigma_a2
        _open_features(Z, counts, gram, cross, cov, mean, r, K, n_new, sigma_a2)
        for f in range(K, K + n_new):
            for a in range(w):
                T[f, a] = 0.0
            T[f, i] = sigma_a2
        K += n_new
        if n_new > 0:
            current = window_log_density(C, E, w)
    return K


@njit(cache=True, fastmath=FAST_MATH, inline="always")
def _window_done(gram, cross, cov, mean, K, windows_done, refresh_every, sigma_x2, sigma_a2):
    """Count a finished window; every ``refresh_every`` windows recompute the posterior
    from ``Z^T Z`` and ``Z^T X`` so that rank-one drift cannot build up."""
    windows_done += 1
    if refresh_every > 0 and windows_done % refresh_every == 0:
        refresh_posterior(gram, cross, cov, mean, K, sigma_x2, sigma_a2)
    return windows_done


@njit(cache=True, fastmath=FAST_MATH, inline="always")
def _row_scratch(cap, D, alpha, beta, N, k_max):
    """The prior table of new features and the work arrays of :func:`_sweep_windows`."""
    log_poisson = log_poisson_table(alpha * beta / (beta + N - 1.0), k_max)
    log_new = np.empty(k_max + 1)
    u = np.empty(cap)
    t = np.empty(cap)
    g = np.empty(D)
    e = np.empty(D)
    z_old = np.empty(cap, dtype=np.int8)
    return log_poisson, log_new, u, t, g, e, z_old


def sweep_accelerated(X, Z, counts, gram, cross, cov, mean, n_features, order, window, alpha,
                      beta, sigma_x2, sigma_a2, k_max, refresh_every, windows_done, rng,
                      n_total, sampled, max_features):
    """One iteration of Algorithm 1 over the rows in ``order``, in place.

    ``Z`` must have at least ``n_features + window * k_max`` columns. Returns the new
    number of live features, the running count of windows (for the refresh schedule) and
    the number of rows done: the sweep stops early when the spare columns run out, for
    the caller to grow the arrays and call again with the rest of ``order``. Features that
    lose their last row keep their slot (count 0) until the caller compacts.

    ``n_total`` is the number of rows of the prior (``X.shape[0]`` for the serial sampler;
    all shards' rows for the data-parallel one, whose ``counts``, ``gram`` and ``cross``
    hold every shard's statistics). Only features with ``sampled[k] != 0`` are visited
    (feature sub-sampling, Doshi-Velez 2009, sec. 5.1); ``k_max = 0`` creates no features. No row
    opens a feature that would take the live features past ``max_features`` (an int64;
    a huge value for no bound). The kernels release the GIL, so shards can sweep on threads.

    A plain function that picks the kernel: windows of one row (the default) run
    :func:`_sweep_rows`, which does not contain, and so does not compile, the joint
    window sampler of :func:`_sweep_windows`. :func:`_sweep_rows` stops after each
    window that makes a refresh due, and the refresh is made here from Python
    (:func:`refresh_from_statistics`, LAPACK through SciPy), so that no matrix inverse
    is compiled into the kernel.
    """
    if window != 1:
        return _sweep_windows(X, Z, counts, gram, cross, cov, mean, n_features, order, window,
                              alpha, beta, sigma_x2, sigma_a2, k_max, refresh_every,
                              windows_done, rng, n_total, sampled, max_features)
    cap = Z.shape[1]
    D = X.shape[1]
    # The new-feature prior of eq. 3.7 (log_poisson_table's numbers, from Python) and the
    # work arrays of the row kernel, made here so that the kernel compiles no allocation.
    log_poisson = log_poisson_values(alpha * beta / (beta + n_total - 1.0), k_max)
    scratch = (log_poisson, np.empty(k_max + 1), np.empty(cap), np.empty(cap), np.empty(D),
               np.empty(D), np.empty(cap, dtype=np.int8), np.empty(cap), np.empty(D))
    n_rows = order.shape[0]
    done = 0
    K = n_features
    while True:
        K, windows_done, advanced = _sweep_rows(
            X, Z, counts, gram, cross, cov, mean, np.int64(K), order[done:],
            float(alpha), float(beta), float(sigma_x2), float(sigma_a2), np.int64(k_max),
            np.int64(refresh_every), np.int64(windows_done), rng, np.int64(n_total), sampled,
            np.int64(max_features), *scratch)
        done += int(advanced)
        if refresh_every > 0 and advanced > 0 and windows_done % refresh_every == 0:
            refresh_from_statistics(gram, cross, cov, mean, K, sigma_x2, sigma_a2)
        if done >= n_rows or K + k_max > cap:
            return K, windows_done, done


def refresh_from_statistics(gram, cross, cov, mean, n_features, sigma_x2, sigma_a2):
    """:func:`refresh_posterior` with the inverse made by LAPACK from Python.

    The same numbers as the kernel (LU factorisation and inverse by ``getrf``/``getri``,
    the precision scaled by the reciprocal of ``s_x^2`` as the kernel's fast-math code
    does), with only the mean's product left to a small kernel (:func:`posterior_mean`).
    """
    K = int(n_features)
    if K == 0:
        return
    precision = gram[:K, :K] * (1.0 / sigma_x2)
    precision[np.diag_indices(K)] += 1.0 / sigma_a2
    lu, piv, info = _getrf(precision)
    if info == 0:
        inverse, info = _getri(lu, piv, lwork=max(1, int(_getri_lwork(K)[0])))
    if info != 0:
        raise np.linalg.LinAlgError("Matrix is singular to machine precision.")
    cov[:K, :K] = 0.5 * (inverse + inverse.T)
    posterior_mean(cov, cross, mean, np.int64(K), float(sigma_x2))


@njit(cache=True, fastmath=FAST_MATH)
def posterior_mean(cov, cross, mean, n_features, sigma_x2):
    """``M = S cross / s_x^2`` over the first ``n_features`` features."""
    K = n_features
    for i in range(K):
        for d in range(mean.shape[1]):
            s = 0.0
            for j in range(K):
                s += cov[i, j] * cross[j, d]
            mean[i, d] = s / sigma_x2


@njit(cache=True, fastmath=FAST_MATH, nogil=True)
def _sweep_rows(X, Z, counts, gram, cross, cov, mean, n_features, order, alpha, beta,
                sigma_x2, sigma_a2, k_max, refresh_every, windows_done, rng, n_total, sampled,
                max_features, log_poisson, log_new, u, t, g, e, z_old, u_move, zm_move):
    """:func:`sweep_accelerated` with windows of one row, up to the first window after
    which a refresh is due (made by the caller) or the spare columns run out.

    Each row ``r`` is Gibbs-sampled given ``p(A | Z_-r, X_-r)`` (window of one row,
    eq. 4.2). ``cov`` and ``mean`` hold the posterior with row ``r`` in it; the row is
    taken out only implicitly. With ``u = S z``, ``c0 = s_x^2 - z^T u`` and
    ``g = (z M - x) / c0`` (Sherman-Morrison), ``S_-r = S + u u^T / c0`` and
    ``M_-r = M + u g^T``, so the predictive ``N(x; z M_-r, c I)`` has ``c = s_x^4 / c0``
    and residual ``e = -s_x^2 g``, and each candidate flip of ``z_k`` costs two length-D
    dot products. The posterior itself is moved only if the row changes, which after
    burn-in is rare. ``n_total`` is the number of rows the prior counts (all shards' rows
    for the data-parallel sampler); only features with ``sampled[k] != 0`` are visited.

    One function body on purpose: each small helper numba inlines or links costs a
    first fit compile time (the steps are those of :func:`_sample_window`'s helpers
    :func:`_flip_step`, :func:`_accept_flip`, :func:`_room_for_new` and
    :func:`_open_features` for a window of one row, and the draws of ``draw_binary`` and
    ``draw_from_log_weights``, with the same arithmetic and uniforms). The work arrays and the table
    ``log_poisson`` of :func:`log_poisson_table` (``k_max + 1`` entries) are the caller's;
    ``alpha`` enters only through it. No builtin ``max`` or ``int``, which numba compiles
    apart (issue 22).
    """
    N = n_total
    D = X.shape[1]
    K = n_features
    cap = Z.shape[1]
    n_rows = order.shape[0]
    for start in range(n_rows):
        r = order[start]
        K_old = K
        for k in range(K):
            z_old[k] = Z[r, k]
        zu = 0.0
        for j in range(K):
            s = 0.0
            for k in range(K):
                if Z[r, k] != 0:
                    s += cov[j, k]
            u[j] = s
        n_on = 0
        for k in range(K):
            if Z[r, k] != 0:
                zu += u[k]
                n_on += 1
        # c0 = s_x^4 / (s_x^2 + z S_-r z) > 0, and S_-r <= s_a^2 I (the posterior is
        # tighter than the prior), so c0 >= s_x^4 / (s_x^2 + |z| s_a^2). With s_a >> s_x
        # the subtraction below cancels to zero or less: hold it at that bound.
        c0 = sigma_x2 - zu
        bound = sigma_x2 * sigma_x2 / (sigma_x2 + n_on * sigma_a2)
        c0 = bound if bound > c0 else c0  # max(c0, bound)
        for j in range(K):
            t[j] = u[j] * sigma_x2 / c0  # S_-r z
        c = sigma_x2 * sigma_x2 / c0  # s_x^2 + z S_-r z
        ee = 0.0
        gg = 0.0
        for d in range(D):
            s = -X[r, d]
            for k in range(K):
                if Z[r, k] != 0:
                    s += mean[k, d]
            g[d] = s / c0
            e[d] = -sigma_x2 * g[d]
            ee += e[d] * e[d]
            gg += g[d] * g[d]
        eg = -sigma_x2 * gg  # e . g
        current = -0.5 * (D * math.log(c) + ee / c)
        changed = False
        # Steps 0 .. K - 1 Gibbs-sample the features other rows share (m_-r,k > 0);
        # steps K .. 2K - 1 drop the row's singletons (m_-r,k == 0, z_rk == 1), which the
        # new-feature draw below replaces as one block (eq. 3.7).
        for step in range(2 * K):
            k = step % K
            zk = Z[r, k]
            others = counts[k] - zk
            turn = ((others == 0) == (step >= K) and not (others == 0 and zk == 0)
                    and sampled[k] != 0)
            if not turn:
                continue
            delta = 1.0 - 2.0 * zk
            uk = u[k]
            mg = 0.0
            mm = 0.0
            em = 0.0
            if changed:
                for d in range(D):
                    mg += mean[k, d] * g[d]
                    mm += mean[k, d] * mean[k, d]
                    em += mean[k, d] * e[d]
            else:
                for d in range(D):
                    mg += mean[k, d] * g[d]
                    mm += mean[k, d] * mean[k, d]
                em = -sigma_x2 * mg
            # Feature k of the posterior without row r: M_-r,k = M_k + u_k g.
            em += uk * eg
            mm += 2.0 * uk * mg + uk * uk * gg
            s_kk = cov[k, k] + uk * uk / c0
            ee_new = ee - 2.0 * delta * em + mm
            c_new = c + 2.0 * delta * t[k] + s_kk
            proposed = -0.5 * (D * math.log(c_new) + ee_new / c_new)
            # A singleton is always dropped, its mass going to the new-feature draw; a
            # shared feature is Gibbs-sampled from its prior odds (eq. 3.6).
            if others == 0:
                flip = True
            else:
                log_odds = log_prior_odds(others, N, beta)
                log_odds += proposed - current if zk == 0 else current - proposed
                # draw_binary(log_odds, rng) != zk, written out
                p_one = 1.0 / (1.0 + math.exp(-log_odds)) if log_odds > -700.0 else 0.0
                flip = (1 if rng.random() < p_one else 0) != zk
            if flip:
                eg = 0.0
                for d in range(D):
                    e[d] -= delta * (mean[k, d] + uk * g[d])
                    eg += e[d] * g[d]
                for j in range(K):
                    t[j] += delta * (cov[j, k] + u[j] * uk / c0)
                ee = ee_new
                c = c_new
                current = proposed
                Z[r, k] = 1 - zk
                counts[k] += 1 - 2 * zk  # int(delta)
                changed = True
        # New features (eq. 3.7): each adds s_a^2 to c. Over all variances the Gaussian
        # term is at most -D/2 (log(ee/D) + 1); a count whose prior alone puts it e^-50
        # below the best weight cannot matter in double precision and is skipped with its
        # logarithm. No more than the bound max_features on the live features allows.
        ee_pos = 1e-300 if 1e-300 > ee else ee  # max(ee, 1e-300)
        ceiling = -0.5 * D * (math.log(ee_pos / D) + 1.0) if D > 0 else 0.0
        best = -np.inf
        live = 0
        for k in range(K):
            if counts[k] > 0:
                live += 1
        room = max_features - live
        room = 0 if 0 > room else room  # max(room, 0)
        for j in range(k_max + 1):
            if j > room or log_poisson[j] + ceiling < best - 50.0:
                log_new[j] = -np.inf
                continue
            cj = c + j * sigma_a2
            log_new[j] = log_poisson[j] - 0.5 * (D * math.log(cj) + ee / cj)
            if log_new[j] > best:
                best = log_new[j]
        # n_new = draw_from_log_weights(log_new, rng), written out (best is the largest
        # entry of log_new: the skipped ones are -inf).
        total = 0.0
        for j in range(k_max + 1):
            log_new[j] = math.exp(log_new[j] - best)
            total += log_new[j]
        x = rng.random() * total
        n_new = 0
        acc = log_new[0]
        while acc < x and n_new < k_max:
            n_new += 1
            acc += log_new[n_new]
        # The new features only row r has: given the other rows their values have the
        # prior N(0, s_a^2), uncorrelated with the existing features, and no statistics.
        for f in range(K, K + n_new):
            for j in range(cap):
                cov[f, j] = 0.0
                cov[j, f] = 0.0
                gram[f, j] = 0.0
                gram[j, f] = 0.0
            cov[f, f] = sigma_a2
            for d in range(D):
                mean[f, d] = 0.0
                cross[f, d] = 0.0
            for a in range(Z.shape[0]):
                Z[a, f] = 0
            Z[r, f] = 1
            counts[f] = 1
        K += n_new
        # Swap the row's old assignment for the new one in the posterior and statistics.
        if changed or n_new > 0:
            for sign in (-1.0, 1.0):
                z_row = z_old if sign < 0 else Z[r]
                n_row = K_old if sign < 0 else K
                # The row out of (sign -1) or into (+1) the posterior, in place, with the
                # work arrays u_move, zm_move: the arithmetic of remove_row_from_posterior
                # and add_row_to_posterior (likelihoods/_linear_gaussian_kernels.py).
                # S -> S - u u^T / c, M -> M - u (z^T M - x)^T / c, u = S z and
                # c = sign s_x^2 + z^T S z; c held at its bound s_x^4 / (s_x^2 + |z| s_a^2)
                # on removal (S_-r <= s_a^2 I) where the subtraction cancels.
                for j in range(n_row):
                    u_move[j] = 0.0
                for d in range(D):
                    zm_move[d] = -X[r, d]
                for k in range(n_row):
                    if z_row[k] != 0:
                        for j in range(n_row):
                            u_move[j] += cov[j, k]
                        for d in range(D):
                            zm_move[d] += mean[k, d]
                zu = 0.0
                n_on = 0
                for k in range(n_row):
                    if z_row[k] != 0:
                        zu += u_move[k]
                        n_on += 1
                if zu != 0.0:
                    if sign < 0:
                        bound = sigma_x2 * sigma_x2 / (sigma_x2 + n_on * sigma_a2)
                        c0 = sigma_x2 - zu
                        denom = -(bound if bound > c0 else c0)
                    else:
                        denom = sigma_x2 + zu
                    for j in range(n_row):
                        uj = u_move[j] / denom
                        if uj == 0.0:
                            continue
                        for a in range(n_row):
                            cov[j, a] -= uj * u_move[a]
                        for d in range(D):
                            mean[j, d] -= uj * zm_move[d]
                for k in range(n_row):
                    if z_row[k] != 0:
                        for j in range(n_row):
                            if z_row[j] != 0:
                                gram[k, j] += sign
                        for d in range(D):
                            cross[k, d] += sign * X[r, d]
        windows_done += 1
        if refresh_every > 0 and windows_done % refresh_every == 0:
            return K, windows_done, start + 1
        if K + k_max > cap and start + 1 < n_rows:
            return K, windows_done, start + 1
    return K, windows_done, n_rows


@njit(cache=True, fastmath=FAST_MATH, nogil=True)
def _sweep_windows(X, Z, counts, gram, cross, cov, mean, n_features, order, window, alpha,
                   beta, sigma_x2, sigma_a2, k_max, refresh_every, windows_done, rng, n_total,
                   sampled, max_features):
    """:func:`sweep_accelerated` with windows of ``window`` rows (the last may be
    shorter; a window of one row is sampled as in :func:`_sweep_rows`)."""
    N = n_total
    D = X.shape[1]
    K = n_features
    cap = Z.shape[1]
    log_poisson, log_new, u, t, g, e, z_old = _row_scratch(cap, D, alpha, beta, N, k_max)
    T = np.empty((cap, window))
    C = np.empty((window, window))
    E = np.empty((window, D))
    Cp = np.empty((window, window))
    Ep = np.empty((window, D))
    u_move = np.empty(cap)
    zm_move = np.empty(D)
    n_rows = order.shape[0]
    start = 0
    while start < n_rows:
        w = min(window, n_rows - start)
        rows = order[start : start + w]
        start += w
        if w == 1:
            # No refresh is made inside (the count comes back divisible at most).
            K, _, _ = _sweep_rows(X, Z, counts, gram, cross, cov, mean, K, rows, alpha, beta,
                                  sigma_x2, sigma_a2, k_max, np.int64(0), np.int64(0), rng,
                                  n_total, sampled, max_features, log_poisson, log_new, u,
                                  t, g, e, z_old, u_move, zm_move)
        else:
            # Take the window out of the posterior: p(A | Z_-W, X_-W).
            for r in rows:
                remove_row_from_posterior(cov, mean, Z[r], X[r], sigma_x2, sigma_a2, K)
                _update_stats(gram, cross, Z[r], X[r], K, -1.0)
            K = _sample_window(X, Z, counts, gram, cross, cov, mean, K, rows, N, beta,
                               sigma_x2, sigma_a2, k_max, log_poisson, T, C, E, Cp, Ep,
                               log_new, sampled, max_features, rng)
            # Put the window back: p(A | Z, X).
            for r in rows:
                add_row_to_posterior(cov, mean, Z[r], X[r], sigma_x2, K)
                _update_stats(gram, cross, Z[r], X[r], K, 1.0)
        windows_done = _window_done(gram, cross, cov, mean, K, windows_done, refresh_every,
                                    sigma_x2, sigma_a2)
        if K + window * k_max > cap and start < n_rows:
            return K, windows_done, start
    return K, windows_done, n_rows
