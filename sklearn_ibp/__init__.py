"""sklearn_ibp: Bayesian nonparametric latent feature models with a scikit-learn API.

The number of latent features is learned from the data. Estimators follow the
scikit-learn contract (``fit``/``transform``/``score``, ``Pipeline``, ``GridSearchCV``);
their samplers run in numba-compiled kernels. The public estimators are those of
:mod:`sklearn_ibp.estimators` (its ``__all__``).
"""

from . import estimators
from .estimators import *  # noqa: F403

__version__ = "0.1.0.dev0"

__all__ = [*estimators.__all__, "__version__"]
