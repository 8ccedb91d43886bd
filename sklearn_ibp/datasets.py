"""Data generators: the block images, draws from the linear-Gaussian IBP model, and paired
comparisons from elimination-by-aspects choice models."""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.utils import check_random_state

from .likelihoods.choice import (
    eba_probabilities,
    pairs_from_win_counts,
    win_counts_from_pairs,
)
from .priors.ibp import sample_ibp

__all__ = [
    "BLOCK_COMBINATIONS",
    "BLOCK_SHAPES",
    "PARIS_ROME_ALTERNATIVES",
    "PARIS_ROME_TABLE",
    "make_correlated_block_images",
    "make_block_image_sequence",
    "make_block_images",
    "make_dd_ibp",
    "make_ibp_linear_gaussian",
    "make_paris_rome",
    "make_tree_eba",
    "pairs_from_win_counts",
    "sample_comparisons",
    "win_counts_from_pairs",
]

#: The four 3x3 shapes of the block images, each placed in one quadrant of a 6x6 image.
BLOCK_SHAPES = (
    ((1, 1, 1), (1, 0, 1), (1, 1, 1)),  # a ring, top left
    ((0, 1, 0), (1, 1, 1), (0, 1, 0)),  # a plus, top right
    ((1, 0, 0), (1, 1, 0), (1, 1, 1)),  # a staircase, bottom left
    ((1, 1, 1), (0, 1, 0), (0, 1, 0)),  # a T, bottom right
)

#: Nine fixed combinations of the four :data:`BLOCK_SHAPES` (a row marks the shapes a
#: combination holds) for the correlated block images of Doshi-Velez (2009, sec. 7.2.1):
#: the empty combination (the "null cluster" the DP-IBP discovers), every single shape,
#: three pairs and one triple. Every shape is in at least three combinations, so the shapes
#: are correlated features shared between categories.
BLOCK_COMBINATIONS = (
    (0, 0, 0, 0),  # nothing: the null cluster
    (1, 0, 0, 0),  # each shape alone
    (0, 1, 0, 0),
    (0, 0, 1, 0),
    (0, 0, 0, 1),
    (1, 1, 0, 0),  # the top row
    (0, 1, 1, 0),  # plus and staircase
    (0, 0, 1, 1),  # the bottom row
    (1, 0, 1, 1),  # ring, staircase and T
)


def _block_features():
    A = np.zeros((4, 6, 6))
    corners = [(0, 0), (0, 3), (3, 0), (3, 3)]
    for k, (shape, (r, c)) in enumerate(zip(BLOCK_SHAPES, corners, strict=True)):
        A[k, r : r + 3, c : c + 3] = shape
    return A.reshape(4, 36)


def _check_block_arguments(n_samples, noise, p):
    if n_samples < 1:
        raise ValueError(f"n_samples must be a positive integer, got {n_samples!r}.")
    if noise < 0:
        raise ValueError(f"noise must be non-negative, got {noise!r}.")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be a probability in [0, 1], got {p!r}.")


def make_block_images(n_samples=1000, noise=0.5, p=0.5, random_state=None):
    """Noisy overlays of four binary 6x6 shapes (Griffiths and Ghahramani, 2005).

    Each image contains each of the four shapes independently with probability ``p``;
    pixels are the sum of the present shapes plus ``N(0, noise^2)`` noise. This is the
    "block images" data set of Doshi-Velez (2009, Table 4.3).

    Parameters
    ----------
    n_samples : int, default=1000
        Number of images.
    noise : float, default=0.5
        Standard deviation of the pixel noise.
    p : float, default=0.5
        Probability that an image contains each shape.
    random_state : int, RandomState instance or None, default=None
        Seed.

    Returns
    -------
    X : ndarray of shape (n_samples, 36)
        Images, flattened row by row.
    Z : ndarray of shape (n_samples, 4)
        Which shapes each image contains.
    A : ndarray of shape (4, 36)
        The shapes.
    """
    _check_block_arguments(n_samples, noise, p)
    rng = check_random_state(random_state)
    A = _block_features()
    Z = (rng.random_sample((n_samples, 4)) < p).astype(np.int8)
    X = Z @ A + noise * rng.standard_normal((n_samples, 36))
    return X, Z, A


def make_block_image_sequence(
    n_samples=200, switch_prob=0.08, noise=0.5, p=0.5, random_state=None
):
    """A time series of block images whose shapes switch on and off in runs.

    Shape ``k`` is present in the first image with probability ``p``; from one image to
    the next each shape switches (on to off or off to on) with probability
    ``switch_prob``, so shapes persist for runs of ``1 / switch_prob`` images on average.
    Nearby rows in time share more features: the non-exchangeable data the
    distance-dependent IBP is made for (Gershman, Frazier and Blei, sec. 7.2).

    Parameters
    ----------
    n_samples : int, default=200
        Number of images, in time order.
    switch_prob : float, default=0.08
        Probability that a shape switches between consecutive images.
    noise : float, default=0.5
        Standard deviation of the pixel noise.
    p : float, default=0.5
        Probability that a shape is present in the first image.
    random_state : int, RandomState instance or None, default=None
        Seed.

    Returns
    -------
    X : ndarray of shape (n_samples, 36)
        Images in time order, flattened row by row.
    Z : ndarray of shape (n_samples, 4)
        Which shapes each image contains.
    A : ndarray of shape (4, 36)
        The shapes.
    """
    _check_block_arguments(n_samples, noise, p)
    if not 0.0 <= switch_prob <= 1.0:
        raise ValueError(f"switch_prob must be a probability in [0, 1], got {switch_prob!r}.")
    rng = check_random_state(random_state)
    A = _block_features()
    flips = rng.random_sample((n_samples, 4)) < switch_prob
    flips[0] = rng.random_sample(4) < p  # the first image: switched on from "all off"
    Z = (np.cumsum(flips, axis=0) % 2).astype(np.int8)
    X = Z @ A + noise * rng.standard_normal((n_samples, 36))
    return X, Z, A


def _linear_gaussian_data(Z, n_dims, sigma_x, sigma_a, rng):
    """``(X, A)`` of the linear-Gaussian model given ``Z``: ``A_kd ~ N(0, sigma_a^2)``,
    then ``X = Z A + N(0, sigma_x^2)`` noise (Doshi-Velez 2009, appendix A.1)."""
    A = sigma_a * rng.standard_normal((Z.shape[1], n_dims))
    X = Z @ A + sigma_x * rng.standard_normal((Z.shape[0], n_dims))
    return X, A


def make_ibp_linear_gaussian(
    n_samples=100, n_dims=10, alpha=2.0, beta=1.0, sigma_x=0.2, sigma_a=2.0, random_state=None
):
    """Draw ``(X, Z, A)`` from the IBP prior and the linear-Gaussian likelihood.

    ``Z ~ IBP(alpha, beta)``, ``A_kd ~ N(0, sigma_a^2)``, ``X = Z A + N(0, sigma_x^2)``; the
    defaults are the synthetic setting of Doshi-Velez (2009, sec. 4.4).

    Parameters
    ----------
    n_samples, n_dims : int
        Shape of ``X``.
    alpha, beta : float
        IBP concentration and stickiness.
    sigma_x, sigma_a : float
        Noise and feature standard deviations.
    random_state : int, RandomState instance or None
        Seed.

    Returns
    -------
    X : ndarray of shape (n_samples, n_dims)
    Z : ndarray of shape (n_samples, n_features)
    A : ndarray of shape (n_features, n_dims)
    """
    rng = check_random_state(random_state)
    Z = sample_ibp(n_samples, alpha, beta, rng)
    X, A = _linear_gaussian_data(Z, n_dims, sigma_x, sigma_a, rng)
    return X, Z, A


def make_dd_ibp(
    n_samples=100,
    n_dims=10,
    alpha=2.0,
    decay_function="exponential",
    decay=1.0,
    nu=None,
    sequential=False,
    covariates=None,
    distances=None,
    metric="euclidean",
    sigma_x=0.2,
    sigma_a=2.0,
    random_state=None,
):
    """Draw a feature matrix from the dd-IBP prior, and data from the linear-Gaussian model.

    ``(Z, c*, C) ~ ddIBP(D, alpha, f)`` by the generative process of Gershman, Frazier and Blei
    2015, sec. 2.2 (:func:`sklearn_ibp.priors.sample_ddibp`); then, unless ``n_dims`` is None,
    ``A_kd ~ N(0, sigma_a^2)`` and ``X = Z A + N(0, sigma_x^2)``.

    Parameters
    ----------
    n_samples : int, default=100
        Number of customers (rows). Ignored when ``covariates`` or ``distances`` is given.
    n_dims : int or None, default=10
        Columns of ``X``; None draws only the prior (``X`` and ``A`` are then None).
    alpha : float, default=2.0
        dd-IBP mass parameter.
    decay_function, decay, nu
        The decay function, see :func:`sklearn_ibp.priors.decay_proximity`.
    sequential : bool, default=False
        Make the distances sequential (``d_ij = inf`` for ``j > i``).
    covariates : array-like of shape (n_samples, n_covariates) or (n_samples,), default=None
        Covariates the distances are computed from with ``metric``. When neither this nor
        ``distances`` is given, the covariate is the row index, ``d_ij = |i - j|`` (the
        time distance of Fig. 3 of Gershman, Frazier and Blei 2015).
    distances : array-like of shape (n_samples, n_samples), default=None
        A precomputed distance matrix, instead of ``covariates``.
    metric : str or callable, default="euclidean"
        Metric for ``covariates``.
    sigma_x, sigma_a : float, default=0.2, 2.0
        Noise and feature standard deviations.
    random_state : int, RandomState instance or None, default=None
        Seed.

    Returns
    -------
    data : :class:`sklearn.utils.Bunch`
        ``X`` (n_samples, n_dims) or None, ``Z`` (n_samples, n_features), ``A``
        (n_features, n_dims) or None, ``owners`` (n_features,), ``connections``
        (n_samples, n_features), ``distances`` (n_samples, n_samples) and ``proximity``
        (n_samples, n_samples).
    """
    from sklearn.utils import Bunch

    from .priors.ddibp import decay_proximity, pairwise_distances_for_ddibp, sample_ddibp

    if covariates is not None and distances is not None:
        raise ValueError("Give at most one of covariates and distances.")
    if distances is not None:
        D = pairwise_distances_for_ddibp(precomputed=distances, sequential=sequential)
    else:
        if covariates is None:
            if int(n_samples) < 1:
                raise ValueError(f"n_samples must be a positive integer, got {n_samples!r}.")
            covariates = np.arange(int(n_samples), dtype=float)
        D = pairwise_distances_for_ddibp(covariates, metric=metric, sequential=sequential)
    proximity = decay_proximity(D, decay_function, decay=decay, nu=nu)
    rng = check_random_state(random_state)
    Z, owners, connections = sample_ddibp(proximity, alpha, rng)
    X = A = None
    if n_dims is not None:
        X, A = _linear_gaussian_data(Z, int(n_dims), sigma_x, sigma_a, rng)
    return Bunch(
        X=X, Z=Z, A=A, owners=owners, connections=connections, distances=D, proximity=proximity
    )


def make_correlated_block_images(
    n_samples: int = 700,
    noise: float = 0.5,
    overlap: bool = False,
    p: float = 0.2,
    random_state=None,
):
    """Block images whose shapes occur together in fixed combinations (sec. 7.2).

    The data of Doshi-Velez (2009, ch. 7): the four 6x6 block shapes of
    :func:`make_block_images` appear only in the nine combinations of
    :data:`BLOCK_COMBINATIONS`.

    - ``overlap=False`` (the DP-IBP demonstration, sec. 7.2.1): each image takes one
      combination, uniformly at random.
    - ``overlap=True`` (the noisy-or IBP-IBP demonstration, sec. 7.2.3): each combination
      is present independently with probability ``p``, so several (often overlapping)
      combinations meet in one image, which holds the union of their shapes.

    The present shapes are a set: a shape in two present combinations is drawn once. Pixels
    are the sum of the present shapes plus ``N(0, noise^2)`` noise.

    Parameters
    ----------
    n_samples : int, default=700
        Number of images (700, as in Doshi-Velez 2009, sec. 7.2.1).
    noise : float, default=0.5
        Standard deviation of the pixel noise.
    overlap : bool, default=False
        Draw one combination per image (False) or each combination independently (True).
    p : float, default=0.2
        Probability that an image contains each combination; used only when ``overlap``.
    random_state : int, RandomState instance or None, default=None
        Seed.

    Returns
    -------
    X : ndarray of shape (n_samples, 36)
        Images, flattened row by row.
    Z : ndarray of shape (n_samples, 4), int8
        Which shapes each image contains: the "or" of its combinations.
    A : ndarray of shape (4, 36)
        The shapes.
    C : ndarray of shape (n_samples, 9), int8
        Which combinations each image contains (one per row when ``overlap`` is False).
    """
    if isinstance(n_samples, bool) or not isinstance(n_samples, numbers.Integral):
        raise ValueError(f"n_samples must be a positive integer, got {n_samples!r}.")
    if not isinstance(overlap, (bool, np.bool_)):
        raise ValueError(f"overlap must be True or False, got {overlap!r}.")
    _check_block_arguments(n_samples, noise, p)
    if not np.isfinite(noise):
        raise ValueError(f"noise must be a finite non-negative number, got {noise!r}.")
    rng = check_random_state(random_state)
    combinations = np.array(BLOCK_COMBINATIONS, dtype=np.int64)
    n_combinations = combinations.shape[0]
    if overlap:
        C = (rng.random_sample((n_samples, n_combinations)) < p).astype(np.int8)
    else:
        C = np.zeros((n_samples, n_combinations), dtype=np.int8)
        C[np.arange(n_samples), rng.randint(n_combinations, size=n_samples)] = 1
    Z = ((C @ combinations) > 0).astype(np.int8)
    A = _block_features()
    X = Z @ A + noise * rng.standard_normal((n_samples, 36))
    return X, Z, A, C


# -- paired comparisons (Görür 2007, sec. 4.5.3) ---------------------------------------------

#: The alternatives of the Paris-Rome example, in the order of Görür 2007, Table 4.1: a trip
#: to Paris with a small bonus, to Paris, to Rome, to Rome with the bonus.
PARIS_ROME_ALTERNATIVES = ("P+", "P", "R", "R+")

#: Görür 2007, Table 4.1 as ``P[i, j]``, the probability that alternative ``i`` (row) is
#: chosen over ``j`` (column), alternatives in :data:`PARIS_ROME_ALTERNATIVES` order.
#: (Görür 2007 prints the transpose: "columns are chosen over rows".)
PARIS_ROME_TABLE = np.array([
    [0.50, 1.00, 0.52, 0.50],
    [0.00, 0.50, 0.50, 0.48],
    [0.48, 0.50, 0.50, 0.00],
    [0.50, 0.52, 1.00, 0.50],
])


def sample_comparisons(P, n_comparisons=100, random_state=None):
    """Paired comparisons drawn from a matrix of choice probabilities.

    Every pair ``i < j`` is compared ``n_comparisons`` times; each comparison is a row
    ``(i, j)`` of ``X`` with outcome 1 (``i`` chosen) with probability ``P[i, j]``.

    Parameters
    ----------
    P : array-like of shape (n_alternatives, n_alternatives)
        ``P[i, j]``: probability that ``i`` is chosen over ``j`` (``P + P.T = 1``).
    n_comparisons : int or array-like of shape (n_alternatives, n_alternatives), default=100
        Comparisons per pair (for an array, ``n_comparisons[i, j]`` with ``i < j``).
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    X : ndarray of shape (n_total, 2), int64
        The pairs, smaller index first, grouped by pair.
    y : ndarray of shape (n_total,), int64
        1 when the first of the pair was chosen.
    """
    rng = check_random_state(random_state)
    P = np.asarray(P, dtype=float)
    if P.ndim != 2 or P.shape[0] != P.shape[1]:
        raise ValueError(f"P must be a square matrix, got shape {P.shape}.")
    if np.any((P < 0) | (P > 1)) or not np.all(np.isfinite(P)):
        raise ValueError("P must hold probabilities in [0, 1].")
    N = P.shape[0]
    counts = np.broadcast_to(np.asarray(n_comparisons), (N, N))
    if np.any(counts < 0) or np.any(counts != np.round(counts)):
        raise ValueError("n_comparisons must be non-negative integers.")
    W = np.zeros((N, N), dtype=np.int64)
    for i in range(N):
        for j in range(i + 1, N):
            n = int(counts[i, j])
            wins = int(rng.binomial(n, P[i, j]))
            W[i, j], W[j, i] = wins, n - wins
    return pairs_from_win_counts(W)


def make_paris_rome(n_comparisons=100, bonus=1 / 12, random_state=None):
    """Paired comparisons of the Paris-Rome example (Tversky 1972; Görür 2007, sec. 4.5.3).

    Four trips, in the order of :data:`PARIS_ROME_ALTERNATIVES`: P+ and P share an aspect
    "Paris" of weight 1, R and R+ an aspect "Rome" of weight 1, and P+ and R+ a bonus of
    weight ``bonus``. By eq. 4.63 P+ always beats P, Paris and Rome are equally liked,
    and the bonus tips ``P(P+ over R) = (1 + bonus) / (2 + bonus)``: patterns that the
    Bradley-Terry-Luce model cannot produce.

    Görür's (2007) text gives the bonus as ``0.01 w``, but its Table 4.1 (0.52 and 0.48) is
    that of a bonus of ``w / 12``, the default here, which reproduces the table exactly
    (:data:`PARIS_ROME_TABLE`); ``bonus=0.01`` gives 0.5025 instead.

    Parameters
    ----------
    n_comparisons : int, default=100
        Comparisons per pair (Görür 2007 uses 100).
    bonus : float, default=1/12
        Weight of the bonus aspect relative to a city's.
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    X : ndarray of shape (6 * n_comparisons, 2), int64
        Pairs of alternative indices.
    y : ndarray of shape (6 * n_comparisons,), int64
        1 when the first of the pair was chosen.
    P : ndarray of shape (4, 4)
        The true choice probabilities, ``P[i, j]`` that ``i`` is chosen over ``j``.
    """
    if not bonus > 0:
        raise ValueError(f"bonus must be positive, got {bonus!r}.")
    Z = np.array([[1, 0, 1], [1, 0, 0], [0, 1, 0], [0, 1, 1]])
    P = eba_probabilities(Z, [1.0, 1.0, float(bonus)])
    X, y = sample_comparisons(P, n_comparisons, random_state)
    return X, y, P


def make_tree_eba(n_comparisons=100, unique_weights=(0.5, 1.0, 2.0) * 3,
                  group_weights=(2.0, 4.0, 8.0), random_state=None):
    """Paired comparisons from an EBA model with a tree of aspects (Görür 2007, sec. 4.5.3,
    the celebrities design of Rumelhart and Greeno 1971, fig. 4.16).

    Nine alternatives in three groups of three (alternatives ``3g``, ``3g + 1``, ``3g +
    2`` form group ``g``). Each alternative has a unique aspect and shares one aspect with
    its group. Alternatives of one group compete on their unique aspects only; across
    groups the group aspects count too, a similarity effect the Bradley-Terry-Luce model
    cannot represent.

    Parameters
    ----------
    n_comparisons : int, default=100
        Comparisons per pair.
    unique_weights : array-like of shape (9,), default=(0.5, 1, 2) * 3
        Weights of the unique aspects.
    group_weights : array-like of shape (3,), default=(2, 4, 8)
        Weights of the three group aspects.
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    X : ndarray of shape (36 * n_comparisons, 2), int64
    y : ndarray of shape (36 * n_comparisons,), int64
    P : ndarray of shape (9, 9)
        True choice probabilities.
    Z : ndarray of shape (9, 12), int8
        The aspects: nine unique ones, then the three group aspects.
    weights : ndarray of shape (12,)
        Their weights.
    """
    unique_weights = np.asarray(unique_weights, dtype=float)
    group_weights = np.asarray(group_weights, dtype=float)
    if unique_weights.shape != (9,) or group_weights.shape != (3,):
        raise ValueError("unique_weights must have 9 entries and group_weights 3.")
    if np.any(~(unique_weights > 0)) or np.any(~(group_weights > 0)):
        raise ValueError("the weights must be positive.")
    Z = np.zeros((9, 12), dtype=np.int8)
    Z[np.arange(9), np.arange(9)] = 1
    Z[np.arange(9), 9 + np.arange(9) // 3] = 1
    weights = np.concatenate([unique_weights, group_weights])
    P = eba_probabilities(Z, weights)
    X, y = sample_comparisons(P, n_comparisons, random_state)
    return X, y, P, Z, weights
