"""Numba kernels of one shard of the data-parallel noisy-or sampler (Doshi-Velez 2009, sec. 5.1).

The rows are swept by the serial kernel of :class:`~sklearn_ibp.solvers.MetropolisIBP`,
:func:`~sklearn_ibp.solvers.ibp_explicit._metropolis_kernels.metropolis_rows`, with its shard
arguments:

* the IBP prior of ``z_nk`` counts over ``n_total`` rows (all shards), not the shard's;
  ``counts`` holds the others' counts at the last synchronisation plus the shard's own;
* a shard without the token may only drop unique features (Algorithm 13's move with no
  new feature proposed, ``allow_new=False``);
* the flipped row's likelihood from the entries the feature reaches only, with
  ``log(1 - eps lambda^c)`` looked up at the integer counts;
* only the features of ``sampled`` are visited (feature sub-sampling).

The ``A`` sweep is a variant of the leaky noisy-or's
(:mod:`sklearn_ibp.likelihoods._leaky_noisy_or_kernels`): ``a_kd`` has its own prior log
odds (the cavity ``eta^{-p}_kd``), and the sweep returns the conditional probabilities it
drew from (Rao-Blackwellised tilted marginals). The tests check that these reduce to the
serial kernels.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..likelihoods._binary_feature_kernels import apply_feature_change, draw_feature_row
from ..likelihoods._leaky_noisy_or_kernels import log_prob_one_table
from ..solvers.ibp_explicit._metropolis_kernels import refresh_prediction

__all__ = ["refresh_counts", "sweep_features_cavity", "table_counts"]


@njit(cache=True, nogil=True)
def sweep_features_cavity(A, counts, X, observed, feature_ptr, feature_rows, noise,
                          prior_log_odds, cond_log_odds, touched, rng):
    """One Gibbs sweep over every binary ``a_kd`` with prior log odds
    ``prior_log_odds[k, d]``, in place; ``cond_log_odds[k, d]`` gets the log odds of the
    conditional probability that ``a_kd = 1`` it was drawn from (the probability itself
    is its sigmoid; log odds keep the precision where it is within 1e-16 of 0 or 1), and
    ``touched[k, d]`` is set to 1 when some observed row with ``z_nk = 1`` entered it
    (otherwise the conditional is the prior).

    As :func:`~sklearn_ibp.likelihoods._leaky_noisy_or_kernels.sweep_noisy_or_features`
    (same draws when every prior log odds is ``logit(p_a)``); ``counts`` is ``Z A``.
    """
    n_features, n_dims = A.shape
    log_one = log_prob_one_table(noise, n_features)
    log_odds = np.empty(n_dims)
    change = np.empty(n_dims, dtype=np.int64)
    for k in range(n_features):
        for d in range(n_dims):
            log_odds[d] = prior_log_odds[k, d]
        for i in range(feature_ptr[k], feature_ptr[k + 1]):
            n = feature_rows[i]
            for d in range(n_dims):
                if not observed[n, d]:
                    continue
                touched[k, d] = 1
                if X[n, d] > 0.5:
                    others = counts[n, d] - (1 if A[k, d] > 0.5 else 0)
                    log_odds[d] += log_one[others + 1, d] - log_one[others, d]
                else:
                    log_odds[d] += noise[1, d]
        for d in range(n_dims):
            cond_log_odds[k, d] = log_odds[d]
        draw_feature_row(A, k, log_odds, change, rng)
        apply_feature_change(counts, feature_ptr, feature_rows, k, change)


@njit(cache=True, nogil=True)
def refresh_counts(Z, A, K, pred, counts):
    """``pred = Z[:, :K] A[:K]`` (float64, by the serial
    :func:`~sklearn_ibp.solvers.ibp_explicit._metropolis_kernels.refresh_prediction`) and
    ``counts``, the same as int64, without the GIL (the shards of the thread backend would queue on
    it)."""
    refresh_prediction(Z, A, K, pred)
    for i in range(Z.shape[0]):
        for d in range(pred.shape[1]):
            counts[i, d] = int(pred[i, d] + 0.5)


@njit(cache=True, nogil=True)
def table_counts(X, observed, counts, length):
    """``(n0, n1)``: observed zeros and ones of ``X`` by their count (``length`` bins,
    larger than every count), without the GIL."""
    n_zero = np.zeros(length, dtype=np.int64)
    n_one = np.zeros(length, dtype=np.int64)
    for i in range(X.shape[0]):
        for d in range(X.shape[1]):
            if observed[i, d]:
                if X[i, d] > 0.5:
                    n_one[counts[i, d]] += 1
                else:
                    n_zero[counts[i, d]] += 1
    return n_zero, n_one
