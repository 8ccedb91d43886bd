"""Where the shards run: threads in this process, or the workers of a Dask cluster.

An engine holds each shard's rows where its tasks run (``place``) and runs one task per
shard (``map``), returning the results in shard order. Tasks are pure functions of the
root's last synchronised shard states, so an engine may run a task again: the Dask engine
does so when a worker dies, from the same state and the same random stream, which gives
the result the lost worker would have sent.
"""

from __future__ import annotations

import time
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor

from ..exceptions import WorkersLostError

__all__ = ["DaskEngine", "ThreadEngine", "WorkersLostError", "make_engine"]


class ThreadEngine:
    """Shards on a pool of threads of this process (the numba sweeps release the GIL)."""

    name = "threads"

    def __init__(self, n_workers):
        self.n_workers = int(n_workers)
        self.n_resent = 0
        self._pool = None
        self._data = []

    def place(self, data):
        self._data = list(data)

    def submit(self, p, function, args):
        """Start ``function(data_p, *args)`` on a thread; a handle for :meth:`collect`."""
        if self.n_workers == 1:
            done = Future()
            done.set_result(function(self._data[p], *args))
            return done
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.n_workers, thread_name_prefix="ibp-shard")
        return self._pool.submit(function, self._data[p], *args)

    def collect(self, task):
        return task.result()

    def cancel(self, task):
        task.cancel()

    def map(self, function, args_per_shard):
        """``[function(data_p, *args_p) for each shard p]``, the shards concurrently."""
        if len(args_per_shard) == 1:
            return [function(self._data[0], *args_per_shard[0])]
        tasks = [self.submit(p, function, args) for p, args in enumerate(args_per_shard)]
        return [self.collect(task) for task in tasks]

    def close(self):
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


def _loss_errors():
    """Exception types that mean a worker (or the data it held) was lost, not a bug."""
    from distributed import KilledWorker
    from distributed.comm import CommClosedError

    errors = [KilledWorker, CommClosedError, CancelledError, OSError]
    try:
        from distributed.client import FutureCancelledError, FuturesCancelledError

        errors += [FutureCancelledError, FuturesCancelledError]
    except ImportError:  # pragma: no cover - older distributed
        pass
    return tuple(errors)


class DaskEngine:
    """Shards on the workers of a ``distributed.Client``.

    Each shard's rows are scattered once; every round sends the shard's last synchronised
    state and the broadcast totals, and brings back its new state. A task that fails
    because its worker died (or the worker holding its rows did) is sent again, its rows
    re-scattered from the root's copy; when no worker is left for ``worker_timeout``
    seconds, :class:`WorkersLostError` is raised.

    Parameters
    ----------
    client : distributed.Client or None
        The cluster to use; None starts a ``LocalCluster`` of ``n_workers`` single-threaded
        worker processes, closed by :meth:`close`.
    n_workers : int
    worker_timeout : float
    max_resends : int
        How many times one shard's task may be sent again within one round.
    """

    name = "dask"

    def __init__(self, client, n_workers, worker_timeout=60.0, max_resends=10):
        try:
            import distributed
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(
                "backend='dask' needs the distributed scheduler: pip install "
                "'sklearn-ibp[distributed]' (or 'dask[distributed]')."
            ) from exc
        self._distributed = distributed
        self._cluster = None
        if client is None:
            self._cluster = distributed.LocalCluster(
                n_workers=int(n_workers), threads_per_worker=1, processes=True,
                dashboard_address=None,
            )
            client = distributed.Client(self._cluster)
        self.client = client
        self.worker_timeout = float(worker_timeout)
        self.max_resends = int(max_resends)
        self.n_resent = 0
        self._data = []
        self._handles = []

    def _scatter(self, data):
        """Scatter ``data`` to a worker, trying again while workers come and go."""
        deadline = time.monotonic() + self.worker_timeout
        while True:
            try:
                return self.client.scatter(data, hash=False, timeout=self.worker_timeout)
            except (TimeoutError, *_loss_errors()) as exc:
                if time.monotonic() > deadline:
                    raise WorkersLostError(
                        f"no Dask worker took a shard's rows within "
                        f"{self.worker_timeout:g} s ({exc!r}); the fit stops here."
                    ) from exc
                time.sleep(0.2)

    def place(self, data):
        self._data = list(data)
        self._handles = [self._scatter(d) for d in self._data]

    def _n_workers(self):
        return len(self.client.scheduler_info().get("workers", {}))

    def submit(self, p, function, args):
        """Start ``function(data_p, *args)`` on the cluster; a handle for :meth:`collect`."""
        future = self.client.submit(function, self._handles[p], *args, pure=False)
        return {"shard": p, "function": function, "args": args, "future": future}

    def collect(self, task):
        """The result of a task from :meth:`submit`, sending it again if it is lost."""
        distributed = self._distributed
        loss = _loss_errors()
        p = task["shard"]
        resends = 0
        no_worker_since = None
        while True:
            future = task["future"]
            try:
                distributed.wait([future], timeout=0.5)
            except (TimeoutError, *loss):
                pass  # lost, or not finished yet: look at it
            if future.status == "pending":
                if self._n_workers() == 0:
                    no_worker_since = no_worker_since or time.monotonic()
                    if time.monotonic() - no_worker_since > self.worker_timeout:
                        future.cancel()
                        raise WorkersLostError(
                            f"no Dask worker has been left for {self.worker_timeout:g} s "
                            f"to run shard {p}; the fit stops here."
                        )
                else:
                    no_worker_since = None
                continue
            if future.status == "finished":
                try:
                    return future.result()
                except loss:
                    pass  # finished, but its worker died before the result came
            else:
                error = future.exception() if future.status == "error" else None
                if error is not None and not isinstance(error, loss):
                    raise error
            resends += 1
            self.n_resent += 1
            if resends > self.max_resends:
                raise WorkersLostError(f"shard {p} was lost {resends} times; stopping.")
            # Its rows may have died with the worker: scatter them again.
            self._handles[p] = self._scatter(self._data[p])
            task["future"] = self.client.submit(task["function"], self._handles[p],
                                                *task["args"], pure=False)

    def cancel(self, task):
        task["future"].cancel()

    def map(self, function, args_per_shard):
        """``[function(data_p, *args_p) for each shard p]`` on the cluster."""
        tasks = [self.submit(p, function, args) for p, args in enumerate(args_per_shard)]
        return [self.collect(task) for task in tasks]

    def close(self):
        if self._cluster is not None:
            self.client.close()
            self._cluster.close()
            self._cluster = None


def make_engine(backend, n_workers, client=None, worker_timeout=60.0):
    """The engine for ``backend`` ('threads' or 'dask')."""
    if backend == "threads":
        return ThreadEngine(n_workers)
    return DaskEngine(client, n_workers, worker_timeout=worker_timeout)
