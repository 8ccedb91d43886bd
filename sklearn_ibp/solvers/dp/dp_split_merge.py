"""Split-merge sampling for conjugate DP mixtures (Jain and Neal 2004).

Gibbs sampling of one indicator at a time (Algorithm 3 of Görür 2007, sec. 3.2.1) moves whole
clusters only through a chain of improbable intermediate states, so it can take very long
to split a cluster that holds two groups or to merge two halves of one. Jain and Neal's
*restricted Gibbs sampling* split-merge moves propose such changes in one Metropolis-Hastings
step: pick two rows, build a launch state for the rows of their clusters by a few restricted
Gibbs scans between two components, and propose either the split (final restricted scan)
or the merge; the proposal probability of the restricted scans enters the acceptance ratio
(see :mod:`sklearn_ibp.solvers.dp._dp_split_merge_kernels` for the ratios). Each sweep makes
``n_proposals`` proposals and then one collapsed Gibbs sweep
(:class:`~sklearn_ibp.solvers.dp.dp_collapsed.CollapsedDP`), which the split-merge moves
complement rather than replace.

As for the collapsed sampler there are two paths: numba kernels for the Normal-Wishart base
and a generic Python path (through ``base.log_predictive`` and ``base.log_marginal``) for
any other conjugate base; they draw the same random numbers and make the same choices.
"""

from __future__ import annotations

import math
from numbers import Integral

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from ...likelihoods._normal_wishart_kernels import allocate_slots
from ._dp_base import MixtureState
from ._dp_split_merge_kernels import split_merge_nw
from .dp_collapsed import CollapsedDP

__all__ = ["SplitMergeDP"]


def _sigmoid(d):
    if d >= 0.0:
        return 1.0 / (1.0 + math.exp(-d))
    e = math.exp(d)
    return e / (1.0 + e)


def _log_sigmoid(d):
    if d >= 0.0:
        return -math.log1p(math.exp(-d))
    return d - math.log1p(math.exp(d))


class SplitMergeDP(CollapsedDP):
    """Restricted-Gibbs split-merge moves (Jain and Neal 2004) with collapsed Gibbs sweeps.

    Parameters
    ----------
    n_proposals : int, default=5
        Split-merge proposals per sweep, made before the Gibbs sweep (Jain and Neal make
        one per Gibbs scan; a few more find the one pair of clusters worth merging among
        many sooner). A proposal costs about as much as ``n_intermediate + 2`` Gibbs scans
        of the two clusters involved (N = 10^4 rows in 8 clusters: ~1 ms).
    n_intermediate : int, default=5
        Restricted Gibbs scans that build each proposal's launch state (Jain and Neal's
        ``t``; they use about 5).
    launch : {"sequential", "random"}, default="sequential"
        How the launch state starts before the intermediate scans: "random" puts each row
        with either anchor with probability 1/2 (Jain and Neal); "sequential" allocates the
        rows one after the other by the restricted-Gibbs probabilities given the rows
        allocated so far, which lets the scans find a split of a large cluster.
    scan_order : {"sequential", "random"}, default="sequential"
        Row order of the Gibbs sweep (see :class:`CollapsedDP`).
    use_kernels : bool, default=True
        Use the numba path for the Normal-Wishart base (see :class:`CollapsedDP`).

    Notes
    -----
    ``state.stats["split_merge"]`` counts the split proposals, accepted splits and
    accepted merges since the chain started (merge proposals are the rest).
    """

    name = "split_merge"
    bases = ("conjugate",)
    #: Splits whole clusters, so a chain can start with every row in one cluster
    #: (``DPMixture(init="auto")``).
    proposes_splits = True

    _parameter_constraints: dict = {
        **CollapsedDP._parameter_constraints,
        "n_proposals": [Interval(Integral, 0, None, closed="left")],
        "n_intermediate": [Interval(Integral, 0, None, closed="left")],
        "launch": [StrOptions({"sequential", "random"})],
    }

    def __init__(
        self, n_proposals=5, n_intermediate=5, launch="sequential", scan_order="sequential",
        use_kernels=True,
    ):
        super().__init__(scan_order=scan_order, use_kernels=use_kernels)
        self.n_proposals = n_proposals
        self.n_intermediate = n_intermediate
        self.launch = launch

    def initialize(self, X, labels, alpha, base, rng) -> MixtureState:
        state = super().initialize(X, labels, alpha, base, rng)
        state.stats["split_merge"] = {
            "proposals": 0, "splits_proposed": 0, "splits_accepted": 0, "merges_accepted": 0,
        }
        return state

    def sweep(self, state: MixtureState, base, rng) -> None:
        """``n_proposals`` split-merge proposals, then one collapsed Gibbs sweep."""
        self.propose(state, base, rng)
        super().sweep(state, base, rng)

    def propose(self, state: MixtureState, base, rng) -> int:
        """Make ``n_proposals`` split-merge proposals (no Gibbs sweep); returns how many
        were accepted. Labels are compact again afterwards."""
        self._check_base(state, base)
        if state.X.shape[0] < 2 or self.n_proposals == 0:
            return 0
        if state.stats["kernels"]:
            counts = self._propose_kernels(state, rng)
        else:
            counts = self._propose_python(state, base, rng)
        log = state.stats["split_merge"]
        log["proposals"] += int(self.n_proposals)
        log["splits_proposed"] += counts[0]
        log["splits_accepted"] += counts[1]
        log["merges_accepted"] += counts[2]
        self._compact(state)
        return counts[1] + counts[2]

    def _propose_kernels(self, state, rng):
        st = state.stats
        N, D = state.X.shape
        temp = allocate_slots(3, D)
        anchors = np.empty(2, dtype=np.int64)
        members = np.empty(N, dtype=np.int64)
        side = np.empty(N, dtype=np.int64)
        original = np.empty(N, dtype=np.int64)
        work = np.empty(2 * D)
        done, totals = 0, np.zeros(3, dtype=np.int64)
        while done < self.n_proposals:
            self._ensure_capacity(state)
            made, n_slots, *counts = split_merge_nw(
                state.X, state.labels, st["slots"], st["prior"], st["n_slots"],
                math.log(state.alpha), int(self.n_proposals) - done, int(self.n_intermediate),
                self.launch == "sequential", rng, temp, anchors, members, side, original, work,
            )
            st["n_slots"] = int(n_slots)
            done += int(made)
            totals += np.asarray(counts, dtype=np.int64)
        return [int(c) for c in totals]

    # ------------------------------------------------------------- Python path
    def _propose_python(self, state, base, rng):
        X, labels = state.X, state.labels
        N = X.shape[0]
        log_alpha = math.log(state.alpha)
        n_slots = state.stats["n_slots"]
        splits_proposed = splits_accepted = merges_accepted = 0
        for _ in range(int(self.n_proposals)):
            i = int(rng.random() * N)
            j = int(rng.random() * (N - 1))
            if j >= i:
                j += 1
            ci, cj = labels[i], labels[j]
            members = [r for r in range(N) if r not in (i, j) and labels[r] in (ci, cj)]
            original = [0 if labels[r] == ci else 1 for r in members]
            anchors = (i, j)
            side = self._launch_python(base, X, anchors, members, rng)
            for _ in range(int(self.n_intermediate)):
                self._scan_python(base, X, anchors, members, side, None, rng)
            if ci == cj:
                splits_proposed += 1
                log_q = self._scan_python(base, X, anchors, members, side, None, rng)
                rows_a = [i] + [r for r, s in zip(members, side, strict=True) if s == 0]
                rows_b = [j] + [r for r, s in zip(members, side, strict=True) if s == 1]
                log_ratio = (
                    log_alpha + math.lgamma(len(rows_a)) + math.lgamma(len(rows_b))
                    - math.lgamma(len(rows_a) + len(rows_b))
                    + base.log_marginal(X[rows_a]) + base.log_marginal(X[rows_b])
                    - base.log_marginal(X[rows_a + rows_b]) - log_q
                )
                if rng.random() < math.exp(min(0.0, log_ratio)):
                    occupied = np.bincount(labels, minlength=n_slots + 1)
                    new = int(np.flatnonzero(occupied[: n_slots + 1] == 0)[0])
                    n_slots = max(n_slots, new + 1)
                    labels[rows_a] = new
                    splits_accepted += 1
            else:
                log_q = self._scan_python(base, X, anchors, members, side, original, rng)
                rows_a = [i] + [r for r, s in zip(members, original, strict=True) if s == 0]
                rows_b = [j] + [r for r, s in zip(members, original, strict=True) if s == 1]
                log_ratio = (
                    -log_alpha + math.lgamma(len(rows_a) + len(rows_b))
                    - math.lgamma(len(rows_a)) - math.lgamma(len(rows_b))
                    + base.log_marginal(X[rows_a + rows_b])
                    - base.log_marginal(X[rows_a]) - base.log_marginal(X[rows_b]) + log_q
                )
                if rng.random() < math.exp(min(0.0, log_ratio)):
                    labels[rows_b] = ci
                    merges_accepted += 1
        state.stats["n_slots"] = n_slots
        return [splits_proposed, splits_accepted, merges_accepted]

    def _launch_python(self, base, X, anchors, members, rng):
        """The launch allocation of ``S`` (see the kernels' module docstring)."""
        side = []
        rows = ([anchors[0]], [anchors[1]])
        for row in members:
            if self.launch == "sequential":
                x = X[row : row + 1]
                d = (
                    math.log(len(rows[0])) + base.log_predictive(x, X[rows[0]])[0]
                    - math.log(len(rows[1])) - base.log_predictive(x, X[rows[1]])[0]
                )
                t = 0 if rng.random() < _sigmoid(d) else 1
            else:
                t = 0 if rng.random() < 0.5 else 1
            side.append(t)
            rows[t].append(row)
        return side

    @staticmethod
    def _scan_python(base, X, anchors, members, side, forced, rng):
        """One restricted Gibbs scan (see ``restricted_scan`` in the kernels): samples each
        row's side, or with ``forced`` scores the forced sides; returns the log probability
        of the sides chosen."""
        log_q = 0.0
        for q, row in enumerate(members):
            rows = [
                [anchors[t]] + [r for p, r in enumerate(members) if p != q and side[p] == t]
                for t in (0, 1)
            ]
            x = X[row : row + 1]
            l0 = math.log(len(rows[0])) + base.log_predictive(x, X[rows[0]])[0]
            l1 = math.log(len(rows[1])) + base.log_predictive(x, X[rows[1]])[0]
            d = l0 - l1
            if forced is None:
                new = 0 if rng.random() < _sigmoid(d) else 1
            else:
                new = forced[q]
            log_q += _log_sigmoid(d) if new == 0 else _log_sigmoid(-d)
            side[q] = new
        return log_q
