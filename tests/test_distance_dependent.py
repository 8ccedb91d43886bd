"""DistanceDependentIBP: scikit-learn contract, Pipeline use, new rows, bad input."""

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_ibp import DistanceDependentIBP
from sklearn_ibp.datasets import make_block_images


@parametrize_with_checks([DistanceDependentIBP(n_iter=5, burn_in=2, random_state=0)])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def time_indexed_blocks(n_samples=120, seed=0):
    """Block images whose shapes switch on and off in runs, with the time as column 0."""
    rng = np.random.default_rng(seed)
    _, _, A = make_block_images(n_samples=1, random_state=0)
    Z = np.zeros((n_samples, 4), dtype=int)
    state = rng.random(4) < 0.5
    for t in range(n_samples):
        flip = rng.random(4) < 0.08
        state = np.where(flip, ~state, state)
        Z[t] = state
    X = Z @ A + 0.5 * rng.normal(size=(n_samples, 36))
    return np.column_stack([np.arange(n_samples, dtype=float), X]), Z


def test_pipeline_and_grid_search_over_alpha_and_decay():
    X, Z = time_indexed_blocks()
    y = Z[:, 0]
    pipe = Pipeline(
        [
            ("ddibp", DistanceDependentIBP(covariate_columns=[0], sigma_x=0.5, sigma_a=1.0,
                                           n_iter=30, random_state=0)),
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
