"""
=====================================================
Variational inference: a lower bound that converges
=====================================================

``solver="variational"`` fits the IBP by coordinate ascent of an evidence lower bound
(ELBO) instead of sampling (Doshi-Velez 2009, ch. 6): the posterior over the sticks, the
features and the assignments is approximated by a fully factorised distribution,
truncated at ``max_features`` features. Every update raises the bound, so its trace says
when the fit has converged; each restart (by default alternately a greedy start, which
adds features one at a time, and a random one) ends in a local optimum, and the
estimator keeps the restart with the highest bound.

Here both variational solvers and the accelerated Gibbs sampler are fitted to the block
images: the ELBO traces, and the features each found.
"""

import os

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from sklearn_ibp import IBPFactorAnalysis  # noqa: E402
from sklearn_ibp.datasets import make_block_images  # noqa: E402
from sklearn_ibp.solvers import FiniteVariationalIBP, VariationalIBP  # noqa: E402

QUICK = os.environ.get("SKLEARN_IBP_QUICK_EXAMPLES") == "1"
n_samples, n_init, n_iter = (100, 2, 30) if QUICK else (300, 10, 300)

X, Z, A = make_block_images(n_samples=n_samples, noise=0.5, random_state=0)

# %%
# Fits
# ----
# The variational solvers take their truncation, restarts and tolerance as parameters.

models = {
    "variational": IBPFactorAnalysis(
        solver=VariationalIBP(max_features=8, n_init=n_init), random_state=0).fit(X),
    "finite_variational": IBPFactorAnalysis(
        solver=FiniteVariationalIBP(max_features=8, n_init=n_init), random_state=0).fit(X),
    "accelerated": IBPFactorAnalysis(n_iter=n_iter, random_state=0).fit(X),
}
for name, model in models.items():
    extra = (f", ELBO {model.elbo_:.1f} after {model.n_iter_} iterations "
             f"({model.elbo_time_[-1]:.2f} s)" if hasattr(model, "elbo_") else "")
    print(f"{name}: K = {model.n_components_}{extra}")

# %%
# The bound rises at every iteration
# ----------------------------------
# The kept restart's ELBO after each iteration; the fit stops when its relative change
# falls below ``tol`` (1e-4).

fig, ax = plt.subplots(figsize=(5, 3))
for name in ("variational", "finite_variational"):
    trace = models[name].elbo_trace_
    ax.plot(np.arange(1, trace.size + 1), trace, marker=".", label=name)
ax.set_xlabel("iteration")
ax.set_ylabel("evidence lower bound")
ax.legend()
fig.tight_layout()

# %%
# The features found
# ------------------
# The mean of each feature under the fit (the accelerated sampler's posterior mean given
# its best sample), as 6x6 images, next to the four true shapes.

rows = {"true": A, **{name: model.components_ for name, model in models.items()}}
n_cols = max(len(f) for f in rows.values())
fig, axes = plt.subplots(len(rows), n_cols, figsize=(1.1 * n_cols, 1.2 * len(rows)),
                         squeeze=False)
for ax_row, (label, features) in zip(axes, rows.items(), strict=True):
    for ax in ax_row:
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_frame_on(False)
    for ax, feature in zip(ax_row, features, strict=False):
        ax.imshow(feature.reshape(6, 6), cmap="gray", interpolation="nearest")
    ax_row[0].set_ylabel(label, fontsize=8)
fig.suptitle("Features: truth, variational, finite variational, Gibbs")
fig.tight_layout()
plt.show()
