"""Numba kernels of the Normal-Wishart component statistics (Görür 2007, sec. 3.3.1-3.3.2).

A cluster is kept in a *slot* of a statistics tuple
``slots = (counts, sums, means, chol, logdet, log_const, inv_diag, exponent, shrink,
log_weight, leave_const)``:

* ``counts[s]`` = ``n``, ``sums[s]`` = ``sum x`` (D,), ``means[s]`` = ``xi*`` (D,);
* ``chol[s]`` = lower Cholesky factor of ``W* = beta W + C + (rho n / kappa)(xbar - xi)
  (xbar - xi)^T`` (D, D) (the W* of Görür 2007, eq. 3.65), ``logdet[s] = log|W*|``;
* ``log_const[s]`` = the row-independent part of the Student-t predictive (eq. 3.65),
  ``-D/2 log pi + D/2 log(kappa/(kappa+1)) + lgamma((nu+1)/2) - lgamma((nu+1-D)/2)
  - 1/2 log|W*|`` with ``kappa = rho + n`` and ``nu = beta + n``;
* caches for the inner loop: ``inv_diag[s]`` = ``1 / diag(chol[s])``, ``exponent[s]`` =
  ``-(nu + 1)/2``, ``shrink[s]`` = ``kappa / (kappa + 1)`` and ``log_weight[s]`` =
  ``log n + log_const[s]`` (the CRP weight of eq. 3.32 folded in), so that
  ``log n + log p(x | X_s) = log_weight[s] + exponent[s] log(1 + shrink[s] r)`` with
  ``r = |L_s^-1 (x - xi*_s)|^2``; ``leave_const[s]`` is the part of the predictive of a
  member given the slot's other rows that depends on ``n`` only (see
  :func:`log_predictive_without`).

A free slot has ``counts[s] == 0`` (its other entries are stale). The prior is the tuple
``prior = (xi, rho, beta, chol(beta W), log|beta W|, gamma_ratio)`` with
``gamma_ratio[n] = lgamma((beta + n + 1)/2) - lgamma((beta + n + 1 - D)/2)`` tabulated for
every cluster size (:func:`make_prior`): a cluster's statistics change on every move, and
four ``lgamma`` calls would be most of the cost of a move.

When ``x`` joins a cluster with ``n`` rows and mean ``xi*_n``,
``W*_{n+1} = W*_n + kappa/(kappa+1) (x - xi*_n)(x - xi*_n)^T`` with ``kappa = rho + n``: a
rank-one Cholesky update (and a downdate when it leaves). The predictive of ``x`` is then
``O(D^2)`` per cluster from the factor (one triangular solve). The predictive of a member
``x`` given the cluster's *other* rows comes from the matrix determinant lemma without
touching the factor: ``|W*_{n-1}| = |W*_n| (1 - (kappa'+1)/kappa' e^T W*_n^-1 e)`` with
``e = x - xi*_n`` and ``kappa' = rho + n - 1``.
"""

import math

import numpy as np
from numba import njit
from numba.core.options import DefaultOptions
from scipy.special import gammaln

#: Compilation options of the small helpers that allocate nothing: without the NRT they skip
#: the reference counting of every array in the statistics tuples on each call, which
#: otherwise costs more than their arithmetic (a move's two slot refreshes drop from ~600
#: to ~100 ns). ``_nrt`` is a numba target option; where a numba version lacks it the
#: helpers compile as usual.
LEAF = {"cache": True, **({"_nrt": False} if hasattr(DefaultOptions, "_nrt") else {})}

#: Below this value of ``|W*_{n-1}| / |W*_n|`` a row dominates its cluster's scatter and
#: removing it by a downdate would lose more than ~1e-8 relative precision: the cluster's
#: statistics are recomputed from its rows instead.
RATIO_FLOOR = 1e-8

_LOG_PI = math.log(math.pi)


@njit(inline="always", **LEAF)
def chol_rank_one(L, v, sign):
    """``L L^T += sign v v^T`` in place (``sign`` is +1.0 or -1.0); ``v`` is overwritten.

    False if a downdate would not leave a positive definite matrix (``L`` is then left
    partly modified). The one rank-one Cholesky update of the package: the DP samplers'
    :func:`~sklearn_ibp.solvers.dp._dp_gaussian_kernels.cholesky_rank_one` calls it too.
    """
    D = L.shape[0]
    for k in range(D):
        lkk = L[k, k]
        r2 = lkk * lkk + sign * v[k] * v[k]
        if not r2 > 0.0:
            return False
        r = math.sqrt(r2)
        c = r / lkk
        s = v[k] / lkk
        L[k, k] = r
        for i in range(k + 1, D):
            L[i, k] = (L[i, k] + sign * s * v[i]) / c
            v[i] = c * v[i] - s * L[i, k]
    return True


@njit(**LEAF)
def chol_update(L, v, weight):
    """``L L^T += weight v v^T`` in place (``weight > 0``); ``v`` is overwritten."""
    root = math.sqrt(weight)
    for i in range(L.shape[0]):
        v[i] *= root
    chol_rank_one(L, v, 1.0)


@njit(**LEAF)
def chol_downdate(L, v, weight):
    """``L L^T -= weight v v^T`` in place; ``v`` is overwritten. False if the result would
    not be positive definite (``L`` is then left partly modified)."""
    root = math.sqrt(weight)
    for i in range(L.shape[0]):
        v[i] *= root
    return chol_rank_one(L, v, -1.0)


@njit(**LEAF)
def forward_norm2(L, e, work):
    """``|L^-1 e|^2`` for lower-triangular ``L`` (``e`` is not modified)."""
    D = L.shape[0]
    total = 0.0
    for i in range(D):
        s = e[i]
        for j in range(i):
            s -= L[i, j] * work[j]
        z = s / L[i, i]
        work[i] = z
        total += z * z
    return total


@njit(**LEAF)
def log_mvgamma(a, D):
    """``log Gamma_D(a)``, the multivariate gamma function."""
    out = 0.25 * D * (D - 1) * _LOG_PI
    for d in range(D):
        out += math.lgamma(a - 0.5 * d)
    return out


@njit(**LEAF)
def predictive_constant(n, logdet, prior, D):
    """Row-independent part of the Student-t predictive (eq. 3.65) of a cluster with ``n``
    rows and ``log|W*| = logdet``."""
    kappa = prior[1] + n
    return (
        -0.5 * D * _LOG_PI
        + 0.5 * D * math.log(kappa / (kappa + 1.0))
        + gamma_ratio(n, prior, D)
        - 0.5 * logdet
    )


@njit(**LEAF)
def gamma_ratio(n, prior, D):
    """``lgamma((beta + n + 1)/2) - lgamma((beta + n + 1 - D)/2)``, from the table when
    ``n`` is in it."""
    table = prior[5]
    if n < table.shape[0]:
        return table[n]
    nu = prior[2] + n
    return math.lgamma(0.5 * (nu + 1.0)) - math.lgamma(0.5 * (nu + 1.0 - D))


def make_prior(location, rho, dof, chol0, logdet0, n_max):
    """The kernels' prior tuple, with ``gamma_ratio`` for cluster sizes ``0 .. n_max``."""
    D = chol0.shape[0]
    nu = dof + np.arange(n_max + 1, dtype=np.float64)
    gamma_ratio = gammaln(0.5 * (nu + 1.0)) - gammaln(0.5 * (nu + 1.0 - D))
    return (
        np.ascontiguousarray(location, dtype=np.float64), float(rho), float(dof),
        np.ascontiguousarray(chol0, dtype=np.float64), float(logdet0), gamma_ratio,
    )


@njit(**LEAF)
def refresh_slot(s, slots, prior):
    """Recompute ``means``, ``logdet`` and ``log_const`` of slot ``s`` from its factor."""
    counts, sums, means, chol = slots[0], slots[1], slots[2], slots[3]
    location, rho, beta = prior[0], prior[1], prior[2]
    D = sums.shape[1]
    n = counts[s]
    kappa = rho + n
    for d in range(D):
        means[s, d] = (rho * location[d] + sums[s, d]) / kappa
    logdet, log_const, inv_diag = slots[4], slots[5], slots[6]
    exponent, shrink, log_weight = slots[7], slots[8], slots[9]
    ld = 0.0
    for d in range(D):
        ld += 2.0 * math.log(chol[s, d, d])
        inv_diag[s, d] = 1.0 / chol[s, d, d]
    logdet[s] = ld
    log_const[s] = predictive_constant(n, ld, prior, D)
    exponent[s] = -0.5 * (beta + n + 1.0)
    shrink[s] = kappa / (kappa + 1.0)
    log_weight[s] = math.log(n) + log_const[s] if n > 0 else -np.inf
    if n >= 2:
        kappa_minus = kappa - 1.0
        slots[10][s] = (
            -0.5 * D * _LOG_PI
            + 0.5 * D * math.log(kappa_minus / (kappa_minus + 1.0))
            + gamma_ratio(n - 1, prior, D)
        )
    else:
        slots[10][s] = 0.0  # unused: a singleton is never scored without itself


@njit(**LEAF)
def empty_slot(s, slots, prior):
    """Make slot ``s`` an empty cluster (``W* = beta W``)."""
    counts, sums, chol = slots[0], slots[1], slots[3]
    chol0 = prior[3]
    D = sums.shape[1]
    counts[s] = 0
    for d in range(D):
        sums[s, d] = 0.0
        for e in range(D):
            chol[s, d, e] = chol0[d, e]
    refresh_slot(s, slots, prior)


@njit(**LEAF)
def add_row(x, s, slots, prior, work):
    """Add row ``x`` to slot ``s`` (rank-one update of its factor)."""
    counts, sums, means, chol = slots[0], slots[1], slots[2], slots[3]
    rho = prior[1]
    D = x.shape[0]
    kappa = rho + counts[s]
    for d in range(D):
        work[d] = x[d] - means[s, d]
    chol_update(chol[s], work, kappa / (kappa + 1.0))
    counts[s] += 1
    for d in range(D):
        sums[s, d] += x[d]
    refresh_slot(s, slots, prior)


@njit(**LEAF)
def removal_ratio(x, s, slots, prior, work):
    """``|W*_{n-1}| / |W*_n|`` for member ``x`` of slot ``s`` (determinant lemma)."""
    counts = slots[0]
    rho = prior[1]
    q = mahalanobis2(x, s, slots, work)
    kappa_minus = rho + counts[s] - 1.0
    return 1.0 - (kappa_minus + 1.0) / kappa_minus * q


@njit(**LEAF)
def remove_row(x, s, slots, prior, work):
    """Remove member ``x`` from slot ``s`` (rank-one downdate), ``counts[s] >= 2``.

    Returns False, leaving the slot unchanged, when the downdate would be inaccurate
    (``removal_ratio < RATIO_FLOOR``); the caller then recomputes the slot from its rows.
    """
    counts, sums, means, chol = slots[0], slots[1], slots[2], slots[3]
    rho = prior[1]
    D = x.shape[0]
    if removal_ratio(x, s, slots, prior, work) < RATIO_FLOOR:
        return False
    kappa_minus = rho + counts[s] - 1.0
    # e = x - xi*_n = kappa'/(kappa'+1) (x - xi*_{n-1}); W*_{n-1} = W*_n - (kappa'+1)/kappa' e e^T
    for d in range(D):
        work[d] = x[d] - means[s, d]
    if not chol_downdate(chol[s], work[:D], (kappa_minus + 1.0) / kappa_minus):
        return False  # pragma: no cover - excluded by the ratio check
    counts[s] -= 1
    for d in range(D):
        sums[s, d] -= x[d]
    refresh_slot(s, slots, prior)
    return True


@njit(**LEAF)
def mahalanobis2(x, s, slots, work):
    """``|L_s^-1 (x - xi*_s)|^2`` by forward substitution with the slot's cached inverse
    diagonal (``work`` holds the solution)."""
    means, chol, inv_diag = slots[2], slots[3], slots[6]
    D = x.shape[0]
    total = 0.0
    for a in range(D):
        acc = x[a] - means[s, a]
        for b in range(a):
            acc -= chol[s, a, b] * work[b]
        z = acc * inv_diag[s, a]
        work[a] = z
        total += z * z
    return total


@njit(**LEAF)
def log_predictive_slot(x, s, slots, prior, work):
    """``log p(x | rows of slot s)``: the Student-t of eq. 3.65 from the slot's factor."""
    r = mahalanobis2(x, s, slots, work)
    return slots[5][s] + slots[7][s] * math.log1p(slots[8][s] * r)


@njit(**LEAF)
def log_predictive_without(x, s, ratio, slots, prior):
    """``log p(x | other rows of slot s)`` for a member ``x`` of a slot with ``n >= 2`` rows,
    given ``ratio = removal_ratio(x, s, ...)``: ``log p(X_n) - log p(X_{n-1})``."""
    # 1/2 nu' log|W*_{n-1}| - 1/2 (nu' + 1) log|W*_n| = 1/2 nu' log(ratio) - 1/2 log|W*_n|
    nu_minus = prior[2] + slots[0][s] - 1.0
    return slots[10][s] + 0.5 * nu_minus * math.log(ratio) - 0.5 * slots[4][s]


@njit(**LEAF)
def log_predictive_prior(x, prior, log_const0, work):
    """``log p(x)`` under ``G_0`` (eq. 3.64b): the Student-t with no rows."""
    location, rho, beta, chol0 = prior[0], prior[1], prior[2], prior[3]
    D = x.shape[0]
    e = work[D:]
    for d in range(D):
        e[d] = x[d] - location[d]
    r = forward_norm2(chol0, e, work[:D])
    return log_const0 - 0.5 * (beta + 1.0) * math.log1p(rho / (rho + 1.0) * r)


@njit(**LEAF)
def log_marginal_slot(n, logdet, prior, D):
    """``log p(X_k)`` of a cluster with ``n`` rows and ``log|W*| = logdet`` (sec. 3.3.2)."""
    rho, beta, logdet0 = prior[1], prior[2], prior[4]
    if n == 0:
        return 0.0
    return (
        -0.5 * n * D * _LOG_PI
        + 0.5 * D * (math.log(rho) - math.log(rho + n))
        + log_mvgamma(0.5 * (beta + n), D)
        - log_mvgamma(0.5 * beta, D)
        + 0.5 * beta * logdet0
        - 0.5 * (beta + n) * logdet
    )


@njit(cache=True)
def _set_slot_from_scatter(s, n, total, scatter, slots, prior):
    """Slot ``s`` from ``n``, ``sum x`` and the centred scatter ``C`` (fresh Cholesky)."""
    counts, sums, chol = slots[0], slots[1], slots[3]
    location, rho, chol0 = prior[0], prior[1], prior[3]
    D = total.shape[0]
    counts[s] = n
    W = chol0 @ chol0.T
    if n > 0:
        kappa = rho + n
        for d in range(D):
            sums[s, d] = total[d]
        for a in range(D):
            da = total[a] / n - location[a]
            for b in range(D):
                db = total[b] / n - location[b]
                W[a, b] += scatter[a, b] + rho * n / kappa * da * db
    else:
        for d in range(D):
            sums[s, d] = 0.0
    for a in range(D):
        for b in range(a):
            avg = 0.5 * (W[a, b] + W[b, a])
            W[a, b] = avg
            W[b, a] = avg
    L = np.linalg.cholesky(W)
    for a in range(D):
        for b in range(D):
            chol[s, a, b] = L[a, b] if b <= a else 0.0
    refresh_slot(s, slots, prior)


@njit(cache=True)
def rebuild_slot(X, labels, s, exclude, slots, prior):
    """Recompute slot ``s`` from the rows ``r != exclude`` with ``labels[r] == s``."""
    N, D = X.shape
    n = 0
    total = np.zeros(D)
    for r in range(N):
        if labels[r] == s and r != exclude:
            n += 1
            for d in range(D):
                total[d] += X[r, d]
    scatter = np.zeros((D, D))
    if n > 0:
        mean = total / n
        for r in range(N):
            if labels[r] == s and r != exclude:
                for a in range(D):
                    da = X[r, a] - mean[a]
                    for b in range(a + 1):
                        scatter[a, b] += da * (X[r, b] - mean[b])
        for a in range(D):
            for b in range(a):
                scatter[b, a] = scatter[a, b]
    _set_slot_from_scatter(s, n, total, scatter, slots, prior)


@njit(cache=True)
def rebuild_statistics(X, labels, n_slots, slots, prior):
    """Recompute every slot ``0 .. n_slots - 1`` from the rows (two passes, ``O(N D^2)``)."""
    N, D = X.shape
    ns = np.zeros(n_slots, dtype=np.int64)
    totals = np.zeros((n_slots, D))
    for r in range(N):
        s = labels[r]
        ns[s] += 1
        for d in range(D):
            totals[s, d] += X[r, d]
    scatter = np.zeros((n_slots, D, D))
    for r in range(N):
        s = labels[r]
        for a in range(D):
            da = X[r, a] - totals[s, a] / ns[s]
            for b in range(a + 1):
                scatter[s, a, b] += da * (X[r, b] - totals[s, b] / ns[s])
    for s in range(n_slots):
        for a in range(D):
            for b in range(a):
                scatter[s, b, a] = scatter[s, a, b]
        _set_slot_from_scatter(s, ns[s], totals[s], scatter[s], slots, prior)


@njit(**LEAF)
def copy_slot(src, s, dst, t):
    """Copy slot ``s`` of the statistics ``src`` into slot ``t`` of ``dst``."""
    D = src[1].shape[1]
    dst[0][t] = src[0][s]
    dst[4][t] = src[4][s]
    dst[5][t] = src[5][s]
    dst[7][t] = src[7][s]
    dst[8][t] = src[8][s]
    dst[9][t] = src[9][s]
    dst[10][t] = src[10][s]
    for a in range(D):
        dst[1][t, a] = src[1][s, a]
        dst[2][t, a] = src[2][s, a]
        dst[6][t, a] = src[6][s, a]
        for b in range(D):
            dst[3][t, a, b] = src[3][s, a, b]


def allocate_slots(capacity, n_features):
    """Zeroed statistics for ``capacity`` slots (every slot free)."""
    return (
        np.zeros(capacity, dtype=np.int64),
        np.zeros((capacity, n_features)),
        np.zeros((capacity, n_features)),
        np.zeros((capacity, n_features, n_features)),
        np.zeros(capacity),
        np.zeros(capacity),
        np.zeros((capacity, n_features)),
        np.zeros(capacity),
        np.zeros(capacity),
        np.zeros(capacity),
        np.zeros(capacity),
    )


def grow_slots(slots, capacity):
    """The statistics with room for ``capacity`` slots (existing slots copied)."""
    new = allocate_slots(capacity, slots[1].shape[1])
    for old, fresh in zip(slots, new, strict=True):
        fresh[: old.shape[0]] = old
    return new


def prior_log_constant(prior, n_features):
    """``log_const`` of an empty cluster (the prior predictive's constant)."""
    return float(predictive_constant(0, prior[4], prior, n_features))


@njit(cache=True)
def bartlett_factor(dof, rng, A):
    """Bartlett's lower-triangular ``A`` of a ``Wishart(dof, .)`` draw, into ``A`` (D, D):
    ``A_dd^2 ~ chi^2(dof - d)`` for ``d = 0 .. D-1``, then ``A_de ~ N(0, 1)`` below the
    diagonal row by row (the stream of every Wishart draw of the package)."""
    D = A.shape[0]
    for d in range(D):
        for e in range(D):
            A[d, e] = 0.0
        # chi^2(k) = 2 Gamma(k / 2), the very draw NumPy's chisquare makes (the same
        # numbers), without compiling numba's chisquare on top of standard_gamma.
        A[d, d] = math.sqrt(2.0 * rng.standard_gamma((dof - d) / 2.0))
    for d in range(1, D):
        for e in range(d):
            A[d, e] = rng.standard_normal()


@njit(cache=True)
def gram(B, out):
    """``out = B B^T`` (symmetric, each entry summed over ``k`` in order)."""
    D = B.shape[0]
    for a in range(D):
        for b in range(a + 1):
            acc = 0.0
            for k in range(D):
                acc += B[a, k] * B[b, k]
            out[a, b] = acc
            out[b, a] = acc


@njit(cache=True)
def wishart_bartlett(nu, L, rng, S_out):
    """Draw ``S ~ Wishart(nu, V)`` into ``S_out`` given the lower factor ``L L^T = V^-1``.

    With Bartlett's lower-triangular ``A`` (``A_dd^2 ~ chi2(nu - d)``, standard normals
    below the diagonal), ``S = (L^-T A)(L^-T A)^T``. Returns ``A``. Plain loops (no LAPACK
    call), so tiny matrices cost little.
    """
    D = L.shape[0]
    A = np.empty((D, D))
    bartlett_factor(nu, rng, A)
    # B = L^-T A: back substitution with the upper-triangular L^T, column by column.
    B = np.zeros((D, D))
    for c in range(D):
        for a in range(D - 1, -1, -1):
            acc = A[a, c]
            for k in range(a + 1, D):
                acc -= L[k, a] * B[k, c]
            B[a, c] = acc / L[a, a]
    gram(B, S_out)
    return A


@njit(cache=True)
def draw_normal_wishart(n, mean, L, rho, beta, rng, mu_out, S_out):
    """A posterior draw of a component given its statistics (eqs. 3.57-3.59, conjugacy).

    ``S ~ Wishart(beta + n, W*^-1)`` and ``mu | S ~ N(xi*, ((rho + n) S)^-1)`` given
    ``L L^T = W*``: with Bartlett's ``A`` (:func:`wishart_bartlett`),
    ``S^-1 = (L A^-T)(L A^-T)^T``, so ``mu = xi* + L A^-T z / sqrt(rho + n)``.
    """
    D = mean.shape[0]
    A = wishart_bartlett(beta + n, L, rng, S_out)
    # y = A^-T z: back substitution with the upper-triangular A^T.
    y = np.empty(D)
    for a in range(D):
        y[a] = rng.standard_normal()
    for a in range(D - 1, -1, -1):
        acc = y[a]
        for k in range(a + 1, D):
            acc -= A[k, a] * y[k]
        y[a] = acc / A[a, a]
    scale = 1.0 / math.sqrt(rho + n)
    for a in range(D):
        acc = 0.0
        for k in range(a + 1):
            acc += L[a, k] * y[k]
        mu_out[a] = mean[a] + scale * acc


@njit(cache=True)
def draw_normal_wishart_many(n_draws, mean, L, rho, beta, rng, mu_out, S_out):
    """``n_draws`` independent draws of :func:`draw_normal_wishart` with the same
    statistics, into ``mu_out[k]`` and ``S_out[k]`` (the same random stream as calling it
    ``n_draws`` times)."""
    for k in range(n_draws):
        draw_normal_wishart(0.0, mean, L, rho, beta, rng, mu_out[k], S_out[k])


@njit(cache=True)
def cholesky_lower(A):
    """Lower Cholesky factor of a small symmetric matrix by plain loops (reads the lower
    triangle). Returns ``(L, ok)``; ``ok`` is False if ``A`` is not positive definite."""
    D = A.shape[0]
    L = np.zeros((D, D))
    for j in range(D):
        acc = A[j, j]
        for k in range(j):
            acc -= L[j, k] * L[j, k]
        if not acc > 0.0:
            return L, False
        L[j, j] = math.sqrt(acc)
        for i in range(j + 1, D):
            acc = A[i, j]
            for k in range(j):
                acc -= L[i, k] * L[j, k]
            L[i, j] = acc / L[j, j]
    return L, True


@njit(cache=True, inline="always")
def solve_lower_in_place(L, b, n):
    """``b <- L^{-1} b`` for the lower-triangular leading n x n block of ``L``."""
    for a in range(n):
        s = b[a]
        for c in range(a):
            s -= L[a, c] * b[c]
        b[a] = s / L[a, a]


@njit(cache=True, inline="always")
def solve_lower_transpose_in_place(L, b, n):
    """``b <- L^{-T} b`` for the lower-triangular leading n x n block of ``L``."""
    for a in range(n - 1, -1, -1):
        s = b[a]
        for c in range(a + 1, n):
            s -= L[c, a] * b[c]
        b[a] = s / L[a, a]


@njit(cache=True)
def solve_lower(L, b):
    """``L^-1 b`` for lower-triangular ``L``."""
    x = b.copy()
    solve_lower_in_place(L, x, L.shape[0])
    return x


@njit(cache=True)
def solve_lower_transpose(L, b):
    """``L^-T b`` for lower-triangular ``L``."""
    x = b.copy()
    solve_lower_transpose_in_place(L, x, L.shape[0])
    return x
