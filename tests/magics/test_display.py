"""The preview a DataStream shows in a notebook: counts and first records of every partition, one job."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fw_magics as fw
from fw_magics.datastream import preview as display
from tests.conftest import is_connect
from tests.datastream.helpers import SCHEMA, SPARK_SETTINGS, record, spark_examples
from tests.magics.conftest import Jobs, ok, run

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


def test_an_unbounded_stream_as_a_cell_s_value_says_what_it_reads_and_how_to_start_it(spark, shell, tmp_path):
    """Issue 47, item 8: ``readings`` in a cell after ``readings = fw.from_files(...)`` showed a 14-frame
    traceback ending in Spark's "Queries with streaming sources must be executed with writeStream.start()".
    Now: what it reads, its schema, its event time, what is there now (live), how to start it; no Spark job,
    nothing red, in text and HTML."""
    from IPython.utils.capture import capture_output

    from tests.streaming.files import Area

    area = Area(tmp_path)
    for rows in ([(1, 2, 3)], [(2, 3, 4), (5, 6, 7)]):
        area.write(rows, "readings")
    shell.user_ns["folder"] = area.source("readings")
    ok(shell, 'readings = fw.from_files(folder, "parquet", "k long, v long, ts timestamp", event_time="ts", '
              'watermark_delay="10 seconds")')
    jobs = Jobs(spark)
    with capture_output() as shown:
        result = run(shell, "readings")
    assert result.success and result.error_in_exec is None
    seen = shown.stdout + shown.stderr
    assert "Traceback" not in seen and "writeStream" not in seen and "Error" not in seen, seen
    assert "DataStream 'files(readings)': unbounded, nothing runs until it is started" in seen
    assert f"the folder {area.source('readings')}: parquet files named *.parquet" in seen
    assert "k: bigint, v: bigint, ts: timestamp" in seen and "ts, watermark 10 seconds behind" in seen
    assert jobs.ran in (0, None)
    formatted, _ = shell.display_formatter.format(shell.user_ns["readings"])  # what a notebook stores
    text, page = formatted["text/plain"], formatted["text/html"]
    assert "2 files" in text and ".start()" in text and "<th" in page and "2 files" in page
    assert "writeStream.start" not in text + page
    area.write([(9, 9, 9)], "readings")  # what is there now is read when shown: a third file
    assert "3 files" in shell.display_formatter.format(shell.user_ns["readings"])[0]["text/plain"]

    # a stream without a backlog, and a streaming DataFrame of Spark's own: also a summary, not a traceback
    shell.user_ns["plain"] = fw.from_files(area.source("readings"), "parquet", "k long", backlog=False)
    shell.user_ns["rate"] = fw.from_dataframe(spark.readStream.format("rate").load())
    for name, said in (("plain", "none (backlog=False)"), ("rate", "writeStream")):
        with capture_output() as shown:
            assert run(shell, name).success
        assert said in shown.stdout and "Traceback" not in shown.stdout + shown.stderr, shown.stdout
