"""The sampling loop of BaseIBPSampler: chains, burn-in, thinning, traces, interruption,
warm start, progress bar and hyperparameter sampling."""

import math
import warnings

import numpy as np
import pytest

from sklearn_ibp import IBPFactorAnalysis
from sklearn_ibp.base import TRACE_NAMES, NoFeaturesWarning, SamplingInterruptedWarning
from sklearn_ibp.likelihoods.linear_gaussian import log_marginal_likelihood
from sklearn_ibp.priors.ibp import ibp_log_prob
from sklearn_ibp.solvers import SOLVERS, AcceleratedIBP


def _model(**params):
    defaults = dict(n_iter=8, random_state=0)
    return IBPFactorAnalysis(**{**defaults, **params})


# -- chains, burn-in, thinning ---------------------------------------------------------
@pytest.mark.parametrize(
    "n_iter, burn_in, thin, n_chains",
    [(7, 2, 2, 2), (8, None, 1, 1), (9, 0, 3, 3), (6, 5, 4, 2)],
)
def test_traces_and_kept_samples(small_data, n_iter, burn_in, thin, n_chains):
    model = _model(n_iter=n_iter, burn_in=burn_in, thin=thin, n_chains=n_chains).fit(small_data)
    assert set(model.traces_) == set(TRACE_NAMES)
    for name, trace in model.traces_.items():
        assert trace.shape == (n_chains, n_iter), name
        assert np.all(np.isfinite(trace)), name
    effective_burn_in = n_iter // 2 if burn_in is None else burn_in
    kept = list(range(effective_burn_in, n_iter, thin))
    assert len(kept) == math.ceil((n_iter - effective_burn_in) / thin)
    assert len(model.samples_) == n_chains * len(kept)
    assert model.n_iter_ == n_iter and model.interrupted_ is False
    # Samples come chain by chain, from exactly the kept iterations.
    for i, sample in enumerate(model.samples_):
        chain, it = divmod(i, len(kept))
        assert sample["chain"] == chain
        assert sample["log_joint"] == model.traces_["log_joint"][chain, kept[it]]
        n_features = model.traces_["n_features"][chain, kept[it]]
        assert sample["Z"].shape == (small_data.shape[0], n_features)
    # The fitted Z_ is the best kept sample.
    best = max(model.samples_, key=lambda s: s["log_joint"])
    assert np.array_equal(model.Z_, best["Z"])


def test_chains_differ(small_data):
    model = _model(n_chains=3).fit(small_data)
    log_joint = model.traces_["log_joint"]
    for a in range(3):
        for b in range(a + 1, 3):
            assert not np.array_equal(log_joint[a], log_joint[b])


def test_log_joint_trace_is_the_model_log_joint(small_data):
    # The trace value of the last sweep equals log p(Z) + log p(X | Z) recomputed from
    # the kept sample with the public prior and likelihood functions.
    model = _model(n_iter=4, burn_in=0).fit(small_data)
    last = model.samples_[-1]
    expected = ibp_log_prob(last["Z"], last["alpha"], model.beta) + log_marginal_likelihood(
        small_data - model.mean_, last["Z"], last["sigma_x"], last["sigma_a"]
    )
    assert last["log_joint"] == pytest.approx(expected, rel=1e-9)


# -- KeyboardInterrupt -----------------------------------------------------------------
def _interrupt_on_call(monkeypatch, k, corrupt=False):
    """Make ``AcceleratedIBP.sweep`` raise KeyboardInterrupt on its ``k``-th call.

    With ``corrupt`` the interrupted call first changes the state in place, as a real
    Ctrl-C does: it surfaces right after a numba kernel returned, mid-sweep.
    """
    original = AcceleratedIBP.sweep
    calls = {"n": 0}

    def sweep(self, state, rng):
        calls["n"] += 1
        if calls["n"] == k:
            if corrupt:
                state.Z[:, : state.n_features] = 0
                state.stats["gram"][:] = 0.0
            raise KeyboardInterrupt
        original(self, state, rng)

    monkeypatch.setattr(AcceleratedIBP, "sweep", sweep)
    return calls


def test_interrupt_keeps_samples_and_leaves_a_usable_estimator(small_data, monkeypatch):
    calls = _interrupt_on_call(monkeypatch, k=7)
    model = _model(n_iter=10, burn_in=3)
    with pytest.warns(SamplingInterruptedWarning, match="interrupted after 6 of 10"):
        model.fit(small_data)
    assert calls["n"] == 7
    assert model.interrupted_ is True
    assert model.n_iter_ == 6
    assert len(model.samples_) == 3  # iterations 3, 4, 5
    assert np.all(np.isfinite(model.traces_["log_joint"][0, :6]))
    assert np.all(np.isnan(model.traces_["log_joint"][0, 6:]))
    out = model.transform(small_data)
    assert out.shape == (small_data.shape[0], model.n_components_)
    assert np.all(np.isfinite(out))
    assert np.all(np.isfinite(model.score_samples(small_data)))


def test_interrupt_in_a_later_chain(small_data, monkeypatch):
    _interrupt_on_call(monkeypatch, k=6 + 3)  # third sweep of the second chain
    model = _model(n_iter=6, burn_in=1, n_chains=2)
    with pytest.warns(SamplingInterruptedWarning, match="after 8 of 12"):
        model.fit(small_data)
    assert len(model.samples_) == 5 + 1  # chain 0: iterations 1-5; chain 1: iteration 1
    assert [s["chain"] for s in model.samples_] == [0] * 5 + [1]
    assert np.isnan(model.traces_["log_joint"][1, 2:]).all()
    model.transform(small_data)


def test_interrupt_during_burn_in(small_data, monkeypatch):
    _interrupt_on_call(monkeypatch, k=3)
    model = _model(n_iter=10, burn_in=5)
    with pytest.warns(SamplingInterruptedWarning):
        model.fit(small_data)
    assert model.interrupted_ is True and model.n_iter_ == 2
    # No sweep past the burn-in: the chain's current state is kept as the one sample.
    assert len(model.samples_) == 1
    assert model.samples_[0]["log_joint"] == model.traces_["log_joint"][0, 1]
    assert model.transform(small_data).shape[1] == model.n_components_


def test_interrupt_mid_sweep_rolls_the_chain_back(small_data, monkeypatch):
    reference = _model(n_iter=5, burn_in=0).fit(small_data).traces_["log_joint"]
    _interrupt_on_call(monkeypatch, k=3, corrupt=True)
    model = _model(n_iter=5, burn_in=4, warm_start=True)
    with pytest.warns(SamplingInterruptedWarning):
        model.fit(small_data)
    # The half-updated state was discarded: the kept sample is the state after sweep 2.
    assert np.all(model.feature_counts_ > 0)
    assert model.samples_[0]["log_joint"] == reference[0, 1]
    # And continuing gives exactly the uninterrupted chain (the interrupted call drew
    # no random numbers).
    model.set_params(n_iter=3).fit(small_data)
    assert np.array_equal(model.traces_["log_joint"][0, -3:], reference[0, 2:5])


# -- warm start ------------------------------------------------------------------------
@pytest.mark.parametrize("solver", sorted(SOLVERS))
def test_warm_start_continues_the_chain(small_data, solver):
    model = _model(solver=solver, n_iter=10, warm_start=True).fit(small_data)
    first = model.traces_["log_joint"].copy()
    n_samples = len(model.samples_)
    model.set_params(n_iter=5).fit(small_data)
    for name, trace in model.traces_.items():
        assert trace.shape == (1, 15), name
    assert np.array_equal(model.traces_["log_joint"][:, :10], first)
    assert len(model.samples_) == n_samples + 5  # no burn-in when continuing
    assert model.n_iter_ == 15
    # Continuing is exactly one longer chain, not a restart.
    straight = _model(solver=solver, n_iter=15).fit(small_data)
    assert np.array_equal(model.traces_["log_joint"], straight.traces_["log_joint"])
    # A fresh start with the same seed would have repeated the first five sweeps.
    assert not np.array_equal(model.traces_["log_joint"][:, 10:], first[:, :5])


def test_warm_start_false_starts_afresh(small_data):
    model = _model(n_iter=6).fit(small_data)
    first = model.traces_["log_joint"].copy()
    model.fit(small_data)
    assert model.traces_["log_joint"].shape == (1, 6)
    assert np.array_equal(model.traces_["log_joint"], first)


def test_warm_start_uses_the_new_data(small_data):
    model = _model(n_iter=6, burn_in=0, warm_start=True).fit(small_data)
    X_new = np.array(small_data)
    X_new[:, 0] = 10.0 * X_new[:, 0] + 1.0
    model.set_params(n_iter=2).fit(X_new)
    last = model.samples_[-1]
    expected = ibp_log_prob(last["Z"], last["alpha"], model.beta) + log_marginal_likelihood(
        X_new - model.mean_, last["Z"], last["sigma_x"], last["sigma_a"]
    )
    assert last["log_joint"] == pytest.approx(expected, rel=1e-9)


def test_warm_start_refuses_other_shapes(small_data):
    model = _model(n_iter=4, warm_start=True).fit(small_data)
    with pytest.raises(ValueError, match="warm_start=True .* fitted on 30 rows; X has 20 rows"):
        model.fit(small_data[:20])
    with pytest.raises(ValueError, match="X has 4 features, but IBPFactorAnalysis is expecting 5"):
        model.fit(small_data[:, :4])
    with pytest.raises(ValueError, match="warm_start=True continues the previous 1 chain"):
        model.set_params(n_chains=2).fit(small_data)


def test_warm_start_with_missing_values(small_data):
    X = np.array(small_data)
    X[np.random.default_rng(0).random(X.shape) < 0.1] = np.nan
    model = _model(n_iter=6, warm_start=True).fit(X)
    model.set_params(n_iter=3).fit(X)
    assert model.traces_["log_joint"].shape == (1, 9)
    assert np.all(np.isfinite(model.traces_["log_joint"]))
    straight = _model(n_iter=9).fit(X)
    assert np.array_equal(model.traces_["log_joint"], straight.traces_["log_joint"])


# -- progress bar ----------------------------------------------------------------------
def test_verbose_shows_a_progress_bar(small_data, capsys):
    _model(n_iter=4, verbose=1).fit(small_data)
    err = capsys.readouterr().err
    assert "IBPFactorAnalysis" in err
    assert "4/4" in err
    assert "log_joint" in err


def test_quiet_by_default(small_data, capsys):
    _model(n_iter=4).fit(small_data)
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""


# -- hyperparameters -------------------------------------------------------------------
@pytest.mark.parametrize("solver", sorted(SOLVERS))
def test_sample_hyperparameters(small_data, solver):
    model = _model(solver=solver, n_iter=8, sample_hyperparameters=True).fit(small_data)
    for name in ("alpha", "sigma_x", "sigma_a"):
        trace = model.traces_[name][0]
        assert np.all(np.isfinite(trace) & (trace > 0)), name
        assert len(np.unique(trace)) > 1, name
    assert model.alpha_ in model.traces_["alpha"]
    assert model.alpha == 1.0  # the parameter is a starting value, never overwritten


@pytest.mark.parametrize("missing", [False, True])
def test_fixed_hyperparameters_stay_fixed(small_data, missing):
    X = np.array(small_data)
    if missing:
        X[np.random.default_rng(0).random(X.shape) < 0.1] = np.nan
    model = _model(alpha=2.0, sigma_x=0.3, sigma_a=1.5, sample_hyperparameters=False).fit(X)
    assert np.all(model.traces_["alpha"] == 2.0)
    assert np.all(model.traces_["sigma_x"] == 0.3)
    assert np.all(model.traces_["sigma_a"] == 1.5)
    assert (model.alpha_, model.sigma_x_, model.sigma_a_) == (2.0, 0.3, 1.5)


def test_default_noise_levels_follow_the_data_scale(small_data):
    scaled = 100.0 * np.asarray(small_data)
    a = _model(n_iter=3, sample_hyperparameters=False).fit(small_data)
    b = _model(n_iter=3, sample_hyperparameters=False).fit(scaled)
    assert b.sigma_x_ == pytest.approx(100.0 * a.sigma_x_, rel=1e-12)
    assert b.sigma_a_ == pytest.approx(100.0 * a.sigma_a_, rel=1e-12)
    # The data are modelled as given (not centred): s is the standard deviation of all
    # the entries of X.
    s = np.std(np.asarray(small_data))
    assert a.sigma_x_ == pytest.approx(0.25 * s) and a.sigma_a_ == pytest.approx(0.75 * s)


def test_sampled_noise_level_starts_at_the_data_scale(small_data):
    # Sampled, sigma_x starts with all variation as noise: the first sweep's draw of
    # sigma_x is close to the data's standard deviation, far above 0.25 of it.
    X = np.asarray(small_data)
    s = np.std(X - X.mean(axis=0))
    first = _model(n_iter=1, burn_in=0, alpha=1e-3).fit(X).traces_["sigma_x"][0, 0]
    assert 0.6 * s < first < 1.4 * s


def test_no_warnings_on_a_plain_fit(small_data, block_data):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # Pure noise has no features, and the fit says so (NoFeaturesWarning) ...
        with pytest.warns(NoFeaturesWarning):
            _model().fit(small_data)
        # ... any other warning is an error.
        model = _model().fit(block_data)
        assert model.n_components_ > 0
        small_data = block_data
        model.transform(small_data)
        model.score(small_data)


def test_bounded_alpha_update_recovers_the_prior():
    """Geweke's successive-conditional test of the sampling step under ``max_features``.

    Alternate X ~ p(X | Z, sigma_x, sigma_a) (fresh A from its prior) with one step of
    the bounded accelerated sampler and the estimator's hyperparameter updates. The prior
    is alpha ~ Gamma(1, 1), Z | alpha the IBP truncated to K <= 3: alpha keeps mean 1 and
    K the mean of the truncated Poisson(alpha H_N) averaged over alpha. Without the
    Metropolis-Hastings correction of alpha's update (the truncated prior's normaliser)
    the mean of alpha is 0.58 (standard error 0.01) and the test fails.
    """
    from scipy.stats import poisson

    from sklearn_ibp.priors.ibp import harmonic_rate, sample_ibp
    from tests.solvers.test_prior_recovery import batch_means_se

    n_rows, n_dims, n_steps, bound = 6, 2, 12000, 3
    rng = np.random.default_rng(1)
    estimator = IBPFactorAnalysis(sample_hyperparameters=True)
    solver = AcceleratedIBP()
    alpha = rng.gamma(1.0)
    Z = sample_ibp(n_rows, alpha, random_state=rng)
    while Z.shape[1] > bound:
        Z = sample_ibp(n_rows, alpha, random_state=rng)
    hyper = dict(alpha=alpha, beta=1.0, sigma_x=1.0, sigma_a=1.0, max_features=bound)
    state = solver.initialize(np.zeros((n_rows, n_dims)), Z, hyper, rng)
    draws = np.empty((n_steps, 2))
    for step in range(n_steps):
        Zf = state.active_Z.astype(float)
        A = state.sigma_a * rng.standard_normal((state.n_features, n_dims))
        solver.set_data(state, Zf @ A + state.sigma_x * rng.standard_normal((n_rows, n_dims)))
        estimator._iterate(solver, state, rng, missing=None)
        draws[step] = (state.alpha, state.n_features)
    draws = draws[500:]
    assert draws[:, 1].max() <= bound
    mean, se = draws[:, 0].mean(), batch_means_se(draws[:, 0])
    assert abs(mean - 1.0) < 4 * se and se < 0.1, (mean, se)
    # E[K] under the prior: the truncated Poisson mean averaged over alpha ~ Gamma(1, 1).
    grid = np.linspace(1e-4, 25.0, 5001)
    ks = np.arange(bound + 1)
    pmf = poisson.pmf(ks[None, :], grid[:, None] * harmonic_rate(n_rows))
    truncated_mean = (pmf @ ks) / pmf.sum(axis=1)
    expected_k = np.trapezoid(truncated_mean * np.exp(-grid), grid)
    k_mean, k_se = draws[:, 1].mean(), batch_means_se(draws[:, 1])
    assert abs(k_mean - expected_k) < 4 * k_se, (k_mean, expected_k, k_se)


def test_loop_parameters_are_declared_once():
    """Every sampling estimator takes the loop parameters of ``LOOP_PARAMETER_CONSTRAINTS``
    with those constraints, stores them unchanged, and documents them in signature order."""
    import inspect

    from sklearn_ibp import DistanceDependentIBP, DPMixture, InfiniteEBA, NoisyOrHierarchy
    from sklearn_ibp.base import LOOP_PARAMETER_CONSTRAINTS

    loop = [name for name in LOOP_PARAMETER_CONSTRAINTS if name != "sample_hyperparameters"]
    for cls in (IBPFactorAnalysis, DistanceDependentIBP, DPMixture, NoisyOrHierarchy,
                InfiniteEBA):
        signature = list(inspect.signature(cls).parameters)
        expected = ["sample_alpha" if (cls is InfiniteEBA and n == "sample_hyperparameters")
                    else n for n in LOOP_PARAMETER_CONSTRAINTS]
        # The loop parameters close the signature, in this order; DPMixture's own
        # sample_alpha sits beside sample_hyperparameters.
        tail = signature[signature.index("n_iter"):]
        if cls is DPMixture:
            tail.remove("sample_alpha")
        assert tail == expected, cls
        for name in loop:
            assert cls._parameter_constraints[name] is LOOP_PARAMETER_CONSTRAINTS[name]
        values = {name: 100 + i for i, name in enumerate(loop)}
        params = cls(**values).get_params(deep=False)
        assert {name: params[name] for name in loop} == values
        if cls is not DistanceDependentIBP:  # its docstring refers to IBPFactorAnalysis's
            doc = cls.__doc__
            assert "%(loop_parameters)s" not in doc
            positions = [doc.index(f"\n    {name} : ") for name in signature]
            assert positions == sorted(positions), cls


# -- compact pickles ---------------------------------------------------------------------
def _block_fit(**params):
    from sklearn_ibp.datasets import make_block_images

    X, _, _ = make_block_images(n_samples=120, noise=0.3, random_state=0)
    return X, IBPFactorAnalysis(n_iter=40, random_state=0, **params).fit(X)


def test_a_fitted_estimator_pickles_compactly_and_loads_bit_for_bit():
    import pickle

    from sklearn_ibp.base import _pack_state

    X, model = _block_fit()
    packed = pickle.dumps(model)
    assert len(packed) < len(pickle.dumps(dict(vars(model))))
    # The kept samples, which grow with n_iter: their Z bit-packed and compressed (the 20
    # samples share most of their columns) take a tenth of their plain pickle.
    samples = len(_pack_state({"samples_": model.samples_}))
    assert samples < len(pickle.dumps(model.samples_)) / 10
    loaded = pickle.loads(packed)
    assert loaded.samples_[0]["Z"].dtype == np.int8
    for a, b in zip(model.samples_, loaded.samples_, strict=True):
        assert a.keys() == b.keys()
        for key in a:
            np.testing.assert_array_equal(a[key], b[key])
    np.testing.assert_array_equal(model.Z_, loaded.Z_)
    np.testing.assert_array_equal(model.transform(X), loaded.transform(X))
    # An unfitted estimator pickles as it always did (GridSearchCV sends those around).
    assert "_packed_state" not in IBPFactorAnalysis().__getstate__()


def test_a_loaded_estimator_continues_its_chains_exactly():
    import pickle

    X, model = _block_fit(warm_start=True)
    loaded = pickle.loads(pickle.dumps(model))
    model.fit(X)
    loaded.fit(X)
    np.testing.assert_array_equal(model.traces_["log_joint"], loaded.traces_["log_joint"])
    np.testing.assert_array_equal(model.Z_, loaded.Z_)


def test_copies_of_a_fitted_estimator_skip_the_compact_pickle(monkeypatch):
    import copy

    import sklearn_ibp.base as base

    X, model = _block_fit()
    calls = []
    monkeypatch.setattr(base, "_pack_state", lambda state: calls.append(1) or b"")
    shallow = copy.copy(model)
    deep = copy.deepcopy(model)
    assert calls == []
    assert shallow.samples_ is model.samples_
    assert deep.samples_ is not model.samples_
    np.testing.assert_array_equal(deep.transform(X), model.transform(X))


def test_single_blas_thread_limits_and_restores():
    """The fits' BLAS limit (one controller per process, not a library scan per fit)
    sets one thread inside and restores what was set before, in and out of a with block."""
    from threadpoolctl import threadpool_info, threadpool_limits

    from sklearn_ibp.base import single_blas_thread

    def blas_threads():
        return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}

    with threadpool_limits(limits=2, user_api="blas"):
        assert blas_threads() == {2}
        with single_blas_thread():
            assert blas_threads() == {1}
        assert blas_threads() == {2}
        limit = single_blas_thread()
        assert blas_threads() == {1}
        limit.restore_original_limits()
        assert blas_threads() == {2}
