"""The linear-Gaussian likelihood against brute-force Gaussian computations."""

import numpy as np
import pytest
from scipy.stats import multivariate_normal

from sklearn_ibp.likelihoods import (
    feature_posterior,
    information_form,
    log_marginal_likelihood,
    row_log_predictive,
    sample_features,
)
from sklearn_ibp.likelihoods._linear_gaussian_kernels import (
    add_row_to_posterior,
    remove_row_from_posterior,
)

SX, SA = 0.6, 1.3


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    Z = (rng.random((15, 4)) < 0.5).astype(np.int8)
    X = Z @ rng.normal(size=(4, 3)) * SA + SX * rng.normal(size=(15, 3))
    return X, Z


def brute_force_marginal(X, Z):
    N = X.shape[0]
    cov = SA**2 * Z @ Z.T + SX**2 * np.eye(N)
    total = 0.0
    for d in range(X.shape[1]):
        seen = ~np.isnan(X[:, d])
        total += multivariate_normal(np.zeros(seen.sum()), cov[np.ix_(seen, seen)]).logpdf(
            X[seen, d]
        )
    return total


def test_marginal_matches_multivariate_normal(data):
    X, Z = data
    assert log_marginal_likelihood(X, Z, SX, SA) == pytest.approx(brute_force_marginal(X, Z))


def test_marginal_with_missing_entries_is_masked_not_filled(data):
    X, Z = data
    X = X.copy()
    X[[1, 4, 4, 9], [0, 1, 2, 0]] = np.nan
    expected = brute_force_marginal(X, Z)
    assert log_marginal_likelihood(X, Z, SX, SA) == pytest.approx(expected)
    filled = np.nan_to_num(X)
    assert log_marginal_likelihood(filled, Z, SX, SA) != pytest.approx(expected)


def test_posterior_is_the_regression_posterior(data):
    X, Z = data
    mean, cov = feature_posterior(X, Z, SX, SA)
    Zf = Z.astype(float)
    M = Zf.T @ Zf + (SX / SA) ** 2 * np.eye(4)  # eq. A.3
    np.testing.assert_allclose(mean, np.linalg.solve(M, Zf.T @ X))
    np.testing.assert_allclose(cov, SX**2 * np.linalg.inv(M))
    precision, shift = information_form(X, Z, SX, SA)
    np.testing.assert_allclose(np.linalg.solve(precision, shift), mean)


def test_posterior_with_missing_entries_per_dimension(data):
    X, Z = data
    X = X.copy()
    X[[2, 3], 1] = np.nan
    mean, cov = feature_posterior(X, Z, SX, SA)
    assert cov.shape == (3, 4, 4)
    keep = ~np.isnan(X[:, 1])
    m1, c1 = feature_posterior(X[keep][:, [1]], Z[keep], SX, SA)
    np.testing.assert_allclose(mean[:, 1], m1[:, 0])
    np.testing.assert_allclose(cov[1], c1)


def test_rank_one_moves_match_recomputation(data):
    X, Z = data
    mean, cov = feature_posterior(X, Z, SX, SA)
    mean, cov = mean.copy(), cov.copy()
    for n in [3, 7, 0]:
        remove_row_from_posterior(cov, mean, Z[n], X[n], SX**2, SA**2, 4)
    rest = np.setdiff1d(np.arange(15), [3, 7, 0])
    m, c = feature_posterior(X[rest], Z[rest], SX, SA)
    np.testing.assert_allclose(mean, m, atol=1e-12)
    np.testing.assert_allclose(cov, c, atol=1e-12)
    for n in [7, 0, 3]:
        add_row_to_posterior(cov, mean, Z[n], X[n], SX**2, 4)
    m, c = feature_posterior(X, Z, SX, SA)
    np.testing.assert_allclose(mean, m, atol=1e-12)
    np.testing.assert_allclose(cov, c, atol=1e-12)


def test_row_predictive_matches_leave_one_out_marginal(data):
    X, Z = data
    # p(x_n | X_-n, Z) = p(X | Z) / p(X_-n | Z_-n) (eq. 4.1 with a window of one row).
    n = 5
    rest = np.arange(15) != n
    mean, cov = feature_posterior(X[rest], Z[rest], SX, SA)
    lp = row_log_predictive(X[[n]], Z[[n]], mean, cov, SX)[0]
    ratio = log_marginal_likelihood(X, Z, SX, SA) - log_marginal_likelihood(
        X[rest], Z[rest], SX, SA
    )
    assert lp == pytest.approx(ratio)
    Xm = X[[n]].copy()
    Xm[0, 1] = np.nan
    lp_masked = row_log_predictive(Xm, Z[[n]], mean, cov, SX)[0]
    Xfull = X.copy()
    Xfull[n, 1] = np.nan
    ratio_masked = log_marginal_likelihood(Xfull, Z, SX, SA) - log_marginal_likelihood(
        X[rest], Z[rest], SX, SA
    )
    assert lp_masked == pytest.approx(ratio_masked)


def test_feature_draws_have_posterior_moments(data):
    X, Z = data
    mean, cov = feature_posterior(X, Z, SX, SA)
    rng = np.random.default_rng(0)
    draws = np.array([sample_features(X, Z, SX, SA, rng) for _ in range(4000)])
    se = np.sqrt(np.diag(cov))[:, None] / np.sqrt(len(draws))
    assert np.all(np.abs(draws.mean(axis=0) - mean) < 4.5 * se)
    emp = np.cov(draws[:, :, 0].T)
    np.testing.assert_allclose(emp, cov, atol=0.1 * np.abs(cov).max())


def test_removing_a_row_holds_the_denominator_at_its_bound():
    # sigma_a / sigma_x = 1e6: taking rows out one by one, s_x^2 - z S z reaches -2.6e-10
    # at the seventh row in float64 (the sign flip that became issue 23's
    # ZeroDivisionError); it is held at s_x^4 / (s_x^2 + |z| s_a^2) instead
    rng = np.random.default_rng(0)
    X = rng.standard_normal((8, 3))
    Z = (rng.random((8, 3)) < 0.6).astype(np.int8)
    Z[:, 0] = 1
    sx, sa = 1e-3, 1e3
    mean, cov = feature_posterior(X, Z, sx, sa)
    mean, cov = mean.copy(), cov.copy()
    for n in range(7):
        z = Z[n].astype(float)
        bound = sx**4 / (sx**2 + z.sum() * sa**2)
        unguarded = sx**2 - z @ cov @ z
        remove_row_from_posterior(cov, mean, Z[n], X[n], sx**2, sa**2, 3)
        assert np.all(np.isfinite(cov)) and np.all(np.isfinite(mean))
        if n == 6:
            assert unguarded < bound  # the case the bound is for was reached
    assert np.all(np.diag(cov) > 0)


def test_cholesky_by_lapack_gives_scipy_cho_factor_bits(data):
    """The marginal and the posterior factor by LAPACK's potrf/potrs directly (the calls
    scipy.linalg.cho_factor/cho_solve make, without their argument checks): the same bits
    as through scipy.linalg, so the samplers' draws did not change."""
    from scipy.linalg import cho_factor, cho_solve

    from sklearn_ibp.likelihoods import log_marginal_likelihood_from_stats

    X, Z = data
    Zf = Z.astype(float)
    gram, cross = Zf.T @ Zf, Zf.T @ X
    factor = cho_factor(gram + (SX**2 / SA**2) * np.eye(4), lower=True)
    expected = (-0.5 * 15 * 3 * np.log(2 * np.pi) - (15 - 4) * 3 * np.log(SX)
                - 4 * 3 * np.log(SA) - 3 * np.sum(np.log(np.diag(factor[0]))))
    quad = float(np.sum(X**2)) - float(np.sum(cross * cho_solve(factor, cross)))
    expected = float(expected - 0.5 * quad / SX**2)
    assert log_marginal_likelihood_from_stats(
        gram, cross, float(np.sum(X**2)), 15, 3, SX, SA) == expected
    mean, cov = feature_posterior(X, Z, SX, SA)
    precision, shift = information_form(X, Z, SX, SA)
    factor = cho_factor(precision, lower=True)
    np.testing.assert_array_equal(mean, cho_solve(factor, shift))
    np.testing.assert_array_equal(cov, cho_solve(factor, np.eye(4)))
    # No features, and a precision that is not positive definite.
    assert feature_posterior(X, Z[:, :0], SX, SA)[1].shape == (0, 0)
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        log_marginal_likelihood_from_stats(-gram, cross, 1.0, 15, 3, SX, SA)
