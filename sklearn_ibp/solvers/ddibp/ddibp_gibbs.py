"""MCMC for the distance-dependent IBP (Gershman, Frazier and Blei 2015, sec. 5).

The state is the ownership of dishes and the customers' links for every owned dish; ``Z``
follows by reachability. One sweep

1. updates every link ``c_ik`` (eq. 33): the change of a link switches ``z_k`` on the
   rows whose path runs through the customer (the window of the update) or on none, so
   two likelihoods decide it, each from the statistics of one column of ``Z``, never by
   recomputing the likelihood. By default this is Gershman et al.'s Gibbs step;
   ``link_update="metropolis"`` makes it a Metropolis step with the link's prior as
   proposal, which needs a likelihood only when the proposed link switches the rows (a
   third of the time on real series, but it mixes worse);
2. visits every customer with a birth-or-death Metropolis-Hastings move of the dishes it
   owns (eq. 34): a new dish with links from the prior, as in Gershman et al. 2015, or (with
   probability ``own_weight``) from the prior conditioned on nobody linking to the owner
   (a feature of its own, which the link updates then spread to the rows that share it);
   or the removal of one of its dishes. Gershman et al. (2015) propose every customer's count at
   once from the prior; one dish of one customer at a time is accepted far more often, and the
   second proposal lets the data open features that prior links would seldom propose.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from numbers import Real

import numpy as np
from scipy.linalg import lapack
from sklearn.utils._param_validation import Interval, StrOptions

from ..._deprecation import class_aliases
from ...priors.ddibp import DDIBPPrior, compute_reachability
from ..ibp._base import BaseIBPSolver, FeatureState, with_capacity
from ._ddibp_kernels import sweep_connections, sweep_ownership

__all__ = ["GibbsDDIBP"]


def _regularised_inverse(gram, ratio):
    """``(gram + ratio I)^{-1}``, symmetrised: once per sweep, so LAPACK's LU inverse
    (getrf, getri) from Python rather than a numba kernel that would compile
    ``np.linalg.inv`` and ``cholesky`` in a first fit (about 1 CPU s). It is the routine
    numba's ``np.linalg.inv`` calls, so the result is the same bit for bit."""
    K = gram.shape[0]
    if K == 0:
        return np.zeros((0, 0))
    M = np.array(gram, dtype=float, order="F")
    M[np.diag_indices(K)] += ratio
    lu, piv, info = lapack.dgetrf(M, overwrite_a=True)
    if info == 0:
        inv, info = lapack.dgetri(lu, piv, lwork=max(1, K * 64))
    if info != 0:
        raise np.linalg.LinAlgError(
            f"Z^T Z + (sigma_x / sigma_a)^2 I is singular (ratio {ratio:g}); refit with "
            "larger sigma_x or smaller sigma_a.")
    return 0.5 * (inv + inv.T)

def _draw_prior_links(cum_proximity, n_dishes, rng):
    """Links of ``n_dishes`` dishes from the prior, shape (n_samples, n_dishes).

    Dish by dish, customer ``i`` links to the first target whose cumulative proximity
    ``cum_proximity[i]`` exceeds ``u * cum_proximity[i, -1]``, ``u`` uniform: the binary
    search of the kernels' ``draw_link``, with the same numbers from ``rng`` in the same
    order, done here so that a fit does not compile it.
    """
    N = cum_proximity.shape[0]
    u = rng.random((n_dishes, N)) * cum_proximity[:, -1]
    connections = np.empty((N, n_dishes), dtype=np.int64)
    for i in range(N):
        connections[i] = np.searchsorted(cum_proximity[i], u[:, i], side="right")
    return np.minimum(connections, N - 1)


_NO_BOUND = np.int64(np.iinfo(np.int64).max)

#: sigma_x**2, sigma_a**2 and their ratio must lie in [1e-250, 1e250] (log10 bounds).
_LOG10_SQUARE_RANGE = 250.0


def _check_noise_scales(sigma_x, sigma_a) -> None:
    """Refuse noise and feature scales whose squares or ratio over- or underflow.

    The posterior of the features divides by ``sigma_x**2`` and adds
    ``(sigma_x / sigma_a)**2`` to ``Z^T Z``: ``sigma_x=1e-300`` once raised a
    ``ZeroDivisionError`` from inside the sweep kernel and ``sigma_a=1e300`` an
    ``OverflowError``.
    """
    sigma_x, sigma_a = float(sigma_x), float(sigma_a)
    if not (sigma_x > 0 and sigma_a > 0 and math.isfinite(sigma_x)
            and math.isfinite(sigma_a)):
        raise ValueError(
            f"sigma_x and sigma_a must be positive and finite; got sigma_x={sigma_x:g}, "
            f"sigma_a={sigma_a:g}."
        )
    logs = {"sigma_x**2": 2 * math.log10(sigma_x), "sigma_a**2": 2 * math.log10(sigma_a),
            "(sigma_x / sigma_a)**2": 2 * (math.log10(sigma_x) - math.log10(sigma_a))}
    for name, value in logs.items():
        if abs(value) > _LOG10_SQUARE_RANGE:
            raise ValueError(
                f"sigma_x={sigma_x:g} and sigma_a={sigma_a:g} give {name} = 1e{value:.0f}; "
                f"the dd-IBP's linear-Gaussian posterior needs sigma_x**2, sigma_a**2 and "
                f"(sigma_x / sigma_a)**2 between 1e-{_LOG10_SQUARE_RANGE:.0f} and "
                f"1e{_LOG10_SQUARE_RANGE:.0f} (float64 over- or underflows beyond). Choose "
                "sigma_x and sigma_a nearer the data's scale, or leave them to be sampled."
            )


class GibbsDDIBP(BaseIBPSolver):
    """Gibbs and Metropolis sampler of the dd-IBP with the linear-Gaussian likelihood.

    The prior is given to :meth:`initialize` as ``hyper["prior"]``, a
    :class:`~sklearn_ibp.priors.ddibp.DDIBPPrior` (normalised proximities, normalisers
    ``h`` and the bound ``max_features`` on the number of dishes: births beyond it are
    rejected); ``hyper["proximity"]``, ``hyper["h"]`` and ``hyper["max_features"]``
    given loose are read the same way. The chain starts from the dishes
    ``hyper["owners"]`` with links ``hyper["connections"]`` (n_samples, K) when given;
    otherwise from no features when ``Z`` has no columns, or from a draw of the prior when
    ``Z`` is None.

    Parameters
    ----------
    own_weight : float in [0, 1), default=0.9
        Probability that a proposed new dish belongs to its owner alone (links from the
        prior conditioned on nobody linking to the owner) rather than having all its links
        drawn from the prior. A dish of the owner alone is accepted or rejected from its
        column ``e_i`` and its links are drawn only if it is accepted (``O(K^2 + KD)``); a
        prior-drawn dish needs all ``N`` links and their reachability (``O(N log N)``) and,
        on real data, is seldom accepted.
    link_update : {"gibbs", "metropolis"}, default="gibbs"
        Link updates as Gibbs steps (two likelihoods per update, as in Gershman et al. 2015) or as
        Metropolis steps with the prior as proposal (a likelihood only for proposals that
        switch rows: faster per sweep, but a link the data favour and the prior does not
        is proposed rarely; held-out reconstruction on real series was 5-15% worse at the
        same number of sweeps, see doc/distance_dependent.rst).
    """

    model = "ddibp"
    name = "gibbs"
    _parameter_constraints: dict = {
        "own_weight": [Interval(Real, 0, 1, closed="left")],
        "link_update": [StrOptions({"metropolis", "gibbs"})],
    }

    def __init__(self, own_weight=0.9, link_update="gibbs"):
        self.own_weight = own_weight
        self.link_update = link_update

    def initialize(self, X, Z, hyper, rng) -> FeatureState:
        _check_noise_scales(hyper["sigma_x"], hyper["sigma_a"])
        prior = hyper.get("prior")
        if prior is None:  # the prior's arrays given loose
            prior = DDIBPPrior(hyper["proximity"], hyper["h"], hyper.get("max_features"))
        proximity = np.ascontiguousarray(prior.proximity, dtype=float)
        N = proximity.shape[0]
        h = np.asarray(prior.h, dtype=float)
        state = FeatureState(
            X=np.ascontiguousarray(X, dtype=float),
            Z=np.zeros((N, 0), dtype=np.int8),
            n_features=0,
            alpha=float(hyper["alpha"]),
            beta=1.0,
            sigma_x=float(hyper["sigma_x"]),
            sigma_a=float(hyper["sigma_a"]),
        )
        # log P(no other customer links to i) = sum_{j != i} log(1 - a_ji)
        off_diagonal = proximity - np.diag(np.diag(proximity))
        with np.errstate(divide="ignore"):
            log_no_link = np.log1p(-np.minimum(off_diagonal, 1.0)).sum(axis=0)
        state.stats.update(
            prior=prior,
            max_features=prior.max_features,
            proximity=proximity,
            proximity_t=np.ascontiguousarray(proximity.T),
            cum_proximity=np.ascontiguousarray(np.cumsum(proximity, axis=1)),
            h=h,
            log_no_link=np.ascontiguousarray(log_no_link),
        )
        owners = np.asarray(hyper.get("owners", np.zeros(0)), dtype=np.int64)
        connections = hyper.get("connections")
        if Z is not None and owners.size == 0 and np.shape(Z)[1] > 0:
            raise ValueError(
                "The dd-IBP sampler starts from dishes (hyper['owners'] and "
                "hyper['connections']), from no features (Z with no columns) or from a prior "
                "draw (Z=None); a feature matrix alone does not say who owns its features."
            )
        if owners.size == 0 and Z is None:
            # Start from a draw of the prior: lambda_i ~ Poisson(alpha / h_i), prior links.
            owners = np.repeat(np.arange(N), rng.poisson(state.alpha / h))
            connections = _draw_prior_links(state.stats["cum_proximity"], owners.size, rng)
        if connections is None:
            connections = np.zeros((N, owners.size), dtype=np.int64)
        connections = np.asarray(connections, dtype=np.int64).reshape(N, owners.size)
        self._set_dishes(state, owners, connections)
        return state

    # Statistics that no sweep writes (the proximities and what derives from them): a
    # checkpoint shares them instead of copying N x N arrays before every sweep.
    _fixed_stats = ("prior", "proximity", "proximity_t", "cum_proximity", "h", "log_no_link",
                    "max_features")

    def checkpoint(self, state):
        """A copy of ``state`` to roll an interrupted sweep back to (see the sampling loop
        in ``base.py``): the arrays a sweep writes are copied, the fixed ones shared."""
        stats = {
            name: value if name in self._fixed_stats else copy.deepcopy(value)
            for name, value in state.stats.items()
        }
        return dataclasses.replace(state, X=state.X.copy(), Z=state.Z.copy(), stats=stats)

    # -- dishes ---------------------------------------------------------------------------
    def _set_dishes(self, state, owners, connections, capacity=None):
        """Store dishes ``owners`` with links ``connections`` (n_samples, K); derive ``Z``."""
        N = state.X.shape[0]
        K = owners.size
        cap = max(capacity or 0, 2 * K, K + 8)
        Z = np.zeros((N, K), dtype=np.int8)
        links = np.zeros((cap, N), dtype=np.int64)
        own = np.full(cap, -1, dtype=np.int64)
        for k in range(K):
            links[k] = connections[:, k]
            Z[:, k] = compute_reachability(links[k], owners[k])
        own[:K] = owners
        state.Z = with_capacity(Z, K, cap)
        state.n_features = K
        state.stats["owners"] = own
        state.stats["links"] = links
        self._refresh(state)

    def _refresh(self, state) -> None:
        """Recompute ``M^{-1}``, ``Z^T X`` and ``G = M^{-1} Z^T X`` from ``(X, Z)``."""
        K = state.n_features
        cap = state.Z.shape[1]
        Zf = state.Z[:, :K].astype(float)
        Minv = np.zeros((cap, cap))
        Minv[:K, :K] = _regularised_inverse(Zf.T @ Zf, state.sigma_x**2 / state.sigma_a**2)
        cross = np.zeros((cap, state.X.shape[1]))
        cross[:K] = Zf.T @ state.X
        state.stats.update(Minv=Minv, cross=cross, G=Minv @ cross)

    def _grow(self, state) -> None:
        owners, connections = self.dishes(state)
        self._set_dishes(state, owners, connections, capacity=2 * state.Z.shape[1])

    @staticmethod
    def dishes(state):
        """``(owners, connections)`` of the live dishes: shapes (K,) and (n_samples, K)."""
        K = state.n_features
        st = state.stats
        return st["owners"][:K].copy(), st["links"][:K].T.copy()

    def log_prior(self, state: FeatureState) -> float:
        """``log P(c*, C | alpha)`` of the state's dishes under the dd-IBP
        (:meth:`DDIBPPrior.log_prob`)."""
        return state.stats["prior"].log_prob(*self.dishes(state), state.alpha)

    def snapshot(self, state: FeatureState, chain=0) -> dict:
        """The collapsed snapshot, with the dishes' ``owners`` and ``connections``."""
        sample = super().snapshot(state, chain=chain)
        sample["owners"], sample["connections"] = self.dishes(state)
        return sample

    # -- the sweep ------------------------------------------------------------------------
    def sweep(self, state: FeatureState, rng) -> None:
        st = state.stats
        if state.n_features:
            sweep_connections(
                state.X, state.Z, st["links"], st["owners"], state.n_features,
                st["proximity"], st["proximity_t"], st["cum_proximity"], st["Minv"], st["G"],
                st["cross"], state.sigma_x, state.sigma_a, self.link_update == "metropolis",
                rng,
            )
        mu = state.alpha / st["h"]
        N = state.X.shape[0]
        start = 0
        D = state.X.shape[1]
        while True:
            cap = st["Minv"].shape[0]
            K, start = sweep_ownership(
                state.X, state.Z, st["links"], st["owners"], state.n_features,
                st["cum_proximity"], st["log_no_link"], mu, st["Minv"], st["G"],
                st["cross"], state.sigma_x, state.sigma_a, float(self.own_weight),
                _NO_BOUND if st["max_features"] is None else np.int64(st["max_features"]),
                start, rng, np.zeros((2, cap)), np.zeros(D), np.zeros((2, N), dtype=np.int64),
                np.zeros(N, dtype=np.int8),
            )
            state.n_features = int(K)
            if start >= N:
                break
            self._grow(state)
        # The statistics were updated in place; recompute them once per sweep so that
        # rounding cannot accumulate.
        self._refresh(state)

    # -- what the estimator's loop asks for -----------------------------------------------
    def alpha_rate(self, state) -> float:
        """``sum_i 1 / h_i``, the rate of alpha's Gamma conditional (eq. 32)."""
        return float(np.sum(1.0 / state.stats["h"]))

    def compact(self, state, keep) -> None:  # every owned dish is active: nothing to drop
        return None


#: Old class names (before issue 21), importable with a FutureWarning naming the new one.
__getattr__ = class_aliases(__name__)
