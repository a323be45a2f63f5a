"""Live state: graph views follow every execute() of their graph in this kernel, and every
streaming job of their graph (``start()``): its phase, backlog progress, switch and micro-batches.

One set of runtime hooks (fw_magics.hooks) feeds all views. A view is held weakly,
but ipywidgets itself keeps every widget alive until it is closed: ``view.close()`` is what
makes a view stop following.
"""

from __future__ import annotations

import warnings
import weakref

from fw_magics import hooks
from fw_magics.recovery import events as E
from fw_magics.recovery.replay import JobState, replay

_views: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # view -> its graph's fingerprint
_hooks: list = []  # the handles of the one set of hooks all views share
#: Each run's events are taken into its ``JobState`` as they are written (``job``), once each.
_runs: dict[int, dict] = {}  # id(store) -> {"fingerprint", "job", "recovered", "running", "tasks", "store"}
_streams: dict[int, dict] = {}  # id(job's store) -> {"fingerprint", "job", "tasks", "store", "graph"}
#: The events after which a view is drawn again: a streaming job's, a run of execute()'s, and those
#: after which no job vertex of a run of execute() is running any more.
_STREAM_REDRAWN = (E.SUBTASK_FINISHED, E.SUBTASK_RESET, E.SWITCH)
_RUN_REDRAWN = (E.SUBTASK_FINISHED, E.SUBTASK_RESET, E.REGION_FAILED, *E.LAST_WORDS)
_RUN_HALTED = (*E.LAST_WORDS, E.REGION_FAILED)


def watch(view) -> None:
    """Let ``view`` follow runs of its graph (matched by fingerprint)."""
    if not any(hook.registered for hook in _hooks):
        _hooks[:] = [hooks.register("job_started", _on_job), hooks.register("event_written", _on_event),
                     hooks.register("vertex_started", _on_vertex), hooks.register("vertex_progress", _on_progress),
                     hooks.register("stream_phase", _on_phase), hooks.register("backlog_progress", _on_backlog),
                     hooks.register("micro_batch", _on_micro_batch)]
    _views[view] = view.graph.fingerprint()


def _refresh(run: dict) -> None:
    for view, fingerprint in list(_views.items()):
        if getattr(view, "comm", None) is None:  # closed: it follows no more
            _views.pop(view, None)
            continue
        if fingerprint == run["fingerprint"]:
            try:
                view.show_events(run["job"], run["recovered"], run["running"], run["tasks"])
            except Exception as error:  # a drawing problem must never fail the job
                warnings.warn(f"graph view not updated: {type(error).__name__}: {error}")


def _on_job(run, recovered) -> None:
    _runs.clear()  # one run at a time per kernel (the job lock sees to that per job)
    state = {"fingerprint": run.graph.fingerprint(), "job": JobState(), "recovered": set(recovered),
             "running": None, "tasks": None, "store": run.store}
    _runs[id(run.store)] = state
    _refresh(state)


def _on_vertex(vertex, subtasks, attempt) -> None:
    for state in _runs.values():
        state["running"], state["tasks"] = vertex.name, None
        _refresh(state)


def _on_progress(vertex_name, done, total) -> None:
    for state in _runs.values():
        if state["running"] == vertex_name:
            state["tasks"] = (done, total)
            _refresh(state)


def _on_event(store, event) -> None:
    stream = _streams.get(id(store))
    if stream is not None and stream["store"] is store:
        stream["job"].take(event)
        if event["type"] in _STREAM_REDRAWN:
            _refresh_stream(stream)
        return
    state = _runs.get(id(store))
    if state is None or state["store"] is not store:
        return
    state["job"].take(event)
    if event["type"] in _RUN_HALTED:
        state["running"], state["tasks"] = None, None
    if event["type"] in _RUN_REDRAWN:
        _refresh(state)


# -- streaming jobs ---------------------------------------------------------------------------------


def _refresh_stream(state: dict, redraw: bool = False) -> None:
    from .stream_status import stream_status

    status = stream_status(state["job"], state["tasks"])
    for view, fingerprint in list(_views.items()):
        if getattr(view, "comm", None) is None:
            _views.pop(view, None)
            continue
        if fingerprint == state["fingerprint"]:
            try:
                view.show_stream(status, graph=state["graph"] if redraw else None)
            except Exception as error:  # a drawing problem must never fail the job
                warnings.warn(f"graph view not updated: {type(error).__name__}: {error}")


def _stream_state(job) -> dict:
    state = _streams.get(id(job.store))
    if state is None or state["store"] is not job.store:
        for key in [k for k, v in _streams.items() if v["fingerprint"] == job.graph.fingerprint()]:
            del _streams[key]  # a new start of the same job: follow this one
        state = {"fingerprint": job.graph.fingerprint(), "job": replay(job.events()), "tasks": None,
                 "store": job.store, "graph": None}
        _streams[id(job.store)] = state
    return state


def _on_phase(job, phase, detail) -> None:
    state = _stream_state(job)
    if not any(e["type"] == E.PHASE_CHANGED and e.get("phase") == phase for e in state["job"].timeline[-1:]):
        state["job"].take({"type": E.PHASE_CHANGED, "phase": phase, **detail})
    if phase != "backlog":
        state["tasks"] = None
    state["graph"] = job.job_graph()  # the graph's notes: backlog status, phase, W
    _refresh_stream(state, redraw=True)


def _on_backlog(job, done, total) -> None:
    state = _stream_state(job)
    state["tasks"] = (done, total)
    _refresh_stream(state)


def _on_micro_batch(job, info) -> None:
    state = _stream_state(job)
    if not any(e["type"] == E.MICRO_BATCH and e.get("batch") == info["batch"] for e in state["job"].timeline[-8:]):
        state["job"].take({"type": E.MICRO_BATCH, **info})
    _refresh_stream(state)
