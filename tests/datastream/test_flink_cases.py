"""The cases of Flink's NonKeyedPartitionWindowedStreamITCase, on PySpark."""

import pytest

import fw_magics as fw

pytestmark = [pytest.mark.spark, pytest.mark.core]


def concat(field):
    def fn(records):
        yield ("".join(str(getattr(r, field)) for r in records),)

    return fn


def test_map_partition_sees_every_record_of_its_subtask(spark):
    ds = fw.from_records([("Test",)] * 100, "value string", partitions=2)
    out = ds.full_window_partition().map_partition(concat("value"), "s string").collect()
    assert sorted(r.s for r in out) == ["Test" * 50, "Test" * 50]


def test_reduce(spark):
    ds = fw.from_records([(1,), (1,), (998,), (1,), (1,), (998,)], "v long", partitions=2)
    out = ds.full_window_partition().reduce(lambda a, b: (a.v + b.v,)).collect()
    assert sorted(r.v for r in out) == [1000, 1000]


class CountDown(fw.AggregateFunction):
    schema = "value string"

    def create_accumulator(self):
        return 100

    def add(self, value, accumulator):
        return accumulator - value.v

    def get_result(self, accumulator):
        return str(accumulator)


def test_aggregate(spark):
    ds = fw.from_records([(1,), (2,), (3,), (1,), (2,), (3,)], "v long", partitions=2)
    out = ds.full_window_partition().aggregate(CountDown()).collect()
    assert sorted(r.value for r in out) == ["94", "94"]


TUPLES = [("Test", 0), ("Test", 3), ("Test", 1), ("Test", 0), ("Test", 3), ("Test", 1)]


@pytest.mark.parametrize(
    "field", [1, "value", lambda r: r.value], ids=["position", "name", "key-selector"]
)
@pytest.mark.parametrize("order,expected", [(fw.Order.ASCENDING, "013"), ("desc", "310")])
def test_sort_partition(spark, field, order, expected):
    ds = fw.from_records(TUPLES, "key string, value int", partitions=2)
    sorted_ = ds.full_window_partition().sort_partition(field, order)
    out = sorted_.full_window_partition().map_partition(concat("value"), "s string").collect()
    assert [r.s for r in out] == [expected, expected]
