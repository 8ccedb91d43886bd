"""The dd-IBP sampler in plain NumPy: the speed baseline of ``bench_ddibp.py``.

The sampler is the one of :class:`sklearn_ibp.solvers.ddibp.ddibp_gibbs.GibbsDDIBP`
(Gershman, Frazier and Blei, "Distance dependent infinite latent feature models", sec. 5,
with the collapsed linear-Gaussian likelihood of eq. 36): the same moves, the same proposals
and the same acceptance ratios, written the way a competent NumPy programmer would write
it *without* the rank-one and Schur-complement updates of the numba kernels. Every
likelihood a move needs is recomputed from ``Z``:

    log p(X | Z) = -N D / 2 log(2 pi) - (N - K) D log s_x - K D log s_a
                   - D / 2 log |M| - (tr(X^T X) - tr(C^T M^{-1} C)) / (2 s_x^2),

with ``M = Z^T Z + (s_x^2 / s_a^2) I`` and ``C = Z^T X``, through one Cholesky factor
``M = L L^T`` (``log |M| = 2 sum log diag L``, ``tr(C^T M^{-1} C) = |L^{-1} C|_F^2``):
``O(N K^2 + N K D + K^3)`` per likelihood. Only ``tr(X^T X)``, which does not depend on
``Z``, is computed once, and the likelihood of the current state is kept between moves.

One sweep:

1. **Links** (eq. 33). For every dish ``k`` and every customer ``i`` other than its owner:
   cut ``i``'s link (and, while tracing, the owner's), find the customers whose path runs
   through ``i`` (they switch ``z_k`` together with ``i``), split the candidate targets into
   those that still reach the owner and the rest, and choose a side with weights
   ``p_reach L_on`` and ``p_not L_off`` (``p`` the summed proximities ``a_ij`` of a side,
   ``L`` the likelihood of the column that side implies); then draw the link within the
   chosen side in proportion to ``a_ij``. The owner's own link does not touch ``Z`` and is
   drawn from its prior.
2. **Ownership** (eq. 34, as a birth-or-death Metropolis-Hastings move per customer ``i``,
   ``mu_i = alpha / h_i``). With probability 1/2 a birth: the new dish's links come from the
   prior or, with probability ``weight = 1/2`` (when some link to ``i`` is possible:
   ``log P(nobody links to i)`` finite), from the prior conditioned on nobody linking to
   ``i``; it is accepted with probability ``min(1, mu_i / (lambda_i + 1) * p / q * L'/L)``.
   Otherwise a death: one of the ``lambda_i`` dishes ``i`` owns, chosen uniformly, is
   removed with the reverse ratio ``lambda_i / mu_i * q / p * L'/L``.

Reachability is computed by pointer doubling: with the target made a fixed point, the
link map applied ``2^m >= N`` times sends every customer to the target exactly when its
path reaches it (``O(N log N)`` per call, ``ceil(log2 N)`` vectorised gathers). Links are
drawn from the prior for all customers at once by one ``searchsorted`` on the rows of the
cumulative proximities laid end to end (row ``j`` shifted by ``2 j``).

Only the sampler is shared with the numba solver, not the code: this file imports nothing
from :mod:`sklearn_ibp`. ``python benchmarks/numpy_ddibp.py`` checks it against the numba
solver on a tiny problem (posterior means of ``K`` and of ``sum(Z)``, batch-means standard
errors, a z-score for each).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["NumpyDDIBPGibbs", "NumpyDDIBPState", "reaching"]

_LOG_2PI = math.log(2.0 * math.pi)


def reaching(links, target):
    """Customers whose path of links arrives at ``target`` (``target``'s own link ignored).

    Parameters
    ----------
    links : int ndarray of shape (n_samples,)
        ``links[j]`` is the customer ``j`` links to.
    target : int

    Returns
    -------
    reaches : bool ndarray of shape (n_samples,)
        True for ``target`` itself.
    """
    f = links.copy()
    f[target] = target
    n_doublings = max(1, math.ceil(math.log2(links.shape[0])))
    for _ in range(n_doublings):
        f = f[f]
    return f == target


class NumpyDDIBPState:
    """Chain state: the dishes (owners, links), ``Z`` and the current log-likelihood."""

    def __init__(self, X, proximity, h, alpha, sigma_x, sigma_a, owners, connections):
        self.X = np.ascontiguousarray(X, dtype=float)
        N = self.X.shape[0]
        self.A = np.ascontiguousarray(proximity, dtype=float)
        self.h = np.asarray(h, dtype=float)
        self.alpha = float(alpha)
        self.sigma_x = float(sigma_x)
        self.sigma_a = float(sigma_a)
        self.mu = self.alpha / self.h
        self.cum = np.cumsum(self.A, axis=1)
        self.row_totals = self.cum[:, -1].copy()
        # The rows of cum laid end to end, row j shifted by 2 j, for one searchsorted.
        self.shift = 2.0 * np.arange(N)
        self.flat_cum = (self.cum + self.shift[:, None]).ravel()
        self.row_starts = N * np.arange(N)
        off_diagonal = self.A - np.diag(np.diag(self.A))
        with np.errstate(divide="ignore"):
            # log P(no other customer links to i) = sum_{j != i} log(1 - a_ji)
            self.log_no_link = np.log1p(-np.minimum(off_diagonal, 1.0)).sum(axis=0)
        self.xx = float(np.sum(self.X * self.X))
        self.owners = np.asarray(owners, dtype=np.int64).copy()
        K = self.owners.size
        self.links = np.asarray(connections, dtype=np.int64).reshape(N, K).T.copy()
        self.Z = np.zeros((N, K))
        for k in range(K):
            self.Z[:, k] = reaching(self.links[k], self.owners[k])
        self.loglik = 0.0

    @property
    def n_features(self):
        return self.owners.size

    @property
    def active_Z(self):
        return self.Z.astype(np.int8)


class NumpyDDIBPGibbs:
    """The dd-IBP Gibbs and Metropolis-Hastings sampler, likelihoods recomputed per move.

    Same interface as the package's solvers: ``initialize(X, Z, hyper, rng) -> state`` and
    ``sweep(state, rng)``. ``hyper`` holds ``alpha``, ``sigma_x``, ``sigma_a``, the
    normalised proximities ``proximity`` (rows summing to one), their normalisers ``h`` and,
    optionally, the starting dishes ``owners`` (K,) and ``connections`` (n_samples, K);
    without them the chain starts from no features (``Z`` is not used).
    """

    name = "numpy_ddibp"

    # -- set-up ---------------------------------------------------------------------------
    def initialize(self, X, Z, hyper, rng=None):
        N = np.shape(X)[0]
        owners = np.asarray(hyper.get("owners", np.zeros(0)), dtype=np.int64)
        connections = hyper.get("connections")
        if connections is None:
            connections = np.zeros((N, owners.size), dtype=np.int64)
        st = NumpyDDIBPState(
            X, hyper["proximity"], hyper["h"], hyper["alpha"], hyper["sigma_x"],
            hyper["sigma_a"], owners, connections,
        )
        st.loglik = self.log_likelihood(st, st.Z)
        return st

    @staticmethod
    def dishes(st):
        """``(owners, connections)`` of the live dishes: shapes (K,) and (n_samples, K)."""
        return st.owners.copy(), st.links.T.copy()

    # -- the likelihood, from scratch -----------------------------------------------------
    @staticmethod
    def log_likelihood(st, Z):
        """``log p(X | Z)`` of the linear-Gaussian model with the features integrated out."""
        N, D = st.X.shape
        K = Z.shape[1]
        sx2 = st.sigma_x**2
        ll = (
            -0.5 * N * D * _LOG_2PI - (N - K) * D * math.log(st.sigma_x)
            - K * D * math.log(st.sigma_a) - st.xx / (2.0 * sx2)
        )
        if K == 0:
            return ll
        M = Z.T @ Z + (sx2 / st.sigma_a**2) * np.eye(K)
        L = np.linalg.cholesky(M)
        V = np.linalg.solve(L, Z.T @ st.X)
        return ll - D * float(np.log(np.diagonal(L)).sum()) + float(np.sum(V * V)) / (2.0 * sx2)

    # -- prior draws ----------------------------------------------------------------------
    @staticmethod
    def _draw_link(st, i, rng):
        t = int(np.searchsorted(st.cum[i], rng.random() * st.row_totals[i], side="right"))
        return min(t, st.cum.shape[0] - 1)

    @staticmethod
    def _prior_links(st, rng, avoid=None):
        """One link per customer from the prior; with ``avoid = i``, every customer other
        than ``i`` is conditioned on not linking to ``i`` (by redrawing the ones that do)."""
        N = st.cum.shape[0]
        rows = np.arange(N)
        t = np.empty(N, dtype=np.int64)
        while rows.size:
            u = rng.random(rows.size) * st.row_totals[rows] + st.shift[rows]
            t[rows] = np.searchsorted(st.flat_cum, u, side="right") - st.row_starts[rows]
            np.clip(t, 0, N - 1, out=t)
            if avoid is None:
                break
            rows = rows[(t[rows] == avoid) & (rows != avoid)]
        return t

    @staticmethod
    def _log_proposal_ratio(st, links, owner, weight):
        """``log q(links) / p(links)`` of the birth proposal (prior, or with probability
        ``weight`` the prior conditioned on nobody linking to the owner)."""
        others = np.delete(links, owner)
        if np.any(others == owner):
            return math.log(1.0 - weight)
        return math.log(1.0 - weight + weight * math.exp(-st.log_no_link[owner]))

    # -- the sweep ------------------------------------------------------------------------
    def sweep(self, st, rng):
        self.sweep_links(st, rng)
        self.sweep_ownership(st, rng)
        # Start the next sweep from an exact likelihood, as the numba solver refreshes its
        # statistics once per sweep (here only the running value could drift).
        st.loglik = self.log_likelihood(st, st.Z)

    def sweep_links(self, st, rng, n_dishes=None):
        """Gibbs-sample the links of the first ``n_dishes`` dishes (all by default)."""
        N = st.X.shape[0]
        K = st.n_features if n_dishes is None else min(n_dishes, st.n_features)
        A = st.A
        for k in range(K):
            owner = st.owners[k]
            links = st.links[k]
            col = st.Z[:, k]  # a view: writing it changes Z
            for i in range(N):
                if i == owner:
                    links[i] = self._draw_link(st, i, rng)
                    continue
                # Customers whose path runs through i once i's (and the owner's) link is cut.
                cut = links.copy()
                cut[owner] = owner
                upstream = reaching(cut, i)
                reach_side = (col > 0) & ~upstream
                a = A[i]
                p_reach = float(a[reach_side].sum())
                p_not = float(a[~reach_side].sum())
                on = col[i] > 0
                # The other candidate column: z_k switched for i and everyone upstream of i.
                col[upstream] = 0.0 if on else 1.0
                ll_alt = self.log_likelihood(st, st.Z)
                ll_on, ll_off = (st.loglik, ll_alt) if on else (ll_alt, st.loglik)
                w_on = math.log(p_reach) + ll_on if p_reach > 0 else -math.inf
                w_off = math.log(p_not) + ll_off if p_not > 0 else -math.inf
                best = max(w_on, w_off)
                e_on, e_off = math.exp(w_on - best), math.exp(w_off - best)
                new_on = rng.random() < e_on / (e_on + e_off)
                if new_on == on:
                    col[upstream] = 1.0 if on else 0.0  # back to the current column
                else:
                    st.loglik = ll_alt
                # The link within the chosen side, in proportion to a_ij.
                candidates = np.flatnonzero(reach_side if new_on else ~reach_side)
                c = np.cumsum(a[candidates])
                pos = int(np.searchsorted(c, rng.random() * c[-1], side="right"))
                links[i] = candidates[min(pos, candidates.size - 1)]

    def sweep_ownership(self, st, rng, n_customers=None):
        """Birth-or-death moves of the dishes owned by the first ``n_customers`` customers."""
        N = st.X.shape[0]
        for i in range(N if n_customers is None else min(n_customers, N)):
            owned = np.flatnonzero(st.owners == i)
            lam = owned.size
            weight = 0.5 if np.isfinite(st.log_no_link[i]) else 0.0
            if rng.random() < 0.5:
                avoid = weight > 0.0 and rng.random() < weight
                new_links = self._prior_links(st, rng, avoid=i if avoid else None)
                z = reaching(new_links, i).astype(float)
                Z_new = np.column_stack([st.Z, z])
                ll_new = self.log_likelihood(st, Z_new)
                log_accept = (
                    ll_new - st.loglik + math.log(st.mu[i]) - math.log(lam + 1.0)
                    - self._log_proposal_ratio(st, new_links, i, weight)
                )
                if log_accept >= 0.0 or rng.random() < math.exp(log_accept):
                    st.Z = Z_new
                    st.links = np.vstack([st.links, new_links])
                    st.owners = np.append(st.owners, i)
                    st.loglik = ll_new
            else:
                if lam == 0:
                    continue
                k = owned[int(rng.random() * lam)]
                Z_new = np.delete(st.Z, k, axis=1)
                ll_new = self.log_likelihood(st, Z_new)
                log_accept = (
                    ll_new - st.loglik + math.log(lam) - math.log(st.mu[i])
                    + self._log_proposal_ratio(st, st.links[k], i, weight)
                )
                if log_accept >= 0.0 or rng.random() < math.exp(log_accept):
                    st.Z = Z_new
                    st.links = np.delete(st.links, k, axis=0)
                    st.owners = np.delete(st.owners, k)
                    st.loglik = ll_new


# -- a check against the numba solver ---------------------------------------------------------
def _tiny_problem(seed=0):
    """N = 6 customers at positions 0..5, exponential decay 0.5, D = 2. Rows 0-2 carry one
    feature and rows 2-5 another (fixed weights of size 2), plus noise 0.5; centred."""
    rng = np.random.default_rng(seed)
    N, D = 6, 2
    Z = np.zeros((N, 2))
    Z[:3, 0] = 1.0
    Z[2:, 1] = 1.0
    W = np.array([[2.0, 0.5], [-0.5, 2.0]])
    X = Z @ W + 0.5 * rng.standard_normal((N, D))
    t = np.arange(N, dtype=float)
    F = np.exp(-0.5 * np.abs(t[:, None] - t[None, :]))
    h = F.sum(axis=1)
    hyper = dict(alpha=1.0, sigma_x=0.5, sigma_a=1.0, proximity=F / h[:, None], h=h)
    return X - X.mean(axis=0), hyper


def _chain(solver, X, hyper, seed, n_sweeps, burn_in):
    rng = np.random.default_rng(seed)
    state = solver.initialize(X, np.zeros((X.shape[0], 0), dtype=np.int8), hyper, rng)
    ks = np.empty(n_sweeps)
    ones = np.empty(n_sweeps)
    for s in range(burn_in + n_sweeps):
        solver.sweep(state, rng)
        if s >= burn_in:
            ks[s - burn_in] = state.n_features
            ones[s - burn_in] = state.active_Z.sum()
    return ks, ones


def _batch_means(chains, n_batches=20):
    """Pooled mean and its batch-means standard error (``n_batches`` batches per chain)."""
    means = np.concatenate([[b.mean() for b in np.array_split(c, n_batches)] for c in chains])
    return float(np.mean(np.concatenate(chains))), float(means.std(ddof=1) / math.sqrt(means.size))


def check_against_numba(n_chains=4, n_sweeps=5000, burn_in=200, seed=0):
    """Posterior means of ``K`` and ``sum(Z)`` from both samplers on the tiny problem.

    Returns a dict ``{statistic: (numpy_mean, numpy_se, numba_mean, numba_se, z)}``.
    """
    from sklearn_ibp.solvers.ddibp.ddibp_gibbs import GibbsDDIBP

    X, hyper = _tiny_problem(seed)
    runs = {}
    for name, solver in (("numpy", NumpyDDIBPGibbs()), ("numba", GibbsDDIBP())):
        chains = [_chain(solver, X, hyper, 1000 * seed + 17 * c + (name == "numba"),
                         n_sweeps, burn_in) for c in range(n_chains)]
        runs[name] = ([c[0] for c in chains], [c[1] for c in chains])
    out = {}
    for index, label in ((0, "K"), (1, "sum(Z)")):
        m_np, se_np = _batch_means(runs["numpy"][index])
        m_nb, se_nb = _batch_means(runs["numba"][index])
        out[label] = (m_np, se_np, m_nb, se_nb, (m_np - m_nb) / math.hypot(se_np, se_nb))
    return out


if __name__ == "__main__":
    import time

    n_chains, n_sweeps, burn_in = 4, 5000, 200
    t0 = time.perf_counter()
    result = check_against_numba(n_chains, n_sweeps, burn_in)
    print(f"tiny problem: N = 6, D = 2, exponential decay 0.5 over positions, alpha = 1, "
          f"sigma_x = 0.5, sigma_a = 1; {n_chains} chains x {n_sweeps} sweeps per sampler "
          f"after {burn_in} burn-in sweeps, batch-means standard errors")
    for label, (m_np, se_np, m_nb, se_nb, z) in result.items():
        print(f"posterior mean of {label + ':':<8} numpy {m_np:.4f} +- {se_np:.4f}   "
              f"numba {m_nb:.4f} +- {se_nb:.4f}   z = {z:+.2f}")
    print(f"({time.perf_counter() - t0:.0f} s)")
