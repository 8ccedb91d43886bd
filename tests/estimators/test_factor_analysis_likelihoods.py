"""IBPFactorAnalysis with the likelihoods that need the explicit-feature solvers:
exponential-Gaussian (non-negative features, Doshi-Velez 2009, appendix A.2) and the leaky noisy-or
for binary data (eq. A.4)."""

import numpy as np
import pytest
from scipy.special import expit, logsumexp

from sklearn_ibp import IBPFactorAnalysis
from sklearn_ibp.datasets import make_block_images
from sklearn_ibp.estimators import factor_analysis
from sklearn_ibp.likelihoods import LeakyNoisyOr

NOISY_OR = {"epsilon": 0.95, "lambda": 0.1, "p_a": 0.5}


def _best_correlation(true, fitted):
    """For each true feature, its largest correlation with a fitted feature."""
    if fitted.shape[0] == 0:
        return np.zeros(len(true))
    with np.errstate(invalid="ignore", divide="ignore"):
        corr = np.corrcoef(np.vstack([true, fitted]))[: len(true), len(true):]
    return np.nan_to_num(corr).max(axis=1)


def _noisy_or_blocks(n_samples, seed):
    """Binary block images: the four shapes through the leaky noisy-or (leak 0.05, each
    present shape misses a pixel with probability 0.1)."""
    _, Z, A = make_block_images(n_samples=n_samples, noise=0.0, random_state=seed)
    X = LeakyNoisyOr().sample_data(Z, A, NOISY_OR, np.random.default_rng(seed))
    return X, Z, A


# Four chains of 300 sweeps: single chains of the semi-ordered slice sampler sometimes
# sit in a mode that merges two shapes (1-2 of 8 seeds at 300 sweeps); the best of four
# chains found every shape at all 8 seeds tried (0-7), correlation >= 0.99.
@pytest.mark.parametrize("seed", [0, 5])
def test_exponential_recovers_nonnegative_block_features(seed):
    X, _, A = make_block_images(n_samples=200, noise=0.5, random_state=seed)
    model = IBPFactorAnalysis(likelihood="exponential", solver="semi_ordered_slice",
                              n_iter=300, n_chains=4, random_state=seed).fit(X)
    assert np.all(model.components_ >= 0.0)
    assert np.all(model.mean_ == 0.0)  # modelled as given, not centred
    assert np.all(_best_correlation(A, model.components_) > 0.9)
    assert set(model.likelihood_params_) == {"sigma_x", "rate"}
    # The noise level of the data (0.5) is learned.
    assert abs(model.sigma_x_ - 0.5) < 0.05
    assert set(model.traces_) == {"log_joint", "n_features", "alpha", "sigma_x", "rate"}


@pytest.mark.parametrize("seed", [1, 6])
def test_bernoulli_recovers_the_four_shapes_through_noisy_or_noise(seed):
    X, Z, A = _noisy_or_blocks(200, seed)
    model = IBPFactorAnalysis(likelihood="noisy_or", solver="semi_ordered_slice",
                              n_iter=300, n_chains=4, random_state=seed).fit(X)
    assert set(np.unique(model.components_)) <= {0.0, 1.0}
    assert np.all(_best_correlation(A, model.components_) > 0.9)
    # Measured at seeds 0-7: epsilon 0.94-0.95, lambda 0.09-0.11.
    assert abs(model.likelihood_params_["epsilon"] - NOISY_OR["epsilon"]) < 0.03
    assert abs(model.likelihood_params_["lambda"] - NOISY_OR["lambda"]) < 0.05
    # transform: each true feature is found again in the training rows.
    q = model.transform(X)
    match = [np.argmax([np.mean((q[:, j] > 0.5) == Z[:, k]) for j in range(q.shape[1])])
             for k in range(4)]
    agreement = [np.mean((q[:, j] > 0.5) == Z[:, k]) for k, j in enumerate(match)]
    assert min(agreement) > 0.9


@pytest.fixture(scope="module")
def bernoulli_model():
    X, _, _ = _noisy_or_blocks(120, 3)
    model = IBPFactorAnalysis(likelihood="noisy_or", solver="semi_ordered_slice",
                              n_iter=150, n_chains=2, random_state=3).fit(X)
    return model, X


def test_bernoulli_transform_is_the_enumerated_posterior(bernoulli_model):
    model, X = bernoulli_model
    K = model.n_components_
    assert 1 <= K <= factor_analysis.MAX_EXACT_FEATURES
    row = X[7]
    # By hand: p(z | x) over all 2^K patterns with the prior of the N+1-th row.
    patterns = ((np.arange(2**K)[:, None] >> np.arange(K)) & 1).astype(float)
    m, N = model.feature_counts_, model.Z_.shape[0]
    p = m / (N + 1.0)
    log_prior = patterns @ np.log(p) + (1 - patterns) @ np.log1p(-p)
    eps, lam = model.likelihood_params_["epsilon"], model.likelihood_params_["lambda"]
    p_one = 1.0 - eps * lam ** (patterns @ model.components_)
    log_lik = np.sum(np.where(row > 0.5, np.log(p_one), np.log1p(-p_one)), axis=1)
    post = np.exp(log_prior + log_lik - logsumexp(log_prior + log_lik))
    np.testing.assert_allclose(model.transform(X[7:8])[0], post @ patterns, atol=1e-10)
    np.testing.assert_allclose(model.score_samples(X[7:8])[0],
                               logsumexp(log_prior + log_lik), rtol=1e-10)
    # inverse_transform gives P(x = 1).
    np.testing.assert_allclose(model.inverse_transform(patterns[-1:])[0], p_one[-1])


def test_bernoulli_mean_field_agrees_with_enumeration(bernoulli_model, monkeypatch):
    model, X = bernoulli_model
    exact = model.transform(X)
    monkeypatch.setattr(factor_analysis, "MAX_EXACT_FEATURES", 0)
    approx = model.transform(X)
    assert np.all((approx >= 0.0) & (approx <= 1.0))
    # Measured at seeds 3-5: the same side of 0.5 on every entry, mean |difference|
    # below 1e-4 (the noisy-or posterior of a row is nearly certain).
    assert np.mean((approx > 0.5) == (exact > 0.5)) > 0.97
    assert np.mean(np.abs(approx - exact)) < 0.01
    # A row's result depends on that row only.
    np.testing.assert_array_equal(model.transform(X[[4, 2]]), approx[[4, 2]])
    assert np.all(np.isfinite(model.score_samples(X[:3])))


def test_bernoulli_sample_and_missing_entries(bernoulli_model):
    model, X = bernoulli_model
    Xs, Zs = model.sample(50, random_state=0)
    assert set(np.unique(Xs)) <= {0.0, 1.0}
    assert Zs.shape == (50, model.n_components_)
    Xm = X.copy()
    Xm[np.random.default_rng(0).random(X.shape) < 0.2] = np.nan
    q = model.transform(Xm)
    assert q.shape == (X.shape[0], model.n_components_) and not np.isnan(q).any()
    # Fitting with missing entries: they are left out of the likelihood, not imputed.
    refit = IBPFactorAnalysis(likelihood="noisy_or", solver="slice", n_iter=20,
                              random_state=0).fit(Xm)
    assert np.isfinite(refit.score(Xm))


@pytest.mark.parametrize("solver", ["slice", "truncated_gibbs", "metropolis"])
def test_explicit_solvers_are_reproducible_and_warm_start(solver):
    X, _, _ = make_block_images(n_samples=40, random_state=0)
    params = dict(likelihood="exponential", solver=solver, n_iter=8, random_state=1)
    a = IBPFactorAnalysis(**params).fit(X)
    b = IBPFactorAnalysis(**params).fit(X)
    np.testing.assert_array_equal(a.traces_["log_joint"], b.traces_["log_joint"])
    np.testing.assert_array_equal(a.components_, b.components_)
    # Four sweeps, then four more from where they stopped, are the eight sweeps.
    c = IBPFactorAnalysis(**{**params, "n_iter": 4, "burn_in": 0, "warm_start": True})
    c.fit(X).fit(X)
    np.testing.assert_array_equal(c.traces_["log_joint"], a.traces_["log_joint"])


def test_parallel_chains_match_sequential_chains():
    X, _, _ = make_block_images(n_samples=40, random_state=0)
    params = dict(likelihood="exponential", solver="semi_ordered_slice", n_iter=6,
                  n_chains=2, random_state=2)
    seq = IBPFactorAnalysis(**params).fit(X)
    par = IBPFactorAnalysis(**params, n_jobs=2).fit(X)
    np.testing.assert_array_equal(seq.traces_["log_joint"], par.traces_["log_joint"])


def test_fixed_hyperparameters_stay_fixed():
    X, _, _ = make_block_images(n_samples=40, random_state=0)
    model = IBPFactorAnalysis(likelihood="exponential", solver="slice", sigma_x=0.4,
                              sigma_a=2.0, alpha=1.5, sample_hyperparameters=False,
                              n_iter=5, random_state=0).fit(X)
    assert np.all(model.traces_["sigma_x"] == 0.4)
    assert np.all(model.traces_["rate"] == 0.5)
    assert np.all(model.traces_["alpha"] == 1.5)


def test_exponential_prior_log_odds_and_rate_of_new_rows():
    # A check of the exponential path of transform against enumeration by hand.
    X, _, _ = make_block_images(n_samples=60, random_state=4)
    model = IBPFactorAnalysis(likelihood="exponential", solver="semi_ordered_slice",
                              n_iter=60, random_state=4).fit(X)
    K = model.n_components_
    patterns = ((np.arange(2**K)[:, None] >> np.arange(K)) & 1).astype(float)
    m, N = model.feature_counts_, model.Z_.shape[0]
    log_odds = np.log(m) - np.log(N + 1.0 - m)
    log_prior = patterns @ log_odds - np.sum(np.logaddexp(0.0, log_odds))
    resid = X[0] - patterns @ model.components_
    s2 = model.sigma_x_**2
    log_lik = -0.5 * np.sum(resid**2, axis=1) / s2 - 0.5 * X.shape[1] * np.log(2 * np.pi * s2)
    post = np.exp(log_prior + log_lik - logsumexp(log_prior + log_lik))
    np.testing.assert_allclose(model.transform(X[:1])[0], post @ patterns, atol=1e-10)
    assert np.allclose(expit(log_odds), m / (N + 1.0))
