"""Numba kernels of the dd-IBP prior: who inherits each dish along the links.

Below both the prior (:mod:`sklearn_ibp.priors.ddibp`, which builds ``Z`` from links and
owners) and the dd-IBP sampler's kernels, which recompute one dish's reachable set after a
link move (Gershman, Frazier and Blei, sec. 2.2 and sec. 5).
"""

import numpy as np
from numba import njit


@njit(cache=True)
def compute_reachability(connections, owner):
    """Customers that reach ``owner`` along one dish's links (Gershman et al., sec. 2.2, step 3).

    ``connections[i] = j`` means customer ``i`` links to ``j`` for this dish. Each customer
    has exactly one outgoing link, so following links from ``i`` either arrives at the owner
    or enters a cycle that avoids it. The owner always has the dish and its own outgoing link
    is ignored (footnote 2): the walk stops there. Every customer is visited once, marked
    with the answer on the way back, so the cost is ``O(N)`` time and memory per dish.

    Parameters
    ----------
    connections : int array of shape (n_samples,)
        Link targets, each in ``0 .. n_samples - 1``.
    owner : int
        The dish's owner.

    Returns
    -------
    reaches : bool array of shape (n_samples,)
    """
    n = connections.shape[0]
    # 0 unknown, 1 reaches the owner, 2 does not, 3 on the path being followed
    state = np.zeros(n, dtype=np.int8)
    path = np.empty(n, dtype=np.int64)
    state[owner] = 1
    for start in range(n):
        if state[start] != 0:
            continue
        length = 0
        j = start
        while state[j] == 0:
            state[j] = 3
            path[length] = j
            length += 1
            j = connections[j]
        # state 3 here means the walk closed a cycle without meeting the owner
        verdict = 1 if state[j] == 1 else 2
        for p in range(length):
            state[path[p]] = verdict
    return state == 1


@njit(cache=True)
def fill_feature_matrix(owners, connections, features):
    """Write ``z_ik = 1`` iff customer ``i`` reaches ``owners[k]`` for dish ``k`` (in place).

    ``O(N K)``: :func:`compute_reachability` for each of the ``K`` columns.
    """
    for k in range(owners.shape[0]):
        reaches = compute_reachability(connections[:, k], owners[k])
        for i in range(connections.shape[0]):
            features[i, k] = 1 if reaches[i] else 0
