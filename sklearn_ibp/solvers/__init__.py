"""Inference algorithms for the IBP latent feature models, one module each."""

from ._base import BaseIBPSolver, FeatureState
from .accelerated import AcceleratedGibbs
from .collapsed import CollapsedGibbs
from .ddibp_gibbs import DistanceDependentGibbs
from .semi_collapsed import SemiCollapsedGibbs
from .uncollapsed import UncollapsedGibbs

#: Solver names accepted by ``IBPFactorAnalysis(solver=...)``.
SOLVERS = {
    "accelerated": AcceleratedGibbs,
    "collapsed": CollapsedGibbs,
    "uncollapsed": UncollapsedGibbs,
    "semi_collapsed": SemiCollapsedGibbs,
}

__all__ = [
    "SOLVERS",
    "AcceleratedGibbs",
    "BaseIBPSolver",
    "CollapsedGibbs",
    "DistanceDependentGibbs",
    "FeatureState",
    "SemiCollapsedGibbs",
    "UncollapsedGibbs",
]
