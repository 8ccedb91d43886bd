"""sklearn_ibp: Bayesian nonparametric latent feature models with a scikit-learn API.

The number of latent features is learned from the data. Estimators follow the
scikit-learn contract (``fit``/``transform``/``score``, ``Pipeline``, ``GridSearchCV``);
their samplers run in numba-compiled kernels.
"""

from .estimators import (
    DistanceDependentIBP,
    DPMixture,
    IBPFactorAnalysis,
    IBPImputer,
    InfiniteEBA,
    NoisyOrHierarchy,
)

__version__ = "0.1.0.dev0"

__all__ = [
    "DPMixture",
    "DistanceDependentIBP",
    "IBPFactorAnalysis",
    "IBPImputer",
    "InfiniteEBA",
    "NoisyOrHierarchy",
    "__version__",
]
