"""Numba kernels of the semi-ordered stick-breaking slice sampler for the IBP (seed 002
sec. 4.2.6, Algorithm 16).

The stick draws and the row update are those of Algorithm 15 (:mod:`._slice_kernels`);
this module holds the two changes of representation around them: to the stick-breaking
representation (active sticks drawn afresh from their posterior, eq. 4.56, one slice for
the sweep, empty sticks from eq. 4.57) and back (empty features dropped).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._slice_kernels import draw_level, extend_sticks, update_row_features


@njit(cache=True)
def draw_active_sticks(counts, sticks, n_active, n_rows, rng):
    """``mu_k ~ Beta(m_k, 1 + N - m_k)`` for the ``n_active`` active features (eq. 4.56),
    then the slice ``s ~ Uniform(0, min(1, min_k mu_k))`` (eq. 4.58), which is returned."""
    for k in range(n_active):
        m = float(counts[k])
        sticks[k] = rng.beta(m, 1.0 + n_rows - m)
    return draw_level(sticks, counts, n_active, rng)


@njit(cache=True)
def to_stick_breaking(Z, A, pred, counts, sticks, n_active, alpha, prior_kind, prior, rng):
    """The change to the stick-breaking representation (Algorithm 16, first step).

    Fills ``counts`` and ``pred = Z A`` for the ``n_active`` active features (columns
    ``0 .. n_active - 1``), draws their sticks and the slice (:func:`draw_active_sticks`),
    then appends empty features (:func:`extend_sticks`) until a stick falls below the slice.

    Returns ``(n_features, level, done)``; when ``done`` is False, ``Z`` ran out of capacity
    and :func:`extend_sticks` is to be called again (with ``chain_start = n_active``).
    """
    N = Z.shape[0]
    D = A.shape[1]
    K = n_active
    for n in range(N):
        for d in range(D):
            pred[n, d] = 0.0
    for k in range(K):
        m = 0
        for n in range(N):
            if Z[n, k]:
                m += 1
                for d in range(D):
                    pred[n, d] += A[k, d]
        counts[k] = m
    level = draw_active_sticks(counts, sticks, K, N, rng)
    total, done = extend_sticks(Z, A, counts, sticks, K, K, level, alpha, prior_kind, prior,
                                rng)
    return total, level, done


@njit(cache=True)
def sort_by_sticks(Z, A, counts, sticks, n_features):
    """Put the represented features in decreasing stick order (the stick-breaking
    representation of Algorithm 16), so the row updates visit them in an order that
    depends on the sticks only, never on ``Z``."""
    K = n_features
    order = np.argsort(-sticks[:K])
    Z_old = Z[:, :K].copy()
    A_old = A[:K].copy()
    counts_old = counts[:K].copy()
    sticks_old = sticks[:K].copy()
    for j in range(K):
        k = order[j]
        Z[:, j] = Z_old[:, k]
        A[j] = A_old[k]
        counts[j] = counts_old[k]
        sticks[j] = sticks_old[k]


@njit(cache=True)
def update_rows_and_drop_empty(X, observed, Z, A, pred, counts, sticks, n_features, level,
                               kind, noise, prior_kind, prior, rng):
    """The features sorted by decreasing stick (:func:`sort_by_sticks`), every row's
    ``z_nk`` for the represented features above the slice ``level`` (eq. 4.52), then the
    change back to the IBP representation: the empty features are removed (the active ones
    moved to the front in order). Returns the number of active features."""
    N = X.shape[0]
    sort_by_sticks(Z, A, counts, sticks, n_features)
    proposal = np.empty(X.shape[1])
    for n in range(N):
        update_row_features(kind, X[n], observed[n], Z[n], A, pred[n], counts, sticks,
                            n_features, level, prior_kind, prior, noise, proposal, rng)
    K = 0
    for k in range(n_features):
        if counts[k] > 0:
            if K != k:
                for n in range(N):
                    Z[n, K] = Z[n, k]
                for d in range(A.shape[1]):
                    A[K, d] = A[k, d]
                counts[K] = counts[k]
                sticks[K] = sticks[k]
            K += 1
    for k in range(K, n_features):
        for n in range(N):
            Z[n, k] = 0
        for d in range(A.shape[1]):
            A[k, d] = 0.0
        counts[k] = 0
    return K
