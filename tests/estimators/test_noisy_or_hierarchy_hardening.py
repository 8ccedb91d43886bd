"""NoisyOrHierarchy on the inputs of issue 23: real-valued data scaled beyond what the
kernels can represent (a ZeroDivisionError at 1e300, a sampler that did not end at
1e-300) and an ``alpha_categories`` that asks for tens of thousands of categories."""

import warnings

import numpy as np
import pytest

from sklearn_ibp import NoisyOrHierarchy

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
