"""Widgets on real DataStreams (the shared Spark session): plan fragments, live state, resume."""

import os

import pytest

import fw_magics as fw
from fw_magics import hooks
from fw_magics.failover import FixedDelayRestart
from fw_magics.widgets import GraphView, RecoveryPanel
from tests.runtime import jobs

pytestmark = [pytest.mark.spark]

SORT = "sort_partition(v desc)"
MAP = "map_partition(summarize)"


def sorted_stream(name="sales"):
    """sales + sort_partition (one chain, 3 subtasks), then map_partition per key g (3 subtasks)."""
    source = fw.from_records(jobs.RECORDS, jobs.SCHEMA, partitions=3, name=name)
    ranked = source.full_window_partition().sort_partition("v", "desc")
    return ranked.key_by("g").full_window_partition().map_partition(jobs.summarize, "g long, n long, total double")


def test_the_details_show_the_spark_plan_fragment_of_each_operator(spark):
    view = sorted_stream().show_graph()
    assert isinstance(view, GraphView) and view.graph.chains() == [["sales", SORT], [MAP]]
    sort = view.attributes(SORT)["plan"]
    assert "Sort [v" in sort and "DESC" in sort
    assert "Exchange" not in sort and "MapInArrow" not in sort  # only what the sort adds
    assert "MapInArrow" in view.attributes("sales")["plan"]
    assert "Exchange hashpartitioning(g" in view.attributes(MAP)["plan"]
    view.select(SORT)
    assert "Sort [v" in view.details.value and "Spark plan fragment" in view.details.value


@pytest.mark.backends  # and under the separate Connect server: Spark's task progress through it
def test_a_view_follows_execute_live(spark, tmp_path):
    stream = sorted_stream()
    view = stream.show_graph()
    other = fw.from_records(jobs.RECORDS, jobs.SCHEMA, partitions=2, name="other").show_graph()
    assert view.canvas.states == {}
    seen, progress = [], []
    record = lambda store, event: seen.append((event["type"], dict(view.states)))  # noqa: E731
    def record_progress(vertex, done, total):
        progress.append((vertex, done, total, view.canvas.states[SORT if vertex == "v0" else MAP]["text"]))
    watching = [hooks.register("event_written", record),  # after the views' own hooks: sees what they show
                hooks.register("vertex_progress", record_progress)]
    try:
        result = stream.execute(job_dir=str(tmp_path), job_name="x")
    finally:
        for hook in watching:
            hook.unregister()
    # Spark's own task counts, polled while each vertex's Spark job ran, end complete
    for vertex in ("v0", "v1"):
        _, done, total, text = [p for p in progress if p[0] == vertex][-1]
        assert done == total >= 3 and text.startswith("running") and text.endswith(f"Spark tasks {done}/{total}")
    assert view.states == {"sales": "finished", SORT: "finished", MAP: "finished"}
    assert view.canvas.states[MAP]["text"] == "finished 3/3 · 3 records"  # one record per key g
    assert sorted(tuple(r) for r in result.collect()) == [
        (g, 20, sum(r[3] for r in jobs.RECORDS if r[2] == g)) for g in range(3)]
    running = [(kind, states) for kind, states in seen if "running" in states.values()]
    assert any(states[SORT] == "running" for _, states in running)
    assert any(states[MAP] == "running" and states[SORT] == "finished" for _, states in running)
    first_running = next(k for k, (_, s) in enumerate(seen) if s[MAP] == "running")
    first_finished = next(k for k, (_, s) in enumerate(seen) if s[MAP] == "finished")
    assert first_running < first_finished
    assert other.canvas.states == {}  # a view of another graph did not follow this run


def test_resume_from_the_panel_then_the_result_shows_what_was_recovered(spark, tmp_path):
    job_dir, markers = str(tmp_path / "jobs"), str(tmp_path / "markers")
    # the last vertex fails on its first two attempts; one restart allowed: the job fails
    stream = jobs.three_vertex_job(markers, fail=(1, {1, 2}), state_dir=str(tmp_path / "state"))
    with pytest.raises(Exception, match="injected failure"):
        stream.execute(job_dir=job_dir, job_name="sales", restart=FixedDelayRestart(attempts=1, delay=0.0))

    panel = RecoveryPanel(job_dir, namespace={"unrelated": sorted_stream(), "pipeline": stream})
    assert panel.job.status == "failed" and panel.stream is stream
    assert not panel.resume_button.disabled and "Resume runs <code>" in panel.message.value
    failed_at_end = panel.graph_view.states
    assert failed_at_end["map_partition(summarize)"] == "failed"

    result = panel.resume()
    assert panel.job.status == "finished" and "data-status='finished'" in panel.status.value
    assert "fw-resumed" in panel.message.value and panel.result is result
    assert sorted(tuple(r) for r in result.collect()) == jobs.expected()
    assert {op for op, _ in result.recovered} >= {"sales", "reduce(add)"}
    assert set(panel.graph_view.states.values()) == {"finished"}

    view = result.show_graph()
    assert view.states["sales"] == "recovered" and view.states["reduce(add)"] == "recovered"
    assert view.states["map_partition(summarize)"] == "finished"  # re-run on resume: no longer failed
    text = view.canvas.states["sales"]["text"]
    assert text.startswith("recovered 4/4") and text.endswith("4 recovered")
    assert os.path.isdir(os.path.join(job_dir, "sales", "results"))


@pytest.mark.extended  # make test-extended (CI): make test keeps the panel's resume
def test_a_resume_that_fails_says_why_and_leaves_the_job_resumable(spark, tmp_path):
    job_dir, markers, state = str(tmp_path / "jobs"), str(tmp_path / "markers"), str(tmp_path / "state")
    stream = jobs.three_vertex_job(markers, fail=(1, set(range(1, 100))), state_dir=state)  # always fails
    with pytest.raises(Exception, match="injected failure"):
        stream.execute(job_dir=job_dir, job_name="sales", restart=FixedDelayRestart(attempts=0, delay=0.0))
    panel = RecoveryPanel(job_dir, namespace={"pipeline": stream})
    with pytest.raises(Exception, match="injected failure"):
        panel.resume()
    assert "fw-resume-failed" in panel.message.value and "injected failure" in panel.message.value
    assert panel.job.status == "failed" and not panel.resume_button.disabled
