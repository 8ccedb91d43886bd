"""The deterministic climb to a posterior mode (``MapClimbIBP``, Doshi-Velez 2009, sec. 4.5).

The climb is an optimiser, not a sampler, so its correctness checks are those of an
optimiser: the objective (``ExplicitFeatureSolver.log_joint``) never decreases, the end
point is a local maximum against every single move, checked by brute force, and on a
tiny problem it is among the most probable patterns of the enumerated posterior.
"""

import numpy as np
import pytest
from scipy.optimize import minimize

from sklearn_ibp.datasets import make_block_images
from sklearn_ibp.likelihoods import ExponentialGaussian, LeakyNoisyOr, LinearGaussianFeatures
from sklearn_ibp.priors.ibp import harmonic_rate, sample_ibp
from sklearn_ibp.solvers import MapClimbIBP
from tests._enumeration import enumerate_posterior, history_key

LIKELIHOODS = {
    "gaussian": (LinearGaussianFeatures(), {"sigma_x": 0.5, "sigma_a": 1.0}),
    "exponential": (ExponentialGaussian(), {"sigma_x": 0.5, "rate": 1.0}),
    "noisy_or": (LeakyNoisyOr(), {"epsilon": 0.9, "lambda": 0.2, "p_a": 0.4}),
}


def _problem(name, N, D, K, seed, missing=0.0):
    """Data drawn from the model with ``K`` features; ``observed`` with a fraction missing."""
    lik, params = LIKELIHOODS[name]
    rng = np.random.default_rng(seed)
    Z = (rng.random((N, K)) < 0.5).astype(np.int8)
    A = lik.sample_prior_features(K, D, params, rng)
    X = lik.sample_data(Z, A, params, rng)
    observed = (rng.random((N, D)) >= missing).astype(np.uint8)
    return lik, params, X, observed


def _climb(solver, lik, params, X, observed, seed, n_sweeps, Z0=None, alpha=1.0):
    rng = np.random.default_rng(seed)
    N = X.shape[0]
    if Z0 is None:
        Z0 = sample_ibp(N, alpha, random_state=rng)
    # The estimator's start: A drawn from its conditional given the starting Z.
    obs = np.ones(X.shape, dtype=np.uint8) if observed is None else observed
    A0 = lik.sample_prior_features(Z0.shape[1], X.shape[1], params, rng)
    A0 = lik.sample_features(X, obs, Z0, A0, params, rng)
    state = solver.initialize(X, observed, Z0, A0, alpha, params, lik, rng)
    values = [solver.log_joint(state, lik)]
    for _ in range(n_sweeps):
        solver.sweep(state, lik, rng)
        values.append(solver.log_joint(state, lik))
    return state, np.array(values)


# -- monotone ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(LIKELIHOODS))
@pytest.mark.parametrize("birth", ["singleton", "shared"])
def test_log_joint_never_decreases(name, birth):
    for seed in range(3):
        missing = 0.2 if seed == 2 else 0.0
        lik, params, X, observed = _problem(name, N=25, D=10, K=3, seed=seed,
                                            missing=missing)
        _, values = _climb(MapClimbIBP(birth=birth), lik, params, X, observed, seed, 8)
        steps = np.diff(values)
        assert np.all(steps >= -1e-9 * np.abs(values[:-1])), (seed, steps.min())
        assert values[-1] > values[0]  # it climbs


@pytest.mark.parametrize("name", list(LIKELIHOODS))
def test_log_joint_never_decreases_among_identical_columns(name):
    """Three rows and twelve starting features: many columns are identical, so the
    multiplicity term ``- sum_h log K_h!`` of eq. 2.1 changes with most flips; the end
    point is also checked against every single move."""
    lik, params = LIKELIHOODS[name]
    for seed in range(6):
        rng = np.random.default_rng(seed)
        _, _, X, observed = _problem(name, N=3, D=2, K=2, seed=seed)
        Z0 = (rng.random((3, 12)) < 0.6).astype(np.int8)
        Z0[0, ~Z0.any(axis=0)] = 1
        solver = MapClimbIBP()
        state, values = _climb(solver, lik, params, X, observed, seed, 300, Z0=Z0, alpha=3.0)
        steps = np.diff(values)
        assert np.all(steps >= -1e-9 * np.abs(values[:-1])), (seed, steps.min())
        _single_moves_do_not_improve(solver, state, lik)


def test_alpha_and_parameters_at_their_conditional_modes():
    lik, params, X, observed = _problem("gaussian", N=20, D=6, K=3, seed=0)
    solver = MapClimbIBP()
    state, _ = _climb(solver, lik, params, X, observed, 0, 4)
    K, N = state.n_features, X.shape[0]
    # alpha: the mode of Gamma(2 + K, 3 + H_N) beats a grid around it.
    solver.sample_alpha(state, None, (2.0, 3.0))
    rate = 3.0 + harmonic_rate(N)
    assert state.alpha == pytest.approx((1.0 + K) / rate)
    grid = state.alpha * np.linspace(0.5, 1.5, 101)
    log_density = (1.0 + K) * np.log(grid) - rate * grid
    assert np.argmax(log_density) == 50
    # sigma_x: the precision at the mode of its conditional (Gamma(1, 1) prior).
    new = solver.mode_parameters(state, lik)
    resid = X - state.active_Z @ state.active_A
    precision = 1.0 / new["sigma_x"] ** 2
    grid = precision * np.linspace(0.8, 1.2, 101)
    log_density = 0.5 * X.size * np.log(grid) - grid * (1.0 + 0.5 * np.sum(resid**2))
    assert np.argmax(log_density) == 50
    assert state.params is new
    # "fixed" leaves the parameters alone; "mode" moves them.
    before = dict(state.params)
    MapClimbIBP(parameters="fixed").sample_parameters(state, lik, None)
    assert state.params == before
    state.params = {"sigma_x": 2.0, "sigma_a": 3.0}
    MapClimbIBP(parameters="mode").sample_parameters(state, lik, None)
    assert state.params["sigma_x"] == pytest.approx(new["sigma_x"])


def test_noisy_or_parameter_modes_raise_their_conditional():
    lik, params, X, observed = _problem("noisy_or", N=30, D=8, K=3, seed=1)
    solver = MapClimbIBP()
    state, _ = _climb(solver, lik, params, X, observed, 1, 5)
    state.params = {"epsilon": 0.6, "lambda": 0.5, "p_a": 0.4}
    before = solver.log_joint(state, lik)  # flat Beta priors: the log joint is the target
    solver.mode_parameters(state, lik)
    after = solver.log_joint(state, lik)
    assert after > before
    for name in ("epsilon", "lambda", "p_a"):
        for step in (-1e-3, 1e-3):
            moved = dict(state.params)
            moved[name] += step
            state_params, state.params = state.params, moved
            assert solver.log_joint(state, lik) <= after + 1e-9
            state.params = state_params


# -- a fixed point -------------------------------------------------------------------------
def _single_moves_do_not_improve(solver, state, lik):
    """Brute force over every single move: flips of ``z_nk`` (an emptied column dropped),
    a new feature of one row at its best values, and one coordinate of ``A``."""
    Z, A = state.active_Z.copy(), state.active_A.copy()
    current = solver.log_joint(state, lik)
    tol = 1e-7 * abs(current)

    def value(Z_new, A_new):
        keep = Z_new.any(axis=0)
        trial = solver.initialize(state.X, state.observed, Z_new[:, keep], A_new[keep],
                                  state.alpha, state.params, lik, None)
        return solver.log_joint(trial, lik)

    N, K = Z.shape
    D = A.shape[1]
    for n in range(N):
        for k in range(K):
            Z_new = Z.copy()
            Z_new[n, k] = 1 - Z_new[n, k]
            assert value(Z_new, A) <= current + tol, ("flip", n, k)
        # A new feature of row n alone, its values maximised here independently.
        Z_new = np.hstack([Z, np.eye(N, 1, -n, dtype=np.int8)])
        if lik.name == "noisy_or":
            grid = ((np.arange(2**D)[:, None] >> np.arange(D)) & 1).astype(float)
            best = max(value(Z_new, np.vstack([A, a])) for a in grid)
        else:
            bounds = [(0.0, None)] * D if lik.name == "exponential" else None
            found = minimize(lambda a, Z_new=Z_new: -value(Z_new, np.vstack([A, a])),
                             np.full(D, 0.1), bounds=bounds, method="L-BFGS-B")
            best = -found.fun
        assert best <= current + tol, ("new feature", n)
    for k in range(K):
        for d in range(D):
            if lik.name == "noisy_or":
                steps = [1.0 - 2.0 * A[k, d]]
            else:
                steps = [-1e-3, 1e-3]
            for step in steps:
                A_new = A.copy()
                A_new[k, d] += step
                if lik.name == "exponential" and A_new[k, d] < 0.0:
                    continue
                assert value(Z, A_new) <= current + tol, ("A", k, d)


@pytest.mark.parametrize("name", list(LIKELIHOODS))
def test_climb_ends_at_a_point_no_single_move_improves(name):
    lik, params, X, observed = _problem(name, N=6, D=4, K=2, seed=3)
    solver = MapClimbIBP()
    state, values = _climb(solver, lik, params, X, observed, 0, 80)
    assert values[-1] - values[-2] < 1e-8  # converged
    _single_moves_do_not_improve(solver, state, lik)


def _profile_order(posterior, log_z, X, sigma_x, sigma_a):
    """The classes of ``posterior`` sorted by the climb's objective maximised over ``A``,
    ``max_A log p(X, [Z], A)``. For the linear-Gaussian model it is the log posterior of
    ``[Z]`` (``A`` integrated out) plus ``D/2 log|Z'Z + s_x^2/s_a^2 I| - K D log s_x -
    K D/2 log 2 pi``: the maximum over ``A`` of ``p(X, A | Z)`` against its integral."""
    N, D = X.shape
    ratio = sigma_x**2 / sigma_a**2
    values = {}
    for key, prob in posterior.items():
        K = len(key)
        Z = ((np.array(key, dtype=np.int64)[None, :] >> np.arange(N - 1, -1, -1)[:, None])
             & 1).astype(float).reshape(N, K)
        logdet = np.linalg.slogdet(Z.T @ Z + ratio * np.eye(K))[1] if K else 0.0
        values[key] = (np.log(prob) + log_z + 0.5 * D * logdet
                       - K * D * np.log(sigma_x) - 0.5 * K * D * np.log(2 * np.pi))
    return sorted(values, key=values.get, reverse=True), values


def test_climb_finds_the_top_patterns_of_the_enumerated_posterior():
    """Tiny linear-Gaussian problems (N = 4; every class of up to four features
    enumerated): from an empty start, the climb's final class ranks first or second among
    the classes by the climb's objective maximised over ``A`` in most seeds (6 of 8
    measured; a greedy climb can stop at a poorer local maximum). Its rank in the exact posterior
    of ``[Z]`` (``A`` integrated out) is printed for the report, not asserted: the joint
    mode over ``(Z, A)`` and the mode of ``[Z]`` alone differ (a point ``A`` pays its prior
    density, an integrated one its volume)."""
    sigma_x, sigma_a, alpha = 0.4, 1.0, 1.0
    lik = LinearGaussianFeatures()
    params = {"sigma_x": sigma_x, "sigma_a": sigma_a}
    solver = MapClimbIBP()
    profile, marginal = [], []
    for seed in range(8):
        rng = np.random.default_rng(100 + seed)
        Z = np.array([[1, 0], [0, 1], [1, 1], [1, 0]], dtype=np.int8)
        A = sigma_a * rng.standard_normal((2, 5))
        X = Z @ A + sigma_x * rng.standard_normal((4, 5))
        posterior, _, log_z = enumerate_posterior(X, alpha, sigma_x, sigma_a, max_features=4)
        state, values = _climb(solver, lik, params, X, None, seed, 20, Z0=np.zeros((4, 0)),
                               alpha=alpha)
        key = history_key(state.active_Z)
        order, profile_values = _profile_order(posterior, log_z, X, sigma_x, sigma_a)
        # The enumeration and the climb agree on the objective of the final class.
        assert profile_values[key] == pytest.approx(values[-1], rel=1e-9)
        profile.append(order.index(key))
        marginal.append(sorted(posterior, key=posterior.get, reverse=True).index(key))
    print("map climb ranks: by max_A log joint", profile, "; by p([Z] | X)", marginal)
    assert sum(r < 2 for r in profile) >= 5, (profile, marginal)


# -- recovery ------------------------------------------------------------------------------
def _best_corr(true, fitted):
    with np.errstate(all="ignore"):
        c = np.corrcoef(np.vstack([true, fitted]))[: len(true), len(true):]
    return np.nan_to_num(c).max(axis=1)


@pytest.mark.parametrize("name", list(LIKELIHOODS))
def test_block_images_recovered(name):
    """The four shapes (correlation > 0.9) from a prior start in ten sweeps. The
    non-negative and binary features (shared births) from one chain; the Gaussian ones,
    whose climb stalls at a mixture of shapes more often, from the best (highest log
    joint) of ten starts, the usual remedy of a greedy climb."""
    lik, params = LIKELIHOODS[name]
    params = dict(params, **({"epsilon": 0.95, "lambda": 0.1, "p_a": 0.5}
                             if name == "noisy_or" else {}))
    n_chains = 10 if name == "gaussian" else 1
    found = []
    for seed in range(4):
        X, Z_true, A_true = make_block_images(n_samples=200, random_state=seed)
        if name == "noisy_or":
            X = lik.sample_data(Z_true, A_true, params, np.random.default_rng(seed))
        best = None
        for chain in range(n_chains):
            state, values = _climb(MapClimbIBP(), lik, params, X, None, [seed, chain], 10)
            if best is None or values[-1] > best[0]:
                best = (values[-1], state)
        found.append(_best_corr(A_true, best[1].active_A).min())
    assert sum(c > 0.9 for c in found) >= 3, found


# -- determinism and validation ------------------------------------------------------------
@pytest.mark.parametrize("name", list(LIKELIHOODS))
def test_deterministic_given_the_rng_and_inputs_untouched(name):
    lik, params, X, observed = _problem(name, N=20, D=6, K=3, seed=4, missing=0.1)
    X_copy, observed_copy = X.copy(), observed.copy()
    Z0 = sample_ibp(20, 1.0, random_state=0).astype(np.int8)
    Z0_copy = Z0.copy()
    runs = []
    for _ in range(2):
        state, values = _climb(MapClimbIBP(), lik, params, X, observed, 7, 4, Z0=Z0)
        runs.append((state.active_Z.copy(), state.active_A.copy(), values))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])
    np.testing.assert_array_equal(runs[0][2], runs[1][2])
    np.testing.assert_array_equal(X, X_copy)
    np.testing.assert_array_equal(observed, observed_copy)
    np.testing.assert_array_equal(Z0, Z0_copy)
    assert MapClimbIBP.exact is False and MapClimbIBP.name == "map_climb"


def test_parameter_validation():
    lik, params, X, observed = _problem("gaussian", N=8, D=3, K=2, seed=0)
    rng = np.random.default_rng(0)
    Z = np.ones((8, 1))
    for bad in (MapClimbIBP(birth="all"), MapClimbIBP(parameters="sample"),
                MapClimbIBP(capacity=0)):
        with pytest.raises(ValueError):
            bad.initialize(X, observed, Z, None, 1.0, params, lik, rng)
    solver = MapClimbIBP()
    with pytest.raises(ValueError, match="alpha"):
        solver.initialize(X, observed, Z, None, 0.0, params, lik, rng)
    with pytest.raises(ValueError, match="Z must"):
        solver.initialize(X, observed, 2 * Z, None, 1.0, params, lik, rng)
    with pytest.raises(ValueError, match="A must"):
        solver.initialize(X, observed, Z, np.ones((2, 3)), 1.0, params, lik, rng)
    with pytest.raises(ValueError, match="observed"):
        solver.initialize(X, observed[:, :2], Z, None, 1.0, params, lik, rng)
    with pytest.raises(ValueError, match="params"):
        solver.initialize(X, observed, Z, None, 1.0, {"sigma_x": 1.0}, lik, rng)
    with pytest.raises(ValueError, match="likelihood"):
        solver.initialize(X, observed, Z, None, 1.0, params, object(), rng)
    state = solver.initialize(X, observed, Z, None, 1.0, params, lik, rng)
    with pytest.raises(ValueError, match="likelihood"):
        solver.sweep(state, object(), rng)
    alien = MapClimbIBP().initialize(X, observed, Z, None, 1.0, params, lik, rng)
    alien.stats.clear()
    with pytest.raises(ValueError, match="state"):
        solver.sweep(alien, lik, rng)
