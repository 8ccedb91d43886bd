"""The real-weighted latent feature model (Görür 2007, sec. 4.4, eq. 4.62).

``x_n ~ N((z_n ⊙ y_n) A, sigma_x^2 I)``: the binary ``z_n`` (IBP prior) says which
features row ``n`` has and ``y_nk ~ N(0, 1)`` how much each contributes; ``a_kd ~ N(0,
sigma_a^2)`` as in the linear-Gaussian model (Griffiths and Ghahramani's sparse real-valued
features). ``W = Z ⊙ Y`` is the real design matrix; only its entries with ``z_nk = 1`` are
variables of the chain (the others are integrated out under their prior and held at 0).

Given ``W`` the model is the linear-Gaussian one with ``W`` in place of ``Z``, so
:class:`RealWeightedGaussian` reuses :class:`~.linear_gaussian.LinearGaussianFeatures`
with the design argument ``W``: ``row_log_likelihood(X, observed, W, A, params)``,
``sample_features`` (``A | W``, exact), ``sample_parameters`` (``sigma_x``, ``sigma_a``
from their Gamma conditionals given ``W A`` and ``A``), ``predict`` (``W A``). What is new
is the weights: their prior, their conditional given ``(z_n, A)`` and the likelihood of a
row with its weights integrated out, which ``transform`` of new rows needs.

Missing entries (``observed == 0``) are masked out of every term. The sampler is
:class:`~sklearn_ibp.solvers.ibp_explicit.semi_ordered_slice.SemiOrderedSliceIBP`, which detects
this likelihood by its ``weights`` attribute and keeps ``W`` in ``state.stats["Y"]``.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from ._real_weighted_kernels import draw_row_weights
from .linear_gaussian import LinearGaussianFeatures

__all__ = ["RealWeightedGaussian"]

_LOG_2PI = np.log(2.0 * np.pi)


def _rows_by_pattern(Z):
    """``(rows, pattern)`` for every distinct row of ``Z`` (a binary feature matrix or an
    observed mask): the rows that share it and it as a (1, n_columns) array (rows sharing
    a feature pattern share its Woodbury factors, rows sharing an observed pattern the
    columns they are read on)."""
    unique, inverse = np.unique(Z, axis=0, return_inverse=True)
    inverse = np.ravel(inverse)
    for u in range(unique.shape[0]):
        yield np.flatnonzero(inverse == u), unique[u : u + 1]


def _mask(X, observed):
    X = np.asarray(X, dtype=np.float64)
    mask = np.asarray(observed).astype(bool)
    if mask.shape != X.shape:
        raise ValueError(f"observed must have the shape of X {X.shape}, got {mask.shape}.")
    return X, mask


class RealWeightedGaussian(LinearGaussianFeatures):
    """Linear-Gaussian features with Gaussian weights: ``x_n ~ N((z_n ⊙ y_n) A,
    sigma_x^2 I)``, ``y_nk ~ N(0, 1)``, ``a_kd ~ N(0, sigma_a^2)`` (Görür 2007, eq. 4.62).

    ``params = {"sigma_x": float, "sigma_a": float}`` with Gamma(1, 1) priors on the
    precisions, as :class:`~.linear_gaussian.LinearGaussianFeatures`. Every method that
    takes a design matrix takes the real ``W = Z ⊙ Y`` (n_samples, n_features) in place of
    ``Z``: :meth:`row_log_likelihood`, :meth:`log_likelihood`, :meth:`sample_features`,
    :meth:`sample_parameters`, :meth:`predict`, :meth:`sample_data`.

    The explicit-feature samplers see it through :attr:`weights` (``"gaussian"``); only
    :class:`~sklearn_ibp.solvers.ibp_explicit.semi_ordered_slice.SemiOrderedSliceIBP` serves it.
    """

    name = "gaussian_weights"
    #: The weight distribution (the samplers test ``getattr(likelihood, "weights", None)``).
    weights = "gaussian"

    # -- the weights ----------------------------------------------------------------------
    def log_prior_weights(self, W, Z) -> float:
        """``sum_{z_nk = 1} log N(w_nk; 0, 1)``: the prior of the weights that are
        variables (those of rows having the feature)."""
        Z = np.asarray(Z) != 0
        W = np.asarray(W, dtype=np.float64)
        w = W[Z]
        return float(-0.5 * (w.size * _LOG_2PI + np.sum(w**2)))

    def sample_prior_weights(self, Z, rng) -> np.ndarray:
        """``W = Z ⊙ Y`` with ``y_nk ~ N(0, 1)``, shape of ``Z``."""
        Z = np.asarray(Z) != 0
        return np.where(Z, rng.standard_normal(Z.shape), 0.0)

    def sample_weights(self, X, observed, Z, A, params, rng) -> np.ndarray:
        """An exact draw of ``W`` from ``p(W | X, Z, A)``: each row's weights of its
        features ``S`` are ``N(P^-1 h, P^-1)`` with ``P = I + A_S A_S^T / sigma_x^2`` and
        ``h = A_S x_n / sigma_x^2`` over the observed entries of the row; 0 where
        ``z_nk = 0``. Inputs are not modified."""
        X, mask = _mask(X, observed)
        Z = np.ascontiguousarray(np.asarray(Z) != 0, dtype=np.int8)
        A = np.ascontiguousarray(A, dtype=np.float64)
        K = Z.shape[1]
        W = np.zeros(Z.shape)
        if K:
            noise = self.noise_array(params, X.shape[1])
            draw_row_weights(np.ascontiguousarray(np.where(mask, X, 0.0)),
                             mask.astype(np.uint8), Z, A, W, K, noise, rng)
        return W

    def weight_posterior(self, X, observed, Z, A, params):
        """Mean ``E[W | X, Z, A]`` (n_samples, n_features; 0 where ``z_nk = 0``) and each
        row's covariance of its weights (n_samples, n_features, n_features; zero rows and
        columns for the features the row does not have)."""
        X, mask = _mask(X, observed)
        Z = np.asarray(Z) != 0
        A = np.asarray(A, dtype=np.float64)
        N, K = Z.shape
        var = float(params["sigma_x"]) ** 2
        mean = np.zeros((N, K))
        cov = np.zeros((N, K, K))
        for n in range(N):
            S = np.flatnonzero(Z[n])
            if S.size == 0:
                continue
            As = A[S][:, mask[n]]
            precision = np.eye(S.size) + As @ As.T / var
            c = np.linalg.inv(precision)
            mean[n, S] = c @ (As @ X[n, mask[n]]) / var
            cov[n][np.ix_(S, S)] = c
        return mean, cov

    def pattern_log_likelihood(self, X, observed, patterns, A, params) -> np.ndarray:
        """``log p(x_n,obs | z, A)`` with the weights integrated out, for every row and
        every binary pattern ``z`` (rows of ``patterns``): ``x_n,obs ~ N(0, sigma_x^2 I +
        A_z^T A_z)`` over the observed entries (``A_z`` the rows of ``A`` the pattern
        selects). Shape (n_rows, n_patterns). This is what ``transform`` (``E[z | x]``
        with ``A`` held fixed) and ``score_samples`` of new rows need.

        Computed with the determinant lemma and Woodbury: ``log det = n_obs log sigma_x^2
        + log det M`` and ``quad = |x|^2 / sigma_x^2 - h^T M^-1 h`` with ``M = I +
        A_z A_z^T / sigma_x^2`` and ``h = A_z x / sigma_x^2``. Rows sharing an observed
        pattern share ``M``.
        """
        X, mask = _mask(X, observed)
        patterns = np.asarray(patterns) != 0
        A = np.asarray(A, dtype=np.float64)
        var = float(params["sigma_x"]) ** 2
        N = X.shape[0]
        out = np.empty((N, patterns.shape[0]))
        X0 = np.where(mask, X, 0.0)
        for rows, seen in _rows_by_pattern(mask):
            cols = np.flatnonzero(seen[0])
            Xg = X0[np.ix_(rows, cols)]
            n_obs = cols.size
            sq = np.sum(Xg**2, axis=1) / var
            for p in range(patterns.shape[0]):
                S = np.flatnonzero(patterns[p])
                As = A[np.ix_(S, cols)]
                log_det = n_obs * np.log(var)
                quad = sq
                if S.size:
                    M = np.eye(S.size) + As @ As.T / var
                    chol = np.linalg.cholesky(M)
                    log_det = log_det + 2.0 * np.sum(np.log(np.diag(chol)))
                    h = Xg @ As.T / var  # (rows, |S|)
                    u = np.linalg.solve(chol, h.T)
                    quad = sq - np.sum(u**2, axis=0)
                out[rows, p] = -0.5 * (n_obs * _LOG_2PI + log_det + quad)
        return out

    def expected_weights(self, X, observed, patterns, probabilities, A, params) -> np.ndarray:
        """``E[w_n | x_n,obs, A] = sum_z p(z | x_n) E[w_n | x_n, z, A]`` for every row: the
        posterior mean of a row's weights, mixed over the binary ``patterns`` with the
        row's pattern probabilities ``probabilities`` (n_rows, n_patterns), for example
        the normalised exponentials of :meth:`pattern_log_likelihood` plus a prior.

        Given a pattern selecting features ``S``, ``w_S | x ~ N(M^-1 h, M^-1)`` with
        ``M = I + A_S A_S^T / sigma_x^2`` and ``h = A_S x / sigma_x^2`` over the observed
        entries (the weights of the other features are 0). Shape (n_rows, n_features).
        """
        X, mask = _mask(X, observed)
        patterns = np.asarray(patterns) != 0
        probabilities = np.asarray(probabilities, dtype=np.float64)
        A = np.asarray(A, dtype=np.float64)
        var = float(params["sigma_x"]) ** 2
        out = np.zeros((X.shape[0], patterns.shape[1]))
        X0 = np.where(mask, X, 0.0)
        for rows, seen in _rows_by_pattern(mask):
            cols = np.flatnonzero(seen[0])
            Xg = X0[np.ix_(rows, cols)]
            for p in range(patterns.shape[0]):
                S = np.flatnonzero(patterns[p])
                if S.size == 0:
                    continue
                As = A[np.ix_(S, cols)]
                M = np.eye(S.size) + As @ As.T / var
                means = np.linalg.solve(M, As @ Xg.T / var).T  # (rows, |S|)
                out[np.ix_(rows, S)] += probabilities[rows, p][:, None] * means
        return out

    # -- new rows, features held fixed (transform of the estimators) --------------------
    def row_pattern_log_likelihood(self, X, observed, Z, A, params) -> np.ndarray:
        """``log p(x_n,obs | z_n, A)`` of each row under its own pattern (row of ``Z``),
        weights integrated out: :meth:`pattern_log_likelihood` once per distinct
        pattern. Shape (n_rows,)."""
        out = np.empty(X.shape[0])
        for rows, pattern in _rows_by_pattern(Z):
            out[rows] = self.pattern_log_likelihood(
                X[rows], observed[rows], pattern, A, params)[:, 0]
        return out

    def mean_field(self, X, observed, log_odds, A, params, n_steps=5) -> np.ndarray:
        """``q(z_nk = 1)`` of new rows with many features, features held at ``A``.

        Feature by feature for all rows at once, ``q_k`` is the conditional probability
        of ``z_k = 1`` given the other features at their current mode (the weights
        integrated out), which is then updated; ``n_steps`` passes.
        """
        q = expit(log_odds)
        mode = q > 0.5
        for _ in range(n_steps):
            for k in range(A.shape[0]):
                on, off = mode.copy(), mode.copy()
                on[:, k], off[:, k] = True, False
                gain = (self.row_pattern_log_likelihood(X, observed, on, A, params)
                        - self.row_pattern_log_likelihood(X, observed, off, A, params))
                q[:, k] = expit(log_odds[:, k] + gain)
                mode[:, k] = q[:, k] > 0.5
        return q

    def expected_weights_given_patterns(self, X, observed, Z, A, params) -> np.ndarray:
        """``E[w_n | x_n,obs, z_n, A]`` of each row under its own pattern (row of ``Z``):
        :meth:`expected_weights` once per distinct pattern. Shape (n_rows, n_features)."""
        out = np.empty((X.shape[0], A.shape[0]))
        for rows, pattern in _rows_by_pattern(Z):
            out[rows] = self.expected_weights(X[rows], observed[rows], pattern,
                                              np.ones((rows.size, 1)), A, params)
        return out

    def draw_weights(self, X, observed, Z, A, params, rng) -> np.ndarray:
        """One draw of each row's weights ``z_n * y_n`` from their Gaussian conditional
        given the row and its pattern ``z_n`` (row of ``Z``), features held at ``A``;
        ``rng`` is a NumPy ``Generator``. Shape (n_rows, n_features)."""
        mean, cov = self.weight_posterior(X, observed, Z, A, params)
        W = np.zeros(Z.shape)
        for n in range(Z.shape[0]):
            S = np.flatnonzero(Z[n])
            if S.size:
                W[n, S] = rng.multivariate_normal(mean[n, S], cov[n][np.ix_(S, S)])
        return W
