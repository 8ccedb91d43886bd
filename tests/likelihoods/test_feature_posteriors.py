"""The explicit-feature likelihoods sample the right conditionals: ``A | X, Z`` against a
closed form, a fine grid or full enumeration, and the parameters against their analytic
Gamma / Beta posteriors. Fixed seeds; each threshold is stated with its margin."""

import itertools

import numpy as np
import pytest
from scipy import stats

from sklearn_ibp.likelihoods import BinaryDetection, ExponentialGaussian, LinearGaussianFeatures
from sklearn_ibp.likelihoods._exponential_kernels import (
    draw_nonnegative_normal,
    sweep_nonnegative_features,
)
from sklearn_ibp.likelihoods._noisy_or_kernels import sweep_binary_features

# KS / chi-square tests pass at p > P_MIN (a true sampler fails one seed in a thousand).
P_MIN = 1e-3
# Moment checks pass within Z_MAX Monte Carlo standard errors.
Z_MAX = 4.5


def batch_standard_error(values, n_batches=50):
    """Standard error of the mean of a correlated chain by batch means."""
    usable = len(values) - len(values) % n_batches
    means = np.asarray(values[:usable]).reshape(n_batches, -1).mean(axis=1)
    return means.std(ddof=1) / np.sqrt(n_batches)


# --- Gaussian: exact draws of A --------------------------------------------------------


def test_gaussian_features_follow_the_masked_closed_form_posterior():
    rng = np.random.default_rng(0)
    n, k, d = 9, 2, 3
    sx, sa = 0.8, 1.2
    Z = (rng.random((n, k)) < 0.6).astype(np.int8)
    Z[0] = Z[1] = 1
    X = rng.normal(size=(n, d))
    observed = np.ones((n, d), dtype=np.uint8)
    observed[[2, 5, 5], [1, 1, 2]] = 0
    X[observed == 0] = 50.0
    params = {"sigma_x": sx, "sigma_a": sa}
    model = LinearGaussianFeatures()
    n_draws = 4000
    A0 = np.zeros((k, d))
    draws = np.array(
        [model.sample_features(X, observed, Z, A0, params, rng) for _ in range(n_draws)]
    )
    for col in range(d):
        rows = observed[:, col] == 1
        Zc = Z[rows].astype(float)
        precision = Zc.T @ Zc / sx**2 + np.eye(k) / sa**2
        cov = np.linalg.inv(precision)
        mean = cov @ Zc.T @ X[rows, col] / sx**2
        sample = draws[:, :, col]
        se_mean = np.sqrt(np.diag(cov) / n_draws)
        assert np.all(np.abs(sample.mean(axis=0) - mean) < Z_MAX * se_mean)
        # Var of a sample covariance entry: (s_ii s_jj + s_ij^2) / n.
        se_cov = np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov**2) / n_draws)
        assert np.all(np.abs(np.cov(sample.T) - cov) < Z_MAX * se_cov)
    # Columns are independent given (X, Z).
    cross = np.corrcoef(draws[:, 0, 0], draws[:, 0, 1])[0, 1]
    assert abs(cross) < Z_MAX / np.sqrt(n_draws)


# --- Exponential: truncated normal and the element-wise Gibbs chain --------------------


@pytest.mark.parametrize(
    "mean, sd",
    [(1.0, 0.5), (0.0, 1.0), (-0.3, 1.0), (-1.0, 1.0), (-3.0, 0.7), (-30.0, 1.0),
     (-0.3, 0.01), (-400.0, 2.0)],
)
def test_nonnegative_normal_matches_scipy_truncnorm(mean, sd):
    rng = np.random.default_rng(5)
    draws = np.array([draw_nonnegative_normal(mean, sd, rng) for _ in range(3000)])
    assert np.all(draws >= 0.0) and np.all(np.isfinite(draws))
    law = stats.truncnorm(-mean / sd, np.inf, loc=mean, scale=sd)
    assert stats.kstest(draws, law.cdf).pvalue > P_MIN
    # Far in the tail the draws keep their relative precision (no cancellation).
    assert abs(draws.mean() - law.mean()) < Z_MAX * law.std() / np.sqrt(draws.size)


@pytest.mark.parametrize("lower", [-1.0, 0.2, 0.5, 1.0, 2.5])
def test_sweep_draws_truncated_normals_in_bulk(lower):
    """200 000 one-row features in one sweep: each ``a_k`` is ``N(r - rate s^2, s^2)`` on
    ``[0, inf)``. At this size KS resolves a distance of 0.005, enough to see a tail
    acceptance of ``exp(-0.4 gap^2)`` instead of ``exp(-0.5 gap^2)`` (distance 0.008)."""
    n = 200_000
    sigma_x2, rate = 0.49, 1.5
    mean = -lower * np.sqrt(sigma_x2)
    A = np.zeros((n, 1))
    resid = np.full((n, 1), mean + rate * sigma_x2)
    ptr = np.arange(n + 1, dtype=np.int64)
    rows = np.arange(n, dtype=np.int64)
    observed = np.ones((n, 1), dtype=np.uint8)
    sweep_nonnegative_features(A, resid, observed, ptr, rows, sigma_x2, rate,
                               np.random.default_rng(8))
    law = stats.truncnorm(lower, np.inf, loc=mean, scale=np.sqrt(sigma_x2))
    assert stats.kstest(A[:, 0], law.cdf).pvalue > P_MIN


def exponential_problem():
    """K = 2, D = 1, four observed rows and one row whose value is missing (junk)."""
    Z = np.array([[1, 0], [0, 1], [1, 1], [1, 1], [0, 1]], dtype=np.int8)
    X = np.array([[0.9], [0.1], [1.2], [0.7], [25.0]])
    observed = np.array([[1], [1], [1], [1], [0]], dtype=np.uint8)
    return Z, X, observed, {"sigma_x": 0.6, "rate": 1.5}


def exponential_grid_posterior(Z, X, observed, params, size=1200, top=4.0):
    """The exact posterior of (a_1, a_2) on a fine grid over [0, top]^2 (cell midpoints)."""
    step = top / size
    values = (np.arange(size) + 0.5) * step
    a1, a2 = np.meshgrid(values, values, indexing="ij")
    log_p = -params["rate"] * (a1 + a2)
    for n in range(X.shape[0]):
        if observed[n, 0]:
            pred = Z[n, 0] * a1 + Z[n, 1] * a2
            log_p += stats.norm.logpdf(X[n, 0], pred, params["sigma_x"])
    weights = np.exp(log_p - log_p.max())
    return a1, a2, weights / weights.sum()


def test_exponential_gibbs_chain_matches_the_grid_posterior():
    Z, X, observed, params = exponential_problem()
    a1, a2, weights = exponential_grid_posterior(Z, X, observed, params)
    model = ExponentialGaussian()
    rng = np.random.default_rng(7)
    A = np.ones((2, 1))
    n_sweeps, burn = 30000, 200
    chain = np.empty((n_sweeps, 2))
    for t in range(n_sweeps + burn):
        A = model.sample_features(X, observed, Z, A, params, rng)
        if t >= burn:
            chain[t - burn] = A[:, 0]
    functions = {
        "a1": (chain[:, 0], a1),
        "a2": (chain[:, 1], a2),
        "a1^2": (chain[:, 0] ** 2, a1**2),
        "a1 a2": (chain[:, 0] * chain[:, 1], a1 * a2),
        "a2 < 0.1": (chain[:, 1] < 0.1, a2 < 0.1),
    }
    for name, (sample, exact) in functions.items():
        expected = float(np.sum(weights * exact))
        error = abs(sample.mean() - expected)
        assert error < Z_MAX * batch_standard_error(sample.astype(float)), name
    # Histogram over the cells of a 4 x 4 grid cut at the exact marginal quartiles; the
    # chain thinned by 15 (its lag-1 autocorrelation is about 0.14).
    thinned = chain[::15]
    edges = []
    for axis, grid in enumerate((a1, a2)):
        marginal = weights.sum(axis=1 - axis)
        points = grid[:, 0] if axis == 0 else grid[0]
        cdf = np.cumsum(marginal)
        edges.append(np.interp([0.25, 0.5, 0.75], cdf, points))
    cell_exact = np.zeros((4, 4))
    np.add.at(
        cell_exact,
        (np.searchsorted(edges[0], a1.ravel()), np.searchsorted(edges[1], a2.ravel())),
        weights.ravel(),
    )
    cell_seen = np.zeros((4, 4))
    np.add.at(
        cell_seen,
        (np.searchsorted(edges[0], thinned[:, 0]), np.searchsorted(edges[1], thinned[:, 1])),
        1,
    )
    keep = cell_exact.ravel() * len(thinned) > 5
    expected = cell_exact.ravel()[keep] * len(thinned)
    seen = cell_seen.ravel()[keep]
    expected *= seen.sum() / expected.sum()
    assert stats.chisquare(seen, expected).pvalue > P_MIN


def test_exponential_sweep_keeps_the_residual_and_the_mask():
    rng = np.random.default_rng(1)
    n, k, d = 20, 4, 5
    Z = (rng.random((n, k)) < 0.4).astype(np.int8)
    A = rng.exponential(size=(k, d))
    X = Z @ A + 0.3 * rng.normal(size=(n, d))
    observed = (rng.random((n, d)) > 0.25).astype(np.uint8)
    resid = np.where(observed == 1, X - Z @ A, 0.0)
    ptr = np.concatenate([[0], np.cumsum(Z.sum(axis=0))]).astype(np.int64)
    rows = np.concatenate([np.flatnonzero(Z[:, j]) for j in range(k)]).astype(np.int64)
    for _ in range(50):
        sweep_nonnegative_features(A, resid, observed, ptr, rows, 0.09, 1.0, rng)
    assert np.all(A >= 0.0)
    np.testing.assert_allclose(resid, np.where(observed == 1, X - Z @ A, 0.0), atol=1e-10)


# --- Binary detection: enumeration over A ----------------------------------------------


def detection_problem():
    Z = np.array([[1, 0], [0, 1], [1, 1], [1, 0], [0, 1], [1, 1]], dtype=np.int8)
    X = np.array([[1, 0], [0, 1], [1, 1], [0, 0], [1, 1], [0, 1]], dtype=float)
    observed = np.ones(X.shape, dtype=np.uint8)
    observed[2, 1] = 0
    X[2, 1] = 0.5
    params = {
        "false_rate": np.array([0.2, 0.3]),
        "miss_rate": np.array([0.3, 0.2]),
        "p_a": 0.4,
    }
    return Z, X, observed, params


def enumerated_posterior(Z, X, observed, params):
    """``p(A | X, Z)`` for every binary A (K x D, read row-major as bits), by plain loops."""
    n, k = Z.shape
    d = X.shape[1]
    states = [np.array(bits, dtype=float).reshape(k, d)
              for bits in itertools.product([0, 1], repeat=k * d)]
    log_p = []
    for A in states:
        total = np.sum(A) * np.log(params["p_a"]) + np.sum(1 - A) * np.log(1 - params["p_a"])
        for row in range(n):
            for col in range(d):
                if not observed[row, col]:
                    continue
                reached = any(Z[row, j] and A[j, col] for j in range(k))
                p_one = 1 - params["miss_rate"][col] if reached else params["false_rate"][col]
                total += np.log(p_one if X[row, col] == 1 else 1 - p_one)
        log_p.append(total)
    log_p = np.array(log_p)
    p = np.exp(log_p - log_p.max())
    return states, p / p.sum()


def test_detection_gibbs_chain_matches_enumeration():
    Z, X, observed, params = detection_problem()
    states, exact = enumerated_posterior(Z, X, observed, params)
    index = {tuple(s.ravel().astype(int)): i for i, s in enumerate(states)}
    model = BinaryDetection()
    rng = np.random.default_rng(3)
    A = np.zeros((2, 2))
    counts = np.zeros(len(states))
    n_keep, thin = 6000, 3
    for t in range(n_keep * thin + 100):
        A = model.sample_features(X, observed, Z, A, params, rng)
        if t >= 100 and t % thin == 0:
            counts[index[tuple(A.ravel().astype(int))]] += 1
    keep = exact * counts.sum() > 5
    expected = exact[keep] * counts.sum()
    expected *= counts[keep].sum() / expected.sum()
    assert stats.chisquare(counts[keep], expected).pvalue > P_MIN
    assert counts[~keep].sum() <= 5 * max(1.0, exact[~keep].sum() * counts.sum())


def test_detection_sweep_keeps_the_counts():
    rng = np.random.default_rng(2)
    n, k, d = 25, 5, 6
    Z = (rng.random((n, k)) < 0.4).astype(np.int8)
    A = (rng.random((k, d)) < 0.5).astype(float)
    X = (rng.random((n, d)) < 0.5).astype(float)
    observed = (rng.random((n, d)) > 0.2).astype(np.uint8)
    counts = (Z @ A).astype(np.int64)
    ptr = np.concatenate([[0], np.cumsum(Z.sum(axis=0))]).astype(np.int64)
    rows = np.concatenate([np.flatnonzero(Z[:, j]) for j in range(k)]).astype(np.int64)
    noise = np.array([np.full(d, 0.2), np.full(d, 0.3)])
    for _ in range(30):
        sweep_binary_features(A, counts, X, observed, ptr, rows, noise, 0.5, rng)
    assert set(np.unique(A)) <= {0.0, 1.0}
    np.testing.assert_array_equal(counts, (Z @ A).astype(np.int64))


# --- Parameters given (X, Z, A) ---------------------------------------------------------


def parameter_draws(model, X, observed, Z, A, params, n_draws=3000, seed=0):
    rng = np.random.default_rng(seed)
    return [model.sample_parameters(X, observed, Z, A, params, rng) for _ in range(n_draws)]


def real_problem(model, seed=0):
    rng = np.random.default_rng(seed)
    n, k, d = 30, 3, 4
    Z = (rng.random((n, k)) < 0.5).astype(np.int8)
    A = rng.exponential(size=(k, d))
    X = Z @ A + 0.5 * rng.normal(size=(n, d))
    observed = (rng.random((n, d)) > 0.2).astype(np.uint8)
    X[observed == 0] = -99.0
    resid = np.where(observed == 1, X - Z @ A, 0.0)
    return X, observed, Z, A, int(observed.sum()), float(np.sum(resid**2))


def test_gaussian_parameters_follow_their_gamma_posteriors():
    model = LinearGaussianFeatures()
    X, observed, Z, A, n_obs, sse = real_problem(model)
    draws = parameter_draws(model, X, observed, Z, A, {"sigma_x": 1.0, "sigma_a": 1.0})
    noise = stats.gamma(1 + n_obs / 2, scale=1 / (1 + sse / 2))
    feature = stats.gamma(1 + A.size / 2, scale=1 / (1 + np.sum(A**2) / 2))
    assert stats.kstest([1 / p["sigma_x"] ** 2 for p in draws], noise.cdf).pvalue > P_MIN
    assert stats.kstest([1 / p["sigma_a"] ** 2 for p in draws], feature.cdf).pvalue > P_MIN


def test_exponential_parameters_follow_their_gamma_posteriors():
    model = ExponentialGaussian()
    X, observed, Z, A, n_obs, sse = real_problem(model)
    draws = parameter_draws(model, X, observed, Z, A, {"sigma_x": 1.0, "rate": 1.0})
    noise = stats.gamma(1 + n_obs / 2, scale=1 / (1 + sse / 2))
    rate = stats.gamma(1 + A.size, scale=1 / (1 + np.sum(A)))
    assert stats.kstest([1 / p["sigma_x"] ** 2 for p in draws], noise.cdf).pvalue > P_MIN
    assert stats.kstest([p["rate"] for p in draws], rate.cdf).pvalue > P_MIN


def test_detection_parameters_follow_their_beta_posteriors():
    rng = np.random.default_rng(4)
    n, k, d = 40, 3, 3
    Z = (rng.random((n, k)) < 0.3).astype(np.int8)
    A = (rng.random((k, d)) < 0.5).astype(float)
    X = (rng.random((n, d)) < 0.4).astype(float)
    observed = (rng.random((n, d)) > 0.2).astype(np.uint8)
    X[observed == 0] = 0.5
    params = {"false_rate": np.full(d, 0.1), "miss_rate": np.full(d, 0.1), "p_a": 0.5}
    draws = parameter_draws(BinaryDetection(), X, observed, Z, A, params)
    for col in range(d):
        tallies = {"false": [1.0, 9.0], "miss": [1.0, 9.0]}
        for row in range(n):
            if not observed[row, col]:
                continue
            reached = any(Z[row, j] == 1 and A[j, col] == 1 for j in range(k))
            if reached:
                tallies["miss"][0 if X[row, col] == 0 else 1] += 1
            else:
                tallies["false"][0 if X[row, col] == 1 else 1] += 1
        for key in ("false", "miss"):
            law = stats.beta(*tallies[key])
            sample = [p[f"{key}_rate"][col] for p in draws]
            assert stats.kstest(sample, law.cdf).pvalue > P_MIN
    law = stats.beta(1 + A.sum(), 1 + A.size - A.sum())
    assert stats.kstest([p["p_a"] for p in draws], law.cdf).pvalue > P_MIN
