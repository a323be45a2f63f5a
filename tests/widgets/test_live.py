"""Live following (fw_magics.widgets.live) driven through the runtime hooks by hand. No Spark.

The runtime calls hooks.job_started, hooks.vertex_started and hooks.event_written; here a
fake run (its graph and its event store) stands in for execute().
"""

from types import SimpleNamespace

import pytest

from fw_magics import hooks
from fw_magics.graph import JobGraph
from fw_magics.recovery import events
from fw_magics.widgets import GraphView
from tests.widgets.graphs import finished, four_operators


def start(graph, recovered=()):
    run = SimpleNamespace(graph=graph, store=object())
    hooks.job_started(run, set(recovered))
    return run


def vertex(name, subtasks=(0, 1, 2)):
    hooks.vertex_started(SimpleNamespace(name=name), set(subtasks), 1)


def emit(run, event):
    hooks.event_written(run.store, event)


@pytest.fixture
def views():
    followed = GraphView(four_operators())
    still = GraphView(four_operators(), follow=False)
    other = JobGraph()
    other.add_operator("source", 3)
    unrelated = GraphView(other)
    yield followed, still, unrelated
    for view in (followed, still, unrelated):
        view.close()


def test_a_view_shows_each_step_of_a_run_of_its_graph(views):
    view, still, unrelated = views
    run = start(view.graph)
    assert set(view.states.values()) == {"pending"}
    vertex("v0")
    assert view.states == {"source": "running", "sort": "running", "reduce": "pending", "map": "pending"}
    for i in range(3):
        emit(run, finished("v0", i))
        assert view.states["sort"] == ("finished" if i == 2 else "running")
    assert view.canvas.states["source"]["text"] == "finished 3/3 · 30 records"
    vertex("v1")
    emit(run, finished("v1", 0))
    assert view.states["reduce"] == "running" and view.states["map"] == "pending"
    emit(run, events.region_failed("v1", ["v1[1]"], "boom", 1))
    assert view.states["reduce"] == "failed"
    emit(run, events.subtask_reset("v1", 1, "restarted by failover"))
    emit(run, events.region_restarted("v1", ["v1[1]"], 1))
    vertex("v1", {1, 2})
    assert view.states["reduce"] == "running"
    emit(run, finished("v1", 1))
    emit(run, finished("v1", 2))
    vertex("v2")
    for i in range(3):
        emit(run, finished("v2", i))
    emit(run, events.job_finished())
    assert set(view.states.values()) == {"finished"}
    # a view not following, and a view of another graph, never changed
    assert still.canvas.states == {} and unrelated.canvas.states == {}


def test_a_resumed_run_shows_the_kept_subtasks_recovered(views):
    view = views[0]
    run = start(view.graph, recovered={("v0", 0), ("v0", 1), ("v0", 2), ("v1", 2)})
    assert view.states == {"source": "recovered", "sort": "recovered", "reduce": "pending", "map": "pending"}
    vertex("v1", {0, 1})
    emit(run, finished("v1", 0))
    emit(run, finished("v1", 1))
    assert view.states["reduce"] == "finished" and "1 recovered" in view.canvas.states["reduce"]["text"]


def test_events_of_an_earlier_run_are_ignored(views):
    view = views[0]
    old = start(view.graph)
    new = start(view.graph)
    emit(old, finished("v0", 0))
    assert set(view.states.values()) == {"pending"}
    emit(new, finished("v0", 0))
    assert view.canvas.states["source"]["text"] == "running 1/3 · 10 records"


def test_a_closed_view_stops_following(views):
    view = views[0]
    run = start(view.graph)
    vertex("v0")
    view.close()
    for i in range(3):
        emit(run, finished("v0", i))
    assert view.states["source"] == "running"  # what it showed when it was closed


def test_spark_task_progress_shows_on_the_running_vertex_only(views):
    view = views[0]
    run = start(view.graph)
    vertex("v0")
    hooks.vertex_progress("v0", 2, 8)
    assert view.canvas.states["sort"]["text"] == "running 0/3 · Spark tasks 2/8"
    hooks.vertex_progress("v1", 1, 4)  # not the running vertex: ignored
    assert "Spark tasks" not in view.canvas.states["map"]["text"]
    for i in range(3):
        emit(run, finished("v0", i))
    assert view.canvas.states["sort"]["text"] == "finished 3/3 · 30 records"
    vertex("v1")  # a new vertex starts with no task counts of its own yet
    assert view.canvas.states["reduce"]["text"] == "running 0/3"
