"""Numba kernels of the dd-IBP prior: who inherits each dish along the links.

Below both the prior (:mod:`sklearn_ibp.priors.ddibp`, which builds ``Z`` from links and
owners) and the dd-IBP sampler's kernels, which recompute one dish's reachable set after a
link move (Gershman, Frazier and Blei, sec. 2.2 and sec. 5).
"""

import numpy as np
from numba import njit


def compute_reachability(connections, owner):
    """Customers that reach ``owner`` along one dish's links (Gershman et al., sec. 2.2, step 3).

    ``connections[i] = j`` means customer ``i`` links to ``j`` for this dish. Each customer
    has exactly one outgoing link, so following links from ``i`` either arrives at the owner
    or enters a cycle that avoids it. The owner always has the dish and its own outgoing link
    is ignored (footnote 2): the walk stops there.

    Parameters
    ----------
    connections : int array of shape (n_samples,)
        Link targets, each in ``0 .. n_samples - 1``.
    owner : int
        The dish's owner.

    Returns
    -------
    reaches : bool array of shape (n_samples,)

    Notes
    -----
    Computed in NumPy by pointer doubling (so a fit compiles no kernel for it): with the
    owner's link set to itself, ``f(i) = connections[i]`` composed with itself ``2^t >= N``
    times sends ``i`` to the owner exactly when its path meets the owner (a path meets it
    within ``N - 1`` links or never), in ``O(N log N)``. :func:`reachability_into`, the
    kernels' walk, gives the same answer in ``O(N)``.
    """
    successor = np.array(connections, dtype=np.int64)
    n = successor.shape[0]
    successor[owner] = owner
    steps = 1
    while steps < n:
        successor = successor[successor]
        steps *= 2
    return successor == owner


@njit(cache=True)
def reachability_into(connections, owner, state, path):
    """:func:`compute_reachability` into ``state`` (int8, ``state[i] == 1`` iff customer
    ``i`` reaches ``owner``, 2 otherwise); ``path`` is scratch of the same length."""
    n = connections.shape[0]
    # 0 unknown, 1 reaches the owner, 2 does not, 3 on the path being followed
    for i in range(n):
        state[i] = 0
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


@njit(cache=True)
def fill_feature_matrix(owners, connections, features):
    """Write ``z_ik = 1`` iff customer ``i`` reaches ``owners[k]`` for dish ``k`` (in place).

    ``O(N K)``: :func:`compute_reachability` for each of the ``K`` columns.
    """
    n = connections.shape[0]
    column = np.empty(n, dtype=np.int64)
    state = np.empty(n, dtype=np.int8)
    path = np.empty(n, dtype=np.int64)
    for k in range(owners.shape[0]):
        for i in range(n):
            column[i] = connections[i, k]
        reachability_into(column, np.int64(owners[k]), state, path)
        for i in range(n):
            features[i, k] = 1 if state[i] == 1 else 0
