"""Numba kernels of the sub-cluster split-merge sampler
(:mod:`sklearn_ibp.solvers.dp.dp_subcluster`): a counter-based random number per row, and
one blocked pass that gives every row one of ``C`` Gaussian components (sampled, or
forced and scored) and accumulates the components' sufficient statistics per fixed block
of rows.

Why blocks and a counter-based generator: the uniform that decides row ``r`` is
``splitmix64(key, r)`` (Steele, Lea and Flood 2014, "Fast splittable pseudorandom number
generators"), a function of the pass's key and the row's index only, so it does not
depend on which thread (or shard) handles the row; the statistics are summed in row order
within a block of ``block_size`` consecutive rows and the blocks are combined in block order
by the driver, so any assignment of whole blocks to threads gives the same bits.
"""

import math

import numpy as np
from numba import njit, prange

from ...likelihoods._normal_wishart_kernels import cholesky_lower

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)
_TO_UNIT = 1.0 / 9007199254740992.0  # 2**-53

#: Modes of :func:`assign_blocks` (typed constants, so the kernel compiles once).
SAMPLE, SCORE_FORCED, STATS_ONLY, ARGMAX = np.int64(0), np.int64(1), np.int64(2), np.int64(3)


@njit(cache=True, inline="always")
def splitmix64(z):
    """One step of the splitmix64 output function on the uint64 ``z``."""
    z = z + _GOLDEN
    z = (z ^ (z >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    return z ^ (z >> _S31)


@njit(cache=True)
def row_uniform(key, row):
    """A uniform in (0, 1) that depends only on ``(key, row)`` (53 random bits, never 0,
    so its logarithm is finite)."""
    z = splitmix64(key ^ splitmix64(np.uint64(row)))
    return (float(z >> _S11) + 0.5) * _TO_UNIT


@njit(cache=True)
def row_uniforms(key, rows):
    """:func:`row_uniform` of every row in ``rows`` (the reference the tests use)."""
    out = np.empty(rows.shape[0])
    for p in range(rows.shape[0]):
        out[p] = row_uniform(key, rows[p])
    return out


@njit(cache=True, parallel=True)
def assign_blocks(X, shift, index, ids, row_offset, n, means, chols, log_consts, key, forced,
                  mode, old_labels, log_pi, slice_key, out, block_size, counts, sums,
                  scatters, log_q):
    """Give each of ``n`` rows one of ``C`` components, block by block.

    Position ``p < n`` is the row ``r = index[p]`` of ``X`` (``p`` itself when ``index`` is
    empty). The row's *global* index ``g``, which seeds its uniforms, is ``ids[p]``, or
    ``row_offset + r`` when ``ids`` is empty: the in-memory driver passes no ``ids`` and
    offset 0 (``g = r``); the Dask row store (:mod:`sklearn_ibp.distributed.dask_rows`)
    passes a chunk's first row as the offset, or the ids of rows gathered from several
    chunks, so that a row draws the same uniforms wherever it is held.
    Component ``c`` has the log density ``log_consts[c] - |chols[c]^T (x - means[c])|^2 / 2``
    (``chols[c]`` the lower Cholesky factor of its precision; ``log_consts`` holds the
    log weight and the normalising constant). ``mode`` is ``SAMPLE`` (draw the component
    from the normalised probabilities with :func:`row_uniform`), ``ARGMAX`` (the most
    probable component, the first on ties), ``SCORE_FORCED`` (take ``forced[p]`` and
    score it) or ``STATS_ONLY`` (take ``forced[p]``, evaluate nothing).
    With a non-empty ``old_labels`` (the row step, ``index`` empty) the draw is Walker's
    slice step: the slice of row ``r`` is ``log u = log row_uniform(slice_key, g) +
    log_pi[old_labels[r]]`` and only components with ``log_pi[c] > log u`` are
    candidates (``log_consts`` then holds no weight). Writes ``out[p]``, and per block ``b`` of
    ``block_size`` positions: ``counts[b, c]``, ``sums[b, c] = sum (x - shift)``,
    ``scatters[b, c]`` (lower triangle of ``sum (x - shift)(x - shift)^T``) and ``log_q[b]``,
    the log probability of the components taken (``SCORE_FORCED``/``SAMPLE``). The block
    arrays must be zero on entry.
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
def lowest_log_slices(old_labels, row_offset, log_pi, slice_key, block_size, out):
    """``out[b]`` = the lowest log slice (see :func:`assign_blocks`) of block ``b`` of the
    rows ``old_labels`` labels, the first of them the global row ``row_offset``."""
    N = old_labels.shape[0]
    for b in prange(out.shape[0]):
        low = np.inf
        for r in range(b * block_size, min(N, (b + 1) * block_size)):
            v = math.log(row_uniform(slice_key, row_offset + r)) + log_pi[old_labels[r]]
            if v < low:
                low = v
        out[b] = low


@njit(cache=True)
def pair_members(labels, ci, cj, i, j, members, side):
    """The rows other than ``i`` and ``j`` in clusters ``ci`` or ``cj``, in row order, into
    ``members``, with ``side`` 0 for ``ci`` and 1 for ``cj``; returns how many."""
    m = 0
    for r in range(labels.shape[0]):
        k = labels[r]
        if (k == ci or k == cj) and r != i and r != j:
            members[m] = r
            side[m] = 0 if k == ci else 1
            m += 1
    return m


@njit(cache=True)
def nth_row(labels, k, rank, skip):
    """The row of cluster ``k`` that is its ``rank``-th in row order, not counting the
    row ``skip`` (-1 for none)."""
    seen = 0
    for r in range(labels.shape[0]):
        if labels[r] == k and r != skip:
            if seen == rank:
                return r
            seen += 1
    return -1


@njit(cache=True)
def centrality(X, rows, side, means, chols, out):
    """``out[p] = -|chols[s]^T (x - means[s])|^2 / 2`` for row ``rows[p]`` and
    ``s = side[p]``: how central a row is in its (sub-)cluster, which makes the anchors
    of a merge proposal likely to sit near their clusters' middles."""
    D = X.shape[1]
    for p in range(rows.shape[0]):
        r = rows[p]
        s = side[p]
        quad = 0.0
        for a in range(D):
            acc = 0.0
            for e in range(a, D):
                acc += chols[s, e, a] * (X[r, e] - means[s, e])
            quad += acc * acc
        out[p] = -0.5 * quad


@njit(cache=True)
def stage_order(key, members, order, bounds):
    """The stages of a proposal's staged allocation: row ``members[p]`` is in stage
    ``floor(log2(1 + u |S|))``, ``u = row_uniform(key, members[p])`` and ``|S|`` the number
    of members (expected stage sizes 1, 2, 4, ...; independent of the labels). Writes
    ``order``, the positions ``p`` sorted by stage (row order within a stage, a counting
    sort), and ``bounds``: stage ``t`` is ``order[bounds[t]:bounds[t + 1]]``. ``bounds``
    needs ``floor(log2(1 + |S|)) + 2`` entries; returns the number of stages."""
    m = members.shape[0]
    n_stages = bounds.shape[0] - 1
    for t in range(n_stages + 1):
        bounds[t] = 0
    stage = np.empty(m, dtype=np.int64)
    for p in range(m):
        t = int(math.floor(math.log2(1.0 + row_uniform(key, members[p]) * m)))
        if t > n_stages - 1:  # rounding at the top end
            t = n_stages - 1
        stage[p] = t
        bounds[t + 1] += 1
    for t in range(n_stages):
        bounds[t + 1] += bounds[t]
    fill = bounds[:n_stages].copy()
    for p in range(m):
        t = stage[p]
        order[fill[t]] = p
        fill[t] += 1
    return n_stages


@njit(cache=True)
def member_stages(key, rows, m, n_stages, out):
    """``out[p]`` = the stage of the global row ``rows[p]`` among ``m`` members, as
    :func:`stage_order` computes it (the Dask row store computes the stages of a chunk's
    members, which are a part of the ``m``, with it)."""
    for p in range(rows.shape[0]):
        t = int(math.floor(math.log2(1.0 + row_uniform(key, rows[p]) * m)))
        if t > n_stages - 1:  # rounding at the top end
            t = n_stages - 1
        out[p] = t


@njit(cache=True)
def fit_sides(Y, shift, location, rho, dof, prior, scale, n_iter, tol, counts, sums,
              scatters, resp, loglik):
    """EM for the fitted proposal of :mod:`~sklearn_ibp.solvers.dp.dp_subcluster`: a
    mixture of ``k`` Gaussians fitted to the rows ``Y`` (a subsample of a union).

    ``counts (k,)``, ``sums (k, D)`` and ``scatters (k, D, D)`` hold, on entry, the
    statistics of the anchors alone (``sum (x - shift)``, full ``sum (x - shift)(x -
    shift)^T``) and, on exit, the anchors' plus ``scale`` times the responsibility-weighted
    statistics of ``Y``. Each component's density is the Normal-Wishart posterior's plug-in
    of the staged allocation (posterior mean, expected precision ``(dof + n) W*^-1``, with
    ``W* = prior + centred scatter + rho n / (rho + n) (xbar - location)(...)^T``), its
    weight its count ``n``. At most ``n_iter`` E and M steps, stopping when no
    responsibility moves by ``tol`` or more. ``resp (len(Y), k)`` is scratch; ``loglik[0]``
    receives the log likelihood of ``Y`` under the last E step's mixture. Returns the
    number of iterations (0 if a ``W*`` was not positive definite: then the statistics are
    the last positive definite ones)."""
    M, D = Y.shape
    k = counts.shape[0]
    anchor_counts = counts.copy()
    anchor_sums = sums.copy()
    anchor_scatters = scatters.copy()
    means = np.empty((k, D))
    chols = np.empty((k, D, D))
    log_consts = np.empty(k)
    precision_scale = np.empty(k)
    z = np.empty(D)
    logp = np.empty(k)
    for p in range(M):
        for t in range(k):
            resp[p, t] = -1.0
    it = 0
    while it < n_iter:
        it += 1
        # the components from the statistics
        for t in range(k):
            n = counts[t]
            kappa = rho + n
            W = np.empty((D, D))
            for a in range(D):
                xa = sums[t, a] / n + shift[a]
                means[t, a] = (rho * location[a] + n * xa) / kappa
                for e in range(a + 1):
                    xe = sums[t, e] / n + shift[e]
                    W[a, e] = (prior[a, e] + scatters[t, a, e] - sums[t, a] * sums[t, e] / n
                               + rho * n / kappa * (xa - location[a]) * (xe - location[e]))
            L, ok = cholesky_lower(W)
            if not ok:
                return 0
            chols[t] = L
            precision_scale[t] = dof + n
            log_det = 0.0
            for a in range(D):
                log_det += math.log(L[a, a])
            log_consts[t] = (math.log(n) + 0.5 * D * math.log(dof + n) - log_det)
        if M == 0:
            break
        # E step, and the M step's statistics
        for t in range(k):
            counts[t] = 0.0
            for a in range(D):
                sums[t, a] = 0.0
                for e in range(D):
                    scatters[t, a, e] = 0.0
        moved = 0.0
        loglik[0] = 0.0
        for p in range(M):
            best = -np.inf
            for t in range(k):
                # |L^-1 (y - mean)|^2 by forward substitution
                quad = 0.0
                for a in range(D):
                    acc = Y[p, a] - means[t, a]
                    for e in range(a):
                        acc -= chols[t, a, e] * z[e]
                    z[a] = acc / chols[t, a, a]
                    quad += z[a] * z[a]
                logp[t] = log_consts[t] - 0.5 * precision_scale[t] * quad
                if logp[t] > best:
                    best = logp[t]
            total = 0.0
            for t in range(k):
                logp[t] = math.exp(logp[t] - best)
                total += logp[t]
            loglik[0] += best + math.log(total)
            for t in range(k):
                r = logp[t] / total
                change = abs(r - resp[p, t])
                if change > moved:
                    moved = change
                resp[p, t] = r
                counts[t] += r
                for a in range(D):
                    z[a] = Y[p, a] - shift[a]
                for a in range(D):
                    sums[t, a] += r * z[a]
                    for e in range(D):
                        scatters[t, a, e] += r * z[a] * z[e]
        for t in range(k):
            counts[t] = anchor_counts[t] + scale * counts[t]
            for a in range(D):
                sums[t, a] = anchor_sums[t, a] + scale * sums[t, a]
                for e in range(D):
                    scatters[t, a, e] = anchor_scatters[t, a, e] + scale * scatters[t, a, e]
        if moved < tol:
            break
    return it
