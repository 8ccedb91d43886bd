"""The nested-subsample start of a DP mixture chain (``DPMixture(init="subsample")``).

1. The new rows of a doubling go to the cluster of highest weighted density.
2. The start's contract: a partition of every row, reproducible for a seed, ``X``
   untouched; with ``N <= first_size`` it is the first partition itself.
3. What it is for: on overlapping Gaussians at a size where the sub-cluster chain from one
   cluster keeps cut Gaussians, the chain from the nested start holds the true clusters
   (and the single start, same seeds and sweeps, does not: the test can tell them apart).
4. The estimator: ``init="auto"`` is the nested start for ``solver="subcluster"``;
   ``init="subsample"`` serves split-merge too and is refused for a solver that does not
   split (its subsample chains could not leave their one cluster).
"""

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

from sklearn_ibp import DPMixture
from sklearn_ibp.likelihoods.normal_wishart import NormalWishartBase
from sklearn_ibp.solvers.dp import SliceDP, SubclusterDP
from sklearn_ibp.solvers.dp.nested_start import _assign_rows, nested_subsample_start


def _blobs(n, seed=0):
    rng = np.random.default_rng(seed)
    centres = np.array([[0.0, 0.0], [8.0, 0.0], [0.0, 8.0], [8.0, 8.0]])
    y = rng.integers(0, 4, n)
    return centres[y] + rng.standard_normal((n, 2)), y


def _overlapping(n, seed):
    """Eight 2-D Gaussians as in benchmarks/bench_dp_mixture.py: centres at least 4.5
    apart, rotated covariances with standard deviations 0.5-1.5, Dirichlet(5) weights (the
    Bayes classifier's ARI is about 0.97)."""
    rng = np.random.default_rng(0)
    centres = []
    while len(centres) < 8:
        c = rng.normal(scale=1.3 * 4.5 / 2.0, size=2)
        if all(np.linalg.norm(c - o) >= 4.5 for o in centres):
            centres.append(c)
    covs = []
    for _ in range(8):
        Q, _ = np.linalg.qr(rng.standard_normal((2, 2)))
        covs.append((Q * rng.uniform(0.5, 1.5, size=2) ** 2) @ Q.T)
    weights = rng.dirichlet(np.full(8, 5.0))
    draw = np.random.default_rng(seed)
    y = draw.choice(8, size=n, p=weights)
    X = np.empty((n, 2))
    for k in range(8):
        X[y == k] = draw.multivariate_normal(centres[k], covs[k], size=int((y == k).sum()))
    return X, y


def _single(X_sub, rng):
    return np.zeros(X_sub.shape[0], dtype=np.int64)


def _fitted_base(X, seed=0):
    base = NormalWishartBase()
    base.initialize(X, np.random.default_rng(seed))
    return base


# ------------------------------------------------------------------ 1. the new rows
def test_new_rows_go_to_the_cluster_of_highest_weighted_density():
    X, y = _blobs(400)
    base = _fitted_base(X)
    solver = SubclusterDP()
    rng = np.random.default_rng(1)
    state = solver.initialize(X, y.astype(np.int64), 1.0, base, rng)
    X_new = np.array([[0.2, -0.1], [7.7, 0.3], [-0.4, 8.2], [8.1, 7.9]])
    got = _assign_rows(solver, state, base, X_new, rng)
    # cluster k of the state is blob k (labels 0..3 compacted in order)
    np.testing.assert_array_equal(got, [0, 1, 2, 3])


def test_subsample_chains_run_the_extra_moves_on_a_copy():
    solver = SubclusterDP(n_proposals=3)
    warm = solver.for_subsamples()
    assert warm is not solver and warm.n_proposals == 3
    assert warm.reallocation_rate == SubclusterDP.subsample_reallocation_rate > 0
    assert warm.three_cluster_rate == SubclusterDP.subsample_three_cluster_rate > 0
    assert solver.reallocation_rate == 0 and solver.three_cluster_rate == 0
    assert "reallocation_rate" not in vars(solver)


# ------------------------------------------------------------------ 2. the contract
def test_partition_of_every_row_reproducible_and_input_untouched():
    X, y = _blobs(3000, seed=1)
    before = X.copy()

    def start(seed):
        base = _fitted_base(X)
        rng = np.random.default_rng(seed)
        return nested_subsample_start(SubclusterDP(), X, 1.0, base, rng, _single,
                                      update_options={}, first_size=400, sweeps=5)

    labels, alpha = start(3)
    np.testing.assert_array_equal(X, before)
    assert labels.shape == (3000,) and labels.dtype == np.int64
    K = labels.max() + 1
    assert np.all(np.bincount(labels, minlength=K) > 0)  # labels 0..K-1, none empty
    assert alpha > 0 and alpha != 1.0  # alpha was resampled on the subsamples
    assert adjusted_rand_score(y, labels) > 0.95
    again, alpha_again = start(3)
    np.testing.assert_array_equal(labels, again)
    assert alpha == alpha_again
    other, _ = start(4)
    assert not np.array_equal(labels, other)


def test_small_data_start_is_the_first_partition():
    X, _ = _blobs(50)
    calls = []

    def first(X_sub, rng):
        calls.append(X_sub.shape[0])
        return np.arange(50) % 3

    labels, alpha = nested_subsample_start(SubclusterDP(), X, 0.7, _fitted_base(X),
                                           np.random.default_rng(0), first,
                                           update_options={}, first_size=50)
    assert calls == [50]
    np.testing.assert_array_equal(labels, np.arange(50) % 3)
    assert alpha == 0.7


# ------------------------------------------------------------------ 3. what it is for
def test_holds_overlapping_gaussians_where_the_single_start_does_not():
    """N = 60,000 rows of eight overlapping Gaussians; after the start and 5 sweeps, the
    eight clusters with at least 1% of the rows and ARI above 0.95 (the Bayes classifier
    reaches about 0.97). From one cluster the same 5 sweeps (after as many sweeps' work
    as the start spends, 15 in all) are judged alike, and the test requires the nested
    start to succeed in at least 3 of 4 seeds and more often than the single start."""
    n = 60_000
    X, y = _overlapping(n, seed=1)

    def hit(state):
        return (int(np.sum(state.counts >= 0.01 * n)) == 8
                and adjusted_rand_score(y, state.labels) > 0.95)

    nested = single = 0
    for seed in range(4):
        for kind in ("nested", "single"):
            base = _fitted_base(X, seed)
            rng = np.random.default_rng(seed)
            solver = SubclusterDP()
            if kind == "nested":
                labels, alpha = nested_subsample_start(solver, X, 1.0, base, rng, _single,
                                                       update_options={})
                sweeps = 5
            else:
                labels, alpha, sweeps = np.zeros(n, dtype=np.int64), 1.0, 15
            state = solver.initialize(X, labels, alpha, base, rng)
            for _ in range(sweeps):
                solver.sweep(state, base, rng)
                solver.update_state(state, base, rng)
            if kind == "nested":
                nested += hit(state)
            else:
                single += hit(state)
    assert nested >= 3
    assert nested > single


# ------------------------------------------------------------------ 4. the estimator
def test_estimator_auto_init_is_the_nested_start_for_subcluster():
    X, y = _blobs(5000, seed=2)
    model = DPMixture(solver="subcluster", base="conjugate", n_iter=3,
                      point_estimate="best_sample", random_state=0).fit(X)
    # the chain proper starts from the subsamples' four clusters, not from one
    assert model.traces_["n_clusters"][0, 0] >= 4
    single = DPMixture(solver="subcluster", base="conjugate", n_iter=3, init="single",
                       point_estimate="best_sample", random_state=0).fit(X)
    assert not np.array_equal(model.traces_["n_clusters"], single.traces_["n_clusters"])
    again = DPMixture(solver="subcluster", base="conjugate", n_iter=3,
                      point_estimate="best_sample", random_state=0).fit(X)
    np.testing.assert_array_equal(model.labels_, again.labels_)


def test_subsample_init_with_split_merge_and_refused_without_splits():
    X, y = _blobs(4500, seed=3)
    model = DPMixture(solver="split_merge", base="conjugate", init="subsample", n_iter=3,
                      point_estimate="best_sample", random_state=0).fit(X)
    assert adjusted_rand_score(y, model.labels_) > 0.95
    assert model.traces_["n_clusters"][0, 0] >= 4
    for solver in ("slice", SliceDP()):
        with pytest.raises(ValueError, match="init='subsample'.*proposes splits"):
            DPMixture(solver=solver, init="subsample", n_iter=2).fit(X)
