"""The range of data magnitudes the Gaussian models compute in without overflow.

The Gaussian likelihoods and bases square and multiply the data (scatter matrices,
covariances, their inverses and determinants): float64 holds about 1e-308 to 1e308, so
values beyond 1e100 overflow in a sum of squares over many rows and values below 1e-100
underflow in the precisions' products. Within the range the models that scale their priors
by the data (the ``DPMixture`` bases, ``DistanceDependentIBP``) fit ``c * X`` as they fit
``X``, rescaled (bit for bit when ``c`` is a power of two); outside it a fit is refused
with a message instead of an overflow deep inside a kernel.
"""

from __future__ import annotations

import numpy as np

#: The largest absolute data value accepted.
MAX_ABS_VALUE = 1e100
#: The smallest nonzero largest-absolute-value accepted (all-zero data is left to the model).
MIN_ABS_VALUE = 1e-100


def check_data_scale(values, *, estimator: str, name: str = "X") -> None:
    """Refuse data whose largest absolute value is outside ``[1e-100, 1e100]``.

    Parameters
    ----------
    values : ndarray
        The data entries (NaN ignored; inf is refused by the caller's validation).
    estimator : str
        The estimator's name, for the message.
    name : str, default="X"
        The argument's name, for the message.

    Raises
    ------
    ValueError
        Naming the largest absolute value, the accepted range and the remedy.
    """
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return
    with np.errstate(invalid="ignore"):
        top = float(np.nanmax(np.abs(values))) if not np.isnan(values).all() else 0.0
    if top > MAX_ABS_VALUE or 0.0 < top < MIN_ABS_VALUE:
        raise ValueError(
            f"{name}'s largest absolute value is {top:.3g}; {estimator} needs it between "
            f"{MIN_ABS_VALUE:g} and {MAX_ABS_VALUE:g} (its squares and products would "
            f"{'overflow' if top > 1 else 'underflow'} in float64). Rescale {name}, e.g. with "
            "sklearn.preprocessing.StandardScaler in a Pipeline, or divide it by a constant."
        )
