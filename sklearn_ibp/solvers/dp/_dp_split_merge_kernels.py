"""Numba kernels of the restricted-Gibbs split-merge sampler for the conjugate DP mixture of
Gaussians (Jain and Neal 2004), with the Normal-Wishart statistics of
:mod:`sklearn_ibp.likelihoods._normal_wishart_kernels`.

A proposal picks two distinct rows ``i`` and ``j``; ``S`` are the other rows of their
clusters, in increasing row order. The *launch state* puts ``i`` in component A and ``j``
in component B and every row of ``S`` in A or B, and then runs ``n_intermediate``
restricted Gibbs scans over ``S``: row ``k`` goes to A with probability
``~ n_A,-k p(x_k | A_-k)`` and to B with ``~ n_B,-k p(x_k | B_-k)`` (Student-t predictives,
eq. 3.65 of Görür 2007). Jain and Neal assign the rows of ``S`` to A or B with probability 1/2
each (``sequential_launch=False``); on large clusters both halves of such a launch look
alike and the restricted scans barely break the tie. With ``sequential_launch=True`` the
rows are allocated one after the other with the restricted-Gibbs probabilities given the
rows allocated so far (as in Dahl's sequentially allocated merge-split). Either launch uses
only ``S``, ``i``, ``j`` and the data, never the current allocation of ``S``, which is what
the acceptance ratios below need. Then

* if ``i`` and ``j`` share a cluster, one more restricted scan gives the split proposal and
  its probability ``q(split | launch)``; the split is accepted with probability
  ``min(1, alpha Gamma(n_A) Gamma(n_B) / Gamma(n_A + n_B) p(X_A) p(X_B) / p(X_A+B)
  / q(split | launch))``;
* otherwise the merge of both clusters is proposed; ``q(current split | launch)`` is the
  probability that a restricted scan from the launch state reproduces the current two
  clusters, and the merge is accepted with probability ``min(1, Gamma(n_A + n_B) /
  (alpha Gamma(n_A) Gamma(n_B)) p(X_A+B) / (p(X_A) p(X_B)) q(current | launch))``.

The launch state depends on the current state only through ``S`` and ``(i, j)``, which a
split and its reverse merge share; that makes these Metropolis-Hastings ratios exact.
Random numbers: two uniforms for ``(i, j)``, one per row of ``S`` for the launch, one per
row of ``S`` in every sampled scan, one for the acceptance; the Python path of
:class:`~sklearn_ibp.solvers.dp.dp_split_merge.SplitMergeDP` draws the same ones.
"""

import math

import numpy as np
from numba import njit

from ...likelihoods._normal_wishart_kernels import (
    LEAF,
    RATIO_FLOOR,
    add_row,
    copy_slot,
    empty_slot,
    log_marginal_slot,
    log_predictive_slot,
    log_predictive_without,
    removal_ratio,
    remove_row,
)
from ._dp_collapsed_kernels import first_free_slot

# Typed values, not Python ints: numba compiles a callee once per literal argument
# (Literal[int](0), (1), ...), so modes and slots passed as constants multiplied the
# compilations of restricted_scan and of the slot kernels.
SAMPLE, SAMPLE_AND_SCORE, SCORE_FORCED = np.int64(0), np.int64(1), np.int64(2)
_SLOT_A, _SLOT_B, _SLOT_MERGED = np.int64(0), np.int64(1), np.int64(2)


@njit(**LEAF)
def log_sigmoid(d):
    """``log(1 / (1 + exp(-d)))`` without overflow."""
    if d >= 0.0:
        return -math.log1p(math.exp(-d))
    return d - math.log1p(math.exp(d))


@njit(**LEAF)
def sigmoid(d):
    """``1 / (1 + exp(-d))`` without overflow."""
    if d >= 0.0:
        return 1.0 / (1.0 + math.exp(-d))
    e = math.exp(d)
    return e / (1.0 + e)


@njit(**LEAF)
def _rebuild_side(t, anchor, members, side, m, skip, X, temp, prior, work):
    """Component ``t`` afresh: its anchor row and the rows of ``S`` on side ``t`` except
    the one at position ``skip``."""
    empty_slot(t, temp, prior)
    add_row(X[anchor], t, temp, prior, work)
    for q in range(m):
        if q != skip and side[q] == t:
            add_row(X[members[q]], t, temp, prior, work)


@njit(**LEAF)
def restricted_scan(X, anchors, members, side, m, forced, temp, prior, rng, work, mode):
    """One restricted Gibbs scan over ``S`` between components 0 (A) and 1 (B), in place.

    ``mode`` is ``SAMPLE`` (draw each row), ``SAMPLE_AND_SCORE`` (draw and return the log
    probability of the draws) or ``SCORE_FORCED`` (set each row to ``forced`` and return
    the log probability a sampled scan would have had of doing so; no random numbers).
    """
    counts = temp[0]
    log_q = 0.0
    for q in range(m):
        x = X[members[q]]
        own = side[q]
        other = 1 - own
        n_own = counts[own]
        ratio = removal_ratio(x, own, temp, prior, work)
        detached = False
        if ratio < RATIO_FLOOR:
            _rebuild_side(own, anchors[own], members, side, m, q, X, temp, prior, work)
            detached = True
            l_own = log_predictive_slot(x, own, temp, prior, work)
        else:
            l_own = log_predictive_without(x, own, ratio, temp, prior)
        l_own += math.log(n_own - 1.0)
        l_other = math.log(counts[other]) + log_predictive_slot(x, other, temp, prior, work)
        d = l_own - l_other if own == 0 else l_other - l_own  # log odds of side 0
        if mode == SCORE_FORCED:
            new = forced[q]
        else:
            new = 0 if rng.random() < sigmoid(d) else 1
        if mode != SAMPLE:
            log_q += log_sigmoid(d) if new == 0 else log_sigmoid(-d)
        if new == own:
            if detached:
                add_row(x, own, temp, prior, work)
            continue
        if not detached and not remove_row(x, own, temp, prior, work):
            _rebuild_side(own, anchors[own], members, side, m, q, X, temp, prior, work)
        add_row(x, other, temp, prior, work)
        side[q] = new
    return log_q


@njit(cache=True)
def split_merge_nw(
    X, labels, slots, prior, n_slots, log_alpha, n_proposals, n_intermediate,
    sequential_launch, rng, temp, anchors, members, side, original, work,
):
    """``n_proposals`` split-merge proposals (Jain and Neal 2004) on the slot statistics.

    ``temp`` holds three scratch slots (A, B and the merged cluster); ``anchors`` (2,),
    ``members``, ``side`` and ``original`` (N,) are scratch arrays. Returns
    ``(proposals_done, n_slots, splits_proposed, splits_accepted, merges_accepted)``;
    it stops before a proposal, having drawn nothing for it, when every slot is in use.
    """
    N, D = X.shape
    counts = slots[0]
    capacity = counts.shape[0]
    splits_proposed = 0
    splits_accepted = 0
    merges_accepted = 0
    for proposal in range(n_proposals):
        if n_slots >= capacity:
            return proposal, n_slots, splits_proposed, splits_accepted, merges_accepted
        i = int(rng.random() * N)
        j = int(rng.random() * (N - 1))
        if j >= i:
            j += 1
        ci = labels[i]
        cj = labels[j]
        m = 0
        for r in range(N):
            if r != i and r != j and (labels[r] == ci or labels[r] == cj):
                members[m] = r
                original[m] = 0 if labels[r] == ci else 1
                m += 1
        # Launch state: i in A, j in B, the rest at random or allocated one after the other,
        # then intermediate scans.
        anchors[0] = i
        anchors[1] = j
        empty_slot(_SLOT_A, temp, prior)
        add_row(X[i], _SLOT_A, temp, prior, work)
        empty_slot(_SLOT_B, temp, prior)
        add_row(X[j], _SLOT_B, temp, prior, work)
        for q in range(m):
            x = X[members[q]]
            if sequential_launch:
                d = (
                    math.log(temp[0][0]) + log_predictive_slot(x, _SLOT_A, temp, prior, work)
                    - math.log(temp[0][1]) - log_predictive_slot(x, _SLOT_B, temp, prior, work)
                )
                side[q] = 0 if rng.random() < sigmoid(d) else 1
            else:
                side[q] = 0 if rng.random() < 0.5 else 1
            add_row(x, side[q], temp, prior, work)
        for _ in range(n_intermediate):
            restricted_scan(X, anchors, members, side, m, original, temp, prior, rng, work,
                            SAMPLE)
        if ci == cj:
            splits_proposed += 1
            log_q = restricted_scan(X, anchors, members, side, m, original, temp, prior, rng,
                                    work, SAMPLE_AND_SCORE)
            n_a = temp[0][0]
            n_b = temp[0][1]
            log_ratio = (
                log_alpha
                + math.lgamma(n_a) + math.lgamma(n_b) - math.lgamma(n_a + n_b)
                + log_marginal_slot(n_a, temp[4][0], prior, D)
                + log_marginal_slot(n_b, temp[4][1], prior, D)
                - log_marginal_slot(counts[ci], slots[4][ci], prior, D)
                - log_q
            )
            if rng.random() < math.exp(min(0.0, log_ratio)):
                new = first_free_slot(counts, n_slots)
                if new == n_slots:
                    n_slots += 1
                copy_slot(temp, 0, slots, new)
                copy_slot(temp, 1, slots, ci)
                labels[i] = new
                for q in range(m):
                    if side[q] == 0:
                        labels[members[q]] = new
                splits_accepted += 1
        else:
            log_q = restricted_scan(X, anchors, members, side, m, original, temp, prior, rng,
                                    work, SCORE_FORCED)
            n_a = counts[ci]
            n_b = counts[cj]
            # The merged statistics: the larger cluster's, plus the smaller's rows.
            big, small_side = (ci, 1) if n_a >= n_b else (cj, 0)
            copy_slot(slots, big, temp, _SLOT_MERGED)
            add_row(X[anchors[small_side]], _SLOT_MERGED, temp, prior, work)
            for q in range(m):
                if original[q] == small_side:
                    add_row(X[members[q]], _SLOT_MERGED, temp, prior, work)
            log_ratio = (
                -log_alpha
                + math.lgamma(n_a + n_b) - math.lgamma(n_a) - math.lgamma(n_b)
                + log_marginal_slot(n_a + n_b, temp[4][2], prior, D)
                - log_marginal_slot(n_a, slots[4][ci], prior, D)
                - log_marginal_slot(n_b, slots[4][cj], prior, D)
                + log_q
            )
            if rng.random() < math.exp(min(0.0, log_ratio)):
                copy_slot(temp, 2, slots, ci)
                counts[cj] = 0
                labels[j] = ci
                for q in range(m):
                    if original[q] == 1:
                        labels[members[q]] = ci
                merges_accepted += 1
    return n_proposals, n_slots, splits_proposed, splits_accepted, merges_accepted
