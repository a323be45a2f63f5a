"""Kernel > Interrupt in a real IPython kernel: the Spark jobs stop at once, one line is shown.

Also, in the same kernel (its Spark starts once): the first cell that starts Spark prints
nothing on stderr (issue 17, item 4). Runs on the embedded classic Spark and, in `make
test-extended`, under Spark Connect (``SPARK_REMOTE=local[2]``: an in-process server, as a
notebook user would start it).
"""

from __future__ import annotations

import os
import re

import pytest

from fw_magics.recovery.jobs import read_job
from tests.kernels import Kernel, still_running

pytestmark = [pytest.mark.slow, pytest.mark.extended, pytest.mark.timeout(600)]  # make test-extended (CI)
MODES = {"classic": {}, "connect": {"SPARK_REMOTE": "local[2]"}}
ONE_LINE = re.compile(r"interrupted: cancelled [1-9]\d* Spark (jobs?|operations?)")

SETUP = """
%load_ext fw_magics
import os, time
from pyspark.sql import functions as F
FLAG, PIDS = {flag!r}, {pids!r}

def slow(records):
    # while FLAG exists, the first call in each worker sleeps for two minutes
    import os, time
    if os.path.exists(FLAG):
        open(os.path.join(PIDS, str(os.getpid())), "w").close()
        time.sleep(120)
    yield from records

df = spark.read.csv({csv!r}, header=True, schema="id long, k long, g long, v double")
job = (fw.from_dataframe(df, name="csv").key_by("k").full_window_partition()
       .reduce(lambda a, b: a if a.v >= b.v else b)
       .key_by("g").full_window_partition().map_partition(slow))
print("ready")
"""


@pytest.fixture(scope="module", params=list(MODES))
def kernel(request, tmp_path_factory):
    """A kernel whose first cell started Spark; yields (kernel, that cell's output, folder, mode)."""
    mode = request.param
    root = tmp_path_factory.mktemp(f"interrupt-{mode}")
    with open(root / "sales.csv", "w") as f:
        f.write("id,k,g,v\n" + "".join(f"{i},{i % 7},{i % 3},{float(i)}\n" for i in range(2000)))
    (root / "pids").mkdir()
    env = {**MODES[mode], "FW_JOB_INDEX": str(root / "index.json")}
    kernel = Kernel(root, env)
    saved = os.environ.pop("FW_SPARK_LOG_LEVEL", None)  # the kernel gets the notebook default
    try:
        first = kernel.run("import fw_magics as fw\nspark = fw.get_spark()\nspark.range(3).count()", timeout=240)
    finally:
        if saved is not None:
            os.environ["FW_SPARK_LOG_LEVEL"] = saved
    try:
        kernel.ok(SETUP.format(flag=str(root / "slow"), pids=str(root / "pids"), csv=str(root / "sales.csv")))
        yield kernel, first, root, mode
    finally:
        kernel.stop()


def _sleeping(root):
    return lambda: any((root / "pids").iterdir())


def _interrupted(kernel, root, code: str):
    for entry in (root / "pids").iterdir():  # workers of an earlier test
        entry.unlink()
    (root / "slow").touch()
    try:
        ran = kernel.run(code, timeout=200, interrupt_when=_sleeping(root))
    finally:
        (root / "slow").unlink()
    assert ran.interrupted_at is not None, "the slow function never started"
    return ran


def test_the_first_cell_that_starts_spark_prints_nothing_on_stderr(kernel):
    _, first, _, _ = kernel
    assert first.status == "ok" and first.results == ["3"]
    assert first.stderr == "", f"the first cell printed on stderr:\n{first.stderr}"


def test_interrupting_a_magic_cancels_its_spark_jobs_and_says_so_in_one_line(kernel):
    k, _, root, mode = kernel
    ran = _interrupted(k, root, "%%fullwindow map fn=slow\ndf")
    assert ran.status == "error" and ran.error["ename"] == "Interrupted", ran
    assert len(ran.error["traceback"]) == 1 and ONE_LINE.fullmatch(ran.error["traceback"][0]), ran.traceback
    assert ran.seconds - ran.interrupted_at < 10, f"took {ran.seconds - ran.interrupted_at:.1f} s after the interrupt"
    assert "Traceback" not in ran.stderr and "pyspark" not in ran.stderr, ran.stderr
    assert still_running(root / "pids", within=10) == [], "the Python worker of a cancelled task still runs"
    assert k.ok("spark.range(5).count()").results == ["5"]  # the kernel and its Spark still work


def test_an_interrupted_execute_is_cancelled_and_resumes_to_the_clean_result(kernel):
    k, _, root, mode = kernel
    jobs = str(root / "jobs")
    ran = _interrupted(k, root, f"result = job.execute(job_dir={jobs!r}, job_name='sales')")
    assert ran.error is not None and ran.error["ename"] == "Interrupted"
    assert len(ran.error["traceback"]) == 1 and ONE_LINE.fullmatch(ran.error["traceback"][0]), ran.traceback
    assert ran.seconds - ran.interrupted_at < 10
    assert still_running(root / "pids", within=10) == []
    stopped = read_job(f"{jobs}/sales", "sales")
    assert stopped.status == "cancelled"
    rerun = {row["vertex"] for row in stopped.subtasks() if not row["verdict"].startswith("keep")}
    assert rerun == {"v2"}  # the reads and the reduce had finished; the stop hit the last job vertex
    out = k.ok(
        f"resumed = job.execute(job_dir={jobs!r}, job_name='sales')\n"
        f"clean = job.execute(job_dir={jobs!r}, job_name='clean')\n"
        "print(sorted(map(tuple, resumed.collect())) == sorted(map(tuple, clean.collect())))\n"
        "print(sorted({op for op, _ in resumed.recovered}))\n"
        "print(len(clean.collect()))"
    ).stdout.splitlines()
    assert out[0] == "True", out
    assert out[1].startswith("['csv'") and "reduce(<lambda>)" in out[1]  # finished work was kept
    assert int(out[2]) == 7  # the largest record of each k
    assert read_job(f"{jobs}/sales", "sales").status == "finished"
