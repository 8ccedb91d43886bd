"""Posterior point estimate of a DP mixture's partition (Wade and Ghahramani 2018).

The kept samples of a chain are draws of the partition; a single clustering to report is
the one that minimises the posterior expected loss, here estimated over the kept
samples: the variation of information (Meila 2007), which Wade and Ghahramani (2018,
"Bayesian cluster analysis: point estimation and credible balls", sec. 3-4) recommend
over Binder's loss because it does not favour splitting clusters into many small ones,
or Binder's loss (Binder 1978). The search starts from the kept samples with the lowest
expected loss and moves greedily (:mod:`sklearn_ibp.solvers.dp._dp_partition_kernels`).

Cost: with ``N`` rows, ``S`` kept samples and ``K`` clusters, memory is the ``(S, N)``
labels and ``S K J`` table cells (``J`` the most clusters of a sample); a pass of row moves
costs ``O(N K S)`` and scoring a start ``O(N S)``. Never the ``N x N`` co-assignment
matrix.
"""

from __future__ import annotations

import numpy as np

from ._dp_base import relabel
from ._dp_partition_kernels import (
    fill_tables,
    greedy_partition_search,
    loss_table,
    partition_loss,
    sample_losses,
)

__all__ = ["expected_partition_loss", "partition_point_estimate"]

#: Empty cluster slots a search may open, beyond the start's clusters.
_EXTRA_SLOTS = 16


def _stack(samples):
    samples = [relabel(np.asarray(s, dtype=np.int64))[0] for s in samples]
    if not samples:
        raise ValueError("samples must hold at least one partition.")
    n = samples[0].size
    if any(s.size != n for s in samples):
        raise ValueError("every sample must label the same number of rows.")
    return np.ascontiguousarray(np.array(samples, dtype=np.int64))


def expected_partition_loss(labels, samples, loss="vi"):
    """Monte Carlo posterior expected loss of the partition ``labels`` (a NumPy reference
    of what the kernels compute).

    Parameters
    ----------
    labels : array-like of shape (n_samples,)
    samples : sequence of array-like of shape (n_samples,)
        The kept partitions.
    loss : {"vi", "binder"}
        ``"vi"``: the mean variation of information (nats); ``"binder"``: the mean number
        of pairs of rows on which ``labels`` and a sample disagree.

    Returns
    -------
    float
    """
    labels = relabel(np.asarray(labels, dtype=np.int64))[0]
    samples = _stack(samples)
    N = labels.size
    out = 0.0
    for sample in samples:
        table = np.zeros((labels.max() + 1, sample.max() + 1))
        np.add.at(table, (labels, sample), 1.0)
        if loss == "vi":
            g = lambda x: np.where(x > 0, x * np.log(np.maximum(x, 1.0)), 0.0)  # noqa: E731
        else:
            g = lambda x: x * x  # noqa: E731
        value = g(table.sum(1)).sum() + g(table.sum(0)).sum() - 2.0 * g(table).sum()
        out += value / N if loss == "vi" else value / 2.0
    return out / samples.shape[0]


def partition_point_estimate(samples, loss="vi", n_starts=3, max_candidates=20,
                             max_passes=100):
    """The partition that minimises the expected ``loss`` over the kept ``samples``.

    Parameters
    ----------
    samples : sequence of array-like of shape (n_samples,)
        Kept partitions (any integer labels).
    loss : {"vi", "binder"}, default="vi"
    n_starts : int, default=3
        Greedy searches run, from the kept samples with the lowest expected loss.
    max_candidates : int, default=20
        Kept samples scored as starts (evenly spaced over ``samples``).
    max_passes : int, default=100
        Passes of row moves and merges per search at most.

    Returns
    -------
    labels : ndarray of shape (n_samples,), int64
        ``0 .. K - 1`` in order of first appearance.
    nearest : int
        Index of the kept sample closest to ``labels`` in the loss.
    """
    if loss not in ("vi", "binder"):
        raise ValueError(f"loss must be 'vi' or 'binder'; got {loss!r}.")
    samples = _stack(samples)
    S, N = samples.shape
    J = int(samples.max()) + 1
    g = loss_table(np.int64(N), np.bool_(loss == "binder"))
    index = np.unique(np.linspace(0, S - 1, min(S, max_candidates)).round().astype(int))
    scored = []
    for s in index:
        start = samples[s].copy()
        sizes, tables = fill_tables(samples, start, np.int64(J), np.int64(J))
        scored.append((partition_loss(sizes, tables, g), int(s)))
    scored.sort()
    best_value, best = np.inf, None
    for _, s in scored[:n_starts]:
        labels = samples[s].copy()
        capacity = np.int64(labels.max() + 1 + _EXTRA_SLOTS)
        value = greedy_partition_search(samples, labels, capacity, np.int64(J), g,
                                        np.int64(max_passes))
        if value < best_value:
            best_value, best = value, labels
    best = relabel(best)[0].astype(np.int64)
    losses = sample_losses(samples, best, np.int64(best.max() + 1), np.int64(J), g)
    return best, int(np.argmin(losses))
