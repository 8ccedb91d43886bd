"""Small numba kernels against their plain NumPy/SciPy references."""

import numpy as np
import pytest
from scipy.stats import multivariate_normal, poisson

from sklearn_ibp.likelihoods import feature_posterior
from sklearn_ibp.solvers._draw_kernels import (
    add_lowest_stick_log_ratio,
    draw_binary,
    draw_from_log_weights,
    log_poisson_table,
    log_poisson_values,
    log_prior_odds,
    random_order,
)
from sklearn_ibp.solvers.ibp._accelerated_kernels import refresh_posterior, window_log_density


@pytest.mark.parametrize("w", [1, 3])
def test_window_log_density(w):
    rng = np.random.default_rng(0)
    B = rng.normal(size=(w, w))
    C = B @ B.T + np.eye(w)
    E = rng.normal(size=(w, 4))
    expected = sum(multivariate_normal(np.zeros(w), C).logpdf(E[:, d]) for d in range(4))
    assert window_log_density(C, E, w) == pytest.approx(expected)


def test_refresh_posterior_matches_feature_posterior():
    rng = np.random.default_rng(1)
    Z = (rng.random((30, 5)) < 0.4).astype(float)
    X = rng.normal(size=(30, 3))
    cov = np.zeros((8, 8))
    mean = np.zeros((8, 3))
    gram = np.zeros((8, 8))
    cross = np.zeros((8, 3))
    gram[:5, :5] = Z.T @ Z
    cross[:5] = Z.T @ X
    refresh_posterior(gram, cross, cov, mean, 5, 0.5**2, 1.2**2)
    m, c = feature_posterior(X, Z, 0.5, 1.2)
    np.testing.assert_allclose(mean[:5], m, atol=1e-12)
    np.testing.assert_allclose(cov[:5, :5], c, atol=1e-12)


def test_prior_terms():
    np.testing.assert_allclose(log_poisson_table(0.3, 6), poisson.logpmf(np.arange(7), 0.3))
    assert log_prior_odds(3, 10, 1.0) == pytest.approx(np.log(3 / 7))
    assert log_prior_odds(3, 10, 2.5) == pytest.approx(np.log(3 / (2.5 + 9 - 3)))


@pytest.mark.parametrize("rate", [1e-3, 0.3, 1.7, 4.0, 123.456])
def test_log_poisson_values_is_the_kernel_table_bit_for_bit(rate):
    """The Python twin the accelerated sampler passes to its row kernel (issue 22) gives
    the kernel's numbers exactly (CPython's own math.lgamma would not: it differs from the
    C library's in the last bits from lgamma(4.0) on)."""
    for k_max in (0, 4, 40):
        expected = log_poisson_table(rate, np.int64(k_max))
        np.testing.assert_array_equal(log_poisson_values(rate, k_max), expected)


def test_random_order_is_a_permutation():
    out = np.full(9, -1, dtype=np.int64)
    random_order(7, out, np.random.default_rng(3))
    assert sorted(out[:7]) == list(range(7)) and list(out[7:]) == [-1, -1]


def test_discrete_draws():
    rng = np.random.default_rng(2)
    weights = np.log(np.array([0.1, 0.6, 0.3]))
    draws = np.array([draw_from_log_weights(weights.copy(), rng) for _ in range(30000)])
    freq = np.bincount(draws, minlength=3) / draws.size
    np.testing.assert_allclose(freq, [0.1, 0.6, 0.3], atol=0.01)
    ones = np.mean([draw_binary(np.log(0.25 / 0.75), rng) for _ in range(30000)])
    assert ones == pytest.approx(0.25, abs=0.01)
    assert draw_binary(-800.0, rng) == 0


def test_lowest_stick_log_ratio():
    """``log(mu*_0 / mu*_1)`` (Görür 2007, eq. 4.47) against ``min`` over the other live
    sticks: added only when ``mu_k`` is below them; dead sticks and sticks past
    ``n_features`` do not count."""
    sticks = np.array([0.9, 0.6, 0.3, 0.2, 0.05])
    counts = np.array([2, 0, 1, 1, 3])
    for k in range(4):
        for n_features in (3, 4):
            others = [sticks[j] for j in range(n_features) if j != k and counts[j] > 0]
            mu0 = min([1.0, *others])
            expected = 0.5 + (np.log(mu0) - np.log(sticks[k]) if sticks[k] < mu0 else 0.0)
            got = add_lowest_stick_log_ratio(0.5, k, counts, sticks, n_features)
            assert got == pytest.approx(expected, abs=1e-14), (k, n_features)
    assert add_lowest_stick_log_ratio(0.5, 3, counts, sticks, 4) == pytest.approx(
        0.5 + np.log(0.3 / 0.2))


@pytest.mark.parametrize("rate, k_max", [(2.0, 3), (50.0, 3), (1e6, 2)])
def test_truncated_poisson_is_exact_and_bounded(rate, k_max):
    # Rate 2: rejection accepts; rates 50 and 1e6: k_max is far in the lower tail, where
    # rejection alone never returned (a two-row NoisyOrHierarchy hung), so the draw is
    # by inversion. Both must give Poisson(rate) conditioned on k <= k_max.
    from sklearn_ibp.solvers._draw_kernels import truncated_poisson

    rng = np.random.default_rng(0)
    draws = np.array([truncated_poisson(rate, k_max, rng) for _ in range(4000)])
    assert draws.min() >= 0 and draws.max() <= k_max
    log_p = poisson.logpmf(np.arange(k_max + 1), rate)
    expected = np.exp(log_p - log_p.max())
    expected /= expected.sum()
    observed = np.bincount(draws, minlength=k_max + 1) / draws.size
    # 4000 draws: a binomial standard error of at most 0.008; 0.035 is over 4 of them.
    np.testing.assert_allclose(observed, expected, atol=0.035)
