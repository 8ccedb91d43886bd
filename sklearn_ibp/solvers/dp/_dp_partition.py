"""Posterior point estimate of a DP mixture's partition (Wade and Ghahramani 2018).

The kept samples of a chain are draws of the partition; a single clustering to report is
the one that minimises the posterior expected loss, here estimated over the kept
samples: the variation of information (Meila 2007), which Wade and Ghahramani (2018,
"Bayesian cluster analysis: point estimation and credible balls", sec. 3-4) recommend
over Binder's loss because it does not favour splitting clusters into many small ones,
or Binder's loss (Binder 1978). The search starts from the kept samples with the lowest
expected loss and moves greedily. The algebra is in
:mod:`sklearn_ibp.solvers.dp._dp_partition_kernels`, whose one kernel makes the search; the
tables, ``g`` and the losses, computed a few times per fit, are NumPy here (sums taken left
to right as a loop takes them), which saves compiling them.

Cost: with ``N`` rows, ``S`` kept samples and ``K`` clusters, memory is the ``(S, N)``
labels and ``S K J`` table cells (``J`` the most clusters of a sample); a pass of row moves
costs ``O(N K S)`` and scoring a start ``O(N S)``. Never the ``N x N`` co-assignment
matrix.
"""

from __future__ import annotations

import math

import numpy as np

from ._dp_base import relabel
from ._dp_partition_kernels import greedy_partition_search as _search

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
    g = loss_table(N, loss == "binder")
    index = np.unique(np.linspace(0, S - 1, min(S, max_candidates)).round().astype(int))
    scored = []
    for s in index:
        start = samples[s].copy()
        sizes, tables = fill_tables(samples, start, J, J)
        scored.append((partition_loss(sizes, tables, g), int(s)))
    scored.sort()
    best_value, best = np.inf, None
    for _, s in scored[:n_starts]:
        labels = samples[s].copy()
        capacity = int(labels.max()) + 1 + _EXTRA_SLOTS
        value = greedy_partition_search(samples, labels, capacity, J, g, max_passes)
        if value < best_value:
            best_value, best = value, labels
    best = relabel(best)[0].astype(np.int64)
    losses = sample_losses(samples, best, int(best.max()) + 1, J, g)
    return best, int(np.argmin(losses))


# -- the search (NumPy; see the module docstring of _dp_partition_kernels) ----------------


def _sequential_sum(values, axis=-1):
    """Sum along ``axis`` left to right, as a scalar loop from ``0.0`` does (NumPy's
    ``sum`` adds pairwise, which may differ in the last bits)."""
    values = np.asarray(values, dtype=float)
    if values.shape[axis] == 0:
        return np.zeros(values.shape[:-1]) if values.ndim > 1 else 0.0
    return np.take(np.cumsum(values, axis=axis), -1, axis=axis)


def loss_table(n_max, binder):
    """``g(x)`` for ``x = 0 .. n_max``: ``x log x`` (VI) or ``x^2`` (Binder). The
    logarithm is ``math.log`` (the C library's, as in the kernels), not NumPy's."""
    out = np.zeros(int(n_max) + 1)
    if binder:
        x = np.arange(1, int(n_max) + 1, dtype=float)
        out[1:] = x * x
    else:
        out[1:] = [float(x) * math.log(float(x)) for x in range(1, int(n_max) + 1)]
    return out


def fill_tables(samples, labels, n_capacity, n_sample_clusters):
    """Cluster sizes ``n`` (n_capacity,) of ``labels`` and the contingency tables ``m``
    (n_capacity, S, n_sample_clusters) against every kept sample."""
    S, _ = samples.shape
    sizes = np.bincount(labels, minlength=n_capacity).astype(np.int64)
    cells = (labels[None, :] * S + np.arange(S)[:, None]) * n_sample_clusters + samples
    tables = np.bincount(cells.ravel(), minlength=n_capacity * S * n_sample_clusters)
    return sizes, tables.astype(np.int64).reshape(n_capacity, S, n_sample_clusters)


def partition_loss(sizes, tables, g):
    """``f(c)`` (see :mod:`._dp_partition_kernels`) from the sizes and tables of ``c``."""
    total = _sequential_sum(g[sizes])
    cross = _sequential_sum(g[tables[sizes > 0]].ravel())
    return total - 2.0 * cross / tables.shape[1]


def sample_losses(samples, labels, n_capacity, n_sample_clusters, g):
    """``L(c, c^s)`` for every kept sample ``s`` (S,)."""
    S, _ = samples.shape
    sizes, tables = fill_tables(samples, labels, n_capacity, n_sample_clusters)
    own = _sequential_sum(g[sizes])
    cells = np.arange(S)[:, None] * n_sample_clusters + samples
    counts = np.bincount(cells.ravel(), minlength=S * n_sample_clusters)
    terms = np.concatenate(
        [np.full((S, 1), own), g[counts.reshape(S, n_sample_clusters)],
         -(2.0 * g[tables.transpose(1, 0, 2).reshape(S, -1)])], axis=1)
    return _sequential_sum(terms, axis=1)


def greedy_partition_search(samples, labels, n_capacity, n_sample_clusters, g, max_passes):
    """Lower ``f`` from the partition ``labels`` (changed in place; labels below
    ``n_capacity``) by row moves and merges until neither helps (or ``max_passes``), in
    the kernel :func:`._dp_partition_kernels.greedy_partition_search`.

    Returns ``f`` of the final partition.
    """
    sizes, tables = fill_tables(samples, labels, n_capacity, n_sample_clusters)
    _search(samples, labels, sizes, tables, g, np.int64(max_passes))
    return partition_loss(sizes, tables, g)
