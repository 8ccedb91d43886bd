"""The concentration updates of the DP solvers.

Partition solvers: with a flat likelihood the chain (sweep, then ``solver.sample_alpha``)
targets the joint prior of the partition and ``alpha``, so the draws of ``alpha`` follow
its prior ``1/alpha ~ Gamma(1/2, 1/2)`` (a chi-square with one degree of freedom,
eq. 3.56). Stick-breaking solvers keep their clusters' stick positions, which carry
information about ``alpha``, so their update conditions on them: the probability of the
positions is checked against Monte Carlo over the sticks, and the update against that
conditional. (The prior's heavy tail, ``P(alpha > 1000) = 2.5%``, makes the flat-likelihood
chain of a stick-breaking sampler represent millions of sticks now and then, too slow for
a test.)
"""

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.special import gammaln
from scipy.stats import chi2

from sklearn_ibp.likelihoods._mixture_base import BaseMixtureComponents
from sklearn_ibp.solvers import DP_SOLVERS, MixtureState, SliceDP
from tests.solvers.test_prior_recovery import batch_means_se


class FlatBase(BaseMixtureComponents):
    """Components that explain nothing: every likelihood is 1."""

    name = "flat"
    conjugate = True

    def initialize(self, X, rng):
        self.n_features = X.shape[1]

    def sample_prior(self, n, rng):
        return {"means": rng.standard_normal((n, self.n_features))}

    def log_likelihood(self, X, params):
        return np.zeros((X.shape[0], params["means"].shape[0]))

    def sample_posterior(self, X_k, rng, params_k=None):
        return self.sample_prior(1, rng)

    def log_marginal(self, X_k):
        return 0.0

    def log_predictive(self, X_new, X_k):
        return np.zeros(np.asarray(X_new).shape[0])

    def log_prior_predictive(self, X):
        return np.zeros(np.asarray(X).shape[0])

    def hyperparameters(self):
        return {}

    def set_hyperparameters(self, values):
        pass


@pytest.mark.parametrize("name", ["collapsed", "gibbs", "no_gaps"])
def test_alpha_draws_follow_the_prior_under_a_flat_likelihood(name):
    rng = np.random.default_rng(7)
    X = rng.standard_normal((8, 1))
    base = FlatBase()
    base.initialize(X, rng)
    solver = DP_SOLVERS[name]()
    state = solver.initialize(X, np.zeros(8, dtype=np.int64), 1.0, base, rng)
    alphas = []
    for it in range(12000):
        solver.sweep(state, base, rng)
        state.alpha = solver.sample_alpha(state, rng)
        if it >= 500:
            alphas.append(state.alpha)
    alphas = np.array(alphas)
    for cut in (1.0, 3.0):
        below = (alphas < cut).astype(float)
        expected = chi2.sf(1.0 / cut, df=1)  # P(alpha < c) = P(1/alpha > 1/c)
        se = batch_means_se(below)
        assert abs(below.mean() - expected) < 4 * se + 0.01, (name, cut, below.mean(), expected)
        assert se < 0.03


def log_positions_probability(counts, alpha):
    """``log p(c | alpha)`` of rows at stick positions with ``counts``, sticks integrated
    out: ``prod_j alpha B(1 + n_j, alpha + m_j)``, ``m_j`` the rows after position j."""
    counts = np.asarray(counts, dtype=float)
    after = np.cumsum(counts[::-1])[::-1] - counts
    return float(np.sum(np.log(alpha) + gammaln(1 + counts) + gammaln(alpha + after)
                        - gammaln(1 + counts + alpha + after)))


def test_positions_probability_matches_monte_carlo_over_the_sticks():
    rng = np.random.default_rng(0)
    counts = np.array([3, 0, 2, 0, 0, 1])  # occupied positions 0, 2 and 5
    for alpha in (0.5, 2.0):
        v = rng.beta(1.0, alpha, size=(400000, counts.size))
        log_pi = np.log(v) + np.concatenate(
            [np.zeros((v.shape[0], 1)), np.cumsum(np.log1p(-v), axis=1)[:, :-1]], axis=1
        )
        mc = np.mean(np.exp(log_pi @ counts))
        exact = np.exp(log_positions_probability(counts, alpha))
        assert abs(mc / exact - 1) < 0.03, (alpha, mc, exact)


def test_stick_breaking_alpha_update_targets_the_conditional_given_positions():
    rng = np.random.default_rng(1)
    X = np.zeros((6, 1))
    labels = np.array([0, 0, 0, 1, 1, 2])
    state = MixtureState(X=X, labels=labels, n_clusters=3, alpha=1.0)
    state.stats["stick_positions"] = np.array([0, 2, 5])  # counts 3, 0, 2, 0, 0, 1
    counts = np.array([3, 0, 2, 0, 0, 1])

    def density(a):  # prior 1/alpha ~ Gamma(1/2, 1/2) times p(c | alpha)
        return np.exp(-1.5 * np.log(a) - 0.5 / a + log_positions_probability(counts, a))

    norm = quad(density, 0, np.inf, limit=200)[0]
    solver = SliceDP()
    draws = []
    for _ in range(20000):
        state.alpha = solver.sample_alpha(state, rng)
        draws.append(state.alpha)
    draws = np.array(draws)
    for cut in (1.0, 3.0):
        expected = quad(density, 0, cut, limit=200)[0] / norm
        below = (draws < cut).astype(float)
        assert abs(below.mean() - expected) < 4 * batch_means_se(below) + 0.005, (
            cut, below.mean(), expected)
    # The partition-only conditional p(alpha | K = 3, N = 6) is measurably different.
    def partition_density(a):
        return np.exp(-1.5 * np.log(a) - 0.5 / a + 3 * np.log(a) + gammaln(a)
                      - gammaln(a + 6))

    other = quad(partition_density, 0, 1.0)[0] / quad(partition_density, 0, np.inf)[0]
    expected = quad(density, 0, 1.0, limit=200)[0] / norm
    assert abs(other - expected) > 0.05
