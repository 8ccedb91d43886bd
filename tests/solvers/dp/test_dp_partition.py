"""The posterior point estimate of a partition (Wade and Ghahramani 2018).

The expected loss, computed from contingency tables, is checked against the
plain-NumPy reference ``expected_partition_loss``; the greedy search is checked to end in
a local minimum of that reference (no single-row move lowers it), to do at least as well
as every kept sample, and to return the partition itself when every sample agrees.
"""

import math

import numpy as np
import pytest

from sklearn_ibp.solvers.dp._dp_base import relabel
from sklearn_ibp.solvers.dp._dp_partition import (
    expected_partition_loss,
    fill_tables,
    loss_table,
    partition_loss,
    partition_point_estimate,
    sample_losses,
)


def _noisy_samples(seed, n_rows=60, n_samples=25):
    """Partitions scattered around four groups: rows relabelled at random, and every
    third sample with two groups merged."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 4, n_rows)
    samples = []
    for s in range(n_samples):
        labels = truth.copy()
        flip = rng.random(n_rows) < 0.15
        labels[flip] = rng.integers(0, 6, int(flip.sum()))
        if s % 3 == 0:
            labels[labels == 1] = 0
        samples.append(labels)
    return truth, samples


@pytest.mark.parametrize("loss", ["vi", "binder"])
def test_kernel_loss_matches_reference(loss):
    truth, samples = _noisy_samples(0)
    stacked = np.array([relabel(s)[0] for s in samples], dtype=np.int64)
    N = truth.size
    J = np.int64(stacked.max() + 1)
    g = loss_table(np.int64(N), np.bool_(loss == "binder"))
    rng = np.random.default_rng(1)
    values, refs = [], []
    for labels in (truth, samples[3], rng.integers(0, 7, N), np.zeros(N, dtype=np.int64)):
        labels = relabel(labels)[0].astype(np.int64)
        sizes, tables = fill_tables(stacked, labels, np.int64(labels.max() + 1), J)
        values.append(partition_loss(sizes, tables, g))
        refs.append(expected_partition_loss(labels, samples, loss))
    # f differs from the expected loss by a constant and a factor (N for VI, 2 for Binder)
    scale = N if loss == "vi" else 2.0
    np.testing.assert_allclose(np.diff(values), scale * np.diff(refs), rtol=1e-10,
                               atol=1e-8)


@pytest.mark.parametrize("loss", ["vi", "binder"])
def test_point_estimate_is_a_local_minimum_and_beats_every_sample(loss):
    _, samples = _noisy_samples(2)
    labels, nearest = partition_point_estimate(samples, loss=loss)
    best = expected_partition_loss(labels, samples, loss)
    losses = [expected_partition_loss(s, samples, loss) for s in samples]
    assert best <= min(losses) + 1e-12
    assert 0 <= nearest < len(samples)
    # no single row moved to another cluster or a cluster of its own does better
    K = labels.max() + 1
    for i in range(labels.size):
        for target in range(K + 1):
            if target == labels[i]:
                continue
            moved = labels.copy()
            moved[i] = target
            assert expected_partition_loss(moved, samples, loss) >= best - 1e-9


def test_agreeing_samples_give_their_partition_and_labels_are_compact():
    labels = np.array([5, 5, 2, 2, 2, 9, 9, 5])
    estimate, nearest = partition_point_estimate([labels] * 4)
    np.testing.assert_array_equal(estimate, relabel(labels)[0])
    assert nearest == 0
    assert estimate.dtype == np.int64


def test_vi_reports_a_group_that_half_the_samples_split():
    # half the samples split group 0 into two halves at random: VI reports the group
    truth, _ = _noisy_samples(3, n_samples=1)
    rng = np.random.default_rng(4)
    samples = []
    for s in range(20):
        labels = truth.copy()
        if s % 2 == 0:
            rows = np.flatnonzero(truth == 0)
            labels[rng.choice(rows, rows.size // 2, replace=False)] = 7
        samples.append(labels)
    estimate, _ = partition_point_estimate(samples, loss="vi")
    assert estimate.max() + 1 == 4


def test_bad_loss_and_samples_are_refused():
    with pytest.raises(ValueError, match="loss"):
        partition_point_estimate([np.zeros(3, dtype=int)], loss="l2")
    with pytest.raises(ValueError, match="same number of rows"):
        partition_point_estimate([np.zeros(3, dtype=int), np.zeros(4, dtype=int)])
    with pytest.raises(ValueError, match="at least one"):
        partition_point_estimate([])


def test_numpy_tables_and_losses_match_scalar_loops_bit_for_bit():
    """The tables and losses are NumPy with left-to-right sums: they equal the scalar
    loops (the former kernels) exactly, so the point estimate did not change."""
    samples = np.array([relabel(s)[0] for s in _noisy_samples(3)[1]], dtype=np.int64)
    S, N = samples.shape
    J = int(samples.max()) + 1
    labels = samples[4].copy()
    K = int(labels.max()) + 3
    for binder in (False, True):
        g = loss_table(N, binder)
        ref_g = [0.0] + [x * x if binder else x * math.log(x)
                         for x in map(float, range(1, N + 1))]
        assert g.tolist() == ref_g
        sizes, tables = fill_tables(samples, labels, K, J)
        ref_sizes = np.zeros(K, dtype=np.int64)
        ref_tables = np.zeros((K, S, J), dtype=np.int64)
        for i in range(N):
            ref_sizes[labels[i]] += 1
            for s in range(S):
                ref_tables[labels[i], s, samples[s, i]] += 1
        assert np.array_equal(sizes, ref_sizes) and np.array_equal(tables, ref_tables)
        total = 0.0
        for a in range(K):
            total += g[sizes[a]]
        cross = 0.0
        for a in range(K):
            if sizes[a]:
                for s in range(S):
                    for j in range(J):
                        cross += g[tables[a, s, j]]
        assert partition_loss(sizes, tables, g) == total - 2.0 * cross / S
        losses = sample_losses(samples, labels, K, J, g)
        for s in range(S):
            value = total
            for j in range(J):
                value += g[np.sum(samples[s] == j)]
            for a in range(K):
                for j in range(J):
                    value -= 2.0 * g[tables[a, s, j]]
            assert losses[s] == value
