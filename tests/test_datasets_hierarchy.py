"""The correlated block images of Doshi-Velez 2009, ch. 7: combinations, their union, bad input."""

import numpy as np
import pytest
from scipy.stats import chisquare

from sklearn_ibp.datasets import (
    BLOCK_COMBINATIONS,
    BLOCK_SHAPES,
    make_block_images,
    make_correlated_block_images,
)

COMBINATIONS = np.array(BLOCK_COMBINATIONS)


def test_combinations_table():
    assert COMBINATIONS.shape == (9, len(BLOCK_SHAPES))
    assert set(np.unique(COMBINATIONS)) == {0, 1}
    rows = {tuple(r) for r in COMBINATIONS.tolist()}
    assert len(rows) == 9  # nine distinct combinations
    assert (0, 0, 0, 0) in rows  # the null cluster
    for k in range(4):  # every single shape
        assert tuple(int(j == k) for j in range(4)) in rows
    assert np.any(COMBINATIONS.sum(axis=1) >= 2)  # and some shapes occurring together


def test_one_combination_per_image():
    X, Z, A, C = make_correlated_block_images(n_samples=9000, random_state=0)
    assert X.shape == (9000, 36) and Z.shape == (9000, 4)
    assert A.shape == (4, 36) and C.shape == (9000, 9)
    assert Z.dtype == C.dtype == np.int8
    np.testing.assert_array_equal(C.sum(axis=1), 1)
    np.testing.assert_array_equal(Z, COMBINATIONS[C.argmax(axis=1)])
    # Uniform over the nine combinations.
    assert chisquare(C.sum(axis=0)).pvalue > 1e-3
    # The shapes are those of make_block_images, the noise has the asked scale.
    np.testing.assert_array_equal(A, make_block_images(n_samples=1, random_state=0)[2])
    assert abs((X - Z @ A).std() - 0.5) < 0.01
    # No shape combination outside the table appears.
    assert {tuple(z) for z in Z.tolist()} <= {tuple(c) for c in COMBINATIONS.tolist()}


def test_overlapping_combinations_form_the_union_of_their_shapes():
    p = 0.3
    X, Z, A, C = make_correlated_block_images(
        n_samples=6000, noise=0.2, overlap=True, p=p, random_state=1
    )
    n = C.shape[0]
    # Z is the "or" of the present combinations: a shape in two of them counts once.
    np.testing.assert_array_equal(Z, (C.astype(int) @ COMBINATIONS) > 0)
    assert Z.max() == 1
    assert np.abs(C.mean(axis=0) - p).max() < 4 * np.sqrt(p * (1 - p) / n)
    assert np.mean(C.sum(axis=1) >= 2) > 0.5  # several combinations per image
    shared = (C.astype(int) @ COMBINATIONS).max()
    assert shared >= 2  # and they overlap
    assert abs((X - Z @ A).std() - 0.2) < 0.005
    # P(shape k on) = 1 - (1 - p)^(number of combinations holding it).
    rate = 1 - (1 - p) ** COMBINATIONS.sum(axis=0)
    assert np.all(np.abs(Z.mean(axis=0) - rate) < 4 * np.sqrt(rate * (1 - rate) / n))


def test_reproducible_from_the_seed():
    a = make_correlated_block_images(n_samples=50, overlap=True, random_state=3)
    b = make_correlated_block_images(n_samples=50, overlap=True, random_state=3)
    c = make_correlated_block_images(n_samples=50, overlap=True, random_state=4)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a[0], c[0])
    X, Z, _, _ = make_correlated_block_images(n_samples=50, noise=0.0, random_state=5)
    assert set(np.unique(X)) <= {0.0, 1.0}  # noiseless images are the shapes themselves


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_samples": 0}, "n_samples"),
        ({"n_samples": 2.5}, "n_samples"),
        ({"noise": -1.0}, "noise"),
        ({"noise": np.inf}, "noise"),
        ({"p": 1.5}, "p must be"),
        ({"overlap": "yes"}, "overlap"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_correlated_block_images(**kwargs)
