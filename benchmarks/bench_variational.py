"""Held-out log-likelihood against wall-clock time: the variational solvers against the
uncollapsed and accelerated Gibbs samplers (Doshi-Velez 2009, sec. 6.5.1, Fig. 6.2).

Run from the repository root::

    python benchmarks/bench_variational.py            # N = 500, D = 500, 60 s per solver
    python benchmarks/bench_variational.py --quick    # N = 200, D = 100, 10 s per solver
    python benchmarks/bench_variational.py --ibp      # issue 24: N = 500 and 5000, D = 500
    python benchmarks/bench_variational.py --ibp --quick   # N = 200 and 1000, D = 100

``--ibp`` (issue 24's setting): ``make_ibp_linear_gaussian(alpha=3, sigma_x=0.2,
sigma_a=2, random_state=0)``, the first N rows for training and the next N / 5 (at most
200) held out (29 features in the first 500 rows), the default variational solver
against the accelerated sampler (``--budget`` CPU seconds for the sampler: 60 at
N = 500 and 300 at N = 5000 by default, 5 with ``--quick``): the variational
trajectory is its first (greedy) start at iterations 1, 2, 4, ... and then the default
fit (``n_init=5``), each point at the CPU seconds of its fit.

Data (the setting of Doshi-Velez 2009, sec. 6.5.1): ``Z`` and ``A`` from the stick-breaking
prior truncated at 20 features (``v_k ~ Beta(alpha = 5, 1)``, ``pi_k = prod_{m<=k} v_m``;
``A ~ N(0, 1)``), ``X = Z A + N(0, 0.5^2)``; N training rows and N / 5 held-out rows from
the same ``Z`` prior and ``A``. Every solver is :class:`sklearn_ibp.IBPFactorAnalysis` with
its default hyperparameter learning and ``random_state=0``, given the same wall-clock budget:

* the samplers (``"accelerated"``, ``"uncollapsed"``) run in increments of sweeps with
  ``warm_start=True``; after each increment the held-out mean log predictive density
  (``score``) of the kept sample is recorded against the seconds spent sampling (the
  scoring is not timed);
* the variational solvers (``"variational"``, ``"finite_variational"``, one restart,
  default truncation) are fitted with ``max_iter`` 1, 2, 4, ... until they converge or
  the budget runs out; each fit repeats the previous one's iterations from the same seed,
  so its held-out score is that of the trajectory at that iteration, at the CPU time
  of that fit.

Printed: each solver's seconds per iteration (sweep), its held-out score at the end of the
budget, the time to come within 1% of the final held-out score (for the variational
solvers, of the first restart's converged score: the issue's target is under 10 s), and
the ratios to the accelerated sampler. The rest of a variational solver's budget goes to
further restarts, keeping the best ELBO. BLAS is limited to one thread, and every time is
CPU seconds (``time.process_time``: single-threaded runs on a shared machine).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_solvers import print_environment  # noqa: E402

from sklearn_ibp import IBPFactorAnalysis  # noqa: E402
from sklearn_ibp.datasets import make_ibp_linear_gaussian  # noqa: E402


def variational_solvers():
    """``{name: solver class}`` of the variational solvers this checkout has, and the
    reason for any that it lacks (the benchmark runs the samplers without them)."""
    import sklearn_ibp.solvers as solvers

    found, missing = {}, {}
    for name, attr in (("variational", "VariationalIBP"),
                       ("finite_variational", "FiniteVariationalIBP")):
        cls = getattr(solvers, attr, None)
        if cls is None:
            missing[name] = f"sklearn_ibp.solvers has no {attr}"
        else:
            found[name] = cls
    return found, missing


def make_data(n_samples, n_dims, seed=0, n_features=20, alpha=5.0, noise=0.5):
    """Training and held-out rows from the truncated stick-breaking linear-Gaussian model."""
    rng = np.random.default_rng(seed)
    pi = np.cumprod(rng.beta(alpha, 1.0, size=n_features))
    A = rng.standard_normal((n_features, n_dims))
    n_test = n_samples // 5
    Z = (rng.random((n_samples + n_test, n_features)) < pi).astype(float)
    X = Z @ A + noise * rng.standard_normal((n_samples + n_test, n_dims))
    return X[:n_samples], X[n_samples:], int(np.count_nonzero(Z[:n_samples].any(axis=0)))


def run_sampler(solver, X, X_test, budget, step):
    """``(seconds, held-out score, K)`` after increments of sweeps that double from
    ``step`` (scored after each; the scoring is not timed)."""
    model = IBPFactorAnalysis(solver=solver, n_iter=step, burn_in=0, warm_start=True,
                              random_state=0)
    spent, points, sweeps = 0.0, [], 0
    while spent < budget:
        # The increment: double the sweeps so far, or what the budget leaves at the
        # current speed, whichever is smaller.
        per = spent / sweeps if sweeps else 0.0
        n_iter = step if not sweeps else max(1, min(sweeps, int((budget - spent) / per) + 1))
        model.set_params(n_iter=n_iter)
        start = time.process_time()
        model.fit(X)
        spent += time.process_time() - start
        sweeps += n_iter
        points.append((spent, model.score(X_test), model.n_components_))
    return points, spent / sweeps


def run_variational(solver_class, X, X_test, budget):
    """The first restart's trajectory, ``(seconds, held-out score, K)`` at iterations 1,
    2, 4, ... until it converges; then further restarts (``random_state`` 1, 2, ...)
    until the budget is spent, each point the held-out score of the best ELBO so far
    against the total seconds. Returns ``(points, s/iteration, converged, restarts)``."""
    points, max_iter = [], 1
    while True:
        solver = solver_class(n_init=1, max_iter=max_iter)
        start = time.process_time()
        model = IBPFactorAnalysis(solver=solver, random_state=0).fit(X)
        seconds = time.process_time() - start
        points.append((seconds, model.score(X_test), model.n_components_))
        if model.converged_ or seconds > budget:
            break
        max_iter *= 2
    per_iteration = seconds / model.n_iter_
    converged = model.converged_
    spent, best, restarts = seconds, model, 1
    best_score = points[-1][1]
    while spent < budget:
        solver = solver_class(n_init=1)
        start = time.process_time()
        candidate = IBPFactorAnalysis(solver=solver, random_state=restarts).fit(X)
        spent += time.process_time() - start
        restarts += 1
        if candidate.elbo_ > best.elbo_:
            # Scored only when the best changes (the scoring is not timed, but with
            # more than 12 features it costs more than a restart).
            best, best_score = candidate, candidate.score(X_test)
        points.append((spent, best_score, best.n_components_))
    return points, per_iteration, converged, restarts


def run_default_variational(X, X_test, budget):
    """Issue 24's comparison: the first start of ``solver="variational"`` (greedy) at
    iterations 1, 2, 4, ... to convergence, then the default fit (``n_init=5``, greedy
    and random starts alternating), each ``(CPU seconds of the fit, held-out score, K,
    sigma_x)``."""
    from sklearn_ibp.solvers import VariationalIBP

    points, max_iter = [], 1
    while True:
        start = time.process_time()
        model = IBPFactorAnalysis(solver=VariationalIBP(n_init=1, max_iter=max_iter),
                                  random_state=0).fit(X)
        seconds = time.process_time() - start
        points.append((seconds, model.score(X_test), model.n_components_, model.sigma_x_))
        if model.converged_ or seconds > budget:
            break
        max_iter *= 2
    start = time.process_time()
    model = IBPFactorAnalysis(solver="variational", random_state=0).fit(X)
    seconds = time.process_time() - start
    return points, (seconds, model.score(X_test), model.n_components_, model.sigma_x_)


def run_ibp(args):
    """``--ibp``: the default variational solver against the accelerated sampler on
    draws from the IBP linear-Gaussian model (issue 24)."""
    sizes, D = ((200, 1000), 100) if args.quick else ((500, 5000), 500)
    if args.sizes:
        sizes = tuple(int(n) for n in args.sizes.split(","))
    print_environment("bench_variational.py --ibp", "quick" if args.quick else "full", 1)
    with threadpool_limits(limits=1, user_api="blas"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        X, _, _ = make_ibp_linear_gaussian(n_samples=30, n_dims=10, random_state=0)
        IBPFactorAnalysis(n_iter=2, random_state=0).fit(X)
        IBPFactorAnalysis(solver="variational", random_state=0).fit(X)
        for N in sizes:
            budget = args.budget or (5.0 if args.quick
                                     else (60.0 if N <= 500 else 300.0))
            # N / 5 held-out rows, at most 200: with more than 12 features a row's score
            # sums 4096 patterns, and 1000 rows per point would dwarf the fits.
            n_test = min(N // 5, 200)
            X, Z, _ = make_ibp_linear_gaussian(n_samples=N + n_test, n_dims=D, alpha=3.0,
                                               sigma_x=0.2, sigma_a=2.0, random_state=0)
            K_true = int(np.count_nonzero(Z[:N].any(axis=0)))
            X, X_test = X[:N], X[N:]
            print(f"\nN = {N}, D = {D}, {X_test.shape[0]} held-out rows, {K_true} true "
                  f"features; accelerated sampler {budget:.0f} CPU s", flush=True)
            var_points, default = run_default_variational(X, X_test, budget)
            acc_points, per = run_sampler("accelerated", X, X_test, budget, 5)
            print("  variational, first start: "
                  + ", ".join(f"{s:.2f} s: {v:.1f} ({k}, sx {x:.3f})"
                              for s, v, k, x in var_points))
            s, v, k, x = default
            print(f"  variational, default fit (n_init=5): {s:.2f} s: {v:.1f} ({k}, "
                  f"sx {x:.3f})")
            shown = [acc_points[i] for i in
                     np.unique(np.linspace(0, len(acc_points) - 1, 12).astype(int))]
            print(f"  accelerated ({per:.3f} s/sweep): "
                  + ", ".join(f"{s:.2f} s: {v:.1f} ({k})" for s, v, k in shown))
            first = var_points[-1][0]
            at = [p for p in acc_points if p[0] <= first]
            at_first = at[-1][1] if at else np.nan
            at_default = [p for p in acc_points if p[0] <= default[0]]
            at_default = at_default[-1][1] if at_default else np.nan
            print(f"  held-out: variational first start {var_points[-1][1]:.1f} at "
                  f"{first:.2f} s (accelerated by then: {at_first:.1f}); default fit "
                  f"{default[1]:.1f} at {default[0]:.2f} s (accelerated by then: "
                  f"{at_default:.1f}); accelerated at {acc_points[-1][0]:.0f} s: "
                  f"{acc_points[-1][1]:.1f}", flush=True)


def time_to_within(points, fraction=0.01):
    """Seconds until the held-out score is within ``fraction`` of its last value."""
    final = points[-1][1]
    for seconds, score, _ in points:
        if abs(score - final) <= fraction * abs(final):
            return seconds
    return np.nan


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--budget", type=float, default=None, help="seconds per solver")
    parser.add_argument("--ibp", action="store_true",
                        help="issue 24: draws from the IBP model, N = 500 and 5000")
    parser.add_argument("--sizes", default=None,
                        help="--ibp: comma-separated N (default 500,5000; quick 200,1000)")
    args = parser.parse_args()
    if args.ibp:
        return run_ibp(args)
    N, D, budget, step = (200, 100, 10.0, 5) if args.quick else (500, 500, 60.0, 5)
    budget = args.budget or budget
    print_environment("bench_variational.py", "quick" if args.quick else "full", 1)
    X, X_test, K_true = make_data(N, D)
    print(f"\nN = {N}, D = {D}, {X_test.shape[0]} held-out rows, {K_true} true features "
          f"used; {budget:.0f} s per solver\n")
    results = {}
    with threadpool_limits(limits=1, user_api="blas"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # Warm the numba caches so that no solver's budget pays for a compilation (the
        # variational kernels too: their first fit would otherwise report the compile
        # time as iteration time).
        found, missing = variational_solvers()
        IBPFactorAnalysis(n_iter=2, random_state=0).fit(X[:20, :10])
        IBPFactorAnalysis(solver="uncollapsed", n_iter=2, random_state=0).fit(X[:20, :10])
        for cls in found.values():
            IBPFactorAnalysis(solver=cls(max_features=5, n_init=1, max_iter=2),
                              random_state=0).fit(X[:20, :10])
        for name in ("accelerated", "uncollapsed"):
            points, per = run_sampler(name, X, X_test, budget, step)
            results[name] = (points, per, None, None)
            print(f"  ... {name} done", flush=True)
        for name, cls in found.items():
            results[name] = run_variational(cls, X, X_test, budget)
            print(f"  ... {name} done", flush=True)
    ref_per = results["accelerated"][1]
    ref_score = results["accelerated"][0][-1][1]
    print(f"\n  {'solver':<20} {'s/iter':>9} {'x acc.':>7} {'iters':>6} {'K':>4} "
          f"{'held-out':>9} {'- acc.':>7} {'t to 1% of final':>17}")
    for name, (points, per, converged, restarts) in results.items():
        seconds, score, K = points[-1]
        # For the variational solvers, the first restart's trajectory (its points come
        # first and end at the convergence); for the samplers, the whole run.
        trajectory = points if restarts is None else points[: len(points) - restarts + 1]
        reach = time_to_within(trajectory)
        note = "" if converged is None else (
            f"  first run {'converged' if converged else 'not converged'}, "
            f"{restarts} restarts")
        print(f"  {name:<20} {per:9.4f} {per / ref_per:7.2f} {seconds / per:6.0f} {K:4d} "
              f"{score:9.3f} {score - ref_score:+7.3f} {reach:14.2f} s{note}")
    for name, reason in missing.items():
        print(f"  {name:<20} not available ({reason})")
    print("\nheld-out score against time (seconds: score, K; at most 12 points each):")
    for name, (points, *_) in results.items():
        shown = [points[i] for i in np.unique(np.linspace(0, len(points) - 1, 12).astype(int))]
        print(f"  {name}: " + ", ".join(f"{s:.2f}: {v:.2f} ({k})" for s, v, k in shown))


if __name__ == "__main__":
    main()
