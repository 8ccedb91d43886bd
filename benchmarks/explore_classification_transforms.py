"""Candidate outputs of ``IBPFactorAnalysis.transform`` against the classification bars of
issue 20 (an exploration: nothing here is a default).

Run from the repository root (about 4 minutes on a shared two-core machine)::

    python benchmarks/explore_classification_transforms.py

Protocol: the classification section of ``bench_real_data.py`` -- the same five sets,
``StratifiedKFold(n_splits=5, shuffle=True, random_state=0)``, ``StandardScaler`` fitted
on the training rows, then a candidate representation, then
``LogisticRegression(max_iter=2000)``. One model is fitted per fold on the scaled training
rows and every candidate of that model is computed from the same fit. Bars, per set:
output width <= D in every fold, mean accuracy >= that of ``PCA(k)`` (``k`` the fold's
width capped at D, as in ``bench_real_data.py``) and >= raw - 0.5 points.

Models: the default binary model ``IBPFactorAnalysis(random_state=0)`` and the
real-weighted model ``x_n = (z_n * y_n) A + e_n`` (Görür 2007, sec. 4.4;
``weights="gaussian", solver="semi_ordered_slice"``), with sampled and with fixed noise.
Candidates (``P = transform(X)``: ``E[z|x]``, or ``E[z*y|x]`` for the weighted model;
``M = components_``):

- ``P``: today's output.
- ``P M``: the posterior mean of the feature-explained signal, D columns.
- ``PCA(P)``: ``P`` in its first ``min(K, D)`` principal coordinates (fitted on the
  training rows).
- ``P + resid``: the first ``r`` principal coordinates of ``P`` (binary: ``r = ceil(D/2)``)
  or of ``P M`` (weighted: ``r = min(K, D)``) beside the first ``D - r`` principal
  coordinates of the residual ``x - P M``.
- weighted model only: ``P, resid``: ``P`` itself beside the first ``D - K`` principal
  coordinates of the residual (``P`` in D principal coordinates when ``K >= D``); ``top P,
  resid``: the same with the ``ceil(D/2)`` features of the largest mean signal energy
  ``mean_n(P_nk^2) |A_k|^2``.

With width D, ``PCA(D)`` is a rotation of the scaled columns and the L2-penalised logistic
regression is invariant to rotations, so the bar ">= PCA(k)" then asks for at least the
raw accuracy.

``--sweep`` (about 3 minutes) asks how much of the columns' linear information any width-D
output built from the features can replace. For ``r = 0 .. D`` it keeps the ``r`` features
of most signal energy (skipping any whose loading lies in the span of those already kept),
``P[:, F]``, beside the coordinates of ``x`` in the orthogonal complement of their
loadings, ``x Q_perp`` with ``Q_perp`` an orthonormal basis of the null space of ``A_F``: a
width-D output that is exactly the raw columns (rotated) at ``r = 0`` and swaps ``r`` linear
directions for ``r`` features. Models: the binary default, the binary model with
``max_features="auto"`` (K <= D) and the real-weighted model.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
from scipy.linalg import null_space
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from sklearn.preprocessing import StandardScaler

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_real_data import MAX_BELOW_RAW, SEED, classification_sets  # noqa: E402

from sklearn_ibp import IBPFactorAnalysis  # noqa: E402

MODELS = {
    "binary (default)": {},
    "weighted, sampled noise": {"weights": "gaussian", "solver": "semi_ordered_slice"},
    "weighted, fixed noise": {"weights": "gaussian", "solver": "semi_ordered_slice",
                              "sample_hyperparameters": False},
}


def _pcs(fit_on, n, *arrays):
    pca = PCA(n).fit(fit_on)
    return [pca.transform(a) for a in arrays]


def candidates(model, X_train, X_test, weighted):
    """Every candidate representation of the training and test rows, by name."""
    P_train, P_test = model.transform(X_train), model.transform(X_test)
    M = model.components_
    S_train, S_test = P_train @ M, P_test @ M
    D, K = X_train.shape[1], P_train.shape[1]
    out = {"P": (P_train, P_test), "P M": (S_train, S_test)}
    out["PCA(P)"] = tuple(_pcs(P_train, min(K, D), P_train, P_test)) if K else (
        P_train, P_test)
    base_train, base_test, r = (S_train, S_test, min(K, D)) if weighted else (
        P_train, P_test, min(K, (D + 1) // 2))
    parts_train, parts_test = [], []
    if r:
        a, b = _pcs(base_train, r, base_train, base_test)
        parts_train.append(a)
        parts_test.append(b)
    if D - r:
        a, b = _pcs(X_train - S_train, D - r, X_train - S_train, X_test - S_test)
        parts_train.append(a)
        parts_test.append(b)
    out["P + resid"] = (np.hstack(parts_train), np.hstack(parts_test))
    if weighted:
        # The weights themselves (not their principal coordinates) beside the residual,
        # both with every feature (P itself capped to D principal coordinates when
        # K >= D) and with the ceil(D/2) features that explain most of the signal.
        out["P, resid"] = _beside_residual(P_train, P_test, M, X_train, X_test, K)
        energy = (P_train**2).mean(axis=0) * (M**2).sum(axis=1)
        top = np.argsort(energy)[::-1][: min(K, (D + 1) // 2)]
        out["top P, resid"] = _beside_residual(P_train[:, top], P_test[:, top], M[top],
                                               X_train, X_test, top.size)
    return out


def _beside_residual(P_train, P_test, M, X_train, X_test, K):
    """``P`` beside the first ``D - K`` principal coordinates of ``x - P M``; ``P`` in
    its first D principal coordinates when ``K >= D``."""
    D = X_train.shape[1]
    if K >= D:
        return tuple(_pcs(P_train, D, P_train, P_test))
    R_train, R_test = X_train - P_train @ M, X_test - P_test @ M
    a, b = _pcs(R_train, D - K, R_train, R_test)
    return np.hstack([P_train, a]), np.hstack([P_test, b])


def accuracy(F_train, y_train, F_test, y_test):
    clf = LogisticRegression(max_iter=2000).fit(F_train, y_train)
    return clf.score(F_test, y_test)


def _pca_accuracy(X_train, y_train, X_test, y_test, k):
    """Accuracy of ``PCA(k)`` (NaN for ``k = 0``, a model with no feature)."""
    if k == 0:
        return np.nan
    F_train, F_test = _pcs(X_train, k, X_train, X_test)
    return accuracy(F_train, y_train, F_test, y_test)


SWEEP_MODELS = {
    "binary (default)": {},
    'binary, max_features="auto"': {"max_features": "auto"},
    "weighted, sampled noise": {"weights": "gaussian", "solver": "semi_ordered_slice"},
}


def features_beside_complement(P_train, P_test, M, X_train, X_test, r):
    """The ``r`` features of most signal energy beside ``x`` in the orthogonal complement
    of their loadings (width D; the raw columns, rotated, at ``r = 0``)."""
    energy = (P_train**2).mean(axis=0) * (M**2).sum(axis=1)
    scale = np.abs(M).max() if M.size else 1.0
    kept = []
    for k in np.argsort(energy)[::-1]:
        if len(kept) == r:
            break
        if np.linalg.matrix_rank(M[kept + [k]], tol=1e-8 * scale) == len(kept) + 1:
            kept.append(int(k))
    Q = null_space(M[kept]) if kept else np.eye(X_train.shape[1])
    return (np.hstack([P_train[:, kept], X_train @ Q]),
            np.hstack([P_test[:, kept], X_test @ Q]))


def sweep():
    warnings.filterwarnings("ignore")
    sets = classification_sets()
    for model_name, params in SWEEP_MODELS.items():
        print(f"\n## {model_name}: IBPFactorAnalysis({params}, random_state={SEED})")
        print("accuracy with r of the D linear directions swapped for r features")
        for name, target, X, y in sets:
            D = X.shape[1]
            cv = StratifiedKFold(n_splits=5, shuffle=True, random_state=SEED)
            acc = np.zeros((5, D + 1))
            for fold, (train, test) in enumerate(cv.split(X, y)):
                scaler = StandardScaler().fit(X[train])
                X_train, X_test = scaler.transform(X[train]), scaler.transform(X[test])
                model = IBPFactorAnalysis(random_state=SEED, **params).fit(X_train)
                P_train, P_test = model.transform(X_train), model.transform(X_test)
                for r in range(D + 1):
                    F_train, F_test = features_beside_complement(
                        P_train, P_test, model.components_, X_train, X_test, r)
                    acc[fold, r] = accuracy(F_train, y[train], F_test, y[test])
            cells = " | ".join(f"{a:.3f}" for a in acc.mean(axis=0))
            print(f"| {name} ({target}) | {cells} |")


def main():
    if "--sweep" in sys.argv[1:]:
        sweep()
        return
    warnings.filterwarnings("ignore")
    sets = classification_sets()
    for model_name, params in MODELS.items():
        print(f"\n## {model_name}: IBPFactorAnalysis({params}, random_state={SEED})")
        print("cell: accuracy / max width / mean PCA(k) accuracy; * = all three bars met")
        rows = []
        for name, target, X, y in sets:
            D = X.shape[1]
            cv = StratifiedKFold(n_splits=5, shuffle=True, random_state=SEED)
            acc, pca_acc, widths, raw = {}, {}, {}, []
            for train, test in cv.split(X, y):
                scaler = StandardScaler().fit(X[train])
                X_train, X_test = scaler.transform(X[train]), scaler.transform(X[test])
                y_train, y_test = y[train], y[test]
                raw.append(accuracy(X_train, y_train, X_test, y_test))
                model = IBPFactorAnalysis(random_state=SEED, **params).fit(X_train)
                weighted = params.get("weights") == "gaussian"
                by_k = {}
                for cand, (F_train, F_test) in candidates(
                        model, X_train, X_test, weighted).items():
                    k = min(F_test.shape[1], D)
                    acc.setdefault(cand, []).append(
                        accuracy(F_train, y_train, F_test, y_test))
                    widths.setdefault(cand, []).append(F_test.shape[1])
                    if k not in by_k:
                        by_k[k] = _pca_accuracy(X_train, y_train, X_test, y_test, k)
                    pca_acc.setdefault(cand, []).append(by_k[k])
            raw_mean = float(np.mean(raw))
            cells = []
            for cand in acc:
                a, p, w = float(np.mean(acc[cand])), float(np.mean(pca_acc[cand])), max(
                    widths[cand])
                ok = w <= D and a >= p - 1e-12 and a >= raw_mean - MAX_BELOW_RAW - 1e-12
                cells.append(f"{a:.3f} / {w} / {p:.3f}{' *' if ok else ''}")
            rows.append((f"{name} ({target})", f"{raw_mean:.3f}", *cells))
        header = ("data (target)", "raw", *acc)
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for row in rows:
            print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
