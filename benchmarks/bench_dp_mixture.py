"""DPMixture and its solvers against scikit-learn's BayesianGaussianMixture (issue 4).

Run from the repository root::

    python benchmarks/bench_dp_mixture.py            # full run (about 2 minutes on 2 cores)
    python benchmarks/bench_dp_mixture.py --quick    # fewer sweeps, fewer fits (about 30 s)

Everything runs in one process on the same data:

1. **N = 10,000, D = 2 and D = 10.** Training and held-out sets of 10,000 rows each from
   one mixture of 8 Gaussians (:func:`make_mixture`: centres at least 4.5 apart, random
   rotations with standard deviations 0.5-1.5 along the axes, weights from
   Dirichlet(5, ..., 5); fixed seeds). The Bayes classifier of the true mixture labels
   98-99% of the held-out rows correctly (printed): well, not trivially, separated. Printed, per D:

   a. **Seconds per sweep of every solver** with every base it serves (``conjugate``:
      :class:`NormalWishartBase`; ``cond_conj``: :class:`ConditionallyConjugateBase`),
      driving ``solver.initialize`` / ``solver.sweep`` directly from one fixed starting
      partition (k-means with 16 clusters, seed 0) and, after every sweep, what
      :meth:`DPMixture._iterate` does: ``cluster_parameters``, the base's
      ``update_hyperparameters``, ``set_hyperparameters`` and ``sample_alpha``. The
      table gives the median of the sweep alone and of the whole iteration (sweep plus
      those updates; the figure held against the target) over sweeps 3 onwards of each
      chain, the number of clusters during those sweeps and the ratio to the fastest.
      The estimator's own per-iteration work (the log-joint trace, a copy of the state
      for ``KeyboardInterrupt`` roll-back, the kept samples) is not in these figures; it
      shows in (b) as ``fit / n_iter``.
   b. **Fit time and held-out log-likelihood.** ``DPMixture(solver=s, base=b,
      random_state=0)`` with its defaults (``n_iter=200``, the first 100 discarded) for
      the fastest solver of each base in (a), and the default solver (``"auto"``, that is
      ``split_merge``) with the conjugate base; the held-out score is ``DPMixture.score``
      (mean log posterior predictive density, averaged over the kept samples). With the
      conditionally conjugate base the fit keeps every 10th sweep (``thin=10``):
      ``score`` costs 0.15-0.4 s per kept sample there (the prior predictive's average
      over fixed prior draws), 15-40 s for the default 100 samples. Against
      ``BayesianGaussianMixture(weight_concentration_prior_type="dirichlet_process",
      random_state=0)``, once with its defaults (``n_components=1``: one Gaussian) and once
      with ``n_components=20, max_iter=500``, timed in the same run; and the true
      mixture's mean log density on the held-out rows (the best any model can do).
   c. **Time to reach scikit-learn's held-out log-likelihood.** For the solvers of (b): a
      chain from the k-means start (the clock includes k-means, the base's and the
      solver's ``initialize`` and every iteration, not the evaluations), evaluated on the
      held-out set after 0, 1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 35, 40, 50, ...
      200 sweeps by two criteria: ``current``, the current state's predictive density
      (what ``DPMixture.score`` computes for one kept sample: ``n_k / (N + alpha)`` times
      the cluster's posterior predictive for the conjugate base, its Gaussian at the
      sampled parameters otherwise, plus ``alpha / (N + alpha)`` times the prior
      predictive), and ``average``, that density averaged over the evaluated states from
      sweep ``n / 2`` on (``DPMixture.score`` after ``n`` sweeps with its default burn-in,
      keeping only the evaluated sweeps). Printed: the first time each criterion is at
      least each scikit-learn fit's score, against that fit's time.

2. **N = 1,000,000, D = 2, 6 Gaussians** (the same generator): seconds per iteration, as
   in 1a, of the fast solvers (``slice``, ``retrospective``, ``no_gaps`` with both bases,
   ``collapsed``) from a k-means start with 16 clusters (fitted on every 20th row, then
   every row assigned). Skipped: ``gibbs``, ``truncated``, ``auxiliary``, ``metropolis`` and
   ``split_merge`` (collapsed Gibbs plus five split-merge proposals), which took 0.5-1.2 s
   per sweep there in a trial run and 1.5-5x the slice sampler's time in table 1a.

Timing: the numba kernels compile (or load from cache) first on a 500-row problem of the
same D, outside the clock. Chains are timed in interleaved rounds, one iteration of each per
round, so a change of load on the shared machine hits all of them alike; a solver stops
once its timed iterations add up to its budget (at least 5 sweeps). Times are
``time.perf_counter``; tables give medians. BLAS and OpenMP (and so scikit-learn's k-means
and BayesianGaussianMixture) are limited to one thread through threadpoolctl
(``--blas-threads 0`` leaves them as configured), as in the other benchmarks here.

Targets (issue 4): the fastest solver under 0.01 s per sweep at N = 10,000, D = 2; a held-out
log-likelihood at least scikit-learn's, reached in less time than scikit-learn's fit; the
fastest solver under 0.4 s per sweep at N = 1,000,000, D = 2.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np
import sklearn
from scipy.special import logsumexp
from scipy.stats import multivariate_normal
from sklearn.cluster import KMeans
from sklearn.exceptions import ConvergenceWarning
from sklearn.mixture import BayesianGaussianMixture
from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_solvers import print_environment  # noqa: E402

from sklearn_ibp import DPMixture  # noqa: E402
from sklearn_ibp.likelihoods.conditionally_conjugate import (  # noqa: E402
    ConditionallyConjugateBase,
)
from sklearn_ibp.likelihoods.normal_wishart import NormalWishartBase  # noqa: E402
from sklearn_ibp.solvers import DP_SOLVERS  # noqa: E402
from sklearn_ibp.solvers.dp._dp_base import relabel  # noqa: E402

# Targets of the issue.
TARGET_SWEEP_10K = 0.01
TARGET_SWEEP_1M = 0.4

BASES = {"conjugate": NormalWishartBase, "conditionally_conjugate": ConditionallyConjugateBase}
SHORT = {"conjugate": "conjugate", "conditionally_conjugate": "cond_conj"}
N_START = 16  # k-means clusters of the starting partition
CC_THIN = 10  # thin of the DPMixture fits with the conditionally conjugate base (see above)
EVAL_SWEEPS = (0, 1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 35, *range(40, 201, 10))
UNTIMED = 2  # sweeps of each chain before the timed ones

# N = 1,000,000: the solvers timed (base, solver) and the ones skipped.
BIG_COMBOS = (("conjugate", "slice"), ("conjugate", "retrospective"),
              ("conjugate", "no_gaps"), ("conjugate", "collapsed"),
              ("conditionally_conjugate", "slice"),
              ("conditionally_conjugate", "retrospective"),
              ("conditionally_conjugate", "no_gaps"))
BIG_QUICK = (("conjugate", "slice"), ("conjugate", "collapsed"))


# -- environment ----------------------------------------------------------------------------
def print_header(mode, blas_threads):
    print_environment("bench_dp_mixture.py", mode, blas_threads,
                      f"scikit-learn {sklearn.__version__}")


def _load():
    return " ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"


def _mark(ok):
    return "meets" if ok else "MISSES"


# -- data -----------------------------------------------------------------------------------
def make_mixture(n_clusters, n_features, seed, separation=4.5):
    """Weights, means and covariances of a Gaussian mixture.

    Centres are drawn one by one from ``N(0, s^2 I)`` with ``s = 1.3 separation /
    sqrt(2 D)`` (pairwise distances about 1.3 ``separation``), rejected if closer than
    ``separation`` to one already drawn; each covariance is ``Q diag(sd^2) Q^T`` with a
    random rotation ``Q`` and ``sd ~ U(0.5, 1.5)`` per axis; weights ``~ Dirichlet(5)``.
    """
    rng = np.random.default_rng(seed)
    spread = 1.3 * separation / np.sqrt(2 * n_features)
    centres = []
    while len(centres) < n_clusters:
        c = rng.normal(scale=spread, size=n_features)
        if all(np.linalg.norm(c - other) >= separation for other in centres):
            centres.append(c)
    covariances = []
    for _ in range(n_clusters):
        Q, _ = np.linalg.qr(rng.standard_normal((n_features, n_features)))
        sd = rng.uniform(0.5, 1.5, size=n_features)
        covariances.append((Q * sd**2) @ Q.T)
    weights = rng.dirichlet(np.full(n_clusters, 5.0))
    return weights, np.array(centres), np.array(covariances)


def draw(mixture, n_samples, seed):
    weights, means, covariances = mixture
    rng = np.random.default_rng(seed)
    labels = rng.choice(weights.size, size=n_samples, p=weights)
    X = np.empty((n_samples, means.shape[1]))
    for k in range(weights.size):
        rows = labels == k
        X[rows] = rng.multivariate_normal(means[k], covariances[k], size=int(rows.sum()))
    return X, labels


def true_log_joint(mixture, X):
    """``log w_k + log N(x | mu_k, Sigma_k)``, shape (n, K)."""
    weights, means, covariances = mixture
    return np.column_stack([np.log(weights[k]) + multivariate_normal(
        means[k], covariances[k]).logpdf(X) for k in range(weights.size)])


def kmeans_start(X, n_clusters=N_START, seed=0, fit_rows=slice(None)):
    labels = KMeans(n_clusters=n_clusters, n_init=1, random_state=seed).fit(
        X[fit_rows]).predict(X)
    return relabel(labels)[0].astype(np.int64)


# -- chains ---------------------------------------------------------------------------------
class Chain:
    """One chain driven as :class:`DPMixture` drives it (``_initialize_chain``, ``_iterate``)."""

    def __init__(self, base_name, solver_name, X, labels, seed=0):
        self.base_name, self.solver_name = base_name, solver_name
        self.rng = np.random.default_rng(seed)
        self.base = BASES[base_name]()
        self.solver = DP_SOLVERS[solver_name]()
        self.base.initialize(X, self.rng)
        self.state = self.solver.initialize(X, labels.copy(), 1.0, self.base, self.rng)

    def iterate(self):
        """One sweep and the updates after it; returns (sweep seconds, iteration seconds)."""
        t0 = time.perf_counter()
        self.solver.sweep(self.state, self.base, self.rng)
        t1 = time.perf_counter()
        params = self.solver.cluster_parameters(self.state, self.base, self.rng)
        self.base.update_hyperparameters(params, self.rng)
        self.solver.set_hyperparameters(self.state, self.base)
        self.state.alpha = self.solver.sample_alpha(self.state, self.rng)
        t2 = time.perf_counter()
        return t1 - t0, t2 - t0

    def held_out_log_density(self, X_new, eval_rng):
        """Log predictive density of each row of ``X_new`` under the current state, as
        ``DPMixture.score_samples`` computes it for one kept sample."""
        state, base = self.state, self.base
        N, K = state.X.shape[0], state.n_clusters
        counts = np.bincount(state.labels, minlength=K)
        log_w = np.log(np.append(counts, state.alpha) / (N + state.alpha))
        if getattr(base, "conjugate", False):
            cols = [base.log_predictive(X_new, state.X[state.labels == k]) for k in range(K)]
            log_dens = np.column_stack(cols)
        else:
            params = self.solver.cluster_parameters(state, base, eval_rng)
            log_dens = base.log_likelihood(X_new, params)
        log_dens = np.column_stack([log_dens, base.log_prior_predictive(X_new)])
        return logsumexp(log_dens + log_w, axis=1)


def all_combos():
    return [(b, s) for b in BASES for s, cls in DP_SOLVERS.items() if b in cls.bases]


def compile_kernels(mixture, combos):
    X, _ = draw(mixture, 500, seed=99)
    labels = kmeans_start(X, 4)
    for b, s in combos:
        chain = Chain(b, s, X, labels)
        for _ in range(2):
            chain.iterate()
        chain.held_out_log_density(X[:10], np.random.default_rng(0))


def time_chains(X, labels, combos, max_rounds, budget, min_sweeps=5):
    """Interleaved rounds of one iteration per chain; returns per-combo results."""
    chains = {c: Chain(*c, X, labels) for c in combos}
    out = {c: dict(sweep=[], iteration=[], ks=[]) for c in combos}
    for _ in range(UNTIMED):
        for chain in chains.values():
            chain.iterate()
    for _ in range(max_rounds):
        active = [c for c in combos
                  if len(out[c]["iteration"]) < min_sweeps or sum(out[c]["iteration"]) < budget]
        if not active:
            break
        for c in active:
            t_sweep, t_iter = chains[c].iterate()
            out[c]["sweep"].append(t_sweep)
            out[c]["iteration"].append(t_iter)
            out[c]["ks"].append(chains[c].state.n_clusters)
    for res in out.values():
        res["med_sweep"] = float(np.median(res["sweep"]))
        res["med_iter"] = float(np.median(res["iteration"]))
        res["min_iter"] = float(np.min(res["iteration"]))
    return out


def _k_range(ks):
    lo, hi = min(ks), max(ks)
    return f"{lo}" if lo == hi else f"{lo}-{hi}"


def print_timing_table(res):
    fastest = min(r["med_iter"] for r in res.values())
    print(f"  {'base':<10}{'solver':<15}{'sweep s':>9}{'iteration s':>13}{'min iter s':>12}"
          f"{'sweeps':>8}{'K':>8}{'x fastest':>11}")
    for (b, s), r in sorted(res.items(), key=lambda kv: kv[1]["med_iter"]):
        print(f"  {SHORT[b]:<10}{s:<15}{r['med_sweep']:>9.4f}{r['med_iter']:>13.4f}"
              f"{r['min_iter']:>12.4f}{len(r['iteration']):>8}{_k_range(r['ks']):>8}"
              f"{r['med_iter'] / fastest:>10.1f}x")


# -- scikit-learn and the estimator ---------------------------------------------------------
SKLEARN_LINES = {
    "BGM defaults (n_components=1)": {},
    "BGM n_components=20, max_iter=500": dict(n_components=20, max_iter=500),
}


def fit_sklearn(X, X_held):
    out = {}
    for label, kw in SKLEARN_LINES.items():
        model = BayesianGaussianMixture(weight_concentration_prior_type="dirichlet_process",
                                        random_state=0, **kw)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            t0 = time.perf_counter()
            model.fit(X)
            t_fit = time.perf_counter() - t0
        out[label] = dict(fit=t_fit, score=float(model.score(X_held)), n_iter=model.n_iter_,
                          converged=model.converged_,
                          k1=int(np.sum(model.weights_ >= 0.01)), k=model.n_components)
    return out


def fit_dpmixture(X, X_held, base, solver):
    thin = CC_THIN if base == "conditionally_conjugate" else 1
    model = DPMixture(solver=solver, base=base, thin=thin, random_state=0)
    t0 = time.perf_counter()
    model.fit(X)
    t_fit = time.perf_counter() - t0
    t0 = time.perf_counter()
    score = model.score(X_held)
    t_score = time.perf_counter() - t0
    counts = np.bincount(model.labels_)
    return dict(fit=t_fit, score=score, t_score=t_score, n_iter=model.n_iter_,
                n_samples=len(model.samples_), k=model.n_components_,
                k1=int(np.sum(counts >= 0.01 * X.shape[0])),
                k_trace=model.traces_["n_clusters"][0], thin=thin)


def time_to_reach(X, X_held, base, solver, references, t_start, labels):
    """Chain time at which the held-out score first reaches each reference, by two criteria.

    ``current``: the current state's predictive (one kept sample); ``average``: the
    predictive averaged over the states evaluated from sweep ``n / 2`` on (what
    ``DPMixture.score`` gives after ``n`` sweeps with its default burn-in of half the
    sweeps, keeping only the evaluated sweeps). Returns ``{(criterion, label): (sweeps,
    seconds, score)}`` and the trajectory ``[(sweeps, seconds, current, average, K)]``.
    """
    t0 = time.perf_counter()
    chain = Chain(base, solver, X, labels)
    clock = t_start + time.perf_counter() - t0  # k-means + initialize
    eval_rng = np.random.default_rng(1)
    reached, trajectory, kept = {}, [], []
    done = 0
    for target_sweeps in EVAL_SWEEPS:
        while done < target_sweeps:
            clock += chain.iterate()[1]
            done += 1
        log_dens = chain.held_out_log_density(X_held, eval_rng)
        kept.append((done, log_dens))
        window = np.array([d for n, d in kept if n >= done / 2])
        scores = {"current": float(np.mean(log_dens)),
                  "average": float(np.mean(logsumexp(window, axis=0) - np.log(len(window))))}
        trajectory.append((done, clock, scores["current"], scores["average"],
                           chain.state.n_clusters))
        for criterion, score in scores.items():
            for label, ref in references.items():
                if (criterion, label) not in reached and score >= ref:
                    reached[(criterion, label)] = (done, clock, score)
        if len(reached) == 2 * len(references):
            break
    return reached, trajectory


# -- experiments ----------------------------------------------------------------------------
def experiment_10k(D, quick, summary):
    mixture = make_mixture(8, D, seed=D)
    X, y = draw(mixture, 10_000, seed=100 + D)
    X_held, y_held = draw(mixture, 10_000, seed=200 + D)
    log_joint = true_log_joint(mixture, X_held)
    bayes = float(np.mean(log_joint.argmax(axis=1) == y_held))
    oracle = float(np.mean(logsumexp(log_joint, axis=1)))
    print(f"\n== 1. N = 10,000, D = {D}, 8 Gaussians (weights "
          f"{np.round(np.sort(mixture[0])[::-1], 3).tolist()}); held-out 10,000 rows; "
          f"Bayes classifier accuracy {bayes:.4f}; load {_load()}")

    combos = all_combos()
    t0 = time.perf_counter()
    compile_kernels(mixture, combos)
    t_compile = time.perf_counter() - t0
    t0 = time.perf_counter()
    labels = kmeans_start(X)
    t_kmeans = time.perf_counter() - t0
    print(f"  start: k-means, {N_START} clusters, n_init=1, seed 0 ({t_kmeans:.3f} s); "
          f"compile / cache warm-up {t_compile:.1f} s (untimed)")

    print(f"\n  a. seconds per sweep (medians over sweeps {UNTIMED + 1}+ of each chain; "
          "iteration = sweep + hyperparameter and alpha updates, as DPMixture does)")
    res = time_chains(X, labels, combos, max_rounds=10 if quick else 40,
                      budget=0.4 if quick else 2.0)
    print_timing_table(res)
    best = {b: min((c for c in res if c[0] == b), key=lambda c: res[c]["med_iter"])
            for b in BASES}
    fastest = min(res.values(), key=lambda r: r["med_iter"])
    fastest_combo = min(res, key=lambda c: res[c]["med_iter"])
    line = (f"  fastest: {fastest_combo[1]} ({SHORT[fastest_combo[0]]}) "
            f"{fastest['med_iter']:.4f} s per iteration")
    if D == 2:
        ok = fastest["med_iter"] < TARGET_SWEEP_10K
        line += f"   target < {TARGET_SWEEP_10K} s: {_mark(ok)}"
        summary["sweep_10k"] = (fastest_combo, fastest["med_iter"], ok)
    print(line)

    print(f"\n  b. fit time and held-out mean log-likelihood (load {_load()})")
    sk = fit_sklearn(X, X_held)
    runs = [(b, best[b][1]) for b in BASES]
    if not quick and ("conjugate", "split_merge") not in runs:
        runs.append(("conjugate", "auto"))
    if quick:
        runs = runs[:1]
    ours = {}
    for b, s in runs:
        ours[(b, s)] = fit_dpmixture(X, X_held, b, s)
    print(f"  {'model':<44}{'fit s':>8}{'held-out':>10}{'K (>=1%)':>10}  notes")
    for label, r in sk.items():
        conv = "converged" if r["converged"] else "NOT converged"
        print(f"  {'sklearn ' + label:<44}{r['fit']:>8.3f}{r['score']:>10.4f}"
              f"{str(r['k']) + ' (' + str(r['k1']) + ')':>10}  {r['n_iter']} EM iterations, "
              f"{conv}")
    for (b, s), r in ours.items():
        name = f"DPMixture {s} ({SHORT[b]})" + (" (default solver)" if s == "auto" else "")
        print(f"  {name:<44}{r['fit']:>8.3f}{r['score']:>10.4f}"
              f"{str(r['k']) + ' (' + str(r['k1']) + ')':>10}  fit / n_iter "
              f"{r['fit'] / r['n_iter']:.4f} s; {r['n_samples']} kept samples (thin "
              f"{r['thin']}), score {r['t_score']:.1f} s; K over the last 100 sweeps "
              f"{int(r['k_trace'][-100:].min())}-{int(r['k_trace'][-100:].max())}")
    print(f"  {'true mixture (oracle)':<44}{'':>8}{oracle:>10.4f}{'8':>10}")
    for label, r in sk.items():
        for (b, s), o in ours.items():
            diff = o["score"] - r["score"]
            print(f"  {s} ({SHORT[b]}) - sklearn {label}: {diff:+.4f} nats/row   "
                  f"target >= 0: {_mark(diff >= 0)}")
            summary.setdefault("held_out", []).append((D, label, (b, s), diff))

    print(f"\n  c. time to reach sklearn's held-out score: chains from the k-means start; the "
          f"clock includes k-means ({t_kmeans:.3f} s) and initialize, not the evaluations; "
          f"'current' = the current state's predictive, 'average' = averaged over the "
          f"evaluated states of the second half of the chain so far (load {_load()})")
    references = {label: r["score"] for label, r in sk.items()}
    head = "".join(f"{'sklearn ' + label.split(' (')[0].replace('BGM ', ''):>38}"
                   for label in references)
    print(f"  {'solver':<26}{'criterion':<10}{head}")
    refs = [f"(fit {sk[label]['fit']:.3f} s, {ref:.4f})" for label, ref in references.items()]
    print(f"  {'':<36}" + "".join(f"{r:>38}" for r in refs))
    for b, s in runs:
        solver = "split_merge" if s == "auto" else s
        reached, trajectory = time_to_reach(X, X_held, b, solver, references, t_kmeans, labels)
        for criterion in ("current", "average"):
            cells = []
            for label in references:
                t_sk = sk[label]["fit"]
                hit = reached.get((criterion, label))
                if hit is None:
                    ok = False
                    cells.append(f"not in {trajectory[-1][0]} sweeps ({trajectory[-1][1]:.2f} s) "
                                 "MISSES")
                else:
                    n, t, _ = hit
                    ok = t < t_sk
                    cells.append(f"{n} sweeps {t:.3f} s = {t / t_sk:.2f}x {_mark(ok)}")
                summary.setdefault("reach", []).append((D, label, (b, solver), criterion, ok))
            print(f"  {solver + ' (' + SHORT[b] + ')':<26}{criterion:<10}"
                  + "".join(f"{c:>38}" for c in cells))
        shown = trajectory[:: max(1, len(trajectory) // 6)]
        if shown[-1] is not trajectory[-1]:
            shown.append(trajectory[-1])
        print(f"  {'':<4}sweeps / s: current, average (K): " + "; ".join(
            f"{n} / {t:.3f}: {cur:.4f}, {avg:.4f} ({k})" for n, t, cur, avg, k in shown))


def experiment_1m(quick, summary):
    mixture = make_mixture(6, 2, seed=6)
    X, _ = draw(mixture, 1_000_000, seed=106)
    combos = BIG_QUICK if quick else BIG_COMBOS
    t0 = time.perf_counter()
    labels = kmeans_start(X, fit_rows=slice(None, None, 20))
    t_kmeans = time.perf_counter() - t0
    print(f"\n== 2. N = 1,000,000, D = 2, 6 Gaussians; start: k-means, {N_START} clusters "
          f"fitted on every 20th row ({t_kmeans:.2f} s); load {_load()}")
    skipped = sorted({f"{s} ({SHORT[b]})" for b, s in all_combos()} -
                     {f"{s} ({SHORT[b]})" for b, s in combos})
    why = ("--quick" if quick else
           "0.5-1.2 s per sweep here in a trial run, 1.5-5x the slice sampler in table 1a")
    print(f"  skipped ({why}): {', '.join(skipped)}")
    res = time_chains(X, labels, combos, max_rounds=3 if quick else 8,
                      budget=0.0 if quick else 4.0, min_sweeps=3 if quick else 5)
    print_timing_table(res)
    fastest_combo = min(res, key=lambda c: res[c]["med_iter"])
    t = res[fastest_combo]["med_iter"]
    ok = t < TARGET_SWEEP_1M
    print(f"  fastest: {fastest_combo[1]} ({SHORT[fastest_combo[0]]}) {t:.3f} s per iteration"
          f"   target < {TARGET_SWEEP_1M} s: {_mark(ok)}   (load {_load()})")
    summary["sweep_1m"] = (fastest_combo, t, ok)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="fewer sweeps and fits (about 30 s)")
    parser.add_argument("--blas-threads", type=int, default=1,
                        help="BLAS/OpenMP threads (default 1; 0 = as configured)")
    args = parser.parse_args(argv)
    t_start = time.perf_counter()
    print_header("--quick" if args.quick else "(full)", args.blas_threads)
    summary = {}
    with threadpool_limits(limits=args.blas_threads or None):
        for D in (2, 10):
            experiment_10k(D, args.quick, summary)
        experiment_1m(args.quick, summary)

    print("\ntargets:")
    (b, s), t, ok = summary["sweep_10k"]
    print(f"  fastest solver at N = 10,000, D = 2: {s} ({SHORT[b]}) {t:.4f} s/sweep "
          f"< {TARGET_SWEEP_10K}: {_mark(ok)}")
    for label in SKLEARN_LINES:
        rows = [r for r in summary["held_out"] if r[1] == label]
        worst = min(rows, key=lambda r: r[3])
        n_ok = sum(r[3] >= 0 for r in rows)
        print(f"  held-out >= sklearn {label}: {n_ok} of {len(rows)} fits meet; smallest "
              f"margin {worst[3]:+.4f} ({worst[2][1]} ({SHORT[worst[2][0]]}), D = {worst[0]})")
    for label in SKLEARN_LINES:
        for criterion in ("current", "average"):
            rows = [r for r in summary["reach"] if r[1] == label and r[3] == criterion]
            misses = [f"{r[2][1]} ({SHORT[r[2][0]]}) D = {r[0]}" for r in rows if not r[4]]
            print(f"  time to reach sklearn {label}, {criterion}: "
                  f"{len(rows) - len(misses)} of {len(rows)} meet"
                  + (f"; misses: {', '.join(misses)}" if misses else ""))
    (b, s), t, ok = summary["sweep_1m"]
    print(f"  fastest solver at N = 1,000,000, D = 2: {s} ({SHORT[b]}) {t:.3f} s/sweep "
          f"< {TARGET_SWEEP_1M}: {_mark(ok)}")
    print(f"\ntotal wall time {time.perf_counter() - t_start:.1f} s; load {_load()}")


if __name__ == "__main__":
    main()
