"""What every IBP solver shares: the chain state record and the solver interface.

A solver is a small, clonable holder of its own parameters (``get_params``/``set_params``
come from :class:`sklearn.base.BaseEstimator`, so ``GridSearchCV`` can tune
``solver__window``). The estimator owns the loop; a solver only knows how to

* ``initialize(X, Z, hyper, rng) -> state`` build its state from a completed data matrix
  and a starting ``Z``;
* ``sweep(state, rng)`` update every entry of ``Z`` once (and whatever else it carries);
* ``sample_features(state, rng)`` return a draw of ``A`` from ``p(A | Z, X)``, which the
  estimator uses to resample ``sigma_x``, ``sigma_a`` and the missing entries of ``X``;
* ``set_hyperparameters(state, ...)`` and ``set_data(state, X)`` refresh its statistics.

``rng`` is a :class:`numpy.random.Generator` owned by one chain; the numba kernels draw
from it directly, so a seed fixes every draw.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.special import gammaln
from scipy.stats import poisson

from ..._memory import check_allocation
from ...likelihoods.linear_gaussian import (
    log_marginal_likelihood_from_stats,
    sample_features_from_information,
)
from ...priors.ibp import harmonic_rate, ibp_log_prob, sample_alpha_conditional
from .._protocol import Solver

__all__ = ["BaseIBPSolver", "DuckTypedSolver", "FeatureState", "TRACE_NAMES"]

#: The scalar traces of a linear-Gaussian IBP chain, recorded at every iteration.
TRACE_NAMES = ("log_joint", "n_features", "alpha", "sigma_x", "sigma_a")


@dataclass
class FeatureState:
    """The state of one chain of a linear-Gaussian IBP sampler.

    ``Z`` has spare columns (capacity); only the first ``n_features`` are live. Solvers
    hang their own statistics in ``stats`` (for example the information form of the
    feature posterior).
    """

    X: np.ndarray
    Z: np.ndarray
    n_features: int
    alpha: float
    beta: float
    sigma_x: float
    sigma_a: float
    stats: dict = field(default_factory=dict)

    @property
    def active_Z(self) -> np.ndarray:
        """The live columns of ``Z`` (a view)."""
        return self.Z[:, : self.n_features]


def check_feature_capacity(capacity, n_rows, n_dims=1) -> None:
    """Refuse a feature capacity whose ``capacity x capacity`` statistics (``Z^T Z``, the
    posterior covariance or ``M^{-1}`` and a work copy) would not fit in memory.

    The number of features grows with ``alpha`` (``alpha`` times the harmonic number
    of ``N`` under the prior): ``alpha=1e4`` on 40 rows asks for about 42,849 features
    and 13.7 GiB per matrix.
    """
    n_bytes = 8.0 * capacity * (3.0 * capacity + n_dims) + float(n_rows) * capacity
    check_allocation(
        n_bytes, what=f"the statistics of {capacity} features ({capacity} x {capacity})",
        advice="lower alpha (the expected number of features is about alpha times "
               "log(n_samples)) or bound the features with max_features",
    )


def with_capacity(Z, n_features, capacity):
    """Return ``Z`` as a C-contiguous int8 array with at least ``capacity`` columns."""
    capacity = max(int(capacity), 1)
    check_feature_capacity(capacity, Z.shape[0])
    out = np.zeros((Z.shape[0], capacity), dtype=np.int8)
    out[:, :n_features] = Z[:, :n_features]
    return out


class BaseIBPSolver(Solver):
    """Base class of the IBP samplers for the linear-Gaussian likelihood.

    Subclasses set ``name`` and ``likelihoods`` (the likelihood names they can serve)
    and implement :meth:`initialize` and :meth:`sweep`.
    """

    model = "ibp"
    name = "base"
    likelihoods = ("gaussian",)
    # The estimator refuses missing data only if a solver sets this False.
    handles_missing = True

    def _new_state(self, X, Z, hyper, spare: int) -> FeatureState:
        """A chain state for data ``X`` starting at ``Z``, with ``spare`` free columns."""
        K = Z.shape[1]
        return FeatureState(
            X=np.ascontiguousarray(X, dtype=float),
            Z=with_capacity(Z, K, K + spare),
            n_features=K,
            alpha=float(hyper["alpha"]),
            beta=float(hyper["beta"]),
            sigma_x=float(hyper["sigma_x"]),
            sigma_a=float(hyper["sigma_a"]),
        )

    @staticmethod
    def _exact_statistics(state: FeatureState):
        """``(counts, Z^T Z, Z^T X)`` computed afresh, padded to the capacity of ``Z``."""
        cap = state.Z.shape[1]
        K = state.n_features
        Z = state.Z[:, :K].astype(float)
        counts = np.zeros(cap, dtype=np.int64)
        gram = np.zeros((cap, cap))
        cross = np.zeros((cap, state.X.shape[1]))
        counts[:K] = state.Z[:, :K].sum(axis=0)
        gram[:K, :K] = Z.T @ Z
        cross[:K] = Z.T @ state.X
        return counts, gram, cross

    # -- interface --------------------------------------------------------------------
    def initialize(self, X, Z, hyper, rng) -> FeatureState:  # pragma: no cover - abstract
        raise NotImplementedError

    def sweep(self, state: FeatureState, rng) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def alpha_rate(self, state: FeatureState) -> float:
        """Rate added to alpha's Gamma conditional: ``sum_n beta / (beta + n - 1)``.

        Under a Gamma(1, 1) prior, ``alpha | Z ~ Gamma(1 + K, 1 + alpha_rate)`` (Doshi-Velez 2009,
        sec. 5.1, appendix C.1); priors of other shapes override this.
        """
        return harmonic_rate(state.X.shape[0], state.beta)

    def sufficient_statistics(self, state: FeatureState):
        """``(Z^T Z, Z^T X)`` over the live features."""
        Z = state.active_Z.astype(float)
        return Z.T @ Z, Z.T @ state.X

    def sample_features(self, state: FeatureState, rng) -> np.ndarray:
        """Draw ``A ~ p(A | Z, X)`` (eq. A.3) for the current state."""
        gram, cross = self.sufficient_statistics(state)
        sx2 = state.sigma_x**2
        precision = gram / sx2 + np.eye(gram.shape[0]) / state.sigma_a**2
        return sample_features_from_information(precision, cross / sx2, rng)

    def update_state(self, state: FeatureState, rng, *, sample_hyperparameters=True,
                     missing=None, precision_prior_rate=1.0) -> None:
        """Hyperparameters and missing entries of ``X`` given a draw of ``A``.

        ``sigma_x``, ``sigma_a`` and the missing entries of ``X`` are drawn given a draw
        of ``A ~ p(A | Z, X)``, which is then forgotten. Drawing ``A`` and then a variable
        given ``A`` leaves the joint of ``Z`` and that variable invariant, so this is
        valid for the collapsed solvers too.

        Parameters
        ----------
        state : FeatureState
        rng : numpy.random.Generator
        sample_hyperparameters : bool, default=True
            Draw ``alpha``, ``sigma_x`` and ``sigma_a`` from their conditionals.
        missing : ndarray of bool or None, default=None
            Where ``X`` is missing: those entries are redrawn.
        precision_prior_rate : float, default=1.0
            Rate ``v`` of the Gamma(1, v) priors on ``1 / sigma_x^2`` and
            ``1 / sigma_a^2`` (the estimator's, in units of the data).
        """
        if not (sample_hyperparameters or missing is not None):
            return
        A = self.sample_features(state, rng)
        if sample_hyperparameters:
            self._sample_hyperparameters(state, A, rng, precision_prior_rate)
        if missing is not None:
            self.impute_missing(state, A, missing, rng)

    def _sample_hyperparameters(self, state, A, rng, v) -> None:
        # Doshi-Velez 2009, sec. 5.1: Gamma(1, 1) priors on alpha and on both precisions,
        # the precisions' in units of the data: Gamma(1, v) with v the mean square of the
        # modelled data, so that a fit does not depend on the units of X.
        N, D = state.X.shape
        K = state.n_features
        rate = self.alpha_rate(state)
        alpha = sample_alpha_conditional(K, rate, rng)
        bound = state.stats.get("max_features")
        if bound is not None:
            # Under the IBP truncated to at most ``bound`` features, p(Z | alpha) gains
            # the factor 1 / P(Poisson(alpha rate) <= bound): an independence
            # Metropolis-Hastings step with the untruncated conditional as proposal.
            log_ratio = (poisson.logcdf(bound, state.alpha * rate)
                         - poisson.logcdf(bound, alpha * rate))
            if np.log(rng.random()) >= log_ratio:
                alpha = state.alpha
        rss = self.residual_sum_of_squares(state, A)
        precision_x = rng.gamma(1.0 + 0.5 * N * D, 1.0 / (v + 0.5 * rss))
        precision_a = rng.gamma(1.0 + 0.5 * K * D, 1.0 / (v + 0.5 * np.sum(A**2)))
        self.set_hyperparameters(
            state, alpha, 1.0 / np.sqrt(precision_x), 1.0 / np.sqrt(precision_a)
        )

    def residual_sum_of_squares(self, state: FeatureState, A) -> float:
        """``||X - Z A||^2`` over the live features (a data-parallel solver sums it over
        its shards)."""
        return np.sum((state.X - state.active_Z.astype(float) @ A) ** 2)

    def impute_missing(self, state: FeatureState, A, missing, rng) -> None:
        """Redraw the ``missing`` entries of ``X`` from ``p(X | Z, A, sigma_x)``."""
        X = state.X.copy()
        draw = state.active_Z.astype(float) @ A + state.sigma_x * rng.standard_normal(X.shape)
        X[missing] = draw[missing]
        self.set_data(state, X)

    def set_hyperparameters(self, state, alpha, sigma_x, sigma_a) -> None:
        """Change the hyperparameters and refresh what depends on them."""
        state.alpha, state.sigma_x, state.sigma_a = float(alpha), float(sigma_x), float(sigma_a)
        self._refresh(state)

    def set_data(self, state, X) -> None:
        """Replace the completed data (after the missing entries were redrawn)."""
        state.X = np.ascontiguousarray(X, dtype=float)
        self._refresh(state)

    def _refresh(self, state) -> None:
        """Recompute every statistic from ``(X, Z)`` and the hyperparameters."""

    def log_likelihood(self, state: FeatureState) -> float:
        """Collapsed ``log p(X | Z)`` of the completed data (eq. A.2)."""
        gram, cross = self.sufficient_statistics(state)
        N, D = state.X.shape
        return log_marginal_likelihood_from_stats(
            gram, cross, float(np.sum(state.X**2)), N, D, state.sigma_x, state.sigma_a
        )

    def log_prior(self, state: FeatureState) -> float:
        """Log prior probability of the state's feature matrix: the IBP's (eq. 2.1 /
        C.1 of Doshi-Velez 2009; a solver of another prior overrides it)."""
        return ibp_log_prob(state.active_Z, state.alpha, state.beta)

    def log_joint(self, state: FeatureState) -> float:
        """``log p(Z | alpha) + log p(X | Z)``: the trace ``log_joint``."""
        return self.log_prior(state) + self.log_likelihood(state)

    def trace_names(self) -> tuple:
        return TRACE_NAMES

    def trace_values(self, state: FeatureState, log_joint) -> tuple:
        return (log_joint, state.n_features, state.alpha, state.sigma_x, state.sigma_a)

    def snapshot(self, state: FeatureState, chain=0) -> dict:
        """The live ``Z`` (int8) and the hyperparameters."""
        return {
            "Z": state.active_Z.copy(),
            "alpha": state.alpha,
            "sigma_x": state.sigma_x,
            "sigma_a": state.sigma_a,
        }

    def complement_features(self, state: FeatureState, rng) -> bool:
        """Metropolis-Hastings moves that replace a feature's column by its complement.

        For each live feature ``k`` held by some but not all rows (in random order),
        propose ``z_k -> 1 - z_k`` and accept with the ratio of the collapsed posteriors.
        With a feature every row has, ``x = c + z_k a`` and ``x = (c + a) + (1 - z_k)(-a)``
        fit equally well: single-entry Gibbs updates would have to pass through half the
        rows to go from one to the other, so a chain that first learns a shared "mean"
        feature keeps a shape by its negative beside it. The move goes there in one step
        and the posterior (the prior of ``A`` and of ``Z``) decides.

        The proposal is its own inverse and picks the column independently of the state,
        so the ratio is that of the targets: the collapsed likelihood (eq. A.2) from the
        updated ``Z^T Z`` and ``Z^T X`` and the IBP's column term
        ``Gamma(m) Gamma(N - m + beta) / Gamma(N + beta)`` (Doshi-Velez 2009, appendix
        C.1; ``m / (N - m)`` for ``beta = 1``), the labelled-column prior whose other
        factors the move keeps.
        Returns whether a proposal was accepted (the caller then refreshes its statistics).
        """
        K = state.n_features
        if K == 0:
            return False
        X = state.X
        N, D = X.shape
        Z = state.active_Z.astype(float)
        gram, cross = Z.T @ Z, Z.T @ X
        sq_norm = float(np.sum(X**2))
        column_sums = X.sum(axis=0)
        sx, sa, beta = state.sigma_x, state.sigma_a, state.beta
        current = log_marginal_likelihood_from_stats(gram, cross, sq_norm, N, D, sx, sa)
        changed = False
        for k in rng.permutation(K):
            m = gram[k, k]
            if m <= 0.0 or m >= N:
                continue
            new_gram, new_cross = gram.copy(), cross.copy()
            row = np.diag(gram) - gram[k]  # (1 - z_k)^T z_j = m_j - z_k^T z_j
            row[k] = N - m
            new_gram[k, :] = row
            new_gram[:, k] = row
            new_cross[k] = column_sums - cross[k]
            proposed = log_marginal_likelihood_from_stats(
                new_gram, new_cross, sq_norm, N, D, sx, sa
            )
            log_prior = (gammaln(N - m) + gammaln(m + beta)
                         - gammaln(m) - gammaln(N - m + beta))
            if np.log(rng.random()) < proposed - current + log_prior:
                state.Z[:, k] = 1 - state.Z[:, k]
                gram, cross, current = new_gram, new_cross, proposed
                changed = True
        return changed

    def compact(self, state: FeatureState, keep: np.ndarray) -> None:
        """Drop the live features not in the boolean mask ``keep`` (length n_features)."""
        idx = np.flatnonzero(keep)
        K_new = idx.size
        if K_new == state.n_features:
            return
        state.Z[:, :K_new] = state.Z[:, idx]
        state.Z[:, K_new : state.n_features] = 0
        self._compact_stats(state, idx)
        state.n_features = K_new

    def _compact_stats(self, state, idx) -> None:
        """Reorder the solver's per-feature statistics after :meth:`compact`."""


class DuckTypedSolver(BaseIBPSolver):
    """The protocol around an object that has only the methods of a collapsed IBP solver.

    ``IBPFactorAnalysis(solver=obj)`` accepts any object with ``initialize``, ``sweep``,
    ``log_likelihood``, ``sample_features``, ``set_hyperparameters`` and ``set_data`` (the
    methods of :class:`BaseIBPSolver`); the estimator wraps one that does not subclass
    :class:`~sklearn_ibp.solvers.Solver` in this adapter, which delegates to it and adds
    what it lacks (``alpha_rate``, ``update_state``, ``checkpoint``, ...) from
    :class:`BaseIBPSolver`.

    Parameters
    ----------
    solver : object
        The wrapped object.
    """

    _parameter_constraints: dict = {"solver": "no_validation"}

    def __init__(self, solver):
        self.solver = solver

    @property
    def name(self) -> str:
        """The wrapped object's ``name``, or its class name."""
        return getattr(self.solver, "name", type(self.solver).__name__)

    @property
    def starts_empty(self) -> bool:
        return bool(getattr(self.solver, "starts_empty", False))

    @property
    def likelihoods(self):
        return getattr(self.solver, "likelihoods", ("gaussian",))

    def _delegate(self, method, default, *args):
        own = getattr(self.solver, method, None)
        return own(*args) if callable(own) else default(*args)

    def initialize(self, X, Z, hyper, rng):
        return self.solver.initialize(X, Z, hyper, rng)

    def sweep(self, state, rng):
        self.solver.sweep(state, rng)

    def log_likelihood(self, state):
        return self.solver.log_likelihood(state)

    def sample_features(self, state, rng):
        return self.solver.sample_features(state, rng)

    def set_hyperparameters(self, state, alpha, sigma_x, sigma_a):
        self.solver.set_hyperparameters(state, alpha, sigma_x, sigma_a)

    def set_data(self, state, X):
        self.solver.set_data(state, X)

    def alpha_rate(self, state):
        return self._delegate("alpha_rate", super().alpha_rate, state)

    def residual_sum_of_squares(self, state, A):
        return self._delegate("residual_sum_of_squares", super().residual_sum_of_squares,
                              state, A)

    def impute_missing(self, state, A, missing, rng):
        return self._delegate("impute_missing", super().impute_missing, state, A, missing,
                              rng)

    def checkpoint(self, state):
        return self._delegate("checkpoint", super().checkpoint, state)

    def close(self):
        return self._delegate("close", super().close)
