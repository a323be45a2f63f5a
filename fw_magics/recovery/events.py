"""The job events of FLIP-383, as plain JSON-serialisable dicts.

Each has a ``type`` and a wall-clock ``time``. Replay reads nothing else from disk: no
pickles, no code.
"""

from __future__ import annotations

import time as _time

REQUIRED = {
    "job_submitted": ("job", "graph", "fingerprint"),
    "vertex_initialized": ("vertex", "parallelism", "inputs"),
    "subtask_finished": ("vertex", "subtask", "attempt", "files"),
    "subtask_reset": ("vertex", "subtask", "reason"),
    "region_failed": ("region", "vertices", "cause", "attempt"),
    "region_restarted": ("region", "vertices", "attempt"),
    "job_finished": (),
    "job_failed": ("cause",),
    "job_cancelled": ("cause",),
}


def _event(kind: str, **fields) -> dict:
    return {"type": kind, "time": round(_time.time(), 6), **fields}


def job_submitted(job, graph_json, fingerprint, cell=None):
    """``cell``: the notebook cell that submitted the job, if any (the recovery panel quotes it)."""
    extra = {} if cell is None else {"cell": cell}
    return _event("job_submitted", job=job, graph=graph_json, fingerprint=fingerprint, **extra)


def vertex_initialized(vertex, parallelism, inputs):
    return _event("vertex_initialized", vertex=vertex, parallelism=parallelism, inputs=list(inputs))


def subtask_finished(vertex, subtask, attempt, records_in, records_out, bytes, duration, files):
    return _event("subtask_finished", vertex=vertex, subtask=subtask, attempt=attempt, records_in=records_in,
                  records_out=records_out, bytes=bytes, duration=duration, files=list(files))


def subtask_reset(vertex, subtask, reason):
    return _event("subtask_reset", vertex=vertex, subtask=subtask, reason=reason)


def region_failed(region, vertices, cause, attempt):
    return _event("region_failed", region=region, vertices=list(vertices), cause=cause, attempt=attempt)


def region_restarted(region, vertices, attempt):
    return _event("region_restarted", region=region, vertices=list(vertices), attempt=attempt)


def job_finished():
    return _event("job_finished")


def job_failed(cause):
    return _event("job_failed", cause=cause)


def job_cancelled(cause):
    """The user stopped the run (Kernel > Interrupt, a Stop button): Flink's CANCELED. It resumes."""
    return _event("job_cancelled", cause=cause)


def problem(event) -> str | None:
    """Why an event read back cannot be used, or None when it is well-formed."""
    if not isinstance(event, dict) or event.get("type") not in REQUIRED:
        return f"unknown event type {event.get('type') if isinstance(event, dict) else type(event).__name__!r}"
    missing = [key for key in REQUIRED[event["type"]] if key not in event]
    return f"{event['type']} event without {', '.join(missing)}" if missing else None
