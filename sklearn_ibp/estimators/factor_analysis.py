"""IBPFactorAnalysis: the linear-Gaussian IBP latent feature model as an estimator."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from joblib import effective_n_jobs
from scipy.special import expit, logsumexp
from sklearn.base import (
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
    _fit_context,
)
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._deprecation import renamed_option
from ..base import (
    BaseIBPSampler,
    document_loop_parameters,
    warn_no_features,
)
from ..likelihoods import (
    ExponentialGaussian,
    LeakyNoisyOr,
    LinearGaussianFeatures,
    RealWeightedGaussian,
)
from ..likelihoods.linear_gaussian import feature_posterior
from ..priors.ibp import as_random_source, sample_ibp
from ..solvers import (
    RENAMED_SOLVERS,
    DuckTypedSolver,
    Solver,
    SolverNameOptions,
    SolverOf,
    get_solver,
    registered_solvers,
)
from ._scale import check_noise_ratio

__all__ = ["IBPFactorAnalysis"]

#: Largest number of features for which transform and score enumerate all 2^K patterns.
MAX_EXACT_FEATURES = 12
#: The methods a solver object must have (see :class:`sklearn_ibp.solvers.BaseIBPSolver`).
SOLVER_METHODS = (
    "initialize", "sweep", "log_likelihood", "sample_features", "set_hyperparameters",
    "set_data",
)
#: The observation models of ``likelihood=...`` as the explicit-feature solvers see them.
LIKELIHOODS = {
    "gaussian": LinearGaussianFeatures,
    "exponential": ExponentialGaussian,
    "noisy_or": LeakyNoisyOr,
}
#: Old ``likelihood=...`` names, accepted with a FutureWarning until they are removed.
RENAMED_LIKELIHOODS = {"bernoulli": "noisy_or"}


def __getattr__(name):
    # Every solver class ``IBPFactorAnalysis(solver=...)`` accepts, by name (the registry's
    # "ibp" entries; the data-parallel ones are imported on first use).
    if name == "ALL_SOLVERS":
        return registered_solvers("ibp")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _likelihood_class(likelihood: str, weights: str = "binary"):
    """The likelihood class of the estimator's ``likelihood`` and ``weights``."""
    if weights == "gaussian":
        return RealWeightedGaussian
    return LIKELIHOODS[likelihood]


def _serves(solver_or_class, likelihood: str, weights: str = "binary") -> bool:
    """Whether a solver (object or class) serves the estimator's ``likelihood`` (with
    ``weights``)."""
    return _likelihood_class(likelihood, weights).name in solver_or_class.likelihoods


#: The docstring entry of ``sample_hyperparameters`` (the loop parameters' entries are shared,
#: see :func:`sklearn_ibp.base.loop_parameters_doc`).
_SAMPLE_HYPERPARAMETERS_DOC = """\
sample_hyperparameters : bool, default=True
    Resample ``alpha`` and the likelihood's parameters every sweep from their
    conditionals (a Gamma(1, 1) prior on ``alpha``, sec. 5.1; Gamma(1, v) priors on
    the precisions with ``v`` the mean square of the entries of ``X``, so that a fit
    does not depend on the units of ``X``; Gamma(1, sqrt(v)) on the exponential rate;
    uniform on the noisy-or probabilities); the
    values given (or their defaults) are then where the chains start. False keeps
    them fixed: with the default ``sigma_x``, set for a start, the fixed noise level
    is usually too small and the model too rich.
"""


@document_loop_parameters(
    100, _SAMPLE_HYPERPARAMETERS_DOC,
    n_jobs="A solver whose shards run on Dask needs ``n_jobs=None``.",
    warm_start=(
        "The chains continue on the ``X`` now given, which must have the same shape.\n"
        "The solver that drew the chains continues them, with any parameter changed\n"
        "since by ``set_params(solver__name=value)`` (for example\n"
        "``solver__correction=\"metropolis\"`` of\n"
        ":class:`~sklearn_ibp.distributed.ParallelAcceleratedIBP`); a solver of another\n"
        "class is refused."
    ),
)
class IBPFactorAnalysis(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseIBPSampler):
    """Infinite binary factor analysis: latent feature models with an IBP prior.

    Each row is modelled through a binary vector ``z_n`` of latent features drawn from the
    (one- or two-parameter) Indian Buffet Process and feature values ``A``; the number of
    features is learned from the data. The observation model is chosen by ``likelihood``
    (Doshi-Velez 2009, appendix A):

    * ``"gaussian"``: ``x_n = z_n A + e_n`` with ``A`` entries ``N(0, sigma_a^2)`` and noise
      ``N(0, sigma_x^2)`` (eq. 2.1, appendix A.1); the data are modelled as given, not
      centred (zero is the absence of every feature; a column level is taken up by a
      feature every row has);
    * ``"exponential"``: the same with non-negative features, ``a_kd ~ Exponential`` with
      mean ``sigma_a`` (appendix A.2); the data are modelled as given, not centred;
    * ``"noisy_or"``: binary data through the leaky noisy-or of eq. A.4,
      ``P(x_nd = 1) = 1 - epsilon lambda^((z_n A)_d)``, with binary ``A`` (each entry 1
      with probability ``p_a``); ``epsilon``, ``lambda`` and ``p_a`` have uniform priors.

    With ``weights="gaussian"`` (and ``likelihood="gaussian"``) a row's features also
    carry real weights: ``x_n = (z_n * y_n) A + e_n`` with ``y_nk ~ N(0, 1)`` (Görür 2007,
    sec. 4.4): ``z_n`` says which features a row has and ``y_n`` how much of each.

    Inference is by Markov chain Monte Carlo. The collapsed and accelerated solvers
    integrate ``A`` out and so need ``likelihood="gaussian"``; the solvers that keep
    ``A`` explicit (slice, semi-ordered slice, truncated, approximate and Metropolis Gibbs;
    Görür 2007, sec. 4.2) serve every likelihood.

    Parameters
    ----------
    alpha : float, default=1.0
        IBP concentration: the expected number of features per row. Its starting value
        when ``sample_hyperparameters=True``.
    beta : float, default=1.0
        Stickiness of the two-parameter IBP (appendix C.1); 1 is the one-parameter IBP.
        Larger values spread rows over more, less shared features. Only the solvers that
        integrate ``A`` out serve ``beta != 1``.
    likelihood : {"gaussian", "exponential", "noisy_or"}, default="gaussian"
        Observation model (see above). ``"noisy_or"`` needs ``X`` of zeros and ones.
        ``"bernoulli"``, its old name, is deprecated (FutureWarning) and will be removed
        in 0.2.
    weights : {"binary", "gaussian"}, default="binary"
        How much of each feature a row has: all of it (``"binary"``, the models above) or
        a standard normal weight (``"gaussian"``, the real-weighted model; only with
        ``likelihood="gaussian"`` and ``solver="semi_ordered_slice"``). With
        ``"gaussian"``, :meth:`transform` returns the posterior mean of the weights.
    sigma_x : float or None, default=None
        Noise standard deviation of the real-valued likelihoods (its starting value when
        sampled). None uses the standard deviation of the entries of ``X`` when
        ``sample_hyperparameters=True`` and 0.25 times it otherwise (sec. 4.4). Must be
        None for ``"noisy_or"``.
    sigma_a : float or None, default=None
        Prior standard deviation of the feature values (for ``"exponential"`` the mean
        and standard deviation of their exponential prior). None uses 0.75 times the
        standard deviation of the entries of ``X`` for ``"gaussian"`` and the mean
        absolute centred entry for ``"exponential"``. Must be None for ``"noisy_or"``.
        Held fixed (``sample_hyperparameters=False``) with the Gaussian likelihood,
        ``n_samples * (sigma_a / sigma_x)**2`` must not exceed 1e11: beyond, float64's
        rounding errors dominate the likelihood and features multiply without end.
    max_features : int, "auto" or None, default=None
        Upper bound on the number of features (as ``n_components`` of
        :class:`~sklearn.mixture.BayesianGaussianMixture`): the IBP prior truncated to
        at most this many features. ``"auto"`` is the number of columns of ``X``. Only
        solvers with ``can_bound_features`` (``"accelerated"``) honour it; an integer with
        another solver is refused, ``"auto"`` leaves it unbounded. None: no bound (the
        default; the user guide has the measurements that chose it).
    solver : str or solver object, default="accelerated"
        Sampler, by name or as a configured object from :mod:`sklearn_ibp.solvers`
        (for example ``AcceleratedIBP(window=2)``). Names: ``"accelerated"``,
        ``"collapsed"``, ``"uncollapsed"``, ``"semi_collapsed"`` (linear-Gaussian only)
        and ``"slice"``, ``"semi_ordered_slice"``, ``"truncated_gibbs"``,
        ``"approximate_gibbs"``, ``"metropolis"``, ``"particle"``, ``"map_climb"`` (every
        likelihood) and ``"tempering"`` (the real-valued ones); ``"variational"`` and
        ``"finite_variational"`` (mean-field variational inference, linear-Gaussian
        only; see Notes); ``"parallel_accelerated"`` (data-parallel accelerated Gibbs on
        shards of rows, on threads or a Dask cluster: configure it as
        :class:`~sklearn_ibp.distributed.ParallelAcceleratedIBP`, see :doc:`/parallel`); see
        :doc:`/choosing_solver`. A solver that cannot serve
        ``likelihood`` (and ``weights``) is refused with an error naming those that can.
    %(loop_parameters)s

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        The features ``A``: for ``"gaussian"`` their posterior mean given ``Z_`` (``W_``
        with ``weights="gaussian"``) and the data, for the other likelihoods the kept
        sample's ``A``; for the variational solvers ``E_q[A]``, the means ``phi`` of the
        kept features.
    n_components_ : int
        Number of features of ``Z_``; for the variational solvers, the features of the
        truncation with ``sum_n q(z_nk = 1) >= 0.5`` (the others are dropped from
        every fitted attribute).
    Z_ : ndarray of shape (n_samples, n_components)
        The kept sample of the feature matrix with the highest log joint probability;
        for the variational solvers ``q(z_nk = 1) > 0.5`` (``feature_probabilities_``
        rounded).
    W_ : ndarray of shape (n_samples, n_components)
        That sample's weights ``Z * Y`` (``weights="gaussian"`` only).
    feature_counts_ : ndarray of shape (n_components,)
        Number of training rows that have each feature.
    alpha_ : float
        ``alpha`` of that sample.
    likelihood_params_ : dict
        The likelihood's parameters of that sample: ``sigma_x`` and ``sigma_a``
        (``"gaussian"``), ``sigma_x`` and ``rate`` (``"exponential"``), ``epsilon``,
        ``lambda`` and ``p_a`` (``"noisy_or"``).
    sigma_x_, sigma_a_ : float
        Noise and feature standard deviations of that sample (``sigma_x_`` for the
        real-valued likelihoods, ``sigma_a_`` for ``"gaussian"``).
    mean_ : ndarray of shape (n_features,)
        Zeros: every likelihood models the data as given (before issue 20 the
        ``"gaussian"`` likelihood subtracted the column means, which made the sign of a
        feature held by half the rows unidentifiable). Kept for the formulas that add
        it back.
    samples_ : list of dict
        Every kept sample: ``Z`` (and ``A`` and ``params`` for the solvers that keep
        ``A`` explicit), the hyperparameters, its ``log_joint`` and ``chain``.
    traces_ : dict of ndarray of shape (n_chains, n_iter)
        Per-iteration ``log_joint``, ``n_features``, ``alpha`` and the likelihood's
        parameters.
    n_iter_ : int
        Sweeps completed by the first chain (fewer than ``n_iter`` if interrupted).
    interrupted_ : bool
        Whether the last fit was stopped by ``KeyboardInterrupt``.
    elbo_, elbo_trace_, elbo_time_ : float, ndarray, ndarray
        Variational solvers only: the final evidence lower bound, its value after every
        iteration of the kept restart, and the seconds from that restart's start to the
        end of every iteration (``elbo_trace_`` against ``elbo_time_`` is the ELBO
        against wall-clock time; the trace is monotone from the end of the solver's
        tempering on).
    converged_ : bool
        Variational solvers only: whether the relative change of the ELBO fell below the
        solver's ``tol``.
    feature_probabilities_ : ndarray of shape (n_samples, n_components)
        Variational solvers only: ``q(z_nk = 1)`` of the training rows (``Z_`` is it
        rounded).
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
    In ``fit`` the samplers that integrate ``A`` out redraw them from the model at every
    sweep, which integrates them out; the solvers that keep ``A`` explicit leave them out
    of the likelihood. The fitted features and ``transform``/``score_samples`` only ever
    use the observed entries.

    The log joint of the explicit-feature solvers is ``log p(X, Z, A)``; that of the
    collapsed ones is ``log p(X, Z)``: traces are comparable between solvers of one kind.

    The variational solvers (Doshi-Velez 2009, ch. 6) replace sampling by coordinate
    ascent of an evidence lower bound: ``n_iter``, ``burn_in``, ``thin``, ``n_chains``,
    ``n_jobs`` and ``warm_start`` do not apply (restarts, tolerance and truncation are
    the solver's parameters, e.g. ``VariationalIBP(n_init=10, max_features=20)``);
    ``sample_hyperparameters=True`` lets the solver set ``alpha``, ``sigma_x`` and
    ``sigma_a`` to their ELBO-maximising values. They model the data as given, not
    centred, with the features of the ``max_features`` truncation that some row uses
    (``sum_n q(z_nk = 1) >= 0.5``); ``transform`` is the variational E-step of the new
    rows with the features held fixed, and ``traces_["log_joint"]`` is the ELBO.

    Examples
    --------
    >>> from sklearn_ibp import IBPFactorAnalysis
    >>> from sklearn_ibp.datasets import make_block_images
    >>> X, Z, A = make_block_images(n_samples=200, random_state=0)
    >>> model = IBPFactorAnalysis(n_iter=50, random_state=0).fit(X)
    >>> model.transform(X[:2]).shape[0]
    2
    >>> nonneg = IBPFactorAnalysis(likelihood="exponential", solver="semi_ordered_slice",
    ...                            n_iter=20, random_state=0).fit(X)
    >>> bool((nonneg.components_ >= 0).all())
    True
    """

    _parameter_constraints: dict = {
        **BaseIBPSampler._parameter_constraints,
        "alpha": [Interval(Real, 0, None, closed="neither")],
        "beta": [Interval(Real, 0, None, closed="neither")],
        "likelihood": [StrOptions(set(LIKELIHOODS) | set(RENAMED_LIKELIHOODS),
                                  deprecated=set(RENAMED_LIKELIHOODS))],
        "weights": [StrOptions({"binary", "gaussian"})],
        "sigma_x": [Interval(Real, 0, None, closed="neither"), None],
        "sigma_a": [Interval(Real, 0, None, closed="neither"), None],
        "max_features": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"}),
                         None],
        # A solver of this model, or (a duck-typed collapsed solver, wrapped in
        # DuckTypedSolver) an object with every method the loop calls, so an incomplete
        # or wrong-kind object is refused up front with a message naming ``solver``.
        "solver": [
            SolverNameOptions("ibp"),
            SolverOf("ibp"),
            HasMethods(list(SOLVER_METHODS)),
        ],
    }

    def __init__(
        self,
        alpha=1.0,
        beta=1.0,
        likelihood="gaussian",
        weights="binary",
        sigma_x=None,
        sigma_a=None,
        max_features=None,
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
        self.weights = weights
        self.sigma_x = sigma_x
        self.sigma_a = sigma_a
        self.max_features = max_features
        self.solver = solver
        self.sample_hyperparameters = sample_hyperparameters
        self._set_loop_parameters(n_iter, burn_in, thin, n_chains, n_jobs, warm_start,
                                  random_state, verbose)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags

    # -- fitting ------------------------------------------------------------------------
    _solver_model = "ibp"

    def _new_solver(self, solver=None):
        solver = super()._new_solver(solver)
        if not isinstance(solver, Solver):
            # An object with the collapsed solvers' methods only: the protocol's other
            # methods come from an adapter.
            solver = DuckTypedSolver(solver)
        return solver

    def _solver_names(self, keep):
        """The current names (no deprecated one) of this model's solvers that ``keep``."""
        return sorted(n for n, cls in registered_solvers(self._solver_model).items()
                      if n not in RENAMED_SOLVERS and keep(cls))

    @property
    def _likelihood_name(self) -> str:
        """The current name of ``likelihood`` (an old name mapped to its new one)."""
        return renamed_option(self.likelihood, RENAMED_LIKELIHOODS, "likelihood", warn=False)

    def _resolve_solver(self):
        renamed_option(self.likelihood, RENAMED_LIKELIHOODS, "likelihood")
        solver = self._new_solver()
        name = solver.name
        if self._weights != "binary" and self._likelihood_name != "gaussian":
            raise ValueError(
                f"weights={self._weights!r} needs likelihood='gaussian' (the real-weighted "
                f"model); got likelihood={self.likelihood!r}."
            )
        if not _serves(solver, self._likelihood_name, self._weights):
            servers = self._solver_names(
                lambda cls: _serves(cls, self._likelihood_name, self._weights))
            with_weights = "" if self._weights == "binary" else f" with weights={self._weights!r}"
            raise ValueError(
                f"solver={name!r} cannot serve likelihood={self.likelihood!r}"
                f"{with_weights}; solvers that can: {servers}."
            )
        if (solver.explicit or solver.variational) and self.beta != 1.0:
            servers = self._solver_names(lambda cls: not (cls.explicit or cls.variational))
            raise ValueError(
                f"beta={self.beta!r} (the two-parameter IBP) is served only by the solvers "
                f"that integrate A out, {servers}; solver={name!r} needs beta=1."
            )
        if self._likelihood_name == "noisy_or" and (self.sigma_x is not None
                                                    or self.sigma_a is not None):
            raise ValueError(
                f"sigma_x and sigma_a must be None for likelihood={self.likelihood!r} (its "
                "parameters are epsilon, lambda and p_a, learned from the data); got "
                f"sigma_x={self.sigma_x!r}, sigma_a={self.sigma_a!r}."
            )
        solver._validate_params()
        if (getattr(solver, "backend", None) == "dask" and self.n_chains > 1
                and effective_n_jobs(self.n_jobs) > 1):
            raise ValueError(
                f"solver={name!r} with backend='dask' runs its shards on the Dask cluster; "
                f"the chains cannot also run in n_jobs={self.n_jobs!r} worker processes. "
                "Leave n_jobs=None (the chains then run one after another on the cluster)."
            )
        return solver

    def _continued_solver(self):
        """The fitted solver, with the parameters the user has set since on ``solver``.

        ``warm_start=True`` continues the chains with the solver object that drew them
        (it holds state such as a Dask engine or a sampler's records), so a change made
        with ``set_params(solver__name=value)`` is copied onto it; a solver of another
        class cannot continue them.
        """
        solver = self._solver
        name = solver.name
        wanted = (get_solver(self._solver_model, renamed_option(
            self.solver, RENAMED_SOLVERS, "solver", warn=False))
            if isinstance(self.solver, str) else type(self.solver))
        # A duck-typed object is the one inside its adapter.
        inner = solver.solver if isinstance(solver, DuckTypedSolver) else solver
        if wanted is not type(inner):
            raise ValueError(
                f"warm_start=True continues the chains with the solver that drew them "
                f"({name!r}); got solver={self.solver!r}. Set warm_start=False to start "
                "new chains with another solver."
            )
        if not isinstance(self.solver, str) and hasattr(self.solver, "get_params"):
            inner.set_params(**self.solver.get_params(deep=False))
            if hasattr(inner, "_validate_params"):
                inner._validate_params()
        return solver

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Sample the posterior over features given ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data; NaN marks a missing entry. Zeros and ones for
            ``likelihood="noisy_or"``.
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
            reset=not continuing, order="C",
        )
        missing = np.isnan(X)
        _check_missing_pattern(missing)
        if continuing and X.shape[0] != self._chains[0]["state"].X.shape[0]:
            raise ValueError(
                f"warm_start=True continues the previous chains, which were fitted on "
                f"{self._chains[0]['state'].X.shape[0]} rows; X has {X.shape[0]} rows."
            )
        solver = self._continued_solver() if continuing else self._resolve_solver()
        # The data are modelled as given, not centred: zero is the absence of every
        # feature, as in Griffiths and Ghahramani's linear-Gaussian model. Centring made
        # the sign of a feature held by half the rows unidentifiable (the shape with an
        # always-on feature, or its negative with another), so block images came out
        # inverted about half the time; a column mean far from zero is taken up by a
        # feature every row has. ``mean_`` stays (zeros) for the formulas that use it.
        mean = self.mean_ if continuing else np.zeros(X.shape[1])
        Xc = X - mean
        hyper = self._starting_hyperparameters(Xc)
        hyper["max_features"] = self._feature_bound(solver, X.shape[1])
        # Missing entries start at the column mean; the sampler redraws them each sweep.
        X_start = np.where(missing, np.nanmean(Xc, axis=0), Xc)
        alpha0, beta0 = hyper["alpha"], hyper["beta"]
        N = X.shape[0]

        # A solver with moves that take features apart and turn them over (the
        # accelerated sampler's split-merge and complement moves) starts with no feature
        # and adds them as the data support them; the others start from a draw of the
        # prior. A random start's features mix shapes that single-entry updates are slow
        # to take apart (the user guide's measurements).
        empty_start = solver.starts_empty

        def init_Z(rng):
            if empty_start:
                return np.zeros((N, 0), dtype=np.int8)
            return sample_ibp(N, alpha0, beta0, rng)

        self._variational = None
        self._explicit_likelihood = None
        if solver.variational:
            if self.sigma_x is None:
                # Coordinate ascent from a noise level as large as the data's loses every
                # feature at once: start from the fixed-noise default (sec. 4.4).
                hyper["sigma_x"] = 0.25 * float(np.nanstd(Xc)) or 0.25
            self._solver = solver
            self._fit_variational(solver, X_start, ~missing, hyper)
            self.mean_ = mean
            self._set_posterior(Xc)
            return self
        if solver.explicit:
            lik = _likelihood_class(self._likelihood_name, self._weights)()
            lik.prior_variance = self._prior_variance
            observed = (~missing).astype(np.uint8)
            lik.check_data(X_start, observed)
            self._explicit_likelihood = lik
            self._observed = observed
            self._start_params = self._starting_parameters(lik, X_start, observed, hyper)
            if continuing:
                for chain in self._chains:
                    chain["state"].X = np.ascontiguousarray(X_start)
                    chain["state"].observed = observed
            # Missing entries are left out of the likelihood, not imputed.
            self._run_chains(X_start, None, hyper, solver, init_Z)
        else:
            self._run_chains(X_start, missing if missing.any() else None, hyper, solver,
                             init_Z)
        self._solver = solver
        self.mean_ = mean
        self._set_posterior(Xc)
        return self

    def _feature_bound(self, solver, n_columns):
        """The bound on the number of features the solver is given (None: no bound).

        ``max_features="auto"`` is the number of columns for the solvers that can bound
        the features and no bound for the others; an integer is refused by a solver
        that cannot honour it.
        """
        bound = getattr(self, "max_features", None)
        can_bound = solver.can_bound_features
        if bound is None:
            return None
        if isinstance(bound, str):  # "auto"
            return int(n_columns) if can_bound else None
        if not can_bound:
            name = solver.name
            servers = self._solver_names(lambda cls: cls.can_bound_features)
            raise ValueError(
                f"max_features={bound!r} needs a solver that can bound the number of "
                f"features, {servers}; solver={name!r} cannot. Use max_features=None."
            )
        return int(bound)

    def _starting_hyperparameters(self, Xc) -> dict:
        """``alpha``, ``beta`` and the standard deviations the chains start from.

        With ``s`` the standard deviation of the modelled entries (1 for constant data),
        ``sigma_a`` defaults to ``0.75 s``; ``sigma_x`` to ``0.25 s`` when it stays fixed
        (Doshi-Velez 2009, sec. 4.4) and to ``s`` when it is sampled: the chain starts with all
        variation as noise and adds features as the data support them, which is far
        quicker than shedding the many features a small noise level first creates.
        """
        self._check_scales(Xc)
        scale = float(np.nanstd(Xc))
        if not np.isfinite(scale) or scale <= 0.0:
            scale = 1.0
        # The precisions' Gamma(1, v) priors are in units of the data: v is the mean
        # square of the modelled entries (see BaseIBPSampler._precision_prior_rate).
        mean_square = float(np.nanmean(Xc**2))
        self._prior_variance = mean_square if np.isfinite(mean_square) and \
            mean_square > 0.0 else 1.0
        noise = scale if self.sample_hyperparameters else 0.25 * scale
        hyper = {
            "alpha": float(self.alpha),
            "beta": float(self.beta),
            "sigma_x": float(self.sigma_x) if self.sigma_x is not None else noise,
            "sigma_a": float(self.sigma_a) if self.sigma_a is not None else 0.75 * scale,
        }
        if not self.sample_hyperparameters and self._likelihood_name == "gaussian":
            check_noise_ratio(hyper["sigma_x"], hyper["sigma_a"], Xc.shape[0],
                              estimator=type(self).__name__)
        return hyper

    #: Data whose root mean square lies outside [2^-100, 2^100] (about 7.9e-31 to
    #: 1.3e30), and ``sigma_x``, ``sigma_a`` more than 2^100 away from it, are refused:
    #: the samplers square these scales and square them again (``s_x^4``), which
    #: overflows or underflows beyond. Inside the range the default priors are scaled
    #: by the data, and the fit of ``X * 2**k`` is the fit of ``X`` scaled (measured
    #: bit for bit for ``k`` in [-100, 100]).
    _SCALE_RANGE = 2.0**100

    def _check_scales(self, Xc) -> None:
        """Refuse data, ``sigma_x`` or ``sigma_a`` on scales the samplers cannot hold."""
        if self._likelihood_name == "noisy_or":
            return
        limit = self._SCALE_RANGE
        peak = float(np.nanmax(np.abs(Xc))) if Xc.size else 0.0
        if peak > 0.0:
            # Divide by the largest entry first so the squares cannot overflow.
            rms = peak * float(np.sqrt(np.nanmean((Xc / peak) ** 2)))
            if not 1.0 / limit <= rms <= limit:
                raise ValueError(
                    f"X's entries have a root mean square of {rms:.3g}; "
                    f"{type(self).__name__} models data whose scale lies in "
                    f"[{1.0 / limit:.2g}, {limit:.2g}]. Rescale X (e.g. divide it by its "
                    "standard deviation): with the default sigma_x and sigma_a the priors "
                    "follow the data's scale, so the fit of the rescaled X is the fit of X "
                    "in other units."
                )
        else:
            rms = 1.0
        for name in ("sigma_x", "sigma_a"):
            value = getattr(self, name)
            if value is not None and not rms / limit <= float(value) <= rms * limit:
                raise ValueError(
                    f"{name}={float(value):.3g} is too far from the scale of X (root mean "
                    f"square {rms:.3g}); {name} must lie in [{rms / limit:.3g}, "
                    f"{rms * limit:.3g}]. Leave it None to set it from the data."
                )

    def _starting_parameters(self, lik, X, observed, hyper) -> dict:
        """The likelihood's parameters an explicit-feature chain starts from.

        ``"gaussian"`` starts where the collapsed solvers do; ``"exponential"`` takes
        ``sigma_x`` from there and the rate ``1 / sigma_a`` (the likelihood's own guess
        when ``sigma_a`` is None); ``"noisy_or"`` starts at the likelihood's defaults.
        """
        params = lik.initial_parameters(X, observed)
        if self._likelihood_name == "gaussian":
            params.update(sigma_x=hyper["sigma_x"], sigma_a=hyper["sigma_a"])
        elif self._likelihood_name == "exponential":
            params["sigma_x"] = hyper["sigma_x"]
            if self.sigma_a is not None:
                params["rate"] = 1.0 / float(self.sigma_a)
        return params

    # -- the loop's hooks ---------------------------------------------------------------
    def _explicit(self) -> bool:
        return getattr(self, "_explicit_likelihood", None) is not None

    @property
    def _weights(self) -> str:
        """``weights``; ``"binary"`` for subclasses without the parameter."""
        return getattr(self, "weights", "binary")

    def _weighted(self) -> bool:
        """Whether the fitted model is the real-weighted one."""
        return self._weights == "gaussian"

    def _initialize_chain(self, solver, X, hyper, init, rng):
        if not self._explicit():
            return super()._initialize_chain(solver, X, hyper, init, rng)
        lik, observed = self._explicit_likelihood, self._observed
        params = dict(self._start_params)
        Z = np.asarray(init(rng), dtype=np.int8)
        A = lik.sample_prior_features(Z.shape[1], X.shape[1], params, rng)
        A = lik.sample_features(X, observed, Z, A, params, rng)
        return solver.initialize(X, observed, Z, A, hyper["alpha"], params, lik, rng)

    def _solver_context(self, state):
        # The solvers that keep A explicit take the likelihood object.
        return (self._explicit_likelihood,) if self._explicit() else ()

    def _update_options(self):
        options = super()._update_options()
        if not self._explicit():
            options["precision_prior_rate"] = self._precision_prior_rate()
        return options

    def _precision_prior_rate(self) -> float:
        """Rate ``v`` of the Gamma(1, v) priors on ``1 / sigma_x^2`` and ``1 / sigma_a^2``.

        A fit sets ``_prior_variance`` to the mean square of the data it models, so the
        priors have mean precision ``1 / v``: Gamma(1, 1) in the data's own units. Scaling
        ``X`` by ``c`` scales ``v``, the residuals and ``A`` by ``c^2``, and every draw of
        ``sigma_x`` and ``sigma_a`` by ``c``: the posterior over ``Z`` does not change.
        With Gamma(1, 1) in absolute units, data with standard deviation 0.05 met a noise
        prior of mean 1, which explained everything as noise (no features at all).
        Unset (an estimator used outside ``fit``) it is 1, the prior of Doshi-Velez 2009,
        sec. 5.1.
        """
        return float(getattr(self, "_prior_variance", 1.0))

    # -- variational inference -------------------------------------------------------------
    def _fit_variational(self, solver, X, observed, hyper):
        """Coordinate ascent of the variational solver (``n_init`` restarts on the
        solver), recorded by the loop's :meth:`_run_variational`, and the ELBO's record."""
        if not self.sample_hyperparameters and getattr(solver, "update_hyperparameters",
                                                       False):
            solver.set_params(update_hyperparameters=False)
        state = self._run_variational(solver, X, observed.astype(np.float64), hyper["alpha"],
                                      hyper["sigma_x"], hyper["sigma_a"])
        self._variational = state
        self.elbo_ = float(state.elbo)
        self.elbo_trace_ = np.asarray(state.elbo_trace)
        self.elbo_time_ = np.asarray(state.time_trace)
        self.converged_ = bool(state.converged)

    def _variational_features(self):
        """The features of the truncation that some row uses."""
        return self._solver.used_features(self._variational)

    def _set_variational_posterior(self):
        state = self._variational
        kept = self._variational_features()
        self.Z_ = (state.nu[:, kept] > 0.5).astype(np.int8)
        self.feature_probabilities_ = state.nu[:, kept].copy()
        self.alpha_ = float(state.alpha)
        self.sigma_x_ = float(state.sigma_x)
        self.sigma_a_ = float(state.sigma_a)
        self.likelihood_params_ = {"sigma_x": self.sigma_x_, "sigma_a": self.sigma_a_}
        self.n_components_ = int(kept.size)
        self.feature_counts_ = self.Z_.sum(axis=0).astype(np.int64)
        self._n_train = int(state.nu.shape[0])
        self.components_ = state.phi_mean[kept].copy()
        # q(a_kd) is independent across features: the covariance of a column of A is
        # diagonal, its variances averaged over the columns.
        self._feature_cov = np.diag(state.phi_var[kept].mean(axis=1)) if kept.size \
            else np.zeros((0, 0))

    def _set_posterior(self, Xc):
        if getattr(self, "_variational", None) is not None:
            return self._set_variational_posterior()
        best = self._best_sample()
        self.Z_ = best["Z"].astype(np.int8)
        self.alpha_ = best["alpha"]
        params = best.get("params")
        if params is None:  # a collapsed solver's sample
            params = {"sigma_x": best["sigma_x"], "sigma_a": best["sigma_a"]}
        self.likelihood_params_ = dict(params)
        self.n_components_ = int(self.Z_.shape[1])
        self.feature_counts_ = self.Z_.sum(axis=0).astype(np.int64)
        self._n_train = int(self.Z_.shape[0])
        K = self.n_components_
        if "sigma_x" in params:
            self.sigma_x_ = float(params["sigma_x"])
        if self._likelihood_name == "gaussian":
            self.sigma_a_ = float(params["sigma_a"])
            design = self.Z_
            if self._weighted():
                self.W_ = np.asarray(best["W"], dtype=np.float64)
                design = self.W_
            mean, cov = feature_posterior(Xc, design, self.sigma_x_, self.sigma_a_)
            self.components_ = mean
            # One covariance per column when entries were missing; their average is the
            # one used for the predictive variance of new rows. The real-weighted model's
            # predictive holds the features at their mean (its weights are integrated
            # out instead).
            self._feature_cov = cov if cov.ndim == 2 else cov.mean(axis=0)
            if self._weighted():
                self._feature_cov = np.zeros((K, K))
        else:
            # No closed-form posterior of A: the kept sample's own features, held fixed.
            self.components_ = np.asarray(best["A"], dtype=np.float64).reshape(K, Xc.shape[1])
            self._feature_cov = np.zeros((K, K))
        if K == 0:
            warn_no_features(self, getattr(self, "sigma_x_", None))

    # -- posterior over the features of new rows ----------------------------------------
    def _prior_log_odds(self):
        """Log odds that a new row has each fitted feature (the ``N+1``-th customer; for a
        variational fit, ``E_q[pi_k]``)."""
        if getattr(self, "_variational", None) is not None:
            p = self._solver.feature_probabilities(self._variational)
            p = np.clip(p[self._variational_features()], 1e-12, 1.0 - 1e-12)
            return np.log(p) - np.log1p(-p)
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
            ensure_min_samples=2 if reset else 1, order="C",
        )

    def _new_row_prior(self, X):
        """Every new row is the ``N+1``-th customer of the buffet."""
        n = X.shape[0]
        log_odds = np.tile(self._prior_log_odds(), (n, 1))
        rate = np.full(n, self.alpha_ * self.beta / (self.beta + self._n_train))
        return X - self.mean_, log_odds, rate

    def _predictive_likelihood(self):
        """The likelihood object whose methods give the predictive of new rows."""
        return _likelihood_class(self._likelihood_name, self._weights)()

    def _config_log_joint(self, Xc, patterns, log_odds, rate, n_new_max=0):
        """``log p(z, x_obs)`` for every row and every feature pattern in ``patterns``.

        The prior's ``log p(z)`` plus the likelihood's ``log p(x_obs | z)``: for
        ``"gaussian"`` the features are held at their posterior and with
        ``n_new_max > 0`` up to that many new features of the row are summed over
        (:meth:`LinearGaussianFeatures.pattern_log_predictive`); for the other likelihoods
        (and for ``weights="gaussian"``, whose weights are integrated out instead) the
        features are the kept sample's and new features are left out (their contribution
        has no closed form). Returns an array of shape (n_rows, n_patterns).
        """
        log_off = -np.logaddexp(0.0, log_odds)  # log P(z_k = 0), per row
        log_prior = log_odds @ patterns.T + log_off.sum(axis=1)[:, None]
        lik = self._predictive_likelihood()
        observed = ~np.isnan(Xc)
        X0 = np.where(observed, Xc, 0.0)
        if self._likelihood_name == "noisy_or" or self._weighted():
            return log_prior + lik.pattern_log_likelihood(
                X0, observed, patterns, self.components_, self.likelihood_params_)
        if self._likelihood_name != "gaussian":
            n_new_max = 0
        return log_prior + lik.pattern_log_predictive(
            X0, observed, patterns, self.components_, self._feature_cov,
            self.likelihood_params_, rate, n_new_max)

    def _all_patterns(self):
        K = self.n_components_
        codes = np.arange(2**K)
        return ((codes[:, None] >> np.arange(K)[None, :]) & 1).astype(float)

    def _mean_field(self, Xc, log_odds):
        """Deterministic mean-field ``q(z_k = 1)`` for many features (features at
        ``components_``), from the likelihood's ``mean_field``."""
        observed = ~np.isnan(Xc)
        return self._predictive_likelihood().mean_field(
            np.where(observed, Xc, 0.0), observed, log_odds, self.components_,
            self.likelihood_params_)

    def _expected_weights(self, Xc, log_odds):
        """``E[w_n | x_n]`` of the real-weighted model, features held at ``components_``:
        mixed over all ``2^K`` patterns for at most 12 features, else the weights'
        posterior mean given the mean-field mode of ``z_n``."""
        lik = RealWeightedGaussian()
        observed = ~np.isnan(Xc)
        X0 = np.where(observed, Xc, 0.0)
        A, params = self.components_, self.likelihood_params_
        N = Xc.shape[0]
        if self.n_components_ > MAX_EXACT_FEATURES:
            modes = self._mean_field(Xc, log_odds) > 0.5
            return lik.expected_weights_given_patterns(X0, observed, modes, A, params)
        patterns = self._all_patterns()
        out = np.empty((N, self.n_components_))
        for start in range(0, N, 512):
            rows = slice(start, start + 512)
            block = self._config_log_joint(Xc[rows], patterns, log_odds[rows], None)
            probabilities = np.exp(block - logsumexp(block, axis=1, keepdims=True))
            out[rows] = lik.expected_weights(X0[rows], observed[rows], patterns,
                                             probabilities, A, params)
        return out

    def _draw_weights(self, X, rng):
        """One draw of each row's weights ``z_n * y_n`` from their posterior given the
        row (features held at ``components_``): a pattern ``z_n`` from its enumerated
        posterior (for more than 12 features, the mean-field mode), then ``y_n`` of its
        features from their Gaussian conditional. Used by the imputer's
        ``sample_posterior``; ``rng`` is a NumPy ``Generator``."""
        Xc, log_odds, _ = self._check_X(X)
        N, K = Xc.shape[0], self.n_components_
        if K == 0:
            return np.zeros((N, 0))
        if K > MAX_EXACT_FEATURES:
            Z = self._mean_field(Xc, log_odds) > 0.5
        else:
            patterns = self._all_patterns()
            block = self._config_log_joint(Xc, patterns, log_odds, None)
            cdf = np.cumsum(np.exp(block - logsumexp(block, axis=1, keepdims=True)), axis=1)
            index = (cdf < rng.random((N, 1)) * cdf[:, -1:]).sum(axis=1)
            Z = patterns[np.minimum(index, patterns.shape[0] - 1)] > 0.5
        observed = ~np.isnan(Xc)
        return RealWeightedGaussian().draw_weights(
            np.where(observed, Xc, 0.0), observed, Z, self.components_,
            self.likelihood_params_, rng)

    def transform(self, X):
        """Posterior probability that each row has each fitted feature.

        With ``weights="gaussian"``: the posterior mean of each row's feature weights,
        ``E[z_nk y_nk | x_n]`` (for binary weights the same formula gives the
        probabilities), so that :meth:`inverse_transform` of it is the posterior mean
        reconstruction of the row.

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
            ``E[z_nk | x_n]`` (``E[z_nk y_nk | x_n]`` with ``weights="gaussian"``).
        """
        Xc, log_odds, rate = self._check_X(X)
        if self.n_components_ == 0:
            return np.zeros((Xc.shape[0], 0))
        if getattr(self, "_variational", None) is not None:
            # The variational E-step with the features held fixed (Doshi-Velez 2009, appendix B.2).
            observed = ~np.isnan(Xc)
            nu = self._solver.e_step(self._variational, np.where(observed, Xc, 0.0),
                                     observed.astype(np.float64))
            return nu[:, self._variational_features()]
        if self._weighted():
            return self._expected_weights(Xc, log_odds)
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
        """Map feature assignments (or probabilities) back to data space.

        ``Z A + mean`` for the real-valued likelihoods; for ``"noisy_or"`` the
        probability of a one, ``1 - epsilon lambda^(Z A)`` (probabilities ``Z`` are
        plugged in). With ``weights="gaussian"``, ``X`` holds the weights ``Z * Y`` (as
        :meth:`transform` returns them) and the result is ``(Z * Y) A + mean``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_components)
            Feature assignments or their probabilities (the weights with
            ``weights="gaussian"``).

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
        if self._likelihood_name == "noisy_or":
            return -np.expm1(LeakyNoisyOr.log_terms(Z @ self.components_,
                                                    self.likelihood_params_)[1])
        return Z @ self.components_ + self.mean_

    def score_samples(self, X):
        """Log predictive density of each row, missing entries marginalised.

        ``log p(x_obs) = log sum_z p(z) N(x_obs; z M, (s_x^2 + z S z^T) I)``, summed over
        the fitted features' patterns (all ``2^K`` of them for at most 12 features; beyond
        that, the mean-field mode with every combination of flips of its 12 least certain
        features, a lower bound) and over up to 3 new features of the row. For the
        ``"exponential"`` and ``"noisy_or"`` likelihoods the features are the kept
        sample's and the sum leaves new features out; with ``weights="gaussian"`` the
        weights are integrated out (``x_obs ~ N(0, s_x^2 I + A_z^T A_z)``), the features
        are held at their mean and new features are left out.

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
        """Draw new rows from the fitted model (features held at their posterior mean;
        with ``weights="gaussian"`` each feature of a row gets a standard normal weight).

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
        if self._likelihood_name == "noisy_or":
            p_one = self.inverse_transform(Z)
            return (rng.random(p_one.shape) < p_one).astype(np.float64), Z
        design = Z
        if self._weighted():
            design = Z * rng.standard_normal(Z.shape)
        noise = self.sigma_x_ * rng.standard_normal((n_samples, self.components_.shape[1]))
        return design @ self.components_ + self.mean_ + noise, Z

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
