"""Binary data from binary features through noisy detections (Doshi-Velez 2009, sec. 7.3, A.3).

Each ``a_kd`` is 1 with probability ``p_a``. Dimension ``d`` of row ``n`` is reached when
some active feature of the row includes it, ``(z_n A)_d > 0``; a reached dimension is seen
(``x_nd = 1``) unless it is missed, with probability ``m_d``, and an unreached one is seen
only by a false detection, with probability ``f_d``:

    P(x_nd = 1) = 1 - m_d  if (z_n A)_d > 0,   f_d  otherwise.

This is the per-dimension detection model of sec. 7.3, a leaky or of the features. It
differs from the noisy-or of eq. A.4, ``1 - eps lambda^((z_n A)_d)``, in that one reaching
feature is as good as several (the detection chance does not grow with the count) and the
rates are per dimension; ``f_d = 1 - eps`` and ``m_d -> 0`` is A.4 with ``lambda -> 0``.
``A`` cannot be integrated out; each ``a_kd`` is Gibbs-sampled from its two-point
conditional (:mod:`._noisy_or_kernels`).
"""

from __future__ import annotations

import numpy as np

from ._binary_features import BinaryFeatureLikelihood
from ._noisy_or_kernels import sweep_binary_features
from ._observation_kernels import OBSERVE_DETECTION, PRIOR_BERNOULLI
from .linear_gaussian import _check_feature_data

__all__ = ["BinaryDetection"]

#: Beta prior (a, b) of every false-detection and miss rate: mean 0.1, so most detections
#: are right, which also fixes the labelling where A and the rates swap roles.
_RATE_PRIOR = (1.0, 9.0)
#: Beta prior (a, b) of ``p_a``.
_FEATURE_PRIOR = (1.0, 1.0)


def _reached(Z, A):
    """Boolean (n_samples, n_dims): does some active feature of the row include ``d``."""
    return (np.asarray(Z, dtype=np.float64) @ np.asarray(A, dtype=np.float64)) > 0.5


class BinaryDetection(BinaryFeatureLikelihood):
    """Binary features observed through per-dimension detections (Doshi-Velez 2009, sec. 7.3, A.3).

    ``a_kd ~ Bernoulli(p_a)``; ``P(x_nd = 1) = 1 - miss_rate[d]`` when ``(z_n A)_d > 0`` and
    ``false_rate[d]`` otherwise. Parameters: ``params = {"false_rate": ndarray (n_dims,),
    "miss_rate": ndarray (n_dims,), "p_a": float}`` with Beta(1, 9) priors on every rate
    and Beta(1, 1) on ``p_a``. Only ``p_a`` is a scalar (:attr:`parameter_names`).

    ``X`` holds 0 or 1 at its observed entries; missing entries are left out of every term.
    """

    name = "detection"
    observation_kind = OBSERVE_DETECTION
    prior_kind = PRIOR_BERNOULLI
    parameter_names = ("p_a",)
    sweep_kernel = staticmethod(sweep_binary_features)

    def initial_parameters(self, X, observed) -> dict:
        """False-detection and miss rates 0.1 in every dimension (the prior mean) and
        ``p_a = 0.5``; the data only set the number of dimensions."""
        X, _ = _check_feature_data(X, observed)
        n_dims = X.shape[1]
        return {
            "false_rate": np.full(n_dims, 0.1),
            "miss_rate": np.full(n_dims, 0.1),
            "p_a": 0.5,
        }

    def noise_array(self, params, n_dims: int) -> np.ndarray:
        """False-detection rates in row 0 and miss rates in row 1, shape (2, n_dims)."""
        noise = np.empty((2, n_dims))
        noise[0] = params["false_rate"]
        noise[1] = params["miss_rate"]
        return noise

    def sample_parameters(self, X, observed, Z, A, params, rng) -> dict:
        """Conjugate Beta draws: ``false_rate[d] ~ Beta(1 + #ones, 9 + #zeros)`` over the
        observed unreached entries of column ``d``, ``miss_rate[d] ~ Beta(1 + #zeros,
        9 + #ones)`` over the reached ones, then ``p_a ~ Beta(1 + sum A, 1 + K D - sum A)``."""
        X = np.asarray(X, dtype=np.float64)
        A = np.asarray(A, dtype=np.float64)
        mask = np.asarray(observed).astype(bool)
        reached = _reached(Z, A)
        ones = mask & (X > 0.5)
        zeros = mask & ~(X > 0.5)
        a, b = _RATE_PRIOR
        false_rate = rng.beta(
            a + np.sum(ones & ~reached, axis=0), b + np.sum(zeros & ~reached, axis=0)
        )
        miss_rate = rng.beta(
            a + np.sum(zeros & reached, axis=0), b + np.sum(ones & reached, axis=0)
        )
        n_on = float(np.sum(A > 0.5))
        p_a = float(rng.beta(_FEATURE_PRIOR[0] + n_on, _FEATURE_PRIOR[1] + A.size - n_on))
        return {**params, "false_rate": false_rate, "miss_rate": miss_rate, "p_a": p_a}

    def entry_log_probs(self, Z, A, params):
        """``(log P(x_nd = 1), log P(x_nd = 0))`` from :meth:`predict`."""
        p_one = self.predict(Z, A, params)
        with np.errstate(divide="ignore"):
            return np.log(p_one), np.log1p(-p_one)

    def predict(self, Z, A, params) -> np.ndarray:
        """``P(x_nd = 1 | z_n, A)``, shape (n_samples, n_dims)."""
        reached = _reached(Z, A)
        miss_rate = np.asarray(params["miss_rate"], dtype=np.float64)
        false_rate = np.asarray(params["false_rate"], dtype=np.float64)
        return np.where(reached, 1.0 - miss_rate, false_rate)
