"""The stick-breaking DP mixture samplers: slice (Walker; Kalli, Griffin and Walker),
truncated blocked Gibbs (Ishwaran and James) and retrospective MCMC (Papaspiliopoulos and
Roberts); Görür 2007, sec. 3.2.3, Algorithms 8-10.

1. Exact posterior: on five rows in one dimension with the conjugate isotropic-normal
   base, each sampler's histogram of partitions matches the posterior computed by
   enumeration (chi-square at a fixed seed). The kernels' own Gaussian densities draw
   the very same chains as the base's ``log_likelihood`` matrix (tested in 4).
2. Prior recovery: with a flat likelihood the number of clusters has the CRP's mean.
3. Kernels against plain NumPy references driven by the same random stream.
4. The state contract after every sweep; reproducibility; input never modified.
"""

import math

import numpy as np
import pytest
from scipy.special import betaln, logsumexp
from scipy.stats import chi2, gamma, kstest, multivariate_normal

from sklearn_ibp.likelihoods._mixture_base import BaseMixtureComponents
from sklearn_ibp.solvers.dp._dp_base import relabel
from sklearn_ibp.solvers.dp._dp_gaussian_kernels import (
    NEGLIGIBLE_LOG_WEIGHT,
    draw_index,
    relabel_slots,
)
from sklearn_ibp.solvers.dp._dp_retrospective_kernels import retrospective_pass
from sklearn_ibp.solvers.dp._dp_slice_kernels import draw_log_slices, sample_slice_labels
from sklearn_ibp.solvers.dp._dp_stick_kernels import (
    count_labels,
    gaussian_log_likelihood,
    switch_adjacent_labels,
)
from sklearn_ibp.solvers.dp._dp_sticks import (
    gaussian_factors,
    log_gamma_variates,
    sample_stick_posterior,
    stick_log_weights,
)
from sklearn_ibp.solvers.dp._dp_truncated_kernels import sample_truncated_labels
from sklearn_ibp.solvers.dp.dp_retrospective import RetrospectiveDP
from sklearn_ibp.solvers.dp.dp_slice import SliceDP
from sklearn_ibp.solvers.dp.dp_truncated import TruncatedDP, truncation_error_bound
from tests._mixtures import IsotropicNormalBase, exact_partition_posterior, partition_key
from tests.solvers.test_exact_posterior import chi_square_against
from tests.solvers.test_prior_recovery import batch_means_se


class FixedPrecisionNormalBase(IsotropicNormalBase):
    """:class:`IsotropicNormalBase` whose (fixed) precision ``I / sigma^2`` is also a
    parameter, ``"precisions"``: the same model, served by the Gaussian kernels."""

    name = "fixed_precision_normal"

    def _with_precisions(self, params):
        n, D = params["means"].shape
        params["precisions"] = np.broadcast_to(np.eye(D) / self.sigma**2, (n, D, D)).copy()
        return params

    def sample_prior(self, n, rng) -> dict:
        return self._with_precisions(super().sample_prior(n, rng))

    def sample_posterior(self, X_k, rng, params_k=None) -> dict:
        return self._with_precisions(super().sample_posterior(X_k, rng, params_k))


class FlatBase(BaseMixtureComponents):
    """A base whose likelihood is constant (log F = 0): the posterior is the prior."""

    name = "flat"

    def initialize(self, X, rng) -> None:
        pass

    def sample_prior(self, n, rng) -> dict:
        return {"means": np.zeros((n, 1))}

    def log_likelihood(self, X, params) -> np.ndarray:
        return np.zeros((np.asarray(X).shape[0], params["means"].shape[0]))

    def sample_posterior(self, X_k, rng, params_k=None) -> dict:
        return {"means": np.zeros((1, 1))}


# Truncation for the exact test: the bound of Ishwaran and James on the L1 distance of the
# truncated model's marginal from the DP's, 4 N (alpha / (1 + alpha))^(M - 1), is 2e-11
# for N = 5, alpha = 1, M = 40, far below what 3000 samples can resolve.
EXACT_TRUNCATION = 40
SOLVERS = {
    "slice": lambda: SliceDP(),
    "slice-no-switching": lambda: SliceDP(label_switching=False),
    "slice-kappa": lambda: SliceDP(kappa=0.6),
    "truncated": lambda: TruncatedDP(truncation=EXACT_TRUNCATION),
    "retrospective": lambda: RetrospectiveDP(extra=2),
}


def run_chain(solver, base, X, alpha, n_sweeps, seed, labels=None, every=None):
    """Run ``n_sweeps`` sweeps; call ``every(state)`` after each; return the state."""
    rng = np.random.default_rng(seed)
    base.initialize(X, rng)
    if labels is None:
        labels = np.zeros(X.shape[0], dtype=np.int64)
    state = solver.initialize(X, labels, alpha, base, rng)
    for sweep in range(n_sweeps):
        solver.sweep(state, base, rng)
        if every is not None:
            every(sweep, state)
    return state


# -- 1. exact posterior ------------------------------------------------------------------
X_TINY = np.array([[-2.0], [-1.6], [0.2], [1.9], [2.4]])
ALPHA_TINY = 1.0
N_SAMPLES, THIN, BURN_IN = 3000, 5, 100


@pytest.fixture(scope="module")
def tiny_posterior():
    base = IsotropicNormalBase()
    base.initialize(X_TINY, None)
    return exact_partition_posterior(X_TINY, base, ALPHA_TINY)


@pytest.mark.parametrize("solver_name", sorted(SOLVERS))
def test_histogram_matches_enumerated_posterior(solver_name, tiny_posterior):
    keys = []

    def record(sweep, state):
        if sweep >= BURN_IN and (sweep - BURN_IN) % THIN == 0:
            keys.append(partition_key(state.labels))

    run_chain(SOLVERS[solver_name](), IsotropicNormalBase(), X_TINY, ALPHA_TINY,
              BURN_IN + N_SAMPLES * THIN, seed=0, every=record)
    stat, dof, p_value, counts, expected = chi_square_against(tiny_posterior, keys)
    # The test has power: the posterior spreads over dozens of partitions, and the chain
    # visits most of them.
    assert dof >= 25 and len(set(keys)) >= 35
    assert p_value > 1e-3, (p_value, stat, dof)


def test_truncation_bound_of_exact_test_is_negligible():
    assert truncation_error_bound(EXACT_TRUNCATION, ALPHA_TINY, X_TINY.shape[0]) < 1e-10
    # The bound is the union bound over rows of the mean stick left after M - 1 breaks.
    assert truncation_error_bound(3, 1.0, 2) == pytest.approx(4 * 2 * 0.25)


# -- 2. prior recovery -------------------------------------------------------------------
N_PRIOR_ROWS = 15


@pytest.mark.parametrize(
    "solver",
    # kappa = alpha / (1 + alpha): xi_j is the prior mean of the weights.
    [SliceDP(), SliceDP(kappa=0.6), RetrospectiveDP(), TruncatedDP(truncation=80)],
    ids=["slice", "slice-kappa", "retrospective", "truncated"],
)
def test_prior_recovered_with_flat_likelihood(solver):
    alpha = 1.5
    expected = sum(alpha / (alpha + i - 1) for i in range(1, N_PRIOR_ROWS + 1))
    X = np.zeros((N_PRIOR_ROWS, 1))
    n_clusters = []

    def record(sweep, state):
        if sweep == 0:
            assert state.alpha == alpha
        elif sweep >= 50:
            n_clusters.append(state.n_clusters)

    rng = np.random.default_rng(5)
    base = FlatBase()
    # The chain starts at another alpha, which the estimator changes between sweeps:
    # the solver must read state.alpha at every sweep.
    state = solver.initialize(X, np.arange(N_PRIOR_ROWS) % 3, 0.05, base, rng)
    state.alpha = alpha
    for sweep in range(6000):
        solver.sweep(state, base, rng)
        record(sweep, state)
    n_clusters = np.array(n_clusters)
    se = batch_means_se(n_clusters)
    assert abs(n_clusters.mean() - expected) < 4 * se, (n_clusters.mean(), expected, se)
    assert se < 0.03 * expected  # the error bar is tight enough to catch a wrong prior


# -- 3. kernels against NumPy references ---------------------------------------------------
def _gaussian_components(rng, K, D):
    means = rng.normal(size=(K, D))
    B = rng.normal(size=(K, D, D))
    precisions = B @ np.swapaxes(B, 1, 2) + 0.5 * np.eye(D)
    return {"means": means, "precisions": precisions}


def _reference_categorical(log_w, rng):
    w = np.exp(log_w - log_w.max())
    target = rng.random() * w.sum()
    return min(int(np.searchsorted(np.cumsum(w), target, side="right")), w.size - 1)


@pytest.mark.parametrize("D", [1, 3])
def test_gaussian_log_likelihood_matches_scipy(D):
    rng = np.random.default_rng(0)
    params = _gaussian_components(rng, 4, D)
    X = rng.normal(size=(7, D))
    got = gaussian_log_likelihood(X, *gaussian_factors(params))
    expected = np.column_stack([
        multivariate_normal(m, np.linalg.inv(P)).logpdf(X).reshape(-1)
        for m, P in zip(params["means"], params["precisions"], strict=True)
    ])
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10)


def test_draw_index_with_floor_matches_reference():
    rng = np.random.default_rng(1)
    draws, expected = [], []
    for trial in range(300):
        log_w = rng.normal(scale=3.0, size=6)
        log_w[trial % 6] = -np.inf  # a component with zero weight is never drawn
        seed = int(rng.integers(1 << 30))
        draws.append(draw_index(log_w.copy(), 5, np.random.default_rng(seed),
                                NEGLIGIBLE_LOG_WEIGHT))
        expected.append(_reference_categorical(log_w[:5], np.random.default_rng(seed)))
    assert draws == expected
    assert len(set(draws)) == 5
    # Frequencies, and one uniform per draw.
    rng = np.random.default_rng(2)
    log_w = np.log([0.1, 0.6, 0.3])
    freq = np.bincount([draw_index(log_w.copy(), 3, rng, NEGLIGIBLE_LOG_WEIGHT)
                        for _ in range(20000)])
    np.testing.assert_allclose(freq / 20000, [0.1, 0.6, 0.3], atol=0.015)


def test_relabel_and_counts():
    labels = np.array([4, 4, 1, 7, 1, 0, 7, 4], dtype=np.int64)
    new = labels.copy()
    old_of_new = relabel_slots(new, 8)
    ref_new, ref_old = relabel(labels)
    np.testing.assert_array_equal(new, ref_new)
    np.testing.assert_array_equal(old_of_new, ref_old)
    np.testing.assert_array_equal(count_labels(labels, 9), np.bincount(labels, minlength=9))


def test_log_gamma_variates_and_sticks():
    rng = np.random.default_rng(3)
    for shape in (0.05, 0.7, 3.0):
        draws = np.exp(log_gamma_variates(np.full(4000, shape), rng))
        assert kstest(draws, gamma(shape).cdf).pvalue > 1e-3
    # Tiny shapes do not underflow to log 0.
    assert np.isfinite(log_gamma_variates(np.full(1000, 0.002), rng)).all()

    counts = np.array([5, 0, 3, 1])
    alpha = 0.8
    log_v, log_1mv = sample_stick_posterior(counts, alpha, rng, n_prior=2)
    np.testing.assert_allclose(np.exp(log_v) + np.exp(log_1mv), 1.0, rtol=1e-12)
    log_pi, log_rest = stick_log_weights(log_v, log_1mv)
    v = np.exp(log_v)
    pi = v * np.concatenate([[1.0], np.cumprod(1 - v)[:-1]])  # eq. 3.15
    np.testing.assert_allclose(np.exp(log_pi), pi, rtol=1e-10)
    assert np.exp(log_pi).sum() + np.exp(log_rest) == pytest.approx(1.0)

    # Beta(1 + n_j, alpha + sum_{l>j} n_l) (eq. 3.43): means over many draws.
    draws = np.exp(np.array([sample_stick_posterior(counts, alpha, rng, n_beyond=2)[0]
                             for _ in range(4000)]))
    after = np.array([4 + 2, 4 + 2, 1 + 2, 0 + 2])
    mean = (1 + counts) / (1 + counts + alpha + after)
    np.testing.assert_allclose(draws.mean(axis=0), mean, atol=0.01)


def _log_p_positions(counts, alpha, truncation=0):
    """``log E[prod_i pi_{c_i}]`` of rows per stick position (the sticks integrated out):
    ``sum_j log B(1 + n_j, alpha + m_j) - log B(1, alpha)``, no factor for ``v_M = 1``."""
    counts = np.asarray(counts, dtype=float)
    last = np.flatnonzero(counts)[-1]
    after = np.cumsum(counts[::-1])[::-1] - counts
    stop = min(last + 1, truncation - 1) if truncation else last + 1
    return float(sum(betaln(1 + counts[j], alpha + after[j]) - betaln(1, alpha)
                     for j in range(stop)))


def _reference_switch(counts, alpha, truncation, rng):
    n = list(counts) + [0] * 64
    occupant = [j if c > 0 else -1 for j, c in enumerate(counts)] + [-1] * 64
    j = 0
    while True:
        last = max(i for i, c in enumerate(n) if c > 0)
        if (truncation and j >= truncation - 1) or (not truncation and j > last):
            return occupant
        if n[j] != n[j + 1]:
            swapped = n.copy()
            swapped[j], swapped[j + 1] = n[j + 1], n[j]
            log_ratio = (_log_p_positions(swapped, alpha, truncation)
                         - _log_p_positions(n, alpha, truncation))
            if log_ratio >= 0 or rng.random() < np.exp(log_ratio):
                n = swapped
                occupant[j], occupant[j + 1] = occupant[j + 1], occupant[j]
        j += 1


@pytest.mark.parametrize("truncation", [0, 6])
def test_label_switching_kernel_matches_reference(truncation):
    rng = np.random.default_rng(13)
    moved = 0
    for _ in range(200):
        counts = rng.integers(0, 4, size=6) * (rng.random(6) < 0.7)
        counts[rng.integers(6)] += 1
        seed = int(rng.integers(1 << 30))
        got = switch_adjacent_labels(counts.astype(np.int64), 0.7, truncation,
                                     np.random.default_rng(seed))
        expected = _reference_switch(list(counts), 0.7, truncation,
                                     np.random.default_rng(seed))
        K = max(got.size, len(expected))
        got = np.concatenate([got, -np.ones(K - got.size, int)])
        expected = np.concatenate([expected, -np.ones(K - len(expected), int)])
        np.testing.assert_array_equal(got, expected)
        moved += np.any(got[: counts.size] != np.where(counts > 0, np.arange(6), -1))
    assert moved > 100


def test_label_switching_leaves_the_stick_prior_invariant():
    # Two clusters of 3 and 1 rows: their positions (a, b) under repeated scans are
    # distributed as E[pi_a^3 pi_b] (normalised), whatever the start.
    alpha, L = 1.3, 5
    configs = [(a, b) for a in range(L) for b in range(L) if a != b]

    def log_p(a, b):
        counts = np.zeros(max(a, b) + 1)
        counts[a], counts[b] = 3, 1
        return _log_p_positions(counts, alpha)

    log_w = np.array([log_p(a, b) for a, b in configs])
    # All configurations inside the L positions hold most of the mass; pool the rest.
    rng = np.random.default_rng(14)
    state = np.array([0, 0, 0, 1, 0, 0, 0, 0, 3], dtype=np.int64)  # a = 8, b = 3
    draws = []
    for sweep in range(12000):
        occupant = switch_adjacent_labels(state, alpha, 0, rng)
        new = np.zeros(occupant.size, dtype=np.int64)
        taken = occupant >= 0
        new[taken] = state[occupant[taken]]
        state = new[: np.flatnonzero(new)[-1] + 1]
        if sweep >= 100 and sweep % 3 == 0:
            draws.append((int(np.flatnonzero(state == 3)[0]),
                          int(np.flatnonzero(state == 1)[0])))
    n = len(draws)
    # Normalising constant: sum over all configurations, by enumerating far enough.
    far = [(a, b) for a in range(60) for b in range(60) if a != b]
    log_total = logsumexp([log_p(a, b) for a, b in far])
    expected = np.exp(log_w - log_total) * n
    observed = np.array([draws.count(c) for c in configs])
    keep = expected >= 5
    obs = np.append(observed[keep], n - observed[keep].sum())
    exp_ = np.append(expected[keep], n - expected[keep].sum())
    stat = float(np.sum((obs - exp_) ** 2 / exp_))
    assert keep.sum() >= 6
    assert chi2.sf(stat, obs.size - 1) > 1e-3, (stat, obs.size - 1)


def _likelihood_args(X, params, gaussian):
    D = X.shape[1]
    if gaussian:
        return (True, *gaussian_factors(params), np.zeros((1, 1)))
    loglik = gaussian_log_likelihood(X, *gaussian_factors(params))
    return False, np.zeros((1, D)), np.zeros((1, D, D)), np.zeros(1), loglik


@pytest.mark.parametrize("gaussian", [True, False])
@pytest.mark.parametrize("kappa", [None, 0.5])
def test_slice_kernels_match_reference(gaussian, kappa):
    rng = np.random.default_rng(4)
    N, D, J = 60, 2, 7
    X = rng.normal(scale=2.0, size=(N, D))
    params = _gaussian_components(rng, J, D)
    log_pi = np.log(rng.dirichlet(np.ones(J)) * 0.97)
    if kappa is None:
        key, prior_weight = log_pi, np.zeros(J)
    else:
        key = np.log(1 - kappa) + np.log(kappa) * np.arange(J)
        prior_weight = log_pi - key
    row_positions = rng.integers(0, 4, size=N).astype(np.int64)
    order = np.argsort(-key, kind="stable").astype(np.int64)

    slices = draw_log_slices(row_positions, key, np.random.default_rng(9))
    ref_rng = np.random.default_rng(9)
    ref_slices = key[row_positions] + np.log(1.0 - ref_rng.random(N))
    np.testing.assert_allclose(slices, ref_slices, rtol=1e-14)

    ref_rng = np.random.default_rng(10)
    got = sample_slice_labels(X, slices, order, key, prior_weight,
                              *_likelihood_args(X, params, gaussian), np.random.default_rng(10))
    loglik = np.column_stack([
        multivariate_normal(m, np.linalg.inv(P)).logpdf(X)
        for m, P in zip(params["means"], params["precisions"], strict=True)
    ])
    expected = []
    for i in range(N):
        above = order[key[order] >= slices[i]]  # eq. 3.52: only components above the slice
        assert row_positions[i] in above
        j = _reference_categorical(prior_weight[above] + loglik[i, above], ref_rng)
        expected.append(above[j])
    np.testing.assert_array_equal(got, expected)
    assert np.unique(got).size >= 3


@pytest.mark.parametrize("gaussian", [True, False])
def test_truncated_kernel_matches_reference(gaussian):
    rng = np.random.default_rng(5)
    N, D, M = 80, 2, 6
    X = rng.normal(scale=2.0, size=(N, D))
    params = _gaussian_components(rng, M, D)
    log_pi = np.log(rng.dirichlet(np.ones(M)))
    got = sample_truncated_labels(X, log_pi, *_likelihood_args(X, params, gaussian),
                                  np.random.default_rng(11))
    loglik = gaussian_log_likelihood(X, *gaussian_factors(params))
    ref_rng = np.random.default_rng(11)
    expected = [_reference_categorical(log_pi + loglik[i], ref_rng) for i in range(N)]
    np.testing.assert_array_equal(got, expected)
    assert np.unique(got).size >= 3


def _reference_retrospective(X, row_positions, log_pi, log_rest, loglik, rng):
    """Eqs. 3.45-3.47 as written, in linear space; returns the positions, or the row at
    which the proposal needs more components than represented."""
    c = row_positions.copy()
    pi, rest, F = np.exp(log_pi), np.exp(log_rest), np.exp(loglik)

    def kappa(last, i):
        M = F[i, : last + 1].max()
        return (pi[: last + 1] * F[i, : last + 1]).sum() + rest[last] * M, M

    for i in range(X.shape[0]):
        k = c[i]
        others = np.delete(c, i)
        last_others = others.max() if others.size else -1
        last_c = max(k, last_others)
        kappa_c, M_c = kappa(last_c, i)
        u = rng.random()
        inside = pi[: last_c + 1] * F[i, : last_c + 1]
        if u * kappa_c < inside.sum():
            j = int(np.searchsorted(np.cumsum(inside), u * kappa_c, side="right"))
        else:
            point = rng.random() * rest[last_c]  # uniform point of the unbroken stick
            tail = np.cumsum(pi[last_c + 1 :])
            if tail.size == 0 or tail[-1] <= point:
                return i
            j = last_c + 1 + int(np.searchsorted(tail, point, side="right"))
        if j == k:
            continue
        last_new = max(j, last_others)
        if last_new == last_c:
            c[i] = j
            continue
        kappa_new, M_new = kappa(last_new, i)
        if j <= last_c:  # the move empties the last component, eq. 3.47 second case
            ratio = kappa_c / kappa_new * M_new / F[i, k]
        else:  # a proposal past the last component, third case
            ratio = kappa_c / kappa_new * F[i, j] / M_c
        if ratio >= 1 or rng.random() < ratio:
            c[i] = j
    return c


@pytest.mark.parametrize("gaussian", [True, False])
def test_retrospective_kernel_matches_reference(gaussian):
    rng = np.random.default_rng(6)
    N, D, J = 40, 2, 12
    X = rng.normal(scale=2.5, size=(N, D))
    params = _gaussian_components(rng, J, D)
    params["precisions"] *= 0.3
    log_v, log_1mv = sample_stick_posterior(np.zeros(0), 1.0, rng, n_prior=J)
    log_pi, _ = stick_log_weights(log_v, log_1mv)
    log_rest = np.cumsum(log_1mv)
    row_positions = rng.choice([0, 1, 3], size=N).astype(np.int64)
    row_positions[7] = 5  # a singleton last component, which can empty
    loglik = gaussian_log_likelihood(X, *gaussian_factors(params))

    got = row_positions.copy()
    counts = count_labels(got, J)
    stop, _, _, accepted = retrospective_pass(
        X, got, counts, log_pi, log_rest, 0, -1.0, -1.0,
        *_likelihood_args(X, params, gaussian), np.random.default_rng(12),
    )
    expected = _reference_retrospective(X, row_positions, log_pi, log_rest, loglik,
                                        np.random.default_rng(12))
    assert stop == N and not isinstance(expected, int)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(counts, np.bincount(got, minlength=J))
    assert accepted == np.sum(got != row_positions) > 5
    assert got.max() > 3 or 5 not in got  # the last component moved or emptied


def test_retrospective_kernel_stops_and_resumes_for_more_sticks():
    # Sticks that leave almost everything unbroken: proposals fall past the represented
    # components, the pass stops there and resumes, untouched, with its uniforms.
    X = np.zeros((30, 1))
    loglik = np.zeros((30, 3))
    log_v = np.log([0.5, 0.01, 0.01])
    log_1mv = np.log1p(-np.exp(log_v))
    log_pi, _ = stick_log_weights(log_v, log_1mv)
    positions = np.zeros(30, dtype=np.int64)
    counts = count_labels(positions, 3)
    args = (False, np.zeros((1, 1)), np.zeros((1, 1, 1)), np.zeros(1), loglik)
    stop, u, u2, _ = retrospective_pass(X, positions, counts, log_pi, np.cumsum(log_1mv),
                                        0, -1.0, -1.0, *args, np.random.default_rng(0))
    assert stop < 30 and 0 <= u < 1 and 0 <= u2 < 1
    np.testing.assert_array_equal(counts, np.bincount(positions, minlength=3))
    before = positions[stop]
    # Resuming with one more (huge) stick puts that row there.
    log_v2 = np.append(log_v, np.log(0.999999))
    log_1mv2 = np.log1p(-np.exp(log_v2))
    log_pi2, _ = stick_log_weights(log_v2, log_1mv2)
    counts2 = np.append(counts, 0)
    args2 = args[:4] + (np.zeros((30, 4)),)
    rng = np.random.default_rng(1)
    retrospective_pass(X, positions, counts2, log_pi2, np.cumsum(log_1mv2), stop, u, u2,
                       *args2, rng)
    assert before == 0 and positions[stop] == 3


# -- 4. the state contract, reproducibility, input untouched -------------------------------
ALL_SOLVERS = [SliceDP(), SliceDP(kappa=0.5), TruncatedDP(truncation=20), RetrospectiveDP()]
IDS = ["slice", "slice-kappa", "truncated", "retrospective"]


@pytest.fixture(scope="module")
def blobs():
    rng = np.random.default_rng(7)
    centres = np.array([[-4.0, 0.0], [0.0, 4.0], [4.0, 0.0]])
    X = np.repeat(centres, 20, axis=0) + rng.normal(size=(60, 2))
    X.setflags(write=False)
    return X


def check_contract(state, X):
    K = state.n_clusters
    assert state.labels.dtype == np.int64 and state.labels.shape == (X.shape[0],)
    assert state.labels.min() == 0 and state.labels.max() == K - 1
    assert (np.bincount(state.labels, minlength=K) > 0).all()  # no empty cluster
    assert state.params and all(v.shape[0] == K for v in state.params.values())
    positions = state.stats["stick_positions"]
    assert positions.shape == (K,) and np.unique(positions).size == K and positions.min() >= 0
    np.testing.assert_array_equal(state.X, X)


@pytest.mark.parametrize("base_cls", [IsotropicNormalBase, FixedPrecisionNormalBase],
                         ids=["isotropic", "gaussian-kernel"])
@pytest.mark.parametrize("solver", ALL_SOLVERS, ids=IDS)
def test_state_contract_after_every_sweep(solver, base_cls, blobs):
    Ks = []
    start = np.array([3, 9] * 30)  # labels with gaps are renumbered
    state = run_chain(solver, base_cls(sigma=1.0, tau=4.0), blobs, 1.0, 40, seed=1,
                      labels=start,
                      every=lambda sweep, s: (check_contract(s, blobs), Ks.append(s.n_clusters)))
    assert state.X is not blobs
    assert max(Ks) >= 3  # the chain did split the two starting clusters
    # The blobs, which the starting clusters mix, are pulled apart: each cluster lies
    # (almost) within one blob, and each blob has its own majority cluster.
    table = np.zeros((3, state.n_clusters), dtype=int)
    np.add.at(table, (np.repeat(np.arange(3), 20), state.labels), 1)
    assert table.max(axis=0).sum() >= 57
    assert np.unique(table.argmax(axis=1)).size == 3
    np.testing.assert_array_equal(start, [3, 9] * 30)


@pytest.mark.parametrize("solver", ALL_SOLVERS, ids=IDS)
def test_seed_fixes_the_chain_and_paths_agree(solver, blobs):
    def chain(base, seed):
        trace = []
        state = run_chain(solver, base, blobs, 1.0, 30, seed=seed,
                          every=lambda sweep, s: trace.append(
                              (s.labels.copy(), s.params["means"].copy())))
        return trace, state.stats["gaussian_kernel"]

    first, gaussian = chain(IsotropicNormalBase(), 3)
    again, _ = chain(IsotropicNormalBase(), 3)
    assert not gaussian
    for (l1, m1), (l2, m2) in zip(first, again, strict=True):
        np.testing.assert_array_equal(l1, l2)
        np.testing.assert_array_equal(m1, m2)
    other, _ = chain(IsotropicNormalBase(), 4)
    assert any(not np.array_equal(a[0], b[0]) for a, b in zip(first, other, strict=True))
    # The kernels' Gaussian densities and the base's log_likelihood draw the same chain
    # (same random stream, densities equal to rounding).
    fast, gaussian = chain(FixedPrecisionNormalBase(), 3)
    assert gaussian
    for (l1, m1), (l2, m2) in zip(first, fast, strict=True):
        np.testing.assert_array_equal(l1, l2)
        np.testing.assert_allclose(m1, m2, rtol=1e-12)


def test_truncated_refuses_more_clusters_than_components(blobs):
    base = IsotropicNormalBase()
    base.initialize(blobs, None)
    with pytest.raises(ValueError, match="truncation=4"):
        TruncatedDP(truncation=4).initialize(blobs, np.arange(60) % 5, 1.0, base,
                                             np.random.default_rng(0))


def test_truncated_weights_put_the_rest_of_the_stick_last():
    # v_M = 1 (eq. 3.17): the M weights sum to one.
    rng = np.random.default_rng(8)
    counts = np.array([3, 0, 2, 0, 1])
    log_v, log_1mv = sample_stick_posterior(counts[:-1], 1.0, rng, n_beyond=counts[-1])
    log_pi, _ = stick_log_weights(np.append(log_v, 0.0), np.append(log_1mv, -np.inf))
    assert logsumexp(log_pi) == pytest.approx(0.0, abs=1e-12)
    assert math.isfinite(log_pi[-1])


@pytest.mark.parametrize(
    "module, cls",
    [("sklearn_ibp.likelihoods.normal_wishart", "NormalWishartBase"),
     ("sklearn_ibp.likelihoods.conditionally_conjugate", "ConditionallyConjugateBase")],
    ids=["conjugate", "conditionally_conjugate"],
)
@pytest.mark.parametrize("solver", ALL_SOLVERS, ids=IDS)
def test_package_gaussian_bases_take_the_kernel_path(solver, module, cls, blobs):
    base = getattr(pytest.importorskip(module), cls)()
    state = run_chain(solver, base, blobs, 1.0, 5, seed=2, labels=np.arange(60) % 2,
                      every=lambda sweep, s: check_contract(s, blobs))
    assert state.stats["gaussian_kernel"]
