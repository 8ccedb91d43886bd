"""Tests of sklearn_ibp._memory: the allocation check made before large arrays."""

import pytest

from sklearn_ibp import _memory
from sklearn_ibp.exceptions import AllocationTooLargeError


def test_available_memory_is_positive():
    available = _memory.available_memory()
    assert available is None or available > 0


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1000", 1000),
        ("8G", 8 * 1024**3),
        ("1.5k", 1536),
        ("2MiB", 2 * 1024**2),
        ("3T", 3 * 1024**4),
    ],
)
def test_limit_from_environment(monkeypatch, text, expected):
    monkeypatch.setenv(_memory.LIMIT_VARIABLE, text)
    assert _memory.memory_limit() == expected


@pytest.mark.parametrize("text", ["lots", "-5", "0"])
def test_bad_limit_is_named(monkeypatch, text):
    monkeypatch.setenv(_memory.LIMIT_VARIABLE, text)
    with pytest.raises(ValueError, match=_memory.LIMIT_VARIABLE):
        _memory.memory_limit()


def test_default_limit_is_half_the_available(monkeypatch):
    monkeypatch.delenv(_memory.LIMIT_VARIABLE, raising=False)
    monkeypatch.setattr(_memory, "available_memory", lambda: 10_000)
    assert _memory.memory_limit() == 5_000
    monkeypatch.setattr(_memory, "available_memory", lambda: None)
    assert _memory.memory_limit() is None
    _memory.check_allocation(1e30, what="anything", advice="nothing")  # no limit known


def test_check_allocation_refuses_above_the_limit(monkeypatch):
    monkeypatch.setenv(_memory.LIMIT_VARIABLE, "1M")
    _memory.check_allocation(1024**2, what="an array", advice="lower alpha")
    expected = r"the K x K matrix would need 13\.7 GiB.*1\.0 MiB.*lower alpha \(1e4\)"
    with pytest.raises(AllocationTooLargeError, match=expected) as info:
        _memory.check_allocation(
            13.7 * 1024**3, what="the K x K matrix", advice="lower alpha (1e4)"
        )
    assert isinstance(info.value, ValueError) and isinstance(info.value, MemoryError)
