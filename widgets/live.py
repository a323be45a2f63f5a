"""Live state: graph views follow every execute() of their graph in this kernel.

One set of runtime hooks (fw_magics.runtime.hooks) feeds all views. A view is held weakly,
but ipywidgets itself keeps every widget alive until it is closed: ``view.close()`` is what
makes a view stop following.
"""

from __future__ import annotations

import warnings
import weakref

from fw_magics.runtime import hooks

_views: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # view -> its graph's fingerprint
_hooks: list = []  # the handles of the one set of hooks all views share
_runs: dict[int, dict] = {}  # id(store) -> {"fingerprint", "events", "recovered", "running", "tasks", "store"}


def watch(view) -> None:
    """Let ``view`` follow runs of its graph (matched by fingerprint)."""
    if not any(hook.registered for hook in _hooks):
        _hooks[:] = [hooks.register("job_started", _on_job), hooks.register("event_written", _on_event),
                     hooks.register("vertex_started", _on_vertex), hooks.register("vertex_progress", _on_progress)]
    _views[view] = view.graph.fingerprint()


def _refresh(run: dict) -> None:
    for view, fingerprint in list(_views.items()):
        if getattr(view, "comm", None) is None:  # closed: it follows no more
            _views.pop(view, None)
            continue
        if fingerprint == run["fingerprint"]:
            try:
                view.show_events(run["events"], run["recovered"], run["running"], run["tasks"])
            except Exception as error:  # a drawing problem must never fail the job
                warnings.warn(f"graph view not updated: {type(error).__name__}: {error}")


def _on_job(run, recovered) -> None:
    _runs.clear()  # one run at a time per kernel (the job lock sees to that per job)
    state = {"fingerprint": run.graph.fingerprint(), "events": [], "recovered": set(recovered),
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
    state = _runs.get(id(store))
    if state is None or state["store"] is not store:
        return
    state["events"].append(event)
    if event["type"] in ("job_finished", "job_failed", "job_cancelled", "region_failed"):
        state["running"], state["tasks"] = None, None
    if event["type"] in ("subtask_finished", "subtask_reset", "region_failed", "job_finished", "job_failed",
                         "job_cancelled"):
        _refresh(state)
