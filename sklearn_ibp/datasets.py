"""Data generators: the block images and draws from the linear-Gaussian IBP model."""

from __future__ import annotations

import numpy as np
from sklearn.utils import check_random_state

from .priors.ibp import sample_ibp

__all__ = ["BLOCK_SHAPES", "make_block_images", "make_ibp_linear_gaussian"]

#: The four 3x3 shapes of the block images, each placed in one quadrant of a 6x6 image.
BLOCK_SHAPES = (
    ((1, 1, 1), (1, 0, 1), (1, 1, 1)),  # a ring, top left
    ((0, 1, 0), (1, 1, 1), (0, 1, 0)),  # a plus, top right
    ((1, 0, 0), (1, 1, 0), (1, 1, 1)),  # a staircase, bottom left
    ((1, 1, 1), (0, 1, 0), (0, 1, 0)),  # a T, bottom right
)


def _block_features():
    A = np.zeros((4, 6, 6))
    corners = [(0, 0), (0, 3), (3, 0), (3, 3)]
    for k, (shape, (r, c)) in enumerate(zip(BLOCK_SHAPES, corners, strict=True)):
        A[k, r : r + 3, c : c + 3] = shape
    return A.reshape(4, 36)


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
    if n_samples < 1:
        raise ValueError(f"n_samples must be a positive integer, got {n_samples!r}.")
    if noise < 0:
        raise ValueError(f"noise must be non-negative, got {noise!r}.")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be a probability in [0, 1], got {p!r}.")
    rng = check_random_state(random_state)
    A = _block_features()
    Z = (rng.random_sample((n_samples, 4)) < p).astype(np.int8)
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
