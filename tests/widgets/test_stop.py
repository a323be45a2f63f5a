"""Stopping Spark work from the widgets and from another thread (issue 17, item 1), on the shared session.

``execute()`` in a ``fw_magics.spark.actions.Scope`` that another thread cancels stops at once and
leaves a cancelled job that resumes; the recovery panel's Resume button turns into a Stop
button while its resume runs, and pressing it cancels the resume's Spark jobs.
"""

from __future__ import annotations

import threading
import time

import pytest

import fw_magics as fw
from fw_magics.errors import Interrupted
from fw_magics.recovery.jobs import read_job
from fw_magics.spark.actions import Scope
from fw_magics.widgets import RecoveryPanel
from tests.kernels import still_running
from tests.runtime import jobs

pytestmark = [pytest.mark.spark, pytest.mark.extended, pytest.mark.timeout(300)]  # make test-extended (CI)


def slow_job(flag: str, pids: str):
    """jobs' three-vertex shape; the last vertex's first call per worker sleeps 2 min while ``flag`` exists."""

    def slow(records):
        import os
        import time

        if os.path.exists(flag):
            open(os.path.join(pids, str(os.getpid())), "w").close()
            time.sleep(120)
        yield from records

    source = fw.from_records(jobs.RECORDS, jobs.SCHEMA, partitions=3, name="sales")
    reduced = source.key_by("k").full_window_partition().reduce(jobs.add)
    return reduced.key_by("g").full_window_partition().map_partition(slow)


def _wait_for_a_sleeper(pids, timeout=120):
    deadline = time.monotonic() + timeout
    while not any(pids.iterdir()):
        assert time.monotonic() < deadline, "the slow function never started"
        time.sleep(0.1)


def _clear(pids):
    for entry in pids.iterdir():
        entry.unlink()


def test_cancelling_a_scope_stops_execute_and_the_panels_stop_button_stops_a_resume(spark, tmp_path):
    flag, pids, job_dir = tmp_path / "slow", tmp_path / "pids", str(tmp_path / "jobs")
    pids.mkdir()
    flag.touch()
    stream = slow_job(str(flag), str(pids))

    # 1. execute() in a thread, its scope cancelled from this one
    scope, raised = Scope(), []

    def run():
        try:
            with scope:
                stream.execute(job_dir=job_dir, job_name="sales")
        except BaseException as error:
            raised.append(error)

    worker = threading.Thread(target=run)
    worker.start()
    _wait_for_a_sleeper(pids)
    stopped_at = time.monotonic()
    assert scope.cancel() >= 1
    worker.join(30)
    assert not worker.is_alive() and time.monotonic() - stopped_at < 10
    assert len(raised) == 1 and isinstance(raised[0], Interrupted), raised
    assert str(raised[0]).startswith("interrupted: cancelled ")
    assert still_running(pids, within=10) == []
    job = read_job(f"{job_dir}/sales", "sales")
    assert job.status == "cancelled"
    rerun = {row["vertex"] for row in job.subtasks() if not row["verdict"].startswith("keep")}
    assert rerun == {"v2"}

    # 2. the panel resumes it; while that runs the button is Stop, and pressing it stops it
    _clear(pids)
    panel = RecoveryPanel(job_dir, namespace={"stream": stream})
    assert panel.job.status == "cancelled" and "data-status='cancelled'" in panel.status.value
    assert not panel.resume_button.disabled and panel.resume_button.description == "Resume"
    panel.resume_button.click()
    assert panel.running and panel.resume_button.description == "Stop" and not panel.resume_button.disabled
    _wait_for_a_sleeper(pids)
    stopped_at = time.monotonic()
    panel.resume_button.click()  # Stop
    assert panel.wait(30) and time.monotonic() - stopped_at < 10
    assert still_running(pids, within=10) == []
    assert panel.resume_button.description == "Resume" and not panel.resume_button.disabled
    assert "fw-resume-stopped" in panel.message.value and "interrupted: cancelled" in panel.message.value
    assert read_job(f"{job_dir}/sales", "sales").status == "cancelled"

    # 3. resumed to the end, it gives what a clean run gives
    flag.unlink()
    panel.resume_button.click()
    assert panel.wait(120)
    assert "fw-resumed" in panel.message.value and panel.job.status == "finished"
    clean = stream.execute(job_dir=job_dir, job_name="clean")
    assert sorted(map(tuple, panel.result.collect())) == sorted(map(tuple, clean.collect()))
    assert {op for op, _ in panel.result.recovered} >= {"sales"}  # finished work was kept throughout
