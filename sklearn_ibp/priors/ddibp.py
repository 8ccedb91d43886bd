"""The distance dependent Indian Buffet Process prior (dd-IBP).

Gershman, Frazier and Blei 2015, section 2.2. Every customer ``i`` owns
``lambda_i ~ Poisson(alpha / h_i)`` dishes; for every dish, every customer links to one
customer ``j`` (possibly itself) with probability ``a_ij = f(d_ij) / h_i``, where
``f`` is the decay function, ``d_ij`` the distance and ``h_i = sum_j f(d_ij)``. A customer
has a dish (``z_ik = 1``) when the dish's owner is reachable from it along the dish's links.
With ``f = 1`` and sequential distances (``d_ij = inf`` for ``j > i``) this is the IBP.

The pieces, in the order the generative process uses them:

- :func:`pairwise_distances_for_ddibp`: the distance matrix ``D`` from covariates or a
  precomputed matrix, validated, optionally made sequential;
- :func:`decay_proximity`: the proximities ``f(D)`` for a named or a user decay function;
- :func:`normalized_proximity`: ``A`` and ``h``;
- :func:`expected_feature_factor` and :func:`calibrate_decay`: ``sum_i 1 / h_i`` (the
  prior's expected number of features over ``alpha``) and the decay rate that sets it to
  the IBP's ``H_N``;
- :func:`compute_reachability` and :func:`inherit_features`: who inherits each dish
  (numba kernels, ``O(N)`` per dish);
- :func:`ddibp_log_prob`: ``log P(c*, C)`` (eqs. 2-4);
- :func:`sample_ddibp`: a draw of ``(Z, c*, C)``;
- :class:`DDIBPPrior`: the prior over a set of training rows as one object (``A``, ``h``
  and the bound on the number of dishes), which the estimator hands to its sampler.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.special import gammaln
from sklearn.metrics import pairwise_distances
from sklearn.utils import check_array

from ._ddibp_kernels import compute_reachability, fill_feature_matrix
from ._validation import check_positive
from .ibp import as_random_source

__all__ = [
    "DDIBPPrior",
    "DECAY_FUNCTIONS",
    "calibrate_decay",
    "compute_reachability",
    "ddibp_log_prob",
    "decay_proximity",
    "expected_feature_factor",
    "inherit_features",
    "normalized_proximity",
    "pairwise_distances_for_ddibp",
    "sample_ddibp",
]

#: Names accepted by ``decay_function``.
DECAY_FUNCTIONS = ("constant", "exponential", "logistic", "window")

# Distances a user decay function is checked on (with 0 and inf, the ends the dd-IBP pins).
_CHECK_GRID = np.concatenate([[0.0], np.logspace(-6, 6, 49), [np.inf]])


# --------------------------------------------------------------------------- distances


def pairwise_distances_for_ddibp(
    X=None,
    *,
    metric: str | Callable = "euclidean",
    precomputed=None,
    sequential: bool = False,
) -> np.ndarray:
    """The ``(N, N)`` distance matrix ``D`` of the dd-IBP (Gershman et al. 2015, sec. 2.2).

    Either computed from covariates ``X`` with :func:`sklearn.metrics.pairwise_distances`
    (any scikit-learn or SciPy metric, or a callable), or given as ``precomputed`` (or as
    ``X`` with ``metric="precomputed"``). A precomputed matrix must be square, free of NaN
    and negative values, and have a zero diagonal (``d_ii = 0``); ``+inf`` is allowed off
    the diagonal (customers that can never link). It need not be symmetric.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_covariates) or (n_samples,), default=None
        Covariates; a 1-d array is one covariate. With ``metric="precomputed"``, the
        distance matrix itself.
    metric : str or callable, default="euclidean"
        Metric passed to :func:`sklearn.metrics.pairwise_distances`, or ``"precomputed"``.
    precomputed : array-like of shape (n_samples, n_samples), default=None
        A distance matrix; give either this or ``X``.
    sequential : bool, default=False
        If True, set ``d_ij = inf`` for ``j > i``: customers link only to earlier customers
        and themselves (the sequential distances of Gershman et al. 2015; with the constant decay
        this is the IBP).

    Returns
    -------
    distances : ndarray of shape (n_samples, n_samples)
        A new array; the inputs are not modified.
    """
    if metric == "precomputed":
        if precomputed is not None:
            raise ValueError("Give the distance matrix either as X or as precomputed, not both.")
        precomputed, X = X, None
    if (X is None) == (precomputed is None):
        raise ValueError(
            "Give exactly one of X (covariates) and precomputed (a distance matrix)."
        )
    if precomputed is not None:
        distances = _check_distance_matrix(precomputed)
    else:
        X_arr = np.asarray(X)
        if X_arr.ndim == 1:
            X_arr = X_arr.reshape(-1, 1)
        X_arr = check_array(X_arr, input_name="X", ensure_min_samples=1)
        distances = np.asarray(pairwise_distances(X_arr, metric=metric), dtype=float)
        distances = _check_distance_matrix(distances, name="distances computed from X")
    if sequential:
        distances[np.triu_indices(distances.shape[0], 1)] = np.inf
    return distances


def _check_distance_matrix(distances, name: str = "precomputed") -> np.ndarray:
    """A float copy of a validated distance matrix (see :func:`pairwise_distances_for_ddibp`)."""
    D = np.array(distances, dtype=float, copy=True)
    if D.ndim != 2 or D.shape[0] != D.shape[1]:
        raise ValueError(
            f"{name} must be a square (n_samples, n_samples) matrix, got shape {D.shape}."
        )
    if D.shape[0] < 1:
        raise ValueError(f"{name} must have at least one sample, got shape {D.shape}.")
    if np.isnan(D).any():
        raise ValueError(f"{name} contains NaN; distances must be numbers in [0, inf].")
    if (D < 0).any():
        raise ValueError(f"{name} contains negative distances; distances must be >= 0.")
    if np.any(np.diag(D) != 0):
        raise ValueError(f"{name} must have a zero diagonal (a customer's self-distance is 0).")
    return D


# --------------------------------------------------------------------------- decay


def _evaluate_callable(decay_function, distances: np.ndarray) -> np.ndarray:
    """``decay_function`` on an array: vectorised if it accepts arrays, else elementwise."""
    with np.errstate(all="ignore"):
        try:
            values = np.asarray(decay_function(distances), dtype=float)
            if values.shape == distances.shape:
                return values
        except Exception:  # noqa: BLE001 - fall back to a scalar function
            pass
        return np.vectorize(lambda d: float(decay_function(d)), otypes=[float])(distances)


def _check_decay_callable(decay_function) -> None:
    """``f`` must map distances into ``[0, 1]``, ``f(0) = 1`` (Gershman et al. 2015, sec. 2.2)."""
    values = _evaluate_callable(decay_function, _CHECK_GRID)
    bad = ~((values >= 0) & (values <= 1))  # catches NaN too
    if bad.any():
        d = _CHECK_GRID[np.argmax(bad)]
        raise ValueError(
            "decay_function must map distances into [0, 1]; "
            f"it returned {float(values[np.argmax(bad)])!r} at distance {float(d):g}."
        )
    if not np.isclose(values[0], 1.0, rtol=0, atol=1e-12):
        raise ValueError(f"decay_function must satisfy f(0) = 1, got f(0) = {float(values[0])!r}.")


def decay_proximity(
    distances,
    decay_function: str | Callable = "exponential",
    decay: float = 1.0,
    nu: float | None = None,
) -> np.ndarray:
    """Proximities ``f(d_ij)`` for a decay function (Gershman et al. 2015, sec. 2.2 and Fig. 3).

    Gershman et al. (2015, sec. 2.2) require ``f(0) = 1`` and ``f(inf) = 0``; infinite distances
    always get proximity 0 here, whatever the function. With ``beta = decay``:

    - ``"constant"``: ``f(d) = 1`` for finite ``d`` (the IBP with sequential distances);
    - ``"exponential"``: ``f(d) = exp(-beta d)``;
    - ``"logistic"``: ``f(d) = (1 + exp(-nu)) / (1 + exp(beta d - nu))``. Gershman et al. write
      ``1 / (1 + exp(beta d - nu))``; it is rescaled by its value at 0 so that ``f(0) = 1``
      as they require (the scale enters ``h_i`` and so the owned-dish rates);
    - ``"window"``: ``f(d) = 1[d < nu]``;
    - a callable ``f(d)`` (vectorised over arrays, or scalar): checked on distances from 0
      to 1e6 and inf to return values in ``[0, 1]`` with ``f(0) = 1``.

    Parameters
    ----------
    distances : array-like of shape (n_samples, n_samples)
        Distances, as from :func:`pairwise_distances_for_ddibp` (not re-validated beyond
        NaN and sign).
    decay_function : {"constant", "exponential", "logistic", "window"} or callable, \
default="exponential"
        The decay function ``f``.
    decay : float, default=1.0
        Rate ``beta > 0`` of the exponential and logistic decays (ignored otherwise).
    nu : float, default=None
        Offset of the logistic (any real) and width of the window (``> 0``); required by
        both, ignored otherwise.

    Returns
    -------
    proximity : ndarray of shape (n_samples, n_samples)
        Values in ``[0, 1]``, 0 where the distance is infinite.
    """
    D = np.asarray(distances, dtype=float)
    if np.isnan(D).any() or (D < 0).any():
        raise ValueError("distances must be non-negative and free of NaN.")
    finite = np.isfinite(D)
    proximity = np.zeros_like(D)
    if callable(decay_function):
        _check_decay_callable(decay_function)
        values = _evaluate_callable(decay_function, D[finite])
        if not ((values >= 0) & (values <= 1)).all():
            raise ValueError("decay_function returned values outside [0, 1] on these distances.")
        proximity[finite] = values
        return proximity
    if not isinstance(decay_function, str) or decay_function not in DECAY_FUNCTIONS:
        raise ValueError(
            f"decay_function must be one of {DECAY_FUNCTIONS} or a callable, "
            f"got {decay_function!r}."
        )
    d = D[finite]
    if decay_function == "constant":
        proximity[finite] = 1.0
    elif decay_function == "exponential":
        beta = check_positive(decay, "decay")
        proximity[finite] = np.exp(-beta * d)
    elif decay_function == "logistic":
        beta = check_positive(decay, "decay")
        if nu is None or not np.isfinite(float(nu)):
            raise ValueError(f"nu (the logistic offset) must be a finite number, got {nu!r}.")
        nu = float(nu)
        # (1 + e^{-nu}) / (1 + e^{beta d - nu}) via logaddexp, stable for large beta d
        proximity[finite] = np.exp(np.logaddexp(0.0, -nu) - np.logaddexp(0.0, beta * d - nu))
        np.minimum(proximity, 1.0, out=proximity)
    else:  # window
        width = check_positive(nu, "nu (the window width)") if nu is not None else None
        if width is None:
            raise ValueError("nu (the window width) must be a positive number, got None.")
        proximity[finite] = (d < width).astype(float)
    return proximity


def normalized_proximity(proximity) -> tuple[np.ndarray, np.ndarray]:
    """Normalised proximities ``A`` and normalisers ``h`` (Gershman et al. 2015, sec. 2.2).

    ``h_i = sum_j f(d_ij)`` and ``a_ij = f(d_ij) / h_i``, so each row of ``A`` is the
    distribution of customer ``i``'s link for one dish.

    Parameters
    ----------
    proximity : array-like of shape (n_samples, n_samples)
        ``f(D)``, values in ``[0, 1]``, as from :func:`decay_proximity`.

    Returns
    -------
    A : ndarray of shape (n_samples, n_samples)
    h : ndarray of shape (n_samples,)
    """
    F = np.asarray(proximity, dtype=float)
    if F.ndim != 2 or F.shape[0] != F.shape[1]:
        raise ValueError(f"proximity must be a square matrix, got shape {F.shape}.")
    if not ((F >= 0) & (F <= 1)).all():
        raise ValueError("proximity must hold values in [0, 1] (no NaN).")
    h = F.sum(axis=1)
    if (h <= 0).any():
        raise ValueError(
            "every row of proximity must have a positive sum; "
            f"rows {np.flatnonzero(h <= 0).tolist()} are all zero."
        )
    return F / h[:, None], h


def expected_feature_factor(proximity) -> float:
    """``sum_i 1 / h_i``: the prior's expected number of features divided by ``alpha``.

    Customer ``i`` owns ``Poisson(alpha / h_i)`` dishes and every dish is a feature, so
    ``E[K] = alpha sum_i 1 / h_i`` (Gershman et al. 2015, sec. 2.2). It is ``H_N = sum_i 1 / i``
    for the IBP (constant decay, sequential distances), 1 for the constant decay without
    sequential distances, and close to ``N`` when the decay is so fast that every customer
    links only to itself.

    Parameters
    ----------
    proximity : array-like of shape (n_samples, n_samples)
        ``f(D)``, as from :func:`decay_proximity`.

    Returns
    -------
    float
    """
    return float(np.sum(1.0 / normalized_proximity(proximity)[1]))


def calibrate_decay(distances, decay_function: str = "exponential", nu=None,
                    target: float | None = None) -> float:
    """The decay rate ``beta`` at which the dd-IBP expects as many features as the IBP.

    Solves ``sum_i 1 / h_i(beta) = target`` (``H_N = sum_{i <= N} 1 / i`` by default), so
    that with the same ``alpha`` the prior's expected number of features,
    ``alpha sum_i 1 / h_i`` (:func:`expected_feature_factor`), is the IBP's ``alpha H_N``
    (Griffiths and Ghahramani 2005, eq. 2.2; Gershman, Frazier and Blei, sec. 2.2).
    ``sum_i 1 / h_i`` grows with ``beta`` from its value at ``beta = 0`` (1 without
    sequential distances) to about ``N``, so the root is unique; it is found by Brent's
    method on ``log beta``. The answer is in the inverse units of the distances: scaling
    every distance by ``c`` scales it by ``1 / c``. A fixed rate such as 1 is not: with
    time stamps 0, 1, 2, ... and ``exp(-d)``, ``h_i`` is about 2.2 and the prior expects
    ``0.46 alpha N`` features, most of them owned by one or two rows.

    Parameters
    ----------
    distances : array-like of shape (n_samples, n_samples)
        Distances, as from :func:`pairwise_distances_for_ddibp`.
    decay_function : {"exponential", "logistic"}, default="exponential"
        The decay whose rate is calibrated.
    nu : float, default=None
        The logistic offset (required for ``"logistic"``).
    target : float, default=None
        ``sum_i 1 / h_i`` to reach; None for ``H_N``.

    Returns
    -------
    beta : float
        A positive rate; 0.0 when the decay at rate 0 already expects ``target`` features
        or more (e.g. with sequential distances, which at ``beta = 0`` are the IBP itself).
    """
    from scipy.optimize import brentq

    if decay_function not in ("exponential", "logistic"):
        raise ValueError(
            "Only the exponential and logistic decays have a rate to calibrate; got "
            f"decay_function={decay_function!r}."
        )
    D = np.asarray(distances, dtype=float)
    N = D.shape[0]
    if target is None:
        target = float(np.sum(1.0 / np.arange(1, N + 1)))
    finite = np.isfinite(D) & (D > 0)
    if not finite.any():
        return 0.0
    scale = float(np.median(D[finite]))
    if decay_function == "logistic":
        if nu is None or not np.isfinite(float(nu)):
            raise ValueError(f"nu (the logistic offset) must be a finite number, got {nu!r}.")
        nu = float(nu)
    # inf stays inf (proximity 0); single precision halves the cost of the dozen
    # evaluations on an N x N matrix and is ample for a rate found to 0.1%
    scaled = (D / scale).astype(np.float32)

    def excess(log_beta):
        # h_i directly (this runs a dozen times on an N x N matrix; decay_proximity would
        # re-validate the distances every time)
        with np.errstate(over="ignore"):
            rate = np.float32(np.exp(log_beta))
            if decay_function == "exponential":
                h = np.exp(-rate * scaled).sum(axis=1, dtype=np.float64)
            else:
                h = ((1.0 + np.exp(-nu)) / (1.0 + np.exp(rate * scaled - np.float32(nu)))
                     ).sum(axis=1, dtype=np.float64)
                if not np.isfinite(h).all():  # inf / inf for nu far below 0: log space
                    h = np.exp(np.logaddexp(0.0, -nu)
                               - np.logaddexp(0.0, rate * scaled - nu)
                               ).sum(axis=1, dtype=np.float64)
        return float(np.sum(1.0 / h)) - target

    lo, hi = np.log(1e-8), np.log(1e8)
    if excess(lo) >= 0.0:
        return 0.0
    if excess(hi) <= 0.0:  # unreachable target (ties at distance 0): the fastest decay
        return float(np.exp(hi) / scale)
    return float(np.exp(brentq(excess, lo, hi, xtol=1e-3)) / scale)


# --------------------------------------------------------------------------- reachability
# compute_reachability and fill_feature_matrix are numba kernels: see _ddibp_kernels.py.


def _check_configuration(owners, connections) -> tuple[np.ndarray, np.ndarray]:
    owners = np.asarray(owners)
    connections = np.asarray(connections)
    if connections.ndim != 2:
        raise ValueError(
            f"connections must be a 2-d (n_samples, n_features) array, got shape "
            f"{connections.shape}."
        )
    n_samples, n_features = connections.shape
    if owners.shape != (n_features,):
        raise ValueError(
            f"owners must have shape ({n_features},) to match connections, got {owners.shape}."
        )
    for name, arr in (("owners", owners), ("connections", connections)):
        if arr.size and (
            not np.issubdtype(arr.dtype, np.integer) or arr.min() < 0 or arr.max() >= n_samples
        ):
            raise ValueError(f"{name} must hold customer indices in [0, {n_samples - 1}].")
    return owners.astype(np.int64), np.ascontiguousarray(connections, dtype=np.int64)


def inherit_features(owners, connections) -> np.ndarray:
    """The feature matrix ``Z = phi(c*, C)`` of a dd-IBP configuration (sec. 2.2, steps 3-4).

    Parameters
    ----------
    owners : int array-like of shape (n_features,)
        ``c*_k``, the owner of dish ``k``.
    connections : int array-like of shape (n_samples, n_features)
        ``c_ik``, the customer ``i`` links to for dish ``k``.

    Returns
    -------
    Z : ndarray of shape (n_samples, n_features), dtype int8
        Every column has at least its owner; ``O(N K)`` time.
    """
    owners, connections = _check_configuration(owners, connections)
    Z = np.zeros(connections.shape, dtype=np.int8)
    fill_feature_matrix(owners, connections, Z)
    return Z


# --------------------------------------------------------------------------- prior


def ddibp_log_prob(owners, connections, A, h, alpha: float) -> float:
    """``log P(c*, C | D, alpha, f)`` of a labelled configuration (Gershman et al. 2015, eqs. 2-4).

    ``sum_i log Poisson(lambda_i; alpha / h_i) + sum_{i,k} log a_{i, c_ik}``, where
    ``lambda_i`` is the number of dishes customer ``i`` owns.

    How configurations are counted: following eq. 3, ``c*`` is a function of
    ``(lambda_1, ..., lambda_N)`` — the dishes are labelled in owner order (customer 0's
    dishes first, then customer 1's, ...) and, within one owner, in the order they were
    drawn. This is the probability of one such *labelled* configuration: ``lambda`` together
    with an *ordered* list of connection columns for each owner. It is unchanged by any
    permutation of the columns (both sums are symmetric in them), so ``owners`` need not be
    sorted. There is no ``1 / K!`` and no multiplicity correction: to get the probability of
    a matrix class, sum over labelled configurations (eq. 5). Equivalently, a multiset of
    columns of one owner in which column types repeat ``m_1, m_2, ...`` times stands for
    ``lambda_i! / prod_t m_t!`` labelled configurations of this probability.

    Parameters
    ----------
    owners : int array-like of shape (n_features,)
    connections : int array-like of shape (n_samples, n_features)
    A : array-like of shape (n_samples, n_samples)
        Normalised proximities.
    h : array-like of shape (n_samples,)
        Normalisers ``h_i``.
    alpha : float
        Mass parameter, > 0.

    Returns
    -------
    float
        ``-inf`` if some link has zero probability.
    """
    alpha = check_positive(alpha, "alpha")
    owners, connections = _check_configuration(owners, connections)
    A = np.asarray(A, dtype=float)
    h = np.asarray(h, dtype=float)
    n_samples = connections.shape[0]
    if A.shape != (n_samples, n_samples) or h.shape != (n_samples,):
        raise ValueError(
            f"A must have shape ({n_samples}, {n_samples}) and h shape ({n_samples},); "
            f"got {A.shape} and {h.shape}."
        )
    rates = alpha / h
    owned = np.bincount(owners, minlength=n_samples).astype(float)
    log_p = float(np.sum(owned * np.log(rates) - rates - gammaln(owned + 1.0)))  # eq. 3
    if connections.size:
        with np.errstate(divide="ignore"):
            link_probs = np.take_along_axis(A, connections, axis=1)
            log_p += float(np.sum(np.log(link_probs)))  # eq. 4
    return log_p


def sample_ddibp(proximity, alpha: float, random_state=None):
    """Draw ``(Z, c*, C)`` by the dd-IBP's generative process (Gershman et al. 2015, sec. 2.2).

    1. customer ``i`` owns ``lambda_i ~ Poisson(alpha / h_i)`` dishes;
    2. for every dish, every customer ``i`` links to ``j`` with probability ``a_ij``;
    3. customer ``i`` has dish ``k`` iff it reaches the owner (:func:`inherit_features`).

    Parameters
    ----------
    proximity : array-like of shape (n_samples, n_samples)
        ``f(D)``, as from :func:`decay_proximity`.
    alpha : float
        Mass parameter, > 0.
    random_state : int, RandomState, Generator or None
        Seed or random source.

    Returns
    -------
    Z : ndarray of shape (n_samples, n_features), dtype int8
    owners : ndarray of shape (n_features,), dtype int64
        Sorted: customer 0's dishes first (the labelling of :func:`ddibp_log_prob`).
    connections : ndarray of shape (n_samples, n_features), dtype int64
    """
    alpha = check_positive(alpha, "alpha")
    A, h = normalized_proximity(proximity)
    rng = as_random_source(random_state)
    n_samples = A.shape[0]
    owned = rng.poisson(alpha / h)
    owners = np.repeat(np.arange(n_samples, dtype=np.int64), owned)
    n_features = owners.shape[0]
    cumulative = np.cumsum(A, axis=1)
    u = rng.random((n_samples, n_features))
    connections = np.empty((n_samples, n_features), dtype=np.int64)
    for i in range(n_samples):
        # first j with cumulative[i, j] > u: never a zero-probability customer
        connections[i] = np.searchsorted(cumulative[i], u[i] * cumulative[i, -1], side="right")
    np.minimum(connections, n_samples - 1, out=connections)
    Z = np.zeros((n_samples, n_features), dtype=np.int8)
    fill_feature_matrix(owners, connections, Z)
    return Z, owners, connections


class DDIBPPrior:
    """The dd-IBP prior over ``n_samples`` customers (Gershman et al. 2015,
    sec. 2.2): normalised proximities ``A``, normalisers ``h`` and, optionally, a bound on
    the number of dishes.

    What :class:`~sklearn_ibp.DistanceDependentIBP` gives its sampler (as ``hyper["prior"]``)
    in place of loose arrays; the sampler reads :attr:`proximity`, :attr:`h` and
    :attr:`max_features`, the estimator :meth:`log_prob` and :meth:`new_rows`.

    Parameters
    ----------
    proximity : array-like of shape (n_samples, n_samples)
        Normalised proximities ``a_ij = f(d_ij) / h_i`` (rows sum to one), as from
        :func:`normalized_proximity`.
    h : array-like of shape (n_samples,)
        Normalisers ``h_i = sum_j f(d_ij)``.
    max_features : int or None, default=None
        At most this many dishes: the prior restricted to ``K <= max_features``.
    """

    def __init__(self, proximity, h, max_features=None):
        self.proximity = np.asarray(proximity, dtype=float)
        self.h = np.asarray(h, dtype=float)
        n = self.h.shape[0] if self.h.ndim == 1 else -1
        if self.proximity.shape != (n, n):
            raise ValueError(
                f"proximity must have shape (n_samples, n_samples) and h (n_samples,); got "
                f"{self.proximity.shape} and {self.h.shape}."
            )
        if max_features is not None and (isinstance(max_features, bool)
                                         or int(max_features) != max_features
                                         or max_features < 1):
            raise ValueError(f"max_features must be a positive integer or None; got "
                             f"{max_features!r}.")
        self.max_features = None if max_features is None else int(max_features)

    @classmethod
    def from_proximity(cls, proximity, max_features=None) -> DDIBPPrior:
        """The prior of the (unnormalised) proximities ``f(D)`` (see
        :func:`decay_proximity`)."""
        A, h = normalized_proximity(proximity)
        return cls(A, h, max_features)

    @property
    def n_samples(self) -> int:
        return int(self.h.shape[0])

    def log_prob(self, owners, connections, alpha: float) -> float:
        """``log P(c*, C | alpha)`` of a labelled configuration (:func:`ddibp_log_prob`)."""
        return ddibp_log_prob(owners, connections, self.proximity, self.h, alpha)

    def alpha_rate(self) -> float:
        """``sum_i 1 / h_i``: the rate of ``alpha``'s Gamma conditional (eq. 32) and the
        expected number of dishes over ``alpha``."""
        return float(np.sum(1.0 / self.h))

    @staticmethod
    def new_rows(proximity, Z):
        """A new customer's chance of each training dish: it links to training row ``j``
        with probability ``f(d_j) / h`` and to itself with ``f(0) / h = 1 / h``, so it has
        dish ``k`` with probability ``sum_j f(d_j) z_jk / h``, ``h = 1 + sum_j f(d_j)``;
        it owns ``Poisson(alpha / h)`` new dishes.

        Parameters
        ----------
        proximity : ndarray of shape (n_new, n_samples)
            ``f(d_ij)`` of each new row to each training row.
        Z : ndarray of shape (n_samples, n_features)
            The training rows' dishes.

        Returns
        -------
        probabilities : ndarray of shape (n_new, n_features)
        h : ndarray of shape (n_new,)
        """
        h = 1.0 + proximity.sum(axis=1)
        return proximity @ Z / h[:, None], h
