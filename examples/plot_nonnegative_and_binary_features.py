"""
=====================================================
Non-negative and binary features: other likelihoods
=====================================================

The linear-Gaussian model lets features cancel each other: a feature may be negative
where another is positive. When the data are sums of non-negative parts (intensities,
counts, spectra), ``likelihood="exponential"`` gives every feature value an exponential
prior, so features are non-negative. When the data are binary,
``likelihood="noisy_or"`` observes them through a leaky noisy-or: each present feature
that covers a pixel switches it on with probability ``1 - lambda``, and a pixel no feature
covers is on with probability ``1 - epsilon`` (Doshi-Velez 2009, appendix A).

Neither likelihood lets the features be integrated out, so the collapsed and accelerated
samplers cannot serve them. The samplers that keep the features explicit can; here we use
the semi-ordered slice sampler (Görür 2007, sec. 4.2.6), exact and without truncation;
see "Choosing a solver" in the user guide for the others and how fast each mixes.
"""

import os

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from sklearn_ibp import IBPFactorAnalysis  # noqa: E402
from sklearn_ibp.datasets import make_block_images  # noqa: E402
from sklearn_ibp.likelihoods import LeakyNoisyOr  # noqa: E402

QUICK = os.environ.get("SKLEARN_IBP_QUICK_EXAMPLES") == "1"
n_samples, n_iter, n_chains = (80, 20, 1) if QUICK else (300, 300, 4)


def show_features(axes, features, title):
    """Draw each feature as a 6x6 image; leave spare axes blank."""
    for ax in axes:
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_frame_on(False)
    for ax, feature in zip(axes, features, strict=False):
        ax.imshow(feature.reshape(6, 6), cmap="gray", interpolation="nearest")
    axes[0].set_ylabel(title, fontsize=9)


# %%
# Non-negative features from real-valued images
# ---------------------------------------------
# The block images: sums of four binary shapes plus Gaussian noise. Several chains are
# run and the sample with the highest posterior probability is kept: a single chain can
# sit for a long time in a mode that merges two shapes into one feature.

X, Z, A = make_block_images(n_samples=n_samples, noise=0.5, random_state=0)
nonneg = IBPFactorAnalysis(likelihood="exponential", solver="semi_ordered_slice",
                           n_iter=n_iter, n_chains=n_chains, random_state=0).fit(X)
print(f"exponential: K = {nonneg.n_components_}, smallest feature value "
      f"{nonneg.components_.min():.3f}, sigma_x = {nonneg.sigma_x_:.3f}")

# %%
# Binary images through a leaky noisy-or
# --------------------------------------
# The same shapes, now switching pixels on: each present shape misses a pixel with
# probability 0.1, and 5% of the pixels no shape covers are on anyway.

X_binary = LeakyNoisyOr().sample_data(Z, A, {"epsilon": 0.95, "lambda": 0.1, "p_a": 0.5},
                                      np.random.default_rng(0))
binary = IBPFactorAnalysis(likelihood="noisy_or", solver="semi_ordered_slice",
                           n_iter=n_iter, n_chains=n_chains, random_state=0).fit(X_binary)
params = binary.likelihood_params_
print(f"noisy_or: K = {binary.n_components_}, epsilon = {params['epsilon']:.3f} "
      f"(true 0.95), lambda = {params['lambda']:.3f} (true 0.1)")

# %%
# The features found
# ------------------
# Each row shows one model's features next to the true shapes. Features used by few rows
# (small counts) mop up noise; the four shapes are those used by about half of the rows.

order_nonneg = np.argsort(-nonneg.feature_counts_)
order_binary = np.argsort(-binary.feature_counts_)
n_cols = max(4, min(8, nonneg.n_components_, binary.n_components_))
fig, axes = plt.subplots(4, n_cols, figsize=(1.3 * n_cols, 5.6))
show_features(axes[0], A, "true shapes")
show_features(axes[1], nonneg.components_[order_nonneg], "exponential")
show_features(axes[2], X_binary[:n_cols], "binary data")
show_features(axes[3], binary.components_[order_binary], "noisy-or")
fig.suptitle("Features learned with non-negative and binary likelihoods")
fig.tight_layout()

# %%
# How sure is the model about each image's shapes?
# ------------------------------------------------
# ``transform`` gives the posterior probability that a row has each feature. For binary
# data ``inverse_transform`` maps them back to the probability that each pixel is on.

q = binary.transform(X_binary[:4])
p_on = binary.inverse_transform((q > 0.5).astype(float))
fig, axes = plt.subplots(2, 4, figsize=(6, 3.4))
for j in range(4):
    axes[0, j].imshow(X_binary[j].reshape(6, 6), cmap="gray", interpolation="nearest")
    axes[1, j].imshow(p_on[j].reshape(6, 6), cmap="gray", vmin=0, vmax=1,
                      interpolation="nearest")
    for ax in axes[:, j]:
        ax.set_xticks([])
        ax.set_yticks([])
axes[0, 0].set_ylabel("data")
axes[1, 0].set_ylabel("P(pixel on)")
fig.tight_layout()
plt.show()
