"""Observation models given the binary feature matrix Z."""

from .linear_gaussian import (
    feature_posterior,
    information_form,
    log_marginal_likelihood,
    log_marginal_likelihood_from_stats,
    row_log_predictive,
    sample_features,
)

__all__ = [
    "feature_posterior",
    "information_form",
    "log_marginal_likelihood",
    "log_marginal_likelihood_from_stats",
    "row_log_predictive",
    "sample_features",
]
