"""The dd-IBP sampler: prior recovery with a flat likelihood, exact posterior on N = 4."""

from itertools import product

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import poisson

from sklearn_ibp.likelihoods import log_marginal_likelihood
from sklearn_ibp.priors.ddibp import (
    compute_reachability,
    decay_proximity,
    normalized_proximity,
    pairwise_distances_for_ddibp,
    sample_ddibp,
)
from sklearn_ibp.solvers.ddibp.ddibp_gibbs import GibbsDDIBP
from tests._enumeration import history_key
from tests.solvers.test_exact_posterior import chi_square_against
from tests.solvers.test_prior_recovery import batch_means_se


def exponential_proximity(x, decay=1.0, sequential=False):
    D = pairwise_distances_for_ddibp(np.asarray(x, float)[:, None], sequential=sequential)
    P = decay_proximity(D, "exponential", decay=decay)
    A, h = normalized_proximity(P)
    return P, A, h


def run_chain(X, A, h, alpha, n_sweeps, thin, seed, sigma_x=1.0, sigma_a=1.0, **solver_params):
    rng = np.random.default_rng(seed)
    solver = GibbsDDIBP(**solver_params)
    hyper = dict(alpha=alpha, sigma_x=sigma_x, sigma_a=sigma_a, proximity=A, h=h)
    state = solver.initialize(X, None, hyper, rng)
    out = []
    for it in range(n_sweeps):
        solver.sweep(state, rng)
        if it % thin == 0:
            out.append(state.active_Z.copy())
    return out


@pytest.mark.parametrize("link_update", ["gibbs", "metropolis"])
def test_flat_likelihood_reproduces_the_prior(link_update):
    x = [0.0, 0.5, 1.5, 3.0, 3.2, 5.0]
    P, A, h = exponential_proximity(x)
    alpha = 2.0
    rng = np.random.default_rng(0)
    prior_ones = np.array([sample_ddibp(P, alpha, rng)[0].sum() for _ in range(20000)])
    draws = run_chain(np.zeros((6, 0)), A, h, alpha, n_sweeps=12000, thin=2, seed=1,
                      link_update=link_update)[200:]
    ks = np.array([z.shape[1] for z in draws])
    ones = np.array([z.sum() for z in draws])
    rate = alpha * np.sum(1.0 / h)  # K ~ Poisson(alpha sum_i 1/h_i) under the prior
    assert abs(ks.mean() - rate) < 4 * batch_means_se(ks)
    se = np.hypot(batch_means_se(ones), prior_ones.std() / np.sqrt(prior_ones.size))
    assert abs(ones.mean() - prior_ones.mean()) < 4 * se, (ones.mean(), prior_ones.mean(), se)
    assert se < 0.2


def test_constant_decay_sequential_is_the_ibp_under_the_sampler():
    # h_i = i for constant decay with sequential distances, so K ~ Poisson(alpha H_N).
    D = pairwise_distances_for_ddibp(np.arange(8.0)[:, None], sequential=True)
    A, h = normalized_proximity(decay_proximity(D, "constant"))
    draws = run_chain(np.zeros((8, 0)), A, h, 1.5, n_sweeps=6000, thin=2, seed=2)[100:]
    ks = np.array([z.shape[1] for z in draws])
    row_sums = np.concatenate([z.sum(axis=1) for z in draws])
    assert abs(ks.mean() - 1.5 * np.sum(1.0 / np.arange(1, 9))) < 4 * batch_means_se(ks)
    assert abs(row_sums.mean() - 1.5) < 4 * batch_means_se(row_sums)


def enumerate_ddibp_posterior(X, P_norm, h, alpha, sigma_x, sigma_a, max_features):
    """Posterior over left-ordered classes of Z by summing labelled (c*, C) configurations.

    Given its owner, a dish's column is a function of its links alone, so each owner's
    distribution over columns is enumerated once (N^N link vectors), then configurations
    are ordered lists of (owner, column) with Poisson(alpha / h_i) owned counts.
    """
    N = X.shape[0]
    column_prob = []
    for owner in range(N):
        probs = {}
        for links in product(range(N), repeat=N):
            links = np.array(links)
            p = np.prod(P_norm[np.arange(N), links])
            if p == 0:
                continue
            col = tuple(compute_reachability(links, owner).astype(int))
            probs[col] = probs.get(col, 0.0) + p
        column_prob.append(probs)
    weights = 1 << np.arange(N - 1, -1, -1)
    # Each owner's columns as integer histories (the encoding of history_key) with the log
    # of their probability; a column always holds its owner, so no history is zero.
    owner_cols = [
        [(int(np.dot(col, weights)), np.log(p)) for col, p in probs.items()]
        for probs in column_prob
    ]
    # Summing over ordered lists of (owner, column) is done dish by dish, merging lists
    # that give the same multiset of histories (the class key) as they are built.
    log_post = {}
    log_lik = {}
    for counts in product(range(max_features + 1), repeat=N):
        if sum(counts) > max_features:
            continue
        log_owner = float(np.sum(poisson.logpmf(counts, alpha / h)))
        partial = {(): log_owner}
        for owner in (i for i in range(N) for _ in range(counts[i])):
            merged = {}
            for key, lp in partial.items():
                for hist, lq in owner_cols[owner]:
                    new = tuple(sorted(key + (hist,), reverse=True))
                    merged[new] = np.logaddexp(merged.get(new, -np.inf), lp + lq)
            partial = merged
        for key, lp in partial.items():
            if key not in log_lik:
                Z = ((np.array(key, dtype=np.int64)[None, :] // weights[:, None]) % 2)
                log_lik[key] = log_marginal_likelihood(
                    X, Z.astype(float).reshape(N, len(key)), sigma_x, sigma_a
                )
            log_post[key] = np.logaddexp(log_post.get(key, -np.inf), lp + log_lik[key])
    keys = list(log_post)
    values = np.array([log_post[k] for k in keys])
    return dict(zip(keys, np.exp(values - logsumexp(values)), strict=True))


@pytest.mark.parametrize(
    "solver_params",
    [{}, {"link_update": "metropolis", "own_weight": 0.5}],
    ids=["gibbs-links", "metropolis-links"],
)
def test_exact_posterior_on_four_rows(solver_params):
    rng = np.random.default_rng(3)
    x = [0.0, 0.3, 2.0, 2.4]
    _, A, h = exponential_proximity(x, decay=1.0)
    Z = np.array([[1, 0], [1, 0], [0, 1], [1, 1]], dtype=float)
    X = Z @ np.array([[1.5, -1.0], [0.5, 1.5]]) + 0.4 * rng.normal(size=(4, 2))
    # alpha is small so that classes with more than 4 features hold little mass (1.4%,
    # measured against an enumeration up to 5 features).
    alpha, sigma_x, sigma_a = 0.4, 0.4, 1.5
    posterior = enumerate_ddibp_posterior(X, A, h, alpha, sigma_x, sigma_a, max_features=4)
    # Ownership moves are Metropolis proposals from the prior: thin generously.
    draws = run_chain(X, A, h, alpha, n_sweeps=40000, thin=20, seed=4, sigma_x=sigma_x,
                      sigma_a=sigma_a, **solver_params)[20:]
    keys = [history_key(z) for z in draws]
    _, dof, p_value, counts, expected = chi_square_against(posterior, keys)
    assert dof >= 8
    assert p_value > 1e-3, (counts, expected)


@pytest.mark.parametrize("decay", [0.5, 3.0])
def test_closer_rows_share_more_features_in_the_sampler(decay):
    # With a flat likelihood, rows 0 and 1 (distance 0.1) share more features than rows 0
    # and 3 (distance 4): the sampler keeps the dd-IBP's distance dependence.
    _, A, h = exponential_proximity([0.0, 0.1, 2.0, 4.0], decay=decay)
    draws = run_chain(np.zeros((4, 0)), A, h, 3.0, n_sweeps=4000, thin=2, seed=5)[100:]
    near = np.array([np.sum(z[0] * z[1]) for z in draws])
    far = np.array([np.sum(z[0] * z[3]) for z in draws])
    assert near.mean() - far.mean() > 4 * batch_means_se(near - far)


def _random_links(rng, N, owner):
    """Random links of one dish: uniform targets (so cycles avoiding the owner are common),
    plus, half of the time, the owner linking into its own subtree (a cycle through it)."""
    links = rng.integers(0, N, size=N)
    if rng.random() < 0.5:
        subtree = np.flatnonzero(compute_reachability(links, owner))
        links[owner] = rng.choice(subtree)
    return links


def test_upstream_walk_and_side_masses_match_reachability():
    # The link kernel finds the customers upstream of i by a walk over the reverse
    # adjacency it keeps up to date, and the mass of the reaching side by a sum over the
    # dish's rows; both against the plain computation from compute_reachability.
    from sklearn_ibp.solvers.ddibp._ddibp_kernels import (
        _build_children,
        _collect_upstream,
        _not_side_mass,
        _push_child,
        _reach_mass,
        _unlink_child,
    )

    rng = np.random.default_rng(11)
    n_cycle_cases = n_owner_cycles = 0
    for _ in range(200):
        N = int(rng.integers(2, 14))
        owner = int(rng.integers(N))
        links = _random_links(rng, N, owner)
        A = rng.random((N, N)) * (rng.random((N, N)) < 0.8)
        A[np.arange(N), np.arange(N)] = rng.random(N) + 0.1
        A /= A.sum(axis=1, keepdims=True)
        head, nxt, prv = (np.empty(N, dtype=np.int64) for _ in range(3))
        _build_children(links, owner, head, nxt, prv)
        stamp = np.zeros(N, dtype=np.int64)
        out = np.empty(N, dtype=np.int64)
        mark = 0
        for _ in range(3 * N):  # check every customer, then move one link, and again
            z = compute_reachability(links, owner)
            members = np.flatnonzero(z).astype(np.int64)
            Zk = z.astype(np.int8)[:, None]
            n_owner_cycles += bool(z[links[owner]]) and links[owner] != owner
            n_cycle_cases += bool((~z).any())
            for i in range(N):
                if i == owner:
                    continue
                cut = links.copy()
                cut[i] = i
                cut[owner] = owner
                expected = compute_reachability(cut, i)
                mark += 1
                size = _collect_upstream(i, head, nxt, stamp, mark, out)
                got = np.zeros(N, dtype=bool)
                got[out[:size]] = True
                assert size == expected.sum()
                np.testing.assert_array_equal(got, expected)
                np.testing.assert_array_equal(stamp == mark, expected)
                reach_side = z & ~expected
                p_reach = _reach_mass(A[i], members, members.size, stamp, mark)
                assert p_reach == pytest.approx(A[i, reach_side].sum(), rel=1e-12, abs=0)
                p_not = _not_side_mass(A[i], Zk, 0, stamp, mark)
                assert p_not == pytest.approx(A[i, ~reach_side].sum(), rel=1e-12)
                assert p_not >= A[i, i] > 0  # i is always on the side that does not reach
            # Move one link (the owner's too, which is in no child list).
            i, t = int(rng.integers(N)), int(rng.integers(N))
            if i != owner and t != links[i]:
                _unlink_child(links[i], i, head, nxt, prv)
                _push_child(t, i, head, nxt, prv)
            links[i] = t
        # The adjacency kept up to date equals the one built afresh.
        fresh = [np.empty(N, dtype=np.int64) for _ in range(3)]
        _build_children(links, owner, *fresh)
        for parent in range(N):
            kept, rebuilt = [], []
            for lst, (h, nx) in ((kept, (head, nxt)), (rebuilt, fresh[:2])):
                c = h[parent]
                while c >= 0:
                    lst.append(c)
                    c = nx[c]
            assert sorted(kept) == sorted(rebuilt)
            assert sorted(kept) == [j for j in range(N) if j != owner and links[j] == parent]
    assert n_cycle_cases > 100 and n_owner_cycles > 100


@pytest.mark.parametrize("metropolis", [True, False])
def test_link_sweep_keeps_z_and_the_statistics_consistent(metropolis):
    # After a sweep of the link kernel alone, Z is the reachability of the links and the
    # statistics it updated in place agree with a recomputation.
    from sklearn_ibp.solvers.ddibp._ddibp_kernels import sweep_connections

    rng = np.random.default_rng(12)
    N = 40
    _, A, h = exponential_proximity(np.arange(N, dtype=float), decay=0.3)
    X = rng.normal(size=(N, 3))
    solver = GibbsDDIBP()
    hyper = dict(alpha=3.0, sigma_x=0.7, sigma_a=1.0, proximity=A, h=h)
    state = solver.initialize(X, None, hyper, rng)
    assert state.n_features >= 3
    st = state.stats
    for _ in range(5):
        sweep_connections(
            state.X, state.Z, st["links"], st["owners"], state.n_features,
            st["proximity"], st["proximity_t"], st["cum_proximity"], st["Minv"], st["G"],
            st["cross"], state.sigma_x, state.sigma_a, metropolis, rng,
        )
        K = state.n_features
        for k in range(K):
            np.testing.assert_array_equal(
                state.Z[:, k], compute_reachability(st["links"][k], st["owners"][k])
            )
        Minv, G, cross = st["Minv"].copy(), st["G"].copy(), st["cross"].copy()
        solver._refresh(state)
        np.testing.assert_allclose(Minv[:K, :K], st["Minv"][:K, :K], atol=1e-9)
        np.testing.assert_allclose(G[:K], st["G"][:K], atol=1e-9)
        np.testing.assert_allclose(cross[:K], st["cross"][:K], atol=1e-9)


@pytest.mark.parametrize("metropolis", [True, False])
def test_link_sweep_leaves_the_full_model_for_odd_and_even_dish_counts(metropolis):
    # The Gibbs kernel writes the model without a dish's column into the work arrays and
    # lets the two trade places after each dish, so after an odd number of dishes the full
    # model is in the work arrays and sweep_connections copies it back: M^{-1} and G must
    # agree with a recomputation from the new Z for both parities (fails without the copy).
    from sklearn_ibp.solvers.ddibp._ddibp_kernels import sweep_connections

    N = 30
    _, A, h = exponential_proximity(np.arange(N, dtype=float), decay=0.5)
    seen = set()
    for seed in range(40):
        rng = np.random.default_rng(seed)
        X = rng.normal(size=(N, 4))
        solver = GibbsDDIBP()
        hyper = dict(alpha=2.0, sigma_x=0.8, sigma_a=1.0, proximity=A, h=h)
        state = solver.initialize(X, None, hyper, rng)
        K = state.n_features
        if K == 0 or K % 2 in seen:
            continue
        seen.add(K % 2)
        st = state.stats
        Z_before = state.Z[:, :K].copy()
        sweep_connections(
            state.X, state.Z, st["links"], st["owners"], K, st["proximity"],
            st["proximity_t"], st["cum_proximity"], st["Minv"], st["G"], st["cross"],
            state.sigma_x, state.sigma_a, metropolis, rng,
        )
        assert not np.array_equal(Z_before, state.Z[:, :K])  # the links moved rows
        Minv, G = st["Minv"].copy(), st["G"].copy()
        solver._refresh(state)
        np.testing.assert_allclose(Minv[:K, :K], st["Minv"][:K, :K], atol=1e-9)
        np.testing.assert_allclose(G[:K], st["G"][:K], atol=1e-9)
        if len(seen) == 2:
            break
    assert seen == {0, 1}


def test_regularised_inverse_matches_the_kernel_inverse_bit_for_bit():
    """M^{-1} is LAPACK's LU inverse from Python (not compiled in a fit): the same numbers
    as the numba kernel it replaced (np.linalg.inv in _full_inverse), and the empty case."""
    from sklearn_ibp.solvers.ddibp.ddibp_gibbs import _regularised_inverse
    from sklearn_ibp.solvers.ibp._collapsed_kernels import _full_inverse

    rng = np.random.default_rng(0)
    for _ in range(20):
        K = int(rng.integers(1, 30))
        Z = (rng.random((int(rng.integers(K, 120)), K)) < rng.random()).astype(float)
        ratio = float(10 ** rng.uniform(-3, 3))
        expected = np.zeros((K, K))
        _full_inverse(Z.T @ Z, K, ratio, expected)
        assert np.array_equal(_regularised_inverse(Z.T @ Z, ratio), expected)
    assert _regularised_inverse(np.zeros((0, 0)), 1.0).shape == (0, 0)


def test_prior_links_drawn_in_python_are_the_kernels_draws():
    """The initial links come from NumPy (so a fit does not compile draw_link): the same
    targets from the same uniforms, and the generator left in the same state."""
    from sklearn_ibp.solvers.ddibp._ddibp_kernels import draw_link
    from sklearn_ibp.solvers.ddibp.ddibp_gibbs import _draw_prior_links

    for seed in range(30):
        g = np.random.default_rng(seed)
        N, K = int(g.integers(1, 40)), int(g.integers(0, 8))
        A = g.random((N, N)) * (g.random((N, N)) < 0.5)  # zero proximities tie the CDF
        A[np.arange(N), np.arange(N)] += 0.1
        cum = np.ascontiguousarray(np.cumsum(A, axis=1))
        kernel_rng, python_rng = np.random.default_rng(seed), np.random.default_rng(seed)
        expected = np.zeros((N, K), dtype=np.int64)
        for k in range(K):
            for i in range(N):
                expected[i, k] = draw_link(cum[i], kernel_rng)
        np.testing.assert_array_equal(_draw_prior_links(cum, K, python_rng), expected)
        assert kernel_rng.random() == python_rng.random()


def test_births_with_prior_links_have_their_reachable_rows():
    """The ownership kernel's walk (written in its body) against compute_reachability:
    with own_weight=0 every birth draws all its links from the prior."""
    rng = np.random.default_rng(5)
    N = 30
    _, A, h = exponential_proximity(np.arange(N, dtype=float), decay=0.5)
    X = rng.normal(size=(N, 2))
    solver = GibbsDDIBP(own_weight=0.0)
    hyper = dict(alpha=4.0, sigma_x=1.0, sigma_a=1.0, proximity=A, h=h)
    state = solver.initialize(X, np.zeros((N, 0)), hyper, rng)
    n_births = 0
    for _ in range(30):
        before = state.n_features
        solver.sweep(state, rng)
        n_births += max(state.n_features - before, 0)
        st = state.stats
        for k in range(state.n_features):
            np.testing.assert_array_equal(
                state.Z[:, k], compute_reachability(st["links"][k], st["owners"][k])
            )
    assert n_births >= 5
