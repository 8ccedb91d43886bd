"""Parallel tempering around the explicit-feature samplers (Doshi-Velez 2009, sec. 3.1; Earl and
Deem, 2005).

* Every rung keeps its own tempered posterior: started from exact draws of
  ``p(X | Z, A)^b p(Z, A)`` at every rung (enumerated over ``[Z]``: with Gaussian noise the
  tempered model is the model at ``sigma_x / sqrt(b)`` up to a factor free of ``Z`` and
  ``A``), a few sweeps and exchange rounds leave each rung's class of ``Z`` an exact draw
  of its target (chi-square). This catches a wrong exchange ratio (cold rung) and a wrong
  tempering (hot rungs).
* The tempered likelihood is the power ``b`` of the base one, and its noise conditional
  is the one that power implies (against numerical integration of the base likelihood).
* An exchange moves a whole state (``Z``, ``A``, ``params``, ``alpha``, the sampler's own
  variables) and the swap counts are reported; one rung is the wrapped sampler draw for
  draw, also inside ``IBPFactorAnalysis``.
"""

import math

import numpy as np
import pytest
from scipy import integrate

from sklearn_ibp.estimators.factor_analysis import IBPFactorAnalysis
from sklearn_ibp.likelihoods import ExponentialGaussian, LeakyNoisyOr, LinearGaussianFeatures
from sklearn_ibp.solvers.ibp_explicit.metropolis import MetropolisIBP
from sklearn_ibp.solvers.ibp_explicit.semi_ordered_slice import SemiOrderedSliceIBP
from sklearn_ibp.solvers.ibp_explicit.tempering import TemperedLikelihood, TemperingIBP
from tests._enumeration import enumerate_posterior, history_key
from tests.solvers.test_exact_posterior import ALPHA, PROBLEMS, SIGMA_A, SIGMA_X, chi_square_against

GAUSSIAN = LinearGaussianFeatures()
PARAMS = {"sigma_x": SIGMA_X, "sigma_a": SIGMA_A}


def _z_of_key(key, n_rows):
    """A binary matrix whose column histories are ``key`` (first row the top bit)."""
    bits = np.arange(n_rows - 1, -1, -1)
    Z = (np.asarray(key, dtype=np.int64)[None, :] >> bits[:, None]) & 1
    return Z.astype(np.int8).reshape(n_rows, len(key))


def _four_rows():
    Z, _ = PROBLEMS["four_rows"]
    rng = np.random.default_rng(4)
    return Z @ np.array([[1.5, -1.0], [0.5, 1.5]]) + SIGMA_X * rng.normal(size=(4, 2))


def _start(solver, X, Z0, params=PARAMS, alpha=ALPHA, seed=0, likelihood=GAUSSIAN):
    rng = np.random.default_rng(seed)
    state = solver.initialize(X, np.ones(X.shape, np.uint8), Z0, None, alpha, params,
                              likelihood, rng)
    return state, rng


# -- every rung keeps its tempered posterior ---------------------------------------------

N_CHAINS, N_SWEEPS = 1000, 5
# Runs of this test at seeds 0-3 (four_rows, ladder b = 1, 0.32, 0.1, max_temperature 10),
# chi-square p-values of the rungs (cold, middle, hot) and z of the mean change of
# sum_t b_t L_t over the first exchange round:
#   seed 0: 0.89 0.48 0.56 z -0.46   seed 1: 0.65 0.92 0.19 z 0.22
#   seed 2: 0.36 0.62 0.40 z -0.04   seed 3: 0.12 0.50 0.66 z 0.14
# exchange acceptance about 0.10 (rungs 1-2) and 0.08 (rungs 2-3).
# Broken on purpose: exchanges always accepted, or with the ratio's sign flipped, fail
# the cold rung's chi-square (p ~ 0); hot rungs run untempered, or at sigma_x * sqrt(b)
# instead of sigma_x / sqrt(b), fail the middle rung's (p ~ 1e-60); the exchange ratio
# halved fails the middle rung's (p = 3e-8) and doubled fails the z-test (z = 5.2).


@pytest.fixture(scope="module")
def tempered_posteriors():
    X = _four_rows()
    solver = TemperingIBP(n_temperatures=3, max_temperature=10.0)
    posteriors = []
    for b in solver.inverse_temperatures():
        posterior, top_mass, _ = enumerate_posterior(X, ALPHA, SIGMA_X / math.sqrt(b),
                                                     SIGMA_A, 6)
        assert top_mass < 0.005
        posteriors.append(posterior)
    return X, solver, posteriors


def _log_likelihoods(solver, state):
    return np.array([GAUSSIAN.log_likelihood(r.X, r.observed, r.active_Z, r.active_A, r.params)
                     for r in solver.rung_states(state)])


def test_every_rung_keeps_its_tempered_posterior(tempered_posteriors):
    X, solver, posteriors = tempered_posteriors
    betas = solver.inverse_temperatures()
    N, observed = X.shape[0], np.ones(X.shape, np.uint8)
    rng = np.random.default_rng(0)
    starts = []
    for posterior in posteriors:
        keys = list(posterior)
        probs = np.array([posterior[k] for k in keys])
        starts.append([keys[i] for i in rng.choice(len(keys), size=N_CHAINS,
                                                     p=probs / probs.sum())])
    finals = [[] for _ in betas]
    attempts = accepts = 0
    change = []
    for c in range(N_CHAINS):
        state = None
        for t, b in enumerate(betas):
            # An exact draw of rung t: [Z] from the enumeration, A from p(A | X, Z)^b.
            Z0 = _z_of_key(starts[t][c], N)
            A0 = GAUSSIAN.sample_features(X, observed, Z0, None,
                                          {**PARAMS, "sigma_x": SIGMA_X / math.sqrt(b)}, rng)
            if state is None:
                state = solver.initialize(X, observed, Z0, A0, ALPHA, PARAMS, GAUSSIAN, rng)
            else:
                solver.reset_rung(state, t, Z0, A0, GAUSSIAN, rng)
        # One exchange round from the exact start: it keeps every rung's target, so the
        # b-weighted sum of the rungs' log-likelihoods (the log of the product target up
        # to the priors, which an exchange permutes) keeps its mean.
        before = _log_likelihoods(solver, state)
        solver._swap_round(state, state.stats["tempering"], GAUSSIAN, rng)
        change.append(betas @ (_log_likelihoods(solver, state) - before))
        for _ in range(N_SWEEPS):
            solver.sweep(state, GAUSSIAN, rng)
        for t, rung in enumerate(solver.rung_states(state)):
            finals[t].append(history_key(rung.active_Z))
        record = state.stats["tempering"]
        attempts, accepts = attempts + record.swap_attempts, accepts + record.swap_accepts
    for t, posterior in enumerate(posteriors):
        stat, dof, p_value, counts, expected = chi_square_against(posterior, finals[t])
        assert dof >= 8
        assert p_value > 1e-3, (t, stat, dof, counts, expected)
        top = max(posterior, key=posterior.get)
        assert abs(np.mean([k == top for k in finals[t]]) - posterior[top]) < 0.05, t
    assert np.all(attempts == N_CHAINS * (N_SWEEPS + 1))
    rates = accepts / attempts
    assert np.all((rates > 0.02) & (rates < 0.5)), rates
    change = np.asarray(change)
    z = change.mean() / (change.std() / np.sqrt(N_CHAINS))
    assert abs(z) < 4.0, z


# -- the tempered likelihood ---------------------------------------------------------------


@pytest.mark.parametrize("likelihood", [GAUSSIAN, ExponentialGaussian()], ids=lambda x: x.name)
def test_tempered_likelihood_is_the_power_of_the_base(likelihood):
    """``b`` times the base log-likelihood, and the kernels' noise array is the base one at
    ``sigma_x / sqrt(b)``: the two differ by a constant in ``Z`` and ``A``."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6, 3))
    observed = (rng.random((6, 3)) < 0.8).astype(np.uint8)
    params = {**likelihood.initial_parameters(X, observed), "sigma_x": 0.7}
    b = 0.3
    tempered = TemperedLikelihood(likelihood, b)
    assert tempered.name == likelihood.name
    flat = {**params, "sigma_x": 0.7 / math.sqrt(b)}
    differences = []
    for _ in range(4):
        Z = (rng.random((6, 2)) < 0.5).astype(np.int8)
        A = np.abs(rng.normal(size=(2, 3)))
        powered = tempered.row_log_likelihood(X, observed, Z, A, params)
        np.testing.assert_allclose(
            powered, b * likelihood.row_log_likelihood(X, observed, Z, A, params))
        differences.append(powered - likelihood.row_log_likelihood(X, observed, Z, A, flat))
    np.testing.assert_allclose(differences, np.broadcast_to(differences[0], (4, 6)),
                               atol=1e-10)
    np.testing.assert_array_equal(tempered.noise_array(params, 3),
                                  likelihood.noise_array(flat, 3))
    np.testing.assert_array_equal(tempered.prior_array(params), likelihood.prior_array(params))


@pytest.mark.parametrize("b", [1.0, 0.3])
def test_noise_conditional_against_integration(b):
    """``sigma_x``'s tempered conditional, ``p(X | Z, A, sigma_x)^b p(sigma_x)`` with the
    Gamma(1, 1) prior on the precision, by numerical integration of the base likelihood.
    ``b = 1`` (the base model's own update) checks that prior; ``b = 0.3`` the tempered
    update (it fails if the draw ignores ``b``: the conditional is then ~1.8 times
    narrower)."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(5, 4))
    observed = np.ones(X.shape, np.uint8)
    Z = np.array([[1], [0], [1], [1], [0]], dtype=np.int8)
    A = rng.normal(size=(1, 4))

    def log_target(tau):  # precision tau = 1 / sigma_x^2; Gamma(1, 1) prior e^-tau
        p = {**PARAMS, "sigma_x": 1.0 / math.sqrt(tau)}
        return b * GAUSSIAN.log_likelihood(X, observed, Z, A, p) - tau

    shift = max(log_target(t) for t in np.geomspace(0.01, 50.0, 400))

    def density(t):
        return math.exp(log_target(t) - shift)

    total = integrate.quad(density, 0.0, 60.0, limit=200)[0]
    likelihood = GAUSSIAN if b == 1.0 else TemperedLikelihood(GAUSSIAN, b)
    draws = np.array([
        likelihood.sample_parameters(X, observed, Z, A, PARAMS, rng)["sigma_x"] ** -2
        for _ in range(3000)
    ])

    def cdf(x):
        return np.array([integrate.quad(density, 0.0, v, limit=200)[0] / total
                         for v in np.atleast_1d(x)])

    grid = np.quantile(draws, np.linspace(0.02, 0.98, 25))
    empirical = np.searchsorted(np.sort(draws), grid, side="right") / draws.size
    # 3000 draws: the empirical CDF's sd is at most 0.009; 0.035 is almost 4 of them.
    assert np.max(np.abs(cdf(grid) - empirical)) < 0.035


def test_binary_likelihoods_refused():
    with pytest.raises(ValueError, match="likelihood must be one of the Gaussian-noise"):
        TemperedLikelihood(LeakyNoisyOr(), 0.5)
    X = np.eye(4)
    with pytest.raises(ValueError, match="likelihood"):
        _start(TemperingIBP(n_temperatures=2), X, np.zeros((4, 0)),
               params={"epsilon": 0.9, "lambda": 0.5, "p_a": 0.3}, likelihood=LeakyNoisyOr())
    with pytest.raises(ValueError, match="inverse_temperature"):
        TemperedLikelihood(GAUSSIAN, 1.5)


# -- exchanges, the record, one rung ------------------------------------------------------


def test_exchange_moves_whole_states_and_is_counted():
    """Rungs given distinct ``alpha`` and ``sigma_x``: after exchange rounds (some
    accepted, some not) every rung still holds one of the original (Z, A, params, alpha,
    sampler variables) tuples intact, the record stays with the cold state, and the
    counts add up."""
    X = _four_rows()
    solver = TemperingIBP(solver=SemiOrderedSliceIBP(), n_temperatures=4,
                               max_temperature=3.0)
    Z0 = np.array([[1, 0], [1, 1], [0, 1], [1, 1]])
    state, rng = _start(solver, X, Z0)
    rungs = solver.rung_states(state)
    for t, rung in enumerate(rungs):
        rung.alpha = 0.5 + t
        rung.params = {**PARAMS, "sigma_x": SIGMA_X * (1.0 + 0.05 * t)}
    tags = {id(r.Z): (id(r.A), id(r.stats), r.alpha, r.params["sigma_x"]) for r in rungs}
    record = state.stats["tempering"]
    for _ in range(200):
        solver._swap_round(state, record, GAUSSIAN, rng)
    after = solver.rung_states(state)
    assert after[0] is state and "tempering" in state.stats
    assert sum("tempering" in r.stats for r in after) == 1
    for rung in after:
        assert tags[id(rung.Z)] == (id(rung.A), id(rung.stats), rung.alpha,
                                    rung.params["sigma_x"])
    assert np.all(record.swap_attempts == 200)
    rates = solver.swap_acceptance(state)
    assert np.all((rates > 0.0) & (rates < 1.0)), rates
    # The moved states are still valid states of the wrapped sampler.
    for _ in range(3):
        solver.sweep(state, GAUSSIAN, rng)


def test_swap_every_and_acceptance_reported():
    X = _four_rows()
    solver = TemperingIBP(n_temperatures=4, swap_every=3)
    state, rng = _start(solver, X, np.zeros((4, 0)))
    assert np.all(np.isnan(solver.swap_acceptance(state)))
    for _ in range(10):
        solver.sweep(state, GAUSSIAN, rng)
    record = state.stats["tempering"]
    assert record.n_sweeps == 10 and np.all(record.swap_attempts == 3)
    assert solver.swap_acceptance(state).shape == (3,)
    np.testing.assert_allclose(solver.inverse_temperatures(), 10.0 ** -(np.arange(4) / 3))


@pytest.mark.parametrize("sample_hyper", [False, True])
def test_one_rung_is_the_wrapped_sampler(sample_hyper):
    """``n_temperatures=1``: the same draws as the wrapped sampler, bit for bit
    (sweeps, the likelihood's parameters, alpha)."""
    X = _four_rows()
    Z0 = np.zeros((4, 0))
    plain, wrapped = MetropolisIBP(proposal="data"), TemperingIBP(
        solver=MetropolisIBP(proposal="data"), n_temperatures=1)
    a, rng_a = _start(plain, X, Z0, seed=3)
    b, rng_b = _start(wrapped, X, Z0, seed=3)
    for _ in range(40):
        plain.sweep(a, GAUSSIAN, rng_a)
        wrapped.sweep(b, GAUSSIAN, rng_b)
        if sample_hyper:
            a.params = GAUSSIAN.sample_parameters(a.X, a.observed, a.active_Z, a.active_A,
                                                  a.params, rng_a)
            wrapped.sample_parameters(b, GAUSSIAN, rng_b)
            plain.sample_alpha(a, rng_a)
            wrapped.sample_alpha(b, rng_b)
        np.testing.assert_array_equal(a.active_Z, b.active_Z)
        np.testing.assert_array_equal(a.active_A, b.active_A)
        assert a.params == b.params and a.alpha == b.alpha
    assert plain.log_joint(a, GAUSSIAN) == wrapped.log_joint(b, GAUSSIAN)


def test_one_rung_in_the_estimator():
    """Inside ``IBPFactorAnalysis`` (hyperparameters sampled through the wrapper's
    ``sample_parameters``), one rung reproduces the wrapped solver's fit."""
    X = np.random.default_rng(0).normal(size=(12, 4))
    kw = dict(n_iter=15, burn_in=5, random_state=0, sample_hyperparameters=True)
    plain = IBPFactorAnalysis(solver=MetropolisIBP(), **kw).fit(X)
    wrapped = IBPFactorAnalysis(solver=TemperingIBP(n_temperatures=1), **kw).fit(X)
    np.testing.assert_array_equal(plain.Z_, wrapped.Z_)
    assert plain.alpha_ == wrapped.alpha_ and plain.sigma_x_ == wrapped.sigma_x_
    # and with hot rungs the estimator runs unchanged, its state the cold rung's
    tempered = IBPFactorAnalysis(solver=TemperingIBP(n_temperatures=3), **kw).fit(X)
    assert tempered.Z_.shape[0] == 12


def test_hot_rungs_sample_their_own_hyperparameters():
    X = _four_rows()
    solver = TemperingIBP(n_temperatures=3)
    state, rng = _start(solver, X, np.array([[1], [1], [0], [1]]))
    for _ in range(5):
        solver.sweep(state, GAUSSIAN, rng)
        solver.sample_parameters(state, GAUSSIAN, rng)
        solver.sample_alpha(state, rng, (1.0, 1.0))
    rungs = solver.rung_states(state)
    assert len({r.params["sigma_x"] for r in rungs}) == 3
    assert len({r.alpha for r in rungs}) == 3


# -- reproducibility and refused input --------------------------------------------------


def test_reproducible_and_inputs_untouched():
    X = _four_rows()
    X.setflags(write=False)
    Z0 = np.array([[1], [1], [0], [1]], dtype=np.int8)
    Z0.setflags(write=False)
    runs = []
    for _ in range(2):
        solver = TemperingIBP(n_temperatures=3)
        state, rng = _start(solver, X, Z0, seed=7)
        for _ in range(20):
            solver.sweep(state, GAUSSIAN, rng)
            solver.sample_parameters(state, GAUSSIAN, rng)
            solver.sample_alpha(state, rng)
        runs.append([(r.active_Z.copy(), r.active_A.copy(), r.alpha, dict(r.params))
                     for r in solver.rung_states(state)])
    for (Za, Aa, al_a, pa), (Zb, Ab, al_b, pb) in zip(*runs, strict=True):
        np.testing.assert_array_equal(Za, Zb)
        np.testing.assert_array_equal(Aa, Ab)
        assert al_a == al_b and pa == pb
    np.testing.assert_array_equal(X, _four_rows())


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(n_temperatures=0), "n_temperatures"),
        (dict(n_temperatures=2.5), "n_temperatures"),
        (dict(max_temperature=1.0), "max_temperature"),
        (dict(max_temperature=0.5), "max_temperature"),
        (dict(swap_every=0), "swap_every"),
        (dict(temperatures=[2.0, 3.0]), "temperatures"),
        (dict(temperatures=[1.0, 3.0, 3.0]), "temperatures"),
        (dict(temperatures=[1.0, np.inf]), "temperatures"),
        (dict(temperatures=[[1.0, 2.0]]), "temperatures"),
        (dict(solver="nonexistent"), "solver"),
        (dict(solver="map_climb"), "solver"),
        (dict(solver=MetropolisIBP), "solver"),
        (dict(solver=TemperingIBP()), "solver"),
        (dict(solver=object()), "solver"),
    ],
)
def test_bad_parameters_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        _start(TemperingIBP(**kwargs), _four_rows(), np.zeros((4, 0)))


def test_explicit_ladder_and_bad_state():
    solver = TemperingIBP(temperatures=[1.0, 2.0, 8.0], n_temperatures=7)
    np.testing.assert_allclose(solver.inverse_temperatures(), [1.0, 0.5, 0.125])
    state, rng = _start(solver, _four_rows(), np.zeros((4, 0)))
    assert len(solver.rung_states(state)) == 3
    with pytest.raises(ValueError, match="rung"):
        solver.reset_rung(state, 3, np.zeros((4, 0)), None, GAUSSIAN, rng)
    plain_state, _ = _start(MetropolisIBP(), _four_rows(), np.zeros((4, 0)))
    with pytest.raises(ValueError, match="TemperingIBP.initialize"):
        solver.sweep(plain_state, GAUSSIAN, rng)
    assert TemperingIBP(solver="truncated_gibbs").exact is False
    assert TemperingIBP().exact is True
