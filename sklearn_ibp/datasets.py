"""Data generators: the block images and draws from the linear-Gaussian IBP model."""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.utils import check_random_state

from .priors.ibp import sample_ibp

__all__ = [
    "BLOCK_COMBINATIONS",
    "BLOCK_SHAPES",
    "make_correlated_block_images",
    "make_block_image_sequence",
    "make_block_images",
    "make_dd_ibp",
    "make_ibp_linear_gaussian",
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
    A = sigma_a * rng.standard_normal((Z.shape[1], n_dims))
    X = Z @ A + sigma_x * rng.standard_normal((n_samples, n_dims))
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

    ``(Z, c*, C) ~ ddIBP(D, alpha, f)`` by the generative process of seed ``004``,
    sec. 2.2 (:func:`sklearn_ibp.priors.sample_ddibp`); then, unless ``n_dims`` is None,
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
        time distance of the seed's Fig. 3).
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
        A = sigma_a * rng.standard_normal((Z.shape[1], int(n_dims)))
        X = Z @ A + sigma_x * rng.standard_normal((Z.shape[0], int(n_dims)))
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
        Number of images (700 as in the seed).
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
