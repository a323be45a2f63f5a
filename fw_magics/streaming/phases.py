"""A streaming job's phases and what its event log says about it (pure Python, no Spark).

Phases (FLIP-327's ``isBacklog`` made visible)::

    mixed:   backlog -> switching -> stream -> stopped | failed
    batch:   backlog -> finished | stopped | failed
    stream:  stream -> stopped | failed

``backlog``: the files present at the first start run as one batch job (no watermark, one
state write per key); ``switching``: the backlog's watermark W is emitted, its timers up to W
have fired, the streaming query starts with the backlog's state; ``stream``: the query's first
micro-batch has committed (its checkpoint holds the state), or, for a query that warmed up during
the backlog, the handover is written (the state is in the backlog's files); fresh data flows. A restart begins
where the log says the job got to (``resume_phase``): a job that had switched never runs its
backlog again.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

from ..errors import FullWindowError
from ..recovery.events import problem

PHASES = ("backlog", "switching", "stream", "finished", "stopped", "failed")
MODES = ("mixed", "stream", "batch")
ENDED = ("finished", "stopped", "failed")

TRANSITIONS = {
    "mixed": {"backlog": {"switching", "stopped", "failed"}, "switching": {"stream", "stopped", "failed"},
              "stream": {"stopped", "failed"}},
    "batch": {"backlog": {"finished", "stopped", "failed"}},
    "stream": {"stream": {"stopped", "failed"}},
}


def check_mode(mode) -> str:
    if mode not in MODES:
        raise FullWindowError(f"unknown mode {mode!r}; accepted: {', '.join(MODES)}")
    return mode


def can_change(mode: str, old: str, new: str) -> bool:
    """Whether a job in ``mode`` may go from phase ``old`` to ``new``."""
    return new in TRANSITIONS[mode].get(old, ())


@dataclass
class StreamLog:
    """What a streaming job's event log says (``replay_stream``)."""

    job: str | None = None
    fingerprint: str | None = None
    graph: str | None = None
    mode: str | None = None
    source: dict | None = None
    runs: int = 0
    backlog: dict | None = None  # the recorded backlog position (files: count, bytes)
    finished: dict = field(default_factory=dict)  # backlog subtask -> its subtask_finished event
    attempts: int = 0
    switched: bool = False
    watermark: int | None = None  # W, from the switch
    state_writes: int | None = None  # the backlog's state writes, from the switch
    streaming: bool = False  # a micro-batch committed after the switch (or in stream mode)
    batches: dict = field(default_factory=dict)  # batch id -> its micro_batch event
    phase: str | None = None  # the last phase recorded
    parallelism: int | None = None  # from the first start
    restored_from: str | None = None  # the savepoint a restored job started from
    status: str = "running"  # running | finished | stopped | failed

    @property
    def started(self) -> bool:
        return self.job is not None


def replay_stream(events) -> StreamLog:
    """Fold a streaming job's events (in write order) into a StreamLog; bad events are skipped with a warning."""
    log = StreamLog()
    for event in events:
        why = problem(event)
        if why is not None:
            warnings.warn(f"job event skipped during replay: {why}")
            continue
        kind = event["type"]
        if kind == "job_submitted":
            log.job, log.graph, log.fingerprint = event["job"], event["graph"], event["fingerprint"]
        elif kind == "stream_started":
            log.runs += 1
            log.mode = log.mode or event["mode"]
            log.source = log.source or event.get("source")
            log.parallelism = log.parallelism or event.get("parallelism")
            log.status = "running"
        elif kind == "backlog_recorded":
            log.backlog = event["position"]
        elif kind == "subtask_finished":
            log.finished[event["subtask"]] = event
            log.attempts = max(log.attempts, int(event["attempt"]))
        elif kind == "subtask_reset":
            log.finished.pop(event["subtask"], None)
        elif kind == "switch":
            log.switched, log.watermark = True, event["watermark"]
            log.state_writes = event.get("state_writes")
            log.restored_from = event.get("restored_from")
        elif kind == "micro_batch":
            log.streaming = True
            log.batches[event["batch"]] = event
        elif kind == "phase_changed":
            log.phase = event["phase"]
            if event["phase"] == "stream":
                log.streaming = True
            if event["phase"] in ENDED:
                log.status = event["phase"]
        elif kind == "job_finished":
            log.status = "finished"
        elif kind == "job_failed":
            log.status = "failed"
    return log


def resume_phase(log: StreamLog, mode: str) -> str:
    """The phase a (re)started job begins in."""
    if mode == "stream":
        return "stream"
    if mode == "batch":
        return "finished" if log.status == "finished" else "backlog"
    if log.streaming:
        return "stream"
    return "switching" if log.switched else "backlog"
