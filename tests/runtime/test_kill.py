"""kill -9 of the driver (and its JVM) mid-run, then another driver resumes the job.

The killed driver is a subprocess; the one that resumes is this test process, whose shared
Spark session never saw the job: all it knows is what the job directory holds.
"""

import os
import signal
import subprocess
import sys
import tempfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fw_magics as fw
from fw_magics.teaching import testing
from tests.runtime import jobs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
pytestmark = [pytest.mark.slow, pytest.mark.extended]  # make test-extended (CI): kill -9 of whole driver processes


def run(job_dir, markers, mode, *extra):
    """A driver subprocess that is killed (SIGKILL) while it runs the job. Its whole process group
    (its Spark JVM and Python workers) is then killed by the driver's PID: a worker that outlives
    the driver would hold the pipes open, and the resume must not meet a JVM still shutting down."""
    env = dict(testing.embedded_spark_env(), PYTHONPATH=ROOT, FW_SPARK_LOG_LEVEL="FATAL")
    with tempfile.TemporaryFile("w+") as err, subprocess.Popen(
        [sys.executable, "-m", "tests.runtime.jobs", job_dir, markers, mode, *map(str, extra)],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True,
    ) as proc:
        try:
            proc.wait(timeout=300)
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        err.seek(0)
        assert proc.returncode == -9, err.read()[-2000:]


def resume(job_dir, markers):
    """The same job, resumed by this process's driver."""
    return fw.execute(jobs.three_vertex_job(markers), job_dir=job_dir, job_name="sales")


def test_kill_during_last_region_then_resume(spark, tmp_path):
    job_dir, markers = str(tmp_path / "jobs"), str(tmp_path / "markers")
    run(job_dir, markers, "kill-last")
    reduced_calls = [c for c in testing.calls(markers) if c[0] == "add"]
    assert reduced_calls, "the middle region ran before the kill"
    out = resume(job_dir, markers)
    assert sorted(tuple(r) for r in out.collect()) == jobs.expected()
    assert [c for c in testing.calls(markers) if c[0] == "add"] == reduced_calls  # not called again
    assert not any(op.startswith("reduce") or op == "sales" for op, _ in out.ran)


@settings(max_examples=2, deadline=None)
@given(event=st.sampled_from(["vertex_initialized", "subtask_finished"]), nth=st.integers(1, 8))
def test_kill_at_random_points_still_gives_the_clean_output(spark, tmp_path_factory, event, nth):
    base = tmp_path_factory.mktemp("kill")
    job_dir, markers = str(base / "jobs"), str(base / "markers")
    if event == "vertex_initialized":
        nth = min(nth, 3)
    run(job_dir, markers, "kill-event", event, nth)
    assert sorted(tuple(r) for r in resume(job_dir, markers).collect()) == jobs.expected()
