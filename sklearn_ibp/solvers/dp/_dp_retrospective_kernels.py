"""Numba kernel of retrospective MCMC for DP mixtures (Papaspiliopoulos and Roberts 2008;
Görür 2007, sec. 3.2.3, Algorithm 9, eqs. 3.45-3.47).

Each row's label gets one Metropolis-Hastings step whose proposal is the posterior over
the components up to the last occupied one, ``K`` (eq. 3.45), with the likelihood of
every later component replaced by ``M = max_{l<=K} F(x_i | theta_l)``:

``q_c(j) = pi_j g_c(j) / kappa(c)``, ``g_c(j) = F(x_i | theta_j)`` for ``j <= K(c)``,
``M(c)`` after; ``kappa(c) = sum_{l<=K} pi_l F(x_i | theta_l) + (1 - sum_{l<=K} pi_l) M(c)``
(eq. 3.46). A proposal past ``K`` is a point of the unbroken stick, found by breaking the
stick further (retrospectively, Figure 3.8). The acceptance ratio of ``k -> j``,

``[kappa(c) / kappa(c')] [F(x_i | theta_j) / g_c(j)] [g_c'(k) / F(x_i | theta_k)]``,

is one unless the move changes the last occupied component, which gives the two cases
of eq. (3.47). Positions are 0-based here.
"""

import math

import numpy as np
from numba import njit

from ._dp_stick_kernels import gaussian_log_density


@njit(cache=True, inline="always")
def _fill_log_f(X, i, start, stop, gaussian, means, upper, log_norm, loglik, log_f):
    """``log_f[j] = log F(x_i | theta_j)`` for ``j = start .. stop - 1``."""
    # One loop per branch: a branch inside the loop keeps numba from inlining the
    # density and costs a factor of five.
    if gaussian:
        for j in range(start, stop):
            log_f[j] = gaussian_log_density(X, i, means, upper, log_norm, j)
    else:
        for j in range(start, stop):
            log_f[j] = loglik[i, j]


@njit(cache=True, inline="always")
def _log_kappa(log_pi, log_rest, log_f, last, scaled):
    """``log kappa(c)`` (eq. 3.46) for last occupied component ``last``; also returns
    ``log M(c)``. ``scaled[:last + 1]`` gets ``pi_l F_l / M``."""
    log_m = -np.inf
    for m in range(last + 1):
        if log_f[m] > log_m:
            log_m = log_f[m]
    total = math.exp(log_rest[last])
    for m in range(last + 1):
        d = log_pi[m] + log_f[m] - log_m
        # Below -708 exp is subnormal (and ten times slower); zero is as good.
        scaled[m] = math.exp(d) if d > -708.0 else 0.0
        total += scaled[m]
    return log_m + math.log(total), log_m


@njit(cache=True)
def retrospective_pass(
    X, row_positions, counts, log_pi, log_rest, start, resume_u, resume_u2,
    gaussian, means, upper, log_norm, loglik, rng,
):
    """One Metropolis-Hastings step on the label of each row ``start .. N - 1``, in place.

    Parameters
    ----------
    X : (N, D) data.
    row_positions : (N,) int64 stick positions of the rows (updated in place).
    counts : (J,) int64 rows per represented position (updated in place).
    log_pi : (J,) log weights of the represented components.
    log_rest : (J,) ``log prod_{l<=j} (1 - v_l)``, the stick left after position ``j``.
    start : first row to update.
    resume_u, resume_u2 : float
        When resuming a row that stopped for more components (``>= 0``): the uniforms it
        had drawn for the proposal and for the point in the unbroken stick.
    gaussian, means, upper, log_norm, loglik :
        Component log likelihoods from Cholesky factors (``gaussian``) or the (N, J)
        matrix ``loglik``.
    rng : numpy.random.Generator

    Returns
    -------
    stop : int
        ``N`` when every row is done; else the row whose proposal fell past the ``J``
        represented components (nothing of it changed; resume there with more).
    u, u2 : float
        That row's uniforms, to pass back as ``resume_u`` and ``resume_u2``.
    accepted : int
        Accepted moves that changed a label.
    """
    N = X.shape[0]
    J = log_pi.shape[0]
    log_f = np.empty(J)
    scaled = np.empty(J)
    last = -1
    for j in range(J):
        if counts[j] > 0:
            last = j
    accepted = 0
    for i in range(start, N):
        k = row_positions[i]
        counts[k] -= 1
        last_others = last  # the last occupied component without row i
        if k == last and counts[k] == 0:
            last_others = k - 1
            while last_others >= 0 and counts[last_others] == 0:
                last_others -= 1
        last_c = last  # = max(k, last_others)

        _fill_log_f(X, i, 0, last_c + 1, gaussian, means, upper, log_norm, loglik, log_f)
        log_kappa_c, log_m_c = _log_kappa(log_pi, log_rest, log_f, last_c, scaled)

        # Proposal by the inverse CDF of q_c (Algorithm 9).
        resuming = i == start and resume_u >= 0.0
        u = resume_u if resuming else rng.random()
        target = u * math.exp(log_kappa_c - log_m_c)
        acc = 0.0
        j = -1
        for m in range(last_c + 1):
            acc += scaled[m]
            if acc > target:
                j = m
                break
        u2 = -1.0
        if j < 0:
            # The unbroken stick: a uniform point of it, the component it falls in.
            u2 = resume_u2 if resuming and resume_u2 >= 0.0 else rng.random()
            log_s = log_rest[last_c] + math.log1p(-u2)
            j = last_c + 1
            while j < J and log_rest[j] >= log_s:
                j += 1
            if j == J:
                counts[k] += 1
                return i, u, u2, accepted
        if j == k:
            counts[k] += 1
            continue

        last_new = max(j, last_others)
        accept = True
        if last_new != last_c:
            if last_new > last_c:
                _fill_log_f(X, i, last_c + 1, last_new + 1, gaussian, means, upper,
                            log_norm, loglik, log_f)
            log_kappa_new, log_m_new = _log_kappa(log_pi, log_rest, log_f, last_new, scaled)
            log_g_j = log_f[j] if j <= last_c else log_m_c
            log_g_k = log_f[k] if k <= last_new else log_m_new
            log_ratio = (log_kappa_c - log_kappa_new + log_f[j] - log_g_j
                         + log_g_k - log_f[k])
            accept = log_ratio >= 0.0 or rng.random() < math.exp(log_ratio)
        if accept:
            row_positions[i] = j
            counts[j] += 1
            last = last_new
            accepted += 1
        else:
            counts[k] += 1
    return N, -1.0, -1.0, accepted
