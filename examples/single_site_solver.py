"""
Writing a solver: a single-site Gibbs sampler
=============================================

The worked example of the user guide's "Writing a solver" page: a new solver for the
linear-Gaussian IBP, written in one module and registered in one line, then used by name
in :class:`~sklearn_ibp.IBPFactorAnalysis`.

It is the plainest collapsed sampler there is (Griffiths and Ghahramani 2005, sec. 4.1):
each ``z_nk`` of a feature other rows also hold is drawn from
``p(z_nk = 1 | Z_-nk, X) ~ m_-n,k / N * p(X | Z)``, and the features only row ``n`` holds
are replaced by a ``Poisson(alpha / N)`` number of new ones, accepted with the ratio of
the collapsed likelihoods (a Metropolis-Hastings step whose proposal is the prior;
Meeds et al. 2007). ``p(X | Z)`` is recomputed from scratch at every step, so it is slow:
the package's :class:`~sklearn_ibp.solvers.AcceleratedIBP` draws from the same
conditionals in a fraction of the time. What the solver does not write (the
hyperparameter and missing-value updates, the log joint, snapshots and checkpoints) it
inherits from :class:`~sklearn_ibp.solvers.BaseIBPSolver`.
"""

from numbers import Integral

import numpy as np
from sklearn.utils._param_validation import Interval

from sklearn_ibp.likelihoods.linear_gaussian import log_marginal_likelihood
from sklearn_ibp.solvers import BaseIBPSolver, register_solver


class SingleSiteGibbs(BaseIBPSolver):
    """Single-site collapsed Gibbs sampler of the linear-Gaussian IBP (beta = 1).

    Parameters
    ----------
    spare : int, default=4
        Free columns kept in the state's ``Z`` for new features.
    """

    name = "single_site"  # the model, "ibp", comes from BaseIBPSolver
    _parameter_constraints: dict = {"spare": [Interval(Integral, 1, None, closed="left")]}

    def __init__(self, spare=4):
        self.spare = spare

    def initialize(self, X, Z, hyper, rng):
        return self._new_state(X, Z, hyper, self.spare)

    def sweep(self, state, rng):
        N = state.X.shape[0]
        for n in range(N):
            for k in range(state.n_features):
                others = int(state.Z[:, k].sum()) - int(state.Z[n, k])
                if others == 0:
                    continue  # a feature of row n alone: the move below
                log_post = np.empty(2)
                for value in (0, 1):
                    state.Z[n, k] = value
                    log_prior = np.log(others if value else N - others)
                    log_post[value] = log_prior + self.log_likelihood(state)
                state.Z[n, k] = rng.random() < 1.0 / (1.0 + np.exp(log_post[0] - log_post[1]))
            self._new_features(state, n, rng)
        self.compact(state, state.active_Z.any(axis=0))

    def _new_features(self, state, n, rng):
        Z = state.active_Z
        alone = (Z[n] == 1) & (Z.sum(axis=0) == 1)
        n_new = rng.poisson(state.alpha / state.X.shape[0])
        proposed = np.zeros((Z.shape[0], int((~alone).sum()) + n_new), dtype=np.int8)
        proposed[:, : int((~alone).sum())] = Z[:, ~alone]
        proposed[n, int((~alone).sum()):] = 1
        log_ratio = (log_marginal_likelihood(state.X, proposed, state.sigma_x, state.sigma_a)
                     - self.log_likelihood(state))
        if np.log(rng.random()) < log_ratio:
            K = proposed.shape[1]
            state.Z = np.zeros((Z.shape[0], K + self.spare), dtype=np.int8)
            state.Z[:, :K] = proposed
            state.n_features = K


register_solver(SingleSiteGibbs)


if __name__ == "__main__":
    from sklearn_ibp import IBPFactorAnalysis
    from sklearn_ibp.datasets import make_block_images

    X = make_block_images(n_samples=40, random_state=0)[0]
    model = IBPFactorAnalysis(solver="single_site", n_iter=40, random_state=0).fit(X)
    print(f"{model.n_components_} features, sigma_x = {model.sigma_x_:.2f}")
