"""Seconds per sweep of the IBP solvers, side by side with a plain-NumPy baseline.

Run from the repository root::

    python benchmarks/bench_solvers.py            # full run (about a minute)
    python benchmarks/bench_solvers.py --quick    # short run (well under a minute)

Two experiments, every timing in the same process on the same data:

a. Block images (N = 1000, D = 36, noise 0.5, centred): each solver (``accelerated``,
   ``collapsed``, ``uncollapsed``, ``semi_collapsed`` and the NumPy baseline of the
   accelerated sampler, :mod:`numpy_accelerated`) starts from the same fixed ``Z`` with
   ``alpha = 1, beta = 1, sigma_x = 0.5, sigma_a = 1``. Two starting states: the true four
   block features plus an all-ones column (K = 5), and the ``Z`` reached by 50 accelerated
   sweeps from a single all-ones column (a state of the chain, K printed).
b. Scaling at D = 161 with K = 20 features (a fixed ``Z`` whose feature probabilities run
   from 0.5 down to 0.05, ``A ~ N(0, 1)``, noise 0.5, the same ``A`` for every N): the
   accelerated sampler and the NumPy baseline at N = 1000, 3000, 10000, the log-log slope of
   time against N, and every solver at N = 1000.

Each solver first runs one untimed warm-up sweep (numba compiles or loads its cache), then
restarts from the same ``Z``. Solvers are timed in interleaved rounds (one sweep of each
solver per round) so that a change of load on a shared machine hits all of them alike; the
figure is the median over the timed sweeps. Ratios are the meaningful output: absolute times
move with the machine. ``OPENBLAS_CORETYPE`` and the thread settings are left as they are in
the environment and printed in the header. BLAS is limited to one thread while timing
(``--blas-threads``, through threadpoolctl; 0 leaves it as configured): the numba kernels are
single-threaded, the matrices are small, and on a loaded two-core machine waking a second
OpenBLAS thread costs milliseconds, which swamped the uncollapsed samplers' sweeps.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
import time

import numba
import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from numpy_accelerated import NumpyAcceleratedGibbs  # noqa: E402

from sklearn_ibp.datasets import make_block_images  # noqa: E402
from sklearn_ibp.solvers import (  # noqa: E402
    AcceleratedIBP,
    CollapsedIBP,
    SemiCollapsedIBP,
    UncollapsedIBP,
)

BLOCK_HYPER = dict(alpha=1.0, beta=1.0, sigma_x=0.5, sigma_a=1.0)
SCALING_HYPER = dict(alpha=2.0, beta=1.0, sigma_x=0.5, sigma_a=1.0)

# Targets of the issue.
TARGET_SECONDS_BLOCKS = 0.02
TARGET_VS_COLLAPSED = 50.0
TARGET_VS_NUMPY = 20.0
TARGET_SLOPE = 1.15
TARGET_SECONDS_10K = 1.0


def all_solvers():
    return {
        "accelerated": AcceleratedIBP(),
        "collapsed": CollapsedIBP(),
        "uncollapsed": UncollapsedIBP(),
        "semi_collapsed": SemiCollapsedIBP(),
        "numpy_baseline": NumpyAcceleratedGibbs(),
    }


# -- environment ----------------------------------------------------------------------------
def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _commit():
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=here, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
            capture_output=True, text=True,
        ).stdout.strip()
        return rev + (" (+ uncommitted changes)" if dirty else "")
    except OSError:
        return "unknown"


def print_environment(script, mode, blas_threads, versions=""):
    """The header every benchmark prints: when, which commit, the machine, its load, the
    library versions (``versions`` adds to NumPy and numba) and the thread settings."""
    load = os.getloadavg() if hasattr(os, "getloadavg") else ("?",)
    threads = {k: os.environ[k] for k in (
        "OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
        "NUMBA_NUM_THREADS",
    ) if k in os.environ}
    print(f"{script} {mode}  {datetime.datetime.now().isoformat(timespec='seconds')}")
    print(f"commit {_commit()}")
    print(f"CPU {_cpu_model()}, {os.cpu_count()} cores, load average "
          + " ".join(f"{x:.2f}" for x in load))
    print(f"Python {platform.python_version()}, NumPy {np.__version__}, numba {numba.__version__}"
          + (f", {versions}" if versions else ""))
    print(f"environment: {threads if threads else 'no OPENBLAS_*/OMP_*/MKL_* settings'}")
    blas = ", ".join(f"{d['internal_api']} {d.get('version')} {d.get('architecture')} "
                     f"{d['num_threads']} threads" for d in threadpool_info())
    limit = f"limited to {blas_threads} thread(s) while timing" if blas_threads else "not limited"
    print(f"BLAS: {blas or 'none found'}; {limit}")


def print_header(quick, blas_threads):
    print_environment("bench_solvers.py", "--quick" if quick else "(full)", blas_threads)


# -- timing ---------------------------------------------------------------------------------
def time_solvers(solvers, X, Z0, hyper, rounds, seed=0):
    """Interleaved timing of ``sweep`` from the same starting ``Z``.

    ``rounds`` maps a solver name to its number of timed sweeps; round ``r`` runs one sweep of
    every solver that still has sweeps left. Returns per-solver dicts of the warm-up time, the
    timed sweep times and the K after each timed sweep.
    """
    out = {}
    states, rngs = {}, {}
    for name, solver in solvers.items():
        rng = np.random.default_rng(seed)
        t0 = time.perf_counter()
        state = solver.initialize(X, Z0.copy(), hyper, rng)
        solver.sweep(state, rng)
        warm = time.perf_counter() - t0
        rngs[name] = np.random.default_rng(seed + 1)
        states[name] = solver.initialize(X, Z0.copy(), hyper, rngs[name])
        out[name] = dict(warm=warm, times=[], ks=[])
    for r in range(max(rounds.values())):
        for name, solver in solvers.items():
            if r >= rounds[name]:
                continue
            t0 = time.perf_counter()
            solver.sweep(states[name], rngs[name])
            out[name]["times"].append(time.perf_counter() - t0)
            out[name]["ks"].append(states[name].n_features)
    for res in out.values():
        t = np.array(res["times"])
        res.update(median=float(np.median(t)), min=float(t.min()), n=t.size,
                   kmin=min(res["ks"]), kmax=max(res["ks"]))
    return out


def _k_range(res):
    return f"{res['kmin']}" if res["kmin"] == res["kmax"] else f"{res['kmin']}-{res['kmax']}"


def _mark(ok):
    return "meets" if ok else "MISSES"


def print_solver_table(results, reference="accelerated"):
    ref = results[reference]["median"]
    print(f"  {'solver':<16}{'median s/sweep':>15}{'min s/sweep':>13}{'sweeps':>8}"
          f"{'K during run':>14}{'warm-up s':>11}{'x accelerated':>15}")
    for name, res in results.items():
        print(f"  {name:<16}{res['median']:>15.5f}{res['min']:>13.5f}{res['n']:>8d}"
              f"{_k_range(res):>14}{res['warm']:>11.3f}{res['median'] / ref:>15.1f}")


# -- a. block images ------------------------------------------------------------------------
def block_images(quick):
    X, Z_true, _ = make_block_images(n_samples=1000, noise=0.5, random_state=0)
    X = X - X.mean(axis=0)
    N = X.shape[0]
    Z_a = np.hstack([Z_true, np.ones((N, 1), dtype=np.int8)])
    # A state of the chain: 50 accelerated sweeps from one all-ones feature.
    solver, rng = AcceleratedIBP(), np.random.default_rng(0)
    state = solver.initialize(X, np.ones((N, 1), dtype=np.int8), BLOCK_HYPER, rng)
    for _ in range(50):
        solver.sweep(state, rng)
    Z_b = state.active_Z.copy()

    n = 8 if quick else 30
    rounds = {"accelerated": 4 * n, "collapsed": n, "uncollapsed": n, "semi_collapsed": n,
              "numpy_baseline": n}
    print("\na. Block images: N = 1000, D = 36, noise 0.5, centred; "
          "alpha = 1, beta = 1, sigma_x = 0.5, sigma_a = 1")
    summary = {}
    starts = [("true 4 features + all-ones column", Z_a),
              ("Z after 50 accelerated sweeps from one all-ones column", Z_b)]
    for label, Z0 in starts:
        print(f"\n  start: {label} (K = {Z0.shape[1]})")
        res = time_solvers(all_solvers(), X, Z0, BLOCK_HYPER, rounds)
        print_solver_table(res)
        acc = res["accelerated"]["median"]
        ratios = {name: res[name]["median"] / acc for name in res if name != "accelerated"}
        print("  ratios (median s/sweep of X / accelerated):")
        for name, target in (("collapsed", TARGET_VS_COLLAPSED),
                             ("numpy_baseline", TARGET_VS_NUMPY),
                             ("uncollapsed", None), ("semi_collapsed", None)):
            extra = f"   target >= {target:.0f}x: {_mark(ratios[name] >= target)}" if target else ""
            print(f"    {name + ' / accelerated':<30}{ratios[name]:>8.1f}x{extra}")
        print(f"  accelerated {acc:.4f} s/sweep   target <= {TARGET_SECONDS_BLOCKS} s: "
              f"{_mark(acc <= TARGET_SECONDS_BLOCKS)}")
        summary[label] = (Z0.shape[1], res, ratios)
    return summary


# -- b. scaling at D = 161 ------------------------------------------------------------------
def scaling_data(n_samples, n_features=20, n_dims=161, sigma_x=0.5, sigma_a=1.0, seed=0,
                 n_max=10000):
    """The first ``n_samples`` rows of one fixed draw: ``Z`` with feature probabilities from
    0.5 down to 0.05, ``A ~ N(0, sigma_a^2)``, noise ``sigma_x``."""
    rng = np.random.default_rng(seed)
    p = np.linspace(0.5, 0.05, n_features)
    Z = (rng.random((n_max, n_features)) < p).astype(np.int8)
    A = sigma_a * rng.standard_normal((n_features, n_dims))
    X = Z @ A + sigma_x * rng.standard_normal((n_max, n_dims))
    return X[:n_samples], Z[:n_samples]


def scaling(quick):
    sizes = (1000, 3000, 10000)
    print("\nb. Scaling at D = 161, K = 20 (fixed Z, feature probabilities 0.5 .. 0.05, "
          "A ~ N(0, 1), noise 0.5); alpha = 2, beta = 1, sigma_x = 0.5, sigma_a = 1")
    acc_rounds = 6 if quick else 25
    numpy_rounds = {1000: 3, 3000: 2, 10000: 1} if quick else {1000: 10, 3000: 6, 10000: 4}
    rows = []
    print(f"\n  {'N':>6}{'accelerated s':>15}{'sweeps':>8}{'K':>8}{'numpy s':>11}{'sweeps':>8}"
          f"{'K':>8}{'numpy / acc':>13}")
    for N in sizes:
        X, Z0 = scaling_data(N)
        res = time_solvers(
            {"accelerated": AcceleratedIBP(), "numpy_baseline": NumpyAcceleratedGibbs()},
            X, Z0, SCALING_HYPER, {"accelerated": acc_rounds, "numpy_baseline": numpy_rounds[N]},
        )
        a, b = res["accelerated"], res["numpy_baseline"]
        rows.append((N, a["median"], b["median"]))
        print(f"  {N:>6}{a['median']:>15.4f}{a['n']:>8}{_k_range(a):>8}{b['median']:>11.4f}"
              f"{b['n']:>8}{_k_range(b):>8}{b['median'] / a['median']:>12.1f}x")
    n = np.log([r[0] for r in rows])
    slope_acc = np.polyfit(n, np.log([r[1] for r in rows]), 1)[0]
    slope_np = np.polyfit(n, np.log([r[2] for r in rows]), 1)[0]
    t10k = rows[-1][1]
    print(f"  log-log slope of time vs N: accelerated {slope_acc:.3f} "
          f"(target <= {TARGET_SLOPE}: {_mark(slope_acc <= TARGET_SLOPE)}), "
          f"numpy baseline {slope_np:.3f}")
    print(f"  accelerated at N = 10000: {t10k:.4f} s/sweep "
          f"(target <= {TARGET_SECONDS_10K} s: {_mark(t10k <= TARGET_SECONDS_10K)})")

    # Every solver at N = 1000, D = 161, K = 20: how the ratios move with K and D.
    X, Z0 = scaling_data(1000)
    n_all = 3 if quick else 8
    rounds = {"accelerated": 4 * n_all, "collapsed": n_all, "uncollapsed": n_all,
              "semi_collapsed": n_all, "numpy_baseline": n_all}
    print(f"\n  every solver at N = 1000, D = 161 (start K = {Z0.shape[1]}):")
    res = time_solvers(all_solvers(), X, Z0, SCALING_HYPER, rounds)
    print_solver_table(res)
    return rows, slope_acc, slope_np, res


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer sweeps (under a minute)")
    parser.add_argument("--blas-threads", type=int, default=1,
                        help="BLAS threads while timing (default 1; 0 = as configured)")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    print_header(args.quick, args.blas_threads)
    with threadpool_limits(limits=args.blas_threads or None):
        block_images(args.quick)
        scaling(args.quick)
    print(f"\ntotal wall time {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
