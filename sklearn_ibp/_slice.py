"""Univariate slice sampling (Neal 2003, "Slice sampling", sec. 4: stepping out and shrinkage).

Used for the conditionals that are not of standard form in the DP mixture (Görür 2007,
Görür 2007, sec. 3.3.2): the concentration ``alpha`` (eq. 3.22 with the prior of eq. 3.23) and
the Wishart degrees of freedom ``beta`` (eqs. 3.58, 3.61). Görür (2007) samples the logarithm of
both with adaptive rejection sampling because it is log-concave; a slice-sampling update is
an exact MCMC update for the same target and needs no derivative or envelope.
"""

from __future__ import annotations

import math
from collections.abc import Callable

__all__ = ["slice_sample"]


def slice_sample(
    log_density: Callable[[float], float],
    x0: float,
    rng,
    width: float = 1.0,
    max_steps: int = 64,
) -> float:
    """One slice-sampling update of a scalar, leaving ``exp(log_density)`` invariant.

    Parameters
    ----------
    log_density : callable
        Unnormalised log density of the target; may return ``-inf`` outside its support.
    x0 : float
        Current value, with a finite ``log_density(x0)``.
    rng : numpy.random.Generator or numpy.random.RandomState
        Random source (``random`` and ``exponential`` are drawn from it).
    width : float, default=1.0
        Initial bracket width (stepping out, Neal 2003 fig. 3).
    max_steps : int, default=64
        Largest number of stepping-out steps on both sides together.

    Returns
    -------
    float
        The new value.
    """
    x0 = float(x0)
    level = log_density(x0) - rng.exponential()
    left = x0 - width * rng.random()
    right = left + width
    steps_left = int(math.floor(max_steps * rng.random()))
    steps_right = max_steps - 1 - steps_left
    while steps_left > 0 and log_density(left) > level:
        left -= width
        steps_left -= 1
    while steps_right > 0 and log_density(right) > level:
        right += width
        steps_right -= 1
    while True:
        x1 = left + rng.random() * (right - left)
        if log_density(x1) > level:
            return float(x1)
        if x1 < x0:
            left = x1
        else:
            right = x1
        if right - left <= 1e-12 * (1.0 + abs(x0)):  # only if the level equals f(x0)
            return x0
