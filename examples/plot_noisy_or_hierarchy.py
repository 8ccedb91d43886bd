"""
=============================================================
Correlated features: shapes that come in combinations
=============================================================

In the block images of :func:`~sklearn_ibp.datasets.make_block_images` the four shapes
occur independently. Here they do not: :func:`~sklearn_ibp.datasets.make_correlated_block_images`
draws every image from nine fixed *combinations* of the shapes (nothing, each shape
alone, three pairs and a triple), the data of Doshi-Velez (2009, sec. 7.2).
:class:`~sklearn_ibp.NoisyOrHierarchy` explains such data with two layers: rows belong to
categories, and categories link to features. We fit the DP-IBP (one category per image)
and look at the shapes, the combinations (motifs) and the traces of the sampler; then we
fit the noisy-or IBP-IBP to images that hold several combinations at once, and use
``transform`` to turn images into feature probabilities.
"""

import os

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from scipy.optimize import linear_sum_assignment  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402

from sklearn_ibp import NoisyOrHierarchy  # noqa: E402
from sklearn_ibp.datasets import BLOCK_COMBINATIONS, make_correlated_block_images  # noqa: E402

# With SKLEARN_IBP_QUICK_EXAMPLES=1 (the test suite sets it) every size is cut down so
# that the script runs in seconds; the results then mean little.
QUICK = os.environ.get("SKLEARN_IBP_QUICK_EXAMPLES") == "1"
n_images = 150 if QUICK else 700

# %%
# The data
# --------
# 700 images of 6x6 pixels, as in Doshi-Velez 2009, sec. 7.2.1. ``Z`` says which shapes an image
# contains, ``A`` holds the four shapes and ``C`` says which of the nine combinations an image took
# (one each). The noise has standard deviation 0.5.

X, Z, A, C = make_correlated_block_images(n_images, random_state=0)
combinations = np.array(BLOCK_COMBINATIONS)
print(f"X: {X.shape}; images per combination: {C.sum(axis=0)}")

# %%
# Fit the DP-IBP
# --------------
# ``upper="dp"`` puts every image in one category (a Dirichlet process, a clustering);
# ``link="or"`` gives an image exactly the features its category links. The default
# ``likelihood="auto"`` sees non-negative shapes over a zero background and chooses
# ``"exponential"`` (``model.likelihood_``): the features are non-negative, as the
# shapes are. The
# hyperparameters (the two concentrations, the noise level and the rate of the features)
# are resampled at every sweep. The first half of the 200 sweeps is burn-in, and the
# fitted attributes come from the kept sample with the highest log joint probability.

model = NoisyOrHierarchy(
    upper="dp", link="or", n_iter=20 if QUICK else 200, random_state=0,
).fit(X)
print(f"likelihood: {model.likelihood_}, features: {model.n_components_}, "
      f"categories: {model.n_categories_}, "
      f"motifs: {len(model.motifs_)}, sigma_x: {model.likelihood_params_['sigma_x']:.3f}")


def match_features(true_features, fitted_features):
    """Pair true shapes with fitted features one-to-one by correlation.

    Returns the matched shapes (all of them, unless fewer features were fitted), the
    fitted features in the order of those shapes followed by the unmatched ones, and the
    correlations (true shape, fitted feature)."""
    n_true = len(true_features)
    corr = np.corrcoef(np.vstack([true_features, fitted_features]))[:n_true, n_true:]
    shapes, features = linear_sum_assignment(-np.nan_to_num(corr))
    order = list(features) + [k for k in range(len(fitted_features)) if k not in features]
    return shapes, np.array(order), corr


shapes, order, corr = match_features(A, model.components_)
print("correlation of each true shape with its fitted feature:",
      np.round(corr[shapes, order[: len(shapes)]], 3))


def show_features(axes_row, features, titles):
    for ax, feature, title in zip(axes_row, features, titles, strict=False):
        ax.imshow(feature.reshape(6, 6), cmap="gray", interpolation="nearest")
        ax.set_title(title, fontsize=9)


n_cols = max(len(A), model.n_components_)
fig, axes = plt.subplots(2, n_cols, figsize=(1.8 * n_cols, 3.8), squeeze=False)
show_features(axes[0], A, [f"shape {k}" for k in range(len(A))])
show_features(axes[1], model.components_[order], [f"feature {k}" for k in order])
for ax in axes.ravel():
    ax.set_xticks([])
    ax.set_yticks([])
    if not ax.images:
        ax.set_axis_off()
axes[0, 0].set_ylabel("true")
axes[1, 0].set_ylabel("fitted")
fig.suptitle("The four shapes and the DP-IBP's features (components_)")
fig.tight_layout()

# %%
# Motifs: which features go together
# -----------------------------------
# ``connections_`` (the matrix ``M``) says which features each category links. Several
# categories may link the same set of features: the likelihood cannot tell them apart,
# and the Dirichlet process is free to hold such replicas. ``motifs_`` therefore lists the
# *distinct* link sets, most used first, and ``motif_counts_`` the training images in
# the categories of each. Left, the nine true combinations and how many images took each;
# right, the fitted motifs, with the feature columns in the order of the true shapes and
# the rows in the order of the combinations they match. The empty motif is the "null
# cluster" of images that hold no shape: the hierarchy finds it without a parameter of
# its own. A motif that only one or two images use, if there is one, holds an extra
# feature that the chain has not dropped yet.

motifs = model.motifs_[:, order]
rank = [next((i for i, c in enumerate(combinations)
              if motif.size >= c.size and np.array_equal(motif[: c.size], c)
              and not motif[c.size:].any()), len(combinations))
        for motif in motifs]
rows = np.argsort(rank, kind="stable")

fig, (ax_true, ax_fit) = plt.subplots(1, 2, figsize=(7, 4.2))
ax_true.imshow(combinations, cmap="Greys", vmin=0, vmax=1.4, aspect="auto")
ax_true.set_yticks(range(len(combinations)), [f"{n} images" for n in C.sum(axis=0)])
ax_true.set_xticks(range(len(A)), [f"shape {k}" for k in range(len(A))], rotation=45)
ax_true.set_title("true combinations")
ax_fit.imshow(motifs[rows], cmap="Greys", vmin=0, vmax=1.4, aspect="auto")
ax_fit.set_yticks(range(len(rows)), [f"{n} images" for n in model.motif_counts_[rows]])
ax_fit.set_xticks(range(len(order)), [f"feature {k}" for k in order], rotation=45)
ax_fit.set_title("fitted motifs_ (rows reordered)")
fig.tight_layout()

# %%
# The traces
# ----------
# ``traces_`` holds one value per sweep (and per chain). The number of features is at
# four, or one more, from the first sweeps on: now and then an extra feature (a copy of a
# shape, or a faint feature that few images use) is created and later dropped again. The
# number of categories does not settle at nine: it keeps wandering above. Most
# combinations sit in one big category each, but beside them sit copies: small categories
# of a few images with the same links as a big one, and sometimes a big category split in
# two (print ``model.categories_.sum(axis=0)`` and ``model.connections_``). The
# likelihood cannot tell copies apart, the concentration ``alpha_categories``, resampled
# at every sweep, grows with the number of categories, and a Gibbs sampler that moves one
# image at a time empties a copy only slowly. The copies do not change what the model
# says about the images, which the motifs show, but they are the mixing problem Doshi-Velez
# (2009, sec. 7.2.3 and 7.4) reports for these models: read ``motifs_`` rather than
# ``n_categories_``, and run several chains (``n_chains``) or more sweeps when the counts
# matter.

fig, (ax_k, ax_l) = plt.subplots(1, 2, figsize=(9, 3))
ax_k.plot(model.traces_["n_features"][0])
ax_k.axhline(len(A), color="k", linestyle="--", linewidth=1, label="true")
ax_k.set_ylabel("features")
ax_l.plot(model.traces_["n_categories"][0])
ax_l.axhline(len(combinations), color="k", linestyle="--", linewidth=1, label="true")
ax_l.set_ylabel("categories")
for ax in (ax_k, ax_l):
    ax.axvline(model.n_iter // 2, color="0.6", linestyle=":")
    ax.set_xlabel("sweep")
    ax.legend(loc="lower right")
fig.tight_layout()

# %%
# Overlapping combinations: the noisy-or IBP-IBP
# ----------------------------------------------
# With ``overlap=True`` every combination is present in an image independently (with
# probability 0.2), so an image may hold several combinations, and the union of their
# shapes. A clustering cannot describe this; ``upper="ibp"`` lets an image belong to
# several categories, and ``link="noisy_or"`` lets a category switch on each of its
# features only most of the time (each active parent fails with probability ``q``). The
# chain starts with ``init_iter`` sweeps of the DP-IBP and of the IBP-IBP before the
# noisy-or model, as Doshi-Velez (2009) initialises richer models from simpler ones. ``q`` is
# resampled too; these images were made with the plain "or", so it should end near zero,
# where the noisy-or becomes the IBP-IBP.

X2, Z2, A2, C2 = make_correlated_block_images(n_images, overlap=True, random_state=0)
print("images holding 0, 1, 2, ... combinations:", np.bincount(C2.sum(axis=1)))
noisy = NoisyOrHierarchy(
    upper="ibp", link="noisy_or", likelihood="exponential", n_iter=10 if QUICK else 100,
    init_iter=5 if QUICK else 20, random_state=0,
).fit(X2)
print(f"features: {noisy.n_components_}, categories: {noisy.n_categories_}, "
      f"q: {noisy.q_:.3f}")

shapes2, order2, corr2 = match_features(A2, noisy.components_)
n_cols = max(len(A2), noisy.n_components_)
fig, axes = plt.subplots(2, n_cols, figsize=(1.6 * n_cols, 3.6), squeeze=False)
show_features(axes[0], A2, [f"shape {k}" for k in range(len(A2))])
show_features(axes[1], noisy.components_[order2], [f"feature {k}" for k in order2])
for ax in axes.ravel():
    ax.set_xticks([])
    ax.set_yticks([])
    if not ax.images:
        ax.set_axis_off()
fig.suptitle("Overlapping combinations: the noisy-or IBP-IBP's features")
fig.tight_layout()

# %%
# The shapes are found again, and usually a few features more: composites of shapes that
# occur together in a combination, or copies of a shape. These "ghosts" and replicas are
# the common failure of samplers of IBP-like models that Doshi-Velez (2009, sec. 7.2.3) describes;
# they tend to disappear with more sweeps, but slowly, and they do not keep the model
# from reconstructing the images. An image may now be in several categories, so the
# ``motif_counts_`` add up to more than the number of images. Memberships of categories
# that link nothing change no feature: the data say nothing about them, and they come and
# go with the prior.

names = [f"shape {k}" for k in shapes2]
names += [f"extra {k}" for k in order2[len(shapes2):]]
print("correlation of each true shape with its fitted feature:",
      np.round(corr2[shapes2, order2[: len(shapes2)]], 3))
for motif, count in zip(noisy.motifs_[:, order2], noisy.motif_counts_, strict=True):
    linked = [name for name, m in zip(names, motif, strict=True) if m] or ["nothing"]
    print(f"{count:4d} memberships: {' + '.join(linked)}")

# %%
# Images as feature probabilities
# -------------------------------
# ``transform`` returns, for each new image, the posterior probability that it has each
# fitted feature, with the categories, links and features held at the fitted sample. For
# the DP-IBP this is exact (it enumerates the fitted categories) and deterministic. Here it
# recovers which shapes held-out images contain, and the probabilities are the inputs of
# a classifier that predicts the combination an image was drawn from.

X_new, Z_new, _, C_new = make_correlated_block_images(60 if QUICK else 300, random_state=1)
P_new = model.transform(X_new)[:, order[: len(shapes)]]
print(f"held-out shapes identified: {np.mean((P_new > 0.5) == Z_new[:, shapes]):.3f} "
      "of the entries")

clf = LogisticRegression(max_iter=1000).fit(model.transform(X), C.argmax(axis=1))
print(f"combination predicted from the feature probabilities: "
      f"{clf.score(model.transform(X_new), C_new.argmax(axis=1)):.3f} accuracy on held-out images")

# %%
# ``transform`` also takes ``NaN`` for missing pixels: a row's probabilities then use its
# observed pixels only, and ``inverse_transform`` maps them back to pixels, the missing
# ones included. We compare them with the noise-free images.

X_holes = X_new.copy()
X_holes[np.random.default_rng(0).random(X_holes.shape) < 0.3] = np.nan
X_filled = model.inverse_transform(model.transform(X_holes))
missing = np.isnan(X_holes)
print(f"mean squared error on the missing pixels: "
      f"{np.mean((X_filled[missing] - (Z_new @ A)[missing]) ** 2):.3f}")

plt.show()
