"""Parallel tempering for the explicit-feature IBP samplers (Doshi-Velez 2009, sec. 3.1, last
paragraph; Earl and Deem, 2005).

Doshi-Velez (2009), sec. 3.1, ends: "mixing can be improved by running the Gibbs sampler at several
different temperatures, a technique known as parallel tempering (Earl and Deem, 2005).
Chains are allowed to exchange samples via Metropolis steps, and the idea is that chains
running at higher temperatures, that is, with smoothed probability distributions, will be
able to move more effectively from local hills."

Here ``T`` copies of one explicit-feature sampler run side by side. Rung ``t`` has inverse
temperature ``b_t`` (``1 = b_1 > b_2 > ... > b_T > 0``) and its own state
``s_t = (Z_t, A_t, params_t, alpha_t)`` (with whatever auxiliary variables the sampler
carries), and targets the posterior with a flattened likelihood::

    pi_t(s) ∝ p(X | Z, A, params)^b_t  p(Z | alpha) p(A | params) p(params) p(alpha).

Only the likelihood is tempered. The rungs together target the product ``prod_t pi_t``,
whose first factor is the posterior. Each sweep updates every rung by the sampler at its
own temperature; every ``swap_every`` sweeps a round of Metropolis exchanges proposes to
swap the whole states of adjacent rungs ``t`` and ``t + 1``, accepted with probability::

    min(1, exp((b_t - b_{t+1}) (L(s_{t+1}) - L(s_t))))

where ``L(s) = log p(X | Z, A, params)`` is the untempered log-likelihood of a state at its
own parameters. Since every factor of the product is a fixed distribution (the
normalising constant of ``pi_t`` depends on nothing in the state), the exchange leaves the
product invariant, hence the cold rung's marginal is the posterior.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import HasMethods, Interval

from ..._deprecation import class_aliases
from ...likelihoods._feature_base import FeatureLikelihood
from ...likelihoods._observation_kernels import OBSERVE_GAUSSIAN
from ...likelihoods.linear_gaussian import _draw_precision, _observed_residual
from ._explicit_base import ExplicitFeatureSolver, ExplicitFeatureState

__all__ = ["TemperingIBP", "TemperedLikelihood", "TemperingRecord"]

#: Likelihoods that can be tempered through the kernels' noise array (Gaussian noise).
TEMPERED_LIKELIHOODS = ("gaussian", "exponential")

#: Methods an explicit-feature solver has (``ExplicitFeatureSolver``'s contract).
_SOLVER_METHODS = ("initialize", "sweep", "sample_alpha", "log_joint")

#: The key of ``state.stats`` that holds the hot rungs and the swap counts.
STATS_KEY = "tempering"


class TemperedLikelihood(FeatureLikelihood):
    """A Gaussian-noise likelihood raised to the power ``b`` (``0 < b <= 1``).

    For ``x_nd ~ N((z_n A)_d, sigma_x^2)``,

        N(x; m, sigma_x^2)^b = N(x; m, sigma_x^2 / b) * b^(-1/2) (2 pi sigma_x^2)^((1-b)/2),

    and the last factor depends on neither ``Z`` nor ``A``. So with the parameters fixed,
    every update of ``Z`` and ``A`` under the tempered likelihood is the untempered update
    at noise ``sigma_x / sqrt(b)``: that is what :meth:`noise_array` and
    :meth:`sample_features` hand to the samplers' kernels, unchanged. The factor does
    depend on ``sigma_x``, so :meth:`sample_parameters` draws ``sigma_x`` from its own
    tempered conditional, and :meth:`row_log_likelihood` is exactly ``b`` times the
    untempered one.

    The binary likelihoods (leaky noisy-or, detection) cannot be tempered this way:
    ``(1 - eps lambda^c)^b`` is no leaky noisy-or with other parameters, and the
    kernels (:mod:`sklearn_ibp.likelihoods._observation_kernels`) take no exponent; so only
    ``"gaussian"`` and ``"exponential"`` are served.

    Parameters
    ----------
    likelihood : FeatureLikelihood
        The untempered model: :class:`~sklearn_ibp.likelihoods.LinearGaussianFeatures` or
        :class:`~sklearn_ibp.likelihoods.ExponentialGaussian` (Gaussian noise with
        standard deviation ``params["sigma_x"]`` and a Gamma(1, 1) prior on its precision,
        Doshi-Velez 2009, sec. 5.1).
    inverse_temperature : float
        The exponent ``b`` in (0, 1].
    """

    def __init__(self, likelihood, inverse_temperature: float):
        check_temperable(likelihood)
        b = float(inverse_temperature)
        if not (0.0 < b <= 1.0):
            raise ValueError(f"inverse_temperature must be in (0, 1]; got {inverse_temperature!r}.")
        self.base = likelihood
        self.inverse_temperature = b
        self.name = likelihood.name
        self.observation_kind = likelihood.observation_kind
        self.prior_kind = likelihood.prior_kind
        self.parameter_names = likelihood.parameter_names

    def __repr__(self) -> str:
        return (f"TemperedLikelihood({self.base!r}, "
                f"inverse_temperature={self.inverse_temperature!r})")

    def _flattened(self, params) -> dict:
        """The parameters under which the base model is the tempered one (up to a factor
        free of ``Z`` and ``A``): ``sigma_x / sqrt(b)``."""
        return {**params, "sigma_x": float(params["sigma_x"]) / math.sqrt(self.inverse_temperature)}

    def check_data(self, X, observed) -> None:
        """The base model's checks."""
        self.base.check_data(X, observed)

    def initial_parameters(self, X, observed) -> dict:
        """The base model's starting parameters."""
        return self.base.initial_parameters(X, observed)

    def noise_array(self, params, n_dims: int) -> np.ndarray:
        """The base model's noise array at ``sigma_x / sqrt(b)``."""
        return self.base.noise_array(self._flattened(params), n_dims)

    def prior_array(self, params) -> np.ndarray:
        """The feature prior is not tempered: the base model's array."""
        return self.base.prior_array(params)

    def sample_prior_features(self, n_features: int, n_dims: int, params, rng) -> np.ndarray:
        """Draws from the (untempered) feature prior."""
        return self.base.sample_prior_features(n_features, n_dims, params, rng)

    def sample_features(self, X, observed, Z, A, params, rng) -> np.ndarray:
        """``A`` from its tempered conditional: the base update at ``sigma_x / sqrt(b)``."""
        return self.base.sample_features(X, observed, Z, A, self._flattened(params), rng)

    def sample_parameters(self, X, observed, Z, A, params, rng) -> dict:
        """New parameters from their tempered conditionals.

        The feature prior's parameter (``sigma_a`` or ``rate``) sees only ``A``, so the
        base model's draw is kept. The noise precision ``tau = 1 / sigma_x^2`` has the
        Gamma(1, 1) prior of Doshi-Velez 2009, sec. 5.1, and the likelihood
        ``tau^(b n / 2) exp(-b tau S / 2)`` (``n`` observed entries, ``S`` the sum of
        squared residuals), hence ``tau ~ Gamma(1 + b n / 2, rate 1 + b S / 2)``.
        """
        new = self.base.sample_parameters(X, observed, Z, A, params, rng)
        b = self.inverse_temperature
        resid, mask = _observed_residual(X, observed, Z, A)
        precision = _draw_precision(b * float(mask.sum()), b * float(np.sum(resid**2)), rng)
        new["sigma_x"] = float(1.0 / np.sqrt(precision))
        return new

    def row_log_likelihood(self, X, observed, Z, A, params) -> np.ndarray:
        """``b`` times the base model's row log-likelihoods."""
        return self.inverse_temperature * self.base.row_log_likelihood(X, observed, Z, A, params)

    def log_prior_features(self, A, params) -> float:
        """The (untempered) feature prior."""
        return self.base.log_prior_features(A, params)

    def predict(self, Z, A, params) -> np.ndarray:
        """``Z A``."""
        return self.base.predict(Z, A, params)

    def sample_data(self, Z, A, params, rng) -> np.ndarray:
        """Data from the normalised tempered density, ``N(Z A, sigma_x^2 / b)``."""
        return self.base.sample_data(Z, A, self._flattened(params), rng)


def check_temperable(likelihood) -> None:
    """``ValueError`` naming ``likelihood`` unless it is a Gaussian-noise explicit model."""
    name = getattr(likelihood, "name", None)
    if (
        isinstance(likelihood, TemperedLikelihood)
        or name not in TEMPERED_LIKELIHOODS
        or getattr(likelihood, "observation_kind", None) != OBSERVE_GAUSSIAN
        or "sigma_x" not in getattr(likelihood, "parameter_names", ())
    ):
        raise ValueError(
            "likelihood must be one of the Gaussian-noise explicit-feature models "
            f"{TEMPERED_LIKELIHOODS} for parallel tempering (a binary likelihood raised to "
            f"a power is no likelihood the kernels know); got {likelihood!r}."
        )


@dataclass
class TemperingRecord:
    """What :class:`TemperingIBP` keeps in ``state.stats["tempering"]``.

    Attributes
    ----------
    solver : ExplicitFeatureSolver
        The sampler every rung runs.
    inverse_temperatures : ndarray of shape (n_temperatures,)
        ``b_1 = 1 > b_2 > ... > b_T``.
    hot : list of ExplicitFeatureState
        The states of rungs 2..T (the cold rung is the state holding this record).
    swap_attempts, swap_accepts : ndarray of shape (n_temperatures - 1,)
        Exchanges proposed and accepted between rungs ``t`` and ``t + 1``.
    n_sweeps : int
        Sweeps done (a swap round follows every ``swap_every``-th).
    """

    solver: ExplicitFeatureSolver
    inverse_temperatures: np.ndarray
    hot: list = field(default_factory=list)
    swap_attempts: np.ndarray = None
    swap_accepts: np.ndarray = None
    n_sweeps: int = 0

    @property
    def acceptance_rates(self) -> np.ndarray:
        """Accepted over proposed exchanges per adjacent pair (NaN before any)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.swap_attempts > 0,
                            self.swap_accepts / np.maximum(self.swap_attempts, 1), np.nan)


def _exchange(cold: ExplicitFeatureState, other: ExplicitFeatureState) -> None:
    """Swap everything the chains carry between two states (data stays), keeping the
    tempering record with ``cold``."""
    record = cold.stats.pop(STATS_KEY)
    for name in ("Z", "A", "n_features", "alpha", "params", "stats"):
        a, b = getattr(cold, name), getattr(other, name)
        setattr(cold, name, b)
        setattr(other, name, a)
    cold.stats[STATS_KEY] = record


class TemperingIBP(ExplicitFeatureSolver):
    """Parallel tempering around an explicit-feature IBP sampler (Doshi-Velez 2009, sec. 3.1).

    ``n_temperatures`` copies of ``solver`` run at inverse temperatures
    ``1 = b_1 > ... > b_T``; rung ``t`` targets ``p(X | Z, A, params)^b_t p(Z, A, params,
    alpha)`` (:class:`TemperedLikelihood`), and adjacent rungs exchange their states by
    Metropolis steps (module docstring). The state the estimator sees is the cold rung's:
    ``active_Z``, ``active_A``, ``params``, ``alpha`` and :meth:`log_joint` are those of
    the posterior chain, so the estimator needs no change; the hot rungs and the swap
    counts live in ``state.stats["tempering"]`` (a :class:`TemperingRecord`; see
    :meth:`rung_states` and :meth:`swap_acceptance`).

    **Hyperparameters.** Each rung carries its own ``params`` and ``alpha``, drawn from
    its own (tempered) conditionals, and an exchange swaps them with ``Z`` and ``A``.
    :meth:`sample_parameters` (called by the estimator when it samples hyperparameters)
    draws the cold rung's from the untempered conditional, exactly as the estimator would,
    and each hot rung's from the tempered one (:meth:`TemperedLikelihood.sample_parameters`);
    :meth:`sample_alpha` draws every rung's ``alpha`` with the wrapped sampler's update
    (the likelihood does not enter it). Then every rung's target is a fixed distribution
    over its whole state and the exchange ratio holds only the likelihoods, so the product
    of the rungs' targets, and with it the posterior of the cold rung, is left invariant.
    Sharing the cold rung's parameters with the hot rungs would not be exact: the
    normalising constant of a hot rung's target given the parameters depends on them, so
    after the cold rung's parameters move, the hot states are no longer draws of their
    targets at the new parameters and the exchanges would bias the cold chain. When the
    hyperparameters are held fixed every rung keeps the starting ones, which is exact too.

    Parameters
    ----------
    solver : str or ExplicitFeatureSolver, default="metropolis"
        The sampler each rung runs: a name among the explicit-feature solvers
        (``"metropolis"``, ``"slice"``, ``"semi_ordered_slice"``, ``"truncated_gibbs"``,
        ``"approximate_gibbs"``, any other sampler registered in ``EXPLICIT_SOLVERS``) or
        such an object. The default,
        :class:`~sklearn_ibp.solvers.MetropolisIBP`, is the Gibbs sampler of Doshi-Velez 2009,
        sec. 3.1 with Metropolis-Hastings moves for new features. A maximising solver
        (``"map_climb"``) is refused.
    n_temperatures : int, default=4
        Number of rungs ``T`` (1 runs ``solver`` alone, draw for draw).
    max_temperature : float, default=10.0
        Temperature of the hottest rung (> 1): the ladder is geometric,
        ``b_t = max_temperature^(-(t - 1) / (T - 1))``.
    temperatures : array-like of shape (n_rungs,) or None, default=None
        An explicit ladder of temperatures ``1 = T_1 < T_2 < ...`` (finite); when given,
        it sets the rungs and ``n_temperatures`` and ``max_temperature`` are not used.
    swap_every : int, default=1
        Sweeps between two rounds of exchanges (each round proposes every adjacent pair
        once, coldest first).

    Attributes
    ----------
    name : str
        ``"tempering"``.
    likelihoods : tuple of str
        ``("gaussian", "exponential")``: the Gaussian-noise models, which can be tempered
        through the kernels' noise array (see :class:`TemperedLikelihood`).

    Notes
    -----
    Cost: ``T`` times the wrapped sampler's sweep plus one untempered log-likelihood per
    rung per exchange round. The chain is as exact as the wrapped sampler (``exact``).

    The log-likelihood is a sum over the ``N D`` observed entries, so the gap between
    adjacent rungs grows with the data and the ladder must be denser: on four rows of two
    dimensions three rungs up to temperature 10 exchange 8-10% of the time and cut the
    autocorrelation time of the cold chain's class of ``Z`` from about 95 sweeps to 24 (72
    rung-sweeps of work; MetropolisIBP, one 20000-sweep run each); on
    50 block images of 36 pixels the first pair of a four-rung ladder up to temperature 3
    exchanged less than 2% of the time, and eight rungs up to 2 still had a pair below 10%.
    """

    name = "tempering"
    likelihoods = TEMPERED_LIKELIHOODS

    _parameter_constraints: dict = {
        "solver": [str, HasMethods(list(_SOLVER_METHODS))],
        "n_temperatures": [Interval(Integral, 1, None, closed="left")],
        "max_temperature": [Interval(Real, 1.0, None, closed="neither")],
        "temperatures": ["array-like", None],
        "swap_every": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, solver="metropolis", n_temperatures=4, max_temperature=10.0,
                 temperatures=None, swap_every=1):
        self.solver = solver
        self.n_temperatures = n_temperatures
        self.max_temperature = max_temperature
        self.temperatures = temperatures
        self.swap_every = swap_every

    @property
    def exact(self) -> bool:
        """Whether the cold chain targets the exact posterior: that of the wrapped sampler."""
        try:
            return bool(getattr(self._resolve_solver(), "exact", True))
        except ValueError:
            return True

    # -- parameters ----------------------------------------------------------------------
    def inverse_temperatures(self) -> np.ndarray:
        """The ladder of inverse temperatures ``b_t``, decreasing from ``b_1 = 1`` to
        ``b_T > 0`` (a new float64 array)."""
        self._validate_params()
        if self.temperatures is not None:
            try:
                temps = np.asarray(self.temperatures, dtype=np.float64)
            except (TypeError, ValueError):
                raise ValueError(
                    f"temperatures must be a 1-d array of numbers; got {self.temperatures!r}."
                ) from None
            if (temps.ndim != 1 or temps.size == 0 or not np.all(np.isfinite(temps))
                    or temps[0] != 1.0 or np.any(np.diff(temps) <= 0.0)):
                raise ValueError(
                    "temperatures must be a 1-d array of finite, strictly increasing "
                    f"temperatures starting at 1.0; got {self.temperatures!r}."
                )
            return 1.0 / temps
        T = int(self.n_temperatures)
        if T == 1:
            return np.ones(1)
        steps = np.arange(T, dtype=np.float64) / (T - 1)
        return float(self.max_temperature) ** (-steps)

    def _resolve_solver(self) -> ExplicitFeatureSolver:
        solver = self.solver
        if isinstance(solver, str):
            from .. import EXPLICIT_SOLVERS  # the registry imports this module

            names = sorted(n for n, cls in EXPLICIT_SOLVERS.items()
                           if n == cls.name and n not in ("tempering", "map_climb"))
            if solver not in names:
                raise ValueError(f"solver must be one of {names} or a solver object; "
                                 f"got {solver!r}.")
            solver = EXPLICIT_SOLVERS[solver]()
        if isinstance(solver, type):
            raise ValueError(f"solver must be a solver object or name, not the class {solver!r}.")
        if isinstance(solver, TemperingIBP):
            raise ValueError("solver must not itself be a TemperingIBP.")
        if not all(callable(getattr(solver, m, None)) for m in _SOLVER_METHODS):
            raise ValueError(f"solver must have the methods {_SOLVER_METHODS}; got {solver!r}.")
        if getattr(solver, "name", None) == "map_climb":
            raise ValueError(
                "solver 'map_climb' climbs to a mode rather than sampling; parallel tempering "
                "needs a sampler."
            )
        return solver

    # -- the contract ----------------------------------------------------------------------
    def initialize(self, X, observed, Z, A, alpha, params, likelihood, rng
                   ) -> ExplicitFeatureState:
        """Every rung from the same ``Z`` and ``A`` (each rung copies them).

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_dims)
            Data (any finite value where not observed); shared by the rungs, not modified.
        observed : ndarray of shape (n_samples, n_dims)
            1 where ``X`` is observed.
        Z : ndarray of shape (n_samples, n_features)
            Starting binary feature matrix.
        A : ndarray of shape (n_features, n_dims) or None
            Starting features (what ``solver.initialize`` accepts).
        alpha : float
            IBP concentration, the same at every rung to start.
        params : dict
            The likelihood's parameters, the same at every rung to start.
        likelihood : FeatureLikelihood
            ``"gaussian"`` or ``"exponential"``.
        rng : numpy.random.Generator
            The chain's generator.

        Returns
        -------
        state : ExplicitFeatureState
            The cold rung's state; the others are in ``state.stats["tempering"]``.
        """
        betas = self.inverse_temperatures()
        solver = self._resolve_solver()
        check_temperable(likelihood)
        served = getattr(solver, "likelihoods", TEMPERED_LIKELIHOODS)
        if likelihood.name not in served:
            raise ValueError(f"solver {getattr(solver, 'name', solver)!r} does not serve "
                             f"likelihood {likelihood.name!r}.")
        state = solver.initialize(X, observed, Z, A, alpha, params, likelihood, rng)
        hot = [
            solver.initialize(X, observed, Z, A, alpha, params, TemperedLikelihood(likelihood, b),
                              rng)
            for b in betas[1:]
        ]
        pairs = betas.size - 1
        state.stats[STATS_KEY] = TemperingRecord(
            solver=solver,
            inverse_temperatures=betas,
            hot=hot,
            swap_attempts=np.zeros(pairs, dtype=np.int64),
            swap_accepts=np.zeros(pairs, dtype=np.int64),
        )
        return state

    @staticmethod
    def _record(state: ExplicitFeatureState) -> TemperingRecord:
        record = state.stats.get(STATS_KEY)
        if not isinstance(record, TemperingRecord):
            raise ValueError("the state was not made by TemperingIBP.initialize.")
        return record

    @staticmethod
    def _rung_likelihood(likelihood, b: float):
        """The cold rung sees the likelihood object itself (so one rung is bit for bit the
        wrapped sampler); the others its tempered version."""
        return likelihood if b == 1.0 else TemperedLikelihood(likelihood, b)

    def rung_states(self, state: ExplicitFeatureState) -> list:
        """The live states of the rungs, coldest first (``state`` itself first)."""
        return [state, *self._record(state).hot]

    def swap_acceptance(self, state: ExplicitFeatureState) -> np.ndarray:
        """The fraction of accepted exchanges between rungs ``t`` and ``t + 1``, shape
        (n_temperatures - 1,) (NaN for a pair not proposed yet)."""
        return self._record(state).acceptance_rates

    def reset_rung(self, state: ExplicitFeatureState, rung: int, Z, A, likelihood, rng
                   ) -> None:
        """Restart rung ``rung`` (0 = cold) from ``Z`` and ``A`` at its current ``alpha``
        and ``params`` (by the wrapped sampler's ``initialize``); the other rungs and the
        swap counts are kept."""
        record = self._record(state)
        rungs = self.rung_states(state)
        if not (isinstance(rung, Integral) and 0 <= rung < len(rungs)):
            raise ValueError(f"rung must be an integer in [0, {len(rungs)}); got {rung!r}.")
        old = rungs[rung]
        lik = self._rung_likelihood(likelihood, float(record.inverse_temperatures[rung]))
        new = record.solver.initialize(old.X, old.observed, Z, A, old.alpha, old.params,
                                       lik, rng)
        if rung == 0:
            _exchange(state, new)
        else:
            record.hot[rung - 1] = new

    def sweep(self, state: ExplicitFeatureState, likelihood, rng) -> None:
        """One sweep of every rung at its temperature, then (every ``swap_every`` sweeps)
        one round of exchanges between adjacent rungs."""
        record = self._record(state)
        betas = record.inverse_temperatures
        solver = record.solver
        for b, rung in zip(betas, self.rung_states(state), strict=True):
            solver.sweep(rung, self._rung_likelihood(likelihood, float(b)), rng)
        record.n_sweeps += 1
        if betas.size > 1 and record.n_sweeps % int(self.swap_every) == 0:
            self._swap_round(state, record, likelihood, rng)

    @staticmethod
    def _swap_round(state, record, likelihood, rng) -> None:
        """Propose exchanging rungs ``(t, t + 1)`` for ``t = 1 .. T-1`` in turn."""
        betas = record.inverse_temperatures
        rungs = [state, *record.hot]
        loglik = [
            likelihood.log_likelihood(s.X, s.observed, s.active_Z, s.active_A, s.params)
            for s in rungs
        ]
        for t in range(betas.size - 1):
            log_ratio = (betas[t] - betas[t + 1]) * (loglik[t + 1] - loglik[t])
            record.swap_attempts[t] += 1
            if math.log(rng.random()) < log_ratio:
                record.swap_accepts[t] += 1
                loglik[t], loglik[t + 1] = loglik[t + 1], loglik[t]
                if t == 0:
                    _exchange(state, record.hot[0])
                else:
                    record.hot[t - 1], record.hot[t] = record.hot[t], record.hot[t - 1]

    def sample_alpha(self, state: ExplicitFeatureState, rng, prior=(1.0, 1.0)) -> None:
        """Every rung's ``alpha`` by the wrapped sampler's update (the likelihood, hence
        the temperature, does not enter ``alpha``'s conditional)."""
        record = self._record(state)
        for rung in self.rung_states(state):
            record.solver.sample_alpha(rung, rng, prior)

    def sample_parameters(self, state: ExplicitFeatureState, likelihood, rng) -> None:
        """Every rung's likelihood parameters from their conditionals at its temperature:
        the cold rung's by ``likelihood.sample_parameters`` (as the estimator does for a
        sampler without tempering), the hot rungs' by
        :meth:`TemperedLikelihood.sample_parameters`. A wrapped sampler with its own
        ``sample_parameters(state, likelihood, rng)`` is asked instead, with the rung's
        (tempered) likelihood."""
        record = self._record(state)
        own = getattr(record.solver, "sample_parameters", None)
        for b, rung in zip(record.inverse_temperatures, self.rung_states(state), strict=True):
            lik = self._rung_likelihood(likelihood, float(b))
            if own is not None:
                own(rung, lik, rng)
            else:
                rung.params = lik.sample_parameters(rung.X, rung.observed, rung.active_Z,
                                                    rung.active_A, rung.params, rng)

    def log_joint(self, state: ExplicitFeatureState, likelihood) -> float:
        """``log p(X, [Z], A | alpha, params)`` of the cold rung (the wrapped sampler's)."""
        return self._record(state).solver.log_joint(state, likelihood)

#: Old class names (before issue 21), importable with a FutureWarning naming the new one.
__getattr__ = class_aliases(__name__)
