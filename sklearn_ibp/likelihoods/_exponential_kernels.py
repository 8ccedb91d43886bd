"""Numba kernels of the exponential-Gaussian likelihood (Doshi-Velez 2009, appendix A.2).

Given everything else, one feature value ``a_kd`` has a Gaussian likelihood times an
exponential prior, which is a Gaussian truncated to ``[0, inf)``. :func:`draw_nonnegative_normal`
draws from it for any mean; :func:`sweep_nonnegative_features` is one element-wise Gibbs sweep
over ``A`` that keeps the residual ``X - Z A`` current, so a sweep costs O(nnz(Z) D).
"""

import math

import numpy as np
from numba import njit

__all__ = ["draw_nonnegative_normal", "sweep_nonnegative_features"]

# Below this standardised lower bound plain rejection from N(0, 1) accepts at least
# 1 - Phi(0.45) = 33% of proposals; above it the exponential proposal accepts more.
_PLAIN_REJECTION_LIMIT = 0.45


@njit(cache=True)
def draw_nonnegative_normal(mean, sd, rng):
    """One draw of ``N(mean, sd^2)`` truncated to ``[0, inf)``.

    In standard units the draw is ``y ~ N(0, 1)`` restricted to ``y >= lower`` with
    ``lower = -mean / sd``. Near or below the mode (``lower < 0.45``) proposals from
    ``N(0, 1)`` are kept when they land above ``lower``. In the tail, ``y = lower + e`` with
    ``e ~ Exponential(rate)``, ``rate = (lower + sqrt(lower^2 + 4)) / 2``, is kept with
    probability ``exp(-(y - rate)^2 / 2)``, an exact rejection sampler whose acceptance
    tends to 1 as ``lower`` grows (Robert, 1995). The result ``sd * e`` is formed from the
    excess itself, so means many deviations below zero lose no precision.

    Parameters
    ----------
    mean : float
        Mean of the untruncated Gaussian (any finite value).
    sd : float
        Its standard deviation (positive).
    rng : numpy.random.Generator
        The chain's generator.

    Returns
    -------
    float
        A non-negative value.
    """
    lower = -mean / sd
    if lower < _PLAIN_REJECTION_LIMIT:
        while True:
            y = rng.standard_normal()
            if y >= lower:
                return max(mean + sd * y, 0.0)
    rate = 0.5 * (lower + math.sqrt(lower * lower + 4.0))
    while True:
        excess = rng.exponential(1.0 / rate)
        gap = lower + excess - rate
        if rng.random() <= math.exp(-0.5 * gap * gap):
            return sd * excess


@njit(cache=True)
def sweep_nonnegative_features(A, resid, observed, feature_ptr, feature_rows, sigma_x2, rate,
                               rng):
    """One Gibbs sweep over every ``a_kd`` of the exponential-Gaussian model, in place.

    With ``r_n = x_nd - sum_{j != k} z_nj a_jd`` over the ``c`` observed rows having
    ``z_nk = 1``, ``p(a_kd | rest)`` is ``N((sum r_n - rate s_x^2) / c, s_x^2 / c)``
    truncated to ``[0, inf)``; with ``c = 0`` it is the prior ``Exponential(rate)``
    (appendix A.2). The values of one feature ``k`` are independent given the others, so
    a feature's row is drawn at once from one pass over its rows.

    Parameters
    ----------
    A : ndarray of shape (n_features, n_dims)
        Features, updated in place.
    resid : ndarray of shape (n_samples, n_dims)
        ``X - Z A`` at observed entries (anything elsewhere); kept current in place.
    observed : ndarray of shape (n_samples, n_dims), uint8
        1 where ``x_nd`` is observed.
    feature_ptr, feature_rows : ndarray of int64
        The rows having feature ``k`` are ``feature_rows[feature_ptr[k]:feature_ptr[k + 1]]``.
    sigma_x2 : float
        Noise variance.
    rate : float
        Rate of the exponential feature prior.
    rng : numpy.random.Generator
        The chain's generator.
    """
    n_features, n_dims = A.shape
    total = np.empty(n_dims)
    count = np.empty(n_dims, dtype=np.int64)
    change = np.empty(n_dims)
    for k in range(n_features):
        total[:] = 0.0
        count[:] = 0
        for i in range(feature_ptr[k], feature_ptr[k + 1]):
            n = feature_rows[i]
            for d in range(n_dims):
                if observed[n, d]:
                    total[d] += resid[n, d]
                    count[d] += 1
        for d in range(n_dims):
            old = A[k, d]
            if count[d] == 0:
                new = rng.exponential(1.0 / rate)
            else:
                mean = (total[d] + count[d] * old - rate * sigma_x2) / count[d]
                new = draw_nonnegative_normal(mean, math.sqrt(sigma_x2 / count[d]), rng)
            A[k, d] = new
            change[d] = new - old
        for i in range(feature_ptr[k], feature_ptr[k + 1]):
            n = feature_rows[i]
            for d in range(n_dims):
                if observed[n, d]:
                    resid[n, d] -= change[d]
