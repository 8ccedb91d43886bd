"""The slice samplers check their feature slots against the memory limit before doubling
them: an alpha far above the data's support breaks sticks above the slice level without
end (1e7 per unit of log stick length)."""

import numpy as np
import pytest

from sklearn_ibp.exceptions import AllocationTooLargeError
from sklearn_ibp.likelihoods import LinearGaussianFeatures
from sklearn_ibp.solvers import SemiOrderedSliceIBP, SliceIBP

X = np.random.default_rng(0).standard_normal((40, 5))
OBSERVED = np.ones(X.shape, dtype=np.uint8)
PARAMS = {"sigma_x": 1.0, "sigma_a": 1.0}


@pytest.mark.parametrize("solver", [SliceIBP(), SemiOrderedSliceIBP()],
                         ids=lambda s: type(s).__name__)
def test_huge_alpha_is_refused_when_the_slots_would_outgrow_the_limit(solver, monkeypatch):
    rng = np.random.default_rng(0)
    Z = (rng.random((40, 2)) < 0.5).astype(np.int8)
    lik = LinearGaussianFeatures()
    state = solver.initialize(X, OBSERVED, Z, None, 1.0, PARAMS, lik, rng)
    monkeypatch.setenv("SKLEARN_IBP_MAX_MEMORY", "1M")
    solver.sweep(state, lik, rng)  # an ordinary alpha sweeps under the same limit
    state.alpha = 1e7
    with pytest.raises(AllocationTooLargeError, match=r"feature slots.*lower alpha"):
        for _ in range(5):
            solver.sweep(state, lik, rng)
