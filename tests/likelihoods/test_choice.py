"""The choice model of InfiniteEBA (``sklearn_ibp/likelihoods/choice.py``; Görür 2007,
sec. 4.5): the elimination-by-aspects probabilities (eq. 4.63) against Table 4.1 and the
Bradley-Terry-Luce model, and the Bradley-Terry maximum likelihood."""

import numpy as np
import pytest

from sklearn_ibp.datasets import PARIS_ROME_TABLE, make_paris_rome
from sklearn_ibp.likelihoods.choice import (
    bradley_terry_probabilities,
    eba_probabilities,
    fit_bradley_terry,
)


def test_eba_probabilities_paris_rome_table():
    # Table 4.1 is eq. 4.63 with a bonus of w/12 (the text's 0.01 w gives 0.5025).
    _, _, P = make_paris_rome(n_comparisons=1, random_state=0)
    np.testing.assert_allclose(P, PARIS_ROME_TABLE, atol=1e-12)
    np.testing.assert_allclose(P + P.T, 1.0)


def test_eba_probabilities_zero_over_zero_and_btl():
    Z = np.array([[1, 0], [1, 0], [0, 1]])
    P = eba_probabilities(Z, [2.0, 1.0], lapse=0.1)
    assert P[0, 1] == 0.5  # the same aspects: 0/0 = 1/2
    assert P[0, 2] == pytest.approx(0.9 * 2 / 3 + 0.05)
    # Unique aspects only: the Bradley-Terry-Luce model.
    u = np.array([1.0, 2.0, 5.0])
    np.testing.assert_allclose(eba_probabilities(np.zeros((3, 0)), [], u),
                               bradley_terry_probabilities(np.log(u)))


def test_bradley_terry_maximum_likelihood():
    t_true = np.array([0.0, 1.0, -0.5, 2.0])
    P = bradley_terry_probabilities(t_true)
    t = fit_bradley_terry(1000.0 * P)  # expected counts: the maximum is the truth
    np.testing.assert_allclose(t, t_true - t_true.mean(), atol=1e-5)
