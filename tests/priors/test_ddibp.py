"""The dd-IBP prior (Gershman, Frazier and Blei 2015, sec. 2.2 and 4): reduction to the IBP, feature
sharing, the reachability kernel against a plain-Python reference, and bad input."""

import itertools

import numpy as np
import pytest
from scipy.stats import chisquare, poisson

from sklearn_ibp.datasets import make_dd_ibp
from sklearn_ibp.priors import (
    compute_reachability,
    ddibp_log_prob,
    decay_proximity,
    expected_n_features,
    ibp_log_prob,
    inherit_features,
    normalized_proximity,
    pairwise_distances_for_ddibp,
    sample_ddibp,
)
from tests._enumeration import enumerate_prior, history_key


def ibp_proximity(n_rows):
    """Constant decay on sequential distances: the dd-IBP that is the IBP."""
    D = pairwise_distances_for_ddibp(np.arange(n_rows), sequential=True)
    return decay_proximity(D, "constant")


# --------------------------------------------------------------------------- IBP reduction


def test_constant_sequential_feature_count_and_row_sums():
    n_rows, alpha, n_draws = 8, 2.0, 4000
    proximity = ibp_proximity(n_rows)
    rng = np.random.RandomState(0)
    ks, rows = [], []
    for _ in range(n_draws):
        Z, owners, _ = sample_ddibp(proximity, alpha, rng)
        ks.append(Z.shape[1])
        rows.append(Z.sum(axis=1))
        assert Z.any(axis=0).all()  # every dish has at least its owner
    rows = np.array(rows)
    # K = sum_i lambda_i ~ Poisson(alpha H_N): its standard error is known.
    expected = expected_n_features(n_rows, alpha)
    assert abs(np.mean(ks) - expected) < 3 * np.sqrt(expected / n_draws)
    # Each row sum is Poisson(alpha) in the IBP (row i is independent across draws):
    # mean within 4 SE (worst row at this seed: 1.1 SE), variance within 10% (4 SE of the
    # sample variance, ~2.5%; worst row 2.6%), and a chi-square test of the first and last
    # rows' histograms (p-values at this seed: 0.85 and 0.30). Mean K here: 1.3 SE off.
    assert np.all(np.abs(rows.mean(axis=0) - alpha) < 4 * np.sqrt(alpha / n_draws))
    assert np.all(np.abs(rows.var(axis=0) / alpha - 1) < 0.10)
    for row in (0, n_rows - 1):
        counts = np.bincount(rows[:, row], minlength=8)
        observed = np.append(counts[:6], counts[6:].sum())
        probs = np.append(poisson.pmf(np.arange(6), alpha), poisson.sf(5, alpha))
        assert chisquare(observed, probs * n_draws).pvalue > 0.01


def test_log_prob_sums_to_ibp_class_probabilities():
    # Summing exp(ddibp_log_prob) over labelled configurations (owner counts lambda and an
    # ordered list of link columns per owner) with the same left-ordered class gives
    # P([Z]) of the IBP exactly: the counting convention that eq. 5 needs.
    n_rows, alpha, max_features = 3, 0.8, 3
    proximity = ibp_proximity(n_rows)
    A, h = normalized_proximity(proximity)
    columns = [np.array(c) for c in itertools.product(*[range(i + 1) for i in range(n_rows)])]
    class_mass = {}
    for lam in itertools.product(range(max_features + 1), repeat=n_rows):
        if sum(lam) > max_features:
            continue
        owners = np.repeat(np.arange(n_rows), lam)
        for cols in itertools.product(columns, repeat=len(owners)):
            connections = np.array(cols, dtype=np.int64).T.reshape(n_rows, len(owners))
            key = history_key(inherit_features(owners, connections))
            p = np.exp(ddibp_log_prob(owners, connections, A, h, alpha))
            class_mass[key] = class_mass.get(key, 0.0) + p
    # every dish keeps its owner, so classes with K <= max_features are complete
    assert sum(class_mass.values()) == pytest.approx(
        poisson.cdf(max_features, expected_n_features(n_rows, alpha)), rel=1e-12
    )
    for key, mass in class_mass.items():
        Z = np.array([[(hist >> (n_rows - 1 - n)) & 1 for hist in key] for n in range(n_rows)])
        assert mass == pytest.approx(np.exp(ibp_log_prob(Z.reshape(n_rows, -1), alpha)), rel=1e-10)


def test_draws_match_ibp_class_probabilities():
    n_rows, alpha, n_draws = 3, 1.0, 20000
    probs, _ = enumerate_prior(n_rows, alpha, 8)
    proximity = ibp_proximity(n_rows)
    rng = np.random.default_rng(0)
    counts = {}
    for _ in range(n_draws):
        key = history_key(sample_ddibp(proximity, alpha, rng)[0])
        counts[key] = counts.get(key, 0) + 1
    for key, p in sorted(probs.items(), key=lambda kv: -kv[1])[:15]:
        se = np.sqrt(p * (1 - p) / n_draws)
        assert abs(counts.get(key, 0) / n_draws - p) < 4 * se, key  # worst: 2.9 SE


# --------------------------------------------------------------------------- feature sharing


def exact_sharing(A, h, alpha):
    """``E[R_i]`` and ``E[R_ij]`` by Proposition 1 (eqs. 11-12), enumerating all ``N^N``
    link vectors of one dish with their probabilities ``prod_i a_{i c_i}``."""
    n = A.shape[0]
    reach = np.zeros((n, n))  # reach[i, o] = P(L_io = 1)
    both = np.zeros((n, n, n))  # both[i, j, o] = P(L_io = 1, L_jo = 1)
    for c in itertools.product(range(n), repeat=n):
        c = np.array(c, dtype=np.int64)
        p = np.prod(A[np.arange(n), c])
        if p == 0:
            continue
        for o in range(n):
            r = compute_reachability(c, o).astype(float)
            reach[:, o] += p * r
            both[:, :, o] += p * np.outer(r, r)
    return alpha * reach @ (1 / h), alpha * both @ (1 / h)


def test_shared_features_decrease_with_distance():
    x = np.array([0.0, 0.5, 1.5, 3.0])
    alpha, n_draws = 4.0, 6000
    D = pairwise_distances_for_ddibp(x)
    A, h = normalized_proximity(decay_proximity(D, "exponential", decay=1.0))
    expected_r, expected_shared = exact_sharing(A, h, alpha)
    # Proposition 1 in expectation: sharing with point 0 falls with the distance to it.
    assert np.all(np.diff(expected_shared[0, 1:]) < 0)

    rng = np.random.default_rng(3)
    shared = np.empty((n_draws, 4))
    held = np.empty((n_draws, 4))
    proximity = decay_proximity(D, "exponential", decay=1.0)
    for t in range(n_draws):
        Z = sample_ddibp(proximity, alpha, rng)[0].astype(float)
        shared[t] = Z @ Z[0]  # R_0j (and R_00 = R_0)
        held[t] = Z.sum(axis=1)
    # The draws agree with eqs. 11-12 within 4 standard errors.
    se = shared.std(axis=0) / np.sqrt(n_draws)
    assert np.all(np.abs(shared.mean(axis=0) - expected_shared[0]) < 4 * se)
    se = held.std(axis=0) / np.sqrt(n_draws)
    assert np.all(np.abs(held.mean(axis=0) - expected_r) < 4 * se)
    # And on the draws themselves, R_01 > R_02 > R_03 on average: each paired difference
    # is positive by more than 5 of its standard errors (measured at this seed: 41 and 46 SE;
    # the draws' means sit within 0.4 SE of eq. 12 and 1.6 SE of eq. 11).
    for near, far in ((1, 2), (2, 3)):
        diff = shared[:, near] - shared[:, far]
        assert diff.mean() > 5 * diff.std() / np.sqrt(n_draws)


# --------------------------------------------------------------------------- reachability


def reachability_reference(connections, owner):
    """Plain Python: follow links from each customer for at most N steps."""
    n = len(connections)
    out = np.zeros(n, dtype=bool)
    for i in range(n):
        j = i
        for _ in range(n + 1):
            if j == owner:
                out[i] = True
                break
            j = connections[j]
    return out


def test_reachability_matches_reference_on_random_graphs():
    rng = np.random.default_rng(0)
    for _ in range(500):
        n = int(rng.integers(1, 13))
        c = rng.integers(0, n, size=n)
        selfish = rng.random(n) < 0.2  # more self-links than uniform links give
        c[selfish] = np.flatnonzero(selfish)
        owner = int(rng.integers(0, n))
        np.testing.assert_array_equal(
            compute_reachability(c, owner), reachability_reference(c, owner)
        )
    # a cycle through the owner, a self-link and a cycle avoiding it
    c = np.array([1, 2, 0, 3, 5, 4, 0])
    np.testing.assert_array_equal(compute_reachability(c, 0), [1, 1, 1, 0, 0, 0, 1])
    # the owner's own link is ignored: 0 links to 1, 1 links to itself, 2 links to 0
    c = np.array([1, 1, 0])
    np.testing.assert_array_equal(compute_reachability(c, 0), [True, False, True])


def test_inherit_features_column_by_column():
    rng = np.random.default_rng(1)
    n, k = 9, 20
    connections = rng.integers(0, n, size=(n, k))
    owners = rng.integers(0, n, size=k)
    Z = inherit_features(owners, connections)
    assert Z.dtype == np.int8
    for col in range(k):
        np.testing.assert_array_equal(
            Z[:, col], reachability_reference(connections[:, col], owners[col])
        )
    with pytest.raises(ValueError, match="owners"):
        inherit_features(owners[:-1], connections)
    with pytest.raises(ValueError, match="connections"):
        inherit_features(owners, connections + n)


# --------------------------------------------------------------------------- pieces


def test_distances_and_decay_functions():
    x = np.array([[0.0], [1.0], [3.0]])
    x_copy = x.copy()
    D = pairwise_distances_for_ddibp(x)
    np.testing.assert_allclose(D, [[0, 1, 3], [1, 0, 2], [3, 2, 0]])
    np.testing.assert_array_equal(x, x_copy)
    np.testing.assert_allclose(pairwise_distances_for_ddibp(x.ravel(), metric="cityblock"), D)
    np.testing.assert_array_equal(pairwise_distances_for_ddibp(D, metric="precomputed"), D)
    S = pairwise_distances_for_ddibp(precomputed=D, sequential=True)
    assert np.isinf(S[np.triu_indices(3, 1)]).all()
    np.testing.assert_array_equal(np.tril(S), np.tril(D))

    np.testing.assert_allclose(
        decay_proximity(S, "exponential", decay=0.5), np.tril(np.exp(-D / 2))
    )
    np.testing.assert_array_equal(decay_proximity(S, "constant"), np.tril(np.ones((3, 3))))
    np.testing.assert_array_equal(decay_proximity(D, "window", nu=1.5), (D < 1.5).astype(float))
    logistic = decay_proximity(D, "logistic", decay=2.0, nu=1.0)
    np.testing.assert_allclose(np.diag(logistic), 1.0)  # rescaled so that f(0) = 1
    np.testing.assert_allclose(logistic[0, 2] / logistic[0, 1], (1 + np.e) / (1 + np.exp(5)))
    # user callables: vectorised or scalar-only, inf always maps to 0
    np.testing.assert_allclose(decay_proximity(S, lambda d: 1 / (1 + d)), np.tril(1 / (1 + D)))
    np.testing.assert_allclose(decay_proximity(D, lambda d: 1.0 if d < 2 else 0.5)[0], [1, 1, 0.5])

    A, h = normalized_proximity(decay_proximity(S, "constant"))
    np.testing.assert_allclose(h, [1, 2, 3])
    np.testing.assert_allclose(A.sum(axis=1), 1)


def test_log_prob_matches_generative_terms():
    D = pairwise_distances_for_ddibp(np.array([0.0, 1.0, 2.5]))
    A, h = normalized_proximity(decay_proximity(D, "exponential", decay=0.7))
    owners = np.array([2, 0, 2])
    connections = np.array([[0, 1, 2], [1, 1, 0], [2, 0, 1]])
    expected = (
        poisson.logpmf(1, 1.5 / h[0])
        + poisson.logpmf(0, 1.5 / h[1])
        + poisson.logpmf(2, 1.5 / h[2])
        + np.log(A[[0, 0, 0, 1, 1, 1, 2, 2, 2], connections.ravel()]).sum()
    )
    assert ddibp_log_prob(owners, connections, A, h, 1.5) == pytest.approx(expected)
    # invariant to relabelling the dishes
    perm = [2, 0, 1]
    assert ddibp_log_prob(owners[perm], connections[:, perm], A, h, 1.5) == pytest.approx(expected)
    # a link of probability zero
    A0, h0 = normalized_proximity(decay_proximity(D, "window", nu=1.5))
    assert ddibp_log_prob(np.array([0]), np.array([[2], [1], [2]]), A0, h0, 1.0) == -np.inf


def test_make_dd_ibp():
    data = make_dd_ibp(30, n_dims=5, alpha=3.0, sequential=True, random_state=0)
    assert data.X.shape == (30, 5)
    assert data.A.shape == (data.Z.shape[1], 5)
    np.testing.assert_array_equal(data.Z, inherit_features(data.owners, data.connections))
    assert np.all(data.connections <= np.arange(30)[:, None])  # sequential: earlier or self
    again = make_dd_ibp(30, n_dims=5, alpha=3.0, sequential=True, random_state=0)
    np.testing.assert_array_equal(again.X, data.X)
    prior_only = make_dd_ibp(
        n_dims=None, distances=np.array([[0, 1], [1, 0]]), decay_function="window", nu=2,
        random_state=0,
    )
    assert prior_only.X is None and prior_only.Z.shape[0] == 2
    with pytest.raises(ValueError, match="at most one"):
        make_dd_ibp(covariates=np.zeros(3), distances=np.zeros((3, 3)))


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "matrix, match",
    [
        (np.array([[0.0, -1.0], [1.0, 0.0]]), "negative"),
        (np.array([[0.0, np.nan], [1.0, 0.0]]), "NaN"),
        (np.zeros((2, 3)), "square"),
        (np.array([[1.0, 1.0], [1.0, 0.0]]), "diagonal"),
        (np.array([[0.0, -np.inf], [1.0, 0.0]]), "negative"),
    ],
)
def test_bad_precomputed_distances(matrix, match):
    with pytest.raises(ValueError, match=match):
        pairwise_distances_for_ddibp(precomputed=matrix)


def test_bad_arguments():
    D = np.array([[0.0, 1.0, np.inf], [1.0, 0.0, 2.0], [3.0, 2.0, 0.0]])
    pairwise_distances_for_ddibp(precomputed=D)  # +inf off the diagonal is fine
    with pytest.raises(ValueError, match="exactly one"):
        pairwise_distances_for_ddibp()
    with pytest.raises(ValueError, match="X"):
        pairwise_distances_for_ddibp(np.array([[0.0], [np.nan]]))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        decay_proximity(D, lambda d: 2 * np.exp(-d))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        decay_proximity(D, lambda d: np.exp(-d) - 0.5)
    with pytest.raises(ValueError, match=r"f\(0\) = 1"):
        decay_proximity(D, lambda d: 0.5 * np.exp(-d))
    with pytest.raises(ValueError, match="decay_function must be one of"):
        decay_proximity(D, "gaussian")
    for bad in (0.0, -1.0, np.nan):
        with pytest.raises(ValueError, match="decay"):
            decay_proximity(D, "exponential", decay=bad)
    with pytest.raises(ValueError, match="nu"):
        decay_proximity(D, "window")
    with pytest.raises(ValueError, match="nu"):
        decay_proximity(D, "window", nu=0.0)
    with pytest.raises(ValueError, match="nu"):
        decay_proximity(D, "logistic", decay=1.0)
    with pytest.raises(ValueError, match="alpha"):
        sample_ddibp(decay_proximity(D, "constant"), alpha=0.0)
    with pytest.raises(ValueError, match="positive sum"):
        normalized_proximity(np.zeros((2, 2)))


def test_calibrated_decay_expects_the_ibp_feature_count_in_any_unit():
    from sklearn_ibp.priors.ddibp import calibrate_decay, expected_feature_factor

    rng = np.random.default_rng(0)
    t = np.sort(rng.uniform(0, 50, size=80))
    harmonic = np.sum(1.0 / np.arange(1, 81))
    rates = []
    for scale in (1.0, 1e-3, 1e3):
        D = pairwise_distances_for_ddibp(t * scale)
        beta = calibrate_decay(D)
        factor = expected_feature_factor(decay_proximity(D, "exponential", beta))
        assert factor == pytest.approx(harmonic, rel=1e-3)
        rates.append(beta * scale)
    np.testing.assert_allclose(rates, rates[0], rtol=1e-3)  # a rate per unit of t
    # the logistic decay (rate for a given offset) and a target of one's choice
    D = pairwise_distances_for_ddibp(t)
    beta = calibrate_decay(D, "logistic", nu=2.0, target=10.0)
    assert expected_feature_factor(decay_proximity(D, "logistic", beta, 2.0)) == (
        pytest.approx(10.0, rel=1e-3))
    # sequential distances are the IBP at rate 0: nothing to calibrate
    assert calibrate_decay(pairwise_distances_for_ddibp(t, sequential=True)) == 0.0
    with pytest.raises(ValueError, match="rate to calibrate"):
        calibrate_decay(D, "window", nu=1.0)
    # the sum the calibration solves for: H_N for the IBP, 1 for the constant decay
    P = decay_proximity(pairwise_distances_for_ddibp(t, sequential=True), "constant")
    assert expected_feature_factor(P) == pytest.approx(harmonic, rel=1e-12)
    assert expected_feature_factor(np.ones((80, 80))) == pytest.approx(1.0, rel=1e-12)


def test_ddibp_prior_object_matches_the_functions():
    """``DDIBPPrior`` holds ``A``, ``h`` and the bound; its log probability, alpha rate and
    new-row probabilities are those of the functions and of Gershman, Frazier and Blei's (2015)
    formulas."""
    from sklearn_ibp.priors.ddibp import DDIBPPrior, expected_feature_factor

    D = pairwise_distances_for_ddibp(np.arange(6.0))
    F = decay_proximity(D, "exponential", decay=0.7)
    prior = DDIBPPrior.from_proximity(F, max_features=4)
    A, h = normalized_proximity(F)
    np.testing.assert_array_equal(prior.proximity, A)
    np.testing.assert_array_equal(prior.h, h)
    assert prior.max_features == 4 and prior.n_samples == 6
    Z, owners, connections = sample_ddibp(F, 2.0, random_state=0)
    assert prior.log_prob(owners, connections, 2.0) == ddibp_log_prob(owners, connections, A,
                                                                     h, 2.0)
    assert prior.alpha_rate() == pytest.approx(expected_feature_factor(F), rel=1e-12)
    new = F[:2]  # two new rows at the positions of rows 0 and 1
    p, h_new = DDIBPPrior.new_rows(new, Z)
    np.testing.assert_allclose(h_new, 1.0 + new.sum(axis=1))
    np.testing.assert_allclose(p, new @ Z / h_new[:, None])
    with pytest.raises(ValueError, match="proximity must have shape"):
        DDIBPPrior(A[:, :5], h)
    with pytest.raises(ValueError, match="max_features"):
        DDIBPPrior(A, h, max_features=0)
