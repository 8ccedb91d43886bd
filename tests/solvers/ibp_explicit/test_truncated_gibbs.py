"""TruncatedGibbsIBP: Gibbs sampling for the truncated stick-breaking IBP (Görür 2007, sec. 4.2.4).

The exact tests enumerate the posterior of the truncated model itself. Its prior of a
left-ordered class is a sum over the ways to place the class's columns on the ``K*``
ordered sticks (the Z matrices in stick order that have those non-empty columns), each
``E[prod_k mu_k^m_k (1 - mu_k)^(N - m_k)]`` under the stick-breaking prior (eq. 4.42-4.43);
that expectation is a polynomial of degree <= N K* in each ``nu_l ~ Beta(alpha, 1)``
(``mu_k = nu_1 ... nu_k``), so Gauss-Jacobi quadrature with weight ``nu^(alpha - 1)``
computes it exactly. ``A`` is integrated out by the Gaussian marginal likelihood, which
only the non-empty columns touch: the IBP enumeration's posterior over its prior gives it.
"""

import itertools
import math
from collections import Counter

import numpy as np
import pytest
from scipy import stats
from scipy.special import roots_jacobi

from sklearn_ibp.likelihoods.linear_gaussian import LinearGaussianFeatures
from sklearn_ibp.solvers.ibp_explicit.truncated_gibbs import (
    TruncatedGibbsIBP,
    truncation_error_bound,
)
from tests._enumeration import enumerate_posterior, enumerate_prior, history_key
from tests.solvers.test_exact_posterior import chi_square_against

# sigma_x = 0.6 (test_exact_posterior uses 0.3): with A explicit and features tied to
# their sticks, the chain's autocorrelation time on the top class is ~300 sweeps at 0.3
# and ~50 at 0.6 (measured), so 0.6 keeps the runs short.
ALPHA, SIGMA_X, SIGMA_A = 0.5, 0.6, 1.5
PARAMS = {"sigma_x": SIGMA_X, "sigma_a": SIGMA_A}


def tiny_data():
    Z = np.array([[1, 0], [1, 1], [0, 1], [1, 0], [0, 1]], dtype=float)
    rng = np.random.default_rng(1)
    return Z @ np.array([[1.5, -1.0], [0.5, 1.5]]) + 0.3 * rng.normal(size=(5, 2))


def stick_expectations(n_rows, alpha, n_sticks):
    """``{c: E[prod_k mu_k^c_k (1 - mu_k)^(N - c_k)]}`` for every count vector ``c``."""
    n_nodes = n_rows * n_sticks // 2 + 1
    x, w = roots_jacobi(n_nodes, 0.0, alpha - 1.0)  # weight (1 + x)^(alpha - 1)
    log_nu, w = np.log((1.0 + x) / 2.0), w / w.sum()
    grid = np.stack(np.meshgrid(*[log_nu] * n_sticks, indexing="ij")).reshape(n_sticks, -1)
    mu = np.exp(np.cumsum(grid, axis=0))
    weights = np.prod(
        np.stack(np.meshgrid(*[w] * n_sticks, indexing="ij")).reshape(n_sticks, -1), axis=0
    )
    out = {}
    for c in itertools.product(range(n_rows + 1), repeat=n_sticks):
        col = np.array(c)[:, None]
        out[c] = float(weights @ np.prod(mu**col * (1 - mu) ** (n_rows - col), axis=0))
    return out


def truncated_prior(n_rows, alpha, n_sticks, classes):
    """``{class: P([Z])}`` under the IBP truncated to ``n_sticks`` sticks."""
    expect = stick_expectations(n_rows, alpha, n_sticks)
    out = {}
    for key in classes:
        if len(key) > n_sticks:
            continue
        tokens = list(key) + [0] * (n_sticks - len(key))
        out[key] = sum(
            expect[tuple(bin(h).count("1") for h in placed)]
            for placed in set(itertools.permutations(tokens))
        )
    return out


def truncated_posterior(X, n_sticks):
    max_features = n_sticks  # the truncated model has no more features than sticks
    N = X.shape[0]
    post, _, _ = enumerate_posterior(X, ALPHA, SIGMA_X, SIGMA_A, max_features=max_features)
    prior, _ = enumerate_prior(N, ALPHA, max_features)
    weights = {k: p * post[k] / prior[k] for k, p in truncated_prior(N, ALPHA, n_sticks,
                                                                       post).items()}
    total = sum(weights.values())
    return {k: v / total for k, v in weights.items()}


def start(solver, X, likelihood, params, seed, alpha=ALPHA):
    rng = np.random.default_rng(seed)
    N, D = X.shape
    state = solver.initialize(X, np.ones((N, D), np.uint8), np.zeros((N, 0)),
                              np.zeros((0, D)), alpha, params, likelihood, rng)
    return state, rng


def sample_classes(X, n_sticks, n_samples, thin, seed, burn_in=500):
    solver, lik = TruncatedGibbsIBP(n_features_max=n_sticks), LinearGaussianFeatures()
    state, rng = start(solver, X, lik, PARAMS, seed)
    for _ in range(burn_in):
        solver.sweep(state, lik, rng)
    keys = []
    for _ in range(n_samples):
        for _ in range(thin):
            solver.sweep(state, lik, rng)
        keys.append(history_key(state.active_Z))
    return keys


def test_truncated_prior_by_quadrature_matches_the_construction():
    """The enumeration's prior sums to one and matches a Monte Carlo of eq. 4.15."""
    N, K = 4, 3
    classes, _ = enumerate_prior(N, ALPHA, K)
    prior = truncated_prior(N, ALPHA, K, classes)
    assert abs(sum(prior.values()) - 1.0) < 1e-10
    rng = np.random.default_rng(0)
    mu = np.cumprod(rng.beta(ALPHA, 1.0, size=(100_000, K)), axis=1)
    counts = Counter(history_key(z) for z in rng.random((100_000, N, K)) < mu[:, None])
    for key in sorted(prior, key=prior.get, reverse=True)[:6]:
        se = math.sqrt(prior[key] * (1 - prior[key]) / 100_000)
        assert abs(counts[key] / 100_000 - prior[key]) < 5 * se


@pytest.mark.parametrize("n_sticks", [3, 10])
def test_histogram_matches_enumerated_posterior(n_sticks):
    """K* = 3: the posterior of the truncated model (it differs from the IBP's by up to
    0.05 a class here). K* = 10: the IBP posterior itself (truncation bound 4e-5).

    1000 samples thinned by 50 (tau ~50 on the top class); 7-10 s each on one core.
    """
    X = tiny_data()
    if n_sticks < 8:
        posterior = truncated_posterior(X, n_sticks)
    else:
        posterior, top_mass, _ = enumerate_posterior(X, ALPHA, SIGMA_X, SIGMA_A, 5)
        assert top_mass < 0.02
    keys = sample_classes(X, n_sticks, n_samples=1000, thin=50, seed=0)
    stat, dof, p_value, counts, expected = chi_square_against(posterior, keys)
    assert dof >= 8
    assert p_value > 1e-3, (stat, dof, counts, expected)


def test_prior_without_data():
    """X of shape (N, 0): K and the sticks follow the truncated construction."""
    N, K_max, n_sweeps = 5, 4, 20_000
    solver, lik = TruncatedGibbsIBP(n_features_max=K_max), LinearGaussianFeatures()
    state, rng = start(solver, np.zeros((N, 0)), lik, PARAMS, seed=3)
    ks, sticks = [], []
    for _ in range(n_sweeps):
        solver.sweep(state, lik, rng)
        ks.append(state.n_features)
        sticks.append(state.stats["sticks"].copy())
    ks, sticks = np.array(ks), np.array(sticks)
    assert np.all(np.diff(sticks, axis=1) < 0)
    # Direct Monte Carlo of the construction truncated at K*.
    mc = np.random.default_rng(0)
    mu = np.cumprod(mc.beta(ALPHA, 1.0, size=(200_000, K_max)), axis=1)
    k_mc = ((mc.random((200_000, N, K_max)) < mu[:, None]).any(axis=1)).sum(axis=1)
    # Sweeps are autocorrelated: standard errors from batch means (40 batches).
    for draws, target in [(ks, k_mc.mean())] + [
        (sticks[:, k], mu[:, k].mean()) for k in range(K_max)
    ]:
        batches = draws.reshape(40, -1).mean(axis=1)
        se = batches.std(ddof=1) / math.sqrt(40)
        assert abs(draws.mean() - target) < 4 * se + 1e-3, (draws.mean(), target, se)


def test_alpha_update_keeps_its_gamma_prior():
    """Successive conditionals with no data: alpha stays Gamma(1, 1)."""
    N, K_max = 4, 3
    solver, lik = TruncatedGibbsIBP(n_features_max=K_max), LinearGaussianFeatures()
    state, rng = start(solver, np.zeros((N, 0)), lik, PARAMS, seed=5,
                       alpha=float(np.random.default_rng(9).gamma(1.0)))
    alphas = []
    for it in range(40_000):
        solver.sweep(state, lik, rng)
        solver.sample_alpha(state, rng, prior=(1.0, 1.0))
        if it % 10 == 0:
            alphas.append(state.alpha)
    alphas = np.array(alphas)
    batches = alphas.reshape(40, -1).mean(axis=1)
    se = batches.std(ddof=1) / math.sqrt(40)
    assert abs(alphas.mean() - 1.0) < 4 * se
    assert stats.kstest(alphas[::10], stats.gamma(1.0).cdf).pvalue > 1e-3


def test_reproducible_and_inputs_untouched():
    X = tiny_data()
    X.setflags(write=False)
    Z0 = np.array([[1], [1], [0], [1], [0]], dtype=np.int8)
    A0 = np.array([[1.0, 0.0]])
    Z0.setflags(write=False)
    A0.setflags(write=False)
    lik = LinearGaussianFeatures()
    runs = []
    for _ in range(2):
        solver, rng = TruncatedGibbsIBP(n_features_max=5), np.random.default_rng(11)
        state = solver.initialize(X, np.ones(X.shape, np.uint8), Z0, A0, ALPHA, PARAMS, lik,
                                  rng)
        for _ in range(50):
            solver.sweep(state, lik, rng)
            solver.sample_alpha(state, rng)
        runs.append((state.active_Z.copy(), state.active_A.copy(), state.alpha,
                     state.stats["sticks"].copy()))
    for a, b in zip(runs[0], runs[1], strict=True):
        np.testing.assert_array_equal(a, b)
    assert solver.exact is False and solver.name == "truncated_gibbs"
    # active_Z holds only the features some row has.
    assert np.all(state.active_Z.any(axis=0))


def test_bad_parameters_refused():
    lik, X = LinearGaussianFeatures(), tiny_data()
    for bad in [0, -2, 2.5, "ten"]:
        with pytest.raises((ValueError, TypeError), match="n_features_max"):
            start(TruncatedGibbsIBP(n_features_max=bad), X, lik, PARAMS, seed=0)
    with pytest.raises(ValueError, match="alpha"):
        start(TruncatedGibbsIBP(), X, lik, PARAMS, seed=0, alpha=0.0)


def test_truncation_bound():
    assert truncation_error_bound(5, 0.5, 10) == pytest.approx(5 * 0.5 / 3**10)


def test_initialize_draws_A_given_Z_when_A_is_None():
    """``A=None`` draws the features given ``Z`` (as every explicit solver does) instead
    of failing on a reshape; bad shapes get a clear error."""
    from sklearn_ibp.likelihoods import LinearGaussianFeatures

    rng = np.random.default_rng(0)
    X = rng.normal(size=(10, 3))
    observed = np.ones(X.shape, np.uint8)
    Z = np.zeros((10, 3), np.int8)
    Z[:6, 0] = Z[4:, 2] = 1  # column 1 empty: dropped
    lik, params = LinearGaussianFeatures(), {"sigma_x": 1.0, "sigma_a": 1.0}
    state = TruncatedGibbsIBP(n_features_max=5).initialize(X, observed, Z, None, 1.0, params,
                                                        lik, rng)
    assert state.n_features == 2
    assert np.all(np.isfinite(state.active_A)) and state.active_A.shape == (2, 3)
    with pytest.raises(ValueError, match=r"A must have shape \(3, 3\)"):
        TruncatedGibbsIBP().initialize(X, observed, Z, np.zeros((2, 3)), 1.0, params, lik, rng)
