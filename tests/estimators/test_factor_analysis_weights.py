"""IBPFactorAnalysis(weights="gaussian"): the real-weighted model of Görür 2007, sec. 4.4,
``x_n = (z_n * y_n) A + e_n`` with ``y_nk ~ N(0, 1)``, fitted by the semi-ordered slice
sampler. The sampler itself is tested in tests/likelihoods/test_real_weighted.py (exact
posterior, prior, Geweke, the digits); here: the estimator's wiring, its predictive
quantities against direct formulas, and recovery of real-weighted block images."""

import itertools

import numpy as np
import pytest
from scipy.special import expit, logsumexp
from scipy.stats import multivariate_normal

import sklearn_ibp.estimators.factor_analysis as fa_module
from sklearn_ibp import IBPFactorAnalysis
from sklearn_ibp.datasets import make_block_images

_, _, BLOCKS = make_block_images(n_samples=2, random_state=0)  # the four 6x6 shapes


def _weighted_blocks(seed, n_samples=200, sigma_x=0.3):
    """Rows of the real-weighted model over the four block shapes: each shape present
    with probability 1/2, with a standard normal weight."""
    rng = np.random.default_rng(seed)
    Z = rng.random((n_samples, BLOCKS.shape[0])) < 0.5
    W = Z * rng.standard_normal(Z.shape)
    return W @ BLOCKS + sigma_x * rng.standard_normal((n_samples, BLOCKS.shape[1]))


@pytest.fixture(scope="module")
def fitted():
    """A small fitted real-weighted model (few features, so 2^K enumeration is cheap)."""
    X = _weighted_blocks(0, n_samples=60)[:, :8]
    model = IBPFactorAnalysis(weights="gaussian", solver="semi_ordered_slice", n_iter=40,
                              random_state=0).fit(X)
    assert 1 <= model.n_components_ <= 6
    return model, X


def _direct_posterior(model, x):
    """By enumeration with dense Gaussians: ``log p(x_obs)`` and ``E[w | x_obs]`` for one
    row, from ``x_obs ~ N(0, s^2 I + A_S^T A_S)`` and ``E[w_S | x] = A_S Sigma^-1 x``
    (``Cov(w_S, x) = A_S``), the features at ``components_``."""
    K = model.n_components_
    obs = ~np.isnan(x)
    xo = (x - model.mean_)[obs]
    A = model.components_[:, obs]
    m = model.feature_counts_.astype(float)
    p = m / (model._n_train + 1.0)
    s2 = model.sigma_x_**2
    log_terms, means = [], []
    for bits in itertools.product([0, 1], repeat=K):
        z = np.array(bits, bool)
        As = A[z]
        cov = s2 * np.eye(obs.sum()) + As.T @ As
        log_prior = np.sum(np.where(z, np.log(p), np.log1p(-p)))
        log_terms.append(log_prior + multivariate_normal(np.zeros(obs.sum()), cov).logpdf(xo))
        w = np.zeros(K)
        w[z] = As @ np.linalg.solve(cov, xo)
        means.append(w)
    log_terms = np.array(log_terms)
    weights = np.exp(log_terms - logsumexp(log_terms))
    return logsumexp(log_terms), weights @ np.array(means)


def test_transform_and_score_samples_match_direct_enumeration(fitted):
    model, X = fitted
    rows = X[:5].copy()
    rows[1, 3] = rows[4, 0] = rows[4, 6] = np.nan  # missing entries are marginalised
    T = model.transform(rows)
    S = model.score_samples(rows)
    for n in range(rows.shape[0]):
        log_px, expected_w = _direct_posterior(model, rows[n])
        np.testing.assert_allclose(T[n], expected_w, rtol=1e-7, atol=1e-10)
        np.testing.assert_allclose(S[n], log_px, rtol=1e-9)
    # The reconstruction is E[w | x] A + mean, the posterior mean of the row's signal.
    np.testing.assert_allclose(model.inverse_transform(T),
                               T @ model.components_ + model.mean_)
    assert model.W_.shape == model.Z_.shape
    assert np.all(model.W_[model.Z_ == 0] == 0)


def test_many_features_mean_field_close_to_enumeration(fitted, monkeypatch):
    """Beyond ``MAX_EXACT_FEATURES`` features, transform uses the weights' posterior mean
    at the mean-field mode of z instead of the mixture over all patterns: its
    reconstruction of the data is nearly as good (scratch runs, seeds 0-3: 1.01-1.13
    times the enumerated reconstruction's mean squared error)."""
    model, X = fitted
    exact = model.transform(X)
    monkeypatch.setattr(fa_module, "MAX_EXACT_FEATURES", 0)
    approx = model.transform(X)
    assert approx.shape == exact.shape
    assert not np.allclose(approx, exact)  # the approximate path did run
    error_exact = np.mean((X - model.inverse_transform(exact)) ** 2)
    error_approx = np.mean((X - model.inverse_transform(approx)) ** 2)
    assert error_approx < 1.2 * error_exact, (error_approx, error_exact)


def test_many_features_score_samples_is_a_lower_bound(fitted, monkeypatch):
    """Beyond the limit, score_samples sums over the mean-field mode and flips of its
    least certain features only (none when the limit is 0): a lower bound of the
    enumerated value, and equal to the mode's own term."""
    model, X = fitted
    exact = model.score_samples(X)
    monkeypatch.setattr(fa_module, "MAX_EXACT_FEATURES", 0)
    bound = model.score_samples(X)
    assert np.all(np.isfinite(bound))
    assert np.all(bound <= exact + 1e-9)
    assert np.mean(exact - bound) < 1.0  # the mode carries most of the mass


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_recovers_real_weighted_blocks_and_beats_binary_weights(seed):
    """Scratch runs, seeds 0-3: the weighted model found K = 4-5 features each within
    correlation 0.993 of a true shape and held-out mean squared error 0.082-0.087 (noise
    variance 0.09); the binary model needed 16-20 features, correlation 0.83-0.99, error
    0.106-0.126.

    One chain of 200 sweeps finds all four shapes only about two times in three: seeds
    0-9 and the same shifted by 100, 15 of 20 chains before issue 20 and 13 of 20 after
    (the others merge two shapes, K = 3). The three seeds here all passed with one chain
    before by luck (about 0.65^3 = 27%), and any change to the chain's path breaks that:
    the fit keeps the best of three chains (the user guide's remedy for a merged mode).
    """
    X, X_test = _weighted_blocks(seed), _weighted_blocks(seed + 100)
    errors = {}
    for weights in ("gaussian", "binary"):
        n_chains = 3 if weights == "gaussian" else 1
        model = IBPFactorAnalysis(weights=weights, solver="semi_ordered_slice", n_iter=200,
                                  n_chains=n_chains, random_state=seed).fit(X)
        reconstruction = model.inverse_transform(model.transform(X_test))
        errors[weights] = np.mean((X_test - reconstruction) ** 2)
        if weights == "gaussian":
            assert 4 <= model.n_components_ <= 6
            corr = np.abs(np.corrcoef(BLOCKS, model.components_)[:4, 4:]).max(axis=1)
            assert np.all(corr > 0.98), corr
    assert errors["gaussian"] < 0.1
    assert errors["gaussian"] < 0.9 * errors["binary"], errors


def test_sample_has_the_weighted_model_covariance(fitted):
    """Rows drawn by ``sample`` have covariance ``sum_k p_k a_k a_k^T + s^2 I`` (weights of
    variance 1; binary weights would give ``p_k (1 - p_k)``)."""
    model, _ = fitted
    Xs, Z = model.sample(40000, random_state=1)
    p = expit(model._prior_log_odds())
    A = model.components_
    expected = (A.T * p) @ A + model.sigma_x_**2 * np.eye(A.shape[1])
    np.testing.assert_allclose(np.cov(Xs, rowvar=False), expected, atol=0.06)
    np.testing.assert_allclose(Z.mean(axis=0), p, atol=0.02)
    Xs2, _ = model.sample(5, random_state=1)
    np.testing.assert_array_equal(Xs2, model.sample(5, random_state=1)[0])


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"weights": "poisson"}, "'weights' parameter"),
        ({"weights": "gaussian", "likelihood": "exponential",
          "solver": "semi_ordered_slice"}, "weights='gaussian' needs likelihood='gaussian'"),
        ({"weights": "gaussian", "solver": "slice"},
         r"solver='slice' cannot serve likelihood='gaussian' with weights='gaussian'; "
         r"solvers that can: \['semi_ordered_slice'\]"),
        ({"weights": "gaussian"}, r"solver='accelerated' cannot serve"),
    ],
)
def test_bad_weights_refused(params, match):
    X = _weighted_blocks(0, n_samples=10)
    with pytest.raises(ValueError, match=match):
        IBPFactorAnalysis(n_iter=2, **params).fit(X)


def test_weight_draws_average_to_the_posterior_mean(fitted):
    """``_draw_weights`` (the imputer's ``sample_posterior``) draws a pattern, then the
    weights given it: over many draws of one row the average is ``transform``'s exact
    ``E[w | x]``, and a weight is 0 exactly where its feature was not drawn."""
    model, X = fitted
    rows = X[[0, 7, 11]].copy()
    rows[1, 2] = np.nan
    n_draws = 4000
    draws = model._draw_weights(np.repeat(rows, n_draws, axis=0), np.random.default_rng(3))
    draws = draws.reshape(3, n_draws, -1)
    expected = model.transform(rows)
    se = draws.std(axis=1) / np.sqrt(n_draws)
    assert np.all(np.abs(draws.mean(axis=1) - expected) < 4.5 * se + 1e-12)
    assert np.any(draws == 0.0) and np.any(draws != 0.0)


def test_imputer_with_real_weights_fills_missing_entries():
    from sklearn_ibp import IBPImputer

    X = _weighted_blocks(1, n_samples=80)
    rng = np.random.default_rng(0)
    X_missing = X.copy()
    X_missing[rng.random(X.shape) < 0.1] = np.nan
    mask = np.isnan(X_missing)
    estimator = IBPFactorAnalysis(weights="gaussian", solver="semi_ordered_slice", n_iter=60)
    filled = IBPImputer(estimator, random_state=0).fit_transform(X_missing)
    drawn = IBPImputer(estimator, sample_posterior=True, random_state=0).fit_transform(
        X_missing)
    again = IBPImputer(estimator, sample_posterior=True, random_state=0).fit_transform(
        X_missing)
    np.testing.assert_array_equal(drawn, again)
    assert np.all(np.isfinite(filled)) and np.all(np.isfinite(drawn))
    np.testing.assert_array_equal(filled[~mask], X[~mask])
    # Scratch runs (data seeds 1-4, 150 sweeps): the posterior-mean fill's squared error
    # was 0.22-0.47 of the missing entries' variance, the draw's 0.45-0.87; the binary
    # model's 0.29-0.46 and 0.53-0.83 (one of the four weighted fits sat in a mode with
    # merged features and did worse than the binary one).
    variance = X[mask].var()
    assert np.mean((filled[mask] - X[mask]) ** 2) < 0.6 * variance
    assert np.mean((drawn[mask] - X[mask]) ** 2) < 1.0 * variance
