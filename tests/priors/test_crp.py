"""The CRP prior (Görür 2007, sec. 3.1.2, 3.1.6): normalisation, draws, E[K], the alpha update."""

import math

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.special import logsumexp
from scipy.stats import chi2

from sklearn_ibp.priors.crp import (
    crp_log_prob,
    expected_n_clusters,
    log_alpha_posterior,
    sample_alpha_posterior_crp,
    sample_crp,
)
from tests._mixtures import crp_log_prob as reference_crp_log_prob
from tests._mixtures import partition_key, set_partitions
from tests.solvers.test_exact_posterior import chi_square_against
from tests.solvers.test_prior_recovery import batch_means_se


@pytest.mark.parametrize("alpha", [0.3, 1.0, 4.5])
def test_log_prob_sums_to_one_over_partitions_of_five(alpha):
    partitions = set_partitions(5)
    assert len(partitions) == 52  # the Bell number B_5: the enumeration is complete
    log_p = np.array([crp_log_prob(p, alpha) for p in partitions])
    assert np.exp(logsumexp(log_p)) == pytest.approx(1.0, abs=1e-12)
    reference = np.array([reference_crp_log_prob(p, alpha) for p in partitions])
    np.testing.assert_allclose(log_p, reference, rtol=0, atol=1e-12)


def test_log_prob_ignores_label_values():
    assert crp_log_prob([3, 3, 7, 1], 1.5) == pytest.approx(crp_log_prob([0, 0, 1, 2], 1.5))
    with pytest.raises(ValueError, match="alpha"):
        crp_log_prob([0, 1], 0.0)


def test_expected_n_clusters_closed_form():
    assert expected_n_clusters(1, 2.0) == pytest.approx(1.0)
    # E[K] = sum_k k P(K = k); P(K = k) from the partitions of 5.
    alpha = 1.7
    partitions = set_partitions(5)
    expected = sum(np.exp(crp_log_prob(p, alpha)) * (max(p) + 1) for p in partitions)
    assert expected_n_clusters(5, alpha) == pytest.approx(expected, rel=1e-12)


def test_sample_crp_matches_partition_probabilities():
    alpha, n_draws = 1.3, 20000
    rng = np.random.default_rng(0)
    keys = [partition_key(sample_crp(4, alpha, rng)) for _ in range(n_draws)]
    posterior = {p: math.exp(crp_log_prob(p, alpha)) for p in set_partitions(4)}
    stat, dof, p_value, _, _ = chi_square_against(posterior, keys)
    assert dof >= 14  # all 15 partitions of 4 are tested
    assert p_value > 1e-3, (stat, dof)


@pytest.mark.parametrize("n_samples, alpha", [(50, 2.0), (200, 0.5)])
def test_sample_crp_cluster_count_mean(n_samples, alpha):
    rng = np.random.default_rng(1)
    counts = np.array([sample_crp(n_samples, alpha, rng).max() + 1 for _ in range(4000)])
    se = counts.std(ddof=1) / np.sqrt(counts.size)
    expected = expected_n_clusters(n_samples, alpha)
    assert abs(counts.mean() - expected) < 4 * se, (counts.mean(), expected, se)
    assert se < 0.02 * expected


def test_sample_crp_labels_are_first_appearance_ordered_and_seeded():
    labels = sample_crp(300, 3.0, 5)
    assert labels[0] == 0
    assert np.all(np.diff(np.maximum.accumulate(labels)) <= 1)
    np.testing.assert_array_equal(labels, sample_crp(300, 3.0, 5))


@pytest.mark.parametrize("n_clusters, n_samples", [(3, 50), (1, 10), (12, 40)])
def test_alpha_update_leaves_its_target_invariant(n_clusters, n_samples):
    """A long chain of slice updates has the normalised p(alpha | K, N) as its histogram."""
    rng = np.random.default_rng(2)
    alpha, draws = 1.0, []
    for _ in range(12000):
        alpha = sample_alpha_posterior_crp(alpha, n_clusters, n_samples, rng)
        draws.append(alpha)
    draws = np.array(draws[200::4])  # slice updates of log alpha mix fast; thin a little

    def density(a):
        return math.exp(log_alpha_posterior(a, n_clusters, n_samples) - shift)

    grid = np.exp(np.linspace(-10, 8, 4001))
    shift = float(np.max(log_alpha_posterior(grid, n_clusters, n_samples)))
    norm = quad(density, 0, np.inf, limit=200)[0]
    # Bins at the deciles of the exact distribution (cumulative trapezoid on a fine grid).
    values = np.exp(log_alpha_posterior(grid, n_clusters, n_samples) - shift)
    cdf = np.concatenate([[0.0], np.cumsum(0.5 * (values[1:] + values[:-1]) * np.diff(grid))])
    edges = np.interp(np.linspace(0, 1, 11), cdf / cdf[-1], grid)
    edges[0], edges[-1] = 0.0, np.inf
    expected = np.array([
        quad(density, lo, hi, limit=200)[0] / norm
        for lo, hi in zip(edges[:-1], edges[1:], strict=True)
    ])
    assert np.all(np.abs(expected - 0.1) < 0.01)  # the bins are where they should be
    observed = np.histogram(draws, bins=edges)[0]
    stat = float(np.sum((observed - draws.size * expected) ** 2 / (draws.size * expected)))
    assert chi2.sf(stat, len(expected) - 1) > 1e-3, (observed, draws.size * expected)
    mean = quad(lambda a: a * density(a), 0, np.inf, limit=200)[0] / norm
    assert abs(draws.mean() - mean) < 4 * batch_means_se(draws), (draws.mean(), mean)


def test_alpha_update_moves_with_the_number_of_clusters():
    rng = np.random.default_rng(3)
    few = [sample_alpha_posterior_crp(1.0, 2, 500, rng, n_steps=20) for _ in range(30)]
    many = [sample_alpha_posterior_crp(1.0, 60, 500, rng, n_steps=20) for _ in range(30)]
    assert np.median(many) > 5 * np.median(few)
    with pytest.raises(ValueError, match="n_clusters"):
        sample_alpha_posterior_crp(1.0, 0, 10, rng)
    with pytest.raises(ValueError, match="alpha"):
        sample_alpha_posterior_crp(-1.0, 2, 10, rng)
