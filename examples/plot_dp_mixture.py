"""
=========================================================
Clustering and density estimation with a DP mixture
=========================================================

:class:`~sklearn_ibp.DPMixture` learns the number of clusters. Here it meets five
Gaussian clusters of different shapes and sizes in two dimensions. We look at the clusters
it finds, at its predictive density, and compare the density on held-out points with
scikit-learn's variational :class:`~sklearn.mixture.BayesianGaussianMixture`.
"""

import os

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.metrics import adjusted_rand_score  # noqa: E402
from sklearn.mixture import BayesianGaussianMixture  # noqa: E402

from sklearn_ibp import DPMixture  # noqa: E402

# With SKLEARN_IBP_QUICK_EXAMPLES=1 (the test suite sets it) every size is cut down so
# that the script runs in seconds; the results then mean little.
QUICK = os.environ.get("SKLEARN_IBP_QUICK_EXAMPLES") == "1"

# %%
# Data: five clusters
# -------------------
# Different sizes, spreads and orientations; 600 points to fit and 600 held out.

rng = np.random.default_rng(0)
centers = np.array([[0, 0], [6, 1], [2, 6], [-5, 4], [8, 7]], dtype=float)
sizes = np.array([400, 250, 200, 250, 100]) // (5 if QUICK else 1)
rows, truth = [], []
for k, (center, size) in enumerate(zip(centers, sizes, strict=True)):
    A = rng.normal(size=(2, 2)) * rng.uniform(0.4, 1.2)
    rows.append(center + rng.standard_normal((size, 2)) @ A)
    truth.append(np.full(size, k))
X_all, y_all = np.vstack(rows), np.concatenate(truth)
order = rng.permutation(len(X_all))
n_train = len(X_all) // 2
X, y = X_all[order[:n_train]], y_all[order[:n_train]]
X_test = X_all[order[n_train:]]

# %%
# Fit the DP mixture
# ------------------
# The defaults: the conditionally conjugate base (independent Normal mean and Wishart
# precision) with its hyperpriors, and Neal's auxiliary-component sampler. ``alpha`` and
# the base's hyperparameters are resampled at every sweep. ``labels_`` is the partition
# that minimises the posterior expected variation of information to the kept samples.

model = DPMixture(n_iter=20 if QUICK else 300, random_state=0).fit(X)
print(f"clusters found: {model.n_components_}; adjusted Rand index against the truth: "
      f"{adjusted_rand_score(y, model.labels_):.3f}")
# scikit-learn's variational DP mixture needs an upper bound on the number of clusters
# (its default is a single component); we give it ten.
bgm = BayesianGaussianMixture(n_components=10, max_iter=50 if QUICK else 500,
                              weight_concentration_prior_type="dirichlet_process",
                              random_state=0).fit(X)
print(f"held-out mean log density: DPMixture {model.score(X_test):.3f}, "
      f"BayesianGaussianMixture {bgm.score(X_test):.3f}")

# %%
# The number of clusters along the chain
# --------------------------------------
# The chain starts over-segmented (k-means with a dozen clusters) and settles within a
# few sweeps; the trace is the number of occupied clusters at every sweep.

fig, ax = plt.subplots(figsize=(6, 2.5))
ax.plot(model.traces_["n_clusters"][0])
ax.axvline(model.n_iter // 2, color="0.6", linestyle=":", label="end of burn-in")
ax.set_xlabel("sweep")
ax.set_ylabel("clusters")
ax.legend()
fig.tight_layout()

# %%
# Clusters and predictive density
# -------------------------------
# Left: the point estimate of the clusters. Right: the log of the posterior predictive
# density, averaged over the kept samples (12 nats below its peak and up), with the
# held-out points.

n_grid = 30 if QUICK else 120
grid_x, grid_y = np.meshgrid(np.linspace(-9, 12, n_grid), np.linspace(-4, 11, 3 * n_grid // 4))
grid = np.column_stack([grid_x.ravel(), grid_y.ravel()])
log_density = model.score_samples(grid).reshape(grid_x.shape)

fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharex=True, sharey=True)
axes[0].scatter(X[:, 0], X[:, 1], c=model.labels_, s=8, cmap="tab10")
axes[0].set_title(f"DPMixture: {model.n_components_} clusters")
levels = np.linspace(log_density.max() - 12, log_density.max(), 13)
filled = axes[1].contourf(grid_x, grid_y, log_density, levels=levels, cmap="Blues",
                          extend="min")
axes[1].scatter(X_test[:, 0], X_test[:, 1], s=2, color="C3", alpha=0.5)
axes[1].set_title("log predictive density; held-out points in red")
fig.colorbar(filled, ax=axes[1])
fig.tight_layout()
plt.show()
