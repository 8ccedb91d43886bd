"""On the block images the samplers find the four shapes and the noise level.

The data are centred before fitting, so a shape can be represented either by itself in the
rows that have it or by its negative in the rows that lack it (with an always-on offset
feature absorbing the difference): both explain the centred data equally well. A shape is
"found" when some posterior feature has |correlation| > 0.9 with it.

Single Gibbs chains on the block images sometimes settle in a mode where one feature is the
sum of two shapes (about one chain in four at N = 100); the best of a few chains, by log
joint probability, is what ``IBPFactorAnalysis`` reports as ``Z_``.
"""

import numpy as np
import pytest

from sklearn_ibp import IBPFactorAnalysis
from sklearn_ibp.datasets import make_block_images


def matched_correlations(true_features, components):
    C = np.corrcoef(np.vstack([true_features, components]))[: len(true_features)]
    return np.abs(C[:, len(true_features) :]).max(axis=1)


@pytest.mark.parametrize(
    "solver, n_samples, n_chains",
    [("accelerated", 1000, 2), ("collapsed", 100, 4)],
)
def test_block_images_recovered(solver, n_samples, n_chains):
    X, _, A = make_block_images(n_samples=n_samples, noise=0.5, random_state=0)
    model = IBPFactorAnalysis(
        solver=solver,
        n_iter=300,
        n_chains=n_chains,
        sigma_x=1.0,  # start above the noise level; it is resampled
        sample_hyperparameters=True,
        random_state=0,
    ).fit(X)
    assert matched_correlations(A, model.components_).min() > 0.9
    assert abs(model.sigma_x_ - 0.5) < 0.2 * 0.5
    # Every chain's noise level settles near the truth, not only the best one.
    late = model.traces_["sigma_x"][:, 200:]
    assert np.all(np.abs(late.mean(axis=1) - 0.5) < 0.1)
