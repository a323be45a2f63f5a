"""kill -9 of the driver (and its JVM) mid-run, then another driver resumes the job.

The killed driver is a subprocess; the one that resumes is this test process, whose shared
Spark session never saw the job: all it knows is what the job directory holds.
"""

import json
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fw_magics as fw
from fw_magics import testing

from . import jobs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
pytestmark = [pytest.mark.slow]


def run(job_dir, markers, mode, *extra, expect_kill=False):
    env = dict(os.environ, PYTHONPATH=ROOT, FW_SPARK_LOG_LEVEL="FATAL")
    env.pop("SPARK_REMOTE", None)
    proc = subprocess.run(
        [sys.executable, "-m", "tests.runtime.jobs", job_dir, markers, mode, *map(str, extra)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    if expect_kill:
        assert proc.returncode == -9, proc.stderr[-2000:]
        return None
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def resume(job_dir, markers):
    """The same job, resumed by this process's driver."""
    return fw.execute(jobs.three_vertex_job(markers), job_dir=job_dir, job_name="sales")


def test_kill_during_last_region_then_resume(spark, tmp_path):
    job_dir, markers = str(tmp_path / "jobs"), str(tmp_path / "markers")
    run(job_dir, markers, "kill-last", expect_kill=True)
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
    run(job_dir, markers, "kill-event", event, nth, expect_kill=True)
    assert sorted(tuple(r) for r in resume(job_dir, markers).collect()) == jobs.expected()
