"""
=====================================================
IBP features as inputs to a classifier in a Pipeline
=====================================================

:class:`~sklearn_ibp.IBPFactorAnalysis` is a scikit-learn transformer. Its ``transform``
returns each row's posterior feature probabilities, so it can sit in a
:class:`~sklearn.pipeline.Pipeline` between a scaler and a classifier. Here we estimate
the accuracy of that pipeline on the breast cancer data set with 3-fold cross-validation.
"""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from sklearn.datasets import load_breast_cancer  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import cross_val_score  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from sklearn_ibp import IBPFactorAnalysis  # noqa: E402

# %%
# Build the pipeline and cross-validate it
# ----------------------------------------

X, y = load_breast_cancer(return_X_y=True)
model = Pipeline(
    [
        ("scale", StandardScaler()),
        ("ibp", IBPFactorAnalysis(n_iter=50, random_state=0)),
        ("clf", LogisticRegression(max_iter=1000)),
    ]
)
scores = cross_val_score(model, X, y, cv=3)
print(f"accuracy per fold: {scores.round(3)}")
print(f"mean accuracy: {scores.mean():.3f}")

# %%
# Accuracy per fold
# -----------------

fig, ax = plt.subplots(figsize=(4, 3))
ax.bar([f"fold {i}" for i in range(len(scores))], scores)
ax.axhline(scores.mean(), color="k", linestyle="--", label=f"mean {scores.mean():.3f}")
ax.set_ylim(0, 1)
ax.set_ylabel("accuracy")
ax.legend(loc="lower right")
fig.tight_layout()
plt.show()
