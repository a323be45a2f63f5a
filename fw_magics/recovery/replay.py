"""Replaying a job's event log, and planning what a resumed run must do (FLIP-383). No Spark."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping

from .events import problem


@dataclass
class JobState:
    """What the event log says about a job."""

    job: str | None = None
    fingerprint: str | None = None
    graph: str | None = None
    parallelism: dict = field(default_factory=dict)
    finished: dict = field(default_factory=dict)  # (vertex, subtask) -> its subtask_finished event
    status: str = "running"  # running | finished | failed
    attempts: int = 0
    timeline: list = field(default_factory=list)  # every valid event, in order


def replay(events: Iterable[dict]) -> JobState:
    state = JobState()
    for event in events:
        why = problem(event)
        if why is not None:
            warnings.warn(f"job event skipped during replay: {why}")
            continue
        state.timeline.append(event)
        kind = event["type"]
        if kind == "job_submitted":
            state.job, state.graph, state.fingerprint = event["job"], event["graph"], event["fingerprint"]
            state.status = "running"
        elif kind == "vertex_initialized":
            state.parallelism[event["vertex"]] = event["parallelism"]
        elif kind == "subtask_finished":
            state.finished[(event["vertex"], event["subtask"])] = event
            state.attempts = max(state.attempts, int(event["attempt"]))
        elif kind == "subtask_reset":
            state.finished.pop((event["vertex"], event["subtask"]), None)
        elif kind == "job_finished":
            state.status = "finished"
        elif kind == "job_failed":
            state.status = "failed"
    return state


@dataclass
class ResumePlan:
    keep: set
    rerun: set
    reasons: dict  # vertex -> why it runs again


def plan_resume(vertices: list, producers: Mapping, state: JobState, file_ok: Callable[[dict], bool]) -> ResumePlan:
    """Keep every finished vertex whose result files are intact; run the rest.

    FLIP-383 starts from every unfinished sink and walks upstream through producers that
    are unfinished or whose results are gone. Here every unfinished vertex is a starting
    point (sinks are the usual case, but a vertex can also be unfinished because a producer
    it shares with a finished sink lost its result), and the walk adds each producer whose
    result is missing or corrupt, recursively. A finished vertex with intact files is never
    re-run.
    """
    intact = {}
    for vertex in vertices:
        event = state.finished.get(tuple(vertex))
        intact[tuple(vertex)] = event is not None and all(file_ok(f) for f in event.get("files", []))
    reasons = {}
    for vertex in vertices:
        vertex = tuple(vertex)
        if not intact[vertex]:
            reasons[vertex] = "unfinished" if vertex not in state.finished else "result missing or corrupt"
    stack = list(reasons)
    while stack:
        vertex = stack.pop()
        for producer in producers.get(vertex, ()):
            producer = tuple(producer)
            if producer not in reasons and not intact[producer]:
                reasons[producer] = "result missing or corrupt"
                stack.append(producer)
    rerun = set(reasons)
    return ResumePlan(keep={tuple(v) for v in vertices} - rerun, rerun=rerun, reasons=reasons)
