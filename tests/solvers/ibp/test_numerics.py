"""Numerical health: rank-one drift of the accelerated sampler, and badly scaled data."""

import numpy as np
import pytest

from sklearn_ibp import IBPFactorAnalysis
from sklearn_ibp.datasets import make_block_images, make_ibp_linear_gaussian
from sklearn_ibp.likelihoods import feature_posterior
from sklearn_ibp.solvers import AcceleratedIBP
from tests.solvers._helpers import run_solver


@pytest.mark.parametrize("window", [1, 3])
def test_maintained_posterior_matches_recomputation(window):
    # 20 sweeps over 500 rows: 10,000 row removals and insertions, never refreshed.
    X, _, _ = make_ibp_linear_gaussian(n_samples=500, n_dims=20, alpha=3.0, random_state=1)
    X -= X.mean(axis=0)
    hyper = dict(alpha=3.0, beta=1.0, sigma_x=0.5, sigma_a=1.5)
    solver = AcceleratedIBP(window=window, refresh_every=0)
    state, _ = run_solver(solver, X, hyper, n_sweeps=20, seed=0, record=lambda s: None)
    assert state.n_features >= 3
    mean, cov = solver.feature_posterior(state)
    fresh_mean, fresh_cov = feature_posterior(X, state.active_Z, 0.5, 1.5)
    np.testing.assert_allclose(mean, fresh_mean, rtol=0, atol=1e-8 * np.abs(fresh_mean).max())
    np.testing.assert_allclose(cov, fresh_cov, rtol=0, atol=1e-8 * np.abs(fresh_cov).max())
    # The exact sufficient statistics are exact.
    gram, cross = solver.sufficient_statistics(state)
    Z = state.active_Z.astype(float)
    np.testing.assert_array_equal(gram, Z.T @ Z)
    np.testing.assert_allclose(cross, Z.T @ X, atol=1e-9)


@pytest.mark.parametrize("solver", ["accelerated", "collapsed", "uncollapsed", "semi_collapsed"])
@pytest.mark.parametrize("sample_hyperparameters", [False, True])
def test_columns_scaled_by_ten_thousand(solver, sample_hyperparameters):
    X, _, _ = make_block_images(n_samples=60, random_state=0)
    scales = np.tile([1.0, 1e2, 1e4], 12)
    X = X * scales
    model = IBPFactorAnalysis(
        solver=solver, n_iter=20, sample_hyperparameters=sample_hyperparameters, random_state=0
    ).fit(X)
    for name, trace in model.traces_.items():
        assert np.all(np.isfinite(trace)), name
    assert np.all(np.isfinite(model.components_))
    out = model.transform(X)
    assert np.all(np.isfinite(out)) and out.min() >= 0 and out.max() <= 1
    assert np.all(np.isfinite(model.score_samples(X)))


def test_refresh_from_python_matches_kernel():
    """The sweep's periodic refresh, made from Python with LAPACK, gives the kernel's
    numbers (the fingerprints of the fits show them identical; here to 1e-12)."""
    from sklearn_ibp.solvers.ibp._accelerated_kernels import (
        refresh_from_statistics,
        refresh_posterior,
    )

    rng = np.random.default_rng(4)
    for K in (1, 4, 11):
        Z = (rng.random((40, K)) < 0.4).astype(float)
        X = rng.normal(size=(40, 6))
        gram = np.zeros((K + 3, K + 3))
        cross = np.zeros((K + 3, 6))
        gram[:K, :K] = Z.T @ Z
        cross[:K] = Z.T @ X
        results = []
        for refresh in (refresh_posterior, refresh_from_statistics):
            cov, mean = np.zeros_like(gram), np.zeros_like(cross)
            refresh(gram, cross, cov, mean, K, 0.6**2, 1.3**2)
            results.append((cov, mean))
        (cov, mean), (cov_py, mean_py) = results
        np.testing.assert_allclose(cov_py, cov, rtol=1e-12, atol=0)
        np.testing.assert_allclose(mean_py, mean, rtol=1e-12, atol=1e-15)
        np.testing.assert_array_equal(cov_py[K:], 0.0)  # spare slots untouched
