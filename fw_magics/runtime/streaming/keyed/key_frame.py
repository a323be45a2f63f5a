"""Key columns as Spark's grouping sees them, applied before a keyed job partitions its records.

Spark's batch ``groupBy`` normalizes floating-point keys (every NaN is one key, -0.0 is 0.0;
also inside structs and arrays) before it hashes and compares them; Structured Streaming's
``transformWithState`` does not: it hashes and stores the key's bytes, so -0.0 and 0.0 would be
two keys in the stream and one in the backlog. ``normalized_keys`` rewrites such key columns the
way Spark's grouping does, the same in the backlog engine and in the stream, so that every mode
groups keys as a Spark batch would (and as ``keys.normal`` compares them in Python).
"""

from __future__ import annotations

import math

from pyspark.sql import functions as F
from pyspark.sql import types as T


def _normal(column, data_type):
    """``column`` normalized, or None when a column of ``data_type`` needs nothing."""
    if isinstance(data_type, (T.DoubleType, T.FloatType)):
        return (F.when(F.isnan(column), F.lit(math.nan).cast(data_type))
                .when(column == 0, F.lit(0.0).cast(data_type)).otherwise(column))
    if isinstance(data_type, T.StructType):
        fields = [(f, _normal(column.getField(f.name), f.dataType)) for f in data_type.fields]
        if all(normal is None for _, normal in fields):
            return None
        rebuilt = F.struct(*[(column.getField(f.name) if normal is None else normal).alias(f.name)
                             for f, normal in fields])
        return F.when(column.isNull(), F.lit(None).cast(data_type)).otherwise(rebuilt)
    if isinstance(data_type, T.ArrayType):
        if _normal(F.lit(None).cast(data_type.elementType), data_type.elementType) is None:
            return None
        return F.transform(column, lambda element: _normal(element, data_type.elementType))
    return None


def normalized_keys(frame, key_names):
    """``frame`` with its floating-point key columns (top-level or nested) as Spark's grouping sees them."""
    types = {f.name: f.dataType for f in frame.schema.fields}
    changed = {k: _normal(F.col(f"`{k}`"), types[k]) for k in key_names}
    changed = {k: c for k, c in changed.items() if c is not None}
    return frame.withColumns(changed) if changed else frame
