"""Seconds per sweep of the data-parallel accelerated sampler (Doshi-Velez 2009, ch. 5) against the
serial accelerated sampler, in-process (threads) and on a local Dask cluster.

Run from the repository root::

    python benchmarks/bench_parallel.py              # N = 57,931, D = 161; under 10 minutes
    python benchmarks/bench_parallel.py --quick      # N = 10,000, D = 161; under 2 minutes
    python benchmarks/bench_parallel.py --no-dask    # threads only

Data (the piano data's size, sec. 5.4): the first N rows of one linear-Gaussian draw
(the generator of ``bench_solvers.py`` part b): a fixed ``Z`` with 20 features whose
probabilities run from 0.5 down to 0.05, ``A ~ N(0, 1)``, noise 0.5, D = 161. Every fit is
``IBPFactorAnalysis(alpha=2, sigma_x=0.5, sigma_a=1, sample_hyperparameters=False)`` (the
generating values, held fixed) and starts from the same ``Z``: the state reached by a few
serial accelerated sweeps from the true ``Z`` on the centred data (centring adds features:
the column means are not a sum of binary features, so K settles above 20).

Configurations, each timed in the same process on the same data:

* ``serial``: ``solver="accelerated"`` (``AcceleratedIBP``), the baseline;
* ``1 shard``, ``2 shards (threads)``: ``ParallelAcceleratedIBP(n_shards=1 | 2,
  backend="threads")``;
* ``2 shards (dask)``: ``ParallelAcceleratedIBP(n_shards=2, backend="dask", client=client)`` on
  a ``LocalCluster(n_workers=2, threads_per_worker=1, processes=True)`` on 127.0.0.1.

with ``sweeps_per_sync`` 1 and 5 (one estimator iteration is one synchronisation, that is
``sweeps_per_sync`` sweeps on every shard), and once more (b) with the default
``sample_hyperparameters=True``: the root draws the hyperparameters between two rounds
from the statistics the shards sent (the residual sum of squares from the summed
``Z^T Z`` and ``Z^T X``) and sends them with the next round, with no round trip and no
work on the shards of its own.

Printed per configuration, in seconds per sweep (an iteration's time divided by
``sweeps_per_sync``; medians over the timed iterations; the first iteration of every fit is
left out: it places the rows on the workers and recomputes the statistics):

* ``solver``: wall seconds of the solver's ``sweep`` (one synchronisation round, messages
  and root included), and its minimum over the run; the issue's "seconds per sweep";
* ``cpu``: the CPU seconds of the sweep's critical path, which the other tenants' load
  hardly changes: the serial sweep's CPU time; for the shards, the root's CPU time in the
  sweep plus the slowest shard's (each shard's own thread CPU time, ``cpu_seconds`` of its
  state), that is the wall time the sweep would take with a free core per shard; its
  median and its mean (the serial sweep's cost is bimodal: a split-merge proposal that
  launches its restricted scans costs more than a sweep, and whether the median falls on
  the cheap or the dear mode depends on the seeds);
* ``loop``: wall seconds from the start of one estimator iteration to the next: the sweep,
  the hyperparameter step, the log joint of the trace and the kept sample;
* ``fit``: the whole ``fit`` (``time.perf_counter`` around it) over ``n_iter_``, fixed
  costs (validation, initial statistics, the final posterior) included;
* from ``timings_`` (summed over the timed rounds): ``comm`` = (round - compute) / round,
  the share of the sampling phase spent communicating and waiting, and ``root`` = root /
  (round + root), the share of the sweep spent summing messages at the root;
* ratios: 1 shard / 2 shards and serial / 2 shards (the speed-up of two shards), against
  the issue's target of 1.7 on this 2-core machine, in wall time and in ``cpu``.

The machine is shared, so the script also measures how much of a second core this process
gets right now: a numba loop that releases the GIL, run on one thread and then on two
threads at once (``2 x t1 / t2``; 2.0 on an idle 2-core machine, 1.0 when the other
tenants leave one core's worth). It runs before and after each block; the load averages
are printed with it. Configurations are interleaved (one fit of each per round, the order
reversed every other round) so that a change of load hits all of them alike. BLAS is limited
to one thread.

c. Then the solvers are driven directly (``initialize`` and ``sweep``, as in
``bench_solvers.py``; no estimator loop, hyperparameters fixed, ``sweeps_per_sync=1``): one
sweep of each configuration per round, each round right after the measure of free
parallelism, so that each round's ratios can be read against how much of the second core
there was. Printed: every round, and the median ratios over all rounds and over the rounds
in which that measure was at least 1.8.

d. The issue's second data set, N = 100,000, D = 1,000 binary (the Flickr data's size;
``--quick``: 20,000 rows), with the binary likelihood (``"noisy_or"``, the leaky noisy-or):
``ParallelNoisyOrIBP`` with 1 and 2 shards (threads) and 2 shards on Dask, against the serial
``MetropolisIBP``, the solvers driven directly from the true ``Z`` and ``A``
(``--binary-only`` runs this part alone).

``--parts`` picks the parts to run (default ``abcd``; ``--parts b`` runs part b alone,
after the same warm-up).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
import time
import warnings

import numpy as np
from numba import njit
from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_solvers import print_environment, scaling_data  # noqa: E402

import sklearn_ibp  # noqa: E402
from sklearn_ibp import IBPFactorAnalysis  # noqa: E402
from sklearn_ibp.distributed import ParallelAcceleratedIBP, ParallelNoisyOrIBP  # noqa: E402
from sklearn_ibp.solvers import AcceleratedIBP  # noqa: E402

PIANO_N, PIANO_D = 57931, 161
FLICKR_N, FLICKR_D = 100_000, 1_000
HYPER = dict(alpha=2.0, sigma_x=0.5, sigma_a=1.0)
TARGET_SPEEDUP = 1.7


# -- instrumented estimator and solvers (benchmark only) -----------------------------------
class _TimedSweeps:
    """Records the wall seconds of every ``sweep`` in ``sweep_seconds_`` and the CPU
    seconds of its critical path in ``sweep_cpu_``: the process's CPU time for the serial
    sampler; for the shards, the root's CPU time plus the slowest shard's."""

    def sweep(self, state, rng):
        start, start_cpu = time.perf_counter(), time.process_time()
        super().sweep(state, rng)
        wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
        shards = state.stats.get("shards")
        if shards is not None and len(shards) > 1:
            own = [s.cpu_seconds for s in shards]
            # Threads: the process's CPU time includes the shards'; Dask: it is the root's.
            root = cpu - sum(own) if self.backend == "threads" else cpu
            cpu = max(root, 0.0) + max(own)
        self.__dict__.setdefault("sweep_seconds_", []).append(wall)
        self.__dict__.setdefault("sweep_cpu_", []).append(cpu)


class TimedAccelerated(_TimedSweeps, AcceleratedIBP):
    pass


class TimedParallel(_TimedSweeps, ParallelAcceleratedIBP):
    pass


class TimedEstimator(IBPFactorAnalysis):
    """``IBPFactorAnalysis`` whose chains start from ``self._start_Z`` and which records
    when each iteration starts (``self._starts``)."""

    def _initialize_chain(self, solver, X, hyper, init, rng):
        return solver.initialize(X, self._start_Z.copy(), hyper, rng)

    def _iterate(self, solver, state, rng, missing):
        self._starts.append(time.perf_counter())
        super()._iterate(solver, state, rng, missing)


# -- how much of a second core this process gets --------------------------------------------
@njit(nogil=True, cache=True)
def _spin(n):
    s = 0.0
    for i in range(n):
        s += np.sqrt(i + 1.0)
    return s


def available_parallelism(n=60_000_000):
    """``2 t1 / t2``: one thread doing ``n`` steps (``t1``) against two threads doing ``n``
    steps each at once (``t2``)."""
    _spin(10)

    def timed(n_threads):
        threads = [threading.Thread(target=_spin, args=(n,)) for _ in range(n_threads)]
        start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return time.perf_counter() - start

    return 2.0 * timed(1) / timed(2)


def machine_line(label):
    value = available_parallelism()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"  [{label}: 2-thread speed-up of a GIL-free loop {value:.2f} (2.0 = both "
          f"cores free); load average {load}]", flush=True)
    return value


# -- one fit ------------------------------------------------------------------------------
def make_solver(config, sweeps_per_sync, client):
    kind, shards = config
    if kind == "serial":
        return TimedAccelerated()
    return TimedParallel(n_shards=shards, sweeps_per_sync=sweeps_per_sync,
                         backend=kind, client=client if kind == "dask" else None)


def timed_fit(config, sweeps_per_sync, X, Z0, n_iter, seed, client, model_kwargs):
    """One fit from ``Z0``; per-iteration times with the first iteration left out."""
    solver = make_solver(config, sweeps_per_sync, client)
    spp = 1 if config[0] == "serial" else sweeps_per_sync
    est = TimedEstimator(solver=solver, n_iter=n_iter, burn_in=0, random_state=seed,
                         **model_kwargs)
    est._start_Z, est._starts = Z0, []
    start = time.perf_counter()
    est.fit(X)
    total = time.perf_counter() - start
    fitted = est._solver
    out = {
        "sweep": list(np.asarray(fitted.sweep_seconds_[1:]) / spp),
        "cpu": list(np.asarray(fitted.sweep_cpu_[1:]) / spp),
        "iter": list(np.diff(est._starts)[1:]),
        "fit": [total / est.n_iter_],
        "K": list(est.traces_["n_features"][0][1:]),
        "round": [], "compute": [], "root": [],
    }
    if hasattr(fitted, "timings_"):
        for key in ("round", "compute", "root"):
            out[key] = list(fitted.timings_[key][1:])
    return out


def measure(configs, sweeps_per_sync, X, Z0, n_iter, rounds, client, model_kwargs,
            label):
    """Interleaved rounds: one fit of every configuration per round, in reverse order
    every other round."""
    results = {c: {} for c in configs}
    for r in range(rounds):
        for c in configs if r % 2 == 0 else configs[::-1]:
            n = n_iter["serial"] if c[0] == "serial" else n_iter["parallel"]
            got = timed_fit(c, sweeps_per_sync, X, Z0, n, r, client, model_kwargs)
            for key, values in got.items():
                results[c].setdefault(key, []).extend(values)
        print(f"  ... {label}: round {r + 1} of {rounds} done", flush=True)
    return results


def name_of(config):
    kind, shards = config
    return "serial accelerated" if kind == "serial" else \
        f"{shards} shard{'s' if shards > 1 else ''} ({kind})"


def report(results, sweeps_per_sync, title):
    spp = {c: 1 if c[0] == "serial" else sweeps_per_sync for c in results}
    print(f"\n{title}")
    print(f"  {'':<22}{'seconds per sweep':^52}")
    print(f"  {'configuration':<22}{'solver':>9}{'(min)':>8}{'cpu':>8}{'(mean)':>8}{'loop':>9}"
          f"{'fit':>10}"
          f"{'K':>7}{'comm':>7}{'root':>7}{'n':>4}")
    per = {}
    for c, r in results.items():
        comm = root = ""
        if r["round"]:
            rnd, cmp_, rt = (np.sum(r[k]) for k in ("round", "compute", "root"))
            comm, root = f"{(rnd - cmp_) / rnd:7.1%}", f"{rt / (rnd + rt):7.1%}"
        K = np.asarray(r["K"])
        per[c] = {"sweep": np.median(r["sweep"]), "min": np.min(r["sweep"]),
                  "cpu": np.median(r["cpu"]), "cpu_mean": np.mean(r["cpu"]),
                  "loop": np.median(r["iter"]) / spp[c], "fit": np.median(r["fit"]) / spp[c]}
        print(f"  {name_of(c):<22}{per[c]['sweep']:9.3f}{per[c]['min']:8.3f}"
              f"{per[c]['cpu']:8.3f}{per[c]['cpu_mean']:8.3f}{per[c]['loop']:9.3f}"
              f"{per[c]['fit']:10.3f}"
              f"{f'{K.min():.0f}-{K.max():.0f}':>7}{comm:>7}{root:>7}{len(r['sweep']):>4}")
    for kind in ("threads", "dask"):
        two = (kind, 2)
        if two not in per:
            continue
        for ref, ref_name in ((("threads", 1), "1 shard"), (("serial", 1), "serial")):
            if ref not in per:
                continue
            s = per[ref]["sweep"] / per[two]["sweep"]
            verdict = "meets" if s >= TARGET_SPEEDUP else "misses"
            print(f"  2 shards ({kind}) over {ref_name}: {s:.2f}x per sweep ({verdict} "
                  f"{TARGET_SPEEDUP}x); best sweeps {per[ref]['min'] / per[two]['min']:.2f}x; "
                  f"loop {per[ref]['loop'] / per[two]['loop']:.2f}x; "
                  f"fit {per[ref]['fit'] / per[two]['fit']:.2f}x; "
                  f"cpu critical path {per[ref]['cpu'] / per[two]['cpu']:.2f}x "
                  f"(means {per[ref]['cpu_mean'] / per[two]['cpu_mean']:.2f}x)")


def lockstep(configs, X, Z0, rounds, client):
    """c. The solvers driven directly (``initialize``, then ``sweep``), one sweep of each
    per round, each round after a measure of the machine's free parallelism; returns
    ``[(parallelism, {config: seconds})]``."""
    Xc = X - X.mean(axis=0)
    hyper = {**HYPER, "beta": 1.0}
    solvers, states = {}, {}
    for c in configs:
        solvers[c] = make_solver(c, 1, client)
        rng = np.random.default_rng(0)
        states[c] = (solvers[c].initialize(Xc, Z0.copy(), hyper, rng), rng)
        solvers[c].sweep(*states[c])  # untimed: placement, first statistics
    rows = []
    for r in range(rounds):
        free = available_parallelism()
        seconds = {}
        for c in configs if r % 2 == 0 else configs[::-1]:
            start = time.perf_counter()
            solvers[c].sweep(*states[c])
            seconds[c] = time.perf_counter() - start
        rows.append((free, seconds))
    for solver in solvers.values():
        if hasattr(solver, "close"):
            solver.close()
    return rows


def report_lockstep(rows, configs, free_enough=1.8):
    print(f"\nc. Solvers driven directly, sweeps_per_sync = 1, hyperparameters fixed: one "
          f"sweep of each per round ({len(rows)} rounds), seconds per sweep")
    print("  " + f"{'free':>6}" + "".join(f"{name_of(c):>20}" for c in configs)
          + "   2 shards over 1 shard / serial")
    two = [c for c in configs if c[1] == 2]
    for free, sec in rows:
        ratios = "  ".join(f"{name_of(c).split('(')[1][:-1]}: "
                           f"{sec[('threads', 1)] / sec[c]:.2f} / {sec[('serial', 1)] / sec[c]:.2f}"
                           for c in two)
        print("  " + f"{free:6.2f}" + "".join(f"{sec[c]:20.3f}" for c in configs)
              + "   " + ratios)
    for label, chosen in (("all rounds", rows),
                          (f"rounds with free >= {free_enough}",
                           [r for r in rows if r[0] >= free_enough])):
        if not chosen:
            print(f"  {label}: none")
            continue
        med = {c: np.median([sec[c] for _, sec in chosen]) for c in configs}
        parts = [f"{name_of(c)} {med[('threads', 1)] / med[c]:.2f}x over 1 shard, "
                 f"{med[('serial', 1)] / med[c]:.2f}x over serial" for c in two]
        print(f"  {label} ({len(chosen)}), medians: " + "; ".join(parts))
    print("  (free: the 2-thread speed-up of the GIL-free loop just before the round)")


# -- the binary data set ------------------------------------------------------------------
def binary_problem(n_samples, n_dims, n_features=20, seed=0):
    """``(X, Z, A)``: binary rows of the Flickr data's shape, ``Z`` as in
    ``scaling_data``, binary ``A`` with ``P(a_kd = 1) = 0.05``, each entry on if any of
    its features turns it on (noisy-or with leak 0.01 and no misses)."""
    rng = np.random.default_rng(seed)
    Z = rng.random((n_samples, n_features)) < np.linspace(0.5, 0.05, n_features)
    A = rng.random((n_features, n_dims)) < 0.05
    X = (Z.astype(np.int32) @ A.astype(np.int32)) > 0
    X = (X | (rng.random((n_samples, n_dims)) < 0.01)).astype(float)
    return X, Z.astype(np.int8), A.astype(float)


def binary_data(n_samples, n_dims, n_features=20, seed=0):
    """The ``X`` of :func:`binary_problem`."""
    return binary_problem(n_samples, n_dims, n_features, seed)[0]


def binary_section(quick, use_dask, n_sweeps=None):
    """d. ``ParallelNoisyOrIBP`` (likelihood="noisy_or") at the Flickr data's size: seconds
    per sweep with 1 and 2 shards (threads) and 2 shards on a 2-worker Dask
    ``LocalCluster``, against the serial ``MetropolisIBP``; the solvers are driven
    directly from the true ``Z`` and ``A`` (``epsilon = 0.99``, ``lambda = 0.05``,
    ``p_a = 0.05``, ``alpha = 2``), each sweep followed by the parameters' step as in the
    estimator (untimed); one untimed sweep first (placement, compilation)."""
    from sklearn_ibp.likelihoods import LeakyNoisyOr
    from sklearn_ibp.solvers import MetropolisIBP

    N = 20_000 if quick else FLICKR_N
    n_sweeps = n_sweeps or (2 if quick else 3)
    print(f"\nd. Binary data, N = {N:,}, D = {FLICKR_D:,} (the Flickr data's size"
          f"{'' if N == FLICKR_N else '; --quick: 20,000 rows'}): ParallelNoisyOrIBP, "
          f"{n_sweeps} timed sweeps per configuration, seconds per sweep")
    start = time.perf_counter()
    X, Z, A = binary_problem(N, FLICKR_D)
    print(f"  data generated in {time.perf_counter() - start:.1f} s; "
          f"{X.mean():.3f} of the entries are ones", flush=True)
    lik = LeakyNoisyOr()
    params = {"epsilon": 0.99, "lambda": 0.05, "p_a": 0.05}
    configs = [("serial", 1), ("threads", 1), ("threads", 2)]
    client = cluster = None
    if use_dask:
        from distributed import Client, LocalCluster

        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                               host="127.0.0.1", dashboard_address=None,
                               silence_logs=logging.ERROR)
        client = Client(cluster)
        configs.append(("dask", 2))
    machine_line("machine before")
    print(f"  {'configuration':<22}{'sweep':>9}{'(min)':>8}{'compute':>9}{'root':>7}"
          f"{'init':>8}{'K':>5}")
    results = {}
    with threadpool_limits(limits=1, user_api="blas"):
        for c in configs:
            kind, shards = c
            solver = MetropolisIBP() if kind == "serial" else ParallelNoisyOrIBP(
                n_shards=shards, backend=kind, client=client if kind == "dask" else None)
            rng = np.random.default_rng(1)
            t0 = time.perf_counter()
            state = solver.initialize(X, None, Z, A, 2.0, params, lik, rng)
            init = time.perf_counter() - t0
            seconds = []
            for i in range(n_sweeps + 1):
                t0 = time.perf_counter()
                solver.sweep(state, lik, rng)
                if i:
                    seconds.append(time.perf_counter() - t0)
                if hasattr(solver, "sample_parameters"):
                    solver.sample_parameters(state, lik, rng)
                else:
                    state.params = lik.sample_parameters(
                        state.X, state.observed, state.active_Z, state.active_A,
                        state.params, rng)
            compute = root = ""
            if hasattr(solver, "timings_"):
                compute = f"{np.median(solver.timings_['compute'][1:]):9.2f}"
                root = f"{np.median(solver.timings_['root'][1:]):7.2f}"
                solver.close()
            results[c] = np.median(seconds)
            label = "serial MetropolisIBP" if kind == "serial" else name_of(c)
            print(f"  {label:<22}{np.median(seconds):9.2f}{np.min(seconds):8.2f}"
                  f"{compute:>9}{root:>7}{init:8.2f}{state.n_features:5d}", flush=True)
            del state
    machine_line("machine after")
    for c in configs:
        if c[1] == 2:
            print(f"  {name_of(c)} over 1 shard: {results[('threads', 1)] / results[c]:.2f}x; "
                  f"over serial: {results[('serial', 1)] / results[c]:.2f}x")
    print("  (sweep: the solver's sweep, one synchronisation round with the messages and the "
          "root; compute: the slowest shard's own seconds; root: summing and compaction)")
    if client is not None:
        client.close()
        cluster.close()


# -- main ---------------------------------------------------------------------------------
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N = 10,000, fewer rounds")
    parser.add_argument("--no-dask", action="store_true", help="threads only")
    parser.add_argument("--binary-only", action="store_true",
                        help="only section d (ParallelNoisyOrIBP on binary data)")
    parser.add_argument("--parts", default="abcd",
                        help="the parts to run, e.g. 'b' (default: abcd)")
    args = parser.parse_args(argv)
    parts = set(args.parts.lower())
    if not parts or not parts <= set("abcd"):
        parser.error(f"--parts takes letters among a, b, c, d; got {args.parts!r}")
    if args.binary_only or parts == {"d"}:
        binary_section(args.quick, not args.no_dask)
        return
    t0 = time.perf_counter()
    versions = ""
    if not args.no_dask:
        import dask
        import distributed

        versions = f"dask {dask.__version__}, distributed {distributed.__version__}"
    print_environment("bench_parallel.py", "--quick" if args.quick else "(full)", 1, versions)
    print(f"sklearn_ibp imported from {os.path.dirname(sklearn_ibp.__file__)}")
    if args.quick:
        N, burn = 10_000, 5
        plan = {1: ({"serial": 5, "parallel": 5}, 2), 5: ({"serial": 5, "parallel": 4}, 1)}
        hyper_plan = ({"serial": 5, "parallel": 5}, 2)
        lock_rounds = 8
    else:
        N, burn = PIANO_N, 10
        plan = {1: ({"serial": 6, "parallel": 6}, 3), 5: ({"serial": 6, "parallel": 3}, 2)}
        hyper_plan = ({"serial": 6, "parallel": 6}, 2)
        lock_rounds = 16
    X, Z_true = scaling_data(N, n_dims=PIANO_D, n_max=PIANO_N)
    print(f"\nGaussian data, N = {N:,}, D = {PIANO_D} (the piano data's size"
          f"{'' if N == PIANO_N else '; --quick: the first rows'}): 20 true features, "
          "A ~ N(0, 1), noise 0.5; alpha = 2, sigma_x = 0.5, sigma_a = 1")
    configs = [("serial", 1), ("threads", 1), ("threads", 2)]
    client = cluster = None
    with threadpool_limits(limits=1, user_api="blas"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # The starting state: a few serial sweeps from the true Z on the centred data
        # (the estimator centres X the same way).
        rng = np.random.default_rng(0)
        burner = AcceleratedIBP()
        state = burner.initialize(X - X.mean(axis=0), Z_true.astype(np.int8),
                                  {**HYPER, "beta": 1.0}, rng)
        for _ in range(burn):
            burner.sweep(state, rng)
        Z0 = state.active_Z.copy()
        print(f"starting Z: {burn} serial sweeps from the true Z, K = {Z0.shape[1]}")
        # Warm-up: compile (or load from numba's cache) every kernel.
        small = dict(model_kwargs={**HYPER, "sample_hyperparameters": True})
        for c in configs:
            timed_fit(c, 1, X[:2000], Z0[:2000], 3, 0, None, **small)
        if not args.no_dask:
            from distributed import Client, LocalCluster

            start = time.perf_counter()
            cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                   host="127.0.0.1", dashboard_address=None,
                                   silence_logs=logging.ERROR)
            client = Client(cluster)
            # The workers load the kernels from numba's cache on their first task.
            timed_fit(("dask", 2), 1, X[:2000], Z0[:2000], 3, 0, client, **small)
            configs.append(("dask", 2))
            print(f"Dask LocalCluster: 2 worker processes x 1 thread on 127.0.0.1 "
                  f"(started and warmed in {time.perf_counter() - start:.1f} s)")
        else:
            print("Dask: skipped (--no-dask)")
        parallelism = [machine_line("machine before")]
        fixed = {**HYPER, "sample_hyperparameters": False}
        for spp, (n_iter, rounds) in plan.items() if "a" in parts else ():
            label = f"sweeps_per_sync={spp}"
            results = measure(configs, spp, X, Z0, n_iter, rounds, client, fixed, label)
            parallelism.append(machine_line(f"machine after {label}"))
            report(results, spp, f"a. sweeps_per_sync = {spp}, hyperparameters fixed "
                   f"(serial: {n_iter['serial']} iterations per fit, parallel: "
                   f"{n_iter['parallel']}; {rounds} round(s))")
        if "b" in parts:
            n_iter, rounds = hyper_plan
            hyper_configs = [c for c in configs if c != ("threads", 1)]
            results = measure(hyper_configs, 1, X, Z0, n_iter, rounds, client,
                              {**HYPER, "sample_hyperparameters": True}, "hyperparameters")
            parallelism.append(machine_line("machine after hyperparameters"))
            report(results, 1, "b. sweeps_per_sync = 1, sample_hyperparameters=True (the "
                   f"default; drawn at the root between rounds); {rounds} round(s)")
        if "c" in parts:
            rows = lockstep(configs, X, Z0, lock_rounds, client)
            report_lockstep(rows, configs)
        if client is not None:
            client.close()
            cluster.close()
    print("\n2-thread speed-up of the GIL-free loop over the run: "
          + ", ".join(f"{p:.2f}" for p in parallelism)
          + " (the ceiling for 2 shards on this machine at the time)")
    if "d" in parts:
        binary_section(args.quick, not args.no_dask)
    print(f"\ntotal wall time {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
