"""Small numba kernels every IBP Gibbs sampler uses: the prior terms and discrete draws.

Each draw uses exactly one uniform from the chain's generator, so samplers that compute
the same conditionals make the same choices from the same seed.
"""

import ctypes
import ctypes.util
import math

import numpy as np
from numba import njit

# Flags and counts to pass between kernels as typed values, not literals: numba compiles a
# callee once per literal argument it is called with (``Literal[bool](True)``,
# ``Literal[int](1)``, ...), which multiplied the compilations of the proposal kernels.
TRUE, FALSE, ONE = np.bool_(True), np.bool_(False), np.int64(1)


@njit(cache=True)
def log_prior_odds(others, n_rows, beta):
    """IBP prior log odds of ``z_nk = 1`` given ``m_{-n,k} = others`` (eq. 3.6, app. C.1)."""
    return math.log(others) - math.log(beta + n_rows - 1.0 - others)


@njit(cache=True)
def stick_log_odds(stick):
    """``log(mu_k / (1 - mu_k))``, the prior log odds of ``z_nk = 1`` given the stick
    ``mu_k`` in the slice samplers' conditional (Görür 2007, eq. 4.52); ``inf`` at
    ``mu_k = 1``."""
    if stick >= 1.0:
        return np.inf
    return math.log(stick) - math.log1p(-stick)


@njit(cache=True)
def add_lowest_stick_log_ratio(log_odds, k, counts, sticks, n_features):
    """``log_odds`` of ``z_nk = 1`` plus ``log(mu*_0 / mu*_1)`` for a feature ``k`` no
    other row has (Görür 2007, eq. 4.47; Teh, Görür and Ghahramani 2007).

    The slice samplers' conditional divides by ``mu* = min(1, lowest live stick)``: with
    ``k`` switched off ``mu*_0`` is the lowest of the other live sticks among the first
    ``n_features`` (1 if none), with it switched on ``mu*_1 = min(mu*_0, mu_k)``, so the
    ratio is ``mu*_0 / mu_k`` when ``mu_k`` is below ``mu*_0`` and 1 otherwise.
    """
    mk = sticks[k]
    lowest = 1.0
    for j in range(n_features):
        if j != k and counts[j] > 0 and sticks[j] < lowest:
            lowest = sticks[j]
    if mk < lowest:
        log_odds += math.log(lowest) - math.log(mk)
    return log_odds


@njit(cache=True)
def draw_binary(log_odds, rng):
    """1 with probability ``sigmoid(log_odds)``, else 0."""
    p_one = 1.0 / (1.0 + math.exp(-log_odds)) if log_odds > -700.0 else 0.0
    return 1 if rng.random() < p_one else 0


@njit(cache=True)
def log_poisson_table(rate, k_max):
    """``log Poisson(j; rate)`` for ``j = 0 .. k_max`` (the new-feature prior of eq. 3.7)."""
    table = np.empty(k_max + 1)
    log_rate = math.log(rate)
    for j in range(k_max + 1):
        table[j] = j * log_rate - rate - math.lgamma(j + 1.0)
    return table


def _c_lgamma():
    """The C library's ``lgamma`` (the function numba's ``math.lgamma`` calls), or None.

    CPython's ``math.lgamma`` is its own approximation and differs from it in the last
    bits (already at ``lgamma(4.0)``), so a table computed from Python with it would not be
    the kernels' table."""
    name = ctypes.util.find_library("m")
    if name is None:
        return None
    try:
        function = ctypes.CDLL(name).lgamma
    except (OSError, AttributeError):
        return None
    function.restype = ctypes.c_double
    function.argtypes = [ctypes.c_double]
    return function


_C_LGAMMA = _c_lgamma()


def log_poisson_values(rate, k_max):
    """Python twin of :func:`log_poisson_table`, the same numbers bit for bit, for the
    drivers that pass the table to a kernel (so that a first fit does not compile the
    kernel and its allocation, issue 22). Falls back to the kernel itself where the C
    library's ``lgamma`` cannot be found."""
    rate = float(rate)
    k_max = int(k_max)
    if _C_LGAMMA is None:
        return log_poisson_table(rate, np.int64(k_max))
    log_rate = math.log(rate)
    return np.array([j * log_rate - rate - _C_LGAMMA(j + 1.0) for j in range(k_max + 1)])


@njit(cache=True)
def draw_from_log_weights(log_weights, rng):
    """An index drawn with probability proportional to ``exp(log_weights)``.

    ``log_weights`` is overwritten with the unnormalised weights.
    """
    best = -np.inf
    for j in range(log_weights.shape[0]):
        if log_weights[j] > best:
            best = log_weights[j]
    total = 0.0
    for j in range(log_weights.shape[0]):
        log_weights[j] = math.exp(log_weights[j] - best)
        total += log_weights[j]
    u = rng.random() * total
    j = 0
    acc = log_weights[0]
    while acc < u and j < log_weights.shape[0] - 1:
        j += 1
        acc += log_weights[j]
    return j


@njit(cache=True)
def random_order(n, out, rng):
    """A uniformly random permutation of ``0 .. n - 1`` written into ``out[:n]``.

    Samplers visit rows, features and categories in a fresh random order: slots are kept
    in order of creation, so a scan in slot order would choose the order of the moves
    from the state (the newest features come last), and only a state-independent order
    is guaranteed to leave the posterior invariant.
    """
    for i in range(n):
        out[i] = i
    for i in range(n - 1, 0, -1):
        j = np.int64(rng.random() * (i + 1))  # truncation, as int() (which compiles apart)
        out[i], out[j] = out[j], out[i]


#: Rejection tries of :func:`truncated_poisson` before it draws by inversion.
_POISSON_TRIES = 1000


@njit(cache=True)
def truncated_poisson(rate, k_max, rng):
    """A ``Poisson(rate)`` draw conditioned on being at most ``k_max``.

    By rejection, which almost always accepts at once; when ``rate`` is so large that
    ``k_max`` is far in the lower tail (a thousand tries failed), by inversion of the
    truncated distribution's CDF, computed in log space. Either way the draw is exact, and
    the loop is bounded (rejection alone spun forever, e.g. on a two-row
    ``NoisyOrHierarchy`` whose ``alpha / N`` grew large).
    """
    for _ in range(_POISSON_TRIES):
        k = rng.poisson(rate)
        if k <= k_max:
            return k
    return truncated_poisson_by_inversion(rate, k_max, rng)


@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def truncated_poisson_by_inversion(rate, k_max, rng):
    """A ``Poisson(rate)`` draw conditioned on being at most ``k_max``, by inversion of the
    truncated distribution's CDF with one ``random()``: the exact fallback of
    :func:`truncated_poisson` and of the hierarchy's own truncated Poisson draw."""
    # log p_k = k log(rate) - log k! + const, for k = 0 .. k_max, relative to p_k_max
    # (the largest when rate > k_max, the case that needs inversion).
    log_rate = math.log(rate)
    top = k_max * log_rate - math.lgamma(k_max + 1.0)
    total = 0.0
    for k in range(k_max + 1):
        total += math.exp(k * log_rate - math.lgamma(k + 1.0) - top)
    u = rng.random() * total
    for k in range(k_max + 1):
        u -= math.exp(k * log_rate - math.lgamma(k + 1.0) - top)
        if u <= 0.0:
            return k
    return k_max


def draw_log_weight_index(log_weights, rng) -> int:
    """Python twin of :func:`draw_from_log_weights`: an index with probability proportional
    to ``exp(log_weights)``, from one uniform, with the same arithmetic (for the drivers
    that draw from Python what a kernel would draw, bit for bit)."""
    best = -math.inf
    for value in log_weights:
        if value > best:
            best = value
    weights = [math.exp(value - best) for value in log_weights]
    total = 0.0
    for w in weights:
        total += w
    u = rng.random() * total
    j = 0
    acc = weights[0]
    while acc < u and j < len(weights) - 1:
        j += 1
        acc += weights[j]
    return j
