"""The noisy-or IBP-IBP sampler in plain NumPy: the baseline of ``bench_hierarchy.py``.

The model is the noisy-or IBP-IBP of Doshi-Velez 2009, sec. 7.2.3 (eq. 7.8) with the
exponential-Gaussian likelihood of its demonstration: rows own categories through
``C ~ IBP(alpha_C)`` (any number each), categories link features through
``M ~ IBP(alpha_M)`` over the ``L`` categories, ``s_nk = c_n . m_k`` counts the active
parents of ``z_nk``, and

    P(z_nk = 1 | s_nk) = 1 - q^s_nk   (no leak: z_nk = 0 when s_nk = 0),
    x_n = z_n A + e_n,   a_kd ~ Exponential(rate),   e_nd ~ N(0, sigma_x^2).

``alpha_C``, ``alpha_M``, ``q``, ``sigma_x`` and ``rate`` are held fixed. The state is
``(C, M, Z, A)`` with ``S = C M``, ``pred = Z A`` and the counts ``sizes = C.sum(0)``,
``links = M.sum(0)``; categories without rows and features without links are deleted as
soon as they appear. Every entry is observed (no missing-data mask).

One sweep makes the same Markov chain moves as
:meth:`sklearn_ibp.solvers.hierarchy.hierarchy_gibbs.GibbsHierarchy.sweep` with ``upper="ibp"``,
``link="noisy_or"`` and ``transfer_moves=False, merge_split_moves=False`` (the kernels
``ibp_rows``, ``link_pass``, ``child_pass`` and the likelihood's ``A`` update), written
the way a careful researcher would write them in NumPy: vectorised over the members of a
category, the dimensions, the children a move touches and, in the child pass, the rows
of one feature; Python loops where the algorithm is sequential (rows, categories,
features, the features of a proposal). Whenever a move changes the parents of a child,
the child that gains its first parent is drawn from its prior ``1 - q^s``, the one that
loses its last parent is switched off and the others keep ``z`` and add the ratio of
their noisy-or priors (the joint move of sec. 7.2.3).

1. **Rows**, one after the other. (a) Each shared category (``m_{-n,l} > 0``), in a random
   order: a Metropolis flip of ``c_nl`` with prior odds ``m_{-n,l} / (N - m_{-n,l})``
   jointly with the children of row ``n`` under ``m_l``. (b) The row's own categories
   (only row ``n``) and the features only they link are replaced by
   ``Poisson(alpha_C / N)`` new categories (truncated at ``max_new_categories``) whose
   links follow the IBP predictive of ``M`` (existing features with probability
   ``r_k / (L_- + j + 1)``, ``Poisson(alpha_M / (L_- + j + 1))`` new ones, truncated at
   ``max_new_features``); the new features' ``A`` is proposed from the row's data
   (:func:`feature_proposal`), one after the other, each given the row's other features
   and the new ones before it; the reverse scores the replaced features in a uniformly
   random order. The ratio holds the likelihood and ``p(A) / q(A)`` of both sets.
2. **Links**, categories in a random order. (a) Each ``m_lk`` of a feature other
   categories link, features in a random order: a Metropolis flip with prior odds
   ``r_{-l,k} / (L - r_{-l,k})`` (eq. 7.5) jointly with the children of all members.
   (b) The own-feature move: the features only category ``l`` links are replaced by
   ``Poisson(alpha_M / L)`` new ones (truncated), children from ``1 - q``, ``A`` proposed
   from the members' data as in 1(b); once alone and once jointly with a flip of each
   shared link, these ``1 + #shared`` moves in a random order.
3. **Children**: Gibbs on every ``z_nk`` with a parent (eq. 7.9), features in a random
   order, all rows of one feature at once (given ``A`` and ``S`` the rows are
   independent, so this is the same kernel as ours, which loops over rows outside).
4. **Features** ``A``: element-wise Gibbs from the truncated-Gaussian conditionals
   (appendix A.2), features in a random order, the ``D`` dimensions of one feature at
   once, keeping the residual current; the truncated Gaussian by the inverse CDF in log
   space (:func:`numpy_hierarchy.draw_nonnegative_normal`). Then ``pred = Z A`` afresh.

Differences from ``GibbsHierarchy`` (``upper="ibp"``, ``link="noisy_or"``):

* no transfer moves and no merge/split moves (ours tries ``K`` and ``min(L, 8)`` a sweep
  by default); ``bench_hierarchy.py`` therefore also times ours with
  ``GibbsHierarchy(transfer_moves=False, merge_split_moves=False)``, which makes exactly
  the moves above;
* the random numbers are drawn in another order and by other algorithms (the truncated
  Gaussians of the proposals and of ``A`` by the inverse CDF here, by rejection in ours),
  so the two chains are the same Markov chain but not the same path;
* the visit orders are drawn over the live categories and features (ours draws them over
  its slots and skips dead ones: the same distribution of orders of the live ones);
* the state is dense ``(N, L)``, ``(L, K)``, ``(N, K)`` arrays that are reallocated when
  categories or features are created or deleted (ours keeps spare capacity and compacts
  after each pass);
* likelihood ratios drop the constant ``-D/2 log(2 pi sigma_x^2)`` of each row (every
  ratio compares the same rows).

As ours, step 1(b) holds the truncated-Poisson mass of the new features' counts and
keeps a row's own categories when the truncated proposal could not have drawn them (more
than ``max_new_categories``, or, in a random order, one bringing more than
``max_new_features`` features of its own); step 2(b) rejects when the category has more
than ``max_new_features`` own features. (Both samplers left the first two out until this
baseline's author found them missing in ours; see benchmarks/README.md.)

This file imports nothing from :mod:`sklearn_ibp` except in its self-check,
``python benchmarks/numpy_noisy_or.py`` (about 3 minutes): (a) with ``D = 0`` (no
likelihood) the chain must reproduce the noisy-or IBP-IBP prior (``E[L]``, ``E[K]``,
``E[sum Z]`` against a Monte Carlo of direct prior draws); (b) on three rows in two
dimensions its posterior means of ``L``, ``K`` and ``sum Z`` must agree with those of
``GibbsHierarchy`` (both with their default moves, long chains; z-scores of the
difference).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy_hierarchy import draw_nonnegative_normal
from scipy.special import expit, log_ndtr, pdtr

__all__ = ["NumpyNoisyOrGibbs", "NumpyNoisyOrState", "check_invariants", "feature_proposal"]

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


@dataclass
class NumpyNoisyOrState:
    """``C`` (N, L), ``M`` (L, K), ``Z`` (N, K) int8; ``S = C M`` (N, K) int64; ``A`` (K, D);
    ``pred = Z A`` (N, D); counts ``sizes`` (L,), ``links`` (K,)."""

    X: np.ndarray
    C: np.ndarray
    M: np.ndarray
    S: np.ndarray
    Z: np.ndarray
    A: np.ndarray
    pred: np.ndarray
    sizes: np.ndarray
    links: np.ndarray

    @property
    def n_categories(self):
        return self.M.shape[0]

    @property
    def n_features(self):
        return self.M.shape[1]


def _log_poisson_cdf(rate, k_max):
    """``log P(Poisson(rate) <= k_max)``."""
    return math.log(pdtr(k_max, rate))


def _truncated_poisson(rate, k_max, rng):
    """``Poisson(rate)`` truncated at ``k_max`` (by rejection, as ours)."""
    while True:
        k = int(rng.poisson(rate))
        if k <= k_max:
            return k


def feature_proposal(Xr, base, children, s2, rate, rng, a=None):
    """Propose (``a is None``) or score a new feature row: ``(a, log p(a) - log q(a))``.

    ``q`` is the feature's conditional posterior given the rows ``Xr`` whose ``children``
    are 1, their other features fixed at ``base``: per dimension ``N(mean, sd^2)``
    truncated to ``[0, inf)`` with ``mean = (sum (x - base) - rate sigma_x^2) / c`` and
    ``sd = sigma_x / sqrt(c)`` over the ``c`` rows with the child on (appendix A.2); with
    ``c = 0`` it is the prior. ``base`` then gains ``a`` in those rows (in place), so that
    the next feature of a set is proposed given this one.
    """
    on = children == 1
    c = int(np.count_nonzero(on))
    if c == 0:
        if a is None:
            a = rng.exponential(1.0 / rate, size=Xr.shape[1])
        return a, 0.0
    sd = math.sqrt(s2 / c)
    mean = ((Xr[on] - base[on]).sum(axis=0) - rate * s2) / c
    if a is None:
        a = draw_nonnegative_normal(mean, sd, rng)
    u = (a - mean) / sd
    log_q = float(-0.5 * (u @ u) - a.size * (math.log(sd) + _LOG_SQRT_2PI)
                  - log_ndtr(mean / sd).sum())
    log_p = a.size * math.log(rate) - rate * float(a.sum())
    base[on] += a
    return a, log_p - log_q


class NumpyNoisyOrGibbs:
    """The noisy-or IBP-IBP Gibbs sweep with exponential features, in NumPy.

    Parameters
    ----------
    alpha_c, alpha_m : float
        Concentrations of the IBP over categories (rows) and over links (categories).
    q : float
        Noisy-or parameter, ``P(z = 1 | s) = 1 - q^s``; in ``(0, 1)``.
    sigma_x, rate : float
        Noise standard deviation and rate of the exponential prior on ``A``.
    max_new_categories, max_new_features : int
        Truncations of the Poisson proposals (ours: 4 and 6).
    """

    def __init__(self, alpha_c, alpha_m, q, sigma_x, rate, max_new_categories=4,
                 max_new_features=6):
        self.alpha_c = float(alpha_c)
        self.alpha_m = float(alpha_m)
        self.q = float(q)
        self.log_q = math.log(self.q)
        self.sigma_x = float(sigma_x)
        self.rate = float(rate)
        self.s2 = self.sigma_x**2
        self._scale = -0.5 / self.s2
        self.max_new_categories = int(max_new_categories)
        self.max_new_features = int(max_new_features)
        self._log_on = np.zeros(0)
        self._p_on = np.zeros(0)

    # -- state ---------------------------------------------------------------------------
    @staticmethod
    def initialize(X, C, M, Z, A) -> NumpyNoisyOrState:
        """A state from ``C`` (N, L), ``M`` (L, K), ``Z`` (N, K), ``A`` (K, D) (copied)."""
        X = np.ascontiguousarray(X, dtype=np.float64)
        N, D = X.shape
        C = np.array(C, dtype=np.int8, copy=True)
        M = np.array(M, dtype=np.int8, copy=True)
        K = M.shape[1]
        Z = np.array(Z, dtype=np.int8, copy=True).reshape(N, K)
        A = np.array(A, dtype=np.float64, copy=True).reshape(K, D)
        st = NumpyNoisyOrState(
            X=X, C=C, M=M, S=C.astype(np.int64) @ M.astype(np.int64), Z=Z, A=A,
            pred=Z @ A, sizes=C.sum(axis=0).astype(np.int64),
            links=M.sum(axis=0).astype(np.int64),
        )
        st.Z[st.S == 0] = 0
        _drop_dead(st)
        return st

    # -- one sweep -----------------------------------------------------------------------
    def sweep(self, st, rng, times=None):
        """Steps 1-4. ``times`` (a dict), if given, accumulates the seconds of each step."""
        import time

        t0 = time.perf_counter()
        self.sweep_rows(st, rng)
        t1 = time.perf_counter()
        self.sweep_links(st, rng)
        t2 = time.perf_counter()
        self.sweep_children(st, rng)
        t3 = time.perf_counter()
        if st.X.shape[1]:
            self.sample_features(st, rng)
        t4 = time.perf_counter()
        if times is not None:
            for key, dt in (("rows", t1 - t0), ("links", t2 - t1), ("children", t3 - t2),
                            ("A", t4 - t3)):
                times[key] = times.get(key, 0.0) + dt

    def _loglik(self, x, pred):
        """Gaussian log-likelihood of rows without the constant (last axis summed)."""
        r = x - pred
        return self._scale * np.einsum("...d,...d->...", r, r)

    def _tables(self, s_max):
        """``log(1 - q^s)`` (0 at ``s = 0``, never read there) and ``1 - q^s`` for
        ``s = 0 .. s_max`` at least: parent counts index them."""
        if self._log_on.size <= s_max:
            s = np.arange(2 * s_max + 16)
            self._p_on = -np.expm1(s * self.log_q)
            self._log_on = np.log(np.where(s > 0, self._p_on, 1.0))
        return self._log_on, self._p_on

    def _children(self, z_old, s_old, s_new, rng):
        """Children under a change of parent counts ``s_old -> s_new`` (arrays).

        A child that gains its first parent is drawn from ``1 - q^s_new``, one that loses
        its last is switched off, the others keep ``z``. Returns the new children and the
        log prior ratio of those that keep a parent.
        """
        log_on, p_on = self._log_on, self._p_on  # sized by the caller (_tables)
        born = s_old == 0
        alive = s_new > 0
        z_new = np.where(born, rng.random(z_old.size) < p_on[s_new], z_old * alive)
        ratio = np.where(z_old == 1, log_on[s_new] - log_on[s_old],
                         (s_new - s_old) * self.log_q)
        return z_new.astype(np.int8), float(ratio[alive & ~born].sum())

    def _replaced_weight(self, Xr, base, Zr, A, rng):
        """``sum log p(a_k) - log q(a_k)`` of the replaced features (columns of ``Zr``,
        rows of ``A``) scored in a uniformly random order given ``base`` (advanced)."""
        total = 0.0
        for t in rng.permutation(A.shape[0]):
            total += feature_proposal(Xr, base, Zr[:, t], self.s2, self.rate, rng, A[t])[1]
        return total

    # 1. rows --------------------------------------------------------------------------------
    def sweep_rows(self, st, rng):
        """Step 1: every row's shared categories by Metropolis flips, then its own."""
        N = st.X.shape[0]
        for n in range(N):
            x = st.X[n]
            self._tables(st.M.shape[0] + self.max_new_categories)
            r = x - st.pred[n]
            log_lik = self._scale * float(r @ r)
            for cat in rng.permutation(st.C.shape[1]):
                c_old = int(st.C[n, cat])
                others = int(st.sizes[cat]) - c_old
                if others == 0:
                    continue
                sign = 1 - 2 * c_old
                ks = np.flatnonzero(st.M[cat])
                z_old, s_old = st.Z[n, ks], st.S[n, ks]
                s_new = s_old + sign
                z_new, log_ratio = self._children(z_old, s_old, s_new, rng)
                dz = z_new - z_old
                if dz.any():
                    new_pred = st.pred[n] + dz.astype(np.float64) @ st.A[ks]
                    r = x - new_pred
                    new_lik = self._scale * float(r @ r)
                else:  # no child changes: neither does the likelihood
                    new_pred, new_lik = st.pred[n], log_lik
                log_accept = (log_ratio + new_lik - log_lik
                              + sign * (math.log(others) - math.log(N - others)))
                if log_accept >= 0.0 or rng.random() < math.exp(log_accept):
                    st.S[n, ks] = s_new
                    st.Z[n, ks] = z_new
                    st.pred[n] = new_pred
                    st.C[n, cat] = 1 - c_old
                    st.sizes[cat] += sign
                    log_lik = new_lik
            self._own_categories(st, n, log_lik, rng)

    def _own_categories(self, st, n, log_lik, rng):
        """Step 1(b): replace row ``n``'s own categories by new ones from the prior."""
        N, D = st.X.shape
        L, K = st.M.shape
        own_cats = np.flatnonzero((st.C[n] == 1) & (st.sizes == 1))
        if own_cats.size > self.max_new_categories:
            return  # the truncated proposal could not have drawn them: no reverse
        shift = -st.M[own_cats].sum(axis=0, dtype=np.int64)
        L_minus = L - own_cats.size
        # Reverse of the truncated counts: own categories in a random order, each bringing
        # at most max_new_features features no other category (nor an earlier own one)
        # links; the truncated Poisson's mass of each count enters the ratio.
        log_truncation = 0.0
        exclusive = (st.links + shift) == 0
        seen = np.zeros(K, bool)
        for j, cat in enumerate(rng.permutation(own_cats)):
            introduced = (st.M[cat] == 1) & exclusive & ~seen
            if introduced.sum() > self.max_new_features:
                return
            seen |= introduced
            log_truncation -= _log_poisson_cdf(self.alpha_m / (L_minus + j + 1.0),
                                               self.max_new_features)
        n_cat = _truncated_poisson(self.alpha_c / N, self.max_new_categories, rng)
        if own_cats.size == 0 and n_cat == 0:
            return
        # Proposal: n_cat categories, customers of the IBP over categories after L_minus.
        max_width = K + n_cat * self.max_new_features
        prop = np.zeros((n_cat, max_width), np.int8)
        count = np.zeros(max_width, np.int64)
        count[:K] = st.links + shift
        width = K
        for j in range(n_cat):
            customers = L_minus + j + 1.0
            prop[j, :width] = rng.random(width) * customers < count[:width]
            log_truncation += _log_poisson_cdf(self.alpha_m / customers, self.max_new_features)
            t_new = _truncated_poisson(self.alpha_m / customers, self.max_new_features, rng)
            prop[j, width:width + t_new] = 1
            width += t_new
            count[:width] += prop[j, :width]
        prop = prop[:, :width]
        n_feat = width - K
        total_shift = np.concatenate([shift, np.zeros(n_feat, np.int64)]) + prop.sum(0)
        changed = np.flatnonzero(total_shift)
        old = changed < K
        s_old = np.zeros(changed.size, np.int64)
        z_old = np.zeros(changed.size, np.int8)
        s_old[old], z_old[old] = st.S[n, changed[old]], st.Z[n, changed[old]]
        z_new, log_ratio = self._children(z_old, s_old, s_old + total_shift[changed], rng)
        log_ratio += log_truncation
        # Reverse: the features only the own categories link, in a random order, given
        # the row's other features.
        xr = st.X[n:n + 1]
        own_feats = np.flatnonzero((shift < 0) & (st.links + shift == 0))
        base = st.pred[n:n + 1] - st.Z[n, own_feats].astype(np.float64) @ st.A[own_feats]
        log_ratio -= self._replaced_weight(xr, base, st.Z[n:n + 1, own_feats],
                                           st.A[own_feats], rng)
        # Forward: the new features in sequence, given the proposal's existing features.
        ex = changed[old]
        base = st.pred[n:n + 1] + (z_new[old] - z_old[old]).astype(np.float64) @ st.A[ex]
        z_fresh = z_new[~old]  # new features, in slot order
        A_new = np.empty((n_feat, D))
        for t in range(n_feat):
            A_new[t], w = feature_proposal(xr, base, z_fresh[t:t + 1], self.s2, self.rate,
                                           rng)
            log_ratio += w
        new_lik = float(self._loglik(st.X[n], base[0]))
        log_accept = log_ratio + new_lik - log_lik
        if not (log_accept >= 0.0 or rng.random() < math.exp(log_accept)):
            return
        # Accept: the existing features' parents and children of row n, then the arrays.
        st.S[n] += total_shift[:K]
        st.Z[n, ex] = z_new[old]
        st.pred[n] = base[0]
        links = np.concatenate([st.links + shift, np.zeros(n_feat, np.int64)]) + prop.sum(0)
        keep_l = np.setdiff1d(np.arange(L), own_cats)
        C_add = np.zeros((N, n_cat), np.int8)
        C_add[n] = 1
        st.C = np.hstack([st.C[:, keep_l], C_add])
        st.sizes = np.concatenate([st.sizes[keep_l], np.ones(n_cat, np.int64)])
        M = np.hstack([st.M[keep_l], np.zeros((keep_l.size, n_feat), np.int8)])
        st.M = np.vstack([M, prop])
        S_add = np.zeros((N, n_feat), np.int64)
        S_add[n] = total_shift[K:]
        Z_add = np.zeros((N, n_feat), np.int8)
        Z_add[n] = z_fresh
        keep = links > 0
        st.S = np.hstack([st.S, S_add])[:, keep]
        st.Z = np.hstack([st.Z, Z_add])[:, keep]
        st.A = np.vstack([st.A, A_new])[keep]
        st.M = st.M[:, keep]
        st.links = links[keep]

    # 2. links -------------------------------------------------------------------------------
    def sweep_links(self, st, rng):
        """Step 2: per category, flips of shared links, then the own-feature moves."""
        L = st.M.shape[0]
        self._tables(L)
        for cat in rng.permutation(L):
            members = np.flatnonzero(st.C[:, cat])
            Xm = st.X[members]
            old_liks = self._loglik(Xm, st.pred[members])
            for k in rng.permutation(st.M.shape[1]):
                others = int(st.links[k] - st.M[cat, k])
                if others == 0:
                    continue
                sign = 1 - 2 * int(st.M[cat, k])
                z_old, s_old = st.Z[members, k], st.S[members, k]
                s_new = s_old + sign
                z_new, log_ratio = self._children(z_old, s_old, s_new, rng)
                new_preds = st.pred[members] + np.outer(z_new - z_old, st.A[k])
                new_liks = self._loglik(Xm, new_preds)
                log_accept = (sign * (math.log(others) - math.log(L - others)) + log_ratio
                              + float(np.sum(new_liks - old_liks)))
                if log_accept >= 0.0 or rng.random() < math.exp(log_accept):
                    st.S[members, k] = s_new
                    st.Z[members, k] = z_new
                    st.pred[members] = new_preds
                    st.M[cat, k] = 1 - st.M[cat, k]
                    st.links[k] += sign
                    old_liks = new_liks
            # Own features: alone and jointly with a flip of each shared link, in a random
            # order (shared status cannot change during these moves).
            # An accepted move deletes the replaced features' columns: the shared features
            # (never deleted here) are then renumbered.
            shared = np.flatnonzero(st.links - st.M[cat] > 0)
            moves = rng.permutation(np.concatenate([[-1], shared]))
            for i in range(moves.size):
                old_liks, keep = self._own_features(st, cat, int(moves[i]), members, Xm,
                                                    old_liks, L, rng)
                if keep is not None:
                    renumber = np.cumsum(keep) - 1
                    moves[i + 1:] = np.where(moves[i + 1:] >= 0,
                                             renumber[np.maximum(moves[i + 1:], 0)], -1)

    def _own_features(self, st, cat, k_flip, members, Xm, old_liks, L, rng):
        """Step 2(b): replace ``cat``'s own features, optionally flipping ``m_{cat,k_flip}``.

        Returns the members' log-likelihoods after the move and, if it was accepted, the
        mask of the old features that were kept (else ``None``)."""
        n_new = _truncated_poisson(self.alpha_m / L, self.max_new_features, rng)
        own = np.flatnonzero((st.M[cat] == 1) & (st.links == 1))
        if (n_new == 0 and own.size == 0 and k_flip < 0) or own.size > self.max_new_features:
            return old_liks, None
        P = st.pred[members]
        log_accept = 0.0
        if k_flip >= 0:
            sign = 1 - 2 * int(st.M[cat, k_flip])
            others = int(st.links[k_flip] - st.M[cat, k_flip])
            z_old, s_old = st.Z[members, k_flip], st.S[members, k_flip]
            s_new = s_old + sign
            z_new, log_ratio = self._children(z_old, s_old, s_new, rng)
            log_accept += sign * (math.log(others) - math.log(L - others)) + log_ratio
            flip_P = P + np.outer(z_new - z_old, st.A[k_flip])
        else:
            flip_P = P
        Z_own = st.Z[np.ix_(members, own)]
        own_part = Z_own.astype(np.float64) @ st.A[own]
        # Reverse: the own features, in a random order, given the rest of the current state.
        log_accept -= self._replaced_weight(Xm, P - own_part, Z_own, st.A[own], rng)
        # Forward: the new features in sequence, given the flipped state without them.
        base = flip_P - own_part
        children = (rng.random((members.size, n_new)) < -math.expm1(self.log_q)).astype(np.int8)
        A_new = np.empty((n_new, st.X.shape[1]))
        for t in range(n_new):
            A_new[t], w = feature_proposal(Xm, base, children[:, t], self.s2, self.rate, rng)
            log_accept += w
        new_liks = self._loglik(Xm, base)
        log_accept += float(np.sum(new_liks - old_liks))
        if not (log_accept >= 0.0 or rng.random() < math.exp(log_accept)):
            return old_liks, None
        if k_flip >= 0:
            st.S[members, k_flip] = s_new
            st.Z[members, k_flip] = z_new
            st.M[cat, k_flip] = 1 - st.M[cat, k_flip]
            st.links[k_flip] += sign
        st.pred[members] = base
        keep = np.ones(st.M.shape[1], bool)
        keep[own] = False
        N = st.X.shape[0]
        M_add = np.zeros((st.M.shape[0], n_new), np.int8)
        M_add[cat] = 1
        S_add = np.zeros((N, n_new), np.int64)
        S_add[members] = 1
        Z_add = np.zeros((N, n_new), np.int8)
        Z_add[members] = children
        st.M = np.hstack([st.M[:, keep], M_add])
        st.S = np.hstack([st.S[:, keep], S_add])
        st.Z = np.hstack([st.Z[:, keep], Z_add])
        st.A = np.vstack([st.A[keep], A_new])
        st.links = np.concatenate([st.links[keep], np.ones(n_new, np.int64)])
        return new_liks, keep

    # 3. children ----------------------------------------------------------------------------
    def sweep_children(self, st, rng):
        """Step 3: Gibbs on each ``z_nk`` with a parent, all rows of a feature at once."""
        inv = 0.5 / self.s2
        for k in rng.permutation(st.M.shape[1]):
            rows = np.flatnonzero(st.S[:, k])
            if rows.size == 0:
                continue
            a = st.A[k]
            z = st.Z[rows, k]
            s = st.S[rows, k]
            # Log-likelihood of z = 1 minus that of z = 0, from the residual without a_k.
            r = st.X[rows] - st.pred[rows] + np.outer(z, a)
            log_odds = inv * (2.0 * (r @ a) - a @ a)
            log_odds += np.log(-np.expm1(s * self.log_q)) - s * self.log_q
            z_new = (rng.random(rows.size) < expit(log_odds)).astype(np.int8)
            moved = z_new != z
            if moved.any():
                st.Z[rows[moved], k] = z_new[moved]
                st.pred[rows[moved]] += np.outer(z_new[moved] - z[moved], a)

    # 4. A -----------------------------------------------------------------------------------
    def sample_features(self, st, rng):
        """Step 4: each ``a_k`` from its truncated-Gaussian conditional, then ``pred``."""
        D = st.X.shape[1]
        resid = st.X - st.Z @ st.A
        for k in rng.permutation(st.A.shape[0]):
            rows = np.flatnonzero(st.Z[:, k])
            c = rows.size
            if c == 0:
                new = rng.exponential(1.0 / self.rate, size=D)
            else:
                total = resid[rows].sum(axis=0) + c * st.A[k]
                new = draw_nonnegative_normal((total - self.rate * self.s2) / c,
                                              math.sqrt(self.s2 / c), rng)
                resid[rows] -= new - st.A[k]
            st.A[k] = new
        st.pred = st.Z @ st.A


def _drop_dead(st):
    keep_l = st.sizes > 0
    st.C, st.M, st.sizes = st.C[:, keep_l], st.M[keep_l], st.sizes[keep_l]
    st.links = st.M.sum(axis=0).astype(np.int64)
    st.S = st.C.astype(np.int64) @ st.M.astype(np.int64)
    keep = st.links > 0
    st.M, st.S, st.Z, st.A, st.links = (st.M[:, keep], st.S[:, keep], st.Z[:, keep],
                                        st.A[keep], st.links[keep])
    st.pred = st.Z @ st.A


def check_invariants(st):
    """Raise AssertionError unless the state is consistent.

    ``S = C M``; ``Z`` binary and 0 wherever ``S = 0`` (no leak); ``sizes`` and ``links``
    equal the column sums of ``C`` and ``M`` and are positive (no empty category, no
    unlinked feature); ``pred = Z A``; shapes agree; ``A`` finite and non-negative.
    """
    N, D = st.X.shape
    L, K = st.M.shape
    assert st.C.shape == (N, L) and st.S.shape == (N, K) and st.Z.shape == (N, K)
    assert st.A.shape == (K, D) and st.pred.shape == (N, D)
    assert set(np.unique(st.C)) <= {0, 1} and set(np.unique(st.M)) <= {0, 1}
    assert set(np.unique(st.Z)) <= {0, 1}
    assert np.array_equal(st.S, st.C.astype(np.int64) @ st.M.astype(np.int64))
    assert not np.any(st.Z[st.S == 0])
    assert np.array_equal(st.sizes, st.C.sum(axis=0)) and np.all(st.sizes > 0)
    assert np.array_equal(st.links, st.M.sum(axis=0)) and np.all(st.links > 0)
    assert np.all(np.isfinite(st.A)) and np.all(st.A >= 0.0)
    assert np.allclose(st.pred, st.Z @ st.A, atol=1e-8)


# -- self-check ---------------------------------------------------------------------------
def prior_draws(N, alpha_c, alpha_m, q, n_draws, rng):
    """``(L, K, sum Z)`` of ``n_draws`` direct draws from the noisy-or IBP-IBP prior:
    ``C ~ IBP(alpha_C)`` on ``N`` rows, ``M ~ IBP(alpha_M)`` on its ``L`` columns (the
    categories as customers), ``z_nk ~ Bernoulli(1 - q^s_nk)``."""

    def ibp(n_rows, alpha):
        counts = []
        rows = []
        for i in range(1, n_rows + 1):
            old = [int(rng.random() * i < m) for m in counts]
            new = int(rng.poisson(alpha / i))
            counts = [m + o for m, o in zip(counts, old, strict=True)] + [1] * new
            rows.append(old + [1] * new)
        out = np.zeros((n_rows, len(counts)), np.int64)
        for i, r in enumerate(rows):
            out[i, :len(r)] = r
        return out

    values = np.empty((n_draws, 3))
    for t in range(n_draws):
        C = ibp(N, alpha_c)
        M = ibp(C.shape[1], alpha_m)
        S = C @ M
        Z = rng.random(S.shape) < -np.expm1(S * math.log(q))
        values[t] = C.shape[1], M.shape[1], Z.sum()
    return values


def _chain_means(traces):
    """Mean over independent chains of their averages, and its standard error."""
    means = traces.mean(axis=1)
    return means.mean(axis=0), means.std(axis=0, ddof=1) / math.sqrt(means.shape[0])


def _run_chains(make, read, n_chains, n_sweeps, burn_in, seed):
    """``read(state)`` after each of ``n_sweeps`` sweeps (after ``burn_in``) of
    ``n_chains`` chains; ``make(rng)`` returns ``(sweep, state)``."""
    traces = []
    for chain in range(n_chains):
        rng = np.random.default_rng(seed + chain)
        sweep, state = make(rng)
        for _ in range(burn_in):
            sweep()
        values = []
        for _ in range(n_sweeps):
            sweep()
            values.append(read(state))
        traces.append(values)
    return np.array(traces, dtype=np.float64)  # (chains, sweeps, quantities)


def _self_check(prior_chains=32, prior_sweeps=2000, prior_draw_count=40000, n_chains=12,
                n_sweeps=2000, ours_chains=12, ours_sweeps=2000, burn_in=200):
    import time

    t_start = time.perf_counter()
    names = ("L", "K", "sum(Z)")
    print("numpy_noisy_or.py self-check (independent chains; standard errors across chains)")
    # (a) Prior: D = 0 switches the likelihood off.
    N, hyper = 4, dict(alpha_c=1.5, alpha_m=1.5, q=0.4, sigma_x=1.0, rate=1.0)
    sampler = NumpyNoisyOrGibbs(**hyper)
    draws = prior_draws(N, hyper["alpha_c"], hyper["alpha_m"], hyper["q"], prior_draw_count,
                        np.random.default_rng(7))
    exact, exact_se = draws.mean(axis=0), draws.std(axis=0) / math.sqrt(len(draws))

    def prior_chain(rng):
        st = sampler.initialize(np.zeros((N, 0)), np.zeros((N, 0)), np.zeros((0, 0)),
                                np.zeros((N, 0)), np.zeros((0, 0)))
        return (lambda: sampler.sweep(st, rng)), st

    traces = _run_chains(prior_chain, lambda st: (st.n_categories, st.n_features,
                                                  st.Z.sum()),
                         prior_chains, prior_sweeps, burn_in, 100)
    mean, se = _chain_means(traces)
    for i, name in enumerate(names):
        z = (mean[i] - exact[i]) / math.hypot(se[i], exact_se[i])
        print(f"  (a) prior, N = {N}, alpha_C = {hyper['alpha_c']}, alpha_M = "
              f"{hyper['alpha_m']}, q = {hyper['q']}: E[{name}] {mean[i]:.4f} +- {se[i]:.4f} "
              f"(prior draws {exact[i]:.4f} +- {exact_se[i]:.4f}), z = {z:+.2f}  "
              f"[{prior_chains} chains x {prior_sweeps} sweeps; {prior_draw_count} draws]")

    # (b) Three rows, D = 2: NumPy against GibbsHierarchy (default moves).
    from sklearn_ibp.likelihoods import ExponentialGaussian
    from sklearn_ibp.solvers.hierarchy.hierarchy_gibbs import GibbsHierarchy

    X = np.array([[1.2, 0.3], [1.0, 0.9], [0.1, 1.1]])
    hyper = dict(alpha_c=1.0, alpha_m=1.0, q=0.3, sigma_x=0.5, rate=1.0)
    base = NumpyNoisyOrGibbs(**hyper)
    empty = (np.zeros((3, 0)), np.zeros((0, 0)), np.zeros((3, 0)), np.zeros((0, 2)))

    def base_chain(rng):
        st = base.initialize(X, *empty)
        return (lambda: base.sweep(st, rng)), st

    lik, ours = ExponentialGaussian(), GibbsHierarchy()
    params = dict(sigma_x=hyper["sigma_x"], rate=hyper["rate"])

    def ours_chain(rng):
        st = ours.new_state(X, np.ones_like(X, np.uint8), lik, params, upper="ibp",
                            link="noisy_or", alpha_c=hyper["alpha_c"],
                            alpha_m=hyper["alpha_m"], q=hyper["q"], rng=rng)
        return (lambda: ours.sweep(st, lik, rng)), st

    t0 = time.perf_counter()
    tb = _run_chains(base_chain, lambda st: (st.n_categories, st.n_features, st.Z.sum()),
                     n_chains, n_sweeps, burn_in, 200)
    t1 = time.perf_counter()
    to = _run_chains(ours_chain,
                     lambda st: (st.n_categories, st.n_features, st.live[2].sum()),
                     ours_chains, ours_sweeps, burn_in, 300)
    t2 = time.perf_counter()
    mb, sb = _chain_means(tb)
    mo, so = _chain_means(to)
    for i, name in enumerate(names):
        z = (mb[i] - mo[i]) / math.hypot(sb[i], so[i])
        print(f"  (b) posterior, N = 3, D = 2: E[{name}] NumPy {mb[i]:.4f} +- {sb[i]:.4f}, "
              f"GibbsHierarchy {mo[i]:.4f} +- {so[i]:.4f}, z = {z:+.2f}")
    print(f"      [NumPy {n_chains} chains x {n_sweeps} sweeps, {t1 - t0:.0f} s; "
          f"GibbsHierarchy {ours_chains} x {ours_sweeps}, {t2 - t1:.0f} s; X = {X.tolist()}, "
          f"q = {hyper['q']}, sigma_x = {hyper['sigma_x']}, rate = {hyper['rate']}, "
          f"alpha_C = alpha_M = 1]")
    print(f"  ({burn_in} burn-in sweeps per chain; {time.perf_counter() - t_start:.0f} s)")


if __name__ == "__main__":
    _self_check()
