"""Keyed state's JSON turned into typed columns by Spark expressions (``from_json``), no Python worker: the
fast way ``reader.keyed_state()`` takes where every declared state's type allows it.

The runtime stores a typed value in the JSON form of its Arrow type (``values.codecs.encoder``): an
integer, boolean or string as itself, a float as a number or ``"NaN"``/``"Infinity"``/``"-Infinity"``, a
decimal as its text, a date as ISO text, a timestamp (with a time zone, Spark's ``timestamp``) as epoch
microseconds, a record as the list of its fields' forms in order. An integer, boolean or string state (and a
timestamp's microseconds) is parsed by Spark's JSON reader as that type directly; any other, and a record's
fields, as text (Spark's JSON reader gives a number's or a boolean's own text for a string field) cast to its
type, so the values are the codec's: a float's special values and -0.0 included. A list state is an array of them (``[]``
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

#: The parsed ``__fw_state`` between the two projections.
DOC = "__fw_doc"

#: The atomic types cast from their stored text by Spark.
_CAST = (T.BooleanType, T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.StringType, T.FloatType,
         T.DoubleType, T.DecimalType, T.DateType)


def _atomic(data_type) -> bool:
    return isinstance(data_type, (*_CAST, T.TimestampType))


#: The atomic types Spark's JSON reader parses from their stored form directly (a timestamp: its microseconds).
_DIRECT = (T.BooleanType, T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.StringType)


def _parsed_as(data_type):
    """The type a state of the atomic ``data_type`` is parsed as by ``from_json``: itself, a long, or text."""
    if isinstance(data_type, _DIRECT):
        return data_type
    return T.LongType() if isinstance(data_type, T.TimestampType) else T.StringType()


def _value(parsed, data_type):
    """The column of ``data_type`` from the stored form as parsed (``_parsed_as``, or text for a record's field)."""
    if isinstance(data_type, T.TimestampType):
        return F.timestamp_micros(parsed.cast("long"))
    return parsed.cast(data_type)


def _one(text_or_array, state_type, spark_type):
    """One stored value (a record: an array of its fields as parsed, ``_stored_as``) as ``spark_type``."""
    if not state_type.record:
        return _value(text_or_array, spark_type)  # a cast to the type it was parsed as is none
    fields = [_value(F.element_at(text_or_array, i + 1), f.dataType).alias(f.name)
              for i, f in enumerate(spark_type.fields)]
    return F.when(text_or_array.isNull(), F.lit(None).cast(spark_type)).otherwise(F.struct(*fields))


def _each(state_type, spark_type):
    """A list state's item as ``spark_type`` (Spark's ``transform`` takes a function of one column)."""
    return lambda stored: _one(stored, state_type, spark_type)


def _stored_as(state_type):
    """What ``from_json`` parses one stored value as: an atomic state as ``_parsed_as`` its type, a record as an
    array of its fields' (one type where every field is parsed as it, else text)."""
    parsed = [_parsed_as(t) for t in state_type.spark_types]
    if not state_type.record:
        return parsed[0]
    return T.ArrayType(parsed[0] if len(set(parsed)) == 1 else T.StringType())


def expressions(columns: list, spark_type_of) -> tuple | None:
    """(the parse of ``__fw_state``, aliased ``DOC``; the typed columns of ``columns`` ((name, ``StateKind``,
    ``StateType``) each) from the column ``DOC``, each aliased to its name): two projections, so each row's JSON is
    parsed once however many columns read it. None when a state's type is not one they take (the module)."""
    parsed, outs = [], []
    for name, kind, state_type in columns:
        if state_type.ddl is None or not all(_atomic(t) for t in state_type.spark_types):
            return None
        stored = _stored_as(state_type)
        parsed.append((name, kind, T.ArrayType(stored) if kind is StateKind.LIST else stored))
    values = T.StructType([T.StructField(n, t) for n, k, t in parsed if k is not StateKind.LIST])
    lists = T.StructType([T.StructField(n, t) for n, k, t in parsed if k is StateKind.LIST])
    parse = F.from_json(F.col(STATE), T.StructType([T.StructField(part, fields) for part, fields in
                                                    (("v", values), ("l", lists)) if fields.fields])).alias(DOC)
    doc = F.col(DOC)
    for name, kind, state_type in columns:
        spark_type = spark_type_of(kind, state_type)
        if kind is StateKind.LIST:
            item = spark_type.elementType
            stored = doc.getField("l").getField(name)
            typed = F.transform(stored, _each(state_type, item))
            outs.append(F.coalesce(typed, F.array().cast(spark_type)).alias(name))
        else:
            outs.append(_one(doc.getField("v").getField(name), state_type, spark_type).alias(name))
    return parse, outs
