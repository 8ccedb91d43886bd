"""Numba kernels the Gibbs sweeps over binary features ``a_kd`` share.

The binary detection, leaky noisy-or and data-parallel noisy-or sweeps differ only in the
log odds of ``a_kd = 1`` they gather from the rows having feature ``k``; given those log
odds a feature's row of ``A`` is drawn in one pass and the counts ``Z A`` of its rows are
moved by the change.
"""

import math

from numba import njit

__all__ = ["apply_feature_change", "draw_feature_row"]


@njit(cache=True)
def draw_feature_row(A, k, log_odds, change, rng):
    """Draw ``a_kd`` for every ``d`` from its log odds ``log_odds[d]``, in place.

    One ``random()`` per dimension, in order; ``change[d]`` gets ``new - old`` (-1, 0 or
    1). The sigmoid is taken on the side of zero that keeps it from overflowing.
    """
    for d in range(A.shape[1]):
        old = 1 if A[k, d] > 0.5 else 0
        if log_odds[d] >= 0.0:
            p_one = 1.0 / (1.0 + math.exp(-log_odds[d]))
        else:
            odds = math.exp(log_odds[d])
            p_one = odds / (1.0 + odds)
        new = 1 if rng.random() < p_one else 0
        A[k, d] = new
        change[d] = new - old


@njit(cache=True)
def apply_feature_change(counts, feature_ptr, feature_rows, k, change):
    """Add ``change`` (n_dims,) to the counts of the rows having feature ``k``
    (``feature_rows[feature_ptr[k]:feature_ptr[k + 1]]``)."""
    for i in range(feature_ptr[k], feature_ptr[k + 1]):
        n = feature_rows[i]
        for d in range(change.shape[0]):
            counts[n, d] += change[d]
