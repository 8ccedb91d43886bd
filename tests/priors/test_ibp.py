"""The IBP prior: eq. 2.1 / C.1 normalise, the buffet draws match them, helpers behave."""

import numpy as np
import pytest
from scipy.stats import poisson

from sklearn_ibp.priors.ibp import (
    existing_feature_log_odds,
    expected_n_features,
    harmonic_rate,
    ibp_log_prob,
    ibp_truncation_bound,
    ibp_truncation_bound_heuristic,
    ibp_truncation_bound_log,
    left_order,
    new_feature_rate,
    sample_alpha_posterior,
    sample_ibp,
    smallest_truncation,
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


# -- truncation bounds (seed 000 sec. 6.4) ------------------------------------------------


@pytest.fixture(scope="module")
def truncation_monte_carlo():
    """Monte Carlo estimate of ``P(some z_nk = 1 with k > K)`` for N = 30, alpha = 5, K =
    0..40 (the setting of the seed's Fig. 6.1): sticks ``pi_k = prod_{j<=k} v_j``,
    ``v_j ~ Beta(alpha, 1)``, 400 of them (``E[pi_400] = (5/6)^400 ~ 1e-32``), and
    ``P(no row has a feature beyond K | pi) = prod_{k>K} (1 - pi_k)^N``."""
    N, alpha, draws = 30, 5.0, 20000
    rng = np.random.default_rng(0)
    log_pi = np.cumsum(np.log(rng.beta(alpha, 1.0, size=(draws, 400))), axis=1)
    log_keep = np.log1p(-np.exp(log_pi))
    # beyond[:, K] = sum over the features K+1, K+2, ... (0-based columns K, K+1, ...)
    beyond = np.cumsum(log_keep[:, ::-1], axis=1)[:, ::-1]
    none_beyond = np.exp(N * beyond[:, :41])
    return N, alpha, 1.0 - none_beyond.mean(axis=0), none_beyond.std(axis=0) / np.sqrt(draws)


def test_truncation_bounds_hold_against_monte_carlo(truncation_monte_carlo):
    """Eq. 6.9 and the log bound are at least the probability they bound, for every K
    from 1 to 40; they decrease geometrically in K. Measured: at K = 20, 30, 40 the
    Monte Carlo values are 0.844, 0.368, 0.088 and eq. 6.9 gives 0.980, 0.468, 0.097."""
    N, alpha, mc, se = truncation_monte_carlo
    K = np.arange(1, 41)
    for bound in (ibp_truncation_bound(N, alpha, K), ibp_truncation_bound_log(N, alpha, K)):
        assert np.all(bound >= mc[1:] - 4 * se[1:] - 1e-12)
        assert np.all(np.diff(bound) <= 0)
    # Not loose by much where it matters: within 0.02 of the estimate once below 0.1.
    tail = K >= 40
    assert np.all(ibp_truncation_bound(N, alpha, K)[tail] - mc[1:][tail] < 0.02)
    # The log bound of sec. 6.4.1 and eq. 6.9 agree to a few per cent.
    np.testing.assert_allclose(ibp_truncation_bound_log(N, alpha, K[19:]),
                               ibp_truncation_bound(N, alpha, K[19:]), rtol=0.05)


def test_truncation_heuristic_underestimates_at_large_alpha(truncation_monte_carlo):
    """The seed's zeta heuristic (sec. 6.4.1) is an approximation, not a bound: at N = 30,
    alpha = 5 it is far below the Monte Carlo probability (measured 0.13 against 0.84 at
    K = 20), which is why the solvers choose truncations from eq. 6.9."""
    N, alpha, mc, _ = truncation_monte_carlo
    heuristic = ibp_truncation_bound_heuristic(N, alpha, np.arange(20, 41, 10))
    assert np.all(heuristic < 0.5 * mc[20::10])
    assert np.all(np.diff(heuristic) < 0)


def test_smallest_truncation_is_minimal_and_monotone():
    for N, alpha, tol in [(30, 5.0, 1e-3), (100, 1.0, 1e-3), (1000, 2.0, 1e-2), (5, 0.1, 0.5)]:
        K = smallest_truncation(N, alpha, tol)
        assert ibp_truncation_bound(N, alpha, K) <= tol
        assert K == 0 or ibp_truncation_bound(N, alpha, K - 1) > tol
    assert smallest_truncation(30, 5.0) == 66  # N alpha (5/6)^66 = 0.00089 <= 1e-3 < 0.0011
    Ks = [smallest_truncation(N, 2.0) for N in (10, 100, 1000)]
    assert Ks == sorted(Ks) and Ks[0] < Ks[-1]
    Ks = [smallest_truncation(100, a) for a in (0.5, 1.0, 2.0, 5.0)]
    assert Ks == sorted(Ks) and Ks[0] < Ks[-1]


@pytest.mark.parametrize(
    ("args", "match"),
    [((0, 1.0, 3), "n_samples"), ((10.5, 1.0, 3), "n_samples"), ((10, -1.0, 3), "alpha"),
     ((10, 1.0, -1), "n_features"), ((10, 1.0, 2.5), "n_features")],
)
def test_truncation_bound_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        ibp_truncation_bound(*args)


def test_smallest_truncation_bad_tol():
    for tol in (0.0, 1.0, -0.1):
        with pytest.raises(ValueError, match="tol"):
            smallest_truncation(10, 1.0, tol)
