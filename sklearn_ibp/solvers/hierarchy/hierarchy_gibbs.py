"""Gibbs sampling for the correlated latent feature hierarchies (Doshi-Velez 2009, chapter 7).

DP-IBP (``upper="dp"``, ``link="or"``, eq. 7.3), IBP-IBP (``upper="ibp"``, ``link="or"``,
eq. 7.6) and the noisy-or IBP-IBP (``upper="ibp"``, ``link="noisy_or"``, eq. 7.8), with
the features ``A`` explicit (the uncollapsed sampler of Doshi-Velez 2009, sec. 7.3), so that any
:class:`~sklearn_ibp.likelihoods._feature_base.FeatureLikelihood` serves. One sweep:

1. rows: the DP's category of each row by Neal's Algorithm 8 with fresh categories drawn
   from the IBP predictive of ``M``, or the IBP's memberships of shared categories by
   Metropolis flips and the row's own categories by a proposal from their prior;
2. links: each category's links to shared features by Metropolis flips (eq. 7.5), its own
   features by a proposal from their prior;
3. noisy-or children ``z_nk`` by Gibbs (eq. 7.9);
4. ``A`` and the likelihood's parameters given ``Z`` (the likelihood's own updates), then
   ``alpha_C``, ``alpha_M`` and ``q``.

Moves of steps 1-2 sample an entry of ``C`` or ``M`` jointly with the children it alone
activates (sec. 7.2.3); see :mod:`._hierarchy_kernels` for the exact form of each move.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from numbers import Integral

import numpy as np
from scipy.special import gammaln
from sklearn.utils._param_validation import Interval

from ..._deprecation import class_aliases
from ..._memory import check_allocation
from ..._slice import slice_sample
from ...likelihoods._observation_kernels import PRIOR_BERNOULLI
from ...priors.crp import sample_alpha_posterior_crp
from ...priors.ibp import sample_alpha_posterior
from .._protocol import Solver
from . import _hierarchy_kernels as kernels

__all__ = ["GibbsHierarchy", "HierarchyState", "UPPER_CODES", "LINK_CODES", "continuous_marker"]

UPPER_CODES = {"dp": kernels.UPPER_DP, "ibp": kernels.UPPER_IBP}
LINK_CODES = {"or": kernels.LINK_OR, "noisy_or": kernels.LINK_NOISY_OR}


def continuous_marker(likelihood):
    """The kernels' ``continuous`` argument: None for binary features, else ``np.True_``.

    A None lets numba leave the Gaussian and truncated-Gaussian feature proposals out of
    the kernels a fit of binary data compiles
    (:func:`~sklearn_ibp.solvers.hierarchy._hierarchy_kernels.feature_row_proposal`).
    """
    return None if likelihood.prior_kind == PRIOR_BERNOULLI else np.True_


@dataclass
class HierarchyState:
    """The arrays of one chain; see :mod:`._hierarchy_kernels` for their meaning.

    Only the first ``n_categories`` columns of ``C`` (rows of ``M``) and the first
    ``n_features`` columns of ``Z`` (rows of ``A``) are live between sweeps.
    """

    X: np.ndarray
    observed: np.ndarray
    upper: int
    link: int
    C: np.ndarray
    category: np.ndarray
    M: np.ndarray
    S: np.ndarray
    Z: np.ndarray
    A: np.ndarray
    pred: np.ndarray
    sizes: np.ndarray
    links: np.ndarray
    counts: np.ndarray
    alpha_c: float
    alpha_m: float
    q: float
    params: dict = field(default_factory=dict)

    @property
    def n_categories(self) -> int:
        return int(self.counts[kernels.L_LIVE])

    @property
    def n_features(self) -> int:
        return int(self.counts[kernels.K_LIVE])

    @property
    def live(self):
        """``(C, M, Z, A)`` of the live categories and features (views)."""
        L, K = self.n_categories, self.n_features
        return self.C[:, :L], self.M[:L, :K], self.Z[:, :K], self.A[:K]


#: Merge/split attempts per sweep (fewer when there are fewer categories): a number that
#: the moves cannot change. An attempt costs about 0.4 ms at N = 700.
MERGE_SPLIT_ATTEMPTS = 8


class GibbsHierarchy(Solver):
    """Gibbs sampler for the DP-IBP, IBP-IBP and noisy-or IBP-IBP (Doshi-Velez 2009, sec. 7.2).

    Parameters
    ----------
    n_auxiliary : int, default=3
        Fresh categories offered to a row by Algorithm 8 (DP upper process only).
    max_new_features : int, default=6
        Largest number of new features one proposal may create (a truncation of the
        Poisson proposal). The moves hold the truncated mass and refuse what they could
        not have proposed, so a smaller value only slows mixing; the one exception is the
        DP's Algorithm 8, which weights a singleton category with more own features as if
        its count were untruncated (prior probability about 1e-4 at the default).
    max_new_categories : int, default=4
        Largest number of new categories one row may propose (IBP upper process; exact
        at any value, as above).
    transfer_moves : bool, default=True
        Also try, ``K`` times a sweep, to move part of a feature into another (see
        :meth:`transfer_features`): the move that frees a chain from features that are
        combinations of others, the local optima Doshi-Velez (2009, sec. 7.2.3) reports.
    merge_split_moves : bool, default=True
        Also try, ``min(L, 8)`` times a sweep, to merge two features that disjoint sets of
        categories link into one, or to split one feature's categories between two (see
        :meth:`merge_split_features`): the move that frees a chain from a shape learnt
        twice, once for each group of categories.
    """

    model = "hierarchy"
    name = "gibbs"
    context = "likelihood"
    explicit = True
    # Missing entries are left out of the likelihood (``observed``).
    handles_missing = True

    _parameter_constraints: dict = {
        "n_auxiliary": [Interval(Integral, 1, None, closed="left")],
        "max_new_features": [Interval(Integral, 1, None, closed="left")],
        "max_new_categories": [Interval(Integral, 1, None, closed="left")],
        "transfer_moves": ["boolean"],
        "merge_split_moves": ["boolean"],
    }

    def __init__(self, n_auxiliary=3, max_new_features=6, max_new_categories=4,
                 transfer_moves=True, merge_split_moves=True):
        self.n_auxiliary = n_auxiliary
        self.max_new_features = max_new_features
        self.max_new_categories = max_new_categories
        self.transfer_moves = transfer_moves
        self.merge_split_moves = merge_split_moves

    # -- state ---------------------------------------------------------------------------
    @staticmethod
    def new_state(X, observed, likelihood, params, *, upper, link, alpha_c, alpha_m, q,
                  C=None, M=None, Z=None, A=None, rng=None) -> HierarchyState:
        """A state from explicit ``C``, ``M`` (and ``Z``, ``A``), or the empty start.

        Without ``C`` the DP puts every row in one category and the IBP gives rows no
        category; without ``M`` categories link no feature. ``Z`` defaults to
        ``[C M > 0]`` and ``A`` to a draw from its prior.
        """
        X = np.ascontiguousarray(X, dtype=np.float64)
        N, D = X.shape
        upper_code, link_code = UPPER_CODES[upper], LINK_CODES[link]
        if C is None:
            C = np.ones((N, 1), np.int8) if upper == "dp" else np.zeros((N, 0), np.int8)
        C = np.asarray(C, dtype=np.int8)
        L = C.shape[1]
        if M is None:
            M = np.zeros((L, 0), np.int8)
        M = np.asarray(M, dtype=np.int8)
        K = M.shape[1]
        S = C.astype(np.int32) @ M.astype(np.int32)
        Z = (S > 0).astype(np.int8) if Z is None else np.asarray(Z, dtype=np.int8)
        if A is None:
            A = likelihood.sample_prior_features(K, D, params, rng)
        Lcap, Kcap = max(2 * L, L + 8), max(2 * K, K + 16)
        state = HierarchyState(
            X=X,
            observed=np.ascontiguousarray(observed, dtype=np.uint8),
            upper=upper_code,
            link=link_code,
            C=_pad(C, (N, Lcap)),
            category=(np.argmax(C, axis=1) if L else np.zeros(N)).astype(np.int64),
            M=_pad(M, (Lcap, Kcap)),
            S=_pad(S.astype(np.int32), (N, Kcap)),
            Z=_pad(Z, (N, Kcap)),
            A=_pad(np.asarray(A, dtype=np.float64).reshape(K, D), (Kcap, D)),
            pred=np.zeros((N, D)),
            sizes=_pad(C.sum(axis=0).astype(np.int64), (Lcap,)),
            links=_pad(M.sum(axis=0).astype(np.int64), (Kcap,)),
            counts=np.array([L, K, L, K], dtype=np.int64),
            alpha_c=float(alpha_c),
            alpha_m=float(alpha_m),
            q=float(q),
            params=dict(params),
        )
        _refresh_prediction(state)
        GibbsHierarchy.compact(state)
        return state

    #: The protocol's name for :meth:`new_state`.
    initialize = new_state

    @staticmethod
    def compact(state: HierarchyState) -> None:
        """Drop dead categories and features; keep live ones in their order."""
        Ls, Ks = int(state.counts[kernels.L_SLOTS]), int(state.counts[kernels.K_SLOTS])
        if Ls == state.counts[kernels.L_LIVE] and Ks == state.counts[kernels.K_LIVE]:
            return  # no dead slot: the live ones are already first and in order
        keep_l = np.flatnonzero(state.sizes[:Ls] > 0)
        keep_k = np.flatnonzero(state.links[:Ks] > 0)
        L, K = keep_l.size, keep_k.size
        Lcap, Kcap = state.M.shape
        N = state.X.shape[0]
        C = np.zeros((N, Lcap), np.int8)
        C[:, :L] = state.C[:, keep_l]
        M = np.zeros((Lcap, Kcap), np.int8)
        M[:L, :K] = state.M[np.ix_(keep_l, keep_k)]
        S = np.zeros((N, Kcap), np.int32)
        S[:, :K] = state.S[:, keep_k]
        Z = np.zeros((N, Kcap), np.int8)
        Z[:, :K] = state.Z[:, keep_k]
        A = np.zeros_like(state.A)
        A[:K] = state.A[keep_k]
        sizes = np.zeros(Lcap, np.int64)
        sizes[:L] = state.sizes[keep_l]
        links = np.zeros(Kcap, np.int64)
        links[:K] = state.links[keep_k]
        relabel = np.full(max(Ls, 1), -1, np.int64)
        relabel[keep_l] = np.arange(L)
        if state.upper == kernels.UPPER_DP and N:
            state.category[:] = relabel[state.category]
        state.C, state.M, state.S, state.Z, state.A = C, M, S, Z, A
        state.sizes, state.links = sizes, links
        state.counts[:] = (L, K, L, K)

    @staticmethod
    def _grow(state: HierarchyState) -> None:
        N, D = state.X.shape
        Lcap, Kcap = state.M.shape
        Lnew, Knew = 2 * Lcap + 8, 2 * Kcap + 16
        # M grows with L * K; C, S and Z with N (L + K); A with K D. Checking the sum
        # before allocating also bounds the sweep's grow-and-retry loops.
        check_allocation(
            float(Lnew) * Knew + float(N) * (Lnew + 6 * Knew) + 8.0 * Knew * (D + 1)
            + 8.0 * Lnew,
            what=f"the hierarchy's arrays for {Lnew} categories and {Knew} features",
            advice="lower alpha_categories or alpha_features",
        )
        state.C = _pad(state.C, (N, Lnew))
        state.M = _pad(state.M, (Lnew, Knew))
        state.S = _pad(state.S, (N, Knew))
        state.Z = _pad(state.Z, (N, Knew))
        state.A = _pad(state.A, (Knew, D))
        state.sizes = _pad(state.sizes, (Lnew,))
        state.links = _pad(state.links, (Knew,))

    @staticmethod
    def set_data(state: HierarchyState, X) -> None:
        """Continue the chain on new values of the data (same shape)."""
        state.X = np.ascontiguousarray(X, dtype=np.float64)

    # -- one sweep -----------------------------------------------------------------------
    def sweep(self, state: HierarchyState, likelihood, rng) -> None:
        """Update ``C``, ``M``, the noisy-or ``Z`` and then ``A`` (steps 1-4 less the
        hyperparameters, which :meth:`sample_hyperparameters` updates)."""
        self.sweep_structure(state, likelihood, rng)
        if self.transfer_moves and state.X.shape[1]:
            self.transfer_features(state, likelihood, rng)
        if self.merge_split_moves and state.X.shape[1]:
            self.merge_split_features(state, likelihood, rng)
        self.sample_features(state, likelihood, rng)

    def sweep_structure(self, state: HierarchyState, likelihood, rng) -> None:
        """Steps 1-3: categories, links and noisy-or children, with ``A`` held fixed."""
        N, D = state.X.shape
        noise = likelihood.noise_array(state.params, D)
        prior = likelihood.prior_array(state.params)
        obs, pkind = likelihood.observation_kind, likelihood.prior_kind
        log_q = math.log(state.q) if state.q > 0.0 else -np.inf
        continuous = continuous_marker(likelihood)
        start = 0
        while True:
            Lcap, Kcap = state.M.shape
            if state.upper == kernels.UPPER_DP:
                work = kernels.dp_rows_work(N, D, Lcap, Kcap, self.n_auxiliary,
                                            self.max_new_features)
                start = kernels.dp_rows(
                    start, state.X, state.observed, state.C, state.category, state.M,
                    state.S, state.Z, state.A, state.pred, state.sizes, state.links,
                    state.counts, state.alpha_c, state.alpha_m, log_q, state.link, obs,
                    noise, pkind, prior, self.n_auxiliary, self.max_new_features, rng,
                    continuous, *work,
                )
            else:
                work = kernels.ibp_rows_work(N, D, Lcap, Kcap, self.max_new_categories,
                                             self.max_new_features)
                start = kernels.ibp_rows(
                    start, state.X, state.observed, state.C, state.M, state.S, state.Z,
                    state.A, state.pred, state.sizes, state.links, state.counts,
                    state.alpha_c, state.alpha_m, log_q, state.link, obs, noise, pkind,
                    prior, self.max_new_categories, self.max_new_features, rng, continuous,
                    *work,
                )
            if start < 0:
                break
            self.compact(state)
            self._grow(state)
        self.compact(state)
        start = 0
        category_order = rng.permutation(state.counts[kernels.L_SLOTS]).astype(np.int64)
        while True:
            Lcap, Kcap = state.M.shape
            start = kernels.link_pass(
                start, category_order, state.X, state.observed, state.C, state.M, state.S, state.Z,
                state.A, state.pred, state.sizes, state.links, state.counts,
                state.alpha_m, log_q, state.link, obs, noise, pkind, prior,
                self.max_new_features, rng, continuous,
                *kernels.link_pass_work(N, D, Lcap, Kcap, self.max_new_features),
            )
            if start < 0:
                break
            self._grow(state)
        self.compact(state)
        if state.link == kernels.LINK_NOISY_OR:
            kernels.child_pass(
                state.X, state.observed, state.S, state.Z, state.A, state.pred,
                state.n_features, log_q, obs, noise, rng, np.empty(D),
                np.empty(state.M.shape[1], np.int64),
            )

    @staticmethod
    def transfer_features(state: HierarchyState, likelihood, rng, n_attempts=None) -> None:
        """Metropolis-Hastings moves that hand part of one feature to another.

        For a random ordered pair of features ``(k, j)``:

        * *extract* (when no category links both): every category that links ``k`` also
          links ``j``, and ``a_k`` is redrawn from its data-driven proposal given the new
          configuration, so that ``k`` keeps only what ``j`` does not explain (a feature
          ``shape 2 + shape 3`` beside a feature ``shape 2`` becomes ``shape 3``);
        * *absorb*, its inverse (when the categories linking ``k`` are a proper subset of
          those linking ``j`` and, under the noisy-or, the children of ``j`` that would lose
          every parent equal those of ``k``): those links to ``j`` are removed and ``a_k``
          is redrawn likewise.

        Children of ``j`` that gain their first parent copy the children of ``k`` (the
        noisy-or; the ``or`` link sets them), which makes the two moves exact inverses.
        The ratio holds the labelled IBP prior of ``M``'s column ``j``, the noisy-or prior of
        column ``j``'s children, ``p(a_k)``, the likelihood and the proposal densities of
        the new and the old ``a_k``.
        """
        K = state.n_features
        if K < 2:
            return
        N, D = state.X.shape
        noise = likelihood.noise_array(state.params, D)
        prior = likelihood.prior_array(state.params)
        log_q = math.log(state.q) if state.q > 0.0 else -np.inf
        continuous = continuous_marker(likelihood)
        L = state.n_categories
        for _ in range(K if n_attempts is None else n_attempts):
            k, j = rng.choice(K, size=2, replace=False)
            # Views: nothing below writes into them before the move is accepted.
            M = state.M[:L, :K]
            in_k, in_j = M[:, k] == 1, M[:, j] == 1
            if not np.any(in_k & in_j):
                extract = True
            elif np.all(in_j[in_k]) and np.any(in_j & ~in_k):
                extract = False
            else:
                continue
            C, Z, A = state.C[:, :L], state.Z[:, :K], state.A[:K]
            S = state.S[:, :K]
            M_new = M.copy()
            M_new[in_k, j] = 1 if extract else 0
            # The categories of k gain (extract) or lose (absorb) their link to j.
            s_j = S[:, j] + (1 if extract else -1) * C[:, in_k].sum(axis=1, dtype=np.int64)
            Z_new = Z.copy()
            if state.link == kernels.LINK_OR:
                Z_new[:, j] = s_j > 0
            else:
                gain = (S[:, j] == 0) & (s_j > 0)
                lose = (S[:, j] > 0) & (s_j == 0)
                if extract:
                    Z_new[gain, j] = Z[gain, k]
                else:
                    if np.any(Z[lose, j] != Z[lose, k]):
                        continue
                    Z_new[lose, j] = 0
            rows = np.flatnonzero(S[:, k] > 0)
            z_k = Z[rows, k].astype(np.int64)
            pred_old = state.pred[rows] - z_k[:, None] * A[k]
            dz_j = Z_new[rows, j].astype(np.int64) - Z[rows, j]
            pred_new = pred_old + dz_j[:, None] * A[j]
            A_new = A.copy()
            log_q_old = kernels.feature_row_proposal(
                False, likelihood.prior_kind, prior, likelihood.observation_kind, noise,
                state.X, state.observed, rows, rows.size, z_k, pred_old, A[k].copy(), rng,
                continuous,
            )
            log_q_new = kernels.feature_row_proposal(
                True, likelihood.prior_kind, prior, likelihood.observation_kind, noise,
                state.X, state.observed, rows, rows.size, z_k, pred_new, A_new[k], rng,
                continuous,
            )
            m_old, m_new = int(in_j.sum()), int(M_new[:, j].sum())
            log_ratio = (
                gammaln(m_new) + gammaln(L - m_new + 1) - gammaln(m_old) - gammaln(L - m_old + 1)
            )
            if state.link == kernels.LINK_NOISY_OR:
                log_ratio += _children_log_prior(Z_new[:, j], s_j, log_q) - _children_log_prior(
                    Z[:, j], S[:, j], log_q
                )
            log_ratio += _log_prior_feature(likelihood.prior_kind, prior, A_new[k])
            log_ratio -= _log_prior_feature(likelihood.prior_kind, prior, A[k])
            changed = np.flatnonzero((S[:, k] > 0) | (s_j != S[:, j]))
            log_ratio += likelihood.row_log_likelihood(
                state.X[changed], state.observed[changed], Z_new[changed], A_new, state.params
            ).sum() - likelihood.row_log_likelihood(
                state.X[changed], state.observed[changed], Z[changed], A, state.params
            ).sum()
            log_ratio += log_q_old - log_q_new
            if not (log_ratio >= 0.0 or rng.random() < math.exp(log_ratio)):
                continue
            state.M[:L, j] = M_new[:, j]
            state.links[j] = m_new
            state.S[:, j] = s_j
            state.Z[:, j] = Z_new[:, j]
            state.A[k] = A_new[k]
            _refresh_prediction(state)

    @classmethod
    def merge_split_features(cls, state: HierarchyState, likelihood, rng,
                             n_attempts=None) -> None:
        """Metropolis-Hastings moves that merge two features or split one in two.

        With probability one half, *merge*: a random ordered pair of features ``(k, j)``
        that no category links both and no row reaches through both becomes one feature
        linked by the categories of either, its children those of ``k`` and of ``j``
        (disjoint rows), its ``a`` drawn from the data-driven proposal
        (:func:`~sklearn_ibp.solvers._feature_proposal_kernels.feature_proposal`, through
        :func:`~sklearn_ibp.solvers.hierarchy._hierarchy_kernels.feature_row_proposal`) given its
        rows. Otherwise *split*,
        the inverse: a random feature linked by ``m >= 2`` categories hands a uniformly
        random non-empty proper subset of them to a new feature (rejected if a row
        reaches both parts), both ``a`` drawn from their proposals. The children keep
        their parent counts, so their noisy-or prior is unchanged. With ``K`` features
        before a merge and ``w(m) = (m - 1)! (L - m)! / L!`` (the IBP prior of one
        column), a merge is accepted with probability
        ``min(1, K / alpha_M * w(m) / (w(m_k) w(m_j)) / (2^m - 2) * p(a) q(a_k) q(a_j) /
        (q(a) p(a_k) p(a_j)) * likelihood ratio)``, a split with the inverse ratio.
        Every other move visits features in a random order, so where the new feature's
        slot lies is immaterial.
        """
        N, D = state.X.shape
        noise = likelihood.noise_array(state.params, D)
        prior = likelihood.prior_array(state.params)
        pkind, okind = likelihood.prior_kind, likelihood.observation_kind
        continuous = continuous_marker(likelihood)
        # The number of attempts must not depend on anything the moves change (K): a
        # state-dependent number of repetitions of an invariant kernel need not be
        # invariant. L is left alone by these moves.
        if n_attempts is None:
            n_attempts = min(state.n_categories, MERGE_SPLIT_ATTEMPTS)
        for _ in range(n_attempts):
            K, L = state.n_features, state.n_categories
            merge = rng.random() < 0.5
            if (merge and K < 2) or K < 1 or L < 2:
                continue
            # Views: nothing is written before a move is accepted, and then only from
            # values computed here.
            C, M, Z, A = state.live
            S = state.S[:, :K]
            if merge:
                k, j = rng.choice(K, size=2, replace=False)
                shared = np.any((M[:, k] == 1) & (M[:, j] == 1))
                if shared or np.any((S[:, k] > 0) & (S[:, j] > 0)):
                    continue
                m_k, m_j = int(M[:, k].sum()), int(M[:, j].sum())
                m = m_k + m_j
                rows_k, rows_j = np.flatnonzero(S[:, k] > 0), np.flatnonzero(S[:, j] > 0)
                rows = np.flatnonzero((S[:, k] > 0) | (S[:, j] > 0))
                z_new = (Z[rows, k] + Z[rows, j]).astype(np.int64)
                base = (state.pred[rows] - Z[rows, k][:, None] * A[k]
                        - Z[rows, j][:, None] * A[j])
                a_new = np.empty(D)
                log_q_new = kernels.feature_row_proposal(
                    True, pkind, prior, okind, noise, state.X, state.observed, rows,
                    rows.size, z_new, base, a_new, rng, continuous,
                )
                log_q_old = 0.0
                for f, rows_f in ((k, rows_k), (j, rows_j)):
                    z_f = Z[rows_f, f].astype(np.int64)
                    log_q_old += kernels.feature_row_proposal(
                        False, pkind, prior, okind, noise, state.X, state.observed, rows_f,
                        rows_f.size, z_f, state.pred[rows_f] - z_f[:, None] * A[f],
                        A[f].copy(), rng, continuous,
                    )
                log_ratio = _merge_log_ratio(
                    K, state.alpha_m, L, m, m_k, m_j,
                    _log_prior_feature(pkind, prior, a_new) - log_q_new,
                    _log_prior_feature(pkind, prior, A[k])
                    + _log_prior_feature(pkind, prior, A[j]) - log_q_old,
                )
                pred_new = base + z_new[:, None] * a_new
            else:
                k = int(rng.integers(K))
                cats = np.flatnonzero(M[:, k] == 1)
                m = cats.size
                if m < 2:
                    continue
                # A uniformly random non-empty proper subset of the categories moves to j
                # (rejection sampling: each try succeeds with probability >= 1/2, so 64
                # tries fail with probability <= 2^-64; then the attempt is skipped).
                for _ in range(64):
                    moved = rng.random(m) < 0.5
                    if 0 < moved.sum() < m:
                        break
                else:
                    continue
                col_k = np.zeros(L, np.int64)
                col_j = np.zeros(L, np.int64)
                col_k[cats[~moved]] = 1
                col_j[cats[moved]] = 1
                s_k, s_j = C.astype(np.int64) @ col_k, C.astype(np.int64) @ col_j
                if np.any((s_k > 0) & (s_j > 0)):
                    continue
                rows = np.flatnonzero(S[:, k] > 0)
                z_old = Z[rows, k].astype(np.int64)
                base = state.pred[rows] - z_old[:, None] * A[k]
                log_q_old = kernels.feature_row_proposal(
                    False, pkind, prior, okind, noise, state.X, state.observed, rows,
                    rows.size, z_old, base, A[k].copy(), rng, continuous,
                )
                new_a = np.empty((2, D))
                log_q_new = 0.0
                pred_new = base.copy()
                for t, s_f in enumerate((s_k, s_j)):
                    in_f = s_f[rows] > 0
                    rows_f = rows[in_f]
                    z_f = z_old[in_f]
                    log_q_new += kernels.feature_row_proposal(
                        True, pkind, prior, okind, noise, state.X, state.observed, rows_f,
                        rows_f.size, z_f, base[in_f], new_a[t], rng, continuous,
                    )
                    pred_new[in_f] += z_f[:, None] * new_a[t]
                m_k, m_j = int(col_k.sum()), int(col_j.sum())
                log_ratio = -_merge_log_ratio(
                    K + 1, state.alpha_m, L, m, m_k, m_j,
                    _log_prior_feature(pkind, prior, A[k]) - log_q_old,
                    _log_prior_feature(pkind, prior, new_a[0])
                    + _log_prior_feature(pkind, prior, new_a[1]) - log_q_new,
                )
            log_ratio += kernels.rows_log_likelihood(
                okind, state.X, state.observed, rows, pred_new, noise
            ) - kernels.rows_log_likelihood(
                okind, state.X, state.observed, rows, state.pred[rows], noise
            )
            if not (log_ratio >= 0.0 or rng.random() < math.exp(log_ratio)):
                continue
            if merge:
                state.M[:L, k] |= state.M[:L, j]
                state.M[:L, j] = 0
                state.links[k], state.links[j] = m, 0
                state.S[:, k] += state.S[:, j]
                state.S[:, j] = 0
                state.Z[:, k] += state.Z[:, j]
                state.Z[:, j] = 0
                state.A[k] = a_new
                state.counts[kernels.K_LIVE] -= 1
                cls.compact(state)
            else:
                if state.counts[kernels.K_SLOTS] >= state.M.shape[1]:
                    cls._grow(state)
                new = int(state.counts[kernels.K_SLOTS])
                state.M[:L, k], state.M[:L, new] = col_k, col_j
                state.links[k], state.links[new] = m_k, m_j
                state.S[:, k], state.S[:, new] = s_k, s_j
                z_k = np.where(s_k > 0, state.Z[:, k], 0)
                state.Z[:, new] = np.where(s_j > 0, state.Z[:, k], 0)
                state.Z[:, k] = z_k
                state.A[k], state.A[new] = new_a
                state.counts[kernels.K_SLOTS] += 1
                state.counts[kernels.K_LIVE] += 1
            state.pred[rows] = pred_new

    @staticmethod
    def sample_features(state: HierarchyState, likelihood, rng) -> None:
        """Step 4a: ``A`` given ``Z`` by the likelihood's own update.

        The features are handed over in a random order: their slots are in order of
        creation, and a feature-by-feature update must not take its order from the state.
        """
        _, _, Z, A = state.live
        if state.X.shape[1]:
            order = rng.permutation(A.shape[0])
            A_new = likelihood.sample_features(
                state.X, state.observed, np.ascontiguousarray(Z[:, order]),
                np.ascontiguousarray(A[order]), state.params, rng,
            )
            state.A[order] = A_new
        _refresh_prediction(state)

    @staticmethod
    def sample_hyperparameters(state: HierarchyState, likelihood, rng, *, sample_q=True,
                               hold=()):
        """Step 4b: the likelihood's parameters, ``alpha_C``, ``alpha_M`` and ``q``.

        ``hold`` names likelihood parameters kept at their current values (the draw is
        still made, so the random stream does not depend on it): the estimator holds the
        Gaussian feature scale ``sigma_a`` at its data-scaled start (see the user guide,
        "The likelihoods").

        ``alpha_M ~ Gamma(1 + K, 1 + H_L)`` (the IBP over the ``L`` categories) and, for
        the IBP upper process, ``alpha_C ~ Gamma(1 + L, 1 + H_N)`` (vague Gamma(1, 1)
        priors, Doshi-Velez 2009, sec. 5.1); for the DP, ``alpha_C`` by slice sampling under the
        prior of :func:`~sklearn_ibp.priors.crp.sample_alpha_posterior_crp`. ``q`` has a
        uniform prior and is slice-sampled from ``prod (1 - q^s)^z q^(s (1 - z))`` over the
        entries with a parent.
        """
        _, _, Z, A = state.live
        N, D = state.X.shape
        if D:
            new = likelihood.sample_parameters(
                state.X, state.observed, Z, A, state.params, rng
            )
            for name in hold:
                new[name] = state.params[name]
            state.params = new
        L, K = state.n_categories, state.n_features
        state.alpha_m = sample_alpha_posterior(K, L, rng)
        if state.upper == kernels.UPPER_DP:
            state.alpha_c = sample_alpha_posterior_crp(state.alpha_c, L, N, rng)
        else:
            state.alpha_c = sample_alpha_posterior(L, N, rng)
        if state.link == kernels.LINK_NOISY_OR and sample_q:
            state.q = _sample_q(state, rng)

    # -- the joint ----------------------------------------------------------------------
    def update_state(self, state: HierarchyState, likelihood, rng, *,
                     sample_hyperparameters=True, missing=None, hold=()) -> None:
        """With ``sample_hyperparameters``, :meth:`sample_hyperparameters` holding the
        likelihood parameters named in ``hold``; missing entries are left out of the
        likelihood (``state.observed``), so ``missing`` is not used."""
        if sample_hyperparameters:
            self.sample_hyperparameters(state, likelihood, rng, hold=hold)

    def trace_names(self, likelihood) -> tuple:
        """The sizes and hyperparameters of the hierarchy, then the likelihood's
        parameters."""
        return ("log_joint", "n_features", "n_categories", "alpha_categories",
                "alpha_features", "q") + tuple(likelihood.parameter_names)

    def trace_values(self, state: HierarchyState, log_joint, likelihood) -> tuple:
        params = tuple(float(state.params[name]) for name in likelihood.parameter_names)
        return (log_joint, state.n_features, state.n_categories, state.alpha_c,
                state.alpha_m, state.q) + params

    def snapshot(self, state: HierarchyState, likelihood, chain=0) -> dict:
        """The live ``C``, ``M``, ``Z`` and ``A``, the hyperparameters and the
        likelihood's parameters."""
        C, M, Z, A = state.live
        return {
            "C": C.copy(),
            "M": M.copy(),
            "Z": Z.copy(),
            "A": A.copy(),
            "alpha_categories": state.alpha_c,
            "alpha_features": state.alpha_m,
            "q": state.q,
            "params": {k: np.copy(v) if np.ndim(v) else float(v)
                       for k, v in state.params.items()},
        }

    @staticmethod
    def log_joint(state: HierarchyState, likelihood) -> float:
        """``log p(C, M, Z, A, X)`` at the current hyperparameters."""
        from ...priors.hierarchy import hierarchy_log_prob

        C, M, Z, A = state.live
        upper = "dp" if state.upper == kernels.UPPER_DP else "ibp"
        link = "or" if state.link == kernels.LINK_OR else "noisy_or"
        value = hierarchy_log_prob(C, M, Z, state.alpha_c, state.alpha_m, upper, link,
                                   q=state.q)
        if state.X.shape[1]:
            value += likelihood.log_prior_features(A, state.params)
            value += likelihood.log_likelihood(state.X, state.observed, Z, A, state.params)
        return float(value)

    @staticmethod
    def new_row_feature_probabilities(X, observed, M, A, category_log_prior, *, upper, link,
                                      log_q, obs_kind, noise, n_sweeps, n_burn, seed):
        """``E[z_nk | x_n]`` of new rows given the fitted ``M`` (categories x features), ``A``
        and the categories' log prior weights, row by row (sec. 7.2's conditionals with the
        structure held fixed); ``upper`` is ``'dp'`` or ``'ibp'``, ``link`` ``'or'`` or
        ``'noisy_or'``. Deterministic given ``seed``; see
        :func:`~sklearn_ibp.solvers.hierarchy._hierarchy_kernels.new_row_feature_probabilities`.
        """
        return kernels.new_row_feature_probabilities(
            X, observed, M, A, category_log_prior, UPPER_CODES[upper], LINK_CODES[link],
            log_q, obs_kind, noise, n_sweeps, n_burn, seed,
        )

    @staticmethod
    def convert(state: HierarchyState, *, upper=None, link=None) -> None:
        """Turn a chain of a simpler model into one of a richer model in place.

        A DP state is a valid IBP state (one category per row) and an ``or`` state a
        valid noisy-or state (every child with a parent on): Doshi-Velez (2009) initialises richer
        models from the final sample of simpler ones (sec. 7.3).
        """
        if upper is not None:
            state.upper = UPPER_CODES[upper]
        if link is not None:
            state.link = LINK_CODES[link]


def _pad(array, shape):
    out = np.zeros(shape, dtype=array.dtype)
    out[tuple(slice(0, s) for s in array.shape)] = array
    return out


def _refresh_prediction(state: HierarchyState) -> None:
    _, _, Z, A = state.live
    state.pred = np.ascontiguousarray(Z.astype(np.float64) @ A)


def _log_prior_feature(prior_kind, prior, a) -> float:
    """``log p(a)`` of one feature row, as
    :func:`~sklearn_ibp.solvers._feature_proposal_kernels.log_prior_feature` computes it.

    A Bernoulli prior is summed here in NumPy, term by term in the kernel's order
    (``cumsum`` adds from the left), so that a fit of binary data does not compile the
    kernel (with its Gaussian and exponential branches, some 0.3 CPU s of a cold fit) for
    the merge, split and transfer moves; other priors call the kernel.
    """
    if prior_kind != PRIOR_BERNOULLI:
        return kernels.log_prior_feature(prior_kind, prior, a)
    if a.shape[0] == 0:
        return 0.0
    terms = np.where(a > 0.5, math.log(prior[0]), math.log1p(-prior[0]))
    return float(np.cumsum(terms)[-1])


def _log_column_prior(m, L) -> float:
    """``log w(m) = log((m - 1)! (L - m)! / L!)``: the IBP prior of one column of ``M``."""
    return float(gammaln(m) + gammaln(L - m + 1) - gammaln(L + 1))


def _merge_log_ratio(K, alpha_m, L, m, m_k, m_j, log_w_merged, log_w_parts) -> float:
    """Log Metropolis-Hastings ratio of merging two features (a split is its negative).

    ``K`` features before the merge; the parts are linked by ``m_k`` and ``m_j``
    categories, the merged feature by ``m = m_k + m_j``; ``log_w_merged`` and
    ``log_w_parts`` are ``log p(a) - log q(a)`` of the merged feature and the sum of
    those of the two parts. The likelihood ratio is added by the caller.
    """
    return (
        math.log(K) - math.log(alpha_m) - math.log(2.0**m - 2.0)
        + _log_column_prior(m, L) - _log_column_prior(m_k, L) - _log_column_prior(m_j, L)
        + log_w_merged - log_w_parts
    )


def _children_log_prior(z, s, log_q) -> float:
    """Noisy-or ``sum log P(z | s)`` over the entries of one column with a parent."""
    on = s > 0
    if not np.any(on):
        return 0.0
    s_on, z_on = s[on].astype(float), z[on]
    if np.any(z[~on] == 1):
        return -np.inf
    return float(np.sum(np.where(z_on == 1, np.log(-np.expm1(s_on * log_q)), s_on * log_q)))


def _sample_q(state: HierarchyState, rng) -> float:
    """Slice-sample ``q`` (uniform prior) given the parent counts and children."""
    K = state.n_features
    S = state.S[:, :K]
    Z = state.Z[:, :K]
    has_parent = S > 0
    s_on = S[has_parent & (Z == 1)].astype(float)
    off_total = float(S[has_parent & (Z == 0)].sum())

    def log_density(u):
        # q = sigmoid(u) with the Jacobian q (1 - q) of the uniform prior.
        if u > 40.0 or u < -40.0:
            return -math.inf
        log_q = -math.log1p(math.exp(-u))
        log_1mq = -math.log1p(math.exp(u))
        value = log_q + log_1mq + off_total * log_q
        if s_on.size:
            value += float(np.sum(np.log(-np.expm1(s_on * log_q))))
        return value

    q = min(max(state.q, 1e-12), 1.0 - 1e-12)
    u = slice_sample(log_density, math.log(q) - math.log1p(-q), rng, width=2.0)
    return float(1.0 / (1.0 + math.exp(-u)))


#: Old class names (before issue 21), importable with a FutureWarning naming the new one.
__getattr__ = class_aliases(__name__)
