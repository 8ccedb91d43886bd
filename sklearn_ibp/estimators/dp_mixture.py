"""DPMixture: Dirichlet process mixtures of Gaussians and of factor analysers."""

from __future__ import annotations

import copy
import functools
import sys
from numbers import Integral, Real

import numpy as np
from joblib import effective_n_jobs
from scipy.special import logsumexp
from sklearn.base import (
    ClassNamePrefixFeaturesOutMixin,
    ClusterMixin,
    TransformerMixin,
    _fit_context,
)
from sklearn.cluster import KMeans
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._memory import check_allocation
from ..base import BaseIBPSampler, document_loop_parameters
from ..exceptions import warn_at_caller
from ..likelihoods.conditionally_conjugate import ConditionallyConjugateBase
from ..likelihoods.normal_wishart import NormalWishartBase
from ..priors.ibp import as_random_source
from ..solvers import SolverNameOptions, SolverOf
from ..solvers.dp._dp_base import relabel
from ..solvers.dp._dp_partition import partition_point_estimate
from ._scale import check_data_scale

__all__ = ["DPMixture"]

#: Base distributions of Gaussian components, by name.
BASES = {"conjugate": NormalWishartBase, "conditionally_conjugate": ConditionallyConjugateBase}


#: Gibbs scans over a non-conjugate base's parameter blocks that draw the parameters of
#: the point estimate's clusters (from the prior's precisions).
_POINT_PARAMETER_SCANS = 5
#: Above this many features a fit warns that its sweeps cost O(D**3) per cluster.
_LARGE_N_FEATURES = 500
#: D x D float64 matrices a cluster holds at once across the solvers (an estimate).
_MATRICES_PER_CLUSTER = 4


#: The docstring entry of ``sample_hyperparameters`` (the loop parameters' entries are shared,
#: see :func:`sklearn_ibp.base.loop_parameters_doc`).
_SAMPLE_HYPERPARAMETERS_DOC = """\
sample_hyperparameters : bool, default=True
    Resample the base's hyperparameters (and ``alpha`` if ``sample_alpha=True``) every
    sweep.
sample_alpha : bool, default=True
    Resample ``alpha`` every sweep under ``1 / alpha ~ Gamma(1/2, 1/2)`` (Görür 2007,
    eq. 3.56), when ``sample_hyperparameters=True``. False holds ``alpha`` at its value
    while the base's hyperparameters are still resampled (with
    ``sample_hyperparameters=False`` those are held too, which on data whose clusters are
    much tighter than the data's covariance merges them: two clusters for the four kinds of
    crabs). A resampled ``alpha`` follows the number of clusters up, and the number of
    clusters follows ``alpha``; see the user guide ("Longer chains").
"""


@document_loop_parameters(
    200, _SAMPLE_HYPERPARAMETERS_DOC,
    warm_start="The chains continue on the same ``X``.",
)
class DPMixture(ClassNamePrefixFeaturesOutMixin, ClusterMixin, TransformerMixin, BaseIBPSampler):
    """Dirichlet process mixture of Gaussians or of factor analysers, fitted by MCMC.

    The number of clusters is learned from the data: ``x_i ~ F(theta_{c_i})``,
    ``theta_k ~ G_0`` and the partition ``c`` follows the Chinese restaurant process with
    concentration ``alpha`` (Görür 2007, ch. 3). Gaussian components have a conjugate
    Normal-Wishart base or a conditionally conjugate one (independent Normal mean and Wishart
    precision), each with the hierarchical hyperpriors of sec. 3.3.1, which make the fit
    invariant to translating, rotating and scaling the data; factor-analyser components
    (sec. 3.4) have ``n_factors`` loadings per cluster with ARD precisions.

    Parameters
    ----------
    alpha : float, default=1.0
        DP concentration: its starting value when ``sample_hyperparameters`` and
        ``sample_alpha`` are True (the defaults; then ``1 / alpha ~ Gamma(1/2, 1/2)``,
        eq. 3.56), otherwise held at this value.
    base : {"conjugate", "conditionally_conjugate"} or base object, \
            default="conditionally_conjugate"
        The base distribution ``G_0`` of Gaussian components, by name or as an object of
        :mod:`sklearn_ibp.likelihoods` (copied, never modified). The conditionally
        conjugate base (independent mean and precision) is the default: the conjugate
        one ties the spread of a cluster's mean to the cluster's own covariance, which
        splits data whose clusters differ in scale (on the olive oils, ARI against the
        nine areas 0.52-0.54 against 0.62-0.64; see the user guide).
    component : {"gaussian", "factor_analyzer"}, default="gaussian"
        Component model.
    n_factors : int or None, default=None
        Factors per cluster for ``component="factor_analyzer"`` (an upper bound: ARD
        switches off the ones not needed); None uses ``n_features - 1``.
    solver : str or solver object, default="auto"
        Sampler of the indicators: ``"collapsed"``, ``"split_merge"``, ``"gibbs"``,
        ``"auxiliary"``, ``"no_gaps"``, ``"metropolis"``, ``"slice"``, ``"truncated"``,
        ``"retrospective"``, ``"subcluster"`` or an object of
        :mod:`sklearn_ibp.solvers`. ``"auto"`` is ``"split_merge"`` (collapsed Gibbs with
        split-merge moves, which mixes over the number of clusters far better than Gibbs
        alone) for the conjugate base and ``"auxiliary"`` otherwise. ``"subcluster"``
        (conjugate base only) draws every row at once given the clusters' weights and
        parameters, in parallel over blocks of rows (``SubclusterDP(n_threads=...)``), with
        split and merge moves built from two sub-clusters (Chang and Fisher 2013): the
        sampler for large ``n_samples`` (see the user guide).
    init : {"auto", "single", "kmeans", "subsample"}, default="auto"
        Starting partition of every chain. ``"single"``: all rows in one cluster, which
        the split-merge moves break up; ``"kmeans"``: k-means with about
        ``2 alpha log(1 + N / alpha)`` clusters (over-segmented, for the samplers that
        move one row at a time and merge surplus clusters more easily than they open
        needed ones); ``"subsample"`` (solvers that propose splits): the chain first runs
        10 sweeps on 2,000 random rows from one cluster, then on 4,000 (the first 2,000
        and 2,000 more, each new row in the cluster of highest weighted density), and so
        on, doubling, and starts on all the rows from the last subsample's partition
        (:mod:`~sklearn_ibp.solvers.dp.nested_start`; about 10 sweeps' work over all the
        rows, not recorded in ``traces_``). ``"auto"`` is ``"subsample"`` for
        ``solver="subcluster"``, ``"single"`` for the other solvers that propose splits
        (``"split_merge"``) and ``"kmeans"`` otherwise. A k-means start is a local mode
        that split-merge rarely leaves: on 8 Gaussians it kept 10-11 clusters where the
        single start finds 8; at a million rows the single start keeps Gaussians cut by
        its first splits, which the subsample start avoids (8 Gaussians in 20 of 20
        seeds at the first sweep against 0 of 10 within 100; see the user guide).
    point_estimate : {"vi", "binder", "best_sample"}, default="vi"
        What ``labels_`` (and so ``fit_predict``) reports: the partition that minimises
        the posterior expected variation of information (``"vi"``) or Binder loss
        (``"binder"``) over the kept samples (Wade and Ghahramani 2018), found by a
        greedy search from the kept samples; or the kept sample with the highest log
        joint probability (``"best_sample"``).
    %(loop_parameters)s

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
        Cluster of each training row in the point estimate of the partition (see
        ``point_estimate``; label switching between samples cannot scramble it).
    n_components_ : int
        Number of clusters of that partition.
    weights_ : ndarray of shape (n_components,)
        Their weights ``n_k / (N + alpha)`` (the rest, ``alpha / (N + alpha)``, is the
        weight of a new cluster).
    means_ : ndarray of shape (n_components, n_features)
    covariances_ : ndarray of shape (n_components, n_features, n_features)
        The clusters' parameters: the kept sample's own with
        ``point_estimate="best_sample"`` (or when the point estimate is a kept sample),
        otherwise a posterior draw given the point estimate's clusters.
    alpha_ : float
        ``alpha`` of the kept sample nearest the point estimate (of the best sample with
        ``point_estimate="best_sample"``).
    samples_ : list of dict
        The kept samples: ``labels``, ``alpha``, ``params``, ``hyperparameters``,
        ``log_joint``, ``chain``.
    traces_ : dict of ndarray of shape (n_chains, n_iter)
        ``log_joint``, ``n_clusters`` and ``alpha`` at every sweep.
    n_iter_, interrupted_, n_features_in_

    Examples
    --------
    >>> from sklearn.datasets import make_blobs
    >>> from sklearn_ibp import DPMixture
    >>> X, _ = make_blobs(n_samples=200, centers=3, random_state=0)
    >>> labels = DPMixture(n_iter=50, random_state=0).fit_predict(X)
    """

    _parameter_constraints: dict = {
        **BaseIBPSampler._parameter_constraints,
        "alpha": [Interval(Real, 0, None, closed="neither")],
        "base": [StrOptions({"conjugate", "conditionally_conjugate"}),
                 HasMethods(["sample_prior", "log_likelihood", "sample_posterior"])],
        "component": [StrOptions({"gaussian", "factor_analyzer"})],
        "n_factors": [Interval(Integral, 1, None, closed="left"), None],
        "solver": [SolverNameOptions("dp", extra={"auto"}), SolverOf("dp")],
        "init": [StrOptions({"auto", "single", "kmeans", "subsample"})],
        "point_estimate": [StrOptions({"vi", "binder", "best_sample"})],
        "sample_alpha": ["boolean"],
    }

    def __init__(
        self,
        alpha=1.0,
        base="conditionally_conjugate",
        component="gaussian",
        n_factors=None,
        solver="auto",
        init="auto",
        point_estimate="vi",
        n_iter=200,
        burn_in=None,
        thin=1,
        n_chains=1,
        n_jobs=None,
        sample_hyperparameters=True,
        sample_alpha=True,
        warm_start=False,
        random_state=None,
        verbose=0,
    ):
        self.alpha = alpha
        self.base = base
        self.component = component
        self.n_factors = n_factors
        self.solver = solver
        self.init = init
        self.point_estimate = point_estimate
        self.sample_hyperparameters = sample_hyperparameters
        self.sample_alpha = sample_alpha
        self._set_loop_parameters(n_iter, burn_in, thin, n_chains, n_jobs, warm_start,
                                  random_state, verbose)

    # -- what is fitted -------------------------------------------------------------------
    def _make_base(self, n_features):
        if self.component == "factor_analyzer":
            n_factors = n_features - 1 if self.n_factors is None else self.n_factors
            if n_factors >= n_features:
                raise ValueError(
                    f"n_factors must be smaller than the number of features ({n_features}); "
                    f"got n_factors={n_factors}."
                )
            if n_factors < 1:
                raise ValueError("component='factor_analyzer' needs at least two features.")
            from ..likelihoods.factor_analyzer import FactorAnalyzerBase

            return FactorAnalyzerBase(n_factors=n_factors)
        if isinstance(self.base, str):
            return BASES[self.base]()
        return copy.deepcopy(self.base)

    def _base_name(self, base):
        return getattr(base, "name", type(base).__name__)

    _solver_model = "dp"

    def _resolve_solver(self, base=None):
        solver = self.solver
        if solver == "auto":
            solver = "split_merge" if getattr(base, "conjugate", False) else "auxiliary"
        solver = self._new_solver(solver)
        solver._validate_params()
        name = self._base_name(base)
        served = getattr(solver, "bases", None)
        if served is not None and name in (*BASES, "factor_analyzer") and name not in served:
            raise ValueError(
                f"solver {solver.name!r} cannot serve the "
                f"{name!r} base; it serves {list(served)}. The collapsed samplers need the "
                "conjugate base."
            )
        return solver

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Sample the DP mixture posterior given ``X``.

        Parameters
        ----------
        X : array-like or dask.array of shape (n_samples, n_features)
            Finite data (no NaN or inf), largest absolute value between 1e-100 and 1e100
            (the fit of ``c * X`` is the fit of ``X`` rescaled; outside that range the
            squares over- or underflow and the fit is refused).

            A ``dask.array`` is fitted without loading it into this process (data larger
            than memory, see the user guide): with ``solver="subcluster"`` only (the
            conjugate base), ``point_estimate="best_sample"`` and ``init`` "auto",
            "subsample" or "single" (the subsample chains of "auto" run in this process on
            at most 2**19 rows drawn from the workers, whose clusters then start every row
            on the workers), on the current ``distributed`` client
            (``distributed.get_client()``; a ValueError if there is none). The rows and
            their labels stay on the client's workers, in chunks of whole blocks of
            ``SubclusterDP.block_size`` rows; ``X`` is checked there (finite, its largest
            absolute value) and the base is initialised from its moments. Then ``labels_``
            (and each kept sample's ``labels``) is a ``dask.array`` on the workers, each
            sample keeps its clusters' ``statistics`` (counts, sums, scatters, shift), from
            which ``predict``, ``predict_proba``, ``score_samples`` and ``score`` compute,
            and the ``N x N`` quantities (``coassignment_``,
            :meth:`leave_one_out_log_density`) are refused, as is ``warm_start``. Several
            chains run one after the other (``n_jobs`` must then be 1). The chain is the
            in-memory chain, bit for bit, when ``X``'s moments are (one chunk).
        y : Ignored

        Returns
        -------
        self : DPMixture
        """
        if _is_dask_array(X):
            return self._fit_dask(X)
        continuing = self.warm_start and hasattr(self, "_chains")
        X = validate_data(self, X, dtype=np.float64, ensure_min_samples=2,
                          reset=not continuing, order="C")
        check_data_scale(X, estimator="DPMixture")
        self._check_n_features_cost(X.shape)
        if continuing and not np.array_equal(X, self._X_train):
            raise ValueError(
                "warm_start=True continues the previous chains, which need the same X they "
                "were fitted on; set warm_start=False to fit new data."
            )
        base = self._make_base(X.shape[1])
        solver = self._solver if continuing else self._resolve_solver(base)
        self._base_template = base
        init = self.init
        if init == "subsample" and not getattr(solver, "proposes_splits", False):
            raise ValueError(
                f"init='subsample' starts the chains on subsamples from one cluster, which "
                f"only a solver that proposes splits ('subcluster', 'split_merge') leaves; "
                f"got solver={self.solver!r}. Use init='kmeans' or 'auto' with it.")
        if init == "auto":
            init = ("subsample" if getattr(solver, "starts_from_subsamples", False)
                    else "single" if getattr(solver, "proposes_splits", False) else "kmeans")
        self._run_chains(X, None, {"alpha": float(self.alpha)}, solver,
                         functools.partial(self._starting_partition, X, init=init))
        self._solver = solver
        self._X_train = X
        self._point = self._point_sample(X, base)
        self.labels_ = self._point["labels"].copy()
        self.n_components_ = int(self.labels_.max()) + 1
        counts = np.bincount(self.labels_, minlength=self.n_components_)
        self.alpha_ = float(self._point["alpha"])
        self.weights_ = counts / (X.shape[0] + self.alpha_)
        self.means_ = np.asarray(self._point["params"]["means"], dtype=float).copy()
        self.covariances_ = self._covariances(self._point)
        return self

    def _fit_dask(self, X):
        """:meth:`fit` of a ``dask.array`` (see its ``X``): the sub-cluster sampler on a
        :class:`~sklearn_ibp.distributed.dask_rows.DaskRows` store of ``X``."""
        from ..solvers.dp.dp_subcluster import SubclusterDP

        solver = self.solver
        if not (solver == "subcluster" or isinstance(solver, SubclusterDP)):
            raise ValueError(
                f"solver={solver!r} cannot fit a dask.array: only solver='subcluster' (or a "
                "SubclusterDP object) fits a dask.array; pass solver='subcluster' and "
                "base='conjugate'.")
        if self.point_estimate != "best_sample":
            raise ValueError(
                f"point_estimate={self.point_estimate!r} needs the n_samples x n_samples "
                "co-assignments of the kept samples; a fit on a dask.array takes "
                "point_estimate='best_sample'.")
        if self.init not in ("auto", "single", "subsample"):
            raise ValueError(
                f"init={self.init!r} cannot start a fit on a dask.array; use init='auto', "
                "'subsample' or 'single'.")
        if self.warm_start:
            raise ValueError("warm_start=True is not supported for a dask.array X.")
        if self.n_chains > 1 and effective_n_jobs(self.n_jobs) > 1:
            raise ValueError(
                f"n_jobs={self.n_jobs!r}: the chains of a fit on a dask.array run one after "
                "the other on the cluster; set n_jobs=1 (or None).")
        try:
            import distributed
        except ImportError as exc:  # pragma: no cover - dask installed without distributed
            raise ImportError("fitting a dask.array needs dask's 'distributed'.") from exc
        try:
            client = distributed.get_client()
        except ValueError as exc:
            raise ValueError(
                "fitting a dask.array needs a distributed client: start one first, e.g. "
                "distributed.Client(distributed.LocalCluster()); the fit runs on the "
                "current client (distributed.get_client()).") from exc
        _check_dask_layout(X)
        if any(np.isnan(c) for c in X.chunks[0]) or np.isnan(X.shape[1]):
            raise ValueError(
                "X must have known chunk sizes (call X.compute_chunk_sizes()).")
        N, D = int(X.shape[0]), int(X.shape[1])
        if N < 2:
            raise ValueError(f"X must have at least 2 samples; got {N}.")
        if D < 1:
            raise ValueError("X must have at least one feature.")
        self._check_n_features_cost((N, D))
        base = self._make_base(D)
        solver = self._resolve_solver(base)
        from ..solvers import dask_row_store

        block_size = int(solver.block_size)
        store = dask_row_store(X, client, block_size=block_size, shift=np.zeros(D),
                               chunk_blocks=max(1, -(-int(X.chunks[0][0]) // block_size)),
                               n_threads=1 if solver.n_threads == -1 else int(solver.n_threads))
        n, mean, cov, finite, top = store.moments()
        if not finite:
            raise ValueError("Input X contains NaN or infinity (checked on the workers); "
                             "DPMixture needs finite data.")
        check_data_scale(np.array([top]), estimator="DPMixture")
        store.shift = np.array(mean, dtype=np.float64)
        self.n_features_in_ = D
        if hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        self._base_template = base
        self._train_moments = (n, mean, cov)
        self._X_train = None
        if self.init == "single":
            def start(rng, solver, base, alpha):
                return 0, alpha
        else:  # "auto" is the nested-subsample start for this solver
            start = functools.partial(self._store_start, store)
        self._run_chains(store, None, {"alpha": float(self.alpha)}, solver, start)
        self._chains = []  # the stores hold the client; labels_ keeps its futures
        self._solver = solver
        self._point = self._best_sample()
        self.labels_ = self._point["labels"]
        stats = self._point["statistics"]
        counts = stats["counts"]
        self.n_components_ = int(counts.shape[0])
        self.alpha_ = float(self._point["alpha"])
        self.weights_ = counts / (n + self.alpha_)
        self.means_ = np.asarray(self._point["params"]["means"], dtype=float).copy()
        self.covariances_ = self._covariances(self._point)
        return self

    def _store_start(self, store, rng, solver, base, alpha):
        """The nested-subsample start of a chain on a row store: the subsample chains in
        this process on at most 2**19 rows drawn from the workers, then every row drawn
        into their clusters on the workers
        (:func:`~sklearn_ibp.solvers.dp.nested_start.nested_subsample_start_on_store`)."""
        from ..solvers.dp.nested_start import nested_subsample_start_on_store

        return nested_subsample_start_on_store(solver, store, alpha, base, rng,
                                               update_options=self._update_options())

    def _n_train(self):
        return self._train_moments[0] if self._X_train is None else self._X_train.shape[0]

    def _sample_counts(self, sample):
        if "statistics" in sample:
            return sample["statistics"]["counts"]
        return np.bincount(sample["labels"])

    def _sample_statistics(self, sample):
        """The clusters' ``(counts, sums, scatters, shift)`` of a kept sample: those the
        sample kept (a fit on a dask.array), or from the training rows (about their
        mean)."""
        if "statistics" in sample:
            st = sample["statistics"]
            return st["counts"], st["sums"], st["scatters"], st["shift"]
        X = self._X_train
        labels = sample["labels"]
        K = int(labels.max()) + 1
        shift = X.mean(axis=0)
        centred = X - shift
        counts = np.bincount(labels, minlength=K)
        sums = np.stack([centred[labels == k].sum(axis=0) for k in range(K)])
        scatters = np.stack([centred[labels == k].T @ centred[labels == k]
                             for k in range(K)])
        return counts, sums, scatters, shift

    def _refuse_without_rows(self, what):
        if self._X_train is None:
            raise ValueError(
                f"{what} needs the training rows, which a fit on a dask.array does not "
                "keep (an n_samples x n_samples quantity).")

    def _check_n_features_cost(self, shape):
        """Refuse a fit whose per-cluster ``D x D`` matrices exceed the memory limit, and
        warn when ``D`` is large enough that a sweep takes seconds: each cluster holds
        ``D x D`` matrices (precision, Cholesky factor, scatter), and a sweep factorises
        and draws them at ``O(D**3)`` per cluster."""
        N, D = shape
        n_start = max(1, min(N, round(2 * self.alpha * np.log1p(N / self.alpha))))
        check_allocation(
            _MATRICES_PER_CLUSTER * 8.0 * D * D * (n_start + 1),
            what=(f"the {D} x {D} matrices of the {n_start} starting clusters (and one "
                  "proposed)"),
            advice=(f"reduce n_features={D} first (e.g. PCA in a Pipeline), or lower "
                    f"alpha ({self.alpha:g}), which sets the starting number of clusters"),
        )
        if D > _LARGE_N_FEATURES:
            warn_at_caller(
                f"DPMixture with n_features={D}: a sweep costs O(n_features**3) per cluster "
                "(a D x D Cholesky factor and Wishart draw each); one sweep took about 7.6 "
                "CPU s at n_features=1000 and 8 times that at 2000 (50 rows). Reduce the "
                "features first (e.g. PCA in a Pipeline), or pass verbose=1 to see progress.",
                UserWarning,
            )

    def _point_sample(self, X, base):
        """The point estimate of the partition, as a sample: its labels, the
        hyperparameters and ``alpha`` of the kept sample nearest to it, and parameters
        drawn given it (the best sample itself with ``point_estimate="best_sample"``)."""
        if self.point_estimate == "best_sample":
            return self._best_sample()
        labels, nearest = partition_point_estimate(
            [sample["labels"] for sample in self.samples_], loss=self.point_estimate
        )
        near = self.samples_[nearest]
        if np.array_equal(labels, relabel(near["labels"])[0]):
            return near
        point = {"labels": labels, "alpha": near["alpha"],
                 "hyperparameters": near["hyperparameters"],
                 "log_joint": np.nan, "chain": near["chain"]}
        sample_base = self._sample_base(point)
        K = int(labels.max()) + 1
        rng = np.random.default_rng([K, X.shape[0]])
        if getattr(sample_base, "conjugate", False):
            params = sample_base.sample_posterior_all(X, labels, K, rng)
        else:
            # a few Gibbs scans over the parameter blocks (mean given precision, precision
            # given mean), the first from precisions drawn from the base
            params = None
            for _ in range(_POINT_PARAMETER_SCANS):
                params = sample_base.sample_posterior_all(X, labels, K, rng, params)
        point["params"] = {k: np.asarray(v) for k, v in params.items()}
        return point

    def _starting_partition(self, X, rng, solver=None, base=None, alpha=None,
                            init="kmeans"):
        """A chain's starting partition and ``alpha``: one cluster (``init="single"``);
        over-segmented by k-means with about ``2 alpha log(1 + N / alpha)`` clusters
        (twice the CRP's expected number; samplers that move one row at a time merge
        surplus clusters easily, by emptying them, while opening a cluster that the data
        need can take many sweeps for the samplers that represent parameters); or from
        the solver's chains on nested subsamples of ``X`` (``init="subsample"``,
        :func:`~sklearn_ibp.solvers.dp.nested_start.nested_subsample_start`), the first
        from one cluster."""
        if init == "subsample":
            from ..solvers.dp.nested_start import nested_subsample_start

            return nested_subsample_start(
                solver, X, alpha, base, rng,
                lambda X_sub, rng: np.zeros(X_sub.shape[0], dtype=np.int64),
                update_options=self._update_options())
        n = X.shape[0]
        if init == "single":
            return np.zeros(n, dtype=np.int64), alpha
        n_start = int(np.clip(round(2 * self.alpha * np.log1p(n / self.alpha)), 1, n))
        n_start = min(n_start, np.unique(X, axis=0).shape[0])
        if n_start <= 1:
            return np.zeros(n, dtype=np.int64), alpha
        seed = int(rng.integers(np.iinfo(np.int32).max))
        labels = KMeans(n_clusters=n_start, n_init=1, random_state=seed).fit_predict(X)
        return relabel(labels)[0].astype(np.int64), alpha

    def _covariances(self, sample):
        params = sample["params"]
        if "covariances" in params:
            return np.asarray(params["covariances"], dtype=float).copy()
        return np.linalg.inv(np.asarray(params["precisions"], dtype=float))

    # -- hooks of the sampling loop -------------------------------------------------------
    def _initialize_chain(self, solver, X, hyper, init, rng):
        base = copy.deepcopy(self._base_template)
        if getattr(self, "_X_train", 0) is None:  # a fit on a dask.array: X is its store
            base.initialize_from_moments(*self._train_moments)
            X = X.copy()  # each chain its own labels on the same chunks
        else:
            base.initialize(X, rng)
        labels, alpha = init(rng, solver, base, hyper["alpha"])
        state = solver.initialize(X, labels, alpha, base, rng)
        state.base = base
        return state

    def _solver_context(self, state):
        # The base lives in the chain's state (each chain updates its own copy).
        return (state.base,)

    def _update_options(self):
        return {"sample_hyperparameters": self.sample_hyperparameters,
                "sample_alpha": self.sample_alpha}

    # -- predictions ----------------------------------------------------------------------
    def _sample_base(self, sample):
        base = copy.deepcopy(self._base_template)
        if self._X_train is None:
            base.initialize_from_moments(*self._train_moments)
        else:
            base.initialize(self._X_train, np.random.default_rng(0))
        base.set_hyperparameters(sample["hyperparameters"])
        return base

    def _cluster_log_densities(self, X, sample, base, from_statistics=None):
        """``log p(x | cluster k)`` for each row and cluster of a kept sample (n, K): the
        posterior predictive given the cluster's rows for a conjugate base (from the
        clusters' statistics after a fit on a dask.array, or with
        ``from_statistics=True``), the component density at the sample's parameters
        otherwise."""
        if from_statistics is None:
            from_statistics = self._X_train is None
        if getattr(base, "conjugate", False) and from_statistics:
            counts, sums, scatters, shift = self._sample_statistics(sample)
            return np.column_stack([
                base.log_predictive_from_sums(X, counts[k], sums[k], scatters[k], shift)
                for k in range(counts.shape[0])])
        if not getattr(base, "conjugate", False):
            return base.log_likelihood(X, sample["params"])
        labels = sample["labels"]
        K = int(labels.max()) + 1
        if getattr(base, "conjugate", False):
            return np.column_stack(
                [base.log_predictive(X, self._X_train[labels == k]) for k in range(K)]
            )
        return base.log_likelihood(X, sample["params"])

    def _check_new(self, X):
        check_is_fitted(self)
        return validate_data(self, X, dtype=np.float64, reset=False, order="C")

    def _map_dask(self, X, method):
        """``method`` (``"predict"``, ``"predict_proba"`` or ``"score_samples"``) of a
        ``dask.array`` ``X``, lazily: the same in-memory call on each chunk of rows (the
        columns joined into one chunk), a ``dask.array`` with ``X``'s row chunks. The
        rows are checked on the workers, chunk by chunk, as the in-memory call checks
        them (finite, numeric); the number of features is checked here. A dask array has
        no feature names, so a model fitted on a DataFrame warns as it does for a NumPy
        array (``X`` has no feature names)."""
        check_is_fitted(self)
        import dask
        import dask.array as da

        _check_dask_layout(X)
        if not np.isnan(X.shape[1]) and X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                f"{self.n_features_in_} features as input.")
        if getattr(self, "feature_names_in_", None) is not None:
            # what validate_data says of a NumPy array after a fit on a DataFrame
            validate_data(self, np.zeros((1, self.n_features_in_)), reset=False)
        X = X.rechunk({1: -1})
        model = dask.delayed(self._predictor(), pure=True, traverse=False)
        if method == "predict_proba":
            return da.map_blocks(_chunk_call, X, model, method, dtype=np.float64,
                                 chunks=(X.chunks[0], (self.n_components_,)))
        dtype = np.intp if method == "predict" else np.float64
        return da.map_blocks(_chunk_call, X, model, method, dtype=dtype,
                             chunks=(X.chunks[0],), drop_axis=1)

    def _predictor(self):
        """This model, or after a fit on a dask.array a copy without what lives on the
        workers (the samples' labels), to be sent to the workers."""
        if getattr(self, "_X_train", 0) is not None:
            return self
        light = copy.copy(self)
        light.__dict__.pop("labels_", None)
        light.samples_ = [{k: v for k, v in s.items() if k != "labels"}
                          for s in self.samples_]
        light._point = {k: v for k, v in self._point.items() if k != "labels"}
        return light

    def _log_resp(self, X):
        best = self._point
        base = self._sample_base(best)
        log_dens = self._cluster_log_densities(X, best, base)
        log_w = np.log(self.weights_)
        weighted = log_dens + log_w
        return weighted - logsumexp(weighted, axis=1, keepdims=True)

    def predict_proba(self, X):
        """Probability that each row belongs to each cluster of the point estimate.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_components)
            Rows sum to one over the existing clusters (a new cluster is not a label).
            A ``dask.array`` when ``X`` is one (computed chunk by chunk, lazily).
        """
        if _is_dask_array(X):
            return self._map_dask(X, "predict_proba")
        X = self._check_new(X)
        return np.exp(self._log_resp(X))

    def predict(self, X):
        """The most probable cluster of each row (see :meth:`predict_proba`).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        labels : ndarray of shape (n_samples,)
            A ``dask.array`` when ``X`` is one (computed chunk by chunk, lazily).
        """
        if _is_dask_array(X):
            return self._map_dask(X, "predict")
        return np.argmax(self.predict_proba(X), axis=1)

    def transform(self, X):
        """Cluster responsibilities, :meth:`predict_proba`, as features.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        responsibilities : ndarray of shape (n_samples, n_components)
            A ``dask.array`` when ``X`` is one (computed chunk by chunk, lazily).
        """
        return self.predict_proba(X)

    def score_samples(self, X):
        """Log posterior predictive density of each row, averaged over the kept samples.

        For each kept sample the predictive is
        ``sum_k n_k / (N + alpha) p(x | cluster k) + alpha / (N + alpha) p(x | new)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        log_density : ndarray of shape (n_samples,)
            A ``dask.array`` when ``X`` is one (computed chunk by chunk, lazily).
        """
        if _is_dask_array(X):
            return self._map_dask(X, "score_samples")
        return self._score_samples(self._check_new(X))

    def _score_samples(self, X):
        """:meth:`score_samples` of validated rows."""
        N = self._n_train()
        per_sample = []
        for sample in self.samples_:
            base = self._sample_base(sample)
            counts = self._sample_counts(sample)
            log_w = np.log(np.append(counts, sample["alpha"]) / (N + sample["alpha"]))
            log_dens = np.column_stack(
                [self._cluster_log_densities(X, sample, base), base.log_prior_predictive(X)]
            )
            per_sample.append(logsumexp(log_dens + log_w, axis=1))
        return logsumexp(np.array(per_sample), axis=0) - np.log(len(per_sample))

    def score(self, X, y=None):
        """Mean log posterior predictive density of the rows of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : Ignored

        Returns
        -------
        score : float
        """
        return float(np.mean(self.score_samples(X)))

    def leave_one_out_log_density(self):
        """Leave-one-out log predictive density of every training row, from one fit.

        ``p(x_i | X_{-i})`` is the harmonic mean over the kept samples of
        ``p(x_i | c_{-i}, X_{-i})`` (the conditional predictive ordinate): with weights
        ``1 / p(x_i | ...)`` the posterior given all rows becomes the posterior without row
        ``i``. This is the measure of Görür's (2007) Table 3.1 (sec. 3.3.3), without refitting
        ``N`` times.

        Returns
        -------
        log_density : ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        self._refuse_without_rows("leave_one_out_log_density")
        X = self._X_train
        N = X.shape[0]
        rows = np.arange(N)
        inverse = []
        for sample in self.samples_:
            base = self._sample_base(sample)
            labels = sample["labels"]
            alpha = sample["alpha"]
            counts = np.bincount(labels)
            K = counts.size
            log_dens = np.empty((N, K))
            if getattr(base, "conjugate", False):
                for k in range(K):
                    members = labels == k
                    X_k = X[members]
                    log_dens[~members, k] = base.log_predictive(X[~members], X_k)
                    idx = np.flatnonzero(members)
                    for j, i in enumerate(idx):  # row i left out of its own cluster
                        log_dens[i, k] = base.log_predictive(X[i : i + 1],
                                                             np.delete(X_k, j, axis=0))[0]
            else:
                log_dens[:] = base.log_likelihood(X, sample["params"])
            counts_minus = np.tile(counts.astype(float), (N, 1))
            counts_minus[rows, labels] -= 1.0
            with np.errstate(divide="ignore"):
                log_w = np.log(counts_minus) - np.log(N - 1 + alpha)
            log_new = np.log(alpha / (N - 1 + alpha)) + base.log_prior_predictive(X)
            log_p = logsumexp(np.column_stack([log_dens + log_w, log_new]), axis=1)
            inverse.append(-log_p)
        inverse = np.array(inverse)
        return -(logsumexp(inverse, axis=0) - np.log(inverse.shape[0]))

    @property
    def coassignment_(self):
        """Posterior probability that two training rows share a cluster, over the kept
        samples: an (n_samples, n_samples) matrix, computed when first read."""
        check_is_fitted(self)
        cached = getattr(self, "_coassignment", None)
        if cached is None:
            self._refuse_without_rows("coassignment_")
            N = self._X_train.shape[0]
            cached = np.zeros((N, N))
            for sample in self.samples_:
                labels = sample["labels"]
                cached += labels[:, None] == labels[None, :]
            cached /= len(self.samples_)
            self._coassignment = cached
        return cached

    def sample(self, n_samples=1, random_state=None):
        """Draw rows from the fitted mixture (the point estimate's clusters and weights).

        A row comes from cluster ``k`` with probability ``n_k / (N + alpha)`` and from a new
        cluster, with parameters drawn from the base, with probability
        ``alpha / (N + alpha)``.

        Parameters
        ----------
        n_samples : int, default=1
        random_state : int, RandomState, Generator or None

        Returns
        -------
        X : ndarray of shape (n_samples, n_features)
        labels : ndarray of shape (n_samples,)
            The cluster of each row; ``n_components_`` marks a new cluster.
        """
        check_is_fitted(self)
        if not isinstance(n_samples, Integral) or isinstance(n_samples, bool) or n_samples < 1:
            raise ValueError(f"n_samples must be a positive integer; got {n_samples!r}.")
        rng = as_random_source(random_state)
        gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(
            rng.randint(0, 2**31 - 1)
        )
        K = self.n_components_
        probs = np.append(self.weights_, 1.0 - self.weights_.sum())
        labels = gen.choice(K + 1, size=n_samples, p=probs / probs.sum())
        D = self.n_features_in_
        out = np.empty((n_samples, D))
        base = self._sample_base(self._point)
        for k in range(K + 1):
            rows = np.flatnonzero(labels == k)
            if rows.size == 0:
                continue
            if k < K:
                mean, cov = self.means_[k], self.covariances_[k]
                out[rows] = gen.multivariate_normal(mean, cov, size=rows.size)
            else:
                for r in rows:
                    params = base.sample_prior(1, gen)
                    cov = self._covariances({"params": params})[0]
                    out[r] = gen.multivariate_normal(params["means"][0], cov)
        return out, labels

    @property
    def _n_features_out(self):
        return self.n_components_


def _check_dask_layout(X):
    """Refuse a ``dask.array`` that is not 2-D or does not hold numbers (its values are
    checked on the workers)."""
    if X.ndim != 2:
        raise ValueError(
            f"X must be a 2-D dask array of shape (n_samples, n_features); got "
            f"{X.ndim} dimension(s).")
    if not (np.issubdtype(X.dtype, np.number) or np.issubdtype(X.dtype, np.bool_)):
        raise TypeError(f"X must hold numbers; got a dask array of dtype {X.dtype}.")


def _is_dask_array(X):
    """Whether ``X`` is a ``dask.array`` (without importing dask: if it is not imported,
    ``X`` is not one)."""
    module = sys.modules.get("dask.array")
    return module is not None and isinstance(X, module.Array)


def _chunk_call(chunk, model, method):
    """``model.method`` of one chunk of rows (a task of :meth:`DPMixture._map_dask`): the
    in-memory call, with its checks, on a NumPy array."""
    from sklearn.utils.validation import check_array

    chunk = check_array(chunk, dtype=np.float64, order="C")
    if method == "score_samples":
        return model._score_samples(chunk)
    proba = np.exp(model._log_resp(chunk))
    return proba if method == "predict_proba" else np.argmax(proba, axis=1)
