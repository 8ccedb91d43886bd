"""Numba kernels of Gibbs sampling for the truncated stick-breaking IBP (Görür 2007, sec. 4.2.4).

The chain holds all ``K*`` sticks in stick order (strictly decreasing), with arrays

``Z`` (N, K*) int8
    Feature assignments, column ``k`` belonging to stick ``k``.
``A`` (K*, D) float64, ``pred`` (N, D) = ``Z A``
    Explicit features and each row's prediction, read by
    :func:`sklearn_ibp.likelihoods._observation_kernels.row_log_likelihood`.
``log_sticks`` (K*,), ``sticks`` (K*,)
    ``log mu_k`` and ``mu_k``; ``0 > log mu_1 > log mu_2 > ... > log mu_K*``.
``counts`` (K*,) int64
    ``m_k``, the rows having feature ``k``.

Every kernel draws from the chain's :class:`numpy.random.Generator`, so a seed fixes every
draw.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ...likelihoods._observation_kernels import (
    draw_prior_feature,
    row_log_likelihood,
    row_log_likelihood_shifted,
)
from .._draw_kernels import draw_binary

#: Initial bracket width of the stick slice sampler, on the ``log mu`` scale. The
#: conditional of ``log mu_k`` has standard deviation about ``1 / sqrt(m_k)`` (less when
#: ``mu_k`` is near 1), so one width brackets most of its mass.
STICK_SLICE_WIDTH = 1.0
#: Largest number of stepping-out steps (both sides together) of the stick slice sampler.
STICK_SLICE_STEPS = 64


@njit(cache=True)
def compute_prediction(Z, A, pred):
    """``pred = Z A`` (overwritten), from scratch so rounding never accumulates."""
    N, K = Z.shape
    D = A.shape[1]
    for n in range(N):
        for d in range(D):
            pred[n, d] = 0.0
        for k in range(K):
            if Z[n, k] != 0:
                for d in range(D):
                    pred[n, d] += A[k, d]


@njit(cache=True)
def draw_unused_features(A, counts, prior_kind, prior, rng):
    """Each row of ``A`` whose feature no row has, afresh from the feature prior: its
    conditional, since it touches no data."""
    for k in range(A.shape[0]):
        if counts[k] == 0:
            draw_prior_feature(prior_kind, prior, A[k], rng)


@njit(cache=True)
def sweep_feature_assignments(X, observed, Z, A, pred, log_sticks, counts, order, kind,
                              noise, prior_kind, prior, rng):
    """Gibbs for every ``z_nk`` given the sticks and ``A`` (eq. 4.44), in place.

    Rows in ``order``; within a row the columns in stick order. Given ``mu_k`` the entries
    of ``Z`` are independent a priori (eq. 4.43), so every column, shared or not, has the
    same conditional: log odds ``log mu_k - log(1 - mu_k)`` plus the row's log-likelihood
    ratio. ``pred`` and ``counts`` follow the changes.

    Before each row, the features no row has are drawn afresh from their prior (their
    conditional): every row is offered new candidate features, which is what lets the
    chain create features at all (a Gibbs step, so exact).
    """
    K = Z.shape[1]
    for step in range(order.shape[0]):
        n = order[step]
        draw_unused_features(A, counts, prior_kind, prior, rng)
        x = X[n]
        obs = observed[n]
        p = pred[n]
        current = row_log_likelihood(kind, x, obs, p, noise)
        for k in range(K):
            z = Z[n, k]
            sign = 1.0 - 2.0 * z  # the change of pred when z_nk flips
            flipped = row_log_likelihood_shifted(kind, x, obs, p, A[k], sign, noise)
            log_odds = flipped - current if z == 0 else current - flipped
            s = log_sticks[k]
            log_odds += s - math.log(-math.expm1(s))
            new = draw_binary(log_odds, rng)
            if new != z:
                for d in range(p.shape[0]):
                    p[d] += sign * A[k, d]
                Z[n, k] = new
                counts[k] += new - z
                current = flipped


@njit(cache=True)
def log_stick_density(s, shape, rest):
    """Unnormalised log density of ``s = log mu_k`` given ``Z`` and the other sticks.

    Eq. 4.45 on the log scale: ``mu^(shape - 1) (1 - mu)^rest dmu = e^(shape s)
    (1 - e^s)^rest ds`` with ``shape = m_k`` (``m_K* + alpha`` for the last stick) and
    ``rest = N - m_k``; concave in ``s``, so the slice is one interval.
    """
    out = shape * s
    if rest > 0.0:
        if s >= 0.0:
            return -np.inf
        out += rest * math.log(-math.expm1(s))
    return out


@njit(cache=True)
def slice_log_stick(s0, shape, rest, lower, upper, width, max_steps, rng):
    """One slice-sampling update of ``s = log mu_k`` on ``(lower, upper)`` (Neal 2003, sec. 4:
    stepping out and shrinkage), leaving :func:`log_stick_density` truncated to the bounds
    invariant. ``lower`` may be ``-inf``; the bracket is clipped to the bounds (points
    outside have density zero, so clipping keeps the bracket distribution symmetric)."""
    level = log_stick_density(s0, shape, rest) - rng.exponential()
    left = s0 - width * rng.random()
    right = left + width
    steps_left = int(math.floor(max_steps * rng.random()))
    steps_right = max_steps - 1 - steps_left
    while steps_left > 0 and left > lower and log_stick_density(left, shape, rest) > level:
        left -= width
        steps_left -= 1
    while steps_right > 0 and right < upper and log_stick_density(right, shape, rest) > level:
        right += width
        steps_right -= 1
    if left < lower:
        left = lower
    if right > upper:
        right = upper
    while True:
        s1 = left + rng.random() * (right - left)
        if s1 > lower and s1 < upper and log_stick_density(s1, shape, rest) > level:
            return s1
        if s1 < s0:
            left = s1
        else:
            right = s1
        if right - left <= 1e-12 * (1.0 + abs(s0)):
            return s0


@njit(cache=True)
def sample_sticks(log_sticks, sticks, counts, n_rows, alpha, rng):
    """Each stick in turn from its conditional given ``Z`` and its neighbours (eq. 4.45).

    ``mu_k`` lives on ``(mu_{k+1}, mu_{k-1})`` with ``mu_0 = 1`` and ``mu_{K*+1} = 0``; the
    truncated prior (eq. 4.42) gives ``mu_k^-1`` to every stick and ``mu_K*^alpha`` to the
    last. ``sticks`` is refreshed from ``log_sticks``.
    """
    K = log_sticks.shape[0]
    for k in range(K):
        upper = log_sticks[k - 1] if k > 0 else 0.0
        lower = log_sticks[k + 1] if k + 1 < K else -np.inf
        shape = float(counts[k])
        if k + 1 == K:
            shape += alpha
        log_sticks[k] = slice_log_stick(
            log_sticks[k], shape, float(n_rows - counts[k]), lower, upper,
            STICK_SLICE_WIDTH, STICK_SLICE_STEPS, rng,
        )
    for k in range(K):
        sticks[k] = math.exp(log_sticks[k])


@njit(cache=True)
def sweep_truncated(X, observed, Z, A, pred, log_sticks, sticks, counts, order, alpha, kind,
                    noise, prior_kind, prior, rng):
    """Steps 1-2 of a sweep of Algorithm 14 in one call: ``pred = Z A`` afresh, every
    ``z_nk`` (:func:`sweep_feature_assignments`), then every stick (:func:`sample_sticks`)."""
    compute_prediction(Z, A, pred)
    sweep_feature_assignments(X, observed, Z, A, pred, log_sticks, counts, order, kind, noise,
                              prior_kind, prior, rng)
    sample_sticks(log_sticks, sticks, counts, X.shape[0], alpha, rng)
