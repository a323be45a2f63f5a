"""Every option of from_files() and start() is checked at the call (issue 30, item 10): a fuzz test.

Hypothesis draws each option from good values, near misses and nonsense (a job_dir that is a file,
a sink at /dev/null or a FIFO, "availableNow", parallelism 2**15, ...). A call either starts a job
(stopped at once) or raises an FwMagicsError, or the ValueError or TypeError the docs name, in one
line: never a raw error from deep inside, never after anything ran.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fw_magics as fw
from tests.examples import examples
from tests.streaming import functions

pytestmark = [pytest.mark.spark]


@pytest.fixture(scope="module")
def places(tmp_path_factory):
    base = tmp_path_factory.mktemp("fuzz")
    source = base / "src"
    source.mkdir()
    import pyarrow.parquet as pq

    from tests.streaming.files import table

    pq.write_table(table([(1, 1, 1), (2, 2, 2)]), str(source / "a.parquet"))
    a_file = base / "a-file"
    a_file.write_text("not a folder")
    fifo = base / "fifo"
    os.mkfifo(fifo)
    return {"base": str(base), "source": str(source), "file": str(a_file), "fifo": str(fifo)}


#: Each option: (good values, near misses and nonsense). Names in places() stand for its paths.
SOURCE_OPTIONS = {
    "path": (["source"], ["file", "missing", 5]),
    "format": (["parquet", "PARQUET"], ["xml", None]),
    "schema": ([functions.SCHEMA], ["k long, v", "k lng", 5]),
    "event_time": (["ts", None], ["tss", 5]),
    "watermark_delay": (["0 seconds", "1 second"], ["soon", -1, None]),
    "glob": ([None, "*.parquet"], ["", "a/b", 5]),
    "on_bad_file": (["fail", "skip"], ["ignore", None]),
    "on_late": (["drop", "fail"], ["keep"]),
}
START_OPTIONS = {
    "job_dir": (["jobs"], ["file", "/dev/null", "fifo", "", 5]),
    "job_name": ([None, "fuzz"], ["", "../x", "a/b", " x", 5, "x" * 300]),
    "mode": (["batch", "stream", "mixed"], ["mixd", None, 3]),
    "sink": ([None], ["/dev/null", "fifo", "file", 5, ""]),
    "trigger": ([None, "available_now", "5 seconds"], ["availableNow", "soon", 0]),
    "max_files_per_trigger": ([None, 1], [0, -1, True, 2.5, "3"]),
    "parallelism": ([None, 2], [0, 2**15, True, "2"]),
    "reset": ([True], ["yes", None]),
}


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_bad_option_is_one_line_at_the_call(places, stop_queries, data):
    def place(name):
        return {"source": places["source"], "file": places["file"], "fifo": places["fifo"],
                "jobs": os.path.join(places["base"], "jobs"),
                "missing": os.path.join(places["base"], "missing")}.get(name, name)

    table = {**SOURCE_OPTIONS, **START_OPTIONS}
    broken = set(data.draw(st.lists(st.sampled_from(sorted(table)), max_size=2, unique=True)))
    chosen = {name: place(data.draw(st.sampled_from(table[name][name in broken]))) for name in table}
    try:
        op = fw.from_files(**{k: chosen[k] for k in SOURCE_OPTIONS}).key_by("k").aggregate(functions.CountSum())
        job = op.start(**{k: chosen[k] for k in START_OPTIONS})
    except (fw.FwMagicsError, ValueError, TypeError) as error:
        STARTS["refused"] += 1
        message = str(error)
        assert message and "\n" not in message, f"{type(error).__name__}: {message}"
        assert type(error).__module__.startswith(("fw_magics", "builtins")), type(error)
        return
    STARTS["started"] += 1
    job.stop()
    assert job.phase in ("stopped", "finished", "failed")


STARTS = {"started": 0, "refused": 0}


def test_the_fuzz_reaches_a_running_job_with_good_options(places, stop_queries):
    """The property above is not empty: its good values start a real job."""
    op = fw.from_files(places["source"], "parquet", functions.SCHEMA, event_time="ts").key_by("k").aggregate(
        functions.CountSum())
    job = op.start(job_dir=os.path.join(places["base"], "jobs"), job_name="fuzz-ok", mode="batch", reset=True)
    job.process_all_available()
    assert job.phase == "finished"


def test_zz_the_fuzz_both_started_jobs_and_refused_options():
    """Run after the property (file order): it drew both kinds of call."""
    assert STARTS["started"] > 0 and STARTS["refused"] > 0, STARTS
