"""The birth proposal's links conditioned on avoiding the owner: exact, and bounded when
a customer links to the owner with probability near one (the rejection loop had no cap)."""

import numpy as np
import pytest

from sklearn_ibp.solvers.ddibp._ddibp_kernels import _draw_link_avoiding


@pytest.mark.parametrize("owner", [0, 2, 4])
@pytest.mark.parametrize("owner_mass", [0.5, 1.0 - 1e-9])
def test_links_avoiding_the_owner_follow_the_conditional_prior(owner, owner_mass):
    rest = np.array([0.1, 0.4, 0.2, 0.3])  # the other four targets, relative weights
    weights = np.insert(rest / rest.sum() * (1.0 - owner_mass), owner, owner_mass)
    cum = np.cumsum(weights)
    rng = np.random.default_rng(0)
    n = 20000
    draws = np.array([_draw_link_avoiding(cum, owner, rng) for _ in range(n)])
    assert not np.any(draws == owner)
    freq = np.bincount(draws, minlength=5) / n
    expected = np.insert(rest / rest.sum(), owner, 0.0)
    # binomial standard errors are at most 0.0035 at n = 20000: 5 of them
    np.testing.assert_allclose(freq, expected, atol=0.018)
