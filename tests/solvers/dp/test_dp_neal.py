"""Neal's samplers for DP mixtures: Gibbs (Algorithm 2), auxiliary components (Algorithm 5,
SampleBoth / SampleMu / SampleS), no gaps (Algorithm 4) and Metropolis-Hastings with partial
Gibbs (Algorithm 6) of Görür (2007) sec. 3.2-3.3.

* Exact posterior: on five 1-D rows the histogram of partitions of every solver, through its
  numba kernels and through its Python loop, matches the enumerated posterior of the
  conjugate toy base; with the conditionally conjugate base (hyperparameters fixed) every
  solver and scheme matches the posterior computed by one-dimensional quadrature.
* Prior recovery: with a flat likelihood the number of clusters has the CRP's mean.
* The kernels against plain NumPy: the kernel sweep and the Python sweep of each solver give
  the same chain from the same seed; the SampleMu and SampleS kernels give the chain of a
  NumPy transcription of sec. 3.3.2 built on the base's eqs. 3.66-3.67; small kernels
  against NumPy and SciPy.
"""

import numpy as np
import pytest
from scipy import integrate
from scipy.special import gammaln
from scipy.stats import multivariate_normal

from sklearn_ibp.likelihoods._mixture_base import BaseMixtureComponents
from sklearn_ibp.likelihoods.conditionally_conjugate import ConditionallyConjugateBase
from sklearn_ibp.solvers.dp._dp_base import relabel
from sklearn_ibp.solvers.dp._dp_gaussian_kernels import (
    cholesky_rank_one,
    draw_index,
    gaussian_log_density,
    relabel_slots,
)
from sklearn_ibp.solvers.dp._dp_neal import draw_index_py
from sklearn_ibp.solvers.dp.dp_auxiliary import AuxiliaryDP
from sklearn_ibp.solvers.dp.dp_gibbs import GibbsDP
from sklearn_ibp.solvers.dp.dp_metropolis import MetropolisDP
from sklearn_ibp.solvers.dp.dp_no_gaps import NoGapsDP
from sklearn_ibp.solvers.dp.dp_retrospective import RetrospectiveDP
from sklearn_ibp.solvers.dp.dp_slice import SliceDP
from sklearn_ibp.solvers.dp.dp_truncated import TruncatedDP
from tests._mixtures import IsotropicNormalBase, exact_partition_posterior, partition_key
from tests.solvers.test_exact_posterior import chi_square_against
from tests.solvers.test_prior_recovery import batch_means_se


class IsotropicGaussianBase(IsotropicNormalBase):
    """The toy conjugate base with Gaussian parameters (means and precisions ``I/sigma^2``),
    so that the solvers take their numba kernels; every draw as the parent's."""

    def _with_precisions(self, draw):
        n, D = draw["means"].shape
        eye = np.eye(D) / self.sigma**2
        return {"means": draw["means"], "precisions": np.broadcast_to(eye, (n, D, D)).copy()}

    def sample_prior(self, n, rng):
        return self._with_precisions(super().sample_prior(n, rng))

    def sample_posterior(self, X_k, rng, params_k=None):
        return self._with_precisions(super().sample_posterior(X_k, rng))

    def log_likelihood(self, X, params):
        return super().log_likelihood(X, {"means": params["means"]})


class FlatGaussianBase(IsotropicGaussianBase):
    """Gaussian components in zero dimensions: every density is exactly one, and the
    solvers still take their kernels."""

    def sample_posterior(self, X_k, rng, params_k=None):
        return self.sample_prior(1, rng)

    def log_prior_predictive(self, X):
        return np.zeros(np.asarray(X).shape[0])


class FlatBase(BaseMixtureComponents):
    """A base whose likelihood is identically one: the posterior is the CRP prior."""

    name = "flat"

    def initialize(self, X, rng):
        pass

    def sample_prior(self, n, rng):
        return {"value": rng.standard_normal((n, 1))}

    def log_likelihood(self, X, params):
        return np.zeros((np.asarray(X).shape[0], params["value"].shape[0]))

    def sample_posterior(self, X_k, rng, params_k=None):
        return self.sample_prior(1, rng)

    def log_prior_predictive(self, X):
        return np.zeros(np.asarray(X).shape[0])

    def hyperparameters(self):
        return {}

    def set_hyperparameters(self, values):
        pass


def run_chain(solver, X, base, alpha, n_samples, thin, seed, record=None, burn_in=50):
    """Keys (or ``record(state)``) of ``n_samples`` states ``thin`` sweeps apart."""
    rng = np.random.default_rng(seed)
    base.initialize(X, rng)
    state = solver.initialize(X, np.zeros(X.shape[0], dtype=np.int64), alpha, base, rng)
    record = record or (lambda s: partition_key(s.labels))
    for _ in range(burn_in):
        solver.sweep(state, base, rng)
    out = []
    for _ in range(n_samples):
        for _ in range(thin):
            solver.sweep(state, base, rng)
        out.append(record(state))
    return out


def solver_id(solver):
    params = ",".join(f"{k}={v}" for k, v in solver.get_params().items())
    return f"{solver.name}({params})"


# Thinning of the exact tests: the no-gaps sampler offers one new component to every row
# until one takes it (sec. 3.2.2), so its states are far more autocorrelated.
THIN = {"no_gaps": 6}

SOLVERS = [
    GibbsDP(),
    AuxiliaryDP(),
    AuxiliaryDP(n_auxiliary=3),
    NoGapsDP(),
    MetropolisDP(),
    MetropolisDP(n_metropolis=3),
]

# -- exact posterior with the conjugate toy base ---------------------------------------
X_TOY = np.array([[-2.0], [-1.6], [0.1], [1.9], [2.3]])
ALPHA = 1.0


@pytest.fixture(scope="module")
def toy_posterior():
    base = IsotropicNormalBase()
    base.initialize(X_TOY, None)
    return exact_partition_posterior(X_TOY, base, ALPHA)


@pytest.mark.parametrize("path", ["kernel", "python"])
@pytest.mark.parametrize("solver", SOLVERS, ids=solver_id)
def test_histogram_matches_enumerated_posterior(solver, path, toy_posterior):
    base = IsotropicGaussianBase() if path == "kernel" else IsotropicNormalBase()
    keys = run_chain(solver, X_TOY, base, ALPHA, n_samples=2000,
                     thin=THIN.get(solver.name, 2), seed=0)
    stat, dof, p_value, _, _ = chi_square_against(toy_posterior, keys)
    assert dof >= 15  # the posterior is spread over many partitions: the test has power
    assert p_value > 1e-3, (stat, dof, p_value)


class PrintedMetropolisDP(MetropolisDP):
    """Eqs. 3.35-3.36 as converted: the two prior factors swapped."""

    @staticmethod
    def _log_ratio_new(alpha, n_rows):
        return float(np.log((n_rows - 1.0) / alpha))


@pytest.mark.parametrize("path", ["kernel", "python"])
def test_printed_metropolis_factors_fail_the_exact_test(path, toy_posterior):
    """The exact test tells Neal's acceptance ratios from the swapped ones."""
    base = IsotropicGaussianBase() if path == "kernel" else IsotropicNormalBase()
    keys = run_chain(PrintedMetropolisDP(), X_TOY, base, ALPHA, n_samples=1000, thin=2,
                     seed=0)
    assert chi_square_against(toy_posterior, keys)[2] < 1e-10


# -- exact posterior with the conditionally conjugate base -----------------------------
CC_HYPER = {"xi": [0.0], "R": [[1.0]], "beta": 4.0, "W": [[0.25]]}
X_CC = np.array([[-1.1], [-0.8], [0.1], [0.9], [1.2]])


class ConditionallyConjugateMarginal:
    """``log p(X_k)`` of the 1-D conditionally conjugate base by quadrature over the
    precision ``s`` (the mean integrates out in closed form given ``s``)."""

    def __init__(self, xi, r, beta, w):
        self.xi, self.r, self.beta, self.w = xi, r, beta, w

    def _log_integrand(self, x, t):
        """``log [p(x | s) Gamma(s; beta/2, rate beta W/2) s]`` at ``s = e^t`` (vectorised
        over ``t``): ``x | s ~ N(xi 1, I/s + 1 1^T/r)``, by Sherman-Morrison."""
        s = np.exp(t)
        n = x.size
        d = x - self.xi
        c = 1.0 / self.r
        log_det = (n - 1) * (-t) + np.log(1.0 / s + n * c)
        quad = s * np.sum(d**2) - s**2 * c * np.sum(d) ** 2 / (1.0 + n * s * c)
        log_lik = -0.5 * (n * np.log(2 * np.pi) + log_det + quad)
        a, b = 0.5 * self.beta, 0.5 * self.beta * self.w
        return log_lik + a * np.log(b) - gammaln(a) + (a - 1) * t - b * s + t

    def log_marginal(self, X_k):
        x = np.asarray(X_k, dtype=float).ravel()
        if x.size == 0:
            return 0.0
        grid = np.linspace(-15.0, 15.0, 601)
        values = self._log_integrand(x, grid)
        top = values.max()
        inside = grid[values > top - 40.0]
        value, _ = integrate.quad(lambda t: np.exp(self._log_integrand(x, t) - top),
                                  inside[0] - 0.5, inside[-1] + 0.5, epsabs=0.0,
                                  epsrel=1e-10, limit=200)
        return float(top + np.log(value))


def fixed_cc_base():
    return ConditionallyConjugateBase(initial_hyperparameters=CC_HYPER,
                                      sample_hyperparameters=False)


@pytest.fixture(scope="module")
def cc_posterior():
    marginal = ConditionallyConjugateMarginal(0.0, 1.0, 4.0, 0.25)
    return exact_partition_posterior(X_CC, marginal, ALPHA)


def test_quadrature_marginal_matches_monte_carlo():
    """The reference itself: the quadrature marginal against a Monte Carlo average."""
    base = fixed_cc_base()
    rng = np.random.default_rng(0)
    base.initialize(X_CC, rng)
    draws = base.sample_prior(200_000, rng)
    lik = np.exp(base.log_likelihood(X_CC[:2], draws).sum(axis=0))
    estimate, se = lik.mean(), lik.std() / np.sqrt(lik.size)
    exact = np.exp(ConditionallyConjugateMarginal(0.0, 1.0, 4.0, 0.25).log_marginal(X_CC[:2]))
    assert abs(estimate - exact) < 4 * se
    assert se < 0.01 * exact


CC_SOLVERS = [
    AuxiliaryDP(scheme="both"),
    AuxiliaryDP(scheme="mu"),
    AuxiliaryDP(scheme="s"),
    AuxiliaryDP(n_auxiliary=2, scheme="mu"),
    AuxiliaryDP(n_auxiliary=2, scheme="s"),
    NoGapsDP(),
    MetropolisDP(),
    # The stick-breaking samplers target the same model: they must agree too.
    SliceDP(),
    RetrospectiveDP(),
    TruncatedDP(truncation=40),
]


@pytest.mark.parametrize("solver", CC_SOLVERS, ids=solver_id)
def test_conditionally_conjugate_histogram_matches_quadrature(solver, cc_posterior):
    """Every non-conjugate solver and scheme samples the same posterior (the exact one);
    with the number of clusters and one co-clustering checked as well."""
    records = run_chain(solver, X_CC, fixed_cc_base(), ALPHA, n_samples=2000,
                        thin=THIN.get(solver.name, 2), seed=1)
    stat, dof, p_value, _, _ = chi_square_against(cc_posterior, records)
    assert dof >= 20
    assert p_value > 1e-3, (stat, dof, p_value)
    # summaries: E[K] and P(rows 0 and 1 together), within 4 batch-means errors
    n_clusters = np.array([max(key) + 1 for key in records], dtype=float)
    together = np.array([key[0] == key[1] for key in records], dtype=float)
    expected_k = sum(p * (max(key) + 1) for key, p in cc_posterior.items())
    expected_together = sum(p for key, p in cc_posterior.items() if key[0] == key[1])
    assert abs(n_clusters.mean() - expected_k) < 4 * batch_means_se(n_clusters)
    assert abs(together.mean() - expected_together) < 4 * batch_means_se(together)


# -- prior recovery --------------------------------------------------------------------
N_PRIOR = 10


@pytest.mark.parametrize("alpha", [0.7, 2.5])
@pytest.mark.parametrize("path", ["kernel", "python"])
@pytest.mark.parametrize("solver", SOLVERS[:5], ids=solver_id)
def test_prior_recovered_with_flat_likelihood(solver, path, alpha):
    if path == "kernel":  # no columns: every Gaussian density is 1
        X, base = np.zeros((N_PRIOR, 0)), FlatGaussianBase()
    else:
        X, base = np.zeros((N_PRIOR, 1)), FlatBase()
    n_clusters = np.array(run_chain(solver, X, base, alpha, n_samples=1500, thin=1, seed=2,
                                    record=lambda s: s.n_clusters), dtype=float)
    expected = sum(alpha / (alpha + i) for i in range(N_PRIOR))
    se = batch_means_se(n_clusters)
    assert abs(n_clusters.mean() - expected) < 4 * se, (n_clusters.mean(), expected, se)
    assert se < 0.05 * expected


# -- kernels against the Python sweeps -------------------------------------------------
X_2D = np.array([[-2.0, 0.3], [-1.6, 0.1], [0.1, -0.5], [1.9, 1.0], [2.3, 0.8], [0.0, 0.2]])


@pytest.mark.parametrize("solver", SOLVERS, ids=solver_id)
def test_kernel_sweep_is_the_python_sweep(solver):
    """The numba sweep and the plain Python sweep draw the same chain from one seed."""
    chains = []
    for base in (IsotropicGaussianBase(sigma=0.8, tau=1.5), IsotropicNormalBase(0.8, 1.5)):
        chains.append(run_chain(solver, X_2D, base, 1.3, n_samples=150, thin=1, seed=5,
                                record=lambda s: (s.labels.copy(), s.params["means"].copy()),
                                burn_in=0))
    kernel, python = chains
    assert len({tuple(lab) for lab, _ in kernel}) > 20  # the chain moves
    for (lab_k, mean_k), (lab_p, mean_p) in zip(kernel, python, strict=True):
        np.testing.assert_array_equal(lab_k, lab_p)
        np.testing.assert_allclose(mean_k, mean_p, rtol=1e-10, atol=1e-12)


def _reference_scheme_sweep(scheme, m, state, base, rng):
    """SampleMu / SampleS (sec. 3.3.2) transcribed with the base's NumPy eqs. 3.66-3.67,
    drawing from ``rng`` in the kernels' order."""
    X = state.X
    N = X.shape[0]
    labels = state.labels.copy()
    K = state.n_clusters
    key = "means" if scheme == "mu" else "precisions"
    slots = [state.params[key][k].copy() for k in range(K)]
    counts = list(np.bincount(labels, minlength=K))
    free = []
    order = rng.permutation(N)
    if scheme == "mu":
        pool = base.sample_prior_means(N * m, rng)
        predictive = base.log_predictive_given_mean
    else:
        pool = base.sample_prior_precisions(N * m, rng)
        predictive = base.log_predictive_given_precision
    q = 0
    for i in order:
        x = X[i : i + 1]
        k_old = labels[i]
        counts[k_old] -= 1
        singleton = counts[k_old] == 0
        others = np.arange(N) != i
        log_w = [np.log(counts[k]) + predictive(x, X[others & (labels == k)], slots[k])[0]
                 if counts[k] > 0 else -np.inf for k in range(len(slots))]
        aux = []
        if singleton:
            aux.append(slots[k_old])
        while len(aux) < m:
            aux.append(pool[q])
            q += 1
        empty = np.zeros((0, X.shape[1]))
        log_w += [np.log(state.alpha / m) + predictive(x, empty, a)[0] for a in aux]
        c = draw_index_py(np.array(log_w), rng)
        n = len(slots)
        if c < n:
            if singleton:
                free.append(k_old)
        elif singleton and c == n:
            c = k_old
        else:
            value = aux[c - n]
            if singleton:
                c = k_old
            elif free:
                c = free.pop()
            else:
                slots.append(None)
                counts.append(0)
                c = len(slots) - 1
            slots[c] = value
        labels[i] = c
        counts[c] += 1
    new, old = relabel(labels)
    K = old.size
    represented = np.array([slots[k] for k in old])
    if scheme == "mu":
        precisions = base.sample_precisions_given_means(X, new, K, represented, rng)
        means = base.sample_means_given_precisions(X, new, K, precisions, rng)
    else:
        means = base.sample_means_given_precisions(X, new, K, represented, rng)
        precisions = base.sample_precisions_given_means(X, new, K, means, rng)
    state.labels, state.n_clusters = new, K
    state.params = {"means": means, "precisions": precisions}


@pytest.mark.parametrize("m", [1, 2])
@pytest.mark.parametrize("scheme", ["mu", "s"])
def test_scheme_kernels_follow_the_numpy_transcription(scheme, m):
    rng_data = np.random.default_rng(3)
    X = np.concatenate([rng_data.normal(c, 0.4, size=(4, 2)) for c in (-1.5, 0.0, 1.5)])
    chains = []
    for use_kernel in (True, False):
        rng = np.random.default_rng(11)
        base = ConditionallyConjugateBase(sample_hyperparameters=False)
        base.initialize(X, rng)
        solver = AuxiliaryDP(n_auxiliary=m, scheme=scheme)
        state = solver.initialize(X, np.zeros(X.shape[0], dtype=np.int64), 1.0, base, rng)
        history = []
        for _ in range(40):
            if use_kernel:
                solver.sweep(state, base, rng)
            else:
                _reference_scheme_sweep(scheme, m, state, base, rng)
            history.append((state.labels.copy(), state.params["means"].copy()))
        chains.append(history)
    assert len({tuple(lab) for lab, _ in chains[0]}) > 5
    for (lab_k, mean_k), (lab_r, mean_r) in zip(*chains, strict=True):
        np.testing.assert_array_equal(lab_k, lab_r)
        np.testing.assert_allclose(mean_k, mean_r, rtol=1e-8, atol=1e-10)


# -- contract, reproducibility, growth -------------------------------------------------
ALL = [*SOLVERS, AuxiliaryDP(scheme="mu"), AuxiliaryDP(scheme="s", n_auxiliary=2)]


@pytest.fixture(scope="module")
def blobs():
    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(c, 0.5, size=(60, 2)) for c in ([0, 0], [4, 0], [0, 4])])
    X.setflags(write=False)  # solvers must not write to the data
    return X


@pytest.mark.parametrize("solver", ALL, ids=solver_id)
def test_contract_and_reproducibility(solver, blobs):
    def run(seed, alpha=1.0):
        rng = np.random.default_rng(seed)
        base = ConditionallyConjugateBase()
        base.initialize(blobs, rng)
        state = solver.initialize(blobs, np.zeros(len(blobs), dtype=np.int64), alpha, base,
                                  rng)
        for _ in range(15):
            solver.sweep(state, base, rng)
            K = state.n_clusters
            # labels 0..K-1 in order of first appearance, no empty cluster
            np.testing.assert_array_equal(state.labels, relabel(state.labels)[0])
            assert state.labels.max() + 1 == K and np.all(np.bincount(state.labels) > 0)
            assert state.params["means"].shape == (K, 2)
            assert state.params["precisions"].shape == (K, 2, 2)
            assert state.alpha == alpha
            base.update_hyperparameters(solver.cluster_parameters(state, base, rng), rng)
            solver.set_hyperparameters(state, base)
        return state

    a, b, c = run(7), run(7), run(8)
    np.testing.assert_array_equal(a.labels, b.labels)
    np.testing.assert_array_equal(a.params["means"], b.params["means"])
    np.testing.assert_array_equal(a.params["precisions"], b.params["precisions"])
    assert not np.array_equal(a.params["means"][:1], c.params["means"][:1])


@pytest.mark.parametrize("solver", ALL, ids=solver_id)
def test_many_new_clusters_grow_the_arrays(solver, blobs):
    """A large alpha opens many clusters in one sweep: slot arrays and prior pools refill."""
    rng = np.random.default_rng(0)
    base = ConditionallyConjugateBase()
    base.initialize(blobs, rng)
    state = solver.initialize(blobs, np.zeros(len(blobs), dtype=np.int64), 1e4, base, rng)
    for _ in range(3):
        solver.sweep(state, base, rng)
    assert state.n_clusters > 30
    assert np.all(np.bincount(state.labels) > 0)
    assert np.all(np.isfinite(state.params["means"]))


def test_solver_options_are_checked():
    X = np.zeros((4, 1))
    base = IsotropicNormalBase()
    base.initialize(X, None)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="conditionally conjugate"):
        AuxiliaryDP(scheme="mu").initialize(X, np.zeros(4, dtype=int), 1.0, base, rng)
    with pytest.raises(ValueError):
        AuxiliaryDP(n_auxiliary=0).initialize(X, np.zeros(4, dtype=int), 1.0, base, rng)
    with pytest.raises(ValueError):
        MetropolisDP(n_metropolis=0).initialize(X, np.zeros(4, dtype=int), 1.0, base, rng)
    assert GibbsDP.bases == ("conjugate",)
    assert {s.name for s in SOLVERS} == {"gibbs", "auxiliary", "no_gaps", "metropolis"}


# -- small kernels against NumPy -------------------------------------------------------
def _spd(rng, D):
    A = rng.standard_normal((D, D))
    return A @ A.T + D * np.eye(D)


@pytest.mark.parametrize("D", [1, 3])
def test_gaussian_log_density_kernel(D):
    rng = np.random.default_rng(D)
    S = _spd(rng, D)
    L = np.linalg.cholesky(S)
    mean, x = rng.standard_normal(D), rng.standard_normal(D)
    value = gaussian_log_density(x, mean, L, np.log(np.diag(L)).sum())
    assert np.isclose(value, multivariate_normal(mean, np.linalg.inv(S)).logpdf(x))


@pytest.mark.parametrize("D", [1, 4])
def test_cholesky_rank_one_update_and_downdate(D):
    rng = np.random.default_rng(D)
    A = _spd(rng, D)
    L = np.linalg.cholesky(A)
    work = np.empty(D)
    vs = rng.standard_normal((30, D))
    for v in vs:  # 30 updates, then the same 30 downdates
        A = A + np.outer(v, v)
        half = cholesky_rank_one(L, v, work, 1.0)
        np.testing.assert_allclose(L, np.linalg.cholesky(A), rtol=1e-10, atol=1e-10)
        assert np.isclose(half, 0.5 * np.linalg.slogdet(A)[1])
    for v in vs[::-1]:
        A = A - np.outer(v, v)
        cholesky_rank_one(L, v, work, -1.0)
    np.testing.assert_allclose(L @ L.T, A, rtol=1e-8, atol=1e-8)


def test_relabel_slots_is_relabel():
    rng = np.random.default_rng(0)
    labels = rng.choice([7, 2, 9, 4], size=50)
    expected_labels, expected_old = relabel(labels)
    mine = labels.astype(np.int64)
    old = relabel_slots(mine, 10)
    np.testing.assert_array_equal(mine, expected_labels)
    np.testing.assert_array_equal(old, expected_old)


def test_draw_index_matches_python_draw_and_skips_impossible():
    log_weights = np.array([0.3, -np.inf, 1.2, -0.5, -np.inf])
    counts = np.zeros(5)
    for seed in range(400):
        a = draw_index(log_weights.copy(), 5, np.random.default_rng(seed))
        b = draw_index_py(log_weights.copy(), np.random.default_rng(seed))
        assert a == b
        counts[a] += 1
    assert counts[1] == counts[4] == 0
    p = np.exp(log_weights) / np.exp(log_weights).sum()
    assert np.all(np.abs(counts / 400 - p) < 4 * np.sqrt(p * (1 - p) / 400) + 1e-12)


@pytest.mark.parametrize("path", ["kernel", "python"])
def test_gibbs_prior_predictive_follows_the_hyperparameters(path):
    """GibbsDP keeps the prior predictive of eq. 3.29 between sweeps only while the base's
    hyperparameters are unchanged."""
    base = IsotropicGaussianBase() if path == "kernel" else IsotropicNormalBase()
    rng = np.random.default_rng(0)
    base.initialize(X_TOY, rng)
    solver = GibbsDP()
    state = solver.initialize(X_TOY, np.zeros(5, dtype=np.int64), ALPHA, base, rng)
    solver.sweep(state, base, rng)
    first = state.stats["prior_predictive"][1]
    np.testing.assert_allclose(first, base.log_prior_predictive(X_TOY))
    solver.sweep(state, base, rng)
    assert state.stats["prior_predictive"][1] is first
    base.set_hyperparameters({**base.hyperparameters(), "tau": 0.5})
    solver.sweep(state, base, rng)
    np.testing.assert_allclose(state.stats["prior_predictive"][1],
                               base.log_prior_predictive(X_TOY))
    assert not np.allclose(state.stats["prior_predictive"][1], first)
