"""Parallel sub-cluster split-merge sampling for the conjugate DP mixture of Gaussians,
after Chang and Fisher (2013, "Parallel sampling of DP mixture models using sub-cluster
splits", NIPS), made exact.

Chang and Fisher make a DP mixture sampler parallel by representing the weights and
parameters of the occupied clusters: given them the rows are independent, so every row is
drawn at once (in parallel), and clusters are created and removed only by split and merge
moves accepted by Metropolis-Hastings, the splits proposed along two *sub-clusters* that
every cluster carries. This solver keeps the first idea as it is and builds the
sub-clusters of each proposal afresh, so that every step leaves the DP posterior over
partitions invariant (checked by enumeration in the tests).

One iteration (``sweep``)
-------------------------
The state is the partition ``c`` with its per-cluster sufficient statistics (count, sum
and scatter of the rows). With ``K`` occupied clusters:

1. **Weights and parameters given the partition.** Given ``c`` the random measure of
   the DP has weights ``(pi_1 .. pi_K, pi_rest) ~ Dir(n_1 .. n_K, alpha)`` on the occupied
   clusters and the rest (Görür 2007, sec. 3.2.2, the finite representation of the
   posterior of ``G``), and ``theta_k | X_k`` is the Normal-Wishart posterior (sec.
   3.3.1). Only ``pi_k`` relative to each other is needed below (the rows are
   restricted to the occupied clusters), so ``pi_k ~ Gamma(n_k)`` unnormalised.
2. **Rows, all at once.** The rows are independent given the measure:
   ``P(c_i = k) ~ pi_k N(x_i | theta_k)``. Restricting them to the ``K`` occupied
   clusters (the reverse of a move must be possible, so no cluster may empty) is done
   with an auxiliary *anchor* per cluster: ``a_k`` uniform among the rows of cluster
   ``k``, ``p(a | c) = prod_k 1 / n_k``. Given the anchors every other row is drawn from
   its restricted conditional, independently (the parallel step), and the anchors stay.
   The proposal and its reverse use the same anchors, and the rows' terms cancel against
   the target, leaving the Metropolis-Hastings ratio ``prod_k n_k / n'_k`` (``n'`` the
   new counts) from ``p(a | c)``: the row step is accepted whole with probability
   ``min(1, prod_k n_k / n'_k)``, which is close to one once the counts settle (it only
   checks that the anchors were not the reason a cluster grew or shrank).
3. **Split-merge proposals** (``n_proposals`` of them), restricted-Gibbs in the manner of
   Jain and Neal (2004), with the restricted scans *blocked* as in Chang and Fisher: two
   rows ``i != j`` are drawn uniformly; ``S`` are the other rows of their clusters. The
   *launch* gives ``i`` to sub-cluster A and ``j`` to B; sub-cluster weights
   ``(w_A, w_B) ~ Dir(m_A + 1, m_B + 1)`` and parameters ``theta_A | X_A``,
   ``theta_B | X_B`` are drawn given the rows each holds (at first only its anchor row),
   then every row of ``S`` is drawn at once, ``P(s_r = A) ~ w_A N(x_r | theta_A)``; this
   is repeated ``n_intermediate`` times and the sub-cluster weights and parameters are
   drawn once more, ``phi``. All of it depends only on ``i``, ``j``, the rows of ``S``
   and fresh random numbers, never on how ``S`` is currently split between the two
   clusters, so a split and its reverse merge draw ``phi`` from the same distribution;
   ``phi`` is an auxiliary variable of the move, and given it the split proposes
   ``s_r ~ q(s_r | x_r, phi)`` independently with ``q(s | phi) = prod_r q(s_r | x_r,
   phi)``. The acceptance ratios (``m(.)`` the Normal-Wishart marginal likelihood,
   Görür 2007 sec. 3.3.2) are

   * split of a cluster ``C = A u B`` (``c_i = c_j``):
     ``alpha Gamma(n_A) Gamma(n_B) / Gamma(n_C) m(X_A) m(X_B) / m(X_C) / q(s | phi)``;
   * merge of clusters ``A`` and ``B`` (``c_i != c_j``):
     ``Gamma(n_C) / (alpha Gamma(n_A) Gamma(n_B)) m(X_C) / (m(X_A) m(X_B)) q(s* | phi)``
     with ``s*`` the current allocation of ``S``.

   The first factor of each is the ratio of the DP posteriors of the two partitions (CRP
   prior times marginal likelihoods), the second the proposal's: the move on the space
   extended by ``phi`` (whose distribution does not depend on the current state) is a
   Metropolis-Hastings move whose reverse is the merge with the same ``(i, j)`` and
   ``phi``; the choice of ``(i, j)`` has the same probability both ways.
4. ``alpha`` given the number of clusters and the base's hyperparameters given parameters
   drawn from the clusters' posteriors, as the other DP solvers (the estimator's loop,
   :meth:`BaseDPSolver.update_state`).

Why not Chang and Fisher's persistent sub-clusters
--------------------------------------------------
Chang and Fisher keep the sub-cluster labels and parameters of every cluster in the
state from one iteration to the next, learning them as the chain runs, and accept a split
with the posterior ratio alone. For the augmented chain to leave the DP posterior
invariant, the sub-cluster variables of cluster ``k`` need a conditional given the
partition, and the one their Gibbs updates leave invariant is the posterior of a
two-component mixture of ``X_k``, whose normaliser (the marginal likelihood of ``X_k``
under that mixture, a sum over ``2^{n_k}`` sub-labellings) changes whenever a row joins
or leaves the cluster: it enters the ratio of every row move and of every split and merge,
and it cannot be computed. So here the sub-clusters live inside one proposal (its launch
and scans) and are rebuilt for the next; on 8 well separated Gaussians a proposal's few
blocked scans find the split as the persistent sub-clusters would. The optional random
split moves of Chang and Fisher are not implemented.

Parallelism and reproducibility
-------------------------------
The row step and every scan of a proposal are one pass of
:func:`~sklearn_ibp.solvers.dp._dp_subcluster_kernels.assign_blocks` over fixed blocks of
``block_size`` rows (2**16) in ``numba.prange``: the uniform of row ``r`` is a
counter-based hash of ``(key, r)`` with the key drawn from the chain's generator, and the
sufficient statistics are summed per block in row order and combined in block order, so
the chain is the same, bit for bit, for any number of threads. Everything else (the
weights, parameters, anchors, pairs and acceptances) is drawn from the chain's
``numpy.random.Generator`` in the driver.

Bases: the conjugate Normal-Wishart base (``base="conjugate"``). The conditionally
conjugate base and the factor analysers have no closed-form marginal likelihood, which
the split and merge ratios need, so the estimator refuses them for this solver.
"""

from __future__ import annotations

import math
from numbers import Integral

import numba
import numpy as np
from sklearn.utils._param_validation import Interval

from ..._memory import check_allocation
from ...likelihoods._normal_wishart_kernels import cholesky_lower
from ._dp_base import BaseDPSolver, MixtureState
from ._dp_subcluster_kernels import (
    SAMPLE,
    SCORE_FORCED,
    STATS_ONLY,
    assign_blocks,
    find_anchors,
    pair_members,
)

__all__ = ["SubClusterDP"]

_LOG_2PI = math.log(2.0 * math.pi)
_EMPTY_INT = np.zeros(0, dtype=np.int64)
#: Prior count of each sub-cluster's weight in the proposals' scans (Dir(m_A + 1, m_B + 1)).
_SUB_PRIOR = 1.0


class _NormalWishartModel:
    """What the sampler asks of a conjugate base, from sufficient statistics: a posterior
    draw of a component (mean, lower Cholesky factor of its precision, log normalising
    constant) and the log marginal likelihood. A test can substitute another model (a
    flat likelihood) by overriding :meth:`SubClusterDP._component_model`."""

    def __init__(self, base):
        self.base = base

    def draw(self, n, total, scatter, shift, rng):
        n_, mean, W_star = self.base.posterior_statistics_from_sums(n, total, scatter, shift)
        L, ok = cholesky_lower(np.ascontiguousarray(W_star))
        if not ok:
            raise FloatingPointError("W* is not positive definite.")
        mu, S = self.base.sample_posterior_from_statistics(n_, mean, L, rng)
        P, ok = cholesky_lower(np.ascontiguousarray(S))
        if not ok:  # a numerically singular precision: add a relative ridge
            S = S + 1e-12 * np.trace(S) * np.eye(S.shape[0])
            P, ok = cholesky_lower(np.ascontiguousarray(S))
        D = mu.shape[0]
        log_norm = float(np.sum(np.log(np.diag(P)))) - 0.5 * D * _LOG_2PI
        return mu, P, log_norm, S

    def log_marginal(self, n, total, scatter, shift):
        n_, _, W_star = self.base.posterior_statistics_from_sums(n, total, scatter, shift)
        return self.base.log_marginal_from_statistics(n_, W_star)


class SubClusterDP(BaseDPSolver):
    """Parallel sub-cluster split-merge sampler for the conjugate DP mixture (Chang and
    Fisher 2013, made exact; see the module docstring for the moves and their ratios).

    Parameters
    ----------
    n_proposals : int, default=4
        Split-merge proposals per sweep, after the row step. Each costs
        ``n_intermediate + 2`` passes over the rows of the one or two clusters involved.
    n_intermediate : int, default=3
        Blocked scans of a proposal's two sub-clusters before the final one (the first
        starts from the two anchor rows alone).
    n_threads : int, default=1
        Threads of the row step and the scans (numba ``prange`` over blocks of rows);
        -1 for numba's default (``NUMBA_NUM_THREADS``). The chain is bit-identical for
        any value. (``DPMixture(n_jobs=...)`` runs chains in separate processes; this
        parallelises one chain.)

    Attributes
    ----------
    block_size : int
        Rows per block of the statistics (2**16); a class attribute, so a test can use
        tiny blocks. Any thread count gives the same bits for a given ``block_size``.

    Notes
    -----
    ``state.stats["subcluster"]`` counts the row steps accepted, split proposals, accepted
    splits and accepted merges since the chain started.

    References
    ----------
    Chang, J. and Fisher, J. W. (2013). Parallel sampling of DP mixture models using
    sub-cluster splits. Advances in Neural Information Processing Systems 26.
    Jain, S. and Neal, R. M. (2004). A split-merge Markov chain Monte Carlo procedure for
    the Dirichlet process mixture model. Journal of Computational and Graphical Statistics
    13, 158-182.
    """

    name = "subcluster"
    bases = ("conjugate",)
    #: Splits whole clusters, so a chain can start with every row in one cluster.
    proposes_splits = True
    block_size = 2**16

    _parameter_constraints: dict = {
        "n_proposals": [Interval(Integral, 0, None, closed="left")],
        "n_intermediate": [Interval(Integral, 0, None, closed="left")],
        "n_threads": [Interval(Integral, -1, None, closed="left")],
    }

    def __init__(self, n_proposals=4, n_intermediate=3, n_threads=1):
        self.n_proposals = n_proposals
        self.n_intermediate = n_intermediate
        self.n_threads = n_threads

    # ------------------------------------------------------------------ set-up
    def _component_model(self, base):
        from ...likelihoods.normal_wishart import NormalWishartBase

        if not isinstance(base, NormalWishartBase):
            raise ValueError(
                "solver 'subcluster' serves the conjugate Normal-Wishart base "
                f"(base='conjugate'); got {type(base).__name__}. Its split and merge "
                "ratios need closed-form marginal likelihoods from sufficient statistics."
            )
        return _NormalWishartModel(base)

    def _blocks(self, n):
        return max(1, -(-int(n) // int(self.block_size)))

    def _pass(self, X, shift, index, n, comps, key, forced, mode, anchors, anchor_labels,
              out, C):
        """One :func:`assign_blocks` pass; returns per-block statistics combined in block
        order: ``(counts (C,), sums (C, D), scatters (C, D, D), log_q)``."""
        D = X.shape[1]
        n_blocks = self._blocks(n)
        means, chols, log_consts = comps
        counts = np.zeros((n_blocks, C), dtype=np.int64)
        sums = np.zeros((n_blocks, C, D))
        scatters = np.zeros((n_blocks, C, D, D))
        log_q = np.zeros(n_blocks)
        assign_blocks(X, shift, index, np.int64(n), means, chols, log_consts,
                      np.uint64(key), forced, mode, anchors, anchor_labels, out,
                      np.int64(self.block_size), counts, sums, scatters, log_q)
        # combine in block order (the same bits for any thread count)
        total_counts = counts[0].copy()
        total_sums = sums[0].copy()
        total_scatters = scatters[0].copy()
        total_q = log_q[0]
        for b in range(1, n_blocks):
            total_counts += counts[b]
            total_sums += sums[b]
            total_scatters += scatters[b]
            total_q += log_q[b]
        return total_counts, total_sums, total_scatters, float(total_q)

    def initialize(self, X, labels, alpha, base, rng) -> MixtureState:
        """A chain state from the partition ``labels``: the labels compacted and every
        cluster's sufficient statistics."""
        self._component_model(base)
        X = np.array(X, dtype=np.float64, order="C", copy=True)
        N, D = X.shape
        labels = np.asarray(labels, dtype=np.int64)
        _, labels = np.unique(labels, return_inverse=True)
        labels = np.ascontiguousarray(labels.reshape(-1), dtype=np.int64)
        K = int(labels.max()) + 1
        check_allocation(
            8.0 * self._blocks(N) * (K + 2) * (D * D + D + 1),
            what=f"the per-block statistics of {K} clusters ({D} features)",
            advice="start from fewer clusters (init='single') or reduce n_features",
        )
        shift = X.mean(axis=0)
        state = MixtureState(X=X, labels=labels, n_clusters=K, alpha=float(alpha))
        state.stats["shift"] = shift
        state.stats["buffer"] = np.empty(N, dtype=np.int64)
        self._recompute(state, K)
        state.stats["subcluster"] = {"row_steps_accepted": 0, "splits_proposed": 0,
                                     "splits_accepted": 0, "merges_accepted": 0,
                                     "proposals": 0}
        return state

    def _recompute(self, state, K):
        D = state.X.shape[1]
        comps = (np.zeros((1, D)), np.zeros((1, D, D)), np.zeros(1))
        counts, sums, scatters, _ = self._pass(
            state.X, state.stats["shift"], _EMPTY_INT, state.X.shape[0], comps, 0,
            state.labels, STATS_ONLY, _EMPTY_INT, _EMPTY_INT, state.stats["buffer"], K)
        state.stats["counts"], state.stats["sums"] = counts, sums
        state.stats["scatters"] = scatters

    # ------------------------------------------------------------------ the sweep
    def sweep(self, state: MixtureState, base, rng) -> None:
        """Row step (all rows at once), then ``n_proposals`` split-merge proposals."""
        model = self._component_model(base)
        threads = numba.get_num_threads()
        wanted = numba.config.NUMBA_NUM_THREADS if self.n_threads == -1 else self.n_threads
        numba.set_num_threads(max(1, min(int(wanted), numba.config.NUMBA_NUM_THREADS)))
        try:
            self._row_step(state, model, rng)
            for _ in range(int(self.n_proposals)):
                self._propose(state, model, rng)
            self._compact(state)
        finally:
            numba.set_num_threads(threads)

    def _draw_components(self, model, counts, sums, scatters, shift, log_weights, rng):
        C = counts.shape[0]
        D = sums.shape[1]
        means = np.empty((C, D))
        chols = np.empty((C, D, D))
        log_consts = np.empty(C)
        for c in range(C):
            mu, P, log_norm, _ = model.draw(int(counts[c]), sums[c], scatters[c], shift, rng)
            means[c], chols[c] = mu, P
            log_consts[c] = log_weights[c] + log_norm
        return means, chols, log_consts

    def _row_step(self, state, model, rng):
        st = state.stats
        K = state.n_clusters
        if K == 1:
            st["subcluster"]["row_steps_accepted"] += 1
            return  # every row stays: nothing to draw
        counts = st["counts"]
        log_weights = np.log(rng.standard_gamma(counts.astype(float)))
        comps = self._draw_components(model, counts, st["sums"], st["scatters"],
                                      st["shift"], log_weights, rng)
        ranks = np.minimum((rng.random(K) * counts).astype(np.int64), counts - 1)
        anchors = np.empty(K, dtype=np.int64)
        find_anchors(state.labels, ranks, anchors)
        order = np.argsort(anchors, kind="stable")
        key = int(rng.integers(0, 2**63 - 1, dtype=np.int64))
        buffer = st["buffer"]
        new_counts, sums, scatters, _ = self._pass(
            state.X, st["shift"], _EMPTY_INT, state.X.shape[0], comps, key, _EMPTY_INT,
            SAMPLE, np.ascontiguousarray(anchors[order]), order.astype(np.int64), buffer, K)
        log_ratio = float(np.sum(np.log(counts) - np.log(new_counts)))
        if math.log(rng.random()) < log_ratio:
            st["buffer"], state.labels = state.labels, buffer
            st["counts"], st["sums"], st["scatters"] = new_counts, sums, scatters
            st["subcluster"]["row_steps_accepted"] += 1

    def _propose(self, state, model, rng):
        """One split-merge proposal (module docstring, step 3)."""
        st = state.stats
        X, labels = state.X, state.labels
        N, D = X.shape
        if N < 2:
            return
        st["subcluster"]["proposals"] += 1
        i = int(rng.random() * N)
        j = int(rng.random() * (N - 1))
        if j >= i:
            j += 1
        ci, cj = int(labels[i]), int(labels[j])
        members = st["buffer"]  # scratch: the buffer is free between row steps
        current = np.empty(N, dtype=np.int64) if "side" not in st else st["side"]
        st["side"] = current
        m = int(pair_members(labels, ci, cj, i, j, members, current))
        members = members[:m].copy()
        current = current[:m]
        shift = st["shift"]
        x_i, x_j = X[i] - shift, X[j] - shift
        anchor_stats = (
            (np.array([1, 1], dtype=np.int64), np.stack([x_i, x_j]),
             np.stack([np.tril(np.outer(x_i, x_i)), np.tril(np.outer(x_j, x_j))]))
        )
        sub_counts, sub_sums, sub_scatters = anchor_stats
        side = np.empty(m, dtype=np.int64)
        for _ in range(int(self.n_intermediate) + 1):
            comps = self._sub_components(model, sub_counts, sub_sums, sub_scatters, shift,
                                         rng)
            key = int(rng.integers(0, 2**63 - 1, dtype=np.int64))
            c, s, q, _ = self._pass(X, shift, members, m, comps, key, _EMPTY_INT, SAMPLE,
                                    _EMPTY_INT, _EMPTY_INT, side, 2)
            sub_counts = anchor_stats[0] + c
            sub_sums = anchor_stats[1] + s
            sub_scatters = anchor_stats[2] + q
        comps = self._sub_components(model, sub_counts, sub_sums, sub_scatters, shift, rng)
        log_alpha = math.log(state.alpha)
        counts, sums, scatters = st["counts"], st["sums"], st["scatters"]
        if ci == cj:
            st["subcluster"]["splits_proposed"] += 1
            key = int(rng.integers(0, 2**63 - 1, dtype=np.int64))
            c, s, q, log_q = self._pass(X, shift, members, m, comps, key, _EMPTY_INT,
                                        SAMPLE, _EMPTY_INT, _EMPTY_INT, side, 2)
            n_ab = anchor_stats[0] + c
            s_ab = anchor_stats[1] + s
            q_ab = anchor_stats[2] + q
            log_ratio = (
                log_alpha + math.lgamma(n_ab[0]) + math.lgamma(n_ab[1])
                - math.lgamma(n_ab[0] + n_ab[1])
                + model.log_marginal(int(n_ab[0]), s_ab[0], q_ab[0], shift)
                + model.log_marginal(int(n_ab[1]), s_ab[1], q_ab[1], shift)
                - model.log_marginal(int(counts[ci]), sums[ci], scatters[ci], shift)
                - log_q
            )
            if math.log(rng.random()) < log_ratio:
                new = state.n_clusters
                labels[i] = new
                labels[members[side == 0]] = new
                st["counts"] = np.append(counts, n_ab[0])
                st["counts"][ci] = n_ab[1]
                st["sums"] = np.concatenate([sums, s_ab[:1]])
                st["sums"][ci] = s_ab[1]
                st["scatters"] = np.concatenate([scatters, q_ab[:1]])
                st["scatters"][ci] = q_ab[1]
                state.n_clusters += 1
                st["subcluster"]["splits_accepted"] += 1
        else:
            _, _, _, log_q = self._pass(X, shift, members, m, comps, 0, current,
                                        SCORE_FORCED, _EMPTY_INT, _EMPTY_INT, side, 2)
            n_c = counts[ci] + counts[cj]
            s_c = sums[ci] + sums[cj]
            q_c = scatters[ci] + scatters[cj]
            log_ratio = (
                -log_alpha + math.lgamma(n_c) - math.lgamma(counts[ci])
                - math.lgamma(counts[cj])
                + model.log_marginal(int(n_c), s_c, q_c, shift)
                - model.log_marginal(int(counts[ci]), sums[ci], scatters[ci], shift)
                - model.log_marginal(int(counts[cj]), sums[cj], scatters[cj], shift)
                + log_q
            )
            if math.log(rng.random()) < log_ratio:
                labels[j] = ci
                labels[members[current == 1]] = ci
                counts[ci], sums[ci], scatters[ci] = n_c, s_c, q_c
                counts[cj] = 0
                sums[cj] = 0.0
                scatters[cj] = 0.0
                st["subcluster"]["merges_accepted"] += 1

    def _sub_components(self, model, counts, sums, scatters, shift, rng):
        """Weights ``Dir(m_A + 1, m_B + 1)`` and parameters of the two sub-clusters of a
        proposal, given their statistics."""
        log_w = np.log(rng.standard_gamma(counts.astype(float) + _SUB_PRIOR))
        return self._draw_components(model, counts, sums, scatters, shift, log_w, rng)

    def _compact(self, state):
        """Drop the clusters that merges emptied; labels ``0 .. K - 1`` again."""
        st = state.stats
        counts = st["counts"]
        keep = counts > 0
        if keep.all():
            return
        lookup = np.cumsum(keep) - 1
        state.labels[:] = lookup[state.labels]
        st["counts"] = counts[keep].copy()
        st["sums"] = st["sums"][keep].copy()
        st["scatters"] = st["scatters"][keep].copy()
        state.n_clusters = int(keep.sum())

    # ------------------------------------------------------------------ the rest
    def cluster_parameters(self, state, base, rng) -> dict:
        """A draw of every cluster's ``(mu, S)`` from its posterior, from the statistics."""
        model = self._component_model(base)
        st = state.stats
        K, D = state.n_clusters, state.X.shape[1]
        means = np.empty((K, D))
        precisions = np.empty((K, D, D))
        for k in range(K):
            mu, _, _, S = model.draw(int(st["counts"][k]), st["sums"][k],
                                     st["scatters"][k], st["shift"], rng)
            means[k], precisions[k] = mu, S
        return {"means": means, "precisions": precisions}

    def log_joint(self, state, base) -> float:
        """``log p(c | alpha) + log p(X | c)`` from the clusters' statistics."""
        model = self._component_model(base)
        st = state.stats
        counts = st["counts"]
        N = int(counts.sum())
        alpha = state.alpha
        value = (state.n_clusters * math.log(alpha) + math.lgamma(alpha)
                 - math.lgamma(alpha + N))
        for k in range(state.n_clusters):
            value += math.lgamma(counts[k]) + model.log_marginal(
                int(counts[k]), st["sums"][k], st["scatters"][k], st["shift"])
        return float(value)
