"""Approximate Gibbs sampling for non-conjugate IBP models (Görür 2007, sec. 4.2.2).

Algorithm 12 (Görür et al., 2006): Neal's Algorithm 8 for the DP one level up. The
features ``A`` stay explicit, so any explicit-feature likelihood is served; a row's unique
features are handled with a fixed number of auxiliary features rather than by the exact
Poisson over new features, which makes the sampler approximate.
"""

from __future__ import annotations

from numbers import Integral

from sklearn.utils._param_validation import Interval

from ..._deprecation import class_aliases
from ._approximate_gibbs_kernels import approximate_gibbs_rows
from .metropolis import _RowwiseExplicitSolver

__all__ = ["ApproximateGibbsIBP"]


class ApproximateGibbsIBP(_RowwiseExplicitSolver):
    """Approximate Gibbs sampler with auxiliary features (Algorithm 12, Görür 2007, sec. 4.2.2).

    For each row ``n``, in a random order:

    1. every ``z_nk`` of a feature other rows have (``m_{-n,k} > 0``) is drawn from its
       conditional, prior odds ``m_{-n,k} / (N - m_{-n,k})`` times the likelihood ratio
       (eq. 4.36), as in the exact samplers;
    2. the row's unique features fill the first of ``K_hat = n_auxiliary`` auxiliary
       features and the rest are drawn from the feature prior ``G_0``; each auxiliary
       feature is on with prior probability ``(alpha/K_hat) / (N + alpha/K_hat)``,
       independently, and the subset that row ``n`` keeps is drawn from its conditional
       given the row (eq. 4.39): exactly from the ``2^K_hat`` weights when ``K_hat <= 10``,
       else by three Gibbs scans over the auxiliary indicators (which leave the same
       conditional invariant, so the stationary distribution is the same).

    Then the live ``A`` is resampled with ``likelihood.sample_features``.

    **What it approximates.** Step 2 is an exact Gibbs step for a model in which a row's
    unique features number ``Binomial(K_hat, p)`` with ``p = alpha / (K_hat N + alpha)``
    (the finite Beta-Bernoulli model's new-feature prior) instead of the IBP's
    ``Poisson(alpha / N)``, while step 1 keeps the IBP's odds. The two conditionals are not
    those of one joint distribution, so the stationary distribution is not a posterior in
    closed form; it tends to the exact IBP posterior as ``n_auxiliary`` grows
    (``Binomial(K_hat, alpha/(K_hat N + alpha)) -> Poisson(alpha/N)``). Two facts that are
    exact: a row never gains more than ``K_hat`` unique features in one step (one with more,
    which other rows' moves can leave, keeps them all as auxiliary features, ``K_hat`` being
    raised to their number for that step), and without data (``D = 0``) every feature
    evolves independently of the others and new ones arrive at ``K_hat p`` instead of
    ``alpha / N`` a row visit, so ``E[K] = alpha H_N K_hat N / (K_hat N + alpha)`` exactly
    (up to the case above, of prior probability below ``1e-4`` for ``K_hat >= 4`` and
    ``alpha / N <= 1/3``).

    Parameters
    ----------
    n_auxiliary : int, default=4
        ``K_hat``, the number of auxiliary features (the truncation of Görür 2007, Algorithm 12).
        Larger is closer to the exact posterior; the cost of a row's step grows as
        ``2^n_auxiliary`` up to 10 and linearly beyond.

    Attributes
    ----------
    name : str
        ``"approximate_gibbs"``.
    exact : bool
        False.
    """

    name = "approximate_gibbs"
    exact = False

    _parameter_constraints: dict = {
        "n_auxiliary": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, n_auxiliary=4):
        self.n_auxiliary = n_auxiliary

    def _slots_needed(self) -> int:
        return int(self.n_auxiliary)

    def _rows(self, start, row_order, state, noise, prior, likelihood, rng):
        st = state.stats
        K, position = approximate_gibbs_rows(
            start, row_order, state.X, state.observed, state.Z, state.A, st["pred"],
            st["counts"], state.n_features, likelihood.observation_kind, noise,
            likelihood.prior_kind, prior, state.alpha, int(self.n_auxiliary), rng,
        )
        return K, int(position)

#: Old class names (before issue 21), importable with a FutureWarning naming the new one.
__getattr__ = class_aliases(__name__)
