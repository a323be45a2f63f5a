"""A finished job never comes back stale (issue 16, item 2), and a lost first record can be repaired (item 7).

The rule (docs/recovery.md): the content fingerprint (rows, plan or files of the source, each
function's code and closure, keys, schemas) is recorded with the job. A change that would
leave finished results stale runs a finished job afresh under resume="auto", and is refused
in one line otherwise; a change confined to job vertices with nothing finished just runs.
"""

import json
import os
import re
import subprocess
import sys
import warnings
from collections import Counter

import pytest

import fw_magics as fw
from fw_magics.recovery import JobEventStore, events
from fw_magics.recovery.event_store import encode
from fw_magics.teaching import testing
from tests.conftest import is_connect
from tests.runtime import jobs

pytestmark = [pytest.mark.spark]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def rows(result):
    return sorted(tuple(r) for r in result.collect())


@pytest.fixture
def dirs(tmp_path):
    return str(tmp_path / "jobs"), str(tmp_path / "markers")


def pipeline(records=jobs.RECORDS, last=jobs.summarize, markers=None):
    source = fw.from_records(records, jobs.SCHEMA, partitions=4, name="sales")
    reduced = source.key_by("k").full_window_partition().reduce(jobs.add)
    if markers is not None:
        last = testing.count_calls(last, markers)
    return reduced.key_by("g").full_window_partition().map_partition(last, "g long, n long, total double")


def plain(stream):
    return sorted(tuple(r) for r in stream.collect())


def summarize_from(source: str):
    """A function named ``summarize`` built from source text, as a re-run notebook cell makes it."""
    namespace = {}
    exec(source, namespace)
    return namespace["summarize"]


BODY = "def summarize(records):\n    rows = list(records)\n    yield (rows[0].g, len(rows), sum(r.v for r in rows){})\n"


def make_scaled(factor):
    def summarize(records):
        rows = list(records)
        yield (rows[0].g, len(rows), factor * sum(r.v for r in rows))
    return summarize


CHANGES = {
    "a changed row": (lambda: pipeline(), lambda: pipeline([(0, 0, 0, 1000.0)] + jobs.RECORDS[1:]),
                      "the rows of 'sales'"),
    "a changed function body": (lambda: pipeline(last=summarize_from(BODY.format(""))),
                                lambda: pipeline(last=summarize_from(BODY.format(" + 1.0"))),
                                "the function of 'map_partition(summarize)'"),
    "a changed closure value": (lambda: pipeline(last=make_scaled(1.0)), lambda: pipeline(last=make_scaled(2.0)),
                                "the function of 'map_partition(summarize)'"),
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_a_finished_job_whose_content_changed_runs_afresh_and_says_so(spark, dirs, change):
    job_dir, _ = dirs
    before, after, what = CHANGES[change]
    first = fw.execute(before(), job_dir=job_dir, job_name="sales")
    old = rows(first)
    changed = after()
    assert changed.job_graph() == first.graph  # same graph: only the content differs
    again = fw.execute(changed, job_dir=job_dir, job_name="sales")
    assert rows(again) == plain(changed) != old
    assert again.recovered == frozenset() and again.afresh == f"{what} changed since the recorded run"
    assert f"ran afresh: {what} changed since the recorded run" in repr(again)
    kinds = [e["type"] for e in again.events()]
    assert kinds.count("job_submitted") == 1 and kinds.count("job_finished") == 1  # a fresh log


def test_the_same_pipeline_rebuilt_is_recovered_not_re_run(spark, dirs):
    job_dir, markers = dirs
    fw.execute(pipeline(last=make_scaled(1.0), markers=markers), job_dir=job_dir, job_name="sales")
    again = fw.execute(pipeline(last=make_scaled(1.0), markers=markers), job_dir=job_dir, job_name="sales")
    assert again.ran == frozenset() and again.afresh is None and "afresh" not in repr(again)


def interrupt(job_dir: str, *subtasks) -> None:
    """Make a finished job an interrupted one: its log says these subtasks must run again."""
    store = JobEventStore(os.path.join(job_dir, "sales", "events"))
    store.start()
    for vertex, subtask in subtasks:
        store.write_event(events.subtask_reset(vertex, subtask, "test"))
    store.stop()


def test_an_interrupted_job_whose_finished_work_would_be_stale_is_refused_in_one_line(spark, dirs):
    job_dir, _ = dirs
    fw.execute(pipeline(), job_dir=job_dir, job_name="sales")
    interrupt(job_dir, ("v2", 0))
    changed = pipeline([(0, 0, 0, 1000.0)] + jobs.RECORDS[1:])
    with pytest.raises(fw.ResumeError) as caught:
        fw.execute(changed, job_dir=job_dir, job_name="sales")
    message = str(caught.value)
    assert "\n" not in message and "changed since its recorded run (the rows of 'sales')" in message
    assert "11 of its finished subtasks would be stale; run with resume='never'" in message
    fresh = fw.execute(changed, job_dir=job_dir, job_name="sales", resume="never")
    assert rows(fresh) == plain(changed)


def test_a_change_confined_to_unfinished_vertices_resumes_keeping_the_rest(spark, dirs):
    # what a kill during the last vertex leaves: the last function may be edited before the resume
    job_dir, markers = dirs
    fw.execute(pipeline(last=make_scaled(1.0), markers=markers), job_dir=job_dir, job_name="sales")
    interrupt(job_dir, *[("v2", i) for i in range(4)])
    changed = pipeline(last=make_scaled(2.0), markers=markers)
    resumed = fw.execute(changed, job_dir=job_dir, job_name="sales")
    assert rows(resumed) == plain(changed)
    assert {op for op, _ in resumed.ran} == {"map_partition(summarize)"} and resumed.afresh is None
    again = fw.execute(changed, job_dir=job_dir, job_name="sales")  # the new content was recorded
    assert again.ran == frozenset() and rows(again) == plain(changed)


def test_require_refuses_a_finished_job_that_changed(spark, dirs):
    job_dir, _ = dirs
    fw.execute(pipeline(), job_dir=job_dir, job_name="sales")
    with pytest.raises(fw.ResumeError, match=r"changed since its recorded run \(the rows of 'sales'\).*"
                                             r"run with resume='auto' or 'never' to run it afresh"):
        fw.execute(pipeline(jobs.RECORDS[:-1] + [(59, 4, 2, -1.0)]), job_dir=job_dir, job_name="sales",
                   resume="require")


def rewrite_log(job_dir: str, change) -> None:
    """Rewrite the job's whole event log, each event through ``change(event)`` (as an older fw-magics wrote it)."""
    folder = os.path.join(job_dir, "sales", "events")
    logged = JobEventStore(folder).read_events()
    for name in os.listdir(folder):
        os.remove(os.path.join(folder, name))
    with open(os.path.join(folder, "events.0"), "wb") as f:
        for event in logged:
            f.write(encode(change(event)))


def test_a_job_recorded_before_content_fingerprints_is_resumed_with_one_warning(spark, dirs):
    job_dir, _ = dirs
    fw.execute(pipeline(), job_dir=job_dir, job_name="sales")
    rewrite_log(job_dir, lambda e: {k: v for k, v in e.items() if k != "content"})
    with pytest.warns(UserWarning) as caught:
        again = fw.execute(pipeline(), job_dir=job_dir, job_name="sales")
    lines = [str(w.message) for w in caught if "content fingerprint" in str(w.message)]
    assert len(lines) == 1 and "\n" not in lines[0]
    assert lines[0].endswith("finished results kept without checking everything (the job was recorded without "
                             "a content fingerprint, by an older fw-magics)")
    assert again.ran == frozenset() and rows(again) == jobs.expected()
    assert "kept without checking everything" in repr(again)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the content is recorded now: no warning the next time
        fw.execute(pipeline(), job_dir=job_dir, job_name="sales")


@pytest.mark.extended  # make test-extended (CI): a second driver process
def test_an_identical_pipeline_in_a_fresh_process_is_recovered(spark, dirs):
    job_dir, markers = dirs
    fw.execute(jobs.three_vertex_job(markers), job_dir=job_dir, job_name="sales")
    env = dict(os.environ, PYTHONPATH=ROOT, FW_SPARK_LOG_LEVEL="FATAL", PYTHONHASHSEED="12345")
    env.pop("SPARK_REMOTE", None)
    proc = subprocess.run([sys.executable, "-m", "tests.runtime.jobs", job_dir, markers, "clean"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["ran"] == [] and len(out["recovered"]) == 12
    assert [tuple(r) for r in out["rows"]] == jobs.expected()


# -- DataFrame sources ---------------------------------------------------------------------------


def over(frame):
    return fw.from_dataframe(frame, name="frame").full_window_partition().sort_partition("id")


def test_a_dataframe_source_is_fingerprinted_by_its_query_and_its_local_rows(spark, tmp_path):
    import pandas as pd

    job_dir = str(tmp_path / "jobs")
    frame = spark.createDataFrame(pd.DataFrame({"id": [3, 1, 2]}))
    fw.execute(over(frame), job_dir=job_dir, job_name="df")
    same = fw.execute(over(spark.createDataFrame(pd.DataFrame({"id": [3, 1, 2]}))), job_dir=job_dir, job_name="df")
    assert same.ran == frozenset()
    changed = fw.execute(over(spark.createDataFrame(pd.DataFrame({"id": [3, 1, 7]}))), job_dir=job_dir,
                         job_name="df")
    assert changed.afresh == "the rows of 'frame' changed since the recorded run" and rows(changed) == [(1,), (3,), (7,)]
    filtered = fw.execute(over(spark.createDataFrame(pd.DataFrame({"id": [3, 1, 7]})).filter("id > 1")),
                          job_dir=job_dir, job_name="df")
    assert filtered.afresh.startswith("the query of the DataFrame 'frame'") and rows(filtered) == [(3,), (7,)]


def test_a_file_source_is_fingerprinted_by_its_files(spark, tmp_path):
    job_dir, data = str(tmp_path / "jobs"), str(tmp_path / "data")
    spark.range(0, 6, 1, 2).write.parquet(data)
    fw.execute(over(spark.read.parquet(data)), job_dir=job_dir, job_name="files")
    assert fw.execute(over(spark.read.parquet(data)), job_dir=job_dir, job_name="files").ran == frozenset()
    spark.range(10, 16, 1, 2).write.mode("overwrite").parquet(data)
    again = fw.execute(over(spark.read.parquet(data)), job_dir=job_dir, job_name="files")
    assert again.afresh.startswith("the files 'frame' reads") and rows(again) == [(i,) for i in range(10, 16)]


def test_rows_no_plan_shows_are_kept_with_a_one_line_warning(spark, tmp_path):
    if is_connect(spark):
        pytest.skip("Spark Connect sends local rows in the plan (a LocalRelation): nothing is unseen")
    job_dir = str(tmp_path / "jobs")
    frame = spark.createDataFrame([(3,), (1,)], "id long")  # classic: an RDD of rows (LogicalRDD)
    fw.execute(over(frame), job_dir=job_dir, job_name="rdd")
    with pytest.warns(UserWarning, match="kept without checking the rows of 'frame': its rows come from an RDD"):
        again = fw.execute(over(spark.createDataFrame([(3,), (1,)], "id long")), job_dir=job_dir, job_name="rdd")
    assert again.ran == frozenset() and "kept without checking the rows of 'frame'" in repr(again)


# -- item 7: a lost first record -------------------------------------------------------------------


def flip_first_record(job_dir: str) -> None:
    path = os.path.join(job_dir, "sales", "events", "events.0")
    data = bytearray(open(path, "rb").read())
    data[40] ^= 0x01  # inside job_submitted, the first record: its checksum no longer matches
    open(path, "wb").write(bytes(data))


def test_a_flipped_byte_in_the_first_record_is_named_and_repair_keeps_the_finished_work(spark, dirs):
    job_dir, markers = dirs
    fw.execute(jobs.three_vertex_job(markers), job_dir=job_dir, job_name="sales")
    interrupt(job_dir, ("v2", 1))
    flip_first_record(job_dir)
    with pytest.warns(UserWarning, match="corrupt record at byte 0"), pytest.raises(fw.ResumeError) as caught:
        fw.execute(jobs.three_vertex_job(markers), job_dir=job_dir, job_name="sales")
    message = str(caught.value)
    assert "\n" not in message and "the job's first record is unreadable" in message
    assert re.search(r"this stream's graph fits the \d+ surviving records: run with resume='repair' to re-derive "
                     r"the graph from it and keep the finished work, or resume='never' to start afresh$", message)
    other = fw.from_records(jobs.RECORDS, jobs.SCHEMA, partitions=2, name="sales")  # 2 subtasks, not 4
    other = other.key_by("k").full_window_partition().reduce(jobs.add)
    other = other.key_by("g").full_window_partition().map_partition(jobs.summarize, "g long, n long, total double")
    with pytest.warns(UserWarning), pytest.raises(fw.ResumeError, match="does not fit the surviving records "
                                                                         r"\(v0 was recorded with parallelism 4"):
        fw.execute(other, job_dir=job_dir, job_name="sales", resume="repair")
    before = Counter(testing.calls(markers))
    with pytest.warns(UserWarning):
        repaired = fw.execute(jobs.three_vertex_job(markers), job_dir=job_dir, job_name="sales", resume="repair")
    assert rows(repaired) == jobs.expected()
    assert repaired.ran == {("map_partition(summarize)", 1)}  # only the unfinished subtask ran
    # nothing upstream ran again (the last vertex's Spark job computes every key, and commits subtask 1 only)
    assert {name for name, _ in Counter(testing.calls(markers)) - before} == {"summarize"}
    assert "repaired: the graph was re-derived from this stream" in repr(repaired)
    again = fw.execute(jobs.three_vertex_job(markers), job_dir=job_dir, job_name="sales")  # readable again
    assert again.ran == frozenset()
