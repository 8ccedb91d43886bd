"""Numba kernels that rearrange the feature slots of an explicit-feature state.

The explicit IBP samplers and the EBA sampler keep ``Z`` (n_samples, capacity), the
per-feature rows of ``A`` (capacity, n_dims), the counts ``m_k`` and, for the slice
samplers, the sticks ``mu_k`` in slots of which the first ``n_features`` are represented.
These kernels sort the represented slots by decreasing stick (the stick-breaking
representation, Teh, Görür and Ghahramani 2007) and move the live ones (``m_k > 0``) to
the front in order (back to the IBP representation), zeroing the freed ones. They only
move values, so every caller keeps its draws bit for bit.
"""

import numpy as np
from numba import njit

__all__ = ["compact_columns", "compact_features", "compact_values", "decreasing_order",
           "sort_by_sticks"]


@njit(cache=True)
def decreasing_order(sticks, K):
    """The indices of ``sticks[:K]`` by decreasing value (ties in index order): an
    insertion sort, as the features are few and it spares compiling NumPy's sort."""
    order = np.empty(K, dtype=np.int64)
    for k in range(K):
        value = sticks[k]
        j = k - 1
        while j >= 0 and sticks[order[j]] < value:
            order[j + 1] = order[j]
            j -= 1
        order[j + 1] = k
    return order


@njit(cache=True)
def sort_by_sticks(Z, A, counts, sticks, n_features):
    """Put the represented features in decreasing stick order (the stick-breaking
    representation of Algorithm 16), so the row updates visit them in an order that
    depends on the sticks only, never on ``Z``."""
    K = n_features
    order = decreasing_order(sticks, K)
    Z_old = Z[:, :K].copy()
    A_old = A[:K].copy()
    counts_old = counts[:K].copy()
    sticks_old = sticks[:K].copy()
    # Element loops, not slice assignments: these compile without numba's broadcasting
    # checks and their error messages (a second or two of every first fit).
    for j in range(K):
        k = order[j]
        for n in range(Z.shape[0]):
            Z[n, j] = Z_old[n, k]
        for d in range(A.shape[1]):
            A[j, d] = A_old[k, d]
        counts[j] = counts_old[k]
        sticks[j] = sticks_old[k]


@njit(cache=True)
def compact_values(values, counts, K):
    """Move ``values[k]`` of the live slots (``counts[k] > 0``) among the first ``K`` to
    the front, in order; the other entries are left as they are. Call it before
    :func:`compact_features`, which moves ``counts`` itself."""
    live = 0
    for k in range(K):
        if counts[k] > 0:
            values[live] = values[k]
            live += 1


@njit(cache=True)
def compact_columns(M, counts, K):
    """Move the columns of ``M`` (n_samples, capacity) of the live slots among the first
    ``K`` to the front, in order, and zero the freed ones. Call it before
    :func:`compact_features`, which moves ``counts`` itself."""
    live = 0
    for k in range(K):
        if counts[k] > 0:
            if live != k:
                for i in range(M.shape[0]):
                    M[i, live] = M[i, k]
            live += 1
    for k in range(live, K):
        for i in range(M.shape[0]):
            M[i, k] = 0


@njit(cache=True)
def compact_features(Z, A, counts, K):
    """Move the live slots (``counts > 0``) of the first ``K`` to the front, in order;
    zero the freed ones. Returns the number of live features."""
    compact_columns(Z, counts, K)
    live = 0
    for k in range(K):
        if counts[k] > 0:
            if live != k:
                for d in range(A.shape[1]):
                    A[live, d] = A[k, d]
                counts[live] = counts[k]
            live += 1
    for k in range(live, K):
        for d in range(A.shape[1]):
            A[k, d] = 0.0
        counts[k] = 0
    return live
