"""The IBP particle filter (Doshi-Velez 2009, sec. 3.5, Wood & Griffiths, 2007) and particle Gibbs.

The filter of Doshi-Velez (2009, sec. 3.5) pretends the rows arrive one at a time. Each particle
adds the next row from the IBP's sequential construction (the Indian buffet) given its earlier rows,
with the values of the new features drawn from their prior; particles are weighted by the
likelihood of the row and resampled. After the last row the particles approximate the
posterior, exactly only as their number grows. :func:`particle_filter` is that filter.

To make it an exact MCMC sweep that can be repeated, :class:`ParticleIBP` runs it as
*conditional* SMC (particle Gibbs; Andrieu, Doucet & Holenstein, 2010): the chain's
current state is kept as a reference particle, the others are propagated by the filter,
and one particle drawn by its final weight becomes the new state. The estimator's chain is
therefore: the unconditional filter to start (``init="filter"``), then particle Gibbs
sweeps, each followed by ``A`` given ``Z``.

Why the sweep leaves the posterior invariant
--------------------------------------------
*Paths.* Fix an order ``sigma`` of the rows. The buffet in that order is a Markov chain
whose state after ``t`` rows, the *prefix*, is the rows added so far together with the
values of the features they created. Row ``t + 1`` (customer ``n = t + 1``) holds each
existing feature with probability ``m_k / n`` and creates ``Poisson(alpha / n)`` new ones,
with values ``a ~ G_0``. A complete path ``omega`` is a labelled pair ``(Z, A)`` whose
columns are in order of creation; its probability is
``Q(omega) = alpha^K exp(-alpha H_N) prod_k (m_k - 1)! (N - m_k)! / N! prod_k G_0(a_k)
/ prod_t K_t!``, with ``K_t`` the features created by the ``t``-th row (Doshi-Velez 2009, sec. 2,
eq. 2.1 with the ``K_t!`` orders of each row's new dishes). This does not depend on
``sigma``, and it is the same for each of the ``prod_t K_t!`` creation-ordered labellings
of one class ``[Z, A]`` (the class of ``(Z, A)`` up to the order of its columns).

*Lifting.* Given the current state, a fresh uniformly random ``sigma`` is drawn (the IBP
is exchangeable in its rows, and a mixture over ``sigma`` of kernels that each leave the
posterior invariant leaves it invariant). The columns are sorted by the row that creates
them, ties in a uniformly random order (:func:`~._particle_kernels.order_reference`).
Every creation-ordered labelling of the class is equally likely, so if ``[Z, A]`` is a
posterior draw, the path is a draw from
``pi_sigma(omega) ∝ Q(omega) prod_t p(x_sigma(t) | z_sigma(t), A)``.

*Weights.* ``pi_sigma`` is a path measure with Markov transitions (the buffet step) and
potentials ``g_t = p(x_sigma(t) | z_sigma(t), A)``, where ``z_sigma(t)`` only reaches
features the prefix holds. Proposing each step from the transition itself, the
incremental weight is the potential alone: the likelihood of the new row given the
particle's features. The features' values belong to the path: the reference particle
keeps the current values of its features, the other particles have them only by
descending from the reference at a resampling, and new features get values from ``G_0``
when they are created (so their prior density cancels between target and proposal).

*Conditional SMC.* With every slot's ancestor marginally distributed as the normalised
weights (multinomial; systematic with its positions dealt to the slots in a random order)
and the other slots drawn from the scheme's law given the reference's ancestor
(:func:`~._particle_kernels.resample_ancestors`; Chopin & Singh, 2015, for the
systematic one), the extended target
``pi_sigma(omega_ref) / P^(number of resamplings + 1)`` times the conditional law of all
other particles has ``pi_sigma`` as the law of the drawn path, and the conditional SMC
sweep followed by the draw of the output particle by its final weight is a Gibbs update
of it. Resampling only when the effective sample size of the weights (reference
included) falls below a threshold is allowed: the decision is a function of the
weights, and the count ``P^(number of resamplings + 1)`` of reference slot sequences
cancels when the reference's slot is summed out.

*A.* After the path, ``A`` is drawn from ``p(A | Z, X)`` by ``likelihood.sample_features``
(an exact joint draw for the linear-Gaussian model, a Gibbs sweep for the others), a
second Gibbs step. The chain on ``[Z, A]`` therefore targets ``p(Z, A | X, alpha,
params)``; ``alpha`` is updated by the inherited ``Gamma(shape + K, rate + H_N)``
conditional.

A brand-new feature is proposed from its prior, as in Doshi-Velez 2009, so in many dimensions it
is rarely kept (Doshi-Velez's (2009) remark that the filter "often requires a large number of
particles"); the sampler is most useful at moderate ``D`` or as the start of a chain.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from ..._deprecation import class_aliases
from .._feature_proposal_kernels import PROPOSALS as _PROPOSALS
from ._explicit_base import ExplicitFeatureState, check_explicit_inputs, grow
from ._metropolis_kernels import compact_features
from ._particle_kernels import (
    RESAMPLE_MULTINOMIAL,
    RESAMPLE_SYSTEMATIC,
    particle_sweep,
)
from .metropolis import _RowwiseExplicitSolver

__all__ = ["ParticleIBP", "particle_filter"]

_SCHEMES = {"multinomial": RESAMPLE_MULTINOMIAL, "systematic": RESAMPLE_SYSTEMATIC}


def _writable(a: np.ndarray) -> np.ndarray:
    """``a``, or a copy when it is read-only (numba compiles read-only arrays as another
    type; one signature keeps the cached kernel)."""
    return a if a.flags.writeable else a.copy()


def _check_filter_arguments(n_particles, resampling, ess_threshold, proposal):
    if isinstance(n_particles, bool) or not isinstance(n_particles, Integral) \
            or n_particles < 1:
        raise ValueError(f"n_particles must be an integer >= 1; got {n_particles!r}.")
    if resampling not in _SCHEMES:
        raise ValueError(
            f"resampling must be one of {sorted(_SCHEMES)}; got {resampling!r}.")
    if isinstance(ess_threshold, bool) or not isinstance(ess_threshold, Real) \
            or not 0.0 < ess_threshold <= 1.0:
        raise ValueError(f"ess_threshold must be a number in (0, 1]; got {ess_threshold!r}.")
    if proposal not in _PROPOSALS:
        raise ValueError(f"proposal must be one of {sorted(_PROPOSALS)}; got {proposal!r}.")


def particle_filter(X, observed, alpha, params, likelihood, n_particles=20,
                    resampling="systematic", ess_threshold=0.5, proposal="data",
                    random_state=None):
    """Run the IBP particle filter once (Doshi-Velez 2009, sec. 3.5) and draw one particle.

    The rows are visited in a uniformly random order. Every particle draws the next row
    from the Indian buffet given its earlier rows (existing features with probability
    ``m_k / n``, ``Poisson(alpha / n)`` new ones with values from the likelihood's
    feature prior), is weighted by the row's likelihood, and the particles are resampled
    whenever the effective sample size drops below ``ess_threshold * n_particles``. The
    returned state is drawn from the final particles by weight: a draw from the posterior
    only as ``n_particles`` grows; ``exp(log_evidence)`` is an unbiased estimate of
    ``p(X | alpha, params)`` at any ``n_particles``.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_dims)
        Data (any finite value where not observed).
    observed : ndarray of shape (n_samples, n_dims) or None
        1 where ``X`` is observed; None means everything is.
    alpha : float
        IBP concentration (> 0).
    params : dict
        The likelihood's parameters.
    likelihood : FeatureLikelihood
        An explicit-feature likelihood (``"gaussian"``, ``"exponential"``,
        ``"detection"``, ``"noisy_or"``).
    n_particles : int, default=20
        Number of particles.
    resampling : {"systematic", "multinomial"}, default="systematic"
        Resampling scheme.
    ess_threshold : float in (0, 1], default=0.5
        Resample when the effective sample size is below this fraction of
        ``n_particles``; 1 resamples after every row.
    random_state : None, int or numpy.random.Generator
        Source of randomness.

    Returns
    -------
    Z : ndarray of shape (n_samples, n_features), int8
        The drawn particle's features (every column non-empty, in order of creation).
    A : ndarray of shape (n_features, n_dims)
        Their values.
    log_evidence : float
        Log of the unbiased estimate of the marginal likelihood.
    """
    _check_filter_arguments(n_particles, resampling, ess_threshold, proposal)
    rng = np.random.default_rng(random_state)
    X, observed, _ = check_explicit_inputs(X, observed, alpha)
    observed = np.ascontiguousarray(observed, dtype=np.uint8)
    D = X.shape[1]
    Z, A, log_evidence, _, _ = particle_sweep(
        _writable(X), _writable(observed), np.zeros((X.shape[0], 0), dtype=np.int8),
        np.zeros((0, D)), 0,
        likelihood.observation_kind, likelihood.noise_array(params, D),
        likelihood.prior_kind, likelihood.prior_array(params), float(alpha),
        int(n_particles), _SCHEMES[resampling], float(ess_threshold), _PROPOSALS[proposal],
        False, rng,
    )
    return Z, A, float(log_evidence)


class ParticleIBP(_RowwiseExplicitSolver):
    """Particle Gibbs for the IBP: the particle filter of Doshi-Velez 2009 run as conditional SMC.

    Doshi-Velez 2009, sec. 3.5 (Wood & Griffiths, 2007); the derivation is in the module
    docstring. One sweep, in a fresh uniformly random row order:

    1. the current ``(Z, A)`` becomes the reference path (features in order of the row
       that creates them);
    2. ``n_particles - 1`` other particles add the rows one at a time from the Indian
       buffet given their earlier rows, new features' values from the prior; every
       particle is weighted by each row's likelihood ``p(x_n | z_n, A)``, and the
       particles are resampled, conditionally on the reference, whenever the effective
       sample size drops below ``ess_threshold * n_particles``;
    3. one particle, drawn by its final weight, becomes the new ``Z`` and ``A``;
    4. ``A`` is drawn given ``Z`` by the likelihood.

    The chain targets the exact posterior ``p(Z, A | X, alpha, params)`` at any number of
    particles; more particles renew more of the path per sweep. ``initialize`` starts
    from one run of the unconditional filter (``init="filter"``, what Doshi-Velez 2009 describes)
    or from the given ``Z`` and ``A`` (``init="given"``).

    Parameters
    ----------
    n_particles : int, default=20
        Number of particles, the reference included (>= 1; 1 keeps ``Z`` unchanged).
    resampling : {"systematic", "multinomial"}, default="systematic"
        How ancestors are drawn: systematic resampling (one uniform, lower variance; its
        conditional form after Chopin & Singh, 2015) or independent multinomial draws.
    ess_threshold : float in (0, 1], default=0.5
        Resample before a row when the effective sample size of the weights is below
        ``ess_threshold * n_particles``; 1 resamples before every row. Resampling less
        often keeps more distinct paths (less path degeneracy) at the price of more
        uneven weights.
    init : {"filter", "given"}, default="filter"
        How :meth:`initialize` makes the starting state: ``"filter"`` runs the
        unconditional particle filter from no rows (the ``Z`` and ``A`` passed are
        checked and then ignored); ``"given"`` starts from them.

    Attributes
    ----------
    name : str
        ``"particle"``.
    exact : bool
        True.

    Notes
    -----
    After each sweep ``state.stats`` holds ``"rows_renewed"`` (how many of the last rows,
    in the sweep's order, the new path took from a particle other than the reference; 0
    when the reference was drawn again) and ``"n_resampled"``; after a filter start,
    ``"log_evidence"``, the log of the filter's unbiased estimate of ``p(X)``.
    """

    name = "particle"
    exact = True

    _parameter_constraints: dict = {
        "n_particles": [Interval(Integral, 1, None, closed="left")],
        "resampling": [StrOptions(set(_SCHEMES))],
        "ess_threshold": [Interval(Real, 0.0, 1.0, closed="right")],
        "proposal": [StrOptions(set(_PROPOSALS))],
        "init": [StrOptions({"filter", "given"})],
    }

    def __init__(self, n_particles=20, resampling="systematic", ess_threshold=0.5,
                 proposal="data", init="filter"):
        self.n_particles = n_particles
        self.resampling = resampling
        self.ess_threshold = ess_threshold
        self.proposal = proposal
        self.init = init

    def _slots_needed(self) -> int:
        return 8

    def _rows(self, start, row_order, state, noise, prior, likelihood, rng
              ):  # pragma: no cover - the sweep is overridden
        raise NotImplementedError

    def initialize(self, X, observed, Z, A, alpha, params, likelihood, rng
                   ) -> ExplicitFeatureState:
        """A chain state: one run of the particle filter, or the given ``Z`` and ``A``.

        The parameters are those of :meth:`MetropolisIBP.initialize` (``likelihood``
        may also be ``"noisy_or"``); ``Z`` and ``A`` are the start only with
        ``init="given"``, and with ``init="filter"`` the filter's draw replaces them.

        Returns
        -------
        state : ExplicitFeatureState
        """
        state = super().initialize(X, observed, Z, A, alpha, params, likelihood, rng)
        if self.init == "filter":
            self._run(state, likelihood, rng, conditional=False)
            self.sample_features(state, likelihood, rng)
        return state

    def _run(self, state: ExplicitFeatureState, likelihood, rng, conditional) -> None:
        N, D = state.X.shape
        Z, A, log_evidence, n_resampled, renewed = particle_sweep(
            _writable(state.X), _writable(state.observed), state.Z, state.A, state.n_features,
            likelihood.observation_kind, likelihood.noise_array(state.params, D),
            likelihood.prior_kind, likelihood.prior_array(state.params), state.alpha,
            int(self.n_particles), _SCHEMES[self.resampling], float(self.ess_threshold),
            _PROPOSALS[self.proposal], conditional, rng,
        )
        K = Z.shape[1]
        grow(state, K + 1)
        state.Z[:, :K] = Z
        state.Z[:, K:] = 0
        state.A[:K] = A
        state.A[K:] = 0.0
        counts = np.zeros(state.Z.shape[1], dtype=np.int64)
        counts[:K] = Z.sum(axis=0)
        state.stats["counts"] = counts
        # Every column of a path is non-empty; compaction only guards the invariant.
        state.n_features = int(compact_features(state.Z, state.A, counts, K))
        state.stats["n_resampled"] = int(n_resampled)
        state.stats["rows_renewed"] = int(renewed)
        if not conditional:
            state.stats["log_evidence"] = float(log_evidence)

    def sweep(self, state: ExplicitFeatureState, likelihood, rng) -> None:
        """One particle Gibbs sweep (conditional SMC in a random row order), then ``A``
        given ``Z``."""
        if "counts" not in state.stats:
            raise ValueError(f"the state was not made by {type(self).__name__}.initialize.")
        self._run(state, likelihood, rng, conditional=True)
        self.sample_features(state, likelihood, rng)


#: Old class names (before issue 21), importable with a FutureWarning naming the new one.
__getattr__ = class_aliases(__name__)
