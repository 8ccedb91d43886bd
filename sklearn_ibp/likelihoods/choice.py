"""Pairwise choice models: elimination by aspects (EBA) and Bradley-Terry-Luce (BTL).

Plain NumPy: the reference that the numba kernels of
:mod:`sklearn_ibp.solvers.eba._eba_slice_kernels` are tested against, and what the
estimator :class:`~sklearn_ibp.InfiniteEBA` uses to predict. Görür 2007, sec. 4.5.1.

Alternatives ``i = 0 .. N-1`` have binary aspects ``Z`` (N, K) with positive weights
``w`` (K,), and every alternative also has a unique aspect of its own with weight
``u_i`` (the BTL part of the model, Görür 2007, fig. 4.14-4.15). In a paired comparison the
aspects both alternatives share cannot decide the choice, so (eq. 4.63)

``p_ij = a_ij / (a_ij + a_ji)``,  ``a_ij = u_i + sum_k w_k z_ik (1 - z_jk)``,

with ``0 / 0 = 1/2``, and a lapse ``eps`` mixes in a coin flip:
``p~_ij = (1 - eps) p_ij + eps / 2``. The number of times ``x_ij`` that ``i`` was chosen
over ``j`` is binomial (eqs. 4.64-4.65). The log-likelihoods here are those of the
individual comparisons, ``sum_{i != j} x_ij log p~_ij``, without the binomial
coefficients (constants of the data).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize
from sklearn.utils import assert_all_finite, column_or_1d
from sklearn.utils.multiclass import type_of_target

from .._memory import check_allocation

__all__ = [
    "bradley_terry_probabilities",
    "check_outcomes",
    "check_pairs",
    "check_wins",
    "choice_log_likelihood",
    "eba_advantages",
    "eba_probabilities",
    "fit_bradley_terry",
    "pairs_from_win_counts",
    "win_counts_from_pairs",
]


def eba_advantages(Z, weights, unique_weights=None) -> np.ndarray:
    """``a_ij = u_i + sum_k w_k z_ik (1 - z_jk)``: the weight of what ``i`` has and ``j``
    lacks (the numerator of eq. 4.63), shape (N, N), zero diagonal.

    Parameters
    ----------
    Z : array-like of shape (n_alternatives, n_aspects)
        Binary aspects.
    weights : array-like of shape (n_aspects,)
        Positive aspect weights.
    unique_weights : array-like of shape (n_alternatives,) or None
        Weight of each alternative's unique aspect; None for none.

    Returns
    -------
    ndarray of shape (n_alternatives, n_alternatives)
    """
    Z = np.asarray(Z, dtype=float)
    w = np.asarray(weights, dtype=float)
    has = Z * w  # (N, K)
    adv = has @ (1.0 - Z).T
    if unique_weights is not None:
        adv = adv + np.asarray(unique_weights, dtype=float)[:, None]
    np.fill_diagonal(adv, 0.0)
    return adv


def eba_probabilities(Z, weights, unique_weights=None, lapse=0.0) -> np.ndarray:
    """Choice probabilities ``P[i, j] = p~_ij`` that ``i`` is chosen over ``j`` (eq. 4.63
    with the lapse of sec. 4.5.1); ``0 / 0 = 1/2`` and the diagonal is 1/2.

    Parameters
    ----------
    Z : array-like of shape (n_alternatives, n_aspects)
    weights : array-like of shape (n_aspects,)
    unique_weights : array-like of shape (n_alternatives,) or None
    lapse : float, default=0.0
        ``eps``: with this probability the choice is a coin flip.

    Returns
    -------
    ndarray of shape (n_alternatives, n_alternatives)
        ``P + P.T`` is 1 everywhere.
    """
    adv = eba_advantages(Z, weights, unique_weights)
    total = adv + adv.T
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(total > 0, adv / np.where(total > 0, total, 1.0), 0.5)
    return (1.0 - lapse) * p + 0.5 * lapse


def choice_log_likelihood(P, wins) -> float:
    """``sum_{i != j} wins[i, j] log P[i, j]``: the log probability of the individual
    comparisons (eq. 4.65 without the binomial coefficients).

    Parameters
    ----------
    P : array-like of shape (n_alternatives, n_alternatives)
        Choice probabilities, ``P[i, j]`` that ``i`` beats ``j``.
    wins : array-like of shape (n_alternatives, n_alternatives)
        ``wins[i, j]``: how many times ``i`` was chosen over ``j``.

    Returns
    -------
    float
    """
    P = np.asarray(P, dtype=float)
    wins = np.asarray(wins, dtype=float)
    mask = wins > 0
    with np.errstate(divide="ignore"):
        return float(np.sum(wins[mask] * np.log(P[mask])))


def bradley_terry_probabilities(strengths) -> np.ndarray:
    """``P[i, j] = s_i / (s_i + s_j)`` for the BTL model with log strengths ``strengths``.

    Parameters
    ----------
    strengths : array-like of shape (n_alternatives,)
        Log strengths ``log s_i``.

    Returns
    -------
    ndarray of shape (n_alternatives, n_alternatives)
    """
    t = np.asarray(strengths, dtype=float)
    return 1.0 / (1.0 + np.exp(t[None, :] - t[:, None]))


def fit_bradley_terry(wins, l2=0.0) -> np.ndarray:
    """Maximum-likelihood Bradley-Terry-Luce log strengths from a win-count matrix.

    The BTL model is the EBA model with unique aspects only (Görür 2007, sec. 4.5.1):
    ``P(i beats j) = s_i / (s_i + s_j)``. The log strengths are found by L-BFGS on the
    negative log-likelihood (convex in them), centred to mean zero.

    Parameters
    ----------
    wins : array-like of shape (n_alternatives, n_alternatives)
        ``wins[i, j]``: how many times ``i`` was chosen over ``j``.
    l2 : float, default=0.0
        Optional ridge penalty ``l2 * sum_i t_i^2`` on the log strengths, for data where
        the maximum-likelihood strengths are infinite (an alternative that never lost).

    Returns
    -------
    strengths : ndarray of shape (n_alternatives,)
        Log strengths; :func:`bradley_terry_probabilities` gives the choice probabilities.
    """
    W = np.asarray(wins, dtype=float)
    if W.ndim != 2 or W.shape[0] != W.shape[1]:
        raise ValueError(f"wins must be a square matrix, got shape {W.shape}.")
    N = W.shape[0]

    def objective(t):
        diff = t[:, None] - t[None, :]
        # log P[i, j] = -log(1 + exp(t_j - t_i))
        log_p = -np.logaddexp(0.0, -diff)
        p = np.exp(log_p)
        value = -np.sum(W * log_p) + l2 * np.sum(t * t)
        # d/dt_i of -sum W_ij log p_ij - sum W_ji log p_ji
        g = (W * (1.0 - p)).sum(axis=1) - (W.T * (1.0 - p.T)).sum(axis=1)
        return value, -g + 2.0 * l2 * t

    res = minimize(objective, np.zeros(N), jac=True, method="L-BFGS-B",
                   options={"maxiter": 1000, "gtol": 1e-9})
    return res.x - res.x.mean()


# -- the data: pairs and outcomes, or a matrix of win counts ---------------------------


def check_wins(wins, name="wins") -> np.ndarray:
    """``wins`` as a float64 (N, N) matrix of non-negative finite counts, zero diagonal.

    ``name`` is the argument's name in the messages (``"W"`` for
    :func:`pairs_from_win_counts` and ``InfiniteEBA.fit_counts``).

    Raises
    ------
    ValueError
        Naming what is wrong.
    """
    try:
        W = np.array(wins, dtype=np.float64)  # a copy: the caller's array is never touched
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a square (n_alternatives, n_alternatives) matrix "
                         f"of numbers: {exc}") from None
    if W.ndim != 2 or W.shape[0] != W.shape[1]:
        raise ValueError(f"{name} must be a square (n_alternatives, n_alternatives) matrix, "
                         f"got shape {W.shape}.")
    if W.shape[0] < 2:
        raise ValueError(f"{name} must describe at least 2 alternatives, got {W.shape[0]}.")
    if not np.all(np.isfinite(W)):
        raise ValueError(f"{name} must be finite.")
    if np.any(W < 0):
        raise ValueError(f"{name} must be non-negative counts.")
    if np.any(np.diag(W) != 0):
        raise ValueError(f"{name} must have a zero diagonal: an alternative is never "
                         "compared with itself.")
    return np.ascontiguousarray(W)


def check_pairs(X, n_alternatives=None, name="X"):
    """``X`` as an (n_pairs, 2) int64 array of valid, distinct alternative indices."""
    X = np.asarray(X)
    if X.ndim != 2 or X.shape[1] != 2:
        raise ValueError(
            f"{name} must have shape (n_pairs, 2): each row a pair (i, j) of alternative "
            f"indices; got shape {X.shape}."
        )
    if X.dtype.kind == "b" or X.dtype.kind not in "iuf":
        raise ValueError(f"{name} must hold integer alternative indices, got dtype "
                         f"{X.dtype}.")
    if X.dtype.kind == "f":
        if not np.all(np.isfinite(X)):
            raise ValueError(f"{name} must hold integer alternative indices; it has NaN "
                             "or infinite values.")
        if np.any(X != np.round(X)):
            raise ValueError(f"{name} must hold integer alternative indices; it has "
                             "non-integer values.")
    if np.any(X < 0):
        raise ValueError(f"{name} must hold non-negative alternative indices; the "
                         f"smallest is {X.min()}.")
    pairs = X.astype(np.int64)
    if n_alternatives is not None and pairs.size and pairs.max() >= n_alternatives:
        raise ValueError(
            f"{name} has alternative index {int(pairs.max())}, out of range for "
            f"n_alternatives={n_alternatives} (indices must be 0 .. "
            f"{n_alternatives - 1})."
        )
    same = np.flatnonzero(pairs[:, 0] == pairs[:, 1])
    if same.size:
        raise ValueError(
            f"{name} row {int(same[0])} pairs alternative {int(pairs[same[0], 0])} with "
            "itself; each row must be a pair of two different alternatives."
        )
    return pairs


def check_outcomes(y, n_rows, classes=None):
    """Outcomes as an int64 array of zeros and ones (1: the first of the pair was
    chosen), one per pair, and the two class labels.

    ``y`` holds 0 and 1 (or booleans); as for any scikit-learn binary classifier, two
    other labels are also accepted, the greater of them (``classes[1]``) meaning that the
    first alternative was chosen.

    Parameters
    ----------
    y : array-like of shape (n_rows,)
    n_rows : int
        The number of pairs.
    classes : ndarray of shape (2,) or None
        The labels seen in ``fit`` (None: infer them).

    Returns
    -------
    outcomes : ndarray of shape (n_rows,), int64
    classes : ndarray of shape (2,)

    Raises
    ------
    ValueError
        For a missing ``y``, a shape that does not match ``X``, NaN or infinite values,
        a continuous or multiclass target (with scikit-learn's wording), or labels that
        are not two.
    """
    if y is None:
        raise ValueError("InfiniteEBA requires y to be passed, but the target y is None: "
                         "y[n] is 1 when the first alternative of pair n was chosen.")
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = column_or_1d(y, warn=True)
    if y.ndim != 1 or y.shape[0] != n_rows:
        raise ValueError(f"y must be a 1-d array with one outcome per row of X ({n_rows}),"
                         f" got shape {y.shape}.")
    if y.dtype.kind in "fc":
        assert_all_finite(y, input_name="y")
    kind = type_of_target(y) if y.size else "binary"
    if kind in ("continuous", "continuous-multioutput"):
        raise ValueError(f"Unknown label type: {kind}. y must be binary: 1 when the first "
                         "alternative of the pair was chosen, 0 when the second was.")
    if kind not in ("binary", "multiclass"):
        raise ValueError(f"Unknown label type: {kind}. y must be binary (0 or 1).")
    values = np.unique(y)
    if values.size > 2:
        raise ValueError("Only binary classification is supported: y must be 1 when the "
                         "first alternative of the pair was chosen and 0 when the second "
                         f"was; got {values.size} classes.")
    zero_one = y.dtype.kind in "biuf" and bool(np.all(np.isin(values, (0, 1))))
    if classes is None:
        if zero_one:
            classes = np.array([0, 1])
        elif values.size == 2:
            classes = values
        else:
            raise ValueError(
                f"y must be binary: 1 when the first alternative of the pair was chosen, "
                f"0 when the second was; got the single label {values[0].item()!r} (labels "
                "other than 0 and 1 must come two, the greater meaning the first chosen)."
            )
    if not np.all(np.isin(values, classes)):
        raise ValueError(f"y has labels {list(values)} not among the classes "
                         f"{list(classes)} seen in fit.")
    return (y == classes[1]).astype(np.int64), classes


def win_counts_from_pairs(X, y, n_alternatives=None) -> np.ndarray:
    """The matrix ``W[i, j]`` of how many times ``i`` was chosen over ``j``.

    Parameters
    ----------
    X : array-like of shape (n_pairs, 2)
        Pairs ``(i, j)`` of alternative indices (repeated rows are repeated comparisons).
    y : array-like of shape (n_pairs,)
        1 when the first alternative was chosen, 0 when the second was.
    n_alternatives : int or None, default=None
        Size of ``W``; None uses the largest index plus one.

    Returns
    -------
    W : ndarray of shape (n_alternatives, n_alternatives), float64
    """
    pairs = check_pairs(X, n_alternatives)
    y, _ = check_outcomes(y, pairs.shape[0])
    N = int(pairs.max()) + 1 if n_alternatives is None else int(n_alternatives)
    W = np.zeros((N, N))
    winner = np.where(y == 1, pairs[:, 0], pairs[:, 1])
    loser = np.where(y == 1, pairs[:, 1], pairs[:, 0])
    np.add.at(W, (winner, loser), 1.0)
    return W


def pairs_from_win_counts(W):
    """Pairs and outcomes from a win-count matrix: the inverse of
    :func:`win_counts_from_pairs`.

    Each of the ``W[i, j]`` wins of ``i`` over ``j`` becomes a row ``(i, j)`` with outcome
    1 when ``i < j``, and a row ``(j, i)`` with outcome 0 when ``i > j``, so every pair
    is written with the smaller index first.

    Parameters
    ----------
    W : array-like of shape (n_alternatives, n_alternatives)
        Non-negative integer counts, zero diagonal.

    Returns
    -------
    X : ndarray of shape (n_comparisons, 2), int64
    y : ndarray of shape (n_comparisons,), int64

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ibp.datasets import pairs_from_win_counts
    >>> X, y = pairs_from_win_counts(np.array([[0, 2], [1, 0]]))
    >>> X.tolist(), y.tolist()
    ([[0, 1], [0, 1], [0, 1]], [1, 1, 0])
    """
    W = check_wins(W, name="W")
    if np.any(W != np.round(W)):
        raise ValueError("W must hold integer counts.")
    N = W.shape[0]
    first, second = np.triu_indices(N, 1)  # the pairs i < j, row by row
    wins_first = W[first, second].astype(np.int64)
    wins_second = W[second, first].astype(np.int64)
    # Arrays throughout (a Python list of 10**9 tuples dies with a bare MemoryError).
    check_allocation(24.0 * float(np.sum(W)), what=f"the {np.sum(W):.0f} comparisons "
                     "that W counts", advice="pass W with fewer comparisons (W holds "
                     "counts of individual choices)")
    X = np.repeat(np.column_stack([first, second]).astype(np.int64),
                  wins_first + wins_second, axis=0)
    # Per pair: its wins of i (outcome 1), then its wins of j (outcome 0).
    runs = np.column_stack([wins_first, wins_second]).reshape(-1)
    y = np.repeat(np.tile(np.array([1, 0], dtype=np.int64), first.size), runs)
    return X.reshape(-1, 2), y
