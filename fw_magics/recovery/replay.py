"""Replaying a job's event log, and deciding what a resumed run must do (FLIP-383). No Spark.

One replay for both kinds of job: ``execute()``'s events and a streaming job's (its starts, its
backlog, the switch, its micro-batches and phases) fold into one ``JobState``.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from .events import problem


@dataclass
class JobState:
    """What the event log says about a job."""

    job: str | None = None
    fingerprint: str | None = None
    graph: str | None = None
    content: dict | None = None  # what the results depend on, per operator; None: not recorded
    parallelism: dict = field(default_factory=dict)
    finished: dict = field(default_factory=dict)  # (vertex, subtask) -> its subtask_finished event
    status: str = "running"  # running | finished | failed | cancelled | stopped
    attempts: int = 0
    timeline: list = field(default_factory=list)  # every valid event, in order
    # a streaming job's (fw_magics.runtime.streaming):
    mode: str | None = None  # from its first start
    source: dict | None = None  # the source's description, from its first start
    runs: int = 0  # its starts
    stream_parallelism: int | None = None  # from its first start
    backlog: dict | None = None  # the recorded backlog position (files: count, bytes)
    switched: bool = False
    watermark: int | None = None  # W, from the switch
    state_writes: int | None = None  # the backlog's state writes, from the switch
    restored_from: str | None = None  # the savepoint a restored job started from
    streaming: bool = False  # a micro-batch committed after the switch (or in stream mode)
    batches: dict = field(default_factory=dict)  # batch id -> its micro_batch event
    phase: str | None = None  # the last phase recorded
    skipped: dict = field(default_factory=dict)  # source file -> why it is not read

    @property
    def started(self) -> bool:
        """Whether the log holds a job (its first event was read)."""
        return self.job is not None

    def finished_of(self, vertex: str) -> dict:
        """Subtask -> its ``subtask_finished`` event, for one job vertex (a streaming job's backlog)."""
        return {i: e for (v, i), e in self.finished.items() if v == vertex}


_ENDED_PHASES = ("finished", "stopped", "failed")


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
            state.content = event.get("content")
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
        elif kind == "job_cancelled":
            state.status = "cancelled"
        elif kind == "stream_started":
            state.runs += 1
            state.mode = state.mode or event["mode"]
            state.source = state.source or event.get("source")
            state.stream_parallelism = state.stream_parallelism or event.get("parallelism")
            state.status = "running"
        elif kind == "backlog_recorded":
            state.backlog = event["position"]
        elif kind == "switch":
            state.switched, state.watermark = True, event["watermark"]
            state.state_writes = event.get("state_writes")
            state.restored_from = event.get("restored_from")
        elif kind == "micro_batch":
            state.streaming = True
            state.batches[event["batch"]] = event
        elif kind == "file_skipped":
            state.skipped[event["file"]] = event["reason"]
        elif kind == "phase_changed":
            state.phase = event["phase"]
            if event["phase"] == "stream":
                state.streaming = True
            if event["phase"] in _ENDED_PHASES and state.status == "running":
                state.status = event["phase"]
    return state


_SUBTASK = re.compile(r"(.+)\[(\d+)\]\Z")  # "v1[0]" in region_failed's list


def subtask_attempts(events: Iterable[dict]) -> dict[tuple[str, int], int]:
    """How many attempts of each job-vertex subtask the log records (FLIP-383 restores them too).

    An attempt ends in a ``subtask_finished`` event or in a ``region_failed`` event that
    lists the subtask; an attempt cut short by a dead process left no trace and is not
    counted. A run's next attempt of a subtask is this count plus one.
    """
    counts: dict[tuple[str, int], int] = {}
    for event in events:
        if problem(event) is not None:
            continue
        if event["type"] == "subtask_finished":
            ended = [(event["vertex"], int(event["subtask"]))]
        elif event["type"] == "region_failed":
            ended = [(m[1], int(m[2])) for m in map(_SUBTASK.match, event["vertices"]) if m]
        else:
            continue
        for key in ended:
            counts[key] = counts.get(key, 0) + 1
    return counts


@dataclass
class ResumeDecision:
    """What a resumed run keeps and what it runs again, and why (``decide_resume``)."""

    keep: set  # finished subtasks not run again
    rerun: set
    reasons: dict  # vertex -> why it runs again
    problems: dict  # vertex -> what is wrong with its files, for each finished vertex checked


def decide_resume(vertices: list, producers: Mapping, state: JobState,
                file_problem: Callable[[dict], str | None]) -> ResumeDecision:
    """What a resumed run keeps and what it runs again (FLIP-383).

    FLIP-383 starts from every unfinished sink and walks upstream through producers that
    are unfinished or whose results are gone. Here every unfinished vertex is a starting
    point (sinks are the usual case, but a vertex can also be unfinished because failover
    reset it after its consumers finished), and so is a finished sink whose result is gone:
    the sinks' files are the job's output. The walk adds each producer that is unfinished or
    whose result is missing or corrupt, recursively. Files are checked only where a result
    is needed: a finished intermediate whose consumers are all kept is kept unchecked, so a
    resume never re-hashes the large early results that nothing reads again.

    ``file_problem(record)`` is None when a recorded result file is intact, else why not; a
    finished subtask that recorded no file has nothing to read back ("no result file recorded").

    ``producers`` maps each subtask to the subtasks it reads. A ``graph.SubtaskInputs`` is
    walked by its ranges, each distinct range once, so an all-to-all edge costs p + q steps,
    never p x q; any other mapping is walked pair by pair.
    """
    vertices = [tuple(v) for v in vertices]
    ranges = getattr(producers, "ranges", None)
    if ranges is None:
        consumed_set = {tuple(p) for ps in producers.values() for p in ps}
        consumed = consumed_set.__contains__

        def ranges(vertex):
            return [(p[0], range(p[1], p[1] + 1)) for p in map(tuple, producers.get(vertex, ()))]
    else:
        consumed = producers.consumed
    problems: dict = {}

    def problem_of(vertex) -> str | None:
        event = state.finished.get(vertex)
        if event is None:
            return "unfinished"
        if vertex not in problems:
            files = event.get("files") or []
            problems[vertex] = (next(filter(None, map(file_problem, files)), None) if files
                                else "no result file recorded")
        return problems[vertex]

    reasons = {}
    for vertex in vertices:
        why = "unfinished" if vertex not in state.finished else None if consumed(vertex) else problem_of(vertex)
        if why is not None:
            reasons[vertex] = why
    stack = list(reasons)
    walked = set()
    while stack:
        vertex = stack.pop()
        for source, span in ranges(vertex):
            if (source, span.start, span.stop) in walked:
                continue
            walked.add((source, span.start, span.stop))
            for j in span:
                producer = (source, j)
                if producer not in reasons and (why := problem_of(producer)) is not None:
                    reasons[producer] = why
                    stack.append(producer)
    rerun = set(reasons)
    return ResumeDecision(keep=set(vertices) - rerun, rerun=rerun, reasons=reasons, problems=problems)
