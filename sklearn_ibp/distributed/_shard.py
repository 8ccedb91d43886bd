"""What one processor of the data-parallel sampler does (Doshi-Velez 2009, sec. 5.1).

A shard is a block of rows. Between synchronisations it runs accelerated Gibbs sweeps
(:func:`sklearn_ibp.solvers.ibp._accelerated_kernels.sweep_accelerated`) on its own rows
given the global
feature posterior, in which the other shards' rows stay fixed at their last message: its
statistics are ``others + own``, with ``others = total - own`` computed from the broadcast
totals, and only ``own`` moves while it sweeps. At the end of a round it sends back its own
sufficient statistics (counts ``m_k^p``, ``Z_p^T Z_p``, ``Z_p^T X_p``: the information form
of the linear-Gaussian likelihood, ``O(K^2 + K D)``) and its rows of ``Z``.

Everything here is a module-level function of plain records, so that Dask can ship it to a
worker process; a task never mutates its arguments, so the root's copy of a shard stays the
last synchronised state, from which a lost shard is re-sent.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field, replace

import numpy as np

from ..solvers.ibp._accelerated_kernels import refresh_posterior, sweep_accelerated

__all__ = ["ShardData", "ShardState", "SweepMessage", "RoundMessage", "run_round", "sweep_settings"]


@dataclass
class ShardData:
    """The rows of one shard: data with missing entries at their starting values, and the
    flat indices (C order) of the missing entries."""

    X: np.ndarray
    missing: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def current(self, imputed) -> np.ndarray:
        """The shard's data with the current imputation of its missing entries."""
        if self.missing.size == 0:
            return self.X
        X = self.X.copy()
        X.flat[self.missing] = imputed
        return X


@dataclass
class ShardState:
    """What the root keeps of a shard between rounds (its last synchronised state).

    ``Z`` has exactly ``n_features`` columns, the global features; ``counts``, ``gram``
    and ``cross`` are the shard's own statistics over them. ``cov`` and ``mean`` carry the
    feature posterior from one round to the next only when the shard is alone (then it is
    exactly the serial sampler's state); with several shards the posterior is rebuilt from
    the broadcast totals every round. ``compute_seconds`` and ``cpu_seconds`` are the
    wall and the thread CPU seconds of the shard's last round (the CPU time hardly depends
    on what else runs on the machine; ``benchmarks/bench_parallel.py`` reads it).
    """

    Z: np.ndarray
    counts: np.ndarray
    gram: np.ndarray
    cross: np.ndarray
    rng: np.random.Generator
    imputed: np.ndarray
    windows_done: int = 0
    cov: np.ndarray | None = None
    mean: np.ndarray | None = None
    compute_seconds: float = 0.0
    cpu_seconds: float = 0.0


@dataclass
class SweepMessage:
    """What the root broadcasts for the shards' sweeps: statistics of the whole ``Z``
    (``counts``, ``gram = Z^T Z``, ``cross = Z^T X``), the hyperparameters and the sweep
    settings. :class:`RoundMessage` and :class:`._metropolis.MetropolisMessage` add what
    their rounds need."""

    counts: np.ndarray
    gram: np.ndarray
    cross: np.ndarray
    n_total: int
    alpha: float
    beta: float
    sigma_x: float
    sigma_a: float
    n_sweeps: int
    window: int
    k_max: int
    refresh_every: int
    feature_subsample: float | None


def sweep_settings(solver, state) -> dict:
    """The :class:`SweepMessage` fields from the chain ``state`` (rows, hyperparameters)
    and the data-parallel ``solver`` (sweep settings); the statistics are the caller's."""
    return dict(
        n_total=state.X.shape[0], alpha=state.alpha, beta=state.beta,
        sigma_x=state.sigma_x, sigma_a=state.sigma_a,
        n_sweeps=int(solver.sweeps_per_sync), window=int(solver.window),
        k_max=int(solver.k_max), refresh_every=int(solver.refresh_every),
        feature_subsample=solver.feature_subsample,
    )


@dataclass
class RoundMessage(SweepMessage):
    """What the root broadcasts at a synchronisation: the totals over all shards, the
    hyperparameters and the round's instructions (``refresh``: recompute the posterior;
    ``alone``: one shard holds every row; ``impute``: redraw the missing entries)."""

    refresh: bool
    alone: bool
    impute: bool = False


def exact_statistics(Z, X):
    """``(counts, Z^T Z, Z^T X)`` of a block of rows, as the serial sampler computes them."""
    Zf = Z.astype(float)
    return Z.sum(axis=0).astype(np.int64), Zf.T @ Zf, Zf.T @ X


def _pad(array, shape):
    out = np.zeros(shape, dtype=array.dtype)
    out[tuple(slice(0, s) for s in array.shape)] = array
    return out


def _grow(Z, arrays, K, spare):
    """Double the capacity of ``Z`` and of the per-feature arrays (as the serial sampler)."""
    cap = max(2 * Z.shape[1], K + spare)
    Z_new = np.zeros((Z.shape[0], cap), dtype=np.int8)
    Z_new[:, :K] = Z[:, :K]
    grown = {}
    for key, a in arrays.items():
        if a.ndim == 1:
            new = np.zeros(cap, dtype=a.dtype)
            new[:K] = a[:K]
        elif a.shape[0] == a.shape[1] and key in ("gram", "cov"):
            new = np.zeros((cap, cap))
            new[:K, :K] = a[:K, :K]
        else:
            new = np.zeros((cap, a.shape[1]))
            new[:K] = a[:K]
        grown[key] = new
    return Z_new, grown


def _compact(Z, arrays, K):
    """Drop the features no row has (``counts == 0``), as the serial sampler does after a
    sweep; only a shard that is alone may do this between synchronisations."""
    idx = np.flatnonzero(arrays["counts"][:K] > 0)
    K_new = idx.size
    if K_new == K:
        return K
    Z[:, :K_new] = Z[:, idx]
    Z[:, K_new:K] = 0
    for key in ("gram", "cov"):
        a = arrays[key]
        a[:K_new, :K_new] = a[np.ix_(idx, idx)]
        a[K_new:, :] = 0.0
        a[:, K_new:] = 0.0
    for key in ("cross", "mean"):
        a = arrays[key]
        a[:K_new] = a[idx]
        a[K_new:] = 0.0
    arrays["counts"][:K_new] = arrays["counts"][idx]
    arrays["counts"][K_new:] = 0
    return K_new


def sweep_shard_rows(X, Z, work, K, order, sampled, message, k_max, windows_done, spare, rng):
    """One accelerated sweep over the rows ``order`` of a shard, growing ``Z`` and the
    per-feature arrays in ``work`` whenever the kernel runs out of free columns.

    Returns ``(Z, work, K, windows_done)`` (the arrays may be new, grown ones).
    """
    sigma_x2, sigma_a2 = message.sigma_x**2, message.sigma_a**2
    position = 0
    while position < order.size:
        if K + message.window * k_max > Z.shape[1]:
            Z, work = _grow(Z, work, K, spare)
            grown = np.ones(Z.shape[1], dtype=np.int8)
            grown[: sampled.shape[0]] = sampled
            sampled = grown
        K_new, done, advanced = sweep_accelerated(
            X, Z, work["counts"], work["gram"], work["cross"], work["cov"],
            work["mean"], K, order[position:], int(message.window), message.alpha,
            message.beta, sigma_x2, sigma_a2, int(k_max), int(message.refresh_every),
            windows_done, rng, int(message.n_total), sampled,
            int(np.iinfo(np.int64).max),  # no bound on the number of features
        )
        K = int(K_new)
        windows_done = int(done)
        position += int(advanced)
    return Z, work, K, windows_done


def run_round(data: ShardData, shard: ShardState, message: RoundMessage, token: bool):
    """Run ``message.n_sweeps`` accelerated Gibbs sweeps on one shard; return its new state.

    Parameters
    ----------
    data : ShardData
        The shard's rows.
    shard : ShardState
        Its last synchronised state (not modified).
    message : RoundMessage
        The broadcast totals and hyperparameters.
    token : bool
        Whether this shard holds the token this round: only its holder may create new
        features (sec. 5.1), which it appends after the global ones, so that feature ``k``
        means the same feature on every shard.

    Returns
    -------
    ShardState
        With ``counts``, ``gram``, ``cross`` the shard's own statistics at the end of the
        round, over the (possibly more) features it now knows.
    """
    start, start_cpu = time.perf_counter(), time.thread_time()
    X = np.ascontiguousarray(data.current(shard.imputed), dtype=float)
    rng = copy.deepcopy(shard.rng)
    K = shard.Z.shape[1]
    if message.refresh:
        # Hyperparameters or data changed: the shard's exact statistics, as the serial
        # sampler's refresh.
        counts, gram, cross = exact_statistics(shard.Z, X)
    else:
        counts, gram, cross = shard.counts, shard.gram, shard.cross
    # The other shards' rows, fixed for this round.
    others_counts = message.counts - shard.counts
    others_gram = message.gram - shard.gram
    others_cross = message.cross - shard.cross
    sigma_x2, sigma_a2 = message.sigma_x**2, message.sigma_a**2
    k_max = message.k_max if token else 0
    spare = max(16, 2 * message.window * message.k_max)
    cap = K + spare
    Z = np.zeros((X.shape[0], cap), dtype=np.int8)
    Z[:, :K] = shard.Z
    work = {
        "counts": _pad(others_counts + counts, (cap,)),
        "gram": _pad(others_gram + gram, (cap, cap)),
        "cross": _pad(others_cross + cross, (cap, X.shape[1])),
    }
    if message.alone and not message.refresh and shard.cov is not None:
        work["cov"] = _pad(shard.cov, (cap, cap))
        work["mean"] = _pad(shard.mean, (cap, X.shape[1]))
    else:
        work["cov"] = np.zeros((cap, cap))
        work["mean"] = np.zeros((cap, X.shape[1]))
        refresh_posterior(work["gram"], work["cross"], work["cov"], work["mean"], K,
                          sigma_x2, sigma_a2)
    windows_done = shard.windows_done
    N_p = X.shape[0]
    for _ in range(message.n_sweeps):
        order = rng.permutation(N_p).astype(np.int64)
        sampled = np.ones(Z.shape[1], dtype=np.int8)
        if message.feature_subsample is not None and K > 0:
            # Doshi-Velez 2009, sec. 5.1: a random subset of the features, chosen afresh each sweep.
            n_keep = max(1, int(np.ceil(message.feature_subsample * K)))
            sampled[:K] = 0
            sampled[rng.choice(K, size=n_keep, replace=False)] = 1
        Z, work, K, windows_done = sweep_shard_rows(X, Z, work, K, order, sampled, message,
                                              k_max, windows_done, spare, rng)
        if message.alone:
            K = _compact(Z, work, K)
    imputed = shard.imputed
    if message.impute and data.missing.size:
        # Asynchronous mode: the shard redraws its missing entries itself, given a draw
        # of A from its own view of the feature posterior (no round trip to the root).
        A = work["mean"][:K].copy()
        if K:
            A += np.linalg.cholesky(work["cov"][:K, :K]) @ rng.standard_normal((K, X.shape[1]))
        draw = Z[:, :K].astype(float) @ A + message.sigma_x * rng.standard_normal(X.shape)
        imputed = draw.flat[data.missing].copy()
    # Own statistics: what this round's sweeps leave after the others' are taken out
    # (for a shard alone ``others`` is exactly zero, so these are the sampler's own).
    K0 = others_counts.shape[0]
    own_counts = work["counts"][:K].copy()
    own_gram = work["gram"][:K, :K].copy()
    own_cross = work["cross"][:K].copy()
    if not message.alone:
        own_counts[:K0] -= others_counts
        own_gram[:K0, :K0] -= others_gram
        own_cross[:K0] -= others_cross
    return replace(
        shard,
        Z=Z[:, :K].copy(),
        counts=own_counts,
        gram=own_gram,
        cross=own_cross,
        rng=rng,
        imputed=imputed,
        windows_done=windows_done,
        cov=work["cov"][:K, :K].copy() if message.alone else None,
        mean=work["mean"][:K].copy() if message.alone else None,
        compute_seconds=time.perf_counter() - start,
        cpu_seconds=time.thread_time() - start_cpu,
    )


def residual_sum_of_squares(data: ShardData, shard: ShardState, A) -> float:
    """``sum (X_p - Z_p A)^2`` of the shard's rows given features ``A`` (for ``sigma_x``)."""
    X = data.current(shard.imputed)
    resid = X - shard.Z.astype(float) @ A
    return float(np.sum(resid**2))


def impute(data: ShardData, shard: ShardState, A, sigma_x):
    """Redraw the shard's missing entries from ``N(Z_p A, sigma_x^2)``; the new state."""
    X = data.current(shard.imputed)
    rng = copy.deepcopy(shard.rng)
    draw = shard.Z.astype(float) @ A + sigma_x * rng.standard_normal(X.shape)
    return replace(shard, imputed=draw.flat[data.missing].copy(), rng=rng)
