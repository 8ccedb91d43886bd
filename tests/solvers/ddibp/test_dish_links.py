"""The birth proposal's links conditioned on avoiding the owner: exact, and bounded when
a customer links to the owner with probability near one (the rejection loop had no cap).

The draw is written inside the ownership kernel, so it is tested through it: births of
dishes of one owner alone, accepted whatever their column, and the links they bring."""

import numpy as np
import pytest

from sklearn_ibp.solvers.ddibp._ddibp_kernels import sweep_ownership


def _links_of_owned_dishes(weights, owner, n_dishes, seed=0):
    """Links of at least ``n_dishes`` dishes of ``owner`` born with links that avoid it,
    every customer's prior row being ``weights``."""
    N = weights.size
    cap = 256
    cum = np.ascontiguousarray(np.tile(np.cumsum(weights), (N, 1)))
    # log P(nobody links to i) = 0 makes q / p = 1 for links that avoid i, and a huge mu
    # accepts every birth (and refuses every death); own_weight near one makes almost
    # every proposal one of the owner alone.
    log_no_link = np.zeros(N)
    mu = np.full(N, 1e100)
    X = np.zeros((N, 1))
    rng = np.random.default_rng(seed)
    found = []
    while sum(len(f) for f in found) < n_dishes:
        Z = np.zeros((N, cap), dtype=np.int8)
        links = np.zeros((cap, N), dtype=np.int64)
        owners = np.full(cap, -1, dtype=np.int64)
        Minv, G, cross = np.zeros((cap, cap)), np.zeros((cap, 1)), np.zeros((cap, 1))
        K = 0
        while K < cap - N:
            K, _ = sweep_ownership(
                X, Z, links, owners, K, cum, log_no_link, mu, Minv, G, cross, 1.0, 1.0,
                1.0 - 1e-12, np.int64(cap), 0, rng, np.zeros((2, cap)), np.zeros(1),
                np.zeros((2, N), dtype=np.int64), np.zeros(N, dtype=np.int8),
            )
            K = int(K)
        mine = owners[:K] == owner
        # a dish of the owner alone: only the owner has it
        assert np.all(Z[:, :K][:, mine].sum(axis=0) == 1)
        assert np.all(Z[owner, :K][mine] == 1)
        found.append(links[:K][mine])
    return np.concatenate(found)


@pytest.mark.parametrize("owner", [0, 2, 4])
@pytest.mark.parametrize("owner_mass", [0.5, 1.0 - 1e-9])
def test_links_avoiding_the_owner_follow_the_conditional_prior(owner, owner_mass):
    rest = np.array([0.1, 0.4, 0.2, 0.3])  # the other four targets, relative weights
    weights = np.insert(rest / rest.sum() * (1.0 - owner_mass), owner, owner_mass)
    links = _links_of_owned_dishes(weights, owner, 5000)
    others = np.arange(weights.size) != owner
    draws = links[:, others].ravel()  # the owner's own link is drawn from its prior row
    n = draws.size
    assert n >= 20000
    assert not np.any(draws == owner)
    freq = np.bincount(draws, minlength=5) / n
    expected = np.insert(rest / rest.sum(), owner, 0.0)
    # binomial standard errors are at most 0.0035 at n >= 20000: 5 of them
    np.testing.assert_allclose(freq, expected, atol=0.018)
