"""Observation models: given the binary feature matrix Z (the IBP models), and the
component models with their base distributions (the DP mixtures)."""

from .conditionally_conjugate import ConditionallyConjugateBase
from .exponential import ExponentialGaussian
from .factor_analyzer import FactorAnalyzerBase
from .leaky_noisy_or import LeakyNoisyOr
from .linear_gaussian import (
    LinearGaussianFeatures,
    feature_posterior,
    information_form,
    log_marginal_likelihood,
    log_marginal_likelihood_from_stats,
    row_log_predictive,
    sample_features,
)
from .noisy_or import BinaryDetection
from .normal_wishart import NormalWishartBase
from .real_weighted import RealWeightedGaussian

__all__ = [
    "BinaryDetection",
    "ConditionallyConjugateBase",
    "ExponentialGaussian",
    "FactorAnalyzerBase",
    "LeakyNoisyOr",
    "LinearGaussianFeatures",
    "NormalWishartBase",
    "RealWeightedGaussian",
    "feature_posterior",
    "information_form",
    "log_marginal_likelihood",
    "log_marginal_likelihood_from_stats",
    "row_log_predictive",
    "sample_features",
]
