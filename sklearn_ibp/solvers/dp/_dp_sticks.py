"""What the stick-breaking DP mixture samplers share (Görür 2007, sec. 3.1.4 and
3.2.3): stick posteriors, the bookkeeping of stick positions, and the Gaussian fast path.

The stick-breaking representation (eq. 3.15, 3.41) orders the components: the weight of
the component at *stick position* ``j`` (0-based) is ``pi_j = v_j prod_{l<j} (1 - v_l)``
with ``v_j ~ Beta(1, alpha)``. The labels are not exchangeable in this representation,
so a cluster's stick position is part of the chain's state. The contract of
:mod:`~sklearn_ibp.solvers.dp._dp_base` wants labels ``0 .. K - 1`` without gaps after every
sweep, so the solvers keep the positions beside the labels:

``state.stats["stick_positions"]`` : ndarray of shape (n_clusters,), int64
    The stick position of cluster ``k`` (distinct; gaps between them are inactive
    components).

Since the labels are not exchangeable, the samplers also move the clusters along the
stick, by Metropolis-Hastings swaps of adjacent positions with the sticks integrated out
(``label_switching``; Görür (2007, sec. 3.2.3) points to Porteous et al. 2006 for such moves;
:func:`~sklearn_ibp.solvers.dp._dp_stick_kernels.switch_adjacent_labels`). They leave the
likelihood as it is, so they improve mixing at no cost in exactness, and they pull large
clusters to the front of the stick, which keeps the number of represented components low.

Everything else the samplers represent is redrawn from its full conditional at the start
of every sweep and need not be stored: the sticks given the labels (eq. 3.43, ``u``
integrated out), and the parameters of inactive components (``G_0``, for they explain no
data). So the persistent state is the labels, the stick positions and the parameters of
the occupied clusters in ``state.params``, and a sweep is
``[label switching ->] (sticks, inactive parameters) -> [slices ->] labels -> occupied
parameters``, each step leaving the posterior invariant.
Between sweeps the estimator may change ``alpha`` and ``G_0``'s hyperparameters; both are
read afresh at the start of the next sweep.

Gaussian fast path: when the base's parameters are ``"means"`` (K, D) and ``"precisions"``
(K, D, D) and the base's ``log_likelihood`` agrees with the Cholesky-factor kernel on the
first rows (checked once in ``initialize``; ``state.stats["gaussian_kernel"]``), the
kernels evaluate each row's log density only for the components they need. Otherwise the
solver asks ``base.log_likelihood`` for the (N, J) matrix of represented components.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln

from ..._memory import check_allocation
from ..._slice import slice_sample
from ._dp_base import BaseDPSolver, MixtureState, relabel
from ._dp_gaussian_kernels import relabel_slots
from ._dp_stick_kernels import (
    count_labels,
    gaussian_log_likelihood,
    switch_adjacent_labels,
)

__all__ = [
    "MAX_REPRESENTED_STICKS",
    "StickBreakingDPSolver",
    "check_represented_sticks",
    "gaussian_factors",
    "log_gamma_variates",
    "sample_stick_posterior",
    "stick_log_weights",
]

LOG_2PI = math.log(2.0 * math.pi)

#: The most sticks a slice or retrospective sweep represents before it refuses to go on.
#: The unrepresented rest of the stick shrinks by a factor ``E[1 - v] = alpha / (1 +
#: alpha)`` per stick, so reaching a slice ``u`` takes about ``alpha log(1 / u)`` sticks:
#: without a bound ``alpha = 1e300`` broke sticks forever (``log(1 - v)`` rounds to 0).
MAX_REPRESENTED_STICKS = 100_000


def check_represented_sticks(n_sticks, alpha, n_features, solver) -> None:
    """Refuse to represent more than :data:`MAX_REPRESENTED_STICKS` sticks, or sticks
    whose components' ``D x D`` matrices exceed the memory limit, with a message that
    names ``alpha`` and the solvers that represent only the occupied clusters."""
    advice = (f"lower alpha ({alpha:g}), set sample_alpha=False if alpha was sampled that "
              "high, or use solver='split_merge' or 'auxiliary', which represent only the "
              "occupied clusters")
    if n_sticks > MAX_REPRESENTED_STICKS:
        raise ValueError(
            f"The {solver} sampler needs more than {MAX_REPRESENTED_STICKS} represented "
            f"sticks of the DP (alpha={alpha:g}; it breaks about alpha log(1 / u) sticks "
            f"to reach a slice u); {advice}."
        )
    check_allocation(
        8.0 * n_sticks * (n_features * n_features * 2 + n_features),
        what=f"the parameters of {n_sticks} represented components",
        advice=advice,
    )


def log_gamma_variates(shape, rng) -> np.ndarray:
    """``log g`` for ``g ~ Gamma(shape, 1)``, elementwise; exact in log space for shapes
    below one (``g = g' u^{1/a}``, ``g' ~ Gamma(a + 1)``), which would underflow as
    plain draws."""
    shape = np.asarray(shape, dtype=np.float64)
    small = shape < 1.0
    out = np.log(rng.standard_gamma(np.where(small, shape + 1.0, shape)))
    if small.any():
        out[small] += np.log1p(-rng.random(int(small.sum()))) / shape[small]
    return out


def sample_stick_posterior(counts, alpha, rng, n_prior=0, n_beyond=0):
    """``log v_j`` and ``log (1 - v_j)`` of the sticks given the labels, eq. (3.43).

    ``v_j ~ Beta(1 + n_j, alpha + sum_{l > j} n_l)`` for the ``J = len(counts)`` positions
    with counts ``n_j`` (``n_beyond`` rows sit at positions after them), then ``n_prior``
    more from the prior ``Beta(1, alpha)`` (positions past the last occupied one have no
    data). Each ``v`` comes from two Gamma variates in log space, so that neither ``v``
    nor ``1 - v`` rounds to zero.
    """
    counts = np.concatenate([np.asarray(counts, dtype=np.float64), np.zeros(int(n_prior))])
    after = np.cumsum(counts[::-1])[::-1] - counts + float(n_beyond)  # sum_{l > j} n_l
    draws = log_gamma_variates(np.concatenate([1.0 + counts, alpha + after]), rng)
    log_a, log_b = draws[: counts.size], draws[counts.size :]
    log_total = np.logaddexp(log_a, log_b)
    return log_a - log_total, log_b - log_total


def stick_log_weights(log_v, log_1mv):
    """``log pi_j = log v_j + sum_{l<j} log (1 - v_l)`` (eq. 3.15) and the log of the
    unbroken rest ``prod_j (1 - v_j) = 1 - sum_j pi_j``."""
    rest = np.cumsum(log_1mv)
    before = np.concatenate([[0.0], rest[:-1]])
    return log_v + before, float(rest[-1]) if rest.size else 0.0


def gaussian_factors(params):
    """``(means, upper, log_norm)`` of Gaussian components for the kernels: the upper
    Cholesky factors ``U_k = L_k^T`` of the precisions ``P_k = L_k L_k^T`` and
    ``log_norm_k = log |P_k|^{1/2} - D/2 log 2 pi``."""
    means = np.ascontiguousarray(params["means"], dtype=np.float64)
    L = np.linalg.cholesky(np.asarray(params["precisions"], dtype=np.float64))
    upper = np.ascontiguousarray(np.swapaxes(L, 1, 2))
    D = means.shape[1]
    log_norm = np.log(np.diagonal(L, axis1=1, axis2=2)).sum(axis=1) - 0.5 * D * LOG_2PI
    return means, upper, np.ascontiguousarray(log_norm)


def _gaussian_kernel_applies(base, X, params) -> bool:
    """Whether the base's components are Gaussians the kernels can evaluate themselves."""
    if "means" not in params or "precisions" not in params:
        return False
    means, precisions = np.asarray(params["means"]), np.asarray(params["precisions"])
    K, D = means.shape[0], X.shape[1]
    if means.shape != (K, D) or precisions.shape != (K, D, D) or K == 0:
        return False
    rows = X[: min(5, X.shape[0])]
    try:
        ours = gaussian_log_likelihood(rows, *gaussian_factors(params))
    except np.linalg.LinAlgError:
        return False
    theirs = np.asarray(base.log_likelihood(rows, params), dtype=np.float64)
    return theirs.shape == ours.shape and bool(np.allclose(ours, theirs, rtol=1e-9, atol=1e-9))


class StickBreakingDPSolver(BaseDPSolver):
    """Shared machinery of the samplers on the stick-breaking representation.

    Subclasses implement :meth:`sweep` with :meth:`_positions`, :meth:`_represent`,
    :meth:`_row_likelihood` and :meth:`_finish`, and may refuse a starting partition in
    :meth:`_check_n_clusters`.
    """

    def initialize(self, X, labels, alpha, base, rng) -> MixtureState:
        """A chain state for ``X`` starting from the partition ``labels``.

        Labels are renumbered ``0 .. K - 1``, each cluster sits at stick position equal
        to its new label, and the cluster parameters are drawn from their posterior
        given the rows (``base.sample_posterior_all``).
        """
        X = np.array(X, dtype=np.float64, order="C", copy=True)
        labels = np.asarray(labels)
        if labels.shape != (X.shape[0],) or not np.issubdtype(labels.dtype, np.integer):
            raise ValueError(
                f"labels must be an integer array of shape ({X.shape[0]},); "
                f"got {labels.dtype} of shape {labels.shape}."
            )
        if labels.size and labels.min() < 0:
            raise ValueError("labels must be non-negative.")
        labels, _ = relabel(labels)
        labels = labels.astype(np.int64)
        K = int(labels.max()) + 1
        self._check_n_clusters(K)
        params = base.sample_posterior_all(X, labels, K, rng)
        state = MixtureState(X=X, labels=labels, n_clusters=K, alpha=float(alpha),
                             params=params)
        state.stats["stick_positions"] = np.arange(K, dtype=np.int64)
        state.stats["gaussian_kernel"] = _gaussian_kernel_applies(base, X, params)
        return state

    def sample_alpha(self, state, rng) -> float:
        """An MCMC update of ``alpha`` given the labels *and their stick positions*.

        The positions carry information about ``alpha`` (clusters spread far along the
        stick mean a large ``alpha``), so ``p(alpha | K, N)`` of the partition alone is not
        its conditional here. With the sticks integrated out,
        ``p(c | alpha) = prod_{j < J} alpha B(1 + n_j, alpha + m_j)``, ``n_j`` the rows at
        position ``j``, ``m_j`` those after it and ``J`` the last occupied position plus
        one; ``log alpha`` is slice-sampled under the prior ``1/alpha ~ Gamma(1/2, 1/2)``
        (eq. 3.56), as for the partition.
        """
        positions = state.stats["stick_positions"]
        counts = np.zeros(int(positions.max()) + 1)
        counts[positions] = count_labels(state.labels, state.n_clusters)
        after = np.cumsum(counts[::-1])[::-1] - counts
        n_sticks = counts.size

        def log_density(u):
            if not -700.0 < u < 700.0:
                return -math.inf
            a = math.exp(u)
            value = n_sticks * u - 0.5 * u - 0.5 / a  # prior with the Jacobian alpha
            value += float(np.sum(gammaln(a + after) - gammaln(1.0 + counts + a + after)))
            return value

        return float(math.exp(slice_sample(log_density, math.log(state.alpha), rng)))

    def _check_n_clusters(self, n_clusters) -> None:
        """Hook: refuse a starting partition the sampler cannot represent."""

    # -- pieces of a sweep ---------------------------------------------------------------
    def _positions(self, state, rng, truncation=0):
        """Stick positions of the clusters after the label-switching moves (when
        ``self.label_switching``), of the rows, and the rows per position.

        Returns ``(positions (K,), row_positions (N,), counts (J,))`` with ``J`` the last
        occupied position plus one, or ``truncation`` when it is set.
        """
        positions = state.stats.get("stick_positions")
        K = state.n_clusters
        if (positions is None or positions.shape != (K,)
                or np.unique(positions).size != K or positions.min() < 0
                or (truncation and positions.max() >= truncation)):
            positions = np.arange(K, dtype=np.int64)  # a state from another solver
        cluster_counts = count_labels(state.labels, K)
        if getattr(self, "label_switching", False):
            counts = np.zeros(truncation or int(positions.max()) + 1, dtype=np.int64)
            counts[positions] = cluster_counts
            occupant = switch_adjacent_labels(counts, float(state.alpha), int(truncation), rng)
            new_of_old = np.empty(occupant.size, dtype=np.int64)
            taken = np.flatnonzero(occupant >= 0)
            new_of_old[occupant[taken]] = taken
            positions = new_of_old[positions]
        state.stats["stick_positions"] = positions
        if not truncation:
            check_represented_sticks(int(positions.max()) + 1, float(state.alpha),
                                     state.X.shape[1], type(self).__name__)
        counts = np.zeros(truncation or int(positions.max()) + 1, dtype=np.int64)
        counts[positions] = cluster_counts
        return positions, positions[state.labels], counts

    @staticmethod
    def _represent(state, base, rng, n_represented, positions):
        """Parameters of stick positions ``0 .. n_represented - 1``: the occupied clusters'
        own at their positions, fresh draws from ``G_0`` everywhere else."""
        K = state.n_clusters
        active = {k: np.asarray(v[:K]) for k, v in state.params.items()}
        free = np.setdiff1d(np.arange(n_represented), positions, assume_unique=True)
        prior = base.sample_prior(free.size, rng)
        out = {}
        for key, value in active.items():
            arr = np.empty((n_represented,) + value.shape[1:], dtype=np.result_type(value))
            arr[positions] = value
            arr[free] = prior[key]
            out[key] = arr
        return out

    @staticmethod
    def _row_likelihood(state, base, represented):
        """Arguments of the label kernels: ``(gaussian, means, upper, log_norm, loglik)``,
        the Cholesky factors on the Gaussian path, else the base's (N, J) matrix."""
        D = state.X.shape[1]
        if state.stats.get("gaussian_kernel", False):
            means, upper, log_norm = gaussian_factors(represented)
            return True, means, upper, log_norm, np.zeros((1, 1))
        loglik = np.ascontiguousarray(base.log_likelihood(state.X, represented),
                                      dtype=np.float64)
        return False, np.zeros((1, D)), np.zeros((1, D, D)), np.zeros(1), loglik

    @staticmethod
    def _finish(state, base, rng, row_positions, represented) -> None:
        """Renumber the occupied positions ``0 .. K - 1`` (first appearance), draw the
        occupied clusters' parameters from their posterior (a Gibbs scan from their
        current values for a conditionally conjugate base) and store the state."""
        n_represented = next(iter(represented.values())).shape[0]
        labels = np.array(row_positions, dtype=np.int64)
        positions = relabel_slots(labels, n_represented)
        K = positions.size
        current = {k: v[positions] for k, v in represented.items()}
        state.params = base.sample_posterior_all(state.X, labels, K, rng, current)
        state.labels = labels
        state.n_clusters = int(K)
        state.stats["stick_positions"] = positions
