"""
=========================================
Recovering the features of block images
=========================================

The block images of Griffiths and Ghahramani are 6x6 images, each the sum of some of four
binary shapes plus Gaussian noise. We fit :class:`~sklearn_ibp.IBPFactorAnalysis` without
telling it how many shapes there are, then compare the features it infers with the true
ones and look at the trace of the number of features.
"""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from sklearn_ibp import IBPFactorAnalysis  # noqa: E402
from sklearn_ibp.datasets import make_block_images  # noqa: E402

# %%
# Generate the data
# -----------------
# ``X`` has 300 rows of 36 pixels. ``Z`` records which shapes each image contains, and
# ``A`` holds the four true features, one per row.

X, Z, A = make_block_images(n_samples=300, noise=0.5, random_state=0)
print(f"X: {X.shape}, true features A: {A.shape}")

# %%
# Fit the model
# -------------
# The hyperparameters (``alpha`` and the noise and feature scales) are sampled along with
# the features.

model = IBPFactorAnalysis(n_iter=200, burn_in=100, sample_hyperparameters=True, random_state=0)
model.fit(X)
components = model.components_
print(f"number of features found: {components.shape[0]}")

# For each true feature, the correlation with the inferred feature that matches it best.
for k, true_feature in enumerate(A):
    correlations = [np.corrcoef(true_feature, found)[0, 1] for found in components]
    best = max(correlations, default=float("nan"))
    print(f"true feature {k}: best correlation {best:.3f}")

# %%
# True and inferred features
# --------------------------


def plot_features(features, title):
    """Plot each row of ``features`` as a 6x6 image."""
    n_features = max(len(features), 1)
    fig, axes = plt.subplots(1, n_features, figsize=(1.6 * n_features, 2), squeeze=False)
    for ax in axes[0]:
        ax.set_axis_off()
    for ax, feature in zip(axes[0], features, strict=False):
        ax.imshow(np.reshape(feature, (6, 6)), cmap="gray", interpolation="nearest")
    fig.suptitle(title)
    return fig


plot_features(A, "true features")
plot_features(components, "inferred features (model.components_)")

# %%
# Number of features along the chain
# ----------------------------------
# ``traces_["n_features"]`` has one row per chain.

trace = np.asarray(model.traces_["n_features"])
fig, ax = plt.subplots(figsize=(6, 3))
for chain, values in enumerate(trace):
    ax.plot(values, label=f"chain {chain}")
ax.set_xlabel("iteration")
ax.set_ylabel("number of features K")
ax.set_title("trace of K")
ax.legend()
fig.tight_layout()
plt.show()
