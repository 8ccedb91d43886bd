"""
===============================================
Imputing missing pixels of handwritten digits
===============================================

:class:`~sklearn_ibp.IBPImputer` fills missing values with the posterior predictive mean
of a latent feature model. We hide 20% of the pixels of scikit-learn's digits at random
and compare it with scikit-learn's :class:`~sklearn.impute.SimpleImputer` (column mean),
:class:`~sklearn.impute.KNNImputer` and :class:`~sklearn.impute.IterativeImputer`: the
error on the hidden pixels, the time taken, and a few imputed digits.
"""

import os
import time

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.experimental import enable_iterative_imputer  # noqa: E402, F401
from sklearn.impute import IterativeImputer, KNNImputer, SimpleImputer  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from sklearn_ibp import IBPFactorAnalysis, IBPImputer  # noqa: E402

# With SKLEARN_IBP_QUICK_EXAMPLES=1 (the test suite sets it) every size is cut down so
# that the script runs in seconds; the results then mean little.
QUICK = os.environ.get("SKLEARN_IBP_QUICK_EXAMPLES") == "1"

# %%
# Hide 20% of the pixels
# ----------------------
# The 1797 digits are 8x8 images with 17 grey levels; we scale them to [0, 1]. Every
# pixel is hidden independently with probability 0.2, so a digit keeps about 51 of its
# 64 pixels.

X = load_digits().data / 16.0
if QUICK:
    X = X[:300]
rng = np.random.default_rng(0)
hidden = rng.random(X.shape) < 0.2
X_missing = np.where(hidden, np.nan, X)
print(f"{X.shape[0]} digits, {hidden.sum()} of {hidden.size} pixels hidden")

# %%
# The imputers
# ------------
# scikit-learn's imputers run with their defaults (``IterativeImputer`` with a seed).
#
# :class:`~sklearn_ibp.IBPImputer` runs with its defaults: an
# :class:`~sklearn_ibp.IBPFactorAnalysis` in which each digit is a sum of binary
# features ``z A`` plus noise, fitted with the hidden pixels masked out of its
# likelihood, and ``noise="full"``: for each of ``n_samples`` posterior samples the
# residuals ``x - z A`` get a full covariance (estimated by EM), the digit's features are
# inferred from its observed pixels under that noise, and a hidden pixel is filled with
# ``E[z | observed] A`` plus the Gaussian regression of its residual on the observed
# residuals. The features carry the groups of digits, the covariance the strokes that
# vary together within them. That is averaged evenly (``gaussian_weight=0.5``) with the
# plain Gaussian's regression of the hidden pixels on the observed ones (see
# :doc:`/imputation`).

imputers = {
    "SimpleImputer (mean)": SimpleImputer(strategy="mean"),
    "KNNImputer": KNNImputer(),
    "IterativeImputer": IterativeImputer(max_iter=3 if QUICK else 10, random_state=0),
    "IBPImputer": IBPImputer(
        IBPFactorAnalysis(n_iter=10, random_state=0) if QUICK else None, random_state=0
    ),
}

# The matrices here are small: BLAS threads only contend for the cores (on a busy
# two-core machine IterativeImputer ran fifteen times slower with them), so one thread.
imputed, rmse, seconds = {}, {}, {}
for name, imputer in imputers.items():
    start = time.perf_counter()
    with threadpool_limits(limits=1, user_api="blas"):
        imputed[name] = imputer.fit_transform(X_missing)
    seconds[name] = time.perf_counter() - start
    rmse[name] = np.sqrt(np.mean((imputed[name][hidden] - X[hidden]) ** 2))
    # Every imputer returns the observed pixels as they were.
    assert np.array_equal(imputed[name][~hidden], X[~hidden])

model = imputers["IBPImputer"].estimator_
print(f"IBPFactorAnalysis: {model.n_components_} features in the best sample, "
      f"{len(model.samples_)} kept samples")

# %%
# Error on the hidden pixels
# --------------------------
# Root mean squared error over the hidden pixels, on the [0, 1] scale, and the time of
# ``fit_transform``.

print(f"{'imputer':<22}{'RMSE':>8}{'time (s)':>10}")
for name in imputers:
    print(f"{name:<22}{rmse[name]:>8.4f}{seconds[name]:>10.1f}")

# %%
# At full size :class:`~sklearn_ibp.IBPImputer` cuts the column mean's error by about
# 40% and beats :class:`~sklearn.impute.IterativeImputer` (a linear regression of each
# pixel on the others), but not :class:`~sklearn.impute.KNNImputer`: digits come in
# many near copies of each other, and the average of five neighbours that agree on the
# observed pixels is hard to beat. A single posterior sample is worse than both; the
# average over the chains is what puts the model ahead of the linear regression.
#
# For multiple imputation, ``sample_posterior=True`` fills the pixels with one draw
# from the posterior predictive instead of its mean; each ``random_state`` gives another
# completed data set.

# %%
# A few imputed digits
# --------------------
# Hidden pixels are red in the second row. Each row below shows the digits completed by
# one imputer.

shown = [0, 3, 7, 11, 21, 24]
grey = plt.get_cmap("gray_r").copy()
grey.set_bad("tab:red")
rows = {"original": X, "pixels hidden": X_missing, **imputed}
fig, axes = plt.subplots(len(rows), len(shown), figsize=(1.4 * len(shown), 1.5 * len(rows)))
for r, (label, images) in enumerate(rows.items()):
    for c, index in enumerate(shown):
        ax = axes[r, c]
        ax.imshow(np.ma.masked_invalid(images[index].reshape(8, 8)), cmap=grey, vmin=0, vmax=1)
        ax.set_xticks([])
        ax.set_yticks([])
        if c == 0:
            ax.set_ylabel(label.replace(" (mean)", "\n(mean)"), fontsize=8, rotation=0,
                          ha="right", va="center")
fig.suptitle("Digits with 20% of the pixels hidden, and their imputations")
fig.tight_layout()
plt.show()
