"""Numba kernels of the dd-IBP sampler (Gershman, Frazier and Blei, seed 004, sec. 5).

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
``z`` changes, seed 004 sec. 8): ``O(|rows| (K + D) + K^2 + K D)`` per update instead of an
``O(N^3)`` recomputation. Adding or removing a whole column (an ownership move) uses the
same formula with ``R = M^{-1}``.
"""

import math

import numpy as np
from numba import njit

from ..priors.ddibp import compute_reachability


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


@njit(cache=True)
def _column_score(count, b, zX, R, G, n_features, ratio, sigma_x):
    """``-D/2 log s + |u|^2 / (2 s_x^2 s)`` of a column with statistics ``(z^T z, b, z^T X)``
    added to the model whose ``M^{-1}`` and ``G`` are ``R`` and ``G`` (only the entries
    where ``b`` is nonzero are read, so a column ``k`` excluded by ``b[k] = 0`` is ignored).
    """
    K = n_features
    D = zX.shape[0]
    s = count + ratio
    for a in range(K):
        if b[a] == 0.0:
            continue
        acc = 0.0
        for j in range(K):
            acc += R[a, j] * b[j]
        s -= b[a] * acc
    s = max(s, 1e-12 * ratio)
    unorm = 0.0
    for d in range(D):
        v = zX[d]
        for a in range(K):
            if b[a] != 0.0:
                v -= b[a] * G[a, d]
        unorm += v * v
    return -0.5 * D * math.log(s) + unorm / (2.0 * sigma_x * sigma_x * s)


@njit(cache=True)
def _remove_column_stats(Minv, G, k, n_features, col):
    """Turn ``Minv, G`` into those of the model without column ``k`` (row and column ``k``
    are left as zeros)."""
    K = n_features
    mkk = Minv[k, k]
    for a in range(K):
        col[a] = Minv[a, k]
    for a in range(K):
        f = col[a] / mkk
        for j in range(K):
            Minv[a, j] -= f * col[j]
        if a != k:
            for d in range(G.shape[1]):
                G[a, d] -= f * G[k, d]
    for d in range(G.shape[1]):
        G[k, d] = 0.0
    for a in range(K):
        Minv[a, k] = 0.0
        Minv[k, a] = 0.0


@njit(cache=True)
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
    s = max(s, 1e-12 * ratio)
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


@njit(cache=True)
def sweep_connections(
    X, Z, links, owners, n_features, proximity, cum_proximity, Minv, G, cross, sigma_x,
    sigma_a, rng,
):
    """Gibbs-sample every link ``c_ik`` of every owned dish (eq. 33), in place.

    ``links[k, i]`` is customer ``i``'s link for dish ``k``. Cutting ``i``'s link splits the
    candidates into the customers that still reach the owner and those that do not; the
    choice between the two switches ``z_k`` for ``i`` and every customer whose path runs
    through ``i``, so only two likelihoods are needed. The link is then drawn within the
    chosen side in proportion to ``a_ij``. The owner's own link does not affect ``Z`` and
    is drawn from its prior.
    """
    N, D = X.shape
    K = n_features
    cap = Minv.shape[0]
    ratio = sigma_x * sigma_x / (sigma_a * sigma_a)
    R = np.empty((cap, cap))
    Gk = np.empty((cap, D))
    col = np.empty(cap)
    b = np.zeros(cap)
    b_alt = np.zeros(cap)
    zX = np.empty(D)
    zX_alt = np.empty(D)
    for k in range(K):
        owner = owners[k]
        for a in range(K):
            for j in range(K):
                R[a, j] = Minv[a, j]
            for d in range(D):
                Gk[a, d] = G[a, d]
        _remove_column_stats(R, Gk, k, K, col)
        count = 0.0
        for j in range(K):
            b[j] = 0.0
        for d in range(D):
            zX[d] = cross[k, d]
        for m in range(N):
            if Z[m, k]:
                count += 1.0
                for j in range(K):
                    b[j] += Z[m, j]
        b[k] = 0.0
        score = _column_score(count, b, zX, R, Gk, K, ratio, sigma_x)
        for i in range(N):
            if i == owner:
                links[k, i] = draw_link(cum_proximity[i], rng)
                continue
            # Customers whose path runs through i, with i's link cut. A path ends at the
            # owner, so the owner's link is cut too while tracing them.
            links[k, i] = i
            owner_link = links[k, owner]
            links[k, owner] = owner
            upstream = compute_reachability(links[k], i)
            links[k, owner] = owner_link
            # After the cut, exactly the rows that had the dish and are not upstream of i
            # still reach the owner.
            p_reach = 0.0
            p_not = 0.0
            for j in range(N):
                if Z[j, k] and not upstream[j]:
                    p_reach += proximity[i, j]
                else:
                    p_not += proximity[i, j]
            on = Z[i, k]
            sign = -1.0 if on else 1.0
            count_alt = count
            for j in range(K):
                b_alt[j] = b[j]
            for d in range(D):
                zX_alt[d] = zX[d]
            for m in range(N):
                if upstream[m]:
                    count_alt += sign
                    for j in range(K):
                        b_alt[j] += sign * Z[m, j]
                    for d in range(D):
                        zX_alt[d] += sign * X[m, d]
            b_alt[k] = 0.0
            score_alt = _column_score(count_alt, b_alt, zX_alt, R, Gk, K, ratio, sigma_x)
            if on:
                log_on, log_off = score, score_alt
            else:
                log_on, log_off = score_alt, score
            w_on = math.log(p_reach) + log_on if p_reach > 0 else -np.inf
            w_off = math.log(p_not) + log_off if p_not > 0 else -np.inf
            best = max(w_on, w_off)
            p_on = math.exp(w_on - best) / (math.exp(w_on - best) + math.exp(w_off - best))
            new_on = 1 if rng.random() < p_on else 0
            # The link itself, within the chosen side, in proportion to a_ij.
            side_total = p_reach if new_on == 1 else p_not
            target = rng.random() * side_total
            acc = 0.0
            chosen = -1
            for j in range(N):
                if (Z[j, k] and not upstream[j]) == (new_on == 1):
                    acc += proximity[i, j]
                    chosen = j
                    if acc > target:
                        break
            links[k, i] = chosen
            if new_on != on:
                count = count_alt
                for j in range(K):
                    b[j] = b_alt[j]
                for d in range(D):
                    zX[d] = zX_alt[d]
                score = score_alt
                for m in range(N):
                    if upstream[m]:
                        Z[m, k] = new_on
        # The column's new statistics back into the full model.
        for a in range(K):
            for j in range(K):
                Minv[a, j] = R[a, j]
            for d in range(D):
                G[a, d] = Gk[a, d]
        _insert_column_stats(Minv, G, cross, k, K, count, b, zX, ratio, col)


@njit(cache=True)
def _draw_dish_links(cum_proximity, owner, avoid_owner, rng, out):
    """One dish's links: from the prior, or (``avoid_owner``) from the prior of every other
    customer conditioned on not linking to the owner."""
    N = out.shape[0]
    for j in range(N):
        t = draw_link(cum_proximity[j], rng)
        if avoid_owner and j != owner:
            while t == owner:
                t = draw_link(cum_proximity[j], rng)
        out[j] = t


@njit(cache=True)
def _log_proposal_ratio(links_row, owner, log_no_link, weight):
    """``log q(links) / p(links)`` of the birth proposal: with probability ``weight`` the
    links avoid the owner (a feature of the owner alone), else they come from the prior."""
    for j in range(links_row.shape[0]):
        if j != owner and links_row[j] == owner:
            return math.log(1.0 - weight)
    return math.log(1.0 - weight + weight * math.exp(-log_no_link))


@njit(cache=True)
def sweep_ownership(
    X, Z, links, owners, n_features, cum_proximity, log_no_link, mu, Minv, G, cross,
    sigma_x, sigma_a, start, rng,
):
    """Birth and death of the dishes each customer owns (Metropolis-Hastings, eq. 34).

    Customer ``i`` owns ``lambda_i ~ Poisson(mu_i)`` dishes, ``mu_i = alpha / h_i``. With
    probability 1/2 a new dish is proposed, its links drawn from the prior or, half of the
    time when possible, from the prior conditioned on nobody linking to ``i`` (so only
    ``i`` has it; ``log_no_link[i] = log P(no customer links to i)``); otherwise one of
    ``i``'s dishes, chosen uniformly, is proposed for removal. The acceptance ratio of a
    birth is ``mu_i / (lambda_i + 1) * p(links) / q(links)`` times the likelihood ratio.

    Customers ``start, start + 1, ...`` are visited; the kernel returns
    ``(n_features, next_customer)`` and stops early, before drawing anything for that
    customer, when the arrays are full, so the caller can grow them and resume.
    """
    N, D = X.shape
    K = n_features
    cap = Minv.shape[0]
    ratio = sigma_x * sigma_x / (sigma_a * sigma_a)
    column_offset = D * (math.log(sigma_x) - math.log(sigma_a))
    new_links = np.empty(N, dtype=np.int64)
    b = np.zeros(cap)
    zX = np.empty(D)
    col = np.empty(cap)
    for i in range(start, N):
        if K >= cap:
            return K, i
        lam = 0
        for k in range(K):
            if owners[k] == i:
                lam += 1
        weight = 0.5 if np.isfinite(log_no_link[i]) else 0.0
        if rng.random() < 0.5:
            avoid = weight > 0.0 and rng.random() < weight
            _draw_dish_links(cum_proximity, i, avoid, rng, new_links)
            z = compute_reachability(new_links, i)
            count = 0.0
            for j in range(K):
                b[j] = 0.0
            for d in range(D):
                zX[d] = 0.0
            for m in range(N):
                if z[m]:
                    count += 1.0
                    for j in range(K):
                        b[j] += Z[m, j]
                    for d in range(D):
                        zX[d] += X[m, d]
            delta = _column_score(count, b, zX, Minv, G, K, ratio, sigma_x) + column_offset
            log_accept = (
                delta + math.log(mu[i]) - math.log(lam + 1.0)
                - _log_proposal_ratio(new_links, i, log_no_link[i], weight)
            )
            if math.log(rng.random()) < log_accept:
                b[K] = 0.0
                _insert_column_stats(Minv, G, cross, K, K + 1, count, b, zX, ratio, col)
                for m in range(N):
                    Z[m, K] = 1 if z[m] else 0
                    links[K, m] = new_links[m]
                owners[K] = i
                K += 1
        else:
            if lam == 0:
                continue
            pick = int(rng.random() * lam)
            k = -1
            for j in range(K):
                if owners[j] == i:
                    if pick == 0:
                        k = j
                        break
                    pick -= 1
            mkk = Minv[k, k]
            gnorm = 0.0
            for d in range(D):
                gnorm += G[k, d] * G[k, d]
            delta = 0.5 * D * math.log(1.0 / mkk) - gnorm / (2.0 * sigma_x * sigma_x * mkk)
            delta -= column_offset
            log_accept = (
                delta + math.log(lam) - math.log(mu[i])
                + _log_proposal_ratio(links[k], i, log_no_link[i], weight)
            )
            if math.log(rng.random()) < log_accept:
                _remove_column_stats(Minv, G, k, K, col)
                last = K - 1
                if k != last:
                    for a in range(K):
                        Minv[k, a] = Minv[last, a]
                        Minv[a, k] = Minv[a, last]
                    Minv[k, k] = Minv[last, last]
                    for d in range(D):
                        G[k, d] = G[last, d]
                        cross[k, d] = cross[last, d]
                    for m in range(N):
                        Z[m, k] = Z[m, last]
                        links[k, m] = links[last, m]
                    owners[k] = owners[last]
                for a in range(K):
                    Minv[last, a] = 0.0
                    Minv[a, last] = 0.0
                for d in range(D):
                    G[last, d] = 0.0
                    cross[last, d] = 0.0
                for m in range(N):
                    Z[m, last] = 0
                K = last
    return K, N
