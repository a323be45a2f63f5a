"""The keyed full-window reduce combines each partition's records per key before its shuffle (issue 52)."""

import functools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fw_magics.datastream.physical import combine
from tests.datastream.helpers import SPARK_SETTINGS, partitioned

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
@given(parts=partitioned(ids=st.integers(0, 3)),
       budget=st.sampled_from([DEFAULT, combine.Budget(2, 0.5, 100), combine.Budget(1, 0.0, 1),
                               combine.Budget(1, 1.0, 2)]))
def test_keyed_reduce_is_the_fold_in_input_order(make, parts, budget, monkeypatch_module, small_batches):
    """Against the model: each key's records folded in the order of the partitions, then of their positions;
    the budgets send records as they come, or partials at a limit, part way through a partition (whose
    records come in Arrow batches of 2)."""
    monkeypatch_module(budget)
    out = make(parts).key_by("id").full_window_partition().reduce(concat).collect()
    keys: dict = {}
    for part in parts:
        for record in part:
            keys.setdefault(record[0], []).append(record)
    model = {k: functools.reduce(concat, records) if len(records) > 1 else records[0] for k, records in keys.items()}
    assert {r.id: tuple(r) for r in out} == model
    assert len(out) == len(model)


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
