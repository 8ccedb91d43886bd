"""What the IBP samplers that keep the features ``A`` explicit share.

The collapsed and accelerated samplers integrate ``A`` out, which needs the conjugate
linear-Gaussian likelihood. The samplers built on this base never integrate ``A`` out:
they talk to any :class:`~sklearn_ibp.likelihoods._feature_base.FeatureLikelihood`
(linear-Gaussian, exponential-Gaussian, binary), whose numba side is two codes and two
arrays (:mod:`sklearn_ibp.likelihoods._observation_kernels`), so one compiled kernel
serves every likelihood.

A solver is a small, clonable holder of its own parameters. The estimator owns the loop
and calls

* ``initialize(X, observed, Z, A, alpha, params, likelihood, rng) -> state``;
* ``sweep(state, likelihood, rng)``: one update of ``Z`` and ``A`` (and of whatever
  auxiliary variables the solver carries: sticks, slice variables, particles);
* ``sample_alpha(state, rng, prior)``: ``alpha`` from its conditional under a
  ``Gamma(shape, rate)`` prior given what the solver instantiates;
* ``log_joint(state, likelihood)``: ``log p(X, Z, A | alpha, params)`` of the live state
  (``Z`` in left-ordered form, so comparable across solvers).

Likelihood parameters (``sigma_x``, rates, ...) live in ``state.params``; the estimator
resamples them with ``likelihood.sample_parameters`` between sweeps.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..._memory import check_allocation
from ...priors.ibp import ibp_log_prob, sample_alpha_posterior
from .._feature_slot_kernels import compact_features
from .._protocol import Solver

__all__ = ["ExplicitFeatureSolver", "ExplicitFeatureState"]

#: Likelihood names (``FeatureLikelihood.name``) an explicit-feature solver can serve.
EXPLICIT_LIKELIHOODS = ("gaussian", "exponential", "detection", "noisy_or")


@dataclass
class ExplicitFeatureState:
    """The state of one chain of an explicit-feature IBP sampler.

    ``Z`` (int8) and ``A`` (float64) have spare capacity; only the first ``n_features``
    columns of ``Z`` and rows of ``A`` are live. ``X`` is C-contiguous float64 and holds
    any finite value where ``observed`` (uint8) is 0. Solvers keep their own variables in
    ``stats`` (for example the sticks ``mu`` and the prediction ``pred = Z A``).
    """

    X: np.ndarray
    observed: np.ndarray
    Z: np.ndarray
    A: np.ndarray
    n_features: int
    alpha: float
    params: dict
    stats: dict = field(default_factory=dict)

    @property
    def active_Z(self) -> np.ndarray:
        """The live columns of ``Z`` (a view)."""
        return self.Z[:, : self.n_features]

    @property
    def active_A(self) -> np.ndarray:
        """The live rows of ``A`` (a view)."""
        return self.A[: self.n_features]


def check_explicit_inputs(X, observed, alpha, Z=None):
    """The checks of an explicit-feature solver's ``initialize``: ``(X, observed, Z)``.

    ``alpha`` must be a positive finite number, ``X`` a 2-d array (returned as a
    C-contiguous float64 copy when it is not one already), ``observed`` None (everything
    observed: ones of ``X``'s shape, uint8) or of ``X``'s shape, and ``Z``, unless None,
    a binary ``(n_samples, n_features)`` array. Inputs are not modified; anything else
    raises a ``ValueError`` naming the argument.
    """
    try:
        valid_alpha = bool(np.isfinite(alpha) and alpha > 0.0)
    except TypeError:
        valid_alpha = False
    if not valid_alpha:
        raise ValueError(f"alpha must be a positive finite number; got {alpha!r}.")
    X = np.ascontiguousarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-d array; got shape {X.shape}.")
    N, D = X.shape
    if observed is None:
        observed = np.ones((N, D), dtype=np.uint8)
    observed = np.asarray(observed)
    if observed.shape != X.shape:
        raise ValueError(f"observed must have X's shape {X.shape}; got {observed.shape}.")
    if Z is not None:
        Z = np.asarray(Z)
        if Z.ndim != 2 or Z.shape[0] != N:
            raise ValueError(f"Z must have shape ({N}, n_features); got {Z.shape}.")
        if Z.size and not np.isin(Z, (0, 1)).all():
            raise ValueError("Z must be binary (0/1).")
    return X, observed, Z


def check_explicit_likelihood(solver, likelihood) -> None:
    """The likelihood check of an explicit-feature solver's ``initialize``: its ``name``
    must be one of ``solver.likelihoods`` and it must have a numba side
    (``noise_array``); anything else raises a ``ValueError`` naming the argument."""
    name = getattr(likelihood, "name", None)
    if name not in solver.likelihoods or not hasattr(likelihood, "noise_array"):
        raise ValueError(
            f"likelihood: solver {solver.name!r} serves the explicit-feature likelihoods "
            f"{', '.join(map(repr, solver.likelihoods))}; got {likelihood!r}."
        )


def check_start_features(A, K, D):
    """``A`` as a float64 array of shape ``(K, D)`` (the starting features of ``K``
    columns of ``Z`` on ``D`` dimensions); another shape raises a ``ValueError``."""
    A = np.asarray(A, dtype=np.float64)
    if A.shape != (K, D):
        raise ValueError(f"A must have shape ({K}, {D}) to match Z and X; got {A.shape}.")
    return A


def start_counts_and_prediction(state: ExplicitFeatureState, K: int) -> None:
    """The stats of a chain that keeps ``counts`` and ``pred``: the counts of the first
    ``K`` columns of ``state.Z`` in ``state.stats["counts"]`` (int64, one a slot), the
    live features compacted to the front (``state.n_features``) and a zero prediction
    ``state.stats["pred"]`` (n_samples, n_dims) for the caller to fill."""
    counts = np.zeros(state.Z.shape[1], dtype=np.int64)
    counts[:K] = state.Z[:, :K].sum(axis=0)
    state.stats["counts"] = counts
    state.n_features = int(compact_features(state.Z, state.A, counts, K))
    state.stats["pred"] = np.zeros(state.X.shape)


def new_explicit_state(X, observed, Z, A, alpha, params, capacity) -> ExplicitFeatureState:
    """A state holding copies of ``Z`` and ``A`` with room for ``capacity`` features.

    ``X`` and ``observed`` are kept as they are when they are C-contiguous and writeable
    (the kernels never write them); a read-only input is copied, so that the kernels are
    compiled for one kind of array and not once more for read-only ones."""
    X = np.require(X, dtype=np.float64, requirements=["C", "W"])
    N, D = X.shape
    Z = np.asarray(Z, dtype=np.int8).reshape(N, -1)
    K = Z.shape[1]
    A = np.asarray(A, dtype=np.float64).reshape(K, D)
    capacity = max(int(capacity), K + 1)
    Z_full = np.zeros((N, capacity), dtype=np.int8)
    Z_full[:, :K] = Z
    A_full = np.zeros((capacity, D))
    A_full[:K] = A
    return ExplicitFeatureState(
        X=X,
        observed=np.require(observed, dtype=np.uint8, requirements=["C", "W"]),
        Z=Z_full,
        A=A_full,
        n_features=K,
        alpha=float(alpha),
        params=dict(params),
    )


def check_feature_capacity(n_rows: int, n_dims: int, capacity: int, alpha) -> None:
    """Refuse feature slots whose arrays would exceed the memory limit.

    ``capacity`` slots cost an int8 column of ``Z`` (``n_rows`` bytes), a float64 row of
    ``A`` (``8 n_dims``) and a few float64/int64 per-feature entries; the explicit samplers
    double their slots when a sweep runs out, so an ``alpha`` far above the data's
    support could otherwise grow them until the machine runs out of memory.
    """
    check_allocation(
        float(capacity) * (n_rows + 8.0 * n_dims + 32.0),
        what=f"{capacity} feature slots of {n_rows} rows and {n_dims} columns",
        advice=f"lower alpha ({float(alpha):g}), the expected number of features per row",
    )


def grow(state: ExplicitFeatureState, capacity: int) -> None:
    """Give ``Z`` and ``A`` room for at least ``capacity`` features (live ones kept)."""
    if capacity <= state.Z.shape[1]:
        return
    capacity = max(int(capacity), 2 * state.Z.shape[1])
    check_feature_capacity(state.Z.shape[0], state.A.shape[1], capacity, state.alpha)
    K = state.n_features
    Z = np.zeros((state.Z.shape[0], capacity), dtype=np.int8)
    Z[:, :K] = state.Z[:, :K]
    A = np.zeros((capacity, state.A.shape[1]))
    A[:K] = state.A[:K]
    state.Z, state.A = Z, A


def drop_empty_features(state: ExplicitFeatureState) -> np.ndarray:
    """Remove the live features no row has; return the indices of those kept (in order)."""
    K = state.n_features
    keep = np.flatnonzero(state.Z[:, :K].any(axis=0))
    if keep.size < K:
        k = keep.size
        state.Z[:, :k] = state.Z[:, keep]
        state.Z[:, k:K] = 0
        state.A[:k] = state.A[keep]
        state.A[k:K] = 0.0
        state.n_features = k
    return keep


class ExplicitFeatureSolver(Solver):
    """Base class of the IBP samplers that keep ``A`` explicit.

    Subclasses set :attr:`name` and implement :meth:`initialize` and :meth:`sweep`; those
    that instantiate sticks override :meth:`sample_alpha`.
    """

    model = "ibp"
    name = "explicit"
    context = "likelihood"
    explicit = True
    # Missing entries are left out of the likelihood (``observed``).
    handles_missing = True
    #: Likelihood names this solver can serve (see ``EXPLICIT_LIKELIHOODS``).
    likelihoods = EXPLICIT_LIKELIHOODS
    #: Whether the chain targets the exact posterior; approximate solvers say what they
    #: approximate in their docstring and set this False.
    exact = True

    def initialize(self, X, observed, Z, A, alpha, params, likelihood, rng
                   ) -> ExplicitFeatureState:  # pragma: no cover - abstract
        raise NotImplementedError

    def sweep(self, state: ExplicitFeatureState, likelihood, rng) -> None:  # pragma: no cover
        raise NotImplementedError

    def _check_initialize(self, likelihood, X, observed, alpha, Z=None):
        """The checks every ``initialize`` starts with: the solver's parameters, the
        likelihood (:func:`check_explicit_likelihood`) and the inputs
        (:func:`check_explicit_inputs`); returns the checked ``(X, observed, Z)``."""
        self._validate_params()
        check_explicit_likelihood(self, likelihood)
        return check_explicit_inputs(X, observed, alpha, Z)

    def sample_alpha(self, state: ExplicitFeatureState, rng, prior=(1.0, 1.0)) -> None:
        """``alpha | Z ~ Gamma(shape + K, rate + H_N)`` (Doshi-Velez 2009, sec. 5.1): valid for
        solvers whose state holds ``Z`` and ``A`` only. Solvers that carry sticks
        override it with the conditional given their sticks."""
        state.alpha = sample_alpha_posterior(
            state.n_features, state.X.shape[0], rng, prior_shape=prior[0], prior_rate=prior[1]
        )

    def update_state(self, state: ExplicitFeatureState, likelihood, rng, *,
                     sample_hyperparameters=True, missing=None) -> None:
        """With ``sample_hyperparameters``, the likelihood's parameters
        (:meth:`sample_parameters`) and then ``alpha`` (:meth:`sample_alpha`) from their
        conditionals. Missing entries are left out of the likelihood (``state.observed``),
        so ``missing`` is not used."""
        if sample_hyperparameters:
            self.sample_parameters(state, likelihood, rng)
            self.sample_alpha(state, rng, (1.0, 1.0))

    def sample_parameters(self, state: ExplicitFeatureState, likelihood, rng) -> None:
        """The likelihood's parameters from their conditional given ``Z`` and ``A``; a
        solver overrides it to keep auxiliary chains in step."""
        state.params = likelihood.sample_parameters(
            state.X, state.observed, state.active_Z, state.active_A, state.params, rng,
        )

    def trace_names(self, likelihood) -> tuple:
        """``log_joint``, ``n_features``, ``alpha`` and the likelihood's parameters."""
        return ("log_joint", "n_features", "alpha") + tuple(likelihood.parameter_names)

    def trace_values(self, state: ExplicitFeatureState, log_joint, likelihood) -> tuple:
        params = tuple(float(state.params[name]) for name in likelihood.parameter_names)
        return (log_joint, state.n_features, state.alpha) + params

    def snapshot(self, state: ExplicitFeatureState, likelihood, chain=0) -> dict:
        """The live ``Z`` and ``A``, ``alpha`` and the likelihood's parameters."""
        return {
            "Z": state.active_Z.copy(),
            "A": state.active_A.copy(),
            "alpha": state.alpha,
            "params": {k: np.copy(v) if np.ndim(v) else float(v)
                       for k, v in state.params.items()},
        }

    def log_joint(self, state: ExplicitFeatureState, likelihood) -> float:
        """``log p(X, [Z], A | alpha, params)`` of the live state."""
        Z, A = state.active_Z, state.active_A
        return (
            likelihood.log_likelihood(state.X, state.observed, Z, A, state.params)
            + likelihood.log_prior_features(A, state.params)
            + ibp_log_prob(Z, state.alpha)
        )
