"""
=====================================================================
Reconstructing a time series with the distance-dependent IBP
=====================================================================

The images of :func:`~sklearn_ibp.datasets.make_block_image_sequence` come in time order,
and each of the four shapes stays on (or off) for runs of about a dozen images. The IBP
ignores that order; the distance-dependent IBP (:class:`~sklearn_ibp.DistanceDependentIBP`)
lets images close in time share features. We hide most of the pixels of some images and
compare how well the two models fill them in, for several values of the decay rate
(the experiment of Gershman, Frazier and Blei, sec. 7.2, on synthetic data).
"""

import os

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from sklearn_ibp import DistanceDependentIBP, IBPFactorAnalysis  # noqa: E402
from sklearn_ibp.datasets import make_block_image_sequence  # noqa: E402

# With SKLEARN_IBP_QUICK_EXAMPLES=1 (the test suite sets it) every size is cut down so
# that the script runs in seconds; the results then mean little.
QUICK = os.environ.get("SKLEARN_IBP_QUICK_EXAMPLES") == "1"

# %%
# A time series with most pixels of some images hidden
# ----------------------------------------------------
# A sixth of the 180 images keep only 4 of their 36 pixels. From 4 pixels alone one can
# hardly tell which shapes an image shows; its neighbours in time can.

n_images = 60 if QUICK else 180
X, Z_true, shapes = make_block_image_sequence(n_samples=n_images, random_state=0)
rng = np.random.default_rng(0)
hidden = np.zeros(X.shape, dtype=bool)
sparse_rows = np.sort(rng.choice(n_images, n_images // 6, replace=False))
for row in sparse_rows:
    hidden[row, rng.choice(36, 32, replace=False)] = True
X_observed = np.where(hidden, np.nan, X)
time = np.arange(n_images, dtype=float)
X_timed = np.column_stack([time, X_observed])  # column 0: the time stamp

# %%
# Fit the IBP and the dd-IBP for several decay rates
# --------------------------------------------------
# ``covariate_columns=[0]`` makes the time stamp the covariate of the distances
# ``|t_i - t_j|``; the exponential decay ``exp(-decay * d)`` sets how far features spread.
# ``inverse_transform(transform(X))`` fills the hidden entries from each image's posterior
# feature probabilities.


def squared_error(model, X_in):
    filled = model.inverse_transform(model.transform(X_in))
    return np.mean((filled[hidden] - X[hidden]) ** 2)


n_iter = 15 if QUICK else 150
ibp = IBPFactorAnalysis(n_iter=n_iter, random_state=0).fit(X_observed)
ibp_error = squared_error(ibp, X_observed)
decays = [0.2, 1.0] if QUICK else [0.05, 0.2, 0.5, 1.0]
dd_errors = []
models = {}
for decay in decays:
    model = DistanceDependentIBP(covariate_columns=[0], decay=decay, n_iter=n_iter,
                                 random_state=0).fit(X_timed)
    models[decay] = model
    dd_errors.append(squared_error(model, X_timed))
    print(f"decay {decay:4}: dd-IBP error {dd_errors[-1]:.3f} with {model.n_components_} "
          "features")
# The default, decay=None, calibrates the rate so that the prior expects the IBP's number
# of features (doc: "The defaults"); the rate it chose is decay_.
default = DistanceDependentIBP(covariate_columns=[0], n_iter=n_iter, random_state=0)
default.fit(X_timed)
default_error = squared_error(default, X_timed)
print(f"default (decay_ = {default.decay_:.3f}): dd-IBP error {default_error:.3f} with "
      f"{default.n_components_} features")
print(f"IBP: error {ibp_error:.3f} with {ibp.n_components_} features")
print(f"noise variance (the floor): {0.5 ** 2:.3f}")

# %%
# Reconstruction error against the decay rate
# -------------------------------------------
# The dashed line is the IBP, which does not depend on the decay; the star is the
# calibrated default rate. The noise variance, 0.25, is the best any model can do.

fig, ax = plt.subplots(figsize=(5.5, 3.5))
ax.plot(decays, dd_errors, "o-", label="dd-IBP")
ax.plot([default.decay_], [default_error], "*", color="C0", markersize=12,
        label="dd-IBP, default decay")
ax.axhline(ibp_error, color="C1", linestyle="--", label="IBP")
ax.axhline(0.25, color="0.6", linestyle=":", label="noise variance")
ax.set_xscale("log")
ax.set_xlabel("decay rate (exponential decay)")
ax.set_ylabel("squared error on hidden pixels")
ax.legend()
fig.tight_layout()

# %%
# Which shapes each image has, over time
# --------------------------------------
# Top: the true shapes. Below: how much of each shape the two models' reconstructions
# contain (the least-squares coefficients of each reconstructed image on the four shape
# images). Red marks the images with hidden pixels: there the IBP has to guess from four
# pixels, while the dd-IBP follows the runs of the neighbouring images.


def shape_content(model, X_in):
    filled = model.inverse_transform(model.transform(X_in))
    coef, *_ = np.linalg.lstsq(shapes.T, filled.T, rcond=None)
    return np.clip(coef.T, 0, 1)


best = decays[int(np.argmin(dd_errors))]
panels = [
    ("true shapes", Z_true),
    ("IBP", shape_content(ibp, X_observed)),
    (f"dd-IBP (decay {best})", shape_content(models[best], X_timed)),
]
fig, axes = plt.subplots(3, 1, figsize=(8, 5), sharex=True)
for ax, (title, image) in zip(axes, panels, strict=True):
    ax.imshow(image.T, aspect="auto", cmap="Greys", vmin=0, vmax=1, interpolation="nearest")
    ax.set_yticks(range(4))
    ax.set_ylabel("shape")
    ax.set_title(title, fontsize=10)
    ax.plot(sparse_rows, np.full(sparse_rows.size, -0.5), "v", color="C3", markersize=5,
            clip_on=False)
axes[-1].set_xlabel("time (image index); red triangles: images with 32 of 36 pixels hidden")
fig.tight_layout()
plt.show()
