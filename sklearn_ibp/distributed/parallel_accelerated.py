"""Data-parallel accelerated Gibbs sampling by message passing (Doshi-Velez 2009, ch. 5).

The rows are split into shards, one per processor. A round (one iteration of the
estimator) has the three phases of sec. 5.1:

* **Gibbs sampling**: every shard runs ``sweeps_per_sync`` accelerated sweeps on its own
  rows given ``P^p(A | X, Z)``: the global feature posterior in which the other shards'
  rows are held at their last message, ``m_k^{-p}`` included;
* **message passing**: each shard sends its sufficient statistics (``m_k^p``,
  ``Z_p^T Z_p`` and ``Z_p^T X_p``, the information form of eq. 5.1, ``O(K^2 + K D)``),
  which are summed up a binary tree to the root; features no row has any more are dropped
  everywhere, and the totals are broadcast with the next round;
* **hyperparameter sampling** at the root, by the estimator's usual step, from the
  statistics the shards just sent: ``A`` from ``p(A | Z, X)`` (the summed information
  form), ``alpha`` from ``Gamma(1 + K, 1 + H_N)`` (``K`` from the summed counts),
  ``sigma_x`` from the squared residuals ``sum X^2 - 2 <A, Z^T X> + <A, Z^T Z A>`` and
  ``sigma_a`` from ``sum A^2``. The new values go to the shards with the next round's
  totals: no round trip of its own, and no work on the shards (their statistics do not
  depend on the hyperparameters, and each round rebuilds the feature posterior from the
  totals at the values it carries). An iteration is therefore the serial sampler's scan
  in the serial sampler's order, ``Z`` given the hyperparameters, then ``A``, ``alpha``,
  ``sigma_x`` and ``sigma_a`` each given the others (``A`` is drawn and forgotten), a
  valid Gibbs scan.

Only the shard holding the token may create features (it appends them after the global
ones, so feature ``k`` is the same feature on every shard); the token moves on to the next
shard at each round. The approximation is that a shard samples given the others' state at
the last synchronisation; Doshi-Velez (2009, sec. 5.2) reports that it behaves like the exact
sampler, with a slight bias toward fewer features from the latency of new features.
``correction="metropolis"`` runs that exact sampler instead (:mod:`._metropolis`).
"""

from __future__ import annotations

import copy
import time
from dataclasses import replace
from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from .._deprecation import class_aliases
from ..likelihoods.linear_gaussian import log_marginal_likelihood_from_stats
from ..solvers.ibp._base import BaseIBPSolver, FeatureState
from . import _metropolis
from ._common import (
    AsynchronousRoundsMixin,
    DistributedSolverMixin,
    map_message_ids,
    pad_columns,
    tree_sum,
)
from ._shard import (
    RoundMessage,
    ShardData,
    ShardState,
    exact_statistics,
    impute,
    residual_sum_of_squares,
    run_round,
    sweep_settings,
)

__all__ = ["ParallelAcceleratedIBP", "tree_sum"]


def _pad_to(array, K, square=False):
    """Per-feature ``array`` with zero features appended up to ``K`` (on both axes of a
    ``K x K`` statistic)."""
    if array.shape[0] == K:
        return array
    shape = (K, K) if square else (K,) + array.shape[1:]
    out = np.zeros(shape, dtype=array.dtype)
    out[tuple(slice(0, n) for n in array.shape)] = array
    return out


class ParallelAcceleratedIBP(AsynchronousRoundsMixin, DistributedSolverMixin, BaseIBPSolver):
    """Data-parallel accelerated Gibbs sampler (Doshi-Velez 2009, ch. 5), in-process or on Dask.

    Parameters
    ----------
    n_shards : int, default=2
        Number of blocks of rows sampled in parallel (processors ``p`` in Doshi-Velez 2009, ch. 5).
        One shard is the serial :class:`~sklearn_ibp.solvers.AcceleratedIBP` (same draws at
        the same seed, bit for bit, with ``sweeps_per_sync=1``).
    sweeps_per_sync : int, default=1
        Accelerated sweeps each shard runs between two synchronisations; one estimator
        iteration is one synchronisation. More sweeps mean less communication and more
        latency between shards (Doshi-Velez 2009 found 10 to 20 costing little mixing, Fig. 5.7).
    mode : {"synchronous", "asynchronous"}, default="synchronous"
        Synchronous: every shard waits for all the others at each synchronisation, and
        all start the next round from the same totals. Asynchronous (sec. 5.1,
        "Asynchronous Operation"): a shard's message is taken in as soon as it comes
        (in shard order, so the result is still reproducible) and the shard is sent on at
        once with the latest totals, in which the other shards are up to one round
        behind; nobody waits for the slowest shard or for the root's hyperparameter step,
        which uses the latest messages (the residuals from the summed statistics), and
        each shard redraws its own missing entries. One estimator iteration takes in
        every shard's message once.
    backend : {"threads", "dask"}, default="threads"
        Where the shards run: threads of this process (no extra dependency; the numba
        sweeps release the GIL) or the workers of a Dask cluster (install the
        ``distributed`` extra).
    client : distributed.Client or None, default=None
        The cluster for ``backend="dask"``; None starts a ``LocalCluster`` with one
        single-threaded worker process per shard (or ``n_workers``) for the fit.
    n_workers : int or None, default=None
        Threads (or local Dask workers) to run the shards on; None means one per shard.
    feature_subsample : float in (0, 1] or None, default=None
        Fraction of the features each shard Gibbs-samples in a sweep, chosen at random
        afresh every sweep (sec. 5.1's feature sub-sampling); None samples them all. New
        features are always offered.
    window : int, default=1
        Rows taken out of the feature posterior at a time (as in ``AcceleratedIBP``).
    refresh_every : int, default=100
        Windows between recomputations of a shard's feature posterior from its exact
        statistics.
    k_max : int, default=4
        Largest number of new features one row may take in one step.
    worker_timeout : float, default=60.0
        Seconds the Dask backend waits with no worker left before it stops the fit.
    correction : {"metropolis"} or None, default=None
        None: the approximate sampler above. ``"metropolis"``: the exact sampler of sec.
        5.2. Each round is then one Metropolis-Hastings step on labelled matrices of
        ``metropolis_max_features`` columns: every shard sweeps only ``metropolis_rows``
        of its rows, chosen at random, given the whole current ``Z`` with a seed drawn
        for the round; the result, with entries of those rows flipped with probability
        ``fuzz`` in the slots some other row uses and ``fuzz_free_slots`` more, is the
        proposal; the reverse proposal sweeps from the proposal with the same seed; the
        root accepts or rejects for all shards at once. The chain targets the exact
        posterior given ``K <= metropolis_max_features``. Two exchanges of messages per
        round; ``sweeps_per_sync`` sweeps of those rows per proposal; only synchronous
        ``mode``. On 1000 block images with 5 shards the defaults accept 0.30, 0.11 and
        0.03 of the proposals for 1, 5 and 10 rows per shard (Doshi-Velez 2009, Table 5.1: 0.11,
        0.012 and 0.006), but ``Z`` changes in only 1-3% of the rounds: a round changes
        at most ``metropolis_rows`` rows per shard, so this is for checking the
        approximate sampler, not for fitting.
    metropolis_rows : int, default=1
        Rows each shard may change in one proposal (1, 5 and 10 in Doshi-Velez 2009, Table 5.1).
    metropolis_max_features : int, default=30
        Column slots ``K_cap`` of the exact sampler's labelled matrix: the chain never
        has more features. A ``Z`` with more is refused when the exact sampler starts.
    fuzz : float in (0, 0.5] or "auto", default="auto"
        Probability that the proposal flips a fuzzed entry (eq. 5.4). ``"auto"``: one
        over the number of fuzzed entries of the round (one flip expected), at most 0.5.
    fuzz_free_slots : int >= 1 or None, default=2
        The fuzz touches, in the chosen rows, the slots that a row outside them uses and
        this many of the other slots (the lowest); None: all ``metropolis_max_features``
        slots, eq. 5.4 as Doshi-Velez (2009) writes it, where nearly every proposal switches on
        some empty slot. Both directions of a move fuzz the same slots, so the chain
        stays exact.
    correction_after : int, default=0
        With ``correction="metropolis"``: rounds of the approximate sampler a chain runs
        before the exact sampler takes over from its current ``Z`` (which must have at
        most ``metropolis_max_features`` features); set the estimator's ``burn_in`` to at
        least this to keep only the exact sampler's draws. Setting ``correction`` on a
        fitted model (``model.set_params(solver__correction="metropolis")``) and
        fitting again with ``warm_start=True`` switches the same way.

    Attributes
    ----------
    timings_ : dict
        Set on the solver of a fitted estimator (``estimator._solver``): per round, the
        wall-clock seconds of the sampling phase (``"round"``), the slowest shard's own
        computing time (``"compute"``), and the seconds of message summation and
        broadcast at the root (``"root"``). ``round - compute`` is the time spent
        communicating and waiting (sec. 5.4).

    n_resent_ : int
        Shard tasks sent again because their Dask worker (or the worker holding their rows)
        was lost.

    acceptance_ : list of bool
        With ``correction="metropolis"``: whether each round's proposal was accepted.
        ``moved_`` (list of bool) says whether the accepted proposal differed from the
        current ``Z`` (a proposal that changes nothing is always accepted).

    Notes
    -----
    Each shard keeps its own random stream, spawned from the chain's; a task is a pure
    function of the shard's last synchronised state, so a shard lost with its Dask worker
    is sent again from that state and the fit gives the same result as without the loss.
    If no worker is left, the fit stops as it would on an interrupt (the samples drawn so
    far are kept, with a warning that says why).
    """

    name = "parallel_accelerated"

    _parameter_constraints: dict = {
        "n_shards": [Interval(Integral, 1, None, closed="left")],
        "sweeps_per_sync": [Interval(Integral, 1, None, closed="left")],
        "mode": [StrOptions({"synchronous", "asynchronous"})],
        "backend": [StrOptions({"threads", "dask"})],
        "client": "no_validation",
        "n_workers": [Interval(Integral, 1, None, closed="left"), None],
        "feature_subsample": [Interval(Real, 0, 1, closed="right"), None],
        "window": [Interval(Integral, 1, None, closed="left")],
        "refresh_every": [Interval(Integral, 0, None, closed="left")],
        "k_max": [Interval(Integral, 1, None, closed="left")],
        "worker_timeout": [Interval(Real, 0, None, closed="neither")],
        "correction": [StrOptions({"metropolis"}), None],
        "metropolis_rows": [Interval(Integral, 1, None, closed="left")],
        "metropolis_max_features": [Interval(Integral, 1, None, closed="left")],
        "fuzz": [Interval(Real, 0, 0.5, closed="right"), StrOptions({"auto"})],
        "fuzz_free_slots": [Interval(Integral, 1, None, closed="left"), None],
        "correction_after": [Interval(Integral, 0, None, closed="left")],
    }

    def __init__(self, n_shards=2, sweeps_per_sync=1, mode="synchronous", backend="threads",
                 client=None, n_workers=None, feature_subsample=None, window=1,
                 refresh_every=100, k_max=4, worker_timeout=60.0, correction=None,
                 metropolis_rows=1, metropolis_max_features=30, fuzz="auto",
                 fuzz_free_slots=2, correction_after=0):
        self.n_shards = n_shards
        self.sweeps_per_sync = sweeps_per_sync
        self.mode = mode
        self.backend = backend
        self.client = client
        self.n_workers = n_workers
        self.feature_subsample = feature_subsample
        self.window = window
        self.refresh_every = refresh_every
        self.k_max = k_max
        self.worker_timeout = worker_timeout
        self.correction = correction
        self.metropolis_rows = metropolis_rows
        self.metropolis_max_features = metropolis_max_features
        self.fuzz = fuzz
        self.fuzz_free_slots = fuzz_free_slots
        self.correction_after = correction_after

    # -- the engine (DistributedSolverMixin._engine_for places _shard_data) ---------------
    @staticmethod
    def _shard_data(state):
        bounds = state.stats["bounds"]
        missing = state.stats["missing"]
        data = []
        for p in range(len(bounds) - 1):
            a, b = bounds[p], bounds[p + 1]
            idx = np.zeros(0, dtype=np.int64) if missing is None else missing[p]
            data.append(ShardData(X=state.X[a:b], missing=idx))
        return data

    # -- the solver interface --------------------------------------------------------------
    def initialize(self, X, Z, hyper, rng) -> FeatureState:
        N = X.shape[0]
        if self.correction == "metropolis" and self.mode == "asynchronous":
            raise ValueError(
                "correction='metropolis' needs mode='synchronous': every shard must wait "
                "for the root's accept/reject decision (Doshi-Velez 2009, sec. 5.2)."
            )
        if self.n_shards > N:
            raise ValueError(
                f"n_shards={self.n_shards} is more than the {N} rows of X; each shard needs "
                "at least one row."
            )
        state = self._new_state(X, Z, hyper, 0)
        K = Z.shape[1]
        state.Z = np.ascontiguousarray(Z, dtype=np.int8)
        bounds = np.linspace(0, N, self.n_shards + 1).round().astype(np.int64)
        if self.n_shards == 1 and self.mode == "synchronous":
            # Alone, the shard draws from the chain's own stream (the serial sampler).
            rngs = [None]
        else:
            rngs = [np.random.default_rng(int(s))
                    for s in rng.integers(0, np.iinfo(np.int64).max, size=self.n_shards)]
        shards = []
        for p in range(self.n_shards):
            a, b = bounds[p], bounds[p + 1]
            counts, gram, cross = exact_statistics(state.Z[a:b, :K], state.X[a:b])
            shards.append(ShardState(Z=state.Z[a:b, :K].copy(), counts=counts, gram=gram,
                                     cross=cross, rng=rngs[p], imputed=np.zeros(0)))
        state.stats.update(
            shards=shards,
            bounds=bounds,
            missing=None,
            token=0,
            refresh=True,
            data_version=object(),
            sum_of_squares=float(np.sum(state.X**2)),
            ids=np.arange(K, dtype=np.int64),
            next_id=K,
        )
        self._set_totals(state)
        self._ensure_records()
        state.stats["rounds"] = 0
        if self._exact_now(state):
            _metropolis.initialize(self, state)
        return state

    def _set_totals(self, state):
        shards = state.stats["shards"]
        K = max(s.Z.shape[1] for s in shards)
        state.stats["total"] = {
            key: tree_sum(_pad_to(getattr(s, key), K, square=key == "gram") for s in shards)
            for key in ("counts", "gram", "cross")
        }
        return K

    def _run(self, state, function, args_per_shard, rng):
        """Run ``function`` on every shard; a lone shard borrows the chain's stream."""
        shards = state.stats["shards"]
        alone = len(shards) == 1 and shards[0].rng is None
        if alone:
            args_per_shard = [(replace(args_per_shard[0][0], rng=rng),)
                              + tuple(args_per_shard[0][1:])]
        engine = self._engine_for(state)
        before = engine.n_resent
        results = engine.map(function, args_per_shard)
        self.n_resent_ += engine.n_resent - before
        if alone and isinstance(results[0], ShardState):
            rng.bit_generator.state = results[0].rng.bit_generator.state
            results[0] = replace(results[0], rng=None)
        return results

    def _message(self, state, *, impute=False) -> RoundMessage:
        st = state.stats
        total = st["total"]
        # A shard that redraws its own missing entries (asynchronous mode) recomputes its
        # statistics from its rows every round; without missing entries nothing it keeps
        # is stale.
        refresh = bool(st["refresh"]) or (impute and st["missing"] is not None)
        return RoundMessage(
            counts=total["counts"], gram=total["gram"], cross=total["cross"],
            **sweep_settings(self, state),
            refresh=refresh, alone=len(st["shards"]) == 1 and not impute,
            impute=impute,
        )

    def _ensure_records(self) -> None:
        """The fitted records (``timings_``, ``n_resent_``; ``acceptance_`` and ``moved_``
        of the exact sampler), also on a solver that only continues a chain
        (``warm_start``) or was unpickled."""
        super()._ensure_records()
        if self.correction == "metropolis" and not hasattr(self, "acceptance_"):
            self.acceptance_ = []
            self.moved_ = []

    def _exact_now(self, state) -> bool:
        """Whether the chain's next round is the exact sampler's: ``correction=
        "metropolis"`` and the chain has run ``correction_after`` rounds."""
        return (self.correction == "metropolis"
                and state.stats.get("rounds", 0) >= self.correction_after)

    def _switch_sampler(self, state) -> None:
        """Hand the chain's current ``Z`` from one sampler to the other when the
        correction starts (``correction_after`` rounds done, or ``correction`` set on a
        fitted solver that a ``warm_start`` fit continues) or stops."""
        st = state.stats
        if self._exact_now(state) and "mh" not in st:
            if self.mode == "asynchronous":
                raise ValueError(
                    "correction='metropolis' needs mode='synchronous': every shard must "
                    "wait for the root's accept/reject decision (Doshi-Velez 2009, sec. 5.2)."
                )
            _metropolis.initialize(self, state)
        elif not self._exact_now(state) and "mh" in st:
            # Back to the approximate sampler: the shards hold the live columns and their
            # exact statistics; the feature posteriors are recomputed at the next round.
            del st["mh"]
            K = state.n_features
            st.update(refresh=True, ids=np.arange(K, dtype=np.int64), next_id=K)

    def sweep(self, state: FeatureState, rng) -> None:
        self._ensure_records()
        self._switch_sampler(state)
        state.stats["rounds"] = state.stats.get("rounds", 0) + 1
        if "mh" in state.stats:
            return _metropolis.metropolis_round(self, state, rng)
        if self.mode == "asynchronous":
            return self._sweep_asynchronous(state)
        st = state.stats
        shards = st["shards"]
        message = self._message(state)
        start = time.perf_counter()
        new = self._run(state, run_round,
                        [(s, message, p == st["token"]) for p, s in enumerate(shards)], rng)
        sampled = time.perf_counter()
        # Align: only the token holder may have appended features.
        K = max(s.Z.shape[1] for s in new)
        shards = [
            replace(s, Z=pad_columns(s.Z, K), counts=_pad_to(s.counts, K),
                    gram=_pad_to(s.gram, K, square=True), cross=_pad_to(s.cross, K))
            for s in new
        ]
        st["shards"] = shards
        self._set_totals(state)
        keep = np.flatnonzero(st["total"]["counts"] > 0)
        if keep.size < K:
            st["shards"] = [self._compact_shard(s, keep) for s in shards]
            self._set_totals(state)
        st["token"] = (st["token"] + 1) % len(shards)
        st["refresh"] = False
        state.Z = np.concatenate([s.Z for s in st["shards"]], axis=0)
        state.n_features = int(state.Z.shape[1])
        done = time.perf_counter()
        self.timings_["round"].append(sampled - start)
        self.timings_["compute"].append(max(s.compute_seconds for s in new))
        self.timings_["root"].append(done - sampled)

    @staticmethod
    def _compact_shard(shard, keep):
        return replace(
            shard,
            Z=np.ascontiguousarray(shard.Z[:, keep]),
            counts=shard.counts[keep],
            gram=shard.gram[np.ix_(keep, keep)],
            cross=shard.cross[keep],
            cov=None if shard.cov is None else shard.cov[np.ix_(keep, keep)],
            mean=None if shard.mean is None else shard.mean[keep],
        )

    # -- asynchronous operation ------------------------------------------------------------
    # (AsynchronousRoundsMixin's hooks.)
    def _round_task(self, state, p, token):
        return run_round, (state.stats["shards"][p], self._message(state, impute=True), token)

    @staticmethod
    def _holds_token(state, p):
        return state.stats["token"] == p

    @staticmethod
    def _pass_token(state, p):
        state.stats["token"] = (p + 1) % len(state.stats["shards"])

    @staticmethod
    def _total_counts(state):
        return state.stats["total"]["counts"]

    def _after_asynchronous_round(self, state) -> None:
        st = state.stats
        st["refresh"] = False
        # The chain's state: the features some row has (a feature nobody has may be kept
        # for a shard in flight, but it is not part of Z).
        live = st["total"]["counts"] > 0
        state.Z = np.concatenate([s.Z for s in st["shards"]], axis=0)[:, live]
        state.n_features = int(state.Z.shape[1])

    def _take_in(self, state, p, result, sent_ids):
        """Put shard ``p``'s message into the current numbering and the totals."""
        st = state.stats
        ids, where = map_message_ids(st, sent_ids, result.counts)
        kept = where >= 0
        K = ids.size
        cols, src = where[kept], np.flatnonzero(kept)
        Z = np.zeros((result.Z.shape[0], K), dtype=np.int8)
        Z[:, cols] = result.Z[:, src]
        counts = np.zeros(K, dtype=np.int64)
        counts[cols] = result.counts[src]
        gram = np.zeros((K, K))
        gram[np.ix_(cols, cols)] = result.gram[np.ix_(src, src)]
        cross = np.zeros((K, result.cross.shape[1]))
        cross[cols] = result.cross[src]
        shards = [replace(s, Z=pad_columns(s.Z, K), counts=_pad_to(s.counts, K),
                          gram=_pad_to(s.gram, K, square=True), cross=_pad_to(s.cross, K))
                  for s in st["shards"]]
        missing = st["missing"]
        fresh = missing is not None and result.imputed.size == missing[p].size > 0
        # A shard sent out before the missing entries were known keeps the root's values.
        imputed = result.imputed if fresh else st["shards"][p].imputed
        shards[p] = replace(result, Z=Z, counts=counts, gram=gram, cross=cross,
                            imputed=imputed)
        st["shards"] = shards
        st["ids"] = ids
        if fresh:
            bounds = st["bounds"]
            X = state.X.copy()
            X[bounds[p]:bounds[p + 1]].flat[st["missing"][p]] = result.imputed
            state.X = X
            st["sum_of_squares"] = float(np.sum(X**2))
        self._set_totals(state)

    def _keep_features(self, state, keep):
        st = state.stats
        st["shards"] = [self._compact_shard(s, keep) for s in st["shards"]]
        st["ids"] = st["ids"][keep]
        self._set_totals(state)

    @staticmethod
    def checkpoint(state):
        """A copy of ``state`` for the loop's interrupt rollback: a round replaces the
        state's arrays and records and never writes into them, so copying the record, its
        ``stats`` mapping and the mappings in it is enough (no copy of the data)."""
        saved = copy.copy(state)
        saved.stats = {key: dict(value) if isinstance(value, dict) else value
                       for key, value in state.stats.items()}
        return saved

    def sufficient_statistics(self, state):
        """``(Z^T Z, Z^T X)`` summed over the shards, over the features some row has."""
        total = state.stats["total"]
        live = np.flatnonzero(total["counts"] > 0)
        if live.size == total["counts"].size:
            return total["gram"].copy(), total["cross"].copy()
        return total["gram"][np.ix_(live, live)], total["cross"][live]

    def log_likelihood(self, state) -> float:
        gram, cross = self.sufficient_statistics(state)
        N, D = state.X.shape
        return log_marginal_likelihood_from_stats(
            gram, cross, state.stats["sum_of_squares"], N, D, state.sigma_x, state.sigma_a
        )

    def residual_sum_of_squares(self, state, A) -> float:
        """``sum (X - Z A)^2``: with several shards (or asynchronously) from the summed
        statistics, ``sum X^2 - 2 <A, Z^T X> + <A, Z^T Z A>``, at the root without a
        round trip (Doshi-Velez's (2009) "computed in a distributed fashion"); a lone synchronous
        shard sums its residuals directly, as the serial sampler does."""
        if self.mode == "asynchronous" or len(state.stats["shards"]) > 1:
            gram, cross = self.sufficient_statistics(state)
            rss = (state.stats["sum_of_squares"] - 2.0 * np.sum(A * cross)
                   + np.sum(A * (gram @ A)))
            return max(float(rss), 0.0)
        values = self._run(state, residual_sum_of_squares,
                           [(s, A) for s in state.stats["shards"]], None)
        return tree_sum(values)

    def impute_missing(self, state, A, missing, rng) -> None:
        """Each shard redraws its missing entries given ``A`` from its own stream."""
        st = state.stats
        bounds = st["bounds"]
        if st["missing"] is None:
            st["missing"] = [np.flatnonzero(missing[bounds[p]:bounds[p + 1]])
                             for p in range(len(bounds) - 1)]
            st["shards"] = [replace(s, imputed=state.X[bounds[p]:bounds[p + 1]].flat[idx])
                            for p, (s, idx) in enumerate(zip(st["shards"], st["missing"],
                                                             strict=True))]
            st["data_version"] = object()
            if self.mode == "asynchronous":
                # Shards already out keep their old rows; the next ones go with these.
                self._engine_for(state)
        if self.mode == "asynchronous":
            return  # each shard redraws its own missing entries (see _sweep_asynchronous)
        new = self._run(state, impute, [(s, A, state.sigma_x) for s in st["shards"]], rng)
        X = state.X.copy()
        for p, s in enumerate(new):
            X[bounds[p]:bounds[p + 1]].flat[st["missing"][p]] = s.imputed
        st["shards"] = new
        state.X = X
        st["sum_of_squares"] = float(np.sum(X**2))
        self._mark_refresh(state)

    def set_hyperparameters(self, state, alpha, sigma_x, sigma_a) -> None:
        """Take the root's new hyperparameters; they go to the shards with the next round.

        The shards' statistics (``m_k^p``, ``Z_p^T Z_p``, ``Z_p^T X_p``) do not depend on
        the hyperparameters, and with several shards every round rebuilds the feature
        posterior from the broadcast totals at the hyperparameters it carries, so nothing
        else is recomputed: the update costs the shards no work and no round trip. A lone
        synchronous shard carries its posterior from round to round, and recomputes it
        here, as the serial sampler's refresh does (bit for bit the same draws).
        """
        state.alpha, state.sigma_x, state.sigma_a = float(alpha), float(sigma_x), float(sigma_a)
        if len(state.stats["shards"]) == 1 and self.mode == "synchronous":
            self._mark_refresh(state)

    def _mark_refresh(self, state) -> None:
        """Have every shard recompute its exact statistics at the next round. A lone
        shard's are recomputed here at once, as the serial sampler's refresh does (its
        log-likelihood trace then matches bit for bit); with several shards the root
        keeps the last messages until then."""
        st = state.stats
        st["refresh"] = True
        if len(st["shards"]) == 1:
            shard = st["shards"][0]
            counts, gram, cross = exact_statistics(shard.Z, state.X)
            st["shards"] = [replace(shard, counts=counts, gram=gram, cross=cross)]
            self._set_totals(state)

    def set_data(self, state, X) -> None:
        st = state.stats
        state.X = np.ascontiguousarray(X, dtype=float)
        bounds = st["bounds"]
        if st["missing"] is not None:
            st["shards"] = [replace(s, imputed=state.X[bounds[p]:bounds[p + 1]].flat[idx])
                            for p, (s, idx) in enumerate(zip(st["shards"], st["missing"],
                                                             strict=True))]
        st["data_version"] = object()
        st["sum_of_squares"] = float(np.sum(state.X**2))
        self._mark_refresh(state)

#: Old class names (before issue 21), importable with a FutureWarning naming the new one.
__getattr__ = class_aliases(__name__)
