"""The IBP prior: eq. 2.1 / C.1 normalise, the buffet draws match them, helpers behave."""

import numpy as np
import pytest
from scipy.stats import poisson

from sklearn_ibp.priors.ibp import (
    existing_feature_log_odds,
    expected_n_features,
    harmonic_rate,
    ibp_log_prob,
    left_order,
    new_feature_rate,
    sample_alpha_posterior,
    sample_ibp,
)
from tests._enumeration import enumerate_prior, history_key


@pytest.mark.parametrize("n_rows, alpha, beta", [(3, 0.7, 1.0), (4, 0.5, 2.0), (3, 1.2, 0.5)])
def test_log_prob_sums_to_one_over_classes(n_rows, alpha, beta):
    max_features = 7
    probs, total = enumerate_prior(n_rows, alpha, max_features, beta)
    # Left-ordered classes with at most max_features columns hold exactly the Poisson mass
    # of K <= max_features, K ~ Poisson(alpha sum_n beta / (beta + n - 1)).
    assert total == pytest.approx(
        poisson.cdf(max_features, expected_n_features(n_rows, alpha, beta)), rel=1e-10
    )
    # ibp_log_prob agrees with the enumeration class by class.
    for key in list(probs)[:: max(1, len(probs) // 200)]:
        Z = np.array([[(h >> (n_rows - 1 - n)) & 1 for h in key] for n in range(n_rows)])
        Z = Z.reshape(n_rows, len(key))
        assert np.exp(ibp_log_prob(Z, alpha, beta)) == pytest.approx(probs[key] * total)


def test_buffet_draws_match_class_probabilities():
    n_rows, alpha = 3, 1.0
    probs, _ = enumerate_prior(n_rows, alpha, 8)
    rng = np.random.RandomState(0)
    n_draws = 20000
    counts = {}
    for _ in range(n_draws):
        key = history_key(sample_ibp(n_rows, alpha, random_state=rng))
        counts[key] = counts.get(key, 0) + 1
    for key, p in sorted(probs.items(), key=lambda kv: -kv[1])[:15]:
        se = np.sqrt(p * (1 - p) / n_draws)
        assert abs(counts.get(key, 0) / n_draws - p) < 4 * se, key


def test_two_parameter_buffet_feature_count():
    alpha, beta, n_rows = 2.0, 5.0, 30
    rng = np.random.RandomState(1)
    ks = [sample_ibp(n_rows, alpha, beta, rng).shape[1] for _ in range(3000)]
    expected = expected_n_features(n_rows, alpha, beta)
    assert abs(np.mean(ks) - expected) < 4 * np.sqrt(expected / len(ks))  # K is Poisson
    assert expected > expected_n_features(n_rows, alpha, 1.0)  # beta > 1 spreads features


def test_left_order_and_invariance_to_column_permutation():
    Z = np.array([[0, 1, 0, 1], [1, 1, 0, 0], [1, 0, 0, 1]])
    lof = left_order(Z)
    assert lof.shape == (3, 3)  # the empty column is gone
    np.testing.assert_array_equal(lof, [[1, 1, 0], [1, 0, 1], [0, 1, 1]])
    assert ibp_log_prob(Z, 1.3) == pytest.approx(ibp_log_prob(Z[:, [3, 2, 0, 1]], 1.3))
    with pytest.raises(ValueError, match="2-d"):
        left_order(np.ones(3))


def test_conditionals_and_rates():
    assert harmonic_rate(4) == pytest.approx(1 + 1 / 2 + 1 / 3 + 1 / 4)
    assert new_feature_rate(10, 2.0) == pytest.approx(2.0 / 10)
    assert new_feature_rate(10, 2.0, beta=3.0) == pytest.approx(2.0 * 3.0 / 12.0)
    odds = existing_feature_log_odds([0, 3, 9], n_samples=10)
    assert odds[0] == -np.inf
    assert odds[1] == pytest.approx(np.log(3 / 7))  # P(z = 1) = m / N, m counting others
    assert odds[2] == pytest.approx(np.log(9 / 1))  # every other row has it


def test_alpha_posterior_moments():
    rng = np.random.default_rng(0)
    draws = np.array([sample_alpha_posterior(7, 50, rng) for _ in range(20000)])
    shape, rate = 1 + 7, 1 + harmonic_rate(50)
    assert draws.mean() == pytest.approx(shape / rate, rel=0.02)
    assert draws.var() == pytest.approx(shape / rate**2, rel=0.05)
