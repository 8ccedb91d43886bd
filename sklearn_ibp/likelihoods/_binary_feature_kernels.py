"""Numba kernels the Gibbs sweeps over binary features ``a_kd`` share.

The binary detection, leaky noisy-or and data-parallel noisy-or sweeps differ only in the
log odds of ``a_kd = 1`` they gather from the rows having feature ``k``; given those log
odds a feature's row of ``A`` is drawn in one pass and the counts ``Z A`` of its rows are
moved by the change. In the detection and noisy-or models an observed entry's share of
those log odds depends only on its value and on how many other features reach it, so one
sweep (:func:`sweep_bernoulli_features`) serves both, each likelihood tabulating its
gains.
"""

import math

import numpy as np
from numba import njit

__all__ = ["apply_feature_change", "draw_feature_row", "sweep_bernoulli_features"]


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


@njit(cache=True)
def sweep_bernoulli_features(A, counts, X, observed, feature_ptr, feature_rows, gain_one,
                             gain_zero, p_a, rng):
    """One Gibbs sweep over every binary ``a_kd`` under a ``Bernoulli(p_a)`` prior, in place.

    The log odds of ``a_kd = 1`` start at the prior's ``log(p_a / (1 - p_a))``; every
    observed row with ``z_nk = 1`` adds ``gain_one[c, d]`` when ``x_nd = 1`` and
    ``gain_zero[c, d]`` when ``x_nd = 0``, ``c = c_nd - a_kd`` being the count of the
    row's other features that reach ``d``. The values of one feature ``k`` are independent
    given the others, so a feature's row is drawn at once from one pass over its rows
    (:func:`draw_feature_row`), then the counts of its rows are updated.

    Parameters
    ----------
    A : ndarray of shape (n_features, n_dims), float64
        Binary features, updated in place.
    counts : ndarray of shape (n_samples, n_dims), int64
        ``Z A``; kept current in place.
    X : ndarray of shape (n_samples, n_dims), float64
        Binary data (anything where not observed).
    observed : ndarray of shape (n_samples, n_dims), uint8
        1 where ``x_nd`` is observed.
    feature_ptr, feature_rows : ndarray of int64
        The rows having feature ``k`` are ``feature_rows[feature_ptr[k]:feature_ptr[k + 1]]``.
    gain_one, gain_zero : ndarray of shape (n_counts, n_dims), float64
        Log-odds gains of ``a_kd = 1`` from an observed one and an observed zero reached
        by ``c = 0 .. n_counts - 1`` other features; an entry reached by more adds
        nothing (so a model whose gains vanish beyond some ``c`` tabulates only up to it,
        and its sweep skips the other entries).
    p_a : float
        Prior probability that ``a_kd = 1``, in (0, 1).
    rng : numpy.random.Generator
        The chain's generator (one ``random()`` per ``a_kd``, features in order, dimensions
        in order).
    """
    n_features, n_dims = A.shape
    n_tabulated = gain_one.shape[0]
    prior_log_odds = math.log(p_a) - math.log1p(-p_a)
    log_odds = np.empty(n_dims)
    change = np.empty(n_dims, dtype=np.int64)
    for k in range(n_features):
        log_odds[:] = prior_log_odds
        for i in range(feature_ptr[k], feature_ptr[k + 1]):
            n = feature_rows[i]
            if n_tabulated == 1:
                # Gains at c = 0 only (the detection model): no gather, so the compiler
                # vectorises the loop (about twice as fast; figures in the commit message).
                for d in range(n_dims):
                    own = 1 if A[k, d] > 0.5 else 0
                    if observed[n, d] and counts[n, d] == own:
                        log_odds[d] += gain_one[0, d] if X[n, d] > 0.5 else gain_zero[0, d]
                continue
            for d in range(n_dims):
                others = counts[n, d] - (1 if A[k, d] > 0.5 else 0)
                if observed[n, d] and others < n_tabulated:
                    if X[n, d] > 0.5:
                        log_odds[d] += gain_one[others, d]
                    else:
                        log_odds[d] += gain_zero[others, d]
        draw_feature_row(A, k, log_odds, change, rng)
        apply_feature_change(counts, feature_ptr, feature_rows, k, change)
