"""score_samples is a normalised density, and transform is Bayes' rule over patterns."""

import numpy as np
import pytest
from scipy.special import logsumexp

from sklearn_ibp import IBPFactorAnalysis
from sklearn_ibp.datasets import make_ibp_linear_gaussian


@pytest.fixture(scope="module")
def fitted_2d():
    X, _, _ = make_ibp_linear_gaussian(
        n_samples=80, n_dims=2, alpha=1.5, sigma_x=0.3, sigma_a=1.5, random_state=0
    )
    model = IBPFactorAnalysis(n_iter=60, random_state=0).fit(X)
    assert 1 <= model.n_components_ <= 12
    return model, X


def test_predictive_density_integrates_to_one(fitted_2d):
    model, X = fitted_2d
    lo, hi = X.min(axis=0) - 6, X.max(axis=0) + 6
    g0, g1 = np.linspace(lo[0], hi[0], 400), np.linspace(lo[1], hi[1], 400)
    grid = np.stack(np.meshgrid(g0, g1, indexing="ij"), axis=-1).reshape(-1, 2)
    cell = (g0[1] - g0[0]) * (g1[1] - g1[0])
    mass = np.exp(logsumexp(model.score_samples(grid))) * cell
    assert mass == pytest.approx(1.0, abs=0.01)


def test_missing_entry_is_marginalised(fitted_2d):
    model, X = fitted_2d
    # p(x_0) = integral of p(x_0, x_1) dx_1.
    x0 = X[3, 0]
    g1 = np.linspace(X[:, 1].min() - 8, X[:, 1].max() + 8, 4000)
    joint = model.score_samples(np.column_stack([np.full_like(g1, x0), g1]))
    marginal = logsumexp(joint) + np.log(g1[1] - g1[0])
    assert model.score_samples(np.array([[x0, np.nan]]))[0] == pytest.approx(marginal, abs=1e-3)


def test_transform_is_bayes_rule(fitted_2d):
    model, X = fitted_2d
    K = model.n_components_
    patterns = ((np.arange(2**K)[:, None] >> np.arange(K)) & 1).astype(float)
    prior = model.feature_counts_ / (model.beta + model.Z_.shape[0])
    log_prior = patterns @ np.log(prior) + (1 - patterns) @ np.log1p(-prior)
    x = X[5] - model.mean_
    mean = patterns @ model.components_
    var = model.sigma_x_**2 + np.einsum("pk,kj,pj->p", patterns, model._feature_cov, patterns)
    log_lik = -np.log(2 * np.pi * var) - 0.5 * np.sum((x - mean) ** 2, axis=1) / var
    post = np.exp(log_prior + log_lik - logsumexp(log_prior + log_lik))
    np.testing.assert_allclose(model.transform(X[[5]])[0], post @ patterns, atol=1e-12)
