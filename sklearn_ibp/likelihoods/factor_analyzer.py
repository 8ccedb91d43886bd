"""The factor-analyser base of a DP mixture: DPMFA (Görür 2007, sec. 3.4).

A component is a factor analyser, ``x = Lambda z + mu + eps`` with ``z ~ N(0, I_q)`` and
``eps ~ N(0, Psi)``, ``Psi`` diagonal; with the factors integrated out it is the Gaussian
``N(mu, Lambda Lambda^T + Psi)`` of eq. 3.68, evaluated through the q x q matrix
``I + Lambda^T Psi^{-1} Lambda`` (Woodbury; see
:mod:`sklearn_ibp.likelihoods._factor_analyzer_kernels`), never a D x D factorisation.

Parameters of ``K`` components (first axis the cluster)
-------------------------------------------------------
``"means"`` (K, D)
    ``mu_k ~ N(xi, R^{-1})`` (eq. 3.69).
``"loadings"`` (K, D, q)
    ``Lambda_k``; column ``j`` is ``N(0, Psi_k / nu_kj)`` (eq. 3.71 in the units of the
    noise, see below).
``"ard"`` (K, q)
    The ARD precisions ``nu_kj ~ G(ard_shape, ard_rate)`` (eq. 3.73, shape and rate,
    ``G(1/2, 1/2)`` as in the thesis). Given ``nu_kj`` the column's signal-to-noise ratio
    ``lambda_kj^T Psi_k^{-1} lambda_kj`` has mean ``D / nu_kj``.
``"uniquenesses"`` (K, D)
    The diagonal of ``Psi_k``: ``1 / psi_kd ~ G(beta, beta w_d)`` (eq. 3.70, shape and
    rate, so ``E[1 / psi_kd] = 1 / w_d``).
``"covariances"`` (K, D, D)
    ``Lambda_k Lambda_k^T + Psi_k``, derived from the two above (what the estimator reports).

Hyperparameters and their hyperpriors (eqs. 3.72-3.74), from the data's mean ``mu_x``,
covariance ``Sigma_x`` and column variances ``sigma_xd^2`` only:

* ``xi ~ N(mu_x, Sigma_x)``, ``R ~ Wishart(D, (D Sigma_x)^{-1})`` (eq. 3.72);
* ``w_d ~ G(1/2, 1 / sigma_xd^2)`` (shape, rate: mean ``sigma_xd^2 / 2``) and
  ``beta ~ IG(1/2, 1/2)`` (eq. 3.74, i.e. ``1 / beta ~ G(1/2, 1/2)``).

The model moves exactly with the data under translation and per-column rescaling (a
diagonal ``Psi`` is not rotation invariant, so neither is factor analysis).

Three departures from sec. 3.4. The first two make one cluster's parameters conditionally
independent of every other cluster's given the hyperparameters, as the contract of
:class:`~sklearn_ibp.likelihoods._mixture_base.BaseMixtureComponents` requires (a cluster's
posterior is drawn from its own rows, the hyperparameters from the clusters' parameters):

* **Uniquenesses per cluster.** The thesis shares one ``Psi`` across all components
  (eq. 3.68, "the diagonal uniqueness matrix Psi is common for all components"), whose
  update needs every cluster's rows and factors at once. Here each cluster has its own
  ``Psi_k``, and eq. 3.70's ``IG(beta, beta w)`` becomes their shared hyperprior, with
  ``w`` per column (the thesis's scalar ``w`` is not invariant to rescaling one column)
  and ``beta`` learned: a large ``beta`` pulls every ``Psi_k`` to ``diag(w)``, the thesis's
  shared model in the limit.
* **ARD precisions per cluster.** The thesis shares ``nu_j`` across components
  (eq. 3.71, "each hyperparameter is shared among the mixture components"); here every
  cluster has its own ``nu_kj`` with the thesis's ``G(1/2, 1/2)`` prior (as in Ghahramani
  and Beal 2000, whose priors sec. 3.4 starts from), so each cluster finds its own latent
  dimension (:func:`effective_latent_dimensions`).

The third is the scale of the loadings. Eq. 3.71's ``N(0, I / nu_j)`` is not invariant to
rescaling a column of the data, and in the data's units ``G(1/2, 1/2)`` on ``nu`` hardly
shrinks: a cluster's factor spreads over several parallel columns. Here each column is
``N(0, Psi / nu_j)``, measured against the noise: rescaling a data column rescales its
loadings and uniquenesses together, ``nu_j`` is an inverse signal-to-noise ratio, the
marginal prior of a column (``nu_j`` integrated out) is a multivariate t that strongly
prefers one strong column to two parallel halves, and a loading row with its uniqueness is
Normal-Gamma given the factors, so the two are drawn jointly.

Inference for one cluster given its rows (:meth:`FactorAnalyzerBase.sample_posterior`) is
the Gibbs scan that sec. 3.4 describes: the factors ``z_i`` are brought in to decouple
``Lambda`` and ``Psi`` (eq. 3.76), the loadings are drawn row by row of ``Lambda`` (the
likelihood of eq. 3.76 factorises over the data dimensions, with the prior
``Lambda_d ~ N(0, psi_d Upsilon^{-1})``, ``Upsilon = diag(nu)``), each with its uniqueness,
then the ARD precisions, and last the mean given the full covariance with the factors
integrated out (eq. 3.68). One move is added to the thesis's scan: rotations of pairs of
loading columns, which leave the likelihood unchanged and are drawn from the ARD prior
along the rotation (a generalised Gibbs move); single-site Gibbs updates rotate the
columns only very slowly. The new-cluster integral of eq. 3.77 is intractable; the
auxiliary-component sampler (Neal's Algorithm 8) that the thesis chooses avoids it.
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaincinv, gammaln

from .._slice import slice_sample
from ._conditionally_conjugate_kernels import log_mean_density_cov
from ._factor_analyzer_kernels import factor_log_density, scan_factor_analyser
from ._mixture_base import BaseMixtureComponents
from .conditionally_conjugate import _inverse_factor, _sample_wishart

__all__ = ["FactorAnalyzerBase", "column_signal_to_noise", "effective_latent_dimensions"]

_KEYS = ("xi", "R", "w", "beta")
_PARAM_KEYS = ("means", "loadings", "ard", "uniquenesses", "covariances")
# Numerical guards, relative to each column's variance (uniquenesses) or absolute (ARD
# precisions); they bind only in the far tails of heavy-tailed prior draws.
_PSI_RANGE = (1e-12, 1e12)
_ARD_RANGE = (1e-12, 1e12)
_BETA_RANGE = (1e-6, 1e8)


def effective_latent_dimensions(params, threshold=5.0) -> np.ndarray:
    """The effective latent dimension of each cluster: how many factor columns are on.

    Column ``j`` of cluster ``k`` is *on* when its loadings are not negligible against the
    noise: its signal-to-noise ratio ``lambda_kj^T Psi_k^{-1} lambda_kj =
    sum_d Lambda_kdj^2 / psi_kd`` (the variance the factor adds along its own direction, in
    units of the noise there) exceeds ``threshold``. ARD switches an unneeded column off by
    a large precision ``nu_kj``; its loadings then keep only what the rows cannot rule out,
    a ratio well below 1 for a cluster of a hundred rows and rarely above 5 in posterior
    draws, while a factor of the data keeps its own ratio (tens to hundreds for a factor
    that stands clear of the noise). The count is a function of one posterior draw; a
    posterior summary is its mode over draws.

    Parameters
    ----------
    params : dict
        Per-cluster parameters with ``"loadings"`` (K, D, q) and ``"uniquenesses"`` (K, D).
    threshold : float, default=5.0

    Returns
    -------
    ndarray of shape (K,), int
    """
    return (column_signal_to_noise(params) > threshold).sum(axis=1)


def column_signal_to_noise(params) -> np.ndarray:
    """``sum_d Lambda_kdj^2 / psi_kd`` for every cluster ``k`` and column ``j``, (K, q)."""
    loadings = np.asarray(params["loadings"], dtype=float)
    psi = np.asarray(params["uniquenesses"], dtype=float)
    return np.einsum("kdj,kd->kj", loadings**2, 1.0 / psi)


def _gaussian_draw(precision, linear, rng):
    """``N(P^{-1} h, P^{-1})`` for one precision ``P`` (D normals)."""
    L = np.linalg.cholesky(precision)
    eps = rng.standard_normal(precision.shape[0])
    return np.linalg.solve(L.T, np.linalg.solve(L, linear) + eps)


class FactorAnalyzerBase(BaseMixtureComponents):
    """Factor-analyser components with ARD loadings: the base of the DPMFA (sec. 3.4).

    See the module docstring for the model (eqs. 3.68-3.76), the parameters, the
    hyperpriors and the three departures from the thesis (uniquenesses and ARD precisions
    per cluster, loadings measured against the noise).

    Parameters
    ----------
    n_factors : int, default=1
        ``q``, the number of factor columns per cluster, ``1 <= q < n_features`` (an upper
        bound: ARD switches off the columns the cluster does not need).
    ard_shape, ard_rate : float, default=0.5
        Shape and rate of the gamma prior on the ARD precisions (eq. 3.73: ``G(1/2, 1/2)``).
        The loadings' prior variances are ``psi_d / nu_j``.
    n_scans : int, default=1
        Gibbs scans over (factors, loadings, uniquenesses, ARD precisions, mean) per call
        of :meth:`sample_posterior`.
    initial_hyperparameters : dict or None, default=None
        Starting values of any of ``"xi"`` (D,), ``"R"`` (D, D), ``"w"`` (D,) and
        ``"beta"``; the others start at ``xi = mu_x``, ``R = Sigma_x^{-1}``,
        ``w = sigma_x^2 / 2`` (the hyperprior's mean) and ``beta = 1``.
    sample_hyperparameters : bool, default=True
        Whether :meth:`update_hyperparameters` draws them; False holds them fixed.
    n_prior_draws : int, default=256
        Size of the fixed set of prior draws of :meth:`log_prior_predictive`.
    prior_draws_seed : int, default=0
        Seed of that set (the chain's stream is not touched).

    Attributes
    ----------
    xi, R, w, beta
        Current hyperparameters.
    data_mean, data_cov, data_var : ndarray
        ``mu_x``, ``Sigma_x`` and the column variances of the data given to
        :meth:`initialize`.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ibp.likelihoods.factor_analyzer import FactorAnalyzerBase
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(50, 4))
    >>> base = FactorAnalyzerBase(n_factors=2)
    >>> base.initialize(X, rng)
    >>> params = base.sample_posterior(X, rng)
    >>> base.log_likelihood(X[:3], params).shape
    (3, 1)
    """

    name = "factor_analyzer"
    conjugate = False
    hyperparameter_names = _KEYS

    def __init__(self, n_factors=1, ard_shape=0.5, ard_rate=0.5, n_scans=1,
                 initial_hyperparameters=None, sample_hyperparameters=True,
                 n_prior_draws=256, prior_draws_seed=0):
        self.n_factors = n_factors
        self.ard_shape = ard_shape
        self.ard_rate = ard_rate
        self.n_scans = n_scans
        self.initial_hyperparameters = initial_hyperparameters
        self.sample_hyperparameters = sample_hyperparameters
        self.n_prior_draws = n_prior_draws
        self.prior_draws_seed = prior_draws_seed
        self.n_features = None

    # -- set-up ------------------------------------------------------------------------
    def initialize(self, X, rng) -> None:
        """Hyperpriors from the data's mean and covariance; starting hyperparameters.

        A singular (or nearly singular: correlation matrix with condition number above
        ``1e12``) ``Sigma_x`` gets a jitter of ``1e-6`` times each column's variance (1 for a
        constant column). ``rng`` is not used: the starting values are deterministic.

        Raises
        ------
        ValueError
            If ``n_factors`` is not an integer in ``[1, n_features - 1]``.
        """
        X, data_mean, cov = self._data_moments(X)
        D = X.shape[1]
        q = self.n_factors
        if isinstance(q, bool) or not isinstance(q, (int, np.integer)) or not 1 <= q < D:
            raise ValueError(
                f"n_factors must be an integer with 1 <= n_factors < n_features = {D}; "
                f"got n_factors={q!r}."
            )
        for name in ("ard_shape", "ard_rate"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive; got {getattr(self, name)!r}.")
        if isinstance(self.n_scans, bool) or not int(self.n_scans) == self.n_scans \
                or self.n_scans < 1:
            raise ValueError(f"n_scans must be a positive integer; got {self.n_scans!r}.")
        self.n_features = D
        self.data_mean = data_mean
        var = np.diag(cov).copy()
        try:
            # judged on the correlations, so that rescaling a column changes nothing
            if np.any(~(var > 0)):
                raise np.linalg.LinAlgError
            corr = cov / np.sqrt(np.outer(var, var))
            np.linalg.cholesky(corr)
            if np.linalg.cond(corr) > 1e12:
                raise np.linalg.LinAlgError
        except np.linalg.LinAlgError:
            var[~(var > 0)] = 1.0
            cov = cov + 1e-6 * np.diag(var)
        self.data_cov = cov
        self.data_precision = np.linalg.inv(cov)
        self.data_var = np.diag(cov).copy()
        self._psi_low = _PSI_RANGE[0] * self.data_var
        self._psi_high = _PSI_RANGE[1] * self.data_var
        self.set_hyperparameters(self._starting_hyperparameters(
            {"xi": self.data_mean.copy(), "R": self.data_precision.copy(),
             "w": 0.5 * self.data_var, "beta": 1.0}))
        # Fixed draws for log_prior_predictive: the ARD precisions (their prior has no
        # hyperparameter), the loadings' normals and the uniforms of the uniquenesses.
        fixed = np.random.default_rng(self.prior_draws_seed)
        J = int(self.n_prior_draws)
        self._fixed_ard = np.clip(fixed.gamma(self.ard_shape, 1.0 / self.ard_rate, (J, q)),
                                  *_ARD_RANGE)
        self._fixed_normals = fixed.standard_normal((J, D, q))
        self._fixed_uniforms = np.clip(fixed.random((J, D)), 1e-12, 1.0 - 1e-12)

    def hyperparameters(self) -> dict:
        """Copies of ``xi``, ``R``, ``w`` and ``beta``."""
        return {"xi": self.xi.copy(), "R": self.R.copy(), "w": self.w.copy(),
                "beta": float(self.beta)}

    def set_hyperparameters(self, values: dict) -> None:
        """Set ``xi``, ``R``, ``w`` and ``beta`` (all four keys)."""
        D = self.n_features
        xi = np.array(values["xi"], dtype=float).reshape(D)
        R = np.array(values["R"], dtype=float).reshape(D, D)
        w = np.array(values["w"], dtype=float).reshape(D)
        beta = float(values["beta"])
        if not beta > 0:
            raise ValueError(f"beta must be positive; got {beta}.")
        if np.any(~(w > 0)):
            raise ValueError("w must be positive.")
        if not np.allclose(R, R.T) or np.any(np.linalg.eigvalsh(R) <= 0):
            raise ValueError("R must be symmetric positive definite.")
        self.xi, self.R, self.w, self.beta = xi, 0.5 * (R + R.T), w, beta
        self._refresh()

    def _refresh(self) -> None:
        self._mean_factor = _inverse_factor(self.R)  # mu = xi + F z, F F^T = R^{-1}
        self._R_xi = self.R @ self.xi

    # -- the contract ------------------------------------------------------------------
    def _clip_psi(self, psi):
        return np.clip(psi, self._psi_low, self._psi_high)

    @staticmethod
    def covariances(loadings, uniquenesses) -> np.ndarray:
        """``Lambda_k Lambda_k^T + diag(psi_k)`` (eq. 3.68), shape (K, D, D)."""
        loadings = np.asarray(loadings, dtype=float)
        cov = np.matmul(loadings, np.swapaxes(loadings, -1, -2))
        idx = np.arange(loadings.shape[-2])
        cov[..., idx, idx] += np.asarray(uniquenesses, dtype=float)
        return cov

    def sample_prior(self, n, rng) -> dict:
        """``n`` draws from ``G_0`` (eqs. 3.69-3.71, 3.73).

        Draws, in this order: the ARD precisions (n q gammas), the uniquenesses (n D
        gammas), the loadings (n D q normals), the means (n D normals).
        """
        n = int(n)
        D, q = self.n_features, self.n_factors
        ard = np.clip(rng.gamma(self.ard_shape, 1.0 / self.ard_rate, (n, q)), *_ARD_RANGE)
        precision = rng.gamma(self.beta, 1.0 / (self.beta * self.w), (n, D))
        with np.errstate(divide="ignore"):
            psi = self._clip_psi(1.0 / precision)
        loadings = (rng.standard_normal((n, D, q)) * np.sqrt(psi)[:, :, None]
                    / np.sqrt(ard)[:, None, :])
        means = self.xi + rng.standard_normal((n, D)) @ self._mean_factor.T
        return {"means": means, "loadings": loadings, "ard": ard, "uniquenesses": psi,
                "covariances": self.covariances(loadings, psi)}

    def log_likelihood(self, X, params) -> np.ndarray:
        """``log N(x_n | mu_k, Lambda_k Lambda_k^T + Psi_k)`` (eq. 3.68), shape (N, K).

        Reads ``"means"``, ``"loadings"`` and ``"uniquenesses"`` only (O(D q) per row and
        cluster after an O(D q^2) set-up per cluster).
        """
        D = self.n_features
        X = np.ascontiguousarray(np.asarray(X, dtype=np.float64).reshape(-1, D))
        means = np.ascontiguousarray(params["means"], dtype=np.float64)
        loadings = np.ascontiguousarray(params["loadings"], dtype=np.float64)
        psi = np.ascontiguousarray(params["uniquenesses"], dtype=np.float64)
        out = np.empty((X.shape[0], means.shape[0]))
        factor_log_density(X, means, loadings, psi, out)
        return out

    def sample_posterior(self, X_k, rng, params_k=None) -> dict:
        """``n_scans`` Gibbs scans of one cluster's parameters given its rows ``X_k``.

        One scan (sec. 3.4, "MCMC inference") draws in turn

        1. the factors, ``z_i | x_i ~ N(M^{-1} Lambda^T Psi^{-1} (x_i - mu), M^{-1})``,
           ``M = I + Lambda^T Psi^{-1} Lambda`` (eq. 3.76 times ``z ~ N(0, I)``);
        2. each uniqueness with its row of the loadings, jointly (eq. 3.76 factorises over
           the dimensions; with ``y_d = x_d - mu_d``, ``A = Upsilon + Z^T Z`` and
           ``m_d = A^{-1} Z^T y_d``): first the uniqueness with the row integrated out,
           ``1 / psi_d ~ G(beta + n / 2, beta w_d + (||y_d - Z m_d||^2 + m_d^T Upsilon m_d) / 2)``
           (eq. 3.70), then ``Lambda_d | psi_d ~ N(m_d, psi_d A^{-1})`` (eq. 3.71);
        3. the ARD precisions,
           ``nu_j ~ G(a + D / 2, b + sum_d Lambda_dj^2 / (2 psi_d))`` (eqs. 3.71, 3.73);
        4. the mean given the full covariance ``Sigma = Lambda Lambda^T + Psi`` with the
           factors integrated out, ``mu ~ N(P^{-1} (Sigma^{-1} sum_i x_i + R xi), P^{-1})``,
           ``P = n Sigma^{-1} + R`` (eqs. 3.68, 3.69).

        Steps 1-3 are Gibbs updates on the state augmented with the factors; step 4 draws
        the mean and the factors jointly (the factors are redrawn, step 1, before they are
        used again), so the scan leaves the cluster's posterior invariant. The work is a
        numba kernel,
        :func:`~sklearn_ibp.likelihoods._factor_analyzer_kernels.scan_factor_analyser`.

        The scan starts from ``params_k`` when given. Without it, it starts from the
        probabilistic-PCA fit of the rows (``n >= 2``; the mean of the rows, loadings from
        the leading eigenvectors of their covariance, uniquenesses from the rest) or from a
        prior draw (``n < 2``).

        Parameters
        ----------
        X_k : ndarray of shape (n, D)
            The cluster's rows (may be empty: the scan then draws from the prior).
        rng : numpy.random.Generator
        params_k : dict or None
            The cluster's current parameters (first axis of length 1).

        Returns
        -------
        dict
            The new parameters, each with a first axis of length 1.
        """
        D, q = self.n_features, self.n_factors
        X_k = np.ascontiguousarray(np.asarray(X_k, dtype=np.float64).reshape(-1, D))
        if params_k is None:
            state = self._starting_state(X_k, rng)
        else:
            state = (params_k["means"], params_k["loadings"], params_k["uniquenesses"],
                     params_k["ard"])
        # private contiguous copies: the scan works in place
        mean, loadings, psi, ard = (
            np.array(v, dtype=np.float64, order="C").reshape(shape)
            for v, shape in zip(state, ((D,), (D, q), (D,), (q,)), strict=True)
        )
        for _ in range(int(self.n_scans)):
            self._scan(X_k, mean, loadings, psi, ard, rng)
        return {"means": mean[None], "loadings": loadings[None], "ard": ard[None],
                "uniquenesses": psi[None],
                "covariances": self.covariances(loadings[None], psi[None])}

    def sample_posterior_all(self, X, labels, n_clusters, rng, params=None) -> dict:
        """:meth:`sample_posterior` for every cluster, ``k < n_clusters``, in turn."""
        D = self.n_features
        X = np.asarray(X, dtype=float).reshape(-1, D)
        labels = np.asarray(labels)
        n_clusters = int(n_clusters)
        order = np.argsort(labels, kind="stable")
        bounds = np.concatenate([[0], np.cumsum(np.bincount(labels, minlength=n_clusters))])
        draws = []
        for k in range(n_clusters):
            rows = X[order[bounds[k] : bounds[k + 1]]]
            current = None if params is None else {
                name: np.asarray(params[name])[k : k + 1]
                for name in ("means", "loadings", "uniquenesses", "ard")}
            draws.append(self.sample_posterior(rows, rng, current))
        if not draws:
            return {name: v[:0] for name, v in self.sample_prior(0, rng).items()}
        return {name: np.concatenate([d[name] for d in draws]) for name in _PARAM_KEYS}

    def _starting_state(self, X_k, rng):
        q = self.n_factors
        n = X_k.shape[0]
        if n < 2:
            draw = self.sample_prior(1, rng)
            mean = X_k[0].copy() if n == 1 else draw["means"][0]
            return mean, draw["loadings"][0], draw["uniquenesses"][0], draw["ard"][0]
        mean = X_k.mean(axis=0)
        # probabilistic PCA in the data's standardised units (so the start moves with a
        # rescaling of the columns)
        scale = np.sqrt(self.data_var)
        standard = (X_k - mean) / scale
        S = standard.T @ standard / n + 1e-6 * np.eye(self.n_features)
        eigval, eigvec = np.linalg.eigh(S)
        eigval, eigvec = eigval[::-1], eigvec[:, ::-1]
        noise = max(float(eigval[q:].mean()), 1e-6)
        loadings = eigvec[:, :q] * np.sqrt(np.maximum(eigval[:q] - noise, 0.0))
        psi = np.maximum(np.diag(S) - (loadings**2).sum(axis=1), 0.1 * np.diag(S))
        loadings = loadings * scale[:, None]
        psi = self._clip_psi(psi * self.data_var)
        ard = self._ard_mean(loadings, psi)
        return mean, loadings, psi, ard

    def _ard_mean(self, loadings, psi):
        D = self.n_features
        rate = self.ard_rate + 0.5 * (loadings**2 / psi[:, None]).sum(axis=0)
        return np.clip((self.ard_shape + 0.5 * D) / rate, *_ARD_RANGE)

    def _scan(self, X_k, mean, loadings, psi, ard, rng):
        """One Gibbs scan (see :meth:`sample_posterior`), in place on the state arrays."""
        scan_factor_analyser(
            X_k, mean, loadings, psi, ard, float(self.beta), self.w, self.R, self._R_xi,
            float(self.ard_shape), float(self.ard_rate), self._psi_low, self._psi_high,
            _ARD_RANGE[0], _ARD_RANGE[1], rng,
        )

    # -- prior predictive --------------------------------------------------------------
    def log_prior_predictive(self, X) -> np.ndarray:
        """``log int N(x | mu, Lambda Lambda^T + Psi) dG_0`` by a fixed set of prior draws.

        Given the loadings and uniquenesses the mean integrates out exactly,
        ``x ~ N(xi, Lambda Lambda^T + Psi + R^{-1})``; the estimate averages that density
        over ``n_prior_draws`` fixed draws of ``(nu, Lambda, Psi)`` (common random numbers:
        the uniquenesses are the stored uniforms through the gamma quantile function of the
        current ``beta`` and ``w``), so it is a smooth, deterministic function of the
        hyperparameters. Not exact (eq. 3.77 has no closed form); the estimator uses it for
        the weight of a new cluster in predictive densities, the samplers never need it.
        """
        D = self.n_features
        X = np.ascontiguousarray(np.asarray(X, dtype=np.float64).reshape(-1, D))
        precision = gammaincinv(self.beta, self._fixed_uniforms) / (self.beta * self.w)
        with np.errstate(divide="ignore"):
            psi = self._clip_psi(1.0 / precision)
        loadings = (self._fixed_normals * np.sqrt(psi)[:, :, None]
                    / np.sqrt(self._fixed_ard)[:, None, :])
        cov = self.covariances(loadings, psi) + np.linalg.inv(self.R)[None]
        L = np.ascontiguousarray(np.linalg.cholesky(cov))
        half_logdet = np.log(np.diagonal(L, axis1=1, axis2=2)).sum(axis=1)
        out = np.empty(X.shape[0])
        log_mean_density_cov(X, np.ascontiguousarray(self.xi), L, half_logdet, out)
        return out

    # -- hyperparameters ---------------------------------------------------------------
    def log_beta_conditional(self, beta, uniquenesses) -> float:
        """``log p(beta | Psi_1..K, w)`` up to a constant: ``beta ~ IG(1/2, 1/2)``
        (eq. 3.74) times ``1 / psi_kd ~ G(beta, beta w_d)`` (eq. 3.70)."""
        if not beta > 0:
            return -np.inf
        tau = 1.0 / np.asarray(uniquenesses, dtype=float).reshape(-1, self.n_features)
        K = tau.shape[0]
        log_prior = -1.5 * np.log(beta) - 0.5 / beta
        log_lik = (K * beta * np.log(beta * self.w).sum() - K * tau.shape[1] * gammaln(beta)
                   + (beta - 1.0) * np.log(tau).sum() - beta * (self.w * tau).sum())
        return float(log_prior + log_lik)

    def update_hyperparameters(self, params, rng) -> None:
        """Draw ``xi``, ``R``, ``w`` then ``beta`` given the active components.

        * ``xi | mu, R ~ N(P^{-1} (Sigma_x^{-1} mu_x + R sum_k mu_k), P^{-1})``,
          ``P = Sigma_x^{-1} + K R`` (eq. 3.72 times eq. 3.69);
        * ``R | mu, xi ~ Wishart(D + K, (D Sigma_x + sum_k (mu_k - xi)(mu_k - xi)^T)^{-1})``;
        * ``w_d | Psi, beta ~ G(1/2 + K beta, 1 / sigma_xd^2 + beta sum_k 1 / psi_kd)``
          (eq. 3.74 times eq. 3.70);
        * ``beta``: one slice-sampling update of ``log beta`` under
          :meth:`log_beta_conditional` plus the Jacobian (its conditional is not of
          standard form).

        The ARD precisions have the fixed prior of eq. 3.73 and are drawn with each
        cluster's parameters. Does nothing when ``sample_hyperparameters`` is False or there
        is no component.
        """
        if not self.sample_hyperparameters:
            return
        means = np.asarray(params["means"], dtype=float).reshape(-1, self.n_features)
        psi = np.asarray(params["uniquenesses"], dtype=float).reshape(-1, self.n_features)
        K = means.shape[0]
        if K == 0:
            return
        D = self.n_features
        P = self.data_precision + K * self.R
        xi = _gaussian_draw(P, self.data_precision @ self.data_mean
                            + self.R @ means.sum(axis=0), rng)
        dev = means - xi
        R = _sample_wishart(D + K, _inverse_factor(D * self.data_cov + dev.T @ dev), rng)
        tau = 1.0 / psi
        w = rng.gamma(0.5 + K * self.beta, 1.0 / (1.0 / self.data_var
                                                  + self.beta * tau.sum(axis=0)))
        self.xi, self.R, self.w = xi, 0.5 * (R + R.T), w

        low, high = np.log(_BETA_RANGE[0]), np.log(_BETA_RANGE[1])

        def log_target(u):
            if not low < u < high:
                return -np.inf
            return self.log_beta_conditional(np.exp(u), psi) + u

        self.beta = float(np.exp(slice_sample(log_target, np.log(self.beta), rng)))
        self._refresh()
