"""Numba kernels of the slice sampler for DP mixtures (Walker 2007; Kalli, Griffin and
Walker 2011; Görür 2007, sec. 3.2.3, Algorithm 10, eqs. 3.50-3.52).

Given the slices, the rows' labels are independent, so one pass over the rows draws them
all: row ``i`` may only join the components whose *key* (its stick weight ``pi_j`` in
Walker's sampler, the deterministic ``xi_j`` in the efficient variant) is at least its
slice ``u_i``, with probability proportional to ``exp(log_prior_weight_j) F(x_i | theta_j)``.
"""

import math

import numpy as np
from numba import njit

from ._dp_gaussian_kernels import NEGLIGIBLE_LOG_WEIGHT, draw_index
from ._dp_stick_kernels import gaussian_log_density


@njit(cache=True)
def draw_log_slices(row_positions, log_bound, rng):
    """``log u_i`` with ``u_i ~ U(0, bound_{c_i}]`` (eq. 3.51), ``c_i = row_positions[i]``.

    ``u = bound (1 - U)`` with ``U`` in ``[0, 1)``, so a row's own component is always
    above its slice (``1 - U`` is exact for the generator's multiples of ``2^-53``).
    One uniform per row.
    """
    N = row_positions.shape[0]
    out = np.empty(N)
    for i in range(N):
        out[i] = log_bound[row_positions[i]] + math.log(1.0 - rng.random())
    return out


@njit(cache=True)
def sample_slice_labels(
    X, log_slices, order, log_key, log_prior_weight, gaussian, means, upper, log_norm,
    loglik, rng,
):
    """Labels of every row given its slice (eq. 3.52), one uniform per row.

    Parameters
    ----------
    X : (N, D) data.
    log_slices : (N,) ``log u_i``.
    order : (J,) the represented positions by decreasing ``log_key``.
    log_key : (J,) a component is a candidate for row ``i`` iff ``log_key >= log u_i``.
    log_prior_weight : (J,) added to the log likelihood of a candidate (0 for Walker's
        sampler, ``log pi_j - log xi_j`` for the efficient one).
    gaussian : bool
        Evaluate ``log F`` from ``means``, ``upper``, ``log_norm`` (else read ``loglik``).
    loglik : (N, J) log likelihoods (used when ``gaussian`` is False).

    Returns
    -------
    (N,) int64 positions.
    """
    N = X.shape[0]
    J = order.shape[0]
    out = np.empty(N, dtype=np.int64)
    buf = np.empty(J)
    candidates = np.empty(J, dtype=np.int64)
    # The two likelihood paths have a loop each: a branch inside the loop keeps numba
    # from inlining the density and costs a factor of several.
    for i in range(N):
        n = 0
        if gaussian:
            for r in range(J):
                j = order[r]
                if log_key[j] < log_slices[i]:
                    break
                buf[n] = log_prior_weight[j] + gaussian_log_density(
                    X, i, means, upper, log_norm, j)
                candidates[n] = j
                n += 1
        else:
            for r in range(J):
                j = order[r]
                if log_key[j] < log_slices[i]:
                    break
                buf[n] = log_prior_weight[j] + loglik[i, j]
                candidates[n] = j
                n += 1
        out[i] = candidates[draw_index(buf, n, rng, NEGLIGIBLE_LOG_WEIGHT)]
    return out
