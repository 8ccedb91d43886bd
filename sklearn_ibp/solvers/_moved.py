"""The solver modules' old paths (before the solvers were grouped by model), kept for one
release: ``import sklearn_ibp.solvers.accelerated`` and
``from sklearn_ibp.solvers.slice import SliceIBP`` still work, warn once with a
``FutureWarning`` naming the new path, and give the new module itself (same objects).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

from ..exceptions import warn_at_caller

#: Old module name under ``sklearn_ibp.solvers`` -> its path now, relative to it.
MOVED_MODULES = {
    "accelerated": "ibp.accelerated",
    "collapsed": "ibp.collapsed",
    "ibp_split_merge": "ibp.ibp_split_merge",
    "semi_collapsed": "ibp.semi_collapsed",
    "uncollapsed": "ibp.uncollapsed",
    "approximate_gibbs": "ibp_explicit.approximate_gibbs",
    "map_climb": "ibp_explicit.map_climb",
    "metropolis": "ibp_explicit.metropolis",
    "particle": "ibp_explicit.particle",
    "semi_ordered_slice": "ibp_explicit.semi_ordered_slice",
    "slice": "ibp_explicit.slice",
    "tempering": "ibp_explicit.tempering",
    "truncated_gibbs": "ibp_explicit.truncated_gibbs",
    "dp_auxiliary": "dp.dp_auxiliary",
    "dp_collapsed": "dp.dp_collapsed",
    "dp_gibbs": "dp.dp_gibbs",
    "dp_metropolis": "dp.dp_metropolis",
    "dp_no_gaps": "dp.dp_no_gaps",
    "dp_retrospective": "dp.dp_retrospective",
    "dp_slice": "dp.dp_slice",
    "dp_split_merge": "dp.dp_split_merge",
    "dp_truncated": "dp.dp_truncated",
    "hierarchy_gibbs": "hierarchy.hierarchy_gibbs",
    "ddibp_gibbs": "ddibp.ddibp_gibbs",
    "eba_slice": "eba.eba_slice",
}

_PACKAGE = __name__.rpartition(".")[0]


def import_moved(name):
    """The module that ``sklearn_ibp.solvers.<name>`` (an old path) now is, with a warning."""
    new = f"{_PACKAGE}.{MOVED_MODULES[name]}"
    warn_at_caller(
        f"{_PACKAGE}.{name} is deprecated and will be removed in the next release: "
        f"import from {new} (or from {_PACKAGE}) instead.",
        FutureWarning,
    )
    return importlib.import_module(new)


class MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolves the old paths of :data:`MOVED_MODULES` to the modules at their new paths."""

    def find_spec(self, fullname, path=None, target=None):
        parent, _, name = fullname.rpartition(".")
        if parent != _PACKAGE or name not in MOVED_MODULES:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        return None  # a placeholder module, replaced by exec_module

    def exec_module(self, module):
        # The import system reads sys.modules back after exec_module, so the old name
        # then resolves to the new module object itself.
        name = module.__name__.rpartition(".")[2]
        sys.modules[module.__name__] = import_moved(name)


def install():
    """Add the finder once (after the regular finders, which no longer find these names)."""
    if not any(isinstance(finder, MovedModuleFinder) for finder in sys.meta_path):
        sys.meta_path.append(MovedModuleFinder())
