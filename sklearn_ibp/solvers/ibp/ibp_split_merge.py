"""Split-merge Metropolis-Hastings moves for the IBP (Doshi-Velez 2009, sec. 3.3).

Single-site Gibbs samplers change one ``z_nk`` at a time, so two shapes that one feature
explains together are separated only through improbable intermediate states. Doshi-Velez
(2009, sec. 3.3) names the remedy: the split-merge proposals of Meeds et al. (2007), where two
features are combined by an OR or one feature is split, improved by the restricted Gibbs scans of
Jain and Neal (2004). This module implements that move for the linear-Gaussian model with
``A`` integrated out (eq. A.2); the Gibbs solvers call it ``split_merge`` times per sweep.

The proposal
------------
1. Draw two distinct rows ``i`` and ``j`` uniformly among the rows that have a feature, then
   a feature ``k_i`` of row ``i`` and ``k_j`` of row ``j``, uniformly.
2. If ``k_i == k_j = k``: propose to **split** ``k`` into ``a`` (anchored by ``i``, which
   gets ``(1, 0)``) and ``b`` (anchored by ``j``, ``(0, 1)``). Every other row ``S`` of ``k``
   takes one of ``(1,0), (0,1), (1,1)``: a *launch state* is built by allocating ``S`` one
   row after the other (restricted Gibbs from an empty start) and ``n_intermediate``
   restricted Gibbs scans; one more scan draws the proposal, with probability ``q_split``.
3. Otherwise propose to **merge** ``k_i`` and ``k_j`` into their OR. The reverse split needs
   ``i`` in ``k_i`` only and ``j`` in ``k_j`` only; if not, the proposal is rejected. A
   launch state is built exactly as for a split of the merged feature and ``q_split`` is the
   probability that the final scan from it reproduces the current two columns.

The acceptance ratio
--------------------
The move is an involution on (matrix, choices): the split with choices ``(i, j, k, rows'
patterns)`` and the merge with ``(i, j, a, b)`` undo each other, and the launch state is an
auxiliary draw whose distribution is the same on both sides (it depends only on the other
features, the rows ``S`` and the anchors). Its target is the *ordered* feature allocation,
the IBP with columns in uniformly random order (no multiplicity term),

    p(Z) = (alpha beta)^K / K! exp(-alpha sum_n beta/(beta+n-1)) prod_k B(m_k, N - m_k + beta),

whose left-ordered classes have the IBP probability (eq. 2.1, app. C.1). The new column of a
split goes to one of the ``K + 1`` positions uniformly, which cancels the ``1/(K+1)`` of
``p``; the row pair's probability is the same on both sides (a split or merge keeps the set of
rows that have a feature), and so are ``1/|F_i| 1/|F_j|`` (the anchors keep their number of
features). What remains is

    log r_split = log(alpha beta) + log B(m_a, N-m_a+beta) + log B(m_b, N-m_b+beta)
                  - log B(m_k, N-m_k+beta) + log p(X | Z_split) - log p(X | Z) - log q_split

and ``log r_merge`` the negative of the same expression read from the split state. The code
places the columns as the involution says (``a`` in ``k``'s place and ``b`` at a uniformly
random position; the OR in ``k_i``'s place), so the move leaves the ordered posterior
invariant, hence also the IBP posterior over classes, and composes with any sampler that
leaves the ordered posterior invariant (the Gibbs sweeps). Appending ``b`` at the end
instead would keep the class-level kernel but make the column order depend on the history.

With ``A`` explicit (uncollapsed and semi-collapsed solvers) the move is made on ``Z`` with
``A`` integrated out and the solver redraws ``A ~ p(A | Z, X)`` after an accepted move: a
collapsed Metropolis-Hastings block, which leaves ``p(Z, A | X)`` invariant.
"""

from __future__ import annotations

import math

import numpy as np

from ...likelihoods.linear_gaussian import (
    feature_posterior,
    log_marginal_likelihood_from_stats,
)
from ._base import with_capacity
from ._ibp_split_merge_kernels import split_scans

__all__ = [
    "MERGES_ACCEPTED",
    "MERGES_PROPOSED",
    "N_INTERMEDIATE_SCANS",
    "SPLITS_ACCEPTED",
    "SPLITS_PROPOSED",
    "apply_split_merge",
    "split_merge_proposal",
    "split_merge_proposals",
]

#: Restricted Gibbs scans between the sequential launch and the final scan (Jain and Neal's
#: ``t``). The sequential launch already finds most good splits; more scans cost time.
N_INTERMEDIATE_SCANS = 2

#: Index of the counters in the array returned by :func:`split_merge_proposals`.
SPLITS_PROPOSED, SPLITS_ACCEPTED, MERGES_PROPOSED, MERGES_ACCEPTED = range(4)


def _log_likelihood(X, Z, sq_norm, sigma_x, sigma_a):
    """Collapsed ``log p(X | Z)`` (eq. A.2), by NumPy and a Cholesky factor: once per
    proposal, so nothing is gained by compiling it."""
    return log_marginal_likelihood_from_stats(
        Z.T @ Z, Z.T @ X, sq_norm, X.shape[0], X.shape[1], sigma_x, sigma_a
    )


def _launch_scans(X, launch, rows, a, b, target, n_intermediate, sigma_x, sigma_a, beta,
                  rng):
    """``log q`` of the split scans (:func:`split_scans`) from ``launch``, moved in place
    to the final state; the feature posterior of the launch state and the kernel's work
    arrays are made here."""
    mean, cov = feature_posterior(X, launch, sigma_x, sigma_a)
    K, D, n_rows = launch.shape[1], X.shape[1], rows.shape[0]
    return float(split_scans(
        X, launch, rows, np.int64(a), np.int64(b), target, np.int64(n_intermediate),
        np.ascontiguousarray(cov), np.ascontiguousarray(mean), float(sigma_x**2), float(beta),
        rng, np.empty(n_rows, dtype=np.int64), np.empty(n_rows, dtype=np.int64),
        np.empty(n_rows, dtype=np.int64), np.empty(K), np.empty(D), np.empty(K), np.empty(3),
        np.empty(3),
    ))


def _log_column_prior(count, n_samples, beta):
    """``log B(m, N - m + beta)``, one column's factor of the ordered IBP prior."""
    rest = n_samples - count + beta
    return math.lgamma(count) + math.lgamma(rest) - math.lgamma(count + rest)


def split_merge_proposal(X, Z, alpha, beta, sigma_x, sigma_a, rng,
                         n_intermediate=N_INTERMEDIATE_SCANS, sq_norm=None):
    """Make one split-merge proposal and accept or reject it (Doshi-Velez 2009, sec. 3.3).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_dims)
        Complete data.
    Z : ndarray of shape (n_samples, n_features)
        Binary feature matrix without empty columns; not modified.
    alpha, beta : float
        IBP concentration and stickiness.
    sigma_x, sigma_a : float
        Noise and feature standard deviations.
    rng : numpy.random.Generator
        Source of every random choice.
    n_intermediate : int, default=N_INTERMEDIATE_SCANS
        Restricted Gibbs scans that build the launch state after the sequential launch.
    sq_norm : float, optional
        ``tr(X^T X)``, if already known.

    Returns
    -------
    Z : ndarray of shape (n_samples, n_features')
        The new matrix (int8) if the proposal was accepted, otherwise the input.
    move : {"split", "merge", None}
        What was proposed (None when fewer than two rows have a feature).
    accepted : bool
    """
    X = np.asarray(X, dtype=np.float64)
    N = X.shape[0]
    if sq_norm is None:
        sq_norm = float(np.sum(X**2))
    Zb = np.asarray(Z) != 0
    live_rows = np.flatnonzero(Zb.any(axis=1))
    if live_rows.size < 2:
        return Z, None, False
    pos_i = int(rng.integers(live_rows.size))
    pos_j = int(rng.integers(live_rows.size - 1))
    pos_j += pos_j >= pos_i
    i, j = int(live_rows[pos_i]), int(live_rows[pos_j])
    feats_i, feats_j = np.flatnonzero(Zb[i]), np.flatnonzero(Zb[j])
    k_i = int(feats_i[rng.integers(feats_i.size)])
    k_j = int(feats_j[rng.integers(feats_j.size)])
    Zf = Zb.astype(np.float64)
    is_split = k_i == k_j
    if not is_split and (Zb[i, k_j] or Zb[j, k_i]):
        return Z, "merge", False  # the reverse split could not anchor i in k_i, j in k_j

    union = Zb[:, k_i] | Zb[:, k_j]
    union[[i, j]] = False
    rows = np.flatnonzero(union).astype(np.int64)
    rest = np.delete(Zf, [k_i] if is_split else [k_i, k_j], axis=1)
    col_i = np.zeros(N)
    col_i[i] = 1.0
    col_j = np.zeros(N)
    col_j[j] = 1.0
    launch = np.ascontiguousarray(np.column_stack([rest, col_i, col_j]))
    a, b = launch.shape[1] - 2, launch.shape[1] - 1
    if is_split:
        target = np.full(rows.size, -1, dtype=np.int64)
    else:
        # Pattern index of each row on (k_i, k_j): (1,0) -> 0, (0,1) -> 1, (1,1) -> 2.
        target = np.where(Zb[rows, k_i], np.where(Zb[rows, k_j], 2, 0), 1).astype(np.int64)
    log_q = _launch_scans(X, launch, rows, a, b, target, n_intermediate, sigma_x, sigma_a,
                          beta, rng)
    if is_split:
        Zs, Zm = launch, Zf
    else:
        Zs = np.column_stack([rest, Zf[:, k_i], Zf[:, k_j]])
        Zm = np.column_stack([rest, Zf[:, k_i] + Zf[:, k_j] - Zf[:, k_i] * Zf[:, k_j]])
    m_a, m_b = float(Zs[:, -2].sum()), float(Zs[:, -1].sum())
    m_k = float(Zm[:, -1].sum()) if not is_split else float(Zf[:, k_i].sum())
    log_ratio = (
        math.log(alpha * beta)
        + _log_column_prior(m_a, N, beta)
        + _log_column_prior(m_b, N, beta)
        - _log_column_prior(m_k, N, beta)
        + _log_likelihood(X, Zs, sq_norm, sigma_x, sigma_a)
        - _log_likelihood(X, Zm, sq_norm, sigma_x, sigma_a)
        - log_q
    )
    if not is_split:
        log_ratio = -log_ratio
    accepted = bool(math.log(rng.random()) < log_ratio)
    if not accepted:
        return Z, "split" if is_split else "merge", False
    new = Zb.astype(np.int8)
    if is_split:
        # a takes k's place, b a uniformly random one of the K + 1 positions.
        new[:, k_i] = Zs[:, -2]
        position = int(rng.integers(new.shape[1] + 1))
        new = np.insert(new, position, Zs[:, -1].astype(np.int8), axis=1)
        return np.ascontiguousarray(new), "split", True
    # The OR takes k_i's place and k_j's column goes: the exact reverse of the split.
    new[:, k_i] = Zm[:, -1]
    return np.ascontiguousarray(np.delete(new, k_j, axis=1)), "merge", True


def split_merge_proposals(X, Z, n_proposals, alpha, beta, sigma_x, sigma_a, rng,
                          n_intermediate=N_INTERMEDIATE_SCANS):
    """Make ``n_proposals`` split-merge proposals in turn (:func:`split_merge_proposal`).

    Returns
    -------
    Z : ndarray of shape (n_samples, n_features'), int8
        The final matrix (the input object if nothing was accepted).
    counts : ndarray of shape (4,), int64
        Splits proposed, splits accepted, merges proposed, merges accepted.
    """
    X = np.asarray(X, dtype=np.float64)
    sq_norm = float(np.sum(X**2))
    counts = np.zeros(4, dtype=np.int64)
    for _ in range(int(n_proposals)):
        Z, move, accepted = split_merge_proposal(
            X, Z, alpha, beta, sigma_x, sigma_a, rng, n_intermediate, sq_norm
        )
        if move is not None:
            base = SPLITS_PROPOSED if move == "split" else MERGES_PROPOSED
            counts[base] += 1
            counts[base + 1] += accepted
    return Z, counts


def apply_split_merge(state, n_proposals, rng, spare=8) -> int:
    """Run the proposals on a :class:`~sklearn_ibp.solvers.ibp._base.FeatureState`.

    The live columns of ``state.Z`` are replaced by the result (capacity kept at least
    ``n_features + spare``) and the proposal counts are added to
    ``state.stats["split_merge"]`` (splits proposed, splits accepted, merges proposed,
    merges accepted). The caller refreshes its statistics when the return value is
    positive.

    Returns
    -------
    int
        Number of accepted proposals.
    """
    Z0 = state.active_Z
    live = Z0.any(axis=0)
    Z_in = Z0[:, live] if not live.all() else Z0
    Z_out, counts = split_merge_proposals(
        state.X, Z_in, n_proposals, state.alpha, state.beta, state.sigma_x, state.sigma_a, rng
    )
    total = state.stats.get("split_merge")
    state.stats["split_merge"] = counts if total is None else total + counts
    n_accepted = int(counts[SPLITS_ACCEPTED] + counts[MERGES_ACCEPTED])
    if n_accepted:
        K = Z_out.shape[1]
        state.Z = with_capacity(Z_out, K, max(state.Z.shape[1], K + spare))
        state.n_features = K
    return n_accepted
