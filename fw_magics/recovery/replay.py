"""Replaying a job's event log, and deciding what a resumed run must do (FLIP-383). No Spark.

One replay for both kinds of job: ``execute()``'s events and a streaming job's (its starts, its
backlog, the switch, its micro-batches and phases) fold into one ``JobState``, the only fold of a
job's events: the runtimes read it to resume, the widgets (``fw_magics.widgets``) to show a job,
live or read back. What a view needs of the events is a field here, not a loop of its own.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from . import events as E
from .events import problem

_SUBTASK = re.compile(r"(.+)\[(\d+)\]\Z")  # "v1[0]" in region_failed's list
_ENDED_PHASES = ("finished", "stopped", "failed")


@dataclass
class JobState:
    """What the event log says about a job."""

    job: str | None = None
    fingerprint: str | None = None
    graph: str | None = None
    content: dict | None = None  # what the results depend on, per operator; None: not recorded
    cell: str | None = None  # the notebook cell that first submitted the job, if one did
    parallelism: dict = field(default_factory=dict)  # job vertex -> its parallelism
    inputs: dict = field(default_factory=dict)  # job vertex -> the job vertices it reads
    finished: dict = field(default_factory=dict)  # (vertex, subtask) -> its subtask_finished event
    named: dict = field(default_factory=dict)  # every (vertex, subtask) a finish or a reset named, first first
    attempts_ended: dict = field(default_factory=dict)  # (vertex, subtask) -> its attempts that ended (see below)
    failed_vertices: set = field(default_factory=set)  # failed and not yet restarted, reset nor finished again
    status: str = "running"  # running | finished | failed | cancelled | stopped
    last_word: str | None = None  # the type of the run's last word (LAST_WORDS), None while it runs
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
    latest_watermark: int | None = None  # W as the latest switch or phase change gave it (what a view shows)
    state_writes: int | None = None  # the backlog's state writes, from the switch
    restored_from: str | None = None  # the savepoint a restored job started from
    streaming: bool = False  # a micro-batch committed after the switch (or in stream mode)
    batches: dict = field(default_factory=dict)  # batch id -> its micro_batch event
    phase: str | None = None  # the last phase recorded
    phase_cause: str | None = None  # why, when the last phase change said
    restarts: int = 0  # by the job's restart strategy, since its last start
    failure: str | None = None  # the cause of the last failure recorded (region_failed)
    skipped: dict = field(default_factory=dict)  # source file -> why it is not read
    backlog_started: float | None = None  # when the backlog (last) began: its phase_changed event's time
    switch_event: dict | None = None  # the switch itself (its time, W, the backlog's counts: metrics.backlog_row)

    @property
    def started(self) -> bool:
        """Whether the log holds a job (its first event was read)."""
        return self.job is not None

    def finished_of(self, vertex: str) -> dict:
        """Subtask -> its ``subtask_finished`` event, for one job vertex (a streaming job's backlog)."""
        return {i: e for (v, i), e in self.finished.items() if v == vertex}

    @property
    def dropped(self) -> dict:
        """Records its micro-batches did not process, counted: ``late`` and ``undated``."""
        return {kind: sum(b.get(kind) or 0 for b in self.batches.values()) for kind in ("late", "undated")}

    def take(self, event, warn: bool = True) -> bool:
        """Fold in ``event`` if it fits ``events.SCHEMA`` (whether it did); one that does not is skipped
        (``warn``: with a warning naming why). A live view takes each event as it is written."""
        why = problem(event)
        if why is not None:
            if warn:
                warnings.warn(f"job event skipped during replay: {why}")
            return False
        self.timeline.append(event)
        fold = _FOLDS.get(event["type"])
        if fold is not None:
            fold(self, event)
        return True

    # -- one method per event type that changes the state ------------------------------------------

    def _submitted(self, e: dict) -> None:
        if self.job is None:
            self.cell = e.get("cell")
        self.job, self.graph, self.fingerprint = e["job"], e["graph"], e["fingerprint"]
        self.content = e.get("content")
        self.status, self.last_word = "running", None

    def _initialized(self, e: dict) -> None:
        self.parallelism[e["vertex"]] = e["parallelism"]
        self.inputs[e["vertex"]] = e["inputs"]

    def _subtask_finished(self, e: dict) -> None:
        key = (e["vertex"], e["subtask"])
        self.finished[key] = e
        self.named.setdefault(key, None)
        self.attempts = max(self.attempts, int(e["attempt"]))
        self.attempts_ended[key] = self.attempts_ended.get(key, 0) + 1
        self.failed_vertices.discard(e["vertex"])

    def _subtask_reset(self, e: dict) -> None:
        key = (e["vertex"], e["subtask"])
        self.finished.pop(key, None)
        self.named.setdefault(key, None)
        self.failed_vertices.discard(e["vertex"])

    def _region_failed(self, e: dict) -> None:
        self.failed_vertices.add(e["region"])
        self.failure = e["cause"]
        for m in filter(None, map(_SUBTASK.match, e["vertices"])):
            key = (m[1], int(m[2]))
            self.attempts_ended[key] = self.attempts_ended.get(key, 0) + 1

    def _region_restarted(self, e: dict) -> None:
        self.failed_vertices.discard(e["region"])
        self.restarts += 1

    def _last_word(self, e: dict) -> None:
        self.last_word = e["type"]
        self.status = {E.JOB_FINISHED: "finished", E.JOB_FAILED: "failed", E.JOB_CANCELLED: "cancelled"}[e["type"]]

    def _stream_started(self, e: dict) -> None:
        self.runs += 1
        self.mode = self.mode or e["mode"]
        self.source = self.source or e.get("source")
        self.stream_parallelism = self.stream_parallelism or e.get("parallelism")
        self.status, self.restarts = "running", 0

    def _backlog_recorded(self, e: dict) -> None:
        self.backlog = e["position"]

    def _switch(self, e: dict) -> None:
        self.switch_event = e
        self.switched, self.watermark = True, e["watermark"]
        self.latest_watermark = e["watermark"]
        self.state_writes = e.get("state_writes")
        self.restored_from = e.get("restored_from")

    def _micro_batch(self, e: dict) -> None:
        self.streaming = True
        self.batches[e["batch"]] = e

    def _file_skipped(self, e: dict) -> None:
        self.skipped[e["file"]] = e["reason"]

    def _phase_changed(self, e: dict) -> None:
        self.phase, self.phase_cause = e["phase"], e.get("cause")
        if e["phase"] == "backlog":
            self.backlog_started = e.get("time")
        if e.get("watermark") is not None:
            self.latest_watermark = e["watermark"]
        if e["phase"] == "stream":
            self.streaming = True
        if e["phase"] in _ENDED_PHASES and self.status == "running":
            self.status = e["phase"]


_FOLDS: dict[str, Callable[[JobState, dict], None]] = {
    E.JOB_SUBMITTED: JobState._submitted,
    E.VERTEX_INITIALIZED: JobState._initialized,
    E.SUBTASK_FINISHED: JobState._subtask_finished,
    E.SUBTASK_RESET: JobState._subtask_reset,
    E.REGION_FAILED: JobState._region_failed,
    E.REGION_RESTARTED: JobState._region_restarted,
    **dict.fromkeys(E.LAST_WORDS, JobState._last_word),
    E.STREAM_STARTED: JobState._stream_started,
    E.BACKLOG_RECORDED: JobState._backlog_recorded,
    E.SWITCH: JobState._switch,
    E.MICRO_BATCH: JobState._micro_batch,
    E.FILE_SKIPPED: JobState._file_skipped,
    E.PHASE_CHANGED: JobState._phase_changed,
}


def replay(events: Iterable[dict], warn: bool = True) -> JobState:
    """The state ``events`` leave a job in; an event that does not fit ``events.SCHEMA`` is skipped
    (``warn``: with a warning naming why)."""
    state = JobState()
    for event in events:
        state.take(event, warn)
    return state


def subtask_attempts(events: Iterable[dict]) -> dict[tuple[str, int], int]:
    """How many attempts of each job-vertex subtask the log records (FLIP-383 restores them too).

    An attempt ends in a ``subtask_finished`` event or in a ``region_failed`` event that
    lists the subtask; an attempt cut short by a dead process left no trace and is not
    counted. A run's next attempt of a subtask is this count plus one. (``JobState.attempts_ended``;
    events that do not fit are skipped without a word.)
    """
    return replay(events, warn=False).attempts_ended


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
