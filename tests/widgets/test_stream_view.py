"""A graph view of a streaming job: the phases, the backlog's progress, the switch and its W,
then micro-batches, fed live through the runtime hooks (as StreamingJob calls them) or read back
from the job's events. No Spark here: a stand-in job calls the hooks in the engine's order."""

from __future__ import annotations

import re

import pytest

from fw_magics import hooks
from fw_magics.graph import JobGraph
from fw_magics.recovery import events
from fw_magics.widgets import GraphView
from fw_magics.widgets.stream_status import moment, operator_states, panel_html, stream_status

W = 1_704_067_200_000 + 3_590_000  # 2024-01-01 00:59:50 UTC


def keyed_graph() -> JobGraph:
    g = JobGraph(mode="streaming")
    g.add_operator("readings", 2, kind="source")
    g.add_operator("reduce(add)", 2, kind="keyed_reduce")
    g.add_operator("changelog", 2, kind="sink")
    g.connect("readings", "reduce(add)", "all_to_all")
    g.connect("reduce(add)", "changelog")
    return g


class FakeJob:
    """What the live view reads of a StreamingJob: graph, store, events(), job_graph()."""

    def __init__(self, graph, mode="mixed"):
        self.graph, self.mode, self.store, self.phase = graph, mode, object(), None
        self.log = [events.job_submitted("sensors", graph.to_json(), graph.fingerprint()),
                    events.stream_started(mode, 1, {"path": "readings"}, 2),
                    events.backlog_recorded({"files": 8, "bytes": 1000})]

    def events(self):
        return list(self.log)

    def job_graph(self):
        g = JobGraph.from_json(self.graph.to_json())
        g.annotate("readings", backlog="true" if self.phase == "backlog" else "false", backlog_files=8)
        g.annotate("reduce(add)", phase=self.phase, mode=self.mode)
        return g

    # the engine's order: the event is written (event_written), then the specific hook
    def emit(self, event):
        self.log.append(event)
        hooks.event_written(self.store, event)

    def enter(self, phase, **detail):
        self.phase = phase
        self.emit(events.phase_changed(phase, **detail))
        hooks.trigger("stream_phase", self, phase, detail)

    def batch(self, n, rows, state_rows):
        info = {"batch": n, "input_rows": rows, "state_rows_updated": state_rows, "watermark": W,
                "dropped_by_watermark": 0, "duration_ms": 120}
        self.emit(events.micro_batch(**info))
        hooks.trigger("micro_batch", self, info)


def text(html: str) -> str:
    return re.sub(r"<[^>]+>", " ", html)


@pytest.fixture
def view():
    v = GraphView(keyed_graph())
    yield v
    v.close()


def test_a_view_follows_a_mixed_job_through_its_phases(view):
    job, other = FakeJob(view.graph), GraphView(keyed_graph(), follow=False)
    job.enter("backlog")
    assert view.stream["phase"] == "backlog" and view.states["readings"] == "running"
    assert "backlog: true" in view.canvas.svg and "phase: backlog" in view.canvas.svg
    hooks.trigger("backlog_progress", job, 1, 4)
    assert view.canvas.states["readings"]["text"] == "backlog of 8 files: 1/4 tasks"
    assert "<progress max='4' value='1'>" in view.stream_panel.value
    job.emit(events.subtask_finished("v1", 0, 1, None, 20, 100, 0.1, []))
    job.emit(events.subtask_finished("v1", 1, 1, None, 20, 100, 0.1, []))
    hooks.trigger("backlog_progress", job, 4, 4)
    job.emit(events.switch(W, state_writes=40))
    job.enter("switching", watermark=W)
    assert view.stream["watermark"] == W and view.stream["state_writes"] == 40
    assert "backlog: false" in view.canvas.svg and "phase: switching" in view.canvas.svg
    assert f"switch at W = {moment(W)}, 40 state writes in backlog" in text(view.stream_panel.value)
    assert moment(W) == "2024-01-01 00:59:50.000 UTC"
    assert view.canvas.states["readings"]["text"] == "backlog done of 8 files"
    job.batch(0, 0, 40)  # the switch's checkpoint of the handed-over state
    job.enter("stream")
    job.batch(1, 1000, 12)
    assert view.states == {"readings": "running", "reduce(add)": "running", "changelog": "running"}
    assert view.canvas.states["changelog"]["text"] == "micro-batch 1: 1,000 rows in"
    assert view.canvas.states["reduce(add)"]["text"] == f"phase stream · W {moment(W)} · 12 state rows"
    rows = re.findall(r"<tr><td>(\d+)</td><td>([\d,]+)</td><td>([\d,]+)</td>", view.stream_panel.value)
    assert rows == [("0", "0", "40"), ("1", "1,000", "12")]
    job.enter("stopped")
    assert set(view.states.values()) == {"finished"} and view.stream["phase"] == "stopped"
    assert other.stream is None  # follow=False: never touched
    other.close()


def test_a_view_of_another_graph_is_not_touched(view):
    g = keyed_graph()
    g.add_operator("extra", 1)
    g.connect("changelog", "extra")
    job = FakeJob(g)
    job.enter("backlog")
    assert view.stream is None and view.stream_panel.value == ""


def test_the_status_read_back_from_the_events_matches_the_live_one(view):
    job = FakeJob(view.graph)
    job.enter("backlog")
    job.emit(events.subtask_finished("v1", 0, 1, None, 20, 100, 0.1, []))
    job.emit(events.switch(W, state_writes=40))
    job.enter("switching", watermark=W)
    job.batch(0, 0, 40)
    job.enter("stream")
    job.batch(1, 7, 3)
    live = dict(view.stream)
    replayed = stream_status(job.events())
    assert replayed == live
    assert panel_html(replayed) == view.stream_panel.value


def test_a_restart_during_the_backlog_shows_what_is_kept():
    g = keyed_graph()
    log = [events.job_submitted("sensors", g.to_json(), g.fingerprint()),
           events.stream_started("mixed", 1, None, 2), events.backlog_recorded({"files": 8}),
           events.phase_changed("backlog"), events.subtask_finished("v1", 1, 1, None, 5, 10, 0.1, []),
           events.stream_started("mixed", 2, None, 2), events.phase_changed("backlog")]
    status = stream_status(log)
    assert (status["phase"], status["runs"], status["backlog_done"]) == ("backlog", 2, 1)
    states = operator_states(g, status)
    assert states["readings"] == {"state": "running", "text": "backlog of 8 files: 1/2 subtasks"}
    assert "started</b> 2 times" in panel_html(status)


def test_a_plain_stream_has_no_backlog_and_a_failure_shows_its_cause():
    g = keyed_graph()
    log = [events.stream_started("stream", 1, None, 2), events.phase_changed("stream"),
           events.micro_batch(0, 5, 5, None), events.phase_changed("failed", cause="ValueError: bad")]
    status = stream_status(log)
    states = operator_states(g, status)
    assert states["readings"]["text"] == "no backlog (plain stream)"
    assert {s["state"] for s in states.values()} == {"failed"}
    shown = text(panel_html(status))
    assert "ValueError: bad" in shown and "backlog" not in shown and "switch" not in shown
    assert "1 micro-batch in all" in " ".join(shown.split())  # not "1 micro-batches" (issue 47, item 11)


def test_a_restart_by_the_strategy_shows_how_often_and_after_what():
    """The job's restart strategy restarted its query (tests/streaming/test_restart.py): the panel says
    so with the failure; a later start() counts afresh, as job.restarts does."""
    from fw_magics.widgets import model

    g = keyed_graph()
    log = [events.stream_started("mixed", 1, None, 2), events.phase_changed("stream"), events.micro_batch(0, 5, 5, None),
           events.region_failed("v1", [], "StreamingQueryException: Python worker failed to connect back.", 1),
           events.region_restarted("v1", [], 1), events.micro_batch(1, 3, 2, None)]
    status = stream_status(log)
    assert (status["phase"], status["restarts"]) == ("stream", 1)
    shown = " ".join(text(panel_html(status)).split())
    assert "restarted once after StreamingQueryException: Python worker failed to connect back." in shown
    assert {s["state"] for s in operator_states(g, status).values()} == {"running"}
    assert model.describe_event(log[3]).endswith("region failed: v1 (its streaming query): "
                                                 "StreamingQueryException: Python worker failed to connect back.")
    assert model.describe_event(log[4]).endswith("region restarted: v1, restarting its streaming query")
    again = stream_status(log + [events.region_failed("v1", [], "boom", 2), events.region_restarted("v1", [], 2)])
    assert "restarted 2 times after boom" in " ".join(text(panel_html(again)).split())
    assert stream_status(log + [events.stream_started("mixed", 2, None, 2)])["restarts"] == 0


def test_the_recovery_panel_shows_a_streaming_job_phase_and_switch(tmp_path):
    from fw_magics.widgets import RecoveryPanel
    from tests.widgets.graphs import write_log

    g = keyed_graph()
    log = [events.job_submitted("sensors", g.to_json(), g.fingerprint()),
           events.stream_started("mixed", 1, None, 2), events.backlog_recorded({"files": 8}),
           events.phase_changed("backlog"), events.subtask_finished("v1", 0, 1, None, 5, 10, 0.1, []),
           events.subtask_finished("v1", 1, 1, None, 5, 10, 0.1, []), events.switch(W, state_writes=40),
           events.phase_changed("switching", watermark=W), events.micro_batch(0, 0, 40, W),
           events.phase_changed("stream"), events.micro_batch(1, 9, 4, W)]
    write_log(str(tmp_path / "sensors"), log)
    panel = RecoveryPanel(str(tmp_path))
    try:
        shown = text(panel.status.value)
        assert f"mixed mode: phase stream, switched at W = {moment(W)}, 2 micro-batches" in shown
        view = panel.graph_view
        assert view.stream["phase"] == "stream" and view.stream["state_writes"] == 40
        panel.step.value = 4  # the timeline, back in the backlog
        assert view.stream["phase"] == "backlog" and view.stream["watermark"] is None
        assert "phase changed: backlog" in panel.event.value
        panel.step.value = 7
        assert "switch: W = 2024-01-01 00:59:50.000 UTC, 40 state writes in backlog" in panel.event.value
    finally:
        panel.close()
