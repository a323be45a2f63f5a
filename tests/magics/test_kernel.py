"""The magic in a real Jupyter kernel (ipykernel via nbclient): what a notebook user sees."""

import json
import os
import re
import time

import pytest
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

from fw_magics.recovery.job_log import SHUTDOWN
from fw_magics.recovery.jobs import read_job
from tests.kernels import Kernel

pytestmark = [pytest.mark.slow, pytest.mark.extended]  # make test-extended (CI): each test starts kernels

CELLS = [
    "%load_ext fw_magics\nimport fw_magics as fw\n"
    "orders = fw.from_records([(1, 2.0), (2, 3.0), (3, 1.0)], 'id long, price double', partitions=2)",
    "%%fullwindow sort field=price desc\norders",
    "%%fullwindow sort field=price desc\norders;",
    "%%fullwindow sort field=prize\norders",
    "%%fullwindow map fn=shaky schema='x double'\ndef shaky(records):\n    for r in records:\n        yield (1 / (r.id - 2),)\norders",
    "%%fullwindow map fn=\"lambda rs: [(1 / (r.id - 2),) for r in rs]\" schema='x double'\norders",
    "fw.from_records([(1, 2.0)], 'id long, price dubble')",
]


def test_a_notebook_shows_previews_one_line_mistakes_and_user_tracebacks(tmp_path):
    nb = new_notebook(cells=[new_code_cell(source) for source in CELLS])
    client = NotebookClient(
        nb, timeout=600, kernel_name="python3", allow_errors=True, resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    setup, shown, silenced, mistake, failing, failing_lambda, refused = (cell.outputs for cell in nb.cells)
    assert [cell.execution_count for cell in nb.cells] == [1, 2, 3, 4, 5, 6, 7]
    assert not any(o.output_type == "error" for o in setup)

    (result,) = shown
    assert result.output_type == "execute_result"
    assert "partition 1<br><small>2 records</small>" in result.data["text/html"]
    assert "partition 0 (1 record)" in result.data["text/plain"]

    assert silenced == []

    (usage,) = mistake
    assert usage.output_type == "stream" and usage.name == "stderr"
    assert usage.text.strip() == (
        "UsageError: no column 'prize' (did you mean 'price'?); columns are: id, price"
    )

    (error,) = failing
    assert error.output_type == "error" and error.ename == "PythonException"
    text = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(error.traceback))
    assert "in shaky" in text and "yield (1 / (r.id - 2),)" in text and "ZeroDivisionError" in text
    assert "fw_magics" not in text and "pyspark" not in text
    # the worker's frame is named the IPython way (the fifth cell), not by the file the kernel compiled it to
    assert "Cell In[5], line 3, in shaky" in text and "ipykernel_" not in text

    (error,) = failing_lambda  # a lambda in the magic's line is named after its cell too
    text = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(error.traceback))
    assert "Cell In[6], line 1, in <lambda>" in text and "ZeroDivisionError" in text, text
    assert "ipykernel_" not in text and "fw_magics" not in text

    (error,) = refused  # an API call refused: the cell's line, then the one line; no library frames
    assert error.output_type == "error" and error.ename == "FullWindowError"
    text = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(error.traceback))
    assert "Cell In[7], line 1" in text and "----> 1 fw.from_records" in text, text
    assert text.rstrip().endswith(f"FullWindowError: {error.evalue}") and "is not valid DDL" in error.evalue
    assert "site-packages" not in text and "The above exception" not in text, text


def test_a_job_run_in_one_kernel_is_listed_by_fw_recover_in_a_fresh_kernel_in_the_same_folder(tmp_path):
    # tutorial 04's restart: its jobs go to .fw-jobs beside the notebook, which a new kernel looks in first
    # (the second kernel has an empty job index of its own: the folder alone must find the job)
    first = Kernel(tmp_path, {"FW_JOB_DIR": "", "FW_JOB_INDEX": str(tmp_path / "index-1.json")})
    try:
        ran = first.ok("import fw_magics as fw\n"
                       "r = fw.from_records([(1,), (2,), (3,)], 'x long', partitions=2).execute(job_name='orders')\n"
                       "print(r.job_dir)", timeout=300)
    finally:
        first.stop()
    job_dir = ran.stdout.strip()
    assert job_dir == str(tmp_path / ".fw-jobs" / "orders")
    second = Kernel(tmp_path, {"FW_JOB_DIR": "", "FW_JOB_INDEX": str(tmp_path / "index-2.json")})
    try:
        listed = second.ok("import json\n%load_ext fw_magics\npanel = %fw_recover\n"
                           "print(json.dumps([panel.title.value, panel.jobs.options, panel.job.root, panel.job.status]))")
    finally:
        second.stop()
    title, options, root, status = json.loads(listed.stdout)
    assert options == [["orders: finished, 2/2 subtasks finished", "orders"]], options
    assert (root, status) == (job_dir, "finished") and "1 found" in title
    assert not os.path.exists(tmp_path / "index-2.json")  # nothing registered it for the second kernel


def test_streaming_jobs_are_listed_by_fw_recover_in_a_fresh_kernel_and_a_restart_is_an_interruption(tmp_path):
    """A streaming job and its savepoint, run in a folder of their own, are found from a fresh kernel
    through the per-user index; a job whose kernel is restarted (Kernel > Restart, with the 5 s Jupyter
    gives) while a %%fwstream cell waits on its backlog says so (job_cancelled: the kernel was asked to
    shut down, status cancelled), not stopped as job.stop() would leave it, nor failed."""
    index, mark = str(tmp_path / "index.json"), tmp_path / "adding"
    setup = ("%load_ext fw_magics\nimport fw_magics as fw, os, pyarrow as pa, pyarrow.parquet as pq, datetime as dt\n"
             "from tests.streaming import functions\nfrom tests.streaming.driver import SlowCountSum\n"
             f"src, jobs, MARK = {str(tmp_path / 'src')!r}, {str(tmp_path / 'jobs')!r}, {str(mark)!r}\nos.makedirs(src)\n"
             "t = pa.table({'k': list(range(8)) * 30, 'v': list(range(240)),"
             " 'ts': pa.array([dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)] * 240, pa.timestamp('us', tz='UTC'))})\n"
             "pq.write_table(t, os.path.join(src, '.a')); os.replace(os.path.join(src, '.a'), os.path.join(src, 'a.parquet'))\n"
             "stream = fw.from_files(src, 'parquet', functions.SCHEMA, event_time='ts')\n"
             "job = stream.key_by('k').aggregate(functions.CountSum()).start(job_dir=jobs, job_name='listed',"
             " trigger='100 milliseconds')\n"
             "job.process_all_available(); job.savepoint(); job.stop()\n"
             "class Marked(SlowCountSum):  # 0.2 s a record: 24 s of backlog; says when the backlog adds\n"
             "    def add(self, value, accumulator):\n"
             "        open(MARK, 'a').close()\n"
             "        return super().add(value, accumulator)\n")
    first = Kernel(tmp_path, {"FW_JOB_DIR": "", "FW_JOB_INDEX": index, "PYTHONPATH": os.getcwd()})
    try:
        first.ok(setup, timeout=400)
        # the cell waits on the job, as %%fwstream does, when Kernel > Restart comes in the middle of its backlog
        first.client.execute(f"%%fwstream aggregate fn=Marked key=k --job restarted --job-dir {tmp_path / 'jobs'}\n"
                             "stream")
        deadline = time.monotonic() + 120
        while not mark.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert mark.exists(), "the backlog never started"
        first.client.stop_channels()
        # what Kernel > Restart does: an interrupt, a shutdown request, then SIGTERM at 2.5 s and SIGKILL at
        # 5 s to a kernel still there (jupyter_client's default shutdown_wait_time, JupyterLab's)
        first.manager.shutdown_kernel(now=False, restart=True)
    finally:
        if first.manager.is_alive():
            first.stop()
    restarted = read_job(str(tmp_path / "jobs" / "restarted"), "restarted")
    words = [(e["type"], e.get("cause")) for e in restarted.events if e["type"] in ("job_cancelled", "job_failed")]
    assert words == [("job_cancelled", SHUTDOWN)] and restarted.status == "cancelled", words
    second = Kernel(tmp_path / "jobs", {"FW_JOB_DIR": "", "FW_JOB_INDEX": index})
    try:
        listed = second.ok("import json\n%load_ext fw_magics\npanel = %fw_recover\n"
                           "print(json.dumps([label for label, _ in panel.jobs.options]))")
    finally:
        second.stop()
    labels = json.loads(listed.stdout)
    assert any(label.startswith("listed: stopped, streaming job in mode mixed") and "1 savepoint" in label
               for label in labels), labels
    assert any(label.startswith("restarted: cancelled, streaming job in mode mixed") for label in labels), labels
