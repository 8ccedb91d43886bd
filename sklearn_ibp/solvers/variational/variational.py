"""Mean-field variational inference for the IBP linear-Gaussian model (Doshi-Velez 2009, ch. 6 and
appendix B).

The posterior over the sticks ``v``, the features ``A`` and the assignments ``Z`` is
approximated by a fully factorised distribution truncated at ``K`` features (sec. 6.1):

* ``q(v_k) = Beta(tau_k1, tau_k2)``,
* ``q(a_kd) = Normal(phi_kd, Phi_kd)`` (the covariance of ``A_k`` is diagonal: with
  missing entries each column has its own variance, appendix B.2),
* ``q(z_nk) = Bernoulli(nu_nk)``,

and the evidence lower bound (ELBO) of eqs. 6.1-6.3 is raised by coordinate ascent.
:class:`VariationalIBP` is the infinite stick-breaking model, ``pi_k = prod_{m<=k} v_m``
with ``v_m ~ Beta(alpha, 1)``; its term ``E[log(1 - prod_{m<=k} v_m)]`` has no closed form
and is replaced by a lower bound: the multinomial bound of sec. 6.2.2 (eq. 6.4, the
auxiliary distribution of eq. 6.5, closed-form ``tau`` updates of sec. 6.3.2) or the
truncated Taylor series of sec. 6.2.1 (its ``tau`` maximised numerically, sec. 6.3.1).
:class:`FiniteVariationalIBP` is the finite approximation ``pi_k ~ Beta(alpha / K, 1)``
(footnote 2 of ch. 6; beta process factor analysis), where every expectation is closed.

Every update below maximises the ELBO (with the chosen bound) exactly in its coordinates,
so the ELBO never decreases: ``phi_k`` and ``Phi_k`` for all columns at once, ``nu_{:,k}``
for all rows at once (rows do not interact given ``A``), the multinomial ``q_k`` and then
``tau`` in closed form, and ``alpha``, ``sigma_x``, ``sigma_a`` at their ELBO-maximising
values when ``update_hyperparameters`` (an empirical-Bayes M-step, not a posterior).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from numbers import Integral, Real

import numpy as np
from scipy.optimize import minimize
from scipy.special import betaln, digamma, expit, gammaln, logsumexp, polygamma, zeta
from sklearn.utils._param_validation import Interval, StrOptions, validate_params

from ..._memory import check_allocation
from ...priors.ibp import smallest_truncation
from .._protocol import Solver
from ._variational_kernels import update_assignments

__all__ = [
    "FiniteVariationalIBP",
    "VariationalIBP",
    "VariationalState",
    "multinomial_bound",
    "taylor_bound",
    "taylor_bound_gradient",
    "update_feature_posterior",
]

_LOG_2PI = np.log(2.0 * np.pi)


_SQRT_EPS = float(np.sqrt(np.finfo(np.float64).eps))


def _data_scale(Xo, observed) -> float:
    """Root mean square of the observed entries (1 for all-zero data)."""
    n = float(observed.sum())
    scale = float(np.sqrt(np.sum(Xo * Xo * observed) / n)) if n > 0 else 0.0
    return scale if np.isfinite(scale) and scale > 0.0 else 1.0


@dataclass
class VariationalState:
    """The variational parameters and the fit's record.

    ``nu`` (N, K), ``phi_mean`` and ``phi_var`` (K, D), ``tau`` (K, 2); ``alpha``,
    ``sigma_x``, ``sigma_a``; ``elbo_trace`` the ELBO after every iteration,
    ``hyper_trace`` the ``(alpha, sigma_x, sigma_a)`` after every iteration,
    ``time_trace`` the seconds from the start of the restart to the end of every
    iteration, ``n_iter`` and ``converged``.
    """

    nu: np.ndarray
    phi_mean: np.ndarray
    phi_var: np.ndarray
    tau: np.ndarray
    alpha: float
    sigma_x: float
    sigma_a: float
    elbo_trace: list = field(default_factory=list)
    hyper_trace: list = field(default_factory=list)
    time_trace: list = field(default_factory=list)
    n_iter: int = 0
    converged: bool = False

    @property
    def elbo(self) -> float:
        return self.elbo_trace[-1] if self.elbo_trace else -np.inf


# -- q(A): every feature's mean at once ---------------------------------------------------


def update_feature_posterior(Xo, observed, nu, sx2, sa2):
    """``(phi, Phi)`` maximising the ELBO over the features' means and variances
    jointly, given ``nu`` (Doshi-Velez 2009, appendix B.2, solved for all ``k`` at once).

    ``Phi_kd = 1 / (1/sa2 + sum_n o_nd nu_nk / sx2)`` does not depend on the means. The
    ELBO is quadratic in the means of column ``d``, ``-phi_d' P_d phi_d / 2 +
    phi_d' nu' (o_d x_d) / sx2`` with ``P_d = (nu' O_d nu + diag(sum_n o_nd nu_nk (1 -
    nu_nk))) / sx2 + I / sa2`` (``O_d = diag(o_d)``: ``E[Z'Z]`` over the observed rows),
    so its maximiser is ``phi_d = P_d^{-1} nu' (o_d x_d) / sx2``. The appendix's
    update of one ``phi_k`` at a time given the others reaches the same point only
    after many passes when features overlap (a Gauss-Seidel iteration on ``P_d``): with
    one pass per iteration the means trail ``nu`` and the fit drifts into merged
    features (issue 24: from the true ``Z`` of 29 features the old pass ended at
    ``sigma_x`` 0.28 instead of 0.2 and a held-out score of -137 instead of +70).

    Parameters
    ----------
    Xo : ndarray of shape (N, D)
        The data, 0 where unobserved.
    observed : ndarray of shape (N, D)
        1 where observed, 0 where not.
    nu : ndarray of shape (N, K)
    sx2, sa2 : float
        ``sigma_x^2`` and ``sigma_a^2``.

    Returns
    -------
    phi_mean, phi_var : ndarrays of shape (K, D)
    """
    N, K = nu.shape
    D = Xo.shape[1]
    spread = nu * (1.0 - nu)  # Var[z_nk] under q
    rhs = (nu.T @ Xo) / sx2  # Xo is 0 where unobserved
    if np.all(observed > 0):
        phi_var = np.repeat(1.0 / (1.0 / sa2 + nu.sum(axis=0) / sx2)[:, None], D, axis=1)
        precision = (nu.T @ nu + np.diag(spread.sum(axis=0))) / sx2 + np.eye(K) / sa2
        return np.ascontiguousarray(np.linalg.solve(precision, rhs)), phi_var
    # One K x K precision per column, in blocks of columns (O(K^2) bytes per column).
    check_allocation(8 * K * K * min(D, 64) * 2, what="the variational feature "
                     "precisions", advice="lower max_features")
    phi_var = 1.0 / (1.0 / sa2 + (nu.T @ observed) / sx2)
    phi_mean = np.empty((K, D))
    diagonal = (spread.T @ observed) / sx2 + 1.0 / sa2  # (K, D)
    for start in range(0, D, 64):
        cols = slice(start, min(D, start + 64))
        precision = np.einsum("nk,nd,nj->dkj", nu, observed[:, cols], nu) / sx2
        idx = np.arange(K)
        precision[:, idx, idx] += diagonal[:, cols].T
        phi_mean[:, cols] = np.linalg.solve(precision, rhs[:, cols].T[:, :, None])[:, :, 0].T
    return phi_mean, phi_var


# -- the bounds on E[log(1 - prod_{m<=k} v_m)] -------------------------------------------


@validate_params({"tau": ["array-like"]}, prefer_skip_nested_validation=True)
def multinomial_bound(tau):
    """The multinomial lower bound of ``E[log(1 - prod_{m<=k} v_m)]`` for every ``k``
    (Doshi-Velez 2009, eq. 6.4) at its optimal auxiliary distribution (eq. 6.5).

    With ``s_ky = psi(tau_y2) + sum_{m<y} psi(tau_m1) - sum_{m<=y} psi(tau_m1 + tau_m2)``
    for ``y <= k``, ``q_ky ∝ exp(s_ky)`` and the bound is ``log sum_{y<=k} exp(s_ky)``.

    Parameters
    ----------
    tau : array-like of shape (K, 2)
        Beta parameters of the sticks.

    Returns
    -------
    bound : ndarray of shape (K,)
    q : ndarray of shape (K, K)
        ``q[k, y]`` for ``y <= k`` (0 above the diagonal).
    """
    tau = np.asarray(tau, dtype=np.float64)
    psi1, psi2, psi12 = digamma(tau[:, 0]), digamma(tau[:, 1]), digamma(tau.sum(axis=1))
    # s_y (the same for every k >= y): psi(tau_y2) + sum_{m<y} psi(tau_m1)
    #                                    - sum_{m<=y} psi(tau_m1 + tau_m2)
    s = psi2 + np.concatenate(([0.0], np.cumsum(psi1)[:-1])) - np.cumsum(psi12)
    K = tau.shape[0]
    lower = np.tril(np.ones((K, K), dtype=bool))
    scores = np.where(lower, s[None, :], -np.inf)
    bound = logsumexp(scores, axis=1)
    q = np.exp(scores - bound[:, None])
    return bound, q


def log_hurwitz_zeta(s, q):
    """``log zeta(s, q)`` of the Hurwitz zeta function, finite where ``zeta`` underflows.

    ``s`` an array, ``q >= 1`` a scalar; ``+inf`` where ``s <= 1``. ``scipy.special.zeta``
    underflows to 0 once ``s log q`` passes about 745, while the Taylor bound's tail
    multiplies it by a rising factorial that can overflow (:func:`taylor_bound`): there
    ``log zeta(s, q) = log sum_{j >= 0} (q + j)^-s`` is summed in logs over
    ``j < 8 q`` plus the integral of the rest, ``(9 q)^(1 - s) / (s - 1)``, which is below
    ``9^(1 - s) q / (s - 1)`` of the sum: negligible wherever ``zeta`` underflows.
    """
    s = np.asarray(s, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(s > 1.0, np.log(zeta(s, q)), np.inf)
    under = (s > 1.0) & ~np.isfinite(out)
    if np.any(under):
        j = np.arange(int(np.ceil(8.0 * q)))
        s_u = s[under][:, None]
        log_terms = -s_u * np.log(q + j)[None, :]
        log_rest = (1.0 - s_u) * np.log(q + j.size) - np.log(s_u - 1.0)
        out[under] = logsumexp(np.concatenate([log_terms, log_rest], axis=1), axis=1)
    return out


def taylor_bound(tau, n_terms=50):
    """The interval of Doshi-Velez 2009, sec. 6.2.1, around ``E[log(1 - prod_{m<=k} v_m)]``.

    ``E[log(1 - prod v)] = -sum_{n>=1} (1/n) prod_m E[v_m^n]`` with the Beta moments
    ``E[v^n] = (tau_1)_n / (tau_1 + tau_2)_n``. The first ``n_terms`` terms give an
    upper value; replacing ``tau_m2`` by its floor in the tail and bounding it by the
    Hurwitz zeta function ``zeta(1 + sum_m floor(tau_m2), n_terms + 1)`` gives the lower
    bound (finite when some ``tau_m2 >= 1``).

    Parameters
    ----------
    tau : array-like of shape (K, 2)
    n_terms : int, default=50
        ``T``, the terms summed exactly.

    Returns
    -------
    lower, upper : ndarrays of shape (K,)
    """
    tau = np.asarray(tau, dtype=np.float64)
    n = np.arange(1, n_terms + 1)
    # log E[v_m^n] = log Gamma(t1 + n) - log Gamma(t1) - log Gamma(t12 + n) + log Gamma(t12)
    t1, t12 = tau[:, 0][:, None], tau.sum(axis=1)[:, None]
    log_moments = gammaln(t1 + n) - gammaln(t1) - gammaln(t12 + n) + gammaln(t12)  # (K, T)
    cum = np.cumsum(log_moments, axis=0)  # log prod_{m<=k} E[v_m^n]
    upper = -np.sum(np.exp(cum) / n, axis=1)
    floors = np.floor(tau[:, 1])
    # log prod_m (tau_m1)_{floor(tau_m2)}: rising factorials.
    log_rising = np.cumsum(gammaln(tau[:, 0] + floors) - gammaln(tau[:, 0]))
    exponent = 1.0 + np.cumsum(floors)
    log_tail = np.where(exponent > 1.0,
                        log_rising + log_hurwitz_zeta(exponent, n_terms + 1.0), np.inf)
    with np.errstate(over="ignore"):
        lower = upper - np.exp(log_tail)
    return lower, upper


def _taylor_lower(tau, n_terms):
    return taylor_bound(tau, n_terms)[0]


def taylor_bound_gradient(tau, weights, n_terms=50):
    """Gradient of ``sum_k weights_k * lower_k`` with respect to ``tau``, ``lower`` the
    Taylor lower bound of :func:`taylor_bound` (Doshi-Velez 2009, sec. 6.3.1, here for the bound
    with its zeta tail rather than the full series).

    With ``l_m(n) = log E[v_m^n]`` and ``S_m(n) = sum_{k>=m} w_k prod_{i<=k} E[v_i^n]``,
    the series part gives ``-sum_n (1/n) S_m(n) dl_m(n)/dtau_m``, where
    ``dl_m/dtau_m1 = psi(tau_m1 + n) - psi(tau_m1) - psi(tau_m1 + tau_m2 + n)
    + psi(tau_m1 + tau_m2)`` and ``dl_m/dtau_m2 = psi(tau_m1 + tau_m2) - psi(tau_m1 +
    tau_m2 + n)``. The tail ``prod_m (tau_m1)_{floor(tau_m2)} zeta(.)`` depends on
    ``tau_m2`` only through its floor (a step function: derivative 0 between the
    integers) and on ``tau_m1`` through the rising factorials.

    Parameters
    ----------
    tau : array-like of shape (K, 2)
    weights : array-like of shape (K,)
        ``w_k``; in the ELBO the expected number of rows without feature ``k``.
    n_terms : int, default=50

    Returns
    -------
    gradient : ndarray of shape (K, 2)
    """
    tau = np.asarray(tau, dtype=np.float64)
    weights = np.asarray(weights, dtype=np.float64)
    n = np.arange(1, n_terms + 1)
    t1, t12 = tau[:, 0][:, None], tau.sum(axis=1)[:, None]
    log_moments = gammaln(t1 + n) - gammaln(t1) - gammaln(t12 + n) + gammaln(t12)
    series = np.exp(np.cumsum(log_moments, axis=0))  # prod_{i<=k} E[v_i^n], (K, T)
    # S_m(n) = sum_{k>=m} w_k series_k(n): a reverse cumulative sum over k.
    tail_sum = np.cumsum((weights[:, None] * series)[::-1], axis=0)[::-1] / n
    d12 = digamma(t12) - digamma(t12 + n)
    grad = np.empty_like(tau)
    grad[:, 0] = -np.sum(tail_sum * (digamma(t1 + n) - digamma(t1) + d12), axis=1)
    grad[:, 1] = -np.sum(tail_sum * d12, axis=1)
    floors = np.floor(tau[:, 1])
    log_rising = np.cumsum(gammaln(tau[:, 0] + floors) - gammaln(tau[:, 0]))
    exponent = 1.0 + np.cumsum(floors)
    # In logs: the rising factorial can overflow where zeta underflows (inf * 0).
    with np.errstate(over="ignore"):
        tail = np.exp(np.where(exponent > 1.0,
                               log_rising + log_hurwitz_zeta(exponent, n_terms + 1.0), np.inf))
    # lower = upper - tail: d(-sum_k w_k tail_k)/dtau_m1 over the k >= m that contain m.
    weighted_tail = np.cumsum((weights * tail)[::-1])[::-1]
    grad[:, 0] -= weighted_tail * (digamma(tau[:, 0] + floors) - digamma(tau[:, 0]))
    return grad


# -- the solvers ---------------------------------------------------------------------------


class VariationalIBP(Solver):
    """Infinite stick-breaking mean-field variational inference for the IBP (Doshi-Velez 2009,
    sec. 6.1-6.3, appendix B), linear-Gaussian likelihood.

    Parameters
    ----------
    max_features : int or "auto", default="auto"
        Truncation ``K`` of the variational distribution. For a greedy start the most
        features the births may reach (``"auto"``: 100); for a random start the
        truncation itself (``"auto"``: the smallest ``K`` whose truncation bound,
        eq. 6.9, :func:`~sklearn_ibp.priors.ibp.smallest_truncation`, at the starting
        ``alpha`` is below ``truncation_tol``, capped at 100).
    init : {"mixed", "greedy", "random"}, default="mixed"
        The start of each restart. ``"mixed"``: the restarts alternate, greedy first
        (of the default 5, three greedy and two random), and the highest ELBO wins: on
        data with many features the greedy starts win by far (issue 24), on the block
        images (four features, ``max_features=6``) the random ones. ``"greedy"``
        starts with no feature and adds them one at a time: a new feature is the
        residual of a row drawn with probability proportional to its squared residual
        (as k-means++ seeds its centres), the rows whose residual it explains take it
        (the ``nu`` update at even prior odds), one round of coordinate ascent follows,
        and the feature is kept if the ELBO rose; the births stop after two rejected
        in a row or at ``max_features``, so the truncation is the number of features
        the data supported. ``"random"`` draws every ``nu_nk`` uniformly on (0, 1) at
        the truncation ``max_features`` (the only start before issue 24).
    bound : {"multinomial", "taylor"}, default="multinomial"
        Lower bound of ``E[log(1 - prod v)]``: the multinomial bound with closed-form
        ``tau`` updates (sec. 6.2.2, 6.3.2) or the Taylor series with ``tau`` maximised
        numerically (sec. 6.2.1, 6.3.1; slower).
    tol : float, default=1e-4
        Convergence when the relative change of the ELBO falls below it (the choice of
        Doshi-Velez 2009).
    max_iter : int, default=200
        Iterations at most per restart, after a greedy start's births (one iteration
        each, at most ``max_features``).
    n_init : int, default=5
        Restarts (their starts as ``init`` says); the one with the highest ELBO is kept.
    update_hyperparameters : bool, default=True
        Set ``alpha``, ``sigma_x`` and ``sigma_a`` to their ELBO-maximising values every
        iteration (empirical Bayes).
    truncation_tol : float, default=1e-3
        Tolerance of ``max_features="auto"``.
    taylor_terms : int, default=50
        Terms of the Taylor series summed exactly (``bound="taylor"``).
    tempering_iter : int, default=0
        Iterations over which ``sigma_x^2`` and ``sigma_a^2`` are tempered (sec. 6.5):
        multiplied by a factor falling linearly from ``tempering_start`` to 1, which
        smooths the bound early on. The ELBO rises monotonically from the end of the
        tempering on; convergence is tested only after it.
    tempering_start : float, default=10.0
        The first iteration's factor.
    """

    model = "ibp"
    name = "variational"
    #: Rejected births in a row that end the greedy start.
    _birth_patience = 2
    variational = True
    # Missing entries are left out of the bound (``observed``).
    handles_missing = True
    likelihoods = ("gaussian",)
    exact = False

    _parameter_constraints: dict = {
        "max_features": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "init": [StrOptions({"mixed", "greedy", "random"})],
        "bound": [StrOptions({"multinomial", "taylor"})],
        "tol": [Interval(Real, 0, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "n_init": [Interval(Integral, 1, None, closed="left")],
        "update_hyperparameters": ["boolean"],
        "truncation_tol": [Interval(Real, 0, 1, closed="neither")],
        "taylor_terms": [Interval(Integral, 1, None, closed="left")],
        "tempering_iter": [Interval(Integral, 0, None, closed="left")],
        "tempering_start": [Interval(Real, 1, None, closed="left")],
    }

    def __init__(self, max_features="auto", init="mixed", bound="multinomial", tol=1e-4,
                 max_iter=200, n_init=5, update_hyperparameters=True, truncation_tol=1e-3,
                 taylor_terms=50, tempering_iter=0, tempering_start=10.0):
        self.max_features = max_features
        self.init = init
        self.bound = bound
        self.tol = tol
        self.max_iter = max_iter
        self.n_init = n_init
        self.update_hyperparameters = update_hyperparameters
        self.truncation_tol = truncation_tol
        self.taylor_terms = taylor_terms
        self.tempering_iter = tempering_iter
        self.tempering_start = tempering_start

    # -- the stick part: what differs between the infinite and the finite model ----------
    def _stick_terms(self, tau, alpha):
        """``(E[log pi_k], lower bound of E[log(1 - pi_k)])`` for every ``k``."""
        e_log_v = digamma(tau[:, 0]) - digamma(tau.sum(axis=1))
        e_log_pi = np.cumsum(e_log_v)
        if self.bound == "taylor":
            return e_log_pi, _taylor_lower(tau, self.taylor_terms)
        return e_log_pi, multinomial_bound(tau)[0]

    def _stick_prior(self, tau, alpha):
        """``sum_k E[log p(v_k | alpha)]``, ``v_k ~ Beta(alpha, 1)``."""
        e_log_v = digamma(tau[:, 0]) - digamma(tau.sum(axis=1))
        return float(np.sum(np.log(alpha) + (alpha - 1.0) * e_log_v))

    def _update_sticks(self, tau, counts, n_rows, alpha):
        """``tau`` maximising the stick terms of the ELBO given ``nu`` (its column sums
        ``counts``)."""
        off = n_rows - counts
        if self.bound == "taylor":
            return self._update_sticks_taylor(tau, counts, n_rows, alpha)
        # Multinomial: q given tau (eq. 6.5), then tau given q (sec. 6.3.2); each step
        # raises the bound, and a few alternations settle both.
        for _ in range(5):
            _, q = multinomial_bound(tau)
            K = tau.shape[0]
            new = np.empty_like(tau)
            # sum_{m>=k} n_m and the q-weighted terms of sec. 6.3.2.
            tail_counts = np.cumsum(counts[::-1])[::-1]
            # below[m, k] = sum_{i=k+1}^{m} q_mi (for m > k)
            cum_q = np.cumsum(q[:, ::-1], axis=1)[:, ::-1]  # cum_q[m, i] = sum_{y>=i} q_my
            for k in range(K):
                above = cum_q[k + 1:, k + 1] if k + 1 < K else np.zeros(0)
                new[k, 0] = alpha + tail_counts[k] + np.sum(off[k + 1:] * above)
                new[k, 1] = 1.0 + np.sum(off[k:] * q[k:, k])
            tau = new
        return tau

    def _update_sticks_taylor(self, tau, counts, n_rows, alpha):
        """``tau`` by L-BFGS-B on the stick terms with the Taylor lower bound and their
        analytic gradient (sec. 6.3.1), from the current ``tau``; kept only if it raises
        them, so the ELBO never falls. ``tau_1 >= 1e-3`` and ``tau_2 >= 1``: with every
        ``tau_m2 < 1`` (``m <= k``) the zeta tail is infinite and the bound is -inf (the
        closed-form multinomial update also gives ``tau_2 >= 1``).

        Not an exact maximiser: the tail depends on ``floor(tau_m2)``, so the bound
        jumps up where ``tau_m2`` reaches an integer, and the optimiser can stop just
        below one (measured: a stick's gradient of 0.02 left at ``tau_2 = 31 - 4e-8``).
        Moving such a ``tau_m2`` onto the integer and restarting raised the ELBO by
        0.015 in 424 at seven times the cost, so it is not done."""
        K = tau.shape[0]

        def negative(flat):
            t = flat.reshape(K, 2)
            return (-self._stick_objective(t, counts, n_rows, alpha),
                    -self._stick_objective_gradient(t, counts, n_rows, alpha).reshape(-1))

        start = np.maximum(tau, [1e-3, 1.0]).reshape(-1)
        result = minimize(negative, start, jac=True, method="L-BFGS-B",
                          bounds=[(1e-3, None), (1.0, None)] * K)
        if np.isfinite(result.fun) and result.fun < negative(tau.reshape(-1))[0]:
            return result.x.reshape(K, 2)
        return tau

    def _stick_objective_gradient(self, tau, counts, n_rows, alpha):
        """Gradient of :meth:`_stick_objective` for the Taylor bound (sec. 6.3.1)."""
        a, b = tau[:, 0], tau[:, 1]
        tri_a, tri_b, tri_ab = polygamma(1, a), polygamma(1, b), polygamma(1, a + b)
        # Coefficient of E[log v_m]: the prior's (alpha - 1) and every row with a
        # feature k >= m (E[log pi_k] = sum_{m<=k} E[log v_m]).
        coef = (alpha - 1.0) + np.cumsum(counts[::-1])[::-1]
        grad = taylor_bound_gradient(tau, n_rows - counts, int(self.taylor_terms))
        grad[:, 0] += coef * (tri_a - tri_ab)
        grad[:, 1] -= coef * tri_ab
        # The Beta entropy: d/da = -(a - 1) psi'(a) + (a + b - 2) psi'(a + b).
        grad[:, 0] += -(a - 1.0) * tri_a + (a + b - 2.0) * tri_ab
        grad[:, 1] += -(b - 1.0) * tri_b + (a + b - 2.0) * tri_ab
        return grad

    def _stick_objective(self, tau, counts, n_rows, alpha):
        """The terms of the ELBO that involve ``tau``: prior of the sticks, the
        ``E[log p(z | v)]`` part and the sticks' entropy."""
        e_log_pi, e_log_off = self._stick_terms(tau, alpha)
        value = self._stick_prior(tau, alpha)
        value += float(np.sum(counts * e_log_pi + (n_rows - counts) * e_log_off))
        return value + float(np.sum(_beta_entropy(tau)))

    def _update_alpha(self, tau):
        """``alpha`` maximising ``sum_k [log alpha + (alpha - 1) E[log v_k]]``."""
        e_log_v = digamma(tau[:, 0]) - digamma(tau.sum(axis=1))
        return float(-tau.shape[0] / np.sum(e_log_v))

    def _initial_tau(self, K, alpha):
        return np.column_stack([np.full(K, alpha), np.ones(K)])

    def _truncation(self, n_rows, alpha, greedy):
        if self.max_features == "auto":
            if greedy:
                return 100
            return min(100, max(1, smallest_truncation(n_rows, alpha, self.truncation_tol)))
        return int(self.max_features)

    # -- the fit --------------------------------------------------------------------------
    def fit(self, X, observed, alpha, sigma_x, sigma_a, rng) -> VariationalState:
        """Coordinate ascent from ``n_init`` starts; the state with the highest ELBO.
        ``X`` (N, D) with any finite value where ``observed`` is 0."""
        self._validate_params()
        X = np.ascontiguousarray(X, dtype=np.float64)
        observed = np.ascontiguousarray(observed, dtype=np.float64)
        N, D = X.shape
        best = None
        for restart in range(int(self.n_init)):
            start = time.perf_counter()
            greedy = self.init == "greedy" or (self.init == "mixed" and restart % 2 == 0)
            K = self._truncation(N, float(alpha), greedy)
            if greedy:
                state = self._empty_state(0, D, alpha, sigma_x, sigma_a, N)
                self._add_features(state, np.where(observed > 0, X, 0.0), observed, K, rng,
                                   start)
            else:
                state = self._empty_state(K, D, alpha, sigma_x, sigma_a, N)
                state.nu = rng.random((N, K))
            self._run(state, X, observed, start)
            if best is None or state.elbo > best.elbo:
                best = state
        return best

    def _empty_state(self, K, D, alpha, sigma_x, sigma_a, N):
        return VariationalState(
            nu=np.zeros((N, K)), phi_mean=np.zeros((K, D)), phi_var=np.ones((K, D)),
            tau=self._initial_tau(K, float(alpha)), alpha=float(alpha),
            sigma_x=float(sigma_x), sigma_a=float(sigma_a),
        )

    def _record(self, state, Xo, observed, start, temperature=1.0, value=None):
        if value is None:
            value = self.elbo(state, Xo, observed, temperature)
        state.elbo_trace.append(value)
        state.hyper_trace.append((state.alpha, state.sigma_x, state.sigma_a))
        state.time_trace.append(time.perf_counter() - start)
        state.n_iter += 1

    def _add_features(self, state, Xo, observed, max_features, rng, start):
        """The greedy start (``init="greedy"``): births of one feature at a time, each
        followed by one round of coordinate ascent and kept if the ELBO rose.

        A birth takes the residual ``r_m`` of a row ``m`` drawn with probability
        proportional to ``|r_m|^2`` as the new feature's mean, and gives it to the rows
        ``n`` with ``(r_n . r_m - |r_m|^2 / 2) / sigma_x^2 > 0`` (the ``nu`` update of
        appendix B.2 at even prior odds). Coordinate ascent from a random ``nu`` blends
        every feature into every other (issue 24: 50 features in use for 29 true ones,
        ``sigma_x`` 0.77 for 0.2); a feature born on what the others leave unexplained
        starts apart from them, as the accelerated sampler's features do, which start
        from none and are added as the data support them."""
        N, D = Xo.shape
        rejected = 0
        elbo = self.elbo(state, Xo, observed)
        while state.nu.shape[1] < max_features and rejected < self._birth_patience:
            resid = Xo - (state.nu @ state.phi_mean) * observed
            weight = np.sum(resid * resid, axis=1)
            total = weight.sum()
            if not (np.isfinite(total) and total > 0.0):
                break
            row = int(rng.choice(N, p=weight / total))
            feature = resid[row]
            sx2 = state.sigma_x**2
            logit = (resid @ feature - 0.5 * (observed @ (feature * feature))) / sx2
            saved = (state.nu, state.phi_mean, state.phi_var, state.tau, state.alpha,
                     state.sigma_x, state.sigma_a)
            state.nu = np.ascontiguousarray(np.column_stack([state.nu, expit(logit)]))
            state.phi_mean = np.vstack([state.phi_mean, feature])
            state.phi_var = np.vstack([state.phi_var, np.full(D, state.sigma_a**2)])
            state.tau = np.vstack([state.tau, self._initial_tau(1, state.alpha)])
            self.iterate(state, Xo, observed)
            new = self.elbo(state, Xo, observed)
            if new > elbo:
                elbo, rejected = new, 0
                self._record(state, Xo, observed, start, value=new)
            else:
                (state.nu, state.phi_mean, state.phi_var, state.tau, state.alpha,
                 state.sigma_x, state.sigma_a) = saved
                rejected += 1

    def _temperature(self, it):
        """The factor on ``sigma_x^2`` and ``sigma_a^2`` at iteration ``it``: from
        ``tempering_start`` down to 1 linearly over the first ``tempering_iter``."""
        T = int(self.tempering_iter)
        if it >= T:
            return 1.0
        return 1.0 + (float(self.tempering_start) - 1.0) * (1.0 - it / T)

    def _run(self, state, X, observed, start=None):
        """Coordinate ascent until the ELBO settles (or ``max_iter`` iterations after
        the start's)."""
        start = time.perf_counter() if start is None else start
        Xo = np.where(observed > 0, X, 0.0)
        for it in range(int(self.max_iter)):
            temperature = self._temperature(it)
            self.iterate(state, Xo, observed, temperature)
            self._record(state, Xo, observed, start, temperature)
            if it > int(self.tempering_iter) and \
                    abs(state.elbo_trace[-1] - state.elbo_trace[-2]) <= \
                    self.tol * abs(state.elbo_trace[-2]):
                state.converged = True
                break

    def iterate(self, state, Xo, observed, temperature=1.0):
        """One round of coordinate ascent: features (all at once), assignments, the
        order of the features, sticks, hyperparameters. ``Xo`` is ``X`` with 0 where
        unobserved; ``temperature`` multiplies ``sigma_x^2`` and ``sigma_a^2`` (the
        hyperparameters are updated only at temperature 1)."""
        N, D = Xo.shape
        sx2 = temperature * state.sigma_x**2
        sa2 = temperature * state.sigma_a**2
        state.phi_mean, state.phi_var = update_feature_posterior(Xo, observed, state.nu,
                                                                 sx2, sa2)
        nu, mean, var = state.nu, state.phi_mean, state.phi_var
        resid = Xo - (nu @ mean) * observed  # observed part of x - sum_k nu_k phi_k
        # nu_{:,k}, feature by feature (appendix B.2).
        e_log_pi, e_log_off = self._stick_terms(state.tau, state.alpha)
        update_assignments(resid, observed, nu, mean, var, sx2,
                           np.ascontiguousarray(e_log_pi - e_log_off))
        if self._orders_features:
            self._order_features(state, Xo, observed, temperature)
        counts = state.nu.sum(axis=0)
        state.tau = self._update_sticks(state.tau, counts, N, state.alpha)
        if self.update_hyperparameters and temperature == 1.0:
            mean, var = state.phi_mean, state.phi_var
            state.alpha = self._update_alpha(state.tau)
            # Below sqrt(machine epsilon) of the data's scale the expected squared error
            # is rounding noise: data a feature fits exactly (a constant X) would drive
            # sigma_x to 0 and the bound to a division by zero.
            floor = _SQRT_EPS * _data_scale(Xo, observed)
            state.sigma_a = max(float(np.sqrt(np.mean(var + mean**2))), floor)
            sq = self._expected_squared_error(state, Xo, observed)
            state.sigma_x = max(float(np.sqrt(sq / observed.sum())), floor)

    # The stick-breaking prior is not exchangeable: E[pi_k] falls with k, so a feature
    # many rows use sitting behind a rarely used one pays for it in every row. Coordinate
    # ascent cannot swap two features; relabelling them is a move of its own.
    _orders_features = True

    def _order_features(self, state, Xo, observed, temperature):
        """Relabel the features by decreasing ``sum_n nu_nk`` (with ``tau`` updated for
        the new order), kept only if it raises the ELBO: the likelihood and the entropy
        of ``q(Z, A)`` do not change, only the stick terms."""
        counts = state.nu.sum(axis=0)
        order = np.argsort(-counts, kind="stable")
        if np.array_equal(order, np.arange(order.size)):
            return
        N = state.nu.shape[0]
        # Against the sticks this order would get anyway (the update that follows).
        state.tau = self._update_sticks(state.tau, counts, N, state.alpha)
        before = self._stick_objective(state.tau, counts, N, state.alpha)
        tau = self._update_sticks(state.tau[order], counts[order], N, state.alpha)
        if self._stick_objective(tau, counts[order], N, state.alpha) > before:
            state.nu = np.ascontiguousarray(state.nu[:, order])
            state.phi_mean = np.ascontiguousarray(state.phi_mean[order])
            state.phi_var = np.ascontiguousarray(state.phi_var[order])
            state.tau = tau

    @staticmethod
    def _expected_squared_error(state, Xo, observed):
        """``sum_{n,d} o_nd E[(x_nd - sum_k z_nk a_kd)^2]`` under ``q``."""
        nu, mean, var = state.nu, state.phi_mean, state.phi_var
        resid = (Xo - nu @ mean) * observed
        if np.all(observed > 0):
            # sum_k [sum_n nu_nk sum_d (Phi_kd + phi_kd^2) - sum_n nu_nk^2 sum_d phi_kd^2]
            second = np.sum(var + mean**2, axis=1)
            extra = nu.sum(axis=0) @ second - (nu**2).sum(axis=0) @ np.sum(mean**2, axis=1)
            return float(np.sum(resid**2) + extra)
        extra = (nu @ (var + mean**2) - nu**2 @ mean**2) * observed
        return float(np.sum(resid**2) + np.sum(extra))

    def elbo(self, state, Xo, observed, temperature=1.0) -> float:
        """The lower bound of eqs. 6.1-6.3 (with the chosen bound of ``E[log(1 - pi)]``),
        with ``sigma_x^2`` and ``sigma_a^2`` multiplied by ``temperature``."""
        nu, mean, var, tau = state.nu, state.phi_mean, state.phi_var, state.tau
        N = nu.shape[0]
        sx2 = temperature * state.sigma_x**2
        sa2 = temperature * state.sigma_a**2
        counts = nu.sum(axis=0)
        value = self._stick_objective(tau, counts, N, state.alpha)  # sticks, z | v, H[q(v)]
        value += float(np.sum(-0.5 * np.log(2 * np.pi * sa2) - (var + mean**2) / (2 * sa2)))
        n_obs = observed.sum()
        value += float(-0.5 * n_obs * np.log(2 * np.pi * sx2)
                       - self._expected_squared_error(state, Xo, observed) / (2 * sx2))
        value += float(np.sum(0.5 * np.log(2 * np.pi * np.e * var)))
        with np.errstate(divide="ignore", invalid="ignore"):
            h = -(np.where(nu > 0, nu * np.log(nu), 0.0)
                  + np.where(nu < 1, (1 - nu) * np.log1p(-nu), 0.0))
        return value + float(np.sum(h))

    # -- the fit's record (what the estimator keeps) -------------------------------------
    @staticmethod
    def used_features(state) -> np.ndarray:
        """The features of the truncation that some row uses: ``sum_n nu_nk >= 0.5``."""
        return np.flatnonzero(state.nu.sum(axis=0) >= 0.5)

    def log_joint(self, state) -> float:
        """The ELBO, which stands for the log joint in the traces and the sample."""
        return float(state.elbo)

    def traces(self, state) -> dict:
        """Per iteration: the ELBO (as ``log_joint``), the number of features used at the
        end, and ``alpha``, ``sigma_x`` and ``sigma_a``."""
        hyper_trace = np.asarray(state.hyper_trace, dtype=float).reshape(-1, 3)
        return {
            "log_joint": np.asarray(state.elbo_trace),
            "n_features": np.full(state.n_iter, float(self.used_features(state).size)),
            "alpha": hyper_trace[:, 0],
            "sigma_x": hyper_trace[:, 1],
            "sigma_a": hyper_trace[:, 2],
        }

    def snapshot(self, state, chain=0) -> dict:
        """The variational posterior as a sample: ``Z`` where ``nu > 0.5`` over the used
        features, and the hyperparameters."""
        kept = self.used_features(state)
        return {
            "Z": (state.nu[:, kept] > 0.5).astype(np.int8),
            "alpha": state.alpha, "sigma_x": state.sigma_x, "sigma_a": state.sigma_a,
        }

    def feature_probabilities(self, state) -> np.ndarray:
        """``E_q[pi_k] = prod_{m<=k} tau_m1 / (tau_m1 + tau_m2)``: the probability that a
        new row has feature ``k``."""
        return np.cumprod(state.tau[:, 0] / state.tau.sum(axis=1))

    def e_step(self, state, X, observed, n_passes=50):
        """``nu`` of new rows with the features, sticks and hyperparameters held at
        ``state``: ``n_passes`` sweeps of the ``nu`` update over the features (a fixed
        number, so a row's result depends on that row only)."""
        Xo = np.where(observed > 0, X, 0.0)
        observed = np.asarray(observed, dtype=np.float64)
        K = state.nu.shape[1]
        mean, var = state.phi_mean, state.phi_var
        sx2 = state.sigma_x**2
        e_log_pi, e_log_off = self._stick_terms(state.tau, state.alpha)
        prior = e_log_pi - e_log_off
        nu = np.tile(expit(prior), (X.shape[0], 1))
        # Elementwise products and row sums only (no matrix products, whose blocking
        # depends on the number of rows): a row's result is the same bit for bit
        # whichever rows come with it.
        resid = Xo.copy()
        for k in range(K):
            resid -= nu[:, k, None] * mean[k] * observed
        half_norms = [0.5 * (observed * (var[k] + mean[k] ** 2)).sum(axis=1)
                      for k in range(K)]
        for _ in range(n_passes):
            for k in range(K):
                resid += nu[:, k, None] * mean[k] * observed
                gain = ((resid * mean[k]).sum(axis=1) - half_norms[k]) / sx2
                nu[:, k] = expit(prior[k] + gain)
                resid -= nu[:, k, None] * mean[k] * observed
        return nu


class FiniteVariationalIBP(VariationalIBP):
    """Mean-field variational inference for the finite approximation of the IBP,
    ``pi_k ~ Beta(alpha / K, 1)`` independently (Doshi-Velez 2009, ch. 6, footnote 2; beta
    process factor analysis). ``q(pi_k) = Beta(tau_k1, tau_k2)`` and every expectation
    is closed: ``tau_k1 = alpha / K + sum_n nu_nk``, ``tau_k2 = 1 + N - sum_n nu_nk``.
    Parameters as :class:`VariationalIBP` (``bound`` and ``taylor_terms`` unused)."""

    name = "finite_variational"
    # Exchangeable features: the order changes nothing.
    _orders_features = False

    def _stick_terms(self, tau, alpha):
        psi12 = digamma(tau.sum(axis=1))
        return digamma(tau[:, 0]) - psi12, digamma(tau[:, 1]) - psi12

    def _stick_prior(self, tau, alpha):
        K = max(tau.shape[0], 1)  # no feature yet (the greedy start): an empty sum
        e_log_pi = digamma(tau[:, 0]) - digamma(tau.sum(axis=1))
        return float(np.sum(np.log(alpha / K) + (alpha / K - 1.0) * e_log_pi))

    def _update_sticks(self, tau, counts, n_rows, alpha):
        K = max(tau.shape[0], 1)
        return np.column_stack([alpha / K + counts, 1.0 + n_rows - counts])

    def _update_alpha(self, tau):
        """``alpha`` maximising ``sum_k [log(alpha / K) + (alpha / K - 1) E[log pi_k]]``:
        ``alpha = -K^2 / sum_k E[log pi_k]``."""
        K = tau.shape[0]
        e_log_pi = digamma(tau[:, 0]) - digamma(tau.sum(axis=1))
        return float(-K * K / np.sum(e_log_pi))

    def _initial_tau(self, K, alpha):
        return np.column_stack([np.full(K, alpha / max(K, 1)), np.ones(K)])

    def feature_probabilities(self, state) -> np.ndarray:
        """``E_q[pi_k] = tau_k1 / (tau_k1 + tau_k2)``."""
        return state.tau[:, 0] / state.tau.sum(axis=1)


def _beta_entropy(tau):
    a, b = tau[:, 0], tau[:, 1]
    return (betaln(a, b) - (a - 1) * digamma(a) - (b - 1) * digamma(b)
            + (a + b - 2) * digamma(a + b))
