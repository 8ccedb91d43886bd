"""
==================================================
Choice with latent aspects: the Paris-Rome example
==================================================

Tversky's Paris-Rome example (Görür 2007, sec. 4.5.3, Table 4.1): four trips, P+ and P to
Paris, R and R+ to Rome, the "+" trips with a small bonus. P+ always beats P and R+
always beats R, yet Paris and Rome are equally liked, so P+ beats R only barely: a
pattern the Bradley-Terry-Luce model, which gives each trip one strength, cannot
produce. :class:`~sklearn_ibp.InfiniteEBA` infers latent aspects shared by the trips
from 100 comparisons per pair and predicts the choice probabilities.

Left: Table 4.1. Middle: the posterior mean predicted probabilities. Right: one sampled
aspect matrix, each aspect shaded by its weight (as in Görür 2007, figs. 4.14-4.15): the first four
columns are the unique aspects, the others the IBP's aspects.
"""

import os

import matplotlib.pyplot as plt
import numpy as np

from sklearn_ibp import InfiniteEBA
from sklearn_ibp.datasets import PARIS_ROME_ALTERNATIVES, PARIS_ROME_TABLE, make_paris_rome

# With SKLEARN_IBP_QUICK_EXAMPLES=1 (the test suite sets it) the chain is shortened.
QUICK = os.environ.get("SKLEARN_IBP_QUICK_EXAMPLES") == "1"
n_iter = 300 if QUICK else 2000

X, y, P = make_paris_rome(n_comparisons=100, random_state=0)
model = InfiniteEBA(n_iter=n_iter, random_state=0).fit(X, y)
predicted = model.choice_probabilities_
upper = np.triu_indices(4, 1)
print("largest error against Table 4.1:",
      round(float(np.abs(predicted - PARIS_ROME_TABLE)[upper].max()), 3))

weighted = np.column_stack([
    np.diag(model.unique_weights_),  # the unique aspects
    model.aspects_ * model.weights_,  # the IBP's aspects, shaded by weight
])

fig, axes = plt.subplots(1, 3, figsize=(12, 3.8))
for ax, matrix, title in zip(axes[:2], (PARIS_ROME_TABLE, predicted),
                             ("Table 4.1", "predicted (posterior mean)"), strict=True):
    image = ax.imshow(matrix, vmin=0, vmax=1, cmap="viridis")
    ax.set_title(title)
    ax.set_xticks(range(4), PARIS_ROME_ALTERNATIVES)
    ax.set_yticks(range(4), PARIS_ROME_ALTERNATIVES)
    ax.set_xlabel("over")
    ax.set_ylabel("chosen")
    for i in range(4):
        for j in range(4):
            ax.text(j, i, f"{matrix[i, j]:.2f}", ha="center", va="center", color="w")
fig.colorbar(image, ax=axes[:2], shrink=0.8)
axes[2].imshow(weighted, cmap="gray_r", aspect="auto")
axes[2].set_title("sampled aspects x weights")
axes[2].set_yticks(range(4), PARIS_ROME_ALTERNATIVES)
axes[2].set_xlabel("aspect (first four: unique)")
plt.show()
