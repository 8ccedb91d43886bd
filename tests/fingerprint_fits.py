"""Fingerprints of a fixed set of small fits, to show that a refactor changes no result.

A script, not a test module (pytest collects ``test_*.py`` only). It fits every public
estimator with every solver of every registry, every likelihood and weight option, every
DP base and component, both ``NoisyOrHierarchy`` uppers and links, several chains on two
jobs, the parallel solvers (threads, and a local Dask cluster when ``distributed`` is
installed) and data with missing values, on tiny data with few iterations. For each fit
it takes a SHA-256 of every fitted public attribute whose name ends in ``_`` (arrays,
numbers, and the lists and dicts that hold them, such as ``samples_`` and ``traces_``) and
of the outputs of ``transform``, ``inverse_transform``, ``predict``, ``predict_proba``,
``score_samples`` and ``score`` on fixed rows. A combination an estimator refuses is
recorded as refused (with the exception's type), so a change in what is accepted is caught
too.

Run it around a refactor::

    python tests/fingerprint_fits.py --write before.json    # on the old code
    python tests/fingerprint_fits.py --check before.json    # on the new code

``--check`` exits with status 1 and lists every fit and attribute that differs, and every
fit of the reference it could not run; fits the reference lacks (a solver added since) are
listed but not compared. It imports only the public names of ``sklearn_ibp``,
``sklearn_ibp.solvers``, ``sklearn_ibp.distributed`` and ``sklearn_ibp.datasets``, takes
the solver names an estimator accepts from its ``solver`` constraint and the solver
classes from the registries by name (:func:`_solver_class`), so it runs unchanged before
and after modules move. ``--only SUBSTRING`` runs the fits whose name
contains it (case ignored); ``--list`` prints the names.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import re
import sys
import time
import warnings

import numpy as np

if __name__ == "__main__" and sys.path and sys.path[0] == str(
        __import__("pathlib").Path(__file__).resolve().parent):
    # Run as a script, Python puts tests/ first on sys.path, where the folder
    # tests/distributed would shadow dask's ``distributed`` package.
    del sys.path[0]

# --------------------------------------------------------------------------------------
# hashing

#: Names of wall-clock measurements (``elbo_time_``, a state's ``time_trace``, a solver's
#: ``timings_``), left out: they differ from run to run.
WALL_CLOCK = re.compile(r"(^|_)(times?|timings?)(_|$)")


def _feed(h, value):
    """Feed ``value`` into the hash ``h``, with its type and shape, recursively."""
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            h.update(b"objarray" + repr(value.shape).encode())
            for item in value.ravel():
                _feed(h, item)
        else:
            h.update(f"nd{value.dtype.str}{value.shape}".encode())
            h.update(np.ascontiguousarray(value).tobytes())
    elif isinstance(value, (bool, np.bool_)):
        h.update(b"bool" + (b"1" if value else b"0"))
    elif isinstance(value, (int, np.integer)):
        h.update(b"int" + str(int(value)).encode())
    elif isinstance(value, (float, np.floating)):
        h.update(b"float" + np.float64(value).tobytes())
    elif isinstance(value, (complex, np.complexfloating)):
        h.update(b"complex" + np.complex128(value).tobytes())
    elif isinstance(value, str):
        h.update(b"str" + value.encode())
    elif value is None:
        h.update(b"None")
    elif isinstance(value, dict):
        h.update(b"dict")
        for key in sorted(value, key=str):
            if WALL_CLOCK.search(str(key)):
                continue
            _feed(h, str(key))
            _feed(h, value[key])
    elif isinstance(value, (list, tuple)):
        h.update(b"seq" + str(len(value)).encode())
        for item in value:
            _feed(h, item)
    elif hasattr(value, "__dict__") and not callable(value):
        # A state record or similar: its public attributes (not its class name, which a
        # refactor may change).
        h.update(b"obj")
        _feed(h, {k: v for k, v in vars(value).items() if not k.startswith("_")})
    else:
        h.update(b"other")


def _sha(value) -> str:
    h = hashlib.sha256()
    _feed(h, value)
    return h.hexdigest()


def _fitted_attributes(est):
    """Every public fitted attribute (name ends in ``_``), including properties."""
    def wanted(k):
        return k.endswith("_") and not k.startswith("_") and not WALL_CLOCK.search(k)

    names = {k for k in vars(est) if wanted(k)}
    for klass in type(est).__mro__:
        for k, v in vars(klass).items():
            if isinstance(v, property) and wanted(k):
                names.add(k)
    out = {}
    for name in sorted(names):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out[name] = getattr(est, name)
        except Exception as exc:  # a property that does not apply to this fit
            out[name] = f"raises {type(exc).__name__}"
    return out


OUTPUT_METHODS = ("transform", "inverse_transform", "predict", "predict_proba",
                  "score_samples", "score")  # and ``sample(3, random_state=0)``


def fingerprint(est, rows, y_rows=None) -> dict:
    """SHA-256 of each fitted attribute of ``est`` and of its outputs on ``rows``."""
    record = {f"attr:{k}": _sha(v) for k, v in _fitted_attributes(est).items()}
    for method in OUTPUT_METHODS:
        if not hasattr(est, method):
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if method == "inverse_transform":
                    out = est.inverse_transform(est.transform(rows))
                elif method == "score" and y_rows is not None:
                    out = est.score(rows, y_rows)
                else:
                    out = getattr(est, method)(rows)
        except Exception as exc:
            out = f"raises {type(exc).__name__}"
        record[f"out:{method}"] = _sha(out)
    if hasattr(est, "sample"):
        try:
            out = est.sample(n_samples=3, random_state=0)
        except Exception as exc:
            out = f"raises {type(exc).__name__}"
        record["out:sample"] = _sha(out)
    return record


# --------------------------------------------------------------------------------------
# the data


def _data():
    from sklearn_ibp.datasets import make_block_images, make_paris_rome

    X, _, _ = make_block_images(n_samples=16, random_state=0)
    rows, _, _ = make_block_images(n_samples=4, random_state=1)
    binary = (X > 0.5).astype(float)
    binary_rows = (rows > 0.5).astype(float)
    missing = X.copy()
    missing[np.arange(16), (np.arange(16) * 7) % 36] = np.nan
    binary_missing = binary.copy()
    binary_missing[np.arange(16), (np.arange(16) * 5) % 36] = np.nan
    rows_missing = rows.copy()
    rows_missing[0, 3] = np.nan

    rng = np.random.RandomState(0)
    centres = np.array([[0.0, 0.0, 0.0, 0.0], [4.0, 4.0, 0.0, 0.0], [0.0, 4.0, 4.0, 4.0]])
    mixture = centres[np.arange(24) % 3] + rng.normal(size=(24, 4))
    mixture_rows = centres[np.arange(4) % 3] + rng.normal(size=(4, 4))

    pairs, choices, _ = make_paris_rome(4, random_state=0)
    return {
        "X": X, "rows": rows, "binary": binary, "binary_rows": binary_rows,
        "missing": missing, "binary_missing": binary_missing, "rows_missing": rows_missing,
        "mixture": mixture, "mixture_rows": mixture_rows,
        "pairs": pairs, "choices": choices,
    }


# --------------------------------------------------------------------------------------
# the fits: name -> callable(data) -> (estimator, X, y, rows, y_rows)

SMALL = dict(n_iter=6, burn_in=3, random_state=0)


def _half_distance_decay(distances):
    """A decay function given as a callable: ``1 / (1 + d / 2)``."""
    return 1.0 / (1.0 + 0.5 * distances)


def _solver_names(estimator_class) -> list[str]:
    """The solver names ``estimator_class(solver=...)`` accepts: the options of the
    ``StrOptions`` in its ``solver`` constraint (so no registry layout is assumed)."""
    names = set()
    for constraint in estimator_class._parameter_constraints.get("solver", []):
        names |= set(getattr(constraint, "options", ()))
    return sorted(names)


#: Where each model's solvers were registered by name before issue 21.
_REGISTRIES = {
    "ibp": ("SOLVERS", "EXPLICIT_SOLVERS", "VARIATIONAL_SOLVERS", "PARALLEL_SOLVERS"),
    "dp": ("DP_SOLVERS",),
    "hierarchy": (),
}


def _solver_class(model: str, name: str, class_name: str | None = None):
    """The solver class registered for ``model`` as ``name``: in the per-family
    registries of ``sklearn_ibp.solvers`` and ``sklearn_ibp.distributed``, else in a
    registry keyed by ``(model, name)``, else the public class ``class_name``."""
    import sklearn_ibp.distributed as distributed
    import sklearn_ibp.solvers as solvers

    for module in (solvers, distributed):
        for registry in _REGISTRIES[model]:
            found = getattr(module, registry, {}).get(name)
            if found is not None:
                return found
        for value in vars(module).values():
            if isinstance(value, dict) and (model, name) in value:
                return value[(model, name)]
    if class_name is not None and hasattr(solvers, class_name):
        return getattr(solvers, class_name)
    raise LookupError(f"no {model} solver registered as {name!r}")


def _fits():
    from sklearn_ibp import (
        DistanceDependentIBP,
        DPMixture,
        IBPFactorAnalysis,
        IBPImputer,
        InfiniteEBA,
        NoisyOrHierarchy,
    )

    def ibp_solver(name):
        return _solver_class("ibp", name)

    def dp_solver(name):
        return _solver_class("dp", name)

    def hierarchy_gibbs(**params):
        return _solver_class("hierarchy", "gibbs", "HierarchyGibbs")(**params)

    fits = {}

    def add(name, make):
        assert name not in fits, name
        fits[name] = make

    def fa(X="X", rows="rows", **params):
        return lambda d: (IBPFactorAnalysis(**{**SMALL, **params}), d[X], None, d[rows], None)

    likelihood_data = {"gaussian": ("X", "rows"), "exponential": ("X", "rows"),
                       "bernoulli": ("binary", "binary_rows")}
    # IBPFactorAnalysis: every solver of every registry with every likelihood (refusals
    # recorded), the real-weighted model, the two-parameter IBP, fixed hyperparameters.
    for solver in _solver_names(IBPFactorAnalysis):
        for likelihood, (X, rows) in likelihood_data.items():
            add(f"fa/{solver}/{likelihood}", fa(X, rows, solver=solver, likelihood=likelihood))
        add(f"fa/{solver}/gaussian/weights=gaussian", fa(solver=solver, weights="gaussian"))
    # the two-parameter IBP (the collapsed solvers serve it)
    for solver in ("accelerated", "collapsed", "uncollapsed", "semi_collapsed"):
        add(f"fa/{solver}/gaussian/beta=2", fa(solver=solver, beta=2.0))
    for solver in ("accelerated", "slice", "semi_ordered_slice"):
        add(f"fa/{solver}/gaussian/missing",
            fa("missing", "rows_missing", solver=solver))
        add(f"fa/{solver}/gaussian/fixed_hyper",
            fa(solver=solver, sample_hyperparameters=False, sigma_x=0.5, sigma_a=1.0,
               alpha=2.0))
        add(f"fa/{solver}/gaussian/chains=2,jobs=2",
            fa(solver=solver, n_chains=2, n_jobs=2))
    # more features than transform enumerates (12): its mean-field path, per likelihood
    many = dict(alpha=30.0, sample_hyperparameters=False)
    add("fa/accelerated/gaussian/many_features", fa(sigma_x=0.05, **many))
    add("fa/slice/gaussian/many_features", fa(solver="slice", sigma_x=0.05, **many))
    add("fa/slice/exponential/many_features",
        fa(solver="slice", likelihood="exponential", sigma_x=0.05, **many))
    add("fa/slice/bernoulli/many_features",
        fa("binary", "binary_rows", solver="slice", likelihood="bernoulli", **many))
    add("fa/accelerated/gaussian/max_features=3", fa(max_features=3))
    add("fa/accelerated/gaussian/thin=2", fa(thin=2, n_iter=8))
    add("fa/slice/bernoulli/missing",
        fa("binary_missing", "binary_rows", solver="slice", likelihood="bernoulli"))
    add("fa/semi_ordered_slice/exponential/missing",
        fa("missing", "rows_missing", solver="semi_ordered_slice", likelihood="exponential"))
    add("fa/parallel_accelerated/gaussian/missing",
        fa("missing", "rows_missing", solver="parallel_accelerated"))
    add("fa/parallel_noisy_or/bernoulli/missing",
        fa("binary_missing", "binary_rows", solver="parallel_noisy_or",
           likelihood="bernoulli"))

    # solver options that pick another code path
    def fa_solver(solver, params, likelihood="gaussian"):
        X, rows = likelihood_data[likelihood]
        return lambda d: (IBPFactorAnalysis(solver=ibp_solver(solver)(**params),
                                            likelihood=likelihood, **SMALL),
                          d[X], None, d[rows], None)

    options = [
        ("accelerated", {"window": 2}, "gaussian"),
        ("accelerated", {"complement": False, "split_merge": 0}, "gaussian"),
        ("collapsed", {"split_merge": 3}, "gaussian"),
        ("uncollapsed", {"split_merge": 3}, "gaussian"),
        ("semi_collapsed", {"split_merge": 3}, "gaussian"),
        ("semi_ordered_slice", {"unique_moves": "prior"}, "gaussian"),
        ("semi_ordered_slice", {"unique_moves": None}, "bernoulli"),
        ("metropolis", {"proposal": "data"}, "gaussian"),
        ("particle",
         {"resampling": "multinomial", "proposal": "prior", "init": "given"}, "gaussian"),
        ("tempering", {"solver": "slice"}, "gaussian"),
        ("map", {"birth": "shared", "parameters": "mode"}, "gaussian"),
        ("map", {"birth": "singleton"}, "exponential"),
        # (the Taylor bound is slow: a few seconds for 5 iterations on 16 rows)
        ("variational", {"bound": "taylor", "max_iter": 5,
                                              "max_features": 4}, "gaussian"),
        ("finite_variational",
         {"bound": "taylor", "update_hyperparameters": False, "tempering_iter": 5,
          "max_iter": 30, "n_init": 2},
         "gaussian"),
    ]
    for solver, params, likelihood in options:
        label = ",".join(f"{k}={v}" for k, v in params.items())
        add(f"fa/{solver}/{likelihood}/{label}", fa_solver(solver, params, likelihood))

    # warm starts: a second fit continues the chains of the first
    def warm(make):
        def make_warm(d):
            est, X, y, rows, y_rows = make(d)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est.set_params(warm_start=True)
                est.fit(X) if y is None else est.fit(X, y)
            return est, X, y, rows, y_rows
        return make_warm

    add("fa/accelerated/gaussian/warm_start", warm(fa()))
    add("fa/slice/gaussian/warm_start", warm(fa(solver="slice")))

    # parallel solvers with their options, on threads and (if installed) on Dask
    def accelerated(**params):
        return ibp_solver("parallel_accelerated")(**params)

    def noisy_or(**params):
        return ibp_solver("parallel_noisy_or")(**params)

    add("fa/parallel_accelerated/asynchronous",
        lambda d: (IBPFactorAnalysis(solver=accelerated(n_shards=3, mode="asynchronous"),
                                     **SMALL), d["X"], None, d["rows"], None))
    add("fa/parallel_accelerated/metropolis",
        lambda d: (IBPFactorAnalysis(solver=accelerated(correction="metropolis"), **SMALL),
                   d["X"], None, d["rows"], None))
    add("fa/parallel_accelerated/feature_subsample",
        lambda d: (IBPFactorAnalysis(solver=accelerated(feature_subsample=0.5,
                                                        sweeps_per_sync=2), **SMALL),
                   d["X"], None, d["rows"], None))
    add("fa/parallel_noisy_or/asynchronous",
        lambda d: (IBPFactorAnalysis(solver=noisy_or(n_shards=3, mode="asynchronous"),
                                     likelihood="bernoulli", **SMALL),
                   d["binary"], None, d["binary_rows"], None))
    if importlib.util.find_spec("distributed") is not None:
        add("fa/parallel_accelerated/dask",
            lambda d: (IBPFactorAnalysis(solver=accelerated(backend="dask", n_workers=2),
                                         **SMALL), d["X"], None, d["rows"], None))
        add("fa/parallel_noisy_or/dask",
            lambda d: (IBPFactorAnalysis(solver=noisy_or(backend="dask", n_workers=2),
                                         likelihood="bernoulli", **SMALL),
                       d["binary"], None, d["binary_rows"], None))

    # IBPImputer
    def imputer(**params):
        def make(d):
            inner = IBPFactorAnalysis(**SMALL)
            return (IBPImputer(inner, n_samples=3, random_state=0, **params),
                    d["missing"], None, d["rows_missing"], None)
        return make

    add("imputer/default", imputer())
    add("imputer/sample_posterior", imputer(sample_posterior=True))
    add("imputer/noise=model", imputer(noise="model"))
    add("imputer/add_indicator", imputer(add_indicator=True))
    add("imputer/estimator=None",
        lambda d: (IBPImputer(n_samples=3, random_state=0), d["missing"], None,
                   d["rows_missing"], None))
    add("imputer/ddibp",
        lambda d: (IBPImputer(DistanceDependentIBP(**SMALL), n_samples=3, random_state=0),
                   d["missing"], None, d["rows_missing"], None))
    add("imputer/hierarchy",
        lambda d: (IBPImputer(NoisyOrHierarchy(init_iter=2, **SMALL), n_samples=3,
                              random_state=0),
                   d["binary_missing"], None, d["binary_rows"], None))
    add("imputer/slice",
        lambda d: (IBPImputer(IBPFactorAnalysis(solver="slice", **SMALL), n_samples=3,
                              random_state=0), d["missing"], None, d["rows_missing"], None))

    # DistanceDependentIBP
    def ddibp(X="X", rows="rows", **params):
        return lambda d: (DistanceDependentIBP(**{**SMALL, **params}), d[X], None, d[rows],
                          None)

    add("ddibp/exponential", ddibp())
    add("ddibp/logistic", ddibp(decay_function="logistic", decay=1.0, nu=3.0))
    add("ddibp/window", ddibp(decay_function="window", nu=3.0))
    add("ddibp/constant", ddibp(decay_function="constant"))
    add("ddibp/constant/sequential", ddibp(decay_function="constant", sequential=True))
    add("ddibp/covariates", ddibp(covariate_columns=[0, 1], decay=0.5))
    add("ddibp/callable", ddibp(decay_function=_half_distance_decay))
    add("ddibp/manhattan", ddibp(covariate_columns=[0, 1, 2], metric="manhattan"))
    add("ddibp/missing", ddibp("missing", "rows_missing"))
    add("ddibp/chains=2,jobs=2", ddibp(n_chains=2, n_jobs=2))
    add("ddibp/warm_start", warm(ddibp()))
    add("ddibp/many_features", ddibp(alpha=30.0, sigma_x=0.05, sample_hyperparameters=False))
    add("ddibp/fixed_hyper", ddibp(sample_hyperparameters=False, sigma_x=0.5, sigma_a=1.0))

    # DPMixture: every solver, both bases, both components
    def dp(**params):
        return lambda d: (DPMixture(**{**SMALL, **params}), d["mixture"], None,
                          d["mixture_rows"], None)

    for base in ("conjugate", "conditionally_conjugate"):
        for solver in _solver_names(DPMixture):
            add(f"dp/{base}/{solver}", dp(base=base, solver=solver))
    for solver in _solver_names(DPMixture):
        add(f"dp/factor_analyzer/{solver}",
            dp(component="factor_analyzer", n_factors=2, solver=solver))
    add("dp/conjugate/chains=2,jobs=2", dp(base="conjugate", n_chains=2, n_jobs=2))
    add("dp/conjugate/init=kmeans", dp(base="conjugate", init="kmeans"))
    add("dp/conjugate/binder", dp(base="conjugate", point_estimate="binder"))
    add("dp/conjugate/best_sample", dp(base="conjugate", point_estimate="best_sample"))
    add("dp/conjugate/fixed_alpha", dp(base="conjugate", sample_hyperparameters=False))
    add("dp/conjugate/warm_start", warm(dp(base="conjugate")))
    dp_options = [
        ("collapsed", {"scan_order": "random", "use_kernels": False}),
        ("split_merge", {"launch": "random", "scan_order": "random"}),
        ("split_merge", {"use_kernels": False}),
        ("auxiliary", {"scheme": "s", "n_auxiliary": 2}),
        ("auxiliary", {"scheme": "mu"}),
        ("metropolis", {"n_metropolis": 2}),
        ("slice", {"label_switching": False}),
        ("truncated", {"label_switching": False, "truncation": 10}),
        ("retrospective", {"label_switching": False}),
    ]
    for solver, params in dp_options:
        label = ",".join(f"{k}={v}" for k, v in params.items())
        for base in ("conjugate", "conditionally_conjugate"):
            add(f"dp/{base}/{solver}/{label}",
                lambda d, solver=solver, params=params, base=base: (
                    DPMixture(base=base, solver=dp_solver(solver)(**params), **SMALL),
                    d["mixture"], None, d["mixture_rows"], None))

    # NoisyOrHierarchy: both uppers, both links, every likelihood
    def hierarchy(X="binary", rows="binary_rows", solver_params=None, **params):
        def make(d):
            kwargs = {**SMALL, "init_iter": 2, **params}
            if solver_params is not None:
                kwargs["solver"] = hierarchy_gibbs(**solver_params)
            return NoisyOrHierarchy(**kwargs), d[X], None, d[rows], None
        return make

    for upper in ("ibp", "dp"):
        for link in ("noisy_or", "or"):
            for likelihood in ("auto", "bernoulli"):
                add(f"hierarchy/{upper}/{link}/{likelihood}",
                    hierarchy(upper=upper, link=link, likelihood=likelihood))
            for likelihood in ("gaussian", "exponential"):
                add(f"hierarchy/{upper}/{link}/{likelihood}",
                    hierarchy("X", "rows", upper=upper, link=link, likelihood=likelihood))
    add("hierarchy/ibp/noisy_or/missing", hierarchy("binary_missing"))
    add("hierarchy/chains=2,jobs=2", hierarchy(n_chains=2, n_jobs=2))
    add("hierarchy/fixed_hyper", hierarchy(sample_hyperparameters=False))
    add("hierarchy/warm_start", warm(hierarchy()))
    add("hierarchy/no_extra_moves",
        hierarchy(solver_params=dict(transfer_moves=False, merge_split_moves=False)))
    add("hierarchy/dp/noisy_or/small_moves",
        hierarchy(upper="dp", solver_params=dict(n_auxiliary=1, max_new_features=2,
                                                  max_new_categories=2)))

    # InfiniteEBA
    def eba(**params):
        return lambda d: (InfiniteEBA(**{"n_iter": 30, "burn_in": 10, "random_state": 0,
                                         **params}),
                          d["pairs"], d["choices"], d["pairs"][:6], d["choices"][:6])

    add("eba/default", eba())
    add("eba/no_unique_aspects", eba(unique_aspects=False))
    add("eba/fixed_alpha", eba(sample_alpha=False, weight_shape=1.0))
    add("eba/chains=2,jobs=2", eba(n_chains=2, n_jobs=2))
    add("eba/warm_start", warm(eba()))
    return fits


# --------------------------------------------------------------------------------------
# running and comparing


def run(only=None, timings=None) -> dict:
    data = _data()
    results = {}
    for name, make in _fits().items():
        if only and not any(s.lower() in name.lower() for s in only):
            continue
        tic = time.perf_counter()
        results[name] = _run_one(make, data)
        if timings is not None:
            timings[name] = time.perf_counter() - tic
    return results


def _run_one(make, data) -> dict:
    try:
        est, X, y, rows, y_rows = make(data)
    except LookupError as exc:  # a solver this script cannot find: adapt _solver_class
        return {"error": f"cannot build the fit: {exc}"}
    X_before = X.copy()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X) if y is None else est.fit(X, y)
    except (ValueError, TypeError) as exc:
        return {"refused": type(exc).__name__}
    if not np.array_equal(X, X_before, equal_nan=True):
        return {"error": "fit modified its input"}
    return fingerprint(est, rows, y_rows)


def compare(reference: dict, current: dict) -> tuple[list[str], list[str]]:
    """``(problems, new)``: what differs from the reference or is missing now, and the
    fits the reference does not have (a solver or option added since; not a failure)."""
    problems, new = [], []
    for name in sorted(set(reference) | set(current)):
        if name not in current:
            problems.append(f"{name}: in the reference, not run now")
            continue
        if name not in reference:
            new.append(f"{name}: new fit, not in the reference")
            continue
        ref, cur = reference[name], current[name]
        for key in sorted(set(ref) | set(cur)):
            if ref.get(key) != cur.get(key):
                what = ("missing now" if key not in cur else
                        "new" if key not in ref else "differs")
                problems.append(f"{name}: {key} {what}"
                                + (f" ({ref.get(key)} -> {cur.get(key)})"
                                   if key in ("refused", "error") else ""))
    return problems, new


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", metavar="PATH", help="write the fingerprints to PATH")
    group.add_argument("--check", metavar="PATH", help="compare with the fingerprints in PATH")
    group.add_argument("--list", action="store_true", help="print the fit names")
    parser.add_argument("--only", metavar="SUBSTRING", action="append",
                        help="run only the fits whose name contains SUBSTRING, case ignored "
                             "(repeatable)")
    args = parser.parse_args(argv)

    if args.list:
        print("\n".join(_fits()))
        return 0
    start = time.perf_counter()
    timings = {}
    current = run(args.only, timings)
    elapsed = time.perf_counter() - start
    n_refused = sum("refused" in r for r in current.values())
    print(f"{len(current)} fits ({len(current) - n_refused} fitted, {n_refused} refused) "
          f"in {elapsed:.1f} s; slowest: "
          + ", ".join(f"{name} {timings[name]:.1f} s"
                      for name in sorted(timings, key=timings.get)[::-1][:5]))
    errors = [name for name, r in current.items() if "error" in r]
    for name in errors:
        print(f"ERROR {name}: {current[name]['error']}")
    if args.write:
        with open(args.write, "w") as f:
            json.dump(current, f, indent=1, sort_keys=True)
        print(f"wrote {args.write}")
        return 1 if errors else 0
    with open(args.check) as f:
        reference = json.load(f)
    if args.only:
        reference = {k: v for k, v in reference.items()
                     if any(s.lower() in k.lower() for s in args.only)}
    problems, new = compare(reference, current)
    if new:
        print(f"{len(new)} fits not in the reference (not compared):")
        print("\n".join(new))
    if problems:
        print(f"{len(problems)} differences:")
        print("\n".join(problems))
        return 1
    print(f"all {len(current) - len(new)} fingerprints in the reference match {args.check}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
