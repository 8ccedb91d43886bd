"""Numba kernel of the IBP split-merge move: one restricted Gibbs scan (Jain and Neal 2004).

A split of feature ``k`` (Doshi-Velez 2009, sec. 3.3, after Meeds et al. 2007) replaces its column
by two columns ``a`` and ``b``; every row that had ``k`` takes one of three patterns on
``(a, b)``: ``(1, 0)``, ``(0, 1)`` or ``(1, 1)`` (so that a merge, the OR of two columns, is
its exact reverse). A restricted Gibbs scan visits those rows once and draws each row's
pattern from its conditional given every other row, with ``A`` integrated out:

    p(pattern | rest) ~ prior(z_ra) prior(z_rb) N(x_r; z_r M_-r, (s_x^2 + z_r S_-r z_r^T) I_D)

where ``prior(1) = m_-r / (N - 1 + beta)``, ``prior(0) = (N - 1 - m_-r + beta) / (N - 1 +
beta)`` (eq. 3.6, app. C.1) and ``(M_-r, S_-r)`` is the feature posterior without row ``r``
(eq. A.3; the predictive of one row is the ``W = 1`` case of eq. 4.2). The posterior is
carried as covariance and mean and moved by Sherman-Morrison updates.
"""

import math

import numpy as np
from numba import njit

from ..._numba import FAST_MATH

_LOG_2PI = math.log(2.0 * math.pi)

@njit(cache=True, fastmath=FAST_MATH)
def split_scans(X, Z, rows, col_a, col_b, target, n_intermediate, cov, mean, sigma_x2, beta,
                rng, order, visit, final, u, resid, z_row, log_w, chosen_log):
    """Launch state and final restricted Gibbs scan of a split proposal (Jain and Neal).

    ``Z`` (float64) holds the other features and the two split columns ``col_a`` and
    ``col_b``, with the anchors set and the rows ``rows`` at ``(0, 0)``; ``cov`` and
    ``mean`` the feature posterior ``p(A | Z, X)`` of that ``Z``, covariance ``(K, K)`` and
    mean ``(K, D)``, kept up to date in place. The rows are allocated one after the other
    in a random order (the sequential launch: a restricted scan from the empty start),
    scanned ``n_intermediate`` more times in fresh random orders, then once more: drawing
    their patterns when ``target[0] < 0``, otherwise setting row ``rows[i]`` to
    ``target[i]`` (patterns ``(1,0), (0,1), (1,1)`` are 0, 1, 2) and scoring that choice.
    ``n_intermediate = -1`` makes the final scan alone. ``Z`` ends in the final state.

    Each scan visits its rows once and draws each row's pattern from its conditional given
    every other row (the module docstring), by Sherman-Morrison moves of the posterior.
    ``order``, ``visit`` and ``final`` (int64, as long as ``rows``; ``order`` ends holding
    the final scan's order: it visited ``rows[order]``), ``u``, ``resid``, ``z_row``,
    ``log_w`` and ``chosen_log`` (float64 of lengths ``K``, ``D``, ``K``, 3, 3) are work
    arrays. One function body, as the scans are what a first fit compiles (the draws of
    ``random_order`` and ``draw_from_log_weights`` written out, the same arithmetic and
    uniforms; issue 22).

    Returns
    -------
    float
        ``log q``, the log probability of the final scan's patterns given the launch state.
    """
    N = X.shape[0]
    K = Z.shape[1]
    D = X.shape[1]
    n_rows = rows.shape[0]
    log_q = 0.0
    for scan in range(2 + n_intermediate):
        # random_order(n_rows, order, rng), written out
        for i in range(n_rows):
            order[i] = i
        for i in range(n_rows - 1, 0, -1):
            j = np.int64(rng.random() * (i + 1))
            order[i], order[j] = order[j], order[i]
        last = scan == 1 + n_intermediate
        for i in range(n_rows):
            visit[i] = rows[order[i]]
            final[i] = target[order[i]] if last and target[0] >= 0 else -1
        count_a = 0.0
        count_b = 0.0
        for n in range(N):
            count_a += Z[n, col_a]
            count_b += Z[n, col_b]
        log_q = 0.0
        for i in range(n_rows):
            r = visit[i]
            for k in range(K):
                z_row[k] = Z[r, k]
            # Phase 0 takes the row out of the posterior, phase 1 draws its pattern and
            # puts it back: one copy of the Sherman-Morrison move in the kernel.
            for phase in range(2):
                if phase == 1:
                    others_a = count_a - z_row[col_a]
                    others_b = count_b - z_row[col_b]
                    # The anchors keep others_a, others_b >= 1: every pattern has mass.
                    on_a = math.log(others_a)
                    off_a = math.log(N - 1.0 - others_a + beta)
                    on_b = math.log(others_b)
                    off_b = math.log(N - 1.0 - others_b + beta)
                    for p in range(3):
                        za = 0.0 if p == 1 else 1.0
                        zb = 0.0 if p == 0 else 1.0
                        z_row[col_a] = za
                        z_row[col_b] = zb
                        # log N(x; z^T M, (s_x^2 + z^T S z) I_D), the row's predictive.
                        var = sigma_x2
                        for j in range(K):
                            if z_row[j] != 0.0:
                                for k in range(K):
                                    var += z_row[j] * cov[j, k] * z_row[k]
                        quad = 0.0
                        for d in range(D):
                            s = X[r, d]
                            for k in range(K):
                                s -= z_row[k] * mean[k, d]
                            quad += s * s
                        log_w[p] = (
                            (on_a if za != 0.0 else off_a)
                            + (on_b if zb != 0.0 else off_b)
                            + -0.5 * (D * (_LOG_2PI + math.log(var)) + quad / var)
                        )
                    # max(log_w[0], max(log_w[1], log_w[2])), without compiling max
                    best = log_w[2] if log_w[2] > log_w[1] else log_w[1]
                    best = best if best > log_w[0] else log_w[0]
                    log_norm = best + math.log(
                        math.exp(log_w[0] - best) + math.exp(log_w[1] - best)
                        + math.exp(log_w[2] - best)
                    )
                    if final[i] < 0:
                        # p = draw_from_log_weights(log_w[:3], rng), written out
                        total = 0.0
                        for p in range(3):
                            chosen_log[p] = math.exp(log_w[p] - best)
                            total += chosen_log[p]
                        x = rng.random() * total
                        p = 0
                        acc = chosen_log[0]
                        while acc < x and p < 2:
                            p += 1
                            acc += chosen_log[p]
                    else:
                        p = final[i]
                    log_q += log_w[p] - log_norm
                    z_row[col_a] = 0.0 if p == 1 else 1.0
                    z_row[col_b] = 0.0 if p == 0 else 1.0
                    count_a = others_a + z_row[col_a]
                    count_b = others_b + z_row[col_b]
                    Z[r, col_a] = z_row[col_a]
                    Z[r, col_b] = z_row[col_b]
                sign = -1.0 if phase == 0 else 1.0
                # P -> P + sign z z^T / s_x^2: S -> S - u u^T / c and
                # M -> M + u (x - z^T M)^T / c, u = S z, c = sign s_x^2 + z^T S z.
                for j in range(K):
                    s = 0.0
                    for k in range(K):
                        s += cov[j, k] * z_row[k]
                    u[j] = s
                zu = 0.0
                for k in range(K):
                    zu += z_row[k] * u[k]
                if zu == 0.0:
                    continue
                for d in range(D):
                    s = X[r, d]
                    for k in range(K):
                        s -= z_row[k] * mean[k, d]
                    resid[d] = s
                c = sign * sigma_x2 + zu
                for j in range(K):
                    uj = u[j] / c
                    if uj == 0.0:
                        continue
                    for k in range(K):
                        cov[j, k] -= uj * u[k]
                    for d in range(D):
                        mean[j, d] += uj * resid[d]
    return log_q
