"""Retrospective MCMC for DP mixtures on the stick-breaking representation
(Papaspiliopoulos and Roberts 2008; Görür 2007, sec. 3.2.3, Algorithm 9, eqs. 3.45-3.47).

The stick is broken only as far as a proposal needs: a row's label gets a
Metropolis-Hastings step whose proposal is a point of the unit stick weighted by the
likelihood; when the point falls in the unbroken part, the stick is broken further and
the new components' parameters are drawn from ``G_0`` *retrospectively* (Figure 3.8).
Nothing is truncated, so the sampler is exact for the DP mixture.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
from sklearn.utils._param_validation import Interval

from ._dp_base import MixtureState
from ._dp_retrospective_kernels import retrospective_pass
from ._dp_sticks import (
    StickBreakingDPSolver,
    check_represented_sticks,
    sample_stick_posterior,
    stick_log_weights,
)

__all__ = ["RetrospectiveDP"]


class RetrospectiveDP(StickBreakingDPSolver):
    """Retrospective MCMC of Papaspiliopoulos and Roberts (Görür 2007, Algorithm 9).

    One sweep is

    0. (``label_switching``) swaps of adjacent stick positions, see
       :mod:`sklearn_ibp.solvers.dp._dp_sticks`;
    1. the sticks of positions up to the last occupied one given the labels,
       ``v_j ~ Beta(1 + n_j, alpha + sum_{l>j} n_l)`` (eq. 3.43), and the parameters of
       the inactive components there from ``G_0``; ``extra`` more sticks and parameters
       from the prior are represented ahead;
    2. one Metropolis-Hastings step per row ``i`` (in order) on ``c_i``, from the proposal
       ``q(j) ~ pi_j F(x_i | theta_j)`` for ``j <= K`` and ``pi_j M_i`` after it, where
       ``K`` is the last occupied component and ``M_i = max_{l<=K} F(x_i | theta_l)``
       (eqs. 3.45-3.46), accepted with eq. (3.47). A proposal past the represented
       components breaks the stick further from the prior (``v ~ Beta(1, alpha)``,
       ``theta ~ G_0``), as many as it needs;
    3. the occupied components' parameters from their posterior given their rows.

    Unlike the slice and truncated samplers the labels move one row at a time, each
    step costing ``K`` likelihood evaluations. The sampler works with any base that
    implements ``sample_prior``, ``log_likelihood`` and ``sample_posterior``; Gaussian
    components (``"means"``, ``"precisions"``) are evaluated inside the kernel. Cluster
    stick positions are kept in ``state.stats["stick_positions"]`` (see
    :mod:`sklearn_ibp.solvers.dp._dp_sticks`); ``state.stats["acceptance_rate"]`` is the
    fraction of rows whose label changed in the last sweep.

    Parameters
    ----------
    label_switching : bool, default=True
        Start each sweep with Metropolis-Hastings swaps of adjacent stick positions
        (:func:`~sklearn_ibp.solvers.dp._dp_stick_kernels.switch_adjacent_labels`), which
        help the chain mix over the order of the clusters on the stick and keep the
        last occupied position, and with it the cost of a row's step, low.
    extra : int, default=8
        Components from the prior represented past the last occupied one at the start of
        a sweep (more are broken off whenever a proposal needs them; this only changes
        speed).

    References
    ----------
    Papaspiliopoulos, O. and Roberts, G. O. (2008). Retrospective Markov chain Monte
    Carlo methods for Dirichlet process hierarchical models. Biometrika 95, 169-186.
    """

    name = "retrospective"

    _parameter_constraints: dict = {
        "label_switching": ["boolean"],
        "extra": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, label_switching=True, extra=8):
        self.label_switching = label_switching
        self.extra = extra

    def sweep(self, state: MixtureState, base, rng) -> None:
        """One Gibbs scan: sticks, one Metropolis-Hastings step per label, parameters."""
        alpha = float(state.alpha)
        positions, row_positions, counts = self._positions(state, rng)
        extra = int(self.extra)
        log_v, log_1mv = sample_stick_posterior(counts, alpha, rng, n_prior=extra)
        counts = np.concatenate([counts, np.zeros(extra, dtype=np.int64)])
        represented = self._represent(state, base, rng, log_v.size, positions)
        likelihood = self._row_likelihood(state, base, represented)

        start, u, u2, accepted = 0, -1.0, -1.0, 0
        while True:
            log_pi, _ = stick_log_weights(log_v, log_1mv)
            log_rest = np.cumsum(log_1mv)
            stop, u, u2, done = retrospective_pass(
                state.X, row_positions, counts, log_pi, log_rest, start, u, u2,
                *likelihood, rng,
            )
            accepted += int(done)
            if stop == state.X.shape[0]:
                break
            # Break the stick further (as far again as it is) and resume row ``stop``.
            more = log_v.size
            check_represented_sticks(2 * more, alpha, state.X.shape[1], "retrospective")
            more_v, more_1mv = sample_stick_posterior(np.zeros(0), alpha, rng, n_prior=more)
            log_v = np.concatenate([log_v, more_v])
            log_1mv = np.concatenate([log_1mv, more_1mv])
            counts = np.concatenate([counts, np.zeros(more, dtype=np.int64)])
            new = base.sample_prior(more, rng)
            represented = {k: np.concatenate([v, new[k]]) for k, v in represented.items()}
            likelihood = self._extend_likelihood(state, base, likelihood, represented, new)
            start = int(stop)

        state.stats["acceptance_rate"] = accepted / max(state.X.shape[0], 1)
        state.stats["n_represented"] = int(log_v.size)
        self._finish(state, base, rng, row_positions, represented)

    def _extend_likelihood(self, state, base, likelihood, represented, new):
        gaussian = likelihood[0]
        if gaussian:
            return self._row_likelihood(state, base, represented)
        more = np.asarray(base.log_likelihood(state.X, new), dtype=np.float64)
        return likelihood[:4] + (np.ascontiguousarray(np.hstack([likelihood[4], more])),)
