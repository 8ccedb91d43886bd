"""Seconds per sweep of the correlated-feature-hierarchy sampler, beside a NumPy baseline.

Run from the repository root::

    python benchmarks/bench_hierarchy.py            # full run (40-70 s on 2 cores)
    python benchmarks/bench_hierarchy.py --quick    # fewer rounds, a shorter fit (~25 s)
    python benchmarks/numpy_hierarchy.py            # the DP-IBP baseline's check (~3.5 min)
    python benchmarks/numpy_noisy_or.py             # the noisy-or baseline's check (~3 min)

What is timed (Doshi-Velez 2009, chapter 7):

1. **DP-IBP, exponential-Gaussian likelihood** (the demonstration of Doshi-Velez 2009, sec. 7.2.1):
   one ``GibbsHierarchy().sweep(state, ExponentialGaussian(), rng)`` (numba: categories by
   Algorithm 8, links, own features, transfer moves, then ``A``) and one sweep of the same
   model's uncollapsed Gibbs sampler written in plain NumPy, :mod:`numpy_hierarchy` (its
   docstring lists what it leaves out), on ``make_correlated_block_images(N,
   random_state=0)`` for N in 350, 700 (as in Doshi-Velez 2009), 2800; D = 36. Both start from the
   same state: ``(C, M, A)`` after 30 sweeps of ours from one category without features,
   hyperparameters sampled during those sweeps and then held fixed at their last values
   (``alpha_C``, ``alpha_M``, ``sigma_x``, ``rate``) for both samplers.
2. **Noisy-or IBP-IBP, exponential-Gaussian likelihood** (sec. 7.2.3; the issue's
   "at least 20 times faster than a plain-NumPy noisy-or sweep"): three samplers from the
   same state, interleaved: ``GibbsHierarchy()`` (ours, default: rows, links, children,
   transfer and merge/split moves, ``A``), ``GibbsHierarchy(transfer_moves=False,
   merge_split_moves=False)`` (ours with exactly the baseline's moves) and
   :mod:`numpy_noisy_or` (the same Markov chain moves in plain NumPy; its docstring lists
   the differences), on ``make_correlated_block_images(N, overlap=True, random_state=0)``
   for N in 350, 700 (as in Doshi-Velez 2009), 2800 (``--quick``: 350 and 700). The start is the
   state after the estimator's staged start (10 sweeps of ours each of the DP-IBP, the
   IBP-IBP and the noisy-or, hyperparameters sampled), converted to the baseline's
   state; ``alpha_C``, ``alpha_M``, ``q``, ``sigma_x`` and ``rate`` are then fixed at
   their last values for all. A fourth sampler, ours on the IBP-IBP (``link="or"``,
   ``Z = [C M > 0]`` from the same ``C``, ``M``, ``A``), is interleaved with them, so that
   each model's seconds per sweep can be set against the NumPy noisy-or sweep of the
   same run, as the issue asks. Printed: median seconds per sweep, the ratios numpy /
   ours and numpy / same-moves ours, and a summary of each model (DP-IBP from item 1,
   IBP-IBP, noisy-or) against the NumPy noisy-or sweep.
3. **Quality**: ``NoisyOrHierarchy(upper="dp", link="or", likelihood="exponential",
   n_iter=300, random_state=0).fit`` on the 700 images: wall time, the best correlation of
   each true shape with a fitted feature, and ``len(model.motifs_)``.

4. **Defaults** (``--defaults``, issue 20, about 4 minutes; runs only this):
   ``NoisyOrHierarchy(upper="dp", random_state=0)`` with every other parameter at its
   default on ``make_correlated_block_images(700, random_state=s)`` for the data seeds
   s = 0-9 (the thesis's sec. 7.2.1 demonstration), with ``likelihood="auto"`` (the
   default) and ``likelihood="gaussian"``: in how many seeds every true shape is matched
   by a fitted feature with correlation above 0.9, the range of the number of features,
   the smallest correlation and the seconds per fit. Then, on 0/1 data (the images of
   ``make_correlated_block_images(500, noise=0, random_state=3)`` thresholded, 10 % of
   the pixels missed, 5 % falsely detected), the number of features and the shapes'
   best correlations for ``"auto"`` and ``"gaussian"``. The user guide
   (doc/noisy_or_hierarchy.rst, "Choosing the likelihood") quotes these figures.

Each sampler runs untimed from the starting state first (numba compiles or loads its
cache), then restarts from it. Timings are interleaved: each round runs several sweeps of
ours (of each of ours, for the noisy-or) and one of the baseline, so that a change of
load on a shared machine hits all alike; the tables give medians of
``time.perf_counter``. BLAS is limited to one thread while timing (threadpoolctl;
``--blas-threads 0`` leaves it as configured), as in the other benchmarks. After the
timed sweeps the baselines' invariants are checked
(``numpy_hierarchy.check_invariants``: ``Z = C M``, counts;
``numpy_noisy_or.check_invariants``: ``S = C M``, ``Z`` only where ``S > 0``, counts,
``pred = Z A``) and so are ours (DP-IBP: ``Z = [C M > 0]``, counts; noisy-or: ``S = C M``,
``Z`` only where ``S > 0``, counts).
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
from numpy_hierarchy import NumpyDPIBPGibbs, check_invariants  # noqa: E402
from numpy_noisy_or import NumpyNoisyOrGibbs  # noqa: E402
from numpy_noisy_or import check_invariants as check_noisy_or  # noqa: E402

from sklearn_ibp import NoisyOrHierarchy  # noqa: E402
from sklearn_ibp.datasets import make_correlated_block_images  # noqa: E402
from sklearn_ibp.likelihoods import ExponentialGaussian  # noqa: E402
from sklearn_ibp.solvers.hierarchy.hierarchy_gibbs import GibbsHierarchy  # noqa: E402

SIZES = (350, 700, 2800)
START_SWEEPS = 30
STAGE_SWEEPS = 10
FIT_N = 700

# Per N: rounds, and sweeps of ours per round (the baseline runs one sweep per round).
PLAN = {350: dict(rounds=15, ours_per_round=5), 700: dict(rounds=15, ours_per_round=5),
        2800: dict(rounds=9, ours_per_round=4)}
QUICK_PLAN = {350: dict(rounds=3, ours_per_round=3), 700: dict(rounds=3, ours_per_round=3),
              2800: dict(rounds=2, ours_per_round=2)}
# Noisy-or: per N, rounds and sweeps of each of ours per round (the baseline: one a round).
NOISY_OR_PLAN = {350: dict(rounds=9, ours_per_round=3), 700: dict(rounds=9, ours_per_round=3),
                 2800: dict(rounds=3, ours_per_round=3)}
QUICK_NOISY_OR_PLAN = {350: dict(rounds=2, ours_per_round=2),
                       700: dict(rounds=2, ours_per_round=2)}


# -- environment ----------------------------------------------------------------------------
def print_header(mode, blas_threads):
    import scipy

    print_environment("bench_hierarchy.py", mode, blas_threads, f"SciPy {scipy.__version__}")


def _load():
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


# -- states ---------------------------------------------------------------------------------
def _observed(X):
    return np.ones_like(X, dtype=np.uint8)


def starting_state(X, n_sweeps=START_SWEEPS, seed=0):
    """``(C, M, A)`` and the fixed hyperparameters after ``n_sweeps`` DP-IBP sweeps of ours
    from one category without features (hyperparameters sampled)."""
    lik = ExponentialGaussian()
    obs = _observed(X)
    rng = np.random.default_rng(seed)
    solver = GibbsHierarchy()
    state = solver.new_state(X, obs, lik, lik.initial_parameters(X, obs), upper="dp",
                             link="or", alpha_c=1.0, alpha_m=1.0, q=0.1, rng=rng)
    for _ in range(n_sweeps):
        solver.sweep(state, lik, rng)
        solver.sample_hyperparameters(state, lik, rng)
    C, M, _, A = (np.array(a) for a in state.live)
    hyper = dict(alpha_c=state.alpha_c, alpha_m=state.alpha_m,
                 sigma_x=float(state.params["sigma_x"]), rate=float(state.params["rate"]))
    return (C, M, A), hyper


def ours_from(X, start, hyper, rng):
    C, M, A = start
    lik = ExponentialGaussian()
    return GibbsHierarchy.new_state(
        X, _observed(X), lik, dict(sigma_x=hyper["sigma_x"], rate=hyper["rate"]),
        upper="dp", link="or", alpha_c=hyper["alpha_c"], alpha_m=hyper["alpha_m"], q=0.1,
        C=C, M=M, A=A, rng=rng,
    )


def check_ours(state):
    """``Z = [C M > 0]``, ``S = C M``, the counts, and one category per row (DP)."""
    C, M, Z, A = state.live
    S = C.astype(np.int64) @ M.astype(np.int64)
    assert np.array_equal(Z, (S > 0).astype(np.int8))
    assert np.array_equal(state.S[:, : state.n_features], S)
    assert np.all(C.sum(axis=1) == 1)
    assert np.array_equal(state.sizes[: state.n_categories], C.sum(axis=0))
    assert np.array_equal(state.links[: state.n_features], M.sum(axis=0))
    assert np.all(np.isfinite(A)) and np.all(A >= 0.0)


def _rms_residual(X, Z, A):
    return float(np.sqrt(np.mean((X - Z.astype(float) @ A) ** 2)))


# -- DP-IBP: ours against the baseline -------------------------------------------------------
def time_pair(X, start, hyper, plan, seed=1):
    ours, lik = GibbsHierarchy(), ExponentialGaussian()
    base = NumpyDPIBPGibbs(**hyper)
    # Untimed warm-up sweeps from the starting state, then both restart from it.
    rng = np.random.default_rng(seed)
    ours.sweep(ours_from(X, start, hyper, rng), lik, rng)
    base.sweep(base.initialize(X, *start), rng)

    rng_a, rng_b = np.random.default_rng(seed + 1), np.random.default_rng(seed + 2)
    state_a = ours_from(X, start, hyper, rng_a)
    state_b = base.initialize(X, *start)
    out = dict(ours=[], numpy=[], k_ours=[], l_ours=[], k_numpy=[], l_numpy=[], parts={},
               load=[_load()])
    for _ in range(plan["rounds"]):
        for _ in range(plan["ours_per_round"]):
            out["k_ours"].append(state_a.n_features)
            out["l_ours"].append(state_a.n_categories)
            t0 = time.perf_counter()
            ours.sweep(state_a, lik, rng_a)
            out["ours"].append(time.perf_counter() - t0)
        out["k_numpy"].append(state_b.n_features)
        out["l_numpy"].append(state_b.n_categories)
        t0 = time.perf_counter()
        base.sweep(state_b, rng_b, times=out["parts"])
        out["numpy"].append(time.perf_counter() - t0)
        out["load"].append(_load())
    check_ours(state_a)
    check_invariants(state_b)
    C, M, Z, A = state_a.live
    out["rms_ours"] = _rms_residual(X, Z, A)
    out["rms_numpy"] = _rms_residual(X, state_b.Z, state_b.A)
    # Where our sweep goes: the three calls of ``sweep`` timed apart (a few extra sweeps).
    parts = {"structure": 0.0, "transfer": 0.0, "A": 0.0}
    n_extra = 3
    for _ in range(n_extra):
        t0 = time.perf_counter()
        ours.sweep_structure(state_a, lik, rng_a)
        t1 = time.perf_counter()
        ours.transfer_features(state_a, lik, rng_a)
        t2 = time.perf_counter()
        ours.sample_features(state_a, lik, rng_a)
        t3 = time.perf_counter()
        for key, dt in zip(parts, (t1 - t0, t2 - t1, t3 - t2), strict=True):
            parts[key] += dt / n_extra
    out["ours_parts"] = parts
    return out


# -- the noisy-or IBP-IBP: ours (default and same moves) against the NumPy baseline -------
def noisy_or_start(X, seed=0):
    """``(C, M, Z, A)`` and the fixed hyperparameters after the estimator's staged start
    (``STAGE_SWEEPS`` sweeps each of DP-IBP, IBP-IBP, noisy-or, hyperparameters sampled)."""
    lik, solver = ExponentialGaussian(), GibbsHierarchy()
    obs = _observed(X)
    rng = np.random.default_rng(seed)
    state = solver.new_state(X, obs, lik, lik.initial_parameters(X, obs), upper="dp",
                             link="or", alpha_c=1.0, alpha_m=1.0, q=0.1, rng=rng)
    for upper, link in (("dp", "or"), ("ibp", "or"), ("ibp", "noisy_or")):
        solver.convert(state, upper=upper, link=link)
        for _ in range(STAGE_SWEEPS):
            solver.sweep(state, lik, rng)
            solver.sample_hyperparameters(state, lik, rng)
    start = tuple(np.array(a) for a in state.live)
    hyper = dict(alpha_c=state.alpha_c, alpha_m=state.alpha_m, q=state.q,
                 sigma_x=float(state.params["sigma_x"]), rate=float(state.params["rate"]))
    return start, hyper


def ours_noisy_from(X, start, hyper, rng, link="noisy_or"):
    """Our state from the staged start; ``link="or"`` gives the IBP-IBP (``Z = [C M > 0]``)."""
    C, M, Z, A = start
    lik = ExponentialGaussian()
    return GibbsHierarchy.new_state(
        X, _observed(X), lik, dict(sigma_x=hyper["sigma_x"], rate=hyper["rate"]),
        upper="ibp", link=link, alpha_c=hyper["alpha_c"], alpha_m=hyper["alpha_m"],
        q=hyper["q"], C=C, M=M, Z=Z if link == "noisy_or" else None, A=A, rng=rng,
    )


def check_ours_noisy(state):
    """``S = C M``, ``Z`` only where ``S > 0``, the counts, ``A`` finite and non-negative."""
    C, M, Z, A = state.live
    S = C.astype(np.int64) @ M.astype(np.int64)
    assert np.array_equal(state.S[:, : state.n_features], S) and not np.any(Z[S == 0])
    assert np.array_equal(state.sizes[: state.n_categories], C.sum(axis=0))
    assert np.array_equal(state.links[: state.n_features], M.sum(axis=0))
    assert np.all(state.sizes[: state.n_categories] > 0)
    assert np.all(state.links[: state.n_features] > 0)
    assert np.all(np.isfinite(A)) and np.all(A >= 0.0)


def time_noisy_or(X, plan, seed=1):
    """Ours with the default moves, ours with the baseline's moves (no transfer, no
    merge/split), ours on the IBP-IBP (the ``or`` link, default moves) and the NumPy
    baseline, interleaved from the same staged start."""
    lik = ExponentialGaussian()
    start, hyper = noisy_or_start(X)
    samplers = {"ours": GibbsHierarchy(),
                "same": GibbsHierarchy(transfer_moves=False, merge_split_moves=False),
                "ibp_or": GibbsHierarchy()}
    links = {"ours": "noisy_or", "same": "noisy_or", "ibp_or": "or"}
    base = NumpyNoisyOrGibbs(**hyper)
    # Untimed warm-up sweeps from the starting state, then all restart from it.
    rng = np.random.default_rng(seed)
    for key, solver in samplers.items():
        solver.sweep(ours_noisy_from(X, start, hyper, rng, links[key]), lik, rng)
    base.sweep(base.initialize(X, *start), rng)

    rngs = {key: np.random.default_rng(seed + i) for i, key in
            enumerate(("ours", "same", "numpy", "ibp_or"), start=1)}
    states = {key: ours_noisy_from(X, start, hyper, rngs[key], links[key]) for key in samplers}
    state_b = base.initialize(X, *start)
    out = {key: [] for key in ("ours", "same", "numpy", "ibp_or")}
    out.update(k={key: [] for key in out}, l={key: [] for key in out}, parts={},
               load=[_load()], hyper=hyper, L0=start[1].shape[0], K0=start[1].shape[1])
    for _ in range(plan["rounds"]):
        for key, solver in samplers.items():
            state = states[key]
            for _ in range(plan["ours_per_round"]):
                out["k"][key].append(state.n_features)
                out["l"][key].append(state.n_categories)
                t0 = time.perf_counter()
                solver.sweep(state, lik, rngs[key])
                out[key].append(time.perf_counter() - t0)
        out["k"]["numpy"].append(state_b.n_features)
        out["l"]["numpy"].append(state_b.n_categories)
        t0 = time.perf_counter()
        base.sweep(state_b, rngs["numpy"], times=out["parts"])
        out["numpy"].append(time.perf_counter() - t0)
        out["load"].append(_load())
    for key, state in states.items():
        check_ours_noisy(state)
        if links[key] == "or":
            assert np.array_equal(state.live[2], (state.S[:, : state.n_features] > 0))
    check_noisy_or(state_b)
    out["rms"] = {key: _rms_residual(X, state.live[2], state.live[3])
                  for key, state in states.items()}
    out["rms"]["numpy"] = _rms_residual(X, state_b.Z, state_b.A)
    return out


# -- quality -------------------------------------------------------------------------------
def best_correlations(true_features, fitted):
    """For each true shape, its highest correlation with a fitted feature."""
    if fitted.shape[0] == 0:
        return np.zeros(len(true_features))
    corr = np.corrcoef(np.vstack([true_features, fitted]))[: len(true_features),
                                                            len(true_features):]
    return np.nan_to_num(corr).max(axis=1)


def fit_quality(n_iter):
    X, _, A, _ = make_correlated_block_images(FIT_N, random_state=0)
    model = NoisyOrHierarchy(upper="dp", link="or", likelihood="exponential", n_iter=n_iter,
                             random_state=0)
    t0 = time.perf_counter()
    model.fit(X)
    seconds = time.perf_counter() - t0
    return dict(seconds=seconds, corr=best_correlations(A, model.components_),
                motifs=len(model.motifs_), K=model.n_components_, L=model.n_categories_,
                sigma_x=float(model.likelihood_params_["sigma_x"]))


def default_recovery(seeds=range(10)):
    """Issue 20: the sec. 7.2.1 shapes from NoisyOrHierarchy(upper="dp")'s defaults."""
    import warnings

    print("\nNoisyOrHierarchy(upper='dp', random_state=0), other parameters at their "
          "defaults, on make_correlated_block_images(700, random_state=s), s = "
          f"{min(seeds)}-{max(seeds)}:")
    for likelihood in ("auto", "gaussian"):
        found, ks, lows, secs, chosen = 0, [], [], [], set()
        for seed in seeds:
            X, _, A, _ = make_correlated_block_images(FIT_N, random_state=seed)
            model = NoisyOrHierarchy(upper="dp", likelihood=likelihood, random_state=0)
            t0 = time.perf_counter()
            model.fit(X)
            secs.append(time.perf_counter() - t0)
            corr = best_correlations(A, model.components_)
            found += bool(np.all(corr > 0.9))
            ks.append(model.n_components_)
            lows.append(float(corr.min()))
            chosen.add(model.likelihood_)
        print(f"  likelihood={likelihood!r} (used: {', '.join(sorted(chosen))}): all four "
              f"shapes recovered in {found} of {len(seeds)} seeds; K {_range(ks)}; smallest "
              f"correlation {min(lows):.3f}; {min(secs):.1f}-{max(secs):.1f} s a fit")
    X, _, A, _ = make_correlated_block_images(500, noise=0.0, random_state=3)
    flips = np.random.default_rng(0).random(X.shape)
    binary = np.where(X > 0.5, flips > 0.1, flips < 0.05).astype(float)
    print("0/1 images (make_correlated_block_images(500, noise=0, random_state=3), 10 % "
          "missed, 5 % false pixels), upper='dp':")
    for likelihood in ("auto", "gaussian"):
        model = NoisyOrHierarchy(upper="dp", likelihood=likelihood, random_state=0)
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model.fit(binary)
        seconds = time.perf_counter() - t0
        corr = best_correlations(A, model.components_)
        print(f"  likelihood={likelihood!r} (used: {model.likelihood_}): K = "
              f"{model.n_components_}, best correlations "
              + " ".join(f"{c:.2f}" for c in corr)
              + f", {seconds:.1f} s, warnings: {len(caught)}")


# -- output --------------------------------------------------------------------------------
def _range(values):
    lo, hi = min(values), max(values)
    return f"{lo}" if lo == hi else f"{lo}-{hi}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="fewer rounds and a 100-sweep fit (about 25 s)")
    parser.add_argument("--blas-threads", type=int, default=1,
                        help="BLAS threads while timing (default 1; 0 = as configured)")
    parser.add_argument("--defaults", action="store_true",
                        help="only the recovery of the sec. 7.2.1 shapes with the "
                             "estimator's defaults (issue 20; about 4 minutes)")
    args = parser.parse_args(argv)
    if args.defaults:
        t_start = time.perf_counter()
        print_header("--defaults", args.blas_threads)
        with threadpool_limits(limits=args.blas_threads or None):
            default_recovery()
        print(f"\ntotal wall time {time.perf_counter() - t_start:.1f} s")
        return
    plans = QUICK_PLAN if args.quick else PLAN
    noisy_plans = QUICK_NOISY_OR_PLAN if args.quick else NOISY_OR_PLAN
    fit_iter = 100 if args.quick else 300
    t_start = time.perf_counter()
    print_header("--quick" if args.quick else "(full)", args.blas_threads)
    print("\nDP-IBP (upper='dp', link='or'), ExponentialGaussian: "
          "make_correlated_block_images(N, random_state=0), D = 36")
    print(f"start: (C, M, A) after {START_SWEEPS} sweeps of ours from one category "
          "(hyperparameters sampled), then alpha_C, alpha_M, sigma_x, rate fixed; the same "
          "start for both samplers")
    rows = []
    with threadpool_limits(limits=args.blas_threads or None):
        for N in SIZES:
            X = make_correlated_block_images(N, random_state=0)[0]
            t0 = time.perf_counter()
            start, hyper = starting_state(X)
            t_start_state = time.perf_counter() - t0
            res = time_pair(X, start, hyper, plans[N])
            rows.append(dict(N=N, L=start[1].shape[0], K=start[1].shape[1], hyper=hyper,
                             ours=float(np.median(res["ours"])),
                             numpy=float(np.median(res["numpy"])), res=res,
                             t_start_state=t_start_state))
        noisy = []
        for N, plan in noisy_plans.items():
            X = make_correlated_block_images(N, overlap=True, random_state=0)[0]
            noisy.append(dict(N=N, **time_noisy_or(X, plan)))
        quality = fit_quality(fit_iter)

    print(f"\n  {'N':>5}{'L, K start':>12}{'L ours':>8}{'K ours':>8}{'L numpy':>9}{'K numpy':>9}"
          f"{'ours s/sweep':>14}{'sweeps':>8}{'numpy s/sweep':>15}{'sweeps':>8}{'ratio':>9}")
    for r in rows:
        res = r["res"]
        print(f"  {r['N']:>5}{str(r['L']) + ', ' + str(r['K']):>12}{_range(res['l_ours']):>8}"
              f"{_range(res['k_ours']):>8}{_range(res['l_numpy']):>9}"
              f"{_range(res['k_numpy']):>9}{r['ours']:>14.4f}{len(res['ours']):>8}"
              f"{r['numpy']:>15.3f}{len(res['numpy']):>8}{r['numpy'] / r['ours']:>8.1f}x")
    print("  (medians over the timed sweeps; ratio = numpy / ours; L, K = categories, "
          "features during the timed sweeps)")
    for r in rows:
        res, h = r["res"], r["hyper"]
        parts = res["parts"]
        n_b = len(res["numpy"])
        op = res["ours_parts"]
        print(f"  N = {r['N']}: fixed alpha_C {h['alpha_c']:.2f}, alpha_M {h['alpha_m']:.2f}, "
              f"sigma_x {h['sigma_x']:.3f}, rate {h['rate']:.2f}; ours min/max "
              f"{min(res['ours']):.4f}/{max(res['ours']):.4f} s, numpy min/max "
              f"{min(res['numpy']):.3f}/{max(res['numpy']):.3f} s")
        print(f"      numpy sweep: rows {parts['rows'] / n_b:.3f} s, links + own features "
              f"{parts['links'] / n_b:.4f} s, A {parts['A'] / n_b:.4f} s; ours: structure "
              f"{op['structure']:.4f} s, transfer {op['transfer']:.4f} s, A {op['A']:.4f} s")
        print(f"      after the timed sweeps: rms residual ours {res['rms_ours']:.3f}, numpy "
              f"{res['rms_numpy']:.3f}; invariants hold in both (Z = C M, counts); load "
              f"{min(res['load']):.2f}-{max(res['load']):.2f}")
    print("  starting states (" + str(START_SWEEPS) + " sweeps, compilation included at the "
          "first N): " + ", ".join(f"{r['t_start_state']:.1f} s" for r in rows))

    print("\nnoisy-or IBP-IBP (upper='ibp', link='noisy_or'), ExponentialGaussian: "
          "make_correlated_block_images(N, overlap=True, random_state=0), D = 36")
    print(f"start: {STAGE_SWEEPS} sweeps each of DP-IBP, IBP-IBP, noisy-or (ours, hyperparameters "
          "sampled), then alpha_C, alpha_M, q, sigma_x, rate fixed; the same start for all three")
    print("ours = GibbsHierarchy() (transfer and merge/split moves on); same = GibbsHierarchy("
          "transfer_moves=False, merge_split_moves=False), the baseline's moves; numpy = "
          "numpy_noisy_or.py")
    print(f"  {'N':>5}{'L, K start':>12}{'L ours':>8}{'K ours':>8}{'L same':>8}{'K same':>8}"
          f"{'L numpy':>9}{'K numpy':>9}{'ours s':>9}{'same s':>9}{'numpy s':>9}"
          f"{'numpy/ours':>12}{'numpy/same':>12}")
    for r in noisy:
        med = {key: float(np.median(r[key])) for key in ("ours", "same", "numpy", "ibp_or")}
        r["med"] = med
        print(f"  {r['N']:>5}{str(r['L0']) + ', ' + str(r['K0']):>12}"
              f"{_range(r['l']['ours']):>8}{_range(r['k']['ours']):>8}"
              f"{_range(r['l']['same']):>8}{_range(r['k']['same']):>8}"
              f"{_range(r['l']['numpy']):>9}{_range(r['k']['numpy']):>9}"
              f"{med['ours']:>9.4f}{med['same']:>9.4f}{med['numpy']:>9.3f}"
              f"{med['numpy'] / med['ours']:>11.1f}x{med['numpy'] / med['same']:>11.1f}x")
    print("  (median seconds per sweep; sweeps timed per N: "
          + ", ".join(f"{len(r['ours'])} + {len(r['same'])} of ours, {len(r['numpy'])} of numpy"
                      for r in noisy[:1]) + " at the first N)")
    for r in noisy:
        h, parts, n_b = r["hyper"], r["parts"], len(r["numpy"])
        print(f"  N = {r['N']}: fixed alpha_C {h['alpha_c']:.2f}, alpha_M {h['alpha_m']:.2f}, "
              f"q {h['q']:.3f}, sigma_x {h['sigma_x']:.3f}, rate {h['rate']:.2f}; "
              f"min/max ours {min(r['ours']):.4f}/{max(r['ours']):.4f}, same "
              f"{min(r['same']):.4f}/{max(r['same']):.4f}, numpy "
              f"{min(r['numpy']):.3f}/{max(r['numpy']):.3f} s")
        print(f"      numpy sweep: rows {parts['rows'] / n_b:.3f} s, links "
              f"{parts['links'] / n_b:.4f} s, children {parts['children'] / n_b:.4f} s, A "
              f"{parts['A'] / n_b:.4f} s; rms residual after: ours {r['rms']['ours']:.3f}, "
              f"same {r['rms']['same']:.3f}, numpy {r['rms']['numpy']:.3f}; invariants hold "
              f"(S = C M, Z only where S > 0, counts); load "
              f"{min(r['load']):.2f}-{max(r['load']):.2f}")

    print("\neach model, ours with its default moves, against the NumPy noisy-or sweep of the "
          "same run (median seconds per sweep; DP-IBP on the non-overlapping images of the "
          "first table, the others on the overlapping ones):")
    dp_by_n = {r["N"]: r for r in rows}
    for r in noisy:
        numpy_s = r["med"]["numpy"]
        parts = []
        if r["N"] in dp_by_n:
            dp = dp_by_n[r["N"]]["ours"]
            parts.append(f"DP-IBP {dp:.4f} s ({numpy_s / dp:.0f}x)")
        parts.append(f"IBP-IBP {r['med']['ibp_or']:.4f} s ({numpy_s / r['med']['ibp_or']:.0f}x)")
        parts.append(f"noisy-or {r['med']['ours']:.4f} s ({numpy_s / r['med']['ours']:.0f}x)")
        print(f"  N = {r['N']}: NumPy noisy-or {numpy_s:.3f} s; " + ", ".join(parts))

    q = quality
    print(f"\nquality (ours): NoisyOrHierarchy(upper='dp', link='or', likelihood='exponential', "
          f"n_iter={fit_iter}, random_state=0).fit on make_correlated_block_images({FIT_N}, "
          f"random_state=0): {q['seconds']:.1f} s wall; best correlation of each true shape "
          f"with a fitted feature " + " ".join(f"{c:.3f}" for c in q["corr"])
          + f"; motifs {q['motifs']} (true 9); K = {q['K']} (true 4), L = {q['L']}, "
          f"sigma_x {q['sigma_x']:.3f} (true 0.5)")
    print(f"\ntotal wall time {time.perf_counter() - t_start:.1f} s")


if __name__ == "__main__":
    main()
