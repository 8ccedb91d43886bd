"""Numba kernels of the Dask row store (:mod:`sklearn_ibp.distributed.dask_rows`).

:func:`assign_rows` is :func:`~sklearn_ibp.solvers.dp._dp_subcluster_kernels.assign_blocks`
with the row's data and the row's *global* index taken apart: a chunk of rows holds its
rows from local index 0, while the uniforms of row ``r`` (``row_uniform(key, r)``) must
use its index in the whole data set, and the rows of a block that straddles two chunks
are gathered into a small array of their own. The arithmetic (the order of every
operation, the per-block accumulation in position order) is that of ``assign_blocks``
line for line, so the same rows in the same blocks give the same bits; the tests hold the
two kernels against each other in every mode.
"""

import math

import numpy as np
from numba import njit, prange

from ..solvers.dp._dp_subcluster_kernels import (
    ARGMAX,
    SAMPLE,
    STATS_ONLY,
    row_uniform,
)


@njit(cache=True, parallel=True)
def assign_rows(X, shift, index, ids, row_offset, n, means, chols, log_consts, key, forced, mode,
                old_labels, log_pi, slice_key, out, block_size, counts, sums, scatters,
                log_q):
    """:func:`assign_blocks` over ``n`` positions of a piece of the rows.

    Position ``p`` is the local row ``r = index[p]`` (``p`` itself when ``index`` is
    empty) of ``X``; its global row, which seeds its uniforms, is ``ids[p]``
    (``row_offset + r`` when ``ids`` is empty). ``old_labels`` (the slice step) is indexed
    by the local row. Everything else is as in ``assign_blocks``: ``out[p]``, ``forced[p]``
    and the statistics of block ``b`` over positions ``b * block_size ..``.
    """
    D = X.shape[1]
    C = means.shape[0]
    n_blocks = counts.shape[0]
    use_index = index.shape[0] > 0
    use_ids = ids.shape[0] > 0
    use_slice = old_labels.shape[0] > 0
    for b in prange(n_blocks):
        logp = np.empty(C)
        prob = np.empty(C)
        diff = np.empty(D)
        start = b * block_size
        stop = min(n, start + block_size)
        acc_q = 0.0
        for p in range(start, stop):
            r = index[p] if use_index else p
            g = ids[p] if use_ids else row_offset + r
            if mode == STATS_ONLY:
                k = forced[p]
            else:
                log_u = -np.inf
                if use_slice:
                    log_u = math.log(row_uniform(slice_key, g)) + log_pi[old_labels[r]]
                best = -np.inf
                for c in range(C):
                    if use_slice and not log_pi[c] > log_u:
                        logp[c] = -np.inf
                        continue
                    quad = 0.0
                    for a in range(D):
                        acc = 0.0
                        for e in range(a, D):
                            acc += chols[c, e, a] * (X[r, e] - means[c, e])
                        quad += acc * acc
                    v = log_consts[c] - 0.5 * quad
                    logp[c] = v
                    if v > best:
                        best = v
                total = 0.0
                for c in range(C):
                    prob[c] = math.exp(logp[c] - best)
                    total += prob[c]
                if mode == ARGMAX:
                    k = 0
                    for c in range(1, C):
                        if logp[c] > logp[k]:
                            k = c
                elif mode == SAMPLE:
                    u = row_uniform(key, g) * total
                    k = C - 1
                    cum = 0.0
                    for c in range(C):
                        cum += prob[c]
                        if u < cum:
                            k = c
                            break
                else:
                    k = forced[p]
                acc_q += logp[k] - best - math.log(total)
            out[p] = k
            counts[b, k] += 1
            for a in range(D):
                diff[a] = X[r, a] - shift[a]
                sums[b, k, a] += diff[a]
            for a in range(D):
                for e in range(a + 1):
                    scatters[b, k, a, e] += diff[a] * diff[e]
        log_q[b] = acc_q


@njit(cache=True, parallel=True)
def lowest_log_slice(old_labels, row_offset, log_pi, slice_key, block_size):
    """The lowest log slice of a chunk of rows whose first global row is ``row_offset``
    (``log row_uniform(slice_key, r) + log_pi[old_labels[r]]``, the expression of
    :func:`~sklearn_ibp.solvers.dp._dp_subcluster_kernels.lowest_log_slices`; a minimum
    is exact, so the chunks' minima give the driver's value)."""
    N = old_labels.shape[0]
    n_blocks = max(1, -(-N // block_size))
    lows = np.empty(n_blocks)
    for b in prange(n_blocks):
        low = np.inf
        for r in range(b * block_size, min(N, (b + 1) * block_size)):
            v = math.log(row_uniform(slice_key, row_offset + r)) + log_pi[old_labels[r]]
            if v < low:
                low = v
        lows[b] = low
    return lows.min()
