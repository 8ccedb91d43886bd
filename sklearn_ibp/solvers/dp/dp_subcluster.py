"""Parallel sub-cluster split-merge sampling for the conjugate DP mixture of Gaussians,
after Chang and Fisher (2013, "Parallel sampling of DP mixture models using sub-cluster
splits", NIPS), with every move exact.

Chang and Fisher make a DP mixture sampler parallel by representing the weights and
parameters of the clusters: given them the rows are independent, so every row is drawn at
once (in parallel), and clusters are created and removed by split and merge moves that
Metropolis-Hastings accepts, the splits proposed along two *sub-clusters* of a cluster.
This solver keeps that structure; the sub-clusters of a proposal are built for that
proposal (see "Why not persistent sub-clusters" below), and each move leaves the DP
posterior over partitions invariant (checked by enumeration in the tests).

One iteration (``sweep``)
-------------------------
The state is the partition ``c`` and each cluster's sufficient statistics (count, sum and
scatter of its rows). With ``K`` clusters of sizes ``n_k``:

1. **Weights and parameters given the partition.** Given ``c`` the DP's random measure
   ``G`` has weights ``(pi_1 .. pi_K, pi_rest) ~ Dir(n_1 .. n_K, alpha)`` on the clusters
   and the rest, the rest being ``pi_rest`` times an independent ``DP(alpha, G_0)``
   (GEM(alpha) weights, atoms from ``G_0``), and ``theta_k | X_k`` is the Normal-Wishart
   posterior (Görür 2007, secs. 3.2.2 and 3.3.1).
2. **Rows, all at once: Walker's slice step** (Walker 2007; Görür 2007, Algorithm 10) on
   that representation: ``u_i ~ U(0, pi_{c_i})``; the rest of the stick is broken into
   atoms drawn from ``G_0`` until what is left is below every ``u_i``; then each row,
   independently, ``P(c_i = k) ~ 1{pi_k > u_i} N(x_i | theta_k)``. Exact, so a cluster
   can empty (it is dropped) and a row can open a new cluster (one of the rest's atoms).
3. **Split, merge and reallocation proposals** (``n_proposals``). A proposal picks two
   rows ``i != j`` (the *anchors*) and works on the union ``U`` of their clusters
   (``S = U - {i, j}``, ``m = |S|``):

   * a *split* (probability ``(1 - rho - tau) / 2``; ``rho = reallocation_rate`` and
     ``tau = three_cluster_rate``, both 0 by default, 0.2 and 0.3 when enabled):
     ``i`` uniform over the rows, ``j`` uniform over the other rows of its cluster ``C``;
   * a *merge* (``(1 - rho - tau) / 2``) or a *reallocation* (``rho``): a cluster ``A`` uniform
     over the clusters, the partner cluster ``B`` with probability ``P(B | A)`` (half
     uniform over the other clusters, half the softmax of the clusters' merge scores, the
     log DP posterior ratio of merging them), and ``i`` and ``j`` inside ``A`` and ``B``
     with probabilities proportional to ``exp(-d^2/2)``, ``d`` the Mahalanobis distance of
     the row from its cluster's mean (central rows are likelier anchors). Call
     ``P_split(i, j | c)`` and ``P_pair(i, j | c)`` these probabilities.

   **The staged sequential allocation** ``q(A, B | i, j, sigma)`` of ``U`` into side ``A``
   (with ``i``) and side ``B`` (with ``j``), a parallel form of Dahl's
   sequentially-allocated merge-split sampler, SAMS (Dahl 2005, "Sequentially-allocated
   merge-split sampler for conjugate and nonconjugate Dirichlet process mixture models",
   its SAMS algorithm; first as Dahl 2003). Dahl allocates the rows of ``S`` one after the
   other, each to a side with probability proportional to the side's size so far times the
   side's predictive density of the row given the rows allocated so far. Here the rows of
   ``S`` are grouped in *stages* ``sigma``: row ``r`` is in stage ``floor(log2(1 + u_r
   m))``, ``u_r`` the counter-based uniform of ``(stage key, r)`` (the stage key drawn
   from the chain's generator), so the expected stage sizes are 1, 2, 4, ... and about
   ``log2 m`` stages cover ``S``. Stage ``t`` is one parallel pass: each of its rows,
   independently, takes side ``s`` with probability

   ``q_r(s) ~ n_s^{<t} N(x_r | mean_s^{<t}, ((nu + n_s^{<t}) W*_s^{<t -1})^{-1})``,

   ``n_s^{<t}`` the rows of side ``s`` among the anchors and the earlier stages and the
   Gaussian at the Normal-Wishart posterior mean and expected precision given them (a
   plug-in for the posterior predictive; any density computed from the earlier stages
   keeps the move exact). ``log q`` is the sum of the rows' log probabilities. The stages
   depend only on ``S`` and the key, not on the labels, so their probability is the same
   in a move and its reverse and cancels; with the stages fixed, ``q`` is a product of
   conditionals and evaluating it at given sides (``SCORE_FORCED``) is exact.

   * **Split** of ``C`` (``c_i = c_j``): ``A, B ~ q(. | i, j, sigma)`` (``SAMPLE``),
     accepted with probability ``min(1, R)``,

     ``R = alpha Gamma(n_A) Gamma(n_B) / Gamma(n_C) * m(X_A) m(X_B) / m(X_C)
     / q(A, B | i, j, sigma) * P_pair(i, j | c') / P_split(i, j | c)``

     (``m`` the Normal-Wishart marginal likelihood, Görür 2007, sec. 3.3.2); its reverse
     is the merge of ``A`` and ``B`` with the same anchors.
   * **Merge** of ``A`` and ``B``: ``1 / R`` with ``q`` evaluated at the current ``A``
     and ``B`` (the probability that the reverse split reproduces them).
   * **Reallocation** of ``A`` and ``B``: new sides ``A', B' ~ q(. | i, j, sigma)``,
     accepted with probability ``min(1, R')``,

     ``R' = Gamma(n_A') Gamma(n_B') m(X_A') m(X_B') / (Gamma(n_A) Gamma(n_B) m(X_A)
     m(X_B)) * q(A, B | i, j, sigma) / q(A', B' | i, j, sigma)
     * P_pair(i, j | c') / P_pair(i, j | c)``,

     its own reverse (a Metropolis-Hastings move between two-cluster divisions of ``U``
     that keeps the number of clusters; it moves a boundary between two clusters in one
     step, which the row step does one row at a time).

   * **Three clusters into two and two into three** (probability ``tau / 2`` each). A
     three-cluster merge picks ``A`` uniform over the ``K`` clusters, ``B ~ P(. | A)``,
     ``C ~ P(. | B)`` without ``A``, and anchors ``a, b, c`` by centrality in ``A, B,
     C``; the union is divided in two by the staged allocation from ``a`` and ``c`` (a
     sample ``A', C'``), and the move is accepted with probability ``min(1, R_3)``,

     ``R_3 = p(c') / p(c) * q_3(A, B, C | a, b, c, sigma_3) / q_2(A', C' | a, c,
     sigma_2) * P_rev / P_fwd``,

     ``P_fwd = P(A) P(B | A) P(C | B, not A) P(a | A) P(b | B) P(c | C)`` and
     ``P_rev = P(A') P(C' | A') P(a | A') P(c | C') / (|U| - 2)``, the probability that
     the reverse move, a three-cluster split, picks the same anchors: ``A'`` uniform over
     the ``K - 1`` clusters, ``C' ~ P(. | A')``, ``a`` and ``c`` by centrality and ``b``
     uniform over the other rows of the union, which it divides in three by the staged
     allocation from ``a, b, c`` (``q_3``, three sides; ``b``'s side a new cluster). The
     split's ratio is the inverse. Both moves draw both stage assignments (``sigma_2``
     of the union without ``a, c``, ``sigma_3`` without ``a, b, c``) from their keys, a
     distribution free of the labels, so they cancel. Two clusters of one Gaussian that
     share it with a third (a piece of one Gaussian holding the tail of its neighbour)
     form a trap for the two-cluster moves at large ``N``: merging the two pieces leaves
     a non-Gaussian union that two components fit better, and moving the tail to the
     neighbour is a reallocation the current boundary already optimises; the
     three-cluster merge goes from the three clusters to the two Gaussians in one step.

   **The fitted proposal and the proposal mixture** (``fitted_rate = w``, 0 by default).
   At a million rows any split of a cluster holding several Gaussians is accepted, and a
   staged allocation from two random anchors is a one-pass online 2-means whose boundary
   the anchors and the first stages set: it often cuts a Gaussian in two, and the pieces,
   holding tails of their neighbours, are a trap (below). Chang and Fisher split along
   sub-clusters refined over many iterations, i.e. along a converged two-component fit.
   The fitted proposal ``q_F(A, B | i, j, phi)`` does that inside one proposal: EM for a
   mixture of two Gaussians (densities as the staged allocation's, sums scaled to the
   union) on at most ``fit_rows`` rows of the union drawn at counter-based positions of
   ``S`` (key ``phi`` from the chain's generator), from ``fit_restarts`` starts (the
   anchors, then pairs of those rows) of which the fit of the highest likelihood is kept,
   its component under which ``i`` is relatively likelier being ``i``'s side; then one
   parallel pass (:func:`assign_blocks`) in which every row of ``S`` independently takes
   a side with the fitted responsibilities. The fit depends on ``S``, the anchors and
   ``phi`` only, not on the labels, so ``q_F`` of given sides is exact to evaluate. Every
   two-cluster move uses the mixture ``q = w q_F + (1 - w) q_S`` (``q_S`` the staged
   allocation): a split draws from ``q_F`` with probability ``w``, and every ratio above
   uses ``log q = logaddexp(log w + log q_F, log(1 - w) + log q_S)`` with both densities
   evaluated at the sides (the choice of component is not known to the reverse move, so
   it is summed out; an enumeration test shows that the ratio with the chosen
   component's density alone is wrong). A merge thus keeps ``q_S``'s ability to undo any
   cut (``q_F`` alone, ``w = 1``, is exact too, but its merges of pieces whose boundary is
   not the fit's are rejected). The three-cluster moves use the same mixture, their
   ``q_3`` fitted with one EM start (the anchors), three components.

   Why this proposal, not a deterministic launch split and auxiliary sub-cluster
   parameters (as here until issue 24): a merge's ratio contains the probability that
   the reverse split reproduces the current clusters. Drawn from parameters given a fixed
   launch split, it is tiny whenever the launch's boundary is not the current boundary (a
   Gaussian cut in two along another direction), and at a million rows merges the
   posterior favoured by ``e^{10^5}`` were rejected. The sequential allocation follows
   whatever boundary the current clusters have: ``q`` of the current sides is about
   ``p(c) / p_2(X_U)``, ``p_2`` the (prequential) evidence of a two-component mixture of
   ``U``, so a merge is accepted at about the Bayes factor ``m(X_U) / p_2(X_U)`` of one
   cluster against two, and a split at its inverse.
4. ``alpha`` given the number of clusters and the base's hyperparameters given parameters
   drawn from the clusters' posteriors, as for the other DP solvers (the estimator's loop,
   :meth:`BaseDPSolver.update_state`).

Why not persistent sub-clusters
-------------------------------
Chang and Fisher keep each cluster's sub-cluster labels and parameters from one iteration
to the next and accept a split by the posterior ratio alone. For an augmented chain to
leave the DP posterior invariant, the sub-cluster variables of cluster ``k`` need a
conditional given the partition, and the one their Gibbs updates leave invariant is the
posterior of a two-component mixture of ``X_k``, whose normaliser (a sum over the
``2^{n_k}`` sub-labellings) changes whenever a row joins or leaves the cluster: it would
enter the ratio of every row move and of every split and merge, and it cannot be computed.
Here the sub-clusters live inside one proposal (the staged allocation); Chang and
Fisher's optional random splits are not implemented.

The fitted proposal is opt-in (``fitted_rate = 0``: the chain of the staged allocation
alone, bit for bit); doc/dp_mixture.rst gives its measurements.

Parameters changed with issue 24: ``n_intermediate`` (the refinements of the
deterministic launch split) and the class attribute ``aux_rows`` (the tempering of the
auxiliary parameters) are gone with what they tuned.

Parallelism and reproducibility
-------------------------------
The row step and every pass of a proposal go through
:func:`~sklearn_ibp.solvers.dp._dp_subcluster_kernels.assign_blocks`, over fixed blocks
of ``block_size`` rows (2**16) in ``numba.prange``: the uniforms of row ``r`` are a
counter-based hash of ``(key, r)`` with the keys drawn from the chain's generator, and
the sufficient statistics are summed per block in row order and combined in block order,
so the chain is the same, bit for bit, for any number of threads. Everything else (the
weights, parameters, sticks, pairs and acceptances) is drawn from the chain's
``numpy.random.Generator`` in the driver.

Where the rows live (issue 24): every operation of the row step and of the split and
merge proposals on the rows or the labels goes through a row backend
(:mod:`~sklearn_ibp.solvers.dp._dp_subcluster_rows`): the state's arrays in this process,
or :class:`~sklearn_ibp.distributed.dask_rows.DaskRows`, the rows and labels on the workers
of a Dask cluster (``DPMixture.fit`` of a ``dask.array``). The merge anchors' draw by
centrality, and the probability of a split's anchors in its reverse, are defined block by
block over the blocks of ``block_size`` global rows (module docstring of the backends), so
the chain on the workers is the chain in memory, bit for bit, for the same key stream and
block size (with ``N <= block_size`` the block-wise expressions are the whole-array ones
of before). The reallocation and three-cluster moves and the fitted proposal
(opt-in) run in memory only.

Bases: the conjugate Normal-Wishart base (``base="conjugate"``). The conditionally
conjugate base and the factor analysers have no closed-form marginal likelihood, which the
split and merge ratios need (and the moves above integrate the cluster parameters out),
so the estimator refuses them for this solver.
"""

from __future__ import annotations

import copy
import math
from numbers import Integral

import numba
import numpy as np
from sklearn.utils._param_validation import Interval, Options

from ..._memory import check_allocation
from ...likelihoods._normal_wishart_kernels import cholesky_lower
from ._dp_base import BaseDPSolver, MixtureState
from ._dp_subcluster_kernels import (
    SAMPLE,
    SCORE_FORCED,
    assign_blocks,
    centrality,
    fit_sides,
    row_uniforms,
)
from ._dp_subcluster_rows import ArrayMembers, MemoryRows
from .nested_start import ClusterStart

__all__ = ["SubclusterDP"]

_LOG_2PI = math.log(2.0 * math.pi)
_EMPTY_INT = np.zeros(0, dtype=np.int64)
_EMPTY_FLOAT = np.zeros(0)
#: The counts of proposed and accepted moves a state keeps in ``stats["subcluster"]``.
_MOVE_COUNTERS = ("splits_proposed", "splits_accepted", "merges_accepted",
                  "reallocations_accepted", "three_merges_accepted", "three_splits_accepted",
                  "proposals")


#: Weight of the merge partner chosen by the softmax of the merge scores (the rest is a
#: uniform choice, so that every pair stays reachable and the reverse of a split keeps a
#: probability of at least ``(1 - _GREEDY) / (K - 1)``).
_GREEDY = 0.5
#: Empty components a slice step may represent at most (alpha ~ 1 needs about 20).
_MAX_EXTRA_ATOMS = 10000


def _is_row_store(X):
    """Whether ``X`` is a row store (the Dask rows), not an array."""
    return hasattr(X, "lowest_log_slice") and hasattr(X, "anchor_norms")


class _NormalWishartModel:
    """What the sampler asks of a conjugate base, from sufficient statistics: a posterior
    draw of a component (mean, lower Cholesky factor of its precision, log normalising
    constant) and the log marginal likelihood. A test can substitute another model (a
    flat likelihood) by overriding :meth:`SubclusterDP._component_model`."""

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


class SubclusterDP(BaseDPSolver):
    """Parallel sub-cluster split-merge sampler for the conjugate DP mixture (Chang and
    Fisher 2013, made exact; see the module docstring for the moves and their ratios).

    Parameters
    ----------
    n_proposals : int, default=4
        Split-merge proposals per sweep, after the row step (half splits, half merges).
        Each costs about one pass over the rows of the one or two clusters involved (in
        about ``log2`` of their size stages).
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
    reallocation_rate, three_cluster_rate : float
        Probabilities of the reallocation and three-cluster proposals (module docstring;
        class attributes, 0 by default, opt-in by subclassing or setting them).
    fitted_rate : float
        Weight of the fitted proposal in the proposal mixture of every move (module
        docstring; class attribute, 0 by default). ``fit_rows``, ``fit_iterations`` and
        ``fit_restarts`` (4096, 30, 4) size its fit.

    Notes
    -----
    ``state.stats["subcluster"]`` counts the proposals, split proposals, accepted splits,
    merges, reallocations and three-cluster merges and splits since the chain started.

    References
    ----------
    Walker, S. G. (2007). Sampling the Dirichlet mixture model with slices.
    Communications in Statistics - Simulation and Computation 36, 45-54.
    Chang, J. and Fisher, J. W. (2013). Parallel sampling of DP mixture models using
    sub-cluster splits. Advances in Neural Information Processing Systems 26.
    Dahl, D. B. (2005). Sequentially-allocated merge-split sampler for conjugate and
    nonconjugate Dirichlet process mixture models. Technical report.
    Jain, S. and Neal, R. M. (2004). A split-merge Markov chain Monte Carlo procedure for
    the Dirichlet process mixture model. Journal of Computational and Graphical Statistics
    13, 158-182.
    """

    name = "subcluster"
    bases = ("conjugate",)
    #: Splits whole clusters, so a chain can start with every row in one cluster.
    proposes_splits = True
    #: ``DPMixture(init="auto")`` starts it from chains on nested subsamples
    #: (:mod:`~sklearn_ibp.solvers.dp.nested_start`): at large ``N`` its chain from one
    #: cluster keeps the first splits' cuts through Gaussians (doc/dp_mixture.rst).
    starts_from_subsamples = True
    #: ``reallocation_rate`` and ``three_cluster_rate`` of the nested-subsample start's
    #: chains (:meth:`for_subsamples`).
    subsample_reallocation_rate = 0.2
    subsample_three_cluster_rate = 0.3
    block_size = 2**16
    #: Probability that a proposal is a reallocation of two clusters' rows (module
    #: docstring, ``rho``; the proposals that are not reallocations or three-cluster moves
    #: are splits and merges, half each). 0 by default: see ``three_cluster_rate``.
    reallocation_rate = 0.0
    #: Probability that a proposal is a three-cluster move (``tau``; half merges of three
    #: clusters into two, half splits of two into three). 0 by default: with ``0.3`` and
    #: ``reallocation_rate = 0.2`` more chains reach the eight clusters of the benchmark
    #: (doc/dp_mixture.rst), but the chain from one cluster also visits over-split states
    #: more often in its first tens of iterations (on four separated Gaussians of 800 rows,
    #: 11-61% of iterations 20-80 instead of 0-26%).
    three_cluster_rate = 0.0
    #: Weight ``w`` of the fitted proposal ``q_F`` in the proposal mixture
    #: ``q = w q_F + (1 - w) q_S`` of every move (module docstring, "The fitted
    #: proposal"); 0 gives the staged allocation alone (and the chain of before, bit for
    #: bit). Opt-in: see doc/dp_mixture.rst for ``0.9`` with the other moves enabled.
    fitted_rate = 0.0
    #: Rows of the union (drawn with replacement by a counter-based hash) the fitted
    #: proposal's two-component fit sees, and its most EM iterations.
    fit_rows = 4096
    fit_iterations = 30
    #: EM starts of a two-way fit (the anchors, then pairs of subsample rows at
    #: counter-based positions); the fit of the highest likelihood is kept.
    fit_restarts = 4

    _parameter_constraints: dict = {
        "n_proposals": [Interval(Integral, 0, None, closed="left")],
        "n_threads": [Interval(Integral, 1, None, closed="left"), Options(Integral, {-1})],
    }

    def __init__(self, n_proposals=4, n_threads=1):
        self.n_proposals = n_proposals
        self.n_threads = n_threads

    # ------------------------------------------------------------------ set-up
    def for_subsamples(self):
        """The solver of the nested-subsample start's chains
        (:func:`~sklearn_ibp.solvers.dp.nested_start.nested_subsample_start`): a copy with
        the reallocation and three-cluster moves (``subsample_reallocation_rate`` and
        ``subsample_three_cluster_rate``). On a few thousand rows they are cheap, and
        they leave the traps that the two-cluster moves keep (a small cluster in the
        overlap of two Gaussians, pieces of one Gaussian holding a neighbour's tail),
        which the start would otherwise hand to the chain on all the rows: at N = 1e6 the
        chain held the 8 Gaussians 5 sweeps after the start in 30 of 30 seeds with them,
        7 of 10 without (doc/dp_mixture.rst)."""
        warm = copy.copy(self)
        warm.reallocation_rate = float(self.subsample_reallocation_rate)
        warm.three_cluster_rate = float(self.subsample_three_cluster_rate)
        return warm

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

    def _pass(self, X, shift, index, n, comps, key, forced, mode, out, C, slice_args=None):
        """One :func:`assign_blocks` pass; returns per-block statistics combined in block
        order: ``(counts (C,), sums (C, D), scatters (C, D, D), log_q)``."""
        D = X.shape[1]
        n_blocks = self._blocks(n)
        means, chols, log_consts = comps
        counts = np.zeros((n_blocks, C), dtype=np.int64)
        sums = np.zeros((n_blocks, C, D))
        scatters = np.zeros((n_blocks, C, D, D))
        log_q = np.zeros(n_blocks)
        old_labels, log_pi, slice_key = (
            (_EMPTY_INT, _EMPTY_FLOAT, 0) if slice_args is None else slice_args)
        threads = numba.get_num_threads()
        if n_blocks == 1 and threads > 1:
            numba.set_num_threads(1)  # one block: spare the thread pool's start-up
        try:
            assign_blocks(X, shift, index, _EMPTY_INT, np.int64(0), np.int64(n), means,
                          chols, log_consts, np.uint64(key), forced, mode, old_labels, log_pi,
                          np.uint64(slice_key), out, np.int64(self.block_size), counts, sums,
                          scatters, log_q)
        finally:
            numba.set_num_threads(threads)
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
        if _is_row_store(X):
            return self._initialize_store(X, labels, alpha, base, rng)
        X = np.array(X, dtype=np.float64, order="C", copy=True)
        N, D = X.shape
        start = labels if isinstance(labels, ClusterStart) else None
        if start is not None:  # every row in cluster 0 until the start draws them
            labels = np.zeros(N, dtype=np.int64)
            K = int(np.asarray(start.counts).shape[0])
        else:
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
        if start is not None:
            self._draw_start_labels(state, MemoryRows(self, state), start, base, rng)
        else:
            self._recompute(state, K)
        state.stats["subcluster"] = dict.fromkeys(_MOVE_COUNTERS, 0)
        if not (state.stats["counts"] > 0).all():
            self._drop_empty(state)
        return state

    def _initialize_store(self, store, labels, alpha, base, rng):
        """A chain state on a Dask row store (:class:`~sklearn_ibp.distributed.dask_rows.
        DaskRows`): its labels are set to ``labels`` (an int puts every row in that
        cluster; an array is for small ``N``; a
        :class:`~sklearn_ibp.solvers.dp.nested_start.ClusterStart` draws every row into
        one of its clusters, one pass on the workers); ``X`` and the labels stay on the
        workers (``state.X`` is the store's rows as a ``dask.array``, ``state.labels``
        None)."""
        if int(store.block_size) != int(self.block_size):
            raise ValueError(
                f"the row store's block_size ({store.block_size}) must be the solver's "
                f"({self.block_size}).")
        if self.reallocation_rate or self.three_cluster_rate or self.fitted_rate:
            raise ValueError(
                "reallocation_rate, three_cluster_rate and fitted_rate must be 0 for rows on "
                "a Dask cluster (those moves are not routed through the row store).")
        start = labels if isinstance(labels, ClusterStart) else None
        if start is not None:
            store.set_labels(0)
            K = int(np.asarray(start.counts).shape[0])
        elif isinstance(labels, Integral):
            K = int(labels) + 1
            store.set_labels(int(labels))
        else:
            labels = np.asarray(labels, dtype=np.int64)
            _, labels = np.unique(labels, return_inverse=True)
            labels = labels.reshape(-1).astype(np.int64)
            K = int(labels.max()) + 1
            store.set_labels(labels)
        state = MixtureState(X=store.as_dask_array(), labels=None, n_clusters=K,
                             alpha=float(alpha))
        state.stats["shift"] = store.shift
        state.stats["store"] = store
        if start is not None:
            self._draw_start_labels(state, store, start, base, rng)
        else:
            self._recompute(state, K)
        if not (state.stats["counts"] > 0).all():
            self._drop_empty(state)
        state.stats["subcluster"] = dict.fromkeys(_MOVE_COUNTERS, 0)
        return state

    def _draw_start_labels(self, state, rows_of, start, base, rng):
        """Every row of ``state`` (all in cluster 0 on entry) drawn into one of the clusters
        of ``start`` (a :class:`~sklearn_ibp.solvers.dp.nested_start.ClusterStart`) with
        probability ``n_k N(x | mu_k, S_k^-1) / Z``, ``(mu_k, S_k)`` a posterior draw: the
        row step's pass (``rows_of``, in memory or on the store) with every ``log pi =
        0``, so that every component is above every row's slice, and the weights in the
        components' constants. The pass's statistics become the state's (empty clusters
        are left for the caller to drop)."""
        model = self._component_model(base)
        counts = np.asarray(start.counts, dtype=np.int64)
        C = counts.shape[0]
        comps = self._draw_components(model, counts, start.sums, start.scatters,
                                      start.shift, np.log(counts.astype(float)), rng)
        key = int(rng.integers(0, 2**63 - 1, dtype=np.int64))
        slice_key = int(rng.integers(0, 2**63 - 1, dtype=np.int64))
        new_counts, new_sums, new_scatters, _ = rows_of.row_step(comps, key, np.zeros(C),
                                                                 slice_key)
        st = state.stats
        st["counts"], st["sums"], st["scatters"] = new_counts, new_sums, new_scatters
        state.n_clusters = C

    def _rows(self, state):
        """The chain's row backend: the Dask row store, or the state's arrays."""
        store = state.stats.get("store")
        return MemoryRows(self, state) if store is None else store

    def _recompute(self, state, K):
        counts, sums, scatters, _ = self._rows(state).statistics(K)
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
        """Every row at once given the weights and parameters: Walker's slice step on the
        finite representation of ``G | c`` (module docstring, steps 1-2)."""
        st = state.stats
        K = state.n_clusters
        counts = st["counts"]
        alpha = float(state.alpha)
        # (pi_1 .. pi_K, pi_rest) ~ Dir(n_1 .. n_K, alpha), in logs
        gammas = rng.standard_gamma(np.append(counts.astype(float), alpha))
        log_total = math.log(float(np.sum(gammas)))
        log_pi = np.log(gammas[:K]) - log_total
        log_rest = math.log(gammas[K]) - log_total if gammas[K] > 0 else -np.inf
        slice_key = int(rng.integers(0, 2**63 - 1, dtype=np.int64))
        rows_of = self._rows(state)
        lowest = rows_of.lowest_log_slice(log_pi, slice_key)
        # break the rest of the stick (G's unoccupied atoms, GEM(alpha)) until it is
        # below every slice: no unrepresented atom can then be above a slice
        extra = []
        while log_rest >= lowest:
            v = rng.beta(1.0, alpha)
            extra.append(log_rest + math.log(v) if v > 0 else -np.inf)
            log_rest += math.log1p(-v) if v < 1 else -np.inf
            if len(extra) > _MAX_EXTRA_ATOMS:
                raise RuntimeError(
                    f"the slice step needed more than {_MAX_EXTRA_ATOMS} empty components "
                    f"(alpha={alpha:g}); the chain's alpha is implausibly large.")
        C = K + len(extra)
        all_log_pi = np.concatenate([log_pi, np.array(extra, dtype=float)])
        sizes = np.concatenate([counts, np.zeros(len(extra), dtype=np.int64)])
        D = state.X.shape[1]
        sums = np.concatenate([st["sums"], np.zeros((len(extra), D))])
        scatters = np.concatenate([st["scatters"], np.zeros((len(extra), D, D))])
        comps = self._draw_components(model, sizes, sums, scatters, st["shift"],
                                      np.zeros(C), rng)
        key = int(rng.integers(0, 2**63 - 1, dtype=np.int64))
        new_counts, new_sums, new_scatters, _ = rows_of.row_step(comps, key, all_log_pi,
                                                                 slice_key)
        keep = new_counts > 0
        st["counts"], st["sums"], st["scatters"] = new_counts, new_sums, new_scatters
        state.n_clusters = C
        if not keep.all():
            self._drop_empty(state)

    def _merge_scores(self, model, counts, sums, scatters, shift, a):
        """``log`` of the DP posterior ratio of merging cluster ``a`` with each cluster
        (``-inf`` for ``a`` itself and empty clusters), without the ``-log alpha``."""
        K = counts.shape[0]
        out = np.full(K, -np.inf)
        la = model.log_marginal(int(counts[a]), sums[a], scatters[a], shift)
        for b in range(K):
            if b == a or counts[b] == 0:
                continue
            n = counts[a] + counts[b]
            out[b] = (
                math.lgamma(n) - math.lgamma(counts[a]) - math.lgamma(counts[b])
                + model.log_marginal(int(n), sums[a] + sums[b], scatters[a] + scatters[b],
                                     shift)
                - la - model.log_marginal(int(counts[b]), sums[b], scatters[b], shift)
            )
        return out

    def _partner_log_probs(self, scores):
        """``log P(B | A)`` of the merge partner: a mixture of the uniform choice among the
        other occupied clusters and the softmax of the merge scores (``_GREEDY``)."""
        live = np.isfinite(scores)
        n_live = int(live.sum())
        out = np.full(scores.shape[0], -np.inf)
        if n_live == 0:
            return out
        top = scores[live].max()
        soft = np.exp(scores[live] - top)
        soft /= soft.sum()
        out[live] = np.log((1.0 - _GREEDY) / n_live + _GREEDY * soft)
        return out

    def _anchor_log_weights(self, model, X, rows, side, counts, sums, scatters, shift):
        """Log centrality of each row in ``rows`` within its cluster (``side`` 0 or 1, the
        two clusters' statistics given), and the log normaliser of each cluster: the
        anchors of a merge are drawn with these probabilities (module docstring)."""
        means, chols = self._anchor_components(model, counts, sums, scatters, shift)
        out = np.empty(rows.shape[0])
        centrality(X, rows, side, means, chols, out)
        norms = np.empty(counts.shape[0])
        for t in range(counts.shape[0]):
            w = out[side == t]
            top = w.max()
            norms[t] = top + math.log(float(np.sum(np.exp(w - top))))
        return out, norms

    @staticmethod
    def _anchor_components(model, counts, sums, scatters, shift):
        """The means and precision factors of the clusters' centrality (the anchors')."""
        D = sums.shape[1]
        k = counts.shape[0]
        means = np.empty((k, D))
        chols = np.empty((k, D, D))
        for t in range(k):
            n, mean, W_star = model.base.posterior_statistics_from_sums(
                int(counts[t]), sums[t], scatters[t], shift)
            means[t] = sums[t] / counts[t] + shift
            # the precision whose inverse is W* / (beta + n): positive definite for any n
            P, ok = cholesky_lower(np.ascontiguousarray(
                np.linalg.inv(W_star) * (model.base.dof_ + n)))
            chols[t] = P
        return means, chols

    def _propose(self, state, model, rng):
        """One proposal: a split, merge, reallocation or three-cluster move (module
        docstring, step 3)."""
        st = state.stats
        rows_of = self._rows(state)
        N = rows_of.n_samples
        if N < 2:
            return
        st["subcluster"]["proposals"] += 1
        counts, sums, scatters = st["counts"], st["sums"], st["scatters"]
        shift = st["shift"]
        move = rng.random()
        three, realloc = float(self.three_cluster_rate), float(self.reallocation_rate)
        if move < three:
            if move < 0.5 * three:
                self._merge_three(state, model, rng)
            else:
                self._split_three(state, model, rng)
            return
        split = move < three + 0.5 * (1.0 - three - realloc)
        reallocate = move >= 1.0 - realloc
        first = rng.random()
        live = np.flatnonzero(counts > 0)
        n_live = live.shape[0]
        ci = (int(rows_of.labels_at([int(first * N)])[0]) if split
              else int(live[int(first * n_live)]))
        if split:
            if counts[ci] < 2:
                return
            i = int(first * N)
            j = int(rows_of.nth_row(ci, int(rng.random() * (counts[ci] - 1)), i))
            cj = ci
            members = rows_of.select((ci, cj), (i, j))
        else:
            if n_live < 2:
                return
            log_p = self._partner_log_probs(
                self._merge_scores(model, counts, sums, scatters, shift, ci))
            p = np.exp(log_p)
            cj = int(np.searchsorted(np.cumsum(p), rng.random() * p.sum(), side="right"))
            cj = min(cj, p.shape[0] - 1)
            while not np.isfinite(log_p[cj]):  # rounding at the top end
                cj -= 1
            union = rows_of.select((ci, cj))
            pair = np.array([ci, cj])
            means, chols = self._anchor_components(model, counts[pair], sums[pair],
                                                   scatters[pair], shift)
            _, norms = rows_of.anchor_norms(union, means, chols, "current")
            picked = [rows_of.anchor_pick(union, norms, t, rng.random()) for t in range(2)]
            del union
            (i, w_i), (j, w_j) = picked
            # P_merge(i, j) = P(A) P(B | A) P(i | A) P(j | B), A uniform over clusters
            log_pick = (-math.log(n_live) + float(log_p[cj])
                        + w_i - norms[0] + w_j - norms[1])
            members = rows_of.select((ci, cj), (i, j))
        anchor_X = rows_of.rows([i, j])
        # -- the staged sequential allocation of the union (module docstring, step 3)
        stage_key = int(rng.integers(0, 2**63 - 1, dtype=np.int64))
        log_alpha = math.log(state.alpha)
        if split:
            st["subcluster"]["splits_proposed"] += 1
            key = int(rng.integers(0, 2**63 - 1, dtype=np.int64))
            if self.fitted_rate:  # the proposal mixture (in memory only)
                n_ab, s_ab, q_ab, log_q, _ = self._mixture_allocate(
                    model, state.X, shift, [i, j], members.rows, stage_key, key, _EMPTY_INT,
                    SAMPLE, members.side, self._mixture_keys(rng, True))
            else:
                n_ab, s_ab, q_ab, log_q = self._allocate_staged(
                    model, shift, anchor_X, members, stage_key, key, SAMPLE)
            log_ratio = (
                log_alpha + math.lgamma(n_ab[0]) + math.lgamma(n_ab[1])
                - math.lgamma(n_ab[0] + n_ab[1])
                + model.log_marginal(int(n_ab[0]), s_ab[0], q_ab[0], shift)
                + model.log_marginal(int(n_ab[1]), s_ab[1], q_ab[1], shift)
                - model.log_marginal(int(counts[ci]), sums[ci], scatters[ci], shift)
                - log_q
            )
            # The reverse merge's choice of (i, j): cluster A of i (uniform over the
            # clusters), B given A, then i and j by centrality in A and B; this split chose
            # i uniformly and j uniformly among the other rows of C.
            new_counts = np.append(counts, n_ab[0])
            new_counts[ci] = n_ab[1]
            new_sums = np.concatenate([sums, s_ab[:1]])
            new_sums[ci] = s_ab[1]
            new_scatters = np.concatenate([scatters, q_ab[:1]])
            new_scatters[ci] = q_ab[1]
            new = state.n_clusters
            reverse = self._partner_log_probs(self._merge_scores(
                model, new_counts, new_sums, new_scatters, shift, new))[ci]
            means, chols = self._anchor_components(model, n_ab, s_ab, q_ab, shift)
            lead_w, norms = rows_of.anchor_norms(
                members, means, chols, "last", lead=(anchor_X, np.array([0, 1])))
            # P_merge(i, j | c') / P_split(i, j | c), P_split = 1 / (N (n_C - 1))
            log_ratio += (math.log(N) + math.log(counts[ci] - 1.0) - math.log(n_live + 1)
                          + reverse + lead_w[0] - norms[0] + lead_w[1] - norms[1])
            if math.log(rng.random()) < log_ratio:
                rows_of.set_rows([i], new)
                rows_of.assign(members, [new, -1], "last")
                st["counts"], st["sums"], st["scatters"] = new_counts, new_sums, new_scatters
                state.n_clusters += 1
                st["subcluster"]["splits_accepted"] += 1
        elif reallocate:
            self._reallocate(state, model, rng, ci, cj, i, j, members.rows, members.current,
                             stage_key, log_pick)
        else:
            if self.fitted_rate:
                _, _, _, log_q, _ = self._mixture_allocate(
                    model, state.X, shift, [i, j], members.rows, stage_key, 0,
                    members.current, SCORE_FORCED, members.side,
                    self._mixture_keys(rng, False))
            else:
                _, _, _, log_q = self._allocate_staged(model, shift, anchor_X, members,
                                                       stage_key, 0, SCORE_FORCED)
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
                - math.log(N) - math.log(n_c - 1.0) - log_pick
            )
            if math.log(rng.random()) < log_ratio:
                rows_of.set_rows([j], ci)
                rows_of.assign(members, [-1, ci], "current")
                counts[ci], sums[ci], scatters[ci] = n_c, s_c, q_c
                counts[cj] = 0
                sums[cj] = 0.0
                scatters[cj] = 0.0
                st["subcluster"]["merges_accepted"] += 1

    def _reallocate(self, state, model, rng, ci, cj, i, j, members, current, stage_key,
                    log_pick):
        """A reallocation of the rows of clusters ``ci`` and ``cj`` (anchors ``i`` in
        ``ci``, ``j`` in ``cj``, chosen as for a merge with log probability ``log_pick``):
        a new division by the staged allocation, accepted with ``p(c') / p(c) * q(c) /
        q(c') * P_pick(i, j | c') / P_pick(i, j | c)`` (module docstring, step 3)."""
        st = state.stats
        X, labels = state.X, state.labels
        counts, sums, scatters = st["counts"], st["sums"], st["scatters"]
        shift = st["shift"]
        m = members.shape[0]
        key = int(rng.integers(0, 2**63 - 1, dtype=np.int64))
        side = np.empty(m, dtype=np.int64)
        keys = self._mixture_keys(rng, True)
        n_ab, s_ab, q_ab, log_q_new, fitted = self._mixture_allocate(
            model, X, shift, [i, j], members, stage_key, key, _EMPTY_INT, SAMPLE, side, keys)
        scratch = np.empty(m, dtype=np.int64)
        _, _, _, log_q_old, _ = self._mixture_allocate(
            model, X, shift, [i, j], members, stage_key, 0, current, SCORE_FORCED, scratch,
            keys, fitted)
        pair = (ci, cj)
        log_ratio = log_q_old - log_q_new - log_pick
        for t in range(2):
            c = pair[t]
            log_ratio += (
                math.lgamma(n_ab[t]) - math.lgamma(counts[c])
                + model.log_marginal(int(n_ab[t]), s_ab[t], q_ab[t], shift)
                - model.log_marginal(int(counts[c]), sums[c], scatters[c], shift))
        new_counts, new_sums, new_scatters = counts.copy(), sums.copy(), scatters.copy()
        for t in range(2):
            new_counts[pair[t]], new_sums[pair[t]] = n_ab[t], s_ab[t]
            new_scatters[pair[t]] = q_ab[t]
        n_live = int(np.sum(counts > 0))
        reverse = self._partner_log_probs(self._merge_scores(
            model, new_counts, new_sums, new_scatters, shift, ci))[cj]
        union_rows = np.concatenate([[i, j], members]).astype(np.int64)
        sides = np.concatenate([[0, 1], side])
        log_w, norms = self._anchor_log_weights(model, X, union_rows, sides, n_ab, s_ab,
                                                q_ab, shift)
        log_ratio += (-math.log(n_live) + reverse + log_w[0] - norms[0] + log_w[1]
                      - norms[1])
        if math.log(rng.random()) < log_ratio:
            labels[members[side == 0]] = ci
            labels[members[side == 1]] = cj
            st["counts"], st["sums"], st["scatters"] = new_counts, new_sums, new_scatters
            st["subcluster"]["reallocations_accepted"] += 1

    # -- three-cluster moves ---------------------------------------------------------------
    def _partner(self, model, counts, sums, scatters, shift, a, exclude, rng):
        """A partner of cluster ``a`` drawn from ``P(. | a)`` (the merge partner's
        distribution, cluster ``exclude`` left out); returns it and the log probabilities."""
        scores = self._merge_scores(model, counts, sums, scatters, shift, a)
        if exclude is not None:
            scores[exclude] = -np.inf
        log_p = self._partner_log_probs(scores)
        p = np.exp(log_p)
        b = min(int(np.searchsorted(np.cumsum(p), rng.random() * p.sum(), side="right")),
                p.shape[0] - 1)
        while not np.isfinite(log_p[b]):  # rounding at the top end
            b -= 1
        return b, log_p

    def _pick_rows(self, model, X, rows, sides, counts, sums, scatters, shift, rng):
        """One anchor per side drawn by centrality; returns the positions in ``rows`` and
        the log probability of the draw."""
        log_w, norms = self._anchor_log_weights(model, X, rows, sides, counts, sums,
                                                scatters, shift)
        picks, log_p = [], 0.0
        for t in range(counts.shape[0]):
            at = np.flatnonzero(sides == t)
            w = np.exp(log_w[at] - norms[t])
            q = min(int(np.searchsorted(np.cumsum(w), rng.random() * w.sum(),
                                        side="right")), at.size - 1)
            picks.append(int(at[q]))
            log_p += log_w[at[q]] - norms[t]
        return picks, log_p

    def _pick_log_prob(self, model, X, rows, sides, counts, sums, scatters, shift, picks):
        """The log probability that :meth:`_pick_rows` draws ``picks``."""
        log_w, norms = self._anchor_log_weights(model, X, rows, sides, counts, sums,
                                                scatters, shift)
        return float(sum(log_w[p] - norms[t] for t, p in enumerate(picks)))

    @staticmethod
    def _union(labels, clusters):
        """The rows of ``clusters`` in row order and their side (the cluster's position)."""
        lookup = np.full(int(labels.max()) + 2, -1, dtype=np.int64)
        for t, c in enumerate(clusters):
            lookup[c] = t
        side = lookup[labels]
        rows = np.flatnonzero(side >= 0).astype(np.int64)
        return rows, side[rows]

    @staticmethod
    def _without(rows, sides, positions):
        keep = np.ones(rows.shape[0], dtype=bool)
        keep[positions] = False
        return rows[keep], sides[keep]

    def _crp_and_marginals(self, model, counts, sums, scatters, shift):
        return sum(math.lgamma(counts[t]) + model.log_marginal(
            int(counts[t]), sums[t], scatters[t], shift) for t in range(counts.shape[0]))

    def _merge_three(self, state, model, rng):
        """Three clusters ``A, B, C`` into two (module docstring, step 3): ``A`` uniform,
        ``B ~ P(. | A)``, ``C ~ P(. | B)`` without ``A``, anchors ``a, b, c`` by centrality;
        the union re-divided by the staged allocation from ``a`` and ``c``. The reverse is
        :meth:`_split_three` with the same anchors."""
        st = state.stats
        X, labels = state.X, state.labels
        counts, sums, scatters, shift = st["counts"], st["sums"], st["scatters"], st["shift"]
        live = np.flatnonzero(counts > 0)
        K = live.shape[0]
        if K < 3:
            return
        A = int(live[int(rng.random() * K)])
        B, log_pb = self._partner(model, counts, sums, scatters, shift, A, None, rng)
        C, log_pc = self._partner(model, counts, sums, scatters, shift, B, A, rng)
        trio = np.array([A, B, C])
        rows, sides = self._union(labels, trio)
        picks, log_anchor = self._pick_rows(model, X, rows, sides, counts[trio], sums[trio],
                                            scatters[trio], shift, rng)
        a, b, c = (int(rows[p]) for p in picks)
        log_fwd = -math.log(K) + log_pb[B] + log_pc[C] + log_anchor
        k2 = int(rng.integers(0, 2**63 - 1, dtype=np.int64))
        k3 = int(rng.integers(0, 2**63 - 1, dtype=np.int64))
        key = int(rng.integers(0, 2**63 - 1, dtype=np.int64))
        members2, _ = self._without(rows, sides, [picks[0], picks[2]])
        side2 = np.empty(members2.shape[0], dtype=np.int64)
        n2, s2, q2, log_q2, _ = self._mixture_allocate(
            model, X, shift, [a, c], members2, k2, key, _EMPTY_INT, SAMPLE, side2,
            self._mixture_keys(rng, True))
        members3, current3 = self._without(rows, sides, picks)
        _, _, _, log_q3, _ = self._mixture_allocate(
            model, X, shift, [a, b, c], members3, k3, 0, current3, SCORE_FORCED,
            np.empty(members3.shape[0], dtype=np.int64), self._mixture_keys(rng, False))
        log_post = (-math.log(state.alpha)
                    + self._crp_and_marginals(model, n2, s2, q2, shift)
                    - self._crp_and_marginals(model, counts[trio], sums[trio],
                                              scatters[trio], shift))
        new_counts, new_sums, new_scatters = counts.copy(), sums.copy(), scatters.copy()
        for t, k in ((0, A), (1, C)):
            new_counts[k], new_sums[k], new_scatters[k] = n2[t], s2[t], q2[t]
        new_counts[B] = 0
        new_sums[B] = 0.0
        new_scatters[B] = 0.0
        # the reverse: A' uniform over K - 1 clusters, C' ~ P(. | A'), a and c by
        # centrality, b uniform over the other rows of the union
        log_rev = (-math.log(K - 1) + self._partner_log_probs(self._merge_scores(
            model, new_counts, new_sums, new_scatters, shift, A))[C]
            - math.log(rows.shape[0] - 2.0))
        union2 = np.concatenate([[a, c], members2]).astype(np.int64)
        log_rev += self._pick_log_prob(model, X, union2, np.concatenate([[0, 1], side2]),
                                       n2, s2, q2, shift, [0, 1])
        log_ratio = log_post + log_rev + log_q3 - log_fwd - log_q2
        if math.log(rng.random()) < log_ratio:
            labels[members2[side2 == 0]] = A
            labels[members2[side2 == 1]] = C
            st["counts"], st["sums"], st["scatters"] = new_counts, new_sums, new_scatters
            st["subcluster"]["three_merges_accepted"] += 1

    def _split_three(self, state, model, rng):
        """Two clusters ``A, C`` into three (the reverse of :meth:`_merge_three`): ``A``
        uniform, ``C ~ P(. | A)``, anchors ``a, c`` by centrality and ``b`` uniform over
        the other rows of the union; the union divided by the staged allocation from
        ``a, b, c``, ``b``'s side a new cluster."""
        st = state.stats
        X, labels = state.X, state.labels
        counts, sums, scatters, shift = st["counts"], st["sums"], st["scatters"], st["shift"]
        live = np.flatnonzero(counts > 0)
        K = live.shape[0]
        if K < 2:
            return
        A = int(live[int(rng.random() * K)])
        C, log_pc = self._partner(model, counts, sums, scatters, shift, A, None, rng)
        duo = np.array([A, C])
        rows, sides = self._union(labels, duo)
        if rows.shape[0] < 3:
            return
        picks, log_anchor = self._pick_rows(model, X, rows, sides, counts[duo], sums[duo],
                                            scatters[duo], shift, rng)
        others, other_sides = self._without(rows, sides, picks)
        pb = int(rng.random() * others.shape[0])
        a, c, b = int(rows[picks[0]]), int(rows[picks[1]]), int(others[pb])
        log_fwd = (-math.log(K) + log_pc[C] + log_anchor
                   - math.log(rows.shape[0] - 2.0))
        k2 = int(rng.integers(0, 2**63 - 1, dtype=np.int64))
        k3 = int(rng.integers(0, 2**63 - 1, dtype=np.int64))
        key = int(rng.integers(0, 2**63 - 1, dtype=np.int64))
        members3 = np.delete(others, pb)
        side3 = np.empty(members3.shape[0], dtype=np.int64)
        n3, s3, q3, log_q3, _ = self._mixture_allocate(
            model, X, shift, [a, b, c], members3, k3, key, _EMPTY_INT, SAMPLE, side3,
            self._mixture_keys(rng, True))
        # members2 = the union without a and c, in row order: b back among the others
        _, _, _, log_q2, _ = self._mixture_allocate(
            model, X, shift, [a, c], others, k2, 0, other_sides, SCORE_FORCED,
            np.empty(others.shape[0], dtype=np.int64), self._mixture_keys(rng, False))
        log_post = (math.log(state.alpha)
                    + self._crp_and_marginals(model, n3, s3, q3, shift)
                    - self._crp_and_marginals(model, counts[duo], sums[duo], scatters[duo],
                                              shift))
        B = state.n_clusters
        new_counts = np.append(counts, n3[1])
        new_sums = np.concatenate([sums, s3[1:2]])
        new_scatters = np.concatenate([scatters, q3[1:2]])
        for t, k in ((0, A), (2, C)):
            new_counts[k], new_sums[k], new_scatters[k] = n3[t], s3[t], q3[t]
        # the reverse: A uniform over K + 1 clusters, B ~ P(. | A), C ~ P(. | B) without A,
        # anchors by centrality in A, B, C
        log_rev = (-math.log(K + 1)
                   + self._partner_log_probs(self._merge_scores(
                       model, new_counts, new_sums, new_scatters, shift, A))[B])
        scores = self._merge_scores(model, new_counts, new_sums, new_scatters, shift, B)
        scores[A] = -np.inf
        log_rev += self._partner_log_probs(scores)[C]
        union3 = np.concatenate([[a, b, c], members3]).astype(np.int64)
        log_rev += self._pick_log_prob(model, X, union3, np.concatenate([[0, 1, 2], side3]),
                                       n3, s3, q3, shift, [0, 1, 2])
        log_ratio = log_post + log_rev + log_q2 - log_fwd - log_q3
        if math.log(rng.random()) < log_ratio:
            labels[b] = B
            labels[members3[side3 == 0]] = A
            labels[members3[side3 == 1]] = B
            labels[members3[side3 == 2]] = C
            st["counts"], st["sums"], st["scatters"] = new_counts, new_sums, new_scatters
            state.n_clusters += 1
            st["subcluster"]["three_splits_accepted"] += 1

    # -- the staged sequential allocation ------------------------------------------------
    def _allocate(self, model, X, shift, anchors, members, stage_key, key, forced, mode,
                  side):
        """:meth:`_allocate_staged` of rows in memory: the anchors ``X[anchors]``, the
        members (global rows, row order) with the sides ``forced``; writes the sides taken
        into ``side``."""
        return self._allocate_staged(
            model, shift, X[np.asarray(anchors, dtype=np.int64)],
            ArrayMembers(self, X, members, forced, side), stage_key, key, mode)

    def _allocate_staged(self, model, shift, anchor_X, members, stage_key, key, mode):
        """The staged sequential allocation of the union: anchors ``i`` (side 0) and ``j``
        (side 1), then the stages of ``members`` (:func:`stage_order`), each one pass in
        which every row of the stage takes a side with probability proportional to the
        side's count times its allocation density (:meth:`_allocation_components`), both
        from the anchors and the earlier stages. ``mode`` is ``SAMPLE`` (a split: the sides
        drawn with the key ``key``) or ``SCORE_FORCED`` (a merge's reverse: the members'
        current sides). ``members`` holds the sides taken (in memory or on the workers);
        returns the sides' statistics and ``log q``, the log probability of the sides
        taken."""
        k = anchor_X.shape[0]
        xs = [anchor_X[t] - shift for t in range(k)]
        counts = np.ones(k, dtype=np.int64)
        sums = np.stack(xs)
        scatters = np.stack([np.tril(np.outer(x, x)) for x in xs])
        log_q = 0.0
        stages = members.stages(stage_key)
        for stage in stages:
            comps = self._allocation_components(model, counts, sums, scatters, shift)
            c, s_, q_, lq = members.run_stage(stage, comps, key, mode, k, shift)
            counts = counts + c
            sums = sums + s_
            scatters = scatters + q_
            log_q += lq
        members.finish(stages, mode)
        return counts, sums, scatters, log_q

    @staticmethod
    def _allocation_components(model, counts, sums, scatters, shift, weighted=False):
        """The allocation densities of a stage: each side's Gaussian at its posterior mean
        with its expected precision ``(nu + n) W*^-1``, weighted by the side's count.

        ``weighted``: the counts are real (responsibility-weighted, the fitted proposal's),
        and a precision that is not positive definite raises FloatingPointError."""
        D = sums.shape[1]
        k = counts.shape[0]
        means, chols, log_consts = np.empty((k, D)), np.empty((k, D, D)), np.empty(k)
        for t in range(k):
            n, mean, W_star = model.base.posterior_statistics_from_sums(
                float(counts[t]) if weighted else int(counts[t]), sums[t], scatters[t],
                shift)
            P, ok = cholesky_lower(np.ascontiguousarray(
                np.linalg.inv(W_star) * (model.base.dof_ + n)))
            if weighted and not ok:
                raise FloatingPointError("the fitted precision is not positive definite.")
            means[t], chols[t] = mean, P
            log_consts[t] = math.log(counts[t]) + float(np.sum(np.log(np.diag(P))))
        return means, chols, log_consts

    # -- the fitted proposal and the proposal mixture -------------------------------------
    def _fit_sides(self, model, X, shift, anchors, members, fit_key):
        """The components of the fitted proposal ``q_F``: EM for a mixture of one Gaussian
        per anchor on at most ``fit_rows`` rows of the union, drawn with replacement at the
        positions ``floor(u_t m)`` of ``members`` (``u_t`` the counter-based uniform of
        ``(fit_key, t)``), started from the anchors alone, the components' densities those
        of the staged allocation (:meth:`_allocation_components`) with the sums scaled to
        the ``m`` members. A function of the union, the anchors and the key only (not of
        the labels), so a merge evaluates the reverse split's ``q_F`` exactly."""
        m = members.shape[0]
        k = len(anchors)
        M = int(self.fit_rows)
        if m <= M:
            sub = members
        else:
            u = row_uniforms(np.uint64(fit_key), np.arange(M, dtype=np.int64))
            sub = members[np.minimum((u * m).astype(np.int64), m - 1)]
        Y = np.ascontiguousarray(X[sub])
        anchors = np.asarray(anchors, dtype=np.int64)
        starts = [X[anchors]]
        M_sub = sub.shape[0]
        if k == 2 and M_sub >= 2:
            # more starts: pairs of subsample rows at counter-based positions
            u = row_uniforms(np.uint64(fit_key) ^ np.uint64(0x5DEECE66D),
                             np.arange(2 * (int(self.fit_restarts) - 1), dtype=np.int64))
            pos = np.minimum((u * M_sub).astype(np.int64), M_sub - 1)
            starts += [Y[pos[2 * r:2 * r + 2]] for r in range(int(self.fit_restarts) - 1)]
        best, base = None, model.base
        loglik = np.zeros(1)
        resp = np.empty((M_sub, k))
        for start in starts:
            Za = start - shift
            counts = np.ones(k)
            sums = np.ascontiguousarray(Za)
            scatters = np.einsum("kd,ke->kde", Za, Za)
            done = fit_sides(Y, shift, base.location_, float(base.precision_scaling_),
                             float(base.dof_), base._prior_matrix, m / max(M_sub, 1),
                             np.int64(self.fit_iterations), 1e-3, counts, sums, scatters,
                             resp, loglik)
            if done == 0 or M_sub == 0:  # not positive definite in rounding
                continue
            if best is None or loglik[0] > best[0]:
                best = (loglik[0], counts, sums, scatters)
        if best is None:  # the anchors alone
            Za = X[anchors] - shift
            counts = np.ones(k)
            sums = np.ascontiguousarray(Za)
            scatters = np.einsum("kd,ke->kde", Za, Za)
        else:
            _, counts, sums, scatters = best
        comps = self._allocation_components(model, counts, sums, scatters, shift,
                                             weighted=True)
        if k == 2:
            # side 0 is the component under which anchor i is likelier (relative to j)
            means, chols, log_consts = comps
            dens = np.empty((2, 2))
            for t in range(2):
                v = (X[anchors] - means[t]) @ chols[t]
                dens[:, t] = log_consts[t] - 0.5 * np.einsum("nd,nd->n", v, v)
            if dens[0, 1] - dens[0, 0] > dens[1, 1] - dens[1, 0]:
                comps = tuple(np.ascontiguousarray(c[::-1]) for c in comps)
        return comps

    def _fitted_allocate(self, X, shift, anchors, members, comps, key, forced, mode, side):
        """The fitted proposal ``q_F``: anchors on their sides, then one pass in which each
        member independently takes side ``s`` with the fitted responsibility (``SAMPLE``
        with the key ``key``, or ``SCORE_FORCED`` at ``forced``). Returns what
        :meth:`_allocate` returns."""
        k = len(anchors)
        m = members.shape[0]
        c, s_, q_, log_q = self._pass(X, shift, members, m, comps, key, forced, mode, side,
                                      k)
        for t, a in enumerate(anchors):
            x = X[a] - shift
            c[t] += 1
            s_[t] += x
            q_[t] += np.tril(np.outer(x, x))
        return c, s_, q_, log_q

    def _mixture_keys(self, rng, sample):
        """The fitted proposal's draws for one proposal (none when ``fitted_rate`` is 0):
        the fit's key and, for a sample, the pass's key and the choice of ``q_F``."""
        if float(self.fitted_rate) <= 0.0:
            return None
        fit_key = int(rng.integers(0, 2**63 - 1, dtype=np.int64))
        if not sample:
            return fit_key, 0, False
        key = int(rng.integers(0, 2**63 - 1, dtype=np.int64))
        return fit_key, key, bool(rng.random() < float(self.fitted_rate))

    def _mixture_allocate(self, model, X, shift, anchors, members, stage_key, key, forced,
                          mode, side, keys, fitted=None):
        """The proposal mixture ``q = w q_F + (1 - w) q_S`` (``w = fitted_rate``): a sample
        from ``q_F`` or ``q_S`` as ``keys`` chose (``SAMPLE``), or the current sides
        ``forced`` (``SCORE_FORCED``), and ``log q`` of the sides taken, both densities
        evaluated. ``keys`` is :meth:`_mixture_keys`'s (``None``: ``q_S`` alone);
        ``fitted`` the components of :meth:`_fit_sides` if already fitted. Returns the
        statistics and ``log q`` as :meth:`_allocate`, and the fitted components."""
        if keys is None:
            return self._allocate(model, X, shift, anchors, members, stage_key, key, forced,
                                  mode, side) + (None,)
        fit_key, fit_sample_key, use_fitted = keys
        if fitted is None:
            fitted = self._fit_sides(model, X, shift, anchors, members, fit_key)
        scratch = np.empty(members.shape[0], dtype=np.int64)
        if mode == SAMPLE and use_fitted:
            result = self._fitted_allocate(X, shift, anchors, members, fitted,
                                           fit_sample_key, _EMPTY_INT, SAMPLE, side)
            log_f = result[3]
            log_s = self._allocate(model, X, shift, anchors, members, stage_key, 0, side,
                                   SCORE_FORCED, scratch)[3]
        else:
            result = self._allocate(model, X, shift, anchors, members, stage_key, key,
                                    forced, mode, side)
            log_s = result[3]
            log_f = self._fitted_allocate(X, shift, anchors, members, fitted, 0,
                                          side if mode == SAMPLE else forced, SCORE_FORCED,
                                          scratch)[3]
        w = float(self.fitted_rate)
        log_q = float(np.logaddexp(math.log(w) + log_f,
                                   math.log1p(-w) + log_s if w < 1.0 else -np.inf))
        return result[0], result[1], result[2], log_q, fitted

    def _compact(self, state):
        """Drop the clusters that merges emptied; labels ``0 .. K - 1`` again."""
        if not (state.stats["counts"] > 0).all():
            self._drop_empty(state)

    def _drop_empty(self, state):
        st = state.stats
        counts = st["counts"]
        keep = counts > 0
        lookup = np.cumsum(keep) - 1
        self._rows(state).relabel(lookup)
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

    def snapshot(self, state, base, chain=0) -> dict:
        """As :meth:`BaseDPSolver.snapshot`; on a Dask row store the labels are a
        ``dask.array`` on the workers, the parameters are drawn from the clusters'
        statistics, and the sample keeps those statistics (``"statistics"``: counts, sums,
        scatters and shift), from which the estimator predicts."""
        store = state.stats.get("store")
        if store is None:
            return super().snapshot(state, base, chain)
        state.n_snapshots = getattr(state, "n_snapshots", 0) + 1
        rng = np.random.default_rng([chain, state.n_snapshots])
        params = self.cluster_parameters(state, base, rng)
        st = state.stats
        return {
            "labels": store.labels(),
            "alpha": float(state.alpha),
            "params": params,
            "hyperparameters": copy.deepcopy(base.hyperparameters()),
            "statistics": {"counts": st["counts"].copy(), "sums": st["sums"].copy(),
                           "scatters": st["scatters"].copy(),
                           "shift": np.array(st["shift"], copy=True)},
        }

    def checkpoint(self, state):
        """A copy of the state to roll back to; on a Dask row store the labels' futures
        are shared (no operation changes a future, each makes new ones)."""
        store = state.stats.get("store")
        if store is None:
            return super().checkpoint(state)
        stats = {k: v for k, v in state.stats.items() if k != "store"}
        copied = MixtureState(X=state.X, labels=None, n_clusters=state.n_clusters,
                              alpha=state.alpha, params=copy.deepcopy(state.params),
                              stats=copy.deepcopy(stats))
        copied.stats["store"] = store.copy()
        if hasattr(state, "base"):
            copied.base = copy.deepcopy(state.base)
        if hasattr(state, "n_snapshots"):
            copied.n_snapshots = state.n_snapshots
        return copied

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
