"""Argument checks the priors' public functions share (each raises a ``ValueError`` that
names the argument and says what was expected)."""

from __future__ import annotations

import math

__all__ = ["check_positive"]


def check_positive(value, name: str) -> float:
    """``value`` as a float, after checking that it is a positive finite number.

    Parameters
    ----------
    value : object
        The argument.
    name : str
        Its name, for the error message.

    Returns
    -------
    float
    """
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}.") from None
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}.")
    return value
