"""Small data sets shared by the tests of every folder (estimators, base, solvers, distributed)."""

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from sklearn_ibp.datasets import make_block_images


@pytest.fixture(scope="session", autouse=True)
def single_threaded_blas():
    """One BLAS and one OpenMP thread per test process for the whole run, as the
    estimators use BLAS while sampling (the README's test command runs two pytest-xdist
    workers, one a core, so more threads per process only oversubscribe the cores).

    Tests that drive a solver directly would otherwise call OpenBLAS with every core on
    tiny matrices; on a shared, busy two-core machine that made some of them ten times
    slower. The OpenMP pool is scikit-learn's (KMeans, which starts DPMixture's chains):
    with two threads a DPMixture fit of 30 rows took 50 ms CPU instead of 22, on a busy
    two-core machine. numba's own thread pool (its ``omp`` layer) is loaded later and is
    not limited here; the solvers set its thread count themselves.
    """
    with threadpool_limits(limits=1, user_api="blas"), \
            threadpool_limits(limits=1, user_api="openmp"):
        yield


@pytest.fixture(scope="session")
def block_data():
    """60 noisy block images (36 pixels, four true features); read-only to catch writes."""
    X, _, _ = make_block_images(n_samples=60, random_state=0)
    X.setflags(write=False)
    return X


@pytest.fixture(scope="session")
def small_data():
    """A tiny Gaussian matrix (30 x 5) for loop tests where only the machinery matters."""
    X = np.random.default_rng(0).standard_normal((30, 5))
    X.setflags(write=False)
    return X
