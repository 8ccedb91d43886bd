"""IBPFactorAnalysis: the linear-Gaussian IBP latent feature model as an estimator."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from scipy.special import expit, logsumexp
from sklearn.base import (
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
    _fit_context,
    clone,
)
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from ..base import BaseIBPSampler
from ..likelihoods.linear_gaussian import feature_posterior
from ..priors.ibp import as_random_source, sample_ibp
from ..solvers import SOLVERS, BaseIBPSolver

__all__ = ["IBPFactorAnalysis"]

#: Largest number of features for which transform and score enumerate all 2^K patterns.
MAX_EXACT_FEATURES = 12
_LOG_2PI = np.log(2.0 * np.pi)
#: The methods a solver object must have (see :class:`sklearn_ibp.solvers.BaseIBPSolver`).
SOLVER_METHODS = (
    "initialize", "sweep", "log_likelihood", "sample_features", "set_hyperparameters",
    "set_data",
)


class IBPFactorAnalysis(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseIBPSampler):
    """Infinite binary factor analysis: the linear-Gaussian model with an IBP prior.

    Each row is modelled as ``x_n = z_n A + e_n`` where ``z_n`` is a binary vector of latent
    features drawn from the (one- or two-parameter) Indian Buffet Process, the features
    ``A`` have independent ``N(0, sigma_a^2)`` entries and the noise is ``N(0, sigma_x^2)``
    (Doshi-Velez 2009, eq. 2.1, appendices A.1 and C.1). The number of features is learned
    from the data. Inference is by Markov chain Monte Carlo with a choice of solvers.

    Parameters
    ----------
    alpha : float, default=1.0
        IBP concentration: the expected number of features per row. Its starting value
        when ``sample_hyperparameters=True``.
    beta : float, default=1.0
        Stickiness of the two-parameter IBP (appendix C.1); 1 is the one-parameter IBP.
        Larger values spread rows over more, less shared features.
    likelihood : {"gaussian"}, default="gaussian"
        Observation model. ``"gaussian"`` is the linear-Gaussian model of appendix A.1.
    sigma_x : float or None, default=None
        Noise standard deviation (its starting value when sampled). None uses the
        standard deviation of the centred data when ``sample_hyperparameters=True`` and
        0.25 times it otherwise (sec. 4.4).
    sigma_a : float or None, default=None
        Prior standard deviation of the feature values. None uses 0.75 times the standard
        deviation of the centred data.
    solver : {"accelerated", "collapsed", "uncollapsed", "semi_collapsed"} or solver object, \
            default="accelerated"
        Sampler, by name or as a configured object from :mod:`sklearn_ibp.solvers`
        (for example ``AcceleratedGibbs(window=2)``).
    n_iter : int, default=100
        Sweeps per chain.
    burn_in : int or None, default=None
        Sweeps discarded at the start of each chain; None discards the first half.
    thin : int, default=1
        Keep every ``thin``-th sweep after the burn-in.
    n_chains : int, default=1
        Independent chains, each from its own random stream.
    n_jobs : int or None, default=None
        Number of chains run at the same time when ``n_chains > 1``, in joblib worker
        processes. None means 1 unless in a :func:`joblib.parallel_config` context; -1
        uses all processors. Each chain keeps its own random stream, so the result is
        bit-identical to ``n_jobs=None`` for the same ``random_state``. In parallel the
        progress bar advances as chains finish, and a ``KeyboardInterrupt`` keeps the
        chains returned before it, in chain order (the others keep their starting state).
    sample_hyperparameters : bool, default=True
        Resample ``alpha``, ``sigma_x`` and ``sigma_a`` every sweep from their conditionals
        under Gamma(1, 1) priors (sec. 5.1); the values given (or their defaults) are then
        where the chains start. False keeps them fixed: with the default ``sigma_x``, set
        for a start, the fixed noise level is usually too small and the model too rich.
    warm_start : bool, default=False
        Continue the chains of the previous ``fit`` for ``n_iter`` more sweeps, keeping
        every ``thin``-th (no burn-in), instead of starting new ones. The chains continue
        on the ``X`` now given, which must have the same shape (and ``n_chains`` must be
        unchanged). A chain stopped by ``KeyboardInterrupt`` continues from its last
        completed sweep.
    random_state : int, RandomState instance or None, default=None
        Seeds every chain, numba kernels included: the same seed gives the same result.
    verbose : int, default=0
        Show a progress bar with the iteration, K and the log joint.

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        Posterior mean of the features ``A`` given ``Z_`` and the data.
    n_components_ : int
        Number of features of ``Z_``.
    Z_ : ndarray of shape (n_samples, n_components)
        The kept sample of the feature matrix with the highest log joint probability.
    feature_counts_ : ndarray of shape (n_components,)
        Number of training rows that have each feature.
    alpha_, sigma_x_, sigma_a_ : float
        Hyperparameters of that sample.
    mean_ : ndarray of shape (n_features,)
        Per-column mean of the training data (ignoring NaN), subtracted before fitting.
    samples_ : list of dict
        Every kept sample: ``Z`` and the hyperparameters, its ``log_joint`` and ``chain``.
    traces_ : dict of ndarray of shape (n_chains, n_iter)
        Per-iteration ``log_joint``, ``n_features``, ``alpha``, ``sigma_x``, ``sigma_a``.
    n_iter_ : int
        Sweeps completed by the first chain (fewer than ``n_iter`` if interrupted).
    interrupted_ : bool
        Whether the last fit was stopped by ``KeyboardInterrupt``.
    n_features_in_ : int
        Number of columns seen in ``fit``.
    feature_names_in_ : ndarray of str
        Column names seen in ``fit``, when ``X`` has them.

    See Also
    --------
    sklearn.decomposition.FactorAnalysis : continuous factors of a fixed number.

    Notes
    -----
    Missing entries (NaN) are allowed in ``fit``, ``transform`` and ``score_samples``.
    In ``fit`` the samplers redraw them from the model at every sweep, which integrates
    them out; the fitted features and ``transform``/``score_samples`` only ever use the
    observed entries.

    Examples
    --------
    >>> from sklearn_ibp import IBPFactorAnalysis
    >>> from sklearn_ibp.datasets import make_block_images
    >>> X, Z, A = make_block_images(n_samples=200, random_state=0)
    >>> model = IBPFactorAnalysis(n_iter=50, random_state=0).fit(X)
    >>> model.transform(X[:2]).shape[0]
    2
    """

    _parameter_constraints: dict = {
        **BaseIBPSampler._parameter_constraints,
        "n_jobs": [Integral, None],
        "alpha": [Interval(Real, 0, None, closed="neither")],
        "beta": [Interval(Real, 0, None, closed="neither")],
        "likelihood": [StrOptions({"gaussian"})],
        "sigma_x": [Interval(Real, 0, None, closed="neither"), None],
        "sigma_a": [Interval(Real, 0, None, closed="neither"), None],
        # Every method the sampling loop calls, so an incomplete solver object is refused
        # up front with a message naming ``solver`` rather than failing mid-fit.
        "solver": [StrOptions(set(SOLVERS)), HasMethods(list(SOLVER_METHODS))],
    }

    def __init__(
        self,
        alpha=1.0,
        beta=1.0,
        likelihood="gaussian",
        sigma_x=None,
        sigma_a=None,
        solver="accelerated",
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
        self.beta = beta
        self.likelihood = likelihood
        self.sigma_x = sigma_x
        self.sigma_a = sigma_a
        self.solver = solver
        self.n_iter = n_iter
        self.burn_in = burn_in
        self.thin = thin
        self.n_chains = n_chains
        self.n_jobs = n_jobs
        self.sample_hyperparameters = sample_hyperparameters
        self.warm_start = warm_start
        self.random_state = random_state
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.non_deterministic = False
        return tags

    # -- fitting ------------------------------------------------------------------------
    def _resolve_solver(self) -> BaseIBPSolver:
        if isinstance(self.solver, str):
            solver = SOLVERS[self.solver]()
        else:
            # safe=False: a duck-typed solver without get_params is deep-copied, so the
            # user's object is never mutated by a fit.
            solver = clone(self.solver, safe=False)
        if self.likelihood not in getattr(solver, "likelihoods", ("gaussian",)):
            servers = sorted(n for n, cls in SOLVERS.items() if self.likelihood in cls.likelihoods)
            name = getattr(solver, "name", type(solver).__name__)
            raise ValueError(
                f"solver={name!r} cannot serve likelihood={self.likelihood!r}; "
                f"solvers that can: {servers}."
            )
        if hasattr(solver, "_validate_params"):
            solver._validate_params()
        return solver

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Sample the posterior over features given ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data; NaN marks a missing entry.
        y : Ignored
            Not used, present for API consistency.

        Returns
        -------
        self : IBPFactorAnalysis
            The fitted estimator.
        """
        continuing = self.warm_start and hasattr(self, "_chains")
        X = validate_data(
            self, X, dtype=np.float64, ensure_all_finite="allow-nan", ensure_min_samples=2,
            reset=not continuing,
        )
        missing = np.isnan(X)
        _check_missing_pattern(missing)
        if continuing and X.shape[0] != self._chains[0]["state"].X.shape[0]:
            raise ValueError(
                f"warm_start=True continues the previous chains, which were fitted on "
                f"{self._chains[0]['state'].X.shape[0]} rows; X has {X.shape[0]} rows."
            )
        mean = self.mean_ if continuing else np.nanmean(X, axis=0)
        Xc = X - mean
        hyper = self._starting_hyperparameters(Xc)
        solver = self._resolve_solver()
        if continuing:
            solver = self._solver
        # Missing entries start at the column mean; the sampler redraws them each sweep.
        X_start = np.where(missing, 0.0, Xc)
        alpha0, beta0 = hyper["alpha"], hyper["beta"]
        N = X.shape[0]

        def init_Z(rng):
            return sample_ibp(N, alpha0, beta0, rng)

        self._run_chains(X_start, missing if missing.any() else None, hyper, solver, init_Z)
        self._solver = solver
        self.mean_ = mean
        self._set_posterior(Xc)
        return self

    def _starting_hyperparameters(self, Xc) -> dict:
        """``alpha``, ``beta`` and the standard deviations the chains start from.

        With ``s`` the standard deviation of the centred data (1 for constant data),
        ``sigma_a`` defaults to ``0.75 s``; ``sigma_x`` to ``0.25 s`` when it stays fixed
        (seed 000 sec. 4.4) and to ``s`` when it is sampled: the chain starts with all
        variation as noise and adds features as the data support them, which is far
        quicker than shedding the many features a small noise level first creates.
        """
        scale = float(np.nanstd(Xc))
        if not np.isfinite(scale) or scale <= 0.0:
            scale = 1.0
        noise = scale if self.sample_hyperparameters else 0.25 * scale
        return {
            "alpha": float(self.alpha),
            "beta": float(self.beta),
            "sigma_x": float(self.sigma_x) if self.sigma_x is not None else noise,
            "sigma_a": float(self.sigma_a) if self.sigma_a is not None else 0.75 * scale,
        }

    def _set_posterior(self, Xc):
        best = self._best_sample()
        self.Z_ = best["Z"].astype(np.int8)
        self.alpha_ = best["alpha"]
        self.sigma_x_ = best["sigma_x"]
        self.sigma_a_ = best["sigma_a"]
        self.n_components_ = int(self.Z_.shape[1])
        self.feature_counts_ = self.Z_.sum(axis=0).astype(np.int64)
        self._n_train = int(self.Z_.shape[0])
        mean, cov = feature_posterior(Xc, self.Z_, self.sigma_x_, self.sigma_a_)
        self.components_ = mean
        # One covariance per column when entries were missing; their average is the one
        # used for the predictive variance of new rows.
        self._feature_cov = cov if cov.ndim == 2 else cov.mean(axis=0)

    # -- posterior over the features of new rows ----------------------------------------
    def _prior_log_odds(self):
        """Log odds that a new row has each fitted feature (the ``N+1``-th customer)."""
        m = self.feature_counts_.astype(float)
        return np.log(m) - np.log(self.beta + self._n_train - m)

    def _check_X(self, X):
        """Validate new rows; return them centred with their prior over the features.

        Returns ``(Xc, log_odds, rate)``: the centred data columns, the prior log odds that
        each row has each fitted feature (n_rows, n_components_) and the Poisson rate of
        its new features (n_rows,). Subclasses whose prior depends on the row override
        :meth:`_new_row_prior`.
        """
        check_is_fitted(self)
        X = self._validate_rows(X, reset=False)
        Xc, log_odds, rate = self._new_row_prior(X)
        return Xc, log_odds, rate

    def _validate_rows(self, X, *, reset):
        """``X`` as a float array; NaN (a missing entry) is allowed, inf is not."""
        return validate_data(
            self, X, dtype=np.float64, ensure_all_finite="allow-nan", reset=reset,
            ensure_min_samples=2 if reset else 1,
        )

    def _new_row_prior(self, X):
        """Every new row is the ``N+1``-th customer of the buffet."""
        n = X.shape[0]
        log_odds = np.tile(self._prior_log_odds(), (n, 1))
        rate = np.full(n, self.alpha_ * self.beta / (self.beta + self._n_train))
        return X - self.mean_, log_odds, rate

    def _config_log_joint(self, Xc, patterns, log_odds, rate, n_new_max=0):
        """``log p(z, x_obs)`` for every row and every feature pattern in ``patterns``.

        Features are held at their posterior: ``x ~ N(z M, (s_x^2 + z S z^T) I)`` over the
        observed entries. With ``n_new_max > 0`` the result also sums over up to that many
        new features of the row (each adds ``s_a^2`` to the variance), as a log predictive.
        Returns an array of shape (n_rows, n_patterns).
        """
        M, S = self.components_, self._feature_cov
        sx2, sa2 = self.sigma_x_**2, self.sigma_a_**2
        log_off = -np.logaddexp(0.0, log_odds)  # log P(z_k = 0), per row
        log_prior = log_odds @ patterns.T + log_off.sum(axis=1)[:, None]
        pattern_means = patterns @ M  # (P, D)
        var = sx2 + np.einsum("pk,kj,pj->p", patterns, S, patterns)
        observed = ~np.isnan(Xc)
        X0 = np.where(observed, Xc, 0.0)
        n_obs = observed.sum(axis=1)[:, None].astype(float)
        # ||x_o - (zM)_o||^2 = ||x_o||^2 - 2 x_o.(zM) + ||(zM)_o||^2
        sq = (
            np.sum(X0**2, axis=1)[:, None]
            - 2.0 * X0 @ pattern_means.T
            + observed.astype(float) @ (pattern_means**2).T
        )
        rate = np.asarray(rate, dtype=float)[:, None]
        terms = []
        for j in range(n_new_max + 1):
            v = var[None, :] + j * sa2
            log_poisson = j * np.log(rate) - rate - np.sum(np.log(np.arange(1, j + 1)))
            terms.append(log_poisson - 0.5 * n_obs * (_LOG_2PI + np.log(v)) - 0.5 * sq / v)
        log_lik = terms[0] if n_new_max == 0 else logsumexp(np.stack(terms), axis=0)
        return log_prior + log_lik

    def _all_patterns(self):
        K = self.n_components_
        codes = np.arange(2**K)
        return ((codes[:, None] >> np.arange(K)[None, :]) & 1).astype(float)

    def _mean_field(self, Xc, log_odds, n_steps=50):
        """Deterministic mean-field ``q(z_k = 1)`` for many features (features at M).

        Coordinate ascent, one feature at a time for all rows at once, ``n_steps`` times
        (a fixed count: a convergence test over the batch would tie rows together).
        """
        M = np.ascontiguousarray(self.components_)
        sx2 = self.sigma_x_**2
        observed = (~np.isnan(Xc)).astype(float)
        X0 = np.where(observed > 0, Xc, 0.0)
        q = expit(log_odds)
        # Residual x - q M over the observed entries, kept current feature by feature so
        # a step costs O(N K D) rather than rebuilding q M for every feature.
        resid = (X0 - q @ M) * observed
        half_sq_norms = 0.5 * observed @ (M**2).T  # (N, K): observed part of |M_k|^2 / 2
        for _ in range(n_steps):
            for k in range(self.n_components_):
                resid += np.outer(q[:, k], M[k]) * observed  # take feature k out
                gain = (resid @ M[k] - half_sq_norms[:, k]) / sx2
                # expit, not 1 / (1 + exp(-t)): t is far below -700 for small sigma_x.
                q[:, k] = expit(log_odds[:, k] + gain)
                resid -= np.outer(q[:, k], M[k]) * observed
        return q

    def transform(self, X):
        """Posterior probability that each row has each fitted feature.

        The features are held at their posterior given the training data; a row's result
        depends on that row only. With at most 12 features the posterior is enumerated
        exactly over all ``2^K`` patterns; beyond that a deterministic mean-field
        approximation is used.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows, NaN for missing entries.

        Returns
        -------
        ndarray of shape (n_samples, n_components)
            ``E[z_nk | x_n]``.
        """
        Xc, log_odds, rate = self._check_X(X)
        if self.n_components_ == 0:
            return np.zeros((Xc.shape[0], 0))
        if self.n_components_ > MAX_EXACT_FEATURES:
            return self._mean_field(Xc, log_odds)
        patterns = self._all_patterns()
        out = np.empty((Xc.shape[0], self.n_components_))
        for start in range(0, Xc.shape[0], 512):
            rows = slice(start, start + 512)
            block = self._config_log_joint(Xc[rows], patterns, log_odds[rows], rate[rows])
            block -= logsumexp(block, axis=1, keepdims=True)
            # Rounding can carry a sum of probabilities a few ulps past 1.
            out[start : start + 512] = np.clip(np.exp(block) @ patterns, 0.0, 1.0)
        return out

    def inverse_transform(self, X):
        """Map feature assignments (or probabilities) back to data space: ``Z A + mean``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_components)
            Feature assignments or their probabilities.

        Returns
        -------
        ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self)
        Z = np.asarray(X, dtype=float)
        if Z.ndim != 2 or Z.shape[1] != self.n_components_:
            raise ValueError(
                f"X must have shape (n_samples, {self.n_components_}) (one column per "
                f"fitted feature); got {Z.shape}."
            )
        return Z @ self.components_ + self.mean_

    def score_samples(self, X):
        """Log predictive density of each row, missing entries marginalised.

        ``log p(x_obs) = log sum_z p(z) N(x_obs; z M, (s_x^2 + z S z^T) I)``, summed over
        the fitted features' patterns (all ``2^K`` of them for at most 12 features; beyond
        that, the mean-field mode with every combination of flips of its 12 least certain
        features, a lower bound) and over up to 3 new features of the row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows, NaN for missing entries.

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        Xc, log_odds, rate = self._check_X(X)
        if self.n_components_ <= MAX_EXACT_FEATURES:
            patterns = self._all_patterns()
            out = np.empty(Xc.shape[0])
            for start in range(0, Xc.shape[0], 512):
                rows = slice(start, start + 512)
                block = self._config_log_joint(
                    Xc[rows], patterns, log_odds[rows], rate[rows], n_new_max=3
                )
                out[start : start + 512] = logsumexp(block, axis=1)
            return out
        q = self._mean_field(Xc, log_odds)
        out = np.empty(Xc.shape[0])
        for n in range(Xc.shape[0]):
            mode = (q[n] > 0.5).astype(float)
            uncertain = np.argsort(np.abs(q[n] - 0.5))[:MAX_EXACT_FEATURES]
            patterns = np.tile(mode, (2 ** len(uncertain), 1))
            codes = np.arange(2 ** len(uncertain))
            patterns[:, uncertain] = (codes[:, None] >> np.arange(len(uncertain))) & 1
            row = slice(n, n + 1)
            out[n] = logsumexp(
                self._config_log_joint(Xc[row], patterns, log_odds[row], rate[row], n_new_max=3)
            )
        return out

    def score(self, X, y=None):
        """Mean log predictive density of the rows of ``X`` (see :meth:`score_samples`).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows, NaN for missing entries.
        y : Ignored

        Returns
        -------
        float
        """
        return float(np.mean(self.score_samples(X)))

    def sample(self, n_samples=1, random_state=None):
        """Draw new rows from the fitted model (features held at their posterior mean).

        Parameters
        ----------
        n_samples : int, default=1
            Number of rows.
        random_state : int, RandomState, Generator or None
            Seed.

        Returns
        -------
        X : ndarray of shape (n_samples, n_features)
        Z : ndarray of shape (n_samples, n_components)
        """
        check_is_fitted(self)
        if not isinstance(n_samples, Integral) or isinstance(n_samples, bool) or n_samples < 1:
            raise ValueError(f"n_samples must be a positive integer; got {n_samples!r}.")
        rng = as_random_source(random_state)
        p = expit(self._prior_log_odds())
        Z = (rng.random((n_samples, self.n_components_)) < p).astype(np.int8)
        noise = self.sigma_x_ * rng.standard_normal((n_samples, self.components_.shape[1]))
        return Z @ self.components_ + self.mean_ + noise, Z

    @property
    def _n_features_out(self):
        return self.n_components_


def _check_missing_pattern(missing):
    """Reject rows or columns with no observed entry."""
    empty_rows = np.flatnonzero(missing.all(axis=1))
    if empty_rows.size:
        raise ValueError(
            f"X has rows with every entry missing (NaN), e.g. row {empty_rows[0]}; each row "
            "needs at least one observed value."
        )
    empty_cols = np.flatnonzero(missing.all(axis=0))
    if empty_cols.size:
        raise ValueError(
            f"X has columns with every entry missing (NaN), e.g. column {empty_cols[0]}; "
            "each column needs at least one observed value."
        )
