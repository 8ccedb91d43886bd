"""Binary data from binary features through a leaky noisy-or (Doshi-Velez 2009, eq. A.4).

Each ``a_kd`` is 1 with probability ``p_a`` ("``A`` is also a binary matrix in which each
element ``A_kd`` has an independent probability of ``p_A`` to be one"). Row ``n`` reaches
dimension ``d`` through ``c_nd = z_n . a_d = (z_n A)_d`` active features, and

    P(x_nd = 1 | Z, A) = 1 - eps lambda^(c_nd)                                  (A.4)

so each reaching feature independently fails to switch ``x_nd`` on with probability
``lambda``, and the leak (the chance of a one that no feature explains, ``1 - eps``)
fails with probability ``eps``. Unlike the per-dimension detection model of sec. 7.3
(:class:`~sklearn_ibp.likelihoods.BinaryDetection`), the chance of a one grows with every
reaching feature, and ``eps`` and ``lambda`` are shared by all dimensions.

The seed gives no priors for ``eps``, ``lambda`` and ``p_A``; here each has a vague
``Beta(1, 1)`` prior (changeable through the constructor). ``A`` cannot be integrated
out; as the seed says, each ``a_kd`` is Gibbs-sampled from its two-point conditional
(:mod:`._leaky_noisy_or_kernels`).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import expit

from .._slice import slice_sample
from ._binary_features import BinaryFeatureLikelihood, feature_counts
from ._leaky_noisy_or_kernels import sweep_noisy_or_features
from ._observation_kernels import OBSERVE_NOISY_OR, PRIOR_BERNOULLI
from .linear_gaussian import _check_feature_data

__all__ = ["LeakyNoisyOr"]


def _log_sigmoid(u: float) -> float:
    """``log(1 / (1 + exp(-u)))`` without overflow."""
    return -math.log1p(math.exp(-u)) if u >= 0.0 else u - math.log1p(math.exp(u))


def _slice_step_logit(value: float, prior, log_likelihood, rng) -> float:
    """One slice-sampling step on ``u = logit(value)`` of a probability with a
    ``Beta(a, b)`` prior (``prior``) and a log likelihood of ``log value``; returns the new
    ``u``. The density of ``u`` is the likelihood times ``value^a (1 - value)^b`` (the
    prior times the Jacobian)."""
    a, b = prior

    def log_density(u):
        log_p, log_q = _log_sigmoid(u), _log_sigmoid(-u)
        return a * log_p + b * log_q + log_likelihood(log_p)

    return slice_sample(log_density, _logit(value), rng, width=2.0)


def _check_beta_prior(prior, name):
    a, b = (float(v) for v in prior)
    if not (a > 0.0 and b > 0.0 and math.isfinite(a) and math.isfinite(b)):
        raise ValueError(f"{name} must be two positive finite numbers (a, b), got {prior!r}.")
    return a, b


class LeakyNoisyOr(BinaryFeatureLikelihood):
    """Binary features observed through a leaky noisy-or (Doshi-Velez 2009, appendix A.3, eq. A.4).

    ``a_kd ~ Bernoulli(p_a)``; ``P(x_nd = 1 | z_n, A) = 1 - epsilon * lambda^((z_n A)_d)``.
    Parameters: ``params = {"epsilon": float, "lambda": float, "p_a": float}``, all three
    scalars (:attr:`parameter_names`), each in (0, 1): ``1 - epsilon`` is the leak (the
    probability of a one that no active feature reaches) and ``lambda`` the probability that
    one reaching feature fails to switch the entry on.

    ``X`` holds 0 or 1 at its observed entries; missing entries are left out of every term.

    Parameters
    ----------
    epsilon_prior, lambda_prior, p_a_prior : tuple of two floats, default=(1.0, 1.0)
        Beta prior ``(a, b)`` of ``epsilon``, ``lambda`` and ``p_a``. The seed names no
        prior; the default is uniform.
    """

    name = "noisy_or"
    observation_kind = OBSERVE_NOISY_OR
    prior_kind = PRIOR_BERNOULLI
    parameter_names = ("epsilon", "lambda", "p_a")
    sweep_kernel = staticmethod(sweep_noisy_or_features)

    def __init__(self, epsilon_prior=(1.0, 1.0), lambda_prior=(1.0, 1.0), p_a_prior=(1.0, 1.0)):
        self.epsilon_prior = _check_beta_prior(epsilon_prior, "epsilon_prior")
        self.lambda_prior = _check_beta_prior(lambda_prior, "lambda_prior")
        self.p_a_prior = _check_beta_prior(p_a_prior, "p_a_prior")

    def initial_parameters(self, X, observed) -> dict:
        """``epsilon = 0.9`` (a leak of 0.1), ``lambda = 0.2`` (one reaching feature
        switches an entry on with probability 0.82) and ``p_a = 0.5``; the data are only
        checked."""
        _check_feature_data(X, observed)
        return {"epsilon": 0.9, "lambda": 0.2, "p_a": 0.5}

    def noise_array(self, params, n_dims: int) -> np.ndarray:
        """``log epsilon`` in row 0 and ``log lambda`` in row 1 for every dimension, shape
        (2, n_dims) (the layout of ``OBSERVE_NOISY_OR``)."""
        noise = np.empty((2, n_dims))
        with np.errstate(divide="ignore"):
            noise[0] = np.log(float(params["epsilon"]))
            noise[1] = np.log(float(params["lambda"]))
        return noise

    def sample_parameters(self, X, observed, Z, A, params, rng) -> dict:
        """``epsilon``, then ``lambda``, then ``p_a`` from their conditionals.

        ``p_a ~ Beta(a + sum A, b + K D - sum A)`` is conjugate. ``epsilon`` and ``lambda``
        are not: given the tallies ``n0[c]`` and ``n1[c]`` of observed zeros and ones
        reached by ``c`` features, their joint log likelihood is

            sum_c n0[c] (log eps + c log lambda) + n1[c] log(1 - eps lambda^c),

        and each is updated in turn by one slice-sampling step (Neal 2003, stepping out and
        shrinkage; :func:`sklearn_ibp._slice.slice_sample`) on its logit, whose density is
        the likelihood times ``eps^a (1 - eps)^b`` (the Beta prior times the Jacobian).
        A slice step leaves the exact conditional invariant, so the chain targets the exact
        posterior (no approximation); an evaluation costs O(K), not O(N D).
        """
        n_zero, n_one = self.count_table(X, observed, Z, A)
        A = np.asarray(A, dtype=np.float64)
        return self.sample_parameters_from_table(
            n_zero, n_one, float(np.sum(A > 0.5)), int(A.size), params, rng)

    @staticmethod
    def count_table(X, observed, Z, A):
        """``(n0, n1)``: ``n0[c]`` (``n1[c]``) the observed zeros (ones) of ``X`` reached by
        ``c = (z_n A)_d`` active features, int64 arrays of equal length (at least 1).

        All that ``epsilon`` and ``lambda``'s likelihood depends on; sums of the tables of
        blocks of rows are the table of their union (the data-parallel sampler's message).
        """
        X = np.asarray(X, dtype=np.float64)
        mask = np.asarray(observed).astype(bool)
        counts = feature_counts(Z, A)
        ones = mask & (X > 0.5)
        zeros = mask & ~(X > 0.5)
        length = int(counts.max(initial=0)) + 1
        return (np.bincount(counts[zeros], minlength=length).astype(np.int64),
                np.bincount(counts[ones], minlength=length).astype(np.int64))

    def sample_parameters_from_table(self, n_zero, n_one, n_on, n_entries, params, rng
                                     ) -> dict:
        """:meth:`sample_parameters` given the tallies of :meth:`count_table` and the number
        ``n_on`` of ones among the ``n_entries`` entries of ``A`` (same draws)."""
        n_zero = np.asarray(n_zero, dtype=np.int64)
        n_one = np.asarray(n_one, dtype=np.int64)
        n_zero_total = float(np.sum(n_zero))
        zero_count_sum = float(np.sum(np.arange(n_zero.size, dtype=np.int64) * n_zero))
        # (count, number of ones at that count): at most K + 1 pairs, so plain floats
        # evaluate faster than NumPy calls in the slice sampler's loop.
        one_levels = [(float(c), float(m)) for c, m in enumerate(n_one) if m > 0]

        def log_likelihood(log_eps, log_lam):
            total = n_zero_total * log_eps
            if zero_count_sum > 0.0:
                total += zero_count_sum * log_lam
            for level, weight in one_levels:
                p_zero = math.exp(log_eps + level * log_lam) if level else math.exp(log_eps)
                if p_zero >= 1.0:
                    return -math.inf
                total += weight * math.log1p(-p_zero)
            return total

        log_lam = math.log(float(params["lambda"]))
        u = _slice_step_logit(float(params["epsilon"]), self.epsilon_prior,
                              lambda log_p: log_likelihood(log_p, log_lam), rng)
        log_eps = _log_sigmoid(u)
        epsilon = _sigmoid(u)
        v = _slice_step_logit(float(params["lambda"]), self.lambda_prior,
                              lambda log_p: log_likelihood(log_eps, log_p), rng)
        lam = _sigmoid(v)

        n_on = float(n_on)
        a, b = self.p_a_prior
        p_a = float(rng.beta(a + n_on, b + n_entries - n_on))
        return {**params, "epsilon": epsilon, "lambda": lam, "p_a": p_a}

    def log_likelihood_from_table(self, n_zero, n_one, params) -> float:
        """``log P(X | Z, A)`` over the observed entries from the tallies of
        :meth:`count_table` (``sum_c n0[c] (log eps + c log lambda) + n1[c] log(1 - eps
        lambda^c)``)."""
        n_zero = np.asarray(n_zero, dtype=np.float64)
        n_one = np.asarray(n_one, dtype=np.float64)
        c = np.arange(n_zero.size, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            log_zero = math.log(float(params["epsilon"])) + np.where(
                c > 0, c * math.log(float(params["lambda"])), 0.0)
            log_one = np.log(-np.expm1(log_zero))
        total = float(np.sum(n_zero * log_zero))
        total += float(np.sum(np.where(n_one > 0, n_one * log_one, 0.0)))
        return total

    def entry_log_probs(self, Z, A, params):
        """``(log P(x_nd = 1), log P(x_nd = 0))`` with ``log P(x_nd = 0) = log epsilon +
        c_nd log lambda`` (eq. A.4)."""
        log_p_zero = self._log_prob_zero(Z, A, params)
        with np.errstate(divide="ignore"):
            return np.log(-np.expm1(log_p_zero)), log_p_zero

    def predict(self, Z, A, params) -> np.ndarray:
        """``P(x_nd = 1 | z_n, A) = 1 - epsilon lambda^((z_n A)_d)``, shape
        (n_samples, n_dims)."""
        return -np.expm1(self._log_prob_zero(Z, A, params))

    # -- new rows, features held fixed (transform and score_samples of the estimators) --
    @staticmethod
    def log_terms(counts, params):
        """``(log P(x = 1), log P(x = 0))`` of entries reached by ``counts`` features
        (eq. A.4); ``counts`` may be fractional (expected counts)."""
        log_eps = np.log(params["epsilon"])
        log_lam = np.log(params["lambda"])
        log_zero = log_eps + counts * log_lam
        with np.errstate(divide="ignore"):
            return np.log(-np.expm1(log_zero)), log_zero

    def pattern_log_likelihood(self, X, observed, patterns, A, params) -> np.ndarray:
        """``log p(x_n,obs | z, A)`` (eq. A.4) for every row and every binary pattern
        ``z`` (rows of ``patterns``), shape (n_rows, n_patterns)."""
        ones = (observed & (X > 0.5)).astype(float)
        zeros = (observed & (X <= 0.5)).astype(float)
        counts = patterns @ A  # (P, D): features reaching each entry
        log_one, log_zero = self.log_terms(counts, params)
        # A one no feature can explain has probability 1 - epsilon > 0, so log_one is
        # finite wherever it is used; 0 * -inf is avoided by masking.
        return _masked_dot(ones, log_one) + zeros @ log_zero.T

    def mean_field(self, X, observed, log_odds, A, params, n_steps=10) -> np.ndarray:
        """``q(z_nk = 1)`` of new rows with many features, features held at ``A``.

        Iterated conditional modes with soft outputs: feature by feature, for all rows at
        once, ``q_k`` is the conditional probability of ``z_k = 1`` given the other
        features at their current mode, which is then updated; ``n_steps`` passes (a
        fixed count, so that a row's result depends on that row only).
        """
        ones = (observed & (X > 0.5)).astype(float)
        zeros = (observed & (X <= 0.5)).astype(float)
        q = expit(log_odds)
        mode = (q > 0.5).astype(float)
        counts = mode @ A
        for _ in range(n_steps):
            for k in range(A.shape[0]):
                base = counts - np.outer(mode[:, k], A[k])
                reach = A[k] > 0.5
                if not reach.any():
                    q[:, k] = expit(log_odds[:, k])
                else:
                    one_on, zero_on = self.log_terms(base[:, reach] + 1.0, params)
                    one_off, zero_off = self.log_terms(base[:, reach], params)
                    gain = (
                        np.sum(np.where(ones[:, reach] > 0, one_on - one_off, 0.0), axis=1)
                        + np.sum(zeros[:, reach] * (zero_on - zero_off), axis=1)
                    )
                    q[:, k] = expit(log_odds[:, k] + gain)
                mode[:, k] = q[:, k] > 0.5
                counts = base + np.outer(mode[:, k], A[k])
        return q

    @staticmethod
    def _log_prob_zero(Z, A, params) -> np.ndarray:
        """``log P(x_nd = 0) = log epsilon + c_nd log lambda`` (0 * log 0 read as 0)."""
        counts = feature_counts(Z, A)
        with np.errstate(divide="ignore", invalid="ignore"):
            log_lam = np.log(float(params["lambda"]))
            log_eps = np.log(float(params["epsilon"]))
            return np.where(counts > 0, log_eps + counts * log_lam, log_eps)


def _masked_dot(weights, log_values):
    """``weights @ log_values.T`` where ``log_values`` may be ``-inf`` at zero weights."""
    finite = np.where(np.isfinite(log_values), log_values, 0.0)
    out = weights @ finite.T
    bad = ~np.isfinite(log_values)
    if bad.any():
        hits = weights @ bad.T.astype(float)
        out[hits > 0] = -np.inf
    return out


def _logit(p: float) -> float:
    return math.log(p) - math.log1p(-p)


def _sigmoid(u: float) -> float:
    return 1.0 / (1.0 + math.exp(-u)) if u >= 0.0 else math.exp(u) / (1.0 + math.exp(u))
