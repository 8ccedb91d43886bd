"""CPU seconds of a first default fit of each estimator, with an empty and a warm numba cache.

Each measurement runs in a fresh Python process: it imports ``sklearn_ibp`` and fits one
estimator with its default parameters on a small data set the package makes (``random_state``
fixed), and reports its own CPU time (user + system, ``time.process_time``) for the import
and for the fit. "Cold" gives the process an empty ``NUMBA_CACHE_DIR``, as a new user has;
"warm" repeats the fit with the cache that the cold run wrote. The baseline is the warm run
in the same conditions: the ratio cold / warm is what compiling costs a new user. Medians of
``--repeats`` runs (3 by default); ``--only NAME`` runs one estimator.

    python benchmarks/bench_startup.py            # about 5 minutes on 2 cores
    python benchmarks/bench_startup.py --repeats 1 --only IBPFactorAnalysis
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

#: What each child process runs: data made by the package, a default fit.
FITS = {
    "IBPFactorAnalysis": (
        "from sklearn_ibp.datasets import make_block_images\n"
        "X = make_block_images(n_samples=200, random_state=0)[0]\n"
        "from sklearn_ibp import IBPFactorAnalysis as E\n"
        "fit = lambda: E(random_state=0).fit(X)\n"
    ),
    "IBPImputer": (
        "import numpy as np\n"
        "from sklearn_ibp.datasets import make_block_images\n"
        "X = make_block_images(n_samples=200, random_state=0)[0]\n"
        "X[np.random.default_rng(0).random(X.shape) < 0.1] = np.nan\n"
        "from sklearn_ibp import IBPImputer as E\n"
        "fit = lambda: E(random_state=0).fit(X)\n"
    ),
    "DistanceDependentIBP": (
        "from sklearn_ibp.datasets import make_block_image_sequence\n"
        "X = make_block_image_sequence(n_samples=100, random_state=0)[0]\n"
        "from sklearn_ibp import DistanceDependentIBP as E\n"
        "fit = lambda: E(random_state=0).fit(X)\n"
    ),
    "DPMixture": (
        "from sklearn.datasets import make_blobs\n"
        "X = make_blobs(n_samples=300, centers=4, random_state=0)[0]\n"
        "from sklearn_ibp import DPMixture as E\n"
        "fit = lambda: E(random_state=0).fit(X)\n"
    ),
    "NoisyOrHierarchy": (
        "from sklearn_ibp.datasets import make_correlated_block_images\n"
        "X = (make_correlated_block_images(n_samples=200, random_state=0)[0] > 0.5) * 1.0\n"
        "from sklearn_ibp import NoisyOrHierarchy as E\n"
        "fit = lambda: E(random_state=0).fit(X)\n"
    ),
    "InfiniteEBA": (
        "from sklearn_ibp.datasets import make_paris_rome\n"
        "X, y, _ = make_paris_rome(n_comparisons=50, random_state=0)\n"
        "from sklearn_ibp import InfiniteEBA as E\n"
        "fit = lambda: E(random_state=0).fit(X, y)\n"
    ),
}

CHILD = """
import json, time, warnings
warnings.simplefilter("ignore")
t0 = time.process_time()
import sklearn_ibp
t_import = time.process_time() - t0
{setup}
t1 = time.process_time()
fit()
t_fit = time.process_time() - t1
print(json.dumps({{"import": t_import, "fit": t_fit}}))
"""


def run_child(name, cache_dir):
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    code = CHILD.format(setup=FITS[name])
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(name, repeats):
    cold, warm = [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(prefix="numba-cache-") as cache_dir:
            cold.append(run_child(name, cache_dir))
            warm.append(run_child(name, cache_dir))
    med = lambda runs, key: statistics.median(r[key] for r in runs)  # noqa: E731
    return {"import": med(warm, "import"), "cold_fit": med(cold, "fit"),
            "warm_fit": med(warm, "fit"), "cold_import": med(cold, "import")}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", choices=sorted(FITS), default=None)
    args = parser.parse_args(argv)
    names = [args.only] if args.only else list(FITS)
    print("| estimator | import (s) | cold fit (s) | warm fit (s) | cold / warm "
          "| cold import + fit (s) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name in names:
        r = measure(name, args.repeats)
        total = r["cold_import"] + r["cold_fit"]
        print(f"| {name} | {r['import']:.2f} | {r['cold_fit']:.2f} | {r['warm_fit']:.2f} "
              f"| {r['cold_fit'] / r['warm_fit']:.1f} | {total:.2f} |", flush=True)


if __name__ == "__main__":
    main()
