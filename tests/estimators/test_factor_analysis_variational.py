"""IBPFactorAnalysis with the variational solvers (Doshi-Velez 2009, ch. 6): the estimator's fitted
record, transform by the variational E-step, held-out scores, missing entries, refusals.
The solvers' own correctness is in tests/solvers/variational/test_variational.py."""

import numpy as np
import pytest

from sklearn_ibp import IBPFactorAnalysis
from sklearn_ibp.datasets import make_block_images, make_ibp_linear_gaussian
from sklearn_ibp.solvers import FiniteVariationalIBP, VariationalIBP


@pytest.fixture(scope="module")
def blocks():
    X, _, A = make_block_images(n_samples=300, noise=0.5, random_state=0)
    return X[:200], X[200:], A


@pytest.mark.parametrize("solver", ["variational", "finite_variational"])
def test_finds_the_shapes_and_scores_held_out_rows(blocks, solver):
    """Scratch runs (random_state 0-2) with the defaults: finite_variational found every
    shape (correlations 0.983-0.988) on each seed; variational on seeds 0 and 2
    (0.94-0.99), while on seed 1 two shapes stayed at 0.74-0.77 (a local optimum its
    five restarts did not leave). Held-out mean log density per row: finite -29.05,
    variational -29.3 to -30.1, accelerated Gibbs (200 sweeps) -29.1 to -29.9."""
    X, X_test, A = blocks
    model = IBPFactorAnalysis(solver=solver, random_state=0).fit(X)
    corr = np.abs(np.corrcoef(A, model.components_)[:4, 4:]).max(axis=1)
    assert np.all(corr > 0.9), corr
    assert model.converged_ and model.n_iter_ == model.elbo_trace_.size
    assert model.elbo_ == model.elbo_trace_[-1]
    assert np.all(np.diff(model.elbo_time_) > 0)
    assert model.traces_["log_joint"].shape == (1, model.n_iter_)
    assert np.all(model.mean_ == 0)  # the variational solvers model the data as given
    score = model.score(X_test)
    assert np.isfinite(score) and score > -31.0, score
    T = model.transform(X_test)
    assert T.shape == (X_test.shape[0], model.n_components_)
    assert np.all((T >= 0) & (T <= 1))


def test_elbo_rises_monotonically_after_tempering(blocks):
    X, _, _ = blocks
    solver = VariationalIBP(max_features=8, n_init=2, tempering_iter=10, tol=0.0,
                            max_iter=40)
    model = IBPFactorAnalysis(solver=solver, random_state=1).fit(X)
    after = model.elbo_trace_[10:]
    assert np.all(np.diff(after) / np.abs(after[:-1]) >= -1e-8)


def test_transform_is_the_e_step_row_by_row_with_missing_entries(blocks):
    X, X_test, _ = blocks
    model = IBPFactorAnalysis(solver=FiniteVariationalIBP(max_features=6), random_state=0)
    model.fit(X)
    rows = X_test[:6].copy()
    rows[1, :5] = np.nan
    T = model.transform(rows)
    np.testing.assert_array_equal(T[2:4], model.transform(rows[2:4]))
    # Missing entries are left out of the E-step, not read as zeros.
    filled = rows.copy()
    filled[1, :5] = 0.0
    assert not np.allclose(T[1], model.transform(filled)[1])
    assert np.all(np.isfinite(model.score_samples(rows)))


def test_fit_with_missing_entries_and_reproducibility(blocks):
    X, _, _ = blocks
    X = X[:80].copy()
    X[np.random.default_rng(0).random(X.shape) < 0.1] = np.nan
    original = X.copy()
    a = IBPFactorAnalysis(solver="variational", random_state=3).fit(X)
    b = IBPFactorAnalysis(solver="variational", random_state=3).fit(X)
    np.testing.assert_array_equal(X, original)
    np.testing.assert_array_equal(a.components_, b.components_)
    np.testing.assert_array_equal(a.elbo_trace_, b.elbo_trace_)
    assert np.all(np.isfinite(a.components_))


@pytest.mark.parametrize(
    ("params", "match"),
    [({"solver": "variational", "likelihood": "exponential"},
      r"solver='variational' cannot serve likelihood='exponential'"),
     ({"solver": "finite_variational", "beta": 2.0}, "beta=2.0"),
     ({"solver": VariationalIBP(bound="foo")}, "bound")],
)
def test_refusals(blocks, params, match):
    X, _, _ = blocks
    with pytest.raises(ValueError, match=match):
        IBPFactorAnalysis(**params).fit(X[:20])


@pytest.mark.parametrize("solver", ["variational", "finite_variational"])
def test_elbo_monotone_with_the_default_hyperparameter_updates(solver):
    """The estimator's ELBO trace with its defaults (alpha, sigma_x and sigma_a at their
    ELBO-maximising values every iteration) on three seeds, missing entries in one."""
    for seed in range(3):
        X, _, _ = make_block_images(n_samples=60, noise=0.5, random_state=seed)
        if seed == 2:
            X[np.random.default_rng(seed).random(X.shape) < 0.1] = np.nan
        model = IBPFactorAnalysis(solver=solver, random_state=seed).fit(X)
        trace = model.elbo_trace_
        assert np.all(np.diff(trace) / np.abs(trace[:-1]) >= -1e-8), seed
        assert model.sigma_x_ == model.likelihood_params_["sigma_x"]
        assert model.traces_["sigma_x"][0, -1] == model.sigma_x_


def test_tempering_and_the_defaults_find_the_block_images():
    """Sec. 6.5's tempering on block images (N = 200, random_state 0). Before issue 24
    the defaults ended in a local optimum with one shape above 0.9 and ten tempered
    iterations (sigma_x^2 and sigma_a^2 from ten times their values) found all four
    (scratch runs over twelve data seeds: 7 of 12 without tempering, 12 of 12 with).
    Since the features' means are solved jointly and the restarts mix greedy and random
    starts, the defaults find all four too (seeds 0-3 in scratch runs); tempering still
    does, at a higher ELBO here. It is no default: on draws from the IBP prior
    (N = 300, D = 100, about 25 features) the same tempering cost 9000 in ELBO, and the
    finite model lost every feature under it (before issue 24)."""
    X, _, A = make_block_images(n_samples=200, noise=0.5, random_state=0)
    plain = IBPFactorAnalysis(solver="variational", random_state=0).fit(X)
    tempered = IBPFactorAnalysis(solver=VariationalIBP(tempering_iter=10),
                                 random_state=0).fit(X)
    found = [np.sum(np.abs(np.corrcoef(A, m.components_)[:4, 4:]).max(axis=1) > 0.9)
             for m in (plain, tempered)]
    assert found == [4, 4], found
    assert tempered.elbo_ > plain.elbo_
    after = tempered.elbo_trace_[10:]
    assert np.all(np.diff(after) / np.abs(after[:-1]) >= -1e-8)


@pytest.mark.parametrize("solver", ["variational", "finite_variational"])
def test_sample_inverse_transform_and_inputs_unchanged(blocks, solver):
    X, X_test, _ = blocks
    X = X[:100].copy()
    X[3, 4] = np.nan
    original, test_original = X.copy(), X_test.copy()
    model = IBPFactorAnalysis(solver=solver, random_state=0).fit(X)
    T = model.transform(X_test)
    np.testing.assert_array_equal(X, original)
    np.testing.assert_array_equal(X_test, test_original)
    # The reconstruction is E[Z] E[A] (the data are modelled uncentred).
    np.testing.assert_allclose(model.inverse_transform(T), T @ model.components_)
    rows, Z = model.sample(5, random_state=0)
    assert rows.shape == (5, X.shape[1]) and Z.shape == (5, model.n_components_)
    again, _ = model.sample(5, random_state=0)
    np.testing.assert_array_equal(rows, again)
    # Z_ is q(z = 1) rounded; the counted features are those some row uses.
    np.testing.assert_array_equal(model.Z_, (model.feature_probabilities_ > 0.5))
    assert np.all(model.feature_probabilities_.sum(axis=0) >= 0.5)


def test_recovers_the_noise_and_matches_the_sampler_on_ibp_draws():
    """Issue 24: draws from the IBP linear-Gaussian model (alpha = 3, sigma_x = 0.2,
    sigma_a = 2; N = 200 training and 40 held-out rows, D = 100; 25, 17 and 14 features
    in seeds 0-2). Before the fix the default variational fit stopped at the 18
    features of its truncation with sigma_x 0.89, 0.62 and 0.42 and held-out scores of
    -155.6, -91.9 and -68.3, against -55.1, -0.5 and 2.7 for 100 sweeps of the
    accelerated sampler. Now sigma_x is 0.198-0.200 and the held-out score -10.1, 9.5
    and 5.5: asserted, sigma_x within 10% of the truth and the held-out score no more
    than 10 below the sampler's (measured: 2.8 to 45 above it)."""
    for seed in range(3):
        X, _, _ = make_ibp_linear_gaussian(n_samples=240, n_dims=100, alpha=3.0,
                                           random_state=seed)
        X, X_test = X[:200], X[200:]
        fitted = IBPFactorAnalysis(solver="variational", random_state=0).fit(X)
        sampler = IBPFactorAnalysis(n_iter=100, random_state=0).fit(X)
        assert abs(fitted.sigma_x_ - 0.2) < 0.02, (seed, fitted.sigma_x_)
        assert fitted.score(X_test) > sampler.score(X_test) - 10.0, seed


def test_features_are_relabelled_by_use():
    """The stick-breaking prior is not exchangeable, and coordinate ascent cannot swap
    two features: from the true assignments in a shuffled order the fit ends where the
    sorted order does only because the features are relabelled by decreasing use
    (here: ELBO -6120.0 sorted, -6121.9 shuffled, -6986.1 shuffled without the
    relabelling; a relative margin of 1e-3 and an absolute one of 100)."""
    from sklearn_ibp.solvers.variational import VariationalState

    X, Z, _ = make_ibp_linear_gaussian(n_samples=200, n_dims=100, alpha=3.0,
                                       random_state=0)
    Z = Z[:, np.argsort(-Z.sum(axis=0), kind="stable")].astype(float)
    obs = np.ones(X.shape)
    shuffled = Z[:, np.random.default_rng(0).permutation(Z.shape[1])]
    ends = []
    for start, relabel in ((Z, True), (shuffled, True), (shuffled, False)):
        solver = VariationalIBP(max_features=Z.shape[1], n_init=1)
        solver._orders_features = relabel
        K = Z.shape[1]
        state = VariationalState(nu=start.copy(), phi_mean=np.zeros((K, X.shape[1])),
                                 phi_var=np.ones((K, X.shape[1])),
                                 tau=solver._initial_tau(K, 1.0), alpha=1.0,
                                 sigma_x=0.5, sigma_a=1.0)
        solver._run(state, X, obs)
        ends.append(state.elbo)
    assert ends[1] == pytest.approx(ends[0], rel=1e-3)
    assert ends[2] < ends[0] - 100.0
