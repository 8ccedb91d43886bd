"""Priors over binary feature matrices and partitions (no data involved)."""

from .crp import crp_log_prob, expected_n_clusters, sample_alpha_posterior_crp, sample_crp
from .ddibp import (
    compute_reachability,
    ddibp_log_prob,
    decay_proximity,
    inherit_features,
    normalized_proximity,
    pairwise_distances_for_ddibp,
    sample_ddibp,
)
from .hierarchy import (
    expected_n_categories,
    expected_n_features_hierarchy,
    feature_count_bound,
    hierarchy_log_prob,
    sample_hierarchy,
)
from .ibp import (
    existing_feature_log_odds,
    expected_n_features,
    ibp_log_prob,
    ibp_truncation_bound,
    ibp_truncation_bound_heuristic,
    ibp_truncation_bound_log,
    labelled_ibp_log_prob,
    left_order,
    new_feature_rate,
    sample_alpha_posterior,
    sample_ibp,
    smallest_truncation,
)

__all__ = [
    "crp_log_prob",
    "expected_n_clusters",
    "sample_alpha_posterior_crp",
    "sample_crp",
    "compute_reachability",
    "ddibp_log_prob",
    "decay_proximity",
    "inherit_features",
    "normalized_proximity",
    "pairwise_distances_for_ddibp",
    "sample_ddibp",
    "expected_n_categories",
    "expected_n_features_hierarchy",
    "feature_count_bound",
    "hierarchy_log_prob",
    "sample_hierarchy",
    "expected_n_features",
    "existing_feature_log_odds",
    "ibp_log_prob",
    "labelled_ibp_log_prob",
    "left_order",
    "new_feature_rate",
    "sample_alpha_posterior",
    "sample_ibp",
    "ibp_truncation_bound",
    "ibp_truncation_bound_heuristic",
    "ibp_truncation_bound_log",
    "smallest_truncation",
]
