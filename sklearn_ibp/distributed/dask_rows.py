"""A Dask row store: the rows of a DP mixture and their labels on the workers of a Dask
cluster, for the sub-cluster sampler (:mod:`sklearn_ibp.solvers.dp.dp_subcluster`) on
data larger than one process's memory (issue 24).

Every pass of the sub-cluster sampler over rows is an ``assign_blocks`` pass over fixed
blocks of ``block_size`` positions, with counter-based uniforms ``row_uniform(key, r)`` of
the global row ``r``, whose per-block statistics the driver combines in block order. The
store runs the same passes chunk by chunk on the workers and combines the blocks' statistics
here, in block order, so each operation below returns the bits of the in-memory call of
the driver it names (the tests hold them against each other, on a ``LocalCluster`` of
threads and of processes, for several chunkings).

What lives where
----------------
* ``X``: a ``dask.array`` rechunked to row chunks of a multiple of ``block_size`` rows (the
  last may be shorter) and one column chunk, computed once onto the workers (one future per
  chunk). Row ``r`` of chunk ``c`` is global row ``starts[c] + r``.
* The labels: one future per chunk (an int64 array of the chunk's rows), on the workers.
  Each operation that changes them makes new futures; the old ones are released.
* Here (the root): the futures, the chunk bounds, and small arrays (the clusters'
  statistics, the per-block statistics of a pass, a few rows).

Operations
----------
* :meth:`DaskRows.statistics` -- the counts, sums and scatters of the current labels (the
  driver's ``_recompute``: a ``STATS_ONLY`` pass over all rows).
* :meth:`DaskRows.lowest_log_slice` and :meth:`DaskRows.row_step` -- the row step: each
  chunk's lowest log slice (the root takes the minimum, as ``lows.min()``), then the
  ``SAMPLE`` pass with the slice arguments; the new labels stay on the workers, the
  per-block statistics come back.
* :meth:`DaskRows.select` -- a :class:`MemberRows`: the rows whose label is in a given
  set, except given rows, in row order (the driver's ``pair_members``), held per chunk on
  the workers as (local rows, ``current``: the position of the row's label in the set).
  :meth:`MemberRows.run` is one ``assign_blocks`` pass over them (``SAMPLE``, ``ARGMAX``,
  ``SCORE_FORCED`` or ``STATS_ONLY``), optionally after a few *lead* rows given here (the
  driver's union pass puts the anchors ``i, j`` first): the members take positions
  ``n_lead, n_lead + 1, ..`` in row order and the blocks are blocks of positions, as in
  the driver's ``_pass(X, shift, members, m, ...)``. Its output (a side per member) stays
  on the workers as :attr:`MemberRows.last`, which the next pass may take as its
  ``forced`` input (``forced="last"``; ``"current"`` for the sides of the labels). A
  staged proposal calls :meth:`MemberRows.run` once per stage with the components that
  stage drew; each call costs one round of tasks and returns only the statistics.
  A block of positions that straddles chunks (or the lead rows) is computed in a task of its
  own from the rows gathered out of those chunks (at most ``block_size`` rows per block),
  so every block's statistics are summed in position order as in the driver.
* :meth:`MemberRows.assign` and :meth:`DaskRows.set_rows` -- apply an accepted split or
  merge: the members whose (last or current) side is ``t`` take label ``mapping[t]``
  (``-1`` keeps theirs), and single rows (the anchors) take given labels.
  :meth:`DaskRows.relabel` applies a small lookup table to every label (dropping empty
  clusters).
* :meth:`MemberRows.stages` -- the members split by the stages of the staged allocation
  (``member_stages`` of their global rows, on the workers): one :class:`MemberRows` per
  stage, whose :meth:`MemberRows.run` is the driver's pass of that stage;
  :meth:`MemberRows.finish` collects the sides a ``SAMPLE`` allocation drew into
  :attr:`MemberRows.last` of all the members.
* :meth:`DaskRows.anchor_norms` and :meth:`DaskRows.anchor_pick` -- the anchors' centrality
  by blocks of global rows (:mod:`sklearn_ibp.solvers.dp._dp_subcluster_rows`): each chunk
  its blocks' tops and masses, the root their combination and the pick's block, the chunk
  of that block the row.
* :meth:`DaskRows.moments` -- the rows' number, column means and covariance, finiteness
  and largest absolute value (one task per chunk): the checks and the base's start of
  ``DPMixture.fit`` on a ``dask.array``.
* :meth:`DaskRows.labels` (a ``dask.array`` of the final labels, no data moved),
  :meth:`DaskRows.gather_labels` (to here; for small ``N``), :meth:`DaskRows.rows` and
  :meth:`DaskRows.labels_at` (a few rows or labels, e.g. the anchors), and
  :meth:`DaskRows.nth_row` (the driver's ``nth_row``: the partner row of a split).

Faults
------
Every task is a pure function of futures the scheduler knows how to compute (the chunks of
``X`` from the dask graph, each label future from the previous one and the root's small
arguments; starting labels are task arguments, not scattered data), so when a worker dies
the scheduler computes what it held again from that lineage, the same bits: the numba
kernels are deterministic and the random numbers are a function of the keys the root
passed (a test kills a worker between row steps and gets the bits of an undisturbed run).
The cost of a lost label future is the chain of passes that made it, since the store
started (nothing is checkpointed); a worker lost for good with no worker left stalls the
operation (distributed's own timeouts apply), unlike
:class:`~sklearn_ibp.distributed._engines.DaskEngine`, which raises
:class:`WorkersLostError`.

Threads: each task runs the kernels on ``n_threads`` numba threads (1 by default: one
task per worker thread); the bits do not depend on it.
"""

from __future__ import annotations

import operator
from numbers import Integral

import numba
import numpy as np

from ..solvers.dp._dp_subcluster_kernels import (
    SAMPLE,
    SCORE_FORCED,
    STATS_ONLY,
    assign_blocks,
    centrality,
    lowest_log_slices,
    member_stages,
)
from ..solvers.dp._dp_subcluster_rows import (
    anchor_parts,
    choose_segment,
    combine_norms,
    n_stages_of,
    pick_in_segment,
    segment_masses,
)

__all__ = ["DaskRows", "MemberRows"]

_EMPTY_INT = np.zeros(0, dtype=np.int64)
_EMPTY_FLOAT = np.zeros(0)


# ---------------------------------------------------------------------- worker tasks
def _own(a, dtype):
    """``a`` as a C-contiguous, writeable array of ``dtype`` (an array that came over the
    wire may be read-only; the kernels are compiled for writeable arrays only)."""
    a = np.ascontiguousarray(a, dtype=dtype)
    return a if a.flags.writeable else a.copy()


class _Threads:
    def __init__(self, n):
        self.n = max(1, min(int(n), numba.config.NUMBA_NUM_THREADS))

    def __enter__(self):
        self.before = numba.get_num_threads()
        numba.set_num_threads(self.n)

    def __exit__(self, *exc):
        numba.set_num_threads(self.before)


def _block_arrays(n, C, D, block_size):
    n_blocks = max(1, -(-int(n) // int(block_size)))
    return (np.zeros((n_blocks, C), dtype=np.int64), np.zeros((n_blocks, C, D)),
            np.zeros((n_blocks, C, D, D)), np.zeros(n_blocks))


def _run(X, shift, index, ids, row_offset, n, comps, key, forced, mode, old_labels, log_pi,
         slice_key, C, block_size, n_threads):
    """One :func:`assign_blocks` call; ``(out, per-block statistics)``."""
    means, chols, log_consts = comps
    D = X.shape[1]
    blocks = _block_arrays(n, C, D, block_size)
    out = np.empty(int(n), dtype=np.int64)
    with _Threads(n_threads):
        assign_blocks(X, _own(shift, np.float64), index, ids, np.int64(row_offset),
                      np.int64(n), _own(means, np.float64), _own(chols, np.float64),
                      _own(log_consts, np.float64), np.uint64(key), forced, mode, old_labels,
                      _own(log_pi, np.float64), np.uint64(slice_key), out,
                      np.int64(block_size), *blocks)
    return out, blocks


def _to_chunk(x):
    return _own(x, np.float64)


def _full_labels(n, value):
    return np.full(int(n), int(value), dtype=np.int64)


def _chunk_stats(x, labels, shift, D, C, block_size, n_threads):
    labels = _own(labels, np.int64)
    comps = (np.zeros((1, D)), np.zeros((1, D, D)), np.zeros(1))
    return _run(_own(x, np.float64), shift, _EMPTY_INT, _EMPTY_INT, 0, x.shape[0], comps, 0,
                labels, STATS_ONLY, _EMPTY_INT, _EMPTY_FLOAT, 0, C, block_size,
                n_threads)[1]


def _chunk_lowest(labels, start, log_pi, slice_key, block_size, n_threads):
    labels = _own(labels, np.int64)
    lows = np.empty(max(1, -(-labels.shape[0] // int(block_size))))
    with _Threads(n_threads):
        lowest_log_slices(labels, np.int64(start), _own(log_pi, np.float64),
                          np.uint64(slice_key), np.int64(block_size), lows)
    return float(lows.min())


def _chunk_row_step(x, labels, start, shift, comps, key, log_pi, slice_key, C, block_size,
                    n_threads):
    return _run(_own(x, np.float64), shift, _EMPTY_INT, _EMPTY_INT, start, x.shape[0], comps,
                key, _EMPTY_INT, SAMPLE, _own(labels, np.int64), log_pi, slice_key, C,
                block_size, n_threads)


def _chunk_select(labels, label_set, exclude):
    """The chunk's rows whose label is in ``label_set`` (in row order) except the local
    rows ``exclude``, and the position in ``label_set`` of each one's label."""
    labels = np.asarray(labels)
    current = np.full(labels.shape[0], -1, dtype=np.int64)
    for t in range(len(label_set) - 1, -1, -1):  # the first match wins
        current[labels == label_set[t]] = t
    if len(exclude):
        current[np.asarray(exclude, dtype=np.int64)] = -1
    rows = np.flatnonzero(current >= 0).astype(np.int64)
    return rows, current[rows]


def _member_body(x, members, forced, lo, hi, start, shift, comps, key, mode, C, block_size,
                 n_threads):
    rows = members[0]
    index = _own(rows[lo:hi], np.int64)
    forced = _EMPTY_INT if forced is None else _own(forced[lo:hi], np.int64)
    return _run(_own(x, np.float64), shift, index, _EMPTY_INT, start, hi - lo, comps, key,
                forced, mode, _EMPTY_INT, _EMPTY_FLOAT, 0, C, block_size, n_threads)


def _member_piece(x, members, forced, lo, hi, start):
    """Positions ``lo .. hi`` of a chunk's members: their rows, global rows and forced
    values, for the task of a block that straddles chunks."""
    rows = members[0][lo:hi]
    return (np.array(x[rows], dtype=np.float64), rows + int(start),
            None if forced is None else np.array(forced[lo:hi], dtype=np.int64))


def _straddle(shift, comps, key, mode, C, block_size, n_threads, *pieces):
    """One block of positions assembled from pieces of several chunks (and lead rows)."""
    X = np.concatenate([p[0] for p in pieces]).reshape(-1, pieces[0][0].shape[1])
    ids = np.concatenate([p[1] for p in pieces]).astype(np.int64)
    forced = (_EMPTY_INT if pieces[0][2] is None
              else np.concatenate([p[2] for p in pieces]).astype(np.int64))
    return _run(_own(X, np.float64), shift, _EMPTY_INT, ids, 0, X.shape[0], comps, key,
                forced, mode, _EMPTY_INT, _EMPTY_FLOAT, 0, C, block_size, n_threads)


def _concat_slices(bounds, *arrays):
    parts = [np.asarray(a)[lo:hi] for a, (lo, hi) in zip(arrays, bounds, strict=True)]
    return np.concatenate(parts).astype(np.int64) if parts else _EMPTY_INT.copy()


def _assign_members(labels, members, sides, mapping):
    labels = np.array(labels, dtype=np.int64)  # a new array: the old future stays valid
    rows = members[0]
    mapping = np.asarray(mapping, dtype=np.int64)
    new = mapping[np.asarray(sides, dtype=np.int64)]
    keep = new >= 0
    labels[rows[keep]] = new[keep]
    return labels


def _set_rows(labels, rows, values):
    labels = np.array(labels, dtype=np.int64)
    labels[np.asarray(rows, dtype=np.int64)] = values
    return labels


def _lookup(labels, table):
    return np.asarray(table, dtype=np.int64)[labels]


def _count_label(labels, k, skip):
    found = np.asarray(labels) == k
    if skip >= 0:
        found[skip] = False
    return int(found.sum())


def _nth_of_label(labels, k, rank, skip):
    found = np.asarray(labels) == k
    if skip >= 0:
        found[skip] = False
    return int(np.flatnonzero(found)[rank])


def _count_members(members):
    return int(members[0].shape[0])


def _chunk_moments(x):
    """The chunk's rows, column means and covariance (NumPy's, as ``X.mean(axis=0)`` and
    ``np.cov`` of an array in memory), whether every entry is finite, and the largest
    absolute value."""
    x = np.asarray(x)
    n = x.shape[0]
    finite = bool(np.isfinite(x).all())
    if not finite or n == 0:
        return n, None, None, finite, 0.0
    mean = x.mean(axis=0)
    cov = np.atleast_2d(np.cov(x, rowvar=False)) if n >= 2 else None
    return n, mean, cov, finite, float(np.max(np.abs(x)))


def _chunk_stages(members, start, key, m, n_stages):
    """The chunk's members split by stage (:func:`member_stages` of their global rows among
    ``m`` members): per stage ``(rows, current, position among the chunk's members)``, and
    the stages' sizes."""
    rows = np.asarray(members[0], dtype=np.int64)
    stage = np.empty(rows.shape[0], dtype=np.int64)
    member_stages(np.uint64(key), _own(rows + int(start), np.int64), np.int64(m),
                  np.int64(n_stages), stage)
    positions = np.arange(rows.shape[0], dtype=np.int64)
    parts = tuple((rows[stage == t], np.asarray(members[1])[stage == t],
                   positions[stage == t]) for t in range(int(n_stages)))
    return parts, np.bincount(stage, minlength=int(n_stages)).astype(np.int64)


def _stage_part(split, t):
    return split[0][t]


def _collect_sides(n, *pairs):
    """A chunk's members' sides from its stages' (members, sides) pairs."""
    sides = np.zeros(int(n), dtype=np.int64)
    for members, last in pairs:
        sides[members[2]] = np.asarray(last, dtype=np.int64)
    return sides


def _chunk_anchor(x, members, sides, start, block_size, means, chols, n_sides, lead):
    rows = _own(members[0], np.int64)
    sides = _own(members[1] if sides is None else sides, np.int64)
    return anchor_parts(_own(x, np.float64), rows, sides, rows + int(start), int(block_size),
                        means, chols, int(n_sides), lead)


def _chunk_masses(w, members, start, block_size, norm, t):
    rows = np.asarray(members[0], dtype=np.int64)
    return segment_masses(w, np.asarray(members[1]), rows + int(start), int(block_size),
                          norm, int(t))


def _chunk_pick(w, members, start, block_size, norm, t, segment, u):
    rows = np.asarray(members[0], dtype=np.int64)
    p, value = pick_in_segment(w, np.asarray(members[1]), rows + int(start),
                               int(block_size), norm, int(t), int(segment), u)
    return int(rows[p]) + int(start), value


# ---------------------------------------------------------------------- the root
def _combine(block_stats):
    """The per-block statistics ``[(counts, sums, scatters, log_q), ...]`` (each with a
    leading block axis, in block order) summed in block order, as the driver's ``_pass``:
    ``(counts, sums, scatters, log_q)``."""
    counts = np.concatenate([b[0] for b in block_stats])
    sums = np.concatenate([b[1] for b in block_stats])
    scatters = np.concatenate([b[2] for b in block_stats])
    log_q = np.concatenate([b[3] for b in block_stats])
    total_counts = counts[0].copy()
    total_sums = sums[0].copy()
    total_scatters = scatters[0].copy()
    total_q = log_q[0]
    for b in range(1, counts.shape[0]):
        total_counts += counts[b]
        total_sums += sums[b]
        total_scatters += scatters[b]
        total_q += log_q[b]
    return total_counts, total_sums, total_scatters, float(total_q)


class DaskRows:
    """The rows ``X`` (a ``dask.array``) and their labels, held on a Dask cluster in chunks
    of whole blocks (module docstring).

    Parameters
    ----------
    X : dask.array or ndarray of shape (n_samples, n_features)
        Rechunked to row chunks of ``chunk_blocks * block_size`` rows and one column chunk,
        and computed onto the workers once (``X`` is not changed).
    client : distributed.Client
    block_size : int, default=2**16
        Rows per block of the statistics: the driver's ``SubclusterDP.block_size``.
    chunk_blocks : int or None, default=None
        Blocks per chunk; None takes the blocks nearest ``X``'s first row chunk (at least
        one).
    shift : array of shape (n_features,) or None
        The driver's ``shift`` (subtracted from every row before its sums); None computes
        the column means with dask (not the bits of ``X.mean(axis=0)`` of an in-memory
        array: a fit that is to match an in-memory one passes that).
    n_threads : int, default=1
        numba threads of each task.

    Attributes
    ----------
    n_samples, n_features : int
    starts, lengths : ndarray of int
        Each chunk's first global row and number of rows.
    shift : ndarray of shape (n_features,)
    """

    def __init__(self, X, client, *, block_size=2**16, chunk_blocks=None, shift=None,
                 n_threads=1):
        import dask.array as da
        import distributed

        if not isinstance(block_size, Integral) or block_size < 1:
            raise ValueError(f"block_size must be a positive integer; got {block_size!r}.")
        if chunk_blocks is not None and (not isinstance(chunk_blocks, Integral)
                                         or chunk_blocks < 1):
            raise ValueError(
                f"chunk_blocks must be a positive integer or None; got {chunk_blocks!r}.")
        if not isinstance(X, da.Array):
            X = np.asarray(X)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D (n_samples, n_features); got {X.ndim} dims.")
        if not isinstance(X, da.Array):
            X = da.from_array(X, chunks=(max(1, X.shape[0]), -1))
        if any(np.isnan(c) for c in X.chunks[0]):
            raise ValueError("X must have known row chunk sizes (call X.compute_chunk_sizes()).")
        self.client = client
        self.block_size = int(block_size)
        self.n_threads = int(n_threads)
        self.n_samples, self.n_features = int(X.shape[0]), int(X.shape[1])
        if chunk_blocks is None:
            chunk_blocks = max(1, round(X.chunks[0][0] / self.block_size))
        rows = int(chunk_blocks) * self.block_size
        X = X.astype(np.float64).rechunk((rows, -1))
        self.lengths = np.array(X.chunks[0], dtype=np.int64)
        self.starts = np.concatenate([[0], np.cumsum(self.lengths)[:-1]]).astype(np.int64)
        self._X = client.compute(
            list(X.map_blocks(_to_chunk, dtype=np.float64).to_delayed()[:, 0]))
        distributed.wait(self._X)
        self._moments = None
        if shift is None:  # from the chunks on the workers (X is not computed again)
            shift = self.moments()[1]
            if shift is None:
                raise ValueError("X must be finite (no NaN or inf) for its column means.")
        self.shift = np.array(shift, dtype=np.float64).reshape(self.n_features)
        self._labels = None

    def copy(self):
        """A store on the same chunks and label futures (a checkpoint of a chain: no
        operation changes a future, each makes new ones)."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new._labels = None if self._labels is None else list(self._labels)
        return new

    def moments(self):
        """``(n_samples, column means, covariance, all finite, largest absolute value)``
        of ``X``, from one task per chunk (NumPy's mean and covariance within a chunk; the
        chunks' combined by Chan, Golub and LeVeque's pairwise update, so a store of one
        chunk gives the bits of ``X.mean(axis=0)`` and ``np.cov(X, rowvar=False)``). The
        means and covariance are None when an entry is not finite."""
        if getattr(self, "_moments", None) is not None:
            return self._moments
        parts = self._gather([self._submit(_chunk_moments, x) for x in self._X])
        finite = all(p[3] for p in parts)
        top = max(p[4] for p in parts)
        n = sum(p[0] for p in parts)
        if not finite:
            return n, None, None, False, top
        parts = [p for p in parts if p[0]]
        if len(parts) == 1:
            _, mean, cov, _, _ = parts[0]
        else:
            mean = sum(p[0] * p[1] for p in parts) / n
            D = mean.shape[0]
            scatter = np.zeros((D, D))
            for n_c, mean_c, cov_c, _, _ in parts:
                if cov_c is not None:
                    scatter += (n_c - 1) * cov_c
                d = mean_c - mean
                scatter += n_c * np.outer(d, d)
            cov = scatter / (n - 1) if n >= 2 else None
        self._moments = (n, mean, cov, True, top)
        return self._moments

    # -- labels ---------------------------------------------------------------------
    @property
    def n_chunks(self):
        return len(self._X)

    def set_labels(self, labels):
        """Start from ``labels``: an int (every row in that cluster, made on the workers)
        or an array of ``n_samples`` labels (sent to the workers chunk by chunk)."""
        submit = self.client.submit
        if isinstance(labels, Integral):
            self._labels = [submit(_full_labels, n, int(labels), pure=True)
                            for n in self.lengths]
            return
        labels = np.asarray(labels)
        if labels.shape != (self.n_samples,) or not np.issubdtype(labels.dtype, np.integer):
            raise ValueError(
                f"labels must be an int or an integer array of shape ({self.n_samples},); "
                f"got {labels.dtype} of shape {labels.shape}.")
        # as the arguments of pure tasks (not scattered), so that a lost chunk of labels
        # can be made again; the scheduler holds them (this is for small N)
        self._labels = [submit(_own, np.array(labels[s:s + n]), np.int64, pure=True)
                        for s, n in zip(self.starts, self.lengths, strict=True)]

    def _submit(self, function, *args):
        return self.client.submit(function, *args, pure=True)

    def _gather(self, futures):
        return self.client.gather(futures)

    def statistics(self, n_clusters):
        """``(counts, sums, scatters, log_q)`` of the current labels (a ``STATS_ONLY`` pass;
        the driver's ``_recompute``)."""
        bs = self.block_size
        futures = [self._submit(_chunk_stats, x, lab, self.shift, self.n_features,
                                int(n_clusters), bs, self.n_threads)
                   for x, lab in zip(self._X, self._labels, strict=True)]
        return _combine(self._gather(futures))

    def lowest_log_slice(self, log_pi, slice_key):
        """The lowest log slice over all rows (``lows.min()`` of the driver's row step)."""
        log_pi = np.asarray(log_pi, dtype=np.float64)
        futures = [self._submit(_chunk_lowest, lab, int(s), log_pi, int(slice_key),
                                self.block_size, self.n_threads)
                   for lab, s in zip(self._labels, self.starts, strict=True)]
        return float(min(self._gather(futures)))

    def row_step(self, comps, key, log_pi, slice_key):
        """The row step's ``SAMPLE`` pass with the slice arguments ``(labels, log_pi,
        slice_key)``: the new labels replace the old on the workers; returns ``(counts,
        sums, scatters, log_q)`` combined in block order, with ``C = len(log_pi)``."""
        C = int(np.asarray(log_pi).shape[0])
        log_pi = np.asarray(log_pi, dtype=np.float64)
        results = [self._submit(_chunk_row_step, x, lab, int(s), self.shift, comps,
                                int(key), log_pi, int(slice_key), C, self.block_size,
                                self.n_threads)
                   for x, lab, s in zip(self._X, self._labels, self.starts, strict=True)]
        stats = [self._submit(operator.getitem, r, 1) for r in results]
        self._labels = [self._submit(operator.getitem, r, 0) for r in results]
        out = _combine(self._gather(stats))
        del results
        return out

    def relabel(self, table):
        """Every label ``k`` becomes ``table[k]`` (dropping empty clusters)."""
        table = np.asarray(table, dtype=np.int64)
        self._labels = [self._submit(_lookup, lab, table) for lab in self._labels]

    def _locate(self, rows):
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        if rows.size and (rows.min() < 0 or rows.max() >= self.n_samples):
            raise ValueError(f"rows must be in [0, {self.n_samples}); got {rows!r}.")
        chunk = np.searchsorted(self.starts, rows, side="right") - 1
        return rows, chunk, rows - self.starts[chunk]

    def set_rows(self, rows, values):
        """``labels[rows] = values`` (a few rows: the anchors of a move)."""
        rows, chunk, local = self._locate(rows)
        values = np.broadcast_to(np.asarray(values, dtype=np.int64), rows.shape)
        for c in np.unique(chunk):
            at = chunk == c
            self._labels[c] = self._submit(_set_rows, self._labels[c], local[at],
                                           values[at].copy())

    def labels_at(self, rows):
        """The labels of a few global rows."""
        rows, chunk, local = self._locate(rows)
        futures = [self._submit(operator.getitem, self._labels[c], int(r))
                   for c, r in zip(chunk, local, strict=True)]
        return np.array(self._gather(futures), dtype=np.int64)

    def nth_row(self, k, rank, skip=-1):
        """The global row of cluster ``k`` that is its ``rank``-th in row order, not
        counting the row ``skip`` (-1 for none); -1 if there is none (the driver's
        ``nth_row``, the partner of a split). Two rounds of tasks: the counts per chunk,
        then the row in its chunk."""
        skips = np.full(self.n_chunks, -1, dtype=np.int64)
        if skip >= 0:
            _, chunk, local = self._locate([skip])
            skips[chunk[0]] = local[0]
        counts = np.array(self._gather([
            self._submit(_count_label, lab, int(k), int(sk))
            for lab, sk in zip(self._labels, skips, strict=True)]), dtype=np.int64)
        ends = np.cumsum(counts)
        rank = int(rank)
        if rank < 0 or rank >= int(ends[-1]):
            return -1
        c = int(np.searchsorted(ends, rank, side="right"))
        before = int(ends[c] - counts[c])
        local = self._gather(self._submit(_nth_of_label, self._labels[c], int(k),
                                          rank - before, int(skips[c])))
        return int(self.starts[c]) + int(local)

    def rows(self, rows):
        """The data of a few global rows, ``(len(rows), n_features)``."""
        rows, chunk, local = self._locate(rows)
        futures = [self._submit(operator.getitem, self._X[c], int(r))
                   for c, r in zip(chunk, local, strict=True)]
        out = np.array(self._gather(futures), dtype=np.float64)
        return out.reshape(rows.shape[0], self.n_features)

    def gather_rows(self, rows):
        """The data of many global rows, ``(len(rows), n_features)`` in the order given:
        one task per chunk that holds any of them (a subsample for the chain's start)."""
        rows, chunk, local = self._locate(rows)
        out = np.empty((rows.shape[0], self.n_features), dtype=np.float64)
        used = np.unique(chunk)
        futures = [self._submit(operator.getitem, self._X[c], local[chunk == c])
                   for c in used]
        for c, part in zip(used, self._gather(futures), strict=True):
            out[chunk == c] = part
        return out

    def as_dask_array(self):
        """The store's rows as a ``dask.array`` of its chunks on the workers."""
        import dask.array as da

        return da.concatenate([
            da.from_delayed(f, shape=(int(n), self.n_features), dtype=np.float64)
            for f, n in zip(self._X, self.lengths, strict=True)])

    def labels(self):
        """The labels as a ``dask.array`` of the store's row chunks (nothing moves)."""
        import dask.array as da

        return da.concatenate([da.from_delayed(f, shape=(int(n),), dtype=np.int64)
                               for f, n in zip(self._labels, self.lengths, strict=True)])

    def gather_labels(self):
        """The labels here, as one array (for small ``n_samples``)."""
        return np.concatenate(self._gather(self._labels)).astype(np.int64)

    def assign(self, members, mapping, sides):
        """:meth:`MemberRows.assign` (the driver's interface of the row backends)."""
        members.assign(mapping, sides)

    def anchor_norms(self, members, means, chols, sides, lead=None):
        """The log normaliser of each side of the anchors' centrality over the members
        with sides ``"current"`` or ``"last"`` (after the ``lead`` rows ``(X, sides)``),
        block by block (:mod:`sklearn_ibp.solvers.dp._dp_subcluster_rows`); returns
        ``(w of the lead rows, norms)``. The members' centralities stay on the workers for
        :meth:`anchor_pick`."""
        means = np.ascontiguousarray(means, dtype=np.float64)
        chols = np.ascontiguousarray(chols, dtype=np.float64)
        lead_w = lead_arg = None
        if lead is not None:
            lead_X = np.ascontiguousarray(lead[0], dtype=np.float64)
            lead_sides = np.asarray(lead[1], dtype=np.int64)
            lead_w = np.empty(lead_X.shape[0])
            centrality(lead_X, np.arange(lead_X.shape[0], dtype=np.int64), lead_sides,
                       means, chols, lead_w)
            lead_arg = (lead_w, lead_sides)
        if sides == "last":
            if members.last is None:
                raise ValueError("sides='last' needs a run before.")
            sources = list(members.last)
        else:
            sources = [None] * self.n_chunks
        results = [self._submit(_chunk_anchor, x, m, s, int(start), self.block_size, means,
                                chols, means.shape[0], lead_arg if start == 0 else None)
                   for x, m, s, start in zip(self._X, members._members, sources,
                                             self.starts, strict=True)]
        members._w = [self._submit(operator.getitem, r, 0) for r in results]
        parts = self._gather([self._submit(operator.getitem, r, 1) for r in results])
        return lead_w, combine_norms(parts)

    def anchor_pick(self, members, norms, t, r):
        """A member of side ``t`` (current sides) drawn by centrality with the uniform
        ``r`` (after :meth:`anchor_norms`): ``(global row, w)``."""
        norm = float(norms[t])
        parts = self._gather([
            self._submit(_chunk_masses, w, m, int(start), self.block_size, norm, int(t))
            for w, m, start in zip(members._w, members._members, self.starts, strict=True)])
        segment, u = choose_segment(parts, r)
        c = int(np.searchsorted(self.starts, segment * self.block_size, side="right") - 1)
        row, value = self._gather(self._submit(
            _chunk_pick, members._w[c], members._members[c], int(self.starts[c]),
            self.block_size, norm, int(t), segment, u))
        return int(row), float(value)

    def select(self, label_set, exclude=()):
        """:class:`MemberRows` of the rows whose label is in ``label_set`` (``current`` =
        the position of the label in it, the first if repeated), except the global rows
        ``exclude``, in row order (``pair_members(labels, ci, cj, i, j)`` for
        ``label_set=(ci, cj)``, ``exclude=(i, j)``)."""
        label_set = tuple(int(k) for k in label_set)
        ex_rows, ex_chunk, ex_local = self._locate(np.asarray(exclude, dtype=np.int64))
        members = []
        for c, lab in enumerate(self._labels):
            local = ex_local[ex_chunk == c].copy()
            members.append(self._submit(_chunk_select, lab, label_set, local))
        sizes = self._gather([self._submit(_count_members, m) for m in members])
        return MemberRows(self, members, np.array(sizes, dtype=np.int64), len(label_set))


class MemberRows:
    """Rows of the store whose labels were in a set when :meth:`DaskRows.select` made it,
    held per chunk on the workers (module docstring).

    Attributes
    ----------
    sizes : ndarray of int
        Members per chunk; ``n_members = sizes.sum()``.
    last : list of futures or None
        The output of the last :meth:`run` (a side per member, per chunk).
    lead_out : ndarray or None
        The output of the last :meth:`run` at its lead rows.
    """

    def __init__(self, store, members, sizes, n_sides):
        self.store = store
        self._n_sides = int(n_sides)
        self._last_C = 0
        self._members = members
        self.sizes = sizes
        self.n_members = int(sizes.sum())
        self.last = None
        self.lead_out = None
        self._w = None

    def current(self):
        """The members' sides from their labels at selection, here (for small sets)."""
        return self._side_array([self.store._submit(operator.getitem, m, 1)
                                 for m in self._members])

    def _side_array(self, futures):
        parts = self.store._gather(futures)
        return np.concatenate(parts).astype(np.int64) if parts else _EMPTY_INT.copy()

    def last_array(self):
        """:attr:`last` here, as one array in member order."""
        return self._side_array(self.last)

    def global_rows(self):
        """The members' global rows, here, in order (for small sets and the tests)."""
        st = self.store
        rows = self.store._gather([st._submit(operator.getitem, m, 0) for m in self._members])
        return np.concatenate(
            [r + s for r, s in zip(rows, st.starts, strict=True)]).astype(np.int64)

    def _forced(self, forced):
        st = self.store
        if forced is None:
            return [None] * len(self._members)
        if isinstance(forced, Integral):
            return [st._submit(_full_labels, n, int(forced)) for n in self.sizes]
        if isinstance(forced, str) and forced == "current":
            return [st._submit(operator.getitem, m, 1) for m in self._members]
        if isinstance(forced, str) and forced == "last":
            if self.last is None:
                raise ValueError("forced='last' needs a run before.")
            return list(self.last)
        raise ValueError(
            f"forced must be None, an int, 'current' or 'last'; got {forced!r}.")

    def run(self, comps, key, mode, C, forced=None, lead=None):
        """One ``assign_blocks`` pass over ``lead`` rows then the members, in ``mode``:
        ``(counts, sums, scatters, log_q)`` in block order (the driver's ``_pass(X, shift,
        rows, n, comps, key, forced, mode, out, C)`` with ``rows`` the lead rows then the
        members). The members' output becomes :attr:`last`, the lead's :attr:`lead_out`.

        Parameters
        ----------
        comps : (means, chols, log_consts) of the ``C`` components
        key : int
            The uniforms' key (``SAMPLE``).
        mode : SAMPLE, ARGMAX, SCORE_FORCED or STATS_ONLY
        C : int
        forced : None, int, 'current' or 'last'
            The members' forced components (``SCORE_FORCED``/``STATS_ONLY``): one for all
            (an int; the union's statistics take 0 with ``C = 1``), the sides of their
            labels at selection, or the output of the last run. Each must be below ``C``.
        lead : (global rows, forced) or None
            Rows before the members (their data is fetched here; a few rows).
        """
        st = self.store
        bs = st.block_size
        mode = np.int64(mode)
        needs_forced = mode in (SCORE_FORCED, STATS_ONLY)
        if needs_forced and forced is None:
            raise ValueError("SCORE_FORCED and STATS_ONLY passes need forced values.")
        C = int(C)
        if needs_forced:  # the kernel trusts forced values to be components
            top = (forced if isinstance(forced, Integral) else
                   self._n_sides - 1 if forced == "current" else
                   self._last_C - 1 if forced == "last" and self.last is not None else 0)
            if not 0 <= top < C:
                raise ValueError(f"forced={forced!r} takes component {top}; C is {C}.")
            if lead is not None and np.any((np.asarray(lead[1]) < 0)
                                           | (np.asarray(lead[1]) >= C)):
                raise ValueError(f"the lead rows' forced values must be in [0, {C}).")
        forced_src = self._forced(forced if needs_forced else None)
        # the sources of positions: the lead rows, then each chunk's members
        sources = []  # (kind, c, first position, n)
        position = 0
        lead_piece = None
        if lead is not None:
            lead_rows = np.asarray(lead[0], dtype=np.int64).reshape(-1)
            lead_forced = np.asarray(lead[1], dtype=np.int64).reshape(-1)
            lead_piece = (st.rows(lead_rows), lead_rows,
                          lead_forced if needs_forced else None)
            sources.append(("lead", -1, 0, lead_rows.shape[0]))
            position = lead_rows.shape[0]
        for c, m in enumerate(self.sizes):
            if m:
                sources.append(("chunk", c, position, int(m)))
                position += int(m)
        M = position
        args = (st.shift, comps, int(key), mode, int(C), bs, st.n_threads)
        if M == 0:
            D = st.n_features
            self.last = [st._submit(np.zeros, 0, np.int64) for _ in self._members]
            self.lead_out = _EMPTY_INT.copy()
            self._last_C = C
            return _combine([_block_arrays(0, int(C), D, bs)])
        n_blocks = -(-M // bs)
        # each chunk's whole blocks run where its rows are (a "body")
        block_task = [None] * n_blocks  # (future of (out, blocks), first block) per block
        bodies = {}
        for kind, c, P, m in sources:
            if kind != "chunk":
                continue
            E = P + m
            b_lo = -(-P // bs)
            b_hi = n_blocks if E == M else E // bs
            if b_lo < b_hi:
                lo, hi = b_lo * bs - P, min(M, b_hi * bs) - P
                future = st._submit(_member_body, st._X[c], self._members[c], forced_src[c],
                                    lo, hi, int(st.starts[c]), *args)
                bodies[c] = (future, b_lo, lo)
                for b in range(b_lo, b_hi):
                    block_task[b] = ("body", c)
        # the other blocks: from pieces gathered out of the chunks they straddle
        straddles = {}
        for b in range(n_blocks):
            if block_task[b] is not None:
                continue
            bS, bE = b * bs, min(M, (b + 1) * bs)
            pieces = []
            for kind, c, P, m in sources:
                lo, hi = max(P, bS), min(P + m, bE)
                if lo >= hi:
                    continue
                if kind == "lead":
                    pieces.append(tuple(None if a is None else a[lo:hi] for a in lead_piece))
                else:
                    pieces.append(st._submit(_member_piece, st._X[c], self._members[c],
                                             forced_src[c], lo - P, hi - P,
                                             int(st.starts[c])))
            straddles[b] = st._submit(_straddle, *args, *pieces)
            block_task[b] = ("straddle", b)
        # statistics, in block order
        stats_futures = []
        b = 0
        while b < n_blocks:
            kind, ref = block_task[b]
            if kind == "body":
                future, b_lo, _ = bodies[ref]
                stats_futures.append(st._submit(operator.getitem, future, 1))
                while b < n_blocks and block_task[b] == ("body", ref):
                    b += 1
            else:
                stats_futures.append(st._submit(operator.getitem, straddles[ref], 1))
                b += 1
        # each chunk's output, from the blocks its members fell in
        last = []
        for c, m in enumerate(self.sizes):
            if not m:
                last.append(st._submit(np.zeros, 0, np.int64))
                continue
            P = next(s[2] for s in sources if s[0] == "chunk" and s[1] == c)
            E = P + int(m)
            arrays, bounds = [], []
            b = P // bs
            while b * bs < E:
                kind, ref = block_task[b]
                if kind == "body":
                    future, b_lo, lo = bodies[c]
                    hi_block = b
                    while hi_block < n_blocks and block_task[hi_block] == ("body", c):
                        hi_block += 1
                    seg_lo, seg_hi = b * bs, min(M, hi_block * bs)
                    arrays.append(st._submit(operator.getitem, future, 0))
                    bounds.append((seg_lo - b_lo * bs, seg_hi - b_lo * bs))
                    b = hi_block
                else:
                    bS = b * bs
                    lo, hi = max(P, bS), min(E, (b + 1) * bs)
                    arrays.append(st._submit(operator.getitem, straddles[ref], 0))
                    bounds.append((lo - bS, hi - bS))
                    b += 1
            last.append(st._submit(_concat_slices, tuple(bounds), *arrays))
        out = _combine(st._gather(stats_futures))
        if lead_piece is not None:
            n_lead = lead_piece[1].shape[0]
            firsts = []
            for b in range(-(-n_lead // bs)):
                bS = b * bs
                outs = st._gather(st._submit(operator.getitem, straddles[b], 0))
                firsts.append(np.asarray(outs)[: max(0, min(n_lead - bS, bs))])
            self.lead_out = np.concatenate(firsts).astype(np.int64)
        self.last = last
        self._last_C = C
        return out

    # -- the staged allocation (the driver's interface of a proposal's members) ---------
    def stages(self, stage_key):
        """The members split by stage (:func:`stage_order` of all ``n_members``): a
        :class:`MemberRows` per stage that has members, in stage order."""
        st = self.store
        m = self.n_members
        n_stages = n_stages_of(m)
        split = [st._submit(_chunk_stages, mem, int(s), int(stage_key), m, n_stages)
                 for mem, s in zip(self._members, st.starts, strict=True)]
        sizes = np.array(st._gather([st._submit(operator.getitem, f, 1) for f in split]),
                         dtype=np.int64).reshape(len(split), n_stages)
        children = []
        for t in range(n_stages):
            if sizes[:, t].sum() == 0:
                continue
            futures = [st._submit(_stage_part, f, t) for f in split]
            children.append(MemberRows(st, futures, sizes[:, t].copy(), self._n_sides))
        return children

    def run_stage(self, stage, comps, key, mode, k, shift):
        """One stage's pass (:meth:`run` of the stage's members; ``shift`` is the
        store's)."""
        forced = "current" if mode in (SCORE_FORCED, STATS_ONLY) else None
        return stage.run(comps, key, mode, k, forced=forced)

    def finish(self, stages, mode):
        """After a ``SAMPLE`` allocation: :attr:`last` = every member's side, from its
        stage's run."""
        if mode != SAMPLE:
            return
        st = self.store
        self.last = [
            st._submit(_collect_sides, int(n),
                       *[(s._members[c], s.last[c]) for s in stages])
            for c, n in enumerate(self.sizes)]
        self._last_C = max((s._last_C for s in stages), default=0)

    def assign(self, mapping, sides="last"):
        """Apply an accepted move: each member whose side (``'last'``: of the last
        :meth:`run`; ``'current'``: from its label at selection) is ``t`` takes the label
        ``mapping[t]``, ``-1`` keeping its own."""
        st = self.store
        if sides == "last":
            if self.last is None:
                raise ValueError("sides='last' needs a run before.")
            source = self.last
        elif sides == "current":
            source = [st._submit(operator.getitem, m, 1) for m in self._members]
        else:
            raise ValueError(f"sides must be 'last' or 'current'; got {sides!r}.")
        mapping = np.asarray(mapping, dtype=np.int64)
        st._labels = [st._submit(_assign_members, lab, m, s, mapping) if size else lab
                      for lab, m, s, size in zip(st._labels, self._members, source,
                                                 self.sizes, strict=True)]
