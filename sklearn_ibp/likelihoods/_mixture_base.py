"""The interface of a DP mixture's base distribution and component model.

A *base* is ``G_0`` together with the component density ``F(x | theta)`` (Görür 2007,
Görür 2007, sec. 3.3-3.4). It owns ``G_0``'s hyperparameters (and their hyperpriors), and
every solver talks to components only through these methods, so a solver written against
this interface serves every base with the methods it needs.

Parameters of ``K`` components are a dict of arrays whose first axis has length ``K``
(for the Gaussian bases ``"means"`` (K, D) and ``"precisions"`` (K, D, D)).

Methods every base has
----------------------
``initialize(X, rng)``
    Set the hyperparameters' starting values from the data (the data-dependent but
    translation-, rotation- and scale-invariant hyperpriors of sec. 3.3.1 use only the
    data's mean and covariance).
``sample_prior(n, rng) -> params``
    ``n`` independent draws from ``G_0``.
``log_likelihood(X, params) -> (N, K)``
    ``log F(x_i | theta_k)``.
``sample_posterior(X_k, rng, params_k=None) -> params (first axis 1)``
    A draw of one component's parameters given its rows ``X_k`` (an exact draw for a
    conjugate base; one Gibbs scan over the parameter blocks, starting from ``params_k``,
    for a conditionally conjugate base).
``sample_posterior_all(X, labels, n_clusters, rng, params=None) -> params``
    The same for every cluster.
``update_hyperparameters(params, rng)``
    Draw the hyperparameters given the parameters of the active components.
``log_prior_predictive(X) -> (N,)``
    ``log int F(x | theta) dG_0(theta)``: exact for a conjugate base, a fixed-draw Monte
    Carlo average otherwise.
``hyperparameters() -> dict`` / ``set_hyperparameters(dict)``
    Copies of the hyperparameters, for snapshots.

Methods of a conjugate base (``conjugate = True``)
--------------------------------------------------
``log_marginal(X_k) -> float``
    ``log int prod_i F(x_i | theta) dG_0(theta)`` of the rows of one cluster.
``log_predictive(X_new, X_k) -> (M,)``
    ``log p(x | X_k)``, the posterior predictive of one cluster (``X_k`` may be empty).
"""

from __future__ import annotations

import numpy as np

__all__ = ["BaseMixtureComponents"]


class BaseMixtureComponents:
    """Base class of the DP mixture bases (see the module docstring for the contract)."""

    name = "base"
    conjugate = False
    #: Names of the hyperparameters (the keys ``initial_hyperparameters`` may set).
    hyperparameter_names: tuple = ()

    @staticmethod
    def _data_moments(X):
        """``(X, mu_x, Sigma_x)``: ``X`` as a float array, checked to be 2-D with at least
        one row, its column means and its sample covariance (zeros for one row)."""
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or X.shape[0] < 1:
            raise ValueError(f"X must be a non-empty 2-D array; got shape {X.shape}.")
        N, D = X.shape
        cov = np.atleast_2d(np.cov(X, rowvar=False)) if N > 1 else np.zeros((D, D))
        return X, X.mean(axis=0), cov

    def _starting_hyperparameters(self, defaults: dict) -> dict:
        """``defaults`` (a new dict) overridden by the ``initial_hyperparameters`` the
        base was given, after checking their names against
        :attr:`hyperparameter_names`."""
        values = dict(defaults)
        initial = getattr(self, "initial_hyperparameters", None)
        if initial is not None:
            unknown = set(initial) - set(self.hyperparameter_names)
            if unknown:
                raise ValueError(f"initial_hyperparameters has unknown keys "
                                 f"{sorted(unknown)}; expected some of "
                                 f"{list(self.hyperparameter_names)}.")
            values.update(initial)
        return values

    def initialize(self, X, rng) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def sample_prior(self, n, rng) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError

    def log_likelihood(self, X, params) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def sample_posterior(self, X_k, rng, params_k=None) -> dict:  # pragma: no cover
        raise NotImplementedError

    def sample_posterior_all(self, X, labels, n_clusters, rng, params=None) -> dict:
        """Draw every cluster's parameters given its rows, one cluster after the other."""
        draws = []
        for k in range(n_clusters):
            current = None if params is None else {n: v[k : k + 1] for n, v in params.items()}
            draws.append(self.sample_posterior(X[labels == k], rng, current))
        if not draws:
            return {n: v[:0] for n, v in self.sample_prior(1, rng).items()}
        return {n: np.concatenate([d[n] for d in draws]) for n in draws[0]}

    def update_hyperparameters(self, params, rng) -> None:
        """Fixed hyperparameters by default."""

    def log_prior_predictive(self, X) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def hyperparameters(self) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError

    def set_hyperparameters(self, values: dict) -> None:  # pragma: no cover - abstract
        raise NotImplementedError
