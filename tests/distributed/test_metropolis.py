"""The exact, Metropolis-corrected data-parallel sampler (Doshi-Velez 2009, sec. 5.2):
``ParallelAcceleratedIBP(correction="metropolis")``."""

import warnings

import numpy as np
import pytest

from sklearn_ibp import IBPFactorAnalysis
from sklearn_ibp.distributed import ParallelAcceleratedIBP
from sklearn_ibp.distributed._metropolis import (
    MetropolisMessage,
    ShardPlan,
    fuzz_columns,
    labelled_statistics,
    sweep_rows,
)
from sklearn_ibp.likelihoods.linear_gaussian import log_marginal_likelihood
from sklearn_ibp.priors.ibp import labelled_ibp_log_prob
from tests._enumeration import enumerate_posterior, history_key
from tests.solvers._helpers import run_solver
from tests.solvers.test_exact_posterior import chi_square_against


def _message(Z, X, fuzz=0.2, k_max=4, alpha=2.0, sigma_x=0.5, sigma_a=1.0, n_sweeps=1):
    counts, gram, cross = labelled_statistics(Z, X)
    return MetropolisMessage(
        counts=counts, gram=gram, cross=cross, n_total=X.shape[0], alpha=alpha, beta=1.0,
        sigma_x=sigma_x, sigma_a=sigma_a, n_sweeps=n_sweeps, window=1, k_max=k_max,
        refresh_every=100, feature_subsample=None, fuzz=fuzz,
    )


def _log_fuzz(A, B, fuzz, columns=None):
    """``log Q`` of fuzzing ``A`` into ``B`` on the slots ``columns`` (all when None)."""
    if columns is not None:
        outside = np.setdiff1d(np.arange(A.shape[1]), columns)
        if np.any(A[:, outside] != B[:, outside]):
            return -np.inf
        A, B = A[:, columns], B[:, columns]
    n_disagree = int(np.sum(A != B))
    return n_disagree * np.log(fuzz) + (A.size - n_disagree) * np.log1p(-fuzz)


# -- the exact posterior of a tiny problem --------------------------------------------------------

ALPHA, SIGMA_X, SIGMA_A, K_CAP = 1.0, 0.7, 1.0, 4
N_SAMPLES, THIN = 600, 20


def run_tiny_chain(seed, n_samples=N_SAMPLES, thin=THIN, **proposal):
    """The exact sampler on four rows in two shards (one row each per proposal), with
    fixed hyperparameters; the class of ``Z`` every ``thin`` rounds, and the posterior."""
    Z = np.array([[1, 0], [1, 1], [0, 1], [1, 1]], dtype=float)
    A = np.array([[1.5, -1.0], [0.5, 1.5]])
    X = Z @ A + SIGMA_X * np.random.default_rng(4).normal(size=(4, 2))
    # The solver is driven directly, on X as it is (the estimator would centre it first).
    posterior, _, _ = enumerate_posterior(X, ALPHA, SIGMA_X, SIGMA_A, max_features=K_CAP)
    solver = ParallelAcceleratedIBP(n_shards=2, n_workers=1, correction="metropolis",
                                 metropolis_rows=1, metropolis_max_features=K_CAP,
                                 **proposal)
    hyper = dict(alpha=ALPHA, beta=1.0, sigma_x=SIGMA_X, sigma_a=SIGMA_A)
    _, keys = run_solver(solver, X, hyper, n_sweeps=n_samples * thin, seed=seed, thin=thin,
                         burn_in=thin, record=lambda s: history_key(s.active_Z))
    return keys, posterior, solver


def test_class_frequencies_match_the_enumerated_posterior():
    """N = 4 rows, D = 2, two shards, ``K_cap = 4``: the classes of the chain's ``Z``
    against the exact posterior over the left-ordered classes with at most 4 features
    (``enumerate_posterior``, the target: the posterior given ``K <= K_cap``; 3876
    classes, 29% of the mass at ``K = 4``), by the chi-square test of the serial
    samplers' (classes expected fewer than 5 times pooled).

    The proposal fuzzes the slots the other rows use and two more
    (``fuzz_free_slots=2``, the default) at ``fuzz=0.3``: it then moves often enough for
    a short run, and the ``Q`` terms it tests weigh as much. 27% of the rounds change
    ``Z``; the integrated autocorrelation time of ``K`` is about 19 rounds (lag-20
    autocorrelation 0.15), hence the thinning by 20.

    Measured p-values (600 samples, 12000 rounds): 0.48, 0.26, 0.021, 0.21 and 0.51 at seeds 0-4
    (statistic 16-31 on 17 degrees of freedom). The thesis's
    proposal, which fuzzes all four slots (``fuzz_free_slots=None``, ``fuzz=0.2``; the
    test before the restricted fuzz, 600 samples thinned by 25, 15000 rounds): 0.75,
    0.13, 0.94, 0.38 and 0.86 (statistic 9-24 on 17 degrees of freedom); a run of 100000
    rounds (4000 samples): p = 0.019 (statistic 1.26 times its degrees of freedom; 0.94
    and 1.26 on its even and odd samples), with ``K`` = 1, 2, 3, 4 in 8.1, 24.9, 38.5 and
    28.5% of the samples against 7.5, 26.3, 37.4 and 28.8%; rerun now with 400 samples
    thinned by 20: 0.075, 0.0094, 0.14, 0.16 and 0.63 (only 9 degrees of freedom at that
    size, hence 600 samples here). Its one-step bookkeeping is checked from scratch
    below; here only the restricted proposal is run, to keep the test at 12000 rounds.

    The test can fail (checked by hand, not kept in the code): with the ``Q`` ratio
    dropped from the acceptance the statistic is 115 on 17 degrees of freedom
    (p = 1.5e-16; with the thesis's proposal 356, p = 3e-65). It cannot see a reverse
    ``Q`` that forgets the ``-inf`` of a reverse sweep differing outside the fuzzed
    slots (p = 0.32: with four slots they are nearly always all fuzzed); the one-step
    test below checks that case from scratch. A proposal that moves the live columns of
    every row to the front (instead of keeping their slots) cannot propose back the
    labelled matrices with a free slot before a used one; run for 100000 rounds it gave
    p = 2e-11 (statistic twice its degrees of freedom), ``K`` = 4 in 23.8% of the samples.
    """
    keys, posterior, solver = run_tiny_chain(seed=0, fuzz=0.3, fuzz_free_slots=2)
    stat, dof, p_value, counts, expected = chi_square_against(posterior, keys)
    assert dof >= 15
    assert p_value > 1e-3, (stat, dof, counts, expected)
    assert 0.1 < np.mean(solver.moved_) < 0.5


# -- G_r: the deterministic sweep of the proposal ----------------------------------------------


def test_sweep_rows_is_a_function_of_z_that_keeps_the_slots():
    """``G_r`` changes only the chosen rows, leaves every live feature in its slot (free
    slots before live ones included), puts new features in the lowest free slots, creates
    none without the token or without a free slot, and gives the same bits every time."""
    rng = np.random.default_rng(0)
    N, D, K_cap = 12, 3, 6
    Z = np.zeros((N, K_cap), dtype=np.int8)
    Z[:, 1] = rng.random(N) < 0.5   # slots 0, 2 and 5 free; 1, 3 and 4 live
    Z[:, 3] = rng.random(N) < 0.5
    Z[:, 4] = rng.random(N) < 0.3
    Z[:, [1, 3, 4]] |= (np.arange(N) == 0)[:, None].astype(np.int8)
    X = Z @ rng.normal(size=(K_cap, D)) + 0.5 * rng.normal(size=(N, D))
    rows = np.array([3, 7, 8])
    outside = np.setdiff1d(np.arange(N), rows)
    created = 0
    for seed in range(40):
        for token in (False, True):
            plan = ShardPlan(rows=rows, sweep_seed=seed, fuzz_seed=0, token=token)
            message = _message(Z, X, alpha=6.0)
            Z_in, X_in = Z.copy(), X.copy()
            G = sweep_rows(X, Z, message, plan)
            np.testing.assert_array_equal(Z, Z_in)  # inputs untouched
            np.testing.assert_array_equal(X, X_in)
            np.testing.assert_array_equal(G, sweep_rows(X, Z, message, plan))
            np.testing.assert_array_equal(G[outside], Z[outside])
            new_slots = np.flatnonzero(G.any(axis=0) & ~Z.any(axis=0))
            if not token:
                assert new_slots.size == 0
            else:
                # The lowest free slots first: 0, then 2, then 5.
                np.testing.assert_array_equal(new_slots, [0, 2, 5][: new_slots.size])
                created += new_slots.size
    assert created > 0
    # All slots taken: the token holder cannot create any.
    full = np.ones((N, 3), dtype=np.int8)
    plan = ShardPlan(rows=rows, sweep_seed=1, fuzz_seed=0, token=True)
    G = sweep_rows(X, full, _message(full, X, alpha=50.0), plan)
    assert G.shape == full.shape


def test_fuzz_columns_depend_on_the_rows_left_alone():
    """``C`` is the slots the rows outside ``R`` use plus the lowest others, the same for
    any change of the rows in ``R`` (so the two directions of a move agree); ``"auto"``
    gives one flip expected over ``R x C``; None fuzzes every slot."""
    rng = np.random.default_rng(3)
    N, K_cap = 10, 7
    bounds = np.array([0, 5, 10])
    Z = np.zeros((N, K_cap), dtype=np.int8)
    Z[:, [1, 4]] = rng.random((N, 2)) < 0.6
    Z[[0, 5], 4] = 1
    Z[2, 6] = 1          # slot 6 used by a chosen row only
    plans = [ShardPlan(rows=np.array([2, 3]), sweep_seed=0, fuzz_seed=0, token=True),
             ShardPlan(rows=np.array([1]), sweep_seed=0, fuzz_seed=0, token=False)]
    chosen = [2, 3, 6]
    rest = np.setdiff1d(np.arange(N), chosen)
    used = np.flatnonzero(Z[rest].any(axis=0))
    for _ in range(20):
        Z2 = Z.copy()
        Z2[chosen] = rng.random((3, K_cap)) < 0.5
        for free in (1, 2):
            columns, rate = fuzz_columns(Z2.sum(axis=0), Z2, bounds, plans, free, "auto")
            others = np.setdiff1d(np.arange(K_cap), used)
            np.testing.assert_array_equal(columns, np.union1d(used, others[:free]))
            assert rate == pytest.approx(1.0 / (3 * columns.size))
            assert fuzz_columns(Z2.sum(axis=0), Z2, bounds, plans, free, 0.05)[1] == 0.05
    columns, rate = fuzz_columns(Z.sum(axis=0), Z, bounds, plans, None, "auto")
    assert columns is None and rate == pytest.approx(1.0 / (3 * K_cap))


# -- one step, checked from scratch -------------------------------------------------------------


def _run(X, hyper, n_steps, seed, **params):
    solver = ParallelAcceleratedIBP(n_workers=1, correction="metropolis", **params)
    rng = np.random.default_rng(seed)
    state = solver.initialize(X, np.zeros((X.shape[0], 0), dtype=np.int8), hyper, rng)
    steps = []
    for _ in range(n_steps):
        before = state.stats["mh"]["Z"].copy()
        solver.sweep(state, rng)
        steps.append((before, dict(state.stats["mh"]["last"])))
    return solver, state, steps


@pytest.mark.parametrize("free_slots, fuzz", [(None, 0.2), (2, 0.2), (3, "auto")])
def test_one_shard_acceptance_bookkeeping(free_slots, fuzz):
    """With one shard, every step's log acceptance ratio is recomputed from scratch: the
    labelled IBP prior and the collapsed likelihood of both matrices, and the fuzz terms of
    the forward proposal (against ``G_r(Z)``) and of the reverse one (``G_r(Z')``), on the
    slots ``C`` taken afresh from the rows outside ``R`` (``-inf`` when the reverse sweep
    differs outside them). The state that follows is the proposal or the old matrix, and
    the estimator's view, the statistics and ``acceptance_`` agree with it."""
    rng = np.random.default_rng(1)
    N, D, K_cap = 8, 3, 5
    X = rng.normal(size=(N, D))
    hyper = dict(alpha=1.5, beta=1.0, sigma_x=0.6, sigma_a=1.0)
    solver, state, steps = _run(X, hyper, 60, seed=2, n_shards=1, metropolis_rows=2,
                                metropolis_max_features=K_cap, fuzz=fuzz, k_max=3,
                                fuzz_free_slots=free_slots)
    mh = state.stats["mh"]
    after = [s[0] for s in steps[1:]] + [mh["Z"]]
    n_moved = n_impossible = 0
    for (Z, last), Z_next, accepted in zip(steps, after, solver.acceptance_, strict=True):
        plan = last["plans"][0]
        Z_new = last["Z_new"][0]
        outside = np.setdiff1d(np.arange(N), plan.rows)
        np.testing.assert_array_equal(Z_new[outside], Z[outside])
        if free_slots is None:
            columns = None
        else:
            used = Z[outside].any(axis=0)
            columns = np.union1d(np.flatnonzero(used), np.flatnonzero(~used)[:free_slots])
            np.testing.assert_array_equal(last["columns"], columns)
        rate = fuzz if fuzz != "auto" else min(0.5, 1.0 / (2 * columns.size))
        assert last["fuzz"] == pytest.approx(rate)

        def log_target(M):
            live = M.any(axis=0)
            return (labelled_ibp_log_prob(M, hyper["alpha"], 1.0, K_cap)
                    + log_marginal_likelihood(X, M[:, live], hyper["sigma_x"],
                                              hyper["sigma_a"]))

        forward = _log_fuzz(sweep_rows(X, Z, _message(Z, X, rate, 3, 1.5, 0.6), plan)[plan.rows],
                            Z_new[plan.rows], rate, columns)
        reverse = _log_fuzz(sweep_rows(X, Z_new, _message(Z_new, X, rate, 3, 1.5, 0.6),
                                       plan)[plan.rows], Z[plan.rows], rate, columns)
        assert np.isfinite(forward)
        if np.isinf(reverse):
            n_impossible += 1
            assert last["log_ratio"] == -np.inf and not accepted
        else:
            expected = log_target(Z_new) - log_target(Z) + reverse - forward
            assert last["log_ratio"] == pytest.approx(expected, abs=1e-8)
        np.testing.assert_array_equal(Z_next, Z_new if accepted else Z)
        n_moved += accepted and not np.array_equal(Z_new, Z)
    assert 0 < n_moved < len(steps)
    assert (n_impossible == 0) == (free_slots is None)
    assert sum(solver.moved_) == n_moved
    # The estimator sees the live slots; the totals are the statistics of the matrix.
    live = mh["Z"].any(axis=0)
    np.testing.assert_array_equal(state.Z, mh["Z"][:, live])
    assert state.n_features == live.sum()
    counts, gram, cross = labelled_statistics(mh["Z"], X)
    np.testing.assert_array_equal(mh["totals"][0], counts)
    np.testing.assert_array_equal(state.stats["total"]["counts"], counts[live])
    np.testing.assert_allclose(state.stats["total"]["cross"], cross[live], atol=1e-12)


def test_reproducible_and_the_estimator_runs_it(block_data):
    settings = dict(n_iter=30, random_state=0)
    solver = ParallelAcceleratedIBP(n_shards=3, correction="metropolis", metropolis_rows=2)
    a = IBPFactorAnalysis(solver=solver, **settings).fit(block_data)
    b = IBPFactorAnalysis(solver=solver, **settings).fit(block_data)
    for name in ("log_joint", "n_features", "alpha", "sigma_x", "sigma_a"):
        np.testing.assert_array_equal(a.traces_[name], b.traces_[name])
    assert a._solver.acceptance_ == b._solver.acceptance_
    assert len(a._solver.acceptance_) == 30
    assert not hasattr(solver, "acceptance_")
    # Missing entries, redrawn after each round: the next round starts from the
    # statistics of the data as they are then (the last round's are of the data before
    # the last redraw).
    X = block_data.copy()
    missing = np.random.default_rng(0).random(X.shape) < 0.05
    X[missing] = np.nan
    est = IBPFactorAnalysis(solver=solver, **settings).fit(X)
    state = est._chains[0]["state"]
    mh = state.stats["mh"]
    assert mh["X"] is not state.X
    np.testing.assert_array_equal(mh["X"][~missing], state.X[~missing])
    assert np.all(mh["X"][missing] != state.X[missing])
    counts, _, cross = labelled_statistics(mh["Z"], mh["X"])
    np.testing.assert_array_equal(mh["totals"][0], counts)
    # Summed over the shards up the tree: equal up to the order of the additions.
    np.testing.assert_allclose(mh["totals"][2], cross, atol=1e-12)


def test_exact_sampler_continues_an_approximate_chain(block_data):
    """``correction_after`` rounds of the approximate sampler, then the exact one from the
    chain's ``Z``; the same as fitting with ``correction=None`` and continuing with
    ``warm_start`` after ``set_params(solver__correction="metropolis")``. Setting it back
    to None continues with the approximate sampler; another solver class is refused."""
    # The exact rounds change Z rarely (0.4-2% of rounds on block images, docs/parallel):
    # at random_state=1 one of the 15 does (measured: 0 at seed 0 and 2 since issue 20's
    # uncentred data, 1 at seeds 1 and 3), so that the continued chain is seen to move.
    settings = dict(random_state=1)
    exact = dict(correction="metropolis", metropolis_rows=2)
    est = IBPFactorAnalysis(solver=ParallelAcceleratedIBP(n_shards=3, correction_after=15,
                                                       **exact),
                            n_iter=30, **settings).fit(block_data)
    assert len(est._solver.acceptance_) == 15
    assert any(est._solver.moved_)
    est2 = IBPFactorAnalysis(solver=ParallelAcceleratedIBP(n_shards=3), n_iter=15,
                             warm_start=True, **settings).fit(block_data)
    est2.set_params(**{f"solver__{k}": v for k, v in exact.items()})
    est2.fit(block_data)
    assert est2._chains[0]["state"].stats["mh"]["Z"].shape[1] == 30  # K_cap slots
    for name in ("log_joint", "n_features", "alpha", "sigma_x"):
        np.testing.assert_array_equal(est.traces_[name], est2.traces_[name])
    assert est._solver.acceptance_ == est2._solver.acceptance_
    # And back: the approximate sampler continues from the exact one's Z.
    est2.set_params(solver__correction=None)
    est2.fit(block_data)
    assert "mh" not in est2._chains[0]["state"].stats
    assert len(est2._solver.acceptance_) == 15
    assert est2.traces_["n_features"].shape[1] == 45
    assert np.all(np.isfinite(est2.traces_["log_joint"]))
    with pytest.raises(ValueError, match="continues the chains with the solver"):
        est2.set_params(solver="accelerated").fit(block_data)


def test_refusals(block_data):
    with pytest.raises(ValueError, match="needs mode='synchronous'"):
        IBPFactorAnalysis(solver=ParallelAcceleratedIBP(correction="metropolis",
                                                     mode="asynchronous"),
                          n_iter=2).fit(block_data)
    with pytest.raises(ValueError, match="metropolis_max_features=3 column slots, but the "
                                         "starting Z has"):
        IBPFactorAnalysis(solver=ParallelAcceleratedIBP(correction="metropolis",
                                                     metropolis_max_features=3),
                          alpha=5.0, n_iter=2, random_state=0).fit(block_data)
    for bad in (dict(correction="exact"), dict(fuzz=0.0), dict(fuzz=0.6), dict(fuzz="max"),
                dict(metropolis_rows=0), dict(metropolis_max_features=0),
                dict(fuzz_free_slots=0), dict(correction_after=-1)):
        with pytest.raises(ValueError, match=next(iter(bad))):
            IBPFactorAnalysis(solver=ParallelAcceleratedIBP(**bad), n_iter=2).fit(block_data)


def test_dask_gives_the_thread_result(block_data):
    distributed = pytest.importorskip("distributed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           host="127.0.0.1", dashboard_address=None)
        client = distributed.Client(cluster)
    try:
        settings = dict(n_iter=20, random_state=0)
        solver = ParallelAcceleratedIBP(n_shards=2, correction="metropolis")
        threads = IBPFactorAnalysis(solver=solver, **settings).fit(block_data)
        solver.set_params(backend="dask", client=client)
        dask = IBPFactorAnalysis(solver=solver, **settings).fit(block_data)
        for name in ("log_joint", "n_features", "alpha", "sigma_x", "sigma_a"):
            np.testing.assert_array_equal(threads.traces_[name], dask.traces_[name])
        assert threads._solver.acceptance_ == dask._solver.acceptance_
        assert any(threads._solver.moved_)
    finally:
        client.close()
        cluster.close()
