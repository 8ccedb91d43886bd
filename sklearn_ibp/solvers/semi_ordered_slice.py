"""Slice sampling for the semi-ordered stick-breaking IBP (seed 002 sec. 4.2.6,
Algorithm 16).

The semi-ordered representation keeps the active features unordered, each with its stick
``mu_k ~ Beta(m_k, 1 + N - m_k)`` (eq. 4.56), and only the empty features in decreasing
stick order (eq. 4.57). Between sweeps the chain holds the IBP representation (``Z`` and
``A`` of the active features). One sweep:

* change to the stick-breaking representation: active sticks from eq. 4.56, a slice
  ``s ~ Uniform(0, min(1, min_k mu_k))`` (eq. 4.58), empty sticks from eq. 4.57 (a unit
  stick broken until it falls below the slice) with feature values from their prior;
* update every ``z_nk`` with ``mu_k > s`` (eq. 4.52), row by row, the features in
  decreasing stick order: Gibbs for features other rows have, Metropolis-Hastings jointly
  with ``a_k`` (proposed from the row's residual) for the others;
* change back to the IBP representation: drop the sticks and the empty features;
* draw ``A`` given ``Z`` with the likelihood's own update.

Without the ordering constraint of Algorithm 15 a feature is never held in place by the
features around it, so it mixes about as fast as the conjugate Gibbs sampler (seed 002
sec. 4.3, fig. 4.7) while serving any explicit-feature likelihood.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
from sklearn.utils._param_validation import Interval

from ..priors.ibp import harmonic_rate
from ._explicit_base import (
    EXPLICIT_LIKELIHOODS,
    ExplicitFeatureSolver,
    ExplicitFeatureState,
    drop_empty_features,
    grow,
    new_explicit_state,
)
from ._semi_ordered_slice_kernels import to_stick_breaking, update_rows_and_drop_empty
from ._slice_kernels import extend_sticks
from .slice import check_alpha, check_likelihood, check_prior, initial_features

__all__ = ["SemiOrderedSliceSampler"]


def _fit_stats(state: ExplicitFeatureState) -> None:
    """Give the per-feature scratch arrays the capacity of ``state.Z``."""
    st = state.stats
    cap = state.Z.shape[1]
    for key, dtype in (("feature_counts", np.int64), ("sticks", np.float64)):
        old = st.get(key)
        if old is None or old.shape[0] < cap:
            new = np.zeros(cap, dtype=dtype)
            if old is not None:
                new[: old.shape[0]] = old
            st[key] = new


class SemiOrderedSliceSampler(ExplicitFeatureSolver):
    """Slice sampler on the semi-ordered stick-breaking IBP (seed 002 sec. 4.2.6,
    Algorithm 16).

    Exact for any explicit-feature likelihood (``"gaussian"``, ``"exponential"``,
    ``"bernoulli"``): each sweep changes to the stick-breaking representation (active
    sticks from their Beta posterior, empty sticks by exact adaptive rejection draws,
    values of empty features from their prior), updates ``Z`` above a slice (switching a
    feature on for a row alone with values proposed from that row's residual, accepted by
    Metropolis-Hastings) and changes back. Between sweeps the state is ``Z`` and ``A`` of
    the active features only.

    Parameters
    ----------
    capacity : int, default=32
        Feature slots allocated at the start; doubled whenever more are needed (this is
        no truncation).
    """

    name = "semi_ordered_slice"
    likelihoods = EXPLICIT_LIKELIHOODS
    exact = True

    _parameter_constraints: dict = {
        "capacity": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, capacity=32):
        self.capacity = capacity

    def initialize(self, X, observed, Z, A, alpha, params, likelihood, rng
                   ) -> ExplicitFeatureState:
        """A chain from ``Z`` (n_samples, K) and ``A`` (K, n_dims), or ``A=None`` to draw it
        given ``Z``. Empty columns are dropped; inputs are not modified."""
        self._validate_params()
        check_likelihood(self, likelihood)
        alpha = check_alpha(alpha)
        X = np.ascontiguousarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError(f"X must be a 2-d array, got shape {X.shape}.")
        observed = np.ascontiguousarray(observed, dtype=np.uint8)
        likelihood.check_data(X, observed)
        Z, A = initial_features(X, observed, Z, A, params, likelihood, rng)
        state = new_explicit_state(X, observed, Z, A, alpha, params,
                                   max(int(self.capacity), Z.shape[1] + 1))
        state.stats["pred"] = np.zeros(X.shape)
        _fit_stats(state)
        return state

    def sweep(self, state: ExplicitFeatureState, likelihood, rng) -> None:
        """One sweep of Algorithm 16 (module docstring)."""
        if state.n_features and not state.active_Z.any(axis=0).all():
            drop_empty_features(state)
        _fit_stats(state)
        st = state.stats
        X, observed, params = state.X, state.observed, state.params
        N, D = X.shape
        alpha = float(state.alpha)
        K = state.n_features
        prior_kind, prior = likelihood.prior_kind, likelihood.prior_array(params)
        total, level, done = to_stick_breaking(
            state.Z, state.A, st["pred"], st["feature_counts"], st["sticks"], K, alpha,
            prior_kind, prior, rng,
        )
        while not done:
            state.n_features = int(total)
            grow(state, 2 * state.Z.shape[1])
            _fit_stats(state)
            total, done = extend_sticks(state.Z, state.A, st["feature_counts"], st["sticks"],
                                        total, K, level, alpha, prior_kind, prior, rng)
        K = update_rows_and_drop_empty(
            X, observed, state.Z, state.A, st["pred"], st["feature_counts"], st["sticks"],
            total, level, likelihood.observation_kind, likelihood.noise_array(params, D),
            prior_kind, prior, rng,
        )
        state.n_features = int(K)
        if K:
            state.A[:K] = likelihood.sample_features(X, observed, state.Z[:, :K],
                                                     state.A[:K], params, rng)

    def sample_alpha(self, state: ExplicitFeatureState, rng, prior=(1.0, 1.0)) -> None:
        """``alpha`` given the semi-ordered state under a ``Gamma(shape, rate)`` prior.

        Between sweeps the chain instantiates the ``K`` active features and no sticks: the
        active sticks' posterior ``Beta(m_k, 1 + N - m_k)`` (eq. 4.56) does not involve
        ``alpha``, and the empty sticks are a Poisson process of intensity
        ``alpha mu^-1 (1 - mu)^N`` (eq. 4.57) that is redrawn every sweep, so it is
        integrated out: ``p(Z | alpha) ∝ alpha^K exp(-alpha H_N)`` and
        ``alpha ~ Gamma(shape + K, rate + H_N)``.
        """
        shape, rate = check_prior(prior)
        K = int(np.count_nonzero(state.active_Z.any(axis=0)))
        rate += harmonic_rate(state.X.shape[0])
        state.alpha = float(rng.gamma(shape + K, 1.0 / rate))
