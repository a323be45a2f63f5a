"""Placing rows in a chosen partition with the DataFrame API alone.

``repartition(n, col)`` sends a row to ``pmod(murmur3(col, seed 42), n)``. Choosing for
each target partition ``i`` an integer whose hash lands on ``i`` lets a plan put the row
computed for input partition ``i`` back into output partition ``i``.
"""

from __future__ import annotations

import functools

_MASK = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _MASK


def murmur3_int(value: int, seed: int = 42) -> int:
    """Spark's ``Murmur3_x86_32.hashInt`` (the hash of an int column), as a signed int."""
    k1 = (value & _MASK) * 0xCC9E2D51 & _MASK
    k1 = _rotl(k1, 15) * 0x1B873593 & _MASK
    h1 = (seed & _MASK) ^ k1
    h1 = (_rotl(h1, 13) * 5 + 0xE6546B64) & _MASK
    h1 ^= 4
    h1 ^= h1 >> 16
    h1 = h1 * 0x85EBCA6B & _MASK
    h1 ^= h1 >> 13
    h1 = h1 * 0xC2B2AE35 & _MASK
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 & 0x80000000 else h1


@functools.lru_cache(maxsize=64)
def partition_keys(n: int) -> tuple[int, ...]:
    """``keys[i]`` is an int that ``repartition(n, col)`` sends to partition ``i``."""
    keys: list[int | None] = [None] * n
    missing = n
    candidate = 0
    while missing:
        target = murmur3_int(candidate) % n
        if keys[target] is None:
            keys[target] = candidate
            missing -= 1
        candidate += 1
    return tuple(keys)  # type: ignore[arg-type]
