"""Where the sub-cluster sampler's rows and labels live (issue 24): the row backends of
:class:`~sklearn_ibp.solvers.dp.dp_subcluster.SubclusterDP`.

The driver asks its rows for a few operations only (the statistics of the labels, the row
step, a proposal's members and their staged passes, a few rows and labels, an accepted
move, a relabelling), so that the same driver runs on rows in this process
(:class:`MemoryRows`, the state's ``X`` and ``labels``) and on rows held on the workers of
a Dask cluster (:class:`~sklearn_ibp.distributed.dask_rows.DaskRows`), and a chain is the
same chain, bit for bit, on both for the same ``random_state`` and ``block_size``.

Block-wise anchors
------------------
A merge draws its anchors by centrality (module docstring of ``dp_subcluster``, step 3):
row ``r`` of cluster ``t`` with probability ``exp(w_r) / sum exp(w)`` over the cluster,
and a split's ratio holds the same probability of its anchors in the proposed clusters.
Both are defined here block by block, so that neither backend needs the whole union in one
array: the rows are grouped in *segments*, the blocks of ``block_size`` consecutive global
rows (a chunk of the Dask store holds whole blocks), lead rows (a split's anchors, listed
before the members) joining the first segment. Per segment and side: the top ``w`` and
``sum exp(w - top)`` (NumPy's sum, in segment order); the log normaliser of a side is
``top + log sum_s mass_s exp(top_s - top)`` over the segments in order. A pick draws
``u = r * sum_s M_s``, ``M_s = sum exp(w - norm)`` of the side's rows of segment ``s``,
takes the first segment whose running total exceeds ``u`` and, inside it, the first row
whose cumulative mass exceeds ``u`` less the segments before. With a single segment
(``N <= block_size``) these are the sampler's whole-array expressions of before, to the
bit (the fits' fingerprints did not change).
"""

from __future__ import annotations

import math

import numpy as np

from ._dp_subcluster_kernels import (
    SAMPLE,
    SCORE_FORCED,
    STATS_ONLY,
    centrality,
    lowest_log_slices,
    nth_row,
    pair_members,
    stage_order,
)

__all__ = ["MemoryRows", "anchor_parts", "combine_norms", "choose_segment",
           "segment_masses", "pick_in_segment", "n_stages_of"]

_EMPTY_INT = np.zeros(0, dtype=np.int64)


def n_stages_of(m):
    """The number of stages of the staged allocation of ``m`` members
    (:func:`~sklearn_ibp.solvers.dp._dp_subcluster_kernels.stage_order`)."""
    return int(math.floor(math.log2(1.0 + m))) + 1


# ------------------------------------------------------------------ block-wise anchors
def _segments(global_rows, block_size, with_first):
    """``(segment ids, starts, ends)`` of rows sorted by global row: the runs of rows in one
    block; block 0 added (empty) when ``with_first`` and absent."""
    if global_rows.shape[0]:
        g = global_rows // block_size
        cut = np.flatnonzero(np.diff(g)) + 1
        starts = np.concatenate([[0], cut]).astype(np.int64)
        ends = np.concatenate([cut, [global_rows.shape[0]]]).astype(np.int64)
        ids = g[starts]
    else:
        ids = starts = ends = _EMPTY_INT
    if with_first and (ids.shape[0] == 0 or ids[0] != 0):
        ids = np.concatenate([[0], ids]).astype(np.int64)
        starts = np.concatenate([[0], starts]).astype(np.int64)
        ends = np.concatenate([[0], ends]).astype(np.int64)
    return ids, starts, ends


def anchor_parts(X, rows, sides, global_rows, block_size, means, chols, n_sides,
                 lead=None):
    """The centrality ``w`` of each row (``X[rows[p]]`` in side ``sides[p]``) and, per
    segment, each side's top and mass (module docstring); ``lead = (w, sides)`` of the lead
    rows, which join segment 0 before its rows. Returns ``w, (ids, tops, masses, sizes)``."""
    w = np.empty(rows.shape[0])
    centrality(X, rows, sides, means, chols, w)
    ids, starts, ends = _segments(global_rows, block_size, lead is not None)
    S = ids.shape[0]
    tops = np.full((S, n_sides), -np.inf)
    masses = np.zeros((S, n_sides))
    sizes = np.zeros((S, n_sides), dtype=np.int64)
    for s in range(S):
        seg_w, seg_sides = w[starts[s]:ends[s]], sides[starts[s]:ends[s]]
        for t in range(n_sides):
            values = seg_w[seg_sides == t]
            if lead is not None and ids[s] == 0:
                values = np.concatenate([lead[0][lead[1] == t], values])
            if values.shape[0] == 0:
                continue
            top = values.max()
            tops[s, t] = top
            masses[s, t] = float(np.sum(np.exp(values - top)))
            sizes[s, t] = values.shape[0]
    return w, (ids, tops, masses, sizes)


def combine_norms(parts):
    """Each side's log normaliser from the segments' parts (in segment order)."""
    tops = np.concatenate([p[1] for p in parts])
    masses = np.concatenate([p[2] for p in parts])
    sizes = np.concatenate([p[3] for p in parts])
    norms = np.empty(tops.shape[1])
    for t in range(tops.shape[1]):
        top = tops[:, t].max()
        acc = 0.0
        for s in range(tops.shape[0]):
            if sizes[s, t]:
                acc += masses[s, t] * math.exp(tops[s, t] - top)
        norms[t] = top + math.log(acc)
    return norms


def segment_masses(w, sides, global_rows, block_size, norm, t):
    """Per segment, ``sum exp(w - norm)`` over its rows of side ``t`` and their number:
    ``(ids, masses, sizes)``."""
    ids, starts, ends = _segments(global_rows, block_size, False)
    masses = np.zeros(ids.shape[0])
    sizes = np.zeros(ids.shape[0], dtype=np.int64)
    for s in range(ids.shape[0]):
        at = sides[starts[s]:ends[s]] == t
        values = w[starts[s]:ends[s]][at]
        if values.shape[0]:
            masses[s] = float(np.sum(np.exp(values - norm)))
            sizes[s] = values.shape[0]
    return ids, masses, sizes


def choose_segment(parts, r):
    """The segment of a pick with the uniform ``r`` and the remainder of ``u`` in it, from
    :func:`segment_masses` of every segment in order: ``(segment id, u')``."""
    ids = np.concatenate([p[0] for p in parts])
    masses = np.concatenate([p[1] for p in parts])
    sizes = np.concatenate([p[2] for p in parts])
    total = 0.0
    for s in range(ids.shape[0]):
        if sizes[s]:
            total += masses[s]
    u = r * total
    cum, last = 0.0, None
    for s in range(ids.shape[0]):
        if not sizes[s]:
            continue
        after = cum + masses[s]
        if u < after:
            return int(ids[s]), u - cum
        last = (int(ids[s]), u - cum)
        cum = after
    return last  # rounding at the top end: the last segment's last row


def pick_in_segment(w, sides, global_rows, block_size, norm, t, segment, u):
    """The row of side ``t`` in ``segment`` where the cumulative mass passes ``u``:
    ``(position, w)``."""
    at = np.flatnonzero((global_rows // block_size == segment) & (sides == t))
    mass = np.exp(w[at] - norm)
    q = min(int(np.searchsorted(np.cumsum(mass), u, side="right")), at.size - 1)
    return int(at[q]), float(w[at[q]])


# ------------------------------------------------------------------ in memory
class ArrayMembers:
    """A proposal's members in memory: global ``rows`` (row order) and ``current`` (the
    side of each one's label), with the staged passes of the driver over them."""

    def __init__(self, solver, X, rows, current, side=None):
        self.solver = solver
        self.X = X
        self.rows = rows
        self.current = current
        self.n_members = int(rows.shape[0])
        self.side = np.empty(self.n_members, dtype=np.int64) if side is None else side
        self.w = None

    def stages(self, stage_key):
        """The stages (positions of the members), empty ones left out."""
        m = self.n_members
        order = np.empty(m, dtype=np.int64)
        bounds = np.empty(n_stages_of(m) + 1, dtype=np.int64)
        n_stages = stage_order(np.uint64(stage_key), self.rows, order, bounds)
        return [order[int(bounds[t]):int(bounds[t + 1])] for t in range(n_stages)
                if bounds[t + 1] > bounds[t]]

    def run_stage(self, pos, comps, key, mode, k, shift):
        rows = self.rows[pos]
        forced = self.current[pos] if mode == SCORE_FORCED else _EMPTY_INT
        out = np.empty(pos.shape[0], dtype=np.int64)
        result = self.solver._pass(self.X, shift, rows, pos.shape[0], comps, key, forced,
                                   mode, out, k)
        self.side[pos] = out
        return result

    def finish(self, stages, mode):
        """After the last stage (the Dask store collects the sides here)."""


class MemoryRows:
    """The rows and labels of a chain in this process: the state's ``X`` and ``labels``
    (the driver's in-memory code paths)."""

    def __init__(self, solver, state):
        self.solver = solver
        self.state = state
        self.n_samples, self.n_features = state.X.shape
        self.block_size = int(solver.block_size)

    def statistics(self, K):
        st = self.state.stats
        D = self.n_features
        comps = (np.zeros((1, D)), np.zeros((1, D, D)), np.zeros(1))
        return self.solver._pass(self.state.X, st["shift"], _EMPTY_INT, self.n_samples,
                                 comps, 0, self.state.labels, STATS_ONLY, st["buffer"], K)

    def lowest_log_slice(self, log_pi, slice_key):
        lows = np.empty(self.solver._blocks(self.n_samples))
        lowest_log_slices(self.state.labels, np.int64(0), log_pi, np.uint64(slice_key),
                          np.int64(self.block_size), lows)
        return float(lows.min())

    def row_step(self, comps, key, log_pi, slice_key):
        state, st = self.state, self.state.stats
        buffer = st["buffer"]
        out = self.solver._pass(state.X, st["shift"], _EMPTY_INT, self.n_samples, comps, key,
                                _EMPTY_INT, SAMPLE, buffer, log_pi.shape[0],
                                slice_args=(state.labels, log_pi, slice_key))
        st["buffer"], state.labels = state.labels, buffer
        return out

    def relabel(self, table):
        self.state.labels[:] = table[self.state.labels]

    def labels_at(self, rows):
        return self.state.labels[np.asarray(rows, dtype=np.int64)]

    def nth_row(self, k, rank, skip=-1):
        return int(nth_row(self.state.labels, k, rank, skip))

    def rows(self, rows):
        return self.state.X[np.asarray(rows, dtype=np.int64)]

    def set_rows(self, rows, values):
        self.state.labels[np.asarray(rows, dtype=np.int64)] = values

    def select(self, label_set, exclude=()):
        """The rows of the two clusters ``label_set`` except ``exclude`` (``pair_members``)."""
        st = self.state.stats
        if "side" not in st:
            st["side"] = np.empty(self.n_samples, dtype=np.int64)
        i, j = (tuple(exclude) + (-1, -1))[:2]
        scratch = st["buffer"]  # free between row steps
        m = int(pair_members(self.state.labels, label_set[0], label_set[1], i, j, scratch,
                             st["side"]))
        return ArrayMembers(self.solver, self.state.X, scratch[:m].copy(),
                            st["side"][:m].copy())

    def assign(self, members, mapping, sides):
        """Members whose side (``"last"`` sampled, ``"current"``) is ``t`` take label
        ``mapping[t]`` (``-1`` keeps theirs)."""
        source = members.side if sides == "last" else members.current
        for t, label in enumerate(mapping):
            if label >= 0:
                self.state.labels[members.rows[source == t]] = label

    def anchor_norms(self, members, means, chols, sides, lead=None):
        """Each side's log normaliser of the anchors' centrality (module docstring) over
        the members with sides ``"current"`` or ``"last"``, after the ``lead`` rows
        ``(X, sides)``; returns ``(w of the lead rows, norms)``."""
        lead_w = None
        lead_arg = None
        if lead is not None:
            lead_X, lead_sides = lead
            lead_w = np.empty(lead_X.shape[0])
            centrality(lead_X, np.arange(lead_X.shape[0], dtype=np.int64), lead_sides,
                       means, chols, lead_w)
            lead_arg = (lead_w, lead_sides)
        side = members.side if sides == "last" else members.current
        members.w, parts = anchor_parts(self.state.X, members.rows, side, members.rows,
                                        self.block_size, means, chols, means.shape[0],
                                        lead_arg)
        return lead_w, combine_norms([parts])

    def anchor_pick(self, members, norms, t, r):
        """A row of side ``t`` (of the current sides) drawn by centrality with the uniform
        ``r`` (after :meth:`anchor_norms`): ``(global row, w)``."""
        parts = segment_masses(members.w, members.current, members.rows, self.block_size,
                               norms[t], t)
        segment, u = choose_segment([parts], r)
        p, w = pick_in_segment(members.w, members.current, members.rows, self.block_size,
                               norms[t], t, segment, u)
        return int(members.rows[p]), w
