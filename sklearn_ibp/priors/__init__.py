"""Priors over binary feature matrices and partitions (no data involved).

Each module's public names (its ``__all__``) are importable from here: :mod:`.crp` (the
Chinese restaurant process), :mod:`.ddibp` (the distance-dependent IBP), :mod:`.hierarchy`
(the correlated feature hierarchies) and :mod:`.ibp` (the one- and two-parameter IBP and
the truncation bounds of its stick-breaking form).
"""

from . import crp, ddibp, hierarchy, ibp
from .crp import *  # noqa: F403
from .ddibp import *  # noqa: F403
from .hierarchy import *  # noqa: F403
from .ibp import *  # noqa: F403

__all__ = [*crp.__all__, *ddibp.__all__, *hierarchy.__all__, *ibp.__all__]
