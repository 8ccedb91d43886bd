"""Seconds per sweep of the stick-breaking DP mixture samplers (slice, truncated,
retrospective) on Gaussian mixtures in two dimensions.

Problems (fixed seeds):

- N = 10,000 points from 8 Gaussians in D = 2 (target: fastest solver < 0.01 s/sweep);
- N = 1,000,000 points from 6 Gaussians in D = 2 (target: fastest solver < 0.4 s/sweep).

Each solver starts from the true partition (the cost of a sweep grows with the number
of clusters, so every solver is timed at about the true number; how fast a chain finds
the clusters from a poor start is a matter of mixing, not of the cost of a sweep), runs a
burn-in (compilation is left out of the timing), then a number of timed sweeps;
printed: the median and minimum seconds per sweep, the number of clusters during the timed
sweeps, and the ratio of each solver's median to the fastest's. ``alpha = 1`` and the base's
hyperparameters stay fixed (the estimator's resampling of them is not part of a sweep).

Bases: ``toy`` is the conjugate Normal-Wishart base defined below with fixed
hyperparameters and per-cluster statistics from ``np.bincount`` (so the base costs
little); ``conjugate`` and ``conditionally_conjugate`` are the package's bases (with
``sample_hyperparameters=False`` where they take it), timed when they import.

    python benchmarks/bench_dp_stick_breaking.py            # both problems
    python benchmarks/bench_dp_stick_breaking.py --quick    # N = 10,000 only
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from sklearn_ibp.likelihoods._mixture_base import BaseMixtureComponents
from sklearn_ibp.solvers.dp.dp_retrospective import RetrospectiveDP
from sklearn_ibp.solvers.dp.dp_slice import SliceDP
from sklearn_ibp.solvers.dp.dp_truncated import TruncatedDP


class ToyNormalWishart(BaseMixtureComponents):
    """``mu | S ~ N(m0, (k0 S)^-1)``, ``S ~ Wishart(nu0, W0)`` (``E[S] = nu0 W0``) with
    hyperparameters fixed from the data at ``initialize``: ``m0`` the data mean,
    ``k0 = 0.01``, ``nu0 = D + 2``, ``W0 = (nu0 Cov(X))^-1``."""

    name = "toy_normal_wishart"
    conjugate = True

    def initialize(self, X, rng) -> None:
        X = np.asarray(X, dtype=float)
        self.D = X.shape[1]
        self.m0 = X.mean(axis=0)
        self.k0 = 0.01
        self.nu0 = self.D + 2.0
        self.W0_inv = self.nu0 * np.atleast_2d(np.cov(X.T))  # W0^-1

    def _draw(self, n, mean, W_inv, kappa, nu, rng):
        # S ~ Wishart(nu, W) by Bartlett: S = C A A^T C^T, C C^T = W.
        D = self.D
        C = np.linalg.cholesky(np.linalg.inv(W_inv))
        A = np.zeros((D, D))
        for d in range(D):
            A[d, d] = math.sqrt(rng.chisquare(nu - d))
            A[d, :d] = rng.standard_normal(d)
        CA = C @ A
        S = CA @ CA.T
        L = np.linalg.cholesky(kappa * S)
        mu = mean + np.linalg.solve(L.T, rng.standard_normal(D))
        return mu, S

    def sample_prior(self, n, rng) -> dict:
        draws = [self._draw(0, self.m0, self.W0_inv, self.k0, self.nu0, rng) for _ in range(n)]
        return {"means": np.array([d[0] for d in draws]).reshape(n, self.D),
                "precisions": np.array([d[1] for d in draws]).reshape(n, self.D, self.D)}

    def _posterior_draw(self, n, total, scatter, rng):
        if n == 0:
            return self._draw(0, self.m0, self.W0_inv, self.k0, self.nu0, rng)
        xbar = total / n
        centred = scatter - n * np.outer(xbar, xbar)
        kn = self.k0 + n
        mn = (self.k0 * self.m0 + total) / kn
        diff = xbar - self.m0
        W_inv = self.W0_inv + centred + (self.k0 * n / kn) * np.outer(diff, diff)
        return self._draw(n, mn, W_inv, kn, self.nu0 + n, rng)

    def sample_posterior(self, X_k, rng, params_k=None) -> dict:
        X_k = np.asarray(X_k, dtype=float).reshape(-1, self.D)
        mu, S = self._posterior_draw(X_k.shape[0], X_k.sum(axis=0), X_k.T @ X_k, rng)
        return {"means": mu[None], "precisions": S[None]}

    def sample_posterior_all(self, X, labels, n_clusters, rng, params=None) -> dict:
        K, D = int(n_clusters), self.D
        counts = np.bincount(labels, minlength=K)
        totals = np.stack([np.bincount(labels, X[:, d], K) for d in range(D)], axis=1)
        scatter = np.empty((K, D, D))
        for d in range(D):
            for e in range(d + 1):
                scatter[:, d, e] = scatter[:, e, d] = np.bincount(labels, X[:, d] * X[:, e], K)
        means, precisions = np.empty((K, D)), np.empty((K, D, D))
        for k in range(K):
            means[k], precisions[k] = self._posterior_draw(counts[k], totals[k], scatter[k], rng)
        return {"means": means, "precisions": precisions}

    def log_likelihood(self, X, params) -> np.ndarray:
        out = np.empty((X.shape[0], params["means"].shape[0]))
        for k, (m, P) in enumerate(zip(params["means"], params["precisions"], strict=True)):
            L = np.linalg.cholesky(P)
            proj = (X - m) @ L
            out[:, k] = (np.log(np.diag(L)).sum() - 0.5 * self.D * math.log(2 * math.pi)
                         - 0.5 * np.sum(proj * proj, axis=1))
        return out


def make_mixture(n_samples, n_clusters, seed):
    """Well-separated Gaussians in 2-D with random covariances and unequal weights."""
    rng = np.random.default_rng(seed)
    angles = 2 * np.pi * np.arange(n_clusters) / n_clusters
    centres = 8.0 * np.column_stack([np.cos(angles), np.sin(angles)])
    weights = rng.dirichlet(np.full(n_clusters, 5.0))
    labels = rng.choice(n_clusters, size=n_samples, p=weights).astype(np.int64)
    X = np.empty((n_samples, 2))
    for k in range(n_clusters):
        B = rng.normal(scale=0.8, size=(2, 2))
        cov = B @ B.T + 0.3 * np.eye(2)
        rows = labels == k
        X[rows] = rng.multivariate_normal(centres[k], cov, size=rows.sum())
    return X, labels


def package_bases():
    bases = {}
    try:
        from sklearn_ibp.likelihoods.normal_wishart import NormalWishartBase

        bases["conjugate"] = lambda: NormalWishartBase(sample_hyperparameters=False)
    except ImportError:
        pass
    try:
        from sklearn_ibp.likelihoods.conditionally_conjugate import (
            ConditionallyConjugateBase,
        )

        bases["conditionally_conjugate"] = lambda: ConditionallyConjugateBase(
            sample_hyperparameters=False)
    except ImportError:
        pass
    return bases


def time_solver(solver, base, X, labels, burn_in, n_timed, seed=0):
    rng = np.random.default_rng(seed)
    base.initialize(X, rng)
    state = solver.initialize(X, labels, 1.0, base, rng)
    for _ in range(burn_in):
        solver.sweep(state, base, rng)
    times, Ks = [], []
    for _ in range(n_timed):
        start = time.perf_counter()
        solver.sweep(state, base, rng)
        times.append(time.perf_counter() - start)
        Ks.append(state.n_clusters)
    return np.array(times), np.array(Ks), state


SOLVERS = {
    "slice": lambda: SliceDP(),
    "slice(kappa=0.5)": lambda: SliceDP(kappa=0.5),
    "truncated(50)": lambda: TruncatedDP(truncation=50),
    "retrospective": lambda: RetrospectiveDP(),
}


def run_problem(n_samples, n_clusters, burn_in, n_timed, target, bases):
    X, labels = make_mixture(n_samples, n_clusters, seed=n_clusters)
    print(f"\nN = {n_samples:,}, D = 2, {n_clusters} true clusters; "
          f"{burn_in} burn-in sweeps, {n_timed} timed; target fastest < {target} s/sweep")
    print(f"{'base':>24s} {'solver':>18s} {'median s':>10s} {'min s':>10s} "
          f"{'K (timed)':>10s} {'kernel':>7s} {'x fastest':>9s}")
    for base_name, make_base in bases.items():
        rows = []
        for name, make in SOLVERS.items():
            times, Ks, state = time_solver(make(), make_base(), X, labels, burn_in, n_timed)
            rows.append((name, np.median(times), times.min(), Ks, state))
        fastest = min(r[1] for r in rows)
        for name, med, low, Ks, state in rows:
            print(f"{base_name:>24s} {name:>18s} {med:10.4f} {low:10.4f} "
                  f"{Ks.min():>4d}-{Ks.max():<5d} {str(state.stats['gaussian_kernel']):>7s} "
                  f"{med / fastest:9.2f}")
        verdict = "meets" if fastest < target else "misses"
        print(f"{'':>24s} fastest {fastest:.4f} s/sweep {verdict} the target {target}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="N = 10,000 only")
    args = parser.parse_args()
    bases = {"toy": ToyNormalWishart, **package_bases()}
    # Compile the kernels outside the timing.
    for make in SOLVERS.values():
        time_solver(make(), ToyNormalWishart(), *make_mixture(200, 3, 0), 2, 1)
    run_problem(10_000, 8, burn_in=100, n_timed=50, target=0.01, bases=bases)
    if not args.quick:
        run_problem(1_000_000, 6, burn_in=20, n_timed=10, target=0.4, bases=bases)


if __name__ == "__main__":
    main()
