"""What the samplers of Neal (2000) for DP mixtures share (Görür 2007, sec. 3.2.1-3.2.2).

Every one of them keeps the indicators and the parameters of the active components, updates
the indicators row by row, and then draws every component's parameters from its posterior
given its rows (eq. 3.31). They differ in how a row may open a new component. Each solver
has two implementations of its indicator sweep:

* a numba kernel for Gaussian components (a base whose parameters are exactly
  ``{"means", "precisions"}``), which evaluates ``log N(x | mu_k, S_k^{-1})`` from Cholesky
  factors of the precisions and takes its draws from ``G_0`` from a pool filled by
  ``base.sample_prior`` (:class:`GaussianSlots`, :class:`PriorPool`);
* a plain Python loop that talks to the base only through ``sample_prior``,
  ``log_likelihood`` and ``sample_posterior`` (:class:`GenericSlots`), for any other base.

Both draw every random number from the chain's generator, so a seed fixes the chain.
"""

from __future__ import annotations

import numpy as np

from ._dp_base import BaseDPSolver, MixtureState, relabel
from ._dp_gaussian_kernels import (
    DONE,
    N_ACTIVE,
    N_CTR,
    N_SLOTS,
    NEED_CAPACITY,
    NEED_POSTERIOR,
    NEED_PRIOR,
    POOL_POS,
    relabel_slots,
)

__all__ = ["GaussianSlots", "GenericSlots", "NealDPSolver", "PriorPool", "draw_index_py",
           "is_gaussian"]


def is_gaussian(params) -> bool:
    """Whether the kernels can serve these parameters: Gaussian means and precisions only."""
    return set(params) == {"means", "precisions"}


def draw_index_py(log_weights, rng) -> int:
    """An index drawn with probability proportional to ``exp(log_weights)`` (one uniform)."""
    w = np.exp(log_weights - np.max(log_weights))
    cumulative = np.cumsum(w)
    u = rng.random() * cumulative[-1]
    return int(min(np.searchsorted(cumulative, u, side="right"), w.size - 1))


def cholesky_factors(precisions):
    """Lower Cholesky factors of the precisions and ``sum log diag`` of each."""
    chols = np.linalg.cholesky(precisions)
    return chols, np.log(np.diagonal(chols, axis1=-2, axis2=-1)).sum(axis=-1)


class GaussianSlots:
    """Gaussian components in slots with spare capacity, for the kernels.

    ``arrays`` holds every per-slot array (first axis the slot); :meth:`grow` doubles them
    all, so a solver may add its own (``add``).
    """

    def __init__(self, labels, n_clusters, params, capacity):
        means = np.asarray(params["means"], dtype=np.float64)[:n_clusters]
        precisions = np.asarray(params["precisions"], dtype=np.float64)[:n_clusters]
        D = means.shape[1]
        self._cap = max(int(capacity), n_clusters + 2)
        self.arrays = {}
        self.add("means", (D,))
        self.add("precisions", (D, D))
        self.add("chols", (D, D))
        self.add("half_logdets", ())
        self.add("counts", (), np.int64)
        self.add("free", (), np.int64)
        self.arrays["means"][:n_clusters] = means
        self.arrays["precisions"][:n_clusters] = precisions
        if n_clusters:
            chols, hld = cholesky_factors(precisions)
            self.arrays["chols"][:n_clusters] = chols
            self.arrays["half_logdets"][:n_clusters] = hld
        self.arrays["counts"][:n_clusters] = np.bincount(labels, minlength=n_clusters)
        self.ctr = np.zeros(N_CTR, dtype=np.int64)
        self.ctr[N_SLOTS] = n_clusters
        self.ctr[N_ACTIVE] = n_clusters

    @property
    def capacity(self) -> int:
        return self._cap

    def add(self, name, shape, dtype=np.float64):
        """A new per-slot array of zeros, ``(capacity, *shape)``."""
        self.arrays[name] = np.zeros((self._cap, *shape), dtype=dtype)
        return self.arrays[name]

    def __getattr__(self, name):
        arrays = self.__dict__.get("arrays", {})
        if name in arrays:
            return arrays[name]
        raise AttributeError(name)

    def grow(self):
        """Double the capacity of every per-slot array (contents kept)."""
        new_cap = 2 * self._cap
        for name, a in self.arrays.items():
            bigger = np.zeros((new_cap, *a.shape[1:]), dtype=a.dtype)
            bigger[: self._cap] = a
            self.arrays[name] = bigger
        self._cap = new_cap

    def run(self, sweep, n_extra=None, refill=None, posterior=None):
        """Call ``sweep(arrays, log_weights)`` until the kernel returns ``DONE``: on
        ``NEED_CAPACITY`` the arrays grow, on ``NEED_PRIOR`` and ``NEED_POSTERIOR``
        ``refill()`` and ``posterior()`` supply the draws. ``log_weights`` is a fresh
        (capacity + ``n_extra``,) array each call, or None without ``n_extra``."""
        while True:
            arrays = self.arrays
            log_weights = None if n_extra is None else np.empty(self._cap + n_extra)
            status = sweep(arrays, log_weights)
            if status == DONE:
                return
            if status == NEED_CAPACITY:
                self.grow()
            elif status == NEED_PRIOR:
                refill()
            elif status == NEED_POSTERIOR:
                posterior()

    def set_component(self, slot, mean, precision):
        """Write a component drawn by the base into ``slot``."""
        self.arrays["means"][slot] = mean
        self.arrays["precisions"][slot] = precision
        chol, hld = cholesky_factors(np.asarray(precision)[None])
        self.arrays["chols"][slot] = chol[0]
        self.arrays["half_logdets"][slot] = hld[0]

    def finish(self, labels):
        """Relabel ``labels`` (in place) ``0 .. K - 1``; the compact parameters."""
        old = relabel_slots(labels, int(self.ctr[N_SLOTS]))
        params = {"means": self.arrays["means"][old].copy(),
                  "precisions": self.arrays["precisions"][old].copy()}
        return old.size, params


class PriorPool:
    """Draws from ``G_0`` made in bulk by ``base.sample_prior`` for a kernel to consume."""

    def __init__(self, D):
        self.means = np.zeros((0, D))
        self.precisions = np.zeros((0, D, D))

    def refill(self, base, n, rng, ctr):
        draws = base.sample_prior(int(n), rng)
        self.means = np.ascontiguousarray(draws["means"], dtype=np.float64)
        self.precisions = np.ascontiguousarray(draws["precisions"], dtype=np.float64)
        ctr[POOL_POS] = 0


class GenericSlots:
    """Components of any base in slots with spare capacity, for the Python sweeps."""

    def __init__(self, labels, n_clusters, params, capacity=8):
        cap = max(int(capacity), 2 * n_clusters + 2)
        self.params = {}
        for name, v in params.items():
            v = np.asarray(v)[:n_clusters]
            arr = np.zeros((cap, *v.shape[1:]), dtype=v.dtype)
            arr[:n_clusters] = v
            self.params[name] = arr
        self.counts = np.zeros(cap, dtype=np.int64)
        self.counts[:n_clusters] = np.bincount(labels, minlength=n_clusters)
        self.free = []
        self.n_slots = n_clusters

    def view(self, slots=None):
        """The parameters of ``slots`` (default: every slot in use) as a dict of arrays."""
        if slots is None:
            return {k: v[: self.n_slots] for k, v in self.params.items()}
        return {k: v[slots] for k, v in self.params.items()}

    def log_likelihood(self, base, x):
        """``log F(x | theta_k)`` for every slot in use (free slots included)."""
        return base.log_likelihood(x[None, :], self.view())[0]

    def take(self):
        if self.free:
            return self.free.pop()
        if self.n_slots == self.counts.shape[0]:
            cap = 2 * self.counts.shape[0]
            for k, v in self.params.items():
                bigger = np.zeros((cap, *v.shape[1:]), dtype=v.dtype)
                bigger[: v.shape[0]] = v
                self.params[k] = bigger
            counts = np.zeros(cap, dtype=np.int64)
            counts[: self.counts.shape[0]] = self.counts
            self.counts = counts
        self.n_slots += 1
        return self.n_slots - 1

    def release(self, slot):
        self.free.append(slot)

    def set(self, slot, draw, index=0):
        for k, v in draw.items():
            self.params[k][slot] = v[index]

    def finish(self, labels):
        new, old = relabel(labels)
        labels[:] = new
        return old.size, {k: v[old].copy() for k, v in self.params.items()}


class NealDPSolver(BaseDPSolver):
    """Shared driver: initial state, dispatch to the kernel or the Python sweep, and the
    parameter step of eq. 3.31 after the indicators."""

    def initialize(self, X, labels, alpha, base, rng) -> MixtureState:
        """A chain state from the partition ``labels``: parameters drawn from the posterior."""
        self._validate_params()
        X = np.array(X, dtype=np.float64, order="C", copy=True)
        labels = np.asarray(labels)
        if labels.shape != (X.shape[0],):
            raise ValueError(f"labels must have shape ({X.shape[0]},); got {labels.shape}.")
        labels, _ = relabel(labels.astype(np.int64))
        labels = np.ascontiguousarray(labels, dtype=np.int64)
        K = int(labels.max()) + 1
        params = base.sample_posterior_all(X, labels, K, rng)
        return MixtureState(X=X, labels=labels, n_clusters=K, alpha=float(alpha),
                            params=dict(params))

    def sweep(self, state: MixtureState, base, rng) -> None:
        """Update every indicator once, then every component's parameters (eq. 3.31)."""
        if is_gaussian(state.params):
            self._sweep_gaussian(state, base, rng)
        else:
            self._sweep_generic(state, base, rng)

    def _sweep_gaussian(self, state, base, rng):  # pragma: no cover - abstract
        raise NotImplementedError

    def _sweep_generic(self, state, base, rng):  # pragma: no cover - abstract
        raise NotImplementedError

    def _gaussian_slots(self, state, extra=0):
        return GaussianSlots(state.labels, state.n_clusters, state.params,
                             2 * state.n_clusters + extra + 8)

    def _update_parameters(self, state, base, rng, labels, n_clusters, params):
        """Store the relabelled indicators and draw every component's parameters given its
        rows (eq. 3.31: an exact draw for a conjugate base, one Gibbs scan otherwise)."""
        state.labels = labels
        state.n_clusters = int(n_clusters)
        state.params = dict(base.sample_posterior_all(state.X, labels, n_clusters, rng, params))
