"""Convergence diagnostics of the samplers' scalar traces, export to ArviZ and plots.

Every sampling estimator records, at every sweep of every chain, scalar traces such as the
log joint probability, the number of features and the hyperparameters
(``estimator.traces_``, arrays of shape ``(n_chains, n_iter)``). This module measures how
well those chains mix:

* :func:`effective_sample_size`: the bulk effective sample size of Vehtari, Gelman,
  Simpson, Carpenter and Bürkner (2021), "Rank-normalization, folding, and localization:
  an improved R-hat for assessing convergence of MCMC", *Bayesian Analysis* 16(2): chains
  split in halves and rank-normalised, autocorrelations from the FFT combined across
  chains as in Gelman et al., *Bayesian Data Analysis* (3rd ed., sec. 11.5), truncated by
  Geyer's (1992) initial positive sequence and made monotone by his initial monotone
  sequence. ``method="mean"`` skips the rank normalisation (the classic BDA3 estimate on
  split chains).
* :func:`r_hat`: the rank-normalised split R-hat of Vehtari et al. (2021), the larger of
  the split R-hat of the rank-normalised draws and of their folded values (distance to the
  median); ``method="split"`` is the split R-hat of BDA3 (sec. 11.4) on the raw draws.
* :func:`hairiness_index`: the CUSUM hairiness index of Brooks (1998), used in Doshi-Velez 2009,
  sec. 5.3 to judge the mixing of the hyperparameters.
* :func:`convergence_summary`: all of these for every trace of a fitted estimator.
* :func:`to_inference_data`: the traces as an ArviZ ``InferenceData``.
* :func:`plot_traces`, :func:`plot_features`, :func:`plot_feature_matrix`: matplotlib
  figures of traces, feature images and feature matrices.

ArviZ, pandas and matplotlib are optional (``pip install "sklearn-ibp[diagnostics]"``)
and imported only by the functions that need them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import fft, stats
from sklearn.utils.validation import check_is_fitted

__all__ = [
    "convergence_summary",
    "effective_sample_size",
    "hairiness_bounds",
    "hairiness_index",
    "plot_feature_matrix",
    "plot_features",
    "plot_traces",
    "r_hat",
    "to_inference_data",
]

#: Fewest draws per chain for which ESS and R-hat are computed (two per split half).
MIN_DRAWS = 4

_EXTRA_HINT = 'install it, or the extra: pip install "sklearn-ibp[diagnostics]"'


# -- helpers --------------------------------------------------------------------------------
def _as_chains(x, name="x") -> np.ndarray:
    """``x`` as a float array of shape (n_chains, n_draws); a 1-D array is one chain."""
    x = np.asarray(x, dtype=float)
    if x.ndim == 1:
        x = x[None, :]
    if x.ndim != 2:
        raise ValueError(
            f"{name} must have shape (n_draws,) or (n_chains, n_draws); got shape {x.shape}."
        )
    return x


def _informative(x) -> bool:
    """Whether draws can say anything about mixing: enough, finite and not all equal."""
    return (
        x.shape[1] >= MIN_DRAWS
        and bool(np.all(np.isfinite(x)))
        and float(np.ptp(x)) > 0.0
    )


def _split(x) -> np.ndarray:
    """Each chain cut in a first and a second half (the middle draw of an odd length is
    left out), so drift within a chain shows up as disagreement between chains."""
    half = x.shape[1] // 2
    return np.concatenate([x[:, :half], x[:, x.shape[1] - half :]], axis=0)


def _rank_normalize(x) -> np.ndarray:
    """Normal scores of the pooled ranks: ``Phi^-1((r - 3/8) / (S + 1/4))`` (Blom's
    offsets, Vehtari et al. 2021 eq. 14), ties sharing their average rank."""
    ranks = stats.rankdata(x, method="average", axis=None).reshape(x.shape)
    return stats.norm.ppf((ranks - 0.375) / (x.size + 0.25))


def _fold(x) -> np.ndarray:
    """Distance of every draw to the median of all draws (Vehtari et al. 2021 eq. 16)."""
    return np.abs(x - np.median(x))


def _autocovariance(x) -> np.ndarray:
    """Autocovariances of each chain at lags 0..n-1, divided by n, through the FFT."""
    n = x.shape[1]
    centred = x - x.mean(axis=1, keepdims=True)
    size = fft.next_fast_len(2 * n)  # zero padding: no wrap-around between the ends
    spectrum = fft.rfft(centred, n=size, axis=1)
    return fft.irfft(spectrum * np.conj(spectrum), n=size, axis=1)[:, :n] / n


def _ess_of_chains(x) -> float:
    """Effective sample size of the draws of every chain together (BDA3 sec. 11.5).

    With ``W`` the mean within-chain variance and ``B / n`` the variance of the chain
    means, ``var+ = (n - 1) / n W + B / n`` and the autocorrelation at lag ``t`` is
    ``rho_t = 1 - (W - mean_chains(acov_t)) / var+``. The sum of autocorrelations is
    truncated by Geyer's initial positive sequence: the pair sums
    ``Gamma_k = rho_2k + rho_2k+1`` are summed while positive, made non-increasing
    (initial monotone sequence), and the even lag of the first pair left out is added
    (Vehtari et al. 2021, appendix). ``tau = -1 + 2 sum_k Gamma_k`` is floored at
    ``1 / log10(S)``, so the ESS never exceeds ``S log10 S`` for ``S`` draws.
    """
    n_chains, n = x.shape
    acov = _autocovariance(x)
    within = float(np.mean(acov[:, 0])) * n / (n - 1.0)
    var_plus = within * (n - 1.0) / n
    if n_chains > 1:
        var_plus += float(np.var(x.mean(axis=1), ddof=1))
    rho = 1.0 - (within - acov.mean(axis=0)) / var_plus
    rho[0] = 1.0
    if not np.all(np.isfinite(rho)):
        return math.nan
    n_pairs = n // 2
    gamma = rho[0 : 2 * n_pairs : 2] + rho[1 : 2 * n_pairs : 2]
    # Initial positive sequence: Gamma_0 always counts, then while the pair sums stay > 0.
    # Pairs up to lag n - 2 are looked at; when all are positive (chains far too short
    # or stuck), the last one only contributes its even lag, as in Stan and ArviZ.
    max_pairs = max(1, (n - 3) // 2)
    n_positive = 1
    while n_positive < max_pairs and gamma[n_positive] > 0.0:
        n_positive += 1
    kept = np.minimum.accumulate(gamma[:n_positive])  # initial monotone sequence
    tau = -1.0 + 2.0 * float(np.sum(kept))
    # The even lag of the first pair left out: its positive part after a negative pair
    # sum, as it is otherwise (Stan's and ArviZ's convention).
    if n_positive < n_pairs:
        next_even = float(rho[2 * n_positive])
        tau += next_even if gamma[n_positive] >= 0.0 else max(next_even, 0.0)
    total = n_chains * n
    tau = max(tau, 1.0 / math.log10(total))
    return total / tau


def _r_hat_of_chains(x) -> float:
    """``sqrt(var+ / W)`` with ``var+ = (n - 1) / n W + B / n`` (BDA3 eq. 11.3-11.4)."""
    n = x.shape[1]
    within = float(np.mean(np.var(x, axis=1, ddof=1)))
    between_over_n = float(np.var(x.mean(axis=1), ddof=1))
    if within <= 0.0:
        return math.nan
    return math.sqrt(((n - 1.0) / n * within + between_over_n) / within)


# -- ESS and R-hat ---------------------------------------------------------------------------
def effective_sample_size(x: ArrayLike, method: str = "bulk") -> float:
    """Effective sample size of one scalar over one or more chains.

    Parameters
    ----------
    x : array-like of shape (n_draws,) or (n_chains, n_draws)
        The draws, one row per chain.
    method : {"bulk", "mean"}, default="bulk"
        ``"bulk"``: rank-normalised split chains (Vehtari et al. 2021, sec. 4.3), robust
        to heavy tails and to a scalar that is not Gaussian; ``"mean"``: split chains as
        they are, the ESS of the sample mean in BDA3 (sec. 11.5).

    Returns
    -------
    ess : float
        About ``S / tau`` for ``S`` draws and integrated autocorrelation time ``tau``
        (``S (1 - rho) / (1 + rho)`` for an AR(1) chain with coefficient ``rho``). NaN
        when a chain has fewer than 4 draws, a draw is not finite, or all draws are equal
        (a constant trace says nothing about mixing).

    Notes
    -----
    The autocorrelations are computed with the FFT and truncated by Geyer's initial
    monotone sequence; see the module docstring for the references. The result is
    ArviZ's ``ess(method="bulk")`` (or ``"mean"``) for chains of 10 draws or more; for
    shorter chains, where ArviZ returns ``S log10 S``, the first autocorrelation pair is
    used.
    """
    x = _as_chains(x)
    if method not in ("bulk", "mean"):
        raise ValueError(f'method must be "bulk" or "mean"; got {method!r}.')
    if not _informative(x):
        return math.nan
    split = _split(x)
    if method == "bulk":
        split = _rank_normalize(split)
    return _ess_of_chains(split)


def r_hat(x: ArrayLike, method: str = "rank") -> float:
    """Potential scale reduction factor (R-hat) of one scalar across chains.

    Parameters
    ----------
    x : array-like of shape (n_chains, n_draws)
        The draws, one row per chain.
    method : {"rank", "split"}, default="rank"
        ``"rank"``: the rank-normalised split R-hat of Vehtari et al. (2021, sec. 4.2),
        the larger of the split R-hat of the rank-normalised draws (location) and of the
        rank-normalised folded draws (scale); ``"split"``: the split R-hat of BDA3 (sec.
        11.4) on the draws as they are.

    Returns
    -------
    r_hat : float
        Close to 1 when the chains agree; above 1.01 (Vehtari et al.) or 1.1 (BDA3) the
        chains have not mixed. NaN for a single chain (the comparison between chains is
        the point; a single chain's drift is judged by its ESS and hairiness), fewer than
        4 draws per chain, a non-finite draw, or all draws equal.
    """
    x = _as_chains(x)
    if method not in ("rank", "split"):
        raise ValueError(f'method must be "rank" or "split"; got {method!r}.')
    if x.shape[0] < 2 or not _informative(x):
        return math.nan
    split = _split(x)
    if method == "split":
        return _r_hat_of_chains(split)
    location = _r_hat_of_chains(_rank_normalize(split))
    scale = _r_hat_of_chains(_rank_normalize(_fold(split)))
    return max(location, scale)


# -- hairiness -------------------------------------------------------------------------------
def _slope_changes(x) -> np.ndarray:
    """``d_t`` for t = 2..T: whether the CUSUM path turns at t - 1 (see hairiness_index)."""
    slopes = x - x.mean()
    return (slopes[1:] * slopes[:-1] < 0.0).astype(float)


def hairiness_index(x: ArrayLike) -> float | np.ndarray:
    """The CUSUM hairiness index of a chain (Brooks 1998; Doshi-Velez 2009, sec. 5.3).

    The CUSUM path of draws ``x_1..x_T`` is ``S_t = sum_{i <= t} (x_i - mean(x))``. Its
    slope at ``t`` is ``x_t - mean(x)``; ``d_t = 1`` when the slope changes sign between
    ``t - 1`` and ``t`` (a strict local extremum of the path), and the hairiness is the
    fraction of such turns, ``D_T = sum_{t=2..T} d_t / (T - 1)``: Doshi-Velez's (2009)
    ``D_t = (1/t) sum d_tau`` with ``d_tau = [sign(s_tau - s_tau-1) != sign(s_tau-1 -
    s_tau-2)]`` on the CUSUM path ``s = S``. A well-mixing chain crosses its mean often:
    for independent draws symmetric about their mean, ``d_t`` are Bernoulli(1/2) and
    ``D_T`` is near 1/2 (see :func:`hairiness_bounds`); a chain that lingers in one
    regime and then another turns rarely and has a small index.

    Parameters
    ----------
    x : array-like of shape (n_draws,) or (n_chains, n_draws)
        One chain, or one chain per row.

    Returns
    -------
    hairiness : float or ndarray of shape (n_chains,)
        ``D_T`` of the chain (of each row for 2-D input). NaN for fewer than 2 draws,
        non-finite draws, or a constant chain.
    """
    arr = np.asarray(x, dtype=float)
    chains = _as_chains(arr)
    out = np.full(chains.shape[0], np.nan)
    for c, chain in enumerate(chains):
        if chain.size >= 2 and np.all(np.isfinite(chain)) and np.ptp(chain) > 0:
            out[c] = float(np.mean(_slope_changes(chain)))
    return float(out[0]) if arr.ndim == 1 else out


def hairiness_bounds(n_draws: int, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Bounds of the running hairiness ``D_t`` of an independent chain (Brooks 1998).

    Under independence the ``t - 1`` turns are Bernoulli(1/2), so ``D_t`` is about
    ``N(1/2, 1 / (4 (t - 1)))``. The running index of a chain, ``D_t`` for ``t = 2..T``,
    is the cumulative mean of its turns; a chain whose index leaves these bounds mixes
    worse than independent draws would.

    Parameters
    ----------
    n_draws : int
        Length ``T`` of the chain.
    level : float, default=0.95
        Coverage of the bounds.

    Returns
    -------
    lower, upper : ndarray of shape (n_draws - 1,)
        The bounds for ``t = 2..T``.
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1); got {level}.")
    z = stats.norm.ppf(0.5 + level / 2.0)
    t = np.arange(1, max(int(n_draws), 1), dtype=float)
    half_width = z / (2.0 * np.sqrt(t))
    return 0.5 - half_width, 0.5 + half_width


# -- summaries of fitted estimators ----------------------------------------------------------
def _trace_window(estimator, burn_in):
    """``(traces, burn_in)``: the traces of the complete chains and the burn-in to drop.

    An interrupted fit leaves NaN at the end of the chains it did not finish; only the
    chains that ran as many sweeps as the longest are used, cut to that length.
    """
    check_is_fitted(estimator, "traces_")
    traces = {k: np.asarray(v, dtype=float) for k, v in estimator.traces_.items()}
    if burn_in is None:
        burn_in = getattr(estimator, "_trace_burn_in", None)
    if burn_in is None:
        burn_in = estimator.n_iter // 2 if estimator.burn_in is None else estimator.burn_in
    if int(burn_in) < 0:
        raise ValueError(f"burn_in must be non-negative; got {burn_in}.")
    reference = traces.get("log_joint", next(iter(traces.values())))
    done = np.sum(~np.isnan(reference), axis=1)
    complete = done == done.max()
    length = int(done.max())
    traces = {k: v[complete, :length] for k, v in traces.items()}
    return traces, min(int(burn_in), length)


def _summary_row(x) -> dict[str, float]:
    flat = x.ravel()
    finite = flat.size > 0 and bool(np.all(np.isfinite(flat)))
    return {
        "mean": float(np.mean(flat)) if finite else math.nan,
        "sd": float(np.std(flat, ddof=1)) if finite and flat.size > 1 else math.nan,
        "ess": effective_sample_size(x) if flat.size else math.nan,
        "r_hat": r_hat(x) if flat.size else math.nan,
        "hairiness": float(np.mean(hairiness_index(x))) if x.shape[1] else math.nan,
    }


def convergence_summary(estimator: Any, burn_in: int | None = None) -> Any:
    """Mean, sd, ESS, R-hat and hairiness of every scalar trace of a fitted estimator.

    Parameters
    ----------
    estimator : fitted sampling estimator
        Anything with ``traces_``, a dict of arrays of shape (n_chains, n_iter).
    burn_in : int or None, default=None
        Leading sweeps of each chain left out. None uses the fit's burn-in (its
        ``burn_in``, or ``n_iter // 2``); sweeps added by ``warm_start`` fits are all
        used.

    Returns
    -------
    summary : pandas.DataFrame or dict
        One row per trace, indexed by its name, with columns ``mean``, ``sd`` (over the
        draws of every chain), ``ess`` (bulk, :func:`effective_sample_size`), ``r_hat``
        (rank-normalised split, :func:`r_hat`; NaN for one chain) and ``hairiness``
        (:func:`hairiness_index`, averaged over chains). A DataFrame when pandas is
        installed, else a dict mapping each trace name to a dict of those columns.
        ESS, R-hat and hairiness are NaN for a trace that stays constant (a
        hyperparameter held fixed). An interrupted fit is summarised over the chains it
        completed.

    Examples
    --------
    >>> from sklearn_ibp import IBPFactorAnalysis
    >>> from sklearn_ibp.datasets import make_block_images
    >>> X, _, _ = make_block_images(n_samples=50, random_state=0)
    >>> model = IBPFactorAnalysis(n_iter=20, n_chains=2, random_state=0).fit(X)
    >>> summary = model.convergence_summary()
    >>> list(summary.columns)
    ['mean', 'sd', 'ess', 'r_hat', 'hairiness']
    """
    traces, burn_in = _trace_window(estimator, burn_in)
    rows = {name: _summary_row(trace[:, burn_in:]) for name, trace in traces.items()}
    try:
        import pandas as pd
    except ImportError:
        return rows
    return pd.DataFrame.from_dict(rows, orient="index")


def _import_arviz():
    try:
        import arviz
    except ImportError as exc:
        raise ImportError(f"to_inference_data needs ArviZ; {_EXTRA_HINT}.") from exc
    return arviz


def _kept_scalars(estimator) -> dict[str, np.ndarray]:
    """Scalar values of the kept samples, as arrays (n_chains, n_kept).

    Nested dicts of scalars (a likelihood's parameters, a base's hyperparameters) are
    flattened to ``"outer.inner"``; array-valued entries (``Z``, ``A``, ...) are left out.
    Chains that kept fewer samples (an interrupted fit) are left out.
    """
    per_chain: dict[int, list[dict[str, float]]] = {}
    for sample in estimator.samples_:
        flat = {}
        for key, value in sample.items():
            if key == "chain":
                continue
            items = value.items() if isinstance(value, dict) else [(None, value)]
            for inner, v in items:
                if np.ndim(v) == 0 and isinstance(v, (int, float, np.number)):
                    flat[key if inner is None else f"{key}.{inner}"] = float(v)
        per_chain.setdefault(int(sample["chain"]), []).append(flat)
    n_kept = max(len(v) for v in per_chain.values())
    chains = [v for _, v in sorted(per_chain.items()) if len(v) == n_kept]
    names = [k for k in chains[0][0] if all(k in s for chain in chains for s in chain)]
    return {
        name: np.array([[s[name] for s in chain] for chain in chains]) for name in names
    }


def to_inference_data(
    estimator: Any, burn_in: int | None = None, kept_samples: bool = False
) -> Any:
    """Export a fitted estimator's draws to an ArviZ ``InferenceData``.

    Parameters
    ----------
    estimator : fitted sampling estimator
    burn_in : int or None, default=None
        Leading sweeps of each trace put in the ``warmup_*`` groups rather than the
        posterior; None uses the fit's burn-in, as in :func:`convergence_summary`.
    kept_samples : bool, default=False
        False: the ``posterior`` group holds every trace after the burn-in except the log
        joint, which is the ``lp`` variable of ``sample_stats``, and the burn-in goes to
        ``warmup_posterior`` and ``warmup_sample_stats``. True: the ``posterior`` holds
        the scalars of the kept samples (``samples_``, after thinning), including nested
        ones as ``"params.sigma_x"``, with ``log_joint`` as ``sample_stats.lp``.

    Returns
    -------
    idata : arviz.InferenceData
        Dimensions ``(chain, draw)``; the attributes name the estimator, the burn-in and
        the thinning.

    Raises
    ------
    ImportError
        When ArviZ is not installed (the ``[diagnostics]`` extra).
    """
    az = _import_arviz()
    attrs = {"estimator": type(estimator).__name__, "thin": int(getattr(estimator, "thin", 1))}
    if kept_samples:
        check_is_fitted(estimator, "samples_")
        scalars = _kept_scalars(estimator)
        lp = scalars.pop("log_joint", None)
        return az.from_dict(
            posterior=scalars,
            sample_stats=None if lp is None else {"lp": lp},
            attrs={**attrs, "draws": "kept samples"},
        )
    traces, burn_in = _trace_window(estimator, burn_in)
    posterior = {k: v[:, burn_in:] for k, v in traces.items() if k != "log_joint"}
    warmup = {k: v[:, :burn_in] for k, v in traces.items() if k != "log_joint"}
    kwargs = {}
    if "log_joint" in traces:
        kwargs["sample_stats"] = {"lp": traces["log_joint"][:, burn_in:]}
        if burn_in:
            kwargs["warmup_sample_stats"] = {"lp": traces["log_joint"][:, :burn_in]}
    if burn_in:
        kwargs["warmup_posterior"] = warmup
        kwargs["save_warmup"] = True
    return az.from_dict(
        posterior=posterior, attrs={**attrs, "burn_in": burn_in, "draws": "every sweep"},
        **kwargs,
    )


# -- plots -------------------------------------------------------------------------------------
def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(f"The plotting helpers need matplotlib; {_EXTRA_HINT}.") from exc
    return plt


def _axes_for(ax, n, plt, **subplot_kw):
    """``n`` axes: those given (one Axes or a sequence) or a new figure's."""
    if ax is None:
        ncols = subplot_kw.pop("ncols", 1)
        nrows = max(1, math.ceil(n / ncols))
        _, axes = plt.subplots(nrows, ncols, squeeze=False, **subplot_kw)
        axes = axes.ravel()
        for extra in axes[n:]:
            extra.set_visible(False)
        return axes[:n]
    axes = np.ravel(np.asarray(ax, dtype=object))
    if axes.size < n:
        raise ValueError(f"ax must hold at least {n} axes; got {axes.size}.")
    return axes[:n]


def plot_traces(estimator: Any, names: Any = None, ax: Any = None) -> np.ndarray:
    """Trace plots of a fitted estimator: one panel per trace, one line per chain.

    Parameters
    ----------
    estimator : fitted sampling estimator
    names : list of str or None, default=None
        Traces to plot (keys of ``estimator.traces_``); None plots all.
    ax : matplotlib Axes, sequence of Axes or None, default=None
        Where to draw, one Axes per name; None makes a new figure.

    Returns
    -------
    axes : ndarray of matplotlib Axes
        One per trace; a dashed line marks the end of the burn-in.
    """
    check_is_fitted(estimator, "traces_")
    available = list(estimator.traces_)
    names = available if names is None else [names] if isinstance(names, str) else list(names)
    unknown = [n for n in names if n not in estimator.traces_]
    if unknown:
        raise ValueError(f"Unknown trace names {unknown}; the estimator has {available}.")
    plt = _pyplot()
    axes = _axes_for(ax, len(names), plt, sharex=True,
                     figsize=(7.0, 1.8 * max(len(names), 1)))
    burn_in = getattr(estimator, "_trace_burn_in", None)
    for axis, name in zip(axes, names, strict=True):
        trace = np.asarray(estimator.traces_[name])
        for c, row in enumerate(trace):
            axis.plot(np.arange(row.size), row, lw=0.8, label=f"chain {c}")
        if burn_in:
            axis.axvline(burn_in - 0.5, color="0.4", ls="--", lw=0.8)
        axis.set_ylabel(name)
    if len(axes):
        axes[-1].set_xlabel("sweep")
        if np.asarray(estimator.traces_[names[0]]).shape[0] > 1:
            axes[0].legend(loc="best", fontsize="small")
    return axes


def plot_features(components: ArrayLike, shape: Any, ax: Any = None) -> np.ndarray:
    """Each feature (a row of ``components``) drawn as an image.

    Parameters
    ----------
    components : array-like of shape (n_components, n_features)
        Features, for instance a fitted estimator's ``components_``.
    shape : tuple of int
        Image shape of a feature, with ``prod(shape) == n_features`` (``(6, 6)`` for
        the block images).
    ax : matplotlib Axes, sequence of Axes or None, default=None
        One Axes per feature; None makes a new figure with up to 8 images a row.

    Returns
    -------
    axes : ndarray of matplotlib Axes
        One per feature.
    """
    components = np.asarray(components, dtype=float)
    if components.ndim != 2:
        raise ValueError(f"components must be 2-D; got shape {components.shape}.")
    shape = tuple(int(s) for s in np.atleast_1d(shape))
    if math.prod(shape) != components.shape[1]:
        raise ValueError(
            f"shape {shape} has {math.prod(shape)} pixels but each feature has "
            f"{components.shape[1]} values."
        )
    plt = _pyplot()
    n = components.shape[0]
    if n == 0:
        return np.empty(0, dtype=object)
    ncols = min(n, 8)
    axes = _axes_for(ax, n, plt, ncols=ncols,
                     figsize=(1.4 * ncols, 1.5 * math.ceil(n / ncols)))
    for k, axis in enumerate(axes):
        axis.imshow(components[k].reshape(shape), cmap="gray", interpolation="nearest")
        axis.set_title(f"feature {k}", fontsize="small")
        axis.set_xticks([])
        axis.set_yticks([])
    return axes


def plot_feature_matrix(Z: ArrayLike, ax: Any = None) -> Any:
    """A binary feature matrix: rows are samples, columns features, dark means on.

    Parameters
    ----------
    Z : array-like of shape (n_samples, n_components)
        For instance a fitted estimator's ``Z_``.
    ax : matplotlib Axes or None, default=None
        Where to draw; None makes a new figure.

    Returns
    -------
    ax : matplotlib Axes
    """
    Z = np.asarray(Z, dtype=float)
    if Z.ndim != 2:
        raise ValueError(f"Z must be 2-D; got shape {Z.shape}.")
    plt = _pyplot()
    if ax is None:
        _, ax = plt.subplots(figsize=(max(2.0, 0.3 * Z.shape[1] + 1.5), 4.0))
    ax.imshow(Z, aspect="auto", cmap="Greys", vmin=0, vmax=1, interpolation="nearest")
    ax.set_xlabel("feature")
    ax.set_ylabel("sample")
    return ax
