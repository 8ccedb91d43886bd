"""Exact enumeration of the IBP posterior over left-ordered feature matrices.

For ``N`` rows a left-ordered class ``[Z]`` is a multiset of non-zero column histories
(integers in ``1 .. 2^N - 1``, the first row the most significant bit). The posterior of a
class is ``P([Z]) p(X | Z)`` with eq. 2.1 (or C.1) and eq. A.2; enumerating every multiset
with at most ``max_features`` columns gives it exactly, up to the mass of larger ``K``.
"""

from itertools import combinations_with_replacement

import numpy as np
from scipy.special import betaln, gammaln, logsumexp

from sklearn_ibp.priors.ibp import harmonic_rate


def history_key(Z):
    """The class of ``Z``: its non-zero column histories, sorted decreasingly."""
    Z = np.asarray(Z) != 0
    N = Z.shape[0]
    weights = 1 << np.arange(N - 1, -1, -1)
    hist = (Z.T.astype(np.int64) @ weights).tolist()
    return tuple(sorted((h for h in hist if h), reverse=True))


def enumerate_posterior(X, alpha, sigma_x, sigma_a, max_features, beta=1.0):
    """Return ``{class key: posterior probability}``, the mass at ``K = max_features`` and
    the log of the unnormalised total (``log p(X)`` up to the mass beyond the truncation)."""
    X = np.asarray(X, dtype=float)
    N, D = X.shape
    n_hist = 2**N - 1
    bits = ((np.arange(1, n_hist + 1)[:, None] >> np.arange(N - 1, -1, -1)) & 1).astype(float)
    keys, logps = [], []
    ratio = sigma_x**2 / sigma_a**2
    sq_norm = float(np.sum(X**2))
    const = -0.5 * N * D * np.log(2 * np.pi) - alpha * harmonic_rate(N, beta)
    mass_by_k = []
    for K in range(max_features + 1):
        combo_list = list(combinations_with_replacement(range(n_hist), K))
        combos = np.array(combo_list, dtype=np.int64).reshape(len(combo_list), K)
        Z = bits[combos].transpose(0, 2, 1)  # (n_classes, N, K)
        counts = Z.sum(axis=1)
        log_prior = K * np.log(alpha * beta) + const
        log_prior = log_prior + betaln(counts, N - counts + beta).sum(axis=1)
        # - sum_h log K_h!: multiplicities of equal histories in the sorted combination
        mult = np.zeros(len(combos))
        for h in range(n_hist):
            mult += gammaln((combos == h).sum(axis=1) + 1.0)
        log_prior = log_prior - mult
        M = np.einsum("cnk,cnj->ckj", Z, Z) + ratio * np.eye(K)
        cross = np.einsum("cnk,nd->ckd", Z, X)
        if K:
            _, logdet = np.linalg.slogdet(M)
            quad = np.einsum("ckd,ckd->c", cross, np.linalg.solve(M, cross))
        else:
            logdet = np.zeros(len(combos))
            quad = np.zeros(len(combos))
        log_lik = (
            -(N - K) * D * np.log(sigma_x) - K * D * np.log(sigma_a)
            - 0.5 * D * logdet - 0.5 * (sq_norm - quad) / sigma_x**2
        )
        log_post = log_prior + log_lik
        hists = combos + 1
        for c in range(len(combos)):
            keys.append(tuple(sorted(hists[c].tolist(), reverse=True)))
        logps.append(log_post)
        mass_by_k.append(logsumexp(log_post))
    logps = np.concatenate(logps)
    log_z = logsumexp(logps)
    probs = np.exp(logps - log_z)
    top_mass = float(np.exp(mass_by_k[-1] - log_z))
    return dict(zip(keys, probs, strict=True)), top_mass, float(log_z)


def enumerate_prior(N, alpha, max_features, beta=1.0):
    """``{class key: P([Z])}`` over classes with at most ``max_features`` columns, and the
    total unnormalised prior mass they hold."""
    probs, _, log_total = enumerate_posterior(np.zeros((N, 0)), alpha, 1.0, 1.0, max_features, beta)
    return probs, float(np.exp(log_total))
