"""The writer against the reference model (tests/value_model.py) on random types and values.

Pure Arrow, no Spark: many examples are cheap here; tests/datastream/test_values.py runs a few
of the same rules end to end.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import types as T

from fw_magics.errors import FullWindowError
from fw_magics.values.convert import RowWriter
from fw_magics.values.records import batch_records
from fw_magics.values.schema import arrow_schema
from tests.examples import examples
from tests.value_model import LEAVES, Refused, canonical, spark_types, stored, values


def writer_of(schema: T.StructType) -> RowWriter:
    return RowWriter(arrow_schema(schema), [f.dataType for f in schema.fields], "f")


def expected_column(rows, field: T.StructField):
    try:
        return [stored(v, field.dataType, field.nullable) for v in rows]
    except Refused:
        return None


@pytest.mark.parametrize("types", [st.sampled_from(LEAVES), spark_types], ids=["atomic", "nested"])
@settings(max_examples=examples(400), deadline=None)
@given(data=st.data())
def test_one_column_accepts_refuses_and_stores_as_the_model_says(types, data):
    field = T.StructField("a", data.draw(types, "type"), data.draw(st.booleans(), "nullable"))
    rows = data.draw(st.lists(values(field.dataType), min_size=1, max_size=4), "values")
    expected = expected_column(rows, field)
    w = writer_of(T.StructType([field]))
    if expected is None:
        with pytest.raises(FullWindowError) as caught:
            w.batch([(v,) for v in rows])
        message = str(caught.value)
        assert "\n" not in message and message.startswith("f produced a value that does not fit column 'a'"), message
        assert f"expected {field.dataType.simpleString()}" in message or " at a." in message, message
    else:
        out = w.batch([(v,) for v in rows]).column(0).to_pylist()
        assert canonical(out) == canonical(expected)


@settings(max_examples=examples(200), deadline=None)
@given(data=st.data())
def test_the_first_column_with_a_misfit_is_named(data):
    fields = [T.StructField(name, data.draw(spark_types), data.draw(st.booleans())) for name in ("x", "y")]
    rows = data.draw(st.lists(st.tuples(values(fields[0].dataType), values(fields[1].dataType)), min_size=1, max_size=3))
    bad = [f.name for i, f in enumerate(fields) if expected_column([r[i] for r in rows], f) is None]
    w = writer_of(T.StructType(fields))
    if bad:
        with pytest.raises(FullWindowError, match=f"does not fit column '{bad[0]}'"):
            w.batch(rows)
    else:
        w.batch(rows)


@settings(max_examples=examples(200), deadline=None)
@given(data=st.data())
def test_what_records_hold_is_written_back_unchanged(data):
    """A reduce that returns its input, or map_partition(lambda rs: rs), must never be refused."""
    field = T.StructField("a", data.draw(spark_types), data.draw(st.booleans()))
    rows = data.draw(st.lists(values(field.dataType), min_size=1, max_size=4))
    expected = expected_column(rows, field)
    if expected is None:
        return
    w = writer_of(T.StructType([field]))
    batch = w.batch([(v,) for v in rows])
    again = w.batch(list(batch_records(batch)))
    assert again.schema == batch.schema and canonical(again.to_pylist()) == canonical(batch.to_pylist())
