"""Checks made before an allocation that grows with the data or the number of features.

An array whose size grows with ``K**2``, ``N**2`` or the largest index in the input can
ask for more memory than the machine has (``IBPFactorAnalysis(alpha=1e4)`` once asked for
13.7 GiB; a win-count matrix of alternatives 0 and 50,000 for 18.6 GiB). The solvers and
estimators call :func:`check_allocation` with an estimate of the bytes *before* they
allocate, and the user gets a :class:`~sklearn_ibp.exceptions.AllocationTooLargeError`
that names the argument to change, instead of a bare ``MemoryError`` (or a machine that
swaps).

The limit is half the memory the operating system reports as available, or the
``SKLEARN_IBP_MAX_MEMORY`` environment variable (bytes, or a number with a ``K``, ``M``,
``G`` or ``T`` suffix, powers of 1024) when it is set.
"""

from __future__ import annotations

import os

from .exceptions import AllocationTooLargeError

__all__ = ["available_memory", "check_allocation", "memory_limit"]

#: The environment variable that sets the limit (bytes, or e.g. "8G").
LIMIT_VARIABLE = "SKLEARN_IBP_MAX_MEMORY"

_SUFFIXES = {"K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}


def available_memory() -> int | None:
    """Bytes of memory the operating system reports as available, or None if unknown.

    Reads ``MemAvailable`` from ``/proc/meminfo`` (Linux), else the free physical pages
    that ``os.sysconf`` reports.
    """
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return None


def _parse_bytes(text: str) -> int:
    value = text.strip().upper().removesuffix("B").removesuffix("I")
    factor = 1
    if value and value[-1] in _SUFFIXES:
        factor = _SUFFIXES[value[-1]]
        value = value[:-1]
    try:
        number = float(value)
    except ValueError:
        raise ValueError(
            f"The environment variable {LIMIT_VARIABLE} must be a number of bytes, "
            f"optionally with a K, M, G or T suffix (e.g. 8G); got {text!r}."
        ) from None
    if not number > 0:
        raise ValueError(f"{LIMIT_VARIABLE} must be positive; got {text!r}.")
    return int(number * factor)


def memory_limit() -> int | None:
    """The largest single allocation, in bytes, the package allows itself (None: no limit).

    ``SKLEARN_IBP_MAX_MEMORY`` if set, else half the available memory.
    """
    text = os.environ.get(LIMIT_VARIABLE)
    if text:
        return _parse_bytes(text)
    available = available_memory()
    return None if available is None else available // 2


def _format_bytes(n_bytes: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if n_bytes < 1024 or unit == "TiB":
            return f"{n_bytes:.0f} {unit}" if unit == "bytes" else f"{n_bytes:.1f} {unit}"
        n_bytes /= 1024
    raise AssertionError  # pragma: no cover


def check_allocation(n_bytes, *, what: str, advice: str) -> None:
    """Refuse an allocation of ``n_bytes`` above :func:`memory_limit`.

    Parameters
    ----------
    n_bytes : int or float
        Estimated size of the allocation (a float may exceed any integer type).
    what : str
        What would be allocated, e.g. ``"the 42849 x 42849 feature Gram matrix"``.
    advice : str
        What the user can change, naming the argument, e.g. ``"lower alpha (1e4)"``.

    Raises
    ------
    AllocationTooLargeError
        A ``ValueError`` and ``MemoryError`` that says the size, the limit and the advice.
    """
    limit = memory_limit()
    if limit is None or n_bytes <= limit:
        return
    raise AllocationTooLargeError(
        f"{what} would need {_format_bytes(float(n_bytes))}, more than the limit of "
        f"{_format_bytes(float(limit))} (half the available memory, or "
        f"{LIMIT_VARIABLE} when set); {advice}."
    )
