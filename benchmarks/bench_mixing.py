"""Mixing of the number of features K: collapsed Gibbs against the two slice samplers.

The setting of Görür (2007) sec. 4.3 (Fig. 4.7): data sets of 100 points drawn from the
linear-Gaussian IBP model in D = 1, 2, 3 dimensions with alpha in {1, 2}, sigma_x^2 = 1 and
sigma_A^2 in {1, 2, 4, 8}; sigma_x and sigma_A fixed at their generating values, Z, A and
alpha learned (alpha under a Gamma(1, 1) prior). For each data set and sampler the
integrated autocorrelation time (IAT) of K is the number of kept sweeps over their
effective sample size (:func:`sklearn_ibp.diagnostics.effective_sample_size`).

Samplers: ``"accelerated"`` stands for collapsed Gibbs (it draws from exactly the collapsed
sampler's conditionals: from one seed the two chains are identical, see
``tests/solvers/ibp/test_equivalence.py``) at a fraction of the cost; ``"semi_collapsed"`` is
Görür's (2007) "Gibbs sampling using conjugacy" (Algorithm 11: A explicit for the active
features, new features with their values integrated out); ``"semi_ordered_slice"``
(Algorithm 16 with the package's default per-row birth and death of unique features),
``"algorithm_16"`` (Algorithm 16 alone, ``unique_moves=None``) and ``"slice"``
(Algorithm 15) do not use conjugacy. Each chain's seconds per sweep are printed too, so
the ratio of IATs can be read per unit of time. BLAS is limited to one thread.

Usage: ``python benchmarks/bench_mixing.py [--sweeps 15000] [--datasets 1]
[--sigma-a2 1 4] [--quick]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from threadpoolctl import threadpool_limits

from sklearn_ibp.diagnostics import effective_sample_size
from sklearn_ibp.likelihoods import LinearGaussianFeatures
from sklearn_ibp.priors.ibp import harmonic_rate, sample_ibp
from sklearn_ibp.solvers import (
    AcceleratedIBP,
    SemiCollapsedIBP,
    SemiOrderedSliceIBP,
    SliceIBP,
)


def make_data(n_dims, alpha, sigma_a, seed, n_samples=100):
    """100 points from the linear-Gaussian IBP model with sigma_x = 1."""
    rng = np.random.default_rng(seed)
    Z = sample_ibp(n_samples, alpha, 1.0, rng)
    A = sigma_a * rng.standard_normal((Z.shape[1], n_dims))
    return Z @ A + rng.standard_normal((n_samples, n_dims))


def trace_conjugate(cls, X, alpha, sigma_a, n_sweeps, rng):
    """K after every sweep of a conjugate solver, alpha drawn given K between sweeps."""
    solver = cls()
    Z0 = sample_ibp(X.shape[0], alpha, 1.0, rng)
    hyper = {"alpha": alpha, "beta": 1.0, "sigma_x": 1.0, "sigma_a": sigma_a}
    state = solver.initialize(X, Z0, hyper, rng)
    rate = 1.0 + harmonic_rate(X.shape[0], 1.0)
    K = np.empty(n_sweeps)
    for i in range(n_sweeps):
        solver.sweep(state, rng)
        a = rng.gamma(1.0 + state.n_features, 1.0 / rate)
        solver.set_hyperparameters(state, a, 1.0, sigma_a)
        K[i] = state.n_features
    return K


def trace_explicit(solver, X, alpha, sigma_a, n_sweeps, rng):
    """K after every sweep of an explicit-feature solver (started from a prior draw of Z,
    A drawn given it), alpha from the solver's own conditional."""
    lik = LinearGaussianFeatures()
    params = {"sigma_x": 1.0, "sigma_a": sigma_a}
    observed = np.ones(X.shape, np.uint8)
    Z0 = sample_ibp(X.shape[0], alpha, 1.0, rng).astype(np.int8)
    A0 = lik.sample_features(X, observed, Z0, np.zeros((Z0.shape[1], X.shape[1])), params,
                             rng)
    state = solver.initialize(X, observed, Z0, A0, alpha, params, lik, rng)
    K = np.empty(n_sweeps)
    for i in range(n_sweeps):
        solver.sweep(state, lik, rng)
        solver.sample_alpha(state, rng, (1.0, 1.0))
        K[i] = state.n_features
    return K


SAMPLERS = {
    "accelerated": lambda *a: trace_conjugate(AcceleratedIBP, *a),
    "semi_collapsed": lambda *a: trace_conjugate(SemiCollapsedIBP, *a),
    "semi_ordered_slice": lambda *a: trace_explicit(SemiOrderedSliceIBP(), *a),
    "algorithm_16": lambda *a: trace_explicit(SemiOrderedSliceIBP(unique_moves=None),
                                              *a),
    "slice": lambda *a: trace_explicit(SliceIBP(), *a),
}


def iat(trace, burn_in):
    kept = trace[burn_in:]
    return len(kept) / effective_sample_size(kept[None, :])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweeps", type=int, default=15000)
    parser.add_argument("--datasets", type=int, default=1)
    parser.add_argument("--sigma-a2", type=float, nargs="+", default=[1.0, 4.0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    n_sweeps = 1500 if args.quick else args.sweeps
    burn_in = n_sweeps // 10
    names = list(SAMPLERS)
    print(f"IAT of K, {n_sweeps} sweeps ({burn_in} burn-in), {args.datasets} data set(s) "
          "per setting; ratio = IAT / accelerated's IAT")
    header = f"{'s_A^2':>5} {'D':>2} {'alpha':>5} " + " ".join(f"{n:>20}" for n in names)
    print(header)
    totals = {n: [] for n in names}
    seconds = {n: [] for n in names}
    for sigma_a2 in args.sigma_a2:
        for n_dims in (1, 2, 3):
            for alpha in (1.0, 2.0):
                row = {n: [] for n in names}
                for d in range(args.datasets):
                    X = make_data(n_dims, alpha, np.sqrt(sigma_a2), 1000 + d)
                    for j, name in enumerate(names):
                        rng = np.random.default_rng(10 * d + j)
                        start = time.perf_counter()
                        with threadpool_limits(limits=1, user_api="blas"):
                            K = SAMPLERS[name](X, alpha, np.sqrt(sigma_a2), n_sweeps, rng)
                        elapsed = time.perf_counter() - start
                        row[name].append((iat(K, burn_in), elapsed))
                        seconds[name].append(elapsed / n_sweeps)
                ref = np.mean([v[0] for v in row["accelerated"]])
                cells = []
                for name in names:
                    value = np.mean([v[0] for v in row[name]])
                    totals[name].append(value / ref)
                    cells.append(f"{value:8.1f} ({value / ref:4.2f}x)")
                print(f"{sigma_a2:5.1f} {n_dims:2d} {alpha:5.1f} "
                      + " ".join(f"{c:>20}" for c in cells), flush=True)
    print("geometric mean of the ratio to accelerated: "
          + ", ".join(f"{n} {np.exp(np.mean(np.log(totals[n]))):.2f}" for n in names))
    print("median seconds per sweep: "
          + ", ".join(f"{n} {1e3 * np.median(seconds[n]):.2f} ms" for n in names))


if __name__ == "__main__":
    main()
