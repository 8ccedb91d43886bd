"""Samplers of the Dirichlet process mixtures: Neal's algorithms, split-merge and the
stick-breaking samplers (Görür 2007, ch. 3), with their shared base (``MixtureState``)."""

from ..._deprecation import class_aliases
from ._dp_base import BaseDPSolver, MixtureState
from .dp_auxiliary import AuxiliaryDP
from .dp_collapsed import CollapsedDP
from .dp_gibbs import GibbsDP
from .dp_metropolis import MetropolisDP
from .dp_no_gaps import NoGapsDP
from .dp_retrospective import RetrospectiveDP
from .dp_slice import SliceDP
from .dp_split_merge import SplitMergeDP
from .dp_subcluster import SubclusterDP
from .dp_truncated import TruncatedDP

__all__ = [
    "AuxiliaryDP",
    "BaseDPSolver",
    "CollapsedDP",
    "GibbsDP",
    "MetropolisDP",
    "MixtureState",
    "NoGapsDP",
    "RetrospectiveDP",
    "SliceDP",
    "SplitMergeDP",
    "SubclusterDP",
    "TruncatedDP",
]

#: Old class names (before issue 21), importable with a FutureWarning naming the new one.
__getattr__ = class_aliases(__name__)
