"""DPMixture with factor-analyser components (the DPMFA of Görür 2007, sec. 3.4).

The issue's "done means": a generated mixture of three factor analysers in 10 dimensions,
with latent dimensions 1, 2 and 3, is recovered by ``component="factor_analyzer"`` with an
adjusted Rand index above 0.9, and ARD switches off the factor columns a cluster does not
need, so that the effective latent dimension of each cluster
(:func:`~sklearn_ibp.likelihoods.factor_analyzer.effective_latent_dimensions`) is the true
one. Also: bad ``n_factors`` is refused, and the fitted model predicts, scores and samples.
"""

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

from sklearn_ibp import DPMixture
from sklearn_ibp.likelihoods.factor_analyzer import (
    column_signal_to_noise,
    effective_latent_dimensions,
)

TRUE_DIMENSIONS = (1, 2, 3)


def _three_factor_analysers(seed=0, n_per_cluster=150, n_features=10, separation=8.0):
    """Rows of three factor analysers ``x = mu_k + Lambda_k z + eps`` with ``q_k`` = 1, 2
    and 3 standard-normal loadings, means ``separation`` from the origin in random
    directions and one diagonal noise with variances in [0.05, 0.2] (the thesis's shared
    ``Psi``)."""
    rng = np.random.default_rng(seed)
    noise = rng.uniform(0.05, 0.2, n_features)
    centres = rng.normal(size=(len(TRUE_DIMENSIONS), n_features))
    centres *= separation / np.linalg.norm(centres, axis=1, keepdims=True)
    X, y = [], []
    for k, q in enumerate(TRUE_DIMENSIONS):
        loadings = rng.normal(size=(n_features, q))
        factors = rng.normal(size=(n_per_cluster, q))
        eps = rng.normal(size=(n_per_cluster, n_features)) * np.sqrt(noise)
        X.append(centres[k] + factors @ loadings.T + eps)
        y += [k] * n_per_cluster
    return np.vstack(X), np.array(y)


@pytest.fixture(scope="module")
def fitted():
    X, y = _three_factor_analysers()
    model = DPMixture(component="factor_analyzer", n_factors=5, n_iter=400, burn_in=300,
                      random_state=0)
    return model.fit(X), X, y


def _dimensions_per_true_cluster(samples, y):
    """For every kept sample with three clusters, the effective latent dimension of the
    cluster holding most of each true cluster's rows: shape (n_samples, 3)."""
    rows = []
    for sample in samples:
        labels = sample["labels"]
        if labels.max() + 1 != 3:
            continue
        dims = effective_latent_dimensions(sample["params"])
        owner = [np.bincount(labels[y == k], minlength=3).argmax() for k in range(3)]
        if len(set(owner)) == 3:
            rows.append(dims[owner])
    return np.array(rows)


def test_recovers_three_factor_analysers(fitted):
    """Three clusters, ARI > 0.9 (seed 0: 1.0; the chain reaches three clusters at sweep
    178 from the estimator's over-segmented start of 12 k-means clusters, about 5 s for
    the 400 sweeps)."""
    model, X, y = fitted
    assert model.n_components_ == 3
    assert adjusted_rand_score(y, model.labels_) > 0.9
    assert model.means_.shape == (3, 10) and model.covariances_.shape == (3, 10, 10)


def test_ard_finds_the_latent_dimension_of_each_cluster(fitted):
    """Effective latent dimension (columns with signal-to-noise ratio above 5) of each
    true cluster: its posterior mode over the kept samples is 1, 2 and 3, in at least 80%
    of the samples each (seed 0: 100%, 97%, 92% of 100 samples; the best sample has 1, 2
    and 3); the switched-off columns' ARD precisions are an order of magnitude above those
    of the columns in use (seed 0: medians 6.5 and 0.15)."""
    model, X, y = fitted
    dims = _dimensions_per_true_cluster(model.samples_, y)
    assert dims.shape[0] >= 50
    for k, q in enumerate(TRUE_DIMENSIONS):
        counts = np.bincount(dims[:, k], minlength=6)
        assert counts.argmax() == q, (k, counts)
        assert counts[q] >= 0.8 * dims.shape[0], (k, counts)
    best = model._best_sample()["params"]
    on = column_signal_to_noise(best) > 5.0
    assert np.median(best["ard"][~on]) > 10 * np.median(best["ard"][on])


@pytest.mark.parametrize("n_factors", [10, 11])
def test_n_factors_must_be_below_n_features(n_factors):
    X, _ = _three_factor_analysers(n_per_cluster=5)
    with pytest.raises(ValueError, match="n_factors"):
        DPMixture(component="factor_analyzer", n_factors=n_factors, n_iter=2).fit(X)


@pytest.mark.parametrize("solver", ["auxiliary", "no_gaps", "metropolis", "slice", "truncated",
                                    "retrospective"])
def test_predicts_scores_and_samples(solver):
    X, y = _three_factor_analysers(n_per_cluster=20, n_features=4, separation=10.0)
    X_before = X.copy()
    model = DPMixture(component="factor_analyzer", n_factors=2, solver=solver, n_iter=6,
                      random_state=1).fit(X)
    np.testing.assert_array_equal(X, X_before)
    proba = model.predict_proba(X[:5])
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert np.all(np.isfinite(model.score_samples(X[:5])))
    assert np.isfinite(model.leave_one_out_log_density()).all()
    rows, labels = model.sample(7, random_state=0)
    assert rows.shape == (7, 4) and labels.shape == (7,)
    again = DPMixture(component="factor_analyzer", n_factors=2, solver=solver, n_iter=6,
                      random_state=1).fit(X)
    np.testing.assert_array_equal(again.labels_, model.labels_)
