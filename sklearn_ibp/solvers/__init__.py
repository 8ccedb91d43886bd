"""Inference algorithms, one sub-package per model family and one module per algorithm,
each beside its numba kernels; this module is the registry of the names ``solver=`` takes.

``ibp/``
    collapsed and uncollapsed Gibbs samplers of the linear-Gaussian IBP model.
``ibp_explicit/``
    IBP samplers that keep the features explicit, for any explicit-feature likelihood.
``variational/``
    mean-field variational inference for the linear-Gaussian IBP model.
``dp/``
    samplers of the Dirichlet process mixtures.
``hierarchy/``, ``ddibp/``, ``eba/``
    the samplers of the feature hierarchies, the distance-dependent IBP and the infinite
    elimination-by-aspects model.
``_draw_kernels.py``, ``_feature_proposal_kernels.py``
    kernels several families share: discrete draws and IBP prior terms; proposals of new
    feature rows and the feature prior.

The data-parallel solvers live in :mod:`sklearn_ibp.distributed`; this registry offers them
as ``PARALLEL_SOLVERS`` (imported on first use).
"""

from .._deprecation import RENAMED_CLASSES as _RENAMED_CLASSES
from .._deprecation import class_aliases
from . import _moved, _protocol, ddibp, dp, eba, hierarchy, ibp, ibp_explicit, variational
from ._protocol import (
    MODELS,
    Solver,
    SolverNameOptions,
    SolverOf,
    _register_lazy,
    check_solver_model,
    get_solver,
    register_solver,
    registered_solvers,
    solver_names,
)
from .ddibp import *  # noqa: F403
from .dp import *  # noqa: F403
from .eba import *  # noqa: F403
from .hierarchy import *  # noqa: F403
from .ibp import *  # noqa: F403
from .ibp_explicit import *  # noqa: F403
from .variational import *  # noqa: F403

_moved.install()

# The registry, keyed by model and name (see _protocol.py): one line per solver.
for _cls in (
    ibp.AcceleratedIBP, ibp.CollapsedIBP, ibp.UncollapsedIBP, ibp.SemiCollapsedIBP,
    ibp_explicit.SliceIBP, ibp_explicit.SemiOrderedSliceIBP, ibp_explicit.TruncatedGibbsIBP,
    ibp_explicit.ApproximateGibbsIBP, ibp_explicit.MetropolisIBP, ibp_explicit.ParticleIBP,
    ibp_explicit.TemperingIBP, ibp_explicit.MapClimbIBP,
    variational.VariationalIBP, variational.FiniteVariationalIBP,
    dp.CollapsedDP, dp.SplitMergeDP, dp.GibbsDP, dp.AuxiliaryDP, dp.NoGapsDP, dp.MetropolisDP,
    dp.SliceDP, dp.TruncatedDP, dp.RetrospectiveDP, dp.SubclusterDP,
    hierarchy.GibbsHierarchy,
    ddibp.GibbsDDIBP,
    eba.SliceEBA,
):
    register_solver(_cls)
# The old name of "map_climb", accepted with a FutureWarning (RENAMED_SOLVERS).
register_solver(ibp_explicit.MapClimbIBP, name="map")
# The data-parallel solvers import the solvers: imported on first look-up.
_register_lazy("ibp", "parallel_accelerated",
               "sklearn_ibp.distributed.parallel_accelerated:ParallelAcceleratedIBP")
_register_lazy("ibp", "parallel_noisy_or",
               "sklearn_ibp.distributed.parallel_noisy_or:ParallelNoisyOrIBP")
del _cls


def _view(model, keep):
    """One of the former per-family dicts: the registry's entries of a family."""
    return {name: cls for name, cls in _protocol._REGISTRY[model].items() if keep(cls)}


# The per-family dicts of earlier releases, kept for compatibility (views of the
# registry, made once): use get_solver(model, name) and solver_names(model).
#: Solver names accepted by ``IBPFactorAnalysis(solver=...)`` that integrate ``A`` out.
SOLVERS = _view("ibp", lambda cls: not (cls.explicit or cls.variational))
#: The IBP samplers that keep ``A`` explicit and serve any explicit-feature likelihood
#: (linear-Gaussian, exponential-Gaussian, binary; Doshi-Velez 2009, sec. 4.2).
EXPLICIT_SOLVERS = _view("ibp", lambda cls: cls.explicit)
#: Mean-field variational inference for the linear-Gaussian model (Doshi-Velez 2009, ch. 6).
VARIATIONAL_SOLVERS = _view("ibp", lambda cls: cls.variational)
#: Solver names accepted by ``DPMixture(solver=...)``.
DP_SOLVERS = _view("dp", lambda cls: True)
#: Solver names accepted by ``DistanceDependentIBP(solver=...)``.
DDIBP_SOLVERS = _view("ddibp", lambda cls: True)
#: Solver names accepted by ``InfiniteEBA(solver=...)``.
EBA_SOLVERS = _view("eba", lambda cls: True)


#: Old ``solver=`` names of ``IBPFactorAnalysis``, kept in the registry (so an old name
#: still finds its solver) and accepted with a FutureWarning until they are removed.
RENAMED_SOLVERS = {"map": "map_climb"}

_renamed_class = class_aliases(__name__)


def dask_row_store(X, client, **options):
    """A :class:`~sklearn_ibp.distributed.dask_rows.DaskRows` store of the ``dask.array``
    ``X`` on ``client`` (``options`` are its keyword arguments): the rows of a
    sub-cluster chain on Dask workers, for ``DPMixture.fit`` of a ``dask.array``. The
    registry is the estimators' one way into :mod:`sklearn_ibp.distributed`, imported
    on first use."""
    from ..distributed.dask_rows import DaskRows

    return DaskRows(X, client, **options)


def __getattr__(name):
    # The parallel solvers import the solvers, so they are imported on first use; the
    # old module paths of the solvers resolve with a FutureWarning (see _moved.py), and
    # so do the old class names (RENAMED_CLASSES).
    if name in RENAMED_CLASSES:
        return _renamed_class(name)
    if name == "PARALLEL_SOLVERS":
        from ..distributed import PARALLEL_SOLVERS

        return PARALLEL_SOLVERS
    if name in _moved.MOVED_MODULES:
        return _moved.import_moved(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# The registry's names, then every family's public names (each family's ``__all__``).
__all__ = [
    "MODELS",
    "Solver",
    "SolverNameOptions",
    "SolverOf",
    "check_solver_model",
    "dask_row_store",
    "get_solver",
    "register_solver",
    "registered_solvers",
    "solver_names",
    "SOLVERS",
    "EXPLICIT_SOLVERS",
    "VARIATIONAL_SOLVERS",
    "DP_SOLVERS",
    "DDIBP_SOLVERS",
    "EBA_SOLVERS",
    "PARALLEL_SOLVERS",  # noqa: F405 (resolved by __getattr__ on first use)
    *ibp.__all__,
    *ibp_explicit.__all__,
    *variational.__all__,
    *dp.__all__,
    *hierarchy.__all__,
    *ddibp.__all__,
    *eba.__all__,
]

#: Old class names (before issue 21) of the solvers exported here, importable with a
#: FutureWarning naming the new one until they are removed.
RENAMED_CLASSES = {old: new for old, new in _RENAMED_CLASSES.items() if new in __all__}
