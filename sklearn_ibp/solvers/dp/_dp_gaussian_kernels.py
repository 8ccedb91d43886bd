"""Numba kernels shared by the DP mixture samplers with Gaussian components.

Clusters live in *slots* with spare capacity: a cluster that empties during a sweep frees
its slot (a stack of free slots is reused before the slot count grows), and the driver
renumbers the survivors ``0 .. K - 1`` after the sweep (:func:`relabel_slots`). A kernel
returns a status instead of allocating: it stops before a row when it may need a slot the
arrays do not have (``NEED_CAPACITY``), prior draws its pool does not hold
(``NEED_PRIOR``), or, after a row opened a new cluster, a posterior draw only the base can
make (``NEED_POSTERIOR``); the driver supplies them and calls it again, and the counters in
``ctr`` say where to resume.

Component densities are evaluated from the lower Cholesky factor ``L`` of the precision
``S = L L^T``: ``log N(x | mu, S^{-1}) = sum_d log L_dd - |L^T (x - mu)|^2 / 2 - D/2 log 2 pi``.
"""

import math

import numpy as np
from numba import njit

from ...likelihoods._normal_wishart_kernels import chol_rank_one

LOG_2PI = math.log(2.0 * math.pi)

# statuses
DONE = 0
NEED_CAPACITY = 1
NEED_PRIOR = 2
NEED_POSTERIOR = 3

# ctr slots
POS = 0  # next position in the row order
N_SLOTS = 1  # slots in use (active or free); slots beyond are untouched
N_FREE = 2  # free slots on the stack ``free[:N_FREE]``
POOL_POS = 3  # next unused prior draw of the pool
SLOT = 4  # slot that needs a posterior draw (NEED_POSTERIOR)
ROW = 5  # row of that slot
N_EMPTY = 6  # empty components kept by the no-gaps sampler
N_ACTIVE = 7  # clusters with rows
N_CTR = 8


@njit(cache=True, inline="always")
def precision_quad(x, mean, chol):
    """``|L^T (x - mean)|^2 = (x - mean)^T S (x - mean)`` from the lower Cholesky factor
    ``L`` of the precision ``S`` (the quadratic form of every Gaussian density of the DP
    solvers; 2-D unrolled, the same arithmetic)."""
    D = x.shape[0]
    if D == 2:  # the common case of plots and benchmarks
        r0 = x[0] - mean[0]
        r1 = x[1] - mean[1]
        y0 = chol[0, 0] * r0 + chol[1, 0] * r1
        y1 = chol[1, 1] * r1
        return y0 * y0 + y1 * y1
    quad = 0.0
    for d in range(D):
        s = 0.0
        for e in range(d, D):
            s += chol[e, d] * (x[e] - mean[e])
        quad += s * s
    return quad


@njit(cache=True, inline="always")
def gaussian_log_density(x, mean, chol, half_logdet):
    """``log N(x | mean, S^{-1})`` from the lower Cholesky factor of the precision ``S``
    and ``half_logdet = sum log diag(chol)``."""
    return half_logdet - 0.5 * precision_quad(x, mean, chol) - 0.5 * x.shape[0] * LOG_2PI


@njit(cache=True)
def cholesky_rank_one(L, v, work, sign):
    """In place, ``L L^T <- L L^T + sign v v^T`` (``sign`` is +1 or -1); ``work`` is scratch.

    Returns ``sum log diag L`` of the result, or NaN if a downdate lost positive
    definiteness (:func:`~sklearn_ibp.likelihoods._normal_wishart_kernels.chol_rank_one`
    with ``v`` kept).
    """
    D = L.shape[0]
    for d in range(D):
        work[d] = v[d]
    if not chol_rank_one(L, work, sign):
        return np.nan
    half_logdet = 0.0
    for k in range(D):
        half_logdet += math.log(L[k, k])
    return half_logdet


@njit(cache=True)
def relabel_slots(labels, n_slots):
    """Renumber slot labels ``0 .. K - 1`` in order of first appearance, in place.

    Returns the old slot of each new label (as :func:`sklearn_ibp.solvers.dp._dp_base.relabel`,
    in one pass).
    """
    new_of_old = np.full(n_slots, -1, dtype=np.int64)
    old_of_new = np.empty(n_slots, dtype=np.int64)
    K = 0
    for i in range(labels.shape[0]):
        old = labels[i]
        if new_of_old[old] < 0:
            new_of_old[old] = K
            old_of_new[K] = old
            K += 1
        labels[i] = new_of_old[old]
    return old_of_new[:K].copy()


#: Weights below ``exp(NEGLIGIBLE_LOG_WEIGHT)`` (4e-18) of the largest may be taken as zero in
#: categorical draws (the stick-breaking samplers do): together they could move the
#: probabilities by less than the float64 resolution of the normaliser (``n * 4e-18``
#: against ``2^-53 = 1.1e-16``), and skipping their ``exp`` (10-15 ns each, 100 ns in the
#: subnormal range) is most of the speed of a draw among many components.
NEGLIGIBLE_LOG_WEIGHT = -40.0


@njit(cache=True, inline="always")
def draw_index(log_weights, n, rng, floor=-np.inf):
    """An index ``< n`` drawn with probability proportional to ``exp(log_weights[:n])``,
    by one uniform from ``rng`` and the inverse CDF.

    ``log_weights[:n]`` is overwritten with the weights scaled by their largest; those
    whose log is ``floor`` or less below the largest (by default only ``-inf``) are set to
    zero and never drawn. Inlined into the kernels (``inline="always"``): numba does not
    inline calls across dispatchers.
    """
    best = -np.inf
    for j in range(n):
        if log_weights[j] > best:
            best = log_weights[j]
    total = 0.0
    for j in range(n):
        d = log_weights[j] - best
        w = math.exp(d) if d > floor else 0.0
        log_weights[j] = w
        total += w
    u = rng.random() * total
    acc = 0.0
    last = n - 1
    for j in range(n):
        w = log_weights[j]
        if w > 0.0:
            acc += w
            last = j
            if u < acc:
                return j
    return last


@njit(cache=True)
def take_slot(free, ctr):
    """A slot for a new cluster: the top of the free stack, else the next unused slot."""
    if ctr[N_FREE] > 0:
        ctr[N_FREE] -= 1
        return free[ctr[N_FREE]]
    slot = ctr[N_SLOTS]
    ctr[N_SLOTS] += 1
    return slot


@njit(cache=True)
def release_slot(free, ctr, slot):
    """Put an emptied slot on the free stack."""
    free[ctr[N_FREE]] = slot
    ctr[N_FREE] += 1


@njit(cache=True, inline="always")
def row_status(ctr, capacity, pool_needed, n_pool):
    """Whether a sweep can take its next row: ``NEED_CAPACITY`` if a new cluster would find
    no slot among ``capacity``, ``NEED_PRIOR`` if the pool (``n_pool`` draws) holds fewer
    than ``pool_needed`` unused draws, else ``DONE``."""
    if ctr[N_FREE] == 0 and ctr[N_SLOTS] >= capacity:
        return NEED_CAPACITY
    if ctr[POOL_POS] + pool_needed > n_pool:
        return NEED_PRIOR
    return DONE


@njit(cache=True, inline="always")
def leave_next_row(order, labels, counts, ctr, pool_needed, n_pool):
    """The head of a row of Neal's (2000) Gibbs sweeps over the indicators: when the sweep
    can take row ``i = order[ctr[POS]]`` (:func:`row_status`), take it out of its cluster
    ``k_old = labels[i]`` (``counts[k_old]`` drops by one). Returns ``(status, i, k_old,
    singleton)``, ``singleton`` when ``i`` was the cluster's only row; with a status other
    than ``DONE`` nothing is changed (the sweep returns it and resumes at the same row).
    The caller moves ``ctr[POS]`` on once the row is placed."""
    status = row_status(ctr, counts.shape[0], pool_needed, n_pool)
    if status != DONE:
        return status, -1, -1, False
    i = order[ctr[POS]]
    k_old = labels[i]
    counts[k_old] -= 1
    return DONE, i, k_old, counts[k_old] == 0


@njit(cache=True, inline="always")
def destination_slot(c, n_slots, singleton, k_old, free, ctr):
    """The slot of a row that drew ``c`` and left slot ``k_old`` (``singleton``: it was
    the only row there): the existing cluster ``c < n_slots`` (the row's emptied slot is
    freed), else a new cluster in the row's own emptied slot or a slot taken for it."""
    if c < n_slots:
        if singleton:
            release_slot(free, ctr, k_old)
        return c
    return k_old if singleton else take_slot(free, ctr)


@njit(cache=True)
def copy_component(means, precisions, chols, half_logdets, slot,
                   src_mean, src_precision, src_chol, src_half_logdet):
    """Write one component's mean, precision and its Cholesky factor into ``slot``."""
    D = means.shape[1]
    for d in range(D):
        means[slot, d] = src_mean[d]
        for e in range(D):
            precisions[slot, d, e] = src_precision[d, e]
            chols[slot, d, e] = src_chol[d, e]
    half_logdets[slot] = src_half_logdet


@njit(cache=True)
def active_log_weights(x, counts, means, chols, half_logdets, n_slots, log_weights):
    """``log n_{-i,k} + log N(x | mu_k, S_k^{-1})`` for the slots with rows, ``-inf`` for
    free slots (eq. 3.30 / 3.34 for the existing components)."""
    for k in range(n_slots):
        if counts[k] > 0:
            log_weights[k] = math.log(counts[k]) + gaussian_log_density(
                x, means[k], chols[k], half_logdets[k])
        else:
            log_weights[k] = -np.inf
