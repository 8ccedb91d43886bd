"""Slice sampling for the semi-ordered stick-breaking IBP (Görür 2007, sec. 4.2.6,
Algorithm 16).

The semi-ordered representation keeps the active features unordered, each with its stick
``mu_k ~ Beta(m_k, 1 + N - m_k)`` (eq. 4.56), and only the empty features in decreasing
stick order (eq. 4.57). Between sweeps the chain holds the IBP representation (``Z`` and
``A`` of the active features). One sweep:

* change to the stick-breaking representation: active sticks from eq. 4.56, a slice
  ``s ~ Uniform(0, min(1, min_k mu_k))`` (eq. 4.58), empty sticks from eq. 4.57 (a unit
  stick broken until it falls below the slice) with feature values from their prior;
* update every ``z_nk`` with ``mu_k > s`` (eq. 4.52), row by row, the features in
  decreasing stick order: Gibbs for features other rows have, Metropolis-Hastings jointly
  with ``a_k`` (proposed from the row's residual) for the others;
* change back to the IBP representation: drop the sticks and the empty features;
* (``unique_moves``, the default) in every row, the Metropolis-Hastings birth and death
  of the row's unique features of Algorithm 13 (eq. 4.40), sticks integrated out;
* draw ``A`` given ``Z`` with the likelihood's own update.

Without the ordering constraint of Algorithm 15 a feature is never held in place by the
features around it. Görür (2007, sec. 4.3, fig. 4.7) found the sampler mixing K about as
fast as conjugate Gibbs. Here Algorithm 16 alone did not: in the mixing test of that
setting (``tests/solvers/test_mixing.py``: 100 points, D = 1, 2, 3, alpha 1 and 2) the
integrated autocorrelation time of K was 3.4-4.1 times collapsed Gibbs's and about the
same as Algorithm 15's, because a single slice per sweep rarely reaches down to the
sticks of new features. With the per-row move it is 1.2-1.7 times collapsed Gibbs's and
0.4-0.6 times Algorithm 15's (geometric means over 12 data sets, three batches).

The real-weighted model (Görür 2007, sec. 4.4, eq. 4.62; the likelihood
:class:`~sklearn_ibp.likelihoods.real_weighted.RealWeightedGaussian`, detected by its
``weights`` attribute) is the model Görür (2007) runs this sampler on. Its chain also holds
the weights ``W = Z ⊙ Y`` in ``state.stats["Y"]`` (n_samples, capacity; 0 wherever
``z_nk = 0``; :func:`active_weights` gives the live columns), kept in step with ``Z``
through every change of capacity, sort and removal of features. A sweep then:

* updates each ``z_nk`` above the slice with ``y_nk`` integrated out (the residual is
  ``N(0, sigma_x^2 I + a_k a_k^T)`` when the feature is on) and draws ``y_nk`` from its
  Gaussian conditional, for features other rows have; a feature of the row alone is
  switched with ``(y_nk, a_k)`` by Metropolis-Hastings, ``y`` proposed from its prior and
  ``a_k`` from ``p(a_k | y, residual)``;
* draws every row's weights jointly given ``z_n`` and ``A`` (a ``K_n``-dimensional
  Gaussian regression), then ``A`` given ``W`` (the linear-Gaussian conditional with ``W``
  as the design).

:meth:`SemiOrderedSliceIBP.sample_parameters` and :meth:`~SemiOrderedSliceIBP.
log_joint` use ``W`` as the design for this likelihood.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from ..._deprecation import class_aliases
from ...likelihoods._real_weighted_kernels import draw_row_weights
from ...priors.ibp import harmonic_rate, ibp_log_prob, sample_alpha_conditional
from .._feature_proposal_kernels import PROPOSALS as _UNIQUE_PROPOSALS
from ._explicit_base import (
    EXPLICIT_LIKELIHOODS,
    ExplicitFeatureSolver,
    ExplicitFeatureState,
    check_explicit_likelihood,
    drop_empty_features,
    grow,
    new_explicit_state,
)
from ._metropolis_kernels import compact_features
from ._semi_ordered_slice_kernels import (
    to_stick_breaking,
    to_stick_breaking_weighted,
    unique_feature_rows,
    update_rows_and_drop_empty,
    update_weighted_rows_and_drop_empty,
)
from ._slice_kernels import extend_sticks
from .slice import check_prior, check_slice_inputs, initial_features

__all__ = ["SemiOrderedSliceIBP", "active_weights"]

#: Likelihood names served beyond the explicit-feature ones: the real-weighted model.
WEIGHTED_LIKELIHOODS = ("gaussian_weights",)

#: Largest number of new unique features one proposal holds (exact at any value: the
#: truncation of the Poisson cancels in the Metropolis-Hastings ratio).
_UNIQUE_K_MAX = 6


def _is_weighted(likelihood) -> bool:
    """Whether ``likelihood`` is the real-weighted model (Görür 2007, eq. 4.62)."""
    return getattr(likelihood, "weights", None) == "gaussian"


def active_weights(state: ExplicitFeatureState) -> np.ndarray:
    """The weights ``W = Z ⊙ Y`` of the live features of a real-weighted chain, shape
    (n_samples, n_features) (a view of ``state.stats["Y"]``)."""
    return state.stats["Y"][:, : state.n_features]


def _fit_weights(state: ExplicitFeatureState) -> None:
    """Give ``state.stats["Y"]`` the capacity of ``state.Z`` (its columns beyond the
    live ones are 0, so the old array is copied whole)."""
    old = state.stats["Y"]
    cap = state.Z.shape[1]
    if old.shape[1] < cap:
        new = np.zeros((old.shape[0], cap))
        new[:, : old.shape[1]] = old
        state.stats["Y"] = new


def _drop_empty_weighted(state: ExplicitFeatureState) -> None:
    """:func:`drop_empty_features` with the columns of ``W`` moved alongside."""
    K = state.n_features
    keep = drop_empty_features(state)
    if keep.size < K:
        W = state.stats["Y"]
        k = keep.size
        W[:, :k] = W[:, keep]
        W[:, k:K] = 0.0


def _fit_stats(state: ExplicitFeatureState) -> None:
    """Give the per-feature scratch arrays the capacity of ``state.Z``."""
    st = state.stats
    cap = state.Z.shape[1]
    for key, dtype in (("feature_counts", np.int64), ("sticks", np.float64)):
        old = st.get(key)
        if old is None or old.shape[0] < cap:
            new = np.zeros(cap, dtype=dtype)
            if old is not None:
                new[: old.shape[0]] = old
            st[key] = new


class SemiOrderedSliceIBP(ExplicitFeatureSolver):
    """Slice sampler on the semi-ordered stick-breaking IBP (Görür 2007, sec. 4.2.6,
    Algorithm 16).

    Exact for any explicit-feature likelihood (``"gaussian"``, ``"exponential"``,
    ``"detection"``, ``"noisy_or"``):
    each sweep changes to the stick-breaking representation (active
    sticks from their Beta posterior, empty sticks by exact adaptive rejection draws,
    values of empty features from their prior), updates ``Z`` above a slice (switching a
    feature on for a row alone with values proposed from that row's residual, accepted by
    Metropolis-Hastings) and changes back. Between sweeps the state is ``Z`` and ``A`` of
    the active features only.

    One slice per sweep starves the births of new features: they are represented only
    when the slice falls below the sticks of the empty features, which are of order
    ``1 / N``, and once every active feature is shared the slice is mostly far above
    them (from ``Z = 0`` a chain on 100 rows could wait a thousand sweeps for its first
    feature). So by default each sweep ends, before ``A`` is redrawn, with the
    birth-and-death move of Algorithm 13 (Görür 2007, eq. 4.40) in every row: the row's
    unique features are proposed to be replaced by ``Poisson(alpha / N)`` new ones. The
    move acts on the IBP representation, with the sticks integrated out; the sticks are
    redrawn from their conditional given ``Z`` at the start of every sweep, so the
    chain still targets the exact posterior. ``unique_moves=None`` runs Algorithm 16
    alone. The real-weighted model runs Algorithm 16 alone (the move has no weights).

    Parameters
    ----------
    capacity : int, default=32
        Feature slots allocated at the start; doubled whenever more are needed (this is
        no truncation).
    unique_moves : {"data", "prior"} or None, default="data"
        The per-row birth-and-death move of the unique features after the slice updates
        (see above), with the new features' values proposed from their conditional given
        the row (``"data"``) or from their prior (``"prior"``, Görür's (2007) Algorithm 13),
        or no such move (None: Algorithm 16 as Görür (2007) gives it).
    """

    name = "semi_ordered_slice"
    likelihoods = EXPLICIT_LIKELIHOODS + WEIGHTED_LIKELIHOODS
    exact = True

    _parameter_constraints: dict = {
        "capacity": [Interval(Integral, 1, None, closed="left")],
        "unique_moves": [StrOptions(set(_UNIQUE_PROPOSALS)), None],
    }

    def __init__(self, capacity=32, unique_moves="data"):
        self.capacity = capacity
        self.unique_moves = unique_moves

    def initialize(self, X, observed, Z, A, alpha, params, likelihood, rng, Y=None
                   ) -> ExplicitFeatureState:
        """A chain from ``Z`` (n_samples, K) and ``A`` (K, n_dims), or ``A=None`` to draw it
        given ``Z``. Empty columns are dropped; inputs are not modified.

        For the real-weighted likelihood, ``Y`` (n_samples, K) gives the starting weights
        (only the entries with ``z_nk = 1`` are used); ``Y=None`` draws them from
        ``p(W | X, Z, A)``. ``A=None`` draws ``A`` given ``Z`` as the design (weights 1),
        before the weights. Other likelihoods ignore ``Y``."""
        self._validate_params()
        check_explicit_likelihood(self, likelihood)
        X, observed, alpha = check_slice_inputs(X, observed, alpha)
        likelihood.check_data(X, observed)
        weighted = _is_weighted(likelihood)
        if weighted and Y is not None:
            Y = np.asarray(Y, dtype=np.float64)
            Z_in = np.asarray(Z)
            if Z_in.ndim != 2 or Y.shape != Z_in.shape:
                raise ValueError(f"Y must have the shape of Z {Z_in.shape}, got {Y.shape}.")
            if not np.all(np.isfinite(Y[Z_in != 0])):
                raise ValueError("Y must be finite where Z is 1.")
            Y = Y[:, np.flatnonzero((Z_in != 0).any(axis=0))]
        Z, A = initial_features(X, observed, Z, A, params, likelihood, rng)
        state = new_explicit_state(X, observed, Z, A, alpha, params,
                                   max(int(self.capacity), Z.shape[1] + 1))
        state.stats["pred"] = np.zeros(X.shape)
        _fit_stats(state)
        if weighted:
            if Y is None:
                W = likelihood.sample_weights(X, observed, Z, A, params, rng)
            else:
                W = np.where(Z, Y, 0.0)
            state.stats["Y"] = np.zeros((X.shape[0], state.Z.shape[1]))
            state.stats["Y"][:, : Z.shape[1]] = W
        return state

    def snapshot(self, state: ExplicitFeatureState, likelihood, chain=0) -> dict:
        """The explicit-feature snapshot, with the weights ``W`` of the real-weighted
        model."""
        sample = super().snapshot(state, likelihood, chain=chain)
        if _is_weighted(likelihood):
            sample["W"] = active_weights(state).copy()
        return sample

    def sweep(self, state: ExplicitFeatureState, likelihood, rng) -> None:
        """One sweep of Algorithm 16 (module docstring)."""
        if _is_weighted(likelihood):
            self._sweep_weighted(state, likelihood, rng)
            return
        if state.n_features and not state.active_Z.any(axis=0).all():
            drop_empty_features(state)
        _fit_stats(state)
        st = state.stats
        X, observed, params = state.X, state.observed, state.params
        N, D = X.shape
        alpha = float(state.alpha)
        K = state.n_features
        prior_kind, prior = likelihood.prior_kind, likelihood.prior_array(params)
        total, level, done = to_stick_breaking(
            state.Z, state.A, st["pred"], st["feature_counts"], st["sticks"], K, alpha,
            prior_kind, prior, rng,
        )
        while not done:
            state.n_features = int(total)
            grow(state, 2 * state.Z.shape[1])
            _fit_stats(state)
            total, done = extend_sticks(state.Z, state.A, st["feature_counts"], st["sticks"],
                                        total, K, level, alpha, prior_kind, prior, rng)
        noise = likelihood.noise_array(params, D)
        K = update_rows_and_drop_empty(
            X, observed, state.Z, state.A, st["pred"], st["feature_counts"], st["sticks"],
            total, level, likelihood.observation_kind, noise, prior_kind, prior, rng,
        )
        state.n_features = int(K)
        if self.unique_moves is not None:
            self._unique_moves(state, likelihood, noise, prior, rng)
            K = state.n_features
        if K:
            state.A[:K] = likelihood.sample_features(X, observed, state.Z[:, :K],
                                                     state.A[:K], params, rng)

    def _unique_moves(self, state: ExplicitFeatureState, likelihood, noise, prior, rng
                      ) -> None:
        """The birth-and-death move of every row's unique features (class docstring), on
        the state the slice updates leave: ``pred = Z A`` and the counts current."""
        st = state.stats
        N = state.X.shape[0]
        row_order = st.get("row_order")
        if row_order is None or row_order.shape[0] != N:
            row_order = st["row_order"] = np.empty(N, dtype=np.int64)
        position, K = 0, state.n_features
        while True:
            K, position = unique_feature_rows(
                position, row_order, state.X, state.observed, state.Z, state.A, st["pred"],
                st["feature_counts"], K, likelihood.observation_kind, noise,
                likelihood.prior_kind, prior, state.alpha / N, _UNIQUE_K_MAX,
                _UNIQUE_PROPOSALS[self.unique_moves], rng,
            )
            state.n_features = int(K)
            if position >= N:
                return
            # Out of slots: compact the dead ones, grow, and go on from the same row.
            state.n_features = int(compact_features(state.Z, state.A, st["feature_counts"],
                                                    state.n_features))
            grow(state, 2 * state.Z.shape[1] + _UNIQUE_K_MAX)
            _fit_stats(state)
            K = state.n_features

    def _sweep_weighted(self, state: ExplicitFeatureState, likelihood, rng) -> None:
        """One sweep of Algorithm 16 on the real-weighted model (module docstring)."""
        if "Y" not in state.stats:
            raise ValueError("state has no weights: initialize it with the real-weighted "
                             "likelihood.")
        if state.n_features and not state.active_Z.any(axis=0).all():
            _drop_empty_weighted(state)
        _fit_stats(state)
        _fit_weights(state)
        st = state.stats
        X, observed, params = state.X, state.observed, state.params
        D = X.shape[1]
        alpha = float(state.alpha)
        K = state.n_features
        prior_kind, prior = likelihood.prior_kind, likelihood.prior_array(params)
        total, level, done = to_stick_breaking_weighted(
            state.Z, st["Y"], state.A, st["pred"], st["feature_counts"], st["sticks"], K,
            alpha, prior_kind, prior, rng,
        )
        while not done:
            state.n_features = int(total)
            grow(state, 2 * state.Z.shape[1])
            _fit_stats(state)
            _fit_weights(state)
            total, done = extend_sticks(state.Z, state.A, st["feature_counts"], st["sticks"],
                                        total, K, level, alpha, prior_kind, prior, rng)
        noise = likelihood.noise_array(params, D)
        K = update_weighted_rows_and_drop_empty(
            X, observed, state.Z, st["Y"], state.A, st["pred"], st["feature_counts"],
            st["sticks"], total, level, noise, prior, rng,
        )
        state.n_features = int(K)
        if K:
            draw_row_weights(X, observed, state.Z, state.A, st["Y"], K, noise, rng)
            state.A[:K] = likelihood.sample_features(X, observed, st["Y"][:, :K],
                                                     state.A[:K], params, rng)

    def sample_parameters(self, state: ExplicitFeatureState, likelihood, rng) -> None:
        """The likelihood's parameters from their conditionals given the state (the
        likelihood's ``sample_parameters``), with ``W`` as the design for the
        real-weighted model and ``Z`` otherwise."""
        design = active_weights(state) if _is_weighted(likelihood) else state.active_Z
        state.params = likelihood.sample_parameters(state.X, state.observed, design,
                                                    state.active_A, state.params, rng)

    def log_joint(self, state: ExplicitFeatureState, likelihood) -> float:
        """``log p(X, [Z], A | alpha, params)``; for the real-weighted model
        ``log p(X, [Z], Y_on, A)`` with the weights of the present features ``Y_on``."""
        if not _is_weighted(likelihood):
            return super().log_joint(state, likelihood)
        Z, A, W = state.active_Z, state.active_A, active_weights(state)
        return (
            likelihood.log_likelihood(state.X, state.observed, W, A, state.params)
            + likelihood.log_prior_features(A, state.params)
            + likelihood.log_prior_weights(W, Z)
            + ibp_log_prob(Z, state.alpha)
        )

    def sample_alpha(self, state: ExplicitFeatureState, rng, prior=(1.0, 1.0)) -> None:
        """``alpha`` given the semi-ordered state under a ``Gamma(shape, rate)`` prior.

        Between sweeps the chain instantiates the ``K`` active features and no sticks: the
        active sticks' posterior ``Beta(m_k, 1 + N - m_k)`` (eq. 4.56) does not involve
        ``alpha``, and the empty sticks are a Poisson process of intensity
        ``alpha mu^-1 (1 - mu)^N`` (eq. 4.57) that is redrawn every sweep, so it is
        integrated out: ``p(Z | alpha) ∝ alpha^K exp(-alpha H_N)`` and
        ``alpha ~ Gamma(shape + K, rate + H_N)``.
        """
        shape, rate = check_prior(prior)
        K = int(np.count_nonzero(state.active_Z.any(axis=0)))
        state.alpha = sample_alpha_conditional(K, harmonic_rate(state.X.shape[0]), rng,
                                               prior_shape=shape, prior_rate=rate)

#: Old class names (before issue 21), importable with a FutureWarning naming the new one.
__getattr__ = class_aliases(__name__)
