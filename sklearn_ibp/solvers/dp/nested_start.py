"""The nested-subsample start of a DP mixture chain (``DPMixture(init="subsample")``).

Why
---
At a million rows every move of a DP mixture sampler is accepted or refused at a Bayes
factor of ``e^100`` or more, so a chain goes where its first greedy splits take it: a
split of a cluster that holds several Gaussians is accepted wherever it cuts, the cut often
halves a Gaussian, and the two halves, each holding the tail of a neighbour, are a state
that no split, merge or row move leaves in hundreds of sweeps (the sub-cluster sampler's
module docstring, "three-cluster" moves). On a few thousand rows the same posterior is
flat enough for the split and merge moves to repair such cuts within a few sweeps.

The start
---------
The chain is first run on nested random subsamples of the rows: ``first_size`` rows from
one cluster, ``sweeps`` sweeps with the estimator's hyperparameter updates (by the solver's
``for_subsamples()`` where it has one: the sub-cluster sampler with its reallocation and
three-cluster moves, cheap on a subsample and what removes the traps there); then the
subsample doubles: the rows that join are each put in the cluster that gives it the
highest ``log n_k + log f(x | theta_k)`` under a posterior draw ``theta`` of the current
clusters' parameters, and the chain continues on the doubled subsample from that
partition, its ``alpha`` and the base's hyperparameters. Once a subsample holds more than
a quarter of the ``N`` rows (so doubling it again would not leave a doubling's worth), the
partition of all the rows (that subsample's, plus the other rows assigned as above) is the
start of the chain proper. The work is about ``sweeps``
sweeps over all the rows (``sweeps`` times ``first_size (1 + 2 + 4 + ...) < N``).

It is an initialisation, like k-means: the chain proper is the same Markov chain from
another state (its stationary distribution is the DP posterior whatever the start), and
none of the subsample sweeps is recorded. With ``N <= first_size`` it is the single start.
This is coarse-to-fine initialisation by data size, the practice of running a sampler on a
subsample before the full data; no source text gives it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ClusterStart", "nested_subsample_start", "nested_subsample_start_on_store"]

#: Rows of the first subsample and sweeps per subsample (``DPMixture(init="subsample")``).
FIRST_SIZE = 2000
SWEEPS = 10
#: Rows whose assignment is computed at once (the ``(rows, K)`` log-density matrix).
_ASSIGN_BLOCK = 2**16
#: The start on a row store brings at most this many rows into this process, and at most
#: ``_STORE_VALUES / n_features`` (32 MiB of float64).
STORE_ROWS = 2**19
_STORE_VALUES = 2**22


@dataclass(frozen=True)
class ClusterStart:
    """A start given by clusters, not labels: each row is drawn into cluster ``k`` with
    probability proportional to ``n_k N(x | mu_k, S_k^-1)``, ``(mu_k, S_k)`` a posterior
    draw given the cluster's statistics (``counts``; ``sums`` and ``scatters`` of the rows
    minus ``shift``). What :func:`nested_subsample_start_on_store` gives
    :meth:`SubclusterDP.initialize <sklearn_ibp.solvers.dp.SubclusterDP.initialize>` for
    rows on a Dask cluster."""

    counts: np.ndarray
    sums: np.ndarray
    scatters: np.ndarray
    shift: np.ndarray


def _subsample_solver(solver):
    """The solver of the subsample chains: ``solver.for_subsamples()`` where the solver
    has one (the sub-cluster sampler enables its extra moves there), else ``solver``."""
    for_subsamples = getattr(solver, "for_subsamples", None)
    return solver if for_subsamples is None else for_subsamples()


def _one_cluster(X_sub, rng):
    return np.zeros(X_sub.shape[0], dtype=np.int64)


def _assign_rows(solver, state, base, X_new, rng):
    """Each row of ``X_new`` to the cluster of highest ``log n_k + log f(x | theta_k)``,
    ``theta`` a posterior draw of the state's clusters' parameters."""
    K = int(state.n_clusters)
    params = solver.cluster_parameters(state, base, rng)
    counts = np.bincount(np.asarray(state.labels, dtype=np.int64), minlength=K)[:K]
    with np.errstate(divide="ignore"):
        log_weights = np.log(counts.astype(float))
    out = np.empty(X_new.shape[0], dtype=np.int64)
    for start in range(0, X_new.shape[0], _ASSIGN_BLOCK):
        rows = X_new[start:start + _ASSIGN_BLOCK]
        out[start:start + _ASSIGN_BLOCK] = np.argmax(
            base.log_likelihood(rows, params) + log_weights, axis=1)
    return out


def nested_subsample_start(solver, X, alpha, base, rng, first_partition, *, update_options,
                           first_size=None, sweeps=None):
    """The starting partition of a chain on ``X`` from chains on nested subsamples (module
    docstring).

    Parameters
    ----------
    solver : BaseDPSolver
        The chain's solver; it runs on the subsamples too.
    X : ndarray of shape (n_samples, n_features)
        All the rows (not modified).
    alpha : float
        The chain's starting ``alpha``.
    base : base object
        The chain's base, initialised on all of ``X``; its hyperparameters are updated by
        the subsample sweeps (with ``update_options["sample_hyperparameters"]``), as the
        chain's would be.
    rng : numpy.random.Generator
        The chain's generator.
    first_partition : callable
        ``first_partition(X_sub, rng) -> labels``, the start of the first subsample's
        chain.
    update_options : dict
        Keyword arguments of ``solver.update_state`` after each sweep.
    first_size, sweeps : int or None
        Rows of the first subsample, and sweeps per subsample (None: the module's
        ``FIRST_SIZE`` and ``SWEEPS``, 2,000 and 10).

    Returns
    -------
    labels : ndarray of shape (n_samples,), int64
        The starting partition of all the rows.
    alpha : float
        ``alpha`` after the subsample sweeps (the argument if there were none).
    """
    first_size = FIRST_SIZE if first_size is None else int(first_size)
    sweeps = SWEEPS if sweeps is None else int(sweeps)
    solver = _subsample_solver(solver)
    N = X.shape[0]
    if N <= first_size:
        return np.asarray(first_partition(X, rng), dtype=np.int64), float(alpha)
    order = rng.permutation(N)
    n = int(first_size)
    labels = np.asarray(first_partition(X[order[:n]], rng), dtype=np.int64)
    while True:
        state = solver.initialize(X[order[:n]], labels, alpha, base, rng)
        for _ in range(int(sweeps)):
            solver.sweep(state, base, rng)
            solver.update_state(state, base, rng, **update_options)
        alpha = float(state.alpha)
        m = N if 4 * n > N else 2 * n
        new = _assign_rows(solver, state, base, X[order[n:m]], rng)
        joined = np.concatenate([np.asarray(state.labels, dtype=np.int64)[:n], new])
        labels = np.unique(joined, return_inverse=True)[1].reshape(-1).astype(np.int64)
        n = m
        if n == N:
            break
    out = np.empty(N, dtype=np.int64)
    out[order] = labels
    return out, alpha


def nested_subsample_start_on_store(solver, store, alpha, base, rng, *, update_options,
                                    first_size=None, sweeps=None, max_rows=None):
    """The nested-subsample start of a sub-cluster chain whose rows are on a Dask cluster
    (:class:`~sklearn_ibp.distributed.dask_rows.DaskRows`).

    At most ``max_rows`` rows (None: ``STORE_ROWS``, 2**19) and ``2**22 / n_features``
    (32 MiB of values), and at least ``first_size``, drawn uniformly
    without replacement, come into this process. With all ``N`` rows within that, this is
    :func:`nested_subsample_start` on them (labels for the store). Otherwise the nested
    start runs on the drawn rows, then ``sweeps`` sweeps on all of them, and the result is
    a :class:`ClusterStart` of their clusters, from which the solver draws every row of
    the store (one pass on the workers).

    Returns
    -------
    start : ndarray of shape (n_samples,) or ClusterStart
    alpha : float
    """
    first_size = FIRST_SIZE if first_size is None else int(first_size)
    sweeps = SWEEPS if sweeps is None else int(sweeps)
    max_rows = STORE_ROWS if max_rows is None else int(max_rows)
    N, D = int(store.n_samples), int(store.n_features)
    cap = max(first_size, min(max_rows, _STORE_VALUES // max(1, D)))
    if N <= cap:
        X_sub = store.gather_rows(np.arange(N))
        return nested_subsample_start(solver, X_sub, alpha, base, rng, _one_cluster,
                                      update_options=update_options,
                                      first_size=first_size, sweeps=sweeps)
    rows = np.sort(rng.choice(N, size=cap, replace=False))
    X_sub = store.gather_rows(rows)
    labels, alpha = nested_subsample_start(solver, X_sub, alpha, base, rng, _one_cluster,
                                           update_options=update_options,
                                           first_size=first_size, sweeps=sweeps)
    solver = _subsample_solver(solver)
    state = solver.initialize(X_sub, labels, alpha, base, rng)
    for _ in range(int(sweeps)):
        solver.sweep(state, base, rng)
        solver.update_state(state, base, rng, **update_options)
    st = state.stats
    return (ClusterStart(st["counts"].copy(), st["sums"].copy(), st["scatters"].copy(),
                         np.array(st["shift"], dtype=np.float64)),
            float(state.alpha))
