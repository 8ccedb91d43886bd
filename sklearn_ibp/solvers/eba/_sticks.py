"""The empty aspects' sticks of the EBA slice sampler, in Python (Görür 2007, sec. 4.2.6).

Once per sweep the semi-ordered slice sampler appends empty aspects whose sticks follow
eq. 4.57 until one falls below the slice. The package's numba kernel for that,
:func:`sklearn_ibp.solvers.ibp_explicit._slice_kernels.extend_sticks` (adaptive rejection
sampling of ``t = log mu``, Gilks and Wild 1992), costs a first fit of
:class:`~sklearn_ibp.InfiniteEBA` about 3 CPU seconds of compilation while it runs a few
times per sweep. These functions are the same algorithm in plain Python: the same
arithmetic in the same order, the same calls to the generator, so the chain is the same bit
for bit (``tests/solvers/eba/test_eba_sticks.py`` compares them with the kernel).
"""

from __future__ import annotations

import math

from .._draw_kernels import draw_log_weight_index

#: Largest number of abscissae of the adaptive rejection envelope (as the kernel).
_MAX_POINTS = 64


def _log_stick_density(t, a, b, c, n_rows):
    """``l(t)`` and ``l'(t)`` of the stick density in ``t = log mu``:
    ``a t + b log(1 - e^t) + c sum_{i<=N} (1 - e^t)^i / i`` (``a, b, c >= 0``)."""
    mu = math.exp(t)
    one_minus = -math.expm1(t)
    if one_minus <= 0.0:
        if b > 0.0:
            return -math.inf, -math.inf
        one_minus = 0.0
    value = a * t
    slope = a
    if b > 0.0:
        value += b * math.log(one_minus)
        slope -= b * mu / one_minus
    if c > 0.0:
        power = 1.0
        total = 0.0
        for i in range(1, n_rows + 1):
            power *= one_minus
            total += power / i
        value += c * total
        slope -= c * (1.0 - power)
    return value, slope


def _hull_pieces(xs, hs, ds, lo, hi):
    """Breakpoints of the tangent envelope through the points ``xs`` and the log mass of
    each of its pieces."""
    n = len(xs)
    zs = [lo] * (n + 1)
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
    log_mass = [0.0] * n
    for j in range(n):
        left = zs[j]
        right = zs[j + 1]
        d = ds[j]
        if not right > left:
            log_mass[j] = -math.inf
            continue
        u = d * (left - xs[j])
        v = d * (right - xs[j])
        if abs(d) * (right - left) < 1e-10:
            log_mass[j] = hs[j] + 0.5 * (u + v) + math.log(right - left)
        elif d > 0.0:
            log_mass[j] = hs[j] + v + math.log(-math.expm1(u - v)) - math.log(d)
        else:
            log_mass[j] = hs[j] + u + math.log(-math.expm1(v - u)) - math.log(-d)
    return zs, log_mass


def _sample_log_stick_left_open(hi, a, b, c, n_rows, rng):
    """An exact draw of ``t = log mu`` from ``exp(l(t))`` on ``(-inf, hi)`` by adaptive
    rejection sampling (``a > 0``: the left tail decays like ``e^{a t}``)."""
    xs, hs, ds = [], [], []
    width = 0.1
    while True:
        x = hi - width
        h, d = _log_stick_density(x, a, b, c, n_rows)
        xs.append(x)
        hs.append(h)
        ds.append(d)
        if d > 0.0 or len(xs) == _MAX_POINTS // 2:
            break
        width *= 2.0
    xs.reverse()
    hs.reverse()
    ds.reverse()
    t = hi
    for _ in range(100000):
        zs, log_mass = _hull_pieces(xs, hs, ds, -math.inf, hi)
        j = draw_log_weight_index(log_mass, rng)
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
        h, dt = _log_stick_density(t, a, b, c, n_rows)
        envelope = hs[j] + ds[j] * (t - xs[j])
        if math.log(1.0 - rng.random()) <= h - envelope:
            return t
        if len(xs) < _MAX_POINTS and h > -math.inf and t > -math.inf and t < hi:
            # Insert the rejected point to tighten the envelope.
            pos = len(xs)
            while pos > 0 and xs[pos - 1] > t:
                pos -= 1
            xs.insert(pos, t)
            hs.insert(pos, h)
            ds.insert(pos, dt)
    return t  # pragma: no cover - unreachable for a log-concave density


def extend_empty_sticks(Z, W, counts, sticks, n_features, chain_start, level, alpha, rng):
    """Break the stick until it falls below the slice ``level`` (eq. 4.57): the EBA
    solver's twin of the kernel ``extend_sticks`` with the ``Gamma(1, 1)`` (exponential)
    weight prior. Each new aspect gets its stick given the previous one, an empty column of
    ``Z``, a zero count and an ``Exponential(1)`` weight ``W[k, 0]``.

    Returns ``(n_features, done)``: ``done`` is False when ``Z`` ran out of capacity.
    """
    N = Z.shape[0]
    cap = Z.shape[1]
    K = int(n_features)
    previous = float(sticks[K - 1]) if K > chain_start else 1.0
    alpha = float(alpha)
    while previous >= level:
        if K == cap:
            return K, False
        t = _sample_log_stick_left_open(math.log(previous), alpha, float(N), alpha, N, rng)
        sticks[K] = math.exp(t)
        Z[:, K] = 0
        counts[K] = 0
        W[K, 0] = rng.exponential(1.0)
        previous = float(sticks[K])
        K += 1
    return K, True
