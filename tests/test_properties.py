"""Property-based checks (hypothesis) of the hardening promises: any data scale in
[1e-300, 1e300] is fitted (as the rescaled fit, bit for bit for powers of two) or refused
with a message naming the scale; random shapes and missing-value patterns give a finite
result or a clear ``ValueError``, never a crash from inside a kernel or NaN attributes.

Examples are drawn deterministically (``derandomize=True``), so the test cannot flake.
"""

import re
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sklearn_ibp import (
    DistanceDependentIBP,
    DPMixture,
    IBPFactorAnalysis,
    IBPImputer,
    NoisyOrHierarchy,
)
from sklearn_ibp.datasets import make_block_images
from sklearn_ibp.exceptions import NonFiniteResultWarning

X = np.random.default_rng(0).standard_normal((30, 4))
BLOCKS = make_block_images(n_samples=30, random_state=0)[0]

SETTINGS = settings(max_examples=15, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])

GAUSSIAN_ESTIMATORS = {
    "IBPFactorAnalysis": lambda: IBPFactorAnalysis(n_iter=3, random_state=0),
    "DistanceDependentIBP": lambda: DistanceDependentIBP(n_iter=3, random_state=0),
    "DPMixture": lambda: DPMixture(n_iter=3, random_state=0),
    "NoisyOrHierarchy": lambda: NoisyOrHierarchy(n_iter=3, likelihood="gaussian",
                                                 random_state=0),
}
#: What every scale refusal says (the three checks word it for their models).
SCALE_PHRASE = r"root mean square|largest absolute value|largest magnitude"


def _finite_attributes(est):
    for name, value in vars(est).items():
        if name.endswith("_") and not name.startswith("_"):
            if isinstance(value, np.ndarray) and value.dtype.kind == "f":
                assert np.all(np.isfinite(value)), name
            elif isinstance(value, float):
                assert np.isfinite(value), name


@pytest.mark.parametrize("name", list(GAUSSIAN_ESTIMATORS))
@SETTINGS
@given(log10_c=st.floats(min_value=-300.0, max_value=300.0))
def test_any_scale_is_fitted_or_refused_with_a_message(name, log10_c):
    Xc = X * 10.0**log10_c
    est = GAUSSIAN_ESTIMATORS[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("error", NonFiniteResultWarning)
        warnings.simplefilter("ignore", UserWarning)
        try:
            est.fit(Xc)
        except ValueError as error:
            assert re.search(SCALE_PHRASE, str(error)), str(error)
            assert abs(log10_c) > 25  # the narrowest accepted range is 2^+-100 ~ 1e+-30
            return
    _finite_attributes(est)
    assert np.all(np.isfinite(est.transform(Xc)))


@SETTINGS
@given(k=st.integers(min_value=-95, max_value=95))
def test_power_of_two_scales_give_the_scaled_fit_bit_for_bit(k):
    ref = IBPFactorAnalysis(n_iter=5, random_state=0).fit(BLOCKS)
    c = 2.0**k
    fit = IBPFactorAnalysis(n_iter=5, random_state=0).fit(BLOCKS * c)
    np.testing.assert_array_equal(fit.components_, ref.components_ * c)
    assert fit.sigma_x_ == ref.sigma_x_ * c and fit.sigma_a_ == ref.sigma_a_ * c
    # transform adds log-variances (log c^2 is not exact in binary): equal to rounding
    np.testing.assert_allclose(fit.transform(BLOCKS * c), ref.transform(BLOCKS),
                               rtol=0, atol=1e-12)


@SETTINGS
@given(
    n_samples=st.integers(min_value=1, max_value=12),
    n_features=st.integers(min_value=1, max_value=5),
    missing_fraction=st.sampled_from([0.0, 0.1, 0.3, 0.6, 1.0]),
    seed=st.integers(min_value=0, max_value=2**16),
)
def test_random_shapes_and_missing_patterns(n_samples, n_features, missing_fraction, seed):
    rng = np.random.default_rng(seed)
    D = rng.standard_normal((n_samples, n_features))
    D[rng.random(D.shape) < missing_fraction] = np.nan
    before = D.copy()
    for est in (IBPFactorAnalysis(n_iter=2, random_state=0),
                IBPImputer(IBPFactorAnalysis(n_iter=2, random_state=0))):
        with warnings.catch_warnings():
            warnings.simplefilter("error", NonFiniteResultWarning)
            warnings.simplefilter("ignore", UserWarning)
            try:
                out = est.fit(D).transform(D)
            except ValueError as error:
                # a clear refusal names what is wrong with the input
                assert any(word in str(error) for word in
                           ("X", "n_samples", "sample", "feature", "missing", "observed")), \
                    str(error)
                continue
        _finite_attributes(est)
        assert out.shape[0] == n_samples and np.all(np.isfinite(out))
    np.testing.assert_array_equal(D, before)  # the input is never modified
