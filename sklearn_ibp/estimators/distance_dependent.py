"""DistanceDependentIBP: the linear-Gaussian model with a distance-dependent IBP prior."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.base import _fit_context
from sklearn.metrics import pairwise_distances
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from .._memory import check_allocation
from ..priors.ddibp import (
    DECAY_FUNCTIONS,
    DDIBPPrior,
    calibrate_decay,
    decay_proximity,
    pairwise_distances_for_ddibp,
)
from ..priors.ibp import as_random_source
from ..solvers import SolverNameOptions, SolverOf
from ._scale import check_data_scale
from .factor_analysis import IBPFactorAnalysis, _check_missing_pattern

__all__ = ["DistanceDependentIBP"]

#: N x N float64 matrices a fit holds at its peak (distances, f(D), A, A.T, cumsum(A),
#: and the solver's off-diagonal work copy).
_N_BY_N_MATRICES = 6


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
    decay : float or None, default=None
        Rate ``beta`` of the exponential and logistic decay functions, in inverse units of
        the distances. None sets it at ``fit`` so that the prior expects the IBP's number
        of features, ``alpha sum_i 1 / h_i = alpha H_N``
        (:func:`~sklearn_ibp.priors.ddibp.calibrate_decay`), whatever the covariate's
        units; the rate used is ``decay_``. A grid search may hold None beside numbers.
    decay_function : {"exponential", "logistic", "window", "constant"} or callable, \
            default="exponential"
        Decay ``f`` mapping a distance to a proximity in ``[0, 1]`` with ``f(0) = 1``.
    nu : float or None, default=None
        Offset of the logistic decay, width of the window decay.
    metric : str or callable, default="euclidean"
        Any scikit-learn or SciPy metric for the distances between covariates, or
        ``"precomputed"``: the covariate columns of ``X`` then hold each row's distances
        to the training rows (in ``fit``, the square distance matrix of the training rows,
        zero on the diagonal; ``inf`` marks rows that never link).
    covariate_columns : list of int or None, default=None
        Columns of ``X`` used only for distances. None uses the row index as a time
        covariate; new rows in ``transform`` then count as coming right after the training
        rows.
    sequential : bool, default=False
        Customers link only to earlier rows (``d_ij = inf`` for ``j > i``); with a constant
        decay this is the IBP.
    max_features : int or None, default=None
        At most this many features: the chain samples the dd-IBP restricted to
        ``K <= max_features`` (a birth beyond it is rejected). None bounds ``K`` by twice
        the number of data columns (``max_features_``), as ``n_components`` bounds
        :class:`~sklearn.mixture.BayesianGaussianMixture`; raise it for more features.
    sigma_x, sigma_a : float or None, default=None
        Noise and feature standard deviations (starting values when sampled); None as in
        :class:`IBPFactorAnalysis`.
    solver : "gibbs" or GibbsDDIBP, default="gibbs"
        The sampler (Gershman, Frazier and Blei 2015, sec. 5), by name or as a configured
        :class:`~sklearn_ibp.solvers.GibbsDDIBP` (e.g.
        ``GibbsDDIBP(link_update="metropolis")``; a grid can tune
        ``solver__own_weight``). An object without the dd-IBP sampler's methods
        (``initialize``, ``sweep``, ..., ``dishes``), such as an IBP solver, is refused.
    n_iter, burn_in, thin, n_chains, n_jobs, sample_hyperparameters, warm_start, \
random_state, verbose
        As in :class:`IBPFactorAnalysis`; ``alpha`` is resampled from
        ``Gamma(1 + K, 1 + sum_i 1 / h_i)`` (eq. 32).

    Attributes
    ----------
    components_, n_components_, Z_, feature_counts_, alpha_, sigma_x_, sigma_a_, mean_, \
samples_, traces_, n_iter_, interrupted_, n_features_in_
        As in :class:`IBPFactorAnalysis`; ``components_`` spans the data columns only. A
        fit that ends with no feature warns; ``transform`` then returns an array of shape
        ``(n_samples, 0)`` and ``inverse_transform`` the column means.
    decay_ : float or None
        The decay rate used (``decay``, or the calibrated rate when ``decay`` is None;
        None for the decays without a rate).
    max_features_ : int
        The bound on the number of features used.
    owners_ : ndarray of shape (n_components,)
        Training row that owns each feature of ``Z_``.
    connections_ : ndarray of shape (n_samples, n_components)
        Each training row's link for each feature of ``Z_``.
    """

    # Only the parameters of this class's __init__: a parameter IBPFactorAnalysis gains
    # is not one of the dd-IBP's until it is added here.
    _parameter_constraints: dict = {
        **{
            k: IBPFactorAnalysis._parameter_constraints[k]
            for k in (
                "alpha", "sigma_x", "sigma_a", "n_iter", "burn_in", "thin", "n_chains",
                "n_jobs", "sample_hyperparameters", "warm_start", "random_state", "verbose",
            )
        },
        "decay": [Interval(Real, 0, None, closed="neither"), None],
        "decay_function": [StrOptions(set(DECAY_FUNCTIONS)), callable],
        "nu": [Interval(Real, None, None, closed="neither"), None],
        "metric": [str, callable],
        "covariate_columns": ["array-like", None],
        "sequential": ["boolean"],
        "max_features": [Interval(Integral, 1, None, closed="left"), None],
        "solver": [SolverNameOptions("ddibp"), SolverOf("ddibp")],
    }

    def __init__(
        self,
        alpha=1.0,
        decay=None,
        decay_function="exponential",
        nu=None,
        metric="euclidean",
        covariate_columns=None,
        sequential=False,
        max_features=None,
        sigma_x=None,
        sigma_a=None,
        solver="gibbs",
        n_iter=100,
        burn_in=None,
        thin=1,
        n_chains=1,
        n_jobs=None,
        sample_hyperparameters=True,
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
        self.max_features = max_features
        self.sigma_x = sigma_x
        self.sigma_a = sigma_a
        self.solver = solver
        self.sample_hyperparameters = sample_hyperparameters
        self._set_loop_parameters(n_iter, burn_in, thin, n_chains, n_jobs, warm_start,
                                  random_state, verbose)

    # IBPFactorAnalysis reads these; the dd-IBP has no stickiness.
    beta = 1.0
    likelihood = "gaussian"
    _solver_model = "ddibp"
    #: The dd-IBP's sampler never forms ``sigma**4``: it takes data whose root mean square
    #: lies in [2^-332, 2^332] (about 1e-100 to 1e100, the range of the other Gaussian
    #: models, ``_scale.check_data_scale``) and checks ``sigma_x**2``, ``sigma_a**2`` and
    #: their ratio itself (``GibbsDDIBP``).
    _SCALE_RANGE = 2.0**332

    def _validate_rows(self, X, *, reset):
        """``X`` as a float array. NaN marks a missing data entry; with
        ``metric="precomputed"`` the distance columns may hold ``inf`` (never linked)."""
        X = validate_data(
            self, X, dtype=np.float64, reset=reset, ensure_min_samples=2 if reset else 1,
            order="C",
            ensure_all_finite=False if self.metric == "precomputed" else "allow-nan",
        )
        self._split_columns(X)  # checks the column blocks
        return X

    def _covariate_indices(self, n_columns):
        """Column indices of the covariates, in the order given (None for the row index)."""
        if self.covariate_columns is None:
            if self.metric == "precomputed":
                raise ValueError(
                    'metric="precomputed" needs covariate_columns: the columns of X that '
                    "hold each row's distances to the training rows."
                )
            return None
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
        cols = cols % n_columns
        if np.unique(cols).size != cols.size:
            raise ValueError(f"covariate_columns {cols.tolist()} name a column twice.")
        if cols.size >= n_columns:
            raise ValueError(
                "covariate_columns leaves no data columns: at least one column of X must be "
                "modelled."
            )
        return cols

    def _split_columns(self, X):
        """``(covariates, data)`` column blocks of ``X``, each checked."""
        cols = self._covariate_indices(X.shape[1])
        if cols is None:
            covariates, data = None, X
        else:
            covariates = X[:, cols]
            data = np.delete(X, cols, axis=1)
            if self.metric == "precomputed":
                if np.isnan(covariates).any() or (covariates < 0).any():
                    raise ValueError(
                        'With metric="precomputed" the covariate columns of X hold distances '
                        "and must be non-negative and not NaN (inf is allowed)."
                    )
            elif not np.isfinite(covariates).all():
                raise ValueError("The covariate columns of X must be finite (no NaN or inf).")
        if np.isinf(data).any():
            raise ValueError(
                "The data columns of X contain inf; use NaN to mark a missing entry."
            )
        return covariates, data

    def _distances_to_training_rows(self, covariates, n_rows):
        """Distances ``(n_rows, n_train)`` of new rows to the training rows."""
        if self.metric == "precomputed":
            return covariates
        if covariates is None:  # the new rows come right after the training rows
            covariates = np.full((n_rows, 1), float(self._n_train))
        return pairwise_distances(covariates, self._train_positions, metric=self.metric)

    def _proximity(self, distances):
        return decay_proximity(distances, self.decay_function, self.decay_, self.nu)

    def _fitted_decay(self, distances):
        """``decay``, or with ``decay=None`` the rate at which the prior expects the IBP's
        number of features (:func:`~sklearn_ibp.priors.ddibp.calibrate_decay`)."""
        if self.decay is not None:
            return float(self.decay)
        if self.decay_function not in ("exponential", "logistic"):
            return None  # no rate: the constant, window and callable decays
        beta = calibrate_decay(distances, self.decay_function, self.nu)
        if beta <= 0.0:  # already the IBP's count at rate 0 (sequential distances)
            return float(np.finfo(float).tiny)
        return beta

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Sample the dd-IBP posterior given ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data columns (NaN marks a missing entry) and the covariate columns. The
            data columns' largest absolute value must be between 1e-100 and 1e100. The
            fit holds about six ``n_samples x n_samples`` float64 matrices and is refused
            above the memory limit (half the available memory, or the
            ``SKLEARN_IBP_MAX_MEMORY`` environment variable).
        y : Ignored

        Returns
        -------
        self : DistanceDependentIBP
        """
        X = self._validate_rows(X, reset=True)
        covariates, data = self._split_columns(X)
        missing = np.isnan(data)
        _check_missing_pattern(missing)
        check_data_scale(data, estimator="DistanceDependentIBP",
                         name="X" if covariates is None else "the data columns of X")
        N = X.shape[0]
        positions = np.arange(N, dtype=float)[:, None] if covariates is None else covariates
        if self.metric == "precomputed" and positions.shape != (N, N):
            raise ValueError(
                'With metric="precomputed" the covariate columns of X must hold the '
                f"(n_samples, n_samples) = ({N}, {N}) distance matrix of the training rows; "
                f"covariate_columns names {positions.shape[1]} columns."
            )
        # The dd-IBP links every pair of rows: the distances, the proximities, their
        # normalised form and the solver's transposed and cumulative copies are N x N
        # (about six float64 matrices alive at once); refuse before building the first.
        check_allocation(
            _N_BY_N_MATRICES * 8.0 * N * N,
            what=f"the {N} x {N} distance and proximity matrices of the dd-IBP",
            advice=(f"fit on fewer rows (X has n_samples={N}; the memory grows with "
                    "n_samples**2)"),
        )
        distances = pairwise_distances_for_ddibp(
            positions, metric=self.metric, sequential=self.sequential
        )
        self.decay_ = self._fitted_decay(distances)
        self._train_positions = positions
        mean = np.nanmean(data, axis=0)
        Xc = data - mean
        self.max_features_ = (
            int(self.max_features) if self.max_features is not None else 2 * data.shape[1]
        )
        self._prior = DDIBPPrior.from_proximity(self._proximity(distances),
                                                self.max_features_)
        hyper = {**self._starting_hyperparameters(Xc), "prior": self._prior}
        continuing = self.warm_start and hasattr(self, "_chains")
        solver = self._continued_solver() if continuing else self._resolve_solver()
        self._run_chains(
            np.where(missing, 0.0, Xc), missing if missing.any() else None, hyper, solver,
            lambda rng: np.zeros((N, 0), dtype=np.int8),  # no features: births add them
        )
        self._solver = solver
        self.mean_ = mean
        self._set_posterior(Xc)
        best = self._best_sample()
        self.owners_ = best["owners"]
        self.connections_ = best["connections"]
        return self

    # -- new rows -------------------------------------------------------------------------
    def _new_row_proximity(self, covariates, n_rows):
        """``f(d_ij)``: each new row's proximity to each training row."""
        return self._proximity(self._distances_to_training_rows(covariates, n_rows))

    def _new_row_prior(self, X):
        """Each new row is a new customer (:meth:`DDIBPPrior.new_rows`): the log odds
        of each fitted feature and the Poisson rate of the features it would own."""
        covariates, data = self._split_columns(X)
        proximity = self._new_row_proximity(covariates, X.shape[0])
        p, h = DDIBPPrior.new_rows(proximity, self.Z_)
        p = np.clip(p, 1e-300, 1 - 1e-16)
        log_odds = np.log(p) - np.log1p(-p)
        return data - self.mean_, log_odds, self.alpha_ / h

    def sample(self, n_samples=1, covariates=None, random_state=None):
        """Draw new rows from the fitted model (features held at their posterior mean).

        Each new row links to the training rows by its distances and has feature ``k``
        with probability ``sum_j f(d_j) z_jk / h`` (features it would own are not drawn,
        as in :meth:`IBPFactorAnalysis.sample`).

        Parameters
        ----------
        n_samples : int, default=1
            Number of rows.
        covariates : array-like of shape (n_samples, len(covariate_columns)), default=None
            The new rows' covariates (their distances to the training rows with
            ``metric="precomputed"``); required when ``covariate_columns`` is set. Without
            covariate columns the rows come right after the training rows.
        random_state : int, RandomState, Generator or None
            Seed.

        Returns
        -------
        X : ndarray of shape (n_samples, n_columns)
            The rows, laid out as the training ``X`` (``n_columns`` is
            ``n_features_in_``): the covariates in ``covariate_columns`` and the drawn data
            in the other columns.
        Z : ndarray of shape (n_samples, n_components)
        """
        check_is_fitted(self)
        if not isinstance(n_samples, Integral) or isinstance(n_samples, bool) or n_samples < 1:
            raise ValueError(f"n_samples must be a positive integer; got {n_samples!r}.")
        cols = self._covariate_indices(self.n_features_in_)
        if cols is None:
            if covariates is not None:
                raise ValueError("covariates are only used when covariate_columns is set.")
        else:
            if covariates is None:
                raise ValueError(
                    "sample() needs covariates for the new rows when covariate_columns is set."
                )
            covariates = check_array(covariates, dtype=np.float64, input_name="covariates",
                                     ensure_all_finite=self.metric != "precomputed")
            if covariates.shape != (n_samples, cols.size):
                raise ValueError(
                    f"covariates must have shape (n_samples, {cols.size}) = "
                    f"({n_samples}, {cols.size}); got {covariates.shape}."
                )
        rng = as_random_source(random_state)
        p, _ = DDIBPPrior.new_rows(self._new_row_proximity(covariates, n_samples), self.Z_)
        Z = (rng.random((n_samples, self.n_components_)) < p).astype(np.int8)
        noise = self.sigma_x_ * rng.standard_normal((n_samples, self.components_.shape[1]))
        data = Z @ self.components_ + self.mean_ + noise
        if cols is None:
            return data, Z
        X = np.empty((n_samples, self.n_features_in_))
        X[:, cols] = covariates
        X[:, np.setdiff1d(np.arange(self.n_features_in_), cols)] = data
        return X, Z
