"""A graph view follows a real mixed job (the shared Spark session): backlog, switch, micro-batches."""

from __future__ import annotations

import pytest

import fw_magics as fw
from fw_magics.widgets import GraphView, show_graph
from tests.streaming import functions
from tests.streaming.files import TRIGGER, Area

pytestmark = [pytest.mark.spark, pytest.mark.extended]  # make test-extended (CI)


def test_a_view_follows_a_mixed_job_live_and_draws_it_afterwards(spark, tmp_path):
    area = Area(tmp_path)
    area.write([(k, v, v) for k in range(5) for v in range(3)])
    area.write([(k, 1, 10) for k in range(0, 5, 2)])
    totals = fw.from_files(area.source(), "parquet", functions.SCHEMA, event_time="ts",
                           watermark_delay="1 second").key_by("k").reduce(functions.add)
    view = GraphView(totals.job_graph())
    seen = []
    view.stream_panel.observe(lambda change: seen.append(view.stream["phase"]), "value")
    job = totals.start(job_dir=area.jobs, job_name="live", trigger=TRIGGER)
    try:
        job.process_all_available()
        area.write([(1, 5, 30), (7, 2, 31)])
        job.process_all_available()
        assert job.phase == "stream"
        status = view.stream
        assert status["phase"] == "stream" and status["watermark"] == job.watermark
        assert status["state_writes"] == job.backlog_state_writes == 5
        assert status["backlog_done"] == job.parallelism
        assert sum(b["input_rows"] for b in status["batches"]) == 2  # only the fresh file, after the switch
        assert {"backlog", "switching", "stream"} <= set(seen)
        assert seen.index("backlog") < seen.index("switching") < seen.index("stream")
        assert "phase: stream" in view.canvas.svg and "backlog: false" in view.canvas.svg
        assert view.canvas.states["changelog"]["text"].startswith("micro-batch ")
        drawn = show_graph(job)  # afterwards, from the job's event log
        assert drawn.stream["watermark"] == job.watermark and drawn.stream["phase"] == "stream"
        assert drawn.stream["batches"] == status["batches"]
        drawn.close()
    finally:
        job.stop()
        view.close()
