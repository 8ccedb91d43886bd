"""The factor-analyser base of the DPMFA (Görür 2007, sec. 3.4, eqs. 3.68-3.77).

Every piece is checked against something computed another way: the component density
against the factors integrated out by Gauss-Hermite quadrature (eq. 3.68 from eq. 3.76) and
against SciPy's Gaussian; the posterior scan against a plain-NumPy transcription drawing
the same numbers, and by its invariance of the prior (independent replicates of
prior draw -> data -> posterior scans must reproduce the prior, and demonstrably fail when
the data come from a slightly different model); the hyperparameter updates by the same
check against the hyperpriors; the model's equivariance under translating and rescaling
columns.
"""

import math

import numpy as np
import pytest
from numpy.polynomial.hermite_e import hermegauss
from scipy import stats
from scipy.special import gammainc, logsumexp

from sklearn_ibp.likelihoods._factor_analyzer_kernels import rotate_loading_columns
from sklearn_ibp.likelihoods.factor_analyzer import (
    FactorAnalyzerBase,
    column_signal_to_noise,
    effective_latent_dimensions,
)

D3_HYPER = {
    "xi": np.array([0.5, -1.0, 2.0]),
    "R": np.array([[2.0, 0.3, 0.0], [0.3, 1.0, -0.2], [0.0, -0.2, 0.5]]),
    "w": np.array([0.5, 1.0, 2.0]),
    "beta": 3.0,
}


def _base(D, q, hyper=None, **kwargs):
    base = FactorAnalyzerBase(n_factors=q, sample_hyperparameters=False, **kwargs)
    base.initialize(np.random.default_rng(99).normal(size=(20, D)), None)
    if hyper is not None:
        base.set_hyperparameters(hyper)
    return base


# -- the component density (eq. 3.68) -------------------------------------------------
@pytest.mark.parametrize("q", [1, 2])
def test_density_with_the_factors_integrated_out_is_the_gaussian(q):
    """int N(x | mu + Lambda z, Psi) N(z | 0, I) dz (eq. 3.76 over the factors) by a
    Gauss-Hermite product rule equals N(x | mu, Lambda Lambda^T + Psi) (eq. 3.68), and
    log_likelihood gives the same number."""
    D = 3
    rng = np.random.default_rng(q)
    base = _base(D, q, D3_HYPER)
    params = base.sample_prior(2, rng)
    params["loadings"] = rng.normal(size=(2, D, q)) * 0.8
    params["uniquenesses"] = rng.uniform(0.3, 1.0, size=(2, D))
    X = params["means"][0] + rng.normal(size=(4, D))
    nodes, weights = hermegauss(100)
    weights = weights / math.sqrt(2.0 * math.pi)
    grid = np.stack(np.meshgrid(*[nodes] * q, indexing="ij"), axis=-1).reshape(-1, q)
    log_w = np.log(np.prod(np.stack(np.meshgrid(*[weights] * q, indexing="ij"), -1)
                           .reshape(-1, q), axis=1))
    ours = base.log_likelihood(X, params)
    for k in range(2):
        mu, L, psi = params["means"][k], params["loadings"][k], params["uniquenesses"][k]
        cov = L @ L.T + np.diag(psi)
        gaussian = stats.multivariate_normal(mu, cov).logpdf(X)
        centres = mu + grid @ L.T  # (G, D)
        cond = stats.norm(centres[None], np.sqrt(psi)).logpdf(X[:, None, :]).sum(axis=2)
        integral = logsumexp(cond + log_w[None], axis=1)
        np.testing.assert_allclose(integral, gaussian, rtol=0, atol=1e-8)
        np.testing.assert_allclose(ours[:, k], gaussian, rtol=0, atol=1e-10)


@pytest.mark.parametrize("D, q, scale", [(6, 3, 1.0), (10, 5, 1.0), (4, 1, 1e3),
                                         (5, 2, 1e-3)])
def test_log_likelihood_matches_scipy(D, q, scale):
    """Against SciPy's Gaussian with the covariance formed explicitly, for loadings from
    negligible to 100 times the noise (SciPy's eigendecomposition loses about 1e-7 nats
    there; the factor-posterior form does not, see the next test)."""
    rng = np.random.default_rng(D * 10 + q)
    X_train = rng.normal(size=(30, D)) * scale
    base = FactorAnalyzerBase(n_factors=q)
    base.initialize(X_train, None)
    params = base.sample_prior(5, rng)
    np.testing.assert_allclose(params["covariances"], base.covariances(
        params["loadings"], params["uniquenesses"]))
    # loadings from weak to dominant against the noise
    params["loadings"] *= np.array([0.01, 0.3, 1.0, 10.0, 100.0])[:, None, None]
    X = X_train[:7] + rng.normal(size=(7, D)) * scale
    ours = base.log_likelihood(X, params)
    for k in range(5):
        cov = base.covariances(params["loadings"][k:k + 1], params["uniquenesses"][k:k + 1])[0]
        ref = stats.multivariate_normal(params["means"][k], cov).logpdf(X)
        np.testing.assert_allclose(ours[:, k], ref, rtol=1e-12 if k < 3 else 0,
                                   atol=1e-11 if k < 3 else 1e-6)
    assert ours.shape == (7, 5)
    assert base.log_likelihood(X, {k: v[:0] for k, v in params.items()}).shape == (7, 0)


def test_log_likelihood_is_exact_where_the_loadings_dwarf_the_noise():
    """50-digit arithmetic as the reference: the factor-posterior sum of squares keeps
    1e-12 where the covariance is dominated by the loadings 1e4 to one."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 50
    rng = np.random.default_rng(0)
    D, q = 6, 2
    base = FactorAnalyzerBase(n_factors=q)
    base.initialize(rng.normal(size=(20, D)), None)
    params = base.sample_prior(1, rng)
    params["loadings"] = rng.normal(size=(1, D, q)) * 100.0
    params["uniquenesses"] = rng.uniform(0.5, 1.5, size=(1, D))
    X = params["means"][0] + rng.normal(size=(5, D)) * 30.0
    ours = base.log_likelihood(X, params)[:, 0]
    L = mp.matrix(params["loadings"][0].tolist())
    C = L * L.T
    for d in range(D):
        C[d, d] += mp.mpf(params["uniquenesses"][0, d])
    C_inv, log_det = C**-1, mp.log(mp.det(C))
    for i in range(5):
        r = mp.matrix((X[i] - params["means"][0]).tolist())
        exact = -(D * mp.log(2 * mp.pi) + log_det + (r.T * C_inv * r)[0]) / 2
        assert abs(float(exact - ours[i])) < 1e-12


# -- the posterior scan against a NumPy transcription ----------------------------------
def _reference_rotations(loadings, psi, a, b, rng):
    """rotate_loading_columns written with NumPy (the same draws in the same order)."""
    D, q = loadings.shape
    power = a + 0.5 * D
    for j in range(q - 1):
        for k in range(j + 1, q):
            def log_f(theta, j=j, k=k):
                co, si = math.cos(theta), math.sin(theta)
                new_j = co * loadings[:, j] + si * loadings[:, k]
                new_k = -si * loadings[:, j] + co * loadings[:, k]
                return -power * (math.log(b + 0.5 * np.sum(new_j**2 / psi))
                                 + math.log(b + 0.5 * np.sum(new_k**2 / psi)))

            level = log_f(0.0) + math.log(rng.random())
            left = -2.0 * math.pi * rng.random()
            right = left + 2.0 * math.pi
            while True:
                theta = left + (right - left) * rng.random()
                if log_f(theta) > level:
                    break
                if theta < 0:
                    left = theta
                else:
                    right = theta
            co, si = math.cos(theta), math.sin(theta)
            lj, lk = loadings[:, j].copy(), loadings[:, k].copy()
            loadings[:, j] = co * lj + si * lk
            loadings[:, k] = -si * lj + co * lk


def _reference_scan(base, X, mean, loadings, psi, ard, rng):
    """One scan of FactorAnalyzerBase.sample_posterior, transcribed from its docstring."""
    n, D = X.shape
    q = loadings.shape[1]
    beta, w = base.beta, base.w
    a, b = base.ard_shape, base.ard_rate
    # 1. factors
    L = np.linalg.cholesky(np.eye(q) + loadings.T @ (loadings / psi[:, None]))
    z = np.empty((n, q))
    for i in range(n):
        t = np.linalg.solve(L, loadings.T @ ((X[i] - mean) / psi))
        z[i] = np.linalg.solve(L.T, t + rng.standard_normal(q))
    # 2. uniqueness and loading row, jointly
    A = np.diag(ard) + z.T @ z
    LA = np.linalg.cholesky(A)
    for d in range(D):
        y = X[:, d] - mean[d]
        m = np.linalg.solve(A, z.T @ y)
        rss = np.sum((y - z @ m) ** 2) + np.sum(ard * m * m)
        psi[d] = 1.0 / rng.gamma(beta + 0.5 * n, 1.0 / (beta * w[d] + 0.5 * rss))
        loadings[d] = m + np.linalg.solve(LA.T, math.sqrt(psi[d]) * rng.standard_normal(q))
    _reference_rotations(loadings, psi, a, b, rng)
    # 3. ARD precisions
    ard[:] = rng.gamma(a + 0.5 * D, 1.0 / (b + 0.5 * np.sum(loadings**2 / psi[:, None], 0)))
    # 4. mean, factors integrated out
    cov_inv = np.linalg.inv(loadings @ loadings.T + np.diag(psi))
    P = n * cov_inv + base.R
    LP = np.linalg.cholesky(P)
    lin = cov_inv @ X.sum(axis=0) + base.R @ base.xi
    mean[:] = np.linalg.solve(LP.T, np.linalg.solve(LP, lin) + rng.standard_normal(D))


@pytest.mark.parametrize("n, q", [(0, 2), (1, 1), (7, 1), (12, 3)])
def test_scan_kernel_matches_the_numpy_transcription(n, q):
    D = 4
    rng = np.random.default_rng(n + 10 * q)
    base = _base(D, q)
    base.set_hyperparameters({"xi": rng.normal(size=D), "R": np.eye(D) * 0.7,
                              "w": rng.uniform(0.2, 1.0, D), "beta": 2.5})
    start = base.sample_prior(1, rng)
    X = rng.normal(size=(n, D)) * 2.0 + 1.0
    X_before = X.copy()
    start_before = {k: v.copy() for k, v in start.items()}
    rng_ours, rng_ref = np.random.default_rng(5), np.random.default_rng(5)
    ours = start
    for _ in range(3):
        ours = base.sample_posterior(X, rng_ours, ours)
    mean, loadings = start["means"][0].copy(), start["loadings"][0].copy()
    psi, ard = start["uniquenesses"][0].copy(), start["ard"][0].copy()
    for _ in range(3):
        _reference_scan(base, X, mean, loadings, psi, ard, rng_ref)
    np.testing.assert_allclose(ours["means"][0], mean, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(ours["loadings"][0], loadings, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(ours["uniquenesses"][0], psi, rtol=1e-9)
    np.testing.assert_allclose(ours["ard"][0], ard, rtol=1e-9)
    # inputs untouched
    np.testing.assert_array_equal(X, X_before)
    for k, v in start.items():
        np.testing.assert_array_equal(v, start_before[k])


def test_rotations_keep_the_covariance():
    rng = np.random.default_rng(3)
    loadings = rng.normal(size=(6, 4)) * [5.0, 0.1, 1.0, 0.01]
    psi = rng.uniform(0.1, 1.0, 6)
    before = loadings @ loadings.T
    snr_before = np.sort((loadings**2 / psi[:, None]).sum(axis=0))
    moved = loadings.copy()
    rotate_loading_columns(moved, psi, 0.5, 0.5, rng)
    np.testing.assert_allclose(moved @ moved.T, before, rtol=1e-12, atol=1e-12)
    assert not np.allclose(moved, loadings)
    # the strong column stays strong: total signal is conserved, the largest stays largest
    snr_after = np.sort((moved**2 / psi[:, None]).sum(axis=0))
    assert snr_after.sum() == pytest.approx(snr_before.sum(), rel=1e-12)


# -- invariance of the prior (sample_posterior, update_hyperparameters) ----------------
def _prior_pit(params, hyper):
    """Probability integral transforms that are uniform under the prior G_0 (per draw):
    the means' marginals (eq. 3.69), the uniquenesses (eq. 3.70), the ARD precisions
    (eq. 3.73), the first loading column given (psi, nu) (eq. 3.71) and every column's
    signal-to-noise ratio given its precision (nu * SNR ~ chi2_D)."""
    mu, L = params["means"], params["loadings"]
    psi, nu = params["uniquenesses"], params["ard"]
    D = mu.shape[1]
    R_inv = np.linalg.inv(hyper["R"])
    cols = [stats.norm.cdf((mu - hyper["xi"]) / np.sqrt(np.diag(R_inv))),
            gammainc(hyper["beta"], hyper["beta"] * hyper["w"] / psi),
            gammainc(0.5, 0.5 * nu),
            stats.norm.cdf(L[:, :, 0] * np.sqrt(nu[:, :1] / psi)),
            stats.chi2.cdf(nu * column_signal_to_noise(params), D)]
    return np.column_stack(cols)


def _replicates(q, n_replicates, seed, n_rows=5, noise_factor=1.0):
    """Independent replicates of: params ~ G_0, n_rows rows ~ F(params) (with the noise
    inflated by ``noise_factor``), then five posterior scans from the true params."""
    D = 3
    base = _base(D, q, D3_HYPER, n_scans=5)
    rng = np.random.default_rng(seed)
    prior = base.sample_prior(n_replicates, rng)
    factors = rng.standard_normal((n_replicates, n_rows, q))
    noise = rng.standard_normal((n_replicates, n_rows, D))
    X = (prior["means"][:, None, :] + np.einsum("rnq,rdq->rnd", factors, prior["loadings"])
         + noise * np.sqrt(noise_factor * prior["uniquenesses"])[:, None, :])
    draws = [base.sample_posterior(X[r], rng, {k: v[r:r + 1] for k, v in prior.items()})
             for r in range(n_replicates)]
    params = {k: np.concatenate([d[k] for d in draws]) for k in draws[0]}
    return _prior_pit(params, D3_HYPER)


def _z_scores(u):
    """z-scores of the mean (1/2) and the second moment (1/3) of uniform PIT values."""
    m = u.shape[0]
    z_mean = (u.mean(axis=0) - 0.5) / (u.std(axis=0, ddof=1) / math.sqrt(m))
    z_square = ((u**2).mean(axis=0) - 1.0 / 3.0) / ((u**2).std(axis=0, ddof=1) / math.sqrt(m))
    return np.concatenate([z_mean, z_square])


@pytest.mark.parametrize("q", [1, 2])
def test_posterior_scans_leave_the_prior_invariant(q):
    """Geweke's joint check by independent replicates (prior -> data -> 5 scans): if the
    scan leaves every cluster posterior invariant, the draws are distributed as G_0. With
    q = 2 the rotation move is exercised as well. 20,000 replicates: |z| < 4 for the mean
    and second moment of 11 (q=1) or 13 (q=2) uniform transforms, and no KS p-value below
    1e-4. (Seed 0: max |z| 2.3 and smallest KS p-value 0.009 for q=1; 2.4 and 0.05 for
    q=2.) A successive-conditional
    chain is avoided because it mixes very slowly through the heavy tail of the ARD prior
    (nu ~ chi2_1 near 0, where the loadings dwarf the noise)."""
    u = _replicates(q, 20_000, seed=0)
    z = _z_scores(u)
    assert np.all(np.abs(z) < 4.0), np.round(z, 2)
    p_values = [stats.kstest(u[:, j], "uniform").pvalue for j in range(u.shape[1])]
    assert min(p_values) > 1e-4, p_values


def test_the_invariance_check_detects_a_wrong_noise_level():
    """The same check with data whose noise is 1.3 times the model's fails by far (seed 1:
    max |z| 11): the test above cannot pass vacuously."""
    z = _z_scores(_replicates(1, 10_000, seed=1, noise_factor=1.3))
    assert np.max(np.abs(z)) > 8.0, np.round(z, 2)


def _hyperprior_draw(base, rng):
    D = base.n_features
    xi = rng.multivariate_normal(base.data_mean, base.data_cov)
    R = stats.wishart(df=D, scale=np.linalg.inv(D * base.data_cov)).rvs(random_state=rng)
    w = rng.gamma(0.5, base.data_var)
    beta = 1.0 / rng.gamma(0.5, 2.0)
    return {"xi": xi, "R": np.atleast_2d(R), "w": w, "beta": beta}


def _hyper_pit(hyper, base):
    D = base.n_features
    R_scale = np.diag(np.linalg.inv(D * base.data_cov))
    return np.concatenate([
        stats.norm.cdf((hyper["xi"] - base.data_mean) / np.sqrt(np.diag(base.data_cov))),
        stats.chi2.cdf(np.diag(hyper["R"]) / R_scale, D),
        gammainc(0.5, hyper["w"] / base.data_var),
        [gammainc(0.5, 0.5 / hyper["beta"])],
    ])


def test_hyperparameter_updates_leave_the_hyperprior_invariant():
    """Replicates of: hyperparameters ~ hyperprior (eqs. 3.72, 3.74), four components
    ~ G_0, two updates of the hyperparameters given them; the hyperparameters must follow
    the hyperprior. 3,000 replicates, |z| < 4 for the two moments of 7 transforms (seed 0:
    max |z| 2.1)."""
    D, K = 2, 4
    base = FactorAnalyzerBase(n_factors=1)
    base.initialize(np.random.default_rng(7).normal(size=(30, D)) * [1.0, 3.0] + [0, 5], None)
    rng = np.random.default_rng(0)
    pits = []
    for _ in range(3000):
        base.set_hyperparameters(_hyperprior_draw(base, rng))
        params = base.sample_prior(K, rng)
        for _ in range(2):
            base.update_hyperparameters(params, rng)
        pits.append(_hyper_pit(base.hyperparameters(), base))
    z = _z_scores(np.array(pits))
    assert np.all(np.abs(z) < 4.0), np.round(z, 2)


# -- equivariance, contract ------------------------------------------------------------
def test_translating_and_rescaling_columns_moves_everything_with_them():
    rng = np.random.default_rng(11)
    X = rng.normal(size=(40, 4)) @ rng.normal(size=(4, 4))
    a, b = np.array([1e-3, 2.0, 1e3, 0.5]), np.array([10.0, -3.0, 0.0, 1e4])
    Y = X * a + b
    bases = [FactorAnalyzerBase(n_factors=2), FactorAnalyzerBase(n_factors=2)]
    labels = np.repeat([0, 1, 2], [15, 15, 10])
    results = []
    for base, data in zip(bases, (X, Y), strict=True):
        base.initialize(data, None)
        g = np.random.default_rng(1)
        params = base.sample_posterior_all(data, labels, 3, g)
        params = base.sample_posterior_all(data, labels, 3, g, params)
        base.update_hyperparameters(params, g)
        results.append((params, base.hyperparameters(), base.log_likelihood(data, params),
                        base.log_prior_predictive(data[:5])))
    (px, hx, lx, ppx), (py, hy, ly, ppy) = results
    np.testing.assert_allclose(py["means"], px["means"] * a + b, rtol=1e-7, atol=1e-9 * b.max())
    np.testing.assert_allclose(py["loadings"], px["loadings"] * a[:, None], rtol=1e-7,
                               atol=1e-12)
    np.testing.assert_allclose(py["uniquenesses"], px["uniquenesses"] * a**2, rtol=1e-7)
    np.testing.assert_allclose(py["ard"], px["ard"], rtol=1e-7)
    np.testing.assert_allclose(hy["w"], hx["w"] * a**2, rtol=1e-7)
    assert hy["beta"] == pytest.approx(hx["beta"], rel=1e-7)
    log_jacobian = np.log(a).sum()
    np.testing.assert_allclose(ly, lx - log_jacobian, rtol=1e-8)
    np.testing.assert_allclose(ppy, ppx - log_jacobian, rtol=1e-8)


def test_log_prior_predictive_against_monte_carlo():
    rng = np.random.default_rng(4)
    base = _base(3, 1, D3_HYPER, n_prior_draws=4096)
    X = rng.normal(size=(4, 3)) + D3_HYPER["xi"]
    ours = base.log_prior_predictive(X)
    draws = base.sample_prior(100_000, rng)
    # the mean integrates out: x | Lambda, Psi ~ N(xi, Lambda Lambda^T + Psi + R^{-1})
    cov = draws["covariances"] + np.linalg.inv(D3_HYPER["R"])[None]
    L = np.linalg.cholesky(cov)
    diff = X - D3_HYPER["xi"]
    y = np.linalg.solve(L[None], diff[:, None, :, None])[..., 0]  # (4, J, 3)
    log_dens = (-0.5 * (y**2).sum(-1) - np.log(np.diagonal(L, axis1=1, axis2=2)).sum(-1)
                - 1.5 * math.log(2 * math.pi))
    mc = logsumexp(log_dens, axis=1) - math.log(log_dens.shape[1])
    np.testing.assert_allclose(ours, mc, atol=0.05)


def test_contract_shapes_reproducibility_and_empty_clusters():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(25, 5))
    base = FactorAnalyzerBase(n_factors=2)
    base.initialize(X, rng)
    labels = np.r_[np.zeros(10, int), np.full(15, 2)]  # cluster 1 is empty
    X_before, labels_before = X.copy(), labels.copy()
    a = base.sample_posterior_all(X, labels, 3, np.random.default_rng(1))
    b = base.sample_posterior_all(X, labels, 3, np.random.default_rng(1))
    shapes = {"means": (3, 5), "loadings": (3, 5, 2), "ard": (3, 2), "uniquenesses": (3, 5),
              "covariances": (3, 5, 5)}
    assert {k: v.shape for k, v in a.items()} == shapes
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])
    np.testing.assert_array_equal(X, X_before)
    np.testing.assert_array_equal(labels, labels_before)
    assert np.all(np.isfinite(base.log_likelihood(X, a)))
    again = base.sample_posterior_all(X, labels, 3, rng, a)
    assert {k: v.shape for k, v in again.items()} == shapes
    assert {k: v.shape for k, v in base.sample_prior(0, rng).items()} == {
        k: (0, *s[1:]) for k, s in shapes.items()}
    empty = base.sample_posterior_all(X[:0], labels[:0], 0, rng)
    assert empty["means"].shape == (0, 5)
    hyper = base.hyperparameters()
    base.update_hyperparameters(a, rng)
    assert base.hyperparameters()["beta"] != hyper["beta"]
    base.set_hyperparameters(hyper)
    for k, v in base.hyperparameters().items():
        np.testing.assert_array_equal(v, hyper[k])


@pytest.mark.parametrize("n_factors", [0, 5, 6, 2.5, True])
def test_bad_n_factors(n_factors):
    with pytest.raises(ValueError, match="n_factors"):
        FactorAnalyzerBase(n_factors=n_factors).initialize(np.zeros((4, 5)) + np.eye(4, 5), None)


def test_effective_latent_dimensions_counts_columns_above_the_noise():
    psi = np.array([[1.0, 1.0, 4.0], [0.5, 0.5, 0.5]])
    loadings = np.zeros((2, 3, 3))
    loadings[0, :, 0] = [3.0, 0.0, 0.0]   # SNR 9
    loadings[0, :, 1] = [0.0, 1.0, 2.0]   # SNR 2
    loadings[1, :, 2] = [1.0, 1.0, 1.0]   # SNR 6
    params = {"loadings": loadings, "uniquenesses": psi}
    np.testing.assert_allclose(column_signal_to_noise(params), [[9, 2, 0], [0, 0, 6]])
    np.testing.assert_array_equal(effective_latent_dimensions(params), [1, 1])
    np.testing.assert_array_equal(effective_latent_dimensions(params, threshold=1.0), [2, 1])
