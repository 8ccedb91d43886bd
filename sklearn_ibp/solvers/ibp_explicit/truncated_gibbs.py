"""Gibbs sampling for the truncated stick-breaking IBP (Görür 2007, sec. 4.2.4, Algorithm 14).

The stick-breaking construction (Görür 2007, sec. 4.1.2, eq. 4.15; appendix A.1) orders the
feature probabilities ``1 > mu_1 > mu_2 > ...`` with ``mu_k = nu_1 ... nu_k`` and
``nu_l ~ Beta(alpha, 1)``. Truncating it at ``K*`` sticks (``mu_k = 0`` for ``k > K*``)
leaves a finite model, eq. 4.42-4.43::

    p(mu_1:K*) = alpha^K* mu_K*^alpha prod_k mu_k^-1     on 1 > mu_1 > ... > mu_K* > 0
    p(Z | mu)  = prod_nk mu_k^z_nk (1 - mu_k)^(1 - z_nk)

whose conditionals are all available: one sweep draws every ``z_nk`` given ``mu_k`` and
the likelihood (eq. 4.44), ``A`` given ``Z`` (the likelihood's own update for the features
some row has, the prior for the others) and each stick given ``Z`` and its neighbours
(eq. 4.45). The stick conditional is log-concave in ``log mu_k`` and is drawn by slice
sampling, an exact MCMC update (:mod:`._truncated_gibbs_kernels`).
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
from sklearn.utils._param_validation import Interval

from ..._deprecation import class_aliases
from ...priors.ibp import (
    _check_truncation_args,
    _truncation_rate,
    sample_alpha_conditional,
)
from ._explicit_base import (
    EXPLICIT_LIKELIHOODS,
    ExplicitFeatureSolver,
    ExplicitFeatureState,
    new_explicit_state,
)
from ._truncated_gibbs_kernels import sample_sticks, sweep_truncated
from .slice import initial_features

__all__ = ["TruncatedGibbsIBP", "truncation_error_bound"]

#: Stick passes given the initial ``Z`` before the first sweep (the initial sticks are a
#: prior draw, usually far from their conditional given a non-empty ``Z``).
_INITIAL_STICK_PASSES = 20


def truncation_error_bound(n_samples: int, alpha: float, n_features_max: int) -> float:
    """Bound on the prior probability that truncating the sticks at ``K*`` changes ``Z``.

    Build ``Z`` from the untruncated construction and zero its columns beyond ``K*``: that is
    a draw of the truncated model, and it differs from the IBP draw only when some row has a
    feature beyond ``K*``. With ``E[mu_k] = r^k``, ``r = alpha / (1 + alpha)``,

        P(Z_{:, >K*} != 0) <= N sum_{k > K*} E[mu_k] = N alpha r^K*,

    a bound on the total variation distance between the two priors of ``[Z]`` (the
    analogue for the IBP of the Ishwaran-James bound for the truncated DP; Görür
    2007, sec. 4.2.4). It shrinks geometrically: each stick more divides it by ``1 + 1/alpha``.
    It is the exponent of :func:`sklearn_ibp.priors.ibp.ibp_truncation_bound` (Doshi-Velez 2009,
    eq. 6.9), which is ``1 - exp(-x)`` of the same ``x``, below 1 and tighter, and both
    come from one computation in :mod:`sklearn_ibp.priors.ibp`. This union bound is kept
    because the solver's docstring and its tests state figures in it.

    Parameters
    ----------
    n_samples : int
        Number of rows ``N``.
    alpha : float
        IBP concentration.
    n_features_max : int
        Truncation level ``K*``.

    Returns
    -------
    float
        ``N alpha (alpha / (1 + alpha))^K*``.
    """
    N, alpha, K = _check_truncation_args(n_samples, alpha, n_features_max,
                                      "n_features_max")
    return float(_truncation_rate(N, alpha, K))


class TruncatedGibbsIBP(ExplicitFeatureSolver):
    """Gibbs sampler for the IBP truncated to ``n_features_max`` sticks (Görür 2007, sec. 4.2.4).

    Algorithm 14 of Görür 2007. The state holds ``K*`` sticks ``mu_1 > ... > mu_K*`` (the
    stick-breaking construction, eq. 4.15) with their columns of ``Z`` and rows of ``A``.
    One sweep, rows in a random order:

    1. every ``z_nk`` from its conditional given ``mu_k``, ``A`` and the row (eq. 4.44): the
       same rule for shared, own and unused features, since the entries of ``Z`` are
       independent given the sticks (eq. 4.43);
    2. each stick ``mu_k`` from its conditional on ``(mu_{k+1}, mu_{k-1})`` (eq. 4.45),
       ``mu^(m_k - 1) (1 - mu)^(N - m_k)`` (times ``mu^alpha`` for the last stick), by
       slice sampling of ``log mu_k``, where it is log-concave (exact, as Görür's
       (2007) adaptive rejection sampling);
    3. ``A`` of the features some row has from the likelihood's update
       (``likelihood.sample_features``), of the unused ones from the prior.

    Any explicit-feature likelihood is served (linear-Gaussian, exponential-Gaussian,
    binary detection) through :mod:`sklearn_ibp.likelihoods._observation_kernels`.

    **An approximation.** The chain targets the IBP truncated to ``K*`` sticks, not the
    IBP: no row can have more than ``K*`` features, and the prior of ``[Z]`` differs from
    the IBP's by at most ``N alpha (alpha / (1 + alpha))^K*`` in total variation (see
    :func:`truncation_error_bound`; about ``4e-5`` for ``N = 5``, ``alpha = 0.5``,
    ``K* = 10``, and it needs ``K*`` of a few times ``alpha log N`` for large ``N``). Hence
    :attr:`exact` is False. Features keep their place in stick order, so a chain mixes
    over which stick carries a feature only through columns that empty and refill (Görür 2007,
    sec. 4.2.5 notes the same slow mixing).

    ``state.active_Z`` and ``state.active_A`` hold the features some row has, in stick
    order; the chain itself lives in ``state.stats``: ``"sticks"`` and ``"log_sticks"``
    (``K*``, decreasing), ``"stick_Z"`` (N, K*) and ``"stick_A"`` (K*, D) in stick order,
    ``"feature_counts"``; ``"pred"`` is scratch space for ``stick_Z @ stick_A``.

    Parameters
    ----------
    n_features_max : int, default=20
        The truncation level ``K*``: the number of sticks, hence the largest number of
        features the chain can hold.
    """

    name = "truncated_gibbs"
    likelihoods = EXPLICIT_LIKELIHOODS
    exact = False

    _parameter_constraints: dict = {
        "n_features_max": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, n_features_max=20):
        self.n_features_max = n_features_max

    # -- state ---------------------------------------------------------------------------
    def initialize(self, X, observed, Z, A, alpha, params, likelihood, rng
                   ) -> ExplicitFeatureState:
        """A chain from ``Z`` (n_samples, K) and ``A`` (K, n_dims), or ``A=None`` to draw
        it given ``Z``.

        The features some row has take the first sticks, most shared first; the other
        sticks carry unused features drawn from the prior. When ``Z`` has more than
        ``n_features_max`` non-empty columns, the most shared ``n_features_max`` are kept.
        The sticks start from a prior draw followed by a few passes of their conditional
        given ``Z``. ``X``, ``Z`` and ``A`` are not modified.
        """
        self._validate_params()
        if not alpha > 0.0:
            raise ValueError(f"alpha must be positive, got {alpha!r}.")
        K_max = int(self.n_features_max)
        X = np.ascontiguousarray(X, dtype=np.float64)
        N, D = X.shape
        Z, A = initial_features(X, observed, Z, A, params, likelihood, rng)
        counts = Z.sum(axis=0)
        live = np.flatnonzero(counts)
        live = live[np.argsort(-counts[live], kind="stable")][:K_max]
        K = live.size

        stick_Z = np.zeros((N, K_max), dtype=np.int8)
        stick_Z[:, :K] = Z[:, live]
        stick_A = np.empty((K_max, D))
        stick_A[:K] = A[live]
        stick_A[K:] = likelihood.sample_prior_features(K_max - K, D, params, rng)
        # Prior draw of the sticks (eq. 4.15), then passes of their conditional given Z.
        # log nu ~ -Exponential(1) / alpha is log Beta(alpha, 1) without underflow.
        log_nu = -rng.exponential(1.0, size=K_max) / float(alpha)
        log_sticks = np.cumsum(np.minimum(log_nu, -1e-12))
        sticks = np.exp(log_sticks)
        feature_counts = stick_Z.sum(axis=0).astype(np.int64)
        for _ in range(_INITIAL_STICK_PASSES):
            sample_sticks(log_sticks, sticks, feature_counts, N, float(alpha), rng)

        state = new_explicit_state(X, observed, stick_Z[:, :K], stick_A[:K], alpha, params,
                                   K_max)
        state.stats.update(
            sticks=sticks,
            log_sticks=log_sticks,
            stick_Z=stick_Z,
            stick_A=stick_A,
            feature_counts=feature_counts,
            pred=np.empty((N, D)),
        )
        return state

    @staticmethod
    def _publish(state: ExplicitFeatureState, live) -> None:
        """Copy the features some row has, in stick order, into ``state.Z``/``state.A``."""
        st = state.stats
        K = live.size
        state.Z[:, :K] = st["stick_Z"][:, live]
        state.A[:K] = st["stick_A"][live]
        if K < state.n_features:
            state.Z[:, K : state.n_features] = 0
            state.A[K : state.n_features] = 0.0
        state.n_features = K

    # -- updates -------------------------------------------------------------------------
    def sweep(self, state: ExplicitFeatureState, likelihood, rng) -> None:
        """One sweep of Algorithm 14: ``Z`` (rows in a random order), the sticks, ``A``."""
        st = state.stats
        X, params = state.X, state.params
        N, D = X.shape
        Z, A, counts = st["stick_Z"], st["stick_A"], st["feature_counts"]
        sweep_truncated(
            X, state.observed, Z, A, st["pred"], st["log_sticks"], st["sticks"], counts,
            rng.permutation(N), float(state.alpha), likelihood.observation_kind,
            likelihood.noise_array(params, D), likelihood.prior_kind,
            likelihood.prior_array(params), rng,
        )
        live = np.flatnonzero(counts)
        if D and live.size:
            # The unused features were drawn from the prior before each row (their
            # conditional); the used ones from the likelihood's update given Z.
            A[live] = likelihood.sample_features(X, state.observed, Z[:, live], A[live],
                                                 params, rng)
        self._publish(state, live)

    def sample_alpha(self, state: ExplicitFeatureState, rng, prior=(1.0, 1.0)) -> None:
        """``alpha`` from its conditional given the sticks.

        The truncated prior of the sticks (eq. 4.42) depends on ``alpha`` through
        ``alpha^K* mu_K*^alpha`` (the ``nu_l ~ Beta(alpha, 1)`` multiply to ``mu_K*``), so
        under a ``Gamma(shape, rate)`` prior ``alpha | mu ~ Gamma(shape + K*, rate -
        log mu_K*)``.
        """
        log_sticks = state.stats["log_sticks"]
        state.alpha = sample_alpha_conditional(
            log_sticks.shape[0], -float(log_sticks[-1]), rng, prior_shape=float(prior[0]),
            prior_rate=float(prior[1]))

#: Old class names (before issue 21), importable with a FutureWarning naming the new one.
__getattr__ = class_aliases(__name__)
