"""Numba kernels of the posterior point estimate of a partition (Wade and Ghahramani 2018).

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
of each sample's table: ``O(S)`` per candidate move. These kernels search the
neighbourhood of a starting partition greedily (Wade and Ghahramani 2018, sec. 4.2): the
best single-row move of every row (into an existing cluster or a new one), and the best
merge of two clusters, until no move lowers the loss.
"""

import numpy as np
from numba import njit


@njit(cache=True)
def loss_table(n_max, binder):
    """``g(x)`` for ``x = 0 .. n_max``: ``x log x`` (VI) or ``x^2`` (Binder)."""
    out = np.zeros(n_max + 1)
    for x in range(1, n_max + 1):
        out[x] = float(x) * float(x) if binder else float(x) * np.log(float(x))
    return out


@njit(cache=True)
def fill_tables(samples, labels, n_capacity, n_sample_clusters):
    """Cluster sizes ``n`` (n_capacity,) of ``labels`` and the contingency tables ``m``
    (n_capacity, S, n_sample_clusters) against every kept sample."""
    S, N = samples.shape
    sizes = np.zeros(n_capacity, dtype=np.int64)
    tables = np.zeros((n_capacity, S, n_sample_clusters), dtype=np.int64)
    for i in range(N):
        a = labels[i]
        sizes[a] += 1
        for s in range(S):
            tables[a, s, samples[s, i]] += 1
    return sizes, tables


@njit(cache=True)
def partition_loss(sizes, tables, g):
    """``f(c)`` of the module docstring from the sizes and tables of ``c``."""
    K, S, J = tables.shape
    total = 0.0
    for a in range(K):
        total += g[sizes[a]]
    cross = 0.0
    for a in range(K):
        if sizes[a] == 0:
            continue
        for s in range(S):
            for j in range(J):
                cross += g[tables[a, s, j]]
    return total - 2.0 * cross / S


@njit(cache=True)
def sample_losses(samples, labels, n_capacity, n_sample_clusters, g):
    """``L(c, c^s)`` of the module docstring for every kept sample ``s`` (S,)."""
    S, N = samples.shape
    sizes, tables = fill_tables(samples, labels, n_capacity, n_sample_clusters)
    own = 0.0
    for a in range(n_capacity):
        own += g[sizes[a]]
    out = np.full(S, own)
    counts = np.zeros(n_sample_clusters, dtype=np.int64)
    for s in range(S):
        counts[:] = 0
        for i in range(N):
            counts[samples[s, i]] += 1
        for j in range(n_sample_clusters):
            out[s] += g[counts[j]]
        for a in range(n_capacity):
            for j in range(n_sample_clusters):
                out[s] -= 2.0 * g[tables[a, s, j]]
    return out


@njit(cache=True)
def _move_rows(samples, labels, sizes, tables, g, tolerance):
    """One pass over the rows, each moved to the cluster (or an empty slot) that lowers
    ``f`` most; returns the number of rows moved."""
    S, N = samples.shape
    K = sizes.shape[0]
    inv_S = 2.0 / S
    moved = 0
    for i in range(N):
        a = labels[i]
        # the change of f from taking row i out of a
        leave = g[sizes[a] - 1] - g[sizes[a]]
        cross = 0.0
        for s in range(S):
            m = tables[a, s, samples[s, i]]
            cross += g[m - 1] - g[m]
        leave -= inv_S * cross
        best, best_delta = a, 0.0
        empty_seen = False
        for b in range(K):
            if b == a:
                continue
            if sizes[b] == 0:
                if empty_seen or sizes[a] == 1:
                    continue  # one empty slot stands for every new cluster
                empty_seen = True
            join = g[sizes[b] + 1] - g[sizes[b]]
            cross = 0.0
            for s in range(S):
                m = tables[b, s, samples[s, i]]
                cross += g[m + 1] - g[m]
            delta = leave + join - inv_S * cross
            if delta < best_delta - tolerance:
                best, best_delta = b, delta
        if best != a:
            sizes[a] -= 1
            sizes[best] += 1
            for s in range(S):
                j = samples[s, i]
                tables[a, s, j] -= 1
                tables[best, s, j] += 1
            labels[i] = best
            moved += 1
    return moved


@njit(cache=True)
def _merge_best_pair(labels, sizes, tables, g, tolerance):
    """Merge the two clusters whose merge lowers ``f`` most; False if none does."""
    K, S, J = tables.shape
    best_a, best_b, best_delta = -1, -1, 0.0
    for a in range(K):
        if sizes[a] == 0:
            continue
        for b in range(a + 1, K):
            if sizes[b] == 0:
                continue
            delta = g[sizes[a] + sizes[b]] - g[sizes[a]] - g[sizes[b]]
            cross = 0.0
            for s in range(S):
                for j in range(J):
                    ma, mb = tables[a, s, j], tables[b, s, j]
                    if ma > 0 and mb > 0:
                        cross += g[ma + mb] - g[ma] - g[mb]
            delta -= 2.0 * cross / S
            if delta < best_delta - tolerance:
                best_a, best_b, best_delta = a, b, delta
    if best_a < 0:
        return False
    for i in range(labels.shape[0]):
        if labels[i] == best_b:
            labels[i] = best_a
    sizes[best_a] += sizes[best_b]
    sizes[best_b] = 0
    for s in range(S):
        for j in range(J):
            tables[best_a, s, j] += tables[best_b, s, j]
            tables[best_b, s, j] = 0
    return True


@njit(cache=True)
def greedy_partition_search(samples, labels, n_capacity, n_sample_clusters, g, max_passes):
    """Lower ``f`` from the partition ``labels`` (changed in place; labels below
    ``n_capacity``) by row moves and merges until neither helps (or ``max_passes``).

    Returns ``f`` of the final partition.
    """
    sizes, tables = fill_tables(samples, labels, n_capacity, n_sample_clusters)
    # a move must beat the rounding of sums of g over S samples (the smallest real change
    # is about 2 / S times a difference of g)
    N = labels.shape[0]
    tolerance = 1e-9 * (1.0 + g[N] / N)
    for _ in range(max_passes):
        moved = _move_rows(samples, labels, sizes, tables, g, tolerance)
        merged = _merge_best_pair(labels, sizes, tables, g, tolerance)
        if moved == 0 and not merged:
            break
    return partition_loss(sizes, tables, g)
