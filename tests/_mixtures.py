"""Test helpers for the DP mixture samplers: a small conjugate base and exact partitions.

``IsotropicNormalBase`` is the simplest conjugate base of the interface in
:mod:`sklearn_ibp.likelihoods._mixture_base`: ``x ~ N(mu, sigma^2 I)`` with
``mu ~ N(mu0, tau^2 I)`` and fixed hyperparameters. Its marginals are closed form, so the
posterior over partitions of a handful of rows can be enumerated exactly
(:func:`exact_partition_posterior`) and compared with any solver's histogram of
:func:`partition_key` (with :func:`tests.solvers.test_exact_posterior.chi_square_against`).
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln, logsumexp

from sklearn_ibp.likelihoods._mixture_base import BaseMixtureComponents


class IsotropicNormalBase(BaseMixtureComponents):
    """``x ~ N(mu, sigma^2 I)``, ``mu ~ N(mu0, tau^2 I)``; params ``{"means": (K, D)}``."""

    name = "isotropic_normal"
    conjugate = True

    def __init__(self, sigma=1.0, tau=2.0, mu0=0.0):
        self.sigma, self.tau, self.mu0 = float(sigma), float(tau), float(mu0)
        self.n_features = None

    def initialize(self, X, rng) -> None:
        self.n_features = np.asarray(X).shape[1]

    def sample_prior(self, n, rng) -> dict:
        return {"means": self.mu0 + self.tau * rng.standard_normal((n, self.n_features))}

    def log_likelihood(self, X, params) -> np.ndarray:
        X = np.asarray(X, dtype=float)
        means = params["means"]
        sq = ((X[:, None, :] - means[None, :, :]) ** 2).sum(axis=2)
        D = X.shape[1]
        return -0.5 * sq / self.sigma**2 - D * np.log(self.sigma) - 0.5 * D * np.log(2 * np.pi)

    def _posterior(self, X_k):
        n = X_k.shape[0]
        precision = 1.0 / self.tau**2 + n / self.sigma**2
        mean = (self.mu0 / self.tau**2 + X_k.sum(axis=0) / self.sigma**2) / precision
        return mean, 1.0 / precision

    def sample_posterior(self, X_k, rng, params_k=None) -> dict:
        X_k = np.asarray(X_k, dtype=float).reshape(-1, self.n_features)
        mean, var = self._posterior(X_k)
        return {"means": (mean + np.sqrt(var) * rng.standard_normal(self.n_features))[None]}

    def log_marginal(self, X_k) -> float:
        X_k = np.asarray(X_k, dtype=float).reshape(-1, self.n_features)
        n, D = X_k.shape
        if n == 0:
            return 0.0
        total = 0.0
        for d in range(D):  # dimensions are independent
            x = X_k[:, d]
            # x ~ N(mu0 1, sigma^2 I + tau^2 11^T)
            cov = self.sigma**2 * np.eye(n) + self.tau**2
            sign, logdet = np.linalg.slogdet(cov)
            r = x - self.mu0
            total += -0.5 * (n * np.log(2 * np.pi) + logdet + r @ np.linalg.solve(cov, r))
        return float(total)

    def log_predictive(self, X_new, X_k) -> np.ndarray:
        X_new = np.asarray(X_new, dtype=float).reshape(-1, self.n_features)
        X_k = np.asarray(X_k, dtype=float).reshape(-1, self.n_features)
        mean, var = self._posterior(X_k)
        v = var + self.sigma**2
        D = X_new.shape[1]
        return (-0.5 * ((X_new - mean) ** 2).sum(axis=1) / v
                - 0.5 * D * np.log(2 * np.pi * v))

    def log_prior_predictive(self, X) -> np.ndarray:
        return self.log_predictive(X, np.zeros((0, self.n_features)))

    def hyperparameters(self) -> dict:
        return {"sigma": self.sigma, "tau": self.tau, "mu0": self.mu0}

    def set_hyperparameters(self, values: dict) -> None:
        self.sigma, self.tau, self.mu0 = values["sigma"], values["tau"], values["mu0"]


def set_partitions(n):
    """Every partition of ``n`` items as a restricted growth string (tuple of labels)."""
    out = []

    def grow(prefix, k):
        if len(prefix) == n:
            out.append(tuple(prefix))
            return
        for label in range(k + 1):
            grow(prefix + [label], max(k, label + 1))

    grow([], 0)
    return out


def partition_key(labels):
    """Canonical key of a partition: labels renumbered in order of first appearance."""
    seen = {}
    return tuple(seen.setdefault(int(c), len(seen)) for c in labels)


def crp_log_prob(labels, alpha):
    """``log P(c | alpha)`` of a partition under the Chinese restaurant process."""
    counts = np.bincount(np.asarray(partition_key(labels)))
    n = counts.sum()
    return float(counts.size * np.log(alpha) + gammaln(counts).sum()
                 + gammaln(alpha) - gammaln(alpha + n))


def exact_partition_posterior(X, base, alpha):
    """``{partition_key: probability}`` of the DP mixture's posterior, by enumeration."""
    X = np.asarray(X, dtype=float)
    keys = set_partitions(X.shape[0])
    log_w = np.array([
        crp_log_prob(key, alpha)
        + sum(base.log_marginal(X[np.asarray(key) == k]) for k in range(max(key) + 1))
        for key in keys
    ])
    p = np.exp(log_w - logsumexp(log_w))
    return dict(zip(keys, p, strict=True))
