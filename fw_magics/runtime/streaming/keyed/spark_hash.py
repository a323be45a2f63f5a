"""Spark's hash partitioning of a key, in Python: which of n files a backlog put a key in.

``repartition(n, *keys)`` places a row in partition ``pmod(Murmur3Hash(keys, seed=42), n)``:
Spark's own 32-bit Murmur3 (``Murmur3_x86_32``), each column hashed with the previous column's
hash as its seed, a null column leaving the seed as it is. ``partition`` computes that for the
column types whose hashing is plain (integers, booleans, dates, timestamps, strings, binaries);
for any other it says ``None`` and the caller searches every file. A worker uses it only as a
hint (the file to bisect first), so a wrong answer would cost lookups, never a key's state.
"""

from __future__ import annotations

import datetime as dt

_SEED = 42
_C1, _C2 = 0xCC9E2D51, 0x1B873593
_MASK = 0xFFFFFFFF
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _MASK


def _mix_k1(k1: int) -> int:
    k1 = (k1 * _C1) & _MASK
    return (_rotl(k1, 15) * _C2) & _MASK


def _mix_h1(h1: int, k1: int) -> int:
    h1 = _rotl(h1 ^ k1, 13)
    return (h1 * 5 + 0xE6546B64) & _MASK


def _fmix(h1: int, length: int) -> int:
    h1 ^= length
    h1 ^= h1 >> 16
    h1 = (h1 * 0x85EBCA6B) & _MASK
    h1 ^= h1 >> 13
    h1 = (h1 * 0xC2B2AE35) & _MASK
    return h1 ^ (h1 >> 16)


def hash_int(value: int, seed: int) -> int:
    return _fmix(_mix_h1(seed, _mix_k1(value & _MASK)), 4)


def hash_long(value: int, seed: int) -> int:
    value &= 0xFFFFFFFFFFFFFFFF
    h1 = _mix_h1(seed, _mix_k1(value & _MASK))
    h1 = _mix_h1(h1, _mix_k1(value >> 32))
    return _fmix(h1, 8)


def hash_bytes(data: bytes, seed: int) -> int:
    """Spark's ``hashUnsafeBytes``: 4-byte little-endian words, then each remaining byte on its own
    (signed), not Murmur3's usual tail."""
    h1 = seed
    aligned = len(data) - len(data) % 4
    for i in range(0, aligned, 4):
        h1 = _mix_h1(h1, _mix_k1(int.from_bytes(data[i:i + 4], "little")))
    for b in data[aligned:]:
        h1 = _mix_h1(h1, _mix_k1((b - 256 if b > 127 else b) & _MASK))
    return _fmix(h1, len(data))


def _hash_value(value, seed: int) -> int | None:
    """The hash of one column's value, or None for a type this module does not hash."""
    if value is None:
        return seed
    if isinstance(value, bool):
        return hash_int(int(value), seed)
    if isinstance(value, int):
        # pyarrow gives int8/16/32 and int64 alike as int: the column's type decides (``partition``)
        return None
    if isinstance(value, str):
        return hash_bytes(value.encode("utf-8"), seed)
    if isinstance(value, bytes):
        return hash_bytes(value, seed)
    if isinstance(value, dt.datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=dt.timezone.utc)
        delta = aware - _EPOCH
        return hash_long((delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds, seed)
    if isinstance(value, dt.date):
        return hash_int((value - _EPOCH.date()).days, seed)
    return None


def partition(key: tuple, long_columns: tuple, n: int) -> int | None:
    """The partition of ``key`` (its columns' Python values) among ``n`` under Spark's hash
    partitioning, or None where a column's type is not hashed here. ``long_columns``: for each
    column, True if it is 64-bit, False if 32-bit or narrower, None if not an integer."""
    h = _SEED
    for value, wide in zip(key, long_columns):
        if value is not None and wide is not None and isinstance(value, int) and not isinstance(value, bool):
            h = hash_long(value, h) if wide else hash_int(value, h)
            continue
        h = _hash_value(value, h)
        if h is None:
            return None
    signed = h - (1 << 32) if h & 0x80000000 else h
    return signed % n
