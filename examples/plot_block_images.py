"""
=========================================
Recovering the features of block images
=========================================

The block images of Griffiths and Ghahramani are 6x6 images. Each image is the sum of some
of four binary shapes, plus Gaussian noise with standard deviation 0.5. We fit
:class:`~sklearn_ibp.IBPFactorAnalysis` without telling it how many shapes there are.
Then we match the features it infers to the true shapes and plot the traces of the number
of features K and of the noise level ``sigma_x``.
"""

import os

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from sklearn_ibp import IBPFactorAnalysis  # noqa: E402
from sklearn_ibp.datasets import make_block_images  # noqa: E402
from sklearn_ibp.diagnostics import plot_traces  # noqa: E402

# With SKLEARN_IBP_QUICK_EXAMPLES=1 (the test suite sets it) every size is cut down so
# that the script runs in seconds; the results then mean little.
QUICK = os.environ.get("SKLEARN_IBP_QUICK_EXAMPLES") == "1"
n_samples, n_iter = (100, 30) if QUICK else (500, 300)

# %%
# Generate the data
# -----------------
# ``X`` has 500 rows of 36 pixels. ``Z`` records which shapes each image contains (each
# one with probability 0.5), and ``A`` holds the four true shapes, one per row.

X, Z, A = make_block_images(n_samples=n_samples, noise=0.5, random_state=0)
print(f"X: {X.shape}, true shapes A: {A.shape}")

fig, axes = plt.subplots(2, 6, figsize=(9, 3.4))
for ax, image, z in zip(axes[0], X, Z, strict=False):
    ax.imshow(image.reshape(6, 6), cmap="gray", interpolation="nearest")
    ax.set_title(f"z = {''.join(map(str, z))}", fontsize=9)
for ax, image in zip(axes[1], Z[:6] @ A, strict=False):
    ax.imshow(image.reshape(6, 6), cmap="gray", interpolation="nearest")
for ax in axes.ravel():
    ax.set_xticks([])
    ax.set_yticks([])
axes[0, 0].set_ylabel("data X")
axes[1, 0].set_ylabel("without noise")
fig.suptitle("Six block images and the shapes they contain")
fig.tight_layout()

# %%
# Fit the model
# -------------
# ``sigma_x=1.0`` is only the starting value of the noise level: with
# ``sample_hyperparameters=True`` the sampler resamples ``alpha``, ``sigma_x`` and
# ``sigma_a`` at every sweep. The default starting value, a quarter of the data's standard
# deviation, is much smaller than the noise in these images. Started there, the sampler
# first explains the noise with a couple of hundred small features, and it takes hundreds
# of sweeps to climb back to a handful.
# Two chains of 300 sweeps each; the first 150 sweeps of each chain are burn-in.

model = IBPFactorAnalysis(
    n_iter=n_iter, sigma_x=1.0, sample_hyperparameters=True, n_chains=2, random_state=0
)
model.fit(X)
print(f"number of features K: {model.n_components_}")
print(f"noise level sigma_x: {model.sigma_x_:.3f} (true value 0.5)")
print(f"images that have each feature: {model.feature_counts_}")

# %%
# Match the inferred features to the true shapes
# ----------------------------------------------
# ``model.components_`` holds the posterior mean of the features for the kept sample with
# the highest log joint probability. The model takes the images as they are (zero is the
# absence of every shape; it does not centre the columns), so each shape comes out as
# itself: representing it by its negative, on in the images that lack it, would need an
# extra always-on feature holding the shape, which the prior penalises. (Until issue 20
# the columns were centred, the two representations fitted equally well, and about half
# the shapes came out inverted.) We match each true shape to the inferred feature with
# the largest correlation.

components = model.components_
correlation = np.corrcoef(A, components)[: len(A), len(A) :]  # (true shape, feature)
match = correlation.argmax(axis=1)
for k, j in enumerate(match):
    print(
        f"true shape {k}: feature {j} (in {model.feature_counts_[j]} images), "
        f"correlation {correlation[k, j]:+.3f}"
    )
others = [int(j) for j in np.argsort(-model.feature_counts_) if j not in match]
for j in others:
    print(f"other feature {j}: in {model.feature_counts_[j]} images")

# %%
# True and inferred features
# --------------------------
# The top row shows the true shapes. The middle row shows the feature matched to each
# shape, with its correlation. The bottom row shows the other features, most often used
# first: small features the sample carries beside the four shapes, if any. Red is
# positive and blue negative, on one colour scale for all panels.

limit = max(np.abs(components).max(), 1.0)
n_cols = max(len(A), len(others))
fig, axes = plt.subplots(3, n_cols, figsize=(1.9 * n_cols, 6.2), squeeze=False)
for ax in axes.ravel():
    ax.set_axis_off()


def show(ax, feature, title):
    ax.set_axis_on()
    ax.set_xticks([])
    ax.set_yticks([])
    ax.imshow(feature.reshape(6, 6), cmap="RdBu_r", vmin=-limit, vmax=limit)
    ax.set_title(title, fontsize=9)


for k in range(len(A)):
    show(axes[0, k], A[k], f"true shape {k}")
    j = match[k]
    show(axes[1, k], components[j], f"feature {j}\ncorr {correlation[k, j]:+.2f}")
for col, j in enumerate(others):
    show(axes[2, col], components[j], f"feature {j}\nin {model.feature_counts_[j]} images")
axes[0, 0].set_ylabel("truth")
axes[1, 0].set_ylabel("matched")
if others:
    axes[2, 0].set_ylabel("other")
fig.suptitle("True shapes, matched features and the other features")
fig.tight_layout()

# %%
# The feature assignments Z
# -------------------------
# ``model.Z_`` is the binary matrix of the kept sample with the highest log joint
# probability: one row per image, one column per feature. Left, the true assignments of
# the first 40 images; right, the inferred ones, with the columns matched to the true
# shapes first, in the same order, and then the other features. We count how many
# entries of each matched column agree with the truth.

n_show = 40
columns = list(match) + others
Z_found = model.Z_[:n_show, columns]
agree = [
    np.mean(model.Z_[:, j] == (Z[:, k] if correlation[k, j] > 0 else 1 - Z[:, k]))
    for k, j in enumerate(match)
]
print("agreement of each matched column of Z_ with the true column:", np.round(agree, 3))

fig, (ax_true, ax_found) = plt.subplots(
    1, 2, figsize=(8, 5), gridspec_kw={"width_ratios": [len(A), len(columns)]}
)
ax_true.imshow(Z[:n_show], cmap="Greys", aspect="auto", interpolation="nearest")
ax_true.set_xticks(range(len(A)), [f"shape {k}" for k in range(len(A))], rotation=45)
ax_true.set_ylabel("image")
ax_true.set_title("true Z")
ax_found.imshow(Z_found, cmap="Greys", aspect="auto", interpolation="nearest")
labels = [
    f"feat. {j}" + (" (neg.)" if correlation[k, j] < 0 else "") for k, j in enumerate(match)
]
labels += [f"feat. {j}" for j in others]
ax_found.set_xticks(range(len(columns)), labels, rotation=45)
ax_found.set_yticks([])
ax_found.set_title("inferred Z_ (matched columns first)")
fig.tight_layout()

# %%
# Traces along the chains
# -----------------------
# ``model.traces_`` holds one value per sweep for each chain, as arrays of shape
# ``(n_chains, n_iter)``; :func:`~sklearn_ibp.diagnostics.plot_traces` draws them, one
# line per chain, with a dashed line at the end of the burn-in. ``sigma_x`` falls from its
# starting value of 1.0 to about the true noise level (grey) within the first 20 or so
# sweeps. K settles a little above 4 (the four shapes, with no offset now that the
# images are not centred): the chains keep proposing small extra features, used by a few
# images, that come and go.

axes = plot_traces(model, names=["log_joint", "n_features", "sigma_x", "alpha"])
axes[2].axhline(0.5, color="gray", lw=0.8)
axes[0].figure.suptitle("Traces of the two chains")

# %%
# Convergence diagnostics
# -----------------------
# :meth:`~sklearn_ibp.IBPFactorAnalysis.convergence_summary` computes, for every trace
# after the burn-in, the effective sample size (ESS), the rank-normalised split R-hat
# across the chains and the hairiness index (see :doc:`/diagnostics`). ``sigma_x`` and
# ``alpha`` mix well: hundreds of effective draws and R-hat close to 1. K, the log joint
# and ``sigma_a`` (the scale of the features, which moves with the features there are) do
# not: an ESS of a few and R-hat well above 1.01 say the two chains spend the kept
# sweeps with different numbers of small extra features, and a sweep's K is much like
# the previous one's. Both chains found the four shapes; the diagnostics say
# that the posterior over the extra features is not yet well explored, and that more
# sweeps or more chains are needed before reporting, say, the posterior mean of K.

summary = model.convergence_summary()
print(summary)
plt.show()
