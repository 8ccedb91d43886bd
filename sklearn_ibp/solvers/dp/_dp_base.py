"""What every Dirichlet process mixture solver shares: the chain state and the interface.

The DP mixture (Görür 2007, ch. 3) is ``x_i | c_i ~ F(theta_{c_i})``,
``theta_k ~ G_0``, ``c ~ CRP(alpha)``. A *base* (the component model: conjugate
Normal-Wishart, conditionally conjugate Normal x Wishart, factor analyser) holds ``G_0``'s
hyperparameters and the math of one component; a *solver* updates the indicators (and,
for the samplers that represent them, the component parameters or sticks). The estimator
owns the loop: per sweep it calls ``solver.sweep``, then ``base.update_hyperparameters``
given ``solver.cluster_parameters`` and then alpha.

Contract
--------
* Cluster labels are ``0 .. n_clusters - 1`` with no gaps and no empty cluster after every
  ``sweep`` (solvers relabel before returning).
* ``state.params`` holds per-cluster parameters as arrays whose first axis is the cluster
  (for the Gaussian bases ``"means"`` (K, D) and ``"precisions"`` (K, D, D)); collapsed
  solvers keep it empty and draw parameters on request in :meth:`cluster_parameters`.
* Every random draw comes from the ``rng`` passed in (a :class:`numpy.random.Generator`),
  numba kernels included, so a seed fixes a chain bit for bit.
* Nothing here modifies the data array given to :meth:`initialize`.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np

from .._protocol import Solver

__all__ = ["BaseDPSolver", "MixtureState", "relabel"]


@dataclass
class MixtureState:
    """The state of one chain of a DP mixture sampler.

    Attributes
    ----------
    X : ndarray of shape (n_samples, n_features)
        The data, float64, C-contiguous (a private copy).
    labels : ndarray of shape (n_samples,), int64
        Cluster of each row, ``0 .. n_clusters - 1``.
    n_clusters : int
    alpha : float
        DP concentration.
    params : dict
        Per-cluster parameters of solvers that represent them (see the module docstring).
    stats : dict
        The solver's own statistics (counts, sums, Cholesky factors, sticks, slices ...).
    """

    X: np.ndarray
    labels: np.ndarray
    n_clusters: int
    alpha: float
    params: dict = field(default_factory=dict)
    stats: dict = field(default_factory=dict)

    @property
    def counts(self) -> np.ndarray:
        """Rows per cluster, shape (n_clusters,)."""
        return np.bincount(self.labels, minlength=self.n_clusters)


def relabel(labels):
    """Labels renumbered ``0 .. K - 1`` in order of first appearance, and the old label of
    each new one: ``(new_labels, old_of_new)``."""
    labels = np.asarray(labels)
    _, first = np.unique(labels, return_index=True)
    old_of_new = labels[np.sort(first)]
    lookup = np.empty(labels.max() + 1, dtype=np.int64)
    lookup[old_of_new] = np.arange(old_of_new.size)
    return lookup[labels], old_of_new


class BaseDPSolver(Solver):
    """Base class of the DP mixture samplers.

    Subclasses set ``name`` and ``bases`` (the names of the bases they can serve: a
    collapsed solver serves only ``"conjugate"``) and implement :meth:`initialize` and
    :meth:`sweep`.
    """

    model = "dp"
    name = "base"
    context = "base"
    bases: tuple = ("conjugate", "conditionally_conjugate", "factor_analyzer")

    def initialize(self, X, labels, alpha, base, rng) -> MixtureState:  # pragma: no cover
        """A chain state for data ``X`` starting from the partition ``labels``."""
        raise NotImplementedError

    def sweep(self, state: MixtureState, base, rng) -> None:  # pragma: no cover - abstract
        """Update every indicator once (and the parameters the solver represents)."""
        raise NotImplementedError

    def cluster_parameters(self, state: MixtureState, base, rng) -> dict:
        """Parameters of every cluster: the represented ones, or (collapsed solvers) a draw
        from their posterior given the cluster's rows."""
        if state.params:
            return {k: v[: state.n_clusters] for k, v in state.params.items()}
        return base.sample_posterior_all(state.X, state.labels, state.n_clusters, rng)

    def sample_alpha(self, state: MixtureState, rng) -> float:
        """An MCMC update of ``alpha`` given the rest of the state.

        For solvers whose state is the partition (and parameters), ``alpha`` depends only
        on the number of clusters: ``p(alpha | K, N)`` (sec. 3.1.6). Solvers that keep
        more of the DP than the partition (the stick positions of the stick-breaking
        samplers) override this with the conditional given what they keep.
        """
        from ...priors.crp import sample_alpha_posterior_crp

        return sample_alpha_posterior_crp(state.alpha, state.n_clusters, state.X.shape[0], rng)

    def update_state(self, state: MixtureState, base, rng, *, sample_hyperparameters=True,
                     missing=None, sample_alpha=True) -> None:
        """With ``sample_hyperparameters``, the base's hyperparameters given a draw of the
        cluster parameters, then (with ``sample_alpha``) ``alpha``; ``missing`` is not
        used (the DP mixtures take complete data)."""
        if sample_hyperparameters:
            params = self.cluster_parameters(state, base, rng)
            base.update_hyperparameters(params, rng)
            self.set_hyperparameters(state, base)
            if sample_alpha:
                state.alpha = self.sample_alpha(state, rng)

    # -- what the sampling loop records ---------------------------------------------------
    def log_joint(self, state: MixtureState, base) -> float:
        """``log p(c | alpha) + log p(X | c)`` for a conjugate base (the parameters
        integrated out), ``log p(c | alpha) + log p(X | c, theta)`` otherwise."""
        from ...priors.crp import crp_log_prob

        log_joint = crp_log_prob(state.labels, state.alpha)
        if getattr(base, "conjugate", False):
            for k in range(state.n_clusters):
                log_joint += base.log_marginal(state.X[state.labels == k])
        else:
            # Each row under its own cluster only: O(N D^2), not the (N, K) matrix.
            params = self.cluster_parameters(state, base, None)
            for k in range(state.n_clusters):
                rows = state.X[state.labels == k]
                one = {name: value[k : k + 1] for name, value in params.items()}
                log_joint += float(base.log_likelihood(rows, one).sum())
        return float(log_joint)

    def trace_names(self, base) -> tuple:
        return ("log_joint", "n_clusters", "alpha")

    def trace_values(self, state: MixtureState, log_joint, base) -> tuple:
        return (log_joint, state.n_clusters, state.alpha)

    def snapshot(self, state: MixtureState, base, chain=0) -> dict:
        """The labels, ``alpha``, the base's hyperparameters and every cluster's
        parameters: the represented ones, or a draw from their posterior given the
        clusters' rows (:meth:`BaseDPSolver.cluster_parameters`, whatever faster path a
        solver has) from a generator of the snapshot's own, seeded by ``chain`` and the
        number of snapshots so far, so keeping a sample leaves the chain's random stream
        as it is."""
        state.n_snapshots = getattr(state, "n_snapshots", 0) + 1
        rng = np.random.default_rng([chain, state.n_snapshots])
        params = BaseDPSolver.cluster_parameters(self, state, base, rng)
        return {
            "labels": state.labels.copy(),
            "alpha": float(state.alpha),
            "params": {k: np.array(v, copy=True) for k, v in params.items()},
            "hyperparameters": copy.deepcopy(base.hyperparameters()),
        }

    def set_hyperparameters(self, state: MixtureState, base) -> None:
        """Refresh whatever depends on the base's hyperparameters (after they changed)."""
