"""Numba kernels of the dd-IBP sampler (Gershman, Frazier and Blei, seed 004, sec. 5).

The features ``W`` of the linear-Gaussian model are integrated out (eq. 36, the same as
eq. A.2 of the IBP thesis). The collapsed likelihood is kept through ``M^{-1}`` with
``M = Z^T Z + s_x^2/s_a^2 I``, ``log |M|`` and ``Z^T X``; when a connection update switches a
feature on or off for a set of rows, each row is one pair of rank-one updates, so no
proposal costs more than ``O(|rows| K^2 + K^2 D)``.
"""

import math

import numpy as np
from numba import njit

from ..priors.ddibp import compute_reachability
from ._collapsed_kernels import _log_lik, _rank_one


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
def _switch_rows(Minv, logdet, cross, Z, X, rows_mask, k, value, n_features, u, Mtmp):
    """Set ``Z[m, k] = value`` for every ``m`` with ``rows_mask[m]``; update the statistics.

    ``Minv``, ``cross`` and ``Z`` change in place; the new ``log |M|`` is returned.
    """
    K = n_features
    z = np.empty(K, dtype=np.int8)
    D = X.shape[1]
    for m in range(Z.shape[0]):
        if not rows_mask[m] or Z[m, k] == value:
            continue
        for j in range(K):
            z[j] = Z[m, j]
        logdet += _rank_one(Minv, z, K, -1.0, u, Mtmp)
        for a in range(K):
            for b in range(K):
                Minv[a, b] = Mtmp[a, b]
        z[k] = value
        logdet += _rank_one(Minv, z, K, 1.0, u, Mtmp)
        for a in range(K):
            for b in range(K):
                Minv[a, b] = Mtmp[a, b]
        sign = 1.0 if value == 1 else -1.0
        for d in range(D):
            cross[k, d] += sign * X[m, d]
        Z[m, k] = value
    return logdet


@njit(cache=True)
def sweep_connections(
    X, Z, connections, owners, n_features, proximity, cum_proximity, Minv, logdet, cross,
    sq_norm, sigma_x, sigma_a, rng,
):
    """Gibbs-sample every link ``c_ik`` of every owned dish (eq. 33), in place.

    For customer ``i`` and dish ``k``, cutting ``i``'s link splits the candidates into those
    that reach the owner and those that do not; the choice between the two changes
    ``z_k`` for ``i`` and every customer whose path runs through ``i``, so only two
    likelihoods are needed. The link is then drawn within the chosen side in proportion
    to ``a_ij``. The owner's own link does not affect ``Z`` and is drawn from its prior.

    Returns the new ``log |M|``.
    """
    N = X.shape[0]
    K = n_features
    cap = Minv.shape[0]
    u = np.empty(cap)
    Mtmp = np.empty((cap, cap))
    Malt = np.empty((cap, cap))
    calt = np.empty((cap, X.shape[1]))
    Zcol = np.empty(N, dtype=np.int8)
    current = _log_lik(Minv, logdet, cross, sq_norm, N, K, sigma_x, sigma_a)
    for k in range(K):
        owner = owners[k]
        for i in range(N):
            if i == owner:
                connections[i, k] = draw_link(cum_proximity[i], rng)
                continue
            connections[i, k] = i  # cut i's link
            reaches = compute_reachability(connections[:, k], owner)
            # Customers whose path runs through i. A path ends at the owner (its own link
            # is ignored), so the owner's link is cut too while tracing them.
            owner_link = connections[owner, k]
            connections[owner, k] = owner
            upstream = compute_reachability(connections[:, k], i)
            connections[owner, k] = owner_link
            p_reach = 0.0
            p_not = 0.0
            for j in range(N):
                if reaches[j]:
                    p_reach += proximity[i, j]
                else:
                    p_not += proximity[i, j]
            on = Z[i, k]
            # Likelihood of the other side: copy the statistics and switch the rows.
            for a in range(K):
                for b in range(K):
                    Malt[a, b] = Minv[a, b]
                for d in range(X.shape[1]):
                    calt[a, d] = cross[a, d]
            for m in range(N):
                Zcol[m] = Z[m, k]
            ld_alt = _switch_rows(Malt, logdet, calt, Z, X, upstream, k, 1 - on, K, u, Mtmp)
            alternative = _log_lik(Malt, ld_alt, calt, sq_norm, N, K, sigma_x, sigma_a)
            for m in range(N):
                Z[m, k] = Zcol[m]
            if on == 1:
                log_on, log_off = current, alternative
            else:
                log_on, log_off = alternative, current
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
                if (reaches[j] != 0) == (new_on == 1):
                    acc += proximity[i, j]
                    chosen = j
                    if acc > target:
                        break
            connections[i, k] = chosen
            if new_on != on:
                for a in range(K):
                    for b in range(K):
                        Minv[a, b] = Malt[a, b]
                    for d in range(X.shape[1]):
                        cross[a, d] = calt[a, d]
                logdet = ld_alt
                for m in range(N):
                    if upstream[m]:
                        Z[m, k] = new_on
                current = alternative
    return logdet
