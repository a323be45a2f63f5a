"""Keyed state's JSON turned into typed columns by Spark expressions (``from_json``), no Python worker: the
fast way ``reader.keyed_state()`` takes where every declared state's type allows it.

The runtime stores a typed value in the JSON form of its Arrow type (``values.codecs.encoder``): an
integer, boolean or string as itself, a float as a number or ``"NaN"``/``"Infinity"``/``"-Infinity"``, a
decimal as its text, a date as ISO text, a timestamp (with a time zone, Spark's ``timestamp``) as epoch
microseconds, a record as the list of its fields' forms in order. Each is parsed as text (Spark's JSON
reader gives a number's or a boolean's own text for a string field) and cast to its type, so the values
are the codec's: a float's special values and -0.0 included. A list state is an array of them (``[]``
for a key without one). Any other type (binary, a nested list, map or record inside a record, a
timestamp without time zone, a time, a duration) or a state without a declared type (JSON text, whose
spacing the Python decoder sets) is not taken here: ``expressions`` returns None and the reader decodes
in Python (Arrow batches in Spark tasks).
"""

from __future__ import annotations

from pyspark.sql import functions as F
from pyspark.sql import types as T

from ....api.state import StateKind
from ..keyed.changelog import STATE

#: The atomic types cast from their stored text by Spark.
_CAST = (T.BooleanType, T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.StringType, T.FloatType,
         T.DoubleType, T.DecimalType, T.DateType)


def _atomic(data_type) -> bool:
    return isinstance(data_type, (*_CAST, T.TimestampType))


def _value(text, data_type):
    """The column of ``data_type`` from the stored form's text ``text``."""
    if isinstance(data_type, T.TimestampType):
        return F.timestamp_micros(text.cast("long"))
    return text.cast(data_type)


def _one(text_or_array, state_type, spark_type):
    """One stored value (a record: an array of its fields' texts) as ``spark_type``."""
    if not state_type.record:
        return _value(text_or_array, spark_type)
    fields = [_value(F.element_at(text_or_array, i + 1), f.dataType).alias(f.name)
              for i, f in enumerate(spark_type.fields)]
    return F.when(text_or_array.isNull(), F.lit(None).cast(spark_type)).otherwise(F.struct(*fields))


def _each(state_type, spark_type):
    """A list state's item as ``spark_type`` (Spark's ``transform`` takes a function of one column)."""
    return lambda stored: _one(stored, state_type, spark_type)


def expressions(columns: list, spark_type_of) -> list | None:
    """The typed columns of ``columns`` ((name, ``StateKind``, ``StateType``) each) from ``__fw_state`` by Spark
    expressions, each aliased to its name; None when a state's type is not one they take (the module)."""
    parsed, outs = [], []
    for name, kind, state_type in columns:
        if state_type.ddl is None or not all(_atomic(t) for t in state_type.spark_types):
            return None
        stored = T.ArrayType(T.StringType()) if state_type.record else T.StringType()
        parsed.append((name, kind, T.ArrayType(stored) if kind is StateKind.LIST else stored))
    values = T.StructType([T.StructField(n, t) for n, k, t in parsed if k is not StateKind.LIST])
    lists = T.StructType([T.StructField(n, t) for n, k, t in parsed if k is StateKind.LIST])
    doc = F.from_json(F.col(STATE), T.StructType([T.StructField(part, fields) for part, fields in
                                                  (("v", values), ("l", lists)) if fields.fields]))
    for name, kind, state_type in columns:
        spark_type = spark_type_of(kind, state_type)
        if kind is StateKind.LIST:
            item = spark_type.elementType
            stored = doc.getField("l").getField(name)
            typed = F.transform(stored, _each(state_type, item))
            outs.append(F.coalesce(typed, F.array().cast(spark_type)).alias(name))
        else:
            outs.append(_one(doc.getField("v").getField(name), state_type, spark_type).alias(name))
    return outs
