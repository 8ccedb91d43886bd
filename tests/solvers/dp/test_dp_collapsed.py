"""Collapsed Gibbs for conjugate DP mixtures (Görür 2007, sec. 3.2.1, Algorithm 3).

1. Prior recovery: with a flat likelihood the number of clusters has the CRP's mean
   ``sum_i alpha / (alpha + i - 1)`` (eq. 3.21 alone).
2. Exact posterior: on six rows in one dimension the histogram of partitions matches the
   enumerated posterior, with the Normal-Wishart base (numba path) and with the isotropic
   normal test base (Python path).
3. The numba path against the Python path: the same predictive numbers, the same chain
   from the same seed (also when the slot arrays grow mid-sweep); rank-one updated Cholesky
   factors against a fresh recomputation after thousands of updates.
4. The state contract, reproducibility, bad input.
"""

import math

import numpy as np
import pytest

from sklearn_ibp.likelihoods._mixture_base import BaseMixtureComponents
from sklearn_ibp.likelihoods._normal_wishart_kernels import (
    add_row,
    allocate_slots,
    empty_slot,
    rebuild_slot,
    remove_row,
)
from sklearn_ibp.likelihoods.normal_wishart import NormalWishartBase
from sklearn_ibp.priors.crp import expected_n_clusters
from sklearn_ibp.solvers.dp.dp_collapsed import CollapsedDP
from tests._mixtures import IsotropicNormalBase, exact_partition_posterior, partition_key
from tests.solvers.test_exact_posterior import chi_square_against
from tests.solvers.test_prior_recovery import batch_means_se


class FlatBase(BaseMixtureComponents):
    """A conjugate base whose likelihood is constant: every marginal and predictive is 1,
    so the posterior over partitions is the CRP prior."""

    name = "flat"
    conjugate = True

    def initialize(self, X, rng) -> None:
        self.n_features = np.asarray(X).shape[1]

    def log_marginal(self, X_k) -> float:
        return 0.0

    def log_predictive(self, X_new, X_k) -> np.ndarray:
        return np.zeros(np.asarray(X_new).reshape(-1, self.n_features).shape[0])

    def log_prior_predictive(self, X) -> np.ndarray:
        return self.log_predictive(X, X[:0])

    def hyperparameters(self) -> dict:
        return {}

    def set_hyperparameters(self, values: dict) -> None:
        pass


def run_chain(solver, base, X, alpha, n_sweeps, seed, record, thin=1, burn_in=0, labels=None):
    """Run ``n_sweeps`` sweeps from ``labels`` (default: one cluster), recording
    ``record(state)`` after every ``thin``-th sweep past ``burn_in``."""
    rng = np.random.default_rng(seed)
    base.initialize(X, rng)
    start = np.zeros(X.shape[0], dtype=int) if labels is None else labels
    state = solver.initialize(X, start, alpha, base, rng)
    out = []
    for sweep in range(1, n_sweeps + 1):
        solver.sweep(state, base, rng)
        if sweep > burn_in and sweep % thin == 0:
            out.append(record(state))
    return state, out


def n_clusters(state):
    return state.n_clusters


def key_of(state):
    return partition_key(state.labels)


# ------------------------------------------------------------------ 1. prior recovery
@pytest.mark.parametrize("alpha, scan_order", [(0.7, "sequential"), (2.5, "random")])
def test_prior_recovered_with_flat_likelihood(alpha, scan_order):
    n_rows = 12
    X = np.zeros((n_rows, 1))
    _, ks = run_chain(CollapsedDP(scan_order=scan_order), FlatBase(), X, alpha, 4000,
                      seed=3, record=n_clusters, burn_in=50)
    ks = np.array(ks)
    expected = expected_n_clusters(n_rows, alpha)
    se = batch_means_se(ks)
    assert abs(ks.mean() - expected) < 4 * se, (ks.mean(), expected, se)
    assert se < 0.04 * expected  # the error bar is tight enough to matter


# ------------------------------------------------------------------ 2. exact posterior
X_TINY = np.array([[-1.9], [-1.4], [-0.2], [0.5], [1.8], [2.3]])
ALPHA_TINY = 1.7
NW_FIXED = dict(location=0.0, precision_scaling=0.5, dof=2.0, scale=0.6,
                sample_hyperparameters=False)
BASES = {
    "normal_wishart": lambda: NormalWishartBase(**NW_FIXED),
    "isotropic_normal": lambda: IsotropicNormalBase(sigma=0.6, tau=2.0),
}


@pytest.fixture(scope="module", params=sorted(BASES))
def tiny_posterior(request):
    base = BASES[request.param]()
    base.initialize(X_TINY, None)
    posterior = exact_partition_posterior(X_TINY, base, ALPHA_TINY)
    assert max(posterior.values()) < 0.25  # spread over many partitions
    return request.param, posterior


def test_histogram_matches_enumerated_posterior(tiny_posterior):
    name, posterior = tiny_posterior
    _, keys = run_chain(CollapsedDP(), BASES[name](), X_TINY, ALPHA_TINY, 3 * 3000,
                        seed=0, record=key_of, thin=3, burn_in=30)
    stat, dof, p_value, _, _ = chi_square_against(posterior, keys)
    assert dof >= 20  # many partitions are tested, not a handful
    assert p_value > 1e-3, (name, stat, dof, p_value)


def test_random_scan_order_matches_enumerated_posterior():
    base = BASES["normal_wishart"]()
    base.initialize(X_TINY, None)
    posterior = exact_partition_posterior(X_TINY, base, ALPHA_TINY)
    _, keys = run_chain(CollapsedDP(scan_order="random"), BASES["normal_wishart"](),
                        X_TINY, ALPHA_TINY, 3 * 3000, seed=1, record=key_of, thin=3,
                        burn_in=30)
    stat, dof, p_value, _, _ = chi_square_against(posterior, keys)
    assert dof >= 20
    assert p_value > 1e-3, (stat, dof, p_value)


# ------------------------------------------------------------------ 3. numba vs Python
@pytest.fixture(scope="module")
def blobs():
    rng = np.random.default_rng(7)
    centres = np.array([[-3.0, 0.0], [0.0, 3.0], [3.0, 0.0]])
    X = np.concatenate([c + 0.8 * rng.normal(size=(14, 2)) for c in centres])
    X.setflags(write=False)
    return X


def test_predictive_numbers_agree_between_paths(blobs):
    rng = np.random.default_rng(1)
    base = NormalWishartBase()
    base.initialize(blobs, rng)
    base.update_hyperparameters(base.sample_prior(3, rng), rng)  # away from the start
    labels = rng.integers(0, 5, blobs.shape[0])
    fast, slow = CollapsedDP(), CollapsedDP(use_kernels=False)
    s_fast = fast.initialize(blobs, labels, 1.0, base, rng)
    s_slow = slow.initialize(blobs, labels, 1.0, base, rng)
    X_new = rng.normal(size=(9, 2)) * 3
    a, b = fast.log_predictive(s_fast, base, X_new), slow.log_predictive(s_slow, base, X_new)
    assert a.shape == (9, s_fast.n_clusters + 1)
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-10)
    for _ in range(5):  # and after sweeps have moved rows by rank-one updates
        fast.sweep(s_fast, base, rng)
    s_slow = slow.initialize(blobs, s_fast.labels, 1.0, base, rng)
    np.testing.assert_allclose(
        fast.log_predictive(s_fast, base, X_new), slow.log_predictive(s_slow, base, X_new),
        rtol=0, atol=1e-10,
    )


@pytest.mark.parametrize("alpha, scan_order", [(0.5, "sequential"), (3.0, "random")])
def test_numba_and_python_paths_draw_the_same_chain(blobs, alpha, scan_order):
    base = NormalWishartBase()
    base.initialize(blobs, None)
    chains = []
    for use_kernels in (True, False):
        rng = np.random.default_rng(11)
        solver = CollapsedDP(scan_order=scan_order, use_kernels=use_kernels)
        start = np.arange(blobs.shape[0]) % 4
        state = solver.initialize(blobs, start, alpha, base, rng)
        history = []
        for _ in range(15):
            solver.sweep(state, base, rng)
            history.append(state.labels.copy())
        chains.append(np.array(history))
    np.testing.assert_array_equal(chains[0], chains[1])
    assert len({tuple(h) for h in chains[0]}) > 5  # the chain moved


def test_paths_agree_when_the_slots_grow_mid_sweep():
    """A high concentration opens far more clusters than the initial 32 slots."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(120, 1)) * 10
    # tight components (sd ~ 0.01) with broadly spread means: nearly every row alone
    base = NormalWishartBase(location=0.0, precision_scaling=1e-6, dof=50.0, scale=1e-4,
                             sample_hyperparameters=False)
    base.initialize(X, rng)
    results = []
    for use_kernels in (True, False):
        rng = np.random.default_rng(3)
        solver = CollapsedDP(use_kernels=use_kernels)
        state = solver.initialize(X, np.zeros(120, int), 40.0, base, rng)
        solver.sweep(state, base, rng)
        solver.sweep(state, base, rng)
        results.append((state.labels.copy(), state.n_clusters))
        if use_kernels:
            assert state.stats["slots"][0].shape[0] > 32  # the slots did grow
    assert results[0][1] > 40
    np.testing.assert_array_equal(results[0][0], results[1][0])


def _fresh_slot(X, labels, s, prior, capacity, D):
    fresh = allocate_slots(capacity, D)
    rebuild_slot(X, labels, s, -1, fresh, prior)
    return fresh


def test_rank_one_updates_agree_with_fresh_factors_after_thousands_of_moves():
    rng = np.random.default_rng(4)
    D = 3
    X = rng.normal(size=(60, D)) * [1.0, 10.0, 0.1] + [5.0, -50.0, 0.0]
    base = NormalWishartBase()
    base.initialize(X, rng)
    prior = base.kernel_hyperparameters(60)
    slots = allocate_slots(2, D)
    empty_slot(0, slots, prior)
    member = np.zeros(60, dtype=np.int64) - 1
    work = np.empty(2 * D)
    for _ in range(6000):
        r = rng.integers(60)
        if member[r] == 0 and slots[0][0] > 1:
            assert remove_row(X[r], 0, slots, prior, work)
            member[r] = -1
        elif member[r] != 0:
            add_row(X[r], 0, slots, prior, work)
            member[r] = 0
    fresh = _fresh_slot(X, member, 0, prior, 2, D)
    for updated, recomputed in zip(slots, fresh, strict=True):
        np.testing.assert_allclose(updated[0], recomputed[0], rtol=1e-8, atol=1e-8)


def test_sweep_statistics_agree_with_a_fresh_recomputation(blobs):
    """Many sweeps of a mobile chain (every move is a downdate and an update)."""
    rng = np.random.default_rng(5)
    base = NormalWishartBase()
    base.initialize(blobs, rng)
    solver = CollapsedDP()
    state = solver.initialize(blobs, rng.integers(0, 3, blobs.shape[0]), 5.0, base, rng)
    moves = 0
    for _ in range(300):
        before = state.labels.copy()
        solver.sweep(state, base, rng)
        moves += int(np.sum(before != state.labels))
    assert moves > 2000
    K = state.n_clusters
    fresh = allocate_slots(K, 2)
    for k in range(K):
        rebuild_slot(state.X, state.labels, k, -1, fresh, state.stats["prior"])
    for updated, recomputed in zip(state.stats["slots"], fresh, strict=True):
        np.testing.assert_allclose(updated[:K], recomputed[:K], rtol=1e-8, atol=1e-8)


def test_cluster_parameters_from_the_statistics_match_the_base(blobs):
    rng = np.random.default_rng(6)
    base = NormalWishartBase()
    base.initialize(blobs, rng)
    solver = CollapsedDP()
    state = solver.initialize(blobs, np.arange(blobs.shape[0]) % 4, 1.0, base, rng)
    for _ in range(3):
        solver.sweep(state, base, rng)
    ours = solver.cluster_parameters(state, base, np.random.default_rng(0))
    reference = base.sample_posterior_all(state.X, state.labels, state.n_clusters,
                                          np.random.default_rng(0))
    for name in ("means", "precisions"):
        np.testing.assert_allclose(ours[name], reference[name], rtol=1e-9, atol=1e-12)


def test_set_hyperparameters_refreshes_the_statistics(blobs):
    rng = np.random.default_rng(8)
    base = NormalWishartBase()
    base.initialize(blobs, rng)
    solver = CollapsedDP()
    state = solver.initialize(blobs, np.arange(blobs.shape[0]) % 3, 1.0, base, rng)
    base.update_hyperparameters(solver.cluster_parameters(state, base, rng), rng)
    solver.set_hyperparameters(state, base)
    slow = CollapsedDP(use_kernels=False)
    reference = slow.log_predictive(slow.initialize(blobs, state.labels, 1.0, base, rng),
                                    base, blobs[:4])
    np.testing.assert_allclose(solver.log_predictive(state, base, blobs[:4]), reference,
                               atol=1e-10)
    # a change the solver was not told about is noticed too
    base.set_hyperparameters({**base.hyperparameters(), "dof": 7.0})
    reference = slow.log_predictive(slow.initialize(blobs, state.labels, 1.0, base, rng),
                                    base, blobs[:4])
    np.testing.assert_allclose(solver.log_predictive(state, base, blobs[:4]), reference,
                               atol=1e-10)


# ------------------------------------------------------------------ 4. contract
@pytest.mark.parametrize("use_kernels", [True, False])
def test_state_contract_and_reproducibility(blobs, use_kernels):
    def run(seed):
        base = NormalWishartBase()
        rng = np.random.default_rng(seed)
        base.initialize(blobs, rng)
        solver = CollapsedDP(use_kernels=use_kernels)
        state = solver.initialize(blobs, rng.integers(0, 6, blobs.shape[0]), 1.0, base, rng)
        history = []
        for _ in range(8):
            solver.sweep(state, base, rng)
            K = state.n_clusters
            assert state.labels.dtype == np.int64
            assert set(np.unique(state.labels)) == set(range(K))  # no gaps, none empty
            assert np.all(state.counts > 0) and state.counts.sum() == blobs.shape[0]
            # labels in order of first appearance
            assert np.array_equal(np.unique(state.labels, return_index=True)[1],
                                  np.sort(np.unique(state.labels, return_index=True)[1]))
            params = solver.cluster_parameters(state, base, rng)
            assert params["means"].shape == (K, 2)
            base.update_hyperparameters(params, rng)
            solver.set_hyperparameters(state, base)
            history.append(state.labels.copy())
        return np.array(history)

    first = run(0)
    np.testing.assert_array_equal(first, run(0))  # bit for bit
    assert not np.array_equal(first, run(1))
    assert len({tuple(h) for h in first}) > 4  # the chain moved


def test_bad_input():
    X = np.zeros((4, 1))
    solver = CollapsedDP()

    class NonConjugate(FlatBase):
        name = "not_conjugate"
        conjugate = False

    with pytest.raises(ValueError, match="conjugate"):
        solver.initialize(X, np.zeros(4, int), 1.0, NonConjugate(), None)
    base = FlatBase()
    base.initialize(X, None)
    with pytest.raises(ValueError, match="labels"):
        solver.initialize(X, np.zeros(3, int), 1.0, base, None)
    with pytest.raises(ValueError, match="alpha"):
        solver.initialize(X, np.zeros(4, int), -1.0, base, None)
    with pytest.raises(ValueError, match="scan_order"):
        CollapsedDP(scan_order="backwards").initialize(X, np.zeros(4, int), 1.0, base,
                                                            None)
    assert math.isclose(solver.initialize(X, [5, 5, 2, 9], 1.0, base, None).n_clusters, 3)
