"""job.show() follows a real mixed job (the shared Spark session): its table changes with no call, Savepoint
and Stop are the job's own, its folded "State of a key" is the job's state inspector, and the same job shown by name afterwards is read-only with what the log holds."""

from __future__ import annotations

import json
import time

import pytest

import fw_magics as fw
from fw_magics.runtime.streaming.savepoints.files import list_savepoints
from fw_magics.widgets import JobView, show_job
from fw_magics.widgets.job_view import MIN_INTERVAL_S
from tests.streaming import functions
from tests.streaming.files import TRIGGER, Area

#: make test-extended (CI); a core case: make test-extended runs it again under Spark Connect (tests/connect_cases.py)
pytestmark = [pytest.mark.spark, pytest.mark.extended, pytest.mark.core]


def wait_for(condition, within: float = 30.0):
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, "the view did not change in time"
        time.sleep(0.05)


def test_a_view_follows_a_job_by_itself_and_its_buttons_are_the_jobs_api(spark, tmp_path):
    area = Area(tmp_path)
    area.write([(k, v, v) for k in range(4) for v in range(3)])  # backlog: totals 3 per key
    totals = fw.from_files(area.source(), "parquet", functions.SCHEMA, event_time="ts").key_by("k") \
        .aggregate(functions.CountSum())
    job = totals.start(job_dir=area.jobs, job_name="shown", trigger=TRIGGER)
    view = job.show(sort="total")
    try:
        job.process_all_available()
        wait_for(lambda: view.results.latest and view.status.get("phase") == "stream")
        before = {r["k"]: r["total"] for r in view.results.top(None, n=100)}
        assert before == {k: 3 for k in range(4)}  # the backlog's rows, read once through Spark
        reads = view.refreshes
        area.write([(1, 40, 10), (9, 5, 11)])  # fresh: nothing calls the view from here on
        wait_for(lambda: {r["k"]: r["total"] for r in view.results.top(None, n=100)}
                 == {**before, 1: 43, 9: 5})
        assert view.table.value.index("<td>43</td>") < view.table.value.index("<td>5</td>")  # top by total
        assert view.refreshes - reads <= 3  # read when a micro-batch committed, not on every poll
        assert view.status["batches"] == len(job.replayed().batches) >= 1
        assert [m["batch"] for m in view.metrics] == list(job.metrics()["batch"])[-31:]  # the last 30 and the backlog's
        assert "state rows per partition" in view.charts.value and "polyline" in view.charts.value
        assert "total of the top 5 keys" in view.result_chart.value and "<title>1: 43</title>" in view.result_chart.value
        assert not any(button.disabled for button in view.buttons)
        assert job._repr_mimebundle_() == {"text/plain": repr(job)}  # no kernel here: no view follows the job
        static = view._repr_mimebundle_()  # where widgets do not render (nbconvert, GitHub): what it showed
        assert "<td>43</td>" in static["text/html"] and "phase <b class='fw-phase'>stream</b>" in static["text/html"]
        assert static["text/plain"].startswith("JobView of job 'shown': phase stream, ")
        with pytest.raises(fw.FullWindowError, match=r"^sort='nope': not a result column of job 'shown'; "
                                                     r"accepted: k, n, total \(or None: by key\)$"):
            job.show(sort="nope")
        assert MIN_INTERVAL_S == 0.25

        path = view.savepoint()  # what the Savepoint button runs
        assert path is not None and list_savepoints(job.storage.base) == [path]
        assert path in view.savepoints.value and job.phase == "stream"
        assert view.state_fold.selected_index is None  # "State of a key": folded, nothing read until opened
        view.state_fold.selected_index = 0  # as a click on its title: the job's keys offered to pick
        wait_for(lambda: {"1", "9"} <= set(view.state_inspector.pick.options))
        found = view.state_inspector.show("1")  # what typing 1 in its key box shows: [n, total] at each reading
        batches = [json.loads(r["running"]) for r in found.rows if r["at"] == "micro-batch"]
        (saved,) = [json.loads(r["running"]) for r in found.rows if r["at"] == "savepoint"]
        assert batches[-1] == saved == [4, 43] and set(map(tuple, batches)) <= {(3, 3), (4, 43)}
        view.stop()  # what the Stop button runs
        assert job.phase == "stopped" and "stopped" in view.message_text
        assert all(button.disabled for button in view.buttons) and view.status["read_only"]
        events = [e["type"] for e in job.events()]
        assert events.count("phase_changed") >= 1 and "job_cancelled" not in events
    finally:
        job.stop()
        view.close()
    again = show_job("shown", job_dir=area.jobs, key="k")  # as after a kernel restart: from the folder only
    try:
        assert isinstance(again, JobView) and not again.live and again.status["read_only"]
        assert all(button.disabled for button in again.buttons)
        assert {r["k"]: r["total"] for r in again.results.top(None, n=100)} == {1: 43, 9: 5}  # micro-batches only
        assert again.status["phase"] == "stopped" and again.status["batches"] == view.status["batches"]
        again.stop()
        assert "read-only" in again.message_text
    finally:
        again.close()
    with pytest.raises(fw.FullWindowError, match=r"no streaming job named 'nope' in .*streaming jobs found: shown$"):
        show_job("nope", job_dir=area.jobs)
