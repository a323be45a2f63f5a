"""Non-keyed operations keep the partitioning: no shuffle, same count, i comes from i."""

import os

import pytest
from pyspark.sql import functions as F

import fw_magics as fw
from tests.datastream.helpers import SCHEMA, plan_text

pytestmark = [pytest.mark.spark, pytest.mark.core]

PARTS = [[(1, "a", 1.0, 1), (2, "b", 2.0, 2)], [], [(3, "c", 3.0, 3)], [(4, "d", None, None), (5, "e", 5.0, 5)]]


class Total(fw.AggregateFunction):
    schema = "n long, ids string"

    def create_accumulator(self):
        return []

    def add(self, value, acc):
        return acc + [value.id]

    def get_result(self, acc):
        return (len(acc), ",".join(map(str, acc)))


OPERATIONS = {
    "map": lambda w: w.map_partition(lambda rs: [(sum(r.id for r in rs),)], "s long"),
    "sort": lambda w: w.sort_partition("id", "desc"),
    "sort-selector": lambda w: w.sort_partition(lambda r: -r.id),
    "reduce": lambda w: w.reduce(lambda a, b: (a.id + b.id, a.name, a.price, a.qty)),
    "aggregate-function": lambda w: w.aggregate(Total()),
}


@pytest.mark.parametrize("op", sorted(OPERATIONS))
def test_no_shuffle_and_partition_i_from_partition_i(make, op):
    ds = make(PARTS)
    out = OPERATIONS[op](ds.full_window_partition())
    exchanges = plan_text(ds.to_dataframe()).count("Exchange")  # the test input's own layout
    assert plan_text(out.to_dataframe()).count("Exchange") == exchanges
    parts = out.collect_partitions()
    assert len(parts) == len(PARTS)
    if op in ("sort", "sort-selector"):
        assert [sorted(tuple(r) for r in p) for p in parts] == [sorted(p) for p in PARTS]
    elif op == "map":
        assert [[tuple(r) for r in p] for p in parts] == [[(sum(r[0] for r in p),)] for p in PARTS]
    elif op == "reduce":
        assert [[r.id for r in p] for p in parts] == [[sum(r[0] for r in p)] if p else [] for p in PARTS]
    else:
        assert [tuple(p[0]) for p in parts] == [(len(p), ",".join(str(r[0]) for r in p)) for p in PARTS]


def test_column_aggregate_one_record_per_partition_in_place(make):
    ds = make(PARTS)
    out = ds.full_window_partition().aggregate([F.sum("id"), F.count("*"), F.max("price")])
    parts = out.collect_partitions()
    assert [[tuple(r) for r in p] for p in parts] == [
        [(3, 2, 2.0)], [(None, 0, None)], [(3, 1, 3.0)], [(9, 2, 5.0)]
    ]
    assert out.columns == ["sum(id)", "count(1)", "max(price)"]


def test_column_aggregate_placement_is_paid_only_where_partitions_are_read(make, tmp_path):
    # to_dataframe() leaves the n rows in one partition (no second exchange), in partition order;
    # every read that sees partitions gets partition i's row in partition i.
    ds = make(PARTS)
    out = ds.full_window_partition().aggregate([F.sum("id").alias("s"), F.count("*").alias("n")])
    expected = [(3, 2), (None, 0), (3, 1), (9, 2)]
    exchanges = plan_text(ds.to_dataframe()).count("Exchange")
    assert plan_text(out.to_dataframe()).count("Exchange hashpartitioning") == exchanges + 1  # the groupBy's own
    assert [tuple(r) for r in out.collect()] == expected
    assert [tuple(r) for r in out.to_dataframe().collect()] == expected
    assert out.to_pandas()["n"].tolist() == [2, 0, 1, 2]
    assert out.num_partitions() == 4 and out.planned_partitions() == 4

    def tag(records):
        from pyspark import TaskContext

        for r in records:
            yield (TaskContext.get().partitionId(), r.s, r.n)

    later = out.full_window_partition().map_partition(tag, "p int, s long, n long").collect_partitions()
    assert [[tuple(r) for r in p] for p in later] == [[(i, *row)] for i, row in enumerate(expected)]
    from fw_magics.datastream.preview import preview

    shown = preview(out)
    assert shown.counts == (1, 1, 1, 1) and [[tuple(r) for r in h] for h in shown.heads] == [[r] for r in expected]
    result = out.execute(job_dir=str(tmp_path), job_name="agg")
    assert [[tuple(r) for r in p] for p in result.collect_partitions()] == [[r] for r in expected]


def test_map_partition_called_once_per_partition_including_empty(make, tmp_path):
    ds = make(PARTS)
    marker_dir = str(tmp_path)

    def count_calls(records):
        import uuid

        from pyspark import TaskContext

        n = sum(1 for _ in records)
        pid = TaskContext.get().partitionId()
        open(os.path.join(marker_dir, f"{pid}-{uuid.uuid4().hex}"), "w").close()
        yield (pid, n)

    out = ds.full_window_partition().map_partition(count_calls, "pid int, n long").collect_partitions()
    assert [[tuple(r) for r in p] for p in out] == [[(i, len(p))] for i, p in enumerate(PARTS)]
    calls = sorted(name.split("-")[0] for name in os.listdir(marker_dir))
    assert calls == ["0", "1", "2", "3"]


def test_map_partition_feeds_lazily_memory_bounded_by_a_batch(spark):
    # 100,000 records of 1 KB each in one partition: ~100 MB if materialized at once.
    frame = spark.range(0, 100_000, 1, 1).select("id", F.repeat(F.lit("x"), 1000).alias("payload"))
    ds = fw.from_dataframe(frame)

    def peak(records):
        import tracemalloc

        assert not isinstance(records, (list, tuple))
        tracemalloc.start()
        count = 0
        for r in records:
            count += len(r.payload) > 0
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        yield (count, top)

    (row,) = ds.full_window_partition().map_partition(peak, "n long, peak long").collect()
    assert row.n == 100_000
    assert row.peak < 40_000_000, f"peak Python memory {row.peak} bytes: the partition was materialized"


def test_sort_happens_in_the_jvm(make):
    ds = make(PARTS)
    by_column = plan_text(ds.full_window_partition().sort_partition("price").to_dataframe())
    assert "Sort [price" in by_column and "MapInArrow" not in by_column.split("Sort [price")[0]
    by_selector = plan_text(ds.full_window_partition().sort_partition(lambda r: r.name).to_dataframe())
    assert "Sort [__fw_key" in by_selector  # the selector only computes the key; Spark sorts


def test_reduce_on_empty_partition_emits_nothing(spark):
    ds = fw.from_records([], "v long", partitions=3)
    assert ds.full_window_partition().reduce(lambda a, b: a).collect_partitions() == [[], [], []]


def test_aggregate_on_empty_partition_gives_result_of_empty_accumulator(spark):
    ds = fw.from_records([(5,)], "v long", partitions=3)

    class Sum(fw.AggregateFunction):
        def create_accumulator(self):
            return 0

        def add(self, value, acc):
            return acc + value.v

        def get_result(self, acc):
            return acc

    parts = ds.full_window_partition().aggregate(Sum()).collect_partitions()
    assert [[tuple(r) for r in p] for p in parts] == [[(0,)], [(0,)], [(5,)]]


@pytest.mark.parametrize("keys", [["qty"], ["name", "qty"]])
def test_keyed_column_aggregate_combines_before_the_exchange_and_keeps_placement(spark, keys):
    # The stream's parallelism equals spark.sql.shuffle.partitions: the case where Spark
    # would otherwise drop the placing repartition and let adaptive execution coalesce.
    n = int(spark.conf.get("spark.sql.shuffle.partitions"))
    records = [(i, f"n{i % 3}" if i % 5 else None, float(i), i % 11 if i % 7 else None) for i in range(400)]
    ds = fw.from_records(records, SCHEMA, partitions=n)
    keyed = ds.key_by(keys).full_window_partition()
    out = keyed.aggregate([F.sum("price").alias("total"), F.count("*").alias("n")])
    plan = plan_text(out.to_dataframe())
    assert "partial_sum" in plan  # each input partition is combined before the shuffle

    def key_sets(parts):
        return [{tuple(getattr(r, k) for k in keys) for r in p} for p in parts]

    parts = out.collect_partitions()
    assert len(parts) == n
    assert key_sets(parts) == key_sets(keyed.sort_partition("id").collect_partitions())
    totals = {}
    for r in records:
        key = tuple(r[SCHEMA_NAMES.index(k)] for k in keys)
        total, count = totals.get(key, (0.0, 0))
        totals[key] = (total + r[2], count + 1)
    assert {tuple(getattr(r, k) for k in keys): (r.total, r.n) for p in parts for r in p} == totals


SCHEMA_NAMES = [f.split()[0] for f in SCHEMA.split(", ")]


@pytest.mark.parametrize("make, count", [
    (lambda df: df.repartition(3), 3),  # a count in the plan: kept (issue 17, item 9)
    (lambda df: df.repartition(2, "qty").filter("id > 0"), 2),
    (lambda df: df.groupBy("id", "name", "price", "qty").count().drop("count"), None),  # unknown: shuffle partitions
])
def test_keyed_output_keeps_the_partition_count_the_plan_fixes(spark, make, count):
    records = [(i, f"n{i % 4}", float(i), i % 5) for i in range(1, 41)]
    frame = make(spark.createDataFrame(records, SCHEMA))
    expected = count or int(spark.conf.get("spark.sql.shuffle.partitions"))
    keyed = fw.from_dataframe(frame).key_by("qty").full_window_partition()
    sorted_parts = keyed.sort_partition("id").collect_partitions()
    counted = keyed.aggregate([F.count("*").alias("n")]).collect_partitions()
    assert len(sorted_parts) == len(counted) == expected
    assert sorted(tuple(r) for p in sorted_parts for r in p) == records
    home = {r.qty: i for i, p in enumerate(sorted_parts) for r in p}  # each key in one partition ...
    assert len({(r.qty, i) for i, p in enumerate(sorted_parts) for r in p}) == len(home)
    assert {r.qty: i for i, p in enumerate(counted) for r in p} == home  # ... the same for both operations
    assert {r.qty: r.n for p in counted for r in p} == {q: 8 for q in range(5)}
