"""The Dask row store (:mod:`sklearn_ibp.distributed.dask_rows`, issue 24): the sub-cluster
sampler's passes over rows on a ``LocalCluster``, X never in one process.

Run from the repository root::

    python benchmarks/bench_dask_rows.py --quick            # N = 2e6, 2 workers (< 2 min)
    python benchmarks/bench_dask_rows.py --n 10000000       # N = 1e7
    python benchmarks/bench_dask_rows.py --n 100000000      # N = 1e8 (about 2 GB of X)
    python benchmarks/bench_dask_rows.py --fit --n 10000000 --n-iter 4   # DPMixture.fit

``--fit`` fits ``DPMixture(solver=SubclusterDP(), point_estimate="best_sample")`` to the
``dask.array`` X on the cluster (the estimator's dask path: X checked and its moments taken
on the workers, every pass of the sampler on the row store) and prints the seconds of the
set-up (X onto the workers, its checks and moments; and the start, ``--init auto``: the
nested-subsample start, ``single``: one cluster) and of each iteration (sweep and
hyperparameter updates), the clusters found, each worker's peak and current resident set
and the root's peak.

X is a 2-D mixture of 8 Gaussians (centres on a circle of radius 6, standard deviation 1)
made on the workers by ``da.random.RandomState(seed)`` (a seeded generator per chunk); the
store computes it once onto the workers (chunks of ``--chunk-blocks`` blocks of 2**16 rows).
Then, timed one by one (wall seconds, and each worker's process CPU seconds):

* ``statistics``: the counts, sums and scatters of the labels (a ``STATS_ONLY`` pass);
* ``row step``: the lowest log slice (a pass over the labels), then the ``SAMPLE`` pass with
  the slice (``--steps`` times), with the 8 true components and 2 empty ones (weights
  ``Dir(1, .., 1)``): the labels stay on the workers, the per-block statistics come back;
* ``two-cluster pass``: the rows of two clusters selected, and one ``ARGMAX`` pass over
  them (one stage of a split-merge proposal).

Memory: each worker's peak resident set (``ru_maxrss``) after the runs and its resident set
between them (psutil), and the root's peak. ``--compare`` also times the in-memory driver's
row step (``SubclusterDP._pass``) on the same rows in this process (N <= 2e7), after
checking that the store's labels and statistics are its bits.
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from sklearn_ibp.distributed.dask_rows import DaskRows  # noqa: E402
from sklearn_ibp.solvers.dp._dp_subcluster_kernels import ARGMAX  # noqa: E402

CENTRES = 6.0 * np.stack([np.cos(np.arange(8) * math.pi / 4),
                          np.sin(np.arange(8) * math.pi / 4)], axis=1)



def _print_memory(client):
    """The workers' peak and current memory, and this process's peak resident set."""
    memory = client.run(_worker_memory)
    print("worker memory: " + "; ".join(
        f"peak {peak / 2**30:.2f} GiB, now {now / 2**30:.2f} GiB"
        for peak, now in memory.values()))
    root = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(f"root peak resident set: {root / 2**30:.2f} GiB")

def _place(z, noise):
    return CENTRES[z[:, 0]] + noise


def make_x(n, chunk_rows, seed):
    import dask.array as da

    rs = da.random.RandomState(seed)
    z = rs.randint(0, 8, size=(n, 1), chunks=(chunk_rows, 1))
    noise = rs.normal(size=(n, 2), chunks=(chunk_rows, 2))
    return da.map_blocks(_place, z, noise, dtype=np.float64, chunks=noise.chunks)


def _worker_memory():
    import psutil

    return (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            psutil.Process().memory_info().rss)


def _worker_cpu():
    return time.process_time()


def components(rng, C):
    means = np.concatenate([CENTRES, rng.normal(scale=6.0, size=(C - 8, 2))])
    chols = np.tile(np.eye(2), (C, 1, 1))
    log_consts = np.full(C, -math.log(2 * math.pi))
    return means, chols, log_consts


def timed(client, function):
    cpu0 = client.run(_worker_cpu)
    t0 = time.perf_counter()
    out = function()
    wall = time.perf_counter() - t0
    cpu1 = client.run(_worker_cpu)
    return out, wall, {w: cpu1[w] - cpu0[w] for w in cpu0}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=float, default=1e7)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--chunk-blocks", type=int, default=32)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--compare", action="store_true")
    parser.add_argument("--init", choices=("auto", "single"), default="auto",
                        help="DPMixture's init for --fit (auto: the nested-subsample start)")
    parser.add_argument("--fit", action="store_true",
                        help="time DPMixture.fit on the dask.array instead of the passes")
    parser.add_argument("--n-iter", type=int, default=4)
    parser.add_argument("--n-proposals", type=int, default=4)
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.chunk_blocks, args.steps = 2e6, 8, 2
    n = int(args.n)
    import distributed

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1,
                                           processes=True, dashboard_address=None)
        client = distributed.Client(cluster)
    try:
        if args.fit:
            fit(client, n, args)
            return
        block = DaskRows.__init__.__kwdefaults__["block_size"]
        print(f"N = {n:.3g}, D = 2, {args.workers} workers x 1 thread, chunks of "
              f"{args.chunk_blocks} x {block} rows; load {os.getloadavg()[0]:.2f}")
        X = make_x(n, args.chunk_blocks * block, args.seed)
        store, wall, cpu = timed(client, lambda: DaskRows(
            X, client, chunk_blocks=args.chunk_blocks))
        print(f"X onto the workers and its column means: {wall:.2f} s "
              f"({store.n_chunks} chunks)")
        store.set_labels(0)
        _, wall, cpu = timed(client, lambda: store.statistics(1))
        print(f"first statistics (the workers import and load the kernels): {wall:.2f} s")
        rng = np.random.default_rng(args.seed)
        C = 10
        comps = components(rng, C)
        warm = np.log(np.full(C, 1.0 / C))
        _, wall, cpu = timed(client, lambda: (store.lowest_log_slice(warm, 1),
                                              store.row_step(comps, 2, warm, 1)))
        print(f"first row step (warm-up, not counted): {wall:.2f} s")
        store.set_labels(0)
        stats, wall, cpu = timed(client, lambda: store.statistics(1))
        print(f"statistics (1 cluster): {wall:.3f} s wall, worker CPU "
              f"{sorted(round(v, 3) for v in cpu.values())} s")
        rows = []
        for step in range(args.steps):
            log_pi = np.log(rng.dirichlet(np.ones(C)))
            slice_key = int(rng.integers(0, 2**62))
            key = int(rng.integers(0, 2**62))

            def row_step(log_pi=log_pi, slice_key=slice_key, key=key):
                low = store.lowest_log_slice(log_pi, slice_key)
                return low, store.row_step(comps, key, log_pi, slice_key)

            (low, stats), wall, cpu = timed(client, row_step)
            rows.append((wall, sum(cpu.values())))
            print(f"row step {step}: {wall:.3f} s wall, worker CPU "
                  f"{sorted(round(v, 3) for v in cpu.values())} s; counts {stats[0]}")
            stats_again, wall_s, cpu_s = timed(client, lambda: store.statistics(C))
            assert np.array_equal(stats_again[0], stats[0])
            print(f"  statistics ({C} components): {wall_s:.3f} s wall, worker CPU "
                  f"{sorted(round(v, 3) for v in cpu_s.values())} s")
        top = np.argsort(stats[0])[-2:]

        def two_cluster_pass():
            members = store.select(tuple(int(k) for k in top))
            two = (comps[0][top], comps[1][top], np.zeros(2))
            return members.n_members, members.run(two, 0, ARGMAX, 2)

        (m, _), wall, cpu = timed(client, two_cluster_pass)
        print(f"two-cluster pass ({m} rows: select + ARGMAX): {wall:.3f} s wall, worker CPU "
              f"{sorted(round(v, 3) for v in cpu.values())} s")
        _print_memory(client)
        walls = [w for w, _ in rows]
        print(f"median row step: {np.median(walls):.3f} s wall; worker CPU per step "
              f"{np.median([c for _, c in rows]):.3f} s "
              f"({np.median([c for _, c in rows]) / n * 1e9:.1f} ns per row)")
        if args.compare:
            compare(store, X, comps, rng, args.seed)
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            client.close()
            cluster.close()


class _Timed:
    """A mixin recording the end of each sweep and hyperparameter update (perf_counter)."""

    def update_state(self, state, *args, **kwargs):
        super().update_state(state, *args, **kwargs)
        if "store" in state.stats:  # not the start's subsample chains (in this process)
            _Timed.ends.append(time.perf_counter())


def fit(client, n, args):
    """DPMixture.fit on the dask.array X (module docstring, ``--fit``)."""
    from sklearn_ibp import DPMixture
    from sklearn_ibp.solvers.dp.dp_subcluster import SubclusterDP

    class TimedSubcluster(_Timed, SubclusterDP):
        pass

    block = SubclusterDP.block_size
    print(f"DPMixture.fit: N = {n:.3g}, D = 2, {args.workers} workers x 1 thread, chunks "
          f"of {args.chunk_blocks} x {block} rows, n_iter = {args.n_iter}, n_proposals = "
          f"{args.n_proposals}; load {os.getloadavg()[0]:.2f}")
    X = make_x(n, args.chunk_blocks * block, args.seed)
    model = DPMixture(solver=TimedSubcluster(n_proposals=args.n_proposals),
                      base="conjugate", point_estimate="best_sample", n_iter=args.n_iter,
                      burn_in=args.n_iter - 1, init=args.init, random_state=args.seed)
    _Timed.ends = []
    cpu0 = client.run(_worker_cpu)
    t0, root0 = time.perf_counter(), time.process_time()
    model.fit(X)
    total, root_cpu = time.perf_counter() - t0, time.process_time() - root0
    cpu1 = client.run(_worker_cpu)
    ends = np.array(_Timed.ends)
    # the set-up ends where the first iteration starts: its length is not known here, so
    # the set-up is the fit's time less the iterations' after the first, less the median
    steps = np.diff(ends)
    first = float(np.median(steps)) if steps.size else float("nan")
    print(f"fit: {total:.1f} s wall; worker CPU "
          f"{sorted(round(cpu1[w] - cpu0[w], 1) for w in cpu0)} s; root CPU (the driver "
          f"and the scheduler) {root_cpu:.1f} s")
    print(f"iterations 2..{args.n_iter}: " + ", ".join(f"{s:.1f}" for s in steps)
          + f" s wall (median {first:.1f} s)")
    print(f"set-up, start (init={args.init!r}) and first iteration: {ends[0] - t0:.1f} s "
          "wall")
    print(f"clusters per iteration: {model.traces_['n_clusters'][0].astype(int).tolist()}; "
          f"sizes {np.sort(model.weights_ * (n + model.alpha_)).round().astype(int)[::-1]}")
    _print_memory(client)


def compare(store, X, comps, rng, seed):
    """The in-memory driver's row step on the same rows, in this process, one thread."""
    import numba

    from sklearn_ibp.solvers.dp._dp_subcluster_kernels import SAMPLE
    from sklearn_ibp.solvers.dp.dp_subcluster import _EMPTY_INT, SubclusterDP

    X = X.compute()
    labels = store.gather_labels()
    solver = SubclusterDP()
    C = comps[0].shape[0]
    log_pi = np.log(rng.dirichlet(np.ones(C)))
    buffer = np.empty(X.shape[0], dtype=np.int64)
    numba.set_num_threads(1)
    got = store.row_step(comps, 5, log_pi, 6)
    solver._pass(X, store.shift, _EMPTY_INT, X.shape[0], comps, 5, _EMPTY_INT, SAMPLE,
                 buffer, C, slice_args=(labels, log_pi, 6))  # compiled, warm
    t0, c0 = time.perf_counter(), time.process_time()
    expected = solver._pass(X, store.shift, _EMPTY_INT, X.shape[0], comps, 5, _EMPTY_INT,
                            SAMPLE, buffer, C, slice_args=(labels, log_pi, 6))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    same = (all(np.array_equal(a, b) for a, b in zip(expected, got, strict=True))
            and np.array_equal(store.gather_labels(), buffer))
    print(f"in-memory row step (one thread, this process): {wall:.3f} s wall, "
          f"{cpu:.3f} s CPU; the store's bits: {same}")


if __name__ == "__main__":
    main()
