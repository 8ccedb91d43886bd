"""The accelerated sampler draws from exactly the collapsed sampler's conditionals.

Both visit rows in the same random order and use one uniform per decision, so from the
same seed the two chains must make the same choices: the accelerated sampler is the
collapsed Gibbs sampler of eq. 3.6-3.7, computed locally (eq. 4.1-4.2).
"""

import numpy as np
import pytest

from sklearn_ibp.datasets import make_ibp_linear_gaussian
from sklearn_ibp.solvers import AcceleratedIBP, CollapsedIBP
from tests.solvers._helpers import run_solver


@pytest.mark.parametrize("window", [1, 3, 7])
def test_accelerated_and_collapsed_chains_coincide(window):
    X, _, _ = make_ibp_linear_gaussian(n_samples=40, n_dims=6, alpha=2.0, random_state=0)
    hyper = dict(alpha=2.0, beta=1.0, sigma_x=0.3, sigma_a=2.0)
    record = lambda s: s.active_Z.copy()  # noqa: E731
    # Algorithm 1 alone: the default split-merge and complement moves are not collapsed Gibbs.
    _, fast = run_solver(AcceleratedIBP(window=window, split_merge=0, complement=False), X,
                         hyper, 30, seed=5, record=record)
    _, slow = run_solver(CollapsedIBP(), X, hyper, 30, seed=5, record=record)
    # Windows change which rows are out of the posterior together, not the conditionals.
    assert max(z.shape[1] for z in slow) >= 3  # the chain did something
    for a, b in zip(fast, slow, strict=True):
        np.testing.assert_array_equal(a, b)
