"""The keyed full-window reduce combines each partition's records per key before its shuffle (issue 52)."""

import functools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fw_magics.datastream.physical import combine
from tests.datastream.helpers import SPARK_SETTINGS, partitioned, plan_text

pytestmark = [pytest.mark.spark, pytest.mark.core]

SCHEMA = "k long, s string"


def nest(a, b):
    """Not associative on purpose: the result shows which records were folded together, and in what order."""
    return (a.k, f"({a.s},{b.s})")


def test_each_partition_is_folded_before_the_shuffle(make):
    ds = make([[(1, "a"), (2, "x"), (1, "b")], [(1, "c"), (1, "d"), (2, "y")]], SCHEMA)
    out = {r.k: r.s for r in ds.key_by("k").full_window_partition().reduce(nest).collect()}
    # a partial per partition ((a,b) and (c,d)), folded in the partitions' order: without the combine it is
    # (((a,b),c),d), a record at a time
    assert out == {1: "((a,b),(c,d))", 2: "(x,y)"}


def test_after_the_shuffle_one_python_call_per_partition_folds_each_keys_run(make, small_batches):
    """Null, empty and NUL-bearing string keys: Spark sorts each partition's partials by key, partition and
    position, and the fold walks each key's run, across Arrow batches of 2 (no applyInArrow call per key)."""
    ds = make([[(None, "a"), ("", "b"), (None, "c"), ("x", "d")], [("", "e"), (None, "f"), ("x\x00", "g")],
               [(None, "h")]], "k string, s string")
    reduced = ds.key_by("k").full_window_partition().reduce(nest)
    assert "FlatMapGroupsInArrow" not in plan_text(reduced.to_dataframe())
    out = {r.k: r.s for r in reduced.collect()}
    assert out == {None: "(((a,c),f),h)", "": "(b,e)", "x": "d", "x\x00": "g"}


def test_a_key_selector_and_several_key_columns_combine_too(make):
    rows = [[(1, "a"), (1, "b"), (3, "z")], [(1, "c"), (3, "w"), (1, "d")]]
    by_selector = make(rows, SCHEMA).key_by(lambda r: r.k % 2).full_window_partition().reduce(nest).collect()
    assert sorted(r.s for r in by_selector) == ["(((a,b),z),((c,w),d))"]
    by_columns = make(rows, SCHEMA).key_by(["k", "s"]).full_window_partition().reduce(nest).collect()
    assert sorted(r.s for r in by_columns) == ["a", "b", "c", "d", "w", "z"]


def test_float_keys_are_never_merged_by_python_equality(make):
    # -0.0 == 0.0 in Python, NaN != NaN: a double key's records cross the shuffle one by one, grouped by Spark
    ds = make([[(0.0, "a"), (-0.0, "b"), (0.0, "c")]], "k double, s string")
    out = ds.key_by("k").full_window_partition().reduce(lambda a, b: (a.k, a.s + b.s)).collect()
    assert sorted(r.s for r in out) in (["ab" + "c"], ["ac", "b"])  # Spark's grouping decides, not Python's ==
    assert sum(len(r.s) for r in out) == 3


DEFAULT = combine.Budget(combine.SAMPLE, combine.WORTH, combine.LIMIT)


def concat(a, b):
    """Associative, not commutative: the order a key's records are folded in shows in the result."""
    return (a[0], (a[1] or "") + "|" + (b[1] or ""), a[2], (a[3] or 0) + (b[3] or 0))


@SPARK_SETTINGS
@given(parts=partitioned(ids=st.integers(0, 3)), key=st.sampled_from([0, 3]),
       budget=st.sampled_from([DEFAULT, combine.Budget(2, 0.5, 100), combine.Budget(1, 0.0, 1),
                               combine.Budget(1, 1.0, 2)]))
def test_keyed_reduce_is_the_fold_in_input_order(make, parts, key, budget, monkeypatch_module, small_batches):
    """Against the model: each key's records folded in the order of the partitions, then of their positions;
    the budgets send records as they come, or partials at a limit, part way through a partition (whose
    records come in Arrow batches of 2, so a key's run after the shuffle spans batches). Keyed by ``id`` or
    by ``qty`` (null keys too; the fold rewrites ``qty``, so results are compared as a multiset)."""
    monkeypatch_module(budget)
    out = make(parts).key_by(["id", "name", "price", "qty"][key]).full_window_partition().reduce(concat).collect()
    keys: dict = {}
    for part in parts:
        for record in part:
            keys.setdefault(record[key], []).append(record)
    model = [functools.reduce(concat, records) if len(records) > 1 else records[0] for records in keys.values()]
    assert sorted(map(repr, map(tuple, out))) == sorted(map(repr, model))


@pytest.fixture
def small_batches(spark):
    """Arrow batches of 2 records into Python, so a partition's combine judges and sends part way through."""
    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    saved = spark.conf.get(key)
    spark.conf.set(key, "2")
    yield
    spark.conf.set(key, saved)


@pytest.fixture
def monkeypatch_module():
    """Set the combine's budget for one example (the driver reads it when the plan is made)."""
    saved = (combine.SAMPLE, combine.WORTH, combine.LIMIT)

    def set_budget(budget):
        combine.SAMPLE, combine.WORTH, combine.LIMIT = budget

    yield set_budget
    combine.SAMPLE, combine.WORTH, combine.LIMIT = saved
