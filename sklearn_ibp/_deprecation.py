"""Deprecated names kept for one release: old class names and old option strings.

Issue 21 renamed solver classes, registry keys and likelihood options so that a name says
what a thing is and is unique within its model (doc/choosing_solver.rst, "Names"). The old
names still work for one release and say, with a ``FutureWarning``, which name replaces them:

- an old class name (:data:`RENAMED_CLASSES`) stays importable from the modules it was
  importable from: each defines ``__getattr__ = class_aliases(__name__)``, which resolves
  the old names of the classes that module holds;
- an old option string (``likelihood="bernoulli"``, ``solver="map"``) is accepted by the
  estimator and mapped by :func:`renamed_option`.

Nothing here imports the rest of the package but :mod:`sklearn_ibp.exceptions`.
"""

from __future__ import annotations

import sys

from .exceptions import warn_at_caller

#: The release in which the deprecated names go away.
REMOVED_IN = "0.2"

#: Old class names of the solvers (before issue 21) and their new names.
RENAMED_CLASSES = {
    "AcceleratedGibbs": "AcceleratedIBP",
    "CollapsedGibbs": "CollapsedIBP",
    "UncollapsedGibbs": "UncollapsedIBP",
    "SemiCollapsedGibbs": "SemiCollapsedIBP",
    "SliceSampler": "SliceIBP",
    "SemiOrderedSliceSampler": "SemiOrderedSliceIBP",
    "TruncatedGibbs": "TruncatedGibbsIBP",
    "ApproximateGibbs": "ApproximateGibbsIBP",
    "MetropolisGibbs": "MetropolisIBP",
    "ParticleFilter": "ParticleIBP",
    "ParallelTempering": "TemperingIBP",
    "MapClimb": "MapClimbIBP",
    "ParallelAccelerated": "ParallelAcceleratedIBP",
    "ParallelNoisyOr": "ParallelNoisyOrIBP",
    "CollapsedDPGibbs": "CollapsedDP",
    "DistanceDependentGibbs": "GibbsDDIBP",
    "HierarchyGibbs": "GibbsHierarchy",
    "EBASliceSampler": "SliceEBA",
}


def renamed_option(value, renamed: dict, argument: str, *, warn: bool = True):
    """The current name of an option value: ``renamed[value]`` when ``value`` is an old
    name (warning with a ``FutureWarning`` naming ``argument`` and the new value when
    ``warn``), else ``value`` unchanged (any non-string value included)."""
    if not isinstance(value, str) or value not in renamed:
        return value
    new = renamed[value]
    if warn:
        warn_at_caller(
            f"{argument}={value!r} is deprecated and will be removed in {REMOVED_IN}; "
            f"use {argument}={new!r}, its new name.",
            FutureWarning,
        )
    return new


def class_aliases(module_name: str):
    """A module ``__getattr__`` resolving the old names (:data:`RENAMED_CLASSES`) of the
    classes the module holds to those classes, with a ``FutureWarning`` naming the new
    one; any other missing name raises ``AttributeError`` as usual."""

    def __getattr__(name):
        module = sys.modules[module_name]
        new = RENAMED_CLASSES.get(name)
        if new is not None and new in vars(module):
            warn_at_caller(
                f"{name} is deprecated and will be removed in {REMOVED_IN}; use {new} "
                "(the same class, renamed).",
                FutureWarning,
            )
            return vars(module)[new]
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")

    return __getattr__
