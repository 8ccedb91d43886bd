"""The accelerated collapsed Gibbs sampler in plain NumPy: the speed baseline of the benchmarks.

This is Algorithm 1 of Doshi-Velez (2009, ch. 4) with a window of one row, written the way a
competent NumPy (or Matlab) programmer would: everything within a row is a vector or matrix
operation, and only the unavoidable sequential loops (rows, and the features of one row) are
Python loops. There is no numba here; the published implementations this sampler was first
compared against were vectorised Matlab, so this is the honest reference point for what the
numba kernels buy.

Per row ``n`` (in a random order):

1. take the row out of the feature posterior (Sherman-Morrison on the covariance
   ``S = P^{-1}``, ``P = Z^T Z / s_x^2 + I / s_a^2``, and on the mean ``M``);
2. Gibbs-sample each ``z_nk`` from the prior odds ``m_-n,k / (beta + N - 1 - m_-n,k)`` times
   the predictive ``N(x_n; z M, (s_x^2 + z S z^T) I_D)`` (eq. 4.2); features only this row has
   are dropped;
3. sample the number of new features from ``Poisson(alpha beta / (beta + N - 1))`` times the
   predictive whose variance grows by ``s_a^2`` per new feature (eq. 3.7), ``0..k_max``;
4. put the row back into the posterior.

``S`` and ``M`` are recomputed from the exact ``Z^T Z`` and ``Z^T X`` every ``refresh_every``
rows, and empty features are compacted away at the end of the sweep, as in
:class:`sklearn_ibp.solvers.AcceleratedIBP`. Only the sampler is shared with the numba
solver, not the code: this file imports nothing from :mod:`sklearn_ibp`.

Run ``python benchmarks/numpy_accelerated.py`` to check it against the numba solver (the
posterior of the number of features on a small problem; agreement within Monte Carlo noise).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln

__all__ = ["NumpyAcceleratedGibbs", "NumpyState"]


class NumpyState:
    """Chain state: ``Z`` and the per-feature statistics, with spare columns (capacity)."""

    def __init__(self, X, Z, alpha, beta, sigma_x, sigma_a, capacity):
        N, D = X.shape
        K = Z.shape[1]
        self.X = np.ascontiguousarray(X, dtype=float)
        self.n_features = K
        self.alpha, self.beta = float(alpha), float(beta)
        self.sigma_x, self.sigma_a = float(sigma_x), float(sigma_a)
        self.Z = np.zeros((N, capacity))
        self.Z[:, :K] = Z
        self.counts = np.zeros(capacity)
        self.gram = np.zeros((capacity, capacity))
        self.cross = np.zeros((capacity, D))
        self.cov = np.zeros((capacity, capacity))
        self.mean = np.zeros((capacity, D))
        self.rows_done = 0

    @property
    def active_Z(self):
        return self.Z[:, : self.n_features].astype(np.int8)


class NumpyAcceleratedGibbs:
    """Accelerated collapsed Gibbs sampler (window of one row) in vectorised NumPy.

    Same interface as the package's solvers: ``initialize(X, Z, hyper, rng) -> state`` and
    ``sweep(state, rng)``.
    """

    name = "numpy_accelerated"

    def __init__(self, k_max=4, refresh_every=100):
        self.k_max = k_max
        self.refresh_every = refresh_every

    # -- set-up ---------------------------------------------------------------------------
    def initialize(self, X, Z, hyper, rng=None):
        Z = np.asarray(Z)
        state = NumpyState(
            X, Z, hyper["alpha"], hyper.get("beta", 1.0), hyper["sigma_x"], hyper["sigma_a"],
            capacity=Z.shape[1] + 4 * self.k_max + 8,
        )
        self.refresh(state)
        return state

    def refresh(self, st):
        """Exact ``Z^T Z``, ``Z^T X``, counts, and the posterior ``S``, ``M`` from them."""
        K = st.n_features
        Z = st.Z[:, :K]
        st.gram[:] = 0.0
        st.cross[:] = 0.0
        st.counts[:] = 0.0
        st.gram[:K, :K] = Z.T @ Z
        st.cross[:K] = Z.T @ st.X
        st.counts[:K] = Z.sum(axis=0)
        self._posterior_from_stats(st)

    def _posterior_from_stats(self, st):
        K = st.n_features
        sx2, sa2 = st.sigma_x**2, st.sigma_a**2
        st.cov[:] = 0.0
        st.mean[:] = 0.0
        if K == 0:
            return
        S = np.linalg.inv(st.gram[:K, :K] / sx2 + np.eye(K) / sa2)
        S = 0.5 * (S + S.T)
        st.cov[:K, :K] = S
        st.mean[:K] = S @ st.cross[:K] / sx2

    def _grow(self, st):
        K = st.n_features
        cap = 2 * st.Z.shape[1]
        for name in ("gram", "cov"):
            new = np.zeros((cap, cap))
            new[:K, :K] = getattr(st, name)[:K, :K]
            setattr(st, name, new)
        for name in ("cross", "mean"):
            old = getattr(st, name)
            new = np.zeros((cap, old.shape[1]))
            new[:K] = old[:K]
            setattr(st, name, new)
        Z = np.zeros((st.Z.shape[0], cap))
        Z[:, :K] = st.Z[:, :K]
        st.Z = Z
        counts = np.zeros(cap)
        counts[:K] = st.counts[:K]
        st.counts = counts

    # -- the sweep ------------------------------------------------------------------------
    def sweep(self, st, rng):
        N, D = st.X.shape
        sx2, sa2 = st.sigma_x**2, st.sigma_a**2
        beta = st.beta
        rate = st.alpha * beta / (beta + N - 1.0)
        js = np.arange(self.k_max + 1)
        log_prior_new = js * math.log(rate) - rate - gammaln(js + 1.0)
        half_d = 0.5 * D
        for n in rng.permutation(N):
            if st.n_features + self.k_max > st.Z.shape[1]:
                self._grow(st)
            K = st.n_features
            x = st.X[n]
            S = st.cov[:K, :K]
            M = st.mean[:K]
            z = st.Z[n, :K].copy()

            # 1. Take row n out of the posterior: S += u u^T / c, M += u (z M - x)^T / c.
            u = S @ z
            zu = u @ z
            if zu > 0.0:
                c = sx2 - zu
                S += u[:, None] * (u / c)
                M += u[:, None] * ((z @ M - x) / c)
                st.gram[:K, :K] -= z[:, None] * z
                st.cross[:K] -= z[:, None] * x
                st.counts[:K] -= z

            # 2. Gibbs-sample z_nk from eq. 4.2. The predictive of x_n is
            #    N(e; 0, c I_D) with residual e = x - z M and c = s_x^2 + z S z^T;
            #    flipping z_k by delta moves e by -delta M_k and c by 2 delta (S z)_k + S_kk.
            T = S @ z
            e = x - z @ M
            ee = float(e @ e)
            c = float(sx2 + T @ z)
            # Per-feature scalars as Python lists: the loop over k reads them one at a time.
            s_diag = S.diagonal().tolist()
            m_sq = np.einsum("kd,kd->k", M, M).tolist()
            others = st.counts[:K]
            log_prior_odds = (
                np.log(np.maximum(others, 1.0)) - np.log(beta + N - 1.0 - others)
            ).tolist()
            others = others.tolist()
            zl = z.tolist()
            uniforms = rng.random(K + 1).tolist()
            current = -half_d * math.log(c) - 0.5 * ee / c
            for k in range(K):
                zk = zl[k]
                if others[k] == 0.0:
                    if zk == 0.0:
                        continue
                    delta = -1.0  # a feature only this row has: drop it (new ones replace it)
                else:
                    delta = 1.0 - 2.0 * zk
                ee_new = ee - 2.0 * delta * float(M[k] @ e) + m_sq[k]
                c_new = c + 2.0 * delta * float(T[k]) + s_diag[k]
                proposed = -half_d * math.log(c_new) - 0.5 * ee_new / c_new
                if others[k] > 0.0:
                    log_odds = log_prior_odds[k] + (proposed - current if zk == 0.0
                                                    else current - proposed)
                    p_one = 1.0 / (1.0 + math.exp(-log_odds)) if log_odds > -700 else 0.0
                    if (uniforms[k] < p_one) == (zk == 1.0):
                        continue  # keep z_nk
                e -= delta * M[k]
                T += delta * S[:, k]
                ee, c, current = ee_new, c_new, proposed
                z[k] = 1.0 - zk
                zl[k] = 1.0 - zk

            # 3. New features (eq. 3.7): each one adds s_a^2 to the predictive variance.
            cs = c + js * sa2
            log_p = log_prior_new - half_d * np.log(cs) - 0.5 * ee / cs
            p = np.cumsum(np.exp(log_p - log_p.max()))
            n_new = min(int(np.searchsorted(p, uniforms[K] * p[-1], side="right")), self.k_max)
            if n_new:
                new = slice(K, K + n_new)
                st.cov[new, :] = 0.0
                st.cov[:, new] = 0.0
                st.cov[new, new] = np.eye(n_new) * sa2
                st.mean[new] = 0.0
                st.gram[new, :] = 0.0
                st.gram[:, new] = 0.0
                st.cross[new] = 0.0
                st.counts[new] = 0.0
                st.Z[:, new] = 0.0
                K += n_new
                st.n_features = K
                S = st.cov[:K, :K]
                M = st.mean[:K]
                z = np.concatenate([z, np.ones(n_new)])

            # 4. Put row n back: S -= u u^T / c, M += u (x - z M)^T / c.
            u = S @ z
            zu = u @ z
            if zu > 0.0:
                c = sx2 + zu
                S -= u[:, None] * (u / c)
                M += u[:, None] * ((x - z @ M) / c)
                st.gram[:K, :K] += z[:, None] * z
                st.cross[:K] += z[:, None] * x
                st.counts[:K] += z
            st.Z[n, :K] = z

            st.rows_done += 1
            if self.refresh_every and st.rows_done % self.refresh_every == 0:
                self._posterior_from_stats(st)

        self._compact(st)

    def _compact(self, st):
        K = st.n_features
        idx = np.flatnonzero(st.counts[:K] > 0)
        if idx.size == K:
            return
        K_new = idx.size
        for name in ("gram", "cov"):
            a = getattr(st, name)
            a[:K_new, :K_new] = a[np.ix_(idx, idx)]
            a[K_new:, :] = 0.0
            a[:, K_new:] = 0.0
        for name in ("cross", "mean"):
            a = getattr(st, name)
            a[:K_new] = a[idx]
            a[K_new:] = 0.0
        st.counts[:K_new] = st.counts[idx]
        st.counts[K_new:] = 0.0
        st.Z[:, :K_new] = st.Z[:, idx]
        st.Z[:, K_new:K] = 0.0
        st.n_features = K_new


# -- a check against the numba solver ---------------------------------------------------------
def _chain_stats(solver, X, Z0, hyper, seed, n_sweeps, burn_in):
    rng = np.random.default_rng(seed)
    state = solver.initialize(X, Z0, hyper, rng)
    ks, ones = [], []
    for i in range(burn_in + n_sweeps):
        solver.sweep(state, rng)
        if i >= burn_in:
            ks.append(state.n_features)
            ones.append(int(state.active_Z.sum()))
    return np.array(ks, float), np.array(ones, float)


def check_against_numba(n_chains=4, n_sweeps=2500, burn_in=100, seed=0):
    """Posterior mean of K and of sum(Z) from both samplers on a small problem, with errors.

    Returns ``(numpy_mean_K, numba_mean_K, z_score_K, numpy_mean_ones, numba_mean_ones,
    z_score_ones)``. The standard errors come from batch means over all chains.
    """
    from sklearn_ibp.datasets import make_ibp_linear_gaussian
    from sklearn_ibp.solvers import AcceleratedIBP

    X, _, _ = make_ibp_linear_gaussian(
        n_samples=25, n_dims=4, alpha=2.0, sigma_x=0.7, sigma_a=1.0, random_state=seed
    )
    hyper = dict(alpha=2.0, beta=1.0, sigma_x=0.7, sigma_a=1.0)
    Z0 = np.ones((X.shape[0], 1), dtype=np.int8)

    def pooled(solver):
        ks, ones = [], []
        for c in range(n_chains):
            k, o = _chain_stats(solver, X, Z0, hyper, 1000 * seed + c, n_sweeps, burn_in)
            ks.append(k)
            ones.append(o)
        return np.concatenate(ks), np.concatenate(ones)

    def mean_and_se(v, n_batches=40):
        batches = np.array([b.mean() for b in np.array_split(v, n_batches)])
        return v.mean(), batches.std(ddof=1) / math.sqrt(n_batches)

    k_np, o_np = pooled(NumpyAcceleratedGibbs())
    k_nb, o_nb = pooled(AcceleratedIBP())
    out = []
    for a, b in ((k_np, k_nb), (o_np, o_nb)):
        (ma, sa), (mb, sb) = mean_and_se(a), mean_and_se(b)
        out += [ma, mb, (ma - mb) / math.hypot(sa, sb)]
    return tuple(out)


if __name__ == "__main__":
    r = check_against_numba()
    for label, (a, b, z) in (("K", r[:3]), ("sum(Z)", r[3:])):
        print(f"posterior mean of {label + ':':<8} numpy {a:.3f}  numba {b:.3f}  z = {z:+.2f}")
