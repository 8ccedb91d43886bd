"""Numba kernels of the stick-breaking slice sampler for the IBP (Görür 2007, sec. 4.2.5,
Algorithm 15), shared with the semi-ordered sampler (sec. 4.2.6, Algorithm 16).

Arrays (spare capacity ``cap`` feature slots, only the first ``n_features`` live):

``Z`` (N, cap) int8, ``A`` (cap, D) float64, ``pred`` (N, D) = ``Z A``
    Feature assignments, feature values and each row's prediction, read by
    :func:`sklearn_ibp.likelihoods._observation_kernels.row_log_likelihood`.
``counts`` (cap,) int64
    ``m_k``, the rows having each feature.
``sticks`` (cap,) float64
    The feature presence probabilities ``mu_k`` of the represented features.

Every stick is drawn from a density that is log-concave in ``t = log mu`` (Görür 2007,
eqs. 4.51, 4.53, 4.57),

``l(t) = a t + b log(1 - e^t) + c sum_{i=1}^N (1 - e^t)^i / i``  (``a, b, c >= 0``),

by adaptive rejection sampling (Gilks and Wild 1992, tangent envelope), so each stick is an
exact draw from its conditional.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ...likelihoods._exponential_kernels import draw_nonnegative_normal
from ...likelihoods._observation_kernels import (
    OBSERVE_GAUSSIAN,
    PRIOR_EXPONENTIAL,
    PRIOR_GAUSSIAN,
    draw_prior_feature,
    row_log_likelihood,
    row_log_likelihood_shifted,
)
from .._draw_kernels import (
    add_lowest_stick_log_ratio,
    draw_binary,
    draw_from_log_weights,
    stick_log_odds,
)

_LOG_2PI = math.log(2.0 * math.pi)
_SQRT2 = math.sqrt(2.0)

#: Largest number of abscissae of the adaptive rejection envelope.
_MAX_POINTS = 64


@njit(cache=True)
def log_stick_density(t, a, b, c, n_rows):
    """``l(t)`` and ``l'(t)`` of the stick density in ``t = log mu`` (module docstring).

    ``b log(1 - mu)`` is the probability ``(1 - mu)^b`` of ``b`` rows without the feature;
    ``c sum_i (1 - mu)^i / i`` with ``c = alpha`` is the log probability (up to
    ``-alpha H_N``) that every feature after it is empty (eq. 4.29 / A.10).
    """
    mu = math.exp(t)
    one_minus = -math.expm1(t)
    if one_minus <= 0.0:
        if b > 0.0:
            return -np.inf, -np.inf
        one_minus = 0.0
    value = a * t
    slope = a
    if b > 0.0:
        value += b * math.log(one_minus)
        slope -= b * mu / one_minus
    if c > 0.0:
        # g(mu) = sum_{i<=N} (1-mu)^i / i and t-derivative -(1 - (1-mu)^N).
        power = 1.0
        total = 0.0
        for i in range(1, n_rows + 1):
            power *= one_minus
            total += power / i
        value += c * total
        slope -= c * (1.0 - power)
    return value, slope


@njit(cache=True)
def _hull_pieces(xs, hs, ds, n, lo, hi, zs, log_mass):
    """Breakpoints ``zs[0..n]`` of the tangent envelope and the log mass of each piece."""
    zs[0] = lo
    zs[n] = hi
    for j in range(n - 1):
        gap = ds[j] - ds[j + 1]
        if gap > 1e-12 * (1.0 + abs(ds[j]) + abs(ds[j + 1])):
            z = (hs[j + 1] - hs[j] - xs[j + 1] * ds[j + 1] + xs[j] * ds[j]) / gap
            if z < xs[j]:
                z = xs[j]
            elif z > xs[j + 1]:
                z = xs[j + 1]
        else:
            z = 0.5 * (xs[j] + xs[j + 1])
        zs[j + 1] = z
    for j in range(n):
        left = zs[j]
        right = zs[j + 1]
        d = ds[j]
        if not right > left:
            log_mass[j] = -np.inf
            continue
        u = d * (left - xs[j])
        v = d * (right - xs[j])
        if abs(d) * (right - left) < 1e-10:
            log_mass[j] = hs[j] + 0.5 * (u + v) + math.log(right - left)
        elif d > 0.0:
            log_mass[j] = hs[j] + v + math.log(-math.expm1(u - v)) - math.log(d)
        else:
            log_mass[j] = hs[j] + u + math.log(-math.expm1(v - u)) - math.log(-d)


@njit(cache=True)
def sample_log_stick(lo, hi, a, b, c, n_rows, rng):
    """An exact draw of ``t = log mu`` from ``exp(l(t))`` on ``(lo, hi)`` by adaptive
    rejection sampling (sec. 4.2.5 of Görür 2007 samples eqs. 4.51 and 4.53 by ARS).

    ``lo`` may be ``-inf`` when ``a > 0`` (the left tail then decays like ``e^{a t}``);
    ``hi <= 0`` is finite.
    """
    if not hi > lo:
        return hi
    xs = np.empty(_MAX_POINTS)
    hs = np.empty(_MAX_POINTS)
    ds = np.empty(_MAX_POINTS)
    zs = np.empty(_MAX_POINTS + 1)
    log_mass = np.empty(_MAX_POINTS)
    n = 0
    if lo == -np.inf:
        # Step left from hi until a tangent rises, so the envelope's left tail integrates.
        width = 0.1
        while True:
            x = hi - width
            h, d = log_stick_density(x, a, b, c, n_rows)
            # Points are visited right to left; store them in increasing order at the end.
            xs[n] = x
            hs[n] = h
            ds[n] = d
            n += 1
            if d > 0.0 or n == _MAX_POINTS // 2:
                break
            width *= 2.0
        for j in range(n // 2):
            xs[j], xs[n - 1 - j] = xs[n - 1 - j], xs[j]
            hs[j], hs[n - 1 - j] = hs[n - 1 - j], hs[j]
            ds[j], ds[n - 1 - j] = ds[n - 1 - j], ds[j]
    else:
        for frac in (0.15, 0.5, 0.85):
            x = lo + frac * (hi - lo)
            h, d = log_stick_density(x, a, b, c, n_rows)
            xs[n] = x
            hs[n] = h
            ds[n] = d
            n += 1
    for _ in range(100000):
        _hull_pieces(xs, hs, ds, n, lo, hi, zs, log_mass)
        # the piece, by its mass (log_mass is overwritten; the next round recomputes it)
        j = draw_from_log_weights(log_mass[:n], rng)
        left = zs[j]
        right = zs[j + 1]
        d = ds[j]
        w = rng.random()
        if abs(d) * (right - left) < 1e-10:
            t = left + w * (right - left)
        elif d > 0.0:
            t = right + math.log1p((1.0 - w) * math.expm1(d * (left - right))) / d
        else:
            t = left + math.log1p(w * math.expm1(d * (right - left))) / d
        if t < left:
            t = left
        elif t > right:
            t = right
        h, dt = log_stick_density(t, a, b, c, n_rows)
        envelope = hs[j] + ds[j] * (t - xs[j])
        if math.log(1.0 - rng.random()) <= h - envelope:
            return t
        if n < _MAX_POINTS and h > -np.inf and t > lo and t < hi:
            # Insert the rejected point to tighten the envelope.
            pos = n
            while pos > 0 and xs[pos - 1] > t:
                xs[pos] = xs[pos - 1]
                hs[pos] = hs[pos - 1]
                ds[pos] = ds[pos - 1]
                pos -= 1
            xs[pos] = t
            hs[pos] = h
            ds[pos] = dt
            n += 1
    return t  # pragma: no cover - unreachable for a log-concave density


@njit(cache=True)
def extend_sticks(Z, A, counts, sticks, n_features, chain_start, level, alpha,
                  prior_kind, prior, rng):
    """Break the stick until it falls below the slice ``level`` (Algorithm 15, eq. 4.51).

    The represented features ``chain_start .. n_features - 1`` are empty features in
    decreasing stick order (``chain_start`` is 0 for Algorithm 15, the number of active
    features for Algorithm 16, whose empty features start again from a unit stick, eq.
    4.57). Each new feature gets ``mu_k`` from eq. 4.51 given the previous stick, an empty
    column of ``Z`` and a value ``a_k`` from the prior. The last new stick is below
    ``level``.

    Returns ``(n_features, done)``: ``done`` is False when ``Z`` ran out of capacity.
    """
    N = Z.shape[0]
    cap = Z.shape[1]
    K = n_features
    previous = sticks[K - 1] if K > chain_start else 1.0
    while previous >= level:
        if K == cap:
            return K, False
        t = sample_log_stick(-np.inf, math.log(previous), alpha, float(N), alpha, N, rng)
        sticks[K] = math.exp(t)
        for n in range(N):
            Z[n, K] = 0
        counts[K] = 0
        draw_prior_feature(prior_kind, prior, A[K], rng)
        previous = sticks[K]
        K += 1
    return K, True


@njit(cache=True)
def _log_normal_cdf(z):
    """``log Phi(z)``, accurate far into the lower tail."""
    if z > -30.0:
        return math.log(0.5 * math.erfc(-z / _SQRT2))
    # Asymptotic series of the Mills ratio (relative error below 1e-12 here).
    z2 = z * z
    series = 1.0 - 1.0 / z2 + 3.0 / (z2 * z2) - 15.0 / (z2 * z2 * z2)
    return -0.5 * z2 - math.log(-z) - 0.5 * _LOG_2PI + math.log(series)


@njit(cache=True)
def _log_prior_entry(prior_kind, prior, a):
    """``log p(a_kd)`` under the feature prior (see ``_observation_kernels``)."""
    if prior_kind == PRIOR_GAUSSIAN:
        sd = prior[0]
        return -0.5 * _LOG_2PI - math.log(sd) - 0.5 * (a / sd) ** 2
    if prior_kind == PRIOR_EXPONENTIAL:
        if a < 0.0:
            return -np.inf
        return math.log(prior[0]) - prior[0] * a
    return math.log(prior[0]) if a > 0.5 else math.log1p(-prior[0])


@njit(cache=True)
def _proposal_shape(kind, prior_kind, prior, noise, residual, observed_d, d):
    """How a new feature's ``a_kd`` is proposed from the row's residual ``x_nd - (rest)``:
    ``(0, ., .)`` from the prior; ``(1, mean, sd)`` from ``N(mean, sd^2)``, the posterior of
    ``a_kd`` given the row (Gaussian prior); ``(2, mean, sd)`` from ``N(mean, sd^2)``
    truncated to ``[0, inf)``, that posterior under the exponential prior."""
    if kind == OBSERVE_GAUSSIAN and observed_d:
        var = noise[0, d]
        if prior_kind == PRIOR_GAUSSIAN:
            prior_var = prior[0] * prior[0]
            post_var = prior_var * var / (prior_var + var)
            return 1, post_var * residual / var, math.sqrt(post_var)
        if prior_kind == PRIOR_EXPONENTIAL:
            return 2, residual - prior[0] * var, math.sqrt(var)
    return 0, 0.0, 1.0


@njit(cache=True)
def _log_proposal_entry(shape, mean, sd, prior_kind, prior, a):
    if shape == 0:
        return _log_prior_entry(prior_kind, prior, a)
    u = (a - mean) / sd
    log_pdf = -0.5 * _LOG_2PI - math.log(sd) - 0.5 * u * u
    if shape == 1:
        return log_pdf
    if a < 0.0:
        return -np.inf
    return log_pdf - _log_normal_cdf(mean / sd)


@njit(cache=True)
def _new_feature_log_ratio(kind, x, observed, pred, a, sign, prior_kind, prior, noise,
                           proposal, rng):
    """``log [p(a) / q(a | residual)]`` of the feature values ``a`` of a feature that row
    ``n`` alone would have, over its entries; ``q`` is the data-driven proposal of
    :func:`update_row_features`. ``sign = +1``: ``pred`` excludes the feature and ``a`` is
    drawn from ``q`` into ``proposal`` first; ``sign = -1``: ``pred`` includes it."""
    total = 0.0
    for d in range(x.shape[0]):
        base = pred[d] if sign > 0 else pred[d] - a[d]
        shape, mean, sd = _proposal_shape(kind, prior_kind, prior, noise, x[d] - base,
                                          observed[d], d)
        if sign > 0:
            if shape == 1:
                value = mean + sd * rng.standard_normal()
            elif shape == 2:
                value = draw_nonnegative_normal(mean, sd, rng)
            else:
                value = 0.0
                if prior_kind == PRIOR_GAUSSIAN:
                    value = prior[0] * rng.standard_normal()
                elif prior_kind == PRIOR_EXPONENTIAL:
                    value = rng.exponential(1.0 / prior[0])
                else:
                    value = 1.0 if rng.random() < prior[0] else 0.0
            proposal[d] = value
            v = value
        else:
            v = a[d]
        if shape != 0:
            total += _log_prior_entry(prior_kind, prior, v) - _log_proposal_entry(
                shape, mean, sd, prior_kind, prior, v)
    return total


@njit(cache=True)
def update_row_features(kind, x, observed, z, A, pred, counts, sticks, n_features, level,
                        prior_kind, prior, noise, proposal, rng):
    """Updates of ``z_nk`` for every represented feature with ``mu_k > level`` (eq. 4.52),
    in place, visiting the features in column order; ``pred``, ``counts``, ``A`` and ``z``
    (row ``n`` of ``Z``) follow.

    ``p(z_nk = 1) : p(z_nk = 0) = mu_k f(x_n | z_nk = 1) / mu*_1 : (1 - mu_k)
    f(x_n | z_nk = 0) / mu*_0`` with ``mu* = min(1, min of the active sticks)`` (eq. 4.47):
    the two ``mu*`` differ only when no other row has feature ``k``. Features other rows
    have get this Gibbs update. A feature no other row has is updated jointly with its
    values ``a_k`` (which have their prior while the feature is empty) by
    Metropolis-Hastings: switching on proposes ``a_k`` from the posterior given row ``n``
    alone (Gaussian or non-negative Gaussian; the prior for binary features), switching
    off proposes ``a_k`` from the prior. The acceptance ratio of switching on is
    ``mu_k / mu*_1 p(a) f(x_n | a) / ((1 - mu_k) / mu*_0 f(x_n) q(a))``, which does not
    involve the old ``a_k``; switching off uses its inverse at the current ``a_k``. Görür
    (2007) draws new features' values from the prior; this proposal is what lets a new
    feature in when ``D`` is large.

    The column order must not depend on ``Z`` (a scan order that depends on the state
    being updated, such as "active features first", biases the chain): both samplers keep
    the columns in decreasing stick order, as Görür's (2007) stick-breaking representation.
    """
    K = n_features
    ll = row_log_likelihood(kind, x, observed, pred, noise)
    for k in range(K):
        mk = sticks[k]
        if not mk > level:
            continue
        zk = z[k]
        others = counts[k] - zk
        sign = 1 - 2 * zk
        log_prior_odds = stick_log_odds(mk)
        if others > 0:
            ll_flip = row_log_likelihood_shifted(kind, x, observed, pred, A[k],
                                                 float(sign), noise)
            log_odds = (ll - ll_flip if zk else ll_flip - ll) + log_prior_odds
            new = draw_binary(log_odds, rng)
            if new != zk:
                for d in range(pred.shape[0]):
                    pred[d] += sign * A[k, d]
                z[k] = new
                counts[k] += sign
                ll = ll_flip
            continue
        log_prior_odds = add_lowest_stick_log_ratio(log_prior_odds, k, counts, sticks, K)
        log_values = _new_feature_log_ratio(kind, x, observed, pred, A[k], sign,
                                            prior_kind, prior, noise, proposal, rng)
        if zk:
            ll_flip = row_log_likelihood_shifted(kind, x, observed, pred, A[k], -1.0, noise)
            log_accept = -(ll - ll_flip + log_prior_odds + log_values)
        else:
            ll_flip = row_log_likelihood_shifted(kind, x, observed, pred, proposal, 1.0,
                                                 noise)
            log_accept = ll_flip - ll + log_prior_odds + log_values
        if log_accept >= 0.0 or rng.random() < math.exp(log_accept):
            if zk:
                for d in range(pred.shape[0]):
                    pred[d] -= A[k, d]
                draw_prior_feature(prior_kind, prior, A[k], rng)
            else:
                for d in range(pred.shape[0]):
                    A[k, d] = proposal[d]
                    pred[d] += proposal[d]
            z[k] = 1 - zk
            counts[k] += sign
            ll = ll_flip


@njit(cache=True)
def draw_level(sticks, counts, n_features, rng):
    """The slice ``s ~ Uniform(0, mu*)``, ``mu* = min(1, min of the active sticks)``
    (eqs. 4.46-4.47, 4.58)."""
    lowest = 1.0
    for k in range(n_features):
        if counts[k] > 0 and sticks[k] < lowest:
            lowest = sticks[k]
    u = rng.random()
    while u == 0.0:
        u = rng.random()
    return u * lowest


@njit(cache=True)
def sweep_ordered(X, observed, Z, A, pred, counts, sticks, n_features, start_row, alpha,
                  kind, noise, prior_kind, prior, rng):
    """Algorithm 15 from row ``start_row`` on: per row a new slice, the stick broken until
    it is below the slice, then :func:`update_row_features`; once every row is done, the
    empty features after the last active one are dropped and every stick is redrawn
    (:func:`update_ordered_sticks`).

    Returns ``(n_features, next_row)``; ``next_row < N`` means ``Z`` needs more capacity
    (call again from that row once it has grown).
    """
    N = X.shape[0]
    K = n_features
    proposal = np.empty(X.shape[1])
    for n in range(start_row, N):
        level = draw_level(sticks, counts, K, rng)
        K, done = extend_sticks(Z, A, counts, sticks, K, np.int64(0), level, alpha, prior_kind,
                                prior, rng)
        if not done:
            return K, n
        update_row_features(kind, X[n], observed[n], Z[n], A, pred[n], counts, sticks, K,
                            level, prior_kind, prior, noise, proposal, rng)
    while K > 0 and counts[K - 1] == 0:
        K -= 1
    update_ordered_sticks(sticks, counts, K, alpha, N, rng)
    return K, N


@njit(cache=True)
def update_ordered_sticks(sticks, counts, n_features, alpha, n_rows, rng):
    """Each stick from its conditional in turn (Algorithm 15): eq. 4.53,
    ``mu^{m-1} (1-mu)^{N-m}`` on ``[mu_{k+1}, mu_{k-1}]``, for all but the last; the last
    from eq. 4.51 times its column's likelihood, ``mu^{alpha+m-1} (1-mu)^{N-m}
    exp(alpha sum_i (1-mu)^i / i)`` on ``[0, mu_{K-1}]``."""
    K = n_features
    for k in range(K):
        hi = math.log(sticks[k - 1]) if k > 0 else 0.0
        m = float(counts[k])
        b = n_rows - m
        if k < K - 1:
            lo = math.log(sticks[k + 1])
            t = sample_log_stick(lo, hi, m, b, 0.0, n_rows, rng)
        else:
            t = sample_log_stick(-np.inf, hi, alpha + m, b, alpha, n_rows, rng)
        sticks[k] = math.exp(t)
