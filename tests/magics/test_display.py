"""The preview a DataStream shows in a notebook: counts and first records of every partition, one job."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fw_magics as fw
from fw_magics.datastream import preview as display
from tests.conftest import is_connect
from tests.datastream.helpers import SCHEMA, SPARK_SETTINGS, record, spark_examples
from tests.magics.conftest import Jobs

pytestmark = [pytest.mark.spark, pytest.mark.core]


@settings(SPARK_SETTINGS, max_examples=spark_examples(8))
@given(st.lists(record(), max_size=12), st.integers(1, 4), st.integers(0, 4))
def test_preview_shows_each_partitions_count_and_first_records(spark, rows, partitions, show):
    shown = display.preview(fw.from_records(rows, SCHEMA, partitions=partitions), show)
    # reference: from_records puts the i-th contiguous chunk in partition i
    bounds = [len(rows) * i // partitions for i in range(partitions + 1)]
    chunks = [rows[bounds[i]:bounds[i + 1]] for i in range(partitions)]
    assert list(shown.counts) == [len(c) for c in chunks]
    assert [[tuple(r) for r in head] for head in shown.heads] == [c[:show] for c in chunks]
    assert shown.columns == ("id", "name", "price", "qty")


@pytest.fixture
def odd(spark):
    """Awkward values: markup, nulls, nested records, maps, a dotted column name, an empty partition."""
    return fw.from_records(
        [(1, "<b>&</b>", (2, None), {"k": 1}, [1, 2]), (2, None, None, None, None)],
        "`a.b` long, text string, s struct<x: int, y: string>, m map<string, int>, l array<int>",
        partitions=3, name="odd",
    )


def test_text_and_html_render_every_value(odd):
    bundle = display.mimebundle(odd)
    text, markup = bundle["text/plain"], bundle["text/html"]
    assert text.splitlines()[:2] == [
        "DataStream 'odd': 3 partitions, 2 records  [a.b: bigint, text: string, s: struct<x:int,y:string>, "
        "m: map<string,int>, l: array<int>]",
        "partition 0 (0 records)",
    ]
    assert "(empty)" in text and "{x: 2, y: null}" in text and "{k: 1}" in text and "[1, 2]" in text
    assert "&lt;b&gt;&amp;&lt;/b&gt;" in markup and "<b>&</b>" not in markup
    assert "partition 2<br><small>1 record</small>" in markup and "<i>(empty)</i>" in markup


def test_show_zero_gives_counts_only(spark):
    shown = display.preview(fw.from_records([(i,) for i in range(5)], "n int", partitions=2), show=0)
    assert shown.counts == (2, 3) and shown.heads == ((), ())
    assert "… 3 more" in display.render_text(shown)


def test_display_runs_one_spark_job(spark, shell):
    if is_connect(spark):
        pytest.skip("Spark Connect has no job status tracker")
    stream = fw.from_records([(i, i % 3) for i in range(20)], "n long, k long", partitions=4)
    sorted_stream = stream.full_window_partition().sort_partition("n", "desc")
    jobs = Jobs(spark)
    formatted, _ = shell.display_formatter.format(sorted_stream)  # what a notebook asks for
    assert jobs.ran == 1
    assert {"text/plain", "text/html"} <= set(formatted)
    # keyed: a hash exchange, and no more jobs than reading the result once
    keyed = stream.key_by("k").full_window_partition().sort_partition("n")
    jobs = Jobs(spark)
    keyed.to_arrow()
    once = jobs.ran
    jobs = Jobs(spark)
    display.preview(keyed)
    assert jobs.ran == once
