"""The data-parallel sampler of the binary (leaky noisy-or) model, ParallelNoisyOr
(seed 000 sec. 5.1, the non-conjugate procedure), its shard kernels and messages.

The Dask test starts a ``LocalCluster`` of worker processes on loopback.
"""

import numpy as np

from sklearn_ibp.likelihoods import LeakyNoisyOr


def _small_problem(seed=3):
    rng = np.random.default_rng(seed)
    lik = LeakyNoisyOr(epsilon_prior=(2.0, 1.0), lambda_prior=(1.0, 3.0))
    Z = (rng.random((60, 4)) < 0.4).astype(np.int8)
    A = (rng.random((4, 12)) < 0.3).astype(float)
    X = lik.sample_data(Z, A, {"epsilon": 0.8, "lambda": 0.1, "p_a": 0.3}, rng)
    observed = (rng.random(X.shape) < 0.9).astype(np.uint8)
    return lik, X, observed, Z, A


def test_sample_parameters_through_the_table_keeps_the_serial_draws():
    # The values sample_parameters drew before it was factored through count_table and
    # sample_parameters_from_table (same data, same seed).
    lik, X, observed, Z, A = _small_problem()
    params = {"epsilon": 0.9, "lambda": 0.2, "p_a": 0.5}
    rng = np.random.default_rng(11)
    draws = []
    for _ in range(3):
        params = lik.sample_parameters(X, observed, Z, A, params, rng)
        draws.append((params["epsilon"], params["lambda"], params["p_a"]))
    expected = [
        (0.6166234276120484, 0.18650089347702942, 0.23558571889054591),
        (0.7977857432480326, 0.037751279912073284, 0.19396379948406997),
        (0.7795145253751515, 0.05874032452832745, 0.24177805806043987),
    ]
    np.testing.assert_array_equal(np.array(draws), np.array(expected))


def test_count_table_and_its_log_likelihood():
    lik, X, observed, Z, A = _small_problem()
    n_zero, n_one = lik.count_table(X, observed, Z, A)
    counts = np.rint(Z @ A).astype(int)
    mask = observed.astype(bool)
    for c in range(n_zero.size):
        assert n_zero[c] == np.sum(mask & (X == 0) & (counts == c))
        assert n_one[c] == np.sum(mask & (X == 1) & (counts == c))
    assert n_zero.sum() + n_one.sum() == mask.sum()
    params = {"epsilon": 0.7, "lambda": 0.3, "p_a": 0.4}
    np.testing.assert_allclose(lik.log_likelihood_from_table(n_zero, n_one, params),
                               lik.log_likelihood(X, observed, Z, A, params), rtol=1e-12)
    # Tables of blocks of rows add up to the table of all rows.
    top = lik.count_table(X[:25], observed[:25], Z[:25], A)
    bottom = lik.count_table(X[25:], observed[25:], Z[25:], A)
    length = max(top[0].size, bottom[0].size)
    for whole, a, b in zip((n_zero, n_one), top, bottom, strict=True):
        np.testing.assert_array_equal(np.pad(a, (0, length - a.size))
                                      + np.pad(b, (0, length - b.size)),
                                      np.pad(whole, (0, length - whole.size)))
