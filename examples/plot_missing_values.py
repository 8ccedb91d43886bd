"""
===============================================
Filling in missing pixels of block images
===============================================

:class:`~sklearn_ibp.IBPFactorAnalysis` accepts ``NaN`` in ``X``. Here we hide 20% of the
pixels of the block images at random, fit the model to what is left, and predict the
hidden pixels. We compare the predictions with the hidden values and with a simple
baseline that fills each hidden pixel with the mean of its column.
"""

import os

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from sklearn_ibp import IBPFactorAnalysis  # noqa: E402
from sklearn_ibp.datasets import make_block_images  # noqa: E402

# With SKLEARN_IBP_QUICK_EXAMPLES=1 (the test suite sets it) every size is cut down so
# that the script runs in seconds; the results then mean little.
QUICK = os.environ.get("SKLEARN_IBP_QUICK_EXAMPLES") == "1"
n_samples, n_iter = (100, 30) if QUICK else (500, 300)

# %%
# Hide 20% of the pixels
# ----------------------
# Each pixel is hidden independently with probability 0.2. The model rejects rows or
# columns with no observed value, but with 36 pixels per image and 500 images that does
# not happen here.

X, Z, A = make_block_images(n_samples=n_samples, noise=0.5, random_state=0)
rng = np.random.default_rng(0)
hidden = rng.random(X.shape) < 0.2
X_observed = np.where(hidden, np.nan, X)
print(f"hidden pixels: {hidden.sum()} of {hidden.size} ({hidden.mean():.1%})")

# %%
# Fit the model and reconstruct the images
# ----------------------------------------
# During ``fit`` the sampler redraws every missing entry from the model at each sweep, so
# the missing values are integrated out rather than filled with a constant. The settings
# are those of the block-image example: ``sigma_x=1.0`` is the starting value of the noise
# level, which is resampled with the other hyperparameters.
#
# ``transform`` gives each image's posterior feature probabilities ``E[z | x]``, computed
# from its observed pixels only. ``inverse_transform`` maps them back to pixel space
# (``E[z | x] A + mean``), which predicts every pixel, the hidden ones included.

model = IBPFactorAnalysis(
    n_iter=n_iter, sigma_x=1.0, sample_hyperparameters=True, n_chains=2, random_state=0
)
model.fit(X_observed)
reconstruction = model.inverse_transform(model.transform(X_observed))
print(f"number of features K: {model.n_components_}, sigma_x: {model.sigma_x_:.3f}")

# %%
# Error on the hidden pixels
# --------------------------
# The root mean squared error (RMSE) over the hidden pixels, for the model's
# reconstruction and for column-mean imputation (each hidden pixel gets the mean of the
# observed values in its column). We measure both against the hidden noisy values, and
# against the noise-free images ``Z A``. Against the noisy values, even a perfect
# prediction of the noise-free image has an error of about 0.5, the noise level; the
# last line of the first group shows this floor.

column_means = np.nanmean(X_observed, axis=0)
mean_imputation = np.broadcast_to(column_means, X.shape)
clean = Z @ A


def rmse(prediction, target):
    """RMSE over the hidden pixels."""
    return np.sqrt(np.mean((prediction[hidden] - target[hidden]) ** 2))


print("RMSE on the hidden pixels, against the hidden noisy values:")
print(f"  IBPFactorAnalysis reconstruction: {rmse(reconstruction, X):.3f}")
print(f"  column-mean imputation:           {rmse(mean_imputation, X):.3f}")
print(f"  noise-free images (the floor):    {rmse(clean, X):.3f}")
print("RMSE on the hidden pixels, against the noise-free images:")
print(f"  IBPFactorAnalysis reconstruction: {rmse(reconstruction, clean):.3f}")
print(f"  column-mean imputation:           {rmse(mean_imputation, clean):.3f}")

# %%
# The model's error on the hidden pixels comes close to the noise floor, well below that
# of the column means: the observed 80% of an image are enough to tell which shapes it
# contains, and the shapes then predict the hidden pixels.
#
# That holds because these images *are* sums of shapes plus independent noise. On real
# tables the same recipe (one posterior sample, the model's own isotropic noise) can do
# worse than the column means; to fill missing values there, use
# :class:`~sklearn_ibp.IBPImputer`, whose defaults were chosen on public tables (see
# :doc:`/imputation`).

# %%
# Observed pixels, reconstruction and truth
# -----------------------------------------
# For six images: the observed pixels (hidden ones in red), the model's reconstruction,
# and the noise-free image. The reconstruction is ``E[z | x] A``, so it is smooth: it
# shows which shapes the model thinks the image has, not the noise.

n_show = 6
cmap = plt.get_cmap("gray").with_extremes(bad="tab:red")
fig, axes = plt.subplots(3, n_show, figsize=(1.5 * n_show, 5))
rows = [
    ("observed", X_observed),
    ("reconstruction", reconstruction),
    ("truth (no noise)", clean),
]
for r, (label, images) in enumerate(rows):
    for c in range(n_show):
        ax = axes[r, c]
        image = np.ma.masked_invalid(images[c].reshape(6, 6))
        ax.imshow(image, cmap=cmap, vmin=-0.75, vmax=1.75, interpolation="nearest")
        ax.set_xticks([])
        ax.set_yticks([])
    axes[r, 0].set_ylabel(label)
fig.suptitle("20% of the pixels hidden (red)")
fig.tight_layout()
plt.show()
