"""RowWriter.conform: Arrow batches a ``map_partition(fn, batches=True)`` yields, checked by value.

No Spark: the conformer is pure Arrow. A column of another type is cast only within its
family and only when nothing is lost, so the same values are accepted or refused as on the
per-record path; the pure-Python reference is tests/value_model.py's ``stored``, which was
written for that path.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import types as T

from fw_magics.errors import FullWindowError
from fw_magics.values.convert import RowWriter
from fw_magics.values.schema import arrow_schema, nullable
from tests.value_model import Refused, canonical, stored


def field(name: str, dtype: T.DataType, null: bool = True) -> T.StructField:
    return T.StructField(name, dtype, null)


def writer(*fields: T.StructField, context: str = "map_partition function 'f'") -> RowWriter:
    """The writer map_partition builds: Spark sees nullable columns, the declared nulls are still enforced."""
    declared = T.StructType(list(fields))
    out = nullable(declared)
    return RowWriter(arrow_schema(out), [f.dataType for f in out.fields], context,
                     [f.nullable for f in declared.fields])


def conformed(w: RowWriter, result) -> list[dict]:
    return [row for batch in w.conform(result) for row in batch.to_pylist()]


def refused(w: RowWriter, result, *fragments: str) -> str:
    with pytest.raises(FullWindowError) as caught:
        list(w.conform(result))
    message = str(caught.value)
    assert "\n" not in message, message
    for fragment in fragments:
        assert fragment in message, message
    return message


def test_columns_are_matched_by_name_and_cast_without_loss():
    w = writer(field("id", T.LongType()), field("total", T.DoubleType()), field("n", T.IntegerType()))
    batch = pa.record_batch({"n": pa.array([1, 2], pa.int64()), "id": pa.array([3.0, -4.0]),
                             "total": pa.array([5, 6], pa.int32())})
    assert conformed(w, batch) == [{"id": 3, "total": 5.0, "n": 1}, {"id": -4, "total": 6.0, "n": 2}]
    out = next(w.conform(batch))
    assert out.schema.names == ["id", "total", "n"] and out.schema.field("id").type == pa.int64()
    table = pa.Table.from_batches([batch, batch])
    assert conformed(w, table) == conformed(w, batch) * 2


def test_what_the_record_path_refuses_is_refused_in_one_line():
    w = writer(field("a", T.LongType(), False), field("b", T.FloatType()), field("c", T.IntegerType()))
    good = {"a": pa.array([1]), "b": pa.array([1.0]), "c": pa.array([1])}
    refused(w, pa.record_batch({**good, "a": pa.array([29.25])}), "column 'a'", "29.25", "truncated")
    refused(w, pa.record_batch({**good, "c": pa.array([2**40])}), "column 'c'", "not in range")
    refused(w, pa.record_batch({**good, "a": pa.array([None], pa.int64())}), "null(s) in column 'a'", "not null")
    refused(w, pa.record_batch({**good, "b": pa.array([1e40])}), "column 'b'", "would become inf")
    refused(w, pa.record_batch({**good, "a": pa.array([True])}), "column 'a' is bool", "bigint")
    refused(w, pa.record_batch({**good, "c": pa.array(["1"])}), "column 'c' is string", "int")
    refused(w, pa.record_batch({"a": pa.array([1]), "b": pa.array([1.0])}), "missing column(s) 'c'")
    refused(w, pa.record_batch({**good, "d": pa.array([1])}), "unknown column(s) 'd'")
    refused(w, [(1, 1.0, 1)], "yielded list", "pyarrow.RecordBatch or pyarrow.Table")


def test_nested_not_null_is_enforced_where_the_parent_is_present():
    w = writer(field("s", T.StructType([field("x", T.IntegerType(), False)])), field("l", T.ArrayType(T.LongType())))
    S = pa.struct([("x", pa.int64())])
    ok = pa.record_batch({"s": pa.array([None, {"x": 2}], S), "l": pa.array([[1], None])})
    assert conformed(w, ok) == [{"s": None, "l": [1]}, {"s": {"x": 2}, "l": None}]
    bad = pa.record_batch({"s": pa.array([{"x": None}], S), "l": pa.array([[1]])})
    refused(w, bad, "column 's'")


SOURCES = {
    "int64": (pa.int64(), st.integers(-(2**63), 2**63 - 1) | st.sampled_from([2**24 + 1, 2**31, 2**53 + 1, -(2**53)])),
    "float64": (pa.float64(), st.floats(width=64) | st.sampled_from([29.25, 3.0, -0.0, 2.0**63, 1e40, 2.0**31])),
    "int32": (pa.int32(), st.integers(-(2**31), 2**31 - 1)),
    "bool": (pa.bool_(), st.booleans()),
    "string": (pa.string(), st.text(max_size=4)),
}
FAMILY = {"int64": "number", "float64": "number", "int32": "number", "bool": "bool", "string": "string",
          "ByteType": "number", "ShortType": "number", "IntegerType": "number", "LongType": "number",
          "FloatType": "number", "DoubleType": "number", "BooleanType": "bool", "StringType": "string"}
TARGETS = [T.ByteType(), T.ShortType(), T.IntegerType(), T.LongType(), T.FloatType(), T.DoubleType(),
           T.BooleanType(), T.StringType()]


@settings(max_examples=300, deadline=None)
@given(data=st.data(), source=st.sampled_from(sorted(SOURCES)), target=st.sampled_from(TARGETS),
       not_null=st.booleans())
def test_conform_matches_the_value_model(data, source, target, not_null):
    arrow_type, elements = SOURCES[source]
    values = data.draw(st.lists(elements | st.none(), max_size=6), label="values")
    try:
        expected = [stored(v, target, not not_null) for v in values]
    except Refused:
        expected = None
    if FAMILY[source] != FAMILY[type(target).__name__]:
        expected = None  # a column of another kind is refused by its type, whatever its values
    w = writer(field("a", target, not not_null))
    batch = pa.record_batch({"a": pa.array(values, arrow_type)})
    if expected is None:
        refused(w, batch, "'a'")
    else:
        assert canonical([row["a"] for row in conformed(w, batch)]) == canonical(expected)
