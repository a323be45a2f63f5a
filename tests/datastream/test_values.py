"""No silent coercion on any path that turns Python values into Arrow (issue 16, item 1).

Sources, map_partition, reduce and AggregateFunction results (keyed and not) all refuse a
value that does not fit its column with the same one line; values that do fit are stored
exactly (a whole float in an integer column is stored as its integer).
"""

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from pyspark.sql import types as T

import fw_magics as fw
from tests.datastream.helpers import SPARK_SETTINGS, spark_examples
from tests.value_model import Refused, canonical, good, stored

pytestmark = [pytest.mark.spark, pytest.mark.core]

FRACTION = "does not fit column 'a': expected bigint, got float 29.25 (its fractional part would be lost)"


def one_line(action, *fragments) -> str:
    with pytest.raises(fw.FullWindowError) as caught:
        action()
    message = str(caught.value)
    assert "\n" not in message, message
    for fragment in fragments:
        assert fragment in message, message
    return message


@pytest.fixture
def ds(spark):
    return fw.from_records([(1, 2.5), (2, 3.5), (1, 4.0)], "k long, price double", partitions=2)


class Fraction(fw.AggregateFunction):
    schema = "s long"

    def create_accumulator(self):
        return 0.0

    def add(self, value, accumulator):
        return accumulator + value.price

    def get_result(self, accumulator):
        return accumulator + 0.25  # 7.75 and the like: not a whole number


class Whole(fw.AggregateFunction):
    schema = "s long, n int not null"

    def create_accumulator(self):
        return (0.0, 0)

    def add(self, value, accumulator):
        return (accumulator[0] + value.price * 2, accumulator[1] + 1)

    def get_result(self, accumulator):
        return accumulator  # a float with no fractional part: stored as its integer


def test_from_records_refuses_before_any_job(spark):
    one_line(lambda: fw.from_records([(1.5,)], "a long"),
             "from_records produced a value that does not fit column 'a': expected bigint, got float 1.5 "
             "(its fractional part would be lost)")
    one_line(lambda: fw.from_records([(1,), (None,)], "a long not null"),
             "from_records produced a value that does not fit column 'a': expected bigint not null, got None")
    one_line(lambda: fw.from_records([(1e40,)], "a float"), "(too large for float: it would become inf)")
    one_line(lambda: fw.from_records([((1, 2.5),)], "a struct<x: int, y: int>"),
             "does not fit column 'a' at a.y: expected int, got float 2.5")
    assert fw.from_records([(3.0, 2)], "a long, b double").collect() == [(3, 2.0)]


def test_map_partition_refuses_a_fraction_in_an_integer_column(ds):
    assert one_line(lambda: ds.full_window_partition().map_partition(lambda rs: [(29.25,)], "a long").collect()) == (
        "map_partition function '<lambda>' produced a value that " + FRACTION)


def test_map_partition_refuses_none_where_the_declared_schema_says_not_null(ds):
    # keyed: the other Arrow path (applyInArrow)
    one_line(lambda: ds.key_by("k").full_window_partition().map_partition(lambda rs: [(1, None)], "a long, b string not null").collect(),
             "map_partition function '<lambda>' produced a value that does not fit column 'b': expected string not null, got None")
    out = ds.full_window_partition().map_partition(lambda rs: [(None, "x")], "a long, b string not null").collect()
    assert [tuple(r) for r in out] == [(None, "x"), (None, "x")]


def test_reduce_refuses_a_fraction_in_the_input_schema(ds):
    def halve(a, b):
        return (a.k + b.k / 2, a.price + b.price)

    one_line(lambda: ds.full_window_partition().reduce(halve).collect(),
             "reduce function 'halve' produced a value that does not fit column 'k': expected bigint, got float",
             "(its fractional part would be lost)")
    # keyed by k: the two records of k=1 fold into 2.0, a whole number: stored as 2
    out = sorted(tuple(r) for r in ds.key_by("k").full_window_partition().reduce(lambda a, b: (a.k * 2.0, a.price + b.price)).collect())
    assert out == [(2, 3.5), (2, 6.5)]


def test_aggregate_function_results_are_checked_keyed_and_not(ds):
    one_line(lambda: ds.full_window_partition().aggregate(Fraction()).collect(),
             "Fraction.get_result produced a value that does not fit column 's': expected bigint, got float",
             "(its fractional part would be lost)")
    one_line(lambda: ds.key_by("k").full_window_partition().aggregate(Fraction()).collect(),
             "Fraction.get_result produced a value that does not fit column 's': expected bigint, got float ",
             "(its fractional part would be lost)")
    out = sorted(tuple(r) for r in ds.key_by("k").full_window_partition().aggregate(Whole()).collect())
    assert out == [(1, 13, 2), (2, 7, 1)]


ROW_TYPES = "a long, b float, c decimal(10,2), d array<int>, e struct<x: smallint, y: double>"


@settings(SPARK_SETTINGS, max_examples=spark_examples(5))
@given(data=st.data())
def test_what_spark_stores_is_what_the_model_says(spark, ds, data):
    schema = T.StructType.fromDDL(ROW_TYPES)
    rows = data.draw(st.lists(st.tuples(*[good(f.dataType) for f in schema.fields]), min_size=1, max_size=3))
    try:
        expected = [tuple(stored(v, f.dataType) for v, f in zip(row, schema.fields)) for row in rows]
    except Refused:
        assume(False)  # refusals are the pure tests' business: a failing Spark job costs four task attempts
    out = ds.full_window_partition().map_partition(lambda rs: rows, ROW_TYPES).collect_partitions()
    for partition in out:
        got = [tuple(r.as_dict().values()) if hasattr(r, "as_dict") else tuple(r) for r in partition]
        assert canonical(got) == canonical(expected)
