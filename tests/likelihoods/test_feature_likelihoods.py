"""The explicit-feature likelihoods against plain NumPy / scipy.stats, and the contract a
sampler relies on: masks, K = 0, untouched inputs, reproducibility, parameter draws."""

import copy

import numpy as np
import pytest
from scipy import stats

from sklearn_ibp.likelihoods import BinaryDetection, ExponentialGaussian, LinearGaussianFeatures
from sklearn_ibp.likelihoods._feature_base import FeatureLikelihood
from sklearn_ibp.likelihoods._observation_kernels import (
    OBSERVE_DETECTION,
    OBSERVE_GAUSSIAN,
    PRIOR_BERNOULLI,
    PRIOR_EXPONENTIAL,
    PRIOR_GAUSSIAN,
    draw_prior_feature,
    row_log_likelihood,
)

N, D, K = 14, 4, 3
PARAMS = {
    "gaussian": {"sigma_x": 0.7, "sigma_a": 1.3},
    "exponential": {"sigma_x": 0.5, "rate": 1.5},
    "detection": {
        "false_rate": np.array([0.1, 0.2, 0.05, 0.3]),
        "miss_rate": np.array([0.15, 0.1, 0.25, 0.05]),
        "p_a": 0.4,
    },
}
MODELS = {
    "gaussian": LinearGaussianFeatures,
    "exponential": ExponentialGaussian,
    "detection": BinaryDetection,
}
NAMES = list(MODELS)


def make_case(name, seed=0):
    """Data drawn from the model, about 20% missing, junk values at the missing entries."""
    rng = np.random.default_rng(seed)
    model = MODELS[name]()
    params = copy.deepcopy(PARAMS[name])
    Z = (rng.random((N, K)) < 0.5).astype(np.int8)
    Z[:K, :] = np.eye(K, dtype=np.int8)
    A = model.sample_prior_features(K, D, params, rng)
    X = model.sample_data(Z, A, params, rng)
    observed = (rng.random((N, D)) > 0.2).astype(np.uint8)
    observed[:, 0] = 1
    X[observed == 0] = 0.5 if name == "detection" else 1e3
    return model, X, observed, Z, A, params


def reference_row_log_likelihood(name, X, observed, Z, A, params):
    """Per-row log density from scipy.stats, masked."""
    pred = Z.astype(float) @ A
    if name == "detection":
        reached = pred > 0
        p_one = np.where(reached, 1 - params["miss_rate"], params["false_rate"])
        terms = stats.bernoulli.logpmf(np.where(observed == 1, X, 0).astype(int), p_one)
    else:
        terms = stats.norm.logpdf(X, pred, params["sigma_x"])
    return np.where(observed == 1, terms, 0.0).sum(axis=1)


@pytest.mark.parametrize("name", NAMES)
def test_class_attributes(name):
    model = MODELS[name]()
    assert isinstance(model, FeatureLikelihood)
    assert model.name == name
    expected = {
        "gaussian": (OBSERVE_GAUSSIAN, PRIOR_GAUSSIAN, ("sigma_x", "sigma_a")),
        "exponential": (OBSERVE_GAUSSIAN, PRIOR_EXPONENTIAL, ("sigma_x", "rate")),
        "detection": (OBSERVE_DETECTION, PRIOR_BERNOULLI, ("p_a",)),
    }[name]
    assert (model.observation_kind, model.prior_kind, model.parameter_names) == expected


@pytest.mark.parametrize("name", NAMES)
def test_row_log_likelihood_matches_scipy_and_the_kernel(name):
    model, X, observed, Z, A, params = make_case(name)
    rows = model.row_log_likelihood(X, observed, Z, A, params)
    assert rows.shape == (N,)
    np.testing.assert_allclose(
        rows, reference_row_log_likelihood(name, X, observed, Z, A, params), rtol=1e-10
    )
    noise = model.noise_array(params, D)
    assert noise.shape == (2, D) and noise.dtype == np.float64
    pred = Z.astype(float) @ A
    kernel = [
        row_log_likelihood(model.observation_kind, X[n], observed[n], pred[n], noise)
        for n in range(N)
    ]
    np.testing.assert_allclose(rows, kernel, rtol=1e-10)
    assert model.log_likelihood(X, observed, Z, A, params) == pytest.approx(rows.sum())


@pytest.mark.parametrize("name", NAMES)
def test_predict_is_the_mean_of_sample_data(name):
    model, _, _, Z, A, params = make_case(name)
    mean = model.predict(Z, A, params)
    assert mean.shape == (N, D)
    rng = np.random.default_rng(1)
    draws = np.mean([model.sample_data(Z, A, params, rng) for _ in range(4000)], axis=0)
    spread = {"gaussian": 0.7, "exponential": 0.5, "detection": 0.5}[name]
    assert np.max(np.abs(draws - mean)) < 5 * spread / np.sqrt(4000)


@pytest.mark.parametrize("name", NAMES)
def test_missing_entries_change_nothing(name):
    model, X, observed, Z, A, params = make_case(name)
    other = X.copy()
    other[observed == 0] = 1.0 if name == "detection" else -7.5
    assert not np.array_equal(other, X)
    for data in (X, other):
        model.check_data(data, observed)
    np.testing.assert_array_equal(
        model.row_log_likelihood(X, observed, Z, A, params),
        model.row_log_likelihood(other, observed, Z, A, params),
    )
    for method in (model.sample_features, model.sample_parameters):
        first = method(X, observed, Z, A, params, np.random.default_rng(3))
        second = method(other, observed, Z, A, params, np.random.default_rng(3))
        if isinstance(first, dict):
            assert first.keys() == second.keys()
            for key in first:
                np.testing.assert_array_equal(first[key], second[key])
        else:
            np.testing.assert_array_equal(first, second)
    # The mask matters: observing the junk changes the likelihood.
    everything = np.ones_like(observed)
    if name != "detection":
        assert model.log_likelihood(X, everything, Z, A, params) != pytest.approx(
            model.log_likelihood(X, observed, Z, A, params)
        )


def run_every_method(model, X, observed, Z, A, params, rng):
    """Every method of the contract once, in a sampler's order; returns the outputs."""
    out = [
        model.initial_parameters(X, observed),
        model.noise_array(params, X.shape[1]),
        model.prior_array(params),
        model.sample_prior_features(2, X.shape[1], params, rng),
    ]
    A_new = model.sample_features(X, observed, Z, A, params, rng)
    out += [
        A_new,
        model.sample_parameters(X, observed, Z, A_new, params, rng),
        model.log_likelihood(X, observed, Z, A_new, params),
        model.row_log_likelihood(X, observed, Z, A_new, params),
        model.log_prior_features(A_new, params),
        model.predict(Z, A_new, params),
        model.sample_data(Z, A_new, params, rng),
    ]
    model.check_data(X, observed)
    return out


def assert_same(first, second):
    assert len(first) == len(second)
    for a, b in zip(first, second, strict=True):
        if isinstance(a, dict):
            assert a.keys() == b.keys()
            for key in a:
                np.testing.assert_array_equal(a[key], b[key])
        else:
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", NAMES)
def test_inputs_are_not_modified(name):
    model, X, observed, Z, A, params = make_case(name)
    originals = [arr.copy() for arr in (X, observed, Z, A)]
    saved_params = copy.deepcopy(params)
    for arr in (X, observed, Z, A):
        arr.setflags(write=False)
    for value in params.values():
        if isinstance(value, np.ndarray):
            value.setflags(write=False)
    run_every_method(model, X, observed, Z, A, params, np.random.default_rng(0))
    for arr, original in zip((X, observed, Z, A), originals, strict=True):
        np.testing.assert_array_equal(arr, original)
    assert_same([params], [saved_params])


@pytest.mark.parametrize("name", NAMES)
def test_same_seed_gives_identical_results(name):
    model, X, observed, Z, A, params = make_case(name)
    first = run_every_method(model, X, observed, Z, A, params, np.random.default_rng(11))
    second = run_every_method(model, X, observed, Z, A, params, np.random.default_rng(11))
    assert_same(first, second)
    third = run_every_method(model, X, observed, Z, A, params, np.random.default_rng(12))
    assert not np.array_equal(first[4], third[4]) or name == "detection"
    assert not np.array_equal(first[10], third[10])


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("z_dtype", [np.int8, np.float64])
def test_no_features(name, z_dtype):
    model, X, observed, _, _, params = make_case(name)
    Z = np.zeros((N, 0), dtype=z_dtype)
    A = np.zeros((0, D))
    rng = np.random.default_rng(0)
    assert model.sample_prior_features(0, D, params, rng).shape == (0, D)
    assert model.sample_features(X, observed, Z, A, params, rng).shape == (0, D)
    new = model.sample_parameters(X, observed, Z, A, params, rng)
    assert set(new) == set(params)
    rows = model.row_log_likelihood(X, observed, Z, A, params)
    assert rows.shape == (N,) and np.all(np.isfinite(rows))
    assert model.predict(Z, A, params).shape == (N, D)
    assert model.sample_data(Z, A, params, rng).shape == (N, D)
    assert model.log_prior_features(A, params) == 0.0
    # With K = 0 every entry is unreached / has mean zero.
    np.testing.assert_allclose(
        rows, reference_row_log_likelihood(name, X, observed, Z.astype(float), A, params)
    )


@pytest.mark.parametrize("name", NAMES)
def test_float_and_int8_Z_agree(name):
    model, X, observed, Z, A, params = make_case(name)
    runs = [
        run_every_method(model, X, observed, z, A, params, np.random.default_rng(2))
        for z in (Z, Z.astype(np.float64))
    ]
    assert_same(*runs)


@pytest.mark.parametrize("name", NAMES)
def test_log_prior_features_matches_scipy(name):
    model, _, _, _, A, params = make_case(name)
    expected = {
        "gaussian": lambda: stats.norm.logpdf(A, 0, params["sigma_a"]).sum(),
        "exponential": lambda: stats.expon.logpdf(A, scale=1 / params["rate"]).sum(),
        "detection": lambda: stats.bernoulli.logpmf(A.astype(int), params["p_a"]).sum(),
    }[name]()
    assert model.log_prior_features(A, params) == pytest.approx(expected, rel=1e-12)


def test_exponential_log_prior_of_a_negative_feature_is_minus_infinity():
    model = ExponentialGaussian()
    assert model.log_prior_features(np.array([[0.5, -1e-9]]), PARAMS["exponential"]) == -np.inf


@pytest.mark.parametrize("name", NAMES)
def test_prior_array_drives_the_kernel_prior(name):
    """The kernel's prior draw, fed ``prior_array``, has the same law as
    ``sample_prior_features`` (KS or binomial check against scipy)."""
    model = MODELS[name]()
    params = PARAMS[name]
    prior = model.prior_array(params)
    assert prior.ndim == 1 and prior.dtype == np.float64
    rng = np.random.default_rng(4)
    kernel = np.empty((3000, D))
    for row in kernel:
        draw_prior_feature(model.prior_kind, prior, row, rng)
    direct = model.sample_prior_features(3000, D, params, rng)
    assert direct.shape == (3000, D) and direct.dtype == np.float64
    for draws in (kernel.ravel(), direct.ravel()):
        if name == "detection":
            assert set(np.unique(draws)) <= {0.0, 1.0}
            test = stats.binomtest(int(draws.sum()), draws.size, params["p_a"])
            assert test.pvalue > 1e-3
        elif name == "gaussian":
            assert stats.kstest(draws, stats.norm(0, params["sigma_a"]).cdf).pvalue > 1e-3
        else:
            law = stats.expon(scale=1 / params["rate"]).cdf
            assert stats.kstest(draws, law).pvalue > 1e-3


def test_initial_parameters():
    rng = np.random.default_rng(0)
    X = rng.normal(3.0, 2.0, size=(40, 3))
    X[:, 1] += 10.0
    observed = np.ones(X.shape, dtype=np.uint8)
    observed[5, 2] = 0
    X[5, 2] = 1e6
    values = np.concatenate(
        [X[observed[:, d] == 1, d] - X[observed[:, d] == 1, d].mean() for d in range(3)]
    )
    gaussian = LinearGaussianFeatures().initial_parameters(X, observed)
    assert gaussian["sigma_x"] == pytest.approx(values.std())
    assert gaussian["sigma_a"] == pytest.approx(0.75 * values.std())
    exponential = ExponentialGaussian().initial_parameters(X, observed)
    assert exponential["sigma_x"] == pytest.approx(values.std())
    assert exponential["rate"] == pytest.approx(1 / np.abs(values).mean())
    constant = np.ones_like(X)
    assert LinearGaussianFeatures().initial_parameters(constant, observed)["sigma_x"] == 1.0
    assert ExponentialGaussian().initial_parameters(constant, observed)["rate"] == 1.0
    binary = BinaryDetection().initial_parameters((X > 3).astype(float), observed)
    np.testing.assert_array_equal(binary["false_rate"], np.full(3, 0.1))
    np.testing.assert_array_equal(binary["miss_rate"], np.full(3, 0.1))
    assert binary["p_a"] == 0.5
    for name, model in MODELS.items():
        data = (X > 3).astype(float) if name == "detection" else X
        params = model().initial_parameters(data, observed)
        assert all(np.isscalar(params[key]) for key in model.parameter_names)


@pytest.mark.parametrize("name", NAMES)
def test_check_data_rejects_bad_arrays(name):
    model, X, observed, _, _, _ = make_case(name)
    model.check_data(X, observed)
    bad = X.copy()
    bad[1, 0] = np.inf
    with pytest.raises(ValueError, match="X"):
        model.check_data(bad, observed)
    with pytest.raises(ValueError, match="X"):
        model.check_data(X[0], observed[0])
    with pytest.raises(ValueError, match="observed"):
        model.check_data(X, observed[:, :-1])
    hidden = np.argwhere(observed == 0)[0]
    junk = X.copy()
    junk[tuple(hidden)] = 0.25  # not binary, but missing: accepted
    model.check_data(junk, observed)


def test_check_data_rejects_non_binary_observed_entries():
    model, X, observed, _, _, _ = make_case("detection")
    bad = X.copy()
    bad[2, 0] = 0.5
    with pytest.raises(ValueError, match="X must be binary"):
        model.check_data(bad, observed)
    bad[2, 0] = 2.0
    with pytest.raises(ValueError, match="X must be binary"):
        model.check_data(bad, observed)


def _all_patterns(n_features):
    codes = np.arange(2**n_features)
    return ((codes[:, None] >> np.arange(n_features)) & 1).astype(float)


@pytest.mark.parametrize("model", ["gaussian", "exponential", "noisy_or", "weighted"])
def test_pattern_log_likelihood_of_new_rows_against_row_log_likelihood(model):
    """The predictive methods for new rows (features held fixed) give, for every pattern
    ``z``, ``row_log_likelihood`` of the rows with ``z`` as their features; the
    real-weighted one integrates the weights: a Gaussian with covariance
    ``sigma_x^2 I + A_z^T A_z``."""
    from sklearn_ibp.likelihoods import LeakyNoisyOr, RealWeightedGaussian

    rng = np.random.default_rng(3)
    n_rows, n_dims, n_features = 5, 4, 3
    observed = rng.random((n_rows, n_dims)) < 0.8
    observed[:, 0] = True
    patterns = _all_patterns(n_features)
    if model == "noisy_or":
        lik, params = LeakyNoisyOr(), {"epsilon": 0.8, "lambda": 0.3, "p_a": 0.5}
        A = (rng.random((n_features, n_dims)) < 0.5).astype(float)
        X = (rng.random((n_rows, n_dims)) < 0.5).astype(float)
        got = lik.pattern_log_likelihood(X, observed, patterns, A, params)
    else:
        params = {"sigma_x": 0.7, "sigma_a": 1.3, "rate": 1.5}
        A = rng.normal(size=(n_features, n_dims))
        X = rng.normal(size=(n_rows, n_dims))
        if model == "weighted":
            lik = RealWeightedGaussian()
            got = lik.pattern_log_likelihood(X, observed, patterns, A, params)
        else:
            lik = LinearGaussianFeatures() if model == "gaussian" else ExponentialGaussian()
            got = lik.pattern_log_predictive(X, observed, patterns, A,
                                             np.zeros((n_features, n_features)), params)
    for p, z in enumerate(patterns):
        Z = np.tile(z, (n_rows, 1))
        if model == "weighted":
            want = []
            for n in range(n_rows):
                Ao = A[z > 0][:, observed[n]]
                cov = 0.49 * np.eye(observed[n].sum()) + Ao.T @ Ao
                want.append(stats.multivariate_normal(np.zeros(len(cov)), cov).logpdf(
                    X[n, observed[n]]))
        else:
            want = lik.row_log_likelihood(X, observed.astype(np.uint8), Z, A, params)
        np.testing.assert_allclose(got[:, p], want, rtol=1e-10, atol=1e-10)
