"""kill -9 of the driver before, during and after the switch; each restart continues the job:
nothing lost, nothing counted twice (a subprocess driver, as tests/runtime/test_kill.py does)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

import fw_magics as fw
from fw_magics.recovery.jobs import read_job
from fw_magics.teaching import testing
from tests.streaming import functions
from tests.streaming.files import expected_latest, latest_rows, model

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.extended]  # make test-extended

BACKLOG = [[(k, v, v) for k in range(8) for v in range(4)], [(k, 1, 5) for k in range(0, 8, 2)]]
AT_SWITCH = [(1, 7, 20), (9, 2, 21)]
FRESH = [[(2, 3, 30)], [(3, 4, 40), (9, 1, 41)], [(4, 5, 50)], [(1, 1, 60)]]


def kill_at(area, point, signal_number=-9, table=None):
    """One driver process, killed at ``point`` (over ``table``, a test_table_source.Table, if given).
    Its whole process group (its Spark JVM with it) is then killed by the driver's PID: the next run
    must not meet a JVM still shutting down."""
    env = dict(testing.embedded_spark_env(), PYTHONPATH=ROOT, FW_SPARK_LOG_LEVEL="FATAL")
    started = time.monotonic()
    log = os.path.join(area.base, f"{point}.log")
    over = [] if table is None else [f"{table.server.url} {table.name}"]
    with open(log, "w") as err, subprocess.Popen(
        [sys.executable, "-m", "tests.streaming.driver", area.source(), area.jobs, point, *over],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True,
    ) as proc:
        try:
            proc.wait(timeout=300)
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the group of the driver this test started
            except ProcessLookupError:
                pass
    print(f"{point}: {time.monotonic() - started:.1f} s", file=sys.stderr)
    with open(log) as f:
        assert proc.returncode == signal_number, f.read()[-3000:]


def test_kill_before_during_and_after_the_switch_then_finish(area):
    for f in BACKLOG:
        area.write(f)
    kill_at(area, "backlog")  # killed inside the backlog's batch job
    killed = read_job(os.path.join(area.jobs, "counts"), "counts")
    assert killed.status == "interrupted"  # the process died without a last word: an interruption, as execute()'s
    assert "job_failed" not in [e["type"] for e in killed.events]
    # what a kill during a warm query's first offset write leaves (seen in JupyterLab): Spark's
    # transformWithState refuses a batch 0 whose offsets folder is not empty, the restart removes it
    offsets = os.path.join(area.jobs, "counts", "checkpoint", "offsets")
    os.makedirs(offsets, exist_ok=True)
    torn = [".0.5d1f4c1e-1b5a-4c36-9e8e-0c3f1a6b2d77.tmp", "..0.5d1f4c1e-1b5a-4c36-9e8e-0c3f1a6b2d77.tmp.crc"]
    for name in torn:
        open(os.path.join(offsets, name), "wb").close()
    area.write(AT_SWITCH)  # lands before the restart: fresh, read at the switch
    kill_at(area, "switch")  # the backlog finishes (only what was not committed), killed in the first micro-batch after it
    for f in FRESH:
        area.write(f)
    assert not set(torn) & set(os.listdir(offsets))
    kill_at(area, "stream")  # resumes from the checkpoint, killed in micro-batch 2
    # the last run in this process (the same job: KillingCountSum, disarmed, keyed by k, two subtasks)
    from tests.streaming.driver import KillingCountSum, kill_file

    stream = fw.from_files(area.source(), "parquet", functions.SCHEMA, event_time="ts", watermark_delay="1 second")
    job = stream.key_by("k").aggregate(KillingCountSum(kill_file(area.jobs))).start(
        job_dir=area.jobs, job_name="counts", trigger="available_now")
    try:
        job.process_all_available()
        expected = expected_latest(model("aggregate", 1000, BACKLOG, [AT_SWITCH, *FRESH]), "aggregate")
        assert latest_rows(job) == expected
        kinds = [e["type"] for e in job.events()]
    finally:
        job.stop()
    assert kinds.count("switch") == 1 and kinds.count("stream_started") == 4
    assert kinds.count("subtask_finished") == 2  # each backlog subtask recorded once


def test_kill_a_two_input_job_before_during_and_after_the_switch_then_finish(area):
    """The same three kills of a two-input job (issue 32): both inputs' backlogs are one batch, each input
    has its own position in the stream; every record of both is counted once, under its own input."""
    second = {0: [[(k, 10, 2) for k in range(0, 8, 3)], [(3, 20, 4)]], 1: [(9, 30, 22)], 2: [[(2, 40, 35)],
                                                                                          [(4, 50, 52)]]}
    for f in BACKLOG:
        area.write(f)
    for f in second[0]:
        area.write(f, "src-b")
    kill_at(area, "two-backlog")
    area.write(AT_SWITCH)
    area.write(second[1], "src-b")
    kill_at(area, "two-switch")
    for f in FRESH:
        area.write(f)
    for f in second[2]:
        area.write(f, "src-b")
    kill_at(area, "two-stream")
    from tests.streaming.driver import kill_file, operator

    job = operator(area.source(), None, kill_file(area.jobs), two=True).start(
        job_dir=area.jobs, job_name="counts", trigger="available_now")
    try:
        job.process_all_available()
        got = {int(r.k): tuple(int(x) for x in r[1:]) for r in job.latest().itertuples(index=False)}
        kinds = [e["type"] for e in job.events()]
    finally:
        job.stop()
    expected: dict = {}
    for side, files in enumerate(([*BACKLOG, AT_SWITCH, *FRESH], [*second[0], second[1], *second[2]])):
        for k, v, _ in (r for f in files for r in f):
            totals = expected.setdefault(k, [0, 0, 0, 0])
            totals[2 * side] += 1
            totals[2 * side + 1] += v
    assert got == {k: tuple(t) for k, t in expected.items()}
    assert kinds.count("switch") == 1 and kinds.count("stream_started") == 4
    assert kinds.count("subtask_finished") == 2


def test_the_process_exiting_while_the_backlog_runs_is_an_interruption_not_a_failure(area):
    """What a kernel restart does to a running job: the interpreter exits (its exit handlers run, then
    Spark's stop under the job's threads). The log's last word is job_cancelled, never job_failed."""
    from fw_magics.recovery.job_log import EXITING

    for f in BACKLOG:
        area.write(f)
    kill_at(area, "exit", signal_number=0)
    job = read_job(os.path.join(area.jobs, "exiting"), "exiting")
    kinds = [e["type"] for e in job.events]
    assert "job_failed" not in kinds and kinds[-1] == "job_cancelled", kinds
    assert job.events[-1]["cause"] == EXITING and job.status == "cancelled"


BEFORE = [[(1, 1, 1), (2, 2, 2), (3, 3, 3)], [(1, 4, 4), (3, 5, 5)]]
AFTER = [(1, 6, 200), (2, 7, 201), (3, 8, 202)]


def test_kill_9_while_writing_a_savepoint_then_the_previous_one_restores_with_the_right_results(area):
    """A real job in a driver process: savepoint 1, one more file, then kill -9 inside the writer of
    savepoint 2 (after its last file, before the rename). Savepoint 1 restores through start(), at 3:
    the file read after it is unread there, so the restored job reads it once, then fresh data."""
    from fw_magics.runtime.streaming.savepoints.files import list_savepoints
    from tests.streaming.savepoint_driver import BETWEEN

    for f in BEFORE:
        area.write(f)
    env = dict(testing.embedded_spark_env(), PYTHONPATH=ROOT, FW_SPARK_LOG_LEVEL="FATAL")
    with subprocess.Popen(
        [sys.executable, "-m", "tests.streaming.savepoint_driver", area.source(), area.jobs, "savepoint.json"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    ) as proc:
        try:
            out, err = proc.communicate(timeout=300)
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert proc.returncode == -9, err[-3000:]
    first = out.split()[0]
    root = os.path.join(area.jobs, "counts")
    assert list_savepoints(root) == [first]  # the second never became a savepoint
    assert [n for n in os.listdir(os.path.join(root, "savepoints")) if n.startswith(".tmp-")]

    stream = fw.from_files(area.source(), "parquet", functions.SCHEMA, event_time="ts",
                           watermark_delay="0 milliseconds")
    job = stream.key_by("k").aggregate(functions.CountSum()).start(
        job_dir=area.jobs, job_name="restored", trigger="100 milliseconds", from_savepoint=first, parallelism=3)
    try:
        job.process_all_available()  # the file written between the savepoints: unread at savepoint 1
        area.count = len(os.listdir(area.source()))  # after the driver's file, not over it
        area.write(AFTER)  # touches every key: latest() of the restored job is every key's result
        job.process_all_available()
        got = latest_rows(job)
    finally:
        job.stop()
    assert got == expected_latest(model("aggregate", 0, BEFORE, [BETWEEN, AFTER]), "aggregate")
