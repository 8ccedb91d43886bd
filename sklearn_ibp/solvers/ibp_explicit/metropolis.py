"""Metropolis-Hastings sampling of the IBP's unique features (Görür 2007, sec. 4.2.3).

Algorithm 13 (after Meeds et al., 2007; the uncollapsed sampler's new-feature move of
Doshi-Velez 2009, sec. 3.1): the features ``A`` stay explicit, so any explicit-feature likelihood
(linear-Gaussian, exponential-Gaussian, binary detection) is served. For each row, the
entries ``z_nk`` of features other rows have are Gibbs-sampled (eq. 4.36), and the row's
unique features are replaced, by a Metropolis-Hastings move, with a proposed number of new
ones and their values (eq. 4.40). After the rows, the live ``A`` is resampled by the
likelihood. The chain targets the exact posterior.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from ..._deprecation import class_aliases
from .._feature_proposal_kernels import PROPOSALS as _PROPOSALS
from ._explicit_base import (
    ExplicitFeatureSolver,
    ExplicitFeatureState,
    check_start_features,
    grow,
    new_explicit_state,
    start_counts_and_prediction,
)
from ._metropolis_kernels import (
    compact_features,
    metropolis_rows,
    refresh_prediction,
)

__all__ = ["MetropolisIBP"]



class _RowwiseExplicitSolver(ExplicitFeatureSolver):
    """What the row-by-row explicit-feature samplers share: the state's extra arrays
    (``counts``, the prediction ``pred = Z A``), the sweep's driver (random row order,
    compaction and growth of the slots, ``A`` resampled by the likelihood) and checks.

    Subclasses implement :meth:`_rows` (the kernel call on ``row_order[start:]``) and
    :meth:`_slots_needed` (free slots one row may need).
    """

    def _rows(self, start, row_order, state, noise, prior, likelihood, rng
              ):  # pragma: no cover - abstract
        raise NotImplementedError

    def _slots_needed(self) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def initialize(self, X, observed, Z, A, alpha, params, likelihood, rng
                   ) -> ExplicitFeatureState:
        """A chain state from ``Z`` (N, K) and ``A`` (K, D); inputs are copied.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_dims)
            Data (any finite value where not observed).
        observed : ndarray of shape (n_samples, n_dims) or None
            1 where ``X`` is observed; None means everything is.
        Z : ndarray of shape (n_samples, n_features)
            Starting binary feature matrix; empty columns are dropped.
        A : ndarray of shape (n_features, n_dims) or None
            Starting features; None draws them from the prior.
        alpha : float
            IBP concentration (> 0).
        params : dict
            The likelihood's parameters.
        likelihood : FeatureLikelihood
            One of ``"gaussian"``, ``"exponential"``, ``"detection"``, ``"noisy_or"``.
        rng : numpy.random.Generator
            The chain's generator.

        Returns
        -------
        state : ExplicitFeatureState
        """
        X, observed, Z = self._check_initialize(likelihood, X, observed, alpha, Z)
        N, D = X.shape
        K = Z.shape[1]
        if A is None:
            A = likelihood.sample_prior_features(K, D, params, rng)
        A = check_start_features(A, K, D)
        state = new_explicit_state(X, observed, Z, A, alpha, params,
                                   capacity=2 * K + 2 * self._slots_needed() + 8)
        start_counts_and_prediction(state, K)
        refresh_prediction(state.Z, state.A, state.n_features, state.stats["pred"])
        return state

    def refresh(self, state: ExplicitFeatureState) -> None:
        """Recompute ``counts`` and ``pred`` after ``state.Z`` or ``state.A`` were set
        from outside."""
        K = state.n_features
        counts = np.zeros(state.Z.shape[1], dtype=np.int64)
        counts[:K] = state.Z[:, :K].sum(axis=0)
        state.stats["counts"] = counts
        state.n_features = int(compact_features(state.Z, state.A, counts, K))
        if state.stats.get("pred") is None or state.stats["pred"].shape != state.X.shape:
            state.stats["pred"] = np.zeros(state.X.shape)
        refresh_prediction(state.Z, state.A, state.n_features, state.stats["pred"])

    def _grow(self, state: ExplicitFeatureState) -> None:
        old = state.stats["counts"]
        grow(state, 2 * state.Z.shape[1] + self._slots_needed())
        counts = np.zeros(state.Z.shape[1], dtype=np.int64)
        counts[: old.shape[0]] = old
        state.stats["counts"] = counts

    def sweep(self, state: ExplicitFeatureState, likelihood, rng) -> None:
        """One sweep: every row in a random order, then ``A`` given ``Z``."""
        if "counts" not in state.stats:
            raise ValueError(f"the state was not made by {type(self).__name__}.initialize.")
        N, D = state.X.shape
        noise = likelihood.noise_array(state.params, D)
        prior = likelihood.prior_array(state.params)
        row_order = state.stats.get("row_order")
        if row_order is None or row_order.shape[0] != N:
            row_order = state.stats["row_order"] = np.empty(N, dtype=np.int64)
        position = 0
        while True:
            K, position = self._rows(position, row_order, state, noise, prior, likelihood,
                                     rng)
            state.n_features = int(K)
            if position >= N:
                break  # the kernel compacted the slots
            state.n_features = int(compact_features(
                state.Z, state.A, state.stats["counts"], state.n_features))
            self._grow(state)
        self.sample_features(state, likelihood, rng)

    @staticmethod
    def sample_features(state: ExplicitFeatureState, likelihood, rng) -> None:
        """``A`` given ``Z`` by ``likelihood.sample_features``, then ``pred = Z A``.

        Features are handed over in a random order: slots are in order of creation, and a
        feature-by-feature update (exponential, binary) must not take its order from the
        state.
        """
        K, D = state.n_features, state.X.shape[1]
        if K and D and likelihood.name == "gaussian":
            # An exact joint draw (eq. A.3): the order of the features does not matter.
            state.A[:K] = likelihood.sample_features(
                state.X, state.observed, state.Z[:, :K], state.A[:K], state.params, rng)
        elif K and D:
            perm = rng.permutation(K)
            new = likelihood.sample_features(
                state.X, state.observed, np.ascontiguousarray(state.Z[:, perm]),
                np.ascontiguousarray(state.A[perm]), state.params, rng,
            )
            state.A[perm] = new
        refresh_prediction(state.Z, state.A, K, state.stats["pred"])


class MetropolisIBP(_RowwiseExplicitSolver):
    """Gibbs sampling with Metropolis-Hastings moves for unique features (Algorithm 13).

    Görür 2007, sec. 4.2.3 (Meeds et al., 2007; Doshi-Velez 2009, sec. 3.1). For each row ``n``, in
    a random order:

    1. every ``z_nk`` of a feature other rows have (``m_{-n,k} > 0``) is drawn from its
       conditional, prior odds ``m_{-n,k} / (N - m_{-n,k})`` times the likelihood ratio
       (eq. 4.36);
    2. the row's unique features (``m_{-n,k} = 0``) are proposed to be replaced by
       ``K_new ~ Poisson(alpha / N)`` new ones with values drawn from ``proposal``, and
       the proposal is accepted with the Metropolis-Hastings ratio (eq. 4.40).

    Then the live ``A`` is resampled with ``likelihood.sample_features``. The chain leaves
    the exact posterior ``p(Z, A | X, alpha, params)`` invariant: the truncation of the
    Poisson at ``k_max`` cancels in the ratio and a row holding more than ``k_max`` unique
    features keeps them (the reverse move could not be proposed).

    Parameters
    ----------
    k_max : int, default=6
        Largest number of new features one proposal may hold.
    proposal : {"prior", "data"}, default="prior"
        How the new features' values are proposed. ``"prior"``: from the feature prior
        ``G_0``, Görür's (2007) choice; the ratio is the likelihood ratio, but a prior draw
        rarely fits many dimensions at once, so acceptance falls with ``D``. ``"data"``:
        each new value from its conditional posterior given the row and the features
        proposed before it (Gaussian, positive truncated Gaussian or Bernoulli per
        dimension; Doshi-Velez 2009, sec. 3.1, "some intelligent proposal distribution"); the ratio
        then also holds ``G_0(a) / q(a)`` of the new values over that of the replaced ones.
        Both are exact; ``"data"`` mixes far faster on images.
    proposal_rate : float or None, default=None
        Rate of the Poisson that proposes the number of new features. None uses the
        prior's ``alpha / N`` (Görür's (2007) choice, under which the ratio holds no count
        term); with many rows that proposes a new feature once in ``N / alpha`` rows, so a
        larger rate (say 0.5) lets a chain start from no features within a few sweeps.
        The ratio then holds ``(alpha / N / proposal_rate)^(K_new - K_unique)``: exact
        at any rate.

    Attributes
    ----------
    name : str
        ``"metropolis"``.
    exact : bool
        True.
    """

    name = "metropolis"
    exact = True

    _parameter_constraints: dict = {
        "k_max": [Interval(Integral, 1, None, closed="left")],
        "proposal": [StrOptions(set(_PROPOSALS))],
        "proposal_rate": [Interval(Real, 0.0, None, closed="neither"), None],
    }

    def __init__(self, k_max=6, proposal="prior", proposal_rate=None):
        self.k_max = k_max
        self.proposal = proposal
        self.proposal_rate = proposal_rate

    def _slots_needed(self) -> int:
        return int(self.k_max)

    def _rows(self, start, row_order, state, noise, prior, likelihood, rng):
        st = state.stats
        N = state.X.shape[0]
        K, position = metropolis_rows(
            start, row_order, state.X, state.observed, state.Z, state.A, st["pred"],
            st["counts"], state.n_features, likelihood.observation_kind, noise,
            likelihood.prior_kind, prior, state.alpha / N,
            state.alpha / N if self.proposal_rate is None else float(self.proposal_rate),
            int(self.k_max),
            _PROPOSALS[self.proposal], rng,
        )
        return K, int(position)

#: Old class names (before issue 21), importable with a FutureWarning naming the new one.
__getattr__ = class_aliases(__name__)
