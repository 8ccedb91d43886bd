"""The linear-Gaussian likelihood ``X = Z A + E`` (Doshi-Velez 2009, appendix A.1).

``A_kd ~ N(0, sigma_a^2)`` and ``E_nd ~ N(0, sigma_x^2)``, all independent. ``A`` integrates
out in closed form (eq. A.2), and its posterior given ``(Z, X)`` is Gaussian (eq. A.3), shared
across the columns of ``A`` when ``X`` is complete. This module is the plain-NumPy reference;
the rank-one moves the samplers use live in :mod:`._linear_gaussian_kernels`.

Missing entries (NaN) are masked per dimension: column ``d`` of ``X`` only sees the rows where
it is observed, so its posterior and marginal are those of a smaller regression. No value is
ever filled in.

:class:`LinearGaussianFeatures` is the same model behind the explicit-feature contract
(:class:`._feature_base.FeatureLikelihood`) that samplers keeping ``A`` use; there the
missing entries are given by an ``observed`` mask instead of NaN.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg.lapack import dpotrf, dpotrs, dtrtrs
from scipy.special import expit, logsumexp
from sklearn.utils import check_random_state

from ._feature_base import FeatureLikelihood
from ._linear_gaussian_kernels import add_row_to_posterior, remove_row_from_posterior
from ._observation_kernels import OBSERVE_GAUSSIAN, PRIOR_GAUSSIAN

__all__ = [
    "LinearGaussianFeatures",
    "add_row_to_posterior",
    "feature_posterior",
    "information_form",
    "log_marginal_likelihood",
    "log_marginal_likelihood_from_stats",
    "remove_row_from_posterior",
    "row_log_predictive",
    "sample_features",
]

_LOG_2PI = np.log(2.0 * np.pi)


def information_form(X, Z, sigma_x: float, sigma_a: float):
    """Precision and shift of the feature posterior (information form of eq. A.3).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_dims)
        Complete data (no NaN).
    Z : ndarray of shape (n_samples, n_features)
        Binary feature matrix.
    sigma_x, sigma_a : float
        Noise and feature standard deviations.

    Returns
    -------
    precision : ndarray of shape (n_features, n_features)
        ``P = Z^T Z / sigma_x^2 + I / sigma_a^2``.
    shift : ndarray of shape (n_features, n_dims)
        ``h = Z^T X / sigma_x^2``; the posterior mean is ``P^{-1} h``.
    """
    Z = np.asarray(Z, dtype=float)
    X = np.asarray(X, dtype=float)
    sx2 = sigma_x**2
    precision = Z.T @ Z / sx2 + np.eye(Z.shape[1]) / sigma_a**2
    return precision, Z.T @ X / sx2


def _observed_groups(mask):
    """Group the columns of a boolean observed-mask by identical pattern."""
    if mask.all():
        return [(np.ones(mask.shape[0], dtype=bool), np.arange(mask.shape[1]))]
    patterns, inverse = np.unique(mask.T, axis=0, return_inverse=True)
    inverse = np.ravel(inverse)
    return [(patterns[g], np.flatnonzero(inverse == g)) for g in range(len(patterns))]


def _cholesky_lower(matrix):
    """Lower Cholesky factor of a symmetric positive definite matrix, by LAPACK's ``potrf``.

    The same call as ``scipy.linalg.cho_factor(matrix, lower=True)`` (so the same bits),
    without its argument checks and batching wrapper, which on the small matrices of the
    collapsed moves (split-merge, complement) cost several times the factorisation. Only
    the lower triangle of the result is meaningful.
    """
    chol, info = dpotrf(matrix, lower=1, clean=0)
    if info > 0:
        raise np.linalg.LinAlgError(
            f"{info}-th leading minor of the array is not positive definite")
    return chol


def log_marginal_likelihood_from_stats(
    gram, cross, sq_norm: float, n_samples: int, n_dims: int, sigma_x: float, sigma_a: float
) -> float:
    """Collapsed ``log p(X | Z)`` (eq. A.2) from sufficient statistics.

    Parameters
    ----------
    gram : ndarray of shape (n_features, n_features)
        ``Z^T Z``.
    cross : ndarray of shape (n_features, n_dims)
        ``Z^T X``.
    sq_norm : float
        ``tr(X^T X)``.
    n_samples, n_dims : int
        Rows and columns of ``X``.
    sigma_x, sigma_a : float
        Noise and feature standard deviations.

    Returns
    -------
    float
        ``-ND/2 log 2pi - (N-K)D log s_x - KD log s_a - D/2 log|M|
        - (tr(X^T X) - tr(C^T M^{-1} C)) / (2 s_x^2)`` with ``M = Z^T Z + s_x^2/s_a^2 I``
        and ``C = Z^T X``.
    """
    n_features = gram.shape[0]
    sx2 = sigma_x**2
    log_p = -0.5 * n_samples * n_dims * _LOG_2PI
    log_p -= (n_samples - n_features) * n_dims * np.log(sigma_x)
    log_p -= n_features * n_dims * np.log(sigma_a)
    quad = sq_norm
    if n_features:
        chol = _cholesky_lower(gram + (sx2 / sigma_a**2) * np.eye(n_features))
        log_p -= n_dims * np.sum(np.log(np.diag(chol)))
        quad -= float(np.sum(cross * dpotrs(chol, cross, lower=1)[0]))
    return float(log_p - 0.5 * quad / sx2)


def log_marginal_likelihood(X, Z, sigma_x: float, sigma_a: float) -> float:
    """Collapsed log likelihood ``log p(X | Z)`` with ``A`` integrated out (eq. A.2).

    NaN entries of ``X`` are masked per dimension: the result is the log density of the
    observed entries only.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_dims)
        Data, NaN for missing entries.
    Z : ndarray of shape (n_samples, n_features)
        Binary feature matrix.
    sigma_x, sigma_a : float
        Noise and feature standard deviations.

    Returns
    -------
    float
    """
    X = np.asarray(X, dtype=float)
    Z = np.asarray(Z, dtype=float)
    observed = ~np.isnan(X)
    total = 0.0
    for rows, cols in _observed_groups(observed):
        Zo = Z[rows]
        Xo = X[np.ix_(rows, cols)]
        total += log_marginal_likelihood_from_stats(
            Zo.T @ Zo, Zo.T @ Xo, float(np.sum(Xo**2)), Zo.shape[0], len(cols), sigma_x, sigma_a
        )
    return total


def feature_posterior(X, Z, sigma_x: float, sigma_a: float):
    """Posterior mean and covariance of the features ``A`` given ``(Z, X)`` (eq. A.3).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_dims)
        Data, NaN for missing entries (masked per dimension).
    Z : ndarray of shape (n_samples, n_features)
        Binary feature matrix.
    sigma_x, sigma_a : float
        Noise and feature standard deviations.

    Returns
    -------
    mean : ndarray of shape (n_features, n_dims)
    cov : ndarray of shape (n_features, n_features) or (n_dims, n_features, n_features)
        Covariance of each column ``A[:, d]``: one matrix shared by all columns when ``X``
        is complete, one per column when entries are missing.
    """
    X = np.asarray(X, dtype=float)
    Z = np.asarray(Z, dtype=float)
    n_features, n_dims = Z.shape[1], X.shape[1]
    observed = ~np.isnan(X)
    if n_features == 0:
        cov_shape = (0, 0) if observed.all() else (n_dims, 0, 0)
        return np.zeros((0, n_dims)), np.zeros(cov_shape)
    if observed.all():
        precision, shift = information_form(X, Z, sigma_x, sigma_a)
        chol = _cholesky_lower(precision)
        return dpotrs(chol, shift, lower=1)[0], dpotrs(chol, np.eye(n_features), lower=1)[0]
    groups = _observed_groups(observed)
    mean = np.zeros((n_features, n_dims))
    covs = np.empty((n_dims, n_features, n_features))
    for rows, cols in groups:
        precision, shift = information_form(X[np.ix_(rows, cols)], Z[rows], sigma_x, sigma_a)
        chol = _cholesky_lower(precision)
        mean[:, cols] = dpotrs(chol, shift, lower=1)[0]
        covs[cols] = dpotrs(chol, np.eye(n_features), lower=1)[0]
    return mean, covs


def sample_features(X, Z, sigma_x: float, sigma_a: float, random_state=None):
    """Draw ``A ~ p(A | Z, X)`` (eq. A.3) for complete ``X``.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_dims)
        Complete data.
    Z : ndarray of shape (n_samples, n_features)
        Binary feature matrix.
    sigma_x, sigma_a : float
        Noise and feature standard deviations.
    random_state : int, RandomState, Generator or None

    Returns
    -------
    ndarray of shape (n_features, n_dims)
    """
    rng = random_state if isinstance(random_state, np.random.Generator) else check_random_state(
        random_state
    )
    precision, shift = information_form(X, Z, sigma_x, sigma_a)
    return sample_features_from_information(precision, shift, rng)


def sample_features_from_information(precision, shift, rng):
    """Draw ``A`` with columns ``N(P^{-1} h_d, P^{-1})`` given precision ``P`` and shift ``h``."""
    n_features, n_dims = shift.shape
    if n_features == 0:
        return np.zeros((0, n_dims))
    # LAPACK directly: the samplers call this every sweep on small matrices, where the
    # argument checks of scipy.linalg's wrappers cost more than the factorisation.
    chol, info = dpotrf(precision, lower=1, clean=0)
    if info != 0:
        raise np.linalg.LinAlgError("the posterior precision of A is not positive definite")
    mean, _ = dpotrs(chol, shift, lower=1)
    noise = rng.standard_normal((n_features, n_dims))
    # P = L L^T, so L^{-T} eps has covariance P^{-1}.
    spread, _ = dtrtrs(chol, noise, lower=1, trans=1)
    return mean + spread


def row_log_predictive(X, Z, mean, cov, sigma_x: float):
    """Log density of each row given its features and a Gaussian feature posterior.

    ``x_n ~ N(z_n M, (sigma_x^2 + z_n S z_n^T) I)`` over the observed entries of the row
    (the predictive of eq. 4.2 with a window of one row).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_dims)
        Rows, NaN for missing entries.
    Z : ndarray of shape (n_samples, n_features)
        Feature assignments of the rows.
    mean : ndarray of shape (n_features, n_dims)
        Posterior mean of ``A``.
    cov : ndarray of shape (n_features, n_features)
        Posterior covariance of each column of ``A``.
    sigma_x : float
        Noise standard deviation.

    Returns
    -------
    ndarray of shape (n_samples,)
    """
    X = np.asarray(X, dtype=float)
    Z = np.asarray(Z, dtype=float)
    observed = ~np.isnan(X)
    var = sigma_x**2 + np.einsum("nk,kj,nj->n", Z, cov, Z)
    resid = np.where(observed, X - Z @ mean, 0.0)
    n_obs = observed.sum(axis=1)
    return -0.5 * n_obs * (_LOG_2PI + np.log(var)) - 0.5 * np.sum(resid**2, axis=1) / var


# --- The explicit-feature contract ------------------------------------------------------


def _check_feature_data(X, observed):
    """``X`` as float64 and ``observed`` as a boolean mask, after checking their shapes and
    that the observed entries are finite."""
    X = np.asarray(X, dtype=np.float64)
    mask = np.asarray(observed).astype(bool)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-d array, got shape {X.shape}.")
    if mask.shape != X.shape:
        raise ValueError(
            f"observed must have the shape of X {X.shape}, got shape {mask.shape}."
        )
    if not np.all(np.isfinite(X[mask])):
        raise ValueError("X must be finite at its observed entries.")
    return X, mask


def _observed_centred(X, observed):
    """The observed entries of ``X`` minus the observed mean of their column (1-d)."""
    mask = np.asarray(observed).astype(bool)
    counts = mask.sum(axis=0)
    totals = np.where(mask, X, 0.0).sum(axis=0)
    means = totals / np.maximum(counts, 1)
    return (X - means)[mask]


def _observed_residual(X, observed, Z, A):
    """``X - Z A`` at the observed entries and 0 elsewhere."""
    mask = np.asarray(observed).astype(bool)
    pred = np.asarray(Z, dtype=np.float64) @ np.asarray(A, dtype=np.float64)
    return np.where(mask, np.asarray(X, dtype=np.float64) - pred, 0.0), mask


def _rows_by_feature(Z):
    """The rows having each feature in compressed form: the rows of feature ``k`` are
    ``rows[ptr[k]:ptr[k + 1]]`` (int64 arrays), for the element-wise Gibbs kernels."""
    Z = np.asarray(Z)
    features, rows = np.nonzero(Z.T)
    ptr = np.zeros(Z.shape[1] + 1, dtype=np.int64)
    np.cumsum(np.bincount(features, minlength=Z.shape[1]), out=ptr[1:])
    return ptr, rows.astype(np.int64)


def _draw_precision(count: float, sum_sq: float, rng, prior_rate: float = 1.0) -> float:
    """A precision from its posterior under a Gamma(1, ``prior_rate``) prior given
    ``count`` zero-mean Gaussian values with sum of squares ``sum_sq``:
    Gamma(1 + count/2, rate prior_rate + sum_sq/2) (Doshi-Velez 2009, sec. 5.1).

    ``prior_rate`` is a variance: the prior's mean precision is ``1 / prior_rate``. The
    estimators pass the data's mean square, so that the prior is Gamma(1, 1) in units of
    the data's own scale and a fit does not depend on the units of ``X`` (in the spirit
    of Rasmussen's data-dependent priors, Görür 2007, sec. 3.3.1).
    """
    return float(rng.gamma(1.0 + 0.5 * count, 1.0 / (prior_rate + 0.5 * sum_sq)))


class _GaussianNoise(FeatureLikelihood):
    """Shared part of the real-valued models ``x_n = z_n A + e_n``, ``e_nd ~ N(0, s_x^2)``
    (Doshi-Velez 2009, appendix A.1-A.2): data checks, predictions and the observation density.

    ``params["sigma_x"]`` is the noise standard deviation.
    """

    observation_kind = OBSERVE_GAUSSIAN
    #: Variance ``v`` of the data's scale: the precisions have Gamma(1, v) priors (mean
    #: ``1 / v``). 1 is the Gamma(1, 1) of Doshi-Velez 2009, sec. 5.1; the estimators set it to the
    #: mean square of the data they model so that a fit does not depend on their units.
    prior_variance: float = 1.0

    def check_data(self, X, observed) -> None:
        """Raise ``ValueError`` naming ``X`` unless ``X`` is 2-d, ``observed`` has its
        shape, and the observed entries are finite."""
        _check_feature_data(X, observed)

    def noise_array(self, params, n_dims: int) -> np.ndarray:
        """Row 0 holds the noise variance ``sigma_x^2`` for every dimension, row 1 its
        logarithm (so that the kernels take no logarithm per entry)."""
        noise = np.empty((2, n_dims))
        noise[0] = float(params["sigma_x"]) ** 2
        noise[1] = np.log(noise[0])
        return noise

    def row_log_likelihood(self, X, observed, Z, A, params) -> np.ndarray:
        """``sum_d log N(x_nd; (z_n A)_d, sigma_x^2)`` over the observed entries of each
        row, shape (n_samples,)."""
        resid, mask = _observed_residual(X, observed, Z, A)
        var = float(params["sigma_x"]) ** 2
        n_obs = mask.sum(axis=1)
        return -0.5 * (n_obs * (_LOG_2PI + np.log(var)) + np.sum(resid**2, axis=1) / var)

    def predict(self, Z, A, params) -> np.ndarray:
        """The mean of the data, ``Z A``, shape (n_samples, n_dims)."""
        return np.asarray(Z, dtype=np.float64) @ np.asarray(A, dtype=np.float64)

    def sample_data(self, Z, A, params, rng) -> np.ndarray:
        """``Z A + E`` with ``E_nd ~ N(0, sigma_x^2)``."""
        mean = self.predict(Z, A, params)
        return mean + float(params["sigma_x"]) * rng.standard_normal(mean.shape)

    # -- new rows, features held fixed (transform and score_samples of the estimators) --
    def pattern_log_predictive(self, X, observed, patterns, mean, cov, params, rate=None,
                               n_new_max=0) -> np.ndarray:
        """``log p(x_n,obs | z)`` for every row and every binary pattern ``z`` (rows of
        ``patterns``), the features at their Gaussian posterior ``N(mean, cov)`` (shared
        by the columns), ``sigma_x = params["sigma_x"]``:
        ``x_n,obs ~ N(z mean, (sigma_x^2 + z cov z^T) I)`` (Griffiths and
        Ghahramani 2011, sec. 4.1, with ``A`` integrated out against its posterior).

        With ``n_new_max > 0`` it also sums over up to that many new features of the row,
        ``Poisson(rate_n)`` of them, each adding ``params["sigma_a"]^2`` to the variance, as a log
        predictive density; with a ``rate`` the result includes the Poisson probability
        of the row's new features (``exp(-rate_n)`` for none), with ``rate=None`` it is the
        likelihood of the pattern alone. ``cov`` of zeros holds the features at ``mean``.
        ``X`` may hold any finite value where ``observed`` is False. Shape
        (n_rows, n_patterns).
        """
        sx2 = float(params["sigma_x"]) ** 2
        sa2 = float(params["sigma_a"]) ** 2 if n_new_max else 0.0
        pattern_means = patterns @ mean  # (P, D)
        var = sx2 + np.einsum("pk,kj,pj->p", patterns, cov, patterns)
        X0 = np.where(observed, X, 0.0)
        n_obs = observed.sum(axis=1)[:, None].astype(float)
        # ||x_o - (zM)_o||^2 = ||x_o||^2 - 2 x_o.(zM) + ||(zM)_o||^2
        sq = (
            np.sum(X0**2, axis=1)[:, None]
            - 2.0 * X0 @ pattern_means.T
            + observed.astype(float) @ (pattern_means**2).T
        )
        if rate is None:  # no new features: the plain likelihood of each pattern
            if n_new_max:
                raise ValueError("n_new_max > 0 needs the rate of new features, rate.")
            return -0.5 * n_obs * (_LOG_2PI + np.log(var[None, :])) - 0.5 * sq / var[None, :]
        rate = np.asarray(rate, dtype=float)[:, None]
        terms = []
        for j in range(n_new_max + 1):
            v = var[None, :] + j * sa2
            log_poisson = j * np.log(rate) - rate - np.sum(np.log(np.arange(1, j + 1)))
            terms.append(log_poisson - 0.5 * n_obs * (_LOG_2PI + np.log(v)) - 0.5 * sq / v)
        return terms[0] if n_new_max == 0 else logsumexp(np.stack(terms), axis=0)

    def mean_field(self, X, observed, log_odds, A, params, n_steps=50) -> np.ndarray:
        """Deterministic mean-field ``q(z_nk = 1)`` of new rows, features held at ``A``.

        Coordinate ascent, one feature at a time for all rows at once, ``n_steps`` times
        (a fixed count: a convergence test over the batch would tie rows together);
        ``log_odds`` (n_rows, n_features) is the prior's. Shape (n_rows, n_features).
        """
        M = np.ascontiguousarray(A)
        sx2 = float(params["sigma_x"]) ** 2
        observed = np.asarray(observed, dtype=bool).astype(float)
        X0 = np.where(observed > 0, X, 0.0)
        q = expit(log_odds)
        # Residual x - q M over the observed entries, kept current feature by feature so
        # a step costs O(N K D) rather than rebuilding q M for every feature.
        resid = (X0 - q @ M) * observed
        half_sq_norms = 0.5 * observed @ (M**2).T  # (N, K): observed part of |M_k|^2 / 2
        for _ in range(n_steps):
            for k in range(M.shape[0]):
                resid += np.outer(q[:, k], M[k]) * observed  # take feature k out
                gain = (resid @ M[k] - half_sq_norms[:, k]) / sx2
                # expit, not 1 / (1 + exp(-t)): t is far below -700 for small sigma_x.
                q[:, k] = expit(log_odds[:, k] + gain)
                resid -= np.outer(q[:, k], M[k]) * observed
        return q

    def _sample_noise(self, X, observed, Z, A, rng) -> float:
        """``sigma_x`` drawn given the observed residuals (Gamma(1, ``prior_variance``)
        prior on ``1 / sigma_x^2``, Doshi-Velez 2009, sec. 5.1)."""
        resid, mask = _observed_residual(X, observed, Z, A)
        precision = _draw_precision(mask.sum(), float(np.sum(resid**2)), rng,
                                    self.prior_variance)
        return float(1.0 / np.sqrt(precision))


class LinearGaussianFeatures(_GaussianNoise):
    """The linear-Gaussian model with explicit features (Doshi-Velez 2009, appendix A.1).

    ``x_n = z_n A + e_n`` with ``a_kd ~ N(0, sigma_a^2)`` and ``e_nd ~ N(0, sigma_x^2)``.
    Parameters: ``params = {"sigma_x": float, "sigma_a": float}`` (standard deviations),
    with Gamma(1, 1) priors on the precisions ``1 / sigma_x^2`` and ``1 / sigma_a^2``
    (Doshi-Velez 2009, sec. 5.1).

    The posterior of ``A`` given ``(X, Z)`` is Gaussian (eq. A.3), so
    :meth:`sample_features` draws it exactly rather than element by element.
    """

    name = "gaussian"
    prior_kind = PRIOR_GAUSSIAN
    parameter_names = ("sigma_x", "sigma_a")

    def initial_parameters(self, X, observed) -> dict:
        """``sigma_x`` = standard deviation of the observed entries after centring each
        column on its observed mean (1 when that is zero), ``sigma_a = 0.75 sigma_x``."""
        X, mask = _check_feature_data(X, observed)
        centred = _observed_centred(X, mask)
        scale = float(np.std(centred)) if centred.size else 0.0
        if not scale > 0.0:
            scale = 1.0
        return {"sigma_x": scale, "sigma_a": 0.75 * scale}

    def prior_array(self, params) -> np.ndarray:
        """``[sigma_a]``: the feature prior's standard deviation."""
        return np.array([float(params["sigma_a"])])

    def sample_prior_features(self, n_features: int, n_dims: int, params, rng) -> np.ndarray:
        """``a_kd ~ N(0, sigma_a^2)``, shape (n_features, n_dims)."""
        return float(params["sigma_a"]) * rng.standard_normal((n_features, n_dims))

    def sample_features(self, X, observed, Z, A, params, rng) -> np.ndarray:
        """An exact draw of ``A`` from its Gaussian posterior given ``(X, Z)`` (eq. A.3).

        Column ``d`` of ``A`` sees only the rows where ``x_nd`` is observed; columns with
        the same observed pattern share one Cholesky factor. ``A`` (the current value) is
        not used. When every entry is observed there is one group and no sub-arrays are
        copied (the samplers call this every sweep, mostly on small complete problems); the
        draw is the same as through the grouped path.
        """
        X = np.asarray(X, dtype=np.float64)
        Z = np.asarray(Z, dtype=np.float64)
        observed = np.asarray(observed)
        n_features, n_dims = Z.shape[1], X.shape[1]
        if n_features == 0:
            return np.zeros((0, n_dims))
        sigma_x, sigma_a = float(params["sigma_x"]), float(params["sigma_a"])
        if observed.all():
            precision, shift = information_form(X, Z, sigma_x, sigma_a)
            return sample_features_from_information(precision, shift, rng)
        mask = observed.astype(bool)
        new = np.zeros((n_features, n_dims))
        for rows, cols in _observed_groups(mask):
            precision, shift = information_form(
                X[np.ix_(rows, cols)], Z[rows], sigma_x, sigma_a
            )
            new[:, cols] = sample_features_from_information(precision, shift, rng)
        return new

    def sample_parameters(self, X, observed, Z, A, params, rng) -> dict:
        """``sigma_x`` given the observed residuals, then ``sigma_a`` given ``A``:
        ``1 / sigma_x^2 ~ Gamma(1 + n_obs / 2, v + sum r^2 / 2)`` and
        ``1 / sigma_a^2 ~ Gamma(1 + K D / 2, v + sum A^2 / 2)`` (shape, rate; sec. 5.1),
        with ``v`` = :attr:`prior_variance`."""
        A = np.asarray(A, dtype=np.float64)
        sigma_x = self._sample_noise(X, observed, Z, A, rng)
        precision_a = _draw_precision(A.size, float(np.sum(A**2)), rng, self.prior_variance)
        return {**params, "sigma_x": sigma_x, "sigma_a": float(1.0 / np.sqrt(precision_a))}

    def log_prior_features(self, A, params) -> float:
        """``sum_kd log N(a_kd; 0, sigma_a^2)``."""
        A = np.asarray(A, dtype=np.float64)
        var = float(params["sigma_a"]) ** 2
        return float(-0.5 * (A.size * (_LOG_2PI + np.log(var)) + np.sum(A**2) / var))
