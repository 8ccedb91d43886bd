"""Row-level numba kernels shared by the samplers that keep the features ``A`` explicit.

Every explicit-feature likelihood is described to a kernel by two small codes and two
arrays, so that one compiled sampler serves all of them (no function arguments, so the
kernels cache):

* ``observation_kind`` says how a row's prediction ``z_n A`` becomes a density:
  :data:`OBSERVE_GAUSSIAN` (``x_nd ~ N(pred_nd, noise[0, d])``, ``noise[0]`` holding
  variances and ``noise[1]`` their logarithms) or :data:`OBSERVE_DETECTION` (binary
  ``x_nd``; the feature pattern reaches dimension ``d`` when ``pred_nd > 0.5``; then
  ``P(x_nd = 1) = 1 - noise[1, d]`` (a miss rate), otherwise ``P(x_nd = 1) = noise[0, d]``
  (a false-detection rate); Doshi-Velez 2009, sec. 7.3) or :data:`OBSERVE_NOISY_OR` (binary
  ``x_nd``; the leaky noisy-or of Doshi-Velez 2009, eq. A.4,
  ``P(x_nd = 1) = 1 - eps lambda^pred_nd`` with ``pred_nd`` the count of the row's active
  features that include ``d``; ``noise[0, d]`` holds ``log eps`` and ``noise[1, d]`` holds
  ``log lambda``, so that
  ``log P(x_nd = 0) = noise[0, d] + pred_nd * noise[1, d]`` takes no logarithm per entry).
* ``prior_kind`` says how a new feature row ``a_k`` is drawn from its prior:
  :data:`PRIOR_GAUSSIAN` (``N(0, prior[0]^2)``), :data:`PRIOR_EXPONENTIAL` (rate
  ``prior[0]``, Doshi-Velez 2009, appendix A.2) or :data:`PRIOR_BERNOULLI` (``P(a_kd = 1) =
  prior[0]``, appendix A.3).
"""

from __future__ import annotations

import math

import numba as nb

from .._numba import FAST_MATH

__all__ = [
    "OBSERVE_DETECTION",
    "OBSERVE_GAUSSIAN",
    "OBSERVE_NOISY_OR",
    "PRIOR_BERNOULLI",
    "PRIOR_EXPONENTIAL",
    "PRIOR_GAUSSIAN",
    "draw_prior_feature",
    "row_log_likelihood",
    "row_log_likelihood_shifted",
]

OBSERVE_GAUSSIAN = 0
OBSERVE_DETECTION = 1
OBSERVE_NOISY_OR = 2

PRIOR_GAUSSIAN = 0
PRIOR_EXPONENTIAL = 1
PRIOR_BERNOULLI = 2

_LOG_2PI = math.log(2.0 * math.pi)


@nb.njit(cache=True, fastmath=FAST_MATH, inline="always")
def _entry_log_likelihood(kind, x, pred, noise, d):
    if kind == OBSERVE_GAUSSIAN:
        r = x - pred
        return -0.5 * (_LOG_2PI + noise[1, d] + r * r / noise[0, d])
    if kind == OBSERVE_NOISY_OR:
        # log P(x = 0) = log eps + count log lambda; the guard keeps lambda = 0 (log -inf)
        # with count 0 from giving 0 * -inf.
        log_p_zero = noise[0, d]
        if pred > 0.0:
            log_p_zero += pred * noise[1, d]
        return math.log(-math.expm1(log_p_zero)) if x > 0.5 else log_p_zero
    p_one = 1.0 - noise[1, d] if pred > 0.5 else noise[0, d]
    return math.log(p_one) if x > 0.5 else math.log1p(-p_one)


@nb.njit(cache=True, fastmath=FAST_MATH)
def row_log_likelihood(kind, x, observed, pred, noise):
    """``log p(x_n | prediction pred_n)`` over the observed entries of one row.

    Parameters
    ----------
    kind : int
        :data:`OBSERVE_GAUSSIAN`, :data:`OBSERVE_DETECTION` or :data:`OBSERVE_NOISY_OR`.
    x : ndarray of shape (n_dims,)
        The row (any value where not observed).
    observed : ndarray of shape (n_dims,), uint8
        1 where ``x`` is observed.
    pred : ndarray of shape (n_dims,)
        ``z_n A``: the mean (Gaussian) or the count of active features reaching each
        dimension (detection, noisy-or).
    noise : ndarray of shape (2, n_dims)
        Variances in row 0 and their logarithms in row 1 (Gaussian); false-detection
        rates in row 0 and miss rates in row 1 (detection); ``log eps`` in row 0 and
        ``log lambda`` in row 1 (noisy-or).
    """
    total = 0.0
    for d in range(x.shape[0]):
        if observed[d]:
            total += _entry_log_likelihood(kind, x[d], pred[d], noise, d)
    return total


@nb.njit(cache=True, fastmath=FAST_MATH)
def row_log_likelihood_shifted(kind, x, observed, pred, shift, scale, noise):
    """``log p(x_n | pred_n + scale * shift)`` without forming the shifted prediction."""
    total = 0.0
    for d in range(x.shape[0]):
        if observed[d]:
            total += _entry_log_likelihood(kind, x[d], pred[d] + scale * shift[d], noise, d)
    return total


@nb.njit(cache=True)
def draw_prior_feature(prior_kind, prior, out, rng):
    """Fill ``out`` (one feature row ``a_k``) with a draw from the feature prior, using the
    chain's :class:`numpy.random.Generator` ``rng``."""
    for d in range(out.shape[0]):
        if prior_kind == PRIOR_GAUSSIAN:
            out[d] = prior[0] * rng.standard_normal()
        elif prior_kind == PRIOR_EXPONENTIAL:
            out[d] = rng.exponential(1.0 / prior[0])
        else:
            out[d] = 1.0 if rng.random() < prior[0] else 0.0
