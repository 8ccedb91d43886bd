"""The data generators: shapes, reproducibility, the statistics they promise, bad input."""

import numpy as np
import pytest

from sklearn_ibp.datasets import make_block_image_sequence, make_block_images


def test_block_images_contain_each_shape_with_probability_p():
    X, Z, A = make_block_images(n_samples=4000, p=0.3, random_state=0)
    assert X.shape == (4000, 36) and Z.shape == (4000, 4) and A.shape == (4, 36)
    assert np.all(np.abs(Z.mean(axis=0) - 0.3) < 4 * np.sqrt(0.3 * 0.7 / 4000))
    residual = X - Z @ A
    assert abs(residual.std() - 0.5) < 0.01


def test_block_image_sequence_switches_in_runs():
    X, Z, A = make_block_image_sequence(n_samples=20000, switch_prob=0.1, random_state=0)
    assert X.shape == (20000, 36) and Z.shape == (20000, 4)
    switches = np.abs(np.diff(Z.astype(int), axis=0))
    # Each shape switches between consecutive images with probability switch_prob.
    assert np.all(np.abs(switches.mean(axis=0) - 0.1) < 4 * np.sqrt(0.09 / 19999))
    np.testing.assert_allclose((X - Z @ A).std(), 0.5, atol=0.01)
    again = make_block_image_sequence(n_samples=20000, switch_prob=0.1, random_state=0)
    np.testing.assert_array_equal(X, again[0])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_samples": 0}, "n_samples"),
        ({"noise": -1.0}, "noise"),
        ({"p": 1.5}, "p must be"),
        ({"switch_prob": -0.1}, "switch_prob"),
    ],
)
def test_block_image_sequence_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_block_image_sequence(**kwargs)
