"""The conjugate Normal-Wishart base (Görür 2007, sec. 3.3.1-3.3.2, eqs. 3.57-3.65).

Every density is checked against something computed another way: the marginal against the
candidate's identity with SciPy's Wishart and normal densities and against a 1-d numerical
integral, the predictive against the chain rule of the marginal and against quadrature or
Monte Carlo, the posterior draws against the analytic moments, the hyperparameter updates
by a successive-conditional (Geweke) chain that must reproduce the hyperpriors.
"""

import math

import numpy as np
import pytest
from scipy import stats
from scipy.integrate import quad

from sklearn_ibp.likelihoods.normal_wishart import NormalWishartBase
from tests.solvers.test_prior_recovery import batch_means_se

FIXED = dict(location=0.3, precision_scaling=0.7, dof=3.5, scale=0.8)


def _fixed_base(D, **overrides):
    base = NormalWishartBase(**{**FIXED, **overrides}, sample_hyperparameters=False)
    base.initialize(np.zeros((2, D)) + np.arange(2)[:, None], None)
    return base


def _posterior_by_hand(base, X):
    """The standard conjugate update, written out independently of the base."""
    h = base.hyperparameters()
    xi, rho, beta, W = h["location"], h["precision_scaling"], h["dof"], h["scale"]
    n = X.shape[0]
    xbar = X.mean(axis=0)
    scatter = (X - xbar).T @ (X - xbar)
    W_star = beta * W + scatter + rho * n / (rho + n) * np.outer(xbar - xi, xbar - xi)
    return (rho * xi + n * xbar) / (rho + n), rho + n, beta + n, W_star


@pytest.mark.parametrize("D", [1, 2, 3])
def test_log_marginal_is_the_chain_rule_of_log_predictive(D):
    rng = np.random.default_rng(D)
    base = _fixed_base(D)
    X = rng.normal(size=(7, D)) * 1.5 + 0.4
    chain = sum(base.log_predictive(X[i : i + 1], X[:i])[0] for i in range(X.shape[0]))
    assert base.log_marginal(X) == pytest.approx(chain, abs=1e-10)
    assert base.log_predictive(X[:1], X[:0])[0] == pytest.approx(base.log_marginal(X[:1]))
    assert base.log_marginal(X[:0]) == 0.0


@pytest.mark.parametrize("D", [1, 2, 3])
def test_log_marginal_by_the_candidates_identity(D):
    """log p(X) = log p(X | theta) + log G_0(theta) - log p(theta | X) at any theta."""
    rng = np.random.default_rng(10 + D)
    base = _fixed_base(D, scale=np.diag(np.linspace(0.5, 1.5, D)))
    X = rng.normal(size=(6, D)) + 1.0
    h = base.hyperparameters()
    mean, kappa, nu, W_star = _posterior_by_hand(base, X)
    mu, S = mean + 0.1, np.linalg.inv(W_star / nu) * 0.9

    def log_normal_wishart(mu, S, m, k, dof, V):
        return stats.wishart(df=dof, scale=V).logpdf(S) + stats.multivariate_normal(
            m, np.linalg.inv(k * S)
        ).logpdf(mu)

    log_lik = stats.multivariate_normal(mu, np.linalg.inv(S)).logpdf(X).sum()
    log_prior = log_normal_wishart(
        mu, S, h["location"], h["precision_scaling"], h["dof"],
        np.linalg.inv(h["dof"] * h["scale"]),
    )
    log_post = log_normal_wishart(mu, S, mean, kappa, nu, np.linalg.inv(W_star))
    assert base.log_marginal(X) == pytest.approx(log_lik + log_prior - log_post, abs=1e-9)


def test_log_marginal_matches_a_numerical_integral_in_one_dimension():
    base = _fixed_base(1)
    X = np.array([0.2, 1.1, -0.4])
    xi, rho, beta, W = 0.3, 0.7, 3.5, 0.8
    n = X.size
    # Given the precision s, mu ~ N(xi, 1/(rho s)) integrates out to
    # X | s ~ N(xi 1, (I + 11^T / rho) / s); s ~ Gamma(beta/2, rate beta W / 2).
    cov = np.eye(n) + np.ones((n, n)) / rho
    cov_inv, (_, logdet_cov) = np.linalg.inv(cov), np.linalg.slogdet(cov)
    r = X - xi
    quad_form = float(r @ cov_inv @ r)
    shape, rate = beta / 2, beta * W / 2

    def integrand(s):
        log_lik = 0.5 * n * math.log(s / (2 * math.pi)) - 0.5 * logdet_cov - 0.5 * s * quad_form
        log_prior = shape * math.log(rate) - math.lgamma(shape) + (shape - 1) * math.log(s)
        return math.exp(log_lik + log_prior - rate * s)

    value, _ = quad(integrand, 0, np.inf, epsabs=1e-15, epsrel=1e-11, limit=200)
    assert base.log_marginal(X[:, None]) == pytest.approx(math.log(value), abs=1e-8)


def test_student_t_predictive_matches_quadrature_in_one_dimension():
    base = _fixed_base(1)
    X_k = np.array([[0.5], [1.5], [0.9], [2.0]])
    mean, kappa, nu, W_star = _posterior_by_hand(base, X_k)
    for x in (-1.0, 0.7, 3.0):
        # s | X_k ~ Gamma(nu/2, rate W*/2); x | s ~ N(xi*, (1 + 1/kappa) / s)
        def integrand(s, x=x):
            return math.exp(
                stats.gamma(nu / 2, scale=2 / W_star[0, 0]).logpdf(s)
                + stats.norm(mean[0], math.sqrt((1 + 1 / kappa) / s)).logpdf(x)
            )

        value, _ = quad(integrand, 0, np.inf, epsabs=1e-14, epsrel=1e-10, limit=200)
        assert base.log_predictive([[x]], X_k)[0] == pytest.approx(math.log(value), abs=1e-8)


def test_student_t_predictive_matches_monte_carlo_in_two_dimensions():
    rng = np.random.default_rng(4)
    base = _fixed_base(2, scale=np.array([[1.0, 0.3], [0.3, 0.6]]))
    X_k = rng.normal(size=(5, 2)) + [1.0, -0.5]
    mean, kappa, nu, W_star = _posterior_by_hand(base, X_k)
    n_draws = 40000
    S = stats.wishart(df=nu, scale=np.linalg.inv(W_star)).rvs(n_draws, random_state=rng)
    chol_cov = np.linalg.cholesky(np.linalg.inv(kappa * S))
    mu = mean + np.einsum("nij,nj->ni", chol_cov, rng.standard_normal((n_draws, 2)))
    for x in ([0.5, 0.0], [2.5, -1.5]):
        d = np.asarray(x) - mu
        quad_form = np.einsum("ni,nij,nj->n", d, S, d)
        dens = np.sqrt(np.linalg.det(S)) / (2 * np.pi) * np.exp(-0.5 * quad_form)
        estimate, se = dens.mean(), dens.std(ddof=1) / np.sqrt(n_draws)
        exact = math.exp(base.log_predictive([x], X_k)[0])
        assert abs(estimate - exact) < 4 * se, (estimate, exact, se)
        assert se < 0.02 * exact


def test_sample_posterior_moments_match_the_analytic_posterior():
    rng = np.random.default_rng(5)
    base = _fixed_base(2, scale=np.array([[1.0, 0.3], [0.3, 0.6]]))
    X_k = rng.normal(size=(8, 2)) * [1.0, 2.0] + [1.0, -0.5]
    mean, kappa, nu, W_star = _posterior_by_hand(base, X_k)
    V = np.linalg.inv(W_star)
    n_draws = 20000
    draws = [base.sample_posterior(X_k, rng) for _ in range(n_draws)]
    mus = np.array([d["means"][0] for d in draws])
    Ss = np.array([d["precisions"][0] for d in draws])
    assert mus.shape == (n_draws, 2) and Ss.shape == (n_draws, 2, 2)
    # E[S] = nu V, Var(S_ij) = nu (V_ij^2 + V_ii V_jj)
    se_S = np.sqrt(nu * (V**2 + np.outer(np.diag(V), np.diag(V))) / n_draws)
    assert np.all(np.abs(Ss.mean(axis=0) - nu * V) < 4.5 * se_S)
    # E[mu] = xi*, Cov(mu) = E[(kappa S)^-1] = W* / (kappa (nu - D - 1))
    cov_mu = W_star / (kappa * (nu - 3))
    se_mu = np.sqrt(np.diag(cov_mu) / n_draws)
    assert np.all(np.abs(mus.mean(axis=0) - mean) < 4.5 * se_mu)
    np.testing.assert_allclose(np.cov(mus.T), cov_mu, rtol=0.06, atol=0.06 * cov_mu.max())
    # S is symmetric positive definite
    assert np.all(np.linalg.eigvalsh(Ss) > 0)
    np.testing.assert_array_equal(Ss, np.transpose(Ss, (0, 2, 1)))


def test_prior_draws_have_mean_precision_w_inverse():
    rng = np.random.default_rng(6)
    W = np.array([[2.0, -0.4], [-0.4, 0.5]])
    base = _fixed_base(2, dof=6.0, scale=W, location=[1.0, 2.0])
    draws = base.sample_prior(20000, rng)
    np.testing.assert_allclose(draws["precisions"].mean(axis=0), np.linalg.inv(W), rtol=0.03)
    np.testing.assert_allclose(draws["means"].mean(axis=0), [1.0, 2.0], atol=0.05)


def test_sample_posterior_all_draws_cluster_by_cluster():
    rng = np.random.default_rng(7)
    base = _fixed_base(2)
    X = rng.normal(size=(12, 2))
    labels = np.array([0, 1, 2] * 4)
    all_draws = base.sample_posterior_all(X, labels, 3, np.random.default_rng(1))
    one_by_one = np.random.default_rng(1)
    for k in range(3):
        draw = base.sample_posterior(X[labels == k], one_by_one)
        np.testing.assert_allclose(all_draws["means"][k], draw["means"][0], rtol=1e-12)
        np.testing.assert_allclose(all_draws["precisions"][k], draw["precisions"][0], rtol=1e-12)


def test_log_likelihood_is_the_gaussian_density():
    rng = np.random.default_rng(8)
    base = _fixed_base(3)
    params = base.sample_prior(4, rng)
    X = rng.normal(size=(6, 3))
    out = base.log_likelihood(X, params)
    assert out.shape == (6, 4)
    for k in range(4):
        ref = stats.multivariate_normal(
            params["means"][k], np.linalg.inv(params["precisions"][k])
        ).logpdf(X)
        np.testing.assert_allclose(out[:, k], ref, rtol=1e-9)


def test_densities_move_with_affine_maps_of_the_data_by_the_jacobian():
    """Hyperparameters from initialize depend on mu_x and Sigma_x only, so under
    x -> A x + b every density changes by log|det A| per row (sec. 3.3.1)."""
    rng = np.random.default_rng(9)
    X = rng.normal(size=(40, 3)) @ np.array([[1.0, 0.2, 0.0], [0.0, 0.5, 0.3], [0, 0, 2.0]])
    A = rng.normal(size=(3, 3)) * [1.0, 30.0, 0.01]  # rotation, shear and rescaling
    b = np.array([5.0, -300.0, 0.02])
    Y = X @ A.T + b
    log_jac = math.log(abs(np.linalg.det(A)))
    base_x, base_y = NormalWishartBase(), NormalWishartBase()
    base_x.initialize(X, rng)
    base_y.initialize(Y, rng)
    np.testing.assert_allclose(
        base_y.log_prior_predictive(Y), base_x.log_prior_predictive(X) - log_jac, atol=1e-8
    )
    np.testing.assert_allclose(
        base_y.log_predictive(Y[:5], Y[10:30]),
        base_x.log_predictive(X[:5], X[10:30]) - log_jac,
        atol=1e-8,
    )
    assert base_y.log_marginal(Y[:12]) == pytest.approx(
        base_x.log_marginal(X[:12]) - 12 * log_jac, abs=1e-7
    )
    # Posterior draws of S map as A^-T S A^-1: compare the means of many draws.
    Ainv = np.linalg.inv(A)
    Sx = np.mean([base_x.sample_posterior(X[:15], rng)["precisions"][0] for _ in range(4000)], 0)
    Sy = np.mean([base_y.sample_posterior(Y[:15], rng)["precisions"][0] for _ in range(4000)], 0)
    np.testing.assert_allclose(Ainv.T @ Sx @ Ainv, Sy, rtol=0.08, atol=0.08 * np.abs(Sy).max())


def test_hyperparameter_updates_reproduce_the_hyperpriors():
    """Successive conditionals: theta ~ G_0(h), then h ~ p(h | theta) (eqs. 3.61-3.62).
    The chain's marginal of h must be the hyperprior; compare the probabilities of being
    below each hyperprior quartile."""
    rng = np.random.default_rng(0)
    D = 2
    X = rng.normal(size=(50, D)) @ np.array([[2.0, 0.5], [0.0, 0.3]]) + 3.0
    base = NormalWishartBase()
    base.initialize(X, rng)
    mu_x, Sigma_x = base.data_mean_, base.data_covariance_
    draws = []
    for _ in range(20000):
        base.update_hyperparameters(base.sample_prior(1, rng), rng)
        h = base.hyperparameters()
        draws.append((
            h["precision_scaling"], 1.0 / (h["dof"] - D + 1.0), h["location"][0],
            h["location"][1], h["scale"][0, 0], h["scale"][1, 1],
        ))
    draws = np.array(draws)[200:]
    hyperpriors = [
        stats.gamma(0.5, scale=2.0),  # rho ~ Gamma(1/2, rate 1/2)
        stats.expon(scale=1.0 / D),  # 1/(beta - D + 1) ~ Gamma(1, rate D)
        stats.norm(mu_x[0], math.sqrt(Sigma_x[0, 0])),  # xi ~ N(mu_x, Sigma_x)
        stats.norm(mu_x[1], math.sqrt(Sigma_x[1, 1])),
        stats.gamma(D / 2, scale=2 * Sigma_x[0, 0] / D),  # W_dd ~ (Sigma_x,dd / D) chi2_D
        stats.gamma(D / 2, scale=2 * Sigma_x[1, 1] / D),
    ]
    for column, prior in enumerate(hyperpriors):
        for q in (0.25, 0.5, 0.75):
            below = (draws[:, column] < prior.ppf(q)).astype(float)
            se = batch_means_se(below)
            assert abs(below.mean() - q) < 4.5 * se, (column, q, below.mean(), se)
            assert se < 0.02


def test_dof_conditional_is_prior_times_wishart_densities():
    """The slice sampler's target for u = log(beta - D + 1) against SciPy's Wishart
    density and the Gamma(1, rate D) prior of 1/(beta - D + 1), up to one constant."""
    rng = np.random.default_rng(13)
    D = 3
    base = _fixed_base(D)
    W = np.array([[1.0, 0.2, 0.0], [0.2, 0.7, 0.1], [0.0, 0.1, 1.4]])
    precisions = base.sample_prior(4, rng)["precisions"]
    log_density = base._dof_log_conditional(W, precisions)
    us = np.linspace(-3.0, 4.0, 15)
    ours = np.array([log_density(u) for u in us])
    reference = []
    for u in us:
        beta = D - 1 + math.exp(u)
        y = 1.0 / (beta - D + 1)
        log_prior_beta = stats.gamma(1.0, scale=1.0 / D).logpdf(y) + 2 * math.log(y)
        log_lik = sum(
            stats.wishart(df=beta, scale=np.linalg.inv(beta * W)).logpdf(S) for S in precisions
        )
        reference.append(log_prior_beta + log_lik + u)  # + u: the Jacobian of beta(u)
    reference = np.array(reference)
    np.testing.assert_allclose(ours - ours[0], reference - reference[0], atol=1e-8)


def test_fixed_hyperparameters_and_snapshots():
    rng = np.random.default_rng(11)
    X = rng.normal(size=(20, 2))
    base = NormalWishartBase(location=[1.0, -1.0], dof=5.0, sample_hyperparameters=False)
    base.initialize(X, rng)
    h = base.hyperparameters()
    np.testing.assert_array_equal(h["location"], [1.0, -1.0])
    assert h["dof"] == 5.0 and h["precision_scaling"] == 1.0
    np.testing.assert_allclose(h["scale"], np.cov(X, rowvar=False))
    base.update_hyperparameters(base.sample_prior(3, rng), rng)
    assert base.hyperparameters()["dof"] == 5.0  # fixed
    h["location"][0] = 99.0  # a copy
    assert base.location_[0] == 1.0
    moving = NormalWishartBase()
    moving.initialize(X, rng)
    moving.update_hyperparameters(moving.sample_prior(3, rng), rng)
    assert moving.hyperparameters()["dof"] != 2.0
    moving.set_hyperparameters(h)
    assert moving.hyperparameters()["location"][0] == 99.0
    with pytest.raises(ValueError, match="dof"):
        moving.set_hyperparameters({**h, "dof": 0.5})
    with pytest.raises(RuntimeError, match="initialize"):
        NormalWishartBase().log_prior_predictive(X)


def test_inputs_untouched_and_wide_scales_stay_finite():
    rng = np.random.default_rng(12)
    X = rng.normal(size=(30, 3)) * [1e-2, 1.0, 1e4]
    X.setflags(write=False)
    base = NormalWishartBase()
    base.initialize(X, rng)
    assert np.all(np.isfinite(base.log_prior_predictive(X)))
    assert np.all(np.isfinite(base.log_predictive(X, X[:10])))
    assert np.isfinite(base.log_marginal(X))
    params = base.sample_posterior_all(X, np.arange(30) % 3, 3, rng)
    base.update_hyperparameters(params, rng)
    assert np.all(np.isfinite(base.log_likelihood(X, params)))
    # a constant column: the data covariance gets a tiny ridge instead of failing
    Z = np.column_stack([X[:, 0], np.ones(30)])
    base.initialize(Z, rng)
    assert np.all(np.isfinite(base.log_prior_predictive(Z)))


def test_small_linear_algebra_kernels_match_numpy():
    from sklearn_ibp.likelihoods._normal_wishart_kernels import (
        chol_downdate,
        chol_update,
        cholesky_lower,
        solve_lower,
        solve_lower_transpose,
    )

    rng = np.random.default_rng(14)
    B = rng.normal(size=(4, 4))
    A = B @ B.T + 4 * np.eye(4)
    L, ok = cholesky_lower(A)
    assert ok
    np.testing.assert_allclose(L, np.linalg.cholesky(A), rtol=1e-12)
    assert not cholesky_lower(-A)[1]
    b = rng.normal(size=4)
    np.testing.assert_allclose(solve_lower(L, b), np.linalg.solve(L, b), rtol=1e-10)
    np.testing.assert_allclose(solve_lower_transpose(L, b), np.linalg.solve(L.T, b), rtol=1e-10)
    v = rng.normal(size=4)
    updated = L.copy()
    chol_update(updated, v.copy(), 0.7)
    np.testing.assert_allclose(updated, np.linalg.cholesky(A + 0.7 * np.outer(v, v)), rtol=1e-10)
    assert chol_downdate(updated, v.copy(), 0.7)
    np.testing.assert_allclose(updated, L, rtol=1e-10, atol=1e-12)
    assert not chol_downdate(updated, 10 * v, 1.0)  # would not be positive definite


def test_sample_prior_in_bulk_is_the_sequence_of_single_draws():
    X = np.random.default_rng(0).normal(size=(40, 3))
    base = NormalWishartBase()
    base.initialize(X, np.random.default_rng(1))
    bulk = base.sample_prior(25, np.random.default_rng(5))
    rng = np.random.default_rng(5)
    single = [base._draw(0, base.location_, base._prior_chol, rng) for _ in range(25)]
    np.testing.assert_array_equal(bulk["means"], np.array([m for m, _ in single]))
    np.testing.assert_array_equal(bulk["precisions"], np.array([S for _, S in single]))
