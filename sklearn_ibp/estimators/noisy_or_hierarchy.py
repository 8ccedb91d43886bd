"""NoisyOrHierarchy: correlated latent features through categories (Doshi-Velez 2009, chapter 7)."""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
from sklearn.base import ClassNamePrefixFeaturesOutMixin, TransformerMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._deprecation import renamed_option
from ..base import BaseIBPSampler, document_loop_parameters
from ..exceptions import NoFeaturesWarning, warn_at_caller
from ..likelihoods import BinaryDetection, ExponentialGaussian, LinearGaussianFeatures
from ..solvers import SolverNameOptions, SolverOf
from ..solvers.hierarchy import GibbsHierarchy
from .factor_analysis import _check_missing_pattern

__all__ = ["NoisyOrHierarchy"]

#: Observation models accepted by ``likelihood=...``.
LIKELIHOODS = {
    "gaussian": LinearGaussianFeatures,
    "exponential": ExponentialGaussian,
    "detection": BinaryDetection,
}
#: Old ``likelihood=...`` names, accepted with a FutureWarning until they are removed.
RENAMED_LIKELIHOODS = {"bernoulli": "detection"}

# The simpler models a chain passes through before the requested one (sec. 7.3).
_STAGES = {
    ("dp", "or"): [],
    ("dp", "noisy_or"): [("dp", "or")],
    ("ibp", "or"): [("dp", "or")],
    ("ibp", "noisy_or"): [("dp", "or"), ("ibp", "or")],
}

# Likelihood parameters held at their data-scaled start rather than sampled: under its
# vague Gamma(1, 1) prior the Gaussian feature scale sigma_a shrinks as features multiply,
# and a small sigma_a makes many small features more probable than the few true ones
# (measured in doc/noisy_or_hierarchy.rst, "The likelihoods").
_HELD_PARAMETERS = {"gaussian": ("sigma_a",)}

# likelihood="auto" takes the exponential model when the grand mean of the observed
# entries is at least this fraction of their standard deviation (and no column mean is
# negative beyond noise, see _choose_likelihood); measured in doc/noisy_or_hierarchy.rst.
_AUTO_POSITIVE_MEAN = 0.1
# A column mean counts as negative beyond noise below this many standard errors.
_AUTO_NEGATIVE_SE = 4.0


#: The magnitudes of real-valued data the samplers handle: beyond them squares and
#: products of the data and the features overflow or underflow inside the kernels (a
#: ZeroDivisionError at 1e300, a sampler that never ends at 1e-300, measured).
SCALE_RANGE = (1e-100, 1e100)

#: Most categories the IBP upper process may expect a priori (``alpha_categories * H_N``
#: for ``N`` rows): a sweep's cost grows faster than linearly with them (10 sweeps at
#: ``N = 40``: 0.4 s with about 1300 categories, not done in 100 s with 4300, measured).
MAX_PRIOR_CATEGORIES = 1000


def _check_scale(X0, name) -> None:
    """Refuse real-valued data whose largest magnitude is outside ``SCALE_RANGE``."""
    largest = float(np.max(np.abs(X0))) if X0.size else 0.0
    low, high = SCALE_RANGE
    if largest > high or 0.0 < largest < low:
        raise ValueError(
            f"X's largest magnitude is {largest:.3g}; likelihood={name!r} handles data "
            f"whose largest magnitude lies between {low:g} and {high:g} (or all zeros): "
            "rescale X (for example with sklearn.preprocessing.StandardScaler)."
        )


def _check_prior_categories(alpha_categories, n_samples) -> None:
    """Refuse an ``alpha_categories`` that expects over ``MAX_PRIOR_CATEGORIES``."""
    harmonic = float(np.sum(1.0 / np.arange(1, n_samples + 1)))
    expected = alpha_categories * harmonic
    if expected > MAX_PRIOR_CATEGORIES:
        raise ValueError(
            f"alpha_categories={alpha_categories!r} gives {n_samples} rows about "
            f"{expected:.0f} categories a priori (alpha_categories * H_N), more than the "
            f"{MAX_PRIOR_CATEGORIES} the sampler supports in reasonable time: use "
            f"alpha_categories <= {MAX_PRIOR_CATEGORIES / harmonic:.4g} for {n_samples} "
            "rows (or upper='dp')."
        )


def _is_binary(X0, observed) -> bool:
    values = X0[observed.astype(bool)]
    return values.size > 0 and bool(np.all((values == 0.0) | (values == 1.0)))


def _choose_likelihood(X0, observed) -> str:
    """The observation model ``likelihood="auto"`` takes for ``X`` (missing entries 0).

    ``"detection"`` when every observed entry is 0 or 1; ``"exponential"`` when the data
    look like non-negative features over a zero baseline (the model's "nothing there"
    level, which the estimator does not centre away): the grand mean of the observed
    entries is clearly positive and no column mean lies below zero by more than noise
    explains; ``"gaussian"`` otherwise, for instance for centred or standardised data.
    """
    if _is_binary(X0, observed):
        return "detection"
    mask = observed.astype(bool)
    values = X0[mask]
    spread = float(np.std(values))
    if not spread > 0.0:
        return "gaussian"
    counts = mask.sum(axis=0)
    means = np.where(mask, X0, 0.0).sum(axis=0) / counts
    sq = np.where(mask, (X0 - means) ** 2, 0.0).sum(axis=0) / counts
    stderr = np.sqrt(sq / counts)
    if (float(np.mean(values)) >= _AUTO_POSITIVE_MEAN * spread
            and np.all(means >= -_AUTO_NEGATIVE_SE * stderr)):
        return "exponential"
    return "gaussian"


# Sweeps of the transform's per-row sampler, and the discarded first ones.
_TRANSFORM_SWEEPS, _TRANSFORM_BURN = 60, 10


#: The docstring entry of ``sample_hyperparameters`` (the loop parameters' entries are shared,
#: see :func:`sklearn_ibp.base.loop_parameters_doc`).
_SAMPLE_HYPERPARAMETERS_DOC = """\
sample_hyperparameters : bool, default=True
    Resample ``alpha_categories``, ``alpha_features``, ``q`` and the likelihood's
    parameters under vague priors every sweep.
"""


@document_loop_parameters(
    200, _SAMPLE_HYPERPARAMETERS_DOC,
    n_iter="All of the requested model; the init_iter sweeps of the simpler models come\n"
           "before them.",
)
class NoisyOrHierarchy(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseIBPSampler):
    """Correlated latent features: rows choose categories, categories choose features.

    The correlated nonparametric feature models of Doshi-Velez (2009, chapter 7). Rows
    belong to categories ``C``, categories link to features ``M``, and the features of a
    row are ``Z = f(C M)``; the data follow ``x = z A + noise`` (or a binary detection
    model). Features that occur together (a desk with a pen) are explained by a category
    that links them (a *motif*):

    * ``upper="dp", link="or"``: the DP-IBP (eq. 7.3), one category per row, ``Z = C M``;
    * ``upper="ibp", link="or"``: the IBP-IBP (eq. 7.6), ``z_nk = [c_n . m_k > 0]``;
    * ``upper="ibp", link="noisy_or"``: the noisy-or IBP-IBP (eq. 7.8),
      ``P(z_nk = 1) = 1 - q^(c_n . m_k)``; a feature is never on without a parent.

    Parameters
    ----------
    upper : {"ibp", "dp"}, default="ibp"
        Process over the categories: an IBP (rows may belong to several categories) or a
        Dirichlet process (one category per row, a clustering).
    link : {"noisy_or", "or"}, default="noisy_or"
        How categories switch features on.
    q : float, default=0.1
        Noisy-or noise: the probability that one active parent fails to switch its child
        on (the starting value when hyperparameters are sampled).
    alpha_categories : float, default=1.0
        Concentration of the process over categories (starting value when sampled).
        With ``upper="ibp"`` at most ``1000 / H_N`` for ``N`` rows (about 1000
        categories a priori, ``MAX_PRIOR_CATEGORIES``; ``H_N = 1 + 1/2 + ... + 1/N``):
        a larger value is refused, as the sweeps would take hours.
    alpha_features : float, default=1.0
        Concentration of the IBP over the links of categories to features.
    likelihood : {"auto", "gaussian", "exponential", "detection"}, default="auto"
        ``"gaussian"``: ``x = z A + e`` with Gaussian ``A`` and noise (the feature scale
        ``sigma_a`` held at its data-scaled start); ``"exponential"``: the same with
        non-negative features, ``a_kd ~ Exponential(rate)`` (appendix A.2, the model of
        the thesis's demonstrations); ``"detection"``: binary ``x`` with binary ``A``,
        per-dimension false detection and miss rates (sec. 7.3). ``"auto"`` chooses
        from the data: ``"detection"`` when every observed entry is 0 or 1,
        ``"exponential"`` when the data look like non-negative features over a zero
        baseline (grand mean at least 0.1 standard deviations above zero and no column
        mean below zero by more than 4 standard errors), ``"gaussian"`` otherwise (for
        example standardised data). The choice is in ``likelihood_``. Fitting 0/1 data
        with a real-valued likelihood warns. ``"bernoulli"``, the old name of
        ``"detection"``, is deprecated (FutureWarning) and will be removed in 0.2.
    solver : "gibbs" or GibbsHierarchy, default="gibbs"
        The sampler (:class:`~sklearn_ibp.solvers.GibbsHierarchy`), or
        a configured instance of it.
    init_iter : int, default=20
        Sweeps of each simpler model a chain runs before the requested one: the DP-IBP,
        then the IBP-IBP, then the noisy-or (the initialisation of Doshi-Velez 2009, sec. 7.3). They
        are not recorded in the traces.
    %(loop_parameters)s

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features_in)
        The features ``A`` of the kept sample with the highest log joint probability.
    Z_ : ndarray of shape (n_samples, n_components)
        Feature assignments of the training rows.
    categories_ : ndarray of shape (n_samples, n_categories)
        Category memberships ``C`` of the training rows.
    connections_ : ndarray of shape (n_categories, n_components)
        Links ``M`` from categories to features.
    motifs_ : ndarray of shape (n_motifs, n_components)
        The distinct sets of features that categories link (categories with the same
        links are one motif), most used first.
    motif_counts_ : ndarray of shape (n_motifs,)
        Training rows in the categories of each motif.
    n_components_, n_categories_ : int
        Number of features and of categories.
    alpha_categories_, alpha_features_, q_ : float
        Hyperparameters of that sample.
    likelihood_ : str
        The observation model used: ``likelihood``, or what ``"auto"`` chose.
    likelihood_params_ : dict
        The likelihood's parameters of that sample (``sigma_x``, ``rate``, ...).
    samples_ : list of dict
        Kept samples (``C``, ``M``, ``Z``, ``A`` and scalars).
    traces_ : dict of ndarray of shape (n_chains, n_iter)
        ``log_joint``, ``n_features``, ``n_categories``, ``alpha_categories``,
        ``alpha_features``, ``q`` and the likelihood's scalar parameters per sweep.
    n_iter_ : int
        Sweeps run per chain.
    interrupted_ : bool
        Whether the fit was interrupted (the samples so far are kept).
    n_features_in_ : int
        Number of columns seen in ``fit``.

    See Also
    --------
    IBPFactorAnalysis : Independent features (no categories).
    DPMixture : Flat clustering.

    Examples
    --------
    >>> from sklearn_ibp import NoisyOrHierarchy
    >>> from sklearn_ibp.datasets import make_correlated_block_images
    >>> X, Z, A, C = make_correlated_block_images(200, random_state=0)
    >>> model = NoisyOrHierarchy(upper="dp", link="or", n_iter=40, random_state=0).fit(X)
    >>> model.likelihood_
    'exponential'
    >>> model.transform(X[:3]).shape[0]
    3
    """

    _parameter_constraints: dict = {
        **BaseIBPSampler._parameter_constraints,
        "upper": [StrOptions({"ibp", "dp"})],
        "link": [StrOptions({"noisy_or", "or"})],
        "q": [Interval(Real, 0, 1, closed="neither")],
        "alpha_categories": [Interval(Real, 0, None, closed="neither")],
        "alpha_features": [Interval(Real, 0, None, closed="neither")],
        "likelihood": [StrOptions(set(LIKELIHOODS) | {"auto"} | set(RENAMED_LIKELIHOODS),
                                  deprecated=set(RENAMED_LIKELIHOODS))],
        "solver": [SolverNameOptions("hierarchy"), SolverOf("hierarchy")],
        "init_iter": [Interval(Integral, 0, None, closed="left")],
    }

    def __init__(
        self,
        upper="ibp",
        link="noisy_or",
        q=0.1,
        alpha_categories=1.0,
        alpha_features=1.0,
        likelihood="auto",
        solver="gibbs",
        init_iter=20,
        n_iter=200,
        burn_in=None,
        thin=1,
        n_chains=1,
        n_jobs=None,
        sample_hyperparameters=True,
        warm_start=False,
        random_state=None,
        verbose=0,
    ):
        self.upper = upper
        self.link = link
        self.q = q
        self.alpha_categories = alpha_categories
        self.alpha_features = alpha_features
        self.likelihood = likelihood
        self.solver = solver
        self.init_iter = init_iter
        self.sample_hyperparameters = sample_hyperparameters
        self._set_loop_parameters(n_iter, burn_in, thin, n_chains, n_jobs, warm_start,
                                  random_state, verbose)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags

    # -- fitting ------------------------------------------------------------------------
    _solver_model = "hierarchy"

    def _initialize_chain(self, solver, X, hyper, init, rng):
        lik = self._likelihood
        params = lik.initial_parameters(X, self._observed)
        stages = _STAGES[(self.upper, self.link)] + [(self.upper, self.link)]
        first_upper, first_link = stages[0]
        state = solver.new_state(
            X, self._observed, lik, params, upper=first_upper, link=first_link,
            alpha_c=self.alpha_categories, alpha_m=self.alpha_features, q=self.q, rng=rng,
        )
        for upper, link in stages[:-1]:
            solver.convert(state, upper=upper, link=link)
            for _ in range(self.init_iter):
                self._iterate(solver, state, rng, None)
        solver.convert(state, upper=self.upper, link=self.link)
        return state

    def _solver_context(self, state):
        return (self._likelihood,)

    def _update_options(self):
        return {"sample_hyperparameters": self.sample_hyperparameters,
                "hold": _HELD_PARAMETERS.get(self.likelihood_, ())}

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Sample the posterior over categories, links, features and ``A`` given ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data; NaN marks a missing entry (masked out of the likelihood).
            With a real-valued likelihood the largest magnitude must lie between
            1e-100 and 1e100 (``SCALE_RANGE``; beyond it the kernels overflow):
            rescale other data first.
        y : Ignored
            Not used, present for API consistency.

        Returns
        -------
        self : NoisyOrHierarchy
            The fitted estimator.
        """
        continuing = self.warm_start and hasattr(self, "_chains")
        X = validate_data(
            self, X, dtype=np.float64, ensure_all_finite="allow-nan", ensure_min_samples=2,
            reset=not continuing, order="C",
        )
        missing = np.isnan(X)
        _check_missing_pattern(missing)
        observed = (~missing).astype(np.uint8)
        X0 = np.where(missing, 0.0, X)
        if continuing:
            name = self.likelihood_
        elif self.likelihood == "auto":
            name = _choose_likelihood(X0, observed)
        else:
            name = renamed_option(self.likelihood, RENAMED_LIKELIHOODS, "likelihood")
            if name != "detection" and _is_binary(X0, observed):
                warn_at_caller(
                    f"X holds only 0 and 1 but likelihood={name!r} models real values: "
                    "binary data are better served by likelihood='detection' (or "
                    "'auto', which chooses it for such data); a real-valued model "
                    "fits many extra features to them.",
                    UserWarning,
                )
        lik = LIKELIHOODS[name]()
        lik.check_data(X0, observed)
        if name != "detection":
            _check_scale(X0, name)
            # The noise precision's Gamma(1, v) prior in units of the data (v the mean
            # square of the observed entries), as IBPFactorAnalysis does: with v = 1 the
            # fit of X * 1e-20 found features in noise that the fit of X does not.
            mean_square = float(np.mean(X0[observed.astype(bool)] ** 2)) \
                if observed.any() else 0.0
            lik.prior_variance = mean_square if mean_square > 0.0 else 1.0
        if self.upper == "ibp":
            _check_prior_categories(self.alpha_categories, X.shape[0])
        if continuing and X.shape[0] != self._chains[0]["state"].X.shape[0]:
            raise ValueError(
                f"warm_start=True continues the previous chains, which were fitted on "
                f"{self._chains[0]['state'].X.shape[0]} rows; X has {X.shape[0]} rows."
            )
        self.likelihood_ = name
        self._likelihood = lik
        self._observed = observed
        solver = self._solver if continuing else self._resolve_solver()
        if continuing:
            for chain in self._chains:
                chain["state"].observed = observed
        self._run_chains(X0, None, {}, solver, None)
        self._solver = solver
        self._set_posterior()
        if self.n_components_ == 0:
            warn_at_caller(
                f"NoisyOrHierarchy ended its fit with no features: the "
                f"likelihood={name!r} model explains every row by its noise alone, and "
                "transform returns an array of shape (n_samples, 0). Try standardising X "
                "(e.g. StandardScaler), larger alpha_categories or alpha_features, or more "
                "iterations (n_iter).",
                NoFeaturesWarning,
            )
        return self

    def _set_posterior(self):
        best = self._best_sample()
        self.categories_ = best["C"].astype(np.int8)
        self.connections_ = best["M"].astype(np.int8)
        self.Z_ = best["Z"].astype(np.int8)
        self.components_ = best["A"]
        self.alpha_categories_ = best["alpha_categories"]
        self.alpha_features_ = best["alpha_features"]
        self.q_ = best["q"]
        self.likelihood_params_ = dict(best["params"])
        self.n_components_ = int(self.Z_.shape[1])
        self.n_categories_ = int(self.categories_.shape[1])
        sizes = self.categories_.sum(axis=0)
        if self.n_categories_:
            motifs, inverse = np.unique(self.connections_, axis=0, return_inverse=True)
            counts = np.bincount(np.ravel(inverse), weights=sizes, minlength=len(motifs))
            order = np.argsort(-counts, kind="stable")
            self.motifs_ = motifs[order].astype(np.int8)
            self.motif_counts_ = counts[order].astype(np.int64)
        else:
            self.motifs_ = np.zeros((0, self.n_components_), np.int8)
            self.motif_counts_ = np.zeros(0, np.int64)

    # -- new rows -----------------------------------------------------------------------
    def _category_log_prior(self):
        """A new row's prior over the fitted categories (the ``N+1``-th customer)."""
        sizes = self.categories_.sum(axis=0).astype(float)
        n_train = self.categories_.shape[0]
        if self.upper == "dp":
            # Joining category l has weight n_l; a new category is left out (renormalised).
            return np.log(sizes)
        return np.log(sizes) - np.log(n_train + 1.0 - sizes)

    def transform(self, X):
        """Posterior probability that each new row has each fitted feature.

        The categories, links and features are held at the fitted sample; each row's
        categories (and noisy-or features) are sampled alone with a fixed seed, so the
        result is deterministic and depends on that row only. For the DP with the ``or``
        link the probabilities are exact (an enumeration of the categories); otherwise
        they average ``60`` Gibbs sweeps after ``10`` discarded ones. A new row is offered
        only the fitted categories.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows, NaN for missing entries.

        Returns
        -------
        ndarray of shape (n_samples, n_components)
            ``E[z_nk | x_n]``.
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, ensure_all_finite="allow-nan",
                          reset=False, order="C")
        missing = np.isnan(X)
        observed = (~missing).astype(np.uint8)
        X0 = np.ascontiguousarray(np.where(missing, 0.0, X))
        lik = LIKELIHOODS[self.likelihood_]()
        lik.check_data(X0, observed)
        if self.n_components_ == 0 or self.n_categories_ == 0:
            return np.zeros((X.shape[0], self.n_components_))
        exact = self.upper == "dp" and self.link == "or"
        return GibbsHierarchy.new_row_feature_probabilities(
            X0, observed, np.ascontiguousarray(self.connections_),
            np.ascontiguousarray(self.components_, dtype=np.float64),
            self._category_log_prior(), upper=self.upper, link=self.link,
            log_q=math.log(self.q_), obs_kind=lik.observation_kind,
            noise=lik.noise_array(self.likelihood_params_, X.shape[1]),
            n_sweeps=1 if exact else _TRANSFORM_SWEEPS,
            n_burn=0 if exact else _TRANSFORM_BURN, seed=0,
        )

    def inverse_transform(self, X):
        """Map feature assignments (or probabilities) back to data space.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_components)

        Returns
        -------
        ndarray of shape (n_samples, n_features)
            ``z A`` for the real-valued likelihoods; for ``"detection"`` the probability
            that each entry is 1 given ``z`` (probabilities are rounded to features).
        """
        check_is_fitted(self)
        Z = np.asarray(X, dtype=float)
        if Z.ndim != 2 or Z.shape[1] != self.n_components_:
            raise ValueError(
                f"X must have shape (n_samples, {self.n_components_}) (one column per "
                f"fitted feature); got {Z.shape}."
            )
        lik = LIKELIHOODS[self.likelihood_]()
        if self.likelihood_ == "detection":
            Z = (Z > 0.5).astype(float)
        return lik.predict(Z, self.components_, self.likelihood_params_)

    @property
    def _n_features_out(self):
        return self.n_components_
