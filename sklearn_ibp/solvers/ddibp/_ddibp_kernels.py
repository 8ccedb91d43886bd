"""Numba kernels of the dd-IBP sampler (Gershman, Frazier and Blei 2015, sec. 5).

The features ``W`` of the linear-Gaussian model are integrated out (eq. 36, the same as
eq. A.2 of the IBP thesis). With ``M = Z^T Z + r I`` (``r = s_x^2 / s_a^2``) the kernels
keep ``M^{-1}``, ``Z^T X`` and ``G = M^{-1} Z^T X`` (the posterior mean of the features).

Every move of the sampler changes one column ``z`` of ``Z`` with the other columns fixed.
Writing ``R`` and ``G_{-k}`` for ``M^{-1}`` and ``G`` of the model without column ``k``,
the block (Schur complement) form of the inverse gives

    log p(X | Z) = log p(X | Z_{-k}) - D/2 log s + |u|^2 / (2 s_x^2 s) + D log(s_x / s_a)

with ``b = Z_{-k}^T z``, ``s = z^T z + r - b^T R b`` and ``u = z^T X - b^T G_{-k}``. So a
link update of dish ``k`` needs only ``(z^T z, b, z^T X)`` of its two candidate columns,
which differ on the rows whose path runs through the customer (the window of rows whose
``z`` changes, Gershman, Frazier and Blei 2015, sec. 8): at most ``O(|rows| (K + D) + K^2 + K D)``
per update instead of an ``O(N^3)`` recomputation, and no update visits all N customers (see
:func:`sweep_connections`). Adding or removing a whole column (an ownership move) uses the
same formula with ``R = M^{-1}``.
"""

import math

import numpy as np
from numba import njit


@njit(cache=True)
def draw_link(cum_row, rng):
    """Draw a link target from one row of cumulative normalised proximities."""
    u = rng.random() * cum_row[cum_row.shape[0] - 1]
    lo = 0
    hi = cum_row.shape[0] - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if cum_row[mid] > u:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _remove_column_stats(Minv, G, k, n_features, col, R, Gk):
    """Write into ``R, Gk`` the ``Minv, G`` of the model without column ``k`` (row and
    column ``k`` zero) on the indices ``< n_features``.

    ``R, Gk`` may be ``Minv, G`` themselves (in place): every entry is read before it is
    written, so both give the same numbers. The link sweep writes into separate arrays,
    which saves it a copy of ``Minv, G`` per dish (and the loops that a first fit would
    compile for it, issue 22).
    """
    K = n_features
    mkk = Minv[k, k]
    for a in range(K):
        col[a] = Minv[a, k]
    for a in range(K):
        f = col[a] / mkk
        for j in range(K):
            R[a, j] = Minv[a, j] - f * col[j]
        if a != k:
            for d in range(G.shape[1]):
                Gk[a, d] = G[a, d] - f * G[k, d]
    for d in range(G.shape[1]):
        Gk[k, d] = 0.0
    for a in range(K):
        R[a, k] = 0.0
        R[k, a] = 0.0


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _insert_column_stats(Minv, G, cross, k, n_features, count, b, zX, ratio, v):
    """Set column ``k`` of the model to the column with statistics ``(count, b, zX)``.

    ``Minv`` and ``G`` hold the model without column ``k`` on the indices ``< n_features``
    other than ``k`` (``b[k]`` must be 0); they are completed in place by the block form of
    the inverse.
    """
    K = n_features
    D = G.shape[1]
    s = count + ratio
    for a in range(K):
        acc = 0.0
        for j in range(K):
            acc += Minv[a, j] * b[j]
        v[a] = acc if a != k else 0.0
        s -= b[a] * v[a]
    floor = 1e-12 * ratio
    s = floor if floor > s else s  # max(s, floor), without compiling max
    for d in range(D):
        u = zX[d]
        for a in range(K):
            u -= b[a] * G[a, d]
        for a in range(K):
            G[a, d] -= v[a] * u / s
        G[k, d] = u / s
        cross[k, d] = zX[d]
    for a in range(K):
        for j in range(K):
            Minv[a, j] += v[a] * v[j] / s
        Minv[a, k] = -v[a] / s
        Minv[k, a] = -v[a] / s
    Minv[k, k] = 1.0 / s


# -- one dish's link structure --------------------------------------------------------------
# While the links of dish ``k`` are updated the kernel keeps, besides ``links[k]``:
#
# - the reverse adjacency: ``head[t]`` is the first customer linking to ``t``, ``nxt`` and
#   ``prv`` chain the customers that link to the same target (a doubly linked list, so a
#   link change moves one customer in O(1)); the owner's link is left out, since a path
#   stops at the owner;
# - the dish's rows (``Z[:, k] == 1``) as an unordered list ``members[:n_members]`` with
#   ``where[m]`` the position of row ``m`` in it (-1 when ``m`` is not a member).


@njit(cache=True)
def _push_child(parent, j, head, nxt, prv):
    """Add customer ``j`` to the customers that link to ``parent``."""
    first = head[parent]
    nxt[j] = first
    prv[j] = -1
    if first >= 0:
        prv[first] = j
    head[parent] = j


@njit(cache=True)
def _unlink_child(parent, j, head, nxt, prv):
    """Remove customer ``j`` from the customers that link to ``parent``."""
    p = prv[j]
    n = nxt[j]
    if p >= 0:
        nxt[p] = n
    else:
        head[parent] = n
    if n >= 0:
        prv[n] = p


@njit(cache=True)
def _build_children(links_row, owner, head, nxt, prv):
    """The reverse adjacency of one dish's links, the owner's own link left out."""
    N = links_row.shape[0]
    for j in range(N):
        head[j] = -1
    for j in range(N - 1, -1, -1):
        if j != owner:
            _push_child(links_row[j], j, head, nxt, prv)


@njit(cache=True)
def _collect_upstream(i, head, nxt, stamp, mark, out):
    """The customers whose path runs through ``i`` (``i`` included), by a breadth-first
    walk over the customers linking to each one found.

    They are written to ``out[:size]`` and ``stamp[j] = mark`` flags them; ``size`` is
    returned. ``i``'s own link is never followed, so the result is the upstream set of ``i``
    with its link cut; a cycle through ``i`` ends at ``i``, already flagged. The owner is in
    no child list, so it is never upstream of anyone, and walks stop there. Cost
    ``O(size)``: each customer is in exactly one child list.
    """
    stamp[i] = mark
    out[0] = i
    size = 1
    q = 0
    while q < size:
        c = head[out[q]]
        q += 1
        while c >= 0:
            if stamp[c] != mark:
                stamp[c] = mark
                out[size] = c
                size += 1
            c = nxt[c]
    return size


@njit(cache=True)
def _reach_mass(prox_row, members, n_members, stamp, mark):
    """``sum a_ij`` over the dish's rows not flagged upstream (``stamp[j] != mark``): the
    prior mass of the links that reach the owner once the upstream rows are cut off.

    A sum of nonnegative terms over the dish's rows, so it is accurate to rounding however
    small it is, and zero exactly when no candidate of that side has positive proximity.
    """
    total = 0.0
    for t in range(n_members):
        j = members[t]
        if stamp[j] != mark:
            total += prox_row[j]
    return total


@njit(cache=True)
def _not_side_mass(prox_row, Z, k, stamp, mark):
    """``sum a_ij`` over the customers that do not reach the owner after the cut (an
    ``O(N)`` pass, used only when the difference ``total - p_reach`` would be inexact)."""
    total = 0.0
    for j in range(prox_row.shape[0]):
        if Z[j, k] == 0 or stamp[j] == mark:
            total += prox_row[j]
    return total


@njit(cache=True)
def _column_terms(b, zX, R, G, n_features, k, nz, Rb, u):
    """``Rb = R b`` and ``u = z^T X - G^T b`` of a column with statistics ``(b, z^T X)``
    (entry ``k`` of ``b`` ignored); returns ``b^T R b``. ``R`` is symmetric, so ``R b`` is
    summed over the rows of ``R`` where ``b`` is nonzero (their indices go to ``nz``)."""
    K = n_features
    D = zX.shape[0]
    n = 0
    for a in range(K):
        if a != k and b[a] != 0.0:
            nz[n] = a
            n += 1
    for a in range(K):
        Rb[a] = 0.0
    for d in range(D):
        u[d] = zX[d]
    for t in range(n):
        c = nz[t]
        bc = b[c]
        for a in range(K):
            Rb[a] += bc * R[c, a]
        for d in range(D):
            u[d] -= bc * G[c, d]
    bRb = 0.0
    for t in range(n):
        bRb += b[nz[t]] * Rb[nz[t]]
    return bRb


@njit(cache=True)
def _score(s, u, ratio, sigma_x):
    """``-D/2 log s + |u|^2 / (2 s_x^2 s)``, the score of a column from its ``s`` and ``u``
    (see the module's docstring)."""
    s = max(s, 1e-12 * ratio)
    unorm = 0.0
    for d in range(u.shape[0]):
        unorm += u[d] * u[d]
    return -0.5 * u.shape[0] * math.log(s) + unorm / (2.0 * sigma_x * sigma_x * s)


@njit(cache=True)
def _switch_score(X, Z, k, n_features, upstream, n_up, sign, u, Rb, bRb, R, Gk, count_alt,
                  ratio, sigma_x, delta, nz, u_alt):
    """Score of the column with ``z_k`` switched on the upstream rows, and the number of
    nonzero entries of ``delta`` (their indices in ``nz``).

    ``b`` changes by ``delta = sign * sum_m Z[m, -k]`` and ``z^T X`` by
    ``sign * sum_m X[m]``, so ``s_alt = count_alt + r - (b + delta)^T R (b + delta)`` and
    ``u_alt = u + sign * sum_m X[m] - G^T delta``; ``O(|upstream| (K + D) + n^2 + n D)``.
    """
    K = n_features
    D = X.shape[1]
    n_delta = 0
    for d in range(D):
        u_alt[d] = u[d]
    for q in range(n_up):
        m = upstream[q]
        for j in range(K):
            if Z[m, j] and j != k:
                if delta[j] == 0.0:
                    nz[n_delta] = j
                    n_delta += 1
                delta[j] += sign
        for d in range(D):
            u_alt[d] += sign * X[m, d]
    dRb = 0.0
    dRd = 0.0
    for t in range(n_delta):
        a = nz[t]
        da = delta[a]
        dRb += da * Rb[a]
        acc = 0.0
        for q in range(n_delta):
            acc += R[a, nz[q]] * delta[nz[q]]
        dRd += da * acc
        for d in range(D):
            u_alt[d] -= da * Gk[a, d]
    return n_delta, _score(count_alt + ratio - (bRb + 2.0 * dRb + dRd), u_alt, ratio, sigma_x)


@njit(cache=True)
def _draw_on_side(new_on, prox, cum_row, members, n_members, Z, k, stamp, mark, p_reach,
                  p_not, exact_not, rng):
    """A link target within the chosen side, in proportion to ``a_ij`` (Gibbs updates):
    by rejection from the whole row when the side holds at least 1/16 of its mass (up to
    64 tries), else (or when they fail) by a pass over the side's candidates."""
    N = prox.shape[0]
    chosen = -1
    row_mass = cum_row[N - 1]
    if new_on == 1:
        if p_reach >= 0.0625 * row_mass:
            # By rejection from the whole row (O(log N) a try), as for the other side.
            for _ in range(64):
                j = draw_link(cum_row, rng)
                if Z[j, k] == 1 and stamp[j] != mark:
                    return j
        # Over the dish's rows in the order p_reach was summed, so the pass ends on a
        # target of positive proximity.
        target = rng.random() * p_reach
        acc = 0.0
        for t in range(n_members):
            j = members[t]
            if stamp[j] != mark:
                acc += prox[j]
                chosen = j
                if acc > target:
                    break
        return chosen
    if not exact_not and p_not >= 0.0625 * row_mass:
        for _ in range(64):
            j = draw_link(cum_row, rng)
            if Z[j, k] == 0 or stamp[j] == mark:
                return j
    if not exact_not:
        p_not = _not_side_mass(prox, Z, k, stamp, mark)
    target = rng.random() * p_not
    acc = 0.0
    for j in range(N):
        if Z[j, k] == 0 or stamp[j] == mark:
            acc += prox[j]
            chosen = j
            if acc > target:
                break
    return chosen


def sweep_connections(
    X, Z, links, owners, n_features, proximity, proximity_t, cum_proximity, Minv, G, cross,
    sigma_x, sigma_a, metropolis, rng,
):
    """Update every link ``c_ik`` of every owned dish (eq. 33), in place.

    ``links[k, i]`` is customer ``i``'s link for dish ``k``. Cutting ``i``'s link splits the
    candidates into the customers that still reach the owner and those that do not; the
    choice between the two switches ``z_k`` for ``i`` and every customer whose path runs
    through ``i``, so only two likelihoods are needed. The owner's own link does not
    affect ``Z`` and is drawn from its prior.

    With ``metropolis`` each update is a Metropolis step whose
    proposal is a draw from the prior row ``a_i.`` (``O(log N)``): a target on the current
    side leaves ``Z`` unchanged, so it is accepted with no likelihood at all; a target on
    the other side is accepted with probability ``min(1, p(X | z_alt) / p(X | z))``. Its
    target ``p(c_ik | ...) ∝ a_ij p(X | Z(c))`` is the Gibbs conditional's, and only the
    updates that propose a switch pay for a likelihood (and neither side's mass is
    summed). Without it (Gibbs, as in Gershman, Frazier and Blei 2015, the solver's default) both
    likelihoods are computed for every update and the link is drawn within the side drawn from them.
    The mass of the dish's rows in each customer's prior row, ``reach[i] = sum_j a_ij
    z_jk``, is computed once per dish (``O(N |z_k|)`` over contiguous rows of
    ``proximity_t``, the transpose of ``A``) and updated when rows switch (``O(N)`` a
    row); ``p_reach`` is ``reach[i]`` less the upstream rows' share (they are the dish's
    rows when ``i`` has it, and none of them otherwise), summed again over the dish's rows
    if cancellation leaves it below ``1e-9`` of the row's mass:

    No Gibbs update visits all N customers. Per dish the kernel keeps the reverse adjacency
    of the links and the list of the dish's rows (built in ``O(N)`` when the dish's updates
    start). The customers upstream of ``i`` are found by a walk over the customers linking
    to ``i`` (``O(|upstream|)``), the mass of the reaching side is ``reach[i]`` less the
    upstream rows' share (``p_reach``, ``O(|upstream|)``) and the other side's mass is
    ``p_not = sum_j a_ij - p_reach`` (recomputed over all rows only if that difference is
    below ``1e-6`` of the row's mass, where it could lose digits; the not-side contains
    ``i``, ``a_ii = 1 / h_i``). A link on either side is drawn by rejection from the whole
    row (a binary search in ``cum_proximity[i]``, accepted when the target is on that side),
    with an exact pass over the side's candidates when the side holds less than 1/16 of the
    row's mass or 64 tries fail. The two scores come from ``s = count + r - b^T R b`` and
    ``u = z^T X - G^T b`` of the current column, kept with ``R b`` and recomputed only when
    the rows switch; the other column's ``b`` differs by ``delta``, nonzero on the features
    of the upstream rows, so its score costs ``O(|upstream| (K + D) + n^2 + n D)`` with
    ``n`` the number of nonzero entries of ``delta``. An update costs ``O(|upstream| (K + D)
    + n^2 + n D + log N)`` when the rows stay (plus a pass over a side's candidates when it
    is small), and ``O(K^2 + K D + N |upstream|)`` more when they switch.

    A Python function: it allocates the kernels' work arrays and runs the Gibbs kernel or
    the Metropolis one, so a fit compiles only the one it uses (and no allocation).
    """
    N, D = X.shape
    cap = Minv.shape[0]
    R = np.empty((cap, cap))
    Gk = np.empty((cap, D))
    # rows: col, b, R b, delta (b, R b and delta start at zero)
    vec_cap = np.zeros((4, cap))
    # rows: z^T X, u, u_alt
    vec_d = np.empty((3, D))
    nz = np.empty(cap, dtype=np.int64)
    # rows: head, nxt, prv, stamp (starts at zero), upstream, members, where
    idx = np.zeros((7, N), dtype=np.int64)
    reach = np.zeros(N)
    kernel = _sweep_links_metropolis if metropolis else _sweep_links_gibbs
    kernel(X, Z, links, owners, np.int64(n_features), proximity, proximity_t, cum_proximity,
           Minv, G, cross, float(sigma_x), float(sigma_a), rng, R, Gk, vec_cap, vec_d, nz,
           idx, reach)
    if not metropolis and n_features % 2 == 1:
        # The Gibbs kernel leaves the full model in (R, Gk) after an odd number of dishes.
        K = n_features
        Minv[:K, :K] = R[:K, :K]
        G[:K] = Gk[:K]


@njit(cache=True, inline="always")
def _begin_dish(k, Z, row, owner, K, Minv, G, cross, R, Gk, col, b, zX, members, where, nz,
                Rb, u, head, nxt, prv):
    """Set up the link updates of dish ``k``: ``R, Gk`` of the model without the column,
    its ``b`` and ``z^T X``, the dish's rows and the links' reverse adjacency. Returns the
    number of the dish's rows and ``b^T R b`` (``R b`` and ``u`` are written)."""
    N = Z.shape[0]
    D = Gk.shape[1]
    _remove_column_stats(Minv, G, k, K, col, R, Gk)
    for j in range(K):
        b[j] = 0.0
    for d in range(D):
        zX[d] = cross[k, d]
    n_members = np.int64(0)  # typed: a literal 0 would compile the callees twice
    for m in range(N):
        if Z[m, k]:
            members[n_members] = m
            where[m] = n_members
            n_members += 1
            for j in range(K):
                b[j] += Z[m, j]
        else:
            where[m] = -1
    b[k] = 0.0
    # The current column: s = count + r - b^T R b, u = z^T X - G^T b.
    bRb = _column_terms(b, zX, R, Gk, K, k, nz, Rb, u)
    _build_children(row, owner, head, nxt, prv)
    return n_members, bRb


@njit(cache=True, inline="always")
def _move_link(row, i, chosen, head, nxt, prv):
    """Customer ``i``'s link set to ``chosen`` (the reverse adjacency kept)."""
    old = row[i]
    if chosen != old:
        _unlink_child(old, i, head, nxt, prv)
        _push_child(chosen, i, head, nxt, prv)
        row[i] = chosen


@njit(cache=True, inline="always")
def _switch_rows(X, Z, k, upstream, n_up, sign, new_on, zX, members, where, n_members):
    """Switch ``z_k`` to ``new_on`` on the upstream rows (``z^T X`` and the list of the
    dish's rows kept); returns the new number of the dish's rows."""
    D = X.shape[1]
    for q in range(n_up):
        m = upstream[q]
        for d in range(D):
            zX[d] += sign * X[m, d]
        Z[m, k] = new_on
        if new_on == 1:
            members[n_members] = m
            where[m] = n_members
            n_members += 1
        else:
            pos = where[m]
            n_members -= 1
            last = members[n_members]
            members[pos] = last
            where[last] = pos
            where[m] = -1
    return n_members


@njit(cache=True, inline="always")
def _end_dish(k, K, Minv, G, cross, R, Gk, count, b, zX, ratio, col):
    """The column's new statistics back into the full model."""
    D = G.shape[1]
    for a in range(K):
        for j in range(K):
            Minv[a, j] = R[a, j]
        for d in range(D):
            G[a, d] = Gk[a, d]
    _insert_column_stats(Minv, G, cross, k, K, count, b, zX, ratio, col)


@njit(cache=True, no_cfunc_wrapper=True)
def _sweep_links_gibbs(
    X, Z, links, owners, K, proximity, proximity_t, cum_proximity, Minv, G, cross, sigma_x,
    sigma_a, rng, R, Gk, vec_cap, vec_d, nz, idx, reach,
):
    """The Gibbs link updates of :func:`sweep_connections` (work arrays given). The
    model without a dish's column is written into ``R, Gk``, which then trade places with
    ``Minv, G``: after an odd number of dishes the full model is left in ``R, Gk``.

    One kernel body: the steps the Metropolis kernel takes from small helpers (the dish's
    set-up, the upstream walk, the side masses, the scores, the draw within a side, the
    link move) are written out here, each once, with the same arithmetic in the same order
    (so the chain is the same bit for bit). A numba function called from another is
    compiled, wrapped and optimised again inside each caller, so one body compiles in
    about half the time of the body and its helpers (issue 22).
    """
    N, D = X.shape
    ratio = sigma_x * sigma_x / (sigma_a * sigma_a)
    floor = 1e-12 * ratio  # the least s of a column (as in _insert_column_stats)
    neg_inf = -np.inf
    col, b, Rb, delta = vec_cap[0], vec_cap[1], vec_cap[2], vec_cap[3]
    zX, u, u_alt = vec_d[0], vec_d[1], vec_d[2]
    head, nxt, prv, stamp = idx[0], idx[1], idx[2], idx[3]
    upstream, members, where = idx[4], idx[5], idx[6]
    # Typed constants for the counters and flags: a variable first set from a literal
    # (0, 1, True) is typed as that literal and retyped int64 or bool only when numba's
    # type inference meets the loop's back edge, one more pass over the whole kernel per
    # level of loop nesting (issue 22; the same numbers either way).
    zero, one, no_target = np.int64(0), np.int64(1), np.int64(-1)
    yes, no = np.bool_(True), np.bool_(False)
    mark = zero
    # The full model and the model without the dish's column trade places after each
    # dish (no copy between them): after dish k the full model is in (R, Gk) when k is
    # even, so in (Minv, G) at the end when K is even (the caller copies it back when not).
    full_M, full_G, part_M, part_G = Minv, G, R, Gk
    for k in range(K):
        owner = owners[k]
        row = links[k]
        # R, Gk: the model without column k; b = Z_{-k}^T z and z^T X of the column; the
        # dish's rows; the links' reverse adjacency (the owner's own link left out).
        R, Gk = part_M, part_G
        _remove_column_stats(full_M, full_G, k, K, col, R, Gk)
        for j in range(K):
            b[j] = 0.0
        for d in range(D):
            zX[d] = cross[k, d]
        n_members = zero
        for m in range(N):
            head[m] = -1
            reach[m] = 0.0
            if Z[m, k]:
                members[n_members] = m
                where[m] = n_members
                n_members += 1
                for j in range(K):
                    b[j] += Z[m, j]
            else:
                where[m] = -1
        b[k] = 0.0
        for j in range(N - 1, -1, -1):
            if j != owner:
                parent = row[j]
                first = head[parent]
                nxt[j] = first
                prv[j] = -1
                if first >= 0:
                    prv[first] = j
                head[parent] = j
        count = float(n_members)
        # The current column's R b, u = z^T X - G^T b, b^T R b and score, computed before
        # the first update that needs them and again after the rows switch.
        stale = yes
        bRb = 0.0
        score = 0.0
        # reach[i] = sum of a_ij over the dish's rows (zeroed above), kept up to date as
        # rows switch (proximity_t is A transposed: a row of it is a column of A).
        for t in range(n_members):
            col_m = proximity_t[members[t]]
            for i in range(N):
                reach[i] += col_m[i]
        for i in range(N):
            cum_row = cum_proximity[i]
            row_mass = cum_row[N - 1]
            is_owner = i == owner
            if is_owner:
                # The owner's own link, from its prior row: the first draw of the
                # rejection loop below, whatever its target (the owner's link changes no
                # row of Z and is in no child list).
                by_rejection = yes
                new_on = zero
                # Unused by the owner, but set on this path too: otherwise their values
                # would flow from the previous customer over the loop's back edge, and
                # numba's type inference would need twice the passes over the kernel
                # (issue 22).
                on = zero
                n_up = zero
                n_delta = zero
                sign = 0.0
                count_alt = 0.0
                p_reach = 0.0
                p_not = 0.0
                exact_not = no
                prox = cum_row
            else:
                if stale:
                    # R is symmetric, so R b is summed over the rows of R where b is nonzero
                    # (their indices go to nz; entry k of b is ignored).
                    n_nz = zero
                    for a in range(K):
                        Rb[a] = 0.0
                        if (a != k) & (b[a] != 0.0):
                            nz[n_nz] = a
                            n_nz += 1
                    for d in range(D):
                        u[d] = zX[d]
                    for t in range(n_nz):
                        c = nz[t]
                        bc = b[c]
                        for a in range(K):
                            Rb[a] += bc * R[c, a]
                        for d in range(D):
                            u[d] -= bc * Gk[c, d]
                    bRb = 0.0
                    for t in range(n_nz):
                        bRb += b[nz[t]] * Rb[nz[t]]
                    # -D/2 log s + |u|^2 / (2 s_x^2 s), s = count + r - b^T R b
                    s = count + ratio - bRb
                    s = floor if floor > s else s  # max(s, floor)
                    unorm = 0.0
                    for d in range(D):
                        unorm += u[d] * u[d]
                    score = -0.5 * D * math.log(s) + unorm / (2.0 * sigma_x * sigma_x * s)
                    stale = no
                # Customers whose path runs through i, with i's link cut (stamp == mark): a
                # breadth-first walk over the customers linking to each one found; i's own
                # link is never followed and the owner is in no child list.
                mark += 1
                stamp[i] = mark
                upstream[0] = i
                n_up = one
                q = zero
                while q < n_up:
                    c = head[upstream[q]]
                    q += 1
                    while c >= 0:
                        if stamp[c] != mark:
                            stamp[c] = mark
                            upstream[n_up] = c
                            n_up += 1
                        c = nxt[c]
                on = 1 if where[i] >= 0 else 0  # Z[i, k]: where[m] >= 0 on the dish's rows
                sign = 1.0 - 2.0 * on  # -1 when i has the dish, else 1
                count_alt = count + sign * n_up
                # After the cut, exactly the rows that had the dish and are not upstream of i
                # still reach the owner.
                prox = proximity[i]
                # The dish's rows less those upstream of i (all of them are the dish's rows
                # when i has it; none when it does not); a sum that lost digits to
                # cancellation is done again over the dish's rows.
                p_reach = reach[i]
                if on:
                    for q in range(n_up):
                        p_reach -= prox[upstream[q]]
                if not (p_reach > 1e-9 * row_mass):
                    p_reach = 0.0
                    for t in range(n_members):
                        j = members[t]
                        if stamp[j] != mark:
                            p_reach += prox[j]
                p_not = row_mass - p_reach
                exact_not = not (p_not >= 1e-6 * row_mass)
                if exact_not:
                    p_not = 0.0
                    for j in range(N):
                        if (where[j] < 0) | (stamp[j] == mark):
                            p_not += prox[j]
                # The column with z_k switched on the upstream rows: b changes by
                # delta = sign * sum_m Z[m, -k] (nonzero on nz[:n_delta]) and z^T X by
                # sign * sum_m X[m], so s_alt = count_alt + r - (b + delta)^T R (b + delta)
                # and u_alt = u + sign * sum_m X[m] - G^T delta.
                n_delta = zero
                for d in range(D):
                    u_alt[d] = u[d]
                for q in range(n_up):
                    m = upstream[q]
                    for j in range(K):
                        if (Z[m, j] != 0) & (j != k):
                            if delta[j] == 0.0:
                                nz[n_delta] = j
                                n_delta += 1
                            delta[j] += sign
                    for d in range(D):
                        u_alt[d] += sign * X[m, d]
                dRb = 0.0
                dRd = 0.0
                for t in range(n_delta):
                    a = nz[t]
                    da = delta[a]
                    dRb += da * Rb[a]
                    acc = 0.0
                    for q in range(n_delta):
                        acc += R[a, nz[q]] * delta[nz[q]]
                    dRd += da * acc
                    for d in range(D):
                        u_alt[d] -= da * Gk[a, d]
                s = count_alt + ratio - (bRb + 2.0 * dRb + dRd)
                s = floor if floor > s else s
                unorm = 0.0
                for d in range(D):
                    unorm += u_alt[d] * u_alt[d]
                score_alt = -0.5 * D * math.log(s) + unorm / (2.0 * sigma_x * sigma_x * s)
                if on:
                    log_on, log_off = score, score_alt
                else:
                    log_on, log_off = score_alt, score
                w_on = math.log(p_reach) + log_on if p_reach > 0 else neg_inf
                w_off = math.log(p_not) + log_off if p_not > 0 else neg_inf
                best = w_off if w_off > w_on else w_on  # max(w_on, w_off)
                e_on = math.exp(w_on - best)
                p_on = e_on / (e_on + math.exp(w_off - best))
                new_on = 1 if rng.random() < p_on else 0
                # The link itself, within the chosen side, in proportion to a_ij: by rejection
                # from the whole row (O(log N) a try) when the side holds at least 1/16 of its
                # mass (up to 64 tries), else (or when they fail) by a pass over the side's
                # candidates (the dish's rows for the reaching side, in the order p_reach was
                # summed, so the pass ends on a target of positive proximity).
                if new_on == 1:
                    by_rejection = p_reach >= 0.0625 * row_mass
                else:
                    by_rejection = (not exact_not) & (p_not >= 0.0625 * row_mass)
            chosen = no_target
            if by_rejection:
                for _ in range(64):
                    x = rng.random() * row_mass
                    lo = zero
                    hi = N - 1
                    while lo < hi:
                        mid = (lo + hi) // 2
                        if cum_row[mid] > x:
                            hi = mid
                        else:
                            lo = mid + 1
                    if is_owner | (((where[lo] >= 0) & (stamp[lo] != mark)) == (new_on == 1)):
                        chosen = lo
                        break
            if is_owner:
                row[i] = chosen
                continue
            if chosen < 0:
                if new_on == 1:
                    side_mass = p_reach
                    n_candidates = n_members
                else:
                    side_mass = p_not
                    n_candidates = N
                    if not exact_not:
                        side_mass = 0.0
                        for j in range(N):
                            if (where[j] < 0) | (stamp[j] == mark):
                                side_mass += prox[j]
                target = rng.random() * side_mass
                acc = 0.0
                for t in range(n_candidates):
                    j = members[t] if new_on == 1 else t
                    if ((where[j] >= 0) & (stamp[j] != mark)) == (new_on == 1):
                        acc += prox[j]
                        chosen = j
                        if acc > target:
                            break
            # i's link set to chosen, the reverse adjacency kept.
            old = row[i]
            if chosen != old:
                before = prv[i]
                after = nxt[i]
                if before >= 0:
                    nxt[before] = after
                else:
                    head[old] = after
                if after >= 0:
                    prv[after] = before
                first = head[chosen]
                nxt[i] = first
                prv[i] = -1
                if first >= 0:
                    prv[first] = i
                head[chosen] = i
                row[i] = chosen
            if new_on != on:
                count = count_alt
                # z_k switched on the upstream rows, reach, z^T X and the dish's rows kept.
                for q in range(n_up):
                    m = upstream[q]
                    col_m = proximity_t[m]
                    for j in range(N):
                        reach[j] += sign * col_m[j]
                    for d in range(D):
                        zX[d] += sign * X[m, d]
                    Z[m, k] = new_on
                    if new_on == 1:
                        members[n_members] = m
                        where[m] = n_members
                        n_members += 1
                    else:
                        pos = where[m]
                        n_members -= 1
                        last = members[n_members]
                        members[pos] = last
                        where[last] = pos
                        where[m] = -1
                # Recomputed rather than updated, so no rounding builds up within a dish.
                stale = yes
            # b takes delta when the rows switched; delta back to zero.
            for t in range(n_delta):
                a = nz[t]
                if new_on != on:
                    b[a] += delta[a]
                delta[a] = 0.0
        # The column's new statistics into the model without it, which becomes the full one.
        _insert_column_stats(R, Gk, cross, k, K, count, b, zX, ratio, col)
        full_M, full_G, part_M, part_G = R, Gk, full_M, full_G


@njit(cache=True, no_cfunc_wrapper=True)
def _sweep_links_metropolis(
    X, Z, links, owners, K, proximity, proximity_t, cum_proximity, Minv, G, cross, sigma_x,
    sigma_a, rng, R, Gk, vec_cap, vec_d, nz, idx, reach,
):
    """The Metropolis link updates of :func:`sweep_connections` (work arrays given;
    ``proximity``, ``proximity_t`` and ``reach`` are not used)."""
    N, D = X.shape
    ratio = sigma_x * sigma_x / (sigma_a * sigma_a)
    col, b, Rb, delta = vec_cap[0], vec_cap[1], vec_cap[2], vec_cap[3]
    zX, u, u_alt = vec_d[0], vec_d[1], vec_d[2]
    head, nxt, prv, stamp = idx[0], idx[1], idx[2], idx[3]
    upstream, members, where = idx[4], idx[5], idx[6]
    mark = 0
    for k in range(K):
        owner = owners[k]
        row = links[k]
        n_members, bRb = _begin_dish(k, Z, row, owner, K, Minv, G, cross, R, Gk, col, b, zX,
                                     members, where, nz, Rb, u, head, nxt, prv)
        count = float(n_members)
        score = _score(count + ratio - bRb, u, ratio, sigma_x)
        for i in range(N):
            cum_row = cum_proximity[i]
            if i == owner:
                row[i] = draw_link(cum_row, rng)
                continue
            proposal = -1
            if Z[i, k] == 0:
                # The rows upstream of an off customer are off too, so a proposed target
                # off the dish keeps every row as it is: accepted with no likelihood and
                # no walk. (A target on the dish is not upstream of i.)
                proposal = draw_link(cum_row, rng)
                if Z[proposal, k] == 0:
                    _move_link(row, i, proposal, head, nxt, prv)
                    continue
            # Customers whose path runs through i, with i's link cut (stamp == mark).
            mark += 1
            n_up = _collect_upstream(i, head, nxt, stamp, mark, upstream)
            on = Z[i, k]
            sign = -1.0 if on else 1.0
            count_alt = count + sign * n_up
            n_delta = 0
            # The prior row as proposal: a target on the current side leaves z_k as it is
            # and is accepted without any likelihood; one on the other side is accepted
            # with the likelihood ratio.
            chosen = proposal if proposal >= 0 else draw_link(cum_row, rng)
            new_on = 1 if (Z[chosen, k] == 1 and stamp[chosen] != mark) else 0
            if new_on != on:
                n_delta, score_alt = _switch_score(
                    X, Z, k, K, upstream, n_up, sign, u, Rb, bRb, R, Gk, count_alt,
                    ratio, sigma_x, delta, nz, u_alt,
                )
                if math.log(rng.random()) >= score_alt - score:
                    new_on = on  # rejected: the link stays as it was
                    chosen = row[i]
            _move_link(row, i, chosen, head, nxt, prv)
            if new_on != on:
                count = count_alt
                for t in range(n_delta):
                    b[nz[t]] += delta[nz[t]]
                n_members = _switch_rows(X, Z, k, upstream, n_up, sign, new_on, zX, members,
                                         where, n_members)
            for t in range(n_delta):
                delta[nz[t]] = 0.0
            if new_on != on:
                # Recomputed rather than updated, so no rounding builds up within a dish.
                bRb = _column_terms(b, zX, R, Gk, K, k, nz, Rb, u)
                score = _score(count + ratio - bRb, u, ratio, sigma_x)
        _end_dish(k, K, Minv, G, cross, R, Gk, count, b, zX, ratio, col)


#: Rejected draws of a link that avoids the owner before the exact inverse-CDF draw takes over.
_MAX_LINK_REJECTIONS = 1000


@njit(cache=True, no_cfunc_wrapper=True)
def sweep_ownership(
    X, Z, links, owners, n_features, cum_proximity, log_no_link, mu, Minv, G, cross,
    sigma_x, sigma_a, own_weight, max_features, start, rng, vec_cap, zX, idx, reach_state,
):
    """Birth and death of the dishes each customer owns (Metropolis-Hastings, eq. 34).

    Customer ``i`` owns ``lambda_i ~ Poisson(mu_i)`` dishes, ``mu_i = alpha / h_i``. With
    probability 1/2 a new dish is proposed, its links drawn from the prior or, with
    probability ``own_weight`` when possible, from the prior conditioned on nobody linking
    to ``i`` (so only ``i`` has it; ``log_no_link[i] = log P(no customer links to i)``);
    otherwise one of ``i``'s dishes, chosen uniformly, is proposed for removal. The
    acceptance ratio of a birth is ``mu_i / (lambda_i + 1) * p(links) / q(links)`` times
    the likelihood ratio.

    A dish of ``i`` alone has the column ``e_i`` whatever its links, and ``q / p`` is the
    same for all links that avoid ``i``: such a proposal is accepted or rejected from
    ``e_i`` alone and its ``N`` links are drawn only when it is accepted. A prior-drawn
    dish needs all ``N`` links and their reachability (``O(N log N)``).

    With ``K = max_features`` dishes a birth is rejected outright: the chain then samples
    the dd-IBP conditioned on at most ``max_features`` dishes.

    Customers ``start, start + 1, ...`` are visited; the kernel returns
    ``(n_features, next_customer)`` and stops early, before drawing anything for that
    customer, when the arrays are full, so the caller can grow them and resume.

    The links of a birth that avoid ``i`` are drawn by rejection (a link to ``i`` is drawn
    again) for at most ``_MAX_LINK_REJECTIONS`` tries, then (a customer that links to ``i``
    with probability near one) by inverting the CDF with ``i``'s mass taken out; exact
    either way.

    Work arrays (allocated by the caller, so the kernel compiles no allocation):
    ``vec_cap`` (2, capacity) float, ``zX`` (D,) float, ``idx`` (2, N) int64 and
    ``reach_state`` (N,) int8.

    One kernel body (the proposal's link draws, its ratio ``q / p`` and the column's score
    written out here rather than in helpers, which numba would compile and optimise again
    inside this kernel; issue 22).
    """
    N, D = X.shape
    K = n_features
    cap = Minv.shape[0]
    ratio = sigma_x * sigma_x / (sigma_a * sigma_a)
    floor = 1e-12 * ratio  # the least s of a column (as in _insert_column_stats)
    column_offset = D * (math.log(sigma_x) - math.log(sigma_a))
    b, col = vec_cap[0], vec_cap[1]
    new_links, path = idx[0], idx[1]
    # A typed zero for the counters: one set from the literal 0 would be retyped int64 on
    # a second pass of numba's type inference over the kernel (issue 22).
    zero = np.int64(0)
    for i in range(start, N):
        if K >= cap:
            return K, i
        lam = zero
        for k in range(K):
            if owners[k] == i:
                lam += 1
        weight = own_weight if math.isfinite(log_no_link[i]) else 0.0
        # log q(links) / p(links) of a proposal whose links avoid i (any dish that nobody
        # links to), and of one with a link to i: with probability weight the links avoid
        # the owner (a feature of the owner alone), else they come from the prior.
        log_ratio_alone = math.log(1.0 - weight + weight * math.exp(-log_no_link[i]))
        log_ratio_linked = math.log(1.0 - weight)
        if rng.random() < 0.5:
            if K >= max_features:
                continue  # the prior is truncated to max_features dishes: rejected
            avoid = weight > 0.0 and rng.random() < weight
            # reach_state[m] == 1 marks the rows of the proposed column: i alone when the
            # links avoid i (z = e_i: they are drawn below, only if the dish is accepted),
            # else the customers whose path along the prior links reaches i.
            for m in range(N):
                reach_state[m] = 0
            reach_state[i] = 1
            log_ratio = log_ratio_alone
            if not avoid:
                # Links from the prior (a binary search in each row of cum_proximity).
                for j in range(N):
                    cum_row = cum_proximity[j]
                    x = rng.random() * cum_row[N - 1]
                    lo = zero
                    hi = N - 1
                    while lo < hi:
                        mid = (lo + hi) // 2
                        if cum_row[mid] > x:
                            hi = mid
                        else:
                            lo = mid + 1
                    new_links[j] = lo
                # Who reaches i along the new links (the walk of reachability_into in
                # priors/_ddibp_kernels.py: 0 unknown, 1 reaches i, 2 does not, 3 on the
                # path being followed; i's own link ignored), each customer visited once.
                for first in range(N):
                    if reach_state[first] != 0:
                        continue
                    length = zero
                    j = first
                    while reach_state[j] == 0:
                        reach_state[j] = 3
                        path[length] = j
                        length += 1
                        j = new_links[j]
                    verdict = 2 - (reach_state[j] == 1)  # 1 reaches i, 2 does not
                    for p in range(length):
                        reach_state[path[p]] = verdict
                for j in range(N):
                    if (j != i) & (new_links[j] == i):
                        log_ratio = log_ratio_linked
                        break
            # The column's statistics: count = z^T z, b = Z^T z, z^T X.
            for j in range(K):
                b[j] = 0.0
            for d in range(D):
                zX[d] = 0.0
            count = 0.0
            for m in range(N):
                if reach_state[m] == 1:
                    count += 1.0
                    for j in range(K):
                        b[j] += Z[m, j]
                    for d in range(D):
                        zX[d] += X[m, d]
            # -D/2 log s + |u|^2 / (2 s_x^2 s) of the column (count, b, zX) added to the
            # model, s = count + r - b^T M^{-1} b, u = z^T X - G^T b (entries where b is
            # nonzero only).
            s = count + ratio
            for a in range(K):
                if b[a] == 0.0:
                    continue
                acc = 0.0
                for j in range(K):
                    acc += Minv[a, j] * b[j]
                s -= b[a] * acc
            s = floor if floor > s else s  # max(s, floor)
            unorm = 0.0
            for d in range(D):
                v = zX[d]
                for a in range(K):
                    if b[a] != 0.0:
                        v -= b[a] * G[a, d]
                unorm += v * v
            delta = -0.5 * D * math.log(s) + unorm / (2.0 * sigma_x * sigma_x * s)
            delta += column_offset
            log_accept = delta + math.log(mu[i]) - math.log(lam + 1.0) - log_ratio
            if math.log(rng.random()) < log_accept:
                b[K] = 0.0
                _insert_column_stats(Minv, G, cross, K, K + 1, count, b, zX, ratio, col)
                if avoid:
                    # Every other customer's link from its prior row conditioned on not
                    # being i; i's own link from its prior row.
                    for j in range(N):
                        cum_row = cum_proximity[j]
                        total = cum_row[N - 1]
                        before = cum_row[i - 1] if i > 0 else 0.0
                        mass = cum_row[i] - before
                        tries = zero
                        while True:
                            if j == i or tries < _MAX_LINK_REJECTIONS:
                                x = rng.random() * total
                            else:
                                x = rng.random() * (total - mass)
                                if x >= before:
                                    x += mass
                            lo = zero
                            hi = N - 1
                            while lo < hi:
                                mid = (lo + hi) // 2
                                if cum_row[mid] > x:
                                    hi = mid
                                else:
                                    lo = mid + 1
                            tries += 1
                            if j == i or lo != i:
                                break
                            if tries > _MAX_LINK_REJECTIONS:
                                # x landed on i's edge by rounding: the first target with
                                # mass after i, else the last one before i.
                                for step in range(1, N):
                                    t = i + step if step < N - i else N - 1 - step
                                    if cum_row[t] > (cum_row[t - 1] if t > 0 else 0.0):
                                        lo = t
                                        break
                                break
                        new_links[j] = lo
                for m in range(N):
                    Z[m, K] = reach_state[m] == 1
                    links[K, m] = new_links[m]
                owners[K] = i
                K += 1
        else:
            if lam == 0:
                continue
            # The int(u * lam)-th of i's dishes (u uniform): the first whose rank r (from
            # 1) has u * lam < r, written without int(), which a first fit would compile.
            x = rng.random() * lam
            rank = 0.0
            k = -1
            for j in range(K):
                if owners[j] == i:
                    rank += 1.0
                    if x < rank:
                        k = j
                        break
            mkk = Minv[k, k]
            gnorm = 0.0
            for d in range(D):
                gnorm += G[k, d] * G[k, d]
            delta = 0.5 * D * math.log(1.0 / mkk) - gnorm / (2.0 * sigma_x * sigma_x * mkk)
            delta -= column_offset
            log_ratio = log_ratio_alone
            for j in range(N):
                if (j != i) & (links[k, j] == i):
                    log_ratio = log_ratio_linked
                    break
            log_accept = delta + math.log(lam) - math.log(mu[i]) + log_ratio
            if math.log(rng.random()) < log_accept:
                _remove_column_stats(Minv, G, k, K, col, Minv, G)
                # The last dish moves into k's place (no-op copies when k is the last).
                last = K - 1
                for a in range(K):
                    Minv[k, a] = Minv[last, a]
                    Minv[a, k] = Minv[a, last]
                Minv[k, k] = Minv[last, last]
                for a in range(K):
                    Minv[last, a] = 0.0
                    Minv[a, last] = 0.0
                for d in range(D):
                    G[k, d] = G[last, d]
                    cross[k, d] = cross[last, d]
                    G[last, d] = 0.0
                    cross[last, d] = 0.0
                for m in range(N):
                    Z[m, k] = Z[m, last]
                    links[k, m] = links[last, m]
                    Z[m, last] = 0
                owners[k] = owners[last]
                K = last
    return K, N
