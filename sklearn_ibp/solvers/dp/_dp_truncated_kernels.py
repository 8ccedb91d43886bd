"""Numba kernel of the blocked Gibbs sampler for the truncated DP (Ishwaran and James 2001;
Görür 2007, sec. 3.2.3, Algorithm 8, eq. 3.44).

Given the weights and the parameters of all ``M`` components the labels are independent:
``P(c_i = k) ~ pi_k F(x_i | theta_k)``, drawn for every row in one pass.
"""

import numpy as np
from numba import njit

from ._dp_gaussian_kernels import NEGLIGIBLE_LOG_WEIGHT, draw_index
from ._dp_stick_kernels import gaussian_log_density


@njit(cache=True)
def sample_truncated_labels(X, log_pi, gaussian, means, upper, log_norm, loglik, rng):
    """Labels of every row from eq. (3.44), one uniform per row.

    Parameters
    ----------
    X : (N, D) data.
    log_pi : (M,) log weights of the components.
    gaussian : bool
        Evaluate ``log F`` from ``means``, ``upper``, ``log_norm`` (else read ``loglik``).
    loglik : (N, M) log likelihoods (used when ``gaussian`` is False).

    Returns
    -------
    (N,) int64 components.
    """
    N = X.shape[0]
    M = log_pi.shape[0]
    out = np.empty(N, dtype=np.int64)
    buf = np.empty(M)
    for i in range(N):
        # A loop per likelihood path, so that numba inlines the density.
        if gaussian:
            for k in range(M):
                buf[k] = log_pi[k] + gaussian_log_density(X, i, means, upper, log_norm, k)
        else:
            for k in range(M):
                buf[k] = log_pi[k] + loglik[i, k]
        out[i] = draw_index(buf, M, rng, NEGLIGIBLE_LOG_WEIGHT)
    return out
