"""Blocked Gibbs sampling for the truncated stick-breaking DP (Ishwaran and James 2001;
Görür 2007, sec. 3.1.4, eq. 3.17, and sec. 3.2.3, Algorithm 8, eqs. 3.42-3.44).

Truncating the stick-breaking construction at ``M`` components (``v_M = 1``) turns the DP
mixture into a finite mixture, on which Gibbs sampling is plain: the labels are
independent given the weights and parameters and are drawn in one blocked pass. This is
an *approximation* of the DP mixture; its error falls like ``exp(-(M - 1) / alpha)``.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
from sklearn.utils._param_validation import Interval

from ._dp_base import MixtureState
from ._dp_sticks import StickBreakingDPSolver, sample_stick_posterior, stick_log_weights
from ._dp_truncated_kernels import sample_truncated_labels

__all__ = ["TruncatedDP", "truncation_error_bound"]


def truncation_error_bound(truncation, alpha, n_samples) -> float:
    """Ishwaran and James's (2001, Theorem 2) bound on the L1 distance between the
    marginal laws of ``N`` observations under the DP mixture and under its truncation at
    ``M`` components (Görür 2007, sec. 3.1.4).

    ``4 (1 - E[(1 - R_M)^N]) <= 4 N E[R_M] = 4 N (alpha / (1 + alpha))^(M - 1)``, with
    ``R_M = prod_{k<M} (1 - v_k)`` the stick left after ``M - 1`` breaks: the two models
    can be coupled so that their labels differ only when a row falls past component
    ``M - 1``. For large ``alpha`` it is about ``4 N exp(-(M - 1) / alpha)``, the order
    Görür (2007) quotes. The same coupling bounds the total variation between the two priors
    over partitions by a quarter of it.
    """
    return 4.0 * n_samples * (alpha / (1.0 + alpha)) ** (truncation - 1.0)


class TruncatedDP(StickBreakingDPSolver):
    """Blocked Gibbs sampler for the DP truncated at ``truncation`` components
    (Ishwaran and James 2001; Görür 2007, Algorithm 8).

    The prior is the stick-breaking construction (eq. 3.15) cut at ``M = truncation``
    components by setting ``v_M = 1`` (eq. 3.17): ``G_M = sum_{k<=M} pi_k delta_theta_k``.
    One sweep is

    0. (``label_switching``) swaps of adjacent stick positions, see
       :mod:`sklearn_ibp.solvers.dp._dp_sticks`;
    1. the sticks given the labels, ``v_k ~ Beta(1 + n_k, alpha + sum_{l>k} n_l)`` for
       ``k < M`` (eqs. 3.42-3.43, with ``pi_k = v_k prod_{l<k} (1 - v_l)``: eq. 3.42 of
       Görür 2007 drops the ``1 -``), and the parameters of the empty components from
       ``G_0``;
    2. every label at once, ``P(c_i = k) ~ pi_k F(x_i | theta_k)``, ``k <= M`` (eq. 3.44);
    3. the occupied components' parameters from their posterior given their rows.

    **This is an approximation of the DP mixture, not the DP mixture.** Ishwaran and
    James (2001, Theorem 2) bound the L1 distance between the marginal laws of ``N``
    observations under the truncated and the full DP mixture by

    ``|| m_M - m_inf ||_1 <= 4 N (alpha / (1 + alpha))^(M - 1) ~ 4 N exp(-(M - 1) / alpha)``

    (:func:`truncation_error_bound`; Görür (2007) quotes the ``exp(-(M - 1) / alpha)``
    order). With ``alpha = 1`` and ``N = 10,000``, ``M = 50`` gives ``7e-11``; the bound
    grows quickly with ``alpha`` (``alpha = 5``: ``5e0``, vacuous, take ``M = 200``), so a
    chain whose ``alpha`` is resampled upwards may need a larger ``truncation``. No more
    than ``M`` clusters can ever be occupied.

    Cluster stick positions (``0 .. M - 1``) are kept in
    ``state.stats["stick_positions"]`` (see :mod:`sklearn_ibp.solvers.dp._dp_sticks`).

    Parameters
    ----------
    truncation : int, default=50
        Number of components ``M`` of the truncated DP.
    label_switching : bool, default=True
        Start each sweep with Metropolis-Hastings swaps of adjacent stick positions
        (:func:`~sklearn_ibp.solvers.dp._dp_stick_kernels.switch_adjacent_labels`, with the
        truncated prior's last factor), which help the chain mix over the order of the
        clusters on the stick.

    References
    ----------
    Ishwaran, H. and James, L. F. (2001). Gibbs sampling methods for stick-breaking
    priors. Journal of the American Statistical Association 96, 161-173.
    """

    name = "truncated"

    _parameter_constraints: dict = {
        "truncation": [Interval(Integral, 2, None, closed="left")],
        "label_switching": ["boolean"],
    }

    def __init__(self, truncation=50, label_switching=True):
        self.truncation = truncation
        self.label_switching = label_switching

    def _check_n_clusters(self, n_clusters) -> None:
        if n_clusters > self.truncation:
            raise ValueError(
                f"The starting partition has {n_clusters} clusters, more than "
                f"truncation={self.truncation} components can hold."
            )

    def sweep(self, state: MixtureState, base, rng) -> None:
        """One Gibbs scan: sticks, labels (blocked), occupied parameters."""
        M = int(self.truncation)
        self._check_n_clusters(state.n_clusters)
        positions, row_positions, counts = self._positions(state, rng, truncation=M)
        log_v, log_1mv = sample_stick_posterior(
            counts[: M - 1], float(state.alpha), rng, n_beyond=counts[M - 1]
        )
        # v_M = 1: the last component takes the whole rest of the stick.
        log_v = np.append(log_v, 0.0)
        log_1mv = np.append(log_1mv, -np.inf)
        log_pi, _ = stick_log_weights(log_v, log_1mv)

        represented = self._represent(state, base, rng, M, positions)
        gaussian, means, upper, log_norm, loglik = self._row_likelihood(
            state, base, represented
        )
        new_positions = sample_truncated_labels(
            state.X, log_pi, gaussian, means, upper, log_norm, loglik, rng
        )
        self._finish(state, base, rng, new_positions, represented)
