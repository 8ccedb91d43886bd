"""InfiniteEBA (Görür 2007, sec. 4.5): the choice model, its slice sampler and the estimator.

The sampler is checked as every sampler of the package: class frequencies against the
exactly computed posterior on tiny problems, and the prior recovered when there are no
data. The model is checked on the two experiments of Görür 2007, sec. 4.5.3: Paris-Rome (Table 4.1)
and an EBA model with a tree of aspects (the celebrities design) against Bradley-Terry-Luce.
"""

from collections import Counter
from itertools import product

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import logsumexp

from sklearn_ibp import InfiniteEBA
from sklearn_ibp.datasets import (
    PARIS_ROME_TABLE,
    make_paris_rome,
    make_tree_eba,
    pairs_from_win_counts,
    win_counts_from_pairs,
)
from sklearn_ibp.likelihoods.choice import (
    bradley_terry_probabilities,
    choice_log_likelihood,
    eba_advantages,
    eba_probabilities,
    fit_bradley_terry,
)
from sklearn_ibp.priors.ibp import harmonic_rate, ibp_log_prob
from sklearn_ibp.solvers.eba import _eba_slice_kernels as kernels
from sklearn_ibp.solvers.eba.eba_slice import SliceEBA

LAPSE = 0.01
UPPER = np.triu_indices(4, 1)


def _frequencies(W):
    total = W + W.T
    return np.where(total > 0, W / np.where(total > 0, total, 1), 0.5)


# -- the model ------------------------------------------------------------------------


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


def test_kernels_match_numpy_reference():
    rng = np.random.default_rng(0)
    N, K = 6, 5
    Z = (rng.random((N, K)) < 0.5).astype(np.int8)
    W = rng.gamma(1.0, 1.0, (K, 1))
    u = rng.gamma(1.0, 1.0, N)
    wins = rng.integers(0, 5, (N, N)).astype(float)
    np.fill_diagonal(wins, 0)
    adv = np.zeros((N, N))
    kernels.fill_advantages(Z, W, u, K, adv)
    np.testing.assert_allclose(adv, eba_advantages(Z, W[:, 0], u))
    ll = kernels.total_log_likelihood(wins, adv, LAPSE)
    assert ll == pytest.approx(choice_log_likelihood(eba_probabilities(Z, W[:, 0], u, LAPSE),
                                                     wins))
    # Incremental flips and weight changes agree with a fresh computation.
    for i, k in product(range(N), range(K)):
        ratio = kernels.flip_log_ratio(i, k, wins, Z, W[k, 0], adv, LAPSE)
        kernels.apply_flip(i, k, Z, W[k, 0], adv)
        new = kernels.total_log_likelihood(wins, adv, LAPSE)
        assert new - ll == pytest.approx(ratio, abs=1e-9)
        np.testing.assert_allclose(adv, eba_advantages(Z, W[:, 0], u), atol=1e-12)
        ll = new
    for k in range(K):
        ratio = kernels.weight_log_ratio(k, 0.7, wins, Z, adv, LAPSE)
        W2 = W.copy()
        W2[k] += 0.7
        ref = choice_log_likelihood(eba_probabilities(Z, W2[:, 0], u, LAPSE), wins)
        assert ref - ll == pytest.approx(ratio, abs=1e-9)
    ratio = kernels.unique_log_ratio(2, 0.3, wins, adv, LAPSE)
    u2 = u.copy()
    u2[2] += 0.3
    ref = choice_log_likelihood(eba_probabilities(Z, W[:, 0], u2, LAPSE), wins)
    assert ref - ll == pytest.approx(ratio, abs=1e-9)
    assert kernels.ibp_log_prob_packed(Z, K, 1.3, harmonic_rate(N)) == pytest.approx(
        ibp_log_prob(Z, 1.3))


def test_sweeps_keep_the_pair_sums_exact():
    X, y, _ = make_paris_rome(20, random_state=0)
    model = InfiniteEBA(n_iter=300, random_state=0).fit(X, y)
    state = model._chains[0]["state"]
    np.testing.assert_allclose(state.adv, eba_advantages(state.active_Z, state.weights,
                                                         state.unique), atol=1e-9)


def test_bradley_terry_maximum_likelihood():
    t_true = np.array([0.0, 1.0, -0.5, 2.0])
    P = bradley_terry_probabilities(t_true)
    t = fit_bradley_terry(1000.0 * P)  # expected counts: the maximum is the truth
    np.testing.assert_allclose(t, t_true - t_true.mean(), atol=1e-5)


# -- the sampler: exact posterior and prior -----------------------------------------------


def _pattern_key(Z, patterns):
    counts = Counter(tuple(int(v) for v in Z[:, k]) for k in range(Z.shape[1]))
    return tuple(counts.get(p, 0) for p in patterns)


def _run_sampler(wins, alpha, n_sweeps, thin, seed, patterns, burn_in=300,
                 weight_shape=1.0):
    N = wins.shape[0]
    solver = SliceEBA()
    state = solver.initialize(wins, np.zeros((N, 0)), np.zeros(0), np.ones(N), alpha, LAPSE,
                              adapt_sweeps=burn_in, weight_shape=weight_shape)
    rng = np.random.default_rng(seed)
    keys, weights = [], []
    for it in range(n_sweeps):
        solver.sweep(state, rng)
        if it >= burn_in and (it - burn_in) % thin == 0:
            keys.append(_pattern_key(state.active_Z, patterns))
            weights.append(state.weights.copy())
    return keys, weights, state


def _chi_square(samples, posterior):
    """Pearson's test of the sampled classes against ``posterior``; classes expected
    fewer than 5 times are pooled."""
    n = len(samples)
    observed = Counter(samples)
    keys = sorted(posterior, key=posterior.get, reverse=True)
    expected = np.array([posterior[k] * n for k in keys])
    counts = np.array([observed.get(k, 0) for k in keys], dtype=float)
    big = expected >= 5
    E = np.append(expected[big], n - expected[big].sum())
    obs = np.append(counts[big], n - counts[big].sum())
    stat = float(np.sum((obs - E) ** 2 / E))
    return stats.chi2.sf(stat, len(E) - 1)


@pytest.mark.parametrize("a", [1.0, 0.25])
def test_exact_posterior_two_alternatives(a):
    """N = 2: aspects of one alternative only (n1, n2 of them) and shared ones (n12) are
    independent Poisson(alpha / 2) a priori (the beta-process view of the IBP), shared
    aspects do not matter, and p_12 = G1 / (G1 + G2) with G_i ~ Gamma(a (1 + n_i)) (the
    unique aspect plus n_i Gamma(a, 1) weights) is Beta(a (1 + n1), a (1 + n2)): the
    posterior of (n1, n2) is exact by one-dimensional quadrature. Samples 10 sweeps apart
    (3 sweeps apart the chain's autocorrelation inflates the statistic). Measured p = 0.22
    (seed 1) for Görür's (2007) a = 1 and 0.80 for weight_shape a = 0.25 (whose chain also
    proposes weights from the prior)."""
    alpha = 1.5
    wins = np.array([[0.0, 7.0], [2.0, 0.0]])
    posterior = {}
    for n1, n2 in product(range(9), repeat=2):
        prior = stats.poisson.pmf(n1, alpha / 2) * stats.poisson.pmf(n2, alpha / 2)

        def integrand(p, n1=n1, n2=n2):
            q = (1 - LAPSE) * p + LAPSE / 2
            return stats.beta.pdf(p, a * (1 + n1), a * (1 + n2)) * q**7 * (1 - q) ** 2

        posterior[(n1, n2)] = prior * integrate.quad(integrand, 0, 1, limit=200)[0]
    total = sum(posterior.values())
    posterior = {k: v / total for k, v in posterior.items()}
    samples, _, _ = _run_sampler(wins, alpha, 25300, 10, 1, [(1, 0), (0, 1)],
                                 weight_shape=a)
    assert _chi_square(samples, posterior) > 0.01


def test_exact_posterior_three_alternatives():
    """N = 3, every pair involved: the six informative aspect patterns (one or two
    alternatives) have independent Poisson(alpha (|b|-1)! (N-|b|)! / N!) counts a priori;
    the likelihood depends on the summed weights of each pattern, Gamma(count [+1 for the
    unique aspects]) variables, integrated by Monte Carlo with 20,000 common draws (its
    error is far below what 4,000 samples resolve). Measured p = 0.39 (seed 1)."""
    alpha = 1.0
    wins = np.array([[0, 4, 1], [1, 0, 3], [3, 0, 0]], dtype=float)
    patterns = [(1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 1, 0), (1, 0, 1), (0, 1, 1)]
    means = [alpha / 3] * 3 + [alpha / 6] * 3
    rng = np.random.default_rng(0)
    M, max_count = 20_000, 3
    sums = np.concatenate([np.zeros((6, 1, M)),
                           np.cumsum(rng.exponential(size=(6, max_count + 1, M)), axis=1)],
                          axis=1)

    def log_term(x, y, a, b):
        p = (1 - LAPSE) * a / (a + b) + LAPSE / 2
        return x * np.log(p) + y * np.log1p(-p)

    table = stats.poisson.logpmf(np.arange(max_count + 1)[None, :], np.array(means)[:, None])
    log_post = {}
    for ns in product(range(max_count + 1), repeat=6):
        log_prior = sum(table[b, n] for b, n in enumerate(ns))
        if log_prior < np.log(1e-5):  # the classes left out hold < 1e-4 of the mass
            continue
        G = [sums[b, ns[b] + (1 if b < 3 else 0)] for b in range(6)]
        ll = (log_term(wins[0, 1], wins[1, 0], G[0] + G[4], G[1] + G[5])
              + log_term(wins[0, 2], wins[2, 0], G[0] + G[3], G[2] + G[5])
              + log_term(wins[1, 2], wins[2, 1], G[1] + G[3], G[2] + G[4]))
        log_post[ns] = log_prior + logsumexp(ll)
    norm = logsumexp(list(log_post.values()))
    posterior = {k: np.exp(v - norm) for k, v in log_post.items()}
    samples, _, _ = _run_sampler(wins, alpha, 32300, 8, 1, patterns)
    assert _chi_square(samples, posterior) > 0.01


def test_prior_recovery_without_data():
    """No comparisons: the sampler must draw the prior, K ~ Poisson(alpha H_N) and
    w ~ Gamma(1, 1). Measured on 3,000 thinned draws (seed 0): chi-square p = 0.39 for K,
    Kolmogorov-Smirnov p = 0.28 for the weights (draws 10 sweeps apart; 100,000 sweeps
    give mean K 4.559 and variance 4.532 against 4.567, mean row sum 1.998 against 2)."""
    N, alpha = 5, 2.0
    wins = np.zeros((N, N))
    solver = SliceEBA()
    state = solver.initialize(wins, np.zeros((N, 0)), np.zeros(0), np.ones(N), alpha, LAPSE,
                              adapt_sweeps=200)
    rng = np.random.default_rng(0)
    Ks, ws = [], []
    for it in range(20200):
        solver.sweep(state, rng)
        if it >= 200 and it % 10 == 0:
            Ks.append(state.n_features)
            ws.append(state.weights[0] if state.n_features else np.nan)
    Ks = np.array(Ks)
    rate = alpha * harmonic_rate(N)
    top = 12
    observed = np.bincount(np.minimum(Ks, top), minlength=top + 1)
    expected = stats.poisson.pmf(np.arange(top), rate) * Ks.size
    expected = np.append(expected, Ks.size - expected.sum())
    assert stats.chisquare(observed, expected).pvalue > 0.01
    ws = np.array(ws)
    assert stats.kstest(ws[~np.isnan(ws)], "expon").pvalue > 0.01


def test_prior_recovery_weight_shape():
    """weight_shape=a: without data every weight keeps its Gamma(a, 1) prior, the aspect
    weights (new aspects drawn from it, the multiplicative and the prior proposals) and the
    unique weights alike. Measured Kolmogorov-Smirnov p = 0.42 (aspect weights) and 0.80
    (unique weight of alternative 0), seed 0, draws 10 sweeps apart."""
    N, alpha, a = 4, 2.0, 0.25
    wins = np.zeros((N, N))
    solver = SliceEBA()
    state = solver.initialize(wins, np.zeros((N, 0)), np.zeros(0), np.ones(N), alpha, LAPSE,
                              adapt_sweeps=200, weight_shape=a)
    rng = np.random.default_rng(0)
    ws, us = [], []
    for it in range(15200):
        solver.sweep(state, rng)
        if it >= 200 and it % 10 == 0:
            if state.n_features:
                ws.append(state.weights[0])
            us.append(state.unique[0])
    assert stats.kstest(ws, "gamma", args=(a,)).pvalue > 0.01
    assert stats.kstest(us, "gamma", args=(a,)).pvalue > 0.01


def test_alpha_prior_recovered_without_data():
    """With alpha resampled and no data, alpha keeps its Gamma(1, 1) prior (mean 1).
    Measured: mean 1.06 over 290 draws; the bound allows four standard errors of draws 10 sweeps
    apart."""
    X = np.array([[0, 1]])
    model = InfiniteEBA(n_alternatives=4, n_iter=3000, burn_in=100, random_state=0)
    model.fit_counts(np.zeros((4, 4)))
    alphas = model.alpha_trace_[0, 100::10]
    assert abs(alphas.mean() - 1.0) < 4 / np.sqrt(alphas.size)
    assert model.predict_proba(X)[0, 1] == pytest.approx(0.5, abs=0.1)


# -- Görür's (2007) experiments -------------------------------------------------------


def test_paris_rome_table():
    """Görür 2007, sec. 4.5.3, issue 10's bar: from 100 comparisons per pair drawn from
    Table 4.1, every posterior mean choice probability (eba_probabilities_, eq. 4.63
    without the lapse, the table's quantity) within 0.1 of the table, and their mean
    absolute error no larger than that of the per-pair frequencies, with the weight prior
    Gamma(0.25, 1) (weight_shape=0.25) and 2000 sweeps, over the data seeds 0-9 (chain
    seed = data seed) taken together.

    Measured, MAE model / frequencies (max error): 0.0232/0.0233 (0.066), 0.0067/0.0167
    (0.016), 0.0240/0.0217 (0.062), 0.0152/0.0217 (0.034), 0.0176/0.0200 (0.039),
    0.0411/0.0433 (0.093), 0.0138/0.0100 (0.038), 0.0095/0.0217 (0.014), 0.0183/0.0283
    (0.039), 0.0163/0.0183 (0.031): mean 0.0186 against 0.0225, every error below 0.1,
    the MAE no larger than the frequencies' at 8 of the 10 seeds. Seeds 2 and 6 miss it,
    as does the exact posterior mean there (an independent sampler over the 14 aspect
    patterns, 3 x 60,000 sweeps: 0.0227/0.0217 and 0.0128/0.0100), so the bar cannot
    hold for every data set; asserted: every error below 0.1 at every seed, the mean MAE
    over the seeds no larger than the frequencies', and the per-seed bar at 7 seeds or
    more.

    Görür's (2007) own prior Gamma(1, 1) cannot meet the bar: see
    test_paris_rome_table_gamma_1_1_prior."""
    model_mae, freq_mae = [], []
    for seed in range(10):
        X, y, _ = make_paris_rome(100, random_state=seed)
        model = InfiniteEBA(n_iter=2000, weight_shape=0.25, random_state=seed).fit(X, y)
        errors = np.abs(model.eba_probabilities_ - PARIS_ROME_TABLE)[UPPER]
        freq = _frequencies(win_counts_from_pairs(X, y))
        assert errors.max() < 0.1, (seed, errors)
        model_mae.append(errors.mean())
        freq_mae.append(np.abs(freq - PARIS_ROME_TABLE)[UPPER].mean())
        # The structure: P+ beats P, R+ beats R.
        P = model.eba_probabilities_
        assert P[0, 1] > 0.99 and P[3, 2] > 0.99
    model_mae, freq_mae = np.array(model_mae), np.array(freq_mae)
    assert model_mae.mean() <= freq_mae.mean(), (model_mae, freq_mae)
    assert np.sum(model_mae <= freq_mae) >= 7, (model_mae, freq_mae)


def test_paris_rome_table_with_the_defaults():
    """Issue 20's bar: InfiniteEBA() with its defaults (weight_shape=0.25, 1000 sweeps,
    the best of 4 starts) within 0.1 of Table 4.1 at each of the data seeds 0-9 (chain
    seed = data seed). Measured maximum errors 0.062, 0.017, 0.057, 0.033, 0.038, 0.087,
    0.037, 0.013, 0.044, 0.031 (seed 5, whose frequency of R over P+ is 0.35 against the
    table's 0.48, is the closest: margin 0.013); mean MAE 0.0181 against the frequencies'
    0.0225. The old defaults (weight_shape=1.0, one start) missed at seed 5 (0.118)."""
    for seed in range(10):
        X, y, _ = make_paris_rome(100, random_state=seed)
        model = InfiniteEBA(random_state=seed).fit(X, y)
        errors = np.abs(model.eba_probabilities_ - PARIS_ROME_TABLE)[UPPER]
        assert errors.max() < 0.1, (seed, errors)
        P = model.eba_probabilities_
        assert P[0, 1] > 0.97 and P[3, 2] > 0.97


def test_several_starts_free_a_stuck_chain():
    """The draw of issue 20: at data seed 0 with 300 sweeps, the chain of random_state 0
    started once (weight_shape=0.25) settles within 50 sweeps in a mode where P and R
    share an aspect and have no unique weight, and predicts P+ over P 0.80 and R+ over R
    0.79 where the data show 100 of 100 (log-likelihood about 80 below the good mode's);
    the old defaults (weight_shape=1.0) had a largest error of 0.101. The best of four
    starts after 50 sweeps each (the default) gives 0.997 and 0.998, largest error 0.078.
    Over the data seeds 0-19 and chain seeds 0-4 (100 fits of 300 sweeps), single starts
    got stuck like this 3 times, the default 0 times."""
    X, y, _ = make_paris_rome(100, random_state=0)
    model = InfiniteEBA(n_iter=300, random_state=0).fit(X, y)
    P = model.eba_probabilities_
    assert P[0, 1] > 0.97 and P[3, 2] > 0.97
    assert np.abs(P - PARIS_ROME_TABLE)[UPPER].max() < 0.1
    single = InfiniteEBA(n_iter=300, random_state=0,
                         solver=SliceEBA(n_starts=1)).fit(X, y)
    assert single.eba_probabilities_[0, 1] < 0.9  # the stuck chain, for contrast


def test_select_start_keeps_the_best_start_and_is_reproducible():
    X, y, _ = make_paris_rome(100, random_state=0)
    wins = win_counts_from_pairs(X, y)

    def starts(rng):
        out = []
        for _ in range(3):
            Z = (rng.random((4, 2)) < 0.5).astype(np.int8)
            out.append(SliceEBA().initialize(
                wins, Z, rng.gamma(0.25, 1.0, 2) + 1e-3, rng.gamma(0.25, 1.0, 4) + 1e-3,
                1.0, 0.01, adapt_sweeps=10, weight_shape=0.25))
        return out

    solver = SliceEBA(start_sweeps=20)
    rng = np.random.default_rng(0)
    candidates = starts(rng)
    best = solver.select_start(candidates, rng)
    assert best.sweeps == 0
    assert solver.log_joint(best) == max(solver.log_joint(s) for s in candidates)
    rng = np.random.default_rng(0)
    again = solver.select_start(starts(rng), rng)
    np.testing.assert_array_equal(again.adv, best.adv)
    # One start is returned as it is, with no sweep run.
    single = starts(np.random.default_rng(1))[:1]
    before = single[0].adv.copy()
    assert solver.select_start(single, np.random.default_rng(2)) is single[0]
    np.testing.assert_array_equal(single[0].adv, before)


def test_paris_rome_table_gamma_1_1_prior():
    """Görür's (2007) prior w_k ~ Gamma(1, 1) (weight_shape=1.0): every probability within 0.1 of
    Table 4.1 at seeds 0-2 (measured maximum errors 0.096, 0.048, 0.089), but the MAE
    is NOT below the frequencies' at any of the data seeds 0-9, and that is the
    model's posterior, not the sampler: the exact posterior mean of p_ij (an independent
    sampler over the 14 aspect patterns, alpha, the pattern counts and the summed
    weights, 3 x 60,000 sweeps, chains agreeing within 0.001) has MAE 0.0362, 0.0193,
    0.0345, 0.0265, 0.0316, 0.0503, 0.0263, 0.0224, 0.0289, 0.0234 (mean 0.0300; with
    the lapse 0.0313) against the frequencies' 0.0233, 0.0167, 0.0217, 0.0217, 0.0200,
    0.0433, 0.0100, 0.0217, 0.0283, 0.0183 (mean 0.0225), and a maximum error of 0.122
    at seed 5; InfiniteEBA's 2000 sweeps agree (mean 0.0298 without the lapse, 0.0311
    with). The cause: P+ beats P 100 times in 100, which needs P's unique weight to be
    a negligible fraction of P+'s advantage over P (the bonus); under Gamma(1, 1)
    that costs prior mass proportional to the bonus, so the posterior inflates it
    (bonus/city median 0.48 at seed 0 and 0.27 at seed 1 against the table's 1/12) and
    P+ over R (table 0.52) comes out 0.07 too high on average, P over R+ (0.48) 0.05 too
    low. Checked here: the error stays within 0.015 of the frequencies'."""
    for seed in (0, 1, 2):
        X, y, _ = make_paris_rome(100, random_state=seed)
        model = InfiniteEBA(n_iter=2000, weight_shape=1.0, random_state=seed).fit(X, y)
        P = model.choice_probabilities_
        errors = np.abs(P - PARIS_ROME_TABLE)[UPPER]
        freq_errors = np.abs(_frequencies(win_counts_from_pairs(X, y)) - PARIS_ROME_TABLE)[UPPER]
        assert errors.max() < 0.1
        assert errors.mean() < freq_errors.mean() + 0.015
        # The structure: P+ beats P, R+ beats R.
        assert P[0, 1] > 0.97 and P[3, 2] > 0.97


def test_tree_eba_beats_bradley_terry_leave_one_pair_out():
    """Nine alternatives in three groups (make_tree_eba, 100 comparisons per pair): the
    leave-one-pair-out loss -theta log theta_hat - (1 - theta) log(1 - theta_hat)
    against the true probabilities, averaged over the 36 pairs, is lower for iEBA than
    for BTL fitted by maximum likelihood on the same data. Measured with 800 sweeps and
    three weight updates per sweep: iEBA 0.6275 against BTL 0.6332 at seed 0 (seeds 1
    and 2 of the data: 0.6284 / 0.6345 and 0.6318 / 0.6339; with 2000 sweeps seed 0
    reaches 0.6277; the true probabilities score 0.6160). That is Görür's (2007) prior
    Gamma(1, 1), set here (with the default four starts: 0.6287); the default
    weight_shape=0.25 scores 0.6328 at seed 0 (0.6408 with a single start), BTL's level:
    see the user guide, "The weight prior"."""
    X, y, P, _, _ = make_tree_eba(100, random_state=0)
    W = win_counts_from_pairs(X, y, 9)

    def loss(theta, theta_hat):
        return -theta * np.log(theta_hat) - (1 - theta) * np.log(1 - theta_hat)

    eba, btl = [], []
    for i, j in zip(*np.triu_indices(9, 1), strict=True):
        held = W.copy()
        held[i, j] = held[j, i] = 0
        model = InfiniteEBA(n_alternatives=9, n_iter=800, random_state=0, weight_shape=1.0,
                            solver=SliceEBA(weight_steps=3)).fit_counts(held)
        eba.append(loss(P[i, j], model.choice_probabilities_[i, j]))
        btl.append(loss(P[i, j], bradley_terry_probabilities(fit_bradley_terry(held))[i, j]))
    eba, btl = np.mean(eba), np.mean(btl)
    assert eba < btl - 0.002, f"iEBA {eba:.4f} BTL {btl:.4f}"


# -- the estimator --------------------------------------------------------------------


def test_predict_proba_columns_and_score():
    X, y, _ = make_paris_rome(30, random_state=1)
    model = InfiniteEBA(n_iter=200, random_state=0).fit(X, y)
    pairs = np.array([[0, 1], [1, 0], [2, 3]])
    proba = model.predict_proba(pairs)
    assert proba.shape == (3, 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    # classes_ = [0, 1]: column 1 is "the first of the pair is chosen".
    np.testing.assert_allclose(proba[:, 1], model.choice_probabilities_[[0, 1, 2], [1, 0, 3]])
    np.testing.assert_allclose(proba[0], proba[1][::-1])
    assert list(model.classes_) == [0, 1]
    assert model.predict(pairs)[0] == 1
    p = model.predict_proba(X)[:, 1]
    expected = np.mean(np.where(y == 1, np.log(p), np.log1p(-p)))
    assert model.score(X, y) == pytest.approx(expected)
    assert model.n_features_in_ == 2
    assert model.log_likelihood_trace_.shape == (1, 200)
    assert model.aspects_.shape == (4, model.weights_.size)
    assert model.unique_weights_.shape == (4,)


def test_fit_counts_matches_fit_and_reproducible():
    X, y, _ = make_paris_rome(10, random_state=2)
    W = win_counts_from_pairs(X, y)
    Xc, yc = pairs_from_win_counts(W)
    np.testing.assert_array_equal(win_counts_from_pairs(Xc, yc), W)
    a = InfiniteEBA(n_iter=100, random_state=5).fit(Xc, yc)
    b = InfiniteEBA(n_iter=100, random_state=5).fit_counts(W)
    c = InfiniteEBA(n_iter=100, random_state=6).fit_counts(W)
    np.testing.assert_array_equal(a.choice_probabilities_, b.choice_probabilities_)
    np.testing.assert_array_equal(a.log_likelihood_trace_, b.log_likelihood_trace_)
    assert not np.array_equal(a.choice_probabilities_, c.choice_probabilities_)


def test_inputs_not_modified_and_params_untouched():
    X, y, _ = make_paris_rome(5, random_state=0)
    X0, y0 = X.copy(), y.copy()
    model = InfiniteEBA(n_iter=20, random_state=0)
    params = model.get_params()
    model.fit(X, y)
    model.predict_proba(X)
    model.score(X, y)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)
    assert model.get_params() == params


@pytest.mark.parametrize(
    "X, y, match",
    [
        (np.array([[0, 1], [1, 5]]), [1, 0], "out of range"),
        (np.array([[0, 1], [-1, 2]]), [1, 0], "non-negative"),
        (np.array([[0, 1], [1.5, 2]]), [1, 0], "non-integer"),
        (np.array([[0, 1], [2, 2]]), [1, 0], "with itself"),
        (np.array([[0, 1], [1, 2]]), [1, 2.5], "Unknown label type"),
        (np.array([[0, 1], [1, 2], [0, 2]]), [0, 1, 2], "Only binary"),
        (np.array([[0, 1, 2], [1, 2, 0]]), [1, 0], r"shape \(n_pairs, 2\)"),
        (np.array([[0, 1], [1, 2]]), [1], "one outcome per row of X"),
    ],
)
def test_bad_input(X, y, match):
    with pytest.raises(ValueError, match=match):
        InfiniteEBA(n_alternatives=4, n_iter=3).fit(X, y)


def test_bad_input_to_predict_and_counts():
    model = InfiniteEBA(n_iter=5).fit(np.array([[0, 1], [1, 2]]), [1, 0])
    with pytest.raises(ValueError, match="out of range"):
        model.predict_proba(np.array([[0, 3]]))
    with pytest.raises(ValueError, match="with itself"):
        model.predict_proba(np.array([[1, 1]]))
    with pytest.raises(ValueError, match="wins must be non-negative"):
        InfiniteEBA(n_iter=5).fit_counts(np.array([[0, -1], [1, 0]]))
    with pytest.raises(ValueError, match="zero diagonal"):
        InfiniteEBA(n_iter=5).fit_counts(np.array([[1, 1], [1, 0]]))


def test_warm_start_and_pickle():
    import pickle

    X, y, _ = make_paris_rome(10, random_state=0)
    model = InfiniteEBA(n_iter=30, burn_in=10, warm_start=True, random_state=0).fit(X, y)
    n_samples = len(model.samples_)
    model.fit(X, y)
    assert len(model.samples_) == n_samples + 30
    assert model.log_likelihood_trace_.shape == (1, 60)
    clone = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(clone.predict_proba(X), model.predict_proba(X))
