"""The conditionally conjugate Gaussian base of a DP mixture (Görür 2007, sec. 3.3.1-3.3.2).

Components are Gaussian, ``x | mu, S ~ N(mu, S^{-1})`` (eq. 3.55), and the base ``G_0`` makes
the mean and the precision independent:

* ``mu ~ N(xi, R^{-1})`` (eq. 3.60);
* ``S ~ Wishart(beta, (beta W)^{-1})`` (eq. 3.58): ``beta`` degrees of freedom and scale
  matrix ``(beta W)^{-1}``, i.e. the density
  ``p(S) ~ |S|^{(beta - D - 1)/2} exp(-tr(beta W S) / 2)``, so ``E[S] = W^{-1}``
  (``beta > D - 1``).

Each parameter is conjugate given the other (``mu | S`` is Gaussian, ``S | mu`` is Wishart)
but the pair is not, so the prior predictive ``int F(x | theta) dG_0`` has no closed form.

Hyperpriors (Rasmussen 2000 as in sec. 3.3.1), built from the data mean ``mu_x`` and
covariance ``Sigma_x`` only, so that the model is invariant to translating, rotating and
rescaling the data:

* eq. 3.63: ``xi ~ N(mu_x, Sigma_x)``, ``R ~ Wishart(D, (D Sigma_x)^{-1})`` (``E[R] =
  Sigma_x^{-1}``);
* eq. 3.61: ``W ~ Wishart(D, Sigma_x / D)`` (``E[W] = Sigma_x``) and
  ``1 / (beta - D + 1) ~ G(1, 1/D)``, read as mean ``1/D``: shape 1 and rate ``D``, as
  :mod:`sklearn_ibp.likelihoods.normal_wishart` reads it, so both bases share the hyperprior.
  In ``D = 1`` every reading agrees with Rasmussen (2000); for ``D > 1`` the shape-rate
  reading of eq. 3.23 (mean ``D``) puts ``beta`` so close to ``D - 1`` so often that prior
  draws of ``S`` are numerically singular (a Geweke chain of the hyperparameters stalls on
  them). The constants ``_BETA_PRIOR_SHAPE`` and ``_beta_prior_rate`` hold the choice.

Their conditionals given the active components' parameters are Gaussian (``xi``) and Wishart
(``R``, ``W``); ``beta`` is slice sampled on ``log(beta - D + 1)`` (the thesis uses
adaptive rejection sampling on the same log-concave conditional).
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln, multigammaln
from scipy.stats import chi2, norm, qmc

from .._memory import check_allocation
from ._conditionally_conjugate_kernels import bartlett_stream, log_mean_density_cov
from ._mixture_base import BaseMixtureComponents

#: scipy's Sobol sequences go up to this many dimensions.
_MAX_SOBOL_DIMENSIONS = 21201
#: The most features whose D + D(D-1)/2 Sobol dimensions fit (205: 21115 dimensions).
_MAX_FEATURES = 205

__all__ = ["ConditionallyConjugateBase"]

_LOG_2PI = np.log(2.0 * np.pi)
_KEYS = ("xi", "R", "beta", "W")
# 1 / (beta - D + 1) ~ Gamma(shape, rate) (eq. 3.61)
_BETA_PRIOR_SHAPE = 1.0


#: Floor of the chi-square quantiles of the fixed prior draws (see ``_fixed_precisions``).
_MIN_CHI2_QUANTILE = 1e-10


def _beta_prior_rate(n_features):
    return float(n_features)


def _sample_wishart(dof, factor, rng):
    """One draw ``S ~ Wishart(dof, M M^T)`` by Bartlett's decomposition ``S = M A A^T M^T``
    (``factor`` is ``M``, so ``E[S] = dof M M^T``): the D chi-squares, then the
    ``D (D - 1) / 2`` normals below the diagonal (the hyperparameter updates of this base
    and of :class:`~sklearn_ibp.likelihoods.FactorAnalyzerBase`)."""
    D = factor.shape[0]
    idx = np.arange(D)
    A = np.zeros((D, D))
    A[idx, idx] = np.sqrt(rng.chisquare(dof - idx))
    rows, cols = np.tril_indices(D, -1)
    A[rows, cols] = rng.standard_normal(rows.size)
    B = factor @ A
    return B @ B.T


def _inverse_factor(matrices):
    """``L^{-T}`` for ``L = chol(matrices)``: a factor ``M`` with ``M M^T = matrices^{-1}``."""
    L = np.linalg.cholesky(matrices)
    return np.swapaxes(np.linalg.inv(L), -1, -2)


# -- batched small-matrix algebra in NumPy --------------------------------------------------
# The per-sweep parameter draws of this base (a few clusters, small D) were numba kernels;
# their compile cost a first fit about 3.5 CPU s while they run once per sweep. These are the
# same loops vectorised over the clusters (and over one row or column index), each entry summed
# in the kernels' order, so the draws are the same numbers bit for bit; O(D^2) NumPy calls.


def _batched_cholesky(A):
    """Lower Cholesky factors of the stack ``A`` (K, D, D), the entries summed in the
    order of the textbook loop (``cholesky_lower`` of the kernels)."""
    K, D, _ = A.shape
    L = np.zeros_like(A)
    for j in range(D):
        s = A[:, j, j].copy()
        for k in range(j):
            s -= L[:, j, k] * L[:, j, k]
        djj = np.sqrt(s)
        L[:, j, j] = djj
        t = A[:, j + 1 :, j].copy()
        for k in range(j):
            t -= L[:, j + 1 :, k] * L[:, j, k][:, None]
        L[:, j + 1 :, j] = t / djj[:, None]
    return L


def _batched_lower_inverse(L):
    """``L^{-1}`` of the stack of lower-triangular ``L`` (K, D, D)."""
    K, D, _ = L.shape
    out = np.zeros_like(L)
    for i in range(D):
        s = np.zeros((K, i))
        for k in range(i):
            # entry (i, j) for j <= k: s -= L[i, k] out[k, j], k ascending from j
            s[:, : k + 1] -= L[:, i, k][:, None] * out[:, k, : k + 1]
        out[:, i, :i] = s / L[:, i, i][:, None]
        out[:, i, i] = 1.0 / L[:, i, i]
    return out


def _batched_solve_lower(L, b, transpose=False):
    """``L^{-1} b`` (or ``L^{-T} b``) for stacks ``L`` (K, D, D) and ``b`` (K, D), in place
    of ``b`` by forward (back) substitution."""
    D = L.shape[1]
    rows = range(D - 1, -1, -1) if transpose else range(D)
    for a in rows:
        s = b[:, a].copy()
        for c in (range(a + 1, D) if transpose else range(a)):
            s -= (L[:, c, a] if transpose else L[:, a, c]) * b[:, c]
        b[:, a] = s / L[:, a, a]
    return b


def _bartlett_draws(dof, D, rng):
    """Bartlett's lower-triangular factors of ``len(dof)`` Wishart draws, one draw after
    another: the D chi-squares ``A_dd^2 ~ chi^2(dof - d)`` (as ``2 Gamma((dof - d)/2)``),
    then the ``D (D - 1) / 2`` normals below the diagonal row by row (the stream of every
    Wishart draw of the package).

    The numbers come from the kernel :func:`bartlett_stream` (about 1 CPU s of a first
    fit's compilation, numba's gamma sampler): the prior draws of a sweep are ``N m``
    factors, which one scalar generator call per number from Python would cost a default
    ``DPMixture`` fit about 0.2 s.
    """
    n = len(dof)
    M = D * (D - 1) // 2
    idx = np.arange(D)
    gammas, normals = np.empty((n, D)), np.empty((n, M))
    bartlett_stream(np.ascontiguousarray(dof, dtype=np.float64), rng, gammas, normals)
    A = np.zeros((n, D, D))
    A[:, idx, idx] = np.sqrt(2.0 * gammas)
    rows, cols = np.tril_indices(D, -1)
    A[:, rows, cols] = normals
    return A


def _wishart_from_factors(M, A):
    """``(M_k A_k)(M_k A_k)^T`` for stacks ``M`` (K, D, D) or one ``M`` (D, D) and
    Bartlett's lower-triangular ``A`` (K, D, D); ``B = M A`` summed over ``k >= j`` in order,
    then each entry of ``B B^T`` summed over ``k`` in order."""
    K, D, _ = A.shape
    M = np.broadcast_to(M, (K, D, D))
    B = np.zeros((K, D, D))
    for j in range(D):
        for k in range(j, D):
            B[:, :, j] += M[:, :, k] * A[:, k, j][:, None]
    out = np.zeros((K, D, D))
    for k in range(D):
        out += B[:, :, k][:, :, None] * B[:, :, k][:, None, :]
    return out


def _gaussian_log_density(X, means, precisions):
    """``log N(x_n | mu_k, S_k^{-1})`` of shape (N, K), from Cholesky factors of ``S_k``."""
    L = np.linalg.cholesky(precisions)
    half_logdet = np.log(np.diagonal(L, axis1=1, axis2=2)).sum(axis=1)
    diff = X[:, None, :] - means[None, :, :]
    y = np.einsum("kde,nkd->nke", L, diff)  # L_k^T (x_n - mu_k)
    D = X.shape[1]
    return half_logdet[None, :] - 0.5 * np.einsum("nke,nke->nk", y, y) - 0.5 * D * _LOG_2PI


class ConditionallyConjugateBase(BaseMixtureComponents):
    """Independent Normal mean and Wishart precision with Rasmussen's hyperpriors.

    The base of the conditionally conjugate DP mixture of Gaussians (Görür 2007,
    sec. 3.3.1, eqs. 3.58, 3.60, 3.61, 3.63); see the module docstring for the
    parameterisation. Parameters of ``K`` components are ``{"means": (K, D),
    "precisions": (K, D, D)}``.

    Parameters
    ----------
    initial_hyperparameters : dict or None, default=None
        Starting values of any of ``"xi"`` (D,), ``"R"`` (D, D), ``"beta"`` (float,
        ``> D - 1``) and ``"W"`` (D, D). The others start at ``xi = mu_x``,
        ``R = Sigma_x^{-1}``, ``W = Sigma_x`` and ``beta = D`` (so ``E[S] = Sigma_x^{-1}``).
    sample_hyperparameters : bool, default=True
        Whether :meth:`update_hyperparameters` draws them; False holds them fixed.
    n_prior_draws : int, default=512
        Size of the fixed set of prior draws of :meth:`log_prior_predictive` (a power of
        two: the draws are a scrambled Sobol sequence).
    prior_draws_seed : int, default=0
        Seed of that set's scrambling (the chain's stream is not touched).

    Attributes
    ----------
    xi, R, beta, W
        Current hyperparameters.
    data_mean, data_cov : ndarray
        ``mu_x`` and ``Sigma_x`` of the data given to :meth:`initialize` (the hyperpriors'
        parameters).
    """

    name = "conditionally_conjugate"
    conjugate = False
    hyperparameter_names = _KEYS

    def __init__(self, initial_hyperparameters=None, sample_hyperparameters=True,
                 n_prior_draws=512, prior_draws_seed=0):
        self.initial_hyperparameters = initial_hyperparameters
        self.sample_hyperparameters = sample_hyperparameters
        self.n_prior_draws = n_prior_draws
        self.prior_draws_seed = prior_draws_seed
        self.n_features = None

    # -- set-up ------------------------------------------------------------------------
    def initialize(self, X, rng) -> None:
        """Hyperpriors from the data's mean and covariance; starting hyperparameters.

        A singular (or nearly singular) ``Sigma_x`` gets a jitter of ``1e-6`` times each
        column's variance (1 for a constant column), so one row or collinear columns still
        give a proper hyperprior; otherwise ``Sigma_x`` is the sample covariance, and the
        model moves exactly with affine maps of the data.
        ``rng`` is not used: the starting values are deterministic.
        """
        D = np.shape(X)[1]
        n_dims = D + D * (D - 1) // 2
        if n_dims > _MAX_SOBOL_DIMENSIONS:
            raise ValueError(
                f"base='conditionally_conjugate' takes at most {_MAX_FEATURES} features (its "
                f"fixed prior draws are Sobol points in D + D(D-1)/2 dimensions, at most "
                f"{_MAX_SOBOL_DIMENSIONS}); X has n_features={D}. Use base='conjugate', or "
                "reduce the features first (e.g. PCA in a Pipeline)."
            )
        check_allocation(
            8.0 * int(self.n_prior_draws) * (n_dims + D * D),
            what=f"the {int(self.n_prior_draws)} fixed prior draws over {D} features",
            advice="lower n_prior_draws of the conditionally conjugate base, or the features",
        )
        X, self.data_mean, cov = self._data_moments(X)
        self.n_features = D
        try:
            np.linalg.cholesky(cov)
            if np.linalg.cond(cov) > 1e12:
                raise np.linalg.LinAlgError
        except np.linalg.LinAlgError:
            var = np.diag(cov).copy()
            var[~(var > 0)] = 1.0
            cov = cov + 1e-6 * np.diag(var)
        self.data_cov = cov
        self.data_precision = np.linalg.inv(self.data_cov)
        self._data_cov_chol = np.linalg.cholesky(self.data_cov)
        self.set_hyperparameters(self._starting_hyperparameters(
            {"xi": self.data_mean.copy(), "R": self.data_precision.copy(),
             "beta": float(D), "W": self.data_cov.copy()}))
        n_off = D * (D - 1) // 2
        points = qmc.Sobol(D + n_off, scramble=True, seed=self.prior_draws_seed).random(
            int(self.n_prior_draws))
        points = np.clip(points, 1e-12, 1.0 - 1e-12)
        self._fixed_uniforms = points[:, :D]
        self._fixed_normals = norm.ppf(points[:, D:])

    def hyperparameters(self) -> dict:
        """Copies of ``xi``, ``R``, ``beta`` and ``W``."""
        return {"xi": self.xi.copy(), "R": self.R.copy(), "beta": float(self.beta),
                "W": self.W.copy()}

    def set_hyperparameters(self, values: dict) -> None:
        """Set ``xi``, ``R``, ``beta`` and ``W`` (all four keys) and refresh their factors."""
        D = self.n_features
        xi = np.array(values["xi"], dtype=float).reshape(D)
        R = np.array(values["R"], dtype=float).reshape(D, D)
        W = np.array(values["W"], dtype=float).reshape(D, D)
        beta = float(values["beta"])
        if not beta > D - 1:
            raise ValueError(f"beta must be larger than n_features - 1 = {D - 1}; got {beta}.")
        for name, M in (("R", R), ("W", W)):
            # symmetry relative to the entries' size: the inverse of a data covariance
            # with D > N (jittered, condition ~1e6) is symmetric to ~1e-10 of its entries
            scale = float(np.max(np.abs(M))) if M.size else 0.0
            if (not np.allclose(M, M.T, rtol=1e-8, atol=1e-8 * scale)
                    or np.any(np.linalg.eigvalsh(M) <= 0)):
                raise ValueError(f"{name} must be symmetric positive definite.")
        self.xi, self.R, self.beta, self.W = xi, 0.5 * (R + R.T), beta, 0.5 * (W + W.T)
        self._refresh()

    def _refresh(self) -> None:
        self._R_chol = np.linalg.cholesky(self.R)
        # mu = xi + F z with F F^T = R^{-1}
        self._mean_factor = np.linalg.inv(self._R_chol).T
        self._R_xi = self.R @ self.xi
        # S ~ W(beta, (beta W)^{-1}): M M^T = (beta W)^{-1}
        self._beta_W = self.beta * self.W
        self._beta_W_chol = np.linalg.cholesky(self._beta_W)
        self._prior_factor = np.ascontiguousarray(np.linalg.inv(self._beta_W_chol).T)

    # -- the contract ------------------------------------------------------------------
    def sample_prior(self, n, rng) -> dict:
        """``n`` draws from ``G_0``: the means (n D normals), then the precisions."""
        means = self.sample_prior_means(n, rng)
        return {"means": means, "precisions": self.sample_prior_precisions(n, rng)}

    def sample_prior_means(self, n, rng) -> np.ndarray:
        """``n`` means from ``N(xi, R^{-1})`` (eq. 3.60)."""
        z = rng.standard_normal((int(n), self.n_features))
        return self.xi + z @ self._mean_factor.T

    def sample_prior_precisions(self, n, rng) -> np.ndarray:
        """``n`` precisions from ``Wishart(beta, (beta W)^{-1})`` (eq. 3.58)."""
        A = _bartlett_draws(np.full(int(n), self.beta), self.n_features, rng)
        return _wishart_from_factors(self._prior_factor, A)

    def log_likelihood(self, X, params) -> np.ndarray:
        """``log N(x_n | mu_k, S_k^{-1})``, shape (N, K)."""
        X = np.asarray(X, dtype=float).reshape(-1, self.n_features)
        return _gaussian_log_density(X, np.asarray(params["means"], dtype=float),
                                     np.asarray(params["precisions"], dtype=float))

    def cluster_statistics(self, X, labels, n_clusters, centers=None, scatter=True):
        """Counts, sums and scatter about ``centers`` (default the origin) of each cluster.

        Each sum runs over the rows in order (``np.add.at`` adds them one after another);
        ``scatter=False`` returns None for the scatter.
        """
        X = np.asarray(X, dtype=np.float64)
        D = self.n_features
        labels = np.asarray(labels, dtype=np.int64)
        counts = np.bincount(labels, minlength=n_clusters).astype(np.int64)
        sums = np.zeros((n_clusters, D))
        np.add.at(sums, labels, X)
        if not scatter:
            return counts, sums, None
        out = np.zeros((n_clusters, D, D))
        # rows in chunks of at most ~2^20 products: the order of the sums is kept
        step = max(1, (1 << 20) // max(1, D * D))
        for start in range(0, X.shape[0], step):
            rows = labels[start : start + step]
            v = X[start : start + step]
            if centers is not None:
                v = v - np.asarray(centers, dtype=np.float64)[rows]
            np.add.at(out, rows, v[:, :, None] * v[:, None, :])
        return counts, sums, out

    def sample_means_given_precisions(self, X, labels, n_clusters, precisions, rng):
        """``mu_k | S_k, rows ~ N(P^{-1} (S_k sum_l x_l + R xi), P^{-1})``, ``P = n_k S_k + R``.

        The conjugate half of eq. 3.31 for the mean (eq. 3.60 times the likelihood);
        ``n_clusters`` normal vectors from ``rng``.
        """
        S = np.ascontiguousarray(np.asarray(precisions, dtype=np.float64)[:n_clusters])
        counts, sums, _ = self.cluster_statistics(X, labels, n_clusters, scatter=False)
        D = self.n_features
        P = counts[:, None, None] * S + self.R
        b = np.broadcast_to(self._R_xi, (n_clusters, D)).copy()
        for e in range(D):
            b += S[:, :, e] * sums[:, e][:, None]
        L = _batched_cholesky(P)
        _batched_solve_lower(L, b)
        # mean + noise = L^{-T} (L^{-1} b + z)
        out = b + rng.standard_normal((n_clusters, D))
        return _batched_solve_lower(L, out, transpose=True)

    def sample_precisions_given_means(self, X, labels, n_clusters, means, rng):
        """``S_k | mu_k, rows ~ Wishart(beta + n_k, W*^{-1})``,
        ``W* = beta W + sum_l (x_l - mu_k)(x_l - mu_k)^T`` (the conjugate half for ``S``)."""
        means = np.asarray(means, dtype=np.float64)[:n_clusters]
        counts, _, scatter = self.cluster_statistics(X, labels, n_clusters, means)
        L = _batched_cholesky(self._beta_W + scatter)
        M = np.swapaxes(_batched_lower_inverse(L), 1, 2)  # M M^T = W*^{-1}
        A = _bartlett_draws(self.beta + counts, self.n_features, rng)
        return _wishart_from_factors(M, A)

    def sample_posterior_all(self, X, labels, n_clusters, rng, params=None) -> dict:
        """One Gibbs scan ``mu | S`` then ``S | mu`` for every cluster.

        Starts from ``params["precisions"]``, or from precisions drawn from the prior when
        ``params`` is None.
        """
        X = np.asarray(X, dtype=float).reshape(-1, self.n_features)
        if params is None:
            precisions = self.sample_prior_precisions(n_clusters, rng)
        else:
            precisions = np.asarray(params["precisions"], dtype=float)[:n_clusters]
        means = self.sample_means_given_precisions(X, labels, n_clusters, precisions, rng)
        precisions = self.sample_precisions_given_means(X, labels, n_clusters, means, rng)
        return {"means": means, "precisions": precisions}

    def sample_posterior(self, X_k, rng, params_k=None) -> dict:
        """One Gibbs scan ``mu | S``, ``S | mu`` given the rows ``X_k`` of one cluster
        (from ``params_k``'s precision, or one drawn from the prior)."""
        X_k = np.asarray(X_k, dtype=float).reshape(-1, self.n_features)
        labels = np.zeros(X_k.shape[0], dtype=np.int64)
        return self.sample_posterior_all(X_k, labels, 1, rng, params_k)

    # -- SampleMu and SampleS (sec. 3.3.2) ----------------------------------------------
    def log_predictive_given_mean(self, X_new, X_k, mean) -> np.ndarray:
        """Eq. 3.66: ``log p(x | X_k, mu)`` with the cluster precision integrated out.

        ``-D/2 log pi + (beta + n)/2 log|W*| - (beta + n + 1)/2 log|W* + v v^T|
        + log Gamma((beta + n + 1)/2) - log Gamma((beta + n + 1 - D)/2)``, with
        ``W* = beta W + sum_{l in X_k} (x_l - mu)(x_l - mu)^T`` and ``v = x - mu``. (Eq. 3.66
        as converted prints ``x x^T`` in place of ``v v^T``: the precision's posterior given
        ``mu`` involves the rows only through their deviations from ``mu``.)

        Parameters
        ----------
        X_new : ndarray of shape (M, D)
        X_k : ndarray of shape (n, D)
            The cluster's other rows (may be empty).
        mean : ndarray of shape (D,)

        Returns
        -------
        ndarray of shape (M,)
        """
        D = self.n_features
        X_new = np.asarray(X_new, dtype=float).reshape(-1, D)
        dev = np.asarray(X_k, dtype=float).reshape(-1, D) - mean
        n = dev.shape[0]
        W_star = self._beta_W + dev.T @ dev
        nu = self.beta + n
        _, logdet = np.linalg.slogdet(W_star)
        v = X_new - mean
        _, logdet_new = np.linalg.slogdet(W_star[None] + v[:, :, None] * v[:, None, :])
        return (-0.5 * D * np.log(np.pi) + 0.5 * nu * logdet - 0.5 * (nu + 1) * logdet_new
                + gammaln(0.5 * (nu + 1)) - gammaln(0.5 * (nu + 1 - D)))

    def log_predictive_given_precision(self, X_new, X_k, precision) -> np.ndarray:
        """Eq. 3.67: ``log p(x | X_k, S)`` with the cluster mean integrated out.

        ``-D/2 log 2 pi - x^T S x / 2 + (xi* + S x)^T ((n + 1) S + R)^{-1} (xi* + S x) / 2
        - xi*^T (n S + R)^{-1} xi* / 2 + 1/2 log(|S| |n S + R| / |(n + 1) S + R|)`` with
        ``xi* = S sum_{l in X_k} x_l + R xi``.

        Parameters
        ----------
        X_new : ndarray of shape (M, D)
        X_k : ndarray of shape (n, D)
            The cluster's other rows (may be empty).
        precision : ndarray of shape (D, D)

        Returns
        -------
        ndarray of shape (M,)
        """
        D = self.n_features
        X_new = np.asarray(X_new, dtype=float).reshape(-1, D)
        X_k = np.asarray(X_k, dtype=float).reshape(-1, D)
        S = np.asarray(precision, dtype=float)
        n = X_k.shape[0]
        xi_star = S @ X_k.sum(axis=0) + self._R_xi
        P_n = n * S + self.R
        P_n1 = (n + 1) * S + self.R
        u = xi_star[None, :] + X_new @ S  # (xi* + S x)^T, S symmetric
        quad_x = np.einsum("md,de,me->m", X_new, S, X_new)
        quad_new = np.einsum("md,md->m", u, np.linalg.solve(P_n1, u.T).T)
        quad_old = xi_star @ np.linalg.solve(P_n, xi_star)
        logdet = (np.linalg.slogdet(S)[1] + np.linalg.slogdet(P_n)[1]
                  - np.linalg.slogdet(P_n1)[1])
        return (-0.5 * D * _LOG_2PI - 0.5 * quad_x + 0.5 * quad_new - 0.5 * quad_old
                + 0.5 * logdet)

    # -- prior predictive --------------------------------------------------------------
    def _fixed_precisions(self) -> np.ndarray:
        """The fixed prior draws of ``S`` at the current ``beta`` and ``W``.

        Bartlett's decomposition driven by a stored scrambled Sobol point set (turned into
        chi-squares of the current degrees of freedom and into normals by their quantile
        functions): common random numbers, so the estimate is a smooth, deterministic
        function of the hyperparameters, and quasi-Monte Carlo, whose error at 256 points is
        about 1e-3 nats where plain Monte Carlo's is about 0.05 (the Wishart's tails are
        heavy at small ``beta``).
        """
        D = self.n_features
        idx = np.arange(D)
        J = self._fixed_uniforms.shape[0]
        A = np.zeros((J, D, D))
        # At small beta - D + 1 the lowest quantiles of the last chi-square underflow to
        # 0, which would make S_j singular; floored, such a draw is a component so broad
        # that its density adds nothing to the average, but it stays invertible.
        quantiles = chi2.ppf(self._fixed_uniforms, self.beta - idx[None, :])
        A[:, idx, idx] = np.sqrt(np.maximum(quantiles, _MIN_CHI2_QUANTILE))
        rows, cols = np.tril_indices(D, -1)
        A[:, rows, cols] = self._fixed_normals
        B = np.matmul(self._prior_factor, A)
        return np.matmul(B, np.swapaxes(B, 1, 2))

    def log_prior_predictive(self, X) -> np.ndarray:
        """``log int N(x | mu, S^{-1}) dG_0(mu, S)`` by a fixed set of prior draws of ``S``.

        Given ``S`` the mean integrates out exactly, ``x | S ~ N(xi, S^{-1} + R^{-1})``, so
        the estimate is ``log (1/J) sum_j N(x | xi, S_j^{-1} + R^{-1})`` over the
        ``n_prior_draws`` fixed draws ``S_j`` of :meth:`_fixed_precisions` (a Rao-Blackwellised
        quasi-Monte Carlo average; exact only as ``J -> infinity``). Used by the estimator for the
        weight of a new cluster in predictive densities; the exact samplers never need it.
        """
        D = self.n_features
        X = np.asarray(X, dtype=float).reshape(-1, D)
        S = self._fixed_precisions()
        cov = np.linalg.inv(S) + np.linalg.inv(self.R)[None]
        L = np.ascontiguousarray(np.linalg.cholesky(cov))
        half_logdet = np.log(np.diagonal(L, axis1=1, axis2=2)).sum(axis=1)
        out = np.empty(X.shape[0])
        log_mean_density_cov(np.ascontiguousarray(X), self.xi, L, half_logdet, out)
        return out

    # -- hyperparameters ---------------------------------------------------------------
    def log_beta_conditional(self, beta, precisions) -> float:
        """``log p(beta | S_1..K, W)`` up to a constant (eq. 3.61 prior times eq. 3.58)."""
        D = self.n_features
        if not beta > D - 1:
            return -np.inf
        S = np.asarray(precisions, dtype=float)
        K = S.shape[0]
        y = 1.0 / (beta - D + 1.0)
        # Gamma(shape, rate) on y, with the Jacobian |dy/dbeta| = y^2
        log_prior = ((_BETA_PRIOR_SHAPE - 1.0) * np.log(y) - _beta_prior_rate(D) * y
                     + 2.0 * np.log(y))
        logdet_S = np.linalg.slogdet(S)[1].sum()
        trace_WS = np.einsum("de,ked->", self.W, S)
        logdet_W = np.linalg.slogdet(self.W)[1]
        log_lik = (0.5 * (beta - D - 1.0) * logdet_S - 0.5 * beta * trace_WS
                   + 0.5 * K * beta * (D * np.log(beta) + logdet_W)
                   - 0.5 * K * beta * D * np.log(2.0) - K * multigammaln(0.5 * beta, D))
        return float(log_prior + log_lik)

    def update_hyperparameters(self, params, rng) -> None:
        """Draw ``xi``, ``R``, ``W`` then ``beta`` given the active components.

        * ``xi | mu, R ~ N(P^{-1} (Sigma_x^{-1} mu_x + R sum_k mu_k), P^{-1})``,
          ``P = Sigma_x^{-1} + K R`` (eq. 3.63 times eq. 3.60);
        * ``R | mu, xi ~ Wishart(D + K, (D Sigma_x + sum_k (mu_k - xi)(mu_k - xi)^T)^{-1})``;
        * ``W | S, beta ~ Wishart(D + K beta, (D Sigma_x^{-1} + beta sum_k S_k)^{-1})``
          (eq. 3.61 times eq. 3.58);
        * ``beta``: one slice-sampling update (stepping out and shrinkage, Neal 2003) of
          ``u = log(beta - D + 1)`` under :meth:`log_beta_conditional` plus the Jacobian.

        Does nothing when ``sample_hyperparameters`` is False or there is no component.
        """
        if not self.sample_hyperparameters:
            return
        means = np.asarray(params["means"], dtype=float)
        S = np.asarray(params["precisions"], dtype=float)
        K = means.shape[0]
        if K == 0:
            return
        D = self.n_features
        P = self.data_precision + K * self.R
        b = self.data_precision @ self.data_mean + self.R @ means.sum(axis=0)
        L = np.linalg.cholesky(P)
        xi = np.linalg.solve(P, b) + np.linalg.solve(L.T, rng.standard_normal(D))
        dev = means - xi
        R = _sample_wishart(float(D + K), _inverse_factor(D * self.data_cov + dev.T @ dev),
                            rng)
        W_scale_inv = D * self.data_precision + self.beta * S.sum(axis=0)
        W = _sample_wishart(D + K * self.beta, _inverse_factor(W_scale_inv), rng)
        self.xi, self.R, self.W = xi, 0.5 * (R + R.T), 0.5 * (W + W.T)
        offset = D - 1.0

        def log_target(u):
            return self.log_beta_conditional(offset + np.exp(u), S) + u

        u = _slice_sample(log_target, np.log(self.beta - offset), rng)
        self.beta = float(offset + np.exp(u))
        self._refresh()


def _slice_sample(log_density, x0, rng, width=1.0, max_steps=32, max_shrink=200):
    """One univariate slice-sampling update (stepping out, then shrinkage; Neal 2003).

    Returns ``x0`` unchanged if its log density is not finite or if shrinkage does not find
    a point within ``max_shrink`` tries (both only on numerically degenerate targets).
    """
    log_fx0 = log_density(x0)
    if not np.isfinite(log_fx0):
        return x0
    log_y = log_fx0 + np.log(rng.random())
    left = x0 - width * rng.random()
    right = left + width
    steps = max_steps
    while steps > 0 and log_density(left) > log_y:
        left -= width
        steps -= 1
    steps = max_steps
    while steps > 0 and log_density(right) > log_y:
        right += width
        steps -= 1
    for _ in range(max_shrink):
        x1 = left + (right - left) * rng.random()
        if log_density(x1) > log_y:
            return x1
        if x1 < x0:
            left = x1
        else:
            right = x1
    return x0
