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

The search runs once per fit, so it is one kernel (one compilation, no allocation
inside); the tables, ``g`` and the losses are NumPy in
:mod:`sklearn_ibp.solvers.dp._dp_partition`. As seven kernels (row moves, merges, tables,
losses) they cost about 2 CPU s of a first fit's compilation.
"""

from numba import njit


@njit(cache=True)
def greedy_partition_search(samples, labels, sizes, tables, g, max_passes):
    """Lower ``f`` from the partition ``labels`` by row moves and merges until neither
    helps (or ``max_passes``); ``labels`` (below ``K = sizes.shape[0]``), its cluster
    sizes ``sizes`` (K,) and its contingency tables ``tables`` (K, S, J) against the kept
    ``samples`` (S, N) are changed in place. Returns the number of passes made.

    A pass moves each row in turn to the cluster (or the first empty slot, standing for
    every new cluster) that lowers ``f`` most, then merges the two clusters whose merge
    lowers ``f`` most, if any does.
    """
    S, N = samples.shape
    K = sizes.shape[0]
    J = tables.shape[2]
    inv_S = 2.0 / S
    # a move must beat the rounding of sums of g over S samples (the smallest real change
    # is about 2 / S times a difference of g)
    tolerance = 1e-9 * (1.0 + g[N] / N)
    passes = 0
    while passes < max_passes:
        passes += 1
        # -- row moves
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
        # -- the best merge of two clusters
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
        if best_a >= 0:
            for i in range(N):
                if labels[i] == best_b:
                    labels[i] = best_a
            sizes[best_a] += sizes[best_b]
            sizes[best_b] = 0
            for s in range(S):
                for j in range(J):
                    tables[best_a, s, j] += tables[best_b, s, j]
                    tables[best_b, s, j] = 0
        if moved == 0 and best_a < 0:
            break
    return passes
