"""Every operation against the pure-Python reference model, on random partitions."""

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyspark.sql import functions as F

import fw_magics as fw
from tests import reference as ref
from tests.datastream.helpers import SPARK_SETTINGS, flatten, partitioned, small, tuples

pytestmark = [pytest.mark.spark, pytest.mark.core]


@SPARK_SETTINGS
@given(parts=partitioned())
def test_map_partition_matches_model(make, parts):
    def summary(records):
        rows = list(records)
        yield (len(rows), sum(1 for r in rows if r.name is None), max((r.id for r in rows), default=None))
        for r in rows[:2]:
            yield (r.qty, len(r.name or ""), r.id)

    out = make(parts).full_window_partition().map_partition(summary, "a long, b long, c long")
    model = ref.map_partition(
        parts,
        lambda rs: (lambda rows: [(len(rows), sum(1 for r in rows if r[1] is None), max((r[0] for r in rows), default=None))]
                    + [(r[3], len(r[1] or ""), r[0]) for r in rows[:2]])(list(rs)),
    )
    assert tuples(out.collect_partitions()) == model


@SPARK_SETTINGS
@given(parts=partitioned(), position=st.sampled_from([0, 1, 2, 3]), descending=st.booleans())
def test_sort_partition_matches_model(make, parts, position, descending):
    order = "desc" if descending else "asc"
    out = tuples(make(parts).full_window_partition().sort_partition(position, order).collect_partitions())
    for got, part in zip(out, parts, strict=True):
        expected = ref.sort_partition(part, position, descending)
        assert Counter(got) == Counter(part)  # same records, nothing moved between partitions
        assert [r[position] for r in got] == [r[position] for r in expected]


@SPARK_SETTINGS
@given(parts=partitioned(), descending=st.booleans())
def test_sort_by_key_selector_matches_python_sorted(make, parts, descending):
    def key(r):
        return (r.name is not None, r.name or "", r.id)

    out = tuples(make(parts).full_window_partition().sort_partition(key, "desc" if descending else "asc").collect_partitions())
    for got, part in zip(out, parts, strict=True):
        pykey = lambda r: (r[1] is not None, r[1] or "", r[0])  # noqa: E731
        assert Counter(got) == Counter(part)
        assert [pykey(r) for r in got] == sorted(map(pykey, part), reverse=descending)


@SPARK_SETTINGS
@given(parts=partitioned(ids=small))
def test_reduce_matches_model(make, parts):
    fn = lambda a, b: (a[0] + b[0], max(a[1] or "", b[1] or ""), a[2], b[3])  # noqa: E731
    out = make(parts).full_window_partition().reduce(fn)
    assert tuples(out.collect_partitions()) == ref.reduce(parts, fn)


class CountAndMin(fw.AggregateFunction):
    schema = "n long, low long"

    def create_accumulator(self):
        return (0, None)

    def add(self, value, acc):
        low = value.id if acc[1] is None else min(acc[1], value.id)
        return (acc[0] + 1, low)

    def get_result(self, acc):
        return acc


class CountAndMinBatch(CountAndMin):
    def add_batch(self, batch, acc):
        import pyarrow.compute as pc

        low = pc.min(batch.column("id")).as_py()
        merged = low if acc[1] is None else min(acc[1], low)
        return (acc[0] + batch.num_rows, merged)


@SPARK_SETTINGS
@given(parts=partitioned(), vectorized=st.booleans())
def test_aggregate_function_matches_model(make, parts, vectorized):
    agg = CountAndMinBatch() if vectorized else CountAndMin()
    out = make(parts).full_window_partition().aggregate(agg)
    add = lambda r, acc: (acc[0] + 1, r[0] if acc[1] is None else min(acc[1], r[0]))  # noqa: E731
    model = ref.aggregate(parts, lambda: (0, None), add, lambda acc: acc)
    assert tuples(out.collect_partitions()) == model


@SPARK_SETTINGS
@given(parts=partitioned(ids=small))
def test_column_aggregate_matches_model(make, parts):
    out = make(parts).full_window_partition().aggregate([F.sum("id"), F.count("*"), F.count("name"), F.min("qty")])
    model = [
        [(sum(r[0] for r in p) if p else None, len(p), sum(r[1] is not None for r in p),
          min((r[3] for r in p if r[3] is not None), default=None))]
        for p in parts
    ]
    assert tuples(out.collect_partitions()) == model


@SPARK_SETTINGS
@given(parts=partitioned(ids=st.integers(0, 5)))
def test_keyed_operations_match_model(make, parts):
    ds = make(parts)
    records = flatten(parts)
    groups = ref.by_key(records, lambda r: r[0])
    windows = ds.key_by("id").full_window_partition()

    # map_partition: once per key, with exactly that key's records
    calls = windows.map_partition(lambda rs: (lambda rows: [(rows[0].id, len(rows), len({r.id for r in rows}))])(list(rs)),
                                  "k long, n long, distinct_keys long").collect()
    assert sorted(tuple(r) for r in calls) == sorted((k, len(v), 1) for k, v in groups.items())

    # reduce and aggregate: one record per key
    reduced = windows.reduce(lambda a, b: (a.id, a.name, a.price, (a.qty or 0) + (b.qty or 0))).collect()
    assert sorted(r.id for r in reduced) == sorted(groups)
    assert {r.id: r.qty for r in reduced} == {
        k: (v[0][3] if len(v) == 1 else sum(r[3] or 0 for r in v)) for k, v in groups.items()
    }
    counted = windows.aggregate(F.count("*").alias("n")).collect()
    assert sorted(tuple(r) for r in counted) == sorted((k, len(v)) for k, v in groups.items())

    # sort: each key contiguous, sorted within
    for part in windows.sort_partition("qty", "desc").collect_partitions():
        keys = [r.id for r in part]
        assert keys == sorted(keys, key=lambda k: keys.index(k)), "a key's records are not contiguous"
        for k in set(keys):
            qtys = [r.qty for r in part if r.id == k]
            assert qtys == sorted(qtys, key=lambda q: (q is not None, q if q is not None else 0), reverse=True)
    assert Counter(tuple(r) for r in windows.sort_partition("qty").collect()) == Counter(records)
