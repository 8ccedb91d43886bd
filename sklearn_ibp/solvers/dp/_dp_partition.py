"""Posterior point estimate of a DP mixture's partition (Wade and Ghahramani 2018).

The kept samples of a chain are draws of the partition; a single clustering to report is
the one that minimises the posterior expected loss, here estimated over the kept
samples: the variation of information (Meila 2007), which Wade and Ghahramani (2018,
"Bayesian cluster analysis: point estimation and credible balls", sec. 3-4) recommend
over Binder's loss because it does not favour splitting clusters into many small ones,
or Binder's loss (Binder 1978). The search starts from the kept samples with the lowest
expected loss and moves greedily.

The expected loss of a partition ``c`` over ``S`` kept samples ``c^1 .. c^S`` is computed
from contingency tables, never from the ``N x N`` co-assignment matrix. With ``n_i`` the
size of cluster ``i`` of ``c``, ``n^s_j`` that of cluster ``j`` of ``c^s`` and
``m^s_ij = #{rows in i and in j}``, both the variation of information and Binder's loss
(equal costs) are

``L(c, c^s) = sum_i g(n_i) + sum_j g(n^s_j) - 2 sum_ij g(m^s_ij)``

with ``g(x) = x log x`` (``N`` times the VI, in nats; Meila 2007) or ``g(x) = x^2`` (twice
the number of pairs of rows on which the two partitions disagree; Binder 1978). So the
Monte Carlo expected loss is, up to a term that does not depend on ``c``,

``f(c) = sum_i g(n_i) - (2 / S) sum_s sum_ij g(m^s_ij)``,

and moving one row from cluster ``a`` to ``b`` changes it through ``n_a, n_b`` and one cell
of each sample's table: ``O(S)`` per candidate move. The search explores the
neighbourhood of a starting partition greedily (Wade and Ghahramani 2018, sec. 4.2): the
best single-row move of every row (into an existing cluster or a new one), and the best
merge of two clusters, until no move lowers the loss.

All of it is NumPy (the search, the tables, ``g`` and the losses run a few times per fit),
every sum taken left to right as a loop takes it; the search was a numba kernel, whose
compilation cost a first fit about 1 CPU s.

Cost: with ``N`` rows, ``S`` kept samples and ``K`` clusters, memory is the ``(S, N)``
labels and ``S K J`` table cells (``J`` the most clusters of a sample); a pass of row moves
costs ``O(N K S)`` and scoring a start ``O(N S)``. Never the ``N x N`` co-assignment
matrix.
"""

from __future__ import annotations

import math

import numpy as np

from ._dp_base import relabel

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


# -- the search (see the module docstring) -----------------------------------------------


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
    """``f(c)`` (see the module docstring) from the sizes and tables of ``c``."""
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
    :func:`_search`.

    Returns ``f`` of the final partition.
    """
    sizes, tables = fill_tables(samples, labels, n_capacity, n_sample_clusters)
    _search(samples, labels, sizes, tables, g, int(max_passes))
    return partition_loss(sizes, tables, g)


def _search(samples, labels, sizes, tables, g, max_passes):
    """Lower ``f`` from the partition ``labels`` by row moves and merges until neither
    helps (or ``max_passes``); ``labels`` (below ``K = sizes.shape[0]``), its cluster
    sizes ``sizes`` (K,) and its contingency tables ``tables`` (K, S, J) against the kept
    ``samples`` (S, N) are changed in place. Returns the number of passes made.

    A pass moves each row in turn to the cluster (or the first empty slot, standing for
    every new cluster) that lowers ``f`` most, then merges the two clusters whose merge
    lowers ``f`` most, if any does. The changes of ``f`` are NumPy over the candidate
    clusters and the samples, each sum over the samples taken left to right (as the numba
    kernel this replaces did: the same moves, the same partition). It runs once per fit;
    as a kernel it cost a first fit about 1 CPU s of compilation.
    """
    S, N = samples.shape
    K = sizes.shape[0]
    inv_S = 2.0 / S
    # a move must beat the rounding of sums of g over S samples (the smallest real change
    # is about 2 / S times a difference of g)
    tolerance = 1e-9 * (1.0 + g[N] / N)
    if N < 2:
        return min(1, max_passes)  # one row: nothing to move or merge
    s_index = np.arange(S)
    # g(x + 1) - g(x) and g(x) - g(x + 1) at x, each difference computed once (as the
    # loop computes it: the same numbers)
    up = g[1:] - g[:-1]
    down = g[:-1] - g[1:]
    passes = 0
    while passes < max_passes:
        passes += 1
        # -- row moves
        moved = 0
        for i in range(N):
            a = int(labels[i])
            cells = samples[:, i]
            m = tables[:, s_index, cells]  # (K, S): the cell of row i in every table
            # the change of f from taking row i out of a
            size_a = sizes[a]
            leave = down[size_a - 1]
            leave -= inv_S * _sequential_sum(down[m[a] - 1])
            # (clipped at N - 1: only cluster a itself could reach N, and it is skipped)
            join = up[np.minimum(sizes, N - 1)]
            cross = _sequential_sum(up[np.minimum(m, N - 1)], axis=1)
            delta = leave + join - inv_S * cross
            delta[a] = np.inf
            if not delta.min() < -tolerance:
                continue  # no candidate beats staying (the loop below would keep a)
            delta = delta.tolist()
            best, best_delta = a, 0.0
            empty_seen = False
            alone = size_a == 1
            for b in range(K):
                if b == a:
                    continue
                if sizes[b] == 0:
                    if empty_seen or alone:
                        continue  # one empty slot stands for every new cluster
                    empty_seen = True
                if delta[b] < best_delta - tolerance:
                    best, best_delta = b, delta[b]
            if best != a:
                sizes[a] -= 1
                sizes[best] += 1
                tables[a, s_index, cells] -= 1
                tables[best, s_index, cells] += 1
                labels[i] = best
                moved += 1
        # -- the best merge of two clusters
        best_a, best_b, best_delta = -1, -1, 0.0
        live = np.flatnonzero(sizes > 0).tolist()
        for p, a in enumerate(live):
            ma = tables[a].ravel()
            for b in live[p + 1:]:
                mb = tables[b].ravel()
                delta = g[sizes[a] + sizes[b]] - g[sizes[a]] - g[sizes[b]]
                both = (ma > 0) & (mb > 0)
                cross = _sequential_sum(g[ma[both] + mb[both]] - g[ma[both]] - g[mb[both]])
                delta -= 2.0 * cross / S
                if delta < best_delta - tolerance:
                    best_a, best_b, best_delta = a, b, delta
        if best_a >= 0:
            labels[labels == best_b] = best_a
            sizes[best_a] += sizes[best_b]
            sizes[best_b] = 0
            tables[best_a] += tables[best_b]
            tables[best_b] = 0
        if moved == 0 and best_a < 0:
            break
    return passes
