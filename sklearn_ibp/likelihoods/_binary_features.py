"""What the binary-feature likelihoods share: binary data, ``a_kd ~ Bernoulli(p_a)``.

The binary detection model (Doshi-Velez 2009, sec. 7.3, :class:`~sklearn_ibp.likelihoods.
BinaryDetection`) and the leaky noisy-or (Doshi-Velez 2009, appendix A.3, eq. A.4,
:class:`~sklearn_ibp.likelihoods.LeakyNoisyOr`) differ in how the count ``c_nd = (z_n
A)_d`` of features reaching an entry sets ``P(x_nd = 1)``; the data check, the Bernoulli
prior of ``A`` and its element-wise Gibbs sweep (one numba kernel per model, a subclass's
:attr:`~BinaryFeatureLikelihood.sweep_kernel`) are written here once.
"""

from __future__ import annotations

import numpy as np

from ._feature_base import FeatureLikelihood
from .linear_gaussian import _check_feature_data, _rows_by_feature

__all__ = ["BinaryFeatureLikelihood"]


def feature_counts(Z, A):
    """``Z A`` as int64 (n_samples, n_dims): how many active features reach each entry."""
    Z = np.asarray(Z, dtype=np.float64)
    A = (np.asarray(A, dtype=np.float64) > 0.5).astype(np.float64)
    return np.rint(Z @ A).astype(np.int64)


class BinaryFeatureLikelihood(FeatureLikelihood):
    """Base class of the likelihoods of binary data with binary features
    ``a_kd ~ Bernoulli(p_a)`` (``params["p_a"]``).

    Subclasses set :attr:`sweep_kernel` (a ``staticmethod``), a numba kernel with the
    signature of :func:`~sklearn_ibp.likelihoods._noisy_or_kernels.sweep_binary_features`
    that reads the observation noise from :meth:`noise_array`, and implement
    :meth:`entry_log_probs` and the rest of
    :class:`~sklearn_ibp.likelihoods._feature_base.FeatureLikelihood`.
    """

    #: ``sweep(A, counts, X, observed, feature_ptr, feature_rows, noise, p_a, rng)``: one
    #: Gibbs sweep over every ``a_kd``, in place.
    sweep_kernel = None

    def check_data(self, X, observed) -> None:
        """Raise ``ValueError`` naming ``X`` unless ``X`` is 2-d, ``observed`` has its
        shape, and every observed entry is 0 or 1."""
        X, mask = _check_feature_data(X, observed)
        values = X[mask]
        if not np.all((values == 0.0) | (values == 1.0)):
            bad = values[(values != 0.0) & (values != 1.0)]
            raise ValueError(
                f"X must be binary (0 or 1) at its observed entries for the {self.name} "
                f"likelihood; found {bad.size} other value(s), the first {float(bad[0]):.6g}."
            )

    def prior_array(self, params) -> np.ndarray:
        """``[p_a]``: the probability that a feature includes a dimension."""
        return np.array([float(params["p_a"])])

    def sample_prior_features(self, n_features: int, n_dims: int, params, rng) -> np.ndarray:
        """``a_kd ~ Bernoulli(p_a)`` as float64 0/1, shape (n_features, n_dims)."""
        return (rng.random((n_features, n_dims)) < float(params["p_a"])).astype(np.float64)

    def sample_features(self, X, observed, Z, A, params, rng) -> np.ndarray:
        """One element-wise Gibbs sweep over the binary ``A`` (features in order, all
        dimensions of a feature together, Doshi-Velez 2009, appendix A.3), starting from the current
        ``A`` (not modified); returns float64 0/1 of shape (n_features, n_dims)."""
        X = np.ascontiguousarray(X, dtype=np.float64)
        new = (np.asarray(A, dtype=np.float64) > 0.5).astype(np.float64)
        counts = feature_counts(Z, new)
        ptr, rows = _rows_by_feature(Z)
        self.sweep_kernel(
            new,
            counts,
            X,
            np.ascontiguousarray(np.asarray(observed).astype(bool), dtype=np.uint8),
            ptr,
            rows,
            self.noise_array(params, X.shape[1]),
            float(params["p_a"]),
            rng,
        )
        return new

    def entry_log_probs(self, Z, A, params):
        """``(log P(x_nd = 1), log P(x_nd = 0))`` given ``z_n`` and ``A``, each of shape
        (n_samples, n_dims)."""
        raise NotImplementedError

    def row_log_likelihood(self, X, observed, Z, A, params) -> np.ndarray:
        """``sum_d log P(x_nd | z_n, A)`` over the observed entries of each row (the terms
        of :meth:`entry_log_probs`)."""
        X = np.asarray(X, dtype=np.float64)
        mask = np.asarray(observed).astype(bool)
        log_one, log_zero = self.entry_log_probs(Z, A, params)
        log_p = np.where(X > 0.5, log_one, log_zero)
        return np.where(mask, log_p, 0.0).sum(axis=1)

    def log_prior_features(self, A, params) -> float:
        """``sum_kd log Bernoulli(a_kd; p_a)``."""
        A = np.asarray(A, dtype=np.float64)
        n_on = float(np.sum(A > 0.5))
        p_a = float(params["p_a"])
        with np.errstate(divide="ignore"):
            return float(n_on * np.log(p_a) + (A.size - n_on) * np.log1p(-p_a))

    def sample_data(self, Z, A, params, rng) -> np.ndarray:
        """Binary data (float64 0/1) with ``P(x_nd = 1)`` from :meth:`predict`."""
        p_one = self.predict(Z, A, params)
        return (rng.random(p_one.shape) < p_one).astype(np.float64)
