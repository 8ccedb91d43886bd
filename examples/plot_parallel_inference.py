"""
=========================================================
Data-parallel inference: the rows split into shards
=========================================================

:class:`~sklearn_ibp.distributed.ParallelAcceleratedIBP` is the data-parallel accelerated
Gibbs sampler of Doshi-Velez (2009, ch. 5). The rows are split into ``n_shards``
blocks. Between two synchronisations every shard runs accelerated Gibbs sweeps on its
own rows, holding the other shards' rows at their last synchronised state; then the
shards send their sufficient statistics (``m_k``, ``Z^T Z`` and ``Z^T X``) to the root,
which sums them and broadcasts the totals with the next round. Only one shard at a time,
the one holding a token, may create features.

With one shard and ``sweeps_per_sync=1`` it is the serial accelerated sampler, draw for
draw. With more shards it is an approximation: a shard does not see what the others
changed since the last synchronisation. Here the serial sampler and the parallel one
with 1, 2 and 4 shards are fitted to the same block images, on threads of this process
(``backend="threads"``; a Dask cluster is ``backend="dask"``, see :doc:`/parallel`). We
compare their held-out log-likelihood along the chain, their number of features K, and
the features they end with.
"""

import os
import time

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from sklearn_ibp import IBPFactorAnalysis  # noqa: E402
from sklearn_ibp.datasets import make_block_images  # noqa: E402
from sklearn_ibp.distributed import ParallelAcceleratedIBP  # noqa: E402

# With SKLEARN_IBP_QUICK_EXAMPLES=1 (the test suite sets it) every size is cut down so
# that the script runs in seconds; the results then mean little.
QUICK = os.environ.get("SKLEARN_IBP_QUICK_EXAMPLES") == "1"
n_samples, n_iter, step = (300, 20, 5) if QUICK else (2000, 200, 10)

# %%
# Data: block images, a quarter of them held out
# ----------------------------------------------

X, _, A = make_block_images(n_samples=n_samples, noise=0.5, random_state=0)
n_test = n_samples // 4
X_train, X_test = X[:-n_test], X[-n_test:]
print(f"training rows: {X_train.shape[0]}, held-out rows: {X_test.shape[0]}")

# %%
# Fits, scored along the way
# --------------------------
# Each model is fitted ``step`` iterations at a time with ``warm_start=True``, and after
# each stretch scored on the held-out rows: ``score`` is their mean log predictive
# density under the estimate so far (the kept sample with the highest log joint;
# ``burn_in=0`` keeps every sweep). One iteration is one synchronisation of the shards;
# with ``sweeps_per_sync=1`` (the default) it is one sweep over every row, as for the
# serial sampler, so the curves share their x axis. ``sigma_x=1.0`` starts the noise
# level near the images' true 0.5 (it is resampled at every iteration).

solvers = {
    "serial accelerated": "accelerated",
    "1 shard": ParallelAcceleratedIBP(n_shards=1),
    "2 shards": ParallelAcceleratedIBP(n_shards=2),
    "4 shards": ParallelAcceleratedIBP(n_shards=4),
}
models, held_out, seconds = {}, {}, {}
for name, solver in solvers.items():
    model = IBPFactorAnalysis(solver=solver, n_iter=step, burn_in=0, sigma_x=1.0,
                              warm_start=True, random_state=0)
    scores, elapsed = [], 0.0
    for _ in range(n_iter // step):
        start = time.perf_counter()
        model.fit(X_train)
        elapsed += time.perf_counter() - start
        scores.append(model.score(X_test))
    models[name], held_out[name], seconds[name] = model, np.array(scores), elapsed
    print(f"{name:>18}: K = {model.n_components_:2d}, sigma_x = {model.sigma_x_:.3f}, "
          f"held-out log-likelihood {scores[-1]:.3f} per row, fit {elapsed:.1f} s")

# %%
# One shard is the serial sampler
# -------------------------------
# From the same ``random_state``, one shard makes exactly the serial sampler's draws:
# the same trace of K, the same final ``Z``.

same = np.array_equal(models["1 shard"].traces_["n_features"],
                      models["serial accelerated"].traces_["n_features"])
same_Z = np.array_equal(models["1 shard"].Z_, models["serial accelerated"].Z_)
print(f"1 shard == serial: K traces {same}, Z_ {same_Z}")

# %%
# Where the time goes
# -------------------
# The solver of a fitted estimator (``model._solver``) records, for every round, the
# wall-clock seconds of the sampling phase (``"round"``), the slowest shard's own
# computing time (``"compute"``) and the root's summation and broadcast (``"root"``).
# ``round - compute`` is time spent dispatching and waiting. The rest of a fit's time
# (hyperparameters, the log joint of each iteration, the estimate) is spent at the root
# whatever the number of shards. On small data such as these the rounds are a few
# milliseconds and the threads gain little; the sampling phase shrinks with more shards
# only when each shard has thousands of rows and there are cores to run them.

for name in ("1 shard", "2 shards", "4 shards"):
    t = {key: float(np.sum(v)) for key, v in models[name]._solver.timings_.items()}
    print(f"{name:>8}: rounds {t['round']:.2f} s (slowest shard computing "
          f"{t['compute']:.2f} s, root {t['root']:.3f} s) of a {seconds[name]:.1f} s fit")

# %%
# Held-out log-likelihood and K along the chain
# ---------------------------------------------
# The serial curve and the 1-shard curve coincide. With more shards the chains are
# different chains of an approximate sampler, which the thesis found to behave like the
# exact one, with a slight bias toward fewer features: a feature one shard creates
# reaches the others only at the next synchronisation.

iterations = step * np.arange(1, n_iter // step + 1)
styles = {"serial accelerated": dict(color="k", lw=3, alpha=0.35),
          "1 shard": dict(color="k", lw=1, ls="--"),
          "2 shards": dict(color="tab:blue"), "4 shards": dict(color="tab:orange")}
fig, (ax_ll, ax_k) = plt.subplots(1, 2, figsize=(9, 3.4))
for name, model in models.items():
    ax_ll.plot(iterations, held_out[name], marker=".", label=name, **styles[name])
    trace = model.traces_["n_features"][0]
    ax_k.plot(np.arange(1, trace.size + 1), trace, label=name, **styles[name])
ax_ll.set_xlabel("iteration")
ax_ll.set_ylabel("held-out log-likelihood per row")
ax_k.axhline(4, color="gray", lw=0.8, ls=":")
ax_k.set_xlabel("iteration")
ax_k.set_ylabel("number of features K")
ax_k.legend(fontsize=8)
fig.tight_layout()

# %%
# The features found
# ------------------
# The posterior mean of each feature given the estimate, as 6x6 images, next to the four
# true shapes. The model usually adds an offset feature (``fit`` centres the data) and
# may show a shape as its negative; see :doc:`/user_guide`.

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
fig.suptitle("Features: truth, serial, 1, 2 and 4 shards")
fig.tight_layout()
plt.show()
