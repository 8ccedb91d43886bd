"""The exact, Metropolis-corrected data-parallel sampler (Doshi-Velez 2009, sec. 5.2).

The approximate sampler lets every shard sweep given the others' state at the last
synchronisation. Here the shards' sweeps only *propose*, and a Metropolis-Hastings test at
the root makes the chain exact.

**State and target.** The chain moves on *labelled* binary matrices ``Z`` with a fixed
number ``K_cap`` of column slots (``metropolis_max_features``); empty columns are free
slots. The target is

    pi(Z) ~ p(X | Z) P_lab(Z),

``p(X | Z)`` the collapsed linear-Gaussian likelihood and ``P_lab`` the IBP's probability of
the class of ``Z`` spread evenly over its labelled versions in ``K_cap`` slots
(:func:`~sklearn_ibp.priors.ibp.labelled_ibp_log_prob`). Its classes have the exact
posterior conditioned on ``K <= K_cap``; the estimator sees the non-empty columns only.

**One step per round.** The root draws a seed ``r`` from the chain's stream, independent
of ``Z``; from it come, for every shard ``p``, a set ``R_p`` of ``metropolis_rows`` of its
rows and a sweep seed. ``G_r(Z)`` is a deterministic function of ``Z``: every shard runs
``sweeps_per_sync`` accelerated sweeps over the rows ``R_p`` only, given the statistics of
all of ``Z`` (:func:`sweep_rows`), with a generator seeded afresh from its sweep seed. The
live columns are gathered to the front of a work matrix for the kernel and put back in
their own slots afterwards; only the token holder (round index mod ``n_shards``, also
independent of ``Z``) may create features, which go into the lowest free slots (beyond
``K_cap`` they are dropped); the other shards leave alone the features that only one of
their rows ``R_p`` has (the kernel would drop them to draw new ones, which those shards may
not create). So ``G_r`` changes the rows ``R_p`` only.

**The fuzz (eq. 5.4), restricted to a set of slots.** Write ``R = U_p R_p`` and ``Z_{-R}``
for the rows outside it. The round fuzzes the slots

    C_r(Z) = {slots some row of Z_{-R} uses} U {the s lowest of the other slots}

(``s = fuzz_free_slots``; all ``K_cap`` slots when it is None, the thesis's version) at
the rate ``f``: ``fuzz``, or with ``fuzz="auto"`` ``1 / (|R| |C|)``, one flip expected
(:func:`fuzz_columns`). The proposal ``Z'`` is ``Z`` outside ``R``, ``G_r(Z)`` on ``R``
outside ``C``, and ``G_r(Z)`` with every entry flipped with probability ``f`` on ``R x C``:

    Q_r(Z -> Z') = 1[Z'_{-R} = Z_{-R}] 1[Z'_{R, not C} = G_r(Z)_{R, not C}]
                   f^d (1 - f)^(|R| |C| - d),   d = #{(n, k) in R x C: Z'_nk != G_r(Z)_nk},

a distribution over ``Z'`` for every ``Z`` (the flips are independent Bernoullis). Where
it is positive, ``Z'_{-R} = Z_{-R}``, so ``C_r(Z') = C_r(Z)`` and ``f`` is the same (they
depend on ``r`` and ``Z_{-R}`` only): the reverse density is the same formula with ``Z``
and ``Z'`` swapped,

    Q_r(Z' -> Z) = 1[Z_{R, not C} = G_r(Z')_{R, not C}] f^d' (1 - f)^(|R| |C| - d'),
    d' = #{(n, k) in R x C: Z_nk != G_r(Z')_nk},

and it is zero when the sweep from ``Z'`` changes a slot outside ``C`` that the fuzz cannot
undo (:func:`reverse_log_q` returns ``-inf``; the move is rejected). ``Z'`` is accepted
with probability

    min(1, pi(Z') Q_r(Z' -> Z) / (pi(Z) Q_r(Z -> Z')))       (eq. 5.3).

For every ``r`` this is a Metropolis-Hastings kernel with a proper proposal, so it leaves
``pi`` invariant and satisfies detailed balance; ``r`` is drawn independently of ``Z``, so
the mixture over ``r`` does too, and the token's cycle composes ``pi``-invariant kernels.
Had ``C`` been taken from all of ``Z`` (say the live columns of ``Z``), a move that
empties a slot would shrink ``C`` in the reverse direction and the reverse density would
have to be computed over a different set of entries; taking it from the rows the move
cannot change makes the two directions agree by construction.

Why restrict the fuzz: with all ``K_cap`` slots fuzzed, nearly every proposal switches on
an empty slot (a new feature of one row, which the target penalises), and an accepted
proposal almost never changes ``Z``. The slots of ``Z_{-R}`` are the live features (less
those only the rows ``R`` have); the ``s`` more let the fuzz create a feature or remove
one that only rows of ``R`` have (with ``s = 0`` the chain started from an empty ``Z``
never moved on the enumeration problem, hence ``s >= 1``). On 1000 block images (5
shards, 30 slots) the fraction of rounds that change ``Z`` went from 0.008, 0 and 0 to
0.02-0.03, 0.01-0.03 and 0.007 for ``metropolis_rows`` 1, 5, 10 (doc/parallel.rst).

Why the slots are kept: had ``G_r`` moved the live columns of every row to the front, the
rows outside ``R_p`` of ``Z'`` would be in ``G_r``'s order, and the reverse ``G_r(Z')``
would move them again; a state with a free slot before a used one could then never be
proposed back, the chain could not reach such labelled matrices, and the class
frequencies would be off by how many labelled versions each class has among the reachable
ones.

**Messages.** A round has two exchanges (one when the proposal equals ``Z``: the ratio is
then 1), and the shards synchronise to decide (sec. 5.2):
each shard sends back its rows ``R_p`` of ``Z'``, its own ``Z'_p^T Z'_p``, ``Z'_p^T X_p``
and counts, and ``log Q`` of its part of the forward proposal; the root sums the
statistics and broadcasts them; each shard computes ``G_r(Z')`` on its rows and sends
``log Q`` of its part of the reverse proposal; the root decides. Statistics are always
computed afresh from ``Z`` (:func:`labelled_statistics`, the same bits whatever the
history), so that ``G_r`` is a function of ``Z`` alone.

Every task here is a module-level function that does not modify its arguments, so that
Dask can ship it to a worker and send it again if the worker is lost.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from ..likelihoods.linear_gaussian import log_marginal_likelihood_from_stats
from ..priors.ibp import _labelled_log_prob_from_counts
from ..solvers.ibp._accelerated_kernels import refresh_posterior
from ._common import tree_sum
from ._shard import (
    ShardData,
    ShardState,
    SweepMessage,
    _pad,
    sweep_settings,
    sweep_shard_rows,
)

__all__ = [
    "MetropolisMessage",
    "ShardPlan",
    "ShardProposal",
    "fuzz_columns",
    "initialize",
    "labelled_statistics",
    "metropolis_round",
    "propose",
    "reverse_log_q",
    "shard_statistics",
    "sweep_rows",
]

_SEED_HIGH = np.iinfo(np.int64).max


@dataclass
class MetropolisMessage(SweepMessage):
    """What the root broadcasts for one evaluation of ``G_r``: the statistics of the
    labelled matrix (``K_cap`` slots), the hyperparameters and the sweep settings, the fuzz
    rate and the slots it may touch."""

    fuzz: float
    columns: np.ndarray | None = None


@dataclass
class ShardPlan:
    """One shard's part of the round's seed ``r``: the rows it may change (in the order of
    the first sweep), its sweep seed, the seed of its fuzz and whether it holds the token."""

    rows: np.ndarray
    sweep_seed: int
    fuzz_seed: int
    token: bool


@dataclass
class ShardProposal:
    """A shard's answer to :func:`propose`: its rows ``R_p`` of ``Z'``, ``log Q`` of its
    part of the forward proposal, and its own statistics of ``Z'_p``."""

    rows: np.ndarray
    log_q: float
    counts: np.ndarray
    gram: np.ndarray
    cross: np.ndarray
    compute_seconds: float = 0.0


def labelled_statistics(Z, X):
    """``(counts, Z^T Z, Z^T X)`` over all the slots of ``Z``, always computed the same way.

    ``Z^T X`` is summed row after row for each column (no BLAS, whose blocking and threads
    may change the rounding), so equal ``Z`` give equal bits whenever they are computed.
    """
    Z = np.asarray(Z)
    counts = Z.sum(axis=0, dtype=np.int64)
    Zf = Z.astype(float)
    gram = Zf.T @ Zf  # sums of ones: exact in any order
    cross = np.zeros((Z.shape[1], X.shape[1]))
    for k in np.flatnonzero(counts):
        cross[k] = X[Z[:, k] != 0].sum(axis=0)
    return counts, gram, cross


def _log_fuzz(n_disagree, n_entries, fuzz):
    """``log Q`` of ``n_entries`` fuzzed entries of which ``n_disagree`` differ (eq. 5.4)."""
    return float(n_disagree * np.log(fuzz) + (n_entries - n_disagree) * np.log1p(-fuzz))


def sweep_rows(X, Z, message: MetropolisMessage, plan: ShardPlan):
    """``G_r(Z)`` on one shard: sweeps over the rows ``plan.rows`` given all of ``Z``.

    Parameters
    ----------
    X : ndarray of shape (n_rows_p, n_dims)
        The shard's completed rows.
    Z : ndarray of shape (n_rows_p, K_cap), int8
        The shard's rows of the labelled matrix (not modified).
    message : MetropolisMessage
        Statistics of the whole labelled matrix and the settings.
    plan : ShardPlan

    Returns
    -------
    ndarray of shape (n_rows_p, K_cap), int8
        A deterministic function of ``(Z, message, plan)``; rows outside ``plan.rows`` are
        ``Z``'s, live features keep their slots, new ones (token holder only) take the
        lowest free slots and are dropped when none is left.
    """
    counts = message.counts
    live = np.flatnonzero(counts > 0)
    free = np.flatnonzero(counts == 0)
    K = live.size
    k_max = min(int(message.k_max), free.size) if plan.token else 0
    D = X.shape[1]
    spare = max(16, 2 * message.window * max(k_max, 1))
    cap = K + spare
    W = np.zeros((X.shape[0], cap), dtype=np.int8)
    W[:, :K] = Z[:, live]
    work = {
        "counts": _pad(counts[live], (cap,)),
        "gram": _pad(message.gram[np.ix_(live, live)], (cap, cap)),
        "cross": _pad(message.cross[live], (cap, D)),
        "cov": np.zeros((cap, cap)),
        "mean": np.zeros((cap, D)),
    }
    sigma_x2, sigma_a2 = message.sigma_x**2, message.sigma_a**2
    refresh_posterior(work["gram"], work["cross"], work["cov"], work["mean"], K, sigma_x2,
                      sigma_a2)
    rng = np.random.default_rng(plan.sweep_seed)
    windows_done = 0
    n_live = K
    rows = np.asarray(plan.rows, dtype=np.int64)
    # Without the token, a row would drop the features only it has (the kernel replaces
    # them by new ones, which it may not create): they are left as they are.
    keep = np.ones(K, dtype=np.int8)
    if not plan.token and K:
        keep[(work["counts"][:K] == 1) & W[rows, :K].any(axis=0)] = 0
    for sweep in range(message.n_sweeps):
        order = rows if sweep == 0 else rng.permutation(rows)
        sampled = np.ones(W.shape[1], dtype=np.int8)
        sampled[:K] = keep
        if message.feature_subsample is not None and n_live > 0:
            n_keep = max(1, int(np.ceil(message.feature_subsample * n_live)))
            chosen = np.zeros(n_live, dtype=np.int8)
            chosen[rng.choice(n_live, size=n_keep, replace=False)] = 1
            sampled[:n_live] &= chosen
        W, work, n_live, windows_done = sweep_shard_rows(X, W, work, n_live, order, sampled,
                                                   message, k_max, windows_done, spare, rng)
    G = Z.copy()
    G[:, live] = W[:, :K]
    created = W[:, K:n_live]
    created = created[:, created.any(axis=0)]
    n_kept = min(created.shape[1], free.size)
    G[:, free[:n_kept]] = created[:, :n_kept]
    return G


def shard_statistics(data: ShardData, shard: ShardState, Z):
    """The shard's own :func:`labelled_statistics` of its rows ``Z``."""
    X = np.ascontiguousarray(data.current(shard.imputed), dtype=float)
    return labelled_statistics(Z, X)


def _columns(message: MetropolisMessage, n_slots: int) -> np.ndarray:
    """The fuzzed slots ``C`` of the round (all the slots when the message names none)."""
    if message.columns is None:
        return np.arange(n_slots, dtype=np.int64)
    return np.asarray(message.columns, dtype=np.int64)


def propose(data: ShardData, shard: ShardState, Z, message: MetropolisMessage,
            plan: ShardPlan) -> ShardProposal:
    """The shard's part of the proposal: ``Z'_p`` = ``G_r(Z)_p`` with the entries of the
    rows ``R_p`` in the slots ``C`` fuzzed, ``log Q`` of that fuzz and the shard's
    statistics of ``Z'_p``."""
    start = time.perf_counter()
    X = np.ascontiguousarray(data.current(shard.imputed), dtype=float)
    G = sweep_rows(X, Z, message, plan)
    rows = np.asarray(plan.rows, dtype=np.int64)
    columns = _columns(message, Z.shape[1])
    flips = np.random.default_rng(plan.fuzz_seed).random((rows.size, columns.size))
    flips = flips < message.fuzz
    new_rows = G[rows].astype(np.int8)
    new_rows[:, columns] ^= flips.astype(np.int8)
    Z_new = Z.copy()
    Z_new[rows] = new_rows
    counts, gram, cross = labelled_statistics(Z_new, X)
    return ShardProposal(
        rows=new_rows, log_q=_log_fuzz(int(flips.sum()), flips.size, message.fuzz),
        counts=counts, gram=gram, cross=cross, compute_seconds=time.perf_counter() - start,
    )


def reverse_log_q(data: ShardData, shard: ShardState, Z_new, message: MetropolisMessage,
                  plan: ShardPlan, old_rows):
    """``log Q`` of the shard's part of the reverse proposal: ``G_r(Z')_p`` on the rows
    ``R_p`` against the current rows ``old_rows``, ``-inf`` when they differ outside the
    fuzzed slots ``C`` (the fuzz cannot undo that); and the seconds it took."""
    start = time.perf_counter()
    X = np.ascontiguousarray(data.current(shard.imputed), dtype=float)
    G = sweep_rows(X, Z_new, message, plan)
    G_rows = G[np.asarray(plan.rows, dtype=np.int64)]
    columns = _columns(message, Z_new.shape[1])
    outside = np.ones(Z_new.shape[1], dtype=bool)
    outside[columns] = False
    seconds = time.perf_counter() - start
    if np.any(G_rows[:, outside] != old_rows[:, outside]):
        return -np.inf, seconds
    n_disagree = int(np.sum(G_rows[:, columns] != old_rows[:, columns]))
    return _log_fuzz(n_disagree, G_rows.shape[0] * columns.size, message.fuzz), seconds


# -- at the root ------------------------------------------------------------------------------


def _tree_sum_parts(parts):

    return tuple(tree_sum(part[i] for part in parts) for i in range(3))


def _map(solver, state, function, args_per_shard):
    engine = solver._engine_for(state)
    before = engine.n_resent
    results = engine.map(function, args_per_shard)
    solver.n_resent_ += engine.n_resent - before
    return results


def _blocks(Z, bounds):
    return [Z[bounds[p]:bounds[p + 1]] for p in range(len(bounds) - 1)]


def initialize(solver, state):
    """Set up the labelled ``N x K_cap`` matrix from the starting ``state.Z``."""
    K_cap = int(solver.metropolis_max_features)
    Z = np.asarray(state.Z[:, : state.n_features], dtype=np.int8)
    live = np.flatnonzero(Z.any(axis=0))
    if live.size > K_cap:
        raise ValueError(
            f"correction='metropolis' samples matrices with metropolis_max_features="
            f"{K_cap} column slots, but the starting Z has {live.size} features. Raise "
            "metropolis_max_features above the number of features you expect (or start "
            "from fewer, e.g. with a smaller alpha)."
        )
    labelled = np.zeros((Z.shape[0], K_cap), dtype=np.int8)
    labelled[:, : live.size] = Z[:, live]
    state.stats["mh"] = {"Z": labelled, "parts": None, "totals": None, "X": None,
                         "version": None}
    _refresh_statistics(solver, state)
    _publish(solver, state)
    if not hasattr(solver, "acceptance_"):
        solver.acceptance_ = []
        solver.moved_ = []


def _refresh_statistics(solver, state):
    """Each shard's statistics of its rows, afresh, after the data changed."""
    st = state.stats
    mh = st["mh"]
    blocks = _blocks(mh["Z"], st["bounds"])
    parts = _map(solver, state, shard_statistics,
                 [(s, blocks[p]) for p, s in enumerate(st["shards"])])
    mh["parts"] = [tuple(part) for part in parts]
    mh["totals"] = _tree_sum_parts(mh["parts"])
    mh["X"] = state.X
    mh["version"] = st["data_version"]


def _publish(solver, state):
    """Show the estimator and the shards the live columns of the labelled matrix."""
    st = state.stats
    mh = st["mh"]
    live = np.flatnonzero(mh["totals"][0] > 0)
    blocks = _blocks(mh["Z"], st["bounds"])
    st["shards"] = [
        replace(s, Z=np.ascontiguousarray(blocks[p][:, live]), counts=part[0][live],
                gram=part[1][np.ix_(live, live)], cross=part[2][live], cov=None, mean=None)
        for p, (s, part) in enumerate(zip(st["shards"], mh["parts"], strict=True))
    ]
    solver._set_totals(state)
    state.Z = np.ascontiguousarray(mh["Z"][:, live])
    state.n_features = int(live.size)


def _log_target(totals, state, K_cap):
    """``log p(X | Z) + log P_lab(Z)`` from the summed statistics."""
    counts, gram, cross = totals
    live = np.flatnonzero(counts > 0)
    N, D = state.X.shape
    log_lik = log_marginal_likelihood_from_stats(
        gram[np.ix_(live, live)], cross[live], state.stats["sum_of_squares"], N, D,
        state.sigma_x, state.sigma_a,
    )
    return log_lik + _labelled_log_prob_from_counts(counts, N, state.alpha, state.beta, K_cap)


def _plans(solver, state, rng):
    """The round's seed ``r`` (rows and sweep seeds), the fuzz seeds and the token."""
    bounds = state.stats["bounds"]
    P = len(bounds) - 1
    r = int(rng.integers(0, _SEED_HIGH))
    fuzz_seeds = rng.integers(0, _SEED_HIGH, size=P)
    from_r = np.random.default_rng(r)
    plans = []
    for p in range(P):
        n_rows = int(bounds[p + 1] - bounds[p])
        rows = from_r.choice(n_rows, size=min(int(solver.metropolis_rows), n_rows),
                             replace=False).astype(np.int64)
        plans.append(ShardPlan(rows=rows, sweep_seed=int(from_r.integers(0, _SEED_HIGH)),
                               fuzz_seed=int(fuzz_seeds[p]),
                               token=p == state.stats["token"]))
    return plans


def fuzz_columns(counts, Z, bounds, plans, free_slots, fuzz):
    """The round's fuzzed slots ``C`` and fuzz rate, from the rows the round leaves alone.

    ``C`` is the slots some row outside the chosen rows ``R = U_p R_p`` has, and the
    ``free_slots`` lowest of the others (all the slots when ``free_slots`` is None, eq.
    5.4 as the thesis writes it). The rate is ``fuzz``, or with ``fuzz="auto"`` one over
    the number of fuzzed entries ``|R| |C|`` (one flip expected per proposal), at most
    0.5. Both depend on ``r`` and the rows outside ``R`` only, which the proposal does
    not change: the reverse proposal has the same ``C`` and rate.

    Parameters
    ----------
    counts : ndarray of shape (K_cap,)
        Column counts of the labelled matrix ``Z``.
    Z : ndarray of shape (N, K_cap)
        The labelled matrix.
    bounds : ndarray of shape (n_shards + 1,)
        First row of every shard (and ``N``).
    plans : list of ShardPlan
        The chosen rows, shard by shard (indices within the shard).
    free_slots : int or None
    fuzz : float or "auto"

    Returns
    -------
    columns : ndarray of int64 or None
        Sorted slots ``C``; None for all the slots.
    rate : float
    """
    chosen = np.concatenate([bounds[p] + np.asarray(plan.rows, dtype=np.int64)
                             for p, plan in enumerate(plans)])
    K_cap = Z.shape[1]
    if free_slots is None:
        columns, n_columns = None, K_cap
    else:
        used_by_rest = (np.asarray(counts) - Z[chosen].sum(axis=0, dtype=np.int64)) > 0
        others = np.flatnonzero(~used_by_rest)
        columns = np.sort(np.concatenate([np.flatnonzero(used_by_rest),
                                          others[: int(free_slots)]])).astype(np.int64)
        n_columns = columns.size
    if fuzz == "auto":
        n_entries = chosen.size * n_columns
        rate = 0.5 if n_entries <= 2 else 1.0 / n_entries
    else:
        rate = float(fuzz)
    return columns, rate


def metropolis_round(solver, state, rng) -> None:
    """One Metropolis-Hastings step of the exact parallel sampler (one round)."""
    st = state.stats
    mh = st["mh"]
    K_cap = int(solver.metropolis_max_features)
    shards = st["shards"]
    start = time.perf_counter()
    refreshed = mh["X"] is not state.X or mh["version"] is not st["data_version"]
    if refreshed:
        _refresh_statistics(solver, state)
    plans = _plans(solver, state, rng)
    counts, gram, cross = mh["totals"]
    columns, rate = fuzz_columns(counts, mh["Z"], st["bounds"], plans,
                                 solver.fuzz_free_slots, solver.fuzz)
    message = MetropolisMessage(
        counts=counts, gram=gram, cross=cross, **sweep_settings(solver, state), fuzz=rate,
        columns=columns,
    )
    blocks = _blocks(mh["Z"], st["bounds"])
    # Exchange 1: the proposal and its statistics.
    proposals = _map(solver, state, propose,
                     [(s, blocks[p], message, plans[p]) for p, s in enumerate(shards)])
    root_start = time.perf_counter()
    new_blocks = []
    for block, plan, proposal in zip(blocks, plans, proposals, strict=True):
        new = block.copy()
        new[plan.rows] = proposal.rows
        new_blocks.append(new)
    new_parts = [(q.counts, q.gram, q.cross) for q in proposals]
    new_totals = _tree_sum_parts(new_parts)
    root_seconds = time.perf_counter() - root_start
    if all(np.array_equal(proposal.rows, block[plan.rows])
           for block, plan, proposal in zip(blocks, plans, proposals, strict=True)):
        # Z' = Z: the reverse sweep is the forward one and the ratio is exactly 1 (the
        # same terms as the second exchange would send); no second exchange.
        reverses = [(q.log_q, 0.0) for q in proposals]
    else:
        # Exchange 2: the reverse proposal given the proposal's statistics.
        new_message = replace(message, counts=new_totals[0], gram=new_totals[1],
                              cross=new_totals[2])
        reverses = _map(solver, state, reverse_log_q,
                        [(s, new_blocks[p], new_message, plans[p], blocks[p][plans[p].rows])
                         for p, s in enumerate(shards)])
    sampled = time.perf_counter()
    # The current matrix's target, unless neither it nor the hyperparameters changed.
    key = (state.alpha, state.beta, state.sigma_x, state.sigma_a, st["sum_of_squares"])
    if refreshed or mh.get("log_target", (None,))[0] != key:
        mh["log_target"] = (key, _log_target(mh["totals"], state, K_cap))
    log_target_new = _log_target(new_totals, state, K_cap)
    log_ratio = (log_target_new - mh["log_target"][1]
                 + sum(r[0] for r in reverses) - sum(q.log_q for q in proposals))
    accepted = bool(np.log(rng.random()) < log_ratio)
    # For inspection (and the tests): the last step's proposal and its log ratio.
    mh["last"] = {"plans": plans, "Z_new": new_blocks, "log_ratio": float(log_ratio),
                  "columns": columns, "fuzz": rate,
                  "log_q_forward": [q.log_q for q in proposals],
                  "log_q_reverse": [r[0] for r in reverses]}
    moved = False
    if accepted:
        Z_new = np.concatenate(new_blocks, axis=0)
        moved = not np.array_equal(Z_new, mh["Z"])
        mh["Z"] = Z_new
        mh["parts"] = new_parts
        mh["totals"] = new_totals
        mh["log_target"] = (key, log_target_new)
    if accepted or refreshed:
        _publish(solver, state)
    st["token"] = (st["token"] + 1) % len(shards)
    done = time.perf_counter()
    solver.acceptance_.append(accepted)
    solver.moved_.append(moved)
    solver.timings_["round"].append(sampled - start - root_seconds)
    solver.timings_["compute"].append(
        max(q.compute_seconds for q in proposals) + max(r[1] for r in reverses))
    solver.timings_["root"].append(done - sampled + root_seconds)
