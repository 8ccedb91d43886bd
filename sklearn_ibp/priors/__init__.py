"""Priors over binary feature matrices and partitions (no data involved)."""

from .ibp import (
    existing_feature_log_odds,
    expected_n_features,
    ibp_log_prob,
    left_order,
    new_feature_rate,
    sample_alpha_posterior,
    sample_ibp,
)

__all__ = [
    "expected_n_features",
    "existing_feature_log_odds",
    "ibp_log_prob",
    "left_order",
    "new_feature_rate",
    "sample_alpha_posterior",
    "sample_ibp",
]
