"""Effective samples of K per second for every IBP solver, the accelerated sampler as the
reference.

Run from the repository root::

    python benchmarks/bench_ibp_solvers_ess.py            # N = 1000, 1000 sweeps
    python benchmarks/bench_ibp_solvers_ess.py --quick    # N = 300, 200 sweeps
    python benchmarks/bench_ibp_solvers_ess.py --n-samples 1000 --sweeps 2000 --seed 3

Data: block images (:func:`sklearn_ibp.datasets.make_block_images`, noise 0.5, D = 36,
not centred: ``X = Z A + noise`` is the linear-Gaussian model every solver assumes).
Hyperparameters are fixed at ``alpha = 1, sigma_x = 0.5, sigma_a = 1`` for every solver
(``beta = 1`` for the conjugate ones); nothing else is learned but ``Z`` (and ``A`` for the
solvers that keep it).

Solvers: every entry of :data:`sklearn_ibp.solvers.SOLVERS` (the conjugate linear-Gaussian
samplers, driven through ``initialize(X, Z, hyper, rng)`` / ``sweep(state, rng)``) and of
:data:`sklearn_ibp.solvers.EXPLICIT_SOLVERS` that serves the ``"gaussian"`` likelihood
(driven through ``initialize(X, observed, Z, A, alpha, params, likelihood, rng)`` /
``sweep(state, likelihood, rng)`` with :class:`~sklearn_ibp.likelihoods.LinearGaussianFeatures`).
The two dictionaries are read at run time, so solvers registered later are benchmarked
without a change here; a solver that fails is reported on its row, the others go on. A
solver whose ``exact`` attribute is False (an approximate sampler, or an optimiser such as
``"map_climb"``) is run and marked "not exact": its effective samples are not draws from the
posterior.

Every chain starts from the same draw of ``Z`` from the IBP prior (``alpha = 1``; the explicit
solvers draw ``A`` given it) and runs ``--sweeps`` sweeps, or fewer if ``--max-seconds``
runs out first; the first ``--burn-in`` fraction of the sweeps done is discarded. K is the
number of non-empty columns after each sweep. The effective sample size of the kept K trace
is :func:`sklearn_ibp.diagnostics.effective_sample_size` (rank-normalised split chain,
Geyer's initial monotone sequence), the integrated autocorrelation time (IAT) is kept
sweeps over ESS, and the figure of merit is ESS over the wall seconds of the kept sweeps.
The "x accelerated" column divides it by the accelerated sampler's, measured in the same
run on the same data. A K trace that never moves has no ESS (printed "const"): that solver
did not mix at all in the kept sweeps. IATs estimated from chains not much longer than
the IAT itself are too short (the ESS is then overestimated), so read slow solvers' figures
as upper bounds.

At N = 1000 the posterior of K is sharp: once a chain has settled, K may not change at
all within the kept sweeps, and K then has no ESS ("const", 0 per second). The last two
columns are therefore the ESS per second of the number of ones in ``Z`` (the total of the
feature counts ``sum_k m_k``), a scalar every chain moves, with its ratio to the
accelerated sampler's.

BLAS is limited to one thread (``--blas-threads``; 0 leaves it as configured): on a loaded
two-core machine, waking a second OpenBLAS thread for the small draws of ``A`` costs
milliseconds per sweep.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import traceback

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_solvers import print_environment  # noqa: E402

from sklearn_ibp.datasets import make_block_images  # noqa: E402
from sklearn_ibp.diagnostics import effective_sample_size  # noqa: E402
from sklearn_ibp.likelihoods import LinearGaussianFeatures  # noqa: E402
from sklearn_ibp.priors.ibp import sample_ibp  # noqa: E402
from sklearn_ibp.solvers import EXPLICIT_SOLVERS, SOLVERS  # noqa: E402

ALPHA, SIGMA_X, SIGMA_A = 1.0, 0.5, 1.0
REFERENCE = "accelerated"


def _n_active(Z) -> int:
    return int(np.count_nonzero(np.asarray(Z).any(axis=0)))


def run_chain(start, step, active_Z, n_sweeps, max_seconds):
    """Run ``step()`` up to ``n_sweeps`` times or until ``max_seconds`` have passed.

    Returns the traces of K and of the number of ones in ``Z`` and the wall time after
    each sweep (seconds since the start of the first sweep); ``start()``
    (initialisation, numba cache loading) is not timed, nor is reading the traces.
    """
    start()
    ks, ones, stamps = [], [], []
    elapsed = 0.0
    for _ in range(n_sweeps):
        t0 = time.perf_counter()
        step()
        elapsed += time.perf_counter() - t0
        Z = np.asarray(active_Z())
        ks.append(_n_active(Z))
        ones.append(int(np.count_nonzero(Z)))
        stamps.append(elapsed)
        if elapsed > max_seconds:
            break
    return np.asarray(ks, dtype=float), np.asarray(ones, dtype=float), np.asarray(stamps)


def conjugate_chain(cls, X, Z0, n_sweeps, max_seconds, seed):
    solver, rng = cls(), np.random.default_rng(seed)
    hyper = {"alpha": ALPHA, "beta": 1.0, "sigma_x": SIGMA_X, "sigma_a": SIGMA_A}
    box = {}

    def start():
        box["state"] = solver.initialize(X, Z0.copy(), hyper, rng)

    return run_chain(start, lambda: solver.sweep(box["state"], rng),
                     lambda: box["state"].active_Z, n_sweeps, max_seconds)


def start_features(X, Z0, seed):
    """``A ~ p(A | X, Z0)``: the explicit solvers' common starting features."""
    observed = np.ones(X.shape, dtype=np.uint8)
    params = {"sigma_x": SIGMA_X, "sigma_a": SIGMA_A}
    return LinearGaussianFeatures().sample_features(
        X, observed, Z0, np.zeros((Z0.shape[1], X.shape[1])), params,
        np.random.default_rng(seed))


def explicit_chain(cls, X, Z0, n_sweeps, max_seconds, seed):
    solver, rng = cls(), np.random.default_rng(seed)
    likelihood = LinearGaussianFeatures()
    params = {"sigma_x": SIGMA_X, "sigma_a": SIGMA_A}
    observed = np.ones(X.shape, dtype=np.uint8)
    A0 = start_features(X, Z0, seed + 1)
    box = {}

    def start():
        box["state"] = solver.initialize(X, observed, Z0.copy(), A0.copy(), ALPHA, params,
                                         likelihood, rng)

    return run_chain(start, lambda: solver.sweep(box["state"], likelihood, rng),
                     lambda: box["state"].active_Z, n_sweeps, max_seconds)


def solver_table():
    """``name -> (kind, class)`` for every registered solver that serves the
    linear-Gaussian likelihood."""
    table = {name: ("conjugate", cls) for name, cls in SOLVERS.items()}
    for name, cls in EXPLICIT_SOLVERS.items():
        if "gaussian" not in getattr(cls, "likelihoods", ("gaussian",)):
            continue
        table[name if name not in table else f"{name} (explicit)"] = ("explicit", cls)
    return table


def measure(kind, cls, X, Z0, n_sweeps, max_seconds, burn_in, seed):
    chain = conjugate_chain if kind == "conjugate" else explicit_chain
    ks, ones, stamps = chain(cls, X, Z0, n_sweeps, max_seconds, seed)
    done = ks.size
    first = int(math.ceil(burn_in * done))
    kept = ks[first:]
    seconds = stamps[-1] - (stamps[first - 1] if first > 0 else 0.0)
    ess = effective_sample_size(kept) if kept.size >= 4 else math.nan
    ess_ones = effective_sample_size(ones[first:]) if kept.size >= 4 else math.nan
    return dict(sweeps=done, kept=kept.size, seconds=float(seconds),
                per_sweep=float(stamps[-1] / done), ess=float(ess),
                iat=kept.size / ess if ess > 0 else math.nan,
                ess_per_s=ess / seconds if seconds > 0 else math.nan,
                ones_per_s=ess_ones / seconds if seconds > 0 else math.nan,
                mean_k=float(kept.mean()) if kept.size else math.nan,
                k_range=(int(kept.min()), int(kept.max())) if kept.size else (0, 0))


def _fmt(x, spec):
    return "n/a" if not np.isfinite(x) else format(x, spec)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-samples", type=int, default=1000, help="N (default 1000)")
    parser.add_argument("--sweeps", type=int, default=1000, help="sweeps per solver")
    parser.add_argument("--burn-in", type=float, default=0.2,
                        help="fraction of the sweeps done discarded (default 0.2)")
    parser.add_argument("--max-seconds", type=float, default=300.0,
                        help="wall-time cap per solver; the chain stops after the sweep "
                             "that passes it (default 300)")
    parser.add_argument("--seed", type=int, default=0, help="data, start and chain seed")
    parser.add_argument("--solvers", nargs="+", default=None,
                        help="run only these (the reference is always run)")
    parser.add_argument("--quick", action="store_true",
                        help="N = 300, 200 sweeps, 20 s per solver")
    parser.add_argument("--blas-threads", type=int, default=1)
    args = parser.parse_args(argv)
    if args.quick:
        args.n_samples, args.sweeps, args.max_seconds = 300, 200, 20.0
    if not 0.0 <= args.burn_in < 1.0:
        parser.error("--burn-in must be a fraction in [0, 1)")

    with threadpool_limits(limits=args.blas_threads or None):
        print_environment("bench_ibp_solvers_ess.py", "--quick" if args.quick else "(full)",
                          args.blas_threads)
        X, _, _ = make_block_images(n_samples=args.n_samples, noise=0.5,
                                    random_state=args.seed)
        Z0 = sample_ibp(args.n_samples, ALPHA, 1.0, np.random.default_rng(args.seed + 1))
        Z0 = np.asarray(Z0, dtype=np.int8)
        print(f"\nBlock images: N = {args.n_samples}, D = {X.shape[1]}, noise 0.5, not "
              f"centred; fixed alpha = {ALPHA}, sigma_x = {SIGMA_X}, sigma_a = {SIGMA_A}; "
              f"start: one prior draw of Z (K = {_n_active(Z0)}); up to {args.sweeps} "
              f"sweeps or {args.max_seconds:g} s per solver, first {args.burn_in:.0%} "
              "discarded")
        table = solver_table()
        if args.solvers:
            table = {n: v for n, v in table.items() if n in args.solvers or n == REFERENCE}
        results = {}
        for name, (kind, cls) in table.items():
            try:
                # Untimed warm-up: numba compiles or loads its cache.
                measure(kind, cls, X, Z0, 2, math.inf, 0.0, args.seed + 2)
                results[name] = measure(kind, cls, X, Z0, args.sweeps, args.max_seconds,
                                        args.burn_in, args.seed + 2)
            except Exception as exc:  # report and go on with the other solvers
                results[name] = dict(error=f"{type(exc).__name__}: {exc}")
                traceback.print_exc(limit=2)
            results[name]["kind"] = kind
            results[name]["exact"] = bool(getattr(cls, "exact", True))
            print(f"  ... {name} done", flush=True)

        ref = results.get(REFERENCE, {}).get("ess_per_s", math.nan)
        ref_ones = results.get(REFERENCE, {}).get("ones_per_s", math.nan)
        print(f"\n  {'solver':<22}{'kind':>10}{'sweeps':>8}{'s/sweep':>10}{'mean K':>8}"
              f"{'K range':>9}{'IAT':>9}{'ESS':>8}{'ESS/s':>10}{'x accelerated':>15}"
              f"{'|Z| ESS/s':>11}{'x acc.':>8}")
        for name, res in results.items():
            if "error" in res:
                print(f"  {name:<22}{res['kind']:>10}  failed: {res['error']}")
                continue
            mark = "" if res["exact"] else "  (not exact)"
            krange = f"{res['k_range'][0]}-{res['k_range'][1]}"
            if np.isfinite(res["ess"]):
                iat, ess = _fmt(res["iat"], "9.1f"), _fmt(res["ess"], "8.1f")
                rate, ratio = _fmt(res["ess_per_s"], "10.3f"), _fmt(res["ess_per_s"] / ref, "15.3f")
            else:
                iat, ess, rate, ratio = "const", "const", "0", "0"
            ones = _fmt(res["ones_per_s"], "11.2f")
            ones_ratio = _fmt(res["ones_per_s"] / ref_ones, "8.3f")
            print(f"  {name:<22}{res['kind']:>10}{res['sweeps']:>8d}"
                  f"{res['per_sweep']:>10.4f}{res['mean_k']:>8.2f}{krange:>9}{iat:>9}"
                  f"{ess:>8}{rate:>10}{ratio:>15}{ones:>11}{ones_ratio:>8}{mark}")
    return results


if __name__ == "__main__":
    main()
