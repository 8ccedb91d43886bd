"""The sampler of the feature hierarchies (Doshi-Velez 2009, ch. 7) targets its posterior.

* invariants of every state: ``S = C M``, no feature on without a parent, the ``or`` link's
  ``Z = [S > 0]``, counts and predictions consistent;
* exact posterior: DP-IBP on three rows, enumerated over partitions and left-ordered ``M``
  with ``A`` integrated out, against the sampler's histogram (which keeps ``A`` explicit);
* prior recovery (no data): the numbers of categories and features, and the noisy-or
  children, have the prior's distribution, with the hyperparameters fixed or sampled;
* the noisy-or with ``q -> 0`` samples the IBP-IBP posterior.
"""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest
from scipy import stats
from scipy.special import gammaln as gammaln_

from sklearn_ibp.likelihoods import BinaryDetection, ExponentialGaussian, LinearGaussianFeatures
from sklearn_ibp.likelihoods.linear_gaussian import log_marginal_likelihood
from sklearn_ibp.priors.hierarchy import (
    expected_n_categories,
    expected_n_features_hierarchy,
    hierarchy_log_prob,
    sample_hierarchy,
)
from sklearn_ibp.solvers.hierarchy.hierarchy_gibbs import GibbsHierarchy

COMBINATIONS = [("dp", "or"), ("ibp", "or"), ("ibp", "noisy_or"), ("dp", "noisy_or")]


def _run(X, likelihood, params, upper, link, n_sweeps, seed, *, alpha_c=1.0, alpha_m=1.0,
         q=0.2, hyper=False, callback=None, solver=None):
    rng = np.random.default_rng(seed)
    observed = np.ones(X.shape, np.uint8)
    state = GibbsHierarchy.new_state(
        X, observed, likelihood, params, upper=upper, link=link, alpha_c=alpha_c,
        alpha_m=alpha_m, q=q, rng=rng,
    )
    solver = solver or GibbsHierarchy()
    for it in range(n_sweeps):
        solver.sweep(state, likelihood, rng)
        if hyper:
            solver.sample_hyperparameters(state, likelihood, rng)
        if callback is not None:
            callback(it, state)
    return state


def _check_invariants(state, upper, link):
    C, M, Z, A = state.live
    S = state.S[:, : state.n_features]
    np.testing.assert_array_equal(S, C.astype(np.int64) @ M.astype(np.int64))
    assert not np.any((Z == 1) & (S == 0)), "a feature is on without an active parent"
    if link == "or":
        np.testing.assert_array_equal(Z, (S > 0).astype(np.int8))
    np.testing.assert_allclose(state.pred, Z.astype(float) @ A, atol=1e-9)
    sizes = C.sum(axis=0)
    assert np.all(sizes > 0) and np.array_equal(state.sizes[: state.n_categories], sizes)
    links = M.sum(axis=0)
    assert np.all(links > 0) and np.array_equal(state.links[: state.n_features], links)
    if upper == "dp":
        assert np.all(C.sum(axis=1) == 1)
        np.testing.assert_array_equal(np.argmax(C, axis=1), state.category)
    assert np.isfinite(
        hierarchy_log_prob(C, M, Z, state.alpha_c, state.alpha_m, upper, link, q=state.q)
    )


@pytest.mark.parametrize("upper, link", COMBINATIONS)
@pytest.mark.parametrize("likelihood_name", ["gaussian", "exponential", "detection"])
def test_every_state_is_consistent(upper, link, likelihood_name):
    rng = np.random.default_rng(3)
    shapes = (rng.random((3, 8)) < 0.4).astype(float)
    Z = (rng.random((40, 3)) < 0.4).astype(float)
    if likelihood_name == "detection":
        X = ((Z @ shapes > 0) ^ (rng.random((40, 8)) < 0.05)).astype(float)
        likelihood = BinaryDetection()
    else:
        X = Z @ shapes + 0.3 * rng.standard_normal((40, 8))
        likelihood = ExponentialGaussian() if likelihood_name == "exponential" else (
            LinearGaussianFeatures()
        )
    params = likelihood.initial_parameters(X, np.ones(X.shape, np.uint8))
    seen = set()

    def check(it, state):
        _check_invariants(state, upper, link)
        seen.add((state.n_categories, state.n_features))

    _run(X, likelihood, params, upper, link, 30, 0, hyper=True, callback=check)
    assert len(seen) > 1, "the chain never moved"


#: Where each pass kernel takes (C, M, S, Z, sizes, links, counts) among its arguments.
_PASS_ARRAYS = {
    "dp_rows": (3, 5, 6, 7, 10, 11, 12),
    "ibp_rows": (3, 4, 5, 6, 9, 10, 11),
    "link_pass": (4, 5, 6, 7, 10, 11, 12),
}


@pytest.mark.parametrize("upper, link", COMBINATIONS)
def test_the_passes_leave_the_arrays_zero_beyond_the_slots_in_use(upper, link, monkeypatch):
    # The passes put new categories and features into the slots from counts[L_SLOTS] and
    # counts[K_SLOTS] on without clearing them first: everything beyond the slots in use
    # must be zero whenever a pass returns (before the driver compacts).
    from sklearn_ibp.solvers.hierarchy import _hierarchy_kernels as kernels

    calls = Counter()

    def checked(name):
        kernel = getattr(kernels, name)

        def run(*args):
            result = kernel(*args)
            C, M, S, Z, sizes, links, counts = (args[i] for i in _PASS_ARRAYS[name])
            L_slots, K_slots = counts[kernels.L_SLOTS], counts[kernels.K_SLOTS]
            for beyond in (C[:, L_slots:], M[L_slots:], M[:, K_slots:], S[:, K_slots:],
                           Z[:, K_slots:], sizes[L_slots:], links[K_slots:]):
                assert not np.any(beyond), f"{name} left a value beyond the slots in use"
            calls[name] += 1
            return result

        return run

    for name in _PASS_ARRAYS:
        monkeypatch.setattr(kernels, name, checked(name))
    rng = np.random.default_rng(5)
    shapes = (rng.random((3, 8)) < 0.4).astype(float)
    Z = (rng.random((40, 3)) < 0.4).astype(float)
    X = ((Z @ shapes > 0) ^ (rng.random((40, 8)) < 0.05)).astype(float)
    likelihood = BinaryDetection()
    params = likelihood.initial_parameters(X, np.ones(X.shape, np.uint8))
    state = _run(X, likelihood, params, upper, link, 20, 1, hyper=True)
    assert calls["link_pass"] >= 20 and calls["dp_rows" if upper == "dp" else "ibp_rows"] >= 20
    assert state.n_features > 0


# -- exact posterior -------------------------------------------------------------------
def _partitions(n):
    """Canonical label vectors (first appearance order) of all partitions of n items."""
    out = []

    def grow(labels, k):
        if len(labels) == n:
            out.append(tuple(labels))
            return
        for j in range(k + 1):
            grow(labels + [j], max(k, j + 1))

    grow([], 0)
    return out


def _canonical(labels, M):
    """(partition, multiset of M's columns) with categories in first-appearance order."""
    order = []
    for label in labels:
        if label not in order:
            order.append(label)
    relabel = {old: new for new, old in enumerate(order)}
    partition = tuple(relabel[label] for label in labels)
    M = np.asarray(M)[order]
    columns = tuple(sorted(tuple(int(v) for v in M[:, k]) for k in range(M.shape[1])))
    return partition, columns


def _enumerate_dp_ibp(X, sigma_x, sigma_a, alpha_c, alpha_m, k_max):
    N = X.shape[0]
    log_post = {}
    for labels in _partitions(N):
        L = max(labels) + 1
        C = np.zeros((N, L), np.int8)
        C[np.arange(N), labels] = 1
        column_types = [c for c in itertools.product((0, 1), repeat=L) if any(c)]
        for K in range(k_max + 1):
            for cols in itertools.combinations_with_replacement(column_types, K):
                M = np.array(cols, dtype=np.int8).T.reshape(L, K)
                Z = (C.astype(int) @ M > 0).astype(np.int8)
                value = hierarchy_log_prob(C, M, Z, alpha_c, alpha_m, "dp", "or")
                value += log_marginal_likelihood(X, Z, sigma_x, sigma_a)
                log_post[_canonical(labels, M)] = value
    keys = list(log_post)
    values = np.array([log_post[k] for k in keys])
    probs = np.exp(values - values.max())
    return dict(zip(keys, probs / probs.sum(), strict=True))


def test_dp_ibp_matches_the_enumerated_posterior():
    # Three rows in one dimension; the sampler keeps A explicit, the enumeration integrates
    # it out (eq. A.2), so agreement checks every move including A's update. Columns of M
    # beyond k_max hold a negligible mass (checked below on the sampler's side).
    X = np.array([[1.2], [1.0], [-0.9]])
    sigma_x, sigma_a, alpha_c, alpha_m = 0.5, 1.0, 1.0, 0.7
    exact = _enumerate_dp_ibp(X, sigma_x, sigma_a, alpha_c, alpha_m, k_max=5)
    likelihood = LinearGaussianFeatures()
    counts = Counter()
    n_sweeps, burn = 20000, 500

    def record(it, state):
        if it >= burn:
            C, M, _, _ = state.live
            counts[_canonical(np.argmax(C, axis=1), M)] += 1

    _run(X, likelihood, {"sigma_x": sigma_x, "sigma_a": sigma_a}, "dp", "or", n_sweeps, 1,
         alpha_c=alpha_c, alpha_m=alpha_m, callback=record)
    total = n_sweeps - burn
    outside = sum(c for k, c in counts.items() if k not in exact) / total
    assert outside < 0.01
    keys = sorted(exact, key=lambda k: -exact[k])
    expected = np.array([exact[k] for k in keys]) * total
    observed = np.array([counts.get(k, 0) for k in keys], dtype=float)
    # Pool the states expected fewer than 20 times into one bin.
    big = expected >= 20
    exp_bins = np.append(expected[big], expected[~big].sum() + outside * total)
    obs_bins = np.append(observed[big], observed[~big].sum() + outside * total)
    assert big.sum() >= 8
    # Successive sweeps are correlated; the statistic is compared with an inflated scale
    # (an effective sample size a quarter of the sweeps), which still fails for a sampler
    # whose probabilities are off by 10 % on a common state.
    chi2 = np.sum((obs_bins - exp_bins) ** 2 / exp_bins) / 4.0
    p_value = stats.chi2.sf(chi2, len(exp_bins) - 1)
    top = keys[0]
    assert p_value > 1e-3, (chi2, len(exp_bins), counts[top] / total, exact[top])
    np.testing.assert_allclose(observed[:5] / total, expected[:5] / total, atol=0.02)


def _posterior_means(exact):
    """``E[L]``, ``E[K]`` and ``E[sum Z]`` of an enumerated DP-IBP posterior (``or`` link)."""
    means = np.zeros(3)
    for (partition, columns), p in exact.items():
        n_on = sum(column[label] for column in columns for label in partition)
        means += p * np.array([max(partition) + 1, len(columns), n_on])
    return means


def test_dp_ibp_posterior_means_on_two_rows_match_enumeration():
    # A sharper check than the histogram above, in two dimensions and with enough features
    # that a category's own features sit among shared ones: the posterior means of the
    # numbers of categories, features and active entries, from independent chains,
    # against the enumeration (standard errors from the spread between chains). Visiting
    # categories and features in slot order and scoring a category's own features in slot
    # order in the reverse of a move put E[K] 2-2.6 % (6-8 standard errors) too high here.
    X = np.array([[1.5, 0.2], [0.3, 1.4]])
    sigma_x, sigma_a, alpha_c, alpha_m = 0.5, 1.0, 2.0, 3.0
    exact = _posterior_means(_enumerate_dp_ibp(X, sigma_x, sigma_a, alpha_c, alpha_m, k_max=14))
    params = {"sigma_x": sigma_x, "sigma_a": sigma_a}
    solver = GibbsHierarchy(transfer_moves=False)  # tested on their own below
    n_chains, n_sweeps, burn = 16, 3500, 100
    chain_means = []
    for seed in range(n_chains):
        values = []

        def record(it, state, values=values):
            if it >= burn:
                values.append((state.n_categories, state.n_features,
                               int(state.live[2].sum())))

        _run(X, LinearGaussianFeatures(), params, "dp", "or", n_sweeps, 100 + seed,
             alpha_c=alpha_c, alpha_m=alpha_m, callback=record, solver=solver)
        chain_means.append(np.mean(values, axis=0))
    chain_means = np.array(chain_means)
    mean = chain_means.mean(axis=0)
    se = chain_means.std(axis=0, ddof=1) / np.sqrt(n_chains)
    assert np.all(np.abs(mean - exact) < 4.5 * se), (mean, exact, se)


# -- prior recovery ----------------------------------------------------------------------
@pytest.mark.parametrize("upper, link", COMBINATIONS)
def test_without_data_the_sampler_draws_the_prior(upper, link):
    N, alpha_c, alpha_m, q = 6, 1.2, 1.5, 0.4
    X = np.zeros((N, 0))
    likelihood = LinearGaussianFeatures()
    L_chain, K_chain, on_chain = [], [], []

    def record(it, state):
        if it >= 200 and it % 3 == 0:
            L_chain.append(state.n_categories)
            K_chain.append(state.n_features)
            on_chain.append(int(state.live[2].sum()))

    _run(X, likelihood, {"sigma_x": 1.0, "sigma_a": 1.0}, upper, link, 24000, 5,
         alpha_c=alpha_c, alpha_m=alpha_m, q=q, callback=record)
    rng = np.random.default_rng(0)
    draws = [sample_hierarchy(N, alpha_c, alpha_m, upper=upper, link=link, q=q,
                              random_state=rng) for _ in range(8000)]
    L_prior = np.array([C.shape[1] - (C.sum(axis=0) == 0).sum() for C, _, _ in draws])
    K_prior = np.array([M.shape[1] for _, M, _ in draws])
    on_prior = np.array([Z.sum() for _, _, Z in draws])
    assert abs(np.mean(L_chain) - expected_n_categories(N, alpha_c, upper)) < 0.12
    assert abs(np.mean(K_chain) - expected_n_features_hierarchy(N, alpha_c, alpha_m, upper)) < 0.15
    # Whole distributions: the chain's histograms against independent prior draws.
    for chain, prior in ((L_chain, L_prior), (K_chain, K_prior), (on_chain, on_prior)):
        top = int(np.percentile(prior, 97))
        chain_hist = np.bincount(np.minimum(chain, top), minlength=top + 1) / len(chain)
        prior_hist = np.bincount(np.minimum(prior, top), minlength=top + 1) / len(prior)
        assert np.abs(chain_hist - prior_hist).max() < 0.035, (chain_hist, prior_hist)


def test_tight_truncation_of_new_categories_and_features_keeps_the_prior():
    # One new category a row and one new feature a category: the truncated Poisson
    # proposals are then far from the prior (P(Poisson(2.5) <= 1) = 0.29), so the move
    # that replaces a row's own categories must hold their truncated mass and refuse the
    # states it could not have proposed. Without both, E[L] came out 2.28 (exact 3.125)
    # and E[K] 2.08 (exact 4.32), 70 and 155 standard errors off.
    N, alpha_c, alpha_m = 4, 1.5, 2.5
    X = np.zeros((N, 0))
    solver = GibbsHierarchy(max_new_categories=1, max_new_features=1)
    n_chains, n_sweeps, burn = 8, 2000, 100
    chain_means = []
    for seed in range(n_chains):
        values = []

        def record(it, state, values=values):
            if it >= burn:
                values.append((state.n_categories, state.n_features))

        _run(X, LinearGaussianFeatures(), {"sigma_x": 1.0, "sigma_a": 1.0}, "ibp", "or",
             n_sweeps, 300 + seed, alpha_c=alpha_c, alpha_m=alpha_m, callback=record,
             solver=solver)
        chain_means.append(np.mean(values, axis=0))
    chain_means = np.array(chain_means)
    mean = chain_means.mean(axis=0)
    se = chain_means.std(axis=0, ddof=1) / np.sqrt(n_chains)
    exact = [expected_n_categories(N, alpha_c, "ibp"),
             expected_n_features_hierarchy(N, alpha_c, alpha_m, "ibp")]
    assert np.all(np.abs(mean - exact) < 4.5 * se), (mean, exact, se)


def test_sampled_hyperparameters_keep_their_priors_without_data():
    # A successive-conditional check of the hyperparameter updates: with no data the chain
    # on (alpha_C, alpha_M, q, C, M, Z) targets the joint prior, whose marginals are the
    # vague priors: Gamma(1, 1) for the IBP concentrations (mean 1) and uniform q (mean 1/2).
    X = np.zeros((5, 0))
    alpha_c, alpha_m, q = [], [], []

    def record(it, state):
        if it >= 100:
            alpha_c.append(state.alpha_c)
            alpha_m.append(state.alpha_m)
            q.append(state.q)

    _run(X, LinearGaussianFeatures(), {"sigma_x": 1.0, "sigma_a": 1.0}, "ibp", "noisy_or",
         20000, 11, q=0.5, hyper=True, callback=record)
    assert abs(np.mean(alpha_c) - 1.0) < 0.08
    assert abs(np.mean(alpha_m) - 1.0) < 0.1
    assert abs(np.mean(q) - 0.5) < 0.04
    assert abs(np.var(q) - 1.0 / 12.0) < 0.012


def test_noisy_or_with_vanishing_q_samples_the_ibp_ibp_posterior():
    rng = np.random.default_rng(2)
    X = np.array([[1.0, 0.0], [1.1, 0.9], [0.1, 1.0], [0.0, 0.1]]) + 0.1 * rng.standard_normal(
        (4, 2)
    )
    params = {"sigma_x": 0.4, "sigma_a": 1.0}
    histograms = {}
    for link, q in (("or", 0.5), ("noisy_or", 1e-9)):
        values = Counter()

        def record(it, state, values=values):
            if it >= 300:
                values[(state.n_categories, state.n_features, int(state.live[2].sum()))] += 1

        _run(X, LinearGaussianFeatures(), params, "ibp", link, 10000, 4, alpha_c=0.8,
             alpha_m=0.8, q=q, callback=record)
        histograms[link] = values
    keys = set(histograms["or"]) | set(histograms["noisy_or"])
    n_or, n_no = sum(histograms["or"].values()), sum(histograms["noisy_or"].values())
    diff = max(abs(histograms["or"][k] / n_or - histograms["noisy_or"][k] / n_no) for k in keys)
    assert diff < 0.04


def test_same_seed_same_chain():
    X = np.random.default_rng(0).standard_normal((15, 4))
    likelihood = LinearGaussianFeatures()
    params = likelihood.initial_parameters(X, np.ones(X.shape, np.uint8))
    a = _run(X, likelihood, params, "ibp", "noisy_or", 10, 7, hyper=True)
    b = _run(X, likelihood, params, "ibp", "noisy_or", 10, 7, hyper=True)
    for name in ("C", "M", "Z", "A"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert a.q == b.q and a.alpha_c == b.alpha_c


def test_transfer_moves_alone_target_the_posterior_of_the_links():
    # A chain of transfer moves (with C held fixed) and exact draws of A visits the links M
    # in proportion to the labelled IBP prior of M's columns times the marginal likelihood
    # with A integrated out (eq. A.2), over the class of M it can reach. The class is found
    # by following the moves' discrete part from the start.
    X = np.array([[1.0, 0.2], [0.1, 1.1], [1.2, 1.0], [0.9, 1.1]])
    C = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, 1]], np.int8)
    M0 = np.array([[1, 0, 0], [0, 1, 0], [1, 1, 1]], np.int8)
    sigma_x, sigma_a = 0.4, 1.0
    L, K = M0.shape

    def neighbours(M):
        for k, j in itertools.permutations(range(K), 2):
            in_k, in_j = M[:, k] == 1, M[:, j] == 1
            if not np.any(in_k & in_j):
                new = M.copy()
                new[in_k, j] = 1
                yield new
            elif np.all(in_j[in_k]) and np.any(in_j & ~in_k):
                new = M.copy()
                new[in_k, j] = 0
                yield new

    seen, frontier = {M0.tobytes(): M0}, [M0]
    while frontier:
        for new in neighbours(frontier.pop()):
            if new.tobytes() not in seen:
                seen[new.tobytes()] = new
                frontier.append(new)
    assert len(seen) >= 6
    target = {}
    for key, M in seen.items():
        m = M.sum(axis=0)
        Z = (C.astype(int) @ M > 0).astype(np.int8)
        target[key] = np.sum(gammaln_(m) + gammaln_(L - m + 1)) + log_marginal_likelihood(
            X, Z, sigma_x, sigma_a
        )
    keys = list(target)
    logp = np.array([target[k] for k in keys])
    p = np.exp(logp - logp.max())
    p /= p.sum()
    likelihood = LinearGaussianFeatures()
    params = {"sigma_x": sigma_x, "sigma_a": sigma_a}
    rng = np.random.default_rng(0)
    state = GibbsHierarchy.new_state(X, np.ones(X.shape, np.uint8), likelihood, params,
                                     upper="dp", link="or", alpha_c=1.0, alpha_m=1.0, q=0.5,
                                     C=C, M=M0, rng=rng)
    counts = Counter()
    n_iter = 30000
    for _ in range(n_iter):
        GibbsHierarchy.transfer_features(state, likelihood, rng, n_attempts=2)
        GibbsHierarchy.sample_features(state, likelihood, rng)
        counts[np.ascontiguousarray(state.live[1]).tobytes()] += 1
    freq = np.array([counts[k] for k in keys]) / n_iter
    assert sum(counts.values()) == n_iter and set(counts) <= set(keys)
    np.testing.assert_allclose(freq, p, atol=0.02)
    # Over the 84 reachable states, chains of 20000 moves landed within a total variation
    # distance of 0.04-0.09 of the target (seeds 0-7), so 30000 are run; the target
    # without the IBP prior of M's columns lies 0.19 away.
    assert 0.5 * np.abs(freq - p).sum() < 0.1


def test_binary_feature_row_proposal_matches_the_shared_proposal():
    # feature_row_proposal with continuous=None (binary features) compiles only its own
    # Bernoulli proposal; it must draw and score exactly as the shared feature_proposal.
    from sklearn_ibp.solvers._feature_proposal_kernels import feature_proposal
    from sklearn_ibp.solvers.hierarchy import _hierarchy_kernels as kernels
    from sklearn_ibp.solvers.hierarchy.hierarchy_gibbs import continuous_marker

    lik = BinaryDetection()
    assert continuous_marker(lik) is None
    assert continuous_marker(LinearGaussianFeatures()) is np.True_
    data = np.random.default_rng(0)
    N, D = 9, 7
    X = (data.random((N, D)) < 0.4).astype(float)
    observed = (data.random((N, D)) < 0.8).astype(np.uint8)
    noise = np.vstack([np.full(D, 0.05), np.full(D, 0.2)])
    prior = np.array([0.3])
    rows = np.array([0, 2, 3, 5, 8], dtype=np.int64)
    children = np.array([1, 0, 1, 1, 1], dtype=np.int64)
    preds = (data.random((rows.size, D)) < 0.3).astype(float)
    for draw in (True, False):
        for seed in range(5):
            start = (data.random(D) < 0.5).astype(float)
            out_shared, out_binary = start.copy(), start.copy()
            args = (lik.prior_kind, prior, lik.observation_kind, noise, X, observed, rows,
                    rows.size, children, preds)
            rng_shared, rng_binary = np.random.default_rng(seed), np.random.default_rng(seed)
            shared = feature_proposal(draw, *args, out_shared, rng_shared)
            binary = kernels.feature_row_proposal(draw, *args, out_binary, rng_binary, None)
            assert shared == binary
            np.testing.assert_array_equal(out_shared, out_binary)
            assert rng_shared.random() == rng_binary.random()
