"""Keys as Spark groups and sorts them, in Python (no Spark): one rule for the engine and the lookups.

Spark groups keys by value after normalizing floating-point numbers (every NaN is one key, -0.0
is 0.0) and sorts them ascending with nulls first, NaN after every other number, strings by their
UTF-8 bytes (code points, as Python compares them), binaries byte by byte, structs and arrays
element by element. ``normal(key)`` turns a key (a tuple of Python values, as Arrow's
``as_py()`` and pyspark's Row API give them) into a value that Python's ``==`` and ``<`` treat the
same way: equal keys equal, and ordered as Spark orders them. The backlog engine cuts its sorted
records into runs of equal ``normal`` keys; the lazy handover looks a key up in a partition's
sorted state rows by bisecting on ``normal``.
"""

from __future__ import annotations

import math

_NULL = (0,)


def _value(value):
    if value is None:
        return _NULL
    if isinstance(value, float):
        if math.isnan(value):
            return (2,)  # after every number
        return (1, value + 0.0)  # -0.0 + 0.0 is 0.0
    if isinstance(value, dict):  # a struct: its fields in order
        return (1, tuple(_value(v) for v in value.values()))
    if isinstance(value, (list, tuple)):
        return (1, tuple(_value(v) for v in value))
    return (1, value)


def normal(key: tuple) -> tuple:
    """``key`` (a tuple of column values) as Python must compare it to agree with Spark."""
    return tuple(_value(v) for v in key)


def plain(key_schema) -> bool:
    """Whether keys of this Arrow schema compare as Spark compares them without ``normal`` (no floats,
    no structs or lists: integers, strings, booleans, dates, timestamps, decimals, binaries)."""
    import pyarrow as pa

    return all(not (pa.types.is_floating(t) or pa.types.is_nested(t)) for t in key_schema.types)

