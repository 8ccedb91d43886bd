"""Drive a solver directly, without the estimator, for the statistical tests."""

import numpy as np


def run_solver(solver, X, hyper, n_sweeps, seed, thin=1, burn_in=0, init_Z=None, record=None):
    """Run ``solver`` for ``n_sweeps`` sweeps from ``init_Z`` (default: no features).

    ``record(state)`` is called on every kept sweep; the list of its results is returned.
    """
    rng = np.random.default_rng(seed)
    N = X.shape[0]
    Z0 = np.zeros((N, 0), dtype=np.int8) if init_Z is None else np.asarray(init_Z, np.int8)
    state = solver.initialize(X, Z0, hyper, rng)
    out = []
    for it in range(n_sweeps):
        solver.sweep(state, rng)
        if it >= burn_in and (it - burn_in) % thin == 0:
            out.append(record(state))
    return state, out
