"""The priors' shared argument check: a ValueError naming the argument, from every prior."""

import math

import numpy as np
import pytest

from sklearn_ibp.priors import (
    crp_log_prob,
    decay_proximity,
    expected_n_categories,
    expected_n_clusters,
    sample_ddibp,
)
from sklearn_ibp.priors._validation import check_positive


@pytest.mark.parametrize("value", [0, -1.0, math.inf, math.nan, "a", None, [1.0, 2.0]])
def test_check_positive_rejects_with_the_name(value):
    with pytest.raises(ValueError, match="rate must be a positive finite number"):
        check_positive(value, "rate")


@pytest.mark.parametrize("value", [1, 0.5, np.float32(2.0), np.int64(3), "1.5"])
def test_check_positive_returns_a_float(value):
    out = check_positive(value, "rate")
    assert isinstance(out, float) and out == float(value)


@pytest.mark.parametrize("call, name", [
    (lambda bad: crp_log_prob([0, 1, 1], bad), "alpha"),
    (lambda bad: expected_n_clusters(5, bad), "alpha"),
    (lambda bad: expected_n_categories(5, bad, "dp"), "alpha_categories"),
    (lambda bad: decay_proximity(np.zeros((2, 2)), "exponential", decay=bad), "decay"),
    (lambda bad: sample_ddibp(np.ones((2, 2)), bad, random_state=0), "alpha"),
])
@pytest.mark.parametrize("bad", [None, "x", -2.0])
def test_priors_name_a_bad_concentration(call, name, bad):
    # The CRP's functions raised a bare TypeError / "could not convert" for None or "x"
    # before they shared the check.
    with pytest.raises(ValueError, match=f"{name} must be a positive finite number"):
        call(bad)
