"""InfiniteEBA: elimination by aspects with an IBP prior over the aspects (Görür 2007,
sec. 4.5)."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.base import ClassifierMixin, _fit_context
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted, validate_data

from .._memory import check_allocation
from ..base import BaseIBPSampler, document_loop_parameters
from ..likelihoods.choice import (
    check_outcomes,
    check_pairs,
    pairs_from_win_counts,
    win_counts_from_pairs,
)
from ..priors.ibp import harmonic_rate, sample_ibp
from ..solvers import EBA_SOLVERS as _EBA_SOLVERS
from ..solvers import SolverNameOptions, SolverOf

__all__ = ["InfiniteEBA"]

#: Solver names accepted by ``InfiniteEBA(solver=...)``.
#: Kept for compatibility: the registry's "eba" entries (``solvers.EBA_SOLVERS``).
EBA_SOLVERS = _EBA_SOLVERS


#: Most aspects the IBP prior may expect a priori (``alpha * H_N`` for ``N``
#: alternatives). A sweep costs about ``N K^2`` operations in ``K`` aspects (the slice
#: sampler's lowest-stick term of each singleton aspect): at ``K = 2000`` and ``N = 4``
#: about 0.05 s, at ``K = 20,000`` (``alpha=1e4``) 25 s, so that ``alpha=1e4`` ran for
#: hours. No data set of pairwise choices calls for thousands of aspects a priori.
MAX_PRIOR_ASPECTS = 2000

#: Bytes per entry of the arrays of size ``n_alternatives ** 2`` (the win counts and the
#: sampler's advantages, float64 each).
_BYTES_PER_PAIR = 16

#: The docstring entry of ``sample_alpha`` (the loop parameters' entries are shared,
#: see :func:`sklearn_ibp.base.loop_parameters_doc`).
_SAMPLE_ALPHA_DOC = """\
sample_alpha : bool, default=True
    Resample ``alpha`` every sweep from its conditional under a ``Gamma(1, 1)`` prior.
"""


@document_loop_parameters(
    1000, _SAMPLE_ALPHA_DOC,
    burn_in="The weight proposals are tuned during the burn-in.",
    warm_start="The number of alternatives must be unchanged.",
)
class InfiniteEBA(ClassifierMixin, BaseIBPSampler):
    """Elimination by aspects with infinitely many latent aspects (Görür 2007, sec. 4.5).

    A pairwise choice model: ``N`` alternatives have binary latent aspects ``Z`` with an
    Indian buffet process prior and positive weights ``w_k ~ Gamma(a, 1)``; every
    alternative also has a unique aspect of its own (weight ``u_i ~ Gamma(a, 1)``), with
    ``a = weight_shape`` (Görür 2007 has ``a = 1``; the default 0.25). The
    probability that ``i`` is chosen over ``j`` is the weight of what ``i`` has and ``j``
    lacks over the weight of everything they do not share (eq. 4.63),

    ``p_ij = a_ij / (a_ij + a_ji)``, ``a_ij = u_i + sum_k w_k z_ik (1 - z_jk)``,

    mixed with a lapse: ``p~_ij = (1 - lapse) p_ij + lapse / 2``. Shared aspects do not
    decide a choice, so alternatives that share much compete closely with each other and
    less with the rest: the similarity effects that the Bradley-Terry-Luce model (unique
    aspects only) cannot represent. The aspects, weights and ``alpha`` are sampled by the
    slice sampler of :class:`~sklearn_ibp.solvers.eba.SliceEBA` (sec.
    4.5.2), started from the best of several short runs from the prior, and predictions
    average the choice probabilities of the kept samples (the posterior mean predictive).

    A classifier over pairs: each row of ``X`` is a pair ``(i, j)`` of alternative
    indices, ``y`` is 1 when ``i`` was chosen and 0 when ``j`` was, and ``classes_`` is
    ``[0, 1]``, so ``predict_proba(X)[:, 1]`` is the probability that the first of each
    pair is chosen. Fit from a matrix of win counts with :meth:`fit_counts`.

    Parameters
    ----------
    alpha : float, default=1.0
        IBP concentration (the starting value when ``sample_alpha``). At most
        ``2000 / H_N`` for ``N`` alternatives (about 2000 aspects a priori,
        ``MAX_PRIOR_ASPECTS``; ``H_N = 1 + 1/2 + ... + 1/N``): a larger value is
        refused, as a sweep's cost grows with the square of the number of aspects.
    lapse : float, default=0.01
        Probability ``eps`` that a choice is a coin flip (sec. 4.5.1); it keeps a choice
        that the aspects make certain from having probability 1.
    weight_shape : float, default=0.25
        Shape ``a`` of the ``Gamma(a, 1)`` prior of every aspect weight and unique weight
        (Görür's (2007) eq. 4.67 is ``a = 1``; the rate does not matter, eq. 4.63 depends on
        ratios of weights only). A smaller shape puts more prior mass on weights near
        zero relative to the others: a choice that the data make (almost) certain, such
        as P+ over P in the Paris-Rome example, needs the loser's unique weight to be
        negligible, which ``Gamma(1, 1)`` charges for and then compensates by inflating
        the winner's advantage (the small bonus), so the posterior overstates the bonus
        in every other pair. The default ``a = 0.25`` removes most of that pull (see the
        user guide, "The weight prior"); ``weight_shape=1.0`` is Görür's (2007) prior. Below
        1 the sampler adds a weight proposal from the prior
        (``SliceEBA(prior_steps="auto")``) and the solver starts each chain from
        the best of several short runs (``SliceEBA(n_starts=4)``); below about
        0.2 the posterior has separated modes and a chain can stay in a poor one (use
        several chains).
    n_alternatives : int or None, default=None
        Number of alternatives; None infers the largest index in ``X`` plus one.
    unique_aspects : bool, default=True
        Give each alternative a unique aspect (Görür's (2007) model). Without them two
        alternatives with the same aspects are chosen with probability 1/2 (``0/0 = 1/2``
        in eq. 4.63).
    solver : "slice" or SliceEBA, default="slice"
        The sampler, or a configured instance of it.
    %(loop_parameters)s

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        ``[0, 1]`` (or the two labels of ``y``, the second meaning the first chosen).
    n_alternatives_ : int
        Number of alternatives.
    win_counts_ : ndarray of shape (n_alternatives, n_alternatives)
        ``win_counts_[i, j]``: training comparisons in which ``i`` was chosen over ``j``.
    choice_probabilities_ : ndarray of shape (n_alternatives, n_alternatives)
        Posterior mean probability that ``i`` is chosen over ``j`` (lapse included),
        averaged over the kept samples; 1/2 on the diagonal.
    eba_probabilities_ : ndarray of shape (n_alternatives, n_alternatives)
        Posterior mean of the EBA probability ``p_ij`` of eq. 4.63 itself, without the
        lapse: the quantity of Görür's (2007) Table 4.1, and the probabilities of data drawn
        from an EBA model without lapses (:func:`~sklearn_ibp.datasets.make_paris_rome`).
        ``choice_probabilities_ = (1 - lapse) eba_probabilities_ + lapse / 2``.
    aspects_ : ndarray of shape (n_alternatives, n_aspects), int8
        Aspects ``Z`` of the last kept sample (its active aspects only).
    weights_ : ndarray of shape (n_aspects,)
        Their weights.
    unique_weights_ : ndarray of shape (n_alternatives,)
        Weights of the unique aspects in that sample (zeros without unique aspects).
    alpha_ : float
        ``alpha`` of that sample.
    samples_ : list of dict
        Kept samples: ``Z``, ``weights``, ``unique_weights``, ``probabilities`` (the
        choice probabilities), ``alpha``, ``log_joint``, ``chain``.
    traces_ : dict of ndarray of shape (n_chains, n_iter)
        Per sweep: ``log_joint``, ``n_features``, ``log_likelihood``, ``alpha``,
        ``acceptance`` (of the weight proposals) and ``eta`` (their concentration).
    log_likelihood_trace_, n_features_trace_, alpha_trace_ : ndarray of shape (n_chains, n_iter)
        The same traces, as attributes.
    n_iter_ : int
        Sweeps run per chain.
    interrupted_ : bool
        Whether the fit was interrupted (the samples so far are kept).
    n_features_in_ : int
        2: the columns of ``X``, a pair of indices.

    See Also
    --------
    sklearn_ibp.likelihoods.choice.fit_bradley_terry : The Bradley-Terry-Luce model
        fitted by maximum likelihood.

    Notes
    -----
    :meth:`score` is the mean log-likelihood of the outcomes (the mean log predictive
    probability of each comparison), not the accuracy of :class:`ClassifierMixin`: a
    choice model is judged by its probabilities, and accuracy cannot tell 0.51 from 0.99.

    Examples
    --------
    >>> from sklearn_ibp import InfiniteEBA
    >>> from sklearn_ibp.datasets import make_paris_rome
    >>> X, y, P = make_paris_rome(n_comparisons=100, random_state=0)
    >>> model = InfiniteEBA(n_iter=400, random_state=0).fit(X, y)
    >>> model.choice_probabilities_.shape
    (4, 4)
    >>> model.eba_probabilities_.shape
    (4, 4)
    """

    _parameter_constraints: dict = {
        **{k: v for k, v in BaseIBPSampler._parameter_constraints.items()
           if k != "sample_hyperparameters"},
        "alpha": [Interval(Real, 0, None, closed="neither")],
        "lapse": [Interval(Real, 0, 1, closed="left")],
        "weight_shape": [Interval(Real, 0, None, closed="neither")],
        "n_alternatives": [Interval(Integral, 2, None, closed="left"), None],
        "unique_aspects": ["boolean"],
        "solver": [SolverNameOptions("eba"), SolverOf("eba")],
        "sample_alpha": ["boolean"],
    }

    def __init__(
        self,
        alpha=1.0,
        lapse=0.01,
        weight_shape=0.25,
        n_alternatives=None,
        unique_aspects=True,
        solver="slice",
        n_iter=1000,
        burn_in=None,
        thin=1,
        n_chains=1,
        n_jobs=None,
        sample_alpha=True,
        warm_start=False,
        random_state=None,
        verbose=0,
    ):
        self.alpha = alpha
        self.lapse = lapse
        self.weight_shape = weight_shape
        self.n_alternatives = n_alternatives
        self.unique_aspects = unique_aspects
        self.solver = solver
        self.sample_alpha = sample_alpha
        self._set_loop_parameters(n_iter, burn_in, thin, n_chains, n_jobs, warm_start,
                                  random_state, verbose)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.categorical = True
        tags.classifier_tags.multi_class = False
        # X is pairs of alternatives: real-valued data (the checks' blobs) carry no
        # choices to learn.
        tags.classifier_tags.poor_score = True
        return tags

    # -- the sampling loop's hooks -------------------------------------------------------
    _solver_model = "eba"

    def _initialize_chain(self, solver, wins, hyper, init, rng):
        # Görür 2007, sec. 4.5.3: Z and the weights start from their priors; the solver
        # keeps the best of its n_starts such starts after a short run of each.
        starts = [self._prior_start(solver, wins, rng)
                  for _ in range(getattr(solver, "n_starts", 1))]
        if len(starts) == 1:
            return starts[0]
        return solver.select_start(starts, rng, sample_alpha=self.sample_alpha)

    def _prior_start(self, solver, wins, rng):
        N = wins.shape[0]
        Z = sample_ibp(N, self.alpha, random_state=rng)
        a = float(self.weight_shape)
        weights = rng.gamma(a, 1.0, Z.shape[1])
        unique = rng.gamma(a, 1.0, N)
        # A Gamma(a < 1) draw can underflow to 0, outside the support.
        weights = np.maximum(weights, np.finfo(float).tiny)
        unique = np.maximum(unique, np.finfo(float).tiny)
        return solver.initialize(wins, Z, weights, unique, self.alpha, self.lapse,
                                 adapt_sweeps=self._burn_in(),
                                 unique_aspects=self.unique_aspects,
                                 weight_shape=a)

    def _update_options(self):
        # sample_alpha plays the part of sample_hyperparameters.
        return {"sample_hyperparameters": self.sample_alpha}

    # -- fitting ------------------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Sample the posterior over aspects, weights and ``alpha`` given comparisons.

        Parameters
        ----------
        X : array-like of shape (n_pairs, 2)
            Each row a pair ``(i, j)`` of integer alternative indices, ``i != j``;
            repeated rows are repeated comparisons.
        y : array-like of shape (n_pairs,)
            1 when the first alternative of the pair was chosen, 0 when the second was
            (two other labels are accepted too, the greater meaning the first chosen).

        Returns
        -------
        self : InfiniteEBA
            The fitted estimator.
        """
        return self._fit(X, y, None)

    def fit_counts(self, W):
        """Fit from a matrix of win counts.

        Parameters
        ----------
        W : array-like of shape (n_alternatives, n_alternatives)
            ``W[i, j]``: how many times ``i`` was chosen over ``j`` (non-negative
            integers, zero diagonal).

        Returns
        -------
        self : InfiniteEBA
            The fitted estimator, exactly as ``fit(*pairs_from_win_counts(W))`` with
            ``n_alternatives = len(W)``.
        """
        X, y = pairs_from_win_counts(W)  # checks the memory of the pairs first
        return self._fit(X, y, np.shape(W)[0])

    def _fit(self, X, y, n_from_counts):
        self._validate_params()
        continuing = self.warm_start and hasattr(self, "_chains")
        # A matrix of win counts may hold no comparison at all (the fit then samples
        # the prior); pairs passed to fit must be at least one.
        X_checked = validate_data(self, X, dtype=None, ensure_2d=True,
                                  ensure_min_samples=0 if n_from_counts else 1,
                                  reset=not continuing, ensure_all_finite=False)
        pairs = check_pairs(X_checked, self.n_alternatives)
        y, classes = check_outcomes(y, pairs.shape[0],
                                    self.classes_ if continuing else None)
        if self.n_alternatives is not None:
            N = self.n_alternatives
            if n_from_counts is not None and n_from_counts != N:
                raise ValueError(f"W describes {n_from_counts} alternatives but "
                                 f"n_alternatives={N}.")
        elif n_from_counts is not None:
            N = n_from_counts
        else:
            N = max(int(pairs.max()) + 1, 2)
        check_allocation(
            _BYTES_PER_PAIR * float(N) ** 2,
            what=f"the win counts of {N} alternatives ({N} x {N})",
            advice="number the alternatives that appear 0, 1, 2, ... (X's indices are "
                   "rows of an n_alternatives x n_alternatives matrix; the largest "
                   f"index, {N - 1}, sets its size)" if self.n_alternatives is None
            else f"lower n_alternatives ({N})",
        )
        expected = self.alpha * harmonic_rate(N)
        if expected > MAX_PRIOR_ASPECTS:
            raise ValueError(
                f"alpha={self.alpha!r} gives {N} alternatives about {expected:.0f} aspects "
                f"a priori (alpha * H_N), more than the {MAX_PRIOR_ASPECTS} the sampler "
                f"supports in reasonable time: use alpha <= "
                f"{MAX_PRIOR_ASPECTS / harmonic_rate(N):.4g} for {N} alternatives."
            )
        wins = win_counts_from_pairs(pairs, y, N)
        if continuing and N != self.n_alternatives_:
            raise ValueError(
                f"warm_start=True continues the previous chains over {self.n_alternatives_}"
                f" alternatives; this data has {N}."
            )
        self.classes_ = classes
        self.n_alternatives_ = N
        self.win_counts_ = wins
        solver = self._solver if continuing else self._resolve_solver()
        self._run_chains(wins, None, {}, solver, None)
        self._solver = solver
        self._set_posterior()
        return self

    def _set_posterior(self):
        last = self.samples_[-1]
        self.aspects_ = last["Z"].astype(np.int8)
        self.weights_ = last["weights"].copy()
        self.unique_weights_ = last["unique_weights"].copy()
        self.alpha_ = float(last["alpha"])
        self.choice_probabilities_ = np.mean([s["probabilities"] for s in self.samples_],
                                             axis=0)
        # p~ = (1 - eps) p + eps / 2 is linear in p, so the posterior mean of p follows.
        self.eba_probabilities_ = ((self.choice_probabilities_ - 0.5 * self.lapse)
                                   / (1.0 - self.lapse))
        self.log_likelihood_trace_ = self.traces_["log_likelihood"]
        self.n_features_trace_ = self.traces_["n_features"]
        self.alpha_trace_ = self.traces_["alpha"]

    # -- prediction ---------------------------------------------------------------------
    def _pairs(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, dtype=None, reset=False, ensure_all_finite=False)
        return check_pairs(X, self.n_alternatives_)

    def predict_proba(self, X):
        """Posterior mean probability of each outcome of each pair.

        Parameters
        ----------
        X : array-like of shape (n_pairs, 2)
            Pairs ``(i, j)`` of alternative indices.

        Returns
        -------
        proba : ndarray of shape (n_pairs, 2)
            Columns in the order of ``classes_``: ``[P(j chosen), P(i chosen)]``.
        """
        pairs = self._pairs(X)
        p = self.choice_probabilities_[pairs[:, 0], pairs[:, 1]]
        return np.column_stack([1.0 - p, p])

    def predict(self, X):
        """The more probable outcome of each pair: 1 when the first is the likelier
        choice.

        Parameters
        ----------
        X : array-like of shape (n_pairs, 2)

        Returns
        -------
        ndarray of shape (n_pairs,)
        """
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    def score(self, X, y, sample_weight=None):
        """Mean log-likelihood of the outcomes under the posterior mean predictive.

        Unlike :meth:`sklearn.base.ClassifierMixin.score` (accuracy), this is
        ``mean(y log p + (1 - y) log(1 - p))`` with ``p = predict_proba(X)[:, 1]``: the
        log predictive probability per comparison, higher is better.

        Parameters
        ----------
        X : array-like of shape (n_pairs, 2)
        y : array-like of shape (n_pairs,)
            Outcomes, 1 when the first alternative was chosen.
        sample_weight : array-like of shape (n_pairs,) or None
            Weights of the comparisons.

        Returns
        -------
        float
        """
        proba = self.predict_proba(X)
        y, _ = check_outcomes(y, proba.shape[0], self.classes_)
        chosen = proba[np.arange(y.shape[0]), y]
        with np.errstate(divide="ignore"):
            log_p = np.log(chosen)
        return float(np.average(log_p, weights=sample_weight))
