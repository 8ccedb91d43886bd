"""The conditionally conjugate Gaussian base (Görür 2007, sec. 3.3.1-3.3.2).

* Eq. 3.66 (precision integrated out given the mean) against a one-dimensional quadrature
  and a Monte Carlo average over the Wishart prior; eq. 3.67 (mean integrated out given the
  precision) against the stacked-Gaussian marginal and a quadrature.
* ``sample_posterior`` leaves the posterior invariant: a successive-conditional (Geweke)
  chain ``X | theta``, ``theta <- sample_posterior(X, theta)`` keeps ``theta`` at its prior.
* ``update_hyperparameters`` leaves the hyperpriors invariant (eqs. 3.61, 3.63), by the same
  kind of chain.
* The kernels against the NumPy methods and NumPy loops.
"""

import numpy as np
import pytest
from scipy import integrate
from scipy.special import digamma, gammaln, logsumexp
from scipy.stats import multivariate_normal

from sklearn_ibp.likelihoods._conditionally_conjugate_kernels import (
    cholesky_lower,
    gaussian_log_density_cov,
    log_mean_density_cov,
    log_predictive_given_mean,
    predictive_given_precision,
    spd_inverse,
    t_log_constant,
)
from sklearn_ibp.likelihoods.conditionally_conjugate import (
    ConditionallyConjugateBase,
    _bartlett_draws,
    _batched_cholesky,
    _batched_lower_inverse,
    _batched_solve_lower,
    _sample_wishart,
    _wishart_from_factors,
)
from tests.solvers.test_prior_recovery import batch_means_se

HYPER_2D = {
    "xi": [0.5, -1.0],
    "R": [[2.0, 0.6], [0.6, 1.0]],
    "beta": 3.5,
    "W": [[0.8, -0.2], [-0.2, 0.5]],
}
HYPER_1D = {"xi": [0.3], "R": [[1.5]], "beta": 2.5, "W": [[0.6]]}


def make_base(hyper, X=None, sample=False):
    D = len(hyper["xi"])
    X = np.random.default_rng(0).standard_normal((20, D)) if X is None else X
    base = ConditionallyConjugateBase(initial_hyperparameters=hyper,
                                      sample_hyperparameters=sample)
    base.initialize(X, None)
    return base


def gamma_log_pdf(s, beta, w):
    """1-D Wishart(beta, (beta w)^{-1}) = Gamma(beta/2, rate beta w / 2)."""
    a, b = 0.5 * beta, 0.5 * beta * w
    return a * np.log(b) - gammaln(a) + (a - 1) * np.log(s) - b * s


def log_normal(x, mean, var):
    return -0.5 * (np.log(2 * np.pi * var) + (x - mean) ** 2 / var)


def quad_log(f, lo, hi):
    """``log int_lo^hi exp(f)`` with the integrand scaled by its maximum on a grid."""
    grid = np.linspace(lo, hi, 2001)
    top = max(f(t) for t in grid)
    value, _ = integrate.quad(lambda t: np.exp(f(t) - top), lo, hi, epsabs=0.0,
                              epsrel=1e-11, limit=400)
    return top + np.log(value)


# -- the parameterisation --------------------------------------------------------------
def test_prior_draws_have_the_stated_moments():
    base = make_base(HYPER_2D)
    n = 200_000
    draws = base.sample_prior(n, np.random.default_rng(1))
    means, S = draws["means"], draws["precisions"]
    np.testing.assert_allclose(means.mean(axis=0), HYPER_2D["xi"], atol=0.01)
    np.testing.assert_allclose(np.cov(means.T), np.linalg.inv(HYPER_2D["R"]), rtol=0.02,
                               atol=0.005)
    # E[S] = W^{-1} (eq. 3.58 with scale (beta W)^{-1})
    np.testing.assert_allclose(S.mean(axis=0), np.linalg.inv(HYPER_2D["W"]), rtol=0.02,
                               atol=0.02)
    # E log|S| = psi_D(beta/2) + D log 2 + log|(beta W)^{-1}|
    beta, D = HYPER_2D["beta"], 2
    expected = (digamma(0.5 * (beta - np.arange(D))).sum() + D * np.log(2)
                - np.linalg.slogdet(beta * np.array(HYPER_2D["W"]))[1])
    logdet = np.linalg.slogdet(S)[1]
    assert abs(logdet.mean() - expected) < 4 * logdet.std() / np.sqrt(n)


def test_log_likelihood_is_the_gaussian_density():
    base = make_base(HYPER_2D)
    rng = np.random.default_rng(2)
    params = base.sample_prior(4, rng)
    X = rng.standard_normal((6, 2))
    expected = np.column_stack([
        multivariate_normal(params["means"][k], np.linalg.inv(params["precisions"][k])).logpdf(X)
        for k in range(4)
    ])
    np.testing.assert_allclose(base.log_likelihood(X, params), expected, rtol=1e-10)


# -- eq. 3.66 ----------------------------------------------------------------------------
def test_eq_3_66_matches_quadrature_in_one_dimension():
    base = make_base(HYPER_1D)
    beta, w = HYPER_1D["beta"], HYPER_1D["W"][0][0]
    X_k = np.array([0.2, 1.1, -0.4])
    mu = 0.35
    x_new = np.array([[-0.7], [0.4], [2.5]])

    def log_marginal(rows):
        def f(t):
            s = np.exp(t)
            return log_normal(rows, mu, 1 / s).sum() + gamma_log_pdf(s, beta, w) + t
        return quad_log(f, -20.0, 12.0)

    expected = [log_marginal(np.append(X_k, x)) - log_marginal(X_k) for x in x_new[:, 0]]
    got = base.log_predictive_given_mean(x_new, X_k[:, None], np.array([mu]))
    np.testing.assert_allclose(got, expected, atol=1e-7)


def test_eq_3_66_matches_monte_carlo_over_the_wishart_prior():
    base = make_base(HYPER_2D)
    rng = np.random.default_rng(3)
    X_k = np.array([[0.1, -0.9], [1.0, -1.4]])
    mu = np.array([0.4, -1.1])
    x = np.array([[0.9, -0.3]])
    S = base.sample_prior_precisions(400_000, rng)
    means = np.broadcast_to(mu, (S.shape[0], 2))
    lik_k = np.exp(base.log_likelihood(X_k, {"means": means, "precisions": S}).sum(axis=0))
    lik_x = np.exp(base.log_likelihood(x, {"means": means, "precisions": S})[0]) * lik_k
    ratio = lik_x.mean() / lik_k.mean()
    se = np.std(lik_x - ratio * lik_k) / np.sqrt(S.shape[0]) / lik_k.mean()  # delta method
    got = np.exp(base.log_predictive_given_mean(x, X_k, mu)[0])
    assert abs(got - ratio) < 4 * se, (got, ratio, se)
    assert se < 0.01 * ratio


# -- eq. 3.67 ----------------------------------------------------------------------------
def test_eq_3_67_matches_the_stacked_gaussian_marginal():
    base = make_base(HYPER_2D)
    rng = np.random.default_rng(4)
    S = base.sample_prior_precisions(1, rng)[0]
    X_k = rng.standard_normal((3, 2))
    X_new = rng.standard_normal((4, 2))
    xi, R_inv = np.array(HYPER_2D["xi"]), np.linalg.inv(HYPER_2D["R"])

    def log_marginal(rows):  # vec(rows) ~ N(1 (x) xi, I (x) S^{-1} + 1 1^T (x) R^{-1})
        n = rows.shape[0]
        cov = np.kron(np.eye(n), np.linalg.inv(S)) + np.kron(np.ones((n, n)), R_inv)
        return multivariate_normal(np.tile(xi, n), cov).logpdf(rows.ravel())

    expected = [log_marginal(np.vstack([X_k, x])) - log_marginal(X_k) for x in X_new]
    np.testing.assert_allclose(base.log_predictive_given_precision(X_new, X_k, S), expected,
                               rtol=1e-10, atol=1e-10)
    # no rows: x ~ N(xi, S^{-1} + R^{-1})
    np.testing.assert_allclose(
        base.log_predictive_given_precision(X_new, np.zeros((0, 2)), S),
        multivariate_normal(xi, np.linalg.inv(S) + R_inv).logpdf(X_new), rtol=1e-10)


def test_eq_3_67_matches_quadrature_in_one_dimension():
    base = make_base(HYPER_1D)
    xi, r = HYPER_1D["xi"][0], HYPER_1D["R"][0][0]
    s = 1.7
    X_k = np.array([0.2, 1.1, -0.4, 0.5])
    x = 1.3

    def log_marginal(rows):
        return quad_log(lambda m: log_normal(rows, m, 1 / s).sum() + log_normal(m, xi, 1 / r),
                        -15.0, 15.0)

    expected = log_marginal(np.append(X_k, x)) - log_marginal(X_k)
    got = base.log_predictive_given_precision(np.array([[x]]), X_k[:, None], np.array([[s]]))
    assert np.isclose(got[0], expected, atol=1e-8)


# -- posterior invariance ----------------------------------------------------------------
def test_sample_posterior_leaves_the_posterior_invariant():
    """Successive conditionals (Geweke 2004): ``X | theta`` exactly, then one Gibbs scan
    ``theta <- sample_posterior(X, theta)``; if the scan leaves ``p(theta | X)`` invariant,
    ``theta`` keeps its prior ``G_0``."""
    base = make_base(HYPER_2D)
    rng = np.random.default_rng(5)
    theta = base.sample_prior(1, rng)
    n_rows, T = 3, 6000
    trace = np.empty((T, 6))
    for t in range(T):
        cov = np.linalg.inv(theta["precisions"][0])
        X = rng.multivariate_normal(theta["means"][0], cov, size=n_rows)
        theta = base.sample_posterior(X, rng, theta)
        S = theta["precisions"][0]
        trace[t] = [*theta["means"][0], S[0, 0], S[0, 1], S[1, 1], np.linalg.slogdet(S)[1]]
    beta, W, D = HYPER_2D["beta"], np.array(HYPER_2D["W"]), 2
    W_inv = np.linalg.inv(W)
    expected = [*HYPER_2D["xi"], W_inv[0, 0], W_inv[0, 1], W_inv[1, 1],
                digamma(0.5 * (beta - np.arange(D))).sum() + D * np.log(2)
                - np.linalg.slogdet(beta * W)[1]]
    for j in range(6):
        se = batch_means_se(trace[:, j])
        assert abs(trace[:, j].mean() - expected[j]) < 4 * se, (j, trace[:, j].mean(),
                                                                 expected[j], se)
        assert se < 0.1 * max(1.0, abs(expected[j]))


def test_update_hyperparameters_leaves_the_hyperpriors_invariant():
    """Successive conditionals on ``(hyperparameters, K components)``: components from
    ``G_0`` given the hyperparameters, then ``update_hyperparameters``; the hyperparameters
    keep the hyperpriors of eqs. 3.61 and 3.63."""
    rng = np.random.default_rng(6)
    X = rng.standard_normal((50, 2)) @ np.array([[1.0, 0.0], [0.7, 0.5]]) + [2.0, -1.0]
    base = ConditionallyConjugateBase()
    base.initialize(X, None)
    mu_x, sigma_x = base.data_mean, base.data_cov
    T, K, D = 4000, 3, 2
    trace = np.empty((T, 9))
    for t in range(T):
        base.update_hyperparameters(base.sample_prior(K, rng), rng)
        y = 1.0 / (base.beta - D + 1.0)
        trace[t] = [*base.xi, base.R[0, 0], base.R[0, 1], base.W[0, 0], base.W[0, 1],
                    base.W[1, 1], y < np.log(2.0) / D, np.log(y)]
    sigma_inv = np.linalg.inv(sigma_x)
    # y = 1/(beta - D + 1) ~ Gamma(1, rate D): median log 2 / D, E log y = psi(1) - log D
    expected = [*mu_x, sigma_inv[0, 0], sigma_inv[0, 1], sigma_x[0, 0], sigma_x[0, 1],
                sigma_x[1, 1], 0.5, digamma(1.0) - np.log(D)]
    for j in range(9):
        se = batch_means_se(trace[:, j])
        assert abs(trace[:, j].mean() - expected[j]) < 4 * se, (j, trace[:, j].mean(),
                                                                 expected[j], se)
        assert se < 0.15 * max(1.0, abs(expected[j]))


# -- prior predictive and the other methods ----------------------------------------------
def test_log_prior_predictive_matches_plain_monte_carlo():
    rng = np.random.default_rng(7)
    X = rng.standard_normal((40, 2)) * [1.0, 3.0] + [5.0, -2.0]
    base = ConditionallyConjugateBase(initial_hyperparameters={"beta": 2.2})
    base.initialize(X, None)
    draws = base.sample_prior(400_000, rng)
    log_lik = base.log_likelihood(X[:4], draws)
    expected = logsumexp(log_lik, axis=1) - np.log(log_lik.shape[1])
    np.testing.assert_allclose(base.log_prior_predictive(X[:4]), expected, atol=0.01)


@pytest.mark.parametrize("lower", [True, False])
def test_hyperprior_moves_with_affine_maps_of_the_data(lower):
    """Sec. 3.3.1: the hyperpriors use only the data's mean and covariance, so an affine map
    of the data moves every hyperparameter with it and densities change by the Jacobian.
    The prior predictive's fixed draws are equivariant exactly under lower-triangular maps
    (the Cholesky factor of ``beta W`` moves with them) and up to its quasi-Monte Carlo
    error otherwise."""
    rng = np.random.default_rng(8)
    X = rng.standard_normal((30, 2))
    A = np.array([[3.0, 0.0], [1.0, 0.02]]) if lower else np.array([[3.0, 1.0], [0.0, 0.02]])
    b = np.array([100.0, -5.0])
    base, moved = ConditionallyConjugateBase(), ConditionallyConjugateBase()
    base.initialize(X, None)
    moved.initialize(X @ A.T + b, None)
    np.testing.assert_allclose(moved.xi, A @ base.xi + b)
    np.testing.assert_allclose(moved.W, A @ base.W @ A.T, rtol=1e-8)
    np.testing.assert_allclose(moved.R, np.linalg.inv(A @ np.linalg.inv(base.R) @ A.T),
                               rtol=1e-6)
    log_jacobian = np.log(abs(np.linalg.det(A)))
    np.testing.assert_allclose(moved.log_prior_predictive(X[:5] @ A.T + b),
                               base.log_prior_predictive(X[:5]) - log_jacobian,
                               atol=1e-6 if lower else 2e-3)


def test_fixed_hyperparameters_and_checks():
    X = np.random.default_rng(9).standard_normal((10, 2))
    X.setflags(write=False)
    base = make_base(HYPER_2D, X)
    before = base.hyperparameters()
    rng = np.random.default_rng(0)
    base.update_hyperparameters(base.sample_prior(3, rng), rng)
    after = base.hyperparameters()
    for key in before:
        np.testing.assert_array_equal(before[key], after[key])
    after["xi"][0] = 99.0  # a copy
    assert base.xi[0] == HYPER_2D["xi"][0]
    sampled = make_base(HYPER_2D, X, sample=True)
    sampled.update_hyperparameters(sampled.sample_prior(3, rng), rng)
    assert sampled.beta != HYPER_2D["beta"]
    with pytest.raises(ValueError, match="beta"):
        base.set_hyperparameters({**HYPER_2D, "beta": 0.5})
    with pytest.raises(ValueError, match="unknown"):
        ConditionallyConjugateBase(initial_hyperparameters={"rho": 1.0}).initialize(X, None)
    with pytest.raises(ValueError, match="positive definite"):
        base.set_hyperparameters({**HYPER_2D, "W": [[1.0, 2.0], [2.0, 1.0]]})
    # one row, a constant column: the hyperprior is still proper
    odd = ConditionallyConjugateBase()
    odd.initialize(np.array([[1.0, 5.0], [2.0, 5.0]]), None)
    assert np.all(np.isfinite(odd.log_prior_predictive(np.array([[1.5, 5.0]]))))


def test_sample_posterior_draws_are_reproducible():
    base = make_base(HYPER_2D)
    X_k = np.random.default_rng(10).standard_normal((4, 2))
    a = base.sample_posterior(X_k, np.random.default_rng(3))
    b = base.sample_posterior(X_k, np.random.default_rng(3))
    for key in a:
        np.testing.assert_array_equal(a[key], b[key])
    assert a["means"].shape == (1, 2) and a["precisions"].shape == (1, 2, 2)


# -- kernels against NumPy ---------------------------------------------------------------
@pytest.mark.parametrize("D", [1, 2, 4])
def test_eq_3_66_kernel_matches_numpy(D):
    rng = np.random.default_rng(D)
    A = rng.standard_normal((D, D))
    hyper = {"xi": np.zeros(D), "R": np.eye(D), "beta": D + 0.7, "W": A @ A.T + np.eye(D)}
    base = make_base(hyper)
    X_k, x, mu = rng.standard_normal((5, D)), rng.standard_normal(D), rng.standard_normal(D)
    W_star = hyper["beta"] * hyper["W"] + (X_k - mu).T @ (X_k - mu)
    L = np.linalg.cholesky(W_star)
    constant = t_log_constant(hyper["beta"], 5, D, np.linalg.slogdet(W_star)[1])
    got = log_predictive_given_mean(x, mu, L, constant, hyper["beta"] + 5, np.empty(D))
    assert np.isclose(got, base.log_predictive_given_mean(x[None], X_k, mu)[0], rtol=1e-10)


@pytest.mark.parametrize("D", [1, 3])
def test_eq_3_67_kernel_matches_numpy(D):
    rng = np.random.default_rng(D)
    A, B = rng.standard_normal((D, D)), rng.standard_normal((D, D))
    hyper = {"xi": rng.standard_normal(D), "R": B @ B.T + np.eye(D), "beta": D + 1.0,
             "W": np.eye(D)}
    base = make_base(hyper)
    S = A @ A.T + 0.5 * np.eye(D)
    X_k, x = rng.standard_normal((4, D)), rng.standard_normal(D)
    for rows in (X_k, X_k[:0]):
        mean, chol = np.empty(D), np.empty((D, D))
        half = predictive_given_precision(S, np.linalg.inv(S), rows.shape[0], rows.sum(axis=0),
                                          base.R, base.R @ base.xi, mean, chol,
                                          np.empty((4, D, D)))
        got = gaussian_log_density_cov(x, mean, chol, half, np.empty(D))
        assert np.isclose(got, base.log_predictive_given_precision(x[None], rows, S)[0],
                          rtol=1e-10)


def test_cluster_statistics_match_numpy():
    rng = np.random.default_rng(11)
    X, labels = rng.standard_normal((50, 3)), rng.integers(0, 4, 50)
    centers = rng.standard_normal((4, 3))
    base = ConditionallyConjugateBase()
    base.initialize(X, rng)
    counts, sums, scatter = base.cluster_statistics(X, labels, 4, centers)
    for k in range(4):
        rows = X[labels == k]
        assert counts[k] == rows.shape[0]
        np.testing.assert_allclose(sums[k], rows.sum(axis=0))
        np.testing.assert_allclose(scatter[k], (rows - centers[k]).T @ (rows - centers[k]))


def test_batched_small_matrix_algebra_matches_numpy():
    rng = np.random.default_rng(13)
    B = rng.standard_normal((5, 4, 4))
    A = B @ np.swapaxes(B, 1, 2) + np.eye(4)
    L = _batched_cholesky(A)
    np.testing.assert_allclose(L, np.linalg.cholesky(A), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_batched_lower_inverse(L), np.linalg.inv(L), rtol=1e-10,
                               atol=1e-12)
    b = rng.standard_normal((5, 4))
    np.testing.assert_allclose(_batched_solve_lower(L, b.copy()),
                               np.linalg.solve(L, b[:, :, None])[:, :, 0], rtol=1e-10)
    np.testing.assert_allclose(
        _batched_solve_lower(L, b.copy(), transpose=True),
        np.linalg.solve(np.swapaxes(L, 1, 2), b[:, :, None])[:, :, 0], rtol=1e-10)


@pytest.mark.parametrize("D", [1, 2, 3, 5])
def test_batched_wishart_is_the_reference_draw(D):
    """The batched Bartlett draws take the stream of ``_sample_wishart`` (chi-squares, then
    the normals below the diagonal) and give the same matrices up to rounding."""
    B = np.random.default_rng(D).standard_normal((D, D))
    M = np.linalg.cholesky(B @ B.T + np.eye(D))
    dof = np.array([D + 1.0, D + 4.5, D + 0.5])
    got = _wishart_from_factors(M, _bartlett_draws(dof, D, np.random.default_rng(5)))
    rng = np.random.default_rng(5)
    want = [_sample_wishart(d, M, rng) for d in dof]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_small_matrix_kernels_match_numpy():
    rng = np.random.default_rng(12)
    A = rng.standard_normal((4, 4))
    A = A @ A.T + np.eye(4)
    L, inverse = np.empty((4, 4)), np.empty((4, 4))
    half = cholesky_lower(A, L)
    np.testing.assert_allclose(L, np.linalg.cholesky(A))
    assert np.isclose(half, 0.5 * np.linalg.slogdet(A)[1])
    spd_inverse(A, inverse, np.empty((4, 4)), np.empty((4, 4)))
    np.testing.assert_allclose(inverse, np.linalg.inv(A), rtol=1e-10)
    assert np.isnan(cholesky_lower(-A, L))


def test_prior_predictive_average_kernel_matches_numpy():
    rng = np.random.default_rng(13)
    covs = np.array([(lambda a: a @ a.T + np.eye(2))(rng.standard_normal((2, 2)))
                     for _ in range(7)])
    L = np.linalg.cholesky(covs)
    half = np.log(np.diagonal(L, axis1=1, axis2=2)).sum(axis=1)
    X, mean = rng.standard_normal((5, 2)), rng.standard_normal(2)
    out = np.empty(5)
    log_mean_density_cov(X, mean, L, half, out)
    dens = np.array([multivariate_normal(mean, c).logpdf(X) for c in covs])
    np.testing.assert_allclose(out, logsumexp(dens, axis=0) - np.log(7), rtol=1e-10)


@pytest.mark.parametrize("excess", [1e-2, 1e-3, 1e-4])
def test_log_prior_predictive_at_degrees_of_freedom_near_the_bound(excess):
    # beta just above D - 1: the lowest quantiles of the last chi-square of the fixed
    # prior draws underflow to 0 (a singular S_j; LinAlgError before the floor). A fit
    # of the example's 120 rows with the default base drew such a beta.
    hyper = {"xi": [0.0, 0.0], "R": np.eye(2), "W": np.eye(2), "beta": 1.0 + excess}
    base = make_base(hyper)
    out = base.log_prior_predictive(np.random.default_rng(1).standard_normal((3, 2)))
    assert np.all(np.isfinite(out))
