"""Slice sampler for the elimination-by-aspects model with an IBP prior over the aspects
(Görür 2007, sec. 4.5.2).

The model (sec. 4.5.1): ``N`` alternatives with binary aspects ``Z ~ IBP(alpha)``,
aspect weights ``w_k ~ Gamma(1, 1)`` (eq. 4.67), a unique aspect per alternative with its
own ``Gamma(1, 1)`` weight ``u_i`` (the BTL part, fig. 4.14-4.15), choice probabilities
of eq. 4.63 with a lapse ``eps`` and binomial counts of wins (eqs. 4.64-4.65).

One sweep, as in Görür 2007, sec. 4.5.2:

* ``Z`` by slice sampling on the semi-ordered stick-breaking representation (sec. 4.2.6,
  Algorithm 16), with the package's kernels of :mod:`.semi_ordered_slice`: the active
  sticks from ``Beta(m_k, 1 + N - m_k)`` (eq. 4.56), a slice ``s ~ U(0, min_k mu_k)``
  (eq. 4.58), empty aspects with sticks from eq. 4.57 (exact adaptive rejection draws)
  until one falls below the slice, their weights from the ``Gamma(1, 1)`` prior; every
  ``z_ik`` with ``mu_k > s`` by Gibbs (eqs. 4.52, 4.68) with the weights held, the
  aspects in decreasing stick order; empty aspects dropped (back to the IBP
  representation). A flip of ``z_ik`` changes only the ``N - 1`` pairs of alternative
  ``i``; the kernels keep the numerators of eq. 4.63 for every ordered pair and update
  them in place.
* every active weight and every unique weight by Metropolis-Hastings (targeting the
  ``Gamma(a, 1)`` prior, ``a = weight_shape``, 1 in eq. 4.67) with the gamma
  proposal of eq. 4.70, ``w' ~ Gamma(eta, eta / w)`` (mean ``w``, sd ``w / sqrt(eta)``);
  ``eta`` is tuned towards an acceptance rate of 0.5 during the first ``adapt_sweeps``
  sweeps (the burn-in) and then held, as Görür (2007) adjusts it "initially".
* ``alpha`` by Gibbs (:meth:`SliceEBA.sample_alpha`, called by the estimator):
  ``Gamma(1 + K, 1 + H_N)`` under a ``Gamma(1, 1)`` prior.
"""

from __future__ import annotations

import copy
from numbers import Integral, Real

import numpy as np
from scipy.special import gammaln
from sklearn.utils._param_validation import Interval, StrOptions

from ..._deprecation import class_aliases
from ..._memory import check_allocation
from ...likelihoods.choice import check_wins, eba_probabilities
from ...priors.ibp import harmonic_rate, ibp_log_prob, sample_alpha_conditional
from .._protocol import Solver
from ._eba_slice_kernels import (
    WEIGHT_FLOOR,
    fill_advantages,
    ibp_log_prob_packed,
    total_log_likelihood,
    update_aspects,
    update_weights,
    update_weights_from_prior,
)
from ._sticks import extend_empty_sticks

__all__ = ["SliceEBA", "EBAState"]


def _to_stick_breaking(state, K, rng):
    """The change to the stick-breaking representation (Görür 2007, sec. 4.2.6, Algorithm
    16, first step) for the ``K`` active aspects of a chain: their counts, the prediction
    ``pred = Z W``, their sticks ``mu_k ~ Beta(m_k, 1 + N - m_k)`` (eq. 4.56), the slice
    ``s ~ Uniform(0, min(1, min_k mu_k))`` (eq. 4.58), then empty aspects appended by
    :func:`~._sticks.extend_empty_sticks` (in Python) until a stick falls below the
    slice.

    The same draws, in the same order, as the shared numba kernel
    ``_semi_ordered_slice_kernels.to_stick_breaking``, done here in NumPy: a few small
    array operations once per sweep, which spares a cold first fit the compilation of
    that kernel and of its Beta sampler. Returns ``(n_features, level, done)``.
    """
    Z, counts, sticks, pred = state.Z, state.counts, state.sticks, state.pred
    N = Z.shape[0]
    active = Z[:, :K]
    counts[:K] = np.count_nonzero(active, axis=0)
    pred[:, 0] = 0.0
    for k in range(K):  # in the kernel's order: the same sums to the last bit
        pred[active[:, k] != 0, 0] += state.W[k, 0]
    if K:  # one vectorised draw: the same Beta draws, element by element, in order
        m = counts[:K].astype(float)
        sticks[:K] = rng.beta(m, 1.0 + N - m)
    lowest = min(1.0, float(sticks[:K][counts[:K] > 0].min(initial=1.0)))
    u = rng.random()
    while u == 0.0:  # probability 2**-53 per draw
        u = rng.random()
    level = u * lowest
    total, done = extend_empty_sticks(Z, state.W, counts, sticks, K, K, level, state.alpha,
                                      rng)
    return total, level, done

#: The acceptance rate the weight proposals are tuned towards (sec. 4.5.2).
TARGET_ACCEPTANCE = 0.5


class EBAState:
    """The chain of :class:`SliceEBA`: aspects, weights and the pair statistics.

    Attributes
    ----------
    wins : ndarray of shape (N, N)
        ``wins[i, j]``: times ``i`` was chosen over ``j``.
    Z : ndarray of shape (N, capacity), int8
        Aspects; the first ``n_features`` columns are live (all active).
    W : ndarray of shape (capacity, 1)
        Aspect weights (the live ones are ``W[:n_features, 0]``).
    unique : ndarray of shape (N,)
        Weights of the unique aspects (zeros when the model has none).
    adv : ndarray of shape (N, N)
        ``adv[i, j] = u_i + sum_k w_k z_ik (1 - z_jk)`` (the numerator of eq. 4.63).
    n_features : int
    alpha, lapse : float
    weight_shape : float
        Shape ``a`` of the ``Gamma(a, 1)`` prior of every weight (eq. 4.67: 1).
    harmonic : float
        ``H_N``, the rate of ``alpha`` in the IBP prior.
    log_eta : float
        Log of the weight proposal's concentration ``eta`` (eq. 4.70).
    acceptance : float
        Fraction of weight proposals accepted in the last sweep.
    sweeps, adapt_sweeps : int
        Sweeps run, and how many of the first ones tune ``eta``.
    """

    def __init__(self, wins, Z, W, unique, alpha, lapse, unique_aspects, log_eta,
                 adapt_sweeps, weight_shape=1.0):
        N = wins.shape[0]
        self.wins = wins
        self.Z = Z
        self.W = W
        self.unique = unique
        self.unique_aspects = bool(unique_aspects)
        self.n_features = 0
        self.alpha = float(alpha)
        self.lapse = float(lapse)
        self.weight_shape = float(weight_shape)
        self.log_eta = float(log_eta)
        self.acceptance = np.nan
        self.sweeps = 0
        self.adapt_sweeps = int(adapt_sweeps)
        self.adv = np.zeros((N, N))
        cap = Z.shape[1]
        self.counts = np.zeros(cap, dtype=np.int64)
        self.sticks = np.zeros(cap)
        self.pred = np.zeros((N, 1))
        self.harmonic = harmonic_rate(N)  # H_N

    @property
    def X(self) -> np.ndarray:
        """The data of the chain, ``wins`` (the name the sampling loop reads)."""
        return self.wins

    @property
    def active_Z(self) -> np.ndarray:
        """The live aspects, shape (N, n_features)."""
        return self.Z[:, : self.n_features]

    @property
    def weights(self) -> np.ndarray:
        """The live aspect weights, shape (n_features,)."""
        return self.W[: self.n_features, 0]

    def log_likelihood(self) -> float:
        """``log p(X | Z, w, u)`` of the individual comparisons (eq. 4.65 without the
        binomial coefficients)."""
        return float(total_log_likelihood(self.wins, self.adv, self.lapse))


def _grow(state: EBAState, capacity: int) -> None:
    """Give every per-aspect array ``capacity`` slots (keeping the live ones)."""
    old = state.Z.shape[1]
    if capacity <= old:
        return
    N = state.Z.shape[0]
    # Z (int8) and W, counts, sticks (8 bytes each) per slot. The check also bounds the
    # sweep's loop that doubles the capacity until a stick falls below the slice.
    check_allocation(float(N + 24) * capacity,
                     what=f"the sampler's arrays for {capacity} aspect slots",
                     advice="lower alpha")
    Z = np.zeros((N, capacity), dtype=np.int8)
    Z[:, :old] = state.Z
    W = np.zeros((capacity, 1))
    W[:old] = state.W
    counts = np.zeros(capacity, dtype=np.int64)
    counts[:old] = state.counts
    sticks = np.zeros(capacity)
    sticks[:old] = state.sticks
    state.Z, state.W, state.counts, state.sticks = Z, W, counts, sticks


def _sort_by_sticks(state: EBAState, K: int) -> None:
    """Put the ``K`` represented aspects in decreasing stick order, ties in index order
    (the stick-breaking representation of Görür 2007, Algorithm 16), so the row updates
    visit them in an order that depends on the sticks only. NumPy from Python, once per
    sweep: the same permutation as the package's insertion-sort kernel, without its
    compilation in a first fit."""
    order = np.argsort(-state.sticks[:K], kind="stable")
    state.Z[:, :K] = state.Z[:, order]
    state.W[:K] = state.W[order]
    state.counts[:K] = state.counts[order]
    state.sticks[:K] = state.sticks[order]


def _drop_empty(state: EBAState, K: int) -> int:
    """The change back to the IBP representation: the active aspects (``counts > 0``)
    among the first ``K`` moved to the front in order, the freed slots of ``Z``, ``W`` and
    ``counts`` zeroed (``sticks`` beyond the active ones left as they are). Returns the
    number of active aspects."""
    live = state.counts[:K] > 0
    n_live = int(np.count_nonzero(live))
    state.sticks[:n_live] = state.sticks[:K][live]
    state.Z[:, :n_live] = state.Z[:, :K][:, live]
    state.Z[:, n_live:K] = 0
    state.W[:n_live] = state.W[:K][live]
    state.W[n_live:K] = 0.0
    state.counts[:n_live] = state.counts[:K][live]
    state.counts[n_live:K] = 0
    return n_live


class SliceEBA(Solver):
    """Slice sampler for the infinite elimination-by-aspects model (Görür 2007, sec. 4.5.2).

    ``Z`` by the semi-ordered stick-breaking slice sampler (Algorithm 16), the weights by
    Metropolis-Hastings with gamma proposals (eq. 4.70), ``alpha`` by Gibbs; see the
    module docstring.

    Parameters
    ----------
    capacity : int, default=16
        Aspect slots allocated at the start; doubled whenever more are needed (no
        truncation).
    eta : float, default=10.0
        Starting concentration of the weight proposal ``Gamma(eta, eta / w)`` (its
        coefficient of variation is ``1 / sqrt(eta)``).
    adapt : bool, default=True
        Tune ``eta`` towards an acceptance rate of 0.5 during the burn-in (the
        estimator's ``burn_in`` sweeps); afterwards it is fixed, so the kept samples come
        from a homogeneous chain.
    weight_steps : int, default=1
        Metropolis-Hastings updates of every weight per sweep.
    prior_steps : int or "auto", default="auto"
        Extra independence Metropolis-Hastings updates of every weight per sweep that
        propose from the weight prior (accepted with the likelihood ratio). "auto": one
        when the weight prior's shape is below 1 (``InfiniteEBA(weight_shape < 1)``,
        whose weights span orders of magnitude that the multiplicative proposal crosses
        slowly), none for Görür's (2007) ``Gamma(1, 1)``. Not counted in ``acceptance``.
    n_starts : int, default=4
        Starting states a chain draws from the prior; each runs ``start_sweeps`` sweeps
        and the chain continues from the one with the highest log joint probability
        (:meth:`select_start`). Single starts got stuck now and then in a poor mode
        (two alternatives that the data separate 100 to 0 given equal aspects, for
        example); see the user guide, "Several starts". 1 is Görür's (2007) single start.
    start_sweeps : int, default=50
        Sweeps each of the ``n_starts`` starts runs before they are compared (not part
        of the chain's ``n_iter``; unused when ``n_starts=1``).
    """

    model = "eba"
    name = "slice"

    _parameter_constraints: dict = {
        "capacity": [Interval(Integral, 1, None, closed="left")],
        "eta": [Interval(Real, 0, None, closed="neither")],
        "adapt": ["boolean"],
        "weight_steps": [Interval(Integral, 1, None, closed="left")],
        "prior_steps": [Interval(Integral, 0, None, closed="left"), StrOptions({"auto"})],
        "n_starts": [Interval(Integral, 1, None, closed="left")],
        "start_sweeps": [Interval(Integral, 0, None, closed="left")],
    }

    def __init__(self, capacity=16, eta=10.0, adapt=True, weight_steps=1,
                 prior_steps="auto", n_starts=4, start_sweeps=50):
        self.capacity = capacity
        self.eta = eta
        self.adapt = adapt
        self.weight_steps = weight_steps
        self.prior_steps = prior_steps
        self.n_starts = n_starts
        self.start_sweeps = start_sweeps

    def initialize(self, wins, Z, weights, unique_weights, alpha, lapse, adapt_sweeps=0,
                   unique_aspects=True, weight_shape=1.0) -> EBAState:
        """A chain from aspects ``Z`` (N, K) and their ``weights`` (K,), with unique
        weights ``unique_weights`` (N,) (ignored without ``unique_aspects``). Empty
        columns of ``Z`` are dropped; inputs are not modified.

        Parameters
        ----------
        wins : array-like of shape (N, N)
        Z : array-like of shape (N, K)
        weights : array-like of shape (K,)
        unique_weights : array-like of shape (N,)
        alpha : float
        lapse : float
        adapt_sweeps : int, default=0
            The first sweeps tune ``eta`` (when ``adapt``).
        unique_aspects : bool, default=True
            Whether every alternative has a unique aspect.
        weight_shape : float, default=1.0
            Shape ``a`` of the ``Gamma(a, 1)`` prior of the aspect and unique weights
            (eq. 4.67 is ``a = 1``).

        Returns
        -------
        EBAState
        """
        self._validate_params()
        if not (np.isfinite(weight_shape) and weight_shape > 0):
            raise ValueError(f"weight_shape must be positive, got {weight_shape!r}.")
        wins = check_wins(wins)
        N = wins.shape[0]
        Z = np.asarray(Z)
        if Z.ndim != 2 or Z.shape[0] != N:
            raise ValueError(f"Z must have shape ({N}, n_aspects), got {Z.shape}.")
        weights = np.asarray(weights, dtype=np.float64).reshape(-1)
        if weights.shape[0] != Z.shape[1]:
            raise ValueError(f"weights must have one entry per column of Z ({Z.shape[1]}),"
                             f" got {weights.shape[0]}.")
        if np.any(~(weights > 0)) or not np.all(np.isfinite(weights)):
            raise ValueError("weights must be positive and finite.")
        keep = np.flatnonzero((Z != 0).any(axis=0))
        K = keep.size
        cap = max(int(self.capacity), K + 1)
        Z_state = np.zeros((N, cap), dtype=np.int8)
        Z_state[:, :K] = Z[:, keep] != 0
        W = np.zeros((cap, 1))
        W[:K, 0] = weights[keep]
        if unique_aspects:
            unique = np.array(unique_weights, dtype=np.float64).reshape(-1)
            if unique.shape[0] != N or np.any(~(unique > 0)) or not np.all(
                    np.isfinite(unique)):
                raise ValueError(f"unique_weights must be {N} positive finite weights.")
        else:
            unique = np.zeros(N)
        state = EBAState(wins, Z_state, W, unique, alpha, lapse, unique_aspects,
                         np.log(self.eta), adapt_sweeps if self.adapt else 0,
                         weight_shape)
        state.n_features = K
        state.counts[:K] = Z_state[:, :K].sum(axis=0)
        fill_advantages(state.Z, state.W, state.unique, K, state.adv)
        return state

    def select_start(self, starts, rng, sample_alpha=True) -> EBAState:
        """The start a chain continues from: the best of several short runs.

        Each state of ``starts`` (from :meth:`initialize`) runs ``start_sweeps`` sweeps
        (with ``alpha`` resampled when ``sample_alpha``), in order, on the stream
        ``rng``; the one with the highest log joint probability afterwards is returned,
        its sweep count reset so that the tuning of ``eta`` spans the whole burn-in. The
        choice concerns the start only: the chain that follows is the same Markov chain,
        so the posterior it samples does not change. With one start, that start is
        returned as it is.
        """
        starts = list(starts)
        if len(starts) == 1:
            return starts[0]
        best, best_log_joint = None, -np.inf
        for state in starts:
            for _ in range(int(self.start_sweeps)):
                self.sweep(state, rng)
                if sample_alpha:
                    self.sample_alpha(state, rng)
            log_joint = self.log_joint(state)
            if best is None or log_joint > best_log_joint:
                best, best_log_joint = state, log_joint
        best.sweeps = 0
        return best

    def set_data(self, state: EBAState, wins) -> None:
        """Replace the win counts of a chain (``warm_start`` on new comparisons of the
        same alternatives)."""
        wins = check_wins(wins)
        if wins.shape != state.wins.shape:
            raise ValueError(f"wins must keep the shape {state.wins.shape}, got "
                             f"{wins.shape}.")
        state.wins = wins

    def sweep(self, state: EBAState, rng) -> None:
        """One sweep: ``Z`` by the semi-ordered slice sampler, then the weights."""
        K = state.n_features
        if K + 1 > state.Z.shape[1]:
            _grow(state, 2 * state.Z.shape[1])
        total, level, done = _to_stick_breaking(state, K, rng)
        while not done:
            _grow(state, 2 * state.Z.shape[1])
            total, done = extend_empty_sticks(state.Z, state.W, state.counts, state.sticks,
                                              total, K, level, state.alpha, rng)
        if state.weight_shape != 1.0:
            # extend_empty_sticks gave the new empty aspects Exponential(1)
            # weights; under a Gamma(a, 1) prior they are drawn again from it (they are
            # independent of the sticks, so this is the same draw from the right prior).
            # A draw below WEIGHT_FLOOR (an underflow, often exactly 0 for a small shape)
            # is raised to it, as the starting weights are: 0 is outside the support.
            state.W[K:total, 0] = np.maximum(
                rng.gamma(state.weight_shape, 1.0, total - K), WEIGHT_FLOOR)
        _sort_by_sticks(state, total)
        update_aspects(state.wins, state.Z, state.W, state.unique, state.adv, state.counts,
                       state.sticks, total, level, state.lapse, rng)
        K = _drop_empty(state, total)
        state.n_features = int(K)
        eta = float(np.exp(state.log_eta))
        accepted = 0
        for _ in range(self.weight_steps):
            accepted += update_weights(state.wins, state.Z, state.W, state.unique, state.adv,
                                       state.n_features, state.lapse, eta,
                                       state.unique_aspects, rng, state.weight_shape)
        proposals = self.weight_steps * (K + (state.wins.shape[0] if state.unique_aspects
                                              else 0))
        state.acceptance = accepted / proposals if proposals else np.nan
        prior_steps = self.prior_steps
        if prior_steps == "auto":
            prior_steps = 1 if state.weight_shape < 1.0 else 0
        for _ in range(prior_steps):
            update_weights_from_prior(state.wins, state.Z, state.W, state.unique,
                                      state.adv, state.n_features, state.lapse,
                                      state.unique_aspects, state.weight_shape, rng)
        if state.sweeps < state.adapt_sweeps and proposals:
            # Robbins-Monro on log eta: too few acceptances -> smaller steps (larger eta).
            step = 1.0 / np.sqrt(state.sweeps + 1.0)
            state.log_eta = float(np.clip(
                state.log_eta - step * (state.acceptance - TARGET_ACCEPTANCE), -5.0, 12.0))
        state.sweeps += 1

    def sample_alpha(self, state: EBAState, rng, prior=(1.0, 1.0)) -> None:
        """``alpha ~ Gamma(shape + K, rate + H_N)`` given the ``K`` active aspects of the
        ``N`` alternatives (sec. 4.5.2's Gibbs step; the sticks are integrated out as in
        :meth:`SemiOrderedSliceIBP.sample_alpha
        <sklearn_ibp.solvers.SemiOrderedSliceIBP.sample_alpha>`)."""
        shape, rate = prior
        state.alpha = sample_alpha_conditional(state.n_features, state.harmonic, rng,
                                               prior_shape=shape, prior_rate=rate)

    def update_state(self, state: EBAState, rng, *, sample_hyperparameters=True,
                     missing=None) -> None:
        """With ``sample_hyperparameters`` (the estimator's ``sample_alpha``), ``alpha``
        from its conditional (:meth:`sample_alpha`); ``missing`` is not used."""
        if sample_hyperparameters:
            self.sample_alpha(state, rng)

    def log_likelihood(self, state: EBAState) -> float:
        """``log p(X | Z, w, u)`` of the individual comparisons (eq. 4.65 without the
        binomial coefficients)."""
        return state.log_likelihood()

    def trace_names(self) -> tuple:
        # n_features second, as for every solver: the progress bar shows it as "K".
        return ("log_joint", "n_features", "log_likelihood", "alpha", "acceptance", "eta")

    def trace_values(self, state: EBAState, log_joint) -> tuple:
        return (log_joint, state.n_features, state.log_likelihood(), state.alpha,
                state.acceptance, float(np.exp(state.log_eta)))

    def snapshot(self, state: EBAState, chain=0) -> dict:
        """The live ``Z``, the weights of the aspects and of the unique aspects, the
        choice probabilities they give (eq. 4.65) and ``alpha``."""
        Z = state.active_Z.copy()
        weights = state.weights.copy()
        unique = state.unique.copy()
        return {
            "Z": Z,
            "weights": weights,
            "unique_weights": unique,
            "probabilities": eba_probabilities(Z, weights, unique, state.lapse),
            "alpha": state.alpha,
        }

    def log_joint(self, state: EBAState) -> float:
        """``log p(X | Z, w, u) + log P([Z] | alpha) + log p(w) + log p(u)``."""
        weights = state.weights
        if state.unique_aspects:
            weights = np.concatenate([weights, state.unique])
        a = state.weight_shape
        log_prior_w = -float(np.sum(weights))
        if a != 1.0:
            log_prior_w += float((a - 1.0) * np.sum(np.log(weights))
                                 - weights.size * gammaln(a))
        if state.Z.shape[0] <= 62:
            log_prior_z = ibp_log_prob_packed(state.Z, state.n_features, state.alpha,
                                              state.harmonic)
        else:
            log_prior_z = ibp_log_prob(state.active_Z, state.alpha)
        return self.log_likelihood(state) + float(log_prior_z) + log_prior_w

    @staticmethod
    def checkpoint(state: EBAState) -> EBAState:
        """A copy of the state for the interrupt rollback (the data are shared)."""
        new = copy.copy(state)
        for name in ("Z", "W", "unique", "adv", "counts", "sticks", "pred"):
            setattr(new, name, getattr(state, name).copy())
        return new


#: Old class names (before issue 21), importable with a FutureWarning naming the new one.
__getattr__ = class_aliases(__name__)
