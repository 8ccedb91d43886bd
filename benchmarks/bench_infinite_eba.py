"""InfiniteEBA (Görür 2007, sec. 4.5): the sampler's speed and its predictive quality.

1. Seconds per sweep of :class:`~sklearn_ibp.solvers.eba.eba_slice.SliceEBA` on a
   problem of the celebrities' size (9 alternatives, all 36 pairs compared 100 times,
   make_tree_eba) against a plain-NumPy implementation of the same sweep in the same
   process on the same data: the stick-breaking step is shared (the package's kernels),
   then every z_ik above the slice by Gibbs with the likelihood change of alternative i's
   pairs computed with NumPy, and every weight by the gamma-proposal Metropolis-Hastings
   step with the affected pairs recomputed with NumPy. Prints the ratio.
2. Leave-one-pair-out negative log-likelihood on generated tree data (the protocol of
   Görür 2007, Table 4.2, against the true probabilities): iEBA, BTL by maximum likelihood, and EMP
   (the held-out pair's own frequencies).

   iEBA is run with Görür 2007's prior (``weight_shape=1.0``, "iEBA") and with the
   defaults (``weight_shape=0.25``, the best of four starts, "iEBA-default").
3. ``--starts`` (issue 20, runs only this, about 2-4 minutes): Paris-Rome (Table 4.1,
   100 comparisons per pair) with ``InfiniteEBA()``'s defaults at the data seeds 0-9
   (chain seed = data seed): the largest error against the table and the MAE, beside the
   frequencies'; then 300-sweep fits (``weight_shape=0.25``) over the data seeds 0-19
   and chain seeds 0-4 with ``SliceEBA(n_starts=1)`` and with the default four
   starts: how many fits got stuck (P+ over P or R+ over R below 0.97) and how many
   missed the 0.1 bar. doc/infinite_eba.rst quotes these figures.

Run: ``python benchmarks/bench_infinite_eba.py [--quick | --starts]``.
"""

from __future__ import annotations

import math
import sys
import time

import numpy as np

from sklearn_ibp import InfiniteEBA
from sklearn_ibp.datasets import make_tree_eba, win_counts_from_pairs
from sklearn_ibp.likelihoods._observation_kernels import PRIOR_EXPONENTIAL
from sklearn_ibp.likelihoods.choice import bradley_terry_probabilities, fit_bradley_terry
from sklearn_ibp.solvers.eba.eba_slice import SliceEBA
from sklearn_ibp.solvers.ibp_explicit._semi_ordered_slice_kernels import (
    sort_by_sticks,
    to_stick_breaking,
)

QUICK = "--quick" in sys.argv


def _pair_terms(wins_row, wins_col, a_row, a_col, lapse):
    total = a_row + a_col
    p = np.where(total > 0, a_row / np.where(total > 0, total, 1.0), 0.5)
    p = (1 - lapse) * p + lapse / 2
    return wins_row * np.log(p) + wins_col * np.log1p(-p)


def numpy_sweep(state, rng):
    """The same sweep as SliceEBA.sweep with NumPy for the Z and weight updates."""
    wins, lapse = state.wins, state.lapse
    N = wins.shape[0]
    K = state.n_features
    total, level, done = to_stick_breaking(state.Z, state.W, state.pred, state.counts,
                                           state.sticks, K, state.alpha, PRIOR_EXPONENTIAL,
                                           np.array([1.0]), rng)
    assert done
    sort_by_sticks(state.Z, state.W, state.counts, state.sticks, total)
    Z = state.Z[:, :total]
    w = state.W[:total, 0]
    adv = (Z * w) @ (1 - Z).T + state.unique[:, None]
    np.fill_diagonal(adv, 0.0)
    others = np.arange(N)
    for i in range(N):
        js = others[others != i]
        for k in range(total):
            mk = state.sticks[k]
            if not mk > level:
                continue
            zk = Z[i, k]
            sign = 1 - 2 * zk
            log_prior_odds = math.log(mk) - math.log1p(-mk)
            if state.counts[k] - zk == 0:
                live = (state.counts[:total] > 0) & (np.arange(total) != k)
                lowest = min(1.0, state.sticks[:total][live].min()) if live.any() else 1.0
                if mk < lowest:
                    log_prior_odds += math.log(lowest) - math.log(mk)
            a_ij, a_ji = adv[i, js].copy(), adv[js, i].copy()
            old = _pair_terms(wins[i, js], wins[js, i], a_ij, a_ji, lapse).sum()
            has = Z[js, k] == 1
            a_ji[has] -= sign * w[k]
            a_ij[~has] += sign * w[k]
            ratio = _pair_terms(wins[i, js], wins[js, i], a_ij, a_ji, lapse).sum() - old
            log_odds = (ratio if zk == 0 else -ratio) + log_prior_odds
            new = int(rng.random() < 1 / (1 + math.exp(-log_odds)))
            if new != zk:
                adv[i, js], adv[js, i] = a_ij, a_ji
                Z[i, k] = new
                state.counts[k] += new - zk
    keep = np.flatnonzero(state.counts[:total] > 0)
    Kn = keep.size
    state.Z[:, :Kn] = Z[:, keep]
    state.Z[:, Kn:total] = 0
    state.W[:Kn, 0] = w[keep]
    state.counts[:Kn] = state.counts[keep]
    state.counts[Kn:total] = 0
    state.n_features = Kn
    Z = state.Z[:, :Kn]
    eta = math.exp(state.log_eta)
    for k in range(Kn):
        cur = state.W[k, 0]
        prop = rng.gamma(eta, cur / eta)
        delta = prop - cur
        rows, cols = np.flatnonzero(Z[:, k]), np.flatnonzero(Z[:, k] == 0)
        a = adv[np.ix_(rows, cols)]
        b = adv[np.ix_(cols, rows)].T
        x, y = wins[np.ix_(rows, cols)], wins[np.ix_(cols, rows)].T
        change = (_pair_terms(x, y, a + delta, b, lapse) - _pair_terms(x, y, a, b, lapse)).sum()
        # log Q(cur | prop) - log Q(prop | cur), Q(x | y) = Gamma(x; eta, rate eta / y)
        log_q = (2 * eta - 1) * math.log(cur / prop) - eta * cur / prop + eta * prop / cur
        if math.log(rng.random()) < change - delta + log_q:
            state.W[k, 0] = prop
            adv[np.ix_(rows, cols)] += delta
    for i in range(N):
        js = others[others != i]
        cur = state.unique[i]
        prop = rng.gamma(eta, cur / eta)
        delta = prop - cur
        x, y = wins[i, js], wins[js, i]
        change = (_pair_terms(x, y, adv[i, js] + delta, adv[js, i], lapse)
                  - _pair_terms(x, y, adv[i, js], adv[js, i], lapse)).sum()
        log_q = (2 * eta - 1) * math.log(cur / prop) - eta * cur / prop + eta * prop / cur
        if math.log(rng.random()) < change - delta + log_q:
            state.unique[i] = prop
            adv[i, js] += delta
    state.adv[:] = adv


def bench_speed():
    X, y, *_ = make_tree_eba(100, random_state=0)
    W = win_counts_from_pairs(X, y, 9)
    # Görür 2007's prior: the NumPy sweep has no proposal from a Gamma(a < 1) prior.
    model = InfiniteEBA(n_iter=300, weight_shape=1.0, random_state=0).fit_counts(W)
    state0 = model._chains[0]["state"]
    solver = SliceEBA()
    n = 200 if QUICK else 1000
    timings = {}
    for name, sweep in (("numba (SliceEBA)", solver.sweep),
                        ("plain NumPy", numpy_sweep)):
        state = SliceEBA.checkpoint(state0)
        state.adapt_sweeps = 0
        rng = np.random.default_rng(0)
        sweep(state, rng)  # warm up
        count = n if name.startswith("numba") else max(n // 10, 20)
        start = time.perf_counter()
        for _ in range(count):
            sweep(state, rng)
        timings[name] = (time.perf_counter() - start) / count
        print(f"{name:26s} {1e3 * timings[name]:8.3f} ms per sweep (K = {state.n_features})")
    ratio = timings["plain NumPy"] / timings["numba (SliceEBA)"]
    print(f"speed-up of the numba sweep over plain NumPy: {ratio:.1f}x")


def bench_loo():
    def loss(theta, theta_hat):
        theta_hat = np.clip(theta_hat, 1e-3, 1 - 1e-3)
        return -theta * np.log(theta_hat) - (1 - theta) * np.log(1 - theta_hat)

    seeds = (0,) if QUICK else (0, 1, 2)
    n_iter = 800 if QUICK else 2000
    for seed in seeds:
        X, y, P, *_ = make_tree_eba(100, random_state=seed)
        W = win_counts_from_pairs(X, y, 9)
        res = {"iEBA": [], "iEBA-default": [], "BTL": [], "EMP": [], "BASE": [],
               "TRUE": []}
        start = time.perf_counter()
        for i, j in zip(*np.triu_indices(9, 1), strict=True):
            held = W.copy()
            held[i, j] = held[j, i] = 0
            for name, shape in (("iEBA", 1.0), ("iEBA-default", 0.25)):
                model = InfiniteEBA(n_alternatives=9, n_iter=n_iter, random_state=seed,
                                    weight_shape=shape,
                                    solver=SliceEBA(weight_steps=3)).fit_counts(held)
                res[name].append(loss(P[i, j], model.choice_probabilities_[i, j]))
            btl = bradley_terry_probabilities(fit_bradley_terry(held))
            res["BTL"].append(loss(P[i, j], btl[i, j]))
            res["EMP"].append(loss(P[i, j], W[i, j] / (W[i, j] + W[j, i])))
            res["BASE"].append(loss(P[i, j], 0.5))
            res["TRUE"].append(loss(P[i, j], P[i, j]))
        print(f"seed {seed} ({n_iter} sweeps, {time.perf_counter() - start:.0f} s): "
              + "  ".join(f"{k} {np.mean(v):.4f}" for k, v in res.items()))


def bench_starts():
    from sklearn_ibp.datasets import PARIS_ROME_TABLE, make_paris_rome

    upper = np.triu_indices(4, 1)
    print("Paris-Rome, InfiniteEBA() defaults, data seeds 0-9 (chain seed = data seed):")
    maes, freq_maes = [], []
    for seed in range(10):
        X, y, _ = make_paris_rome(100, random_state=seed)
        model = InfiniteEBA(random_state=seed).fit(X, y)
        errors = np.abs(model.eba_probabilities_ - PARIS_ROME_TABLE)[upper]
        W = win_counts_from_pairs(X, y, 4)
        freq = W / np.maximum(W + W.T, 1)
        maes.append(errors.mean())
        freq_maes.append(np.abs(freq - PARIS_ROME_TABLE)[upper].mean())
        print(f"  seed {seed}: largest error {errors.max():.3f}, MAE {maes[-1]:.4f} "
              f"(frequencies {freq_maes[-1]:.4f})")
    print(f"  mean MAE {np.mean(maes):.4f} (frequencies {np.mean(freq_maes):.4f})")
    print("300-sweep fits, weight_shape=0.25, data seeds 0-19 x chain seeds 0-4:")
    for n_starts in (1, 4):
        stuck, missed, start = 0, 0, time.perf_counter()
        for data_seed in range(20):
            X, y, _ = make_paris_rome(100, random_state=data_seed)
            for chain_seed in range(5):
                model = InfiniteEBA(n_iter=300, weight_shape=0.25, random_state=chain_seed,
                                    solver=SliceEBA(n_starts=n_starts)).fit(X, y)
                P = model.eba_probabilities_
                stuck += bool(min(P[0, 1], P[3, 2]) < 0.97)
                missed += bool(np.abs(P - PARIS_ROME_TABLE)[upper].max() >= 0.1)
        print(f"  n_starts={n_starts}: stuck {stuck} of 100, missed the 0.1 bar {missed} "
              f"of 100 ({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    if "--starts" in sys.argv:
        bench_starts()
    else:
        bench_speed()
        bench_loo()
