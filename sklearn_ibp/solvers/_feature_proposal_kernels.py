"""Kernels of the proposals for new features, shared by several explicit-feature samplers.

A new feature row ``a_k`` is proposed from its conditional posterior given the rows that
take it (Gaussian, truncated-Gaussian or Bernoulli per dimension, by the feature prior) and
scored under the feature prior: :func:`feature_proposal` and :func:`log_prior_feature`, used
by the hierarchy sampler (Doshi-Velez 2009, ch. 7) and by the Metropolis-Hastings, particle
and MAP samplers of the IBP (Doshi-Velez 2009, ch. 3; appendix A.2 for the exponential prior).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ._draw_kernels import draw_binary

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)

#: How a new feature's value is proposed: from its prior, or from its conditional given
#: the data of the rows that create it (:func:`feature_proposal`).
PROPOSE_PRIOR = 0
PROPOSE_DATA = 1
#: The solvers' ``proposal`` option: name -> code.
PROPOSALS = {"prior": PROPOSE_PRIOR, "data": PROPOSE_DATA}


@njit(cache=True)
def log_upper_tail(a):
    """``log P(N(0, 1) > a)``, accurate far into both tails."""
    if a < 5.0:
        return math.log(0.5 * math.erfc(a / math.sqrt(2.0)))
    a2 = a * a
    return -0.5 * a2 - math.log(a) - _LOG_SQRT_2PI + math.log1p(-1.0 / a2 + 3.0 / (a2 * a2))


@njit(cache=True)
def draw_positive_normal(mean, sd, rng):
    """A draw of ``N(mean, sd^2)`` truncated to ``[0, inf)``."""
    a = -mean / sd  # the bound in standard units
    if a < 0.5:
        while True:
            x = rng.standard_normal()
            if x >= a:
                return mean + sd * x
    # Exponential proposal above the bound (Robert 1995), optimal rate.
    rate = 0.5 * (a + math.sqrt(a * a + 4.0))
    while True:
        x = a + rng.exponential(1.0 / rate)
        if rng.random() < math.exp(-0.5 * (x - rate) ** 2):
            return mean + sd * x


@njit(cache=True)
def log_prior_feature(prior_kind, prior, a):
    """``log p(a_k)`` of one feature row under the feature prior."""
    total = 0.0
    for d in range(a.shape[0]):
        if prior_kind == 0:
            total += -0.5 * (a[d] / prior[0]) ** 2 - math.log(prior[0]) - _LOG_SQRT_2PI
        elif prior_kind == 1:
            total += (math.log(prior[0]) - prior[0] * a[d]) if a[d] >= 0.0 else -np.inf
        else:
            total += math.log(prior[0]) if a[d] > 0.5 else math.log1p(-prior[0])
    return total


@njit(cache=True)
def binary_entry_proposal(draw, log_odds, out, d, rng):
    """Draw (``draw=True``) or score (``draw=False``) a binary feature value ``out[d]``
    proposed with ``P(1) = sigmoid(log_odds)``; return ``log q(out[d])``, computed
    without overflow at either end."""
    if draw:
        out[d] = 1.0 if draw_binary(log_odds, rng) else 0.0
    if out[d] > 0.5:
        return -math.log1p(math.exp(-log_odds)) if log_odds > -700.0 else log_odds
    return -math.log1p(math.exp(log_odds)) if log_odds < 700.0 else -log_odds


@njit(cache=True)
def feature_proposal(
    draw, prior_kind, prior, obs_kind, noise, X, observed, rows, n_rows, children,
    preds, out, rng,
):
    """Propose (``draw=True``) or score (``draw=False``) a new feature row ``out``.

    The proposal is the feature's conditional posterior given the rows
    ``rows[:n_rows]`` whose ``children[i] == 1``, with their other features fixed at
    ``preds[i]``: per dimension a Gaussian (Gaussian prior), a Gaussian truncated to the
    positive half-line (exponential prior, appendix A.2) or a Bernoulli (binary
    features). Proposing features from the data rather than from their prior is what
    lets a new feature be accepted in many dimensions at once. Returns ``log q(out)``.
    """
    D = X.shape[1]
    total = 0.0
    for d in range(D):
        if prior_kind == 2:
            log_odds = math.log(prior[0]) - math.log1p(-prior[0])
            for i in range(n_rows):
                n = rows[i]
                if children[i] == 1 and observed[n, d]:
                    base = preds[i, d]
                    x = X[n, d]
                    p_now = 1.0 - noise[1, d] if base > 0.5 else noise[0, d]
                    p_with = 1.0 - noise[1, d]
                    if x > 0.5:
                        log_odds += math.log(p_with) - math.log(p_now)
                    else:
                        log_odds += math.log1p(-p_with) - math.log1p(-p_now)
            total += binary_entry_proposal(draw, log_odds, out, d, rng)
            continue
        precision = 0.0
        shift = 0.0
        for i in range(n_rows):
            n = rows[i]
            if children[i] == 1 and observed[n, d]:
                precision += 1.0 / noise[0, d]
                shift += (X[n, d] - preds[i, d]) / noise[0, d]
        total += continuous_entry_proposal(draw, prior_kind, prior, precision, shift, out, d,
                                           rng)
    return total


@njit(cache=True)
def continuous_entry_proposal(draw, prior_kind, prior, precision, shift, out, d, rng):
    """Draw (``draw=True``) or score (``draw=False``) a continuous feature value ``out[d]``
    from its conditional posterior given Gaussian observations with total precision
    ``precision`` and ``shift`` (the sum of the residuals over their variances): a
    Gaussian under the Gaussian prior (``prior_kind == 0``, sd ``prior[0]``), a Gaussian
    truncated to ``[0, inf)`` under the exponential prior (rate ``prior[0]``; the prior
    itself when nothing is observed, appendix A.2). Returns ``log q(out[d])``."""
    if prior_kind == 0:
        precision += 1.0 / (prior[0] * prior[0])
        sd = 1.0 / math.sqrt(precision)
        mean = shift / precision
        if draw:
            out[d] = mean + sd * rng.standard_normal()
        return -0.5 * ((out[d] - mean) / sd) ** 2 - math.log(sd) - _LOG_SQRT_2PI
    if precision == 0.0:
        if draw:
            out[d] = rng.exponential(1.0 / prior[0])
        return math.log(prior[0]) - prior[0] * out[d]
    sd = 1.0 / math.sqrt(precision)
    mean = (shift - prior[0]) / precision
    if draw:
        out[d] = draw_positive_normal(mean, sd, rng)
    return (
        -0.5 * ((out[d] - mean) / sd) ** 2 - math.log(sd) - _LOG_SQRT_2PI
        - log_upper_tail(-mean / sd)
    )
