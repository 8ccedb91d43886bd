"""The Chinese restaurant process prior over partitions and its concentration parameter.

Görür (2007), sec. 3.1.2 and 3.1.6. Customer ``n + 1`` sits at an occupied table
``k`` with probability ``n_k / (alpha + n)`` and at a new table with probability
``alpha / (alpha + n)`` (eq. 3.8; the Gibbs conditionals of eq. 3.21 treat any row as the
last customer). The probability of a partition with ``K`` blocks of sizes ``n_k`` is

``P(c | alpha) = alpha^K Gamma(alpha) / Gamma(alpha + N) prod_k (n_k - 1)!``,

whose dependence on ``alpha`` is the likelihood of eq. 3.22. The concentration gets the
prior of eq. 3.23 / 3.56, ``1/alpha ~ Gamma(shape 1/2, rate 1/2)``, i.e.
``p(alpha) ~ alpha^(-3/2) exp(-1 / (2 alpha))``, and is updated by slice sampling its
logarithm (Görür 2007 uses adaptive rejection sampling on the same log-concave target).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln

from .._slice import slice_sample
from ._validation import check_positive
from .ibp import as_random_source

__all__ = [
    "crp_log_prob",
    "expected_n_clusters",
    "log_alpha_posterior",
    "sample_alpha_posterior_crp",
    "sample_crp",
]


def crp_log_prob(labels, alpha: float) -> float:
    """Log probability of a partition under the Chinese restaurant process (sec. 3.1.2).

    ``log P(c | alpha) = K log alpha + sum_k log Gamma(n_k) + log Gamma(alpha)
    - log Gamma(alpha + N)`` (eq. 3.22 with its partition-dependent factor
    ``prod_k (n_k - 1)!``). Only the partition matters, not the label values.

    Parameters
    ----------
    labels : array-like of shape (n_samples,)
        Cluster label of each item (any integers).
    alpha : float
        Concentration, > 0.

    Returns
    -------
    float
    """
    alpha = check_positive(alpha, "alpha")
    labels = np.asarray(labels).ravel()
    if labels.size == 0:
        return 0.0
    _, counts = np.unique(labels, return_counts=True)
    n = labels.size
    return float(
        counts.size * math.log(alpha)
        + gammaln(counts.astype(float)).sum()
        + gammaln(alpha)
        - gammaln(alpha + n)
    )


def sample_crp(n_samples: int, alpha: float, random_state=None) -> np.ndarray:
    """Draw a partition from the Chinese restaurant process (sec. 3.1.2, eq. 3.8).

    Customer ``n + 1`` sits next to each earlier customer with probability
    ``1 / (alpha + n)`` and alone with probability ``alpha / (alpha + n)``: one uniform per
    customer.

    Parameters
    ----------
    n_samples : int
        Number of customers ``N``.
    alpha : float
        Concentration, > 0.
    random_state : int, RandomState, Generator or None
        Seed or random source.

    Returns
    -------
    labels : ndarray of shape (n_samples,), int64
        Table of each customer, ``0 .. K - 1`` in order of first appearance.
    """
    alpha = check_positive(alpha, "alpha")
    n_samples = int(n_samples)
    if n_samples < 0:
        raise ValueError(f"n_samples must be >= 0, got {n_samples}.")
    rng = as_random_source(random_state)
    labels = np.empty(n_samples, dtype=np.int64)
    n_tables = 0
    for n in range(n_samples):
        u = rng.random() * (alpha + n)
        if u >= n:  # a new table, probability alpha / (alpha + n)
            labels[n] = n_tables
            n_tables += 1
        else:  # next to customer floor(u), probability 1 / (alpha + n) each
            labels[n] = labels[int(u)]
    return labels


def expected_n_clusters(n_samples: int, alpha: float) -> float:
    """Prior expected number of clusters of ``N`` items, ``sum_i alpha / (alpha + i - 1)``.

    Antoniak (1974), quoted in sec. 3.1.6; about ``alpha log(1 + N / alpha)``.

    Parameters
    ----------
    n_samples : int
        Number of items ``N``.
    alpha : float
        Concentration, > 0.

    Returns
    -------
    float
    """
    alpha = check_positive(alpha, "alpha")
    i = np.arange(1, int(n_samples) + 1, dtype=float)
    return float(np.sum(alpha / (alpha + i - 1.0)))


def log_alpha_posterior(alpha, n_clusters: int, n_samples: int):
    """Unnormalised log density of ``alpha`` given ``K`` clusters of ``N`` items.

    ``log p(alpha | K, N) = K log alpha + log Gamma(alpha) - log Gamma(alpha + N)
    - 3/2 log alpha - 1 / (2 alpha) + const``: the likelihood of eq. 3.22 times the prior of
    eq. 3.23 (``1/alpha ~ Gamma(1/2, rate 1/2)``).

    Parameters
    ----------
    alpha : float or ndarray
        Concentration(s), > 0.
    n_clusters : int
        Number of occupied clusters ``K``.
    n_samples : int
        Number of items ``N``.

    Returns
    -------
    float or ndarray
    """
    alpha = np.asarray(alpha, dtype=float)
    out = (
        (n_clusters - 1.5) * np.log(alpha)
        + gammaln(alpha)
        - gammaln(alpha + n_samples)
        - 0.5 / alpha
    )
    return float(out) if out.ndim == 0 else out


def sample_alpha_posterior_crp(
    alpha: float, n_clusters: int, n_samples: int, random_state=None, n_steps: int = 1
) -> float:
    """Update ``alpha`` given ``K`` clusters of ``N`` items (sec. 3.1.6, 3.3.2).

    Slice sampling (Neal 2003) of ``log alpha`` from
    ``p(alpha | K, N) ~ alpha^K Gamma(alpha) / Gamma(alpha + N) p(alpha)`` with the prior
    ``1/alpha ~ Gamma(1/2, rate 1/2)`` of eqs. 3.23 / 3.56. In ``u = log alpha`` the target
    (with the Jacobian ``alpha``) is log-concave, as Görür (2007) notes. This is an exact MCMC
    update: it leaves the conditional invariant; it is not an independent draw.

    Parameters
    ----------
    alpha : float
        Current concentration, > 0.
    n_clusters : int
        Number of occupied clusters ``K`` (>= 1).
    n_samples : int
        Number of items ``N`` (>= K).
    random_state : int, RandomState, Generator or None
        Seed or random source.
    n_steps : int, default=1
        Number of slice-sampling updates.

    Returns
    -------
    float
        The new concentration.
    """
    alpha = check_positive(alpha, "alpha")
    n_clusters, n_samples = int(n_clusters), int(n_samples)
    if not 1 <= n_clusters <= max(n_samples, 1):
        raise ValueError(
            f"n_clusters must be in [1, n_samples], got n_clusters={n_clusters}, "
            f"n_samples={n_samples}."
        )
    rng = as_random_source(random_state)

    def log_density(u):
        if u > 700.0 or u < -700.0:
            return -math.inf
        a = math.exp(u)
        # p(u) = p(alpha) * alpha: the prior's -3/2 log alpha becomes -1/2 log alpha.
        return (
            (n_clusters - 0.5) * u
            + math.lgamma(a)
            - math.lgamma(a + n_samples)
            - 0.5 / a
        )

    u = math.log(alpha)
    for _ in range(int(n_steps)):
        u = slice_sample(log_density, u, rng, width=1.0)
    return float(math.exp(u))
