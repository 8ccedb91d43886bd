"""Restricted-Gibbs split-merge sampling for conjugate DP mixtures (Jain and Neal 2004).

1. Prior recovery with a flat likelihood: E[K] is the CRP's ``sum_i alpha/(alpha+i-1)``,
   for full sweeps and for the split-merge moves alone.
2. Exact posterior on six rows in one dimension, with the Normal-Wishart base (numba path)
   and the isotropic normal test base (Python path); and the split-merge moves alone
   (no Gibbs sweep), which must leave the posterior invariant by themselves.
3. The numba and Python paths make the same proposals and decisions from the same seed.
4. From one cluster holding two well separated groups, split-merge separates them in a
   few sweeps, where collapsed Gibbs alone stays stuck; the statistics kept through
   accepted moves equal a fresh recomputation.
"""

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

from sklearn_ibp.likelihoods.normal_wishart import NormalWishartBase
from sklearn_ibp.priors.crp import expected_n_clusters
from sklearn_ibp.solvers.dp.dp_collapsed import CollapsedDP
from sklearn_ibp.solvers.dp.dp_split_merge import SplitMergeDP
from tests._mixtures import exact_partition_posterior, partition_key
from tests.solvers.dp.test_dp_collapsed import (
    ALPHA_TINY,
    BASES,
    X_TINY,
    FlatBase,
    key_of,
    n_clusters,
    run_chain,
)
from tests.solvers.test_exact_posterior import chi_square_against
from tests.solvers.test_prior_recovery import batch_means_se


class ProposalsOnly(SplitMergeDP):
    """The split-merge moves without the Gibbs sweep: they must be exact on their own."""

    def sweep(self, state, base, rng):
        self.propose(state, base, rng)


# ------------------------------------------------------------------ 1. prior recovery
@pytest.mark.parametrize(
    "solver, alpha",
    [(SplitMergeDP(n_proposals=2, n_intermediate=2), 1.5),
     (ProposalsOnly(n_proposals=3, n_intermediate=1), 1.5),
     (ProposalsOnly(n_proposals=3, n_intermediate=1, launch="random"), 0.8)],
    ids=["with_gibbs", "proposals_only", "proposals_only_random_launch"],
)
def test_prior_recovered_with_flat_likelihood(solver, alpha):
    n_rows = 10
    state, ks = run_chain(solver, FlatBase(), np.zeros((n_rows, 1)), alpha, 3000, seed=4,
                          record=n_clusters, burn_in=50)
    ks = np.array(ks)
    expected = expected_n_clusters(n_rows, alpha)
    se = batch_means_se(ks)
    assert abs(ks.mean() - expected) < 4 * se, (ks.mean(), expected, se)
    assert se < 0.04 * expected
    log = state.stats["split_merge"]
    assert log["splits_accepted"] > 200 and log["merges_accepted"] > 200  # moves happened


# ------------------------------------------------------------------ 2. exact posterior
@pytest.fixture(scope="module", params=sorted(BASES))
def tiny_posterior(request):
    base = BASES[request.param]()
    base.initialize(X_TINY, None)
    return request.param, exact_partition_posterior(X_TINY, base, ALPHA_TINY)


def test_histogram_matches_enumerated_posterior(tiny_posterior):
    name, posterior = tiny_posterior
    solver = SplitMergeDP(n_proposals=2, n_intermediate=2)
    n_samples, thin = (3000, 3) if name == "normal_wishart" else (2000, 2)
    state, keys = run_chain(solver, BASES[name](), X_TINY, ALPHA_TINY, n_samples * thin,
                            seed=1, record=key_of, thin=thin, burn_in=20)
    stat, dof, p_value, _, _ = chi_square_against(posterior, keys)
    assert dof >= 20
    assert p_value > 1e-3, (name, stat, dof, p_value)
    log = state.stats["split_merge"]
    assert log["splits_accepted"] + log["merges_accepted"] > 0.05 * log["proposals"]


@pytest.mark.parametrize("launch", ["sequential", "random"])
def test_split_merge_moves_alone_leave_the_posterior_invariant(launch):
    base = BASES["normal_wishart"]()
    base.initialize(X_TINY, None)
    posterior = exact_partition_posterior(X_TINY, base, ALPHA_TINY)
    solver = ProposalsOnly(n_proposals=4, n_intermediate=2, launch=launch)
    state, keys = run_chain(solver, BASES["normal_wishart"](), X_TINY, ALPHA_TINY, 4 * 3000,
                            seed=2, record=key_of, thin=4, burn_in=20)
    stat, dof, p_value, _, _ = chi_square_against(posterior, keys)
    assert dof >= 20
    assert p_value > 1e-3, (stat, dof, p_value)
    log = state.stats["split_merge"]
    assert log["splits_accepted"] > 1000 and log["merges_accepted"] > 1000


# ------------------------------------------------------------------ 3. numba vs Python
@pytest.mark.parametrize("launch", ["sequential", "random"])
def test_numba_and_python_paths_make_the_same_moves(launch):
    rng = np.random.default_rng(1)
    X = np.concatenate([rng.normal(0, 1, (12, 2)), rng.normal(4, 1, (12, 2))])
    base = NormalWishartBase()
    base.initialize(X, rng)
    runs = []
    for use_kernels in (True, False):
        rng = np.random.default_rng(5)
        solver = SplitMergeDP(n_proposals=6, n_intermediate=3, launch=launch,
                              use_kernels=use_kernels)
        state = solver.initialize(X, np.zeros(X.shape[0], int), 1.0, base, rng)
        history = []
        for _ in range(8):
            solver.propose(state, base, rng)
            history.append(state.labels.copy())
            solver.sweep(state, base, rng)
            history.append(state.labels.copy())
        runs.append((np.array(history), dict(state.stats["split_merge"])))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    assert runs[0][1] == runs[1][1]
    assert runs[0][1]["splits_accepted"] > 3 and runs[0][1]["merges_accepted"] > 3


def test_statistics_after_accepted_moves_match_a_fresh_recomputation():
    rng = np.random.default_rng(2)
    X = np.concatenate([rng.normal(0, 1, (30, 3)), rng.normal(3, 1, (30, 3))])
    base = NormalWishartBase()
    base.initialize(X, rng)
    solver = SplitMergeDP(n_proposals=10, n_intermediate=3)
    state = solver.initialize(X, np.zeros(60, int), 2.0, base, rng)
    for _ in range(60):
        solver.propose(state, base, rng)
    log = state.stats["split_merge"]
    assert log["splits_accepted"] + log["merges_accepted"] > 20
    reference = CollapsedDP(use_kernels=False)
    ref_state = reference.initialize(X, state.labels, 2.0, base, rng)
    X_new = rng.normal(size=(5, 3)) * 2
    np.testing.assert_allclose(solver.log_predictive(state, base, X_new),
                               reference.log_predictive(ref_state, base, X_new), atol=1e-9)


# ------------------------------------------------------------------ 4. splitting
@pytest.fixture(scope="module")
def two_groups():
    rng = np.random.default_rng(3)
    X = np.concatenate([rng.normal([-3.0, 0.0], 1.0, (100, 2)),
                        rng.normal([3.0, 0.0], 1.0, (100, 2))])
    X.setflags(write=False)
    return X, np.repeat([0, 1], 100)


def _fixed_base():
    # Components about as wide as each group; means spread broadly.
    return NormalWishartBase(location=0.0, precision_scaling=0.05, dof=10.0, scale=1.0,
                             sample_hyperparameters=False)


def test_split_merge_separates_two_groups_where_gibbs_is_stuck(two_groups):
    X, truth = two_groups
    start = np.zeros(X.shape[0], dtype=int)
    record = lambda s: s.labels.copy()  # noqa: E731
    _, split_merge = run_chain(SplitMergeDP(), _fixed_base(), X, 1.0, 3, seed=0,
                               labels=start, record=record)
    assert all(adjusted_rand_score(truth, labels) > 0.9 for labels in split_merge)
    _, gibbs = run_chain(CollapsedDP(), _fixed_base(), X, 1.0, 3, seed=0,
                         labels=start, record=record)
    assert adjusted_rand_score(truth, gibbs[-1]) < 0.1  # one indicator at a time: stuck
    # It is the moves' doing: five proposals and no Gibbs sweep separate the groups.
    _, moves = run_chain(ProposalsOnly(n_proposals=5), _fixed_base(), X, 1.0, 1, seed=0,
                         labels=start, record=record)
    assert adjusted_rand_score(truth, moves[-1]) > 0.9
    # Jain and Neal's random launch needs more: on 200 rows its halves look alike.
    _, random_launch = run_chain(ProposalsOnly(n_proposals=5, launch="random"), _fixed_base(),
                                 X, 1.0, 1, seed=0, labels=start, record=record)
    assert adjusted_rand_score(truth, random_launch[-1]) < adjusted_rand_score(truth, moves[-1])


def test_contract_reproducibility_and_parameters(two_groups):
    X, _ = two_groups

    def run(seed):
        _, history = run_chain(SplitMergeDP(n_proposals=3), NormalWishartBase(), X, 1.0, 4,
                               seed=seed, record=lambda s: s.labels.copy())
        return np.array(history)

    first = run(0)
    np.testing.assert_array_equal(first, run(0))
    for labels in first:
        K = labels.max() + 1
        assert set(np.unique(labels)) == set(range(K))
        assert partition_key(labels) == tuple(labels)  # first-appearance order
    solver = SplitMergeDP(n_proposals=-1)
    with pytest.raises(ValueError, match="n_proposals"):
        solver.initialize(X, np.zeros(X.shape[0], int), 1.0, _fixed_base(), None)
    assert SplitMergeDP().get_params() == {
        "launch": "sequential", "n_intermediate": 5, "n_proposals": 5,
        "scan_order": "sequential", "use_kernels": True,
    }
    with pytest.raises(ValueError, match="launch"):
        SplitMergeDP(launch="nearest").initialize(X, np.zeros(X.shape[0], int), 1.0,
                                                  _fixed_base(), None)
    assert SplitMergeDP.name == "split_merge" and SplitMergeDP.bases == ("conjugate",)
