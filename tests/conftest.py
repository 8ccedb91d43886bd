"""Small data sets shared by the tests of every folder (estimators, base, solvers, distributed)."""

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from sklearn_ibp.datasets import make_block_images


@pytest.fixture(scope="session", autouse=True)
def single_threaded_blas():
    """One BLAS thread for the whole run, as the estimators use while sampling.

    Tests that drive a solver directly would otherwise call OpenBLAS with every core on
    tiny matrices; on a shared, busy two-core machine that made some of them ten times
    slower.
    """
    with threadpool_limits(limits=1, user_api="blas"):
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
