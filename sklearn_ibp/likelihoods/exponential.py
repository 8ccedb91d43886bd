"""The exponential-Gaussian likelihood ``X = Z A + E`` with non-negative features (Doshi-Velez 2009,
appendix A.2, and the continuous-data model of sec. 7.3).

``a_kd ~ Exponential(rate)`` and ``e_nd ~ N(0, sigma_x^2)``. ``A`` cannot be integrated out,
so samplers keep it explicit; each ``a_kd`` given the rest is a Gaussian truncated to
``[0, inf)``, drawn element by element in :mod:`._exponential_kernels`. Since features
cannot cancel each other, the posterior has fewer local optima than the linear-Gaussian one.
"""

from __future__ import annotations

import numpy as np

from ._exponential_kernels import sweep_nonnegative_features
from ._observation_kernels import PRIOR_EXPONENTIAL
from .linear_gaussian import (
    _check_feature_data,
    _GaussianNoise,
    _observed_centred,
    _observed_residual,
    _rows_by_feature,
)

__all__ = ["ExponentialGaussian"]


class ExponentialGaussian(_GaussianNoise):
    """The exponential-Gaussian model (Doshi-Velez 2009, appendix A.2, sec. 7.3).

    ``x_n = z_n A + e_n`` with ``a_kd ~ Exponential(rate)`` (non-negative features) and
    ``e_nd ~ N(0, sigma_x^2)``. Parameters: ``params = {"sigma_x": float, "rate": float}``,
    with Gamma(1, 1) priors on ``1 / sigma_x^2`` and on ``rate``.

    Missing entries (``observed == 0``) are left out of every term.
    """

    name = "exponential"
    prior_kind = PRIOR_EXPONENTIAL
    parameter_names = ("sigma_x", "rate")

    def initial_parameters(self, X, observed) -> dict:
        """``sigma_x`` = standard deviation of the observed entries after centring each
        column on its observed mean, ``rate = 1 / mean |centred entry|``; each falls back
        to 1 when its statistic is zero."""
        X, mask = _check_feature_data(X, observed)
        centred = _observed_centred(X, mask)
        scale = float(np.std(centred)) if centred.size else 0.0
        spread = float(np.mean(np.abs(centred))) if centred.size else 0.0
        return {
            "sigma_x": scale if scale > 0.0 else 1.0,
            "rate": 1.0 / spread if spread > 0.0 else 1.0,
        }

    def prior_array(self, params) -> np.ndarray:
        """``[rate]``: the rate of the exponential feature prior."""
        return np.array([float(params["rate"])])

    def sample_prior_features(self, n_features: int, n_dims: int, params, rng) -> np.ndarray:
        """``a_kd ~ Exponential(rate)``, shape (n_features, n_dims)."""
        return rng.exponential(1.0 / float(params["rate"]), size=(n_features, n_dims))

    def sample_features(self, X, observed, Z, A, params, rng) -> np.ndarray:
        """One element-wise Gibbs sweep over ``A`` from the truncated-Gaussian conditionals
        of appendix A.2 (features in order, all dimensions of a feature together), starting
        from the current ``A`` (not modified). Costs O(nnz(Z) D)."""
        new = np.array(A, dtype=np.float64, order="C", copy=True)
        resid, mask = _observed_residual(X, observed, Z, new)
        ptr, rows = _rows_by_feature(Z)
        sweep_nonnegative_features(
            new,
            resid,
            np.ascontiguousarray(mask, dtype=np.uint8),
            ptr,
            rows,
            float(params["sigma_x"]) ** 2,
            float(params["rate"]),
            rng,
        )
        return new

    def sample_parameters(self, X, observed, Z, A, params, rng) -> dict:
        """``sigma_x`` given the observed residuals, then ``rate`` given ``A``:
        ``1 / sigma_x^2 ~ Gamma(1 + n_obs / 2, v + sum r^2 / 2)`` and
        ``rate ~ Gamma(1 + K D, sqrt(v) + sum A)`` (shape, rate; Gamma(1, v) and
        Gamma(1, sqrt(v)) priors, ``v`` = :attr:`prior_variance`: a rate is an inverse
        length, so its prior's mean is one over the data's scale)."""
        A = np.asarray(A, dtype=np.float64)
        sigma_x = self._sample_noise(X, observed, Z, A, rng)
        scale = float(np.sqrt(self.prior_variance))
        rate = float(rng.gamma(1.0 + A.size, 1.0 / (scale + float(np.sum(A)))))
        return {**params, "sigma_x": sigma_x, "rate": rate}

    def log_prior_features(self, A, params) -> float:
        """``sum_kd log Exponential(a_kd; rate)`` (``-inf`` if any ``a_kd < 0``)."""
        A = np.asarray(A, dtype=np.float64)
        if np.any(A < 0.0):
            return -np.inf
        rate = float(params["rate"])
        return float(A.size * np.log(rate) - rate * np.sum(A))
