"""Slice sampling for the stick-breaking IBP (Görür 2007, sec. 4.2.5, Algorithm 15).

The stick-breaking construction orders the feature probabilities ``1 > mu_1 > mu_2 > ...``
(eq. 4.15, appendix A.1). A slice variable ``s ~ Uniform(0, mu*)``, with ``mu*`` the stick
of the last active feature (eqs. 4.46-4.47), leaves only the finitely many features with
``mu_k > s`` free to change, so the sampler works on the untruncated model with an adaptive
truncation and never integrates ``A`` out: it serves any explicit-feature likelihood.

One sweep (Algorithm 15):

* for each row: draw a slice; break the stick until it falls below it, each new stick from
  eq. 4.51 (``mu^{alpha-1} (1-mu)^N exp(alpha sum_i (1-mu)^i / i)`` on ``[0, mu_prev]``:
  the prior given that every later column is empty, eq. 4.29) and each new feature value
  from its prior; then update ``z_nk`` for the features above the slice (eq. 4.52): Gibbs
  for features other rows have, Metropolis-Hastings jointly with ``a_k`` (proposed from
  the row's residual) for the others (see ``_slice_kernels.update_row_features``);
* drop the empty features after the last active one (marginalising them out);
* draw each stick from its conditional (eq. 4.53; the last one from eq. 4.51 times its
  column's likelihood) by adaptive rejection sampling;
* draw ``A`` given ``Z`` with the likelihood's own update (the prior for empty features).
"""

from __future__ import annotations

import math
from numbers import Integral

import numpy as np
from sklearn.utils._param_validation import Interval

from ..._deprecation import class_aliases
from ...priors.ibp import sample_alpha_conditional
from ._explicit_base import (
    EXPLICIT_LIKELIHOODS,
    ExplicitFeatureSolver,
    ExplicitFeatureState,
    check_explicit_inputs,
    check_explicit_likelihood,
    check_feature_capacity,
    check_start_features,
    grow,
    new_explicit_state,
)
from ._slice_kernels import extend_sticks, sweep_ordered

__all__ = ["SliceIBP", "stick_tail_rate"]


def stick_tail_rate(last_stick: float, n_samples: int) -> float:
    """``sum_{i<=N} (1 - (1 - mu)^i) / i - log mu``: minus the coefficient of ``alpha`` in
    the log probability of sticks ending at ``mu`` with every later column of ``Z`` empty.

    The sticks' prior is ``alpha^K mu_K^alpha prod_k mu_k^-1`` (eq. 4.42) and the later
    columns are empty with probability ``exp(-alpha H_N + alpha sum_i (1 - mu_K)^i / i)``
    (eq. 4.29), so ``alpha`` enters as ``alpha^K exp(-alpha * stick_tail_rate(mu_K, N))``.
    The rate is ``H_N`` at ``mu = 1`` (no sticks) and positive below.
    """
    mu = float(last_stick)
    i = np.arange(1, int(n_samples) + 1, dtype=np.float64)
    return float(np.sum(-np.expm1(i * np.log1p(-mu)) / i) - math.log(mu)) if mu < 1.0 \
        else float(np.sum(1.0 / i))


def check_slice_inputs(X, observed, alpha):
    """The checks of the slice samplers' ``initialize`` (:func:`check_explicit_inputs`):
    ``(X, observed, alpha)`` with ``alpha`` a float and ``X``, ``observed`` C-contiguous
    float64 and uint8 arrays. Read-only inputs are copied: the kernels then see one array
    type (one cached compilation) and the state never aliases the caller's arrays."""
    X, observed, _ = check_explicit_inputs(X, observed, alpha)
    observed = np.ascontiguousarray(observed, dtype=np.uint8)
    if not X.flags.writeable:
        X = X.copy()
    if not observed.flags.writeable:
        observed = observed.copy()
    return X, observed, float(alpha)


def check_prior(prior) -> tuple[float, float]:
    """``(shape, rate)`` of a Gamma prior, both positive and finite."""
    shape, rate = (float(v) for v in prior)
    if not (np.isfinite(shape) and np.isfinite(rate) and shape > 0.0 and rate > 0.0):
        raise ValueError(f"prior must be (shape, rate) with both positive, got {prior!r}.")
    return shape, rate


def initial_features(X, observed, Z, A, params, likelihood, rng):
    """The non-empty columns of ``Z`` (bool, (N, K)) and their rows of ``A`` (float64
    copies). ``A=None`` draws ``A`` given ``Z`` (prior draw, then the likelihood's update).
    Inputs are not modified."""
    N, D = X.shape
    Z = np.asarray(Z)
    if Z.ndim != 2 or Z.shape[0] != N:
        raise ValueError(f"Z must have shape ({N}, n_features), got {Z.shape}.")
    Z = Z != 0
    K = Z.shape[1]
    if A is None:
        A = likelihood.sample_prior_features(K, D, params, rng)
        if K:
            A = likelihood.sample_features(X, observed, Z.astype(np.int8), A, params, rng)
    A = check_start_features(A, K, D)
    if not np.all(np.isfinite(A)):
        raise ValueError("A must be finite.")
    live = np.flatnonzero(Z.any(axis=0))
    return Z[:, live], A[live].copy()


def to_stick_breaking(Z, A, alpha, likelihood, params, rng):
    """Change of representation from the IBP to the stick-breaking one (sec. 4.2.6).

    Active sticks ``mu_k ~ Beta(m_k, 1 + N - m_k)`` (eq. 4.55); empty sticks from eq. 4.57
    down to the smallest active one, with features from the prior; all sorted in decreasing
    stick order. Returns ``(sticks, Z, A)`` (int8 and float64 with spare room), the
    represented features ending with the last active one.
    """
    N, D = Z.shape[0], A.shape[1]
    counts = Z.sum(axis=0).astype(np.int64)
    K = counts.size
    cap = max(16, 2 * K + 8)
    sticks = np.zeros(cap)
    sticks[:K] = rng.beta(counts, 1.0 + N - counts) if K else 0.0
    Zs = np.zeros((N, cap), dtype=np.int8)
    Zs[:, :K] = Z
    As = np.zeros((cap, D))
    As[:K] = A
    cnt = np.zeros(cap, dtype=np.int64)
    cnt[:K] = counts
    total = K
    if K:
        level = float(sticks[:K].min())
        prior_kind, prior = likelihood.prior_kind, likelihood.prior_array(params)
        while True:
            total, done = extend_sticks(Zs, As, cnt, sticks, total, K, level, alpha,
                                        prior_kind, prior, rng)
            if done:
                break
            Zs, As, sticks, cnt = _grown(Zs, As, sticks, cnt, 2 * Zs.shape[1], alpha)
        total -= 1  # the last empty stick is below every active one
    order = np.argsort(-sticks[:total], kind="stable")
    Zs[:, :total] = Zs[:, order]
    As[:total] = As[order]
    sticks[:total] = sticks[order]
    return sticks, Zs, As, total


def _grown(Z, A, sticks, counts, cap, alpha):
    """Copies of the chain arrays with ``cap`` slots (checked against the memory limit:
    a huge ``alpha`` breaks sticks above the slice level without end)."""
    N, old = Z.shape
    check_feature_capacity(N, A.shape[1], cap, alpha)
    Z2 = np.zeros((N, cap), dtype=np.int8)
    Z2[:, :old] = Z
    A2 = np.zeros((cap, A.shape[1]))
    A2[:old] = A
    s2 = np.zeros(cap)
    s2[:old] = sticks
    c2 = np.zeros(cap, dtype=np.int64)
    c2[:old] = counts
    return Z2, A2, s2, c2


class SliceIBP(ExplicitFeatureSolver):
    """Slice sampler on the stick-breaking IBP (Görür 2007, sec. 4.2.5, Algorithm 15).

    Exact for any explicit-feature likelihood (``"gaussian"``, ``"exponential"``,
    ``"detection"``, ``"noisy_or"``):
    the slice gives an adaptive truncation of the infinite stick-breaking
    representation, sticks are exact draws from their log-concave conditionals (adaptive
    rejection sampling, :mod:`._slice_kernels`). A feature no other row has is switched
    on together with values proposed from the posterior given the row alone and accepted
    by Metropolis-Hastings (Görür 2007 draws them from the prior, which almost never fits
    when ``D`` is large). The strictly decreasing order of the sticks makes it mix more slowly
    over features than the semi-ordered sampler
    (:class:`~sklearn_ibp.solvers.ibp_explicit.semi_ordered_slice.SemiOrderedSliceIBP`; Görür 2007,
    sec. 4.3, fig. 4.7).

    ``state.active_Z`` and ``state.active_A`` hold the features some row has, in stick
    order. The chain lives in ``state.stats``: ``"sticks"`` (decreasing), ``"stick_Z"``
    (N, capacity) int8 and ``"stick_A"`` (capacity, D) with the ``"n_sticks"`` represented
    features (active ones and the empty ones between them), ``"feature_counts"`` and
    ``"pred"`` (``stick_Z @ stick_A``).

    Parameters
    ----------
    capacity : int, default=32
        Feature slots allocated at the start; doubled whenever more are needed (this is
        no truncation).
    """

    name = "slice"
    likelihoods = EXPLICIT_LIKELIHOODS
    exact = True

    _parameter_constraints: dict = {
        "capacity": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, capacity=32):
        self.capacity = capacity

    # -- state ---------------------------------------------------------------------------
    def initialize(self, X, observed, Z, A, alpha, params, likelihood, rng
                   ) -> ExplicitFeatureState:
        """A chain from ``Z`` (n_samples, K) and ``A`` (K, n_dims), or ``A=None`` to draw it.

        Empty columns are dropped and the sticks are drawn by the change of representation
        of sec. 4.2.6 (active sticks from eq. 4.55, empty sticks from eq. 4.57, sorted).
        ``X``, ``observed``, ``Z`` and ``A`` are not modified.
        """
        self._validate_params()
        check_explicit_likelihood(self, likelihood)
        X, observed, alpha = check_slice_inputs(X, observed, alpha)
        likelihood.check_data(X, observed)
        Z, A = initial_features(X, observed, Z, A, params, likelihood, rng)
        sticks, Zs, As, total = to_stick_breaking(Z, A, alpha, likelihood, params, rng)
        cap = max(int(self.capacity), Zs.shape[1])
        Zs, As, sticks, counts = _grown(Zs, As, sticks, Zs[:, :].sum(axis=0).astype(np.int64),
                                        cap, alpha)
        state = new_explicit_state(X, observed, Z, A, alpha, params, cap)
        state.stats.update(
            sticks=sticks, stick_Z=Zs, stick_A=As, feature_counts=counts, n_sticks=total,
            pred=np.ascontiguousarray(Zs[:, :total] @ As[:total], dtype=np.float64),
        )
        self._publish(state)
        return state

    @staticmethod
    def _publish(state: ExplicitFeatureState) -> None:
        """Copy the features some row has, in stick order, into ``state.Z``/``state.A``."""
        st = state.stats
        total = st["n_sticks"]
        live = np.flatnonzero(st["feature_counts"][:total])
        K = live.size
        grow(state, K + 1)
        state.Z[:, :K] = st["stick_Z"][:, live]
        state.Z[:, K:] = 0
        state.A[:K] = st["stick_A"][live]
        state.A[K:] = 0.0
        state.n_features = K

    # -- updates -------------------------------------------------------------------------
    def sweep(self, state: ExplicitFeatureState, likelihood, rng) -> None:
        """One sweep of Algorithm 15: rows (slice, stick extension, ``z_nk``), sticks, ``A``."""
        st = state.stats
        X, observed, params = state.X, state.observed, state.params
        N, D = X.shape
        alpha = float(state.alpha)
        kind = likelihood.observation_kind
        noise = likelihood.noise_array(params, D)
        prior_kind, prior = likelihood.prior_kind, likelihood.prior_array(params)
        total = int(st["n_sticks"])
        row = 0
        while True:
            total, row = sweep_ordered(
                X, observed, st["stick_Z"], st["stick_A"], st["pred"], st["feature_counts"],
                st["sticks"], total, row, alpha, kind, noise, prior_kind, prior, rng,
            )
            if row >= N:
                break
            (st["stick_Z"], st["stick_A"], st["sticks"], st["feature_counts"]) = _grown(
                st["stick_Z"], st["stick_A"], st["sticks"], st["feature_counts"],
                2 * st["stick_Z"].shape[1], alpha,
            )
        total = int(total)
        st["n_sticks"] = total
        Zs, As = st["stick_Z"], st["stick_A"]
        if total:
            As[:total] = likelihood.sample_features(X, observed, Zs[:, :total], As[:total],
                                                    params, rng)
        st["pred"][:] = Zs[:, :total] @ As[:total]
        self._publish(state)

    def sample_alpha(self, state: ExplicitFeatureState, rng, prior=(1.0, 1.0)) -> None:
        """``alpha`` given the represented sticks under a ``Gamma(shape, rate)`` prior.

        ``alpha`` enters the joint of the ``K`` represented sticks (eq. 4.42) and of the
        emptiness of every later column (eq. 4.29) as ``alpha^K exp(-alpha r)`` with
        ``r = sum_{i<=N} (1 - (1 - mu_K)^i) / i - log mu_K`` (:func:`stick_tail_rate`),
        so ``alpha | sticks ~ Gamma(shape + K, rate + r)``; with no sticks ``r = H_N``.
        """
        shape, rate = check_prior(prior)
        st = state.stats
        total = int(st["n_sticks"])
        last = float(st["sticks"][total - 1]) if total else 1.0
        state.alpha = sample_alpha_conditional(
            total, stick_tail_rate(last, state.X.shape[0]), rng, prior_shape=shape,
            prior_rate=rate)

#: Old class names (before issue 21), importable with a FutureWarning naming the new one.
__getattr__ = class_aliases(__name__)
