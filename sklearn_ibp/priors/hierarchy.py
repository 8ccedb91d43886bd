"""Priors of the correlated latent feature hierarchies: DP-IBP, IBP-IBP and noisy-or IBP-IBP.

Doshi-Velez (2009), ch. 7. Rows (observations) belong to categories, categories
link to features, and a row has the features its categories link to (sec. 7.1, fig. 7.3):

- ``C`` (N x L, binary): category memberships, ``C ~ CRP(alpha_categories)`` as a one-hot
  matrix (``upper="dp"``, eq. 7.3) or ``C ~ IBP(alpha_categories)`` (``upper="ibp"``,
  eqs. 7.6, 7.8);
- ``M`` (L x K, binary): category-feature links, ``M ~ IBP(alpha_features)`` whose customers
  are the ``L`` active categories;
- ``Z`` (N x K, binary): with ``s_nk = c_n . m_k``, ``z_nk = [s_nk > 0]`` (``link="or"``;
  for the DP this is ``Z = C M``, eq. 7.3) or ``z_nk ~ Bernoulli(1 - q^s_nk)``
  (``link="noisy_or"``, eqs. 7.7-7.8, no leak: ``s_nk = 0`` gives ``z_nk = 0``, as
  proposition 7.1.1 requires).

Given ``N_C = L`` categories, ``K ~ Poisson(alpha_features H_L)``, so the expected number
of features is ``E[N_f] = alpha_features E[H_{N_C}]`` (eq. 7.4), computed here exactly, and
bounded by ``alpha_features (log(E[N_C] + 1) + gamma)``: ``O(log log N)``.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from scipy import fft
from scipy.stats import poisson

from ._validation import check_positive
from .crp import crp_log_prob, expected_n_clusters, sample_crp
from .ibp import as_random_source, expected_n_features, ibp_log_prob, sample_ibp

__all__ = [
    "expected_n_categories",
    "expected_n_features_hierarchy",
    "feature_count_bound",
    "hierarchy_log_prob",
    "sample_hierarchy",
]

_UPPERS = ("dp", "ibp")
_LINKS = ("or", "noisy_or")

# Bernstein's inequality P(S - E[S] >= t) <= exp(-t^2 / (2 (v + t / 3))) for a sum S of
# independent [0, 1] variables (or a Poisson variable) with variance v: truncating at
# E[S] + 10 sqrt(v) + 40 leaves a tail of probability below exp(-45) ~ 3e-20.
_TAIL_SDS = 10.0
_TAIL_OFFSET = 40.0


def _check_n_samples(n_samples) -> int:
    if isinstance(n_samples, bool) or not isinstance(n_samples, numbers.Integral):
        raise ValueError(f"n_samples must be a non-negative integer, got {n_samples!r}.")
    if n_samples < 0:
        raise ValueError(f"n_samples must be a non-negative integer, got {n_samples!r}.")
    return int(n_samples)


def _check_choice(value, name: str, choices) -> str:
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}.")
    return value


def _check_q(q) -> float:
    try:
        q = float(q)
    except (TypeError, ValueError):
        raise ValueError(f"q must be a probability in [0, 1], got {q!r}.") from None
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"q must be a probability in [0, 1], got {q!r}.")
    return q


def _harmonic_numbers(n_max: int) -> np.ndarray:
    """``H_0 .. H_{n_max}`` with ``H_0 = 0``."""
    return np.concatenate([[0.0], np.cumsum(1.0 / np.arange(1, n_max + 1, dtype=float))])


def _bernoulli_sum_pmf(probs: np.ndarray, max_count: int) -> np.ndarray:
    """``P(S = 0 .. max_count)`` for ``S`` a sum of independent Bernoulli(``probs``).

    The generating function ``prod_i (1 - p_i + p_i x)`` is multiplied pairwise in a
    balanced tree, a whole level at once with batched real FFTs. Every factor is kept only up
    to degree ``max_count``: the coefficients of degree ``<= max_count`` of a product of
    polynomials with non-negative coefficients depend only on the factors' coefficients of
    degree ``<= max_count``, so the truncation changes nothing that is returned.
    """
    polys = np.stack([1.0 - probs, probs], axis=1)
    if max_count < 1:
        polys = polys[:, :1]
    while polys.shape[0] > 1:
        if polys.shape[0] % 2:  # pad with the constant polynomial 1
            one = np.zeros((1, polys.shape[1]))
            one[0, 0] = 1.0
            polys = np.vstack([polys, one])
        width = polys.shape[1]
        full = 2 * width - 1
        n_fft = fft.next_fast_len(full, real=True)
        spectrum = fft.rfft(polys[0::2], n_fft, axis=1) * fft.rfft(polys[1::2], n_fft, axis=1)
        polys = fft.irfft(spectrum, n_fft, axis=1)[:, : min(full, max_count + 1)]
        np.clip(polys, 0.0, None, out=polys)  # rounding leaves tiny negative values
    pmf = np.zeros(max_count + 1)
    pmf[: polys.shape[1]] = polys[0]
    return pmf


def _truncation_point(mean: float, variance: float, upper_limit: float) -> int:
    return int(min(upper_limit, math.ceil(mean + _TAIL_SDS * math.sqrt(variance) + _TAIL_OFFSET)))


def _category_count_pmf(n_samples: int, alpha_categories: float, upper: str) -> np.ndarray:
    """``P(N_C = 0 .. T)`` with the far tail beyond ``T`` (probability < 1e-19) left off."""
    if upper == "ibp":  # N_C ~ Poisson(alpha_C H_N)
        rate = expected_n_features(n_samples, alpha_categories)
        top = _truncation_point(rate, rate, math.inf)
        return poisson.pmf(np.arange(top + 1), rate)
    # CRP: customer i opens a new table with probability alpha / (alpha + i - 1), independently.
    i = np.arange(1, n_samples + 1, dtype=float)
    probs = alpha_categories / (alpha_categories + i - 1.0)
    top = _truncation_point(probs.sum(), float(np.sum(probs * (1.0 - probs))), n_samples)
    if n_samples == 0:
        return np.ones(1)
    return _bernoulli_sum_pmf(probs, top)


def expected_n_categories(n_samples: int, alpha_categories: float, upper: str) -> float:
    """Prior expected number of active categories ``E[N_C]`` of ``N`` rows (sec. 7.2).

    Parameters
    ----------
    n_samples : int
        Number of rows ``N``.
    alpha_categories : float
        Concentration of the upper process, > 0.
    upper : {"dp", "ibp"}
        ``"dp"``: the CRP, ``E[N_C] = sum_{i=1}^N alpha / (alpha + i - 1)``;
        ``"ibp"``: the IBP, ``E[N_C] = alpha H_N``.

    Returns
    -------
    float
    """
    n_samples = _check_n_samples(n_samples)
    alpha_categories = check_positive(alpha_categories, "alpha_categories")
    upper = _check_choice(upper, "upper", _UPPERS)
    if upper == "dp":
        return expected_n_clusters(n_samples, alpha_categories)
    return expected_n_features(n_samples, alpha_categories)


def expected_n_features_hierarchy(
    n_samples: int, alpha_categories: float, alpha_features: float, upper: str
) -> float:
    """Exact prior expected number of features ``E[N_f]`` of ``N`` rows (eq. 7.4).

    Given ``N_C = L`` active categories, the number of features (columns of ``M``) is
    ``Poisson(alpha_features H_L)`` with ``H_0 = 0``, so ``E[N_f] = alpha_features
    E[H_{N_C}]``, summed here over the distribution of ``N_C``: ``Poisson(alpha_categories
    H_N)`` for ``upper="ibp"``; for ``upper="dp"`` a sum of independent
    ``Bernoulli(alpha / (alpha + i - 1))``, ``i = 1 .. N`` (customer ``i`` opens a table),
    whose pmf is computed by convolution (a tree of batched FFT products, ``O(N log^2 N)``
    at worst; ``N = 10^5`` takes milliseconds).

    The sum stops at ``T = E[N_C] + 10 sd(N_C) + 40``. By Bernstein's inequality
    ``P(N_C > T) < exp(-45)``, and the omitted terms are at most
    ``alpha_features H_N P(N_C > T)`` for the CRP (``N_C <= N``) and
    ``alpha_features E[N_C; N_C > T] = alpha_features E[N_C] P(N_C >= T)`` for the
    Poisson (``H_n <= n``): a relative truncation error far below ``1e-15``. What
    remains is floating point rounding in the convolution, below ``1e-12`` relative.

    For the noisy-or link ``N_f`` counts the columns of ``M`` (features with at least one
    link); a column of ``Z`` may still be empty.

    Parameters
    ----------
    n_samples : int
        Number of rows ``N``.
    alpha_categories : float
        Concentration of the upper process (``C``), > 0.
    alpha_features : float
        Concentration of the IBP over the links ``M``, > 0.
    upper : {"dp", "ibp"}
        The process over categories.

    Returns
    -------
    float

    See Also
    --------
    feature_count_bound : the Jensen bound of eq. 7.4.
    """
    n_samples = _check_n_samples(n_samples)
    alpha_categories = check_positive(alpha_categories, "alpha_categories")
    alpha_features = check_positive(alpha_features, "alpha_features")
    upper = _check_choice(upper, "upper", _UPPERS)
    pmf = _category_count_pmf(n_samples, alpha_categories, upper)
    return float(alpha_features * np.dot(pmf, _harmonic_numbers(pmf.size - 1)))


def feature_count_bound(
    n_samples: int, alpha_categories: float, alpha_features: float, upper: str
) -> float:
    """Upper bound ``alpha_features (log(E[N_C] + 1) + gamma)`` on ``E[N_f]`` (eq. 7.4).

    The Jensen argument of Doshi-Velez 2009, ch. 7, with its ``O(1)`` terms made explicit. For every
    ``n >= 0``, ``H_n <= log(n + 1) + gamma`` (Euler's constant ``gamma = 0.5772...``): the sequence
    ``a_n = H_n - log(n + 1)`` starts at ``a_0 = 0``, increases
    (``a_n - a_{n-1} = 1/n - log(1 + 1/n) > 0``) and converges to ``gamma``, so
    ``a_n < gamma``. As ``log(x + 1)`` is concave, Jensen's inequality gives

    ``E[N_f] = alpha_features E[H_{N_C}] <= alpha_features (E[log(N_C + 1)] + gamma)
    <= alpha_features (log(E[N_C] + 1) + gamma)``.

    With ``E[N_C] = O(alpha_categories log N)`` (:func:`expected_n_categories`) the bound
    grows as ``log log N``.

    Parameters
    ----------
    n_samples : int
        Number of rows ``N``.
    alpha_categories : float
        Concentration of the upper process, > 0.
    alpha_features : float
        Concentration of the IBP over the links, > 0.
    upper : {"dp", "ibp"}
        The process over categories.

    Returns
    -------
    float
    """
    alpha_features = check_positive(alpha_features, "alpha_features")
    n_categories = expected_n_categories(n_samples, alpha_categories, upper)
    return float(alpha_features * (math.log1p(n_categories) + np.euler_gamma))


def sample_hierarchy(
    n_samples: int,
    alpha_categories: float,
    alpha_features: float,
    upper: str = "dp",
    link: str = "or",
    q: float = 0.1,
    random_state=None,
):
    """Draw ``(C, M, Z)`` from a correlated feature hierarchy (sec. 7.2, eqs. 7.3, 7.6, 7.8).

    ``C`` from a CRP (one-hot rows) or an IBP over the ``N`` rows, ``M`` from an IBP whose
    ``L`` customers are the active categories in the order of ``C``'s columns, and ``Z``
    from ``s = C M`` by the ``"or"`` link ``z = [s > 0]`` or the ``"noisy_or"`` link
    ``P(z = 1) = 1 - q^s`` (no leak).

    Parameters
    ----------
    n_samples : int
        Number of rows ``N``.
    alpha_categories : float
        Concentration of the upper process, > 0.
    alpha_features : float
        Concentration of the IBP over the links, > 0.
    upper : {"dp", "ibp"}, default="dp"
        Process over the categories: the DP (the DP-IBP of eq. 7.3) or the IBP (the IBP-IBP
        of eq. 7.6 and the noisy-or IBP-IBP of eq. 7.8).
    link : {"or", "noisy_or"}, default="or"
        How ``Z`` follows from ``C M``.
    q : float, default=0.1
        Noisy-or noise in ``[0, 1]``: each active parent independently fails to switch the
        feature on with probability ``q``. Used only with ``link="noisy_or"``; ``q = 0``
        is the ``"or"`` link.
    random_state : int, RandomState, Generator or None, default=None
        Seed or random source.

    Returns
    -------
    C : ndarray of shape (n_samples, n_categories), int8
        Category memberships, columns in order of first appearance, none empty.
    M : ndarray of shape (n_categories, n_features), int8
        Category-feature links; every column has at least one link.
    Z : ndarray of shape (n_samples, n_features), int8
        Feature assignments; with the noisy-or a column may be empty.
    """
    n_samples = _check_n_samples(n_samples)
    alpha_categories = check_positive(alpha_categories, "alpha_categories")
    alpha_features = check_positive(alpha_features, "alpha_features")
    upper = _check_choice(upper, "upper", _UPPERS)
    link = _check_choice(link, "link", _LINKS)
    if link == "noisy_or":
        q = _check_q(q)
    rng = as_random_source(random_state)
    if upper == "dp":
        labels = sample_crp(n_samples, alpha_categories, rng)
        n_categories = int(labels.max()) + 1 if n_samples else 0
        C = np.zeros((n_samples, n_categories), dtype=np.int8)
        C[np.arange(n_samples), labels] = 1
    else:
        C = sample_ibp(n_samples, alpha_categories, random_state=rng)
    M = sample_ibp(C.shape[1], alpha_features, random_state=rng)
    n_parents = C.astype(np.int64) @ M.astype(np.int64)
    if link == "or":
        Z = (n_parents > 0).astype(np.int8)
    else:
        on = 1.0 - np.power(q, n_parents)
        Z = ((rng.random(n_parents.shape) < on) & (n_parents > 0)).astype(np.int8)
    return C, M, Z


def _as_binary(array, name: str) -> np.ndarray:
    try:
        out = np.asarray(array)
    except Exception as exc:  # ragged lists and the like
        raise ValueError(f"{name} must be a 2-d binary array: {exc}") from None
    if out.ndim != 2:
        raise ValueError(f"{name} must be a 2-d binary array, got shape {out.shape}.")
    if out.dtype == bool:
        return out.astype(np.int64)
    if not np.issubdtype(out.dtype, np.number):
        raise ValueError(f"{name} must be a 2-d binary array, got dtype {out.dtype}.")
    if out.size and not np.all((out == 0) | (out == 1)):
        raise ValueError(f"{name} must contain only 0 and 1.")
    return out.astype(np.int64)


def hierarchy_log_prob(
    C,
    M,
    Z,
    alpha_categories: float,
    alpha_features: float,
    upper: str,
    link: str,
    q: float | None = None,
) -> float:
    """Log prior ``log P(C) + log P(M) + log P(Z | C, M)`` of a hierarchy (sec. 7.2).

    - ``P(C)``: for ``upper="dp"`` the CRP probability of the partition given by the rows'
      categories (:func:`~sklearn_ibp.priors.crp_log_prob`); for ``upper="ibp"`` the IBP
      probability of the left-ordered class ``[C]`` (:func:`~sklearn_ibp.priors.ibp_log_prob`,
      eq. 2.1).
    - ``P(M)``: the IBP probability of ``[M]`` whose customers are the ``L`` active
      categories (empty columns of ``C`` are dropped together with their rows of ``M``).
      It does not depend on the order of ``M``'s rows (the IBP is exchangeable).
    - ``P(Z | C, M)`` with ``s_nk = c_n . m_k``: for ``link="or"`` it is 1 if
      ``Z == [C M > 0]`` and 0 otherwise; for ``link="noisy_or"`` (eq. 7.7) it is
      ``sum_{s_nk > 0} z_nk log(1 - q^s_nk) + (1 - z_nk) s_nk log q``, and ``-inf`` as soon
      as a feature is on without an active parent (``z_nk = 1``, ``s_nk = 0``).

    What the product of the two probabilities is a distribution over. For the DP the
    categories are told apart by their members, so ``P(partition) P([M])`` is the
    probability of ``(C, M)`` up to relabelling the categories (``C``'s columns together
    with ``M``'s rows) and the features, and sums to one over those classes. For the IBP,
    ``P([C]) P([M])`` is the probability of the pair (``[C]``, ``[M]`` with ``M``'s rows on
    the columns of the left-ordered ``C``, in order) and sums to one over such pairs. It is
    not in general the probability of ``(C, M)`` up to simultaneous relabelling: when
    categories ``l != l'`` have equal columns in ``C``, swapping rows ``l`` and ``l'`` of
    ``M`` may give another pair for the same configuration. That probability is
    ``P([C]) P([M])`` times the number of distinct ``[M]`` obtained by permuting the rows of
    ``M`` within groups of equal columns of ``C`` (1 when ``C`` has no equal columns). The
    factor is not included: the value returned is the log probability of the pair.

    Parameters
    ----------
    C : array-like of shape (n_samples, n_categories)
        Binary category memberships; for ``upper="dp"`` exactly one 1 per row.
    M : array-like of shape (n_categories, n_features)
        Binary links, row ``l`` for column ``l`` of ``C``.
    Z : array-like of shape (n_samples, n_features)
        Binary feature assignments.
    alpha_categories : float
        Concentration of the upper process, > 0.
    alpha_features : float
        Concentration of the IBP over the links, > 0.
    upper : {"dp", "ibp"}
        Process over the categories.
    link : {"or", "noisy_or"}
        How ``Z`` follows from ``C M``.
    q : float, default=None
        Noisy-or noise in ``[0, 1]``; required for ``link="noisy_or"``, ignored otherwise.

    Returns
    -------
    float
        The log prior; ``-inf`` for a configuration of probability zero.
    """
    alpha_categories = check_positive(alpha_categories, "alpha_categories")
    alpha_features = check_positive(alpha_features, "alpha_features")
    upper = _check_choice(upper, "upper", _UPPERS)
    link = _check_choice(link, "link", _LINKS)
    if link == "noisy_or":
        if q is None:
            raise ValueError("q must be given (a probability in [0, 1]) for link='noisy_or'.")
        q = _check_q(q)
    C = _as_binary(C, "C")
    M = _as_binary(M, "M")
    Z = _as_binary(Z, "Z")
    if M.shape[0] != C.shape[1]:
        raise ValueError(
            f"M must have one row per column of C: C has {C.shape[1]} columns, "
            f"M has {M.shape[0]} rows."
        )
    if Z.shape != (C.shape[0], M.shape[1]):
        raise ValueError(
            f"Z must have shape (n_samples, n_features) = {(C.shape[0], M.shape[1])}, "
            f"got {Z.shape}."
        )
    if upper == "dp":
        if C.shape[0] and not np.all(C.sum(axis=1) == 1):
            raise ValueError(
                "C must have exactly one category (a single 1) per row for upper='dp'."
            )
        log_p = crp_log_prob(np.argmax(C, axis=1), alpha_categories) if C.shape[0] else 0.0
    else:
        log_p = ibp_log_prob(C, alpha_categories)
    active = C.any(axis=0)
    log_p += ibp_log_prob(M[active], alpha_features)

    n_parents = C @ M
    if link == "or":
        return float(log_p) if np.array_equal(Z, (n_parents > 0)) else -math.inf
    if np.any((Z == 1) & (n_parents == 0)):
        return -math.inf
    with_parent = n_parents > 0
    s = n_parents[with_parent].astype(float)
    z = Z[with_parent].astype(bool)
    if q == 0.0:  # every parent switches the feature on
        return float(log_p) if z.all() else -math.inf
    log_q = math.log(q)
    # log(1 - q^s) is -inf for q = 1: the noisy-or then never switches a feature on.
    with np.errstate(divide="ignore"):
        log_on = np.log1p(-np.power(q, s[z]))
    log_p += float(np.sum(log_on)) + log_q * float(np.sum(s[~z]))
    return float(log_p)
