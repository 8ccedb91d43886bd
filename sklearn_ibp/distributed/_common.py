"""What the data-parallel solvers share: the tree summation of messages, padding of
per-feature arrays, the cloning and pickling rules of a solver that may hold a Dask
client and an engine, and the asynchronous operation of sec. 5.1."""

from __future__ import annotations

import copy
import time

import numpy as np

from ._engines import make_engine

__all__ = ["AsynchronousRoundsMixin", "DistributedSolverMixin", "map_message_ids",
           "pad_columns", "tree_sum"]


def tree_sum(values):
    """Sum ``values`` pairwise up a binary tree (leaves in order), as the messages of
    sec. 5.1 are summed on their way to the root; one value is returned as it is."""
    values = list(values)
    while len(values) > 1:
        paired = [values[i] + values[i + 1] for i in range(0, len(values) - 1, 2)]
        if len(values) % 2:
            paired.append(values[-1])
        values = paired
    return values[0]


def pad_columns(Z, K):
    """``Z`` with zero columns appended up to ``K``."""
    if Z.shape[1] == K:
        return Z
    out = np.zeros((Z.shape[0], K), dtype=Z.dtype)
    out[:, : Z.shape[1]] = Z
    return out


class DistributedSolverMixin:
    """The engine, cloning, copying and pickling of a data-parallel solver.

    A clone or a copy shares the user's ``client`` (a live connection cannot be copied) and
    never carries the engine (threads or a cluster of this fit); a copy keeps the fitted
    records listed in ``_records``. A pickled solver forgets its client and engine.
    """

    _records = ("timings_", "n_resent_", "acceptance_", "moved_")

    def _ensure_records(self) -> None:
        """The fitted records (``timings_``, ``n_resent_``), also on a solver that only
        continues a chain (``warm_start``) or was unpickled."""
        if not hasattr(self, "timings_"):
            self.timings_ = {"round": [], "compute": [], "root": []}
        if not hasattr(self, "n_resent_"):
            self.n_resent_ = 0

    def _placement(self, state):
        """The objects the rows on the shards come from: they are placed again when one
        of them is replaced (the solver gives ``_shard_data(state)``, one per shard)."""
        return (state.stats["data_version"],)

    def _engine_for(self, state):
        """The engine (threads or Dask), started on first use, with the state's rows on
        the shards."""
        engine = getattr(self, "_engine", None)
        if engine is None:
            engine = make_engine(self.backend, self.n_workers or self.n_shards, self.client,
                                 self.worker_timeout)
            self._engine = engine
            self._placed = None
        placed = self._placement(state)
        old = getattr(self, "_placed", None)
        if old is None or any(a is not b for a, b in zip(old, placed, strict=True)):
            engine.place(self._shard_data(state))
            self._placed = placed
        return engine

    def __sklearn_clone__(self):
        from sklearn.base import clone

        params = self.get_params(deep=False)
        client = params.pop("client")
        return type(self)(client=client, **{k: clone(v, safe=False) for k, v in params.items()})

    def __deepcopy__(self, memo):
        new = self.__sklearn_clone__()
        for name in self._records:
            if hasattr(self, name):
                setattr(new, name, copy.deepcopy(getattr(self, name), memo))
        return new

    def __getstate__(self):
        state = self.__dict__.copy()
        for name in ("_engine", "_placed", "_in_flight", "_flight_owner"):
            state.pop(name, None)
        # A Dask client is a live connection; a pickled solver forgets it.
        state["client"] = None
        return state


def map_message_ids(stats, sent_ids, counts):
    """Where a message's features go in the current numbering.

    The message has ``counts.size`` features (``counts`` its ``m_k^p``): the
    ``sent_ids`` it was sent with, then the ones its shard created, which get new ids here
    (``stats["next_id"]`` on). Returns ``(ids, where)``: the current ids with the new ones
    appended (to be stored as ``stats["ids"]``), and for each of the message's features
    its column in them, or -1 for a feature dropped while the shard was out (which the
    shard cannot have taken up: it was sent totals in which no row had it).
    """
    n_new = counts.size - sent_ids.size
    new_ids = np.arange(stats["next_id"], stats["next_id"] + n_new, dtype=np.int64)
    stats["next_id"] += n_new
    ids = np.concatenate([stats["ids"], new_ids])
    position = {int(i): j for j, i in enumerate(ids)}
    where = np.array([position.get(int(i), -1) for i in np.concatenate([sent_ids, new_ids])],
                     dtype=np.int64)
    assert not counts[where < 0].any()
    return ids, where


class AsynchronousRoundsMixin:
    """Asynchronous operation (Doshi-Velez 2009, sec. 5.1) of a data-parallel solver.

    No shard waits for the others: the root takes in each shard's message as it comes
    back (in shard order, so that a fit is reproducible bit for bit whatever the backend)
    and sends that shard straight on with the latest totals. One iteration takes in every
    shard's message once.

    Features carry global ids (``state.stats["ids"]``, ``"next_id"``) that are never
    reused: a shard's message comes back in the numbering it was sent with (plus the
    features it created, if it held a token), and the root maps it to the current one
    (:func:`map_message_ids`). A feature is dropped only when no shard has it and no
    shard in flight was sent totals in which it was alive (so none can take it up).

    The solver provides ``_engine_for(state)``, ``timings_``, ``n_resent_`` and the hooks
    ``_round_task(state, p, token) -> (function, args)`` (shard ``p``'s task, run as
    ``function(data_p, *args)``), ``_holds_token(state, p)``, ``_pass_token(state, p)``
    (a message sent with a token is in), ``_total_counts(state)`` (``m_k`` in the current
    numbering), ``_take_in(state, p, result, sent_ids)`` and ``_keep_features(state,
    keep)``; ``_after_asynchronous_round(state)`` is optional.
    """

    def close(self):
        """Cancel the shards in flight; shut down the threads, or the ``LocalCluster``
        this solver started."""
        engine = getattr(self, "_engine", None)
        if engine is not None:
            self._cancel_in_flight()
            engine.close()
            self._engine = None

    def _flight(self, state):
        """The shards in flight for ``state``; those another state (another chain, or
        the one an interrupt rolled back from) sent are cancelled."""
        if getattr(self, "_flight_owner", None) is not state:
            self._cancel_in_flight()
            self._flight_owner = state
        return self._in_flight

    def _cancel_in_flight(self):
        engine = getattr(self, "_engine", None)
        for task, *_ in getattr(self, "_in_flight", {}).values():
            if engine is not None:
                engine.cancel(task)
        self._in_flight = {}
        self._flight_owner = None

    def _submit(self, state, p):
        st = state.stats
        token = self._holds_token(state, p)
        function, args = self._round_task(state, p, token)
        task = self._engine_for(state).submit(p, function, args)
        self._in_flight[p] = (task, st["ids"].copy(), self._total_counts(state).copy(), token)

    def _after_asynchronous_round(self, state) -> None:
        """What the solver does once every shard's message is in (nothing by default)."""

    def _sweep_asynchronous(self, state) -> None:
        st = state.stats
        in_flight = self._flight(state)
        engine = self._engine_for(state)
        P = len(st["shards"])
        for p in range(P):
            if p not in in_flight:
                self._submit(state, p)
        start = time.perf_counter()
        waited = 0.0
        computed = []
        for p in range(P):
            task, sent_ids, _, token = in_flight.pop(p)
            before = time.perf_counter()
            resent = engine.n_resent
            result = engine.collect(task)
            waited += time.perf_counter() - before
            self.n_resent_ += engine.n_resent - resent
            self._take_in(state, p, result, sent_ids)
            if token:
                self._pass_token(state, p)
            self._drop_dead_features(state)
            self._submit(state, p)
            computed.append(result.compute_seconds)
        self._after_asynchronous_round(state)
        # One entry per iteration, as in the synchronous mode: the time the root waited
        # for messages, the slowest shard's computing, and the root's own work.
        self.timings_["round"].append(waited)
        self.timings_["compute"].append(max(computed))
        self.timings_["root"].append(time.perf_counter() - start - waited)

    def _drop_dead_features(self, state):
        st = state.stats
        dead = self._total_counts(state) == 0
        for _, sent_ids, sent_counts, _ in self._in_flight.values():
            dead &= ~np.isin(st["ids"], sent_ids[sent_counts > 0])
        if dead.any():
            self._keep_features(state, np.flatnonzero(~dead))
