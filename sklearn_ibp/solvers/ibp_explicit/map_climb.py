"""A deterministic climb to a mode of the IBP posterior (Doshi-Velez 2009, sec. 4.5).

Doshi-Velez 2009, sec. 4.5, last paragraph: "instead of sampling, one can simply climb in the
direction of increasing likelihood". This module is that climb for every explicit-feature
likelihood (``"gaussian"``, ``"exponential"``, the leaky noisy-or ``"noisy_or"``). Its
objective is the log joint the explicit-feature samplers trace
(:meth:`ExplicitFeatureSolver.log_joint`),

    J(Z, A) = log p(X | Z, A, params) + log p(A | params) + log P([Z] | alpha),

with ``log P([Z])`` the IBP probability of the left-ordered class (eq. 2.1, the
multiplicity term ``- sum_h log K_h!`` included). One sweep is block coordinate ascent, and
no step lowers ``J``:

1. rows in a random order (the only use of the random generator); in each row, every
   ``z_nk`` in turn takes the value of higher ``J`` (a feature whose column empties is
   dropped, its ``log p(a_k)`` and ``log alpha`` leaving ``J``);
2. one new feature of that row alone, its values at their mode given the row's residual
   (Gaussian: the posterior mean ``r sigma_a^2 / (sigma_a^2 + sigma_x^2)``; exponential:
   the non-negative mode ``max(0, r - sigma_x^2 rate)``; noisy-or: each dimension at its
   better binary value), kept only if ``J`` rises;
3. ``A`` at its conditional mode given ``Z``: the posterior mean (eq. A.3) for
   ``"gaussian"``; exact coordinate ascent for the non-negative (appendix A.2) and binary
   (appendix A.3) features.

The numba side is :mod:`._map_climb_kernels`.
"""

from __future__ import annotations

import math
from numbers import Integral

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import betaln
from sklearn.utils._param_validation import Interval, StrOptions

from ..._deprecation import class_aliases
from ...likelihoods.linear_gaussian import feature_posterior
from ...priors.ibp import harmonic_rate
from ._explicit_base import (
    ExplicitFeatureSolver,
    ExplicitFeatureState,
    check_explicit_likelihood,
    check_feature_capacity,
    check_start_features,
    new_explicit_state,
    start_counts_and_prediction,
)
from ._map_climb_kernels import climb_features, climb_rows, column_weights
from ._metropolis_kernels import compact_features, refresh_prediction

__all__ = ["MapClimbIBP"]

#: Likelihood names (``FeatureLikelihood.name``) the climb serves.
MAP_LIKELIHOODS = ("gaussian", "exponential", "noisy_or")
#: Rounds of recruiting rows and refitting a shared new feature (``birth="shared"``).
_SHARED_ROUNDS = 3
#: Most rounds of coordinate ascent over the noisy-or ``epsilon`` and ``lambda``.
_NOISE_ROUNDS = 50
#: Bounds of the probabilities set by :meth:`MapClimbIBP.mode_parameters`.
_PROB_BOUNDS = (1e-6, 1.0 - 1e-6)


class MapClimbIBP(ExplicitFeatureSolver):
    """Deterministic hill climbing to a mode of the IBP posterior (Doshi-Velez 2009, sec. 4.5).

    An optimiser, not a sampler (:attr:`exact` is False): the chain does not target the
    posterior. Each :meth:`sweep` never lowers the log joint
    ``log p(X, [Z], A | alpha, params)`` (:meth:`log_joint`): every ``z_nk`` in turn takes
    its better value, each row may gain one new feature of its own at its best values,
    and ``A`` is set to its conditional mode given ``Z`` (module docstring). The climb
    stops at a point where no single flip of ``z_nk``, no new single-row feature and no
    change of one coordinate of ``A`` (of all of ``A`` for ``"gaussian"``) raises the log
    joint. Since the last state is the best, one chain gives one fast point estimate;
    several chains (``n_chains``) climb from several starts.

    The random generator only sets the order in which the rows are visited; given it,
    results are reproducible bit for bit.

    Parameters
    ----------
    birth : {"auto", "singleton", "shared"}, default="auto"
        The new feature each row may gain. ``"singleton"``: a feature of that row alone,
        its values at their mode given the row's residual (the brief sketch in Doshi-Velez
        2009, sec. 4.5). ``"shared"``: also tries, and keeps if better, that feature given to
        every row whose likelihood it raises, refitted to those rows (three rounds of
        recruiting and refitting; the change of the log joint is computed exactly for the
        whole block, so the climb stays monotone). A singleton must pay the whole prior
        cost of a feature from one row's evidence, so with many dimensions it is rarely
        accepted, and the climb stalls; the shared birth pays it once for many rows. It
        costs ``O(N^2 D)`` per sweep instead of ``O(N K D)``. ``"auto"``: ``"shared"`` for
        the non-negative and binary features, ``"singleton"`` for ``"gaussian"``, where
        shared births of features of either sign were measured to lead to worse modes (on
        the block images of :func:`sklearn_ibp.datasets.make_block_images`).
    parameters : {"fixed", "mode"}, default="fixed"
        What the estimator's hyperparameter step (``sample_hyperparameters=True``, which
        calls :meth:`sample_parameters`) does to the likelihood's parameters. ``"fixed"``:
        leaves them where they were set (for instance by ``sigma_x``), the safe choice for
        a point estimate. ``"mode"``: sets them to their conditional mode given ``Z`` and
        ``A`` (:meth:`mode_parameters`). In both cases ``alpha`` goes to its conditional
        mode (:meth:`sample_alpha`). A likelihood's own ``sample_parameters`` draws at
        random, and must not be used with this solver.
    capacity : int, default=32
        Feature slots allocated at the start; doubled when more are needed.

    Attributes
    ----------
    name : str
        ``"map_climb"``, its ``solver=`` name.
    exact : bool
        False: an optimiser.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ibp.datasets import make_block_images
    >>> from sklearn_ibp.likelihoods import LinearGaussianFeatures
    >>> from sklearn_ibp.solvers import MapClimbIBP
    >>> X, _, _ = make_block_images(n_samples=60, random_state=0)
    >>> lik, solver, rng = LinearGaussianFeatures(), MapClimbIBP(), np.random.default_rng(0)
    >>> params = {"sigma_x": 0.5, "sigma_a": 1.0}
    >>> state = solver.initialize(X, None, np.zeros((60, 0)), None, 1.0, params, lik, rng)
    >>> values = []
    >>> for _ in range(5):
    ...     solver.sweep(state, lik, rng)
    ...     values.append(solver.log_joint(state, lik))
    >>> bool(np.all(np.diff(values) >= 0.0))
    True
    """

    name = "map_climb"
    likelihoods = MAP_LIKELIHOODS
    exact = False

    _parameter_constraints: dict = {
        "birth": [StrOptions({"auto", "shared", "singleton"})],
        "parameters": [StrOptions({"fixed", "mode"})],
        "capacity": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, birth="auto", parameters="fixed", capacity=32):
        self.birth = birth
        self.parameters = parameters
        self.capacity = capacity

    # -- the solver interface ------------------------------------------------------------
    def initialize(self, X, observed, Z, A, alpha, params, likelihood, rng
                   ) -> ExplicitFeatureState:
        """A climb's state from ``Z`` (N, K) and ``A`` (K, D); inputs are copied.

        The parameters are those of :meth:`MetropolisIBP.initialize` but for ``A=None``,
        which sets the features to their conditional mode given ``Z``, ``likelihood``, one
        of ``"gaussian"``, ``"exponential"`` or ``"noisy_or"``, and ``rng``, which is not
        used (the start is deterministic).

        Returns
        -------
        state : ExplicitFeatureState
        """
        X, observed, Z = self._check_initialize(likelihood, X, observed, alpha, Z)
        N, D = X.shape
        likelihood.check_data(X, observed)
        K = Z.shape[1]
        fill_A = A is None
        if fill_A:
            A = np.zeros((K, D))
        A = check_start_features(A, K, D)
        missing = [p for p in getattr(likelihood, "parameter_names", ()) if p not in params]
        if missing:
            raise ValueError(f"params must hold {list(likelihood.parameter_names)}; "
                             f"missing {missing}.")
        state = new_explicit_state(X, observed, Z, A, alpha, params,
                                   capacity=max(int(self.capacity), 2 * K + 8))
        start_counts_and_prediction(state, K)
        state.stats["weights"] = column_weights(N)
        state.stats["log_beta"] = _log_beta_table(N)
        if fill_A:
            self._features(state, likelihood)
        refresh_prediction(state.Z, state.A, state.n_features, state.stats["pred"])
        return state

    def sweep(self, state: ExplicitFeatureState, likelihood, rng) -> None:
        """One sweep of the climb (module docstring): the rows in a random order drawn
        from ``rng``, then ``A`` at its conditional mode. Never lowers :meth:`log_joint`."""
        if "weights" not in state.stats:
            raise ValueError(f"state was not made by {type(self).__name__}.initialize.")
        check_explicit_likelihood(self, likelihood)
        N, D = state.X.shape
        noise = likelihood.noise_array(state.params, D)
        prior = likelihood.prior_array(state.params)
        stats = state.stats
        refresh_prediction(state.Z, state.A, state.n_features, stats["pred"])
        row_order = rng.permutation(N).astype(np.int64)
        position = 0
        while True:
            hashes = np.zeros(state.Z.shape[1], dtype=np.uint64)
            K, position = climb_rows(
                position, row_order, state.X, state.observed, state.Z, state.A,
                stats["pred"], stats["counts"], state.n_features,
                likelihood.observation_kind, noise, likelihood.prior_kind, prior,
                math.log(state.alpha), stats["log_beta"], stats["weights"], hashes,
                self._shared_birth(likelihood), _SHARED_ROUNDS,
            )
            state.n_features = int(K)
            if position >= N:
                break
            state.n_features = int(compact_features(state.Z, state.A, stats["counts"],
                                                    state.n_features))
            self._grow(state)
        self._features(state, likelihood)

    def sample_alpha(self, state: ExplicitFeatureState, rng=None, prior=(1.0, 1.0)) -> None:
        """``alpha`` at the mode of its conditional ``Gamma(shape + K, rate + H_N)``
        (Doshi-Velez 2009, sec. 5.1), ``(shape + K - 1) / (rate + H_N)``; deterministic, ``rng`` is
        not used. When ``shape + K <= 1`` the mode is at zero, which would forbid new
        features for good; ``alpha`` is then left as it is."""
        shape, rate = float(prior[0]), float(prior[1])
        top = shape + state.n_features - 1.0
        if top > 0.0:
            state.alpha = top / (rate + harmonic_rate(state.X.shape[0]))

    def sample_parameters(self, state: ExplicitFeatureState, likelihood, rng=None) -> None:
        """The estimator's hyperparameter step: nothing with ``parameters="fixed"``,
        :meth:`mode_parameters` with ``parameters="mode"``; ``rng`` is not used."""
        if self.parameters == "mode":
            self.mode_parameters(state, likelihood)

    def mode_parameters(self, state: ExplicitFeatureState, likelihood) -> dict:
        """Set the likelihood's parameters to their conditional mode given ``Z`` and ``A``.

        Under the likelihoods' priors (Doshi-Velez 2009, sec. 5.1: Gamma(1, 1) on the precisions
        and on the exponential rate; Beta priors of the noisy-or): the noise precision
        ``1 / sigma_x^2`` at the mode ``(n_obs / 2) / (1 + sum r^2 / 2)`` of its
        Gamma(1 + n_obs / 2, 1 + sum r^2 / 2) conditional; ``1 / sigma_a^2`` at
        ``(K D / 2) / (1 + sum A^2 / 2)``; the rate at ``K D / (1 + sum A)``; ``p_a`` at the
        mode of its Beta conditional; the noisy-or ``epsilon`` and ``lambda`` at a
        maximum of their joint conditional density (coordinate ascent by bounded
        one-dimensional searches, each step kept only when it is higher). Each step
        raises ``log_joint + log p(params)``, not ``log_joint`` alone. A parameter
        without data (no features, no observed entry) is left as it is. Deterministic.

        Parameters
        ----------
        state : ExplicitFeatureState
        likelihood : FeatureLikelihood

        Returns
        -------
        params : dict
            The new parameters (also set on ``state.params``).
        """
        check_explicit_likelihood(self, likelihood)
        params = dict(state.params)
        Z, A = state.active_Z, state.active_A
        mask = state.observed.astype(bool)
        n_obs = int(mask.sum())
        size = A.size
        if likelihood.name in ("gaussian", "exponential"):
            resid = np.where(mask, state.X - likelihood.predict(Z, A, params), 0.0)
            if n_obs:
                params["sigma_x"] = math.sqrt((1.0 + 0.5 * float(np.sum(resid**2)))
                                              / (0.5 * n_obs))
            if size and likelihood.name == "gaussian":
                params["sigma_a"] = math.sqrt((1.0 + 0.5 * float(np.sum(A**2))) / (0.5 * size))
            elif size:
                params["rate"] = size / (1.0 + float(np.sum(A)))
        else:
            if size:
                a, b = likelihood.p_a_prior
                n_on = float(np.sum(A > 0.5))
                params["p_a"] = _beta_mode(a + n_on, b + size - n_on)
            if n_obs:
                params = _noisy_or_noise_mode(likelihood, state, params, mask)
        state.params = params
        return params

    # -- helpers ---------------------------------------------------------------------------
    def _shared_birth(self, likelihood) -> bool:
        if self.birth == "auto":
            return likelihood.name != "gaussian"
        return self.birth == "shared"

    def _grow(self, state: ExplicitFeatureState) -> None:
        old = state.stats["counts"]
        K, cap = state.n_features, state.Z.shape[1]
        new_cap = max(2 * cap, K + 8)
        check_feature_capacity(state.Z.shape[0], state.A.shape[1], new_cap, state.alpha)
        Z = np.zeros((state.Z.shape[0], new_cap), dtype=np.int8)
        Z[:, :K] = state.Z[:, :K]
        A = np.zeros((new_cap, state.A.shape[1]))
        A[:K] = state.A[:K]
        counts = np.zeros(new_cap, dtype=np.int64)
        counts[:K] = old[:K]
        state.Z, state.A, state.stats["counts"] = Z, A, counts

    @staticmethod
    def _features(state: ExplicitFeatureState, likelihood) -> None:
        """``A`` at its conditional mode given ``Z``; ``pred`` refreshed."""
        K, D = state.n_features, state.X.shape[1]
        pred = state.stats["pred"]
        if K and D and likelihood.name == "gaussian":
            Xm = np.where(state.observed.astype(bool), state.X, np.nan)
            before = state.A[:K].copy()
            old = _feature_objective(state, likelihood)
            state.A[:K] = feature_posterior(Xm, state.active_Z, float(state.params["sigma_x"]),
                                            float(state.params["sigma_a"]))[0]
            if not _feature_objective(state, likelihood) >= old:
                state.A[:K] = before  # a badly conditioned solve; never step down
            refresh_prediction(state.Z, state.A, K, pred)
        elif K and D:
            refresh_prediction(state.Z, state.A, K, pred)
            climb_features(state.X, state.observed, state.Z, state.A, pred, K,
                           likelihood.observation_kind, likelihood.noise_array(state.params, D),
                           likelihood.prior_kind, likelihood.prior_array(state.params))
            refresh_prediction(state.Z, state.A, K, pred)


def _log_beta_table(n_rows):
    """``log B(m, N - m + 1)`` for ``m = 0 .. N`` (``m = 0`` unused)."""
    m = np.arange(n_rows + 1, dtype=np.float64)
    table = np.zeros(n_rows + 1)
    table[1:] = betaln(m[1:], n_rows - m[1:] + 1.0)
    return table


def _feature_objective(state, likelihood):
    Z, A = state.active_Z, state.active_A
    return (likelihood.log_likelihood(state.X, state.observed, Z, A, state.params)
            + likelihood.log_prior_features(A, state.params))


def _beta_mode(a, b):
    """The mode of Beta(a, b) on [1e-6, 1 - 1e-6] (log-concave when a, b >= 1; an end
    when one shape is below 1)."""
    if a >= 1.0 and b >= 1.0 and a + b > 2.0:
        mode = (a - 1.0) / (a + b - 2.0)
    else:
        mode = 1.0 if a > b else 0.0
    return float(np.clip(mode, *_PROB_BOUNDS))


def _noisy_or_noise_mode(likelihood, state, params, mask):
    """``epsilon`` then ``lambda`` at the maximum of their conditional density (the leaky
    noisy-or likelihood times the Beta priors), each kept only if it is higher."""
    Z = state.active_Z.astype(np.float64)
    counts = np.rint(Z @ state.active_A).astype(np.int64)
    ones = mask & (state.X > 0.5)
    zeros = mask & ~(state.X > 0.5)
    n_zero = float(np.sum(zeros))
    zero_count = float(np.sum(counts[zeros]))
    one_tally = np.bincount(counts[ones], minlength=1).astype(np.float64)
    levels = np.arange(one_tally.size, dtype=np.float64)

    def log_density(eps, lam):
        with np.errstate(divide="ignore", invalid="ignore"):
            log_zero = math.log(eps) + levels * math.log(lam)
            total = n_zero * math.log(eps) + zero_count * math.log(lam)
            total += float(np.sum(np.where(one_tally > 0,
                                           one_tally * np.log(-np.expm1(log_zero)), 0.0)))
        a_e, b_e = likelihood.epsilon_prior
        a_l, b_l = likelihood.lambda_prior
        return (total + (a_e - 1.0) * math.log(eps) + (b_e - 1.0) * math.log1p(-eps)
                + (a_l - 1.0) * math.log(lam) + (b_l - 1.0) * math.log1p(-lam))

    eps, lam = float(params["epsilon"]), float(params["lambda"])
    current = log_density(eps, lam)
    for _ in range(_NOISE_ROUNDS):  # coordinate ascent to a joint maximum
        start = current
        found = minimize_scalar(lambda v, lam=lam: -log_density(v, lam), bounds=_PROB_BOUNDS,
                                method="bounded", options={"xatol": 1e-10})
        if np.isfinite(found.fun) and -float(found.fun) > current:
            current, eps = -float(found.fun), float(found.x)
        found = minimize_scalar(lambda v, eps=eps: -log_density(eps, v), bounds=_PROB_BOUNDS,
                                method="bounded", options={"xatol": 1e-10})
        if np.isfinite(found.fun) and -float(found.fun) > current:
            current, lam = -float(found.fun), float(found.x)
        if current - start < 1e-10 * (1.0 + abs(current)):
            break
    return {**params, "epsilon": eps, "lambda": lam}

#: Old class names (before issue 21), importable with a FutureWarning naming the new one.
__getattr__ = class_aliases(__name__)
