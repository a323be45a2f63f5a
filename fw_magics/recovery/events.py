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
    # streaming jobs (fw_magics.streaming): each start, the recorded backlog, phases, the switch, micro-batches
    "stream_started": ("mode", "run"),
    "backlog_recorded": ("position",),
    "phase_changed": ("phase",),
    "switch": ("watermark",),
    "micro_batch": ("batch", "input_rows", "state_rows_updated", "watermark"),
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


def stream_started(mode, run, source=None, parallelism=None):
    """A streaming job (re)started in ``mode`` ("mixed", "stream", "batch"); ``run`` counts starts from 1."""
    return _event("stream_started", mode=mode, run=run, source=source, parallelism=parallelism)


def backlog_recorded(position):
    """The backlog a streaming job's source recorded at its first start (JSON: files and bytes)."""
    return _event("backlog_recorded", position=position)


def phase_changed(phase, **detail):
    """A streaming job entered ``phase`` (backlog, switching, stream, finished, stopped, failed)."""
    return _event("phase_changed", phase=phase, **detail)


def switch(watermark, **detail):
    """FLIP-327's switch: the backlog's greatest watermark W (epoch ms, None without event time)."""
    return _event("switch", watermark=watermark, **detail)


def micro_batch(batch, input_rows, state_rows_updated, watermark, **detail):
    """One committed micro-batch of a streaming job's query (``watermark``: epoch ms, None if none)."""
    return _event("micro_batch", batch=batch, input_rows=input_rows, state_rows_updated=state_rows_updated,
                  watermark=watermark, **detail)


def problem(event) -> str | None:
    """Why an event read back cannot be used, or None when it is well-formed."""
    if not isinstance(event, dict) or event.get("type") not in REQUIRED:
        return f"unknown event type {event.get('type') if isinstance(event, dict) else type(event).__name__!r}"
    missing = [key for key in REQUIRED[event["type"]] if key not in event]
    return f"{event['type']} event without {', '.join(missing)}" if missing else None
