"""Seconds per sweep of Neal's DP mixture samplers (gibbs, auxiliary with SampleBoth /
SampleMu / SampleS, no_gaps, metropolis) on a Gaussian mixture in two dimensions.

N = 10,000 points from 8 Gaussians in D = 2 (fixed seed). As in
``bench_dp_stick_breaking.py``, each solver starts from the true partition (a sweep's cost
grows with the number of clusters), runs a few untimed sweeps (compilation left out), then
``--sweeps`` timed sweeps; printed: the median and minimum seconds per sweep, the mean
number of clusters, and the ratio of each median to the fastest. ``alpha = 1`` and the
bases' hyperparameters stay fixed (resampling them is the estimator's, not the sweep's).

A sweep is everything ``solver.sweep`` does: the indicator pass in numba, the prior draws
for the auxiliary / new components, relabelling and the parameter draws of eq. 3.31.

    python benchmarks/bench_dp_neal.py [--sweeps 30] [--n 10000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from sklearn_ibp.likelihoods.conditionally_conjugate import ConditionallyConjugateBase
from sklearn_ibp.solvers.dp.dp_auxiliary import AuxiliaryDP
from sklearn_ibp.solvers.dp.dp_gibbs import GibbsDP
from sklearn_ibp.solvers.dp.dp_metropolis import MetropolisDP
from sklearn_ibp.solvers.dp.dp_no_gaps import NoGapsDP

try:  # the conjugate base, when present
    from sklearn_ibp.likelihoods.normal_wishart import NormalWishartBase
except ImportError:  # pragma: no cover
    NormalWishartBase = None


def make_data(n, n_clusters=8, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.uniform(-10, 10, size=(n_clusters, 2))
    labels = rng.integers(0, n_clusters, size=n)
    scales = rng.uniform(0.3, 1.0, size=(n_clusters, 1))
    X = centers[labels] + scales[labels] * rng.standard_normal((n, 2))
    return X, labels


def time_solver(solver, base, X, labels, n_sweeps, warm=3, seed=0):
    rng = np.random.default_rng(seed)
    base.initialize(X, rng)
    state = solver.initialize(X, labels, 1.0, base, rng)
    for _ in range(warm):
        solver.sweep(state, base, rng)
    times, ks = [], []
    for _ in range(n_sweeps):
        t0 = time.perf_counter()
        solver.sweep(state, base, rng)
        times.append(time.perf_counter() - t0)
        ks.append(state.n_clusters)
    return np.median(times), np.min(times), np.mean(ks)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--sweeps", type=int, default=30)
    args = parser.parse_args()
    X, labels = make_data(args.n)
    bases = {"conditionally_conjugate": lambda: ConditionallyConjugateBase(
        sample_hyperparameters=False)}
    if NormalWishartBase is not None:
        bases["conjugate"] = lambda: NormalWishartBase(sample_hyperparameters=False)
    runs = []
    for base_name, make_base in bases.items():
        solvers = [AuxiliaryDP(), AuxiliaryDP(n_auxiliary=3), NoGapsDP(), MetropolisDP()]
        if base_name == "conjugate":
            solvers.insert(0, GibbsDP())
        else:
            solvers += [AuxiliaryDP(scheme="mu"), AuxiliaryDP(scheme="s")]
        for solver in solvers:
            params = ",".join(f"{k}={v}" for k, v in solver.get_params().items())
            median, best, k = time_solver(solver, make_base(), X, labels, args.sweeps)
            runs.append((f"{solver.name}({params})", base_name, median, best, k))
    fastest = min(r[2] for r in runs)
    print(f"N = {args.n}, D = 2, 8 true clusters; {args.sweeps} timed sweeps")
    print(f"{'solver':40s} {'base':24s} {'median s':>9s} {'min s':>8s} {'K':>5s} {'ratio':>6s}")
    for name, base_name, median, best, k in runs:
        print(f"{name:40s} {base_name:24s} {median:9.4f} {best:8.4f} {k:5.1f} "
              f"{median / fastest:6.2f}")


if __name__ == "__main__":
    main()
