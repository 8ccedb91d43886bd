"""The Dask row store (issue 24): every pass over rows it runs on the workers gives the bits
of the sub-cluster driver's in-memory pass, for any chunking, on a LocalCluster of threads
and of processes (tiny blocks, so that blocks straddle chunks)."""

import warnings

import numpy as np
import pytest

from sklearn_ibp.solvers.dp._dp_subcluster_kernels import (
    ARGMAX,
    SAMPLE,
    SCORE_FORCED,
    STATS_ONLY,
    lowest_log_slices,
    nth_row,
    pair_members,
)
from sklearn_ibp.solvers.dp.dp_subcluster import _EMPTY_INT, SubclusterDP

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

from sklearn_ibp.distributed.dask_rows import DaskRows  # noqa: E402


def _one_component(D):
    """Dummy single-component arguments of a STATS_ONLY pass."""
    return np.zeros((1, D)), np.zeros((1, D, D)), np.zeros(1)


BLOCK = 16
N, D, K = 300, 2, 4


@pytest.fixture(scope="module", params=[False, True], ids=["threads", "processes"])
def client(request):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        where = {"host": "127.0.0.1"} if request.param else {}  # processes on loopback
        cluster = distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=request.param,
            dashboard_address=None, **where)
        client = distributed.Client(cluster)
    yield client
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        client.close()
        cluster.close()


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, D)) + 3.0 * rng.integers(0, 4, N)[:, None]
    return X, rng.integers(0, K, N)


def _solver():
    solver = SubclusterDP()
    solver.block_size = BLOCK
    return solver


def _components(rng, C):
    means = rng.normal(scale=3.0, size=(C, D)) + 4.5
    chols = np.stack([np.tril(0.3 * rng.normal(size=(D, D))) + np.eye(D) for _ in range(C)])
    return means, chols, rng.normal(size=C)


def _assert_same(expected, got):
    assert len(expected) == len(got)
    for a, b in zip(expected, got, strict=True):
        np.testing.assert_array_equal(np.asarray(b), np.asarray(a))


@pytest.mark.parametrize("chunk_blocks", [3, 40])
def test_statistics_and_row_step_give_the_drivers_bits(client, data, chunk_blocks):
    X, labels = data
    X_before, labels_before = X.copy(), labels.copy()
    solver = _solver()
    shift = X.mean(axis=0)
    store = DaskRows(da.from_array(X, chunks=(70, 1)), client, block_size=BLOCK,
                     chunk_blocks=chunk_blocks, shift=shift)
    assert store.lengths.sum() == N
    assert (store.lengths[:-1] % BLOCK == 0).all()
    store.set_labels(labels)
    _assert_same(solver._pass(X, shift, _EMPTY_INT, N, _one_component(D), 0, labels,
                              STATS_ONLY, np.empty(N, dtype=np.int64), K),
                 store.statistics(K))
    rng = np.random.default_rng(chunk_blocks)
    C = K + 2
    log_pi = np.log(rng.dirichlet(np.ones(C)))
    lows = np.empty(solver._blocks(N))
    lowest_log_slices(labels, np.int64(0), log_pi, np.uint64(77), np.int64(BLOCK), lows)
    assert store.lowest_log_slice(log_pi, 77) == lows.min()
    comps = _components(rng, C)
    new = np.empty(N, dtype=np.int64)
    expected = solver._pass(X, shift, _EMPTY_INT, N, comps, 123, _EMPTY_INT, SAMPLE, new, C,
                            slice_args=(labels, log_pi, 77))
    _assert_same(expected, store.row_step(comps, 123, log_pi, 77))
    assert len(np.unique(new)) > 2  # the draw is not trivial
    np.testing.assert_array_equal(store.gather_labels(), new)
    lazy = store.labels()
    assert isinstance(lazy, da.Array) and lazy.shape == (N,)
    np.testing.assert_array_equal(lazy.compute(), new)
    np.testing.assert_array_equal(X, X_before)
    np.testing.assert_array_equal(labels, labels_before)


@pytest.mark.parametrize("chunk_blocks", [1, 4])
def test_passes_over_two_clusters_give_the_drivers_bits(client, data, chunk_blocks):
    """A proposal's passes, stage by stage: the union's statistics with the anchors first,
    deterministic scans, the sampled split, the scores of the current and of the last
    sides; then the accepted move applied on the workers."""
    X, labels = data
    solver = _solver()
    shift = X.mean(axis=0)
    store = DaskRows(X, client, block_size=BLOCK, chunk_blocks=chunk_blocks, shift=shift)
    store.set_labels(labels)
    rng = np.random.default_rng(10 + chunk_blocks)
    ci, cj = 1, 3
    i, j = int(np.flatnonzero(labels == ci)[5]), int(np.flatnonzero(labels == cj)[-2])
    scratch, sides = np.empty(N, dtype=np.int64), np.empty(N, dtype=np.int64)
    m = pair_members(labels, ci, cj, i, j, scratch, sides)
    members, current = scratch[:m].copy(), sides[:m].copy()
    assert m > 4 * BLOCK
    rows = store.select((ci, cj), exclude=(i, j))
    assert rows.n_members == m
    np.testing.assert_array_equal(rows.global_rows(), members)
    np.testing.assert_array_equal(rows.current(), current)
    np.testing.assert_array_equal(store.rows([i, j]), X[[i, j]])
    np.testing.assert_array_equal(store.labels_at([j, i]), [cj, ci])
    n_ci = int(np.sum(labels == ci))
    for rank in (0, 1, n_ci // 2, n_ci - 2, n_ci - 1):
        assert store.nth_row(ci, rank, i) == nth_row(labels, ci, rank, i)
        assert store.nth_row(ci, rank) == nth_row(labels, ci, rank, -1)

    union = np.concatenate([[i, j], members]).astype(np.int64)
    _assert_same(
        solver._pass(X, shift, union, m + 2, _one_component(D), 0,
                     np.zeros(m + 2, dtype=np.int64), STATS_ONLY,
                     np.empty(m + 2, dtype=np.int64), 1),
        rows.run(_one_component(D), 0, STATS_ONLY, 1, forced=0, lead=([i, j], [0, 0])))
    side = np.empty(m, dtype=np.int64)
    for _ in range(2):
        comps = _components(rng, 2)
        _assert_same(solver._pass(X, shift, members, m, comps, 0, _EMPTY_INT, ARGMAX, side,
                                  2), rows.run(comps, 0, ARGMAX, 2))
        np.testing.assert_array_equal(rows.last_array(), side)
    comps = _components(rng, 2)
    _assert_same(solver._pass(X, shift, members, m, comps, 99, _EMPTY_INT, SAMPLE, side, 2),
                 rows.run(comps, 99, SAMPLE, 2))
    np.testing.assert_array_equal(rows.last_array(), side)
    assert 0 < side.sum() < m
    sampled = side.copy()
    comps = _components(rng, 2)
    _assert_same(solver._pass(X, shift, members, m, comps, 0, sampled, SCORE_FORCED,
                              np.empty(m, dtype=np.int64), 2),
                 rows.run(comps, 0, SCORE_FORCED, 2, forced="last"))
    _assert_same(solver._pass(X, shift, members, m, comps, 0, current, SCORE_FORCED,
                              np.empty(m, dtype=np.int64), 2),
                 rows.run(comps, 0, SCORE_FORCED, 2, forced="current"))

    # an accepted split of ci along the sampled sides (its side-0 rows and i to label K),
    # then a merge of cj into ci, then dropping the emptied label
    expected = labels.copy()
    store_split = store.select((ci, cj), exclude=(i, j))
    store_split.run(comps, 99, SAMPLE, 2)
    rows_sampled = store_split.last_array()
    store_split.assign([K, -1])
    store.set_rows([i], K)
    expected[members[rows_sampled == 0]] = K
    expected[i] = K
    np.testing.assert_array_equal(store.gather_labels(), expected)
    merge = store.select((ci, cj), exclude=(i, j))
    merge.assign([-1, ci], sides="current")
    store.set_rows([j], ci)
    expected[np.flatnonzero(expected == cj)] = ci
    np.testing.assert_array_equal(store.gather_labels(), expected)
    table = np.cumsum(np.bincount(expected, minlength=K + 1) > 0) - 1
    store.relabel(table)
    np.testing.assert_array_equal(store.gather_labels(), table[expected])


def test_bad_arguments_are_named(client, data):
    X, labels = data
    store = DaskRows(X, client, block_size=BLOCK, chunk_blocks=2)
    np.testing.assert_allclose(store.shift, X.mean(axis=0), rtol=1e-12)
    with pytest.raises(ValueError, match="labels must be"):
        store.set_labels(labels[:-1])
    store.set_labels(0)
    np.testing.assert_array_equal(store.statistics(1)[0], [N])
    rows = store.select((0,))
    with pytest.raises(ValueError, match="C is 1"):
        rows.run(_one_component(D), 0, STATS_ONLY, 1, forced=1)
    with pytest.raises(ValueError, match="need forced"):
        rows.run(_one_component(D), 0, STATS_ONLY, 1)
    with pytest.raises(ValueError, match="rows must be in"):
        store.rows([N])
    with pytest.raises(ValueError, match="block_size"):
        DaskRows(X, client, block_size=0)
    with pytest.raises(ValueError, match="2-D"):
        DaskRows(X[:, 0], client)


def test_a_killed_worker_costs_time_not_bits(client, data):
    """The scheduler makes a dead worker's chunks and labels again from their lineage (pure
    tasks): the row steps and statistics after the loss are those of an undisturbed run."""
    import os
    import signal
    import time

    if all(pid == os.getpid() for pid in client.run(os.getpid).values()):
        pytest.skip("the workers are threads of this process")
    X, _ = data
    rng = np.random.default_rng(3)
    C = 5
    comps = _components(rng, C)
    log_pi = np.log(np.full(C, 1.0 / C))

    def run(kill):
        store = DaskRows(X, client, block_size=BLOCK, chunk_blocks=2, shift=X.mean(axis=0))
        store.set_labels(0)
        out = []
        for step in range(3):
            out.append(store.row_step(comps, 10 + step, log_pi, 20 + step))
            if kill and step == 1:
                os.kill(min(client.run(os.getpid).values()), signal.SIGKILL)
                time.sleep(0.5)
        out.append(store.statistics(C))
        return out, store.gather_labels()

    undisturbed, labels = run(False)
    workers = set(client.scheduler_info()["workers"])
    survived, labels_after = run(True)
    assert set(client.scheduler_info()["workers"]) != workers  # one was lost
    for a, b in zip(undisturbed, survived, strict=True):
        _assert_same(a, b)
    np.testing.assert_array_equal(labels_after, labels)


class _TinyBlocks(SubclusterDP):
    block_size = 32


def _run_chain(X, rows, n_iter, seed=0):
    """``n_iter`` sweeps (and hyperparameter updates) of the sub-cluster sampler from one
    cluster, on ``rows`` (a DaskRows store, or X itself)."""
    from sklearn_ibp.likelihoods.normal_wishart import NormalWishartBase

    base = NormalWishartBase()
    base.initialize(X)
    solver = _TinyBlocks(n_proposals=3)
    rng = np.random.default_rng(seed)
    start = 0 if rows is not X else np.zeros(X.shape[0], dtype=np.int64)
    state = solver.initialize(rows, start, 1.0, base, rng)
    record = []
    for _ in range(n_iter):
        solver.sweep(state, base, rng)
        solver.update_state(state, base, rng)
        st = state.stats
        record.append((state.n_clusters, state.alpha, st["counts"].copy(), st["sums"].copy(),
                       st["scatters"].copy(), dict(st["subcluster"])))
    labels = state.labels if rows is X else rows.gather_labels()
    return record, labels


def test_a_chain_on_the_store_is_the_in_memory_chain(client):
    """The sub-cluster driver on the row store (four chunks of two blocks, so that stages
    and anchors' segments straddle chunks) is the in-memory chain, bit for bit: the row
    steps, splits and merges, the block-wise anchors and the accepted moves."""
    rng = np.random.default_rng(5)
    n = 240
    centres = np.array([[0.0, 0.0], [6.0, 0.0], [0.0, 6.0]])
    X = centres[rng.integers(0, 3, n)] + rng.normal(size=(n, 2))
    before = X.copy()
    expected, labels = _run_chain(X, X, 3)
    moves = expected[-1][5]
    assert moves["splits_accepted"] >= 2  # the chain moved
    store = DaskRows(da.from_array(X, chunks=(50, 2)), client, block_size=32, chunk_blocks=2,
                     shift=X.mean(axis=0))
    assert store.n_chunks == 4
    got, got_labels = _run_chain(X, store, 3)
    for a, b in zip(expected, got, strict=True):
        assert a[0] == b[0] and a[1] == b[1] and a[5] == b[5]
        for x, y in zip(a[2:5], b[2:5], strict=True):
            np.testing.assert_array_equal(y, x)
    np.testing.assert_array_equal(got_labels, labels)
    np.testing.assert_array_equal(X, before)


def test_member_stages_are_stage_order():
    from sklearn_ibp.solvers.dp._dp_subcluster_kernels import member_stages, stage_order
    from sklearn_ibp.solvers.dp._dp_subcluster_rows import n_stages_of

    members = np.sort(np.random.default_rng(1).choice(10**6, 3000, replace=False))
    m = members.shape[0]
    order = np.empty(m, dtype=np.int64)
    bounds = np.empty(n_stages_of(m) + 1, dtype=np.int64)
    n_stages = stage_order(np.uint64(42), members, order, bounds)
    stage = np.empty(m, dtype=np.int64)
    member_stages(np.uint64(42), members, np.int64(m), np.int64(n_stages), stage)
    for t in range(n_stages):
        np.testing.assert_array_equal(np.flatnonzero(stage == t),
                                      order[bounds[t]:bounds[t + 1]])


def test_block_wise_anchor_norms_and_picks():
    """One segment gives the whole-array expressions of before, to the bit; several give
    the log normaliser to rounding and picks that follow the weights."""
    from scipy.special import logsumexp

    from sklearn_ibp.solvers.dp._dp_subcluster_rows import (
        anchor_parts,
        choose_segment,
        combine_norms,
        pick_in_segment,
        segment_masses,
    )

    rng = np.random.default_rng(2)
    X = rng.normal(size=(500, 2))
    rows = np.sort(rng.choice(500, 300, replace=False)).astype(np.int64)
    sides = rng.integers(0, 2, 300)
    means, chols = np.array([[0.0, 0.0], [1.0, 1.0]]), np.stack([np.eye(2)] * 2)
    for block_size, exact in ((10**6, True), (64, False)):
        w, parts = anchor_parts(X, rows, sides, rows, block_size, means, chols, 2)
        norms = combine_norms([parts])
        for t in range(2):
            values = w[sides == t]
            top = values.max()
            whole = top + np.log(float(np.sum(np.exp(values - top))))
            if exact:
                assert norms[t] == whole
            else:
                assert parts[0].shape[0] == 8
                np.testing.assert_allclose(norms[t], logsumexp(values), rtol=1e-13)
            # the pick at u in the middle of the row k's mass is row k, for every k
            at = np.flatnonzero(sides == t)
            mass = np.exp(values - norms[t])
            edges = np.concatenate([[0.0], np.cumsum(mass)])
            total = sum(segment_masses(w, sides, rows, block_size, norms[t], t)[1])
            for k in range(0, at.size, 7):
                r = 0.5 * (edges[k] + edges[k + 1]) / total
                segment, u = choose_segment([segment_masses(w, sides, rows, block_size,
                                                            norms[t], t)], r)
                p, value = pick_in_segment(w, sides, rows, block_size, norms[t], t, segment,
                                           u)
                assert p == at[k] and value == w[at[k]]


def test_gather_rows_in_the_order_given(client, data):
    X, _ = data
    store = DaskRows(da.from_array(X, chunks=(70, 2)), client, block_size=BLOCK,
                     shift=X.mean(axis=0))
    rows = np.array([299, 0, 71, 70, 5, 140, 139])
    np.testing.assert_array_equal(store.gather_rows(rows), X[rows])
    with pytest.raises(ValueError, match="rows must be in"):
        store.gather_rows([300])


def test_a_cluster_start_on_the_store_is_the_in_memory_start(client, data):
    """A ClusterStart (the nested-subsample start's clusters) draws every row on the
    workers as the in-memory initialisation does, bit for bit, and puts the rows of
    well-separated clusters where their clusters are."""
    from sklearn_ibp.likelihoods.normal_wishart import NormalWishartBase
    from sklearn_ibp.solvers.dp.nested_start import ClusterStart

    X, _ = data
    truth = np.clip(np.rint(X.mean(axis=1) / 3.0), 0, 3).astype(int)  # the four groups
    base = NormalWishartBase()
    base.initialize(X, np.random.default_rng(0))
    shift = X.mean(axis=0)
    Z = X - shift
    K_true = truth.max() + 1
    start = ClusterStart(
        np.bincount(truth, minlength=K_true),
        np.stack([Z[truth == k].sum(0) for k in range(K_true)]),
        np.stack([Z[truth == k].T @ Z[truth == k] for k in range(K_true)]), shift)
    solver = _solver()
    in_memory = solver.initialize(X, start, 1.0, base, np.random.default_rng(3))
    store = DaskRows(da.from_array(X, chunks=(70, 2)), client, block_size=BLOCK,
                     shift=shift)
    on_store = solver.initialize(store, start, 1.0, base, np.random.default_rng(3))
    np.testing.assert_array_equal(store.gather_labels(), in_memory.labels)
    for name in ("counts", "sums", "scatters"):
        np.testing.assert_array_equal(on_store.stats[name], in_memory.stats[name])
    assert on_store.n_clusters == in_memory.n_clusters
    # the state's statistics (the drawing pass's) are those of its labels
    np.testing.assert_array_equal(
        in_memory.stats["counts"], np.bincount(in_memory.labels, minlength=in_memory.n_clusters))
    np.testing.assert_allclose(
        in_memory.stats["sums"],
        np.stack([Z[in_memory.labels == k].sum(0) for k in range(in_memory.n_clusters)]),
        atol=1e-9)
    # rows far from the groups' boundaries are in their group's cluster
    clear = np.abs(X.mean(axis=1) / 3.0 - truth) < 0.25
    from sklearn.metrics import adjusted_rand_score

    assert adjusted_rand_score(truth[clear], in_memory.labels[clear]) > 0.95
