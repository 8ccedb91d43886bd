"""The linear-Gaussian likelihood ``X = Z A + E`` (Doshi-Velez 2009, appendix A.1).

``A_kd ~ N(0, sigma_a^2)`` and ``E_nd ~ N(0, sigma_x^2)``, all independent. ``A`` integrates
out in closed form (eq. A.2), and its posterior given ``(Z, X)`` is Gaussian (eq. A.3), shared
across the columns of ``A`` when ``X`` is complete. This module is the plain-NumPy reference;
the rank-one moves the samplers use live in :mod:`._linear_gaussian_kernels`.

Missing entries (NaN) are masked per dimension: column ``d`` of ``X`` only sees the rows where
it is observed, so its posterior and marginal are those of a smaller regression. No value is
ever filled in.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import cho_factor, cho_solve, solve_triangular
from sklearn.utils import check_random_state

from ._linear_gaussian_kernels import add_row_to_posterior, remove_row_from_posterior

__all__ = [
    "add_row_to_posterior",
    "feature_posterior",
    "information_form",
    "log_marginal_likelihood",
    "log_marginal_likelihood_from_stats",
    "remove_row_from_posterior",
    "row_log_predictive",
    "sample_features",
]

_LOG_2PI = np.log(2.0 * np.pi)


def information_form(X, Z, sigma_x: float, sigma_a: float):
    """Precision and shift of the feature posterior (information form of eq. A.3).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_dims)
        Complete data (no NaN).
    Z : ndarray of shape (n_samples, n_features)
        Binary feature matrix.
    sigma_x, sigma_a : float
        Noise and feature standard deviations.

    Returns
    -------
    precision : ndarray of shape (n_features, n_features)
        ``P = Z^T Z / sigma_x^2 + I / sigma_a^2``.
    shift : ndarray of shape (n_features, n_dims)
        ``h = Z^T X / sigma_x^2``; the posterior mean is ``P^{-1} h``.
    """
    Z = np.asarray(Z, dtype=float)
    X = np.asarray(X, dtype=float)
    sx2 = sigma_x**2
    precision = Z.T @ Z / sx2 + np.eye(Z.shape[1]) / sigma_a**2
    return precision, Z.T @ X / sx2


def _observed_groups(mask):
    """Group the columns of a boolean observed-mask by identical pattern."""
    if mask.all():
        return [(np.ones(mask.shape[0], dtype=bool), np.arange(mask.shape[1]))]
    patterns, inverse = np.unique(mask.T, axis=0, return_inverse=True)
    inverse = np.ravel(inverse)
    return [(patterns[g], np.flatnonzero(inverse == g)) for g in range(len(patterns))]


def log_marginal_likelihood_from_stats(
    gram, cross, sq_norm: float, n_samples: int, n_dims: int, sigma_x: float, sigma_a: float
) -> float:
    """Collapsed ``log p(X | Z)`` (eq. A.2) from sufficient statistics.

    Parameters
    ----------
    gram : ndarray of shape (n_features, n_features)
        ``Z^T Z``.
    cross : ndarray of shape (n_features, n_dims)
        ``Z^T X``.
    sq_norm : float
        ``tr(X^T X)``.
    n_samples, n_dims : int
        Rows and columns of ``X``.
    sigma_x, sigma_a : float
        Noise and feature standard deviations.

    Returns
    -------
    float
        ``-ND/2 log 2pi - (N-K)D log s_x - KD log s_a - D/2 log|M|
        - (tr(X^T X) - tr(C^T M^{-1} C)) / (2 s_x^2)`` with ``M = Z^T Z + s_x^2/s_a^2 I``
        and ``C = Z^T X``.
    """
    n_features = gram.shape[0]
    sx2 = sigma_x**2
    log_p = -0.5 * n_samples * n_dims * _LOG_2PI
    log_p -= (n_samples - n_features) * n_dims * np.log(sigma_x)
    log_p -= n_features * n_dims * np.log(sigma_a)
    quad = sq_norm
    if n_features:
        factor = cho_factor(gram + (sx2 / sigma_a**2) * np.eye(n_features), lower=True)
        log_p -= n_dims * np.sum(np.log(np.diag(factor[0])))
        quad -= float(np.sum(cross * cho_solve(factor, cross)))
    return float(log_p - 0.5 * quad / sx2)


def log_marginal_likelihood(X, Z, sigma_x: float, sigma_a: float) -> float:
    """Collapsed log likelihood ``log p(X | Z)`` with ``A`` integrated out (eq. A.2).

    NaN entries of ``X`` are masked per dimension: the result is the log density of the
    observed entries only.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_dims)
        Data, NaN for missing entries.
    Z : ndarray of shape (n_samples, n_features)
        Binary feature matrix.
    sigma_x, sigma_a : float
        Noise and feature standard deviations.

    Returns
    -------
    float
    """
    X = np.asarray(X, dtype=float)
    Z = np.asarray(Z, dtype=float)
    observed = ~np.isnan(X)
    total = 0.0
    for rows, cols in _observed_groups(observed):
        Zo = Z[rows]
        Xo = X[np.ix_(rows, cols)]
        total += log_marginal_likelihood_from_stats(
            Zo.T @ Zo, Zo.T @ Xo, float(np.sum(Xo**2)), Zo.shape[0], len(cols), sigma_x, sigma_a
        )
    return total


def feature_posterior(X, Z, sigma_x: float, sigma_a: float):
    """Posterior mean and covariance of the features ``A`` given ``(Z, X)`` (eq. A.3).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_dims)
        Data, NaN for missing entries (masked per dimension).
    Z : ndarray of shape (n_samples, n_features)
        Binary feature matrix.
    sigma_x, sigma_a : float
        Noise and feature standard deviations.

    Returns
    -------
    mean : ndarray of shape (n_features, n_dims)
    cov : ndarray of shape (n_features, n_features) or (n_dims, n_features, n_features)
        Covariance of each column ``A[:, d]``: one matrix shared by all columns when ``X``
        is complete, one per column when entries are missing.
    """
    X = np.asarray(X, dtype=float)
    Z = np.asarray(Z, dtype=float)
    n_features, n_dims = Z.shape[1], X.shape[1]
    observed = ~np.isnan(X)
    if observed.all():
        precision, shift = information_form(X, Z, sigma_x, sigma_a)
        factor = cho_factor(precision, lower=True)
        return cho_solve(factor, shift), cho_solve(factor, np.eye(n_features))
    groups = _observed_groups(observed)
    mean = np.zeros((n_features, n_dims))
    covs = np.empty((n_dims, n_features, n_features))
    for rows, cols in groups:
        precision, shift = information_form(X[np.ix_(rows, cols)], Z[rows], sigma_x, sigma_a)
        factor = cho_factor(precision, lower=True)
        mean[:, cols] = cho_solve(factor, shift)
        covs[cols] = cho_solve(factor, np.eye(n_features))
    return mean, covs


def sample_features(X, Z, sigma_x: float, sigma_a: float, random_state=None):
    """Draw ``A ~ p(A | Z, X)`` (eq. A.3) for complete ``X``.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_dims)
        Complete data.
    Z : ndarray of shape (n_samples, n_features)
        Binary feature matrix.
    sigma_x, sigma_a : float
        Noise and feature standard deviations.
    random_state : int, RandomState, Generator or None

    Returns
    -------
    ndarray of shape (n_features, n_dims)
    """
    rng = random_state if isinstance(random_state, np.random.Generator) else check_random_state(
        random_state
    )
    precision, shift = information_form(X, Z, sigma_x, sigma_a)
    return sample_features_from_information(precision, shift, rng)


def sample_features_from_information(precision, shift, rng):
    """Draw ``A`` with columns ``N(P^{-1} h_d, P^{-1})`` given precision ``P`` and shift ``h``."""
    n_features, n_dims = shift.shape
    if n_features == 0:
        return np.zeros((0, n_dims))
    chol = np.linalg.cholesky(precision)
    mean = cho_solve((chol, True), shift)
    noise = rng.standard_normal((n_features, n_dims))
    # P = L L^T, so L^{-T} eps has covariance P^{-1}.
    return mean + solve_triangular(chol, noise, lower=True, trans="T")


def row_log_predictive(X, Z, mean, cov, sigma_x: float):
    """Log density of each row given its features and a Gaussian feature posterior.

    ``x_n ~ N(z_n M, (sigma_x^2 + z_n S z_n^T) I)`` over the observed entries of the row
    (the predictive of eq. 4.2 with a window of one row).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_dims)
        Rows, NaN for missing entries.
    Z : ndarray of shape (n_samples, n_features)
        Feature assignments of the rows.
    mean : ndarray of shape (n_features, n_dims)
        Posterior mean of ``A``.
    cov : ndarray of shape (n_features, n_features)
        Posterior covariance of each column of ``A``.
    sigma_x : float
        Noise standard deviation.

    Returns
    -------
    ndarray of shape (n_samples,)
    """
    X = np.asarray(X, dtype=float)
    Z = np.asarray(Z, dtype=float)
    observed = ~np.isnan(X)
    var = sigma_x**2 + np.einsum("nk,kj,nj->n", Z, cov, Z)
    resid = np.where(observed, X - Z @ mean, 0.0)
    n_obs = observed.sum(axis=1)
    return -0.5 * n_obs * (_LOG_2PI + np.log(var)) - 0.5 * np.sum(resid**2, axis=1) / var
