"""The parallel sub-cluster split-merge sampler (``solver="subcluster"``, issue 24) against
the slice sampler, and against scikit-learn's BayesianGaussianMixture.

Run from the repository root::

    python benchmarks/bench_subcluster.py --quick    # N = 1e4 and 1e5, 3 seeds (~2 min)
    python benchmarks/bench_subcluster.py            # N = 1e4, 1e6, 1e7; 10 seeds at 1e6
    python benchmarks/bench_subcluster.py --d32      # D = 32, 20 clusters, N = 1e6
    python benchmarks/bench_subcluster.py --n 1000000 --threads 1 --all-moves
        # with the reallocations and three-cluster moves (SubclusterDP's class attributes)
    python benchmarks/bench_subcluster.py --n 1000000 --threads 1 --all-moves \
        --fitted-rate 0.9 --seeds 4 --first-seed 0
        # and the fitted proposal (SubclusterDP.fitted_rate); seeds 0-3 of a split run

1. **2-D mixture of 8 Gaussians**, drawn by :func:`bench_dp_mixture.make_mixture` (centres
   at least 4.5 apart, random rotations, standard deviations 0.5-1.5). For each N:

   a. ``SubclusterDP`` chains from the nested-subsample start (``init="subsample"``, what
      ``DPMixture(solver="subcluster")`` does; ``--start single`` for one cluster), one per
      seed, with 1 thread and (first seed) 2 threads: per iteration the sweep plus the
      updates of ``DPMixture``'s loop (alpha and the base's hyperparameters). Reported:
      median seconds per iteration (wall ``perf_counter`` and process CPU ``process_time``,
      which sums the threads), the start's seconds, and the first iteration (and the seconds
      until it, the start's included) at which the number of clusters holding at least 1% of
      the rows is 8 and the adjusted Rand index against the true components is above 0.95
      (evaluated after every iteration, outside the clock).
   b. ``SliceDP`` in the same run, from the k-means start with 16 clusters that
      ``DPMixture`` gives it (fitted on at most 50,000 rows): seconds per iteration and
      the same criterion.

2. ``--d32``: D = 32, 20 clusters, N = 1e6 (``--n`` to change): the sub-cluster chain
   (100 iterations or ``--iters``, from the start of ``--start``) against
   ``BayesianGaussianMixture(n_components=40, weight_concentration_prior_type=
   "dirichlet_process")`` (``max_iter`` 100, or ``--bgm-max-iter``): fit seconds and
   held-out mean log-likelihood (the sub-cluster chain's last state's posterior
   predictive).

Thread counts need free cores to show a speed-up: the load average is printed.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np
from sklearn.cluster import KMeans
from sklearn.metrics import adjusted_rand_score
from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_dp_mixture import draw, make_mixture  # noqa: E402

from sklearn_ibp.likelihoods.normal_wishart import NormalWishartBase  # noqa: E402
from sklearn_ibp.solvers.dp import SliceDP, SubclusterDP  # noqa: E402
from sklearn_ibp.solvers.dp._dp_base import relabel  # noqa: E402
from sklearn_ibp.solvers.dp.nested_start import nested_subsample_start  # noqa: E402


class AllMovesDP(SubclusterDP):
    """The reallocations and three-cluster moves enabled (``--all-moves``)."""

    reallocation_rate = 0.2
    three_cluster_rate = 0.3


#: The sub-cluster solver class the experiments run (``--all-moves`` swaps it).
SOLVER = [SubclusterDP]
#: The sub-cluster chains' start (``--start``): "subsample", ``DPMixture``'s default for
#: this solver (chains on nested subsamples, ``init="subsample"``), or "single".
START = ["subsample"]
TARGET_SECONDS_1M = 0.4
TARGET_ITERATIONS = 100


def _load():
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _iterate(solver, state, base, rng):
    solver.sweep(state, base, rng)
    solver.update_state(state, base, rng)


def run_chain(X, y, solver, labels, seed, max_iter, reach=True):
    """Iterate a chain; returns per-iteration (wall, cpu) and the first iteration that
    meets the criterion (or None) with the wall seconds until then."""
    rng = np.random.default_rng(seed)
    base = NormalWishartBase()
    base.initialize(X, rng)
    t0, c0 = time.perf_counter(), time.process_time()
    alpha = 1.0
    nested = START[0] == "subsample" and isinstance(solver, SubclusterDP)
    if nested:
        labels, alpha = nested_subsample_start(
            solver, X, alpha, base, rng, lambda X_sub, rng: np.zeros(X_sub.shape[0], np.int64),
            update_options={})
    state = solver.initialize(X, labels, alpha, base, rng)
    start, start_cpu = time.perf_counter() - t0, time.process_time() - c0
    if reach:
        kind = "subsample" if nested else "the labels given"
        print(f"  start ({kind}): {start:.2f} s wall, {start_cpu:.2f} s cpu; K "
              f"{state.n_clusters}", flush=True)
    wall, cpu = [], []
    reached, reached_at = None, None
    n_min = 0.01 * X.shape[0]
    for it in range(1, max_iter + 1):
        w, c = time.perf_counter(), time.process_time()
        _iterate(solver, state, base, rng)
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - c)
        if reach and reached is None:
            big = int(np.sum(state.counts >= n_min))
            if big == 8 and adjusted_rand_score(y, state.labels) > 0.95:
                reached, reached_at = it, (start + sum(wall), start_cpu + sum(cpu))
    return np.array(wall), np.array(cpu), reached, reached_at, state


def kmeans_start(X, seed=0):
    rows = slice(None) if X.shape[0] <= 50000 else slice(None, None, X.shape[0] // 50000)
    labels = KMeans(n_clusters=16, n_init=1, random_state=seed).fit(X[rows]).predict(X)
    return relabel(labels)[0].astype(np.int64)


def experiment_2d(n_samples, seeds, max_iter, threads=(1, 2), slice_iter=None):
    print(f"\n== 2-D, 8 Gaussians, N = {n_samples:,} (load {_load()}) ==")
    mixture = make_mixture(8, 2, seed=0)
    X, y = draw(mixture, n_samples, seed=1)
    # compile outside the clock
    Xs, ys = X[:500], y[:500]
    run_chain(Xs, ys, SOLVER[0](n_threads=2), np.zeros(500, dtype=np.int64), 0, 3,
              reach=False)
    run_chain(Xs, ys, SliceDP(), kmeans_start(Xs), 0, 3, reach=False)
    rows = []
    for seed in seeds:
        for n_threads in (threads if seed == seeds[0] else threads[:1]):
            wall, cpu, it, secs, state = run_chain(
                X, y, SOLVER[0](n_threads=n_threads), np.zeros(n_samples, dtype=np.int64),
                seed, max_iter)
            rows.append((seed, n_threads, wall, cpu, it, secs, state))
            when = "-" if secs is None else f"{secs[0]:.2f} s wall, {secs[1]:.2f} s cpu"
            print(f"subcluster seed {seed} threads {n_threads}: median {np.median(wall):.4f} s"
                  f" wall, {np.median(cpu):.4f} s cpu per iteration; 8 clusters >= 1% and "
                  f"ARI > 0.95 at iteration {it} ({when})"
                  f"; final K {state.n_clusters}, {int(np.sum(state.counts >= 0.01 * n_samples))}"
                  f" >= 1% (load {_load()})", flush=True)
    start = kmeans_start(X)
    wall, cpu, it, secs, state = run_chain(X, y, SliceDP(), start, seeds[0],
                                           slice_iter or max_iter)
    print(f"slice (k-means start) seed {seeds[0]}: median {np.median(wall):.4f} s wall, "
          f"{np.median(cpu):.4f} s cpu per iteration; criterion at iteration {it}; final "
          f"{int(np.sum(state.counts >= 0.01 * n_samples))} clusters >= 1% "
          f"(load {_load()})", flush=True)
    hits = [r for r in rows if r[1] == threads[0] and r[4] is not None]
    print(f"subcluster: criterion within {max_iter} iterations in {len(hits)} of "
          f"{len(seeds)} seeds")
    return rows


def held_out_subcluster(state, base, X_new):
    """Mean log posterior predictive density of the rows of ``X_new`` under one state."""
    st = state.stats
    N = int(st["counts"].sum())
    alpha = state.alpha
    terms = []
    for k in range(state.n_clusters):
        n, mean, W = base.posterior_statistics_from_sums(int(st["counts"][k]), st["sums"][k],
                                                         st["scatters"][k], st["shift"])
        terms.append(math.log(n / (N + alpha))
                     + base._student_t(X_new, n, mean, np.linalg.cholesky(W)))
    terms.append(math.log(alpha / (N + alpha)) + base.log_prior_predictive(X_new))
    from scipy.special import logsumexp

    return float(np.mean(logsumexp(np.column_stack(terms), axis=1)))


def experiment_d32(n_samples, iters, n_threads, bgm_max_iter=100):
    from sklearn.mixture import BayesianGaussianMixture

    print(f"\n== D = 32, 20 Gaussians, N = {n_samples:,} (load {_load()}) ==")
    mixture = make_mixture(20, 32, seed=0)
    X, y = draw(mixture, n_samples, seed=1)
    X_new, _ = draw(mixture, 20000, seed=2)
    run_chain(X[:500], y[:500], SOLVER[0](n_threads=n_threads),
              np.zeros(500, dtype=np.int64), 0, 2, reach=False)
    rng = np.random.default_rng(0)
    base = NormalWishartBase()
    base.initialize(X, rng)
    solver = SOLVER[0](n_threads=n_threads)
    t0 = time.perf_counter()
    labels, alpha = np.zeros(n_samples, dtype=np.int64), 1.0
    if START[0] == "subsample":
        labels, alpha = nested_subsample_start(
            solver, X, alpha, base, rng, lambda X_sub, rng: np.zeros(X_sub.shape[0], np.int64),
            update_options={})
    start = time.perf_counter() - t0
    state = solver.initialize(X, labels, alpha, base, rng)
    for _ in range(iters):
        _iterate(solver, state, base, rng)
    fit = time.perf_counter() - t0
    big = int(np.sum(state.counts >= 0.01 * n_samples))
    print(f"subcluster (start {START[0]}: {start:.1f} s): {iters} iterations {fit:.1f} s "
          f"in all, K {state.n_clusters} ({big} >= 1%), "
          f"ARI {adjusted_rand_score(y, state.labels):.3f}, held-out "
          f"{held_out_subcluster(state, base, X_new):.3f} (load {_load()})", flush=True)
    t0 = time.perf_counter()
    bgm = BayesianGaussianMixture(n_components=40, random_state=0, max_iter=bgm_max_iter,
                                  weight_concentration_prior_type="dirichlet_process")
    with threadpool_limits(n_threads):  # BLAS threads: as many as the chain's
        bgm.fit(X)
    fit = time.perf_counter() - t0
    print(f"BayesianGaussianMixture(40, dp, max_iter={bgm_max_iter}): {fit:.1f} s, "
          f"{bgm.n_iter_} EM iterations, converged {bgm.converged_}, ARI "
          f"{adjusted_rand_score(y, bgm.predict(X)):.3f}, held-out "
          f"{bgm.score(X_new):.3f} (load {_load()})", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--d32", action="store_true")
    parser.add_argument("--n", type=int, default=None)
    parser.add_argument("--iters", type=int, default=TARGET_ITERATIONS)
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--all-moves", action="store_true",
                        help="enable the reallocations and three-cluster moves")
    parser.add_argument("--first-seed", type=int, default=0,
                        help="seeds first-seed .. first-seed + seeds - 1 (to split a run "
                             "over processes)")
    parser.add_argument("--bgm-max-iter", type=int, default=100,
                        help="--d32: BayesianGaussianMixture's max_iter (its default 100)")
    parser.add_argument("--start", choices=("subsample", "single"), default="subsample",
                        help="the sub-cluster chains' start (DPMixture's init)")
    parser.add_argument("--fitted-rate", type=float, default=None,
                        help="SubclusterDP.fitted_rate, the weight of the fitted split "
                             "proposal (default: the class's)")
    args = parser.parse_args()
    START[0] = args.start
    if args.all_moves:
        SOLVER[0] = AllMovesDP
    if args.fitted_rate is not None:
        SOLVER[0] = type("FittedRateDP", (SOLVER[0],), {"fitted_rate": args.fitted_rate})
    print(f"solver {SOLVER[0].__name__}: fitted_rate {SOLVER[0].fitted_rate}, "
          f"reallocation_rate {SOLVER[0].reallocation_rate}, three_cluster_rate "
          f"{SOLVER[0].three_cluster_rate}")
    print(f"bench_subcluster.py; load {_load()}; cores {os.cpu_count()}")
    threads = (1,) if args.threads == 1 else (1, args.threads)
    with threadpool_limits(1):
        if args.d32:
            experiment_d32(args.n or 1_000_000, args.iters, args.threads, args.bgm_max_iter)
            return
        if args.quick:
            sizes = [10_000, 100_000] if args.n is None else [args.n]
            for n in sizes:
                experiment_2d(n, list(range(args.first_seed, args.first_seed
                                            + (args.seeds or 3))), 30, threads, 15)
            return
        sizes = [10_000, 1_000_000, 10_000_000] if args.n is None else [args.n]
        for n in sizes:
            seeds = list(range(args.first_seed, args.first_seed
                               + (args.seeds or (10 if n == 1_000_000 else 3))))
            if n >= 10_000_000:
                seeds = seeds[:1]
            experiment_2d(n, seeds, args.iters, threads, 20)


if __name__ == "__main__":
    main()
