"""Correlated feature hierarchies (Doshi-Velez 2009, ch. 7): draws, expectations, the eq. 7.4 bound,
and the log prior normalised by enumeration."""

import math
from itertools import combinations_with_replacement, permutations

import numpy as np
import pytest
from scipy.special import gammaln
from scipy.stats import chi2_contingency, poisson

from sklearn_ibp.priors import (
    crp_log_prob,
    expected_n_categories,
    expected_n_features_hierarchy,
    feature_count_bound,
    hierarchy_log_prob,
    ibp_log_prob,
    sample_hierarchy,
)
from sklearn_ibp.priors.ibp import harmonic_rate

UPPERS = ["dp", "ibp"]


def _harmonic(n):
    return float(np.sum(1.0 / np.arange(1, n + 1))) if n else 0.0


# -- draws against the expectations ------------------------------------------------------


# IBP draws of C cost N * L uniforms each: fewer of them for N = 1000.
N_DRAWS = {
    ("dp", 10): 3000,
    ("dp", 100): 3000,
    ("dp", 1000): 2000,
    ("ibp", 10): 3000,
    ("ibp", 100): 2000,
    ("ibp", 1000): 400,
}


@pytest.mark.parametrize("upper", UPPERS)
@pytest.mark.parametrize("n_samples", [10, 100, 1000])
def test_draws_match_expected_counts_and_stay_below_the_bound(upper, n_samples):
    alpha_c, alpha_m = 0.5, 2.0
    n_draws = N_DRAWS[upper, n_samples]
    rng = np.random.default_rng(n_samples)
    n_categories, n_features = np.empty(n_draws), np.empty(n_draws)
    for i in range(n_draws):
        C, M, _ = sample_hierarchy(n_samples, alpha_c, alpha_m, upper, random_state=rng)
        n_categories[i], n_features[i] = C.shape[1], M.shape[1]
    expected_k = expected_n_features_hierarchy(n_samples, alpha_c, alpha_m, upper)
    expected_l = expected_n_categories(n_samples, alpha_c, upper)
    se_k = n_features.std(ddof=1) / math.sqrt(n_draws)
    se_l = n_categories.std(ddof=1) / math.sqrt(n_draws)
    assert abs(n_features.mean() - expected_k) < 4 * se_k
    assert abs(n_categories.mean() - expected_l) < 4 * se_l
    bound = feature_count_bound(n_samples, alpha_c, alpha_m, upper)
    assert expected_k < bound
    assert n_features.mean() + se_k < bound


def test_feature_count_grows_like_log_log_n():
    for upper in UPPERS:
        e10, e3, e5 = (expected_n_features_hierarchy(n, 1.0, 2.0, upper) for n in (10, 1000, 10**5))
        b10, b3, b5 = (feature_count_bound(n, 1.0, 2.0, upper) for n in (10, 1000, 10**5))
        # Equal steps in log N (x100 each), shrinking increments: the leading term
        # alpha_M log(alpha_C log N) grows by log(11.5 / 6.9) = 0.51 on the second step
        # against log(6.9 / 2.3) = 1.10 on the first, a ratio of 0.46; a log N growth would
        # give equal increments.
        assert 0 < e5 - e3 < 0.7 * (e3 - e10)
        assert 0 < b5 - b3 < 0.7 * (b3 - b10)
        assert e5 < b5 and e3 < b3 and e10 < b10


def test_harmonic_number_bound_of_eq_7_4():
    n = np.arange(0, 10**6 + 1)
    harmonic = np.concatenate([[0.0], np.cumsum(1.0 / n[1:])])
    gap = harmonic - np.log1p(n)  # a_n = H_n - log(n + 1): 0 at n = 0, increasing to gamma
    assert gap[0] == 0.0
    assert np.all(np.diff(gap) > 0)
    assert np.all(gap < np.euler_gamma)
    assert np.euler_gamma - gap[-1] < 1e-6  # and it is the best constant
    # The bound holds for every setting, including the edges N = 0 and N = 1.
    for upper in UPPERS:
        for n_samples in (0, 1, 2, 7, 50, 3000):
            for alpha_c in (0.05, 1.0, 30.0):
                exact = expected_n_features_hierarchy(n_samples, alpha_c, 1.3, upper)
                assert exact <= feature_count_bound(n_samples, alpha_c, 1.3, upper)
    assert expected_n_features_hierarchy(0, 1.0, 1.0, "dp") == 0.0
    # One row has one category under the DP: E[N_f] = alpha_M H_1.
    assert expected_n_features_hierarchy(1, 3.0, 1.7, "dp") == pytest.approx(1.7)


def _unsigned_stirling_first(n):
    """Row ``n`` of the unsigned Stirling numbers of the first kind, exact integers."""
    row = [1]
    for m in range(n):
        row = [
            (m * (row[k] if k < len(row) else 0)) + (row[k - 1] if k else 0)
            for k in range(len(row) + 1)
        ]
    return row


@pytest.mark.parametrize(
    "n_samples, alpha_c, alpha_m", [(1, 0.7, 1.0), (5, 0.7, 2.0), (30, 2.5, 0.8), (60, 0.1, 3.0)]
)
def test_expected_features_by_direct_summation(n_samples, alpha_c, alpha_m):
    # CRP: P(N_C = k) = |s(N, k)| alpha^k Gamma(alpha) / Gamma(alpha + N).
    stirling = _unsigned_stirling_first(n_samples)
    log_norm = gammaln(alpha_c) - gammaln(alpha_c + n_samples)
    pmf = [
        math.exp(math.log(s) + k * math.log(alpha_c) + log_norm) if s else 0.0
        for k, s in enumerate(stirling)
    ]
    assert sum(pmf) == pytest.approx(1.0, rel=1e-12)
    exact_dp = alpha_m * sum(p * _harmonic(k) for k, p in enumerate(pmf))
    assert expected_n_features_hierarchy(n_samples, alpha_c, alpha_m, "dp") == pytest.approx(
        exact_dp, rel=1e-12
    )
    # IBP: N_C ~ Poisson(alpha_C H_N) and E[H_S] = sum_{j >= 1} P(S >= j) / j.
    rate = alpha_c * harmonic_rate(n_samples)
    j = np.arange(1, 400)
    exact_ibp = alpha_m * float(np.sum(poisson.sf(j - 1, rate) / j))
    assert expected_n_features_hierarchy(n_samples, alpha_c, alpha_m, "ibp") == pytest.approx(
        exact_ibp, rel=1e-12
    )


@pytest.mark.parametrize("upper", UPPERS)
def test_expected_features_against_brute_force_monte_carlo(upper):
    n_samples, alpha_c, alpha_m, reps = 300, 1.5, 1.2, 40000
    rng = np.random.default_rng(5)
    if upper == "dp":  # customer i opens a table with probability alpha / (alpha + i - 1)
        i = np.arange(1, n_samples + 1)
        opens = rng.random((reps, n_samples)) < alpha_c / (alpha_c + i - 1)
        n_categories = opens.sum(axis=1)
    else:
        n_categories = rng.poisson(alpha_c * harmonic_rate(n_samples), size=reps)
    harmonic = np.concatenate([[0.0], np.cumsum(1.0 / np.arange(1, n_categories.max() + 1))])
    n_features = rng.poisson(alpha_m * harmonic[n_categories])
    expected = expected_n_features_hierarchy(n_samples, alpha_c, alpha_m, upper)
    assert abs(n_features.mean() - expected) < 4 * n_features.std() / math.sqrt(reps)
    assert abs(n_categories.mean() - expected_n_categories(n_samples, alpha_c, upper)) < (
        4 * n_categories.std() / math.sqrt(reps)
    )


def test_expected_features_fast_for_large_n():
    # N = 10^5 is a convolution of 10^5 Bernoullis; it must agree with its neighbours.
    values = [expected_n_features_hierarchy(n, 20.0, 1.0, "dp") for n in (99_999, 100_000)]
    assert 0 < values[1] - values[0] < 1e-3
    assert values[1] < feature_count_bound(100_000, 20.0, 1.0, "dp")


# -- structure of the draws ---------------------------------------------------------------


@pytest.mark.parametrize("upper", UPPERS)
@pytest.mark.parametrize("link", ["or", "noisy_or"])
def test_no_feature_without_an_active_parent(upper, link):
    rng = np.random.default_rng(1)
    for _ in range(300):
        C, M, Z = sample_hierarchy(12, 2.0, 2.0, upper, link, q=0.4, random_state=rng)
        assert C.dtype == M.dtype == Z.dtype == np.int8
        assert C.shape[1] == M.shape[0] and Z.shape == (12, M.shape[1])
        assert C.any(axis=0).all() and M.any(axis=0).all()
        has_parent = (C.astype(int) @ M) > 0
        assert np.all(Z <= has_parent)
        if link == "or":
            np.testing.assert_array_equal(Z, has_parent)
        if upper == "dp":
            np.testing.assert_array_equal(C.sum(axis=1), 1)


def test_noisy_or_switches_features_on_with_probability_one_minus_q_to_the_s():
    q = 0.3
    rng = np.random.default_rng(2)
    on = {1: [0, 0], 2: [0, 0]}
    for _ in range(400):
        C, M, Z = sample_hierarchy(20, 3.0, 2.0, "ibp", "noisy_or", q=q, random_state=rng)
        s = C.astype(int) @ M
        for n_parents in on:
            on[n_parents][0] += int(Z[s == n_parents].sum())
            on[n_parents][1] += int((s == n_parents).sum())
    for n_parents, (n_on, total) in on.items():
        p = 1 - q**n_parents
        assert total > 2000
        assert abs(n_on / total - p) < 4 * math.sqrt(p * (1 - p) / total)


def _draw_statistics(link, q, seed, n_draws=2500):
    rng = np.random.default_rng(seed)
    stats = np.empty((n_draws, 5), dtype=int)
    for i in range(n_draws):
        C, M, Z = sample_hierarchy(15, 1.5, 1.5, "ibp", link, q=q, random_state=rng)
        stats[i] = C.shape[1], M.shape[1], Z.any(axis=0).sum(), Z[0].sum(), Z.sum()
    return stats


def _chi2_pvalue(a, b):
    """Two-sample chi-square test of equal discrete distributions, the top 5% pooled."""
    cap = int(np.quantile(np.concatenate([a, b]), 0.95))
    values = np.arange(cap + 1)
    table = np.array([[np.sum(np.minimum(x, cap) == v) for v in values] for x in (a, b)])
    table = table[:, table.sum(axis=0) > 0]
    return chi2_contingency(table)[1]


def test_noisy_or_with_vanishing_q_is_the_or_link_in_distribution():
    hard = _draw_statistics("or", None, seed=10)
    near = _draw_statistics("noisy_or", 1e-12, seed=11)
    loose = _draw_statistics("noisy_or", 0.5, seed=12)
    names = ["L", "K", "active Z columns", "row sum", "total"]
    for j, name in enumerate(names):
        assert _chi2_pvalue(hard[:, j], near[:, j]) > 1e-3, name
    # q only acts on Z: L and K keep their law, everything read off Z shifts.
    for j, name in enumerate(names):
        p = _chi2_pvalue(hard[:, j], loose[:, j])
        assert (p > 1e-3) if j < 2 else (p < 1e-5), name


def test_draws_are_reproducible_and_inputs_checked():
    a = sample_hierarchy(30, 1.0, 1.0, "ibp", "noisy_or", q=0.2, random_state=3)
    b = sample_hierarchy(30, 1.0, 1.0, "ibp", "noisy_or", q=0.2, random_state=3)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)
    C, M, Z = sample_hierarchy(0, 1.0, 1.0, "dp")
    assert C.shape == (0, 0) and M.shape == (0, 0) and Z.shape == (0, 0)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_samples": -1}, "n_samples"),
        ({"n_samples": 2.5}, "n_samples"),
        ({"alpha_categories": 0.0}, "alpha_categories"),
        ({"alpha_features": -1.0}, "alpha_features"),
        ({"alpha_features": np.inf}, "alpha_features"),
        ({"upper": "crp"}, "upper"),
        ({"link": "and"}, "link"),
        ({"link": "noisy_or", "q": 1.5}, "q must be"),
        ({"link": "noisy_or", "q": None}, "q must be"),
    ],
)
def test_sample_hierarchy_bad_arguments(kwargs, match):
    args = {"n_samples": 5, "alpha_categories": 1.0, "alpha_features": 1.0, **kwargs}
    with pytest.raises(ValueError, match=match):
        sample_hierarchy(**args)


def test_expectation_functions_bad_arguments():
    with pytest.raises(ValueError, match="upper"):
        expected_n_categories(5, 1.0, "pitman-yor")
    with pytest.raises(ValueError, match="alpha_features"):
        expected_n_features_hierarchy(5, 1.0, 0.0, "dp")
    with pytest.raises(ValueError, match="alpha_categories"):
        feature_count_bound(5, -2.0, 1.0, "ibp")


# -- the log prior, normalised by enumeration ----------------------------------------------


def _left_ordered_matrices(n_rows, max_cols):
    """Every left-ordered binary matrix with ``n_rows`` rows and at most ``max_cols``
    non-empty columns (multisets of non-zero column histories)."""
    histories = range(1, 2**n_rows)
    for n_cols in range(max_cols + 1):
        for combo in combinations_with_replacement(histories, n_cols):
            columns = [[(h >> (n_rows - 1 - r)) & 1 for r in range(n_rows)] for h in combo]
            yield np.array(columns, dtype=np.int8).reshape(n_cols, n_rows).T


def _partitions(n):
    """Restricted growth strings: each partition of ``n`` items once."""

    def grow(prefix):
        if len(prefix) == n:
            yield list(prefix)
            return
        for label in range(max(prefix, default=-1) + 2):
            yield from grow([*prefix, label])

    return list(grow([]))


def _joint_key(C, M):
    """``(C, M)`` up to relabelling the categories (C's columns with M's rows) and the
    features (M's columns)."""
    best = None
    for order in permutations(range(C.shape[1])):
        c_cols = tuple(tuple(col) for col in C[:, order].T.tolist())
        m_cols = tuple(sorted(tuple(col) for col in M[list(order)].T.tolist()))
        key = (c_cols, m_cols)
        best = key if best is None or key < best else best
    return best


def test_dp_log_prob_sums_to_one_up_to_the_feature_tail():
    n_samples, alpha_c, alpha_m, max_features = 3, 0.7, 0.7, 6
    total, expected_total, probs = 0.0, 0.0, {}
    for labels in _partitions(n_samples):
        C = np.eye(max(labels) + 1, dtype=np.int8)[labels]
        n_categories = C.shape[1]
        for M in _left_ordered_matrices(n_categories, max_features):
            Z = ((C.astype(int) @ M) > 0).astype(np.int8)
            p = math.exp(hierarchy_log_prob(C, M, Z, alpha_c, alpha_m, "dp", "or"))
            total += p
            probs[_joint_key(C, M)] = probs.get(_joint_key(C, M), 0.0) + p
        # K | L ~ Poisson(alpha_M H_L): the classes kept hold its mass up to max_features.
        expected_total += math.exp(crp_log_prob(labels, alpha_c)) * poisson.cdf(
            max_features, alpha_m * harmonic_rate(n_categories)
        )
    assert total == pytest.approx(expected_total, rel=1e-10)
    assert 0 < 1 - total < 1e-4  # the tail left out, P(K > 6), is small
    # The product of the two probabilities is the law of (C, M) up to relabelling: the
    # sampler's draws land on each class as often as the enumeration says.
    _check_frequencies(probs, "dp", n_samples, alpha_c, alpha_m, n_draws=20000, seed=0)


def _check_frequencies(probs, upper, n_samples, alpha_c, alpha_m, n_draws, seed):
    rng = np.random.default_rng(seed)
    counts = {}
    for _ in range(n_draws):
        C, M, _ = sample_hierarchy(n_samples, alpha_c, alpha_m, upper, random_state=rng)
        if C.shape[1] <= 5:
            key = _joint_key(C, M)
            counts[key] = counts.get(key, 0) + 1
    top = sorted(probs.items(), key=lambda kv: -kv[1])[:25]
    for key, p in top:
        se = math.sqrt(p * (1 - p) / n_draws)
        assert abs(counts.get(key, 0) / n_draws - p) < 4 * se, key
    return counts


def test_ibp_log_prob_product_normalises_over_ordered_pairs_not_over_classes():
    n_samples, alpha_c, alpha_m = 2, 0.5, 0.7
    max_categories, max_features = 3, 4
    total, expected_total, n_pairs = 0.0, 0.0, 0
    joint, product = {}, {}
    for C in _left_ordered_matrices(n_samples, max_categories):
        n_categories = C.shape[1]
        for M in _left_ordered_matrices(n_categories, max_features):
            Z = ((C.astype(int) @ M) > 0).astype(np.int8)
            p = math.exp(hierarchy_log_prob(C, M, Z, alpha_c, alpha_m, "ibp", "or"))
            if n_pairs % 20 == 0:
                both = ibp_log_prob(C, alpha_c) + ibp_log_prob(M, alpha_m)
                assert p == pytest.approx(math.exp(both))
            total += p
            n_pairs += 1
            key = _joint_key(C, M)
            joint[key] = joint.get(key, 0.0) + p
            product[key] = p
    # Over pairs (lof C, lof M with M's rows on lof C's columns) the product sums to one,
    # up to L > 3 or K > 4, whose mass is known exactly.
    rate_c = alpha_c * harmonic_rate(n_samples)
    for n_categories in range(max_categories + 1):
        expected_total += poisson.pmf(n_categories, rate_c) * poisson.cdf(
            max_features, alpha_m * harmonic_rate(n_categories)
        )
    assert total == pytest.approx(expected_total, rel=1e-10)
    assert 0 < 1 - total < 0.01
    # But a class (C, M) up to relabelling with two equal columns in C is several pairs:
    # C = [[1, 1], [0, 0]] with the feature on either category is one configuration.
    C = np.array([[1, 1], [0, 0]])
    M = np.array([[1], [0]])
    key = _joint_key(C, M)
    p_pair = math.exp(hierarchy_log_prob(C, M, C @ M, alpha_c, alpha_m, "ibp", "or"))
    assert p_pair == pytest.approx(product[key])
    assert joint[key] == pytest.approx(2 * p_pair)
    assert len(joint) < n_pairs
    # The sampler's draws follow the summed (class) probabilities, not the single product.
    n_draws = 30000
    counts = _check_frequencies(joint, "ibp", n_samples, alpha_c, alpha_m, n_draws, seed=1)
    freq = counts.get(key, 0) / n_draws
    assert abs(freq - p_pair) > 6 * math.sqrt(p_pair * (1 - p_pair) / n_draws)


def test_noisy_or_link_is_a_distribution_over_z():
    rng = np.random.default_rng(4)
    q, alpha_c, alpha_m = 0.35, 1.1, 0.9
    checked = 0
    while checked < 5:
        C, M, _ = sample_hierarchy(3, alpha_c, alpha_m, "ibp", random_state=rng)
        n_cells = 3 * M.shape[1]
        if not 0 < n_cells <= 12:
            continue
        bits = (np.arange(2**n_cells)[:, None] >> np.arange(n_cells)) & 1
        total = sum(
            math.exp(
                hierarchy_log_prob(C, M, b.reshape(3, -1), alpha_c, alpha_m, "ibp", "noisy_or", q=q)
            )
            for b in bits
        )
        Z_or = ((C.astype(int) @ M) > 0).astype(np.int8)
        prior = math.exp(hierarchy_log_prob(C, M, Z_or, alpha_c, alpha_m, "ibp", "or"))
        assert total == pytest.approx(prior, rel=1e-10)
        checked += 1


def test_log_prob_zero_probability_configurations():
    C = np.array([[1, 0], [0, 1], [1, 0]])
    M = np.array([[1, 0], [1, 1]])
    Z = np.array([[1, 0], [1, 1], [1, 0]])
    base = hierarchy_log_prob(C, M, Z, 0.7, 0.7, "dp", "or")
    assert np.isfinite(base)
    assert base == pytest.approx(crp_log_prob([0, 1, 0], 0.7) + ibp_log_prob(M, 0.7))
    orphan = Z.copy()
    orphan[0, 1] = 1  # row 0's category does not link feature 1
    assert hierarchy_log_prob(C, M, orphan, 0.7, 0.7, "dp", "noisy_or", q=0.2) == -np.inf
    assert hierarchy_log_prob(C, M, orphan, 0.7, 0.7, "dp", "or") == -np.inf
    missing = Z.copy()
    missing[1, 1] = 0  # the "or" link cannot drop a feature, the noisy-or can
    assert hierarchy_log_prob(C, M, missing, 0.7, 0.7, "dp", "or") == -np.inf
    noisy = hierarchy_log_prob(C, M, missing, 0.7, 0.7, "dp", "noisy_or", q=0.2)
    assert noisy == pytest.approx(base + 3 * math.log(0.8) + math.log(0.2))
    # q = 0 is the "or" link, q = 1 never switches a feature on.
    assert hierarchy_log_prob(C, M, Z, 0.7, 0.7, "dp", "noisy_or", q=0.0) == pytest.approx(base)
    assert hierarchy_log_prob(C, M, missing, 0.7, 0.7, "dp", "noisy_or", q=0.0) == -np.inf
    assert hierarchy_log_prob(C, M, Z, 0.7, 0.7, "dp", "noisy_or", q=1.0) == -np.inf
    assert hierarchy_log_prob(C, M, 0 * Z, 0.7, 0.7, "dp", "noisy_or", q=1.0) == pytest.approx(base)


def test_log_prob_two_parents_and_unused_categories():
    C = np.array([[1, 1, 0], [0, 1, 0]])  # category 2 has no member
    M = np.array([[1], [1], [1]])
    Z = np.array([[0], [1]])
    q = 0.25
    value = hierarchy_log_prob(C, M, Z, 1.0, 1.0, "ibp", "noisy_or", q=q)
    expected = ibp_log_prob(C, 1.0) + ibp_log_prob(M[:2], 1.0) + 2 * math.log(q) + math.log(1 - q)
    assert value == pytest.approx(expected)


def test_log_prob_leaves_inputs_alone_and_checks_them():
    C = np.array([[1, 0], [0, 1]], dtype=np.int8)
    M = np.array([[1], [0]], dtype=np.int8)
    Z = np.array([[1], [0]], dtype=np.int8)
    for a in (C, M, Z):
        a.setflags(write=False)
    hierarchy_log_prob(C, M, Z, 1.0, 1.0, "dp", "noisy_or", q=0.3)
    np.testing.assert_array_equal(C, [[1, 0], [0, 1]])
    with pytest.raises(ValueError, match="q must be given"):
        hierarchy_log_prob(C, M, Z, 1.0, 1.0, "dp", "noisy_or")
    with pytest.raises(ValueError, match="one row per column of C"):
        hierarchy_log_prob(C, M[:1], Z, 1.0, 1.0, "dp", "or")
    with pytest.raises(ValueError, match="Z must have shape"):
        hierarchy_log_prob(C, M, Z.T, 1.0, 1.0, "dp", "or")
    with pytest.raises(ValueError, match="C must contain only 0 and 1"):
        hierarchy_log_prob(2 * C, M, Z, 1.0, 1.0, "dp", "or")
    with pytest.raises(ValueError, match="exactly one category"):
        hierarchy_log_prob([[1, 1], [0, 1]], M, Z, 1.0, 1.0, "dp", "or")
    with pytest.raises(ValueError, match="M must be a 2-d"):
        hierarchy_log_prob(C, [1, 0], Z, 1.0, 1.0, "dp", "or")
    with pytest.raises(ValueError, match="alpha_features"):
        hierarchy_log_prob(C, M, Z, 1.0, 0.0, "dp", "or")
    with pytest.raises(ValueError, match="link"):
        hierarchy_log_prob(C, M, Z, 1.0, 1.0, "dp", "noisy-or")
