"""Issue 23 in the IBP area: extreme scales, extreme sigma_x/sigma_a, constant data and
the memory guard of the feature statistics."""

import warnings

import numpy as np
import pytest

from sklearn_ibp import IBPFactorAnalysis
from sklearn_ibp.exceptions import AllocationTooLargeError
from sklearn_ibp.likelihoods import feature_posterior
from sklearn_ibp.solvers import AcceleratedIBP, CollapsedIBP
from tests.solvers._helpers import run_solver


@pytest.fixture(scope="module")
def X():
    return np.random.default_rng(0).standard_normal((40, 5))


@pytest.fixture(scope="module")
def structured():
    rng = np.random.default_rng(0)
    Z = (rng.random((40, 3)) < 0.5).astype(float)
    return Z @ (3.0 * rng.standard_normal((3, 5))) + 0.3 * rng.standard_normal((40, 5))


@pytest.mark.parametrize("c", [1e300, 1e150, 1e-150, 1e-300, 2.0**-101, 2.0**101])
def test_data_outside_the_scale_range_is_refused(X, c):
    with pytest.raises(ValueError, match="root mean square"):
        IBPFactorAnalysis(n_iter=2, random_state=0).fit(X * c)


@pytest.mark.parametrize("exponent", [-90, -7, 5, 90])
def test_power_of_two_scaling_gives_the_scaled_fit_bit_for_bit(structured, exponent):
    c = 2.0**exponent
    ref = IBPFactorAnalysis(n_iter=10, random_state=0).fit(structured)
    fit = IBPFactorAnalysis(n_iter=10, random_state=0).fit(structured * c)
    assert ref.n_components_ > 0
    np.testing.assert_array_equal(fit.Z_, ref.Z_)
    assert fit.sigma_x_ == ref.sigma_x_ * c
    assert fit.sigma_a_ == ref.sigma_a_ * c
    np.testing.assert_array_equal(fit.components_, ref.components_ * c)


@pytest.mark.parametrize("name", ["sigma_x", "sigma_a"])
def test_sigma_far_from_the_data_scale_is_refused(X, name):
    with pytest.raises(ValueError, match=f"{name}=1e-300 is too far"):
        IBPFactorAnalysis(n_iter=2, random_state=0, **{name: 1e-300}).fit(X)


def test_fixed_sigmas_too_far_apart_are_refused(X):
    # sigma_a / sigma_x = 1e6 over 40 rows: the number of features grew without end
    # (about 390 after 20 sweeps; an exact fit of 40 rows needs 40) from rounding errors
    with pytest.raises(ValueError, match=r"too far apart for 40 rows.*sigma_a / sigma_x <= 5e\+04"):
        IBPFactorAnalysis(sigma_x=1e-3, sigma_a=1e3, sample_hyperparameters=False,
                          n_iter=2, random_state=0).fit(X)
    # a ratio of 1e3 is fitted (the number of features settles at 40)
    IBPFactorAnalysis(sigma_x=1e-3, sigma_a=1.0, sample_hyperparameters=False, n_iter=2,
                      random_state=0).fit(X)


# The sweeps at which the unbounded denominators first cancelled to zero (the collapsed
# sampler in its first sweeps, the accelerated one after 20); K grows by tens of features a
# sweep in this regime, so the collapsed sampler's O(K^3) sweeps are kept few. The
# estimator refuses these sigmas; the solvers, driven directly, must still not divide by 0.
@pytest.mark.parametrize("solver, n_sweeps", [(AcceleratedIBP(), 30), (CollapsedIBP(), 3)],
                         ids=["accelerated", "collapsed"])
def test_tiny_noise_with_wide_features_runs_without_error(X, solver, n_sweeps):
    # sigma_a / sigma_x = 1e6: the Sherman-Morrison denominators cancelled to zero
    # (ZeroDivisionError from inside the kernel) before they were held at their bound.
    hyper = dict(alpha=1.0, beta=1.0, sigma_x=1e-3, sigma_a=1e3)
    state, log_joints = run_solver(solver, X, hyper, n_sweeps=n_sweeps, seed=0,
                                   record=lambda s: solver.log_joint(s))
    assert state.n_features > 0
    assert np.all(np.isfinite(feature_posterior(X, state.active_Z, 1e-3, 1e3)[0]))
    assert np.all(np.isfinite(log_joints))


def test_variational_fit_of_constant_data_is_finite():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = IBPFactorAnalysis(solver="variational", random_state=0).fit(np.ones((40, 5)))
    assert np.isfinite(fit.elbo_)
    assert fit.sigma_x_ > 0.0 and np.isfinite(fit.sigma_x_)


def test_huge_alpha_is_refused_before_allocating(X, monkeypatch):
    monkeypatch.setenv("SKLEARN_IBP_MAX_MEMORY", "1M")
    with pytest.raises(AllocationTooLargeError, match="alpha"):
        IBPFactorAnalysis(alpha=1e4, solver="collapsed", n_iter=2, random_state=0).fit(X)
