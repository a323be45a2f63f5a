"""``spark_hash.partition`` puts a key in the partition Spark's ``repartition(n, *keys)`` puts it in
(the hint a restored worker uses to open one base file instead of all): randomized keys of every
type it hashes, nulls and multi-byte text included, against a real Spark session."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from fw_magics.runtime.streaming.keyed.seed import integer_widths
from fw_magics.runtime.streaming.keyed.spark_hash import partition

_UTC = dt.timezone.utc
_KEY = st.tuples(
    st.none() | st.integers(-2**63, 2**63 - 1),
    st.none() | st.integers(-2**31, 2**31 - 1),
    st.none() | st.text(max_size=9),
    st.none() | st.binary(max_size=9),
    st.none() | st.booleans(),
    st.none() | st.dates(min_value=dt.date(1, 1, 1)),
    st.none() | st.datetimes(min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2200, 1, 1),
                             timezones=st.just(_UTC)),
    st.none() | st.integers(-2**15, 2**15 - 1),
)
_DDL = "l long, i int, s string, b binary, f boolean, d date, t timestamp, h short"
_ARROW = pa.schema([("l", pa.int64()), ("i", pa.int32()), ("s", pa.string()), ("b", pa.binary()),
                    ("f", pa.bool_()), ("d", pa.date32()), ("t", pa.timestamp("us", tz="UTC")), ("h", pa.int16())])


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(keys=st.lists(_KEY, min_size=1, max_size=40), n=st.integers(1, 9))
def test_a_key_lands_where_spark_hash_partitioning_puts_it(spark, keys, n):
    columns = _DDL.replace(",", "").split()[::2]
    frame = spark.createDataFrame(keys, _DDL).repartition(n, *columns).withColumn("p", F.spark_partition_id())
    widths = integer_widths(_ARROW)
    for row in frame.collect():
        key = tuple(row[c] for c in columns)
        key = key[:6] + (None if key[6] is None else key[6].astimezone(_UTC),) + key[7:]
        assert partition(key, widths, n) == row["p"], key


def test_a_type_it_does_not_hash_says_so():
    assert partition((1.5,), (None,), 4) is None
    assert partition(("a", 2.0), (None, None), 4) is None
    assert partition((None,), (None,), 3) == 42 % 3  # a null leaves the seed as it is
