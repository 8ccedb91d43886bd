"""Kernel-level checks of the hierarchy sampler's own draws."""

import math

import numpy as np
from numba import njit

from sklearn_ibp.solvers._draw_kernels import truncated_poisson
from sklearn_ibp.solvers.hierarchy._hierarchy_kernels import _truncated_poisson


@njit
def _draws(rate, k_max, n, rng):
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        out[i] = _truncated_poisson(rate, k_max, rng)
    return out


@njit
def _shared_draws(rate, k_max, n, rng):
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        out[i] = truncated_poisson(rate, k_max, rng)
    return out


def test_truncated_poisson_below_rate_ten_gives_the_shared_kernels_draws():
    # Written out without Generator.poisson, the draws are the same, bit for bit, and so
    # is the stream after them.
    for rate, k_max in [(0.0, 6), (0.004, 4), (0.3, 6), (2.5, 6), (6.0, 2), (9.9, 6)]:
        rng_own, rng_shared = np.random.default_rng(11), np.random.default_rng(11)
        np.testing.assert_array_equal(_draws(rate, k_max, 3000, rng_own),
                                      _shared_draws(rate, k_max, 3000, rng_shared))
        assert rng_own.random() == rng_shared.random()


def test_truncated_poisson_from_rate_ten_follows_the_truncated_distribution():
    # From rate 10 on the draw is by inversion: chi-square against the truncated pmf, with
    # 5 and 2 degrees of freedom; 20.5 is the 0.999 quantile at 5 (13.8 at 2). At this
    # seed the statistics are 5.0 and 4.9, a fourfold margin; a draw off by one in k
    # (or from the untruncated Poisson) gives thousands.
    for rate, k_max in [(10.0, 5), (40.0, 3)]:
        draws = _draws(rate, k_max, 20000, np.random.default_rng(3))
        assert draws.min() >= 0 and draws.max() <= k_max
        log_p = np.array([k * math.log(rate) - math.lgamma(k + 1.0) for k in range(k_max + 1)])
        p = np.exp(log_p - log_p.max())
        p /= p.sum()
        counts = np.bincount(draws, minlength=k_max + 1)
        expected = p * draws.size
        keep = expected > 5
        chi2 = float(np.sum((counts[keep] - expected[keep]) ** 2 / expected[keep]))
        assert chi2 < 20.5
