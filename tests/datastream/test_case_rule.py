"""Spark's case rule on a real session (issue 17, item 3): ``key_by("Y")`` over ``x, y`` works
as ``df.groupBy("Y")`` does, unless ``spark.sql.caseSensitive`` is true.

The reference: the same grouping done in plain Python on the lower-cased names; and Spark's
own ``groupBy`` on the spelling the user typed. The pure resolver is covered on many more
names in ``tests/test_column_case.py``.
"""

from __future__ import annotations

import contextlib
from collections import defaultdict

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyspark.sql import functions as F

import fw_magics as fw
from tests.datastream.helpers import SPARK_SETTINGS

pytestmark = [pytest.mark.spark]

ROWS = [(1, 1, 10), (2, 1, 20), (5, 2, 30), (7, 3, 40), (4, 3, 50), (3, 2, 60)]


def spellings(name: str):
    """Every spelling of ``name`` that differs only in case."""
    return st.lists(st.booleans(), min_size=len(name), max_size=len(name)).map(
        lambda upper: "".join(c.upper() if u else c for c, u in zip(name, upper)))


@contextlib.contextmanager
def case_sensitive(spark):
    spark.conf.set("spark.sql.caseSensitive", "true")
    try:
        yield
    finally:
        spark.conf.unset("spark.sql.caseSensitive")


def largest_x_per_key(rows):
    best = defaultdict(lambda: None)
    for x, key, z in rows:
        if best[key] is None or x > best[key][0]:
            best[key] = (x, key, z)
    return sorted(best.values())


@SPARK_SETTINGS.__class__(parent=SPARK_SETTINGS, max_examples=2)
@given(key=spellings("key"), x=spellings("x"))
def test_key_and_sort_fields_in_any_case_give_what_the_lower_case_names_give(spark, key, x):
    frame = spark.createDataFrame(ROWS, "x long, key long, z long")
    stream = fw.from_dataframe(frame)
    out = stream.key_by(key).full_window_partition().reduce(lambda a, b: a if a.x >= b.x else b)
    assert out.schema.names == ["x", "key", "z"]  # the columns keep their own names
    assert sorted(tuple(r) for r in out.collect()) == largest_x_per_key(ROWS)
    parts = stream.full_window_partition().sort_partition(x, "desc").collect_partitions()
    assert [[r.x for r in p] for p in parts] == [sorted((r.x for r in p), reverse=True) for p in parts]
    assert sorted(r.x for p in parts for r in p) == sorted(r[0] for r in ROWS)


def test_the_magic_takes_names_in_any_case_as_groupBy_does(spark):
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "fw_magics")
    shell.user_ns["df"] = frame = spark.createDataFrame(ROWS, "x long, y long, z long")
    result = shell.run_cell("%%fullwindow aggregate sum(X) max(Z) key=Y\ndf")
    assert result.success, repr(result.error_in_exec)
    expected = frame.groupBy("Y").agg(F.sum("X"), F.max("Z")).collect()
    assert sorted(tuple(r) for r in result.result.collect()) == sorted(tuple(r) for r in expected)
    assert sorted(tuple(r) for r in expected) == [(1, 3, 20), (2, 8, 60), (3, 11, 50)]


@pytest.mark.core  # the rule is read from the session: under Spark Connect too
def test_case_sensitive_sessions_are_followed_with_a_did_you_mean(spark):
    frame = spark.createDataFrame(ROWS, "x long, y long, z long")
    with case_sensitive(spark):
        with pytest.raises(fw.FullWindowError, match=r"no column 'Y' \(did you mean 'y'\?\); columns are: x, y, z"):
            fw.from_dataframe(frame).key_by("Y")
        both = spark.createDataFrame([(1, 2)], "a long, A long")
        stream = fw.from_dataframe(both).key_by("A").full_window_partition().reduce(lambda a, b: a)
        assert [tuple(r) for r in stream.collect()] == [(1, 2)]


def test_a_name_matching_two_columns_is_ambiguous_naming_both(spark):
    both = fw.from_dataframe(spark.createDataFrame([(1, 2)], "a long, A long"))  # from_records refuses such a schema
    with pytest.raises(fw.FullWindowError, match="column 'a' is ambiguous: it matches 'a' and 'A'"):
        both.key_by("a")
    with pytest.raises(fw.FullWindowError, match="column 'A' is ambiguous"):
        both.full_window_partition().sort_partition("A")
