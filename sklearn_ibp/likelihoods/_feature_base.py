"""The contract of an observation model that keeps the features ``A`` explicit.

Samplers that cannot integrate ``A`` out (the correlated feature hierarchies of Doshi-Velez 2009,
chapter 7, the uncollapsed and stick-breaking IBP samplers) talk to a likelihood through
this interface. A likelihood object is stateless: its parameters travel in a plain ``dict``
(``params``) owned by the sampler's state, so states pickle and copy cheaply.

Arrays are always: ``X`` of shape (n_samples, n_dims) holding any finite value where an
entry is missing, ``observed`` a uint8 mask of the same shape (1 = observed; missing
entries are masked out of every likelihood term, never filled), ``Z`` binary of shape
(n_samples, n_features), ``A`` of shape (n_features, n_dims).

The numba kernels of a sampler see a likelihood through :attr:`observation_kind`,
:attr:`prior_kind`, :meth:`noise_array` and :meth:`prior_array`
(see :mod:`._observation_kernels`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["FeatureLikelihood"]


class FeatureLikelihood:
    """Base class of the explicit-feature observation models.

    Subclasses set :attr:`name`, :attr:`observation_kind`, :attr:`prior_kind` and
    :attr:`parameter_names`, and implement every method below.
    """

    #: The value users pass as ``likelihood=...``.
    name: str = ""
    #: ``OBSERVE_GAUSSIAN``, ``OBSERVE_DETECTION`` or ``OBSERVE_NOISY_OR`` (see
    #: :mod:`._observation_kernels`).
    observation_kind: int = 0
    #: ``PRIOR_GAUSSIAN``, ``PRIOR_EXPONENTIAL`` or ``PRIOR_BERNOULLI``.
    prior_kind: int = 0
    #: Keys of ``params`` that are scalars (traced every iteration by the estimators).
    parameter_names: tuple = ()

    def check_data(self, X, observed) -> None:
        """Raise ``ValueError`` naming ``X`` when the observed entries do not suit the model
        (for example non-binary values for a binary likelihood)."""

    def initial_parameters(self, X, observed) -> dict:
        """Starting parameters for a chain on ``X`` (a new dict)."""
        raise NotImplementedError

    def noise_array(self, params, n_dims: int) -> np.ndarray:
        """The (2, n_dims) float64 array the kernels read observation noise from."""
        raise NotImplementedError

    def prior_array(self, params) -> np.ndarray:
        """The 1-d float64 array the kernels read the feature prior from."""
        raise NotImplementedError

    def sample_prior_features(self, n_features: int, n_dims: int, params, rng) -> np.ndarray:
        """``n_features`` rows of ``A`` drawn from the prior, shape (n_features, n_dims)."""
        raise NotImplementedError

    def sample_features(self, X, observed, Z, A, params, rng) -> np.ndarray:
        """A new ``A`` from (or leaving invariant) ``p(A | X, Z, params)``; ``A`` is the
        current value (used by element-wise Gibbs updates) and is not modified."""
        raise NotImplementedError

    def sample_parameters(self, X, observed, Z, A, params, rng) -> dict:
        """New parameters drawn from their conditionals under the model's vague priors
        (a new dict; ``params`` is not modified)."""
        raise NotImplementedError

    def log_likelihood(self, X, observed, Z, A, params) -> float:
        """``log p(X_observed | Z, A, params)``."""
        return float(np.sum(self.row_log_likelihood(X, observed, Z, A, params)))

    def row_log_likelihood(self, X, observed, Z, A, params) -> np.ndarray:
        """``log p(x_n,observed | z_n, A, params)`` for every row, shape (n_samples,)."""
        raise NotImplementedError

    def log_prior_features(self, A, params) -> float:
        """``log p(A | params)``."""
        raise NotImplementedError

    def predict(self, Z, A, params) -> np.ndarray:
        """The expected data given ``Z``: ``Z A`` (real data) or ``P(x = 1)`` (binary)."""
        raise NotImplementedError

    def sample_data(self, Z, A, params, rng) -> np.ndarray:
        """Data drawn from the model given ``Z`` and ``A``."""
        raise NotImplementedError
