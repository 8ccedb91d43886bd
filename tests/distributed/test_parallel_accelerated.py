"""The data-parallel accelerated sampler (Doshi-Velez 2009, ch. 5) on threads and on Dask.

The Dask tests start a ``LocalCluster`` of worker processes on loopback.
"""

import functools
import os
import signal
import threading
import time
import warnings

import numpy as np
import pytest
from scipy.stats import ks_2samp

from sklearn_ibp import IBPFactorAnalysis
from sklearn_ibp.base import SamplingInterruptedWarning
from sklearn_ibp.datasets import make_block_images
from sklearn_ibp.distributed import ParallelAcceleratedIBP
from sklearn_ibp.distributed._shard import (
    RoundMessage,
    ShardData,
    ShardState,
    exact_statistics,
    run_round,
)
from sklearn_ibp.distributed.parallel_accelerated import tree_sum
from sklearn_ibp.priors.ibp import sample_ibp
from sklearn_ibp.solvers import AcceleratedIBP

TRACES = ("log_joint", "n_features", "alpha", "sigma_x", "sigma_a")


def _assert_same_fit(a, b):
    for name in TRACES:
        np.testing.assert_array_equal(a.traces_[name], b.traces_[name], err_msg=name)
    assert len(a.samples_) == len(b.samples_)
    for s, t in zip(a.samples_, b.samples_, strict=True):
        np.testing.assert_array_equal(s["Z"], t["Z"])


@pytest.mark.parametrize("missing", [False, True])
@pytest.mark.parametrize("window", [1, 3])
def test_one_shard_is_the_serial_sampler_bit_for_bit(block_data, missing, window):
    X = block_data.copy()
    if missing:
        X[np.random.default_rng(1).random(X.shape) < 0.05] = np.nan
    settings = dict(n_iter=25, burn_in=5, random_state=3)
    serial = IBPFactorAnalysis(
        solver=AcceleratedIBP(window=window, split_merge=0, complement=False), **settings
    ).fit(X)
    parallel = IBPFactorAnalysis(
        solver=ParallelAcceleratedIBP(n_shards=1, window=window), **settings
    ).fit(X)
    _assert_same_fit(serial, parallel)
    np.testing.assert_array_equal(serial.components_, parallel.components_)
    assert serial.traces_["n_features"].max() > 4  # the chains did move


def test_threads_reproducible_and_inputs_unchanged(block_data):
    X = block_data.copy()
    solver = ParallelAcceleratedIBP(n_shards=3, sweeps_per_sync=2)
    a = IBPFactorAnalysis(solver=solver, n_iter=15, random_state=0).fit(X)
    b = IBPFactorAnalysis(solver=solver, n_iter=15, random_state=0).fit(X)
    _assert_same_fit(a, b)
    np.testing.assert_array_equal(X, block_data)
    c = IBPFactorAnalysis(solver=solver, n_iter=15, random_state=1).fit(X)
    assert not np.array_equal(a.traces_["log_joint"], c.traces_["log_joint"])
    # Timings of every round are recorded (3 shards, 15 rounds).
    assert len(a._solver.timings_["round"]) == 15
    assert not hasattr(solver, "timings_")  # the user's object is left alone


def test_asynchronous_mode_is_reproducible_and_imputes_on_the_shards(block_data):
    X = block_data.copy()
    X[np.random.default_rng(0).random(X.shape) < 0.1] = np.nan
    solver = ParallelAcceleratedIBP(n_shards=3, mode="asynchronous")
    a = IBPFactorAnalysis(solver=solver, n_iter=30, random_state=2).fit(X)
    b = IBPFactorAnalysis(solver=solver, n_iter=30, random_state=2).fit(X)
    _assert_same_fit(a, b)
    state = a._chains[0]["state"]
    missing = np.isnan(X)
    observed_start = np.where(missing, 0.0, X - a.mean_)
    # Observed entries untouched; every shard's missing entries redrawn (not the start 0).
    np.testing.assert_array_equal(state.X[~missing], observed_start[~missing])
    bounds = state.stats["bounds"]
    for p in range(3):
        rows = slice(bounds[p], bounds[p + 1])
        assert np.all(state.X[rows][missing[rows]] != 0.0)
    # The K trace moves and the features stay aligned: the totals are the shards' sums.
    assert np.ptp(a.traces_["n_features"]) > 0
    counts = np.concatenate([s.Z for s in state.stats["shards"]]).sum(axis=0)
    np.testing.assert_array_equal(state.stats["total"]["counts"], counts)


class _InterruptedAfterThree(ParallelAcceleratedIBP):
    """Raises KeyboardInterrupt after its fourth round, as Ctrl-C between two rounds."""

    def sweep(self, state, rng):
        super().sweep(state, rng)
        self.rounds_done_ = getattr(self, "rounds_done_", 0) + 1
        if self.rounds_done_ == 4:
            raise KeyboardInterrupt


@pytest.mark.parametrize("mode", ["synchronous", "asynchronous"])
def test_interrupt_rolls_back_one_round_and_warm_start_continues(block_data, mode):
    with pytest.warns(SamplingInterruptedWarning, match="after 3 of 10"):
        est = IBPFactorAnalysis(solver=_InterruptedAfterThree(n_shards=2, mode=mode),
                                n_iter=10, burn_in=1, random_state=0).fit(block_data)
    assert est.interrupted_ and est.n_iter_ == 3 and len(est.samples_) == 2
    state = est._chains[0]["state"]
    # The rolled-back state is whole: its totals are the sums of its shards.
    counts = np.concatenate([s.Z for s in state.stats["shards"]]).sum(axis=0)
    np.testing.assert_array_equal(state.stats["total"]["counts"], counts)
    assert state.Z.shape[1] == state.n_features
    # Continue with a plain solver (one without engine or records, as after unpickling);
    # warm_start continues the chains with the fitted solver, which must be of the
    # estimator's solver class.
    est._solver = ParallelAcceleratedIBP(n_shards=2, mode=mode)
    est.set_params(solver=ParallelAcceleratedIBP(n_shards=2, mode=mode), warm_start=True)
    est.fit(block_data)
    assert est.n_iter_ == 13 and not est.interrupted_


def _shard_problem(seed=0, n_rows=40, n_dims=6):
    rng = np.random.default_rng(seed)
    Z = sample_ibp(n_rows, 3.0, 1.0, rng).astype(np.int8)
    A = rng.standard_normal((Z.shape[1], n_dims))
    X = Z @ A + 0.5 * rng.standard_normal((n_rows, n_dims))
    return X, Z


def test_only_the_token_holder_creates_features_and_statistics_stay_additive():
    """A round's message is the shard's own exact statistics; without the token no
    feature is ever created; the totals are the sums of the messages."""
    X, Z = _shard_problem()
    halves = [slice(0, 20), slice(20, 40)]
    shards = []
    for h, seed in zip(halves, (1, 2), strict=True):
        c, g, x = exact_statistics(Z[h], X[h])
        shards.append(ShardState(Z=Z[h].copy(), counts=c, gram=g, cross=x,
                                 rng=np.random.default_rng(seed), imputed=np.zeros(0)))
    total = [tree_sum(getattr(s, k) for s in shards) for k in ("counts", "gram", "cross")]
    K = Z.shape[1]
    created = {True: 0, False: 0}
    for token in (False, True):
        for _ in range(6):
            message = RoundMessage(
                counts=total[0], gram=total[1], cross=total[2], n_total=40, alpha=8.0,
                beta=1.0, sigma_x=0.5, sigma_a=1.0, n_sweeps=2, window=1, k_max=4,
                refresh_every=100, refresh=True, alone=False, feature_subsample=None,
            )
            before = shards[0]
            new = run_round(ShardData(X=X[halves[0]]), before, message, token)
            assert new.Z.shape[1] >= K
            created[token] += new.Z.shape[1] - K
            # The shard's own statistics, exactly; the input state is untouched.
            c, g, x = exact_statistics(new.Z, X[halves[0]])
            np.testing.assert_array_equal(new.counts, c)
            np.testing.assert_allclose(new.gram, g, atol=1e-9)
            np.testing.assert_allclose(new.cross, x, atol=1e-9)
            assert before.Z.shape[1] == K
            shards[0] = replace_shard(new, K)
    assert created[False] == 0
    assert created[True] > 0


def replace_shard(shard, K):
    """The shard with the features beyond ``K`` dropped (as a test's fixed feature set)."""
    keep = np.arange(K)
    Z = shard.Z[:, keep].copy()
    return ShardState(Z=Z, counts=shard.counts[keep], gram=shard.gram[np.ix_(keep, keep)],
                      cross=shard.cross[keep], rng=shard.rng, imputed=shard.imputed)


def _rounds_with_sampled_hyperparameters(X, n_shards, n_rounds, seed=0,
                                         mode="synchronous"):
    """``n_rounds`` of the estimator's iteration, driven directly: a round, then the root's
    draw of ``A``, ``alpha``, ``sigma_x`` and ``sigma_a`` (``update_state``)."""
    solver = ParallelAcceleratedIBP(n_shards=n_shards, mode=mode)
    rng = np.random.default_rng(seed)
    Z = sample_ibp(X.shape[0], 2.0, 1.0, rng).astype(np.int8)
    state = solver.initialize(X, Z, dict(alpha=2.0, beta=1.0, sigma_x=0.7, sigma_a=1.3), rng)
    sent = []
    for _ in range(n_rounds):
        sent.append(solver._message(state, impute=mode == "asynchronous"))
        solver.sweep(state, rng)
        solver.update_state(state, rng)
    solver.close()
    return solver, state, rng, sent


@pytest.mark.parametrize("mode", ["synchronous", "asynchronous"])
def test_the_hyperparameter_draw_costs_the_shards_no_work_and_statistics_stay_exact(
        block_data, mode):
    """Issue 24: with several shards the root's hyperparameter draw goes out with the next
    round and does not make every shard recompute its statistics (before, each draw set
    the round's ``refresh``, and every asynchronous round had it); the statistics the
    shards keep across rounds stay their exact sums (the numerics bar: 1e-8 after 60
    rounds), and the hyperparameters move."""
    X = block_data - block_data.mean(axis=0)
    solver, state, _, sent = _rounds_with_sampled_hyperparameters(X, 2, 60, mode=mode)
    # The first round rebuilds the shards' statistics from their rows; no later one does,
    # and each round carries the hyperparameters drawn after the one before.
    assert sent[0].refresh and not any(m.refresh for m in sent[1:])
    assert len({m.sigma_x for m in sent}) == len(sent)
    bounds = state.stats["bounds"]
    for p, shard in enumerate(state.stats["shards"]):
        counts, gram, cross = exact_statistics(shard.Z, X[bounds[p]:bounds[p + 1]])
        np.testing.assert_array_equal(shard.counts, counts)
        np.testing.assert_array_equal(shard.gram, gram)
        np.testing.assert_allclose(shard.cross, cross, rtol=0, atol=1e-8)
    live = state.stats["total"]["counts"] > 0
    counts, gram, cross = exact_statistics(state.Z, X)
    total = state.stats["total"]
    np.testing.assert_array_equal(total["counts"][live], counts)
    np.testing.assert_allclose(total["cross"][live], cross, rtol=0, atol=1e-8)
    assert state.n_features > 0
    # A lone shard still refreshes at once (the serial sampler's draws, bit for bit).
    _, _, _, sent_alone = _rounds_with_sampled_hyperparameters(X, 1, 3)
    assert all(m.refresh for m in sent_alone[1:])


@pytest.mark.parametrize("n_shards", [2, 3])
def test_the_roots_hyperparameter_draw_is_the_serial_conditional(block_data, n_shards):
    """From the shards' summed messages the root draws ``A``, ``alpha``, ``sigma_x`` and
    ``sigma_a`` from the conditionals the serial sampler uses (Doshi-Velez 2009, sec. 5.1):
    given the same ``(X, Z)``, hyperparameters and random stream, the same values to 1e-9
    (the residual sum of squares comes from ``sum X^2 - 2 <A, Z^T X> + <A, Z^T Z A>``
    instead of the rows)."""
    X = block_data - block_data.mean(axis=0)
    _, state, _, _ = _rounds_with_sampled_hyperparameters(X, n_shards, 8, seed=n_shards)
    serial = AcceleratedIBP(split_merge=0, complement=False)
    hyper = dict(alpha=state.alpha, beta=state.beta, sigma_x=state.sigma_x,
                 sigma_a=state.sigma_a)
    reference = serial.initialize(X, state.Z.copy(), hyper, np.random.default_rng(0))
    for seed in range(5):
        parallel = ParallelAcceleratedIBP(n_shards=n_shards)
        ours = parallel.initialize(X, state.Z.copy(), hyper, np.random.default_rng(0))
        parallel.sweep(ours, np.random.default_rng(0))  # rows move: messages, not rows
        parallel.close()
        theirs = serial.initialize(X, ours.Z.copy(), hyper, np.random.default_rng(0))
        a = np.random.default_rng(100 + seed)
        b = np.random.default_rng(100 + seed)
        parallel.update_state(ours, a, precision_prior_rate=0.7)
        serial.update_state(theirs, b, precision_prior_rate=0.7)
        for name in ("alpha", "sigma_x", "sigma_a"):
            np.testing.assert_allclose(getattr(ours, name), getattr(theirs, name),
                                       rtol=1e-9, err_msg=name)
        assert a.bit_generator.state == b.bit_generator.state
    assert reference.n_features == state.n_features


def test_tree_sum_is_the_sum():
    values = [np.full(3, float(i)) for i in range(7)]
    np.testing.assert_array_equal(tree_sum(values), np.full(3, 21.0))
    assert tree_sum([5]) == 5


def test_feature_subsampling_still_finds_the_block_shapes():
    X, _, features = make_block_images(n_samples=400, random_state=2)
    est = IBPFactorAnalysis(
        solver=ParallelAcceleratedIBP(n_shards=2, feature_subsample=0.5), n_iter=120,
        random_state=0,
    ).fit(X)
    corr = np.abs(np.corrcoef(np.vstack([features, est.components_]))[:4, 4:])
    assert np.sum(corr.max(axis=1) > 0.9) >= 3


def test_refusals(block_data):
    with pytest.raises(ValueError, match="n_shards=80 is more than the 60 rows"):
        IBPFactorAnalysis(solver=ParallelAcceleratedIBP(n_shards=80), n_iter=2).fit(block_data)
    with pytest.raises(ValueError, match="backend"):
        IBPFactorAnalysis(solver=ParallelAcceleratedIBP(backend="mpi"), n_iter=2).fit(block_data)
    with pytest.raises(ValueError, match="feature_subsample"):
        IBPFactorAnalysis(solver=ParallelAcceleratedIBP(feature_subsample=0.0),
                          n_iter=2).fit(block_data)
    with pytest.raises(ValueError, match="cannot also run in n_jobs=2"):
        IBPFactorAnalysis(solver=ParallelAcceleratedIBP(backend="dask"), n_chains=2, n_jobs=2,
                          n_iter=2).fit(block_data)
    with pytest.raises(ValueError, match="cannot serve likelihood='noisy_or'"):
        IBPFactorAnalysis(solver="parallel_accelerated", likelihood="noisy_or",
                          n_iter=2).fit((block_data > 0).astype(float))


# -- the setting of Doshi-Velez 2009, sec. 5.3: 10,000 block images, half held out, 4 shards

N_ITER = 150


def _block_split():
    X = make_block_images(n_samples=10000, random_state=0)[0]
    return X[:5000], X[5000:]


_HELD_OUT_SOLVERS = {
    # The serial Algorithm 1 that the shards parallelise (the default solver's split-merge
    # and complement moves, issue 20, have no data-parallel counterpart).
    "serial": lambda: AcceleratedIBP(split_merge=0, complement=False),
    "parallel": lambda: ParallelAcceleratedIBP(n_shards=4),
    "asynchronous": lambda: ParallelAcceleratedIBP(n_shards=4, mode="asynchronous"),
}


@functools.cache
def _held_out_fit(name, seed):
    """The fit of the held-out comparison (``N_ITER`` sweeps on the first 5,000 rows),
    made once per test process: the four-shard test and the worker-kill test share it."""
    X_train, _ = _block_split()
    est = IBPFactorAnalysis(solver=_HELD_OUT_SOLVERS[name](), n_iter=N_ITER,
                            random_state=seed)
    return est.fit(X_train)


def test_four_shards_match_the_serial_sampler_on_held_out_block_images():
    """Held-out log-likelihood after the same number of sweeps within 2% of the serial
    sampler's (mean over two seeds), and the posterior of the hyperparameters close.

    Measured (2026-11-25): held-out per row -29.02 / -29.02 serial, -29.12 / -29.65 with
    four synchronous shards (1.2% apart on average), -29.13 / -29.45 asynchronous (1.0%).
    Two-sample KS statistics of the pooled post-burn-in traces against serial, synchronous
    / asynchronous: alpha 0.05 / 0.13, sigma_x 0.34 / 0.31, sigma_a 0.50 / 0.84 (single
    chains of 150 sweeps sit in different modes of sigma_a: means 0.45 serial, 0.41 and
    0.36 parallel), K 0.17 / 0.12 with mean K 9.97 serial, 9.76 and 9.63 parallel: the
    bias toward fewer features of Doshi-Velez 2009, Figs. 5.3-5.5.
    """
    _, X_test = _block_split()
    held_out = {name: [] for name in _HELD_OUT_SOLVERS}
    traces = {name: {} for name in _HELD_OUT_SOLVERS}
    for seed in (0, 1):
        for name in _HELD_OUT_SOLVERS:
            est = _held_out_fit(name, seed)
            held_out[name].append(est.score(X_test))
            for trace in ("alpha", "sigma_x", "sigma_a", "n_features"):
                traces[name].setdefault(trace, []).append(est.traces_[trace][0, N_ITER // 2:])
    serial = np.mean(held_out["serial"])
    print(f"held-out: {held_out}")
    for mode in ("parallel", "asynchronous"):
        ks = {t: ks_2samp(np.concatenate(traces["serial"][t]),
                          np.concatenate(traces[mode][t])).statistic
              for t in traces["serial"]}
        means = {t: (np.concatenate(traces["serial"][t]).mean(),
                     np.concatenate(traces[mode][t]).mean()) for t in traces["serial"]}
        print(f"{mode}: KS against serial {ks}; means (serial, {mode}) {means}")
        assert abs(np.mean(held_out[mode]) - serial) <= 0.02 * abs(serial)
        assert abs(means["sigma_x"][1] - means["sigma_x"][0]) <= 0.02 * means["sigma_x"][0]
        assert abs(means["sigma_a"][1] - means["sigma_a"][0]) <= 0.25 * means["sigma_a"][0]
        assert ks["alpha"] < 0.35
        if mode == "parallel":
            assert means["n_features"][1] <= means["n_features"][0] + 0.5


# -- Dask -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dask_cluster():
    """One LocalCluster of two worker processes for the module (a killed worker is
    restarted by its nanny)."""
    distributed = pytest.importorskip("distributed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
            dashboard_address=None,
        )
        client = distributed.Client(cluster)
    yield cluster, client
    client.close()
    cluster.close()


def test_dask_gives_the_thread_result(block_data, dask_cluster):
    _, client = dask_cluster
    # The default: hyperparameters drawn at the root and sent with the next round.
    settings = dict(n_iter=12, random_state=0, sample_hyperparameters=True)
    for mode in ("synchronous", "asynchronous"):
        solver = ParallelAcceleratedIBP(n_shards=3, sweeps_per_sync=2, mode=mode)
        threads = IBPFactorAnalysis(solver=solver, **settings).fit(block_data)
        solver.set_params(backend="dask", client=client)
        dask = IBPFactorAnalysis(solver=solver, **settings).fit(block_data)
        _assert_same_fit(threads, dask)


def test_killing_a_dask_worker_mid_fit(dask_cluster):
    """A worker process killed during the fit: its shard is sent again from the last
    synchronised state, the fit finishes, and it passes the held-out check. A lost task
    is a pure function of the last synchronised state, so the fit is the undisturbed
    thread fit bit for bit."""
    _, client = dask_cluster
    X_train, X_test = _block_split()
    pids = client.run(os.getpid)
    est = IBPFactorAnalysis(
        solver=ParallelAcceleratedIBP(n_shards=4, backend="dask", client=client),
        n_iter=N_ITER, random_state=0,
    )
    killed = []

    def kill_a_busy_worker():
        # Once the fit has done a few rounds, kill a worker in the middle of a shard's task.
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not killed:
            busy = {w: keys for w, keys in client.processing().items()
                    if any("run_round" in str(k) for k in keys)}
            if busy and time.monotonic() - start > 3.0:
                worker = sorted(busy)[0]
                os.kill(pids[worker], signal.SIGKILL)
                killed.append(worker)
            time.sleep(0.05)

    start = time.monotonic()
    killer = threading.Thread(target=kill_a_busy_worker, daemon=True)
    killer.start()
    est.fit(X_train)
    killer.join()
    assert killed, "no worker was killed during the fit"
    # Usually the kill lands on a running shard task, which the engine sends again from
    # the last synchronised state (n_resent_ >= 1, as in most runs); when it lands just
    # after a task finished, Dask itself recomputes the lost result. Either way the chain
    # must be the undisturbed one, bit for bit.
    print(f"shard tasks re-sent by the engine: {est._solver.n_resent_}")
    assert not est.interrupted_ and est.n_iter_ == N_ITER
    _assert_same_fit(est, _held_out_fit("parallel", 0))
    serial = _held_out_fit("serial", 0)
    assert abs(est.score(X_test) - serial.score(X_test)) <= 0.02 * abs(serial.score(X_test))


def test_a_lost_task_is_sent_again_from_the_roots_copy(dask_cluster, tmp_path):
    """The engine's side of a lost worker, made deterministic: a shard task that fails
    with a worker-loss error (here on its first attempt) is sent again, its rows
    scattered again from the root's copy, and the round goes on with its result."""
    from distributed.comm import CommClosedError

    from sklearn_ibp.distributed._engines import DaskEngine

    _, client = dask_cluster
    marker = str(tmp_path / "lost")

    def shard_task(rows, offset):
        if not os.path.exists(marker):  # the first attempt: as if its worker had died
            open(marker, "w").close()
            raise CommClosedError("the worker holding this shard's rows was lost")
        return float(rows.sum() + offset)

    engine = DaskEngine(client, 2)
    engine.place([np.arange(4.0), np.arange(3.0)])
    assert engine.map(shard_task, [(1.0,), (2.0,)]) == [7.0, 5.0]
    assert engine.n_resent == 1


def test_no_worker_left_stops_like_an_interrupt(block_data):
    distributed = pytest.importorskip("distributed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                           host="127.0.0.1", dashboard_address=None)
        client = distributed.Client(cluster)
    try:
        solver = ParallelAcceleratedIBP(n_shards=2, backend="dask", client=client,
                                     worker_timeout=2.0)
        # The worker loads the kernels on its first task.
        IBPFactorAnalysis(solver=solver, n_iter=2, random_state=0).fit(block_data)
        est = IBPFactorAnalysis(solver=solver, n_iter=100000, burn_in=3, random_state=0)
        stopper = threading.Timer(3.0, cluster.scale, args=(0,))
        stopper.start()
        with pytest.warns(SamplingInterruptedWarning, match="no Dask worker"):
            est.fit(block_data)
        assert est.interrupted_
        assert 0 < est.n_iter_ < 100000
        assert len(est.samples_) >= 1
        est.transform(block_data)  # a usable fitted model
    finally:
        client.close()
        cluster.close()
