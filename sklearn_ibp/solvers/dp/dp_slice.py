"""Slice sampling for DP mixtures on the stick-breaking representation (Walker 2007,
"Sampling the Dirichlet mixture model with slices"; Görür 2007, sec. 3.2.3, Algorithm 10).

An auxiliary slice ``u_i`` per row makes the infinite mixture finite: with
``p(c_i, u_i | pi, x_i, theta) ~ 1{u_i < pi_{c_i}} F(x_i | theta_{c_i})`` (eq. 3.50),
``u_i | c_i ~ U(0, pi_{c_i})`` (eq. 3.51) and ``c_i`` given the slice can only be one of
the finitely many components with ``pi_j > u_i`` (eq. 3.52). Given the slices the labels
are independent, so they are drawn in one blocked pass, which is what makes the sampler
fast on large N. It is exact: nothing is truncated, components are represented only as
far as the smallest slice asks. (Görür 2007 cites the sampler as Walker 2006, the preprint of
the 2007 paper.)
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval

from ._dp_base import MixtureState
from ._dp_slice_kernels import draw_log_slices, sample_slice_labels
from ._dp_sticks import (
    MAX_REPRESENTED_STICKS,
    StickBreakingDPSolver,
    check_represented_sticks,
    sample_stick_posterior,
    stick_log_weights,
)

__all__ = ["SliceDP"]


class SliceDP(StickBreakingDPSolver):
    """Walker's slice sampler for DP mixtures (Görür 2007, Algorithm 10, eqs. 3.48-3.52).

    One sweep is

    0. (``label_switching``) swaps of adjacent stick positions, see
       :mod:`sklearn_ibp.solvers.dp._dp_sticks`;
    1. the sticks given the labels, ``v_j ~ Beta(1 + n_j, alpha + sum_{l>j} n_l)``
       (eq. 3.43; the slices integrated out) and the parameters of inactive components
       from ``G_0``;
    2. the slices ``u_i ~ U(0, pi_{c_i})`` (eq. 3.51), breaking the stick further from
       the prior until the unbroken rest ``1 - sum_{j<J} pi_j`` is below every slice
       (Figure 3.9), so that no unrepresented component can be above a slice;
    3. every label at once, ``P(c_i = j) ~ 1{pi_j > u_i} F(x_i | theta_j)`` (eq. 3.52);
    4. the occupied components' parameters from their posterior given their rows.

    With ``kappa`` set, the slices follow the efficient variant of Kalli, Griffin and
    Walker (2011, "Slice sampling mixture models"): a deterministic decreasing sequence
    ``xi_j = (1 - kappa) kappa^j`` (``j = 0, 1, ...`` the stick position) replaces the
    weights in the slice, ``u_i ~ U(0, xi_{c_i})`` and
    ``P(c_i = j) ~ 1{xi_j > u_i} (pi_j / xi_j) F(x_i | theta_j)``; the joint still
    integrates to the DP mixture, and the number of components a row considers no
    longer depends on the random sticks. ``kappa = alpha / (1 + alpha)`` makes ``xi``
    the prior mean of the weights.

    The sampler works with any base that implements ``sample_prior``,
    ``log_likelihood`` and ``sample_posterior``; Gaussian components (``"means"``,
    ``"precisions"``) are evaluated inside the kernel, only for the components above
    each row's slice. Cluster stick positions are kept in
    ``state.stats["stick_positions"]`` (see :mod:`sklearn_ibp.solvers.dp._dp_sticks`);
    ``state.stats["n_represented"]`` is the number of components the last sweep
    represented.

    Parameters
    ----------
    kappa : float in (0, 1) or None, default=None
        None for Walker's slices on the weights; a float for the efficient variant with
        ``xi_j = (1 - kappa) kappa^j``.
    label_switching : bool, default=True
        Start each sweep with Metropolis-Hastings swaps of adjacent stick positions
        (:func:`~sklearn_ibp.solvers.dp._dp_stick_kernels.switch_adjacent_labels`), which
        help the chain mix over the order of the clusters on the stick.
    batch : int, default=8
        Sticks broken from the prior at a time while extending the representation (the
        ones past the stopping point are discarded; this only changes speed).

    References
    ----------
    Walker, S. G. (2007). Sampling the Dirichlet mixture model with slices.
    Communications in Statistics - Simulation and Computation 36, 45-54.
    Kalli, M., Griffin, J. E. and Walker, S. G. (2011). Slice sampling mixture models.
    Statistics and Computing 21, 93-105.
    """

    name = "slice"

    _parameter_constraints: dict = {
        "kappa": [Interval(Real, 0, 1, closed="neither"), None],
        "label_switching": ["boolean"],
        "batch": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, kappa=None, label_switching=True, batch=8):
        self.kappa = kappa
        self.label_switching = label_switching
        self.batch = batch

    def sweep(self, state: MixtureState, base, rng) -> None:
        """One Gibbs scan: sticks, slices, labels (blocked), occupied parameters."""
        alpha = float(state.alpha)
        positions, row_positions, counts = self._positions(state, rng)
        log_v, log_1mv = sample_stick_posterior(counts, alpha, rng)
        log_pi, log_rest = stick_log_weights(log_v, log_1mv)

        if self.kappa is None:
            log_slices = draw_log_slices(row_positions, log_pi, rng)
            lowest = float(log_slices.min())
            # Break the stick until the rest, which bounds every unrepresented weight,
            # is below the lowest slice.
            while log_rest >= lowest:
                check_represented_sticks(log_v.size + int(self.batch), alpha,
                                         state.X.shape[1], "slice")
                more_v, more_1mv = sample_stick_posterior(
                    np.zeros(0), alpha, rng, n_prior=int(self.batch)
                )
                rests = log_rest + np.cumsum(more_1mv)
                below = np.flatnonzero(rests < lowest)
                take = int(below[0]) + 1 if below.size else more_v.size
                log_v = np.concatenate([log_v, more_v[:take]])
                log_1mv = np.concatenate([log_1mv, more_1mv[:take]])
                log_pi, log_rest = stick_log_weights(log_v, log_1mv)
            key = log_pi
            prior_weight = np.zeros_like(log_pi)
            order = np.argsort(-log_pi, kind="stable").astype(np.int64)
        else:
            log_kappa = math.log(self.kappa)
            log_xi0 = math.log1p(-self.kappa)
            J_now = log_pi.size
            log_xi = log_xi0 + log_kappa * np.arange(J_now)
            log_slices = draw_log_slices(row_positions, log_xi, rng)
            lowest = float(log_slices.min())
            # Every position with xi_j >= the lowest slice must be represented (one
            # more against rounding; the kernel's comparison decides).
            reach = (lowest - log_xi0) / log_kappa
            if not reach < MAX_REPRESENTED_STICKS:
                check_represented_sticks(math.inf, alpha, state.X.shape[1], "slice")
            J = max(J_now, int(math.floor(reach)) + 2)
            if J > J_now:
                more_v, more_1mv = sample_stick_posterior(
                    np.zeros(0), alpha, rng, n_prior=J - J_now
                )
                log_v = np.concatenate([log_v, more_v])
                log_1mv = np.concatenate([log_1mv, more_1mv])
                log_pi, log_rest = stick_log_weights(log_v, log_1mv)
            key = log_xi0 + log_kappa * np.arange(log_pi.size)
            prior_weight = log_pi - key
            order = np.arange(log_pi.size, dtype=np.int64)

        J = log_pi.size
        represented = self._represent(state, base, rng, J, positions)
        gaussian, means, upper, log_norm, loglik = self._row_likelihood(
            state, base, represented
        )
        new_positions = sample_slice_labels(
            state.X, log_slices, order, np.ascontiguousarray(key),
            np.ascontiguousarray(prior_weight), gaussian, means, upper, log_norm, loglik, rng,
        )
        state.stats["n_represented"] = int(J)
        self._finish(state, base, rng, new_positions, represented)
