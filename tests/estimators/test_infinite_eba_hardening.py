"""InfiniteEBA on the inputs of issue 23: a weight prior so small that its draws
underflow (a former hang), an ``alpha`` that asks for tens of thousands of aspects, indices
or counts that would allocate without bound, and the progress bar's labels."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from sklearn_ibp import InfiniteEBA
from sklearn_ibp.datasets import make_paris_rome, pairs_from_win_counts
from sklearn_ibp.exceptions import AllocationTooLargeError
from sklearn_ibp.solvers.eba._eba_slice_kernels import WEIGHT_FLOOR, propose_weight
from sklearn_ibp.solvers.eba.eba_slice import SliceEBA


def test_former_hang_with_a_tiny_weight_shape_returns():
    # weight_shape=1e-3 made Gamma draws underflow to 0 and propose_weight retried a
    # proposal Gamma(eta, 0 / eta) = 0 forever. The subprocess may compile the kernels
    # first (about 15 CPU s); the fits themselves take a few seconds.
    code = textwrap.dedent("""
        from sklearn_ibp import InfiniteEBA
        from sklearn_ibp.datasets import make_paris_rome
        Xp, y, _ = make_paris_rome(n_comparisons=10, random_state=0)
        InfiniteEBA(n_iter=30, weight_shape=1e-3, random_state=0).fit(Xp, y)
        InfiniteEBA(n_iter=100, weight_shape=0.01, random_state=9).fit(Xp, y)
        print("done")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert "done" in out.stdout


def test_tiny_weight_shape_keeps_weights_in_the_support():
    Xp, y, _ = make_paris_rome(n_comparisons=10, random_state=0)
    model = InfiniteEBA(n_iter=30, weight_shape=1e-3, random_state=0).fit(Xp, y)
    for sample in model.samples_:
        assert np.all(sample["weights"] >= WEIGHT_FLOOR)
        assert np.all(sample["unique_weights"] >= WEIGHT_FLOOR)
        assert np.all(np.isfinite(sample["probabilities"]))
    assert np.all(np.isfinite(model.traces_["log_joint"]))


def test_a_proposal_that_cannot_move_is_rejected_not_retried():
    rng = np.random.default_rng(0)
    # At the floor every proposal underflows or overflows its rate: each comes back at
    # once as the current weight with log_q = -inf (a rejection), where it used to be
    # retried forever.
    for _ in range(50):
        proposal, log_q = propose_weight(WEIGHT_FLOOR, 10.0, rng)
        assert proposal == WEIGHT_FLOOR and log_q == -np.inf
    for _ in range(50):
        proposal, log_q = propose_weight(1.0, 10.0, rng)
        assert proposal > 0.0 and np.isfinite(log_q)


def test_alpha_that_expects_too_many_aspects_is_refused():
    Xp, y, _ = make_paris_rome(n_comparisons=10, random_state=0)
    with pytest.raises(ValueError, match=r"alpha=10000.0 .* use alpha <= 960"):
        InfiniteEBA(alpha=1e4, n_iter=2).fit(Xp, y)
    # Below the limit it runs (alpha is resampled down quickly).
    InfiniteEBA(alpha=100.0, n_iter=2, random_state=0).fit(Xp, y)


def test_win_counts_of_a_huge_index_are_refused_before_allocating(monkeypatch):
    monkeypatch.setenv("SKLEARN_IBP_MAX_MEMORY", "1M")
    with pytest.raises(AllocationTooLargeError, match="50001 alternatives.*largest index"):
        InfiniteEBA().fit([[0, 50000], [0, 1]], [1, 0])
    with pytest.raises(AllocationTooLargeError, match="lower n_alternatives"):
        InfiniteEBA(n_alternatives=50001).fit([[0, 1], [0, 1]], [1, 0])


def test_counts_too_many_to_unroll_are_refused_before_allocating(monkeypatch):
    monkeypatch.setenv("SKLEARN_IBP_MAX_MEMORY", "1M")
    with pytest.raises(AllocationTooLargeError, match="1000000001 comparisons"):
        InfiniteEBA().fit_counts([[0, 10**9], [1, 0]])
    # A ValueError too, for callers that catch bad input.
    with pytest.raises(ValueError):
        pairs_from_win_counts(np.array([[0, 10**9], [1, 0]]))


def test_pairs_from_win_counts_order_unchanged():
    # The array version writes the pairs as the former list version did: pairs i < j
    # row by row, each with i's wins (outcome 1) before j's (outcome 0).
    W = np.array([[0, 2, 0], [1, 0, 1], [3, 0, 0]])
    X, y = pairs_from_win_counts(W)
    assert X.tolist() == [[0, 1]] * 3 + [[0, 2]] * 3 + [[1, 2]]
    assert y.tolist() == [1, 1, 0, 0, 0, 0, 1]
    assert X.dtype == np.int64 and y.dtype == np.int64


def test_progress_bar_shows_the_number_of_aspects_as_K():
    # The sampling loop labels the second trace "K" (for every solver, n_features).
    assert SliceEBA().trace_names()[1] == "n_features"
    Xp, y, _ = make_paris_rome(n_comparisons=10, random_state=0)
    model = InfiniteEBA(n_iter=3, random_state=0).fit(Xp, y)
    assert list(model.traces_)[1] == "n_features"
    assert np.all(model.traces_["n_features"] == np.round(model.traces_["n_features"]))


def test_growing_the_aspect_slots_checks_its_memory(monkeypatch):
    from sklearn_ibp.solvers.eba.eba_slice import _grow

    Xp, y, _ = make_paris_rome(n_comparisons=10, random_state=0)
    model = InfiniteEBA(n_iter=2, random_state=0).fit(Xp, y)
    state = model._chains[0]["state"]
    monkeypatch.setenv("SKLEARN_IBP_MAX_MEMORY", "1K")
    with pytest.raises(AllocationTooLargeError, match="lower alpha"):
        _grow(state, 10**6)
