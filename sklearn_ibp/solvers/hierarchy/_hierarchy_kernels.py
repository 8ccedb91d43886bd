"""Numba kernels of the Gibbs sampler of the feature hierarchies (Doshi-Velez 2009, ch. 7).

The state is held in plain arrays with spare capacity (``Lcap`` category slots,
``Kcap`` feature slots):

``C`` (N, Lcap) int8
    Category memberships ``c_nl``; ``category`` (N,) gives the one category of each row
    when the upper process is the DP.
``M`` (Lcap, Kcap) int8
    Category-feature links ``m_lk``.
``S`` (N, Kcap) int32
    Parent counts ``s_nk = c_n . m_k``.
``Z`` (N, Kcap) int8
    Feature assignments; ``Z = [S > 0]`` for the ``or`` link, drawn with
    ``P(z_nk = 1) = 1 - q^s_nk`` for the noisy-or (eq. 7.7); never 1 where ``s_nk = 0``.
``A`` (Kcap, D), ``pred`` (N, D) = ``Z A``
    Explicit features and each row's prediction, read by
    :func:`sklearn_ibp.likelihoods._observation_kernels.row_log_likelihood`.
``sizes`` (Lcap,), ``links`` (Kcap,)
    Rows per category and categories per feature. A slot whose count drops to zero is
    dead; the driver compacts dead slots after every pass. ``counts`` holds
    ``[L_slots, K_slots, L_live, K_live]``.

Every move is an exact Metropolis-Hastings or Gibbs update. Whenever a move changes which
features a row's parents reach, the children that gain their first parent are drawn from
their prior given the new parent count (``z = 1`` for the ``or`` link) and the children that
lose their last parent are switched off: a category or link entry is thus sampled jointly
with the children it alone activates (sec. 7.2.3), and a child can only switch on together
with a parent. The proposal cancels the prior of those children, so acceptance ratios
hold only the prior of the moved entry, the noisy-or prior of the children that keep a
parent (their parent count changes) and the likelihood of the affected rows.

Status codes: a pass returns ``-1`` when it finished and otherwise the index (row or
category) to resume from once the driver has grown the arrays.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ...likelihoods._observation_kernels import row_log_likelihood
from .._draw_kernels import (
    FALSE,
    ONE,
    TRUE,
    draw_from_log_weights,
    random_order,
    truncated_poisson_by_inversion,
)
from .._feature_proposal_kernels import (
    feature_proposal,
    log_prior_feature,
)

LINK_OR = 0
LINK_NOISY_OR = 1

#: Typed constants for calls between kernels: a literal 1 or a module-level int would
#: compile the callee once more for that value (numba types them as literals).
_ONE = np.int64(1)
_ONE_CHILD = np.int8(1)
_NOISY_OR = np.int64(LINK_NOISY_OR)

UPPER_DP = 0
UPPER_IBP = 1

# counts[...] indices
L_SLOTS = 0
K_SLOTS = 1
L_LIVE = 2
K_LIVE = 3



@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def child_log_prior(z, s, log_q, link):
    """``log P(z | s)`` of one child under the link (``s > 0``)."""
    if link == LINK_OR:
        return 0.0 if z == 1 else -np.inf
    if z == 1:
        return math.log1p(-math.exp(s * log_q)) if s * log_q < 0.0 else -np.inf
    return s * log_q


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def draw_child(s, log_q, link, rng):
    """A child drawn from its prior given ``s > 0`` parents."""
    if link == LINK_OR:
        return 1
    return 1 if rng.random() < -math.expm1(s * log_q) else 0


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def draw_child_legacy(s, log_q, link):
    """:func:`draw_child` from numba's internal generator (seeded per new row)."""
    if link == LINK_OR:
        return 1
    return 1 if np.random.random() < -math.expm1(s * log_q) else 0  # noqa: NPY002


#: Rejection tries of :func:`_truncated_poisson` before it draws by inversion.
_POISSON_TRIES = 1000


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _truncated_poisson(rate, k_max, rng):
    """A ``Poisson(rate)`` draw conditioned on being at most ``k_max``: the draws of
    :func:`~sklearn_ibp.solvers._draw_kernels.truncated_poisson` without numba's
    ``Generator.poisson``, whose implementation (both of its algorithms) made about half
    a CPU second of a cold fit's compile.

    Below ``rate = 10``, where ``Generator.poisson`` multiplies uniforms until their
    product falls to ``exp(-rate)`` (the ``mult`` algorithm of NumPy and numba), that
    product is written out here from the same uniforms, so the draws are those of
    ``truncated_poisson`` bit for bit; ``rate = 0`` gives 0 without a uniform, as there.
    From ``rate = 10`` on (where at most ``P(k <= k_max) = 0.13`` of draws would be
    accepted, for ``k_max <= 6``) the draw is by inversion of the truncated distribution
    at once, the exact fallback of ``truncated_poisson`` after its rejection tries.
    """
    if rate < 10.0:
        limit = math.exp(-rate)
        for _ in range(_POISSON_TRIES):
            k = 0
            if rate > 0.0:
                product = 1.0
                while True:
                    product *= rng.random()
                    if product > limit:
                        k += 1
                    else:
                        break
            if k <= k_max:
                return k
    return truncated_poisson_by_inversion(rate, k_max, rng)


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _log_poisson_cdf(rate, k_max):
    """``log P(Poisson(rate) <= k_max)``."""
    term = math.exp(-rate)
    total = term
    for k in range(1, k_max + 1):
        term *= rate / k
        total += term
    return math.log(total) if total < 1.0 else 0.0


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _binary_feature_proposal(draw, prior, noise, X, observed, rows, n_rows, children, preds,
                             out, rng):
    """:func:`feature_proposal` of a binary feature (Bernoulli prior ``prior[0]``, the
    detection likelihood): the same Bernoulli per dimension, computed in the same order,
    with :func:`~sklearn_ibp.solvers._feature_proposal_kernels.binary_entry_proposal` and
    :func:`~sklearn_ibp.solvers._draw_kernels.draw_binary` written out (the same
    arithmetic and one uniform per dimension; two kernels fewer to compile).
    """
    total = 0.0
    for d in range(X.shape[1]):
        log_odds = math.log(prior[0]) - math.log1p(-prior[0])
        for i in range(n_rows):
            n = rows[i]
            if children[i] == 1 and observed[n, d]:
                base = preds[i, d]
                x = X[n, d]
                p_now = 1.0 - noise[1, d] if base > 0.5 else noise[0, d]
                p_with = 1.0 - noise[1, d]
                if x > 0.5:
                    log_odds += math.log(p_with) - math.log(p_now)
                else:
                    log_odds += math.log1p(-p_with) - math.log1p(-p_now)
        if draw:
            p_one = 1.0 / (1.0 + math.exp(-log_odds)) if log_odds > -700.0 else 0.0
            out[d] = 1.0 if rng.random() < p_one else 0.0
        if out[d] > 0.5:
            total += -math.log1p(math.exp(-log_odds)) if log_odds > -700.0 else log_odds
        else:
            total += -math.log1p(math.exp(log_odds)) if log_odds < 700.0 else -log_odds
    return total


@njit(cache=True, no_cfunc_wrapper=True)
def feature_row_proposal(
    draw, prior_kind, prior, obs_kind, noise, X, observed, rows, n_rows, children, preds,
    out, rng, continuous,
):
    """:func:`feature_proposal`, compiled for binary features only when ``continuous`` is
    None.

    ``continuous`` is None for a binary feature prior and ``np.True_`` otherwise
    (:func:`~sklearn_ibp.solvers.hierarchy.hierarchy_gibbs.continuous_marker`): numba
    drops the branch a None argument rules out, so a fit of binary data never compiles
    the Gaussian and truncated-Gaussian proposals (about a tenth of its cold compile).
    """
    if continuous is None:
        return _binary_feature_proposal(draw, prior, noise, X, observed, rows, n_rows,
                                        children, preds, out, rng)
    return feature_proposal(draw, prior_kind, prior, obs_kind, noise, X, observed, rows,
                            n_rows, children, preds, out, rng)


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _propose_feature(
    draw, prior_kind, prior, obs_kind, noise, X, observed, rows, n_rows, children, base,
    a, rng, continuous,
):
    """``log p(a) - log q(a)`` of one new feature, drawn into ``a`` when ``draw``.

    ``q`` is :func:`feature_row_proposal` given the rows ``rows[:n_rows]`` with ``children``
    and the prediction ``base[:n_rows]`` of their other features; ``base`` then gains the
    feature in the rows where it is on, so that the next feature of a set is proposed
    given this one (several new features can thus share out a residual). The density of
    a set proposed in sequence depends on the order, so the reverse of a move scores the
    features it would replace in a uniformly random order
    (:func:`_replaced_features_weight`): the order is then an auxiliary variable drawn
    from its conditional (uniform, as the target is symmetric in the features) before
    each move, and the Metropolis-Hastings ratio with the single ordered density is exact.
    """
    # feature_row_proposal written out: each kernel level re-optimises what it links.
    if continuous is None:
        log_q = _binary_feature_proposal(draw, prior, noise, X, observed, rows, n_rows,
                                         children, base, a, rng)
    else:
        log_q = feature_proposal(draw, prior_kind, prior, obs_kind, noise, X, observed, rows,
                                 n_rows, children, base, a, rng)
    for i in range(n_rows):
        if children[i] == 1:
            for d in range(a.shape[0]):
                base[i, d] += a[d]
    if continuous is None:
        # log_prior_feature's Bernoulli terms, in its order: a binary fit then links none
        # of its Gaussian and exponential branches into the passes.
        log_p = 0.0
        for d in range(a.shape[0]):
            log_p += math.log(prior[0]) if a[d] > 0.5 else math.log1p(-prior[0])
        return log_p - log_q
    return log_prior_feature(prior_kind, prior, a) - log_q


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _replaced_features_weight(
    features, n_features, order, prior_kind, prior, obs_kind, noise, X, observed, rows,
    n_rows, Z, A, children, base, rng, continuous,
):
    """``sum log p(a_k) - log q(a_k | ...)`` over ``features[:n_features]`` in random order.

    The reverse of a move that proposes new features in sequence with
    :func:`_propose_feature`: the features the move would replace, scored one after the
    other in a uniformly random order (``order`` is a work buffer), each given ``base``
    (the rows' prediction without any of them) plus those scored before it. The
    children are read from ``Z[rows[i], k]``. ``base`` is advanced in place.
    """
    random_order(n_features, order, rng)
    total = 0.0
    for t in range(n_features):
        k = features[order[t]]
        for i in range(n_rows):
            children[i] = Z[rows[i], k]
        total += _propose_feature(FALSE, prior_kind, prior, obs_kind, noise, X, observed,
                                  rows, n_rows, children, base, A[k], rng, continuous)
    return total


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _shifted_row(pred_row, A, ks, deltas, n_changes, out):
    for d in range(out.shape[0]):
        out[d] = pred_row[d]
    for j in range(n_changes):
        dz = deltas[j]
        if dz != 0:
            a = A[ks[j]]
            for d in range(out.shape[0]):
                out[d] += dz * a[d]


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _children_change(deltas, n_changes):
    """Whether any child changes (else the row's prediction and likelihood stay)."""
    for j in range(n_changes):
        if deltas[j] != 0:
            return True
    return False


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _change_parents(n, row_shift, sign, S, Z, K_slots, log_q, link, ks, deltas, rng):
    """Children of row ``n`` under a change ``s_n += sign * row_shift``.

    Writes the changed children into ``ks``/``deltas`` (new z minus old z) and returns
    ``(n_changes, log prior ratio of the children that keep a parent)``. Nothing in the
    state is modified.
    """
    n_changes = 0
    log_ratio = 0.0
    for k in range(K_slots):
        if row_shift[k] == 0:
            continue
        s_old = S[n, k]
        s_new = s_old + sign * row_shift[k]
        z_old = Z[n, k]
        if s_old == 0:
            z_new = draw_child(s_new, log_q, link, rng)
        elif s_new == 0:
            z_new = 0
        else:
            z_new = z_old
            if link == LINK_NOISY_OR:
                log_ratio += child_log_prior(z_old, np.int64(s_new), log_q, link) - \
                    child_log_prior(z_old, np.int64(s_old), log_q, link)
        ks[n_changes] = k
        deltas[n_changes] = z_new - z_old
        n_changes += 1
    return n_changes, log_ratio


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _apply_parents(n, row_shift, sign, S, Z, pred, A, K_slots, ks, deltas, n_changes, new_pred):
    for k in range(K_slots):
        if row_shift[k] != 0:
            S[n, k] += sign * row_shift[k]
    for j in range(n_changes):
        Z[n, ks[j]] += deltas[j]
    for d in range(pred.shape[1]):
        pred[n, d] = new_pred[d]


# --------------------------------------------------------------------------------------
# Row operations shared by the passes. numba lowers an inline loop over the dimensions
# where it is written (some 25-50 ms of a cold fit's compile each), a call to a small
# kernel costs a few ms a site once the kernel is compiled: the loops the passes repeat
# are therefore these calls. Each adds the same terms in the same order as the loop it
# replaces, so the draws are unchanged bit for bit.
# --------------------------------------------------------------------------------------
@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _row_prediction(z, A, K, pred):
    """``pred = sum_{k < K, z_k = 1} A[k]`` (overwritten), one row's prediction."""
    for d in range(pred.shape[0]):
        pred[d] = 0.0
    for k in range(K):
        if z[k] == 1:
            for d in range(pred.shape[0]):
                pred[d] += A[k, d]


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _copy_row(out, src):
    """``out[:] = src`` (element loop)."""
    for d in range(out.shape[0]):
        out[d] = src[d]


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _subtract_row(out, A, k):
    """``out -= A[k]`` (element loop)."""
    for d in range(out.shape[0]):
        out[d] -= A[k, d]


# --------------------------------------------------------------------------------------
# Work buffers, allocated by the driver: arrays a kernel made itself would each compile
# numba's allocation for their type (about 0.1 CPU s apiece on a cold fit).
# --------------------------------------------------------------------------------------
def dp_rows_work(N, D, Lcap, Kcap, n_auxiliary, max_new):
    """The work buffers of :func:`dp_rows`, in its argument order."""
    return (
        np.empty(D), np.zeros(1, np.int64), np.zeros(1, np.int64), np.zeros((1, D)),
        np.empty(Kcap, np.int64), np.empty(Kcap, np.int64), np.empty(Lcap + n_auxiliary),
        np.zeros((Lcap + n_auxiliary, Kcap), np.int8), np.zeros(n_auxiliary, np.int64),
        np.zeros((n_auxiliary, Kcap), np.int8),
    )


def ibp_rows_work(N, D, Lcap, Kcap, max_new_categories, max_new):
    """The work buffers of :func:`ibp_rows`, in its argument order."""
    return (
        np.empty(D), np.empty(Kcap, np.int64), np.empty(Kcap, np.int64),
        np.zeros(Kcap, np.int64), np.zeros(1, np.int64), np.zeros(1, np.int64),
        np.zeros((1, D)), np.empty(Lcap, np.int64), np.empty(Kcap, np.int64),
        np.empty(Kcap, np.int64), np.empty(N + 1), np.empty(Lcap, np.int64),
        np.empty(Kcap, np.int8), np.zeros((max_new_categories, Kcap), np.int8),
        np.empty(Kcap, np.int64), np.zeros(Kcap, np.int64),
    )


def link_pass_work(N, D, Lcap, Kcap, max_new):
    """The work buffers of :func:`link_pass`, in its argument order."""
    return (
        np.empty(N, np.int64), np.empty((N, D)), np.empty((N, Kcap), np.int64),
        np.empty((N, Kcap), np.int64), np.empty(N, np.int64), np.zeros(Kcap, np.int64),
        np.empty(N), np.empty(N), np.empty(N, np.int64), np.empty((N, max_new), np.int64),
        np.empty((N, D)), np.empty(Kcap, np.int64), np.empty(Kcap, np.int64),
        np.empty(Kcap, np.int64),
    )


# --------------------------------------------------------------------------------------
# Rows: the DP upper process (Neal's Algorithm 8 over categories)
# --------------------------------------------------------------------------------------
@njit(cache=True, no_cfunc_wrapper=True)
def dp_rows(
    start, X, observed, C, category, M, S, Z, A, pred, sizes, links, counts,
    alpha_c, alpha_m, log_q, link, obs_kind, noise, prior_kind, prior,
    n_auxiliary, max_new, rng, continuous, new_pred, one_row, one_child, one_pred, own,
    order, log_w_work, z_opts, aux_new, aux_links,
):
    """Reassign every row's category (Doshi-Velez 2009, sec. 7.2.1: Neal 2000's partial Gibbs).

    A row chooses among the other rows' categories (weight ``n_{-i,l}``) and
    ``n_auxiliary`` fresh categories (weight ``alpha_C / n_auxiliary``) whose links are
    drawn from the IBP predictive of ``M`` (existing feature ``k`` with probability
    ``links_k / (L + 1)``, ``Poisson(alpha_M / (L + 1))`` new features whose ``A`` is
    proposed from row ``n``'s data by :func:`feature_proposal`). A row alone in its
    category makes that category the first auxiliary. The option's children are drawn
    from their prior given the option's links, except the current option's, which are the
    current ``z_n`` (the auxiliary-variable construction of Algorithm 8 with
    ``(m_l, z_n, A_new)`` as the option's parameter; an auxiliary's weight carries
    ``p(A_new) / q(A_new)`` because its new features are not drawn from their prior, each
    new feature proposed given the option's existing features only, and the mass of the
    Poisson below ``max_new``, at which the count is truncated). The one approximation: a
    singleton category with more than ``max_new`` own features is weighted as if the
    count were not truncated (its reverse draw is impossible); at ``max_new = 6`` and
    ``alpha_M / (L + 1) = 1`` such counts have prior probability 1e-4.

    The work buffers after ``continuous`` come from :func:`dp_rows_work` (a kernel that
    allocates compiles numba's allocation for every array type it makes).
    """
    N, D = X.shape
    Lcap, Kcap = M.shape
    for n in range(start, N):
        one_row[0] = n
        L_slots, K_slots = counts[L_SLOTS], counts[K_SLOTS]
        if L_slots + 1 > Lcap or K_slots + n_auxiliary * max_new > Kcap:
            return n
        l0 = category[n]
        # Views made once (1-D indexing compiles to less than 2-D).
        m_l0, z_n = M[l0], Z[n]
        sizes[l0] -= 1
        singleton = sizes[l0] == 0
        L_minus = counts[L_LIVE] - (1 if singleton else 0)
        n_opts = L_slots + n_auxiliary
        width = K_slots + n_auxiliary * max_new
        log_w = log_w_work[:n_opts]
        for o in range(n_opts):
            log_w[o] = -np.inf
            for k in range(width):
                z_opts[o, k] = 0
        for j in range(n_auxiliary):
            aux_new[j] = 0
            for k in range(K_slots):
                aux_links[j, k] = 0
        # Existing categories.
        for cat in range(L_slots):
            if sizes[cat] == 0:
                continue
            if cat == l0:
                for k in range(K_slots):
                    z_opts[cat, k] = z_n[k]
            else:
                for k in range(K_slots):
                    if M[cat, k] == 1:
                        z_opts[cat, k] = draw_child(_ONE, log_q, link, rng)
            log_w[cat] = math.log(sizes[cat])
        # Auxiliary categories.
        log_aux = math.log(alpha_c / n_auxiliary)
        first_fresh = 0
        if singleton:
            first_fresh = 1
            for k in range(K_slots):
                z_opts[L_slots, k] = z_n[k]
            # The features only this category links were proposed from row n's data:
            # their weight carries prior over proposal density, the features scored in
            # a random order given the row's features that other categories also link.
            # (aux_links[0] serves as the mask: a singleton's first auxiliary is itself.)
            for k in range(K_slots):
                aux_links[0, k] = 1 if z_n[k] == 1 and not (m_l0[k] == 1 and links[k] == 1) \
                    else 0
            _row_prediction(aux_links[0], A, K_slots, one_pred[0])
            for k in range(K_slots):
                aux_links[0, k] = 0
            # As for the fresh options below: p / q of the (truncated) Poisson count.
            log_w[L_slots] = log_aux + _log_poisson_cdf(alpha_m / (L_minus + 1.0), max_new)
            n_own = np.int64(0)
            for k in range(K_slots):
                if m_l0[k] == 1 and links[k] == 1:
                    own[n_own] = k
                    n_own += 1
            log_w[L_slots] += _replaced_features_weight(
                own, n_own, order, prior_kind, prior, obs_kind, noise, X, observed, one_row,
                ONE, Z, A, one_child, one_pred, rng, continuous,
            )
        for j in range(first_fresh, n_auxiliary):
            o = L_slots + j
            for k in range(K_slots):
                others = links[k] - (m_l0[k] if singleton else 0)
                if others > 0 and rng.random() * (L_minus + 1.0) < others:
                    aux_links[j, k] = 1
                    z_opts[o, k] = draw_child(_ONE, log_q, link, rng)
            rate = alpha_m / (L_minus + 1.0)
            n_new = _truncated_poisson(rate, max_new, rng)
            aux_new[j] = n_new
            # p / q of the count: the Poisson truncated at max_new has mass below one.
            log_w[o] = log_aux + _log_poisson_cdf(rate, max_new)
            _row_prediction(z_opts[o], A, K_slots, one_pred[0])
            for t in range(n_new):
                slot = K_slots + j * max_new + t
                z_opts[o, slot] = draw_child(_ONE, log_q, link, rng)
                one_child[0] = z_opts[o, slot]
                log_w[o] += _propose_feature(
                    TRUE, prior_kind, prior, obs_kind, noise, X, observed, one_row, ONE,
                    one_child, one_pred, A[slot], rng, continuous,
                )
        # Likelihood of each option.
        for o in range(n_opts):
            if log_w[o] == -np.inf:
                continue
            _row_prediction(z_opts[o], A, width, new_pred)
            log_w[o] += row_log_likelihood(obs_kind, X[n], observed[n], new_pred, noise)
        chosen = draw_from_log_weights(log_w, rng)
        # Apply.
        keep_current = (chosen == l0) or (singleton and chosen == L_slots)
        if keep_current:
            sizes[l0] += 1
            continue
        if chosen < L_slots:
            target = chosen
        else:
            j = chosen - L_slots
            target = L_slots
            counts[L_SLOTS] += 1
            counts[L_LIVE] += 1
            for k in range(K_slots):
                if aux_links[j, k] == 1:
                    M[target, k] = 1
                    links[k] += 1
            for t in range(aux_new[j]):
                slot = counts[K_SLOTS]
                src = K_slots + j * max_new + t
                _copy_row(A[slot], A[src])
                M[target, slot] = 1
                links[slot] = 1
                z_opts[chosen, slot] = z_opts[chosen, src]
                counts[K_SLOTS] += 1
                counts[K_LIVE] += 1
        if singleton:
            for k in range(K_slots):
                if m_l0[k] == 1:
                    links[k] -= 1
                    if links[k] == 0:
                        counts[K_LIVE] -= 1
                    m_l0[k] = 0
            counts[L_LIVE] -= 1
        C[n, l0] = 0
        C[n, target] = 1
        category[n] = target
        sizes[target] += 1
        K_now = counts[K_SLOTS]
        for k in range(K_now):
            S[n, k] = M[target, k]
            z_n[k] = z_opts[chosen, k] if k < width else 0
        _row_prediction(z_n, A, K_now, pred[n])
    return -1


# --------------------------------------------------------------------------------------
# Rows: the IBP upper process
# --------------------------------------------------------------------------------------
@njit(cache=True, no_cfunc_wrapper=True)
def ibp_rows(
    start, X, observed, C, M, S, Z, A, pred, sizes, links, counts,
    alpha_c, alpha_m, log_q, link, obs_kind, noise, prior_kind, prior,
    max_new_categories, max_new, rng, continuous, new_pred, ks, deltas, shift, one_row,
    one_child, one_pred, cat_order, own, order, log_count, own_categories, seen, prop_links,
    link_count, proposal_shift,
):
    """Update every row's memberships of shared categories, then its own categories.

    Shared categories (``n_{-i,l} > 0``): a Metropolis flip of ``c_nl`` with IBP prior odds
    ``n_{-i,l} / (N - n_{-i,l})``, jointly with the children it alone activates. Own
    categories (only row ``n``, with the features only they link): replaced by
    ``Poisson(alpha_C / N)`` new categories whose links follow the IBP predictive of ``M``
    and whose new features' ``A`` is proposed from the row's data (the uncollapsed
    new-feature move of Doshi-Velez 2009, sec. 3.2, one level up; the Metropolis-Hastings ratio
    holds the likelihood and ``p(A) / q(A)`` of the new and of the replaced features). The counts
    are truncated (at ``max_new_categories`` categories, ``max_new`` new features a
    category): the ratio holds the truncated Poisson's mass of the new features' counts,
    and a row whose own categories the truncated proposal could not have drawn keeps them,
    so the move is exact at any truncation (a tight one only slows mixing).

    The work buffers after ``continuous`` come from :func:`ibp_rows_work`.
    """
    N, D = X.shape
    Lcap, Kcap = M.shape
    # log n, for the IBP prior odds of c_nl (a loop: no array expression to compile)
    log_count[0] = -np.inf
    for i in range(1, N + 1):
        log_count[i] = math.log(float(i))
    base = one_pred[0]
    for n in range(start, N):
        one_row[0] = n
        L_slots, K_slots = counts[L_SLOTS], counts[K_SLOTS]
        if (
            L_slots + max_new_categories > Lcap
            or K_slots + max_new_categories * max_new > Kcap
        ):
            return n
        # The row's views, made once (each view made is code to compile).
        x_n, observed_n, pred_n, c_n = X[n], observed[n], pred[n], C[n]
        log_lik = row_log_likelihood(obs_kind, x_n, observed_n, pred_n, noise)
        # Shared categories, in a random order.
        random_order(L_slots, cat_order, rng)
        for j in range(L_slots):
            cat = cat_order[j]
            if sizes[cat] == 0:
                continue
            others = sizes[cat] - c_n[cat]
            if others == 0:
                continue
            for k in range(K_slots):
                shift[k] = M[cat, k]
            sign = -1 if c_n[cat] == 1 else 1
            n_changes, log_ratio = _change_parents(
                n, shift, sign, S, Z, K_slots, log_q, link, ks, deltas, rng
            )
            _shifted_row(pred_n, A, ks, deltas, n_changes, new_pred)
            new_lik = log_lik
            if _children_change(deltas, n_changes):
                new_lik = row_log_likelihood(obs_kind, x_n, observed_n, new_pred, noise)
            log_odds = log_count[others] - log_count[N - others]
            log_accept = log_ratio + new_lik - log_lik + (log_odds if sign == 1 else -log_odds)
            if log_accept >= 0.0 or rng.random() < math.exp(log_accept):
                _apply_parents(n, shift, sign, S, Z, pred, A, K_slots, ks, deltas,
                               n_changes, new_pred)
                c_n[cat] = 1 if sign == 1 else 0
                sizes[cat] += sign
                log_lik = new_lik
        # Own categories: the current ones and the features only they link.
        n_own = np.int64(0)
        for k in range(K_slots):
            shift[k] = 0
        for cat in range(L_slots):
            if c_n[cat] == 1 and sizes[cat] == 1:
                own_categories[n_own] = cat
                n_own += 1
                for k in range(K_slots):
                    shift[k] -= M[cat, k]
        L_minus = counts[L_LIVE] - n_own
        # The reverse of the truncated proposal: at most max_new_categories own categories,
        # each of which, taken in a uniformly random order (an auxiliary variable, as for
        # the features in _propose_feature), brings at most max_new features that no other
        # category and no own category before it links; else the move cannot be reversed
        # and is rejected. The truncated Poisson's mass of those counts enters the ratio.
        if n_own > max_new_categories:
            continue
        log_truncation = 0.0
        feasible = True
        random_order(n_own, cat_order, rng)  # (no draw when n_own = 0)
        for k in range(K_slots):
            seen[k] = 0
        for j in range(n_own):
            cat = own_categories[cat_order[j]]
            n_introduced = np.int64(0)
            for k in range(K_slots):
                if M[cat, k] == 1 and links[k] + shift[k] == 0 and seen[k] == 0:
                    seen[k] = 1
                    n_introduced += 1
            if n_introduced > max_new:
                feasible = False
                break
            log_truncation -= _log_poisson_cdf(alpha_m / (L_minus + j + 1.0), max_new)
        if not feasible:
            continue
        # Proposal: new categories with links from the IBP predictive over categories.
        n_cat = _truncated_poisson(alpha_c / N, max_new_categories, rng)
        for j in range(n_cat):
            for k in range(K_slots + n_cat * max_new):
                prop_links[j, k] = 0
        for k in range(K_slots):
            link_count[k] = links[k] + shift[k]  # links from the other categories
        n_feat = np.int64(0)
        for j in range(n_cat):
            customers = L_minus + j + 1.0
            for k in range(K_slots + n_feat):
                if link_count[k] > 0 and rng.random() * customers < link_count[k]:
                    prop_links[j, k] = 1
            log_truncation += _log_poisson_cdf(alpha_m / customers, max_new)
            t_new = _truncated_poisson(alpha_m / customers, max_new, rng)
            for _ in range(t_new):
                k = K_slots + n_feat
                prop_links[j, k] = 1
                link_count[k] = 0
                n_feat += 1
            for k in range(K_slots + n_feat):
                link_count[k] += prop_links[j, k]
        # The children of row n under the proposal, whose parent counts change by the
        # links of the new categories less those of the own ones: link_count less links
        # (zero beyond the slots in use).
        width = K_slots + n_feat
        for k in range(width):
            proposal_shift[k] = link_count[k] - links[k]
        # (Slots from K_slots on hold no parent and no child until a proposal is accepted.)
        n_changes, log_ratio = _change_parents(
            n, proposal_shift, _ONE, S, Z, width, log_q, link, ks, deltas, rng
        )
        if n_own == 0 and n_cat == 0:
            continue
        log_ratio += log_truncation
        # Reverse: the features only the own categories link, scored in a random order
        # given the row's current features that other categories link.
        _copy_row(base, pred_n)
        n_excl = np.int64(0)
        for k in range(K_slots):
            if link_count[k] == 0 and shift[k] < 0:
                own[n_excl] = k
                n_excl += 1
                if Z[n, k] == 1:
                    _subtract_row(base, A, k)
        log_ratio -= _replaced_features_weight(
            own, n_excl, order, prior_kind, prior, obs_kind, noise, X, observed, one_row, ONE,
            Z, A, one_child, one_pred, rng, continuous,
        )
        # Forward: the new features, proposed in sequence from the row's data given the
        # proposal's features that existed before and the new ones proposed so far.
        _shifted_row(pred_n, A, ks, deltas, n_changes, new_pred)
        _copy_row(base, new_pred)
        for j in range(n_changes):
            if ks[j] >= K_slots and deltas[j] == 1:
                _subtract_row(base, A, ks[j])
        for j in range(n_changes):
            k = ks[j]
            if k < K_slots:
                continue
            one_child[0] = deltas[j]
            log_ratio += _propose_feature(
                TRUE, prior_kind, prior, obs_kind, noise, X, observed, one_row, ONE,
                one_child, one_pred, A[k], rng, continuous,
            )
        _copy_row(new_pred, base)
        new_lik = row_log_likelihood(obs_kind, x_n, observed_n, new_pred, noise)
        log_accept = log_ratio + new_lik - log_lik
        if not (log_accept >= 0.0 or rng.random() < math.exp(log_accept)):
            continue
        # Accept: remove the own categories (their exclusive features die), add the new.
        for j in range(n_own):
            cat = own_categories[j]
            for k in range(K_slots):
                if M[cat, k] == 1:
                    M[cat, k] = 0
                    links[k] -= 1
                    if links[k] == 0:
                        counts[K_LIVE] -= 1
            c_n[cat] = 0
            sizes[cat] = 0
            counts[L_LIVE] -= 1
        # The new features take the slots from K_slots on, whose links and columns of S
        # and Z are zero (the arrays are zero beyond the slots in use).
        for j in range(n_cat):
            cat = counts[L_SLOTS]
            counts[L_SLOTS] += 1
            counts[L_LIVE] += 1
            for k in range(width):
                M[cat, k] = prop_links[j, k]
                if prop_links[j, k] == 1:
                    if links[k] == 0:
                        counts[K_LIVE] += 1
                    links[k] += 1
            c_n[cat] = 1
            sizes[cat] = 1
        counts[K_SLOTS] += n_feat
        for k in range(width):
            S[n, k] += proposal_shift[k]
        for j in range(n_changes):
            Z[n, ks[j]] += deltas[j]
        _copy_row(pred_n, new_pred)
    return -1


# --------------------------------------------------------------------------------------
# Links: the IBP over M, one category at a time
# --------------------------------------------------------------------------------------
@njit(cache=True, no_cfunc_wrapper=True)
def link_pass(
    start, category_order, X, observed, C, M, S, Z, A, pred, sizes, links, counts,
    alpha_m, log_q, link, obs_kind, noise, prior_kind, prior, max_new, rng, continuous,
    members, new_preds, member_ks, member_deltas, member_changes, shift, old_liks, new_liks,
    children, new_children, flip_preds, order, order_own, own,
):
    """Update every category's links to shared features, then its own features.

    Categories are visited in ``category_order`` (a random permutation drawn by the
    driver) and, within a category, features in a fresh random order. ``m_lk`` for a
    feature other categories link (``r_{-l,k} > 0``): a Metropolis flip with prior odds
    ``r_{-l,k} / (L - r_{-l,k})`` (eq. 7.5), jointly with the children of the category's
    rows that it alone activates. The features only category ``l`` links are then
    replaced by ``Poisson(alpha_M / L)`` new ones, alone and together with a flip of each
    shared link ``k_flip``: the new features' children are drawn from the prior and their
    ``A`` from :func:`feature_row_proposal` given the members' other features, the flip
    (if any) moves with the children it alone activates, and the Metropolis-Hastings ratio
    holds the flip's prior odds, the likelihood of the members, and ``p(A) / q(A)`` of the
    new features over that of the replaced ones, each set proposed (or scored, in a random
    order) in sequence given its configuration without own features
    (:func:`_propose_feature`). The Poisson draw is truncated at ``max_new``, so a
    category with more own features than that keeps them (the reverse move could not be
    drawn). Returns ``-1`` or the position in ``category_order`` to resume from once the
    driver has grown the feature capacity (checked before a category is started, so no
    category is updated twice).

    The own-feature move is written out here rather than in a kernel of its own: as a
    separate kernel it compiled its whole call tree (the feature proposals) once more,
    about 2 CPU s of the cold default fit of ``benchmarks/bench_startup.py`` (15.2-15.6
    against 17.6-18.0 CPU s, two paired runs). The work buffers after ``continuous`` come
    from :func:`link_pass_work`.
    """
    N, D = X.shape
    Lcap, Kcap = M.shape
    for pos in range(start, category_order.shape[0]):
        cat = category_order[pos]
        K_slots = counts[K_SLOTS]
        # Room for every own-feature move of this category (K_slots + 1 of them).
        if K_slots + (K_slots + 1) * max_new > Kcap:
            return pos
        if sizes[cat] == 0:
            continue
        m_cat = M[cat]  # the category's links (a view: 1-D indexing compiles to less)
        n_members = np.int64(0)
        for n in range(N):
            if C[n, cat] == 1:
                members[n_members] = n
                n_members += 1
        L_live = counts[L_LIVE]
        for i in range(n_members):
            n = members[i]
            old_liks[i] = row_log_likelihood(obs_kind, X[n], observed[n], pred[n], noise)
        # Shared features.
        random_order(K_slots, order, rng)
        for j in range(K_slots):
            k = order[j]
            if links[k] == 0:
                continue
            others = links[k] - m_cat[k]
            if others == 0:
                continue
            for kk in range(K_slots):
                shift[kk] = 0
            shift[k] = 1
            sign = -1 if m_cat[k] == 1 else 1
            log_odds = math.log(others) - math.log(L_live - others)
            log_accept = log_odds if sign == 1 else -log_odds
            for i in range(n_members):
                n = members[i]
                # (Each view is made once: a view made is code to compile.)
                ks_i, deltas_i, pred_i = member_ks[i], member_deltas[i], new_preds[i]
                n_changes, log_ratio = _change_parents(
                    n, shift, sign, S, Z, K_slots, log_q, link, ks_i, deltas_i, rng,
                )
                member_changes[i] = n_changes
                _shifted_row(pred[n], A, ks_i, deltas_i, n_changes, pred_i)
                new_liks[i] = old_liks[i]
                if _children_change(deltas_i, n_changes):
                    new_liks[i] = row_log_likelihood(obs_kind, X[n], observed[n], pred_i, noise)
                log_accept += log_ratio + new_liks[i] - old_liks[i]
            if log_accept >= 0.0 or rng.random() < math.exp(log_accept):
                for i in range(n_members):
                    n = members[i]
                    _apply_parents(n, shift, sign, S, Z, pred, A, K_slots, member_ks[i],
                                   member_deltas[i], member_changes[i], new_preds[i])
                    old_liks[i] = new_liks[i]
                m_cat[k] = 1 if sign == 1 else 0
                links[k] += sign
        # Own features: replaced by new ones proposed from the members' data, alone and
        # together with a flip of each shared link (a category that explains its rows by an
        # own feature can thus trade it, link by link, for shared features). The move
        # without a flip comes at a random place among the flips.
        random_order(K_slots + 1, order, rng)
        for j in range(K_slots + 1):
            k = order[j] - 1
            if k >= 0 and (links[k] == 0 or links[k] - m_cat[k] == 0):
                continue
            # The own-feature move (see the docstring), with shared link k_flip flipped
            # too when k_flip >= 0; a rejected or impossible move leaves the state as is.
            k_flip = k
            K_now = counts[K_SLOTS]
            n_new = _truncated_poisson(alpha_m / L_live, max_new, rng)
            n_own = np.int64(0)
            for k in range(K_now):
                if m_cat[k] == 1 and links[k] == 1:
                    own[n_own] = k
                    n_own += 1
            if n_new == 0 and n_own == 0 and k_flip < 0:
                continue
            if n_own > max_new:
                continue  # its reverse, a draw of n_own > max_new features, is impossible
            log_accept = 0.0
            sign = np.int64(0)
            if k_flip >= 0:
                for kk in range(K_now):
                    shift[kk] = 0
                shift[k_flip] = 1
                sign = -1 if m_cat[k_flip] == 1 else 1
                others = links[k_flip] - m_cat[k_flip]
                log_odds = math.log(others) - math.log(L_live - others)
                log_accept += log_odds if sign == 1 else -log_odds
            for i in range(n_members):
                n = members[i]
                ks_i, deltas_i, pred_i = member_ks[i], member_deltas[i], flip_preds[i]
                if k_flip >= 0:
                    n_changes, log_ratio = _change_parents(
                        n, shift, sign, S, Z, K_now, log_q, link, ks_i, deltas_i, rng,
                    )
                    member_changes[i] = n_changes
                    log_accept += log_ratio
                    _shifted_row(pred[n], A, ks_i, deltas_i, n_changes, pred_i)
                else:
                    member_changes[i] = 0
                    _copy_row(pred_i, pred[n])
            # The configurations without own features: the current one (new_preds), from
            # which the reverse scores the current own features in a random order, and the
            # flipped one (flip_preds), from which the new features are proposed in sequence.
            for i in range(n_members):
                n = members[i]
                reverse_i, forward_i = new_preds[i], flip_preds[i]
                _copy_row(reverse_i, pred[n])
                for t in range(n_own):
                    if Z[n, own[t]] == 1:
                        _subtract_row(reverse_i, A, own[t])
                        _subtract_row(forward_i, A, own[t])
            log_accept -= _replaced_features_weight(
                own, n_own, order_own, prior_kind, prior, obs_kind, noise, X, observed, members,
                n_members, Z, A, children, new_preds, rng, continuous,
            )
            for t in range(n_new):
                k = K_now + t
                for i in range(n_members):
                    children[i] = draw_child(_ONE, log_q, link, rng)
                    new_children[i, t] = children[i]
                log_accept += _propose_feature(
                    TRUE, prior_kind, prior, obs_kind, noise, X, observed, members, n_members,
                    children, flip_preds, A[k], rng, continuous,
                )
            for i in range(n_members):
                n = members[i]
                new_liks[i] = row_log_likelihood(obs_kind, X[n], observed[n], flip_preds[i],
                                                 noise)
                log_accept += new_liks[i] - old_liks[i]
            if not (log_accept >= 0.0 or rng.random() < math.exp(log_accept)):
                continue
            if k_flip >= 0:
                for i in range(n_members):
                    n = members[i]
                    S[n, k_flip] += sign
                    for j in range(member_changes[i]):
                        Z[n, member_ks[i, j]] += member_deltas[i, j]
                m_cat[k_flip] = 1 if sign == 1 else 0
                links[k_flip] += sign
            # The own features die (the flip left them own) and the new ones take the
            # slots from K_now on, zero in every array beyond the slots in use.
            for t in range(n_own):
                k = own[t]
                m_cat[k] = 0
                links[k] = 0
                for i in range(n_members):
                    S[members[i], k] = 0
                    Z[members[i], k] = 0
            for t in range(n_new):
                k = K_now + t
                m_cat[k] = 1
                links[k] = 1
                for i in range(n_members):
                    S[members[i], k] = 1
                    Z[members[i], k] = new_children[i, t]
            counts[K_SLOTS] += n_new
            counts[K_LIVE] += n_new - n_own
            for i in range(n_members):
                _copy_row(pred[members[i]], flip_preds[i])
                old_liks[i] = new_liks[i]
    return -1


@njit(cache=True, no_cfunc_wrapper=True)
def rows_log_likelihood(obs_kind, X, observed, rows, preds, noise):
    """``sum_i log p(x_{rows[i]} | preds[i])``: the likelihood of some rows."""
    total = 0.0
    for i in range(rows.shape[0]):
        n = rows[i]
        total += row_log_likelihood(obs_kind, X[n], observed[n], preds[i], noise)
    return total


# --------------------------------------------------------------------------------------
# Children of the noisy-or
# --------------------------------------------------------------------------------------
@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _child_on_probability(z, s, lik_cur, lik_flip, log_q):
    """``P(z_nk = 1 | s_nk = s, x_n)`` under the noisy-or link (eq. 7.9): the child's prior
    given its ``s`` active parents times the row's likelihood with ``z_nk`` on and off
    (``lik_cur`` at the current ``z_nk = z``, ``lik_flip`` with it flipped)."""
    log_on = child_log_prior(_ONE_CHILD, np.int64(s), log_q, _NOISY_OR)
    log_off = s * log_q
    if z == 1:
        log_on += lik_cur
        log_off += lik_flip
    else:
        log_on += lik_flip
        log_off += lik_cur
    top = max(log_on, log_off)
    return math.exp(log_on - top) / (math.exp(log_on - top) + math.exp(log_off - top))


@njit(cache=True, no_cfunc_wrapper=True)
def child_pass(X, observed, S, Z, A, pred, K_slots, log_q, obs_kind, noise, rng, row, order):
    """Gibbs update of every ``z_nk`` with a parent (eq. 7.9), features in a random order.

    ``row`` (n_dims,) float64 and ``order`` (at least ``K_slots``,) int64 are work buffers.
    """
    N, D = X.shape
    random_order(K_slots, order, rng)
    for n in range(N):
        x_n, observed_n, pred_n = X[n], observed[n], pred[n]  # each view made once
        lik_cur = row_log_likelihood(obs_kind, x_n, observed_n, pred_n, noise)
        for j in range(K_slots):
            k = order[j]
            s = S[n, k]
            if s == 0:
                continue
            z = Z[n, k]
            for d in range(D):
                row[d] = pred_n[d] + (1.0 - 2.0 * z) * A[k, d]
            lik_flip = row_log_likelihood(obs_kind, x_n, observed_n, row, noise)
            p_on = _child_on_probability(z, s, lik_cur, lik_flip, log_q)
            z_new = 1 if rng.random() < p_on else 0
            if z_new != z:
                Z[n, k] = z_new
                _copy_row(pred_n, row)
                lik_cur = lik_flip


# --------------------------------------------------------------------------------------
# New rows: feature probabilities with the fitted structure held fixed
# --------------------------------------------------------------------------------------
@njit(cache=True, no_cfunc_wrapper=True)
def new_row_feature_probabilities(
    X, observed, M, A, category_log_prior, upper, link, log_q, obs_kind, noise,
    n_sweeps, n_burn, seed,
):
    """``E[z_nk | x_n]`` of new rows given fitted ``M``, ``A`` and category priors.

    Each row is treated alone by a Gibbs sampler over its categories (and, for the
    noisy-or, its children) with ``M`` and ``A`` held fixed, restarted from the same
    ``seed`` for every row: the result is deterministic and depends on that row only.
    The average is Rao-Blackwellised: the DP's category is enumerated exactly at every
    sweep and the noisy-or children contribute their conditional probabilities. For the
    DP with the ``or`` link a single sweep is the exact posterior.

    ``category_log_prior`` holds, per category, the log prior weight of a DP row joining
    it, or the IBP log odds of a row having it.
    """
    N, D = X.shape
    L, K = M.shape
    out = np.zeros((N, K))
    pred = np.empty(D)
    flip = np.empty(D)
    c = np.zeros(L, dtype=np.int64)
    z = np.zeros(K, dtype=np.int64)
    s = np.zeros(K, dtype=np.int64)
    zs = np.zeros(K, dtype=np.int64)
    weights = np.empty(max(L, 1))
    for n in range(N):
        np.random.seed(seed)  # noqa: NPY002 (one stream per new row)
        for cat in range(L):
            c[cat] = 0
        for k in range(K):
            z[k] = 0
            s[k] = 0
        for d in range(D):
            pred[d] = 0.0
        kept = 0
        for sweep in range(n_sweeps):
            if upper == UPPER_DP and L > 0:
                for cat in range(L):
                    for d in range(D):
                        flip[d] = 0.0
                    for k in range(K):
                        if M[cat, k] == 1 and (link == LINK_OR or z[k] == 1):
                            for d in range(D):
                                flip[d] += A[k, d]
                    weights[cat] = category_log_prior[cat] + row_log_likelihood(
                        obs_kind, X[n], observed[n], flip, noise
                    )
                top = -np.inf
                for cat in range(L):
                    top = max(top, weights[cat])
                total = 0.0
                for cat in range(L):
                    weights[cat] = math.exp(weights[cat] - top)
                    total += weights[cat]
                u = np.random.random() * total  # noqa: NPY002
                chosen = L - 1
                acc = 0.0
                for cat in range(L):
                    acc += weights[cat]
                    if u < acc:
                        chosen = cat
                        break
                if sweep >= n_burn and link == LINK_OR:
                    for cat in range(L):
                        for k in range(K):
                            if M[cat, k] == 1:
                                out[n, k] += weights[cat] / total
                for cat in range(L):
                    c[cat] = 1 if cat == chosen else 0
                for k in range(K):
                    s[k] = M[chosen, k]
                    if link == LINK_OR:
                        z[k] = s[k]
                    elif s[k] == 0:
                        z[k] = 0
                    elif z[k] == 0 and sweep == 0:
                        z[k] = 1
            elif upper == UPPER_IBP:
                # Metropolis flips of c_l jointly with the children it alone activates,
                # as in ibp_rows.
                for cat in range(L):
                    _row_prediction(z, A, K, pred)
                    sign = -1 if c[cat] == 1 else 1
                    log_accept = category_log_prior[cat] if sign == 1 else -category_log_prior[cat]
                    for d in range(D):
                        flip[d] = pred[d]
                    for k in range(K):
                        if M[cat, k] == 0:
                            zs[k] = z[k]
                            continue
                        s_new = s[k] + sign
                        if s[k] == 0:
                            zs[k] = draw_child_legacy(s_new, log_q, link)
                        elif s_new == 0:
                            zs[k] = 0
                        else:
                            zs[k] = z[k]
                            if link == LINK_NOISY_OR:
                                log_accept += child_log_prior(
                                    z[k], np.int64(s_new), log_q, link
                                ) - child_log_prior(z[k], np.int64(s[k]), log_q, link)
                        if zs[k] != z[k]:
                            for d in range(D):
                                flip[d] += (zs[k] - z[k]) * A[k, d]
                    log_accept += row_log_likelihood(
                        obs_kind, X[n], observed[n], flip, noise
                    ) - row_log_likelihood(obs_kind, X[n], observed[n], pred, noise)
                    if log_accept >= 0.0 or np.random.random() < math.exp(log_accept):  # noqa: NPY002
                        c[cat] += sign
                        for k in range(K):
                            if M[cat, k] == 1:
                                s[k] += sign
                            z[k] = zs[k]
                if sweep >= n_burn and link == LINK_OR:
                    for k in range(K):
                        out[n, k] += z[k]
            if link == LINK_NOISY_OR:
                _row_prediction(z, A, K, pred)
                for k in range(K):
                    if s[k] == 0:
                        continue
                    for d in range(D):
                        flip[d] = pred[d] + (1.0 - 2.0 * z[k]) * A[k, d]
                    lik_cur = row_log_likelihood(obs_kind, X[n], observed[n], pred, noise)
                    lik_flip = row_log_likelihood(obs_kind, X[n], observed[n], flip, noise)
                    p_on = _child_on_probability(z[k], s[k], lik_cur, lik_flip, log_q)
                    if sweep >= n_burn:
                        out[n, k] += p_on
                    new_z = 1 if np.random.random() < p_on else 0  # noqa: NPY002
                    if new_z != z[k]:
                        z[k] = new_z
                        for d in range(D):
                            pred[d] = flip[d]
            if sweep >= n_burn:
                kept += 1
        for k in range(K):
            out[n, k] /= max(kept, 1)
    return out
