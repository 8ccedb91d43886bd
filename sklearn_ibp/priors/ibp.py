"""The Indian Buffet Process prior over binary feature matrices.

One- and two-parameter IBP (Doshi-Velez 2009, eq. 2.1 and appendix C.1; Ghahramani,
Griffiths and Sollich 2007). With concentration ``alpha`` and stickiness ``beta``
(``beta = 1`` is the one-parameter IBP), customer ``n`` (1-based) takes an existing dish
``k`` with probability ``m_k / (beta + n - 1)`` and ``Poisson(alpha * beta / (beta + n - 1))``
new dishes. By exchangeability any row may be treated as the last customer, which gives the
Gibbs conditionals used by every sampler in :mod:`sklearn_ibp.solvers`.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
from scipy.special import betaln, gammaln
from sklearn.utils import check_random_state

from .._memory import check_allocation

__all__ = [
    "expected_n_features",
    "existing_feature_log_odds",
    "ibp_log_prob",
    "labelled_ibp_log_prob",
    "left_order",
    "new_feature_rate",
    "sample_alpha_conditional",
    "sample_alpha_posterior",
    "sample_ibp",
    "harmonic_rate",
    "ibp_truncation_bound",
    "ibp_truncation_bound_heuristic",
    "ibp_truncation_bound_log",
    "smallest_truncation",
]


def as_random_source(random_state):
    """A :class:`numpy.random.Generator` as it is, anything else through
    :func:`sklearn.utils.check_random_state`."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    return check_random_state(random_state)


def _check_matrix(Z) -> np.ndarray:
    """``Z`` as an array, after checking that it is 2-d (its entries are read as
    ``Z != 0``)."""
    Z = np.asarray(Z)
    if Z.ndim != 2:
        raise ValueError(f"Z must be a 2-d binary matrix, got an array of shape {Z.shape}.")
    return Z


def harmonic_rate(n_samples: int, beta: float = 1.0) -> float:
    """Return ``sum_{n=1}^N beta / (beta + n - 1)``.

    For ``beta = 1`` this is the harmonic number ``H_N``. ``alpha`` times it is the
    expected number of features of ``N`` rows (appendix C.1).
    """
    n = np.arange(1, int(n_samples) + 1, dtype=float)
    return float(np.sum(beta / (beta + n - 1.0)))


def expected_n_features(n_samples: int, alpha: float, beta: float = 1.0) -> float:
    """Expected number of non-empty features, ``E[K | N] = alpha * sum_n beta/(beta+n-1)``.

    Parameters
    ----------
    n_samples : int
        Number of rows ``N``.
    alpha : float
        IBP concentration (expected number of features per row).
    beta : float, default=1.0
        Stickiness of the two-parameter IBP; 1 gives the one-parameter IBP.

    Returns
    -------
    float
    """
    return float(alpha) * harmonic_rate(n_samples, beta)


def new_feature_rate(n_samples: int, alpha: float, beta: float = 1.0) -> float:
    """Poisson rate of new features for a row treated as the last of ``n_samples``.

    ``alpha * beta / (beta + N - 1)``; for ``beta = 1`` it is ``alpha / N`` (eq. 3.7).
    """
    return float(alpha) * float(beta) / (float(beta) + n_samples - 1.0)


def existing_feature_log_odds(counts_others, n_samples: int, beta: float = 1.0):
    """Prior log odds of ``z_nk = 1`` given the other rows (eq. 3.6, appendix C.1).

    ``log m_{-n,k} - log(beta + N - 1 - m_{-n,k})``, where ``m_{-n,k}`` counts the *other*
    rows that have feature ``k``. Features with ``m_{-n,k} = 0`` get ``-inf``: a feature
    only row ``n`` has is a new feature of that row and is sampled by the new-feature step.

    Parameters
    ----------
    counts_others : array-like of shape (n_features,)
        ``m_{-n,k}`` for each feature.
    n_samples : int
        Number of rows ``N`` including row ``n``.
    beta : float, default=1.0
        Two-parameter IBP stickiness.

    Returns
    -------
    ndarray of shape (n_features,)
    """
    m = np.asarray(counts_others, dtype=float)
    with np.errstate(divide="ignore"):
        return np.log(m) - np.log(beta + n_samples - 1.0 - m)


def left_order(Z):
    """Return the left-ordered form ``lof(Z)`` with empty columns removed.

    Columns are sorted by their history (the column read as a binary number with the first
    row as the most significant bit) in decreasing order (Griffiths and Ghahramani, 2005).

    Parameters
    ----------
    Z : array-like of shape (n_samples, n_features)
        Binary matrix.

    Returns
    -------
    ndarray of shape (n_samples, n_nonzero_features), dtype int8
    """
    Z = _check_matrix(Z)
    Z = (Z != 0).astype(np.int8)
    Z = Z[:, Z.any(axis=0)]
    if Z.shape[1] == 0:
        return Z
    # lexsort uses the last key as primary: put row 0 last so it is the most significant.
    order = np.lexsort(Z[::-1, :])[::-1]
    return Z[:, order]


def ibp_log_prob(Z, alpha: float, beta: float = 1.0) -> float:
    """Log probability of the left-ordered equivalence class ``[Z]`` under the IBP.

    One-parameter form: eq. 2.1 of Doshi-Velez (2009); two-parameter form: appendix C.1,

    ``log P([Z]) = K log(alpha beta) - sum_h log K_h! - alpha sum_n beta/(beta+n-1)
    + sum_k log B(m_k, N - m_k + beta)``.

    Parameters
    ----------
    Z : array-like of shape (n_samples, n_features)
        Binary matrix; empty columns are ignored.
    alpha : float
        Concentration, > 0.
    beta : float, default=1.0
        Stickiness, > 0.

    Returns
    -------
    float
    """
    Z = _check_matrix(Z)
    Z = Z != 0
    counts = Z.sum(axis=0)
    Z = Z[:, counts > 0]
    counts = counts[counts > 0].astype(float)
    n_samples, n_features = Z.shape
    log_p = n_features * np.log(alpha * beta) - alpha * harmonic_rate(n_samples, beta)
    if n_features:
        # K_h: how many columns share each history. The probability does not depend on
        # the column order, so the columns are counted by their packed bits instead of
        # being left-ordered (a sort of N-long keys, slow for large N).
        packed = np.packbits(Z, axis=0)
        multiplicity = np.fromiter(
            Counter(packed[:, k].tobytes() for k in range(n_features)).values(), dtype=float
        )
        log_p -= np.sum(gammaln(multiplicity + 1.0))
        log_p += np.sum(betaln(counts, n_samples - counts + beta))
    return float(log_p)


def labelled_ibp_log_prob(Z, alpha: float, beta: float = 1.0, n_columns=None) -> float:
    """Log probability of the labelled matrix ``Z`` with ``n_columns`` column slots.

    The IBP puts probability ``P([Z])`` (:func:`ibp_log_prob`) on the left-ordered class of
    ``Z``. Spread evenly over the class's labelled versions with ``n_columns`` slots (the
    ``K`` non-empty columns in any of the ``n_columns! / (n_columns - K)!`` ordered
    placements, identical columns not told apart), it gives every labelled matrix

    ``log P_lab(Z) = K log(alpha beta) - alpha sum_n beta/(beta+n-1)
    + sum_k log B(m_k, N - m_k + beta) + log (n_columns - K)! - log n_columns!``,

    the ``K_h!`` of :func:`ibp_log_prob` cancelling against the count of labelled versions.
    Summed over all ``N x n_columns`` binary matrices it is the IBP's probability that
    ``K <= n_columns``. It is the target of the exact Metropolis-corrected parallel
    sampler (:class:`~sklearn_ibp.distributed.ParallelAcceleratedIBP` with
    ``correction="metropolis"``), whose state is a labelled matrix of fixed width.

    Parameters
    ----------
    Z : array-like of shape (n_samples, n_features)
        Binary matrix; its empty columns are free slots.
    alpha : float
        Concentration, > 0.
    beta : float, default=1.0
        Stickiness, > 0.
    n_columns : int or None, default=None
        Number of column slots (``n_features`` when None). Must be at least the number of
        non-empty columns of ``Z``.

    Returns
    -------
    float
    """
    Z = _check_matrix(Z)
    counts = (Z != 0).sum(axis=0)
    n_columns = Z.shape[1] if n_columns is None else int(n_columns)
    return _labelled_log_prob_from_counts(counts, Z.shape[0], alpha, beta, n_columns)


def _labelled_log_prob_from_counts(counts, n_samples: int, alpha: float, beta: float,
                                  n_columns: int) -> float:
    """:func:`labelled_ibp_log_prob` from the column counts ``m_k`` (zeros are free
    slots) and the number of rows."""
    counts = np.asarray(counts)
    counts = counts[counts > 0].astype(float)
    K = counts.size
    if K > n_columns:
        raise ValueError(
            f"Z has {K} non-empty columns, more than its n_columns={n_columns} slots."
        )
    log_p = K * np.log(alpha * beta) - alpha * harmonic_rate(n_samples, beta)
    log_p += np.sum(betaln(counts, n_samples - counts + beta))
    log_p += gammaln(n_columns - K + 1.0) - gammaln(n_columns + 1.0)
    return float(log_p)


def sample_ibp(n_samples: int, alpha: float, beta: float = 1.0, random_state=None):
    """Draw a binary matrix from the IBP by the buffet construction (ch. 2.1, app. C.1).

    Parameters
    ----------
    n_samples : int
        Number of customers (rows).
    alpha : float
        Concentration, > 0.
    beta : float, default=1.0
        Stickiness, > 0.
    random_state : int, RandomState, Generator or None
        Seed or random source.

    Returns
    -------
    Z : ndarray of shape (n_samples, n_features), dtype int8
        Columns in order of first appearance.

    Raises
    ------
    ValueError
        For a negative or non-integer ``n_samples`` or a non-positive or non-finite
        ``alpha`` or ``beta``.
    AllocationTooLargeError
        When the expected matrix (``n_samples`` rows by ``alpha`` times the harmonic rate
        columns, plus the lists of dishes built row by row) exceeds the memory limit of
        :func:`sklearn_ibp._memory.check_allocation`.
    """
    if isinstance(n_samples, bool) or not isinstance(n_samples, (int, np.integer)) \
            or n_samples < 0:
        raise ValueError(f"n_samples must be a non-negative integer; got {n_samples!r}.")
    for name, value in (("alpha", alpha), ("beta", beta)):
        if not (np.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be a positive finite number; got {value!r}.")
    N = int(n_samples)
    expected_K = expected_n_features(N, alpha, beta)
    # int8 Z of N x E[K], and the dishes of each row as Python list entries (about
    # alpha of them per row, 8 bytes each).
    check_allocation(
        N * expected_K + 8.0 * N * alpha,
        what=f"an IBP draw of {N} rows with about {expected_K:.3g} features",
        advice=f"lower alpha ({alpha:g}) or n_samples ({N})",
    )
    rng = as_random_source(random_state)
    counts: list[int] = []
    rows: list[list[int]] = []
    for n in range(1, int(n_samples) + 1):
        denom = beta + n - 1.0
        row = [k for k, m in enumerate(counts) if rng.random() < m / denom]
        for k in row:
            counts[k] += 1
        n_new = rng.poisson(alpha * beta / denom)
        row.extend(range(len(counts), len(counts) + n_new))
        counts.extend([1] * n_new)
        rows.append(row)
    Z = np.zeros((int(n_samples), len(counts)), dtype=np.int8)
    for n, row in enumerate(rows):
        Z[n, row] = 1
    return Z


def sample_alpha_conditional(
    n_features: int,
    rate: float,
    random_state,
    prior_shape: float = 1.0,
    prior_rate: float = 1.0,
) -> float:
    """Draw ``alpha`` from ``Gamma(prior_shape + K, prior_rate + rate)``.

    Every IBP representation the package samples gives ``alpha`` a likelihood of the form
    ``alpha^K exp(-alpha rate)``, so under a ``Gamma(prior_shape, prior_rate)`` prior
    (shape and rate) its conditional is this Gamma; only ``K`` and ``rate`` depend on the
    representation:

    * ``Z`` alone (the sticks integrated out): ``K`` non-empty features and
      ``rate = H_N``, or ``sum_n beta / (beta + n - 1)`` for the two-parameter IBP
      (Doshi-Velez 2009, sec. 5.1 and appendix C.1; Görür 2007, sec. 4.5.2);
      :func:`sample_alpha_posterior`;
    * the stick-breaking slice sampler's ``K`` represented sticks: ``rate`` the tail
      rate ``sum_{i<=N} (1 - (1 - mu_K)^i) / i - log mu_K`` (Görür 2007, eqs. 4.29 and
      4.42, after Teh, Görür and Ghahramani 2007);
    * ``K*`` truncated sticks: ``rate = -log mu_K*``, their prior being
      ``alpha^K* mu_K*^alpha`` (Görür 2007, eq. 4.42).

    Parameters
    ----------
    n_features : int
        ``K``.
    rate : float
        The coefficient of ``-alpha`` in the log likelihood of ``alpha``.
    random_state : int, RandomState, Generator or None
        Source of the one Gamma draw.
    prior_shape, prior_rate : float, default=1.0
        The Gamma prior of ``alpha``.

    Returns
    -------
    float
    """
    rng = as_random_source(random_state)
    return float(rng.gamma(prior_shape + n_features, 1.0 / (prior_rate + rate)))


def sample_alpha_posterior(
    n_features: int,
    n_samples: int,
    random_state,
    beta: float = 1.0,
    prior_shape: float = 1.0,
    prior_rate: float = 1.0,
) -> float:
    """Draw ``alpha`` from its conditional given ``K`` features on ``N`` rows (sec. 5.1).

    Under a ``Gamma(prior_shape, prior_rate)`` prior the conditional is
    ``Gamma(prior_shape + K, prior_rate + sum_n beta/(beta+n-1))``; with the default
    ``Gamma(1, 1)`` prior and ``beta = 1`` this is the ``Gamma(1 + K, 1 + H_N)`` of Doshi-Velez
    2009, sec. 5.1 (:func:`sample_alpha_conditional` with ``rate`` from :func:`harmonic_rate`).
    """
    return sample_alpha_conditional(n_features, harmonic_rate(n_samples, beta), random_state,
                                    prior_shape=prior_shape, prior_rate=prior_rate)


# -- truncation of the stick-breaking IBP (Doshi-Velez 2009, sec. 6.4) ----------------------------

#: The bounds ``smallest_truncation`` can invert.
TRUNCATION_BOUNDS = ("levy_khintchine", "heuristic")

#: Terms of the log bound's series summed explicitly (the rest is bounded above).
_LOG_BOUND_TERMS = 100_000


def _check_truncation_args(n_samples, alpha, n_features, features_name="n_features"):
    """Validated ``(N, alpha, K array)`` for the truncation bounds."""
    if isinstance(n_samples, bool) or not isinstance(n_samples, (int, np.integer)) \
            or n_samples < 1:
        raise ValueError(f"n_samples must be a positive integer; got {n_samples!r}.")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.integer,
                                                         np.floating)):
        raise TypeError(f"alpha must be a real number; got {type(alpha).__name__}.")
    if not (np.isfinite(alpha) and alpha > 0):
        raise ValueError(f"alpha must be a positive finite number; got {alpha!r}.")
    K = np.asarray(n_features)
    if not np.issubdtype(K.dtype, np.integer) or np.any(K < 0):
        raise ValueError(f"{features_name} must be non-negative integers; "
                         f"got {n_features!r}.")
    return int(n_samples), float(alpha), K.astype(np.int64)


def _truncation_rate(n_samples, alpha, n_features):
    """``N alpha (alpha / (1 + alpha))^K``: ``N sum_{k > K} E[pi_k]``, the expected number
    of entries ``z_nk = 1`` beyond the truncation (arguments already validated)."""
    return n_samples * alpha * np.exp(n_features * np.log(alpha / (1.0 + alpha)))


def _scalar_or_array(out):
    return float(out) if np.ndim(out) == 0 else out


def ibp_truncation_bound(n_samples: int, alpha: float, n_features) -> float | np.ndarray:
    """Bound on the error of truncating the stick-breaking IBP at ``n_features`` sticks
    (Doshi-Velez 2009, eq. 6.9, the Lévy-Khintchine bound of sec. 6.4.2).

    With ``m_K`` and ``m_inf`` the marginal distributions of the data under the prior
    truncated at ``K`` features and under the IBP (eq. 6.8),

    ``(1/4) int |m_K(X) - m_inf(X)| dX <= P(some z_nk = 1 with k > K)
    <= 1 - exp(-N alpha (alpha / (1 + alpha))^K)``.

    The sticks beyond ``pi_K`` are a Poisson process of rate ``alpha / x`` on
    ``[0, pi_K]``, so ``E[prod_{k>K} (1 - pi_k)^N | pi_K] >= exp(-N alpha pi_K)``, and
    Jensen's inequality with ``E[pi_K] = (alpha / (1 + alpha))^K`` gives the bound. It
    holds for any likelihood.

    Parameters
    ----------
    n_samples : int
        Number of rows ``N``.
    alpha : float
        IBP concentration.
    n_features : int or array-like of int
        Truncation level(s) ``K``.

    Returns
    -------
    float or ndarray
        The bound, of the shape of ``n_features``.

    See Also
    --------
    smallest_truncation : the smallest ``K`` whose bound is below a tolerance.
    ibp_truncation_bound_log : the log bound of sec. 6.4.1, never tighter.
    ibp_truncation_bound_heuristic : the zeta approximation of sec. 6.4.1, not a bound.
    """
    N, alpha, K = _check_truncation_args(n_samples, alpha, n_features)
    return _scalar_or_array(-np.expm1(-_truncation_rate(N, alpha, K)))


def ibp_truncation_bound_log(n_samples: int, alpha: float,
                             n_features) -> float | np.ndarray:
    """The log bound of Doshi-Velez 2009, sec. 6.4.1, before its approximations:
    ``1 - exp(-N sum_{r >= 1} alpha^(K+1) / (r^2 (alpha + r)^K))``.

    ``sum_{k > K} E[log(1 - pi_k)] = -sum_r (1/r^2) alpha^(K+1) / (alpha + r)^K`` from
    the Taylor series of ``log(1 - x)`` and the moments of the ``Beta(alpha, 1)`` sticks,
    and Jensen's inequality turns it into a bound on ``P(some z_nk = 1 with k > K)``.
    Doshi-Velez (2009) sums over the features from ``K`` on; here from ``K + 1``, the features a
    truncation at ``K`` removes. The first ``10^5`` terms are summed and the rest is
    replaced by its upper bound ``alpha (alpha / (alpha + 10^5))^K / 10^5``, so the
    result stays a bound.

    The ``r = 1`` term alone is the exponent of :func:`ibp_truncation_bound` (eq. 6.9), so
    this bound is never tighter than eq. 6.9; Doshi-Velez's (2009) formal version of it (sec. 6.4.1,
    by the hypergeometric series), ``1 - exp(-2 N alpha (alpha / (alpha + 1))^K)`` with
    the same shift, has twice eq. 6.9's exponent. In practice (N = 30, alpha = 5) this one
    is within 1% of eq. 6.9 once eq. 6.9 is below 0.99.

    Parameters
    ----------
    n_samples : int
        Number of rows ``N``.
    alpha : float
        IBP concentration.
    n_features : int or array-like of int
        Truncation level(s) ``K``.

    Returns
    -------
    float or ndarray
        The bound, of the shape of ``n_features``.
    """
    N, alpha, K = _check_truncation_args(n_samples, alpha, n_features)
    R = _LOG_BOUND_TERMS
    r = np.arange(1.0, R + 1.0)
    log_ratio = np.log(alpha / (alpha + r))
    weights = alpha / r**2
    tail_log_ratio = np.log(alpha / (alpha + R))
    total = np.array([
        np.sum(weights * np.exp(k * log_ratio)) + alpha * np.exp(k * tail_log_ratio) / R
        for k in K.reshape(-1)
    ]).reshape(K.shape)
    return _scalar_or_array(-np.expm1(-N * total))


def _heuristic_exponent(alpha, K):
    """``alpha^K zeta(K + 1, alpha + 1) = sum_{r >= 1} alpha^K / (alpha + r)^(K + 1)``,
    written ``rho^K / q * S`` with ``q = alpha + 1``, ``rho = alpha / q`` and ``S =
    sum_{j >= 0} (1 + j / q)^-(K + 1) = q^(K + 1) zeta(K + 1, q)``, so that it neither
    overflows (``alpha^K``) nor underflows (``zeta``) at large ``K``: ``S`` by scipy while
    ``q^(K + 1)`` is representable, else by Euler-Maclaurin (64 terms, the integral of
    the rest and two corrections)."""
    from scipy.special import zeta

    q = alpha + 1.0
    s = np.asarray(K, dtype=float) + 1.0
    small = s * np.log(q) < 600.0
    S = np.empty_like(s)
    S[small] = np.exp(s[small] * np.log(q)) * zeta(s[small], q)
    big = s[~small]  # here s > 600 / log(q) > 1, so every sum converges
    if big.size:
        J = 64
        j = np.arange(J, dtype=float)
        head = np.exp(-np.outer(big, np.log1p(j / q))).sum(axis=1)
        f_J = np.exp(-big * np.log1p(J / q))
        integral = q / (big - 1.0) * f_J * (1.0 + J / q)
        derivative = -big / q * f_J / (1.0 + J / q)  # f'(J)
        S[~small] = head + integral + 0.5 * f_J - derivative / 12.0
    return np.exp(np.asarray(K) * np.log(alpha / q)) / q * S.reshape(np.shape(K))


def ibp_truncation_bound_heuristic(n_samples: int, alpha: float,
                                   n_features) -> float | np.ndarray:
    """The heuristic of Doshi-Velez 2009, sec. 6.4.1: ``1 - exp(-N alpha^K zeta(K + 1, alpha))``.

    It replaces ``r^2 (alpha + r)^(K-1)`` by ``(alpha + r)^(K+1)`` in the log bound's
    series, which sums to the Hurwitz zeta function. Doshi-Velez's (2009) series runs over
    ``r >= 1``, so ``zeta(s, q)`` is read as ``sum_{r >= 1} (q + r)^-s``, which is scipy's
    ``zeta(K + 1, alpha + 1)`` (scipy's ``zeta(K + 1, alpha)`` adds the ``r = 0`` term
    ``1 / alpha`` to the exponent, and the result no longer goes to 0 with ``K``). Like
    Doshi-Velez's (2009) series it counts the features from ``K`` on, one more than a truncation at
    ``K`` removes (:func:`ibp_truncation_bound_log` counts from ``K + 1``).

    **Not a bound.** The replacement shrinks the early terms by ``(r / (alpha + r))^2``.
    Doshi-Velez (2009) found the heuristic "very close to the true value"; at N = 30, alpha = 5
    (the setting of its Fig. 6.1) it is far below it: 0.13 at K = 20 where the
    probability it approximates is 0.84, 0.021 against 0.37 at K = 30 (measured by Monte
    Carlo and by quadrature). Use :func:`ibp_truncation_bound` to choose a truncation.

    Parameters
    ----------
    n_samples : int
        Number of rows ``N``.
    alpha : float
        IBP concentration.
    n_features : int or array-like of int
        Truncation level(s) ``K``.

    Returns
    -------
    float or ndarray
        The approximation, of the shape of ``n_features``.
    """
    N, alpha, K = _check_truncation_args(n_samples, alpha, n_features)
    return _scalar_or_array(-np.expm1(-N * _heuristic_exponent(alpha, K)))


def smallest_truncation(n_samples: int, alpha: float, tol: float = 1e-3,
                        bound: str = "levy_khintchine") -> int:
    """The smallest truncation level ``K`` whose truncation bound is at most ``tol``.

    Both bounds are ``1 - exp(-N e(K))`` with ``e`` decreasing in ``K``, so the condition
    is ``e(K) <= c = -log(1 - tol) / N``; with ``rho = alpha / (1 + alpha)``:

    * ``"levy_khintchine"`` (eq. 6.9, :func:`ibp_truncation_bound`): ``e(K) = alpha
      rho^K``, so ``K = ceil(log(c / alpha) / log(rho))`` (0 when no feature at all
      meets it);
    * ``"heuristic"`` (sec. 6.4.1, :func:`ibp_truncation_bound_heuristic`): ``e(K) =
      sum_{r >= 1} alpha^K / (alpha + r)^(K + 1)`` lies between its first term
      ``rho^K / (alpha + 1)`` and ``rho^K (1 / (alpha + 1) + 1 / K)`` (the rest bounded
      by an integral), whose closed-form solutions bracket ``K``; bisection inside the
      bracket finds it.

    Either answer is checked against the bound function itself (``K`` meets ``tol`` and
    ``K - 1`` does not).

    Parameters
    ----------
    n_samples : int
        Number of rows ``N``.
    alpha : float
        IBP concentration.
    tol : float, default=1e-3
        Largest acceptable bound, in (0, 1).
    bound : {"levy_khintchine", "heuristic"}, default="levy_khintchine"
        Which bound to invert. Only ``"levy_khintchine"`` guarantees the truncation
        error. For ``alpha >= 1`` the heuristic gives smaller ``K`` that may not meet
        ``tol`` (N = 30, alpha = 5, tol = 1e-3: 47 against 66); for small ``alpha`` it
        can ask for one more.

    Returns
    -------
    int
        The truncation level.
    """
    N, alpha, _ = _check_truncation_args(n_samples, alpha, 0)
    if isinstance(tol, bool) or not isinstance(tol, (int, float, np.integer, np.floating)) \
            or not (0.0 < tol < 1.0):
        raise ValueError(f"tol must be a number in (0, 1); got {tol!r}.")
    if bound not in TRUNCATION_BOUNDS:
        raise ValueError(f"bound must be one of {TRUNCATION_BOUNDS}; got {bound!r}.")
    c = -np.log1p(-tol) / N
    log_rho = np.log(alpha / (1.0 + alpha))

    def closed_form(scale):
        # smallest K >= 0 with scale * rho^K <= c
        return max(0, int(np.ceil(np.log(c / scale) / log_rho)))

    if bound == "levy_khintchine":
        def meets(K):
            return ibp_truncation_bound(N, alpha, K) <= tol

        K = closed_form(alpha)
        # Guard the rounding of the closed form in both directions.
        while K > 0 and meets(K - 1):
            K -= 1
        while not meets(K):
            K += 1
        return K

    def meets(K):
        return ibp_truncation_bound_heuristic(N, alpha, K) <= tol

    # e(K) >= rho^K / (alpha + 1): no K below `low` meets tol; e(K) <= rho^K (1/(alpha+1)
    # + 1) for K >= 1: `high` does (up to rounding, which the doubling repairs).
    low = max(0, closed_form(1.0 / (alpha + 1.0)) - 1)
    high = max(1, closed_form(1.0 / (alpha + 1.0) + 1.0))
    while not meets(high):
        high *= 2
    while low > 0 and meets(low):
        low //= 2
    if meets(low):  # low == 0
        return 0
    # Invariant: meets(high) and not meets(low).
    while high - low > 1:
        mid = (low + high) // 2
        if meets(mid):
            high = mid
        else:
            low = mid
    return high
