"""The IBP prior: eq. 2.1 / C.1 normalise, the buffet draws match them, helpers behave."""

import numpy as np
import pytest
from scipy.stats import poisson

from sklearn_ibp.exceptions import AllocationTooLargeError
from sklearn_ibp.priors.ibp import (
    existing_feature_log_odds,
    expected_n_features,
    harmonic_rate,
    ibp_log_prob,
    ibp_truncation_bound,
    ibp_truncation_bound_heuristic,
    ibp_truncation_bound_log,
    labelled_ibp_log_prob,
    left_order,
    new_feature_rate,
    sample_alpha_conditional,
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



@pytest.mark.parametrize("n_rows, n_columns, alpha, beta",
                         [(3, 3, 0.7, 1.0), (3, 4, 1.3, 1.0), (2, 5, 0.9, 2.0)])
def test_labelled_log_prob_spreads_each_class_over_its_labelled_versions(
        n_rows, n_columns, alpha, beta):
    """Summed over every labelled ``n_rows x n_columns`` binary matrix of a class, the
    labelled probability is the class's ``P([Z])``; over all of them, ``P(K <= n_columns)``
    (the target of the exact parallel sampler, ``correction="metropolis"``)."""
    n_cells = n_rows * n_columns
    cells = (np.arange(2**n_cells)[:, None] >> np.arange(n_cells)) & 1
    by_class = {}
    for bits in cells:
        Z = bits.reshape(n_rows, n_columns)
        p = np.exp(labelled_ibp_log_prob(Z, alpha, beta, n_columns))
        key = history_key(Z)
        by_class[key] = by_class.get(key, 0.0) + p
        # Column order and width up to n_columns do not matter.
        assert labelled_ibp_log_prob(Z[:, ::-1], alpha, beta) == pytest.approx(np.log(p))
    for key, p in by_class.items():
        Z = np.array([[(h >> (n_rows - 1 - n)) & 1 for h in key] for n in range(n_rows)])
        Z = Z.reshape(n_rows, len(key))
        assert p == pytest.approx(np.exp(ibp_log_prob(Z, alpha, beta)), rel=1e-10)
        assert labelled_ibp_log_prob(Z, alpha, beta, n_columns) == pytest.approx(
            np.log(p) - np.log(np.prod(np.arange(n_columns - len(key) + 1, n_columns + 1))
                               / _identical_column_arrangements(key)))
    assert sum(by_class.values()) == pytest.approx(
        poisson.cdf(n_columns, expected_n_features(n_rows, alpha, beta)), rel=1e-10
    )
    with pytest.raises(ValueError, match="3 non-empty columns, more than its n_columns=2"):
        labelled_ibp_log_prob(np.eye(3), alpha, beta, n_columns=2)


def _identical_column_arrangements(key):
    """``prod_h K_h!`` for a class key (its repeated histories)."""
    from math import factorial

    return float(np.prod([factorial(key.count(h)) for h in set(key)]))


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


@pytest.mark.parametrize("make_rng", [np.random.default_rng, np.random.RandomState])
def test_alpha_conditional_is_one_gamma_draw(make_rng):
    """``Gamma(a + K, b + r)``: the one draw the solvers made inline before it was written
    once, bit for bit, from a Generator or a RandomState; the posterior given ``Z`` is it
    with ``r`` the two-parameter harmonic rate."""
    K, r, a, b = 5, 2.75, 2.0, 0.5
    expected = make_rng(3).gamma(a + K, 1.0 / (b + r))
    assert sample_alpha_conditional(K, r, make_rng(3), prior_shape=a, prior_rate=b) == expected
    rate = harmonic_rate(20, 2.0)
    assert (sample_alpha_posterior(K, 20, make_rng(4), beta=2.0, prior_shape=a, prior_rate=b)
            == sample_alpha_conditional(K, rate, make_rng(4), prior_shape=a, prior_rate=b))
    assert isinstance(sample_alpha_conditional(K, r, 0), float)


# -- truncation bounds (Doshi-Velez 2009, sec. 6.4) ------------------------------------------------

TRUNCATION_N, TRUNCATION_ALPHA = 30, 5.0  # the setting of Doshi-Velez 2009, Fig. 6.1


@pytest.fixture(scope="module")
def truncation_monte_carlo():
    """Monte Carlo estimate of ``P(some z_nk = 1 with k > K)`` for N = 30, alpha = 5, K =
    0..40 (the setting of Doshi-Velez 2009, Fig. 6.1): sticks ``pi_k = prod_{j<=k} v_j``,
    ``v_j ~ Beta(alpha, 1)``, 400 of them (``E[pi_400] = (5/6)^400 ~ 1e-32``), and
    ``P(no row has a feature beyond K | pi) = prod_{k>K} (1 - pi_k)^N``; with its
    standard error."""
    N, alpha, draws = TRUNCATION_N, TRUNCATION_ALPHA, 20000
    rng = np.random.default_rng(0)
    log_pi = np.cumsum(np.log(rng.beta(alpha, 1.0, size=(draws, 400))), axis=1)
    log_keep = np.log1p(-np.exp(log_pi))
    # beyond[:, K] = sum over the features K+1, K+2, ... (0-based columns K, K+1, ...)
    beyond = np.cumsum(log_keep[:, ::-1], axis=1)[:, ::-1]
    none_beyond = np.exp(N * beyond[:, :41])
    return 1.0 - none_beyond.mean(axis=0), none_beyond.std(axis=0) / np.sqrt(draws)


def truncation_probability_quadrature(N, alpha, K):
    """``P(some z_nk = 1 with k > K)`` by one-dimensional quadrature, independent of the
    Monte Carlo: given ``pi_K`` the later sticks are a Poisson process of rate ``alpha /
    x`` on ``[0, pi_K]`` (sec. 6.4.2), so ``P(none beyond K | pi_K) = exp(-alpha
    sum_{j=1}^N (1 - (1 - pi_K)^j) / j)``, and ``-log pi_K ~ Gamma(K, 1 / alpha)``."""
    from scipy import integrate, stats

    j = np.arange(1, N + 1)
    if K == 0:
        return 1.0 - np.exp(-alpha * np.sum(1.0 / j))

    def integrand(t):
        rate = np.sum(-np.expm1(j * np.log1p(-np.exp(-t))) / j) if t > 0 else np.sum(1 / j)
        return np.exp(-alpha * rate) * stats.gamma.pdf(t, K, scale=1.0 / alpha)

    return 1.0 - integrate.quad(integrand, 0.0, np.inf, limit=200, epsabs=1e-12)[0]


def test_truncation_monte_carlo_matches_quadrature(truncation_monte_carlo):
    """The Monte Carlo reference the bounds are tested against is itself right: within 4
    standard errors of the quadrature at K = 5, 10, ..., 40."""
    mc, se = truncation_monte_carlo
    for K in range(5, 41, 5):
        exact = truncation_probability_quadrature(TRUNCATION_N, TRUNCATION_ALPHA, K)
        assert abs(mc[K] - exact) <= 4 * se[K] + 1e-9, K


def test_truncation_bounds_hold_against_monte_carlo(truncation_monte_carlo):
    """Eq. 6.9 and the log bound are at least the probability they bound (which is at
    least a quarter of the L1 distance, eq. 6.8), for every K from 1 to 40; they
    decrease in K. Measured: at K = 20, 30, 40 the Monte Carlo values are 0.842, 0.370,
    0.088 and eq. 6.9 gives 0.980, 0.468, 0.097."""
    N, alpha = TRUNCATION_N, TRUNCATION_ALPHA
    mc, se = truncation_monte_carlo
    K = np.arange(1, 41)
    lk, log = ibp_truncation_bound(N, alpha, K), ibp_truncation_bound_log(N, alpha, K)
    for bound in (lk, log):
        assert bound.shape == K.shape
        assert np.all(bound >= mc[1:] - 4 * se[1:] - 1e-12)
        assert np.all(np.diff(bound) <= 0)
    # Not loose by much where it matters: within 0.02 of the estimate once below 0.1.
    assert lk[-1] - mc[40] < 0.02
    # The log bound: never below eq. 6.9 (its r = 1 term is eq. 6.9's exponent), never
    # above Doshi-Velez's (2009) formal 1 - exp(-2 N alpha rho^K), within 1% of eq. 6.9 from K = 20.
    rho = alpha / (1 + alpha)
    assert np.all(log >= lk)
    assert np.all(log <= -np.expm1(-2 * N * alpha * rho**K))
    np.testing.assert_allclose(log[19:], lk[19:], rtol=0.01)


def test_truncation_heuristic_is_far_below_the_truth_at_alpha_5(truncation_monte_carlo):
    """Doshi-Velez (2009) calls its zeta heuristic (sec. 6.4.1) "very close to the true value";
    measured at N = 30, alpha = 5 it is far below it from K = 5 on, and the ratio to
    the Monte Carlo value falls with K: 0.97 at K = 5, 0.63 at 10, 0.15 at 20, 0.057 at
    30, 0.039 at 40. Not a bound, so the solvers choose truncations from eq. 6.9."""
    N, alpha = TRUNCATION_N, TRUNCATION_ALPHA
    mc, se = truncation_monte_carlo
    K = np.arange(5, 41)
    heuristic = ibp_truncation_bound_heuristic(N, alpha, K)
    assert np.all(np.diff(heuristic) < 0)
    assert np.all(heuristic < mc[5:] - 4 * se[5:])
    ratio = heuristic / mc[5:]
    assert np.all(np.diff(ratio) < 0)
    np.testing.assert_allclose(ratio[[0, 5, 15, 25, 35]], [0.97, 0.63, 0.15, 0.057, 0.039],
                               rtol=0.1)


def test_truncation_heuristic_is_the_zeta_series():
    """``alpha^K zeta(K + 1, alpha + 1)`` (the series from r = 1) by scipy where it is
    representable and stable beyond, where ``alpha^K`` overflows."""
    from scipy.special import zeta

    K = np.arange(1, 60)
    expected = -np.expm1(-7 * 3.0**K * zeta(K + 1.0, 4.0))
    np.testing.assert_allclose(ibp_truncation_bound_heuristic(7, 3.0, K), expected,
                               rtol=1e-12)
    large = ibp_truncation_bound_heuristic(10**5, 50.0, np.array([600, 700, 800, 2000]))
    assert np.all(np.isfinite(large)) and np.all(np.diff(large) < 0) and large[-1] > 0


@pytest.mark.parametrize("bound", ["levy_khintchine", "heuristic"])
def test_smallest_truncation_is_minimal_and_monotone(bound):
    function = {"levy_khintchine": ibp_truncation_bound,
                "heuristic": ibp_truncation_bound_heuristic}[bound]
    for N, alpha, tol in [(30, 5.0, 1e-3), (100, 1.0, 1e-3), (1000, 2.0, 1e-2),
                          (5, 0.1, 0.5), (10**5, 50.0, 1e-3), (10, 1e4, 0.1)]:
        K = smallest_truncation(N, alpha, tol, bound=bound)
        assert function(N, alpha, K) <= tol
        assert K == 0 or function(N, alpha, K - 1) > tol
    for alpha in (0.5, 2.0, 5.0):
        Ks = [smallest_truncation(N, alpha, bound=bound) for N in (10, 100, 1000, 10**4)]
        assert Ks == sorted(Ks) and Ks[0] < Ks[-1]
    for N in (10, 1000):
        Ks = [smallest_truncation(N, a, bound=bound) for a in (0.5, 1.0, 2.0, 5.0, 20.0)]
        assert Ks == sorted(Ks) and Ks[0] < Ks[-1]
    for tol in (1e-1, 1e-2, 1e-4):  # smaller tolerances need more features
        assert smallest_truncation(30, 5.0, tol, bound=bound) \
            < smallest_truncation(30, 5.0, tol / 10, bound=bound)


def test_smallest_truncation_values():
    # N alpha (5/6)^66 = 0.00089 <= 1e-3 < 0.0011 = N alpha (5/6)^65
    assert smallest_truncation(30, 5.0) == 66
    assert smallest_truncation(30, 5.0, bound="heuristic") == 47
    # The heuristic asks for fewer features than eq. 6.9 guarantees when alpha >= 1; for
    # small alpha its series (Doshi-Velez's, over the features from K on, not K + 1) asks
    # for one more.
    for N, alpha in [(30, 5.0), (1000, 2.0), (100, 1.0)]:
        assert smallest_truncation(N, alpha, bound="heuristic") \
            <= smallest_truncation(N, alpha)
    assert smallest_truncation(100, 0.5, bound="heuristic") == 11
    assert smallest_truncation(100, 0.5) == 10


def test_truncated_gibbs_error_bound_is_the_eq_6_9_exponent():
    """``truncation_error_bound`` of the truncated Gibbs sampler (a union bound) is the
    exponent of eq. 6.9: ``bound = 1 - exp(-union)``."""
    from sklearn_ibp.solvers.ibp_explicit.truncated_gibbs import truncation_error_bound

    for N, alpha, K in [(5, 0.5, 10), (30, 5.0, 20), (1000, 2.0, 3)]:
        union = truncation_error_bound(N, alpha, K)
        assert union == pytest.approx(N * alpha * (alpha / (1 + alpha)) ** K, rel=1e-12)
        assert ibp_truncation_bound(N, alpha, K) == pytest.approx(-np.expm1(-union))


@pytest.mark.parametrize("function", [ibp_truncation_bound, ibp_truncation_bound_log,
                                      ibp_truncation_bound_heuristic])
@pytest.mark.parametrize(
    ("args", "match"),
    [((0, 1.0, 3), "n_samples"), ((10.5, 1.0, 3), "n_samples"), ((True, 1.0, 3), "n_samples"),
     ((10, -1.0, 3), "alpha"), ((10, np.inf, 3), "alpha"), ((10, np.nan, 3), "alpha"),
     ((10, 1.0, -1), "n_features"), ((10, 1.0, 2.5), "n_features"),
     ((10, 1.0, [3, -1]), "n_features")],
)
def test_truncation_bound_bad_input(function, args, match):
    with pytest.raises(ValueError, match=match):
        function(*args)


def test_truncation_bound_alpha_type():
    with pytest.raises(TypeError, match="alpha"):
        ibp_truncation_bound(10, "1.0", 3)


def test_smallest_truncation_bad_input():
    for tol in (0.0, 1.0, -0.1, np.nan, "0.1"):
        with pytest.raises(ValueError, match="tol"):
            smallest_truncation(10, 1.0, tol)
    with pytest.raises(ValueError, match="bound"):
        smallest_truncation(10, 1.0, bound="log")
    with pytest.raises(ValueError, match="alpha"):
        smallest_truncation(10, 0.0)
    with pytest.raises(ValueError, match="n_samples"):
        smallest_truncation(0, 1.0)


@pytest.mark.parametrize("kwargs, phrase", [
    ({"n_samples": -1, "alpha": 1.0}, "n_samples must be a non-negative integer"),
    ({"n_samples": 2.5, "alpha": 1.0}, "n_samples must be a non-negative integer"),
    ({"n_samples": 5, "alpha": 0.0}, "alpha must be a positive finite number"),
    ({"n_samples": 5, "alpha": np.inf}, "alpha must be a positive finite number"),
    ({"n_samples": 5, "alpha": 1.0, "beta": np.nan}, "beta must be a positive finite"),
])
def test_sample_ibp_refuses_bad_arguments(kwargs, phrase):
    with pytest.raises(ValueError, match=phrase):
        sample_ibp(random_state=0, **kwargs)


def test_sample_ibp_checks_its_allocation_first(monkeypatch):
    # alpha = 1e6 over 1000 rows expects about 7.5 million features: a 7.5 GB int8 matrix
    # built from Python lists; refused before the first row is drawn.
    monkeypatch.setenv("SKLEARN_IBP_MAX_MEMORY", "64M")
    with pytest.raises(AllocationTooLargeError, match="lower alpha"):
        sample_ibp(1000, 1e6, random_state=0)
    assert sample_ibp(20, 3.0, random_state=0).shape[0] == 20  # small draws pass
