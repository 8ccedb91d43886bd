"""What the data-parallel solvers share: the tree summation of messages, padding of
per-feature arrays, and the cloning and pickling rules of a solver that may hold a Dask
client and an engine."""

from __future__ import annotations

import copy

import numpy as np

__all__ = ["DistributedSolverMixin", "pad_columns", "tree_sum"]


def tree_sum(values):
    """Sum ``values`` pairwise up a binary tree (leaves in order), as the messages of
    sec. 5.1 are summed on their way to the root; one value is returned as it is."""
    values = list(values)
    while len(values) > 1:
        paired = [values[i] + values[i + 1] for i in range(0, len(values) - 1, 2)]
        if len(values) % 2:
            paired.append(values[-1])
        values = paired
    return values[0]


def pad_columns(Z, K):
    """``Z`` with zero columns appended up to ``K``."""
    if Z.shape[1] == K:
        return Z
    out = np.zeros((Z.shape[0], K), dtype=Z.dtype)
    out[:, : Z.shape[1]] = Z
    return out


class DistributedSolverMixin:
    """Cloning, copying and pickling of a data-parallel solver.

    A clone or a copy shares the user's ``client`` (a live connection cannot be copied) and
    never carries the engine (threads or a cluster of this fit); a copy keeps the fitted
    records listed in ``_records``. A pickled solver forgets its client and engine.
    """

    _records = ("timings_", "n_resent_", "acceptance_", "moved_")

    def __sklearn_clone__(self):
        from sklearn.base import clone

        params = self.get_params(deep=False)
        client = params.pop("client")
        return type(self)(client=client, **{k: clone(v, safe=False) for k, v in params.items()})

    def __deepcopy__(self, memo):
        new = self.__sklearn_clone__()
        for name in self._records:
            if hasattr(self, name):
                setattr(new, name, copy.deepcopy(getattr(self, name), memo))
        return new

    def __getstate__(self):
        state = self.__dict__.copy()
        for name in ("_engine", "_placed", "_in_flight", "_flight_owner"):
            state.pop(name, None)
        # A Dask client is a live connection; a pickled solver forgets it.
        state["client"] = None
        return state
