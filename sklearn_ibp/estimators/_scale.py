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


#: The largest ``n_samples * (sigma_a / sigma_x)**2`` a linear-Gaussian fit accepts for
#: fixed ``sigma_x`` and ``sigma_a``: about the condition number of the features'
#: posterior precision ``Z^T Z + (sigma_x / sigma_a)^2 I`` once two columns of ``Z``
#: coincide, times float64's epsilon it is the relative error of its inverse. Measured
#: (40 x 5 standard normal data, 20 sweeps of the accelerated sampler, fixed sigmas): with
#: sigma_a / sigma_x up to 1e3 the number of features settles at the 40 an exact fit of 40
#: rows needs; at 1e4 (40 * 1e8 = 4e9) it wanders up to about 100; at 1e5 and 1e6 rounding
#: errors in the residuals, divided by sigma_x^2, add features without end (360 and 390
#: after 20 sweeps).
MAX_CONDITIONING = 1e11


def check_noise_ratio(sigma_x, sigma_a, n_samples, *, estimator: str) -> None:
    """Refuse fixed ``sigma_x`` and ``sigma_a`` whose ratio float64 cannot resolve.

    Parameters
    ----------
    sigma_x, sigma_a : float or None
        The noise and feature standard deviations the user fixed (None: set from the data,
        not checked).
    n_samples : int
        The number of rows.
    estimator : str
        The estimator's name, for the message.

    Raises
    ------
    ValueError
        Naming both arguments, the product ``n_samples * (sigma_a / sigma_x)**2`` and
        its limit :data:`MAX_CONDITIONING`.
    """
    if sigma_x is None or sigma_a is None:
        return
    ratio = float(sigma_a) / float(sigma_x)
    conditioning = n_samples * ratio * ratio
    if conditioning > MAX_CONDITIONING:
        largest = float(np.sqrt(MAX_CONDITIONING / n_samples))
        raise ValueError(
            f"sigma_a={float(sigma_a):g} and sigma_x={float(sigma_x):g} are too far apart "
            f"for {n_samples} rows: n_samples * (sigma_a / sigma_x)**2 = {conditioning:.3g} "
            f"exceeds {MAX_CONDITIONING:g}, where rounding errors in float64 dominate the "
            f"likelihood and {estimator} would add features without end. Use "
            f"sigma_a / sigma_x <= {largest:.3g}, or leave sigma_x=None to be sampled."
        )
