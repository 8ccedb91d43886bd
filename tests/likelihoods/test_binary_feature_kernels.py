"""The Gibbs sweep the binary-feature likelihoods share (``sweep_bernoulli_features``)
against a plain-Python reference, and its gather-free path for one-row gain tables
against the general path. Fixed seeds; the comparisons are exact."""

import math

import numpy as np
import pytest

from sklearn_ibp.likelihoods._binary_feature_kernels import sweep_bernoulli_features
from sklearn_ibp.likelihoods._noisy_or_kernels import detection_gain_tables


def problem(seed, n=30, k=5, d=7):
    rng = np.random.default_rng(seed)
    Z = (rng.random((n, k)) < 0.5).astype(np.int8)
    A = (rng.random((k, d)) < 0.5).astype(float)
    X = (rng.random((n, d)) < 0.5).astype(float)
    observed = (rng.random((n, d)) > 0.2).astype(np.uint8)
    ptr = np.concatenate([[0], np.cumsum(Z.sum(axis=0))]).astype(np.int64)
    rows = np.concatenate([np.flatnonzero(Z[:, j]) for j in range(k)]).astype(np.int64)
    return Z, A, X, observed, ptr, rows


def reference_sweep(A, Z, X, observed, gain_one, gain_zero, p_a, rng):
    """The sweep written plainly: features in order, one uniform per dimension."""
    A = A.copy()
    for k in range(A.shape[0]):
        counts = (Z @ A).astype(np.int64)
        log_odds = np.full(A.shape[1], math.log(p_a) - math.log1p(-p_a))
        for n in np.flatnonzero(Z[:, k]):
            for d in range(A.shape[1]):
                others = counts[n, d] - int(A[k, d] > 0.5)
                if observed[n, d] and others < gain_one.shape[0]:
                    table = gain_one if X[n, d] > 0.5 else gain_zero
                    log_odds[d] += table[others, d]
        for d in range(A.shape[1]):
            u = log_odds[d]
            p_one = 1.0 / (1.0 + math.exp(-u)) if u >= 0.0 else math.exp(u) / (1.0 + math.exp(u))
            A[k, d] = 1.0 if rng.random() < p_one else 0.0
    return A


@pytest.mark.parametrize("n_tabulated", [1, 3, 5])
def test_sweep_matches_the_reference(n_tabulated):
    Z, A, X, observed, ptr, rows = problem(0)
    gains = np.random.default_rng(1).normal(scale=2.0, size=(2, n_tabulated, A.shape[1]))
    kernel_rng, reference_rng = np.random.default_rng(5), np.random.default_rng(5)
    reference = A.copy()
    counts = (Z @ A).astype(np.int64)
    moved = 0
    for _ in range(10):
        before = A.copy()
        sweep_bernoulli_features(A, counts, X, observed, ptr, rows, gains[0], gains[1], 0.4,
                                 kernel_rng)
        reference = reference_sweep(reference, Z, X, observed, gains[0], gains[1], 0.4,
                                    reference_rng)
        np.testing.assert_array_equal(A, reference)
        np.testing.assert_array_equal(counts, (Z @ A).astype(np.int64))
        moved += int(np.sum(before != A))
    assert moved > 10  # the comparison saw many moves


def test_one_row_tables_give_the_draws_of_zero_padded_tables():
    # The gather-free path (one tabulated count) and the general path agree exactly.
    Z, A, X, observed, ptr, rows = problem(2, n=40, k=6, d=9)
    noise = np.array([np.full(9, 0.15), np.full(9, 0.25)])
    gain_one, gain_zero = detection_gain_tables(noise)
    padded = [np.vstack([g, np.zeros((5, 9))]) for g in (gain_one, gain_zero)]
    A_fast, A_general = A.copy(), A.copy()
    counts_fast, counts_general = (Z @ A).astype(np.int64), (Z @ A).astype(np.int64)
    rng_fast, rng_general = np.random.default_rng(3), np.random.default_rng(3)
    for _ in range(10):
        sweep_bernoulli_features(A_fast, counts_fast, X, observed, ptr, rows, gain_one,
                                 gain_zero, 0.5, rng_fast)
        sweep_bernoulli_features(A_general, counts_general, X, observed, ptr, rows, *padded,
                                 0.5, rng_general)
    np.testing.assert_array_equal(A_fast, A_general)
    np.testing.assert_array_equal(counts_fast, counts_general)


def test_detection_sweep_gives_the_draws_of_the_shared_sweep_with_its_tables():
    # sweep_binary_features is sweep_bernoulli_features with detection_gain_tables written
    # out in one kernel (it compiles less): the same draws, bit for bit.
    from sklearn_ibp.likelihoods._noisy_or_kernels import sweep_binary_features

    Z, A, X, observed, ptr, rows = problem(4, n=40, k=6, d=9)
    noise = np.array([np.linspace(0.05, 0.3, 9), np.linspace(0.4, 0.1, 9)])
    A_one, A_shared = A.copy(), A.copy()
    counts_one, counts_shared = (Z @ A).astype(np.int64), (Z @ A).astype(np.int64)
    rng_one, rng_shared = np.random.default_rng(7), np.random.default_rng(7)
    moved = 0
    for _ in range(10):
        before = A_one.copy()
        sweep_binary_features(A_one, counts_one, X, observed, ptr, rows, noise, 0.3, rng_one)
        sweep_bernoulli_features(A_shared, counts_shared, X, observed, ptr, rows,
                                 *detection_gain_tables(noise), 0.3, rng_shared)
        np.testing.assert_array_equal(A_one, A_shared)
        np.testing.assert_array_equal(counts_one, counts_shared)
        np.testing.assert_array_equal(counts_one, (Z @ A_one).astype(np.int64))
        moved += int(np.sum(before != A_one))
    assert moved > 10  # the comparison saw many moves
