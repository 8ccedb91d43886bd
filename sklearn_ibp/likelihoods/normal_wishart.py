"""The conjugate Normal-Wishart base of the DP mixture of Gaussians (Görür 2007, sec. 3.3.1).

Components are Gaussians with mean ``mu`` and precision ``S``, ``x ~ N(mu, S^-1)``
(eq. 3.53), and the base distribution ``G_0`` is the Normal-Wishart of eqs. 3.57-3.59:

* ``mu | S ~ N(xi, (rho S)^-1)`` (eq. 3.57),
* ``S ~ Wishart(beta, (beta W)^-1)`` (eq. 3.58).

**Wishart parameterisation.** ``Wishart(nu, V)`` has ``nu`` degrees of freedom and scale
matrix ``V``: density ``|S|^((nu - D - 1)/2) exp(-tr(V^-1 S)/2) / (2^(nu D/2) |V|^(nu/2)
Gamma_D(nu/2))`` and mean ``nu V``. So ``S ~ Wishart(beta, (beta W)^-1)`` has
``E[S] = W^-1``: ``W`` is a covariance-like matrix (the prior guess of a component's
covariance) and ``beta > D - 1`` says how tightly the precisions concentrate around it.
**Gamma parameterisation.** ``Gamma(a, rate b)`` has shape ``a`` and rate ``b``, the
reading eq. 3.23 fixes for ``G(1/2, 1/2)`` (``1/alpha ~ G(1/2, 1/2)`` gives
``p(alpha) ~ alpha^(-3/2) exp(-1/(2 alpha))``); ``rho ~ G(1/2, 1/2)`` is read the same way
(mean 1). Görür's (2007) ``1/(beta - D + 1) ~ G(1, 1/D)`` is read as mean ``1/D`` (shape 1,
rate ``D``): in ``D = 1`` every reading agrees with Rasmussen (2000), ``1/beta`` with mean 1,
and for ``D > 1`` the other reading (mean ``D``) puts ``beta`` next to ``D - 1`` so often
(``P(beta - D + 1 < 0.2) ~ 0.08`` in ``D = 2``) that the Wishart draws are numerically
singular. The constants are ``_DOF_PRIOR_SHAPE`` and ``_DOF_PRIOR_RATE_PER_DIM``.

The hyperparameters get the vague hyperpriors of eqs. 3.61-3.62, built from the data mean
``mu_x`` and covariance ``Sigma_x`` only:

* ``W ~ Wishart(D, Sigma_x / D)`` (mean ``Sigma_x``),
* ``1 / (beta - D + 1) ~ Gamma(1, rate D)`` (mean ``1/D``),
* ``xi ~ N(mu_x, Sigma_x)``,
* ``rho ~ Gamma(1/2, rate 1/2)``.

Under an affine change of the data ``x -> A x + b`` (translation, rotation, scaling) the
hyperpriors, the starting values set by :meth:`NormalWishartBase.initialize` and every
conditional move with it, so the fitted partition does not depend on the data's location,
orientation or units (sec. 3.3.1) and every density is changed by the Jacobian only.

**Posterior** of one component with ``n`` rows ``X_k`` (mean ``xbar``, centred scatter
``C``): ``kappa = rho + n``, ``nu = beta + n``, ``xi* = (rho xi + n xbar) / kappa`` and
``W* = beta W + C + (rho n / kappa)(xbar - xi)(xbar - xi)^T`` (Görür's (2007)
``beta W + rho xi xi^T + sum x x^T - kappa xi* xi*^T``), so that
``S | X_k ~ Wishart(nu, W*^-1)`` and ``mu | S, X_k ~ N(xi*, (kappa S)^-1)``.
The **predictive** (eq. 3.65) is a multivariate Student-t with ``nu - D + 1`` degrees of
freedom, location ``xi*`` and scale matrix ``(kappa + 1) / (kappa (nu - D + 1)) W*``:

``log p(x | X_k) = -D/2 log pi + D/2 log(kappa / (kappa + 1)) + log Gamma((nu + 1)/2)
- log Gamma((nu + 1 - D)/2) - 1/2 log|W*| - (nu + 1)/2 log(1 + kappa/(kappa + 1)
(x - xi*)^T W*^-1 (x - xi*))``,

which equals Görür's (2007) ``nu/2 log|W*| - (nu + 1)/2 log|W* + kappa/(kappa+1) d d^T|``.
The **marginal** of ``n`` rows is

``log p(X_k) = -n D/2 log pi + D/2 log(rho / kappa) + log Gamma_D(nu/2)
- log Gamma_D(beta/2) + beta/2 log|beta W| - nu/2 log|W*|``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.linalg import solve_triangular
from scipy.special import gammaln, multigammaln

from .._slice import slice_sample
from ._mixture_base import BaseMixtureComponents
from ._normal_wishart_kernels import (
    cholesky_lower,
    draw_normal_wishart,
    draw_normal_wishart_many,
    make_prior,
    solve_lower,
    solve_lower_transpose,
    wishart_bartlett,
)

__all__ = ["NormalWishartBase"]

# Hyperprior constants of eqs. 3.61-3.62 (shape, rate).
_DOF_PRIOR_SHAPE = 1.0  # 1/(beta - D + 1) ~ Gamma(1, rate D): mean 1/D (module docstring)
_DOF_PRIOR_RATE_PER_DIM = 1.0  # rate = _DOF_PRIOR_RATE_PER_DIM * D
_RHO_PRIOR = (0.5, 0.5)  # rho ~ Gamma(1/2, rate 1/2)


def _log_mvgamma(a, D):
    """``log Gamma_D(a)`` with :func:`math.lgamma` (faster than SciPy's for one value)."""
    return 0.25 * D * (D - 1) * math.log(math.pi) + sum(
        math.lgamma(a - 0.5 * d) for d in range(D)
    )


def _cholesky(A, what="matrix"):
    """Lower Cholesky factor of a small symmetric positive definite matrix (plain loops:
    LAPACK's per-call overhead dominates at this size)."""
    L, ok = cholesky_lower(np.ascontiguousarray(A, dtype=np.float64))
    if not ok:
        raise ValueError(f"The {what} is not positive definite.")
    return L


def _logdet_from_chol(L):
    return 2.0 * float(np.sum(np.log(np.diag(L))))


class NormalWishartBase(BaseMixtureComponents):
    """Conjugate Normal-Wishart base with the hierarchical hyperpriors of sec. 3.3.1.

    ``mu | S ~ N(xi, (rho S)^-1)``, ``S ~ Wishart(beta, (beta W)^-1)`` with
    ``E[S] = W^-1`` (eqs. 3.57-3.59; see the module docstring for the parameterisation).
    Component parameters are ``{"means": (K, D), "precisions": (K, D, D)}``.

    Parameters
    ----------
    location : float, array-like of shape (n_features,) or None, default=None
        ``xi``, the prior mean of the component means. None: the data mean.
    precision_scaling : float or None, default=None
        ``rho > 0``, the component mean's precision relative to the component precision.
        None: 1 (the mean of its hyperprior, eq. 3.62).
    dof : float or None, default=None
        ``beta > D - 1``, the Wishart degrees of freedom. None: ``D``.
    scale : float, array-like of shape (n_features, n_features) or None, default=None
        ``W`` (a scalar means ``scale * I``), with ``E[S] = W^-1``. None: the data
        covariance (the mean of its hyperprior, eq. 3.61).
    sample_hyperparameters : bool, default=True
        Whether :meth:`update_hyperparameters` draws ``W, beta, xi, rho`` from their
        conditionals (eqs. 3.61-3.62). False keeps them fixed (e.g. for exact tests).

    Attributes
    ----------
    n_features : int
        ``D``, set by :meth:`initialize`.
    data_mean_, data_covariance_ : ndarray
        ``mu_x`` and ``Sigma_x`` of eqs. 3.61-3.62.
    """

    name = "conjugate"
    conjugate = True

    def __init__(
        self,
        location=None,
        precision_scaling=None,
        dof=None,
        scale=None,
        sample_hyperparameters=True,
    ):
        self.location = location
        self.precision_scaling = precision_scaling
        self.dof = dof
        self.scale = scale
        self.sample_hyperparameters = sample_hyperparameters
        self.n_features = None
        self._version = 0

    # ------------------------------------------------------------------ set-up
    def initialize(self, X, rng=None) -> None:
        """Set ``mu_x``, ``Sigma_x`` and the starting hyperparameters from the data.

        Unset hyperparameters start at their hyperprior means (``xi = mu_x``,
        ``W = Sigma_x``, ``rho = 1``) and ``beta = D``: functions of ``mu_x`` and
        ``Sigma_x`` only, so the start is equivariant under affine maps of the data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        rng : numpy.random.Generator, optional
            Unused (the start is deterministic); part of the interface.
        """
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or X.shape[1] < 1:
            raise ValueError(f"X must be a 2-d array with at least one column, got {X.shape}.")
        D = X.shape[1]
        mean = X.mean(axis=0) if X.shape[0] else np.zeros(D)
        cov = np.atleast_2d(np.cov(X, rowvar=False)) if X.shape[0] >= 2 else None
        self.initialize_from_moments(X.shape[0], mean, cov)

    def initialize_from_moments(self, n, mean, cov) -> None:
        """:meth:`initialize` from the data's number of rows, column means and covariance
        (``np.cov(X, rowvar=False)``; None for fewer than two rows) instead of the rows:
        for data that is not in this process (a ``dask.array``)."""
        mean = np.asarray(mean, dtype=float).reshape(-1)
        D = mean.shape[0]
        self.n_features = D
        self.data_mean_ = mean
        cov = np.eye(D) if n < 2 or cov is None else np.atleast_2d(cov)
        self.data_covariance_ = self._regularised(cov)
        self._data_chol = np.linalg.cholesky(self.data_covariance_)
        # log|Sigma_x^-1|: the floor of the precisions' log-determinants below is relative
        # to it, so that the sampler is equivariant under a rescaling of the data
        self._data_logdet_precision = -2.0 * float(np.sum(np.log(np.diag(self._data_chol))))
        self._data_precision = np.linalg.inv(self.data_covariance_)
        self._data_precision = 0.5 * (self._data_precision + self._data_precision.T)

        self.location_ = (
            self.data_mean_.copy()
            if self.location is None
            else np.broadcast_to(np.asarray(self.location, dtype=float), (D,)).copy()
        )
        self.precision_scaling_ = (
            1.0 if self.precision_scaling is None else float(self.precision_scaling)
        )
        self.dof_ = float(D) if self.dof is None else float(self.dof)
        if self.scale is None:
            self.scale_ = self.data_covariance_.copy()
        else:
            scale = np.asarray(self.scale, dtype=float)
            self.scale_ = scale * np.eye(D) if scale.ndim == 0 else scale.reshape(D, D).copy()
        self._refresh()

    @staticmethod
    def _regularised(cov):
        """The data covariance, with a tiny ridge only if it is singular."""
        cov = 0.5 * (cov + cov.T)
        diag = np.diag(cov).copy()
        top = diag.max() if diag.size and diag.max() > 0 else 1.0
        for ridge in (0.0, 1e-10, 1e-8, 1e-6, 1e-4):
            candidate = cov + ridge * top * np.eye(cov.shape[0])
            try:
                L = np.linalg.cholesky(candidate)
            except np.linalg.LinAlgError:
                continue
            if np.min(np.diag(L)) > 1e-7 * math.sqrt(top):
                return candidate
        return cov + 1e-2 * top * np.eye(cov.shape[0])

    def _refresh(self) -> None:
        """Check the hyperparameters and cache what the densities need."""
        D = self.n_features
        if not (self.precision_scaling_ > 0 and math.isfinite(self.precision_scaling_)):
            raise ValueError(f"precision_scaling must be > 0, got {self.precision_scaling_}.")
        if not (self.dof_ > D - 1 and math.isfinite(self.dof_)):
            raise ValueError(f"dof must be > n_features - 1 = {D - 1}, got {self.dof_}.")
        self.scale_ = 0.5 * (self.scale_ + self.scale_.T)
        self._prior_matrix = self.dof_ * self.scale_  # beta W
        self._prior_chol = _cholesky(self._prior_matrix, "scale matrix W")
        self._prior_logdet = 2.0 * float(np.sum(np.log(np.diag(self._prior_chol))))
        self._version += 1

    def _check_fitted(self):
        if self.n_features is None:
            raise RuntimeError("NormalWishartBase.initialize(X, rng) must be called first.")

    # ------------------------------------------------------------ hyperparameters
    def hyperparameters(self) -> dict:
        """Copies of ``{"location": xi, "precision_scaling": rho, "dof": beta, "scale": W}``."""
        self._check_fitted()
        return {
            "location": self.location_.copy(),
            "precision_scaling": float(self.precision_scaling_),
            "dof": float(self.dof_),
            "scale": self.scale_.copy(),
        }

    def set_hyperparameters(self, values: dict) -> None:
        """Set the hyperparameters from a dict as returned by :meth:`hyperparameters`."""
        self._check_fitted()
        D = self.n_features
        self.location_ = np.asarray(values["location"], dtype=float).reshape(D).copy()
        self.precision_scaling_ = float(values["precision_scaling"])
        self.dof_ = float(values["dof"])
        self.scale_ = np.asarray(values["scale"], dtype=float).reshape(D, D).copy()
        self._refresh()

    def kernel_hyperparameters(self, n_max=0):
        """The hyperparameters as the numba kernels take them: ``(xi, rho, beta,
        chol(beta W), log|beta W|, gamma_ratio)``, with ``gamma_ratio`` tabulated for
        clusters of up to ``n_max`` rows (see ``_normal_wishart_kernels.make_prior``)."""
        self._check_fitted()
        return make_prior(
            self.location_, self.precision_scaling_, self.dof_, self._prior_chol,
            self._prior_logdet, int(n_max) + 1,
        )

    def update_hyperparameters(self, params, rng) -> None:
        """Gibbs-update ``W, beta, xi, rho`` given the active components (eqs. 3.61-3.62).

        With ``K`` components ``(mu_k, S_k)``:

        * ``W | beta, S ~ Wishart(D + K beta, (D Sigma_x^-1 + beta sum_k S_k)^-1)``;
        * ``beta``: slice sampling of ``log(beta - D + 1)`` from
          ``p(beta) prod_k Wishart(S_k; beta, (beta W)^-1)`` (not a standard form);
        * ``xi | rho, mu, S ~ N(P^-1 h, P^-1)`` with ``P = Sigma_x^-1 + rho sum_k S_k``,
          ``h = Sigma_x^-1 mu_x + rho sum_k S_k mu_k``;
        * ``rho | xi, mu, S ~ Gamma(1/2 + K D/2, rate 1/2 + 1/2 sum_k (mu_k - xi)^T S_k
          (mu_k - xi))``.

        Does nothing if ``sample_hyperparameters`` is False.

        Parameters
        ----------
        params : dict
            ``"means"`` (K, D) and ``"precisions"`` (K, D, D) of the active components.
        rng : numpy.random.Generator
        """
        self._check_fitted()
        if not self.sample_hyperparameters:
            return
        D = self.n_features
        means = np.asarray(params["means"], dtype=float).reshape(-1, D)
        precisions = np.asarray(params["precisions"], dtype=float).reshape(-1, D, D)
        K = means.shape[0]
        sum_S = precisions.sum(axis=0) if K else np.zeros((D, D))

        # W | beta, S: the Wishart(D, Sigma_x / D) prior times K Wishart likelihoods.
        P = D * self._data_precision + self.dof_ * sum_S
        W = np.empty((D, D))
        wishart_bartlett(D + K * self.dof_, _cholesky(P, "W's conditional precision"), rng, W)
        self.scale_ = W

        # beta | W, S by slice sampling u = log(beta - D + 1).
        log_density = self._dof_log_conditional(self.scale_, precisions)
        u = slice_sample(log_density, math.log(self.dof_ - D + 1.0), rng, width=1.0)
        self.dof_ = D - 1.0 + math.exp(u)

        # xi | rho, mu, S.
        P = self._data_precision + self.precision_scaling_ * sum_S
        h = self._data_precision @ self.data_mean_
        if K:
            h = h + self.precision_scaling_ * np.einsum("kij,kj->i", precisions, means)
        L = _cholesky(P, "xi's conditional precision")
        mean = solve_lower_transpose(L, solve_lower(L, h))
        self.location_ = mean + solve_lower_transpose(L, rng.standard_normal(D))

        # rho | xi, mu, S.
        resid = means - self.location_
        # each term is >= 0; clip the rounding of nearly singular precisions
        quad = float(np.maximum(np.einsum("ki,kij,kj->k", resid, precisions, resid), 0).sum())
        shape = _RHO_PRIOR[0] + 0.5 * K * D
        rate_rho = _RHO_PRIOR[1] + 0.5 * quad
        self.precision_scaling_ = float(rng.gamma(shape, 1.0 / rate_rho))
        self._refresh()

    def _dof_log_conditional(self, W, precisions):
        """``log p(u | W, S_1..K) + const`` as a function of ``u = log(beta - D + 1)``:
        ``p(beta) prod_k Wishart(S_k; beta, (beta W)^-1)`` times the Jacobian ``e^u``, with
        ``1/(beta - D + 1) ~ Gamma(1, rate D)`` (eq. 3.61)."""
        D = self.n_features
        K = precisions.shape[0]
        sum_S = precisions.sum(axis=0) if K else np.zeros((D, D))
        # slogdet (LU) copes with the nearly singular precisions that small beta can draw;
        # the floor is 700 nats below the data precision's log-determinant (an absolute
        # floor would bind for data scaled by 2**166 with D = 5 and change the fit)
        floor = self._data_logdet_precision - 700.0
        sum_logdet_S = (
            float(np.sum(np.maximum(np.linalg.slogdet(precisions)[1], floor))) if K else 0.0
        )
        logdet_W = _logdet_from_chol(_cholesky(W, "scale matrix W"))
        trace_WS = float(np.sum(W * sum_S))
        rate = _DOF_PRIOR_RATE_PER_DIM * D

        def log_density(u):
            if u > 700.0 or u < -700.0:
                return -math.inf
            beta = D - 1.0 + math.exp(u)
            # prior of u: y = exp(-u) ~ Gamma(a, rate) with the Jacobian, -a u - rate e^-u
            log_p = -_DOF_PRIOR_SHAPE * u - rate * math.exp(-u)
            if K:
                log_p += K * (
                    0.5 * beta * (D * math.log(beta) + logdet_W)
                    - 0.5 * beta * D * math.log(2.0)
                    - _log_mvgamma(0.5 * beta, D)
                )
                log_p += 0.5 * (beta - D - 1.0) * sum_logdet_S - 0.5 * beta * trace_WS
            return log_p

        return log_density

    # ------------------------------------------------------------ posteriors
    def _check_rows(self, X):
        self._check_fitted()
        X = np.asarray(X, dtype=float)
        if X.ndim == 1 and self.n_features == 1 and X.size > 0:
            X = X[:, None]
        return X.reshape(-1, self.n_features)

    def posterior_statistics(self, X_k):
        """``(n, xi*, W*)`` of a component with rows ``X_k`` (see the module docstring)."""
        X_k = self._check_rows(X_k)
        n = X_k.shape[0]
        if n == 0:
            return 0, self.location_.copy(), self._prior_matrix.copy()
        rho = self.precision_scaling_
        kappa = rho + n
        xbar = X_k.mean(axis=0)
        centred = X_k - xbar
        diff = xbar - self.location_
        W_star = self._prior_matrix + centred.T @ centred + (rho * n / kappa) * np.outer(diff, diff)
        mean = (rho * self.location_ + n * xbar) / kappa
        return n, mean, 0.5 * (W_star + W_star.T)

    def posterior_statistics_from_sums(self, n, total, scatter, shift):
        """``(n, xi*, W*)`` of a component from sums over its rows instead of the rows.

        Parameters
        ----------
        n : int
            Rows in the component.
        total : ndarray of shape (n_features,)
            ``sum (x - shift)`` over its rows.
        scatter : ndarray of shape (n_features, n_features)
            ``sum (x - shift)(x - shift)^T`` (the lower triangle is read).
        shift : ndarray of shape (n_features,)
            The constant subtracted from every row (e.g. the data mean, which keeps the
            sums of squares well conditioned).

        Returns
        -------
        n, mean, W_star : as :meth:`posterior_statistics`.
        """
        self._check_fitted()
        if n == 0:
            return 0, self.location_.copy(), self._prior_matrix.copy()
        rho = self.precision_scaling_
        kappa = rho + n
        scatter = np.tril(scatter) + np.tril(scatter, -1).T
        centred = scatter - np.outer(total, total) / n
        xbar = total / n + shift
        diff = xbar - self.location_
        W_star = self._prior_matrix + centred + (rho * n / kappa) * np.outer(diff, diff)
        mean = (rho * self.location_ + n * xbar) / kappa
        return n, mean, 0.5 * (W_star + W_star.T)

    def log_marginal_from_statistics(self, n, W_star) -> float:
        """``log p(X_k)`` of a component with ``n`` rows and posterior scale ``W*`` (as
        :meth:`log_marginal`, from what :meth:`posterior_statistics_from_sums` gives)."""
        self._check_fitted()
        return self._log_marginal(n, W_star, _log_mvgamma)

    def _log_marginal(self, n, W_star, log_mvgamma) -> float:
        # ``log_mvgamma``: SciPy's multigammaln (log_marginal, whose values the fits of
        # the collapsed samplers are pinned to) or the faster _log_mvgamma.
        if n == 0:
            return 0.0
        D = self.n_features
        rho, beta = self.precision_scaling_, self.dof_
        logdet = _logdet_from_chol(_cholesky(W_star, "W*"))
        return float(
            -0.5 * n * D * math.log(math.pi)
            + 0.5 * D * (math.log(rho) - math.log(rho + n))
            + log_mvgamma(0.5 * (beta + n), D)
            - log_mvgamma(0.5 * beta, D)
            + 0.5 * beta * self._prior_logdet
            - 0.5 * (beta + n) * logdet
        )

    def log_predictive(self, X_new, X_k) -> np.ndarray:
        """``log p(x | X_k)``: the multivariate Student-t of eq. 3.65, one value per row.

        Parameters
        ----------
        X_new : array-like of shape (n_new, n_features)
        X_k : array-like of shape (n_k, n_features)
            The component's rows (may be empty: the prior predictive).

        Returns
        -------
        ndarray of shape (n_new,)
        """
        X_new = self._check_rows(X_new)
        n, mean, W_star = self.posterior_statistics(X_k)
        return self._student_t(X_new, n, mean, _cholesky(W_star, "W*"))

    def log_predictive_from_sums(self, X_new, n, total, scatter, shift) -> np.ndarray:
        """:meth:`log_predictive` from a component's sums (as
        :meth:`posterior_statistics_from_sums`) instead of its rows."""
        X_new = self._check_rows(X_new)
        n, mean, W_star = self.posterior_statistics_from_sums(int(n), total, scatter, shift)
        return self._student_t(X_new, n, mean, _cholesky(W_star, "W*"))

    def _student_t(self, X_new, n, mean, L):
        D = self.n_features
        kappa = self.precision_scaling_ + n
        nu = self.dof_ + n
        logdet = 2.0 * float(np.sum(np.log(np.diag(L))))
        z = solve_triangular(L, (X_new - mean).T, lower=True)
        r = np.sum(z * z, axis=0)
        c = kappa / (kappa + 1.0)
        const = (
            -0.5 * D * math.log(math.pi)
            + 0.5 * D * math.log(c)
            + gammaln(0.5 * (nu + 1.0))
            - gammaln(0.5 * (nu + 1.0 - D))
            - 0.5 * logdet
        )
        return const - 0.5 * (nu + 1.0) * np.log1p(c * r)

    def log_prior_predictive(self, X) -> np.ndarray:
        """``log int N(x | mu, S^-1) dG_0(mu, S)`` per row (eq. 3.64b): the Student-t of
        eq. 3.65 with no rows."""
        X = self._check_rows(X)
        return self._student_t(X, 0, self.location_, self._prior_chol)

    def log_marginal(self, X_k) -> float:
        """``log p(X_k)`` of one component's rows, parameters integrated out (module doc)."""
        X_k = self._check_rows(X_k)
        n, _, W_star = self.posterior_statistics(X_k)
        return self._log_marginal(n, W_star, multigammaln)

    def sample_posterior_from_statistics(self, n, mean, chol_W_star, rng):
        """A posterior draw ``(mu, S)`` of a component from its statistics: ``n`` rows,
        ``xi*`` and the lower Cholesky factor of ``W*`` (what the collapsed kernels keep)."""
        self._check_fitted()
        return self._draw(n, np.asarray(mean, dtype=float), np.asarray(chol_W_star), rng)

    def _draw(self, n, mean, L, rng):
        """``S ~ Wishart(beta + n, W*^-1)``, ``mu ~ N(xi*, ((rho + n) S)^-1)`` given
        ``L L^T = W*``: with Bartlett's ``A``, ``S = (L^-T A)(L^-T A)^T`` and
        ``S^-1 = (L A^-T)(L A^-T)^T``."""
        D = self.n_features
        mu, S = np.empty(D), np.empty((D, D))
        draw_normal_wishart(
            float(n), np.ascontiguousarray(mean, dtype=np.float64),
            np.ascontiguousarray(L, dtype=np.float64), float(self.precision_scaling_),
            float(self.dof_), rng, mu, S,
        )
        return mu, S

    def sample_prior(self, n, rng) -> dict:
        """``n`` independent draws ``(mu_k, S_k)`` from ``G_0`` (eqs. 3.57-3.58)."""
        self._check_fitted()
        D = self.n_features
        means = np.empty((int(n), D))
        precisions = np.empty((int(n), D, D))
        draw_normal_wishart_many(
            int(n), np.ascontiguousarray(self.location_, dtype=np.float64),
            np.ascontiguousarray(self._prior_chol, dtype=np.float64),
            float(self.precision_scaling_), float(self.dof_), rng, means, precisions,
        )
        return {"means": means, "precisions": precisions}

    def sample_posterior(self, X_k, rng, params_k=None) -> dict:
        """An exact draw of one component's ``(mu, S)`` given its rows (conjugacy).

        Returns ``{"means": (1, D), "precisions": (1, D, D)}``; ``params_k`` is ignored.
        """
        n, mean, W_star = self.posterior_statistics(X_k)
        mu, S = self._draw(n, mean, _cholesky(W_star, "W*"), rng)
        return {"means": mu[None], "precisions": S[None]}

    def sample_posterior_all(self, X, labels, n_clusters, rng, params=None) -> dict:
        """Exact draws for every cluster, ``k = 0, ..., n_clusters - 1``, one by one."""
        self._check_fitted()
        X = self._check_rows(X)
        labels = np.asarray(labels)
        D = self.n_features
        order = np.argsort(labels, kind="stable")
        bounds = np.searchsorted(labels[order], np.arange(int(n_clusters) + 1))
        means = np.empty((int(n_clusters), D))
        precisions = np.empty((int(n_clusters), D, D))
        for k in range(int(n_clusters)):
            draw = self.sample_posterior(X[order[bounds[k] : bounds[k + 1]]], rng)
            means[k], precisions[k] = draw["means"][0], draw["precisions"][0]
        return {"means": means, "precisions": precisions}

    def log_likelihood(self, X, params) -> np.ndarray:
        """``log N(x_i | mu_k, S_k^-1)``, shape (n_samples, n_components)."""
        X = self._check_rows(X)
        means = np.asarray(params["means"], dtype=float).reshape(-1, self.n_features)
        precisions = np.asarray(params["precisions"], dtype=float)
        precisions = precisions.reshape(-1, self.n_features, self.n_features)
        out = np.empty((X.shape[0], means.shape[0]))
        for k in range(means.shape[0]):
            L = _cholesky(precisions[k], "precision")
            proj = (X - means[k]) @ L  # (x - mu)^T S (x - mu) = |L^T (x - mu)|^2
            out[:, k] = (
                -0.5 * self.n_features * math.log(2.0 * math.pi)
                + float(np.sum(np.log(np.diag(L))))
                - 0.5 * np.sum(proj * proj, axis=1)
            )
        return out
