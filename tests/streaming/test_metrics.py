"""``job.metrics()`` against each micro-batch's own progress report and a model of the keys held.

One folder of three files and two small jobs over it, each run once for the module: a mixed job (the
first file its backlog, the others landed one at a time) and a stream-mode job reading one file per
micro-batch. Every figure is checked against what Spark reported for that micro-batch (``recentProgress``)
and ``state_rows_per_partition`` against a model: the keys whose last record (not late) kept state, placed
in state partitions by Spark's own hash (``spark_hash``). ``Resets`` clears a key on ``v == 0``, so keys
are lost as well as gained, handed-over keys among them.
"""

from __future__ import annotations

import datetime as dt
import json

import pandas as pd
import pytest

import fw_magics as fw
from fw_magics.recovery.event_store import JobEventStore
from fw_magics.recovery.metrics import COLUMNS, metrics_frame
from fw_magics.recovery.paths import EVENTS
from fw_magics.recovery.replay import replay
from fw_magics.runtime.streaming.keyed.spark_hash import partition
from tests.streaming import functions
from tests.streaming.files import TRIGGER, Area

pytestmark = [pytest.mark.spark]

PARTITIONS = 2
#: (k, v, seconds). The first file is a mixed job's backlog: it clears key 3, so W = 13 s. The second gains
#: keys 20..22 and key 3 again, clears key 5 (a handed-over key) and key 20 (gained in the same batch), and
#: has one record at or before W (key 7 at 5 s): late in mixed mode, not yet for Spark in stream mode (its
#: late filter uses the watermark of the batch before last).
FILES = [
    [(k, 1, k + 1) for k in range(12)] + [(3, 0, 13)],
    [(20 + i, 1, 20 + i) for i in range(3)] + [(3, 1, 24), (5, 0, 26), (20, 0, 27), (7, 0, 5)],
]


def model_after(files: list[list[tuple]], late_at_w: bool = True) -> list[int]:
    """Keys holding state per partition after ``files``, as Resets keeps them: each key's last record in
    event-time order decides; with ``late_at_w`` (mixed mode) a record at or before W, the first file's
    greatest time, is late and left out."""
    held: dict[int, bool] = {}
    for index, rows in enumerate(files):
        w = max(r[2] for r in files[0])
        for k, v, _ in sorted((r for r in rows if not (index and late_at_w and r[2] <= w)), key=lambda r: r[2]):
            held[k] = v != 0
    counts = [0] * PARTITIONS
    for k, holds in held.items():
        if holds:
            counts[partition((k,), (True,), PARTITIONS)] += 1
    return counts


def _stream(folder):
    return fw.from_files(folder, "parquet", functions.SCHEMA, event_time="ts", watermark_delay="0 milliseconds")


def _ran(query) -> dict:
    """batch id -> the progress report of each micro-batch that ran."""
    return {p.batchId: p for p in query.recentProgress if "addBatch" in (p.durationMs or {})}


@pytest.fixture(scope="module")
def area(spark, tmp_path_factory):
    before = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", str(PARTITIONS))
    try:
        yield Area(tmp_path_factory.mktemp("metrics"))
    finally:
        for query in spark.streams.active:
            query.stop()
        spark.conf.set("spark.sql.shuffle.partitions", before)


@pytest.fixture(scope="module")
def mixed(area):
    """The mixed job after its backlog and one landed file, stopped: (job, its metrics, its progress)."""
    area.write(FILES[0], "src")
    job = _stream(area.source("src")).key_by("k").process(functions.Resets()).start(
        job_dir=area.jobs, job_name="mixed", trigger=TRIGGER)
    try:
        job.process_all_available()
        area.write(FILES[1], "src")
        job.process_all_available()
        return job, job.metrics(), _ran(job.query)
    finally:
        job.stop()


@pytest.fixture(scope="module")
def stream(area, mixed):
    """A stream-mode job over the same two files, one per micro-batch."""
    job = _stream(area.source("src")).key_by("k").process(functions.Resets()).start(
        job_dir=area.jobs, job_name="stream", mode="stream", trigger=TRIGGER, max_files_per_trigger=1)
    try:
        job.process_all_available()
        return job, job.metrics(), _ran(job.query)
    finally:
        job.stop()


def _epoch_ms(text: str) -> pd.Timestamp:
    return pd.Timestamp(dt.datetime.fromisoformat(text.replace("Z", "+00:00")))


def _late(progress) -> int:
    spark = sum(op.numRowsDroppedByWatermark for op in progress.stateOperators or [])
    observed = (progress.observedMetrics or {}).get("fw_dropped")
    return spark + (0 if observed is None else int(observed.asDict().get("late") or 0))


def _assert_as_progress(frame: pd.DataFrame, progress: dict) -> None:
    """Each micro-batch's row says what Spark reported for it."""
    batches = frame[frame["batch"] >= 0]
    assert sorted(batches["batch"]) == sorted(progress), (list(batches["batch"]), sorted(progress))
    for row in batches.itertuples(index=False):
        p = progress[row.batch]
        assert row.input_rows == p.numInputRows
        assert row.duration_ms == p.durationMs["triggerExecution"]
        assert row.started == _epoch_ms(p.timestamp)
        assert row.input_rows_per_second == pytest.approx(p.inputRowsPerSecond, nan_ok=True)
        assert row.processed_rows_per_second == pytest.approx(p.processedRowsPerSecond, nan_ok=True)
        assert row.late == _late(p)
        assert row.undated == 0
        if pd.isna(row.watermark):  # none yet (a stream's first micro-batch): no gap
            assert pd.isna(row.watermark_gap_ms)
        else:
            assert row.watermark_gap_ms == (row.started - row.watermark) // pd.Timedelta(milliseconds=1)


def test_the_columns_are_the_documented_ones(mixed):
    _, frame, _ = mixed
    assert tuple(frame.columns) == COLUMNS
    assert str(frame["started"].dtype) == str(frame["watermark"].dtype) == "datetime64[ns, UTC]"


def test_mixed_each_micro_batch_is_its_progress_and_state_is_the_model(mixed):
    _, frame, progress = mixed
    _assert_as_progress(frame, progress)
    backlog = frame[frame["batch"] == -1].iloc[0]
    assert backlog["input_rows"] == len(FILES[0]) and backlog["late"] == 0
    assert backlog["watermark"] == pd.Timestamp("2024-01-01 00:00:13", tz="UTC")  # W: the backlog's greatest time
    assert backlog["state_rows_per_partition"] == model_after(FILES[:1])
    assert backlog["state_rows"] == sum(model_after(FILES[:1]))
    assert (frame["state_rows"] == frame["state_rows_per_partition"].map(sum)).all()
    (fresh,) = frame[(frame["batch"] >= 0) & (frame["input_rows"] > 0)].itertuples(index=False)
    assert fresh.input_rows == len(FILES[1]) and fresh.late == 1  # key 7 at 5 s, before W
    assert fresh.state_rows_per_partition == model_after(FILES)
    assert fresh.files_behind == 0 and pd.isna(fresh.rows_behind)
    assert list(frame["batch"]) == sorted(frame["batch"])


def test_a_stopped_job_and_a_fresh_reader_give_the_same_frame(mixed):
    job, frame, _ = mixed
    pd.testing.assert_frame_equal(job.metrics(), frame)  # stopped
    read = metrics_frame(replay(JobEventStore(job.storage.path(EVENTS)).read_events()))  # as another kernel would
    pd.testing.assert_frame_equal(read, frame)


def test_a_log_written_before_the_metrics_reads_as_nulls(mixed):
    job, frame, _ = mixed
    new = {"started", "input_rows_per_second", "processed_rows_per_second", "state_rows", "state_rows_per_partition",
           "files_behind", "rows_behind"}
    old = [{k: v for k, v in e.items() if k not in new} for e in job.events()]
    read = metrics_frame(replay(json.loads(json.dumps(old))))
    batches = read[read["batch"] >= 0]
    assert list(batches["input_rows"]) == list(frame[frame["batch"] >= 0]["input_rows"])
    assert batches["started"].isna().all() and batches["state_rows"].isna().all()
    assert batches["input_rows_per_second"].isna().all() and batches["state_rows_per_partition"].isna().all()
    assert batches["files_behind"].isna().all()


@pytest.mark.extended  # make test-extended (CI): a second job, then a restart
def test_stream_mode_counts_from_zero_and_its_lag_is_the_files_not_read(stream):
    _, frame, progress = stream
    _assert_as_progress(frame, progress)
    assert -1 not in set(frame["batch"])
    rows = list(frame[frame["input_rows"] > 0].itertuples(index=False))
    assert [r.input_rows for r in rows] == [len(f) for f in FILES]
    assert [r.files_behind for r in rows] == [1, 0]  # one file per trigger, both there at the start
    assert [r.late for r in rows] == [0, 0]  # Spark's late filter: the watermark of the batch before last
    for row, upto in zip(rows, (1, 2)):
        assert row.state_rows_per_partition == model_after(FILES[:upto], late_at_w=False), row.batch


@pytest.mark.extended
def test_a_restart_gives_the_same_frame(area, mixed, stream):
    job, frame, _ = mixed
    again = _stream(area.source("src")).key_by("k").process(functions.Resets()).start(
        job_dir=area.jobs, job_name="mixed", trigger=TRIGGER)
    try:
        again.process_all_available()
        after = again.metrics()
    finally:
        again.stop()
    pd.testing.assert_frame_equal(after.iloc[:len(frame)], frame)


@pytest.fixture(scope="module")
def two(area):
    """A mixed two-input job (``Ledger`` over two folders): a backlog on both inputs, then one file on each,
    stopped: (job, its metrics, the progress of its micro-batches)."""
    from tests.streaming.test_two_inputs import ledger, run

    seen = {}
    job, _ = run(area, ledger, "mixed", "two", TWO_BACKLOG, TWO_FRESH,
                 after_each=lambda running: seen.update(_ran(running.query)))
    return job, job.metrics(), seen


#: (k, v, seconds) of the first input, (key, w, seconds) of the second: W after the backlog is 8 s; the fresh
#: records come after it (none late). Every key a record reaches holds state (Ledger never clears one).
TWO_BACKLOG = ([(k, 1, k + 1) for k in range(5)], [(k, 2, k + 2) for k in (3, 4, 5, 6)])
TWO_FRESH = [(1, [(10, 1, 30)]), (2, [(11, 5, 31), (3, 1, 32)])]


def held(keys) -> list[int]:
    counts = [0] * PARTITIONS
    for k in set(keys):
        counts[partition((k,), (True,), PARTITIONS)] += 1
    return counts


@pytest.mark.extended  # make test-extended (CI): a third job, of two inputs
def test_a_two_input_job_s_micro_batches_are_their_progress_and_its_state_the_model(two):
    _, frame, progress = two
    _assert_as_progress(frame, progress)
    backlog = frame[frame["batch"] == -1].iloc[0]
    assert backlog["input_rows"] == sum(len(rows) for rows in TWO_BACKLOG) and backlog["late"] == 0
    before = [r[0] for rows in TWO_BACKLOG for r in rows]
    assert backlog["state_rows_per_partition"] == held(before)
    fresh = frame[(frame["batch"] >= 0) & (frame["input_rows"] > 0)]
    assert fresh["late"].sum() == 0
    last = frame[frame["batch"] >= 0].iloc[-1]
    assert last["state_rows_per_partition"] == held(before + [r[0] for _, rows in TWO_FRESH for r in rows])
    assert (frame["state_rows"] == frame["state_rows_per_partition"].map(sum)).all()
