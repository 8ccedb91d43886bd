"""NoisyOrHierarchy on the inputs of issue 23: real-valued data scaled beyond what the
kernels can represent (a ZeroDivisionError at 1e300, a sampler that did not end at
1e-300) and an ``alpha_categories`` that asks for tens of thousands of categories."""

import warnings

import numpy as np
import pytest

from sklearn_ibp import NoisyOrHierarchy
from sklearn_ibp.exceptions import NoFeaturesWarning

X = np.random.default_rng(0).standard_normal((40, 5))


@pytest.mark.parametrize("likelihood", ["gaussian", "exponential", "auto"])
@pytest.mark.parametrize("scale", [1e300, 1e-300, 1e101])
def test_data_beyond_the_scale_range_is_refused(likelihood, scale):
    data = (np.abs(X) if likelihood == "exponential" else X) * scale
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="largest magnitude.*rescale X"):
            NoisyOrHierarchy(likelihood=likelihood, n_iter=2, init_iter=1).fit(data)


def test_data_inside_the_scale_range_fits_finitely():
    model = NoisyOrHierarchy(likelihood="gaussian", n_iter=3, init_iter=1,
                             random_state=0).fit(X * 1e50)
    assert np.all(np.isfinite(model.components_))
    assert np.isfinite(model.likelihood_params_["sigma_x"])


def test_binary_data_are_not_checked_for_scale():
    binary = (X > 0).astype(float)
    NoisyOrHierarchy(n_iter=2, init_iter=1, random_state=0).fit(binary)


def test_alpha_categories_that_expects_too_many_categories_is_refused():
    with pytest.raises(ValueError, match=r"alpha_categories=10000.0 .* <= 233.7"):
        NoisyOrHierarchy(alpha_categories=1e4, n_iter=2).fit(X)
    # The DP upper process has at most one category per row: no limit.
    NoisyOrHierarchy(upper="dp", alpha_categories=1e4, n_iter=2, init_iter=1,
                     random_state=0).fit(X)


def test_growing_the_hierarchy_checks_its_memory(monkeypatch):
    from sklearn_ibp.exceptions import AllocationTooLargeError
    from sklearn_ibp.solvers.hierarchy.hierarchy_gibbs import GibbsHierarchy

    model = NoisyOrHierarchy(n_iter=2, init_iter=1, random_state=0).fit(X)
    state = model._chains[0]["state"]
    monkeypatch.setenv("SKLEARN_IBP_MAX_MEMORY", "1K")
    with pytest.raises(AllocationTooLargeError, match="alpha_categories"):
        GibbsHierarchy._grow(state)


def test_the_noise_prior_follows_the_data_scale():
    # The noise precision's Gamma(1, v) prior had v = 1 whatever the data: X * 1e-20 then
    # found 5.75 features on average over 8 chains where X found 1.1 (and X * 1e20 1.0).
    # With v the data's mean square the scale no longer matters (1.4 and 1.75, measured).
    from sklearn_ibp.datasets import make_correlated_block_images

    X = make_correlated_block_images(n_samples=60, random_state=0)[0]
    X = X - X.mean(axis=0)
    fit = NoisyOrHierarchy(n_iter=1, likelihood="gaussian", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit.fit(X * 1e-20)
    assert fit._likelihood.prior_variance == pytest.approx(np.mean((X * 1e-20) ** 2))

    def mean_features(c):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.mean([NoisyOrHierarchy(n_iter=30, likelihood="gaussian",
                                             random_state=seed).fit(X * c).n_components_
                            for seed in range(8)])

    assert abs(mean_features(1e-20) - mean_features(1.0)) < 2.0


def test_a_fit_without_features_warns():
    X = np.random.default_rng(0).standard_normal((40, 5))  # noise: no feature to find
    with pytest.warns(NoFeaturesWarning, match="NoisyOrHierarchy ended its fit with no "
                                               "features") as record:
        fit = NoisyOrHierarchy(n_iter=20, random_state=0).fit(X)
    assert fit.n_components_ == 0
    assert record[0].filename == __file__
