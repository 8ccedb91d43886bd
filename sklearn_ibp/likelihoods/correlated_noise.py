"""Features plus correlated Gaussian noise: the imputer's predictive model.

The latent feature models give every column the same independent noise,
``x = z A + e`` with ``e ~ N(0, sigma_x^2 I)``. For imputation the residual ``e`` of real
data is far from isotropic: the columns stay correlated after the features are taken
out (linear relations within a cluster, a composition summing to a constant). Here the
residual gets a full covariance ``Sigma``,

.. math::

    x_n = z_n A + e_n, \\qquad e_n \\sim \\mathcal N(0, \\Sigma),

with ``Z`` and ``A`` held at one posterior sample of the feature model and ``Sigma``
estimated from the observed residuals by expectation-maximisation for a Gaussian with
missing entries (Little and Rubin 2002, sec. 11.2). The predictive mean of the missing
entries ``m`` of a row given its observed entries ``o`` is then

.. math::

    E[x_m \\mid x_o] = E[z \\mid x_o] A_m
        + \\Sigma_{mo} \\Sigma_{oo}^{-1} (x_o - E[z \\mid x_o] A_o),

the Gaussian conditional mean (the linear regression of the missing entries on the
observed ones) around the features' prediction, where ``E[z | x_o]`` is the posterior of
the row's features under the correlated noise (enumerated over the ``2^K`` patterns).
With no features this is the conditional mean of a multivariate normal, the model
behind regression imputation.

Everything is written with the precision ``P = Sigma^-1`` so that rows are handled in
batches of rows with the same number ``c`` of missing entries, through ``c x c`` systems:
``Sigma_mo Sigma_oo^-1 = -P_mm^-1 P_mo``, ``Sigma_mm - Sigma_mo Sigma_oo^-1 Sigma_om =
P_mm^-1`` and ``v_o^T Sigma_oo^-1 v_o = v^T P v - (P_m. v)^T P_mm^-1 (P_m. v)`` for any
``v`` with ``v_m = 0``.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, logsumexp

__all__ = ["draw_missing", "missing_count_groups", "predict_missing",
           "residual_covariance"]

#: Relative ridge added to the diagonal of every covariance (a fraction of its mean
#: diagonal), so that a constant column or an exact linear relation (a composition)
#: keeps ``Sigma_oo`` invertible.
RIDGE = 1e-6


def missing_count_groups(missing):
    """Group rows by their number of missing entries.

    Parameters
    ----------
    missing : ndarray of bool, shape (n_rows, n_columns)

    Returns
    -------
    list of (rows, missing_columns)
        For every count ``c`` that occurs, the rows with ``c`` missing entries and their
        missing columns as an array of shape (n_rows_c, c), in increasing order.
    """
    counts = missing.sum(axis=1)
    groups = []
    for c in np.unique(counts):
        rows = np.flatnonzero(counts == c)
        columns = np.nonzero(missing[rows])[1].reshape(rows.size, int(c))
        groups.append((rows, columns))
    return groups


def _with_ridge(cov):
    scale = float(np.mean(np.diag(cov)))
    if not np.isfinite(scale) or scale <= 0.0:
        scale = 1.0
    return cov + RIDGE * scale * np.eye(cov.shape[0])


def _missing_blocks(precision, columns):
    """``P_m.`` (n, c, D) and ``P_mm^-1`` (n, c, c) of every row of a group."""
    rows_of_p = precision[columns]
    inner = np.take_along_axis(rows_of_p, columns[:, None, :], axis=2)
    return rows_of_p, np.linalg.inv(inner)


def residual_covariance(residuals, missing, n_iter=10, groups=None, start=None):
    """EM estimate of the covariance of zero-mean Gaussian rows with missing entries.

    Parameters
    ----------
    residuals : ndarray of shape (n_rows, n_columns)
        Rows of residuals ``x - z A``; entries where ``missing`` is True are ignored.
    missing : ndarray of bool, shape (n_rows, n_columns)
        Missing entries; rows with no observed entry are ignored.
    n_iter : int, default=10
        EM iterations.
    groups : list or None
        ``missing_count_groups(missing)``, when the caller has it already.
    start : ndarray of shape (n_columns, n_columns) or None
        Where EM starts; None starts from the diagonal of the observed variances.

    Returns
    -------
    ndarray of shape (n_columns, n_columns)
        The covariance (with a relative ridge of ``RIDGE`` on the diagonal).
    """
    R = np.where(missing, 0.0, residuals)
    D = R.shape[1]
    if groups is None:
        groups = missing_count_groups(missing)
    groups = [(rows, cols) for rows, cols in groups if cols.shape[1] < D]
    n_rows = sum(rows.size for rows, _ in groups)
    counts = np.maximum((~missing).sum(axis=0), 1)
    cov = np.diag((R**2).sum(axis=0) / counts) if start is None else start
    if n_rows == 0:
        return _with_ridge(cov)
    for _ in range(n_iter):
        precision = np.linalg.inv(_with_ridge(cov))
        stat = np.zeros((D, D))
        for rows, cols in groups:
            filled = R[rows]
            if cols.shape[1]:
                rows_of_p, inverse = _missing_blocks(precision, cols)
                # E[r_m | r_o] = -P_mm^-1 P_mo r_o  (r_m is 0 in ``filled``).
                cond = -(inverse @ (rows_of_p @ filled[:, :, None]))[:, :, 0]
                filled = filled.copy()
                np.put_along_axis(filled, cols, cond, axis=1)
                np.add.at(stat, (cols[:, :, None], cols[:, None, :]), inverse)
            stat += filled.T @ filled
        cov = stat / n_rows
        cov = 0.5 * (cov + cov.T)
    return _with_ridge(cov)


def predict_missing(Xc, missing, components, log_odds, cov, probabilities=None,
                    groups=None, chunk=None):
    """Predictive mean of the missing entries under features plus correlated noise.

    Parameters
    ----------
    Xc : ndarray of shape (n_rows, n_columns)
        Centred rows; entries where ``missing`` is True are ignored.
    missing : ndarray of bool, shape (n_rows, n_columns)
    components : ndarray of shape (n_features, n_columns)
        The features ``A``.
    log_odds : ndarray of shape (n_rows, n_features)
        Prior log odds that each row has each feature.
    cov : ndarray of shape (n_columns, n_columns)
        The residual covariance ``Sigma``.
    probabilities : ndarray of shape (n_rows, n_features) or None
        ``E[z | x_o]`` to use instead of enumerating the ``2^K`` patterns (for many
        features).
    groups : list or None
        ``missing_count_groups(missing)``, when the caller has it already.
    chunk : int or None, default=None
        Rows enumerated at once; None keeps ``chunk * 2^K * K`` to about four million
        floats.

    Returns
    -------
    ndarray of shape (n_rows, n_columns)
        The predictive mean at the missing entries (centred), 0 elsewhere.
    """
    return _fill(Xc, missing, components, log_odds, cov, probabilities, groups, chunk,
                 rng=None)


def draw_missing(Xc, missing, components, log_odds, cov, rng, probabilities=None,
                 groups=None, chunk=None):
    """One draw of the missing entries from their predictive under features plus
    correlated noise (for multiple imputation).

    Each row's features ``z`` are drawn from ``p(z | x_o)`` (enumerated; from
    independent Bernoulli(``probabilities``) when those are given), then its missing
    entries from ``N(z A_m + Sigma_mo Sigma_oo^-1 (x_o - z A_o), Sigma_mm - Sigma_mo
    Sigma_oo^-1 Sigma_om)``. The parameters are those of :func:`predict_missing`, and
    ``rng``, a NumPy ``Generator``; rows are drawn in the order of ``groups``.

    Returns
    -------
    ndarray of shape (n_rows, n_columns)
        The draw at the missing entries (centred), 0 elsewhere.
    """
    return _fill(Xc, missing, components, log_odds, cov, probabilities, groups, chunk,
                 rng=rng)


def _fill(Xc, missing, components, log_odds, cov, probabilities, groups, chunk, rng):
    """The predictive mean (``rng`` None) or one predictive draw of the missing entries."""
    N, D = Xc.shape
    K = components.shape[0]
    X0 = np.where(missing, 0.0, Xc)
    out = np.zeros((N, D))
    if groups is None:
        groups = missing_count_groups(missing)
    precision = np.linalg.inv(cov)
    patterns = None
    if probabilities is None and K:
        patterns = ((np.arange(2**K)[:, None] >> np.arange(K)) & 1).astype(float)
        if chunk is None:
            chunk = max(1, min(256, 4_000_000 // (patterns.size)))
    for rows, cols in groups:
        c = cols.shape[1]
        if c == 0:
            continue
        if c == D:
            # Nothing observed: the prior predictive.
            q = expit(log_odds[rows]) if probabilities is None else probabilities[rows]
            if rng is None:
                out[rows] = q @ components
            else:
                z = (rng.random(q.shape) < q).astype(float)
                noise = rng.standard_normal((rows.size, D)) @ np.linalg.cholesky(cov).T
                out[rows] = z @ components + noise
            continue
        rows_of_p, inverse = _missing_blocks(precision, cols)
        x = X0[rows]
        g = (rows_of_p @ x[:, :, None])[:, :, 0]  # P_m. x (x_m = 0)
        if K == 0:
            q = np.zeros((rows.size, 0))
        elif probabilities is not None:
            q = probabilities[rows]
            if rng is not None:
                q = (rng.random(q.shape) < q).astype(float)
        else:
            q = _feature_posterior(x, ~missing[rows], components, log_odds[rows],
                                   precision, rows_of_p, inverse, g, patterns, chunk, rng)
        # E[x_m | x_o, z] = y_m - P_mm^-1 P_m. (x - y)  with y = z A, both 0 at m.
        y = q @ components
        y_masked = np.where(missing[rows], 0.0, y)
        h = g - (rows_of_p @ y_masked[:, :, None])[:, :, 0]
        pred = np.take_along_axis(y, cols, axis=1) - (inverse @ h[:, :, None])[:, :, 0]
        if rng is not None:
            # Conditional covariance P_mm^-1.
            lower = np.linalg.cholesky(inverse)
            pred += (lower @ rng.standard_normal((rows.size, c, 1)))[:, :, 0]
        block = np.zeros((rows.size, D))
        np.put_along_axis(block, cols, pred, axis=1)
        out[rows] = block
    return out


def _feature_posterior(x, observed, components, log_odds, precision, rows_of_p, inverse,
                       g, patterns, chunk, rng=None):
    """``E[z | x_o]`` of every row of a group, enumerated over ``patterns`` (with
    ``rng``, one draw of ``z`` from ``p(z | x_o)`` instead).

    With ``B`` the features zeroed at the row's missing columns and ``F = B P_.m``,
    ``-2 log N(x_o; z A_o, Sigma_oo) = const - 2 z b + z M z^T`` with
    ``b = B P x - F P_mm^-1 g`` and ``M = B P B^T - F P_mm^-1 F^T``.
    """
    q = np.empty((x.shape[0], components.shape[0]))
    log_off = -np.logaddexp(0.0, log_odds)
    for start in range(0, x.shape[0], chunk):
        sl = slice(start, start + chunk)
        B = components[None, :, :] * observed[sl, None, :]  # (n, K, D)
        BP = B @ precision
        F = B @ rows_of_p[sl].transpose(0, 2, 1)  # B P_.m (P symmetric)
        FH = F @ inverse[sl]
        b = (BP @ x[sl, :, None])[:, :, 0] - (FH @ g[sl, :, None])[:, :, 0]
        M = BP @ B.transpose(0, 2, 1) - FH @ F.transpose(0, 2, 1)
        log_w = (log_odds[sl] @ patterns.T + log_off[sl].sum(axis=1)[:, None]
                 + b @ patterns.T
                 - 0.5 * np.sum((patterns @ M) * patterns, axis=2))
        log_w -= logsumexp(log_w, axis=1, keepdims=True)
        if rng is None:
            q[sl] = np.exp(log_w) @ patterns
        else:
            cdf = np.cumsum(np.exp(log_w), axis=1)
            u = rng.random((cdf.shape[0], 1)) * cdf[:, -1:]
            index = np.minimum((cdf < u).sum(axis=1), patterns.shape[0] - 1)
            q[sl] = patterns[index]
    return q
