"""With missing entries, the sampler (sweeps plus redrawing the missing entries) targets
the posterior of Z given the observed entries only.

The posterior is enumerated with the masked marginal likelihood of eq. A.2 (each column
sees only its observed rows); the chain redraws the missing entries from the model after
every sweep, as ``IBPFactorAnalysis.fit`` does.
"""

from itertools import combinations_with_replacement

import numpy as np
import pytest
from scipy.special import logsumexp

from sklearn_ibp import IBPFactorAnalysis
from sklearn_ibp.likelihoods import log_marginal_likelihood
from sklearn_ibp.priors import ibp_log_prob
from sklearn_ibp.solvers import AcceleratedIBP, SemiCollapsedIBP
from tests._enumeration import history_key
from tests.solvers.test_exact_posterior import chi_square_against

ALPHA, SIGMA_X, SIGMA_A, N_ROWS = 0.7, 0.4, 1.5, 4


def masked_posterior(X, max_features=4):
    n_hist = 2**N_ROWS - 1
    keys, logps = [], []
    for K in range(max_features + 1):
        for combo in combinations_with_replacement(range(1, n_hist + 1), K):
            Z = np.array([[(h >> (N_ROWS - 1 - n)) & 1 for h in combo] for n in range(N_ROWS)])
            Z = Z.reshape(N_ROWS, K)
            keys.append(tuple(sorted(combo, reverse=True)))
            logps.append(ibp_log_prob(Z, ALPHA) + log_marginal_likelihood(X, Z, SIGMA_X, SIGMA_A))
    logps = np.array(logps)
    return dict(zip(keys, np.exp(logps - logsumexp(logps)), strict=True))


# Thinning: the integrated autocorrelation times of the indicators of the six likeliest
# classes, per step, are 3-3.4 for AcceleratedIBP and 3.4-10.6 for SemiCollapsedIBP
# (40000 steps), so a draw every 10 and 25 steps is close to independent (lag
# autocorrelation below 0.01) and 2500 draws keep their full power. Thinned by 25, seeds
# 0-4 of the chain gave p = 0.33, 0.92, 0.04, 0.47, 0.11, and p < 1e-15 against the
# zero-filled data.
@pytest.mark.parametrize(
    "solver, thin", [(AcceleratedIBP(), 10), (SemiCollapsedIBP(), 25)], ids=lambda v: str(v)
)
def test_missing_entries_are_integrated_out(solver, thin):
    rng = np.random.default_rng(4)
    Z = np.array([[1, 0], [1, 1], [0, 1], [1, 1]], dtype=float)
    X = Z @ np.array([[1.5, -1.0], [0.5, 1.5]]) + SIGMA_X * rng.normal(size=(4, 2))
    X[1, 0] = np.nan
    X[2, 1] = np.nan
    posterior = masked_posterior(X)
    missing = np.isnan(X)
    estimator = IBPFactorAnalysis(sample_hyperparameters=False)
    hyper = dict(alpha=ALPHA, beta=1.0, sigma_x=SIGMA_X, sigma_a=SIGMA_A)
    chain_rng = np.random.default_rng(0)
    state = solver.initialize(
        np.where(missing, 0.0, X), np.zeros((4, 0), np.int8), hyper, chain_rng
    )
    keys = []
    for step in range(2500 * thin):
        estimator._iterate(solver, state, chain_rng, missing)
        if step % thin == 0 and step > 0:
            keys.append(history_key(state.active_Z))
    _, dof, p_value, counts, expected = chi_square_against(posterior, keys)
    assert dof >= 8
    assert p_value > 1e-3, (counts, expected)
    # Treating the missing entries as zeros would give a different posterior: the test
    # can tell the two apart.
    zero_filled = masked_posterior(np.nan_to_num(X))
    assert chi_square_against(zero_filled, keys)[2] < 1e-6
