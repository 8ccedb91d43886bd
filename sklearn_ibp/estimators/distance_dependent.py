"""DistanceDependentIBP: the linear-Gaussian model with a distance-dependent IBP prior."""

from __future__ import annotations

from numbers import Real

import numpy as np
from sklearn.base import _fit_context
from sklearn.metrics import pairwise_distances
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import validate_data

from ..priors.ddibp import (
    DECAY_FUNCTIONS,
    ddibp_log_prob,
    decay_proximity,
    normalized_proximity,
    pairwise_distances_for_ddibp,
)
from ..solvers.ddibp_gibbs import DistanceDependentGibbs
from .factor_analysis import IBPFactorAnalysis, _check_missing_pattern

__all__ = ["DistanceDependentIBP"]


class DistanceDependentIBP(IBPFactorAnalysis):
    """Latent features shared more by nearby rows: the distance-dependent IBP.

    Rows are customers who own ``Poisson(alpha / h_i)`` dishes and, for every dish, link to
    another customer with probability proportional to ``f(d_ij)``; a row has a feature when
    its links reach the feature's owner (Gershman, Frazier and Blei, sec. 2.2). The data
    follow the linear-Gaussian model ``x = z A + e`` (sec. 6). Distances come from
    ``covariate_columns`` of ``X`` (used only for distances, so the estimator works inside
    a ``Pipeline`` on plain arrays) or, without them, from the row order (time).

    Parameters
    ----------
    alpha : float, default=1.0
        Mass parameter: customer ``i`` owns ``Poisson(alpha / h_i)`` dishes.
    decay : float, default=1.0
        Rate ``beta`` of the exponential and logistic decay functions.
    decay_function : {"exponential", "logistic", "window", "constant"} or callable, \
            default="exponential"
        Decay ``f`` mapping a distance to a proximity in ``[0, 1]`` with ``f(0) = 1``.
    nu : float or None, default=None
        Offset of the logistic decay, width of the window decay.
    metric : str or callable, default="euclidean"
        Any scikit-learn or SciPy metric for the distances between covariates.
    covariate_columns : list of int or None, default=None
        Columns of ``X`` used only for distances. None uses the row index as a time
        covariate; new rows in ``transform`` then count as coming right after the training
        rows.
    sequential : bool, default=False
        Customers link only to earlier rows (``d_ij = inf`` for ``j > i``); with a constant
        decay this is the IBP.
    sigma_x, sigma_a : float or None, default=None
        Noise and feature standard deviations; None uses 0.25 and 0.75 times the standard
        deviation of the centred data columns.
    n_iter, burn_in, thin, n_chains, sample_hyperparameters, warm_start, random_state, \
verbose
        As in :class:`IBPFactorAnalysis`; ``alpha`` is resampled from
        ``Gamma(1 + K, 1 + sum_i 1 / h_i)`` (eq. 32).

    Attributes
    ----------
    components_, n_components_, Z_, feature_counts_, alpha_, sigma_x_, sigma_a_, mean_, \
samples_, traces_, n_iter_, interrupted_, n_features_in_
        As in :class:`IBPFactorAnalysis`; ``components_`` spans the data columns only.
    owners_ : ndarray of shape (n_components,)
        Training row that owns each feature of ``Z_``.
    connections_ : ndarray of shape (n_samples, n_components)
        Each training row's link for each feature of ``Z_``.
    """

    _parameter_constraints: dict = {
        **{
            k: v
            for k, v in IBPFactorAnalysis._parameter_constraints.items()
            if k not in ("beta", "likelihood", "solver")
        },
        "decay": [Interval(Real, 0, None, closed="neither")],
        "decay_function": [StrOptions(set(DECAY_FUNCTIONS)), callable],
        "nu": [Interval(Real, None, None, closed="neither"), None],
        "metric": [str, callable],
        "covariate_columns": ["array-like", None],
        "sequential": ["boolean"],
    }

    def __init__(
        self,
        alpha=1.0,
        decay=1.0,
        decay_function="exponential",
        nu=None,
        metric="euclidean",
        covariate_columns=None,
        sequential=False,
        sigma_x=None,
        sigma_a=None,
        n_iter=100,
        burn_in=None,
        thin=1,
        n_chains=1,
        sample_hyperparameters=False,
        warm_start=False,
        random_state=None,
        verbose=0,
    ):
        self.alpha = alpha
        self.decay = decay
        self.decay_function = decay_function
        self.nu = nu
        self.metric = metric
        self.covariate_columns = covariate_columns
        self.sequential = sequential
        self.sigma_x = sigma_x
        self.sigma_a = sigma_a
        self.n_iter = n_iter
        self.burn_in = burn_in
        self.thin = thin
        self.n_chains = n_chains
        self.sample_hyperparameters = sample_hyperparameters
        self.warm_start = warm_start
        self.random_state = random_state
        self.verbose = verbose

    # IBPFactorAnalysis reads these; the dd-IBP has no stickiness and one solver.
    beta = 1.0
    likelihood = "gaussian"

    def _resolve_solver(self):
        return DistanceDependentGibbs()

    def _split_columns(self, X):
        """``(covariates, data)`` column blocks of ``X``."""
        n_columns = X.shape[1]
        if self.covariate_columns is None:
            return None, X
        cols = np.asarray(self.covariate_columns)
        if cols.ndim != 1 or cols.size == 0 or not np.issubdtype(cols.dtype, np.integer):
            raise ValueError(
                "covariate_columns must be a non-empty list of integer column indices, got "
                f"{self.covariate_columns!r}."
            )
        if cols.min() < -n_columns or cols.max() >= n_columns:
            raise ValueError(
                f"covariate_columns {cols.tolist()} are out of range for X with {n_columns} "
                "columns."
            )
        cols = np.unique(cols % n_columns)
        data_cols = np.setdiff1d(np.arange(n_columns), cols)
        if data_cols.size == 0:
            raise ValueError(
                "covariate_columns leaves no data columns: at least one column of X must be "
                "modelled."
            )
        covariates = X[:, cols]
        if not np.isfinite(covariates).all():
            raise ValueError("The covariate columns of X must be finite (no NaN or inf).")
        return covariates, X[:, data_cols]

    def _proximity(self, distances):
        return decay_proximity(distances, self.decay_function, self.decay, self.nu)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Sample the dd-IBP posterior given ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data columns (NaN marks a missing entry) and the covariate columns.
        y : Ignored

        Returns
        -------
        self : DistanceDependentIBP
        """
        X = validate_data(
            self, X, dtype=np.float64, ensure_all_finite="allow-nan", ensure_min_samples=2
        )
        covariates, data = self._split_columns(X)
        missing = np.isnan(data)
        _check_missing_pattern(missing)
        N = X.shape[0]
        positions = np.arange(N, dtype=float)[:, None] if covariates is None else covariates
        distances = pairwise_distances_for_ddibp(
            positions, metric=self.metric, sequential=self.sequential
        )
        A, h = normalized_proximity(self._proximity(distances))
        self._train_positions = positions
        mean = np.nanmean(data, axis=0)
        Xc = data - mean
        hyper = {**self._starting_hyperparameters(Xc), "proximity": A, "h": h}
        self._A, self._h = A, h
        solver = self._solver if (self.warm_start and hasattr(self, "_chains")) else (
            self._resolve_solver()
        )
        self._run_chains(
            np.where(missing, 0.0, Xc), missing if missing.any() else None, hyper, solver,
            lambda rng: None,
        )
        self._solver = solver
        self.mean_ = mean
        self._set_posterior(Xc)
        best = self._best_sample()
        self.owners_ = best["owners"]
        self.connections_ = best["connections"]
        return self

    # -- hooks of the sampling loop -------------------------------------------------------
    def _log_prior(self, state) -> float:
        owners, connections = DistanceDependentGibbs.dishes(state)
        return ddibp_log_prob(owners, connections, self._A, self._h, state.alpha)

    def _snapshot(self, state, chain, log_joint):
        sample = super()._snapshot(state, chain, log_joint)
        sample["owners"], sample["connections"] = DistanceDependentGibbs.dishes(state)
        return sample

    # -- new rows -------------------------------------------------------------------------
    def _new_row_prior(self, X):
        """A new row links to training row ``j`` with probability ``f(d_j) / h`` (and to
        itself with ``f(0) / h``), so it has feature ``k`` with probability
        ``sum_j f(d_j) z_jk / h``; it owns ``Poisson(alpha / h)`` new features."""
        covariates, data = self._split_columns(X)
        n = X.shape[0]
        if covariates is None:
            positions = np.full((n, 1), float(self._train_positions.shape[0]))
        else:
            positions = covariates
        distances = pairwise_distances(positions, self._train_positions, metric=self.metric)
        proximity = self._proximity(distances)
        h = 1.0 + proximity.sum(axis=1)  # f(0) = 1 for the link to itself
        p = np.clip(proximity @ self.Z_ / h[:, None], 1e-300, 1 - 1e-16)
        log_odds = np.log(p) - np.log1p(-p)
        return data - self.mean_, log_odds, self.alpha_ / h

    def _prior_log_odds(self):
        # Used by sample(): a new row right after the training rows.
        positions = (
            np.array([[float(self._train_positions.shape[0])]])
            if self.covariate_columns is None else None
        )
        if positions is None:
            raise ValueError(
                "sample() needs covariates for the new rows when covariate_columns is set; "
                "use transform() on rows that include them."
            )
        proximity = self._proximity(
            pairwise_distances(positions, self._train_positions, metric=self.metric)
        )
        p = np.clip(proximity @ self.Z_ / (1.0 + proximity.sum()), 1e-300, 1 - 1e-16)
        return (np.log(p) - np.log1p(-p))[0]
