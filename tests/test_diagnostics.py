"""Diagnostics: ESS, R-hat and hairiness against values known by hand, summaries of fitted
estimators, the ArviZ export and the plotting helpers."""

import math
import sys
import warnings

import numpy as np
import pytest
from scipy.signal import lfilter

from sklearn_ibp import DPMixture, IBPFactorAnalysis
from sklearn_ibp.diagnostics import (
    convergence_summary,
    effective_sample_size,
    hairiness_bounds,
    hairiness_index,
    plot_feature_matrix,
    plot_features,
    plot_traces,
    r_hat,
    to_inference_data,
)

COLUMNS = ["mean", "sd", "ess", "r_hat", "hairiness"]


def _ar1(rho, n_chains, n_draws, seed):
    """Stationary AR(1) chains x_t = rho x_{t-1} + e_t, e_t ~ N(0, 1)."""
    e = np.random.default_rng(seed).standard_normal((n_chains, n_draws))
    e[:, 0] /= np.sqrt(1.0 - rho**2)  # x_0 from the stationary N(0, 1 / (1 - rho^2))
    return lfilter([1.0], [1.0, -rho], e, axis=1)


def _arviz():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # ArviZ's notice of its refactor
        return pytest.importorskip("arviz")


def _pyplot():
    mpl = pytest.importorskip("matplotlib")
    mpl.use("Agg")
    import matplotlib.pyplot as plt

    return plt


# -- effective sample size -------------------------------------------------------------
# An AR(1) chain has integrated autocorrelation time (1 + rho) / (1 - rho), so S draws
# are worth S (1 - rho) / (1 + rho) independent ones. Over 300 seeds with these 4 x 50000
# draws the relative error of the estimate has sd 0.7%, 1.2% and 2.7% for rho = 0, 0.5,
# 0.9; the tolerances are five of those sds (rounded up). Ignoring the autocorrelation
# (ESS = S) would be off by 200% and 1800% for the last two.
@pytest.mark.parametrize("rho, rel", [(0.0, 0.04), (0.5, 0.06), (0.9, 0.14)])
@pytest.mark.parametrize("method", ["bulk", "mean"])
def test_ess_of_ar1_chains(rho, rel, method):
    x = _ar1(rho, 4, 50_000, seed=0)
    expected = x.size * (1.0 - rho) / (1.0 + rho)
    assert effective_sample_size(x, method=method) == pytest.approx(expected, rel=rel)


def test_ess_of_one_chain_and_of_a_1d_array():
    x = _ar1(0.5, 1, 40_000, seed=1)
    expected = x.size / 3.0
    assert effective_sample_size(x[0]) == effective_sample_size(x)
    assert effective_sample_size(x[0]) == pytest.approx(expected, rel=0.08)


def test_ess_is_capped_for_antithetic_chains():
    # Negatively correlated draws estimate the mean better than independent ones; the
    # estimate is capped at S log10(S) (Vehtari et al. 2021).
    x = _ar1(-0.9, 2, 5_000, seed=2)
    ess = effective_sample_size(x, method="mean")
    assert x.size < ess <= x.size * math.log10(x.size) + 1e-9


def test_ess_sees_a_chain_that_is_stuck():
    # Two chains in different places: the draws are worth far fewer than S.
    x = np.random.default_rng(3).standard_normal((2, 2_000))
    x[1] += 5.0
    assert effective_sample_size(x) < 0.05 * x.size


# -- R-hat -------------------------------------------------------------------------------
def test_split_r_hat_by_hand():
    # Split halves [1, 2], [3, 4], [5, 6], [7, 8]: n = 2, within variance W = 1/2, chain
    # means 1.5, 3.5, 5.5, 7.5 with variance 20/3, so var+ = W/2 + 20/3.
    expected = math.sqrt((0.25 + 20.0 / 3.0) / 0.5)
    assert r_hat([[1, 2, 3, 4], [5, 6, 7, 8]], method="split") == pytest.approx(expected)
    # An odd length drops the middle draw of each chain.
    odd = [[1, 2, 99, 3, 4], [5, 6, -99, 7, 8]]
    assert r_hat(odd, method="split") == pytest.approx(expected)


@pytest.mark.parametrize("method", ["rank", "split"])
def test_r_hat_of_chains_from_one_distribution_is_one(method):
    x = np.random.default_rng(4).standard_normal((4, 1_000))
    assert abs(r_hat(x, method=method) - 1.0) < 0.01


@pytest.mark.parametrize("method", ["rank", "split"])
def test_r_hat_sees_a_shifted_chain(method):
    x = np.random.default_rng(4).standard_normal((4, 1_000))
    x[0] += 2.0  # one chain two sds away: R-hat about 1.3
    assert r_hat(x, method=method) > 1.2


@pytest.mark.parametrize("method", ["rank", "split"])
def test_split_r_hat_sees_drift_within_chains(method):
    # Both chains drift the same way: only splitting them shows it.
    x = np.random.default_rng(5).standard_normal((2, 1_000)) + np.linspace(0, 3, 1_000)
    assert r_hat(x, method=method) > 1.1


def test_rank_r_hat_sees_a_chain_with_another_scale():
    # Same centre, three times the spread: the folded draws (rank R-hat) see it, the
    # location-only split R-hat does not.
    x = np.random.default_rng(4).standard_normal((4, 1_000))
    x[0] *= 3.0
    assert r_hat(x, method="rank") > 1.1
    assert r_hat(x, method="split") < 1.01


def test_undefined_cases_give_nan_and_bad_input_raises():
    rng = np.random.default_rng(6)
    assert math.isnan(r_hat(rng.standard_normal(100)))  # one chain
    assert math.isnan(r_hat(rng.standard_normal((1, 100))))
    for bad in (np.ones((2, 50)), np.zeros((2, 3)), np.array([[1.0, np.nan, 2, 3, 4]] * 2)):
        assert math.isnan(effective_sample_size(bad))
        assert math.isnan(r_hat(bad))
    with pytest.raises(ValueError, match="method"):
        effective_sample_size(rng.standard_normal((2, 10)), method="tail")
    with pytest.raises(ValueError, match="method"):
        r_hat(rng.standard_normal((2, 10)), method="folded")
    with pytest.raises(ValueError, match=r"\(n_chains, n_draws\)"):
        r_hat(np.zeros((2, 3, 4)))


def test_ess_and_r_hat_agree_with_arviz():
    # Same definitions, so the same numbers up to rounding: mixing and stuck chains
    # (whose autocorrelations never turn negative), long and as short as 10 draws.
    az = _arviz()
    for seed, (rho, shift, n_draws) in enumerate(
        [(0.0, 0.0, 1_000), (0.6, 0.3, 1_000), (0.95, 0.0, 1_000), (0.95, 1.0, 1_000),
         (-0.5, 1.0, 31), (0.6, 0.0, 10), (0.0, 3.0, 11)]
    ):
        x = _ar1(rho, 4, n_draws, seed=seed)
        x[1] += shift
        for method in ("bulk", "mean"):
            expected = float(az.ess(x, method=method))
            assert effective_sample_size(x, method=method) == pytest.approx(expected, rel=1e-9)
        for method in ("rank", "split"):
            expected = float(az.rhat(x, method=method))
            assert r_hat(x, method=method) == pytest.approx(expected, rel=1e-9)


# -- hairiness ----------------------------------------------------------------------------
def test_hairiness_of_known_sequences():
    # Alternating about the mean: the CUSUM path turns at every step.
    assert hairiness_index([1.0, -1.0] * 10) == 1.0
    # One regime then another: a single turn in T - 1 = 19 steps.
    assert hairiness_index([1.0] * 10 + [-1.0] * 10) == pytest.approx(1.0 / 19.0)
    # By hand: mean 2.5, slopes -1.5, 0.5, -2.5, 3.5, 1.5, 3.5, -1.5, -3.5 turn 4 times.
    x = [1.0, 3.0, 0.0, 6.0, 4.0, 6.0, 1.0, -1.0]
    assert hairiness_index(x) == pytest.approx(4.0 / 7.0)
    # Rows are chains.
    both = hairiness_index([[1.0, -1.0] * 5, [1.0] * 5 + [-1.0] * 5])
    np.testing.assert_allclose(both, [1.0, 1.0 / 9.0])
    assert math.isnan(hairiness_index([2.0] * 10))
    assert math.isnan(hairiness_index([2.0]))


@pytest.mark.parametrize("rho", [0.0, 0.5, 0.9])
def test_hairiness_of_ar1_chains(rho):
    # Successive draws of a Gaussian AR(1) are on opposite sides of 0 with probability
    # 1/2 - arcsin(rho) / pi (the bivariate normal orthant probability). The sd of the
    # estimate over 200 000 draws is below 0.002.
    x = _ar1(rho, 4, 50_000, seed=7)
    expected = 0.5 - math.asin(rho) / math.pi
    np.testing.assert_allclose(hairiness_index(x), expected, atol=0.01)


def test_hairiness_bounds():
    lower, upper = hairiness_bounds(101)
    assert lower.shape == upper.shape == (100,)
    np.testing.assert_allclose((lower + upper) / 2, 0.5)
    # t - 1 = 100 Bernoulli(1/2) turns: half-width 1.96 / (2 sqrt(100)).
    assert upper[-1] - 0.5 == pytest.approx(1.959964 / 20, rel=1e-5)
    # Independent draws stay within them at the end.
    x = np.random.default_rng(8).standard_normal(101)
    assert lower[-1] < hairiness_index(x) < upper[-1]
    with pytest.raises(ValueError, match="level"):
        hairiness_bounds(10, level=1.5)


# -- summaries of fitted estimators ----------------------------------------------------------
@pytest.fixture(scope="module")
def two_chains(block_data):
    return IBPFactorAnalysis(n_iter=16, burn_in=6, n_chains=2, random_state=0).fit(block_data)


def test_convergence_summary_of_a_fitted_estimator(two_chains):
    pd = pytest.importorskip("pandas")
    summary = convergence_summary(two_chains)
    assert isinstance(summary, pd.DataFrame)
    assert list(summary.index) == list(two_chains.traces_)
    assert list(summary.columns) == COLUMNS
    for name, trace in two_chains.traces_.items():
        kept = trace[:, 6:]
        row = summary.loc[name]
        assert row["mean"] == pytest.approx(kept.mean())
        assert row["sd"] == pytest.approx(kept.std(ddof=1))
        np.testing.assert_equal(row["ess"], effective_sample_size(kept))
        np.testing.assert_equal(row["r_hat"], r_hat(kept))
        np.testing.assert_equal(row["hairiness"], hairiness_index(kept).mean())
    assert np.isfinite(summary.loc["log_joint", ["ess", "r_hat", "hairiness"]]).all()
    # The method of every fitted estimator gives the same table.
    pd.testing.assert_frame_equal(two_chains.convergence_summary(), summary)
    # Another burn-in.
    other = two_chains.convergence_summary(burn_in=0)
    assert other.loc["log_joint", "mean"] == pytest.approx(
        two_chains.traces_["log_joint"].mean()
    )


def test_convergence_summary_without_pandas(two_chains, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now fails
    summary = convergence_summary(two_chains)
    assert isinstance(summary, dict) and list(summary) == list(two_chains.traces_)
    assert list(summary["alpha"]) == COLUMNS
    assert summary["alpha"]["mean"] == pytest.approx(two_chains.traces_["alpha"][:, 6:].mean())


def test_convergence_summary_of_one_chain_and_fixed_hyperparameters(block_data):
    model = IBPFactorAnalysis(n_iter=10, sample_hyperparameters=False, random_state=0)
    summary = model.fit(block_data).convergence_summary()
    # n_iter // 2 is the burn-in when none is given.
    assert summary.loc["n_features", "mean"] == pytest.approx(
        model.traces_["n_features"][:, 5:].mean()
    )
    assert summary["r_hat"].isna().all()  # one chain
    # Fixed hyperparameters: a constant trace has a mean and no mixing diagnostics.
    assert summary.loc["sigma_x", "mean"] == pytest.approx(model.sigma_x_)
    assert summary.loc["sigma_x", "sd"] == 0.0
    assert summary.loc["sigma_x", ["ess", "r_hat", "hairiness"]].isna().all()


def test_convergence_summary_after_warm_start_keeps_the_first_burn_in(small_data):
    model = IBPFactorAnalysis(n_iter=8, burn_in=4, warm_start=True, random_state=0)
    model.fit(small_data).set_params(n_iter=5).fit(small_data)
    assert model.traces_["alpha"].shape == (1, 13)
    summary = model.convergence_summary()
    assert summary.loc["alpha", "mean"] == pytest.approx(model.traces_["alpha"][:, 4:].mean())


def test_convergence_summary_of_a_dp_mixture():
    X = np.random.default_rng(0).standard_normal((40, 2))
    X[:20] += 4.0
    model = DPMixture(n_iter=12, n_chains=2, random_state=0).fit(X)
    summary = model.convergence_summary()
    assert list(summary.index) == ["log_joint", "n_clusters", "alpha"]
    assert np.isfinite(summary.loc["log_joint", "r_hat"])


def test_convergence_summary_needs_a_fitted_estimator():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        convergence_summary(IBPFactorAnalysis())


# -- ArviZ ------------------------------------------------------------------------------------
def test_to_inference_data(two_chains):
    _arviz()
    idata = to_inference_data(two_chains)
    names = [n for n in two_chains.traces_ if n != "log_joint"]
    assert sorted(idata.posterior.data_vars) == sorted(names)
    for name in names:
        np.testing.assert_array_equal(idata.posterior[name].values,
                                      two_chains.traces_[name][:, 6:])
        np.testing.assert_array_equal(idata.warmup_posterior[name].values,
                                      two_chains.traces_[name][:, :6])
    np.testing.assert_array_equal(idata.sample_stats["lp"].values,
                                  two_chains.traces_["log_joint"][:, 6:])
    assert idata.posterior.sizes["chain"] == 2 and idata.posterior.sizes["draw"] == 10
    assert idata.attrs["estimator"] == "IBPFactorAnalysis"


def test_to_inference_data_of_kept_samples(small_data):
    az = _arviz()
    model = IBPFactorAnalysis(n_iter=12, burn_in=4, thin=2, n_chains=2, random_state=1)
    model.fit(small_data)
    idata = to_inference_data(model, kept_samples=True)
    assert set(idata.posterior.data_vars) == {"alpha", "sigma_x", "sigma_a"}
    kept = [4, 6, 8, 10]
    np.testing.assert_array_equal(idata.posterior["alpha"].values,
                                  model.traces_["alpha"][:, kept])
    np.testing.assert_array_equal(idata.sample_stats["lp"].values,
                                  model.traces_["log_joint"][:, kept])
    # ArviZ's own diagnostics run on it.
    assert np.isfinite(float(az.ess(idata, var_names=["alpha"])["alpha"]))


def test_to_inference_data_names_the_extra_without_arviz(two_chains, monkeypatch):
    monkeypatch.setitem(sys.modules, "arviz", None)
    with pytest.raises(ImportError, match=r"sklearn-ibp\[diagnostics\]"):
        to_inference_data(two_chains)


# -- plots --------------------------------------------------------------------------------------
def test_plot_traces(two_chains):
    plt = _pyplot()
    from matplotlib.axes import Axes

    axes = plot_traces(two_chains)
    assert len(axes) == len(two_chains.traces_)
    assert all(isinstance(a, Axes) for a in axes)
    assert len(axes[0].get_lines()) == 2 + 1  # two chains and the burn-in marker
    _, given = plt.subplots(2)
    out = plot_traces(two_chains, names=["alpha", "n_features"], ax=given)
    assert list(out) == list(given)
    np.testing.assert_array_equal(out[0].get_lines()[1].get_ydata(),
                                  two_chains.traces_["alpha"][1])
    with pytest.raises(ValueError, match="Unknown trace"):
        plot_traces(two_chains, names=["nope"])
    plt.close("all")


def test_plot_features_and_feature_matrix(two_chains):
    plt = _pyplot()
    from matplotlib.axes import Axes

    components = np.arange(3 * 36, dtype=float).reshape(3, 36)
    axes = plot_features(components, (6, 6))
    assert len(axes) == 3 and all(isinstance(a, Axes) for a in axes)
    np.testing.assert_array_equal(axes[2].get_images()[0].get_array(),
                                  components[2].reshape(6, 6))
    with pytest.raises(ValueError, match="pixels"):
        plot_features(components, (5, 5))
    ax = plot_feature_matrix(two_chains.Z_)
    assert isinstance(ax, Axes)
    np.testing.assert_array_equal(ax.get_images()[0].get_array(), two_chains.Z_)
    _, given = plt.subplots()
    assert plot_feature_matrix(two_chains.Z_, ax=given) is given
    plt.close("all")


def test_plots_name_the_extra_without_matplotlib(two_chains, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"sklearn-ibp\[diagnostics\]"):
        plot_feature_matrix(two_chains.Z_)
    with pytest.raises(ImportError, match="matplotlib"):
        plot_traces(two_chains)
