"""With the likelihood switched off, every solver samples the IBP prior.

Data with no columns (D = 0) make p(X | Z) constant, so a correct sampler's Z are draws from
the IBP: the number of features has mean ``alpha * sum_n beta / (beta + n - 1)`` (``alpha H_N``
for the one-parameter IBP), and each row's number of features is Poisson(alpha).
"""

import numpy as np
import pytest
from scipy.stats import chi2, poisson

from sklearn_ibp.priors.ibp import expected_n_features
from sklearn_ibp.solvers import (
    AcceleratedIBP,
    CollapsedIBP,
    SemiCollapsedIBP,
    UncollapsedIBP,
)
from tests.solvers._helpers import run_solver

N_ROWS = 12


def batch_means_se(values, n_batches=20):
    """Standard error of the mean of a correlated series by batch means."""
    values = np.asarray(values, dtype=float)
    batches = np.array_split(values, n_batches)
    means = np.array([b.mean() for b in batches])
    return float(means.std(ddof=1) / np.sqrt(n_batches))


@pytest.mark.parametrize(
    "solver, alpha, beta",
    [
        (AcceleratedIBP(k_max=8), 2.0, 1.0),
        (AcceleratedIBP(k_max=8), 1.5, 3.0),
        (CollapsedIBP(k_max=8), 2.0, 1.0),
        (UncollapsedIBP(k_max=8), 2.0, 1.0),
        (SemiCollapsedIBP(k_max=8), 2.0, 1.0),
    ],
    ids=lambda v: getattr(v, "name", str(v)),
)
def test_prior_recovered_without_likelihood(solver, alpha, beta):
    X = np.zeros((N_ROWS, 0))
    hyper = dict(alpha=alpha, beta=beta, sigma_x=1.0, sigma_a=1.0)
    _, draws = run_solver(
        solver, X, hyper, n_sweeps=8000, seed=3, thin=2, burn_in=100,
        record=lambda s: (s.n_features, s.active_Z.sum(axis=1).copy()),
    )
    n_features = np.array([k for k, _ in draws])
    expected = expected_n_features(N_ROWS, alpha, beta)
    se = batch_means_se(n_features)
    assert abs(n_features.mean() - expected) < 3 * se, (n_features.mean(), expected, se)
    assert se < 0.1 * expected  # the test has power: the error bar is tight

    # Row sums are Poisson(alpha), for any beta. Pool every row of every draw; the
    # rows of one draw are dependent, so the statistic is scaled down by the number of
    # rows (a conservative bound on the variance inflation).
    row_sums = np.concatenate([r for _, r in draws])
    assert abs(row_sums.mean() - alpha) < 3 * batch_means_se(row_sums)
    top = int(poisson.ppf(0.995, alpha))
    observed = np.bincount(np.minimum(row_sums, top), minlength=top + 1)
    probs = poisson.pmf(np.arange(top + 1), alpha)
    probs[-1] = poisson.sf(top - 1, alpha)
    expected_counts = probs * row_sums.size
    stat = np.sum((observed - expected_counts) ** 2 / expected_counts) / N_ROWS
    assert chi2.sf(stat, top) > 1e-3, (observed, expected_counts)
