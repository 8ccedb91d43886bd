"""The EBA solver's Python stick breaking is the stick-breaking kernel, bit for bit."""

import numpy as np
import pytest

from sklearn_ibp.likelihoods._observation_kernels import PRIOR_EXPONENTIAL
from sklearn_ibp.solvers.eba._sticks import extend_empty_sticks
from sklearn_ibp.solvers.ibp_explicit._slice_kernels import extend_sticks


def _arrays(N, cap, K, rng):
    Z = np.zeros((N, cap), dtype=np.int8)
    Z[:, :K] = rng.random((N, K)) < 0.5
    W = np.zeros((cap, 1))
    W[:K, 0] = rng.exponential(size=K)
    counts = np.zeros(cap, dtype=np.int64)
    counts[:K] = Z[:, :K].sum(axis=0)
    sticks = np.zeros(cap)
    sticks[:K] = np.sort(rng.random(K))[::-1]
    return Z, W, counts, sticks


@pytest.mark.parametrize("seed", range(12))
def test_extend_empty_sticks_is_the_kernel(seed):
    rng = np.random.default_rng(seed)
    N = int(rng.integers(1, 40))
    cap = int(rng.integers(3, 12))
    K = int(rng.integers(0, 3))
    alpha = float(rng.choice([0.05, 0.7, 3.0, 25.0]))
    level = float(rng.choice([1e-6, 1e-3, 0.05, 0.4]))
    # chain_start below K: the empty aspects continue from the last stick; at K: from 1
    chain_start = int(rng.integers(0, K + 1))
    kernel = _arrays(N, cap, K, np.random.default_rng(100 + seed))
    python = _arrays(N, cap, K, np.random.default_rng(100 + seed))
    rng_k = np.random.default_rng(seed)
    rng_p = np.random.default_rng(seed)
    total_k, done_k = extend_sticks(*kernel, K, chain_start, level, alpha, PRIOR_EXPONENTIAL,
                                    np.array([1.0]), rng_k)
    total_p, done_p = extend_empty_sticks(*python, K, chain_start, level, alpha, rng_p)
    assert (total_k, bool(done_k)) == (total_p, done_p)
    for a, b in zip(kernel, python, strict=True):
        np.testing.assert_array_equal(a, b)
    # the generators were used alike: the next draw is the same
    assert rng_k.random() == rng_p.random()
