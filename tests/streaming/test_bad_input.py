"""Streaming input that no file can poison, and a job that says what happened to every record (issue 30).

Real Spark, real files: a temporary name landing in the watched folder, a stray text file, a
truncated Parquet file, a file deleted after it was listed, each under on_bad_file "fail" and
"skip", compared with the reference model (nothing lost, nothing counted twice, the skipped file
named); a schema column the files lack or type differently; late and undated records counted; a
CSV file that grows after it was listed.
"""

from __future__ import annotations

import datetime as dt
import os
import threading

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fw_magics as fw
from tests.streaming import functions
from tests.streaming.files import BASE, TRIGGER, expected_latest, latest_rows, model, table

pytestmark = [pytest.mark.spark]

BACKLOG = [[(1, 1, 1), (2, 2, 2)], [(1, 3, 3), (3, 4, 4)]]
FRESH = [[(1, 5, 10), (4, 6, 11)], [(2, 7, 12), (5, 8, 13)]]


def source(area, on_bad_file="fail", **options):
    return fw.from_files(area.source(), "parquet", functions.SCHEMA, event_time="ts", on_bad_file=on_bad_file,
                         **options)


def stray(area, name: str, data: bytes) -> str:
    """A file written in place into the watched folder, as a careless writer would."""
    path = os.path.join(area.source(), name)
    with open(path, "wb") as f:
        f.write(data)
    stamp = 1_700_000_000 + area.count + 1  # discovered after the files written so far
    area.count += 1
    os.utime(path, (stamp, stamp))
    return path


def in_every_mode(op, area, name: str, read=latest_rows) -> dict:
    """``read(job)`` of the same job run to its end in each mode (its own job name in each)."""
    results = {}
    for mode in ("batch", "stream", "mixed"):
        job = op.start(job_dir=area.jobs, job_name=f"{name}-{mode}", mode=mode,
                       trigger="available_now" if mode == "stream" else TRIGGER)
        try:
            job.process_all_available()
            results[mode] = read(job)
        finally:
            job.stop()
    return results


def truncated_parquet(rows) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table(rows), sink)
    data = sink.getvalue().to_pybytes()
    return data[: len(data) - 20]


@pytest.mark.extended  # about 28 s (mixed mode, a 200 ms trigger): make test-extended (CI) keeps make test short
def test_a_temporary_name_landing_during_a_200_ms_trigger_is_never_read(area):
    """Tutorial 6's land_file wrote hour-0008.parquet.tmp, then renamed it: the trigger listed the
    .tmp name, the rename removed it, and every restart failed on it. Only *.parquet names are read."""
    for f in BACKLOG:
        area.write(f)
    job = source(area).key_by("k").aggregate(functions.CountSum()).start(
        job_dir=area.jobs, job_name="tmp", trigger="200 milliseconds")
    try:
        job.process_all_available()
        for number, rows in enumerate(FRESH):
            final = os.path.join(area.source(), f"hour-{number}.parquet")
            pq.write_table(table(rows), final + ".tmp")  # a visible temporary name, for a moment
            threading.Event().wait(0.5)  # at least two triggers see it
            os.replace(final + ".tmp", final)
        job.process_all_available()
        assert job.phase == "stream" and not job.skipped_files
        assert latest_rows(job) == expected_latest(model("aggregate", 0, BACKLOG, [FRESH[0] + FRESH[1]]), "aggregate")
    finally:
        job.stop()


@pytest.mark.parametrize("bad", ["stray text", "truncated parquet"])
def test_a_bad_backlog_file_fails_start_in_one_line_or_is_skipped_and_recorded(area, bad):
    for f in BACKLOG:
        area.write(f)
    data = b"these are my notes" if bad == "stray text" else truncated_parquet([(9, 9, 9)])
    stray(area, "notes.parquet", data)
    op = source(area).key_by("k").reduce(functions.add)
    with pytest.raises(fw.FullWindowError) as refused:
        op.start(job_dir=area.jobs, job_name="failing", mode="batch")
    message = str(refused.value)
    assert message.startswith("source file 'notes.parquet' in ") and "not a readable Parquet file" in message
    assert "on_bad_file='skip'" in message and "\n" not in message
    job = source(area, "skip").key_by("k").reduce(functions.add).start(job_dir=area.jobs, job_name="skipping",
                                                                        mode="batch")
    job.process_all_available()
    (skipped,) = job.skipped_files
    assert skipped["file"] == "notes.parquet" and "not a readable Parquet file" in skipped["reason"]
    assert latest_rows(job) == expected_latest(model("reduce", 0, BACKLOG, []), "reduce")
    assert job.job_graph().annotations("files(src)")["skipped_files"] == "1"


def test_a_bad_fresh_file_fails_the_job_in_one_line_and_a_restart_after_removing_it_loses_nothing(area):
    for f in BACKLOG:
        area.write(f)
    op = source(area).key_by("k").aggregate(functions.CountSum())
    job = op.start(job_dir=area.jobs, job_name="poisoned", trigger=TRIGGER)
    job.process_all_available()
    area.write(FRESH[0])
    path = stray(area, "notes.parquet", b"these are my notes")
    with pytest.raises(fw.FullWindowError) as failed:
        job.process_all_available()
    message = str(failed.value)
    assert message.startswith("source file 'notes.parquet' in ") and "\n" not in message
    assert "cannot be read: it is not a readable Parquet file (" in message and ".;" not in message  # as a backlog's
    assert job.phase == "failed" and "notes.parquet" in [e for e in job.events() if e["type"] == "job_failed"][0]["cause"]
    # fw-magics' verdict on the file: not restarted (a restart would meet the same file), failed at once
    assert job.restarts == 0 and not [e for e in job.events() if e["type"] == "region_restarted"]
    os.remove(path)  # the way out the line names
    again = op.start(job_dir=area.jobs, job_name="poisoned", trigger=TRIGGER)
    try:
        area.write(FRESH[1])
        again.process_all_available()
        assert latest_rows(again) == expected_latest(model("aggregate", 0, BACKLOG, FRESH), "aggregate")
        assert again.skipped_files == [{"file": "notes.parquet",
                                        "reason": "it was gone when the job started again"}]
    finally:
        again.stop()


@pytest.mark.parametrize("bad", ["stray text", "truncated parquet", "deleted after listing"])
def test_a_bad_fresh_file_is_skipped_and_recorded_with_on_bad_file_skip(area, bad):
    for f in BACKLOG:
        area.write(f)
    release = threading.Event()

    def hold_first(df, batch_id):  # classic: in this process; holds the first fresh batch
        if batch_id == 1:
            release.wait(60)

    job = source(area, "skip").key_by("k").aggregate(functions.CountSum()).start(
        job_dir=area.jobs, job_name=bad.replace(" ", "-"), trigger=TRIGGER, max_files_per_trigger=1, sink=hold_first)
    try:
        job.process_all_available()
        area.write(FRESH[0])
        if bad == "deleted after listing":
            doomed = area.write(FRESH[1])  # listed with FRESH[0]; read in the next micro-batch, if at all
            threading.Event().wait(1.0)  # the trigger lists both files while batch 1 is held
            os.remove(doomed)
            name = os.path.basename(doomed)
        else:
            name = "notes.parquet"
            stray(area, name, b"these are my notes" if bad == "stray text" else truncated_parquet([(9, 9, 9)]))
            area.write(FRESH[1])
        release.set()
        job.process_all_available()
        (skipped,) = job.skipped_files
        assert skipped["file"] == name
        kept = [FRESH[0]] if bad == "deleted after listing" else FRESH
        assert latest_rows(job) == expected_latest(model("aggregate", 0, BACKLOG, kept), "aggregate")
        assert job.phase == "stream"
    finally:
        release.set()
        job.stop()


@pytest.mark.parametrize("schema, says", [
    ("k long, vs long, ts timestamp", "column 'vs' of the schema is not in 'part-0001.parquet' (did you mean "
                                      "'v'?); its columns are: k, v, ts"),
    ("k long, value long, ts timestamp", "column 'value' of the schema is not in 'part-0001.parquet'; its columns "
                                         "are: k, v, ts"),
    ("k long, v string, ts timestamp", "column 'v' is int64 in 'part-0001.parquet', the schema says string"),
])
def test_a_schema_the_files_do_not_have_is_one_line_at_start(area, schema, says):
    area.write(BACKLOG[0])
    op = fw.from_files(area.source(), "parquet", schema, event_time="ts").key_by("k").aggregate(
        functions.CountSum())
    with pytest.raises(fw.FullWindowError) as refused:
        op.start(job_dir=area.jobs, job_name="schema")
    assert says in str(refused.value) and "\n" not in str(refused.value)
    assert not os.path.exists(os.path.join(area.jobs, "schema", "source"))  # nothing recorded, nothing ran


def test_nanosecond_parquet_timestamps_are_read_in_every_mode(area):
    """pandas' and pyarrow's default Parquet timestamps are nanoseconds, which Spark's reader refuses."""
    rows = [(1, 1, 1), (2, 2, 2), (1, 3, 3)]
    nanos = table(rows).cast(pa.schema([("k", pa.int64()), ("v", pa.int64()), ("ts", pa.timestamp("ns", tz="UTC"))]))
    pq.write_table(nanos, os.path.join(area.source(), ".n"))
    os.replace(os.path.join(area.source(), ".n"), os.path.join(area.source(), "nanos.parquet"))
    results = in_every_mode(source(area).key_by("k").reduce(functions.add), area, "nanos")
    assert results["batch"] == results["stream"] == results["mixed"] == expected_latest(
        model("reduce", 0, [rows], []), "reduce")


def test_late_and_undated_records_are_counted_and_on_late_fail_stops_the_job(area):
    """400 late and 50 undated records were dropped while dropped_by_watermark said 0."""
    for f in BACKLOG:
        area.write(f)
    op = source(area).key_by("k").aggregate(functions.CountSum())
    job = op.start(job_dir=area.jobs, job_name="late", trigger=TRIGGER)
    try:
        job.process_all_available()
        late = [(k, 1, 0) for k in range(1, 5)]  # at or before W (4 s)
        undated = pa.table({"k": pa.array([1, 2], pa.int64()), "v": pa.array([1, 1], pa.int64()),
                            "ts": pa.array([None, None], pa.timestamp("us", tz="UTC"))})
        area.write(late + [(6, 1, 20)])
        pq.write_table(undated, os.path.join(area.source(), ".u"))
        os.replace(os.path.join(area.source(), ".u"), os.path.join(area.source(), "undated.parquet"))
        job.process_all_available()
        assert job.dropped == {"late": 4, "undated": 2}
        assert "4 late, 2 undated" in repr(job)
        counted = [(e.get("late"), e.get("undated")) for e in job.events() if e["type"] == "micro_batch"]
        assert sum(c[0] or 0 for c in counted) == 4 and sum(c[1] or 0 for c in counted) == 2
    finally:
        job.stop()
    strict = source(area, on_late="fail").key_by("k").aggregate(functions.CountSum())
    failing = strict.start(job_dir=area.jobs, job_name="strict", mode="batch")
    with pytest.raises(fw.FullWindowError, match=r"the backlog had 2 record\(s\) without an event time: "
                                                 r"on_late='fail' stops the job"):
        failing.process_all_available()


def test_a_csv_file_that_grows_after_it_was_listed_is_refused_not_half_read(area):
    directory = area.source()
    first = os.path.join(directory, "a.csv")
    with open(first, "w") as f:
        f.write("k,v,ts\n1,1,2024-01-01T00:00:01+00:00\n")
    op = fw.from_files(directory, "csv", functions.SCHEMA, event_time="ts").key_by("k").reduce(functions.add)
    job = op.start(job_dir=area.jobs, job_name="grows", mode="stream", trigger=TRIGGER)
    try:
        job.process_all_available()
        growing = os.path.join(directory, "b.csv")
        with open(growing, "w") as f:
            f.write("k,v,ts\n2,1,2024-01-01T00:00:02+00:00\n")
            f.flush()
            threading.Event().wait(1.0)  # listed now, while it is being written
            f.write("3,1,2024-01-01T00:00:03+00:00\n")
        with pytest.raises(fw.FullWindowError) as refused:
            job.process_all_available()
        assert "'b.csv'" in str(refused.value) and "changed after it was listed" in str(refused.value)
    finally:
        job.stop()


ZONES = "k,v,ts\n1,1,2026-01-01 00:53:37\n2,2,2026-01-01T00:53:38Z\n1,3,2026-01-01T02:53:39+02:00\n3,4,\n"


def test_csv_timestamps_with_and_without_a_zone_read_the_same_in_every_mode(area):
    directory = area.source()
    with open(os.path.join(directory, ".z"), "w") as f:
        f.write(ZONES)
    os.replace(os.path.join(directory, ".z"), os.path.join(directory, "zones.csv"))
    op = fw.from_files(directory, "csv", functions.SCHEMA, event_time="ts").key_by("k").aggregate(
        functions.CountSum())
    results = in_every_mode(op, area, "zones", lambda job: (latest_rows(job), job.dropped["undated"]))
    # the session's time zone is UTC: the zone-less 00:53:37 is 00:53:37 UTC
    assert results["batch"] == results["stream"] == results["mixed"] == ({(1,): (1, 2, 4), (2,): (2, 1, 2)}, 1)
    assert BASE < dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def fractional(a, b):
    return (a.k, a.v + b.v + 0.25, a.ts)  # a float into the long column v


@pytest.mark.extended  # 22 s: make test keeps the per-engine bad-file cases
def test_a_value_that_does_not_fit_is_the_batch_apis_one_line_in_every_streaming_engine(area):
    for f in BACKLOG:
        area.write(f)
    batch_api = fw.from_records([(1, 1, BASE), (1, 2, BASE)], functions.SCHEMA, partitions=1)
    with pytest.raises(fw.FullWindowError) as batch:
        batch_api.key_by("k").full_window_partition().reduce(fractional).collect_partitions()
    said = str(batch.value)
    assert "reduce function 'fractional' produced a value that does not fit column 'v'" in said
    for mode in ("batch", "mixed", "stream"):
        job = source(area).key_by("k").reduce(fractional).start(job_dir=area.jobs, job_name=f"value-{mode}",
                                                                 mode=mode, trigger=TRIGGER)
        try:
            with pytest.raises(fw.FullWindowError) as streamed:
                job.process_all_available()
        finally:
            job.stop()
        assert str(streamed.value).split(": expected")[0] == said.split(": expected")[0], mode
        assert "\n" not in str(streamed.value) and job.phase == "failed"


JSON_EDGES = [
    '{"k": 1, "v": 1, "ts": "2026-01-01 00:53:37"}',
    '{"k": 2, "v": 2, "ts": "2026-01-01T00:53:38Z"}',
    '{"k": 1, "v": 3, "ts": "2026-01-01T02:53:39+02:00", "extra": "ignored"}',
    '{"k": 3, "v": 7}',
    '{"k": 4, "v": 5, "ts": null}',
]


def test_json_edge_cases_read_the_same_in_every_mode(area):
    directory = area.source()
    with open(os.path.join(directory, ".j"), "w") as f:
        f.write("\n".join(JSON_EDGES) + "\n")
    os.replace(os.path.join(directory, ".j"), os.path.join(directory, "edges.json"))
    op = fw.from_files(directory, "json", functions.SCHEMA, event_time="ts").key_by("k").aggregate(
        functions.CountSum())
    results = in_every_mode(op, area, "json", lambda job: (latest_rows(job), job.dropped["undated"]))
    assert results["batch"] == results["stream"] == results["mixed"]
    rows, undated = results["batch"]
    assert undated == 2 and rows == {(1,): (1, 2, 4), (2,): (2, 1, 2)}  # a missing key or a null: no event time
