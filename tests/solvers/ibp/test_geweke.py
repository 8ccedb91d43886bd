"""Geweke's successive-conditional test of the whole sampling step with hyperparameters.

Alternate (1) drawing data from the model given the current parameters, X ~ p(X | Z,
sigma_x, sigma_a) with fresh features A from their prior, and (2) one sampler step on
(Z, alpha, sigma_x, sigma_a) given X: a sweep of the solver, then the hyperparameter
updates of ``IBPFactorAnalysis(sample_hyperparameters=True)``. If every update leaves the
posterior invariant, the parameters are marginally distributed as the prior: alpha and
both precisions Gamma(1, 1) (mean 1) and E[K] = E[alpha] H_N.
"""

import numpy as np
import pytest

from sklearn_ibp import IBPFactorAnalysis
from sklearn_ibp.priors.ibp import harmonic_rate, sample_ibp
from sklearn_ibp.solvers import AcceleratedIBP, SemiCollapsedIBP, UncollapsedIBP
from tests.solvers.test_prior_recovery import batch_means_se

N_ROWS, N_DIMS, N_STEPS = 6, 2, 30000


@pytest.mark.parametrize(
    "solver", [AcceleratedIBP(), UncollapsedIBP(), SemiCollapsedIBP()],
    ids=lambda s: s.name,
)
def test_successive_conditionals_recover_the_prior(solver):
    rng = np.random.default_rng(0)
    estimator = IBPFactorAnalysis(sample_hyperparameters=True)
    alpha, prec_x, prec_a = rng.gamma(1.0), rng.gamma(1.0), rng.gamma(1.0)
    Z = sample_ibp(N_ROWS, alpha, random_state=rng)
    hyper = dict(alpha=alpha, beta=1.0, sigma_x=prec_x**-0.5, sigma_a=prec_a**-0.5)
    state = solver.initialize(np.zeros((N_ROWS, N_DIMS)), Z, hyper, rng)
    draws = np.empty((N_STEPS, 4))
    for step in range(N_STEPS):
        Zf = state.active_Z.astype(float)
        A = state.sigma_a * rng.standard_normal((state.n_features, N_DIMS))
        X = Zf @ A + state.sigma_x * rng.standard_normal((N_ROWS, N_DIMS))
        solver.set_data(state, X)
        if hasattr(solver, "_draw_features"):
            solver._draw_features(state, rng)  # A is part of the explicit samplers' state
        estimator._iterate(solver, state, rng, missing=None)
        draws[step] = (state.alpha, state.sigma_x**-2, state.sigma_a**-2, state.n_features)
    draws = draws[1000:]
    for col, name in enumerate(["alpha", "precision_x", "precision_a"]):
        mean, se = draws[:, col].mean(), batch_means_se(draws[:, col])
        assert abs(mean - 1.0) < 4 * se, (name, mean, se)
        assert se < 0.15, (name, se)  # the check has power
    k_mean, k_se = draws[:, 3].mean(), batch_means_se(draws[:, 3])
    assert abs(k_mean - harmonic_rate(N_ROWS)) < 4 * k_se, (k_mean, k_se)
