"""MetropolisIBP (Görür 2007, Algorithm 13) and ApproximateGibbsIBP (Algorithm 12).

* The exact sampler's histogram of left-ordered classes of Z matches the enumerated
  posterior of the tiny problems of ``test_exact_posterior.py`` (chi-square test).
* ApproximateGibbsIBP is tested against its own stationary distribution where that is
  computable: without data every feature evolves on its own and new ones arrive at
  ``K_hat p = K_hat alpha / (K_hat N + alpha)`` a row visit instead of ``alpha / N``, so
  ``E[K] = alpha H_N K_hat N / (K_hat N + alpha)`` exactly. With data its stationary
  distribution has no closed form (its two conditionals belong to no one joint), so the
  test is that with a large ``n_auxiliary`` the histogram is the exact posterior's.
* Without data both samplers reproduce the IBP prior's ``K ~ Poisson(alpha H_N)``.
* The exact sampler with the exponential-Gaussian likelihood finds the four block shapes.
"""

import functools

import numpy as np
import pytest
from scipy.stats import chi2, poisson

from sklearn_ibp.datasets import make_block_images
from sklearn_ibp.likelihoods import ExponentialGaussian, LinearGaussianFeatures
from sklearn_ibp.likelihoods._observation_kernels import row_log_likelihood
from sklearn_ibp.priors.ibp import harmonic_rate
from sklearn_ibp.solvers.ibp_explicit._approximate_gibbs_kernels import _enumerate_subsets
from sklearn_ibp.solvers.ibp_explicit._metropolis_kernels import (
    compact_features,
    refresh_prediction,
)
from sklearn_ibp.solvers.ibp_explicit.approximate_gibbs import ApproximateGibbsIBP
from sklearn_ibp.solvers.ibp_explicit.metropolis import MetropolisIBP
from tests._enumeration import enumerate_posterior, history_key
from tests.solvers.test_exact_posterior import PROBLEMS, chi_square_against

ALPHA, SIGMA_X, SIGMA_A = 0.5, 0.3, 1.5
GAUSSIAN_PARAMS = {"sigma_x": SIGMA_X, "sigma_a": SIGMA_A}


def run_chain(solver, X, likelihood, params, alpha, n_sweeps, seed, thin=1, burn_in=0,
              record=None, resample_parameters=False):
    """Run ``solver`` from no features; ``record(state)`` on every kept sweep."""
    rng = np.random.default_rng(seed)
    N = X.shape[0]
    state = solver.initialize(X, None, np.zeros((N, 0)), None, alpha, params, likelihood, rng)
    out = []
    for it in range(n_sweeps):
        solver.sweep(state, likelihood, rng)
        if resample_parameters:
            state.params = likelihood.sample_parameters(
                state.X, state.observed, state.active_Z, state.active_A, state.params, rng
            )
        if record is not None and it >= burn_in and (it - burn_in) % thin == 0:
            out.append(record(state))
    return state, out


@functools.cache
def tiny_problem(name):
    """The data and enumerated posterior of ``test_exact_posterior.py``'s problems."""
    Z, _ = PROBLEMS[name]
    rng = np.random.default_rng({"five_rows": 1, "four_rows": 4}[name])
    A = np.array([[1.5, -1.0], [0.5, 1.5]])
    X = Z @ A + SIGMA_X * rng.normal(size=(Z.shape[0], 2))
    max_features = 7 if X.shape[0] == 4 else 5
    posterior, top_mass, _ = enumerate_posterior(X, ALPHA, SIGMA_X, SIGMA_A, max_features)
    assert top_mass < 0.02
    return X, posterior


def check_histogram(posterior, keys):
    stat, dof, p_value, counts, expected = chi_square_against(posterior, keys)
    assert dof >= 8
    assert p_value > 1e-3, (stat, dof, counts, expected)
    top = max(posterior, key=posterior.get)
    freq = sum(k == top for k in keys) / len(keys)
    assert abs(freq - posterior[top]) < 0.05


# 600 samples, one every 100 sweeps: A explicit and Z drawn given A mix slowly (a class
# of three features changes into another only through A), and thinning 20 or 60 still
# left enough autocorrelation to inflate the chi-square (p ~ 1e-6 to 0.04 over seeds,
# about the same for the existing UncollapsedIBP at thinning 60). At 100, p over seeds
# 0, 1, 2 (the test runs seed 0) with 600 samples (with 1000):
#   prior proposal, four rows: p = 0.80, 0.054, 0.077 (0.32, 0.57, 0.016)
#   data proposal, five rows:  p = 0.037, 0.32, 0.57 (0.42, 0.25, 0.086)
# About 0.15 ms a sweep on an idle core (half of it likelihood.sample_features), so the
# 60 000 sweeps take about 9 s (20 s on the loaded 2-core machine). Caught when broken
# on purpose: prior odds m_{-n,k} / N instead of m_{-n,k} / (N - m_{-n,k}) gives
# p = 7e-30 (four rows, prior proposal, 300 samples); the data proposal's ratio without
# G_0(a) / q(a) gives p = 2e-111 (five rows, 300 samples).
# Each proposal is checked on one problem (suite time).
@pytest.mark.parametrize("name, proposal", [("four_rows", "prior"), ("five_rows", "data")])
def test_metropolis_matches_exact_posterior(name, proposal):
    X, posterior = tiny_problem(name)
    _, keys = run_chain(
        MetropolisIBP(proposal=proposal), X, LinearGaussianFeatures(), GAUSSIAN_PARAMS,
        ALPHA, n_sweeps=60_100, seed=0, thin=100, burn_in=100,
        record=lambda s: history_key(s.active_Z),
    )
    check_histogram(posterior, keys)


# n_auxiliary = 8: new unique features arrive at 8 p = 0.123 a row visit on four rows
# instead of alpha / N = 0.125, a bias far below what 1000 samples can see (the bias is
# shown, and checked against its exact value, in the test without data below). The same
# thinning and 600 samples as above; p over seeds 0, 1, 2 = 0.69, 0.046, 0.48 (the
# test runs seed 0; with 1000 samples 0.22, 0.0092, 0.62).
def test_approximate_gibbs_with_many_auxiliary_features_matches_posterior():
    X, posterior = tiny_problem("four_rows")
    _, keys = run_chain(
        ApproximateGibbsIBP(n_auxiliary=8), X, LinearGaussianFeatures(), GAUSSIAN_PARAMS,
        ALPHA, n_sweeps=60_100, seed=0, thin=100, burn_in=100,
        record=lambda s: history_key(s.active_Z),
    )
    check_histogram(posterior, keys)


def batch_means_se(values, n_batches=20):
    """Standard error of the mean of a correlated series by batch means."""
    batches = np.array_split(np.asarray(values, dtype=float), n_batches)
    means = np.array([b.mean() for b in batches])
    return float(means.std(ddof=1) / np.sqrt(n_batches))


def poisson_chi_square(values, mean):
    """p-value of a chi-square test of ``values`` against Poisson(mean)."""
    top = int(poisson.ppf(0.995, mean))
    observed = np.bincount(np.minimum(values, top), minlength=top + 1)[: top + 1]
    probs = poisson.pmf(np.arange(top + 1), mean)
    probs[-1] = poisson.sf(top - 1, mean)
    expected = probs * len(values)
    return float(chi2.sf(np.sum((observed - expected) ** 2 / expected), top))


N_PRIOR, ALPHA_PRIOR = 6, 2.0


def prior_chain(solver, n_sweeps, seed=3):
    X = np.zeros((N_PRIOR, 0))
    _, ks = run_chain(solver, X, LinearGaussianFeatures(), GAUSSIAN_PARAMS, ALPHA_PRIOR,
                      n_sweeps=n_sweeps, seed=seed, thin=2, burn_in=100,
                      record=lambda s: s.n_features)
    return np.array(ks)


# Without data: K ~ Poisson(alpha H_N) = Poisson(4.9) (4.86 for n_auxiliary = 40, the
# approximation's own mean, 0.8% lower). 10 000 kept draws (thin 2). Over seeds 0-5
# (the test runs seed 3), z = (mean - expected) / batch-means SE and the Poisson p:
#   metropolis prior:        z in [-1.5, +2.0], p in [0.0048, 0.96] (seed 3: +2.0, 0.34)
#   metropolis data, rate 1: z in [-1.7, +0.7], p in [0.067, 0.89]  (seed 3: -0.04, 0.88)
#   approximate, K_hat 40:   z in [-1.4, +1.3], p in [0.15, 0.98]   (seed 3: -0.6, 0.98)
# Caught when broken: prior odds m/N instead of m/(N - m) gives z = -63 (metropolis) and
# -65 (approximate); dropping the count term (alpha/N / proposal_rate)^(K_new - K_own)
# from the ratio gives z = +152 (E[K] = 14.7).
@pytest.mark.parametrize(
    "solver",
    [MetropolisIBP(), MetropolisIBP(proposal="data", proposal_rate=1.0),
     ApproximateGibbsIBP(n_auxiliary=40)],
    ids=["metropolis-prior", "metropolis-data-rate1", "approximate-40"],
)
def test_prior_recovered_without_data(solver):
    ks = prior_chain(solver, 20_000)
    expected = ALPHA_PRIOR * harmonic_rate(N_PRIOR)
    if isinstance(solver, ApproximateGibbsIBP):
        K_hat = solver.n_auxiliary
        expected *= K_hat * N_PRIOR / (K_hat * N_PRIOR + ALPHA_PRIOR)  # 0.8% below
    se = batch_means_se(ks)
    assert abs(ks.mean() - expected) < 3 * se, (ks.mean(), expected, se)
    assert se < 0.03 * expected
    # Successive kept draws are correlated (about 0.3 at lag 2), so the chi-square
    # statistic is compared on every fifth draw.
    assert poisson_chi_square(ks[::5], expected) > 1e-3


# ApproximateGibbsIBP's own stationary mean without data, E[K] = alpha H_N K_hat N /
# (K_hat N + alpha): 4.20 for K_hat = 2 (the IBP's 4.90 is ~20 standard errors away, so
# the test tells the truncated model from the exact one), 4.59 for K_hat = 5 (enumerated
# subsets) and 4.82 for K_hat = 12 (Gibbs scans). For K_hat = 2 over seeds 0-5,
# z in [-1.8, +1.9]. Its K is not Poisson (new features arrive in Binomial batches):
# the Poisson chi-square gives p down to 0.003 at K_hat = 2, so only the mean is tested.
@pytest.mark.parametrize("n_auxiliary", [2, 5, 12])
def test_approximate_gibbs_stationary_mean_without_data(n_auxiliary):
    ks = prior_chain(ApproximateGibbsIBP(n_auxiliary=n_auxiliary), 20_000)
    exact = ALPHA_PRIOR * harmonic_rate(N_PRIOR)
    expected = exact * n_auxiliary * N_PRIOR / (n_auxiliary * N_PRIOR + ALPHA_PRIOR)
    se = batch_means_se(ks)
    assert abs(ks.mean() - expected) < 3 * se, (ks.mean(), expected, se)
    if n_auxiliary == 2:
        assert exact - ks.mean() > 8 * se


# Exponential-Gaussian features (non-negative; the block shapes are 0/1 and the noise is
# Gaussian, so X needs no shift) on 100 block images, sigma_x (from 1.0) and the rate
# resampled each sweep. The data-driven proposal with a proposal rate of 0.5 finds all
# four shapes (correlations 0.96-0.99) in 300 sweeps on 6 of 6 chain seeds (0-5); the
# prior proposal at the same rate on 3 of 3. With Görür's (2007) Poisson(alpha / N) count
# proposal (a new feature proposed once in 100 rows; data proposal, sigma_x fixed at 0.5)
# a chain kept one feature for 300 sweeps. Under 1 s.
def test_metropolis_recovers_block_images_with_exponential_features():
    X, _, A = make_block_images(n_samples=100, noise=0.5, random_state=0)
    X.setflags(write=False)
    likelihood = ExponentialGaussian()
    state, _ = run_chain(
        MetropolisIBP(proposal="data", proposal_rate=0.5), X, likelihood,
        {"sigma_x": 1.0, "rate": 1.0}, 1.0, n_sweeps=300, seed=0, resample_parameters=True,
    )
    C = np.corrcoef(np.vstack([A, state.active_A]))[:4, 4:]
    assert C.max(axis=1).min() > 0.9
    assert abs(state.params["sigma_x"] - 0.5) < 0.1


# -- kernels against plain NumPy ---------------------------------------------------------
def test_enumerated_subset_weights_match_brute_force():
    rng = np.random.default_rng(0)
    D, n_aux = 3, 4
    x, base = rng.normal(size=D), rng.normal(size=D)
    aux = rng.normal(size=(n_aux, D))
    observed = np.array([1, 0, 1], dtype=np.uint8)
    noise = np.vstack([np.full(D, 0.5), np.log(np.full(D, 0.5))])
    log_on, log_off = np.log(0.2), np.log(0.8)
    weights = np.empty(1 << n_aux)
    _enumerate_subsets(x, observed, base, aux, n_aux, log_on, log_off, 0, noise,
                       np.empty(D), weights, np.zeros(n_aux, dtype=np.int64))
    for mask in range(1 << n_aux):
        bits = np.array([(mask >> j) & 1 for j in range(n_aux)])
        pred = base + bits @ aux
        r = (x - pred)[observed == 1]
        lik = -0.5 * np.sum(np.log(2 * np.pi * 0.5) + r**2 / 0.5)
        assert np.isclose(lik, row_log_likelihood(0, x, observed, pred, noise))
        want = bits.sum() * log_on + (n_aux - bits.sum()) * log_off + lik
        assert np.isclose(weights[mask], want)


def test_compaction_and_prediction_match_numpy():
    rng = np.random.default_rng(1)
    Z = (rng.random((5, 8)) < 0.4).astype(np.int8)
    Z[:, [1, 4]] = 0
    A = rng.normal(size=(8, 3))
    counts = Z.sum(axis=0).astype(np.int64)
    keep = np.flatnonzero(counts > 0)
    want_Z, want_A = Z[:, keep].copy(), A[keep].copy()
    K = compact_features(Z, A, counts, 8)
    assert K == keep.size
    np.testing.assert_array_equal(Z[:, :K], want_Z)
    np.testing.assert_array_equal(A[:K], want_A)
    assert not Z[:, K:].any() and not counts[K:].any()
    pred = np.empty((5, 3))
    refresh_prediction(Z, A, K, pred)
    np.testing.assert_allclose(pred, want_Z @ want_A)


# -- reproducibility, inputs, parameters ---------------------------------------------------
@pytest.mark.parametrize(
    "solver",
    [MetropolisIBP(), MetropolisIBP(proposal="data", proposal_rate=0.5),
     ApproximateGibbsIBP(), ApproximateGibbsIBP(n_auxiliary=12)],
)
def test_same_seed_gives_identical_chains_and_inputs_are_untouched(solver):
    X, Z_true, _ = make_block_images(n_samples=20, noise=0.5, random_state=1)
    X.setflags(write=False)
    observed = np.ones(X.shape, dtype=np.uint8)
    observed[0, :5] = 0
    observed.setflags(write=False)
    Z0 = Z_true.astype(np.int8)
    A0 = np.abs(np.random.default_rng(2).normal(size=(4, 36)))
    Z0.setflags(write=False)
    A0.setflags(write=False)
    copies = [a.copy() for a in (X, observed, Z0, A0)]
    params = {"sigma_x": 0.5, "rate": 1.0}
    results = []
    for _ in range(2):
        rng = np.random.default_rng(7)
        likelihood = ExponentialGaussian()
        state = solver.initialize(X, observed, Z0, A0, 1.0, params, likelihood, rng)
        for _ in range(15):
            solver.sweep(state, likelihood, rng)
        results.append((state.active_Z.copy(), state.active_A.copy()))
        np.testing.assert_allclose(state.stats["pred"], state.active_Z @ state.active_A,
                                   atol=1e-12)
        assert np.isfinite(solver.log_joint(state, likelihood))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])
    for before, after in zip(copies, (X, observed, Z0, A0), strict=True):
        np.testing.assert_array_equal(before, after)
    assert params == {"sigma_x": 0.5, "rate": 1.0}


@pytest.mark.parametrize(
    "solver, match",
    [
        (MetropolisIBP(k_max=0), "k_max"),
        (MetropolisIBP(proposal="posterior"), "proposal"),
        (MetropolisIBP(proposal_rate=-1.0), "proposal_rate"),
        (ApproximateGibbsIBP(n_auxiliary=0), "n_auxiliary"),
        (ApproximateGibbsIBP(n_auxiliary=2.5), "n_auxiliary"),
    ],
)
def test_bad_parameters_are_refused(solver, match):
    X = np.zeros((4, 2))
    with pytest.raises(ValueError, match=match):
        solver.initialize(X, None, np.zeros((4, 0)), None, 1.0, GAUSSIAN_PARAMS,
                          LinearGaussianFeatures(), np.random.default_rng(0))


def test_bad_inputs_are_refused():
    solver, likelihood, rng = MetropolisIBP(), LinearGaussianFeatures(), None
    X = np.zeros((4, 2))
    with pytest.raises(ValueError, match="alpha"):
        solver.initialize(X, None, np.zeros((4, 0)), None, 0.0, GAUSSIAN_PARAMS, likelihood,
                          rng)
    with pytest.raises(ValueError, match="Z must be binary"):
        solver.initialize(X, None, np.full((4, 1), 2), np.zeros((1, 2)), 1.0,
                          GAUSSIAN_PARAMS, likelihood, rng)
    with pytest.raises(ValueError, match="A must have shape"):
        solver.initialize(X, None, np.ones((4, 1)), np.zeros((2, 2)), 1.0, GAUSSIAN_PARAMS,
                          likelihood, rng)
    with pytest.raises(ValueError, match="likelihood"):
        solver.initialize(X, None, np.zeros((4, 0)), None, 1.0, GAUSSIAN_PARAMS, object(),
                          rng)


@pytest.mark.parametrize("name", ["metropolis", "approximate_gibbs", "particle", "map_climb"])
@pytest.mark.parametrize("bad, match", [
    (dict(alpha=np.nan), "alpha must be a positive finite number"),
    (dict(alpha="one"), "alpha must be a positive finite number"),
    (dict(X=np.zeros(4)), "X must be a 2-d array"),
    (dict(observed=np.ones((3, 2))), "observed must have X's shape"),
    (dict(Z=np.zeros((3, 1))), r"Z must have shape \(4, n_features\)"),
    (dict(Z=np.full((4, 1), 2)), "Z must be binary"),
])
def test_explicit_solvers_share_input_checks(name, bad, match):
    """The explicit-feature solvers' ``initialize`` refuses the same bad inputs with the
    same messages (one check, ``check_explicit_inputs``), before touching the inputs."""
    from sklearn_ibp.solvers import EXPLICIT_SOLVERS

    args = dict(X=np.zeros((4, 2)), observed=None, Z=np.zeros((4, 1)), A=None, alpha=1.0)
    args.update(bad)
    with pytest.raises(ValueError, match=match):
        EXPLICIT_SOLVERS[name]().initialize(
            args["X"], args["observed"], args["Z"], args["A"], args["alpha"],
            GAUSSIAN_PARAMS, LinearGaussianFeatures(), np.random.default_rng(0))
