"""RowWriter: Python values into Arrow are checked by value, never silently coerced (issue 16, item 1).

The writer is pure Arrow: these tests need no Spark session. Hand-picked cases first; the
reference model of "accept or refuse, and the value stored" per Spark type is in
tests/test_convert_model.py.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
from pyspark.sql import types as T

from fw_magics.errors import FullWindowError
from fw_magics.values.convert import RowWriter
from fw_magics.values.records import batch_records
from fw_magics.values.schema import arrow_schema

UTC = dt.timezone.utc


def writer(*fields: T.StructField, context: str = "f") -> RowWriter:
    schema = T.StructType(list(fields))
    return RowWriter(arrow_schema(schema), [f.dataType for f in schema.fields], context)


def col(dtype: T.DataType, nullable: bool = True, name: str = "a") -> T.StructField:
    return T.StructField(name, dtype, nullable)


def stored(w: RowWriter, rows) -> list:
    return [tuple(r.values()) for r in w.batch(list(rows)).to_pylist()]


def refused(w: RowWriter, rows) -> str:
    with pytest.raises(FullWindowError) as caught:
        w.batch(list(rows))
    message = str(caught.value)
    assert "\n" not in message
    return message


LONG = col(T.LongType())


# -- the reproductions of issue 16 ------------------------------------------------------


def test_a_fractional_float_is_refused_by_an_integer_column():
    assert refused(writer(LONG), [(29.25,)]) == (
        "f produced a value that does not fit column 'a': expected bigint, got float 29.25 "
        "(its fractional part would be lost)"
    )
    assert "expected int, got float 3.9" in refused(writer(col(T.IntegerType())), [(3.9,)])
    assert "got float 1.5" in refused(writer(LONG), [(1,), (2,), (1.5,)])


def test_a_whole_float_is_stored_as_its_integer():
    assert stored(writer(LONG), [(3.0,), (-0.0,), (1e18,), (None,)]) == [(3,), (0,), (10**18,), (None,)]


def test_a_finite_float_that_becomes_inf_in_a_float_column_is_refused():
    message = refused(writer(col(T.FloatType())), [(1.0,), (1e40,)])
    assert message == (
        "f produced a value that does not fit column 'a': expected float, got float 1e+40 "
        "(too large for float: it would become inf)"
    )
    assert "got float -1e+39" in refused(writer(col(T.FloatType())), [(-1e39,)])
    assert "got float64 np.float64(1e+40)" in refused(writer(col(T.FloatType())), [(np.float64(1e40),)])


def test_inf_and_nan_given_as_such_stay_allowed():
    out = stored(writer(col(T.FloatType())), [(float("inf"),), (float("-inf"),), (float("nan"),), (3.4e38,)])
    assert out[0] == (float("inf"),) and out[1] == (float("-inf"),) and out[2][0] != out[2][0]
    assert out[3][0] == pytest.approx(3.4e38, rel=1e-7)


def test_none_in_a_non_nullable_column_is_refused():
    assert refused(writer(col(T.LongType(), nullable=False)), [(1,), (None,)]) == (
        "f produced a value that does not fit column 'a': expected bigint not null, got None"
    )
    assert stored(writer(col(T.LongType(), nullable=False)), [(1,)]) == [(1,)]


# -- integers -----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype, bits", [(T.ByteType(), 8), (T.ShortType(), 16), (T.IntegerType(), 32), (T.LongType(), 64)])
def test_integer_bounds(dtype, bits):
    low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    assert stored(writer(col(dtype)), [(low,), (high,), (float(2 ** (bits - 2)),), (-float(2 ** (bits - 1)),)]) == [
        (low,), (high,), (2 ** (bits - 2),), (low,)]
    for bad in (low - 1, high + 1, 2**70, float(2**bits), float(-(2**bits))):
        message = refused(writer(col(dtype)), [(0,), (bad,)])
        assert f"expected {dtype.simpleString()}, got" in message
        assert f"(out of range for {dtype.simpleString()}: {low}..{high})" in message, message


@pytest.mark.parametrize("bad, reason", [
    (float("nan"), "not a finite number"), (float("inf"), "not a finite number"),
    (Decimal("2.5"), "its fractional part would be lost"), (np.float64(2.5), "its fractional part would be lost"),
])
def test_other_numbers_into_an_integer_column(bad, reason):
    assert f"({reason})" in refused(writer(LONG), [(bad,)])


def test_numpy_and_whole_decimal_integers_are_accepted():
    assert stored(writer(col(T.IntegerType())), [(np.int64(5),), (np.int8(-3),), (Decimal("7"),), (np.float32(2.0),)]) == [
        (5,), (-3,), (7,), (2,)]
    assert "out of range" in refused(writer(col(T.ByteType())), [(np.int64(500),)])


def test_bools_and_numbers_do_not_mix():
    assert "expected bigint, got bool True" in refused(writer(LONG), [(True,)])
    assert "expected double, got bool False" in refused(writer(col(T.DoubleType())), [(False,)])
    assert "expected boolean, got int 1" in refused(writer(col(T.BooleanType())), [(1,)])
    assert stored(writer(col(T.BooleanType())), [(True,), (np.bool_(False),)]) == [(True,), (False,)]


def test_strings_are_not_numbers_and_numbers_are_not_strings():
    assert "expected bigint, got str '1'" in refused(writer(LONG), [("1",)])
    assert "expected double, got str '1.5'" in refused(writer(col(T.DoubleType())), [("1.5",)])
    assert "expected string, got int 1" in refused(writer(col(T.StringType())), [(1,)])
    assert "expected string, got bytes b'a'" in refused(writer(col(T.StringType())), [(b"a",)])
    assert "expected binary, got str 'a'" in refused(writer(col(T.BinaryType())), [("a",)])
    assert stored(writer(col(T.BinaryType())), [(b"a",), (bytearray(b"b"),)]) == [(b"a",), (b"b",)]


# -- floating point -----------------------------------------------------------------------


def test_ints_into_floating_columns_while_exact():
    assert stored(writer(col(T.DoubleType())), [(1,), (2**53,), (-(2**53),)]) == [(1.0,), (2.0**53,), (-(2.0**53),)]
    assert stored(writer(col(T.FloatType())), [(2**24,)]) == [(2.0**24,)]
    assert "(too large to be stored exactly in double)" in refused(writer(col(T.DoubleType())), [(2**53 + 1,)])
    assert "(too large to be stored exactly in float)" in refused(writer(col(T.FloatType())), [(2**24 + 1,)])


# -- decimals -------------------------------------------------------------------------------


def test_decimals_that_lose_digits_are_refused():
    dec = col(T.DecimalType(10, 2))
    assert stored(writer(dec), [(Decimal("1.5"),), (Decimal("12345678.99"),), (7,), (Decimal("1E+3"),)]) == [
        (Decimal("1.50"),), (Decimal("12345678.99"),), (Decimal("7.00"),), (Decimal("1000.00"),)]
    assert "got Decimal Decimal('1.234') (it has more than 2 digits after the point)" in refused(writer(dec), [(Decimal("1.234"),)])
    assert "(it has more than 8 digits before the point)" in refused(writer(dec), [(Decimal("123456789"),)])
    assert "(it has more than 8 digits before the point)" in refused(writer(dec), [(10**8,)])
    assert "(not a finite number)" in refused(writer(dec), [(Decimal("NaN"),)])
    assert "expected decimal(10,2), got float 1.5" in refused(writer(dec), [(1.5,)])
    assert stored(writer(col(T.DecimalType(10, 1))), [(Decimal("1.20"),)]) == [(Decimal("1.2"),)]


# -- dates and times -----------------------------------------------------------------------


def test_dates_times_and_durations():
    day = col(T.DateType())
    assert stored(writer(day), [(dt.date(2024, 2, 29),), (dt.datetime(2024, 3, 1),)]) == [
        (dt.date(2024, 2, 29),), (dt.date(2024, 3, 1),)]
    assert "(its time of day would be lost)" in refused(writer(day), [(dt.datetime(2024, 3, 1, 12, 30),)])
    assert "expected timestamp, got int 1" in refused(writer(col(T.TimestampType())), [(1,)])
    assert "expected timestamp, got date" in refused(writer(col(T.TimestampType())), [(dt.date(2024, 1, 1),)])
    assert "expected timestamp_ntz, got float 1.5" in refused(writer(col(T.TimestampNTZType())), [(1.5,)])
    assert "expected interval day to second, got int 5" in refused(writer(col(T.DayTimeIntervalType())), [(5,)])
    moment = dt.datetime(2024, 1, 1, 12, tzinfo=UTC)
    assert stored(writer(col(T.TimestampType())), [(moment,)]) == [(moment,)]


# -- nested types ----------------------------------------------------------------------------


def test_nested_values_are_checked_and_named_by_their_path():
    info = col(T.StructType([T.StructField("city", T.StringType()), T.StructField("zip", T.IntegerType())]), name="info")
    assert refused(writer(info), [(("Oslo", 150),), (("Bergen", 50.5),)]) == (
        "f produced a value that does not fit column 'info' at info.zip: expected int, got float 50.5 "
        "(its fractional part would be lost)"
    )
    assert "at info.zip: expected int, got float 2.5" in refused(writer(info), [({"city": "x", "zip": 2.5},)])
    tags = col(T.ArrayType(T.LongType()), name="tags")
    assert "at tags.element: expected bigint, got float 2.5" in refused(writer(tags), [([1, 2],), ([3, 2.5],)])
    assert "at tags.element: expected bigint, got int 9223372036854775808 (out of range" in refused(writer(tags), [([2**63],)])
    prices = col(T.MapType(T.StringType(), T.IntegerType()), name="m")
    assert "at m.value: expected int, got float 7.75" in refused(writer(prices), [({"a": 1, "b": 7.75},)])
    assert "at m.key: expected string, got int 1" in refused(writer(prices), [({1: 1},)])
    assert "at m.key: expected string not null, got None" in refused(writer(prices), [({None: 1},)])
    assert "at m.value: expected float, got float 1e+40" in refused(
        writer(col(T.MapType(T.StringType(), T.FloatType()), name="m")), [({"a": 1e40},)])
    deep = col(T.ArrayType(T.StructType([T.StructField("x", T.ArrayType(T.ShortType()))])), name="d")
    assert "at d.element.x.element: expected smallint, got int 40000 (out of range" in refused(writer(deep), [([(([1, 40000]),)],)])
    assert stored(writer(info, tags, prices), [(("Oslo", 150.0), [1, 2.0], [("a", 1)]), (None, None, None)]) == [
        ({"city": "Oslo", "zip": 150}, [1, 2], [("a", 1)]), (None, None, None)]


def test_non_nullable_nested_fields_refuse_none():
    strict = T.StructType([T.StructField("x", T.LongType(), False)])
    assert "at s.x: expected bigint not null, got None" in refused(writer(col(strict, name="s")), [((None,),)])
    assert stored(writer(col(strict, name="s")), [(None,)]) == [(None,)]  # the struct itself may be null
    assert "at l.element: expected bigint not null, got None" in refused(
        writer(col(T.ArrayType(T.LongType(), containsNull=False), name="l")), [([1, None],)])
    assert "at m.value: expected bigint not null, got None" in refused(
        writer(col(T.MapType(T.StringType(), T.LongType(), valueContainsNull=False), name="m")), [({"a": None},)])


def test_nested_shapes_are_checked():
    info = col(T.StructType([T.StructField("city", T.StringType()), T.StructField("zip", T.IntegerType())]), name="info")
    assert "does not fit column 'info': expected struct<city:string,zip:int>, got tuple ('Oslo',) (it has 1 value; the struct has 2 fields: city, zip)" in refused(
        writer(info), [(("Oslo",),)])
    assert "(unknown field(s) country)" in refused(writer(info), [({"city": "x", "zip": 1, "country": "no"},)])
    assert "(missing field(s) zip)" in refused(writer(info), [({"city": "x"},)])
    assert "expected array<bigint>, got str 'abc'" in refused(writer(col(T.ArrayType(T.LongType()))), [("abc",)])
    assert "expected array<bigint>, got set" in refused(writer(col(T.ArrayType(T.LongType()))), [({1, 2},)])
    assert "expected map<string,int>, got list" in refused(writer(col(T.MapType(T.StringType(), T.IntegerType()))), [([1, 2],)])


def test_the_culprit_column_is_named():
    w = writer(col(T.LongType(), name="id"), col(T.LongType(), name="total"))
    assert "does not fit column 'total': expected bigint, got float 7.75" in refused(w, [(1, 2), (3, 7.75)])


# -- what records give back is accepted unchanged --------------------------------------------


def test_records_read_from_arrow_are_written_back_unchanged():
    schema = T.StructType([
        col(T.ByteType(), name="b"), col(T.ShortType(), name="s"), col(T.IntegerType(), name="i"),
        col(T.LongType(), name="l"), col(T.FloatType(), name="f"), col(T.DoubleType(), name="d"),
        col(T.DecimalType(12, 3), name="dec"), col(T.StringType(), name="str"), col(T.BinaryType(), name="bin"),
        col(T.BooleanType(), name="bool"), col(T.DateType(), name="day"), col(T.TimestampType(), name="ts"),
        col(T.TimestampNTZType(), name="ntz"), col(T.DayTimeIntervalType(), name="dur"),
        col(T.ArrayType(T.StructType([T.StructField("x", T.FloatType())])), name="arr"),
        col(T.MapType(T.StringType(), T.StructType([T.StructField("y", T.LongType(), False)])), name="map"),
        col(T.StructType([T.StructField("z", T.ArrayType(T.IntegerType()))]), name="st"),
    ])
    row = (-128, 32767, -(2**31), 2**63 - 1, 3.4028234663852886e38, -1e308, Decimal("123456789.123"), "é\x00",
           b"\x00\xff", True, dt.date(1, 1, 1), dt.datetime(2024, 1, 1, tzinfo=UTC), dt.datetime(9999, 12, 31),
           dt.timedelta(days=-3, microseconds=7), [{"x": 1.5}, None], [("k", {"y": 2})], {"z": [None, 1]})
    batch = pa.RecordBatch.from_pylist([dict(zip(schema.names, row)), dict.fromkeys(schema.names)], schema=arrow_schema(schema))
    w = RowWriter(arrow_schema(schema), [f.dataType for f in schema.fields], "f")
    assert w.batch(list(batch_records(batch))).equals(batch)


def test_pandas_times_that_would_change_are_refused():
    import pandas as pd

    ts = col(T.TimestampType())
    assert stored(writer(ts), [(pd.Timestamp("2024-01-01 12:00:00.000001", tz="UTC"),)]) == [
        (dt.datetime(2024, 1, 1, 12, 0, 0, 1, tzinfo=UTC),)]
    assert "(Spark keeps microseconds: its nanoseconds would be lost)" in refused(
        writer(ts), [(pd.Timestamp("2024-01-01 00:00:00.000000001"),)])
    assert "got NaTType NaT (NaT is not a time; use None for a missing one)" in refused(writer(ts), [(pd.NaT,)])
    assert "(NaT is not a date" in refused(writer(col(T.DateType())), [(pd.NaT,)])
    assert "(out of range for bigint" in refused(writer(LONG), [(Decimal("1E+100000000"),)])
